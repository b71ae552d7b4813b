/*
 * zkrecipes/lock.h - a fair, fenced, per-thread reentrant distributed lock.
 *
 * Protocol (wire-compatible with Apache Curator's InterProcessMutex): the
 * lock is a directory node; every contender creates an ephemeral sequential
 * child "_c_<uuid>-lock-<sequence>" holding its participant id.  The lowest
 * sequence holds the lock; every other contender watches only the contender
 * just before it, so one release wakes one waiter.  The read-write lock's
 * readers and writers on the same path (zkrecipes/rwlock.h: "__READ__<n>",
 * "__WRIT__<n>", and kazoo's "__rlock__<n>") are contenders too, so that the
 * mutex excludes them and they it.  Children whose names end in none of
 * these, "lock-<n>" or "__lock__<n>" (kazoo's form) are ignored.  The
 * directory and its missing ancestors are created as container nodes, which
 * the servers remove once empty.
 *
 * Ownership is per thread.  The thread that acquired the lock may acquire it
 * again (a count, no server round trip) and must release it as many times.
 * Another thread using the same zkrc_lock object is a participant of its
 * own: it creates its own node and waits its turn like any other client.
 *
 * Fencing.  The holder's token is the zxid that created its node (czxid).
 * Successive holders get strictly increasing tokens, so a resource that
 * remembers the highest token it accepted can refuse a stale holder.
 *
 * Threading: every function may be called from any thread except where
 * noted; blocking functions must not be called from a session callback.
 *
 * A write that fails with ZKRC_ETIMEDOUT or ZKRC_ECONNLOSS (also while the
 * session is reopening) may or may not have been applied; ZKRC_ECLOSED
 * comes only from a closed session or object (zkrecipes/error.h).
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef ZKRECIPES_LOCK_H
#define ZKRECIPES_LOCK_H

#include <stddef.h>
#include <stdint.h>
#include <zookeeper/zookeeper.h>
#include <zkrecipes/executor.h>
#include <zkrecipes/participants.h>
#include <zkrecipes/session.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zkrc_lock zkrc_lock;

/** What happened to a held lock (zkrc_lock_event.type).  Starts at 1: a
 *  zeroed value is none of them. */
typedef enum zkrc_lock_event_type {
  /** The connection dropped: the lock may no longer be held.  Stop
   *  touching the guarded resource until RECONNECTED. */
  ZKRC_LOCK_SUSPENDED = 1,
  /** The connection is back with the same session: still held. */
  ZKRC_LOCK_RECONNECTED = 2,
  /** No longer held: the session expired or was lost, the session was
   *  closed, or the node was deleted.  Release it to clear the count. */
  ZKRC_LOCK_LOST = 3,
  /** Someone asked the holder (or a waiter) of a revocable lock to give
   *  it up: its node's data became "__REVOKE__" (zkrc_lock_revoke(),
   *  Curator's Revoker.attemptRevoke()).  Only a lock made with
   *  zkrc_lock_options.revocable is told.  The library changes nothing:
   *  the hold stays held (or the waiter queued) until the application
   *  releases (or cancels) it, as Curator's RevocationListener decides.
   *  reason is ZKRC_OK; token is 0 for a waiter. */
  ZKRC_LOCK_REVOKE_REQUESTED = 4
} zkrc_lock_event_type;

/** Name of an event type, lower-case ("suspended", "reconnected", "lost",
 *  "revoke-requested"; "unknown" for a value that is none of them); a static string.
 *  Threading: any thread. */
const char *zkrc_lock_event_name(zkrc_lock_event_type type);

/** A hold taken with zkrc_lock_acquire_async() (see below). */
typedef struct zkrc_lock_hold zkrc_lock_hold;

/** A lock event; valid only during the callback.  Its first three fields
 *  are every zkrecipes event's (HACKING, "The contract"). */
typedef struct zkrc_lock_event {
  /** What happened. */
  zkrc_lock_event_type type;
  /** For ZKRC_LOCK_LOST: why (ZKRC_ESESSIONEXPIRED, ZKRC_ESESSIONLOST,
   *  ZKRC_ECLOSED or ZKRC_ELOCKLOST for a deleted node); else ZKRC_OK. */
  int reason;
  /** The ZooKeeper code behind @p reason (ZSESSIONEXPIRED, ZNONODE for a
   *  deleted node, ...), or ZOK when there is none (a lease that ran out,
   *  a close). */
  int zk_error;
  /** The fencing token of the hold this event is about (0 for a
   *  waiter's ZKRC_LOCK_REVOKE_REQUESTED). */
  int64_t token;
  /** Full path of the holder's node (of the waiter's, for a waiter's
   *  ZKRC_LOCK_REVOKE_REQUESTED). */
  const char *node;
  /** The hold this event is about when it was taken with
   *  zkrc_lock_acquire_async(); NULL for a thread's hold. */
  zkrc_lock_hold *hold;
} zkrc_lock_event;

/**
 * Told about the holder's lock.  Runs on the session's executor, never on a
 * ZooKeeper thread and never with a zkrecipes mutex held; it may call any
 * non-blocking zkrc_lock function (zkrc_lock_release from another thread than
 * the holder's returns ZKRC_ENOTOWNER).
 */
typedef void (*zkrc_lock_event_fn)(zkrc_lock *lk, const zkrc_lock_event *ev,
                                   void *arg);

/** Whose node names a lock's contenders carry (zkrc_lock_options.format).
 *  Every lock counts both, whatever its own. */
typedef enum zkrc_lock_format {
  /** Curator's InterProcessMutex: "_c_<uuid>-lock-<sequence>" (the
   *  default).  Curator counts them; kazoo's Lock only when told
   *  extra_lock_patterns=["-lock-"]. */
  ZKRC_LOCK_FORMAT_CURATOR = 0,
  /** kazoo's Lock marker: "_c_<uuid>-__lock__<sequence>" (kazoo's own are
   *  "<uuid hex>__lock__<sequence>"): a stock kazoo Lock (no extra
   *  patterns) counts them, by the marker and the sequence after it.  Curator does not know them (it
   *  sorts them last): never share such a path with Curator. */
  ZKRC_LOCK_FORMAT_KAZOO = 1
} zkrc_lock_format;

/** Options of a lock; initialize with zkrc_lock_options_init(). */
typedef struct zkrc_lock_options {
  /** Set by the _init function to the size of the struct your program was
   *  compiled with, so that later versions of the library, with more
   *  fields, read only the fields it knows.  Options that were not
   *  initialized (size 0) are refused with ZKRC_EINVAL. */
  size_t size;
  /** Data of every node this lock creates: the participant id shown by
   *  zkrc_lock_participants().  NULL (default): "<hostname>:<pid>". */
  const char *participant_id;
  /** ACL of the nodes this lock creates (directory and contender nodes).
   *  NULL (default): ZOO_OPEN_ACL_UNSAFE.  Copied by zkrc_lock_new(). */
  const struct ACL_vector *acl;
  /** Told when a held lock is suspended, reconnected or lost.  Setting it
   *  also makes every participant watch its own node, so that an
   *  administrator's deletion is reported as LOST: one extra read per
   *  acquisition, sent right after the create (not on the hand-over's
   *  way), and a notification to ourselves when we release.  NULL
   *  (default): no callback. */
  zkrc_lock_event_fn on_event;
  void *event_arg;
  /** Non-zero: the lock is revocable, as Curator's
   *  InterProcessMutex.makeRevocable() makes one.  Every participant
   *  (holder or waiter) watches its own node's data from its creation on
   *  (the watch it keeps with on_event; reads sent again after a
   *  reconnection, never in the client's one SetWatches request), and is
   *  told ZKRC_LOCK_REVOKE_REQUESTED, through on_event, each time the
   *  data becomes "__REVOKE__" (zkrc_lock_revoke() or Curator's
   *  Revoker.attemptRevoke()); the library releases nothing by itself.
   *  Needs on_event (ZKRC_EINVAL without it).  0 (default): the node's
   *  data is not looked at, and a revocation request changes nothing. */
  int revocable;
  /** The names of this lock's contender nodes: ZKRC_LOCK_FORMAT_CURATOR
   *  (default) or ZKRC_LOCK_FORMAT_KAZOO, for a path shared with kazoo
   *  services whose Locks are not told about Curator's names.  Another
   *  value: ZKRC_EINVAL. */
  zkrc_lock_format format;
} zkrc_lock_options;

/** Fill @p opts with the defaults.  Threading: any thread.  Fills the
 *  first @p size bytes of @p opts, the size of the struct as your program
 *  was compiled with it, and sets its size field to it: the fields a
 *  program built against an older, shorter zkrc_lock_options lacks are
 *  never written.  Call zkrc_lock_options_init(), which passes it. */
void zkrc_lock_options_init_sized(zkrc_lock_options *opts, size_t size);

/** Fill @p opts with the defaults.  Threading: any thread.  Inline: it
 *  passes sizeof *@p opts as this header defines it to
 *  zkrc_lock_options_init_sized(), so a program keeps working with a
 *  later library whose struct has grown (and a later program, whose
 *  struct is longer, with this library: the fields it does not know are
 *  ignored). */
static inline void zkrc_lock_options_init(zkrc_lock_options *opts) {
  zkrc_lock_options_init_sized(opts, sizeof *opts);
}

/**
 * Create a lock object for @p path on session @p s.  Nothing is sent to a
 * server until the first acquisition.
 *
 * @param path  the lock's directory, checked by zkrc_path_validate().
 * @param opts  NULL for the defaults; copied, need not outlive the call.
 * @return ZKRC_OK; ZKRC_EINVAL (NULL argument, invalid path, ACL or
 *         format; revocable without on_event);
 *         ZKRC_ETOOBIG (participant_id, the data of every contender
 *         node, too large for the node's create to pass ZooKeeper's size
 *         limit; README, "Sizes");
 *         ZKRC_ECLOSED (session closed); ZKRC_ENOMEM.
 * Ownership: the caller owns *out and frees it with zkrc_lock_free(); the
 * lock keeps a reference on the session.
 */
int zkrc_lock_new(zkrc_lock **out, zkrc_session *s, const char *path,
                  const zkrc_lock_options *opts);

/**
 * Free the lock: threads still waiting in zkrc_lock_acquire() on it return
 * ZKRC_ECANCELED before this returns; whatever it holds (for any thread,
 * and every non-blocking hold, pending or acquired) is given up in the
 * background: the deletes of its nodes are sent and never awaited (when
 * one cannot be confirmed, the session deletes the node once the
 * connection is back, or its expiry removes it), so the nodes may still
 * be there when this returns.  It never waits for the network, whatever
 * the session's state (open, suspended, closed).  No event is told after
 * it returns: events still queued on the executor are dropped
 * (zkrc_lock_free_async() delivers them).  Completions are owed exactly
 * once: pending non-blocking holds, and grants still queued, complete
 * later with ZKRC_ECANCELED (after this returns: do not use @p lk in
 * them); acquired holds are released and freed, so their pointers are
 * invalid on return.  It waits only for a callback of this lock running
 * on another thread.  NULL is ignored, and so is a read-write lock's side
 * (zkrc_rwlock_free() frees it).  Do not use @p lk afterwards.
 * Threading: any thread, including this lock's own event callback and
 * completions (it does not wait for itself there).
 */
void zkrc_lock_free(zkrc_lock *lk);

/**
 * Free the lock without blocking: as zkrc_lock_free() (threads waiting in
 * zkrc_lock_acquire() return ZKRC_ECANCELED, pending non-blocking holds
 * complete with ZKRC_ECANCELED, whatever it holds for any thread or hold
 * is released and its holds freed), but the nodes' deletes go on in the
 * background, and then @p done runs on the session's executor, once
 * every node of the lock is deleted (or, when the connection is down,
 * handed to the session to delete), after the last event and completion
 * of the lock.  Events posted before this call are still delivered (a
 * LOST of a thread's hold, say; none about a non-blocking hold this call
 * released), none after @p done.  From this call on, use @p lk only in
 * the callbacks still to come; after @p done returns it is gone.
 *
 * @return ZKRC_OK (@p done will run); ZKRC_EINVAL (NULL @p lk or @p done,
 *         or a read-write lock's side, which zkrc_rwlock_free_async()
 *         frees; nothing changes).
 * Threading: any thread, including the executor's and this lock's own
 * event callback, while the session's executor is alive.  Call it once,
 * instead of zkrc_lock_free().
 */
int zkrc_lock_free_async(zkrc_lock *lk, zkrc_callback_fn done, void *arg);

/**
 * Acquire the lock for the calling thread.
 *
 * @param timeout_ms  ZKRC_WAIT_FOREVER; ZKRC_NO_WAIT (try once: fail as soon
 *                    as the queue shows another participant ahead, which
 *                    takes one round trip; if no answer comes within the
 *                    session timeout, ZKRC_ETIMEDOUT); or a positive number
 *                    of ms.  The deadline holds also while the connection is
 *                    down.  Any other negative value is refused.
 * @return ZKRC_OK: the calling thread holds the lock (again, if it already
 *         did: the count goes up, nothing is sent).
 *         ZKRC_ELOCKED: ZKRC_NO_WAIT and another participant holds it.
 *         ZKRC_ETIMEDOUT: the deadline passed.
 *         ZKRC_ESESSIONEXPIRED / ZKRC_ESESSIONLOST: the session died while
 *         waiting.  ZKRC_ECANCELED: zkrc_lock_free() was called meanwhile.
 *         ZKRC_ELOCKLOST: this thread's earlier hold was lost and has not
 *         been released yet.  ZKRC_EDEADLK: only on a read-write lock's
 *         side (zkrecipes/rwlock.h), at once: an upgrade, or a downgrade
 *         behind another writer.  ZKRC_ENOAUTH: the ACL of the directory
 *         forbids it (creating, or reading the queue: at once, not
 *         retried).
 *         ZKRC_ENONODE: the directory cannot be made because the session's
 *         chroot (the "/path" after the hosts) does not exist.
 *         ZKRC_ECLOSED: the session was closed, or is dead for good (expired
 *         or lost with no_reopen).  ZKRC_EINVAL, ZKRC_EOVERFLOW,
 *         ZKRC_EZOOKEEPER (an unexpected ZooKeeper code, retried a few times
 *         with a backoff first: see zkrc_last_zk_error()).
 *         On every failure our node has been deleted before returning when
 *         the connection is up (confirming that may take up to 0.5 s past
 *         the deadline); when it is down, the call returns at the deadline
 *         and the deletion completes in the background as soon as the
 *         connection comes back (or the session's expiry removes the node).
 * Threading: any thread but the session's callback thread.
 */
int zkrc_lock_acquire(zkrc_lock *lk, int timeout_ms);

/**
 * Release one level of the calling thread's hold; at the last level the node
 * is deleted and the next waiter wakes.  When connected, returns once the
 * servers confirmed the delete (one round trip), so whoever looks next sees
 * the lock free; when the connection is down, the delete completes in the
 * background as soon as it is back (or the session's expiry removes the
 * node), and the call returns at once.
 *
 * @return ZKRC_OK; ZKRC_ENOTOWNER when the calling thread does not hold it
 *         (nothing changes); ZKRC_ELOCKLOST when the hold had been lost (the
 *         level is released all the same); ZKRC_EINVAL for NULL.
 */
int zkrc_lock_release(zkrc_lock *lk);

/**
 * Non-zero when the calling thread holds the lock: it was acquired, not
 * lost, and the lease of the session its node is on (zkrecipes/session.h;
 * the lock's, or one the library opened beside it: "Many nodes" at
 * zkrc_lock_acquire_async()) has not run out.  It turns 0 the moment the lease runs out, before the LOST event is
 * delivered, also in a process that was frozen (SIGSTOP, debugger) past its
 * lease.  Local state only: nothing is sent.  NULL yields 0.
 */
int zkrc_lock_is_held(zkrc_lock *lk);

/**
 * How long, in ms, the calling thread's hold certainly lasts from now: the
 * lease of the session its node is on (zkrc_session_lease_remaining() when
 * that is the lock's own) while the thread holds the lock, else 0.  The servers cannot give the lock to anyone else before
 * then; check it before starting work that must not outlive the hold.
 * Local state only.  NULL yields 0.
 */
int zkrc_lock_lease_remaining(zkrc_lock *lk);

/**
 * How many times the calling thread holds the lock: its reentrancy depth,
 * as many releases as it still owes (0 when it does not hold it).
 */
int zkrc_lock_depth(zkrc_lock *lk);

/**
 * The fencing token of the calling thread's hold: the czxid of its node,
 * taken from the create reply (no extra read).
 * @return ZKRC_OK; ZKRC_ENOTOWNER; ZKRC_ELOCKLOST; ZKRC_EINVAL.
 */
int zkrc_lock_token(zkrc_lock *lk, int64_t *token);

/**
 * Full path of the calling thread's node.
 * @param path  receives a malloc'ed copy; free it with free().
 * @return ZKRC_OK; ZKRC_ENOTOWNER; ZKRC_ELOCKLOST; ZKRC_EINVAL; ZKRC_ENOMEM.
 */
int zkrc_lock_node(zkrc_lock *lk, char **path);

/** The lock's directory path (owned by the lock). */
const char *zkrc_lock_path(zkrc_lock *lk);

/**
 * Participant ids of all contenders, in queue order: the holder first.
 * Contenders created by other clients (Curator, kazoo) are listed with their
 * node data.  A directory that does not exist yields an empty list.
 *
 * @param ids    receives a NULL-terminated, malloc'ed array of malloc'ed
 *               strings; free it with zkrc_strv_free()
 *               (zkrecipes/session.h).
 * @param count  if not NULL, receives the number of ids.
 * @param timeout_ms  ZKRC_WAIT_FOREVER; ZKRC_NO_WAIT (one look: its answer,
 *               a round trip, is awaited at most the session timeout); or
 *               a positive number of ms.  Any other negative value:
 *               ZKRC_EINVAL, nothing sent.  The same for every listing
 *               (zkrc_lock_list(), zkrc_election_leader_id(), ...).
 * @return ZKRC_OK; ZKRC_ETIMEDOUT; ZKRC_ECONNLOSS; ZKRC_ECLOSED;
 *         ZKRC_EINVAL; ...
 * Threading: any thread but the session's callback thread.
 */
int zkrc_lock_participants(zkrc_lock *lk, char ***ids, size_t *count,
                           int timeout_ms);

/**
 * Every contender of the lock at @p path, in queue order (the holder
 * first), with node names and participant ids, asked of the servers.  No
 * lock object needed (for tools and monitoring).  Contenders of other
 * clients (Curator, kazoo) are listed too.  A path that does not exist yet
 * yields an empty list.
 *
 * @param list   receives a malloc'ed array; free it with
 *               zkrc_participants_free().  NULL when empty.
 * @return ZKRC_OK; ZKRC_EINVAL (NULL, invalid path, bad timeout);
 *         ZKRC_ETIMEDOUT; ZKRC_ECONNLOSS; ZKRC_ECLOSED; ZKRC_ENOAUTH.
 * Threading: any thread but the session's callback thread.
 */
int zkrc_lock_list(zkrc_session *s, const char *path, zkrc_participant **list,
                   size_t *count, int timeout_ms);

/**
 * Ask whoever holds (or waits for) a lock through the contender node
 * @p node_path to give it up, as Curator's Revoker.attemptRevoke() does:
 * the node's data is set to "__REVOKE__".  A revocable participant (ours,
 * zkrc_lock_options.revocable; Curator's made with makeRevocable()) is
 * told and decides; any other keeps the lock, its node's data changed
 * (zkrc_lock_participants() then lists "__REVOKE__" as its id).  Find the
 * nodes with zkrc_lock_list() (its first entry is the holder).  No lock
 * object needed.
 *
 * @param node_path  the full path of a lock contender node: a valid path
 *                   whose last name ends in a lock marker and a sequence
 *                   ("...-lock-0000000007", "__READ__", "__WRIT__",
 *                   kazoo's "__lock__" and "__rlock__").
 * @param timeout_ms ZKRC_WAIT_FOREVER; ZKRC_NO_WAIT (the reply, a round
 *                   trip, is awaited at most the session timeout); or a
 *                   positive number of ms; any other negative value:
 *                   ZKRC_EINVAL.
 * @return ZKRC_OK (asked: the node was there and its data is set);
 *         ZKRC_ENONODE (no such node: nothing to revoke, nothing written);
 *         ZKRC_EINVAL (NULL session, a path that is not a lock contender
 *         node's, a bad timeout: nothing sent); ZKRC_ETIMEDOUT (the
 *         outcome is then unknown); ZKRC_ECONNLOSS; ZKRC_ENOAUTH (the
 *         node's ACL forbids the write); ZKRC_ECLOSED.
 * Threading: any thread but the session's callback thread; blocks at most
 * @p timeout_ms.
 */
int zkrc_lock_revoke(zkrc_session *s, const char *node_path, int timeout_ms);

/**
 * Fenced write: perform @p ops in one ZooKeeper multi that also checks that
 * the calling thread's lock node still exists, so a holder that lost its
 * lock cannot write.  Succeeds or fails as a whole.  It is sent on the
 * session the node is on: the lock's, or one the library opened beside it
 * ("Many nodes" at zkrc_lock_acquire_async()), which has the credentials
 * given through zkrc_session_add_auth() but none added to the handle by
 * other means; an ephemeral node it creates belongs to that session.
 *
 * @param ops      @p count operations built with zoo_create_op_init() and its
 *                 siblings; @p results receives their results (may be NULL).
 * @return ZKRC_OK; ZKRC_ELOCKLOST (refused: the lock node is gone or the hold
 *         was lost; nothing was written); ZKRC_ENOTOWNER; the first failing
 *         operation's error (see zkrc_last_zk_error()); ZKRC_ETIMEDOUT
 *         (the outcome is then unknown); ZKRC_ETOOBIG (the multi, every
 *         op and the check with their envelope, would pass 1 MiB less one
 *         byte, or an op writes over 1,048,487 bytes of data; README,
 *         "Sizes": nothing sent); ZKRC_EINVAL.
 * @param timeout_ms  ZKRC_WAIT_FOREVER; ZKRC_NO_WAIT (the reply, a round
 *               trip, is awaited at most the session timeout); or a positive
 *               number of ms; any other negative value: ZKRC_EINVAL.
 * Threading: the holding thread; blocks at most @p timeout_ms.
 */
int zkrc_lock_fenced_multi(zkrc_lock *lk, int count, const zoo_op_t *ops,
                           zoo_op_result_t *results, int timeout_ms);

/* ------------------------------------------------------------------------
 * Non-blocking acquisition, for event loops.
 *
 * A hold taken this way belongs to the hold object, not to a thread: an
 * event loop serves many logical owners from one thread.  Each hold is a
 * participant of its own (its own node); there is no reentrancy.  Its
 * completion and its events run on the session's executor (set one with
 * zkrecipes/glib.h or zkrecipes/executor.h to get them on your loop).
 * --------------------------------------------------------------------- */

/** How a non-blocking acquisition ended; valid only during the callback. */
typedef struct zkrc_lock_acquired_info {
  /** ZKRC_OK: the hold holds the lock now (checked when the callback runs,
   *  however late the executor runs it); release it with
   *  zkrc_lock_hold_release().  A hold lost before its ZKRC_OK was
   *  delivered fails instead, with the loss's reason (ZKRC_ESESSIONLOST,
   *  ZKRC_ELOCKLOST, ...), and gets no LOST event.  Otherwise the
   *  acquisition failed and the hold is freed when the callback returns:
   *  ZKRC_ETIMEDOUT, ZKRC_ELOCKED (ZKRC_NO_WAIT and held by another),
   *  ZKRC_ECANCELED (zkrc_lock_hold_cancel(), zkrc_lock_free() or
   *  zkrc_lock_free_async()),
   *  ZKRC_ESESSIONEXPIRED, ZKRC_ESESSIONLOST, ZKRC_ECLOSED, ZKRC_ENOAUTH,
   *  ZKRC_ENONODE (the directory cannot be made because the session's
   *  chroot, the "/path" after the hosts, does not exist; told at once),
   *  ... .  In every failure our node has been deleted (or, when the
   *  connection is down, will be as soon as it is back). */
  int status;
  /** The ZooKeeper code behind a failure (zookeeper.h's ZOO_ERRORS, such
   *  as ZNOAUTH), or ZOK (0) when there is none. */
  int zk_error;
  /** The fencing token when status is ZKRC_OK, else 0. */
  int64_t token;
} zkrc_lock_acquired_info;

/** Told once how a non-blocking acquisition ended (see above). */
typedef void (*zkrc_lock_acquired_fn)(zkrc_lock *lk, zkrc_lock_hold *hold,
                                      const zkrc_lock_acquired_info *info,
                                      void *arg);

/**
 * Start acquiring the lock; returns at once.  @p done is called exactly once
 * on the session's executor, never from inside this call.
 *
 * Many at once.  A session lets at most 256 acquisitions (of any lock or
 * recipe on it) be at their first step at once: their node created and
 * the queue listed, not yet answered.  The others wait inside the library,
 * in the order they were asked, having sent nothing, and start as those
 * are answered; so 100,000 acquisitions asked back to back cost what they
 * cost asked 64 at a time, and never flood the connection (the lease's
 * renewals would wait behind the flood).  The deadline counts from this
 * call, the wait in the library included; cancelling, zkrc_lock_free()
 * and zkrc_session_close() end a waiting acquisition as any other.
 *
 * Many nodes.  When a ZooKeeper session closes or expires, the servers
 * delete its ephemeral nodes in one transaction that lists them all; one
 * too large for the followers to read takes the member that logged it
 * down for good (ZOOKEEPER-4306).  So a session keeps at most 768 KiB of
 * node paths, and gives its contenders half of that (some 4,500 lock nodes
 * of 70 bytes; the rest is kept for its ephemeral nodes, groups and service
 * records); an acquisition past that has its node made on a session the
 * library opens beside this one (the same servers, options and
 * credentials; no listener; closed with this one; some 9,000 nodes each).
 * Such a hold's lease is that session's: it is lost when that session is,
 * not when this one is (README, "Many locks in one process").  The 256
 * acquisitions at their first step at once are counted per session.
 *
 * @param timeout_ms  as for zkrc_lock_acquire().
 * @param hold        if not NULL, receives the hold (to cancel it, or to
 *                    release it once acquired); valid until the failure
 *                    callback returns or until zkrc_lock_hold_release().
 * @return ZKRC_OK (the callback will come); ZKRC_EINVAL; ZKRC_ECLOSED;
 *         ZKRC_ECANCELED (the lock is being freed).  On an error no
 *         callback comes.
 * Threading: any thread, including the executor's (it never blocks).
 */
int zkrc_lock_acquire_async(zkrc_lock *lk, int timeout_ms,
                            zkrc_lock_acquired_fn done, void *arg,
                            zkrc_lock_hold **hold);

/**
 * Cancel a pending acquisition: our node is deleted and the completion
 * comes with ZKRC_ECANCELED (unless it had already been decided: then this
 * returns ZKRC_ESTATE and the decided completion comes as it would have).
 * @return ZKRC_OK; ZKRC_ESTATE; ZKRC_EINVAL.  Does not block.
 */
int zkrc_lock_hold_cancel(zkrc_lock_hold *hold);

/**
 * Release an acquired hold: its node is deleted in the background (this
 * does not wait for the servers), the next waiter wakes, and @p hold is
 * freed.  @return ZKRC_OK; ZKRC_ELOCKLOST (it had been lost; freed all the
 * same); ZKRC_ESTATE (not acquired: cancel it instead); ZKRC_EINVAL.
 */
int zkrc_lock_hold_release(zkrc_lock_hold *hold);

/** Non-zero while @p hold holds the lock (acquired, not lost, and its
 *  node's session's lease has not run out; see zkrc_lock_is_held()). */
int zkrc_lock_hold_is_held(zkrc_lock_hold *hold);

/** How long, in ms, @p hold certainly lasts from now (see
 *  zkrc_lock_lease_remaining()); 0 when it does not hold, or for NULL. */
int zkrc_lock_hold_lease_remaining(zkrc_lock_hold *hold);

/**
 * The fencing token of an acquired hold (the czxid of its node).
 * @return ZKRC_OK; ZKRC_ESTATE (not acquired yet); ZKRC_ELOCKLOST (lost);
 *         ZKRC_EINVAL (NULL argument).  *@p token is left alone on an
 *         error.  Threading: any thread, while the hold is valid.
 */
int zkrc_lock_hold_token(zkrc_lock_hold *hold, int64_t *token);

/** The @p arg given to zkrc_lock_acquire_async() for this hold, so that a
 *  lock event (info->hold) finds the context of the hold it is about.
 *  NULL for a NULL @p hold.  Threading: any thread, while the hold is
 *  valid (until its release or the lock's free). */
void *zkrc_lock_hold_arg(zkrc_lock_hold *hold);

/**
 * Full path of an acquired hold's node.
 * @param path  receives a malloc'ed copy (free it with free()); NULL on an
 *              error.
 * @return ZKRC_OK; ZKRC_ESTATE (not acquired yet); ZKRC_ELOCKLOST (lost);
 *         ZKRC_EINVAL (NULL argument); ZKRC_ENOMEM.
 * Threading: any thread, while the hold is valid; takes the lock object's
 * mutex briefly, so it may be called from the lock's callbacks.
 */
int zkrc_lock_hold_node(zkrc_lock_hold *hold, char **path);

#ifdef __cplusplus
}
#endif
#endif /* ZKRECIPES_LOCK_H */
