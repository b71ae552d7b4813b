/*
 * The lock recipe: per-thread participants on the contender queue.
 *
 * Each thread that acquires a lock object gets a "holder": its own contender
 * (its own node) and its reentrancy count.  Threads are told apart by a
 * process-unique number, not by a pthread_t or GThread pointer, which a new
 * thread may reuse after an old one exits.
 *
 * A lock object is reference counted: every holder keeps one, because a
 * released holder's contender finishes its delete after zkrc_lock_release()
 * returned, and a freed lock's last contenders finish after zkrc_lock_free().
 */
#include "config.h"

#include <limits.h>
#include <string.h>

#include "recipes/lock_private.h"
#include "core/names.h"
#include "core/util.h"

/* How long a failed acquisition may overrun its deadline to confirm that
 * its node is gone.  A healthy connection needs a round trip; a stalled one
 * the client has not noticed yet must not hold the caller for a session
 * timeout, so past this the session's reaper finishes the job. */
#define ABANDON_GRACE_MS 500

static uint64_t current_thread_number(void) {
  static _Thread_local uint64_t mine;
  static uint64_t next = 1;
  static GMutex mu;
  if (mine == 0) {
    g_mutex_lock(&mu);
    mine = next++;
    g_mutex_unlock(&mu);
  }
  return mine;
}

const char *zkrc_lock_event_name(zkrc_lock_event_type type) {
  switch (type) {
  case ZKRC_LOCK_SUSPENDED:
    return "suspended";
  case ZKRC_LOCK_RECONNECTED:
    return "reconnected";
  case ZKRC_LOCK_LOST:
    return "lost";
  case ZKRC_LOCK_REVOKE_REQUESTED:
    return "revoke-requested";
  }
  return "unknown";
}

/* The defaults, in a whole struct of ours. */
static void lock_options_defaults(zkrc_lock_options *opts) {
  zkrc__recipe_options_init(opts, sizeof *opts);
}

void zkrc_lock_options_init_sized(zkrc_lock_options *opts, size_t size) {
  zkrc_lock_options full;
  lock_options_defaults(&full);
  zkrc__options_give(opts, size, &full, sizeof full);
}

/* ------------------------------------------------------- thread holds */

/* A thread waiting in zkrc_lock_acquire() sees the state on its own
 * condition (h->wake), which the core signals; only a failure needs
 * saying. */
static void thread_hold_ended(holder *h, int err) {
  if (h->state == H_WAITING)
    h->state = H_FAILED;
}

/* A downgrade waits for nobody but its own writer: another writer ahead of
 * it waits for that one, which its thread would release only after this
 * acquisition returns.  Fail at once rather than deadlock. */
static void thread_hold_behind(holder *h) {
  if (h->excused && h->state == H_WAITING) {
    h->state = H_FAILED;
    h->end_err = ZKRC_EDEADLK;
  }
}

static gboolean thread_hold_may_tell(const holder *h) { return TRUE; }

static const zkrc__hold_client thread_client = {
    .behind = thread_hold_behind,
    .ended = thread_hold_ended,
    .may_tell = thread_hold_may_tell,
};

/* ------------------------------------------------------------- create */

static void finalize_lock(zkrc__recipe *r) {
  zkrc_lock *lk = (zkrc_lock *)r;
  if (lk->holders)
    g_hash_table_destroy(lk->holders);
  if (lk->holds)
    g_hash_table_destroy(lk->holds);
  g_free(lk->stats);
  g_free(lk);
}

static void configure_lock(zkrc__recipe *r, const void *opts) {
  const zkrc_lock_options *o = opts;
  zkrc_lock *lk = (zkrc_lock *)r;
  lk->on_event = o->on_event;
  lk->event_arg = o->event_arg;
  lk->revocable = o->revocable != 0;
  lk->marker = o->format == ZKRC_LOCK_FORMAT_KAZOO ? "__lock__" : "lock-";
  lk->policy = zkrc__policy_exclusive;
  lk->markers = zkrc__lock_markers;
}

ZKRC__RECIPE_KIND(lock_kind, zkrc_lock, zkrc_lock_options, configure_lock,
                  finalize_lock);

/* A known format, and a revocable lock tells its requests through
 * on_event: it needs one.  (Options that cannot be read are
 * zkrc__recipe_create()'s to refuse.) */
static gboolean lock_options_valid(const zkrc_lock_options *given) {
  zkrc_lock_options o;
  lock_options_defaults(&o);
  if (given == NULL || !zkrc__options_take(&o, sizeof o, given))
    return TRUE;
  return (!o.revocable || o.on_event != NULL) &&
         (o.format == ZKRC_LOCK_FORMAT_CURATOR ||
          o.format == ZKRC_LOCK_FORMAT_KAZOO);
}

int zkrc_lock_new(zkrc_lock **out, zkrc_session *s, const char *path,
                  const zkrc_lock_options *opts) {
  if (!lock_options_valid(opts)) {
    if (out)
      *out = NULL;
    return zkrc__fail(ZKRC_EINVAL);
  }
  return zkrc__recipe_create((void **)out, &lock_kind, s, path, opts);
}

int zkrc__lock_new_member(zkrc_lock **out, zkrc_session *s, const char *path,
                          const zkrc_lock_options *opts, const char *marker,
                          zkrc__policy_fn policy) {
  int err = zkrc__recipe_create((void **)out, &lock_kind, s, path, opts);
  if (err == ZKRC_OK) {
    (*out)->marker = marker;
    (*out)->policy = policy;
  }
  return err;
}

int zkrc__lock_new_permits(zkrc_lock **out, zkrc_session *s, const char *path,
                           const zkrc_lock_options *opts, int permits) {
  int err =
      zkrc__lock_new_member(out, s, path, opts, "lease-", zkrc__policy_permits);
  if (err == ZKRC_OK) {
    (*out)->markers = zkrc__lease_markers;
    (*out)->permits = permits;
  }
  return err;
}

/* The calling thread's stake, or NULL. */
static holder *thread_holder_locked(zkrc_lock *lk, uint64_t thread) {
  return lk->holders ? g_hash_table_lookup(lk->holders, &thread) : NULL;
}

/* ------------------------------------------------------------ acquire */

/* What the calling thread holds on a read-write lock's other side: asked
 * before taking this side's mutex, so that the two sides' mutexes are never
 * held together (only the thread itself changes whether it holds a side).
 * Returns whether it has a hold there (held, or lost and not released);
 * *@p writer_node receives the name of its node when @p other is the write
 * side and the hold stands (g_free it), else NULL. */
static gboolean other_side_held(zkrc_lock *other, uint64_t me,
                                char **writer_node) {
  *writer_node = NULL;
  if (other == NULL)
    return FALSE;
  g_mutex_lock(&other->r.o.mu);
  holder *h = thread_holder_locked(other, me);
  gboolean held = h && (h->state == H_HELD || h->state == H_LOST);
  if (held && !other->shared && h->state == H_HELD) {
    char *node = zkrc__holder_node(h);
    *writer_node = node ? g_path_get_basename(node) : NULL;
    g_free(node);
  }
  g_mutex_unlock(&other->r.o.mu);
  return held;
}

/* Returns from a waiting thread's condition wait, for the tests: a
 * hand-over should wake one thread, however many wait. */
static gint thread_wakeups;

guint zkrc__lock_thread_wakeups(void) {
  return (guint)g_atomic_int_get(&thread_wakeups);
}

/* Has @p w's alarm sounded (a lock its thread holds besides was lost)? */
static gboolean alarmed(zkrc__waker *w) {
  if (w->mu == NULL)
    return FALSE;
  g_mutex_lock(w->mu);
  gboolean alarm = w->alarm;
  g_mutex_unlock(w->mu);
  return alarm;
}

/* Sleep on @p w until it is signalled or @p deadline passes (FALSE then);
 * lk->r.mu held on entry and on return.  A waker with a mutex of its own
 * takes that before the lock's is let go: whoever changes the hold signals
 * under both (zkrc__holder_wake_locked), so no signal falls in between. */
static gboolean sleep_locked(zkrc_lock *lk, zkrc__waker *w, int64_t deadline) {
  if (w->mu == NULL)
    return zkrc__cond_wait_until(&w->cond, &lk->r.o.mu, deadline);
  g_mutex_lock(w->mu);
  g_mutex_unlock(&lk->r.o.mu);
  gboolean woken = w->alarm || zkrc__cond_wait_until(&w->cond, w->mu, deadline);
  g_mutex_unlock(w->mu);
  g_mutex_lock(&lk->r.o.mu);
  return woken;
}

/* The loop of wait_turn_locked(), on h->wake. */
static int wait_turn_on_locked(zkrc_lock *lk, holder *h, int timeout_ms,
                               int64_t deadline) {
  for (;;) {
    if (h->state == H_HELD)
      return ZKRC_OK;
    if (h->state == H_FAILED)
      return h->end_err == ZKRC_OK ? ZKRC_ECANCELED : h->end_err;
    /* Granted and lost before this thread woke up (a slow wake-up on a
     * loaded machine, while the lease ran out): not held. */
    if (h->state == H_LOST)
      return h->end_err == ZKRC_OK ? ZKRC_ELOCKLOST : h->end_err;
    if (zkrc__object_ending(&lk->r.o))
      return ZKRC_ECANCELED;
    if (timeout_ms == ZKRC_NO_WAIT && h->behind)
      return ZKRC_ELOCKED;
    if (alarmed(h->wake)) /* another lock of the thread's set was lost */
      return ZKRC_ELOCKLOST;
    gboolean woken = sleep_locked(lk, h->wake, deadline);
    g_atomic_int_inc(&thread_wakeups);
    if (!woken && h->state != H_HELD)
      return ZKRC_ETIMEDOUT;
  }
}

/* Wait while the holder is queued.  Returns ZKRC_OK once it holds the lock,
 * or why it stopped waiting.  The thread waits on a condition of its own
 * (h->wake: @p w, or one made here), which only what concerns its holder
 * signals (hold.c) and zkrc_lock_free(): with thousands of threads queued
 * on one lock object, a hand-over wakes the one thread it admits, not all
 * of them. */
static int wait_turn_locked(zkrc_lock *lk, holder *h, int timeout_ms,
                            int64_t deadline, zkrc__waker *w) {
  zkrc__waker mine = {.mu = NULL};
  if (w == NULL) {
    g_cond_init(&mine.cond);
    w = &mine;
  }
  h->wake = w;
  int err = wait_turn_on_locked(lk, h, timeout_ms, deadline);
  h->wake = NULL;
  if (w == &mine)
    g_cond_clear(&mine.cond);
  return err;
}

/* Leave the queue (give up waiting, or release): delete our node, and
 * while the connection is up wait until the servers confirm, at most
 * @p grace_ms, so that no node outlives the call and another session that
 * looks next sees the lock free.  Called and returns with lk->r.mu held. */
static void withdraw_locked(zkrc_lock *lk, holder *h, int grace_ms) {
  g_hash_table_remove(lk->holders, &h->thread);
  if (h->state == H_HELD || h->state == H_LOST)
    zkrc__lock_stat_released_locked(h);
  h->state = H_RELEASED;
  zkrc__recipe_withdraw_locked(&lk->r, h->c, &h->ended, grace_ms);
}

/* zkrc_lock_acquire(), waiting on @p w (NULL: a condition of its own). */
static int acquire(zkrc_lock *lk, int timeout_ms, zkrc__waker *w) {
  if (lk == NULL || !zkrc__timeout_valid(timeout_ms))
    return zkrc__fail(ZKRC_EINVAL);
  /* A try does not wait for others, but its look at the queue takes a round
   * trip: allow it the session timeout (the connection may be down). */
  int64_t deadline = zkrc__deadline_after(
      timeout_ms == ZKRC_NO_WAIT ? zkrc_session_timeout(lk->r.q.session)
                                 : timeout_ms);
  uint64_t me = current_thread_number();
  char *own_writer = NULL;
  gboolean other_held = other_side_held(lk->other, me, &own_writer);
  g_mutex_lock(&lk->r.o.mu);
  gboolean ending = zkrc__object_ending(&lk->r.o);
  holder *h = ending ? NULL : thread_holder_locked(lk, me);
  int err = ending ? ZKRC_ECANCELED
            : h    ? (h->state == H_LOST    ? ZKRC_ELOCKLOST
                      : h->count == INT_MAX ? ZKRC_EOVERFLOW
                                            : ZKRC_OK)
            /* an upgrade: only our own release could admit it */
            : other_held && !lk->shared             ? ZKRC_EDEADLK
            : zkrc__session_closed(lk->r.q.session) ? ZKRC_ECLOSED
                                                    : ZKRC_OK;
  if (h || err != ZKRC_OK) {
    if (err == ZKRC_OK)
      h->count++;
    g_mutex_unlock(&lk->r.o.mu);
    g_free(own_writer);
    return zkrc__fail(err);
  }
  /* the table's reference */
  h = zkrc__lock_new_participant_locked(lk, me, &thread_client, own_writer);
  g_free(own_writer);
  if (lk->holders == NULL)
    lk->holders = g_hash_table_new(g_int64_hash, g_int64_equal);
  g_hash_table_insert(lk->holders, &h->thread, h);
  lk->inside++;
  g_mutex_unlock(&lk->r.o.mu);

  zkrc__contender_start(h->c);

  g_mutex_lock(&lk->r.o.mu);
  err = wait_turn_locked(lk, h, timeout_ms, deadline, w);
  ending = zkrc__object_ending(&lk->r.o);
  if (err == ZKRC_OK && ending)
    err = ZKRC_ECANCELED; /* granted as the lock's free came */
  int zk_rc = h->end_zk;
  if (err == ZKRC_OK) {
    h->count = 1;
    zkrc__lock_stat_delivered_locked(h);
  } else {
    zkrc__lock_stat_gave_up_locked(lk, err);
    /* Its free waits for this thread: never for the network. */
    withdraw_locked(lk, h, ending ? 0 : ABANDON_GRACE_MS);
  }
  /* zkrc_lock_free() waits for the last one to leave (on lk->r.o.cond, which
   * no thread waiting for its turn uses). */
  if (--lk->inside == 0)
    g_cond_broadcast(&lk->r.o.cond);
  g_mutex_unlock(&lk->r.o.mu);
  if (err != ZKRC_OK)
    zkrc__holder_unref(h); /* the table's reference */
  return zk_rc ? zkrc__fail_zk(err, zk_rc) : zkrc__fail(err);
}

int zkrc_lock_acquire(zkrc_lock *lk, int timeout_ms) {
  return acquire(lk, timeout_ms, NULL);
}

int zkrc__lock_acquire_watched(zkrc_lock *lk, int timeout_ms, zkrc__waker *w) {
  return acquire(lk, timeout_ms, w);
}

gboolean zkrc__lock_watch_hold(zkrc_lock *lk, zkrc__waker *w) {
  g_mutex_lock(&lk->r.o.mu);
  holder *h = thread_holder_locked(lk, current_thread_number());
  gboolean held = h && h->state == H_HELD;
  if (h && (held || w == NULL))
    h->wake = w; /* its thread waits in no acquisition of this lock */
  g_mutex_unlock(&lk->r.o.mu);
  return held;
}

/* ------------------------------------------------------------ release */

/* zkrc_lock_release(), waiting at most @p grace_ms for the delete. */
static int release(zkrc_lock *lk, int grace_ms) {
  if (lk == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  uint64_t me = current_thread_number();
  g_mutex_lock(&lk->r.o.mu);
  holder *h = thread_holder_locked(lk, me);
  if (h == NULL || (h->state != H_HELD && h->state != H_LOST)) {
    g_mutex_unlock(&lk->r.o.mu);
    return zkrc__fail(ZKRC_ENOTOWNER);
  }
  int err = h->state == H_LOST ? ZKRC_ELOCKLOST : ZKRC_OK;
  if (--h->count > 0) {
    g_mutex_unlock(&lk->r.o.mu);
    return zkrc__fail(err);
  }
  withdraw_locked(lk, h, grace_ms);
  g_mutex_unlock(&lk->r.o.mu);
  zkrc__holder_unref(h);
  return zkrc__fail(err);
}

int zkrc_lock_release(zkrc_lock *lk) {
  return release(lk, lk ? zkrc__recipe_delete_grace_ms(&lk->r) : 0);
}

int zkrc__lock_release_in_background(zkrc_lock *lk) { return release(lk, 0); }

/* ------------------------------------------------------------ queries */

holder *zkrc__lock_my_holder_locked(zkrc_lock *lk) {
  uint64_t me = current_thread_number();
  g_mutex_lock(&lk->r.o.mu);
  holder *h = thread_holder_locked(lk, me);
  if (h && (h->state == H_HELD || h->state == H_LOST))
    return h;
  g_mutex_unlock(&lk->r.o.mu);
  return NULL;
}

/* Microseconds left of the calling thread's hold's lease: 0 when it holds
 * nothing.  The lease says no the moment it runs out (also after a
 * freeze), even before the session has declared itself lost and told the
 * holder. */
static int64_t my_lease_left(zkrc_lock *lk) {
  holder *h = lk ? zkrc__lock_my_holder_locked(lk) : NULL;
  if (h == NULL)
    return 0;
  int64_t left = zkrc__holder_lease_left_locked(h);
  g_mutex_unlock(&lk->r.o.mu);
  return left;
}

int zkrc_lock_is_held(zkrc_lock *lk) { return my_lease_left(lk) > 0; }

int zkrc_lock_lease_remaining(zkrc_lock *lk) {
  return (int)(my_lease_left(lk) / 1000);
}

int zkrc_lock_depth(zkrc_lock *lk) {
  if (lk == NULL)
    return 0;
  holder *h = zkrc__lock_my_holder_locked(lk);
  if (h == NULL)
    return 0;
  int count = h->count;
  g_mutex_unlock(&lk->r.o.mu);
  return count;
}

int zkrc_lock_token(zkrc_lock *lk, int64_t *token) {
  if (lk == NULL || token == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  holder *h = zkrc__lock_my_holder_locked(lk);
  if (h == NULL)
    return zkrc__fail(ZKRC_ENOTOWNER);
  int err = h->state == H_HELD ? ZKRC_OK : ZKRC_ELOCKLOST;
  if (err == ZKRC_OK)
    *token = h->token;
  g_mutex_unlock(&lk->r.o.mu);
  return zkrc__fail(err);
}

int zkrc_lock_node(zkrc_lock *lk, char **path) {
  if (lk == NULL || path == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  *path = NULL;
  holder *h = zkrc__lock_my_holder_locked(lk);
  if (h == NULL)
    return zkrc__fail(ZKRC_ENOTOWNER);
  int err = h->state == H_HELD ? ZKRC_OK : ZKRC_ELOCKLOST;
  if (err == ZKRC_OK) {
    char *node = zkrc__holder_node(h);
    *path = node ? strdup(node) : NULL;
    g_free(node);
  }
  g_mutex_unlock(&lk->r.o.mu);
  if (err == ZKRC_OK && *path == NULL)
    err = ZKRC_ENOMEM;
  return zkrc__fail(err);
}

const char *zkrc_lock_path(zkrc_lock *lk) { return lk ? lk->r.q.dir : NULL; }

int zkrc_lock_participants(zkrc_lock *lk, char ***ids, size_t *count,
                           int timeout_ms) {
  return zkrc__recipe_participants(lk ? &lk->r : NULL,
                                   lk ? lk->markers : zkrc__lock_markers, ids,
                                   count, timeout_ms);
}

/* --------------------------------------------------------------- free */

void zkrc_lock_free(zkrc_lock *lk) {
  if (lk && lk->other == NULL)
    zkrc__lock_free(lk);
}

/* Every thread waiting for its turn, to see the lock being freed. */
static void wake_every_thread_locked(zkrc_lock *lk) {
  GHashTableIter it;
  gpointer h;
  if (lk->holders == NULL)
    return;
  g_hash_table_iter_init(&it, lk->holders);
  while (g_hash_table_iter_next(&it, NULL, &h))
    zkrc__holder_wake_locked(h);
}

/* Give up what threads hold (@p all: also the holders of threads still
 * inside zkrc_lock_acquire(), none left once it waited for them; else only
 * those that returned with it, the others give theirs up themselves) and
 * the non-blocking holds, in the background: the deletes are sent, never
 * awaited (the session's reaper takes over when one fails).  lk->r.o.mu
 * held; returns the holders given up, whose table references the caller
 * drops once it let the mutex go. */
static GList *release_everything_locked(zkrc_lock *lk, gboolean all) {
  wake_every_thread_locked(lk);
  if (lk->drop_async)
    lk->drop_async(lk);
  GList *left = lk->holders ? g_hash_table_get_values(lk->holders) : NULL;
  GList *given = NULL;
  for (GList *l = left; l; l = l->next) {
    holder *h = l->data;
    if (all || h->count > 0) {
      withdraw_locked(lk, h, 0);
      given = g_list_prepend(given, h);
    }
  }
  g_list_free(left);
  return given;
}

void zkrc__lock_free(zkrc_lock *lk) {
  if (lk == NULL)
    return;
  g_mutex_lock(&lk->r.o.mu);
  /* Nothing more is told; a callback running on another thread ends
   * first. */
  zkrc__object_close_locked(&lk->r.o);
  wake_every_thread_locked(lk);
  while (lk->inside > 0) /* waiting threads return ZKRC_ECANCELED */
    g_cond_wait(&lk->r.o.cond, &lk->r.o.mu);
  /* Release what is still held, by any thread, as zkrc_lock_release()
   * would, but without waiting: the holders keep the lock's memory until
   * their contenders ended. */
  GList *left = release_everything_locked(lk, TRUE);
  g_mutex_unlock(&lk->r.o.mu);
  g_list_free_full(left, (GDestroyNotify)zkrc__holder_unref);
  zkrc__lock_unref(lk);
}

void zkrc__lock_free_async(zkrc_lock *lk, zkrc_callback_fn done, void *arg) {
  g_mutex_lock(&lk->r.o.mu);
  /* Threads inside zkrc_lock_acquire() see it, give up their nodes and
   * return ZKRC_ECANCELED (their holders keep the lock alive meanwhile);
   * the object tells `done` once the last contender ended. */
  zkrc__object_detach_locked(&lk->r.o, done, arg);
  GList *left = release_everything_locked(lk, FALSE);
  g_mutex_unlock(&lk->r.o.mu);
  g_list_free_full(left, (GDestroyNotify)zkrc__holder_unref);
  zkrc__lock_unref(lk); /* the application's reference */
}

int zkrc_lock_free_async(zkrc_lock *lk, zkrc_callback_fn done, void *arg) {
  if (lk == NULL || done == NULL || lk->other)
    return zkrc__fail(ZKRC_EINVAL);
  zkrc__lock_free_async(lk, done, arg);
  return ZKRC_OK;
}

int zkrc_lock_list(zkrc_session *s, const char *path, zkrc_participant **list,
                   size_t *count, int timeout_ms) {
  return zkrc__queue_list_checked(s, path, zkrc__lock_markers, timeout_ms, list,
                                  count);
}
