/*
 * zkrecipes/rwlock.h - a fair, fenced, per-thread reentrant read-write lock.
 *
 * A read-write lock has two sides, each a zkrc_lock (zkrecipes/lock.h) owned
 * by the read-write lock: every lock call works on either side (blocking
 * acquisition with a deadline, release, is_held, lease_remaining, depth,
 * token, node, fenced_multi, events, zkrc_lock_acquire_async).  Readers
 * share the lock; a writer holds it alone.
 *
 * Protocol (wire-compatible with Apache Curator's InterProcessReadWriteLock):
 * the lock is a directory node; a reader creates an ephemeral sequential
 * child "_c_<uuid>-__READ__<sequence>", a writer
 * "_c_<uuid>-__WRIT__<sequence>", holding its participant id.  Contenders are ordered by sequence, read as
 * a signed 32-bit number, whatever their dialect: Curator's readers and
 * writers, kazoo's ReadLock ("__rlock__", shared) and WriteLock ("__lock__",
 * exclusive), and our mutex's "lock-" nodes (exclusive), so that a
 * zkrc_lock on the same path excludes readers and writers, and they it.
 *
 *  - A reader holds when no exclusive node (writer or mutex) is ahead of it;
 *    otherwise it watches only the nearest exclusive node ahead.  Readers
 *    behind a released writer are all admitted together.
 *  - A writer holds first in line and watches only the node just before it,
 *    like the mutex.  Fair: a writer is not overtaken by readers that came
 *    after it (they wait for it), so a stream of readers cannot starve it.
 *
 * Other clients.  Curator's readers and writers and ours exclude each other
 * both ways.  kazoo counts only the names it is told: create its locks with
 * extra_lock_patterns, ReadLock(path, id, extra_lock_patterns=["__WRIT__",
 * "-lock-"]) and WriteLock(path, id, extra_lock_patterns=["__READ__",
 * "__WRIT__", "-lock-"]), and they exclude ours both ways too (without
 * them, a kazoo writer ignores our readers).  kazoo before 2.9 (Debian 12
 * ships 2.8) has a ReadLock bug (python-zk/kazoo#649): a kazoo reader waits
 * for the last exclusive node in the directory, even one queued behind it,
 * so it can deadlock with any writer that comes after it, kazoo's own
 * included; our readers and writers are not affected, but a kazoo reader
 * mixed with writers can wait until its timeout.  Curator orders names it does
 * not know as text, not by sequence: its InterProcessMutex does not wait
 * for readers and writers, nor its read-write lock for our mutex or kazoo,
 * so do not mix Curator's mutex or read-write lock with other kinds of
 * contenders on one path (ours see all of them correctly).
 *
 * Threads.  Ownership of each side is per thread, as for zkrc_lock: the
 * thread that acquired a side may acquire it again (a count, nothing sent)
 * and releases it as many times.
 *  - Downgrade: a thread that holds the write side may acquire the read side
 *    of the same zkrc_rwlock.  Its reader node is created while it holds the
 *    writer, and its own writer ahead does not stop it (the thread's writer
 *    node is named to the admission policy as no obstacle); it is admitted at
 *    once unless another writer queued behind our writer before the reader
 *    node was made: that writer would hold while our reader does as soon as
 *    our writer goes, and our reader cannot pass it, so the acquisition
 *    fails with ZKRC_EDEADLK as soon as its first look at the queue shows
 *    it, without waiting (its node deleted, nothing else changed: release
 *    the write side and acquire the read side anew).  Then release the write side:
 *    the thread keeps the read side, and no writer got in between.
 *  - Upgrade: a thread that holds (or lost without releasing) the read side
 *    and asks for the write side it does not hold fails at once with
 *    ZKRC_EDEADLK and nothing changes: its own reader would stop its
 *    writer forever.  (Curator's lock hangs.)
 * Non-blocking holds (zkrc_lock_acquire_async) belong to hold objects, not
 * threads: each is a contender of its own, without reentrancy, downgrade
 * or upgrade detection (a loop that holds a read hold and asks for a write
 * hold waits for itself until its deadline).
 *
 * Fencing.  A hold's token (zkrc_lock_token) is the czxid of its node, on
 * both sides.  A writer's token is larger than the token of every reader
 * and writer admitted before it (they were ahead of it in the queue, so
 * their nodes were created before its node).  Readers admitted together
 * hold at the same time, and their tokens are in no particular order: a
 * reader's token only tells that every writer admitted after this reader
 * has a larger one.  So a resource guarded by the lock checks writes, not
 * reads: it remembers the largest writer token it accepted and refuses a
 * write carrying a smaller one (a stale writer).  A reader that must not
 * read data written after its hold ended can compare the token of the
 * writer that wrote the data with its own: a larger one means a writer held
 * after the reader's node was made, and so after the reader's hold (or
 * concurrently with a lost one).
 *
 * Threading: every function may be called from any thread; blocking
 * functions not from a session callback.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef ZKRECIPES_RWLOCK_H
#define ZKRECIPES_RWLOCK_H

#include <stddef.h>
#include <zkrecipes/executor.h>
#include <zkrecipes/lock.h>
#include <zkrecipes/session.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zkrc_rwlock zkrc_rwlock;

/** Options of a read-write lock; initialize with zkrc_rwlock_options_init().
 *  The fields mean what they mean for a zkrc_lock (zkrc_lock_options).
 *
 *  Events.  A read-write lock's events are its sides' lock events: each
 *  side is a zkrc_lock, held and lost as a lock is, so on_event is a
 *  zkrc_lock_event_fn told a zkrc_lock_event (type, reason, zk_error
 *  first, as the contract of HACKING says), whose first argument is the
 *  side.  There is no zkrc_rwlock_event type of its own: it would be the
 *  lock's, field for field. */
typedef struct zkrc_rwlock_options {
  /** Set by zkrc_rwlock_options_init() to the size of the struct your
   *  program was compiled with; options never initialized (size 0) are
   *  refused with ZKRC_EINVAL. */
  size_t size;
  /** Data of every node the lock creates (the participant id); NULL
   *  (default): "<hostname>:<pid>". */
  const char *participant_id;
  /** ACL of the nodes it creates; NULL (default): ZOO_OPEN_ACL_UNSAFE. */
  const struct ACL_vector *acl;
  /** Told when a held side is suspended, reconnected or lost; its first
   *  argument is the side (compare with zkrc_rwlock_reader() and
   *  zkrc_rwlock_writer()).  As for zkrc_lock_options.on_event, setting it
   *  makes every participant watch its own node.  NULL (default): none. */
  zkrc_lock_event_fn on_event;
  void *event_arg;
  /** Non-zero: both sides are revocable, as zkrc_lock_options.revocable
   *  makes a lock (Curator's InterProcessReadWriteLock's sides are
   *  InterProcessMutexes, whose makeRevocable() this is): a reader or a
   *  writer whose node's data becomes "__REVOKE__" is told
   *  ZKRC_LOCK_REVOKE_REQUESTED.  Needs on_event.  0 (default): not. */
  int revocable;
} zkrc_rwlock_options;

/** Fill @p opts with the defaults.  Threading: any thread.  Fills the
 *  first @p size bytes of @p opts, the size of the struct as your program
 *  was compiled with it, and sets its size field to it: the fields a
 *  program built against an older, shorter zkrc_rwlock_options lacks are
 *  never written.  Call zkrc_rwlock_options_init(), which passes it. */
void zkrc_rwlock_options_init_sized(zkrc_rwlock_options *opts, size_t size);

/** Fill @p opts with the defaults.  Threading: any thread.  Inline: it
 *  passes sizeof *@p opts as this header defines it to
 *  zkrc_rwlock_options_init_sized(), so a program keeps working with a
 *  later library whose struct has grown (and a later program, whose
 *  struct is longer, with this library: the fields it does not know are
 *  ignored). */
static inline void zkrc_rwlock_options_init(zkrc_rwlock_options *opts) {
  zkrc_rwlock_options_init_sized(opts, sizeof *opts);
}

/**
 * Create a read-write lock object for @p path on session @p s.  Nothing is
 * sent to a server until the first acquisition.
 *
 * @param path  the lock's directory, checked by zkrc_path_validate().
 * @param opts  NULL for the defaults; copied, need not outlive the call.
 * @return ZKRC_OK; ZKRC_EINVAL (NULL argument, invalid path or ACL, options
 *         never initialized); ZKRC_ETOOBIG (participant_id, the data of
 *         every contender node, too large for the node's create to pass
 *         ZooKeeper's size limit; README, "Sizes"); ZKRC_ECLOSED (session
 *         closed); ZKRC_ENOMEM.
 *         On failure *out is NULL.
 * Ownership: the caller owns *out and frees it with zkrc_rwlock_free(); it
 * keeps a reference on the session.
 */
int zkrc_rwlock_new(zkrc_rwlock **out, zkrc_session *s, const char *path,
                    const zkrc_rwlock_options *opts);

/**
 * The read side (shared): a zkrc_lock owned by @p rw, valid until
 * zkrc_rwlock_free(); zkrc_lock_free() on it does nothing.  NULL for NULL.
 */
zkrc_lock *zkrc_rwlock_reader(zkrc_rwlock *rw);

/**
 * The write side (exclusive): a zkrc_lock owned by @p rw, valid until
 * zkrc_rwlock_free(); zkrc_lock_free() on it does nothing.  NULL for NULL.
 */
zkrc_lock *zkrc_rwlock_writer(zkrc_rwlock *rw);

/**
 * Free the read-write lock and both sides, as zkrc_lock_free() frees a lock:
 * waiting threads return ZKRC_ECANCELED before this returns, whatever
 * either side holds is given up in the background (its nodes' deletes
 * sent, never awaited: it never waits for the network), pending
 * non-blocking holds complete with ZKRC_ECANCELED later, acquired ones are
 * released and freed, and no event is told after it returns.  NULL is ignored.  Do not use @p rw or its sides
 * afterwards.  Threading: any thread, including a side's own event
 * callback.
 */
void zkrc_rwlock_free(zkrc_rwlock *rw);

/**
 * Free the read-write lock and both sides without blocking, as
 * zkrc_lock_free_async() frees a lock (each side's): then @p done runs on
 * the session's executor, after the last event and completion of either
 * side, once their nodes are deleted (or, when the connection is down,
 * handed to the session to delete).  From this call on, use @p rw and its
 * sides only in the callbacks still to come.
 *
 * @return ZKRC_OK (@p done will run); ZKRC_EINVAL (NULL @p rw or @p done;
 *         nothing changes).
 * Threading: any thread, including the executor's and a side's own event
 * callback, while the session's executor is alive.  Call it once, instead
 * of zkrc_rwlock_free().
 */
int zkrc_rwlock_free_async(zkrc_rwlock *rw, zkrc_callback_fn done, void *arg);

#ifdef __cplusplus
}
#endif
#endif /* ZKRECIPES_RWLOCK_H */
