/*
 * What lock.c (holds owned by threads) and lock_async.c (holds owned by
 * hold objects, for event loops) share: one holder type, one set of
 * contender callbacks (in lock.c), the lock object itself.
 */
#ifndef ZKRC_LOCK_INTERNAL_H
#define ZKRC_LOCK_INTERNAL_H

#include <stdint.h>

#include <glib.h>

#include "queue.h"
#include "zkrecipes.h"

typedef enum hstate {
  H_WAITING,    /* in the queue */
  H_HELD,       /* at the front: the owner holds the lock */
  H_LOST,       /* was held; lost (until the owner releases it) */
  H_FAILED,     /* the contender ended before reaching the front */
  H_CANCELLING, /* a non-blocking hold given up before the front (timeout,
                 * cancel, try); its node is being deleted */
  H_RELEASED    /* given up by its owner; the contender is finishing */
} hstate;

/* One participant of a lock: a thread's stake (thread != 0) or a
 * non-blocking hold (async). */
typedef struct zkrc_lock_hold {
  gint refs;
  zkrc_lock *lk;
  uint64_t thread; /* the owning thread's number; 0 for a non-blocking hold */
  zkrc__contender *c;
  hstate state;
  int count; /* a thread's reentrancy count */
  gboolean behind;
  gboolean ended;
  int end_err;
  int end_zk;
  int64_t token;
  char *node;

  /* Non-blocking holds only. */
  gboolean async;
  gboolean no_wait;
  zkrc_lock_acquired_fn done;
  void *done_arg;
  gboolean told;   /* its owner has been told it holds (completion ran) */
  int outcome;     /* why a cancelling hold gave up */
  GSource *timer;  /* its deadline, on the session's worker */
} holder;

struct zkrc_lock {
  gint refs;
  GMutex mu;
  GCond cond;
  zkrc__queue q; /* session, path, participant id, ACL */
  zkrc_lock_event_fn on_event;
  void *event_arg;
  /* Created on first use: most lock objects serve one thread and no
   * non-blocking hold, and a held lock should stay small. */
  GHashTable *holders; /* thread number → holder*, threads with a stake */
  GHashTable *holds;   /* set of holder*: non-blocking holds not yet freed */
  int inside;          /* threads inside zkrc_lock_acquire() */
  gboolean freeing;
};

zkrc_lock *zkrc__lock_ref(zkrc_lock *lk);
void zkrc__lock_unref(zkrc_lock *lk);
holder *zkrc__holder_ref(holder *h);
void zkrc__holder_unref(holder *h);

/* A new participant with its contender (not started); references: one for
 * the caller, one for the contender. */
holder *zkrc__lock_new_participant_locked(zkrc_lock *lk, uint64_t thread);

/* Microseconds left of a held hold's lease (0 when not held, or when its
 * session's lease ran out); lk->mu held. */
int64_t zkrc__holder_lease_left_locked(holder *h);

/* Tell the application about a held lock (lock events); lk->mu held. */
void zkrc__lock_post_event_locked(holder *h, zkrc_lock_event ev, int reason);

/* lock_async.c: the contender callbacks' non-blocking branches, called with
 * lk->mu held. */
void zkrc__hold_front_locked(holder *h);
void zkrc__hold_behind_locked(holder *h);
void zkrc__hold_ended_locked(holder *h, int err);
/* zkrc_lock_free(): cancel pending holds and release acquired ones. */
void zkrc__lock_drop_holds_locked(zkrc_lock *lk);

#endif /* ZKRC_LOCK_INTERNAL_H */
