/*
 * zkrecipes/counter.h - counters in the three formats of the other
 * dialects, by one-shot calls: Curator's DistributedAtomicLong, kazoo's
 * Counter, and Curator's SharedCount and DistributedAtomicInteger (the
 * format of zkrecipes/shared.h).
 *
 * Wire formats (the node's data; a missing node or empty data reads as 0,
 * as Curator's DistributedAtomicLong and kazoo's Counter read them):
 *   ZKRC_COUNTER_ATOMIC_LONG   8 bytes, a big-endian signed 64-bit integer
 *                              (Curator's DistributedAtomicLong)
 *   ZKRC_COUNTER_KAZOO         the number as ASCII decimal text, as kazoo's
 *                              Counter writes it (repr() of a Python int:
 *                              "-12"); read back as Python's int() reads it
 *                              (spaces around and a sign allowed).  Integers
 *                              only: a float counter's text ("1.5", "inf")
 *                              is ZKRC_EBADNODE, as it is to kazoo's int
 *                              Counter; a value past 64 bits is
 *                              ZKRC_EOVERFLOW; text over 4096 bytes is not
 *                              read: ZKRC_EBADNODE.
 *   ZKRC_COUNTER_SHARED_COUNT  4 bytes, a big-endian signed 32-bit integer
 *                              (Curator's SharedCount and
 *                              DistributedAtomicInteger, whose Java int
 *                              wraps where we refuse; kazoo's
 *                              Counter(support_curator=True)); results past
 *                              32 bits are ZKRC_EOVERFLOW.
 * Data of any other length (or text that is not a number) is ZKRC_EBADNODE,
 * and nothing is written over it (Curator reads the first 8 bytes of a
 * longer node; we refuse it).
 *
 * Every change is optimistic, as Curator's DistributedAtomicValue: read the
 * value and its version, write the new value only at that version (or
 * create the node, with its missing parents as containers, when it does not
 * exist), and try again after a conflict, with a backoff, up to
 * zkrc_counter_options.max_attempts times.  When that fails and
 * zkrc_counter_options.promoted_lock_path is set (Curator's
 * PromotedToLock), the call takes a zkrc_lock at that path (Curator's
 * InterProcessMutex's format, so Curator's promoted writers and ours
 * exclude each other) and tries again under it, still by version, up to
 * promoted_max_attempts times.  Overflow is never wrapped (Curator's Java
 * long wraps): ZKRC_EOVERFLOW, nothing written.
 *
 * A call that did not succeed after all its tries returns ZKRC_EBADVERSION
 * with its zkrc_counter_result filled (succeeded 0), as Curator's
 * AtomicValue.succeeded() is false.  After ZKRC_ETIMEDOUT or
 * ZKRC_ECONNLOSS the last write may or may not have been applied: read
 * again before trying again.
 *
 * Every call blocks the calling thread at most @p timeout_ms
 * (ZKRC_WAIT_FOREVER, a positive number of ms, or ZKRC_NO_WAIT: ZKRC_ECONNLOSS
 * at once when the session is not connected now, else its tries share one
 * round's time), the backoffs and the promoted lock's wait included; not
 * from a session's callback thread.  Bad input (NULL session, path or
 * result, an invalid path, a bad timeout, options not initialized, an
 * unknown format, max_attempts < 1, an invalid promoted lock path) is
 * ZKRC_EINVAL with nothing sent.  Sizes: a counter's write (at most 24
 * bytes of data, on a path and chroot of at most ZKRC_PATH_MAX bytes each)
 * always passes the size rule (README, "Sizes"), so no call here returns
 * ZKRC_ETOOBIG; a node holding more than its format's bytes, however
 * large, is ZKRC_EBADNODE, and a value the format cannot hold
 * ZKRC_EOVERFLOW.
 */
#ifndef ZKRECIPES_COUNTER_H
#define ZKRECIPES_COUNTER_H

#include <stddef.h>
#include <stdint.h>

#include <zkrecipes/session.h>

#ifdef __cplusplus
extern "C" {
#endif

/** How a counter's value is kept in its node (above). */
typedef enum zkrc_counter_format {
  /** Curator's DistributedAtomicLong: 8 bytes, big-endian. */
  ZKRC_COUNTER_ATOMIC_LONG = 1,
  /** kazoo's Counter: ASCII decimal text. */
  ZKRC_COUNTER_KAZOO,
  /** Curator's SharedCount and DistributedAtomicInteger (kazoo's
   *  Counter(support_curator=True)): 4 bytes, big-endian. */
  ZKRC_COUNTER_SHARED_COUNT
} zkrc_counter_format;

/** "atomic-long", "kazoo", "shared-count" ("unknown" for another value).
 *  Static string; any thread. */
const char *zkrc_counter_format_name(zkrc_counter_format format);

/** A counter call's options; initialize with zkrc_counter_options_init(). */
typedef struct zkrc_counter_options {
  /** Set by zkrc_counter_options_init() (see zkrc_lock_options.size). */
  size_t size;
  /** The node's format; default ZKRC_COUNTER_ATOMIC_LONG. */
  zkrc_counter_format format;
  /** Optimistic tries (Curator's RetryPolicy); default 10, at least 1. */
  int max_attempts;
  /** The wait before the second try, doubling each try up to
   *  max_backoff_ms, half of it random; default 1 ms.  0: no wait. */
  int backoff_ms;
  /** The longest wait between two tries; default 64 ms. */
  int max_backoff_ms;
  /** NULL (the default): optimistic only.  Otherwise the path of the
   *  lock taken when the optimistic tries failed (Curator's
   *  PromotedToLock.lockPath); copied during the call only. */
  const char *promoted_lock_path;
  /** How long to wait for that lock (Curator's PromotedToLock.timeout):
   *  ZKRC_WAIT_FOREVER (the default), ZKRC_NO_WAIT or ms > 0; within the
   *  call's own timeout. */
  int promoted_lock_timeout_ms;
  /** Tries under the lock; default 1 (Curator's default RetryNTimes(0)). */
  int promoted_max_attempts;
} zkrc_counter_options;

/** Fill @p opts with the defaults (NULL is ignored).  Fills the first
 *  @p size bytes of @p opts, the size of the struct as your program was
 *  compiled with it, and sets its size field to it: the fields a program
 *  built against an older, shorter zkrc_counter_options lacks are never
 *  written.  Call zkrc_counter_options_init(), which passes it. */
void zkrc_counter_options_init_sized(zkrc_counter_options *opts, size_t size);

/** Fill @p opts with the defaults (NULL is ignored).  Inline: it passes
 *  sizeof *@p opts as this header defines it to
 *  zkrc_counter_options_init_sized(), so a program keeps working with a
 *  later library whose struct has grown (and a later program, whose
 *  struct is longer, with this library: the fields it does not know are
 *  ignored). */
static inline void zkrc_counter_options_init(zkrc_counter_options *opts) {
  zkrc_counter_options_init_sized(opts, sizeof *opts);
}

/** What a counter call did (Curator's AtomicValue and AtomicStats). */
typedef struct zkrc_counter_result {
  /** Non-zero when the change was written (always for a get). */
  int succeeded;
  /** The value read before the (last) try; 0 for a missing node. */
  int64_t pre_value;
  /** The value written; pre_value when nothing was. */
  int64_t post_value;
  /** The node's data version after the call's last read or write; -1 when
   *  the node did not exist. */
  int32_t version;
  /** Optimistic tries made. */
  int optimistic_tries;
  /** Tries made under the promoted lock (0 when it was not taken). */
  int promoted_tries;
} zkrc_counter_result;

/**
 * Read the counter at @p path (Curator's get(), kazoo's value).  A missing
 * node reads as 0 and is not created.
 * @param opts  NULL for the defaults; only its format is used.
 * @return ZKRC_OK (*@p result filled, succeeded 1); ZKRC_EBADNODE (data
 *         not in the format); ZKRC_EOVERFLOW (kazoo text past 64 bits);
 *         ZKRC_EINVAL; ZKRC_ETIMEDOUT;
 *         ZKRC_ECONNLOSS; ZKRC_ENOAUTH; ZKRC_ECLOSED.
 * Threading: any thread but a session's callback thread.
 */
int zkrc_counter_get(zkrc_session *s, const char *path,
                     const zkrc_counter_options *opts,
                     zkrc_counter_result *result, int timeout_ms);

/**
 * Add @p delta to the counter (Curator's add/subtract/increment/decrement,
 * kazoo's += and -=), creating it when missing, optimistic then promoted
 * (above).
 * @return ZKRC_OK (succeeded 1, pre and post values); ZKRC_EBADVERSION (not
 *         applied: every try met a concurrent change, or the promoted lock
 *         was not had within promoted_lock_timeout_ms); ZKRC_EOVERFLOW (the
 *         sum does not fit the format: nothing written); and the errors
 *         of zkrc_counter_get().
 * Threading: any thread but a session's callback thread.
 */
int zkrc_counter_add(zkrc_session *s, const char *path, int64_t delta,
                     const zkrc_counter_options *opts,
                     zkrc_counter_result *result, int timeout_ms);

/**
 * Set the counter to @p value (Curator's trySet): as zkrc_counter_add(),
 * the new value being @p value whatever the old one was, each write still
 * conditional on the version read.
 * @return as zkrc_counter_add().
 */
int zkrc_counter_try_set(zkrc_session *s, const char *path, int64_t value,
                         const zkrc_counter_options *opts,
                         zkrc_counter_result *result, int timeout_ms);

/**
 * Set the counter to @p value if it is now @p expected (Curator's
 * compareAndSet): one read, and one write at the version read.  No retry
 * and no lock.  A missing node is never equal (Curator's too).
 * @return ZKRC_OK (written); ZKRC_EBADVERSION (the value was not
 *         @p expected, the node is missing, or it changed between the read
 *         and the write: nothing written, pre_value what was read); and the
 *         errors of zkrc_counter_add().
 */
int zkrc_counter_compare_and_set(zkrc_session *s, const char *path,
                                 int64_t expected, int64_t value,
                                 const zkrc_counter_options *opts,
                                 zkrc_counter_result *result, int timeout_ms);

/**
 * Write @p value whatever the node holds (Curator's forceSet: no
 * atomicity), creating the node when missing.
 * @param opts  NULL for the defaults; only its format is used.
 * @return ZKRC_OK; ZKRC_EOVERFLOW (@p value does not fit the format);
 *         ZKRC_EINVAL; ZKRC_ETIMEDOUT; ZKRC_ECONNLOSS; ZKRC_ENOAUTH;
 *         ZKRC_ECLOSED.
 */
int zkrc_counter_force_set(zkrc_session *s, const char *path, int64_t value,
                           const zkrc_counter_options *opts, int timeout_ms);

/**
 * Create the counter with @p value if its node does not exist (Curator's
 * initialize).
 * @param created  if not NULL, receives 1 when this call created it, 0 when
 *                 it existed.
 * @return as zkrc_counter_force_set().
 */
int zkrc_counter_initialize(zkrc_session *s, const char *path, int64_t value,
                            const zkrc_counter_options *opts, int *created,
                            int timeout_ms);

/**
 * The value of @p len bytes of @p data in @p format (a value reported by a
 * shared watch, zkrecipes/shared.h): no I/O.  NULL @p data with @p len 0
 * is an empty node (0).
 * @return ZKRC_OK; ZKRC_EBADNODE; ZKRC_EOVERFLOW; ZKRC_EINVAL (NULL
 *         @p value, unknown format).
 */
int zkrc_counter_decode(zkrc_counter_format format, const void *data,
                        size_t len, int64_t *value);

#ifdef __cplusplus
}
#endif
#endif /* ZKRECIPES_COUNTER_H */
