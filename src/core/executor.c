/*
 * Executors other than the session's own callback thread: one announced by
 * a file descriptor (for any event loop), one that is a GLib main context
 * source.  Both keep callbacks in posting order.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <glib.h>

#include "core/util.h"
#include "zkrecipes.h"
#include "zkrecipes/executor.h"
#include "zkrecipes/glib.h"

typedef struct task {
  zkrc_callback_fn fn;
  void *arg;
} task;

static void push_task(GQueue *queue, zkrc_callback_fn fn, void *arg) {
  task *t = g_new(task, 1);
  t->fn = fn;
  t->arg = arg;
  g_queue_push_tail(queue, t);
}

/* Run every task of @p batch, in order, and empty it. */
static int run_batch(GQueue *batch) {
  int ran = 0;
  task *t;
  while ((t = g_queue_pop_head(batch)) != NULL) {
    t->fn(t->arg);
    g_free(t);
    ran++;
  }
  return ran;
}

/* ------------------------------------------------------ file descriptor */

struct zkrc_fd_executor {
  GMutex mu;
  GQueue queue;
  int fd; /* an eventfd: non-zero (readable) while tasks wait */
};

static void fd_post(void *ctx, zkrc_callback_fn fn, void *arg) {
  zkrc_fd_executor *fx = ctx;
  g_mutex_lock(&fx->mu);
  gboolean was_empty = g_queue_is_empty(&fx->queue);
  push_task(&fx->queue, fn, arg);
  if (was_empty) {
    uint64_t one = 1;
    /* Cannot fail short of a counter overflow; EAGAIN would mean it is
     * already readable, which is all we need. */
    (void)!write(fx->fd, &one, sizeof one);
  }
  g_mutex_unlock(&fx->mu);
}

int zkrc_fd_executor_new(zkrc_fd_executor **out) {
  if (out == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  *out = NULL;
  int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0)
    return zkrc__fail(ZKRC_ENOMEM);
  zkrc_fd_executor *fx = g_new0(zkrc_fd_executor, 1);
  g_mutex_init(&fx->mu);
  g_queue_init(&fx->queue);
  fx->fd = fd;
  *out = fx;
  return ZKRC_OK;
}

void zkrc_fd_executor_get(zkrc_fd_executor *fx, zkrc_executor *out) {
  out->post = fd_post;
  out->ctx = fx;
}

int zkrc_fd_executor_fd(zkrc_fd_executor *fx) { return fx ? fx->fd : -1; }

int zkrc_fd_executor_dispatch(zkrc_fd_executor *fx) {
  if (fx == NULL)
    return 0;
  GQueue batch = G_QUEUE_INIT;
  g_mutex_lock(&fx->mu);
  batch = fx->queue;
  g_queue_init(&fx->queue);
  uint64_t count;
  (void)!read(fx->fd, &count,
              sizeof count); /* not readable until the next post */
  g_mutex_unlock(&fx->mu);
  return run_batch(&batch);
}

void zkrc_fd_executor_free(zkrc_fd_executor *fx) {
  if (fx == NULL)
    return;
  /* Run what is left: dropping a task would leak what it references. */
  while (zkrc_fd_executor_dispatch(fx) > 0)
    ;
  close(fx->fd);
  g_mutex_clear(&fx->mu);
  g_free(fx);
}

/* ------------------------------------------------------------------ GLib */

typedef struct glib_source {
  GSource source;
  GMutex mu;
  GQueue queue;
} glib_source;

static gboolean glib_has_tasks(GSource *source) {
  glib_source *gs = (glib_source *)source;
  g_mutex_lock(&gs->mu);
  gboolean pending = !g_queue_is_empty(&gs->queue);
  g_mutex_unlock(&gs->mu);
  return pending;
}

static gboolean glib_prepare(GSource *source, gint *timeout) {
  *timeout = -1;
  return glib_has_tasks(source);
}

static gboolean glib_dispatch(GSource *source, GSourceFunc callback,
                              gpointer user_data) {
  glib_source *gs = (glib_source *)source;
  g_mutex_lock(&gs->mu);
  GQueue batch = gs->queue;
  g_queue_init(&gs->queue);
  g_mutex_unlock(&gs->mu);
  run_batch(&batch);
  return G_SOURCE_CONTINUE;
}

static void glib_finalize(GSource *source) {
  glib_source *gs = (glib_source *)source;
  g_mutex_clear(&gs->mu);
}

static GSourceFuncs glib_source_funcs = {
    .prepare = glib_prepare,
    .check = glib_has_tasks,
    .dispatch = glib_dispatch,
    .finalize = glib_finalize,
};

static void glib_post(void *ctx, zkrc_callback_fn fn, void *arg) {
  glib_source *gs = ctx;
  g_mutex_lock(&gs->mu);
  push_task(&gs->queue, fn, arg);
  g_mutex_unlock(&gs->mu);
  /* The context may be asleep in poll(): make it look again. */
  GMainContext *context = g_source_get_context(&gs->source);
  if (context)
    g_main_context_wakeup(context);
}

void zkrc_glib_executor_init(zkrc_executor *out, GMainContext *context) {
  glib_source *gs =
      (glib_source *)g_source_new(&glib_source_funcs, sizeof(glib_source));
  g_mutex_init(&gs->mu);
  g_queue_init(&gs->queue);
  g_source_set_name(&gs->source, "zkrecipes callbacks");
  g_source_attach(&gs->source, context);
  out->post = glib_post;
  out->ctx = gs;
}

void zkrc_glib_executor_clear(zkrc_executor *ex) {
  if (ex == NULL || ex->ctx == NULL)
    return;
  glib_source *gs = ex->ctx;
  g_source_destroy(&gs->source);
  for (;;) { /* run what is left: dropping it would leak */
    g_mutex_lock(&gs->mu);
    GQueue batch = gs->queue;
    g_queue_init(&gs->queue);
    g_mutex_unlock(&gs->mu);
    if (run_batch(&batch) == 0)
      break;
  }
  g_source_unref(&gs->source);
  ex->ctx = NULL;
  ex->post = NULL;
}
