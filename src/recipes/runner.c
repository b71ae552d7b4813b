/*
 * The runner (zkrecipes/runner.h): its public calls, and the callbacks of
 * the lock or election it runs on (the member), which only record what
 * they were told and wake the runner's thread (runner_turn.c).  Built on
 * the public lock and election objects: their queue, their nodes, their
 * lease; nothing of its own on the wire.
 */
#include "config.h"

#include <glib.h>

#include "core/object.h"
#include "core/util.h"
#include "queue/admission.h"
#include "recipes/lock_member.h"
#include "recipes/recipe.h"
#include "recipes/runner_private.h"
#include "session/session_internal.h"
#include "zkrecipes/error.h"

typedef struct runner_ev {
  zkrc__object_event base;
  zkrc_runner_event ev;
} runner_ev;

const char *zkrc_runner_event_name(zkrc_runner_event_type type) {
  switch (type) {
  case ZKRC_RUNNER_STARTED:
    return "started";
  case ZKRC_RUNNER_CANCELLED:
    return "cancelled";
  case ZKRC_RUNNER_RETURNED:
    return "returned";
  case ZKRC_RUNNER_LOST:
    return "lost";
  case ZKRC_RUNNER_CLOSED:
    return "closed";
  }
  return "unknown";
}

static void runner_defaults(zkrc_runner_options *o) {
  zkrc__recipe_options_init(o, sizeof *o);
  o->kind = ZKRC_RUNNER_LOCK;
}

void zkrc_runner_options_init_sized(zkrc_runner_options *opts, size_t size) {
  zkrc_runner_options full;
  runner_defaults(&full);
  zkrc__options_give(opts, size, &full, sizeof full);
}

/* On the executor, without a mutex: the application's callback. */
static void runner_ev_tell(zkrc__object *o, zkrc__object_event *base) {
  zkrc_runner *r = (zkrc_runner *)o;
  if (r->fn)
    r->fn(r, &((runner_ev *)base)->ev, r->arg);
}

void zkrc__runner_tell_locked(zkrc_runner *r, zkrc_runner_event_type type,
                              int reason, int zk_error, int64_t token,
                              int result) {
  if (r->fn == NULL)
    return;
  runner_ev *e = zkrc__object_event_new(sizeof *e, runner_ev_tell, NULL);
  e->ev.type = type;
  e->ev.reason = reason;
  e->ev.zk_error = zk_error;
  e->ev.token = token;
  e->ev.result = result;
  e->ev.turns = r->turns;
  zkrc__object_tell_locked(&r->o, &e->base);
}

/* The lock's completion (executor): record the grant or the failure.  A
 * grant that comes after the runner stopped is given back at once. */
static void on_acquired(zkrc_lock *lk, zkrc_lock_hold *hold,
                        const zkrc_lock_acquired_info *info, void *arg) {
  (void)lk;
  zkrc_runner *r = arg;
  g_mutex_lock(&r->o.mu);
  r->asked = 0;
  if (info->status == ZKRC_OK && r->stop) {
    (void)zkrc_lock_hold_release(hold);
    r->hold = NULL;
  } else if (info->status == ZKRC_OK) {
    r->hold = hold;
    r->granted = 1;
    r->grant_token = info->token;
  } else {
    r->hold = NULL; /* freed when this returns */
    r->failed = 1;
    r->fail_reason = info->status;
    r->fail_zk = info->zk_error;
  }
  g_cond_broadcast(&r->o.cond);
  g_mutex_unlock(&r->o.mu);
  zkrc__object_unref(&r->o); /* zkrc__runner_ask_locked's */
}

int zkrc__runner_ask_locked(zkrc_runner *r) {
  zkrc__object_ref(&r->o); /* on_acquired's */
  r->granted = 0;
  r->failed = 0;
  int rc = zkrc_lock_acquire_async(r->lk, ZKRC_WAIT_FOREVER, on_acquired, r,
                                   &r->hold);
  if (rc != ZKRC_OK) {
    r->hold = NULL;
    zkrc__object_unref(&r->o);
    return rc;
  }
  r->asked = 1;
  return ZKRC_OK;
}

/* The lock's events (executor): a LOST of the running turn's hold. */
static void on_lock_event(zkrc_lock *lk, const zkrc_lock_event *ev, void *arg) {
  (void)lk;
  zkrc_runner *r = arg;
  if (ev->type != ZKRC_LOCK_LOST)
    return;
  g_mutex_lock(&r->o.mu);
  if (r->running && ev->hold == r->hold && ev->token == r->token && !r->lost) {
    r->lost = 1;
    r->lost_reason = ev->reason;
    r->lost_zk = ev->zk_error;
    g_cond_broadcast(&r->o.cond);
  }
  g_mutex_unlock(&r->o.mu);
}

/* The election's events (executor): leadership comes and goes. */
static void on_election_event(zkrc_election *e, const zkrc_election_event *ev,
                              void *arg) {
  (void)e;
  zkrc_runner *r = arg;
  g_mutex_lock(&r->o.mu);
  switch (ev->type) {
  case ZKRC_ELECTION_ELECTED:
    r->granted = 1;
    r->grant_token = ev->token;
    break;
  case ZKRC_ELECTION_REVOKED:
    if (r->granted && r->grant_token == ev->token)
      r->granted = 0;
    if (r->running && r->token == ev->token && ev->reason != ZKRC_OK &&
        !r->lost) {
      r->lost = 1;
      r->lost_reason = ev->reason;
      r->lost_zk = ev->zk_error;
    }
    break;
  case ZKRC_ELECTION_FAILED:
    r->failed = 1;
    r->fail_reason = ev->reason;
    r->fail_zk = ev->zk_error;
    if (r->running && !r->lost) {
      r->lost = 1;
      r->lost_reason = ev->reason;
      r->lost_zk = ev->zk_error;
    }
    break;
  }
  g_cond_broadcast(&r->o.cond);
  g_mutex_unlock(&r->o.mu);
}

static void runner_finalize(zkrc__object *o) {
  zkrc_runner *r = (zkrc_runner *)o;
  zkrc__session_unref_recipe(r->s);
  g_free(r->path);
  g_free(r);
}

/* The fields a lock's and an election's options share. */
#define MEMBER_OPTIONS(mo, o, fn, r)                                           \
  do {                                                                         \
    (mo).participant_id = (o)->participant_id;                                 \
    (mo).acl = (o)->acl;                                                       \
    (mo).on_event = (fn);                                                      \
    (mo).event_arg = (r);                                                      \
  } while (0)

/* The member, made as the options say. */
static int member_new(zkrc_runner *r, zkrc_session *s, const char *path,
                      const zkrc_runner_options *o) {
  if (o->kind == ZKRC_RUNNER_ELECTION) {
    zkrc_election_options eo;
    zkrc_election_options_init(&eo);
    MEMBER_OPTIONS(eo, o, on_election_event, r);
    eo.no_rejoin = !o->requeue;
    return zkrc_election_new(&r->e, s, path, &eo);
  }
  zkrc_lock_options lo;
  zkrc_lock_options_init(&lo);
  MEMBER_OPTIONS(lo, o, on_lock_event, r);
  if (o->kind == ZKRC_RUNNER_KAZOO_LOCK)
    return zkrc__lock_new_member(&r->lk, s, path, &lo, "__lock__",
                                 zkrc__policy_exclusive);
  return zkrc_lock_new(&r->lk, s, path, &lo);
}

int zkrc_runner_new(zkrc_runner **out, zkrc_session *s, const char *path,
                    zkrc_runner_work_fn work, void *work_arg,
                    const zkrc_runner_options *opts) {
  if (out)
    *out = NULL;
  zkrc_runner_options o;
  runner_defaults(&o);
  if (out == NULL || s == NULL || path == NULL || work == NULL ||
      !zkrc__options_take(&o, sizeof o, opts) ||
      (o.kind != ZKRC_RUNNER_LOCK && o.kind != ZKRC_RUNNER_KAZOO_LOCK &&
       o.kind != ZKRC_RUNNER_ELECTION))
    return zkrc__fail(ZKRC_EINVAL);
  zkrc_runner *r = g_new0(zkrc_runner, 1);
  zkrc__object_init(&r->o, zkrc__session_executor(s), runner_finalize);
  r->s = zkrc__session_ref_recipe(s); /* its executor outlives the runner */
  r->kind = o.kind;
  r->requeue = o.requeue != 0;
  r->work = work;
  r->work_arg = work_arg;
  r->fn = o.on_event;
  r->arg = o.event_arg;
  r->path = g_strdup(path);
  int err = member_new(r, s, path, &o);
  if (err != ZKRC_OK) {
    zkrc__object_unref(&r->o);
    return err;
  }
  r->thread = g_thread_try_new("zkrc-runner", zkrc__runner_main, r, NULL);
  if (r->thread == NULL) {
    zkrc_lock_free(r->lk);
    zkrc_election_free(r->e);
    zkrc__object_unref(&r->o);
    return zkrc__fail(ZKRC_ENOMEM);
  }
  *out = r;
  return ZKRC_OK;
}

static void stop_locked(zkrc_runner *r, int reason) {
  if (!r->stop) {
    r->stop = 1;
    r->stop_reason = reason;
  } else if (reason == ZKRC_ECLOSED) {
    r->stop_reason = reason; /* a free after a cancel */
  }
  g_cond_broadcast(&r->o.cond);
}

int zkrc_runner_cancel(zkrc_runner *r) {
  if (r == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  g_mutex_lock(&r->o.mu);
  stop_locked(r, ZKRC_ECANCELED);
  g_mutex_unlock(&r->o.mu);
  return ZKRC_OK;
}

int zkrc_runner_wait_running(zkrc_runner *r, int timeout_ms) {
  if (r == NULL || !zkrc__timeout_valid(timeout_ms))
    return zkrc__fail(ZKRC_EINVAL);
  int64_t deadline = zkrc__deadline_after(timeout_ms);
  g_mutex_lock(&r->o.mu);
  while (!(r->running && !r->lost) && !r->exited && !r->stop &&
         zkrc__cond_wait_until(&r->o.cond, &r->o.mu, deadline))
    ;
  /* Running, and still held as the member verifies it now (its lease may
   * have run out before LOST reached the runner). */
  gboolean held =
      r->running && !r->lost &&
      (r->lk ? zkrc_lock_hold_is_held(r->hold) : zkrc_election_is_leader(r->e));
  int rc = held                   ? ZKRC_OK
           : r->running           ? ZKRC_ESESSIONLOST
           : r->exited || r->stop ? ZKRC_ESTATE
                                  : ZKRC_ETIMEDOUT;
  g_mutex_unlock(&r->o.mu);
  return rc == ZKRC_OK ? rc : zkrc__fail(rc);
}

int zkrc_runner_is_running(zkrc_runner *r) {
  if (r == NULL)
    return 0;
  g_mutex_lock(&r->o.mu);
  int held =
      r->running && !r->lost &&
      (r->lk ? zkrc_lock_hold_is_held(r->hold) : zkrc_election_is_leader(r->e));
  g_mutex_unlock(&r->o.mu);
  return held;
}

int zkrc_runner_turns(zkrc_runner *r) {
  if (r == NULL)
    return 0;
  g_mutex_lock(&r->o.mu);
  int turns = r->turns;
  g_mutex_unlock(&r->o.mu);
  return turns;
}

const char *zkrc_runner_path(zkrc_runner *r) { return r ? r->path : NULL; }

void zkrc__runner_dispose(zkrc_runner *r, gboolean joined) {
  if (!joined)
    g_thread_unref(r->thread); /* the thread's own: nobody joins it */
  zkrc_lock_free(r->lk);
  zkrc_election_free(r->e);
  g_mutex_lock(&r->o.mu);
  if (r->o.detached)
    zkrc__object_idle_locked(&r->o); /* free_async's done may come */
  g_mutex_unlock(&r->o.mu);
  zkrc__object_unref(&r->o);
}

/* Is the calling thread one that must not wait for the runner's thread:
 * the work function's, or inside one of the runner's callbacks? */
static gboolean cannot_wait_locked(zkrc_runner *r) {
  GThread *self = g_thread_self();
  return zkrc__object_in_callback_locked(&r->o) || self == r->worker ||
         self == r->thread;
}

void zkrc_runner_free(zkrc_runner *r) {
  if (r == NULL)
    return;
  g_mutex_lock(&r->o.mu);
  stop_locked(r, ZKRC_ECLOSED);
  gboolean orphan = cannot_wait_locked(r) && !r->exited;
  zkrc__object_close_locked(&r->o); /* waits for a callback elsewhere */
  r->orphan = orphan;
  g_mutex_unlock(&r->o.mu);
  if (orphan)
    return; /* the thread frees the rest once the function returned */
  g_thread_join(r->thread);
  zkrc__runner_dispose(r, TRUE);
}

int zkrc_runner_free_async(zkrc_runner *r, zkrc_callback_fn done, void *arg) {
  if (r == NULL || done == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  g_mutex_lock(&r->o.mu);
  stop_locked(r, ZKRC_ECLOSED);
  zkrc__object_busy_locked(&r->o); /* the thread's end: dispose's idle */
  zkrc__object_detach_locked(&r->o, done, arg);
  gboolean exited = r->exited;
  r->orphan = !exited;
  g_mutex_unlock(&r->o.mu);
  if (exited) { /* its loop is over: the join does not wait */
    g_thread_join(r->thread);
    zkrc__runner_dispose(r, TRUE);
  }
  return ZKRC_OK;
}
