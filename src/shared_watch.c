/*
 * A shared value's change listener (zkrecipes/shared.h): a node cache whose
 * events are told as the value they carry.
 */
#include "config.h"

#include <glib.h>

#include "util.h"
#include "zkrecipes/cache.h"
#include "zkrecipes/error.h"
#include "zkrecipes/shared.h"

struct zkrc_shared_watch {
  zkrc_cache *cache;
  zkrc_shared_value_fn fn;
  void *arg;
};

static void tell(zkrc_shared_watch *w, const zkrc_cache_node *n) {
  if (n == NULL) {
    w->fn(NULL, w->arg);
    return;
  }
  /* The cache's node is immutable and lives through the call. */
  zkrc_versioned_value v = {(char *)n->data, n->len, n->stat.version};
  w->fn(&v, w->arg);
}

static void on_cache_event(zkrc_cache *c, const zkrc_cache_event *ev,
                           void *arg) {
  zkrc_shared_watch *w = arg;
  switch (ev->type) {
  case ZKRC_CACHE_NODE_ADDED:
  case ZKRC_CACHE_NODE_UPDATED:
    tell(w, ev->node);
    break;
  case ZKRC_CACHE_NODE_REMOVED:
    tell(w, NULL);
    break;
  case ZKRC_CACHE_INITIALIZED:
    /* A node found first was told as ADDED; a missing one is told here. */
    if (zkrc_cache_size(c) == 0)
      tell(w, NULL);
    break;
  default:
    break;
  }
}

int zkrc_shared_value_watch(zkrc_shared_watch **out, zkrc_session *s,
                            const char *path, zkrc_shared_value_fn fn,
                            void *arg) {
  if (out)
    *out = NULL;
  if (out == NULL || fn == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  zkrc_shared_watch *w = g_new0(zkrc_shared_watch, 1);
  w->fn = fn;
  w->arg = arg;
  zkrc_cache_options o;
  zkrc_cache_options_init(&o);
  o.listener = on_cache_event;
  o.listener_arg = w;
  int err = zkrc_node_cache_new(&w->cache, s, path, &o);
  if (err != ZKRC_OK) {
    g_free(w);
    return err;
  }
  *out = w;
  return ZKRC_OK;
}

void zkrc_shared_watch_free(zkrc_shared_watch *w) {
  if (w == NULL)
    return;
  zkrc_cache_free(w->cache); /* the listener is not running after this */
  g_free(w);
}
