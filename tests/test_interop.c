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

#include "interop_peers.h"
#include "testutil.h"

/* Iterations of each process in the shared-counter tests. */
#define COUNT_ITERATIONS 50

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

static void on_election(zkrc_election *e, const zkrc_election_event *info,
                        void *arg) {
  g_async_queue_push(arg, GINT_TO_POINTER(info->type)); /* never 0 */
}

/* The next election event within @p timeout_ms, or -1. */
static int next_election_event(GAsyncQueue *q, int timeout_ms) {
  gpointer ev = g_async_queue_timeout_pop(q, (guint64)timeout_ms * 1000);
  return ev ? GPOINTER_TO_INT(ev) : -1;
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

/* Our lock in kazoo's format and a stock kazoo Lock (not told about
 * Curator's names) exclude each other, both ways.  The control: in the
 * default format, Curator's, the stock Lock does not see our hold and
 * takes the lock beside it. */
static void test_kazoo_format_stock_lock(void) {
  kill_live_peers();
  char *path = zkt_path("kazoo-format");
  zkrc_session *s = zkt_session();
  zkrc_lock_options o;
  zkrc_lock_options_init(&o);
  o.participant_id = "zkrc-K";
  o.format = ZKRC_LOCK_FORMAT_KAZOO;
  zkrc_lock *lk = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_new(&lk, s, path, &o));

  peer *k = kazoo_peer("kazoo", "phold", path, "kazoo-1", (char *)NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(k);
  g_free(peer_expect(k, "acquired", START_MS));
  ZKT_ASSERT_RC(ZKRC_ELOCKED, zkrc_lock_acquire(lk, ZKRC_NO_WAIT));
  g_free(peer_ask(k, "release", "released"));
  CU_ASSERT_EQUAL(peer_finish(k, STEP_MS), 0);

  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lk, ZKRC_NO_WAIT));
  char *ours = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_node(lk, &ours));
  CU_ASSERT_PTR_NOT_NULL(ours ? strstr(ours, "-__lock__") : NULL);
  free(ours);
  k = kazoo_peer("kazoo", "phold", path, "kazoo-2", "0", (char *)NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(k);
  char *line = peer_next(k, START_MS);
  assert_str("timeout", line, "stock kazoo's try-once acquisition");
  g_free(line);
  CU_ASSERT_EQUAL(peer_finish(k, STEP_MS), 3);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(lk));
  zkrc_lock_free(lk);

  /* The control: Curator's format goes unseen by the stock Lock. */
  lk = new_lock(s, path, "zkrc-C");
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lk, ZKRC_NO_WAIT));
  k = kazoo_peer("kazoo", "phold", path, "kazoo-3", "0", (char *)NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(k);
  line = peer_next(k, START_MS);
  CU_ASSERT_PTR_NOT_NULL(line ? strstr(line, "acquired") : NULL);
  g_free(line);
  g_free(peer_ask(k, "release", "released"));
  CU_ASSERT_EQUAL(peer_finish(k, STEP_MS), 0);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(lk));
  zkrc_lock_free(lk);

  /* A format the library does not know: refused, nothing made. */
  o.format = (zkrc_lock_format)7;
  lk = NULL;
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_lock_new(&lk, s, path, &o));
  CU_ASSERT_PTR_NULL(lk);
  zkrc_session_close(s);
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
            {"fair_queue", test_kazoo_fair_queue},
            {"kazoo's format and a stock Lock", test_kazoo_format_stock_lock});
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
