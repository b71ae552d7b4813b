/*
 * zkrecipes/election.h - leader election on the lock's contender queue.
 *
 * Protocol (compatible with Apache Curator's LeaderLatch): every participant
 * creates an ephemeral sequential node "_c_<uuid>-latch-<sequence>" under the
 * election path, holding its participant id.  The lowest sequence leads;
 * every other participant watches only the one just before it.  Before it
 * declares itself leader a participant checks that the lowest node belongs to
 * its current ZooKeeper session (Curator's double-leader bug CURATOR-696), and
 * the departure of a predecessor that was not the leader makes nobody leader:
 * the participant looks again.
 *
 * Fencing.  The leader's token is the czxid of its node: strictly increasing
 * from one leader to the next.  Guard the work a leader does with it.
 *
 * Callbacks run on the session's executor, in order, never on a ZooKeeper
 * thread and never with a zkrecipes mutex held.  An event is checked again
 * when it is delivered: ELECTED only while the participant still leads
 * with that token under a live lease (an executor may run it late); a
 * leadership lost before its ELECTED was delivered is told neither ELECTED
 * nor REVOKED.  One still held whose ELECTED found the lease out (renewals
 * restore it after a stall) is told ELECTED once the lease is back (looked
 * at every 20 ms, doubling to 1 s, while the leadership lasts).
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef ZKRECIPES_ELECTION_H
#define ZKRECIPES_ELECTION_H

#include <stddef.h>
#include <stdint.h>
#include <zookeeper/zookeeper.h>
#include <zkrecipes/executor.h>
#include <zkrecipes/participants.h>
#include <zkrecipes/session.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zkrc_election zkrc_election;

/** What happened to this participant (zkrc_election_event.type).  Starts
 *  at 1: a zeroed value is none of them. */
typedef enum zkrc_election_event_type {
  /** This participant now leads; ev->token is its fencing token. */
  ZKRC_ELECTION_ELECTED = 1,
  /** This participant no longer leads (or, with revoke_on_suspend, may no
   *  longer lead).  ev->reason says why. */
  ZKRC_ELECTION_REVOKED = 2,
  /** Taking part ended by an error and will not resume by itself: joining
   *  was refused (ZKRC_ENOAUTH, ZKRC_ENONODE for a missing chroot, ...), the session was closed or is dead for
   *  good (ZKRC_ECLOSED: closed, or expired or lost with no_reopen), or it
   *  was lost with no_rejoin set.  The participant is no longer
   *  joined (a REVOKED came first if it led). */
  ZKRC_ELECTION_FAILED = 3
} zkrc_election_event_type;

/** Name of an event type, lower-case ("elected", "revoked", "failed";
 *  "unknown" for a value that is none of them); a static string.
 *  Threading: any thread. */
const char *zkrc_election_event_name(zkrc_election_event_type type);

/** An election event; valid only during the callback.  Its first three
 *  fields are every zkrecipes event's (HACKING, "The contract"). */
typedef struct zkrc_election_event {
  /** What happened. */
  zkrc_election_event_type type;
  /** For REVOKED: ZKRC_OK (resigned or left), ZKRC_ECONNLOSS (connection
   *  lost, revoke_on_suspend), ZKRC_ESESSIONEXPIRED, ZKRC_ESESSIONLOST,
   *  ZKRC_ELOCKLOST (our node was deleted), ZKRC_ECLOSED.  ZKRC_OK for
   *  ELECTED. */
  int reason;
  /** The ZooKeeper code behind @p reason (ZNOAUTH, ZSESSIONEXPIRED, ZNONODE
   *  for a deleted node, ...), or ZOK when there is none. */
  int zk_error;
  /** The fencing token of the leadership this event is about (0 for
   *  FAILED, which is about none). */
  int64_t token;
  /** Full path of our node. */
  const char *node;
} zkrc_election_event;

/** Told when this participant is elected, revoked or fails; see the top
 *  of this file for where and when it runs. */
typedef void (*zkrc_election_event_fn)(zkrc_election *e,
                                       const zkrc_election_event *ev,
                                       void *arg);

/** Options; initialize with zkrc_election_options_init(). */
typedef struct zkrc_election_options {
  /** Set by the _init function to the size of the struct your program was
   *  compiled with, so that later versions of the library, with more
   *  fields, read only the fields it knows.  Options that were not
   *  initialized (size 0) are refused with ZKRC_EINVAL. */
  size_t size;
  /** Our node's data, shown as the leader's id.  NULL (default):
   *  "<hostname>:<pid>". */
  const char *participant_id;
  /** ACL of the nodes created.  NULL (default): ZOO_OPEN_ACL_UNSAFE.
   *  Copied. */
  const struct ACL_vector *acl;
  /** Told when this participant is elected or revoked.  May be NULL. */
  zkrc_election_event_fn on_event;
  void *event_arg;
  /** Non-zero: a leader whose connection drops is REVOKED at once
   *  (reason ZKRC_ECONNLOSS) instead of only when its session is gone, and
   *  ELECTED again (same token) if the connection comes back in time with
   *  the same session.  The safer choice for work that must never run
   *  twice; default 0. */
  int revoke_on_suspend;
  /** Non-zero: after our session expires or is lost, or our node is
   *  deleted, do not join again.  Default 0: rejoin (at the back of the
   *  queue) with the session's next ZooKeeper session. */
  int no_rejoin;
} zkrc_election_options;

/** Fill @p opts with the defaults (and its size: options that were not
 *  initialized are refused with ZKRC_EINVAL).  Threading: any thread.
 *  Fills the first @p size bytes of @p opts, the size of the struct as
 *  your program was compiled with it, and sets its size field to it: the
 *  fields a program built against an older, shorter zkrc_election_options
 *  lacks are never written.  Call zkrc_election_options_init(), which
 *  passes it. */
void zkrc_election_options_init_sized(zkrc_election_options *opts, size_t size);

/** Fill @p opts with the defaults (and its size: options that were not
 *  initialized are refused with ZKRC_EINVAL).  Threading: any thread.
 *  Inline: it passes sizeof *@p opts as this header defines it to
 *  zkrc_election_options_init_sized(), so a program keeps working with a
 *  later library whose struct has grown (and a later program, whose
 *  struct is longer, with this library: the fields it does not know are
 *  ignored). */
static inline void zkrc_election_options_init(zkrc_election_options *opts) {
  zkrc_election_options_init_sized(opts, sizeof *opts);
}

/**
 * Create a participant for the election at @p path.  It does not take part
 * until zkrc_election_join().
 *
 * @return ZKRC_OK; ZKRC_EINVAL (NULL, invalid path or ACL);
 *         ZKRC_ETOOBIG (participant_id, the data of every contender
 *         node, too large for the node's create to pass ZooKeeper's size
 *         limit; README, "Sizes");
 *         ZKRC_ECLOSED; ZKRC_ENOMEM.
 * Ownership: free with zkrc_election_free(); keeps a session reference.
 */
int zkrc_election_new(zkrc_election **out, zkrc_session *s, const char *path,
                      const zkrc_election_options *opts);

/**
 * Join the election: create our node (as soon as the session is connected)
 * and wait for our turn in the background.  Returns at once; ELECTED (or
 * FAILED) comes through the event callback.
 * @return ZKRC_OK; ZKRC_ESTATE when already joined; ZKRC_ECLOSED.
 */
int zkrc_election_join(zkrc_election *e);

/**
 * Give up leadership and go to the back of the queue (REVOKED with reason
 * ZKRC_OK, then a new node).  The next participant is elected after one
 * notification and one read; its lease, which rested while it waited, is
 * renewed then (one sync, waited for only when the lease ran out
 * meanwhile: zkrc_lease_renewal).
 * @return ZKRC_OK; ZKRC_ENOTLEADER when we do not lead (nothing changes).
 */
int zkrc_election_resign(zkrc_election *e);

/**
 * Leave the election entirely (REVOKED with reason ZKRC_OK if we led); our
 * node is deleted.  zkrc_election_join() may be called again later.
 * @return ZKRC_OK; ZKRC_ESTATE when not joined.
 */
int zkrc_election_leave(zkrc_election *e);

/**
 * Leave (if joined) and free.  It never waits for the network, whatever
 * the session's state: our node's delete is sent (once its create, if
 * still in flight, is answered) and never awaited, so the node may still
 * be there when this returns (when the delete cannot be confirmed, the
 * session deletes it once the connection is back, or its expiry removes
 * it).  Events still queued on the executor (the REVOKED of a leave just
 * before, say) are dropped, never delivered: the caller may free what its
 * callback uses as soon as this returns; it waits only for this
 * election's callback running on another thread.  To hear them, use
 * zkrc_election_free_async().  NULL is ignored.
 * Threading: any thread, including this election's own callback (it does
 * not wait for itself there).
 */
void zkrc_election_free(zkrc_election *e);

/**
 * Leave (if joined) and free, without blocking: every event posted before
 * this call is still delivered if it is still true when it runs (the
 * REVOKED of a leadership the application was told of, for one; not an
 * ELECTED of a leadership this call ended), none after it, and then
 * @p done runs
 * on the session's executor, once our node is deleted (or, when the
 * connection is down, once the library has handed its deletion to the
 * session).  After @p done returns the election is gone; from this call
 * on, use @p e only in the callbacks that are still to come.  For an event
 * loop (a GLib main context, say) that must not block in
 * zkrc_election_free(), and for a daemon that must hear its REVOKED.
 *
 * @return ZKRC_OK (@p done will run); ZKRC_EINVAL (NULL @p e or
 *         @p done; nothing changes).
 * Threading: any thread, including the executor's (also from this
 * election's own callback), while the session's executor is alive.  Call
 * it once, instead of zkrc_election_free().
 */
int zkrc_election_free_async(zkrc_election *e, zkrc_callback_fn done,
                             void *arg);

/**
 * Non-zero while this participant leads and its session's lease
 * (zkrecipes/session.h) has not run out: it turns 0 the moment the lease
 * runs out, before REVOKED is delivered, also in a process that was frozen
 * (SIGSTOP, debugger) past its lease.  Local state, nothing is sent.  NULL
 * yields 0.
 */
int zkrc_election_is_leader(zkrc_election *e);

/**
 * How long, in ms, this participant's leadership certainly lasts from now:
 * the session's lease while it leads, else 0.  Nobody else can be elected
 * before then.  Local state.  NULL yields 0.
 */
int zkrc_election_lease_remaining(zkrc_election *e);

/**
 * Wait until this participant leads: at most @p timeout_ms, ZKRC_NO_WAIT
 * (look once) or ZKRC_WAIT_FOREVER; any other negative value is refused.
 * @return ZKRC_OK; ZKRC_ETIMEDOUT; ZKRC_ESTATE (not joined, or left while
 *         waiting); ZKRC_EINVAL (bad timeout).
 * Threading: not on the session's callback thread.
 */
int zkrc_election_wait_leader(zkrc_election *e, int timeout_ms);

/**
 * Our fencing token while we lead.
 * @return ZKRC_OK; ZKRC_ENOTLEADER; ZKRC_EINVAL.
 */
int zkrc_election_token(zkrc_election *e, int64_t *token);

/**
 * The current leader's id (the lowest participant's node data), asked of
 * the servers.  Works for an election path that does not exist yet.
 * @param id  receives a malloc'ed string, or NULL when there is no leader.
 * @param timeout_ms  as for zkrc_lock_participants() (ZKRC_NO_WAIT: one
 *             look, its answer awaited at most the session timeout).
 * @return ZKRC_OK (with *id NULL for "no leader"); ZKRC_ETIMEDOUT;
 *         ZKRC_ECONNLOSS; ZKRC_ECLOSED; ZKRC_EINVAL.
 */
int zkrc_election_leader_id(zkrc_election *e, char **id, int timeout_ms);

/** The same for any election path, without taking part in it. */
int zkrc_election_query_leader(zkrc_session *s, const char *path, char **id,
                               int timeout_ms);

/**
 * Participant ids in queue order, the leader first.
 * @param ids  NULL-terminated malloc'ed array; free with zkrc_strv_free().
 */
int zkrc_election_participants(zkrc_election *e, char ***ids, size_t *count,
                               int timeout_ms);

/**
 * Every participant of the election at @p path, in queue order (the leader
 * first), with node names and ids; see zkrc_lock_list().
 */
int zkrc_election_list(zkrc_session *s, const char *path,
                       zkrc_participant **list, size_t *count, int timeout_ms);

/** The election's path (owned by the election). */
const char *zkrc_election_path(zkrc_election *e);

#ifdef __cplusplus
}
#endif
#endif /* ZKRECIPES_ELECTION_H */
