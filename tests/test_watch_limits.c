/*
 * One session's watches at ZooKeeper's limits (issue 30, item 1), through
 * a fault proxy:
 *
 *  - a cache, and lock waiters, that watch more than one SetWatches
 *    request can carry (jute.maxbuffer, 1 MB) come back after their
 *    connection is dropped, with their session, instead of being reset on
 *    every reconnection until the lease runs out;
 *  - a cache whose session goes with thousands of reads queued fails them
 *    one after the other, not in a recursion as deep as the queue (which
 *    overflowed the stack at 40,000 children).
 */
#include "config.h"

#include <pthread.h>
#include <inttypes.h>
#include <string.h>

#include <glib.h>

#include "testutil.h"
#include "zkrecipes/cache.h"
#include "zkrecipes/lock.h"
#include "zkrecipes/stats.h"

/* The servers' limit on one request (jute.maxbuffer's default). */
#define JUTE_MAXBUFFER 0xfffff

/* ------------------------------------------------------------ the events */

typedef struct counts {
  GMutex mu;
  GCond cond;
  int by_type[ZKRC_CACHE_LOST + 1];
} counts;

static void count_event(zkrc_cache *c, const zkrc_cache_event *ev, void *arg) {
  (void)c;
  counts *k = arg;
  g_mutex_lock(&k->mu);
  if (ev->type >= 0 && ev->type <= ZKRC_CACHE_LOST)
    k->by_type[ev->type]++;
  g_cond_broadcast(&k->cond);
  g_mutex_unlock(&k->mu);
}

static int count_of(counts *k, zkrc_cache_event_type type) {
  g_mutex_lock(&k->mu);
  int n = k->by_type[type];
  g_mutex_unlock(&k->mu);
  return n;
}

/* Wait until @p type was told at least @p n times, at most @p timeout_ms;
 * non-zero when it was. */
static int wait_count(counts *k, zkrc_cache_event_type type, int n,
                      int timeout_ms) {
  int64_t end = g_get_monotonic_time() + (int64_t)timeout_ms * 1000;
  g_mutex_lock(&k->mu);
  while (k->by_type[type] < n && g_cond_wait_until(&k->cond, &k->mu, end))
    ;
  int met = k->by_type[type] >= n;
  g_mutex_unlock(&k->mu);
  return met;
}

static zkrc_cache *children_cache(zkrc_session *s, const char *path,
                                  counts *k) {
  zkrc_cache_options o;
  zkrc_cache_options_init(&o);
  o.on_event = count_event;
  o.event_arg = k;
  zkrc_cache *c = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_children_cache_new(&c, s, path, &o));
  return c;
}

/* ------------------------------------------------------------- the tree */

/* @p n children "n00000".. of @p root, created 500 to a multi. */
static void make_children(zhandle_t *zh, const char *root, int n) {
  enum { BATCH = 500 };
  zoo_op_t ops[BATCH];
  zoo_op_result_t results[BATCH];
  char *paths[BATCH];
  for (int first = 0; first < n; first += BATCH) {
    int count = MIN(BATCH, n - first);
    for (int i = 0; i < count; i++) {
      paths[i] = g_strdup_printf("%s/n%05d", root, first + i);
      zoo_create_op_init(&ops[i], paths[i], "v", 1, &ZOO_OPEN_ACL_UNSAFE, 0,
                         NULL, 0);
    }
    CU_ASSERT_EQUAL_FATAL(zoo_multi(zh, count, ops, results), ZOK);
    for (int i = 0; i < count; i++)
      g_free(paths[i]);
  }
}

/* What a SetWatches request re-sending a children cache's watches on
 * @p n children of @p root weighs: 4 bytes and the path of each child's
 * data watch, and the root's children watch. */
static size_t set_watches_bytes(const char *root, int n) {
  char *one = g_strdup_printf("%s/n%05d", root, 0);
  size_t bytes = (size_t)n * (4 + strlen(one)) + 4 + strlen(root);
  g_free(one);
  return bytes;
}

/* A root whose children's paths are long (some 740 bytes): a SetWatches
 * past the limit with 1,500 nodes, whose listing stays small, and whose
 * reads after a reconnection are few. */
static char *long_root(zhandle_t *zh, const char *tag) {
  char *base = zkt_path(tag);
  char *pad = g_strnfill(700, 'd');
  char *root = g_strdup_printf("%s/%s", base, pad);
  zkt_make_path(zh, root);
  g_free(pad);
  g_free(base);
  return root;
}

/* ------------------------------------------------------------- the tests */

static zkrc_session_stats stats_of(zkrc_session *s) {
  zkrc_session_stats st;
  memset(&st, 0, sizeof st);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_get_stats(s, &st, sizeof st));
  return st;
}

static int exists_now(zhandle_t *zh, void *path) {
  struct Stat st;
  return zoo_exists(zh, path, 0, &st);
}

/* A request of the session's own handle answered, within 15 s: the
 * connection it went on carried the SetWatches request first (the client
 * sends it before anything else), so the servers took that one too.  A
 * connection reset for its SetWatches fails the request; the next
 * connection gets the next try. */
static int answered_on(zkrc_session *s, const char *path) {
  int64_t end = zkt_now_ms() + 15000;
  int rc = ZCONNECTIONLOSS;
  for (int64_t left; rc != ZOK && (left = end - zkt_now_ms()) > 0;) {
    /* Between handles there is none to ask: wait for the next one. */
    if (zkrc_session_wait_connected(s, (int)left) != ZKRC_OK)
      break;
    rc = zkrc_session_with_handle(s, exists_now, (void *)path);
  }
  return rc == ZOK;
}

/* The proxy drops @p s's connection; it comes back with its session: a
 * request on it answered, no new session, no expiry, and one suspension
 * (two when the client's first reconnection raced the removal of the
 * watches and was reset for its SetWatches; without the removal, hundreds
 * in a row). */
static void drop_and_come_back(zkrc_session *s, const char *path) {
  zkrc_session_stats before = stats_of(s);
  CU_ASSERT_EQUAL(zkrc_proxy_drop_all(zkt_ensemble(), 0), 0);
  CU_ASSERT_TRUE(answered_on(s, path));
  zkrc_session_stats after = stats_of(s);
  CU_ASSERT_EQUAL(after.sessions, before.sessions);
  CU_ASSERT_EQUAL(after.expiries, before.expiries);
  CU_ASSERT_TRUE(after.suspensions - before.suspensions <= 10);
  fprintf(stderr, "  suspensions: %" PRIu64 ", reconnections: %" PRIu64 "\n",
          after.suspensions - before.suspensions,
          after.reconnects - before.reconnects);
}

/* 1,500 children under a 730-byte path: their watches would re-send as a
 * 1.1 MB SetWatches.  The proxy drops the connection; the session comes
 * back intact (a request on it answered, no LOST, no expiry, no new
 * session), after one suspension (two when the client's first reconnection
 * raced the cache's removal of its watches), and the cache then reports a
 * change of one child. */
static void test_more_watches_than_one_request(void) {
  enum { N = 1500 };
  zhandle_t *zh = zkt_raw();
  char *root = long_root(zh, "setwatches");
  make_children(zh, root, N);
  CU_ASSERT_TRUE_FATAL(set_watches_bytes(root, N) > JUTE_MAXBUFFER);

  zkrc_session *s = zkt_session_knowing_tick(4000, 0, NULL);
  counts k = {0};
  zkrc_cache *c = children_cache(s, root, &k);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_cache_wait_initialized(c, 60000));
  CU_ASSERT_EQUAL(zkrc_cache_size(c), (size_t)N);
  drop_and_come_back(s, root);
  CU_ASSERT_TRUE(wait_count(&k, ZKRC_CACHE_RECONNECTED, 1, 20000));
  CU_ASSERT_EQUAL(count_of(&k, ZKRC_CACHE_LOST), 0);

  /* Still watching: a child's change is reported. */
  int updated = count_of(&k, ZKRC_CACHE_NODE_UPDATED);
  char *child = g_strdup_printf("%s/n%05d", root, N / 2);
  CU_ASSERT_EQUAL(zoo_set(zh, child, "changed", 7, -1), ZOK);
  CU_ASSERT_TRUE(wait_count(&k, ZKRC_CACHE_NODE_UPDATED, updated + 1, 20000));
  const zkrc_cache_node *n = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_cache_get(c, child, &n));
  CU_ASSERT_TRUE(n && n->len == 7 && memcmp(n->data, "changed", 7) == 0);
  zkrc_cache_node_unref(n);

  zkrc_cache_free(c);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(child);
  g_free(root);
}

/* Non-blocking acquisitions' outcomes. */
typedef struct outcomes {
  GMutex mu;
  GCond cond;
  int ok, failed;
} outcomes;

static void on_acquired(zkrc_lock *lk, zkrc_lock_hold *hold,
                        const zkrc_lock_acquired_info *info, void *arg) {
  (void)lk;
  (void)hold;
  outcomes *o = arg;
  g_mutex_lock(&o->mu);
  if (info->status == ZKRC_OK)
    o->ok++;
  else
    o->failed++;
  g_cond_broadcast(&o->cond);
  g_mutex_unlock(&o->mu);
}

/* Wait until @p n outcomes came, at most @p timeout_ms; returns how many
 * succeeded. */
static int outcomes_wait(outcomes *o, int n, int timeout_ms) {
  int64_t end = g_get_monotonic_time() + (int64_t)timeout_ms * 1000;
  g_mutex_lock(&o->mu);
  while (o->ok + o->failed < n && g_cond_wait_until(&o->cond, &o->mu, end))
    ;
  int ok = o->ok;
  g_mutex_unlock(&o->mu);
  return ok;
}

/* Lock directories "l0000".. under @p base, each held by @p zh's kazoo-style
 * ephemeral node ("<hex>__lock__<seq>"), 250 to a multi. */
static void hold_with_raw_nodes(zhandle_t *zh, const char *base, int n) {
  enum { BATCH = 250 };
  zoo_op_t ops[2 * BATCH];
  zoo_op_result_t results[2 * BATCH];
  char *paths[2 * BATCH];
  for (int first = 0; first < n; first += BATCH) {
    int count = MIN(BATCH, n - first);
    for (int i = 0; i < count; i++) {
      paths[2 * i] = g_strdup_printf("%s/l%04d", base, first + i);
      paths[2 * i + 1] = g_strdup_printf("%s/%032x__lock__", paths[2 * i],
                                         (unsigned)(first + i));
      zoo_create_op_init(&ops[2 * i], paths[2 * i], NULL, -1,
                         &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
      zoo_create_op_init(&ops[2 * i + 1], paths[2 * i + 1], NULL, -1,
                         &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL | ZOO_SEQUENCE,
                         NULL, 0);
    }
    CU_ASSERT_EQUAL_FATAL(zoo_multi(zh, 2 * count, ops, results), ZOK);
    for (int i = 0; i < 2 * count; i++)
      g_free(paths[i]);
  }
}

static int64_t watches_on_servers(void) {
  return zkrc_ensemble_mntr_sum(zkt_ensemble(), "zk_watch_count");
}

static int at_least_watches(void *n) {
  return watches_on_servers() >= *(int64_t *)n;
}

/* 1,500 locks under a 730-byte path, each held by another client's node:
 * 1,500 waiters of one session each watch a holder's node, and those
 * watches would re-send as a 1.2 MB SetWatches.  The proxy drops the
 * connection; the session comes back intact, and when the holders go,
 * every waiter gets its lock: their watches were set again. */
static void test_lock_waiters_beyond_one_request(void) {
  enum { N = 1500 };
  zhandle_t *holder = zkt_raw();
  char *base = long_root(holder, "waiters");
  hold_with_raw_nodes(holder, base, N);
  char *one = g_strdup_printf("%s/l0000/%032x__lock__0000000000", base, 0u);
  CU_ASSERT_TRUE_FATAL((size_t)N * (4 + strlen(one)) > JUTE_MAXBUFFER);
  g_free(one);

  zkrc_session *s = zkt_session_knowing_tick(4000, 0, NULL);
  zkrc_lock **locks = g_new0(zkrc_lock *, N);
  outcomes o = {0};
  int64_t watching = watches_on_servers() + N;
  for (int i = 0; i < N; i++) {
    char *path = g_strdup_printf("%s/l%04d", base, i);
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_new(&locks[i], s, path, NULL));
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire_async(locks[i], 120000,
                                                   on_acquired, &o, NULL));
    g_free(path);
  }
  /* Every waiter watches its holder's node (server-side state: no event
   * says so). */
  CU_ASSERT_TRUE_FATAL(zkt_wait_for(at_least_watches, &watching, 60000));
  drop_and_come_back(s, base);

  /* The holders go (their session closes): each waiter is told by its
   * watch, set again after the reconnection. */
  zookeeper_close(holder);
  CU_ASSERT_EQUAL(outcomes_wait(&o, N, 30000), N);
  CU_ASSERT_EQUAL(o.failed, 0);

  for (int i = 0; i < N; i++)
    zkrc_lock_free(locks[i]); /* releases the holds */
  g_free(locks);
  zkrc_session_close(s);
  g_free(base);
}

/* Threads made from here on get @p bytes of stack (0: the default again).
 * The recursion this guards against grew with the queue, so a small stack
 * makes a queue of 12,000 reads as deadly as one of 40,000 was with 8 MB. */
static void default_stack(size_t bytes) {
  static pthread_attr_t saved;
  static int have_saved;
  if (bytes == 0) {
    if (have_saved)
      CU_ASSERT_EQUAL(pthread_setattr_default_np(&saved), 0);
    return;
  }
  if (!have_saved && pthread_getattr_default_np(&saved) == 0)
    have_saved = 1;
  pthread_attr_t small;
  pthread_attr_init(&small);
  pthread_attr_setstacksize(&small, bytes);
  CU_ASSERT_EQUAL(pthread_setattr_default_np(&small), 0);
  pthread_attr_destroy(&small);
}

/* 12,000 children, read through a proxy that holds every packet 300 ms
 * each way, so that the cache's reads go out 256 at a time and thousands
 * wait in its queue; its session is expired with the queue that long.
 * Every queued read then fails at once, one after the other; the cache
 * reports LOST, reads the tree again on its new session and holds every
 * child.  All of the session's threads have 256 KiB of stack. */
static void test_session_gone_with_reads_queued(void) {
  enum { N = 12000 };
  zhandle_t *zh = zkt_raw();
  char *root = zkt_path("queued-reads");
  zkt_make_path(zh, root);
  make_children(zh, root, N);

  CU_ASSERT_EQUAL(zkrc_proxy_delay(zkt_ensemble(), 0, 300), 0);
  default_stack(256 * 1024);
  zkrc_session *s = zkt_session_knowing_tick(4000, 0, NULL);
  counts k = {0};
  zkrc_cache *c = children_cache(s, root, &k);
  default_stack(0);
  /* The first replies of the children's reads: the rest wait in line. */
  CU_ASSERT_TRUE(wait_count(&k, ZKRC_CACHE_NODE_ADDED, 1, 20000));
  CU_ASSERT_TRUE(count_of(&k, ZKRC_CACHE_NODE_ADDED) < N / 2);
  zkt_expire(s);
  CU_ASSERT_TRUE(wait_count(&k, ZKRC_CACHE_LOST, 1, 20000));
  CU_ASSERT_EQUAL(zkrc_proxy_delay(zkt_ensemble(), 0, 0), 0);
  CU_ASSERT_TRUE(wait_count(&k, ZKRC_CACHE_RECONNECTED, 1, 20000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_cache_wait_initialized(c, 60000));
  CU_ASSERT_EQUAL(zkrc_cache_size(c), (size_t)N);

  zkrc_cache_free(c);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(root);
}

static void add_suites(void) {
  zkt_configure(1, 1);
  ZKT_SUITE("cache limits",
            {"more watches than one SetWatches request carries",
             test_more_watches_than_one_request},
            {"a session gone with thousands of reads queued",
             test_session_gone_with_reads_queued},
            {"lock waiters beyond one SetWatches request",
             test_lock_waiters_beyond_one_request});
}

int main(void) { return zkt_run("test_watch_limits", add_suites); }
