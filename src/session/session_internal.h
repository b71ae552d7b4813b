/*
 * What recipes need from a session beyond the public API: pinned handles for
 * asynchronous calls, session observers, the watch registry, the orphan-node
 * reaper and the executor.
 *
 * Threads.  The ZooKeeper client calls completions and watchers on its
 * completion thread.  The session runs a worker thread of its own for timers,
 * for retiring dead handles and opening new ones, and for telling observers
 * about session events (one thread, so each observer sees events in order).
 * User callbacks go through the executor.  No zoo_* call is ever made with a
 * session mutex held, and none of them blocks (only zookeeper_close() does,
 * and only the worker or a closing user thread calls it).
 */
#ifndef ZKRC_SESSION_INTERNAL_H
#define ZKRC_SESSION_INTERNAL_H

#include <stdint.h>

#include <glib.h>
#include <zookeeper/zookeeper.h>

#include "core/dirtable.h"
#include "zkrecipes/session.h"

/* One zhandle_t, from zookeeper_init() to zookeeper_close().  A session object
 * goes through one conn per ZooKeeper session (a new one after expiry). */
typedef struct zkrc_conn {
  zhandle_t *zh;
  zkrc_session *session;
  /* 1 for the session object's first ZooKeeper session, 2 after the first
   * expiry, and so on.  Nodes remember the generation that created them. */
  uint64_t generation;
  /* The ZooKeeper session id once established, else 0. */
  int64_t session_id;
  /* Threads inside a zoo_* call on zh right now (guarded by the session
   * mutex); zookeeper_close() waits for them. */
  int users;
  gboolean retired;
  /* For adopted handles: the application's watcher, called after ours, and
   * its context (set and read under the session mutex). */
  watcher_fn app_watcher;
  void *app_context;
} zkrc_conn;

/* Count a request sent to the servers on @p s when @p rc (the zoo_a*
 * call's result) says it was queued; returns @p rc.  For the statistics
 * (zkrc_session_get_stats, session_stats.c); called by the seam,
 * zk_call.c, only. */
int zkrc__sent(zkrc_session *s, int rc);

/* The id of @p s's current ZooKeeper session, or of its last one when it
 * has none now (a stable label while it reconnects or after its close):
 * for the statistics' exposition (prometheus.c). */
int64_t zkrc__session_label_id(zkrc_session *s);

/* Reference counting: recipes keep the session's memory alive. */
zkrc_session *zkrc__session_ref(zkrc_session *s);
void zkrc__session_unref(zkrc_session *s);
/* The reference a recipe object (lock, election) holds for its lifetime;
 * zkrc_session_close() waits for the others, which are transient. */
zkrc_session *zkrc__session_ref_recipe(zkrc_session *s);
void zkrc__session_unref_recipe(zkrc_session *s);

/* Pin the current handle for a zoo_* call.  NULL when there is none (closed,
 * or between an expiry and the next session).  Every non-NULL result must be
 * given back with zkrc__conn_unuse() right after the zoo_* call returns. */
zkrc_conn *zkrc__conn_use(zkrc_session *s);
void zkrc__conn_unuse(zkrc_conn *c);

/* Is the session connected right now with ZooKeeper session generation
 * @p generation?  (0 matches any generation.) */
gboolean zkrc__session_connected(zkrc_session *s, uint64_t generation);

/* zkrc__conn_use() when zkrc__session_connected(@p generation), else NULL:
 * both asked under one acquisition of the session's mutex, so the handle is
 * the one that was connected. */
zkrc_conn *zkrc__conn_use_connected(zkrc_session *s, uint64_t generation);

/* The directories the session has recently seen exist (dirtable.h): lives
 * as long as the session. */
zkrc__dirtable *zkrc__session_dirs(zkrc_session *s);

/* Contenders of one session past the gate and not yet past their first
 * look at the queue, at most (src/queue/queue_gate.h says why). */
#define ZKRC__GATE_SLOTS 256

/* The session's gate on contenders entering their queues
 * (src/queue/queue_gate.c). */
typedef struct zkrc__gate {
  GMutex mu;
  int limit;        /* slots; 0: no bound (tests' control only) */
  int busy;         /* slots taken */
  gboolean pumping; /* a thread is letting waiting contenders in */
  /* The line of waiting contenders, oldest first, linked through their
   * gate_prev/gate_next; each holds a reference of the line's. */
  struct zkrc__contender *head, *tail;
} zkrc__gate;

/* What the contender queue (src/queue/) keeps in each session.  The
 * session makes it (limit ZKRC__GATE_SLOTS, both lines empty) and clears
 * it when freed, when both lines are empty (each contender in them holds a
 * reference on the session); only the queue reads or writes it, under the
 * mutexes below, in the lock order of session_private.h. */
typedef struct zkrc__session_queue {
  /* Contenders starting: how many at once, the others in line
   * (queue_gate.c). */
  zkrc__gate gate;
  /* Contenders started and not ended (queue_observe.c), oldest first,
   * linked through their observed_prev/observed_next, each with a
   * reference of the list's; one observer (contenders_observer, 0 until
   * the first) tells them the session's events.  Under contenders_mu. */
  GMutex contenders_mu;
  struct zkrc__contender *contenders, *contenders_tail;
  unsigned long contenders_observer;
} zkrc__session_queue;

/* The queue's part of @p s: lives as long as the session. */
zkrc__session_queue *zkrc__session_queue_of(zkrc_session *s);

/* What a contender asks of the session to decide, all true at one instant
 * (one acquisition of the session's mutex): see zkrc__session_look. */
typedef struct zkrc__session_view {
  uint64_t generation; /* of the current ZooKeeper session; 0: none */
  int64_t session_id;  /* its id (zkrc_session_id); 0: none */
  /* Microseconds left of the lease of the generation asked about
   * (zkrc__session_lease_left). */
  int64_t lease_left;
} zkrc__session_view;

/* One look at the session, about ZooKeeper session generation
 * @p generation (for lease_left). */
zkrc__session_view zkrc__session_look(zkrc_session *s, uint64_t generation);

/* Microseconds left of the lease (zkrc_session_lease_remaining) of ZooKeeper
 * session generation @p generation: 0 when it has none, it ran out (also
 * while the process was frozen, before anyone noticed), or @p generation is
 * not the current one.  A recipe reports a hold only while this is > 0. */
int64_t zkrc__session_lease_left(zkrc_session *s, uint64_t generation);

/* Something comes to depend on the session's lease (@p want TRUE: a hold,
 * a leadership, a kept node) or no longer does (FALSE); every TRUE is
 * matched by one FALSE.  While nothing does, the lease rests: no renewal
 * reaches the leader, and its end is not a loss (zkrc_lease_renewal).
 * The first dependent wakes it: a renewal goes at once, and its answer
 * (ZKRC__SESSION_EVENT_LEASED when the lease had run out meanwhile)
 * re-establishes it.  Any thread; takes s->o.mu (after any recipe's or
 * contender's mutex), sends nothing itself. */
void zkrc__session_lease_want(zkrc_session *s, gboolean want);

/* TRUE once zkrc_session_close() was called, or once the session is dead
 * for good (expired or lost with no reopening): recipes then fail with
 * ZKRC_ECLOSED instead of waiting for a connection that will not come. */
gboolean zkrc__session_closed(zkrc_session *s);

/* The length of the chroot the ZooKeeper client puts before every path
 * of @p s (the "/path" after its hosts; 0 for none, and for an adopted
 * handle, whose chroot the session does not know).  Any thread. */
size_t zkrc__session_chroot_len(zkrc_session *s);

/* The most bytes the paths of one session's ephemeral nodes may take in
 * the transaction that deletes them when it closes or expires (4 and the
 * path with its chroot each): three quarters of jute.maxbuffer's default,
 * which that transaction must not pass (ZOOKEEPER-4306), the rest left for
 * its envelope and nodes made outside the library (session_place.c). */
#define ZKRC__EPHEMERAL_BUDGET (768 * 1024)

/* What an ephemeral node of @p path_len bytes (without the chroot) costs
 * in that transaction. */
size_t zkrc__ephemeral_cost(zkrc_session *s, size_t path_len);
/* Take @p bytes of @p s's budget: FALSE, nothing taken, when they do not
 * fit.  Atomic; any thread, any lock held. */
gboolean zkrc__session_reserve(zkrc_session *s, size_t bytes);
/* Give back what zkrc__session_reserve() or zkrc__session_place() took. */
void zkrc__session_release(zkrc_session *s, size_t bytes);
/* The session that will hold a new contender's node of @p bytes, those
 * taken of its budget: @p s while its nodes take at most half the budget
 * (the rest is for its kept ephemeral nodes), else the first session
 * opened beside it with room, else a new one (the same hosts, options and
 * credentials; kept until @p s closes); *@p beside says which.  Returned
 * with a reference: a plain one on @p s, a recipe's on a session beside it
 * (zkrc__session_unref_recipe), so that closing it does not wait for it.
 * Only when @p s is closing or closed, or no session can be opened (an
 * adopted handle), is @p s returned past its budget (with a log line).
 * Never blocks on the servers (a new session connects in the
 * background; its names are resolved here, as zkrc_session_new() does);
 * may be called with a recipe's mutex held, no session's.  Give back with
 * zkrc__session_release(). */
zkrc_session *zkrc__session_place(zkrc_session *s, size_t bytes,
                                  gboolean *beside);

/* ZooKeeper's code @p zk_rc for a request of @p s, as its caller should
 * see it.  A handle closed under the request (ZCLOSING), or one that had
 * expired and is not yet replaced (ZINVALIDSTATE), is the session turning
 * over to a new handle: ZCONNECTIONLOSS, a transient failure (the request
 * may or may not have been applied), unless the session itself is closed
 * (zkrc__session_closed): ZCLOSING then.  Other codes are returned as
 * they are.  Takes the session's mutex. */
int zkrc__session_reply_rc(zkrc_session *s, int zk_rc);

/* Session observers: internal listeners (recipes), called on the session's
 * worker thread, without session locks held, with the generation of the
 * ZooKeeper session the event is about.  They must not block. */
typedef void (*zkrc__observer_fn)(zkrc_session *s, zkrc_session_event_type ev,
                                  uint64_t generation, void *arg);
/* An event for observers only: the lease of @p generation was not yet
 * established when it connected (a very slow first connect, an adopted
 * handle) and now is.  A contender that found itself at the front before
 * that looks again. */
#define ZKRC__SESSION_EVENT_LEASED ((zkrc_session_event_type)100)
/* The deadline of a request made with @p timeout_ms, a valid timeout
 * argument.  ZKRC_NO_WAIT is "look once, do not wait": ZKRC_ECLOSED for
 * a closed session, ZKRC_ECONNLOSS at once when it is not connected now,
 * else one round trip bounded by the session timeout.  Returns ZKRC_OK
 * and sets *@p deadline, or that error (not remembered). */
int zkrc__request_deadline(zkrc_session *s, int timeout_ms, int64_t *deadline);
/* Why a session event of @p type of @p s happened, as the zkrc error and
 * ZooKeeper's code its listeners are told (zkrc_session_event; CLOSED:
 * ZKRC_ECLOSED, or what ended a session that closed itself), for a
 * recipe's own events about it.  Any thread; takes the session's mutex. */
void zkrc__session_event_reason(zkrc_session *s, zkrc_session_event_type type,
                                int *reason, int *zk_error);
/* Add an observer; returns its id.  Also says in *@p closed (when not
 * NULL), under the same acquisition of the session's mutex, whether the
 * session is closed already (zkrc__session_closed): an observer added
 * before the close hears of it, one added after is told here. */
unsigned long zkrc__session_observe(zkrc_session *s, zkrc__observer_fn fn,
                                    void *arg, gboolean *closed);
/* After this returns the observer is not running and will not run again.
 * So it waits, off the worker, for the worker's round of observers to end:
 * never call it, nor what calls it (zkrc_ephemeral_free and
 * zkrc_ephemeral_free_async, every recipe's free), holding a mutex an
 * observer takes (a recipe's own: the double barrier's deadlock, fixed by
 * giving its node up from a job on the executor). */
void zkrc__session_unobserve(zkrc_session *s, unsigned long id);

/* Run @p fn(@p arg) on the session's executor (user callbacks go here).
 * The session is kept alive until the call has run. */
void zkrc__session_post(zkrc_session *s, zkrc_callback_fn fn, void *arg);

/* The session's executor as an object's (core/object.h) sees it: posting
 * through zkrc__session_post.  The session must outlive the object (every
 * object holds a reference on its session). */
zkrc_executor zkrc__session_executor(zkrc_session *s);

/* Worker: close the handle parked at a lease's lapse (session_conn.c), if
 * any, now (@p data: the session; its close). */
void zkrc__session_close_parked(void *data);
/* Worker (zkrc__session_run_on_worker, from the loss probe): the parked
 * handle's LOST reached the executor; it closes once its allowance has
 * passed. */
void zkrc__session_loss_told(void *data);
gboolean zkrc__session_park_fired(gpointer data);

/* Run @p fn(@p arg) on the session's worker thread (internal work that must
 * not run on ZooKeeper's completion thread, or must be ordered with session
 * events). */
void zkrc__session_run_on_worker(zkrc_session *s, zkrc_callback_fn fn,
                                 void *arg);

/* A one-shot timer on the session's worker: @p fn(@p data) runs once after
 * @p ms unless the returned source is destroyed first (g_source_destroy,
 * from any thread; then g_source_unref).  @p destroy(@p data) runs once
 * either way. */
GSource *zkrc__session_timer(zkrc_session *s, int ms, GSourceFunc fn,
                             void *data, GDestroyNotify destroy);

/* Deadlines on the session's worker, many at once (session_deadline.c):
 * one heap and one timer for all of a session's, instead of a GSource
 * each (100,000 acquisitions asked at once would leave 100,000 timers'
 * holes in the heap).  A deadline's place in the heap is kept in a slot
 * of its owner's (an unsigned, 0 when not armed), read and written only
 * under the heap's mutex: taken after any other of the library's.
 *
 * Arm: @p fire(@p obj) runs once on the worker @p ms from now (with no
 * mutex held), unless disarmed first.  *@p slot must be 0 (not armed).
 * The caller hands @p obj's reference to the deadline: @p fire, or the
 * caller of a disarm that returns TRUE, drops it. */
typedef void (*zkrc__deadline_fn)(void *obj);
void zkrc__session_deadline_arm(zkrc_session *s, int ms, zkrc__deadline_fn fire,
                                void *obj, unsigned *slot);
/* Disarm the deadline of @p slot: TRUE when it was armed (it will not
 * fire: the caller owns the reference it held), FALSE when it was not, or
 * has fired already (its @p fire runs, or ran). */
gboolean zkrc__session_deadline_disarm(zkrc_session *s, unsigned *slot);

/* ---- Watch registry -------------------------------------------------
 * A watcher context given to ZooKeeper cannot be freed until the watch fires,
 * and it never fires if the handle closes first.  So the context is a number
 * that names an entry here; the entry holds a reference on its target and is
 * dropped when the watch fires, when its owner cancels it, or when its
 * handle is retired.  Session events reach every watcher of a handle: they
 * are filtered here and never reach a watch's callback. */
/* @p ctx is the context zkrc__watch_register() returned for this watch, so
 * a target can tell its current watch from a superseded one. */
typedef void (*zkrc__watch_fn)(int type, const char *path, void *target,
                               void *ctx);
typedef struct zkrc__watch_target_ops {
  void (*ref)(void *target);
  void (*unref)(void *target);
} zkrc__watch_target_ops;

/* Register a watch for a call on @p c; returns the context to pass to
 * ZooKeeper along with zkrc__watch_dispatch as the watcher function. */
void *zkrc__watch_register(zkrc_conn *c, zkrc__watch_fn fn, void *target,
                           const zkrc__watch_target_ops *ops);
/* A watch context that stays registered after it fires, for a target that
 * sets many watches with one context (the client then calls it once per
 * event however many reads armed it): dropped only by zkrc__watch_cancel()
 * or with its handle. */
void *zkrc__watch_register_persistent(zkrc_conn *c, zkrc__watch_fn fn,
                                      void *target,
                                      const zkrc__watch_target_ops *ops);
/* Forget a watch (its callback will not run after this returns, unless it
 * is running right now on the completion thread). */
void zkrc__watch_cancel(void *ctx);
/* Forget every watch registered on handle @p generation of @p s (called
 * once that handle is closed: its watches can no longer fire). */
void zkrc__watch_drop_generation(zkrc_session *s, uint64_t generation);
/* How many watch events (not session events) this process has passed on
 * to recipes so far: the herd test counts notifications with it. */
guint64 zkrc__watch_events_delivered(void);
/* The watcher function to give ZooKeeper with a registered context. */
void zkrc__watch_dispatch(zhandle_t *zh, int type, int state, const char *path,
                          void *ctx);

/* ---- Orphan reaper --------------------------------------------------
 * Nodes we created but can no longer use (an acquisition that timed out
 * while the connection was down, a create whose reply was lost, a node left
 * by a ZooKeeper session we presumed lost) are deleted by the session as soon
 * as it is connected.  @p name may be NULL when only the protected prefix is
 * known ("_c_<uuid>-"): every child of @p parent starting with it is deleted.
 * @p generation is the ZooKeeper session that created the node: when that
 * session is reported expired by a server, its ephemeral nodes are gone and
 * the entry is dropped. */
void zkrc__session_reap(zkrc_session *s, const char *parent, const char *prefix,
                        const char *name, uint64_t generation);

/* ACLs as recipes keep them: immutable and shared by reference (every lock
 * object, participant and contender of a recipe points at one).  NULL and
 * the open ACL share one static instance, so the default costs nothing. */
typedef struct zkrc__acl zkrc__acl;
zkrc__acl *zkrc__acl_new(const struct ACL_vector *acl); /* deep copy */
zkrc__acl *zkrc__acl_ref(zkrc__acl *acl);
void zkrc__acl_unref(zkrc__acl *acl);
struct ACL_vector *zkrc__acl_vector(zkrc__acl *acl);
int zkrc__acl_valid(const struct ACL_vector *acl);

#endif /* ZKRC_SESSION_INTERNAL_H */
