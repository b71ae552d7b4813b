/*
 * Following a reconfigured ensemble (zkrc_session_options.follow_ensemble)
 * on three members that allow reconfiguration: a session made with one
 * member's address learns all three; a member removed while a lock is held
 * and a cache is open: the list follows, the hold stays held and verified,
 * the cache keeps its copy and its events; then two members added
 * (zkrc_ensemble_add_member: a new server joining by reconfiguration) and
 * every first member removed and stopped, under a hold and a cache: the
 * list follows each step, the hold is never lost, the cache sees every
 * change made meanwhile, and the session goes on through the new members
 * alone.  A session that does not follow keeps its list.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <glib.h>

#include "testutil.h"

#define STEP_MS 30000
/* A member's addition: a JVM's start, its sync with the leader and the
 * reconfiguration, on a loaded machine. */
#define ADD_MS 90000

/* The members in the configuration, a bit per index: the tests share the
 * program's ensemble, and the first removes a member. */
static unsigned voters = 7;

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

/* Counts the session's SERVERS_CHANGED events in *arg (a gint); one with
 * a reason, which it must not have, is not counted. */
static void count_changes(zkrc_session *s, const zkrc_session_event *ev,
                          void *arg) {
  (void)s;
  if (ev->type == ZKRC_SESSION_EVENT_SERVERS_CHANGED && ev->reason == ZKRC_OK &&
      ev->zk_error == ZOK)
    g_atomic_int_inc((gint *)arg);
}

typedef struct more_changes {
  gint *changes;
  int than;
} more_changes;

static int changes_above(void *arg) {
  more_changes *m = arg;
  return g_atomic_int_get(m->changes) > m->than;
}

/* A session made with member @p i's address alone, following the
 * ensemble when @p follow; its SERVERS_CHANGED events counted in
 * *@p changes (from its first connection on). */
static zkrc_session *session_on(int i, int follow, gint *changes) {
  zkrc_session_options o;
  zkrc_session_options_init(&o);
  o.on_event = count_changes;
  o.event_arg = changes;
  o.session_timeout_ms = ZKT_SESSION_TIMEOUT_MS;
  o.connect_timeout_ms = STEP_MS;
  o.server_tick_ms = ZKT_TICK_MS;
  o.follow_ensemble = follow;
  char *one = members_of(1u << i);
  zkrc_session *s = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_connect(&s, one, &o));
  char *now = zkrc_session_servers(s);
  CU_ASSERT_STRING_EQUAL(now ? now : "(null)", one);
  free(now);
  g_free(one);
  return s;
}

/* A session that follows, made with member @p i's address alone. */
static zkrc_session *following(int i, gint *changes) {
  return session_on(i, 1, changes);
}

static void test_learns_the_members(void) {
  gint changes = 0;
  zkrc_session *s = following(0, &changes);
  char *all = members_of(7);
  want_servers w = {s, all};
  CU_ASSERT_TRUE(zkt_wait_for(servers_are, &w, STEP_MS));
  /* Told to its listener too. */
  more_changes m = {&changes, 0};
  CU_ASSERT_TRUE(zkt_wait_for(changes_above, &m, STEP_MS));
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

/* An adopted handle (zkrc_session_adopt) is followed from the hosts
 * given with it; without them there is no list to follow. */
static void test_adopted_handle_follows(void) {
  int first = __builtin_ctz(voters);
  char *one = members_of(1u << first), *all = members_of(voters);
  zkrc_session_options o;
  zkrc_session_options_init(&o);
  o.server_tick_ms = ZKT_TICK_MS;
  o.follow_ensemble = 1;
  gint changes = 0;
  o.on_event = count_changes;
  o.event_arg = &changes;
  zkrc_session *s = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_adopt(&s, zkt_raw_to(one), one, &o));
  want_servers w = {s, all};
  CU_ASSERT_TRUE(zkt_wait_for(servers_are, &w, STEP_MS));
  more_changes m = {&changes, 0};
  CU_ASSERT_TRUE(zkt_wait_for(changes_above, &m, STEP_MS));
  zkrc_session_close(s);
  /* Without hosts: nothing to follow from, nothing told (the same wait
   * as above saw the event come; here none may, within a short time). */
  gint none = 0;
  o.event_arg = &none;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_adopt(&s, zkt_raw_to(one), NULL, &o));
  more_changes m_none = {&none, 0};
  CU_ASSERT_FALSE(zkt_wait_for(changes_above, &m_none, 1000));
  CU_ASSERT_PTR_NULL(zkrc_session_servers(s));
  zkrc_session_close(s);
  g_free(one);
  g_free(all);
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
  gint changes = 0;
  zkrc_session *s = following(start, &changes);
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

  CU_ASSERT_EQUAL_FATAL(zkrc_ensemble_remove_member(e, gone, STEP_MS), 0);
  voters &= ~(1u << gone);
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
  more_changes m = {&changes, 1};
  CU_ASSERT_TRUE(zkt_wait_for(changes_above, &m, STEP_MS));
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
  /* Out of the configuration, it serves no one: spare the machine. */
  CU_ASSERT_EQUAL(zkrc_ensemble_stop_member(e, gone), 0);
}

/* ---- members added, and the first ones removed --------------------------- */

static void on_lock(zkrc_lock *lk, const zkrc_lock_event *ev, void *arg) {
  (void)lk;
  if (ev->type == ZKRC_LOCK_LOST)
    g_atomic_int_inc((gint *)arg);
}

/* What the session holds across the reconfigurations. */
typedef struct under_hold {
  zkrc_session *s;
  zkrc_lock *lk;
  gint lost;    /* LOST events of the lock */
  gint changes; /* the session's SERVERS_CHANGED events */
  zkrc_cache *c;
  GAsyncQueue *q; /* the cache's events */
  char *items;    /* the cache's directory */
  int made;       /* children made in it */
} under_hold;

/* A handle on the members in the configuration now. */
static zhandle_t *raw_on_voters(void) {
  char *hosts = members_of(voters);
  zhandle_t *zh = zkt_raw_to(hosts);
  g_free(hosts);
  return zh;
}

/* Make a new child of the cache's directory; its path (g_free it). */
static char *make_child(under_hold *h) {
  zhandle_t *zh = raw_on_voters();
  char *child = g_strdup_printf("%s/c%d", h->items, h->made++);
  CU_ASSERT_EQUAL(
      zoo_create(zh, child, "x", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
  zookeeper_close(zh);
  return child;
}

/* The cache told @p child's addition and has it. */
static void seen(under_hold *h, char *child) {
  char *want = g_strconcat("added ", child, NULL);
  CU_ASSERT_TRUE(saw(h->q, want));
  const zkrc_cache_node *node = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_cache_get(h->c, child, &node));
  g_free(want);
  g_free(child);
}

/* The hold held, verified, never lost. */
static void still_held(under_hold *h) {
  CU_ASSERT_TRUE(zkrc_lock_is_held(h->lk));
  CU_ASSERT_TRUE(zkrc_lock_lease_remaining(h->lk) > 0);
  CU_ASSERT_EQUAL(g_atomic_int_get(&h->lost), 0);
}

/* After a reconfiguration: the session's list follows it (waited for),
 * the change made before it and one made after it are seen, the hold
 * held. */
static void followed(under_hold *h, int changes_before, char *made_before) {
  char *want = members_of(voters);
  want_servers w = {h->s, want};
  CU_ASSERT_TRUE(zkt_wait_for(servers_are, &w, STEP_MS));
  g_free(want);
  more_changes m = {&h->changes, changes_before};
  CU_ASSERT_TRUE(zkt_wait_for(changes_above, &m, STEP_MS));
  seen(h, made_before);
  seen(h, make_child(h));
  still_held(h);
}

static void hold_and_watch(under_hold *h, int start) {
  memset(h, 0, sizeof *h);
  h->s = following(start, &h->changes);
  char *dir = zkt_path("grow");
  h->items = g_strconcat(dir, "/items", NULL);
  zhandle_t *zh = raw_on_voters();
  zkt_make_path(zh, h->items);
  zookeeper_close(zh);
  zkrc_lock_options lo;
  zkrc_lock_options_init(&lo);
  lo.on_event = on_lock;
  lo.event_arg = &h->lost;
  char *lock_path = g_strconcat(dir, "/lock", NULL);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_new(&h->lk, h->s, lock_path, &lo));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(h->lk, STEP_MS));
  h->q = g_async_queue_new_full(g_free);
  zkrc_cache_options co;
  zkrc_cache_options_init(&co);
  co.on_event = on_cache;
  co.event_arg = h->q;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_children_cache_new(&h->c, h->s, h->items, &co));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_cache_wait_initialized(h->c, STEP_MS));
  g_free(lock_path);
  g_free(dir);
}

/* Does member @p i hold a connection of session @p arg (an int64_t)? */
typedef struct connected_to {
  int64_t id;
  unsigned members;
} connected_to;

static int session_on_members(void *arg) {
  connected_to *c = arg;
  char sid[40];
  g_snprintf(sid, sizeof sid, "sid=0x%llx", (unsigned long long)c->id);
  int found = 0;
  for (int i = 0; i < zkrc_ensemble_size(zkt_ensemble()) && !found; i++) {
    char *cons = NULL;
    if ((c->members & (1u << i)) &&
        zkrc_ensemble_four_letter(zkt_ensemble(), i, "cons", &cons) == 0)
      found = cons && strstr(cons, sid) != NULL;
    free(cons);
  }
  return found;
}

static void test_members_added_first_removed(void) {
  zkrc_ensemble *e = zkt_ensemble();
  unsigned first = voters;
  int start = __builtin_ctz(first);
  under_hold h;
  hold_and_watch(&h, start);
  char *all = members_of(voters);
  want_servers w = {h.s, all};
  CU_ASSERT_TRUE_FATAL(zkt_wait_for(servers_are, &w, STEP_MS));
  more_changes m = {&h.changes, 0};
  CU_ASSERT_TRUE(zkt_wait_for(changes_above, &m, STEP_MS));
  g_free(all);
  /* The control: the same start, not following. */
  gint plain_changes = 0;
  zkrc_session *plain = session_on(start, 0, &plain_changes);
  char *plain_list = zkrc_session_servers(plain);

  unsigned added = 0;
  for (int n = 0; n < 2; n++) {
    char *before = make_child(&h);
    int changes = g_atomic_int_get(&h.changes);
    int i = zkrc_ensemble_add_member(e, ADD_MS);
    CU_ASSERT_FATAL(i >= 0);
    added |= 1u << i;
    voters |= 1u << i;
    followed(&h, changes, before);
  }
  /* The control, told of the same reconfigurations: unchanged. */
  char *now = zkrc_session_servers(plain);
  CU_ASSERT_STRING_EQUAL(now ? now : "(null)", plain_list);
  CU_ASSERT_EQUAL(g_atomic_int_get(&plain_changes), 0);
  free(now);
  zkrc_session_close(plain);
  free(plain_list);

  for (int i = 0; i < 3; i++) {
    if (!(first & (1u << i)))
      continue;
    char *before = make_child(&h);
    int changes = g_atomic_int_get(&h.changes);
    CU_ASSERT_EQUAL_FATAL(zkrc_ensemble_remove_member(e, i, STEP_MS), 0);
    voters &= ~(1u << i);
    followed(&h, changes, before);
    CU_ASSERT_EQUAL(zkrc_ensemble_stop_member(e, i), 0);
  }
  /* Only the added members run: the session is on one of them, and goes
   * on there. */
  CU_ASSERT_EQUAL(voters, added);
  /* Bad requests change nothing: a member removed already, no index, no
   * time. */
  int size = zkrc_ensemble_size(e);
  fprintf(stderr, "(three expected errors follow) ");
  CU_ASSERT_EQUAL(zkrc_ensemble_remove_member(e, start, STEP_MS), -1);
  CU_ASSERT_EQUAL(zkrc_ensemble_remove_member(e, size, STEP_MS), -1);
  CU_ASSERT_EQUAL(zkrc_ensemble_add_member(e, 0), -1);
  CU_ASSERT_EQUAL(zkrc_ensemble_add_member(NULL, ADD_MS), -1);
  CU_ASSERT_EQUAL(zkrc_ensemble_size(e), size);
  connected_to c = {zkrc_session_id(h.s), added};
  CU_ASSERT_TRUE(zkt_wait_for(session_on_members, &c, STEP_MS));
  seen(&h, make_child(&h));
  still_held(&h);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(h.lk));
  CU_ASSERT_EQUAL(g_atomic_int_get(&h.lost), 0);

  zkrc_cache_free(h.c);
  zkrc_lock_free(h.lk);
  g_async_queue_unref(h.q);
  zkrc_session_close(h.s);
  g_free(h.items);
}

static void add_suites(void) {
  zkt_configure(3, 0);
  zkt_configure_reconfig();
  ZKT_SUITE(
      "follow ensemble", {"learns the members", test_learns_the_members},
      {"an adopted handle follows from its hosts", test_adopted_handle_follows},
      {"a member removed under a hold and a cache",
       test_member_removed_under_a_hold},
      {"members added and the first ones removed under a hold and a "
       "cache",
       test_members_added_first_removed});
}

int main(void) { return zkt_run("test_follow_ensemble", add_suites); }
