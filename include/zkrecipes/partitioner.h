/*
 * zkrecipes/partitioner.h - members of a party divide a set of items among
 * themselves, each item held under its own lock (kazoo's SetPartitioner,
 * wire-compatible: a kazoo member and ours share a party).
 *
 * Nodes, as kazoo 2.8 makes them:
 *   <path>/party/<uuid hex>-<identifier>  one per member: an ephemeral,
 *        not sequential, node whose data is the identifier (kazoo's
 *        ShallowParty; the members are the names after the first '-');
 *   <path>/locks/<item>  a lock per item (kazoo's Lock: our contender nodes
 *        are named "_c_<uuid>-__lock__<seq>", which kazoo's Lock counts as
 *        its own, and we count its "<uuid>__lock__<seq>").
 * The split: the members' identifiers sorted, the items sorted (byte
 * order, which is kazoo's code point order for UTF-8); the member at index
 * i of n takes items i, i + n, i + 2n, ...
 *
 * States (kazoo's PartitionState), told to the application in order:
 *   ALLOCATING  the party is changing or the locks of our share are being
 *               taken.  The split is computed once the party has not
 *               changed for time_boundary_ms (the debounce); the locks of
 *               the share are then asked for all at once (kazoo takes them
 *               one by one), and a change of the party meanwhile gives
 *               them up and starts the debounce again.
 *   ACQUIRED    every lock of our share is held: the items are ours.
 *   RELEASE     the party changed: stop using the items, then call
 *               zkrc_partitioner_release_set() (the locks are released
 *               only then, so no one else gets an item still in use).
 *   FAILURE     for good: the party could not be joined, the session's
 *               lease ran out or the session expired or was closed, an
 *               item's lock was lost, or a request failed (the event's
 *               reason says which).  Every lock is given up and we leave
 *               the party.  Make a new partitioner to take part again.
 * Held means held: ACQUIRED is told only while every lock of the share is
 * held, and FAILURE is told when the session's lease runs out
 * (zkrecipes/session.h), before the servers can expire the session and
 * give the items to anyone else.  A dropped connection alone changes
 * nothing (the lease covers it), where kazoo goes to RELEASE.
 *
 * Party membership is a plain ephemeral node created once, as kazoo's:
 * it is not created again after an expiry (that ends the partitioner), so
 * zkrecipes/ephemeral.h, which would keep it, is not used.
 *
 * A write that fails with ZKRC_ETIMEDOUT or ZKRC_ECONNLOSS (also while the
 * session is reopening) may or may not have been applied; ZKRC_ECLOSED
 * comes only from a closed session or object (zkrecipes/error.h).
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef ZKRECIPES_PARTITIONER_H
#define ZKRECIPES_PARTITIONER_H

#include <stddef.h>
#include <zookeeper/zookeeper.h>
#include <zkrecipes/session.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zkrc_partitioner zkrc_partitioner;

/** A partitioner's state (see above).  Its events are exactly its state
 *  changes, so zkrc_partitioner_event.type is of this type. */
typedef enum zkrc_partitioner_state {
  ZKRC_PARTITIONER_ALLOCATING = 1,
  ZKRC_PARTITIONER_ACQUIRED,
  ZKRC_PARTITIONER_RELEASE,
  ZKRC_PARTITIONER_FAILURE
} zkrc_partitioner_state;

/** "allocating", "acquired", "release", "failure" ("unknown" for another
 *  value).  Static string; any thread. */
const char *zkrc_partitioner_state_name(zkrc_partitioner_state st);

/** A state change, valid only during the call. */
typedef struct zkrc_partitioner_event {
  /** The new state. */
  zkrc_partitioner_state type;
  /** FAILURE: why, as a zkrc error: the party could not be joined (what
   *  the join failed with: ZKRC_ETIMEDOUT, ZKRC_ECONNLOSS, ZKRC_ENOAUTH,
   *  ...), the session's lease ran out (ZKRC_ESESSIONLOST), it expired
   *  (ZKRC_ESESSIONEXPIRED), was closed (ZKRC_ECLOSED) or refused its
   *  credentials (ZKRC_EAUTHFAILED), an item's lock was lost (its LOST
   *  reason, ZKRC_ELOCKLOST for its node deleted) or could not be taken
   *  (the acquisition's error), our party node is gone (ZKRC_ENONODE).
   *  ZKRC_OK for the other states. */
  int reason;
  /** ZooKeeper's code behind @c reason; ZOK when there is none (a lease
   *  that ran out, a close). */
  int zk_error;
  /** ACQUIRED: our share, sorted, @c count of them; else NULL and 0. */
  const char *const *items;
  size_t count;
} zkrc_partitioner_event;

/**
 * Told each state change, in order, on the session's executor, never with
 * a zkrecipes mutex held.  It may call any non-blocking zkrc_partitioner
 * function (zkrc_partitioner_release_set included), and
 * zkrc_partitioner_free() or zkrc_partitioner_free_async().
 */
typedef void (*zkrc_partitioner_event_fn)(zkrc_partitioner *p,
                                          const zkrc_partitioner_event *ev,
                                          void *arg);

/** Options; initialize with zkrc_partitioner_options_init(). */
typedef struct zkrc_partitioner_options {
  /** Set by zkrc_partitioner_options_init() (see zkrc_lock_options.size). */
  size_t size;
  /** This member's identifier, unique in the party: non-empty, at most
   *  200 bytes, no '/', and nothing a path may not hold
   *  (zkrc_path_validate(): no control character, valid UTF-8, ...).
   *  NULL (default): "<hostname>:<pid>", every recipe's default id
   *  (kazoo's default is the fully qualified host name and the pid). */
  const char *identifier;
  /** How long the party must be unchanged before the set is split, in ms
   *  (kazoo's time_boundary).  Default 30000 (kazoo's 30 s); >= 0. */
  int time_boundary_ms;
  /** ACL of the nodes created.  NULL (default): ZOO_OPEN_ACL_UNSAFE. */
  const struct ACL_vector *acl;
  /** Told each state change, with @c event_arg.  NULL: none (poll
   *  zkrc_partitioner_get_state() or wait with zkrc_partitioner_wait()). */
  zkrc_partitioner_event_fn on_event;
  void *event_arg;
} zkrc_partitioner_options;

/** Zero @p opts, set its size and the defaults (NULL is ignored).  Fills
 *  the first @p size bytes of @p opts, the size of the struct as your
 *  program was compiled with it, and sets its size field to it: the
 *  fields a program built against an older, shorter
 *  zkrc_partitioner_options lacks are never written.  Call
 *  zkrc_partitioner_options_init(), which passes it. */
void zkrc_partitioner_options_init_sized(zkrc_partitioner_options *opts,
                                         size_t size);

/** Zero @p opts, set its size and the defaults (NULL is ignored).
 *  Inline: it passes sizeof *@p opts as this header defines it to
 *  zkrc_partitioner_options_init_sized(), so a program keeps working with
 *  a later library whose struct has grown (and a later program, whose
 *  struct is longer, with this library: the fields it does not know are
 *  ignored). */
static inline void
zkrc_partitioner_options_init(zkrc_partitioner_options *opts) {
  zkrc_partitioner_options_init_sized(opts, sizeof *opts);
}

/**
 * Join the party at @p path and start dividing @p items (@p count strings,
 * copied; each a valid node name: non-empty, no '/', not "." or "..",
 * nothing a path may not hold, no two alike; none NULL).  Returns at once,
 * in ALLOCATING: it never waits for the network.  In the background it
 * creates <path> and <path>/party if missing (as containers; <path>/locks
 * and the item locks are made when first needed) and our party node,
 * with asynchronous requests (no thread of its own), retrying after a lost
 * connection (once it is back, after a pause doubling from 20 ms to
 * 0.5 s) for up to a session timeout; when the party cannot be joined, the state goes to FAILURE with the join's error
 * as the event's reason (ZKRC_ETIMEDOUT, ZKRC_ECONNLOSS, ZKRC_ENOAUTH,
 * ...; nothing is left).
 * @return ZKRC_OK (*@p out is yours: zkrc_partitioner_free() or
 *         zkrc_partitioner_free_async());
 *         ZKRC_EINVAL (NULL @p out or @p s, invalid @p path, an invalid,
 *         NULL or repeated item, @p items NULL with @p count > 0, options
 *         not initialized, a bad identifier or time boundary: all checked
 *         before anything is sent, so nothing is created); ZKRC_ECLOSED
 *         (the session is closed).
 * Threading: any thread.
 */
int zkrc_partitioner_new(zkrc_partitioner **out, zkrc_session *s,
                         const char *path, const char *const *items,
                         size_t count, const zkrc_partitioner_options *opts);

/** The current state (0 for NULL).  Local state only; any thread.  (Named
 *  _get_state, as zkrc_session_get_state(): the type is
 *  zkrc_partitioner_state.) */
zkrc_partitioner_state zkrc_partitioner_get_state(zkrc_partitioner *p);

/**
 * Wait until the state is @p st or FAILURE, at most @p timeout_ms
 * (ZKRC_WAIT_FOREVER or >= 0).
 * @return ZKRC_OK (the state is @p st); ZKRC_ESTATE (it is FAILURE, and
 *         @p st is not); ZKRC_ETIMEDOUT; ZKRC_EINVAL.
 * Not from the executor's thread.
 */
int zkrc_partitioner_wait(zkrc_partitioner *p, zkrc_partitioner_state st,
                          int timeout_ms);

/**
 * Our share while ACQUIRED and every lock of it held (checked now, by the
 * lease): a NULL-terminated malloc'ed array of malloc'ed strings, sorted
 * (free it with zkrc_strv_free()); @p count (may be NULL) gets its length.
 * @return ZKRC_OK; ZKRC_ESTATE (not ACQUIRED, or a lock's lease ran out:
 *         FAILURE follows); ZKRC_EINVAL; ZKRC_ENOMEM.  Never a round trip.
 */
int zkrc_partitioner_items(zkrc_partitioner *p, char ***items, size_t *count);

/**
 * How long, in ms, our share certainly stays ours from now: the shortest
 * lease of its locks while ACQUIRED (check it before work that must not
 * outlive the hold), else 0.  Local state only.  NULL yields 0.
 */
int zkrc_partitioner_lease_remaining(zkrc_partitioner *p);

/**
 * In RELEASE: the application has stopped using its items; release their
 * locks (the deletes go out in the background) and allocate again
 * (ALLOCATING, then the debounce).  kazoo's release_set().
 * @return ZKRC_OK; ZKRC_ESTATE (not in RELEASE: nothing changes);
 *         ZKRC_EINVAL.  Does not block; any thread, callbacks included.
 */
int zkrc_partitioner_release_set(zkrc_partitioner *p);

/** This member's identifier (owned by @p p). */
const char *zkrc_partitioner_identifier(zkrc_partitioner *p);

/**
 * Release every lock, leave the party and free @p p: kazoo's finish().
 * Never waits for the network: the locks' releases and our party node's
 * delete are sent without waiting (a delete that cannot be confirmed, the
 * connection being down, is left to the session, which deletes the node
 * once connected again, unless its ZooKeeper session expired and took the
 * node with it; a closed session's node went with it).  A join still
 * under way stops (and leaves, if its node was made).  After it returns
 * no callback of @p p runs; it waits only for one running on another
 * thread (called from @p p's own callback, it does not wait).  Works
 * whatever the session's state: open, suspended or closed (before or
 * after zkrc_session_close()).  NULL is ignored.  Do not use @p p
 * afterwards.
 * Threading: any thread, @p p's own callback included.
 */
void zkrc_partitioner_free(zkrc_partitioner *p);

/**
 * Free @p p without blocking: as zkrc_partitioner_free() (every lock
 * released, the party left, a join under way stopped), then @p done runs
 * with @p arg on the session's executor, once the background work is over:
 * the join stopped, every item lock freed (zkrc_lock_free_async()), our
 * party node deleted or handed to the session to delete, the party's cache
 * freed.  Events queued before this call are still told (an ACQUIRED only
 * if its share is still held then, which it no longer is), none after
 * @p done.  From this call on, use @p p only in the callbacks still to
 * come; after @p done returns it is gone.
 *
 * @return ZKRC_OK (@p done will run); ZKRC_EINVAL (NULL @p p or @p done:
 *         nothing changes).
 * Threading: any thread, including the executor's and @p p's own event
 * callback, while the session's executor runs.  Call it once, instead of
 * zkrc_partitioner_free().
 */
int zkrc_partitioner_free_async(zkrc_partitioner *p, zkrc_callback_fn done,
                                void *arg);

#ifdef __cplusplus
}
#endif
#endif /* ZKRECIPES_PARTITIONER_H */
