/*
 * A shared value's watch (zkrecipes/shared.h): a node cache whose events
 * are told as the value they carry, and its connection events as they are.
 *
 * The watch is an object of its own (core/object.h): the cache's callback
 * (on the executor) turns each cache event into the watch's and queues it
 * on the watch, so that the watch's callback, its free from inside it and
 * its free_async are the object's.  free_async frees the cache with the
 * cache's free_async and counts it as pending work: the watch's `done`
 * comes after the cache's, so after every event the cache had queued and
 * the watch's events they became.
 */
#include "config.h"

#include <glib.h>

#include "core/object.h"
#include "recipes/recipe.h"
#include "core/util.h"
#include "session/session_internal.h"
#include "zkrecipes/cache.h"
#include "zkrecipes/error.h"
#include "zkrecipes/shared.h"

struct zkrc_shared_watch {
  zkrc__object o;
  /* Its node cache, set under o.mu by the constructor and by the cache's
   * first callback (which may run before the constructor has it). */
  zkrc_cache *cache;
  zkrc_shared_watch_event_fn fn;
  void *arg;
};

/* A watch's event: the value points into the cache's node, referenced
 * until the event is released. */
typedef struct watch_ev {
  zkrc__object_event base;
  zkrc_shared_watch_event ev;
  zkrc_versioned_value value;
  const zkrc_cache_node *node;
} watch_ev;

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

/* On the executor, without a mutex: the application's callback. */
static void watch_ev_tell(zkrc__object *o, zkrc__object_event *base) {
  zkrc_shared_watch *w = (zkrc_shared_watch *)o;
  w->fn(w, &((watch_ev *)base)->ev, w->arg);
}

static void watch_ev_release(zkrc__object_event *base) {
  zkrc_cache_node_unref(((watch_ev *)base)->node);
  g_free(base);
}

/* Queue @p type (with @p n's value for VALUE) on the watch, behind what
 * the cache @p c told it before: the cache's callback, on the executor.  A
 * closed watch drops it (zkrc__object_tell_locked). */
static void tell(zkrc_shared_watch *w, zkrc_cache *c,
                 zkrc_shared_watch_event_type type, const zkrc_cache_event *cev,
                 const zkrc_cache_node *n) {
  watch_ev *e =
      zkrc__object_event_new(sizeof *e, watch_ev_tell, watch_ev_release);
  e->ev.type = type;
  e->ev.reason = cev->reason;
  e->ev.zk_error = cev->zk_error;
  if (n) {
    /* The cache's node is immutable: the value borrows its bytes. */
    e->node = zkrc_cache_node_ref(n);
    e->value.data = (char *)n->data;
    e->value.len = n->len;
    e->value.version = n->stat.version;
    e->ev.value = &e->value;
  }
  g_mutex_lock(&w->o.mu);
  w->cache = c; /* the watch's callback, and so its free, come after */
  zkrc__object_tell_locked(&w->o, &e->base);
  g_mutex_unlock(&w->o.mu);
}

static void on_cache_event(zkrc_cache *c, const zkrc_cache_event *ev,
                           void *arg) {
  zkrc_shared_watch *w = arg;
  switch (ev->type) {
  case ZKRC_CACHE_NODE_ADDED:
  case ZKRC_CACHE_NODE_UPDATED:
    tell(w, c, ZKRC_SHARED_WATCH_VALUE, ev, ev->node);
    break;
  case ZKRC_CACHE_NODE_REMOVED:
    tell(w, c, ZKRC_SHARED_WATCH_VALUE, ev, NULL);
    break;
  case ZKRC_CACHE_INITIALIZED:
    /* A node found first was told as ADDED; a missing one is told here. */
    if (zkrc_cache_size(c) == 0)
      tell(w, c, ZKRC_SHARED_WATCH_VALUE, ev, NULL);
    break;
  case ZKRC_CACHE_SUSPENDED:
    tell(w, c, ZKRC_SHARED_WATCH_SUSPENDED, ev, NULL);
    break;
  case ZKRC_CACHE_RECONNECTED:
    tell(w, c, ZKRC_SHARED_WATCH_RECONNECTED, ev, NULL);
    break;
  case ZKRC_CACHE_LOST:
    tell(w, c, ZKRC_SHARED_WATCH_LOST, ev, NULL);
    break;
  default: /* UNREADABLE: the value stays unknown (no VALUE) */
    break;
  }
}

static void watch_finalize(zkrc__object *o) { g_free(o); }

int zkrc_shared_watch_new(zkrc_shared_watch **out, zkrc_session *s,
                          const char *path,
                          const zkrc_shared_watch_options *opts) {
  if (out)
    *out = NULL;
  zkrc_shared_watch_options o;
  zkrc_shared_watch_options_init(&o);
  if (out == NULL || s == NULL || opts == NULL ||
      !zkrc__options_take(&o, sizeof o, opts) || o.on_event == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  zkrc_shared_watch *w = g_new0(zkrc_shared_watch, 1);
  zkrc__object_init(&w->o, zkrc__session_executor(s), watch_finalize);
  w->fn = o.on_event;
  w->arg = o.event_arg;
  zkrc_cache_options co;
  zkrc_cache_options_init(&co);
  co.on_event = on_cache_event;
  co.event_arg = w;
  zkrc_cache *cache = NULL;
  int err = zkrc_node_cache_new(&cache, s, path, &co);
  if (err != ZKRC_OK) {
    zkrc__object_unref(&w->o);
    return err;
  }
  g_mutex_lock(&w->o.mu);
  w->cache = cache;
  g_mutex_unlock(&w->o.mu);
  *out = w;
  return ZKRC_OK;
}

void zkrc_shared_watch_free(zkrc_shared_watch *w) {
  if (w == NULL)
    return;
  g_mutex_lock(&w->o.mu);
  zkrc__object_close_locked(&w->o); /* waits for a callback elsewhere */
  zkrc_cache *cache = w->cache;
  g_mutex_unlock(&w->o.mu);
  /* The cache's callback (which queues on the closed watch: dropped) is
   * not running after this, so the watch's memory may go. */
  zkrc_cache_free(cache);
  zkrc__object_unref(&w->o);
}

/* The cache's free_async is done: its last event has been turned into
 * the watch's. */
static void cache_freed(void *arg) {
  zkrc_shared_watch *w = arg;
  zkrc__object_idle(&w->o);
  zkrc__object_unref(&w->o);
}

int zkrc_shared_watch_free_async(zkrc_shared_watch *w, zkrc_callback_fn done,
                                 void *arg) {
  if (w == NULL || done == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  g_mutex_lock(&w->o.mu);
  zkrc__object_busy_locked(&w->o); /* the cache's free_async */
  zkrc__object_detach_locked(&w->o, done, arg);
  zkrc_cache *cache = w->cache;
  g_mutex_unlock(&w->o.mu);
  zkrc__object_ref(&w->o); /* cache_freed's */
  (void)zkrc_cache_free_async(cache, cache_freed, w);
  zkrc__object_unref(&w->o);
  return ZKRC_OK;
}
