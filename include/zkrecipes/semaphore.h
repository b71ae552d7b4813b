/*
 * zkrecipes/semaphore.h - a counting semaphore: at most N lease holders.
 *
 * Protocol (wire-compatible with Apache Curator's InterProcessSemaphoreV2):
 * the semaphore is a directory PATH with two children, "PATH/locks", a
 * mutex (zkrecipes/lock.h's "_c_<uuid>-lock-<seq>" nodes, like Curator's
 * InterProcessMutex), and "PATH/leases", where each lease is an ephemeral
 * sequential node "_c_<uuid>-lease-<seq>" holding the participant id.  To
 * acquire a lease a client takes the mutex, creates its lease node (the
 * listing of the leases is pipelined behind the create: one round trip
 * when a lease is free), and holds the lease when its node is among the
 * first N of the directory's leases; otherwise it keeps the mutex and
 * watches the leases directory until one goes.  It lets the mutex go once
 * it holds its lease or gave up.  So at most one client watches the leases
 * at a time (the mutex's holder), and the others wait in the mutex's queue,
 * each watching only its predecessor: no herd.  A release deletes the
 * lease node.
 *
 * Held means held: a lease is reported held only while its node exists, is
 * ours, among the first N, and the session's lease (zkrecipes/session.h)
 * has time left; its loss is told (on_event, ZKRC_LOCK_LOST) no later than
 * the session lease's deadline, before the servers can expire the session
 * and admit someone else.  Every failed acquisition (timeout, cancel,
 * session loss, free) deletes its lease node and its mutex node; when the
 * connection is down, as soon as it is back (or the servers remove them
 * with the session).  A create whose reply was lost is found again by its
 * protected name, never duplicated.
 *
 * Disagreeing on N.  Each client admits itself by its own N: a lease node
 * holds when fewer than N (its client's N) leases are ahead of it.  With
 * clients that use different N on one path, the effective bound is the
 * largest N in use (a client with the larger N admits itself next to
 * holders that count by a smaller one).  Curator behaves the same (it
 * does not store N).  Use one N per path.
 *
 * Other clients.  Curator's InterProcessSemaphoreV2 on the same path
 * counts against our N and we against its.  kazoo's Semaphore speaks
 * another protocol (its lock at "PATH-__lock__", non-sequential lease
 * nodes "PATH/<uuid>", N written into PATH's data) and does not
 * interoperate with either; do not mix it in.
 *
 * Fencing.  A lease's token (zkrc_semaphore_lease_token()) is the czxid of its
 * lease node: unique among all leases ever granted on the ensemble, and
 * higher for a lease granted after another was released.  Up to N holders
 * hold tokens at once, so a resource can refuse a token older than the
 * oldest it must still accept, not "the highest seen".
 *
 * Threads.  A lease belongs to its lease object, not to a thread: any
 * thread may release it, and one thread may hold several leases of one
 * semaphore (each is a lease node of its own; there is no reentrancy).
 */
#ifndef ZKRECIPES_SEMAPHORE_H
#define ZKRECIPES_SEMAPHORE_H

#include <stdint.h>

#include <zkrecipes/executor.h>
#include <zkrecipes/lock.h>
#include <zkrecipes/participants.h>
#include <zkrecipes/session.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zkrc_semaphore zkrc_semaphore;
typedef struct zkrc_semaphore_lease zkrc_semaphore_lease;

/** What happened to a held lease: the lock's event types and fields
 *  (zkrecipes/lock.h); valid only during the callback.  Its first three
 *  fields are every zkrecipes event's (HACKING, "The contract").  The
 *  type is the lock's, zkrc_lock_event_type, since a lease's events are
 *  exactly a lock hold's. */
typedef struct zkrc_semaphore_event {
  /** ZKRC_LOCK_SUSPENDED, ZKRC_LOCK_RECONNECTED or ZKRC_LOCK_LOST. */
  zkrc_lock_event_type type;
  /** LOST: why (ZKRC_ESESSIONEXPIRED, ZKRC_ESESSIONLOST, ZKRC_ECLOSED,
   *  ZKRC_ELOCKLOST for a deleted lease node); ZKRC_OK otherwise. */
  int reason;
  /** The ZooKeeper code behind @p reason, or ZOK when there is none. */
  int zk_error;
  /** The lease's fencing token. */
  int64_t token;
  /** The lease this is about; valid during the callback (release it there
   *  or later). */
  zkrc_semaphore_lease *lease;
} zkrc_semaphore_event;

/**
 * Told about a held lease.  Runs on the session's executor, never with a
 * zkrecipes mutex held; it may call any non-blocking zkrc_semaphore
 * function, and free the semaphore (zkrc_semaphore_free() or
 * zkrc_semaphore_free_async()).
 */
typedef void (*zkrc_semaphore_event_fn)(zkrc_semaphore *sem,
                                        const zkrc_semaphore_event *ev,
                                        void *arg);

/** Options of a semaphore; initialize with zkrc_semaphore_options_init(). */
typedef struct zkrc_semaphore_options {
  /** Set by the _init function (see zkrc_lock_options.size); options that
   *  were not initialized are refused with ZKRC_EINVAL. */
  size_t size;
  /** Data of the nodes this semaphore creates.  NULL (default):
   *  "<hostname>:<pid>". */
  const char *participant_id;
  /** ACL of the nodes it creates.  NULL (default): ZOO_OPEN_ACL_UNSAFE. */
  const struct ACL_vector *acl;
  /** Told when a held lease is suspended, reconnected or lost.  Setting it
   *  also watches each lease node, so that its deletion by someone else is
   *  told as LOST (one extra read per acquisition).  NULL: none. */
  zkrc_semaphore_event_fn on_event;
  void *event_arg;
} zkrc_semaphore_options;

/** Fill @p opts with the defaults.  Threading: any thread.  Fills the
 *  first @p size bytes of @p opts, the size of the struct as your program
 *  was compiled with it, and sets its size field to it: the fields a
 *  program built against an older, shorter zkrc_semaphore_options lacks
 *  are never written.  Call zkrc_semaphore_options_init(), which passes
 *  it. */
void zkrc_semaphore_options_init_sized(zkrc_semaphore_options *opts,
                                       size_t size);

/** Fill @p opts with the defaults.  Threading: any thread.  Inline: it
 *  passes sizeof *@p opts as this header defines it to
 *  zkrc_semaphore_options_init_sized(), so a program keeps working with a
 *  later library whose struct has grown (and a later program, whose
 *  struct is longer, with this library: the fields it does not know are
 *  ignored). */
static inline void zkrc_semaphore_options_init(zkrc_semaphore_options *opts) {
  zkrc_semaphore_options_init_sized(opts, sizeof *opts);
}

/**
 * Create a semaphore of @p max_leases leases at @p path on session @p s.
 * Nothing is sent until the first acquisition.
 *
 * @param path        the semaphore's directory (zkrc_path_validate()).
 * @param max_leases  N, at least 1 (see "Disagreeing on N" above).
 * @param opts        NULL for the defaults; copied.
 * @return ZKRC_OK; ZKRC_EINVAL (NULL argument, invalid path or ACL,
 *         max_leases < 1, options not initialized); ZKRC_ETOOBIG
 *         (participant_id, the data of every contender node, too large
 *         for the node's create to pass ZooKeeper's size limit; README,
 *         "Sizes"); ZKRC_ECLOSED.
 * Ownership: the caller frees *out with zkrc_semaphore_free(); the
 * semaphore keeps a reference on the session.
 */
int zkrc_semaphore_new(zkrc_semaphore **out, zkrc_session *s, const char *path,
                       int max_leases, const zkrc_semaphore_options *opts);

/**
 * Free the semaphore: threads waiting in zkrc_semaphore_acquire() return
 * ZKRC_ECANCELED before this returns; pending non-blocking acquisitions
 * complete with ZKRC_ECANCELED later (their completion is owed: it comes
 * after this returns; do not use @p sem in it); held leases are released
 * and their lease objects freed, so their pointers are invalid on return.
 * Every node is given up in the background (deletes sent, never awaited:
 * it never waits for the network, whatever the session's state).  No
 * lease event is told after it returns; it waits only for this
 * semaphore's callback running on another thread.  NULL is ignored.
 * Threading: any thread, including this semaphore's own callbacks (it
 * does not wait for itself there).
 */
void zkrc_semaphore_free(zkrc_semaphore *sem);

/**
 * Free the semaphore without blocking: as zkrc_semaphore_free() (pending
 * acquisitions complete with ZKRC_ECANCELED, held leases are released and
 * their lease objects freed), and then @p done runs on the session's
 * executor, after the last event and completion of the semaphore, once
 * its nodes are deleted (or, when the connection is down, handed to the
 * session to delete).  No event about a lease this call released is
 * delivered.  From this call on, use @p sem only in the callbacks still
 * to come; after @p done returns it is gone.
 *
 * @return ZKRC_OK (@p done will run); ZKRC_EINVAL (NULL @p sem or
 *         @p done; nothing changes).
 * Threading: any thread, including the executor's and this semaphore's
 * own callbacks, while the session's executor is alive.  Call it once,
 * instead of zkrc_semaphore_free().
 */
int zkrc_semaphore_free_async(zkrc_semaphore *sem, zkrc_callback_fn done,
                              void *arg);

/**
 * Acquire a lease, waiting at most @p timeout_ms.
 *
 * @param timeout_ms  ZKRC_WAIT_FOREVER; ZKRC_NO_WAIT (fail with
 *                    ZKRC_ELOCKED when the first look at the leases finds N
 *                    held; the internal mutex is awaited at most a session
 *                    timeout, its holders keep it only while they look); or
 *                    a positive number of ms, one deadline for the mutex and
 *                    the lease together.
 * @param out  receives the lease on ZKRC_OK, NULL otherwise.
 * @return ZKRC_OK; ZKRC_ETIMEDOUT; ZKRC_ELOCKED (ZKRC_NO_WAIT); ZKRC_ECANCELED
 *         (zkrc_semaphore_free() meanwhile); ZKRC_ESESSIONEXPIRED,
 *         ZKRC_ESESSIONLOST, ZKRC_ECLOSED, ZKRC_ENOAUTH, ... as for
 *         zkrc_lock_acquire(); ZKRC_EINVAL (NULL, bad timeout: nothing sent).
 *         On failure the nodes this acquisition made have been deleted
 *         before returning when the connection is up (confirming that may
 *         take up to 0.5 s past the deadline); when it is down or stalled,
 *         the call returns then anyway and the deletes complete in the
 *         background as soon as the connection is back (or the session's
 *         expiry removes the nodes).
 * Threading: any thread but the one that runs the session's executor (the
 * acquisition's steps complete there).
 */
int zkrc_semaphore_acquire(zkrc_semaphore *sem, int timeout_ms,
                           zkrc_semaphore_lease **out);

/**
 * Release a lease: its node is deleted in the background (when connected,
 * the servers confirm within a round trip; when not, the delete happens as
 * soon as the connection is back, or the expiry removes it), the waiter
 * that watches the leases looks again, and @p lease is freed.
 * @return ZKRC_OK; ZKRC_ELOCKLOST (it had been lost; freed all the same);
 *         ZKRC_ESTATE (not acquired yet: cancel it instead; nothing
 *         changes); ZKRC_EINVAL (NULL).  Threading: any thread; does not
 *         block.
 */
int zkrc_semaphore_lease_release(zkrc_semaphore_lease *lease);

/** Non-zero while @p lease is held: acquired, not lost, and its session's
 *  lease has time left (see zkrc_lock_is_held()).  Local state only. */
int zkrc_semaphore_lease_is_held(zkrc_semaphore_lease *lease);

/**
 * The lease's fencing token (czxid of its node).
 * @return ZKRC_OK; ZKRC_ESTATE (not acquired yet, or its semaphore is
 *         being freed); ZKRC_ELOCKLOST (lost); ZKRC_EINVAL (NULL
 *         argument).  *@p token is left alone on an error.
 * Threading: any thread, while the lease is valid.
 */
int zkrc_semaphore_lease_token(zkrc_semaphore_lease *lease, int64_t *token);

/** How long, in ms, @p lease certainly lasts from now (the session's
 *  lease); 0 when not held or NULL. */
int zkrc_semaphore_lease_remaining(zkrc_semaphore_lease *lease);

/**
 * Full path of the lease's node.
 * @param path  receives a malloc'ed copy (free it with free()); NULL on an
 *              error.
 * @return ZKRC_OK; ZKRC_ESTATE (not acquired yet, or its semaphore is
 *         being freed); ZKRC_ELOCKLOST (lost); ZKRC_EINVAL (NULL
 *         argument); ZKRC_ENOMEM.
 * Threading: any thread, while the lease is valid.
 */
int zkrc_semaphore_lease_node(zkrc_semaphore_lease *lease, char **path);

/** The semaphore's N. */
int zkrc_semaphore_max_leases(zkrc_semaphore *sem);

/** The semaphore's directory path (owned by it); NULL for NULL. */
const char *zkrc_semaphore_path(zkrc_semaphore *sem);

/**
 * Every lease node of the semaphore at @p path (under PATH/leases), in
 * queue order, with node names and participant ids (node data), asked of
 * the servers; Curator's leases included.  The first N hold their lease;
 * at most one more (the internal mutex's holder) waits for one.  No
 * semaphore object needed (for tools and monitoring).  A path that does not
 * exist yet yields an empty list.
 *
 * @param list   receives a malloc'ed array; free it with
 *               zkrc_participants_free().  NULL when empty.
 * @param timeout_ms  as for zkrc_lock_participants().
 * @return ZKRC_OK; ZKRC_EINVAL (NULL, invalid path, bad timeout: nothing
 *         sent); ZKRC_ETIMEDOUT; ZKRC_ECONNLOSS; ZKRC_ECLOSED; ZKRC_ENOAUTH.
 * Threading: any thread but the session's callback thread.
 */
int zkrc_semaphore_list(zkrc_session *s, const char *path,
                        zkrc_participant **list, size_t *count, int timeout_ms);

/* ------------------------------------------------------------------------
 * Non-blocking acquisition, for event loops.
 * --------------------------------------------------------------------- */

/** How a non-blocking acquisition ended; valid only during the
 *  callback. */
typedef struct zkrc_semaphore_acquired_info {
  /** ZKRC_OK: the lease is held now; release it with
   *  zkrc_semaphore_lease_release().  Otherwise the failure, as
   *  zkrc_semaphore_acquire() returns it (ZKRC_ETIMEDOUT, ZKRC_ELOCKED,
   *  ZKRC_ECANCELED, ZKRC_ESESSIONLOST, ZKRC_ENOAUTH, ...), and the lease
   *  object is freed when the callback returns. */
  int status;
  /** The ZooKeeper code behind a failure (zookeeper.h's ZOO_ERRORS, such
   *  as ZNOAUTH), or ZOK (0) when there is none. */
  int zk_error;
  /** The lease's fencing token when status is ZKRC_OK, else 0. */
  int64_t token;
} zkrc_semaphore_acquired_info;

/** Told once how a non-blocking acquisition ended: @p lease is the lease
 *  when info->status is ZKRC_OK, NULL otherwise. */
typedef void (*zkrc_semaphore_acquired_fn)(
    zkrc_semaphore *sem, zkrc_semaphore_lease *lease,
    const zkrc_semaphore_acquired_info *info, void *arg);

/**
 * Start acquiring a lease; returns at once.  @p done is called exactly
 * once, on the session's executor, never from inside this call.
 *
 * @param timeout_ms  as for zkrc_semaphore_acquire().
 * @param pending     if not NULL, receives the lease object being acquired
 *                    (for zkrc_semaphore_lease_cancel()); valid until the
 *                    completion returns (on failure) or the lease's release.
 * @return ZKRC_OK (the callback will come); ZKRC_EINVAL; ZKRC_ECLOSED;
 *         ZKRC_ECANCELED (being freed).  On an error no callback comes.
 * Threading: any thread, including the executor's.
 */
int zkrc_semaphore_acquire_async(zkrc_semaphore *sem, int timeout_ms,
                                 zkrc_semaphore_acquired_fn done, void *arg,
                                 zkrc_semaphore_lease **pending);

/**
 * Give up a pending acquisition: its completion comes with ZKRC_ECANCELED
 * (or, when it was decided already, as decided).  Its nodes are deleted.
 * @return ZKRC_OK; ZKRC_ESTATE (already decided); ZKRC_EINVAL.
 */
int zkrc_semaphore_lease_cancel(zkrc_semaphore_lease *pending);

#ifdef __cplusplus
}
#endif
#endif /* ZKRECIPES_SEMAPHORE_H */
