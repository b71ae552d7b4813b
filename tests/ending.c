/*
 * An object freed with its free_async, as the tests see it (ending.h).
 */
#include "config.h"

#include "ending.h"

zkt_ending *zkt_ending_new(gboolean free_in_callback) {
  zkt_ending *e = g_new0(zkt_ending, 1);
  g_mutex_init(&e->mu);
  g_cond_init(&e->cond);
  e->free_in_callback = free_in_callback;
  return e;
}

void zkt_ending_free(zkt_ending *e) {
  g_mutex_clear(&e->mu);
  g_cond_clear(&e->cond);
  g_free(e);
}

void zkt_ending_done(void *arg) {
  zkt_ending *e = arg;
  g_mutex_lock(&e->mu);
  e->done = TRUE;
  e->done_after_callback = e->callback_over;
  g_cond_broadcast(&e->cond);
  g_mutex_unlock(&e->mu);
}

gboolean zkt_ending_event(zkt_ending *e, gboolean trigger) {
  g_mutex_lock(&e->mu);
  e->events++;
  if (e->done)
    e->after_done++;
  gboolean free_now = trigger && e->free_in_callback && e->triggers == 0;
  if (trigger)
    e->triggers++;
  g_cond_broadcast(&e->cond);
  g_mutex_unlock(&e->mu);
  return free_now;
}

void zkt_ending_freed(zkt_ending *e, int rc) {
  g_mutex_lock(&e->mu);
  e->free_rc = rc;
  e->callback_over = TRUE; /* done comes after this */
  g_cond_broadcast(&e->cond);
  g_mutex_unlock(&e->mu);
}

int zkt_ending_triggered(void *arg) {
  zkt_ending *e = arg;
  g_mutex_lock(&e->mu);
  int n = e->triggers;
  g_mutex_unlock(&e->mu);
  return n > 0;
}

int zkt_ending_wait_done(zkt_ending *e, int timeout_ms) {
  int64_t deadline =
      g_get_monotonic_time() + timeout_ms * G_TIME_SPAN_MILLISECOND;
  g_mutex_lock(&e->mu);
  while (!e->done && g_cond_wait_until(&e->cond, &e->mu, deadline))
    ;
  int done = e->done;
  g_mutex_unlock(&e->mu);
  return done;
}
