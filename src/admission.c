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

/* The name in @p names equal to @p name (so that a verdict points into the
 * caller's listing, not into our scratch copy). */
static const char *in_listing(char *const *names, int count, const char *name) {
  for (int i = 0; name && i < count; i++)
    if (names[i] && strcmp(names[i], name) == 0)
      return names[i];
  return NULL;
}

zkrc__verdict zkrc__admit(char *const *names, int count,
                          const zkrc__marker *markers, const char *me,
                          zkrc__policy_fn policy, const void *policy_arg) {
  GArray *sorted = zkrc__contenders_sorted(names, count, markers);
  zkrc__rank *queue = g_new(zkrc__rank, sorted->len + 1);
  int n = 0, mine = -1;
  for (guint i = 0; i < sorted->len; i++) {
    const zkrc__contender_entry *e =
        &g_array_index(sorted, zkrc__contender_entry, i);
    if (n > 0 && strcmp(queue[n - 1].name, e->name) == 0)
      continue; /* a duplicate: one directory cannot hold two */
    if (mine < 0 && me && strcmp(e->name, me) == 0)
      mine = n;
    queue[n].name = e->name;
    queue[n].seq = e->seq;
    queue[n].claim = e->claim;
    n++;
  }
  zkrc__verdict v = mine < 0 ? verdict(ZKRC__ABSENT, NULL, -1, n)
                             : policy(queue, n, mine, policy_arg);
  v.watch = in_listing(names, count, v.watch);
  g_free(queue);
  zkrc__contenders_free(sorted);
  return v;
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
