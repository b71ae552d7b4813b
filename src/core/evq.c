/*
 * Events told in order on the executor (evq.h).
 */
#include "config.h"

#include "core/evq.h"

void zkrc__evq_init(zkrc__evq *q, void (*tell)(void *owner, void *event),
                    void (*free_event)(void *event)) {
  g_queue_init(&q->events);
  q->posted = q->closed = FALSE;
  q->dispatching = NULL;
  q->tell = tell;
  q->free_event = free_event;
}

gboolean zkrc__evq_push(zkrc__evq *q, void *event) {
  if (q->closed) {
    q->free_event(event);
    return FALSE;
  }
  g_queue_push_tail(&q->events, event);
  if (q->posted)
    return FALSE;
  q->posted = TRUE;
  return TRUE;
}

void zkrc__evq_drain(zkrc__evq *q, GMutex *mu, GCond *cond, void *owner) {
  g_mutex_lock(mu);
  void *event;
  while (!q->closed && (event = g_queue_pop_head(&q->events)) != NULL) {
    q->dispatching = g_thread_self();
    g_mutex_unlock(mu);
    q->tell(owner, event);
    q->free_event(event);
    g_mutex_lock(mu);
    q->dispatching = NULL;
    g_cond_broadcast(cond);
  }
  q->posted = FALSE;
  g_mutex_unlock(mu);
}

void zkrc__evq_close(zkrc__evq *q, GMutex *mu, GCond *cond) {
  q->closed = TRUE;
  g_queue_clear_full(&q->events, q->free_event);
  /* Freeing from the application's own callback is allowed. */
  while (q->dispatching && q->dispatching != g_thread_self())
    g_cond_wait(cond, mu);
}
