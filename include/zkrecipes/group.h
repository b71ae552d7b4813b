/*
 * zkrecipes/group.h - group membership: members announce themselves under
 * a group path, and every member (or a mere watcher) sees who is in.
 *
 * Wire-compatible with Apache Curator's GroupMember
 * (org.apache.curator.framework.recipes.nodes.GroupMember): a member is the
 * ephemeral node PATH/ID holding its data, kept by a zkrc_ephemeral
 * (zkrecipes/ephemeral.h: created again after its session expired, with
 * the latest data; missing parents created as containers); the view is a
 * children cache of PATH (zkrecipes/cache.h): one member per child, its id
 * the child's name and its data the child's data.  A Curator member is in
 * our view with its payload, and ours in Curator's getCurrentMembers().
 * zkrc_group_options.format chooses kazoo's Party or ShallowParty nodes
 * instead (zkrc_group_format): the same object, events and view, the
 * member's id mapped from kazoo's identifier.
 *
 * One difference from Curator: Curator's getCurrentMembers() always lists
 * the caller itself, even before its node exists.  zkrc_group_members()
 * lists what the servers hold (as last read): this member appears once its
 * node is created, and zkrc_group_is_registered() says whether it is in
 * now (verified by the session's lease).
 *
 * Events (zkrc_group_event) run on the session's executor, one at a time
 * and in order, never with a zkrecipes mutex held: JOINED / UPDATED / LEFT
 * for changes of the view (applying them in order to an empty map gives
 * the view), INITIALIZED once the first complete view is read, and, for a
 * member, REGISTERED / LOST / CLOSED about its own node: a member whose
 * registration is lost is told LOST no later than its lease deadline, and
 * REGISTERED when its node is back.
 *
 * A write that fails with ZKRC_ETIMEDOUT or ZKRC_ECONNLOSS (also while the
 * session is reopening) may or may not have been applied; ZKRC_ECLOSED
 * comes only from a closed session or object (zkrecipes/error.h).
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef ZKRECIPES_GROUP_H
#define ZKRECIPES_GROUP_H

#include <stddef.h>
#include <stdint.h>

#include <zkrecipes/session.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zkrc_group zkrc_group;

/** Longest member id, in bytes (a node name; the whole path PATH/ID must
 *  also pass zkrc_path_validate()). */
#define ZKRC_GROUP_ID_MAX 255

/** What a group reports. */
typedef enum zkrc_group_event_type {
  /** A member entered the view (its id and data). */
  ZKRC_GROUP_JOINED = 1,
  /** A member's data changed, or its node was deleted and created again. */
  ZKRC_GROUP_UPDATED,
  /** A member left the view (the last data reported for it). */
  ZKRC_GROUP_LEFT,
  /** The first complete view has been read (once). */
  ZKRC_GROUP_INITIALIZED,
  /** This member's node exists, created by this session (a member only,
   *  zkrc_group_options.id set). */
  ZKRC_GROUP_REGISTERED,
  /** This member may be out of the group; the reason says why, as
   *  ZKRC_EPHEMERAL_LOST does (zkrecipes/ephemeral.h): the lease ran out
   *  (ZKRC_ESESSIONLOST), the session expired (ZKRC_ESESSIONEXPIRED), the
   *  node was deleted (ZKRC_ENONODE), or another session holds the id
   *  (ZKRC_ENODEEXISTS); the library keeps trying to register it again (a
   *  member only). */
  ZKRC_GROUP_LOST,
  /** The session was closed for good (reason ZKRC_ECLOSED, or what ended
   *  a session that closed itself): no more events. */
  ZKRC_GROUP_CLOSED
} zkrc_group_event_type;

/** "joined", "updated", "left", "initialized", "registered", "lost",
 *  "closed" ("unknown" for another value).  Static string; any thread. */
const char *zkrc_group_event_name(zkrc_group_event_type type);

/** One member of a group. */
typedef struct zkrc_group_member {
  char *id;         /**< the node's name */
  char *data;       /**< its data, NUL-terminated for convenience (the NUL is
                   not counted in len); NULL when the node has no data */
  size_t len;       /**< bytes of data */
  int64_t czxid;    /**< the zxid that created its node */
  int64_t ctime_ms; /**< when its node was created (servers' clock) */
} zkrc_group_member;

/** An event; valid only during the callback. */
typedef struct zkrc_group_event {
  /** What happened. */
  zkrc_group_event_type type;
  /** LOST and CLOSED: why, as a zkrc error (above); ZKRC_OK otherwise. */
  int reason;
  /** ZooKeeper's code behind @c reason; ZOK when there is none (a lease
   *  that ran out, a close). */
  int zk_error;
  /** JOINED, UPDATED: the member now; LEFT: as last reported; NULL for
   *  the other events. */
  const zkrc_group_member *member;
} zkrc_group_event;

/**
 * A group's event callback.  Runs on the session's executor, one event at
 * a time and in order, never with a zkrecipes mutex held; it may call any
 * zkrc_group function that does not wait (zkrc_group_members(),
 * zkrc_group_is_registered(), zkrc_group_free() or zkrc_group_free_async()
 * of this group).
 */
typedef void (*zkrc_group_event_fn)(zkrc_group *g, const zkrc_group_event *ev,
                                    void *arg);

/** How a group's members are kept in its nodes (zkrc_group_options.format). */
typedef enum zkrc_group_format {
  /** Curator's GroupMember (the default): PATH/ID, holding the member's
   *  data. */
  ZKRC_GROUP_CURATOR = 1,
  /** kazoo's Party: PATH/<32 hex digits of a random uuid>__party__,
   *  holding the member's id (kazoo's identifier) as its data.  A member's
   *  id is its node's data, and its data is that data too; children
   *  without "__party__" in their name are not members (kazoo's filter).
   *  Two members may have the same id. */
  ZKRC_GROUP_KAZOO_PARTY,
  /** kazoo's ShallowParty: PATH/<32 hex digits of a random uuid>-<ID>,
   *  holding the id as its data too, as kazoo 2.8 writes it.  A member's
   *  id is its node's name after the first '-' (the whole name when there
   *  is none, as kazoo reads it); its data is the node's. */
  ZKRC_GROUP_KAZOO_SHALLOW_PARTY
} zkrc_group_format;

/** Options; initialize with zkrc_group_options_init(). */
typedef struct zkrc_group_options {
  /** Set by zkrc_group_options_init() (see zkrc_lock_options.size). */
  size_t size;
  /** ACL of this member's node and of the parents it creates.  NULL
   *  (default): ZOO_OPEN_ACL_UNSAFE.  Copied. */
  const struct ACL_vector *acl;
  /** Told about every event (above), with @c event_arg.  NULL: none (read
   *  the view when you need it). */
  zkrc_group_event_fn on_event;
  void *event_arg;
  /** This member's id, unique in the group: 1 to ZKRC_GROUP_ID_MAX bytes,
   *  no '/', not "." or "..", and PATH/ID a valid path.  Copied.  NULL
   *  (default): watch the group without joining it (no node of ours; the
   *  view and its events JOINED, UPDATED, LEFT, INITIALIZED, CLOSED). */
  const char *id;
  /** This member's data, @c data_len bytes (copied); NULL and 0 (default)
   *  for a node without data.  Only with an id. */
  const void *data;
  size_t data_len;
  /** The nodes' format (above); default ZKRC_GROUP_CURATOR.  With the
   *  kazoo formats the member's node has no data of the application's:
   *  @c data must be NULL, and zkrc_group_set_data() is ZKRC_ENOTSUP. */
  zkrc_group_format format;
} zkrc_group_options;

/** Zero @p opts and set its size (NULL is ignored).  Any thread.  Fills
 *  the first @p size bytes of @p opts, the size of the struct as your
 *  program was compiled with it, and sets its size field to it: the
 *  fields a program built against an older, shorter zkrc_group_options
 *  lacks are never written.  Call zkrc_group_options_init(), which passes
 *  it. */
void zkrc_group_options_init_sized(zkrc_group_options *opts, size_t size);

/** Zero @p opts and set its size (NULL is ignored).  Any thread.  Inline:
 *  it passes sizeof *@p opts as this header defines it to
 *  zkrc_group_options_init_sized(), so a program keeps working with a
 *  later library whose struct has grown (and a later program, whose
 *  struct is longer, with this library: the fields it does not know are
 *  ignored). */
static inline void zkrc_group_options_init(zkrc_group_options *opts) {
  zkrc_group_options_init_sized(opts, sizeof *opts);
}

/**
 * Take part in the group at @p path: with opts->id, join it as that
 * member, with opts->data (Curator's GroupMember); without, only watch it.
 * Either way, start reading the group's view.  Returns at once; the create
 * and the first read are under way (zkrc_group_wait_registered(),
 * zkrc_group_wait_initialized()): nothing waits for the network.  An id
 * held by another live session (a previous run of this member whose
 * session has not expired yet) is registered once that node is gone.  The
 * group need not exist yet.  (One constructor for both, as the contract
 * asks, where 0.1 had zkrc_group_join() and zkrc_group_watch().)
 * @param path  the group, as zkrc_path_validate() accepts.
 * @param opts  NULL for the defaults (a watcher); copied, with its id and
 *              data.
 * @return ZKRC_OK (*@p out is yours: zkrc_group_free()); ZKRC_EINVAL (NULL
 *         @p out or @p s, an invalid path or id, NULL data with data_len
 *         > 0, data without an id, options not initialized, an unknown
 *         format, data with a kazoo format: nothing is sent); ZKRC_ETOOBIG (the member's node, PATH/ID with its data,
 *         would not pass ZooKeeper's size limit, as zkrc_ephemeral_new()
 *         says: nothing is sent); ZKRC_ECLOSED (the session is closed);
 *         ZKRC_ENOMEM.
 * Threading: any thread.
 */
int zkrc_group_new(zkrc_group **out, zkrc_session *s, const char *path,
                   const zkrc_group_options *opts);

/**
 * Wait until the first complete view has been read, at most @p timeout_ms
 * (ZKRC_WAIT_FOREVER or >= 0).
 * @return ZKRC_OK; ZKRC_ETIMEDOUT; ZKRC_ECLOSED; ZKRC_EINVAL (NULL @p g).
 * Not from the executor's thread.
 */
int zkrc_group_wait_initialized(zkrc_group *g, int timeout_ms);

/**
 * Wait until this member is registered (its node created by this session
 * and the session's lease running), at most @p timeout_ms.
 * @return ZKRC_OK; ZKRC_ETIMEDOUT; ZKRC_ENOAUTH (an ACL forbids the
 *         create); ZKRC_ECLOSED; ZKRC_EINVAL (NULL @p g, or a watcher:
 *         a group made without an id).
 * Not from the executor's thread.
 */
int zkrc_group_wait_registered(zkrc_group *g, int timeout_ms);

/**
 * Is this member registered now (see zkrc_group_wait_registered())?
 * 0 for a watcher and for NULL.  Never a round trip; any thread.
 */
int zkrc_group_is_registered(zkrc_group *g);

/**
 * Replace this member's data (kept for every later re-creation of its
 * node too), at most @p timeout_ms.  Other members see an UPDATED event.
 * @return ZKRC_OK (written, or kept for the next creation when the node is
 *         not registered now); ZKRC_ETIMEDOUT or ZKRC_ECONNLOSS (kept: the
 *         write may or may not have reached the node; it is written again
 *         when the node is created again); ZKRC_ETOOBIG (as in
 *         zkrc_group_new(): nothing sent, nothing changed); ZKRC_EINVAL
 *         (NULL @p g, a watcher, NULL @p data with @p len > 0: nothing
 *         changed); ZKRC_ENOTSUP (a kazoo format: the node's data is
 *         its id, or none).
 * Not from the executor's thread.
 */
int zkrc_group_set_data(zkrc_group *g, const void *data, size_t len,
                        int timeout_ms);

/**
 * The group's view now, as last read from the servers (never a round
 * trip), sorted by id (byte order).
 * @param members  receives an array of @p *count members (a NULL array
 *                 when there are none): free with
 *                 zkrc_group_members_free().
 * @return ZKRC_OK; ZKRC_EINVAL (a NULL argument); ZKRC_ENOMEM.
 * Threading: any thread, listeners included.
 */
int zkrc_group_members(zkrc_group *g, zkrc_group_member **members,
                       size_t *count);

/** Free the @p count members of @p members and the array (NULL ignored). */
void zkrc_group_members_free(zkrc_group_member *members, size_t count);

/** This member's id (owned by @p g); NULL for a watcher. */
const char *zkrc_group_id(zkrc_group *g);

/** The group's path (owned by @p g). */
const char *zkrc_group_path(zkrc_group *g);

/**
 * Leave the group and free @p g: stop reading the view and delete this
 * member's node, without waiting for the network (the delete goes on in
 * the background; when it cannot be confirmed, the connection down or its
 * reply lost, the session deletes the node once it is connected again,
 * unless its ZooKeeper session is over first: the node goes with it).
 * After it returns no event of @p g runs; it waits only for an event
 * callback of @p g running on another thread (from @p g's own callback it
 * does not wait).  Events still queued are dropped
 * (zkrc_group_free_async() tells them).  Works whatever the session's
 * state: open, suspended or closed (before or after zkrc_session_close()).
 * NULL is ignored.  Do not use @p g afterwards.
 * Threading: any thread, including @p g's own event callback.
 */
void zkrc_group_free(zkrc_group *g);

/**
 * Free @p g without blocking: as zkrc_group_free() (the view stops, this
 * member's node is deleted in the background), and then @p done runs with
 * @p arg on the session's executor, once the member's node is deleted or
 * handed to the session to delete when connected again, after the last
 * event of @p g.  Events queued before this call are still told (they may
 * read the view), none after @p done.  From this call on, use @p g only in
 * the callbacks still to come; after @p done returns it is gone.
 * @return ZKRC_OK (@p done will run); ZKRC_EINVAL (NULL @p g or @p done;
 *         nothing changes).
 * Threading: any thread, including the executor's and @p g's own event
 * callback, while the session's executor is alive.  Call it once, instead
 * of zkrc_group_free().
 */
int zkrc_group_free_async(zkrc_group *g, zkrc_callback_fn done, void *arg);

#ifdef __cplusplus
}
#endif
#endif /* ZKRECIPES_GROUP_H */
