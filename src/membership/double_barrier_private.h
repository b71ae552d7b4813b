/*
 * The double barrier's inside (zkrecipes/barrier.h), shared by
 * double_barrier.c (the object: its member node, events, waits, frees)
 * and double_barrier_step.c (the protocol: the requests that enter and
 * leave, each sent from the previous one's completion).  This folder only.
 */
#ifndef ZKRC_DOUBLE_BARRIER_PRIVATE_H
#define ZKRC_DOUBLE_BARRIER_PRIVATE_H

#include <glib.h>

#include "core/object.h"
#include "session/session_internal.h"
#include "zkrecipes/barrier.h"
#include "zkrecipes/ephemeral.h"

/* Where the member is.  ENTERING until ENTERED is told; LEAVING from
 * zkrc_double_barrier_leave() until LEFT; LOST and LEFT are final. */
typedef enum zkrc__db_phase {
  ZKRC__DB_ENTERING = 1,
  ZKRC__DB_ENTERED,
  ZKRC__DB_LEAVING,
  ZKRC__DB_LEFT,
  ZKRC__DB_LOST
} zkrc__db_phase;

/* Everything below o is under o.mu, a recipe's mutex in the lock order
 * (session_private.h), taken before the member node's (self's): the
 * node's events take o.mu alone, and o.mu is never held around a call
 * that waits for them (zkrc_ephemeral_free). */
struct zkrc_double_barrier {
  zkrc__object o;  /* first: references, mutex, condition, events */
  zkrc_session *s; /* a recipe's reference */
  char *path;
  char *name;  /* our node's name under path */
  char *ready; /* path/ready */
  int members;
  zkrc_barrier_dialect dialect;
  zkrc__acl *acl;
  zkrc_double_barrier_event_fn on_event;
  void *event_arg;
  zkrc_ephemeral *self; /* our node while it is kept; NULL once given up */
  unsigned long observer;
  zkrc__db_phase phase;
  gboolean entered;       /* ENTERED was reached (for good) */
  gboolean registered;    /* our node's last event was REGISTERED */
  gboolean leave_called;  /* zkrc_double_barrier_leave() was called */
  gboolean ready_seen;    /* the watch saw "ready" created */
  gboolean busy;          /* a request (or our node's delete) in flight */
  gboolean again;         /* look again once it is back */
  gboolean ready_cleared; /* kazoo: "ready" deleted at the leave's start */
  gboolean ours_gone;     /* our node deleted while leaving */
  gboolean finishing;     /* all out; Curator: "ready" being deleted */
  gboolean closed;        /* CLOSED told (or the session was closed) */
  int reason, zk_error;   /* LOST's */
  void *watch_ctx;        /* the latest watch's context (NULL: none) */
  int retry_ms;           /* the next retry's delay */
  int failures;    /* failed requests since progress (not the connection) */
  int last_listed; /* leaving: fewest members seen in (progress) */
  GSource *retry_timer;
};

/* double_barrier_step.c.  Take the next step of the protocol for the
 * phase (send its request), unless one is in flight (then again after
 * it), a retry is waiting, the phase is final or the object ending.
 * Never waits. */
void zkrc__db_step_locked(zkrc_double_barrier *b);

/* double_barrier_step.c.  Forget the watch and the retry timer (the
 * object ends, or the phase is final). */
void zkrc__db_quiet_locked(zkrc_double_barrier *b);

/* double_barrier.c.  Tell @p type (ENTERED, LEFT) and wake the waiters. */
void zkrc__db_tell_locked(zkrc_double_barrier *b,
                          zkrc_double_barrier_event_type type, int reason,
                          int zk_error);

/* double_barrier.c.  The member is out before it left (final LOST):
 * told, waiters woken, our node deleted in the background. */
void zkrc__db_lost_locked(zkrc_double_barrier *b, int reason, int zk_error);

/* double_barrier.c.  Our node is no longer wanted: delete it in the
 * background (zkrc_ephemeral_free_async), as pending work of the object;
 * then, when @p then_step, ours_gone is set and the next step taken. */
void zkrc__db_give_up_node_locked(zkrc_double_barrier *b, gboolean then_step);

#endif /* ZKRC_DOUBLE_BARRIER_PRIVATE_H */
