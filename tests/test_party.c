/*
 * kazoo's Party and ShallowParty formats of the group (zkrecipes/group.h,
 * zkrc_group_options.format) against a real single-member ensemble and
 * Debian's kazoo 2.8 (peers/kazoo_party.py), both ways: each sees the
 * other's member with its id; our nodes are named as kazoo names its own;
 * a Party's view leaves out children without its mark; bad input changes
 * nothing.
 */
#include "config.h"

#include <string.h>

#include <glib.h>

#include "interop_peers.h"
#include "testutil.h"
#include "toolproc.h"
#include "zkrecipes/group.h"

#define KAZOO_PARTY TOP_SRCDIR "/tests/peers/kazoo_party.py"
#define ZKR TOP_BUILDDIR "/tools/zkr"

/* `zkr members --format FORMAT PATH`: its output (g_free it), NULL when it
 * failed. */
static char *zkr_members(const char *format, const char *path) {
  const char *argv[] = {ZKR,        "members", "--servers", zkt_hosts(),
                        "--format", format,    path,        NULL};
  proc *p = proc_start(argv);
  int status = proc_wait(p, 30000);
  CU_ASSERT_EQUAL(status, 0);
  if (status != 0)
    fprintf(stderr, "zkr members: %d: %s", status, p->err->str);
  char *out = status == 0 ? g_strdup(p->out->str) : NULL;
  proc_free(p);
  return out;
}

/* The group's JOINED and LEFT events, as "joined ID" / "left ID" lines. */
typedef struct seen {
  GMutex mu;
  GCond cond;
  GString *lines;
} seen;

static void seen_init(seen *s) {
  s->lines = g_string_new(NULL);
  g_mutex_init(&s->mu);
  g_cond_init(&s->cond);
}

static void seen_clear(seen *s) {
  g_mutex_clear(&s->mu);
  g_cond_clear(&s->cond);
  g_string_free(s->lines, TRUE);
}

static void on_event(zkrc_group *g, const zkrc_group_event *ev, void *arg) {
  (void)g;
  seen *s = arg;
  if (ev->member == NULL)
    return;
  g_mutex_lock(&s->mu);
  g_string_append_printf(s->lines, "%s %s\n", zkrc_group_event_name(ev->type),
                         ev->member->id);
  g_cond_broadcast(&s->cond);
  g_mutex_unlock(&s->mu);
}

/* Wait (at most @p timeout_ms) for the event line @p line. */
static gboolean saw(seen *s, const char *line, int timeout_ms) {
  char *want = g_strdup_printf("%s\n", line);
  gint64 until = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
  g_mutex_lock(&s->mu);
  gboolean found;
  while (!(found = strstr(s->lines->str, want) != NULL) &&
         g_cond_wait_until(&s->cond, &s->mu, until))
    ;
  found = strstr(s->lines->str, want) != NULL;
  g_mutex_unlock(&s->mu);
  if (!found)
    fprintf(stderr, "no \"%s\" within %d ms\n", line, timeout_ms);
  g_free(want);
  return found;
}

static peer *kazoo_party(const char *kind, const char *path, const char *id) {
  const char *argv[] = {DEBIAN_PYTHON3, KAZOO_PARTY, zkt_hosts(), path,
                        kind,           id,          NULL};
  return peer_start("kazoo-party", (char **)argv);
}

/* Our member's node name (the group's one child that is not @p other's). */
static char *our_node(zhandle_t *zh, const char *path, const char *other) {
  struct String_vector kids = {0, NULL};
  char *name = NULL;
  if (zoo_get_children(zh, path, 0, &kids) == ZOK)
    for (int i = 0; i < kids.count && !name; i++)
      if (!other || !strstr(other, kids.data[i]))
        name = g_strdup(kids.data[i]);
  deallocate_String_vector(&kids);
  return name;
}

/* Both ways in format @p format (kazoo's @p kind): kazoo's member in our
 * view with its id, ours in kazoo's listing; our node named as kazoo's
 * are; kazoo's leaving is our LEFT. */
static void both_ways(zkrc_group_format format, const char *kind) {
  char *path = zkt_path(kind);
  zkrc_session *s = zkt_session();
  zhandle_t *zh = zkt_raw();
  seen ev;
  seen_init(&ev);
  zkrc_group_options o;
  zkrc_group_options_init(&o);
  CU_ASSERT_EQUAL(o.format, ZKRC_GROUP_CURATOR);
  o.format = format;
  o.id = "c-member";
  o.on_event = on_event;
  o.event_arg = &ev;
  zkrc_group *g = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_new(&g, s, path, &o));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_wait_registered(g, 10000));
  CU_ASSERT_STRING_EQUAL(zkrc_group_id(g), "c-member");
  CU_ASSERT_TRUE(saw(&ev, "joined c-member", 10000));
  peer *k = kazoo_party(kind, path, "k-member");
  char *joined = k ? peer_expect(k, "joined", 60000) : NULL;
  CU_ASSERT_PTR_NOT_NULL_FATAL(joined);
  CU_ASSERT_TRUE(saw(&ev, "joined k-member", 10000));
  char *list = peer_ask(k, "list", "members");
  CU_ASSERT_STRING_EQUAL(list ? list : "", "c-member,k-member");
  g_free(list);
  /* Our node, named as kazoo names its own. */
  char *name = our_node(zh, path, joined);
  CU_ASSERT_PTR_NOT_NULL_FATAL(name);
  size_t hex = strspn(name, "0123456789abcdef");
  CU_ASSERT_EQUAL(hex, 32);
  CU_ASSERT_STRING_EQUAL(
      name + hex, format == ZKRC_GROUP_KAZOO_PARTY ? "__party__" : "-c-member");
  char *node = g_strdup_printf("%s/%s", path, name);
  CU_ASSERT_TRUE(zkt_data_is(zh, node, "c-member", 8)); /* as kazoo's */
  g_free(node);
  zkrc_group_member *m = NULL;
  size_t n = 0;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_members(g, &m, &n));
  CU_ASSERT_EQUAL(n, 2);
  gboolean has_k = FALSE;
  for (size_t i = 0; i < n; i++)
    has_k |= strcmp(m[i].id, "k-member") == 0;
  CU_ASSERT_TRUE(has_k);
  zkrc_group_members_free(m, n);
  /* zkr members in that format: both, by id */
  char *listed = zkr_members(
      format == ZKRC_GROUP_KAZOO_PARTY ? "party" : "shallow-party", path);
  CU_ASSERT_STRING_EQUAL(listed ? listed : "",
                         "c-member\tc-member\nk-member\tk-member\n");
  g_free(listed);
  /* kazoo leaves: our LEFT */
  CU_ASSERT_EQUAL(peer_finish(k, 30000), 0);
  CU_ASSERT_TRUE(saw(&ev, "left k-member", 10000));
  ZKT_ASSERT_RC(ZKRC_ENOTSUP, zkrc_group_set_data(g, "x", 1, 5000));
  zkrc_group_free(g);
  CU_ASSERT_TRUE(zkt_wait_children_or_gone(zh, path, 0, 10000));
  g_free(name);
  g_free(joined);
  zookeeper_close(zh);
  zkrc_session_close(s);
  seen_clear(&ev);
  g_free(path);
}

static void test_party_both_ways(void) {
  both_ways(ZKRC_GROUP_KAZOO_PARTY, "party");
}

static void test_shallow_party_both_ways(void) {
  both_ways(ZKRC_GROUP_KAZOO_SHALLOW_PARTY, "shallow");
}

/* A Party's view is its marked children only (kazoo's filter): a
 * Curator-style member beside it is not in it; a watcher sees ids. */
static void test_party_view_filters(void) {
  char *path = zkt_path("party-filter");
  char *plain = g_strdup_printf("%s/curator-member", path);
  zkrc_session *s = zkt_session();
  zhandle_t *zh = zkt_raw();
  zkt_make_path(zh, plain);
  seen ev;
  seen_init(&ev);
  zkrc_group_options o;
  zkrc_group_options_init(&o);
  o.format = ZKRC_GROUP_KAZOO_PARTY;
  o.id = "member one"; /* a Party's id is data: spaces are fine */
  zkrc_group *g = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_new(&g, s, path, &o));
  o.id = NULL; /* a watcher */
  o.on_event = on_event;
  o.event_arg = &ev;
  zkrc_group *w = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_new(&w, s, path, &o));
  CU_ASSERT_TRUE(saw(&ev, "joined member one", 10000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_wait_initialized(w, 10000));
  zkrc_group_member *m = NULL;
  size_t n = 0;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_members(w, &m, &n));
  CU_ASSERT_EQUAL(n, 1);
  if (n == 1)
    CU_ASSERT_STRING_EQUAL(m[0].id, "member one");
  zkrc_group_members_free(m, n);
  g_mutex_lock(&ev.mu);
  CU_ASSERT_PTR_NULL(strstr(ev.lines->str, "curator-member"));
  g_mutex_unlock(&ev.mu);
  zkrc_group_free(w);
  zkrc_group_free(g);
  zookeeper_close(zh);
  zkrc_session_close(s);
  seen_clear(&ev);
  g_free(plain);
  g_free(path);
}

/* Bad input: an unknown format, data with a kazoo format: ZKRC_EINVAL and
 * nothing sent. */
static void test_bad_input(void) {
  char *path = zkt_path("party-input");
  zkrc_session *s = zkt_session();
  zkrc_group_options o;
  zkrc_group_options_init(&o);
  o.id = "x";
  zkrc_group *g = NULL;
  uint64_t sent = zkt_requests_but_renewals(s);
  o.format = 0;
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_group_new(&g, s, path, &o));
  o.format = 9;
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_group_new(&g, s, path, &o));
  o.format = ZKRC_GROUP_KAZOO_PARTY;
  o.data = "d";
  o.data_len = 1;
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_group_new(&g, s, path, &o));
  o.format = ZKRC_GROUP_KAZOO_SHALLOW_PARTY;
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_group_new(&g, s, path, &o));
  o.data = NULL;
  o.data_len = 0;
  o.id = "a/b";
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_group_new(&g, s, path, &o));
  CU_ASSERT_PTR_NULL(g);
  CU_ASSERT_EQUAL(zkt_requests_but_renewals(s), sent);
  const char *argv[] = {ZKR,        "members",  "--servers", zkt_hosts(),
                        "--format", "birthday", path,        NULL};
  proc *p = proc_start(argv);
  CU_ASSERT_EQUAL(proc_wait(p, 30000), 2);
  proc_free(p);
  zkrc_session_close(s);
  g_free(path);
}

static void add_suites(void) {
  ZKT_SUITE("kazoo party", {"party both ways", test_party_both_ways},
            {"shallow party both ways", test_shallow_party_both_ways},
            {"party view filters", test_party_view_filters},
            {"bad input", test_bad_input});
}

int main(void) { return zkt_run("test_party", add_suites); }
