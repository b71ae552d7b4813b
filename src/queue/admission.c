/*
 * Admission (see admission.h): the policies and the whole decision.
 */
#include "config.h"

#include <string.h>

#include <glib.h>

#include "queue/admission.h"
#include "core/names.h"

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

/* Queue order (zkrc__queue_order), for qsort. */
static int compare_ranks(const void *a, const void *b) {
  const zkrc__rank *x = a, *y = b;
  return zkrc__queue_order(x->seq, x->name, y->seq, y->name);
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

/* Has @p seq been seen?  Notes it in @p seen, an open-addressing set of
 * @p mask + 1 slots (a power of two), 0 for empty. */
static gboolean seen_before(uint64_t *seen, uint32_t mask, int32_t seq) {
  uint64_t key = (uint64_t)(uint32_t)seq | (UINT64_C(1) << 32);
  for (uint32_t i = ((uint32_t)seq * 2654435761u) & mask;; i = (i + 1) & mask) {
    if (seen[i] == key)
      return TRUE;
    if (seen[i] == 0) {
      seen[i] = key;
      return FALSE;
    }
  }
}

/* The exclusive policy asks only for our place and the contender just
 * before us: one pass over the listing, no ordering (threads queued on
 * one lock object read a listing of thousands of names at every hand-over,
 * on the ZooKeeper completion thread, ahead of the next hand-over's
 * event).  The same verdict as the ordered path, which it leaves to
 * decide (returns FALSE) when two contenders share a sequence (which one
 * directory cannot produce, but a listing handed to us could). */
static gboolean admit_exclusive(char *const *names, int count,
                                const zkrc__marker *markers, const char *me,
                                zkrc__verdict *out, int *next) {
  int32_t my_seq = 0;
  gboolean present = FALSE;
  for (int i = 0; me && !present && i < count; i++)
    present = names[i] && strcmp(names[i], me) == 0 &&
              zkrc__contender_marker(me, markers, &my_seq) != NULL;
  uint32_t slots = 16;
  while (slots < 2u * (uint32_t)count)
    slots *= 2;
  uint64_t *seen = g_new0(uint64_t, slots);
  int contenders = 0, ahead = 0;
  const char *just_before = NULL;
  int32_t before_seq = 0;
  gboolean shared_sequence = FALSE;
  for (int i = 0; i < count && !shared_sequence; i++) {
    int32_t seq;
    if (zkrc__contender_marker(names[i], markers, &seq) == NULL)
      continue;
    shared_sequence = seen_before(seen, slots - 1, seq);
    contenders++;
    if (present && seq < my_seq) {
      ahead++;
      if (just_before == NULL || seq > before_seq) {
        just_before = names[i];
        before_seq = seq;
      }
    }
  }
  g_free(seen);
  if (shared_sequence)
    return FALSE;
  if (!present)
    *out = verdict(ZKRC__ABSENT, NULL, -1, contenders);
  else if (ahead == 0)
    *out = admitted(0, contenders);
  else
    *out = verdict(ZKRC__WAIT, just_before, ahead, contenders);
  if (next)
    *next = ahead == 1;
  return TRUE;
}

zkrc__verdict zkrc__admit_and_next(char *const *names, int count,
                                   const zkrc__marker *markers, const char *me,
                                   zkrc__policy_fn policy,
                                   const void *policy_arg,
                                   int *admitted_when_watched_goes) {
  zkrc__verdict v;
  if (policy == zkrc__policy_exclusive &&
      admit_exclusive(names, count, markers, me, &v,
                      admitted_when_watched_goes))
    return v;
  zkrc__rank *queue = g_new(zkrc__rank, count + 1);
  int n = rank_listing(names, count, markers, queue);
  int mine = place_of(queue, n, me);
  v = mine < 0 ? verdict(ZKRC__ABSENT, NULL, -1, n)
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
