/*
 * zkrc_stats_serve() (zkrecipes/stats.h): one HTTP/1.x request on an
 * accepted socket, answered with the Prometheus text at /metrics (issue
 * 33: daemon authors wrote this by hand).  Every wait is a poll() bounded
 * by the call's deadline and every read and write is non-blocking
 * (MSG_DONTWAIT), so a client that sends nothing, or reads nothing, costs
 * the caller at most timeout_ms, whatever the socket's own flags.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <glib.h>

#include "recipes/stats_internal.h"
#include "core/util.h"
#include "zkrecipes/error.h"
#include "zkrecipes/stats.h"

#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Wait until @p fd is ready for @p events (or has hung up: the read or
 * write then says so) or @p deadline (monotonic, us) passes.  A deadline
 * already past still looks once, so timeout_ms 0 serves what has come. */
static int wait_ready(int fd, short events, int64_t deadline) {
  for (;;) {
    int64_t left_us = MAX(deadline - g_get_monotonic_time(), 0);
    struct pollfd p = {.fd = fd, .events = events};
    int n = poll(&p, 1, (int)((left_us + 999) / 1000));
    if (n > 0)
      return ZKRC_OK;
    if (n < 0 && errno != EINTR)
      return ZKRC_ECONNLOSS;
    if (n == 0 && g_get_monotonic_time() >= deadline)
      return ZKRC_ETIMEDOUT;
  }
}

/* The length of the request's head (its request line and headers, up to
 * the blank line that ends them; a bare "\n" is taken for "\r\n", as most
 * servers do), or 0 while it is not complete. */
static size_t head_length(const char *buf, size_t len) {
  for (size_t i = 1; i < len; i++) {
    if (buf[i] != '\n')
      continue;
    if (buf[i - 1] == '\n')
      return i + 1;
    if (i >= 2 && buf[i - 1] == '\r' && buf[i - 2] == '\n')
      return i + 1;
  }
  return 0;
}

/* Read the request's head into @p buf (@p cap bytes) by @p deadline:
 * ZKRC_OK, ZKRC_ETOOBIG (full, and no end), ZKRC_ETIMEDOUT, or
 * ZKRC_ECONNLOSS (the client closed, or the read failed). */
static int read_head(int fd, char *buf, size_t cap, int64_t deadline) {
  size_t len = 0;
  while (head_length(buf, len) == 0) {
    if (len == cap)
      return ZKRC_ETOOBIG;
    int rc = wait_ready(fd, POLLIN, deadline);
    if (rc != ZKRC_OK)
      return rc;
    ssize_t got = recv(fd, buf + len, cap - len, MSG_DONTWAIT);
    if (got > 0)
      len += (size_t)got;
    else if (got == 0)
      return ZKRC_ECONNLOSS;
    else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      return ZKRC_ECONNLOSS;
  }
  return ZKRC_OK;
}

/* Write all of @p data by @p deadline. */
static int write_all(int fd, const char *data, size_t len, int64_t deadline) {
  size_t done = 0;
  while (done < len) {
    int rc = wait_ready(fd, POLLOUT, deadline);
    if (rc != ZKRC_OK)
      return rc;
    ssize_t n = send(fd, data + done, len - done, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0)
      done += (size_t)n;
    else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      return ZKRC_ECONNLOSS;
  }
  return ZKRC_OK;
}

/* What a request asks for. */
typedef enum request_kind {
  REQ_BAD,         /* not HTTP/1.x: 400 */
  REQ_NOT_FOUND,   /* another path: 404 */
  REQ_NOT_ALLOWED, /* /metrics, another method: 405 */
  REQ_GET,         /* GET /metrics */
  REQ_HEAD,        /* HEAD /metrics */
} request_kind;

/* A method is a token: letters, nothing odd. */
static gboolean is_method(const char *m) {
  if (*m == '\0')
    return FALSE;
  for (; *m; m++)
    if (!g_ascii_isalpha(*m) && *m != '-' && *m != '_')
      return FALSE;
  return TRUE;
}

/* The request line "METHOD TARGET HTTP/1.x" of @p head. */
static request_kind parse_request(const char *head) {
  const char *eol = strchr(head, '\n');
  if (eol == NULL) /* a NUL before it */
    return REQ_BAD;
  char *line = g_strndup(head, (gsize)(eol - head));
  g_strchomp(line); /* the '\r' */
  char **w = g_strsplit(line, " ", -1);
  request_kind k = REQ_BAD;
  if (g_strv_length(w) == 3 && is_method(w[0]) && w[1][0] == '/' &&
      g_str_has_prefix(w[2], "HTTP/1.") && strlen(w[2]) == 8 &&
      g_ascii_isdigit(w[2][7])) {
    w[1][strcspn(w[1], "?")] = '\0'; /* the query is ignored */
    if (strcmp(w[1], "/metrics") != 0)
      k = REQ_NOT_FOUND;
    else if (strcmp(w[0], "GET") == 0)
      k = REQ_GET;
    else if (strcmp(w[0], "HEAD") == 0)
      k = REQ_HEAD;
    else
      k = REQ_NOT_ALLOWED;
  }
  g_strfreev(w);
  g_free(line);
  return k;
}

/* An answer: status line, headers, and @p body unless @p head_only. */
static GString *answer(const char *status, const char *extra_headers,
                       const char *body, gboolean head_only) {
  GString *a = g_string_new(NULL);
  g_string_printf(a,
                  "HTTP/1.1 %s\r\nContent-Type: %s\r\n"
                  "Content-Length: %zu\r\nConnection: close\r\n%s\r\n",
                  status, CONTENT_TYPE, strlen(body), extra_headers);
  if (!head_only)
    g_string_append(a, body);
  return a;
}

/* The answer to a request of kind @p k, or to a head too long (@p rc
 * ZKRC_ETOOBIG); *@p rc becomes ZKRC_EINVAL if the text could not be
 * made. */
static GString *answer_for(request_kind k, const zkrc_stats_sources *src,
                           int *rc) {
  if (*rc == ZKRC_ETOOBIG) {
    *rc = ZKRC_OK;
    return answer("431 Request Header Fields Too Large", "",
                  "request too large\n", FALSE);
  }
  if (k == REQ_BAD)
    return answer("400 Bad Request", "", "bad request\n", FALSE);
  if (k == REQ_NOT_FOUND)
    return answer("404 Not Found", "", "not found: try /metrics\n", FALSE);
  if (k == REQ_NOT_ALLOWED)
    return answer("405 Method Not Allowed", "Allow: GET, HEAD\r\n",
                  "method not allowed\n", FALSE);
  char *text = zkrc_stats_prometheus(src);
  if (text == NULL) { /* an object freed since the check? */
    *rc = ZKRC_EINVAL;
    return answer("500 Internal Server Error", "", "no statistics\n", FALSE);
  }
  GString *a = answer("200 OK", "", text, k == REQ_HEAD);
  free(text);
  return a;
}

/* The client sees the end of the answer; what it sent and we did not read
 * (a request's body) is dropped now, without waiting, so that closing the
 * socket does not reset the connection under an answer still in flight. */
static void finish(int fd) {
  (void)shutdown(fd, SHUT_WR);
  char sink[4096];
  for (int i = 0; i < 16; i++)
    if (recv(fd, sink, sizeof sink, MSG_DONTWAIT) <= 0)
      break;
}

/* A stream socket? */
static gboolean is_stream_socket(int fd) {
  int type = 0;
  socklen_t len = sizeof type;
  return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 &&
         type == SOCK_STREAM;
}

int zkrc_stats_serve(int fd, const zkrc_stats_sources *src, int timeout_ms) {
  if (fd < 0 || timeout_ms < 0 || !is_stream_socket(fd) ||
      !zkrc__stats_sources_usable(src))
    return zkrc__fail(ZKRC_EINVAL);
  int64_t deadline = g_get_monotonic_time() + (int64_t)timeout_ms * 1000;
  char *head = g_malloc0(ZKRC_STATS_REQUEST_MAX + 1); /* and a NUL */
  int rc = read_head(fd, head, ZKRC_STATS_REQUEST_MAX, deadline);
  if (rc == ZKRC_OK || rc == ZKRC_ETOOBIG) {
    request_kind k = rc == ZKRC_OK ? parse_request(head) : REQ_BAD;
    GString *a = answer_for(k, src, &rc);
    int written = write_all(fd, a->str, a->len, deadline);
    if (written != ZKRC_OK)
      rc = written;
    g_string_free(a, TRUE);
    finish(fd);
  }
  g_free(head);
  return rc == ZKRC_OK ? ZKRC_OK : zkrc__fail(rc);
}
