/*
 * Several locks (and semaphore leases) at once, all or nothing, in the
 * global order of their paths (zkrecipes/multilock.h): the zkrc_multilock
 * object and its blocking acquisition for a thread.  Built on the
 * public lock and semaphore calls (each member keeps its own queue, events
 * and lease), and on one internal pair (lock_private.h): a thread waiting
 * for a lock of its set is woken when a lock of the set it holds already
 * is lost, so the set fails at once rather than when the awaited lock
 * comes.
 */
#include "config.h"

#include <string.h>

#include <glib.h>

#include "recipes/lock_private.h"
#include "recipes/multilock_internal.h"
#include "core/util.h"
#include "zkrecipes/error.h"
#include "zkrecipes/multilock.h"
#include "zkrecipes/session.h"

/* ------------------------------------------------------------ blocking */

typedef zkrc__member member;

const char *zkrc__member_path(const member *m) {
  return m->lock ? zkrc_lock_path(m->lock) : zkrc_semaphore_path(m->sem);
}

static int member_by_path(const void *a, const void *b) {
  return strcmp(zkrc__member_path(a), zkrc__member_path(b));
}

/* Acquire @p m, giving up as soon as @p alarm sounds (a lock the thread
 * watches with it was lost); a semaphore's lease is awaited to the end. */
static int member_take(member *m, int timeout_ms, zkrc__waker *alarm) {
  if (m->lock)
    return zkrc__lock_acquire_watched(m->lock, timeout_ms, alarm);
  return zkrc_semaphore_acquire(m->sem, timeout_ms, &m->lease);
}

/* Have @p alarm sound when @p m, just taken, is lost (NULL: no longer);
 * FALSE when it is not held (any more).  A lease is only looked at. */
static gboolean member_watch(member *m, zkrc__waker *alarm) {
  if (m->lock)
    return zkrc__lock_watch_hold(m->lock, alarm);
  return zkrc_semaphore_lease_is_held(m->lease);
}

static int member_give(member *m) {
  if (m->lock)
    return zkrc_lock_release(m->lock);
  int rc = zkrc_semaphore_lease_release(m->lease);
  m->lease = NULL;
  return rc;
}

static int member_is_held(const member *m) {
  return m->lock ? zkrc_lock_is_held(m->lock)
                 : zkrc_semaphore_lease_is_held(m->lease);
}

/* Give back, last first, the @p taken members this call acquired; returns
 * @p err, the failure being reported, with its ZooKeeper code (which the
 * releases may have overwritten). */
static int give_back(member *m, size_t taken, int err) {
  int zk_rc = zkrc_last_zk_error();
  while (taken > 0)
    (void)member_give(&m[--taken]);
  return zkrc__fail_zk(err, zk_rc);
}

/* Acquire the sorted members under one deadline, all or nothing, with
 * @p alarm watching those taken; returns how many were taken. */
static size_t take_each(member *m, size_t count, int timeout_ms,
                        zkrc__waker *alarm, int *rc) {
  int64_t deadline = zkrc__deadline_after(timeout_ms);
  for (size_t taken = 0; taken < count; taken++) {
    int wait = timeout_ms;
    if (timeout_ms > 0 && (wait = zkrc__ms_left(deadline)) == 0) {
      *rc = ZKRC_ETIMEDOUT;
      return taken;
    }
    *rc = member_take(&m[taken], wait, alarm);
    if (*rc != ZKRC_OK)
      return taken;
    if (!member_watch(&m[taken], alarm)) {
      *rc = ZKRC_ELOCKLOST; /* lost already */
      return taken + 1;
    }
  }
  *rc = ZKRC_OK;
  return count;
}

static int take_all(member *m, size_t count, int timeout_ms) {
  GMutex mu;
  g_mutex_init(&mu);
  zkrc__waker alarm = {.mu = &mu};
  g_cond_init(&alarm.cond);
  int rc;
  size_t taken = take_each(m, count, timeout_ms, &alarm, &rc);
  for (size_t i = 0; i < taken; i++)
    (void)member_watch(&m[i], NULL); /* before the alarm goes */
  g_cond_clear(&alarm.cond);
  g_mutex_clear(&mu);
  if (rc != ZKRC_OK)
    return give_back(m, taken, rc);
  /* Every member answered; were the first ones kept while the last were
   * awaited (a lease lost is not watched)? */
  for (size_t i = 0; i < count; i++)
    if (!member_is_held(&m[i]))
      return give_back(m, count, ZKRC_ELOCKLOST);
  return ZKRC_OK;
}

/* Release the members last first; the first failure, or ZKRC_OK. */
static int give_all(member *m, size_t count) {
  int rc = ZKRC_OK;
  for (size_t i = count; i > 0; i--) {
    int released = member_give(&m[i - 1]);
    if (released != ZKRC_OK && rc == ZKRC_OK)
      rc = released;
  }
  return rc;
}

/* ZKRC_OK when the calling thread holds every lock among the members. */
static int thread_owns_locks(const member *m, size_t count) {
  for (size_t i = 0; i < count; i++)
    if (m[i].lock && zkrc_lock_depth(m[i].lock) == 0)
      return zkrc__fail(ZKRC_ENOTOWNER);
  return ZKRC_OK;
}

/* ------------------------------------------------------------ the object */

struct zkrc_multilock {
  member *members; /* sorted by path as they are added */
  size_t count;
  gboolean held;
};

int zkrc_multilock_new(zkrc_multilock **out) {
  if (out == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  *out = g_new0(zkrc_multilock, 1);
  return ZKRC_OK;
}

/* Insert @p add in path order; ZKRC_EINVAL if its path is there already. */
static int add_member(zkrc_multilock *ml, member add) {
  if (ml->held)
    return zkrc__fail(ZKRC_ESTATE);
  if (ml->count == ZKRC_MULTILOCK_MAX)
    return zkrc__fail(ZKRC_EINVAL);
  size_t at = 0;
  while (at < ml->count && member_by_path(&ml->members[at], &add) < 0)
    at++;
  if (at < ml->count && member_by_path(&ml->members[at], &add) == 0)
    return zkrc__fail(ZKRC_EINVAL);
  ml->members = g_renew(member, ml->members, ml->count + 1);
  memmove(&ml->members[at + 1], &ml->members[at],
          (ml->count - at) * sizeof *ml->members);
  ml->members[at] = add;
  ml->count++;
  return ZKRC_OK;
}

int zkrc_multilock_add_lock(zkrc_multilock *ml, zkrc_lock *lock) {
  if (ml == NULL || lock == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  return add_member(ml, (member){.lock = lock});
}

int zkrc_multilock_add_semaphore(zkrc_multilock *ml, zkrc_semaphore *sem) {
  if (ml == NULL || sem == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  return add_member(ml, (member){.sem = sem});
}

int zkrc_multilock_acquire(zkrc_multilock *ml, int timeout_ms) {
  if (ml == NULL || !zkrc__timeout_valid(timeout_ms))
    return zkrc__fail(ZKRC_EINVAL);
  if (ml->held || ml->count == 0)
    return zkrc__fail(ZKRC_ESTATE);
  int rc = take_all(ml->members, ml->count, timeout_ms);
  ml->held = rc == ZKRC_OK;
  return rc;
}

int zkrc_multilock_release(zkrc_multilock *ml) {
  if (ml == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  if (!ml->held)
    return zkrc__fail(ZKRC_ESTATE);
  int rc = thread_owns_locks(ml->members, ml->count);
  if (rc != ZKRC_OK)
    return rc;
  ml->held = FALSE;
  rc = give_all(ml->members, ml->count);
  return rc == ZKRC_OK ? ZKRC_OK : zkrc__fail(rc);
}

int zkrc_multilock_is_held(zkrc_multilock *ml) {
  if (ml == NULL || !ml->held)
    return 0;
  for (size_t i = 0; i < ml->count; i++)
    if (!member_is_held(&ml->members[i]))
      return 0;
  return 1;
}

size_t zkrc_multilock_count(zkrc_multilock *ml) { return ml ? ml->count : 0; }

const char *zkrc_multilock_path(zkrc_multilock *ml, size_t i) {
  return ml && i < ml->count ? zkrc__member_path(&ml->members[i]) : NULL;
}

/* The held member @p i of @p ml (checked: ZKRC_EINVAL, ZKRC_ESTATE). */
static int held_member(zkrc_multilock *ml, size_t i, const void *out,
                       member **m) {
  if (ml == NULL || out == NULL || i >= ml->count)
    return zkrc__fail(ZKRC_EINVAL);
  if (!ml->held)
    return zkrc__fail(ZKRC_ESTATE);
  *m = &ml->members[i];
  return ZKRC_OK;
}

int zkrc_multilock_token(zkrc_multilock *ml, size_t i, int64_t *token) {
  member *m = NULL;
  int err = held_member(ml, i, token, &m);
  if (err != ZKRC_OK)
    return err;
  return m->lock ? zkrc_lock_token(m->lock, token)
                 : zkrc_semaphore_lease_token(m->lease, token);
}

int zkrc_multilock_node(zkrc_multilock *ml, size_t i, char **path) {
  if (path)
    *path = NULL;
  member *m = NULL;
  int err = held_member(ml, i, path, &m);
  if (err != ZKRC_OK)
    return err;
  return m->lock ? zkrc_lock_node(m->lock, path)
                 : zkrc_semaphore_lease_node(m->lease, path);
}

/* Give up what a held set holds without waiting for the network (the
 * deletes go on in the background): the calling thread's locks (another
 * thread's are left to it), and every lease. */
static void give_all_in_background(member *m, size_t count) {
  gboolean mine = thread_owns_locks(m, count) == ZKRC_OK;
  for (size_t i = count; i > 0; i--) {
    member *x = &m[i - 1];
    if (x->lock && mine)
      (void)zkrc__lock_release_in_background(x->lock);
    else if (x->lease)
      (void)member_give(x); /* a lease's release never waits */
  }
}

void zkrc_multilock_free(zkrc_multilock *ml) {
  if (ml == NULL)
    return;
  if (ml->held)
    give_all_in_background(ml->members, ml->count);
  g_free(ml->members);
  g_free(ml);
}

const member *zkrc__multilock_members(zkrc_multilock *ml, size_t *count) {
  *count = ml ? ml->count : 0;
  return ml ? ml->members : NULL;
}
