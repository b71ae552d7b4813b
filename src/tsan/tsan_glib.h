/*
 * ThreadSanitizer and GLib: GLib's GMutex, GCond and GAsyncQueue are built
 * on raw futexes that TSan cannot see (GLib is not instrumented), and a
 * GSource hands data to the thread that dispatches it under GLib's own
 * locks; so every handover through them would look like a race.  In a
 * --enable-tsan build this header is included before anything else in
 * every file of src/ and tests/ (configure's TSAN_CPPFLAGS, -include), and
 * makes the calls of those files to the GLib functions below calls to
 * wrappers that call GLib's own and tell TSan what they synchronise
 * (__tsan_acquire / __tsan_release on the object's address).  It changes
 * no behaviour, interposes nothing (GLib's own calls inside itself are as
 * they are) and exports nothing: the wrappers are static inline functions,
 * and the macros that name them are function-like, defined after
 * <glib.h>'s declarations.  Other builds never include it.
 */
#ifndef ZKRC_TSAN_GLIB_H
#define ZKRC_TSAN_GLIB_H

#if defined(ZKRC_TSAN) && defined(__has_include)
#if __has_include(<glib.h>)

/* Before any system header, as config.h would (AC_USE_SYSTEM_EXTENSIONS):
 * this header comes first. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <glib.h>
#include <sanitizer/tsan_interface.h>

/* ------------------------------------------------------------- mutexes */

static inline void zkrc__tsan_mutex_lock(GMutex *m) {
  g_mutex_lock(m);
  __tsan_acquire(m);
}

static inline gboolean zkrc__tsan_mutex_trylock(GMutex *m) {
  gboolean got = g_mutex_trylock(m);
  if (got)
    __tsan_acquire(m);
  return got;
}

static inline void zkrc__tsan_mutex_unlock(GMutex *m) {
  __tsan_release(m);
  g_mutex_unlock(m);
}

/* A wait lets the mutex go and takes it back. */
static inline void zkrc__tsan_cond_wait(GCond *c, GMutex *m) {
  __tsan_release(m);
  g_cond_wait(c, m);
  __tsan_acquire(m);
}

static inline gboolean zkrc__tsan_cond_wait_until(GCond *c, GMutex *m,
                                                  gint64 end_time) {
  __tsan_release(m);
  gboolean signalled = g_cond_wait_until(c, m, end_time);
  __tsan_acquire(m);
  return signalled;
}

/* --------------------------------------------------------- async queues */

static inline void zkrc__tsan_async_queue_push(GAsyncQueue *q, gpointer data) {
  __tsan_release(q);
  g_async_queue_push(q, data);
}

static inline gpointer zkrc__tsan_async_queue_pop(GAsyncQueue *q) {
  gpointer data = g_async_queue_pop(q);
  __tsan_acquire(q);
  return data;
}

static inline gpointer zkrc__tsan_async_queue_try_pop(GAsyncQueue *q) {
  gpointer data = g_async_queue_try_pop(q);
  __tsan_acquire(q);
  return data;
}

static inline gpointer zkrc__tsan_async_queue_timeout_pop(GAsyncQueue *q,
                                                          guint64 timeout) {
  gpointer data = g_async_queue_timeout_pop(q, timeout);
  __tsan_acquire(q);
  return data;
}

/* -------------------------------------------------------------- sources */

/* What a source's callback sees was written by whoever attached the source
 * or set its ready time, on another thread: hand it over through the
 * source's address.  The callback is wrapped so that it acquires first. */
typedef struct zkrc__tsan_wrapped {
  GSourceFunc func;
  gpointer data;
  GDestroyNotify notify;
  GSource *source;
} zkrc__tsan_wrapped;

static inline gboolean zkrc__tsan_wrapped_call(gpointer p) {
  zkrc__tsan_wrapped *w = p;
  __tsan_acquire(w); /* its fields first: w->source is one of them */
  __tsan_acquire(w->source);
  return w->func(w->data);
}

static inline void zkrc__tsan_wrapped_free(gpointer p) {
  zkrc__tsan_wrapped *w = p;
  if (w->notify)
    w->notify(w->data);
  g_free(w);
}

static inline void zkrc__tsan_source_set_callback(GSource *source,
                                                  GSourceFunc func,
                                                  gpointer data,
                                                  GDestroyNotify notify) {
  zkrc__tsan_wrapped *w = g_new(zkrc__tsan_wrapped, 1);
  w->func = func;
  w->data = data;
  w->notify = notify;
  w->source = source;
  __tsan_release(w);
  __tsan_release(source);
  g_source_set_callback(source, zkrc__tsan_wrapped_call, w,
                        zkrc__tsan_wrapped_free);
}

/* TSan's dynamic annotations (exported by its runtime, declared by no
 * header of clang 14). */
void AnnotateIgnoreReadsBegin(const char *file, int line);
void AnnotateIgnoreReadsEnd(const char *file, int line);
void AnnotateIgnoreWritesBegin(const char *file, int line);
void AnnotateIgnoreWritesEnd(const char *file, int line);

/* Attaching a source to, or destroying one of, a context another thread
 * runs resizes that context's arrays under the context's own lock, which
 * TSan cannot see (GLib is not instrumented): its allocations are GLib's
 * business, not ours, and are not checked.  What the source hands over is
 * (the release before, the wrapped callback's acquire). */
#define ZKRC__TSAN_GLIB_INTERNAL(call)                                         \
  do {                                                                         \
    AnnotateIgnoreReadsBegin(__FILE__, __LINE__);                              \
    AnnotateIgnoreWritesBegin(__FILE__, __LINE__);                             \
    call;                                                                      \
    AnnotateIgnoreWritesEnd(__FILE__, __LINE__);                               \
    AnnotateIgnoreReadsEnd(__FILE__, __LINE__);                                \
  } while (0)

static inline guint zkrc__tsan_source_attach(GSource *source,
                                             GMainContext *context) {
  __tsan_release(source);
  guint id = 0;
  ZKRC__TSAN_GLIB_INTERNAL(id = g_source_attach(source, context));
  return id;
}

static inline void zkrc__tsan_source_destroy(GSource *source) {
  ZKRC__TSAN_GLIB_INTERNAL(g_source_destroy(source));
}

static inline void zkrc__tsan_source_set_ready_time(GSource *source,
                                                    gint64 ready_time) {
  __tsan_release(source);
  g_source_set_ready_time(source, ready_time);
}

#define g_mutex_lock(m) zkrc__tsan_mutex_lock(m)
#define g_mutex_trylock(m) zkrc__tsan_mutex_trylock(m)
#define g_mutex_unlock(m) zkrc__tsan_mutex_unlock(m)
#define g_cond_wait(c, m) zkrc__tsan_cond_wait(c, m)
#define g_cond_wait_until(c, m, t) zkrc__tsan_cond_wait_until(c, m, t)
#define g_async_queue_push(q, d) zkrc__tsan_async_queue_push(q, d)
#define g_async_queue_pop(q) zkrc__tsan_async_queue_pop(q)
#define g_async_queue_try_pop(q) zkrc__tsan_async_queue_try_pop(q)
#define g_async_queue_timeout_pop(q, t) zkrc__tsan_async_queue_timeout_pop(q, t)
#define g_source_set_callback(s, f, d, n)                                      \
  zkrc__tsan_source_set_callback(s, f, d, n)
#define g_source_attach(s, c) zkrc__tsan_source_attach(s, c)
#define g_source_destroy(s) zkrc__tsan_source_destroy(s)
#define g_source_set_ready_time(s, t) zkrc__tsan_source_set_ready_time(s, t)

#endif /* __has_include(<glib.h>) */
#endif /* ZKRC_TSAN */

#endif /* ZKRC_TSAN_GLIB_H */
