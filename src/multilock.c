/*
 * Several locks at once, all or nothing, in the global order of their
 * paths (zkrecipes/multilock.h).  Built only on the public lock calls:
 * each lock keeps its own queue, events and lease.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "util.h"
#include "zkrecipes/error.h"
#include "zkrecipes/multilock.h"
#include "zkrecipes/session.h"

static int by_path(const void *a, const void *b) {
  zkrc_lock *const *x = a;
  zkrc_lock *const *y = b;
  return strcmp(zkrc_lock_path(*x), zkrc_lock_path(*y));
}

/* The locks in the order they are taken: sorted by path.  NULL (and
 * nothing allocated) when the set is not one a thread can take: a NULL
 * lock, an empty or oversized set, or one path twice. */
static zkrc_lock **canonical_order(zkrc_lock *const *locks, size_t count) {
  if (locks == NULL || count == 0 || count > ZKRC_MULTILOCK_MAX)
    return NULL;
  for (size_t i = 0; i < count; i++)
    if (locks[i] == NULL)
      return NULL;
  zkrc_lock **sorted = g_memdup2(locks, count * sizeof *locks);
  qsort(sorted, count, sizeof *sorted, by_path);
  for (size_t i = 1; i < count; i++)
    if (by_path(&sorted[i - 1], &sorted[i]) == 0) {
      g_free(sorted);
      return NULL;
    }
  return sorted;
}

/* Release, last first, the @p taken locks this call acquired; returns
 * @p err, the failure being reported, with its ZooKeeper code (which the
 * releases may have overwritten). */
static int give_back(zkrc_lock **sorted, size_t taken, int err) {
  int zk_rc = zkrc_last_zk_error();
  while (taken > 0)
    (void)zkrc_lock_release(sorted[--taken]);
  return zkrc__fail_zk(err, zk_rc);
}

/* The timeout left for the next lock: what remains of @p deadline_us (a
 * monotonic time), at least 1 ms while any remains; 0 when none does. */
static int remaining_ms(int64_t deadline_us) {
  int64_t left = deadline_us - g_get_monotonic_time();
  if (left <= 0)
    return 0;
  int64_t ms = (left + 999) / 1000;
  return ms > G_MAXINT ? G_MAXINT : (int)ms;
}

/* Acquire the sorted set; returns how many locks were taken through
 * @p taken, and the first failure. */
static int take_in_order(zkrc_lock **sorted, size_t count, int timeout_ms,
                         size_t *taken) {
  int64_t deadline =
      timeout_ms > 0 ? g_get_monotonic_time() + (int64_t)timeout_ms * 1000 : 0;
  for (*taken = 0; *taken < count; (*taken)++) {
    int wait = timeout_ms;
    if (timeout_ms > 0 && (wait = remaining_ms(deadline)) == 0)
      return zkrc__fail(ZKRC_ETIMEDOUT);
    int rc = zkrc_lock_acquire(sorted[*taken], wait);
    if (rc != ZKRC_OK)
      return rc;
  }
  /* Every lock answered; were the first ones kept while the last were
   * awaited? */
  for (size_t i = 0; i < count; i++)
    if (!zkrc_lock_is_held(sorted[i]))
      return zkrc__fail(ZKRC_ELOCKLOST);
  return ZKRC_OK;
}

int zkrc_lock_acquire_all(zkrc_lock *const *locks, size_t count,
                          int timeout_ms) {
  if (timeout_ms < 0 && timeout_ms != ZKRC_WAIT_FOREVER)
    return zkrc__fail(ZKRC_EINVAL);
  zkrc_lock **sorted = canonical_order(locks, count);
  if (sorted == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  size_t taken;
  int rc = take_in_order(sorted, count, timeout_ms, &taken);
  if (rc != ZKRC_OK)
    rc = give_back(sorted, taken, rc);
  g_free(sorted);
  return rc;
}

int zkrc_lock_release_all(zkrc_lock *const *locks, size_t count) {
  zkrc_lock **sorted = canonical_order(locks, count);
  if (sorted == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  int rc = ZKRC_OK;
  for (size_t i = 0; i < count && rc == ZKRC_OK; i++)
    if (zkrc_lock_depth(sorted[i]) == 0)
      rc = zkrc__fail(ZKRC_ENOTOWNER);
  for (size_t i = count; rc != ZKRC_ENOTOWNER && i > 0; i--) {
    int released = zkrc_lock_release(sorted[i - 1]);
    if (released != ZKRC_OK && rc == ZKRC_OK)
      rc = released;
  }
  g_free(sorted);
  return rc;
}
