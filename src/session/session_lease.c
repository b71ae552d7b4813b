/*
 * The session's lease driver: sends the renewals (syncs), feeds their
 * answers to the lease (lease.h), and declares the session LOST the moment
 * the lease runs out, whatever the ZooKeeper client thinks of its
 * connection.  While nothing depends on the lease (s->lease_demand is 0)
 * it rests: keepalives (reads the server answers on its own) go instead
 * of renewals, remembered so that the first renewal after a wake can
 * establish the lease at once, and the lapse timer waits for the servers
 * to be silent too long (lease.h, "Heard") instead of for the deadline.
 *
 * Threads.  Renewals are sent from the worker (its timer, or a new
 * connection) and answered on ZooKeeper's completion thread, which updates
 * the lease under s->o.mu and re-arms the worker's timers (GLib allows that
 * from any thread).  The lapse itself is handled on the worker, where
 * handles are retired.
 */
#include "config.h"

#include <string.h>

#include "session/session_private.h"
#include "core/util.h"
#include "session/zk_call.h"
#include "zkrecipes.h"

typedef struct renewal {
  zkrc_session *s; /* referenced */
  uint64_t generation;
  unsigned connection;
  int64_t sent;
  gboolean keepalive; /* a resting lease's read, not a sync */
} renewal;

/* ------------------------------------------------------------- timers */

/* A source that fires when its ready time (g_source_set_ready_time) comes;
 * -1 disarms it. */
static gboolean ready_time_dispatch(GSource *src, GSourceFunc fn,
                                    gpointer data) {
  (void)src;
  return fn(data);
}

static GSourceFuncs ready_time_funcs = {NULL, NULL, ready_time_dispatch,
                                        NULL, NULL, NULL};

static GSource *ready_time_source(zkrc_session *s, GSourceFunc fn) {
  GSource *src = g_source_new(&ready_time_funcs, sizeof(GSource));
  g_source_set_callback(src, fn, s, NULL);
  g_source_set_ready_time(src, -1);
  g_source_attach(src, s->worker_ctx);
  return src;
}

/* Does the lease describe the current handle?  (s->o.mu held.) */
static gboolean lease_current_locked(zkrc_session *s) {
  return s->conn != NULL && s->lease_generation == s->conn->generation;
}

static void arm_lapse_locked(zkrc_session *s) {
  int64_t at = zkrc__lease_lapse_at(&s->lease);
  g_source_set_ready_time(s->lapse_timer, at > 0 ? at : -1);
}

/* --------------------------------------------------------- the lapse */

static gboolean lapse_fired(gpointer data) {
  zkrc_session *s = data;
  int64_t now = g_get_monotonic_time();
  g_mutex_lock(&s->o.mu);
  g_source_set_ready_time(s->lapse_timer, -1);
  gboolean lost =
      lease_current_locked(s) && zkrc__lease_expired_at(&s->lease, now);
  if (lost) {
    s->lease.lapsed = TRUE; /* nothing extends it any more */
    s->n_lease_losses++;
    s->lapse_due_us = zkrc__lease_lapse_at(&s->lease); /* loss_told */
    s->lapse_allowance_us = s->lease.p.allowance_us;
  } else if (lease_current_locked(s))
    arm_lapse_locked(s); /* extended meanwhile */
  g_mutex_unlock(&s->o.mu);
  if (lost)
    zkrc__session_retire(s, ZKRC_SESSION_EVENT_LOST);
  return G_SOURCE_CONTINUE;
}

/* ------------------------------------------------------------ renewals */

typedef struct leased_job {
  zkrc_session *s;
  uint64_t generation;
} leased_job;

static void announce_leased(void *data) {
  leased_job *job = data;
  zkrc__session_notify_observers(job->s, ZKRC__SESSION_EVENT_LEASED,
                                 job->generation);
  g_free(job);
}

static gboolean is_connection_error(int rc) {
  return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT ||
         rc == ZSESSIONEXPIRED || rc == ZCLOSING || rc == ZINVALIDSTATE;
}

/* A renewal's answer (s->o.mu held): extend the lease; schedule the next
 * renewal, or a keepalive if the lease rests now.  TRUE when this
 * established the lease (announce LEASED). */
static gboolean renewed_locked(zkrc_session *s, renewal *r, int64_t now) {
  gboolean was_established = s->lease.established, leased = FALSE;
  if (zkrc__lease_confirm(&s->lease, r->sent, now))
    leased = !was_established;
  if (s->lease.lapsed)
    g_source_set_ready_time(s->lapse_timer, 0); /* handle it now */
  else
    arm_lapse_locked(s); /* extended, or heard: later */
  g_source_set_ready_time(
      s->renew_timer, s->lease_demand > 0 ? zkrc__lease_next_renewal_for(
                                                &s->lease, r->sent, now)
                                          : r->sent + s->lease.p.keepalive_us);
  return leased;
}

/* A keepalive's answer (s->o.mu held): remember it; the next goes a
 * keepalive spacing (lease.h) after it, or a renewal at once if the lease was woken meanwhile
 * (zkrc__session_lease_want could not send it: this was in flight). */
static void kept_alive_locked(zkrc_session *s, renewal *r, int64_t now) {
  zkrc__lease_touched(&s->lease, r->sent, now);
  arm_lapse_locked(s); /* heard: later */
  g_source_set_ready_time(
      s->renew_timer,
      s->lease_demand > 0 ? 0 : r->sent + s->lease.p.keepalive_us);
}

/* ZooKeeper's completion thread: a renewal or keepalive was answered (or
 * failed). */
static void renewal_done(int rc, const char *value, const void *data) {
  (void)value;
  renewal *r = (renewal *)data;
  zkrc_session *s = r->s;
  int64_t now = g_get_monotonic_time();
  gboolean leased = FALSE;
  g_mutex_lock(&s->o.mu);
  if (lease_current_locked(s) && s->lease_generation == r->generation &&
      s->connection == r->connection) {
    s->renewal_in_flight = FALSE;
    if (r->keepalive && !is_connection_error(rc)) {
      kept_alive_locked(s, r, now); /* any answer: the server heard us */
    } else if (rc == ZOK) {
      leased = renewed_locked(s, r, now);
    } else if (!is_connection_error(rc)) {
      /* Not expected of a sync; try again a period later, not at once. */
      g_source_set_ready_time(s->renew_timer, r->sent + s->lease.p.period_us);
    }
    /* A lost connection: the next one sends a renewal first thing. */
  }
  g_mutex_unlock(&s->o.mu);
  if (leased) {
    leased_job *job = g_new(leased_job, 1);
    job->s = s;
    job->generation = r->generation;
    zkrc__session_run_on_worker(s, announce_leased, job);
  }
  zkrc__session_unref(s);
  g_free(r);
}

static void keepalive_done(int rc, const struct Stat *stat, const void *data) {
  (void)stat;
  renewal_done(rc, NULL, data);
}

/* Send a renewal (a keepalive while the lease rests) on the current handle
 * unless one is in flight.  From the timer only while connected;
 * @p any_state for a connection not yet made public. */
static void send_renewal(zkrc_session *s, gboolean any_state) {
  g_mutex_lock(&s->o.mu);
  zkrc_conn *c = s->conn;
  if (!lease_current_locked(s) || s->renewal_in_flight ||
      (!any_state && s->state != ZKRC_SESSION_CONNECTED)) {
    g_mutex_unlock(&s->o.mu);
    return;
  }
  c->users++;
  s->renewal_in_flight = TRUE;
  renewal *r = g_new(renewal, 1);
  r->s = zkrc__session_ref(s);
  r->generation = c->generation;
  r->connection = s->connection;
  r->keepalive = s->lease_demand == 0;
  g_mutex_unlock(&s->o.mu);
  /* Before the request leaves: the lease may only count from earlier. */
  r->sent = g_get_monotonic_time();
  /* The keepalive: any read of a node that always exists (the chroot's
   * root may not: an answer of ZNONODE is an answer all the same). */
  int rc = r->keepalive ? zkrc__zk_exists(c, "/", NULL, keepalive_done, r)
                        : zkrc__zk_sync(c, "/", renewal_done, r);
  zkrc__conn_unuse(c);
  if (rc == ZOK)
    __atomic_fetch_add(r->keepalive ? &s->n_keepalives : &s->n_renewals, 1,
                       __ATOMIC_RELAXED);
  else
    renewal_done(ZCONNECTIONLOSS, NULL, r);
}

static gboolean renew_fired(gpointer data) {
  zkrc_session *s = data;
  g_source_set_ready_time(s->renew_timer, -1);
  send_renewal(s, FALSE);
  return G_SOURCE_CONTINUE;
}

/* -------------------------------------------------------- session side */

void zkrc__lease_driver_init(zkrc_session *s) {
  s->renew_timer = ready_time_source(s, renew_fired);
  s->lapse_timer = ready_time_source(s, lapse_fired);
  /* Handle turnover's (session_conn.c): the same life as the others. */
  s->fresh_timer = ready_time_source(s, zkrc__session_fresh_fired);
  s->park_timer = ready_time_source(s, zkrc__session_park_fired);
}

void zkrc__lease_driver_free(zkrc_session *s) {
  g_source_destroy(s->renew_timer);
  g_source_unref(s->renew_timer);
  g_source_destroy(s->lapse_timer);
  g_source_unref(s->lapse_timer);
  g_source_destroy(s->fresh_timer);
  g_source_unref(s->fresh_timer);
  g_source_destroy(s->park_timer);
  g_source_unref(s->park_timer);
}

void zkrc__lease_stop_locked(zkrc_session *s) {
  memset(&s->lease, 0, sizeof s->lease);
  s->lease_generation = 0;
  s->renewal_in_flight = FALSE;
  g_source_set_ready_time(s->renew_timer, -1);
  g_source_set_ready_time(s->lapse_timer, -1);
}

void zkrc__lease_handle_opened_locked(zkrc_session *s) {
  zkrc__lease_stop_locked(s);
  s->opened_us = g_get_monotonic_time();
}

gboolean zkrc__lease_connected(zkrc_session *s, zkrc_conn *c,
                               gboolean new_session, int timeout_ms) {
  zkrc__lease_params p;
  zkrc__lease_params_init(&p, timeout_ms, s->opts.server_tick_ms,
                          s->opts.lease_allowance_ms);
  int64_t now = g_get_monotonic_time();
  g_mutex_lock(&s->o.mu);
  if (c != s->conn) {
    g_mutex_unlock(&s->o.mu);
    return FALSE;
  }
  if (new_session || s->lease_generation != c->generation) {
    zkrc__lease_begin_session(&s->lease, &p, s->opened_us, now);
    s->lease_generation = c->generation;
    if (s->lease_demand == 0)
      zkrc__lease_rest(&s->lease, now);
  } else {
    zkrc__lease_new_connection(&s->lease);
  }
  gboolean alive = !zkrc__lease_expired_at(&s->lease, now);
  s->connection++;
  s->renewal_in_flight = FALSE;
  g_source_set_ready_time(s->renew_timer, -1);
  arm_lapse_locked(s);
  g_mutex_unlock(&s->o.mu);
  if (alive)
    send_renewal(s, TRUE);
  return alive;
}

void zkrc__session_lease_want(zkrc_session *s, gboolean want) {
  int64_t now = g_get_monotonic_time();
  g_mutex_lock(&s->o.mu);
  int before = s->lease_demand;
  s->lease_demand += want ? 1 : -1;
  g_assert(s->lease_demand >= 0);
  if (lease_current_locked(s) && before == 0 && want) {
    /* Woken: a deadline still ahead stands and is watched again; the
     * renewal goes now (or when the keepalive in flight is answered). */
    zkrc__lease_wake(&s->lease, now);
    arm_lapse_locked(s);
    if (!s->renewal_in_flight)
      g_source_set_ready_time(s->renew_timer, 0);
  } else if (lease_current_locked(s) && s->lease_demand == 0) {
    zkrc__lease_rest(&s->lease, now); /* the timer sends keepalives */
    arm_lapse_locked(s);
  }
  g_mutex_unlock(&s->o.mu);
}

int64_t zkrc__lease_left_locked(zkrc_session *s, uint64_t generation,
                                int64_t now) {
  return lease_current_locked(s) && s->lease_generation == generation
             ? zkrc__lease_remaining(&s->lease, now)
             : 0;
}

int64_t zkrc__session_lease_left(zkrc_session *s, uint64_t generation) {
  int64_t now = g_get_monotonic_time();
  g_mutex_lock(&s->o.mu);
  int64_t left = zkrc__lease_left_locked(s, generation, now);
  g_mutex_unlock(&s->o.mu);
  return left;
}

/* ------------------------------------------------------------ public */

int zkrc_session_lease_remaining(zkrc_session *s) {
  if (s == NULL)
    return 0;
  int64_t now = g_get_monotonic_time();
  g_mutex_lock(&s->o.mu);
  int64_t left =
      lease_current_locked(s) ? zkrc__lease_remaining(&s->lease, now) : 0;
  g_mutex_unlock(&s->o.mu);
  return (int)(left / 1000);
}

int zkrc_session_lease_floor(zkrc_session *s) {
  if (s == NULL)
    return 0;
  g_mutex_lock(&s->o.mu);
  int64_t floor = lease_current_locked(s) ? zkrc__lease_floor(&s->lease.p) : 0;
  g_mutex_unlock(&s->o.mu);
  return (int)(floor / 1000);
}
