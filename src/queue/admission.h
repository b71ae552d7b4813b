/*
 * Admission: who holds, and whom each waiter watches - the decision behind
 * every recipe, as pure functions of a directory listing (no I/O, no
 * state), tested on in-memory listings (tests/test_admission.c).
 *
 * A recipe's directory holds contender nodes of several dialects (ours,
 * Apache Curator's, kazoo's) and anything else.  A recipe's markers say
 * which names are contenders and what each one claims: exclusive access (a
 * mutex holder, a writer, a leader) or shared access (a reader).
 * Contenders are ordered by their sequence number read as a signed 32-bit
 * number (names.h); a policy then decides, from that order and our place
 * in it, whether we are admitted or which one node we wait for.
 *
 * A waiter watches exactly one node, and looks again (lists the directory)
 * when it goes: one release wakes the waiters it admits and no others.
 * The policy must pick the node whose departure can change its verdict
 * first; every node that could admit it must be watched by it or lead to
 * a node that is (the predecessor chain of a queue).
 */
#ifndef ZKRC_ADMISSION_H
#define ZKRC_ADMISSION_H

#include <stdint.h>

#include "core/names.h"

/* One contender, in queue order. */
typedef struct zkrc__rank {
  const char *name;
  int32_t seq;
  zkrc__claim claim;
} zkrc__rank;

typedef enum zkrc__verdict_kind {
  ZKRC__ABSENT = 0, /* our node is not in the listing (deleted by someone) */
  ZKRC__ADMITTED,   /* we hold the lock, lead, or hold the permit */
  ZKRC__WAIT,       /* not yet: watch the node named in `watch` */
  /* Not yet, and no single node's departure decides it: any change among
   * the children may admit us, so list and watch the directory.  Only for
   * a policy whose waiters take turns at watching (a semaphore's lease
   * directory, watched by the holder of its internal mutex alone), or it
   * is a herd. */
  ZKRC__WAIT_CHILDREN
} zkrc__verdict_kind;

typedef struct zkrc__verdict {
  zkrc__verdict_kind kind;
  const char *watch; /* WAIT: the node to watch (points into the listing);
                        NULL otherwise */
  int position;      /* our index in the queue (-1 when ABSENT) */
  int contenders;    /* how many contenders the listing holds */
} zkrc__verdict;

/* A policy: from the queue (@p n contenders in order) and our index
 * @p me in it, admitted or the index of the node to watch. */
typedef zkrc__verdict (*zkrc__policy_fn)(const zkrc__rank *queue, int n, int me,
                                         const void *arg);

/* First in line holds; everyone else watches the contender just before
 * it (a mutex, an election). */
zkrc__verdict zkrc__policy_exclusive(const zkrc__rank *queue, int n, int me,
                                     const void *arg);

/* Readers and writers: a shared claim is admitted when no exclusive claim
 * is ahead of it, and watches the nearest exclusive claim ahead otherwise;
 * an exclusive claim is admitted first in line and watches the contender
 * just before it.  (Readers behind a released writer are all admitted:
 * each of them watched it.)  @p arg: NULL, or the name (a const char *) of
 * one exclusive claim that does not stop a shared claim: the writer node a
 * downgrading thread holds itself. */
zkrc__verdict zkrc__policy_readers_writers(const zkrc__rank *queue, int n,
                                           int me, const void *arg);

/* N permits (@p arg points to N, an int >= 1): the first N in line are
 * admitted; anyone behind them waits for any of the N to leave, which no
 * single watch can tell (ZKRC__WAIT_CHILDREN).  A semaphore's leases. */
zkrc__verdict zkrc__policy_permits(const zkrc__rank *queue, int n, int me,
                                   const void *arg);

/* The whole decision for the node named @p me among the @p count names of
 * a listing, under @p policy.  Names that carry no marker of @p markers, or
 * whose sequence is malformed, are not contenders.  Duplicate names (which
 * one directory cannot hold) count once.  The verdict's names point into
 * @p names.  Pure: the same input gives the same verdict. */
zkrc__verdict zkrc__admit(char *const *names, int count,
                          const zkrc__marker *markers, const char *me,
                          zkrc__policy_fn policy, const void *policy_arg);

/* zkrc__admit(), and in *@p admitted_when_watched_goes (unless NULL)
 * what zkrc__admitted_without() would say of the node the verdict watches
 * (0 when it watches none): from one ordering of the listing, which with
 * thousands of names is most of the cost. */
zkrc__verdict zkrc__admit_and_next(char *const *names, int count,
                                   const zkrc__marker *markers, const char *me,
                                   zkrc__policy_fn policy,
                                   const void *policy_arg,
                                   int *admitted_when_watched_goes);

/* Would the node named @p me be admitted once the node named @p gone has
 * left the listing, and nothing else changed?  A waiter whose watched node
 * goes may then take the front without listing again: a node created
 * later gets a larger sequence number, so none can appear ahead of ours
 * (within one wrap of the servers' 32-bit counter, the same limit the
 * order itself has).  Pure, as zkrc__admit(). */
int zkrc__admitted_without(char *const *names, int count,
                           const zkrc__marker *markers, const char *me,
                           zkrc__policy_fn policy, const void *policy_arg,
                           const char *gone);

#endif /* ZKRC_ADMISSION_H */
