/*
 * An object's events for the application, told in order on the session's
 * executor and never with the object's mutex held: the object queues them
 * under its mutex (the order it decided them in), and one drain at a time,
 * posted to the executor, tells them.  Used by objects that are not
 * recipes on the contender queue (caches, kept ephemeral nodes); those use
 * zkrc__recipe_post (recipe.h).
 *
 * Every function is called with the owner's mutex held, except
 * zkrc__evq_drain(), which takes it.
 */
#ifndef ZKRC_EVQ_H
#define ZKRC_EVQ_H

#include <glib.h>

typedef struct zkrc__evq {
  GQueue events;        /* waiting to be told */
  gboolean posted;      /* a drain is posted and has not finished */
  gboolean closed;      /* the owner is being freed: tell nothing more */
  GThread *dispatching; /* the thread telling an event now */
  void (*tell)(void *owner, void *event); /* the application's callback */
  void (*free_event)(void *event);
} zkrc__evq;

void zkrc__evq_init(zkrc__evq *q, void (*tell)(void *owner, void *event),
                    void (*free_event)(void *event));

/* Queue @p event (taken over; freed at once when closed).  TRUE when the
 * caller must post a drain (zkrc__evq_drain, with a reference on the
 * owner) once it has let the mutex go. */
gboolean zkrc__evq_push(zkrc__evq *q, void *event);

/* The drain's body, on the executor: tells the waiting events in order,
 * letting @p mu go around each, until none is left or the queue is closed.
 * Broadcasts @p cond after each. */
void zkrc__evq_drain(zkrc__evq *q, GMutex *mu, GCond *cond, void *owner);

/* The owner's free: close the queue, free what waits, and wait (on
 * @p cond) until no other thread is telling an event. */
void zkrc__evq_close(zkrc__evq *q, GMutex *mu, GCond *cond);

#endif /* ZKRC_EVQ_H */
