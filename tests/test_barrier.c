/*
 * Barriers (zkrecipes/barrier.h) against a real ensemble: the single
 * barrier set, waited for (woken by its removal, or its deadline) and
 * removed; the double barrier entering when N members are in and leaving
 * when all are out, in both dialects, with nothing left behind; LOST told
 * when an entered member's session expires; bad input refused with
 * nothing changed; and Curator's and kazoo's barriers on the same paths,
 * both ways (tests/peers/CuratorBarrierPeer.java, kazoo_barrier.py),
 * including a Curator and a kazoo double-barrier member sharing one path.
 */
#include "config.h"

#include <string.h>

#include <glib.h>

#include "interop_peers.h"
#include "testutil.h"
#include "toolproc.h"
#include "zkrecipes/barrier.h"

#define KAZOO_BARRIER TOP_SRCDIR "/tests/peers/kazoo_barrier.py"
#define ZKR TOP_BUILDDIR "/tools/zkr"
#define TOOL_MS 20000 /* a tool connects, does its part and exits */

/* ------------------------------------------------------------ peers */

/* A Curator (CuratorBarrierPeer) or kazoo (kazoo_barrier.py) peer in
 * @p mode on @p path, with one more argument (NULL: none). */
static peer *barrier_peer(gboolean curator, const char *mode, const char *path,
                          const char *arg) {
  const char *argv[12];
  int n = 0;
  if (curator) {
    argv[n++] = JAVA_PROG;
    argv[n++] = "-XX:+UseSerialGC";
    argv[n++] = "-XX:TieredStopAtLevel=1";
    argv[n++] = "-cp";
    argv[n++] = CURATOR_PEER_CLASSPATH;
    argv[n++] = "CuratorBarrierPeer";
  } else {
    argv[n++] = DEBIAN_PYTHON3;
    argv[n++] = KAZOO_BARRIER;
  }
  argv[n++] = mode;
  argv[n++] = zkt_hosts();
  argv[n++] = path;
  if (arg)
    argv[n++] = arg;
  argv[n] = NULL;
  return peer_start(curator ? "curator" : "kazoo", (char **)argv);
}

/* ------------------------------------------------------- single barrier */

typedef struct waiting {
  zkrc_session *s;
  const char *path;
  int timeout_ms;
  int rc;
} waiting;

static gpointer wait_thread(gpointer arg) {
  waiting *w = arg;
  w->rc = zkrc_barrier_wait(w->s, w->path, w->timeout_ms);
  return NULL;
}

static void test_set_wait_remove(void) {
  zkrc_session *s = zkt_session();
  zhandle_t *zh = zkt_raw();
  char *path = zkt_path("barrier");
  char *inner = g_strdup_printf("%s/a/b", path);
  CU_ASSERT_EQUAL(zkrc_barrier_set(s, inner, 5000), ZKRC_OK);
  CU_ASSERT(zkt_exists(zh, inner));
  CU_ASSERT_EQUAL(zkrc_barrier_set(s, inner, 5000), ZKRC_OK); /* set */
  CU_ASSERT_EQUAL(zkrc_barrier_wait(s, inner, ZKRC_NO_WAIT), ZKRC_ETIMEDOUT);
  /* A waiter woken by the removal, not by its deadline. */
  waiting w = {s, inner, 20000, 1};
  GThread *t = g_thread_new("wait", wait_thread, &w);
  int64_t t0 = zkt_now_ms();
  CU_ASSERT_EQUAL(zkrc_barrier_remove(s, inner, 5000), ZKRC_OK);
  g_thread_join(t);
  CU_ASSERT_EQUAL(w.rc, ZKRC_OK);
  CU_ASSERT(zkt_now_ms() - t0 < 10000);
  CU_ASSERT(!zkt_exists(zh, inner));
  CU_ASSERT_EQUAL(zkrc_barrier_remove(s, inner, 5000), ZKRC_ENONODE);
  /* Not set: gone at once. */
  CU_ASSERT_EQUAL(zkrc_barrier_wait(s, inner, ZKRC_NO_WAIT), ZKRC_OK);
  CU_ASSERT_EQUAL(zkrc_barrier_wait(s, inner, 5000), ZKRC_OK);
  g_free(inner);
  g_free(path);
  zookeeper_close(zh);
  zkrc_session_close(s);
}

static void test_wait_deadline(void) {
  zkrc_session *s = zkt_session();
  char *path = zkt_path("barrier-deadline");
  CU_ASSERT_EQUAL(zkrc_barrier_set(s, path, 5000), ZKRC_OK);
  int64_t t0 = zkt_now_ms();
  CU_ASSERT_EQUAL(zkrc_barrier_wait(s, path, 300), ZKRC_ETIMEDOUT);
  int64_t took = zkt_now_ms() - t0;
  CU_ASSERT(took >= 290 && took < 5000);
  /* A node with children is no barrier to remove. */
  char *child = g_strdup_printf("%s/x", path);
  CU_ASSERT_EQUAL(zkrc_barrier_set(s, child, 5000), ZKRC_OK);
  CU_ASSERT_EQUAL(zkrc_barrier_remove(s, path, 5000), ZKRC_ENOTEMPTY);
  CU_ASSERT_EQUAL(zkrc_barrier_wait(s, path, ZKRC_NO_WAIT), ZKRC_ETIMEDOUT);
  CU_ASSERT_EQUAL(zkrc_barrier_remove(s, child, 5000), ZKRC_OK);
  CU_ASSERT_EQUAL(zkrc_barrier_remove(s, path, 5000), ZKRC_OK);
  g_free(child);
  g_free(path);
  zkrc_session_close(s);
}

static void test_single_bad_input(void) {
  zkrc_session *s = zkt_session();
  zhandle_t *zh = zkt_raw();
  char *path = zkt_path("barrier-bad");
  CU_ASSERT_EQUAL(zkrc_barrier_set(NULL, path, 1000), ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_barrier_set(s, NULL, 1000), ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_barrier_set(s, "/", 1000), ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_barrier_set(s, "no-slash", 1000), ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_barrier_set(s, path, -5), ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_barrier_remove(s, path, -2), ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_barrier_wait(s, "/a//b", 1000), ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_barrier_wait(NULL, path, 1000), ZKRC_EINVAL);
  CU_ASSERT(!zkt_exists(zh, path));
  g_free(path);
  zookeeper_close(zh);
  zkrc_session_close(s);
}

/* Ours set, the peer's wait woken by our remove; the peer's set, ours
 * woken by the peer's remove. */
static void single_interop(gboolean curator) {
  zkrc_session *s = zkt_session();
  char *path = zkt_path(curator ? "barrier-curator" : "barrier-kazoo");
  CU_ASSERT_EQUAL_FATAL(zkrc_barrier_set(s, path, 5000), ZKRC_OK);
  peer *p = barrier_peer(curator, "wait", path, "60000");
  CU_ASSERT_FATAL(p != NULL);
  /* Its wait started: it has set its watch once it looked, which we
   * cannot see; removing before it looked makes it see no node, and
   * "gone" is the answer either way.  The control: with the barrier set,
   * a short wait times out. */
  peer *q = barrier_peer(curator, "wait", path, "200");
  char *line = peer_next(q, START_MS);
  CU_ASSERT_STRING_EQUAL(line ? line : "", "timeout");
  g_free(line);
  CU_ASSERT_EQUAL(peer_finish(q, STEP_MS), 3);
  CU_ASSERT_EQUAL(zkrc_barrier_remove(s, path, 5000), ZKRC_OK);
  line = peer_next(p, START_MS);
  CU_ASSERT_STRING_EQUAL(line ? line : "", "gone");
  g_free(line);
  CU_ASSERT_EQUAL(peer_finish(p, STEP_MS), 0);

  p = barrier_peer(curator, "set", path, NULL);
  line = peer_next(p, START_MS);
  CU_ASSERT_STRING_EQUAL(line ? line : "", "set");
  g_free(line);
  CU_ASSERT_EQUAL(peer_finish(p, STEP_MS), 0);
  CU_ASSERT_EQUAL(zkrc_barrier_wait(s, path, ZKRC_NO_WAIT), ZKRC_ETIMEDOUT);
  waiting w = {s, path, 60000, 1};
  GThread *t = g_thread_new("wait", wait_thread, &w);
  p = barrier_peer(curator, "remove", path, NULL);
  line = peer_next(p, START_MS);
  CU_ASSERT_STRING_EQUAL(line ? line : "", "removed");
  g_free(line);
  CU_ASSERT_EQUAL(peer_finish(p, STEP_MS), 0);
  g_thread_join(t);
  CU_ASSERT_EQUAL(w.rc, ZKRC_OK);
  g_free(path);
  zkrc_session_close(s);
}

static void test_single_curator(void) { single_interop(TRUE); }
static void test_single_kazoo(void) { single_interop(FALSE); }

/* ------------------------------------------------------- double barrier */

/* What a member's listener saw. */
typedef struct seen {
  GMutex mu;
  GCond cond;
  int count[ZKRC_DOUBLE_BARRIER_CLOSED + 1];
  int lost_reason;
  int64_t lost_us; /* when LOST was told (monotonic) */
} seen;

static void record(zkrc_double_barrier *b, const zkrc_double_barrier_event *ev,
                   void *arg) {
  (void)b;
  seen *w = arg;
  g_mutex_lock(&w->mu);
  if (ev->type >= ZKRC_DOUBLE_BARRIER_ENTERED &&
      ev->type <= ZKRC_DOUBLE_BARRIER_CLOSED)
    w->count[ev->type]++;
  if (ev->type == ZKRC_DOUBLE_BARRIER_LOST) {
    w->lost_reason = ev->reason;
    w->lost_us = g_get_monotonic_time();
  }
  g_cond_broadcast(&w->cond);
  g_mutex_unlock(&w->mu);
}

static int seen_count(seen *w, zkrc_double_barrier_event_type type) {
  g_mutex_lock(&w->mu);
  int n = w->count[type];
  g_mutex_unlock(&w->mu);
  return n;
}

/* Wait up to @p ms for a @p type event (the waits of the object may return
 * before its event is delivered on the executor); how many came. */
static int seen_wait(seen *w, zkrc_double_barrier_event_type type, int ms) {
  int64_t until = g_get_monotonic_time() + (int64_t)ms * 1000;
  g_mutex_lock(&w->mu);
  while (w->count[type] == 0 && g_cond_wait_until(&w->cond, &w->mu, until))
    ;
  int n = w->count[type];
  g_mutex_unlock(&w->mu);
  return n;
}

static zkrc_double_barrier *member(zkrc_session *s, const char *path, int n,
                                   zkrc_barrier_dialect dialect, seen *w) {
  zkrc_double_barrier_options o;
  zkrc_double_barrier_options_init(&o);
  o.dialect = dialect;
  o.on_event = w ? record : NULL;
  o.event_arg = w;
  zkrc_double_barrier *b = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_double_barrier_new(&b, s, path, n, &o), ZKRC_OK);
  return b;
}

/* Three members: none enters with two in; all with three; leaving, two
 * wait for the third; then nothing is left under the path. */
static void three_members(zkrc_barrier_dialect dialect) {
  zkrc_session *s = zkt_session();
  zhandle_t *zh = zkt_raw();
  char *path = zkt_path("double");
  seen w[3] = {0};
  zkrc_double_barrier *b[3];
  b[0] = member(s, path, 3, dialect, &w[0]);
  b[1] = member(s, path, 3, dialect, &w[1]);
  CU_ASSERT(zkt_wait_children(zh, path, 2, 10000));
  CU_ASSERT_EQUAL(zkrc_double_barrier_wait_entered(b[0], 300), ZKRC_ETIMEDOUT);
  CU_ASSERT_EQUAL(zkrc_double_barrier_leave(b[0], ZKRC_NO_WAIT), ZKRC_ESTATE);
  CU_ASSERT_EQUAL(seen_count(&w[0], ZKRC_DOUBLE_BARRIER_ENTERED), 0);
  b[2] = member(s, path, 3, dialect, &w[2]);
  for (int i = 0; i < 3; i++)
    CU_ASSERT_EQUAL(zkrc_double_barrier_wait_entered(b[i], 10000), ZKRC_OK);
  CU_ASSERT(zkt_exists(zh, zkrc_double_barrier_path(b[0])));
  size_t len = strlen(zkrc_double_barrier_node(b[0]));
  CU_ASSERT_EQUAL(len, dialect == ZKRC_BARRIER_KAZOO ? 32 : 36);
  CU_ASSERT_EQUAL(zkrc_double_barrier_wait_left(b[0], 0), ZKRC_ESTATE);
  CU_ASSERT_EQUAL(zkrc_double_barrier_leave(b[0], ZKRC_NO_WAIT),
                  ZKRC_ETIMEDOUT);
  CU_ASSERT_EQUAL(zkrc_double_barrier_leave(b[1], 300), ZKRC_ETIMEDOUT);
  CU_ASSERT_EQUAL(zkrc_double_barrier_wait_left(b[0], 100), ZKRC_ETIMEDOUT);
  CU_ASSERT_EQUAL(zkrc_double_barrier_leave(b[2], 10000), ZKRC_OK);
  for (int i = 0; i < 3; i++) {
    CU_ASSERT_EQUAL(zkrc_double_barrier_wait_left(b[i], 10000), ZKRC_OK);
    CU_ASSERT_EQUAL(zkrc_double_barrier_wait_entered(b[i], 0), ZKRC_OK);
  }
  CU_ASSERT_EQUAL(zkt_nodes_left(zh, path), 0);
  for (int i = 0; i < 3; i++) {
    zkrc_double_barrier_free(b[i]);
    CU_ASSERT_EQUAL(w[i].count[ZKRC_DOUBLE_BARRIER_ENTERED], 1);
    CU_ASSERT_EQUAL(w[i].count[ZKRC_DOUBLE_BARRIER_LEFT], 1);
    CU_ASSERT_EQUAL(w[i].count[ZKRC_DOUBLE_BARRIER_LOST], 0);
  }
  g_free(path);
  zookeeper_close(zh);
  zkrc_session_close(s);
}

static void test_three_curator(void) { three_members(ZKRC_BARRIER_CURATOR); }
static void test_three_kazoo(void) { three_members(ZKRC_BARRIER_KAZOO); }

static void test_double_bad_input(void) {
  zkrc_session *s = zkt_session();
  zhandle_t *zh = zkt_raw();
  char *path = zkt_path("double-bad");
  zkrc_double_barrier *b = NULL;
  zkrc_double_barrier_options o;
  zkrc_double_barrier_options_init(&o);
  CU_ASSERT_EQUAL(zkrc_double_barrier_new(NULL, s, path, 2, NULL), ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_double_barrier_new(&b, NULL, path, 2, NULL),
                  ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_double_barrier_new(&b, s, path, 0, NULL), ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_double_barrier_new(&b, s, "/", 2, NULL), ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_double_barrier_new(&b, s, "x/y", 2, NULL), ZKRC_EINVAL);
  o.dialect = (zkrc_barrier_dialect)7;
  CU_ASSERT_EQUAL(zkrc_double_barrier_new(&b, s, path, 2, &o), ZKRC_EINVAL);
  o.dialect = ZKRC_BARRIER_KAZOO;
  o.id = "";
  CU_ASSERT_EQUAL(zkrc_double_barrier_new(&b, s, path, 2, &o), ZKRC_EINVAL);
  zkrc_double_barrier_options bad;
  memset(&bad, 0, sizeof bad); /* not initialized: size 0 */
  CU_ASSERT_EQUAL(zkrc_double_barrier_new(&b, s, path, 2, &bad), ZKRC_EINVAL);
  CU_ASSERT_PTR_NULL(b);
  CU_ASSERT(!zkt_exists(zh, path));
  CU_ASSERT_EQUAL(zkrc_double_barrier_wait_entered(NULL, 0), ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_double_barrier_leave(NULL, 0), ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_double_barrier_free_async(NULL, NULL, NULL),
                  ZKRC_EINVAL);
  CU_ASSERT_STRING_EQUAL(
      zkrc_double_barrier_event_name(ZKRC_DOUBLE_BARRIER_ENTERED), "entered");
  CU_ASSERT_STRING_EQUAL(
      zkrc_double_barrier_event_name(ZKRC_DOUBLE_BARRIER_LOST), "lost");
  CU_ASSERT_STRING_EQUAL(
      zkrc_double_barrier_event_name((zkrc_double_barrier_event_type)0),
      "unknown");
  /* A bad timeout of a good object. */
  b = member(s, path, 2, ZKRC_BARRIER_CURATOR, NULL);
  CU_ASSERT_EQUAL(zkrc_double_barrier_wait_entered(b, -3), ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_double_barrier_leave(b, -3), ZKRC_EINVAL);
  /* Freed before it entered: its node goes. */
  CU_ASSERT(zkt_wait_children(zh, path, 1, 10000));
  zkrc_double_barrier_free(b);
  CU_ASSERT(zkt_wait_children_or_gone(zh, path, 0, 10000));
  g_free(path);
  zookeeper_close(zh);
  zkrc_session_close(s);
}

/* "ready" created and deleted at once (a kazoo member that entered and
 * left at once deletes it first): a member waiting for it enters on its
 * creation, as kazoo's does, though it is gone when it looks again.  The
 * control: no member entered before it was created. */
static void test_ready_gone_before_looked(void) {
  zkrc_session *s = zkt_session();
  zhandle_t *zh = zkt_raw();
  char *path = zkt_path("double-ready");
  seen w = {0};
  zkrc_double_barrier *b = member(s, path, 2, ZKRC_BARRIER_KAZOO, &w);
  CU_ASSERT(zkt_wait_children(zh, path, 1, 10000));
  CU_ASSERT_EQUAL(zkrc_double_barrier_wait_entered(b, 300), ZKRC_ETIMEDOUT);
  char *ready = g_strdup_printf("%s/ready", path);
  zoo_op_t ops[2];
  zoo_op_result_t results[2];
  zoo_create_op_init(&ops[0], ready, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL,
                     0);
  zoo_delete_op_init(&ops[1], ready, -1);
  CU_ASSERT_EQUAL(zoo_multi(zh, 2, ops, results), ZOK);
  CU_ASSERT_EQUAL(zkrc_double_barrier_wait_entered(b, 10000), ZKRC_OK);
  CU_ASSERT_EQUAL(zkrc_double_barrier_leave(b, 10000), ZKRC_OK);
  zkrc_double_barrier_free(b);
  CU_ASSERT_EQUAL(zkt_nodes_left(zh, path), 0);
  g_free(ready);
  g_free(path);
  zookeeper_close(zh);
  zkrc_session_close(s);
}

typedef struct freed {
  GMutex mu;
  GCond cond;
  gboolean done;
} freed;

static void freed_done(void *arg) {
  freed *f = arg;
  g_mutex_lock(&f->mu);
  f->done = TRUE;
  g_cond_signal(&f->cond);
  g_mutex_unlock(&f->mu);
}

/* An entered member whose session expires is told LOST (final: its waits
 * say so), and another member freed with free_async leaves nothing. */
static void test_lost_on_expiry(void) {
  zkrc_session *s = zkt_session();
  zkrc_session *other = zkt_session();
  zhandle_t *zh = zkt_raw();
  char *path = zkt_path("double-lost");
  seen w = {0}, v = {0};
  zkrc_double_barrier *b = member(s, path, 2, ZKRC_BARRIER_CURATOR, &w);
  zkrc_double_barrier *c = member(other, path, 2, ZKRC_BARRIER_CURATOR, &v);
  CU_ASSERT_EQUAL_FATAL(zkrc_double_barrier_wait_entered(b, 10000), ZKRC_OK);
  CU_ASSERT_EQUAL_FATAL(zkrc_double_barrier_wait_entered(c, 10000), ZKRC_OK);
  zkt_expire(s);
  /* LOST comes with the expiry (or the lease's end before it), or as
   * our node found gone: the harness expires a session by closing it from
   * another handle, which deletes the node at once, and leave's listing
   * may see that before the client is told of the expiry. */
  int rc = zkrc_double_barrier_leave(b, 10000);
  CU_ASSERT(rc == ZKRC_ESESSIONEXPIRED || rc == ZKRC_ESESSIONLOST ||
            rc == ZKRC_ENONODE);
  CU_ASSERT_EQUAL(seen_wait(&w, ZKRC_DOUBLE_BARRIER_LOST, 10000), 1);
  CU_ASSERT_EQUAL(seen_count(&w, ZKRC_DOUBLE_BARRIER_LEFT), 0);
  CU_ASSERT_EQUAL(zkrc_double_barrier_wait_left(b, 0), rc);
  /* The other leaves alone once the lost one's node is gone. */
  CU_ASSERT_EQUAL(zkrc_double_barrier_leave(c, 15000), ZKRC_OK);
  CU_ASSERT_EQUAL(seen_count(&v, ZKRC_DOUBLE_BARRIER_LOST), 0);
  freed f = {0};
  g_mutex_init(&f.mu);
  g_cond_init(&f.cond);
  CU_ASSERT_EQUAL(zkrc_double_barrier_free_async(b, freed_done, &f), ZKRC_OK);
  int64_t deadline = g_get_monotonic_time() + 10 * G_TIME_SPAN_SECOND;
  g_mutex_lock(&f.mu);
  while (!f.done && g_cond_wait_until(&f.cond, &f.mu, deadline))
    ;
  CU_ASSERT(f.done);
  g_mutex_unlock(&f.mu);
  zkrc_double_barrier_free(c);
  CU_ASSERT_EQUAL(zkt_nodes_left(zh, path), 0);
  g_free(path);
  zookeeper_close(zh);
  zkrc_session_close(other);
  zkrc_session_close(s);
}

/* When @p path was first seen gone by a plain handle past the proxy,
 * looking every 2 ms until @p deadline_us (0: not seen). */
static int64_t node_gone_at(zhandle_t *zh, const char *path,
                            int64_t deadline_us) {
  while (g_get_monotonic_time() < deadline_us) {
    if (zoo_exists(zh, path, 0, NULL) == ZNONODE)
      return g_get_monotonic_time();
    g_usleep(2000); /* the poll's period, not a wait for an event */
  }
  return 0;
}

/* An entered member cut off from the ensemble (its proxy black-holed
 * past the session timeout) is told LOST before its node is gone, so
 * before the others may take it for out; its waits say so. */
static void test_lost_under_partition(void) {
  zkrc_session *s = zkt_session(); /* through the proxy */
  zkrc_session *other = zkt_direct_session();
  zhandle_t *zh =
      zkt_raw_to(zkrc_ensemble_direct_connect_string(zkt_ensemble()));
  char *path = zkt_path("double-partition");
  seen w = {0}, v = {0};
  zkrc_double_barrier *b = member(s, path, 2, ZKRC_BARRIER_CURATOR, &w);
  zkrc_double_barrier *c = member(other, path, 2, ZKRC_BARRIER_CURATOR, &v);
  CU_ASSERT_EQUAL_FATAL(zkrc_double_barrier_wait_entered(b, 10000), ZKRC_OK);
  CU_ASSERT_EQUAL_FATAL(zkrc_double_barrier_wait_entered(c, 10000), ZKRC_OK);
  char *ours = g_strdup_printf("%s/%s", path, zkrc_double_barrier_node(b));
  CU_ASSERT_EQUAL_FATAL(
      zkrc_proxy_blackhole(zkt_ensemble(), 0, 4 * ZKT_SESSION_TIMEOUT_MS), 0);
  int64_t gone = node_gone_at(
      zh, ours, g_get_monotonic_time() + 8 * ZKT_SESSION_TIMEOUT_MS * 1000);
  CU_ASSERT_EQUAL(seen_wait(&w, ZKRC_DOUBLE_BARRIER_LOST, 10000), 1);
  CU_ASSERT_FATAL(gone > 0);
  g_mutex_lock(&w.mu);
  CU_ASSERT(w.lost_us > 0 && w.lost_us < gone);
  CU_ASSERT(w.lost_reason == ZKRC_ESESSIONLOST ||
            w.lost_reason == ZKRC_ESESSIONEXPIRED);
  g_mutex_unlock(&w.mu);
  int rc = zkrc_double_barrier_wait_left(b, 0);
  CU_ASSERT(rc == ZKRC_ESESSIONLOST || rc == ZKRC_ESESSIONEXPIRED);
  CU_ASSERT_EQUAL(zkrc_proxy_blackhole(zkt_ensemble(), 0, 0), 0);
  /* The other leaves alone, the cut-off one's node gone. */
  CU_ASSERT_EQUAL(zkrc_double_barrier_leave(c, 15000), ZKRC_OK);
  CU_ASSERT_EQUAL(seen_count(&w, ZKRC_DOUBLE_BARRIER_LOST), 1); /* once */
  zkrc_double_barrier_free(b);
  zkrc_double_barrier_free(c);
  CU_ASSERT_EQUAL(zkt_nodes_left(zh, path), 0);
  g_free(ours);
  g_free(path);
  zookeeper_close(zh);
  zkrc_session_close(other);
  zkrc_session_close(s);
}

/* A peer member of a double barrier: started, its "entered" awaited. */
static peer *double_peer(gboolean curator, const char *path, const char *n) {
  peer *p = barrier_peer(curator, "double", path, n);
  CU_ASSERT_FATAL(p != NULL);
  char *line = peer_expect(p, "started", START_MS);
  CU_ASSERT_PTR_NOT_NULL(line);
  g_free(line);
  return p;
}

/* Members of both kinds on one path: @p peers_c Curator peers, @p peers_k
 * kazoo peers and @p ours of ours in @p dialect, N their sum.  All enter
 * together, none before the last came, and all leave. */
static void mixed(int peers_c, int peers_k, int ours,
                  zkrc_barrier_dialect dialect) {
  zkrc_session *s = zkt_session();
  zhandle_t *zh = zkt_raw();
  char *path = zkt_path("double-mixed");
  int n = peers_c + peers_k + ours;
  char *nstr = g_strdup_printf("%d", n);
  peer *p[4];
  int np = 0;
  for (int i = 0; i < peers_c; i++)
    p[np++] = double_peer(TRUE, path, nstr);
  for (int i = 0; i < peers_k; i++)
    p[np++] = double_peer(FALSE, path, nstr);
  zkrc_double_barrier *b[2] = {NULL, NULL};
  seen w[2] = {0};
  for (int i = 0; i < ours - 1; i++)
    b[i] = member(s, path, n, dialect, &w[i]);
  /* Everyone but our last member is in: nobody entered. */
  CU_ASSERT(zkt_wait_children(zh, path, n - 1, START_MS));
  for (int i = 0; i < np; i++)
    CU_ASSERT(!peer_said(p[i], "entered"));
  if (ours > 1)
    CU_ASSERT_EQUAL(zkrc_double_barrier_wait_entered(b[0], 200),
                    ZKRC_ETIMEDOUT);
  b[ours - 1] = member(s, path, n, dialect, &w[ours - 1]);
  for (int i = 0; i < ours; i++)
    CU_ASSERT_EQUAL(zkrc_double_barrier_wait_entered(b[i], STEP_MS), ZKRC_OK);
  for (int i = 0; i < np; i++) {
    char *line = peer_expect(p[i], "entered", STEP_MS);
    CU_ASSERT_PTR_NOT_NULL(line);
    g_free(line);
  }
  /* Ours leave first: they wait for the peers. */
  for (int i = 0; i < ours; i++)
    CU_ASSERT_EQUAL(zkrc_double_barrier_leave(b[i], ZKRC_NO_WAIT),
                    ZKRC_ETIMEDOUT);
  CU_ASSERT_EQUAL(zkrc_double_barrier_wait_left(b[0], 300), ZKRC_ETIMEDOUT);
  for (int i = 0; i < np; i++)
    peer_send(p[i], "leave");
  for (int i = 0; i < ours; i++)
    CU_ASSERT_EQUAL(zkrc_double_barrier_wait_left(b[i], STEP_MS), ZKRC_OK);
  for (int i = 0; i < np; i++) {
    char *line = peer_expect(p[i], "left", STEP_MS);
    CU_ASSERT_PTR_NOT_NULL(line);
    g_free(line);
    CU_ASSERT_EQUAL(peer_finish(p[i], STEP_MS), 0);
  }
  for (int i = 0; i < ours; i++)
    zkrc_double_barrier_free(b[i]);
  CU_ASSERT_EQUAL(zkt_nodes_left(zh, path), 0);
  g_free(nstr);
  g_free(path);
  zookeeper_close(zh);
  zkrc_session_close(s);
}

static void test_double_curator(void) { mixed(1, 0, 2, ZKRC_BARRIER_CURATOR); }
static void test_double_kazoo(void) { mixed(0, 1, 2, ZKRC_BARRIER_KAZOO); }
/* Curator's and kazoo's double barriers share a path (and ours in
 * either dialect joins them). */
static void test_double_shared_path(void) {
  mixed(1, 1, 1, ZKRC_BARRIER_KAZOO);
}

/* ------------------------------------------------------ command line */

/* zkr SUBCOMMAND with the program's servers, then @p args (NULL-ended). */
static proc *zkr(const char *subcommand, const char *const *args) {
  const char *argv[24];
  int n = 0;
  argv[n++] = ZKR;
  argv[n++] = subcommand;
  argv[n++] = "--servers";
  argv[n++] = zkt_hosts();
  argv[n++] = "-t";
  argv[n++] = "2000";
  argv[n++] = "--server-tick";
  argv[n++] = G_STRINGIFY(ZKT_TICK_MS);
  for (int i = 0; args[i] && n < 23; i++)
    argv[n++] = args[i];
  argv[n] = NULL;
  return proc_start(argv);
}

/* Run zkr to its end: its exit status. */
static int zkr_status(const char *subcommand, const char *const *args) {
  proc *p = zkr(subcommand, args);
  int status = proc_wait(p, TOOL_MS);
  proc_free(p);
  return status;
}

static void test_zkr_barrier(void) {
  zhandle_t *zh = zkt_raw();
  char *path = zkt_path("zkr-barrier");
  const char *set[] = {"set", path, NULL};
  const char *remove[] = {"remove", path, NULL};
  const char *wait_short[] = {"wait", "-w", "0.3", path, NULL};
  const char *wait[] = {"wait", path, NULL};
  CU_ASSERT_EQUAL(zkr_status("barrier", set), 0);
  CU_ASSERT(zkt_exists(zh, path));
  CU_ASSERT_EQUAL(zkr_status("barrier", wait_short), 1);
  proc *w = zkr("barrier", wait);
  CU_ASSERT_EQUAL(zkr_status("barrier", remove), 0);
  CU_ASSERT_EQUAL(proc_wait(w, TOOL_MS), 0);
  proc_free(w);
  CU_ASSERT_EQUAL(zkr_status("barrier", remove), 1); /* not set */
  CU_ASSERT_EQUAL(zkr_status("barrier", wait), 0);   /* gone */
  const char *bad_verb[] = {"frob", path, NULL};
  const char *bad_path[] = {"set", "no-slash", NULL};
  const char *no_path[] = {"set", NULL};
  CU_ASSERT_EQUAL(zkr_status("barrier", bad_verb), 2);
  CU_ASSERT_EQUAL(zkr_status("barrier", no_path), 2);
  CU_ASSERT_EQUAL(zkr_status("barrier", bad_path), 65);
  CU_ASSERT(!zkt_exists(zh, path));
  const char *help[] = {"--help", NULL};
  proc *h = zkr("barrier", help);
  CU_ASSERT_EQUAL(proc_wait(h, TOOL_MS), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(h->out->str, "wait|set|remove PATH"));
  proc_free(h);
  g_free(path);
  zookeeper_close(zh);
}

/* Two members: the first waits (its COMMAND does not start) until the
 * second comes; both run COMMAND, leave and exit with its status. */
static void test_zkr_double_barrier(void) {
  zhandle_t *zh = zkt_raw();
  char *path = zkt_path("zkr-double");
  const char *script = "echo in $ZKR_MEMBERS $ZKR_PATH; exit 3";
  const char *args[] = {"-v", path, "2", "--", "sh", "-c", script, NULL};
  const char *kazoo[] = {"--format", "kazoo", "-c", script, path, "2", NULL};
  for (int round = 0; round < 2; round++) {
    proc *a = zkr("double-barrier", round ? kazoo : args);
    CU_ASSERT(zkt_wait_children(zh, path, 1, TOOL_MS));
    proc_pump(a, 300); /* alone: it waits, COMMAND not started */
    CU_ASSERT_PTR_NULL(strstr(a->out->str, "in 2"));
    proc *b = zkr("double-barrier", round ? kazoo : args);
    CU_ASSERT_EQUAL(proc_wait(a, TOOL_MS), 3);
    CU_ASSERT_EQUAL(proc_wait(b, TOOL_MS), 3);
    char *line = g_strdup_printf("in 2 %s", path);
    CU_ASSERT_PTR_NOT_NULL(strstr(a->out->str, line));
    CU_ASSERT_PTR_NOT_NULL(strstr(b->out->str, line));
    g_free(line);
    proc_free(a);
    proc_free(b);
    CU_ASSERT_EQUAL(zkt_nodes_left(zh, path), 0);
  }
  /* Not enough members within -w: 1, and no node left. */
  const char *alone[] = {"-w", "0.5", path, "2", "--", "true", NULL};
  CU_ASSERT_EQUAL(zkr_status("double-barrier", alone), 1);
  CU_ASSERT_EQUAL(zkt_nodes_left(zh, path), 0);
  const char *bad_n[] = {path, "0", "--", "true", NULL};
  const char *no_cmd[] = {path, "2", NULL};
  const char *bad_format[] = {"--format", "zk", path, "2", "--", "true", NULL};
  CU_ASSERT_EQUAL(zkr_status("double-barrier", bad_n), 2);
  CU_ASSERT_EQUAL(zkr_status("double-barrier", no_cmd), 2);
  CU_ASSERT_EQUAL(zkr_status("double-barrier", bad_format), 2);
  g_free(path);
  zookeeper_close(zh);
}

/* The member's session expires while COMMAND runs: COMMAND gets SIGTERM
 * and zkr double-barrier exits 75. */
static void test_zkr_double_barrier_lost(void) {
  zhandle_t *zh = zkt_raw();
  char *path = zkt_path("zkr-double-lost");
  const char *script = "trap 'echo got-term; exit 0' TERM; echo running; "
                       "while :; do sleep 0.1; done";
  const char *args[] = {"-v", path, "1", "--", "sh", "-c", script, NULL};
  proc *a = zkr("double-barrier", args);
  CU_ASSERT_FATAL(proc_wait_text(a, 0, "running", TOOL_MS));
  CU_ASSERT_FATAL(proc_wait_text(a, 1, " timeout ", TOOL_MS));
  const char *line = strstr(a->err->str, "session 0x");
  unsigned long long sid = 0;
  CU_ASSERT_FATAL(line && sscanf(line, "session 0x%llx", &sid) == 1);
  clientid_t id = {0};
  id.client_id = (int64_t)sid;
  zkrc_ensemble_session_password(id.client_id, id.passwd);
  CU_ASSERT_EQUAL_FATAL(
      zkrc_ensemble_expire_session(zkt_ensemble(), &id, 10000), 0);
  CU_ASSERT_EQUAL(proc_wait(a, TOOL_MS), 75);
  CU_ASSERT_PTR_NOT_NULL(strstr(a->out->str, "got-term"));
  CU_ASSERT_PTR_NOT_NULL(strstr(a->err->str, "lost"));
  proc_free(a);
  /* Its node went with its session; "ready" stays, as the peers leave it
   * when a member dies inside (nobody left to delete it). */
  CU_ASSERT(zkt_wait_children(zh, path, 1, TOOL_MS));
  char *ready = g_strdup_printf("%s/ready", path);
  CU_ASSERT(zkt_exists(zh, ready));
  g_free(ready);
  g_free(path);
  zookeeper_close(zh);
}

static void add_suites(void) {
  zkt_configure(1, 1); /* one member, a fault proxy in front of it */
  ZKT_SUITE("barrier", {"set, wait, remove", test_set_wait_remove},
            {"wait's deadline, a node with children", test_wait_deadline},
            {"bad input", test_single_bad_input},
            {"Curator's DistributedBarrier both ways", test_single_curator},
            {"kazoo's Barrier both ways", test_single_kazoo});
  ZKT_SUITE(
      "double barrier", {"three members, Curator's format", test_three_curator},
      {"three members, kazoo's format", test_three_kazoo},
      {"bad input", test_double_bad_input},
      {"LOST on expiry", test_lost_on_expiry},
      {"LOST under a partition, before its node is gone",
       test_lost_under_partition},
      {"\"ready\" gone before it was looked at", test_ready_gone_before_looked},
      {"with Curator's DistributedDoubleBarrier", test_double_curator},
      {"with kazoo's DoubleBarrier", test_double_kazoo},
      {"Curator's and kazoo's on one path", test_double_shared_path});
  ZKT_SUITE(
      "zkr", {"zkr barrier", test_zkr_barrier},
      {"zkr double-barrier", test_zkr_double_barrier},
      {"zkr double-barrier: LOST stops COMMAND", test_zkr_double_barrier_lost});
}

int main(void) { return zkt_run("test_barrier", add_suites); }
