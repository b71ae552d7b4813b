/*
 * zkrecipes/ephemeral.h - an ephemeral node that the library keeps
 * registered: created again after its session expired or after someone
 * deleted it (Curator's PersistentNode in EPHEMERAL mode, which its
 * GroupMember and service discovery use).
 *
 * The node lives at a fixed path with data of yours; missing parents are
 * created as containers (as Curator does).  While the session is alive the
 * node is there; when the session expires the servers delete it, and the
 * library creates it again on the next session, with the latest data set.
 * If another session holds an ephemeral node at that path (a previous run
 * whose session has not expired yet), the library waits for its deletion
 * and then creates its own.
 *
 * Registered means verified: the node is reported REGISTERED only once the
 * servers have created it (or confirmed it is ours) and the session's lease
 * (zkrecipes/session.h) is running, and LOST as soon as the lease runs out,
 * before the servers can expire the session and delete the node: an
 * application that must not act unregistered (a member that owns work by
 * being in a group) stops then.
 *
 * Events run on the session's executor, in order, never with a zkrecipes
 * mutex held.
 *
 * A write that fails with ZKRC_ETIMEDOUT or ZKRC_ECONNLOSS (also while the
 * session is reopening) may or may not have been applied; ZKRC_ECLOSED
 * comes only from a closed session or object (zkrecipes/error.h).
 */
#ifndef ZKRECIPES_EPHEMERAL_H
#define ZKRECIPES_EPHEMERAL_H

#include <stddef.h>

#include <zkrecipes/session.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zkrc_ephemeral zkrc_ephemeral;

/** What happened (zkrc_ephemeral_event.type). */
typedef enum zkrc_ephemeral_event_type {
  /** The node exists, created (again) by this session. */
  ZKRC_EPHEMERAL_REGISTERED = 1,
  /** It may be gone or about to go; the reason says why: the lease ran out
   *  (ZKRC_ESESSIONLOST, zk_error ZOK), the session expired
   *  (ZKRC_ESESSIONEXPIRED, ZSESSIONEXPIRED), the node was deleted
   *  (ZKRC_ENONODE, ZNONODE), or another session holds the path
   *  (ZKRC_ENODEEXISTS, ZNODEEXISTS).  The library keeps trying to
   *  register it again. */
  ZKRC_EPHEMERAL_LOST,
  /** The session was closed for good (ZKRC_ECLOSED, or the reason of the
   *  loss that closed a session without reopen) or its credentials were
   *  refused (ZKRC_EAUTHFAILED, ZAUTHFAILED): no more events. */
  ZKRC_EPHEMERAL_CLOSED
} zkrc_ephemeral_event_type;

/** "registered", "lost", "closed" ("unknown" for another value).  Static
 *  string; any thread. */
const char *zkrc_ephemeral_event_name(zkrc_ephemeral_event_type type);

/** An event, valid during the call. */
typedef struct zkrc_ephemeral_event {
  /** What happened. */
  zkrc_ephemeral_event_type type;
  /** LOST and CLOSED: why, as a zkrc error (above); ZKRC_OK for
   *  REGISTERED. */
  int reason;
  /** ZooKeeper's code behind @c reason; ZOK when there is none (a lease
   *  that ran out, a close). */
  int zk_error;
} zkrc_ephemeral_event;

/** Told each event, on the session's executor, one at a time, in order,
 *  never with a zkrecipes mutex held.  It may call any zkrc_ephemeral
 *  function that does not wait (zkrc_ephemeral_is_registered(),
 *  zkrc_ephemeral_free() or zkrc_ephemeral_free_async() of @p e). */
typedef void (*zkrc_ephemeral_event_fn)(zkrc_ephemeral *e,
                                        const zkrc_ephemeral_event *ev,
                                        void *arg);

/** Options; initialize with zkrc_ephemeral_options_init(). */
typedef struct zkrc_ephemeral_options {
  /** Set by zkrc_ephemeral_options_init() (see zkrc_lock_options.size). */
  size_t size;
  /** ACL of the node and of the parents it creates.  NULL (default):
   *  ZOO_OPEN_ACL_UNSAFE.  Copied. */
  const struct ACL_vector *acl;
  /** Told each REGISTERED / LOST / CLOSED.  NULL: none. */
  zkrc_ephemeral_event_fn on_event;
  void *event_arg;
} zkrc_ephemeral_options;

/** Zero @p opts and set its size (NULL is ignored).  Fills the first @p
 *  size bytes of @p opts, the size of the struct as your program was
 *  compiled with it, and sets its size field to it: the fields a program
 *  built against an older, shorter zkrc_ephemeral_options lacks are never
 *  written.  Call zkrc_ephemeral_options_init(), which passes it. */
void zkrc_ephemeral_options_init_sized(zkrc_ephemeral_options *opts,
                                       size_t size);

/** Zero @p opts and set its size (NULL is ignored).  Inline: it passes
 *  sizeof *@p opts as this header defines it to
 *  zkrc_ephemeral_options_init_sized(), so a program keeps working with a
 *  later library whose struct has grown (and a later program, whose
 *  struct is longer, with this library: the fields it does not know are
 *  ignored). */
static inline void zkrc_ephemeral_options_init(zkrc_ephemeral_options *opts) {
  zkrc_ephemeral_options_init_sized(opts, sizeof *opts);
}

/**
 * Start keeping the ephemeral node @p path with @p len bytes of @p data
 * (copied; NULL for a node without data).  Returns at once; the create is
 * under way (zkrc_ephemeral_wait_registered() waits for it).
 * @return ZKRC_OK (*@p out is yours: zkrc_ephemeral_free());
 *         ZKRC_EINVAL (NULL @p out or @p s, invalid path, options not
 *         initialized, NULL @p data with @p len > 0); ZKRC_ETOOBIG (the
 *         create, which every new session sends again, would not pass
 *         ZooKeeper's size limit: its path, data and ACL with their
 *         envelope over 1 MiB less one byte, or @p len over 1,048,487
 *         bytes, the most a getData reply can carry back to a Java
 *         client; or the session's ephemeral nodes would take more than
 *         768 KiB of paths, the most the library lets the transaction that
 *         deletes them when it closes list (ZOOKEEPER-4306: past what a
 *         follower reads of a proposal, twice jute.maxbuffer by default,
 *         it takes a member down; lock nodes past half of that go to a
 *         session the library opens beside it instead,
 *         zkrc_lock_acquire_async()); README, "Sizes": nothing sent, no
 *         object made);
 *         ZKRC_ECLOSED.
 * Threading: any thread.
 */
int zkrc_ephemeral_new(zkrc_ephemeral **out, zkrc_session *s, const char *path,
                       const void *data, size_t len,
                       const zkrc_ephemeral_options *opts);

/**
 * Wait until the node is registered (now, by the lease), at most
 * @p timeout_ms (ZKRC_WAIT_FOREVER or >= 0).
 * @return ZKRC_OK; ZKRC_ETIMEDOUT; ZKRC_ENOAUTH (an ACL forbids the
 *         create: the library stops trying); ZKRC_ECLOSED; ZKRC_EINVAL.
 * Not from the executor's thread.
 */
int zkrc_ephemeral_wait_registered(zkrc_ephemeral *e, int timeout_ms);

/**
 * Is the node registered now: created by this session, not known to be
 * deleted, and the session's lease running?  Never a round trip.
 */
int zkrc_ephemeral_is_registered(zkrc_ephemeral *e);

/**
 * Replace the node's data (kept for every later re-creation too), at most
 * @p timeout_ms.
 * @return ZKRC_OK (written, or kept for the next creation when the node is
 *         not registered now); ZKRC_ETIMEDOUT or ZKRC_ECONNLOSS (kept; the
 *         write may or may not have reached the node: it is written again
 *         when the node is created again); ZKRC_ETOOBIG (the create with
 *         this data would not pass the size limit, as in
 *         zkrc_ephemeral_new(): nothing sent, the data kept is the
 *         previous one); ZKRC_EINVAL.
 */
int zkrc_ephemeral_set_data(zkrc_ephemeral *e, const void *data, size_t len,
                            int timeout_ms);

/** The node's path (owned by @p e). */
const char *zkrc_ephemeral_path(zkrc_ephemeral *e);

/**
 * Stop keeping the node and free @p e.  Never waits for the network: the
 * node's delete is sent and goes on in the background; when it cannot be
 * confirmed (the connection is down, or its reply is lost) the session
 * deletes the node once it is connected again, unless its ZooKeeper
 * session is over first (closed or expired: the node goes with it).  A
 * create still in flight is deleted likewise once its reply comes.  After
 * it returns no event of @p e runs; it waits only for an event callback of
 * @p e running on another thread (from @p e's own callback it does not
 * wait).  Events still queued are dropped (zkrc_ephemeral_free_async()
 * tells them).  Works whatever the session's state: open, suspended or
 * closed (before or after zkrc_session_close()).  NULL is ignored.  Do not
 * use @p e afterwards.
 * Threading: any thread, including @p e's own event callback.
 */
void zkrc_ephemeral_free(zkrc_ephemeral *e);

/**
 * Free @p e without blocking: as zkrc_ephemeral_free() (the node is no
 * longer kept, its delete sent without waiting), and then @p done runs
 * with @p arg on the session's executor, once the node's delete is
 * confirmed or handed to the session to delete when connected again (and
 * a create that was in flight has been answered), after the last event of
 * @p e.  Events queued before this call are still told, none after
 * @p done.  From this call on, use @p e only in the callbacks still to
 * come; after @p done returns it is gone.
 * @return ZKRC_OK (@p done will run); ZKRC_EINVAL (NULL @p e or @p done;
 *         nothing changes).
 * Threading: any thread, including the executor's and @p e's own event
 * callback, while the session's executor is alive.  Call it once, instead
 * of zkrc_ephemeral_free().
 */
int zkrc_ephemeral_free_async(zkrc_ephemeral *e, zkrc_callback_fn done,
                              void *arg);

#ifdef __cplusplus
}
#endif
#endif /* ZKRECIPES_EPHEMERAL_H */
