/*
 * The object runtime: what every public object of the library (a session,
 * a lock, an election, a cache, a kept ephemeral node, a group, a
 * partitioner, a registration, a provider, a shared value's watch) is
 * built on, so that each is only its own state and policy.
 *
 *  - references: an object's memory outlives its free while requests in
 *    flight, timers and queued events still refer to it;
 *  - its mutex and condition (the first in the lock order of the object
 *    that embeds it: see session_private.h);
 *  - events for the application, told on the object's executor in the
 *    order the object decided them (under its mutex), never with a
 *    zkrecipes mutex held, and dropped once the object is being freed;
 *  - "is the application inside one of this object's callbacks now?"
 *    (a free from its own callback must not wait for that callback);
 *  - freeing at once (zkrc_X_free: closed, nothing more told, waits only
 *    for a callback running on another thread) and in the background
 *    (zkrc_X_free_async: detached, and its `done` told after everything
 *    queued before, once the work the object counted as pending ended).
 *
 * An object embeds a zkrc__object as its first member, calls
 * zkrc__object_init with its executor and a finalize function that frees
 * what it added (and its memory), and takes o->mu around its state.
 * Every function named *_locked is called with o->mu held.
 *
 * The executor is a plain zkrc_executor (zkrecipes/executor.h): the
 * session's (zkrc__session_executor, session_internal.h) for every object
 * built on a session; a test may give its own (tests/test_object.c).  Its
 * post() is called with o->mu held: the executor contract says it runs the
 * call later, never from inside post().
 */
#ifndef ZKRC_OBJECT_H
#define ZKRC_OBJECT_H

#include <glib.h>

#include "zkrecipes/executor.h"

typedef struct zkrc__object zkrc__object;
typedef struct zkrc__object_event zkrc__object_event;

struct zkrc__object {
  gint refs;
  GMutex mu;
  GCond cond;
  zkrc_executor executor;
  /* Its free was called: nothing more reaches the application. */
  gboolean closed;
  /* Its free_async was called: the object starts nothing new (it checks
   * zkrc__object_ending), and `freed` is told once pending is 0. */
  gboolean detached;
  gboolean freed_queued;
  int pending; /* work free_async waits for (zkrc__object_busy_locked) */
  zkrc_callback_fn freed;
  void *freed_arg;
  /* The thread telling one of this object's events now (NULL if none),
   * and how many tells are running (executors run one call at a time, so
   * 0 or 1; counted so that a free never misses one). */
  GThread *telling;
  int tellings;
  /* Events queued and not yet run (atomic; each holds a reference): the
   * session's close tells them from the references that go by
   * themselves. */
  gint queued;
  /* Frees what the object added (and its memory), after the last
   * reference went; o->mu and o->cond are cleared by then. */
  void (*finalize)(zkrc__object *o);
  /* An object whose references have a protocol of their own (the
   * session: its close waits for them to go) sets this; every
   * zkrc__object_unref() then calls it instead, and it clears o->mu and
   * o->cond itself. */
  void (*own_unref)(zkrc__object *o);
};

/* An event for the application: the object's own event record embeds this
 * first.  tell() runs on the executor without any mutex held, unless the
 * object was closed before (then only release() runs); release() frees
 * the record (NULL: g_free). */
struct zkrc__object_event {
  zkrc__object *o; /* referenced while the event is queued */
  void (*tell)(zkrc__object *o, zkrc__object_event *ev);
  void (*release)(zkrc__object_event *ev);
  /* Told also once the object is closed (zkrc__object_tell_owed_locked). */
  gboolean owed;
};

/* @p o (zeroed by its owner) gets one reference, the caller's. */
void zkrc__object_init(zkrc__object *o, zkrc_executor executor,
                       void (*finalize)(zkrc__object *o));

zkrc__object *zkrc__object_ref(zkrc__object *o);
void zkrc__object_unref(zkrc__object *o);

/* A new event record of @p size bytes (zeroed; a zkrc__object_event first)
 * that tells with @p tell and is freed by @p release (NULL: g_free). */
void *zkrc__object_event_new(size_t size,
                             void (*tell)(zkrc__object *o,
                                          zkrc__object_event *ev),
                             void (*release)(zkrc__object_event *ev));

/* Queue @p ev (taken over) to be told on the executor after everything
 * queued before it; released at once when the object is closed. */
void zkrc__object_tell_locked(zkrc__object *o, zkrc__object_event *ev);

/* Queue @p ev (taken over) as zkrc__object_tell_locked() does, but told
 * also once the object is closed: an answer owed exactly once to a caller
 * (the completion of an asynchronous call, which then says it was
 * cancelled; its tell sees o->closed under o->mu).  A free from another
 * thread waits for it only while it runs, as for any tell.  free_async's
 * done comes after it when it was queued before the pending work it
 * belongs to ended. */
void zkrc__object_tell_owed_locked(zkrc__object *o, zkrc__object_event *ev);

/* Run @p fn(@p arg) on the executor after everything queued before, with
 * a reference on @p o held meanwhile, closed or not: the object's own
 * work (a last reference to drop behind its events), never the
 * application's. */
void zkrc__object_post_locked(zkrc__object *o, zkrc_callback_fn fn, void *arg);

/* zkrc__object_post_locked, as work that free_async waits for: busy now,
 * idle once @p fn returned (a member object freed on the executor, where
 * none of its callbacks can be running on another thread). */
void zkrc__object_post_pending_locked(zkrc__object *o, zkrc_callback_fn fn,
                                      void *arg);

/* Is the calling thread inside one of @p o's callbacks (its tell)? */
gboolean zkrc__object_in_callback_locked(const zkrc__object *o);

/* Is the object being freed, at once or in the background? */
static inline gboolean zkrc__object_ending(const zkrc__object *o) {
  return o->closed || o->detached;
}

/* The object's free: closed (nothing queued or queued later is told),
 * waiters woken to see it, and back once no other thread is inside one of
 * its callbacks (a free from the object's own callback does not wait for
 * itself).  The caller then gives up what the object holds and drops its
 * reference. */
void zkrc__object_close_locked(zkrc__object *o);

/* The object's free_async: detached (waiters woken), and @p done told
 * with @p arg on the executor once no pending work is left (at once if
 * none is), behind what was queued before; nothing queued after it is
 * told.  The caller then gives up what the object holds without waiting
 * and drops its reference. */
void zkrc__object_detach_locked(zkrc__object *o, zkrc_callback_fn done,
                                void *arg);

/* Work that free_async waits for (a contender that has not ended, a
 * delete in flight) begins, and ends. */
void zkrc__object_busy_locked(zkrc__object *o);
void zkrc__object_idle_locked(zkrc__object *o);

/* Both, taking o->mu. */
void zkrc__object_busy(zkrc__object *o);
void zkrc__object_idle(zkrc__object *o);

#endif /* ZKRC_OBJECT_H */
