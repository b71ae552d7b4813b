/*
 * Non-blocking holds: a lock participant owned by a hold object instead of
 * a thread, for event loops.
 *
 * A hold's life: WAITING → HELD (completion ZKRC_OK) → released by its owner;
 * or WAITING → CANCELLING (deadline, cancel, a try that found others ahead)
 * → its contender ends once the node is deleted → completion with the
 * reason; or WAITING → the contender ends by itself (session expired...) →
 * completion with that error.  The completion runs once, on the session's
 * executor; a failed hold is freed after it.
 *
 * References on a hold: the contender's (dropped when it ends), the lock's
 * set of live holds (dropped when the owner releases it, or after a failed
 * completion), the deadline's (session_deadline.c), and one per callback in
 * flight.
 */
#include "config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "recipes/lock_private.h"
#include "core/util.h"

/* ------------------------------------------------- the set of live holds */

/* Most lock objects have one non-blocking hold at a time: it goes in
 * lk->hold, and a table is made only for a second (a held lock should stay
 * small; 100,000 of them are held by one process).  Each entry holds the
 * set's reference.  lk->mu held. */
static void holds_add_locked(zkrc_lock *lk, holder *h) {
  if (lk->hold == NULL && lk->holds == NULL) {
    lk->hold = h;
    return;
  }
  if (lk->holds == NULL) {
    lk->holds = g_hash_table_new(g_direct_hash, g_direct_equal);
    g_hash_table_add(lk->holds, lk->hold);
    lk->hold = NULL;
  }
  g_hash_table_add(lk->holds, h);
}

/* TRUE when @p h was in the set (its reference is the caller's now). */
static gboolean holds_remove_locked(zkrc_lock *lk, holder *h) {
  if (lk->hold == h) {
    lk->hold = NULL;
    return TRUE;
  }
  return lk->holds && g_hash_table_remove(lk->holds, h);
}

/* The holds in the set, each with a reference of the list's. */
static GList *holds_list_locked(zkrc_lock *lk) {
  GList *list = lk->holds ? g_hash_table_get_keys(lk->holds) : NULL;
  if (lk->hold)
    list = g_list_prepend(list, lk->hold);
  g_list_foreach(list, (GFunc)(void (*)(void))zkrc__holder_ref, NULL);
  return list;
}

/* ------------------------------------------------------------ completion */

/* A hold's completion: one of the lock's events, told in order with the
 * others (a hold's LOST comes after its grant), and owed exactly once: told
 * also after the lock's free (zkrc__object_tell_owed_locked), which
 * released or cancelled the hold (ZKRC_ECANCELED). */
typedef struct completion {
  zkrc__object_event ev; /* first */
  holder *h;             /* referenced */
  zkrc_lock_acquired_info info;
} completion;

/* A grant's outcome when it is told, however late: it may have been
 * released meanwhile (zkrc_lock_free_async()), lost, or its lease may have
 * run out.  lk->r.o.mu held. */
static void check_grant_locked(holder *h, zkrc_lock_acquired_info *info) {
  zkrc_lock *lk = h->lk;
  if (h->state == H_RELEASED) {
    info->status = ZKRC_ECANCELED;
  } else if (h->state == H_LOST) {
    info->status = h->end_err == ZKRC_OK ? ZKRC_ELOCKLOST : h->end_err;
    info->zk_error = h->end_zk;
  } else if (zkrc__holder_lease_left_locked(h) <= 0) {
    info->status = ZKRC_ESESSIONLOST; /* its loss is on its way */
  }
  if (info->status != ZKRC_OK) {
    info->token = 0;
    zkrc__lock_stat_gave_up_locked(lk, info->status);
  } else {
    h->told = TRUE;
    zkrc__lock_stat_delivered_locked(h);
  }
}

static void completion_tell(zkrc__object *o, zkrc__object_event *ev) {
  completion *done = (completion *)ev;
  holder *h = done->h;
  zkrc_lock *lk = (zkrc_lock *)o;
  zkrc_lock_acquired_info *info = &done->info;
  if (info->status == ZKRC_OK) {
    g_mutex_lock(&lk->r.o.mu);
    check_grant_locked(h, info);
    g_mutex_unlock(&lk->r.o.mu);
  }
  h->done(lk, h, info, h->done_arg);
  if (info->status != ZKRC_OK) {
    /* A failed hold ends with its completion: drop the set's reference. */
    g_mutex_lock(&lk->r.o.mu);
    gboolean ours = holds_remove_locked(lk, h);
    g_mutex_unlock(&lk->r.o.mu);
    if (ours)
      zkrc__holder_unref(h);
  }
}

static void completion_release(zkrc__object_event *ev) {
  completion *done = (completion *)ev;
  zkrc__holder_unref(done->h); /* the completion's own reference */
  g_free(done);
}

/* Also while the lock is detached (free_async: its pending holds complete
 * with ZKRC_ECANCELED before its done) or closed (free). */
static void complete_locked(holder *h, int status, int zk_error) {
  zkrc_lock *lk = h->lk;
  /* The deadline's reference (the completion's keeps the hold alive). */
  if (zkrc__session_deadline_disarm(lk->r.q.session, &h->deadline))
    zkrc__holder_unref(h);
  if (status != ZKRC_OK)
    zkrc__lock_stat_gave_up_locked(lk, status);
  completion *done =
      zkrc__object_event_new(sizeof *done, completion_tell, completion_release);
  done->h = zkrc__holder_ref(h);
  done->info.status = status;
  done->info.zk_error = zk_error;
  done->info.token = status == ZKRC_OK ? h->token : 0;
  zkrc__object_tell_owed_locked(&lk->r.o, &done->ev);
}

/* Give up before the front: the completion follows once the node is gone
 * (see async_hold_ended). */
static void cancel_locked(holder *h, int reason) {
  h->state = H_CANCELLING;
  h->outcome = reason;
  zkrc__contender *c = h->c;
  zkrc_lock *lk = h->lk;
  /* The withdrawal calls nothing back from inside it, but it takes the
   * contender's mutex: never hold ours across it. */
  g_mutex_unlock(&lk->r.o.mu);
  zkrc__contender_withdraw(c);
  g_mutex_lock(&lk->r.o.mu);
}

/* ---------------------------------------------- the contender's news */

static void async_hold_front(holder *h) { complete_locked(h, ZKRC_OK, ZOK); }

static void async_hold_behind(holder *h) {
  if (h->no_wait && h->state == H_WAITING)
    cancel_locked(h, ZKRC_ELOCKED);
}

static void async_hold_ended(holder *h, int err) {
  if (h->state == H_CANCELLING) {
    complete_locked(h, h->outcome, ZOK);
  } else if (h->state == H_WAITING) {
    h->state = H_FAILED;
    complete_locked(h, err == ZKRC_OK ? ZKRC_ECANCELED : err, h->end_zk);
  }
  /* H_RELEASED: the owner let it go; nothing to tell. */
}

/* Events about a held hold come only after its grant was delivered. */
static gboolean async_hold_may_tell(const holder *h) { return h->told; }

static const zkrc__hold_client async_client = {
    .front = async_hold_front,
    .behind = async_hold_behind,
    .ended = async_hold_ended,
    .may_tell = async_hold_may_tell,
    .public_hold = TRUE,
};

static gboolean is_async(const holder *h) {
  return h != NULL && h->client == &async_client;
}

/* ------------------------------------------------------------- deadline */

/* On the session's worker, with the deadline's reference. */
static void deadline_passed(void *data) {
  holder *h = data;
  zkrc_lock *lk = h->lk;
  g_mutex_lock(&lk->r.o.mu);
  if (h->state == H_WAITING)
    cancel_locked(h, ZKRC_ETIMEDOUT);
  g_mutex_unlock(&lk->r.o.mu);
  zkrc__holder_unref(h);
}

static void drop_holds_locked(zkrc_lock *lk);

/* ------------------------------------------------------------ public API */

int zkrc_lock_acquire_async(zkrc_lock *lk, int timeout_ms,
                            zkrc_lock_acquired_fn done, void *arg,
                            zkrc_lock_hold **hold) {
  if (hold)
    *hold = NULL;
  if (lk == NULL || done == NULL || !zkrc__timeout_valid(timeout_ms))
    return zkrc__fail(ZKRC_EINVAL);
  g_mutex_lock(&lk->r.o.mu);
  int err = zkrc__object_ending(&lk->r.o)           ? ZKRC_ECANCELED
            : zkrc__session_closed(lk->r.q.session) ? ZKRC_ECLOSED
                                                    : ZKRC_OK;
  if (err != ZKRC_OK) {
    g_mutex_unlock(&lk->r.o.mu);
    return zkrc__fail(err);
  }
  holder *h = zkrc__lock_new_participant_locked(lk, 0, &async_client, NULL);
  h->no_wait = timeout_ms == ZKRC_NO_WAIT;
  h->done = done;
  h->done_arg = arg;
  lk->drop_async = drop_holds_locked;
  holds_add_locked(lk, h); /* the set's reference */
  /* A try waits for its first look at the queue, at most a session
   * timeout, like zkrc_lock_acquire(). */
  int ms = h->no_wait ? zkrc_session_timeout(lk->r.q.session) : timeout_ms;
  if (ms != ZKRC_WAIT_FOREVER)
    zkrc__session_deadline_arm(lk->r.q.session, ms, deadline_passed,
                               zkrc__holder_ref(h), &h->deadline);
  if (hold)
    *hold = h;
  zkrc__contender *c = h->c;
  g_mutex_unlock(&lk->r.o.mu);
  zkrc__contender_start(c);
  return ZKRC_OK;
}

int zkrc_lock_hold_cancel(zkrc_lock_hold *h) {
  if (!is_async(h))
    return zkrc__fail(ZKRC_EINVAL);
  zkrc_lock *lk = h->lk;
  g_mutex_lock(&lk->r.o.mu);
  int err = h->state == H_WAITING ? ZKRC_OK : ZKRC_ESTATE;
  if (err == ZKRC_OK)
    cancel_locked(h, ZKRC_ECANCELED);
  g_mutex_unlock(&lk->r.o.mu);
  return zkrc__fail(err);
}

int zkrc_lock_hold_release(zkrc_lock_hold *h) {
  if (!is_async(h))
    return zkrc__fail(ZKRC_EINVAL);
  zkrc_lock *lk = h->lk;
  g_mutex_lock(&lk->r.o.mu);
  if (h->state != H_HELD && h->state != H_LOST) {
    g_mutex_unlock(&lk->r.o.mu);
    return zkrc__fail(ZKRC_ESTATE);
  }
  int err = h->state == H_LOST ? ZKRC_ELOCKLOST : ZKRC_OK;
  zkrc__lock_stat_released_locked(h);
  h->state = H_RELEASED;
  gboolean ours = holds_remove_locked(lk, h);
  zkrc__contender *c = h->c;
  g_mutex_unlock(&lk->r.o.mu);
  zkrc__contender_withdraw(c); /* in the background: an event loop must not
                                * wait for the servers */
  if (ours)
    zkrc__holder_unref(h);
  return zkrc__fail(err);
}

int zkrc_lock_hold_is_held(zkrc_lock_hold *h) {
  if (h == NULL)
    return 0;
  g_mutex_lock(&h->lk->r.o.mu);
  int held = zkrc__holder_lease_left_locked(h) > 0;
  g_mutex_unlock(&h->lk->r.o.mu);
  return held;
}

int zkrc_lock_hold_lease_remaining(zkrc_lock_hold *h) {
  if (h == NULL)
    return 0;
  g_mutex_lock(&h->lk->r.o.mu);
  int64_t left = zkrc__holder_lease_left_locked(h);
  g_mutex_unlock(&h->lk->r.o.mu);
  return (int)(left / 1000);
}

/* ZKRC_OK when @p h holds (lk->mu held): ZKRC_ELOCKLOST when it was
 * lost, ZKRC_ESTATE when it is not acquired (pending, or released). */
static int held_state_locked(const holder *h) {
  return h->state == H_HELD   ? ZKRC_OK
         : h->state == H_LOST ? ZKRC_ELOCKLOST
                              : ZKRC_ESTATE;
}

int zkrc_lock_hold_token(zkrc_lock_hold *h, int64_t *token) {
  if (h == NULL || token == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  g_mutex_lock(&h->lk->r.o.mu);
  int err = held_state_locked(h);
  if (err == ZKRC_OK)
    *token = h->token;
  g_mutex_unlock(&h->lk->r.o.mu);
  return zkrc__fail(err);
}

/* The lock's free (at once or in the background): cancel pending holds
 * (their completions, owed, free them) and release acquired ones. */
static void drop_holds_locked(zkrc_lock *lk) {
  /* The mutex is let go while withdrawing: keep the holds alive meanwhile. */
  GList *holds = holds_list_locked(lk);
  for (GList *l = holds; l; l = l->next) {
    holder *h = l->data;
    if (h->state == H_WAITING) {
      cancel_locked(h, ZKRC_ECANCELED); /* its completion frees it */
    } else if ((h->state == H_HELD || h->state == H_LOST) &&
               holds_remove_locked(lk, h)) {
      h->state = H_RELEASED;
      zkrc__contender *c = h->c;
      g_mutex_unlock(&lk->r.o.mu);
      zkrc__contender_withdraw(c);
      zkrc__holder_unref(h); /* the set's */
      g_mutex_lock(&lk->r.o.mu);
    }
  }
  g_mutex_unlock(&lk->r.o.mu);
  g_list_free_full(holds, (GDestroyNotify)zkrc__holder_unref);
  g_mutex_lock(&lk->r.o.mu);
}

void *zkrc_lock_hold_arg(zkrc_lock_hold *h) { return h ? h->done_arg : NULL; }

int zkrc_lock_hold_node(zkrc_lock_hold *h, char **path) {
  if (path)
    *path = NULL;
  if (h == NULL || path == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  g_mutex_lock(&h->lk->r.o.mu);
  int err = held_state_locked(h);
  char *made = err == ZKRC_OK ? zkrc__holder_node(h) : NULL;
  g_mutex_unlock(&h->lk->r.o.mu);
  if (err == ZKRC_OK && (*path = made ? strdup(made) : NULL) == NULL)
    err = ZKRC_ENOMEM;
  g_free(made);
  return zkrc__fail(err);
}
