/*
 * TTL nodes (zkrecipes/ttlnode.h) against a real ensemble started with
 * extendedTypesEnabled (container checks every 100 ms): the node kept
 * while the object lives, past several TTLs, and gone a TTL after the
 * free; made again after an administrator's delete; new data written; the
 * one-shot create; the refusal of servers without extendedTypesEnabled
 * (a second ensemble); bad input; and Curator's PersistentTtlNode on the
 * same path, both ways (tests/peers/CuratorTtlPeer.java).
 */
#include "config.h"

#include <string.h>

#include <glib.h>

#include "interop_peers.h"
#include "testutil.h"
#include "zkrecipes/ttlnode.h"

#define TTL_MS 1000
/* Long enough for anything that should happen within a TTL and a few
 * container checks on a busy machine. */
#define SLACK_MS 15000

/* ------------------------------------------------------------ helpers */

/* Events as "kept" / "failed REASON" / "closed REASON" lines, and "done"
 * from free_async. */
static void record(zkrc_ttl_node *n, const zkrc_ttl_node_event *ev, void *arg) {
  (void)n;
  char why[64];
  g_async_queue_push(arg, g_strconcat(zkrc_ttl_node_event_name(ev->type),
                                      zkt_reason_text(why, sizeof why,
                                                      ev->reason, ev->zk_error),
                                      NULL));
}

static void on_done(void *arg) { g_async_queue_push(arg, g_strdup("done")); }

static void expect_event(GAsyncQueue *q, const char *want) {
  char *got = g_async_queue_timeout_pop(q, SLACK_MS * (gint64)1000);
  if (got == NULL || strcmp(got, want) != 0)
    fprintf(stderr, "event \"%s\", expected \"%s\"\n", got ? got : "(none)",
            want);
  CU_ASSERT_STRING_EQUAL(got ? got : "(none)", want);
  g_free(got);
}

static zkrc_ttl_node *keep(zkrc_session *s, const char *path, const char *data,
                           GAsyncQueue *q) {
  zkrc_ttl_node_options o;
  zkrc_ttl_node_options_init(&o);
  o.on_event = record;
  o.event_arg = q;
  zkrc_ttl_node *n = NULL;
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_ttl_node_new(&n, s, path, TTL_MS, data, strlen(data), &o));
  return n;
}

/* A watch's events for one path, in a queue. */
static void watch_fn(zhandle_t *zh, int type, int state, const char *path,
                     void *ctx) {
  (void)zh;
  (void)state;
  (void)path;
  if (type != ZOO_SESSION_EVENT)
    g_async_queue_push(ctx, GINT_TO_POINTER(type));
}

/* Wait until @p path exists (@p want 1) or is gone (0), by exists watches,
 * at most @p timeout_ms: the ms it took, or -1. */
static int64_t wait_node(zhandle_t *zh, const char *path, int want,
                         int timeout_ms) {
  int64_t start = zkt_now_ms(), deadline = start + timeout_ms;
  GAsyncQueue *q = g_async_queue_new();
  int64_t took = -1;
  for (;;) {
    struct Stat st;
    int rc = zoo_wexists(zh, path, watch_fn, q, &st);
    if ((rc == ZOK) == (want != 0)) {
      took = zkt_now_ms() - start;
      break;
    }
    int64_t left = deadline - zkt_now_ms();
    if (left <= 0 || g_async_queue_timeout_pop(q, (guint64)left * 1000) == NULL)
      break;
  }
  /* The watch left behind pushes into q: leave q to it (a few bytes). */
  return took;
}

/* The node's ephemeralOwner field, -1 when it is missing. */
static int64_t owner_of(zhandle_t *zh, const char *path) {
  struct Stat st;
  return zoo_exists(zh, path, 0, &st) == ZOK ? st.ephemeralOwner : -1;
}

/* What a client sees of a container's or TTL node's ephemeralOwner: 0,
 * as for a persistent node (the servers keep the type in that field and
 * hide it, DataNode.copyStat); their type shows in how they go. */
#define NOT_EPHEMERAL 0

static char *child(const char *path) {
  return g_strconcat(path, "/touch", NULL);
}

/* What most tests use: a session, a handle of the test's own, a path and
 * its touch child, and a queue of events. */
typedef struct fixture {
  zkrc_session *s;
  zhandle_t *zh;
  char *path, *touch;
  GAsyncQueue *q;
} fixture;

static fixture fixture_open(const char *tag) {
  fixture f = {zkt_session(), zkt_raw(), zkt_path(tag), NULL,
               g_async_queue_new_full(g_free)};
  f.touch = child(f.path);
  return f;
}

/* No event left untold; everything closed. */
static void fixture_close(fixture *f) {
  CU_ASSERT_EQUAL(g_async_queue_length(f->q), 0);
  g_async_queue_unref(f->q);
  zkrc_session_close(f->s);
  zookeeper_close(f->zh);
  g_free(f->touch);
  g_free(f->path);
}

/* A node kept at f->path with @p data, once KEPT was told. */
static zkrc_ttl_node *fixture_keep(fixture *f, const char *data) {
  zkrc_ttl_node *n = keep(f->s, f->path, data, f->q);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_ttl_node_wait_kept(n, SLACK_MS));
  expect_event(f->q, "kept");
  return n;
}

/* ---------------------------------------------------------- the tests */

/* Kept for three TTLs (the touch child written again and again), nothing
 * deleted by the free, gone a TTL after it. */
static void test_kept_then_gone(void) {
  fixture f = fixture_open("ttl-kept");
  zhandle_t *zh = f.zh;
  const char *path = f.path, *touch = f.touch;
  zkrc_ttl_node *n = fixture_keep(&f, "hello");
  CU_ASSERT_TRUE(zkrc_ttl_node_is_kept(n));
  CU_ASSERT_STRING_EQUAL(zkrc_ttl_node_path(n), path);
  CU_ASSERT_TRUE(zkt_data_is(zh, path, "hello", 5));
  CU_ASSERT_EQUAL(owner_of(zh, path), NOT_EPHEMERAL);
  CU_ASSERT_EQUAL(owner_of(zh, touch), NOT_EPHEMERAL);
  struct Stat before, after;
  CU_ASSERT_EQUAL_FATAL(zoo_exists(zh, touch, 0, &before), ZOK);
  /* Three TTLs and no deletion of the node. */
  CU_ASSERT_EQUAL(wait_node(zh, path, 0, 3 * TTL_MS), -1);
  CU_ASSERT_EQUAL_FATAL(zoo_exists(zh, touch, 0, &after), ZOK);
  CU_ASSERT_TRUE(after.version >= before.version + 4); /* every TTL / 2 */
  CU_ASSERT_TRUE(zkrc_ttl_node_is_kept(n));
  int64_t freed = zkt_now_ms();
  zkrc_ttl_node_free(n);
  CU_ASSERT_TRUE(zkt_exists(zh, path)); /* the free deletes nothing */
  int64_t took = wait_node(zh, path, 0, SLACK_MS);
  CU_ASSERT_TRUE(took >= 0);
  /* The last touch was at most TTL / 2 before the free. */
  CU_ASSERT_TRUE(zkt_now_ms() - freed >= TTL_MS / 2);
  fixture_close(&f);
}

/* An administrator deletes the node: the next touch makes it again, with
 * the data; set_data writes new data at once; free_async tells done. */
static void test_made_again_and_new_data(void) {
  fixture f = fixture_open("ttl-again");
  zhandle_t *zh = f.zh;
  const char *path = f.path, *touch = f.touch;
  zkrc_ttl_node *n = fixture_keep(&f, "one");
  CU_ASSERT_EQUAL(zoo_delete(zh, touch, -1), ZOK);
  CU_ASSERT_EQUAL(zoo_delete(zh, path, -1), ZOK);
  CU_ASSERT_TRUE(wait_node(zh, touch, 1, SLACK_MS) >= 0);
  CU_ASSERT_TRUE(zkt_data_is(zh, path, "one", 3));
  CU_ASSERT_EQUAL(owner_of(zh, touch), NOT_EPHEMERAL);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_ttl_node_set_data(n, "two", 3));
  int64_t deadline = zkt_now_ms() + SLACK_MS;
  GAsyncQueue *w = g_async_queue_new();
  for (;;) { /* a data watch on the node until it says "two" */
    char buf[8];
    int len = sizeof buf;
    CU_ASSERT_EQUAL_FATAL(zoo_wget(zh, path, watch_fn, w, buf, &len, NULL),
                          ZOK);
    if (len == 3 && memcmp(buf, "two", 3) == 0)
      break;
    int64_t left = deadline - zkt_now_ms();
    CU_ASSERT_FATAL(left > 0 &&
                    g_async_queue_timeout_pop(w, (guint64)left * 1000) != NULL);
  }
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_ttl_node_free_async(n, on_done, f.q));
  expect_event(f.q, "done");
  fixture_close(&f);
}

/* The one-shot create: a sequential TTL node, gone a TTL later (it has
 * no children); a second plain create of one path is ZKRC_ENODEEXISTS. */
static void test_one_shot(void) {
  zkrc_session *s = zkt_session();
  zhandle_t *zh = zkt_raw();
  char *dir = zkt_path("ttl-once");
  zkt_make_path(zh, dir);
  char *prefix = g_strconcat(dir, "/n-", NULL);
  char *created = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_ttl_create(s, prefix, "x", 1, TTL_MS, 1, &created,
                                         SLACK_MS));
  CU_ASSERT_PTR_NOT_NULL_FATAL(created);
  CU_ASSERT_EQUAL(strlen(created), strlen(prefix) + 10);
  CU_ASSERT_EQUAL(strncmp(created, prefix, strlen(prefix)), 0);
  CU_ASSERT_EQUAL(owner_of(zh, created), NOT_EPHEMERAL);
  CU_ASSERT_TRUE(wait_node(zh, created, 0, SLACK_MS) >= 0);
  char *plain = g_strconcat(dir, "/plain", NULL);
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_ttl_create(s, plain, NULL, 0, 60000, 0, NULL, SLACK_MS));
  ZKT_ASSERT_RC(ZKRC_ENODEEXISTS,
                zkrc_ttl_create(s, plain, NULL, 0, 60000, 0, NULL, SLACK_MS));
  CU_ASSERT_EQUAL(zkrc_last_zk_error(), ZNODEEXISTS);
  CU_ASSERT_EQUAL(owner_of(zh, plain), NOT_EPHEMERAL);
  free(created);
  g_free(plain);
  g_free(prefix);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(dir);
}

/* Servers without extendedTypesEnabled (ZooKeeper's default) refuse TTL
 * nodes: ZKRC_ENOTSUP, told once, and the object stops. */
static void test_refused_without_extended_types(void) {
  zkrc_ensemble_options eo;
  zkrc_ensemble_options_init(&eo);
  eo.no_fsync = 1;
  zkrc_ensemble *plain = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_ensemble_start(&plain, &eo), 0);
  zkrc_session_options so;
  zkrc_session_options_init(&so);
  so.session_timeout_ms = ZKT_SESSION_TIMEOUT_MS;
  so.connect_timeout_ms = SLACK_MS;
  zkrc_session *s = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_connect(
                             &s, zkrc_ensemble_connect_string(plain), &so));
  ZKT_ASSERT_RC(ZKRC_ENOTSUP, zkrc_ttl_create(s, "/once", NULL, 0, TTL_MS, 0,
                                              NULL, SLACK_MS));
  CU_ASSERT_EQUAL(zkrc_last_zk_error(), ZUNIMPLEMENTED);
  GAsyncQueue *q = g_async_queue_new_full(g_free);
  zkrc_ttl_node *n = keep(s, "/refused/node", "x", q);
  ZKT_ASSERT_RC(ZKRC_ENOTSUP, zkrc_ttl_node_wait_kept(n, SLACK_MS));
  expect_event(q, "failed ZKRC_ENOTSUP ZUNIMPLEMENTED");
  CU_ASSERT_FALSE(zkrc_ttl_node_is_kept(n));
  ZKT_ASSERT_RC(ZKRC_ENOTSUP, zkrc_ttl_node_wait_kept(n, ZKRC_NO_WAIT));
  zkrc_ttl_node_free(n);
  CU_ASSERT_EQUAL(g_async_queue_length(q), 0);
  g_async_queue_unref(q);
  zkrc_session_close(s);
  zkrc_ensemble_stop(plain);
}

/* Bad input: ZKRC_EINVAL and nothing made. */
static void test_bad_input(void) {
  zkrc_session *s = zkt_session();
  zhandle_t *zh = zkt_raw();
  char *path = zkt_path("ttl-bad");
  zkrc_ttl_node *n = (zkrc_ttl_node *)&n;
  zkrc_ttl_node_options o;
  zkrc_ttl_node_options_init(&o);
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkrc_ttl_node_new(NULL, s, path, TTL_MS, NULL, 0, NULL));
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkrc_ttl_node_new(&n, NULL, path, TTL_MS, NULL, 0, NULL));
  CU_ASSERT_PTR_NULL(n);
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkrc_ttl_node_new(&n, s, "no-slash", TTL_MS, NULL, 0, NULL));
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkrc_ttl_node_new(&n, s, "/", TTL_MS, NULL, 0, NULL));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_ttl_node_new(&n, s, path, 0, NULL, 0, NULL));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_ttl_node_new(&n, s, path, ZKRC_TTL_MAX_MS + 1,
                                               NULL, 0, NULL));
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkrc_ttl_node_new(&n, s, path, TTL_MS, NULL, 1, NULL));
  o.child_name = "a/b";
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkrc_ttl_node_new(&n, s, path, TTL_MS, NULL, 0, &o));
  o.child_name = "";
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkrc_ttl_node_new(&n, s, path, TTL_MS, NULL, 0, &o));
  o.child_name = NULL;
  o.touch_factor = 1;
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkrc_ttl_node_new(&n, s, path, TTL_MS, NULL, 0, &o));
  o.touch_factor = -2;
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkrc_ttl_node_new(&n, s, path, TTL_MS, NULL, 0, &o));
  zkrc_ttl_node_options zeroed;
  memset(&zeroed, 0, sizeof zeroed);
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkrc_ttl_node_new(&n, s, path, TTL_MS, NULL, 0, &zeroed));
  CU_ASSERT_PTR_NULL(n);
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkrc_ttl_create(NULL, path, NULL, 0, TTL_MS, 0, NULL, 1000));
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkrc_ttl_create(s, path, NULL, 0, -1, 0, NULL, 1000));
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkrc_ttl_create(s, path, NULL, 0, TTL_MS, 0, NULL, -5));
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkrc_ttl_create(s, path, NULL, 3, TTL_MS, 0, NULL, 1000));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_ttl_node_wait_kept(NULL, 1000));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_ttl_node_set_data(NULL, "x", 1));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_ttl_node_free_async(NULL, on_done, NULL));
  CU_ASSERT_FALSE(zkrc_ttl_node_is_kept(NULL));
  CU_ASSERT_PTR_NULL(zkrc_ttl_node_path(NULL));
  zkrc_ttl_node_free(NULL);
  CU_ASSERT_STRING_EQUAL(zkrc_ttl_node_event_name(99), "unknown");
  CU_ASSERT_STRING_EQUAL(zkrc_ttl_node_event_name(ZKRC_TTL_NODE_FAILED),
                         "failed");
  /* A valid object, then bad calls on it change nothing. */
  GAsyncQueue *q = g_async_queue_new_full(g_free);
  n = keep(s, path, "d", q);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_ttl_node_wait_kept(n, SLACK_MS));
  expect_event(q, "kept");
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_ttl_node_wait_kept(n, -7));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_ttl_node_set_data(n, NULL, 2));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_ttl_node_free_async(n, NULL, NULL));
  CU_ASSERT_TRUE(zkt_data_is(zh, path, "d", 1));
  zkrc_ttl_node_free(n);
  g_async_queue_unref(q);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(path);
}

/* ----------------------------------------------------------- Curator */

static peer *curator_ttl_peer(const char *path, const char *data) {
  char ttl[16];
  g_snprintf(ttl, sizeof ttl, "%d", TTL_MS);
  char *argv[] = {JAVA_PROG, "-XX:+UseSerialGC",     "-XX:TieredStopAtLevel=1",
                  "-cp",     CURATOR_PEER_CLASSPATH, "CuratorTtlPeer",
                  "keep",    (char *)zkt_hosts(),    (char *)path,
                  ttl,       (char *)data,           NULL};
  return peer_start("curator-ttl", argv);
}

static void expect_line(peer *p, const char *kw, const char *want) {
  char *rest = peer_expect(p, kw, START_MS);
  CU_ASSERT_PTR_NOT_NULL(rest);
  if (rest && want)
    CU_ASSERT_STRING_EQUAL(g_strstrip(rest), want);
  g_free(rest);
}

/* Curator's node first: we read its format (a container with the data, a
 * TTL child "touch"), keep it with ours, and it outlives Curator's close
 * while we touch it; gone a TTL after our free. */
static void test_curator_first(void) {
  fixture f = fixture_open("ttl-curator");
  zhandle_t *zh = f.zh;
  const char *path = f.path, *touch = f.touch;
  peer *p = curator_ttl_peer(path, "java");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  expect_line(p, "found", "-");
  expect_line(p, "created", NULL);
  expect_line(p, "touched", NULL);
  CU_ASSERT_TRUE(zkt_data_is(zh, path, "java", 4));
  CU_ASSERT_EQUAL(owner_of(zh, path), NOT_EPHEMERAL);
  CU_ASSERT_EQUAL(owner_of(zh, touch), NOT_EPHEMERAL);
  zkrc_ttl_node *n = fixture_keep(&f, "c");
  char *data = peer_ask(p, "data", "data");
  CU_ASSERT_STRING_EQUAL(data ? g_strstrip(data) : "(none)", "c");
  g_free(data);
  peer_send(p, "quit");
  expect_line(p, "closed", NULL);
  CU_ASSERT_EQUAL(peer_finish(p, STEP_MS), 0);
  CU_ASSERT_EQUAL(wait_node(zh, path, 0, 3 * TTL_MS), -1); /* ours keeps it */
  zkrc_ttl_node_free(n);
  CU_ASSERT_TRUE(wait_node(zh, path, 0, SLACK_MS) >= 0);
  fixture_close(&f);
}

/* Ours first: Curator finds our data and touches our child; it keeps the
 * node after our free, and it goes a TTL after Curator's close. */
static void test_ours_first(void) {
  fixture f = fixture_open("ttl-ours");
  zhandle_t *zh = f.zh;
  const char *path = f.path, *touch = f.touch;
  zkrc_ttl_node *n = fixture_keep(&f, "from-c");
  int64_t czxid = zkt_czxid(zh, touch);
  CU_ASSERT_NOT_EQUAL(czxid, 0);
  peer *p = curator_ttl_peer(path, "java");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  expect_line(p, "found", "from-c");
  expect_line(p, "created", NULL);
  expect_line(p, "touched", NULL);
  zkrc_ttl_node_free(n);
  CU_ASSERT_EQUAL(wait_node(zh, path, 0, 3 * TTL_MS), -1); /* Curator's */
  CU_ASSERT_EQUAL(zkt_czxid(zh, touch), czxid); /* our child, touched */
  peer_send(p, "quit");
  expect_line(p, "closed", NULL);
  CU_ASSERT_EQUAL(peer_finish(p, STEP_MS), 0);
  CU_ASSERT_TRUE(wait_node(zh, path, 0, SLACK_MS) >= 0);
  fixture_close(&f);
}

static void add_suites(void) {
  zkt_configure_extended_types();
  ZKT_SUITE("ttl node",
            {"kept, then gone a TTL after the free", test_kept_then_gone},
            {"made again, new data, free_async", test_made_again_and_new_data},
            {"one-shot create", test_one_shot},
            {"refused without extendedTypesEnabled",
             test_refused_without_extended_types},
            {"bad input", test_bad_input});
  ZKT_SUITE("ttl node interop", {"Curator's first", test_curator_first},
            {"ours first", test_ours_first});
}

int main(void) {
  int rc = zkt_run("test_ttlnode", add_suites);
  kill_live_peers();
  return rc;
}
