/*
 * zkrecipes/shared.h - shared values and counters on one node, with
 * compare-and-set on the node's version.
 *
 * Wire format: Curator's SharedValue (the node's data, any bytes) and
 * SharedCount (a 4-byte big-endian signed integer), which kazoo's
 * Counter(support_curator=True) also reads and writes.  A value is read
 * with its version; a compare-and-set writes only if the node is still at
 * that version, so two editors that read the same version cannot both
 * write: one gets ZKRC_EBADVERSION, reads again and decides again.
 *
 * Version wrap-around (Curator's CURATOR-688): a node's data version is a
 * signed 32-bit number that goes on past 2^31 - 1 to -2^31 and up, and
 * ZooKeeper reads version -1 in a conditional write as "any version".  A
 * compare-and-set at version -1 is therefore sent as one multi: the write,
 * then a check that the node is now at version 0 (what -1 becomes), so
 * that it, too, fails when the node changed in between.
 *
 * Every get and set blocks the calling thread at most @p timeout_ms
 * (ZKRC_WAIT_FOREVER, or a positive number of ms); not from a session's
 * callback thread.  A change listener (zkrc_shared_value_watch()) is a node
 * cache (zkrecipes/cache.h) that reports the value.
 */
#ifndef ZKRECIPES_SHARED_H
#define ZKRECIPES_SHARED_H

#include <stddef.h>
#include <stdint.h>

#include <zkrecipes/session.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A node's value as read, with its version. */
typedef struct zkrc_versioned_value {
  char *data;      /**< malloc'ed (free with zkrc_versioned_value_clear());
                        NULL for a node without data */
  size_t len;      /**< bytes of data */
  int32_t version; /**< the node's data version */
} zkrc_versioned_value;

/** Free what @p v holds and zero it (NULL is ignored). */
void zkrc_versioned_value_clear(zkrc_versioned_value *v);

/**
 * Read the value at @p path.  When the node does not exist and @p seed is
 * not NULL, create it (and its missing parents, as containers, as Curator
 * does) with the @p seed_len bytes of @p seed, and read that.
 * @return ZKRC_OK (*@p out filled); ZKRC_ENONODE (missing and no seed);
 *         ZKRC_EINVAL (NULL, invalid path, bad timeout: nothing sent);
 *         ZKRC_ETOOBIG (the create of @p path with the seed would not
 *         pass ZooKeeper's size limit: path and data with their envelope
 *         over 1 MiB less one byte, or over 1,048,487 bytes of data, the
 *         most a getData reply carries back to a Java client; README,
 *         "Sizes": nothing sent, whether the node exists or not);
 *         ZKRC_ETIMEDOUT; ZKRC_ECONNLOSS; ZKRC_ENOAUTH; ZKRC_ECLOSED.
 */
int zkrc_shared_value_get(zkrc_session *s, const char *path, const void *seed,
                          size_t seed_len, zkrc_versioned_value *out,
                          int timeout_ms);

/**
 * Write @p len bytes of @p data at @p path if the node is still at
 * @p expected_version (from zkrc_shared_value_get()).
 * @param new_version  if not NULL, receives the node's version after the
 *                     write.
 * @return ZKRC_OK; ZKRC_EBADVERSION (the node changed since: nothing
 *         written); ZKRC_ENONODE; ZKRC_ETOOBIG (the setData, or at
 *         @p expected_version -1 the multi of the setData and its check,
 *         would not pass the size limit: nothing sent); and the errors of
 *         zkrc_shared_value_get().  When the call times out or the
 *         connection is lost, the write may or may not have happened: read
 *         again.
 */
int zkrc_shared_value_try_set(zkrc_session *s, const char *path,
                              int32_t expected_version, const void *data,
                              size_t len, int32_t *new_version, int timeout_ms);

/**
 * Write @p data at @p path whatever its version (last writer wins).
 * @return as zkrc_shared_value_try_set(), without ZKRC_EBADVERSION.
 */
int zkrc_shared_value_set(zkrc_session *s, const char *path, const void *data,
                          size_t len, int timeout_ms);

/**
 * Read the counter at @p path (Curator's SharedCount format), creating it
 * with @p seed when it does not exist.
 * @param version  if not NULL, receives the node's version (for
 *                 zkrc_shared_count_try_set()).
 * @return as zkrc_shared_value_get(); ZKRC_EBADNODE when the node's data is
 *         not 4 bytes.
 */
int zkrc_shared_count_get(zkrc_session *s, const char *path, int32_t seed,
                          int32_t *value, int32_t *version, int timeout_ms);

/**
 * Set the counter to @p value if it is still at @p expected_version.
 * @return as zkrc_shared_value_try_set().
 */
int zkrc_shared_count_try_set(zkrc_session *s, const char *path,
                              int32_t expected_version, int32_t value,
                              int timeout_ms);

/**
 * Add @p delta to the counter (created at 0 when missing) by
 * compare-and-set, retrying after a conflict with a growing backoff (1 ms
 * doubling to 64 ms, with jitter), at most @p max_attempts times and
 * within @p timeout_ms.
 * @param result  if not NULL, receives the value written.
 * @return ZKRC_OK; ZKRC_EBADVERSION (still conflicting after
 *         @p max_attempts); ZKRC_EOVERFLOW (the sum does not fit in 32
 *         bits: nothing written); ZKRC_EINVAL (max_attempts < 1, ...); and
 *         the errors of zkrc_shared_count_get().
 */
int zkrc_shared_count_add(zkrc_session *s, const char *path, int32_t delta,
                          int max_attempts, int32_t *result, int timeout_ms);

/* ------------------------------------------------------ change listener */

typedef struct zkrc_shared_watch zkrc_shared_watch;

/**
 * Told the value at a shared value's node, on the session's executor: once
 * with the value found first, then after each change (Curator's
 * SharedValueListener.valueHasChanged).  @p value is NULL while the node
 * does not exist.  Owned by the library during the call (copy what you
 * keep).  Values changed twice between two reads are reported once, with
 * the latest (as every ZooKeeper watch).
 */
typedef void (*zkrc_shared_value_fn)(const zkrc_versioned_value *value,
                                     void *arg);

/**
 * Follow the value at @p path: @p fn(value, @p arg) is called as above
 * until zkrc_shared_watch_free().  Returns at once.
 * @return ZKRC_OK (*@p out is yours); ZKRC_EINVAL (NULL @p out, @p s or
 *         @p fn, invalid path); ZKRC_ECLOSED.
 */
int zkrc_shared_value_watch(zkrc_shared_watch **out, zkrc_session *s,
                            const char *path, zkrc_shared_value_fn fn,
                            void *arg);

/**
 * Stop following.  After it returns the function is not running and will
 * not be called again (unless it is the caller).  NULL is ignored.
 */
void zkrc_shared_watch_free(zkrc_shared_watch *w);

/**
 * The counter in a value reported to a zkrc_shared_value_fn.
 * @return ZKRC_OK; ZKRC_EBADNODE (not 4 bytes); ZKRC_EINVAL (NULL).
 */
int zkrc_shared_count_decode(const zkrc_versioned_value *value, int32_t *count);

#ifdef __cplusplus
}
#endif
#endif /* ZKRECIPES_SHARED_H */
