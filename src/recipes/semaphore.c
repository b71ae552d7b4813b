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
 * Lock order: sem->o.mu is taken before the member locks' mutexes (the
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
  zkrc__object_ref(&sem->o);
  return sem;
}

void zkrc__semaphore_unref(zkrc_semaphore *sem) { zkrc__object_unref(&sem->o); }

static void semaphore_finalize(zkrc__object *o) {
  zkrc_semaphore *sem = (zkrc_semaphore *)o;
  g_hash_table_destroy(sem->live);
  g_free(sem->path);
  g_free(sem);
}

static zkrc_semaphore_lease *lease_ref(zkrc_semaphore_lease *l) {
  g_atomic_int_inc(&l->refs);
  return l;
}

static void lease_unref(zkrc_semaphore_lease *l) {
  if (!g_atomic_int_dec_and_test(&l->refs))
    return;
  if (l->arg_free)
    l->arg_free(l->arg);
  zkrc__semaphore_unref(l->sem);
  g_free(l);
}

/* Forget a lease that failed or was released (sem->o.mu held); the set's
 * reference is dropped by the caller, after letting the mutex go. */
static gboolean forget_locked(zkrc_semaphore_lease *l) {
  l->state = L_DONE;
  return g_hash_table_remove(l->sem->live, l);
}

/* Is the semaphore being freed, at once or in the background? */
static gboolean ending_locked(const zkrc_semaphore *sem) {
  return zkrc__object_ending(&sem->o);
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

/* One of the semaphore's events: a lease's completion (@p completion,
 * owed: told also after the free) or a lock event of its pool hold (not
 * once closed), told on the executor in the order the member locks told
 * them. */
typedef struct sem_event {
  zkrc__object_event ev;   /* first */
  zkrc_semaphore_lease *l; /* referenced */
  gboolean completion;
  zkrc_semaphore_acquired_info info;
  zkrc_semaphore_event out;
} sem_event;

static void sem_event_tell(zkrc__object *o, zkrc__object_event *ev) {
  sem_event *e = (sem_event *)ev;
  zkrc_semaphore *sem = (zkrc_semaphore *)o;
  zkrc_semaphore_lease *l = e->l;
  g_mutex_lock(&sem->o.mu);
  /* A lease given up meanwhile (released, or by free_async) is not told
   * of: its grant is a cancellation, its events are none. */
  gboolean live = g_hash_table_contains(sem->live, l) && l->state == L_HELD;
  g_mutex_unlock(&sem->o.mu);
  if (!e->completion) {
    if (live)
      sem->on_event(sem, &e->out, sem->event_arg);
    return;
  }
  if (e->info.status == ZKRC_OK && !live)
    e->info = (zkrc_semaphore_acquired_info){ZKRC_ECANCELED, ZOK, 0};
  l->done(sem, e->info.status == ZKRC_OK ? l : NULL, &e->info, l->arg);
}

static void sem_event_release(zkrc__object_event *ev) {
  sem_event *e = (sem_event *)ev;
  lease_unref(e->l);
  g_free(e);
}

/* Tell @p e about @p l (sem->o.mu held): a completion is owed (told also
 * after the free, which made it a cancellation), a lease's event is not
 * (none once closed). */
static void tell_locked(zkrc_semaphore *sem, zkrc_semaphore_lease *l,
                        sem_event e) {
  if (sem->o.closed && !e.completion)
    return;
  sem_event *ev =
      zkrc__object_event_new(sizeof *ev, sem_event_tell, sem_event_release);
  ev->l = lease_ref(l);
  ev->completion = e.completion;
  ev->info = e.info;
  ev->out = e.out;
  if (e.completion)
    zkrc__object_tell_owed_locked(&sem->o, &ev->ev);
  else
    zkrc__object_tell_locked(&sem->o, &ev->ev);
}

/* The pool's lock events, told as the lease's. */
static void pool_event(zkrc_lock *lk, const zkrc_lock_event *info, void *arg) {
  zkrc_semaphore *sem = arg;
  zkrc_semaphore_lease *l = zkrc_lock_hold_arg(info->hold);
  g_mutex_lock(&sem->o.mu);
  if (!ending_locked(sem) && l && g_hash_table_contains(sem->live, l) &&
      l->lhold == info->hold)
    tell_locked(sem, l,
                (sem_event){.out = {
                                .type = info->type,
                                .reason = info->reason,
                                .zk_error = info->zk_error,
                                .token = info->token,
                                .lease = l,
                            }});
  g_mutex_unlock(&sem->o.mu);
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
  zkrc__object_init(&sem->o, zkrc__session_executor(s), semaphore_finalize);
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

/* The acquisition of @p l failed with @p status (and ZooKeeper's
 * @p zk_error): tell the owner, and drop it.  Called with sem->o.mu held;
 * returns with it released. */
static void fail_unlock(zkrc_semaphore_lease *l, int status, int zk_error) {
  zkrc_semaphore *sem = l->sem;
  zkrc__stats_gave_up(&sem->stats, status);
  gboolean ours = forget_locked(l);
  tell_locked(sem, l,
              (sem_event){.completion = TRUE, .info = {status, zk_error, 0}});
  g_mutex_unlock(&sem->o.mu);
  if (ours)
    lease_unref(l); /* the set's */
}

/* Let the internal mutex go (sem->o.mu held).  Not once the semaphore is
 * being freed: the member lock's free released it then. */
static void release_mutex_locked(zkrc_semaphore_lease *l) {
  if (l->mhold && !ending_locked(l->sem))
    zkrc_lock_hold_release(l->mhold);
  l->mhold = NULL;
}

/* The pool's hold completed: the mutex goes either way. */
static void lease_done(zkrc_lock *lk, zkrc_lock_hold *hold,
                       const zkrc_lock_acquired_info *info, void *arg) {
  zkrc_semaphore_lease *l = arg;
  zkrc_semaphore *sem = l->sem;
  g_mutex_lock(&sem->o.mu);
  release_mutex_locked(l);
  int status = info->status;
  if (status == ZKRC_OK && ending_locked(sem))
    status = ZKRC_ECANCELED; /* the pool's free released it */
  if (status != ZKRC_OK) {
    l->lhold = NULL; /* freed after this callback (lock_async.c) */
    fail_unlock(l, status, status == info->status ? info->zk_error : ZOK);
  } else {
    l->state = L_HELD;
    l->held_us = g_get_monotonic_time();
    sem->stats.acquisitions++;
    zkrc__histogram_record(&sem->stats.wait, l->held_us - l->asked_us);
    tell_locked(
        sem, l,
        (sem_event){.completion = TRUE, .info = {ZKRC_OK, ZOK, info->token}});
    g_mutex_unlock(&sem->o.mu);
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
  g_mutex_lock(&sem->o.mu);
  int status = info->status;
  l->mhold = NULL; /* a failed hold is freed after this callback */
  if (status == ZKRC_OK) {
    l->mhold = hold;
    l->state = L_LEASE;
    int ms = pool_timeout(l);
    status = ending_locked(sem) || l->cancelled ? ZKRC_ECANCELED
             : ms == 0 && !l->no_wait           ? ZKRC_ETIMEDOUT
                                                : ZKRC_OK;
    if (status == ZKRC_OK) {
      zkrc_lock_hold *lh = NULL;
      status =
          zkrc_lock_acquire_async(sem->pool, ms, lease_done, lease_ref(l), &lh);
      if (status == ZKRC_OK)
        l->lhold = lh; /* lease_done waits for sem->o.mu */
      else
        lease_unref(l);
    }
    if (status != ZKRC_OK)
      release_mutex_locked(l);
  }
  if (status != ZKRC_OK)
    fail_unlock(l, status, status == info->status ? info->zk_error : ZOK);
  else
    g_mutex_unlock(&sem->o.mu);
  lease_unref(l); /* this callback's */
}

int zkrc_semaphore_acquire_async(zkrc_semaphore *sem, int timeout_ms,
                                 zkrc_semaphore_acquired_fn done, void *arg,
                                 zkrc_semaphore_lease **pending) {
  return zkrc__semaphore_acquire_async(sem, timeout_ms, done, arg, NULL,
                                       pending);
}

int zkrc__semaphore_acquire_async(zkrc_semaphore *sem, int timeout_ms,
                                  zkrc_semaphore_acquired_fn done, void *arg,
                                  void (*arg_free)(void *arg),
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
  l->arg_free = arg_free;
  /* A try does not wait for leases, but the mutex's holders keep it only
   * while they look: wait for it at most a session timeout. */
  int ms = l->no_wait ? zkrc_session_timeout(sem->s) : timeout_ms;
  g_mutex_lock(&sem->o.mu);
  int err = ending_locked(sem) ? ZKRC_ECANCELED : ZKRC_OK;
  zkrc_lock_hold *mh = NULL;
  if (err == ZKRC_OK)
    err = zkrc_lock_acquire_async(sem->mutex, ms, mutex_done, l, &mh);
  if (err == ZKRC_OK) {
    l->mhold = mh; /* mutex_done waits for sem->o.mu */
    g_hash_table_add(sem->live, l);
    if (pending)
      *pending = l;
  }
  g_mutex_unlock(&sem->o.mu);
  if (err != ZKRC_OK) {
    l->arg_free = NULL; /* @p arg stays the caller's */
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
  g_mutex_lock(&sem->o.mu);
  if (l->state != L_HELD) {
    g_mutex_unlock(&sem->o.mu);
    return zkrc__fail(ZKRC_ESTATE);
  }
  int err = ending_locked(sem) ? ZKRC_OK : zkrc_lock_hold_release(l->lhold);
  l->lhold = NULL;
  sem->stats.releases++;
  zkrc__histogram_record(&sem->stats.hold, g_get_monotonic_time() - l->held_us);
  gboolean ours = forget_locked(l);
  g_mutex_unlock(&sem->o.mu);
  if (ours)
    lease_unref(l);
  return zkrc__fail(err);
}

int zkrc_semaphore_lease_cancel(zkrc_semaphore_lease *l) {
  if (l == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  zkrc_semaphore *sem = l->sem;
  g_mutex_lock(&sem->o.mu);
  int err = ZKRC_ESTATE;
  if (l->state == L_MUTEX && !l->cancelled) {
    /* Granted already and on its way: mutex_done gives it up. */
    if (zkrc_lock_hold_cancel(l->mhold) != ZKRC_OK)
      l->cancelled = TRUE;
    err = ZKRC_OK;
  } else if (l->state == L_LEASE && l->lhold) {
    err = zkrc_lock_hold_cancel(l->lhold);
  }
  g_mutex_unlock(&sem->o.mu);
  return zkrc__fail(err);
}

/* @p ask about @p l's pool hold while it is held (else 0). */
static int ask_held(zkrc_semaphore_lease *l, int (*ask)(zkrc_lock_hold *)) {
  if (l == NULL)
    return 0;
  g_mutex_lock(&l->sem->o.mu);
  int answer = l->state == L_HELD && l->lhold && !ending_locked(l->sem)
                   ? ask(l->lhold)
                   : 0;
  g_mutex_unlock(&l->sem->o.mu);
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
  g_mutex_lock(&l->sem->o.mu);
  int err = l->state == L_HELD && l->lhold && !ending_locked(l->sem)
                ? ask(l->lhold, out)
                : zkrc__fail(ZKRC_ESTATE);
  g_mutex_unlock(&l->sem->o.mu);
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

/* A free begins (sem->o.mu held, the semaphore closed or detached): from
 * here on no callback touches the member locks' holds (their free cancels
 * the pending ones, whose completions fail the leases, and releases the
 * held ones).  Returns the held leases, forgotten, whose set references
 * the caller drops after letting the mutex go. */
static GList *forget_held_locked(zkrc_semaphore *sem) {
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
  return held;
}

/* A member lock's free told its end (on its executor). */
static void member_freed(void *data) {
  zkrc_semaphore *sem = data;
  zkrc__object_idle(&sem->o); /* free_async's done may follow */
  zkrc__semaphore_unref(sem);
}

/* Free both member locks in the background, each holding a reference on
 * the semaphore and counting as its pending work until it told its end:
 * their nodes' deletes go on, the leases' completions still come (and
 * drop their references), and no member waits for the network. */
static void free_members_locked(zkrc_semaphore *sem) {
  zkrc__object_busy_locked(&sem->o);
  zkrc__object_busy_locked(&sem->o);
  zkrc__semaphore_ref(sem);
  zkrc__semaphore_ref(sem);
}

static void free_members(zkrc_semaphore *sem) {
  zkrc__lock_free_async(sem->pool, member_freed, sem);
  zkrc__lock_free_async(sem->mutex, member_freed, sem);
}

void zkrc_semaphore_free(zkrc_semaphore *sem) {
  if (sem == NULL)
    return;
  g_mutex_lock(&sem->o.mu);
  /* Nothing more is told; a callback running on another thread ends
   * first.  Threads waiting in zkrc_semaphore_acquire() return
   * ZKRC_ECANCELED before this does. */
  zkrc__object_close_locked(&sem->o);
  for (GSList *w = sem->waiters; w; w = w->next)
    g_cond_signal(w->data);
  while (sem->waiters)
    g_cond_wait(&sem->o.cond, &sem->o.mu);
  GList *held = forget_held_locked(sem);
  free_members_locked(sem);
  g_mutex_unlock(&sem->o.mu);
  free_members(sem);
  g_list_free_full(held, (GDestroyNotify)lease_unref);
  zkrc__semaphore_unref(sem); /* the application's reference */
}

int zkrc_semaphore_free_async(zkrc_semaphore *sem, zkrc_callback_fn done,
                              void *arg) {
  if (sem == NULL || done == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  g_mutex_lock(&sem->o.mu);
  /* `done` is told after both member locks' last event and completion
   * (the leases' completions among them). */
  free_members_locked(sem);
  zkrc__object_detach_locked(&sem->o, done, arg);
  GList *held = forget_held_locked(sem);
  g_mutex_unlock(&sem->o.mu);
  free_members(sem);
  g_list_free_full(held, (GDestroyNotify)lease_unref);
  zkrc__semaphore_unref(sem); /* the application's reference */
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
  g_mutex_lock(&sem->o.mu);
  zkrc__lock_stats copy = sem->stats;
  GHashTableIter it;
  gpointer key;
  g_hash_table_iter_init(&it, sem->live);
  while (g_hash_table_iter_next(&it, &key, NULL)) {
    const zkrc_semaphore_lease *l = key;
    waiting += l->state == L_MUTEX || l->state == L_LEASE;
    holding += l->state == L_HELD;
  }
  g_mutex_unlock(&sem->o.mu);
  copy.lost = pool.lost;
  return zkrc__stats_give(&copy, waiting, holding, pool.queue_length, out,
                          size);
}
