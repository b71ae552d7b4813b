/*
 * Nodes a cache may not read (zkrecipes/cache.h, "Nodes you may not
 * read"): the bookkeeping behind the UNREADABLE event, under c->mu (see
 * cache_private.h).
 *
 * Why an exists() watch: a refused getData or getChildren sets no watch,
 * so nothing would tell the cache when the node changes; exists() needs no
 * permission in ZooKeeper, answers whether the node is there (and its
 * stat, for the event) and fires at its next change or deletion.  A
 * refused node is told once: a full read that is refused again, or a
 * change that is still refused, tells nothing new.
 */
#include "config.h"

#include <string.h>

#include "watched/cache_private.h"
#include "zkrecipes/error.h"

const char *zkrc__cache_child_name(const char *parent, const char *path) {
  size_t len = strcmp(parent, "/") == 0 ? 0 : strlen(parent);
  if (strncmp(path, parent, len) != 0 || path[len] != '/' ||
      strchr(path + len + 1, '/') != NULL)
    return NULL;
  return path + len + 1;
}

gboolean zkrc__cache_refused_locked(zkrc_cache *c, const char *path,
                                    gboolean data_read) {
  if (!g_hash_table_contains(c->refused, path)) {
    g_hash_table_insert(c->refused, g_strdup(path), GINT_TO_POINTER(FALSE));
    return TRUE;
  }
  /* Its getData and getChildren are refused together: one exists() is
   * enough, after the getData (sent first, answered first). */
  return data_read;
}

void zkrc__cache_refused_exists_locked(zkrc_cache *c, const char *path, int rc,
                                       const struct Stat *stat,
                                       GQueue *events) {
  gpointer told;
  if (rc == ZNONODE) /* gone: its parent's listing says so */
    g_hash_table_remove(c->refused, path);
  if (rc != ZOK ||
      !g_hash_table_lookup_extended(c->refused, path, NULL, &told) ||
      GPOINTER_TO_INT(told))
    return; /* read since, or gone; or told already */
  g_hash_table_insert(c->refused, g_strdup(path), GINT_TO_POINTER(TRUE));
  zkrc_cache_node *node = zkrc__cache_node_new(path, NULL, 0, stat);
  zkrc__cache_ev *e =
      zkrc__cache_ev_new(ZKRC_CACHE_NODE_UNREADABLE, node, NULL);
  e->ev.reason = ZKRC_ENOAUTH;
  e->ev.zk_error = ZNOAUTH;
  g_queue_push_tail(events, e);
  zkrc_cache_node_unref(node);
}

gboolean zkrc__cache_is_refused_locked(zkrc_cache *c, const char *path) {
  return g_hash_table_contains(c->refused, path);
}

void zkrc__cache_refused_forget_locked(zkrc_cache *c, const char *path) {
  g_hash_table_remove(c->refused, path);
}

void zkrc__cache_refused_listed_locked(zkrc_cache *c, const char *parent,
                                       char *const *names, int count) {
  GHashTableIter it;
  gpointer path;
  g_hash_table_iter_init(&it, c->refused);
  while (g_hash_table_iter_next(&it, &path, NULL)) {
    const char *name = zkrc__cache_child_name(parent, path);
    if (name == NULL)
      continue;
    gboolean listed = FALSE;
    for (int i = 0; i < count && !listed; i++)
      listed = strcmp(names[i], name) == 0;
    if (!listed)
      g_hash_table_iter_remove(&it);
  }
}
