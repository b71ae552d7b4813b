/*
 * The contender queue: the session's events.  One observer per session
 * tells every contender it started and that has not ended yet (not one
 * observer each: 100,000 held locks of a session would have 100,000
 * observers, each a table entry and an allocation).  The contenders are
 * linked through their observed_prev/observed_next, under the session's
 * contenders_mu (lock order: session_private.h).  See queue_private.h.
 */
#include "config.h"

#include "queue_private.h"
#include "session_private.h"

/* What a session event means to contender @p c. */
static void on_session_event(zkrc__contender *c, zkrc_session_event ev,
                             uint64_t generation) {
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
      zkrc__q_emit_locked(c, OUT_CONNECTION, ZKRC_SESSION_EVENT_SUSPENDED, 0);
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
}

/* The session's one observer for its contenders: tells each of them,
 * in the order they started, with a reference each (a contender that ends
 * meanwhile is told too, and ignores it: on_session_event). */
static void contenders_observer(zkrc_session *s, zkrc_session_event ev,
                                uint64_t generation, void *arg) {
  (void)arg;
  g_mutex_lock(&s->contenders_mu);
  GPtrArray *all = g_ptr_array_new();
  for (zkrc__contender *c = s->contenders; c; c = c->observed_next)
    g_ptr_array_add(all, zkrc__contender_ref(c));
  g_mutex_unlock(&s->contenders_mu);
  for (guint i = 0; i < all->len; i++) {
    zkrc__contender *c = g_ptr_array_index(all, i);
    on_session_event(c, ev, generation);
    zkrc__contender_unref(c);
  }
  g_ptr_array_free(all, TRUE);
}

gboolean zkrc__q_observe_locked(zkrc__contender *c) {
  zkrc_session *s = c->s;
  g_mutex_lock(&s->contenders_mu);
  if (s->contenders_observer == 0) /* the session's first contender */
    s->contenders_observer =
        zkrc__session_observe(s, contenders_observer, NULL, NULL);
  c->observed_prev = s->contenders_tail;
  c->observed_next = NULL;
  if (s->contenders_tail)
    s->contenders_tail->observed_next = c;
  else
    s->contenders = c;
  s->contenders_tail = zkrc__contender_ref(c); /* the list's reference */
  c->observed = TRUE;
  g_mutex_unlock(&s->contenders_mu);
  /* Closed before we were in the list (else the observer tells us). */
  return zkrc__session_closed(s);
}

void zkrc__q_unobserve_locked(zkrc__contender *c) {
  zkrc_session *s = c->s;
  if (!c->observed)
    return;
  c->observed = FALSE;
  g_mutex_lock(&s->contenders_mu);
  if (c->observed_prev)
    c->observed_prev->observed_next = c->observed_next;
  else
    s->contenders = c->observed_next;
  if (c->observed_next)
    c->observed_next->observed_prev = c->observed_prev;
  else
    s->contenders_tail = c->observed_prev;
  c->observed_prev = c->observed_next = NULL;
  g_mutex_unlock(&s->contenders_mu);
  /* The list's reference is the caller's to drop (it holds another). */
}
