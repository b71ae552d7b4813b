/*
 * The runner's inside (zkrecipes/runner.h), for src/recipes/ only: the
 * object (runner.c: its public calls and the callbacks of the lock or
 * election under it), its thread (runner_turn.c: queueing, each turn's
 * work thread, the lease watched while it runs, giving the hold back) and
 * a turn's cancellation (runner_cancel.c).
 *
 * Threads: the application's (the public calls), the session's executor
 * (the member's callbacks, the runner's events), the runner's own thread
 * and, during a turn, the work function's.  The runner's mutex (r->o.mu)
 * comes before its member's recipe mutex (session_private.h): the member's
 * hold is cancelled and released under it, so that its pointer is never
 * used after the member's completion freed it.
 */
#ifndef ZKRC_RUNNER_PRIVATE_H
#define ZKRC_RUNNER_PRIVATE_H

#include <glib.h>

#include "core/object.h"
#include "zkrecipes/election.h"
#include "zkrecipes/lock.h"
#include "zkrecipes/runner.h"

struct zkrc_runner {
  zkrc__object o;
  zkrc_session *s; /* a recipe's reference (session_internal.h) */
  char *path;
  zkrc_runner_kind kind;
  int requeue;
  zkrc_runner_work_fn work;
  void *work_arg;
  zkrc_runner_event_fn fn;
  void *arg;
  /* The member: a lock (both lock kinds) or an election; set at creation,
   * freed once the thread is done. */
  zkrc_lock *lk;
  zkrc_election *e;
  GThread *thread;
  /* Under o.mu from here on. */
  int stop;        /* cancel or free asked: stop_reason says which */
  int stop_reason; /* ZKRC_ECANCELED or ZKRC_ECLOSED */
  int orphan;      /* nobody joins the thread: it frees the member and
                    * drops the object's last reference itself */
  int exited;      /* the thread's loop is over */
  /* Queueing.  A lock's pending or acquired hold, and the outcome of its
   * acquisition; an election's current leadership. */
  zkrc_lock_hold *hold;
  int asked;   /* an acquisition is pending */
  int granted; /* acquired (lock) or elected (election) */
  int64_t grant_token;
  int failed; /* the acquisition failed: fail_reason, fail_zk */
  int fail_reason, fail_zk;
  int elected_once; /* election: joined */
  /* The turn. */
  int running;
  int turns;
  int64_t token;
  zkrc_cancel *cancel;
  GThread *worker;
  int work_done;
  int result;
  int lost; /* the turn's hold is lost: the member told it, or its lease
            * ran out first (runner_turn.c); for the rest of the turn */
  int lost_reason, lost_zk;
};

/* runner.c: queue an event for the application (o.mu held). */
void zkrc__runner_tell_locked(zkrc_runner *r, zkrc_runner_event_type type,
                              int reason, int zk_error, int64_t token,
                              int result);
/* runner.c: start acquiring the lock (o.mu held); ZKRC_OK or the
 * acquisition's refusal. */
int zkrc__runner_ask_locked(zkrc_runner *r);
/* runner.c: the thread is over (@p joined: and joined; else this is the
 * thread itself, whose reference goes): free the member and drop the
 * object's reference. */
void zkrc__runner_dispose(zkrc_runner *r, gboolean joined);

/* runner_turn.c: the runner's thread. */
gpointer zkrc__runner_main(gpointer arg);

/* runner_cancel.c */
zkrc_cancel *zkrc__cancel_new(void);
void zkrc__cancel_free(zkrc_cancel *c);
/* Fire @p c with @p reason; TRUE the first time. */
gboolean zkrc__cancel_fire(zkrc_cancel *c, int reason);

#endif /* ZKRC_RUNNER_PRIVATE_H */
