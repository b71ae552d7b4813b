/*
 * The session object itself, for the files that implement it.  Recipes see
 * only session_internal.h.
 *
 *   session.c         creating, closing, references, the public getters
 *   session_worker.c  the worker thread and the default callback thread
 *   session_events.c  listeners and observers, event and state names
 *   session_conn.c    handle turnover: open, follow its state, retire
 *   session_lease.c   the lease: renewals and the lapse (lease.c: the rule)
 *   session_reaper.c  deleting nodes we can no longer use
 *   session_auth.c    credentials
 *   session_place.c   ephemeral nodes' budget, sessions opened beside it
 *   acl.c             ACLs shared by reference
 *
 * Lock order (the one place it is written; every other file points here):
 *
 *   recipe -> contender -> siblings -> session -> registry
 *
 * a recipe's mutex (its object's, zkrc__object.mu of core/object.h: a
 * lock's, an election's, a semaphore's, a read-write lock's), then a
 * contender's (queue.c), then a session's list of the sessions opened
 * beside it (s->siblings_mu, session_place.c: a new sibling's mutexes are
 * taken under it), then the session's list of contenders
 * (s->queue.contenders_mu, queue_observe.c), then the session's (s->o.mu) or
 * its gate's (s->queue.gate.mu, queue_gate.c; never both), then the watch registry's
 * (watch.c); GLib's own context locks come last.  A thread may
 * skip levels but never take one while holding a later one.  No zoo_* call
 * is made with s->o.mu held, and no user code is called with any of them.
 * The session's table of directories seen to exist (dirtable.c) and a
 * recipe object's queue tail (zkrc__queue_tail, queue_tail.c) have a mutex
 * of their own each, taken under any of these, none taken under it; so does
 * a blocking multi-lock's waker (zkrc__waker, lock_private.h), taken under
 * a lock's mutex.  The ZooKeeper client's own watcher lock is a leaf too (it
 * never calls out while held): a contender removes its watches locally
 * under its mutex (queue_observe.c), a cache without its own
 * (cache_forget.c).
 *
 * Recipes built from others come first: a multi-lock's set hold
 * (multilock_async.c) and a semaphore (semaphore.c) take their own mutex before
 * their member locks' recipe mutexes, never after; so does a runner
 * (runner.c) before its lock's or election's.  The two sides of a
 * read-write lock are never held together: a thread's hold on the other
 * side is read under that side's mutex before its own is taken.
 */
#ifndef ZKRC_SESSION_PRIVATE_H
#define ZKRC_SESSION_PRIVATE_H

#include <glib.h>

#include "core/dirtable.h"
#include "core/histogram.h"
#include "core/lease.h"
#include "core/object.h"
#include "session/session_internal.h"

/* Credentials given with zkrc_session_add_auth(), for every new handle. */
typedef struct auth_entry {
  char *scheme;
  char *cred;
} auth_entry;

/* TLS and SASL settings (session_secure.c). */
typedef struct zkrc__secure zkrc__secure;

struct zkrc_session {
  /* Its references (o.refs: zkrc__session_unref is its own_unref, for
   * close's wait), its mutex and condition (o.mu, o.cond: state changes,
   * conn users, observer dispatch) and its listeners' events. */
  zkrc__object o;
  gint recipes; /* references held by recipe objects (locks, elections) */
  gint closing_waiters; /* zkrc_session_close() waiting for references */
  /* Calls posted to the executor that have not run yet (each holds a
   * reference).  On an executor of the application's, they may wait for
   * the very thread that is closing the session: close does not wait for
   * them. */
  gint posted;
  /* The id of the latest ZooKeeper session (kept after its handle is
   * retired, for the log lines about its end); under mu. */
  int64_t last_session_id;
  /* What ended a session that closed itself (no reopen after LOST,
   * EXPIRED, AUTH_FAILED), for its CLOSED event's reason; CLOSED (the
   * default) for zkrc_session_close(). */
  zkrc_session_event_type end_event;

  char *hosts; /* NULL for an adopted handle that must not be reopened */
  /* follow_ensemble (session_ensemble.c): the members' client addresses
   * last given to the client (NULL: none yet; then hosts), under mu, and
   * the watch on /zookeeper/config of the current handle. */
  char *followed_hosts;
  void *config_watch;
  zkrc_session_options opts;
  zkrc__secure *secure; /* TLS or SASL; NULL: neither */
  gboolean closing;

  zkrc_conn *conn; /* current handle; NULL between sessions or when closed */
  uint64_t last_generation;
  zkrc_session_state state;
  int negotiated_timeout_ms;

  /* Worker thread: session events, timers, handle turnover. */
  GMainContext *worker_ctx;
  GMainLoop *worker_loop;
  GThread *worker;

  /* The lease of the current ZooKeeper session (session_lease.c). */
  zkrc__lease lease;
  uint64_t lease_generation;  /* the generation it is about; 0: none */
  int64_t opened_us;          /* when the current handle was opened */
  unsigned connection;        /* connections of that handle so far */
  gboolean renewal_in_flight; /* a renewal or a keepalive */
  /* Holds, leaderships, kept nodes (and ZKRC_LEASE_ALWAYS) that depend on
   * the lease; 0: it rests (zkrc__session_lease_want). */
  int lease_demand;
  GSource *renew_timer; /* sends the next renewal or keepalive (worker) */
  GSource *lapse_timer; /* fires when the lease runs out (worker) */
  /* A loss the lapse timer declared, until its LOST reaches the executor:
   * the deadline it was due at and the lease's allowance (0: none). */
  int64_t lapse_due_us, lapse_allowance_us;

  /* A handle that could not be opened (names that do not resolve) is
   * tried again later: the timer, and its current backoff. */
  GSource *reopen_timer;
  int reopen_delay_ms;
  /* A handle that has not made its session yet is replaced every half
   * session timeout (session_conn.c): the lease of the session it makes
   * starts when it was opened. */
  GSource *fresh_timer; /* a ready-time source (the lease driver's) */
  /* A handle whose lease ran out, kept open until its LOST reached the
   * executor and the allowance passed (park_timer, the lease driver's):
   * closing it deletes its ephemeral nodes at once. */
  zkrc_conn *parked;
  gboolean park_told;     /* its LOST reached the executor */
  int64_t park_at_us;     /* closed once told and this came */
  int64_t park_latest_us; /* closed then, told or not */
  GSource *park_timer;
  uint64_t fresh_generation; /* the handle it is about */

  /* Default executor: a callback thread fed by a queue. */
  GAsyncQueue *cb_queue;
  GThread *cb_thread;
  zkrc_executor executor;

  GPtrArray *listeners; /* of listener* */
  unsigned long next_listener_id;
  GHashTable *observers; /* id → observer* (few: one for all contenders) */
  unsigned long next_observer_id;
  gboolean notifying;   /* the worker is calling observers */
  GPtrArray *auths;     /* of auth_entry* */
  GPtrArray *reap;      /* of reap_entry* */
  zkrc__dirtable *dirs; /* directories seen to exist (its own mutex) */

  /* The contender queue's part (session_internal.h): its gate and its
   * list of contenders; made and cleared here, used by src/queue/ only. */
  zkrc__session_queue queue;

  /* Deadlines armed on the worker (session_deadline.c): a binary min-heap
   * of them (n_deadlines in an array for deadlines_room; a plain malloc'ed
   * one: TSan cannot follow a GArray's struct, a GLib slice, from thread to
   * thread) and the one source that fires at the earliest (made with the
   * first), under deadlines_mu (the last of the library's mutexes). */
  GMutex deadlines_mu;
  struct zkrc__deadline *deadlines;
  guint n_deadlines, deadlines_room;
  uint64_t deadlines_armed; /* deadlines armed: their order, for ties */
  GSource *deadline_src;

  /* Ephemeral nodes placed on this session, in the bytes their paths take
   * in its close (atomic; session_place.c), and the sessions opened beside
   * it when it had no room (of zkrc_session*, referenced; under
   * siblings_mu, taken before any session's mutex). */
  gint placed_bytes;
  GMutex siblings_mu;
  GPtrArray *siblings;
  gboolean siblings_closed;
  gboolean over_budget_told; /* the warning that none could be opened */
  gboolean spare_asked;      /* the worker is to open the next sibling */

  /* Statistics (zkrc_session_get_stats): events counted under mu by the
   * worker; requests counted where they are sent, atomically. */
  uint64_t n_sessions, n_suspensions, n_reconnects, n_expiries;
  uint64_t n_lease_losses, n_late_losses;
  zkrc__histogram loss_delivery; /* lapse due -> LOST on the executor */
  uint64_t n_requests;
  uint64_t n_renewals;   /* of n_requests: the lease's syncs (atomic) */
  uint64_t n_keepalives; /* of n_requests: a resting lease's reads */
};

/* A new session object with its threads running and no handle yet
 * (session.c); zkrc__session_open_locked() opens one. */
/* TLS and SASL (session_secure.c): the options' own copies and what the
 * handles are opened with; NULL for a plaintext session without SASL. */
/* ZKRC_OK, ZKRC_EINVAL (a missing or unreadable file, a comma the client
 * cannot take, SASL without a user) or ZKRC_ENOTSUP (the client lacks it;
 * TLS with SASL), each with a line in the log. */
int zkrc__secure_check(const zkrc_session_options *o);
/* A copy of @p o's TLS and SASL settings (NULL: none), which @p o's
 * string fields then point into (the caller's may go). */
zkrc__secure *zkrc__secure_new(zkrc_session_options *o);
void zkrc__secure_free(zkrc__secure *sec);
/* A handle opened as zookeeper_init2 opens one, over TLS or with SASL. */
zhandle_t *zkrc__secure_open(zkrc__secure *sec, const char *hosts,
                             watcher_fn watcher, int timeout, void *ctx,
                             log_callback_fn log);

zkrc_session *zkrc__session_alloc(const char *hosts,
                                  const zkrc_session_options *opts);
/* The generation of a new handle of @p s (s->o.mu held).  Numbered across
 * every session of the process, not per session: a generation names one
 * ZooKeeper session of one session object, so that a recipe asking one
 * session about another's generation (a contender on a session opened
 * beside its recipe's, session_place.c) is told of no lease, never of a
 * stranger's. */
uint64_t zkrc__session_next_generation_locked(zkrc_session *s);
/* Open the first handle of @p s (from zkrc__session_alloc()): ZKRC_OK, or
 * the error, @p s then closed and its reference dropped. */
int zkrc__session_open_first(zkrc_session *s);
/* Frees an auth_entry (session_auth.c; the secret is wiped). */
void zkrc__auth_entry_free(gpointer p);
/* Give @p to a copy of each credential that @p from has (before its
 * first handle). */
void zkrc__session_copy_auths(zkrc_session *to, zkrc_session *from);
/* Add a credential to @p s and its current handle, waiting for the answer
 * until @p deadline (zkrc_session_add_auth() of one session). */
int zkrc__session_add_auth_until(zkrc_session *s, const char *scheme,
                                 const char *cred, int64_t deadline);
/* The same without waiting for the answer. */
void zkrc__session_give_auth(zkrc_session *s, const char *scheme,
                             const char *cred);

/* ---- Siblings (session_place.c) -------------------------------------- */

/* Give the credential to every sibling of @p s (zkrc_session_add_auth),
 * without waiting for the servers' answer (a refusal ends that sibling's
 * session, as it would ours). */
void zkrc__session_siblings_add_auth(zkrc_session *s, const char *scheme,
                                     const char *cred);
/* Close every sibling of @p s and open no more (zkrc_session_close). */
void zkrc__session_close_siblings(zkrc_session *s);

/* ---- Threads (session_worker.c) -------------------------------------- */

/* Start the worker and, without an executor of the application's, the
 * callback thread; stop them (joins, unless called on that thread). */
void zkrc__session_threads_start(zkrc_session *s);
void zkrc__session_threads_stop(zkrc_session *s);
/* Is the calling thread the session's worker? */
gboolean zkrc__session_on_worker(zkrc_session *s);

/* ---- Events (session_events.c) --------------------------------------- */

/* Worker thread: tell observers (at once, in order) and listeners (on the
 * executor) about @p ev of ZooKeeper session @p generation. */
void zkrc__session_announce(zkrc_session *s, zkrc_session_event_type ev,
                            uint64_t generation);
/* Set up and tear down the session's deadlines (session_deadline.c); none
 * is armed when the session is freed (each holds a reference of an owner
 * that holds one on the session).  Clear after the worker stopped. */
void zkrc__session_deadlines_init(zkrc_session *s);
void zkrc__session_deadlines_clear(zkrc_session *s);

/* Any thread, no session mutex held: tell the listeners (not the
 * observers: no recipe acts on it) that the session follows a new list of
 * servers (ZKRC_SESSION_EVENT_SERVERS_CHANGED); nothing once the session
 * is closed, so that CLOSED stays the last event. */
void zkrc__session_tell_servers_changed(zkrc_session *s);

/* Worker thread: call the observers (not the listeners) with @p ev. */
void zkrc__session_notify_observers(zkrc_session *s, zkrc_session_event_type ev,
                                    uint64_t generation);

/* ---- Handles (session_conn.c) ---------------------------------------- */

/* Open a new handle as the current one (s->o.mu held).  A host string whose
 * names do not resolve (its syntax was checked before) is tried again
 * later, with a backoff; out of memory sets *err to ZKRC_ENOMEM and closes
 * the session. */
void zkrc__session_open_locked(zkrc_session *s, int *err);
/* Worker thread: the current ZooKeeper session is dead (expired, presumed
 * lost, or authentication failed).  Tell everyone, close its handle and,
 * unless told not to, open a new session for later operations. */
void zkrc__session_retire(zkrc_session *s, zkrc_session_event_type why);
/* The watcher every handle gets (ZooKeeper's completion thread). */
void zkrc__session_global_watcher(zhandle_t *zh, int type, int state,
                                  const char *path, void *ctx);
/* Stop trying to reopen (closing). */
void zkrc__session_cancel_reopen(zkrc_session *s);
/* Before closing a connected handle, let the replies to everything sent on
 * it arrive (at most 2 s): the ZooKeeper client closes its socket with
 * replies unread, the kernel then answers with a reset, and the servers
 * may never see our close request, keeping our ephemeral nodes for a whole
 * session timeout. */
void zkrc__session_drain(zkrc_session *s, zkrc_conn *c);
/* Close a retired handle: wait until no thread is inside a zoo_* call on
 * it, then zookeeper_close() it and free @p c.  Completions still
 * outstanding run with ZCLOSING, possibly on this thread, so no session
 * lock may be held here. */
void zkrc__session_close_conn(zkrc_session *s, zkrc_conn *c);

/* ---- The reaper (session_reaper.c) ----------------------------------- */

/* The entry list s->reap. */
GPtrArray *zkrc__reaper_new(void);
/* Worker thread, once connected: try every pending entry. */
void zkrc__reaper_run(zkrc_session *s);
/* Forget the entries for nodes of an expired ZooKeeper session: the
 * servers deleted them with the session (s->o.mu held). */
void zkrc__reaper_forget_locked(zkrc_session *s, uint64_t generation);

/* zkrc__session_closed with s->o.mu held (session.c). */
gboolean zkrc__session_closed_locked(zkrc_session *s);

/* ---- The lease driver (session_lease.c) ------------------------------ */

/* Create and free the driver's timers (on the worker's context). */
void zkrc__lease_driver_init(zkrc_session *s);
void zkrc__lease_driver_free(zkrc_session *s);
/* The fresh timer's callback (session_conn.c), on the worker. */
gboolean zkrc__session_fresh_fired(gpointer data);
/* A new handle was just opened (s->o.mu held): no lease until it connects. */
void zkrc__lease_handle_opened_locked(zkrc_session *s);
/* Worker, before a connection of the current handle is made public: start
 * the lease of a new session (@p new_session) or a new connection of the
 * same one, and send its first renewal, so that every request a recipe
 * sends on this connection is answered after it.  FALSE when the lease ran
 * out before the connection came back (the session is then lost). */
gboolean zkrc__lease_connected(zkrc_session *s, zkrc_conn *c,
                               gboolean new_session, int timeout_ms);
/* The current handle is retired or the session closes (s->o.mu held). */
void zkrc__lease_stop_locked(zkrc_session *s);

/* session_ensemble.c.  Start following the ensemble's membership when the
 * options ask (zkrc_session_options.follow_ensemble); before the first
 * handle opens. */
void zkrc__session_ensemble_start(zkrc_session *s);
/* The same, at once: for an adopted handle connected already (no
 * CONNECTED is announced for it).  Never blocks. */
void zkrc__session_ensemble_read_now(zkrc_session *s);
/* The hosts a new handle opens on: the followed membership, else the
 * connect string (NULL for an adopted handle without one).  Under mu. */
const char *zkrc__session_hosts_locked(zkrc_session *s);
/* zkrc__session_lease_left at @p now, with s->o.mu held. */
int64_t zkrc__lease_left_locked(zkrc_session *s, uint64_t generation,
                                int64_t now);

#endif /* ZKRC_SESSION_PRIVATE_H */
