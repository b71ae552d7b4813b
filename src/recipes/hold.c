/*
 * The hold core: what every lock participant shares, whoever owns it - its
 * contender and what the contender tells it (front, behind, connection,
 * ended), its fencing token and node, its lease, and the lock events
 * posted about it.  Who owns a hold is its client (lock_private.h): a
 * thread (lock.c: a count, a condition to wait on) or a hold object
 * (lock_async.c: a completion, a deadline timer).  The core calls its
 * client through a table and knows neither.
 */
#include "config.h"

#include <string.h>

#include "recipes/lock_private.h"
#include "core/names.h"
#include "core/util.h"

/* ------------------------------------------------------------ lifetime */

zkrc_lock *zkrc__lock_ref(zkrc_lock *lk) {
  zkrc__recipe_ref(&lk->r);
  return lk;
}

void zkrc__lock_unref(zkrc_lock *lk) { zkrc__recipe_unref(&lk->r); }

holder *zkrc__holder_ref(holder *h) {
  g_atomic_int_inc(&h->refs);
  return h;
}

void zkrc__holder_unref(holder *h) {
  if (!g_atomic_int_dec_and_test(&h->refs))
    return;
  g_free(h->excused);
  zkrc__recipe_stake_free(&h->lk->r, h->c, h);
}

/* ----------------------------------------------------- user callbacks */

typedef struct lock_event_call {
  zkrc__object_event ev; /* first */
  zkrc_lock_event info;
  char *node; /* info.node's */
} lock_event_call;

/* Told unless the lock was closed (zkrc_lock_free(): the object drops
 * it), and none about a non-blocking hold its owner released meanwhile:
 * that hold (and what zkrc_lock_hold_arg() gives, a multi-lock's set for
 * one) may be gone. */
static void lock_event_tell(zkrc__object *o, zkrc__object_event *ev) {
  lock_event_call *call = (lock_event_call *)ev;
  zkrc_lock *lk = (zkrc_lock *)o;
  holder *hold = call->info.hold;
  g_mutex_lock(&lk->r.o.mu);
  gboolean wanted = hold == NULL || hold->state != H_RELEASED;
  g_mutex_unlock(&lk->r.o.mu);
  if (wanted)
    lk->on_event(lk, &call->info, lk->event_arg);
}

/* On the executor, after the tell (or instead of it, once closed). */
static void lock_event_release(zkrc__object_event *ev) {
  lock_event_call *call = (lock_event_call *)ev;
  if (call->info.hold)
    zkrc__holder_unref(call->info.hold);
  g_free(call->node);
  g_free(call);
}

/* Called with lk->r.o.mu held; the callback itself runs on the executor. */
void zkrc__lock_post_event_locked(holder *h, zkrc_lock_event_type ev,
                                  int reason) {
  zkrc_lock *lk = h->lk;
  if (lk->on_event == NULL || zkrc__object_ending(&lk->r.o))
    return;
  lock_event_call *call =
      zkrc__object_event_new(sizeof *call, lock_event_tell, lock_event_release);
  call->info = (zkrc_lock_event){
      .type = ev,
      .reason = reason,
      .zk_error = ev == ZKRC_LOCK_LOST ? h->end_zk : ZOK,
      .token = h->token,
  };
  if (h->client->public_hold)
    call->info.hold = zkrc__holder_ref(h);
  /* A waiter told of a revocation request has no token, but a node. */
  call->node = ev == ZKRC_LOCK_REVOKE_REQUESTED ? zkrc__contender_path(h->c)
                                                : zkrc__holder_node(h);
  call->info.node = call->node;
  zkrc__object_tell_locked(&lk->r.o, &call->ev);
}

char *zkrc__holder_node(holder *h) {
  /* The token, our node's czxid, is set when it holds (never 0). */
  return h->token ? zkrc__contender_path(h->c) : NULL;
}

int64_t zkrc__holder_lease_left_locked(holder *h) {
  if (h->state != H_HELD)
    return 0;
  return zkrc__contender_lease_left(h->c);
}

/* ------------------------------------------------ contender callbacks */

void zkrc__holder_wake_locked(holder *h) {
  zkrc__waker *w = h->wake;
  if (w == NULL)
    return;
  if (w->mu == NULL) {
    g_cond_signal(&w->cond);
    return;
  }
  g_mutex_lock(w->mu);
  if (h->state == H_LOST)
    w->alarm = TRUE;
  g_cond_signal(&w->cond);
  g_mutex_unlock(w->mu);
}

static void on_front_locked(zkrc__stake *st, zkrc__contender *c) {
  holder *h = (holder *)st;
  if (h->state == H_WAITING) {
    h->state = H_HELD;
    h->token = zkrc__contender_czxid(c);
    zkrc__lock_stat_front_locked(h);
    if (h->client->front)
      h->client->front(h);
    zkrc__holder_wake_locked(h);
  }
}

static void on_behind_locked(zkrc__stake *st) {
  holder *h = (holder *)st;
  h->behind = TRUE;
  if (h->client->behind)
    h->client->behind(h);
  zkrc__holder_wake_locked(h);
}

static void on_connection_locked(zkrc__stake *st, zkrc_session_event_type ev) {
  holder *h = (holder *)st;
  if (h->state == H_HELD && h->client->may_tell(h))
    zkrc__lock_post_event_locked(h,
                                 ev == ZKRC_SESSION_EVENT_SUSPENDED
                                     ? ZKRC_LOCK_SUSPENDED
                                     : ZKRC_LOCK_RECONNECTED,
                                 ZKRC_OK);
}

static void on_ended_locked(zkrc__stake *st, int err, int zk_rc) {
  holder *h = (holder *)st;
  h->ended = TRUE;
  h->end_err = err;
  h->end_zk = zk_rc;
  if (h->state == H_HELD) {
    h->state = H_LOST;
    zkrc__lock_stat_lost_locked(h);
    zkrc__holder_wake_locked(h); /* a thread granted but not yet awake */
    /* (A non-blocking hold whose grant is still on its way learns of the
     * loss from its completion instead.) */
    if (h->client->may_tell(h))
      zkrc__lock_post_event_locked(h, ZKRC_LOCK_LOST,
                                   err == ZKRC_OK ? ZKRC_ELOCKLOST : err);
  } else {
    h->client->ended(h, err);
    zkrc__holder_wake_locked(h);
  }
}

/* Its node's data became "__REVOKE__": told to the application once per
 * request (data version), while it waits or holds; the hold stays as it
 * is (the application decides, as Curator's RevocationListener does). */
static void on_revoke_locked(zkrc__stake *st, int32_t version) {
  holder *h = (holder *)st;
  if ((h->state != H_WAITING && h->state != H_HELD) ||
      version <= h->revoke_version)
    return;
  h->revoke_version = version;
  zkrc__lock_post_event_locked(h, ZKRC_LOCK_REVOKE_REQUESTED, ZKRC_OK);
}

static void holder_stake_unref(zkrc__stake *st) {
  zkrc__holder_unref((holder *)st);
}

static const zkrc__stake_ops holder_stake_ops = {
    .front_locked = on_front_locked,
    .behind_locked = on_behind_locked,
    .connection_locked = on_connection_locked,
    .ended_locked = on_ended_locked,
    .unref = holder_stake_unref,
    .revoke_locked = on_revoke_locked,
};

holder *zkrc__lock_new_participant_locked(zkrc_lock *lk, uint64_t thread,
                                          const zkrc__hold_client *client,
                                          const char *excused) {
  holder *h = g_new0(holder, 1);
  h->refs = 2; /* the caller's and the contender's */
  h->lk = zkrc__lock_ref(lk);
  h->st.ops = &holder_stake_ops;
  h->st.recipe = &lk->r;
  h->thread = thread;
  h->client = client;
  h->state = H_WAITING;
  h->asked_us = g_get_monotonic_time();
  h->excused = g_strdup(excused);
  zkrc__contender_config cfg = {
      .queue = &lk->r.q,
      .marker = lk->marker,
      .markers = lk->markers,
      .policy = lk->policy,
      /* a downgrade's own writer, or a semaphore's number of leases */
      .policy_arg = lk->permits > 0 ? (const void *)&lk->permits : h->excused,
      .watch_own_node = lk->on_event != NULL,
      .revocable = lk->revocable,
      .ops = &zkrc__stake_contender_ops,
      .ops_arg = &h->st,
  };
  h->c = zkrc__contender_new(&cfg);
  zkrc__recipe_stake_started_locked(&lk->r);
  return h;
}
