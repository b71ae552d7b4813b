/*
 * The watch registry.  ZooKeeper keeps a watcher's context pointer until the
 * watch fires, and forgets it silently when its handle is closed; a context
 * we allocated per watch would leak in that case, and a context pointing at
 * a recipe could outlive it.  So the context given to ZooKeeper is only a
 * number, naming an entry here that holds a reference on its target.
 */
#include "config.h"

#include <stdatomic.h>

#include "session/session_internal.h"

typedef struct watch_entry {
  zkrc_session *session; /* compared only */
  uint64_t generation;
  zkrc__watch_fn fn;
  void *target;
  const zkrc__watch_target_ops *ops;
  /* Stays after firing, for every watch set with its context (a cache's
   * watches: the client calls one (function, context) pair once per
   * event, however many reads armed it). */
  gboolean persistent;
} watch_entry;

static GMutex registry_mu;
static atomic_uint_fast64_t delivered; /* watch events passed on */
static GHashTable *registry;           /* id → watch_entry* */
static uintptr_t next_watch_id = 1;

static void *add_entry(zkrc_conn *c, zkrc__watch_fn fn, void *target,
                       const zkrc__watch_target_ops *ops, gboolean persistent) {
  watch_entry *e = g_new(watch_entry, 1);
  e->persistent = persistent;
  e->session = c->session;
  e->generation = c->generation;
  e->fn = fn;
  e->target = target;
  e->ops = ops;
  ops->ref(target);
  g_mutex_lock(&registry_mu);
  if (registry == NULL)
    registry = g_hash_table_new(g_direct_hash, g_direct_equal);
  uintptr_t id = next_watch_id++;
  g_hash_table_insert(registry, (gpointer)id, e);
  g_mutex_unlock(&registry_mu);
  return (void *)id;
}

void *zkrc__watch_register(zkrc_conn *c, zkrc__watch_fn fn, void *target,
                           const zkrc__watch_target_ops *ops) {
  return add_entry(c, fn, target, ops, FALSE);
}

void *zkrc__watch_register_persistent(zkrc_conn *c, zkrc__watch_fn fn,
                                      void *target,
                                      const zkrc__watch_target_ops *ops) {
  return add_entry(c, fn, target, ops, TRUE);
}

static watch_entry *steal(void *ctx) {
  watch_entry *e = NULL;
  g_mutex_lock(&registry_mu);
  if (registry &&
      g_hash_table_steal_extended(registry, ctx, NULL, (gpointer *)&e) == FALSE)
    e = NULL;
  g_mutex_unlock(&registry_mu);
  return e;
}

/* The entry for a fired watch: a one-shot entry taken out of the registry,
 * or a copy of a persistent one that references its target (*@p copy set:
 * g_free it after unref). */
static watch_entry *fired(void *ctx, gboolean *copy) {
  watch_entry *e = NULL;
  *copy = FALSE;
  g_mutex_lock(&registry_mu);
  if (registry)
    e = g_hash_table_lookup(registry, ctx);
  if (e && e->persistent) {
    watch_entry *dup = g_memdup2(e, sizeof *e);
    dup->ops->ref(dup->target);
    e = dup;
    *copy = TRUE;
  } else if (e) {
    g_hash_table_steal(registry, ctx);
  }
  g_mutex_unlock(&registry_mu);
  return e;
}

static void entry_free(watch_entry *e) {
  e->ops->unref(e->target);
  g_free(e);
}

void zkrc__watch_cancel(void *ctx) {
  watch_entry *e = steal(ctx);
  if (e)
    entry_free(e);
}

void zkrc__watch_dispatch(zhandle_t *zh, int type, int state, const char *path,
                          void *ctx) {
  (void)zh;
  (void)state;
  /* Session events are delivered to every watcher of the handle, and the
   * watch stays set: they are not about the watched node. */
  if (type == ZOO_SESSION_EVENT)
    return;
  gboolean copy;
  watch_entry *e = fired(ctx, &copy);
  if (e == NULL)
    return; /* cancelled meanwhile */
  atomic_fetch_add(&delivered, 1);
  e->fn(type, path, e->target, ctx);
  entry_free(e);
}

void zkrc__watch_drop_generation(zkrc_session *s, uint64_t generation) {
  GPtrArray *dropped = g_ptr_array_new();
  g_mutex_lock(&registry_mu);
  if (registry) {
    GHashTableIter it;
    gpointer key, value;
    g_hash_table_iter_init(&it, registry);
    while (g_hash_table_iter_next(&it, &key, &value)) {
      watch_entry *e = value;
      if (e->session == s && e->generation == generation) {
        g_ptr_array_add(dropped, e);
        g_hash_table_iter_steal(&it);
      }
    }
  }
  g_mutex_unlock(&registry_mu);
  for (guint i = 0; i < dropped->len; i++)
    entry_free(g_ptr_array_index(dropped, i));
  g_ptr_array_free(dropped, TRUE);
}

guint64 zkrc__watch_events_delivered(void) {
  return (guint64)atomic_load(&delivered);
}
