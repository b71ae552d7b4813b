/*
 * The contender queue: decisions.  From a listing (the policy's verdict),
 * a failed request or the re-check after a reconnection, with the
 * contender's mutex held, decide the next step; nothing here sends a
 * request.  See queue_private.h.
 */
#include "config.h"

#include <string.h>

#include "queue_private.h"

/* ------------------------------------------------------------- front */

/* Is our node owned by the session as @p v saw it: its generation ours, and
 * its id our node's ephemeralOwner (Curator's CURATOR-696: a node from an
 * earlier session must never make us the front)? */
static gboolean owned_by_session_locked(const zkrc__contender *c,
                                        const zkrc__session_view *v) {
  return v->generation == c->generation && v->session_id == c->owner;
}

/* We are at the front: tell the owner; arm the own-node watch if wanted and
 * not armed already.  Returns the next step. */
static step become_front_locked(zkrc__contender *c) {
  zkrc__session_view v = zkrc__session_look(c->s, c->generation);
  if (!owned_by_session_locked(c, &v)) {
    /* The session changed under us: its observer ends us shortly. */
    c->recover_needed = TRUE;
    return STEP_NONE;
  }
  if (v.lease_left <= 0) {
    /* Never report a hold the session cannot vouch for: its lease is not
     * established yet (LEASED brings us back) or ran out (LOST follows). */
    c->awaiting_lease = TRUE;
    return STEP_NONE;
  }
  c->awaiting_lease = FALSE;
  c->state = C_FRONT;
  zkrc__q_emit_locked(c, OUT_FRONT, 0, 0);
  return c->watch_own && c->own_watch == NULL ? STEP_ARM_OWN_WATCH : STEP_NONE;
}

/* ---------------------------------------------------------- evaluation */

/* Admitted by the listing: hold (or lead), once. */
static step admitted_locked(zkrc__contender *c) {
  if (c->dir_watch) { /* no longer needed */
    zkrc__watch_cancel(c->dir_watch);
    c->dir_watch = NULL;
  }
  if (c->state != C_FRONT)
    return become_front_locked(c);
  if (c->watch_own && c->own_watch == NULL)
    return STEP_ARM_OWN_WATCH; /* its last arming was lost */
  return STEP_NONE;
}

/* Not admitted: wait for @p watch (a name in the listing) to go. */
static step wait_for_locked(zkrc__contender *c, const char *watch,
                            gboolean watched) {
  g_free(c->pred);
  c->pred = g_strdup(watch);
  c->state = C_WAITING;
  if (!c->behind_told) {
    c->behind_told = TRUE;
    zkrc__q_emit_locked(c, OUT_BEHIND, 0, 0);
  }
  return !c->watch_dir ? STEP_WATCH_PRED : watched ? STEP_NONE : STEP_WATCH_DIR;
}

/* Decide from a children listing (the policy's verdict); @p watched: the
 * listing also set a watch on the directory's children.  Returns the next
 * step. */
step zkrc__q_evaluate_locked(zkrc__contender *c,
                             const struct String_vector *kids,
                             gboolean watched) {
  zkrc__verdict v = zkrc__admit(kids->data, kids->count, c->markers, c->name,
                                c->policy, c->policy_arg);
  c->retries = 0; /* a listing came back: the servers answer us */
  c->failures = 0;
  switch (v.kind) {
  case ZKRC__ADMITTED:
    return admitted_locked(c);
  case ZKRC__WAIT:
    if (c->state == C_FRONT) {
      /* Someone is ahead of a holder now (a sequence that wrapped, a node
       * made by hand): it no longer holds, and its node goes. */
      zkrc__q_end_locked(c, ZKRC_ELOCKLOST, 0, TRUE);
      return STEP_NONE;
    }
    return wait_for_locked(c, v.watch, watched);
  case ZKRC__ABSENT:
  default:
    /* Our node is gone although our session lives: deleted by someone. */
    if (c->state == C_FRONT) {
      zkrc__q_end_locked(c, ZKRC_ELOCKLOST, ZNONODE, FALSE);
      return STEP_NONE;
    }
    c->name_known = FALSE;
    return STEP_SEND_CREATE;
  }
}

/* Replies that say our ZooKeeper session is over, or the handle is closing:
 * the session's observer ends us. */
gboolean zkrc__q_session_gone(int rc) {
  return rc == ZSESSIONEXPIRED || rc == ZCLOSING || rc == ZINVALIDSTATE ||
         rc == ZAUTHFAILED;
}

/* Replies that say the connection is going: the reconnection resumes us.
 * ZSESSIONMOVED comes from a server our session already left; the request
 * had no effect. */
gboolean zkrc__q_connection_trouble(int rc) {
  return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT ||
         rc == ZSESSIONMOVED;
}

/* Refusals that asking again cannot change. */
static gboolean refused(int rc) {
  return rc == ZNOAUTH || rc == ZINVALIDACL || rc == ZBADARGUMENTS ||
         rc == ZNOCHILDRENFOREPHEMERALS || rc == ZMARSHALLINGERROR;
}

/* A request of ours failed with @p rc: look at the queue again when that
 * can help, after a backoff (and not before a lost connection is back);
 * give up with the error when it cannot, or has failed too often. */
step zkrc__q_after_failure_locked(zkrc__contender *c, int rc) {
  c->recover_needed = TRUE;
  if (zkrc__q_session_gone(rc))
    return STEP_NONE;
  if (refused(rc) ||
      (!zkrc__q_connection_trouble(rc) && ++c->failures > MAX_FAILURES)) {
    zkrc__q_end_locked(c, zkrc_from_zk_error(rc), rc, TRUE);
    return STEP_NONE;
  }
  if (!zkrc__session_connected(c->s, c->generation))
    return STEP_NONE;
  c->retry_step = STEP_RECOVER;
  return STEP_RETRY_LATER;
}

/* Our predecessor left: look at the queue again (one read) rather than
 * assume anything.  It may have been the front (we may be next), or a
 * contender in the middle that gave up (someone is still ahead of us).  The
 * listing is fresh, so it also shows that our own node is still there. */
step zkrc__q_relist_locked(zkrc__contender *c) {
  c->recover_needed = TRUE; /* recovery is exactly "list and evaluate" */
  return STEP_RECOVER;
}

/* ---------------------------------------------- re-check after reconnecting */

/* Decide from the re-check's two replies (the stat's came first: one
 * session's replies come in order). */
step zkrc__q_recheck_judge_locked(zkrc__contender *c, int rc,
                                  const struct String_vector *kids) {
  int stat_rc = c->recheck_stat_rc;
  int failed = stat_rc != ZOK && stat_rc != ZNONODE ? stat_rc
               : rc != ZOK && rc != ZNONODE         ? rc
                                                    : ZOK;
  if (zkrc__q_connection_trouble(failed) || zkrc__q_session_gone(failed)) {
    c->recover_needed = TRUE; /* the next reconnection checks again */
    return STEP_NONE;
  }
  if (failed != ZOK) {
    step next = zkrc__q_after_failure_locked(c, failed);
    if (next == STEP_RETRY_LATER)
      c->retry_step = STEP_RECHECK;
    return next;
  }
  if (stat_rc == ZNONODE || rc == ZNONODE) {
    zkrc__q_end_locked(c, ZKRC_ELOCKLOST, ZNONODE,
                       FALSE); /* deleted meanwhile */
    return STEP_NONE;
  }
  zkrc__session_view sv = zkrc__session_look(c->s, c->generation);
  if (c->recheck_owner != c->owner || sv.generation != c->generation) {
    zkrc__q_end_locked(c, ZKRC_ELOCKLOST, ZNONODE,
                       FALSE); /* not ours: leave it */
    return STEP_NONE;
  }
  zkrc__verdict v = zkrc__admit(kids->data, kids->count, c->markers, c->name,
                                c->policy, c->policy_arg);
  if (v.kind != ZKRC__ADMITTED) {
    /* Someone is ahead of us now (a sequence that wrapped, a node made by
     * hand): we no longer hold.  Our node goes. */
    zkrc__q_end_locked(c, ZKRC_ELOCKLOST, 0, TRUE);
    return STEP_NONE;
  }
  if (sv.lease_left <= 0)
    return STEP_NONE; /* the lease ran out meanwhile: LOST follows */
  c->recheck_pending = FALSE;
  c->recover_needed = FALSE;
  c->retries = 0;
  c->failures = 0;
  zkrc__q_emit_locked(c, OUT_CONNECTION, ZKRC_SESSION_EVENT_RECONNECTED, 0);
  return c->watch_own && c->own_watch == NULL ? STEP_ARM_OWN_WATCH : STEP_NONE;
}
