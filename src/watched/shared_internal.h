/*
 * What the counters (counter.c) and the single barrier (barrier.c) use of
 * shared.c: one read, one create with its parents, each bounded by a
 * deadline, and their codes as errors; and what shared.c uses of
 * counter.c: its engine, for zkrc_shared_count_add().
 */
#ifndef ZKRC_SHARED_INTERNAL_H
#define ZKRC_SHARED_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "zkrecipes/session.h"
#include "zkrecipes/shared.h"

/* One getData of @p path before @p deadline: ZooKeeper's code (or
 * ZKRC__CALL_TIMED_OUT); *@p out filled on ZOK (data NUL-terminated). */
int zkrc__shared_read(zkrc_session *s, const char *path, int64_t deadline,
                      zkrc_versioned_value *out);
/* Create @p path with @p len bytes of @p data (NULL: no data), its missing
 * parents as containers: ZooKeeper's code, ZNODEEXISTS when @p path existed
 * (nothing written). */
int zkrc__shared_create(zkrc_session *s, const char *path, const void *data,
                        size_t len, int64_t deadline);
/* A ZooKeeper code (or ZKRC__CALL_TIMED_OUT) as the caller's error,
 * remembered (zkrc_last_zk_error). */
int zkrc__shared_failure(int rc);

/* zkrc_shared_count_add() (zkrecipes/shared.h), on the counters' engine
 * (counter.c): zkrc_counter_add() in ZKRC_COUNTER_SHARED_COUNT with its
 * default backoff and @p max_attempts tries, no promotion, except that an
 * empty node is ZKRC_EBADNODE (SharedCount's 4 bytes or nothing, as
 * zkrc_shared_count_get() reads it); a missing node counts as 0, created
 * holding @p delta.  *@p result (if not NULL): the value written. */
int zkrc__counter_shared_count_add(zkrc_session *s, const char *path,
                                   int32_t delta, int max_attempts,
                                   int32_t *result, int timeout_ms);

#endif /* ZKRC_SHARED_INTERNAL_H */
