/*
 * zkrecipes/cache.h - a local, current copy of ZooKeeper nodes.
 *
 * Three shapes, one engine (Curator's NodeCache, PathChildrenCache and
 * TreeCache / CuratorCache; kazoo's DataWatch, ChildrenWatch, TreeCache):
 *
 *  - a node cache: one node's data and stat;
 *  - a children cache: the children of a node, each with its data and stat
 *    (the parent itself is read and watched, but not reported);
 *  - a tree cache: a node and its descendants down to a depth.
 *
 * The copy converges to the servers' state: the cache reads every node with
 * a one-shot watch and reads it again when the watch fires; it reads the
 * whole tree again after every reconnection and after a session expiry
 * (when changes may have been missed), and reports only what differs from
 * its copy.  A node that does not exist yet is watched until it is
 * created.  Every change of the copy is reported once, in the order it was
 * made, to the event callback (on_event), on the session's executor (zkrecipes/executor.h,
 * zkrecipes/glib.h), never with a zkrecipes mutex held:
 *
 *     ADDED    a node entered the copy (its data and stat)
 *     UPDATED  its data changed, or it was deleted and created again
 *              (the node's mzxid differs from the one last reported)
 *     REMOVED  it left the copy (the last value reported for it)
 *
 * Applying the events in order to an empty map (path -> value) gives the
 * copy at that instant: after any sequence of changes and faults, once the
 * servers are quiet and the cache is connected, the last value reported for
 * every path is its value on the servers.  Intermediate values may be
 * skipped (a node changed twice between two reads is reported once, with
 * its latest value), as with every ZooKeeper watch.  Besides node events:
 * INITIALIZED once, when the first complete read of the tree is in the copy,
 * and the connection events SUSPENDED, RECONNECTED and LOST (the session
 * expired; the copy is kept and read again on the next session).
 *
 * Nodes you may not read: a node whose ACL refuses this session READ
 * (ZNOAUTH) stays out of the copy (a node in the copy keeps the value read
 * before), and the event callback is told UNREADABLE once, with a node carrying
 * its path and its stat (ZooKeeper's exists() needs no permission) and no
 * data; for a children cache, the parent too (its children cannot be
 * listed).  The root's UNREADABLE comes before INITIALIZED, and
 * zkrc_cache_get() of such a path says ZKRC_ENOAUTH, not ZKRC_ENONODE: an
 * unreadable root is not mistaken for a missing one.  The cache watches
 * the node (exists()) and reads it again when it changes; once it may be
 * read it enters the copy with the usual ADDED (UPDATED for a node kept).
 * ZooKeeper fires no watch when only the ACL changes (setACL): access
 * granted is noticed at the node's next change (data written, deleted) or
 * at the next full read (after a reconnection).  Servers that filter watch
 * events by ACL (Debian's 3.8.0 does: "Not delivering event ... filtered
 * by ACL") spend the watch on a change made while the node is still
 * unreadable without telling the cache; such a node is then read again
 * only at the next full read.  A node deleted while unreadable is
 * forgotten without an event (it never was in the copy).
 *
 * Reads of the copy (zkrc_cache_get(), zkrc_cache_snapshot()) never go to
 * the servers: they take the cache's mutex and a reference on immutable
 * nodes.  A snapshot is one instant of the copy; the copy may be ahead of
 * the events the event callback has been told so far.
 *
 * Cost: two requests per node at the start (getData and getChildren, with
 * watches; getChildren only above the depth limit), one per change of a
 * node's data, one per change of a node's children plus two per new child
 * (a deletion costs only its parent's listing: a node deleted and created
 * again in one multi is then read once more, one UPDATED, and never missing
 * from the copy), and
 * the whole tree again after each reconnection; at most 256 reads on the
 * wire at once.  Size: a reconnection does not re-send the cache's watches
 * (it takes them out of the ZooKeeper client's tables when the connection
 * goes, and its reads set them again), so no cache is too large to come
 * back; the limits left are the servers' on one node and one listing
 * (jute.maxbuffer, 1 MiB).  Memory: the data
 * cached plus an overhead per node stated in README ("Caches").
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef ZKRECIPES_CACHE_H
#define ZKRECIPES_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include <zkrecipes/session.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zkrc_cache zkrc_cache;

/**
 * One node of the copy, immutable.  Nodes handed out by the cache carry a
 * reference: give it back with zkrc_cache_node_unref() (except in an
 * event, where the cache owns it for the duration of the callback; take
 * your own with zkrc_cache_node_ref() to keep it).
 */
typedef struct zkrc_cache_node {
  const char *path; /**< absolute path */
  const char *data; /**< the node's data, NUL-terminated for convenience
                         (the NUL is not counted in len); NULL when the
                         node has no data (created with a NULL buffer) */
  size_t len;       /**< bytes of data */
  struct Stat stat; /**< as read with the data */
} zkrc_cache_node;

/** Another reference on @p n (returns @p n; NULL is returned as is). */
const zkrc_cache_node *zkrc_cache_node_ref(const zkrc_cache_node *n);
/** Give back a reference (NULL is ignored).  Any thread. */
void zkrc_cache_node_unref(const zkrc_cache_node *n);

/** What a cache reports. */
typedef enum zkrc_cache_event_type {
  ZKRC_CACHE_NODE_ADDED = 1,
  ZKRC_CACHE_NODE_UPDATED,
  ZKRC_CACHE_NODE_REMOVED,
  ZKRC_CACHE_INITIALIZED,
  ZKRC_CACHE_SUSPENDED,   /**< the connection is down; the copy may be stale */
  ZKRC_CACHE_RECONNECTED, /**< connected again (same or new session); the
                               cache is reading the tree again */
  ZKRC_CACHE_LOST,        /**< the session expired (reason
                               ZKRC_ESESSIONEXPIRED) or its lease ran out
                               (ZKRC_ESESSIONLOST), or the session was
                               closed (ZKRC_ECLOSED, or ZKRC_EAUTHFAILED
                               for refused credentials; then nothing
                               follows; told once when a session that
                               expired is closed) */
  ZKRC_CACHE_NODE_UNREADABLE /**< a node exists that the node's ACL does
                                  not let this session read (ZooKeeper said
                                  ZNOAUTH); see "Nodes you may not read"
                                  above.  Appended: the values above never
                                  change. */
} zkrc_cache_event_type;

/** "added", "updated", "removed", "initialized", "suspended",
 *  "reconnected", "lost", "unreadable" ("unknown" for another value).
 *  Static string; any thread. */
const char *zkrc_cache_event_name(zkrc_cache_event_type type);

/** A cache's event, valid during the call. */
typedef struct zkrc_cache_event {
  /** What happened. */
  zkrc_cache_event_type type;
  /** Why, as a zkrc error: SUSPENDED ZKRC_ECONNLOSS; LOST as said at
   *  ZKRC_CACHE_LOST; UNREADABLE ZKRC_ENOAUTH; ZKRC_OK for the others. */
  int reason;
  /** ZooKeeper's code behind @c reason (ZCONNECTIONLOSS, ZSESSIONEXPIRED,
   *  ZAUTHFAILED, ZNOAUTH); ZOK when there is none (a lease that ran out,
   *  a close, the changes of the copy). */
  int zk_error;
  /** ADDED and UPDATED: the new value; REMOVED: the last value reported;
   *  UNREADABLE: the node's path and stat, data NULL and len 0 (test the
   *  type, not this pointer, to tell changes of the copy).  NULL for the
   *  other events.  Owned by the cache during the call. */
  const zkrc_cache_node *node;
  /** UPDATED: the value reported before; NULL otherwise. */
  const zkrc_cache_node *old;
} zkrc_cache_event;

/**
 * A cache's event callback.  Runs on the session's executor, one event at
 * a time and in order, never with a zkrecipes mutex held; it may call any
 * zkrecipes function that does not wait for the executor (reads of the
 * copy, zkrc_cache_free() or zkrc_cache_free_async() of this cache).
 */
typedef void (*zkrc_cache_event_fn)(zkrc_cache *c, const zkrc_cache_event *ev,
                                    void *arg);

/** A cache's options; initialize with zkrc_cache_options_init(). */
typedef struct zkrc_cache_options {
  /** Set by zkrc_cache_options_init() (see zkrc_lock_options.size). */
  size_t size;
  /** Told about every change (above), with @c event_arg.  NULL: none
   *  (read the copy when you need it). */
  zkrc_cache_event_fn on_event;
  void *event_arg;
  /** Tree caches only: how deep below the root nodes are cached (0: the
   *  root alone, 1: the root and its children, ...).  -1 (default): no
   *  limit. */
  int max_depth;
} zkrc_cache_options;

/** Zero @p opts, set its size and max_depth -1 (NULL is ignored).  Fills
 *  the first @p size bytes of @p opts, the size of the struct as your
 *  program was compiled with it, and sets its size field to it: the
 *  fields a program built against an older, shorter zkrc_cache_options
 *  lacks are never written.  Call zkrc_cache_options_init(), which passes
 *  it. */
void zkrc_cache_options_init_sized(zkrc_cache_options *opts, size_t size);

/** Zero @p opts, set its size and max_depth -1 (NULL is ignored).
 *  Inline: it passes sizeof *@p opts as this header defines it to
 *  zkrc_cache_options_init_sized(), so a program keeps working with a
 *  later library whose struct has grown (and a later program, whose
 *  struct is longer, with this library: the fields it does not know are
 *  ignored). */
static inline void zkrc_cache_options_init(zkrc_cache_options *opts) {
  zkrc_cache_options_init_sized(opts, sizeof *opts);
}

/**
 * Start caching the node at @p path.  Returns at once; the first read is
 * under way (zkrc_cache_wait_initialized() waits for it).  The node need
 * not exist.
 * @param opts  NULL for the defaults.
 * @param path  a path as zkrc_path_validate() accepts, "/", or a path
 *              below the servers' "/zookeeper" (a tree cache of "/" holds
 *              those too).
 * @return ZKRC_OK (*@p out is yours: zkrc_cache_free()); ZKRC_EINVAL (NULL
 *         @p out or @p s, invalid path, options not initialized);
 *         ZKRC_ECLOSED (the session is closed).
 * Threading: any thread; the cache is usable from any thread.
 */
int zkrc_node_cache_new(zkrc_cache **out, zkrc_session *s, const char *path,
                        const zkrc_cache_options *opts);

/** As zkrc_node_cache_new(), caching the children of @p path (not
 *  @p path itself: zkrc_cache_get(c, path) is ZKRC_ENONODE). */
int zkrc_children_cache_new(zkrc_cache **out, zkrc_session *s, const char *path,
                            const zkrc_cache_options *opts);

/** As zkrc_node_cache_new(), caching @p path and its descendants down to
 *  opts->max_depth. */
int zkrc_tree_cache_new(zkrc_cache **out, zkrc_session *s, const char *path,
                        const zkrc_cache_options *opts);

/**
 * Wait until the first complete read of the tree is in the copy (the
 * INITIALIZED event), at most @p timeout_ms (ZKRC_WAIT_FOREVER, or >= 0).
 * @return ZKRC_OK; ZKRC_ETIMEDOUT; ZKRC_EINVAL; ZKRC_ECLOSED (the session
 *         was closed); ZKRC_ECANCELED (the cache was freed meanwhile, by
 *         another thread).  Not from the executor's thread.
 */
int zkrc_cache_wait_initialized(zkrc_cache *c, int timeout_ms);

/**
 * The copy of the node at @p path (NULL: the cache's root).
 * @return ZKRC_OK (*@p out referenced: zkrc_cache_node_unref());
 *         ZKRC_ENONODE (not in the copy); ZKRC_ENOAUTH (not in the copy:
 *         the node exists and its ACL refused the cache's read, with
 *         zkrc_last_zk_error() ZNOAUTH); ZKRC_EINVAL (NULL @p c or
 *         @p out, a path zkrc_node_cache_new() would refuse).
 * Threading: any thread, including event callbacks.  No server round trip.
 */
int zkrc_cache_get(zkrc_cache *c, const char *path,
                   const zkrc_cache_node **out);

/**
 * The whole copy at one instant, sorted by path (byte order).
 * @param nodes  receives an array of @p *count referenced nodes: free with
 *               zkrc_cache_nodes_free().  Empty copy: *count 0 and an
 *               array holding only NULL.
 * @return ZKRC_OK; ZKRC_EINVAL; ZKRC_ENOMEM.
 */
int zkrc_cache_snapshot(zkrc_cache *c, const zkrc_cache_node ***nodes,
                        size_t *count);

/** Unref each of the @p count nodes and free the array (NULL ignored). */
void zkrc_cache_nodes_free(const zkrc_cache_node **nodes, size_t count);

/** The number of nodes in the copy now. */
size_t zkrc_cache_size(zkrc_cache *c);

/** The path the cache was made for (owned by the cache). */
const char *zkrc_cache_path(zkrc_cache *c);

/**
 * Stop caching and free the cache.  After it returns the event callback
 * is not running and will not run again: it waits only for a call of the
 * callback running on another thread (from the cache's own callback it
 * does not wait: freeing a cache there is allowed).  Events still queued
 * on the executor are dropped (zkrc_cache_free_async() delivers them).
 * Never waits for the network: reads still in flight are answered into
 * nothing.  Works whatever the session's state: open, suspended or closed
 * (before or after zkrc_session_close()).  A thread waiting in
 * zkrc_cache_wait_initialized() returns ZKRC_ECANCELED.  Nodes handed out
 * stay valid until their references are given back.  NULL is ignored.
 * Do not use @p c afterwards.
 * Threading: any thread, including the cache's own event callback.
 */
void zkrc_cache_free(zkrc_cache *c);

/**
 * Free the cache without blocking: as zkrc_cache_free() (it stops
 * caching at once: no read is sent and no change is decided after this
 * call), but the events queued before this call are still delivered, in
 * order, and then @p done runs with @p arg on the session's executor,
 * after the last of them; none comes after @p done.  Reads in flight are
 * not waited for (they only keep the cache's memory until answered), so
 * @p done comes at once behind the queued events, whatever the state of
 * the connection or the session (open, suspended, closed, before or after
 * zkrc_session_close()).  From this call on, use @p c only in the
 * callbacks still to come (reads of the copy); after @p done returns it
 * is gone.  Nodes handed out stay valid until their references are given
 * back.
 *
 * @return ZKRC_OK (@p done will run); ZKRC_EINVAL (NULL @p c or @p done;
 *         nothing changes).
 * Threading: any thread, including the executor's and this cache's own
 * event callback, while the session's executor is alive.  Call it once,
 * instead of zkrc_cache_free().
 */
int zkrc_cache_free_async(zkrc_cache *c, zkrc_callback_fn done, void *arg);

#ifdef __cplusplus
}
#endif
#endif /* ZKRECIPES_CACHE_H */
