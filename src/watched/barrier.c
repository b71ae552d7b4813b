/*
 * The single barrier (zkrecipes/barrier.h), Curator's DistributedBarrier
 * and kazoo's Barrier: the node PATH, set by a create with its parents
 * (shared.c's), removed by a delete, and waited for by an exists with a
 * watch, each request waited for with the caller's deadline (call.h).
 * The wait wakes on the watch (the node changed) and on the session's
 * events (a connection back, a new session: a watch may be lost), and
 * looks again; a request that failed transiently is sent again after a
 * backoff (10 ms doubling to 1 s), within the deadline.
 */
#include "config.h"

#include <string.h>

#include "core/util.h"
#include "session/call.h"
#include "session/request_size.h"
#include "session/session_internal.h"
#include "session/zk_call.h"
#include "watched/shared_internal.h"
#include "zkrecipes/barrier.h"
#include "zkrecipes/error.h"
#include "zkrecipes/path.h"

static gboolean args_valid(zkrc_session *s, const char *path, int timeout_ms) {
  return s && zkrc_path_validate(path, NULL) == ZKRC_OK &&
         strcmp(path, "/") != 0 && zkrc__timeout_valid(timeout_ms);
}

/* The arguments checked and the deadline of @p timeout_ms: ZKRC_OK, or
 * the error to return (nothing sent). */
static int begin(zkrc_session *s, const char *path, int timeout_ms,
                 int64_t *deadline) {
  if (!args_valid(s, path, timeout_ms))
    return zkrc__fail(ZKRC_EINVAL);
  int err = zkrc__request_deadline(s, timeout_ms, deadline);
  return err == ZKRC_OK ? ZKRC_OK : zkrc__fail(err);
}

int zkrc_barrier_set(zkrc_session *s, const char *path, int timeout_ms) {
  int64_t deadline;
  int err = begin(s, path, timeout_ms, &deadline);
  if (err != ZKRC_OK)
    return err;
  err = zkrc__request_check_create(s, path, 0, NULL, 0);
  if (err != ZKRC_OK)
    return zkrc__fail(err);
  int rc = zkrc__shared_create(s, path, NULL, 0, deadline);
  /* Set already (by anyone): set. */
  return rc == ZOK || rc == ZNODEEXISTS ? ZKRC_OK : zkrc__shared_failure(rc);
}

static int send_delete(zkrc_conn *conn, zkrc__call *call, const void *arg) {
  return zkrc__zk_delete(conn, arg, -1, zkrc__call_void_done, call);
}

int zkrc_barrier_remove(zkrc_session *s, const char *path, int timeout_ms) {
  int64_t deadline;
  int err = begin(s, path, timeout_ms, &deadline);
  if (err != ZKRC_OK)
    return err;
  zkrc__call *call;
  int rc = zkrc__call_request(s, send_delete, path, deadline, &call);
  if (call)
    zkrc__call_unref(call);
  return rc == ZOK ? ZKRC_OK : zkrc__shared_failure(rc);
}

/* ---------------------------------------------------------------- wait */

/* What the waiting thread shares with its watch and its observer. */
typedef struct waiter {
  gint refs;
  GMutex mu;
  GCond cond;
  gboolean woken; /* the watch fired, or a session event came */
  void *ctx;      /* the latest watch's context */
} waiter;

static void waiter_ref(void *target) {
  g_atomic_int_inc(&((waiter *)target)->refs);
}

static void waiter_unref(void *target) {
  waiter *w = target;
  if (!g_atomic_int_dec_and_test(&w->refs))
    return;
  g_mutex_clear(&w->mu);
  g_cond_clear(&w->cond);
  g_free(w);
}

static const zkrc__watch_target_ops waiter_ops = {waiter_ref, waiter_unref};

static void wake(waiter *w) {
  g_mutex_lock(&w->mu);
  w->woken = TRUE;
  g_cond_broadcast(&w->cond);
  g_mutex_unlock(&w->mu);
}

static void on_watch(int type, const char *path, void *target, void *ctx) {
  (void)type;
  (void)path;
  (void)ctx;
  wake(target);
}

static void on_session(zkrc_session *s, zkrc_session_event_type ev,
                       uint64_t generation, void *arg) {
  (void)s;
  (void)ev;
  (void)generation;
  wake(arg);
}

typedef struct exists_arg {
  const char *path;
  waiter *w;
} exists_arg;

/* An exists with a watch, whose context replaces the previous one. */
static int send_exists(zkrc_conn *conn, zkrc__call *call, const void *arg) {
  const exists_arg *a = arg;
  void *ctx = zkrc__watch_register(conn, on_watch, a->w, &waiter_ops);
  g_mutex_lock(&a->w->mu);
  void *old = a->w->ctx;
  a->w->ctx = ctx;
  a->w->woken = FALSE;
  g_mutex_unlock(&a->w->mu);
  if (old)
    zkrc__watch_cancel(old);
  int rc = zkrc__zk_exists(conn, a->path, ctx, zkrc__call_stat_done, call);
  if (rc != ZOK) {
    g_mutex_lock(&a->w->mu);
    a->w->ctx = NULL;
    g_mutex_unlock(&a->w->mu);
    zkrc__watch_cancel(ctx);
  }
  return rc;
}

/* Wait until woken or @p deadline; FALSE when the deadline passed. */
static gboolean wait_woken(waiter *w, int64_t deadline) {
  g_mutex_lock(&w->mu);
  gboolean woken = TRUE;
  while (!w->woken && woken)
    woken = zkrc__cond_wait_until(&w->cond, &w->mu, deadline);
  w->woken = FALSE;
  g_mutex_unlock(&w->mu);
  return woken;
}

static gboolean transient(int rc) {
  return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT ||
         rc == ZSESSIONEXPIRED || rc == ZSESSIONMOVED;
}

/* Look until the node is gone or @p deadline (@p once: one look). */
static int wait_gone(zkrc_session *s, waiter *w, const char *path,
                     int64_t deadline, gboolean once) {
  exists_arg a = {path, w};
  int backoff_ms = 10;
  for (;;) {
    zkrc__call *call;
    int rc = zkrc__call_request(s, send_exists, &a, deadline, &call);
    if (call)
      zkrc__call_unref(call);
    if (rc == ZNONODE)
      return ZKRC_OK;
    if (rc == ZOK) {
      if (once || !wait_woken(w, deadline))
        return zkrc__fail(ZKRC_ETIMEDOUT);
      backoff_ms = 10;
      continue;
    }
    if (!transient(rc) || once)
      return zkrc__shared_failure(rc);
    /* Woken by the connection's return, or after the backoff. */
    int64_t retry = g_get_monotonic_time() + (int64_t)backoff_ms * 1000;
    backoff_ms = MIN(backoff_ms * 2, 1000);
    wait_woken(w, MIN(retry, deadline));
    if (g_get_monotonic_time() >= deadline)
      return zkrc__fail(ZKRC_ETIMEDOUT);
  }
}

int zkrc_barrier_wait(zkrc_session *s, const char *path, int timeout_ms) {
  int64_t deadline;
  int err = begin(s, path, timeout_ms, &deadline);
  if (err != ZKRC_OK)
    return err;
  waiter *w = g_new0(waiter, 1);
  w->refs = 2; /* ours and the observer's */
  g_mutex_init(&w->mu);
  g_cond_init(&w->cond);
  gboolean closed = FALSE;
  unsigned long observer = zkrc__session_observe(s, on_session, w, &closed);
  int rc = closed ? zkrc__fail(ZKRC_ECLOSED)
                  : wait_gone(s, w, path, deadline, timeout_ms == ZKRC_NO_WAIT);
  zkrc__session_unobserve(s, observer);
  waiter_unref(w); /* the observer's */
  g_mutex_lock(&w->mu);
  void *ctx = w->ctx;
  w->ctx = NULL;
  g_mutex_unlock(&w->mu);
  if (ctx)
    zkrc__watch_cancel(ctx); /* takes its watch back */
  int zk = zkrc_last_zk_error();
  waiter_unref(w);
  return rc == ZKRC_OK ? rc : zkrc__fail_zk(rc, zk);
}
