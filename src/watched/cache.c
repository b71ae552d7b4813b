/*
 * Caches (zkrecipes/cache.h): the reads that keep a copy current.
 *
 * Every node in the copy is read with a watch (getData, and getChildren
 * above the depth limit); a fired watch reads it again; a reconnection or a
 * new session reads everything again.  The replies are applied to the copy
 * by cache_tree.c in the order they arrive, which on one connection is the
 * order the servers processed them: the latest reply about a node wins,
 * and every change after a read fires that read's watch, so the copy
 * converges.  Replies from a handle older than the latest one the cache
 * used are dropped (its own session reads the tree again).
 *
 * Watches use one context per cache and handle (a persistent entry in the
 * watch registry): the ZooKeeper client calls a (function, context) pair
 * once per event, so reading a node again does not multiply its watches.
 *
 * Threads: replies and watches run on ZooKeeper's completion thread,
 * session events on the session's worker; both only change the copy under
 * c->o.mu and send reads after letting it go.  Events are the cache's
 * object's (core/object.h): queued under c->o.mu in the order the copy
 * changed, told on the executor without it.  Lock order: c->o.mu is a
 * recipe's mutex (session_private.h).  Making and freeing the cache:
 * cache_life.c.
 */
#include "config.h"

#include <string.h>

#include "watched/cache_private.h"
#include "core/log_internal.h"
#include "session/session_internal.h"
#include "core/util.h"
#include "session/zk_call.h"
#include "zkrecipes/cache.h"
#include "zkrecipes/error.h"
#include "zkrecipes/path.h"

/* READ_EXISTS waits for the root's creation; READ_REFUSED watches a node
 * whose read was refused (cache_refused.c). */
typedef enum { READ_DATA, READ_CHILDREN, READ_EXISTS, READ_REFUSED } read_kind;

/* One read in flight: its completion's context. */
typedef struct read_req {
  zkrc_cache *c;
  uint64_t generation;
  read_kind kind;
  int attempt;
  char *path;
} read_req;

/* What a change under c->o.mu leaves to do once it is let go. */
typedef struct work {
  gboolean pump; /* reads were added to the backlog */
} work;

#define MAX_ATTEMPTS 3

/* Reads a cache has sent and not seen answered, at most.  A full read of
 * a large tree would otherwise queue every node's reads at once, and the
 * session's lease renewal behind them: its reply late, the lease would
 * lapse and the session be given up (20,000 nodes did it here). */
#define WINDOW 256

static void send_read(zkrc_cache *c, read_req *r);

/* ------------------------------------------------------------ lifetime */

static zkrc_cache *cache_ref(zkrc_cache *c) {
  zkrc__object_ref(&c->o);
  return c;
}

static void cache_unref(zkrc_cache *c) { zkrc__object_unref(&c->o); }

static void watch_target_ref(void *t) { cache_ref(t); }
static void watch_target_unref(void *t) { cache_unref(t); }
static const zkrc__watch_target_ops watch_ops = {watch_target_ref,
                                                 watch_target_unref};

/* Is the cache being freed (at once or in the background)?  Then it sends
 * and decides nothing more. */
static gboolean ending_locked(const zkrc_cache *c) {
  return zkrc__object_ending(&c->o);
}

/* --------------------------------------------------------- the events */

/* On the executor, without c->o.mu: the listener. */
static void tell_listener(zkrc__object *o, zkrc__object_event *base) {
  zkrc_cache *c = (zkrc_cache *)o;
  c->on_event(c, &((zkrc__cache_ev *)base)->ev, c->event_arg);
}

/* Queue @p events (from cache_tree.c) for the listener, in order; none
 * once the cache is ending (nothing decided after free_async is told). */
static void tell_locked(zkrc_cache *c, GQueue *events) {
  zkrc__cache_ev *e;
  while ((e = g_queue_pop_head(events)) != NULL) {
    if (c->on_event == NULL || ending_locked(c)) {
      zkrc__cache_ev_free(e);
      continue;
    }
    e->base.tell = tell_listener;
    zkrc__object_tell_locked(&c->o, &e->base);
  }
}

/* Tell @p type, whose reason is that of the session event @p why (0:
 * none). */
static void tell_one_locked(zkrc_cache *c, zkrc_cache_event_type type,
                            zkrc_session_event_type why) {
  GQueue one = G_QUEUE_INIT;
  zkrc__cache_ev *e = zkrc__cache_ev_new(type, NULL, NULL);
  if (why)
    zkrc__session_event_reason(c->s, why, &e->ev.reason, &e->ev.zk_error);
  g_queue_push_tail(&one, e);
  tell_locked(c, &one);
}

/* --------------------------------------------------------------- reads */

static read_req *read_new(zkrc_cache *c, read_kind kind, const char *path) {
  read_req *r = g_new0(read_req, 1);
  r->c = cache_ref(c);
  r->kind = kind;
  r->path = g_strdup(path);
  return r;
}

static void read_free(read_req *r) {
  cache_unref(r->c);
  g_free(r->path);
  g_free(r);
}

/* A read to send once c->o.mu is let go.  It counts as in flight from now:
 * INITIALIZED waits for it. */
static void want_read_locked(zkrc_cache *c, work *w, read_req *r) {
  c->inflight++;
  g_queue_push_tail(&c->backlog, r);
  w->pump = TRUE;
}

static void want_locked(zkrc_cache *c, work *w, read_kind kind,
                        const char *path) {
  want_read_locked(c, w, read_new(c, kind, path));
}

/* A node to read whole: its data, and its children above the limit. */
static void want_node_locked(zkrc_cache *c, work *w, const char *path) {
  want_locked(c, w, READ_DATA, path);
  if (zkrc__ctree_lists(c->tree, path))
    want_locked(c, w, READ_CHILDREN, path);
}

/* Send reads from the backlog, in order, while the window has room.  The
 * one loop that sends them: a read that could not be sent is counted done
 * by send_read without pumping again, else a session gone with 40,000
 * reads queued recursed once per read until the stack overflowed. */
static void pump(zkrc_cache *c) {
  for (;;) {
    g_mutex_lock(&c->o.mu);
    read_req *r = c->on_wire < WINDOW ? g_queue_pop_head(&c->backlog) : NULL;
    if (r)
      c->on_wire++;
    g_mutex_unlock(&c->o.mu);
    if (r == NULL)
      return;
    send_read(c, r);
  }
}

/* Let c->o.mu go, then send the reads it left to do. */
static void unlock_and_work(zkrc_cache *c, work *w) {
  g_mutex_unlock(&c->o.mu);
  if (w->pump)
    pump(c);
}

/* INITIALIZED once nothing is in flight and nothing is missing. */
static void check_initialized_locked(zkrc_cache *c, work *w) {
  if (c->initialized || c->inflight > 0 || c->incomplete)
    return;
  c->initialized = TRUE;
  g_cond_broadcast(&c->o.cond);
  tell_one_locked(c, ZKRC_CACHE_INITIALIZED, 0);
}

/* A read that got no answer: again at once while the connection it went
 * on is up (bounded), else at the next full read, after reconnecting. */
static gboolean repair_fired(gpointer data) {
  zkrc_cache *c = data;
  g_mutex_lock(&c->o.mu);
  GSource *timer = c->repair_timer;
  c->repair_timer = NULL;
  gboolean go = c->incomplete && !ending_locked(c);
  g_mutex_unlock(&c->o.mu);
  if (timer)
    g_source_unref(timer);
  if (go)
    zkrc__cache_read_all(c);
  return G_SOURCE_REMOVE;
}

/* A read failed for good while connected: read everything again later
 * (1 s, doubling to 30 s), unless a reconnection does it first. */
static void repair_later_locked(zkrc_cache *c) {
  if (c->repair_timer || ending_locked(c))
    return;
  int ms = c->repair_ms ? c->repair_ms : 1000;
  c->repair_ms = MIN(ms * 2, 30000);
  c->repair_timer = zkrc__session_timer(c->s, ms, repair_fired, cache_ref(c),
                                        (GDestroyNotify)cache_unref);
}

/* A read is missing from the copy: the next full read (a new connection's
 * or session's) reads it.  If the session is connected already, that full
 * read may have begun before we took the mutex (a read found no handle,
 * then the new session's CONNECTED read everything, then we marked the
 * copy incomplete): read everything again later, else nothing would
 * (seen once in CI: a cache never INITIALIZED after its session was
 * expired with thousands of reads queued, test_watch_limits). */
static void incomplete_locked(zkrc_cache *c) {
  c->incomplete = TRUE;
  if (zkrc__session_connected(c->s, 0))
    repair_later_locked(c);
}

static void retry_locked(zkrc_cache *c, read_req *r, int rc, work *w) {
  if (rc == ZNOAUTH) {
    /* Left out of the copy; exists() says whether to tell UNREADABLE, and
     * watches the node for a change that may let it be read. */
    if (zkrc__cache_refused_locked(c, r->path, r->kind == READ_DATA))
      want_locked(c, w, READ_REFUSED, r->path);
    return;
  }
  if (r->attempt + 1 < MAX_ATTEMPTS &&
      zkrc__session_connected(c->s, r->generation)) {
    read_req *again = read_new(c, r->kind, r->path);
    again->attempt = r->attempt + 1;
    want_read_locked(c, w, again);
    return;
  }
  incomplete_locked(c);
}

/* Under c->o.mu: is this reply about the handle the cache reads on now? */
static gboolean current_locked(zkrc_cache *c, read_req *r) {
  return !ending_locked(c) && r->generation >= c->generation;
}

/* A sent read was answered (or could not be sent). */
static void read_done_locked(zkrc_cache *c, read_req *r, work *w) {
  (void)r;
  c->inflight--;
  c->on_wire--;
  w->pump = TRUE; /* room in the window */
  if (!ending_locked(c))
    check_initialized_locked(c, w);
}

/* The root is gone (or not there yet): watch for its creation. */
static gboolean is_root(zkrc_cache *c, const char *path) {
  return strcmp(path, zkrc__ctree_root(c->tree)) == 0;
}

static void data_done(int rc, const char *value, int value_len,
                      const struct Stat *stat, const void *data) {
  read_req *r = (read_req *)data;
  zkrc_cache *c = r->c;
  work w = {0};
  GQueue events = G_QUEUE_INIT;
  g_mutex_lock(&c->o.mu);
  if (current_locked(c, r)) {
    if (rc == ZOK || rc == ZNONODE)
      zkrc__cache_refused_forget_locked(c, r->path); /* read, or gone */
    if (rc == ZOK) {
      int64_t was = zkrc__ctree_czxid(c->tree, r->path);
      zkrc__ctree_apply_data(c->tree, r->path, value,
                             value_len > 0 ? (size_t)value_len : 0, stat,
                             &events);
      /* Created again since the last read: its children watch went with
       * the old node. */
      if (was && was != stat->czxid && zkrc__ctree_lists(c->tree, r->path))
        want_locked(c, &w, READ_CHILDREN, r->path);
    } else if (rc == ZNONODE) {
      zkrc__ctree_remove(c->tree, r->path, &events);
      if (is_root(c, r->path))
        want_locked(c, &w, READ_EXISTS, r->path);
    } else {
      retry_locked(c, r, rc, &w);
    }
    tell_locked(c, &events);
  }
  read_done_locked(c, r, &w);
  unlock_and_work(c, &w);
  read_free(r);
}

/* @p parent was listed: its children whose deletion was announced are
 * either gone from the copy (removed by the listing) or back, created
 * again: read those (one UPDATED if the data or czxid changed). */
static void recheck_deleted_locked(zkrc_cache *c, const char *parent, work *w) {
  GHashTableIter it;
  gpointer path;
  g_hash_table_iter_init(&it, c->deleted);
  while (g_hash_table_iter_next(&it, &path, NULL)) {
    if (zkrc__cache_child_name(parent, path) == NULL)
      continue;
    if (zkrc__ctree_has(c->tree, path))
      want_locked(c, w, READ_DATA, path);
    g_hash_table_iter_remove(&it);
  }
}

static void children_done(int rc, const struct String_vector *names,
                          const void *data) {
  read_req *r = (read_req *)data;
  zkrc_cache *c = r->c;
  work w = {0};
  GQueue events = G_QUEUE_INIT;
  g_mutex_lock(&c->o.mu);
  if (current_locked(c, r)) {
    if (rc == ZOK) {
      GPtrArray *to_read = g_ptr_array_new_with_free_func(g_free);
      zkrc__ctree_apply_children(c->tree, r->path, names->data, names->count,
                                 to_read, &events);
      for (guint i = 0; i < to_read->len; i++)
        want_node_locked(c, &w, g_ptr_array_index(to_read, i));
      g_ptr_array_unref(to_read);
      recheck_deleted_locked(c, r->path, &w);
      zkrc__cache_refused_listed_locked(c, r->path, names->data, names->count);
    } else if (rc == ZNONODE) {
      zkrc__ctree_remove(c->tree, r->path, &events);
      zkrc__cache_refused_forget_locked(c, r->path);
      recheck_deleted_locked(c, r->path, &w); /* forgets them */
    } else {
      retry_locked(c, r, rc, &w);
    }
    tell_locked(c, &events);
  }
  read_done_locked(c, r, &w);
  unlock_and_work(c, &w);
  read_free(r);
}

static void exists_done(int rc, const struct Stat *stat, const void *data) {
  read_req *r = (read_req *)data;
  zkrc_cache *c = r->c;
  work w = {0};
  GQueue events = G_QUEUE_INIT;
  g_mutex_lock(&c->o.mu);
  if (current_locked(c, r)) {
    if (r->kind == READ_REFUSED) /* after a refused read: UNREADABLE? */
      zkrc__cache_refused_exists_locked(c, r->path, rc, stat, &events);
    else if (rc == ZOK)
      want_node_locked(c, &w, r->path); /* created meanwhile */
    if (rc != ZOK && rc != ZNONODE)
      retry_locked(c, r, rc, &w);
    /* ZNONODE: the watch waits for its creation. */
  }
  gboolean refused = !g_queue_is_empty(&events);
  tell_locked(c, &events);
  read_done_locked(c, r, &w);
  unlock_and_work(c, &w);
  if (refused) /* logged with no mutex held */
    zkrc__log(ZKRC_LOG_WARN, "cache %s: not allowed to read %s; left out",
              zkrc_cache_path(c), r->path);
  read_free(r);
}

static void on_watch(int type, const char *path, void *target, void *ctx);

/* The watch context for reads on @p conn: one per handle. */
static void *watch_ctx_locked(zkrc_cache *c, zkrc_conn *conn) {
  if (conn->generation > c->watch_gen) {
    if (c->watch_ctx)
      zkrc__watch_cancel(c->watch_ctx);
    c->watch_ctx =
        zkrc__watch_register_persistent(conn, on_watch, c, &watch_ops);
    c->watch_gen = conn->generation;
  }
  return c->watch_ctx;
}

/* Under c->o.mu, let go here: a read pump() took from the backlog was not
 * sent.  pump() goes on with the next one itself. */
static void unsent_unlock(zkrc_cache *c, read_req *r) {
  work w = {0};
  read_done_locked(c, r, &w);
  w.pump = FALSE; /* the caller is pump(): no recursion */
  unlock_and_work(c, &w);
}

/* Send @p r (taking it over), or note that it could not be.  Only pump()
 * calls it. */
static void send_read(zkrc_cache *c, read_req *r) {
  zkrc_conn *conn = zkrc__conn_use(c->s);
  g_mutex_lock(&c->o.mu);
  /* A handle older than one a read went on already (pinned before another
   * thread pinned the new one): the new session's full read covers it, and
   * its watch context must not replace the new one's. */
  gboolean stale = conn && conn->generation < c->generation;
  if (conn == NULL || ending_locked(c) || stale) {
    if (conn == NULL && !ending_locked(c))
      incomplete_locked(c); /* the next session reads everything */
    unsent_unlock(c, r);
    if (conn)
      zkrc__conn_unuse(conn);
    read_free(r);
    return;
  }
  void *ctx = watch_ctx_locked(c, conn);
  if (conn->generation > c->generation)
    c->generation = conn->generation;
  r->generation = conn->generation;
  g_mutex_unlock(&c->o.mu);

  int rc;
  switch (r->kind) {
  case READ_DATA:
    rc = zkrc__zk_get(conn, r->path, ctx, data_done, r);
    break;
  case READ_CHILDREN:
    rc = zkrc__zk_get_children(conn, r->path, ctx, children_done, r);
    break;
  default:
    rc = zkrc__zk_exists(conn, r->path, ctx, exists_done, r);
    break;
  }
  zkrc__conn_unuse(conn);
  if (rc == ZOK)
    return;
  /* Not queued: no completion will run. */
  g_mutex_lock(&c->o.mu);
  if (!ending_locked(c))
    incomplete_locked(c);
  unsent_unlock(c, r);
  read_free(r);
}

/* A watch fired (completion thread): read what it is about again. */
static void on_watch(int type, const char *path, void *target, void *ctx) {
  (void)ctx;
  zkrc_cache *c = target;
  work w = {0};
  GQueue events = G_QUEUE_INIT;
  g_mutex_lock(&c->o.mu);
  if (ending_locked(c) || path == NULL) {
    g_mutex_unlock(&c->o.mu);
    return;
  }
  gboolean cached = zkrc__ctree_has(c->tree, path);
  gboolean refused = zkrc__cache_is_refused_locked(c, path);
  if (type == ZOO_DELETED_EVENT && refused)
    zkrc__cache_refused_forget_locked(c, path);
  if (type == ZOO_CHANGED_EVENT && refused) {
    want_node_locked(c, &w, path); /* maybe readable now */
  } else if (type == ZOO_CREATED_EVENT && is_root(c, path)) {
    want_node_locked(c, &w, path);
  } else if (type == ZOO_DELETED_EVENT && is_root(c, path)) {
    want_locked(c, &w, READ_DATA, path); /* NoNode: removed, watched */
  } else if (type == ZOO_DELETED_EVENT && cached) {
    /* Not removed yet: a node deleted and created in one multi never was
     * missing.  Its parent's listing, which the same deletion triggers,
     * decides (recheck_deleted_locked). */
    g_hash_table_add(c->deleted, g_strdup(path));
  } else if (type == ZOO_CHANGED_EVENT && cached) {
    want_locked(c, &w, READ_DATA, path);
  } else if (type == ZOO_CHILD_EVENT && cached &&
             zkrc__ctree_lists(c->tree, path)) {
    want_locked(c, &w, READ_CHILDREN, path);
  }
  tell_locked(c, &events);
  unlock_and_work(c, &w);
}

/* --------------------------------------------------- reading it all */

/* Read every node in the copy again, and the root when it is not in it:
 * what a new connection or session may have missed. */
void zkrc__cache_read_all(zkrc_cache *c) {
  work w = {0};
  zkrc_conn *conn = zkrc__conn_use(c->s);
  uint64_t generation = conn ? conn->generation : 0;
  if (conn)
    zkrc__conn_unuse(conn);
  g_mutex_lock(&c->o.mu);
  if (ending_locked(c)) {
    g_mutex_unlock(&c->o.mu);
    return;
  }
  c->incomplete = FALSE;
  c->full_read_gen = generation;
  g_hash_table_remove_all(c->deleted); /* every node is read again */
  const char *root = zkrc__ctree_root(c->tree);
  if (!zkrc__ctree_has(c->tree, root))
    want_node_locked(c, &w, root);
  GPtrArray *paths = zkrc__ctree_paths(c->tree);
  for (guint i = 0; i < paths->len; i++)
    want_node_locked(c, &w, g_ptr_array_index(paths, i));
  g_ptr_array_unref(paths);
  unlock_and_work(c, &w);
}

/* Session events (the session's worker). */
void zkrc__cache_on_session(zkrc_session *s, zkrc_session_event_type ev,
                            uint64_t generation, void *arg) {
  (void)s;
  zkrc_cache *c = arg;
  work w = {0};
  gboolean read = FALSE, forget = FALSE;
  g_mutex_lock(&c->o.mu);
  switch (ev) {
  case ZKRC_SESSION_EVENT_CONNECTED:
  case ZKRC_SESSION_EVENT_RECONNECTED:
    if (c->down_told)
      tell_one_locked(c, ZKRC_CACHE_RECONNECTED, 0);
    c->down_told = c->lost_told = FALSE;
    c->repair_ms = 0;
    /* A cache made while its session was connecting has read everything
     * on this session already (its reads waited for the connection); a
     * reconnection may have lost replies, and so may a failed read. */
    read = ev == ZKRC_SESSION_EVENT_RECONNECTED ||
           c->full_read_gen != generation || c->incomplete;
    break;
  case ZKRC_SESSION_EVENT_SUSPENDED:
    tell_one_locked(c, ZKRC_CACHE_SUSPENDED, ev);
    c->down_told = TRUE;
    forget = TRUE; /* the reconnection reads everything again */
    break;
  case ZKRC_SESSION_EVENT_LOST:
  case ZKRC_SESSION_EVENT_EXPIRED:
    if (c->lost_generation != generation)
      tell_one_locked(c, ZKRC_CACHE_LOST, ev);
    c->lost_generation = generation;
    c->down_told = c->lost_told = TRUE;
    break;
  case ZKRC_SESSION_EVENT_CLOSED:
  case ZKRC_SESSION_EVENT_AUTH_FAILED:
    /* Once: a session that expired and is not reopened is closed next. */
    if (!c->session_closed && !c->lost_told)
      tell_one_locked(c, ZKRC_CACHE_LOST, ev);
    c->session_closed = TRUE;
    g_cond_broadcast(&c->o.cond);
    break;
  default:
    break;
  }
  unlock_and_work(c, &w);
  if (forget)
    zkrc__cache_forget_watches(c);
  if (read)
    zkrc__cache_read_all(c);
}

/* ------------------------------------------------------------ the end */

void zkrc__cache_give_up(zkrc_cache *c) {
  g_mutex_lock(&c->o.mu);
  void *ctx = c->watch_ctx;
  c->watch_ctx = NULL;
  GSource *repair = c->repair_timer;
  c->repair_timer = NULL;
  GQueue unsent = c->backlog; /* each references the cache */
  g_queue_init(&c->backlog);
  g_mutex_unlock(&c->o.mu);
  if (ctx)
    zkrc__watch_cancel(ctx);
  if (repair) {
    g_source_destroy(repair);
    g_source_unref(repair);
  }
  g_queue_clear_full(&unsent, (GDestroyNotify)read_free);
}
