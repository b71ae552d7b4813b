/*
 * testing/net.c - loopback ports for members, and the four-letter-word
 * client (to a member, or to any "host:port" for a user's own ensemble),
 * plaintext or, for a TLS ensemble's members, TLS.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <glib.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "internal.h"

/* ---- ports -------------------------------------------------------------- */

/* Ports held by live ensembles of this process.  A member that is not the
 * leader does not listen on its peer port, so "free now" is not enough to
 * keep two ensembles of one process apart. */
#define MAX_HELD_PORTS 512
static int held_ports[MAX_HELD_PORTS];
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;

/* Lowest port below the ephemeral range we pick from. */
#define FIXED_PORT_LOW 20000

static int is_held(int port) {
  for (int i = 0; i < MAX_HELD_PORTS; i++)
    if (held_ports[i] == port)
      return 1;
  return 0;
}

static int hold(int port) {
  for (int i = 0; i < MAX_HELD_PORTS; i++) {
    if (held_ports[i] == 0) {
      held_ports[i] = port;
      return 0;
    }
  }
  return -1;
}

/* First port of the kernel's ephemeral range (outgoing connections take
 * their local port from it); 32768 when it cannot be read. */
static int ephemeral_low(void) {
  int low = 32768, high = 60999;
  FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "re");
  if (f) {
    if (fscanf(f, "%d %d", &low, &high) != 2)
      low = 32768;
    fclose(f);
  }
  return low;
}

/* A socket bound to 127.0.0.1:@p port (0: any), or -1.  No SO_REUSEADDR:
 * a port with connections in TIME_WAIT is passed over too. */
static int bind_loopback(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_port = htons((uint16_t)port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

static int bound_port(int fd) {
  struct sockaddr_in addr;
  socklen_t len = sizeof addr;
  if (getsockname(fd, (struct sockaddr *)&addr, &len) != 0)
    return -1;
  return ntohs(addr.sin_port);
}

/* Probe one candidate: returns a socket bound to it (to keep it while the
 * others are chosen), or -1. */
static int probe_port(int low, int high, int *port) {
  int candidate = 0;
  if (high - low > 100)
    candidate = g_random_int_range(low, high);
  int fd = bind_loopback(candidate);
  if (fd < 0)
    return -1;
  int p = bound_port(fd);
  if (p <= 0 || is_held(p)) {
    close(fd);
    return -1;
  }
  *port = p;
  return fd;
}

int zkrc__reserve_ports(int count, int *ports) {
  int fds[3 * ZKRC__MAX_MEMBERS + 8];
  if (count <= 0 || count > (int)(sizeof fds / sizeof fds[0]))
    return -1;
  /* Below the ephemeral range when it leaves room; else anywhere (bind 0). */
  int high = ephemeral_low();
  int low = FIXED_PORT_LOW;
  if (high - low < 1000)
    low = high = 0;

  pthread_mutex_lock(&held_lock);
  int chosen = 0;
  for (int attempt = 0; chosen < count && attempt < 10000; attempt++) {
    int fd = probe_port(low, high, &ports[chosen]);
    if (fd >= 0)
      fds[chosen++] = fd;
  }
  int rc = chosen == count ? 0 : -1;
  for (int i = 0; i < chosen; i++) {
    close(fds[i]);
    if (rc == 0 && hold(ports[i]) != 0)
      rc = -1;
  }
  pthread_mutex_unlock(&held_lock);
  if (rc != 0) {
    zkrc__release_ports(ports, chosen);
    fprintf(stderr, "zkrecipes-testing: cannot find %d free ports\n", count);
  }
  return rc;
}

void zkrc__release_ports(const int *ports, int count) {
  pthread_mutex_lock(&held_lock);
  for (int i = 0; i < count; i++) {
    for (int j = 0; ports[i] != 0 && j < MAX_HELD_PORTS; j++) {
      if (held_ports[j] == ports[i]) {
        held_ports[j] = 0;
        break;
      }
    }
  }
  pthread_mutex_unlock(&held_lock);
}

/* ---- four-letter words -------------------------------------------------- */

/* Largest answer kept (wchc/wchp of a busy server can be long). */
#define MAX_ANSWER (16 * 1024 * 1024)

/* poll() one descriptor until @p deadline.  Returns 1 when ready, 0 on
 * timeout, -1 on error. */
static int wait_fd(int fd, short events, int64_t deadline) {
  for (;;) {
    int64_t left = deadline - zkrc__now_ms();
    if (left <= 0)
      return 0;
    struct pollfd pfd = {fd, events, 0};
    int n = poll(&pfd, 1, (int)left);
    if (n > 0)
      return 1;
    if (n < 0 && errno != EINTR)
      return -1;
  }
}

/* Connect to @p addr without blocking past @p deadline. */
static int connect_by(const struct sockaddr *addr, socklen_t len,
                      int64_t deadline) {
  int fd =
      socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return -1;
  if (connect(fd, addr, len) == 0)
    return fd;
  if (errno != EINPROGRESS || wait_fd(fd, POLLOUT, deadline) != 1) {
    close(fd);
    return -1;
  }
  int err = 0;
  socklen_t err_len = sizeof err;
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &err_len) != 0 || err != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

static int connect_loopback(int port, int64_t deadline) {
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_port = htons((uint16_t)port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return connect_by((struct sockaddr *)&addr, sizeof addr, deadline);
}

/* Connect to "HOST:PORT" (a name, an IPv4 address or [IPv6]). */
static int connect_host_port(const char *host_port, int64_t deadline) {
  const char *colon = strrchr(host_port, ':');
  if (colon == NULL || colon == host_port || colon[1] == '\0')
    return -1;
  char *host = g_strndup(host_port, (gsize)(colon - host_port));
  if (host[0] == '[' && host[strlen(host) - 1] == ']') {
    memmove(host, host + 1, strlen(host) - 2);
    host[strlen(host) - 2] = '\0';
  }
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
  int fd = -1;
  if (getaddrinfo(host, colon + 1, &hints, &res) == 0) {
    for (struct addrinfo *a = res; a != NULL && fd < 0; a = a->ai_next)
      fd = connect_by(a->ai_addr, a->ai_addrlen, deadline);
    freeaddrinfo(res);
  }
  g_free(host);
  return fd;
}

static int send_all(int fd, const char *data, size_t len, int64_t deadline) {
  size_t done = 0;
  while (done < len) {
    ssize_t n = send(fd, data + done, len - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += (size_t)n;
    } else if (n < 0 && errno == EAGAIN) {
      if (wait_fd(fd, POLLOUT, deadline) != 1)
        return -1;
    } else if (!(n < 0 && errno == EINTR)) {
      return -1;
    }
  }
  return 0;
}

/* Read to end-of-file; the answer is malloc'ed into *out. */
static int read_to_eof(int fd, int64_t deadline, char **out) {
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  if (!buf)
    return -1;
  for (;;) {
    if (cap - len < 2048) {
      char *bigger = cap < MAX_ANSWER ? realloc(buf, cap * 2) : NULL;
      if (!bigger) {
        free(buf);
        return -1;
      }
      buf = bigger;
      cap *= 2;
    }
    ssize_t n = recv(fd, buf + len, cap - len - 1, 0);
    if (n > 0) {
      len += (size_t)n;
    } else if (n == 0) {
      break;
    } else if (errno == EAGAIN) {
      if (wait_fd(fd, POLLIN, deadline) != 1) {
        free(buf);
        return -1;
      }
    } else if (errno != EINTR) {
      /* A reset after a complete answer still counts as the answer. */
      if (errno == ECONNRESET && len > 0)
        break;
      free(buf);
      return -1;
    }
  }
  buf[len] = '\0';
  *out = buf;
  return 0;
}

/* Send @p cmd on @p fd (connected, or -1) and read the whole answer. */
static int ask_four_letter(int fd, const char *cmd, int64_t deadline,
                           char **out) {
  if (fd < 0)
    return -1;
  int rc = send_all(fd, cmd, strlen(cmd), deadline);
  if (rc == 0)
    rc = read_to_eof(fd, deadline, out);
  close(fd);
  return rc;
}

/* ---- TLS ---------------------------------------------------------------- */

/* A TLS connection of the harness to a member.  OpenSSL writes with write(),
 * not send(MSG_NOSIGNAL): every call on it runs with SIGPIPE blocked in the
 * calling thread, and a SIGPIPE it raised is taken before unblocking. */
struct zkrc__tls_conn {
  int fd;
  SSL *ssl;
};

typedef struct pipe_guard {
  sigset_t old;
  int was_blocked;
} pipe_guard;

static void pipe_guard_enter(pipe_guard *g) {
  sigset_t pipe_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &g->old);
  g->was_blocked = sigismember(&g->old, SIGPIPE);
}

static void pipe_guard_leave(pipe_guard *g) {
  if (!g->was_blocked) {
    sigset_t pipe_set, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    struct timespec zero = {0, 0};
    while (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) &&
           sigtimedwait(&pipe_set, NULL, &zero) == SIGPIPE)
      ;
  }
  pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

/* After an SSL call returned @p rc <= 0: wait for what it wants, until
 * @p deadline.  0 to call it again, -1 on failure or timeout. */
static int tls_wait(zkrc__tls_conn *c, int rc, int64_t deadline) {
  switch (SSL_get_error(c->ssl, rc)) {
  case SSL_ERROR_WANT_READ:
    return wait_fd(c->fd, POLLIN, deadline) == 1 ? 0 : -1;
  case SSL_ERROR_WANT_WRITE:
    return wait_fd(c->fd, POLLOUT, deadline) == 1 ? 0 : -1;
  default:
    return -1;
  }
}

void zkrc__tls_close(zkrc__tls_conn *c) {
  if (!c)
    return;
  SSL_free(c->ssl);
  close(c->fd);
  ERR_clear_error(); /* this thread's queue: nothing for the next call */
  g_free(c);
}

zkrc__tls_conn *zkrc__tls_connect(struct ssl_ctx_st *tls, int port,
                                  int64_t deadline) {
  int fd = connect_loopback(port, deadline);
  if (fd < 0)
    return NULL;
  zkrc__tls_conn *c = g_new0(zkrc__tls_conn, 1);
  c->fd = fd;
  ERR_clear_error();
  c->ssl = SSL_new(tls);
  if (!c->ssl || SSL_set_fd(c->ssl, fd) != 1 ||
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), "127.0.0.1") != 1) {
    zkrc__tls_close(c);
    return NULL;
  }
  pipe_guard g;
  pipe_guard_enter(&g);
  int rc;
  while ((rc = SSL_connect(c->ssl)) != 1 && tls_wait(c, rc, deadline) == 0)
    ;
  pipe_guard_leave(&g);
  if (rc != 1) {
    zkrc__tls_close(c);
    return NULL;
  }
  return c;
}

int zkrc__tls_write(zkrc__tls_conn *c, const void *data, size_t len,
                    int64_t deadline) {
  pipe_guard g;
  pipe_guard_enter(&g);
  size_t done = 0;
  while (done < len) {
    int rc = SSL_write(c->ssl, (const char *)data + done,
                       (int)MIN(len - done, (size_t)INT_MAX));
    if (rc > 0)
      done += (size_t)rc;
    else if (tls_wait(c, rc, deadline) != 0)
      break;
  }
  pipe_guard_leave(&g);
  return done == len ? 0 : -1;
}

ssize_t zkrc__tls_read_some(zkrc__tls_conn *c, void *buf, size_t size,
                            int64_t deadline) {
  pipe_guard g;
  pipe_guard_enter(&g);
  ssize_t got = -1;
  for (;;) {
    int rc = SSL_read(c->ssl, buf, (int)MIN(size, (size_t)INT_MAX));
    if (rc > 0) {
      got = rc;
      break;
    }
    if (SSL_get_error(c->ssl, rc) == SSL_ERROR_ZERO_RETURN) {
      got = 0;
      break;
    }
    if (tls_wait(c, rc, deadline) != 0)
      break;
  }
  pipe_guard_leave(&g);
  return got;
}

int zkrc__tls_read(zkrc__tls_conn *c, void *buf, size_t len, int64_t deadline) {
  size_t done = 0;
  while (done < len) {
    ssize_t n =
        zkrc__tls_read_some(c, (char *)buf + done, len - done, deadline);
    if (n <= 0)
      return -1;
    done += (size_t)n;
  }
  return 0;
}

/* The four-letter word over TLS: the answer is what comes until the member
 * ends the connection (with close_notify or without). */
static int ask_four_letter_tls(struct ssl_ctx_st *tls, int port,
                               const char *cmd, int64_t deadline, char **out) {
  zkrc__tls_conn *c = zkrc__tls_connect(tls, port, deadline);
  if (!c)
    return -1;
  int rc = zkrc__tls_write(c, cmd, strlen(cmd), deadline);
  GString *answer = g_string_new(NULL);
  char buf[4096];
  while (rc == 0) {
    ssize_t n = zkrc__tls_read_some(c, buf, sizeof buf, deadline);
    if (n > 0 && answer->len + (size_t)n <= MAX_ANSWER)
      g_string_append_len(answer, buf, n);
    else if (n == 0 || (n < 0 && answer->len > 0))
      break; /* the end; a reset after a complete answer is the end too */
    else
      rc = -1;
  }
  zkrc__tls_close(c);
  if (rc == 0)
    *out = strdup(answer->str); /* free()d by the caller */
  g_string_free(answer, TRUE);
  return rc == 0 && *out ? 0 : -1;
}

int zkrc__four_letter(struct ssl_ctx_st *tls, int port, const char *cmd,
                      int timeout_ms, char **out) {
  *out = NULL;
  int64_t deadline = zkrc__now_ms() + timeout_ms;
  if (tls)
    return ask_four_letter_tls(tls, port, cmd, deadline, out);
  return ask_four_letter(connect_loopback(port, deadline), cmd, deadline, out);
}

int zkrc_four_letter(const char *host_port, const char *cmd, int timeout_ms,
                     char **out) {
  if (out == NULL)
    return -1;
  *out = NULL;
  if (host_port == NULL || cmd == NULL || timeout_ms < 0)
    return -1;
  int64_t deadline = zkrc__now_ms() + timeout_ms;
  return ask_four_letter(connect_host_port(host_port, deadline), cmd, deadline,
                         out);
}
