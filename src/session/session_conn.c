/*
 * Handle turnover: opening a ZooKeeper handle for the session (again with a
 * backoff while names do not resolve), following its state (connected,
 * suspended, reconnected; expired and lost retire it), and closing it.
 * Everything here runs on the session's worker, except the global watcher
 * (ZooKeeper's completion thread), which only hands events to the worker.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "session/call.h"
#include "core/log_internal.h"
#include "session/session_private.h"
#include "core/util.h"
#include "session/zk_call.h"
#include "zkrecipes.h"

typedef struct state_change {
  zkrc_session *s;
  uint64_t generation;
  int zk_state;
} state_change;

/* A handle that could not be opened is tried again, 100 ms after the first
 * failure, then twice as long each time, at most 10 s apart: a daemon
 * started before its name service, or a session reopened while names do
 * not resolve, must not be dead for good. */
#define REOPEN_FIRST_MS 100
#define REOPEN_MAX_MS 10000

/* A brand-new session's lease starts when its handle was opened (the
 * leader made the session after that; lease.h).  A handle that keeps
 * failing to connect (servers down) would make that start older and older:
 * connected at last, its session would have almost no lease left, too
 * little for the two renewals that extend it, and be told lost at once
 * (issue 33: one outage, two losses).  So a handle that has not made its
 * session within half a session timeout is closed and a fresh one opened:
 * a new session's lease then has at least half a timeout left, room for
 * the renewals (0.3 of the timeout apart).  Also when its connect request
 * is out (a server still loading answers late): its session would start
 * with the same old lease.  A session such a request makes after the
 * close has no node and expires on the servers. */
/* How long a close waits at most for the replies still in flight. */
#define CLOSE_DRAIN_MS 2000

void zkrc__session_close_conn(zkrc_session *s, zkrc_conn *c) {
  g_mutex_lock(&s->o.mu);
  while (c->users > 0)
    g_cond_wait(&s->o.cond, &s->o.mu);
  g_mutex_unlock(&s->o.mu);
  zookeeper_close(c->zh);
  zkrc__watch_drop_generation(s, c->generation);
  g_free(c);
}

/* ----------------------------------------------------- a lapsed handle */

/* A handle whose lease ran out is not closed at once: closing it deletes
 * its ephemeral nodes at once, and a successor could then be granted
 * before the holder's LOST callback ran on a busy executor, or just
 * after it (the close, the deletes and the successor's grant take a few
 * milliseconds).  It is parked until the loss probe (session_events.c)
 * has run on the executor, after every LOST posted before it, and the
 * allowance after the lapse has passed, so that the holder is told at
 * least that long before its own close can free anything; but no later
 * than a second allowance (a stalled executor must not keep a session
 * the servers still serve).  Worker thread, s->o.mu held. */
static zkrc_conn *park_locked(zkrc_session *s, zkrc_conn *c, int64_t due) {
  zkrc_conn *earlier = s->parked;
  int64_t now = g_get_monotonic_time();
  s->parked = c;
  s->park_told = FALSE;
  s->park_at_us = MAX(due + s->lapse_allowance_us, now);
  s->park_latest_us = s->park_at_us + s->lapse_allowance_us;
  g_source_set_ready_time(s->park_timer, s->park_at_us);
  return earlier;
}

void zkrc__session_close_parked(void *data) {
  zkrc_session *s = data;
  g_mutex_lock(&s->o.mu);
  zkrc_conn *c = s->parked;
  s->parked = NULL;
  g_source_set_ready_time(s->park_timer, -1);
  g_mutex_unlock(&s->o.mu);
  if (c) {
    zkrc__session_close_conn(s, c); /* frees c */
    zkrc__reaper_run(s); /* what it held may go now (session_reaper.c) */
  }
}

/* Close the parked handle when it is due (told and past park_at, or past
 * park_latest); else wait for the next of those moments. */
static void close_parked_when_due(zkrc_session *s) {
  int64_t now = g_get_monotonic_time();
  g_mutex_lock(&s->o.mu);
  gboolean due = s->parked && ((s->park_told && now >= s->park_at_us) ||
                               now >= s->park_latest_us);
  if (s->parked && !due)
    g_source_set_ready_time(s->park_timer,
                            s->park_told ? s->park_at_us : s->park_latest_us);
  g_mutex_unlock(&s->o.mu);
  if (due)
    zkrc__session_close_parked(s);
}

void zkrc__session_loss_told(void *data) {
  zkrc_session *s = data;
  g_mutex_lock(&s->o.mu);
  s->park_told = TRUE;
  g_mutex_unlock(&s->o.mu);
  close_parked_when_due(s);
}

gboolean zkrc__session_park_fired(gpointer data) {
  zkrc_session *s = data;
  g_mutex_lock(&s->o.mu);
  g_source_set_ready_time(s->park_timer, -1);
  g_mutex_unlock(&s->o.mu);
  close_parked_when_due(s);
  return G_SOURCE_CONTINUE;
}

void zkrc__session_retire(zkrc_session *s, zkrc_session_event_type why) {
  g_mutex_lock(&s->o.mu);
  zkrc_conn *c = s->conn;
  if (c == NULL) {
    g_mutex_unlock(&s->o.mu);
    return;
  }
  s->conn = NULL;
  c->retired = TRUE;
  gboolean lapsed =
      why == ZKRC_SESSION_EVENT_LOST && s->lapse_due_us != 0 && !s->closing;
  int64_t due = s->lapse_due_us;
  zkrc__lease_stop_locked(s);
  gboolean reopen = !s->closing && !s->opts.no_reopen && s->hosts != NULL &&
                    why != ZKRC_SESSION_EVENT_AUTH_FAILED;
  s->state = reopen ? ZKRC_SESSION_CONNECTING : ZKRC_SESSION_CLOSED;
  if (!reopen && !s->closing)
    s->end_event = why;
  if (why == ZKRC_SESSION_EVENT_EXPIRED) {
    s->n_expiries++;
    zkrc__reaper_forget_locked(s, c->generation);
  }
  g_cond_broadcast(&s->o.cond);
  g_mutex_unlock(&s->o.mu);

  uint64_t generation = c->generation;
  zkrc__session_announce(s, why, generation);
  if (lapsed) {
    g_mutex_lock(&s->o.mu);
    c = park_locked(s, c, due);
    g_mutex_unlock(&s->o.mu);
  }
  if (c)
    zkrc__session_close_conn(s, c); /* frees c */
  if (!reopen) {
    zkrc__session_announce(s, ZKRC_SESSION_EVENT_CLOSED, generation);
    return;
  }
  int err = ZKRC_OK;
  zkrc__log_defer_begin(); /* zookeeper_init2 logs with our mutex held */
  g_mutex_lock(&s->o.mu);
  if (!s->closing)
    zkrc__session_open_locked(s, &err);
  g_mutex_unlock(&s->o.mu);
  zkrc__log_flush(zkrc__log_defer_end());
}

/* Worker thread: the handle of @p generation reported a session state.
 * Returns the event to announce, or -1 for none. */
static int apply_state_locked(zkrc_session *s, zkrc_conn *c, int zk_state,
                              int64_t client_id, int recv_timeout) {
  if (zk_state == ZOO_CONNECTED_STATE || zk_state == ZOO_READONLY_STATE) {
    gboolean new_session = c->session_id == 0;
    zkrc_session_state before = s->state;
    c->session_id = client_id;
    s->last_session_id = client_id;
    s->negotiated_timeout_ms = recv_timeout;
    s->state = ZKRC_SESSION_CONNECTED;
    g_cond_broadcast(&s->o.cond);
    if (new_session) {
      s->n_sessions++;
      return ZKRC_SESSION_EVENT_CONNECTED;
    }
    if (before != ZKRC_SESSION_SUSPENDED)
      return -1;
    s->n_reconnects++;
    return ZKRC_SESSION_EVENT_RECONNECTED;
  }
  if (zk_state == ZOO_CONNECTING_STATE || zk_state == ZOO_ASSOCIATING_STATE ||
      zk_state == ZOO_NOTCONNECTED_STATE) {
    if (s->state != ZKRC_SESSION_CONNECTED)
      return -1;
    s->state = ZKRC_SESSION_SUSPENDED;
    s->n_suspensions++;
    g_cond_broadcast(&s->o.cond);
    return ZKRC_SESSION_EVENT_SUSPENDED;
  }
  return -1;
}

/* Is a CONNECTED report about a connection we have not seen yet? */
static gboolean is_new_connection(zkrc_session *s) {
  g_mutex_lock(&s->o.mu);
  gboolean fresh = s->state != ZKRC_SESSION_CONNECTED;
  g_mutex_unlock(&s->o.mu);
  return fresh;
}

static void handle_state_change(void *data) {
  state_change *sc = data;
  zkrc_session *s = sc->s;
  g_mutex_lock(&s->o.mu);
  zkrc_conn *c = s->conn;
  if (c == NULL || c->generation != sc->generation) {
    g_mutex_unlock(&s->o.mu);
    g_free(sc);
    return; /* about a handle already retired */
  }
  g_mutex_unlock(&s->o.mu);

  if (sc->zk_state == ZOO_EXPIRED_SESSION_STATE) {
    zkrc__session_retire(s, ZKRC_SESSION_EVENT_EXPIRED);
  } else if (sc->zk_state == ZOO_AUTH_FAILED_STATE) {
    zkrc__session_retire(s, ZKRC_SESSION_EVENT_AUTH_FAILED);
  } else {
    /* Only the worker retires handles, so c stays valid here. */
    int64_t client_id = zoo_client_id(c->zh)->client_id;
    int recv_timeout = zoo_recv_timeout(c->zh);
    if (sc->zk_state == ZOO_CONNECTED_STATE && client_id != 0 &&
        is_new_connection(s) &&
        !zkrc__lease_connected(s, c, c->session_id == 0, recv_timeout)) {
      /* Back too late: the servers may have expired it meanwhile. */
      zkrc__session_retire(s, ZKRC_SESSION_EVENT_LOST);
      g_free(sc);
      return;
    }
    g_mutex_lock(&s->o.mu);
    int ev = apply_state_locked(s, c, sc->zk_state, client_id, recv_timeout);
    g_mutex_unlock(&s->o.mu);
    if (ev >= 0)
      zkrc__session_announce(s, (zkrc_session_event_type)ev, sc->generation);
    if (ev == ZKRC_SESSION_EVENT_CONNECTED ||
        ev == ZKRC_SESSION_EVENT_RECONNECTED)
      zkrc__reaper_run(s);
  }
  g_free(sc);
}

/* The global watcher of every handle: ZooKeeper's completion thread.  Only
 * session events arrive here (recipes set their watches with watchers of
 * their own); they are handed to the worker. */
void zkrc__session_global_watcher(zhandle_t *zh, int type, int state,
                                  const char *path, void *ctx) {
  zkrc_conn *c = ctx;
  if (type == ZOO_SESSION_EVENT) {
    state_change *sc = g_new(state_change, 1);
    sc->s = c->session;
    sc->generation = c->generation;
    sc->zk_state = state;
    zkrc__session_run_on_worker(c->session, handle_state_change, sc);
  }
  g_mutex_lock(&c->session->o.mu); /* see zkrc_session_adopt */
  watcher_fn app_watcher = c->app_watcher;
  void *app_context = c->app_context;
  g_mutex_unlock(&c->session->o.mu);
  if (app_watcher)
    app_watcher(zh, type, state, path, app_context);
}

static void add_remembered_auths(zkrc_session *s, zkrc_conn *c) {
  for (guint i = 0; i < s->auths->len; i++) {
    auth_entry *a = g_ptr_array_index(s->auths, i);
    zkrc__zk_add_auth(c, a->scheme, a->cred, NULL, NULL);
  }
}

static gboolean reopen_fired(gpointer data) {
  zkrc_session *s = data;
  int err = ZKRC_OK;
  zkrc__log_defer_begin(); /* zookeeper_init2 logs with our mutex held */
  g_mutex_lock(&s->o.mu);
  if (s->reopen_timer == g_main_current_source()) {
    g_source_unref(s->reopen_timer);
    s->reopen_timer = NULL;
    if (!s->closing && s->conn == NULL && s->state == ZKRC_SESSION_CONNECTING)
      zkrc__session_open_locked(s, &err);
  }
  g_mutex_unlock(&s->o.mu);
  zkrc__log_flush(zkrc__log_defer_end());
  return G_SOURCE_REMOVE;
}

/* Worker (the fresh timer, a ready-time source of the lease driver's): a
 * handle still without a session after half a timeout. */
gboolean zkrc__session_fresh_fired(gpointer data) {
  zkrc_session *s = data;
  g_mutex_lock(&s->o.mu);
  g_source_set_ready_time(s->fresh_timer, -1);
  zkrc_conn *c = s->conn;
  if (c == NULL || c->generation != s->fresh_generation || c->session_id ||
      s->closing) {
    g_mutex_unlock(&s->o.mu);
    return G_SOURCE_CONTINUE;
  }
  s->conn = NULL; /* no session, nothing to announce */
  g_mutex_unlock(&s->o.mu);
  zkrc__session_close_conn(s, c); /* frees c */
  int err = ZKRC_OK;
  zkrc__log_defer_begin(); /* zookeeper_init2 logs with our mutex held */
  g_mutex_lock(&s->o.mu);
  if (!s->closing && s->conn == NULL)
    zkrc__session_open_locked(s, &err);
  g_mutex_unlock(&s->o.mu);
  zkrc__log_flush(zkrc__log_defer_end());
  return G_SOURCE_CONTINUE;
}

/* Re-armed, never replaced: a ready time is set under the mutex, where
 * destroying a source (whose destroy notify may take the mutex) is not. */
static void arm_fresh_timer_locked(zkrc_session *s, uint64_t generation) {
  int ms = s->opts.session_timeout_ms / 2 > 100 ? s->opts.session_timeout_ms / 2
                                                : 100;
  s->fresh_generation = generation;
  g_source_set_ready_time(s->fresh_timer,
                          g_get_monotonic_time() + (int64_t)ms * 1000);
}

static void schedule_reopen_locked(zkrc_session *s) {
  if (s->reopen_timer)
    return;
  int ms = s->reopen_delay_ms ? MIN(2 * s->reopen_delay_ms, REOPEN_MAX_MS)
                              : REOPEN_FIRST_MS;
  s->reopen_delay_ms = ms;
  s->reopen_timer =
      zkrc__session_timer(s, ms, reopen_fired, zkrc__session_ref(s),
                          (GDestroyNotify)zkrc__session_unref);
}

void zkrc__session_cancel_reopen(zkrc_session *s) {
  g_mutex_lock(&s->o.mu);
  GSource *timer = s->reopen_timer;
  s->reopen_timer = NULL;
  g_source_set_ready_time(s->fresh_timer, -1);
  g_mutex_unlock(&s->o.mu);
  if (timer) {
    g_source_destroy(timer); /* drops the timer's session reference */
    g_source_unref(timer);
  }
}

/* zookeeper_init2() does not block (it starts the client's threads and
 * connects in the background) and calls no watcher synchronously, so this
 * runs with the mutex held. */
void zkrc__session_open_locked(zkrc_session *s, int *err) {
  zkrc_conn *c = g_new0(zkrc_conn, 1);
  c->session = s;
  c->generation = zkrc__session_next_generation_locked(s);
  zkrc__lease_handle_opened_locked(s);
  errno = 0;
  zkrc__log_before_open();
  /* It logs from this thread, with the session's mutex held: the callers
   * defer the lines to after they let it go (zkrc__log_defer_begin). */
  c->zh = zkrc__zk_open(c, zkrc__session_hosts_locked(s),
                        s->opts.session_timeout_ms, zkrc__log_trampoline);
  if (c->zh == NULL && errno == ENOMEM) {
    *err = ZKRC_ENOMEM;
    g_free(c);
    s->state = ZKRC_SESSION_CLOSED;
    g_cond_broadcast(&s->o.cond);
    return;
  }
  if (c->zh == NULL) {
    g_free(c);
    s->state = ZKRC_SESSION_CONNECTING;
    schedule_reopen_locked(s);
    return;
  }
  s->reopen_delay_ms = 0;
  /* The 3.8 client otherwise resolves every host of the connect string on
   * each turn of its I/O loop (a dozen sockets per lock cycle, measured):
   * resolve only when a connection is lost, which is when a server that
   * moved to another address matters. */
  zoo_set_servers_resolution_delay(c->zh, -1);
  add_remembered_auths(s, c);
  s->conn = c;
  s->state = ZKRC_SESSION_CONNECTING;
  arm_fresh_timer_locked(s, c->generation);
  s->negotiated_timeout_ms = s->opts.session_timeout_ms;
  g_cond_broadcast(&s->o.cond);
}

/* One sync marks the end: one session's requests are answered in order.
 * Nothing new is sent meanwhile: every recipe has been told CLOSED. */
void zkrc__session_drain(zkrc_session *s, zkrc_conn *c) {
  if (zoo_state(c->zh) != ZOO_CONNECTED_STATE)
    return;
  int ms = zkrc_session_timeout(s);
  zkrc__call *marker = zkrc__call_new();
  if (zkrc__zk_sync(c, "/", zkrc__call_string_done, marker) != ZOK)
    zkrc__call_fail_unsent(marker, ZCONNECTIONLOSS);
  zkrc__call_wait(marker, zkrc__deadline_after(MIN(ms, CLOSE_DRAIN_MS)));
  zkrc__call_unref(marker);
}
