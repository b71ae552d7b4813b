/*
 * The semaphore's blocking acquisition (zkrc_semaphore_acquire): the
 * non-blocking one (semaphore.c), awaited on a condition of the caller's
 * own, so that many threads waiting on one semaphore are woken one by one.
 */
#include "config.h"

#include "recipes/semaphore_internal.h"
#include "core/util.h"
#include "zkrecipes/error.h"

/* ------------------------------------------------------ blocking form */

/* How long a failed blocking acquisition may overrun its deadline waiting
 * for its completion, which comes once its nodes are confirmed deleted: a
 * round trip on a healthy connection.  On a stalled one the client has not
 * noticed yet, the caller must not wait for it (zkrc_lock_acquire()'s
 * grace, lock.c); the deletes complete in the background, or the reaper
 * finishes them. */
#define ABANDON_GRACE_MS 500

/* One blocking acquisition's rendezvous with its completion (under
 * sem->o.mu); two references: the caller's and the lease's (dropped when
 * the lease goes, after its completion: that may come after the caller
 * returned, woken by zkrc_semaphore_free()). */
typedef struct waiter {
  gint refs;
  GCond cond; /* signalled once, by its completion */
  gboolean done;
  gboolean abandoned; /* the caller returned: a late grant is released */
  int status;
  int zk_error;
  zkrc_semaphore_lease *lease;
} waiter;

static void waiter_unref(waiter *w) {
  if (g_atomic_int_dec_and_test(&w->refs)) {
    g_cond_clear(&w->cond);
    g_free(w);
  }
}

static void blocking_done(zkrc_semaphore *sem, zkrc_semaphore_lease *lease,
                          const zkrc_semaphore_acquired_info *info, void *arg) {
  waiter *w = arg;
  int status = info->status;
  g_mutex_lock(&sem->o.mu);
  w->done = TRUE;
  w->status = status;
  w->zk_error = info->zk_error;
  w->lease = lease;
  gboolean unwanted = w->abandoned && status == ZKRC_OK;
  g_cond_signal(&w->cond);
  g_mutex_unlock(&sem->o.mu);
  if (unwanted) /* granted after its caller gave up: give it back */
    zkrc_semaphore_lease_release(lease);
}

static void waiter_free(void *w) { waiter_unref(w); }

int zkrc_semaphore_acquire(zkrc_semaphore *sem, int timeout_ms,
                           zkrc_semaphore_lease **out) {
  if (out)
    *out = NULL;
  if (sem == NULL || out == NULL || !zkrc__timeout_valid(timeout_ms))
    return zkrc__fail(ZKRC_EINVAL);
  /* A try may wait for the mutex up to a session timeout (see below). */
  int64_t deadline = zkrc__deadline_after(
      timeout_ms == ZKRC_NO_WAIT ? zkrc_session_timeout(sem->s) : timeout_ms);
  if (deadline != ZKRC__NEVER)
    deadline += (int64_t)ABANDON_GRACE_MS * 1000;
  int zk_rc = 0;
  waiter *w = g_new0(waiter, 1);
  w->refs = 2;
  g_cond_init(&w->cond);
  zkrc__semaphore_ref(
      sem); /* its mutex outlives a concurrent free until we return */
  /* Among the waiters from here on: the semaphore's free waits for us. */
  g_mutex_lock(&sem->o.mu);
  sem->waiters = g_slist_prepend(sem->waiters, &w->cond);
  g_mutex_unlock(&sem->o.mu);
  int err = zkrc__semaphore_acquire_async(sem, timeout_ms, blocking_done, w,
                                          waiter_free, NULL);
  g_mutex_lock(&sem->o.mu);
  if (err != ZKRC_OK) {
    waiter_unref(w); /* no completion comes: the lease's */
  } else {
    /* The acquisition's own deadline (lock_async.c's timers) ends it, or
     * the semaphore's free. */
    while (!w->done && !sem->o.closed &&
           zkrc__cond_wait_until(&w->cond, &sem->o.mu, deadline))
      ;
    w->abandoned = !w->done;
    err = w->done ? w->status : sem->o.closed ? ZKRC_ECANCELED : ZKRC_ETIMEDOUT;
    zk_rc = w->done ? w->zk_error : 0;
    *out = w->done ? w->lease : NULL;
  }
  sem->waiters = g_slist_remove(sem->waiters, &w->cond);
  g_cond_broadcast(&sem->o.cond);
  g_mutex_unlock(&sem->o.mu);
  waiter_unref(w);
  zkrc__semaphore_unref(sem);
  return zk_rc ? zkrc__fail_zk(err, zk_rc) : zkrc__fail(err);
}
