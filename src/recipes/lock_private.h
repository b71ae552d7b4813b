/*
 * What the lock family's files (src/recipes/ only) share: the lock object, the holder type, and the
 * hold core (hold.c) with its two clients: threads (lock.c) and hold
 * objects for event loops (lock_async.c).  The core calls a client only
 * through its zkrc__hold_client table; lock.c reaches the non-blocking
 * holds only through zkrc_lock.drop_async.  So: lock.c and lock_async.c
 * depend on hold.c, and on nothing of each other.
 *
 * lk->mu is the recipe's mutex (lk->r.o.mu): the first in the lock order
 * written in session_private.h.
 */
#ifndef ZKRC_LOCK_PRIVATE_H
#define ZKRC_LOCK_PRIVATE_H

#include <stdint.h>

#include <glib.h>

#include "queue/queue.h"
#include "recipes/lock_member.h"
#include "recipes/recipe.h"
#include "recipes/stats_internal.h"
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

/* Who owns a hold: what the core tells it, with lk->mu held (it must not
 * block; it may let lk->mu go and take it again only where noted). */
typedef struct zkrc__hold_client {
  /* The hold now holds (h->state is H_HELD, its token and node set). */
  void (*front)(holder *h);
  /* Its first look at the queue found others ahead (may be NULL). */
  void (*behind)(holder *h);
  /* Its contender ended before it held (or while it was being given up;
   * h->end_err says why). */
  void (*ended)(holder *h, int err);
  /* May events about the held hold be told now? */
  gboolean (*may_tell)(const holder *h);
  /* Events carry the hold (info->hold): it is public to the application. */
  gboolean public_hold;
} zkrc__hold_client;

/* What a thread waiting in zkrc_lock_acquire() sleeps on (on its stack): a
 * condition waited on with the lock's mutex, or with a mutex of its own (a
 * blocking multi-lock's, which also watches the locks its thread holds
 * already: zkrc__lock_acquire_watched).  Whoever signals it holds the
 * lock's mutex, and takes the waker's own inside (the innermost of all). */
typedef struct zkrc__waker {
  GCond cond;
  GMutex *mu;     /* NULL: the lock's (lk->r.o.mu) */
  gboolean alarm; /* (under mu) a hold it watches was lost */
} zkrc__waker;

/* One participant of a lock: a thread's stake (thread != 0) or a
 * non-blocking hold (lock_async.c). */
struct zkrc_lock_hold {
  zkrc__stake st; /* its contender callbacks (hold.c) and recipe; first */
  gint refs;
  /* The data version of its node's last revocation request told to the
   * application (0: none); beside refs, in what would be padding. */
  int32_t revoke_version;
  zkrc_lock *lk;
  const zkrc__hold_client *client;
  uint64_t thread; /* the owning thread's number; 0 for a non-blocking hold */
  zkrc__contender *c;
  hstate state;
  int count; /* a thread's reentrancy count */
  /* What its thread waits on in zkrc_lock_acquire() (on that thread's
   * stack), or NULL: the core signals only this one when the hold changes,
   * so that a hand-over wakes one thread, not every waiting one.  Also set
   * on a held hold that a multi-lock watches while its thread waits for
   * another lock (zkrc__lock_watch_hold). */
  zkrc__waker *wake;
  /* A read side's thread hold taken while its thread holds the write side
   * (a downgrade): the name of that writer node, which does not stop it
   * (the policy's argument); NULL otherwise. */
  char *excused;
  gboolean ended; /* its contender ended (waited on: not a bit-field) */
  /* Flags, packed (100,000 holds live in a process holding 100,000 locks);
   * written with lk->mu held. */
  unsigned behind : 1;
  unsigned delivered : 1; /* its owner was told it holds (statistics) */
  unsigned no_wait : 1;   /* non-blocking holds: a try */
  unsigned told : 1;      /* non-blocking: its owner has been told it holds */
  int end_err;
  int end_zk;
  int64_t token;
  int64_t asked_us; /* when it joined the queue (statistics) */
  int64_t held_us;  /* when it got the lock */

  /* Non-blocking holds only. */
  zkrc_lock_acquired_fn done;
  void *done_arg;
  int outcome; /* why a cancelling hold gave up */
  /* Its deadline's place among the session's (session_deadline.c; 0: none
   * armed), not a GSource of its own. */
  unsigned deadline;
};

struct zkrc_lock {
  zkrc__recipe r; /* references, mutex, condition, queue; first */
  zkrc_lock_event_fn on_event;
  void *event_arg;
  /* Created on first use: most lock objects serve one thread and no
   * non-blocking hold, and a held lock should stay small. */
  GHashTable *holders; /* thread number → holder*, threads with a stake */
  /* Non-blocking holds not yet freed: the first alone in hold, a set
   * (of holder*) from the second on (lock_async.c: holds_*). */
  holder *hold;
  GHashTable *holds;
  /* Set with the first non-blocking hold (lock_async.c): cancels pending
   * ones and releases acquired ones, for zkrc_lock_free() (lk->mu held). */
  void (*drop_async)(zkrc_lock *lk);

  /* Which member of the lock family this object is: a mutex ("lock-",
   * policy exclusive) or a side of a read-write lock (rwlock.c: "__READ__"
   * or "__WRIT__", policy readers_writers).  Set at creation. */
  const char *marker;
  zkrc__policy_fn policy;
  /* The names that count as contenders: the lock family's
   * (zkrc__lock_markers), or a semaphore's leases (zkrc__lease_markers). */
  const zkrc__marker *markers;
  /* A semaphore's leases (semaphore.c): how many are admitted (the
   * permits policy's argument, which lives as long as the contenders that
   * read it); 0 for every other member. */
  int permits;
  int inside; /* threads inside zkrc_lock_acquire() (next to permits: no
               * padding; a held lock should stay small) */
  /* A read-write lock's side: the other side (owned, like this one, by the
   * zkrc_rwlock; alive while this one is), and whether this is the read
   * side.  NULL for a mutex. */
  zkrc_lock *other;
  gboolean shared;
  /* zkrc_lock_options.revocable: its participants are told revocation
   * requests (next to shared: no padding). */
  gboolean revocable;
  /* Its statistics (stats.c; owned): from its second outcome on.  The
   * first, when it is an acquisition (a lock held once), is kept in
   * first_wait_us alone: its wait in microseconds, plus one (0: none).  A
   * held lock should stay small: 100,000 of them are held by one
   * process, and the record is 264 bytes. */
  zkrc__lock_stats *stats;
  uint64_t first_wait_us;
};

zkrc_lock *zkrc__lock_ref(zkrc_lock *lk);
void zkrc__lock_unref(zkrc_lock *lk);
holder *zkrc__holder_ref(holder *h);
void zkrc__holder_unref(holder *h);

/* A new participant of @p client with its contender (not started);
 * references: one for the caller, one for the contender.  @p excused: a
 * downgrade's own writer node name (copied), or NULL. */
holder *zkrc__lock_new_participant_locked(zkrc_lock *lk, uint64_t thread,
                                          const zkrc__hold_client *client,
                                          const char *excused);

/* A semaphore's lease pool (semaphore.c): a lock object whose nodes carry
 * "lease-", count among zkrc__lease_markers only, and of which the first
 * @p permits (>= 1) in line are admitted (zkrc__policy_permits). */
int zkrc__lock_new_permits(zkrc_lock **out, zkrc_session *s, const char *path,
                           const zkrc_lock_options *opts, int permits);

/* Free a lock object, also a read-write lock's side (zkrc_lock_free()
 * ignores those: their zkrc_rwlock frees them). */
void zkrc__lock_free(zkrc_lock *lk);

/* zkrc_lock_free_async() of any lock object, a side or a semaphore's
 * member too (checked by the caller: @p lk and @p done not NULL). */
void zkrc__lock_free_async(zkrc_lock *lk, zkrc_callback_fn done, void *arg);

/* zkrc_lock_release(), without waiting for the delete (it goes on in the
 * background; the session's reaper takes over when it fails): a
 * multi-lock's free (multilock.c). */
int zkrc__lock_release_in_background(zkrc_lock *lk);

/* The calling thread's holder (held or lost), with lk->r.o.mu taken; NULL
 * (and the mutex not held) when it has none. */
holder *zkrc__lock_my_holder_locked(zkrc_lock *lk);

/* Microseconds left of a held hold's lease (0 when not held, or when its
 * session's lease ran out); lk->mu held. */
int64_t zkrc__holder_lease_left_locked(holder *h);

/* How many times threads waiting in zkrc_lock_acquire() woke up, in the
 * process (for the tests). */
guint zkrc__lock_thread_wakeups(void);

/* The path of the node with which @p h held (g_free it), or NULL when it
 * never held: made from its contender's (zkrc__contender_path), not kept
 * in the hold (a held lock should stay small).  Any thread; no mutex of
 * the contender held. */
char *zkrc__holder_node(holder *h);

/* Wake the thread waiting for @p h, if one is (h->wake), and sound its
 * alarm when @p h is lost; lk->mu held. */
void zkrc__holder_wake_locked(holder *h);

/* zkrc_lock_acquire(), sleeping on @p w (with a mutex of its own) and
 * giving up with ZKRC_ELOCKLOST (its node deleted, as on any failure) as
 * soon as w's alarm sounds: a lock the thread holds and had watched with
 * zkrc__lock_watch_hold() was lost.  For multi-locks (multilock.c). */
int zkrc__lock_acquire_watched(zkrc_lock *lk, int timeout_ms, zkrc__waker *w);

/* Have @p w's alarm sound when the calling thread's hold on @p lk is lost
 * (NULL: no longer; do so before @p w goes).  Returns FALSE when the
 * thread does not hold @p lk (any more): nothing is watched then. */
gboolean zkrc__lock_watch_hold(zkrc_lock *lk, zkrc__waker *w);

/* Tell the application about a held lock (lock events); lk->mu held. */
void zkrc__lock_post_event_locked(holder *h, zkrc_lock_event_type ev,
                                  int reason);

#endif /* ZKRC_LOCK_PRIVATE_H */
