/*
 * White-box stalls for tests that link the core (test_runner,
 * test_election): a job that holds a session's executor until opened (the
 * events queued behind it wait meanwhile: a slow executor), and a session
 * lease started again from its renewals with no loss (for a while the
 * session has none, as after a long stall).
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef ZKT_STALL_H
#define ZKT_STALL_H

#include <glib.h>

#include "core/object.h"
#include "session/session_private.h"

typedef struct gate {
  GMutex mu;
  GCond cond;
  int in, open;
} gate;

static inline void gate_fn(void *arg) {
  gate *g = arg;
  g_mutex_lock(&g->mu);
  g->in = 1;
  g_cond_broadcast(&g->cond);
  while (!g->open)
    g_cond_wait(&g->cond, &g->mu);
  g_mutex_unlock(&g->mu);
}

/* For zkt_wait_for(): is the gate holding the executor now? */
static inline int gate_entered(void *arg) {
  gate *g = arg;
  g_mutex_lock(&g->mu);
  int in = g->in;
  g_mutex_unlock(&g->mu);
  return in;
}

static inline void gate_open(gate *g) {
  g_mutex_lock(&g->mu);
  g->open = 1;
  g_cond_broadcast(&g->cond);
  g_mutex_unlock(&g->mu);
}

static inline void lease_restart(zkrc_session *s) {
  g_mutex_lock(&s->o.mu);
  s->lease.established = FALSE;
  s->lease.deadline = 0;
  g_mutex_unlock(&s->o.mu);
}

#endif
