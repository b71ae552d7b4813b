/*
 * Following a reconfigured ensemble (zkrc_session_options.follow_ensemble)
 * on three members that allow reconfiguration: a session made with one
 * member's address learns all three; a member removed (zoo_reconfig) while
 * a lock is held and a cache is open: the list follows, the hold stays
 * held and verified, the cache keeps its copy and its events.
 */
#include "config.h"

#include <string.h>

#include <glib.h>

#include "testutil.h"

#define STEP_MS 30000

/* "127.0.0.1:P,..." of the members in @p keep (a bit per member index). */
static char *members_of(unsigned keep) {
  zkrc_ensemble *e = zkt_ensemble();
  GString *s = g_string_new(NULL);
  for (int i = 0; i < zkrc_ensemble_size(e); i++)
    if (keep & (1u << i))
      g_string_append_printf(s, "%s127.0.0.1:%d", s->len ? "," : "",
                             zkrc_ensemble_member_port(e, i));
  return g_string_free(s, FALSE);
}

typedef struct want_servers {
  zkrc_session *s;
  const char *want;
} want_servers;

static int servers_are(void *arg) {
  want_servers *w = arg;
  char *now = zkrc_session_servers(w->s);
  int same = now && strcmp(now, w->want) == 0;
  free(now);
  return same;
}

/* A session that follows, made with member @p i's address alone. */
static zkrc_session *following(int i) {
  zkrc_session_options o;
  zkrc_session_options_init(&o);
  o.session_timeout_ms = ZKT_SESSION_TIMEOUT_MS;
  o.connect_timeout_ms = STEP_MS;
  o.server_tick_ms = ZKT_TICK_MS;
  o.follow_ensemble = 1;
  char *one = members_of(1u << i);
  zkrc_session *s = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_connect(&s, one, &o));
  char *now = zkrc_session_servers(s);
  CU_ASSERT_STRING_EQUAL(now ? now : "(null)", one);
  free(now);
  g_free(one);
  return s;
}

static void test_learns_the_members(void) {
  zkrc_session *s = following(0);
  char *all = members_of(7);
  want_servers w = {s, all};
  CU_ASSERT_TRUE(zkt_wait_for(servers_are, &w, STEP_MS));
  g_free(all);
  zkrc_session_close(s);
  /* Off (the default): the list stays. */
  zkrc_session *plain = zkt_session();
  char *now = zkrc_session_servers(plain);
  CU_ASSERT_STRING_EQUAL(now ? now : "(null)", zkt_hosts());
  free(now);
  zkrc_session_close(plain);
  CU_ASSERT_PTR_NULL(zkrc_session_servers(NULL));
}

/* Cache events as "TYPE PATH" lines. */
static void on_cache(zkrc_cache *c, const zkrc_cache_event *ev, void *arg) {
  (void)c;
  if (ev->node)
    g_async_queue_push(arg,
                       g_strdup_printf("%s %s", zkrc_cache_event_name(ev->type),
                                       ev->node->path));
}

/* Until the event "TYPE PATH" (others skipped), at most STEP_MS. */
static int saw(GAsyncQueue *q, const char *want) {
  int64_t deadline = zkt_now_ms() + STEP_MS;
  for (int64_t left; (left = deadline - zkt_now_ms()) > 0;) {
    char *got = g_async_queue_timeout_pop(q, (guint64)left * 1000);
    int same = got && strcmp(got, want) == 0;
    g_free(got);
    if (same)
      return 1;
  }
  return 0;
}

static void test_member_removed_under_a_hold(void) {
  zkrc_ensemble *e = zkt_ensemble();
  int leader = zkrc_ensemble_leader(e);
  CU_ASSERT_FATAL(leader >= 0);
  /* Remove a follower the session is not connected to at first. */
  int gone = (leader + 1) % 3, start = (leader + 2) % 3;
  zkrc_session *s = following(start);
  char *all = members_of(7), *two = members_of(7u & ~(1u << gone));
  want_servers w = {s, all};
  CU_ASSERT_TRUE_FATAL(zkt_wait_for(servers_are, &w, STEP_MS));
  char *dir = zkt_path("follow");
  zhandle_t *zh = zkt_raw();
  zkt_make_path(zh, dir);
  zkrc_lock *lk = NULL;
  char *lock_path = g_strconcat(dir, "/lock", NULL);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_new(&lk, s, lock_path, NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lk, STEP_MS));
  GAsyncQueue *q = g_async_queue_new_full(g_free);
  zkrc_cache_options co;
  zkrc_cache_options_init(&co);
  co.on_event = on_cache;
  co.event_arg = q;
  zkrc_cache *c = NULL;
  char *items = g_strconcat(dir, "/items", NULL);
  zkt_make_path(zh, items);
  char *a = g_strconcat(items, "/a", NULL), *b = g_strconcat(items, "/b", NULL);
  CU_ASSERT_EQUAL(zoo_create(zh, a, "1", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0),
                  ZOK);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_children_cache_new(&c, s, items, &co));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_cache_wait_initialized(c, STEP_MS));
  char *added_a = g_strconcat("added ", a, NULL);
  CU_ASSERT_TRUE(saw(q, added_a));

  char id[8];
  g_snprintf(id, sizeof id, "%d", gone + 1);
  char buf[1024];
  int len = sizeof buf;
  CU_ASSERT_EQUAL(zoo_reconfig(zh, NULL, id, NULL, -1, buf, &len, NULL), ZOK);
  w.want = two;
  CU_ASSERT_TRUE(zkt_wait_for(servers_are, &w, STEP_MS));
  /* Nothing lost: the hold held and verified, the copy and its events. */
  CU_ASSERT_TRUE(zkrc_lock_is_held(lk));
  CU_ASSERT_TRUE(zkrc_lock_lease_remaining(lk) > 0);
  const zkrc_cache_node *node = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_cache_get(c, a, &node));
  CU_ASSERT_EQUAL(zoo_create(zh, b, "2", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0),
                  ZOK);
  char *added_b = g_strconcat("added ", b, NULL);
  CU_ASSERT_TRUE(saw(q, added_b));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(lk));

  zkrc_cache_free(c);
  zkrc_lock_free(lk);
  g_async_queue_unref(q);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(added_a);
  g_free(added_b);
  g_free(a);
  g_free(b);
  g_free(items);
  g_free(lock_path);
  g_free(dir);
  g_free(two);
  g_free(all);
}

static void add_suites(void) {
  zkt_configure(3, 0);
  zkt_configure_reconfig();
  ZKT_SUITE("follow ensemble", {"learns the members", test_learns_the_members},
            {"a member removed under a hold and a cache",
             test_member_removed_under_a_hold});
}

int main(void) { return zkt_run("test_follow_ensemble", add_suites); }
