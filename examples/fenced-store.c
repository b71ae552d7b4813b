/*
 * fenced-store - a key-value store that honours fencing tokens.
 *
 * The resource a zkrecipes lock guards, in miniature: clients write a key
 * together with the fencing token of the lock hold they write under, and the
 * store refuses a write whose token is lower than the highest it has already
 * accepted for that key.  A client that lost its lock without noticing (it
 * was frozen, partitioned, or simply careless) therefore cannot overwrite
 * what a later holder wrote.  The protocol is in fenced-store.h.
 *
 * Every decision is appended to a journal before it is answered:
 *
 *   <monotonic-us> ACCEPT <key> <token> <value>
 *   <monotonic-us> REFUSE <key> <token> <highest> <value>
 *
 * On start the store replays the ACCEPT lines of its journal, so it still
 * knows the highest token of every key after a restart (a crash loses
 * nothing that was answered OK, since the line is written first; --fsync
 * also survives a machine crash).  The journal doubles as the audit trail
 * that the chaos tests check.
 *
 * Usage: fenced-store [--port N] [--journal FILE] [--fsync] [--echo]
 *                     [--t0 US] [--no-fencing]
 *   --port N      listen on 127.0.0.1:N (default 0: a free port).  The first
 *                 line on standard output is "fenced-store: listening on
 *                 127.0.0.1:PORT".
 *   --journal F   the journal (default: none; nothing survives a restart).
 *   --fsync       fdatasync the journal before answering.
 *   --no-fencing  accept every write, whatever its token (the store then
 *                 remembers the token of the last write): what a resource
 *                 without fencing does, to show what the tokens prevent.
 *   --echo        print every decision on standard error, with the time
 *                 since --t0 (a CLOCK_MONOTONIC time in microseconds; default
 *                 the store's start), for transcripts.
 * SIGTERM and SIGINT end it with status 0.
 *
 * One thread, one poll() loop: decisions are taken one at a time, in the
 * order the journal shows.  Loopback only.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fenced-store.h"

#define MAX_CLIENTS 128
#define MAX_KEYS 4096

typedef struct entry {
  char key[FENCED_MAX_KEY + 1];
  int64_t highest;
  char value[FENCED_MAX_VALUE + 1];
} entry;

typedef struct client {
  int fd;
  size_t len;
  char buf[FENCED_MAX_LINE + 2];
} client;

static entry *entries;
static int nentries;
static int journal_fd = -1;
static int use_fsync;
static int no_fencing;
static int echo;
static int64_t t0_us;
static volatile sig_atomic_t stopping;

static void on_stop(int sig) {
  (void)sig;
  stopping = 1;
}

/* --------------------------------------------------------------- state */

static entry *find_entry(const char *key) {
  for (int i = 0; i < nentries; i++)
    if (strcmp(entries[i].key, key) == 0)
      return &entries[i];
  return NULL;
}

static entry *add_entry(const char *key) {
  if (nentries == MAX_KEYS)
    return NULL;
  entry *e = &entries[nentries++];
  snprintf(e->key, sizeof e->key, "%s", key);
  e->highest = -1; /* below every token */
  e->value[0] = '\0';
  return e;
}

/* Keys: 1..64 printable ASCII characters, no space. */
static int valid_key(const char *k, size_t len) {
  if (len == 0 || len > FENCED_MAX_KEY)
    return 0;
  for (size_t i = 0; i < len; i++)
    if (k[i] <= ' ' || k[i] > '~')
      return 0;
  return 1;
}

static int valid_value(const char *v) {
  size_t len = strlen(v);
  if (len > FENCED_MAX_VALUE)
    return 0;
  for (size_t i = 0; i < len; i++)
    if (v[i] < ' ' || v[i] > '~')
      return 0;
  return 1;
}

/* A non-negative decimal int64, nothing else. */
static int parse_token(const char *s, size_t len, int64_t *out) {
  if (len == 0 || len > 19)
    return 0;
  int64_t v = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9')
      return 0;
    if (v > (INT64_MAX - (s[i] - '0')) / 10)
      return 0;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return 1;
}

/* ------------------------------------------------------------- journal */

static int journal_append(const char *line, size_t len) {
  if (journal_fd < 0)
    return 0;
  /* One write per line, to an O_APPEND file: a crash leaves at most the
   * last line torn, which recovery skips. */
  ssize_t w = write(journal_fd, line, len);
  if (w != (ssize_t)len)
    return -1;
  if (use_fsync && fdatasync(journal_fd) != 0)
    return -1;
  return 0;
}

/* Replay the ACCEPT lines of the journal. */
static int journal_recover(const char *path) {
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return errno == ENOENT ? 0 : -1;
  char *line = NULL;
  size_t cap = 0;
  int recovered = 0;
  while (getline(&line, &cap, f) > 0) {
    char key[FENCED_MAX_KEY + 1], value[FENCED_MAX_VALUE + 1] = "";
    long long at, token;
    int n = sscanf(line, "%lld ACCEPT %64s %lld %256[^\n]", &at, key, &token,
                   value);
    if (n < 3 || strchr(line, '\n') == NULL)
      continue; /* a REFUSE line, or the torn tail of a crash */
    entry *e = find_entry(key);
    if (e == NULL && (e = add_entry(key)) == NULL)
      break;
    if (no_fencing || token >= e->highest) {
      e->highest = token;
      snprintf(e->value, sizeof e->value, "%s", value);
    }
    recovered++;
  }
  free(line);
  fclose(f);
  return recovered;
}

/* ------------------------------------------------------------ requests */

static void echo_line(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static void echo_line(const char *fmt, ...) {
  if (!echo)
    return;
  char buf[1024];
  int64_t us = fenced_now_us() - t0_us;
  int n = snprintf(buf, sizeof buf, "%4" PRId64 ".%03d s  store  ",
                   us / 1000000, (int)(us / 1000 % 1000));
  va_list ap;
  va_start(ap, fmt);
  n += vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
  va_end(ap);
  if (n > (int)sizeof buf - 2)
    n = (int)sizeof buf - 2;
  buf[n++] = '\n';
  (void)!write(STDERR_FILENO, buf, (size_t)n);
}

static void handle_write(const char *args, char *reply, size_t size) {
  const char *key = args;
  const char *sp = strchr(key, ' ');
  if (sp == NULL || !valid_key(key, (size_t)(sp - key))) {
    snprintf(reply, size, "ERR bad key");
    return;
  }
  size_t key_len = (size_t)(sp - key);
  const char *tok = sp + 1;
  const char *sp2 = strchr(tok, ' ');
  size_t tok_len = sp2 ? (size_t)(sp2 - tok) : strlen(tok);
  int64_t token;
  if (!parse_token(tok, tok_len, &token)) {
    snprintf(reply, size, "ERR bad token");
    return;
  }
  const char *value = sp2 ? sp2 + 1 : "";
  if (!valid_value(value)) {
    snprintf(reply, size, "ERR bad value");
    return;
  }
  char k[FENCED_MAX_KEY + 1];
  memcpy(k, key, key_len);
  k[key_len] = '\0';
  entry *e = find_entry(k);
  int64_t highest = e ? e->highest : -1;
  char line[FENCED_MAX_LINE + 128];
  int n;
  int accept = no_fencing || token >= highest;
  if (accept)
    n = snprintf(line, sizeof line, "%" PRId64 " ACCEPT %s %" PRId64 " %s\n",
                 fenced_now_us(), k, token, value);
  else
    n = snprintf(line, sizeof line,
                 "%" PRId64 " REFUSE %s %" PRId64 " %" PRId64 " %s\n",
                 fenced_now_us(), k, token, highest, value);
  if (accept && e == NULL && (e = add_entry(k)) == NULL) {
    snprintf(reply, size, "ERR too many keys");
    return;
  }
  /* Journal first: what was answered OK is never forgotten. */
  if (journal_append(line, (size_t)n) != 0) {
    snprintf(reply, size, "ERR journal: %s", strerror(errno));
    return;
  }
  if (accept) {
    e->highest = token;
    snprintf(e->value, sizeof e->value, "%s", value);
    snprintf(reply, size, "OK %s %" PRId64, k, token);
    echo_line("WRITE %s %" PRId64 " \"%s\" -> OK", k, token, value);
  } else {
    snprintf(reply, size, "REFUSED stale token %" PRId64 " < highest %" PRId64,
             token, highest);
    echo_line("WRITE %s %" PRId64 " \"%s\" -> REFUSED (highest is %" PRId64 ")",
              k, token, value, highest);
  }
}

static void handle_read(const char *key, char *reply, size_t size) {
  if (!valid_key(key, strlen(key))) {
    snprintf(reply, size, "ERR bad key");
    return;
  }
  entry *e = find_entry(key);
  if (e == NULL || e->highest < 0)
    snprintf(reply, size, "NONE %s", key);
  else
    snprintf(reply, size, "VALUE %s %" PRId64 " %s", key, e->highest, e->value);
}

static void handle_line(const char *line, char *reply, size_t size) {
  if (strncmp(line, "WRITE ", 6) == 0)
    handle_write(line + 6, reply, size);
  else if (strncmp(line, "READ ", 5) == 0)
    handle_read(line + 5, reply, size);
  else
    snprintf(reply, size, "ERR unknown request");
}

/* ------------------------------------------------------------- sockets */

static int listen_on(int port, int *bound) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return -1;
  int one = 1;
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0)
    goto fail;
  struct sockaddr_in addr = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
      listen(fd, 64) != 0)
    goto fail;
  socklen_t len = sizeof addr;
  if (getsockname(fd, (struct sockaddr *)&addr, &len) != 0)
    goto fail;
  *bound = ntohs(addr.sin_port);
  return fd;
fail:;
  int saved = errno;
  close(fd);
  errno = saved;
  return -1;
}

static void drop_client(client *c) {
  close(c->fd);
  c->fd = -1;
  c->len = 0;
}

/* Answer every complete line in @p c's buffer.  A client that sends an
 * over-long line, or does not take its replies, is dropped. */
static void serve_lines(client *c) {
  for (;;) {
    char *nl = memchr(c->buf, '\n', c->len);
    if (nl == NULL) {
      if (c->len > FENCED_MAX_LINE) {
        (void)!send(c->fd, "ERR line too long\n", 18, MSG_NOSIGNAL);
        drop_client(c);
      }
      return;
    }
    *nl = '\0';
    if (nl > c->buf && nl[-1] == '\r')
      nl[-1] = '\0';
    char reply[FENCED_MAX_LINE + 64];
    if (memchr(c->buf, '\0', (size_t)(nl - c->buf)) != NULL)
      snprintf(reply, sizeof reply, "ERR NUL byte");
    else
      handle_line(c->buf, reply, sizeof reply);
    size_t rlen = strlen(reply);
    reply[rlen++] = '\n';
    if (send(c->fd, reply, rlen, MSG_NOSIGNAL) != (ssize_t)rlen) {
      drop_client(c);
      return;
    }
    size_t used = (size_t)(nl + 1 - c->buf);
    memmove(c->buf, nl + 1, c->len - used);
    c->len -= used;
  }
}

static void read_client(client *c) {
  ssize_t r = recv(c->fd, c->buf + c->len, sizeof c->buf - c->len, 0);
  if (r > 0) {
    c->len += (size_t)r;
    serve_lines(c);
  } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
    drop_client(c);
  }
}

static void accept_clients(int lfd, client *clients) {
  for (;;) {
    int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
      return; /* EAGAIN, or a connection that went away meanwhile */
    int slot = -1;
    for (int i = 0; i < MAX_CLIENTS && slot < 0; i++)
      if (clients[i].fd < 0)
        slot = i;
    if (slot < 0) {
      close(fd); /* full: the client sees a reset and may retry */
      continue;
    }
    clients[slot].fd = fd;
    clients[slot].len = 0;
  }
}

static int serve(int lfd) {
  static client clients[MAX_CLIENTS];
  for (int i = 0; i < MAX_CLIENTS; i++)
    clients[i].fd = -1;
  struct pollfd fds[MAX_CLIENTS + 1];
  while (!stopping) {
    int n = 0;
    fds[n++] = (struct pollfd){.fd = lfd, .events = POLLIN};
    for (int i = 0; i < MAX_CLIENTS; i++)
      if (clients[i].fd >= 0)
        fds[n++] = (struct pollfd){.fd = clients[i].fd, .events = POLLIN};
    int ready = poll(fds, (nfds_t)n, 1000);
    if (ready < 0) {
      if (errno == EINTR)
        continue;
      perror("fenced-store: poll");
      return 1;
    }
    if (fds[0].revents)
      accept_clients(lfd, clients);
    for (int i = 0; i < MAX_CLIENTS; i++) {
      if (clients[i].fd < 0)
        continue;
      for (int j = 1; j < n; j++)
        if (fds[j].fd == clients[i].fd && fds[j].revents)
          read_client(&clients[i]);
    }
  }
  for (int i = 0; i < MAX_CLIENTS; i++)
    if (clients[i].fd >= 0)
      close(clients[i].fd);
  return 0;
}

/* ---------------------------------------------------------------- main */

static void usage(void) {
  fprintf(stderr, "usage: fenced-store [--port N] [--journal FILE] [--fsync] "
                  "[--echo] [--t0 US] [--no-fencing]\n");
  exit(2);
}

int main(int argc, char **argv) {
  int port = 0;
  const char *journal = NULL;
  t0_us = fenced_now_us();
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--port") == 0 && i + 1 < argc)
      port = atoi(argv[++i]);
    else if (strcmp(argv[i], "--journal") == 0 && i + 1 < argc)
      journal = argv[++i];
    else if (strcmp(argv[i], "--fsync") == 0)
      use_fsync = 1;
    else if (strcmp(argv[i], "--no-fencing") == 0)
      no_fencing = 1;
    else if (strcmp(argv[i], "--echo") == 0)
      echo = 1;
    else if (strcmp(argv[i], "--t0") == 0 && i + 1 < argc)
      t0_us = strtoll(argv[++i], NULL, 10);
    else
      usage();
  }
  if (port < 0 || port > 65535)
    usage();
  entries = calloc(MAX_KEYS, sizeof *entries);
  if (entries == NULL) {
    perror("fenced-store");
    return 1;
  }
  if (journal) {
    if (journal_recover(journal) < 0) {
      fprintf(stderr, "fenced-store: %s: %s\n", journal, strerror(errno));
      return 1;
    }
    journal_fd = open(journal, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (journal_fd < 0) {
      fprintf(stderr, "fenced-store: %s: %s\n", journal, strerror(errno));
      return 1;
    }
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop; /* no SA_RESTART: poll() returns EINTR */
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);

  int bound = 0;
  int lfd = listen_on(port, &bound);
  if (lfd < 0) {
    fprintf(stderr, "fenced-store: listen on 127.0.0.1:%d: %s\n", port,
            strerror(errno));
    return 1;
  }
  printf("fenced-store: listening on 127.0.0.1:%d\n", bound);
  fflush(stdout);
  int status = serve(lfd);
  close(lfd);
  if (journal_fd >= 0)
    close(journal_fd);
  free(entries);
  return status;
}
