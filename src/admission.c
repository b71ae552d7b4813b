/*
 * Admission (see admission.h): the policies and the whole decision.
 */
#include "config.h"

#include <string.h>

#include <glib.h>

#include "admission.h"
#include "names.h"

static zkrc__verdict verdict(zkrc__verdict_kind kind, const char *watch, int me,
                             int n) {
  zkrc__verdict v = {kind, watch, me, n};
  return v;
}

static zkrc__verdict admitted(int me, int n) {
  return verdict(ZKRC__ADMITTED, NULL, me, n);
}

static zkrc__verdict wait_for(const zkrc__rank *queue, int watch, int me,
                              int n) {
  return verdict(ZKRC__WAIT, queue[watch].name, me, n);
}

/* ------------------------------------------------------------ policies */

zkrc__verdict zkrc__policy_exclusive(const zkrc__rank *queue, int n, int me,
                                     const void *arg) {
  (void)arg;
  return me == 0 ? admitted(me, n) : wait_for(queue, me - 1, me, n);
}

zkrc__verdict zkrc__policy_readers_writers(const zkrc__rank *queue, int n,
                                           int me, const void *arg) {
  if (queue[me].claim == ZKRC__CLAIM_EXCLUSIVE)
    return zkrc__policy_exclusive(queue, n, me, arg);
  const char *excused = arg;
  for (int i = me - 1; i >= 0; i--)
    if (queue[i].claim == ZKRC__CLAIM_EXCLUSIVE &&
        g_strcmp0(queue[i].name, excused) != 0)
      return wait_for(queue, i, me, n);
  return admitted(me, n);
}

zkrc__verdict zkrc__policy_permits(const zkrc__rank *queue, int n, int me,
                                   const void *arg) {
  (void)queue;
  int permits = arg ? *(const int *)arg : 1;
  return me < permits ? admitted(me, n)
                      : verdict(ZKRC__WAIT_CHILDREN, NULL, me, n);
}

/* ------------------------------------------------------- the decision */

/* Queue order: by sequence; ties (which one directory cannot produce) by
 * name. */
static int compare_ranks(const void *a, const void *b) {
  const zkrc__rank *x = a, *y = b;
  if (x->seq != y->seq)
    return x->seq < y->seq ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* The contenders among @p names into @p queue (room for @p count), in
 * queue order, duplicates once, their names pointing into @p names (no
 * copies: a listing can hold thousands).  Returns how many. */
static int rank_listing(char *const *names, int count,
                        const zkrc__marker *markers, zkrc__rank *queue) {
  int n = 0;
  for (int i = 0; i < count; i++) {
    const zkrc__marker *m =
        zkrc__contender_marker(names[i], markers, &queue[n].seq);
    if (m == NULL)
      continue;
    queue[n].name = names[i];
    queue[n].claim = m->claim;
    n++;
  }
  if (n > 1)
    qsort(queue, (size_t)n, sizeof *queue, compare_ranks);
  int kept = 0;
  for (int i = 0; i < n; i++)
    if (kept == 0 || compare_ranks(&queue[kept - 1], &queue[i]) != 0)
      queue[kept++] = queue[i];
  return kept;
}

/* The index of the contender named @p me in @p queue, or -1. */
static int place_of(const zkrc__rank *queue, int n, const char *me) {
  for (int i = 0; me && i < n; i++)
    if (strcmp(queue[i].name, me) == 0)
      return i;
  return -1;
}

/* Would @p mine be admitted once the node @p v tells it to watch has
 * left @p queue?  (Removes that node from @p queue.) */
static gboolean admitted_once_watched_goes(zkrc__rank *queue, int n, int mine,
                                           zkrc__verdict v,
                                           zkrc__policy_fn policy,
                                           const void *policy_arg) {
  int gone = -1;
  for (int i = 0; v.watch && i < n; i++)
    if (queue[i].name == v.watch)
      gone = i;
  if (gone < 0)
    return FALSE;
  memmove(&queue[gone], &queue[gone + 1],
          (size_t)(n - gone - 1) * sizeof *queue);
  return policy(queue, n - 1, mine - (gone < mine), policy_arg).kind ==
         ZKRC__ADMITTED;
}

zkrc__verdict zkrc__admit_and_next(char *const *names, int count,
                                   const zkrc__marker *markers, const char *me,
                                   zkrc__policy_fn policy,
                                   const void *policy_arg,
                                   int *admitted_when_watched_goes) {
  zkrc__rank *queue = g_new(zkrc__rank, count + 1);
  int n = rank_listing(names, count, markers, queue);
  int mine = place_of(queue, n, me);
  zkrc__verdict v = mine < 0 ? verdict(ZKRC__ABSENT, NULL, -1, n)
                             : policy(queue, n, mine, policy_arg);
  if (admitted_when_watched_goes)
    *admitted_when_watched_goes =
        v.kind == ZKRC__WAIT &&
        admitted_once_watched_goes(queue, n, mine, v, policy, policy_arg);
  g_free(queue);
  return v;
}

zkrc__verdict zkrc__admit(char *const *names, int count,
                          const zkrc__marker *markers, const char *me,
                          zkrc__policy_fn policy, const void *policy_arg) {
  return zkrc__admit_and_next(names, count, markers, me, policy, policy_arg,
                              NULL);
}

int zkrc__admitted_without(char *const *names, int count,
                           const zkrc__marker *markers, const char *me,
                           zkrc__policy_fn policy, const void *policy_arg,
                           const char *gone) {
  char **rest = g_new(char *, count + 1);
  int n = 0;
  for (int i = 0; i < count; i++)
    if (gone == NULL || strcmp(names[i], gone) != 0)
      rest[n++] = names[i];
  zkrc__verdict v = zkrc__admit(rest, n, markers, me, policy, policy_arg);
  g_free(rest);
  return v.kind == ZKRC__ADMITTED;
}
