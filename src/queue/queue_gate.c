/*
 * The session's gate on contenders entering their queues: see
 * queue_gate.h for why.  A contender takes a slot when it starts, or
 * waits in the session's line for one; it gives the slot back once it is
 * past its first look at the queue (waiting, at the front, or ended).
 * The slot's state is c->gate, under the gate's mutex (GATE_DONE, final,
 * may be read without it).
 */
#include "config.h"

#include "queue/queue_gate.h"
#include "queue/queue_private.h"

/* Append @p c to the line (it brings the line's reference); g->mu held. */
static void line_push_locked(zkrc__gate *g, zkrc__contender *c) {
  c->gate_prev = g->tail;
  c->gate_next = NULL;
  if (g->tail)
    g->tail->gate_next = c;
  else
    g->head = c;
  g->tail = c;
}

/* Take @p c out of the line (the caller gets the line's reference);
 * g->mu held. */
static void line_remove_locked(zkrc__gate *g, zkrc__contender *c) {
  if (c->gate_prev)
    c->gate_prev->gate_next = c->gate_next;
  else
    g->head = c->gate_next;
  if (c->gate_next)
    c->gate_next->gate_prev = c->gate_prev;
  else
    g->tail = c->gate_prev;
  c->gate_prev = c->gate_next = NULL;
}

void zkrc__gate_set_limit(zkrc_session *s, int limit) {
  zkrc__gate *g = &zkrc__session_queue_of(s)->gate;
  g_mutex_lock(&g->mu);
  g->limit = limit > 0 ? limit : 0;
  g_mutex_unlock(&g->mu);
}

/* A starting contender takes a slot (TRUE: it may send its create now),
 * or waits in line (FALSE: the gate starts it later). */
gboolean zkrc__q_gate_enter(zkrc__contender *c) {
  zkrc__gate *g = &zkrc__session_queue_of(c->s)->gate;
  g_mutex_lock(&c->mu); /* contender -> gate */
  gboolean ended = c->state == C_ENDED;
  g_mutex_lock(&g->mu);
  gboolean go = FALSE;
  if (ended || g->limit == 0) {
    g_atomic_int_set(&c->gate, GATE_DONE);
    go = !ended;
  } else if (g->busy < g->limit && g->head == NULL) {
    g->busy++;
    g_atomic_int_set(&c->gate, GATE_HOLDING);
    go = TRUE;
  } else {
    g_atomic_int_set(&c->gate, GATE_WAITING);
    line_push_locked(g, zkrc__contender_ref(c)); /* the line's */
  }
  g_mutex_unlock(&g->mu);
  g_mutex_unlock(&c->mu);
  return go;
}

/* May the contender send a create?  Not while it waits in line, nor
 * before it came to the gate. */
gboolean zkrc__q_gate_passed(zkrc__contender *c) {
  int gate = g_atomic_int_get(&c->gate);
  return gate == GATE_HOLDING || gate == GATE_DONE;
}

/* Let waiting contenders in while slots are free, in their order.  One
 * thread at a time does it; a slot freed meanwhile is seen by its loop. */
static void pump(zkrc__gate *g) {
  g_mutex_lock(&g->mu);
  if (g->pumping) {
    g_mutex_unlock(&g->mu);
    return;
  }
  g->pumping = TRUE;
  for (;;) {
    zkrc__contender *c = g->busy < g->limit || g->limit == 0 ? g->head : NULL;
    if (c == NULL)
      break;
    line_remove_locked(g, c);
    g->busy++;
    g_atomic_int_set(&c->gate, GATE_HOLDING);
    g_mutex_unlock(&g->mu);
    zkrc__q_perform(c, STEP_SEND_CREATE); /* nothing if it withdrew */
    zkrc__q_gate_settle(c);
    zkrc__contender_unref(c); /* the line's */
    g_mutex_lock(&g->mu);
  }
  g->pumping = FALSE;
  g_mutex_unlock(&g->mu);
}

/* Called at the end of every handler (zkrc__q_deliver), with no mutex
 * held: give the slot back once the contender is past its first look at
 * the queue, or leave the line once it ended there. */
void zkrc__q_gate_settle(zkrc__contender *c) {
  int gate = g_atomic_int_get(&c->gate);
  if (gate == GATE_NONE || gate == GATE_DONE)
    return;
  g_mutex_lock(&c->mu);
  cstate st = c->state;
  g_mutex_unlock(&c->mu);
  zkrc__gate *g = &zkrc__session_queue_of(c->s)->gate;
  gboolean freed = FALSE, left = FALSE;
  g_mutex_lock(&g->mu);
  gate = c->gate;
  if (gate == GATE_HOLDING && st != C_PENDING && st != C_CREATING) {
    g_atomic_int_set(&c->gate, GATE_DONE);
    g->busy--;
    freed = TRUE;
  } else if (gate == GATE_WAITING && st == C_ENDED) {
    line_remove_locked(g, c);
    g_atomic_int_set(&c->gate, GATE_DONE);
    left = TRUE;
  }
  g_mutex_unlock(&g->mu);
  if (left)
    zkrc__contender_unref(c); /* the line's (the caller holds another) */
  if (freed)
    pump(g);
}
