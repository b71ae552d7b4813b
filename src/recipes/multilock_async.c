/*
 * Multilock holds (zkrecipes/multilock.h, non-blocking): the members of a set
 * taken one after the other in path order, each with its own
 * non-blocking acquisition - a lock hold (zkrc_lock_acquire_async) or a
 * semaphore lease (zkrc_semaphore_acquire_async) - and the outcome told
 * once.  Built on those public calls, and on one internal one: the set
 * keeps a reference on each lock hold it took, so that a member lock freed
 * against the header's advice (zkrc_lock_free() releases and frees its
 * holds) leaves a released hold behind, not a dangling pointer.
 *
 * Lock order: the set's mutex before a member's (zkrc_lock_hold_cancel()
 * and zkrc_semaphore_lease_cancel() are called under it, so that what
 * they cancel cannot be freed meanwhile: its completion needs the set's
 * mutex first).
 */
#include "config.h"

#include <string.h>

#include <glib.h>

#include "recipes/lock_private.h"
#include "recipes/multilock_internal.h"
#include "core/util.h"
#include "zkrecipes/error.h"

typedef enum set_state {
  SET_PENDING,
  SET_DECIDED, /* the outcome is known; a cancel comes too late */
  SET_HELD,
  SET_ENDED
} set_state;

/* What a member's acquisition gave: a lock hold or a lease. */
typedef struct taken {
  zkrc_lock_hold *hold;
  zkrc_semaphore_lease *lease;
} taken;

struct zkrc_multilock_hold {
  /* The owner's reference (dropped when a failed outcome has been told, or
   * by the release), and start_next's while it runs: a member's completion
   * may end the set on another thread meanwhile. */
  gint refs;
  GMutex mu;
  zkrc__member *members; /* in the order they are taken */
  taken *held;           /* held[0..next) are acquired */
  size_t count;
  size_t next;       /* the member being acquired */
  taken pending;     /* its acquisition, once known and not yet answered */
  gboolean answered; /* its completion has come */
  unsigned attempt;  /* start_next calls so far: whose acquisition is known */
  gboolean canceled;
  set_state state;
  int timeout_ms;
  int64_t deadline_us;
  zkrc_multilock_acquired_fn done;
  void *arg;
};

static zkrc_multilock_hold *set_ref(zkrc_multilock_hold *set) {
  g_atomic_int_inc(&set->refs);
  return set;
}

static void set_unref(zkrc_multilock_hold *set) {
  if (!g_atomic_int_dec_and_test(&set->refs))
    return;
  for (size_t i = 0; i < set->count; i++)
    if (set->held[i].hold)
      zkrc__holder_unref(set->held[i].hold);
  g_mutex_clear(&set->mu);
  g_free(set->members);
  g_free(set->held);
  g_free(set);
}

/* ------------------------------------------------ one member, any kind */

static int taken_release(taken t) {
  return t.hold ? zkrc_lock_hold_release(t.hold)
                : zkrc_semaphore_lease_release(t.lease);
}

static int taken_is_held(taken t) {
  return t.hold ? zkrc_lock_hold_is_held(t.hold)
                : zkrc_semaphore_lease_is_held(t.lease);
}

static void taken_cancel(taken t) {
  if (t.hold)
    (void)zkrc_lock_hold_cancel(t.hold);
  else if (t.lease)
    (void)zkrc_semaphore_lease_cancel(t.lease);
}

/* ------------------------------------------------------------- outcome */

/* The acquisition failed: give back what was taken, tell, free.  A cancel
 * that was accepted (it returned ZKRC_OK) is what the owner hears of,
 * whatever else failed meanwhile. */
static void set_fail(zkrc_multilock_hold *set, int status, int zk_error,
                     zkrc_lock *failed) {
  g_mutex_lock(&set->mu);
  if (set->canceled) {
    status = ZKRC_ECANCELED;
    zk_error = 0;
    failed = NULL;
  }
  set->state = SET_ENDED;
  size_t n = set->next;
  g_mutex_unlock(&set->mu);
  while (n > 0)
    (void)taken_release(set->held[--n]);
  zkrc_multilock_acquired_info info = {status, zk_error, failed};
  set->done(set, &info, set->arg);
  set_unref(set); /* the owner's */
}

/* All answered: held only if none was lost meanwhile. */
static void set_complete(zkrc_multilock_hold *set) {
  for (size_t i = 0; i < set->count; i++)
    if (!taken_is_held(set->held[i])) {
      set_fail(set, ZKRC_ELOCKLOST, 0, NULL);
      return;
    }
  /* Once SET_HELD, another thread (or a member's event on another
   * executor) may release and free the set: keep it until done returns. */
  set_ref(set);
  g_mutex_lock(&set->mu);
  set->state = SET_HELD;
  g_mutex_unlock(&set->mu);
  zkrc_multilock_acquired_info info = {ZKRC_OK, 0, NULL};
  set->done(set, &info, set->arg);
  set_unref(set);
}

static int start_next(zkrc_multilock_hold *set);

/* The current member's acquisition answered with @p status (@p t what it
 * took when ZKRC_OK). */
static void member_answered(zkrc_multilock_hold *set, int status, int zk_error,
                            taken t) {
  g_mutex_lock(&set->mu);
  set->answered = TRUE;
  set->pending = (taken){NULL, NULL};
  zkrc_lock *failed = set->members[set->next].lock;
  if (status == ZKRC_OK) {
    if (t.hold)
      zkrc__holder_ref(t.hold); /* the set's, until it is freed */
    set->held[set->next++] = t;
  }
  gboolean canceled = set->canceled, all = set->next == set->count;
  if (!canceled && (status != ZKRC_OK || all))
    set->state = SET_DECIDED;
  g_mutex_unlock(&set->mu);
  if (canceled || status != ZKRC_OK) {
    set_fail(set, status, zk_error, failed);
  } else if (all) {
    set_complete(set);
  } else {
    int rc = start_next(set);
    if (rc != ZKRC_OK)
      set_fail(set, rc, 0, set->members[set->next].lock);
  }
}

static void lock_done(zkrc_lock *lk, zkrc_lock_hold *hold,
                      const zkrc_lock_acquired_info *info, void *arg) {
  (void)lk;
  member_answered(arg, info->status, info->zk_error, (taken){hold, NULL});
}

static void lease_done(zkrc_semaphore *sem, zkrc_semaphore_lease *lease,
                       const zkrc_semaphore_acquired_info *info, void *arg) {
  (void)sem;
  member_answered(arg, info->status, info->zk_error, (taken){NULL, lease});
}

/* Start acquiring member set->next; a failure to start is returned (no
 * completion will come for it).  The member's completion may run on
 * another thread before this returns, and may even end the set: this
 * call keeps it alive, and stores what it started only if no completion
 * came since (the attempt is still the latest, unanswered). */
static int start_next(zkrc_multilock_hold *set) {
  set_ref(set);
  g_mutex_lock(&set->mu);
  const zkrc__member *m = &set->members[set->next];
  int wait = set->timeout_ms;
  int rc = ZKRC_OK;
  if (set->canceled)
    rc = ZKRC_ECANCELED;
  else if (wait > 0 && (wait = zkrc__ms_left(set->deadline_us)) == 0)
    rc = ZKRC_ETIMEDOUT;
  unsigned attempt = ++set->attempt;
  set->answered = FALSE;
  set->pending = (taken){NULL, NULL};
  g_mutex_unlock(&set->mu);
  taken t = {NULL, NULL};
  if (rc == ZKRC_OK)
    rc = m->lock
             ? zkrc_lock_acquire_async(m->lock, wait, lock_done, set, &t.hold)
             : zkrc_semaphore_acquire_async(m->sem, wait, lease_done, set,
                                            &t.lease);
  if (rc == ZKRC_OK) {
    g_mutex_lock(&set->mu);
    if (set->attempt == attempt && !set->answered) {
      set->pending = t;  /* its completion needs this mutex first */
      if (set->canceled) /* canceled before it was known */
        taken_cancel(t);
    }
    g_mutex_unlock(&set->mu);
  }
  set_unref(set);
  return rc;
}

/* ---------------------------------------------------------------- start */

/* Start a set hold of @p members (sorted, owned from now on). */
static int start_set(zkrc__member *members, size_t count, int timeout_ms,
                     zkrc_multilock_acquired_fn done, void *arg,
                     zkrc_multilock_hold **out) {
  zkrc_multilock_hold *set = g_new0(zkrc_multilock_hold, 1);
  set->refs = 1;
  g_mutex_init(&set->mu);
  set->members = members;
  set->held = g_new0(taken, count);
  set->count = count;
  set->timeout_ms = timeout_ms;
  set->deadline_us =
      g_get_monotonic_time() + (int64_t)MAX(timeout_ms, 0) * 1000;
  set->done = done;
  set->arg = arg;
  if (out)
    *out = set; /* before the first completion can run */
  int rc = start_next(set);
  if (rc != ZKRC_OK) {
    if (out)
      *out = NULL;
    set_unref(set);
    return zkrc__fail(rc);
  }
  return ZKRC_OK;
}

int zkrc_multilock_acquire_async(zkrc_multilock *ml, int timeout_ms,
                                 zkrc_multilock_acquired_fn done, void *arg,
                                 zkrc_multilock_hold **out) {
  if (ml == NULL || done == NULL || !zkrc__timeout_valid(timeout_ms))
    return zkrc__fail(ZKRC_EINVAL);
  size_t count;
  const zkrc__member *members = zkrc__multilock_members(ml, &count);
  if (count == 0)
    return zkrc__fail(ZKRC_ESTATE);
  zkrc__member *copy = g_new0(zkrc__member, count);
  for (size_t i = 0; i < count; i++)
    copy[i] = (zkrc__member){members[i].lock, members[i].sem, NULL};
  return start_set(copy, count, timeout_ms, done, arg, out);
}

/* ------------------------------------------------------------ the hold */

int zkrc_multilock_hold_cancel(zkrc_multilock_hold *set) {
  if (set == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  g_mutex_lock(&set->mu);
  int rc = ZKRC_OK;
  if (set->state != SET_PENDING || set->canceled) {
    rc = ZKRC_ESTATE;
  } else {
    set->canceled = TRUE;
    taken_cancel(set->pending); /* valid: its completion needs set->mu */
  }
  g_mutex_unlock(&set->mu);
  return rc == ZKRC_OK ? ZKRC_OK : zkrc__fail(rc);
}

int zkrc_multilock_hold_release(zkrc_multilock_hold *set) {
  if (set == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  g_mutex_lock(&set->mu);
  gboolean held = set->state == SET_HELD;
  if (held)
    set->state = SET_ENDED;
  g_mutex_unlock(&set->mu);
  if (!held)
    return zkrc__fail(ZKRC_ESTATE);
  int rc = ZKRC_OK;
  for (size_t i = set->count; i > 0; i--) {
    int released = taken_release(set->held[i - 1]);
    if (released != ZKRC_OK && rc == ZKRC_OK)
      rc = released;
  }
  set_unref(set); /* the owner's */
  return rc == ZKRC_OK ? ZKRC_OK : zkrc__fail(rc);
}

int zkrc_multilock_hold_is_held(zkrc_multilock_hold *set) {
  if (set == NULL)
    return 0;
  g_mutex_lock(&set->mu);
  int held = set->state == SET_HELD;
  for (size_t i = 0; held && i < set->count; i++)
    held = taken_is_held(set->held[i]);
  g_mutex_unlock(&set->mu);
  return held;
}

size_t zkrc_multilock_hold_count(zkrc_multilock_hold *set) {
  return set ? set->count : 0;
}

/* What member @p i took, while the set is held; {NULL, NULL} otherwise. */
static taken held_member(zkrc_multilock_hold *set, size_t i) {
  taken t = {NULL, NULL};
  if (set == NULL || i >= set->count)
    return t;
  g_mutex_lock(&set->mu);
  if (set->state == SET_HELD)
    t = set->held[i];
  g_mutex_unlock(&set->mu);
  return t;
}

zkrc_lock_hold *zkrc_multilock_hold_member(zkrc_multilock_hold *set, size_t i) {
  return held_member(set, i).hold;
}

zkrc_semaphore_lease *zkrc_multilock_hold_lease(zkrc_multilock_hold *set,
                                                size_t i) {
  return held_member(set, i).lease;
}

/* Member @p i of a held @p set, for an accessor filling @p out (checked:
 * ZKRC_EINVAL, ZKRC_ESTATE). */
static int held_taken(zkrc_multilock_hold *set, size_t i, const void *out,
                      taken *t) {
  if (set == NULL || out == NULL || i >= set->count)
    return zkrc__fail(ZKRC_EINVAL);
  *t = held_member(set, i);
  return t->hold || t->lease ? ZKRC_OK : zkrc__fail(ZKRC_ESTATE);
}

int zkrc_multilock_hold_token(zkrc_multilock_hold *set, size_t i,
                              int64_t *token) {
  taken t;
  int err = held_taken(set, i, token, &t);
  if (err != ZKRC_OK)
    return err;
  return t.hold ? zkrc_lock_hold_token(t.hold, token)
                : zkrc_semaphore_lease_token(t.lease, token);
}

int zkrc_multilock_hold_node(zkrc_multilock_hold *set, size_t i, char **path) {
  if (path)
    *path = NULL;
  taken t;
  int err = held_taken(set, i, path, &t);
  if (err != ZKRC_OK)
    return err;
  return t.hold ? zkrc_lock_hold_node(t.hold, path)
                : zkrc_semaphore_lease_node(t.lease, path);
}

zkrc_lock *zkrc_multilock_hold_lock(zkrc_multilock_hold *set, size_t i) {
  return set && i < set->count ? set->members[i].lock : NULL;
}

void *zkrc_multilock_hold_arg(zkrc_multilock_hold *set) {
  return set ? set->arg : NULL;
}
