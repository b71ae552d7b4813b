/*
 * The lock family's non-blocking forms on a GLib main context (issue 15):
 * the semaphore's (zkrc_semaphore_acquire_async), the multi-lock's
 * (zkrc_multilock_acquire_async) and the read-write lock's sides (zkrc_lock
 * holds), with the GLib executor (zkrecipes/glib.h), against a real
 * single-member ensemble.  test_async.c does the same for the lock and the
 * election.
 *
 * Each session under test uses the GLib executor on a GMainContext of the
 * test's; the test iterates it (loop_run_until, bounded), except in the
 * first test, where a thread of its own runs it.  Every callback records
 * the thread it runs on; each test asserts that they all ran on the thread
 * iterating the context, and never on a ZooKeeper completion thread of the
 * session (asked of the ZooKeeper handle itself, zoo_aexists).  CUnit's
 * asserts are not thread-safe: callbacks only record.
 *
 * A second session with the default executor plays the other client (its
 * blocking calls from the test's thread), and a raw ZooKeeper handle
 * checks the servers' view.
 */
#include "config.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "glib_loop.h"
#include "testutil.h"
#include "zkrecipes/glib.h"

/* Upper time bounds stretch under valgrind; lower bounds never do. */
static int slow(int ms) { return getenv("ZKR_UNDER_VALGRIND") ? ms * 4 : ms; }

/* ============================================================ threads */

/* The threads callbacks ran on (distinct ones, in order of first sight),
 * and the ZooKeeper completion threads seen by zk_thread_note(). */
#define MAX_SEEN 8
static GMutex seen_mu;
static pthread_t cb_threads[MAX_SEEN], zk_threads[MAX_SEEN];
static int n_cb_threads, n_zk_threads;
static int cb_calls;

static void add_thread(pthread_t *v, int *n, pthread_t t) {
  for (int i = 0; i < *n; i++)
    if (pthread_equal(v[i], t))
      return;
  if (*n < MAX_SEEN)
    v[(*n)++] = t;
}

/* Every callback of the tests calls this first. */
static void note_thread(void) {
  g_mutex_lock(&seen_mu);
  add_thread(cb_threads, &n_cb_threads, pthread_self());
  cb_calls++;
  g_mutex_unlock(&seen_mu);
}

static void reset_threads(void) {
  g_mutex_lock(&seen_mu);
  n_cb_threads = n_zk_threads = cb_calls = 0;
  g_mutex_unlock(&seen_mu);
}

typedef struct zk_probe {
  GMutex mu;
  GCond cond;
  gboolean seen;
} zk_probe;

static void zk_thread_seen(int rc, const struct Stat *st, const void *data) {
  zk_probe *p = (zk_probe *)data;
  g_mutex_lock(&seen_mu);
  add_thread(zk_threads, &n_zk_threads, pthread_self());
  g_mutex_unlock(&seen_mu);
  g_mutex_lock(&p->mu);
  p->seen = TRUE;
  g_cond_broadcast(&p->cond);
  g_mutex_unlock(&p->mu);
}

static int ask_exists(zhandle_t *zh, void *arg) {
  return zoo_aexists(zh, "/", 0, zk_thread_seen, arg) == ZOK ? ZKRC_OK
                                                             : ZKRC_ECONNLOSS;
}

/* Learn the thread on which @p s's current ZooKeeper handle completes
 * requests (a ZooKeeper thread, which must never run our callbacks). */
static void zk_thread_note(zkrc_session *s) {
  zk_probe p = {.seen = FALSE};
  g_mutex_init(&p.mu);
  g_cond_init(&p.cond);
  int rc = zkrc_session_with_handle(s, ask_exists, &p);
  ZKT_ASSERT_RC(ZKRC_OK, rc);
  gint64 end = g_get_monotonic_time() + 10 * G_TIME_SPAN_SECOND;
  g_mutex_lock(&p.mu);
  while (rc == ZKRC_OK && !p.seen && g_cond_wait_until(&p.cond, &p.mu, end))
    ;
  gboolean seen = p.seen;
  g_mutex_unlock(&p.mu);
  CU_ASSERT(seen);
  /* zoo_aexists's completion may still be returning: its data is ours. */
  g_mutex_lock(&p.mu);
  g_mutex_unlock(&p.mu);
  g_cond_clear(&p.cond);
  g_mutex_clear(&p.mu);
}

/* Every callback so far ran on @p loop_thread, none on a ZooKeeper
 * thread; at least @p min_calls of them. */
static void assert_threads(pthread_t loop_thread, int min_calls) {
  g_mutex_lock(&seen_mu);
  int on_loop = n_cb_threads == 1 && pthread_equal(cb_threads[0], loop_thread);
  int on_zk = 0;
  for (int i = 0; i < n_cb_threads; i++)
    for (int j = 0; j < n_zk_threads; j++)
      on_zk += pthread_equal(cb_threads[i], zk_threads[j]);
  int calls = cb_calls, zk_known = n_zk_threads;
  g_mutex_unlock(&seen_mu);
  if (!on_loop || on_zk)
    fprintf(stderr, "\ncallbacks ran on %d thread(s), %d of them ZooKeeper's",
            n_cb_threads, on_zk);
  CU_ASSERT(calls >= min_calls);
  CU_ASSERT(calls == 0 || on_loop);
  CU_ASSERT_EQUAL(on_zk, 0);
  CU_ASSERT(zk_known > 0);
}

/* ========================================================== the loop */

/* The loop (glib_loop.h), with the callbacks' threads recorded afresh. */
static void loop_init(loop *lp) {
  reset_threads();
  loop_open(lp);
}

/* A session on @p ex, its ZooKeeper thread noted. */
static zkrc_session *session_on(zkrc_executor *ex) {
  zkrc_session *s = loop_session_on(ex);
  zk_thread_note(s);
  return s;
}

static zkrc_lock *new_lock(zkrc_session *s, const char *path,
                           zkrc_lock_event_fn on_event, void *arg) {
  zkrc_lock_options o;
  zkrc_lock_options_init(&o);
  o.on_event = on_event;
  o.event_arg = arg;
  zkrc_lock *lk = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_new(&lk, s, path, &o), ZKRC_OK);
  return lk;
}

static zkrc_semaphore *new_sem(zkrc_session *s, const char *path, int n,
                               zkrc_semaphore_event_fn on_event, void *arg) {
  zkrc_semaphore_options o;
  zkrc_semaphore_options_init(&o);
  o.on_event = on_event;
  o.event_arg = arg;
  zkrc_semaphore *sem = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_semaphore_new(&sem, s, path, n, &o), ZKRC_OK);
  return sem;
}

static zkrc_rwlock *new_rwlock(zkrc_session *s, const char *path,
                               zkrc_lock_event_fn on_event, void *arg) {
  zkrc_rwlock_options o;
  zkrc_rwlock_options_init(&o);
  o.on_event = on_event;
  o.event_arg = arg;
  zkrc_rwlock *rw = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_rwlock_new(&rw, s, path, &o), ZKRC_OK);
  return rw;
}

/* ==================================================== server's view */

static gboolean keep_polling(gpointer data) { return G_SOURCE_CONTINUE; }

/* zkt_wait_children_or_gone while iterating the loop: the recipes' steps (a
 * semaphore's pool hold after its mutex hold, a set's next member) run
 * there.  A 20 ms timer wakes the loop to look at the servers, whose
 * state no event of ours announces. */
static int loop_wait_children(loop *lp, zhandle_t *zh, const char *path,
                              int want, int timeout_ms) {
  GSource *poll = g_timeout_source_new(20);
  g_source_set_callback(poll, keep_polling, NULL, NULL);
  g_source_attach(poll, lp->ctx);
  zkt_children_want c = {zh, path, want};
  int ok = loop_run_until(lp, zkt_children_want_met, &c, timeout_ms);
  g_source_destroy(poll);
  g_source_unref(poll);
  return ok;
}

static char *sub(const char *path, const char *child) {
  return g_strconcat(path, "/", child, NULL);
}

/* ========================================================== outcomes */

/* What one non-blocking acquisition's completion said, and its events. */
typedef struct rec {
  int calls, status;
  int64_t token, called_ms;
  zkrc_semaphore_lease *lease; /* semaphore */
  zkrc_lock_hold *hold;        /* lock side */
  zkrc_multilock_hold *set;    /* multi-lock */
  int held_at_completion;      /* what is_held said inside the completion */
  int lost, other_events;
  int64_t member_tokens[4]; /* a set's, inside its completion */
} rec;

static GMutex rec_mu; /* for the test whose loop runs in a thread */
static GCond rec_cond;
static unsigned rec_gen; /* news so far, under rec_mu */

static void rec_done(rec *r, int status, int64_t token) {
  g_mutex_lock(&rec_mu);
  r->calls++;
  r->status = status;
  r->token = token;
  r->called_ms = zkt_now_ms();
  rec_gen++;
  g_cond_broadcast(&rec_cond);
  g_mutex_unlock(&rec_mu);
}

static void sem_done(zkrc_semaphore *sem, zkrc_semaphore_lease *lease,
                     const zkrc_semaphore_acquired_info *info, void *arg) {
  int status = info->status;
  int64_t token = info->token;
  note_thread();
  rec *r = arg;
  r->lease = lease;
  r->held_at_completion = lease && zkrc_semaphore_lease_is_held(lease);
  rec_done(r, status, token);
}

static void hold_done(zkrc_lock *lk, zkrc_lock_hold *hold,
                      const zkrc_lock_acquired_info *info, void *arg) {
  note_thread();
  rec *r = arg;
  r->hold = info->status == ZKRC_OK ? hold : NULL;
  r->held_at_completion = zkrc_lock_hold_is_held(hold);
  rec_done(r, info->status, info->token);
}

static void set_done(zkrc_multilock_hold *set,
                     const zkrc_multilock_acquired_info *info, void *arg) {
  note_thread();
  rec *r = arg;
  r->set = info->status == ZKRC_OK ? set : NULL;
  r->held_at_completion = zkrc_multilock_hold_is_held(set);
  for (size_t i = 0; i < zkrc_multilock_hold_count(set) && i < 4; i++)
    (void)zkrc_lock_hold_token(zkrc_multilock_hold_member(set, i),
                               &r->member_tokens[i]); /* left 0 if not */
  rec_done(r, info->status, 0);
}

static void rec_event(rec *r, int event) {
  g_mutex_lock(&rec_mu);
  if (event == ZKRC_LOCK_LOST)
    r->lost++;
  else
    r->other_events++;
  rec_gen++;
  g_cond_broadcast(&rec_cond);
  g_mutex_unlock(&rec_mu);
}

/* A semaphore's events; event_arg is the rec of its one lease. */
static void sem_event(zkrc_semaphore *sem, const zkrc_semaphore_event *info,
                      void *arg) {
  note_thread();
  rec_event(arg, info->type);
}

/* A lock's (a side's, a set member's) events; event_arg is a rec. */
static void lock_event(zkrc_lock *lk, const zkrc_lock_event *info, void *arg) {
  note_thread();
  rec_event(arg, info->type);
}

static int rec_called(void *arg) {
  g_mutex_lock(&rec_mu);
  int calls = ((rec *)arg)->calls;
  g_mutex_unlock(&rec_mu);
  return calls > 0;
}

/* The recs of a test: how many completed. */
typedef struct recs {
  rec *v[8];
  int n, want;
} recs;

static int recs_called(void *arg) {
  recs *rs = arg;
  int called = 0;
  for (int i = 0; i < rs->n; i++)
    called += rec_called(rs->v[i]);
  return called >= rs->want;
}

/* ================================= 1. the loop's thread, not ZooKeeper's */

typedef struct loop_thread {
  loop lp;
  GMainLoop *ml;
  GThread *t;
  pthread_t self;
  GMutex mu;
  GCond cond;
  gboolean started;
} loop_thread;

static gboolean tell_started(gpointer data) {
  loop_thread *lt = data;
  g_mutex_lock(&lt->mu);
  lt->self = pthread_self();
  lt->started = TRUE;
  g_cond_broadcast(&lt->cond);
  g_mutex_unlock(&lt->mu);
  return G_SOURCE_REMOVE;
}

/* The thread that iterates the context, and clears the executor when its
 * loop is quit (the sessions on it are closed by then). */
static gpointer loop_thread_main(gpointer data) {
  loop_thread *lt = data;
  g_main_context_push_thread_default(lt->lp.ctx);
  GSource *s = g_idle_source_new();
  g_source_set_callback(s, tell_started, lt, NULL);
  g_source_attach(s, lt->lp.ctx);
  g_source_unref(s);
  g_main_loop_run(lt->ml);
  zkrc_glib_executor_clear(&lt->lp.ex);
  g_main_context_pop_thread_default(lt->lp.ctx);
  return NULL;
}

static void loop_thread_start(loop_thread *lt) {
  reset_threads();
  g_mutex_init(&lt->mu);
  g_cond_init(&lt->cond);
  lt->started = FALSE;
  lt->lp.ctx = g_main_context_new();
  zkrc_glib_executor_init(&lt->lp.ex, lt->lp.ctx);
  lt->ml = g_main_loop_new(lt->lp.ctx, FALSE);
  lt->t = g_thread_new("loop", loop_thread_main, lt);
  gint64 end = g_get_monotonic_time() + 10 * G_TIME_SPAN_SECOND;
  g_mutex_lock(&lt->mu);
  while (!lt->started && g_cond_wait_until(&lt->cond, &lt->mu, end))
    ;
  g_mutex_unlock(&lt->mu);
  CU_ASSERT_FATAL(lt->started);
}

static void loop_thread_stop(loop_thread *lt) {
  g_main_loop_quit(lt->ml);
  g_main_context_wakeup(lt->lp.ctx);
  g_thread_join(lt->t);
  g_main_loop_unref(lt->ml);
  g_main_context_unref(lt->lp.ctx);
  g_cond_clear(&lt->cond);
  g_mutex_clear(&lt->mu);
}

/* Wait (on the test's thread, while the loop thread runs the callbacks)
 * until @p done(@p arg), at most @p timeout_ms. */
static int wait_recs(int (*done)(void *), void *arg, int timeout_ms) {
  gint64 end = g_get_monotonic_time() + timeout_ms * G_TIME_SPAN_MILLISECOND;
  g_mutex_lock(&rec_mu);
  for (;;) {
    unsigned gen = rec_gen;
    g_mutex_unlock(&rec_mu);
    int ok = done(arg); /* takes rec_mu itself */
    g_mutex_lock(&rec_mu);
    gboolean in_time = TRUE;
    while (!ok && rec_gen == gen && in_time)
      in_time = g_cond_wait_until(&rec_cond, &rec_mu, end);
    if (ok || !in_time)
      break;
  }
  g_mutex_unlock(&rec_mu);
  return done(arg);
}

typedef struct lost_arg {
  rec *v[4];
  int want[4];
  int n;
} lost_arg;

static int all_lost(void *arg) {
  lost_arg *la = arg;
  int lost = 0;
  g_mutex_lock(&rec_mu);
  for (int i = 0; i < la->n; i++)
    lost += la->v[i]->lost >= la->want[i];
  g_mutex_unlock(&rec_mu);
  return lost == la->n;
}

/* A semaphore lease, a set of two locks and a read-write lock's reader,
 * asked for from the test's thread while another thread iterates the
 * loop: their completions, and the LOST events of the session's expiry,
 * all run on the loop's thread, none on a ZooKeeper thread (nor on the
 * asking thread). */
static void test_callbacks_run_on_the_loop_thread(void) {
  loop_thread lt;
  loop_thread_start(&lt);
  zkrc_session *s = session_on(&lt.lp.ex);
  char *base = zkt_path("fam-threads");
  char *sem_path = sub(base, "sem"), *rw_path = sub(base, "rw");
  char *set_paths[2] = {sub(base, "set-a"), sub(base, "set-b")};
  rec lease = {0}, set = {0}, reader = {0};
  rec member_events = {0};
  zkrc_semaphore *sem = new_sem(s, sem_path, 2, sem_event, &lease);
  zkrc_lock *members[2] = {
      new_lock(s, set_paths[1], lock_event, &member_events),
      new_lock(s, set_paths[0], lock_event, &member_events)};
  zkrc_rwlock *rw = new_rwlock(s, rw_path, lock_event, &reader);

  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_acquire_async(sem, slow(10000),
                                                      sem_done, &lease, NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkt_multilock_acquire_async(members, 2, slow(10000),
                                                     set_done, &set, NULL));
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_lock_acquire_async(zkrc_rwlock_reader(rw), slow(10000),
                                        hold_done, &reader, NULL));
  recs all = {{&lease, &set, &reader}, 3, 3};
  CU_ASSERT_FATAL(wait_recs(recs_called, &all, slow(15000)));
  ZKT_ASSERT_RC(ZKRC_OK, lease.status);
  ZKT_ASSERT_RC(ZKRC_OK, set.status);
  ZKT_ASSERT_RC(ZKRC_OK, reader.status);
  CU_ASSERT(lease.held_at_completion && set.held_at_completion &&
            reader.held_at_completion);

  /* The expiry: each held thing is told LOST, on the loop's thread. */
  zkt_reopened ro = {s, zkrc_session_id(s)};
  zkt_expire(s);
  lost_arg la = {{&lease, &member_events, &reader}, {1, 2, 1}, 3};
  CU_ASSERT(wait_recs(all_lost, &la, slow(30000)));
  /* The new ZooKeeper handle's thread, too, once there is one. */
  CU_ASSERT(zkt_wait_for(zkt_session_reopened, &ro, slow(15000)));
  zk_thread_note(s);
  ZKT_ASSERT_RC(ZKRC_ELOCKLOST, zkrc_semaphore_lease_release(lease.lease));
  ZKT_ASSERT_RC(ZKRC_ELOCKLOST, zkrc_multilock_hold_release(set.set));
  ZKT_ASSERT_RC(ZKRC_ELOCKLOST, zkrc_lock_hold_release(reader.hold));

  zkrc_semaphore_free(sem);
  zkrc_lock_free(members[0]);
  zkrc_lock_free(members[1]);
  zkrc_rwlock_free(rw);
  zkrc_session_close(s);
  loop_thread_stop(&lt);
  /* Read once the loop thread is joined. */
  printf("\n    %d callbacks; lost: lease %d, set "
         "members %d, reader %d ",
         cb_calls, lease.lost, member_events.lost, reader.lost);
  assert_threads(lt.self, 3 + 3);
  CU_ASSERT_FALSE(pthread_equal(lt.self, pthread_self()));
  CU_ASSERT_EQUAL(lease.calls + set.calls + reader.calls, 3);
  CU_ASSERT_EQUAL(lease.lost, 1);
  CU_ASSERT_EQUAL(member_events.lost, 2);
  CU_ASSERT_EQUAL(reader.lost, 1);
  for (int i = 0; i < 2; i++)
    g_free(set_paths[i]);
  g_free(sem_path);
  g_free(rw_path);
  g_free(base);
}

/* ====================================== 2. semaphore: two of three */

/* N = 2, three acquisitions from one loop: two complete with their leases,
 * the third waits (its lease node third in line) and completes only after
 * a release, with a larger token. */
static void test_semaphore_admits_two_then_the_third_at_release(void) {
  loop lp;
  loop_init(&lp);
  zkrc_session *s = session_on(&lp.ex);
  zhandle_t *zh = zkt_raw();
  char *path = zkt_path("fam-sem-three");
  char *leases = sub(path, "leases");
  zkrc_semaphore *sem = new_sem(s, path, 2, NULL, NULL);
  rec r[3];
  memset(r, 0, sizeof r);
  for (int i = 0; i < 3; i++)
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_acquire_async(sem, ZKRC_WAIT_FOREVER,
                                                        sem_done, &r[i], NULL));
  recs two = {{&r[0], &r[1], &r[2]}, 3, 2};
  CU_ASSERT_FATAL(loop_run_until(&lp, recs_called, &two, slow(10000)));
  /* Which two is up to the internal mutex's queue: find the waiter. */
  CU_ASSERT_FATAL(loop_wait_children(&lp, zh, leases, 3, slow(10000)));
  loop_run_for(&lp, 500);
  int waiting = -1, admitted = 0;
  for (int i = 0; i < 3; i++) {
    if (r[i].calls == 0)
      waiting = i;
    else
      admitted += r[i].calls == 1 && r[i].status == ZKRC_OK &&
                  r[i].held_at_completion && r[i].token > 0;
  }
  CU_ASSERT_EQUAL(admitted, 2);
  CU_ASSERT_FATAL(waiting >= 0);
  if (waiting < 0) /* not reached: for cppcheck, which does not know that */
    return;
  rec *w = &r[waiting], *first = &r[(waiting + 1) % 3],
      *second = &r[(waiting + 2) % 3];

  int64_t released_ms = zkt_now_ms();
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_lease_release(first->lease));
  CU_ASSERT(loop_run_until(&lp, rec_called, w, slow(10000)));
  ZKT_ASSERT_RC(ZKRC_OK, w->status);
  CU_ASSERT(w->held_at_completion);
  CU_ASSERT(w->called_ms >= released_ms);
  CU_ASSERT(w->token > first->token && w->token > second->token);
  CU_ASSERT(zkrc_semaphore_lease_is_held(second->lease));
  CU_ASSERT_EQUAL(zkt_children_now(zh, leases), 2);

  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_lease_release(second->lease));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_lease_release(w->lease));
  CU_ASSERT(zkt_wait_semaphore_empty(zh, path, slow(5000)));
  loop_run_for(&lp, 200);
  CU_ASSERT_EQUAL(r[0].calls + r[1].calls + r[2].calls, 3);
  zkrc_semaphore_free(sem);
  zkrc_session_close(s);
  loop_clear(&lp);
  assert_threads(pthread_self(), 3);
  zookeeper_close(zh);
  g_free(leases);
  g_free(path);
}

/* ==================================== 3. semaphore: cancel a waiter */

typedef struct cancel_check {
  zhandle_t *zh;
  const char *leases;
  int leases_at_completion;
} cancel_check;

static cancel_check *the_check;

static void sem_done_counting(zkrc_semaphore *sem, zkrc_semaphore_lease *lease,
                              const zkrc_semaphore_acquired_info *info,
                              void *arg) {
  the_check->leases_at_completion =
      zkt_children_now(the_check->zh, the_check->leases);
  sem_done(sem, lease, info, arg);
}

/* N = 1, held by the other client.  Our first waiter holds the internal
 * mutex and waits for a lease (its lease node made), our second waits for
 * the mutex.  Each is cancelled: ECANCELED once, and none of our nodes is
 * left on the servers, under leases or locks. */
static void test_semaphore_cancel_leaves_no_node(void) {
  loop lp;
  loop_init(&lp);
  zkrc_session *s = session_on(&lp.ex);
  zkrc_session *other = zkt_session();
  zhandle_t *zh = zkt_raw();
  char *path = zkt_path("fam-sem-cancel");
  char *leases = sub(path, "leases"), *locks = sub(path, "locks");
  cancel_check cc = {zh, leases, -1};
  the_check = &cc;
  zkrc_semaphore *sem = new_sem(s, path, 1, NULL, NULL);
  zkrc_semaphore *theirs = new_sem(other, path, 1, NULL, NULL);
  zkrc_semaphore_lease *their_lease = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_acquire(theirs, 10000, &their_lease));

  rec in_lease = {0}, in_mutex = {0};
  zkrc_semaphore_lease *p1 = NULL, *p2 = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_acquire_async(sem, ZKRC_WAIT_FOREVER,
                                                      sem_done_counting,
                                                      &in_lease, &p1));
  CU_ASSERT_FATAL(loop_wait_children(&lp, zh, leases, 2, slow(10000)));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_acquire_async(sem, ZKRC_WAIT_FOREVER,
                                                      sem_done_counting,
                                                      &in_mutex, &p2));
  /* The second queues on the internal mutex behind the first. */
  CU_ASSERT_FATAL(loop_wait_children(&lp, zh, locks, 2, slow(10000)));
  loop_run_for(&lp, 200);
  CU_ASSERT_EQUAL(in_lease.calls + in_mutex.calls, 0);

  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_lease_cancel(p2));
  CU_ASSERT(loop_run_until(&lp, rec_called, &in_mutex, slow(5000)));
  ZKT_ASSERT_RC(ZKRC_ECANCELED, in_mutex.status);
  CU_ASSERT_PTR_NULL(in_mutex.lease);
  CU_ASSERT(loop_wait_children(&lp, zh, locks, 1, slow(5000)));

  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_lease_cancel(p1));
  CU_ASSERT(loop_run_until(&lp, rec_called, &in_lease, slow(5000)));
  ZKT_ASSERT_RC(ZKRC_ECANCELED, in_lease.status);
  /* Its lease node was gone when the completion ran; its mutex node goes
   * in the background. */
  CU_ASSERT_EQUAL(cc.leases_at_completion, 1);
  CU_ASSERT(loop_wait_children(&lp, zh, locks, 0, slow(5000)));
  loop_run_for(&lp, 300);
  CU_ASSERT_EQUAL(in_lease.calls, 1);
  CU_ASSERT_EQUAL(in_mutex.calls, 1);
  CU_ASSERT_EQUAL(zkt_children_now(zh, leases), 1); /* theirs alone */
  CU_ASSERT_EQUAL(zkt_children_now(zh, locks), 0);

  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_lease_release(their_lease));
  CU_ASSERT(zkt_wait_semaphore_empty(zh, path, slow(5000)));
  zkrc_semaphore_free(theirs);
  zkrc_semaphore_free(sem);
  zkrc_session_close(other);
  zkrc_session_close(s);
  loop_clear(&lp);
  assert_threads(pthread_self(), 2);
  the_check = NULL;
  zookeeper_close(zh);
  g_free(leases);
  g_free(locks);
  g_free(path);
}

/* ================================================ 4-5. the multi-lock */

#define SET 3

typedef struct set_fixture {
  char *base, *paths[SET];
  zkrc_session *s[2], *other;
  zkrc_lock *locks[SET], *theirs;
  zhandle_t *zh;
} set_fixture;

/* Three locks on two sessions of the loop, listed in reverse path order;
 * the other client holds the path @p taken_by_other (by index in path
 * order). */
static void set_open(set_fixture *f, loop *lp, const char *tag,
                     int taken_by_other) {
  f->base = zkt_path(tag);
  f->s[0] = session_on(&lp->ex);
  f->s[1] = session_on(&lp->ex);
  f->other = zkt_session();
  f->zh = zkt_raw();
  for (int i = 0; i < SET; i++) {
    char name[8];
    snprintf(name, sizeof name, "m%d", i);
    f->paths[i] = sub(f->base, name);
  }
  for (int i = 0; i < SET; i++)
    f->locks[i] = new_lock(f->s[i % 2], f->paths[SET - 1 - i], NULL, NULL);
  f->theirs = new_lock(f->other, f->paths[taken_by_other], NULL, NULL);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(f->theirs, 10000));
}

static void set_close(set_fixture *f, loop *lp) {
  zkrc_lock_free(f->theirs);
  for (int i = 0; i < SET; i++) {
    zkrc_lock_free(f->locks[i]);
    g_free(f->paths[i]);
  }
  zkrc_session_close(f->other);
  zkrc_session_close(f->s[0]);
  zkrc_session_close(f->s[1]);
  loop_clear(lp);
  zookeeper_close(f->zh);
  g_free(f->base);
}

/* The set waits for the other's middle lock (it holds the first one,
 * by path); once that is released it completes once, every member held,
 * each member's token its node's on the servers. */
static void test_set_completes_once_with_all_members_held(void) {
  loop lp;
  loop_init(&lp);
  set_fixture f;
  set_open(&f, &lp, "fam-set", 1);
  rec r = {0};
  zkrc_multilock_hold *h = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkt_multilock_acquire_async(f.locks, SET, slow(20000),
                                                     set_done, &r, &h));
  CU_ASSERT_FATAL(loop_wait_children(&lp, f.zh, f.paths[1], 2, slow(10000)));
  CU_ASSERT_EQUAL(zkt_children_now(f.zh, f.paths[0]), 1);
  CU_ASSERT_EQUAL(zkt_children_now(f.zh, f.paths[2]), 0); /* not asked yet */
  loop_run_for(&lp, 300);
  CU_ASSERT_EQUAL(r.calls, 0);

  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(f.theirs));
  CU_ASSERT_FATAL(loop_run_until(&lp, rec_called, &r, slow(10000)));
  loop_run_for(&lp, 300);
  CU_ASSERT_EQUAL(r.calls, 1);
  ZKT_ASSERT_RC(ZKRC_OK, r.status);
  CU_ASSERT_PTR_EQUAL(r.set, h);
  CU_ASSERT(r.held_at_completion);
  CU_ASSERT(zkrc_multilock_hold_is_held(h));
  int matching = 0;
  for (int i = 0; i < SET; i++) {
    /* Members come in path order. */
    CU_ASSERT_STRING_EQUAL(zkrc_lock_path(zkrc_multilock_hold_lock(h, i)),
                           f.paths[i]);
    struct String_vector v = {0, NULL};
    if (zoo_get_children(f.zh, f.paths[i], 0, &v) == ZOK && v.count == 1) {
      char *node = sub(f.paths[i], v.data[0]);
      matching +=
          r.member_tokens[i] > 0 && zkt_czxid(f.zh, node) == r.member_tokens[i];
      g_free(node);
    }
    deallocate_String_vector(&v);
  }
  CU_ASSERT_EQUAL(matching, SET);

  ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_hold_release(h));
  int gone = 0;
  for (int i = 0; i < SET; i++)
    gone += loop_wait_children(&lp, f.zh, f.paths[i], 0, slow(5000));
  CU_ASSERT_EQUAL(gone, SET);
  loop_run_for(&lp, 200);
  CU_ASSERT_EQUAL(r.calls, 1);
  set_close(&f, &lp);
  assert_threads(pthread_self(), 1);
}

/* The other holds the last lock by path: the set takes the first two,
 * waits, and at its deadline completes once with ETIMEDOUT naming that
 * lock; none of our nodes is left on any path. */
static void test_set_deadline_times_out_and_leaves_no_node(void) {
  loop lp;
  loop_init(&lp);
  set_fixture f;
  set_open(&f, &lp, "fam-set-timeout", SET - 1);
  rec r = {0};
  int64_t t0 = zkt_now_ms();
  ZKT_ASSERT_RC(ZKRC_OK, zkt_multilock_acquire_async(f.locks, SET, 800,
                                                     set_done, &r, NULL));
  CU_ASSERT(loop_wait_children(&lp, f.zh, f.paths[SET - 1], 2, slow(5000)));
  CU_ASSERT_EQUAL(zkt_children_now(f.zh, f.paths[0]), 1);
  CU_ASSERT_EQUAL(zkt_children_now(f.zh, f.paths[1]), 1);
  CU_ASSERT_FATAL(loop_run_until(&lp, rec_called, &r, slow(10000)));
  int64_t took = r.called_ms - t0;
  printf("\n    800 ms deadline: ETIMEDOUT after %" PRId64 " ms ", took);
  ZKT_ASSERT_RC(ZKRC_ETIMEDOUT, r.status);
  CU_ASSERT(took >= 800);
  CU_ASSERT(took <= slow(800 + 1500));
  CU_ASSERT_PTR_NULL(r.set);
  CU_ASSERT_FALSE(r.held_at_completion);
  int gone = 0;
  for (int i = 0; i < SET - 1; i++)
    gone += loop_wait_children(&lp, f.zh, f.paths[i], 0, slow(5000));
  CU_ASSERT_EQUAL(gone, SET - 1);
  CU_ASSERT(loop_wait_children(&lp, f.zh, f.paths[SET - 1], 1,
                               slow(5000))); /* theirs */
  loop_run_for(&lp, 1000); /* past any timer: nothing more comes */
  CU_ASSERT_EQUAL(r.calls, 1);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(f.theirs));
  set_close(&f, &lp);
  assert_threads(pthread_self(), 1);
}

/* ============================ 6. release and free inside completions */

#define NOT_RELEASED 1 /* no zkrecipes code */

/* What a completion frees, and whether it did. */
typedef struct freeing {
  rec r;
  zkrc_lock *lock;     /* freed in the completion */
  zkrc_rwlock *rw;     /* freed in the completion */
  zkrc_lock **members; /* freed in the set's completion */
  size_t n_members;
  int release_rc; /* of the release made inside; NOT_RELEASED: none */
} freeing;

static void hold_done_release_free(zkrc_lock *lk, zkrc_lock_hold *hold,
                                   const zkrc_lock_acquired_info *info,
                                   void *arg) {
  freeing *fr = arg;
  hold_done(lk, hold, info, &fr->r);
  if (info->status == ZKRC_OK)
    fr->release_rc = zkrc_lock_hold_release(hold);
  if (fr->lock)
    zkrc_lock_free(fr->lock);
  if (fr->rw)
    zkrc_rwlock_free(fr->rw);
  fr->lock = NULL;
  fr->rw = NULL;
}

static void sem_done_release(zkrc_semaphore *sem, zkrc_semaphore_lease *lease,
                             const zkrc_semaphore_acquired_info *info,
                             void *arg) {
  int status = info->status;
  freeing *fr = arg;
  sem_done(sem, lease, info, &fr->r);
  if (status == ZKRC_OK)
    fr->release_rc = zkrc_semaphore_lease_release(lease);
}

static void set_done_release_free(zkrc_multilock_hold *set,
                                  const zkrc_multilock_acquired_info *info,
                                  void *arg) {
  freeing *fr = arg;
  set_done(set, info, &fr->r);
  if (info->status == ZKRC_OK)
    fr->release_rc = zkrc_multilock_hold_release(set);
  for (size_t i = 0; i < fr->n_members; i++)
    zkrc_lock_free(fr->members[i]);
  fr->n_members = 0;
}

static int freeings_called(void *arg) {
  freeing **v = arg;
  for (; *v; v++)
    if (!rec_called(&(*v)->r))
      return 0;
  return 1;
}

/* Each completion releases what it was given and frees its recipe: a
 * lock's hold (granted, and one that timed out), two leases of a
 * semaphore of one (the second is admitted once the first's completion
 * released it), a set (granted, and one that timed out: its locks freed
 * in its failure completion) and a read-write lock's writer.  Each
 * completes once, and no node is left. */
static void test_release_and_free_inside_completions(void) {
  loop lp;
  loop_init(&lp);
  zkrc_session *s = session_on(&lp.ex);
  zkrc_session *other = zkt_session();
  zhandle_t *zh = zkt_raw();
  char *base = zkt_path("fam-inside");
  char *lock_path = sub(base, "lock"), *busy_path = sub(base, "zz-busy");
  char *sem_path = sub(base, "sem"), *rw_path = sub(base, "rw");
  char *set_paths[4] = {sub(base, "set-a"), sub(base, "set-b"),
                        sub(base, "set-c"), busy_path};
  zkrc_lock *theirs = new_lock(other, busy_path, NULL, NULL);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(theirs, 10000));

  freeing granted = {.lock = new_lock(s, lock_path, NULL, NULL),
                     .release_rc = NOT_RELEASED};
  freeing timed_out = {.lock = new_lock(s, busy_path, NULL, NULL),
                       .release_rc = NOT_RELEASED};
  zkrc_semaphore *sem = new_sem(s, sem_path, 1, NULL, NULL);
  freeing lease1 = {.release_rc = NOT_RELEASED};
  freeing lease2 = {.release_rc = NOT_RELEASED};
  zkrc_lock *set_ok[2] = {new_lock(s, set_paths[0], NULL, NULL),
                          new_lock(s, set_paths[1], NULL, NULL)};
  zkrc_lock *set_late[2] = {new_lock(s, set_paths[2], NULL, NULL),
                            new_lock(s, set_paths[3], NULL, NULL)};
  freeing set1 = {
      .members = set_ok, .n_members = 2, .release_rc = NOT_RELEASED};
  freeing set2 = {
      .members = set_late, .n_members = 2, .release_rc = NOT_RELEASED};
  freeing writer = {.rw = new_rwlock(s, rw_path, NULL, NULL),
                    .release_rc = NOT_RELEASED};

  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire_async(granted.lock, slow(10000),
                                                 hold_done_release_free,
                                                 &granted, NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire_async(timed_out.lock, 500,
                                                 hold_done_release_free,
                                                 &timed_out, NULL));
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_semaphore_acquire_async(sem, slow(10000), sem_done_release,
                                             &lease1, NULL));
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_semaphore_acquire_async(sem, slow(10000), sem_done_release,
                                             &lease2, NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkt_multilock_acquire_async(set_ok, 2, slow(10000),
                                                     set_done_release_free,
                                                     &set1, NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkt_multilock_acquire_async(set_late, 2, 500,
                                                     set_done_release_free,
                                                     &set2, NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire_async(
                             zkrc_rwlock_writer(writer.rw), slow(10000),
                             hold_done_release_free, &writer, NULL));
  freeing *all[] = {&granted, &timed_out, &lease1, &lease2,
                    &set1,    &set2,      &writer, NULL};
  CU_ASSERT(loop_run_until(&lp, freeings_called, all, slow(15000)));
  loop_run_for(&lp, 800); /* past every timer: nothing more comes */

  ZKT_ASSERT_RC(ZKRC_OK, granted.r.status);
  ZKT_ASSERT_RC(ZKRC_ETIMEDOUT, timed_out.r.status);
  ZKT_ASSERT_RC(ZKRC_OK, lease1.r.status);
  ZKT_ASSERT_RC(ZKRC_OK, lease2.r.status);
  ZKT_ASSERT_RC(ZKRC_OK, set1.r.status);
  ZKT_ASSERT_RC(ZKRC_ETIMEDOUT, set2.r.status);
  ZKT_ASSERT_RC(ZKRC_OK, writer.r.status);
  /* The five granted were released inside (ZKRC_OK), the two that timed
   * out had nothing to release; their recipes were freed there too. */
  int once = 0, released = 0, freed = 0;
  for (int i = 0; all[i]; i++) {
    once += all[i]->r.calls == 1;
    released += all[i]->r.status == ZKRC_OK
                    ? all[i]->release_rc == ZKRC_OK
                    : all[i]->release_rc == NOT_RELEASED;
    freed +=
        all[i]->lock == NULL && all[i]->rw == NULL && all[i]->n_members == 0;
  }
  CU_ASSERT_EQUAL(once, 7);
  CU_ASSERT_EQUAL(released, 7);
  CU_ASSERT_EQUAL(freed, 7);
  /* The second lease was admitted by the first's release inside its
   * completion (N = 1). */
  CU_ASSERT(lease1.r.token != lease2.r.token);

  int gone = loop_wait_children(&lp, zh, lock_path, 0, slow(5000)) +
             loop_wait_children(&lp, zh, rw_path, 0, slow(5000)) +
             zkt_wait_semaphore_empty(zh, sem_path, slow(5000)) +
             loop_wait_children(&lp, zh, busy_path, 1, slow(5000)); /* theirs */
  for (int i = 0; i < 3; i++)
    gone += loop_wait_children(&lp, zh, set_paths[i], 0, slow(5000));
  CU_ASSERT_EQUAL(gone, 7);

  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(theirs));
  zkrc_lock_free(theirs);
  zkrc_semaphore_free(sem);
  zkrc_session_close(other);
  zkrc_session_close(s);
  loop_clear(&lp);
  assert_threads(pthread_self(), 7);
  zookeeper_close(zh);
  for (int i = 0; i < 3; i++)
    g_free(set_paths[i]);
  g_free(lock_path);
  g_free(busy_path);
  g_free(sem_path);
  g_free(rw_path);
  g_free(base);
}

/* =========================== 7. closing the loop with holds pending */

/* Everything a loop may have under way when it is closed: holds granted
 * and holds waiting, of each recipe. */
typedef struct pending_world {
  char *base, *paths[8];
  zkrc_session *s, *other;
  zhandle_t *zh;
  /* ours */
  zkrc_semaphore *sem_busy, *sem_free, *sem_idle;
  zkrc_lock *lock_free, *lock_busy, *set[2];
  zkrc_multilock_hold *set_hold;
  freeing set_freeing; /* its completion frees the set's locks */
  zkrc_rwlock *rw;
  /* theirs */
  zkrc_semaphore *their_sem;
  zkrc_semaphore_lease *their_lease;
  zkrc_lock *their_lock, *their_set_lock;
  zkrc_rwlock *their_rw;
  rec granted[3]; /* a lease, a lock hold, a read hold */
  rec waiting[5]; /* two leases, a lock hold, a set, a write hold */
} pending_world;

enum {
  P_SEM_BUSY,
  P_SEM_FREE,
  P_SEM_IDLE,
  P_LOCK_FREE,
  P_LOCK_BUSY,
  P_SET_A,
  P_SET_B,
  P_RW
};

static void world_open(pending_world *w, loop *lp, const char *tag) {
  static const char *names[8] = {"sem-busy",  "sem-free",  "sem-idle",
                                 "lock-free", "lock-busy", "set-a",
                                 "set-b",     "rw"};
  memset(w, 0, sizeof *w);
  w->base = zkt_path(tag);
  for (int i = 0; i < 8; i++)
    w->paths[i] = sub(w->base, names[i]);
  w->s = session_on(&lp->ex);
  w->other = zkt_session();
  w->zh = zkt_raw();
  w->their_sem = new_sem(w->other, w->paths[P_SEM_BUSY], 1, NULL, NULL);
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_semaphore_acquire(w->their_sem, 10000, &w->their_lease));
  w->their_lock = new_lock(w->other, w->paths[P_LOCK_BUSY], NULL, NULL);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(w->their_lock, 10000));
  w->their_set_lock = new_lock(w->other, w->paths[P_SET_B], NULL, NULL);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(w->their_set_lock, 10000));
  w->their_rw = new_rwlock(w->other, w->paths[P_RW], NULL, NULL);
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_lock_acquire(zkrc_rwlock_reader(w->their_rw), 10000));

  w->sem_busy = new_sem(w->s, w->paths[P_SEM_BUSY], 1, NULL, NULL);
  w->sem_free = new_sem(w->s, w->paths[P_SEM_FREE], 1, NULL, NULL);
  w->sem_idle = new_sem(w->s, w->paths[P_SEM_IDLE], 1, NULL, NULL);
  w->lock_free = new_lock(w->s, w->paths[P_LOCK_FREE], NULL, NULL);
  w->lock_busy = new_lock(w->s, w->paths[P_LOCK_BUSY], NULL, NULL);
  w->set[0] = new_lock(w->s, w->paths[P_SET_A], NULL, NULL);
  w->set[1] = new_lock(w->s, w->paths[P_SET_B], NULL, NULL);
  w->rw = new_rwlock(w->s, w->paths[P_RW], NULL, NULL);

  /* Granted: a lease, a lock hold, a read hold (sharing with theirs). */
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_semaphore_acquire_async(w->sem_free, 10000, sem_done,
                                             &w->granted[0], NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire_async(w->lock_free, 10000, hold_done,
                                                 &w->granted[1], NULL));
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_lock_acquire_async(zkrc_rwlock_reader(w->rw), 10000,
                                        hold_done, &w->granted[2], NULL));
  recs g = {{&w->granted[0], &w->granted[1], &w->granted[2]}, 3, 3};
  CU_ASSERT_FATAL(loop_run_until(lp, recs_called, &g, slow(10000)));
  for (int i = 0; i < 3; i++)
    ZKT_ASSERT_RC(ZKRC_OK, w->granted[i].status);

  /* Waiting: two leases (one for a lease, one for the internal mutex), a
   * lock hold, a set that took its first lock, a write hold. */
  char *leases = sub(w->paths[P_SEM_BUSY], "leases");
  char *locks = sub(w->paths[P_SEM_BUSY], "locks");
  for (int i = 0; i < 2; i++)
    ZKT_ASSERT_RC(ZKRC_OK,
                  zkrc_semaphore_acquire_async(w->sem_busy, ZKRC_WAIT_FOREVER,
                                               sem_done, &w->waiting[i], NULL));
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_lock_acquire_async(w->lock_busy, ZKRC_WAIT_FOREVER,
                                        hold_done, &w->waiting[2], NULL));
  w->set_freeing.members = w->set;
  w->set_freeing.n_members = 2;
  ZKT_ASSERT_RC(ZKRC_OK,
                zkt_multilock_acquire_async(w->set, 2, ZKRC_WAIT_FOREVER,
                                            set_done_release_free,
                                            &w->set_freeing, &w->set_hold));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire_async(zkrc_rwlock_writer(w->rw),
                                                 ZKRC_WAIT_FOREVER, hold_done,
                                                 &w->waiting[4], NULL));
  /* Queued on the servers (the loop is not iterated meanwhile: holds
   * advance on the session's threads, completions wait on the loop). */
  int queued =
      loop_wait_children(lp, w->zh, leases, 2, slow(10000)) +
      loop_wait_children(lp, w->zh, locks, 2, slow(10000)) +
      loop_wait_children(lp, w->zh, w->paths[P_LOCK_BUSY], 2, slow(10000)) +
      loop_wait_children(lp, w->zh, w->paths[P_SET_A], 1, slow(10000)) +
      loop_wait_children(lp, w->zh, w->paths[P_SET_B], 2, slow(10000)) +
      loop_wait_children(lp, w->zh, w->paths[P_RW], 3, slow(10000));
  CU_ASSERT_EQUAL(queued, 6);
  g_free(leases);
  g_free(locks);
}

/* The set's locks are not freed here: a set holds its locks' holds, and
 * its locks may be freed only once its failure is told (multilock.h), so
 * its completion frees them. */
static void world_free_ours(pending_world *w) {
  zkrc_semaphore_free(w->sem_busy);
  zkrc_semaphore_free(w->sem_free);
  zkrc_lock_free(w->lock_free);
  zkrc_lock_free(w->lock_busy);
  zkrc_rwlock_free(w->rw);
  zkrc_semaphore_free(w->sem_idle);
}

/* After the loop was cleared: each waiting acquisition completed once,
 * failed with one of @p a / @p b; nothing of ours is left on the servers,
 * theirs is; then theirs goes. */
static void world_check_close(pending_world *w, int a, int b) {
  w->waiting[3] = w->set_freeing.r;
  CU_ASSERT_EQUAL(w->set_freeing.n_members, 0); /* freed */
  int once = 0;
  for (int i = 0; i < 5; i++) {
    once += w->waiting[i].calls == 1 &&
            (w->waiting[i].status == a || w->waiting[i].status == b);
    if (w->waiting[i].calls != 1 ||
        (w->waiting[i].status != a && w->waiting[i].status != b))
      fprintf(stderr, "\nwaiting %d: %d completion(s), status %s", i,
              w->waiting[i].calls, zkrc_strerror(w->waiting[i].status));
  }
  CU_ASSERT_EQUAL(once, 5);
  for (int i = 0; i < 3; i++)
    CU_ASSERT_EQUAL(w->granted[i].calls, 1);
  char *leases = sub(w->paths[P_SEM_BUSY], "leases");
  char *locks = sub(w->paths[P_SEM_BUSY], "locks");
  int left_as_expected =
      zkt_wait_children_or_gone(w->zh, leases, 1, slow(5000)) +
      zkt_wait_children_or_gone(w->zh, locks, 0, slow(5000)) +
      zkt_wait_semaphore_empty(w->zh, w->paths[P_SEM_FREE], slow(5000)) +
      zkt_wait_children_or_gone(w->zh, w->paths[P_LOCK_FREE], 0, slow(5000)) +
      zkt_wait_children_or_gone(w->zh, w->paths[P_LOCK_BUSY], 1, slow(5000)) +
      zkt_wait_children_or_gone(w->zh, w->paths[P_SET_A], 0, slow(5000)) +
      zkt_wait_children_or_gone(w->zh, w->paths[P_SET_B], 1, slow(5000)) +
      zkt_wait_children_or_gone(w->zh, w->paths[P_RW], 1, slow(5000));
  CU_ASSERT_EQUAL(left_as_expected, 8);
  g_free(leases);
  g_free(locks);

  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_lease_release(w->their_lease));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(w->their_lock));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(w->their_set_lock));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(zkrc_rwlock_reader(w->their_rw)));
  zkrc_semaphore_free(w->their_sem);
  zkrc_lock_free(w->their_lock);
  zkrc_lock_free(w->their_set_lock);
  zkrc_rwlock_free(w->their_rw);
  zkrc_session_close(w->other);
  zookeeper_close(w->zh);
  for (int i = 0; i < 8; i++)
    g_free(w->paths[i]);
  g_free(w->base);
}

/* The recipes freed (the set cancelled: see world_free_ours), the session
 * closed and the executor cleared without the loop being iterated again:
 * the waiting acquisitions complete once each (ECANCELED), inside the
 * clear, on its thread; the granted ones are released without a word;
 * nothing is left (valgrind: nothing leaks). */
static void test_clear_after_free_with_holds_pending(void) {
  loop lp;
  loop_init(&lp);
  pending_world w;
  world_open(&w, &lp, "fam-clear-free");
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_hold_cancel(w.set_hold));
  world_free_ours(&w);
  zkrc_session_close(w.s);
  int before = w.waiting[0].calls + w.waiting[1].calls + w.waiting[2].calls +
               w.set_freeing.r.calls + w.waiting[4].calls;
  loop_clear(&lp);
  CU_ASSERT_EQUAL(before, 0); /* they waited for the loop */
  world_check_close(&w, ZKRC_ECANCELED, ZKRC_ECANCELED);
  assert_threads(pthread_self(), 3 + 5);
}

/* The same, the session closed first and the recipes freed after (an
 * idle semaphore among them): the waiting ones fail with the close
 * (ZKRC_ECLOSED) or the free (ZKRC_ECANCELED), once each. */
static void test_clear_after_close_with_holds_pending(void) {
  loop lp;
  loop_init(&lp);
  pending_world w;
  world_open(&w, &lp, "fam-clear-close");
  zkrc_session_close(w.s);
  world_free_ours(&w);
  loop_clear(&lp);
  world_check_close(&w, ZKRC_ECLOSED, ZKRC_ECANCELED);
  assert_threads(pthread_self(), 3 + 5);
}

/* A semaphore that asked for nothing, freed after its session was closed
 * and the loop ran everything the close posted: the session goes with the
 * semaphore's last member lock, and the free touches nothing of it
 * afterwards (it did: valgrind's invalid reads; without valgrind, GLib
 * criticals and a crash). */
static void test_idle_semaphore_freed_after_close(void) {
  loop lp;
  loop_init(&lp);
  zkrc_session *s = session_on(&lp.ex);
  char *path = zkt_path("fam-idle");
  zkrc_semaphore *sem = new_sem(s, path, 2, NULL, NULL);
  zkrc_session_close(s);
  loop_run_for(&lp, 200);
  zkrc_semaphore_free(sem);
  loop_run_for(&lp, 200);
  loop_clear(&lp);
  g_free(path);
}

/* ================================================================ main */

static void add_suites(void) {
  zkt_configure(1, 0);
  ZKT_SUITE(
      "async-family",
      {"callbacks run on the loop thread",
       test_callbacks_run_on_the_loop_thread},
      {"semaphore admits two then the third at release",
       test_semaphore_admits_two_then_the_third_at_release},
      {"semaphore cancel leaves no node", test_semaphore_cancel_leaves_no_node},
      {"set completes once with all members held",
       test_set_completes_once_with_all_members_held},
      {"set deadline times out and leaves no node",
       test_set_deadline_times_out_and_leaves_no_node},
      {"release and free inside completions",
       test_release_and_free_inside_completions},
      {"clear after free with holds pending",
       test_clear_after_free_with_holds_pending},
      {"clear after close with holds pending",
       test_clear_after_close_with_holds_pending},
      {"idle semaphore freed after close",
       test_idle_semaphore_freed_after_close});
}

int main(void) { return zkt_run("test_async_family", add_suites); }
