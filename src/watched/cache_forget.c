/*
 * A cache's watches while its connection is down.
 *
 * On every reconnection the ZooKeeper C client (3.8) sends every watch its
 * handle holds in one SetWatches request: 4 bytes and the path for each
 * watched node.  Past jute.maxbuffer (1 MB: about 36,000 nodes of short
 * paths) the servers reset the connection, and the client sends the same
 * request again on its next one, until the session's lease runs out.
 * Java's client splits the request; Debian's C client does not.
 *
 * A cache needs none of its watches back: every reconnection reads every
 * node of the copy again, each read with a watch (cache.c, on_session).
 * So when its connection goes, a cache takes its watches out of the
 * client's tables (a local removal: nothing is sent, nothing waits on the
 * servers), and what the next connection re-sends is the few watches of
 * the other recipes, whatever the size of the cache.  A reconnection that
 * came before the removal (the client reconnects at once) and was reset
 * for it is followed by one that carries none of them.
 *
 * Runs on the session's worker (the SUSPENDED event), never under c->o.mu
 * while calling into the client: the client takes its own watcher lock,
 * and its completion thread calls on_watch, which takes c->o.mu.
 */
#include "config.h"

#include "watched/cache_private.h"
#include "session/session_internal.h"
#include "session/zk_call.h"

/* The paths the cache may watch on its current handle (owned strings),
 * and that handle's watch context; NULL when it has none on @p conn. */
static GPtrArray *watched_paths(zkrc_cache *c, zkrc_conn *conn, void **ctx) {
  GPtrArray *paths = NULL;
  g_mutex_lock(&c->o.mu);
  *ctx = c->watch_ctx;
  if (!zkrc__object_ending(&c->o) && *ctx && c->watch_gen == conn->generation) {
    paths = zkrc__ctree_paths(c->tree);
    /* The root's creation is watched while it is missing, and nodes we
     * may not read for a change (cache_refused.c); the reconnection's
     * full read reads them again too. */
    g_ptr_array_add(paths, g_strdup(zkrc__ctree_root(c->tree)));
    GHashTableIter it;
    gpointer refused;
    g_hash_table_iter_init(&it, c->refused);
    while (g_hash_table_iter_next(&it, &refused, NULL))
      g_ptr_array_add(paths, g_strdup(refused));
  }
  g_mutex_unlock(&c->o.mu);
  return paths;
}

void zkrc__cache_forget_watches(zkrc_cache *c) {
  zkrc_conn *conn = zkrc__conn_use(c->s);
  if (conn == NULL)
    return; /* retired: its watches went with it */
  void *ctx = NULL;
  GPtrArray *paths = watched_paths(c, conn, &ctx);
  for (guint i = 0; paths && i < paths->len; i++) {
    /* ZNOWATCHER for a node whose watch fired or that was never read:
     * nothing to remove. */
    (void)zkrc__zk_remove_watches(conn, g_ptr_array_index(paths, i),
                                  ZWATCHTYPE_ANY, ctx, 1);
  }
  zkrc__conn_unuse(conn);
  if (paths)
    g_ptr_array_unref(paths);
}
