/*
 * zkrecipes/timelease.h - time leases: at most one holder (or N) per
 * period of wall-clock time, on kazoo's NonBlockingLease and
 * MultiNonBlockingLease format.
 *
 * A time lease is a claim written down, not a hold kept alive: the holder
 * may do a job until the end it wrote, and nobody else may take the lease
 * before that end, whether the holder's session lives or not.  The usual
 * use: a periodic job that should run on one machine only, staying on the
 * same machine while it renews, failing over once it stops renewing.
 *
 * Protocol (kazoo 2.8's kazoo/recipe/lease.py, both directions): the lease
 * is a directory node PATH.  The one who decides takes a kazoo Lock on
 * PATH (an ephemeral sequential child "<uuid hex>__lock__<seq>" holding
 * the identifier: the same contender queue as every zkrecipes lock,
 * zkrecipes/lock.h), then reads PATH/lease_holder, JSON of the form
 *   {"version": 1, "holder": "<identifier>", "end": "2026-11-30T03:00:00"}
 * If the node names another holder and its end is still ahead of the
 * decider's clock, the lease is refused; otherwise the decider writes its
 * own identifier and end (its clock now plus the duration), and gives the
 * lock back.  A node of another version is left to whoever knows it: the
 * lease is refused (kazoo does the same).  The multi form
 * (zkrc_time_lease_obtain_multi()) tries PATH/0, PATH/1, ... PATH/N-1 in
 * turn and takes the first it may, so at most N hold it at once.
 *
 * The clock assumption.  The end is written as the taker's wall clock (UTC)
 * plus the duration, with one-second resolution ("%Y-%m-%dT%H:%M:%S"), and
 * read against the reader's wall clock.  Exclusion holds only while every
 * participant's clock agrees within the margin the holder keeps: if a
 * reader's clock runs D ahead of the holder's, it sees the end D early and
 * may take the lease while the holder still counts on it.  So:
 *   - a holder must stop its job some margin M before the end (M at least
 *     the worst clock skew between the participants; NTP-disciplined
 *     clocks are usually within milliseconds, but a clock stepped by an
 *     operator or a virtual machine's resume is not);
 *   - time spent between reading the clock and the write landing counts
 *     against the holder, not against the others (the end is computed
 *     before the write), which is the safe direction;
 *   - kazoo truncates the end to the second, so a kazoo lease of a
 *     duration under a second may end before it was written; we round our
 *     end up to the next whole second, so that our lease lasts at least
 *     the duration asked for in the others' eyes (never less), and report
 *     the end written (zkrc_time_lease_result.end_ms).  A duration of
 *     less than a second is allowed but leaves a holder less than the
 *     rounding's margin of knowing what others see; prefer seconds.
 *   - a jump of the holder's own clock does not shorten what others see
 *     (the end is in the node), but a jump of a reader's clock forward
 *     does: that is the skew above.
 * Nothing here is verified by ZooKeeper: the session lease (zkrecipes/
 * session.h) guards only the decision (the lock), not the period.
 *
 * The decision itself is made under the lock and written atomically: the
 * write is one multi of a check that our lock node still exists (so a
 * decider whose session expired under it writes nothing), the delete of
 * the old lease_holder at the version read, and the create of the new one.
 *
 * Identifiers.  Renewal is by identifier: whoever presents the identifier
 * written in the node may write a new end before the old one passed.  The
 * default is "<hostname>:<pid>" as for every zkrecipes participant, so a
 * restarted process is a new holder and waits for its predecessor's end;
 * kazoo's default is the host name alone, so to renew a lease a kazoo
 * process of the same host took (or to let one renew ours), pass the host
 * name as the identifier.
 *
 * Every call blocks the calling thread at most @p timeout_ms
 * (ZKRC_WAIT_FOREVER, a positive number of ms, or ZKRC_NO_WAIT: do not
 * wait for the lock: ZKRC_ELOCKED when another participant is deciding at
 * this moment); not from a session's callback thread.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef ZKRECIPES_TIMELEASE_H
#define ZKRECIPES_TIMELEASE_H

#include <stddef.h>
#include <stdint.h>
#include <zookeeper/zookeeper.h>
#include <zkrecipes/session.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The wall clock a time lease reads: milliseconds since the Unix epoch,
 *  UTC.  Called on the calling thread of zkrc_time_lease_obtain(), once
 *  per slot decided, with the lock held (a ZooKeeper lock, no zkrecipes
 *  mutex). */
typedef int64_t (*zkrc_time_lease_clock_fn)(void *arg);

/** Options of a time lease; initialize with zkrc_time_lease_options_init(). */
typedef struct zkrc_time_lease_options {
  /** Set by the _init function to the size of the struct your program was
   *  compiled with.  Options that were not initialized (size 0) are
   *  refused with ZKRC_EINVAL. */
  size_t size;
  /** Who takes the lease: written in lease_holder and in the lock node;
   *  the same identifier renews it.  NULL (default): "<hostname>:<pid>"
   *  (kazoo's default is the host name alone: see above). */
  const char *identifier;
  /** ACL of the nodes made (the directories, lock nodes and lease_holder).
   *  NULL (default): ZOO_OPEN_ACL_UNSAFE. */
  const struct ACL_vector *acl;
  /** The wall clock.  NULL (default): the system's real-time clock
   *  (g_get_real_time()).  For tests, and for a program with a better
   *  clock than the system's. */
  zkrc_time_lease_clock_fn clock;
  /** Passed to @p clock. */
  void *clock_arg;
} zkrc_time_lease_options;

/** Fill @p opts with the defaults.  Threading: any thread.  Fills the
 *  first @p size bytes of @p opts (the struct's size as your program was
 *  compiled with it) and sets its size field; call
 *  zkrc_time_lease_options_init(), which passes it. */
void zkrc_time_lease_options_init_sized(zkrc_time_lease_options *opts,
                                        size_t size);

/** Fill @p opts with the defaults.  Threading: any thread.  Inline: it
 *  passes sizeof *@p opts as this header defines it to
 *  zkrc_time_lease_options_init_sized(). */
static inline void zkrc_time_lease_options_init(zkrc_time_lease_options *opts) {
  zkrc_time_lease_options_init_sized(opts, sizeof *opts);
}

/** What an attempt came to (zkrc_time_lease_result.outcome).  Starts at 1:
 *  a zeroed value is none of them. */
typedef enum zkrc_time_lease_outcome {
  /** Obtained: nobody held it, or the last holder's end had passed. */
  ZKRC_TIME_LEASE_OBTAINED = 1,
  /** Obtained again by its holder (the same identifier) before its end:
   *  the end moved to now plus the duration. */
  ZKRC_TIME_LEASE_RENEWED = 2,
  /** Refused: another identifier holds it until its end, which is ahead
   *  of our clock (the result names it). */
  ZKRC_TIME_LEASE_HELD = 3,
  /** Refused: lease_holder is of another format version than 1, which
   *  we leave to whoever knows it (as kazoo does). */
  ZKRC_TIME_LEASE_OTHER_VERSION = 4
} zkrc_time_lease_outcome;

/** Name of an outcome, lower-case ("obtained", "renewed", "held",
 *  "other_version"; "unknown" for a value that is none of them); a static
 *  string.  Threading: any thread. */
const char *zkrc_time_lease_outcome_name(zkrc_time_lease_outcome outcome);

/** What zkrc_time_lease_obtain() found and did.  Free what it holds with
 *  zkrc_time_lease_result_clear(). */
typedef struct zkrc_time_lease_result {
  /** What the attempt came to; for the multi form, when no slot was
   *  obtained, the refusal of the slot named by @p slot. */
  zkrc_time_lease_outcome outcome;
  /** The multi form: the slot obtained (PATH/<slot>), or when refused the
   *  one whose holder's end comes first (or the first of another
   *  version); 0 for the single form. */
  int slot;
  /** The end written (obtained, renewed) or read (held), in ms since the
   *  Unix epoch, UTC: a whole second.  0 for another version. */
  int64_t end_ms;
  /** Obtained, renewed: the ms from our clock's reading at the decision
   *  to @p end_ms; held: from our reading to the holder's end.  Measure
   *  your margin (see above) from this. */
  int64_t remaining_ms;
  /** The identifier written in lease_holder: ours when obtained, the
   *  other's when held (malloc'ed), NULL for another version. */
  char *holder;
} zkrc_time_lease_result;

/** Free what @p r holds and zero it (NULL is ignored).  Threading: any
 *  thread. */
void zkrc_time_lease_result_clear(zkrc_time_lease_result *r);

/**
 * Try to take the lease at @p path for @p duration_ms (kazoo's
 * NonBlockingLease): wait at most @p timeout_ms for the decision's lock,
 * read lease_holder, write our end when we may.  Refusal is not an error:
 * ZKRC_OK with @p out's outcome ZKRC_TIME_LEASE_HELD or
 * ZKRC_TIME_LEASE_OTHER_VERSION.  The directory and its missing ancestors
 * are made as container nodes (kazoo makes persistent ones: either
 * reads the other's).
 *
 * @param path         the lease's directory, checked by
 *                     zkrc_path_validate() ("/" refused).
 * @param duration_ms  > 0: the period, from our clock's reading; the end
 *                     written is rounded up to a whole second.
 * @param opts         NULL for the defaults; need not outlive the call.
 * @param out          filled on ZKRC_OK (zeroed on every error).
 * @param timeout_ms   ZKRC_WAIT_FOREVER, ZKRC_NO_WAIT or ms > 0, the whole
 *                     call's bound.
 * @return ZKRC_OK (see @p out); ZKRC_ELOCKED (ZKRC_NO_WAIT, and another
 *         participant holds the decision's lock: nothing written);
 *         ZKRC_EBADNODE (lease_holder is not kazoo's JSON of version 1: no
 *         version, not JSON, or a version-1 record without a holder or a
 *         readable end; nothing written); ZKRC_EBADVERSION (lease_holder
 *         changed between our read and our write, by a writer that does
 *         not take the lock: nothing written); ZKRC_ELOCKLOST (our lock
 *         node was gone when the write arrived, its session expired
 *         during the decision: nothing written); ZKRC_EINVAL (NULL
 *         argument, invalid path, duration <= 0 or an end past the year
 *         9999, a bad timeout, options not initialized, an identifier
 *         empty or not UTF-8; nothing sent); ZKRC_ETOOBIG
 *         (the identifier makes lease_holder too large: nothing sent);
 *         ZKRC_ETIMEDOUT (the lock or a request outlasted @p timeout_ms;
 *         after the write was sent it may or may not have landed: call
 *         again, with the same identifier it renews); ZKRC_ECONNLOSS,
 *         ZKRC_ESESSIONEXPIRED, ZKRC_ESESSIONLOST (the same doubt);
 *         ZKRC_ENOAUTH; ZKRC_ECLOSED; ZKRC_ENOMEM.  On every return the
 *         lock is given back (its node deleted, or left to the session to
 *         delete when the connection is down).
 * Threading: any thread but the session's callback thread.
 */
int zkrc_time_lease_obtain(zkrc_session *s, const char *path,
                           int64_t duration_ms,
                           const zkrc_time_lease_options *opts,
                           zkrc_time_lease_result *out, int timeout_ms);

/**
 * Try the @p count slots PATH/0 ... PATH/<count - 1> in turn, as
 * zkrc_time_lease_obtain() each (kazoo's MultiNonBlockingLease), and stop
 * at the first obtained or renewed: at most @p count identifiers hold a
 * slot at once.  A slot whose lease_holder is malformed is skipped (no
 * write there) and so, with ZKRC_NO_WAIT, is one whose lock is taken.
 *
 * Waiting (a positive @p timeout_ms or ZKRC_WAIT_FOREVER): first every
 * slot in turn is tried without waiting for its lock (a look at its queue,
 * one round trip), so that a slot that may be taken (its lock free, its
 * lease free, ended, or ours) is obtained within the timeout whatever
 * lock another slot's decider keeps; only when none was obtained are the
 * slots whose lock was taken (or which could not be looked at because the
 * connection was down) tried again in turn, each waiting for its lock
 * within what is left of @p timeout_ms.
 *
 * @param count  1 to 1000.
 * @return ZKRC_OK when a slot was obtained or every slot was decided
 *         (refused: @p out names the refusal that ends first);
 *         ZKRC_ELOCKED or ZKRC_EBADNODE when nothing was obtained and some
 *         slot could not be decided for that reason; otherwise the errors
 *         of zkrc_time_lease_obtain(), at the first slot that failed so
 *         (the slots before it were refused).
 * Threading: any thread but the session's callback thread.
 */
int zkrc_time_lease_obtain_multi(zkrc_session *s, const char *path, int count,
                                 int64_t duration_ms,
                                 const zkrc_time_lease_options *opts,
                                 zkrc_time_lease_result *out, int timeout_ms);

#ifdef __cplusplus
}
#endif

#endif /* ZKRECIPES_TIMELEASE_H */
