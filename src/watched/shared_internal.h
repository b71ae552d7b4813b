/*
 * What shared.c lends the other files of this folder and the layers
 * above (the single barrier, barrier.c).
 */
#ifndef ZKRC_SHARED_INTERNAL_H
#define ZKRC_SHARED_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "zkrecipes/session.h"

/* Create @p path with the @p len bytes of @p seed (NULL: no data) and its
 * missing parents as containers, each create waited for until @p deadline
 * (call.h): ZooKeeper's code of the node's create (ZOK also when it
 * existed) or of the first parent's that failed, or ZKRC__CALL_TIMED_OUT.
 * The caller checked the size rule.  Blocks; not on a session's thread. */
int zkrc__create_with_parents(zkrc_session *s, const char *path,
                              const void *seed, size_t len, int64_t deadline);

#endif /* ZKRC_SHARED_INTERNAL_H */
