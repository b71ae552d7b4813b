/*
 * The contender queue: listings and watches.  Watching the predecessor (or
 * the directory, when the predecessor may not be read), our own node, the
 * recovery after a lost request and the re-check after a reconnection at
 * the front.  See queue_private.h.
 */
#include "config.h"

#include <string.h>

#include "queue/queue_private.h"
#include "session/zk_call.h"

/* ---------------------------------------------- a watching getData */

/* The getData that sets the watch a request carries: its reply goes to
 * the request's on_reply (it is also told ZCONNECTIONLOSS when the
 * request could not be sent).  A failed getData sets no watch: that is
 * why getData is used, rather than exists, which would watch for a node
 * that is not there. */
static void watching_get_done(int rc, const char *value, int len,
                              const struct Stat *stat, const void *data) {
  req *r = (req *)data;
  r->czxid = rc == ZOK && stat ? stat->czxid : 0;
  r->revoke = rc == ZOK && stat && zkrc__q_is_revoke(value, len);
  r->version = r->revoke ? stat->version : 0;
  r->on_reply(r, rc);
}

/* Called with c->mu held, returns with it released: send a getData of
 * @p path (owned; freed here) that sets a fresh watch kept in @p *slot,
 * firing @p fired, its reply to @p on_reply. */
static void send_watching_get_unlock(zkrc__contender *c, char *path,
                                     void **slot, zkrc__watch_fn fired,
                                     void (*on_reply)(req *, int)) {
  zkrc_conn *conn;
  req *r = zkrc__q_watch_req_new_locked(c, slot, fired, &conn);
  g_mutex_unlock(&c->mu);
  if (r == NULL) {
    g_free(path);
    return;
  }
  r->on_reply = on_reply;
  int rc = zkrc__zk_get(conn, path, r->watch, watching_get_done, r);
  zkrc__conn_unuse(conn);
  g_free(path);
  if (rc != ZOK)
    on_reply(r, ZCONNECTIONLOSS);
}

/* -------------------------------------------------- watching predecessors */

/* Lock the contender if it still waits (and is not withdrawing): only a
 * waiter watches a predecessor or the directory. */
static gboolean lock_if_waiting(zkrc__contender *c) {
  g_mutex_lock(&c->mu);
  if (c->state == C_WAITING && !c->withdrawing)
    return TRUE;
  g_mutex_unlock(&c->mu);
  return FALSE;
}

static void pred_watch_fired(int type, const char *path, void *target,
                             void *ctx) {
  zkrc__contender *c = target;
  step next = STEP_NONE;
  g_mutex_lock(&c->mu);
  if (zkrc__q_take_fired_watch_locked(c, ctx, &c->pred_watch,
                                      c->state == C_WAITING)) {
    if (type == ZOO_DELETED_EVENT) {
      next = zkrc__q_pred_gone_locked(c);
    } else if (type == ZOO_CHANGED_EVENT || type == ZOO_CREATED_EVENT) {
      next = STEP_WATCH_PRED; /* the watch was used up: set it again */
    }
  }
  zkrc__q_unlock_and_perform(c, next);
}

static void pred_result(req *r, int rc) {
  zkrc__contender *c = r->c;
  step next = STEP_NONE;
  if (rc != ZOK) /* no watch was set */
    zkrc__watch_cancel(r->watch);
  if (!zkrc__q_begin_reply(r))
    return;
  if (c->state == C_WAITING && !c->withdrawing) {
    if (rc == ZOK) { /* watching */
      if (c->pred_watch == r->watch)
        c->pred_czxid = r->czxid;
    } else if (rc == ZNONODE) { /* gone before we could watch it */
      if (c->pred_watch == r->watch)
        c->pred_watch = NULL;
      next = zkrc__q_pred_gone_locked(c);
    } else if (rc == ZNOAUTH) {
      if (c->pred_watch == r->watch)
        c->pred_watch = NULL;
      c->watch_dir = TRUE;
      next = STEP_WATCH_DIR;
    } else {
      next = zkrc__q_after_failure_locked(c, rc);
    }
  }
  zkrc__q_finish_locked_reply(r, next);
}

void zkrc__q_watch_pred(zkrc__contender *c) {
  if (!lock_if_waiting(c))
    return;
  send_watching_get_unlock(c, g_strdup_printf("%s/%s", c->dir, c->pred),
                           &c->pred_watch, pred_watch_fired, pred_result);
}

/* ------------------------------------------- watching the directory */

/* Only for a contender not allowed to read its predecessors (see
 * watch_dir): every change among the children makes it look again. */
static void dir_watch_fired(int type, const char *path, void *target,
                            void *ctx) {
  zkrc__contender *c = target;
  g_mutex_lock(&c->mu);
  gboolean look = zkrc__q_take_fired_watch_locked(c, ctx, &c->dir_watch,
                                                  c->state == C_WAITING);
  zkrc__q_unlock_and_perform(c, look ? STEP_WATCH_DIR : STEP_NONE);
}

static void dir_children_done(int rc, const struct String_vector *kids,
                              const void *data) {
  req *r = (req *)data;
  zkrc__contender *c = r->c;
  step next = STEP_NONE;
  if (rc != ZOK) /* no listing, no watch */
    zkrc__watch_cancel(r->watch);
  if (!zkrc__q_begin_reply(r))
    return;
  if (rc != ZOK && c->dir_watch == r->watch)
    c->dir_watch = NULL;
  if (c->state == C_WAITING && !c->withdrawing) {
    if (rc == ZOK) {
      next = zkrc__q_evaluate_locked(c, kids, TRUE);
    } else if (rc == ZNONODE) {
      next = zkrc__q_evaluate_locked(c, &zkrc__q_no_children, FALSE);
    } else {
      next = zkrc__q_after_failure_locked(c, rc);
    }
  }
  zkrc__q_finish_locked_reply(r, next);
}

/* List the directory and watch its children in one request: no change can
 * slip between the two. */
void zkrc__q_watch_dir(zkrc__contender *c) {
  if (!lock_if_waiting(c))
    return;
  zkrc_conn *conn;
  req *r =
      zkrc__q_watch_req_new_locked(c, &c->dir_watch, dir_watch_fired, &conn);
  g_mutex_unlock(&c->mu);
  if (r == NULL)
    return;
  int rc = zkrc__zk_get_children(conn, c->dir, r->watch, dir_children_done, r);
  zkrc__conn_unuse(conn);
  if (rc != ZOK)
    dir_children_done(ZCONNECTIONLOSS, &zkrc__q_no_children, r);
}

/* ----------------------------------------------------- our own node */

gboolean zkrc__q_is_revoke(const char *value, int len) {
  static const char revoke[] = ZKRC__REVOKE_MESSAGE;
  return value && len == (int)sizeof revoke - 1 &&
         memcmp(value, revoke, sizeof revoke - 1) == 0;
}

/* Our node was deleted by someone else: lost at the front; queued, we
 * queue again. */
static step own_node_gone_locked(zkrc__contender *c) {
  if (c->state != C_FRONT)
    return zkrc__q_relist_locked(c);
  zkrc__q_end_locked(c, ZKRC_ELOCKLOST, ZNONODE, FALSE);
  return STEP_NONE;
}

static void own_watch_fired(int type, const char *path, void *target,
                            void *ctx) {
  zkrc__contender *c = target;
  step next = STEP_NONE;
  g_mutex_lock(&c->mu);
  if (zkrc__q_take_fired_watch_locked(c, ctx, &c->own_watch,
                                      c->state != C_ENDED)) {
    if (type == ZOO_DELETED_EVENT)
      next = own_node_gone_locked(c);
    else if (type == ZOO_CHANGED_EVENT)
      next = STEP_ARM_OWN_WATCH;
  }
  zkrc__q_unlock_and_perform(c, next);
}

/* Reply to the getData that arms the watch on our own node. */
static void self_result(req *r, int rc) {
  zkrc__contender *c = r->c;
  step next = STEP_NONE;
  if (rc != ZOK && r->watch)
    zkrc__watch_cancel(r->watch);
  g_mutex_lock(&c->mu);
  /* No watch was set: forget it even when the reply is superseded, or the
   * node would never be watched again. */
  if (rc != ZOK && c->own_watch == r->watch)
    c->own_watch = NULL;
  /* A revocation request read on our node (this one: its czxid), told
   * even when the reply is superseded, as its watch may live on. */
  if (r->revoke && c->revocable && c->state != C_ENDED && !c->withdrawing &&
      r->czxid == c->czxid)
    zkrc__q_emit_locked(c, OUT_REVOKE, r->version, ZOK);
  if (r->epoch != c->epoch || c->state == C_ENDED) {
    g_mutex_unlock(&c->mu);
    zkrc__q_finish_stale_reply(r);
    return;
  }
  if (c->withdrawing) {
    /* the withdrawal deletes the node */
  } else if (rc == ZOK) {
    /* watching our own node */
  } else if (rc == ZNONODE) {
    next = own_node_gone_locked(c);
  } else {
    next = zkrc__q_after_failure_locked(c, rc);
  }
  zkrc__q_finish_locked_reply(r, next);
}

/* Watch our own node (from its creation on, when wanted), so that its
 * deletion by someone else is noticed: lost at the front, queue again
 * before. */
void zkrc__q_arm_own_watch(zkrc__contender *c) {
  g_mutex_lock(&c->mu);
  gboolean live =
      c->state == C_CREATING || c->state == C_WAITING || c->state == C_FRONT;
  if (c->withdrawing || !live || !c->watch_own || !c->name_known) {
    g_mutex_unlock(&c->mu);
    return;
  }
  send_watching_get_unlock(c, zkrc__q_path(c), &c->own_watch, own_watch_fired,
                           self_result);
}

/* ------------------------------------------------------------ recovery */

static void recover_stat_done(int rc, const struct Stat *stat,
                              const void *data) {
  req *r = (req *)data;
  zkrc__contender *c = r->c;
  step next = STEP_NONE;
  if (!zkrc__q_begin_reply(r))
    return;
  if (rc == ZOK) {
    c->czxid = stat->czxid;
    c->owner = stat->ephemeralOwner;
    c->recover_needed = TRUE;
    next = STEP_RECOVER; /* now evaluate with a fresh listing */
  } else if (rc == ZNONODE) {
    c->name_known = FALSE;
    next = STEP_SEND_CREATE;
  } else {
    next = zkrc__q_after_failure_locked(c, rc);
  }
  zkrc__q_finish_locked_reply(r, next);
}

/* Called with c->mu held, returns with it released: an exists of our
 * node (no watch), its reply to @p done, which is told ZCONNECTIONLOSS
 * when it could not be sent. */
static void send_own_exists_unlock(zkrc__contender *c, stat_completion_t done) {
  zkrc_conn *conn = zkrc__q_conn_for_locked(c);
  if (conn == NULL) {
    g_mutex_unlock(&c->mu);
    return;
  }
  req *r = zkrc__q_req_new_locked(c);
  char *path = zkrc__q_path(c);
  g_mutex_unlock(&c->mu);
  int rc = zkrc__zk_exists(conn, path, NULL, done, r);
  zkrc__conn_unuse(conn);
  g_free(path);
  if (rc != ZOK)
    done(ZCONNECTIONLOSS, NULL, r);
}

void zkrc__q_fetch_own_stat(zkrc__contender *c) {
  g_mutex_lock(&c->mu);
  send_own_exists_unlock(c, recover_stat_done);
}

/* Our predecessor left and the last listing said that admits us: is our
 * node still there (zkrc__q_pred_gone_locked)?  An exists, which needs no
 * READ permission on the node nor on the directory. */
static void confirm_own_done(int rc, const struct Stat *stat,
                             const void *data) {
  req *r = (req *)data;
  zkrc__contender *c = r->c;
  step next = STEP_NONE;
  if (!zkrc__q_begin_reply(r))
    return;
  if (c->state == C_WAITING && !c->withdrawing)
    next = zkrc__q_own_confirmed_locked(c, rc, stat);
  zkrc__q_finish_locked_reply(r, next);
}

void zkrc__q_confirm_own(zkrc__contender *c) {
  g_mutex_lock(&c->mu);
  if (c->state != C_WAITING || c->withdrawing) {
    g_mutex_unlock(&c->mu);
    return;
  }
  send_own_exists_unlock(c, confirm_own_done);
}

/* Find our node by its protected prefix in a listing. */
static const char *find_protected(const struct String_vector *kids,
                                  const zkrc__contender *c) {
  char prefix[ZKRC__PROTECTED_PREFIX_LEN + 1];
  zkrc__protected_prefix(c->uuid, prefix);
  for (int i = 0; i < kids->count; i++)
    if (g_str_has_prefix(kids->data[i], prefix))
      return kids->data[i];
  return NULL;
}

static void recover_children_done(int rc, const struct String_vector *kids,
                                  const void *data) {
  req *r = (req *)data;
  zkrc__contender *c = r->c;
  step next = STEP_NONE;
  if (!zkrc__q_begin_reply(r))
    return;
  if (c->withdrawing) {
    /* the withdrawal takes over */
  } else if (rc != ZOK && rc != ZNONODE) {
    next = zkrc__q_after_failure_locked(c, rc);
  } else if (!c->name_known) {
    const char *mine = rc == ZOK ? find_protected(kids, c) : NULL;
    if (mine) {
      /* The create went through before the connection dropped. */
      c->name_known = TRUE;
      c->create_unknown = FALSE;
      zkrc__q_set_path_locked(c, mine);
      next = STEP_FETCH_STAT;
    } else {
      c->create_unknown = FALSE;
      next = STEP_SEND_CREATE; /* it never reached the servers */
    }
  } else if (rc == ZNONODE) {
    next = zkrc__q_evaluate_locked(c, &zkrc__q_no_children, FALSE);
  } else {
    next = zkrc__q_evaluate_locked(c, kids, FALSE);
  }
  zkrc__q_finish_locked_reply(r, next);
}

void zkrc__q_recover(zkrc__contender *c) {
  g_mutex_lock(&c->mu);
  if (!c->recover_needed || c->state == C_ENDED || c->withdrawing ||
      c->state == C_PENDING || c->state == C_NEW) {
    g_mutex_unlock(&c->mu);
    return;
  }
  zkrc_conn *conn = zkrc__q_conn_for_locked(c); /* keeps recover_needed set */
  if (conn == NULL) {
    g_mutex_unlock(&c->mu);
    return;
  }
  c->recover_needed = FALSE;
  c->epoch++;
  zkrc__q_drop_watch_locked(&c->pred_watch);
  zkrc__q_drop_watch_locked(&c->dir_watch);
  req *r = zkrc__q_req_new_locked(c);
  g_mutex_unlock(&c->mu);
  int rc = zkrc__zk_get_children(conn, c->dir, NULL, recover_children_done, r);
  zkrc__conn_unuse(conn);
  if (rc != ZOK)
    recover_children_done(ZCONNECTIONLOSS, &zkrc__q_no_children, r);
}

/* ------------------------------------------- re-check after reconnecting */

static void recheck_stat_done(int rc, const struct Stat *stat,
                              const void *data) {
  req *r = (req *)data;
  if (zkrc__q_lock_if_current(r)) {
    r->c->recheck_stat_rc = rc;
    r->c->recheck_owner_matches =
        rc == ZOK && stat->ephemeralOwner == r->c->owner;
    g_mutex_unlock(&r->c->mu);
  }
  zkrc__q_req_free(r);
}

static void recheck_children_done(int rc, const struct String_vector *kids,
                                  const void *data) {
  req *r = (req *)data;
  zkrc__contender *c = r->c;
  step next = STEP_NONE;
  if (!zkrc__q_begin_reply(r))
    return;
  if (c->state == C_FRONT && c->recheck_pending && !c->withdrawing)
    next = zkrc__q_recheck_judge_locked(c, rc, kids);
  zkrc__q_finish_locked_reply(r, next);
}

/* Reconnected at the front: read our node's stat (is it still there, and
 * ours?) and the queue (still first?) in one round trip. */
void zkrc__q_recheck(zkrc__contender *c) {
  g_mutex_lock(&c->mu);
  if (c->state != C_FRONT || c->withdrawing || !c->recheck_pending) {
    g_mutex_unlock(&c->mu);
    return;
  }
  zkrc_conn *conn = zkrc__q_conn_for_locked(c);
  if (conn == NULL) {
    g_mutex_unlock(&c->mu);
    return;
  }
  c->recover_needed = FALSE;
  c->epoch++;
  c->recheck_stat_rc = ZCONNECTIONLOSS; /* until its reply says otherwise */
  c->recheck_owner_matches = FALSE;
  req *on_stat = zkrc__q_req_new_locked(c);
  req *on_children = zkrc__q_req_new_locked(c);
  char *path = zkrc__q_path(c);
  g_mutex_unlock(&c->mu);
  int rc = zkrc__zk_exists(conn, path, NULL, recheck_stat_done, on_stat);
  int rc2 = rc == ZOK
                ? zkrc__zk_get_children(conn, c->dir, NULL,
                                        recheck_children_done, on_children)
                : rc;
  zkrc__conn_unuse(conn);
  g_free(path);
  if (rc != ZOK)
    zkrc__q_req_free(on_stat);
  if (rc2 != ZOK)
    recheck_children_done(ZCONNECTIONLOSS, &zkrc__q_no_children, on_children);
}
