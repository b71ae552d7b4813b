/*
 * Sessions: one ZooKeeper handle at a time, a worker thread for timers and
 * handle turnover, listeners and observers, and the executor for user
 * callbacks.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "session_private.h"
#include "util.h"
#include "zkrecipes.h"

#define DEFAULT_SESSION_TIMEOUT_MS 10000
#define MIN_TIMEOUT_MS 100
#define MAX_TIMEOUT_MS 1000000000

typedef struct listener {
  unsigned long id;
  zkrc_session_listener_fn fn;
  void *arg;
} listener;

typedef struct observer {
  unsigned long id;
  zkrc__observer_fn fn;
  void *arg;
} observer;

typedef struct auth_entry {
  char *scheme;
  char *cred;
} auth_entry;

typedef struct reap_entry {
  char *parent;
  char *prefix; /* "_c_<uuid>-" */
  char *name;   /* the node's name when known, else NULL */
  uint64_t generation;
  gboolean in_flight;
} reap_entry;


static void open_conn_locked_out(zkrc_session *s, int *err);
static void run_reaper(zkrc_session *s);

/* ------------------------------------------------------------------ names */

const char *zkrc_session_event_name(zkrc_session_event ev) {
  static const char *const names[] = {
      "connected", "suspended", "reconnected", "lost",
      "expired",   "auth-failed", "closed"};
  if ((unsigned)ev < G_N_ELEMENTS(names))
    return names[ev];
  return "unknown";
}

const char *zkrc_session_state_name(zkrc_session_state st) {
  static const char *const names[] = {"connecting", "connected", "suspended",
                                      "closed"};
  if ((unsigned)st < G_N_ELEMENTS(names))
    return names[st];
  return "unknown";
}

/* ------------------------------------------------------ default executor */

typedef struct cb_task {
  zkrc_callback_fn fn; /* NULL: stop the thread */
  void *arg;
} cb_task;

static gpointer callback_thread_main(gpointer data) {
  GAsyncQueue *queue = data; /* our own reference: the session may go first */
  for (;;) {
    cb_task *t = g_async_queue_pop(queue);
    zkrc_callback_fn fn = t->fn;
    void *arg = t->arg;
    g_free(t);
    if (fn == NULL)
      break;
    fn(arg);
  }
  g_async_queue_unref(queue);
  return NULL;
}

static void callback_thread_post(void *ctx, zkrc_callback_fn fn, void *arg) {
  cb_task *t = g_new(cb_task, 1);
  t->fn = fn;
  t->arg = arg;
  g_async_queue_push(ctx, t);
}

/* ---------------------------------------------------------------- worker */

static gpointer worker_main(gpointer data) {
  GMainLoop *loop = data; /* our own reference */
  GMainContext *ctx = g_main_loop_get_context(loop);
  g_main_context_push_thread_default(ctx);
  g_main_loop_run(loop);
  g_main_context_pop_thread_default(ctx);
  g_main_loop_unref(loop);
  return NULL;
}

typedef struct worker_call {
  zkrc_session *s;
  zkrc_callback_fn fn;
  void *arg;
} worker_call;

static gboolean worker_call_run(gpointer data) {
  worker_call *wc = data;
  wc->fn(wc->arg);
  zkrc__session_unref(wc->s);
  g_free(wc);
  return G_SOURCE_REMOVE;
}

void zkrc__session_run_on_worker(zkrc_session *s, zkrc_callback_fn fn,
                                 void *arg) {
  worker_call *wc = g_new(worker_call, 1);
  wc->s = zkrc__session_ref(s);
  wc->fn = fn;
  wc->arg = arg;
  GSource *src = g_idle_source_new();
  g_source_set_priority(src, G_PRIORITY_DEFAULT);
  g_source_set_callback(src, worker_call_run, wc, NULL);
  g_source_attach(src, s->worker_ctx);
  g_source_unref(src);
}

GSource *zkrc__session_timer(zkrc_session *s, int ms, GSourceFunc fn,
                             void *data, GDestroyNotify destroy) {
  GSource *src = g_timeout_source_new((guint)ms);
  g_source_set_callback(src, fn, data, destroy);
  g_source_attach(src, s->worker_ctx);
  return src;
}

static gboolean quit_loop(gpointer loop) {
  g_main_loop_quit(loop);
  return G_SOURCE_REMOVE;
}

/* Stop the worker's loop from inside it: g_main_loop_quit() called before
 * the new thread entered g_main_loop_run() would be forgotten (run sets
 * the loop running again), and the join below would wait for ever. */
static void stop_worker_loop(zkrc_session *s) {
  GSource *src = g_idle_source_new();
  g_source_set_callback(src, quit_loop, g_main_loop_ref(s->worker_loop),
                        (GDestroyNotify)g_main_loop_unref);
  g_source_attach(src, s->worker_ctx);
  g_source_unref(src);
}

static gboolean on_worker_thread(zkrc_session *s) {
  return s->worker == g_thread_self();
}

/* -------------------------------------------------------- ref counting */

zkrc_session *zkrc__session_ref(zkrc_session *s) {
  g_atomic_int_inc(&s->refs);
  return s;
}

static void stop_thread(GThread *thread) {
  if (thread == NULL)
    return;
  if (thread == g_thread_self())
    g_thread_unref(thread); /* it exits by itself once we return */
  else
    g_thread_join(thread);
}

static void free_auth(gpointer p) {
  auth_entry *a = p;
  g_free(a->scheme);
  g_free(a->cred);
  g_free(a);
}

static void free_reap(gpointer p) {
  reap_entry *r = p;
  g_free(r->parent);
  g_free(r->prefix);
  g_free(r->name);
  g_free(r);
}

static void session_free(zkrc_session *s) {
  /* Both threads hold references to their own queue/loop, so they may be
   * the ones dropping the last session reference. */
  if (s->cb_queue) {
    callback_thread_post(s->cb_queue, NULL, NULL);
    stop_thread(s->cb_thread);
    g_async_queue_unref(s->cb_queue);
  }
  zkrc__lease_driver_free(s);
  stop_worker_loop(s);
  stop_thread(s->worker);
  g_main_loop_unref(s->worker_loop);
  g_main_context_unref(s->worker_ctx);
  g_ptr_array_free(s->listeners, TRUE);
  g_hash_table_destroy(s->observers);
  g_ptr_array_free(s->auths, TRUE);
  g_ptr_array_free(s->reap, TRUE);
  g_free(s->hosts);
  g_mutex_clear(&s->mu);
  g_cond_clear(&s->cond);
  g_free(s);
}

void zkrc__session_unref(zkrc_session *s) {
  if (s == NULL)
    return;
  if (g_atomic_int_dec_and_test(&s->refs)) {
    session_free(s);
    return;
  }
  if (g_atomic_int_get(&s->closing_waiters) > 0) {
    g_mutex_lock(&s->mu); /* zkrc_session_close() may be waiting for this */
    g_cond_broadcast(&s->cond);
    g_mutex_unlock(&s->mu);
  }
}

zkrc_session *zkrc__session_ref_recipe(zkrc_session *s) {
  g_atomic_int_inc(&s->recipes);
  return zkrc__session_ref(s);
}

void zkrc__session_unref_recipe(zkrc_session *s) {
  g_mutex_lock(&s->mu); /* the mutex orders it with close's wait */
  g_atomic_int_add(&s->recipes, -1); /* incremented without the mutex */
  g_cond_broadcast(&s->cond);
  g_mutex_unlock(&s->mu);
  zkrc__session_unref(s);
}

/* When the application freed its recipes before closing, wait a little for
 * the references that are about to go by themselves (requests in flight,
 * contenders finishing a delete, callbacks queued): the last reference then
 * goes in zkrc_session_close() itself, which joins the session's threads,
 * so nothing of the session outlives the call. */
#define CLOSE_SETTLE_MS 2000

static void wait_for_transient_refs(zkrc_session *s) {
  int64_t deadline = zkrc__deadline_after(CLOSE_SETTLE_MS);
  g_atomic_int_inc(&s->closing_waiters);
  g_mutex_lock(&s->mu);
  /* Recipe objects still alive keep references (and their contenders do):
   * the session then ends with the last of them, later. */
  while (g_atomic_int_get(&s->recipes) == 0 &&
         g_atomic_int_get(&s->refs) > 1 &&
         g_cond_wait_until(&s->cond, &s->mu, deadline))
    ;
  g_mutex_unlock(&s->mu);
  g_atomic_int_add(&s->closing_waiters, -1);
}

/* ------------------------------------------------------- pinned handles */

zkrc_conn *zkrc__conn_use(zkrc_session *s) {
  g_mutex_lock(&s->mu);
  zkrc_conn *c = s->conn;
  if (c)
    c->users++;
  g_mutex_unlock(&s->mu);
  return c;
}

void zkrc__conn_unuse(zkrc_conn *c) {
  zkrc_session *s = c->session;
  g_mutex_lock(&s->mu);
  if (--c->users == 0 && c->retired)
    g_cond_broadcast(&s->cond);
  g_mutex_unlock(&s->mu);
}

gboolean zkrc__session_connected(zkrc_session *s, uint64_t generation) {
  g_mutex_lock(&s->mu);
  gboolean up = s->conn && s->state == ZKRC_SESSION_CONNECTED &&
                (generation == 0 || s->conn->generation == generation);
  g_mutex_unlock(&s->mu);
  return up;
}

uint64_t zkrc__session_generation(zkrc_session *s) {
  g_mutex_lock(&s->mu);
  uint64_t g = s->conn ? s->conn->generation : 0;
  g_mutex_unlock(&s->mu);
  return g;
}

gboolean zkrc__session_closed(zkrc_session *s) {
  g_mutex_lock(&s->mu);
  /* Closed by the application, or dead and not to be reopened (no_reopen,
   * an adopted handle without hosts, failed authentication). */
  gboolean closed = s->closing || s->state == ZKRC_SESSION_CLOSED;
  g_mutex_unlock(&s->mu);
  return closed;
}

/* ------------------------------------------------ listeners and observers */

typedef struct listener_call {
  zkrc_session *s;
  unsigned long id;
  zkrc_session_event ev;
} listener_call;

static void listener_call_run(void *data) {
  listener_call *lc = data;
  zkrc_session *s = lc->s;
  zkrc_session_listener_fn fn = NULL;
  void *arg = NULL;
  g_mutex_lock(&s->mu);
  for (guint i = 0; i < s->listeners->len; i++) {
    listener *l = g_ptr_array_index(s->listeners, i);
    if (l->id == lc->id) {
      fn = l->fn;
      arg = l->arg;
    }
  }
  g_mutex_unlock(&s->mu);
  if (fn)
    fn(s, lc->ev, arg);
  g_free(lc);
}

static void post_to_listeners(zkrc_session *s, zkrc_session_event ev) {
  g_mutex_lock(&s->mu);
  GArray *ids = g_array_new(FALSE, FALSE, sizeof(unsigned long));
  for (guint i = 0; i < s->listeners->len; i++) {
    listener *l = g_ptr_array_index(s->listeners, i);
    g_array_append_val(ids, l->id);
  }
  g_mutex_unlock(&s->mu);
  for (guint i = 0; i < ids->len; i++) {
    listener_call *lc = g_new(listener_call, 1);
    lc->s = s;
    lc->id = g_array_index(ids, unsigned long, i);
    lc->ev = ev;
    zkrc__session_post(s, listener_call_run, lc);
  }
  g_array_free(ids, TRUE);
}

void zkrc__session_notify_observers(zkrc_session *s, zkrc_session_event ev,
                                    uint64_t generation) {
  g_mutex_lock(&s->mu);
  GPtrArray *copy = g_ptr_array_new_with_free_func(g_free);
  GHashTableIter it;
  gpointer value;
  g_hash_table_iter_init(&it, s->observers);
  while (g_hash_table_iter_next(&it, NULL, &value))
    g_ptr_array_add(copy, g_memdup2(value, sizeof(observer)));
  s->notifying = TRUE;
  g_mutex_unlock(&s->mu);

  for (guint i = 0; i < copy->len; i++) {
    observer *o = g_ptr_array_index(copy, i);
    /* An observer removed by an earlier one in this round is skipped. */
    g_mutex_lock(&s->mu);
    gboolean still_there = g_hash_table_contains(s->observers, &o->id);
    g_mutex_unlock(&s->mu);
    if (still_there)
      o->fn(s, ev, generation, o->arg);
  }

  g_mutex_lock(&s->mu);
  s->notifying = FALSE;
  g_cond_broadcast(&s->cond);
  g_mutex_unlock(&s->mu);
  g_ptr_array_free(copy, TRUE);
}

static void announce(zkrc_session *s, zkrc_session_event ev,
                     uint64_t generation) {
  zkrc__session_notify_observers(s, ev, generation);
  post_to_listeners(s, ev);
}

unsigned long zkrc__session_observe(zkrc_session *s, zkrc__observer_fn fn,
                                    void *arg) {
  observer *o = g_new(observer, 1);
  o->fn = fn;
  o->arg = arg;
  g_mutex_lock(&s->mu);
  o->id = ++s->next_observer_id;
  g_hash_table_insert(s->observers, &o->id, o);
  g_mutex_unlock(&s->mu);
  return o->id;
}

void zkrc__session_unobserve(zkrc_session *s, unsigned long id) {
  g_mutex_lock(&s->mu);
  g_hash_table_remove(s->observers, &id);
  /* The worker may be calling it right now with a copy. */
  while (s->notifying && !on_worker_thread(s))
    g_cond_wait(&s->cond, &s->mu);
  g_mutex_unlock(&s->mu);
}

typedef struct posted_call {
  zkrc_session *s;
  zkrc_callback_fn fn;
  void *arg;
} posted_call;

static void posted_call_run(void *data) {
  posted_call *pc = data;
  pc->fn(pc->arg);
  zkrc__session_unref(pc->s);
  g_free(pc);
}

void zkrc__session_post(zkrc_session *s, zkrc_callback_fn fn, void *arg) {
  posted_call *pc = g_new(posted_call, 1);
  pc->s = zkrc__session_ref(s);
  pc->fn = fn;
  pc->arg = arg;
  s->executor.post(s->executor.ctx, posted_call_run, pc);
}

/* ------------------------------------------------------- handle turnover */

/* Close a retired handle: wait until no thread is inside a zoo_* call on it,
 * then zookeeper_close() it.  Completions still outstanding run with ZCLOSING,
 * possibly on this thread, so no session lock may be held here. */
static void close_conn(zkrc_session *s, zkrc_conn *c) {
  g_mutex_lock(&s->mu);
  while (c->users > 0)
    g_cond_wait(&s->cond, &s->mu);
  g_mutex_unlock(&s->mu);
  zookeeper_close(c->zh);
  zkrc__watch_drop_generation(s, c->generation);
  g_free(c);
}

/* Forget the reaper's entries for nodes of an expired ZooKeeper session: the
 * servers deleted them with the session. */
static void drop_reap_entries_locked(zkrc_session *s, uint64_t generation) {
  for (guint i = s->reap->len; i-- > 0;) {
    reap_entry *r = g_ptr_array_index(s->reap, i);
    if (r->generation == generation)
      g_ptr_array_remove_index(s->reap, i);
  }
}

void zkrc__session_retire(zkrc_session *s, zkrc_session_event why) {
  g_mutex_lock(&s->mu);
  zkrc_conn *c = s->conn;
  if (c == NULL) {
    g_mutex_unlock(&s->mu);
    return;
  }
  s->conn = NULL;
  c->retired = TRUE;
  zkrc__lease_stop_locked(s);
  gboolean reopen = !s->closing && !s->opts.no_reopen && s->hosts != NULL &&
                    why != ZKRC_SESSION_EVENT_AUTH_FAILED;
  s->state = reopen ? ZKRC_SESSION_CONNECTING : ZKRC_SESSION_CLOSED;
  if (why == ZKRC_SESSION_EVENT_EXPIRED)
    drop_reap_entries_locked(s, c->generation);
  g_cond_broadcast(&s->cond);
  g_mutex_unlock(&s->mu);

  uint64_t generation = c->generation;
  announce(s, why, generation);
  close_conn(s, c); /* frees c */
  if (!reopen) {
    announce(s, ZKRC_SESSION_EVENT_CLOSED, generation);
    return;
  }
  int err = ZKRC_OK;
  g_mutex_lock(&s->mu);
  if (!s->closing)
    open_conn_locked_out(s, &err);
  g_mutex_unlock(&s->mu);
}

typedef struct state_change {
  zkrc_session *s;
  uint64_t generation;
  int zk_state;
} state_change;

/* Worker thread: the handle of @p generation reported a session state.
 * Returns the event to announce, or -1 for none. */
static int apply_state_locked(zkrc_session *s, zkrc_conn *c, int zk_state,
                              int64_t client_id, int recv_timeout) {
  if (zk_state == ZOO_CONNECTED_STATE || zk_state == ZOO_READONLY_STATE) {
    gboolean new_session = c->session_id == 0;
    zkrc_session_state before = s->state;
    c->session_id = client_id;
    s->negotiated_timeout_ms = recv_timeout;
    s->state = ZKRC_SESSION_CONNECTED;
    g_cond_broadcast(&s->cond);
    if (new_session)
      return ZKRC_SESSION_EVENT_CONNECTED;
    return before == ZKRC_SESSION_SUSPENDED ? ZKRC_SESSION_EVENT_RECONNECTED
                                            : -1;
  }
  if (zk_state == ZOO_CONNECTING_STATE || zk_state == ZOO_ASSOCIATING_STATE ||
      zk_state == ZOO_NOTCONNECTED_STATE) {
    if (s->state != ZKRC_SESSION_CONNECTED)
      return -1;
    s->state = ZKRC_SESSION_SUSPENDED;
    g_cond_broadcast(&s->cond);
    return ZKRC_SESSION_EVENT_SUSPENDED;
  }
  return -1;
}

/* Is a CONNECTED report about a connection we have not seen yet? */
static gboolean is_new_connection(zkrc_session *s) {
  g_mutex_lock(&s->mu);
  gboolean fresh = s->state != ZKRC_SESSION_CONNECTED;
  g_mutex_unlock(&s->mu);
  return fresh;
}

static void handle_state_change(void *data) {
  state_change *sc = data;
  zkrc_session *s = sc->s;
  g_mutex_lock(&s->mu);
  zkrc_conn *c = s->conn;
  if (c == NULL || c->generation != sc->generation) {
    g_mutex_unlock(&s->mu);
    g_free(sc);
    return; /* about a handle already retired */
  }
  g_mutex_unlock(&s->mu);

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
    g_mutex_lock(&s->mu);
    int ev = apply_state_locked(s, c, sc->zk_state, client_id, recv_timeout);
    g_mutex_unlock(&s->mu);
    if (ev >= 0)
      announce(s, (zkrc_session_event)ev, sc->generation);
    if (ev == ZKRC_SESSION_EVENT_CONNECTED ||
        ev == ZKRC_SESSION_EVENT_RECONNECTED)
      run_reaper(s);
  }
  g_free(sc);
}

/* The global watcher of every handle: ZooKeeper's completion thread.  Only
 * session events arrive here (recipes set their watches with watchers of
 * their own); they are handed to the worker. */
static void global_watcher(zhandle_t *zh, int type, int state,
                           const char *path, void *ctx) {
  zkrc_conn *c = ctx;
  if (type == ZOO_SESSION_EVENT) {
    state_change *sc = g_new(state_change, 1);
    sc->s = c->session;
    sc->generation = c->generation;
    sc->zk_state = state;
    zkrc__session_run_on_worker(c->session, handle_state_change, sc);
  }
  if (c->app_watcher)
    c->app_watcher(zh, type, state, path, c->app_context);
}

static void add_remembered_auths(zkrc_session *s, zhandle_t *zh) {
  for (guint i = 0; i < s->auths->len; i++) {
    auth_entry *a = g_ptr_array_index(s->auths, i);
    zoo_add_auth(zh, a->scheme, a->cred, (int)strlen(a->cred), NULL, NULL);
  }
}

/* A handle that could not be opened is tried again, 100 ms after the first
 * failure, then twice as long each time, at most 10 s apart: a daemon
 * started before its name service, or a session reopened while names do
 * not resolve, must not be dead for good. */
#define REOPEN_FIRST_MS 100
#define REOPEN_MAX_MS 10000

static gboolean reopen_fired(gpointer data) {
  zkrc_session *s = data;
  int err = ZKRC_OK;
  g_mutex_lock(&s->mu);
  if (s->reopen_timer == g_main_current_source()) {
    g_source_unref(s->reopen_timer);
    s->reopen_timer = NULL;
    if (!s->closing && s->conn == NULL &&
        s->state == ZKRC_SESSION_CONNECTING)
      open_conn_locked_out(s, &err);
  }
  g_mutex_unlock(&s->mu);
  return G_SOURCE_REMOVE;
}

static void schedule_reopen_locked(zkrc_session *s) {
  if (s->reopen_timer)
    return;
  int ms = s->reopen_delay_ms ? MIN(2 * s->reopen_delay_ms, REOPEN_MAX_MS)
                              : REOPEN_FIRST_MS;
  s->reopen_delay_ms = ms;
  s->reopen_timer = zkrc__session_timer(s, ms, reopen_fired,
                                        zkrc__session_ref(s),
                                        (GDestroyNotify)zkrc__session_unref);
}

/* Stop trying to reopen (closing). */
static void cancel_reopen(zkrc_session *s) {
  g_mutex_lock(&s->mu);
  GSource *timer = s->reopen_timer;
  s->reopen_timer = NULL;
  g_mutex_unlock(&s->mu);
  if (timer) {
    g_source_destroy(timer); /* drops the timer's session reference */
    g_source_unref(timer);
  }
}

/* Open a new handle as the current one.  Called with the mutex held:
 * zookeeper_init2() does not block (it starts the client's threads and
 * connects in the background) and calls no watcher synchronously.  The
 * host string's syntax was checked before: a failure here is out of memory
 * or names that do not resolve (the client resolves them first thing),
 * and the latter is tried again later. */
static void open_conn_locked_out(zkrc_session *s, int *err) {
  zkrc_conn *c = g_new0(zkrc_conn, 1);
  c->session = s;
  c->generation = ++s->last_generation;
  zkrc__lease_handle_opened_locked(s);
  errno = 0;
  c->zh = zookeeper_init2(s->hosts, global_watcher, s->opts.session_timeout_ms,
                          NULL, c, 0, zkrc__log_trampoline);
  if (c->zh == NULL && errno == ENOMEM) {
    *err = ZKRC_ENOMEM;
    g_free(c);
    s->state = ZKRC_SESSION_CLOSED;
    g_cond_broadcast(&s->cond);
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
  add_remembered_auths(s, c->zh);
  s->conn = c;
  s->state = ZKRC_SESSION_CONNECTING;
  s->negotiated_timeout_ms = s->opts.session_timeout_ms;
  g_cond_broadcast(&s->cond);
}

/* -------------------------------------------------------------- reaper */

typedef struct reap_call {
  zkrc_session *s;
  reap_entry *entry;
  zkrc_conn *conn_hint; /* only compared, never dereferenced */
} reap_call;

static void reap_done(zkrc_session *s, reap_entry *entry, int rc) {
  g_mutex_lock(&s->mu);
  entry->in_flight = FALSE;
  if (rc == ZOK || rc == ZNONODE)
    g_ptr_array_remove(s->reap, entry); /* frees it */
  g_mutex_unlock(&s->mu);
}

static void reap_delete_completion(int rc, const void *data) {
  reap_call *rcall = (reap_call *)data;
  reap_done(rcall->s, rcall->entry, rc);
  zkrc__session_unref(rcall->s);
  g_free(rcall);
}

static void reap_children_completion(int rc, const struct String_vector *kids,
                                     const void *data) {
  reap_call *rcall = (reap_call *)data;
  zkrc_session *s = rcall->s;
  reap_entry *entry = rcall->entry;
  int result = rc;
  if (rc == ZOK) {
    zkrc_conn *c = zkrc__conn_use(s);
    for (int i = 0; c && i < kids->count; i++) {
      if (!g_str_has_prefix(kids->data[i], entry->prefix))
        continue;
      char *path = g_strdup_printf("%s/%s", entry->parent, kids->data[i]);
      /* Fire and forget: if this delete is lost, the next connect's pass
       * finds the node again (the entry is kept until a pass sees none). */
      zoo_adelete(c->zh, path, -1, zkrc__ignore_void_done, NULL);
      g_free(path);
      result = ZCONNECTIONLOSS; /* look once more next time */
    }
    if (c)
      zkrc__conn_unuse(c);
  }
  reap_done(s, entry, result);
  zkrc__session_unref(s);
  g_free(rcall);
}

/* Worker thread, once connected: try every pending entry. */
static void run_reaper(zkrc_session *s) {
  zkrc_conn *c = zkrc__conn_use(s);
  if (c == NULL)
    return;
  g_mutex_lock(&s->mu);
  GPtrArray *todo = g_ptr_array_new();
  for (guint i = 0; i < s->reap->len; i++) {
    reap_entry *r = g_ptr_array_index(s->reap, i);
    if (!r->in_flight) {
      r->in_flight = TRUE;
      g_ptr_array_add(todo, r);
    }
  }
  g_mutex_unlock(&s->mu);

  for (guint i = 0; i < todo->len; i++) {
    reap_entry *r = g_ptr_array_index(todo, i);
    reap_call *rcall = g_new(reap_call, 1);
    rcall->s = zkrc__session_ref(s);
    rcall->entry = r;
    int rc;
    if (r->name) {
      char *path = g_strdup_printf("%s/%s", r->parent, r->name);
      rc = zoo_adelete(c->zh, path, -1, reap_delete_completion, rcall);
      g_free(path);
    } else {
      rc = zoo_aget_children(c->zh, r->parent, 0, reap_children_completion,
                             rcall);
    }
    if (rc != ZOK) {
      reap_done(s, r, ZCONNECTIONLOSS);
      zkrc__session_unref(s);
      g_free(rcall);
    }
  }
  g_ptr_array_free(todo, TRUE);
  zkrc__conn_unuse(c);
}

static void run_reaper_task(void *data) { run_reaper(data); }

void zkrc__session_reap(zkrc_session *s, const char *parent,
                        const char *prefix, const char *name,
                        uint64_t generation) {
  reap_entry *r = g_new0(reap_entry, 1);
  r->parent = g_strdup(parent);
  r->prefix = g_strdup(prefix);
  r->name = g_strdup(name);
  r->generation = generation;
  g_mutex_lock(&s->mu);
  gboolean closing = s->closing;
  if (!closing)
    g_ptr_array_add(s->reap, r);
  g_mutex_unlock(&s->mu);
  if (closing) {
    free_reap(r); /* closing the handle removes our ephemeral nodes */
    return;
  }
  /* If connected now, go at once (from the worker: this may be called on
   * ZooKeeper's completion thread). */
  zkrc__session_run_on_worker(s, run_reaper_task, s);
}

/* ---------------------------------------------------------- public API */

void zkrc_session_options_init(zkrc_session_options *opts) {
  if (opts == NULL)
    return;
  memset(opts, 0, sizeof *opts);
  opts->session_timeout_ms = DEFAULT_SESSION_TIMEOUT_MS;
}

static int normalize_options(zkrc_session_options *out,
                             const zkrc_session_options *in) {
  zkrc_session_options_init(out);
  if (in)
    *out = *in;
  if (out->session_timeout_ms < 0 || out->server_tick_ms < 0 ||
      !zkrc__timeout_valid(out->connect_timeout_ms))
    return ZKRC_EINVAL;
  if (out->session_timeout_ms == 0)
    out->session_timeout_ms = DEFAULT_SESSION_TIMEOUT_MS;
  /* The servers clamp the timeout to 2..20 ticks, but the ZooKeeper client
   * uses the requested one until they answer: it gives up a handshake that
   * takes more than two thirds of it (1 ms never connects, 2 ms hardly),
   * and its arithmetic overflows near INT_MAX.  So it gets 100 ms at
   * least and 10^9 at most. */
  out->session_timeout_ms = CLAMP(out->session_timeout_ms, MIN_TIMEOUT_MS,
                                  MAX_TIMEOUT_MS);
  if (out->connect_timeout_ms == 0)
    out->connect_timeout_ms = out->session_timeout_ms;
  return ZKRC_OK;
}

static zkrc_session *session_alloc(const char *hosts,
                                   const zkrc_session_options *opts) {
  zkrc_session *s = g_new0(zkrc_session, 1);
  g_mutex_init(&s->mu);
  g_cond_init(&s->cond);
  s->refs = 1;
  s->hosts = g_strdup(hosts);
  s->opts = *opts;
  s->state = ZKRC_SESSION_CONNECTING;
  s->negotiated_timeout_ms = opts->session_timeout_ms;
  s->listeners = g_ptr_array_new_with_free_func(g_free);
  s->observers = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, g_free);
  s->auths = g_ptr_array_new_with_free_func(free_auth);
  s->reap = g_ptr_array_new_with_free_func(free_reap);

  s->worker_ctx = g_main_context_new();
  s->worker_loop = g_main_loop_new(s->worker_ctx, FALSE);
  zkrc__lease_driver_init(s);
  s->worker = g_thread_new("zkrc-session", worker_main,
                           g_main_loop_ref(s->worker_loop));
  if (opts->executor) {
    s->executor = *opts->executor;
  } else {
    s->cb_queue = g_async_queue_new();
    s->cb_thread = g_thread_new("zkrc-callbacks", callback_thread_main,
                                g_async_queue_ref(s->cb_queue));
    s->executor.post = callback_thread_post;
    s->executor.ctx = s->cb_queue;
  }
  return s;
}

/* One "host:port" of a connect string: a host and a port in 1..65535. */
static gboolean valid_host_port(char *entry) {
  g_strchug(entry); /* the client skips spaces after commas */
  char *colon = strrchr(entry, ':');
  if (colon == NULL || colon == entry || colon[1] == '\0')
    return FALSE;
  char *end = NULL;
  long port = strtol(colon + 1, &end, 10);
  return *end == '\0' && port >= 1 && port <= 65535;
}

/* "host:port[,host:port...][/chroot]", as the ZooKeeper client parses it.
 * Checked here so that zookeeper_init() failing later means names that do
 * not resolve (retried), not a string that never will work. */
static int valid_hosts(const char *hosts) {
  if (hosts == NULL || *hosts == '\0' || strlen(hosts) >= 8192)
    return 0;
  const char *chroot = strchr(hosts, '/');
  if (chroot && strcmp(chroot, "/") != 0 &&
      zkrc_path_validate(chroot, NULL) != ZKRC_OK)
    return 0;
  char *list = g_strndup(hosts, chroot ? (gsize)(chroot - hosts)
                                       : strlen(hosts));
  char **entries = g_strsplit(list, ",", -1);
  int ok = entries[0] != NULL;
  for (int i = 0; ok && entries[i]; i++)
    ok = valid_host_port(entries[i]);
  g_strfreev(entries);
  g_free(list);
  return ok;
}

int zkrc_session_new(zkrc_session **out, const char *hosts,
                     const zkrc_session_options *opts) {
  if (out)
    *out = NULL;
  zkrc_session_options o;
  if (out == NULL || !valid_hosts(hosts) || normalize_options(&o, opts) != 0 ||
      (o.executor && o.executor->post == NULL))
    return zkrc__fail(ZKRC_EINVAL);
  zkrc_session *s = session_alloc(hosts, &o);
  if (o.listener) /* before connecting, so it hears the first CONNECTED */
    zkrc_session_add_listener(s, o.listener, o.listener_arg, NULL);
  int err = ZKRC_OK;
  g_mutex_lock(&s->mu);
  open_conn_locked_out(s, &err);
  g_mutex_unlock(&s->mu);
  if (err != ZKRC_OK) {
    s->closing = TRUE;
    zkrc__session_unref(s);
    return zkrc__fail(err);
  }
  *out = s;
  return ZKRC_OK;
}

int zkrc_session_wait_connected(zkrc_session *s, int timeout_ms) {
  if (s == NULL || !zkrc__timeout_valid(timeout_ms))
    return zkrc__fail(ZKRC_EINVAL);
  int64_t deadline = zkrc__deadline_after(timeout_ms);
  int err = ZKRC_OK;
  g_mutex_lock(&s->mu);
  while (s->state != ZKRC_SESSION_CONNECTED) {
    if (s->closing || s->state == ZKRC_SESSION_CLOSED) {
      err = ZKRC_ECLOSED;
      break;
    }
    if (!zkrc__cond_wait_until(&s->cond, &s->mu, deadline) &&
        s->state != ZKRC_SESSION_CONNECTED) {
      err = ZKRC_ETIMEDOUT;
      break;
    }
  }
  g_mutex_unlock(&s->mu);
  return zkrc__fail(err);
}

int zkrc_session_connect(zkrc_session **out, const char *hosts,
                         const zkrc_session_options *opts) {
  if (out == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  *out = NULL;
  zkrc_session *s = NULL;
  int err = zkrc_session_new(&s, hosts, opts);
  if (err != ZKRC_OK)
    return err;
  err = zkrc_session_wait_connected(s, s->opts.connect_timeout_ms);
  if (err != ZKRC_OK) {
    zkrc_session_close(s);
    return zkrc__fail(err == ZKRC_ETIMEDOUT ? ZKRC_ECONNECT : err);
  }
  *out = s;
  return ZKRC_OK;
}

int zkrc_session_adopt(zkrc_session **out, zhandle_t *zh, const char *hosts,
                       const zkrc_session_options *opts) {
  if (out)
    *out = NULL;
  zkrc_session_options o;
  if (out == NULL || zh == NULL || normalize_options(&o, opts) != 0 ||
      (hosts != NULL && !valid_hosts(hosts)) || is_unrecoverable(zh))
    return zkrc__fail(ZKRC_EINVAL);
  zkrc_session *s = session_alloc(hosts, &o);
  if (o.listener)
    zkrc_session_add_listener(s, o.listener, o.listener_arg, NULL);
  zkrc_conn *c = g_new0(zkrc_conn, 1);
  c->session = s;
  c->zh = zh;
  c->generation = ++s->last_generation;
  c->app_context = (void *)zoo_get_context(zh);
  zoo_set_context(zh, c);
  c->app_watcher = zoo_set_watcher(zh, global_watcher);
  zoo_set_log_callback(zh, zkrc__log_trampoline);

  g_mutex_lock(&s->mu);
  s->conn = c;
  zkrc__lease_handle_opened_locked(s);
  s->opened_us = 0; /* unknown: the lease starts with the renewals */
  gboolean connected = zoo_state(zh) == ZOO_CONNECTED_STATE;
  if (connected) {
    c->session_id = zoo_client_id(zh)->client_id;
    s->negotiated_timeout_ms = zoo_recv_timeout(zh);
  }
  int timeout_ms = s->negotiated_timeout_ms;
  g_mutex_unlock(&s->mu);
  if (connected) {
    /* The first renewal before the state is public, as on the worker. */
    zkrc__lease_connected(s, c, TRUE, timeout_ms);
    g_mutex_lock(&s->mu);
    s->state = ZKRC_SESSION_CONNECTED;
    g_mutex_unlock(&s->mu);
  }
  *out = s;
  return ZKRC_OK;
}

typedef struct close_job {
  zkrc_session *s;
  gboolean done;    /* the handle is closed */
  gboolean drained; /* earlier callbacks have run */
} close_job;

/* How long a close waits at most for the replies still in flight. */
#define CLOSE_DRAIN_MS 2000

/* Before closing a connected handle, let the replies to everything sent on
 * it arrive: the ZooKeeper client closes its socket with replies unread,
 * the kernel then answers with a reset, and the servers may never see our
 * close request, keeping our ephemeral nodes for a whole session timeout.
 * One sync, answered after every earlier request (one session's requests
 * are answered in order), marks the end.  Nothing new is sent meanwhile:
 * every recipe has been told CLOSED. */
static void drain_replies(zkrc_session *s, zkrc_conn *c) {
  if (zoo_state(c->zh) != ZOO_CONNECTED_STATE)
    return;
  int ms = zkrc_session_timeout(s);
  zkrc__call *marker = zkrc__call_new();
  if (zoo_async(c->zh, "/", zkrc__call_string_done, marker) != ZOK)
    zkrc__call_fail_unsent(marker, ZCONNECTIONLOSS);
  zkrc__call_wait(marker, zkrc__deadline_after(MIN(ms, CLOSE_DRAIN_MS)));
  zkrc__call_unref(marker);
}

/* Worker thread: tell everyone, then close the handle. */
static void close_on_worker(void *data) {
  close_job *job = data;
  zkrc_session *s = job->s;
  cancel_reopen(s);
  g_mutex_lock(&s->mu);
  zkrc_conn *c = s->conn;
  s->conn = NULL;
  if (c)
    c->retired = TRUE;
  zkrc__lease_stop_locked(s);
  /* A session that closed itself (no reopen after expiry) announced it. */
  gboolean announced = s->state == ZKRC_SESSION_CLOSED;
  s->state = ZKRC_SESSION_CLOSED;
  g_cond_broadcast(&s->cond);
  g_mutex_unlock(&s->mu);

  if (!announced)
    announce(s, ZKRC_SESSION_EVENT_CLOSED, c ? c->generation : 0);
  if (c) {
    drain_replies(s, c);
    close_conn(s, c);
  }

  g_mutex_lock(&s->mu);
  job->done = TRUE;
  g_cond_broadcast(&s->cond);
  g_mutex_unlock(&s->mu);
}

/* Runs on the executor after every callback posted before it. */
static void drained(void *data) {
  close_job *job = data;
  g_mutex_lock(&job->s->mu);
  job->drained = TRUE;
  g_cond_broadcast(&job->s->cond);
  g_mutex_unlock(&job->s->mu);
}

/* With the default executor, wait until the callbacks posted so far (the
 * CLOSED event among them) have run, so that the caller may free what its
 * listeners use once close returns.  Not from the callback thread itself. */
static void wait_for_callbacks(zkrc_session *s, close_job *job) {
  if (s->cb_thread == NULL || s->cb_thread == g_thread_self())
    return;
  zkrc__session_post(s, drained, job);
  g_mutex_lock(&s->mu);
  while (!job->drained)
    g_cond_wait(&s->cond, &s->mu);
  g_mutex_unlock(&s->mu);
}

void zkrc_session_close(zkrc_session *s) {
  if (s == NULL)
    return;
  g_mutex_lock(&s->mu);
  gboolean already = s->closing;
  s->closing = TRUE;
  g_mutex_unlock(&s->mu);
  if (!already) {
    close_job job = {s, FALSE, FALSE};
    if (on_worker_thread(s)) {
      close_on_worker(&job);
    } else {
      zkrc__session_run_on_worker(s, close_on_worker, &job);
      g_mutex_lock(&s->mu);
      while (!job.done)
        g_cond_wait(&s->cond, &s->mu);
      g_mutex_unlock(&s->mu);
    }
    wait_for_callbacks(s, &job);
    if (!on_worker_thread(s) && s->cb_thread != g_thread_self())
      wait_for_transient_refs(s);
  }
  zkrc__session_unref(s);
}

zkrc_session_state zkrc_session_get_state(zkrc_session *s) {
  if (s == NULL)
    return ZKRC_SESSION_CLOSED;
  g_mutex_lock(&s->mu);
  zkrc_session_state st = s->state;
  g_mutex_unlock(&s->mu);
  return st;
}

int64_t zkrc_session_id(zkrc_session *s) {
  if (s == NULL)
    return 0;
  g_mutex_lock(&s->mu);
  int64_t id = s->conn ? s->conn->session_id : 0;
  g_mutex_unlock(&s->mu);
  return id;
}

int zkrc_session_timeout(zkrc_session *s) {
  if (s == NULL)
    return 0;
  g_mutex_lock(&s->mu);
  int t = s->negotiated_timeout_ms;
  g_mutex_unlock(&s->mu);
  return t;
}

int zkrc_session_client_id(zkrc_session *s, clientid_t *out) {
  if (s == NULL || out == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  zkrc_conn *c = zkrc__conn_use(s);
  int err = ZKRC_ESTATE;
  if (c) {
    const clientid_t *id = zoo_client_id(c->zh);
    if (id->client_id != 0) {
      *out = *id;
      err = ZKRC_OK;
    }
    zkrc__conn_unuse(c);
  }
  return zkrc__fail(err);
}

int zkrc_session_add_listener(zkrc_session *s, zkrc_session_listener_fn fn,
                              void *arg, unsigned long *id) {
  if (s == NULL || fn == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  listener *l = g_new(listener, 1);
  l->fn = fn;
  l->arg = arg;
  g_mutex_lock(&s->mu);
  if (s->closing) {
    g_mutex_unlock(&s->mu);
    g_free(l);
    return zkrc__fail(ZKRC_ECLOSED);
  }
  l->id = ++s->next_listener_id;
  g_ptr_array_add(s->listeners, l);
  g_mutex_unlock(&s->mu);
  if (id)
    *id = l->id;
  return ZKRC_OK;
}

int zkrc_session_remove_listener(zkrc_session *s, unsigned long id) {
  if (s == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  int err = ZKRC_EINVAL;
  g_mutex_lock(&s->mu);
  for (guint i = 0; i < s->listeners->len; i++) {
    listener *l = g_ptr_array_index(s->listeners, i);
    if (l->id == id) {
      g_ptr_array_remove_index(s->listeners, i);
      err = ZKRC_OK;
      break;
    }
  }
  g_mutex_unlock(&s->mu);
  return zkrc__fail(err);
}

int zkrc_session_with_handle(zkrc_session *s,
                             int (*fn)(zhandle_t *zh, void *arg), void *arg) {
  if (s == NULL || fn == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  if (zkrc__session_closed(s))
    return zkrc__fail(ZKRC_ECLOSED);
  zkrc_conn *c = zkrc__conn_use(s);
  if (c == NULL)
    return zkrc__fail(ZKRC_ECONNLOSS);
  int rc = fn(c->zh, arg);
  zkrc__conn_unuse(c);
  return rc;
}

/* ------------------------------------------------------------ auth, ACL */

int zkrc_session_add_auth(zkrc_session *s, const char *scheme,
                          const char *cred, int timeout_ms) {
  if (s == NULL || scheme == NULL || *scheme == '\0' || cred == NULL ||
      !zkrc__timeout_valid(timeout_ms))
    return zkrc__fail(ZKRC_EINVAL);
  if (zkrc__session_closed(s))
    return zkrc__fail(ZKRC_ECLOSED);
  auth_entry *a = g_new(auth_entry, 1);
  a->scheme = g_strdup(scheme);
  a->cred = g_strdup(cred);
  g_mutex_lock(&s->mu);
  g_ptr_array_add(s->auths, a);
  g_mutex_unlock(&s->mu);

  zkrc_conn *c = zkrc__conn_use(s);
  if (c == NULL) /* between sessions: the next one gets it at its start */
    return ZKRC_OK;
  zkrc__call *call = zkrc__call_new();
  int rc = zoo_add_auth(c->zh, scheme, cred, (int)strlen(cred),
                        zkrc__call_void_done, call);
  zkrc__conn_unuse(c);
  if (rc != ZOK)
    zkrc__call_fail_unsent(call, rc);
  int err = ZKRC_OK;
  if (!zkrc__call_wait(call, zkrc__deadline_after(timeout_ms)))
    err = zkrc__fail(ZKRC_ETIMEDOUT);
  else if (call->rc != ZOK)
    err = zkrc__fail_zk(call->rc == ZAUTHFAILED ? ZKRC_EAUTHFAILED
                                                : zkrc_from_zk_error(call->rc),
                        call->rc);
  zkrc__call_unref(call);
  return err;
}

int zkrc__acl_valid(const struct ACL_vector *acl) {
  if (acl == NULL)
    return 1;
  if (acl->count <= 0 || acl->data == NULL)
    return 0;
  for (int i = 0; i < acl->count; i++) {
    const struct ACL *a = &acl->data[i];
    if (a->id.scheme == NULL || a->id.id == NULL || a->perms == 0 ||
        (a->perms & ~ZOO_PERM_ALL) != 0)
      return 0;
  }
  return 1;
}

struct zkrc__acl {
  gint refs; /* 0: the shared static open ACL, never freed */
  struct ACL_vector v;
};

static zkrc__acl open_acl; /* v filled from ZOO_OPEN_ACL_UNSAFE on use */

static gboolean is_open_acl(const struct ACL_vector *acl) {
  return acl == NULL || acl == &ZOO_OPEN_ACL_UNSAFE;
}

zkrc__acl *zkrc__acl_new(const struct ACL_vector *acl) {
  if (is_open_acl(acl)) {
    open_acl.v = ZOO_OPEN_ACL_UNSAFE; /* the same value every time */
    return &open_acl;
  }
  zkrc__acl *copy = g_new0(zkrc__acl, 1);
  copy->refs = 1;
  copy->v.count = acl->count;
  copy->v.data = g_new0(struct ACL, acl->count);
  for (int i = 0; i < acl->count; i++) {
    copy->v.data[i].perms = acl->data[i].perms;
    copy->v.data[i].id.scheme = g_strdup(acl->data[i].id.scheme);
    copy->v.data[i].id.id = g_strdup(acl->data[i].id.id);
  }
  return copy;
}

zkrc__acl *zkrc__acl_ref(zkrc__acl *acl) {
  if (acl->refs > 0)
    g_atomic_int_inc(&acl->refs);
  return acl;
}

void zkrc__acl_unref(zkrc__acl *acl) {
  if (acl == NULL || acl->refs == 0 || !g_atomic_int_dec_and_test(&acl->refs))
    return;
  for (int i = 0; i < acl->v.count; i++) {
    g_free(acl->v.data[i].id.scheme);
    g_free(acl->v.data[i].id.id);
  }
  g_free(acl->v.data);
  g_free(acl);
}

struct ACL_vector *zkrc__acl_vector(zkrc__acl *acl) { return &acl->v; }
