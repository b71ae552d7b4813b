/*
 * A cache's life (zkrecipes/cache.h): making it, and freeing it at once
 * (zkrc_cache_free) or in the background (zkrc_cache_free_async), on the
 * object runtime (core/object.h).
 *
 * Freeing gives up what the cache holds without waiting for anything of
 * the network: its session observer, its watch context (the client's
 * watches still armed on the servers fire into a cancelled context), its
 * repair timer and the reads not sent yet.  Reads in flight are not
 * pending work: each keeps a reference on the cache (its memory), and its
 * completion, once the cache is ending, only drops it (cache.c,
 * current_locked).  They change nothing the application sees, and their
 * answer may take as long as the connection is down, so free_async's done
 * does not wait for them: it follows the events queued before, at once.
 */
#include "config.h"

#include <string.h>

#include "core/util.h"
#include "session/session_internal.h"
#include "watched/cache_private.h"
#include "zkrecipes/cache.h"
#include "zkrecipes/error.h"

/* The last reference went (any thread). */
static void cache_finalize(zkrc__object *o) {
  zkrc_cache *c = (zkrc_cache *)o;
  zkrc__ctree_free(c->tree);
  g_hash_table_unref(c->deleted);
  g_hash_table_unref(c->refused);
  zkrc__session_unref_recipe(c->s);
  g_free(c);
}

/* The defaults, in a whole struct of ours. */
static void cache_options_defaults(zkrc_cache_options *opts) {
  if (opts == NULL)
    return;
  memset(opts, 0, sizeof *opts);
  opts->size = sizeof *opts;
  opts->max_depth = -1;
}

void zkrc_cache_options_init_sized(zkrc_cache_options *opts, size_t size) {
  zkrc_cache_options full;
  cache_options_defaults(&full);
  zkrc__options_give(opts, size, &full, sizeof full);
}

/* The three shapes of one engine. */
typedef enum { SHAPE_NODE, SHAPE_CHILDREN, SHAPE_TREE } cache_shape;

static int cache_new(zkrc_cache **out, zkrc_session *s, const char *path,
                     const zkrc_cache_options *given, cache_shape shape) {
  if (out)
    *out = NULL;
  zkrc_cache_options o;
  zkrc_cache_options_init(&o);
  if (out == NULL || s == NULL || !zkrc__cache_path_ok(path) ||
      !zkrc__options_take(&o, sizeof o, given) || o.max_depth < -1)
    return zkrc__fail(ZKRC_EINVAL);
  zkrc_cache *c = g_new0(zkrc_cache, 1);
  zkrc__object_init(&c->o, zkrc__session_executor(s), cache_finalize);
  g_queue_init(&c->backlog);
  c->deleted = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  c->refused = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  c->s = zkrc__session_ref_recipe(s);
  int depth = shape == SHAPE_NODE       ? 0
              : shape == SHAPE_CHILDREN ? 1
                                        : o.max_depth;
  c->tree = zkrc__ctree_new(path, depth, shape == SHAPE_CHILDREN);
  c->on_event = o.on_event;
  c->event_arg = o.event_arg;
  gboolean closed = FALSE;
  c->observer = zkrc__session_observe(s, zkrc__cache_on_session, c, &closed);
  if (closed) {
    zkrc__session_unobserve(s, c->observer);
    zkrc__object_unref(&c->o);
    return zkrc__fail(ZKRC_ECLOSED);
  }
  zkrc__cache_read_all(c);
  *out = c;
  return ZKRC_OK;
}

int zkrc_node_cache_new(zkrc_cache **out, zkrc_session *s, const char *path,
                        const zkrc_cache_options *opts) {
  return cache_new(out, s, path, opts, SHAPE_NODE);
}

int zkrc_children_cache_new(zkrc_cache **out, zkrc_session *s, const char *path,
                            const zkrc_cache_options *opts) {
  return cache_new(out, s, path, opts, SHAPE_CHILDREN);
}

int zkrc_tree_cache_new(zkrc_cache **out, zkrc_session *s, const char *path,
                        const zkrc_cache_options *opts) {
  return cache_new(out, s, path, opts, SHAPE_TREE);
}

/* ------------------------------------------------------------- freeing */

/* Both frees: no session event reaches the cache after this (the
 * session's worker may be telling it one now: waited for, local work). */
static void stop_observing(zkrc_cache *c) {
  zkrc__session_unobserve(c->s, c->observer);
}

/* Both frees, once the object is closed or detached: give up what the
 * cache holds, and the owner's reference. */
static void let_go(zkrc_cache *c) {
  zkrc__cache_give_up(c);
  zkrc__object_unref(&c->o);
}

void zkrc_cache_free(zkrc_cache *c) {
  if (c == NULL)
    return;
  stop_observing(c);
  g_mutex_lock(&c->o.mu);
  zkrc__object_close_locked(&c->o); /* waits for a listener elsewhere */
  g_mutex_unlock(&c->o.mu);
  let_go(c);
}

int zkrc_cache_free_async(zkrc_cache *c, zkrc_callback_fn done, void *arg) {
  if (c == NULL || done == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  stop_observing(c);
  g_mutex_lock(&c->o.mu);
  zkrc__object_detach_locked(&c->o, done, arg); /* nothing pending */
  g_mutex_unlock(&c->o.mu);
  let_go(c);
  return ZKRC_OK;
}
