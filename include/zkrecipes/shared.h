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
 * (ZKRC_WAIT_FOREVER, a positive number of ms, or ZKRC_NO_WAIT: look once,
 * do not wait: ZKRC_ECONNLOSS at once when the session is not connected
 * now, else one try, its round trips bounded by the session timeout); not
 * from a session's callback thread.  A shared watch (zkrc_shared_watch_new())
 * is a node cache (zkrecipes/cache.h) that reports the value.
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
 *         connection is lost (ZKRC_ETIMEDOUT, ZKRC_ECONNLOSS, also while
 *         the session is reopening), the write may or may not have
 *         happened: read again.  ZKRC_ECLOSED only for a closed session.
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
 * Add @p delta to the counter by compare-and-set, retrying after a
 * conflict with a growing backoff (1 ms doubling to 64 ms, with jitter), at
 * most @p max_attempts times and within @p timeout_ms: zkrc_counter_add()
 * in ZKRC_COUNTER_SHARED_COUNT (zkrecipes/counter.h), the one engine,
 * except that an empty node is ZKRC_EBADNODE here.  A missing node counts
 * as 0: it is created holding @p delta.
 * @param result  if not NULL, receives the value written.
 * @return ZKRC_OK; ZKRC_EBADVERSION (still conflicting after
 *         @p max_attempts); ZKRC_EOVERFLOW (the sum does not fit in 32
 *         bits: nothing written); ZKRC_EINVAL (max_attempts < 1, ...); and
 *         the errors of zkrc_shared_count_get().  After ZKRC_ETIMEDOUT
 *         or ZKRC_ECONNLOSS the last attempt may or may not have been
 *         applied: read the count again before adding again.
 */
int zkrc_shared_count_add(zkrc_session *s, const char *path, int32_t delta,
                          int max_attempts, int32_t *result, int timeout_ms);

/* ------------------------------------------------------ change listener */

typedef struct zkrc_shared_watch zkrc_shared_watch;

/** What a shared watch reports. */
typedef enum zkrc_shared_watch_event_type {
  /** The value at the node: once with the value found first, then after
   *  each change (Curator's SharedValueListener.valueHasChanged). */
  ZKRC_SHARED_WATCH_VALUE = 1,
  /** The connection is down (reason ZKRC_ECONNLOSS): the value told last
   *  may be stale. */
  ZKRC_SHARED_WATCH_SUSPENDED,
  /** Connected again; the node is read again (a change is told as VALUE). */
  ZKRC_SHARED_WATCH_RECONNECTED,
  /** The session expired (ZKRC_ESESSIONEXPIRED), its lease ran out
   *  (ZKRC_ESESSIONLOST) or it was closed (ZKRC_ECLOSED; nothing follows);
   *  a new session reads the node again. */
  ZKRC_SHARED_WATCH_LOST
} zkrc_shared_watch_event_type;

/** "value", "suspended", "reconnected", "lost" ("unknown" for another
 *  value).  Static string; any thread. */
const char *zkrc_shared_watch_event_name(zkrc_shared_watch_event_type type);

/** A shared watch's event, valid during the call. */
typedef struct zkrc_shared_watch_event {
  /** What happened. */
  zkrc_shared_watch_event_type type;
  /** SUSPENDED and LOST: why, as a zkrc error (above); ZKRC_OK otherwise. */
  int reason;
  /** ZooKeeper's code behind @c reason; ZOK when there is none. */
  int zk_error;
  /** VALUE: the value, NULL while the node does not exist; NULL for the
   *  other events.  Owned by the library during the call (copy what you
   *  keep).  Values changed twice between two reads are reported once,
   *  with the latest (as every ZooKeeper watch). */
  const zkrc_versioned_value *value;
} zkrc_shared_watch_event;

/** Told each event, on the session's executor, one at a time, in order,
 *  never with a zkrecipes mutex held; it may call zkrc_shared_watch_free()
 *  or zkrc_shared_watch_free_async() of @p w. */
typedef void (*zkrc_shared_watch_event_fn)(zkrc_shared_watch *w,
                                           const zkrc_shared_watch_event *ev,
                                           void *arg);

/** A shared watch's options; initialize with
 *  zkrc_shared_watch_options_init(). */
typedef struct zkrc_shared_watch_options {
  /** Set by zkrc_shared_watch_options_init() (see zkrc_lock_options.size). */
  size_t size;
  /** Told each event (above), with @c event_arg.  Required. */
  zkrc_shared_watch_event_fn on_event;
  void *event_arg;
} zkrc_shared_watch_options;

/** Zero @p opts and set its size (NULL is ignored).  Fills the first @p
 *  size bytes of @p opts, the size of the struct as your program was
 *  compiled with it, and sets its size field to it: the fields a program
 *  built against an older, shorter zkrc_shared_watch_options lacks are
 *  never written.  Call zkrc_shared_watch_options_init(), which passes
 *  it. */
void zkrc_shared_watch_options_init_sized(zkrc_shared_watch_options *opts,
                                          size_t size);

/** Zero @p opts and set its size (NULL is ignored).  Inline: it passes
 *  sizeof *@p opts as this header defines it to
 *  zkrc_shared_watch_options_init_sized(), so a program keeps working with
 *  a later library whose struct has grown (and a later program, whose
 *  struct is longer, with this library: the fields it does not know are
 *  ignored). */
static inline void
zkrc_shared_watch_options_init(zkrc_shared_watch_options *opts) {
  zkrc_shared_watch_options_init_sized(opts, sizeof *opts);
}

/**
 * Follow the value at @p path: opts->on_event is told as above until
 * zkrc_shared_watch_free().  Returns at once; never waits for the network.
 * @return ZKRC_OK (*@p out is yours: zkrc_shared_watch_free());
 *         ZKRC_EINVAL (NULL @p out, @p s or @p opts, no on_event, options
 *         not initialized, invalid path); ZKRC_ECLOSED.
 * Threading: any thread.
 */
int zkrc_shared_watch_new(zkrc_shared_watch **out, zkrc_session *s,
                          const char *path,
                          const zkrc_shared_watch_options *opts);

/**
 * Stop following.  After it returns the callback is not running and will
 * not be called again: it waits only for a call of the callback running
 * on another thread (from the watch's own callback it does not wait).
 * Events still queued are dropped (zkrc_shared_watch_free_async()
 * delivers them).  Never waits for the network; works whatever the
 * session's state (open, suspended, closed, before or after
 * zkrc_session_close()).  NULL is ignored.  Do not use @p w afterwards.
 * Threading: any thread, including the watch's own callback.
 */
void zkrc_shared_watch_free(zkrc_shared_watch *w);

/**
 * Stop following without blocking: as zkrc_shared_watch_free() (nothing
 * is read or decided after this call), but the events queued before this
 * call are still delivered, in order, and then @p done runs with @p arg
 * on the session's executor, after the last of them; none comes after
 * @p done.  It waits for nothing of the network (its node cache is freed
 * with zkrc_cache_free_async()), whatever the state of the connection or
 * the session (open, suspended, closed, before or after
 * zkrc_session_close()).  From this call on, use @p w only in the
 * callbacks still to come; after @p done returns it is gone.
 *
 * @return ZKRC_OK (@p done will run); ZKRC_EINVAL (NULL @p w or @p done;
 *         nothing changes).
 * Threading: any thread, including the executor's and this watch's own
 * callback, while the session's executor is alive.  Call it once,
 * instead of zkrc_shared_watch_free().
 */
int zkrc_shared_watch_free_async(zkrc_shared_watch *w, zkrc_callback_fn done,
                                 void *arg);

/**
 * The counter in a value reported by a shared watch (its VALUE events).
 * @return ZKRC_OK; ZKRC_EBADNODE (not 4 bytes); ZKRC_EINVAL (NULL).
 */
int zkrc_shared_count_decode(const zkrc_versioned_value *value, int32_t *count);

#ifdef __cplusplus
}
#endif
#endif /* ZKRECIPES_SHARED_H */
