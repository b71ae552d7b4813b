/*
 * Peers of the interoperability tests (interop_peers.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>

#include "interop_peers.h"
#include "testutil.h"

#define KAZOO_PEER TOP_SRCDIR "/tests/peers/kazoo_peer.py"
#define INTEROP_WORKER TOP_BUILDDIR "/tests/interopworker"

static GPtrArray *live_peers; /* every peer not yet reaped */

void peer_kill(peer *p) {
  if (p->pid > 0) {
    kill(p->pid, SIGKILL);
    while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
      ;
    p->pid = 0;
  }
}

/* Kill every peer left over (by a failed test, or at exit). */
void kill_live_peers(void) {
  for (guint i = 0; live_peers && i < live_peers->len; i++)
    peer_kill(g_ptr_array_index(live_peers, i));
}

void peer_free(peer *p) {
  if (p == NULL)
    return;
  peer_kill(p);
  g_ptr_array_remove(live_peers, p);
  if (p->in_fd >= 0)
    close(p->in_fd);
  close(p->out_fd);
  g_string_free(p->partial, TRUE);
  g_queue_clear_full(&p->lines, g_free);
  g_free(p->name);
  g_free(p);
}

/* Start @p argv (argv[0] looked up in PATH) with pipes on its stdin and
 * stdout; its stderr is ours.  NULL (and a failed assertion) on failure. */
peer *peer_start(const char *name, char **argv) {
  /* It dies with us; no ZooKeeper socket or other peer's pipe leaks in. */
  zkrc_spawn_options o;
  zkrc_spawn_options_init(&o);
  o.pipe_stdin = o.pipe_stdout = 1;
  zkrc_child c;
  if (zkrc_spawn(&c, argv, &o) != 0) {
    CU_FAIL("cannot start the peer");
    return NULL;
  }
  if (live_peers == NULL) {
    live_peers = g_ptr_array_new();
    atexit(kill_live_peers); /* runs before testutil stops the ensemble */
  }
  peer *p = g_new0(peer, 1);
  p->name = g_strdup(name);
  p->pid = c.pid;
  p->in_fd = c.in_fd;
  p->out_fd = c.out_fd;
  p->partial = g_string_new(NULL);
  g_queue_init(&p->lines);
  g_ptr_array_add(live_peers, p);
  return p;
}

/* Read what the peer wrote within @p timeout_ms into complete lines.
 * Returns 1 if something was read, 0 on timeout, -1 at end of output. */
int peer_fill(peer *p, int timeout_ms) {
  if (p->eof)
    return -1;
  struct pollfd pfd = {.fd = p->out_fd, .events = POLLIN};
  int r = poll(&pfd, 1, timeout_ms);
  if (r < 0 && errno == EINTR)
    return 0;
  if (r <= 0)
    return r < 0 ? -1 : 0;
  char buf[4096];
  ssize_t n = read(p->out_fd, buf, sizeof buf);
  if (n < 0 && errno == EINTR)
    return 0;
  if (n <= 0) {
    p->eof = TRUE;
    return -1;
  }
  for (ssize_t i = 0; i < n; i++) {
    if (buf[i] == '\n') {
      g_queue_push_tail(&p->lines, g_strdup(p->partial->str));
      g_string_truncate(p->partial, 0);
    } else {
      g_string_append_c(p->partial, buf[i]);
    }
  }
  return 1;
}

/* Does @p line start with the word @p kw?  Sets *rest to what follows. */
gboolean line_is(const char *line, const char *kw, const char **rest) {
  size_t n = strlen(kw);
  if (strncmp(line, kw, n) != 0 || (line[n] != '\0' && line[n] != ' '))
    return FALSE;
  if (rest)
    *rest = line[n] ? line + n + 1 : line + n;
  return TRUE;
}

void peer_report(peer *p, const char *what) {
  fprintf(stderr, "\npeer %s: %s; unread lines:", p->name, what);
  for (GList *l = p->lines.head; l; l = l->next)
    fprintf(stderr, " [%s]", (char *)l->data);
  fprintf(stderr, "%s\n", p->eof ? " (its output has ended)" : "");
}

/* Wait at most @p timeout_ms for a line starting with the word @p kw (other
 * lines stay queued, in order) and return what follows the word (g_free
 * it), or NULL. */
char *peer_expect(peer *p, const char *kw, int timeout_ms) {
  int64_t deadline = zkt_now_ms() + timeout_ms;
  for (;;) {
    for (GList *l = p->lines.head; l; l = l->next) {
      const char *rest;
      if (line_is(l->data, kw, &rest)) {
        char *out = g_strdup(rest);
        g_free(l->data);
        g_queue_delete_link(&p->lines, l);
        return out;
      }
    }
    int64_t left = deadline - zkt_now_ms();
    if (left <= 0 || peer_fill(p, (int)left) < 0) {
      char *what =
          g_strdup_printf("no \"%s\" line within %d ms", kw, timeout_ms);
      peer_report(p, what);
      g_free(what);
      return NULL;
    }
  }
}

/* The peer's next line (any), or NULL after @p timeout_ms. */
char *peer_next(peer *p, int timeout_ms) {
  int64_t deadline = zkt_now_ms() + timeout_ms;
  while (g_queue_is_empty(&p->lines)) {
    int64_t left = deadline - zkt_now_ms();
    if (left <= 0 || peer_fill(p, (int)left) < 0) {
      peer_report(p, "no line in time");
      return NULL;
    }
  }
  return g_queue_pop_head(&p->lines);
}

/* Has the peer written a line starting with @p kw by now?  (Reads what is
 * there without waiting; consumes nothing.) */
gboolean peer_said(peer *p, const char *kw) {
  while (peer_fill(p, 0) > 0)
    ;
  for (GList *l = p->lines.head; l; l = l->next)
    if (line_is(l->data, kw, NULL))
      return TRUE;
  return FALSE;
}

gboolean peer_send(peer *p, const char *line) {
  GString *s = g_string_new(line);
  g_string_append_c(s, '\n');
  ssize_t n = p->in_fd >= 0 ? write(p->in_fd, s->str, s->len) : -1;
  gboolean ok = n == (ssize_t)s->len;
  g_string_free(s, TRUE);
  if (!ok)
    peer_report(p, "could not send a command");
  return ok;
}

/* Send @p cmd and return the rest of the reply line starting with @p kw. */
char *peer_ask(peer *p, const char *cmd, const char *kw) {
  return peer_send(p, cmd) ? peer_expect(p, kw, STEP_MS) : NULL;
}

/* Close the peer's stdin and wait for it to exit: its exit status (0..255),
 * 128+signal, or -1 when it did not exit within @p timeout_ms (it is then
 * killed).  Frees the peer. */
int peer_finish(peer *p, int timeout_ms) {
  if (p == NULL)
    return -1;
  if (p->in_fd >= 0) {
    close(p->in_fd);
    p->in_fd = -1;
  }
  int64_t deadline = zkt_now_ms() + timeout_ms;
  int status = 0, result = -1;
  for (;;) {
    pid_t r = waitpid(p->pid, &status, WNOHANG);
    if (r == p->pid) {
      p->pid = 0;
      result = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    if ((r < 0 && errno != EINTR) || zkt_now_ms() >= deadline) {
      peer_report(p, "did not exit in time");
      break;
    }
    /* Drain its output so that it never blocks writing. */
    peer_fill(p, 10);
  }
  peer_free(p);
  return result;
}

/* argv builders: NULL-terminated argument lists after the mode. */

static peer *start_argv(const char *name, const char *const *head, int nhead,
                        const char *mode, const char *path, va_list ap) {
  GPtrArray *argv = g_ptr_array_new();
  for (int i = 0; i < nhead; i++)
    g_ptr_array_add(argv, (char *)head[i]);
  g_ptr_array_add(argv, (char *)mode);
  g_ptr_array_add(argv, (char *)zkt_hosts());
  g_ptr_array_add(argv, (char *)path);
  for (const char *a; (a = va_arg(ap, const char *)) != NULL;)
    g_ptr_array_add(argv, (char *)a);
  g_ptr_array_add(argv, NULL);
  peer *p = peer_start(name, (char **)argv->pdata);
  g_ptr_array_free(argv, TRUE);
  return p;
}

/* A CuratorPeer: curator_peer(name, mode, path, args..., NULL). */
peer *curator_peer(const char *name, const char *mode, const char *path, ...) {
  /* Start-up flags: a short-lived JVM on two cores. */
  static const char *const head[] = {
      JAVA_PROG, "-XX:+UseSerialGC",     "-XX:TieredStopAtLevel=1",
      "-cp",     CURATOR_PEER_CLASSPATH, "CuratorPeer"};
  va_list ap;
  va_start(ap, path);
  peer *p = start_argv(name, head, G_N_ELEMENTS(head), mode, path, ap);
  va_end(ap);
  return p;
}

peer *kazoo_peer(const char *name, const char *mode, const char *path, ...) {
  static const char *const head[] = {DEBIAN_PYTHON3, KAZOO_PEER};
  va_list ap;
  va_start(ap, path);
  peer *p = start_argv(name, head, G_N_ELEMENTS(head), mode, path, ap);
  va_end(ap);
  return p;
}

peer *zkrc_worker(const char *name, const char *mode, const char *path, ...) {
  static const char *const head[] = {INTEROP_WORKER};
  va_list ap;
  va_start(ap, path);
  peer *p = start_argv(name, head, G_N_ELEMENTS(head), mode, path, ap);
  va_end(ap);
  return p;
}

peer *curator_class_peer(const char *name, const char *cls, const char *mode,
                         ...) {
  const char *head[] = {
      JAVA_PROG, "-XX:+UseSerialGC",     "-XX:TieredStopAtLevel=1",
      "-cp",     CURATOR_PEER_CLASSPATH, cls};
  va_list ap;
  va_start(ap, mode);
  const char *first = va_arg(ap, const char *); /* start_argv's "path" */
  peer *p = start_argv(name, head, G_N_ELEMENTS(head), mode, first, ap);
  va_end(ap);
  return p;
}
