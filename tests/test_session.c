/*
 * The session layer against a real ensemble: state changes reported to
 * listeners, expiry and loss followed by a new session, adoption of a
 * handle, authentication that survives a new session, and closing.
 * One member with a fault proxy in front of it.
 */
#include "config.h"

#include <limits.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "testutil.h"

/* ------------------------------------------------------ event recording */

typedef struct recorder {
  GMutex mu;
  GCond cond;
  GArray *events; /* of zkrc_session_event (copies) */
  GThread *thread_seen;
} recorder;

static void recorder_init(recorder *r) {
  g_mutex_init(&r->mu);
  g_cond_init(&r->cond);
  r->events = g_array_new(FALSE, FALSE, sizeof(zkrc_session_event));
  r->thread_seen = NULL;
}

static void recorder_clear(recorder *r) {
  g_array_free(r->events, TRUE);
  g_mutex_clear(&r->mu);
  g_cond_clear(&r->cond);
}

static void record(zkrc_session *s, const zkrc_session_event *ev, void *arg) {
  recorder *r = arg;
  (void)s;
  g_mutex_lock(&r->mu);
  g_array_append_val(r->events, *ev);
  r->thread_seen = g_thread_self();
  g_cond_broadcast(&r->cond);
  g_mutex_unlock(&r->mu);
}

/* Wait until event @p ev has been recorded at index >= @p from; returns its
 * index or -1 after @p timeout_ms. */
static int wait_event(recorder *r, zkrc_session_event_type ev, int from,
                      int timeout_ms) {
  int64_t deadline = g_get_monotonic_time() + (int64_t)timeout_ms * 1000;
  int found = -1;
  g_mutex_lock(&r->mu);
  while (found < 0) {
    for (guint i = (guint)from; i < r->events->len; i++)
      if (g_array_index(r->events, zkrc_session_event, i).type == ev) {
        found = (int)i;
        break;
      }
    if (found >= 0 || !g_cond_wait_until(&r->cond, &r->mu, deadline))
      break;
  }
  g_mutex_unlock(&r->mu);
  return found;
}

static int recorded(recorder *r) {
  g_mutex_lock(&r->mu);
  int n = (int)r->events->len;
  g_mutex_unlock(&r->mu);
  return n;
}

static zkrc_session_event event_at(recorder *r, int i) {
  g_mutex_lock(&r->mu);
  zkrc_session_event ev = g_array_index(r->events, zkrc_session_event, i);
  g_mutex_unlock(&r->mu);
  return ev;
}

/* A session created with a listener already attached, so CONNECTED is
 * seen. */
static zkrc_session *session_recorded(recorder *r, int timeout_ms,
                                      int no_reopen) {
  zkrc_session_options o;
  zkrc_session_options_init(&o);
  o.session_timeout_ms = timeout_ms;
  o.no_reopen = no_reopen;
  /* These tests are about the session's own lease: renewed all the time,
   * as if something depended on it. */
  o.lease_renewal = ZKRC_LEASE_ALWAYS;
  zkrc_session *s = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_session_new(&s, zkt_hosts(), &o), ZKRC_OK);
  CU_ASSERT_EQUAL_FATAL(zkrc_session_add_listener(s, record, r, NULL), ZKRC_OK);
  CU_ASSERT_EQUAL_FATAL(zkrc_session_wait_connected(s, 10000), ZKRC_OK);
  /* Listeners hear of it on the callback thread, a moment later. */
  CU_ASSERT_FATAL(wait_event(r, ZKRC_SESSION_EVENT_CONNECTED, 0, 5000) == 0);
  return s;
}

/* ---------------------------------------------------------------- tests */

static void test_connect_reports_connected(void) {
  recorder r;
  recorder_init(&r);
  zkrc_session *s = session_recorded(&r, 2000, 0);
  CU_ASSERT_EQUAL(zkrc_session_get_state(s), ZKRC_SESSION_CONNECTED);
  CU_ASSERT(zkrc_session_id(s) != 0);
  int t = zkrc_session_timeout(s);
  CU_ASSERT(t >= 400 && t <= 4000); /* the servers clamp to 2..20 ticks */
  CU_ASSERT(wait_event(&r, ZKRC_SESSION_EVENT_CONNECTED, 0, 5000) == 0);
  /* The event names its session and is no loss. */
  CU_ASSERT_EQUAL(event_at(&r, 0).session_id, zkrc_session_id(s));
  CU_ASSERT_EQUAL(event_at(&r, 0).reason, ZKRC_OK);
  CU_ASSERT_EQUAL(event_at(&r, 0).zk_error, ZOK);
  /* Listeners run on the session's callback thread, not the caller's. */
  CU_ASSERT_PTR_NOT_NULL(r.thread_seen);
  CU_ASSERT_PTR_NOT_EQUAL(r.thread_seen, g_thread_self());
  zkrc_session_close(s);
  int closed = wait_event(&r, ZKRC_SESSION_EVENT_CLOSED, 0, 5000);
  CU_ASSERT(closed > 0);
  if (closed > 0) { /* closed by the application: ZKRC_ECLOSED */
    CU_ASSERT_EQUAL(event_at(&r, closed).reason, ZKRC_ECLOSED);
    CU_ASSERT_EQUAL(event_at(&r, closed).zk_error, ZOK);
  }
  recorder_clear(&r);
}

/* Any session timeout is clamped, as the header says, never refused: the
 * ZooKeeper client alone fails with 1 ms and with INT_MAX. */
static void test_extreme_timeouts_are_clamped(void) {
  static const int asked[] = {1, 2, 1000000000, INT_MAX};
  for (size_t i = 0; i < G_N_ELEMENTS(asked); i++) {
    zkrc_session_options o;
    zkrc_session_options_init(&o);
    o.session_timeout_ms = asked[i];
    o.connect_timeout_ms = 10000;
    zkrc_session *s = NULL;
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_connect(&s, zkt_hosts(), &o));
    int t = zkrc_session_timeout(s);
    CU_ASSERT(t >= 400 && t <= 4000); /* 2..20 ticks of 200 ms */
    zkrc_session_close(s);
  }
  zkrc_session_options o;
  zkrc_session_options_init(&o);
  o.server_tick_ms = -1;
  zkrc_session *s = NULL;
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_session_new(&s, zkt_hosts(), &o));
  CU_ASSERT_PTR_NULL(s);
  /* A scheduling allowance that is negative or would leave less than
   * half the session timeout of lease. */
  static const int allowances[] = {-1, 5001};
  for (size_t i = 0; i < G_N_ELEMENTS(allowances); i++) {
    zkrc_session_options_init(&o);
    o.session_timeout_ms = 10000;
    o.lease_allowance_ms = allowances[i];
    ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_session_new(&s, zkt_hosts(), &o));
    CU_ASSERT_PTR_NULL(s);
  }
}

static void test_expiry_opens_a_new_session(void) {
  recorder r;
  recorder_init(&r);
  zkrc_session *s = session_recorded(&r, 2000, 0);
  int64_t first = zkrc_session_id(s);
  int before = recorded(&r);
  zkt_expire(s);
  int expired = wait_event(&r, ZKRC_SESSION_EVENT_EXPIRED, before, 10000);
  CU_ASSERT_FATAL(expired >= 0);
  CU_ASSERT_EQUAL(event_at(&r, expired).reason, ZKRC_ESESSIONEXPIRED);
  CU_ASSERT_EQUAL(event_at(&r, expired).zk_error, ZSESSIONEXPIRED);
  CU_ASSERT_EQUAL(event_at(&r, expired).session_id, first);
  int connected =
      wait_event(&r, ZKRC_SESSION_EVENT_CONNECTED, expired + 1, 10000);
  CU_ASSERT(connected > expired);
  CU_ASSERT_EQUAL(zkrc_session_wait_connected(s, 5000), ZKRC_OK);
  CU_ASSERT(zkrc_session_id(s) != 0 && zkrc_session_id(s) != first);
  zkrc_session_close(s);
  recorder_clear(&r);
}

static void test_no_reopen_stays_closed_after_expiry(void) {
  recorder r;
  recorder_init(&r);
  zkrc_session *s = session_recorded(&r, 2000, 1);
  int before = recorded(&r);
  zkt_expire(s);
  int expired = wait_event(&r, ZKRC_SESSION_EVENT_EXPIRED, before, 10000);
  CU_ASSERT(expired >= 0);
  int closed = wait_event(&r, ZKRC_SESSION_EVENT_CLOSED, expired, 5000);
  CU_ASSERT(closed > expired);
  /* A session that closed itself says what ended it. */
  if (closed > expired) {
    CU_ASSERT_EQUAL(event_at(&r, closed).reason, ZKRC_ESESSIONEXPIRED);
    CU_ASSERT_EQUAL(event_at(&r, closed).zk_error, ZSESSIONEXPIRED);
  }
  CU_ASSERT_EQUAL(zkrc_session_get_state(s), ZKRC_SESSION_CLOSED);
  CU_ASSERT_EQUAL(zkrc_session_wait_connected(s, 100), ZKRC_ECLOSED);
  zkrc_session_close(s);
  recorder_clear(&r);
}

static void test_dropped_connection_is_suspended_then_reconnected(void) {
  recorder r;
  recorder_init(&r);
  zkrc_session *s = session_recorded(&r, 4000, 0);
  int64_t id = zkrc_session_id(s);
  int before = recorded(&r);
  CU_ASSERT_EQUAL(zkrc_proxy_drop_all(zkt_ensemble(), 0), 0);
  int suspended = wait_event(&r, ZKRC_SESSION_EVENT_SUSPENDED, before, 10000);
  CU_ASSERT(suspended >= 0);
  int back =
      wait_event(&r, ZKRC_SESSION_EVENT_RECONNECTED, suspended + 1, 10000);
  CU_ASSERT(back > suspended);
  CU_ASSERT_EQUAL(zkrc_session_id(s), id);        /* the same session */
  CU_ASSERT(zkrc_session_lease_remaining(s) > 0); /* back within the lease */
  /* Nothing else was reported in between: no loss, no expiry. */
  for (int i = before; i < recorded(&r); i++)
    CU_ASSERT(event_at(&r, i).type == ZKRC_SESSION_EVENT_SUSPENDED ||
              event_at(&r, i).type == ZKRC_SESSION_EVENT_RECONNECTED);
  /* A suspension says why; a reconnection is no loss. */
  CU_ASSERT_EQUAL(event_at(&r, suspended).reason, ZKRC_ECONNLOSS);
  CU_ASSERT_EQUAL(event_at(&r, suspended).zk_error, ZCONNECTIONLOSS);
  CU_ASSERT_EQUAL(event_at(&r, suspended).session_id, id);
  CU_ASSERT_EQUAL(event_at(&r, back).reason, ZKRC_OK);
  CU_ASSERT_EQUAL(event_at(&r, back).zk_error, ZOK);
  zkrc_session_close(s);
  recorder_clear(&r);
}

/* When the servers removed a node: a watch from a handle that does not go
 * through the proxy, so it sees the servers' own expiry of a session. */
typedef struct gone {
  GMutex mu;
  GCond cond;
  int64_t at_us; /* monotonic; 0 until the node is gone */
} gone;

static void gone_watcher(zhandle_t *zh, int type, int state, const char *path,
                         void *ctx) {
  gone *g = ctx;
  if (type != ZOO_DELETED_EVENT)
    return;
  g_mutex_lock(&g->mu);
  g->at_us = g_get_monotonic_time();
  g_cond_broadcast(&g->cond);
  g_mutex_unlock(&g->mu);
}

static int64_t wait_gone(gone *g, int timeout_ms) {
  int64_t deadline = g_get_monotonic_time() + (int64_t)timeout_ms * 1000;
  g_mutex_lock(&g->mu);
  while (g->at_us == 0 && g_cond_wait_until(&g->cond, &g->mu, deadline))
    ;
  int64_t at = g->at_us;
  g_mutex_unlock(&g->mu);
  return at;
}

static int create_ephemeral(zhandle_t *zh, void *path) {
  return zoo_create(zh, path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL,
                    NULL, 0);
}

static void lost_listener(zkrc_session *s, const zkrc_session_event *ev_,
                          void *arg) {
  zkrc_session_event_type ev = ev_->type;
  if (ev == ZKRC_SESSION_EVENT_LOST) {
    int64_t *at = arg; /* read by the test's thread: atomically */
    __atomic_store_n(at, g_get_monotonic_time(), __ATOMIC_RELEASE);
  }
}

static void test_partition_is_lost_before_the_servers_expire(void) {
  recorder r;
  recorder_init(&r);
  zkrc_session *s = session_recorded(&r, 1000, 0);
  int64_t lost_at = 0;
  CU_ASSERT_EQUAL(zkrc_session_add_listener(s, lost_listener, &lost_at, NULL),
                  ZKRC_OK);
  int64_t first = zkrc_session_id(s);
  int timeout = zkrc_session_timeout(s);
  /* An ephemeral node of the session, watched from outside the proxy: its
   * deletion is the moment the servers expired the session. */
  char *path = zkt_path("lease");
  zhandle_t *zh =
      zkt_raw_to(zkrc_ensemble_direct_connect_string(zkt_ensemble()));
  CU_ASSERT_EQUAL_FATAL(zoo_create(zh, "/zkt", NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
                                   0, NULL, 0) == ZOK ||
                            zoo_exists(zh, "/zkt", 0, NULL) == ZOK,
                        1);
  CU_ASSERT_EQUAL_FATAL(zkrc_session_with_handle(s, create_ephemeral, path),
                        ZOK);
  gone g = {.at_us = 0};
  g_mutex_init(&g.mu);
  g_cond_init(&g.cond);
  CU_ASSERT_EQUAL_FATAL(zoo_wexists(zh, path, gone_watcher, &g, NULL), ZOK);
  CU_ASSERT(zkrc_session_lease_remaining(s) > 0);
  CU_ASSERT(zkrc_session_lease_floor(s) > 0);
  /* Let the session outlive its first lease (the one from its creation),
   * so that the lease under test is one the renewals made. */
  g_usleep(3 * (gulong)timeout * 1000 / 2);
  CU_ASSERT(zkrc_session_lease_remaining(s) > zkrc_session_lease_floor(s));

  /* Cut off: the servers hear nothing more from the session, so they
   * expire it one timeout after they last heard of it.  The lease must run
   * out before that, whether or not the client noticed the silence. */
  int before = recorded(&r);
  int64_t start = g_get_monotonic_time();
  int left_at_cut = zkrc_session_lease_remaining(s);
  CU_ASSERT_EQUAL(zkrc_proxy_blackhole(zkt_ensemble(), 0, 4 * timeout), 0);
  int lost = wait_event(&r, ZKRC_SESSION_EVENT_LOST, before, 10000);
  CU_ASSERT_FATAL(lost >= 0);
  /* The lease ran out: no code of ZooKeeper's behind it. */
  CU_ASSERT_EQUAL(event_at(&r, lost).reason, ZKRC_ESESSIONLOST);
  CU_ASSERT_EQUAL(event_at(&r, lost).zk_error, ZOK);
  CU_ASSERT_EQUAL(zkrc_session_lease_remaining(s), 0);
  int64_t expired_at = wait_gone(&g, 10000);
  CU_ASSERT_FATAL(expired_at > 0);
  /* The listener runs right after the recorder: wait for it (bounded). */
  int64_t told_by = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
  while (__atomic_load_n(&lost_at, __ATOMIC_ACQUIRE) == 0 &&
         g_get_monotonic_time() < told_by)
    g_usleep(1000);
  CU_ASSERT(lost_at < expired_at);
  printf("\n    lost %.0f ms after the cut (lease left then: %d ms), %.0f ms "
         "before the servers expired the session (timeout %d ms) ",
         (lost_at - start) / 1000.0, left_at_cut,
         (expired_at - lost_at) / 1000.0, timeout);
  CU_ASSERT(lost_at - start <= (int64_t)timeout * 1000);
  /* Counted as a lease loss (the servers' expiry was never seen by this
   * session), with its delivery measured once. */
  zkrc_session_stats st;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_get_stats(s, &st, sizeof st));
  CU_ASSERT_EQUAL(st.lease_losses, 1);
  CU_ASSERT_EQUAL(st.expiries, 0);
  CU_ASSERT_EQUAL(st.loss_delivery.count, 1);
  printf("(LOST on the executor %.1f ms after the lease's deadline) ",
         st.loss_delivery.sum_seconds * 1e3);

  /* When the network comes back, a new session is opened. */
  int connected = wait_event(&r, ZKRC_SESSION_EVENT_CONNECTED, lost + 1, 15000);
  CU_ASSERT(connected > lost);
  CU_ASSERT_EQUAL(zkrc_session_wait_connected(s, 10000), ZKRC_OK);
  CU_ASSERT(zkrc_session_id(s) != first);
  /* The new session's lease starts with its first renewals (it opened its
   * handle long before it could connect): within a round trip and 0.6
   * ticks. */
  int64_t until = g_get_monotonic_time() + 2 * (int64_t)timeout * 1000;
  while (zkrc_session_lease_remaining(s) == 0 && g_get_monotonic_time() < until)
    g_usleep(5000);
  CU_ASSERT(zkrc_session_lease_remaining(s) > 0);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_mutex_clear(&g.mu);
  g_cond_clear(&g.cond);
  g_free(path);
  recorder_clear(&r);
}

/* An application's own watcher, chained after adoption. */
static int app_watcher_calls;
static void app_watcher(zhandle_t *zh, int type, int state, const char *path,
                        void *ctx) {
  if (ctx == &app_watcher_calls)
    g_atomic_int_inc(&app_watcher_calls);
}

static void silent(const char *m) { (void)m; }

static void test_adopted_handle_is_used_and_its_watcher_kept(void) {
  zhandle_t *zh = zookeeper_init2(zkt_hosts(), app_watcher, 4000, NULL,
                                  &app_watcher_calls, 0, silent);
  CU_ASSERT_PTR_NOT_NULL_FATAL(zh);
  zkrc_session *s = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_session_adopt(&s, zh, zkt_hosts(), NULL), ZKRC_OK);
  /* The handle's context is the session's now (session.h), no longer the
   * application's, which its watcher keeps receiving (app_watcher checks). */
  CU_ASSERT_PTR_NOT_NULL(zoo_get_context(zh));
  CU_ASSERT_PTR_NOT_EQUAL(zoo_get_context(zh), &app_watcher_calls);
  CU_ASSERT_EQUAL(zkrc_session_wait_connected(s, 10000), ZKRC_OK);
  /* The application's watcher still hears session events. */
  int64_t deadline = zkt_now_ms() + 5000;
  while (g_atomic_int_get(&app_watcher_calls) == 0 && zkt_now_ms() < deadline)
    g_usleep(10000);
  CU_ASSERT(g_atomic_int_get(&app_watcher_calls) > 0);
  /* Recipes work on it. */
  char *path = zkt_path("adopted");
  zkrc_lock *lk = NULL;
  CU_ASSERT_EQUAL(zkrc_lock_new(&lk, s, path, NULL), ZKRC_OK);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lk, 5000));
  CU_ASSERT_EQUAL(zkrc_lock_release(lk), ZKRC_OK);
  zkrc_lock_free(lk);
  zkrc_session_close(s); /* closes zh too */
  g_free(path);
  CU_ASSERT_EQUAL(zkrc_session_adopt(&s, NULL, NULL, NULL), ZKRC_EINVAL);
}

static void test_close_removes_ephemeral_nodes_at_once(void) {
  zkrc_session *s = zkt_session();
  char *path = zkt_path("close");
  zkrc_lock *lk = NULL;
  CU_ASSERT_EQUAL(zkrc_lock_new(&lk, s, path, NULL), ZKRC_OK);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lk, 5000));
  zhandle_t *zh = zkt_raw();
  CU_ASSERT_EQUAL(zkt_child_count(zh, path), 1);
  zkrc_session_close(s);
  /* The close is acknowledged by the servers before close returns. */
  CU_ASSERT_EQUAL(zkt_nodes_left(zh, path), 0);
  CU_ASSERT_EQUAL(zkrc_lock_is_held(lk), 0);
  ZKT_ASSERT_RC(ZKRC_ELOCKLOST, zkrc_lock_release(lk));
  zkrc_lock_free(lk);
  zookeeper_close(zh);
  g_free(path);
}

static void test_removed_listener_hears_nothing(void) {
  recorder r;
  recorder_init(&r);
  zkrc_session *s = zkt_session();
  unsigned long id = 0;
  CU_ASSERT_EQUAL(zkrc_session_add_listener(s, record, &r, &id), ZKRC_OK);
  CU_ASSERT_EQUAL(zkrc_session_remove_listener(s, id), ZKRC_OK);
  CU_ASSERT_EQUAL(zkrc_session_remove_listener(s, id), ZKRC_EINVAL);
  /* A second listener is the witness that an event was delivered. */
  recorder witness;
  recorder_init(&witness);
  CU_ASSERT_EQUAL(zkrc_session_add_listener(s, record, &witness, NULL),
                  ZKRC_OK);
  zkrc_session_close(s);
  CU_ASSERT(wait_event(&witness, ZKRC_SESSION_EVENT_CLOSED, 0, 5000) >= 0);
  CU_ASSERT_EQUAL(recorded(&r), 0);
  recorder_clear(&r);
  recorder_clear(&witness);
}

static int create_with_creator_acl(zhandle_t *zh, void *arg) {
  return zoo_create(zh, arg, "x", 1, &ZOO_CREATOR_ALL_ACL, 0, NULL, 0);
}

static int read_node(zhandle_t *zh, void *arg) {
  char buf[8];
  int len = sizeof buf;
  return zoo_get(zh, arg, 0, buf, &len, NULL);
}

static void test_authentication_survives_a_new_session(void) {
  zkrc_session *s = zkt_session();
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_session_add_auth(s, "digest", "alice:secret", 5000));
  char *path = zkt_path("auth");
  zhandle_t *zh = zkt_raw();
  zoo_create(zh, "/zkt", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
  CU_ASSERT_EQUAL(zkrc_session_with_handle(s, create_with_creator_acl, path),
                  ZOK);
  /* Someone else cannot read it ... */
  CU_ASSERT_EQUAL(read_node(zh, path), ZNOAUTH);
  /* ... and we still can after our session expired and was replaced. */
  int64_t first = zkrc_session_id(s);
  zkt_expire(s);
  int64_t deadline = zkt_now_ms() + 15000;
  while ((zkrc_session_id(s) == first || zkrc_session_id(s) == 0) &&
         zkt_now_ms() < deadline)
    zkrc_session_wait_connected(s, 200);
  CU_ASSERT_EQUAL(zkrc_session_wait_connected(s, 5000), ZKRC_OK);
  CU_ASSERT(zkrc_session_id(s) != first);
  CU_ASSERT_EQUAL(zkrc_session_with_handle(s, read_node, path), ZOK);
  zoo_delete(zh, path, -1); /* delete needs rights on the parent only */
  zookeeper_close(zh);
  zkrc_session_close(s);
  g_free(path);
}

/* A child process with a session, frozen past its session timeout: after
 * SIGCONT it reports the session lost without waiting for the client's own
 * connection timeout. */
typedef struct frozen {
  int fds[2];  /* [0] read end: "go", [1] write end: reports */
  int renewal; /* zkrc_lease_renewal */
} frozen;

static int frozen_child(void *arg) {
  frozen *f = arg;
  int *fds = f->fds;
  close(fds[0]);
  zkrc_session_options o;
  zkrc_session_options_init(&o);
  o.session_timeout_ms = 1000;
  o.lease_renewal = f->renewal;
  zkrc_session *s = NULL;
  if (zkrc_session_connect(&s, zkt_hosts(), &o) != ZKRC_OK)
    return 10;
  recorder r;
  recorder_init(&r);
  zkrc_session_add_listener(s, record, &r, NULL);
  if (write(fds[1], "R", 1) != 1) /* ready: freeze me */
    return 11;
  int lost = wait_event(&r, ZKRC_SESSION_EVENT_LOST, 0, 30000);
  /* Write how long after the freeze ended we noticed is not known here;
   * the parent measures from SIGCONT. */
  if (write(fds[1], lost >= 0 ? "L" : "X", 1) != 1)
    return 12;
  zkrc_session_close(s);
  recorder_clear(&r); /* valgrind checks the child for leaks too */
  return lost >= 0 ? 0 : 13;
}

/* Events and states are numbered from 1 (zeroed memory is none of them)
 * and named in lower case, "unknown" for any other value. */
static void test_names(void) {
  CU_ASSERT_EQUAL(ZKRC_SESSION_EVENT_CONNECTED, 1);
  CU_ASSERT_EQUAL(ZKRC_SESSION_CONNECTING, 1);
  CU_ASSERT_STRING_EQUAL(zkrc_session_event_name(ZKRC_SESSION_EVENT_CONNECTED),
                         "connected");
  CU_ASSERT_STRING_EQUAL(
      zkrc_session_event_name(ZKRC_SESSION_EVENT_AUTH_FAILED), "auth-failed");
  CU_ASSERT_STRING_EQUAL(zkrc_session_event_name(ZKRC_SESSION_EVENT_CLOSED),
                         "closed");
  CU_ASSERT_STRING_EQUAL(zkrc_session_event_name(0), "unknown");
  CU_ASSERT_STRING_EQUAL(
      zkrc_session_event_name(ZKRC_SESSION_EVENT_SERVERS_CHANGED),
      "servers-changed");
  CU_ASSERT_STRING_EQUAL(zkrc_session_event_name(9), "unknown");
  CU_ASSERT_STRING_EQUAL(zkrc_session_event_name(-1), "unknown");
  CU_ASSERT_STRING_EQUAL(zkrc_session_state_name(ZKRC_SESSION_CONNECTING),
                         "connecting");
  CU_ASSERT_STRING_EQUAL(zkrc_session_state_name(ZKRC_SESSION_CLOSED),
                         "closed");
  CU_ASSERT_STRING_EQUAL(zkrc_session_state_name(0), "unknown");
  CU_ASSERT_STRING_EQUAL(zkrc_session_state_name(5), "unknown");
}

static void frozen_reports_loss_promptly(int renewal) {
  zkt_hosts(); /* start the ensemble before forking */
  frozen f = {.renewal = renewal};
  int *fds = f.fds;
  CU_ASSERT_EQUAL_FATAL(pipe(fds), 0);
  pid_t pid = zkt_spawn(frozen_child, &f);
  close(fds[1]);
  char c = 0;
  CU_ASSERT_EQUAL_FATAL(read(fds[0], &c, 1), 1);
  CU_ASSERT_EQUAL(c, 'R');
  kill(pid, SIGSTOP);
  g_usleep(2500 * 1000); /* the freeze itself: longer than the timeout */
  kill(pid, SIGCONT);
  int64_t resumed = zkt_now_ms();
  CU_ASSERT_EQUAL(read(fds[0], &c, 1), 1);
  int64_t noticed = zkt_now_ms() - resumed;
  CU_ASSERT_EQUAL(c, 'L');
  /* The lease ran out during the freeze: the loss is told at once; the
   * client's own connection timeout would take about a session timeout
   * more. */
  CU_ASSERT(noticed < 600);
  CU_ASSERT_EQUAL(zkt_wait_child(pid, 10000), 0);
  close(fds[0]);
}

static void test_frozen_process_reports_loss_promptly(void) {
  frozen_reports_loss_promptly(ZKRC_LEASE_ALWAYS);
}

/* The same for a session whose lease rests (nothing depends on it): the
 * servers were not heard from for longer than a session timeout. */
static void test_frozen_resting_session_reports_loss_promptly(void) {
  frozen_reports_loss_promptly(ZKRC_LEASE_ON_DEMAND);
}

/* Counts of a session's events, for the outage below. */
typedef struct outage_log {
  GMutex mu;
  GCond cond;
  int lost;
  int connected;
} outage_log;

static void outage_listener(zkrc_session *s, const zkrc_session_event *ev,
                            void *arg) {
  (void)s;
  outage_log *l = arg;
  g_mutex_lock(&l->mu);
  if (ev->type == ZKRC_SESSION_EVENT_LOST ||
      ev->type == ZKRC_SESSION_EVENT_EXPIRED)
    l->lost++;
  /* New sessions after the loss (the first session's own CONNECTED may
   * reach a listener added after the connect). */
  if (ev->type == ZKRC_SESSION_EVENT_CONNECTED && l->lost > 0)
    l->connected++;
  g_cond_broadcast(&l->cond);
  g_mutex_unlock(&l->mu);
}

/* Wait until *@p count reaches @p want, at most @p timeout_ms: whether it
 * did. */
static int outage_wait(outage_log *l, const int *count, int want,
                       int timeout_ms) {
  int64_t deadline = g_get_monotonic_time() + (int64_t)timeout_ms * 1000;
  g_mutex_lock(&l->mu);
  while (*count < want && g_cond_wait_until(&l->cond, &l->mu, deadline))
    ;
  int reached = *count >= want;
  g_mutex_unlock(&l->mu);
  return reached;
}

/* One outage, one loss (issue 33): the member goes down until the session
 * is told lost, and comes back about half a session timeout later, while
 * the library tries for a new session (the tick assumed is ZooKeeper's
 * default, 2000 ms, as the issue's operator had it).  That new session
 * keeps its lease: no second loss (lost or expired) and no third session
 * over the next two timeouts.  (Before, its lease counted
 * from when its handle was opened, before the outage's failed attempts,
 * and ran out a fraction of a second after it connected: two losses and
 * a third session.) */
static void test_one_outage_one_loss(void) {
  zkrc_ensemble *e = zkt_ensemble();
  const int timeout_ms = 4000;
  outage_log l;
  memset(&l, 0, sizeof l);
  /* As the issue's operator had it: ZooKeeper's default tick assumed
   * (2000 ms, half the timeout; larger than the harness's is allowed, only
   * shorter leases), so that a renewal extends the lease only a relay of
   * 1.2 s after another was answered. */
  zkrc_session_options o;
  zkrc_session_options_init(&o);
  o.session_timeout_ms = timeout_ms;
  o.connect_timeout_ms = 15000;
  o.server_tick_ms = timeout_ms / 2;
  o.lease_renewal = ZKRC_LEASE_ALWAYS;
  zkrc_session *s = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_session_connect(&s, zkt_hosts(), &o), ZKRC_OK);
  zkrc_session_add_listener(s, outage_listener, &l, NULL);
  CU_ASSERT_EQUAL_FATAL(zkrc_ensemble_stop_member(e, 0), 0);
  CU_ASSERT_FATAL(outage_wait(&l, &l.lost, 1, timeout_ms + 5000));
  /* The fault's schedule: the servers stay down a while after the loss. */
  g_usleep((gulong)timeout_ms * 600);
  CU_ASSERT_EQUAL_FATAL(zkrc_ensemble_restart(e, 0), 0);
  CU_ASSERT_EQUAL_FATAL(zkrc_ensemble_wait_serving(e, 0, 30000), 0);
  CU_ASSERT_FATAL(outage_wait(&l, &l.connected, 1, 15000));
  CU_ASSERT_FALSE(outage_wait(&l, &l.lost, 2, 2 * timeout_ms));
  g_mutex_lock(&l.mu);
  printf(" (%d lost, %d new sessions) ", l.lost, l.connected);
  CU_ASSERT_EQUAL(l.lost, 1);
  CU_ASSERT_EQUAL(l.connected, 1); /* one new session, not two */
  g_mutex_unlock(&l.mu);
  CU_ASSERT(zkrc_session_lease_remaining(s) > 0);
  zkrc_session_close(s);
}

static void add_suites(void) {
  zkt_configure(1, 1);
  ZKT_SUITE(
      "session", {"connect reports connected", test_connect_reports_connected},
      {"extreme timeouts are clamped", test_extreme_timeouts_are_clamped},
      {"events and states are named from 1", test_names},
      {"expiry opens a new session", test_expiry_opens_a_new_session},
      {"no_reopen stays closed after expiry",
       test_no_reopen_stays_closed_after_expiry},
      {"dropped connection is suspended then reconnected",
       test_dropped_connection_is_suspended_then_reconnected},
      {"partition is lost before the servers expire it",
       test_partition_is_lost_before_the_servers_expire},
      {"adopted handle is used and its watcher kept",
       test_adopted_handle_is_used_and_its_watcher_kept},
      {"close removes ephemeral nodes at once",
       test_close_removes_ephemeral_nodes_at_once},
      {"removed listener hears nothing", test_removed_listener_hears_nothing},
      {"authentication survives a new session",
       test_authentication_survives_a_new_session},
      {"frozen process reports loss promptly",
       test_frozen_process_reports_loss_promptly},
      {"frozen resting session reports loss promptly",
       test_frozen_resting_session_reports_loss_promptly},
      {"one outage, one loss", test_one_outage_one_loss});
}

int main(void) { return zkt_run("test_session", add_suites); }
