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
 *
 * Files: queue_private.h (the contender and the API between the files),
 * this one (lifetime, replies, the outbox, ending, retries, session events,
 * steps, the API to recipes), queue_gate.c (the session's bound on
 * contenders starting at once), queue_decide.c (state -> step),
 * queue_node.c (create, delete, reap), queue_watch.c (listings, watches,
 * recovery, re-check) and participants.c (the participant listing).
 */
#include "config.h"

#include <string.h>
#include <unistd.h>

#include "core/log_internal.h"
#include "queue/queue_private.h"
#include "session/request_size.h"

const struct String_vector zkrc__q_no_children = {0, NULL};

/* ------------------------------------------------------------ lifetime */

zkrc__contender *zkrc__contender_ref(zkrc__contender *c) {
  g_atomic_int_inc(&c->refs);
  return c;
}

static void outbox_item_free(gpointer p) {
  outbox_item *item = p;
  g_free(item->node);
  g_free(item);
}

/* What a contender's node in @p dir costs its session's budget: the
 * longest name it can have (session_internal.h).  Fits 16 bits: a chroot
 * and a path are shorter than 8 KiB each. */
static uint16_t node_cost(zkrc_session *s, const char *dir) {
  size_t cost = zkrc__ephemeral_cost(s, strlen(dir) + 1 + ZKRC__Q_NAME_MAX);
  g_assert(cost <= UINT16_MAX);
  return (uint16_t)cost;
}

void zkrc__contender_unref(zkrc__contender *c) {
  if (c == NULL || !g_atomic_int_dec_and_test(&c->refs))
    return;
  g_free(c->pred);
  g_ref_string_release(c->dir);
  g_ref_string_release(c->data);
  zkrc__acl_unref(c->acl);
  g_queue_clear_full(&c->outbox, outbox_item_free);
  g_mutex_clear(&c->mu);
  zkrc__session_release(c->s, c->placed_cost);
  if (c->wants_lease) /* never started, or ended otherwise: not expected */
    zkrc__session_lease_want(c->s, FALSE);
  if (c->on_sibling)
    zkrc__session_unref_recipe(c->s);
  else
    zkrc__session_unref(c->s);
  g_free(c);
}

static void target_ref(void *p) { zkrc__contender_ref(p); }
static void target_unref(void *p) { zkrc__contender_unref(p); }
static const zkrc__watch_target_ops contender_target = {target_ref,
                                                        target_unref};

/* "<hostname>:<pid>" as a GRefString, one for the whole process (made
 * again in a child after fork, whose pid differs). */
static char *default_participant_id(void) {
  static GMutex mu;
  static char *id;
  static pid_t pid;
  g_mutex_lock(&mu);
  if (id == NULL || pid != getpid()) {
    char *made = zkrc__default_participant_id();
    if (id) /* the parent's, in a child after fork */
      g_ref_string_release(id);
    id = g_ref_string_new(made);
    pid = getpid();
    g_free(made);
  }
  char *ours = g_ref_string_acquire(id);
  g_mutex_unlock(&mu);
  return ours;
}

/* The size rule (request_size.h) for our contenders' create: the path
 * sent is DIR/<protected prefix><marker> (the servers add the sequence),
 * the data @p participant_id.  An id too large would reset every
 * connection of the session on each attempt. */
static int create_fits(zkrc_session *s, const char *dir,
                       const char *participant_id,
                       const struct ACL_vector *acl) {
  char *path = g_strdup_printf(
      "%s/%*s", dir, ZKRC__PROTECTED_PREFIX_LEN + ZKRC__Q_MARKER_MAX, "");
  int err = zkrc__request_check_create(
      s, path, participant_id ? strlen(participant_id) : 0, acl,
      ZOO_EPHEMERAL_SEQUENTIAL);
  g_free(path);
  return err;
}

int zkrc__queue_init(zkrc__queue *q, zkrc_session *s, const char *dir,
                     const char *participant_id, const struct ACL_vector *acl) {
  memset(q, 0, sizeof *q);
  if (s == NULL || zkrc_path_validate(dir, NULL) != ZKRC_OK ||
      !zkrc__acl_valid(acl))
    return ZKRC_EINVAL;
  int fits = create_fits(s, dir, participant_id, acl);
  if (fits != ZKRC_OK)
    return fits;
  if (zkrc__session_closed(s))
    return ZKRC_ECLOSED;
  q->session = zkrc__session_ref_recipe(s);
  q->dir = g_ref_string_new(dir);
  q->participant_id = participant_id ? g_ref_string_new(participant_id)
                                     : default_participant_id();
  q->acl = zkrc__acl_new(acl);
  g_mutex_init(&q->tail.mu);
  return ZKRC_OK;
}

void zkrc__queue_clear(zkrc__queue *q) {
  zkrc__acl_unref(q->acl);
  if (q->participant_id)
    g_ref_string_release(q->participant_id);
  if (q->dir)
    g_ref_string_release(q->dir);
  if (q->session) { /* made by a zkrc__queue_init() that succeeded */
    zkrc__session_unref_recipe(q->session);
    g_mutex_clear(&q->tail.mu);
  }
  memset(q, 0, sizeof *q);
}

zkrc__contender *zkrc__contender_new(const zkrc__contender_config *cfg) {
  zkrc__queue *q = cfg->queue;
  zkrc__contender *c = g_new0(zkrc__contender, 1);
  c->refs = 1;
  g_mutex_init(&c->mu);
  g_queue_init(&c->outbox);
  /* On its recipe's session, or one beside it when that one has as many
   * ephemeral nodes as it gives contenders (session_place.c). */
  gboolean beside = FALSE;
  c->placed_cost = node_cost(q->session, q->dir);
  c->s = zkrc__session_place(q->session, c->placed_cost, &beside);
  c->on_sibling = beside;
  c->dir = g_ref_string_acquire(q->dir); /* shared with its recipe */
  c->queue = q;
  c->marker = cfg->marker;
  g_assert(strlen(cfg->marker) <= ZKRC__Q_MARKER_MAX); /* static strings */
  c->markers = cfg->markers;
  c->policy = cfg->policy ? cfg->policy : zkrc__policy_exclusive;
  c->policy_arg = cfg->policy_arg;
  c->data_len = (int)strlen(q->participant_id);
  c->data = g_ref_string_acquire(q->participant_id);
  c->acl = zkrc__acl_ref(q->acl);
  c->watch_own = cfg->watch_own_node != 0;
  c->revocable = c->watch_own && cfg->revocable != 0;
  c->ops = cfg->ops;
  c->ops_arg = cfg->ops_arg;
  zkrc__uuid_bytes_random(c->uuid);
  c->state = C_NEW;
  return c;
}

req *zkrc__q_req_new_locked(zkrc__contender *c) {
  req *r = g_new0(req, 1);
  r->c = zkrc__contender_ref(c);
  r->epoch = c->epoch;
  return r;
}

void zkrc__q_req_free(req *r) {
  zkrc__contender_unref(r->c);
  g_free(r);
}

/* The handle of the ZooKeeper session our node belongs to, pinned; or NULL
 * (and recovery marked) when that session's handle is not the current one:
 * between sessions, or after our session ended (its end is on its way). */
zkrc_conn *zkrc__q_conn_for_locked(zkrc__contender *c) {
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
 * NULL, the old watch kept, when zkrc__q_conn_for_locked() finds no handle. */
req *zkrc__q_watch_req_new_locked(zkrc__contender *c, void **slot,
                                  zkrc__watch_fn fired, zkrc_conn **conn) {
  *conn = zkrc__q_conn_for_locked(c);
  if (*conn == NULL)
    return NULL;
  zkrc__q_drop_watch_locked(slot);
  req *r = zkrc__q_req_new_locked(c);
  r->watch = zkrc__watch_register(*conn, fired, c, &contender_target);
  *slot = r->watch;
  return r;
}

/* The end of every reply handler that took the lock: let it go, carry out
 * the step decided under it, tell the owner, and forget the request. */
void zkrc__q_finish_locked_reply(req *r, step next) {
  zkrc__q_unlock_and_perform(r->c, next);
  zkrc__q_req_free(r);
}

void zkrc__q_want_lease_locked(zkrc__contender *c, gboolean want) {
  if (c->wants_lease == (unsigned)want)
    return;
  c->wants_lease = want;
  zkrc__session_lease_want(c->s, want);
}

/* The end of every handler that decided under c->mu: let it go, carry out
 * the step decided, tell the owner. */
void zkrc__q_unlock_and_perform(zkrc__contender *c, step next) {
  if (c->state != C_FRONT && !c->awaiting_lease)
    zkrc__q_want_lease_locked(c, FALSE); /* left the front, or never got it */
  g_mutex_unlock(&c->mu);
  zkrc__q_perform(c, next);
  zkrc__q_deliver(c);
}

/* With c->mu held: forget the watch kept in @p *slot, if any.  (Should its
 * event still come, it finds the slot changed and is ignored.) */
void zkrc__q_drop_watch_locked(void **slot) {
  if (*slot) {
    zkrc__watch_cancel(*slot);
    *slot = NULL;
  }
}

/* With c->mu held: is the watch @p ctx that fired still the one kept in
 * @p *slot, on a contender that still wants it (@p wanted, and not
 * withdrawing)?  Then it is used up (one-shot): forget it. */
gboolean zkrc__q_take_fired_watch_locked(zkrc__contender *c, void *ctx,
                                         void **slot, gboolean wanted) {
  if (ctx != *slot || !wanted || c->withdrawing)
    return FALSE;
  *slot = NULL;
  return TRUE;
}

/* The end of a reply handler for a superseded request. */
void zkrc__q_finish_stale_reply(req *r) {
  zkrc__q_deliver(r->c);
  zkrc__q_req_free(r);
}

/* Is the reply @p r still about what the contender is doing?  Locks the
 * contender when it is (the caller unlocks). */
gboolean zkrc__q_lock_if_current(req *r) {
  g_mutex_lock(&r->c->mu);
  if (r->epoch == r->c->epoch && r->c->state != C_ENDED)
    return TRUE;
  g_mutex_unlock(&r->c->mu);
  return FALSE;
}

/* The start of a reply handler: TRUE, with the contender locked, when the
 * reply is still about what the contender is doing; else the superseded
 * reply is finished here and FALSE returned. */
gboolean zkrc__q_begin_reply(req *r) {
  if (zkrc__q_lock_if_current(r))
    return TRUE;
  zkrc__q_finish_stale_reply(r);
  return FALSE;
}

/* -------------------------------------------------------------- outbox */

void zkrc__q_emit_locked(zkrc__contender *c, out_kind kind, int value,
                         int zk_rc) {
  outbox_item *item = g_new0(outbox_item, 1);
  item->kind = kind;
  item->value = value;
  item->zk_rc = zk_rc;
  g_queue_push_tail(&c->outbox, item);
}

/* The library's line about a contender that ended other than by its
 * owner's wish: a held node lost is news (WARN); a wait that failed, or a
 * session the application closed, less so.  (No mutex held here.) */
static void log_end(zkrc__contender *c, const outbox_item *item) {
  if (item->value == ZKRC_OK || item->value == ZKRC_ECANCELED)
    return;
  gboolean lost = item->front && item->value != ZKRC_ECLOSED;
  zkrc__log(lost ? ZKRC_LOG_WARN : ZKRC_LOG_INFO, "%s: %s %s: %s (%s)", c->dir,
            lost ? "lost the node" : "gave up",
            item->node ? item->node : "(not created)",
            zkrc_strerror(item->value),
            item->zk_rc ? zerror(item->zk_rc) : "no ZooKeeper error");
}

/* Deliver queued calls to the owner, in order, one thread at a time.  Every
 * handler ends with this, so it is also where an ended contender stops
 * observing the session (before the owner hears that it ended). */
void zkrc__q_deliver(zkrc__contender *c) {
  zkrc__contender_ref(c);
  zkrc__q_gate_settle(c);
  g_mutex_lock(&c->mu);
  if (c->state == C_ENDED && c->observed) {
    zkrc__q_unobserve_locked(c);
    g_mutex_unlock(&c->mu);
    zkrc__contender_unref(c); /* the session's list's reference */
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
        c->ops->connection(c, (zkrc_session_event_type)item->value, c->ops_arg);
      break;
    case OUT_ENDED:
      log_end(c, item);
      c->ops->ended(c, item->value, item->zk_rc, c->ops_arg);
      break;
    case OUT_REVOKE:
      if (c->ops->revoke)
        c->ops->revoke(c, (int32_t)item->value, c->ops_arg);
      break;
    }
    outbox_item_free(item);
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

void zkrc__q_cancel_watches_locked(zkrc__contender *c) {
  cancel_retry_locked(c);
  zkrc__q_drop_watch_locked(&c->pred_watch);
  zkrc__q_drop_watch_locked(&c->dir_watch);
  zkrc__q_drop_watch_locked(&c->own_watch);
}

/* Finish the contender: no more requests, the owner told last. */
void zkrc__q_end_locked(zkrc__contender *c, int err, int zk_rc, gboolean reap) {
  if (c->state == C_ENDED)
    return;
  gboolean front = c->state == C_FRONT;
  zkrc__q_tail_leave_locked(c); /* while our owner's stake keeps it */
  c->state = C_ENDED;
  c->awaiting_lease = FALSE;
  zkrc__q_want_lease_locked(c, FALSE);
  c->epoch++;
  zkrc__q_cancel_watches_locked(c);
  if (reap)
    zkrc__q_reap_leftovers_locked(c);
  zkrc__q_emit_locked(c, OUT_ENDED, err, zk_rc);
  outbox_item *ended = g_queue_peek_tail(&c->outbox);
  ended->front = front;
  if (c->name_known) {
    char name[ZKRC__Q_NAME_MAX];
    zkrc__q_name(c, name);
    ended->node = g_strdup(name);
  }
}

void zkrc__q_end_with(zkrc__contender *c, int err, int zk_rc) {
  g_mutex_lock(&c->mu);
  zkrc__q_end_locked(c, err, zk_rc, err != ZKRC_OK);
  g_mutex_unlock(&c->mu);
  zkrc__q_deliver(c);
}

typedef struct end_job {
  zkrc__contender *c;
  int err;
} end_job;

static void end_task(void *data) {
  end_job *job = data;
  zkrc__q_end_with(job->c, job->err, 0);
  zkrc__contender_unref(job->c);
  g_free(job);
}

/* End from within an API call: the owner must not be called back from
 * inside its own call, so do it on the session's worker. */
void zkrc__q_end_later(zkrc__contender *c, int err) {
  end_job *job = g_new(end_job, 1);
  job->c = zkrc__contender_ref(c);
  job->err = err;
  zkrc__session_run_on_worker(c->s, end_task, job);
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
  zkrc__q_unlock_and_perform(c, next);
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
  int reason = c->retry_reason;
  g_mutex_unlock(&c->mu);
  zkrc__log(ZKRC_LOG_INFO, "%s: retrying in %d ms after %s", c->dir, ms,
            zerror(reason));
}

/* ---------------------------------------------------------------- steps */

static void perform(zkrc__contender *c, step st);

/* The client logs some requests from the thread that sends them (at
 * DEBUG), which may hold a recipe's mutex (a release withdraws under its
 * lock's): what it logs while we send goes out from the session's worker
 * instead, never from under a mutex of ours. */
static void send_logging_later_begin(void) { zkrc__log_defer_begin(); }

static void send_logging_later_end(zkrc__contender *c) {
  void *lines = zkrc__log_defer_end();
  if (lines)
    zkrc__session_run_on_worker(c->s, zkrc__log_flush, lines);
}

void zkrc__q_perform(zkrc__contender *c, step st) {
  if (st == STEP_NONE)
    return;
  send_logging_later_begin();
  perform(c, st);
  send_logging_later_end(c);
}

static void perform(zkrc__contender *c, step st) {
  switch (st) {
  case STEP_NONE:
    break;
  case STEP_SEND_CREATE:
    if (zkrc__q_gate_passed(c)) /* else the gate starts it */
      zkrc__q_send_create(c);
    break;
  case STEP_WATCH_PRED:
    zkrc__q_watch_pred(c);
    break;
  case STEP_CONFIRM_OWN:
    zkrc__q_confirm_own(c);
    break;
  case STEP_WATCH_DIR:
    zkrc__q_watch_dir(c);
    break;
  case STEP_ARM_OWN_WATCH:
    zkrc__q_arm_own_watch(c);
    break;
  case STEP_RECOVER:
    zkrc__q_recover(c);
    break;
  case STEP_DELETE:
    zkrc__q_send_delete(c);
    break;
  case STEP_FETCH_STAT:
    zkrc__q_fetch_own_stat(c);
    break;
  case STEP_RECHECK:
    zkrc__q_recheck(c);
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
  gboolean closed = zkrc__q_observe_locked(c);
  g_mutex_unlock(&c->mu);
  if (closed) {
    zkrc__q_end_later(c, ZKRC_ECLOSED);
    return;
  }
  if (zkrc__q_gate_enter(c)) /* else it waits in the session's line */
    zkrc__q_perform(c, STEP_SEND_CREATE);
}

/* -------------------------------------------------------------- queries */

char *zkrc__contender_path(zkrc__contender *c) {
  g_mutex_lock(&c->mu);
  char *p = c->name_known ? zkrc__q_path(c) : NULL;
  g_mutex_unlock(&c->mu);
  return p;
}

int64_t zkrc__contender_czxid(zkrc__contender *c) {
  g_mutex_lock(&c->mu);
  int64_t z = c->czxid;
  g_mutex_unlock(&c->mu);
  return z;
}

int zkrc__contender_listed(zkrc__contender *c) {
  g_mutex_lock(&c->mu);
  int n = c->listed;
  g_mutex_unlock(&c->mu);
  return n;
}

uint64_t zkrc__contender_generation(zkrc__contender *c) {
  g_mutex_lock(&c->mu);
  uint64_t g = c->generation;
  g_mutex_unlock(&c->mu);
  return g;
}

zkrc_session *zkrc__contender_session(zkrc__contender *c) { return c->s; }

int64_t zkrc__contender_lease_left(zkrc__contender *c) {
  return zkrc__session_lease_left(c->s, zkrc__contender_generation(c));
}
