/*
 * The one seam between the library and the ZooKeeper client (zk_call.h):
 * counts, ThreadSanitizer's view of the hand-off, injected faults.
 *
 * A completion the seam owns is a record (the caller's completion, its
 * data, the kind of completion) given to the client with a trampoline of
 * the record's kind.  In a --enable-tsan build every call with a
 * completion makes one: the call releases on it before the client has it,
 * the trampoline acquires on it before it calls the caller's completion,
 * and frees it (a completion runs exactly once, with ZCLOSING when the
 * handle closes, or never when the call fails at once).  An injected fault
 * makes one too, in every build, run by the fault thread.
 */
#include "config.h"

#include <string.h>

#include <glib.h>

#include "session/session_private.h"
#include "session/zk_call.h"
#include "zkrecipes/error.h"

#ifdef ZKRC_TSAN
#include <sanitizer/tsan_interface.h>
/* Pull src/tsan/tsan_slice.c into every program that uses the seam. */
extern int zkrc__tsan_slice;
int *zkrc__tsan_slice_used = &zkrc__tsan_slice;
#define HANDOFF_RELEASE(p) __tsan_release(p)
#define HANDOFF_ACQUIRE(p) __tsan_acquire(p)
#define HANDOFF_ALWAYS TRUE
#else
#define HANDOFF_RELEASE(p) ((void)(p))
#define HANDOFF_ACQUIRE(p) ((void)(p))
#define HANDOFF_ALWAYS FALSE
#endif

typedef enum done_kind {
  DONE_VOID = 1,
  DONE_STAT,
  DONE_DATA,
  DONE_STRINGS,
  DONE_STRING,
  DONE_STRING_STAT
} done_kind;

typedef union any_done {
  void_completion_t v;
  stat_completion_t stat;
  data_completion_t data;
  strings_completion_t strings;
  string_completion_t string;
  string_stat_completion_t string_stat;
} any_done;

typedef struct handoff {
  done_kind kind;
  any_done fn;
  const void *data;
  int injected_rc; /* the fault's error, for the fault thread */
} handoff;

static handoff *handoff_new(done_kind kind, any_done fn, const void *data) {
  handoff *h = g_new(handoff, 1);
  h->kind = kind;
  h->fn = fn;
  h->data = data;
  h->injected_rc = ZOK;
  HANDOFF_RELEASE(h);
  return h;
}

/* The record the client calls back with, now (once): freed, returned. */
static handoff handoff_take(const void *p) {
  handoff *h = (handoff *)p;
  HANDOFF_ACQUIRE(h);
  handoff copy = *h;
  g_free(h);
  return copy;
}

static void void_done(int rc, const void *p) {
  handoff h = handoff_take(p);
  h.fn.v(rc, h.data);
}

static void stat_done(int rc, const struct Stat *stat, const void *p) {
  handoff h = handoff_take(p);
  h.fn.stat(rc, stat, h.data);
}

static void data_done(int rc, const char *value, int value_len,
                      const struct Stat *stat, const void *p) {
  handoff h = handoff_take(p);
  h.fn.data(rc, value, value_len, stat, h.data);
}

static void strings_done(int rc, const struct String_vector *strings,
                         const void *p) {
  handoff h = handoff_take(p);
  h.fn.strings(rc, strings, h.data);
}

static void string_done(int rc, const char *value, const void *p) {
  handoff h = handoff_take(p);
  h.fn.string(rc, value, h.data);
}

static void string_stat_done(int rc, const char *value, const struct Stat *stat,
                             const void *p) {
  handoff h = handoff_take(p);
  h.fn.string_stat(rc, value, stat, h.data);
}

/* --------------------------------------------------------------- counts */

static guint64 sent_counts[ZKRC__ZK_OPS];
static guint64 failed_counts[ZKRC__ZK_OPS];

static gboolean op_valid(zkrc__zk_op op) {
  return op >= ZKRC__ZK_CREATE && op < ZKRC__ZK_OPS;
}

uint64_t zkrc__zk_sent_count(zkrc__zk_op op) {
  return op_valid(op) ? __atomic_load_n(&sent_counts[op], __ATOMIC_RELAXED) : 0;
}

uint64_t zkrc__zk_failed_count(zkrc__zk_op op) {
  return op_valid(op) ? __atomic_load_n(&failed_counts[op], __ATOMIC_RELAXED)
                      : 0;
}

/* ------------------------------------------------------- injected faults */

static GMutex faults_mu;
static struct {
  int countdown; /* 0: none armed */
  int zk_error;
} faults[ZKRC__ZK_OPS];   /* under faults_mu */
static gint faults_armed; /* how many kinds have one: the fast path */
static GThreadPool *fault_thread;

/* On the fault thread: complete @p p, an injected request's record. */
static void fault_complete(gpointer p, gpointer unused) {
  (void)unused;
  handoff *h = p;
  HANDOFF_ACQUIRE(h);
  int rc = h->injected_rc;
  switch (h->kind) {
  case DONE_VOID:
    void_done(rc, h);
    break;
  case DONE_STAT:
    stat_done(rc, NULL, h);
    break;
  case DONE_DATA:
    data_done(rc, NULL, -1, NULL, h);
    break;
  case DONE_STRINGS:
    strings_done(rc, NULL, h);
    break;
  case DONE_STRING:
    string_done(rc, NULL, h);
    break;
  default:
    string_stat_done(rc, NULL, NULL, h);
    break;
  }
}

int zkrc__zk_fail_nth(zkrc__zk_op op, int nth, int zk_error) {
  if (!op_valid(op))
    return ZKRC_EINVAL;
  gboolean arm = nth > 0 && zk_error != ZOK;
  g_mutex_lock(&faults_mu);
  if (arm && fault_thread == NULL)
    fault_thread = g_thread_pool_new(fault_complete, NULL, 1, FALSE, NULL);
  gboolean was = faults[op].countdown > 0;
  faults[op].countdown = arm ? nth : 0;
  faults[op].zk_error = zk_error;
  if (was != arm)
    g_atomic_int_add(&faults_armed, arm ? 1 : -1);
  g_mutex_unlock(&faults_mu);
  return ZKRC_OK;
}

/* Whether this request of kind @p op is the one to fail: then *@p zk_error
 * is its error (and the fault is disarmed). */
static gboolean fault_due(zkrc__zk_op op, int *zk_error) {
  if (g_atomic_int_get(&faults_armed) == 0)
    return FALSE;
  gboolean due = FALSE;
  g_mutex_lock(&faults_mu);
  if (faults[op].countdown > 0 && --faults[op].countdown == 0) {
    due = TRUE;
    *zk_error = faults[op].zk_error;
    g_atomic_int_add(&faults_armed, -1);
  }
  g_mutex_unlock(&faults_mu);
  return due;
}

/* Whether the request of kind @p op (completion @p fn of @p kind, with
 * @p data) is failed by injection: then its completion is on its way. */
static gboolean injected(zkrc__zk_op op, done_kind kind, any_done fn,
                         const void *data) {
  int zk_error;
  if (G_LIKELY(!fault_due(op, &zk_error)))
    return FALSE;
  __atomic_fetch_add(&failed_counts[op], 1, __ATOMIC_RELAXED);
  if (fn.v == NULL)
    return TRUE;
  handoff *h = handoff_new(kind, fn, data);
  h->injected_rc = zk_error;
  HANDOFF_RELEASE(h);
  g_thread_pool_push(fault_thread, h, NULL);
  return TRUE;
}

/* ------------------------------------------------------------- requests */

/* The record to give the client instead of @p fn and @p data, or NULL to
 * give it them as they are. */
static handoff *track(done_kind kind, any_done fn, const void *data) {
  return HANDOFF_ALWAYS && fn.v != NULL ? handoff_new(kind, fn, data) : NULL;
}

/* After the client's call of kind @p op, which returned @p rc: counts a
 * queued request; frees @p h when no completion will run (a request the
 * client could not marshal may have been queued all the same: then the
 * record is left, rather than freed too early). */
static int sent(zkrc_conn *c, zkrc__zk_op op, handoff *h, int rc) {
  if (rc == ZOK)
    __atomic_fetch_add(&sent_counts[op], 1, __ATOMIC_RELAXED);
  else if (h != NULL && rc != ZMARSHALLINGERROR)
    g_free(h);
  return zkrc__sent(c->session, rc);
}

/* The arguments of every request function: what it calls the client with
 * (the trampoline @p tramp and the record, or the caller's own), after
 * the injection and tracking of completion @p done (union member
 * @p member, kind @p kind) of a request of kind @p op.  Declares fn_ and
 * data_, the completion and data to give the client, and h. */
#define BEGIN(op, kind, member, done, data, tramp)                             \
  any_done any = {.member = (done)};                                           \
  if (injected((op), (kind), any, (data)))                                     \
    return ZOK;                                                                \
  handoff *h = track((kind), any, (data));                                     \
  __typeof__(done) fn_ = h ? (tramp) : (done);                                 \
  const void *data_ = h ? (const void *)h : (data)

int zkrc__zk_create(zkrc_conn *c, const char *path, const char *value,
                    int valuelen, const struct ACL_vector *acl, int mode,
                    string_completion_t done, const void *data) {
  BEGIN(ZKRC__ZK_CREATE, DONE_STRING, string, done, data, string_done);
  return sent(c, ZKRC__ZK_CREATE, h,
              zoo_acreate(c->zh, path, value, valuelen, acl, mode, fn_, data_));
}

int zkrc__zk_create2(zkrc_conn *c, const char *path, const char *value,
                     int valuelen, const struct ACL_vector *acl, int mode,
                     string_stat_completion_t done, const void *data) {
  BEGIN(ZKRC__ZK_CREATE, DONE_STRING_STAT, string_stat, done, data,
        string_stat_done);
  return sent(
      c, ZKRC__ZK_CREATE, h,
      zoo_acreate2(c->zh, path, value, valuelen, acl, mode, fn_, data_));
}

int zkrc__zk_create_ttl(zkrc_conn *c, const char *path, const char *value,
                        int valuelen, const struct ACL_vector *acl, int mode,
                        int64_t ttl, string_completion_t done,
                        const void *data) {
  BEGIN(ZKRC__ZK_CREATE, DONE_STRING, string, done, data, string_done);
  return sent(c, ZKRC__ZK_CREATE, h,
              zoo_acreate_ttl(c->zh, path, value, valuelen, acl, mode, ttl, fn_,
                              data_));
}

int zkrc__zk_delete(zkrc_conn *c, const char *path, int version,
                    void_completion_t done, const void *data) {
  BEGIN(ZKRC__ZK_DELETE, DONE_VOID, v, done, data, void_done);
  return sent(c, ZKRC__ZK_DELETE, h,
              zoo_adelete(c->zh, path, version, fn_, data_));
}

int zkrc__zk_set(zkrc_conn *c, const char *path, const char *buffer, int buflen,
                 int version, stat_completion_t done, const void *data) {
  BEGIN(ZKRC__ZK_SET, DONE_STAT, stat, done, data, stat_done);
  return sent(c, ZKRC__ZK_SET, h,
              zoo_aset(c->zh, path, buffer, buflen, version, fn_, data_));
}

/* The body of a read of kind @p op on @p path: @p watched(..., the
 * registry's watcher, watch_ctx, ...) when watch_ctx is set, else
 * @p plain(..., 0, ...). */
#define READ(op, kind, member, tramp, watched, plain)                          \
  BEGIN(op, kind, member, done, data, tramp);                                  \
  return sent(c, op, h,                                                        \
              watch_ctx ? watched(c->zh, path, zkrc__watch_dispatch,           \
                                  watch_ctx, fn_, data_)                       \
                        : plain(c->zh, path, 0, fn_, data_))

int zkrc__zk_exists(zkrc_conn *c, const char *path, void *watch_ctx,
                    stat_completion_t done, const void *data) {
  READ(ZKRC__ZK_EXISTS, DONE_STAT, stat, stat_done, zoo_awexists, zoo_aexists);
}

int zkrc__zk_get(zkrc_conn *c, const char *path, void *watch_ctx,
                 data_completion_t done, const void *data) {
  READ(ZKRC__ZK_GET, DONE_DATA, data, data_done, zoo_awget, zoo_aget);
}

int zkrc__zk_getconfig(zkrc_conn *c, void *watch_ctx, data_completion_t done,
                       const void *data) {
  BEGIN(ZKRC__ZK_GET, DONE_DATA, data, done, data, data_done);
  return sent(c, ZKRC__ZK_GET, h,
              watch_ctx ? zoo_awgetconfig(c->zh, zkrc__watch_dispatch,
                                          watch_ctx, fn_, data_)
                        : zoo_agetconfig(c->zh, 0, fn_, data_));
}

int zkrc__zk_get_children(zkrc_conn *c, const char *path, void *watch_ctx,
                          strings_completion_t done, const void *data) {
  READ(ZKRC__ZK_CHILDREN, DONE_STRINGS, strings, strings_done,
       zoo_awget_children, zoo_aget_children);
}

int zkrc__zk_multi(zkrc_conn *c, int count, const zoo_op_t *ops,
                   zoo_op_result_t *results, void_completion_t done,
                   const void *data) {
  BEGIN(ZKRC__ZK_MULTI, DONE_VOID, v, done, data, void_done);
  return sent(c, ZKRC__ZK_MULTI, h,
              zoo_amulti(c->zh, count, ops, results, fn_, data_));
}

int zkrc__zk_sync(zkrc_conn *c, const char *path, string_completion_t done,
                  const void *data) {
  BEGIN(ZKRC__ZK_SYNC, DONE_STRING, string, done, data, string_done);
  return sent(c, ZKRC__ZK_SYNC, h, zoo_async(c->zh, path, fn_, data_));
}

int zkrc__zk_add_auth(zkrc_conn *c, const char *scheme, const char *cred,
                      void_completion_t done, const void *data) {
  BEGIN(ZKRC__ZK_AUTH, DONE_VOID, v, done, data, void_done);
  return sent(c, ZKRC__ZK_AUTH, h,
              zoo_add_auth(c->zh, scheme, cred, (int)strlen(cred), fn_, data_));
}

int zkrc__zk_remove_watches(zkrc_conn *c, const char *path, ZooWatcherType type,
                            void *watch_ctx, int local) {
  return zoo_remove_watches(c->zh, path, type, zkrc__watch_dispatch, watch_ctx,
                            local);
}

int zkrc__zk_set_servers(zkrc_conn *c, const char *hosts) {
  return zoo_set_servers(c->zh, hosts);
}

/* -------------------------------------------------------- the handle */

#ifdef ZKRC_TSAN
/* The handle's watcher: its context is the zkrc_conn, released when it was
 * made the handle's. */
static void global_watcher(zhandle_t *zh, int type, int state, const char *path,
                           void *ctx) {
  HANDOFF_ACQUIRE(ctx);
  zkrc__session_global_watcher(zh, type, state, path, ctx);
}
#else
#define global_watcher zkrc__session_global_watcher
#endif

zhandle_t *zkrc__zk_open(zkrc_conn *c, const char *hosts, int recv_timeout,
                         log_callback_fn log) {
  HANDOFF_RELEASE(c);
  if (c->session->secure)
    return zkrc__secure_open(c->session->secure, hosts, global_watcher,
                             recv_timeout, c, log);
  return zookeeper_init2(hosts, global_watcher, recv_timeout, NULL, c, 0, log);
}

watcher_fn zkrc__zk_adopt(zkrc_conn *c) {
  HANDOFF_RELEASE(c);
  zoo_set_context(c->zh, c);
  return zoo_set_watcher(c->zh, global_watcher);
}
