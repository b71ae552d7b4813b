/*
 * Held means held, under a real partition (issue 12): a holder connected
 * through one member's fault proxy, a successor connected to the other
 * members directly and waiting, and the proxy black-holed.  For each recipe
 * - a blocking hold (zkrc_lock_acquire), a non-blocking hold
 * (zkrc_lock_acquire_async), a leadership (zkrc_election) and a read hold
 * (zkrc_rwlock's read side, a writer waiting behind it) - the holder
 * must be told LOST / REVOKED before the successor is told it holds or leads
 * (both timed with g_get_monotonic_time() in this one process), is_held /
 * is_leader must read 0 from the moment that event is delivered (and stay
 * 0, also once the holder has a new session), and the remaining lease must
 * be positive while healthy and only go down, to 0, once cut off.  And a
 * holder whose connection comes back with the same session before its
 * deadline keeps everything.
 *
 * Three members, a fault proxy in front of each; the servers' tick is the
 * harness's (ZKT_TICK_MS) and the sessions know it.
 *
 * The margins (how long after the holder's loss the successor was told) are
 * printed per partition and summed up per recipe.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "testutil.h"

/* Short, so that a partition costs a few seconds; the lease still leaves
 * the relay and drift margins (src/core/lease.h) well inside it. */
#define TIMEOUT_MS 1500
/* Partitions per recipe. */
#define REPS 3
/* The holder's session in the "connection comes back" tests: long enough
 * that a reconnection through a slowed proxy, and its re-check, fit well
 * inside the lease. */
#define COMEBACK_TIMEOUT_MS 4000
/* The proxy's delay, each way, while the holder comes back: a round trip
 * takes at least twice this, which makes the re-check visible in time. */
#define COMEBACK_DELAY_MS 100

typedef enum kind { BLOCKING, NONBLOCKING, ELECTION, READER } kind;

static const char *kind_name(kind k) {
  return k == BLOCKING      ? "blocking hold"
         : k == NONBLOCKING ? "non-blocking hold"
         : k == READER      ? "read hold"
                            : "election";
}

/* The holder: through member 0's proxy, the only address it knows. */
static zkrc_session *holder_session(int timeout_ms, zkrc_session_event_fn fn,
                                    void *arg) {
  zkrc_session_options o;
  zkrc_session_options_init(&o);
  o.session_timeout_ms = timeout_ms;
  o.connect_timeout_ms = 15000;
  o.server_tick_ms = ZKT_TICK_MS;
  o.on_event = fn;
  o.event_arg = arg;
  zkrc_session *s = NULL;
  CU_ASSERT_EQUAL_FATAL(
      zkrc_session_connect(&s, zkrc_ensemble_member_address(zkt_ensemble(), 0),
                           &o),
      ZKRC_OK);
  return s;
}

/* "127.0.0.1:p1,127.0.0.1:p2": the members the holder is not on, direct. */
static char *other_members(void) {
  GString *hosts = g_string_new(NULL);
  for (int i = 1; i < zkrc_ensemble_size(zkt_ensemble()); i++)
    g_string_append_printf(hosts, "%s127.0.0.1:%d", i > 1 ? "," : "",
                           zkrc_ensemble_member_port(zkt_ensemble(), i));
  return g_string_free(hosts, FALSE);
}

/* The successor: on the other members, directly; a long timeout, so that it
 * outlives the partition and sees the holder's expiry. */
static zkrc_session *successor_session(void) {
  char *hosts = other_members();
  zkrc_session_options o;
  zkrc_session_options_init(&o);
  o.session_timeout_ms = 4000;
  o.connect_timeout_ms = 15000;
  o.server_tick_ms = ZKT_TICK_MS;
  zkrc_session *s = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_session_connect(&s, hosts, &o), ZKRC_OK);
  g_free(hosts);
  return s;
}

static zhandle_t *direct(void) {
  return zkt_raw_to(zkrc_ensemble_direct_connect_string(zkt_ensemble()));
}

/* ------------------------------------------------------ what is recorded */

/* One holder and its successor.  Times are g_get_monotonic_time() us, 0
 * until it happened; written on callback threads, read on the test's. */
typedef struct trial {
  kind k;
  GMutex mu;
  GCond cond;
  zkrc_lock *lk;        /* the holder's lock (BLOCKING, NONBLOCKING), or
                         * its read-write lock's read side (READER) */
  zkrc_rwlock *rw;      /* the holder's read-write lock (READER) */
  zkrc_rwlock *succ_rw; /* the successor's, whose writer waits (READER) */
  zkrc_lock_hold *hold; /* the holder's non-blocking hold */
  zkrc_election *e;     /* the holder's participant (ELECTION) */
  int granted;          /* the holder's own async completion: 1 until */
  int64_t lost_at;      /* the holder was told LOST / REVOKED */
  int lost_reason;
  int lost_count;
  int held_at_event;       /* is_held / is_leader inside that callback */
  int lease_at_event;      /* *_lease_remaining inside that callback */
  int64_t suspended_at;    /* the holder was told SUSPENDED (or, leading with
                         * revoke_on_suspend, REVOKED for ZKRC_ECONNLOSS) */
  int64_t session_back_at; /* its session was told RECONNECTED */
  int64_t back_at;         /* it was told RECONNECTED (ELECTED again) */
  int held_at_back;        /* is_held / is_leader inside that callback */
  int lease_at_back;       /* *_lease_remaining inside that callback */
  int back_count;
  int suspended_count; /* SUSPENDED (REVOKED for ZKRC_ECONNLOSS) told */
  int session_drops, session_backs; /* its session's SUSPENDED, RECONNECTED */
  int64_t succ_at; /* the successor was told it holds / leads */
  int succ_status;
  zkrc_lock_hold *succ_hold;
  int64_t gone_at; /* the servers deleted the holder's node */
} trial;

static void trial_init(trial *t, kind k) {
  memset(t, 0, sizeof *t);
  t->k = k;
  t->granted = 1;
  t->held_at_event = -1;
  t->lease_at_event = -1;
  t->held_at_back = -1;
  t->lease_at_back = -1;
  g_mutex_init(&t->mu);
  g_cond_init(&t->cond);
}

static void trial_clear(trial *t) {
  g_mutex_clear(&t->mu);
  g_cond_clear(&t->cond);
}

static int64_t trial_get(trial *t, int64_t *field) {
  g_mutex_lock(&t->mu);
  int64_t v = *field;
  g_mutex_unlock(&t->mu);
  return v;
}

/* Wait until *@p field is non-zero, at most @p timeout_ms; its value. */
static int64_t trial_wait(trial *t, int64_t *field, int timeout_ms) {
  int64_t deadline = g_get_monotonic_time() + (int64_t)timeout_ms * 1000;
  g_mutex_lock(&t->mu);
  while (*field == 0 && g_cond_wait_until(&t->cond, &t->mu, deadline))
    ;
  int64_t v = *field;
  g_mutex_unlock(&t->mu);
  return v;
}

/* The holder was told it no longer holds; @p held and @p left are what the
 * library said in that very callback (-1: not askable from this thread). */
static void told_lost(trial *t, int reason, int held, int left) {
  int64_t now = g_get_monotonic_time();
  g_mutex_lock(&t->mu);
  if (t->lost_count++ == 0) {
    t->lost_at = now;
    t->lost_reason = reason;
    t->held_at_event = held;
    t->lease_at_event = left;
  }
  g_cond_broadcast(&t->cond);
  g_mutex_unlock(&t->mu);
}

/* The holder was told its connection dropped. */
static void told_suspended(trial *t) {
  int64_t now = g_get_monotonic_time();
  g_mutex_lock(&t->mu);
  if (t->suspended_count++ == 0)
    t->suspended_at = now;
  g_cond_broadcast(&t->cond);
  g_mutex_unlock(&t->mu);
}

/* The holder was told it still holds, its connection back; @p held and
 * @p left as in told_lost(). */
static void told_back(trial *t, int held, int left) {
  int64_t now = g_get_monotonic_time();
  g_mutex_lock(&t->mu);
  if (t->back_count++ == 0) {
    t->back_at = now;
    t->held_at_back = held;
    t->lease_at_back = left;
  }
  g_cond_broadcast(&t->cond);
  g_mutex_unlock(&t->mu);
}

static void holder_lock_event(zkrc_lock *lk, const zkrc_lock_event *info,
                              void *arg) {
  trial *t = arg;
  /* A thread's hold is asked for by that thread only: the test's thread
   * checks the blocking hold (run_partition, run_comeback). */
  int held = info->hold ? zkrc_lock_hold_is_held(info->hold) : -1;
  int left = info->hold ? zkrc_lock_hold_lease_remaining(info->hold) : -1;
  if (info->type == ZKRC_LOCK_LOST)
    told_lost(t, info->reason, held, left);
  else if (info->type == ZKRC_LOCK_SUSPENDED)
    told_suspended(t);
  else
    told_back(t, held, left);
}

/* The holder's session: when its connection came back. */
static void holder_session_event(zkrc_session *s, const zkrc_session_event *ev_,
                                 void *arg) {
  zkrc_session_event_type ev = ev_->type;
  trial *t = arg;
  int64_t now = g_get_monotonic_time();
  g_mutex_lock(&t->mu);
  t->session_drops += ev == ZKRC_SESSION_EVENT_SUSPENDED;
  if (ev == ZKRC_SESSION_EVENT_RECONNECTED && t->session_backs++ == 0)
    t->session_back_at = now;
  g_cond_broadcast(&t->cond);
  g_mutex_unlock(&t->mu);
}

static void holder_granted(zkrc_lock *lk, zkrc_lock_hold *hold,
                           const zkrc_lock_acquired_info *info, void *arg) {
  trial *t = arg;
  g_mutex_lock(&t->mu);
  t->granted = info->status;
  g_cond_broadcast(&t->cond);
  g_mutex_unlock(&t->mu);
}

static void holder_election_event(zkrc_election *e,
                                  const zkrc_election_event *info, void *arg) {
  trial *t = arg;
  /* With revoke_on_suspend, a dropped connection revokes for
   * ZKRC_ECONNLOSS, and its return elects again: a suspension and a
   * reconnection, not a loss. */
  if (info->type == ZKRC_ELECTION_REVOKED && info->reason == ZKRC_ECONNLOSS)
    told_suspended(t);
  else if (info->type == ZKRC_ELECTION_REVOKED)
    told_lost(t, info->reason, zkrc_election_is_leader(e),
              zkrc_election_lease_remaining(e));
  else if (info->type == ZKRC_ELECTION_ELECTED &&
           trial_get(t, &t->suspended_at) != 0)
    told_back(t, zkrc_election_is_leader(e), zkrc_election_lease_remaining(e));
}

static void told_successor(trial *t, int status, zkrc_lock_hold *hold) {
  int64_t now = g_get_monotonic_time();
  g_mutex_lock(&t->mu);
  t->succ_at = now;
  t->succ_status = status;
  t->succ_hold = hold;
  g_cond_broadcast(&t->cond);
  g_mutex_unlock(&t->mu);
}

static void successor_granted(zkrc_lock *lk, zkrc_lock_hold *hold,
                              const zkrc_lock_acquired_info *info, void *arg) {
  told_successor(arg, info->status, info->status == ZKRC_OK ? hold : NULL);
}

static void successor_election_event(zkrc_election *e,
                                     const zkrc_election_event *info,
                                     void *arg) {
  if (info->type == ZKRC_ELECTION_ELECTED)
    told_successor(arg, ZKRC_OK, NULL);
}

static void node_gone(zhandle_t *zh, int type, int state, const char *path,
                      void *ctx) {
  trial *t = ctx;
  if (type != ZOO_DELETED_EVENT)
    return;
  int64_t now = g_get_monotonic_time();
  g_mutex_lock(&t->mu);
  t->gone_at = now;
  g_cond_broadcast(&t->cond);
  g_mutex_unlock(&t->mu);
}

/* Does the holder hold, and how much lease is left, asked the way an
 * application asks (the blocking hold from the thread that took it: the
 * test's). */
static int held_now(trial *t) {
  return t->k == NONBLOCKING ? zkrc_lock_hold_is_held(t->hold)
         : t->k == ELECTION  ? zkrc_election_is_leader(t->e)
                             : zkrc_lock_is_held(t->lk); /* a thread's */
}

static int lease_now(trial *t) {
  return t->k == NONBLOCKING ? zkrc_lock_hold_lease_remaining(t->hold)
         : t->k == ELECTION  ? zkrc_election_lease_remaining(t->e)
                             : zkrc_lock_lease_remaining(t->lk);
}

/* ------------------------------------------------------- taking it, first */

/* The holder takes the lock or leads, on @p s; a leader is revoked as soon
 * as its connection drops when @p revoke_on_suspend. */
static void holder_take(trial *t, zkrc_session *s, const char *path,
                        int revoke_on_suspend) {
  if (t->k == ELECTION) {
    zkrc_election_options o;
    zkrc_election_options_init(&o);
    o.on_event = holder_election_event;
    o.event_arg = t;
    o.participant_id = "holder";
    o.revoke_on_suspend = revoke_on_suspend;
    CU_ASSERT_EQUAL_FATAL(zkrc_election_new(&t->e, s, path, &o), ZKRC_OK);
    CU_ASSERT_EQUAL_FATAL(zkrc_election_join(t->e), ZKRC_OK);
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_wait_leader(t->e, 10000));
    return;
  }
  if (t->k == READER) {
    zkrc_rwlock_options o;
    zkrc_rwlock_options_init(&o);
    o.on_event = holder_lock_event;
    o.event_arg = t;
    o.participant_id = "holder";
    CU_ASSERT_EQUAL_FATAL(zkrc_rwlock_new(&t->rw, s, path, &o), ZKRC_OK);
    t->lk = zkrc_rwlock_reader(t->rw);
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(t->lk, 10000));
    return;
  }
  zkrc_lock_options o;
  zkrc_lock_options_init(&o);
  o.on_event = holder_lock_event;
  o.event_arg = t;
  o.participant_id = "holder";
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_new(&t->lk, s, path, &o), ZKRC_OK);
  if (t->k == BLOCKING) {
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(t->lk, 10000));
    return;
  }
  CU_ASSERT_EQUAL_FATAL(
      zkrc_lock_acquire_async(t->lk, 10000, holder_granted, t, &t->hold),
      ZKRC_OK);
  int64_t deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
  g_mutex_lock(&t->mu);
  while (t->granted == 1 && g_cond_wait_until(&t->cond, &t->mu, deadline))
    ;
  int granted = t->granted;
  g_mutex_unlock(&t->mu);
  ZKT_ASSERT_RC(ZKRC_OK, granted);
}

/* Watch the holder's node (the only one so far) from outside the proxy:
 * its deletion is the moment the servers expired the holder's session.
 * A sync first: the holder's member committed the node, ours may not have
 * applied it yet (CI: no child seen). */
static void watch_holder_node(trial *t, zhandle_t *zh, const char *path) {
  zkt_sync(zh, path);
  struct String_vector kids = {0, NULL};
  CU_ASSERT_EQUAL_FATAL(zoo_get_children(zh, path, 0, &kids), ZOK);
  CU_ASSERT_EQUAL_FATAL(kids.count, 1);
  char *node = g_strdup_printf("%s/%s", path, kids.data[0]);
  deallocate_String_vector(&kids);
  CU_ASSERT_EQUAL(zoo_wexists(zh, node, node_gone, t, NULL), ZOK);
  g_free(node);
}

/* The successor queues behind the holder (its node is there on return). */
static void successor_wait(trial *t, zkrc_session *s, zhandle_t *zh,
                           const char *path, zkrc_lock **slk,
                           zkrc_election **se) {
  if (t->k == ELECTION) {
    zkrc_election_options o;
    zkrc_election_options_init(&o);
    o.on_event = successor_election_event;
    o.event_arg = t;
    o.participant_id = "successor";
    CU_ASSERT_EQUAL_FATAL(zkrc_election_new(se, s, path, &o), ZKRC_OK);
    CU_ASSERT_EQUAL_FATAL(zkrc_election_join(*se), ZKRC_OK);
  } else if (t->k == READER) {
    CU_ASSERT_EQUAL_FATAL(zkrc_rwlock_new(&t->succ_rw, s, path, NULL), ZKRC_OK);
    CU_ASSERT_EQUAL_FATAL(
        zkrc_lock_acquire_async(zkrc_rwlock_writer(t->succ_rw), 30000,
                                successor_granted, t, NULL),
        ZKRC_OK);
  } else {
    CU_ASSERT_EQUAL_FATAL(zkrc_lock_new(slk, s, path, NULL), ZKRC_OK);
    CU_ASSERT_EQUAL_FATAL(
        zkrc_lock_acquire_async(*slk, 30000, successor_granted, t, NULL),
        ZKRC_OK);
  }
  CU_ASSERT_FATAL(zkt_wait_children(zh, path, 2, 10000));
}

/* ------------------------------------------------------- the partition */

/* What one partition showed, in ms. */
typedef struct margins {
  double cut_to_lost;  /* from the cut to the holder's LOST / REVOKED */
  double lost_to_dead; /* from it to the servers' deletion of its node */
  double lost_to_succ; /* from it to the successor's being told */
  double late;         /* the LOST after the deadline the lease showed */
  int healthy_min;     /* the smallest remaining lease while healthy */
} margins;

/* Sample is_held and the lease every 10 ms for @p ms while healthy: held,
 * and a positive lease, every time.  Returns the smallest lease seen. */
static int sample_healthy(trial *t, int ms) {
  int64_t until = g_get_monotonic_time() + (int64_t)ms * 1000;
  int smallest = INT32_MAX, unheld = 0;
  while (g_get_monotonic_time() < until) {
    int left = lease_now(t);
    unheld += !held_now(t) || left <= 0;
    if (left < smallest)
      smallest = left;
    g_usleep(10000);
  }
  CU_ASSERT_EQUAL(unheld, 0);
  CU_ASSERT(smallest > 0);
  return smallest;
}

/* After the cut, until the successor is told (at most @p timeout_ms): look
 * at the holder every millisecond.  Once its event was delivered, or the
 * lease's deadline passed (@p deadline: no earlier than the real one),
 * is_held must read 0 and the lease 0, every time; the lease never goes
 * up. */
typedef struct watch_result {
  int held_after_event; /* samples that said "held" after the event */
  int lease_after_event;
  int held_after_deadline; /* ... after the deadline, event or not */
  int lease_after_deadline;
  int lease_went_up;
  int samples;
} watch_result;

static watch_result watch_cut_off(trial *t, int64_t deadline, int timeout_ms) {
  watch_result w = {0, 0, 0, 0, 0, 0};
  int64_t until = g_get_monotonic_time() + (int64_t)timeout_ms * 1000;
  int previous = lease_now(t);
  while (trial_get(t, &t->succ_at) == 0 && g_get_monotonic_time() < until) {
    /* The event first: whatever the library says after it must be 0. */
    int told = trial_get(t, &t->lost_at) != 0;
    int past = g_get_monotonic_time() > deadline;
    int held = held_now(t);
    int left = lease_now(t);
    w.held_after_event += told && held;
    w.lease_after_event += told && left != 0;
    w.held_after_deadline += past && held;
    w.lease_after_deadline += past && left != 0;
    w.lease_went_up += left > previous;
    previous = left;
    w.samples++;
    g_usleep(1000);
  }
  return w;
}

static int a_new_session(void *arg) {
  void **a = arg;
  return zkrc_session_get_state(a[0]) == ZKRC_SESSION_CONNECTED &&
         zkrc_session_id(a[0]) != *(int64_t *)a[1];
}

/* One partition of a holder of kind @p k; fills @p m. */
/* Free a trial that ended normally: the holder's and the successor's
 * recipes, their sessions, the watching handle, and the trial. */
static void finish_trial(trial *tp, zkrc_election *se, zkrc_lock *slk,
                         zkrc_session *hs, zkrc_session *ss, zhandle_t *zh) {
  zkrc_election_free(tp->e);
  zkrc_lock_free(tp->lk); /* (ignored for a read-write lock's side) */
  zkrc_rwlock_free(tp->rw);
  zkrc_rwlock_free(tp->succ_rw);
  zkrc_election_free(se);
  zkrc_lock_free(slk);
  zkrc_session_close(hs);
  zkrc_session_close(ss);
  zookeeper_close(zh);
  trial_clear(tp);
  g_free(tp);
}

static void run_partition(kind k, margins *m) {
  char *path = zkt_path("partition");
  zhandle_t *zh = direct();
  zkt_make_path(zh, path);
  /* On the heap: after a failed fatal assertion, callbacks registered
   * with it may still come; it is left to them. */
  trial *tp = g_new0(trial, 1);
  trial_init(tp, k);
  zkrc_session *hs = holder_session(TIMEOUT_MS, NULL, NULL);
  zkrc_session *ss = successor_session();
  holder_take(tp, hs, path, 0);
  watch_holder_node(tp, zh, path);
  zkrc_lock *slk = NULL;
  zkrc_election *se = NULL;
  successor_wait(tp, ss, zh, path, &slk, &se);
  /* Healthy for a session timeout, so that the lease under test is one the
   * renewals made, not the session's first. */
  m->healthy_min = sample_healthy(tp, TIMEOUT_MS);
  int64_t first_id = zkrc_session_id(hs);

  /* The cut: it has taken effect when this returns, so nothing the holder
   * hears from now on can extend its lease. */
  CU_ASSERT_EQUAL_FATAL(zkrc_proxy_blackhole(zkt_ensemble(), 0, 4 * TIMEOUT_MS),
                        0);
  int64_t cut = g_get_monotonic_time();
  /* The lease is in whole ms, rounded down: the real deadline lies within
   * the ms after this one... */
  int left_at_cut = lease_now(tp);
  int64_t deadline = g_get_monotonic_time() + (int64_t)left_at_cut * 1000;
  /* ...and certainly before this one. */
  watch_result w = watch_cut_off(tp, deadline + 1000, 4 * TIMEOUT_MS);
  int64_t succ_at = trial_wait(tp, &tp->succ_at, 1000);
  int64_t gone_at = trial_wait(tp, &tp->gone_at, 5000);
  int64_t lost_at = trial_get(tp, &tp->lost_at);

  CU_ASSERT_FATAL(lost_at > 0);
  CU_ASSERT_FATAL(succ_at > 0);
  ZKT_ASSERT_RC(ZKRC_OK, tp->succ_status);
  CU_ASSERT(gone_at > 0);
  /* Told before anyone else could be, and before anyone else was. */
  CU_ASSERT(lost_at < gone_at);
  CU_ASSERT(lost_at < succ_at);
  CU_ASSERT(tp->lost_reason == ZKRC_ESESSIONLOST ||
            tp->lost_reason == ZKRC_ESESSIONEXPIRED);
  /* is_held / is_leader and the lease said 0 in the callback itself... */
  if (k != BLOCKING && k != READER) {
    CU_ASSERT_EQUAL(tp->held_at_event, 0);
    CU_ASSERT_EQUAL(tp->lease_at_event, 0);
  }
  /* ... and every time they were asked after it; the lease only went down. */
  CU_ASSERT_EQUAL(w.held_after_event, 0);
  CU_ASSERT_EQUAL(w.lease_after_event, 0);
  /* ... and from the deadline on, even before the event was delivered. */
  CU_ASSERT_EQUAL(w.held_after_deadline, 0);
  CU_ASSERT_EQUAL(w.lease_after_deadline, 0);
  CU_ASSERT_EQUAL(w.lease_went_up, 0);
  CU_ASSERT(w.samples > 0);
  m->cut_to_lost = (lost_at - cut) / 1000.0;
  m->lost_to_dead = (gone_at - lost_at) / 1000.0;
  m->lost_to_succ = (succ_at - lost_at) / 1000.0;
  m->late = (lost_at - deadline) / 1000.0;

  /* The network comes back: the holder gets a new session, and still does
   * not hold (nothing it held comes back with it). */
  CU_ASSERT_EQUAL(zkrc_proxy_blackhole(zkt_ensemble(), 0, 0), 0);
  void *args[2] = {hs, &first_id};
  CU_ASSERT(zkt_wait_for(a_new_session, args, 15000));
  CU_ASSERT_EQUAL(held_now(tp), 0);
  CU_ASSERT_EQUAL(lease_now(tp), 0);
  CU_ASSERT_EQUAL(tp->lost_count, 1); /* told once */
  if (k == BLOCKING || k == READER)
    ZKT_ASSERT_RC(ZKRC_ELOCKLOST, zkrc_lock_release(tp->lk));
  else if (k == NONBLOCKING)
    ZKT_ASSERT_RC(ZKRC_ELOCKLOST, zkrc_lock_hold_release(tp->hold));

  finish_trial(tp, se, slk, hs, ss, zh);
  g_free(path);
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median_of(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, by_value);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void partitions(kind k) {
  double to_succ[REPS], to_dead[REPS], to_lost[REPS], late[REPS];
  int healthy_min = INT32_MAX;
  for (int i = 0; i < REPS; i++) {
    margins m = {0};
    run_partition(k, &m);
    printf("\n    %s, partition %d: told %.1f ms after the cut (%+.1f ms "
           "from its lease's deadline); the successor was told %.1f ms "
           "after the holder, the servers deleted its node %.1f ms after it",
           kind_name(k), i + 1, m.cut_to_lost, m.late, m.lost_to_succ,
           m.lost_to_dead);
    to_succ[i] = m.lost_to_succ;
    to_dead[i] = m.lost_to_dead;
    to_lost[i] = m.cut_to_lost;
    late[i] = m.late;
    if (m.healthy_min < healthy_min)
      healthy_min = m.healthy_min;
  }
  double min_succ = to_succ[0], min_dead = to_dead[0], max_late = late[0];
  for (int i = 1; i < REPS; i++) {
    min_succ = to_succ[i] < min_succ ? to_succ[i] : min_succ;
    min_dead = to_dead[i] < min_dead ? to_dead[i] : min_dead;
    max_late = late[i] > max_late ? late[i] : max_late;
  }
  printf("\n    %s, %d partitions (session timeout %d ms, tick %d ms): "
         "told %.1f ms (median) after the cut, %.1f ms at most after the "
         "deadline its lease showed; the servers expired the session %.1f ms "
         "(min) / %.1f ms (median) later, the successor was told %.1f ms "
         "(min) / %.1f ms (median) later; lease while healthy >= %d ms ",
         kind_name(k), REPS, TIMEOUT_MS, ZKT_TICK_MS, median_of(to_lost, REPS),
         max_late, min_dead, median_of(to_dead, REPS), min_succ,
         median_of(to_succ, REPS), healthy_min);
}

/* ------------------------------------------- the connection comes back */

/* The holder's connection drops and comes back, with the same session, well
 * before its lease's deadline (through a proxy slowed by COMEBACK_DELAY_MS
 * each way): it keeps its hold, and is told so (RECONNECTED, or ELECTED
 * again after a revoke_on_suspend) only once the library has asked the
 * servers about its node again: at least a round trip after its session
 * was back.  The successor, waiting all along, is told nothing until the
 * holder lets go. */
static void run_comeback(kind k) {
  char *path = zkt_path("comeback");
  zhandle_t *zh = direct();
  zkt_make_path(zh, path);
  /* On the heap: after a failed fatal assertion, callbacks registered
   * with it may still come; it is left to them. */
  trial *tp = g_new0(trial, 1);
  trial_init(tp, k);
  zkrc_session *hs =
      holder_session(COMEBACK_TIMEOUT_MS, holder_session_event, tp);
  zkrc_session *ss = successor_session();
  holder_take(tp, hs, path, 1);
  zkrc_lock *slk = NULL;
  zkrc_election *se = NULL;
  successor_wait(tp, ss, zh, path, &slk, &se);
  sample_healthy(tp, 200);
  int64_t id = zkrc_session_id(hs);
  int64_t token = 0;
  if (k == ELECTION)
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_token(tp->e, &token));

  /* Cut (every connection through the proxy dropped, new ones refused) ... */
  CU_ASSERT_EQUAL_FATAL(zkrc_proxy_refuse(zkt_ensemble(), 0, 1), 0);
  if (trial_wait(tp, &tp->suspended_at, 10000) <= 0) {
    zkrc_proxy_refuse(zkt_ensemble(), 0, 0); /* for the tests that follow */
    CU_FAIL_FATAL("not suspended while the proxy refused");
  }
  /* ... and back, slowly. */
  CU_ASSERT_EQUAL(zkrc_proxy_delay(zkt_ensemble(), 0, COMEBACK_DELAY_MS), 0);
  CU_ASSERT_EQUAL(zkrc_proxy_refuse(zkt_ensemble(), 0, 0), 0);
  int64_t back_at = trial_wait(tp, &tp->back_at, 10000);
  int64_t session_back_at = trial_get(tp, &tp->session_back_at);
  CU_ASSERT_EQUAL(zkrc_proxy_delay(zkt_ensemble(), 0, 0), 0);

  CU_ASSERT_FATAL(back_at > 0);
  CU_ASSERT_FATAL(session_back_at > 0);
  CU_ASSERT_EQUAL(zkrc_session_id(hs), id); /* the same session */
  double recheck_ms = (back_at - session_back_at) / 1000.0;
  /* The re-check is a round trip through the slowed proxy, sent once the
   * session is back; a few ms of slack for the session's listener, which
   * may be told a little after the recipes' own handler sent it. */
  CU_ASSERT(recheck_ms >= 2 * COMEBACK_DELAY_MS - 10);
  g_mutex_lock(&tp->mu);
  printf("\n    %s: told it still holds %.1f ms after its session was back "
         "(a round trip through the proxy: >= %d ms; session suspended %d, "
         "reconnected %d times; holder suspended %d times) ",
         kind_name(k), recheck_ms, 2 * COMEBACK_DELAY_MS, tp->session_drops,
         tp->session_backs, tp->suspended_count);
  g_mutex_unlock(&tp->mu);
  /* Held when told, and ever since; nothing lost, nobody else told. */
  if (k != BLOCKING) {
    CU_ASSERT_EQUAL(tp->held_at_back, 1);
    CU_ASSERT(tp->lease_at_back > 0);
  }
  CU_ASSERT_EQUAL(held_now(tp), 1);
  CU_ASSERT(lease_now(tp) > 0);
  CU_ASSERT_EQUAL(tp->lost_count, 0);
  CU_ASSERT_EQUAL(tp->back_count, 1);
  CU_ASSERT_EQUAL(trial_get(tp, &tp->succ_at), 0);
  if (k == ELECTION) {
    int64_t again = 0;
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_token(tp->e, &again));
    CU_ASSERT_EQUAL(again, token); /* the same leadership */
  }

  /* The holder lets go: only now is the successor told. */
  if (k == BLOCKING)
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(tp->lk));
  else if (k == NONBLOCKING)
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_hold_release(tp->hold));
  else
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_resign(tp->e));
  CU_ASSERT(trial_wait(tp, &tp->succ_at, 10000) > 0);
  ZKT_ASSERT_RC(ZKRC_OK, tp->succ_status);

  finish_trial(tp, se, slk, hs, ss, zh);
  g_free(path);
}

static void test_blocking_hold_survives_a_connection_that_comes_back(void) {
  run_comeback(BLOCKING);
}

static void test_nonblocking_hold_survives_a_connection_that_comes_back(void) {
  run_comeback(NONBLOCKING);
}

static void test_leader_survives_a_connection_that_comes_back(void) {
  run_comeback(ELECTION);
}

static void test_blocking_hold_is_lost_before_the_successor_holds(void) {
  partitions(BLOCKING);
}

static void test_nonblocking_hold_is_lost_before_the_successor_holds(void) {
  partitions(NONBLOCKING);
}

static void test_leader_is_revoked_before_the_successor_leads(void) {
  partitions(ELECTION);
}

static void test_reader_is_lost_before_the_waiting_writer_holds(void) {
  partitions(READER);
}

static void add_suites(void) {
  zkt_configure(3, 1);
  ZKT_SUITE("partition",
            {"blocking hold is lost before the successor holds",
             test_blocking_hold_is_lost_before_the_successor_holds},
            {"non-blocking hold is lost before the successor holds",
             test_nonblocking_hold_is_lost_before_the_successor_holds},
            {"leader is revoked before the successor leads",
             test_leader_is_revoked_before_the_successor_leads},
            {"reader is lost before the waiting writer holds",
             test_reader_is_lost_before_the_waiting_writer_holds},
            {"blocking hold survives a connection that comes back",
             test_blocking_hold_survives_a_connection_that_comes_back},
            {"non-blocking hold survives a connection that comes back",
             test_nonblocking_hold_survives_a_connection_that_comes_back},
            {"leader survives a connection that comes back",
             test_leader_survives_a_connection_that_comes_back});
}

int main(void) { return zkt_run("test_partition", add_suites); }
