/*
 * A cache's copy of the tree (cache_tree.h): the values, handed out by
 * reference, and the rules that change the copy and say what changed.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "watched/cache_tree.h"

/* ------------------------------------------------------------ values */

/* A value and its reference count, with the path and the data in the same
 * allocation: one malloc per value. */
typedef struct node_value {
  gint refs;
  zkrc_cache_node pub;
  char bytes[]; /* path, NUL, data, NUL */
} node_value;

static node_value *value_of(const zkrc_cache_node *n) {
  return (node_value *)((char *)n - offsetof(node_value, pub));
}

zkrc_cache_node *zkrc__cache_node_new(const char *path, const char *data,
                                      size_t len, const struct Stat *stat) {
  size_t plen = strlen(path);
  node_value *v = g_malloc(sizeof *v + plen + 1 + (data ? len + 1 : 0));
  v->refs = 1;
  memcpy(v->bytes, path, plen + 1);
  v->pub.path = v->bytes;
  v->pub.data = NULL;
  v->pub.len = 0;
  if (data) {
    char *copy = v->bytes + plen + 1;
    memcpy(copy, data, len);
    copy[len] = '\0';
    v->pub.data = copy;
    v->pub.len = len;
  }
  v->pub.stat = *stat;
  return &v->pub;
}

const zkrc_cache_node *zkrc_cache_node_ref(const zkrc_cache_node *n) {
  if (n)
    g_atomic_int_inc(&value_of(n)->refs);
  return n;
}

void zkrc_cache_node_unref(const zkrc_cache_node *n) {
  if (n && g_atomic_int_dec_and_test(&value_of(n)->refs))
    g_free(value_of(n));
}

static void cache_ev_release(zkrc__object_event *base) {
  zkrc__cache_ev_free((zkrc__cache_ev *)base);
}

zkrc__cache_ev *zkrc__cache_ev_new(zkrc_cache_event_type type,
                                   const zkrc_cache_node *node,
                                   const zkrc_cache_node *old) {
  zkrc__cache_ev *e = g_new0(zkrc__cache_ev, 1);
  e->base.release = cache_ev_release;
  e->ev.type = type;
  e->ev.node = zkrc_cache_node_ref(node);
  e->ev.old = zkrc_cache_node_ref(old);
  return e;
}

void zkrc__cache_ev_free(zkrc__cache_ev *e) {
  if (e == NULL)
    return;
  zkrc_cache_node_unref(e->ev.node);
  zkrc_cache_node_unref(e->ev.old);
  g_free(e);
}

/* ------------------------------------------------------------- the copy */

/* A node of the copy: its value and the names of its children in the
 * copy (NULL until it has one). */
typedef struct ctnode {
  zkrc_cache_node *value;
  GHashTable *children; /* name (owned) → TRUE */
} ctnode;

struct zkrc__ctree {
  char *root;
  size_t root_len;
  int max_depth;
  gboolean hide_root;
  GHashTable *nodes; /* path (owned) → ctnode* (owned) */
};

static void ctnode_free(gpointer p) {
  ctnode *n = p;
  zkrc_cache_node_unref(n->value);
  if (n->children)
    g_hash_table_unref(n->children);
  g_free(n);
}

zkrc__ctree *zkrc__ctree_new(const char *root, int max_depth,
                             gboolean hide_root) {
  zkrc__ctree *t = g_new0(zkrc__ctree, 1);
  t->root = g_strdup(root);
  t->root_len = strlen(root);
  t->max_depth = max_depth;
  t->hide_root = hide_root;
  t->nodes =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, ctnode_free);
  return t;
}

void zkrc__ctree_free(zkrc__ctree *t) {
  if (t == NULL)
    return;
  g_hash_table_unref(t->nodes);
  g_free(t->root);
  g_free(t);
}

const char *zkrc__ctree_root(const zkrc__ctree *t) { return t->root; }

int zkrc__ctree_depth(const zkrc__ctree *t, const char *path) {
  if (strcmp(path, t->root) == 0)
    return 0;
  /* Below "/" every path is; below "/r" only "/r/..." */
  size_t skip = strcmp(t->root, "/") == 0 ? 0 : t->root_len;
  if (skip && (strncmp(path, t->root, skip) != 0 || path[skip] != '/'))
    return -1;
  int depth = 0;
  for (const char *p = path + skip; *p; p++)
    depth += *p == '/';
  return depth;
}

static gboolean within_depth(const zkrc__ctree *t, int depth) {
  return depth >= 0 && (t->max_depth < 0 || depth <= t->max_depth);
}

gboolean zkrc__ctree_lists(const zkrc__ctree *t, const char *path) {
  int depth = zkrc__ctree_depth(t, path);
  return depth >= 0 && (t->max_depth < 0 || depth < t->max_depth);
}

static gboolean reported(const zkrc__ctree *t, const char *path) {
  return !(t->hide_root && strcmp(path, t->root) == 0);
}

static void emit(GQueue *events, zkrc_cache_event_type type,
                 const zkrc_cache_node *node, const zkrc_cache_node *old) {
  g_queue_push_tail(events, zkrc__cache_ev_new(type, node, old));
}

/* "/a/b" → "/a"; "/a" → "/" (g_free it). */
static char *parent_of(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash == path ? g_strdup("/") : g_strndup(path, (gsize)(slash - path));
}

static char *child_path(const char *parent, const char *name) {
  return strcmp(parent, "/") == 0 ? g_strconcat("/", name, NULL)
                                  : g_strconcat(parent, "/", name, NULL);
}

static void link_child(ctnode *parent, const char *path) {
  if (parent->children == NULL)
    parent->children =
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  g_hash_table_add(parent->children, g_strdup(strrchr(path, '/') + 1));
}

static gboolean insert(zkrc__ctree *t, const char *path, int depth,
                       zkrc_cache_node *value, GQueue *events) {
  ctnode *parent = NULL;
  if (depth > 0) {
    char *pp = parent_of(path);
    parent = g_hash_table_lookup(t->nodes, pp);
    g_free(pp);
    if (parent == NULL) {
      /* The parent left the copy after this read was sent. */
      zkrc_cache_node_unref(value);
      return FALSE;
    }
  }
  ctnode *n = g_new0(ctnode, 1);
  n->value = value;
  g_hash_table_insert(t->nodes, g_strdup(path), n);
  if (parent)
    link_child(parent, path);
  if (reported(t, path))
    emit(events, ZKRC_CACHE_NODE_ADDED, value, NULL);
  return TRUE;
}

gboolean zkrc__ctree_apply_data(zkrc__ctree *t, const char *path,
                                const char *data, size_t len,
                                const struct Stat *stat, GQueue *events) {
  int depth = zkrc__ctree_depth(t, path);
  if (!within_depth(t, depth))
    return FALSE;
  ctnode *n = g_hash_table_lookup(t->nodes, path);
  zkrc_cache_node *value = zkrc__cache_node_new(path, data, len, stat);
  if (n == NULL)
    return insert(t, path, depth, value, events);
  const struct Stat *was = &n->value->stat;
  if (was->mzxid == stat->mzxid && was->czxid == stat->czxid) {
    zkrc_cache_node_unref(value); /* known already */
    return TRUE;
  }
  zkrc_cache_node *old = n->value;
  n->value = value;
  if (reported(t, path))
    emit(events, ZKRC_CACHE_NODE_UPDATED, value, old);
  zkrc_cache_node_unref(old);
  return TRUE;
}

static void remove_node(zkrc__ctree *t, const char *path, ctnode *n,
                        GQueue *events) {
  if (n->children) {
    /* Names first: removing a child edits this table. */
    GPtrArray *kids = g_ptr_array_new_with_free_func(g_free);
    GHashTableIter it;
    gpointer name;
    g_hash_table_iter_init(&it, n->children);
    while (g_hash_table_iter_next(&it, &name, NULL))
      g_ptr_array_add(kids, child_path(path, name));
    for (guint i = 0; i < kids->len; i++)
      zkrc__ctree_remove(t, g_ptr_array_index(kids, i), events);
    g_ptr_array_unref(kids);
  }
  if (reported(t, path))
    emit(events, ZKRC_CACHE_NODE_REMOVED, n->value, NULL);
  if (strcmp(path, t->root) != 0) {
    char *pp = parent_of(path);
    ctnode *parent = g_hash_table_lookup(t->nodes, pp);
    g_free(pp);
    if (parent && parent->children)
      g_hash_table_remove(parent->children, strrchr(path, '/') + 1);
  }
  g_hash_table_remove(t->nodes, path);
}

void zkrc__ctree_remove(zkrc__ctree *t, const char *path, GQueue *events) {
  ctnode *n = g_hash_table_lookup(t->nodes, path);
  if (n)
    remove_node(t, path, n, events);
}

void zkrc__ctree_apply_children(zkrc__ctree *t, const char *path,
                                char *const *names, int count,
                                GPtrArray *to_read, GQueue *events) {
  ctnode *n = g_hash_table_lookup(t->nodes, path);
  if (n == NULL)
    return;
  GHashTable *listed = g_hash_table_new(g_str_hash, g_str_equal);
  for (int i = 0; i < count; i++)
    g_hash_table_add(listed, names[i]);
  if (n->children) {
    GPtrArray *gone = g_ptr_array_new_with_free_func(g_free);
    GHashTableIter it;
    gpointer name;
    g_hash_table_iter_init(&it, n->children);
    while (g_hash_table_iter_next(&it, &name, NULL))
      if (!g_hash_table_contains(listed, name))
        g_ptr_array_add(gone, child_path(path, name));
    for (guint i = 0; i < gone->len; i++)
      zkrc__ctree_remove(t, g_ptr_array_index(gone, i), events);
    g_ptr_array_unref(gone);
  }
  for (int i = 0; i < count; i++)
    if (n->children == NULL || !g_hash_table_contains(n->children, names[i]))
      g_ptr_array_add(to_read, child_path(path, names[i]));
  g_hash_table_unref(listed);
}

int64_t zkrc__ctree_czxid(const zkrc__ctree *t, const char *path) {
  ctnode *n = g_hash_table_lookup(t->nodes, path);
  return n ? n->value->stat.czxid : 0;
}

gboolean zkrc__ctree_has(const zkrc__ctree *t, const char *path) {
  return g_hash_table_contains(t->nodes, path);
}

const zkrc_cache_node *zkrc__ctree_get(const zkrc__ctree *t, const char *path) {
  ctnode *n = g_hash_table_lookup(t->nodes, path);
  return n && reported(t, path) ? zkrc_cache_node_ref(n->value) : NULL;
}

GPtrArray *zkrc__ctree_paths(const zkrc__ctree *t) {
  GPtrArray *paths = g_ptr_array_new_with_free_func(g_free);
  GHashTableIter it;
  gpointer path;
  g_hash_table_iter_init(&it, t->nodes);
  while (g_hash_table_iter_next(&it, &path, NULL))
    g_ptr_array_add(paths, g_strdup(path));
  return paths;
}

static int by_path(const void *a, const void *b) {
  const zkrc_cache_node *x = *(const zkrc_cache_node *const *)a;
  const zkrc_cache_node *y = *(const zkrc_cache_node *const *)b;
  return strcmp(x->path, y->path);
}

const zkrc_cache_node **zkrc__ctree_snapshot(const zkrc__ctree *t,
                                             size_t *count) {
  guint size = g_hash_table_size(t->nodes);
  const zkrc_cache_node **out = g_new0(const zkrc_cache_node *, size + 1);
  size_t n = 0;
  GHashTableIter it;
  gpointer path, node;
  g_hash_table_iter_init(&it, t->nodes);
  while (g_hash_table_iter_next(&it, &path, &node))
    if (reported(t, path))
      out[n++] = zkrc_cache_node_ref(((ctnode *)node)->value);
  qsort(out, n, sizeof *out, by_path);
  *count = n;
  return out;
}

size_t zkrc__ctree_size(const zkrc__ctree *t) {
  size_t size = g_hash_table_size(t->nodes);
  if (t->hide_root && g_hash_table_contains(t->nodes, t->root))
    size--;
  return size;
}
