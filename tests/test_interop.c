/*
 * Interoperability: zkrecipes' lock and election on the same paths as real
 * Apache Curator 5 participants (InterProcessMutex, LeaderLatch; the
 * CuratorPeer Java program) and kazoo Locks created with
 * extra_lock_patterns=["-lock-"] (kazoo_peer.py under Debian's python3).
 *
 * Peers are separate processes driven through their stdin and stdout, one
 * line per command and per event (see tests/peers/CuratorPeer.java).  Every
 * read of a peer has a deadline; every peer is SIGKILLed when the test
 * program exits (and when it dies: PR_SET_PDEATHSIG), whatever happened.
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
#include <glib/gstdio.h>

#include "testutil.h"

#define KAZOO_PEER TOP_SRCDIR "/tests/peers/kazoo_peer.py"
#define INTEROP_WORKER TOP_BUILDDIR "/tests/interopworker"

/* How long a JVM (or Python) may take to start and connect. */
#define START_MS 30000
/* How long any other single step may take. */
#define STEP_MS 10000

/* Iterations of each process in the shared-counter tests. */
#define COUNT_ITERATIONS 50

/* ------------------------------------------------------------------ peers */

typedef struct peer {
  char *name; /* for messages */
  pid_t pid;  /* 0 once reaped */
  int in_fd;  /* its stdin, -1 once closed */
  int out_fd; /* its stdout */
  GString *partial;
  GQueue lines; /* complete lines not consumed yet (char *) */
  gboolean eof;
} peer;

static GPtrArray *live_peers; /* every peer not yet reaped */

static void peer_kill(peer *p) {
  if (p->pid > 0) {
    kill(p->pid, SIGKILL);
    while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
      ;
    p->pid = 0;
  }
}

/* Kill every peer left over (by a failed test, or at exit). */
static void kill_live_peers(void) {
  for (guint i = 0; live_peers && i < live_peers->len; i++)
    peer_kill(g_ptr_array_index(live_peers, i));
}

static void peer_free(peer *p) {
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
static peer *peer_start(const char *name, char **argv) {
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
static int peer_fill(peer *p, int timeout_ms) {
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
static gboolean line_is(const char *line, const char *kw, const char **rest) {
  size_t n = strlen(kw);
  if (strncmp(line, kw, n) != 0 || (line[n] != '\0' && line[n] != ' '))
    return FALSE;
  if (rest)
    *rest = line[n] ? line + n + 1 : line + n;
  return TRUE;
}

static void peer_report(peer *p, const char *what) {
  fprintf(stderr, "\npeer %s: %s; unread lines:", p->name, what);
  for (GList *l = p->lines.head; l; l = l->next)
    fprintf(stderr, " [%s]", (char *)l->data);
  fprintf(stderr, "%s\n", p->eof ? " (its output has ended)" : "");
}

/* Wait at most @p timeout_ms for a line starting with the word @p kw (other
 * lines stay queued, in order) and return what follows the word (g_free
 * it), or NULL. */
static char *peer_expect(peer *p, const char *kw, int timeout_ms) {
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
static char *peer_next(peer *p, int timeout_ms) {
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
static gboolean peer_said(peer *p, const char *kw) {
  while (peer_fill(p, 0) > 0)
    ;
  for (GList *l = p->lines.head; l; l = l->next)
    if (line_is(l->data, kw, NULL))
      return TRUE;
  return FALSE;
}

static gboolean peer_send(peer *p, const char *line) {
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
static char *peer_ask(peer *p, const char *cmd, const char *kw) {
  return peer_send(p, cmd) ? peer_expect(p, kw, STEP_MS) : NULL;
}

/* Close the peer's stdin and wait for it to exit: its exit status (0..255),
 * 128+signal, or -1 when it did not exit within @p timeout_ms (it is then
 * killed).  Frees the peer. */
static int peer_finish(peer *p, int timeout_ms) {
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
static G_GNUC_NULL_TERMINATED peer *
curator_peer(const char *name, const char *mode, const char *path, ...) {
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

static G_GNUC_NULL_TERMINATED peer *
kazoo_peer(const char *name, const char *mode, const char *path, ...) {
  static const char *const head[] = {DEBIAN_PYTHON3, KAZOO_PEER};
  va_list ap;
  va_start(ap, path);
  peer *p = start_argv(name, head, G_N_ELEMENTS(head), mode, path, ap);
  va_end(ap);
  return p;
}

static G_GNUC_NULL_TERMINATED peer *
zkrc_worker(const char *name, const char *mode, const char *path, ...) {
  static const char *const head[] = {INTEROP_WORKER};
  va_list ap;
  va_start(ap, path);
  peer *p = start_argv(name, head, G_N_ELEMENTS(head), mode, path, ap);
  va_end(ap);
  return p;
}

/* ------------------------------------------------- an in-process holder */

/* A thread that acquires and releases a zkrecipes lock on command (the lock
 * is owned per thread), so the test can wait for its outcome with a
 * deadline. */
typedef enum { HOLDER_ACQUIRE = 1, HOLDER_RELEASE, HOLDER_QUIT } holder_cmd;
#define NO_RESULT G_MININT

typedef struct holder {
  zkrc_lock *lk;
  GThread *thread;
  GAsyncQueue *cmds, *results; /* results: rc + 1000 (never NULL) */
} holder;

static gpointer holder_main(gpointer arg) {
  holder *h = arg;
  for (;;) {
    holder_cmd cmd = GPOINTER_TO_INT(g_async_queue_pop(h->cmds));
    int rc;
    if (cmd == HOLDER_QUIT)
      return NULL;
    if (cmd == HOLDER_ACQUIRE)
      rc = zkrc_lock_acquire(h->lk, 2 * STEP_MS);
    else
      rc = zkrc_lock_release(h->lk);
    g_async_queue_push(h->results, GINT_TO_POINTER(rc + 1000));
  }
}

static holder *holder_new(zkrc_lock *lk) {
  holder *h = g_new0(holder, 1);
  h->lk = lk;
  h->cmds = g_async_queue_new();
  h->results = g_async_queue_new();
  h->thread = g_thread_new("holder", holder_main, h);
  return h;
}

static void holder_send(holder *h, holder_cmd cmd) {
  g_async_queue_push(h->cmds, GINT_TO_POINTER(cmd));
}

/* The result of the last command, waiting at most @p timeout_ms (0: do not
 * wait); NO_RESULT when none yet. */
static int holder_result(holder *h, int timeout_ms) {
  gpointer r =
      g_async_queue_timeout_pop(h->results, (guint64)timeout_ms * 1000);
  if (r == NULL && timeout_ms > 0)
    fprintf(stderr, "\nthe holder thread gave no result within %d ms\n",
            timeout_ms);
  return r ? GPOINTER_TO_INT(r) - 1000 : NO_RESULT;
}

/* Stop the thread (it must not be blocked in an acquisition longer than
 * its own timeout) and free the holder; the lock stays the caller's. */
static void holder_free(holder *h) {
  if (h == NULL)
    return;
  holder_send(h, HOLDER_QUIT);
  g_thread_join(h->thread);
  g_async_queue_unref(h->cmds);
  g_async_queue_unref(h->results);
  g_free(h);
}

/* ---------------------------------------------------------------- helpers */

typedef struct children_count {
  zhandle_t *zh;
  const char *path;
  int n;
} children_count;

static int has_children(void *arg) {
  children_count *c = arg;
  return zkt_child_count(c->zh, c->path) == c->n;
}

/* Wait until @p path has exactly @p n children (a peer's node appears or
 * goes; no event tells the test when another process creates one). */
static gboolean wait_children(zhandle_t *zh, const char *path, int n) {
  children_count c = {zh, path, n};
  if (zkt_wait_for(has_children, &c, STEP_MS))
    return TRUE;
  fprintf(stderr, "\n%s has %d children, expected %d\n", path,
          zkt_child_count(zh, path), n);
  return FALSE;
}

static zkrc_lock *new_lock(zkrc_session *s, const char *path, const char *id) {
  zkrc_lock_options o;
  zkrc_lock_options_init(&o);
  o.participant_id = id;
  zkrc_lock *lk = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_new(&lk, s, path, &o));
  return lk;
}

/* The lock's participants joined with ',' (g_free), or NULL. */
static char *lock_participants(zkrc_lock *lk) {
  char **ids = NULL;
  int rc = zkrc_lock_participants(lk, &ids, NULL, STEP_MS);
  ZKT_ASSERT_RC(ZKRC_OK, rc);
  if (rc != ZKRC_OK)
    return NULL;
  char *joined = g_strjoinv(",", ids);
  zkrc_strv_free(ids);
  return joined;
}

static void assert_str(const char *expected, const char *actual,
                       const char *what) {
  if (actual == NULL || strcmp(expected, actual) != 0)
    fprintf(stderr, "\n%s: \"%s\", expected \"%s\"\n", what,
            actual ? actual : "(none)", expected);
  CU_ASSERT_STRING_EQUAL(actual ? actual : "(none)", expected);
}

/* Send @p cmd to @p p and check the rest of its @p kw reply. */
static void assert_reply(peer *p, const char *cmd, const char *kw,
                         const char *expected) {
  char *got = peer_ask(p, cmd, kw);
  char *what = g_strdup_printf("%s's answer to \"%s\"", p->name, cmd);
  assert_str(expected, got, what);
  g_free(what);
  g_free(got);
}

/* ------------------------------------------------------ shared counter */

static gboolean is_foreign(const char *id) {
  return !g_str_has_prefix(id, "zkrc-");
}

/* 2 foreign peers (Curator or kazoo, @p foreign_kind) and 2 zkrecipes
 * workers each add 1 to a counter file COUNT_ITERATIONS times under the
 * lock (read, sleep 1 ms, write).  No update may be lost, and the trace of
 * holders must show both implementations taking turns, or the run proved
 * nothing. */
static void shared_counter(const char *foreign_kind) {
  kill_live_peers();
  char *path = zkt_path(foreign_kind);
  char *dir = g_dir_make_tmp("zkt-interop-XXXXXX", NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
  char *counter = g_build_filename(dir, "counter", NULL);
  char *trace = g_strconcat(counter, ".trace", NULL);
  char n[16];
  snprintf(n, sizeof n, "%d", COUNT_ITERATIONS);
  const char *ids[4] = {NULL, NULL, "zkrc-1", "zkrc-2"};
  char *foreign_ids[2];
  peer *peers[4];
  for (int i = 0; i < 2; i++) {
    foreign_ids[i] = g_strdup_printf("%s-%d", foreign_kind, i + 1);
    ids[i] = foreign_ids[i];
    if (strcmp(foreign_kind, "curator") == 0)
      peers[i] =
          curator_peer(ids[i], "count", path, ids[i], n, counter, (char *)NULL);
    else
      peers[i] =
          kazoo_peer(ids[i], "count", path, ids[i], n, counter, (char *)NULL);
  }
  for (int i = 2; i < 4; i++)
    peers[i] =
        zkrc_worker(ids[i], "count", path, ids[i], n, counter, (char *)NULL);

  /* Start together: each has warmed up and waits for "go". */
  gboolean ok = TRUE;
  for (int i = 0; i < 4; i++) {
    char *rest = peers[i] ? peer_expect(peers[i], "ready", START_MS) : NULL;
    ok = ok && rest != NULL;
    g_free(rest);
  }
  CU_ASSERT_TRUE(ok);
  for (int i = 0; ok && i < 4; i++)
    ok = peer_send(peers[i], "go");
  for (int i = 0; ok && i < 4; i++) {
    char *rest = peer_expect(peers[i], "done", 6 * STEP_MS);
    ok = rest != NULL;
    g_free(rest);
  }
  CU_ASSERT_TRUE(ok);
  for (int i = 0; i < 4; i++) {
    if (!ok) { /* already failed: do not wait for stuck peers */
      peer_free(peers[i]);
      continue;
    }
    int status = peer_finish(peers[i], STEP_MS);
    if (status != 0)
      fprintf(stderr, "\n%s exited with %d\n", ids[i], status);
    CU_ASSERT_EQUAL(status, 0);
  }

  if (ok) {
    char *text = NULL;
    CU_ASSERT_TRUE(g_file_get_contents(counter, &text, NULL, NULL));
    int total = text ? atoi(text) : -1;
    if (total != 4 * COUNT_ITERATIONS)
      fprintf(stderr, "\ncounter is %d, expected %d: updates were lost\n",
              total, 4 * COUNT_ITERATIONS);
    CU_ASSERT_EQUAL(total, 4 * COUNT_ITERATIONS);
    g_free(text);

    /* The trace: one line per hold, in holding order. */
    CU_ASSERT_TRUE(g_file_get_contents(trace, &text, NULL, NULL));
    char **lines = g_strsplit(text ? text : "", "\n", -1);
    int per_id[4] = {0}, switches = 0, holds = 0;
    for (int i = 0; lines[i] && lines[i][0]; i++, holds++) {
      for (int k = 0; k < 4; k++)
        per_id[k] += strcmp(lines[i], ids[k]) == 0;
      if (i > 0 && is_foreign(lines[i]) != is_foreign(lines[i - 1]))
        switches++;
    }
    CU_ASSERT_EQUAL(holds, 4 * COUNT_ITERATIONS);
    for (int k = 0; k < 4; k++)
      CU_ASSERT_EQUAL(per_id[k], COUNT_ITERATIONS);
    if (switches < 20)
      fprintf(stderr,
              "\nthe lock passed between %s and zkrecipes only %d "
              "times: the processes did not contend\n",
              foreign_kind, switches);
    CU_ASSERT_TRUE(switches >= 20);
    if (getenv("ZKT_VERBOSE"))
      fprintf(stderr, "\n%s: %d hand-overs between implementations\n",
              foreign_kind, switches);
    g_strfreev(lines);
    g_free(text);
  }
  g_unlink(counter);
  g_unlink(trace);
  g_rmdir(dir);
  for (int i = 0; i < 2; i++)
    g_free(foreign_ids[i]);
  g_free(trace);
  g_free(counter);
  g_free(dir);
  g_free(path);
}

static void test_curator_shared_counter(void) { shared_counter("curator"); }
static void test_kazoo_shared_counter(void) { shared_counter("kazoo"); }

/* ------------------------------------------------------ Curator mutex */

/* A Curator holder makes our try-once acquisition fail, lists us behind
 * it, and hands over to us; then we hold, Curator's timed acquisition
 * fails, and we hand over to Curator. */
static void test_curator_mutex_both_ways(void) {
  kill_live_peers();
  char *path = zkt_path("curator-mutex");
  zhandle_t *zh = zkt_raw();
  zkrc_session *s = zkt_session();
  zkrc_lock *lk = new_lock(s, path, "zkrc-A");
  peer *cur =
      curator_peer("curator", "shell", path, "curator-peer", (char *)NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(cur);
  holder *h = holder_new(lk);

  /* Curator holds: its node is Curator's protected lock node. */
  char *node = peer_ask(cur, "acquire", "acquired");
  CU_ASSERT_PTR_NOT_NULL(node);
  if (node) {
    char *prefix = g_strconcat(path, "/_c_", NULL);
    CU_ASSERT_TRUE(g_str_has_prefix(node, prefix));
    CU_ASSERT_PTR_NOT_NULL(strstr(node, "-lock-"));
    g_free(prefix);
  }
  ZKT_ASSERT_RC(ZKRC_ELOCKED, zkrc_lock_acquire(lk, ZKRC_NO_WAIT));
  CU_ASSERT_EQUAL(zkt_child_count(zh, path), 1); /* ours is gone again */

  /* We queue behind Curator; both see the same queue. */
  holder_send(h, HOLDER_ACQUIRE);
  CU_ASSERT_TRUE(wait_children(zh, path, 2));
  char *ids = lock_participants(lk);
  assert_str("curator-peer,zkrc-A", ids, "zkrc_lock_participants");
  g_free(ids);
  assert_reply(cur, "participants", "participants", "curator-peer,zkrc-A");
  CU_ASSERT_EQUAL(holder_result(h, 0), NO_RESULT); /* still waiting */

  /* Curator releases: we get it. */
  g_free(peer_ask(cur, "release", "released"));
  ZKT_ASSERT_RC(ZKRC_OK, holder_result(h, STEP_MS));

  /* Vice versa: Curator cannot get it while we hold... */
  assert_reply(cur, "acquire 300", "timeout", "");
  CU_ASSERT_TRUE(wait_children(zh, path, 1)); /* Curator's node is gone */
  /* ...queues behind us, and gets it when we release. */
  CU_ASSERT_TRUE(peer_send(cur, "acquire"));
  CU_ASSERT_TRUE(wait_children(zh, path, 2));
  ids = lock_participants(lk);
  assert_str("zkrc-A,curator-peer", ids, "zkrc_lock_participants");
  g_free(ids);
  CU_ASSERT_FALSE(peer_said(cur, "acquired"));
  holder_send(h, HOLDER_RELEASE);
  ZKT_ASSERT_RC(ZKRC_OK, holder_result(h, STEP_MS));
  char *node2 = peer_expect(cur, "acquired", STEP_MS);
  CU_ASSERT_PTR_NOT_NULL(node2);
  ZKT_ASSERT_RC(ZKRC_ELOCKED, zkrc_lock_acquire(lk, ZKRC_NO_WAIT));

  CU_ASSERT_TRUE(peer_send(cur, "quit"));
  g_free(peer_expect(cur, "released", STEP_MS));
  CU_ASSERT_EQUAL(peer_finish(cur, STEP_MS), 0);
  holder_free(h);
  zkrc_lock_free(lk);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(node2);
  g_free(node);
  g_free(path);
}

/* ------------------------------------------------------ Curator latch */

static void on_election(zkrc_election *e, const zkrc_election_event_info *info,
                        void *arg) {
  g_async_queue_push(arg, GINT_TO_POINTER(info->event + 1));
}

/* The next election event within @p timeout_ms, or -1. */
static int next_election_event(GAsyncQueue *q, int timeout_ms) {
  gpointer ev = g_async_queue_timeout_pop(q, (guint64)timeout_ms * 1000);
  return ev ? GPOINTER_TO_INT(ev) - 1 : -1;
}

static void assert_leader_id(zkrc_election *e, const char *expected) {
  char *id = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_leader_id(e, &id, STEP_MS));
  assert_str(expected, id, "zkrc_election_leader_id");
  free(id);
}

/* A Curator LeaderLatch and a zkrecipes participant share one election:
 * exactly one leads, each sees the other's id, and leadership passes from
 * Curator to us and back when the leader leaves. */
static void test_curator_latch_election(void) {
  kill_live_peers();
  char *path = zkt_path("curator-latch");
  zhandle_t *zh = zkt_raw();
  zkrc_session *s = zkt_session();
  GAsyncQueue *events = g_async_queue_new();
  zkrc_election_options o;
  zkrc_election_options_init(&o);
  o.participant_id = "zkrc-E";
  o.on_event = on_election;
  o.event_arg = events;
  zkrc_election *e = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_new(&e, s, path, &o));

  /* Curator joins first and leads. */
  peer *cur =
      curator_peer("curator-latch", "latch", path, "curator-L", (char *)NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(cur);
  char *node = peer_expect(cur, "joined", START_MS);
  CU_ASSERT_PTR_NOT_NULL(node);
  CU_ASSERT_PTR_NOT_NULL(node ? strstr(node, "-latch-") : NULL);
  g_free(peer_expect(cur, "leader", STEP_MS));

  /* We join behind it: one election, Curator leads. */
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_join(e));
  CU_ASSERT_TRUE(wait_children(zh, path, 2));
  CU_ASSERT_FALSE(zkrc_election_is_leader(e));
  assert_leader_id(e, "curator-L");
  char **ids = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_participants(e, &ids, NULL, STEP_MS));
  char *joined = ids ? g_strjoinv(",", ids) : NULL;
  assert_str("curator-L,zkrc-E", joined, "zkrc_election_participants");
  g_free(joined);
  zkrc_strv_free(ids);
  assert_reply(cur, "status", "status", "leader");
  assert_reply(cur, "leaderid", "leaderid", "curator-L");
  assert_reply(cur, "participants", "participants", "curator-L,zkrc-E");

  /* The Java leader leaves: we are elected. */
  assert_reply(cur, "close", "closed", "");
  CU_ASSERT_EQUAL(next_election_event(events, STEP_MS), ZKRC_ELECTION_ELECTED);
  CU_ASSERT_TRUE(zkrc_election_is_leader(e));
  assert_leader_id(e, "zkrc-E");

  /* Curator joins again, behind us: it follows and sees us lead. */
  g_free(peer_ask(cur, "join", "joined"));
  CU_ASSERT_TRUE(wait_children(zh, path, 2));
  assert_reply(cur, "status", "status", "follower");
  assert_reply(cur, "leaderid", "leaderid", "zkrc-E");
  CU_ASSERT_TRUE(zkrc_election_is_leader(e));
  CU_ASSERT_FALSE(peer_said(cur, "leader"));

  /* We leave: Curator is elected. */
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_leave(e));
  CU_ASSERT_EQUAL(next_election_event(events, STEP_MS), ZKRC_ELECTION_REVOKED);
  g_free(peer_expect(cur, "leader", STEP_MS));
  assert_reply(cur, "status", "status", "leader");
  assert_leader_id(e, "curator-L");
  CU_ASSERT_FALSE(zkrc_election_is_leader(e));

  CU_ASSERT_TRUE(peer_send(cur, "quit"));
  CU_ASSERT_EQUAL(peer_finish(cur, STEP_MS), 0);
  zkrc_election_free(e);
  CU_ASSERT_EQUAL(next_election_event(events, 0), -1); /* nothing more */
  g_async_queue_unref(events);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(node);
  g_free(path);
}

/* ------------------------------------------------------ kazoo */

/* A kazoo holder makes our try-once acquisition fail and vice versa. */
static void test_kazoo_blocks_both_ways(void) {
  kill_live_peers();
  char *path = zkt_path("kazoo-try");
  zkrc_session *s = zkt_session();
  zkrc_lock *lk = new_lock(s, path, "zkrc-T");

  peer *k = kazoo_peer("kazoo", "hold", path, "kazoo-1", (char *)NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(k);
  char *node = peer_expect(k, "acquired", START_MS);
  CU_ASSERT_PTR_NOT_NULL(node ? strstr(node, "__lock__") : NULL);
  ZKT_ASSERT_RC(ZKRC_ELOCKED, zkrc_lock_acquire(lk, ZKRC_NO_WAIT));
  char *ids = lock_participants(lk);
  assert_str("kazoo-1", ids, "zkrc_lock_participants");
  g_free(ids);
  g_free(peer_ask(k, "release", "released"));
  CU_ASSERT_EQUAL(peer_finish(k, STEP_MS), 0);

  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lk, ZKRC_NO_WAIT));
  k = kazoo_peer("kazoo", "hold", path, "kazoo-2", "0", (char *)NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(k);
  char *line = peer_next(k, START_MS);
  assert_str("timeout", line, "kazoo's try-once acquisition");
  g_free(line);
  CU_ASSERT_EQUAL(peer_finish(k, STEP_MS), 3);
  CU_ASSERT_TRUE(zkrc_lock_is_held(lk));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(lk));

  zkrc_lock_free(lk);
  zkrc_session_close(s);
  g_free(node);
  g_free(path);
}

/* kazoo holder, then a zkrecipes waiter, then a kazoo waiter: all three
 * implementations agree on the queue and the lock passes in that order. */
static void test_kazoo_fair_queue(void) {
  kill_live_peers();
  char *path = zkt_path("kazoo-queue");
  zhandle_t *zh = zkt_raw();
  zkrc_session *s = zkt_session();
  zkrc_lock *lk = new_lock(s, path, "zkrc-W");
  holder *h = holder_new(lk);

  peer *k1 = kazoo_peer("kazoo-1", "hold", path, "kazoo-1", (char *)NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(k1);
  g_free(peer_expect(k1, "acquired", START_MS));
  holder_send(h, HOLDER_ACQUIRE);
  CU_ASSERT_TRUE(wait_children(zh, path, 2));
  peer *k2 = kazoo_peer("kazoo-2", "hold", path, "kazoo-2", (char *)NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(k2);
  CU_ASSERT_TRUE(wait_children(zh, path, 3));

  char *ids = lock_participants(lk);
  assert_str("kazoo-1,zkrc-W,kazoo-2", ids, "zkrc_lock_participants");
  g_free(ids);
  assert_reply(k1, "participants", "participants", "kazoo-1,zkrc-W,kazoo-2");
  CU_ASSERT_EQUAL(holder_result(h, 0), NO_RESULT);

  /* kazoo-1 leaves: we are next, kazoo-2 still waits. */
  g_free(peer_ask(k1, "release", "released"));
  CU_ASSERT_EQUAL(peer_finish(k1, STEP_MS), 0);
  ZKT_ASSERT_RC(ZKRC_OK, holder_result(h, STEP_MS));
  ids = lock_participants(lk);
  assert_str("zkrc-W,kazoo-2", ids, "zkrc_lock_participants");
  g_free(ids);
  CU_ASSERT_FALSE(peer_said(k2, "acquired"));

  /* We release: kazoo-2 gets it. */
  holder_send(h, HOLDER_RELEASE);
  ZKT_ASSERT_RC(ZKRC_OK, holder_result(h, STEP_MS));
  g_free(peer_expect(k2, "acquired", STEP_MS));
  g_free(peer_ask(k2, "release", "released"));
  CU_ASSERT_EQUAL(peer_finish(k2, STEP_MS), 0);

  holder_free(h);
  zkrc_lock_free(lk);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(path);
}

/* ------------------------------------------------------------------ main */

static void add_suites(void) {
  ZKT_SUITE("curator", {"shared_counter", test_curator_shared_counter},
            {"mutex_both_ways", test_curator_mutex_both_ways},
            {"latch_election", test_curator_latch_election});
  ZKT_SUITE("kazoo", {"shared_counter", test_kazoo_shared_counter},
            {"blocks_both_ways", test_kazoo_blocks_both_ways},
            {"fair_queue", test_kazoo_fair_queue});
}

int main(void) {
  /* Peers inherit these: bounded waits shorter than their defaults, and
   * the shortest session timeout the test ensemble grants above ours, so a
   * killed peer's nodes do not linger. */
  setenv("ZKR_PEER_TIMEOUT_MS", "20000", 1);
  setenv("ZKR_PEER_SESSION_MS", "4000", 1);
  setenv("ZKR_PEER_LIFETIME_S", "150", 1);
  return zkt_run("test_interop", add_suites);
}
