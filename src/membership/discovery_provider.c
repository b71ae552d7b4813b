/*
 * A service provider (zkrecipes/discovery.h): a children cache of
 * <base>/<name> (cache.h); queries parse the cache's copy, never a round
 * trip.  The cache's events: each new or changed record is parsed once, to
 * log the malformed ones as they arrive (queries skip them silently), and
 * the application is told (on_event).  The provider is a zkrc__object
 * (core/object.h): its events are told in order on the session's executor
 * after the cache's, dropped once it is freed.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "core/object.h"
#include "membership/discovery_internal.h"
#include "core/log_internal.h"
#include "core/util.h"
#include "zkrecipes/cache.h"
#include "zkrecipes/discovery.h"
#include "session/session_internal.h"
#include "zkrecipes/error.h"
#include "zkrecipes/path.h"

struct zkrc_service_provider {
  zkrc__object o;  /* first: references, mutex, events */
  zkrc_session *s; /* referenced: its executor tells our events */
  zkrc_cache *cache;
  zkrc_service_provider_options opts; /* as given */
  gint next; /* round robin: the next index, modulo the instances */
};

/* The defaults, in a whole struct of ours. */
static void
service_provider_options_defaults(zkrc_service_provider_options *opts) {
  if (opts == NULL)
    return;
  memset(opts, 0, sizeof *opts);
  opts->size = sizeof *opts;
  opts->strategy = ZKRC_SERVICE_RANDOM;
}

const char *
zkrc_service_provider_event_name(zkrc_service_provider_event_type type) {
  switch (type) {
  case ZKRC_SERVICE_PROVIDER_CHANGED:
    return "changed";
  case ZKRC_SERVICE_PROVIDER_INITIALIZED:
    return "initialized";
  case ZKRC_SERVICE_PROVIDER_SUSPENDED:
    return "suspended";
  case ZKRC_SERVICE_PROVIDER_RECONNECTED:
    return "reconnected";
  case ZKRC_SERVICE_PROVIDER_LOST:
    return "lost";
  }
  return "unknown";
}

/* The provider's event for a cache event; 0 for none. */
static zkrc_service_provider_event_type event_type(zkrc_cache_event_type t) {
  switch (t) {
  case ZKRC_CACHE_NODE_ADDED:
  case ZKRC_CACHE_NODE_UPDATED:
  case ZKRC_CACHE_NODE_REMOVED:
    return ZKRC_SERVICE_PROVIDER_CHANGED;
  case ZKRC_CACHE_INITIALIZED:
    return ZKRC_SERVICE_PROVIDER_INITIALIZED;
  case ZKRC_CACHE_SUSPENDED:
    return ZKRC_SERVICE_PROVIDER_SUSPENDED;
  case ZKRC_CACHE_RECONNECTED:
    return ZKRC_SERVICE_PROVIDER_RECONNECTED;
  case ZKRC_CACHE_LOST:
    return ZKRC_SERVICE_PROVIDER_LOST;
  default: /* UNREADABLE: the instance stays out of the copy */
    return 0;
  }
}

void zkrc_service_provider_options_init_sized(
    zkrc_service_provider_options *opts, size_t size) {
  zkrc_service_provider_options full;
  service_provider_options_defaults(&full);
  zkrc__options_give(opts, size, &full, sizeof full);
}

typedef struct provider_event {
  zkrc__object_event base;
  zkrc_service_provider_event ev;
  char *id; /* CHANGED */
} provider_event;

static void provider_event_release(zkrc__object_event *e) {
  g_free(((provider_event *)e)->id);
  g_free(e);
}

static void provider_tell(zkrc__object *o, zkrc__object_event *e) {
  zkrc_service_provider *p = (zkrc_service_provider *)o;
  provider_event *pe = (provider_event *)e;
  pe->ev.id = pe->id;
  p->opts.on_event(p, &pe->ev, p->opts.event_arg);
}

/* The cache's events: each new or changed record parsed once, to log a
 * malformed one as it arrives; the application told (unless the provider
 * is being freed). */
static void on_cache_event(zkrc_cache *c, const zkrc_cache_event *ev,
                           void *arg) {
  (void)c;
  zkrc_service_provider *p = arg;
  if (ev->type == ZKRC_CACHE_NODE_ADDED || ev->type == ZKRC_CACHE_NODE_UPDATED)
    zkrc_service_instance_free(zkrc__discovery_parse_node(
        ev->node->path, ev->node->data, ev->node->len));
  zkrc_service_provider_event_type type = event_type(ev->type);
  if (p->opts.on_event == NULL || type == 0)
    return;
  provider_event *pe =
      zkrc__object_event_new(sizeof *pe, provider_tell, provider_event_release);
  pe->ev = (zkrc_service_provider_event){
      .type = type, .reason = ev->reason, .zk_error = ev->zk_error};
  if (type == ZKRC_SERVICE_PROVIDER_CHANGED) {
    const char *slash = strrchr(ev->node->path, '/');
    pe->id = g_strdup(slash ? slash + 1 : ev->node->path);
  }
  g_mutex_lock(&p->o.mu);
  if (zkrc__object_ending(&p->o))
    provider_event_release(&pe->base);
  else
    zkrc__object_tell_locked(&p->o, &pe->base);
  g_mutex_unlock(&p->o.mu);
}

static void provider_finalize(zkrc__object *o) {
  zkrc__session_unref(((zkrc_service_provider *)o)->s);
  g_free(o);
}

int zkrc_service_provider_new(zkrc_service_provider **out, zkrc_session *s,
                              const char *base, const char *name,
                              const zkrc_service_provider_options *opts) {
  zkrc_service_provider_options po;
  zkrc_service_provider_options_init(&po);
  if (out)
    *out = NULL;
  if (out == NULL || s == NULL || base == NULL || strcmp(base, "/") == 0 ||
      zkrc_path_validate(base, NULL) != ZKRC_OK ||
      !zkrc__discovery_name_valid(name) ||
      !zkrc__options_take(&po, sizeof po, opts) ||
      (po.strategy != ZKRC_SERVICE_RANDOM &&
       po.strategy != ZKRC_SERVICE_ROUND_ROBIN))
    return zkrc__fail(ZKRC_EINVAL);
  char *dir = g_strdup_printf("%s/%s", base, name);
  if (zkrc_path_validate(dir, NULL) != ZKRC_OK) {
    g_free(dir);
    return zkrc__fail(ZKRC_EINVAL);
  }
  zkrc_service_provider *p = g_new0(zkrc_service_provider, 1);
  zkrc__object_init(&p->o, zkrc__session_executor(s), provider_finalize);
  p->s = zkrc__session_ref(s);
  p->opts = po;
  zkrc_cache_options o;
  zkrc_cache_options_init(&o);
  o.on_event = on_cache_event;
  o.event_arg = p;
  int rc = zkrc_children_cache_new(&p->cache, s, dir, &o);
  g_free(dir);
  if (rc != ZKRC_OK) {
    zkrc__object_unref(&p->o);
    return rc;
  }
  *out = p;
  return ZKRC_OK;
}

int zkrc_service_provider_wait_initialized(zkrc_service_provider *p,
                                           int timeout_ms) {
  if (p == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  return zkrc_cache_wait_initialized(p->cache, timeout_ms);
}

int zkrc_service_provider_instances(zkrc_service_provider *p,
                                    zkrc_service_instance ***out,
                                    size_t *count) {
  if (out)
    *out = NULL;
  if (count)
    *count = 0;
  if (p == NULL || out == NULL || count == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  const zkrc_cache_node **nodes;
  size_t n;
  int rc = zkrc_cache_snapshot(p->cache, &nodes, &n);
  if (rc != ZKRC_OK)
    return rc;
  zkrc_service_instance **v = calloc(n + 1, sizeof *v);
  size_t found = 0;
  for (size_t i = 0; v && i < n; i++) {
    zkrc_service_instance *inst = NULL;
    if (nodes[i]->data && zkrc_service_instance_from_json(
                              nodes[i]->data, nodes[i]->len, &inst) == ZKRC_OK)
      v[found++] = inst; /* on_cache_event logged the others */
  }
  zkrc_cache_nodes_free(nodes, n);
  if (v == NULL)
    return zkrc__fail(ZKRC_ENOMEM);
  /* The snapshot is sorted by path; ids may sort otherwise than names
   * when a record's id differs from its node's name. */
  qsort(v, found, sizeof *v, zkrc__discovery_by_id);
  *out = v;
  *count = found;
  return ZKRC_OK;
}

int zkrc_service_provider_get(zkrc_service_provider *p,
                              zkrc_service_instance **out) {
  if (out)
    *out = NULL;
  if (p == NULL || out == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  zkrc_service_instance **v;
  size_t n;
  int rc = zkrc_service_provider_instances(p, &v, &n);
  if (rc != ZKRC_OK)
    return rc;
  if (n == 0) {
    free(v);
    return zkrc__fail(ZKRC_ENONODE);
  }
  size_t pick;
  if (p->opts.strategy == ZKRC_SERVICE_ROUND_ROBIN)
    pick = (size_t)(guint)g_atomic_int_add(&p->next, 1) % n;
  else
    pick = (size_t)g_random_int_range(0, (gint32)MIN(n, (size_t)G_MAXINT32));
  *out = v[pick];
  v[pick] = NULL;
  zkrc_service_instances_free(v, n);
  return ZKRC_OK;
}

void zkrc_service_provider_free(zkrc_service_provider *p) {
  if (p == NULL)
    return;
  g_mutex_lock(&p->o.mu);
  zkrc__object_close_locked(&p->o); /* nothing told from now on */
  g_mutex_unlock(&p->o.mu);
  zkrc_cache_free(p->cache); /* never waits for the network */
  zkrc__object_unref(&p->o);
}

/* free_async's end of the cache, on the executor, where no callback of
 * the cache can be running on another thread: its free waits for none. */
static void cache_free_job(void *cache) { zkrc_cache_free(cache); }

int zkrc_service_provider_free_async(zkrc_service_provider *p,
                                     zkrc_callback_fn done, void *arg) {
  if (p == NULL || done == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  g_mutex_lock(&p->o.mu);
  zkrc__object_post_pending_locked(&p->o, cache_free_job, p->cache);
  zkrc__object_detach_locked(&p->o, done, arg);
  g_mutex_unlock(&p->o.mu);
  zkrc__object_unref(&p->o);
  return ZKRC_OK;
}
