/*
 * The object runtime (object.h).
 */
#include "config.h"

#include "core/object.h"

void zkrc__object_init(zkrc__object *o, zkrc_executor executor,
                       void (*finalize)(zkrc__object *o)) {
  o->refs = 1;
  g_mutex_init(&o->mu);
  g_cond_init(&o->cond);
  o->executor = executor;
  o->finalize = finalize;
}

zkrc__object *zkrc__object_ref(zkrc__object *o) {
  g_atomic_int_inc(&o->refs);
  return o;
}

void zkrc__object_unref(zkrc__object *o) {
  if (o->own_unref) {
    o->own_unref(o);
    return;
  }
  if (!g_atomic_int_dec_and_test(&o->refs))
    return;
  g_mutex_clear(&o->mu);
  g_cond_clear(&o->cond);
  o->finalize(o); /* frees the object's memory too */
}

void *zkrc__object_event_new(size_t size,
                             void (*tell)(zkrc__object *o,
                                          zkrc__object_event *ev),
                             void (*release)(zkrc__object_event *ev)) {
  zkrc__object_event *ev = g_malloc0(size);
  ev->tell = tell;
  ev->release = release;
  return ev;
}

static void event_release(zkrc__object_event *ev) {
  if (ev->release)
    ev->release(ev);
  else
    g_free(ev);
}

/* ------------------------------------------------------------- telling */

/* One event, on the executor.  Each is posted by itself (not drained from
 * a queue of the object's): the executor's order is then the order in
 * which every object decided its events, across objects too. */
static void event_run(void *data) {
  zkrc__object_event *ev = data;
  zkrc__object *o = ev->o;
  g_mutex_lock(&o->mu);
  gboolean tell = !o->closed || ev->owed;
  GThread *outer = o->telling; /* an executor run from inside a callback */
  if (tell) {
    o->telling = g_thread_self();
    o->tellings++;
  }
  g_mutex_unlock(&o->mu);
  if (tell) {
    ev->tell(o, ev);
    g_mutex_lock(&o->mu);
    o->telling = outer;
    o->tellings--;
    g_cond_broadcast(&o->cond);
    g_mutex_unlock(&o->mu);
  }
  event_release(ev);
  g_atomic_int_add(&o->queued, -1);
  zkrc__object_unref(o);
}

void zkrc__object_tell_owed_locked(zkrc__object *o, zkrc__object_event *ev) {
  ev->owed = TRUE;
  ev->o = zkrc__object_ref(o);
  g_atomic_int_inc(&o->queued);
  o->executor.post(o->executor.ctx, event_run, ev);
}

void zkrc__object_tell_locked(zkrc__object *o, zkrc__object_event *ev) {
  if (o->closed) {
    event_release(ev);
    return;
  }
  ev->o = zkrc__object_ref(o);
  g_atomic_int_inc(&o->queued);
  o->executor.post(o->executor.ctx, event_run, ev);
}

typedef struct posted {
  zkrc__object *o;
  zkrc_callback_fn fn;
  void *arg;
} posted;

static void posted_run(void *data) {
  posted *p = data;
  p->fn(p->arg);
  zkrc__object_unref(p->o);
  g_free(p);
}

void zkrc__object_post_locked(zkrc__object *o, zkrc_callback_fn fn, void *arg) {
  posted *p = g_new(posted, 1);
  *p = (posted){zkrc__object_ref(o), fn, arg};
  o->executor.post(o->executor.ctx, posted_run, p);
}

static void pending_run(void *data) {
  posted *p = data;
  p->fn(p->arg);
  zkrc__object_idle(p->o);
  zkrc__object_unref(p->o);
  g_free(p);
}

void zkrc__object_post_pending_locked(zkrc__object *o, zkrc_callback_fn fn,
                                      void *arg) {
  zkrc__object_busy_locked(o);
  posted *p = g_new(posted, 1);
  *p = (posted){zkrc__object_ref(o), fn, arg};
  o->executor.post(o->executor.ctx, pending_run, p);
}

gboolean zkrc__object_in_callback_locked(const zkrc__object *o) {
  return o->telling == g_thread_self();
}

/* ------------------------------------------------------------- freeing */

void zkrc__object_close_locked(zkrc__object *o) {
  o->closed = TRUE;
  g_cond_broadcast(&o->cond);
  int mine = zkrc__object_in_callback_locked(o) ? 1 : 0;
  while (o->tellings > mine)
    g_cond_wait(&o->cond, &o->mu);
}

/* The last event of a detached object: after everything queued before it,
 * tell the application, which may then free what the callbacks use;
 * nothing is told after. */
static void freed_tell(zkrc__object *o, zkrc__object_event *ev) {
  (void)ev;
  g_mutex_lock(&o->mu);
  o->closed = TRUE; /* drop anything queued behind us */
  zkrc_callback_fn done = o->freed;
  void *arg = o->freed_arg;
  g_mutex_unlock(&o->mu);
  done(arg);
}

static void queue_freed_locked(zkrc__object *o) {
  if (o->freed_queued || o->pending > 0 || !o->detached)
    return;
  o->freed_queued = TRUE;
  zkrc__object_tell_locked(
      o, zkrc__object_event_new(sizeof(zkrc__object_event), freed_tell, NULL));
}

void zkrc__object_detach_locked(zkrc__object *o, zkrc_callback_fn done,
                                void *arg) {
  o->detached = TRUE;
  o->freed = done;
  o->freed_arg = arg;
  g_cond_broadcast(&o->cond);
  queue_freed_locked(o);
}

void zkrc__object_busy_locked(zkrc__object *o) { o->pending++; }

void zkrc__object_idle_locked(zkrc__object *o) {
  o->pending--;
  g_cond_broadcast(&o->cond);
  queue_freed_locked(o);
}

void zkrc__object_busy(zkrc__object *o) {
  g_mutex_lock(&o->mu);
  zkrc__object_busy_locked(o);
  g_mutex_unlock(&o->mu);
}

void zkrc__object_idle(zkrc__object *o) {
  g_mutex_lock(&o->mu);
  zkrc__object_idle_locked(o);
  g_mutex_unlock(&o->mu);
}
