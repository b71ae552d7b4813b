/*
 * A lock object of another name and policy, for recipes that take
 * ZooKeeper locks of a foreign format: the sides of a read-write lock
 * (rwlock.c), a semaphore's internal mutex (semaphore.c) and the set
 * partitioner's kazoo locks (src/membership/partitioner_alloc.c).  The
 * object is a zkrc_lock in every other way: the public lock calls work on
 * it.  The rest of the lock family is lock_private.h, for src/recipes/
 * only.
 */
#ifndef ZKRC_LOCK_MEMBER_H
#define ZKRC_LOCK_MEMBER_H

#include "queue/admission.h"
#include "zkrecipes/lock.h"

/* A lock object whose contender nodes carry @p marker (not copied: a
 * string literal; as names.h reads it) and are admitted by @p policy
 * (admission.h); arguments, errors and ownership as zkrc_lock_new(). */
int zkrc__lock_new_member(zkrc_lock **out, zkrc_session *s, const char *path,
                          const zkrc_lock_options *opts, const char *marker,
                          zkrc__policy_fn policy);

#endif /* ZKRC_LOCK_MEMBER_H */
