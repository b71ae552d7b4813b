/*
 * The set partitioner joining and leaving its party, never waiting (no
 * thread of its own, no blocking call): the join is a chain of
 * asynchronous creates (membership/create_path.h: <path>, <path>/party,
 * then our ephemeral node, kazoo's ShallowParty.join, an existing node
 * with our uuid being ours, created by a try whose reply was lost).  A
 * lost connection or a container removed under us is retried once the
 * connection is back, after a pause doubling from 20 ms to 500 ms, until a
 * session timeout after the start (FAILURE with ZKRC_ETIMEDOUT then); the
 * session's observer says when the connection is back, a timer on the
 * session's worker ends the wait.  Then the party's cache and the
 * session's listener are started, on the worker.
 *
 * The leave is our node's delete, sent without waiting; when it cannot be
 * confirmed (no connection), the node is handed to the session's reaper,
 * which deletes it once connected, unless its ZooKeeper session expired
 * meanwhile (the node then went with it).
 */
#include "config.h"

#include <string.h>

#include "core/util.h"
#include "membership/create_path.h"
#include "membership/partitioner_private.h"
#include "session/zk_call.h"

#define BACKOFF_MIN_MS 20
#define BACKOFF_MAX_MS 500

static void join_attempt(zkrc_partitioner *p);

static void unref_data(gpointer p) { zkrc__partitioner_unref(p); }

static gboolean retryable(int rc) {
  return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT || rc == ZNONODE;
}

/* ----------------------------------------------------------- leaving */

/* Hand our node to the session's reaper: deleted once connected, unless
 * ZooKeeper session @p gen expired (then it is gone already). */
static void reap_node(zkrc_partitioner *p, uint64_t gen) {
  const char *name = strrchr(p->node, '/') + 1;
  zkrc__session_reap(p->s, p->party_dir, name, name, gen);
}

static void left(int rc, const void *data) {
  zkrc_partitioner *p = (zkrc_partitioner *)data;
  rc = zkrc__session_reply_rc(p->s, rc);
  if (rc != ZOK && rc != ZNONODE)
    reap_node(p, p->node_gen); /* not confirmed: the reaper's */
  zkrc__object_idle(&p->o);
  zkrc__partitioner_unref(p);
}

void zkrc__partitioner_leave_locked(zkrc_partitioner *p) {
  p->leaving = TRUE;
  if (p->joining || p->left)
    return; /* the join's end leaves */
  p->left = TRUE;
  if (p->node_gen == 0) {
    if (p->maybe_gen) /* a create whose outcome we never learnt */
      reap_node(p, p->maybe_gen);
    return;
  }
  zkrc_conn *conn = zkrc__conn_use(p->s);
  int rc = ZCLOSING;
  if (conn) {
    zkrc__object_busy_locked(&p->o); /* free_async's done waits for it */
    rc = zkrc__zk_delete(conn, p->node, -1, left, zkrc__partitioner_ref(p));
    zkrc__conn_unuse(conn);
    if (rc != ZOK) {
      zkrc__object_idle_locked(&p->o);
      zkrc__partitioner_unref(p); /* not the last: the caller's holds */
    }
  }
  if (rc != ZOK)
    reap_node(p, p->node_gen); /* a closed session's drops it */
}

/* ----------------------------------------------------------- watching */

/* Joined: watch the party and the session (after joining: the first read
 * of the party then includes us).  On the worker; the join's reference. */
static void start_watching(void *arg) {
  zkrc_partitioner *p = arg;
  unsigned long listener = 0;
  zkrc_cache *c = NULL;
  int err = zkrc_session_add_listener(p->s, zkrc__partitioner_session_event, p,
                                      &listener);
  if (err == ZKRC_OK) {
    zkrc_cache_options co;
    zkrc_cache_options_init(&co);
    co.on_event = zkrc__partitioner_party_event;
    co.event_arg = p;
    err = zkrc_children_cache_new(&c, p->s, p->party_dir, &co);
  }
  g_mutex_lock(&p->o.mu);
  gboolean keep = !zkrc__object_ending(&p->o);
  if (keep) {
    p->listener = listener;
    p->party = c;
    if (err != ZKRC_OK)
      zkrc__partitioner_fail_locked(p, "the party could not be watched", err,
                                    ZOK);
    zkrc__object_idle_locked(&p->o); /* the join is over */
  }
  g_mutex_unlock(&p->o.mu);
  if (!keep) { /* freed meanwhile: the free could not see them */
    if (listener)
      zkrc_session_remove_listener(p->s, listener);
    zkrc_cache_free(c);
    zkrc__object_idle(&p->o);
  }
  zkrc__partitioner_unref(p);
}

/* ------------------------------------------------------------ joining */

typedef struct unobserve_job {
  zkrc_partitioner *p;
  unsigned long id;
} unobserve_job;

/* On the worker, where taking an observer out never waits. */
static void unobserve(void *arg) {
  unobserve_job *job = arg;
  zkrc__session_unobserve(job->p->s, job->id);
  zkrc__partitioner_unref(job->p); /* the observer's */
  g_free(job);
}

static void destroy_source(GSource **src) {
  if (*src) {
    g_source_destroy(*src);
    g_source_unref(*src);
    *src = NULL;
  }
}

/* The join is over: @p joined (our node exists, nothing stopped us) or
 * not.  Its timers and observer go; the watches start, or we leave. */
static void join_end_locked(zkrc_partitioner *p, gboolean joined) {
  p->joining = FALSE;
  p->join_waiting = FALSE;
  destroy_source(&p->join_timer);
  destroy_source(&p->join_deadline_timer);
  unobserve_job *job = g_new(unobserve_job, 1);
  *job = (unobserve_job){p, p->join_observer};
  zkrc__session_run_on_worker(p->s, unobserve, job);
  g_cond_broadcast(&p->o.cond);
  if (joined) {
    zkrc__session_run_on_worker(p->s, start_watching, zkrc__partitioner_ref(p));
    return; /* pending until the watches are started */
  }
  if (p->leaving)
    zkrc__partitioner_leave_locked(p);
  zkrc__object_idle_locked(&p->o);
}

void zkrc__partitioner_stop_join_locked(zkrc_partitioner *p) {
  if (p->joining && !p->join_inflight)
    join_end_locked(p, FALSE);
}

/* Should the join go on (before each request of its chain)? */
static gboolean join_go_on(void *arg) {
  zkrc_partitioner *p = arg;
  g_mutex_lock(&p->o.mu);
  gboolean go = p->joining && !zkrc__object_ending(&p->o) &&
                p->state != ZKRC_PARTITIONER_FAILURE;
  g_mutex_unlock(&p->o.mu);
  return go;
}

/* Try again after the pause (the connection is there). */
static gboolean retry_fired(gpointer data) {
  zkrc_partitioner *p = data;
  g_mutex_lock(&p->o.mu);
  gboolean go = p->join_timer != NULL && p->joining;
  if (p->join_timer) {
    g_source_unref(p->join_timer);
    p->join_timer = NULL;
  }
  p->join_inflight = go;
  g_mutex_unlock(&p->o.mu);
  if (go)
    join_attempt(p);
  return G_SOURCE_REMOVE;
}

static void pause_locked(zkrc_partitioner *p) {
  int ms = CLAMP(zkrc__ms_left(p->join_deadline), 0, p->join_backoff_ms);
  p->join_backoff_ms = MIN(p->join_backoff_ms * 2, BACKOFF_MAX_MS);
  p->join_timer = zkrc__session_timer(p->s, ms, retry_fired,
                                      zkrc__partitioner_ref(p), unref_data);
}

/* A try failed with a code worth retrying: once connected, after a
 * pause (a closed session is tried at once: its ZCLOSING ends the join). */
static void retry_locked(zkrc_partitioner *p) {
  if (zkrc__session_connected(p->s, 0) || zkrc__session_closed(p->s))
    pause_locked(p);
  else
    p->join_waiting = TRUE; /* join_observed() goes on */
}

/* The session's events while joining, on the worker (as the timers, so
 * that a connection checked by retry_locked is never missed). */
static void join_observed(zkrc_session *s, zkrc_session_event_type ev,
                          uint64_t generation, void *arg) {
  (void)s;
  (void)generation;
  zkrc_partitioner *p = arg;
  if (ev == ZKRC_SESSION_EVENT_SUSPENDED)
    return;
  g_mutex_lock(&p->o.mu);
  if (p->joining && p->join_waiting) { /* connected, or closed: try */
    p->join_waiting = FALSE;
    pause_locked(p);
  }
  g_mutex_unlock(&p->o.mu);
}

static gboolean deadline_fired(gpointer data) {
  zkrc_partitioner *p = data;
  g_mutex_lock(&p->o.mu);
  if (p->join_deadline_timer) {
    g_source_unref(p->join_deadline_timer);
    p->join_deadline_timer = NULL;
  }
  if (p->joining && !zkrc__object_ending(&p->o)) {
    zkrc__partitioner_fail_locked(p, "the party could not be joined",
                                  ZKRC_ETIMEDOUT, ZOK);
    zkrc__partitioner_stop_join_locked(p); /* or at the reply */
  }
  g_mutex_unlock(&p->o.mu);
  return G_SOURCE_REMOVE;
}

/* The end of one try's chain (create_path.h), with its reference. */
static void join_tried(int rc, uint64_t gen, gboolean node_sent, void *arg) {
  zkrc_partitioner *p = arg;
  gboolean made = rc == ZOK || rc == ZNODEEXISTS;
  g_mutex_lock(&p->o.mu);
  p->join_inflight = FALSE;
  if (made)
    p->node_gen = gen;
  else if (node_sent && (rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT))
    p->maybe_gen = gen; /* it may have been made */
  gboolean stopped =
      zkrc__object_ending(&p->o) || p->state == ZKRC_PARTITIONER_FAILURE;
  if (!made && !stopped && retryable(rc) &&
      zkrc__ms_left(p->join_deadline) > 0) {
    retry_locked(p);
  } else {
    if (!made && !stopped) {
      int late = rc == ZOPERATIONTIMEOUT || rc == ZKRC__CREATE_STOPPED;
      zkrc__partitioner_fail_locked(
          p, "the party could not be joined",
          late ? ZKRC_ETIMEDOUT : zkrc_from_zk_error(rc), late ? ZOK : rc);
    }
    join_end_locked(p, made && !stopped);
  }
  g_mutex_unlock(&p->o.mu);
  zkrc__partitioner_unref(p);
}

static void join_attempt(zkrc_partitioner *p) {
  /* Not <path>/locks: the item locks make it, as they make their own
   * directories (a container that never had a child would stay). */
  zkrc__create_path_args a = {.path = p->node,
                              .data = p->identifier,
                              .len = strlen(p->identifier),
                              .flags = ZOO_EPHEMERAL,
                              .acl = p->acl};
  zkrc__create_path(p->s, &a, join_go_on, join_tried, zkrc__partitioner_ref(p));
}

void zkrc__partitioner_join(zkrc_partitioner *p) {
  int timeout = zkrc_session_timeout(p->s);
  p->joining = TRUE;
  p->join_inflight = TRUE;
  zkrc__object_busy_locked(&p->o); /* p is not shared yet */
  p->join_deadline = zkrc__deadline_after(timeout);
  p->join_backoff_ms = BACKOFF_MIN_MS;
  p->join_observer = zkrc__session_observe(p->s, join_observed,
                                           zkrc__partitioner_ref(p), NULL);
  p->join_deadline_timer =
      zkrc__session_timer(p->s, MAX(timeout, 0), deadline_fired,
                          zkrc__partitioner_ref(p), unref_data);
  join_attempt(p);
}
