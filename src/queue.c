/*
 * The contender queue (see queue.h for the protocol).
 *
 * Structure.  Every decision is taken under the contender's mutex and turned
 * into one "next step" (send the create, watch a predecessor, verify our
 * node, delete it, ...), which is then carried out with the mutex released:
 * no zoo_* call is made with it held.  Replies carry the contender's epoch at
 * the time they were sent; a reply from an earlier epoch (superseded by a
 * recovery, a withdrawal or a new create) is dropped.  Calls to the owner's
 * ops go through an outbox, delivered in order by one thread at a time and
 * never with the mutex held.  (Lock order: session_private.h.)
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "names.h"
#include "queue.h"
#include "util.h"
#include "zkrecipes.h"

/* Creates sent for one contender before giving up: the directory can vanish
 * between our creating it and creating our node (containers are removed
 * when empty), and an administrator can delete a waiting node. */
#define MAX_CREATE_ATTEMPTS 10
/* Failed requests of a kind that may pass (neither a lost connection nor a
 * refusal) retried in a row before the contender gives up with the error. */
#define MAX_FAILURES 8
/* Retries wait 10 ms, then twice as long each time, at most this long. */
#define RETRY_FIRST_MS 10
#define RETRY_MAX_MS 1000

typedef enum cstate {
  C_NEW,      /* not started */
  C_PENDING,  /* waiting for a connection to send the create */
  C_CREATING, /* create (and children read) sent */
  C_WAITING,  /* behind others, watching a predecessor */
  C_FRONT,    /* at the front */
  C_ENDED
} cstate;

typedef enum step {
  STEP_NONE,
  STEP_SEND_CREATE,
  STEP_WATCH_PRED,
  STEP_WATCH_DIR,
  STEP_RECOVER,
  STEP_DELETE,
  STEP_ARM_OWN_WATCH,
  STEP_FETCH_STAT,
  STEP_RECHECK,     /* after a reconnection at the front */
  STEP_RETRY_LATER, /* c->retry_step, after a backoff */
} step;

typedef enum out_kind {
  OUT_FRONT,
  OUT_BEHIND,
  OUT_CONNECTION,
  OUT_ENDED
} out_kind;

typedef struct outbox_item {
  out_kind kind;
  int value; /* session event, or error */
  int zk_rc;
} outbox_item;

struct zkrc__contender {
  gint refs;
  GMutex mu;
  zkrc_session *s;
  char *dir;
  const char *marker; /* static */
  const zkrc__marker *markers;
  zkrc__policy_fn policy;
  const void *policy_arg;
  char *data;
  int data_len;
  zkrc__acl *acl;
  gboolean watch_own;
  const zkrc__contender_ops *ops;
  void *ops_arg;
  unsigned long observer_id;

  char *prefix; /* "_c_<uuid>-" */

  cstate state;
  unsigned epoch;
  uint64_t generation; /* handle generation our create went to */
  gboolean name_known;
  char *path;       /* our node's full path, once known */
  const char *name; /* its last component (points into path) */
  int64_t czxid;
  int64_t owner;
  gboolean create_unknown; /* a create's reply was lost */
  gboolean recover_needed; /* a request was lost with the connection */
  gboolean parent_missing;
  int parent_rc;   /* how creating our directory went */
  int root_rc;     /* how creating its topmost ancestor went */
  int attempts;    /* creates sent since the last one that succeeded */
  int retries;     /* retries since the last success: the backoff */
  int failures;    /* passing failures in a row: the bound */
  step retry_step; /* what a pending retry will do */
  GSource *retry_timer;
  /* At the front by the listing, but the session has no lease yet: waits
   * for ZKRC__SESSION_EVENT_LEASED (or the session's end). */
  gboolean awaiting_lease;
  /* Reconnected at the front: RECONNECTED is told only once our node is
   * seen again, owned by our session and first in the queue. */
  gboolean recheck_pending;
  int recheck_stat_rc;
  int64_t recheck_owner;
  gboolean withdrawing;
  gboolean deleting;
  gboolean behind_told;

  char *pred; /* the contender just before us, as last listed */
  /* Not allowed to read our predecessors (their ACL): the servers would
   * not even deliver a watch event on them (ZooKeeper checks READ before
   * delivering one, since CVE-2024-23944), so watch the directory's
   * children instead and look again at every change. */
  gboolean watch_dir;
  void *dir_watch;
  void *pred_watch;
  void *own_watch;

  GQueue outbox; /* of outbox_item* */
  gboolean delivering;
};

/* The listing of a directory that is not there (or of a request that was
 * not answered): handlers get this rather than NULL. */
static const struct String_vector no_children = {0, NULL};

/* A request in flight: the contender and the epoch it belongs to. */
typedef struct req {
  zkrc__contender *c;
  unsigned epoch;
  void *watch; /* registry context of a watch this request sets */
} req;

static void perform(zkrc__contender *c, step st);
static void end_with(zkrc__contender *c, int err, int zk_rc);
static void deliver(zkrc__contender *c);

/* ------------------------------------------------------------ lifetime */

zkrc__contender *zkrc__contender_ref(zkrc__contender *c) {
  g_atomic_int_inc(&c->refs);
  return c;
}

void zkrc__contender_unref(zkrc__contender *c) {
  if (c == NULL || !g_atomic_int_dec_and_test(&c->refs))
    return;
  g_free(c->pred);
  g_free(c->dir);
  g_free(c->data);
  zkrc__acl_unref(c->acl);
  g_free(c->prefix);
  g_free(c->path);
  g_queue_clear_full(&c->outbox, g_free);
  g_mutex_clear(&c->mu);
  zkrc__session_unref(c->s);
  g_free(c);
}

static void target_ref(void *p) { zkrc__contender_ref(p); }
static void target_unref(void *p) { zkrc__contender_unref(p); }
static const zkrc__watch_target_ops contender_target = {target_ref,
                                                        target_unref};

int zkrc__queue_init(zkrc__queue *q, zkrc_session *s, const char *dir,
                     const char *participant_id, const struct ACL_vector *acl) {
  memset(q, 0, sizeof *q);
  if (s == NULL || zkrc_path_validate(dir, NULL) != ZKRC_OK ||
      !zkrc__acl_valid(acl))
    return ZKRC_EINVAL;
  if (zkrc__session_closed(s))
    return ZKRC_ECLOSED;
  q->session = zkrc__session_ref_recipe(s);
  q->dir = g_strdup(dir);
  q->participant_id = participant_id ? g_strdup(participant_id)
                                     : zkrc__default_participant_id();
  q->acl = zkrc__acl_new(acl);
  return ZKRC_OK;
}

void zkrc__queue_clear(zkrc__queue *q) {
  zkrc__acl_unref(q->acl);
  g_free(q->participant_id);
  g_free(q->dir);
  if (q->session)
    zkrc__session_unref_recipe(q->session);
  memset(q, 0, sizeof *q);
}

zkrc__contender *zkrc__contender_new(const zkrc__contender_config *cfg) {
  const zkrc__queue *q = cfg->queue;
  zkrc__contender *c = g_new0(zkrc__contender, 1);
  c->refs = 1;
  g_mutex_init(&c->mu);
  g_queue_init(&c->outbox);
  c->s = zkrc__session_ref(q->session);
  c->dir = g_strdup(q->dir);
  c->marker = cfg->marker;
  c->markers = cfg->markers;
  c->policy = cfg->policy ? cfg->policy : zkrc__policy_exclusive;
  c->policy_arg = cfg->policy_arg;
  c->data_len = (int)strlen(q->participant_id);
  c->data = g_memdup2(q->participant_id, (gsize)c->data_len);
  c->acl = zkrc__acl_ref(q->acl);
  c->watch_own = cfg->watch_own_node != 0;
  c->ops = cfg->ops;
  c->ops_arg = cfg->ops_arg;
  char *uuid = zkrc__uuid();
  c->prefix = zkrc__protected_prefix(uuid);
  g_free(uuid);
  c->state = C_NEW;
  return c;
}

static req *req_new_locked(zkrc__contender *c) {
  req *r = g_new0(req, 1);
  r->c = zkrc__contender_ref(c);
  r->epoch = c->epoch;
  return r;
}

static void req_free(req *r) {
  zkrc__contender_unref(r->c);
  g_free(r);
}

/* The handle of the ZooKeeper session our node belongs to, pinned; or NULL
 * (and recovery marked) when that session's handle is not the current one:
 * between sessions, or after our session ended (its end is on its way). */
static zkrc_conn *conn_for_locked(zkrc__contender *c) {
  zkrc_conn *conn = zkrc__conn_use(c->s);
  if (conn && conn->generation == c->generation)
    return conn;
  c->recover_needed = TRUE;
  if (conn)
    zkrc__conn_unuse(conn);
  return NULL;
}

/* With c->mu held: a request carrying a fresh watch (firing @p fired) that
 * replaces the one in @p *slot, and the pinned handle to send it on; or
 * NULL, the old watch kept, when conn_for_locked() finds no handle. */
static req *watch_req_new_locked(zkrc__contender *c, void **slot,
                                 zkrc__watch_fn fired, zkrc_conn **conn) {
  *conn = conn_for_locked(c);
  if (*conn == NULL)
    return NULL;
  if (*slot)
    zkrc__watch_cancel(*slot);
  req *r = req_new_locked(c);
  r->watch = zkrc__watch_register(*conn, fired, c, &contender_target);
  *slot = r->watch;
  return r;
}

/* The end of every reply handler that took the lock: let it go, carry out
 * the step decided under it, tell the owner, and forget the request. */
static void finish_locked_reply(req *r, step next) {
  zkrc__contender *c = r->c;
  g_mutex_unlock(&c->mu);
  perform(c, next);
  deliver(c);
  req_free(r);
}

/* The end of a reply handler for a superseded request. */
static void finish_stale_reply(req *r) {
  deliver(r->c);
  req_free(r);
}

/* Is the reply @p r still about what the contender is doing?  Locks the
 * contender when it is (the caller unlocks). */
static gboolean lock_if_current(req *r) {
  g_mutex_lock(&r->c->mu);
  if (r->epoch == r->c->epoch && r->c->state != C_ENDED)
    return TRUE;
  g_mutex_unlock(&r->c->mu);
  return FALSE;
}

/* The start of a reply handler: TRUE, with the contender locked, when the
 * reply is still about what the contender is doing; else the superseded
 * reply is finished here and FALSE returned. */
static gboolean begin_reply(req *r) {
  if (lock_if_current(r))
    return TRUE;
  finish_stale_reply(r);
  return FALSE;
}

/* -------------------------------------------------------------- outbox */

static void emit_locked(zkrc__contender *c, out_kind kind, int value,
                        int zk_rc) {
  outbox_item *item = g_new(outbox_item, 1);
  item->kind = kind;
  item->value = value;
  item->zk_rc = zk_rc;
  g_queue_push_tail(&c->outbox, item);
}

/* Deliver queued calls to the owner, in order, one thread at a time.  Every
 * handler ends with this, so it is also where an ended contender stops
 * observing the session (before the owner hears that it ended). */
static void deliver(zkrc__contender *c) {
  zkrc__contender_ref(c);
  g_mutex_lock(&c->mu);
  unsigned long observer = c->state == C_ENDED ? c->observer_id : 0;
  if (observer) {
    c->observer_id = 0;
    g_mutex_unlock(&c->mu);
    zkrc__session_unobserve(c->s, observer);
    zkrc__contender_unref(c); /* the observer's reference */
    g_mutex_lock(&c->mu);
  }
  if (c->delivering) {
    g_mutex_unlock(&c->mu);
    zkrc__contender_unref(c);
    return; /* the thread delivering now will take ours too */
  }
  c->delivering = TRUE;
  outbox_item *item;
  while ((item = g_queue_pop_head(&c->outbox)) != NULL) {
    g_mutex_unlock(&c->mu);
    switch (item->kind) {
    case OUT_FRONT:
      c->ops->front(c, c->ops_arg);
      break;
    case OUT_BEHIND:
      if (c->ops->behind)
        c->ops->behind(c, c->ops_arg);
      break;
    case OUT_CONNECTION:
      if (c->ops->connection)
        c->ops->connection(c, (zkrc_session_event)item->value, c->ops_arg);
      break;
    case OUT_ENDED:
      c->ops->ended(c, item->value, item->zk_rc, c->ops_arg);
      break;
    }
    g_free(item);
    g_mutex_lock(&c->mu);
  }
  c->delivering = FALSE;
  g_mutex_unlock(&c->mu);
  zkrc__contender_unref(c);
}

/* ------------------------------------------------------------- ending */

static void cancel_retry_locked(zkrc__contender *c) {
  if (c->retry_timer) {
    g_source_destroy(c->retry_timer);
    g_source_unref(c->retry_timer);
    c->retry_timer = NULL;
  }
}

static void cancel_watches_locked(zkrc__contender *c) {
  cancel_retry_locked(c);
  if (c->pred_watch) {
    zkrc__watch_cancel(c->pred_watch);
    c->pred_watch = NULL;
  }
  if (c->dir_watch) {
    zkrc__watch_cancel(c->dir_watch);
    c->dir_watch = NULL;
  }
  if (c->own_watch) {
    zkrc__watch_cancel(c->own_watch);
    c->own_watch = NULL;
  }
}

/* Our node may outlive us on the servers: have the session delete it.
 * (The reaper drops the entry by itself if the session turns out expired.) */
static void reap_leftovers_locked(zkrc__contender *c) {
  if (c->generation == 0)
    return;
  if (c->name_known)
    zkrc__session_reap(c->s, c->dir, c->prefix, c->name, c->generation);
  else if (c->create_unknown)
    zkrc__session_reap(c->s, c->dir, c->prefix, NULL, c->generation);
}

/* Remember our node's full path (its name is the last component). */
static void set_path_locked(zkrc__contender *c, char *path) {
  g_free(c->path);
  c->path = path;
  c->name = strrchr(path, '/') + 1;
}

/* Finish the contender: no more requests, the owner told last. */
static void end_locked(zkrc__contender *c, int err, int zk_rc, gboolean reap) {
  if (c->state == C_ENDED)
    return;
  c->state = C_ENDED;
  c->epoch++;
  cancel_watches_locked(c);
  if (reap)
    reap_leftovers_locked(c);
  emit_locked(c, OUT_ENDED, err, zk_rc);
}

static void end_with(zkrc__contender *c, int err, int zk_rc) {
  g_mutex_lock(&c->mu);
  end_locked(c, err, zk_rc, err != ZKRC_OK);
  g_mutex_unlock(&c->mu);
  deliver(c);
}

typedef struct end_job {
  zkrc__contender *c;
  int err;
} end_job;

static void end_task(void *data) {
  end_job *job = data;
  end_with(job->c, job->err, 0);
  zkrc__contender_unref(job->c);
  g_free(job);
}

/* End from within an API call: the owner must not be called back from
 * inside its own call, so do it on the session's worker. */
static void end_later(zkrc__contender *c, int err) {
  end_job *job = g_new(end_job, 1);
  job->c = zkrc__contender_ref(c);
  job->err = err;
  zkrc__session_run_on_worker(c->s, end_task, job);
}

/* ------------------------------------------------------------- front */

/* The session generation's id, to compare with our node's ephemeralOwner
 * (Curator's CURATOR-696: a node from an earlier session must never make us
 * the front). */
static gboolean owned_by_current_session_locked(zkrc__contender *c) {
  return zkrc__session_generation(c->s) == c->generation &&
         zkrc_session_id(c->s) == c->owner;
}

/* We are at the front: tell the owner; arm the own-node watch if wanted and
 * not armed already.  Returns the next step. */
static step become_front_locked(zkrc__contender *c) {
  if (!owned_by_current_session_locked(c)) {
    /* The session changed under us: its observer ends us shortly. */
    c->recover_needed = TRUE;
    return STEP_NONE;
  }
  if (zkrc__session_lease_left(c->s, c->generation) <= 0) {
    /* Never report a hold the session cannot vouch for: its lease is not
     * established yet (LEASED brings us back) or ran out (LOST follows). */
    c->awaiting_lease = TRUE;
    return STEP_NONE;
  }
  c->awaiting_lease = FALSE;
  c->state = C_FRONT;
  emit_locked(c, OUT_FRONT, 0, 0);
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
    emit_locked(c, OUT_BEHIND, 0, 0);
  }
  return !c->watch_dir ? STEP_WATCH_PRED : watched ? STEP_NONE : STEP_WATCH_DIR;
}

/* Decide from a children listing (the policy's verdict); @p watched: the
 * listing also set a watch on the directory's children.  Returns the next
 * step. */
static step evaluate_locked(zkrc__contender *c,
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
      end_locked(c, ZKRC_ELOCKLOST, 0, TRUE);
      return STEP_NONE;
    }
    return wait_for_locked(c, v.watch, watched);
  case ZKRC__ABSENT:
  default:
    /* Our node is gone although our session lives: deleted by someone. */
    if (c->state == C_FRONT) {
      end_locked(c, ZKRC_ELOCKLOST, ZNONODE, FALSE);
      return STEP_NONE;
    }
    c->name_known = FALSE;
    return STEP_SEND_CREATE;
  }
}

/* Replies that say our ZooKeeper session is over, or the handle is closing:
 * the session's observer ends us. */
static gboolean session_gone(int rc) {
  return rc == ZSESSIONEXPIRED || rc == ZCLOSING || rc == ZINVALIDSTATE ||
         rc == ZAUTHFAILED;
}

/* Replies that say the connection is going: the reconnection resumes us.
 * ZSESSIONMOVED comes from a server our session already left; the request
 * had no effect. */
static gboolean connection_trouble(int rc) {
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
static step after_failure_locked(zkrc__contender *c, int rc) {
  c->recover_needed = TRUE;
  if (session_gone(rc))
    return STEP_NONE;
  if (refused(rc) ||
      (!connection_trouble(rc) && ++c->failures > MAX_FAILURES)) {
    end_locked(c, zkrc_from_zk_error(rc), rc, TRUE);
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
static step relist_locked(zkrc__contender *c) {
  c->recover_needed = TRUE; /* recovery is exactly "list and evaluate" */
  return STEP_RECOVER;
}

/* ----------------------------------------------------- create + children */

/* How creating an ancestor went: the directory itself, or the topmost. */
static void note_ancestor(req *r, int rc, gboolean topmost) {
  if (lock_if_current(r)) {
    *(topmost ? &r->c->root_rc : &r->c->parent_rc) = rc;
    g_mutex_unlock(&r->c->mu);
  }
  req_free(r);
}

static void parent_done(int rc, const char *value, const void *data) {
  note_ancestor((req *)data, rc, FALSE);
}

static void root_done(int rc, const char *value, const void *data) {
  note_ancestor((req *)data, rc, TRUE);
}

/* Creating our directory's topmost ancestor failed with ZNONODE: its parent,
 * the root, does not exist: the session's chroot is missing.  No retry can
 * help. */
static gboolean root_missing_locked(zkrc__contender *c) {
  gboolean top_level = strchr(c->dir + 1, '/') == NULL;
  return c->root_rc == ZNONODE || (top_level && c->parent_rc == ZNONODE);
}

static void create_done(int rc, const char *value, const struct Stat *stat,
                        const void *data) {
  req *r = (req *)data;
  zkrc__contender *c = r->c;
  step next = STEP_NONE;
  g_mutex_lock(&c->mu);
  if (r->epoch != c->epoch || c->state != C_CREATING) {
    /* Nobody waits for this node any more (the contender ended meanwhile):
     * have the session delete it. */
    if (rc == ZOK)
      zkrc__session_reap(c->s, c->dir, c->prefix, strrchr(value, '/') + 1,
                         c->generation);
    g_mutex_unlock(&c->mu);
    finish_stale_reply(r);
    return;
  }
  if (rc == ZOK) {
    c->name_known = TRUE;
    c->create_unknown = FALSE;
    set_path_locked(c, g_strdup(value));
    c->czxid = stat->czxid;
    c->owner = stat->ephemeralOwner;
    c->parent_missing = FALSE;
    c->attempts = 0;
    if (c->withdrawing)
      next = STEP_DELETE;
    else if (c->watch_own)
      /* Watch our node from the start, so that the hand-over, when it
       * comes, costs one read; the children reply is right behind. */
      next = STEP_ARM_OWN_WATCH;
  } else if (rc == ZNONODE) {
    c->parent_missing = TRUE;
    if (c->withdrawing) {
      end_locked(c, ZKRC_OK, 0, FALSE);
    } else if (root_missing_locked(c)) {
      end_locked(c, ZKRC_ENONODE, ZNONODE, FALSE);
    } else if (c->attempts >= MAX_CREATE_ATTEMPTS) {
      int cause = c->parent_rc != ZOK && c->parent_rc != ZNODEEXISTS
                      ? c->parent_rc
                      : ZNONODE;
      end_locked(c, zkrc_from_zk_error(cause), cause, FALSE);
    } else if (c->attempts == 1) {
      next = STEP_SEND_CREATE; /* with the directory, this time */
    } else {
      /* Someone keeps removing the directory: do not race them flat out. */
      c->retry_step = STEP_SEND_CREATE;
      next = STEP_RETRY_LATER;
    }
  } else if (connection_trouble(rc) || session_gone(rc)) {
    /* Whether the node was made is unknown: look for it by its prefix. */
    c->create_unknown = TRUE;
    if (c->withdrawing)
      end_locked(c, ZKRC_OK, 0, TRUE); /* the reaper finds and deletes it */
    else
      next = after_failure_locked(c, rc);
  } else {
    end_locked(c, zkrc_from_zk_error(rc), rc, FALSE);
  }
  finish_locked_reply(r, next);
}

static void children_done(int rc, const struct String_vector *kids,
                          const void *data) {
  req *r = (req *)data;
  zkrc__contender *c = r->c;
  step next = STEP_NONE;
  if (!begin_reply(r))
    return;
  if (c->state == C_CREATING && c->name_known && !c->withdrawing) {
    if (rc == ZOK)
      next = evaluate_locked(c, kids, FALSE);
    else
      next = after_failure_locked(c, rc);
  }
  finish_locked_reply(r, next);
}

/* Create the directory and its missing ancestors as containers, in order,
 * without waiting: the create that follows tells whether it worked. */
static void send_parents(zkrc__contender *c, zhandle_t *zh, req *top,
                         req *last) {
  char **parts = g_strsplit(c->dir + 1, "/", -1);
  GString *path = g_string_new(NULL);
  for (int i = 0; parts[i]; i++) {
    g_string_append_c(path, '/');
    g_string_append(path, parts[i]);
    gboolean is_dir = parts[i + 1] == NULL;
    string_completion_t done = is_dir   ? parent_done
                               : i == 0 ? root_done
                                        : zkrc__ignore_string_done;
    req *r = is_dir ? last : i == 0 ? top : NULL;
    if (zoo_acreate(zh, path->str, NULL, -1, zkrc__acl_vector(c->acl),
                    ZOO_CONTAINER, done, r) != ZOK &&
        r)
      req_free(r); /* not sent: no completion will free it */
  }
  g_string_free(path, TRUE);
  g_strfreev(parts);
}

static void send_create(zkrc__contender *c) {
  g_mutex_lock(&c->mu);
  if (c->state == C_ENDED || c->withdrawing) {
    g_mutex_unlock(&c->mu);
    return;
  }
  zkrc_conn *conn =
      zkrc__session_connected(c->s, 0) ? zkrc__conn_use(c->s) : NULL;
  if (conn == NULL) {
    c->state = C_PENDING; /* the session's next connect event resumes us */
    g_mutex_unlock(&c->mu);
    return;
  }
  c->epoch++;
  c->attempts++;
  c->state = C_CREATING;
  c->generation = conn->generation;
  c->name_known = FALSE;
  c->parent_rc = ZOK;
  c->root_rc = ZOK;
  gboolean parents = c->parent_missing;
  gboolean nested = strchr(c->dir + 1, '/') != NULL;
  req *on_root = parents && nested ? req_new_locked(c) : NULL;
  req *on_parent = parents ? req_new_locked(c) : NULL;
  req *on_create = req_new_locked(c);
  req *on_children = req_new_locked(c);
  g_mutex_unlock(&c->mu);

  if (parents)
    send_parents(c, conn->zh, on_root, on_parent);
  char *create_path = g_strdup_printf("%s/%s%s", c->dir, c->prefix, c->marker);
  int rc = zoo_acreate2(conn->zh, create_path, c->data, c->data_len,
                        zkrc__acl_vector(c->acl), ZOO_EPHEMERAL_SEQUENTIAL,
                        create_done, on_create);
  g_free(create_path);
  /* Pipelined: the server answers this after the create, so the listing
   * includes our node. */
  int rc2 = rc == ZOK ? zoo_aget_children(conn->zh, c->dir, 0, children_done,
                                          on_children)
                      : rc;
  zkrc__conn_unuse(conn);
  if (rc != ZOK) {
    /* Nothing was sent: the handle is going away; its events resume us. */
    req_free(on_create);
    g_mutex_lock(&c->mu);
    if (c->state == C_CREATING && c->epoch == on_children->epoch)
      c->state = C_PENDING;
    g_mutex_unlock(&c->mu);
  }
  if (rc2 != ZOK)
    req_free(on_children);
}

/* -------------------------------------------------- watching predecessors */

static void pred_watch_fired(int type, const char *path, void *target,
                             void *ctx) {
  zkrc__contender *c = target;
  step next = STEP_NONE;
  g_mutex_lock(&c->mu);
  if (ctx == c->pred_watch && c->state == C_WAITING && !c->withdrawing) {
    c->pred_watch = NULL;
    if (type == ZOO_DELETED_EVENT) {
      next = relist_locked(c);
    } else if (type == ZOO_CHANGED_EVENT || type == ZOO_CREATED_EVENT) {
      next = STEP_WATCH_PRED; /* the watch was used up: set it again */
    }
  }
  g_mutex_unlock(&c->mu);
  perform(c, next);
  deliver(c);
}

static void pred_result(req *r, int rc) {
  zkrc__contender *c = r->c;
  step next = STEP_NONE;
  /* A failed getData sets no watch: that is why it is used. */
  if (rc != ZOK)
    zkrc__watch_cancel(r->watch);
  if (!begin_reply(r))
    return;
  if (c->state == C_WAITING && !c->withdrawing) {
    if (rc == ZOK) {
      /* watching */
    } else if (rc == ZNONODE) { /* gone before we could watch it */
      if (c->pred_watch == r->watch)
        c->pred_watch = NULL;
      next = relist_locked(c);
    } else if (rc == ZNOAUTH) {
      if (c->pred_watch == r->watch)
        c->pred_watch = NULL;
      c->watch_dir = TRUE;
      next = STEP_WATCH_DIR;
    } else {
      next = after_failure_locked(c, rc);
    }
  }
  finish_locked_reply(r, next);
}

static void pred_get_done(int rc, const char *value, int len,
                          const struct Stat *stat, const void *data) {
  pred_result((req *)data, rc);
}

static void watch_pred(zkrc__contender *c) {
  g_mutex_lock(&c->mu);
  if (c->state != C_WAITING || c->withdrawing) {
    g_mutex_unlock(&c->mu);
    return;
  }
  zkrc_conn *conn;
  req *r = watch_req_new_locked(c, &c->pred_watch, pred_watch_fired, &conn);
  char *path = r ? g_strdup_printf("%s/%s", c->dir, c->pred) : NULL;
  g_mutex_unlock(&c->mu);
  if (r == NULL)
    return;

  int rc = zoo_awget(conn->zh, path, zkrc__watch_dispatch, r->watch,
                     pred_get_done, r);
  zkrc__conn_unuse(conn);
  g_free(path);
  if (rc != ZOK)
    pred_result(r, ZCONNECTIONLOSS);
}

/* ------------------------------------------- watching the directory */

/* Only for a contender not allowed to read its predecessors (see
 * watch_dir): every change among the children makes it look again. */
static void dir_watch_fired(int type, const char *path, void *target,
                            void *ctx) {
  zkrc__contender *c = target;
  step next = STEP_NONE;
  g_mutex_lock(&c->mu);
  if (ctx == c->dir_watch && c->state == C_WAITING && !c->withdrawing) {
    c->dir_watch = NULL;
    next = STEP_WATCH_DIR;
  }
  g_mutex_unlock(&c->mu);
  perform(c, next);
  deliver(c);
}

static void dir_children_done(int rc, const struct String_vector *kids,
                              const void *data) {
  req *r = (req *)data;
  zkrc__contender *c = r->c;
  step next = STEP_NONE;
  if (rc != ZOK) /* no listing, no watch */
    zkrc__watch_cancel(r->watch);
  if (!begin_reply(r))
    return;
  if (rc != ZOK && c->dir_watch == r->watch)
    c->dir_watch = NULL;
  if (c->state == C_WAITING && !c->withdrawing) {
    if (rc == ZOK) {
      next = evaluate_locked(c, kids, TRUE);
    } else if (rc == ZNONODE) {
      next = evaluate_locked(c, &no_children, FALSE);
    } else {
      next = after_failure_locked(c, rc);
    }
  }
  finish_locked_reply(r, next);
}

/* List the directory and watch its children in one request: no change can
 * slip between the two. */
static void watch_dir(zkrc__contender *c) {
  g_mutex_lock(&c->mu);
  if (c->state != C_WAITING || c->withdrawing) {
    g_mutex_unlock(&c->mu);
    return;
  }
  zkrc_conn *conn;
  req *r = watch_req_new_locked(c, &c->dir_watch, dir_watch_fired, &conn);
  g_mutex_unlock(&c->mu);
  if (r == NULL)
    return;
  int rc = zoo_awget_children(conn->zh, c->dir, zkrc__watch_dispatch, r->watch,
                              dir_children_done, r);
  zkrc__conn_unuse(conn);
  if (rc != ZOK)
    dir_children_done(ZCONNECTIONLOSS, &no_children, r);
}

/* ----------------------------------------------------- our own node */

static void own_watch_fired(int type, const char *path, void *target,
                            void *ctx) {
  zkrc__contender *c = target;
  step next = STEP_NONE;
  g_mutex_lock(&c->mu);
  if (ctx == c->own_watch && !c->withdrawing && c->state != C_ENDED) {
    c->own_watch = NULL;
    if (type == ZOO_DELETED_EVENT && c->state == C_FRONT)
      end_locked(c, ZKRC_ELOCKLOST, ZNONODE, FALSE);
    else if (type == ZOO_DELETED_EVENT)
      next = relist_locked(c); /* deleted while queued: we queue again */
    else if (type == ZOO_CHANGED_EVENT)
      next = STEP_ARM_OWN_WATCH;
  }
  g_mutex_unlock(&c->mu);
  perform(c, next);
  deliver(c);
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
  if (r->epoch != c->epoch || c->state == C_ENDED) {
    g_mutex_unlock(&c->mu);
    finish_stale_reply(r);
    return;
  }
  if (c->withdrawing) {
    /* the withdrawal deletes the node */
  } else if (rc == ZOK) {
    /* watching our own node */
  } else if (rc == ZNONODE) {
    if (c->state == C_FRONT)
      end_locked(c, ZKRC_ELOCKLOST, ZNONODE, FALSE);
    else
      next = relist_locked(c); /* deleted while queued: we queue again */
  } else {
    next = after_failure_locked(c, rc);
  }
  finish_locked_reply(r, next);
}

static void self_get_done(int rc, const char *value, int len,
                          const struct Stat *stat, const void *data) {
  self_result((req *)data, rc);
}

/* Watch our own node (from its creation on, when wanted), so that its
 * deletion by someone else is noticed: lost at the front, queue again
 * before. */
static void arm_own_watch(zkrc__contender *c) {
  g_mutex_lock(&c->mu);
  gboolean live =
      c->state == C_CREATING || c->state == C_WAITING || c->state == C_FRONT;
  if (c->withdrawing || !live || !c->watch_own || !c->name_known) {
    g_mutex_unlock(&c->mu);
    return;
  }
  zkrc_conn *conn;
  req *r = watch_req_new_locked(c, &c->own_watch, own_watch_fired, &conn);
  char *path = r ? g_strdup(c->path) : NULL;
  g_mutex_unlock(&c->mu);
  if (r == NULL)
    return;

  int rc = zoo_awget(conn->zh, path, zkrc__watch_dispatch, r->watch,
                     self_get_done, r);
  zkrc__conn_unuse(conn);
  g_free(path);
  if (rc != ZOK)
    self_result(r, ZCONNECTIONLOSS);
}

/* ------------------------------------------------------------ recovery */

static void recover_stat_done(int rc, const struct Stat *stat,
                              const void *data) {
  req *r = (req *)data;
  zkrc__contender *c = r->c;
  step next = STEP_NONE;
  if (!begin_reply(r))
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
    next = after_failure_locked(c, rc);
  }
  finish_locked_reply(r, next);
}

static void fetch_own_stat(zkrc__contender *c) {
  g_mutex_lock(&c->mu);
  zkrc_conn *conn = conn_for_locked(c);
  if (conn == NULL) {
    g_mutex_unlock(&c->mu);
    return;
  }
  req *r = req_new_locked(c);
  char *path = g_strdup(c->path);
  g_mutex_unlock(&c->mu);
  int rc = zoo_aexists(conn->zh, path, 0, recover_stat_done, r);
  zkrc__conn_unuse(conn);
  g_free(path);
  if (rc != ZOK)
    recover_stat_done(ZCONNECTIONLOSS, NULL, r);
}

/* Find our node by its protected prefix in a listing. */
static const char *find_protected(const struct String_vector *kids,
                                  const char *prefix) {
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
  if (!begin_reply(r))
    return;
  if (c->withdrawing) {
    /* the withdrawal takes over */
  } else if (rc != ZOK && rc != ZNONODE) {
    next = after_failure_locked(c, rc);
  } else if (!c->name_known) {
    const char *mine = rc == ZOK ? find_protected(kids, c->prefix) : NULL;
    if (mine) {
      /* The create went through before the connection dropped. */
      c->name_known = TRUE;
      c->create_unknown = FALSE;
      set_path_locked(c, g_strdup_printf("%s/%s", c->dir, mine));
      next = STEP_FETCH_STAT;
    } else {
      c->create_unknown = FALSE;
      next = STEP_SEND_CREATE; /* it never reached the servers */
    }
  } else if (rc == ZNONODE) {
    next = evaluate_locked(c, &no_children, FALSE);
  } else {
    next = evaluate_locked(c, kids, FALSE);
  }
  finish_locked_reply(r, next);
}

static void recover(zkrc__contender *c) {
  g_mutex_lock(&c->mu);
  if (!c->recover_needed || c->state == C_ENDED || c->withdrawing ||
      c->state == C_PENDING || c->state == C_NEW) {
    g_mutex_unlock(&c->mu);
    return;
  }
  zkrc_conn *conn = conn_for_locked(c); /* keeps recover_needed set */
  if (conn == NULL) {
    g_mutex_unlock(&c->mu);
    return;
  }
  c->recover_needed = FALSE;
  c->epoch++;
  if (c->pred_watch) {
    zkrc__watch_cancel(c->pred_watch);
    c->pred_watch = NULL;
  }
  if (c->dir_watch) {
    zkrc__watch_cancel(c->dir_watch);
    c->dir_watch = NULL;
  }
  req *r = req_new_locked(c);
  g_mutex_unlock(&c->mu);
  int rc = zoo_aget_children(conn->zh, c->dir, 0, recover_children_done, r);
  zkrc__conn_unuse(conn);
  if (rc != ZOK)
    recover_children_done(ZCONNECTIONLOSS, &no_children, r);
}

/* ------------------------------------------- re-check after reconnecting */

static void recheck_stat_done(int rc, const struct Stat *stat,
                              const void *data) {
  req *r = (req *)data;
  if (lock_if_current(r)) {
    r->c->recheck_stat_rc = rc;
    r->c->recheck_owner = rc == ZOK ? stat->ephemeralOwner : 0;
    g_mutex_unlock(&r->c->mu);
  }
  req_free(r);
}

/* Decide from the re-check's two replies (the stat's came first: one
 * session's replies come in order). */
static step recheck_judge_locked(zkrc__contender *c, int rc,
                                 const struct String_vector *kids) {
  int stat_rc = c->recheck_stat_rc;
  int failed = stat_rc != ZOK && stat_rc != ZNONODE ? stat_rc
               : rc != ZOK && rc != ZNONODE         ? rc
                                                    : ZOK;
  if (connection_trouble(failed) || session_gone(failed)) {
    c->recover_needed = TRUE; /* the next reconnection checks again */
    return STEP_NONE;
  }
  if (failed != ZOK) {
    step next = after_failure_locked(c, failed);
    if (next == STEP_RETRY_LATER)
      c->retry_step = STEP_RECHECK;
    return next;
  }
  if (stat_rc == ZNONODE || rc == ZNONODE) {
    end_locked(c, ZKRC_ELOCKLOST, ZNONODE, FALSE); /* deleted meanwhile */
    return STEP_NONE;
  }
  if (c->recheck_owner != c->owner ||
      zkrc__session_generation(c->s) != c->generation) {
    end_locked(c, ZKRC_ELOCKLOST, ZNONODE, FALSE); /* not ours: leave it */
    return STEP_NONE;
  }
  zkrc__verdict v = zkrc__admit(kids->data, kids->count, c->markers, c->name,
                                c->policy, c->policy_arg);
  if (v.kind != ZKRC__ADMITTED) {
    /* Someone is ahead of us now (a sequence that wrapped, a node made by
     * hand): we no longer hold.  Our node goes. */
    end_locked(c, ZKRC_ELOCKLOST, 0, TRUE);
    return STEP_NONE;
  }
  if (zkrc__session_lease_left(c->s, c->generation) <= 0)
    return STEP_NONE; /* the lease ran out meanwhile: LOST follows */
  c->recheck_pending = FALSE;
  c->recover_needed = FALSE;
  c->retries = 0;
  c->failures = 0;
  emit_locked(c, OUT_CONNECTION, ZKRC_SESSION_EVENT_RECONNECTED, 0);
  return c->watch_own && c->own_watch == NULL ? STEP_ARM_OWN_WATCH : STEP_NONE;
}

static void recheck_children_done(int rc, const struct String_vector *kids,
                                  const void *data) {
  req *r = (req *)data;
  zkrc__contender *c = r->c;
  step next = STEP_NONE;
  if (!begin_reply(r))
    return;
  if (c->state == C_FRONT && c->recheck_pending && !c->withdrawing)
    next = recheck_judge_locked(c, rc, kids);
  finish_locked_reply(r, next);
}

/* Reconnected at the front: read our node's stat (is it still there, and
 * ours?) and the queue (still first?) in one round trip. */
static void recheck(zkrc__contender *c) {
  g_mutex_lock(&c->mu);
  if (c->state != C_FRONT || c->withdrawing || !c->recheck_pending) {
    g_mutex_unlock(&c->mu);
    return;
  }
  zkrc_conn *conn = conn_for_locked(c);
  if (conn == NULL) {
    g_mutex_unlock(&c->mu);
    return;
  }
  c->recover_needed = FALSE;
  c->epoch++;
  c->recheck_stat_rc = ZCONNECTIONLOSS; /* until its reply says otherwise */
  req *on_stat = req_new_locked(c);
  req *on_children = req_new_locked(c);
  char *path = g_strdup(c->path);
  g_mutex_unlock(&c->mu);
  int rc = zoo_aexists(conn->zh, path, 0, recheck_stat_done, on_stat);
  int rc2 = rc == ZOK ? zoo_aget_children(conn->zh, c->dir, 0,
                                          recheck_children_done, on_children)
                      : rc;
  zkrc__conn_unuse(conn);
  g_free(path);
  if (rc != ZOK)
    req_free(on_stat);
  if (rc2 != ZOK)
    recheck_children_done(ZCONNECTIONLOSS, &no_children, on_children);
}

/* ---------------------------------------------------------------- retry */

static gboolean retry_fired(gpointer data) {
  zkrc__contender *c = data;
  step next = STEP_NONE;
  g_mutex_lock(&c->mu);
  if (c->retry_timer == g_main_current_source()) {
    g_source_unref(c->retry_timer);
    c->retry_timer = NULL;
    if (c->state != C_ENDED && !c->withdrawing)
      next = c->retry_step;
  }
  g_mutex_unlock(&c->mu);
  perform(c, next);
  deliver(c);
  return G_SOURCE_REMOVE;
}

/* Carry out c->retry_step after a backoff: 10 ms, doubling with every retry
 * since the last success, at most RETRY_MAX_MS. */
static void retry_later(zkrc__contender *c) {
  g_mutex_lock(&c->mu);
  if (c->state == C_ENDED || c->withdrawing || c->retry_timer) {
    g_mutex_unlock(&c->mu);
    return;
  }
  int shift = c->retries < 7 ? c->retries : 7;
  int ms = RETRY_FIRST_MS << shift;
  if (ms > RETRY_MAX_MS)
    ms = RETRY_MAX_MS;
  c->retries++;
  c->retry_timer = zkrc__session_timer(c->s, ms, retry_fired,
                                       zkrc__contender_ref(c), target_unref);
  g_mutex_unlock(&c->mu);
}

/* ----------------------------------------------------------- withdrawal */

static void delete_done(int rc, const void *data) {
  req *r = (req *)data;
  zkrc__contender *c = r->c;
  g_mutex_lock(&c->mu);
  c->deleting = FALSE;
  /* Lost with the connection: the reaper deletes it when it is back. */
  gboolean reap = rc != ZOK && rc != ZNONODE;
  g_mutex_unlock(&c->mu);
  if (reap) {
    g_mutex_lock(&c->mu);
    reap_leftovers_locked(c);
    g_mutex_unlock(&c->mu);
  }
  end_with(c, ZKRC_OK, 0);
  req_free(r);
}

static void send_delete(zkrc__contender *c) {
  g_mutex_lock(&c->mu);
  if (c->state == C_ENDED) {
    g_mutex_unlock(&c->mu);
    return;
  }
  cancel_watches_locked(c);
  c->epoch++;
  zkrc_conn *conn = zkrc__session_connected(c->s, c->generation)
                        ? zkrc__conn_use(c->s)
                        : NULL;
  if (conn == NULL) {
    reap_leftovers_locked(c);
    g_mutex_unlock(&c->mu);
    end_with(c, ZKRC_OK, 0);
    return;
  }
  c->deleting = TRUE;
  req *r = req_new_locked(c);
  char *path = g_strdup(c->path);
  g_mutex_unlock(&c->mu);
  int rc = zoo_adelete(conn->zh, path, -1, delete_done, r);
  zkrc__conn_unuse(conn);
  g_free(path);
  if (rc != ZOK)
    delete_done(ZCONNECTIONLOSS, r);
}

void zkrc__contender_withdraw(zkrc__contender *c) {
  g_mutex_lock(&c->mu);
  if (c->state == C_ENDED || c->withdrawing) {
    g_mutex_unlock(&c->mu);
    return;
  }
  c->withdrawing = TRUE;
  step next = STEP_NONE;
  gboolean end_now = FALSE;
  if (c->name_known) {
    next = STEP_DELETE;
  } else if (c->state == C_CREATING && !c->create_unknown) {
    /* The create's reply is on its way: create_done deletes the node. */
  } else {
    if (c->create_unknown)
      reap_leftovers_locked(c);
    end_now = TRUE;
  }
  g_mutex_unlock(&c->mu);
  if (end_now)
    end_later(c, ZKRC_OK);
  else if (next == STEP_DELETE)
    send_delete(c);
}

gboolean zkrc__contender_deleting(zkrc__contender *c) {
  g_mutex_lock(&c->mu);
  gboolean deleting =
      c->deleting ||
      (c->withdrawing && c->state == C_CREATING && !c->create_unknown);
  g_mutex_unlock(&c->mu);
  return deleting;
}

/* ------------------------------------------------------- session events */

static void on_session_event(zkrc_session *s, zkrc_session_event ev,
                             uint64_t generation, void *arg) {
  zkrc__contender *c = arg;
  step next = STEP_NONE;
  g_mutex_lock(&c->mu);
  gboolean ours = c->generation == generation;
  gboolean live =
      c->state == C_CREATING || c->state == C_WAITING || c->state == C_FRONT;
  switch ((int)ev) {
  case ZKRC_SESSION_EVENT_CONNECTED:
  case ZKRC_SESSION_EVENT_RECONNECTED:
    c->retries = 0; /* a new connection: no reason to wait */
    if (c->state == C_PENDING && !c->withdrawing) {
      next = STEP_SEND_CREATE;
    } else if (ev == ZKRC_SESSION_EVENT_RECONNECTED && ours &&
               c->state == C_FRONT && !c->withdrawing) {
      /* Tell RECONNECTED only once the servers show we still hold. */
      c->recheck_pending = TRUE;
      next = STEP_RECHECK;
    } else if (ours && live && c->recover_needed) {
      next = STEP_RECOVER;
    }
    break;
  case ZKRC__SESSION_EVENT_LEASED:
    if (ours && live && c->awaiting_lease && !c->withdrawing) {
      c->recover_needed = TRUE;
      next = STEP_RECOVER;
    }
    break;
  case ZKRC_SESSION_EVENT_SUSPENDED:
    if (ours && c->state == C_FRONT)
      emit_locked(c, OUT_CONNECTION, ZKRC_SESSION_EVENT_SUSPENDED, 0);
    break;
  case ZKRC_SESSION_EVENT_EXPIRED:
    if (ours && live)
      end_locked(c, ZKRC_ESESSIONEXPIRED, ZSESSIONEXPIRED, FALSE);
    break;
  case ZKRC_SESSION_EVENT_LOST:
    /* The servers may not have expired it yet: reap what we left. */
    if (ours && live)
      end_locked(c, ZKRC_ESESSIONLOST, 0, TRUE);
    break;
  case ZKRC_SESSION_EVENT_AUTH_FAILED:
  case ZKRC_SESSION_EVENT_CLOSED:
    if (c->state != C_ENDED && c->state != C_NEW)
      end_locked(
          c, ev == ZKRC_SESSION_EVENT_CLOSED ? ZKRC_ECLOSED : ZKRC_EAUTHFAILED,
          0, FALSE);
    break;
  }
  g_mutex_unlock(&c->mu);
  perform(c, next);
  deliver(c);
}

/* ---------------------------------------------------------------- steps */

static void perform(zkrc__contender *c, step st) {
  switch (st) {
  case STEP_NONE:
    break;
  case STEP_SEND_CREATE:
    send_create(c);
    break;
  case STEP_WATCH_PRED:
    watch_pred(c);
    break;
  case STEP_WATCH_DIR:
    watch_dir(c);
    break;
  case STEP_ARM_OWN_WATCH:
    arm_own_watch(c);
    break;
  case STEP_RECOVER:
    recover(c);
    break;
  case STEP_DELETE:
    send_delete(c);
    break;
  case STEP_FETCH_STAT:
    fetch_own_stat(c);
    break;
  case STEP_RECHECK:
    recheck(c);
    break;
  case STEP_RETRY_LATER:
    retry_later(c);
    break;
  }
}

void zkrc__contender_start(zkrc__contender *c) {
  g_mutex_lock(&c->mu);
  if (c->state != C_NEW) {
    g_mutex_unlock(&c->mu);
    return;
  }
  c->state = C_PENDING;
  zkrc__contender_ref(c); /* the observer's */
  c->observer_id = zkrc__session_observe(c->s, on_session_event, c);
  g_mutex_unlock(&c->mu);
  if (zkrc__session_closed(c->s)) {
    end_later(c, ZKRC_ECLOSED);
    return;
  }
  send_create(c);
}

/* -------------------------------------------------------------- queries */

char *zkrc__contender_path(zkrc__contender *c) {
  g_mutex_lock(&c->mu);
  char *p = c->name_known ? g_strdup(c->path) : NULL;
  g_mutex_unlock(&c->mu);
  return p;
}

int64_t zkrc__contender_czxid(zkrc__contender *c) {
  g_mutex_lock(&c->mu);
  int64_t z = c->czxid;
  g_mutex_unlock(&c->mu);
  return z;
}

uint64_t zkrc__contender_generation(zkrc__contender *c) {
  g_mutex_lock(&c->mu);
  uint64_t g = c->generation;
  g_mutex_unlock(&c->mu);
  return g;
}

/* --------------------------------------------------------- participants */

int zkrc__queue_list(zkrc_session *s, const char *dir,
                     const zkrc__marker *markers, int64_t deadline,
                     zkrc_participant **list, size_t *count) {
  *list = NULL;
  *count = 0;
  if (zkrc__session_closed(s))
    return zkrc__fail(ZKRC_ECLOSED);
  zkrc_conn *conn = zkrc__conn_use(s);
  if (conn == NULL)
    return zkrc__fail(ZKRC_ECONNLOSS);
  zkrc__call *children = zkrc__call_new();
  int rc =
      zoo_aget_children(conn->zh, dir, 0, zkrc__call_children_done, children);
  if (rc != ZOK)
    zkrc__call_fail_unsent(children, rc);
  zkrc__conn_unuse(conn);
  if (!zkrc__call_wait(children, deadline)) {
    zkrc__call_unref(children);
    return zkrc__fail(ZKRC_ETIMEDOUT);
  }
  int zk_rc = children->rc;
  GArray *sorted =
      zk_rc == ZOK ? zkrc__contenders_sorted(children->children.data,
                                             children->children.count, markers)
                   : NULL;
  zkrc__call_unref(children);
  if (zk_rc == ZNONODE) /* no directory: nobody takes part */
    return ZKRC_OK;
  if (zk_rc != ZOK)
    return zkrc__fail_from_zk(zk_rc);

  /* One getData per contender, all sent before waiting for any. */
  GPtrArray *reads = g_ptr_array_new();
  conn = zkrc__conn_use(s);
  for (guint i = 0; i < sorted->len; i++) {
    zkrc__call *read = zkrc__call_new();
    char *path = g_strdup_printf(
        "%s/%s", dir, g_array_index(sorted, zkrc__contender_entry, i).name);
    rc = conn ? zoo_aget(conn->zh, path, 0, zkrc__call_data_done, read)
              : ZCONNECTIONLOSS;
    if (rc != ZOK)
      zkrc__call_fail_unsent(read, rc);
    g_free(path);
    g_ptr_array_add(reads, read);
  }
  if (conn)
    zkrc__conn_unuse(conn);

  int err = ZKRC_OK;
  zk_rc = ZOK;
  GArray *out = g_array_new(FALSE, TRUE, sizeof(zkrc_participant));
  for (guint i = 0; i < reads->len; i++) {
    zkrc__call *read = g_ptr_array_index(reads, i);
    if (err == ZKRC_OK && !zkrc__call_wait(read, deadline)) {
      err = ZKRC_ETIMEDOUT;
    } else if (err == ZKRC_OK && read->rc == ZOK) {
      zkrc_participant p = {
          strdup(read->value ? read->value : ""),
          strdup(g_array_index(sorted, zkrc__contender_entry, i).name)};
      g_array_append_val(out, p);
    } else if (err == ZKRC_OK && read->rc != ZNONODE) {
      /* A node that left meanwhile is simply not listed. */
      err = zkrc_from_zk_error(read->rc);
      zk_rc = read->rc;
    }
    zkrc__call_unref(read);
  }
  g_ptr_array_free(reads, TRUE);
  zkrc__contenders_free(sorted);
  size_t n = out->len;
  /* Hand out malloc'ed memory the caller frees with free(). */
  zkrc_participant *result = n ? malloc(n * sizeof *result) : NULL;
  if (n && result) {
    memcpy(result, out->data, n * sizeof *result);
  } else if (n) { /* out of memory: drop the strings too */
    for (size_t i = 0; i < n; i++) {
      free(g_array_index(out, zkrc_participant, i).id);
      free(g_array_index(out, zkrc_participant, i).node);
    }
    n = 0;
    if (err == ZKRC_OK)
      err = ZKRC_ENOMEM;
  }
  g_array_free(out, TRUE);
  if (err != ZKRC_OK) {
    zkrc_participants_free(result, n);
    return zk_rc ? zkrc__fail_zk(err, zk_rc) : zkrc__fail(err);
  }
  *list = result;
  *count = n;
  return ZKRC_OK;
}

int zkrc__queue_list_checked(zkrc_session *s, const char *path,
                             const zkrc__marker *markers, int timeout_ms,
                             zkrc_participant **list, size_t *count) {
  if (list)
    *list = NULL;
  if (count)
    *count = 0;
  if (s == NULL || list == NULL || count == NULL ||
      zkrc_path_validate(path, NULL) != ZKRC_OK ||
      !zkrc__timeout_valid(timeout_ms))
    return zkrc__fail(ZKRC_EINVAL);
  return zkrc__queue_list(s, path, markers, zkrc__deadline_after(timeout_ms),
                          list, count);
}

void zkrc_participants_free(zkrc_participant *list, size_t count) {
  for (size_t i = 0; list && i < count; i++) {
    free(list[i].id);
    free(list[i].node);
  }
  free(list);
}

int zkrc__queue_participants(zkrc_session *s, const char *dir,
                             const zkrc__marker *markers, int64_t deadline,
                             char ***ids) {
  zkrc_participant *list = NULL;
  size_t n = 0;
  *ids = NULL;
  int err = zkrc__queue_list(s, dir, markers, deadline, &list, &n);
  if (err != ZKRC_OK)
    return err;
  char **strv = g_new0(char *, n + 1);
  for (size_t i = 0; i < n; i++)
    strv[i] = g_strdup(list[i].id);
  zkrc_participants_free(list, n);
  *ids = strv;
  return ZKRC_OK;
}
