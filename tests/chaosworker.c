/*
 * chaosworker: one client of test_chaos, exec'd by it.
 *
 *   chaosworker INSTANCE HOSTS PATH STOREPORT KEY LOGFILE STATUSFILE [OPTION...]
 *     OPTION: elect         take part in an election at PATH instead of
 *                           contending for a lock there
 *             rwlock        contend for a read-write lock at PATH: each hold
 *                           picks its side at random, the write side one
 *                           time in three; a reader reads KEY instead of
 *                           writing it
 *             semaphore=N   take one of the N leases of a semaphore at PATH;
 *                           a lease holder writes KEY.w<INSTANCE>, a key of
 *                           its own (the live control of the capacity rule
 *                           gives one worker N+1)
 *             write-on-read-side  the control of the read-write lock's rule:
 *                           every hold is a writer's (logged "write",
 *                           writing KEY) taken on the read side, as an
 *                           application that picked the wrong side would
 *             read-only     (read-write lock) every hold on the read side
 *             overlap=MS    the capacity controls' cheat, so that the
 *                           overlap they show is certain, not lucky: before
 *                           each acquisition wait until K other workers of
 *                           the recipe hold, and once granted keep the hold
 *                           (before the first write) until K others are
 *                           seen holding beside it (K: a semaphore's N - 1,
 *                           else 1), each wait at most MS ms; logged as
 *                           CONTROL made / missed (chaos.h)
 *             ignore-lost=MS  the control of the strict checker: told LOST
 *                           / REVOKED, keep claiming the hold until another
 *                           worker holds the lock with a higher token (a
 *                           successor), at most MS ms, and only then act on
 *                           it, as a careless application would; logged as
 *                           CONTROL made / missed
 *             partition=N   be a member of a set partitioner at PATH over
 *                           the N items i00, i01, ...: log each item of the
 *                           share as held from ACQUIRED to RELEASE (before
 *                           confirming it), FAILURE or SIGTERM (before
 *                           leaving); after a FAILURE join again with a new
 *                           session (no store, no writes)
 *             ignore-failure  the partitioner's control: never log an item
 *                           as ended by RELEASE or FAILURE (keep claiming
 *                           it), as a careless application would
 *             runner        take turns at PATH with a runner
 *                           (zkrc_runner, requeue): each turn is a hold,
 *                           its work function's writes the lock's; its
 *                           cancellation for a loss (seen by a watcher
 *                           thread the moment it fires) and the LOST event
 *                           are its LOST, the function's return its
 *                           release
 *
 * Loops until SIGTERM: get the lock, a side of the read-write lock or a
 * lease (with a deadline) or wait to be elected, write KEY to the fenced
 * store CHAOS_WRITES times with the hold's fencing token (a reader reads it
 * instead; pausing CHAOS_WORK_MS between steps, as if working), release or
 * resign.  It never asks the library whether it still holds the
 * lock before writing - a careless client on purpose, so that a client
 * frozen or partitioned past its session timeout does send stale writes,
 * and the test can check that the store refuses them.  While the test sets
 * its slot's linger flag (during a partition aimed at it), a holder keeps
 * holding between two writes until it is told LOST (REVOKED), as a long
 * piece of work would: that is what lets the test measure how long before
 * its successor's grant a cut-off holder was told.
 * Everything it does goes to LOGFILE (format in chaos.h); what it is doing
 * right now goes to its slot of STATUSFILE.
 *
 * Environment: CHAOS_SESSION_MS (2000), CHAOS_ACQUIRE_MS (8000),
 * CHAOS_WRITES (3), CHAOS_WORK_MS (30).
 * Exit status: 0 after SIGTERM; 4 when the library returned an error that no
 * fault can explain (a misuse code such as ZKRC_EINVAL or ZKRC_ENOTOWNER);
 * 2 for bad arguments.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <zkrecipes.h>

#include "chaos.h"
#include "chaos_worker.h"
#include "fenced-store.h"

static zkrc_session *session;
static int ignore_lost_ms;     /* the control: see above */
static int write_on_read_side; /* the read-write lock's control: above */
static int read_only;          /* a reader only: above */
static int overlap_ms;         /* the capacity controls' cheat: above */
/* The token of the hold (leadership) the worker was last told it lost. */
static int64_t lost_token = -2;
static unsigned side_seed; /* rand_r() state of the read-write lock's sides */

/* Election mode: what the callback was last told, under leader_mu. */
static pthread_mutex_t leader_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t leader_cv; /* on CLOCK_MONOTONIC: main() */
static int leader_n;             /* leaderships told so far */
static int64_t leader_token;     /* the token of the latest one */

/* ------------------------------------------------------------ callbacks */

static void on_session(zkrc_session *s, const zkrc_session_event *ev_,
                       void *arg) {
  zkrc_session_event_type ev = ev_->type;
  record_session_event(s, ev);
  if (ev == ZKRC_SESSION_EVENT_LOST) {
    /* The lease's own measure of this loss's delivery (its probe ran on
     * the executor before the listeners): every loss so far, summed. */
    zkrc_session_stats st;
    if (zkrc_session_get_stats(s, &st, sizeof st) == ZKRC_OK)
      record("LEASE losses %" PRIu64 " delivered %" PRIu64
             " delivery_us_sum %.0f late %" PRIu64,
             st.lease_losses, st.loss_delivery.count,
             st.loss_delivery.sum_seconds * 1e6, st.late_losses);
  }
}

/* ------------------------------------------------------------ controls */

/* How many other workers of our recipe claim a hold right now (their
 * slots' holding flag) with a token above @p above.  Instances are
 * numbered in the order they were started: the scan ends after a run of
 * slots no worker has taken. */
static int others_holding(int64_t above) {
  int n = 0;
  int i = 0;
  for (chaos_slot *o; (o = next_other_worker(&i)) != NULL;) {
    if (o->kind == slot->kind &&
        __atomic_load_n(&o->holding, __ATOMIC_ACQUIRE) &&
        __atomic_load_n(&o->token, __ATOMIC_ACQUIRE) > above)
      n++;
  }
  return n;
}

/* Wait until @p want others hold at once (others_holding(@p above)), at
 * most @p ms.  Returns 1 when they were seen, 0 at the deadline, -1 when
 * SIGTERM ended the wait (the run is over: the others are leaving). */
static int wait_for_others(int want, int64_t above, int ms) {
  int64_t deadline = chaos_now_us() + (int64_t)ms * 1000;
  while (others_holding(above) < want) {
    if (stopping)
      return -1;
    if (chaos_now_us() >= deadline)
      return 0;
    usleep(2000);
    progress();
  }
  return 1;
}

/* A control's cheat, while the hold with @p token is still claimed (its
 * holding flag set): stay until @p want others are seen holding beside it,
 * at most @p ms.  Seen, the overlap is certain: their grants were recorded
 * before they set their flags, and this hold's end will be recorded after
 * this record. */
static void overstay(int want, int64_t above, int64_t token, int ms) {
  __atomic_store_n(&slot->control_waiting, 1, __ATOMIC_RELEASE);
  control_done(wait_for_others(want, above, ms), token);
}

/* Does the worker claim the hold with @p token (not given back yet)? */
static int claims(int64_t token) {
  return __atomic_load_n(&slot->holding, __ATOMIC_ACQUIRE) &&
         __atomic_load_n(&slot->token, __ATOMIC_ACQUIRE) == token;
}

/* Told LOST (REVOKED): the hold with @p token ends now, or, for the
 * control, once a successor holds. */
static void told_lost(const char *event, int reason, int64_t token, int zk) {
  if (ignore_lost_ms > 0 && claims(token))
    overstay(1, token, token, ignore_lost_ms);
  if (claims(token)) /* cleared before the record that ends the hold */
    __atomic_store_n(&slot->holding, 0, __ATOMIC_RELEASE);
  record("LOCKEVENT %s %s %" PRId64 " %d", event, zkrc_err_name(reason), token,
         zk);
  __atomic_store_n(&lost_token, token, __ATOMIC_RELEASE);
}

static void lock_event(zkrc_lock_event_type event, int reason, int64_t token,
                       int zk) {
  if (event == ZKRC_LOCK_LOST)
    told_lost("lost", reason, token, zk);
  else
    record("LOCKEVENT %s %s %" PRId64 " %d", zkrc_lock_event_name(event),
           zkrc_err_name(reason), token, zk);
}

/* A lock's or a read-write lock side's events. */
static void on_lock_event(zkrc_lock *lk, const zkrc_lock_event *info,
                          void *arg) {
  lock_event(info->type, info->reason, info->token, info->zk_error);
}

/* A lease's events: the same records as a lock's. */
static void on_lease_event(zkrc_semaphore *sem,
                           const zkrc_semaphore_event *info, void *arg) {
  lock_event(info->type, info->reason, info->token, info->zk_error);
}

/* Election mode: ELECTED is the grant (an ACQ record, numbered here), and
 * REVOKED the loss (a LOCKEVENT lost record), so that one checker reads
 * both kinds of run. */
static void on_election_event(zkrc_election *e, const zkrc_election_event *info,
                              void *arg) {
  if (info->type == ZKRC_ELECTION_ELECTED) {
    pthread_mutex_lock(&leader_mu);
    int n = ++leader_n;
    leader_token = info->token;
    record("ACQ %d ZKRC_OK %" PRId64 " 0 0", n, info->token);
    pthread_cond_broadcast(&leader_cv);
    pthread_mutex_unlock(&leader_mu);
  } else if (info->type == ZKRC_ELECTION_REVOKED) {
    told_lost("lost", info->reason, info->token, info->zk_error);
  } else {
    record("LOCKEVENT failed %s %" PRId64 " %d", zkrc_err_name(info->reason),
           info->token, info->zk_error);
  }
}

/* --------------------------------------------------------------- client */

/* Codes no fault can explain: the worker uses the API wrongly, or the
 * library lost track of its own state. */
static int misuse(int rc) {
  return rc == ZKRC_EINVAL || rc == ZKRC_ENOTOWNER || rc == ZKRC_ECLOSED ||
         rc == ZKRC_ECANCELED || rc == ZKRC_EOVERFLOW || rc == ZKRC_ENOMEM ||
         rc == ZKRC_ESTATE;
}

static void store_write(int port, const char *key, int instance, int hold,
                        int k, int64_t token, int held) {
  char request[FENCED_MAX_LINE], reply[FENCED_MAX_LINE], result[64];
  snprintf(request, sizeof request, "WRITE %s %" PRId64 " w%d.%d.%d", key,
           token, instance, hold, k);
  int64_t start = chaos_now_us();
  if (fenced_request(port, request, reply, sizeof reply, 3000) != 0)
    snprintf(result, sizeof result, "ERR:%d", errno);
  else if (strncmp(reply, "OK ", 3) == 0)
    snprintf(result, sizeof result, "OK");
  else if (strncmp(reply, "REFUSED ", 8) == 0)
    snprintf(result, sizeof result, "REFUSED");
  else
    snprintf(result, sizeof result, "ERR:reply");
  record("WRITE %d %d %" PRId64 " %d %s %" PRId64, hold, k, token, held, result,
         chaos_now_us() - start);
}

/* A reader's step: read @p key and record the token its value was written
 * with.  Readers do not write: the store fences writers by the highest
 * token per key, and readers admitted together hold tokens in no
 * particular order (zkrecipes/rwlock.h), so their writes would refuse each
 * other.  What a read can show instead is a writer's data newer than the
 * reader's own token - written while (or after) the reader was cut off -
 * which the test counts. */
static void store_read(int port, const char *key, int hold, int k,
                       int64_t token, int held) {
  char request[FENCED_MAX_LINE], reply[FENCED_MAX_LINE], result[64];
  snprintf(request, sizeof request, "READ %s", key);
  int64_t start = chaos_now_us(), seen;
  if (fenced_request(port, request, reply, sizeof reply, 3000) != 0)
    snprintf(result, sizeof result, "ERR:%d", errno);
  else if (sscanf(reply, "VALUE %*s %" SCNd64, &seen) == 1)
    snprintf(result, sizeof result, "%" PRId64, seen);
  else if (strncmp(reply, "NONE ", 5) == 0)
    snprintf(result, sizeof result, "NONE");
  else
    snprintf(result, sizeof result, "ERR:reply");
  record("READ %d %d %" PRId64 " %d %s %" PRId64, hold, k, token, held, result,
         chaos_now_us() - start);
}

/* The recipe the worker exercises: a lock, an election, a read-write lock
 * or a semaphore, behind the same three steps. */
typedef struct recipe {
  zkrc_lock *lk; /* the lock, or the read-write lock's side of this hold */
  zkrc_election *el;
  zkrc_rwlock *rw;
  zkrc_semaphore *sem;
  zkrc_semaphore_lease *lease; /* the semaphore's lease of this hold */
  int acquire_ms;
  int last_n;    /* election: the last leadership taken up */
  int max_lease; /* semaphore: its N */
} recipe;

#define MIN(a, b) ((a) < (b) ? (a) : (b))

/* Wait on leader_cv (leader_mu held) until @p until at most (chaos_now_us
 * time; the condition variable runs on CLOCK_MONOTONIC, see main()). */
static void wait_leader_cv(int64_t until) {
  struct timespec ts = {.tv_sec = until / 1000000,
                        .tv_nsec = (long)(until % 1000000) * 1000};
  pthread_cond_timedwait(&leader_cv, &leader_mu, &ts);
}

/* Get the lock or wait to be elected.  Returns a ZKRC code, and with
 * ZKRC_OK the hold's number and token (-1 when lost already: the writes
 * below are then stale). */
static int take(recipe *r, int attempt, int *n, int64_t *token) {
  int64_t start = chaos_now_us();
  const char *side = "";
  if (r->rw) { /* a writer one time in three */
    int write =
        write_on_read_side || (!read_only && rand_r(&side_seed) % 3 == 0);
    r->lk = write && !write_on_read_side ? zkrc_rwlock_writer(r->rw)
                                         : zkrc_rwlock_reader(r->rw);
    side = write ? " write" : " read";
    slot->shared = !write;
  }
  if (r->lk) {
    int rc = zkrc_lock_acquire(r->lk, r->acquire_ms);
    int zk = rc == ZKRC_OK ? 0 : zkrc_last_zk_error();
    *n = attempt;
    *token = 0;
    if (rc == ZKRC_OK && zkrc_lock_token(r->lk, token) != ZKRC_OK)
      *token = -1;
    record("ACQ %d %s %" PRId64 " %" PRId64 " %d%s", attempt, zkrc_err_name(rc),
           *token, chaos_now_us() - start, zk, side);
    return rc;
  }
  if (r->sem) {
    int rc = zkrc_semaphore_acquire(r->sem, r->acquire_ms, &r->lease);
    int zk = rc == ZKRC_OK ? 0 : zkrc_last_zk_error();
    *n = attempt;
    *token = 0;
    if (rc == ZKRC_OK)
      (void)zkrc_semaphore_lease_token(r->lease, token); /* 0: lost */
    if (rc == ZKRC_OK && *token == 0)                    /* lost already */
      *token = -1;
    record("ACQ %d %s %" PRId64 " %" PRId64 " %d", attempt, zkrc_err_name(rc),
           *token, chaos_now_us() - start, zk);
    return rc;
  }
  /* Wait for an ELECTED after the last leadership we gave back: its
   * callback has recorded the grant (the told time).  In slices, so that
   * SIGTERM is seen. */
  int64_t deadline = start + (int64_t)r->acquire_ms * 1000;
  int rc = ZKRC_OK;
  pthread_mutex_lock(&leader_mu);
  while (leader_n <= r->last_n && rc == ZKRC_OK) {
    int64_t now = chaos_now_us();
    if (stopping)
      rc = ZKRC_ECANCELED; /* no error: the loop ends */
    else if (now >= deadline)
      rc = ZKRC_ETIMEDOUT;
    else
      wait_leader_cv(MIN(deadline, now + 100000));
  }
  *n = r->last_n = leader_n;
  *token = leader_token;
  pthread_mutex_unlock(&leader_mu);
  if (rc != ZKRC_OK && rc != ZKRC_ECANCELED)
    record("ACQ 0 %s 0 %" PRId64 " 0", zkrc_err_name(rc),
           chaos_now_us() - start);
  return rc;
}

/* Release the lock or resign.  A hold already lost is no error. */
static int give_back(recipe *r, int n) {
  __atomic_store_n(&slot->holding, 0, __ATOMIC_RELEASE); /* before start */
  int64_t start = chaos_now_us();
  int rc;
  if (r->sem) {
    rc = zkrc_semaphore_lease_release(r->lease); /* frees it */
    r->lease = NULL;
  } else {
    rc = r->lk ? zkrc_lock_release(r->lk) : zkrc_election_resign(r->el);
  }
  int zk = rc == ZKRC_OK ? 0 : zkrc_last_zk_error();
  record("REL %d %s %" PRId64 " %d", n, zkrc_err_name(rc),
         chaos_now_us() - start, zk);
  return rc == ZKRC_OK || rc == ZKRC_ELOCKLOST || rc == ZKRC_ENOTLEADER
             ? ZKRC_OK
             : rc;
}

/* While the test asks it to (a partition aimed at this holder), keep
 * holding until told that the hold with @p token is lost. */
static void linger(int64_t token) {
  while (__atomic_load_n(&slot->linger, __ATOMIC_ACQUIRE) && !stopping &&
         __atomic_load_n(&lost_token, __ATOMIC_ACQUIRE) != token) {
    usleep(5000);
    progress();
  }
}

/* The capacity controls' K (overlap=MS): others a hold of ours must be
 * seen beside to exceed the capacity. */
static int overlap_want(const recipe *r) {
  return r->sem ? r->max_lease - 1 : 1;
}

static int still_held(recipe *r) {
  if (r->sem)
    return zkrc_semaphore_lease_is_held(r->lease);
  return r->lk ? zkrc_lock_is_held(r->lk) : zkrc_election_is_leader(r->el);
}

/* One hold: the writes (a reader's reads), then the release.  A lease
 * holder writes a key of its own: up to N leases run at once, with tokens
 * in no order among them, so one key fenced by its highest token would
 * refuse the writes of holders that legitimately hold beside a newer one.
 * Its own key keeps the journal checks (every answer journaled, every
 * write carrying its hold's token) and the timings; the capacity itself is
 * the hold checker's to judge. */
static int hold_and_write(recipe *r, int port, const char *key, int instance,
                          int n, int64_t token, int writes, int work_ms) {
  slot->hold = n;
  __atomic_store_n(&slot->token, token, __ATOMIC_RELEASE);
  __atomic_store_n(&slot->holding, token != -1, __ATOMIC_RELEASE);
  if (overlap_ms > 0 && token != -1)
    overstay(overlap_want(r), INT64_MIN, token, overlap_ms);
  char own_key[FENCED_MAX_KEY + 1];
  if (r->sem) {
    snprintf(own_key, sizeof own_key, "%s.w%d", key, instance);
    key = own_key;
  }
  for (int k = 1; k <= writes; k++) {
    slot->writes_left = writes - k + 1;
    if (k > 1) {
      set_phase(CHAOS_WORKING);
      usleep((useconds_t)work_ms * 1000);
      linger(token);
    }
    set_phase(CHAOS_WRITING);
    /* Asked for the record only: the write goes out whatever it says. */
    int held = still_held(r);
    if (r->rw && slot->shared)
      store_read(port, key, n, k, token, held);
    else
      store_write(port, key, instance, n, k, token, held);
    progress();
  }
  slot->writes_left = 0;
  set_phase(CHAOS_RELEASING);
  int rc = give_back(r, n);
  progress();
  return rc;
}

/* Which recipe: chosen by the options. */
enum mode {
  MODE_LOCK = CHAOS_KIND_LOCK,
  MODE_ELECT = CHAOS_KIND_ELECTION,
  MODE_RWLOCK = CHAOS_KIND_RWLOCK,
  MODE_SEMAPHORE = CHAOS_KIND_SEMAPHORE
};
static const char *const mode_names[] = {"lock_new", "election", "rwlock_new",
                                         "semaphore_new"};

static int make_recipe(recipe *r, int instance, const char *path,
                       enum mode mode) {
  static char id[32];
  snprintf(id, sizeof id, "w%d", instance);
  if (mode == MODE_RWLOCK) {
    zkrc_rwlock_options ro;
    zkrc_rwlock_options_init(&ro);
    ro.participant_id = id;
    ro.on_event = on_lock_event;
    return zkrc_rwlock_new(&r->rw, session, path, &ro);
  }
  if (mode == MODE_SEMAPHORE) {
    zkrc_semaphore_options so;
    zkrc_semaphore_options_init(&so);
    so.participant_id = id;
    so.on_event = on_lease_event;
    return zkrc_semaphore_new(&r->sem, session, path, r->max_lease, &so);
  }
  if (mode == MODE_ELECT) {
    zkrc_election_options eo;
    zkrc_election_options_init(&eo);
    eo.participant_id = id;
    eo.on_event = on_election_event;
    int rc = zkrc_election_new(&r->el, session, path, &eo);
    return rc == ZKRC_OK ? zkrc_election_join(r->el) : rc;
  }
  zkrc_lock_options lo;
  zkrc_lock_options_init(&lo);
  lo.participant_id = id;
  lo.on_event = on_lock_event;
  return zkrc_lock_new(&r->lk, session, path, &lo);
}

/* Election mode, on SIGTERM: a leadership told since the last resignation
 * ends when we leave (the REVOKED of a leave may come after the successor's
 * ELECTED, and zkrc_election_free() drops it). */
static void leave_election(recipe *r, int last_given_back) {
  int64_t start = chaos_now_us();
  int rc = zkrc_election_leave(r->el);
  pthread_mutex_lock(&leader_mu);
  int n = leader_n;
  pthread_mutex_unlock(&leader_mu);
  if (n > last_given_back)
    record("REL %d %s %" PRId64 " 0", n, zkrc_err_name(rc),
           chaos_now_us() - start);
}

/* ------------------------------------------------------------ runner */

/* What a runner's work function needs (runner mode). */
typedef struct runner_ctx {
  int port, instance, writes, work_ms;
  const char *key;
} runner_ctx;

/* The watcher of one turn's cancellation: records a loss the moment the
 * cancellation fires for one (the runner's own thread fires it by the
 * lease's deadline, whatever the executor is doing), until told to stop. */
typedef struct turn_watch {
  zkrc_cancel *cancel;
  int64_t token;
  volatile int stop;
} turn_watch;

/* The token of the runner's turn whose loss was recorded: the watcher and
 * the LOST event may both see one loss; the first records it. */
static int64_t runner_lost_told = -2;

static void runner_lost(int reason, int64_t token, int zk) {
  if (__atomic_exchange_n(&runner_lost_told, token, __ATOMIC_ACQ_REL) != token)
    told_lost("lost", reason, token, zk);
}

static int loss_reason(int reason) {
  return reason == ZKRC_ESESSIONEXPIRED || reason == ZKRC_ESESSIONLOST ||
         reason == ZKRC_ELOCKLOST;
}

static void *watch_turn(void *arg) {
  turn_watch *tw = arg;
  while (!__atomic_load_n(&tw->stop, __ATOMIC_ACQUIRE)) {
    if (zkrc_cancel_wait(tw->cancel, 10) != ZKRC_OK)
      continue;
    int reason = zkrc_cancel_reason(tw->cancel);
    if (loss_reason(reason))
      runner_lost(reason, tw->token, 0);
    break;
  }
  return NULL;
}

/* One turn: the lock's writes (careless: whatever is_running says), the
 * pauses between them waiting on the cancellation, and while the test
 * asks it to (a partition), holding on until cancelled. */
static int runner_work(zkrc_runner *r, zkrc_cancel *c, int64_t token,
                       void *arg) {
  runner_ctx *x = arg;
  int n = zkrc_runner_turns(r);
  record("ACQ %d ZKRC_OK %" PRId64 " 0 0", n, token);
  slot->hold = n;
  __atomic_store_n(&slot->token, token, __ATOMIC_RELEASE);
  __atomic_store_n(&slot->holding, 1, __ATOMIC_RELEASE);
  turn_watch tw = {.cancel = c, .token = token};
  pthread_t watcher;
  int watching = pthread_create(&watcher, NULL, watch_turn, &tw) == 0;
  for (int k = 1; k <= x->writes; k++) {
    slot->writes_left = x->writes - k + 1;
    if (k > 1) {
      set_phase(CHAOS_WORKING);
      (void)zkrc_cancel_wait(c, x->work_ms);
      while (__atomic_load_n(&slot->linger, __ATOMIC_ACQUIRE) && !stopping &&
             zkrc_cancel_wait(c, 5) == ZKRC_ETIMEDOUT)
        progress();
    }
    set_phase(CHAOS_WRITING);
    store_write(x->port, x->key, x->instance, n, k, token,
                zkrc_runner_is_running(r));
    progress();
  }
  slot->writes_left = 0;
  set_phase(CHAOS_RELEASING);
  __atomic_store_n(&tw.stop, 1, __ATOMIC_RELEASE);
  if (watching) /* a loss it saw is recorded (the control: after its
                 * overstay) before the release */
    pthread_join(watcher, NULL);
  __atomic_store_n(&slot->holding, 0, __ATOMIC_RELEASE);
  record("REL %d ZKRC_OK 0 0", n);
  progress();
  set_phase(CHAOS_ACQUIRING);
  return 0;
}

static void on_runner_event(zkrc_runner *r, const zkrc_runner_event *ev,
                            void *arg) {
  (void)r;
  (void)arg;
  if (ev->type == ZKRC_RUNNER_LOST)
    runner_lost(ev->reason, ev->token, ev->zk_error);
  else
    record("LOCKEVENT %s %s %" PRId64 " %d", zkrc_runner_event_name(ev->type),
           zkrc_err_name(ev->reason), ev->token, ev->zk_error);
}

/* Runner mode: one runner taking turns until SIGTERM. */
static int run_runner(int instance, const char *hosts, const char *path,
                      int port, const char *key) {
  runner_ctx x = {.port = port,
                  .instance = instance,
                  .writes = env_int("CHAOS_WRITES", 3),
                  .work_ms = env_int("CHAOS_WORK_MS", 30),
                  .key = key};
  zkrc_session_options so;
  zkrc_session_options_init(&so);
  so.session_timeout_ms = env_int("CHAOS_SESSION_MS", 2000);
  so.connect_timeout_ms = env_int("CHAOS_ACQUIRE_MS", 8000);
  int rc = zkrc_session_new(&session, hosts, &so);
  if (rc != ZKRC_OK) {
    record("EXIT 4 session %s", zkrc_err_name(rc));
    return 4;
  }
  zkrc_session_add_listener(session, on_session, NULL, NULL);
  static char id[32];
  snprintf(id, sizeof id, "w%d", instance);
  zkrc_runner_options ro;
  zkrc_runner_options_init(&ro);
  ro.requeue = 1;
  ro.participant_id = id;
  ro.on_event = on_runner_event;
  zkrc_runner *r = NULL;
  set_phase(CHAOS_ACQUIRING);
  rc = zkrc_runner_new(&r, session, path, runner_work, &x, &ro);
  if (rc != ZKRC_OK) {
    record("EXIT 4 runner_new %s", zkrc_err_name(rc));
    zkrc_session_close(session);
    return 4;
  }
  /* Waiting for a turn has no deadline: progress is the runner's being
   * alive (a hung turn shows as a write or a release that took too long,
   * or as a worker that does not exit on SIGTERM). */
  while (!stopping) {
    usleep(20000);
    progress();
  }
  zkrc_runner_free(r); /* the function returns: its REL */
  zkrc_session_close(session);
  set_phase(CHAOS_EXITED);
  record("EXIT 0");
  return 0;
}

/* ------------------------------------------------------- partitioner */

/* Partitioner mode: the items of our share, as the application uses them
 * (a NULL-terminated copy), under part_mu. */
static pthread_mutex_t part_mu = PTHREAD_MUTEX_INITIALIZER;
static char **part_owned;
static int ignore_failure; /* the partitioner's control: see above */

/* Our items end now (@p why: "RELEASE", "FAILURE", "STOP"); part_mu held.
 * The control keeps claiming them, except when it stops for good. */
static void items_end_locked(const char *why) {
  if (ignore_failure && strcmp(why, "STOP") != 0)
    return;
  __atomic_store_n(&slot->items, 0, __ATOMIC_RELEASE);
  for (int i = 0; part_owned && part_owned[i]; i++)
    record("ITEM %s END %s", part_owned[i], why);
  zkrc_strv_free(part_owned);
  part_owned = NULL;
}

/* Records an item held from ACQUIRED to its end: "ITEM <item> ACQ" and
 * "ITEM <item> END <why>" (a second ACQ of an item still claimed, by the
 * control, ends the first there: same holder). */
/* The state's word in the chaos log, in capitals as test_chaos.c reads
 * it (the library's names are lower-case). */
static const char *part_word(zkrc_partitioner_state st) {
  switch (st) {
  case ZKRC_PARTITIONER_ALLOCATING:
    return "ALLOCATING";
  case ZKRC_PARTITIONER_ACQUIRED:
    return "ACQUIRED";
  case ZKRC_PARTITIONER_RELEASE:
    return "RELEASE";
  case ZKRC_PARTITIONER_FAILURE:
    return "FAILURE";
  }
  return "?";
}

static void on_partition(zkrc_partitioner *p, const zkrc_partitioner_event *ev,
                         void *arg) {
  zkrc_partitioner_state st = ev->type;
  const char *const *items = ev->items;
  size_t count = ev->count;
  (void)arg;
  pthread_mutex_lock(&part_mu);
  record("PART %s", part_word(st));
  if (st == ZKRC_PARTITIONER_ACQUIRED) {
    items_end_locked("ACQUIRED"); /* nothing, or the control's stale set */
    zkrc_strv_free(part_owned);
    part_owned = calloc(count + 1, sizeof *part_owned);
    for (size_t i = 0; part_owned && i < count; i++) {
      part_owned[i] = strdup(items[i]);
      record("ITEM %s ACQ", items[i]);
      int item = atoi(items[i] + 1); /* "i<n>": published after its ACQ */
      if (item >= 0 && item < 32)
        __atomic_or_fetch(&slot->items, 1u << item, __ATOMIC_ACQ_REL);
    }
    set_phase(CHAOS_WORKING); /* a holder, for the faults aimed at one */
  } else if (st == ZKRC_PARTITIONER_RELEASE || st == ZKRC_PARTITIONER_FAILURE) {
    items_end_locked(part_word(st));
    set_phase(CHAOS_ACQUIRING);
  }
  pthread_mutex_unlock(&part_mu);
  if (st == ZKRC_PARTITIONER_RELEASE) /* stopped using them: confirm */
    zkrc_partitioner_release_set(p);
}

/* One membership: a session, a partitioner, until FAILURE or SIGTERM.
 * Returns a ZKRC code of the set-up (not an error to end on). */
static int partition_round(const char *hosts, const char *path, int instance,
                           int round, const char *const *items, int n,
                           int session_ms, int boundary_ms) {
  zkrc_session_options so;
  zkrc_session_options_init(&so);
  so.session_timeout_ms = session_ms;
  so.connect_timeout_ms = session_ms;
  int rc = zkrc_session_new(&session, hosts, &so);
  if (rc != ZKRC_OK)
    return rc;
  zkrc_session_add_listener(session, on_session, NULL, NULL);
  char id[48];
  snprintf(id, sizeof id, "w%d.%d", instance, round); /* new: a new member */
  zkrc_partitioner_options po;
  zkrc_partitioner_options_init(&po);
  po.identifier = id;
  po.time_boundary_ms = boundary_ms;
  po.on_event = on_partition;
  zkrc_partitioner *p = NULL;
  set_phase(CHAOS_ACQUIRING);
  rc = zkrc_partitioner_new(&p, session, path, items, (size_t)n, &po);
  record("PARTNEW %s %s", id, zkrc_err_name(rc));
  while (rc == ZKRC_OK && !stopping &&
         zkrc_partitioner_get_state(p) != ZKRC_PARTITIONER_FAILURE) {
    usleep(20000);
    progress();
  }
  if (rc == ZKRC_OK) {
    pthread_mutex_lock(&part_mu);
    items_end_locked("STOP"); /* before leaving: no longer used */
    pthread_mutex_unlock(&part_mu);
    zkrc_partitioner_free(p);
  }
  zkrc_session_close(session);
  session = NULL;
  progress();
  return rc;
}

/* Partitioner mode: rounds until SIGTERM, a failed set-up tried again
 * after a backoff (100 ms doubling to 2 s). */
static int run_partitioner(int instance, const char *hosts, const char *path,
                           int n) {
  int session_ms = env_int("CHAOS_SESSION_MS", 2000);
  int boundary_ms = env_int("CHAOS_BOUNDARY_MS", 1000);
  char **items = calloc((size_t)n + 1, sizeof *items);
  for (int i = 0; i < n; i++) {
    items[i] = malloc(16);
    snprintf(items[i], 16, "i%02d", i);
  }
  int backoff_ms = 100, status = 0;
  for (int round = 1; !stopping && status == 0; round++) {
    int rc =
        partition_round(hosts, path, instance, round,
                        (const char *const *)items, n, session_ms, boundary_ms);
    if (rc == ZKRC_EINVAL)
      status = 4;
    else if (rc != ZKRC_OK && !stopping)
      usleep((useconds_t)backoff_ms * 1000);
    backoff_ms = rc == ZKRC_OK ? 100 : MIN(backoff_ms * 2, 2000);
  }
  zkrc_strv_free(items);
  set_phase(CHAOS_EXITED);
  record("EXIT %d", status);
  return status;
}

static int run(int instance, const char *hosts, const char *path, int port,
               const char *key, enum mode mode, int max_lease) {
  int session_ms = env_int("CHAOS_SESSION_MS", 2000);
  int writes = env_int("CHAOS_WRITES", 3);
  int work_ms = env_int("CHAOS_WORK_MS", 30);
  recipe r = {.acquire_ms = env_int("CHAOS_ACQUIRE_MS", 8000),
              .max_lease = max_lease};

  zkrc_session_options so;
  zkrc_session_options_init(&so);
  so.session_timeout_ms = session_ms;
  so.connect_timeout_ms = r.acquire_ms;
  /* Not connected yet is fine: the acquisitions wait for the connection. */
  int rc = zkrc_session_new(&session, hosts, &so);
  if (rc != ZKRC_OK) {
    record("EXIT 4 session %s", zkrc_err_name(rc));
    return 4;
  }
  zkrc_session_add_listener(session, on_session, NULL, NULL);
  if ((rc = make_recipe(&r, instance, path, mode)) != ZKRC_OK) {
    record("EXIT 4 %s %s", mode_names[mode], zkrc_err_name(rc));
    zkrc_election_free(r.el);
    zkrc_session_close(session);
    return 4;
  }

  int status = 0, last_given_back = 0;
  for (int attempt = 1; !stopping && status == 0; attempt++) {
    set_phase(CHAOS_ACQUIRING);
    if (overlap_ms > 0) /* the cheat: ask when the capacity is full */
      wait_for_others(overlap_want(&r), INT64_MIN, overlap_ms);
    int n;
    int64_t token;
    rc = take(&r, attempt, &n, &token);
    progress();
    if (rc == ZKRC_OK) {
      if (hold_and_write(&r, port, key, instance, n, token, writes, work_ms))
        status = 4; /* a release that failed otherwise than as lost */
      last_given_back = n;
    } else if (misuse(rc) && !(rc == ZKRC_ECANCELED && stopping)) {
      status = 4;
    }
    set_phase(CHAOS_IDLE);
  }
  if (r.el)
    leave_election(&r, last_given_back);
  if (r.rw == NULL)
    zkrc_lock_free(r.lk);
  zkrc_rwlock_free(r.rw);
  zkrc_semaphore_free(r.sem);
  zkrc_election_free(r.el);
  zkrc_session_close(session);
  set_phase(CHAOS_EXITED);
  record("EXIT %d", status);
  return status;
}

int main(int argc, char **argv) {
  if (argc < 8) {
    fprintf(stderr, "usage: chaosworker INSTANCE HOSTS PATH STOREPORT KEY "
                    "LOGFILE STATUSFILE "
                    "[elect|rwlock|semaphore=N|partition=N|runner] "
                    "[write-on-read-side] [read-only] [overlap=MS] "
                    "[ignore-lost=MS] [ignore-failure]\n");
    return 2;
  }
  enum mode mode = MODE_LOCK;
  int max_lease = 0, partition_items = 0, runner = 0;
  for (int i = 8; i < argc; i++) {
    if (strcmp(argv[i], "elect") == 0)
      mode = MODE_ELECT;
    else if (strcmp(argv[i], "rwlock") == 0)
      mode = MODE_RWLOCK;
    else if (strncmp(argv[i], "semaphore=", 10) == 0 &&
             (max_lease = atoi(argv[i] + 10)) >= 1)
      mode = MODE_SEMAPHORE;
    else if (strncmp(argv[i], "partition=", 10) == 0 &&
             (partition_items = atoi(argv[i] + 10)) >= 1)
      continue;
    else if (strcmp(argv[i], "ignore-failure") == 0)
      ignore_failure = 1;
    else if (strcmp(argv[i], "runner") == 0)
      runner = 1;
    else if (strcmp(argv[i], "write-on-read-side") == 0)
      write_on_read_side = 1;
    else if (strcmp(argv[i], "read-only") == 0)
      read_only = 1;
    else if (strncmp(argv[i], "overlap=", 8) == 0)
      overlap_ms = atoi(argv[i] + 8);
    else if (strncmp(argv[i], "ignore-lost=", 12) == 0)
      ignore_lost_ms = atoi(argv[i] + 12);
    else
      return 2;
  }
  zkrc_log_from_env();
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&leader_cv, &ca);
  pthread_condattr_destroy(&ca);
  int instance = atoi(argv[1]);
  if (instance < 0 || instance >= CHAOS_MAX_INSTANCES)
    return 2;
  int32_t kind = partition_items > 0 ? CHAOS_KIND_PARTITION
                 : runner            ? CHAOS_KIND_RUNNER
                                     : (int32_t)mode;
  int started =
      chaos_worker_start("chaosworker", argv[6], argv[7], instance, kind);
  if (started != 0)
    return started;
  side_seed = (unsigned)getpid() ^ (unsigned)chaos_now_us();
  if (partition_items > 0)
    return run_partitioner(instance, argv[2], argv[3], partition_items);
  if (runner)
    return run_runner(instance, argv[2], argv[3], atoi(argv[4]), argv[5]);
  return run(instance, argv[2], argv[3], atoi(argv[4]), argv[5], mode,
             max_lease);
}
