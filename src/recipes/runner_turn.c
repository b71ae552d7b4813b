/*
 * The runner's thread (zkrecipes/runner.h): queue on the member, wait for
 * the turn, run the work function in a thread of the turn, watch the hold
 * while it runs (the member's loss, and the lease's deadline, which this
 * thread waits for itself so that the cancellation fires by then whatever
 * the executor is doing), give the hold back once the function returned,
 * and queue again with requeue.
 *
 * Everything here runs with the runner's mutex held except the wait for
 * the work thread's end; the member's non-blocking calls are made under it
 * (runner_private.h).  Acquisitions that fail are asked again after a
 * backoff (100 ms doubling to 5 s); a session's loss or expiry is bounded
 * by the session's own reopening (a session dead for good fails them with
 * ZKRC_ECLOSED), any other failure at most RETRIES times in a row.
 */
#include "config.h"

#include <glib.h>

#include "core/util.h"
#include "recipes/runner_private.h"
#include "zkrecipes/error.h"

#define RETRIES 8
#define BACKOFF_FIRST_MS 100
#define BACKOFF_MAX_MS 5000
#define LOOK_MS 1000 /* an election's leadership looked at while waiting */

/* A failure after which queueing again may succeed. */
static gboolean transient(int reason) {
  switch (reason) {
  case ZKRC_ESESSIONEXPIRED:
  case ZKRC_ESESSIONLOST:
  case ZKRC_ECONNLOSS:
  case ZKRC_ETIMEDOUT:
  case ZKRC_ELOCKLOST:
  case ZKRC_EZOOKEEPER:
    return TRUE;
  default:
    return FALSE;
  }
}

/* Failures the session's reopening bounds (not counted). */
static gboolean session_bounded(int reason) {
  return reason == ZKRC_ESESSIONEXPIRED || reason == ZKRC_ESESSIONLOST;
}

static gpointer work_main(gpointer arg) {
  zkrc_runner *r = arg;
  /* r->cancel and r->token were set before this thread was made. */
  int result = r->work(r, r->cancel, r->token, r->work_arg);
  g_mutex_lock(&r->o.mu);
  r->work_done = 1;
  r->result = result;
  g_cond_broadcast(&r->o.cond);
  g_mutex_unlock(&r->o.mu);
  return NULL;
}

/* The turn's hold, as the member verifies it now: its lease left in ms,
 * 0 once it is not held. */
static int lease_left_locked(zkrc_runner *r) {
  if (r->lk)
    return zkrc_lock_hold_lease_remaining(r->hold);
  if (!r->granted || r->grant_token != r->token)
    return 0;
  /* The election's current leadership must be the turn's: a late ELECTED
   * of an earlier one may have set the grant. */
  int64_t now = 0;
  if (zkrc_election_token(r->e, &now) != ZKRC_OK || now != r->token)
    return 0;
  return zkrc_election_lease_remaining(r->e);
}

/* The turn's hold is gone (o.mu held): the member told it, or its lease
 * ran out before the member's LOST reached us.  Recorded once, in
 * r->lost, so that the turn stays lost (zkrc_runner_is_running() 0) even
 * if the lease comes back.  FALSE while it is held. */
static gboolean hold_gone_locked(zkrc_runner *r) {
  if (r->lost)
    return TRUE;
  if (lease_left_locked(r) > 0)
    return FALSE;
  r->lost = 1;
  r->lost_reason = zkrc_session_get_state(r->s) == ZKRC_SESSION_CLOSED
                       ? ZKRC_ECLOSED
                       : ZKRC_ESESSIONLOST;
  r->lost_zk = 0;
  return TRUE;
}

/* While the function runs: fire its cancellation at the first of a stop,
 * a loss the member told, the lease's deadline; and tell a loss (LOST)
 * whenever it comes, also after the cancellation fired for a stop: a
 * function that ignores its cancellation still holds until then. */
static void supervise_locked(zkrc_runner *r) {
  gboolean told_lost = FALSE;
  while (!r->work_done) {
    if (!told_lost && hold_gone_locked(r)) {
      told_lost = TRUE;
      zkrc__runner_tell_locked(r, ZKRC_RUNNER_LOST, r->lost_reason, r->lost_zk,
                               r->token, 0);
      if (zkrc__cancel_fire(r->cancel, r->lost_reason))
        zkrc__runner_tell_locked(r, ZKRC_RUNNER_CANCELLED, r->lost_reason,
                                 r->lost_zk, r->token, 0);
    }
    if (r->stop && zkrc__cancel_fire(r->cancel, r->stop_reason))
      zkrc__runner_tell_locked(r, ZKRC_RUNNER_CANCELLED, r->stop_reason, 0,
                               r->token, 0);
    if (told_lost) { /* nothing left to watch: wait for the return */
      g_cond_wait(&r->o.cond, &r->o.mu);
      continue;
    }
    int left = lease_left_locked(r);
    if (left > 0)
      (void)zkrc__cond_wait_until(&r->o.cond, &r->o.mu,
                                  zkrc__deadline_after(left));
  }
}

/* One turn: the function in a thread of its own, supervised; back once it
 * returned. */
static void run_turn_locked(zkrc_runner *r) {
  r->turns++;
  r->token = r->grant_token;
  r->cancel = zkrc__cancel_new();
  r->work_done = 0;
  r->lost = 0;
  r->running = 1;
  zkrc__runner_tell_locked(r, ZKRC_RUNNER_STARTED, ZKRC_OK, 0, r->token, 0);
  r->worker = g_thread_try_new("zkrc-runner-work", work_main, r, NULL);
  if (r->worker == NULL) {
    r->work_done = 1;
    r->result = ZKRC_ENOMEM;
  }
  supervise_locked(r);
  GThread *w = r->worker;
  g_mutex_unlock(&r->o.mu);
  if (w)
    g_thread_join(w);
  g_mutex_lock(&r->o.mu);
  r->worker = NULL;
  r->running = 0;
  zkrc__runner_tell_locked(r, ZKRC_RUNNER_RETURNED, ZKRC_OK, 0, r->token,
                           r->result);
  zkrc__cancel_free(r->cancel);
  r->cancel = NULL;
}

/* The turn is over: the hold goes back (a lock's node deleted in the
 * background; an election's leader resigns to the back of the queue when
 * it takes turns, and leaves at the end otherwise). */
static void give_back_locked(zkrc_runner *r) {
  if (r->lk) {
    if (r->hold)
      (void)zkrc_lock_hold_release(r->hold);
    r->hold = NULL;
  } else if (r->requeue && !r->stop) {
    (void)zkrc_election_resign(r->e);
  }
  r->granted = 0;
}

/* Wait @p ms or until stopped. */
static void backoff_locked(zkrc_runner *r, int ms) {
  int64_t deadline = zkrc__deadline_after(ms);
  while (!r->stop && zkrc__cond_wait_until(&r->o.cond, &r->o.mu, deadline))
    ;
}

/* A grant whose lease was already out (the session reconnecting, or its
 * lease starting again from the renewals): no turn under it, and the
 * grant goes back for real - a lock's hold released, an election left
 * (resigning alone would not do without requeue: a leader that did not
 * resign is told no second ELECTED when its lease comes back, and would
 * wait for good while it leads).  The caller asks again after a backoff. */
static void refuse_grant_locked(zkrc_runner *r) {
  if (r->lk) {
    give_back_locked(r);
    return;
  }
  (void)zkrc_election_leave(r->e); /* ZKRC_ESTATE: not joined any more */
  r->granted = 0;
}

/* Wait for a grant, a failure or a stop.  An election is also looked at
 * every LOOK_MS: its ELECTED is dropped when its lease is out at its
 * delivery (election.h: told only under a live lease), and a leadership
 * whose lease comes back (the session's lease starting again from its
 * renewals, no loss) is told no second ELECTED; a leader found so,
 * under a live lease, is granted as ELECTED would have (its lease is
 * checked again next, as any grant's). */
static void wait_grant_locked(zkrc_runner *r) {
  while (!r->stop && !r->granted && !r->failed) {
    if (r->lk) {
      g_cond_wait(&r->o.cond, &r->o.mu);
      continue;
    }
    int64_t token = 0;
    if (!zkrc__cond_wait_until(&r->o.cond, &r->o.mu,
                               zkrc__deadline_after(LOOK_MS)) &&
        zkrc_election_is_leader(r->e) &&
        zkrc_election_token(r->e, &token) == ZKRC_OK) {
      r->granted = 1;
      r->grant_token = token;
    }
  }
}

/* Queue, wait for the turn, run it; as many times as requeue says.
 * Returns why the runner stops (ZKRC_OK: its one turn is done). */
static int take_turns_locked(zkrc_runner *r, int *zk) {
  int failures = 0, backoff = 0;
  gboolean join = r->e != NULL; /* an election to (re)join */
  while (!r->stop) {
    if (join) {
      int rc = zkrc_election_join(r->e);
      if (rc != ZKRC_OK)
        return rc;
      join = FALSE;
    }
    if (r->lk && !r->asked && !r->granted) {
      int rc = zkrc__runner_ask_locked(r);
      if (rc != ZKRC_OK)
        return rc;
    }
    wait_grant_locked(r);
    if (r->stop)
      break;
    if (r->failed) {
      r->failed = 0;
      int reason = r->fail_reason;
      *zk = r->fail_zk;
      if (r->e || !transient(reason) ||
          (!session_bounded(reason) && ++failures > RETRIES))
        return reason;
      backoff = MIN(backoff ? backoff * 2 : BACKOFF_FIRST_MS, BACKOFF_MAX_MS);
      backoff_locked(r, backoff);
      continue;
    }
    /* Held means held: start only under a hold the member verifies now. */
    r->token = r->grant_token;
    if (lease_left_locked(r) <= 0) {
      refuse_grant_locked(r);
      join = r->e != NULL;
      /* Ask again after a backoff, not at once. */
      backoff = MIN(backoff ? backoff * 2 : BACKOFF_FIRST_MS, BACKOFF_MAX_MS);
      backoff_locked(r, backoff);
      continue;
    }
    failures = 0;
    backoff = 0;
    run_turn_locked(r);
    give_back_locked(r);
    if (!r->requeue)
      break;
  }
  *zk = 0;
  return r->stop ? r->stop_reason : ZKRC_OK;
}

gpointer zkrc__runner_main(gpointer arg) {
  zkrc_runner *r = arg;
  g_mutex_lock(&r->o.mu);
  int zk = 0;
  int reason = take_turns_locked(r, &zk);
  /* Stopped while queued: a pending acquisition is cancelled (a grant
   * already decided is given back by its completion, which sees stop). */
  if (r->lk && r->hold) {
    if (r->granted)
      (void)zkrc_lock_hold_release(r->hold);
    else
      (void)zkrc_lock_hold_cancel(r->hold);
    r->hold = NULL;
  }
  if (r->e)
    (void)zkrc_election_leave(r->e);
  zkrc__runner_tell_locked(r, ZKRC_RUNNER_CLOSED, reason, zk, 0, 0);
  r->exited = 1;
  g_cond_broadcast(&r->o.cond);
  gboolean orphan = r->orphan;
  g_mutex_unlock(&r->o.mu);
  if (orphan)
    zkrc__runner_dispose(r, FALSE);
  return NULL;
}
