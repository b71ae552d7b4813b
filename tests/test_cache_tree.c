/*
 * A cache's copy (src/watched/cache_tree.c) on in-memory replies, without a server:
 * what each reply changes and reports, and, on random sequences of
 * replies, that the events replay to the copy and that replies describing
 * a tree leave the copy equal to it.
 */
#include "config.h"

#include <string.h>

#include <glib.h>

#include "watched/cache_tree.h"
#include "testutil.h"

static struct Stat stat_at(int64_t czxid, int64_t mzxid) {
  struct Stat st;
  memset(&st, 0, sizeof st);
  st.czxid = czxid;
  st.mzxid = mzxid;
  st.version = (int32_t)(mzxid - czxid);
  return st;
}

static void data(zkrc__ctree *t, const char *path, const char *value,
                 int64_t czxid, int64_t mzxid, GQueue *events) {
  struct Stat st = stat_at(czxid, mzxid);
  zkrc__ctree_apply_data(t, path, value, value ? strlen(value) : 0, &st,
                         events);
}

/* "added /a=x updated /a=y removed /a" for the queued events (emptied). */
static char *describe(GQueue *events) {
  GString *s = g_string_new(NULL);
  zkrc__cache_ev *e;
  while ((e = g_queue_pop_head(events)) != NULL) {
    if (s->len)
      g_string_append_c(s, ' ');
    g_string_append_printf(s, "%s %s", zkrc_cache_event_name(e->ev.type),
                           e->ev.node ? e->ev.node->path : "-");
    if (e->ev.type != ZKRC_CACHE_NODE_REMOVED && e->ev.node)
      g_string_append_printf(s, "=%s",
                             e->ev.node->data ? e->ev.node->data : "(null)");
    zkrc__cache_ev_free(e);
  }
  return g_string_free(s, FALSE);
}

#define ASSERT_EVENTS(q, want)                                                 \
  do {                                                                         \
    char *got_ = describe(q);                                                  \
    CU_ASSERT_STRING_EQUAL(got_, want);                                        \
    if (strcmp(got_, want) != 0)                                               \
      fprintf(stderr, "got  \"%s\"\nwant \"%s\"\n", got_, want);               \
    g_free(got_);                                                              \
  } while (0)

static void test_add_update_remove(void) {
  zkrc__ctree *t = zkrc__ctree_new("/r", -1, FALSE);
  GQueue q = G_QUEUE_INIT;
  data(t, "/r", "root", 1, 1, &q);
  data(t, "/r/a", "x", 2, 2, &q);
  data(t, "/r/a", "x", 2, 2, &q); /* read again, unchanged: nothing */
  data(t, "/r/a", "y", 2, 3, &q);
  ASSERT_EVENTS(&q, "added /r=root added /r/a=x updated /r/a=y");
  /* Deleted and created again: a new czxid is a change, whatever mzxid. */
  data(t, "/r/a", "y", 9, 3, &q);
  ASSERT_EVENTS(&q, "updated /r/a=y");
  zkrc__ctree_remove(t, "/r/a", &q);
  zkrc__ctree_remove(t, "/r/a", &q); /* twice: nothing the second time */
  ASSERT_EVENTS(&q, "removed /r/a");
  CU_ASSERT_EQUAL(zkrc__ctree_size(t), 1);
  zkrc__ctree_free(t);
}

static void test_orphan_reply_is_dropped(void) {
  zkrc__ctree *t = zkrc__ctree_new("/r", -1, FALSE);
  GQueue q = G_QUEUE_INIT;
  data(t, "/r", "root", 1, 1, &q);
  /* A reply about a child whose parent left the copy after it was sent. */
  data(t, "/r/gone/child", "x", 5, 5, &q);
  data(t, "/other", "x", 5, 5, &q); /* not below the root */
  data(t, "/rr", "x", 5, 5, &q);    /* a prefix is not a parent */
  ASSERT_EVENTS(&q, "added /r=root");
  CU_ASSERT_FALSE(zkrc__ctree_has(t, "/r/gone/child"));
  CU_ASSERT_EQUAL(zkrc__ctree_depth(t, "/rr"), -1);
  CU_ASSERT_EQUAL(zkrc__ctree_depth(t, "/r/a/b"), 2);
  zkrc__ctree_free(t);
}

static void test_removal_takes_the_subtree_deepest_first(void) {
  zkrc__ctree *t = zkrc__ctree_new("/", -1, FALSE);
  GQueue q = G_QUEUE_INIT;
  data(t, "/", NULL, 0, 0, &q);
  data(t, "/a", "1", 1, 1, &q);
  data(t, "/a/b", "2", 2, 2, &q);
  data(t, "/a/b/c", "3", 3, 3, &q);
  ASSERT_EVENTS(&q, "added /=(null) added /a=1 added /a/b=2 added /a/b/c=3");
  zkrc__ctree_remove(t, "/a", &q);
  ASSERT_EVENTS(&q, "removed /a/b/c removed /a/b removed /a");
  CU_ASSERT_EQUAL(zkrc__ctree_size(t), 1);
  zkrc__ctree_free(t);
}

static void test_children_listing_diffs(void) {
  zkrc__ctree *t = zkrc__ctree_new("/r", -1, FALSE);
  GQueue q = G_QUEUE_INIT;
  data(t, "/r", "", 1, 1, &q);
  data(t, "/r/a", "a", 2, 2, &q);
  data(t, "/r/b", "b", 3, 3, &q);
  ASSERT_EVENTS(&q, "added /r= added /r/a=a added /r/b=b");
  char *names[] = {"b", "c"};
  GPtrArray *to_read = g_ptr_array_new_with_free_func(g_free);
  zkrc__ctree_apply_children(t, "/r", names, 2, to_read, &q);
  ASSERT_EVENTS(&q, "removed /r/a");
  CU_ASSERT_EQUAL(to_read->len, 1);
  if (to_read->len == 1)
    CU_ASSERT_STRING_EQUAL(g_ptr_array_index(to_read, 0), "/r/c");
  /* A listing of a node not in the copy is about nothing we keep. */
  g_ptr_array_set_size(to_read, 0);
  zkrc__ctree_apply_children(t, "/r/zzz", names, 2, to_read, &q);
  CU_ASSERT_EQUAL(to_read->len, 0);
  ASSERT_EVENTS(&q, "");
  g_ptr_array_unref(to_read);
  zkrc__ctree_free(t);
}

static void test_depth_limit_and_hidden_root(void) {
  zkrc__ctree *t = zkrc__ctree_new("/r", 1, TRUE); /* a children cache */
  GQueue q = G_QUEUE_INIT;
  data(t, "/r", "parent", 1, 1, &q);
  data(t, "/r/a", "a", 2, 2, &q);
  data(t, "/r/a/deep", "no", 3, 3, &q);
  data(t, "/r", "parent2", 1, 4, &q);
  ASSERT_EVENTS(&q, "added /r/a=a");
  CU_ASSERT_TRUE(zkrc__ctree_lists(t, "/r"));
  CU_ASSERT_FALSE(zkrc__ctree_lists(t, "/r/a"));
  CU_ASSERT_PTR_NULL(zkrc__ctree_get(t, "/r"));
  CU_ASSERT_EQUAL(zkrc__ctree_size(t), 1);
  size_t n = 0;
  const zkrc_cache_node **nodes = zkrc__ctree_snapshot(t, &n);
  CU_ASSERT_EQUAL(n, 1);
  CU_ASSERT_PTR_NULL(nodes[n]);
  zkrc_cache_nodes_free(nodes, n);
  zkrc__ctree_remove(t, "/r", &q); /* the parent goes: children reported */
  ASSERT_EVENTS(&q, "removed /r/a");
  zkrc__ctree_free(t);

  zkrc__ctree *one = zkrc__ctree_new("/n", 0, FALSE); /* a node cache */
  data(one, "/n", "v", 1, 1, &q);
  data(one, "/n/child", "no", 2, 2, &q);
  CU_ASSERT_FALSE(zkrc__ctree_lists(one, "/n"));
  ASSERT_EVENTS(&q, "added /n=v");
  zkrc__ctree_free(one);
}

static void test_values_outlive_the_copy(void) {
  zkrc__ctree *t = zkrc__ctree_new("/r", -1, FALSE);
  GQueue q = G_QUEUE_INIT;
  const char bytes[] = {'a', '\0', 'b'};
  struct Stat st = stat_at(1, 1);
  zkrc__ctree_apply_data(t, "/r", bytes, sizeof bytes, &st, &q);
  const zkrc_cache_node *n = zkrc__ctree_get(t, "/r");
  g_queue_clear_full(&q, (GDestroyNotify)zkrc__cache_ev_free);
  zkrc__ctree_free(t);
  CU_ASSERT_PTR_NOT_NULL_FATAL(n);
  CU_ASSERT_EQUAL(n->len, 3);
  CU_ASSERT_EQUAL(memcmp(n->data, bytes, 3), 0);
  CU_ASSERT_EQUAL(n->data[3], '\0');
  CU_ASSERT_STRING_EQUAL(n->path, "/r");
  zkrc_cache_node_unref(n);
}

/* ---------------------------------------------- random reply sequences */

/* A model tree: path → "czxid:mzxid:value"; the copy is fed replies read
 * from it, in a random order of nodes, as the servers would answer. */
static void replay(GHashTable *state, GQueue *events) {
  zkrc__cache_ev *e;
  while ((e = g_queue_pop_head(events)) != NULL) {
    const char *p = e->ev.node->path;
    switch (e->ev.type) {
    case ZKRC_CACHE_NODE_ADDED:
      CU_ASSERT_FALSE(g_hash_table_contains(state, p));
      g_hash_table_insert(state, g_strdup(p), g_strdup(e->ev.node->data));
      break;
    case ZKRC_CACHE_NODE_UPDATED:
      CU_ASSERT_TRUE(g_hash_table_contains(state, p));
      g_hash_table_insert(state, g_strdup(p), g_strdup(e->ev.node->data));
      break;
    case ZKRC_CACHE_NODE_REMOVED:
      CU_ASSERT_TRUE(g_hash_table_remove(state, p));
      break;
    default:
      CU_FAIL("not a node event");
    }
    zkrc__cache_ev_free(e);
  }
}

/* Nodes of the model: /r and /r/<i> and /r/<i>/<j> for i, j < 3. */
static const char *model_paths[] = {"/r",     "/r/0",   "/r/1",   "/r/2",
                                    "/r/0/0", "/r/0/1", "/r/1/0", "/r/2/2"};
#define MODEL_N G_N_ELEMENTS(model_paths)

static void feed(zkrc__ctree *t, const gboolean *exists, const int *version,
                 int p, GQueue *q) {
  const char *path = model_paths[p];
  if (!exists[p]) {
    zkrc__ctree_remove(t, path, q);
    return;
  }
  char value[16];
  g_snprintf(value, sizeof value, "v%d", version[p]);
  data(t, path, value, 1, version[p] + 1, q);
  char *names[MODEL_N];
  int count = 0;
  for (guint c = 0; c < MODEL_N; c++) {
    const char *cp = model_paths[c];
    size_t len = strlen(path);
    if (exists[c] && strncmp(cp, path, len) == 0 && cp[len] == '/' &&
        strchr(cp + len + 1, '/') == NULL)
      names[count++] = (char *)cp + len + 1;
  }
  GPtrArray *to_read = g_ptr_array_new_with_free_func(g_free);
  zkrc__ctree_apply_children(t, path, names, count, to_read, q);
  g_ptr_array_unref(to_read); /* the loop below reads every node anyway */
}

static void test_random_replies_converge_and_replay(void) {
  GRand *rand = g_rand_new_with_seed(20261124);
  for (int round = 0; round < 200; round++) {
    zkrc__ctree *t = zkrc__ctree_new("/r", -1, FALSE);
    GHashTable *state =
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    gboolean exists[MODEL_N] = {0};
    int version[MODEL_N] = {0};
    GQueue q = G_QUEUE_INIT;
    for (int step = 0; step < 60; step++) {
      int p = g_rand_int_range(rand, 0, MODEL_N);
      /* The servers change a node (a parent exists before its child)... */
      if (g_rand_boolean(rand))
        version[p]++;
      else
        exists[p] = !exists[p];
      for (guint c = 1; c < MODEL_N; c++) {
        char *parent = g_path_get_dirname(model_paths[c]);
        for (guint k = 0; k < MODEL_N; k++)
          if (strcmp(model_paths[k], parent) == 0 && !exists[k])
            exists[c] = FALSE;
        g_free(parent);
      }
      /* ...and a few stale-free replies arrive, about random nodes. */
      for (int r = 0; r < 3; r++)
        feed(t, exists, version, g_rand_int_range(rand, 0, MODEL_N), &q);
      replay(state, &q);
    }
    /* A full read, parents first, of the nodes that exist (and the root):
     * the parents' listings must remove the others. */
    for (guint p = 0; p < MODEL_N; p++)
      if (p == 0 || exists[p])
        feed(t, exists, version, p, &q);
    replay(state, &q);
    for (guint p = 0; p < MODEL_N; p++) {
      const zkrc_cache_node *n = zkrc__ctree_get(t, model_paths[p]);
      CU_ASSERT_EQUAL(n != NULL, exists[p]);
      CU_ASSERT_EQUAL(g_hash_table_contains(state, model_paths[p]), exists[p]);
      if (n) {
        char value[16];
        g_snprintf(value, sizeof value, "v%d", version[p]);
        CU_ASSERT_STRING_EQUAL(n->data, value);
        CU_ASSERT_STRING_EQUAL(g_hash_table_lookup(state, model_paths[p]),
                               value);
      }
      zkrc_cache_node_unref(n);
    }
    CU_ASSERT_EQUAL(zkrc__ctree_size(t), g_hash_table_size(state));
    g_hash_table_unref(state);
    zkrc__ctree_free(t);
  }
  g_rand_free(rand);
}

static void add_suites(void) {
  ZKT_SUITE(
      "cache copy", {"add, update, remove", test_add_update_remove},
      {"a reply about an orphan is dropped", test_orphan_reply_is_dropped},
      {"removal takes the subtree, deepest first",
       test_removal_takes_the_subtree_deepest_first},
      {"a listing removes and asks for children", test_children_listing_diffs},
      {"depth limit and hidden root", test_depth_limit_and_hidden_root},
      {"values outlive the copy", test_values_outlive_the_copy},
      {"random replies converge and replay",
       test_random_replies_converge_and_replay});
}

int main(void) { return zkt_run("test_cache_tree", add_suites); }
