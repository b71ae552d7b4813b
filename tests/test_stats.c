/*
 * Statistics (zkrecipes/stats.h): histograms and their quantiles on
 * in-memory input; a lock's (a semaphore's, an election's) counters,
 * gauges and durations and a session's
 * counters against a real single-member ensemble; and the Prometheus text
 * they are formatted as, parsed back line by line.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <inttypes.h>
#include <string.h>

#include <glib.h>

#include "testutil.h"
#include "zkrecipes/stats.h"

#define HOLD_MS 30

/* -------------------------------------------------- histograms (pure) */

static void test_histogram_bounds_double(void) {
  CU_ASSERT_DOUBLE_EQUAL(zkrc_histogram_bound(0), 0.0001, 1e-12);
  for (int i = 1; i < ZKRC_HISTOGRAM_BUCKETS - 1; i++)
    CU_ASSERT_DOUBLE_EQUAL(zkrc_histogram_bound(i),
                           2 * zkrc_histogram_bound(i - 1), 1e-12);
  CU_ASSERT(isinf(zkrc_histogram_bound(ZKRC_HISTOGRAM_BUCKETS - 1)));
  CU_ASSERT(isnan(zkrc_histogram_bound(-1)));
  CU_ASSERT(isnan(zkrc_histogram_bound(ZKRC_HISTOGRAM_BUCKETS)));
}

/* Linear within the bucket that holds the rank, as Prometheus'
 * histogram_quantile(); NAN for what has no answer. */
static void test_histogram_quantiles(void) {
  zkrc_histogram h;
  memset(&h, 0, sizeof h);
  CU_ASSERT(isnan(zkrc_histogram_quantile(&h, 0.5))); /* empty */
  CU_ASSERT(isnan(zkrc_histogram_quantile(NULL, 0.5)));
  h.buckets[3] = 10; /* (0.4 ms, 0.8 ms] */
  h.buckets[5] = 10; /* (1.6 ms, 3.2 ms] */
  h.count = 20;
  CU_ASSERT_DOUBLE_EQUAL(zkrc_histogram_quantile(&h, 0.25), 0.0006, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL(zkrc_histogram_quantile(&h, 0.5), 0.0008, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL(zkrc_histogram_quantile(&h, 0.75), 0.0024, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL(zkrc_histogram_quantile(&h, 1.0), 0.0032, 1e-12);
  CU_ASSERT(isnan(zkrc_histogram_quantile(&h, 1.5)));
  CU_ASSERT(isnan(zkrc_histogram_quantile(&h, -0.1)));
  h.buckets[ZKRC_HISTOGRAM_BUCKETS - 1] = 80; /* beyond the last bound */
  h.count = 100;
  CU_ASSERT_DOUBLE_EQUAL(zkrc_histogram_quantile(&h, 0.99),
                         zkrc_histogram_bound(ZKRC_HISTOGRAM_BUCKETS - 2),
                         1e-12);
}

/* ------------------------------------------------------- lock (server) */

static zkrc_lock_stats lock_stats(zkrc_lock *lk) {
  zkrc_lock_stats st;
  memset(&st, 0xff, sizeof st);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_get_stats(lk, &st, sizeof st));
  return st;
}

/* Three held, timed holds: 3 acquisitions and releases, 3 waits and 3
 * holds recorded, the holds' sum at least 3 x HOLD_MS and at most the
 * time the loop took; nothing counted as a failure. */
static void test_lock_counts_acquisitions_and_durations(void) {
  char *path = zkt_path("stats-count");
  zkrc_session *s = zkt_session();
  zkrc_lock *lk = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_new(&lk, s, path, NULL));
  zkrc_lock_stats st = lock_stats(lk);
  CU_ASSERT_EQUAL(st.acquisitions, 0);
  CU_ASSERT_EQUAL(st.wait.count, 0);
  int64_t start = zkt_now_ms();
  for (int i = 0; i < 3; i++) {
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lk, 5000));
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lk, 5000)); /* reentrant */
    st = lock_stats(lk);
    CU_ASSERT_EQUAL(st.holding, 1);
    CU_ASSERT_EQUAL(st.waiting, 0);
    g_usleep(HOLD_MS * 1000);
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(lk));
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(lk));
  }
  double took_s = (double)(zkt_now_ms() - start) / 1000.0;
  st = lock_stats(lk);
  CU_ASSERT_EQUAL(st.acquisitions, 3);
  CU_ASSERT_EQUAL(st.releases, 3);
  CU_ASSERT_EQUAL(st.timeouts + st.refusals + st.failures + st.lost, 0);
  CU_ASSERT_EQUAL(st.holding, 0);
  CU_ASSERT_EQUAL(st.wait.count, 3);
  CU_ASSERT_EQUAL(st.hold.count, 3);
  CU_ASSERT(st.hold.sum_seconds >= 3 * HOLD_MS / 1000.0);
  CU_ASSERT(st.hold.sum_seconds + st.wait.sum_seconds <= took_s);
  uint64_t in_buckets = 0;
  for (int i = 0; i < ZKRC_HISTOGRAM_BUCKETS; i++)
    in_buckets += st.hold.buckets[i];
  CU_ASSERT_EQUAL(in_buckets, 3);
  /* HOLD_MS lies in (25.6 ms, 51.2 ms]: the median hold is in that bucket
   * (or above it, on a loaded machine). */
  CU_ASSERT(zkrc_histogram_quantile(&st.hold, 0.5) > 0.0256);
  zkrc_lock_free(lk);
  zkrc_session_close(s);
  g_free(path);
}

typedef struct waiter {
  zkrc_lock *lk;
  int rc;
} waiter;

static gpointer acquire_and_release(gpointer data) {
  waiter *w = data;
  w->rc = zkrc_lock_acquire(w->lk, 10000);
  if (w->rc == ZKRC_OK)
    w->rc = zkrc_lock_release(w->lk);
  return NULL;
}

static int has_lost_one(void *arg) {
  zkrc_lock_stats st;
  return zkrc_lock_get_stats(arg, &st, sizeof st) == ZKRC_OK && st.lost == 1;
}

static int has_listed_two(void *arg) {
  zkrc_lock_stats st;
  return zkrc_lock_get_stats(arg, &st, sizeof st) == ZKRC_OK &&
         st.queue_length == 2;
}

/* Held elsewhere: a try is a refusal, a timed acquisition a timeout; a
 * waiting thread shows as waiting; the holder's loss is counted. */
static void test_lock_counts_refusals_timeouts_waiters_and_losses(void) {
  char *path = zkt_path("stats-busy");
  zkrc_session *mine = zkt_session(), *theirs = zkt_session();
  zkrc_lock *lk = NULL, *their_lk = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_new(&lk, mine, path, NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_new(&their_lk, theirs, path, NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(their_lk, 5000));
  ZKT_ASSERT_RC(ZKRC_ELOCKED, zkrc_lock_acquire(lk, ZKRC_NO_WAIT));
  ZKT_ASSERT_RC(ZKRC_ETIMEDOUT, zkrc_lock_acquire(lk, 300));
  zkrc_lock_stats st = lock_stats(lk);
  CU_ASSERT_EQUAL(st.refusals, 1);
  CU_ASSERT_EQUAL(st.timeouts, 1);
  CU_ASSERT_EQUAL(st.acquisitions, 0);

  waiter w = {.lk = lk};
  GThread *t = g_thread_new("waiter", acquire_and_release, &w);
  zhandle_t *zh = zkt_raw();
  CU_ASSERT_FATAL(zkt_wait_children(zh, path, 2, 5000)); /* it queued */
  CU_ASSERT(zkt_wait_for(has_listed_two, lk, 5000));     /* its listing came */
  st = lock_stats(lk);
  CU_ASSERT_EQUAL(st.waiting, 1);
  CU_ASSERT_EQUAL(st.holding, 0);
  CU_ASSERT_EQUAL(st.queue_length, 2); /* theirs and ours */

  /* Their session expires: their hold is lost, ours gets the lock. */
  clientid_t id;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_client_id(theirs, &id));
  CU_ASSERT_EQUAL(zkrc_ensemble_expire_session(zkt_ensemble(), &id, 10000), 0);
  g_thread_join(t);
  ZKT_ASSERT_RC(ZKRC_OK, w.rc);
  /* Their client learns of the expiry when it next talks to a server. */
  CU_ASSERT(zkt_wait_for(has_lost_one, their_lk, 10000));
  st = lock_stats(their_lk);
  CU_ASSERT_EQUAL(st.lost, 1);
  CU_ASSERT_EQUAL(st.acquisitions, 1);
  st = lock_stats(lk);
  CU_ASSERT_EQUAL(st.acquisitions, 1);
  CU_ASSERT_EQUAL(st.releases, 1);
  CU_ASSERT_EQUAL(st.waiting, 0);
  CU_ASSERT_EQUAL(st.queue_length, 0); /* none of its holds is queued */
  CU_ASSERT(st.wait.sum_seconds > 0);

  zkrc_session_stats ss;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_get_stats(theirs, &ss, sizeof ss));
  CU_ASSERT_EQUAL(ss.expiries, 1);
  zookeeper_close(zh);
  zkrc_lock_free(lk);
  zkrc_lock_free(their_lk);
  zkrc_session_close(mine);
  zkrc_session_close(theirs);
  g_free(path);
}

/* A struct from an older header (only its first fields) is filled that
 * far and no further; NULL and too small are refused. */
static void test_stats_fill_only_what_the_caller_has(void) {
  char *path = zkt_path("stats-size");
  zkrc_session *s = zkt_session();
  zkrc_lock *lk = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_new(&lk, s, path, NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lk, 5000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(lk));
  struct {
    uint64_t acquisitions;
    uint64_t guard;
  } old;
  old.guard = 0x5a5a5a5a5a5a5a5aULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_get_stats(lk, (zkrc_lock_stats *)&old,
                                             sizeof old.acquisitions));
  CU_ASSERT_EQUAL(old.acquisitions, 1);
  CU_ASSERT_EQUAL(old.guard, 0x5a5a5a5a5a5a5a5aULL);
  zkrc_lock_stats st;
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_lock_get_stats(lk, &st, 4));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_lock_get_stats(NULL, &st, sizeof st));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_lock_get_stats(lk, NULL, sizeof st));
  zkrc_session_stats ss;
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_session_get_stats(NULL, &ss, sizeof ss));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_session_get_stats(s, &ss, 2));
  zkrc_lock_free(lk);
  zkrc_session_close(s);
  g_free(path);
}

/* A semaphore's leases and an election's leaderships are counted as a
 * lock's holds are. */
static void test_semaphore_and_election_stats(void) {
  char *path = zkt_path("stats-sem");
  zkrc_session *s = zkt_session(), *other = zkt_session();
  zkrc_semaphore *sem = NULL, *theirs = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_new(&sem, s, path, 1, NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_new(&theirs, other, path, 1, NULL));
  zkrc_semaphore_lease *lease = NULL, *none = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_acquire(sem, 5000, &lease));
  ZKT_ASSERT_RC(ZKRC_ELOCKED,
                zkrc_semaphore_acquire(theirs, ZKRC_NO_WAIT, &none));
  ZKT_ASSERT_RC(ZKRC_ETIMEDOUT, zkrc_semaphore_acquire(theirs, 300, &none));
  zkrc_lock_stats st;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_get_stats(sem, &st, sizeof st));
  CU_ASSERT_EQUAL(st.acquisitions, 1);
  CU_ASSERT_EQUAL(st.holding, 1);
  CU_ASSERT_EQUAL(st.wait.count, 1);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_get_stats(theirs, &st, sizeof st));
  CU_ASSERT_EQUAL(st.refusals, 1);
  CU_ASSERT_EQUAL(st.timeouts, 1);
  CU_ASSERT_EQUAL(st.acquisitions, 0);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_lease_release(lease));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_get_stats(sem, &st, sizeof st));
  CU_ASSERT_EQUAL(st.releases, 1);
  CU_ASSERT_EQUAL(st.hold.count, 1);
  CU_ASSERT_EQUAL(st.holding, 0);
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_semaphore_get_stats(NULL, &st, sizeof st));

  char *el_path = zkt_path("stats-election");
  zkrc_election *e = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_new(&e, s, el_path, NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_join(e));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_wait_leader(e, 5000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_get_stats(e, &st, sizeof st));
  CU_ASSERT_EQUAL(st.acquisitions, 1);
  CU_ASSERT_EQUAL(st.holding, 1);
  CU_ASSERT_EQUAL(st.waiting, 0);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_leave(e));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_get_stats(e, &st, sizeof st));
  CU_ASSERT_EQUAL(st.releases, 1);
  CU_ASSERT_EQUAL(st.lost, 0);
  CU_ASSERT_EQUAL(st.holding, 0);
  CU_ASSERT_EQUAL(st.hold.count, 1);
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_election_get_stats(NULL, &st, sizeof st));
  zkrc_election_free(e);
  zkrc_semaphore_free(sem);
  zkrc_semaphore_free(theirs);
  zkrc_session_close(s);
  zkrc_session_close(other);
  g_free(path);
  g_free(el_path);
}

/* ----------------------------------------------------------- session */

static int has_second_session(void *arg) {
  zkrc_session_stats st;
  return zkrc_session_get_stats(arg, &st, sizeof st) == ZKRC_OK &&
         st.sessions >= 2;
}

/* One ZooKeeper session, connected, with a lease; an acquisition and its
 * release send at least the create, the listing and the delete; after an
 * expiry the object counts a second session. */
static void test_session_counts_sessions_requests_expiries(void) {
  char *path = zkt_path("stats-session");
  zkrc_session *s = zkt_session();
  zkrc_session_stats before, after;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_get_stats(s, &before, sizeof before));
  CU_ASSERT_EQUAL(before.sessions, 1);
  CU_ASSERT_EQUAL(before.expiries, 0);
  CU_ASSERT_EQUAL(before.state, ZKRC_SESSION_CONNECTED);
  zkrc_lock *lk = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_new(&lk, s, path, NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lk, 5000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_get_stats(s, &after, sizeof after));
  CU_ASSERT(after.lease_remaining_ms > 0);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(lk));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_get_stats(s, &after, sizeof after));
  CU_ASSERT(after.requests >= before.requests + 3);
  clientid_t id;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_client_id(s, &id));
  CU_ASSERT_EQUAL(zkrc_ensemble_expire_session(zkt_ensemble(), &id, 10000), 0);
  CU_ASSERT(zkt_wait_for(has_second_session, s, 10000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_get_stats(s, &after, sizeof after));
  CU_ASSERT_EQUAL(after.expiries, 1);
  CU_ASSERT_EQUAL(after.sessions, 2);
  zkrc_lock_free(lk);
  zkrc_session_close(s);
  g_free(path);
}

/* Is the lock waiting in the queue (its first listing answered)? */
static int is_waiting(void *arg) {
  zkrc_lock_stats st;
  /* (A thread's hold counts as waiting from the call on, before its create
   * is even sent: its listing, which saw the holder's node and its own,
   * is what shows it queued.) */
  return zkrc_lock_get_stats(arg, &st, sizeof st) == ZKRC_OK &&
         st.waiting == 1 && st.queue_length == 2;
}

/* The two-party hand-over, counted: the successor's acquisition and
 * release, from its session's requests, while the holder lets go. */
static uint64_t handover_requests(const char *name) {
  char *path = zkt_path(name);
  zkrc_session *a = zkt_session(), *b = zkt_session();
  zkrc_lock *la = NULL, *lb = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_new(&la, a, path, NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_new(&lb, b, path, NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(la, 5000));
  uint64_t before = zkt_requests_but_renewals(b);
  waiter w = {.lk = lb};
  GThread *t = g_thread_new("successor", acquire_and_release, &w);
  CU_ASSERT(zkt_wait_for(is_waiting, lb, 5000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(la));
  g_thread_join(t);
  ZKT_ASSERT_RC(ZKRC_OK, w.rc);
  uint64_t used = zkt_requests_but_renewals(b) - before;
  CU_ASSERT_EQUAL(lock_stats(lb).acquisitions, 1);
  zkrc_lock_free(la);
  zkrc_lock_free(lb);
  zkrc_session_close(a);
  zkrc_session_close(b);
  g_free(path);
  return used;
}

/* The direct successor of the holder takes the lock on the holder's
 * deletion without listing the directory again: it reads only its own
 * node's stat (what the listing also proved: that its node is still
 * there).  Its acquisition and release cost 5 requests: its create (its
 * session has not seen the directory yet and guesses it exists,
 * dirtable.h), the listing pipelined behind it, the watch on the holder,
 * the stat, the delete. */
static void test_direct_successor_requests(void) {
  uint64_t n = handover_requests("stats-handover");
  printf(" [%" PRIu64 " requests] ", n);
  CU_ASSERT_EQUAL(n, 5);
}

/* Shown by the servers: once the successor waits, nobody may list the
 * directory any more (its ACL loses READ); the successor still gets the
 * lock when the holder lets go.  A successor that listed again would be
 * refused (ZKRC_ENOAUTH). */
static void test_direct_successor_holds_without_listing(void) {
  char *path = zkt_path("stats-handover-unlisted");
  zkrc_session *a = zkt_session(), *b = zkt_session();
  zkrc_lock *la = NULL, *lb = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_new(&la, a, path, NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_new(&lb, b, path, NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(la, 5000));
  waiter w = {.lk = lb};
  GThread *t = g_thread_new("successor", acquire_and_release, &w);
  CU_ASSERT(zkt_wait_for(is_waiting, lb, 5000));
  zhandle_t *zh = zkt_raw();
  zkt_forbid_listing(zh, path);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(la));
  g_thread_join(t);
  ZKT_ASSERT_RC(ZKRC_OK, w.rc);
  CU_ASSERT_EQUAL(lock_stats(lb).acquisitions, 1);
  zoo_set_acl(zh, path, -1, &ZOO_OPEN_ACL_UNSAFE);
  zookeeper_close(zh);
  zkrc_lock_free(la);
  zkrc_lock_free(lb);
  zkrc_session_close(a);
  zkrc_session_close(b);
  g_free(path);
}

/* -------------------------------------------------------- Prometheus */

/* Check the text exposition format line by line: each family's HELP and
 * TYPE once, before its samples; every sample "name{labels} value" of a
 * declared family; histogram buckets cumulative up to +Inf == _count. */
static void check_exposition(const char *text) {
  char **lines = g_strsplit(text, "\n", -1);
  GHashTable *types =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  double last_bucket = -1, inf_bucket = -1;
  GHashTable *seen =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (int i = 0; lines[i] && lines[i][0]; i++) {
    const char *l = lines[i];
    if (g_str_has_prefix(l, "# HELP "))
      continue;
    if (g_str_has_prefix(l, "# TYPE ")) {
      char **w = g_strsplit(l + 7, " ", 2);
      CU_ASSERT_FALSE(g_hash_table_contains(types, w[0])); /* once */
      g_hash_table_insert(types, g_strdup(w[0]), g_strdup(w[1]));
      g_strfreev(w);
      continue;
    }
    /* "name{labels} value", or "name value" without labels */
    const char *space = strchr(l, ' ');
    const char *brace = strchr(l, '{');
    const char *close = strstr(l, "} ");
    CU_ASSERT_FATAL(space != NULL);
    if (brace == NULL || brace > space) {
      brace = close = space;
    } else {
      CU_ASSERT_FATAL(close && close > brace);
      close++;
    }
    char *series = g_strndup(l, (gsize)(close - l));
    CU_ASSERT_FALSE(g_hash_table_contains(seen, series)); /* one sample */
    g_hash_table_add(seen, series);
    char *name = g_strndup(l, (gsize)(brace - l));
    char *family = g_strdup(name);
    const char *suffixes[] = {"_bucket", "_sum", "_count"};
    for (int k = 0; k < 3; k++)
      if (g_str_has_suffix(family, suffixes[k]) &&
          !g_hash_table_contains(types, family))
        family[strlen(family) - strlen(suffixes[k])] = '\0';
    CU_ASSERT(g_hash_table_contains(types, family));
    char *end;
    double v = g_ascii_strtod(close + 1, &end);
    CU_ASSERT(*end == '\0');
    if (g_str_has_suffix(name, "_bucket")) {
      CU_ASSERT(v >= last_bucket);
      gboolean inf = strstr(l, "le=\"+Inf\"") != NULL;
      last_bucket = inf ? -1 : v;
      if (inf)
        inf_bucket = v;
    }
    if (g_str_has_suffix(name, "_count") &&
        g_strcmp0(g_hash_table_lookup(types, family), "histogram") == 0)
      CU_ASSERT_EQUAL(v, inf_bucket);
    g_free(name);
    g_free(family);
  }
  g_hash_table_destroy(types);
  g_hash_table_destroy(seen);
  g_strfreev(lines);
}

/* A session and two locks (a mutex and a read side) as Prometheus text:
 * well formed, with the counts the API reports, summed per kind, and with
 * per_path labels that say which lock; NULL members refused. */
static void test_prometheus_text(void) {
  char *path = zkt_path("stats-prom");
  char *rw_path = zkt_path("stats-prom-rw");
  zkrc_session *s = zkt_session();
  zkrc_lock *lk = NULL;
  zkrc_rwlock *rw = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_new(&lk, s, path, NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_rwlock_new(&rw, s, rw_path, NULL));
  for (int i = 0; i < 2; i++) {
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lk, 5000));
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(lk));
  }
  /* Another object on the same path (another session): its counts join
   * the same series, which Prometheus must see once. */
  zkrc_session *s2 = zkt_session();
  zkrc_lock *lk2 = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_new(&lk2, s2, path, NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lk2, 5000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(lk2));
  zkrc_lock *reader = zkrc_rwlock_reader(rw);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(reader, 5000));
  char *sem_path = zkt_path("stats-prom-sem");
  char *el_path = zkt_path("stats-prom-el");
  zkrc_semaphore *sem = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_new(&sem, s, sem_path, 2, NULL));
  zkrc_semaphore_lease *lease = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_acquire(sem, 5000, &lease));
  zkrc_election *e = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_new(&e, s, el_path, NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_join(e));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_wait_leader(e, 5000));
  zkrc_lock *locks[] = {lk, reader, lk2};
  zkrc_stats_sources src;
  zkrc_stats_sources_init(&src);
  src.sessions = &s;
  src.n_sessions = 1;
  src.locks = locks;
  src.n_locks = 3;
  src.semaphores = &sem;
  src.n_semaphores = 1;
  src.elections = &e;
  src.n_elections = 1;
  char *text = zkrc_stats_prometheus(&src);
  CU_ASSERT_FATAL(text != NULL);
  check_exposition(text);
  /* By default one series per kind, without a path. */
  CU_ASSERT_PTR_NULL(strstr(text, "path="));
  CU_ASSERT_PTR_NOT_NULL(
      strstr(text, "zkrecipes_recipe_acquisitions_total{kind=\"mutex\"} 3\n"));
  CU_ASSERT_PTR_NOT_NULL(
      strstr(text, "zkrecipes_recipe_holding{kind=\"read\"} 1\n"));
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "\nzkrecipes_sessions_total 1\n"));
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "\nzkrecipes_session_info{"
                                      "session_id=\"0x"));
  free(text);
  src.per_path = 1;
  text = zkrc_stats_prometheus(&src);
  CU_ASSERT_FATAL(text != NULL);
  check_exposition(text);
  char *want = g_strdup_printf(
      "zkrecipes_recipe_acquisitions_total{path=\"%s\",kind=\"mutex\"} 3\n",
      path);
  CU_ASSERT_PTR_NOT_NULL(strstr(text, want));
  g_free(want);
  want = g_strdup_printf(
      "zkrecipes_recipe_holding{path=\"%s\",kind=\"read\"} 1\n", rw_path);
  CU_ASSERT_PTR_NOT_NULL(strstr(text, want));
  g_free(want);
  want = g_strdup_printf("zkrecipes_recipe_wait_seconds_count{path=\"%s\","
                         "kind=\"mutex\"} 3\n",
                         path);
  CU_ASSERT_PTR_NOT_NULL(strstr(text, want));
  g_free(want);
  CU_ASSERT_PTR_NULL(strstr(text, "session=\""));
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "# TYPE zkrecipes_recipe_hold_seconds "
                                      "histogram\n"));
  want = g_strdup_printf("zkrecipes_recipe_acquisitions_total{path=\"%s\","
                         "kind=\"semaphore\"} 1\n",
                         sem_path);
  CU_ASSERT_PTR_NOT_NULL(strstr(text, want));
  g_free(want);
  want = g_strdup_printf(
      "zkrecipes_recipe_holding{path=\"%s\",kind=\"election\"} 1\n", el_path);
  CU_ASSERT_PTR_NOT_NULL(strstr(text, want));
  g_free(want);
  free(text);
  zkrc_lock *with_null[] = {lk, NULL};
  zkrc_stats_sources bad;
  zkrc_stats_sources_init(&bad);
  bad.locks = with_null;
  bad.n_locks = 2;
  CU_ASSERT_PTR_NULL(zkrc_stats_prometheus(&bad));
  zkrc_stats_sources_init(&bad);
  bad.n_sessions = 1; /* and no array */
  CU_ASSERT_PTR_NULL(zkrc_stats_prometheus(&bad));
  CU_ASSERT_PTR_NULL(zkrc_stats_prometheus(NULL));
  bad.size = 0; /* not initialized */
  bad.n_sessions = 0;
  CU_ASSERT_PTR_NULL(zkrc_stats_prometheus(&bad));
  zkrc_stats_sources_init(&bad);
  text = zkrc_stats_prometheus(&bad);
  CU_ASSERT_PTR_NOT_NULL(text);
  CU_ASSERT_STRING_EQUAL(text ? text : "-", "");
  free(text);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_lease_release(lease));
  zkrc_semaphore_free(sem);
  zkrc_election_free(e);
  g_free(sem_path);
  g_free(el_path);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(reader));
  zkrc_lock_free(lk2);
  zkrc_session_close(s2);
  zkrc_lock_free(lk);
  zkrc_rwlock_free(rw);
  zkrc_session_close(s);
  g_free(path);
  g_free(rw_path);
}

static void add_suites(void) {
  ZKT_SUITE("histogram",
            {"bounds double from 0.1 ms", test_histogram_bounds_double},
            {"quantiles as histogram_quantile", test_histogram_quantiles});
  ZKT_SUITE("lock",
            {"acquisitions and durations",
             test_lock_counts_acquisitions_and_durations},
            {"refusals, timeouts, waiters and losses",
             test_lock_counts_refusals_timeouts_waiters_and_losses},
            {"filled up to the caller's size",
             test_stats_fill_only_what_the_caller_has},
            {"semaphore and election", test_semaphore_and_election_stats});
  ZKT_SUITE("session",
            {"sessions, requests, expiries",
             test_session_counts_sessions_requests_expiries},
            {"direct successor: 5 requests", test_direct_successor_requests},
            {"direct successor holds without listing",
             test_direct_successor_holds_without_listing});
  ZKT_SUITE("prometheus", {"text exposition", test_prometheus_text});
}

int main(void) { return zkt_run("test_stats", add_suites); }
