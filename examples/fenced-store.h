/*
 * fenced-store.h - the fenced key-value store's line protocol, and a small
 * blocking client for it (used by fencing-demo and the chaos tests).
 *
 * The store (fenced-store.c) listens on a loopback TCP port.  One request per
 * line, one reply line each:
 *
 *   WRITE <key> <token> <value>  ->  OK <key> <token>
 *                                    REFUSED stale token <T> < highest <H>
 *                                    ERR <why>
 *   READ <key>                   ->  VALUE <key> <token> <value>
 *                                    NONE <key>
 *
 * <key> is 1..64 printable ASCII characters without spaces, <token> a
 * non-negative decimal integer (a zkrecipes fencing token), <value> the rest
 * of the line (0..256 printable ASCII characters).  The store remembers the
 * highest token it has accepted for each key and refuses a write carrying a
 * lower one; a write with the same token as the highest (the same lock hold
 * writing again) is accepted.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef FENCED_STORE_H
#define FENCED_STORE_H

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define FENCED_MAX_KEY 64
#define FENCED_MAX_VALUE 256
#define FENCED_MAX_LINE 512

/* Microseconds on the system-wide monotonic clock (comparable between the
 * processes of one machine). */
static inline int64_t fenced_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Wait until @p fd is ready for @p events, at most until @p deadline_us.
 * Returns 1 when ready, 0 on timeout, -1 on error. */
static inline int fenced_wait_fd(int fd, short events, int64_t deadline_us) {
  for (;;) {
    int64_t left_ms = (deadline_us - fenced_now_us() + 999) / 1000;
    if (left_ms <= 0)
      return 0;
    struct pollfd p = {.fd = fd, .events = events};
    int n = poll(&p, 1, left_ms > 60000 ? 60000 : (int)left_ms);
    if (n > 0)
      return 1;
    if (n < 0 && errno != EINTR)
      return -1;
  }
}

/*
 * Send one request line (without its newline) to the store on 127.0.0.1:
 * @p port and read the reply line (without its newline) into @p reply.
 * One connection per request: simple, and it survives a restart of the
 * store between requests.
 *
 * Returns 0 when a reply arrived; -1 with errno set otherwise (ETIMEDOUT
 * when @p timeout_ms passed, ECONNREFUSED when the store is not running, ...).
 */
static inline int fenced_request(int port, const char *request, char *reply,
                                 size_t reply_size, int timeout_ms) {
  int64_t deadline = fenced_now_us() + (int64_t)timeout_ms * 1000;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return -1;
  struct sockaddr_in addr = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  int err = 0;
  if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
    if (errno != EINPROGRESS) {
      err = errno;
      goto fail;
    }
    int ready = fenced_wait_fd(fd, POLLOUT, deadline);
    socklen_t len = sizeof err;
    if (ready <= 0) {
      err = ready == 0 ? ETIMEDOUT : errno;
      goto fail;
    }
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
      err = errno;
    if (err)
      goto fail;
  }
  char line[FENCED_MAX_LINE + 2];
  int n = snprintf(line, sizeof line, "%s\n", request);
  if (n < 0 || (size_t)n >= sizeof line) {
    err = EMSGSIZE;
    goto fail;
  }
  for (int sent = 0; sent < n;) {
    ssize_t w = send(fd, line + sent, (size_t)(n - sent), MSG_NOSIGNAL);
    if (w > 0) {
      sent += (int)w;
      continue;
    }
    if (w < 0 && errno != EAGAIN && errno != EINTR) {
      err = errno;
      goto fail;
    }
    int ready = fenced_wait_fd(fd, POLLOUT, deadline);
    if (ready <= 0) {
      err = ready == 0 ? ETIMEDOUT : errno;
      goto fail;
    }
  }
  size_t got = 0;
  for (;;) {
    if (got + 1 >= reply_size) {
      err = EMSGSIZE;
      goto fail;
    }
    ssize_t r = recv(fd, reply + got, reply_size - 1 - got, 0);
    if (r > 0) {
      got += (size_t)r;
      reply[got] = '\0';
      char *nl = strchr(reply, '\n');
      if (nl) {
        *nl = '\0';
        close(fd);
        return 0;
      }
      continue;
    }
    if (r == 0) {
      err = ECONNRESET; /* closed before a whole reply */
      goto fail;
    }
    if (errno != EAGAIN && errno != EINTR) {
      err = errno;
      goto fail;
    }
    int ready = fenced_wait_fd(fd, POLLIN, deadline);
    if (ready <= 0) {
      err = ready == 0 ? ETIMEDOUT : errno;
      goto fail;
    }
  }
fail:
  close(fd);
  errno = err;
  return -1;
}

#endif /* FENCED_STORE_H */
