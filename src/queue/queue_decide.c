/*
 * The contender queue: decisions.  From a listing (the policy's verdict),
 * a failed request or the re-check after a reconnection, with the
 * contender's mutex held, decide the next step; nothing here sends a
 * request.  The decisions after a listing and after a re-check are pure
 * functions (queue_decide.h, tested in tests/test_admission.c); the
 * *_locked functions gather their facts and carry out their moves.
 */
#include "config.h"

#include <string.h>

#include "queue/queue_decide.h"
#include "queue/queue_private.h"

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
  /* Wanted before it is looked at: once awake, a lease that runs out is
   * a loss (LOST), never quietly forgotten under a hold. */
  zkrc__q_want_lease_locked(c, TRUE);
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
  if (c->policy == zkrc__policy_exclusive) /* first of all: see pred_gone */
    __atomic_store_n(&c->queue->front_czxid, c->czxid, __ATOMIC_RELEASE);
  zkrc__q_emit_locked(c, OUT_FRONT, 0, 0);
  return c->watch_own && c->own_watch == NULL ? STEP_ARM_OWN_WATCH : STEP_NONE;
}

/* ---------------------------------------------------------- evaluation */

zkrc__listing_move zkrc__listing_decide(const zkrc__listing_facts *f) {
  switch (f->verdict) {
  case ZKRC__ADMITTED:
    return !f->at_front                      ? ZKRC__MOVE_TAKE_FRONT
           : f->watch_own && !f->own_watched ? ZKRC__MOVE_ARM_OWN_WATCH
                                             : ZKRC__MOVE_STAY;
  case ZKRC__WAIT:
    return f->at_front      ? ZKRC__MOVE_LOST_OVERTAKEN
           : !f->watch_dir  ? ZKRC__MOVE_WATCH_PRED
           : f->dir_watched ? ZKRC__MOVE_WAIT
                            : ZKRC__MOVE_WATCH_DIR;
  case ZKRC__WAIT_CHILDREN: /* as for a waiter that may not read the node */
    return f->at_front      ? ZKRC__MOVE_LOST_OVERTAKEN
           : f->dir_watched ? ZKRC__MOVE_WAIT
                            : ZKRC__MOVE_WATCH_DIR;
  case ZKRC__ABSENT:
  default:
    return f->at_front ? ZKRC__MOVE_LOST_DELETED : ZKRC__MOVE_CREATE;
  }
}

/* Admitted: the directory's watch (if any) is no longer needed. */
static void drop_dir_watch_locked(zkrc__contender *c) {
  zkrc__q_drop_watch_locked(&c->dir_watch);
}

/* Not admitted: wait for @p watch (a name in the listing) to go. */
static void wait_for_locked(zkrc__contender *c, const char *watch) {
  g_free(c->pred);
  c->pred = g_strdup(watch);
  c->pred_czxid = 0; /* until its watch's getData reads it */
  c->front_when_pred_goes = FALSE;
  c->state = C_WAITING;
  c->awaiting_lease = FALSE;
  if (!c->behind_told) {
    c->behind_told = TRUE;
    zkrc__q_emit_locked(c, OUT_BEHIND, 0, 0);
  }
}

/* Decide from a children listing (the policy's verdict); @p watched: the
 * listing also set a watch on the directory's children.  Returns the next
 * step. */
step zkrc__q_evaluate_locked(zkrc__contender *c,
                             const struct String_vector *kids,
                             gboolean watched) {
  char name[ZKRC__Q_NAME_MAX];
  const char *me = zkrc__q_policy_name_locked(c, name);
  int next_when_watched_goes = 0;
  zkrc__verdict v =
      zkrc__admit_and_next(kids->data, kids->count, c->markers, me, c->policy,
                           c->policy_arg, &next_when_watched_goes);
  c->listed = v.contenders;
  c->retries = 0; /* a listing came back: the servers answer us */
  c->failures = 0;
  zkrc__listing_facts f = {
      .verdict = v.kind,
      .at_front = c->state == C_FRONT,
      .watch_own = c->watch_own,
      .own_watched = c->own_watch != NULL,
      .watch_dir = c->watch_dir,
      .dir_watched = watched,
  };
  switch (zkrc__listing_decide(&f)) {
  case ZKRC__MOVE_TAKE_FRONT: /* hold (or lead), once */
    drop_dir_watch_locked(c);
    return become_front_locked(c);
  case ZKRC__MOVE_ARM_OWN_WATCH: /* its last arming was lost */
    drop_dir_watch_locked(c);
    return STEP_ARM_OWN_WATCH;
  case ZKRC__MOVE_STAY:
    drop_dir_watch_locked(c);
    return STEP_NONE;
  case ZKRC__MOVE_LOST_OVERTAKEN:
    zkrc__q_end_locked(c, ZKRC_ELOCKLOST, 0, TRUE);
    return STEP_NONE;
  case ZKRC__MOVE_LOST_DELETED:
    zkrc__q_end_locked(c, ZKRC_ELOCKLOST, ZNONODE, FALSE);
    return STEP_NONE;
  case ZKRC__MOVE_WATCH_PRED:
    wait_for_locked(c, v.watch);
    c->front_when_pred_goes = next_when_watched_goes;
    return STEP_WATCH_PRED;
  case ZKRC__MOVE_WATCH_DIR:
    wait_for_locked(c, v.watch);
    return STEP_WATCH_DIR;
  case ZKRC__MOVE_WAIT:
    wait_for_locked(c, v.watch);
    return STEP_NONE;
  case ZKRC__MOVE_CREATE:
  default:
    zkrc__q_tail_leave_locked(c); /* our node is gone */
    c->name_known = FALSE;
    c->awaiting_lease = FALSE; /* not at the front any more */
    return STEP_SEND_CREATE;
  }
}

/* Our node, just created, is numbered right after @p pred, our object's
 * newest node (queue_tail.c): wait for it as a listing would have said. */
step zkrc__q_wait_behind_locked(zkrc__contender *c, const char *pred) {
  c->retries = 0; /* the create came back: the servers answer us */
  c->failures = 0;
  wait_for_locked(c, pred);
  return STEP_WATCH_PRED;
}

gboolean zkrc__q_session_gone(int rc) {
  return rc == ZSESSIONEXPIRED || rc == ZCLOSING || rc == ZINVALIDSTATE ||
         rc == ZAUTHFAILED;
}

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
  c->retry_reason = rc;
  return STEP_RETRY_LATER;
}

/* Our predecessor left: look at the queue again (one read) rather than
 * assume anything.  It may have been the front (we may be next), or a
 * contender in the middle that gave up (someone is still ahead of us).  The
 * listing is fresh, so it also shows that our own node is still there. */
step zkrc__q_relist_locked(zkrc__contender *c) {
  c->front_when_pred_goes = FALSE;
  c->recover_needed = TRUE; /* recovery is exactly "list and evaluate" */
  return STEP_RECOVER;
}

/* Was our predecessor, by the czxid its watch's getData read, a node that
 * a contender of our queue was told is first of all (the exclusive
 * policy: the lowest sequence among our markers)?  Then nothing was ahead
 * of it from then on: a later node gets a larger sequence number, and the
 * directory, never empty since (it held that node until it went, and ours
 * from before our listing), was not made anew.  Nothing is between it and
 * us either: our listing, sent after our create, showed it just before us.
 * So its departure alone admits us, as in the two-party hand-over below,
 * however many were ahead of it when we listed: with threads queued on one
 * lock object, each hand-over costs one stat instead of a listing of them
 * all.  The czxid (unique in the ensemble) rather than the name: a
 * directory made anew numbers its nodes from 0 again. */
static gboolean pred_was_first_locked(const zkrc__contender *c) {
  return c->policy == zkrc__policy_exclusive && c->pred_czxid != 0 &&
         c->pred_czxid ==
             __atomic_load_n(&c->queue->front_czxid, __ATOMIC_ACQUIRE);
}

/* Our predecessor left.  When the last listing showed that its departure
 * alone admits us (the two-party hand-over: it was the front and we were
 * next), or its czxid shows that it was first (pred_was_first_locked()),
 * nothing can have appeared ahead of us since: a later node gets a
 * larger sequence number (within one wrap of the servers' 32-bit counter,
 * the same limit the order itself has).  What the listing would still
 * prove is that our own node is there: read its stat instead (one small
 * read, whatever the queue's length).  A watch on our own node would not
 * do: one multi may delete the predecessor and then us (its events come
 * in that order), and the servers do not deliver the deletion of a node
 * we may not read.  Otherwise look again. */
step zkrc__q_pred_gone_locked(zkrc__contender *c) {
  if (!(c->front_when_pred_goes || pred_was_first_locked(c)) ||
      c->state != C_WAITING)
    return zkrc__q_relist_locked(c);
  c->front_when_pred_goes = FALSE;
  return STEP_CONFIRM_OWN;
}

/* The stat of our node, read after our predecessor left (@p rc, @p stat):
 * still there and ours, we are at the front; gone, we look again (and
 * queue again); a failure is handled as any other. */
step zkrc__q_own_confirmed_locked(zkrc__contender *c, int rc,
                                  const struct Stat *stat) {
  if (rc == ZOK && stat->ephemeralOwner == c->owner &&
      stat->czxid == c->czxid) {
    drop_dir_watch_locked(c);
    return become_front_locked(c);
  }
  if (rc == ZOK || rc == ZNONODE)
    return zkrc__q_relist_locked(c);
  return zkrc__q_after_failure_locked(c, rc);
}

/* ---------------------------------------------- re-check after reconnecting */

zkrc__recheck_outcome zkrc__recheck_decide(const zkrc__recheck_facts *f) {
  /* The stat's reply came first (one session's replies come in order). */
  int failed = f->stat_rc != ZOK && f->stat_rc != ZNONODE   ? f->stat_rc
               : f->list_rc != ZOK && f->list_rc != ZNONODE ? f->list_rc
                                                            : ZOK;
  zkrc__recheck_outcome o = {ZKRC__RECHECK_CONFIRMED, failed};
  if (zkrc__q_connection_trouble(failed) || zkrc__q_session_gone(failed))
    o.move = ZKRC__RECHECK_LATER;
  else if (failed != ZOK)
    o.move = ZKRC__RECHECK_FAILED;
  else if (f->stat_rc == ZNONODE || f->list_rc == ZNONODE)
    o.move = ZKRC__RECHECK_LOST_DELETED;
  else if (!f->owner_matches || !f->generation_same)
    o.move = ZKRC__RECHECK_LOST_NOT_OURS;
  else if (f->verdict != ZKRC__ADMITTED)
    o.move = ZKRC__RECHECK_LOST_OVERTAKEN;
  else if (!f->lease_live)
    o.move = ZKRC__RECHECK_WAIT_LOST;
  return o;
}

/* The policy's verdict on @p kids for our node. */
static zkrc__verdict_kind verdict_locked(const zkrc__contender *c,
                                         const struct String_vector *kids) {
  char name[ZKRC__Q_NAME_MAX];
  const char *me = zkrc__q_policy_name_locked(c, name);
  return zkrc__admit(kids->data, kids->count, c->markers, me, c->policy,
                     c->policy_arg)
      .kind;
}

/* Decide from the re-check's two replies: @p rc and @p kids of the
 * listing, the stat's kept in the contender.  Returns the next step. */
step zkrc__q_recheck_judge_locked(zkrc__contender *c, int rc,
                                  const struct String_vector *kids) {
  /* (kids is NULL from the client when rc is not ZOK.) */
  zkrc__session_view sv = zkrc__session_look(c->s, c->generation);
  zkrc__recheck_facts f = {
      .stat_rc = c->recheck_stat_rc,
      .list_rc = rc,
      .owner_matches = c->recheck_owner_matches,
      .generation_same = sv.generation == c->generation,
      .verdict = rc == ZOK ? verdict_locked(c, kids) : ZKRC__ABSENT,
      .lease_live = sv.lease_left > 0,
  };
  zkrc__recheck_outcome o = zkrc__recheck_decide(&f);
  step next = STEP_NONE;
  switch (o.move) {
  case ZKRC__RECHECK_LATER:
    c->recover_needed = TRUE; /* the next reconnection checks again */
    break;
  case ZKRC__RECHECK_FAILED:
    next = zkrc__q_after_failure_locked(c, o.failed_rc);
    if (next == STEP_RETRY_LATER)
      c->retry_step = STEP_RECHECK;
    break;
  case ZKRC__RECHECK_LOST_DELETED:
  case ZKRC__RECHECK_LOST_NOT_OURS: /* leave a node that is not ours */
    zkrc__q_end_locked(c, ZKRC_ELOCKLOST, ZNONODE, FALSE);
    break;
  case ZKRC__RECHECK_LOST_OVERTAKEN: /* our node goes */
    zkrc__q_end_locked(c, ZKRC_ELOCKLOST, 0, TRUE);
    break;
  case ZKRC__RECHECK_WAIT_LOST:
    break; /* the lease ran out meanwhile: LOST follows */
  case ZKRC__RECHECK_CONFIRMED:
    c->recheck_pending = FALSE;
    c->recover_needed = FALSE;
    c->retries = 0;
    c->failures = 0;
    zkrc__q_emit_locked(c, OUT_CONNECTION, ZKRC_SESSION_EVENT_RECONNECTED, 0);
    if (c->watch_own && c->own_watch == NULL)
      next = STEP_ARM_OWN_WATCH;
    break;
  }
  return next;
}
