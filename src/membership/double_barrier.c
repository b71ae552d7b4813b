/*
 * The double barrier (zkrecipes/barrier.h), Curator's
 * DistributedDoubleBarrier and kazoo's DoubleBarrier: the object, its
 * member node (a kept ephemeral node, ephemeral.c: registered by the
 * session's lease, LOST at the lease's end), its events, waits and frees.
 * The protocol's requests are double_barrier_step.c's.
 */
#include "config.h"

#include <string.h>

#include "core/object.h"
#include "core/util.h"
#include "membership/double_barrier_private.h"
#include "session/session_internal.h"
#include "zkrecipes/error.h"
#include "zkrecipes/path.h"

/* The longest kazoo id (the member node's data) we take. */
#define ID_MAX 1024

const char *
zkrc_double_barrier_event_name(zkrc_double_barrier_event_type type) {
  switch (type) {
  case ZKRC_DOUBLE_BARRIER_ENTERED:
    return "entered";
  case ZKRC_DOUBLE_BARRIER_LEFT:
    return "left";
  case ZKRC_DOUBLE_BARRIER_LOST:
    return "lost";
  case ZKRC_DOUBLE_BARRIER_CLOSED:
    return "closed";
  }
  return "unknown";
}

static void db_options_defaults(zkrc_double_barrier_options *opts) {
  memset(opts, 0, sizeof *opts);
  opts->size = sizeof *opts;
  opts->dialect = ZKRC_BARRIER_CURATOR;
}

void zkrc_double_barrier_options_init_sized(zkrc_double_barrier_options *opts,
                                            size_t size) {
  zkrc_double_barrier_options full;
  db_options_defaults(&full);
  zkrc__options_give(opts, size, &full, sizeof full);
}

/* ------------------------------------------------------------- events */

typedef struct db_event {
  zkrc__object_event base;
  zkrc_double_barrier_event ev;
} db_event;

static void db_tell(zkrc__object *o, zkrc__object_event *base) {
  zkrc_double_barrier *b = (zkrc_double_barrier *)o;
  b->on_event(b, &((db_event *)base)->ev, b->event_arg);
}

void zkrc__db_tell_locked(zkrc_double_barrier *b,
                          zkrc_double_barrier_event_type type, int reason,
                          int zk_error) {
  g_cond_broadcast(&b->o.cond);
  if (b->on_event == NULL || b->closed)
    return;
  db_event *r = zkrc__object_event_new(sizeof *r, db_tell, NULL);
  r->ev = (zkrc_double_barrier_event){type, reason, zk_error};
  zkrc__object_tell_locked(&b->o, &r->base);
}

/* Our node's delete (free_async) is over. */
static void node_given_up(void *arg) {
  zkrc_double_barrier *b = arg;
  g_mutex_lock(&b->o.mu);
  b->busy = FALSE;
  b->ours_gone = TRUE;
  zkrc__db_step_locked(b);
  zkrc__object_idle_locked(&b->o);
  g_mutex_unlock(&b->o.mu);
  zkrc__object_unref(&b->o);
}

static void node_dropped(void *arg) {
  zkrc_double_barrier *b = arg;
  zkrc__object_idle(&b->o);
  zkrc__object_unref(&b->o);
}

typedef struct give_up_job {
  zkrc_double_barrier *b;
  zkrc_ephemeral *self;
  gboolean then_step;
} give_up_job;

/* On the executor, without our mutex: zkrc_ephemeral_free_async() takes
 * the node's observer off the session, which waits for the session's
 * worker if it is telling observers right now, and the worker may be
 * waiting for our mutex in on_session (a deadlock, seen when the lease
 * ran out just before an expiry). */
static void give_up_run(void *arg) {
  give_up_job *j = arg;
  zkrc_callback_fn done = j->then_step ? node_given_up : node_dropped;
  if (zkrc_ephemeral_free_async(j->self, done, j->b) != ZKRC_OK)
    done(j->b);
  g_free(j);
}

void zkrc__db_give_up_node_locked(zkrc_double_barrier *b, gboolean then_step) {
  zkrc_ephemeral *self = b->self;
  b->self = NULL;
  b->registered = FALSE;
  if (self == NULL)
    return;
  zkrc__object_busy_locked(&b->o);
  zkrc__object_ref(&b->o);
  if (then_step)
    b->busy = TRUE;
  give_up_job *j = g_new(give_up_job, 1);
  *j = (give_up_job){b, self, then_step};
  zkrc__object_post_locked(&b->o, give_up_run, j);
}

void zkrc__db_lost_locked(zkrc_double_barrier *b, int reason, int zk_error) {
  if (b->phase == ZKRC__DB_LOST || b->phase == ZKRC__DB_LEFT)
    return;
  b->phase = ZKRC__DB_LOST;
  b->reason = reason;
  b->zk_error = zk_error;
  zkrc__db_quiet_locked(b);
  zkrc__db_tell_locked(b, ZKRC_DOUBLE_BARRIER_LOST, reason, zk_error);
  zkrc__db_give_up_node_locked(b, FALSE);
}

static void closed_locked(zkrc_double_barrier *b, int reason, int zk_error) {
  if (b->closed)
    return;
  zkrc__db_quiet_locked(b);
  zkrc__db_tell_locked(b, ZKRC_DOUBLE_BARRIER_CLOSED, reason, zk_error);
  b->closed = TRUE;
}

/* Our node's events, on the executor. */
static void on_self(zkrc_ephemeral *e, const zkrc_ephemeral_event *ev,
                    void *arg) {
  zkrc_double_barrier *b = arg;
  g_mutex_lock(&b->o.mu);
  if (b->self != e || zkrc__object_ending(&b->o)) {
    g_mutex_unlock(&b->o.mu);
    return;
  }
  switch (ev->type) {
  case ZKRC_EPHEMERAL_REGISTERED:
    b->registered = TRUE;
    zkrc__db_step_locked(b);
    break;
  case ZKRC_EPHEMERAL_LOST:
    b->registered = FALSE;
    /* "ready" seen while our node was there says nothing once it is gone:
     * look at it again when it is back. */
    if (b->phase == ZKRC__DB_ENTERING)
      b->ready_seen = FALSE;
    /* Before ENTERED nothing was claimed: wait for the node again. */
    if (b->phase == ZKRC__DB_ENTERED || b->phase == ZKRC__DB_LEAVING)
      zkrc__db_lost_locked(b, ev->reason, ev->zk_error);
    break;
  case ZKRC_EPHEMERAL_CLOSED:
    closed_locked(b, ev->reason, ev->zk_error);
    break;
  }
  g_mutex_unlock(&b->o.mu);
}

/* The session's events, on its worker: a connection back (or a new
 * session) may have lost a watch, so look again; a close ends it. */
static void on_session(zkrc_session *s, zkrc_session_event_type ev,
                       uint64_t generation, void *arg) {
  (void)generation;
  zkrc_double_barrier *b = arg;
  int reason, zk_error;
  g_mutex_lock(&b->o.mu);
  switch ((int)ev) {
  case ZKRC_SESSION_EVENT_CONNECTED:
  case ZKRC_SESSION_EVENT_RECONNECTED:
    zkrc__db_step_locked(b);
    break;
  case ZKRC_SESSION_EVENT_CLOSED:
  case ZKRC_SESSION_EVENT_AUTH_FAILED:
    zkrc__session_event_reason(s, ev, &reason, &zk_error);
    closed_locked(b, reason, zk_error);
    break;
  default:
    break;
  }
  g_mutex_unlock(&b->o.mu);
}

/* --------------------------------------------------------- making one */

static void db_finalize(zkrc__object *o) {
  zkrc_double_barrier *b = (zkrc_double_barrier *)o;
  zkrc__acl_unref(b->acl);
  zkrc__session_unref_recipe(b->s);
  g_free(b->path);
  g_free(b->name);
  g_free(b->ready);
  g_free(b);
}

/* Our node's name in @p dialect (g_free it). */
static char *node_name(zkrc_barrier_dialect dialect) {
  char *uuid = zkrc__uuid();
  if (dialect == ZKRC_BARRIER_KAZOO) { /* uuid4().hex */
    char *w = uuid;
    for (const char *r = uuid; *r; r++)
      if (*r != '-')
        *w++ = *r;
    *w = '\0';
  }
  return uuid;
}

static gboolean id_valid(const char *id) {
  return id == NULL || (id[0] != '\0' && strlen(id) <= ID_MAX);
}

/* Start our node: kazoo's carries the id, Curator's nothing. */
static int start_node(zkrc_double_barrier *b, const char *id,
                      const struct ACL_vector *acl) {
  zkrc_ephemeral_options eo;
  zkrc_ephemeral_options_init(&eo);
  eo.acl = acl;
  eo.on_event = on_self;
  eo.event_arg = b;
  char *node = g_strdup_printf("%s/%s", b->path, b->name);
  char *def = NULL;
  const char *data = NULL;
  if (b->dialect == ZKRC_BARRIER_KAZOO)
    data = id ? id : (def = zkrc__default_participant_id());
  int rc = zkrc_ephemeral_new(&b->self, b->s, node, data,
                              data ? strlen(data) : 0, &eo);
  g_free(def);
  g_free(node);
  return rc;
}

int zkrc_double_barrier_new(zkrc_double_barrier **out, zkrc_session *s,
                            const char *path, int members,
                            const zkrc_double_barrier_options *opts) {
  zkrc_double_barrier_options o;
  db_options_defaults(&o);
  if (out == NULL || s == NULL || zkrc_path_validate(path, NULL) != ZKRC_OK ||
      strcmp(path, "/") == 0 || members < 1 ||
      !zkrc__options_take(&o, sizeof o, opts) || !id_valid(o.id) ||
      (o.dialect != ZKRC_BARRIER_CURATOR && o.dialect != ZKRC_BARRIER_KAZOO) ||
      (o.acl != NULL && !zkrc__acl_valid(o.acl)))
    return zkrc__fail(ZKRC_EINVAL);
  if (zkrc__session_closed(s))
    return zkrc__fail(ZKRC_ECLOSED);
  zkrc_double_barrier *b = g_new0(zkrc_double_barrier, 1);
  b->s = zkrc__session_ref_recipe(s);
  b->path = g_strdup(path);
  b->name = node_name(o.dialect);
  b->ready = g_strdup_printf("%s/ready", path);
  b->members = members;
  b->dialect = o.dialect;
  b->acl = zkrc__acl_new(o.acl);
  b->on_event = o.on_event;
  b->event_arg = o.event_arg;
  b->phase = ZKRC__DB_ENTERING;
  b->retry_ms = 50;
  b->last_listed = G_MAXINT;
  zkrc__object_init(&b->o, zkrc__session_executor(s), db_finalize);
  g_mutex_lock(&b->o.mu);
  int rc = start_node(b, o.id, o.acl);
  g_mutex_unlock(&b->o.mu);
  gboolean closed = FALSE;
  if (rc == ZKRC_OK) {
    zkrc__object_ref(&b->o); /* the observer's */
    b->observer = zkrc__session_observe(s, on_session, b, &closed);
  }
  if (rc != ZKRC_OK || closed) {
    if (b->observer) {
      zkrc__session_unobserve(s, b->observer);
      zkrc__object_unref(&b->o);
    }
    g_mutex_lock(&b->o.mu);
    zkrc__object_close_locked(&b->o); /* nothing told */
    g_mutex_unlock(&b->o.mu);
    zkrc_ephemeral_free(b->self);
    zkrc__object_unref(&b->o);
    return zkrc__fail(rc != ZKRC_OK ? rc : ZKRC_ECLOSED);
  }
  *out = b;
  return ZKRC_OK;
}

/* ------------------------------------------------------------ waiting */

/* What a wait for @p entered (else: left) returns now, or 1 to go on. */
static int outcome_locked(zkrc_double_barrier *b, gboolean entered) {
  if (entered ? b->entered : b->phase == ZKRC__DB_LEFT)
    return ZKRC_OK;
  if (b->phase == ZKRC__DB_LOST)
    return zkrc__fail_zk(b->reason, b->zk_error);
  if (b->closed || zkrc__object_ending(&b->o))
    return zkrc__fail(ZKRC_ECLOSED);
  return 1;
}

static int wait_for(zkrc_double_barrier *b, gboolean entered, int timeout_ms) {
  int64_t deadline = zkrc__deadline_after(timeout_ms);
  int rc;
  while ((rc = outcome_locked(b, entered)) == 1)
    if (!zkrc__cond_wait_until(&b->o.cond, &b->o.mu, deadline)) {
      rc = outcome_locked(b, entered);
      if (rc == 1)
        rc = zkrc__fail(ZKRC_ETIMEDOUT);
      break;
    }
  return rc;
}

int zkrc_double_barrier_wait_entered(zkrc_double_barrier *b, int timeout_ms) {
  if (b == NULL || !zkrc__timeout_valid(timeout_ms))
    return zkrc__fail(ZKRC_EINVAL);
  zkrc__object_ref(&b->o); /* a free from another thread wakes us */
  g_mutex_lock(&b->o.mu);
  int rc = wait_for(b, TRUE, timeout_ms);
  g_mutex_unlock(&b->o.mu);
  zkrc__object_unref(&b->o);
  return rc;
}

static int leave_or_wait(zkrc_double_barrier *b, gboolean start,
                         int timeout_ms) {
  if (b == NULL || !zkrc__timeout_valid(timeout_ms))
    return zkrc__fail(ZKRC_EINVAL);
  zkrc__object_ref(&b->o);
  g_mutex_lock(&b->o.mu);
  int rc = outcome_locked(b, FALSE);
  if (rc == 1 && (start ? !b->entered : !b->leave_called))
    rc = zkrc__fail(ZKRC_ESTATE);
  if (rc == 1 && start && b->phase == ZKRC__DB_ENTERED) {
    b->leave_called = TRUE;
    b->phase = ZKRC__DB_LEAVING;
    zkrc__db_step_locked(b);
  }
  if (rc == 1)
    rc = wait_for(b, FALSE, timeout_ms);
  g_mutex_unlock(&b->o.mu);
  zkrc__object_unref(&b->o);
  return rc;
}

int zkrc_double_barrier_leave(zkrc_double_barrier *b, int timeout_ms) {
  return leave_or_wait(b, TRUE, timeout_ms);
}

int zkrc_double_barrier_wait_left(zkrc_double_barrier *b, int timeout_ms) {
  return leave_or_wait(b, FALSE, timeout_ms);
}

const char *zkrc_double_barrier_path(zkrc_double_barrier *b) {
  return b ? b->path : NULL;
}

const char *zkrc_double_barrier_node(zkrc_double_barrier *b) {
  return b ? b->name : NULL;
}

/* ------------------------------------------------------------ freeing */

/* Stop hearing of the session and forget the watch and the timer; our
 * node is returned for the caller to give up. */
static zkrc_ephemeral *stop(zkrc_double_barrier *b) {
  zkrc__session_unobserve(b->s, b->observer); /* not under o.mu */
  g_mutex_lock(&b->o.mu);
  zkrc__db_quiet_locked(b);
  zkrc_ephemeral *self = b->self;
  b->self = NULL;
  g_mutex_unlock(&b->o.mu);
  zkrc__object_unref(&b->o); /* the observer's */
  return self;
}

void zkrc_double_barrier_free(zkrc_double_barrier *b) {
  if (b == NULL)
    return;
  g_mutex_lock(&b->o.mu);
  zkrc__object_close_locked(&b->o); /* no event after this returns */
  g_mutex_unlock(&b->o.mu);
  zkrc_ephemeral_free(stop(b)); /* not under o.mu: it waits for on_self */
  zkrc__object_unref(&b->o);    /* the owner's */
}

/* Behind the events queued before free_async. */
static void free_parts_async(void *arg) {
  zkrc_double_barrier *b = arg;
  zkrc_ephemeral *self = stop(b);
  zkrc__object_ref(&b->o); /* node_dropped's */
  if (self == NULL || zkrc_ephemeral_free_async(self, node_dropped, b) != 0)
    node_dropped(b);
}

int zkrc_double_barrier_free_async(zkrc_double_barrier *b,
                                   zkrc_callback_fn done, void *arg) {
  if (b == NULL || done == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  g_mutex_lock(&b->o.mu);
  zkrc__object_busy_locked(&b->o); /* until free_parts_async is over */
  zkrc__object_detach_locked(&b->o, done, arg);
  zkrc__object_post_locked(&b->o, free_parts_async, b);
  g_mutex_unlock(&b->o.mu);
  zkrc__object_unref(&b->o); /* the owner's */
  return ZKRC_OK;
}
