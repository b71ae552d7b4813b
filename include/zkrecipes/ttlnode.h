/*
 * zkrecipes/ttlnode.h - a node that lives while a process keeps touching
 * it, and goes by itself a TTL after the last touch (Curator's
 * PersistentTtlNode, on its node format).
 *
 * The node at PATH is a container (ZooKeeper 3.5's CONTAINER mode) holding
 * your data; missing parents are created as containers too.  Under it the
 * library keeps a child, "touch" by default, created with a TTL
 * (PERSISTENT_WITH_TTL) and written again every TTL / touch_factor (half
 * the TTL by default), the first time at once.  While the object lives
 * the touch child is rewritten and PATH stays.  Once nobody touches it
 * (the object freed, the process gone), the servers delete the touch child
 * at their first container check after its TTL has passed, and then PATH,
 * an empty container, at a later check: PATH goes between TTL and TTL plus
 * a few container checks (the servers' znode.container.checkIntervalMs,
 * one minute by default) after the last touch.  Several objects (in any
 * process, Curator's PersistentTtlNode among them) may keep the same PATH:
 * it lives while any of them touches it.
 *
 * The servers must accept TTL nodes: ZooKeeper 3.5.3 and later, started
 * with the system property zookeeper.extendedTypesEnabled=true (off by
 * default).  Servers without it refuse the touch child's create with
 * ZUNIMPLEMENTED: the object tells ZKRC_TTL_NODE_FAILED with ZKRC_ENOTSUP
 * and stops, and zkrc_ttl_create() returns ZKRC_ENOTSUP.
 *
 * A container never written a child is not deleted by the servers, so a
 * PATH made by a process that was refused TTL nodes stays until deleted.
 *
 * Unlike a kept ephemeral node (zkrecipes/ephemeral.h), the node does not
 * depend on a session: it survives a session's expiry and a process's
 * restart for its TTL.  "Kept" (ZKRC_TTL_NODE_KEPT) means that the latest
 * touch was confirmed by the servers; the node then exists at least until
 * that touch plus the TTL, by the servers' clock.
 *
 * Events run on the session's executor, in order, never with a zkrecipes
 * mutex held.
 */
#ifndef ZKRECIPES_TTLNODE_H
#define ZKRECIPES_TTLNODE_H

#include <stddef.h>
#include <stdint.h>

#include <zkrecipes/session.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The longest TTL ZooKeeper keeps (40 bits of milliseconds, about 34
 *  years). */
#define ZKRC_TTL_MAX_MS ((int64_t)0xFFFFFFFFFF)

typedef struct zkrc_ttl_node zkrc_ttl_node;

/** What happened (zkrc_ttl_node_event.type). */
typedef enum zkrc_ttl_node_event_type {
  /** The node and its touch child were written and confirmed: the first
   *  time, and again after FAILED. */
  ZKRC_TTL_NODE_KEPT = 1,
  /** A touch failed (told once, after KEPT or at the first failure); the
   *  reason says why: ZKRC_ECONNLOSS (no connection: the library tries
   *  again with a backoff up to the touch period), ZKRC_ENOTSUP (the
   *  servers refuse TTL nodes, zk_error ZUNIMPLEMENTED) or ZKRC_ENOAUTH
   *  (an ACL forbids the create or the write): for these two the library
   *  stops trying; another zkrc error for another ZooKeeper code (tried
   *  again). */
  ZKRC_TTL_NODE_FAILED,
  /** The session was closed for good (ZKRC_ECLOSED, or the reason of the
   *  loss that closed a session without reopen) or its credentials were
   *  refused (ZKRC_EAUTHFAILED): no more touches, no more events.  The
   *  node goes a TTL after the last touch. */
  ZKRC_TTL_NODE_CLOSED
} zkrc_ttl_node_event_type;

/** "kept", "failed", "closed" ("unknown" for another value).  Static
 *  string; any thread. */
const char *zkrc_ttl_node_event_name(zkrc_ttl_node_event_type type);

/** An event, valid during the call. */
typedef struct zkrc_ttl_node_event {
  /** What happened. */
  zkrc_ttl_node_event_type type;
  /** FAILED and CLOSED: why, as a zkrc error (above); ZKRC_OK for KEPT. */
  int reason;
  /** ZooKeeper's code behind @c reason; ZOK when there is none. */
  int zk_error;
} zkrc_ttl_node_event;

/** Told each event, on the session's executor, one at a time, in order,
 *  never with a zkrecipes mutex held.  It may call any zkrc_ttl_node
 *  function that does not wait (zkrc_ttl_node_is_kept(),
 *  zkrc_ttl_node_set_data(), zkrc_ttl_node_free() or
 *  zkrc_ttl_node_free_async() of @p n). */
typedef void (*zkrc_ttl_node_event_fn)(zkrc_ttl_node *n,
                                       const zkrc_ttl_node_event *ev,
                                       void *arg);

/** Options; initialize with zkrc_ttl_node_options_init(). */
typedef struct zkrc_ttl_node_options {
  /** Set by zkrc_ttl_node_options_init() (see zkrc_lock_options.size). */
  size_t size;
  /** ACL of the node, its touch child and the parents it creates.  NULL
   *  (default): ZOO_OPEN_ACL_UNSAFE.  Copied. */
  const struct ACL_vector *acl;
  /** The touch child's name, one path component.  NULL (default):
   *  "touch", Curator's (PersistentTtlNode.DEFAULT_CHILD_NODE_NAME).
   *  Copied. */
  const char *child_name;
  /** The touch child is written every TTL / touch_factor ms (at least
   *  1 ms).  0 (default): 2, Curator's.  Otherwise at least 2. */
  int touch_factor;
  /** Told each KEPT / FAILED / CLOSED.  NULL: none. */
  zkrc_ttl_node_event_fn on_event;
  void *event_arg;
} zkrc_ttl_node_options;

/** Zero @p opts and set its size (NULL is ignored).  Fills the first @p
 *  size bytes of @p opts, the size of the struct as your program was
 *  compiled with it, and sets its size field to it: the fields a program
 *  built against an older, shorter zkrc_ttl_node_options lacks are never
 *  written.  Call zkrc_ttl_node_options_init(), which passes it. */
void zkrc_ttl_node_options_init_sized(zkrc_ttl_node_options *opts, size_t size);

/** Zero @p opts and set its size (NULL is ignored).  Inline: it passes
 *  sizeof *@p opts as this header defines it to
 *  zkrc_ttl_node_options_init_sized(), so a program keeps working with a
 *  later library whose struct has grown (and a later program, whose
 *  struct is longer, with this library: the fields it does not know are
 *  ignored). */
static inline void zkrc_ttl_node_options_init(zkrc_ttl_node_options *opts) {
  zkrc_ttl_node_options_init_sized(opts, sizeof *opts);
}

/**
 * Start keeping the node @p path, with @p len bytes of @p data (copied;
 * NULL for a node without data), for @p ttl_ms after each touch.  Returns
 * at once; the first create and touch are under way
 * (zkrc_ttl_node_wait_kept() waits for them).  When @p path exists
 * already (another keeper's, or an earlier run's), its data is replaced
 * by @p data, as Curator's does.  A @p path deleted meanwhile is created
 * again at the next touch.
 * @return ZKRC_OK (*@p out is yours: zkrc_ttl_node_free());
 *         ZKRC_EINVAL (NULL @p out or @p s, invalid path, @p ttl_ms not
 *         within 1 to ZKRC_TTL_MAX_MS, options not initialized, a
 *         child_name that is not one path component, a touch_factor of 1
 *         or below 0, NULL @p data with @p len > 0: nothing changed);
 *         ZKRC_ETOOBIG (the node's or its child's create would not pass
 *         ZooKeeper's size limit: nothing sent); ZKRC_ECLOSED (the
 *         session is closed).
 * Threading: any thread.
 */
int zkrc_ttl_node_new(zkrc_ttl_node **out, zkrc_session *s, const char *path,
                      int64_t ttl_ms, const void *data, size_t len,
                      const zkrc_ttl_node_options *opts);

/**
 * Wait until the node is kept (its latest touch confirmed), at most
 * @p timeout_ms (ZKRC_WAIT_FOREVER, ZKRC_NO_WAIT or > 0).
 * @return ZKRC_OK; ZKRC_ETIMEDOUT; ZKRC_ENOTSUP (the servers refuse TTL
 *         nodes) or ZKRC_ENOAUTH (an ACL forbids it): the library stopped
 *         trying; ZKRC_ECLOSED (the session or the object closed);
 *         ZKRC_EINVAL (NULL @p n, a bad timeout).
 * Not from the executor's thread.
 */
int zkrc_ttl_node_wait_kept(zkrc_ttl_node *n, int timeout_ms);

/**
 * Was the latest touch confirmed (KEPT told, no FAILED since), less than
 * a TTL ago (counted from when its round began, by our clock)?  So a
 * connection gone silent does not leave the node reported kept past its
 * TTL, even before FAILED is told.  Never a round trip.  0 for NULL.
 */
int zkrc_ttl_node_is_kept(zkrc_ttl_node *n);

/**
 * Replace the node's data: kept for every later creation, and written to
 * the node at once, without waiting (a touch round starts now, or after
 * the one in flight).  KEPT is not told again for it; a failure is told
 * as FAILED.
 * @return ZKRC_OK; ZKRC_ETOOBIG (the create with this data would not pass
 *         the size limit: nothing sent, the data kept is the previous
 *         one); ZKRC_EINVAL (NULL @p n, NULL @p data with @p len > 0).
 * Threading: any thread, its own event callback included.
 */
int zkrc_ttl_node_set_data(zkrc_ttl_node *n, const void *data, size_t len);

/** The node's path (owned by @p n). */
const char *zkrc_ttl_node_path(zkrc_ttl_node *n);

/**
 * Stop touching the node and free @p n.  Nothing is deleted (as with
 * Curator's close): the node goes a TTL after the last touch, unless
 * another keeper touches it.  Never waits for the network; a request in
 * flight is answered in the background.  After it returns no event of
 * @p n runs; it waits only for an event callback of @p n running on
 * another thread (from @p n's own callback it does not wait).  Works
 * whatever the session's state (before or after zkrc_session_close()).
 * NULL is ignored.  Do not use @p n afterwards.
 * Threading: any thread, including @p n's own event callback.
 */
void zkrc_ttl_node_free(zkrc_ttl_node *n);

/**
 * Free @p n without blocking: as zkrc_ttl_node_free(), and then @p done
 * runs with @p arg on the session's executor once the request in flight,
 * if any, has been answered, after the last event of @p n.  Events
 * queued before this call are still told, none after @p done.
 * @return ZKRC_OK (@p done will run); ZKRC_EINVAL (NULL @p n or @p done;
 *         nothing changes).
 * Threading: any thread, while the session's executor is alive.  Call it
 * once, instead of zkrc_ttl_node_free().
 */
int zkrc_ttl_node_free_async(zkrc_ttl_node *n, zkrc_callback_fn done,
                             void *arg);

/**
 * Create one TTL node, once, and wait for the answer, at most
 * @p timeout_ms (ZKRC_WAIT_FOREVER, ZKRC_NO_WAIT or > 0): @p path with
 * @p len bytes of @p data (NULL: none), a persistent node the servers
 * delete once it has no children and was not written for @p ttl_ms.
 * With @p sequential non-zero it is a sequential node (ZooKeeper's
 * PERSISTENT_SEQUENTIAL_WITH_TTL: a 10-digit counter is appended to
 * @p path).  Its parent must exist.  When @p created is not NULL,
 * *@p created is the created path (free() it), NULL on failure.
 * @return ZKRC_OK; ZKRC_ENOTSUP (the servers refuse TTL nodes, zk_error
 *         ZUNIMPLEMENTED); ZKRC_ENODEEXISTS; ZKRC_ENONODE (no parent);
 *         ZKRC_ENOAUTH; ZKRC_ETIMEDOUT or ZKRC_ECONNLOSS (it may or may
 *         not have been created); ZKRC_ECLOSED; ZKRC_ETOOBIG (nothing
 *         sent); ZKRC_EINVAL (NULL @p s, invalid path, @p ttl_ms not
 *         within 1 to ZKRC_TTL_MAX_MS, NULL @p data with @p len > 0, a bad
 *         timeout: nothing sent).  zkrc_last_zk_error() gives ZooKeeper's
 *         code.
 * Threading: any thread but the session's executor's.
 */
int zkrc_ttl_create(zkrc_session *s, const char *path, const void *data,
                    size_t len, int64_t ttl_ms, int sequential, char **created,
                    int timeout_ms);

#ifdef __cplusplus
}
#endif
#endif /* ZKRECIPES_TTLNODE_H */
