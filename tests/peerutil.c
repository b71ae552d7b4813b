/*
 * What the C peers share (see peerutil.h).
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "peerutil.h"

static const char *program = "peer";
static volatile sig_atomic_t watchdog_exit_code = 124;

void peer_init(const char *name) { program = name; }

int64_t peer_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

long peer_env_long(const char *name, long dflt) {
  const char *v = getenv(name);
  char *end;
  if (v == NULL || *v == '\0')
    return dflt;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (errno || *end || n <= 0 || n > INT_MAX) {
    fprintf(stderr, "%s: ignoring bad %s=%s\n", program, name, v);
    return dflt;
  }
  return n;
}

static void write_stderr(const char *text) {
  if (write(STDERR_FILENO, text, strlen(text)) < 0) {
    /* nothing more to do in a signal handler */
  }
}

static void on_watchdog(int sig) {
  (void)sig;
  write_stderr(program);
  write_stderr(": watchdog fired\n");
  _exit(watchdog_exit_code);
}

int peer_arm_watchdog(long seconds, int exit_code) {
  watchdog_exit_code = exit_code;
  struct sigaction sa = {.sa_handler = on_watchdog};
  if (sigaction(SIGALRM, &sa, NULL) != 0)
    return -1;
  alarm((unsigned)(seconds > 0 ? seconds : 1));
  return 0;
}

/* Input read but not yet returned: one reader, so static. */
static char in_buf[4096];
static size_t in_len;
static int in_eof;

/* The next buffered line into @p line: 1, or 0 when none is complete. */
static int take_line(char *line, size_t size) {
  char *nl = memchr(in_buf, '\n', in_len);
  if (nl == NULL && !(in_eof && in_len))
    return 0;
  size_t n = nl ? (size_t)(nl - in_buf) : in_len;
  size_t copy = n < size - 1 ? n : size - 1;
  memcpy(line, in_buf, copy);
  line[copy] = '\0';
  size_t used = nl ? n + 1 : n;
  memmove(in_buf, in_buf + used, in_len - used);
  in_len -= used;
  return 1;
}

int peer_read_line(char *line, size_t size, int timeout_ms) {
  int64_t deadline = peer_now_ns() + (int64_t)timeout_ms * 1000000;
  for (;;) {
    if (take_line(line, size))
      return 1;
    if (in_eof) {
      line[0] = '\0';
      return 0;
    }
    if (in_len == sizeof in_buf) /* an absurd line: drop it */
      in_len = 0;
    int left_ms = (int)((deadline - peer_now_ns()) / 1000000);
    if (left_ms <= 0) {
      errno = ETIMEDOUT;
      return -1;
    }
    struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
    int r = poll(&p, 1, left_ms);
    if (r < 0 && errno != EINTR)
      return -1;
    if (r <= 0)
      continue;
    ssize_t got = read(STDIN_FILENO, in_buf + in_len, sizeof in_buf - in_len);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      return -1;
    if (got == 0)
      in_eof = 1;
    in_len += (size_t)got;
  }
}

static int compare_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

long peer_quantile_us(int64_t *ns, size_t n, double p) {
  if (n == 0)
    return 0;
  qsort(ns, n, sizeof *ns, compare_i64);
  size_t i = (size_t)(p * (double)n + 0.999999);
  i = i == 0 ? 0 : i - 1;
  return (long)(ns[i < n ? i : n - 1] / 1000);
}
