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
 * A lock lost while the others are awaited (its session's lease ran out)
 * fails the whole call: the set is reported held only when every lock in
 * it is held at the end.
 *
 * Each lock keeps its own events, fencing token and lease
 * (zkrc_lock_token(), zkrc_lock_is_held() on each); the set's lease is the
 * shortest of theirs.
 */
#ifndef ZKRECIPES_MULTILOCK_H
#define ZKRECIPES_MULTILOCK_H

#include <stddef.h>

#include <zkrecipes/lock.h>

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
 *         was acquired.  Otherwise the first lock's failure, as
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

#ifdef __cplusplus
}
#endif

#endif /* ZKRECIPES_MULTILOCK_H */
