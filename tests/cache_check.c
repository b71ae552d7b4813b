/* The cache checker (see cache_check.h): replay and judge, in memory. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "cache_check.h"
#include "zkrecipes/error.h"

/* ------------------------------------------------------------- values */

cc_value cc_value_from(const zkrc_cache_node *n) {
  cc_value v = {NULL,
                -1,
                n->stat.czxid,
                n->stat.mzxid,
                n->stat.version,
                n->stat.dataLength};
  if (n->data != NULL) {
    v.len = (int)n->len;
    v.data = g_malloc(n->len + 1);
    memcpy(v.data, n->data, n->len);
    v.data[n->len] = '\0';
  }
  return v;
}

cc_value cc_value_copy(const cc_value *v) {
  cc_value c = *v;
  if (v->data != NULL) {
    c.data = g_malloc((size_t)v->len + 1);
    memcpy(c.data, v->data, (size_t)v->len + 1);
  }
  return c;
}

void cc_value_clear(cc_value *v) {
  g_free(v->data);
  v->data = NULL;
  v->len = -1;
}

int cc_value_equal(const cc_value *a, const cc_value *b) {
  if (a->len != b->len || a->czxid != b->czxid || a->mzxid != b->mzxid ||
      a->version != b->version || a->data_length != b->data_length)
    return 0;
  if ((a->data == NULL) != (b->data == NULL))
    return 0;
  return a->data == NULL || memcmp(a->data, b->data, (size_t)a->len) == 0;
}

cc_event cc_event_from(const zkrc_cache_event *ev) {
  cc_event e;
  memset(&e, 0, sizeof e);
  e.type = (int)ev->type;
  e.node.len = e.old.len = -1;
  if (ev->node != NULL) {
    e.has_node = 1;
    e.path = g_strdup(ev->node->path);
    e.node = cc_value_from(ev->node);
  }
  if (ev->old != NULL) {
    e.has_old = 1;
    e.old = cc_value_from(ev->old);
  }
  return e;
}

cc_event cc_event_copy(const cc_event *e) {
  cc_event c = *e;
  c.path = g_strdup(e->path);
  c.node = cc_value_copy(&e->node);
  c.old = cc_value_copy(&e->old);
  return c;
}

void cc_event_clear(cc_event *e) {
  g_free(e->path);
  e->path = NULL;
  cc_value_clear(&e->node);
  cc_value_clear(&e->old);
}

const char *cc_type_name(int type) {
  static const char *const names[] = {
      "?",         "ADDED",       "UPDATED", "REMOVED",   "INITIALIZED",
      "SUSPENDED", "RECONNECTED", "LOST",    "UNREADABLE"};
  return type >= 1 && type <= 8 ? names[type] : "?";
}

/* ------------------------------------------------------------- states */

static void value_free(gpointer p) {
  cc_value *v = p;
  cc_value_clear(v);
  g_free(v);
}

GHashTable *cc_state_new(void) {
  return g_hash_table_new_full(g_str_hash, g_str_equal, g_free, value_free);
}

void cc_state_put(GHashTable *state, const char *path, const cc_value *v) {
  cc_value *copy = g_new(cc_value, 1);
  *copy = cc_value_copy(v);
  g_hash_table_replace(state, g_strdup(path), copy);
}

GHashTable *cc_state_copy(GHashTable *state) {
  GHashTable *c = cc_state_new();
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, state);
  while (g_hash_table_iter_next(&it, &k, &v))
    cc_state_put(c, k, v);
  return c;
}

static void describe(GString *s, const char *label, const cc_value *v) {
  g_string_append_printf(s, " %s{mzxid %#llx czxid %#llx version %d len %d}",
                         label, (unsigned long long)v->mzxid,
                         (unsigned long long)v->czxid, v->version, v->len);
}

static void note_diff(GString *report, int n, const char *path,
                      const cc_value *want, const cc_value *got) {
  if (report == NULL || n > 20)
    return;
  g_string_append_printf(report, "  %s:", path);
  if (want)
    describe(report, "want", want);
  else
    g_string_append(report, " not wanted");
  if (got)
    describe(report, "got", got);
  else
    g_string_append(report, " missing");
  g_string_append_c(report, '\n');
}

int cc_state_diff(GHashTable *want, GHashTable *got, GString *report) {
  int n = 0;
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, want);
  while (g_hash_table_iter_next(&it, &k, &v)) {
    cc_value *g = g_hash_table_lookup(got, k);
    if (g == NULL || !cc_value_equal(v, g))
      note_diff(report, ++n, k, v, g);
  }
  g_hash_table_iter_init(&it, got);
  while (g_hash_table_iter_next(&it, &k, &v))
    if (!g_hash_table_contains(want, k))
      note_diff(report, ++n, k, NULL, v);
  return n;
}

int cc_depth(const char *root, const char *path) {
  size_t rl = strcmp(root, "/") == 0 ? 0 : strlen(root);
  if (strcmp(path, root) == 0)
    return 0;
  if (strncmp(path, root, rl) != 0 || path[rl] != '/' || path[rl + 1] == '\0')
    return -1;
  int depth = 0;
  for (const char *p = path + rl; *p; p++)
    depth += *p == '/';
  return depth;
}

/* ------------------------------------------------------------- replay */

typedef struct replayer {
  const cc_scope *scope;
  cc_replay *out;
  GHashTable *newest; /* path -> the highest mzxid reported (gint64*) */
  int down;
} replayer;

static void violation(replayer *r, size_t i, const cc_event *e,
                      const char *what) {
  r->out->violations++;
  if (r->out->violations <= 50)
    g_string_append_printf(r->out->report, "  event %zu %s %s: %s\n", i,
                           cc_type_name(e->type), e->path ? e->path : "-",
                           what);
}

/* Did the copy go back in time for this path? */
static void check_newest(replayer *r, const cc_event *e) {
  gint64 *seen = g_hash_table_lookup(r->newest, e->path);
  if (seen != NULL && e->node.mzxid < *seen)
    r->out->regressions++;
  if (seen == NULL || e->node.mzxid > *seen) {
    gint64 *m = g_new(gint64, 1);
    *m = e->node.mzxid;
    g_hash_table_replace(r->newest, g_strdup(e->path), m);
  }
}

static void apply_node_event(replayer *r, size_t i, const cc_event *e) {
  GHashTable *state = r->out->state;
  int depth = cc_depth(r->scope->root, e->path);
  if (depth < r->scope->min_depth ||
      (r->scope->max_depth >= 0 && depth > r->scope->max_depth))
    violation(r, i, e, "outside the cache's scope");
  if (e->has_old != (e->type == ZKRC_CACHE_NODE_UPDATED))
    violation(r, i, e, "old value present iff UPDATED: not so");
  cc_value *cur = g_hash_table_lookup(state, e->path);
  switch (e->type) {
  case ZKRC_CACHE_NODE_ADDED:
    if (cur != NULL)
      violation(r, i, e, "ADDED for a path already in the copy");
    cc_state_put(state, e->path, &e->node);
    break;
  case ZKRC_CACHE_NODE_UPDATED:
    if (cur == NULL)
      violation(r, i, e, "UPDATED for a path not in the copy");
    else if (e->has_old && !cc_value_equal(&e->old, cur))
      violation(r, i, e, "old value is not the last one reported");
    if (e->has_old && e->old.mzxid == e->node.mzxid)
      violation(r, i, e, "UPDATED with the same mzxid as before");
    cc_state_put(state, e->path, &e->node);
    break;
  default: /* REMOVED */
    if (cur == NULL)
      violation(r, i, e, "REMOVED for a path not in the copy");
    else if (!cc_value_equal(&e->node, cur))
      violation(r, i, e, "REMOVED value is not the last one reported");
    g_hash_table_remove(state, e->path);
    return;
  }
  check_newest(r, e);
}

/* UNREADABLE: a path in scope (a children cache's parent too), no data,
 * and the copy unchanged. */
static void check_unreadable(replayer *r, size_t i, const cc_event *e) {
  int depth = e->has_node ? cc_depth(r->scope->root, e->path) : -1;
  if (!e->has_node || e->has_old || e->node.data != NULL)
    violation(r, i, e, "UNREADABLE without its node alone, or with data");
  else if (depth < 0 ||
           (r->scope->max_depth >= 0 && depth > r->scope->max_depth))
    violation(r, i, e, "outside the cache's scope");
}

static void apply_other_event(replayer *r, size_t i, const cc_event *e) {
  if (e->type == ZKRC_CACHE_NODE_UNREADABLE)
    return check_unreadable(r, i, e);
  if (e->has_node || e->has_old)
    violation(r, i, e, "a node in a non-node event");
  switch (e->type) {
  case ZKRC_CACHE_INITIALIZED:
    if (r->out->at_initialized != NULL)
      violation(r, i, e, "INITIALIZED more than once");
    else {
      r->out->at_initialized = cc_state_copy(r->out->state);
      r->out->initialized_index = (long)i;
    }
    break;
  case ZKRC_CACHE_SUSPENDED:
  case ZKRC_CACHE_LOST:
    r->down = 1;
    break;
  case ZKRC_CACHE_RECONNECTED:
    if (!r->down)
      violation(r, i, e, "RECONNECTED without SUSPENDED or LOST before");
    r->down = 0;
    break;
  default:
    violation(r, i, e, "unknown event type");
  }
}

int cc_replay_run(const cc_event *events, size_t n, const cc_scope *scope,
                  cc_replay *out) {
  memset(out, 0, sizeof *out);
  out->state = cc_state_new();
  out->initialized_index = -1;
  out->report = g_string_new(NULL);
  replayer r = {scope, out,
                g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free),
                0};
  for (size_t i = 0; i < n; i++) {
    const cc_event *e = &events[i];
    if (e->type >= 1 && e->type <= 8)
      out->counts[e->type]++;
    int node_event =
        e->type >= ZKRC_CACHE_NODE_ADDED && e->type <= ZKRC_CACHE_NODE_REMOVED;
    if (node_event && (!e->has_node || e->path == NULL))
      violation(&r, i, e, "node event without a node");
    else if (node_event)
      apply_node_event(&r, i, e);
    else
      apply_other_event(&r, i, e);
  }
  if (out->at_initialized == NULL) {
    out->violations++;
    g_string_append(out->report, "  no INITIALIZED\n");
  }
  out->down_at_end = r.down;
  g_hash_table_destroy(r.newest);
  return out->violations;
}

int cc_copy_has_change(void *arg) {
  const cc_copy_has *h = arg;
  const zkrc_cache_node *n = NULL;
  if (zkrc_cache_get(h->c, h->path, &n) != ZKRC_OK)
    return 0;
  int ok = n->stat.mzxid == h->mzxid;
  zkrc_cache_node_unref(n);
  return ok;
}

void cc_replay_clear(cc_replay *r) {
  if (r->state)
    g_hash_table_destroy(r->state);
  if (r->at_initialized)
    g_hash_table_destroy(r->at_initialized);
  if (r->report)
    g_string_free(r->report, TRUE);
  memset(r, 0, sizeof *r);
}
