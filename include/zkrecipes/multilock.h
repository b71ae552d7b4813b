/*
 * zkrecipes/multilock.h - several locks (and semaphore leases) at once,
 * all or nothing.
 *
 * A zkrc_multilock names a set whose members are locks (zkrecipes/lock.h,
 * including either side of a read-write lock, zkrecipes/rwlock.h) and
 * semaphores (zkrecipes/semaphore.h: one lease of each).  It is the one
 * API for several locks at once (HACKING, "The contract"): taken for the
 * calling thread with zkrc_multilock_acquire(), or without blocking as a
 * zkrc_multilock_hold with zkrc_multilock_acquire_async().  On success
 * every member is held; on failure none the call took is (what the thread
 * held before the call it still holds), and the nodes made for them are
 * gone (as after a failed zkrc_lock_acquire()).
 *
 * Deadlock freedom.  Two threads or processes that ask for overlapping
 * sets must not each hold a part the other waits for.  So the members are
 * always taken in one global order, whatever order the caller added them
 * in: sorted by their paths (strcmp of zkrc_lock_path(), or a semaphore's
 * directory).  Apache Curator's InterProcessMultiLock takes them in the
 * caller's order, and two callers listing {A, B} and {B, A} can deadlock
 * until their timeouts.  The order is global only among callers that name
 * each lock by the same path: sessions with different chroots, or a caller
 * that also takes some of the locks one by one, are outside it.
 *
 * A member lost while the others are awaited (its session's lease ran
 * out, its node was deleted) fails the whole call: the set is reported
 * held only when every member is held at the end.  A blocking call fails
 * as soon as the library learns of the loss of a lock (as its LOST
 * event), without waiting for the lock it is waiting for; a semaphore's
 * lease lost meanwhile, and any loss in a multilock hold (the
 * non-blocking form), are seen when the awaited member comes.
 *
 * Each member keeps its own events, fencing token and lease
 * (zkrc_multilock_token(), zkrc_multilock_is_held()); the set's lease is
 * the shortest of theirs.
 *
 * The contract, where it does not apply.  A zkrc_multilock has no session
 * and no events of its own (its members have theirs, told through their
 * own on_event): so zkrc_multilock_new() takes no session, path or
 * options, and there is zkrc_multilock_free() but no free_async (freeing
 * it never waits for the network nor for an executor: see there).
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef ZKRECIPES_MULTILOCK_H
#define ZKRECIPES_MULTILOCK_H

#include <stddef.h>

#include <zkrecipes/lock.h>
#include <zkrecipes/semaphore.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Most members a zkrc_multilock takes. */
#define ZKRC_MULTILOCK_MAX 1024

typedef struct zkrc_multilock zkrc_multilock;

/**
 * Create an empty set.
 * @return ZKRC_OK; ZKRC_EINVAL (NULL @p out).  Free with
 *         zkrc_multilock_free().
 */
int zkrc_multilock_new(zkrc_multilock **out);

/**
 * Add a lock to the set (not owned: it must outlive the set).
 * @return ZKRC_OK; ZKRC_EINVAL (NULL argument, a member on the same path
 *         already, ZKRC_MULTILOCK_MAX members already); ZKRC_ESTATE (the
 *         set is held).  Nothing changes on an error.
 */
int zkrc_multilock_add_lock(zkrc_multilock *ml, zkrc_lock *lock);

/**
 * Add one lease of a semaphore to the set (not owned: the semaphore must
 * outlive the set).
 * @return as for zkrc_multilock_add_lock().
 */
int zkrc_multilock_add_semaphore(zkrc_multilock *ml, zkrc_semaphore *sem);

/**
 * Acquire every member for the calling thread, all or nothing, in the
 * order of their paths, under one deadline.  The locks are held by the
 * calling thread (reentrant as zkrc_lock_acquire() is: a lock it held
 * already counts once more); the leases by @p ml, which keeps them until
 * zkrc_multilock_release().
 *
 * @param timeout_ms  one deadline for the whole set: ZKRC_WAIT_FOREVER,
 *                    ZKRC_NO_WAIT (fail as soon as one member is held by
 *                    someone else) or a positive number of ms.
 * @return ZKRC_OK: every lock is held by the calling thread and every lease
 *         by @p ml.  ZKRC_ESTATE: @p ml is held already, or empty.
 *         ZKRC_EINVAL: NULL, or a negative timeout other than
 *         ZKRC_WAIT_FOREVER; nothing is sent.  ZKRC_ELOCKLOST: a member
 *         was lost before the last one was acquired (returned at once for
 *         a lock, not when the member awaited comes).  Otherwise the first
 *         member's failure, as zkrc_lock_acquire() /
 *         zkrc_semaphore_acquire() return it (ZKRC_ETIMEDOUT, ZKRC_ELOCKED,
 *         ZKRC_ESESSIONLOST, ...; zkrc_last_zk_error() is its ZooKeeper
 *         code).  On every failure what the call took has been given back
 *         before it returns (nodes deleted as by a failed
 *         zkrc_lock_acquire() / zkrc_semaphore_acquire()).
 * Threading: @p ml is used by one thread at a time, and released by the
 * thread that acquired it (its locks are that thread's).  Not from a
 * session's callback thread or executor.
 */
int zkrc_multilock_acquire(zkrc_multilock *ml, int timeout_ms);

/**
 * Release every member, last first: one level of the thread's hold on each
 * lock (as zkrc_lock_release()), and each lease (its node deleted in the
 * background).
 * @return ZKRC_OK; ZKRC_ESTATE (not held); ZKRC_ENOTOWNER (the calling
 *         thread does not hold one of its locks, e.g. it is not the thread
 *         that acquired it: nothing is released); ZKRC_ELOCKLOST (a member
 *         had been lost; all are released all the same); ZKRC_EINVAL
 *         (NULL).
 * Threading: the thread that acquired it.
 */
int zkrc_multilock_release(zkrc_multilock *ml);

/** Non-zero while @p ml is acquired and every member is held (locks by
 *  the calling thread's view, see zkrc_lock_is_held()); 0 for NULL. */
int zkrc_multilock_is_held(zkrc_multilock *ml);

/** How many members @p ml has; 0 for NULL. */
size_t zkrc_multilock_count(zkrc_multilock *ml);

/** The path of the @p i-th member in the order they are taken (by path);
 *  owned by the member; NULL when out of range. */
const char *zkrc_multilock_path(zkrc_multilock *ml, size_t i);

/**
 * The fencing token of the @p i-th member (in path order) while @p ml is
 * held: the lock's (zkrc_lock_token()) or the lease's
 * (zkrc_semaphore_lease_token()).
 * @return ZKRC_OK; ZKRC_ESTATE (@p ml not held); ZKRC_EINVAL (NULL
 *         argument, @p i out of range); or the member's error
 *         (ZKRC_ELOCKLOST, ZKRC_ENOTOWNER for a lock the calling thread
 *         does not hold).  *@p token is left alone on an error.
 * Threading: the thread that acquired it (a lock's token is its thread's).
 */
int zkrc_multilock_token(zkrc_multilock *ml, size_t i, int64_t *token);

/**
 * Full path of the @p i-th member's node while @p ml is held.
 * @param path  receives a malloc'ed copy (free it with free()); NULL on an
 *              error.
 * @return as for zkrc_multilock_token(), and ZKRC_ENOMEM.
 */
int zkrc_multilock_node(zkrc_multilock *ml, size_t i, char **path);

/**
 * Free the set: if it is held, it is released first (by the calling
 * thread, which must be the one that acquired it; otherwise its leases are
 * released and its locks are left to their holder).  The members are not
 * freed, and multilock holds started from it are not touched.  It never
 * waits for the network (the deletes of its locks' and leases' nodes go
 * on in the background) and tells nothing: a multilock has no events, hence no free_async.  NULL is
 * ignored.  Threading: as zkrc_multilock_release().
 */
void zkrc_multilock_free(zkrc_multilock *ml);

/* ---------------------------------------------------------------------
 * Non-blocking: a multilock hold.
 *
 * zkrc_multilock_acquire_async() takes the members of a multilock for a
 * zkrc_multilock_hold (not for a thread), one non-blocking acquisition per
 * member (zkrc_lock_acquire_async() for a lock,
 * zkrc_semaphore_acquire_async() for a semaphore), one after the other in
 * the order of their paths, and tells once how it ended.  The completion runs on the executor
 * of the session of the member that decided it (the last one acquired, or
 * the one that failed); when all the members share a session, on that
 * session's executor.  With members of several sessions, completions and
 * member events run on several executors: a failure's completion frees
 * the hold when it returns, so cancel such a hold only where that
 * completion cannot be running (on the same executor as all its sessions,
 * or before its outcome can come).
 *
 * Free a member (zkrc_lock_free(), zkrc_semaphore_free()) only once the
 * hold is released, or its failure told: the hold holds the member's
 * holds.  A lock freed earlier gives its hold back: a pending hold then
 * fails (ZKRC_ELOCKLOST, or ZKRC_ECANCELED when it was the member being
 * acquired), an acquired one is no longer held.
 * --------------------------------------------------------------------- */

typedef struct zkrc_multilock_hold zkrc_multilock_hold;

/** How a multilock hold's acquisition ended; valid only during the
 *  callback. */
typedef struct zkrc_multilock_acquired_info {
  /** ZKRC_OK: every member is held now (checked when the callback runs);
   *  release them with zkrc_multilock_hold_release().  Otherwise the
   *  acquisition failed and the hold is freed when the callback returns,
   *  what it took given back (nodes deleted as by
   *  zkrc_lock_hold_release()): the failure of the member that failed, as
   *  zkrc_lock_acquired_info / zkrc_semaphore_acquired_info tell it
   *  (ZKRC_ETIMEDOUT, ZKRC_ELOCKED, ZKRC_ECANCELED, ...), or
   *  ZKRC_ELOCKLOST when a member was lost before the last one was
   *  acquired. */
  int status;
  /** The ZooKeeper code behind a failure, or ZOK. */
  int zk_error;
  /** The lock that failed (NULL on success, for ZKRC_ELOCKLOST, and when
   *  the member that failed is a semaphore). */
  zkrc_lock *failed;
} zkrc_multilock_acquired_info;

/** Told once how a multilock hold's acquisition ended (see above).  Unlike
 *  the other objects' completions it is not given the zkrc_multilock: the
 *  hold took a copy of its members and may outlive it (the multilock may
 *  have been changed or freed since), so it is given the hold alone. */
typedef void (*zkrc_multilock_acquired_fn)(
    zkrc_multilock_hold *hold, const zkrc_multilock_acquired_info *info,
    void *arg);

/**
 * Start acquiring every member of @p ml, all or nothing, in path order, as
 * a multilock hold; returns at once.  @p done is called exactly once (see
 * above), never from inside this call.  The members are copied: @p ml may
 * be changed or freed meanwhile, but the locks and semaphores must outlive
 * the hold.  Any thread may release the hold.
 *
 * @param timeout_ms  as for zkrc_multilock_acquire().
 * @param hold        if not NULL, receives the hold (to cancel it, or to
 *                    release it once acquired); valid until the failure
 *                    callback returns or until zkrc_multilock_hold_release().
 * @return ZKRC_OK (the callback will come); ZKRC_EINVAL (NULL @p ml or
 *         @p done, bad timeout); ZKRC_ESTATE (no member); or the first
 *         member's refusal to start (ZKRC_ECLOSED, ZKRC_ECANCELED).  On an
 *         error no callback comes and nothing was sent.
 * Events about a member lock's hold (the lock's on_event, ev->hold) carry
 * the multilock hold as zkrc_lock_hold_arg(ev->hold); a semaphore member's
 * events reach its own on_event (zkrc_semaphore_options), not the hold.
 * Threading: any thread, including an executor's (it never blocks).
 */
int zkrc_multilock_acquire_async(zkrc_multilock *ml, int timeout_ms,
                                 zkrc_multilock_acquired_fn done, void *arg,
                                 zkrc_multilock_hold **hold);

/**
 * Cancel a pending acquisition: the completion comes with ZKRC_ECANCELED
 * once what was taken is given back (unless the outcome had already been
 * decided: then this returns ZKRC_ESTATE and that completion comes).
 * @return ZKRC_OK; ZKRC_ESTATE; ZKRC_EINVAL.  Does not block.
 */
int zkrc_multilock_hold_cancel(zkrc_multilock_hold *hold);

/**
 * Release an acquired hold: every member is released (nodes deleted in the
 * background) and @p hold is freed.
 * @return ZKRC_OK; ZKRC_ELOCKLOST (one of them had been lost; all are
 *         released and freed all the same); ZKRC_ESTATE (not acquired:
 *         cancel it instead); ZKRC_EINVAL.
 */
int zkrc_multilock_hold_release(zkrc_multilock_hold *hold);

/** Non-zero while every member of @p hold is held (see
 *  zkrc_lock_hold_is_held()); 0 for NULL. */
int zkrc_multilock_hold_is_held(zkrc_multilock_hold *hold);

/** How many members the hold has; 0 for NULL. */
size_t zkrc_multilock_hold_count(zkrc_multilock_hold *hold);

/** The lock hold of the @p i-th member in the order they are taken (by
 *  path); NULL before the hold is acquired, when @p i is out of range, or
 *  when that member is a semaphore's lease. */
zkrc_lock_hold *zkrc_multilock_hold_member(zkrc_multilock_hold *hold, size_t i);

/** The lease of the @p i-th member (in path order) when it is a semaphore;
 *  NULL otherwise, or before the hold is acquired.  Owned by the hold:
 *  released with it. */
zkrc_semaphore_lease *zkrc_multilock_hold_lease(zkrc_multilock_hold *hold,
                                                size_t i);

/**
 * The fencing token of the @p i-th member (in path order), lock or lease.
 * @return ZKRC_OK; ZKRC_ESTATE (the hold is not acquired); ZKRC_EINVAL
 *         (NULL argument, @p i out of range); or the member's error
 *         (ZKRC_ELOCKLOST).  *@p token is left alone on an error.
 * Threading: any thread, while the hold is valid.
 */
int zkrc_multilock_hold_token(zkrc_multilock_hold *hold, size_t i,
                              int64_t *token);

/**
 * Full path of the @p i-th member's node (in path order), lock or lease.
 * @param path  receives a malloc'ed copy (free it with free()); NULL on an
 *              error.
 * @return as for zkrc_multilock_hold_token(), and ZKRC_ENOMEM.
 */
int zkrc_multilock_hold_node(zkrc_multilock_hold *hold, size_t i, char **path);

/** The @p i-th lock of the hold in the order they are taken (by path);
 *  NULL when @p i is out of range or that member is a semaphore. */
zkrc_lock *zkrc_multilock_hold_lock(zkrc_multilock_hold *hold, size_t i);

/** The @p arg given to zkrc_multilock_acquire_async(); NULL for NULL. */
void *zkrc_multilock_hold_arg(zkrc_multilock_hold *hold);

#ifdef __cplusplus
}
#endif

#endif /* ZKRECIPES_MULTILOCK_H */
