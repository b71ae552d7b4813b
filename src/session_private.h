/*
 * The session object itself, for the files that implement it (session.c,
 * session_lease.c).  Recipes see only session_internal.h.
 *
 * Lock order: a recipe's mutex, then a contender's, then the session's
 * (s->mu), then the watch registry's; GLib's own context locks come last.
 * No zoo_* call is made with s->mu held.
 */
#ifndef ZKRC_SESSION_PRIVATE_H
#define ZKRC_SESSION_PRIVATE_H

#include <glib.h>

#include "lease.h"
#include "session_internal.h"

struct zkrc_session {
  GMutex mu;
  GCond cond; /* state changes, conn users, observer dispatch */
  gint refs;
  gint recipes; /* references held by recipe objects (locks, elections) */
  gint closing_waiters; /* zkrc_session_close() waiting for references */

  char *hosts; /* NULL for an adopted handle that must not be reopened */
  zkrc_session_options opts;
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
  uint64_t lease_generation; /* the generation it is about; 0: none */
  int64_t opened_us;         /* when the current handle was opened */
  unsigned connection;       /* connections of that handle so far */
  gboolean renewal_in_flight;
  GSource *renew_timer;      /* sends the next renewal (worker) */
  GSource *lapse_timer;      /* fires when the lease runs out (worker) */

  /* A handle that could not be opened (names that do not resolve) is
   * tried again later: the timer, and its current backoff. */
  GSource *reopen_timer;
  int reopen_delay_ms;

  /* Default executor: a callback thread fed by a queue. */
  GAsyncQueue *cb_queue;
  GThread *cb_thread;
  zkrc_executor executor;

  GPtrArray *listeners; /* of listener* */
  unsigned long next_listener_id;
  GHashTable *observers; /* id → observer* (many: one per live contender) */
  unsigned long next_observer_id;
  gboolean notifying;      /* the worker is calling observers */
  GPtrArray *auths;        /* of auth_entry* */
  GPtrArray *reap;         /* of reap_entry* */
};

/* Worker thread: the current ZooKeeper session is dead (expired, presumed
 * lost, or authentication failed).  Tell everyone, close its handle and,
 * unless told not to, open a new session for later operations. */
void zkrc__session_retire(zkrc_session *s, zkrc_session_event why);

/* Worker thread: call the observers (not the listeners) with @p ev. */
void zkrc__session_notify_observers(zkrc_session *s, zkrc_session_event ev,
                                    uint64_t generation);

/* ---- The lease driver (session_lease.c) ------------------------------ */

/* Create and free the driver's timers (on the worker's context). */
void zkrc__lease_driver_init(zkrc_session *s);
void zkrc__lease_driver_free(zkrc_session *s);
/* A new handle was just opened (s->mu held): no lease until it connects. */
void zkrc__lease_handle_opened_locked(zkrc_session *s);
/* Worker, before a connection of the current handle is made public: start
 * the lease of a new session (@p new_session) or a new connection of the
 * same one, and send its first renewal, so that every request a recipe
 * sends on this connection is answered after it.  FALSE when the lease ran
 * out before the connection came back (the session is then lost). */
gboolean zkrc__lease_connected(zkrc_session *s, zkrc_conn *c,
                               gboolean new_session, int timeout_ms);
/* The current handle is retired or the session closes (s->mu held). */
void zkrc__lease_stop_locked(zkrc_session *s);

#endif /* ZKRC_SESSION_PRIVATE_H */
