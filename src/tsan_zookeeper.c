/*
 * ThreadSanitizer and libzookeeper_mt: tests/tsan.supp makes TSan ignore
 * what the (uninstrumented) client does inside itself, its mutexes
 * included (called_from_lib); so TSan no longer sees how a request queued
 * on our thread reaches the client's completion thread, and everything we
 * wrote before a zoo_a* call and read in its completion looks like a race.
 * This file interposes the client functions that take a callback and makes
 * the hand-off visible: the call releases on a small record that carries
 * the callback, and the client calls a trampoline of ours that acquires
 * on that record before it calls the real callback.  It changes no
 * behaviour: every function calls the client's own, with the same
 * arguments apart from the callback and its data.
 *
 *  - A completion runs exactly once (with ZCLOSING when the handle
 *    closes), or never when the call fails at once: its record is freed
 *    when it runs, or when the call fails.
 *  - A watch's watcher may run several times (session events reach every
 *    watch) and the client keeps one registration per (watcher, context)
 *    pair: the record is the pair's, interned per handle, so that the
 *    client still sees one pair; it lives until the handle is closed.
 *  - The global watcher and the context are the handle's context: a
 *    record of (watcher, context), replaced (never changed) by
 *    zoo_set_watcher and zoo_set_context, since a watch set with watch=1
 *    keeps the pair current when it was set; zoo_get_context returns the
 *    caller's context.  They live until the handle is closed.
 *
 * The client calls its own asynchronous functions (zoo_get calls zoo_awget
 * with its marker as the completion, zoo_aget passes on what our zoo_aget
 * has already wrapped): a call from inside the client keeps its
 * completion as it is.
 *
 * Compiled into the library of a --enable-tsan build only (make
 * check-tsan); session.c refers to zkrc__tsan_zookeeper so that every
 * program using a session links it and its definitions come before the
 * client's.  Every handle must be made by zookeeper_init or
 * zookeeper_init2 (the client's other constructors are not interposed).
 */
#include "config.h"

#ifdef ZKRC_TSAN

#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include <glib.h>
#include <sanitizer/tsan_interface.h>
#include <zookeeper/zookeeper.h>

#include "tsan_real.h"

int zkrc__tsan_zookeeper = 1;

/* How many of our trampolines this thread is in (a close from inside a
 * callback must not free what the client may still call). */
static _Thread_local int in_callback;

/* Whether the code at @p addr is the client's own. */
static int from_client(const void *addr) {
  static void *client_base;
  void *base = __atomic_load_n(&client_base, __ATOMIC_ACQUIRE);
  Dl_info info;
  if (base == NULL) {
    void *client_fn = dlsym(RTLD_NEXT, "zoo_async");
    if (client_fn == NULL || dladdr(client_fn, &info) == 0)
      return 0;
    base = info.dli_fbase;
    __atomic_store_n(&client_base, base, __ATOMIC_RELEASE);
  }
  return dladdr(addr, &info) != 0 && info.dli_fbase == base;
}

/* ---------------------------------------------------------- completions */

typedef union any_completion {
  void_completion_t v;
  stat_completion_t stat;
  data_completion_t data;
  strings_completion_t strings;
  strings_stat_completion_t strings_stat;
  string_completion_t string;
  string_stat_completion_t string_stat;
} any_completion;

typedef struct handoff {
  any_completion fn;
  const void *data;
} handoff;

static handoff *handoff_new(any_completion fn, const void *data) {
  handoff *h = malloc(sizeof *h);
  if (h == NULL)
    abort();
  h->fn = fn;
  h->data = data;
  __tsan_release(h);
  return h;
}

/* The completion the client calls now (once): freed, returned by value. */
static handoff handoff_take(const void *p) {
  handoff *h = (handoff *)p;
  __tsan_acquire(h);
  handoff copy = *h;
  free(h);
  return copy;
}

/* After the client's call: a call that failed at once never completes,
 * except that a request the client could not marshal may have been queued
 * all the same (then the record is left, rather than freed too early). */
static void handoff_after(handoff *h, int rc) {
  if (h != NULL && rc != ZOK && rc != ZMARSHALLINGERROR)
    free(h);
}

static void void_done(int rc, const void *p) {
  handoff h = handoff_take(p);
  in_callback++;
  h.fn.v(rc, h.data);
  in_callback--;
}

static void stat_done(int rc, const struct Stat *stat, const void *p) {
  handoff h = handoff_take(p);
  in_callback++;
  h.fn.stat(rc, stat, h.data);
  in_callback--;
}

static void data_done(int rc, const char *value, int value_len,
                      const struct Stat *stat, const void *p) {
  handoff h = handoff_take(p);
  in_callback++;
  h.fn.data(rc, value, value_len, stat, h.data);
  in_callback--;
}

static void strings_done(int rc, const struct String_vector *strings,
                         const void *p) {
  handoff h = handoff_take(p);
  in_callback++;
  h.fn.strings(rc, strings, h.data);
  in_callback--;
}

static void strings_stat_done(int rc, const struct String_vector *strings,
                              const struct Stat *stat, const void *p) {
  handoff h = handoff_take(p);
  in_callback++;
  h.fn.strings_stat(rc, strings, stat, h.data);
  in_callback--;
}

static void string_done(int rc, const char *value, const void *p) {
  handoff h = handoff_take(p);
  in_callback++;
  h.fn.string(rc, value, h.data);
  in_callback--;
}

static void string_stat_done(int rc, const char *value, const struct Stat *stat,
                             const void *p) {
  handoff h = handoff_take(p);
  in_callback++;
  h.fn.string_stat(rc, value, stat, h.data);
  in_callback--;
}

/* In an interposed function whose completion argument is @p fn (of union
 * member @p kind) with data @p data: unless the client calls itself,
 * replace them by trampoline @p tramp and a record; declares handoff *h. */
#define WRAP_COMPLETION(kind, fn, data, tramp)                                 \
  handoff *h = NULL;                                                           \
  if ((fn) != NULL && !from_client(__builtin_return_address(0))) {             \
    h = handoff_new((any_completion){.kind = (fn)}, (data));                   \
    (fn) = (tramp);                                                            \
    (data) = h;                                                                \
  }

/* -------------------------------------------------------------- watches */

typedef struct watch {
  zhandle_t *zh;
  watcher_fn fn;
  void *ctx;
} watch;

static pthread_mutex_t watches_lock = PTHREAD_MUTEX_INITIALIZER;
static GHashTable *watches; /* of watch *, its own key; under watches_lock */

static guint watch_hash(gconstpointer p) {
  const watch *w = p;
  return g_direct_hash(w->zh) ^ (g_direct_hash(w->ctx) * 31u) ^
         (guint)((uintptr_t)w->fn * 17u);
}

static gboolean watch_equal(gconstpointer a, gconstpointer b) {
  const watch *x = a, *y = b;
  return x->zh == y->zh && x->fn == y->fn && x->ctx == y->ctx;
}

static void watch_call(zhandle_t *zh, int type, int state, const char *path,
                       void *p) {
  watch *w = p;
  __tsan_acquire(w);
  in_callback++;
  w->fn(zh, type, state, path, w->ctx);
  in_callback--;
}

/* The record of (@p fn, @p ctx) on @p zh, made the first time. */
static watch *watch_intern(zhandle_t *zh, watcher_fn fn, void *ctx) {
  watch key = {zh, fn, ctx};
  pthread_mutex_lock(&watches_lock);
  if (watches == NULL)
    watches = g_hash_table_new_full(watch_hash, watch_equal, free, NULL);
  watch *w = g_hash_table_lookup(watches, &key);
  if (w == NULL) {
    w = malloc(sizeof *w);
    if (w == NULL)
      abort();
    *w = key;
    g_hash_table_add(watches, w);
  }
  pthread_mutex_unlock(&watches_lock);
  __tsan_release(w);
  return w;
}

static gboolean watch_of(gpointer key, gpointer value, gpointer zh) {
  (void)value;
  return ((watch *)key)->zh == zh;
}

static void watches_forget(zhandle_t *zh) {
  pthread_mutex_lock(&watches_lock);
  if (watches != NULL)
    g_hash_table_foreach_remove(watches, watch_of, zh);
  pthread_mutex_unlock(&watches_lock);
}

static void global_call(zhandle_t *zh, int type, int state, const char *path,
                        void *p);

/* In an interposed function whose watcher argument is @p fn with context
 * @p ctx: replace them by watch_call and the pair's record. */
#define WRAP_WATCHER(zh, fn, ctx)                                              \
  if ((zh) != NULL && (fn) != NULL && (fn) != watch_call &&                    \
      (fn) != global_call) {                                                   \
    (ctx) = watch_intern((zh), (fn), (ctx));                                   \
    (fn) = watch_call;                                                         \
  }

/* ------------------------------------------- global watcher and context */

typedef struct global {
  watcher_fn fn; /* NULL: none (the client's own does nothing) */
  void *ctx;
  struct global *older; /* replaced, still referred to by watches */
} global;

static global *global_new(watcher_fn fn, void *ctx, global *older) {
  global *g = malloc(sizeof *g);
  if (g == NULL)
    abort();
  g->fn = fn;
  g->ctx = ctx;
  g->older = older;
  __tsan_release(g);
  return g;
}

static void global_call(zhandle_t *zh, int type, int state, const char *path,
                        void *p) {
  global *g = p;
  __tsan_acquire(g);
  if (g->fn == NULL)
    return;
  in_callback++;
  g->fn(zh, type, state, path, g->ctx);
  in_callback--;
}

/* The record that is @p zh's context. */
static global *global_of(zhandle_t *zh) {
  REAL(zoo_get_context, const void *, (zhandle_t *));
  global *g = (global *)found_zoo_get_context(zh);
  __tsan_acquire(g);
  return g;
}

static void global_replace(zhandle_t *zh, global *g) {
  REAL(zoo_set_context, void, (zhandle_t *, void *));
  found_zoo_set_context(zh, g);
}

static void globals_free(global *g) {
  while (g != NULL) {
    global *older = g->older;
    free(g);
    g = older;
  }
}

zhandle_t *zookeeper_init(const char *host, watcher_fn fn, int recv_timeout,
                          const clientid_t *clientid, void *context,
                          int flags) {
  REAL(zookeeper_init, zhandle_t *,
       (const char *, watcher_fn, int, const clientid_t *, void *, int));
  global *g = global_new(fn, context, NULL);
  zhandle_t *zh =
      found_zookeeper_init(host, global_call, recv_timeout, clientid, g, flags);
  if (zh == NULL) {
    int saved = errno;
    free(g);
    errno = saved;
  }
  return zh;
}

zhandle_t *zookeeper_init2(const char *host, watcher_fn fn, int recv_timeout,
                           const clientid_t *clientid, void *context, int flags,
                           log_callback_fn log_callback) {
  REAL(zookeeper_init2, zhandle_t *,
       (const char *, watcher_fn, int, const clientid_t *, void *, int,
        log_callback_fn));
  global *g = global_new(fn, context, NULL);
  zhandle_t *zh = found_zookeeper_init2(host, global_call, recv_timeout,
                                        clientid, g, flags, log_callback);
  if (zh == NULL) {
    int saved = errno;
    free(g);
    errno = saved;
  }
  return zh;
}

const void *zoo_get_context(zhandle_t *zh) {
  return zh == NULL ? NULL : global_of(zh)->ctx;
}

void zoo_set_context(zhandle_t *zh, void *context) {
  if (zh == NULL)
    return;
  global *current = global_of(zh);
  global_replace(zh, global_new(current->fn, context, current));
}

/* (The client's own returns its do-nothing watcher where this returns
 * NULL: a handle made with no watcher, or given none.) */
watcher_fn zoo_set_watcher(zhandle_t *zh, watcher_fn fn) {
  global *current = global_of(zh);
  global_replace(zh, global_new(fn, current->ctx, current));
  return current->fn;
}

int zookeeper_close(zhandle_t *zh) {
  REAL(zookeeper_close, int, (zhandle_t *));
  /* The client calls it itself to destroy a handle whose close had to
   * wait for a call in progress: the first close frees what is ours. */
  if (zh == NULL || from_client(__builtin_return_address(0)))
    return found_zookeeper_close(zh);
  global *g = global_of(zh);
  int rc = found_zookeeper_close(zh);
  /* The client calls nothing of the handle's after it returns (it has
   * joined its threads), unless it was called from inside a callback, on
   * the completion thread that it cannot join: then what is ours is left
   * (a leak, in a TSan build only). */
  if (in_callback == 0) {
    globals_free(g);
    watches_forget(zh);
  }
  return rc;
}

/* ------------------------------------------------- asynchronous calls */

int zoo_acreate(zhandle_t *zh, const char *path, const char *value,
                int valuelen, const struct ACL_vector *acl, int mode,
                string_completion_t completion, const void *data) {
  REAL(zoo_acreate, int,
       (zhandle_t *, const char *, const char *, int, const struct ACL_vector *,
        int, string_completion_t, const void *));
  WRAP_COMPLETION(string, completion, data, string_done);
  int rc =
      found_zoo_acreate(zh, path, value, valuelen, acl, mode, completion, data);
  handoff_after(h, rc);
  return rc;
}

int zoo_acreate2(zhandle_t *zh, const char *path, const char *value,
                 int valuelen, const struct ACL_vector *acl, int mode,
                 string_stat_completion_t completion, const void *data) {
  REAL(zoo_acreate2, int,
       (zhandle_t *, const char *, const char *, int, const struct ACL_vector *,
        int, string_stat_completion_t, const void *));
  WRAP_COMPLETION(string_stat, completion, data, string_stat_done);
  int rc = found_zoo_acreate2(zh, path, value, valuelen, acl, mode, completion,
                              data);
  handoff_after(h, rc);
  return rc;
}

int zoo_adelete(zhandle_t *zh, const char *path, int version,
                void_completion_t completion, const void *data) {
  REAL(zoo_adelete, int,
       (zhandle_t *, const char *, int, void_completion_t, const void *));
  WRAP_COMPLETION(v, completion, data, void_done);
  int rc = found_zoo_adelete(zh, path, version, completion, data);
  handoff_after(h, rc);
  return rc;
}

int zoo_aset(zhandle_t *zh, const char *path, const char *buffer, int buflen,
             int version, stat_completion_t completion, const void *data) {
  REAL(zoo_aset, int,
       (zhandle_t *, const char *, const char *, int, int, stat_completion_t,
        const void *));
  WRAP_COMPLETION(stat, completion, data, stat_done);
  int rc = found_zoo_aset(zh, path, buffer, buflen, version, completion, data);
  handoff_after(h, rc);
  return rc;
}

int zoo_amulti(zhandle_t *zh, int count, const zoo_op_t *ops,
               zoo_op_result_t *results, void_completion_t completion,
               const void *data) {
  REAL(zoo_amulti, int,
       (zhandle_t *, int, const zoo_op_t *, zoo_op_result_t *,
        void_completion_t, const void *));
  WRAP_COMPLETION(v, completion, data, void_done);
  int rc = found_zoo_amulti(zh, count, ops, results, completion, data);
  handoff_after(h, rc);
  return rc;
}

int zoo_async(zhandle_t *zh, const char *path, string_completion_t completion,
              const void *data) {
  REAL(zoo_async, int,
       (zhandle_t *, const char *, string_completion_t, const void *));
  WRAP_COMPLETION(string, completion, data, string_done);
  int rc = found_zoo_async(zh, path, completion, data);
  handoff_after(h, rc);
  return rc;
}

/* (The client calls an authentication's completion at most once: when
 * the server answers; a record whose completion never runs is left.) */
int zoo_add_auth(zhandle_t *zh, const char *scheme, const char *cert,
                 int cert_len, void_completion_t completion, const void *data) {
  REAL(zoo_add_auth, int,
       (zhandle_t *, const char *, const char *, int, void_completion_t,
        const void *));
  WRAP_COMPLETION(v, completion, data, void_done);
  int rc = found_zoo_add_auth(zh, scheme, cert, cert_len, completion, data);
  handoff_after(h, rc);
  return rc;
}

/* A read with watch=1 passes the handle's context record and global_call,
 * kept as they are. */
int zoo_aexists(zhandle_t *zh, const char *path, int watch,
                stat_completion_t completion, const void *data) {
  REAL(zoo_aexists, int,
       (zhandle_t *, const char *, int, stat_completion_t, const void *));
  WRAP_COMPLETION(stat, completion, data, stat_done);
  int rc = found_zoo_aexists(zh, path, watch, completion, data);
  handoff_after(h, rc);
  return rc;
}

int zoo_awexists(zhandle_t *zh, const char *path, watcher_fn watcher,
                 void *watcher_ctx, stat_completion_t completion,
                 const void *data) {
  REAL(zoo_awexists, int,
       (zhandle_t *, const char *, watcher_fn, void *, stat_completion_t,
        const void *));
  WRAP_WATCHER(zh, watcher, watcher_ctx);
  WRAP_COMPLETION(stat, completion, data, stat_done);
  int rc = found_zoo_awexists(zh, path, watcher, watcher_ctx, completion, data);
  handoff_after(h, rc);
  return rc;
}

int zoo_aget(zhandle_t *zh, const char *path, int watch,
             data_completion_t completion, const void *data) {
  REAL(zoo_aget, int,
       (zhandle_t *, const char *, int, data_completion_t, const void *));
  WRAP_COMPLETION(data, completion, data, data_done);
  int rc = found_zoo_aget(zh, path, watch, completion, data);
  handoff_after(h, rc);
  return rc;
}

int zoo_awget(zhandle_t *zh, const char *path, watcher_fn watcher,
              void *watcher_ctx, data_completion_t completion,
              const void *data) {
  REAL(zoo_awget, int,
       (zhandle_t *, const char *, watcher_fn, void *, data_completion_t,
        const void *));
  WRAP_WATCHER(zh, watcher, watcher_ctx);
  WRAP_COMPLETION(data, completion, data, data_done);
  int rc = found_zoo_awget(zh, path, watcher, watcher_ctx, completion, data);
  handoff_after(h, rc);
  return rc;
}

int zoo_aget_children(zhandle_t *zh, const char *path, int watch,
                      strings_completion_t completion, const void *data) {
  REAL(zoo_aget_children, int,
       (zhandle_t *, const char *, int, strings_completion_t, const void *));
  WRAP_COMPLETION(strings, completion, data, strings_done);
  int rc = found_zoo_aget_children(zh, path, watch, completion, data);
  handoff_after(h, rc);
  return rc;
}

int zoo_awget_children(zhandle_t *zh, const char *path, watcher_fn watcher,
                       void *watcher_ctx, strings_completion_t completion,
                       const void *data) {
  REAL(zoo_awget_children, int,
       (zhandle_t *, const char *, watcher_fn, void *, strings_completion_t,
        const void *));
  WRAP_WATCHER(zh, watcher, watcher_ctx);
  WRAP_COMPLETION(strings, completion, data, strings_done);
  int rc = found_zoo_awget_children(zh, path, watcher, watcher_ctx, completion,
                                    data);
  handoff_after(h, rc);
  return rc;
}

int zoo_aget_children2(zhandle_t *zh, const char *path, int watch,
                       strings_stat_completion_t completion, const void *data) {
  REAL(zoo_aget_children2, int,
       (zhandle_t *, const char *, int, strings_stat_completion_t,
        const void *));
  WRAP_COMPLETION(strings_stat, completion, data, strings_stat_done);
  int rc = found_zoo_aget_children2(zh, path, watch, completion, data);
  handoff_after(h, rc);
  return rc;
}

int zoo_awget_children2(zhandle_t *zh, const char *path, watcher_fn watcher,
                        void *watcher_ctx, strings_stat_completion_t completion,
                        const void *data) {
  REAL(zoo_awget_children2, int,
       (zhandle_t *, const char *, watcher_fn, void *,
        strings_stat_completion_t, const void *));
  WRAP_WATCHER(zh, watcher, watcher_ctx);
  WRAP_COMPLETION(strings_stat, completion, data, strings_stat_done);
  int rc = found_zoo_awget_children2(zh, path, watcher, watcher_ctx, completion,
                                     data);
  handoff_after(h, rc);
  return rc;
}

#endif /* ZKRC_TSAN */

/* (A translation unit must declare something, TSan or not.) */
typedef int zkrc__tsan_zookeeper_unused;
