/*
 * A shared value's watch (zkrecipes/shared.h): a node cache whose events
 * are told as the value they carry, and its connection events as they are.
 */
#include "config.h"

#include <glib.h>

#include "recipes/recipe.h"
#include "core/util.h"
#include "zkrecipes/cache.h"
#include "zkrecipes/error.h"
#include "zkrecipes/shared.h"

struct zkrc_shared_watch {
  zkrc_cache *cache;
  zkrc_shared_watch_event_fn fn;
  void *arg;
};

const char *zkrc_shared_watch_event_name(zkrc_shared_watch_event_type type) {
  switch (type) {
  case ZKRC_SHARED_WATCH_VALUE:
    return "value";
  case ZKRC_SHARED_WATCH_SUSPENDED:
    return "suspended";
  case ZKRC_SHARED_WATCH_RECONNECTED:
    return "reconnected";
  case ZKRC_SHARED_WATCH_LOST:
    return "lost";
  }
  return "unknown";
}

void zkrc_shared_watch_options_init_sized(zkrc_shared_watch_options *opts,
                                          size_t size) {
  zkrc_shared_watch_options full; /* the defaults: zeros and the size */
  zkrc__recipe_options_init(&full, sizeof full);
  zkrc__options_give(opts, size, &full, sizeof full);
}

static void tell(zkrc_shared_watch *w, zkrc_shared_watch_event_type type,
                 const zkrc_cache_event *cev, const zkrc_cache_node *n) {
  zkrc_shared_watch_event ev = {
      .type = type, .reason = cev->reason, .zk_error = cev->zk_error};
  /* The cache's node is immutable and lives through the call. */
  zkrc_versioned_value v = {0};
  if (n) {
    v.data = (char *)n->data;
    v.len = n->len;
    v.version = n->stat.version;
    ev.value = &v;
  }
  w->fn(w, &ev, w->arg);
}

static void on_cache_event(zkrc_cache *c, const zkrc_cache_event *ev,
                           void *arg) {
  zkrc_shared_watch *w = arg;
  switch (ev->type) {
  case ZKRC_CACHE_NODE_ADDED:
  case ZKRC_CACHE_NODE_UPDATED:
    tell(w, ZKRC_SHARED_WATCH_VALUE, ev, ev->node);
    break;
  case ZKRC_CACHE_NODE_REMOVED:
    tell(w, ZKRC_SHARED_WATCH_VALUE, ev, NULL);
    break;
  case ZKRC_CACHE_INITIALIZED:
    /* A node found first was told as ADDED; a missing one is told here. */
    if (zkrc_cache_size(c) == 0)
      tell(w, ZKRC_SHARED_WATCH_VALUE, ev, NULL);
    break;
  case ZKRC_CACHE_SUSPENDED:
    tell(w, ZKRC_SHARED_WATCH_SUSPENDED, ev, NULL);
    break;
  case ZKRC_CACHE_RECONNECTED:
    tell(w, ZKRC_SHARED_WATCH_RECONNECTED, ev, NULL);
    break;
  case ZKRC_CACHE_LOST:
    tell(w, ZKRC_SHARED_WATCH_LOST, ev, NULL);
    break;
  default: /* UNREADABLE: the value stays unknown (no VALUE) */
    break;
  }
}

int zkrc_shared_watch_new(zkrc_shared_watch **out, zkrc_session *s,
                          const char *path,
                          const zkrc_shared_watch_options *opts) {
  if (out)
    *out = NULL;
  zkrc_shared_watch_options o;
  zkrc_shared_watch_options_init(&o);
  if (out == NULL || opts == NULL || !zkrc__options_take(&o, sizeof o, opts) ||
      o.on_event == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  zkrc_shared_watch *w = g_new0(zkrc_shared_watch, 1);
  w->fn = o.on_event;
  w->arg = o.event_arg;
  zkrc_cache_options co;
  zkrc_cache_options_init(&co);
  co.on_event = on_cache_event;
  co.event_arg = w;
  int err = zkrc_node_cache_new(&w->cache, s, path, &co);
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
  zkrc_cache_free(w->cache); /* the callback is not running after this */
  g_free(w);
}
