/*
 * The contender queue: the session's events.  One observer per session
 * tells every contender it started and that has not ended yet (not one
 * observer each: 100,000 held locks of a session would have 100,000
 * observers, each a table entry and an allocation).  The contenders are
 * linked through their observed_prev/observed_next, under the session's
 * contenders_mu (lock order: session_private.h).  See queue_private.h.
 */
#include "config.h"

#include "queue/queue_private.h"
#include "session/zk_call.h"

/* With c->mu held: take the watch in @p *slot, on @p path (owned, freed
 * here), out of the client's tables of @p conn, and forget it.  A local
 * removal: nothing is sent.  Under c->mu, so that the context cannot be
 * freed and its address reused by a new watch before it is removed (the
 * client's watcher lock is a leaf: it never calls out). */
static gboolean forget_watch_locked(zkrc_conn *conn, void **slot, char *path,
                                    ZooWatcherType type) {
  gboolean had = *slot != NULL;
  if (had)
    (void)zkrc__zk_remove_watches(conn, path, type, *slot, 1);
  zkrc__q_drop_watch_locked(slot);
  g_free(path);
  return had;
}

/* The connection went.  Debian's C client (3.8.0) re-sends every watch of
 * a handle in one SetWatches request when it reconnects, which past
 * jute.maxbuffer (1 MB: some 36,000 waiters of short paths) the servers
 * refuse on every reconnection until the lease runs out.  So a contender
 * takes its watches out of the client's tables now and sets them again
 * once reconnected (watch_again_step_locked): one getData each, the
 * request the SetWatches would have made for it. */
static void forget_watches_locked(zkrc__contender *c) {
  zkrc_conn *conn = zkrc__conn_use(c->s);
  if (conn == NULL)
    return;
  if (conn->generation == c->generation) {
    if (c->pred_watch)
      c->watch_again |= forget_watch_locked(
          conn, &c->pred_watch, g_strdup_printf("%s/%s", c->dir, c->pred),
          ZWATCHTYPE_DATA);
    if (c->dir_watch)
      c->watch_again |= forget_watch_locked(conn, &c->dir_watch,
                                            g_strdup(c->dir), ZWATCHTYPE_CHILD);
    if (c->own_watch && c->name_known)
      c->own_again |= forget_watch_locked(conn, &c->own_watch, zkrc__q_path(c),
                                          ZWATCHTYPE_DATA);
  }
  zkrc__conn_unuse(conn);
}

/* Reconnected after forget_watches_locked(): the watch a waiter keeps, set
 * again by reading what it watched (gone meanwhile: the usual reaction). */
static step watch_again_step_locked(zkrc__contender *c) {
  gboolean again = c->watch_again;
  c->watch_again = FALSE;
  if (!again || c->state != C_WAITING || c->withdrawing)
    return STEP_NONE;
  return c->watch_dir ? STEP_WATCH_DIR : STEP_WATCH_PRED;
}

/* What a session event means to contender @p c. */
static void on_session_event(zkrc__contender *c, zkrc_session_event_type ev,
                             uint64_t generation) {
  step next = STEP_NONE;
  gboolean arm_own = FALSE;
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
    } else if (ours && live) {
      next = watch_again_step_locked(c);
    }
    /* At the front the re-check arms it (zkrc__q_recheck_judge_locked). */
    arm_own = ours && c->own_again && c->state != C_FRONT;
    c->own_again = FALSE;
    break;
  case ZKRC__SESSION_EVENT_LEASED:
    if (ours && live && c->awaiting_lease && !c->withdrawing) {
      c->recover_needed = TRUE;
      next = STEP_RECOVER;
    }
    break;
  case ZKRC_SESSION_EVENT_SUSPENDED:
    if (ours && c->state == C_FRONT)
      zkrc__q_emit_locked(c, OUT_CONNECTION, ZKRC_SESSION_EVENT_SUSPENDED, 0);
    if (ours && live)
      forget_watches_locked(c);
    break;
  case ZKRC_SESSION_EVENT_EXPIRED:
    if (ours && live)
      zkrc__q_end_locked(c, ZKRC_ESESSIONEXPIRED, ZSESSIONEXPIRED, FALSE);
    break;
  case ZKRC_SESSION_EVENT_LOST:
    /* The servers may not have expired it yet: reap what we left. */
    if (ours && live)
      zkrc__q_end_locked(c, ZKRC_ESESSIONLOST, 0, TRUE);
    break;
  case ZKRC_SESSION_EVENT_AUTH_FAILED:
  case ZKRC_SESSION_EVENT_CLOSED:
    if (c->state != C_ENDED && c->state != C_NEW)
      zkrc__q_end_locked(
          c, ev == ZKRC_SESSION_EVENT_CLOSED ? ZKRC_ECLOSED : ZKRC_EAUTHFAILED,
          0, FALSE);
    break;
  }
  zkrc__q_unlock_and_perform(c, next);
  if (arm_own)
    zkrc__q_arm_own_watch(c);
}

/* The session's one observer for its contenders: tells each of them,
 * in the order they started, with a reference each (a contender that ends
 * meanwhile is told too, and ignores it: on_session_event). */
static void contenders_observer(zkrc_session *s, zkrc_session_event_type ev,
                                uint64_t generation, void *arg) {
  (void)arg;
  zkrc__session_queue *q = zkrc__session_queue_of(s);
  g_mutex_lock(&q->contenders_mu);
  GPtrArray *all = g_ptr_array_new();
  for (zkrc__contender *c = q->contenders; c; c = c->observed_next)
    g_ptr_array_add(all, zkrc__contender_ref(c));
  g_mutex_unlock(&q->contenders_mu);
  for (guint i = 0; i < all->len; i++) {
    zkrc__contender *c = g_ptr_array_index(all, i);
    on_session_event(c, ev, generation);
    zkrc__contender_unref(c);
  }
  g_ptr_array_free(all, TRUE);
}

gboolean zkrc__q_observe_locked(zkrc__contender *c) {
  zkrc_session *s = c->s;
  zkrc__session_queue *q = zkrc__session_queue_of(s);
  g_mutex_lock(&q->contenders_mu);
  if (q->contenders_observer == 0) /* the session's first contender */
    q->contenders_observer =
        zkrc__session_observe(s, contenders_observer, NULL, NULL);
  c->observed_prev = q->contenders_tail;
  c->observed_next = NULL;
  if (q->contenders_tail)
    q->contenders_tail->observed_next = c;
  else
    q->contenders = c;
  q->contenders_tail = zkrc__contender_ref(c); /* the list's reference */
  c->observed = TRUE;
  g_mutex_unlock(&q->contenders_mu);
  /* Closed before we were in the list (else the observer tells us). */
  return zkrc__session_closed(s);
}

void zkrc__q_unobserve_locked(zkrc__contender *c) {
  if (!c->observed)
    return;
  c->observed = FALSE;
  zkrc__session_queue *q = zkrc__session_queue_of(c->s);
  g_mutex_lock(&q->contenders_mu);
  if (c->observed_prev)
    c->observed_prev->observed_next = c->observed_next;
  else
    q->contenders = c->observed_next;
  if (c->observed_next)
    c->observed_next->observed_prev = c->observed_prev;
  else
    q->contenders_tail = c->observed_prev;
  c->observed_prev = c->observed_next = NULL;
  g_mutex_unlock(&q->contenders_mu);
  /* The list's reference is the caller's to drop (it holds another). */
}
