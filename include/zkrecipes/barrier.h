/*
 * zkrecipes/barrier.h - barriers: Curator's DistributedBarrier and kazoo's
 * Barrier (a node that holds everyone back while it exists), and Curator's
 * DistributedDoubleBarrier and kazoo's DoubleBarrier (enter together when
 * N members are in, leave together once all are out).
 *
 * The single barrier is three plain calls, as zkrecipes/shared.h's one-shot
 * reads and writes are: zkrc_barrier_set() creates the node,
 * zkrc_barrier_remove() deletes it and zkrc_barrier_wait() blocks until it
 * is gone.  None of them keeps anything after it returns (no node of the
 * caller's session, no state to watch over), so there is no object to
 * free: a wait that gives up at its deadline takes its watch back.
 * Wire format: the node PATH itself, created with no data and its missing
 * parents as containers (Curator's setBarrier makes containers, kazoo's
 * create persistent nodes: each reads the other's, as both only look at
 * whether PATH exists).
 *
 * The double barrier is an object (the contract of HACKING): this
 * member's ephemeral node PATH/NAME is kept from zkrc_double_barrier_new()
 * until the member has left, and the member is told ENTERED once N
 * members' nodes were there (the "ready" node PATH/ready exists), LEFT
 * once every member's node is gone, LOST when its node may be gone before
 * it left.  Both dialects (zkrc_barrier_dialect) use the same protocol,
 * with one node "ready" and the same order of leaving (the member whose
 * name sorts first leaves last, after the one that sorts last; the others
 * delete their node and wait for the first's); they differ in the member
 * node's name and data and in when "ready" is deleted:
 *
 *   Curator: NAME a UUID with dashes (36 characters), no data (Curator's
 *            own carry its client's default data, the local address,
 *            which nobody reads), "ready" deleted by each member at the
 *            end of its leave;
 *   kazoo:   NAME a UUID in hex (32 characters), data the member's id
 *            (default "<hostname>:<pid>"), "ready" deleted at the start
 *            of each member's leave.
 *
 * The two libraries' double barriers can share one path: they count the
 * same children and make the same "ready" node, and their leaving rule is
 * the same on names sorted as byte strings (tests/test_barrier.c runs a
 * Curator member, a kazoo member and ours on one path).
 *
 * Entered means verified: ENTERED is told only while the member's node is
 * registered (created by this session, and the session's lease running:
 * zkrecipes/session.h), and LOST no later than the lease's end, before the
 * servers can expire the session and delete the node (a member that must
 * not run its part of the job without the others stops then).
 *
 * Events run on the session's executor, in order, never with a zkrecipes
 * mutex held.
 */
#ifndef ZKRECIPES_BARRIER_H
#define ZKRECIPES_BARRIER_H

#include <stddef.h>

#include <zkrecipes/session.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Set the barrier: create @p path (no data) and its missing parents (as
 * containers), at most @p timeout_ms (ZKRC_WAIT_FOREVER, ZKRC_NO_WAIT or
 * > 0).  A barrier that is set already is left as it is.
 * @return ZKRC_OK (the node exists); ZKRC_EINVAL (NULL @p s, invalid path
 *         or "/", bad timeout: nothing sent); ZKRC_ETIMEDOUT or
 *         ZKRC_ECONNLOSS (the create may or may not have been applied);
 *         ZKRC_ENOAUTH; ZKRC_ECLOSED.
 * Threading: any thread but a session's callback thread; blocks.
 */
int zkrc_barrier_set(zkrc_session *s, const char *path, int timeout_ms);

/**
 * Remove the barrier: delete @p path, at most @p timeout_ms.
 * @return ZKRC_OK (deleted); ZKRC_ENONODE (it was not set: kazoo's
 *         remove() returns False, Curator's removeBarrier() ignores it);
 *         ZKRC_ENOTEMPTY (the node has children: not a barrier, nothing
 *         deleted); and the errors of zkrc_barrier_set().
 * Threading: as zkrc_barrier_set().
 */
int zkrc_barrier_remove(zkrc_session *s, const char *path, int timeout_ms);

/**
 * Wait until the barrier at @p path is gone, at most @p timeout_ms
 * (ZKRC_NO_WAIT: look once).  A barrier that is not set is gone
 * (Curator's waitOnBarrier() and kazoo's wait() return at once then).  A
 * connection lost meanwhile is waited out (the session reconnects) and the
 * node looked at again, within the same deadline; so is a session expiry
 * when the session reopens.
 * @return ZKRC_OK (gone); ZKRC_ETIMEDOUT (still there at the deadline);
 *         ZKRC_EINVAL (as zkrc_barrier_set()); ZKRC_ENOAUTH; ZKRC_ECLOSED
 *         (the session was closed).
 * Threading: as zkrc_barrier_set().
 */
int zkrc_barrier_wait(zkrc_session *s, const char *path, int timeout_ms);

/* ---------------------------------------------------- double barrier */

/** The wire format of a double barrier's member (see the top of this
 *  header). */
typedef enum zkrc_barrier_dialect {
  /** Curator's DistributedDoubleBarrier (the default). */
  ZKRC_BARRIER_CURATOR = 1,
  /** kazoo's DoubleBarrier. */
  ZKRC_BARRIER_KAZOO
} zkrc_barrier_dialect;

typedef struct zkrc_double_barrier zkrc_double_barrier;

/** What happened (zkrc_double_barrier_event.type). */
typedef enum zkrc_double_barrier_event_type {
  /** Enough members are in (the "ready" node exists, or this member made
   *  it on counting N): the member may start its part. */
  ZKRC_DOUBLE_BARRIER_ENTERED = 1,
  /** Every member's node is gone after this member's leave: all are out. */
  ZKRC_DOUBLE_BARRIER_LEFT,
  /** This member's node may be gone before it left; the reason says why:
   *  the lease ran out (ZKRC_ESESSIONLOST, zk_error ZOK), the session
   *  expired (ZKRC_ESESSIONEXPIRED, ZSESSIONEXPIRED), the node was deleted
   *  by someone else (ZKRC_ENONODE, ZNONODE), an ACL refused a request
   *  (ZKRC_ENOAUTH, ZNOAUTH), or the servers refused one in a way asking
   *  again cannot change, or ten times without progress (its error as
   *  zkrc_from_zk_error() maps it, and ZooKeeper's code).  Final: the
   *  member is out of this round (its node is deleted if it comes back);
   *  no event follows but CLOSED. */
  ZKRC_DOUBLE_BARRIER_LOST,
  /** The session was closed for good (ZKRC_ECLOSED, or the reason of the
   *  loss that closed a session without reopen): no more events. */
  ZKRC_DOUBLE_BARRIER_CLOSED
} zkrc_double_barrier_event_type;

/** "entered", "left", "lost", "closed" ("unknown" for another value).
 *  Static string; any thread. */
const char *zkrc_double_barrier_event_name(zkrc_double_barrier_event_type type);

/** An event, valid during the call. */
typedef struct zkrc_double_barrier_event {
  /** What happened. */
  zkrc_double_barrier_event_type type;
  /** LOST and CLOSED: why, as a zkrc error (above); ZKRC_OK otherwise. */
  int reason;
  /** ZooKeeper's code behind @c reason; ZOK when there is none. */
  int zk_error;
} zkrc_double_barrier_event;

/** Told each event, on the session's executor, one at a time, in order,
 *  never with a zkrecipes mutex held.  It may call any function of @p b
 *  that does not wait (zkrc_double_barrier_leave() with ZKRC_NO_WAIT,
 *  zkrc_double_barrier_free(), zkrc_double_barrier_free_async()). */
typedef void (*zkrc_double_barrier_event_fn)(
    zkrc_double_barrier *b, const zkrc_double_barrier_event *ev, void *arg);

/** Options; initialize with zkrc_double_barrier_options_init(). */
typedef struct zkrc_double_barrier_options {
  /** Set by zkrc_double_barrier_options_init() (see
   *  zkrc_lock_options.size). */
  size_t size;
  /** The wire format; 0 (default): ZKRC_BARRIER_CURATOR. */
  zkrc_barrier_dialect dialect;
  /** kazoo: the member node's data (its identifier).  NULL (default):
   *  "<hostname>:<pid>".  Copied.  Curator's nodes carry no data, so a
   *  Curator member ignores it. */
  const char *id;
  /** ACL of the member node, of "ready" and of the parents created.
   *  NULL (default): ZOO_OPEN_ACL_UNSAFE.  Copied. */
  const struct ACL_vector *acl;
  /** Told each ENTERED / LEFT / LOST / CLOSED.  NULL: none. */
  zkrc_double_barrier_event_fn on_event;
  void *event_arg;
} zkrc_double_barrier_options;

/** Zero @p opts and set its size (NULL is ignored): the first @p size
 *  bytes, the struct's size as your program was compiled with it.  Call
 *  zkrc_double_barrier_options_init(), which passes it. */
void zkrc_double_barrier_options_init_sized(zkrc_double_barrier_options *opts,
                                            size_t size);

/** Zero @p opts and set its size (NULL is ignored).  Inline: it passes
 *  sizeof *@p opts as this header defines it to
 *  zkrc_double_barrier_options_init_sized(). */
static inline void
zkrc_double_barrier_options_init(zkrc_double_barrier_options *opts) {
  zkrc_double_barrier_options_init_sized(opts, sizeof *opts);
}

/**
 * Start entering the double barrier at @p path as one of @p members:
 * this member's ephemeral node is created (with the containers above it)
 * and, once it is registered, "ready" is looked for and the members
 * counted.  Returns at once (zkrc_double_barrier_wait_entered() waits).
 * @return ZKRC_OK (*@p out is yours: zkrc_double_barrier_free());
 *         ZKRC_EINVAL (NULL @p out or @p s, invalid path or "/",
 *         @p members < 1, options not initialized, an unknown dialect, an
 *         id that is empty or has a '/' or too long: nothing sent, no
 *         object made); ZKRC_ETOOBIG (the member's create would not pass
 *         the size limit, as zkrc_ephemeral_new()); ZKRC_ECLOSED.
 * Threading: any thread.
 */
int zkrc_double_barrier_new(zkrc_double_barrier **out, zkrc_session *s,
                            const char *path, int members,
                            const zkrc_double_barrier_options *opts);

/**
 * Wait until the member entered, at most @p timeout_ms (ZKRC_WAIT_FOREVER,
 * ZKRC_NO_WAIT or > 0).  Once entered it stays so for this call (also
 * while leaving and after LEFT).
 * @return ZKRC_OK; ZKRC_ETIMEDOUT; ZKRC_ESESSIONLOST, ZKRC_ESESSIONEXPIRED,
 *         ZKRC_ENONODE or ZKRC_ENOAUTH (LOST before it entered, its
 *         reason); ZKRC_ECLOSED; ZKRC_EINVAL.
 * Threading: any thread but the session's callback thread (there, only
 * ZKRC_NO_WAIT).
 */
int zkrc_double_barrier_wait_entered(zkrc_double_barrier *b, int timeout_ms);

/**
 * Start leaving (once entered) and wait at most @p timeout_ms until every
 * member left (ZKRC_NO_WAIT: start, do not wait; then
 * zkrc_double_barrier_wait_left()).  Leaving goes on after a timeout.
 * @return ZKRC_OK (LEFT); ZKRC_ETIMEDOUT (others are still in: leaving
 *         goes on); ZKRC_ESTATE (not entered yet: nothing changed; free
 *         the object to give up); the LOST reasons of
 *         zkrc_double_barrier_wait_entered(); ZKRC_ECLOSED; ZKRC_EINVAL.
 * Threading: as zkrc_double_barrier_wait_entered().
 */
int zkrc_double_barrier_leave(zkrc_double_barrier *b, int timeout_ms);

/**
 * Wait until every member left after zkrc_double_barrier_leave(), at most
 * @p timeout_ms.
 * @return as zkrc_double_barrier_leave(); ZKRC_ESTATE when leave was not
 *         called.
 * Threading: as zkrc_double_barrier_wait_entered().
 */
int zkrc_double_barrier_wait_left(zkrc_double_barrier *b, int timeout_ms);

/** The barrier's path (owned by @p b). */
const char *zkrc_double_barrier_path(zkrc_double_barrier *b);

/** This member's node's name under the path (owned by @p b). */
const char *zkrc_double_barrier_node(zkrc_double_barrier *b);

/**
 * Stop taking part and free @p b.  Never waits for the network: this
 * member's node is deleted in the background (zkrc_ephemeral_free()), so
 * the others count one member less.  After it returns no event of @p b
 * runs; it waits only for an event callback of @p b running on another
 * thread.  Works whatever the session's state.  NULL is ignored.
 * Threading: any thread, including @p b's own event callback.
 */
void zkrc_double_barrier_free(zkrc_double_barrier *b);

/**
 * Free @p b without blocking: as zkrc_double_barrier_free(), and then
 * @p done runs with @p arg on the session's executor once the member's
 * node's delete is confirmed or handed to the session's reaper, after the
 * last event of @p b.
 * @return ZKRC_OK (@p done will run); ZKRC_EINVAL (NULL @p b or @p done;
 *         nothing changes).
 * Threading: any thread, including @p b's own event callback.  Call it
 * once, instead of zkrc_double_barrier_free().
 */
int zkrc_double_barrier_free_async(zkrc_double_barrier *b,
                                   zkrc_callback_fn done, void *arg);

#ifdef __cplusplus
}
#endif
#endif /* ZKRECIPES_BARRIER_H */
