/*
 * Sessions: creating one, closing it, its references, and the public
 * getters.  The rest of the session lives beside it (session_private.h
 * lists the files).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "session/call.h"
#include "core/log_internal.h"
#include "session/session_private.h"
#include "core/util.h"
#include "session/zk_call.h"
#include "zkrecipes.h"

#define DEFAULT_SESSION_TIMEOUT_MS 10000
#define MIN_TIMEOUT_MS 100
#define MAX_TIMEOUT_MS 1000000000

/* -------------------------------------------------------- ref counting */

zkrc_session *zkrc__session_ref(zkrc_session *s) {
  zkrc__object_ref(&s->o);
  return s;
}

static void session_free(zkrc_session *s) {
  zkrc__session_threads_stop(s);
  g_ptr_array_free(s->listeners, TRUE);
  g_hash_table_destroy(s->observers);
  g_ptr_array_free(s->auths, TRUE);
  g_ptr_array_free(s->reap, TRUE);
  zkrc__dirtable_free(s->dirs);
  g_free(s->hosts);
  g_free(s->followed_hosts);
  zkrc__secure_free(s->secure); /* after the last handle (its callbacks) */
  /* Every contender, in the gate's line or not, holds a reference on us. */
  g_assert(s->queue.gate.head == NULL && s->queue.contenders == NULL);
  g_mutex_clear(&s->queue.gate.mu);
  g_mutex_clear(&s->queue.contenders_mu);
  g_ptr_array_free(s->siblings, TRUE);
  g_mutex_clear(&s->siblings_mu);
  zkrc__session_deadlines_clear(s);
  g_mutex_clear(&s->o.mu);
  g_cond_clear(&s->o.cond);
  g_free(s);
}

static void session_own_unref(zkrc__object *o) {
  zkrc__session_unref((zkrc_session *)o);
}

void zkrc__session_unref(zkrc_session *s) {
  if (s == NULL)
    return;
  /* zkrc_session_close() may be waiting for this reference to go.  Tell it
   * under the mutex, and touch nothing after letting the mutex go: once
   * the reference is gone the closer may free the session.  (Decrementing
   * first and waking it afterwards was a use after free, found by TSan.)
   * Read while our reference keeps the session alive. */
  if (g_atomic_int_get(&s->closing_waiters) > 0) {
    g_mutex_lock(&s->o.mu);
    gboolean last = g_atomic_int_dec_and_test(&s->o.refs);
    if (!last)
      g_cond_broadcast(&s->o.cond);
    g_mutex_unlock(&s->o.mu);
    if (last)
      session_free(s);
    return;
  }
  if (g_atomic_int_dec_and_test(&s->o.refs))
    session_free(s);
}

zkrc_session *zkrc__session_ref_recipe(zkrc_session *s) {
  g_atomic_int_inc(&s->recipes);
  return zkrc__session_ref(s);
}

void zkrc__session_unref_recipe(zkrc_session *s) {
  g_mutex_lock(&s->o.mu);            /* the mutex orders it with close's wait */
  g_atomic_int_add(&s->recipes, -1); /* incremented without the mutex */
  g_cond_broadcast(&s->o.cond);
  g_mutex_unlock(&s->o.mu);
  zkrc__session_unref(s);
}

/* When the application freed its recipes before closing, wait a little for
 * the references that are about to go by themselves (requests in flight,
 * contenders finishing a delete): the last reference then goes in
 * zkrc_session_close() itself, which joins the session's threads, so
 * nothing of the session outlives the call.  Not for calls still queued on
 * the executor: on an executor of the application's (a GLib main context,
 * a file descriptor's loop) they run only when the application's loop
 * does, maybe on the very thread that is closing (waiting for them stalled
 * every close with a listener for the whole 2 s); the last of them drops
 * the last reference.  The default executor's were run before. */
#define CLOSE_SETTLE_MS 2000

static void wait_for_transient_refs(zkrc_session *s) {
  int64_t deadline = zkrc__deadline_after(CLOSE_SETTLE_MS);
  g_atomic_int_inc(&s->closing_waiters);
  g_mutex_lock(&s->o.mu);
  /* Recipe objects still alive keep references (and their contenders do):
   * the session then ends with the last of them, later. */
  while (g_atomic_int_get(&s->recipes) == 0 &&
         g_atomic_int_get(&s->o.refs) - g_atomic_int_get(&s->posted) -
                 g_atomic_int_get(&s->o.queued) >
             1 &&
         g_cond_wait_until(&s->o.cond, &s->o.mu, deadline))
    ;
  g_mutex_unlock(&s->o.mu);
  g_atomic_int_add(&s->closing_waiters, -1);
}

/* ------------------------------------------------------- pinned handles */

zkrc_conn *zkrc__conn_use(zkrc_session *s) {
  g_mutex_lock(&s->o.mu);
  zkrc_conn *c = s->conn;
  if (c)
    c->users++;
  g_mutex_unlock(&s->o.mu);
  return c;
}

void zkrc__conn_unuse(zkrc_conn *c) {
  zkrc_session *s = c->session;
  g_mutex_lock(&s->o.mu);
  if (--c->users == 0 && c->retired)
    g_cond_broadcast(&s->o.cond);
  g_mutex_unlock(&s->o.mu);
}

/* zkrc__session_connected with s->o.mu held. */
static gboolean connected_locked(zkrc_session *s, uint64_t generation) {
  return s->conn && s->state == ZKRC_SESSION_CONNECTED &&
         (generation == 0 || s->conn->generation == generation);
}

gboolean zkrc__session_connected(zkrc_session *s, uint64_t generation) {
  g_mutex_lock(&s->o.mu);
  gboolean up = connected_locked(s, generation);
  g_mutex_unlock(&s->o.mu);
  return up;
}

zkrc__dirtable *zkrc__session_dirs(zkrc_session *s) { return s->dirs; }

zkrc__session_queue *zkrc__session_queue_of(zkrc_session *s) {
  return &s->queue;
}

zkrc_conn *zkrc__conn_use_connected(zkrc_session *s, uint64_t generation) {
  g_mutex_lock(&s->o.mu);
  zkrc_conn *c = connected_locked(s, generation) ? s->conn : NULL;
  if (c)
    c->users++;
  g_mutex_unlock(&s->o.mu);
  return c;
}

zkrc__session_view zkrc__session_look(zkrc_session *s, uint64_t generation) {
  int64_t now = g_get_monotonic_time();
  g_mutex_lock(&s->o.mu);
  zkrc__session_view v = {
      .generation = s->conn ? s->conn->generation : 0,
      .session_id = s->conn ? s->conn->session_id : 0,
      .lease_left = zkrc__lease_left_locked(s, generation, now),
  };
  g_mutex_unlock(&s->o.mu);
  return v;
}

gboolean zkrc__session_closed_locked(zkrc_session *s) {
  /* Closed by the application, or dead and not to be reopened (no_reopen,
   * an adopted handle without hosts, failed authentication). */
  return s->closing || s->state == ZKRC_SESSION_CLOSED;
}

gboolean zkrc__session_closed(zkrc_session *s) {
  g_mutex_lock(&s->o.mu);
  gboolean closed = zkrc__session_closed_locked(s);
  g_mutex_unlock(&s->o.mu);
  return closed;
}

size_t zkrc__session_chroot_len(zkrc_session *s) {
  /* The hosts never change after the session is made: no lock needed. */
  const char *chroot = s && s->hosts ? strchr(s->hosts, '/') : NULL;
  return chroot && strcmp(chroot, "/") != 0 ? strlen(chroot) : 0;
}

int zkrc__session_reply_rc(zkrc_session *s, int zk_rc) {
  if (zk_rc != ZCLOSING && zk_rc != ZINVALIDSTATE)
    return zk_rc;
  return zkrc__session_closed(s) ? ZCLOSING : ZCONNECTIONLOSS;
}

/* ---------------------------------------------------------- public API */

/* The defaults, in a whole struct of ours. */
static void session_options_defaults(zkrc_session_options *opts) {
  if (opts == NULL)
    return;
  memset(opts, 0, sizeof *opts);
  opts->size = sizeof *opts;
  opts->session_timeout_ms = DEFAULT_SESSION_TIMEOUT_MS;
}

void zkrc_session_options_init_sized(zkrc_session_options *opts, size_t size) {
  zkrc_session_options full;
  session_options_defaults(&full);
  zkrc__options_give(opts, size, &full, sizeof full);
}

static int normalize_options(zkrc_session_options *out,
                             const zkrc_session_options *in) {
  zkrc_session_options_init(out);
  if (!zkrc__options_take(out, sizeof *out, in) ||
      out->session_timeout_ms < 0 || out->server_tick_ms < 0 ||
      !zkrc__timeout_valid(out->connect_timeout_ms))
    return ZKRC_EINVAL;
  if (out->session_timeout_ms == 0)
    out->session_timeout_ms = DEFAULT_SESSION_TIMEOUT_MS;
  /* The servers clamp the timeout to 2..20 ticks, but the ZooKeeper client
   * uses the requested one until they answer: it gives up a handshake that
   * takes more than two thirds of it (1 ms never connects, 2 ms hardly),
   * and its arithmetic overflows near INT_MAX.  So it gets 100 ms at
   * least and 10^9 at most. */
  out->session_timeout_ms =
      CLAMP(out->session_timeout_ms, MIN_TIMEOUT_MS, MAX_TIMEOUT_MS);
  if (out->connect_timeout_ms == 0)
    out->connect_timeout_ms = out->session_timeout_ms;
  if (out->lease_allowance_ms < 0 ||
      out->lease_allowance_ms > out->session_timeout_ms / 2 ||
      (out->lease_renewal != ZKRC_LEASE_ON_DEMAND &&
       out->lease_renewal != ZKRC_LEASE_ALWAYS))
    return ZKRC_EINVAL;
  return zkrc__secure_check(out);
}

zkrc_session *zkrc__session_alloc(const char *hosts,
                                  const zkrc_session_options *opts) {
  zkrc_session *s = g_new0(zkrc_session, 1);
  zkrc__object_init(&s->o, zkrc__session_executor(s), NULL);
  s->o.own_unref = session_own_unref;
  s->hosts = g_strdup(hosts);
  s->opts = *opts;
  s->secure = zkrc__secure_new(&s->opts);
  s->state = ZKRC_SESSION_CONNECTING;
  s->end_event = ZKRC_SESSION_EVENT_CLOSED;
  s->negotiated_timeout_ms = opts->session_timeout_ms;
  /* Renewed all the time: as if one dependent never went. */
  s->lease_demand = opts->lease_renewal == ZKRC_LEASE_ALWAYS;
  s->listeners = g_ptr_array_new_with_free_func(g_free);
  s->observers =
      g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, g_free);
  s->auths = g_ptr_array_new_with_free_func(zkrc__auth_entry_free);
  s->reap = zkrc__reaper_new();
  s->dirs = zkrc__dirtable_new(ZKRC__DIRTABLE_CAPACITY);
  g_mutex_init(&s->queue.gate.mu);
  s->queue.gate.limit = ZKRC__GATE_SLOTS;
  s->queue.gate.head = s->queue.gate.tail = NULL;
  g_mutex_init(&s->queue.contenders_mu);
  g_mutex_init(&s->siblings_mu);
  s->siblings =
      g_ptr_array_new_with_free_func((GDestroyNotify)zkrc__session_unref);
  zkrc__session_deadlines_init(s);
  zkrc__session_threads_start(s);
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
  char *list =
      g_strndup(hosts, chroot ? (gsize)(chroot - hosts) : strlen(hosts));
  char **entries = g_strsplit(list, ",", -1);
  int ok = entries[0] != NULL;
  for (int i = 0; ok && entries[i]; i++)
    ok = valid_host_port(entries[i]);
  g_strfreev(entries);
  g_free(list);
  return ok;
}

uint64_t zkrc__session_next_generation_locked(zkrc_session *s) {
  static uint64_t last; /* of the process: atomic */
  s->last_generation = __atomic_add_fetch(&last, 1, __ATOMIC_RELAXED);
  return s->last_generation;
}

int zkrc__session_open_first(zkrc_session *s) {
  int err = ZKRC_OK;
  zkrc__log_defer_begin(); /* zookeeper_init2 logs with our mutex held */
  g_mutex_lock(&s->o.mu);
  zkrc__session_open_locked(s, &err);
  g_mutex_unlock(&s->o.mu);
  zkrc__log_flush(zkrc__log_defer_end());
  if (err != ZKRC_OK) {
    s->closing = TRUE;
    zkrc__session_unref(s);
  }
  return err;
}

int zkrc_session_new(zkrc_session **out, const char *hosts,
                     const zkrc_session_options *opts) {
  if (out)
    *out = NULL;
  zkrc_session_options o;
  if (out == NULL || !valid_hosts(hosts))
    return zkrc__fail(ZKRC_EINVAL);
  int bad = normalize_options(&o, opts);
  if (bad == ZKRC_OK && o.executor && o.executor->post == NULL)
    bad = ZKRC_EINVAL;
  if (bad != ZKRC_OK)
    return zkrc__fail(bad);
  zkrc_session *s = zkrc__session_alloc(hosts, &o);
  if (o.on_event) /* before connecting, so it hears the first CONNECTED */
    zkrc_session_add_listener(s, o.on_event, o.event_arg, NULL);
  zkrc__session_ensemble_start(s);
  int err = zkrc__session_open_first(s);
  if (err != ZKRC_OK)
    return zkrc__fail(err);
  *out = s;
  return ZKRC_OK;
}

int zkrc_session_wait_connected(zkrc_session *s, int timeout_ms) {
  if (s == NULL || !zkrc__timeout_valid(timeout_ms))
    return zkrc__fail(ZKRC_EINVAL);
  int64_t deadline = zkrc__deadline_after(timeout_ms);
  int err = ZKRC_OK;
  g_mutex_lock(&s->o.mu);
  while (s->state != ZKRC_SESSION_CONNECTED) {
    if (s->closing || s->state == ZKRC_SESSION_CLOSED) {
      err = ZKRC_ECLOSED;
      break;
    }
    if (!zkrc__cond_wait_until(&s->o.cond, &s->o.mu, deadline) &&
        s->state != ZKRC_SESSION_CONNECTED) {
      err = ZKRC_ETIMEDOUT;
      break;
    }
  }
  g_mutex_unlock(&s->o.mu);
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
  if (err == ZKRC_ECLOSED) { /* it ended itself: refused credentials */
    int zk_error = ZOK;
    zkrc__session_event_reason(s, ZKRC_SESSION_EVENT_CLOSED, &err, &zk_error);
  }
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
  if (out == NULL || zh == NULL || (hosts != NULL && !valid_hosts(hosts)) ||
      is_unrecoverable(zh))
    return zkrc__fail(ZKRC_EINVAL);
  int bad = normalize_options(&o, opts);
  if (bad != ZKRC_OK)
    return zkrc__fail(bad);
  zkrc_session *s = zkrc__session_alloc(hosts, &o);
  if (o.on_event)
    zkrc_session_add_listener(s, o.on_event, o.event_arg, NULL);
  /* Following needs the list the handle was opened with: without hosts
   * there is none to compare with, nor to reopen with. */
  if (hosts != NULL)
    zkrc__session_ensemble_start(s);
  zkrc_conn *c = g_new0(zkrc_conn, 1);
  c->session = s;
  c->zh = zh;
  c->generation = zkrc__session_next_generation_locked(s);
  zoo_set_log_callback(zh, zkrc__log_trampoline);

  /* Our watcher may run on the client's thread as soon as it is
   * installed, before zoo_set_watcher has returned the application's: it
   * reads them under the mutex. */
  g_mutex_lock(&s->o.mu);
  c->app_context = (void *)zoo_get_context(zh);
  c->app_watcher = zkrc__zk_adopt(c);
  s->conn = c;
  zkrc__lease_handle_opened_locked(s);
  s->opened_us = 0; /* unknown: the lease starts with the renewals */
  gboolean connected = zoo_state(zh) == ZOO_CONNECTED_STATE;
  if (connected) {
    c->session_id = zoo_client_id(zh)->client_id;
    s->last_session_id = c->session_id;
    s->negotiated_timeout_ms = zoo_recv_timeout(zh);
  }
  int timeout_ms = s->negotiated_timeout_ms;
  g_mutex_unlock(&s->o.mu);
  if (connected) {
    /* The first renewal before the state is public, as on the worker. */
    zkrc__lease_connected(s, c, TRUE, timeout_ms);
    g_mutex_lock(&s->o.mu);
    s->state = ZKRC_SESSION_CONNECTED;
    g_mutex_unlock(&s->o.mu);
    if (hosts != NULL) /* no CONNECTED will tell the tracker */
      zkrc__session_ensemble_read_now(s);
  }
  *out = s;
  return ZKRC_OK;
}

typedef struct close_job {
  zkrc_session *s;
  gboolean done;    /* the handle is closed */
  gboolean drained; /* earlier callbacks have run */
} close_job;

/* Worker thread: tell everyone, then close the handle. */
static void close_on_worker(void *data) {
  close_job *job = data;
  zkrc_session *s = job->s;
  zkrc__session_cancel_reopen(s);
  g_mutex_lock(&s->o.mu);
  zkrc_conn *c = s->conn;
  s->conn = NULL;
  if (c)
    c->retired = TRUE;
  zkrc__lease_stop_locked(s);
  /* A session that closed itself (no reopen after expiry) announced it. */
  gboolean announced = s->state == ZKRC_SESSION_CLOSED;
  s->state = ZKRC_SESSION_CLOSED;
  g_cond_broadcast(&s->o.cond);
  g_mutex_unlock(&s->o.mu);

  if (!announced)
    zkrc__session_announce(s, ZKRC_SESSION_EVENT_CLOSED, c ? c->generation : 0);
  if (c) {
    zkrc__session_drain(s, c);
    zkrc__session_close_conn(s, c);
  }
  zkrc__session_close_parked(s);

  g_mutex_lock(&s->o.mu);
  job->done = TRUE;
  g_cond_broadcast(&s->o.cond);
  g_mutex_unlock(&s->o.mu);
}

/* Runs on the executor after every callback posted before it. */
static void drained(void *data) {
  close_job *job = data;
  g_mutex_lock(&job->s->o.mu);
  job->drained = TRUE;
  g_cond_broadcast(&job->s->o.cond);
  g_mutex_unlock(&job->s->o.mu);
}

/* With the default executor, wait until the callbacks posted so far (the
 * CLOSED event among them) have run, so that the caller may free what its
 * listeners use once close returns.  Not from the callback thread itself. */
static void wait_for_callbacks(zkrc_session *s, close_job *job) {
  if (s->cb_thread == NULL || s->cb_thread == g_thread_self())
    return;
  zkrc__session_post(s, drained, job);
  g_mutex_lock(&s->o.mu);
  while (!job->drained)
    g_cond_wait(&s->o.cond, &s->o.mu);
  g_mutex_unlock(&s->o.mu);
}

void zkrc_session_close(zkrc_session *s) {
  if (s == NULL)
    return;
  g_mutex_lock(&s->o.mu);
  gboolean already = s->closing;
  s->closing = TRUE;
  g_mutex_unlock(&s->o.mu);
  if (!already) {
    zkrc__session_close_siblings(s);
    close_job job = {s, FALSE, FALSE};
    if (zkrc__session_on_worker(s)) {
      close_on_worker(&job);
    } else {
      zkrc__session_run_on_worker(s, close_on_worker, &job);
      g_mutex_lock(&s->o.mu);
      while (!job.done)
        g_cond_wait(&s->o.cond, &s->o.mu);
      g_mutex_unlock(&s->o.mu);
    }
    wait_for_callbacks(s, &job);
    if (!zkrc__session_on_worker(s) && s->cb_thread != g_thread_self())
      wait_for_transient_refs(s);
  }
  zkrc__session_unref(s);
}

int zkrc__request_deadline(zkrc_session *s, int timeout_ms, int64_t *deadline) {
  if (timeout_ms != ZKRC_NO_WAIT) {
    *deadline = zkrc__deadline_after(timeout_ms);
    return ZKRC_OK;
  }
  zkrc_session_state st = zkrc_session_get_state(s);
  if (st == ZKRC_SESSION_CLOSED)
    return ZKRC_ECLOSED;
  if (st != ZKRC_SESSION_CONNECTED)
    return ZKRC_ECONNLOSS;
  *deadline = zkrc__deadline_after(zkrc_session_timeout(s));
  return ZKRC_OK;
}

zkrc_session_state zkrc_session_get_state(zkrc_session *s) {
  if (s == NULL)
    return ZKRC_SESSION_CLOSED;
  g_mutex_lock(&s->o.mu);
  zkrc_session_state st = s->state;
  g_mutex_unlock(&s->o.mu);
  return st;
}

int64_t zkrc_session_id(zkrc_session *s) {
  if (s == NULL)
    return 0;
  g_mutex_lock(&s->o.mu);
  int64_t id = s->conn ? s->conn->session_id : 0;
  g_mutex_unlock(&s->o.mu);
  return id;
}

int zkrc_session_timeout(zkrc_session *s) {
  if (s == NULL)
    return 0;
  g_mutex_lock(&s->o.mu);
  int t = s->negotiated_timeout_ms;
  g_mutex_unlock(&s->o.mu);
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
