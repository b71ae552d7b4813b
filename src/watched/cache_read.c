/*
 * Reading a cache's copy (zkrecipes/cache.h): under the cache's mutex,
 * references on immutable nodes, never a request to the servers.
 */
#include "config.h"

#include <string.h>

#include "watched/cache_private.h"
#include "core/util.h"
#include "zkrecipes/error.h"
#include "zkrecipes/path.h"

int zkrc_cache_wait_initialized(zkrc_cache *c, int timeout_ms) {
  if (c == NULL || timeout_ms < ZKRC_WAIT_FOREVER)
    return zkrc__fail(ZKRC_EINVAL);
  int64_t deadline = zkrc__deadline_after(timeout_ms);
  zkrc__object_ref(&c->o); /* a free from another thread wakes us */
  g_mutex_lock(&c->o.mu);
  while (!c->initialized && !c->session_closed && !zkrc__object_ending(&c->o) &&
         zkrc__cond_wait_until(&c->o.cond, &c->o.mu, deadline))
    ;
  int err = c->initialized               ? ZKRC_OK
            : zkrc__object_ending(&c->o) ? ZKRC_ECANCELED
            : c->session_closed          ? ZKRC_ECLOSED
                                         : ZKRC_ETIMEDOUT;
  g_mutex_unlock(&c->o.mu);
  zkrc__object_unref(&c->o);
  return err == ZKRC_OK ? ZKRC_OK : zkrc__fail(err);
}

gboolean zkrc__cache_path_ok(const char *path) {
  if (path == NULL)
    return FALSE;
  if (strcmp(path, "/") == 0)
    return TRUE;
  if (strncmp(path, "/zookeeper", 10) == 0 &&
      (path[10] == '\0' || path[10] == '/')) {
    char *other = g_strconcat("/z", path + 10, NULL); /* same shape */
    gboolean ok = zkrc_path_validate(other, NULL) == ZKRC_OK;
    g_free(other);
    return ok;
  }
  return zkrc_path_validate(path, NULL) == ZKRC_OK;
}

int zkrc_cache_get(zkrc_cache *c, const char *path,
                   const zkrc_cache_node **out) {
  if (out)
    *out = NULL;
  if (c == NULL || out == NULL || (path && !zkrc__cache_path_ok(path)))
    return zkrc__fail(ZKRC_EINVAL);
  const char *at = path ? path : zkrc__ctree_root(c->tree);
  g_mutex_lock(&c->o.mu);
  *out = zkrc__ctree_get(c->tree, at);
  /* Not missing: there, and refused (an unreadable root is not absent). */
  gboolean refused = *out == NULL && zkrc__cache_is_refused_locked(c, at);
  g_mutex_unlock(&c->o.mu);
  if (refused)
    return zkrc__fail_zk(ZKRC_ENOAUTH, ZNOAUTH);
  return *out ? ZKRC_OK : zkrc__fail(ZKRC_ENONODE);
}

int zkrc_cache_snapshot(zkrc_cache *c, const zkrc_cache_node ***nodes,
                        size_t *count) {
  if (nodes)
    *nodes = NULL;
  if (count)
    *count = 0;
  if (c == NULL || nodes == NULL || count == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  g_mutex_lock(&c->o.mu);
  *nodes = zkrc__ctree_snapshot(c->tree, count);
  g_mutex_unlock(&c->o.mu);
  return ZKRC_OK;
}

void zkrc_cache_nodes_free(const zkrc_cache_node **nodes, size_t count) {
  if (nodes == NULL)
    return;
  for (size_t i = 0; i < count; i++)
    zkrc_cache_node_unref(nodes[i]);
  g_free(nodes);
}

size_t zkrc_cache_size(zkrc_cache *c) {
  if (c == NULL)
    return 0;
  g_mutex_lock(&c->o.mu);
  size_t n = zkrc__ctree_size(c->tree);
  g_mutex_unlock(&c->o.mu);
  return n;
}

const char *zkrc_cache_path(zkrc_cache *c) {
  return c ? zkrc__ctree_root(c->tree) : NULL;
}

const char *zkrc_cache_event_name(zkrc_cache_event_type type) {
  switch (type) {
  case ZKRC_CACHE_NODE_ADDED:
    return "added";
  case ZKRC_CACHE_NODE_UPDATED:
    return "updated";
  case ZKRC_CACHE_NODE_REMOVED:
    return "removed";
  case ZKRC_CACHE_INITIALIZED:
    return "initialized";
  case ZKRC_CACHE_SUSPENDED:
    return "suspended";
  case ZKRC_CACHE_RECONNECTED:
    return "reconnected";
  case ZKRC_CACHE_LOST:
    return "lost";
  case ZKRC_CACHE_NODE_UNREADABLE:
    return "unreadable";
  }
  return "unknown";
}
