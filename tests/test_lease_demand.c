/*
 * The lease renewed on demand (zkrc_lease_renewal), against a real
 * three-member ensemble: an idle session sends keepalives and no renewal,
 * and its lease running out is no loss; a hold, a kept ephemeral node or
 * ZKRC_LEASE_ALWAYS wake it, and a release lets it rest again; a waiter
 * rests while it waits and is granted only with a lease re-established by
 * a renewal.  (The rule itself, keepalives included, is tested on
 * in-memory input in test_lease; what the leader sees, in bench/zkr-fleet.)
 */
#include "config.h"

#include <string.h>

#include <glib.h>

#include "testutil.h"
#include "zkrecipes/ephemeral.h"
#include "zkrecipes/lock.h"
#include "zkrecipes/stats.h"

/* Short sessions, so that a lease runs out within a second. */
#define TIMEOUT_MS 1000

static zkrc_session_stats stats_of(zkrc_session *s) {
  zkrc_session_stats st;
  CU_ASSERT_EQUAL(zkrc_session_get_stats(s, &st, sizeof st), ZKRC_OK);
  return st;
}

static uint64_t keepalives(zkrc_session *s) { return stats_of(s).keepalives; }
static uint64_t renewals(zkrc_session *s) { return stats_of(s).renewals; }

/* Wait until @p count(s) reaches @p at_least, at most @p ms; TRUE if it
 * did.  (A counter the session moves: an event, looked at every 5 ms.) */
static gboolean wait_count(zkrc_session *s, uint64_t (*count)(zkrc_session *),
                           uint64_t at_least, int ms) {
  int64_t until = zkt_now_ms() + ms;
  while (count(s) < at_least) {
    if (zkt_now_ms() >= until)
      return FALSE;
    g_usleep(5000);
  }
  return TRUE;
}

/* Counts the session's LOST and EXPIRED events. */
static void count_losses(zkrc_session *s, const zkrc_session_event *ev,
                         void *arg) {
  (void)s;
  if (ev->type == ZKRC_SESSION_EVENT_LOST ||
      ev->type == ZKRC_SESSION_EVENT_EXPIRED)
    g_atomic_int_inc((gint *)arg);
}

/* @p tick_ms: the servers' tick told to the session, 0 for none (the
 * library then assumes ZooKeeper's default, at most half the timeout). */
static zkrc_session *session_timed(int renewal, int timeout_ms, int tick_ms) {
  zkrc_session_options o;
  zkrc_session_options_init(&o);
  o.session_timeout_ms = timeout_ms;
  o.connect_timeout_ms = 15000;
  o.server_tick_ms = tick_ms;
  o.lease_renewal = renewal;
  zkrc_session *s = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_session_connect(&s, zkt_hosts(), &o), ZKRC_OK);
  return s;
}

static zkrc_session *session_renewing(int renewal) {
  return session_timed(renewal, TIMEOUT_MS, ZKT_TICK_MS);
}

/* ---------------------------------------------------------------- tests */

static void test_renewal_option_is_checked(void) {
  zkrc_session_options o;
  zkrc_session_options_init(&o);
  CU_ASSERT_EQUAL(o.lease_renewal, ZKRC_LEASE_ON_DEMAND);
  o.lease_renewal = 2;
  zkrc_session *s = NULL;
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_session_new(&s, zkt_hosts(), &o));
  CU_ASSERT_PTR_NULL(s);
  o.lease_renewal = -1;
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_session_new(&s, zkt_hosts(), &o));
  CU_ASSERT_PTR_NULL(s);
}

/* Nothing depends on an idle session's lease: keepalives go instead of
 * renewals, and when the lease from its opening runs out nothing is lost. */
static void test_idle_session_keeps_alive_without_renewals(void) {
  zkrc_session *s = session_renewing(ZKRC_LEASE_ON_DEMAND);
  gint losses = 0;
  zkrc_session_add_listener(s, count_losses, &losses, NULL);
  CU_ASSERT_EQUAL(stats_of(s).lease_dependents, 0);
  /* Five keepalives, 0.3 timeout apart, the first at the connect: well
   * past the lease of its opening (0.9 timeout after it). */
  CU_ASSERT_FATAL(wait_count(s, keepalives, 5, 10 * TIMEOUT_MS));
  zkrc_session_stats st = stats_of(s);
  printf("(%llu keepalives, %llu renewals) ", (unsigned long long)st.keepalives,
         (unsigned long long)st.renewals);
  CU_ASSERT_EQUAL(st.renewals, 0);
  CU_ASSERT_EQUAL(st.lease_losses, 0);
  CU_ASSERT_EQUAL(st.lease_remaining_ms, 0); /* run out, unrenewed */
  CU_ASSERT_EQUAL(zkrc_session_get_state(s), ZKRC_SESSION_CONNECTED);
  CU_ASSERT_EQUAL(g_atomic_int_get(&losses), 0);
  zkrc_session_close(s);
}

/* ZKRC_LEASE_ALWAYS: renewed from the start, as if one dependent never
 * went. */
static void test_always_renews_from_the_start(void) {
  zkrc_session *s = session_renewing(ZKRC_LEASE_ALWAYS);
  CU_ASSERT_EQUAL(stats_of(s).lease_dependents, 1);
  CU_ASSERT_FATAL(wait_count(s, renewals, 4, 10 * TIMEOUT_MS));
  CU_ASSERT_EQUAL(keepalives(s), 0);
  CU_ASSERT(zkrc_session_lease_remaining(s) > 0);
  zkrc_session_close(s);
}

/* A hold wakes the lease, which is renewed while it lasts; its release
 * lets the lease rest: keepalives again, and no more renewals (but one
 * that was in flight). */
static void test_hold_wakes_the_lease_and_release_rests_it(void) {
  zkrc_session *s = session_renewing(ZKRC_LEASE_ON_DEMAND);
  char *path = zkt_path("hold");
  zkrc_lock *lk = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_new(&lk, s, path, NULL), ZKRC_OK);
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_acquire(lk, 10000), ZKRC_OK);
  CU_ASSERT(zkrc_lock_lease_remaining(lk) > 0);
  CU_ASSERT_EQUAL(stats_of(s).lease_dependents, 1);
  uint64_t at_grant = renewals(s);
  CU_ASSERT(wait_count(s, renewals, at_grant + 4, 10 * TIMEOUT_MS));
  CU_ASSERT(zkrc_lock_lease_remaining(lk) > 0); /* renewed past its first */
  CU_ASSERT_EQUAL(zkrc_lock_release(lk), ZKRC_OK);
  CU_ASSERT_EQUAL(stats_of(s).lease_dependents, 0);
  uint64_t at_release = renewals(s);
  CU_ASSERT(wait_count(s, keepalives, keepalives(s) + 3, 10 * TIMEOUT_MS));
  CU_ASSERT(renewals(s) <= at_release + 1);
  zkrc_lock_free(lk);
  g_free(path);
  zkrc_session_close(s);
}

/* A kept ephemeral node depends on the lease from its creation until it
 * is freed. */
static void test_kept_node_keeps_the_lease_awake(void) {
  zkrc_session *s = session_renewing(ZKRC_LEASE_ON_DEMAND);
  char *path = zkt_path("member");
  zkrc_ephemeral *e = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_ephemeral_new(&e, s, path, "x", 1, NULL), ZKRC_OK);
  CU_ASSERT_EQUAL(zkrc_ephemeral_wait_registered(e, 10000), ZKRC_OK);
  CU_ASSERT_EQUAL(stats_of(s).lease_dependents, 1);
  uint64_t at_start = renewals(s);
  CU_ASSERT(wait_count(s, renewals, at_start + 4, 10 * TIMEOUT_MS));
  CU_ASSERT_EQUAL(zkrc_ephemeral_is_registered(e), 1);
  zkrc_ephemeral_free(e);
  CU_ASSERT_EQUAL(stats_of(s).lease_dependents, 0);
  g_free(path);
  zkrc_session_close(s);
}

typedef struct waiter {
  zkrc_session *s;
  zkrc_lock *lk;
  int rc, release_rc;
  int64_t granted_ms;
  int lease_at_grant_ms;
  zkrc_session_stats at_grant;
} waiter;

/* A lock's hold belongs to the thread that took it: this one also lets
 * it go. */
static gpointer acquire_thread(gpointer data) {
  waiter *w = data;
  w->rc = zkrc_lock_acquire(w->lk, 20000);
  w->granted_ms = zkt_now_ms();
  w->lease_at_grant_ms = zkrc_lock_lease_remaining(w->lk);
  zkrc_session_get_stats(w->s, &w->at_grant, sizeof w->at_grant);
  w->release_rc = zkrc_lock_release(w->lk);
  return NULL;
}

/* How many contenders the lock at @p path has (through @p zh). */
static int contenders(zhandle_t *zh, const char *path) {
  struct String_vector v = {0, NULL};
  if (zoo_get_children(zh, path, 0, &v) != ZOK)
    return -1;
  int n = v.count;
  deallocate_String_vector(&v);
  return n;
}

/* A holder and a waiter on one lock, with sessions of @p timeout_ms and
 * @p tick_ms (session_timed); the waiter waits through the end of its
 * first lease (the lease from its opening) on keepalives alone, then the
 * holder lets go.  Returns the waiter's account of its grant. */
static waiter hand_over_to_a_rested_waiter(const char *name, int timeout_ms,
                                           int tick_ms) {
  zkrc_session *holder_s =
      session_timed(ZKRC_LEASE_ON_DEMAND, timeout_ms, tick_ms);
  zkrc_session *waiter_s =
      session_timed(ZKRC_LEASE_ON_DEMAND, timeout_ms, tick_ms);
  char *path = zkt_path(name);
  zkrc_lock *held = NULL;
  waiter w = {.s = waiter_s, .rc = -1, .release_rc = -1};
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_new(&held, holder_s, path, NULL), ZKRC_OK);
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_new(&w.lk, waiter_s, path, NULL), ZKRC_OK);
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_acquire(held, 10000), ZKRC_OK);
  GThread *t = g_thread_new("waiter", acquire_thread, &w);
  zhandle_t *zh = zkt_raw();
  int64_t until = zkt_now_ms() + 10000;
  while (contenders(zh, path) < 2 && zkt_now_ms() < until)
    g_usleep(5000);
  CU_ASSERT_EQUAL_FATAL(contenders(zh, path), 2);
  /* Waiting through its first lease's end: keepalives only. */
  until = zkt_now_ms() + 10 * timeout_ms;
  while (zkrc_session_lease_remaining(waiter_s) > 0 && zkt_now_ms() < until)
    CU_ASSERT(
        wait_count(waiter_s, keepalives, keepalives(waiter_s) + 1, timeout_ms));
  CU_ASSERT_EQUAL(zkrc_session_lease_remaining(waiter_s), 0);
  CU_ASSERT(
      wait_count(waiter_s, keepalives, keepalives(waiter_s) + 1, timeout_ms));
  CU_ASSERT_EQUAL(renewals(waiter_s), 0);
  CU_ASSERT_EQUAL(stats_of(waiter_s).lease_dependents, 0);
  int64_t released = zkt_now_ms();
  CU_ASSERT_EQUAL(zkrc_lock_release(held), ZKRC_OK);
  g_thread_join(t);
  CU_ASSERT_EQUAL(w.rc, ZKRC_OK);
  printf("(granted %lld ms after the release, with %d ms of lease, after "
         "%llu renewal(s)) ",
         (long long)(w.granted_ms - released), w.lease_at_grant_ms,
         (unsigned long long)w.at_grant.renewals);
  CU_ASSERT(w.lease_at_grant_ms > 0);
  CU_ASSERT_EQUAL(w.at_grant.lease_dependents, 1);
  CU_ASSERT_EQUAL(w.release_rc, ZKRC_OK);
  zkrc_lock_free(w.lk);
  zkrc_lock_free(held);
  zookeeper_close(zh);
  g_free(path);
  zkrc_session_close(waiter_s);
  zkrc_session_close(holder_s);
  w.lk = NULL;
  w.s = NULL;
  return w;
}

/* A waiter's lease rests while it waits; its lease from the opening has
 * run out when the holder lets go, and the grant is reported only once a
 * renewal has established a new one. */
static void test_waiter_rests_and_is_granted_with_a_renewed_lease(void) {
  waiter w = hand_over_to_a_rested_waiter("handover", TIMEOUT_MS, ZKT_TICK_MS);
  CU_ASSERT(w.at_grant.renewals >= 1);
}

/* The servers' tick not told, and a timeout of two assumed ticks (the
 * library assumes half of 4 s): keepalives close enough together that the
 * grant waits for one renewal, not two a relay apart (src/core/lease.c,
 * keepalive_spacing). */
static void test_rested_waiter_needs_one_renewal_at_two_assumed_ticks(void) {
  waiter w = hand_over_to_a_rested_waiter("handover-default-tick", 4000, 0);
  CU_ASSERT_EQUAL(w.at_grant.renewals, 1);
}

static void add_suites(void) {
  zkt_configure(3, 0);
  ZKT_SUITE(
      "lease on demand",
      {"renewal option is checked", test_renewal_option_is_checked},
      {"idle session keeps alive without renewals",
       test_idle_session_keeps_alive_without_renewals},
      {"always renews from the start", test_always_renews_from_the_start},
      {"hold wakes the lease and release rests it",
       test_hold_wakes_the_lease_and_release_rests_it},
      {"kept node keeps the lease awake", test_kept_node_keeps_the_lease_awake},
      {"waiter rests and is granted with a renewed lease",
       test_waiter_rests_and_is_granted_with_a_renewed_lease},
      {"rested waiter needs one renewal at two assumed ticks",
       test_rested_waiter_needs_one_renewal_at_two_assumed_ticks});
}

int main(void) { return zkt_run("test_lease_demand", add_suites); }
