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
 *   FAILURE     for good: the session's lease ran out or the session
 *               expired or was closed, an item's lock was lost, or a
 *               request failed.  Every lock is given up and we leave the
 *               party.  Make a new partitioner to take part again.
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

/** A partitioner's state (see above). */
typedef enum zkrc_partition_state {
  ZKRC_PARTITION_ALLOCATING = 1,
  ZKRC_PARTITION_ACQUIRED,
  ZKRC_PARTITION_RELEASE,
  ZKRC_PARTITION_FAILURE
} zkrc_partition_state;

/** "ALLOCATING", "ACQUIRED", "RELEASE", "FAILURE" ("?" if unknown). */
const char *zkrc_partition_state_name(zkrc_partition_state st);

/**
 * Told each state change, in order, on the session's executor, never with
 * a zkrecipes mutex held.  @p items (sorted, @p count of them) is our share
 * for ACQUIRED, else NULL and 0; valid only during the call.  It may call
 * any non-blocking zkrc_partitioner function (zkrc_partitioner_release_set
 * included), not zkrc_partitioner_free().
 */
typedef void (*zkrc_partitioner_fn)(zkrc_partitioner *p,
                                    zkrc_partition_state st,
                                    const char *const *items, size_t count,
                                    void *arg);

/** Options; initialize with zkrc_partitioner_options_init(). */
typedef struct zkrc_partitioner_options {
  /** Set by zkrc_partitioner_options_init() (see zkrc_lock_options.size). */
  size_t size;
  /** This member's identifier, unique in the party: non-empty, at most
   *  200 bytes, no '/', and nothing a path may not hold
   *  (zkrc_path_validate(): no control character, valid UTF-8, ...).
   *  NULL (default): "<hostname>-<pid>" (kazoo's default is the fully
   *  qualified host name and the pid). */
  const char *identifier;
  /** How long the party must be unchanged before the set is split, in ms
   *  (kazoo's time_boundary).  Default 30000 (kazoo's 30 s); >= 0. */
  int time_boundary_ms;
  /** ACL of the nodes created.  NULL (default): ZOO_OPEN_ACL_UNSAFE. */
  const struct ACL_vector *acl;
  /** Told each state change.  NULL: none (poll zkrc_partitioner_state()
   *  or wait with zkrc_partitioner_wait()). */
  zkrc_partitioner_fn on_state;
  void *state_arg;
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
 * nothing a path may not hold, no two alike; none NULL).  Creates <path>
 * and <path>/party if missing (as containers; <path>/locks and the item
 * locks are made when first needed) and our party node before returning:
 * this blocks at most the session timeout.  The state is ALLOCATING.
 * @return ZKRC_OK (*@p out is yours: zkrc_partitioner_free());
 *         ZKRC_EINVAL (NULL @p out or @p s, invalid @p path, an invalid,
 *         NULL or repeated item, @p items NULL with @p count > 0, options
 *         not initialized, a bad identifier or time boundary: all checked
 *         before anything is sent, so nothing is created);
 *         ZKRC_ETIMEDOUT, ZKRC_ECONNLOSS, ZKRC_ENOAUTH, ZKRC_ECLOSED
 *         (the party could not be joined; nothing is left).
 * Threading: any thread but the session's executor.
 */
int zkrc_partitioner_new(zkrc_partitioner **out, zkrc_session *s,
                         const char *path, const char *const *items,
                         size_t count, const zkrc_partitioner_options *opts);

/** The current state (0 for NULL).  Local state only. */
zkrc_partition_state zkrc_partitioner_state(zkrc_partitioner *p);

/**
 * Wait until the state is @p st or FAILURE, at most @p timeout_ms
 * (ZKRC_WAIT_FOREVER or >= 0).
 * @return ZKRC_OK (the state is @p st); ZKRC_ESTATE (it is FAILURE, and
 *         @p st is not); ZKRC_ETIMEDOUT; ZKRC_EINVAL.
 * Not from the executor's thread.
 */
int zkrc_partitioner_wait(zkrc_partitioner *p, zkrc_partition_state st,
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
 * Release every lock, leave the party (our node is deleted, waiting at
 * most the session timeout) and free @p p: kazoo's finish().  After it
 * returns no callback of @p p runs.  NULL is ignored.  The session must
 * still be open.  Not from the executor's thread.
 */
void zkrc_partitioner_free(zkrc_partitioner *p);

#ifdef __cplusplus
}
#endif
#endif /* ZKRECIPES_PARTITIONER_H */
