/*
 * The contender queue's decisions as pure functions: from what a contender
 * knows when a reply comes back (facts, no contender, no session, no I/O)
 * to what it does next (a move).  queue_decide.c carries the moves out;
 * tests/test_admission.c checks the functions on tables, without a server.
 */
#ifndef ZKRC_QUEUE_DECIDE_H
#define ZKRC_QUEUE_DECIDE_H

#include <glib.h>

#include "queue/admission.h"

/* What a contender knows when a listing of its directory comes back. */
typedef struct zkrc__listing_facts {
  zkrc__verdict_kind verdict; /* the policy's verdict on the listing */
  gboolean at_front;          /* its owner was told it holds (leads) */
  gboolean watch_own;         /* its owner wants its own node watched */
  gboolean own_watched;       /* ... and that watch is armed */
  /* It may not read its predecessors: it watches the directory instead. */
  gboolean watch_dir;
  gboolean dir_watched; /* the listing itself set a watch on the children */
} zkrc__listing_facts;

typedef enum zkrc__listing_move {
  ZKRC__MOVE_TAKE_FRONT, /* admitted: become the front (session permitting) */
  ZKRC__MOVE_ARM_OWN_WATCH, /* admitted at the front; its own watch was lost */
  ZKRC__MOVE_STAY,          /* admitted at the front: nothing to do */
  /* At the front with someone ahead (a sequence that wrapped, a node made
   * by hand): it no longer holds, and its node goes. */
  ZKRC__MOVE_LOST_OVERTAKEN,
  /* At the front and its node is gone although its session lives: deleted
   * by someone; it no longer holds. */
  ZKRC__MOVE_LOST_DELETED,
  ZKRC__MOVE_WATCH_PRED, /* wait, watching the node the verdict names */
  ZKRC__MOVE_WATCH_DIR,  /* wait, listing and watching the directory */
  ZKRC__MOVE_WAIT,       /* wait: the listing watches the directory already */
  ZKRC__MOVE_CREATE      /* its node is gone before the front: create again */
} zkrc__listing_move;

/* What to do after a listing. */
zkrc__listing_move zkrc__listing_decide(const zkrc__listing_facts *f);

/* What a contender at the front knows when the re-check after a
 * reconnection comes back: the stat of its node, then the listing. */
typedef struct zkrc__recheck_facts {
  int stat_rc;                /* the stat's ZooKeeper code */
  int list_rc;                /* the listing's */
  gboolean owner_matches;     /* the node's ephemeralOwner is ours */
  gboolean generation_same;   /* the session is still the node's */
  zkrc__verdict_kind verdict; /* the policy's verdict on the listing */
  gboolean lease_live;        /* the session's lease has time left */
} zkrc__recheck_facts;

typedef enum zkrc__recheck_move {
  /* The connection went again (or the session is ending): check again at
   * the next reconnection (or be ended by the session). */
  ZKRC__RECHECK_LATER,
  ZKRC__RECHECK_FAILED,         /* a request failed otherwise: see failed_rc */
  ZKRC__RECHECK_LOST_DELETED,   /* its node was deleted meanwhile */
  ZKRC__RECHECK_LOST_NOT_OURS,  /* the node is another session's: leave it */
  ZKRC__RECHECK_LOST_OVERTAKEN, /* someone is ahead now: its node goes */
  ZKRC__RECHECK_WAIT_LOST,      /* still first, but the lease ran out */
  ZKRC__RECHECK_CONFIRMED       /* still ours and first: RECONNECTED */
} zkrc__recheck_move;

typedef struct zkrc__recheck_outcome {
  zkrc__recheck_move move;
  int failed_rc; /* LATER, FAILED: the ZooKeeper code that failed */
} zkrc__recheck_outcome;

/* What to do after the re-check. */
zkrc__recheck_outcome zkrc__recheck_decide(const zkrc__recheck_facts *f);

/* Replies that say our ZooKeeper session is over, or the handle is
 * closing: the session's observer ends the contender. */
gboolean zkrc__q_session_gone(int rc);
/* Replies that say the connection is going: the reconnection resumes the
 * contender.  ZSESSIONMOVED comes from a server our session already left;
 * the request had no effect. */
gboolean zkrc__q_connection_trouble(int rc);

#endif /* ZKRC_QUEUE_DECIDE_H */
