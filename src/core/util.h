/*
 * Small internal helpers shared by every module: deadlines, timeout checks,
 * error reporting to the calling thread.  Internal symbols are zkrc__*.
 */
#ifndef ZKRC_UTIL_H
#define ZKRC_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include <glib.h>

/* Deadlines are absolute g_get_monotonic_time() values in microseconds;
 * ZKRC__NEVER means "no deadline". */
#define ZKRC__NEVER INT64_MAX

/* Return @p err after clearing the thread's last ZooKeeper code. */
int zkrc__fail(int err);
/* Return @p err and remember @p zk_rc as the thread's last ZooKeeper code. */
int zkrc__fail_zk(int err, int zk_rc);
/* Map @p zk_rc to a zkrecipes code, remember it, and return the code. */
int zkrc__fail_from_zk(int zk_rc);

/* Non-zero when @p timeout_ms is a valid timeout argument:
 * ZKRC_WAIT_FOREVER, ZKRC_NO_WAIT or positive. */
int zkrc__timeout_valid(int timeout_ms);

/* The deadline @p timeout_ms from now (ZKRC__NEVER for WAIT_FOREVER). */
int64_t zkrc__deadline_after(int timeout_ms);

/* Milliseconds left until @p deadline, at least 0; INT32_MAX-ish when
 * there is no deadline. */
int zkrc__ms_left(int64_t deadline);

/* Wait on @p cond (with @p mutex held) until signalled or @p deadline.
 * Returns FALSE when the deadline passed. */
gboolean zkrc__cond_wait_until(GCond *cond, GMutex *mutex, int64_t deadline);

/* Options as the caller knows them: @p defaults (initialized, @p full
 * bytes, a size_t size first) overwritten by the first opts->size bytes of
 * @p opts (NULL: the defaults).  FALSE for options whose size says they
 * were not initialized. */
gboolean zkrc__options_take(void *defaults, size_t full, const void *opts);
/* A public *_options_init_sized(): the caller's struct @p opts of @p size
 * bytes (its sizeof as the caller was compiled) gets the first bytes of
 * @p full (the defaults, @p full_size bytes: the library's sizeof), zeros
 * past them, and @p size in its first field.  Never writes past @p size;
 * NULL and sizes too small to hold the size field and one more are
 * ignored. */
void zkrc__options_give(void *opts, size_t size, const void *full,
                        size_t full_size);

/* Give a statistics struct to the caller (zkrc_X_get_stats): copy the
 * first @p size bytes of @p full (of @p full_size) to @p out.  ZKRC_EINVAL
 * (nothing written) when @p out is NULL or @p size is below @p min_size. */
int zkrc__struct_give(void *out, const void *full, size_t full_size,
                      size_t size, size_t min_size);

/* "hostname:pid", malloc'ed with g_malloc; the default participant id. */
char *zkrc__default_participant_id(void);

/* A fresh random UUID in the 36-character dashed form (g_free it). */
char *zkrc__uuid(void);

/* A malloc'ed copy (for the caller to free with zkrc_strv_free) of a
 * g_malloc'ed string vector; NULL when out of memory.  *count gets its
 * length. */
char **zkrc__strv_to_malloc(char **gv, size_t *count);

#endif /* ZKRC_UTIL_H */
