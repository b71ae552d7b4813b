/*
 * A cache's copy of the tree, and the decisions that keep it current: pure
 * functions on in-memory input (no ZooKeeper, no threads), unit-tested by
 * tests/test_cache_tree.c.  cache.c feeds it the servers' replies in the
 * order they arrive on one connection, which is the order the servers
 * processed them, so the latest reply about a fact always wins.
 *
 * Each change of the copy appends one event to the caller's queue; the
 * events replay to the copy.  The caller holds the cache's mutex.
 */
#ifndef ZKRC_CACHE_TREE_H
#define ZKRC_CACHE_TREE_H

#include <stddef.h>
#include <stdint.h>

#include <glib.h>

#include "core/object.h"
#include "zkrecipes/cache.h"

typedef struct zkrc__ctree zkrc__ctree;

/* A copy rooted at @p root, caching nodes down to @p max_depth below it
 * (-1: no limit).  With @p hide_root (a children cache) the root is kept
 * (its children hang from it) but neither reported nor handed out. */
zkrc__ctree *zkrc__ctree_new(const char *root, int max_depth,
                             gboolean hide_root);
void zkrc__ctree_free(zkrc__ctree *t);

/* An immutable node value with one reference (the caller's); @p data may
 * be NULL (a node without data). */
zkrc_cache_node *zkrc__cache_node_new(const char *path, const char *data,
                                      size_t len, const struct Stat *stat);

/* An event for the caller's queue: owns its references.  An object's event
 * record (core/object.h) whose release is zkrc__cache_ev_free; the cache
 * sets its tell when it tells it (cache.c). */
typedef struct zkrc__cache_ev {
  zkrc__object_event base;
  zkrc_cache_event ev;
} zkrc__cache_ev;
zkrc__cache_ev *zkrc__cache_ev_new(zkrc_cache_event_type type,
                                   const zkrc_cache_node *node,
                                   const zkrc_cache_node *old);
void zkrc__cache_ev_free(zkrc__cache_ev *e);

/* How deep @p path is below the root (0: the root); -1 when it is not the
 * root nor below it. */
int zkrc__ctree_depth(const zkrc__ctree *t, const char *path);

/* May @p path have children in the copy (above the depth limit)? */
gboolean zkrc__ctree_lists(const zkrc__ctree *t, const char *path);

/* A getData reply: @p path exists with this data and stat.  Enters the copy
 * (ADDED), replaces it (UPDATED, when its mzxid or czxid differs), or does
 * nothing (the value is known, or its parent is not in the copy: the reply
 * is older than the parent's removal).  Returns TRUE when the node is in
 * the copy afterwards. */
gboolean zkrc__ctree_apply_data(zkrc__ctree *t, const char *path,
                                const char *data, size_t len,
                                const struct Stat *stat, GQueue *events);

/* @p path does not exist (a NoNode reply, a deletion event): it and its
 * descendants leave the copy, deepest first (REMOVED each). */
void zkrc__ctree_remove(zkrc__ctree *t, const char *path, GQueue *events);

/* A getChildren reply for @p path: children missing from @p names leave the
 * copy; the paths of names not in the copy are appended to @p to_read
 * (g_malloc'ed strings) for the caller to read.  Ignored when @p path is
 * not in the copy. */
void zkrc__ctree_apply_children(zkrc__ctree *t, const char *path,
                                char *const *names, int count,
                                GPtrArray *to_read, GQueue *events);

/* The czxid of @p path in the copy (hidden root included), 0 if absent. */
int64_t zkrc__ctree_czxid(const zkrc__ctree *t, const char *path);

/* Is @p path in the copy (hidden root included)? */
gboolean zkrc__ctree_has(const zkrc__ctree *t, const char *path);

/* The value at @p path, referenced (NULL: not in the copy, or the hidden
 * root). */
const zkrc_cache_node *zkrc__ctree_get(const zkrc__ctree *t, const char *path);

/* Every path in the copy (hidden root included), g_malloc'ed, for a full
 * read; free with g_ptr_array_unref. */
GPtrArray *zkrc__ctree_paths(const zkrc__ctree *t);

/* Referenced values of every reported node, sorted by path, NULL-ended
 * (g_malloc'ed array); *count gets their number. */
const zkrc_cache_node **zkrc__ctree_snapshot(const zkrc__ctree *t,
                                             size_t *count);

/* Nodes reported (the hidden root excluded). */
size_t zkrc__ctree_size(const zkrc__ctree *t);

/* The root path. */
const char *zkrc__ctree_root(const zkrc__ctree *t);

#endif /* ZKRC_CACHE_TREE_H */
