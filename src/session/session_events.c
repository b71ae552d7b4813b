/*
 * What a session tells: its events to the application's listeners (on the
 * executor) and to the recipes' observers (on the worker, in order), and
 * the names of events and states.
 */
#include "config.h"

#include "core/log_internal.h"
#include "session/session_private.h"
#include "core/util.h"
#include "zkrecipes.h"

typedef struct listener {
  unsigned long id;
  zkrc_session_event_fn fn;
  void *arg;
} listener;

typedef struct observer {
  unsigned long id;
  zkrc__observer_fn fn;
  void *arg;
} observer;

typedef struct listener_call {
  zkrc__object_event base;
  unsigned long id;
  zkrc_session_event ev;
} listener_call;

const char *zkrc_session_event_name(zkrc_session_event_type type) {
  static const char *const names[] = {
      [ZKRC_SESSION_EVENT_CONNECTED] = "connected",
      [ZKRC_SESSION_EVENT_SUSPENDED] = "suspended",
      [ZKRC_SESSION_EVENT_RECONNECTED] = "reconnected",
      [ZKRC_SESSION_EVENT_LOST] = "lost",
      [ZKRC_SESSION_EVENT_EXPIRED] = "expired",
      [ZKRC_SESSION_EVENT_AUTH_FAILED] = "auth-failed",
      [ZKRC_SESSION_EVENT_CLOSED] = "closed",
      [ZKRC_SESSION_EVENT_SERVERS_CHANGED] = "servers-changed"};
  if ((unsigned)type < G_N_ELEMENTS(names) && names[type])
    return names[type];
  return "unknown";
}

const char *zkrc_session_state_name(zkrc_session_state st) {
  static const char *const names[] = {[ZKRC_SESSION_CONNECTING] = "connecting",
                                      [ZKRC_SESSION_CONNECTED] = "connected",
                                      [ZKRC_SESSION_SUSPENDED] = "suspended",
                                      [ZKRC_SESSION_CLOSED] = "closed"};
  if ((unsigned)st < G_N_ELEMENTS(names) && names[st])
    return names[st];
  return "unknown";
}

/* Why an event of @p type happened, as a zkrc error and ZooKeeper's code
 * (zkrc_session_event).  A CLOSED that ends a session that closed itself
 * carries the reason of the event that ended it (@p end). */
static void event_reason(zkrc_session_event_type type,
                         zkrc_session_event_type end, int *reason,
                         int *zk_error);

void zkrc__session_event_reason(zkrc_session *s, zkrc_session_event_type type,
                                int *reason, int *zk_error) {
  g_mutex_lock(&s->o.mu);
  zkrc_session_event_type end = s->end_event;
  g_mutex_unlock(&s->o.mu);
  event_reason(type, end, reason, zk_error);
}

static void event_reason(zkrc_session_event_type type,
                         zkrc_session_event_type end, int *reason,
                         int *zk_error) {
  *reason = ZKRC_OK;
  *zk_error = ZOK;
  switch (type) {
  case ZKRC_SESSION_EVENT_SUSPENDED:
    *reason = ZKRC_ECONNLOSS;
    *zk_error = ZCONNECTIONLOSS;
    break;
  case ZKRC_SESSION_EVENT_LOST:
    *reason = ZKRC_ESESSIONLOST;
    break;
  case ZKRC_SESSION_EVENT_EXPIRED:
    *reason = ZKRC_ESESSIONEXPIRED;
    *zk_error = ZSESSIONEXPIRED;
    break;
  case ZKRC_SESSION_EVENT_AUTH_FAILED:
    *reason = ZKRC_EAUTHFAILED;
    *zk_error = ZAUTHFAILED;
    break;
  case ZKRC_SESSION_EVENT_CLOSED:
    if (end == ZKRC_SESSION_EVENT_CLOSED)
      *reason = ZKRC_ECLOSED;
    else
      event_reason(end, end, reason, zk_error);
    break;
  default:
    break;
  }
}

/* A listener is looked up when its event is told: one removed meanwhile
 * hears nothing more. */
static void listener_call_tell(zkrc__object *o, zkrc__object_event *ev) {
  listener_call *lc = (listener_call *)ev;
  zkrc_session *s = (zkrc_session *)o;
  zkrc_session_event_fn fn = NULL;
  void *arg = NULL;
  g_mutex_lock(&s->o.mu);
  for (guint i = 0; i < s->listeners->len; i++) {
    listener *l = g_ptr_array_index(s->listeners, i);
    if (l->id == lc->id) {
      fn = l->fn;
      arg = l->arg;
    }
  }
  g_mutex_unlock(&s->o.mu);
  if (fn)
    fn(s, &lc->ev, arg);
}

/* A loss the lapse timer declared has reached the executor, after every
 * recipe's LOST posted before it (their observers ran first): how long
 * after the lapse was due, and was it within the allowance? */
static void loss_probe_tell(zkrc__object *o, zkrc__object_event *ev) {
  (void)ev;
  zkrc_session *s = (zkrc_session *)o;
  int64_t now = g_get_monotonic_time();
  g_mutex_lock(&s->o.mu);
  if (s->lapse_due_us != 0) {
    int64_t late = now - s->lapse_due_us;
    zkrc__histogram_record(&s->loss_delivery, late);
    if (late > s->lapse_allowance_us)
      s->n_late_losses++;
    s->lapse_due_us = 0;
  }
  g_mutex_unlock(&s->o.mu);
  /* Everyone told: the lapsed handle may go, and its nodes with it. */
  zkrc__session_run_on_worker(s, zkrc__session_loss_told, s);
}

static void post_to_listeners_locked(zkrc_session *s,
                                     zkrc_session_event_type type) {
  zkrc_session_event ev = {.type = type};
  if (type == ZKRC_SESSION_EVENT_LOST && s->lapse_due_us != 0)
    zkrc__object_tell_locked(&s->o,
                             zkrc__object_event_new(sizeof(zkrc__object_event),
                                                    loss_probe_tell, NULL));
  event_reason(type, s->end_event, &ev.reason, &ev.zk_error);
  ev.session_id = s->last_session_id;
  for (guint i = 0; i < s->listeners->len; i++) {
    listener *l = g_ptr_array_index(s->listeners, i);
    listener_call *lc =
        zkrc__object_event_new(sizeof *lc, listener_call_tell, NULL);
    lc->id = l->id;
    lc->ev = ev;
    zkrc__object_tell_locked(&s->o, &lc->base);
  }
}

static void post_to_listeners(zkrc_session *s, zkrc_session_event_type type) {
  g_mutex_lock(&s->o.mu);
  post_to_listeners_locked(s, type);
  g_mutex_unlock(&s->o.mu);
}

void zkrc__session_tell_servers_changed(zkrc_session *s) {
  g_mutex_lock(&s->o.mu);
  /* Under the mutex that sets CLOSED before CLOSED is posted. */
  if (s->state != ZKRC_SESSION_CLOSED)
    post_to_listeners_locked(s, ZKRC_SESSION_EVENT_SERVERS_CHANGED);
  g_mutex_unlock(&s->o.mu);
}

void zkrc__session_notify_observers(zkrc_session *s, zkrc_session_event_type ev,
                                    uint64_t generation) {
  g_mutex_lock(&s->o.mu);
  GPtrArray *copy = g_ptr_array_new_with_free_func(g_free);
  GHashTableIter it;
  gpointer value;
  g_hash_table_iter_init(&it, s->observers);
  while (g_hash_table_iter_next(&it, NULL, &value))
    g_ptr_array_add(copy, g_memdup2(value, sizeof(observer)));
  s->notifying = TRUE;
  g_mutex_unlock(&s->o.mu);

  for (guint i = 0; i < copy->len; i++) {
    observer *o = g_ptr_array_index(copy, i);
    /* An observer removed by an earlier one in this round is skipped. */
    g_mutex_lock(&s->o.mu);
    gboolean still_there = g_hash_table_contains(s->observers, &o->id);
    g_mutex_unlock(&s->o.mu);
    if (still_there)
      o->fn(s, ev, generation, o->arg);
  }

  g_mutex_lock(&s->o.mu);
  s->notifying = FALSE;
  g_cond_broadcast(&s->o.cond);
  g_mutex_unlock(&s->o.mu);
  g_ptr_array_free(copy, TRUE);
}

/* The library's line about a session event, at log.h's levels: a session
 * lost (its lease ran out) or expired failed for good (ERROR: every
 * ephemeral node, hold and leadership of it is gone); a connection
 * dropped is a WARN, its return a NOTICE, the rest INFO (quiet by
 * default: only drops and losses are told). */
static void log_session_event(zkrc_session *s, zkrc_session_event_type ev) {
  static const zkrc_log_level levels[] = {
      [ZKRC_SESSION_EVENT_CONNECTED] = ZKRC_LOG_INFO,
      [ZKRC_SESSION_EVENT_SUSPENDED] = ZKRC_LOG_WARN,
      [ZKRC_SESSION_EVENT_RECONNECTED] = ZKRC_LOG_NOTICE,
      [ZKRC_SESSION_EVENT_LOST] = ZKRC_LOG_ERROR,
      [ZKRC_SESSION_EVENT_EXPIRED] = ZKRC_LOG_ERROR,
      [ZKRC_SESSION_EVENT_AUTH_FAILED] = ZKRC_LOG_ERROR,
      [ZKRC_SESSION_EVENT_CLOSED] = ZKRC_LOG_INFO,
  };
  if ((unsigned)ev >= G_N_ELEMENTS(levels) || !zkrc__log_enabled(levels[ev]))
    return;
  g_mutex_lock(&s->o.mu);
  int64_t id = s->last_session_id; /* an expired one's handle is gone */
  g_mutex_unlock(&s->o.mu);
  zkrc__log(levels[ev], "session 0x%" G_GINT64_MODIFIER "x (%s): %s", id,
            s->hosts ? s->hosts : "adopted handle",
            zkrc_session_event_name(ev));
}

void zkrc__session_announce(zkrc_session *s, zkrc_session_event_type ev,
                            uint64_t generation) {
  log_session_event(s, ev);
  zkrc__session_notify_observers(s, ev, generation);
  post_to_listeners(s, ev);
}

unsigned long zkrc__session_observe(zkrc_session *s, zkrc__observer_fn fn,
                                    void *arg, gboolean *closed) {
  observer *o = g_new(observer, 1);
  o->fn = fn;
  o->arg = arg;
  g_mutex_lock(&s->o.mu);
  o->id = ++s->next_observer_id;
  g_hash_table_insert(s->observers, &o->id, o);
  if (closed)
    *closed = zkrc__session_closed_locked(s);
  g_mutex_unlock(&s->o.mu);
  return o->id;
}

void zkrc__session_unobserve(zkrc_session *s, unsigned long id) {
  g_mutex_lock(&s->o.mu);
  g_hash_table_remove(s->observers, &id);
  /* The worker may be calling it right now with a copy. */
  while (s->notifying && !zkrc__session_on_worker(s))
    g_cond_wait(&s->o.cond, &s->o.mu);
  g_mutex_unlock(&s->o.mu);
}

int zkrc_session_add_listener(zkrc_session *s, zkrc_session_event_fn fn,
                              void *arg, unsigned long *id) {
  if (s == NULL || fn == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  listener *l = g_new(listener, 1);
  l->fn = fn;
  l->arg = arg;
  g_mutex_lock(&s->o.mu);
  if (s->closing) {
    g_mutex_unlock(&s->o.mu);
    g_free(l);
    return zkrc__fail(ZKRC_ECLOSED);
  }
  l->id = ++s->next_listener_id;
  g_ptr_array_add(s->listeners, l);
  g_mutex_unlock(&s->o.mu);
  if (id)
    *id = l->id;
  return ZKRC_OK;
}

int zkrc_session_remove_listener(zkrc_session *s, unsigned long id) {
  if (s == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  int err = ZKRC_EINVAL;
  g_mutex_lock(&s->o.mu);
  for (guint i = 0; i < s->listeners->len; i++) {
    listener *l = g_ptr_array_index(s->listeners, i);
    if (l->id == id) {
      g_ptr_array_remove_index(s->listeners, i);
      err = ZKRC_OK;
      break;
    }
  }
  g_mutex_unlock(&s->o.mu);
  return zkrc__fail(err);
}
