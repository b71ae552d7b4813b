/*
 * The kept ephemeral node (zkrecipes/ephemeral.h) against a real ensemble
 * (one member behind a fault proxy): registration with its data, the data
 * kept across a session expiry and an administrator's delete, waiting for
 * another session's node at the same path, the free deleting the node,
 * ACL refusal and bad input; and, as a lock's hold, LOST told before the
 * servers delete the node when the network goes.
 */
#include "config.h"

#include <stdatomic.h>
#include <string.h>

#include <glib.h>

#include "testutil.h"
#include "zkrecipes/ephemeral.h"
#include "zkrecipes/stats.h"

/* Events as "registered" / "lost REASON" / "closed REASON" lines (REASON
 * the zkrc error's name, with ZooKeeper's code when there is one: "lost
 * ZKRC_ENONODE ZNONODE"), and when LOST came. */
typedef struct events {
  GAsyncQueue *q;
  atomic_llong lost_at; /* monotonic µs of the first LOST */
  atomic_int registered_in_callback;
  /* zkrc_ephemeral_free_async(): its `done` pushes "done" and notes
   * whether the node at path (read through zh) still existed then. */
  zhandle_t *zh;
  const char *path;
  atomic_int node_at_done;
  /* The first REGISTERED's callback calls free_async (its rc in free_rc),
   * and then waits while `hold` is set (the executor is held there). */
  int free_on_registered;
  int free_rc;
  GMutex gate_mu;
  GCond gate;
  int hold;
} events;

static void on_freed(void *arg) {
  events *t = arg;
  atomic_store(&t->node_at_done, zkt_exists(t->zh, t->path));
  g_async_queue_push(t->q, g_strdup("done"));
}

/* Let the REGISTERED callback that waits in hold_here() return. */
static void release_hold(events *t) {
  g_mutex_lock(&t->gate_mu);
  t->hold = 0;
  g_cond_broadcast(&t->gate);
  g_mutex_unlock(&t->gate_mu);
}

static void hold_here(events *t) {
  g_mutex_lock(&t->gate_mu);
  while (t->hold)
    g_cond_wait(&t->gate, &t->gate_mu);
  g_mutex_unlock(&t->gate_mu);
}

static void record(zkrc_ephemeral *e, const zkrc_ephemeral_event *ev,
                   void *arg) {
  events *t = arg;
  if (ev->type == ZKRC_EPHEMERAL_LOST) {
    long long zero = 0;
    atomic_compare_exchange_strong(&t->lost_at, &zero,
                                   (long long)g_get_monotonic_time());
    atomic_store(&t->registered_in_callback, zkrc_ephemeral_is_registered(e));
  }
  char why[64];
  g_async_queue_push(
      t->q,
      g_strconcat(zkrc_ephemeral_event_name(ev->type),
                  zkt_reason_text(why, sizeof why, ev->reason, ev->zk_error),
                  NULL));
  if (ev->type == ZKRC_EPHEMERAL_REGISTERED) {
    if (t->free_on_registered-- == 1)
      t->free_rc = zkrc_ephemeral_free_async(e, on_freed, t);
    hold_here(t);
  }
}

static void expect_event(events *t, const char *want) {
  char *got = g_async_queue_timeout_pop(t->q, 15 * G_TIME_SPAN_SECOND);
  if (got == NULL || strcmp(got, want) != 0)
    fprintf(stderr, "event \"%s\", expected \"%s\"\n", got ? got : "(none)",
            want);
  CU_ASSERT_STRING_EQUAL(got ? got : "(none)", want);
  g_free(got);
}

static void expect_event_either(events *t, const char *want,
                                const char *or_this) {
  char *got = g_async_queue_timeout_pop(t->q, 15 * G_TIME_SPAN_SECOND);
  if (got && strcmp(got, or_this) == 0) {
    g_free(got);
    return;
  }
  if (got == NULL || strcmp(got, want) != 0)
    fprintf(stderr, "event \"%s\", expected \"%s\" or \"%s\"\n",
            got ? got : "(none)", want, or_this);
  CU_ASSERT_STRING_EQUAL(got ? got : "(none)", want);
  g_free(got);
}

static zhandle_t *direct(void) {
  return zkt_raw_to(zkrc_ensemble_direct_connect_string(zkt_ensemble()));
}

/* A session through the proxy, knowing the tick (a full lease). */
static zkrc_session *proxied_session(void) {
  zkrc_session_options o;
  zkrc_session_options_init(&o);
  o.session_timeout_ms = ZKT_SESSION_TIMEOUT_MS;
  o.connect_timeout_ms = 15000;
  o.server_tick_ms = ZKT_TICK_MS;
  zkrc_session *s = NULL;
  CU_ASSERT_EQUAL_FATAL(
      zkrc_session_connect(&s, zkrc_ensemble_member_address(zkt_ensemble(), 0),
                           &o),
      ZKRC_OK);
  return s;
}

static zkrc_ephemeral *keep(zkrc_session *s, const char *path, const char *data,
                            events *t) {
  zkrc_ephemeral_options o;
  zkrc_ephemeral_options_init(&o);
  o.on_event = record;
  o.event_arg = t;
  zkrc_ephemeral *e = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_ephemeral_new(&e, s, path, data,
                                            data ? strlen(data) : 0, &o));
  return e;
}

/* The node's data and owner on the servers ("" when missing). */
static char *node_data(zhandle_t *zh, const char *path, int64_t *owner) {
  char buf[128];
  int len = sizeof buf - 1;
  struct Stat st;
  if (zoo_get(zh, path, 0, buf, &len, &st) != ZOK)
    return g_strdup("");
  if (owner)
    *owner = st.ephemeralOwner;
  return g_strndup(buf, len < 0 ? 0 : (gsize)len);
}

#define ASSERT_NODE(zh, path, want)                                            \
  do {                                                                         \
    char *d_ = node_data(zh, path, NULL);                                      \
    CU_ASSERT_STRING_EQUAL(d_, want);                                          \
    g_free(d_);                                                                \
  } while (0)

typedef struct path_on {
  zhandle_t *zh;
  const char *path;
} path_on;

static int path_gone(void *arg) {
  path_on *p = arg;
  return !zkt_exists(p->zh, p->path);
}

/* Wait until @p path is gone, at most @p ms; non-zero when it went. */
static int wait_gone(zhandle_t *zh, const char *path, int ms) {
  path_on p = {zh, path};
  return zkt_wait_for(path_gone, &p, ms);
}

/* Registered with its data (parents made), owned by the session; the data
 * set is on the node; the free deletes it (in the background: it does not
 * wait for the reply) and tells nothing more. */
static void test_registers_and_frees(void) {
  char *path = zkt_path("eph");
  char *node = g_strdup_printf("%s/group/member-1", path);
  zhandle_t *zh = direct();
  zkrc_session *s = proxied_session();
  events t = {.q = g_async_queue_new_full(g_free)};
  zkrc_ephemeral *e = keep(s, node, "v1", &t);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_ephemeral_wait_registered(e, 10000));
  expect_event(&t, "registered");
  CU_ASSERT_TRUE(zkrc_ephemeral_is_registered(e));
  int64_t owner = 0;
  char *d = node_data(zh, node, &owner);
  CU_ASSERT_STRING_EQUAL(d, "v1");
  CU_ASSERT_EQUAL(owner, zkrc_session_id(s));
  g_free(d);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_ephemeral_set_data(e, "v2", 2, 5000));
  ASSERT_NODE(zh, node, "v2");
  CU_ASSERT_STRING_EQUAL(zkrc_ephemeral_path(e), node);
  zkrc_ephemeral_free(e);
  CU_ASSERT_TRUE(wait_gone(zh, node, 5000));
  CU_ASSERT_EQUAL(g_async_queue_length(t.q), 0);
  g_async_queue_unref(t.q);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(node);
  g_free(path);
}

/* After the session expires (LOST) the node is created again on the new
 * session (REGISTERED) with the latest data; after an administrator
 * deletes it, likewise. */
static void test_kept_across_expiry_and_delete(void) {
  char *path = zkt_path("eph-kept");
  zhandle_t *zh = direct();
  zkrc_session *s = proxied_session();
  events t = {.q = g_async_queue_new_full(g_free)};
  zkrc_ephemeral *e = keep(s, path, "first", &t);
  expect_event(&t, "registered");
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_ephemeral_set_data(e, "latest", 6, 5000));
  int64_t old_id = zkrc_session_id(s);
  zkt_expire(s);
  /* The expiry deletes the node: whichever the client hears first, the
   * deletion or the expiry, is the reason. */
  expect_event_either(&t, "lost ZKRC_ESESSIONEXPIRED ZSESSIONEXPIRED",
                      "lost ZKRC_ENONODE ZNONODE");
  expect_event(&t, "registered");
  int64_t owner = 0;
  char *d = node_data(zh, path, &owner);
  CU_ASSERT_STRING_EQUAL(d, "latest");
  CU_ASSERT_NOT_EQUAL(owner, old_id);
  CU_ASSERT_EQUAL(owner, zkrc_session_id(s));
  g_free(d);

  CU_ASSERT_EQUAL(zoo_delete(zh, path, -1), ZOK);
  expect_event(&t, "lost ZKRC_ENONODE ZNONODE");
  expect_event(&t, "registered");
  ASSERT_NODE(zh, path, "latest");
  zkrc_ephemeral_free(e);
  g_async_queue_unref(t.q);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(path);
}

/* Another session's ephemeral node at the path (a previous run not yet
 * expired): not registered while it is there; registered once it goes. */
static void test_waits_for_another_sessions_node(void) {
  char *path = zkt_path("eph-taken");
  zhandle_t *zh = direct();
  zkt_make_path(zh, path);
  char *node = g_strdup_printf("%s/m", path);
  zhandle_t *other = direct();
  CU_ASSERT_EQUAL(zoo_create(other, node, "old", 3, &ZOO_OPEN_ACL_UNSAFE,
                             ZOO_EPHEMERAL, NULL, 0),
                  ZOK);
  zkrc_session *s = proxied_session();
  events t = {.q = g_async_queue_new_full(g_free)};
  zkrc_ephemeral *e = keep(s, node, "new", &t);
  ZKT_ASSERT_RC(ZKRC_ETIMEDOUT, zkrc_ephemeral_wait_registered(e, 500));
  CU_ASSERT_FALSE(zkrc_ephemeral_is_registered(e));
  zookeeper_close(other); /* its session closes: its node goes */
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_ephemeral_wait_registered(e, 10000));
  expect_event(&t, "registered");
  ASSERT_NODE(zh, node, "new");
  zkrc_ephemeral_free(e);
  g_async_queue_unref(t.q);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(node);
  g_free(path);
}

/* An ACL that forbids the create: ZKRC_ENOAUTH, and no retrying.  Bad
 * input: ZKRC_EINVAL with nothing made. */
/* Freed after its session's zkrc_session_close(): told CLOSED with
 * ZKRC_ECLOSED, nothing after; the names are lower-case, from 1. */
static void test_freed_after_close(void) {
  char *path = zkt_path("eph-after-close");
  zkrc_session *s = proxied_session();
  events t = {.q = g_async_queue_new_full(g_free)};
  zkrc_ephemeral *e = keep(s, path, "v", &t);
  expect_event(&t, "registered");
  zkrc_session_close(s);
  expect_event(&t, "closed ZKRC_ECLOSED");
  zkrc_ephemeral_free(e);
  CU_ASSERT_EQUAL(g_async_queue_length(t.q), 0);
  g_async_queue_unref(t.q);
  CU_ASSERT_EQUAL(ZKRC_EPHEMERAL_REGISTERED, 1);
  CU_ASSERT_STRING_EQUAL(zkrc_ephemeral_event_name(ZKRC_EPHEMERAL_LOST),
                         "lost");
  CU_ASSERT_STRING_EQUAL(zkrc_ephemeral_event_name(0), "unknown");
  g_free(path);
}

static void test_refusals(void) {
  char *path = zkt_path("eph-acl");
  zhandle_t *zh = direct();
  char *parent = g_path_get_dirname(path);
  zkt_make_path(zh, parent);
  CU_ASSERT_EQUAL(
      zoo_create(zh, path, NULL, -1, &ZOO_READ_ACL_UNSAFE, 0, NULL, 0), ZOK);
  char *node = g_strdup_printf("%s/m", path);
  zkrc_session *s = proxied_session();
  zkrc_ephemeral *e = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_ephemeral_new(&e, s, node, "x", 1, NULL));
  ZKT_ASSERT_RC(ZKRC_ENOAUTH, zkrc_ephemeral_wait_registered(e, 10000));
  zkrc_ephemeral_free(e);

  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_ephemeral_new(NULL, s, node, "x", 1, NULL));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_ephemeral_new(&e, NULL, node, "x", 1, NULL));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_ephemeral_new(&e, s, "rel", "x", 1, NULL));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_ephemeral_new(&e, s, "/", "x", 1, NULL));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_ephemeral_new(&e, s, node, NULL, 3, NULL));
  ZKT_ASSERT_RC(ZKRC_ETOOBIG,
                zkrc_ephemeral_new(&e, s, node, "x", 2 * 1024 * 1024, NULL));
  zkrc_ephemeral_options o;
  memset(&o, 0, sizeof o); /* never initialized */
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_ephemeral_new(&e, s, node, "x", 1, &o));
  CU_ASSERT_PTR_NULL(e);
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_ephemeral_wait_registered(NULL, 10));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_ephemeral_set_data(NULL, "x", 1, 10));
  CU_ASSERT_FALSE(zkrc_ephemeral_is_registered(NULL));
  zkrc_ephemeral_free(NULL);
  CU_ASSERT_FALSE(zkt_exists(zh, node));
  /* A closed session: one still alive (an object on it not yet freed)
   * refuses new ones.  (The keeper's node is one the session may create:
   * under the refusing parent, its ENOAUTH could come before the close.) */
  char *allowed = g_strdup_printf("%s/keeper", parent);
  zkrc_ephemeral *keeper = NULL;
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_ephemeral_new(&keeper, s, allowed, NULL, 0, NULL));
  g_free(allowed);
  zkrc_session_close(s);
  ZKT_ASSERT_RC(ZKRC_ECLOSED, zkrc_ephemeral_wait_registered(keeper, 5000));
  ZKT_ASSERT_RC(ZKRC_ECLOSED, zkrc_ephemeral_new(&e, s, node, "x", 1, NULL));
  zkrc_ephemeral_free(keeper);
  zookeeper_close(zh);
  g_free(node);
  g_free(parent);
  g_free(path);
}

static void ignore_stat(int rc, const struct Stat *st, const void *d) {
  (void)rc;
  (void)st;
  (void)d;
}
static void ignore_void(int rc, const void *d) {
  (void)rc;
  (void)d;
}

/* Another client sets and deletes the node back to back: the change uses
 * up the watch, and the exists that arms it again finds no node.  Found by
 * review: nothing was told and nothing re-created it.  Now LOST, then
 * REGISTERED with the node ours again. */
static void test_changed_then_deleted(void) {
  char *path = zkt_path("eph-chdel");
  zhandle_t *zh = direct();
  zkrc_session *s = proxied_session();
  events t = {.q = g_async_queue_new_full(g_free)};
  zkrc_ephemeral *e = keep(s, path, "v", &t);
  expect_event(&t, "registered");
  CU_ASSERT_EQUAL(zoo_aset(zh, path, "x", 1, -1, ignore_stat, NULL), ZOK);
  CU_ASSERT_EQUAL(zoo_adelete(zh, path, -1, ignore_void, NULL), ZOK);
  expect_event(&t, "lost ZKRC_ENONODE ZNONODE");
  expect_event(&t, "registered");
  int64_t owner = 0;
  char *d = node_data(zh, path, &owner);
  CU_ASSERT_STRING_EQUAL(d, "v");
  CU_ASSERT_EQUAL(owner, zkrc_session_id(s));
  g_free(d);
  zkrc_ephemeral_free(e);
  g_async_queue_unref(t.q);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(path);
}

/* A parent that cannot be created (its own parent's ACL refuses): the
 * create's NoNode was retried at once, forever (review: 10,000 requests in
 * 2 s).  Now ZKRC_ENOAUTH, and nothing more sent. */
static void test_parent_refused(void) {
  char *path = zkt_path("eph-parent");
  zhandle_t *zh = direct();
  char *parent = g_path_get_dirname(path);
  zkt_make_path(zh, parent);
  CU_ASSERT_EQUAL(
      zoo_create(zh, path, NULL, -1, &ZOO_READ_ACL_UNSAFE, 0, NULL, 0), ZOK);
  char *node = g_strdup_printf("%s/sub/m", path);
  zkrc_session *s = proxied_session();
  zkrc_ephemeral *e = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_ephemeral_new(&e, s, node, "x", 1, NULL));
  ZKT_ASSERT_RC(ZKRC_ENOAUTH, zkrc_ephemeral_wait_registered(e, 10000));
  zkrc_session_stats a, b;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_get_stats(s, &a, sizeof a));
  ZKT_ASSERT_RC(ZKRC_ENOAUTH, zkrc_ephemeral_wait_registered(e, 500));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_get_stats(s, &b, sizeof b));
  CU_ASSERT_EQUAL(b.requests - b.renewals, a.requests - a.renewals);
  zkrc_ephemeral_free(e);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(node);
  g_free(parent);
  g_free(path);
}

/* The node's deletion on the servers, seen by a direct session. */
static atomic_llong gone_at;
static void gone_watch(zhandle_t *zh, int type, int state, const char *path,
                       void *ctx) {
  (void)zh;
  (void)state;
  (void)path;
  (void)ctx;
  if (type == ZOO_DELETED_EVENT)
    atomic_store(&gone_at, (long long)g_get_monotonic_time());
}

static int node_gone(void *arg) {
  (void)arg;
  return atomic_load(&gone_at) != 0;
}

/* The network goes: LOST is told (and is_registered says 0) before the
 * servers expire the session and delete the node; once the network is
 * back the node is registered again on a new session. */
static void test_lost_before_the_servers_delete(void) {
  char *path = zkt_path("eph-cut");
  zhandle_t *zh = direct();
  zkrc_session *s = proxied_session();
  events t = {.q = g_async_queue_new_full(g_free)};
  zkrc_ephemeral *e = keep(s, path, "up", &t);
  expect_event(&t, "registered");
  atomic_store(&gone_at, 0);
  struct Stat st;
  CU_ASSERT_EQUAL_FATAL(zoo_wexists(zh, path, gone_watch, NULL, &st), ZOK);
  CU_ASSERT_EQUAL_FATAL(
      zkrc_proxy_blackhole(zkt_ensemble(), 0, 4 * ZKT_SESSION_TIMEOUT_MS), 0);
  expect_event(&t, "lost ZKRC_ESESSIONLOST");
  CU_ASSERT_FALSE(zkrc_ephemeral_is_registered(e));
  CU_ASSERT_EQUAL(atomic_load(&t.registered_in_callback), 0);
  CU_ASSERT_TRUE(zkt_wait_for(node_gone, NULL, 4 * ZKT_SESSION_TIMEOUT_MS));
  long long lost = atomic_load(&t.lost_at), gone = atomic_load(&gone_at);
  printf("\n    LOST %.1f ms before the servers deleted the node\n",
         (gone - lost) / 1000.0);
  CU_ASSERT_TRUE(lost > 0 && lost < gone);
  CU_ASSERT_EQUAL(zkrc_proxy_blackhole(zkt_ensemble(), 0, 0), 0);
  expect_event(&t, "registered");
  ASSERT_NODE(zh, path, "up");
  zkrc_ephemeral_free(e);
  g_async_queue_unref(t.q);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(path);
}

/* A node under a fresh directory, with a name long enough (over 41
 * bytes) that a create's envelope, not ZKT_DATA_MAX, sets its limit. */
static char *long_node(const char *tag, const char *leaf) {
  char *dir = zkt_path(tag);
  char *node = g_strdup_printf(
      "%s/a-member-named-long-enough-for-the-envelope-to-count-%s", dir, leaf);
  g_free(dir);
  return node;
}

/* Issue 30: data the create cannot carry (one byte over its envelope's
 * limit, and the 1 MiB) is ZKRC_ETOOBIG at once: nothing sent,
 * no node, no connection dropped; the largest that passes registers and
 * reads back whole; set_data over it is refused (every re-creation would
 * send it) and the node keeps its data. */
static void test_size_limit(void) {
  char *node = long_node("eph-size", "m");
  size_t max = ZKT_PACKET_MAX - zkt_create_envelope(node);
  CU_ASSERT_TRUE(max < ZKT_DATA_MAX);
  char *data = zkt_pattern(1024 * 1024);
  zhandle_t *zh = direct();
  zkrc_session *s = proxied_session();
  uint64_t sent = zkt_requests_but_renewals(s), lost = zkt_suspensions(s);
  zkrc_ephemeral *e = (zkrc_ephemeral *)1;
  ZKT_ASSERT_RC(ZKRC_ETOOBIG,
                zkrc_ephemeral_new(&e, s, node, data, max + 1, NULL));
  CU_ASSERT_PTR_NULL(e);
  ZKT_ASSERT_RC(ZKRC_ETOOBIG,
                zkrc_ephemeral_new(&e, s, node, data, 1024 * 1024, NULL));
  CU_ASSERT_EQUAL(zkt_requests_but_renewals(s), sent);
  CU_ASSERT_FALSE(zkt_exists(zh, node));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_ephemeral_new(&e, s, node, data, max, NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_ephemeral_wait_registered(e, 10000));
  CU_ASSERT_TRUE(zkt_data_is(zh, node, data, max));
  ZKT_ASSERT_RC(ZKRC_ETOOBIG, zkrc_ephemeral_set_data(e, data, max + 1, 5000));
  CU_ASSERT_TRUE(zkt_data_is(zh, node, data, max));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_ephemeral_set_data(e, data + 1, max, 5000));
  CU_ASSERT_TRUE(zkt_data_is(zh, node, data + 1, max));
  CU_ASSERT_TRUE(zkrc_ephemeral_is_registered(e));
  CU_ASSERT_EQUAL(zkt_suspensions(s), lost);
  zkrc_ephemeral_free(e);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(data);
  g_free(node);
}

/* The limit is the servers' own, not a margin: a raw create (open ACL) of
 * the largest data the library accepts passes, and one byte more, on a
 * path as long, makes the server drop the connection. */
static void test_size_limit_is_the_servers(void) {
  char *node = long_node("eph-edge", "1");
  char *over = g_strdup(node);
  over[strlen(over) - 1] = '2';
  size_t max = ZKT_PACKET_MAX - zkt_create_envelope(node);
  char *data = zkt_pattern(max + 1);
  zhandle_t *zh = direct();
  char *dir = g_path_get_dirname(node);
  zkt_make_path(zh, dir);
  CU_ASSERT_EQUAL(zoo_create(zh, node, data, (int)max, &ZOO_OPEN_ACL_UNSAFE,
                             ZOO_EPHEMERAL, NULL, 0),
                  ZOK);
  CU_ASSERT_EQUAL(zoo_create(zh, over, data, (int)max + 1, &ZOO_OPEN_ACL_UNSAFE,
                             ZOO_EPHEMERAL, NULL, 0),
                  ZCONNECTIONLOSS);
  zookeeper_close(zh);
  g_free(dir);
  g_free(data);
  g_free(over);
  g_free(node);
}

/* ========================================================== ending */

/* Nothing more in @p t within 300 ms (after `done`: nothing may come). */
static void expect_nothing_more(events *t) {
  char *got = g_async_queue_timeout_pop(t->q, 300 * 1000);
  if (got)
    fprintf(stderr, "event \"%s\" after the last\n", got);
  CU_ASSERT_PTR_NULL(got);
  g_free(got);
}

static events *events_new(zhandle_t *zh, const char *path) {
  events *t = g_new0(events, 1);
  t->q = g_async_queue_new_full(g_free);
  t->zh = zh;
  t->path = path;
  atomic_store(&t->node_at_done, -1);
  g_mutex_init(&t->gate_mu);
  g_cond_init(&t->gate);
  return t;
}

static void events_free(events *t) {
  g_async_queue_unref(t->q);
  g_mutex_clear(&t->gate_mu);
  g_cond_clear(&t->gate);
  g_free(t);
}

/* The directory @p dir loses CREATE for everyone (READ, WRITE, DELETE and
 * ADMIN stay): a node under it may be deleted but not created again. */
static void forbid_create(zhandle_t *zh, const char *dir) {
  struct ACL entry = {ZOO_PERM_READ | ZOO_PERM_WRITE | ZOO_PERM_DELETE |
                          ZOO_PERM_ADMIN,
                      ZOO_ANYONE_ID_UNSAFE};
  struct ACL_vector acl = {1, &entry};
  CU_ASSERT_EQUAL_FATAL(zoo_set_acl(zh, dir, -1, &acl), ZOK);
}

static int refused_now(void *e) {
  return zkrc_ephemeral_wait_registered(e, ZKRC_NO_WAIT) == ZKRC_ENOAUTH;
}

/* free_async while an event waits behind one being told: the executor is
 * held in the REGISTERED callback; an operator deletes the node, so LOST
 * is queued (its directory no longer lets anyone create: the create that
 * follows is refused, which says LOST was decided).  Then free_async, from
 * another thread: LOST is still told, then `done`, and nothing after. */
static void test_free_async_tells_what_was_queued(void) {
  char *dir = zkt_path("eph-fa-order");
  char *node = g_strdup_printf("%s/m", dir);
  zhandle_t *zh = direct();
  zkt_make_path(zh, dir);
  zkrc_session *s = proxied_session();
  events *t = events_new(zh, node);
  t->hold = 1;
  zkrc_ephemeral *e = keep(s, node, "v", t);
  expect_event(t, "registered"); /* its callback now holds the executor */
  forbid_create(zh, dir);
  CU_ASSERT_EQUAL(zoo_delete(zh, node, -1), ZOK);
  CU_ASSERT_TRUE(zkt_wait_for(refused_now, e, 10000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_ephemeral_free_async(e, on_freed, t));
  release_hold(t);
  expect_event(t, "lost ZKRC_ENONODE ZNONODE");
  expect_event(t, "done");
  expect_nothing_more(t);
  CU_ASSERT_EQUAL(atomic_load(&t->node_at_done), 0);
  events_free(t);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(node);
  g_free(dir);
}

/* free_async from the object's own callback (REGISTERED): it returns
 * ZKRC_OK there, `done` comes once the node's delete is confirmed (the
 * node is gone when it runs), and nothing after. */
static void test_free_async_from_its_callback(void) {
  char *path = zkt_path("eph-fa-self");
  zhandle_t *zh = direct();
  zkrc_session *s = proxied_session();
  events *t = events_new(zh, path);
  t->free_on_registered = 1;
  keep(s, path, "v", t);
  expect_event(t, "registered");
  expect_event(t, "done");
  expect_nothing_more(t);
  ZKT_ASSERT_RC(ZKRC_OK, t->free_rc);
  CU_ASSERT_EQUAL(atomic_load(&t->node_at_done), 0);
  events_free(t);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(path);
}

/* free_async before the session's close (done with the node deleted) and
 * after it (CLOSED told, then done; the close took the node), and free
 * after it; nothing after done.  Bad input: ZKRC_EINVAL and nothing
 * changed (the object is still registered). */
static void test_free_async_around_close(void) {
  char *a_path = zkt_path("eph-fa-before"), *b_path = zkt_path("eph-fa-after");
  char *c_path = zkt_path("eph-free-after");
  zhandle_t *zh = direct();
  zkrc_session *s = proxied_session();
  events *ta = events_new(zh, a_path), *tb = events_new(zh, b_path);
  events *tc = events_new(zh, c_path);
  zkrc_ephemeral *a = keep(s, a_path, "a", ta);
  zkrc_ephemeral *b = keep(s, b_path, "b", tb);
  zkrc_ephemeral *c = keep(s, c_path, "c", tc);
  expect_event(ta, "registered");
  expect_event(tb, "registered");
  expect_event(tc, "registered");
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_ephemeral_free_async(NULL, on_freed, ta));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_ephemeral_free_async(a, NULL, ta));
  CU_ASSERT_TRUE(zkrc_ephemeral_is_registered(a));
  CU_ASSERT_TRUE(zkt_exists(zh, a_path));

  ZKT_ASSERT_RC(ZKRC_OK, zkrc_ephemeral_free_async(a, on_freed, ta));
  expect_event(ta, "done");
  CU_ASSERT_EQUAL(atomic_load(&ta->node_at_done), 0);
  zkrc_session_close(s);
  expect_event(tb, "closed ZKRC_ECLOSED");
  expect_event(tc, "closed ZKRC_ECLOSED");
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_ephemeral_free_async(b, on_freed, tb));
  expect_event(tb, "done");
  CU_ASSERT_EQUAL(atomic_load(&tb->node_at_done), 0);
  int64_t t0 = zkt_now_ms();
  zkrc_ephemeral_free(c);
  CU_ASSERT_TRUE(zkt_now_ms() - t0 < 500);
  CU_ASSERT_FALSE(zkt_exists(zh, c_path));
  expect_nothing_more(ta);
  expect_nothing_more(tb);
  expect_nothing_more(tc);
  events_free(ta);
  events_free(tb);
  events_free(tc);
  zookeeper_close(zh);
  g_free(a_path);
  g_free(b_path);
  g_free(c_path);
}

/* The connection freezes (the proxy lets nothing through, the client does
 * not know yet): the free sends the delete and returns at once, well
 * under the session timeout, its reply impossible meanwhile; once the
 * connection flows again the node is gone, on the same ZooKeeper session
 * (so the delete did it, not an expiry).  free_async likewise: `done`
 * waits for the reply. */
static void test_free_while_frozen(void) {
  char *path = zkt_path("eph-frozen"), *path2 = zkt_path("eph-frozen-async");
  zhandle_t *zh = direct();
  zkrc_session *s = proxied_session();
  events *t = events_new(zh, path), *t2 = events_new(zh, path2);
  zkrc_ephemeral *e = keep(s, path, "v", t);
  zkrc_ephemeral *e2 = keep(s, path2, "v", t2);
  expect_event(t, "registered");
  expect_event(t2, "registered");
  int64_t sid = zkrc_session_id(s);
  CU_ASSERT_EQUAL_FATAL(
      zkrc_proxy_blackhole(zkt_ensemble(), 0, 4 * ZKT_SESSION_TIMEOUT_MS), 0);
  int64_t t0 = zkt_now_ms();
  zkrc_ephemeral_free(e);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_ephemeral_free_async(e2, on_freed, t2));
  int64_t took = zkt_now_ms() - t0;
  printf("\n    free and free_async took %lld ms with the connection frozen\n",
         (long long)took);
  CU_ASSERT_TRUE(took < ZKT_SESSION_TIMEOUT_MS / 4);
  CU_ASSERT_EQUAL(g_async_queue_length(t2->q), 0); /* done waits */
  CU_ASSERT_TRUE(zkt_exists(zh, path));
  CU_ASSERT_EQUAL(zkrc_proxy_blackhole(zkt_ensemble(), 0, 0), 0);
  expect_event(t2, "done");
  CU_ASSERT_EQUAL(atomic_load(&t2->node_at_done), 0);
  CU_ASSERT_TRUE(wait_gone(zh, path, 3 * ZKT_SESSION_TIMEOUT_MS));
  CU_ASSERT_EQUAL(zkrc_session_id(s), sid);
  expect_nothing_more(t);
  expect_nothing_more(t2);
  events_free(t);
  events_free(t2);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(path);
  g_free(path2);
}

static void on_suspended(zkrc_session *s, const zkrc_session_event *ev,
                         void *arg) {
  (void)s;
  if (ev->type == ZKRC_SESSION_EVENT_SUSPENDED)
    g_async_queue_push(arg, g_strdup("suspended"));
}

/* The connection is down and the client knows it (suspended): the free
 * cannot send the delete and returns at once; the node is still there,
 * and the session's reaper deletes it once the connection is back, on the
 * same ZooKeeper session (without the reaper it would stay as long as the
 * session lives).  free_async's `done` comes once the node is handed to
 * the reaper: at once. */
static void test_free_while_disconnected_reaps(void) {
  char *path = zkt_path("eph-reaped"), *path2 = zkt_path("eph-reaped-async");
  zhandle_t *zh = direct();
  zkrc_session *s = proxied_session();
  GAsyncQueue *sq = g_async_queue_new_full(g_free);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_add_listener(s, on_suspended, sq, NULL));
  events *t = events_new(zh, path), *t2 = events_new(zh, path2);
  zkrc_ephemeral *e = keep(s, path, "v", t);
  zkrc_ephemeral *e2 = keep(s, path2, "v", t2);
  expect_event(t, "registered");
  expect_event(t2, "registered");
  int64_t sid = zkrc_session_id(s);
  CU_ASSERT_EQUAL(zkrc_proxy_refuse(zkt_ensemble(), 0, 1), 0);
  char *got = g_async_queue_timeout_pop(sq, 10 * G_TIME_SPAN_SECOND);
  CU_ASSERT_STRING_EQUAL(got ? got : "(none)", "suspended");
  g_free(got);
  int64_t t0 = zkt_now_ms();
  zkrc_ephemeral_free(e);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_ephemeral_free_async(e2, on_freed, t2));
  CU_ASSERT_TRUE(zkt_now_ms() - t0 < ZKT_SESSION_TIMEOUT_MS / 4);
  expect_event(t2, "done");
  CU_ASSERT_EQUAL(atomic_load(&t2->node_at_done), 1); /* the reaper's now */
  CU_ASSERT_TRUE(zkt_exists(zh, path));
  CU_ASSERT_EQUAL(zkrc_proxy_refuse(zkt_ensemble(), 0, 0), 0);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_wait_connected(s, 10000));
  CU_ASSERT_TRUE(wait_gone(zh, path, 3 * ZKT_SESSION_TIMEOUT_MS));
  CU_ASSERT_TRUE(wait_gone(zh, path2, 3 * ZKT_SESSION_TIMEOUT_MS));
  CU_ASSERT_EQUAL(zkrc_session_id(s), sid); /* not an expiry */
  expect_nothing_more(t);
  expect_nothing_more(t2);
  events_free(t);
  events_free(t2);
  zkrc_session_close(s);
  g_async_queue_unref(sq);
  zookeeper_close(zh);
  g_free(path);
  g_free(path2);
}

/* The children version of @p dir (-1 when it is missing): one more for
 * each child created or deleted. */
static int32_t cversion(zhandle_t *zh, const char *dir) {
  struct Stat st;
  return zoo_exists(zh, dir, 0, &st) == ZOK ? st.cversion : -1;
}

/* A create in flight when the object is freed: the connection freezes, the
 * object is made (its create waits in the frozen connection) and at once
 * freed with free_async, which returns without waiting.  Once the
 * connection flows, the create is applied, and its reply has the node
 * deleted: `done` comes after that, with the node gone and its directory's
 * children version two higher (created, then deleted), no event told. */
static void test_create_in_flight_when_freed(void) {
  char *dir = zkt_path("eph-inflight");
  char *node = g_strdup_printf("%s/m", dir);
  zhandle_t *zh = direct();
  zkt_make_path(zh, dir);
  int32_t before = cversion(zh, dir);
  zkrc_session *s = proxied_session();
  events *t = events_new(zh, node);
  CU_ASSERT_EQUAL_FATAL(
      zkrc_proxy_blackhole(zkt_ensemble(), 0, 4 * ZKT_SESSION_TIMEOUT_MS), 0);
  zkrc_ephemeral *e = keep(s, node, "v", t);
  int64_t t0 = zkt_now_ms();
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_ephemeral_free_async(e, on_freed, t));
  CU_ASSERT_TRUE(zkt_now_ms() - t0 < ZKT_SESSION_TIMEOUT_MS / 4);
  CU_ASSERT_EQUAL(g_async_queue_length(t->q), 0); /* the create is pending */
  CU_ASSERT_EQUAL(zkrc_proxy_blackhole(zkt_ensemble(), 0, 0), 0);
  expect_event(t, "done");
  CU_ASSERT_EQUAL(atomic_load(&t->node_at_done), 0);
  CU_ASSERT_EQUAL(cversion(zh, dir), before + 2);
  expect_nothing_more(t);
  events_free(t);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(node);
  g_free(dir);
}

static void add_suites(void) {
  zkt_configure(1, 1);
  ZKT_SUITE(
      "ephemeral", {"registers and frees", test_registers_and_frees},
      {"kept across expiry and delete", test_kept_across_expiry_and_delete},
      {"waits for another session's node",
       test_waits_for_another_sessions_node},
      {"refusals", test_refusals},
      {"changed, then deleted", test_changed_then_deleted},
      {"a parent refused", test_parent_refused},
      {"LOST before the servers delete the node",
       test_lost_before_the_servers_delete},
      {"size limit, envelope included", test_size_limit},
      {"size limit is the servers'", test_size_limit_is_the_servers},
      {"freed after close", test_freed_after_close});
  ZKT_SUITE(
      "ephemeral ending",
      {"free_async tells what was queued, then done",
       test_free_async_tells_what_was_queued},
      {"free_async from its own callback", test_free_async_from_its_callback},
      {"free_async and free around the session's close",
       test_free_async_around_close},
      {"free while the connection is frozen", test_free_while_frozen},
      {"free while disconnected: the reaper deletes",
       test_free_while_disconnected_reaps},
      {"a create in flight when freed", test_create_in_flight_when_freed});
}

int main(void) { return zkt_run("test_ephemeral", add_suites); }
