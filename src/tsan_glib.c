/*
 * ThreadSanitizer and GLib: GLib's GMutex, GCond and GAsyncQueue are built
 * on raw futexes that TSan cannot see, and a GSource hands data to the
 * thread that dispatches it under GLib's own locks; so every handover
 * through them looks like a race.  This file interposes the GLib functions
 * the library and its tests call and tells TSan what they
 * synchronise (__tsan_acquire / __tsan_release on the object's address),
 * so that the reports that remain are real races.  It changes no
 * behaviour: every function calls GLib's own.
 *
 * Compiled into the library of a --enable-tsan build only (make
 * check-tsan); session.c refers to zkrc__tsan_glib so that every program
 * using a session links it and its definitions come before GLib's.
 */
#include "config.h"

#ifdef ZKRC_TSAN

#define _GNU_SOURCE 1
#include <stdlib.h>

#include <glib.h>
#include <sanitizer/tsan_interface.h>

#include "tsan_real.h"

int zkrc__tsan_glib = 1;

/* ------------------------------------------------------------- mutexes */

void g_mutex_lock(GMutex *m) {
  REAL(g_mutex_lock, void, (GMutex *));
  found_g_mutex_lock(m);
  __tsan_acquire(m);
}

gboolean g_mutex_trylock(GMutex *m) {
  REAL(g_mutex_trylock, gboolean, (GMutex *));
  gboolean got = found_g_mutex_trylock(m);
  if (got)
    __tsan_acquire(m);
  return got;
}

void g_mutex_unlock(GMutex *m) {
  REAL(g_mutex_unlock, void, (GMutex *));
  __tsan_release(m);
  found_g_mutex_unlock(m);
}

/* A wait lets the mutex go and takes it back. */
void g_cond_wait(GCond *c, GMutex *m) {
  REAL(g_cond_wait, void, (GCond *, GMutex *));
  __tsan_release(m);
  found_g_cond_wait(c, m);
  __tsan_acquire(m);
}

gboolean g_cond_wait_until(GCond *c, GMutex *m, gint64 end_time) {
  REAL(g_cond_wait_until, gboolean, (GCond *, GMutex *, gint64));
  __tsan_release(m);
  gboolean signalled = found_g_cond_wait_until(c, m, end_time);
  __tsan_acquire(m);
  return signalled;
}

/* --------------------------------------------------------- async queues */

void g_async_queue_push(GAsyncQueue *q, gpointer data) {
  REAL(g_async_queue_push, void, (GAsyncQueue *, gpointer));
  __tsan_release(q);
  found_g_async_queue_push(q, data);
}

gpointer g_async_queue_pop(GAsyncQueue *q) {
  REAL(g_async_queue_pop, gpointer, (GAsyncQueue *));
  gpointer data = found_g_async_queue_pop(q);
  __tsan_acquire(q);
  return data;
}

gpointer g_async_queue_try_pop(GAsyncQueue *q) {
  REAL(g_async_queue_try_pop, gpointer, (GAsyncQueue *));
  gpointer data = found_g_async_queue_try_pop(q);
  __tsan_acquire(q);
  return data;
}

gpointer g_async_queue_timeout_pop(GAsyncQueue *q, guint64 timeout) {
  REAL(g_async_queue_timeout_pop, gpointer, (GAsyncQueue *, guint64));
  gpointer data = found_g_async_queue_timeout_pop(q, timeout);
  __tsan_acquire(q);
  return data;
}

/* -------------------------------------------------------------- sources */

/* What a source's callback sees was written by whoever attached the source
 * or set its ready time, on another thread: hand it over through the
 * source's address.  The callback is wrapped so that it acquires first. */
typedef struct wrapped {
  GSourceFunc func;
  gpointer data;
  GDestroyNotify notify;
  GSource *source;
} wrapped;

static gboolean wrapped_call(gpointer p) {
  wrapped *w = p;
  __tsan_acquire(w); /* its fields first: w->source is one of them */
  __tsan_acquire(w->source);
  return w->func(w->data);
}

static void wrapped_free(gpointer p) {
  wrapped *w = p;
  if (w->notify)
    w->notify(w->data);
  g_free(w);
}

void g_source_set_callback(GSource *source, GSourceFunc func, gpointer data,
                           GDestroyNotify notify) {
  REAL(g_source_set_callback, void,
       (GSource *, GSourceFunc, gpointer, GDestroyNotify));
  wrapped *w = g_new(wrapped, 1);
  w->func = func;
  w->data = data;
  w->notify = notify;
  w->source = source;
  __tsan_release(w);
  __tsan_release(source);
  found_g_source_set_callback(source, wrapped_call, w, wrapped_free);
}

guint g_source_attach(GSource *source, GMainContext *context) {
  REAL(g_source_attach, guint, (GSource *, GMainContext *));
  __tsan_release(source);
  return found_g_source_attach(source, context);
}

void g_source_set_ready_time(GSource *source, gint64 ready_time) {
  REAL(g_source_set_ready_time, void, (GSource *, gint64));
  __tsan_release(source);
  found_g_source_set_ready_time(source, ready_time);
}

/* ------------------------------------------------------ slice allocator */

/* GLib's slice allocator takes pages from posix_memalign and carves them
 * into slices that it hands to any thread, under locks of its own; TSan
 * takes a page's allocation for a write by the thread that happened to
 * need it, so the first read of a slice that another thread got from the
 * page (a GPtrArray's length) was reported.  A block GLib allocates is
 * allocated without that write.  TSan's own posix_memalign (which this one
 * calls) is a weak definition, so every caller in the program gets this
 * one. */
int __interceptor_posix_memalign(void **out, size_t alignment, size_t size);
void __tsan_ignore_thread_begin(void);
void __tsan_ignore_thread_end(void);

/* Whether the code at @p addr is GLib's own. */
static gboolean from_glib(const void *addr) {
  static void *glib_base;
  void *base = __atomic_load_n(&glib_base, __ATOMIC_ACQUIRE);
  Dl_info info;
  if (base == NULL) {
    if (dladdr((void *)g_main_context_dispatch, &info) == 0)
      return FALSE;
    base = info.dli_fbase;
    __atomic_store_n(&glib_base, base, __ATOMIC_RELEASE);
  }
  return dladdr(addr, &info) != 0 && info.dli_fbase == base;
}

int posix_memalign(void **out, size_t alignment, size_t size) {
  if (!from_glib(__builtin_return_address(0)))
    return __interceptor_posix_memalign(out, alignment, size);
  __tsan_ignore_thread_begin(); /* an allocation now resets the block */
  int rc = __interceptor_posix_memalign(out, alignment, size);
  __tsan_ignore_thread_end();
  return rc;
}

#endif /* ZKRC_TSAN */

/* (A translation unit must declare something, TSan or not.) */
typedef int zkrc__tsan_glib_unused;
