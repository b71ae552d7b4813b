/*
 * zkrecipes: several locks at once, all or nothing.
 *
 * zkrc_lock_acquire_all() takes a set of locks (zkrecipes/lock.h) for the
 * calling thread under one deadline: on success the thread holds every
 * one of them; on failure it holds none it did not hold before, and the
 * nodes it made for them are gone (as after a failed zkrc_lock_acquire()).
 *
 * Deadlock freedom.  Two threads or processes that ask for overlapping
 * sets must not each hold a part the other waits for.  So the locks are
 * always taken in one global order, whatever order the caller lists them
 * in: sorted by their paths (strcmp of zkrc_lock_path()).  Apache
 * Curator's InterProcessMultiLock takes them in the caller's order, and
 * two callers listing {A, B} and {B, A} can deadlock until their timeouts.
 * The order is global only among callers that name each lock by the same
 * path: sessions with different chroots, or a caller that also takes some
 * of the locks one by one, are outside it.
 *
 * A lock lost while the others are awaited (its session's lease ran out,
 * its node was deleted) fails the whole call: the set is reported held
 * only when every lock in it is held at the end.  A blocking call fails as
 * soon as the library learns of the loss of a lock (as its LOST event),
 * without waiting for the lock it is waiting for; a semaphore's lease
 * lost meanwhile, and any loss in a set hold (the non-blocking form), are
 * seen when the awaited member comes.
 *
 * Each lock keeps its own events, fencing token and lease
 * (zkrc_lock_token(), zkrc_lock_is_held() on each); the set's lease is the
 * shortest of theirs.
 */
#ifndef ZKRECIPES_MULTILOCK_H
#define ZKRECIPES_MULTILOCK_H

#include <stddef.h>

#include <zkrecipes/lock.h>
#include <zkrecipes/semaphore.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Largest set zkrc_lock_acquire_all() takes. */
#define ZKRC_MULTILOCK_MAX 1024

/**
 * Acquire every lock of @p locks for the calling thread, all or nothing,
 * in the order of their paths.
 *
 * @param locks       @p count locks (not owned; they must outlive the
 *                    call), each on its own path; they may belong to
 *                    different sessions.
 * @param timeout_ms  one deadline for the whole set: ZKRC_WAIT_FOREVER,
 *                    ZKRC_NO_WAIT (fail as soon as one lock is held by
 *                    someone else) or a positive number of ms.
 * @return ZKRC_OK: the thread holds all of them (a lock it already held
 *         counts once more, as with zkrc_lock_acquire()).
 *         ZKRC_EINVAL: NULL @p locks or a NULL lock, @p count 0 or above
 *         ZKRC_MULTILOCK_MAX, two locks on the same path (the second
 *         would wait for the first for ever), or a negative timeout other
 *         than ZKRC_WAIT_FOREVER / ZKRC_NO_WAIT; nothing is sent.
 *         ZKRC_ELOCKLOST: a lock of the set was lost before the last one
 *         was acquired (returned at once, not when the lock awaited
 *         comes).  Otherwise the first lock's failure, as
 *         zkrc_lock_acquire() returns it (ZKRC_ETIMEDOUT, ZKRC_ELOCKED,
 *         ZKRC_ESESSIONLOST, ...; zkrc_last_zk_error() is its ZooKeeper
 *         code).  On every failure, what the call took has been released
 *         before it returns (its nodes deleted, as zkrc_lock_release()
 *         does); what the thread held before the call it still holds.
 * Threading: any thread but a session's callback thread.
 */
int zkrc_lock_acquire_all(zkrc_lock *const *locks, size_t count,
                          int timeout_ms);

/**
 * Release one level of the calling thread's hold on every lock of
 * @p locks (as zkrc_lock_release() on each, in the reverse of the
 * acquisition order).
 *
 * @return ZKRC_OK; ZKRC_EINVAL (as for zkrc_lock_acquire_all());
 *         ZKRC_ENOTOWNER when the thread does not hold one of them: then
 *         nothing is released; ZKRC_ELOCKLOST when one of them had been
 *         lost (every lock is released all the same).
 * Threading: any thread but a session's callback thread.
 */
int zkrc_lock_release_all(zkrc_lock *const *locks, size_t count);

/* ---------------------------------------------------------------------
 * Non-blocking: a set hold.
 *
 * zkrc_lock_acquire_all_async() takes the set for a set hold (not for a
 * thread), one non-blocking hold (zkrc_lock_hold) per lock, one after the
 * other in the order of their paths, and tells once how it ended.  The
 * completion runs on the executor of the session of the lock that decided
 * it (the last one acquired, or the one that failed); when all the locks
 * share a session, on that session's executor.  With locks of several
 * sessions, completions and member events run on several executors: a
 * failure's completion frees the set when it returns, so cancel such a set
 * only where that completion cannot be running (on the same executor as
 * all its sessions, or before its outcome can come).
 *
 * Free a lock of the set (zkrc_lock_free()) only once the set is released,
 * or its failure told: the set holds the lock's holds.  A lock freed
 * earlier gives its hold back: a pending set then fails (ZKRC_ELOCKLOST,
 * or ZKRC_ECANCELED when it was the member being acquired), an acquired
 * one is no longer held.
 * --------------------------------------------------------------------- */

typedef struct zkrc_lock_set_hold zkrc_lock_set_hold;

/** How a set's acquisition ended; valid only during the callback. */
typedef struct zkrc_lock_set_acquired_info {
  /** ZKRC_OK: every lock is held now (checked when the callback runs);
   *  release them with zkrc_lock_set_hold_release().  Otherwise the
   *  acquisition failed and the set hold is freed when the callback
   *  returns, what it took given back (nodes deleted as by
   *  zkrc_lock_hold_release()): the failure of the lock that failed, as
   *  zkrc_lock_acquired_info tells it (ZKRC_ETIMEDOUT, ZKRC_ELOCKED,
   *  ZKRC_ECANCELED, ...), or ZKRC_ELOCKLOST when a lock of the set was
   *  lost before the last one was acquired. */
  int status;
  /** The ZooKeeper code behind a failure, or ZOK. */
  int zk_error;
  /** The lock that failed (NULL on success, for ZKRC_ELOCKLOST, and when
   *  the member that failed is a semaphore's lease). */
  zkrc_lock *failed;
} zkrc_lock_set_acquired_info;

/** Told once how a set's acquisition ended (see above). */
typedef void (*zkrc_lock_set_acquired_fn)(
    zkrc_lock_set_hold *set, const zkrc_lock_set_acquired_info *info,
    void *arg);

/**
 * Start acquiring every lock of @p locks, all or nothing, in the order of
 * their paths; returns at once.  @p done is called exactly once (see
 * above), never from inside this call.
 *
 * @param locks, count, timeout_ms  as for zkrc_lock_acquire_all(); the
 *                    array is copied, the locks must outlive the set hold.
 * @param set         if not NULL, receives the set hold (to cancel it, or
 *                    to release it once acquired); valid until the failure
 *                    callback returns or until zkrc_lock_set_hold_release().
 * @return ZKRC_OK (the callback will come); ZKRC_EINVAL (as for
 *         zkrc_lock_acquire_all(), or NULL @p done); ZKRC_ENOMEM; or the
 *         first lock's refusal to start (ZKRC_ECLOSED, ZKRC_ECANCELED).
 *         On an error no callback comes and nothing was sent.
 * Events about a member's hold (the lock's on_event, info->hold) carry the
 * set hold as zkrc_lock_hold_arg(info->hold).
 * Threading: any thread, including an executor's (it never blocks).
 */
int zkrc_lock_acquire_all_async(zkrc_lock *const *locks, size_t count,
                                int timeout_ms, zkrc_lock_set_acquired_fn done,
                                void *arg, zkrc_lock_set_hold **set);

/**
 * Cancel a pending acquisition: the completion comes with ZKRC_ECANCELED
 * once what was taken is given back (unless the outcome had already been
 * decided: then this returns ZKRC_ESTATE and that completion comes).
 * @return ZKRC_OK; ZKRC_ESTATE; ZKRC_EINVAL.  Does not block.
 */
int zkrc_lock_set_hold_cancel(zkrc_lock_set_hold *set);

/**
 * Release an acquired set: every member hold is released (nodes deleted in
 * the background) and @p set is freed.
 * @return ZKRC_OK; ZKRC_ELOCKLOST (one of them had been lost; all are
 *         released and freed all the same); ZKRC_ESTATE (not acquired:
 *         cancel it instead); ZKRC_EINVAL.
 */
int zkrc_lock_set_hold_release(zkrc_lock_set_hold *set);

/** Non-zero while every lock of @p set is held (see
 *  zkrc_lock_hold_is_held()); 0 for NULL. */
int zkrc_lock_set_hold_is_held(zkrc_lock_set_hold *set);

/** How many locks the set has; 0 for NULL. */
size_t zkrc_lock_set_hold_count(zkrc_lock_set_hold *set);

/** The member hold of the @p i-th lock in the order they are taken (by
 *  path), for its token (zkrc_lock_hold_token()) or lock; NULL before the
 *  set is acquired, when @p i is out of range, or when that member is a
 *  semaphore's lease. */
zkrc_lock_hold *zkrc_lock_set_hold_member(zkrc_lock_set_hold *set, size_t i);

/** The lease of the @p i-th member (in path order) when it is a semaphore
 *  (see zkrc_multilock_acquire_async()); NULL otherwise, or before the set
 *  is acquired.  Owned by the set: released with it. */
zkrc_semaphore_lease *zkrc_lock_set_hold_lease(zkrc_lock_set_hold *set,
                                               size_t i);

/** The fencing token of the @p i-th member (in path order), lock or lease,
 *  while the set is held; 0 otherwise. */
int64_t zkrc_lock_set_hold_token(zkrc_lock_set_hold *set, size_t i);

/** The @p i-th lock of the set in the order they are taken (by path);
 *  NULL when @p i is out of range or that member is a semaphore. */
zkrc_lock *zkrc_lock_set_hold_lock(zkrc_lock_set_hold *set, size_t i);

/** The @p arg given to zkrc_lock_acquire_all_async(); NULL for NULL. */
void *zkrc_lock_set_hold_arg(zkrc_lock_set_hold *set);

/* ---------------------------------------------------------------------
 * Mixed sets: locks and semaphore leases, all or nothing.
 *
 * A zkrc_multilock names a set whose members are locks (zkrecipes/lock.h,
 * including either side of a read-write lock, zkrecipes/rwlock.h) and
 * semaphores (zkrecipes/semaphore.h: one lease of each).  It is taken and
 * given back as zkrc_lock_acquire_all() / zkrc_lock_release_all() do: in
 * the order of the members' paths (a semaphore's path is its directory),
 * under one deadline, all or nothing, so that callers naming the same
 * members in different orders cannot deadlock.  The locks are held by the
 * calling thread (reentrant as zkrc_lock_acquire() is); the leases by the
 * multilock object, which keeps them until zkrc_multilock_release().
 *
 * Threading: a multilock object is used by one thread at a time, and is
 * released by the thread that acquired it (its locks are that thread's).
 * Not from a session's callback thread or executor.
 * --------------------------------------------------------------------- */

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
 * Acquire every member, all or nothing, in the order of their paths.
 *
 * @param timeout_ms  as for zkrc_lock_acquire_all().
 * @return ZKRC_OK: every lock is held by the calling thread and every lease
 *         by @p ml.  ZKRC_ESTATE: @p ml is held already, or empty.
 *         ZKRC_EINVAL: NULL, bad timeout.  ZKRC_ELOCKLOST: a member was
 *         lost before the last one was acquired.  Otherwise the first
 *         member's failure (ZKRC_ETIMEDOUT, ZKRC_ELOCKED, ...).  On every
 *         failure what the call took has been given back (nodes deleted as
 *         by a failed zkrc_lock_acquire() / zkrc_semaphore_acquire()).
 */
int zkrc_multilock_acquire(zkrc_multilock *ml, int timeout_ms);

/**
 * Release every member, last first: one level of the thread's hold on each
 * lock, and each lease (its node deleted in the background).
 * @return ZKRC_OK; ZKRC_ESTATE (not held); ZKRC_ENOTOWNER (the calling
 *         thread is not the one that acquired it: nothing is released);
 *         ZKRC_ELOCKLOST (a member had been lost; all are released all the
 *         same); ZKRC_EINVAL (NULL).
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

/** The fencing token of the @p i-th member (in path order) while @p ml is
 *  held: the lock's token (zkrc_lock_token()) or the lease's
 *  (zkrc_semaphore_lease_token()); 0 when not held or out of range. */
int64_t zkrc_multilock_token(zkrc_multilock *ml, size_t i);

/** Full path of the @p i-th member's node while held, malloc'ed (free it);
 *  NULL otherwise. */
char *zkrc_multilock_node(zkrc_multilock *ml, size_t i);

/**
 * The non-blocking form: start acquiring every member of @p ml, all or
 * nothing, in path order, as a set hold (see zkrc_lock_acquire_all_async():
 * the same completion, cancel, release and accessors).  Each lock is taken
 * as a non-blocking hold (zkrc_lock_acquire_async()), each semaphore as a
 * lease (zkrc_semaphore_acquire_async()), so the set belongs to the set
 * hold, not to a thread: any thread may release it.  The members are
 * copied: @p ml may be changed or freed meanwhile, but the locks and
 * semaphores must outlive the set hold.  A semaphore member's events reach
 * its own on_event (zkrc_semaphore_options), not the set.
 * @return ZKRC_OK (the callback will come); ZKRC_EINVAL (NULL, bad
 *         timeout); ZKRC_ESTATE (no member); or the first member's refusal
 *         to start.  On an error no callback comes.
 * Threading: any thread, including an executor's (it never blocks).
 */
int zkrc_multilock_acquire_async(zkrc_multilock *ml, int timeout_ms,
                                 zkrc_lock_set_acquired_fn done, void *arg,
                                 zkrc_lock_set_hold **set);

/**
 * Free the set: if it is held, it is released first (by the calling
 * thread, which must be the one that acquired it; otherwise its leases are
 * released and its locks are left to their holder).  The members are not
 * freed.  NULL is ignored.
 */
void zkrc_multilock_free(zkrc_multilock *ml);

#ifdef __cplusplus
}
#endif

#endif /* ZKRECIPES_MULTILOCK_H */
