/*
 * What the multi-lock's two files share (multilock.c: the zkrc_multilock
 * object and its blocking acquisition; multilock_async.c: multilock holds).
 */
#ifndef ZKRC_MULTILOCK_INTERNAL_H
#define ZKRC_MULTILOCK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "zkrecipes/multilock.h"

/* A member of a set: a lock, or one lease of a semaphore. */
typedef struct zkrc__member {
  zkrc_lock *lock;
  zkrc_semaphore *sem;
  zkrc_semaphore_lease *lease; /* a blocking set's, while held */
} zkrc__member;

/* Its path: the lock's, or the semaphore's directory. */
const char *zkrc__member_path(const zkrc__member *m);

/* The members of @p ml, in path order, and how many (owned by @p ml). */
const zkrc__member *zkrc__multilock_members(zkrc_multilock *ml, size_t *count);

#endif /* ZKRC_MULTILOCK_INTERNAL_H */
