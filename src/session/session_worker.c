/*
 * A session's threads: the worker (a GLib main loop for timers, session
 * events and handle turnover) and, unless the application gives an
 * executor of its own, the callback thread that runs user callbacks in the
 * order they were posted.
 */
#include "config.h"

#include "session/session_private.h"

/* ------------------------------------------------------ default executor */

typedef struct cb_task {
  zkrc_callback_fn fn; /* NULL: stop the thread */
  void *arg;
} cb_task;

static gpointer callback_thread_main(gpointer data) {
  GAsyncQueue *queue = data; /* our own reference: the session may go first */
  for (;;) {
    cb_task *t = g_async_queue_pop(queue);
    zkrc_callback_fn fn = t->fn;
    void *arg = t->arg;
    g_free(t);
    if (fn == NULL)
      break;
    fn(arg);
  }
  g_async_queue_unref(queue);
  return NULL;
}

static void callback_thread_post(void *ctx, zkrc_callback_fn fn, void *arg) {
  cb_task *t = g_new(cb_task, 1);
  t->fn = fn;
  t->arg = arg;
  g_async_queue_push(ctx, t);
}

/* ---------------------------------------------------------------- worker */

typedef struct worker_call {
  zkrc_session *s;
  zkrc_callback_fn fn;
  void *arg;
} worker_call;

static gpointer worker_main(gpointer data) {
  GMainLoop *loop = data; /* our own reference */
  GMainContext *ctx = g_main_loop_get_context(loop);
  g_main_context_push_thread_default(ctx);
  g_main_loop_run(loop);
  g_main_context_pop_thread_default(ctx);
  g_main_loop_unref(loop);
  return NULL;
}

static gboolean worker_call_run(gpointer data) {
  worker_call *wc = data;
  wc->fn(wc->arg);
  zkrc__session_unref(wc->s);
  g_free(wc);
  return G_SOURCE_REMOVE;
}

void zkrc__session_run_on_worker(zkrc_session *s, zkrc_callback_fn fn,
                                 void *arg) {
  worker_call *wc = g_new(worker_call, 1);
  wc->s = zkrc__session_ref(s);
  wc->fn = fn;
  wc->arg = arg;
  GSource *src = g_idle_source_new();
  g_source_set_priority(src, G_PRIORITY_DEFAULT);
  g_source_set_callback(src, worker_call_run, wc, NULL);
  g_source_attach(src, s->worker_ctx);
  g_source_unref(src);
}

GSource *zkrc__session_timer(zkrc_session *s, int ms, GSourceFunc fn,
                             void *data, GDestroyNotify destroy) {
  GSource *src = g_timeout_source_new((guint)ms);
  g_source_set_callback(src, fn, data, destroy);
  g_source_attach(src, s->worker_ctx);
  return src;
}

static gboolean quit_loop(gpointer loop) {
  g_main_loop_quit(loop);
  return G_SOURCE_REMOVE;
}

/* Stop the worker's loop from inside it: g_main_loop_quit() called before
 * the new thread entered g_main_loop_run() would be forgotten (run sets
 * the loop running again), and the join below would wait for ever. */
static void stop_worker_loop(zkrc_session *s) {
  GSource *src = g_idle_source_new();
  g_source_set_callback(src, quit_loop, g_main_loop_ref(s->worker_loop),
                        (GDestroyNotify)g_main_loop_unref);
  g_source_attach(src, s->worker_ctx);
  g_source_unref(src);
}

gboolean zkrc__session_on_worker(zkrc_session *s) {
  return s->worker == g_thread_self();
}

/* --------------------------------------------------------- start, stop */

static void stop_thread(GThread *thread) {
  if (thread == NULL)
    return;
  if (thread == g_thread_self())
    g_thread_unref(thread); /* it exits by itself once we return */
  else
    g_thread_join(thread);
}

void zkrc__session_threads_start(zkrc_session *s) {
  s->worker_ctx = g_main_context_new();
  s->worker_loop = g_main_loop_new(s->worker_ctx, FALSE);
  zkrc__lease_driver_init(s);
  s->worker = g_thread_new("zkrc-session", worker_main,
                           g_main_loop_ref(s->worker_loop));
  if (s->opts.executor) {
    s->executor = *s->opts.executor;
  } else {
    s->cb_queue = g_async_queue_new();
    s->cb_thread = g_thread_new("zkrc-callbacks", callback_thread_main,
                                g_async_queue_ref(s->cb_queue));
    s->executor.post = callback_thread_post;
    s->executor.ctx = s->cb_queue;
  }
}

void zkrc__session_threads_stop(zkrc_session *s) {
  /* Both threads hold references to their own queue/loop, so they may be
   * the ones dropping the last session reference. */
  if (s->cb_queue) {
    callback_thread_post(s->cb_queue, NULL, NULL);
    stop_thread(s->cb_thread);
    g_async_queue_unref(s->cb_queue);
  }
  zkrc__lease_driver_free(s);
  stop_worker_loop(s);
  stop_thread(s->worker);
  g_main_loop_unref(s->worker_loop);
  g_main_context_unref(s->worker_ctx);
}

/* ------------------------------------------------------- user callbacks */

typedef struct posted_call {
  zkrc_session *s;
  zkrc_callback_fn fn;
  void *arg;
} posted_call;

static void posted_call_run(void *data) {
  posted_call *pc = data;
  pc->fn(pc->arg);
  g_atomic_int_add(&pc->s->posted, -1);
  zkrc__session_unref(pc->s);
  g_free(pc);
}

void zkrc__session_post(zkrc_session *s, zkrc_callback_fn fn, void *arg) {
  posted_call *pc = g_new(posted_call, 1);
  pc->s = zkrc__session_ref(s);
  g_atomic_int_inc(&s->posted);
  pc->fn = fn;
  pc->arg = arg;
  s->executor.post(s->executor.ctx, posted_call_run, pc);
}

static void post_to_session(void *s, zkrc_callback_fn fn, void *arg) {
  zkrc__session_post(s, fn, arg);
}

zkrc_executor zkrc__session_executor(zkrc_session *s) {
  return (zkrc_executor){post_to_session, s};
}
