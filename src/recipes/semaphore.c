/*
 * The semaphore (zkrecipes/semaphore.h): Curator InterProcessSemaphoreV2's
 * protocol as two members of the lock family on the contender queue,
 * rather than a queue of its own:
 *
 *  - the internal mutex, a lock object on "<path>/locks" ("lock-" nodes,
 *    policy exclusive: Curator's InterProcessMutex and ours exclude each
 *    other there);
 *  - the lease pool, a lock object on "<path>/leases" ("lease-" nodes,
 *    policy permits with N: the first N in line are admitted, and a waiter
 *    lists and watches the directory).
 *
 * An acquisition is a non-blocking hold of the mutex, then (once it holds)
 * a non-blocking hold of the pool under what is left of the deadline;
 * when the pool hold completes, either way, the mutex hold is released.
 * So only the mutex's holder watches the leases.  The queue does the rest:
 * the create with the listing pipelined behind it, protected names found
 * again after a lost reply, nodes of failed holds deleted or handed to the
 * session's reaper, held means held (the lease's loss on the lease).
 *
 * Both steps complete on the session's executor (lock_async.c); a
 * blocking acquisition waits for its completion on a condition of its own
 * (many threads may wait on one semaphore: a grant wakes one of them).
 *
 * Lock order: sem->mu is taken before the member locks' mutexes (the
 * non-blocking lock calls made under it), never after: the lock calls
 * complete and tell events on the executor, with no lock mutex held.
 */
#include "config.h"

#include <string.h>

#include "recipes/lock_private.h"
#include "recipes/stats_internal.h"
#include "core/util.h"
#include "recipes/semaphore_internal.h"
#include "zkrecipes/semaphore.h"

/* ------------------------------------------------------------ lifetime */

zkrc_semaphore *zkrc__semaphore_ref(zkrc_semaphore *sem) {
  g_atomic_int_inc(&sem->refs);
  return sem;
}

void zkrc__semaphore_unref(zkrc_semaphore *sem) {
  if (!g_atomic_int_dec_and_test(&sem->refs))
    return;
  g_hash_table_destroy(sem->live);
  g_free(sem->path);
  g_mutex_clear(&sem->mu);
  g_free(sem);
}

static void sem_unref_posted(void *sem) { zkrc__semaphore_unref(sem); }

static zkrc_semaphore_lease *lease_ref(zkrc_semaphore_lease *l) {
  g_atomic_int_inc(&l->refs);
  return l;
}

static void lease_unref(zkrc_semaphore_lease *l) {
  if (!g_atomic_int_dec_and_test(&l->refs))
    return;
  zkrc__semaphore_unref(l->sem);
  g_free(l);
}

/* Forget a lease that failed or was released (sem->mu held); the set's
 * reference is dropped by the caller, after letting the mutex go. */
static gboolean forget_locked(zkrc_semaphore_lease *l) {
  l->state = L_DONE;
  return g_hash_table_remove(l->sem->live, l);
}

/* The defaults, in a whole struct of ours. */
static void semaphore_options_defaults(zkrc_semaphore_options *opts) {
  zkrc__recipe_options_init(opts, sizeof *opts);
}

void zkrc_semaphore_options_init_sized(zkrc_semaphore_options *opts,
                                       size_t size) {
  zkrc_semaphore_options full;
  semaphore_options_defaults(&full);
  zkrc__options_give(opts, size, &full, sizeof full);
}

/* --------------------------------------------------------------- events */

/* The pool's lock events, told as the lease's. */
static void pool_event(zkrc_lock *lk, const zkrc_lock_event *info, void *arg) {
  zkrc_semaphore *sem = arg;
  zkrc_semaphore_lease *l = zkrc_lock_hold_arg(info->hold);
  g_mutex_lock(&sem->mu);
  gboolean live = !sem->freeing && l && g_hash_table_contains(sem->live, l) &&
                  l->lhold == info->hold;
  if (live)
    lease_ref(l);
  g_mutex_unlock(&sem->mu);
  if (!live)
    return;
  zkrc_semaphore_event out = {
      .type = info->type,
      .reason = info->reason,
      .zk_error = info->zk_error,
      .token = info->token,
      .lease = l,
  };
  sem->on_event(sem, &out, sem->event_arg);
  lease_unref(l);
}

/* --------------------------------------------------------------- create */

/* "<path>/<child>" (g_free it). */
static char *child_path(const char *path, const char *child) {
  return strcmp(path, "/") == 0 ? g_strconcat("/", child, NULL)
                                : g_strconcat(path, "/", child, NULL);
}

/* The member locks' options, from the caller's semaphore options. */
static gboolean member_options(zkrc_lock_options *out,
                               zkrc_semaphore_options *o,
                               const zkrc_semaphore_options *given) {
  zkrc_semaphore_options_init(o);
  if (!zkrc__options_take(o, sizeof *o, given))
    return FALSE;
  zkrc_lock_options_init(out);
  out->participant_id = o->participant_id;
  out->acl = o->acl;
  return TRUE;
}

int zkrc_semaphore_new(zkrc_semaphore **out, zkrc_session *s, const char *path,
                       int max_leases, const zkrc_semaphore_options *opts) {
  if (out)
    *out = NULL;
  zkrc_semaphore_options o;
  zkrc_lock_options lo;
  if (out == NULL || s == NULL || max_leases < 1 ||
      zkrc_path_validate(path, NULL) != ZKRC_OK ||
      !member_options(&lo, &o, opts))
    return zkrc__fail(ZKRC_EINVAL);
  zkrc_semaphore *sem = g_new0(zkrc_semaphore, 1);
  sem->refs = 1;
  g_mutex_init(&sem->mu);
  sem->s = s;
  sem->path = g_strdup(path);
  sem->max_leases = max_leases;
  sem->on_event = o.on_event;
  sem->event_arg = o.event_arg;
  sem->live = g_hash_table_new(g_direct_hash, g_direct_equal);
  char *locks = child_path(path, "locks");
  char *leases = child_path(path, "leases");
  int err = zkrc__lock_new_member(&sem->mutex, s, locks, &lo, "lock-",
                                  zkrc__policy_exclusive);
  if (o.on_event) {
    lo.on_event = pool_event;
    lo.event_arg = sem;
  }
  if (err == ZKRC_OK)
    err = zkrc__lock_new_permits(&sem->pool, s, leases, &lo, max_leases);
  g_free(locks);
  g_free(leases);
  if (err != ZKRC_OK) {
    zkrc__lock_free(sem->mutex);
    zkrc__semaphore_unref(sem);
    return zkrc__fail(err);
  }
  *out = sem;
  return ZKRC_OK;
}

int zkrc_semaphore_max_leases(zkrc_semaphore *sem) {
  return sem ? sem->max_leases : 0;
}

const char *zkrc_semaphore_path(zkrc_semaphore *sem) {
  return sem ? sem->path : NULL;
}

/* ---------------------------------------------------------- acquisition */

/* Tell the owner that the acquisition of @p l failed with @p status (and
 * ZooKeeper's @p zk_error) and drop it.  Called with sem->mu held; returns
 * with it released. */
static void fail_unlock(zkrc_semaphore_lease *l, int status, int zk_error) {
  zkrc_semaphore *sem = l->sem;
  zkrc__stats_gave_up(&sem->stats, status);
  gboolean ours = forget_locked(l);
  g_mutex_unlock(&sem->mu);
  zkrc_semaphore_acquired_info info = {status, zk_error, 0};
  l->done(sem, NULL, &info, l->arg);
  if (ours)
    lease_unref(l); /* the set's */
}

/* Let the internal mutex go (sem->mu held).  Not once the semaphore is
 * being freed: zkrc_lock_free() released it then. */
static void release_mutex_locked(zkrc_semaphore_lease *l) {
  if (l->mhold && !l->sem->freeing)
    zkrc_lock_hold_release(l->mhold);
  l->mhold = NULL;
}

/* The pool's hold completed: the mutex goes either way. */
static void lease_done(zkrc_lock *lk, zkrc_lock_hold *hold,
                       const zkrc_lock_acquired_info *info, void *arg) {
  zkrc_semaphore_lease *l = arg;
  zkrc_semaphore *sem = l->sem;
  g_mutex_lock(&sem->mu);
  release_mutex_locked(l);
  int status = info->status;
  if (status == ZKRC_OK && sem->freeing)
    status = ZKRC_ECANCELED; /* zkrc_lock_free() released it */
  if (status != ZKRC_OK) {
    l->lhold = NULL; /* freed after this callback (lock_async.c) */
    fail_unlock(l, status, status == info->status ? info->zk_error : ZOK);
  } else {
    l->state = L_HELD;
    l->held_us = g_get_monotonic_time();
    sem->stats.acquisitions++;
    zkrc__histogram_record(&sem->stats.wait, l->held_us - l->asked_us);
    g_mutex_unlock(&sem->mu);
    zkrc_semaphore_acquired_info out = {ZKRC_OK, ZOK, info->token};
    l->done(sem, l, &out, l->arg);
  }
  lease_unref(l); /* this callback's */
}

/* Milliseconds to give the pool's hold: what is left of the deadline
 * (0 when nothing is), ZKRC_NO_WAIT or ZKRC_WAIT_FOREVER. */
static int pool_timeout(const zkrc_semaphore_lease *l) {
  if (l->no_wait)
    return ZKRC_NO_WAIT;
  if (l->deadline == ZKRC__NEVER)
    return ZKRC_WAIT_FOREVER;
  return zkrc__ms_left(l->deadline);
}

/* The internal mutex's hold completed: ask for a lease, or give up. */
static void mutex_done(zkrc_lock *lk, zkrc_lock_hold *hold,
                       const zkrc_lock_acquired_info *info, void *arg) {
  zkrc_semaphore_lease *l = arg;
  zkrc_semaphore *sem = l->sem;
  g_mutex_lock(&sem->mu);
  int status = info->status;
  l->mhold = NULL; /* a failed hold is freed after this callback */
  if (status == ZKRC_OK) {
    l->mhold = hold;
    l->state = L_LEASE;
    int ms = pool_timeout(l);
    status = sem->freeing || l->cancelled ? ZKRC_ECANCELED
             : ms == 0 && !l->no_wait     ? ZKRC_ETIMEDOUT
                                          : ZKRC_OK;
    if (status == ZKRC_OK) {
      zkrc_lock_hold *lh = NULL;
      status =
          zkrc_lock_acquire_async(sem->pool, ms, lease_done, lease_ref(l), &lh);
      if (status == ZKRC_OK)
        l->lhold = lh; /* lease_done waits for sem->mu */
      else
        lease_unref(l);
    }
    if (status != ZKRC_OK)
      release_mutex_locked(l);
  }
  if (status != ZKRC_OK)
    fail_unlock(l, status, status == info->status ? info->zk_error : ZOK);
  else
    g_mutex_unlock(&sem->mu);
  lease_unref(l); /* this callback's */
}

int zkrc_semaphore_acquire_async(zkrc_semaphore *sem, int timeout_ms,
                                 zkrc_semaphore_acquired_fn done, void *arg,
                                 zkrc_semaphore_lease **pending) {
  if (pending)
    *pending = NULL;
  if (sem == NULL || done == NULL || !zkrc__timeout_valid(timeout_ms))
    return zkrc__fail(ZKRC_EINVAL);
  zkrc_semaphore_lease *l = g_new0(zkrc_semaphore_lease, 1);
  l->refs = 2; /* the set's and the mutex callback's */
  l->sem = zkrc__semaphore_ref(sem);
  l->state = L_MUTEX;
  l->asked_us = g_get_monotonic_time();
  l->no_wait = timeout_ms == ZKRC_NO_WAIT;
  l->deadline = zkrc__deadline_after(timeout_ms);
  l->done = done;
  l->arg = arg;
  /* A try does not wait for leases, but the mutex's holders keep it only
   * while they look: wait for it at most a session timeout. */
  int ms = l->no_wait ? zkrc_session_timeout(sem->s) : timeout_ms;
  g_mutex_lock(&sem->mu);
  int err = sem->freeing ? ZKRC_ECANCELED : ZKRC_OK;
  zkrc_lock_hold *mh = NULL;
  if (err == ZKRC_OK)
    err = zkrc_lock_acquire_async(sem->mutex, ms, mutex_done, l, &mh);
  if (err == ZKRC_OK) {
    l->mhold = mh; /* mutex_done waits for sem->mu */
    g_hash_table_add(sem->live, l);
    if (pending)
      *pending = l;
  }
  g_mutex_unlock(&sem->mu);
  if (err != ZKRC_OK) {
    lease_unref(l);
    lease_unref(l);
    return zkrc__fail(err);
  }
  return ZKRC_OK;
}

/* -------------------------------------------------------------- a lease */

int zkrc_semaphore_lease_release(zkrc_semaphore_lease *l) {
  if (l == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  zkrc_semaphore *sem = l->sem;
  g_mutex_lock(&sem->mu);
  if (l->state != L_HELD) {
    g_mutex_unlock(&sem->mu);
    return zkrc__fail(ZKRC_ESTATE);
  }
  int err = sem->freeing ? ZKRC_OK : zkrc_lock_hold_release(l->lhold);
  l->lhold = NULL;
  sem->stats.releases++;
  zkrc__histogram_record(&sem->stats.hold, g_get_monotonic_time() - l->held_us);
  gboolean ours = forget_locked(l);
  g_mutex_unlock(&sem->mu);
  if (ours)
    lease_unref(l);
  return zkrc__fail(err);
}

int zkrc_semaphore_lease_cancel(zkrc_semaphore_lease *l) {
  if (l == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  zkrc_semaphore *sem = l->sem;
  g_mutex_lock(&sem->mu);
  int err = ZKRC_ESTATE;
  if (l->state == L_MUTEX && !l->cancelled) {
    /* Granted already and on its way: mutex_done gives it up. */
    if (zkrc_lock_hold_cancel(l->mhold) != ZKRC_OK)
      l->cancelled = TRUE;
    err = ZKRC_OK;
  } else if (l->state == L_LEASE && l->lhold) {
    err = zkrc_lock_hold_cancel(l->lhold);
  }
  g_mutex_unlock(&sem->mu);
  return zkrc__fail(err);
}

/* @p ask about @p l's pool hold while it is held (else 0). */
static int ask_held(zkrc_semaphore_lease *l, int (*ask)(zkrc_lock_hold *)) {
  if (l == NULL)
    return 0;
  g_mutex_lock(&l->sem->mu);
  int answer =
      l->state == L_HELD && l->lhold && !l->sem->freeing ? ask(l->lhold) : 0;
  g_mutex_unlock(&l->sem->mu);
  return answer;
}

int zkrc_semaphore_lease_is_held(zkrc_semaphore_lease *l) {
  return ask_held(l, zkrc_lock_hold_is_held);
}

int zkrc_semaphore_lease_remaining(zkrc_semaphore_lease *l) {
  return ask_held(l, zkrc_lock_hold_lease_remaining);
}

/* Ask @p l's pool hold with @p ask (token or node) into @p out while the
 * lease is held: ZKRC_ESTATE while it is not acquired (or the semaphore is
 * being freed), else the hold's answer (ZKRC_ELOCKLOST when lost). */
static int ask_hold(zkrc_semaphore_lease *l,
                    int (*ask)(zkrc_lock_hold *, void *), void *out) {
  if (l == NULL || out == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  g_mutex_lock(&l->sem->mu);
  int err = l->state == L_HELD && l->lhold && !l->sem->freeing
                ? ask(l->lhold, out)
                : zkrc__fail(ZKRC_ESTATE);
  g_mutex_unlock(&l->sem->mu);
  return err;
}

static int ask_token(zkrc_lock_hold *h, void *out) {
  return zkrc_lock_hold_token(h, out);
}

static int ask_node(zkrc_lock_hold *h, void *out) {
  return zkrc_lock_hold_node(h, out);
}

int zkrc_semaphore_lease_token(zkrc_semaphore_lease *l, int64_t *token) {
  return ask_hold(l, ask_token, token);
}

int zkrc_semaphore_lease_node(zkrc_semaphore_lease *l, char **path) {
  if (path)
    *path = NULL;
  return ask_hold(l, ask_node, path);
}

int zkrc_semaphore_list(zkrc_session *s, const char *path,
                        zkrc_participant **list, size_t *count,
                        int timeout_ms) {
  if (list)
    *list = NULL;
  if (count)
    *count = 0;
  if (zkrc_path_validate(path, NULL) != ZKRC_OK)
    return zkrc__fail(ZKRC_EINVAL);
  char *leases = child_path(path, "leases");
  int err = zkrc__queue_list_checked(s, leases, zkrc__lease_markers, timeout_ms,
                                     list, count);
  g_free(leases);
  return err;
}

/* ----------------------------------------------------------------- free */

/* A free begins: from here on no callback touches the member locks'
 * holds (freeing the locks cancels the pending ones, whose completions
 * fail the leases, and releases the held ones).  Returns the held leases,
 * forgotten, whose set references the caller drops after the locks' free. */
static GList *begin_free(zkrc_semaphore *sem) {
  g_mutex_lock(&sem->mu);
  sem->freeing = TRUE;
  GList *held = NULL;
  GList *all = g_hash_table_get_keys(sem->live);
  for (GList *it = all; it; it = it->next) {
    zkrc_semaphore_lease *l = it->data;
    if (l->state == L_HELD) {
      forget_locked(l);
      held = g_list_prepend(held, l);
    }
  }
  g_list_free(all);
  g_mutex_unlock(&sem->mu);
  return held;
}

void zkrc_semaphore_free(zkrc_semaphore *sem) {
  if (sem == NULL)
    return;
  GList *held = begin_free(sem);
  /* The member locks may hold the session's last references (it was
   * closed before this free): keep it until our last use of it below. */
  zkrc_session *s = zkrc__session_ref(sem->s);
  zkrc__lock_free(sem->pool);
  zkrc__lock_free(sem->mutex);
  g_list_free_full(held, (GDestroyNotify)lease_unref);
  /* A pool event posted before the free may still be on its way to
   * pool_event(), which reads sem: drop our reference behind it, on the
   * executor, which runs posted calls in order (events posted after the
   * free are dropped by the lock, unseen). */
  zkrc__session_post(s, sem_unref_posted, sem);
  zkrc__session_unref(s);
}

int zkrc_semaphore_free_async(zkrc_semaphore *sem, zkrc_callback_fn done,
                              void *arg) {
  if (sem == NULL || done == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  GList *held = begin_free(sem);
  /* `done` runs after both member locks' last event and completion (the
   * leases' completions among them), then our reference goes. */
  zkrc__free_join *j = zkrc__free_join_new(2, done, arg, sem_unref_posted, sem);
  zkrc__lock_free_async(sem->pool, zkrc__free_join_part, j);
  zkrc__lock_free_async(sem->mutex, zkrc__free_join_part, j);
  g_list_free_full(held, (GDestroyNotify)lease_unref);
  return ZKRC_OK;
}

/* ------------------------------------------------------------ statistics */

int zkrc_semaphore_get_stats(zkrc_semaphore *sem, zkrc_lock_stats *out,
                             size_t size) {
  if (sem == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  zkrc_lock_stats pool;
  if (zkrc_lock_get_stats(sem->pool, &pool, sizeof pool) != ZKRC_OK)
    memset(&pool, 0, sizeof pool);
  uint32_t waiting = 0, holding = 0;
  g_mutex_lock(&sem->mu);
  zkrc__lock_stats copy = sem->stats;
  GHashTableIter it;
  gpointer key;
  g_hash_table_iter_init(&it, sem->live);
  while (g_hash_table_iter_next(&it, &key, NULL)) {
    const zkrc_semaphore_lease *l = key;
    waiting += l->state == L_MUTEX || l->state == L_LEASE;
    holding += l->state == L_HELD;
  }
  g_mutex_unlock(&sem->mu);
  copy.lost = pool.lost;
  return zkrc__stats_give(&copy, waiting, holding, pool.queue_length, out,
                          size);
}
