/*
 * tools/reach.c - before a session: can a server of the list be reached
 * at all, and if not, why (see tool_reach_servers() in tool.h)?
 *
 * The ZooKeeper client only says that no server answered, after the whole
 * wait; an operator wants to know at once that every server refused the
 * connection, or that a name does not resolve.  So each host is resolved
 * here and a TCP connection is tried to every address at once; the first
 * that is accepted ends the probe (the session then connects on its own).
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <glib.h>

#include "tool.h"

/* What became of a server's addresses. */
typedef enum outcome {
  OUT_PENDING,
  OUT_ACCEPTED,
  OUT_REFUSED,
  OUT_FAILED, /* another error: unreachable network, ... */
} outcome;

typedef struct attempt {
  int fd;
  int server; /* index in the list */
  outcome out;
  int err; /* OUT_FAILED: errno */
} attempt;

int tool_split_host_port(const char *hp, char **host, char **port) {
  const char *colon = strrchr(hp, ':');
  if (colon == NULL || colon[1] == '\0' || colon == hp)
    return -1;
  const char *h = hp, *h_end = colon;
  if (h[0] == '[' && h_end[-1] == ']') {
    h++;
    h_end--;
  }
  *host = g_strndup(h, (gsize)(h_end - h));
  *port = g_strdup(colon + 1);
  return 0;
}

/* Start a non-blocking connection to @p ai into @p a. */
static void start_attempt(attempt *a, const struct addrinfo *ai, int server) {
  a->server = server;
  a->out = OUT_PENDING;
  a->fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                 ai->ai_protocol);
  if (a->fd < 0) {
    a->out = OUT_FAILED;
    a->err = errno;
    return;
  }
  if (connect(a->fd, ai->ai_addr, ai->ai_addrlen) == 0)
    a->out = OUT_ACCEPTED;
  else if (errno == ECONNREFUSED)
    a->out = OUT_REFUSED;
  else if (errno != EINPROGRESS) {
    a->out = OUT_FAILED;
    a->err = errno;
  }
}

/* A connection in progress has ended: how. */
static void finish_attempt(attempt *a) {
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(a->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
    err = errno;
  a->out = err == 0              ? OUT_ACCEPTED
           : err == ECONNREFUSED ? OUT_REFUSED
                                 : OUT_FAILED;
  a->err = err;
}

/* Wait for the attempts until one is accepted, all have ended, or
 * @p deadline; a stop signal ends the wait too.  Returns 1 when one was
 * accepted, 0 when none was, 128+N after stop signal N. */
static int wait_attempts(attempt *a, int n, int64_t deadline) {
  for (;;) {
    struct pollfd pfds[n + 1];
    int pending = 0;
    for (int i = 0; i < n; i++) {
      if (a[i].out == OUT_ACCEPTED)
        return 1;
      pfds[i].fd = a[i].out == OUT_PENDING ? a[i].fd : -1;
      pfds[i].events = POLLOUT;
      pfds[i].revents = 0;
      pending += a[i].out == OUT_PENDING;
    }
    pfds[n] = (struct pollfd){tool_signal_fd(), POLLIN, 0};
    int left = tool_ms_until(deadline, -1);
    if (pending == 0 || left == 0)
      return 0;
    if (poll(pfds, (nfds_t)n + 1, left) < 0 && errno != EINTR)
      return 0;
    int stopped = pfds[n].revents ? tool_stop_signal_caught() : 0;
    if (stopped)
      return stopped;
    for (int i = 0; i < n; i++)
      if (pfds[i].revents)
        finish_attempt(&a[i]);
  }
}

/* The message for servers none of which accepted: each group of them by
 * what happened ("connection refused (a:1, b:2); no answer within 5000 ms
 * (c:3)"). */
static char *describe(gchar **servers, int n_servers, const attempt *a, int n,
                      int timeout_ms) {
  GString *refused = g_string_new(NULL), *silent = g_string_new(NULL),
          *failed = g_string_new(NULL);
  for (int s = 0; s < n_servers; s++) {
    /* Silent when an address is still connecting; refused when one
     * refused (the host is there, ZooKeeper is not); else it failed (the
     * last error said). */
    int tried = 0, pending = 0, refused_any = 0, failed_err = 0;
    for (int i = 0; i < n; i++) {
      if (a[i].server != s)
        continue;
      tried++;
      pending += a[i].out == OUT_PENDING;
      refused_any |= a[i].out == OUT_REFUSED;
      if (a[i].out == OUT_FAILED)
        failed_err = a[i].err;
    }
    if (tried == 0)
      continue; /* malformed: the client says so */
    outcome worst = pending       ? OUT_PENDING
                    : refused_any ? OUT_REFUSED
                                  : OUT_FAILED;
    int err = failed_err;
    GString *into = worst == OUT_REFUSED   ? refused
                    : worst == OUT_PENDING ? silent
                                           : failed;
    if (worst == OUT_FAILED)
      g_string_append_printf(into, "%s%s: %s", into->len ? ", " : "",
                             servers[s], g_strerror(err));
    else
      g_string_append_printf(into, "%s%s", into->len ? ", " : "", servers[s]);
  }
  GString *msg = g_string_new(NULL);
  if (refused->len)
    g_string_append_printf(msg, "connection refused (%s)", refused->str);
  if (silent->len)
    g_string_append_printf(msg, "%sno answer within %d ms (%s)",
                           msg->len ? "; " : "", timeout_ms, silent->str);
  if (failed->len)
    g_string_append_printf(msg, "%scannot connect (%s)", msg->len ? "; " : "",
                           failed->str);
  g_string_free(refused, TRUE);
  g_string_free(silent, TRUE);
  g_string_free(failed, TRUE);
  return g_string_free(msg, FALSE);
}

/* A port as the client takes it: a number from 1 to 65535. */
static int valid_port(const char *port) {
  char *end;
  long v = strtol(port, &end, 10);
  return *port && !*end && v >= 1 && v <= 65535;
}

/* Resolve @p host: its addresses, or NULL after a message with the exit
 * status in *status.  A temporary failure (the name service not up yet)
 * is tried again, with a backoff, until @p deadline. */
static struct addrinfo *resolve(const char *host, const char *port,
                                int64_t deadline, int *status) {
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
                           .ai_flags = AI_NUMERICSERV | AI_ADDRCONFIG};
  int backoff_ms = 100;
  for (;;) {
    struct addrinfo *ai = NULL;
    int rc = getaddrinfo(host, port, &hints, &ai);
    if (rc == 0)
      return ai;
    int temporary = rc == EAI_AGAIN;
    if (!temporary || tool_now_ms() + backoff_ms >= deadline) {
      tool_error("cannot resolve the server name %s: %s", host,
                 rc == EAI_SYSTEM ? g_strerror(errno) : gai_strerror(rc));
      *status = TOOL_EXIT_NOHOST;
      return NULL;
    }
    tool_wait(backoff_ms); /* a signal ends the wait early */
    if ((*status = tool_stop_signal_caught()) != 0)
      return NULL;
    backoff_ms = backoff_ms * 2 > 1000 ? 1000 : backoff_ms * 2;
  }
}

int tool_reach_servers(const char *servers, int timeout_ms) {
  int64_t deadline = tool_now_ms() + timeout_ms;
  char *list = g_strndup(servers, strcspn(servers, "/")); /* not the chroot */
  gchar **names = g_strsplit(list, ",", -1);
  g_free(list);
  int n_names = (int)g_strv_length(names), status = 0, n = 0;
  GArray *attempts = g_array_new(FALSE, TRUE, sizeof(attempt));
  for (int s = 0; s < n_names && status == 0; s++) {
    char *host, *port;
    if (tool_split_host_port(g_strstrip(names[s]), &host, &port) != 0)
      continue; /* malformed: the client says so */
    struct addrinfo *ai =
        valid_port(port) ? resolve(host, port, deadline, &status) : NULL;
    for (struct addrinfo *p = ai; p; p = p->ai_next) {
      attempt a = {.fd = -1};
      start_attempt(&a, p, s);
      g_array_append_val(attempts, a);
      n++;
    }
    if (ai)
      freeaddrinfo(ai);
    g_free(host);
    g_free(port);
  }
  attempt *a = (attempt *)(void *)attempts->data;
  int reached = status == 0 && n > 0 ? wait_attempts(a, n, deadline) : 1;
  if (reached > 1) {
    status = reached; /* a stop signal */
  } else if (reached == 0) {
    char *why = describe(names, n_names, a, n, timeout_ms);
    tool_error("no ZooKeeper server reachable: %s", why);
    g_free(why);
    status = TOOL_EXIT_UNAVAILABLE;
  }
  for (int i = 0; i < n; i++)
    if (a[i].fd >= 0)
      close(a[i].fd);
  g_array_free(attempts, TRUE);
  g_strfreev(names);
  return status;
}

int tool_connect_within(const struct addrinfo *ai, int timeout_ms) {
  int n = 0;
  for (const struct addrinfo *p = ai; p; p = p->ai_next)
    n++;
  attempt *a = g_new0(attempt, n > 0 ? n : 1);
  int i = 0;
  for (const struct addrinfo *p = ai; p; p = p->ai_next, i++)
    start_attempt(&a[i], p, i);
  int fd = -1;
  if (n > 0 && wait_attempts(a, n, tool_now_ms() + timeout_ms) == 1)
    for (i = 0; i < n && fd < 0; i++)
      if (a[i].out == OUT_ACCEPTED)
        fd = a[i].fd;
  for (i = 0; i < n; i++)
    if (a[i].fd >= 0 && a[i].fd != fd)
      close(a[i].fd);
  g_free(a);
  return fd;
}
