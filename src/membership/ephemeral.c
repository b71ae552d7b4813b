/*
 * A kept ephemeral node (zkrecipes/ephemeral.h).
 *
 * One create at a time: on the session's first connection, after each new
 * session, after a deletion seen by the watch on the node, and after a
 * failure (retried with a backoff while connected).  A create that finds
 * the node asks whose it is: ours (a create whose reply was lost) counts as
 * created; another session's is watched until it goes.  A missing parent
 * is created (a container) in the same pipeline as the node.
 *
 * REGISTERED is told when a create of the current session succeeded and
 * the lease of that session is running; LOST when the session's lease
 * runs out or it expires, or the node is deleted.  Lock order: e->mu is a
 * recipe's mutex (session_private.h).
 */
#include "config.h"

#include <string.h>

#include "session/call.h"
#include "core/evq.h"
#include "session/request_size.h"
#include "session/session_internal.h"
#include "core/util.h"
#include "session/zk_call.h"
#include "zkrecipes/ephemeral.h"
#include "zkrecipes/error.h"
#include "zkrecipes/path.h"

#define RETRY_MIN_MS 50
#define RETRY_MAX_MS 2000

struct zkrc_ephemeral {
  gint refs; /* the owner's, a create or watch in flight, a drain, a timer */
  GMutex mu;
  GCond cond;
  zkrc_session *s;
  char *path;
  zkrc__acl *acl;
  zkrc_ephemeral_event_fn on_event;
  void *event_arg;
  unsigned long observer;
  GBytes *data;         /* the latest data (NULL: none) */
  uint64_t data_seq;    /* set_data calls so far */
  gboolean creating;    /* a create (or its owner check) is in flight */
  uint64_t created_gen; /* the session whose create succeeded; 0: none */
  gboolean told_registered;
  gboolean closed, freeing;
  gboolean noauth;
  gboolean parent_refused; /* a parent's create was refused (ACL) */
  gboolean watched;        /* a watch on our node of created_gen is armed */
  gboolean arming;         /* an exists to arm it is in flight */
  void *watch_ctx;         /* the latest watch's context (cancelled at free) */
  int retry_ms;            /* the next retry's delay */
  GSource *retry_timer;
  zkrc__evq events; /* of zkrc_ephemeral_event* (g_free) */
};

static void try_create(zkrc_ephemeral *e);

/* ------------------------------------------------------------ lifetime */

/* What our node takes of its session's budget (session_internal.h). */
static size_t path_cost(zkrc_session *s, const char *path) {
  return zkrc__ephemeral_cost(s, strlen(path));
}

static zkrc_ephemeral *eph_ref(zkrc_ephemeral *e) {
  g_atomic_int_inc(&e->refs);
  return e;
}

static void eph_unref(zkrc_ephemeral *e) {
  if (!g_atomic_int_dec_and_test(&e->refs))
    return;
  if (e->data)
    g_bytes_unref(e->data);
  zkrc__acl_unref(e->acl);
  zkrc__session_release(e->s, path_cost(e->s, e->path));
  zkrc__session_unref_recipe(e->s);
  g_free(e->path);
  g_mutex_clear(&e->mu);
  g_cond_clear(&e->cond);
  g_free(e);
}

static void target_ref(void *t) { eph_ref(t); }
static void target_unref(void *t) { eph_unref(t); }
static const zkrc__watch_target_ops watch_ops = {target_ref, target_unref};

/* ---------------------------------------------------------- the events */

static void tell_app(void *owner, void *event) {
  zkrc_ephemeral *e = owner;
  e->on_event(e, event, e->event_arg);
}

static void drain(void *arg) {
  zkrc_ephemeral *e = arg;
  zkrc__evq_drain(&e->events, &e->mu, &e->cond, e);
  eph_unref(e);
}

/* Queue @p type with its @p reason and @p zk_error; TRUE when the caller
 * must post the drain (post_drain()). */
static gboolean tell_locked(zkrc_ephemeral *e, zkrc_ephemeral_event_type type,
                            int reason, int zk_error) {
  e->told_registered = type == ZKRC_EPHEMERAL_REGISTERED;
  g_cond_broadcast(&e->cond);
  if (e->on_event == NULL)
    return FALSE;
  zkrc_ephemeral_event *ev = g_new0(zkrc_ephemeral_event, 1);
  ev->type = type;
  ev->reason = reason;
  ev->zk_error = zk_error;
  return zkrc__evq_push(&e->events, ev);
}

static void post_drain(zkrc_ephemeral *e, gboolean needed) {
  if (needed)
    zkrc__session_post(e->s, drain, eph_ref(e));
}

/* LOST for @p reason, if REGISTERED was the last thing told. */
static gboolean lost_locked(zkrc_ephemeral *e, int reason, int zk_error) {
  return e->told_registered &&
         tell_locked(e, ZKRC_EPHEMERAL_LOST, reason, zk_error);
}

/* ------------------------------------------------------------- retries */

static gboolean retry_fired(gpointer data) {
  zkrc_ephemeral *e = data;
  g_mutex_lock(&e->mu);
  GSource *timer = e->retry_timer;
  e->retry_timer = NULL;
  g_mutex_unlock(&e->mu);
  if (timer)
    g_source_unref(timer);
  try_create(e);
  return G_SOURCE_REMOVE;
}

/* Try again after a backoff (50 ms doubling to 2 s) while connected; the
 * next connection tries anyway. */
static void retry_later_locked(zkrc_ephemeral *e) {
  if (e->retry_timer || e->freeing || e->closed)
    return;
  int ms = e->retry_ms;
  e->retry_ms = MIN(ms * 2, RETRY_MAX_MS);
  e->retry_timer = zkrc__session_timer(e->s, ms, retry_fired, eph_ref(e),
                                       (GDestroyNotify)eph_unref);
}

/* ------------------------------------------------------------ creating */

/* What a create, an owner check or a watch carries: its session. */
typedef struct eph_req {
  zkrc_ephemeral *e;
  uint64_t generation;
  int64_t session_id;
  uint64_t data_seq;     /* of the data the create sent */
  gboolean owner_check;  /* an exists after NODEEXISTS (the create's) */
  gboolean with_parents; /* a create sent after its parents */
} eph_req;

static eph_req *req_new(zkrc_ephemeral *e, uint64_t generation,
                        int64_t session_id) {
  eph_req *r = g_new0(eph_req, 1);
  r->e = eph_ref(e);
  r->generation = generation;
  r->session_id = session_id;
  return r;
}

static void req_free(eph_req *r) {
  eph_unref(r->e);
  g_free(r);
}

static void on_node_watch(int type, const char *path, void *target, void *ctx);
static void exists_done(int rc, const struct Stat *stat, const void *data);

/* An exists with a watch on the node (ours: for its deletion; another's:
 * for its going), on the handle of @p r; *@p r is answered either way. */
static void send_exists(zkrc_ephemeral *e, eph_req *r) {
  zkrc_conn *conn = zkrc__conn_use_connected(e->s, r->generation);
  int rc = ZCONNECTIONLOSS;
  if (conn) {
    void *ctx = zkrc__watch_register(conn, on_node_watch, e, &watch_ops);
    g_mutex_lock(&e->mu);
    void *old = e->watch_ctx; /* fired already, or superseded */
    e->watch_ctx = ctx;
    g_mutex_unlock(&e->mu);
    if (old)
      zkrc__watch_cancel(old);
    rc = zkrc__zk_exists(conn, e->path, ctx, exists_done, r);
    zkrc__conn_unuse(conn);
  }
  if (rc != ZOK)
    exists_done(rc, NULL, r);
}

/* A create that is over (done or failed). */
static void create_over_locked(zkrc_ephemeral *e) {
  e->creating = FALSE;
  g_cond_broadcast(&e->cond);
}

/* Our node exists on session @p r: registered, if the lease says so. */
static gboolean created_locked(zkrc_ephemeral *e, eph_req *r) {
  e->created_gen = r->generation;
  e->retry_ms = RETRY_MIN_MS;
  create_over_locked(e);
  if (zkrc__session_lease_left(e->s, r->generation) <= 0)
    return FALSE; /* told when the lease says so (LEASED, CONNECTED) */
  return !e->told_registered &&
         tell_locked(e, ZKRC_EPHEMERAL_REGISTERED, ZKRC_OK, ZOK);
}

/* The node is not (or no longer) ours on session @p gen, for @p reason. */
static gboolean not_ours_locked(zkrc_ephemeral *e, uint64_t gen, int reason,
                                int zk_error) {
  if (e->created_gen == gen)
    e->created_gen = 0;
  e->watched = FALSE;
  return lost_locked(e, reason, zk_error);
}

static void exists_done(int rc, const struct Stat *stat, const void *data) {
  eph_req *r = (eph_req *)data;
  zkrc_ephemeral *e = r->e;
  gboolean post = FALSE, again = FALSE;
  gboolean ours = rc == ZOK && stat && stat->ephemeralOwner == r->session_id;
  g_mutex_lock(&e->mu);
  if (!r->owner_check)
    e->arming = FALSE;
  if (e->freeing || e->closed) {
    if (ours && r->owner_check)
      e->created_gen = r->generation; /* for the free to delete */
  } else if (ours) {
    if (r->owner_check)
      post = created_locked(e, r); /* a create whose reply was lost */
    e->watched = e->created_gen == r->generation;
  } else if (rc == ZOK || rc == ZNONODE) {
    /* Another session's (its watch waits for it to go), or gone. */
    again = rc == ZNONODE;
    post = again ? not_ours_locked(e, r->generation, ZKRC_ENONODE, ZNONODE)
                 : not_ours_locked(e, r->generation, ZKRC_ENODEEXISTS,
                                   ZNODEEXISTS);
  } else {
    e->watched = FALSE;
    retry_later_locked(e);
  }
  if (r->owner_check)
    create_over_locked(e);
  g_mutex_unlock(&e->mu);
  post_drain(e, post);
  if (again)
    try_create(e);
  req_free(r);
}

static void send_create(zkrc_ephemeral *e, gboolean with_parents);

static void ignore_stat_done(int rc, const struct Stat *stat, const void *d) {
  (void)rc;
  (void)stat;
  (void)d;
}

/* Write the latest data on session @p gen's node, nobody waiting (a
 * failure leaves it to the next creation); e->mu held, so that no other
 * write of the data passes this one on the way. */
static void send_latest_data_locked(zkrc_ephemeral *e, uint64_t gen,
                                    stat_completion_t done, void *arg) {
  zkrc_conn *conn = zkrc__conn_use_connected(e->s, gen);
  if (conn == NULL) {
    if (done)
      done(ZCONNECTIONLOSS, NULL, arg);
    return;
  }
  gsize len = 0;
  const char *bytes = e->data ? g_bytes_get_data(e->data, &len) : NULL;
  int rc = zkrc__zk_set(conn, e->path, bytes, bytes ? (int)len : -1, -1,
                        done ? done : ignore_stat_done, arg);
  zkrc__conn_unuse(conn);
  if (rc != ZOK && done)
    done(rc, NULL, arg);
}

/* A parent's create: only a refusal matters (the node's create follows). */
static void parent_done(int rc, const char *value, const void *data) {
  (void)value;
  zkrc_ephemeral *e = (zkrc_ephemeral *)data;
  if (rc == ZNOAUTH || rc == ZINVALIDACL) {
    g_mutex_lock(&e->mu);
    e->parent_refused = TRUE;
    g_mutex_unlock(&e->mu);
  }
  eph_unref(e);
}

static void create_done(int rc, const char *value, const void *data) {
  (void)value;
  eph_req *r = (eph_req *)data;
  zkrc_ephemeral *e = r->e;
  gboolean post = FALSE, parents = FALSE, check = FALSE, arm = FALSE;
  g_mutex_lock(&e->mu);
  if (e->freeing || e->closed) {
    if (rc == ZOK)
      e->created_gen = r->generation; /* for the free to delete */
    create_over_locked(e);
  } else if (rc == ZOK) {
    post = created_locked(e, r);
    e->watched = FALSE;
    arm = TRUE; /* the watch for its deletion */
    if (r->data_seq != e->data_seq)
      send_latest_data_locked(e, r->generation, NULL, NULL);
  } else if (rc == ZNODEEXISTS) {
    check = TRUE; /* ours or another's? */
  } else if (rc == ZNONODE && !r->with_parents) {
    parents = TRUE;
  } else if (rc == ZNOAUTH || rc == ZINVALIDACL || e->parent_refused) {
    e->noauth = TRUE;
    create_over_locked(e);
  } else {
    create_over_locked(e); /* also a parent that went again meanwhile */
    retry_later_locked(e);
  }
  g_mutex_unlock(&e->mu);
  post_drain(e, post);
  if (parents)
    send_create(e, TRUE);
  if (arm)
    try_create(e);
  if (check) {
    eph_req *c = req_new(e, r->generation, r->session_id);
    c->owner_check = TRUE;
    send_exists(e, c);
  }
  req_free(r);
}

/* The parents of the node, as containers, ignoring those that exist. */
static void send_parents(zkrc_ephemeral *e, zkrc_conn *conn) {
  struct ACL_vector *acl = zkrc__acl_vector(e->acl);
  for (const char *p = strchr(e->path + 1, '/'); p; p = strchr(p + 1, '/')) {
    char *parent = g_strndup(e->path, (gsize)(p - e->path));
    if (zkrc__zk_create(conn, parent, NULL, -1, acl, ZOO_CONTAINER, parent_done,
                        eph_ref(e)) != ZOK)
      eph_unref(e);
    g_free(parent);
  }
}

static void send_create(zkrc_ephemeral *e, gboolean with_parents) {
  zkrc_conn *conn = zkrc__conn_use(e->s);
  g_mutex_lock(&e->mu);
  if (conn == NULL || e->freeing || e->closed) {
    create_over_locked(e); /* the next connection tries again */
    g_mutex_unlock(&e->mu);
    if (conn)
      zkrc__conn_unuse(conn);
    return;
  }
  eph_req *r = req_new(e, conn->generation, conn->session_id);
  r->data_seq = e->data_seq;
  r->with_parents = with_parents;
  e->parent_refused = FALSE;
  GBytes *data = e->data ? g_bytes_ref(e->data) : NULL;
  g_mutex_unlock(&e->mu);
  if (with_parents)
    send_parents(e, conn);
  gsize len = 0;
  const char *bytes = data ? g_bytes_get_data(data, &len) : NULL;
  int rc =
      zkrc__zk_create(conn, e->path, bytes, bytes ? (int)len : -1,
                      zkrc__acl_vector(e->acl), ZOO_EPHEMERAL, create_done, r);
  zkrc__conn_unuse(conn);
  if (data)
    g_bytes_unref(data);
  if (rc != ZOK)
    create_done(rc, NULL, r);
}

/* Make the node ours on the current session: create it, unless a create is
 * under way, it is ours already (then watch it, if no watch is armed), or
 * the library stopped trying. */
static void try_create(zkrc_ephemeral *e) {
  zkrc__session_view view = zkrc__session_look(e->s, 0);
  g_mutex_lock(&e->mu);
  gboolean can = !e->creating && !e->freeing && !e->closed && !e->noauth &&
                 view.generation != 0;
  gboolean create = can && e->created_gen != view.generation;
  gboolean arm = can && !create && !e->watched && !e->arming;
  if (create)
    e->creating = TRUE;
  if (arm)
    e->arming = TRUE;
  g_mutex_unlock(&e->mu);
  if (create)
    send_create(e, FALSE);
  if (arm)
    send_exists(e, req_new(e, view.generation, view.session_id));
}

/* The watch on the node fired (completion thread): deleted, ours or
 * another's, is gone; otherwise the watch is spent. */
static void on_node_watch(int type, const char *path, void *target, void *ctx) {
  (void)path;
  (void)ctx;
  zkrc_ephemeral *e = target;
  if (type != ZOO_DELETED_EVENT && type != ZOO_CHANGED_EVENT &&
      type != ZOO_CREATED_EVENT)
    return;
  g_mutex_lock(&e->mu);
  gboolean post = FALSE, freeing = e->freeing;
  if (!freeing && type == ZOO_DELETED_EVENT) {
    e->created_gen = 0;
    e->watched = FALSE;
    post = lost_locked(e, ZKRC_ENONODE, ZNONODE);
  } else if (!freeing) {
    e->watched = FALSE;
  }
  g_mutex_unlock(&e->mu);
  post_drain(e, post);
  if (!freeing)
    try_create(e);
}

/* ------------------------------------------------------ session events */

/* The session's worker: register on each connection, lose with the lease. */
static void on_session(zkrc_session *s, zkrc_session_event_type ev,
                       uint64_t generation, void *arg) {
  (void)s;
  zkrc_ephemeral *e = arg;
  gboolean post = FALSE, create = FALSE;
  int reason, zk_error;
  g_mutex_lock(&e->mu);
  switch ((int)ev) {
  case ZKRC_SESSION_EVENT_CONNECTED:
  case ZKRC_SESSION_EVENT_RECONNECTED:
  case ZKRC__SESSION_EVENT_LEASED:
    /* A create that succeeded before the lease was running is told now. */
    if (e->created_gen == generation && !e->told_registered &&
        zkrc__session_lease_left(e->s, generation) > 0)
      post = tell_locked(e, ZKRC_EPHEMERAL_REGISTERED, ZKRC_OK, ZOK);
    create = TRUE;
    break;
  case ZKRC_SESSION_EVENT_LOST:
  case ZKRC_SESSION_EVENT_EXPIRED:
    zkrc__session_event_reason(e->s, ev, &reason, &zk_error);
    post = not_ours_locked(e, generation, reason, zk_error);
    break;
  case ZKRC_SESSION_EVENT_CLOSED:
  case ZKRC_SESSION_EVENT_AUTH_FAILED:
    zkrc__session_event_reason(e->s, ev, &reason, &zk_error);
    if (!e->closed)
      post = tell_locked(e, ZKRC_EPHEMERAL_CLOSED, reason, zk_error);
    e->closed = TRUE;
    break;
  default:
    break;
  }
  g_mutex_unlock(&e->mu);
  post_drain(e, post);
  if (create)
    try_create(e);
}

/* ------------------------------------------------------------- the API */

/* The defaults, in a whole struct of ours. */
static void ephemeral_options_defaults(zkrc_ephemeral_options *opts) {
  if (opts == NULL)
    return;
  memset(opts, 0, sizeof *opts);
  opts->size = sizeof *opts;
}

void zkrc_ephemeral_options_init_sized(zkrc_ephemeral_options *opts,
                                       size_t size) {
  zkrc_ephemeral_options full;
  ephemeral_options_defaults(&full);
  zkrc__options_give(opts, size, &full, sizeof full);
}

const char *zkrc_ephemeral_event_name(zkrc_ephemeral_event_type type) {
  switch (type) {
  case ZKRC_EPHEMERAL_REGISTERED:
    return "registered";
  case ZKRC_EPHEMERAL_LOST:
    return "lost";
  case ZKRC_EPHEMERAL_CLOSED:
    return "closed";
  }
  return "unknown";
}

static gboolean data_valid(const void *data, size_t len) {
  return data != NULL || len == 0;
}

/* The size rule (request_size.h) for @p len bytes of data on @p path: the
 * create, which every new session sends again, and so the setData too
 * (the create's ACL list and flags outweigh the setData's version). */
static int data_fits(zkrc_session *s, const char *path, size_t len,
                     const struct ACL_vector *acl) {
  return zkrc__request_check_create(s, path, len, acl, ZOO_EPHEMERAL);
}

static GBytes *data_copy(const void *data, size_t len) {
  return data ? g_bytes_new(data, len) : NULL;
}

int zkrc_ephemeral_new(zkrc_ephemeral **out, zkrc_session *s, const char *path,
                       const void *data, size_t len,
                       const zkrc_ephemeral_options *given) {
  if (out)
    *out = NULL;
  zkrc_ephemeral_options o;
  zkrc_ephemeral_options_init(&o);
  if (out == NULL || s == NULL || zkrc_path_validate(path, NULL) != ZKRC_OK ||
      !data_valid(data, len) || !zkrc__options_take(&o, sizeof o, given) ||
      !zkrc__acl_valid(o.acl))
    return zkrc__fail(ZKRC_EINVAL);
  int err = data_fits(s, path, len, o.acl);
  if (err == ZKRC_OK && !zkrc__session_reserve(s, path_cost(s, path)))
    err = ZKRC_ETOOBIG; /* the session's close could not list it */
  if (err != ZKRC_OK)
    return zkrc__fail(err); /* before anything is sent, ever */
  zkrc_ephemeral *e = g_new0(zkrc_ephemeral, 1);
  e->refs = 1;
  g_mutex_init(&e->mu);
  g_cond_init(&e->cond);
  e->s = zkrc__session_ref_recipe(s);
  e->path = g_strdup(path);
  e->acl = zkrc__acl_new(o.acl);
  e->on_event = o.on_event;
  e->event_arg = o.event_arg;
  e->data = data_copy(data, len);
  e->retry_ms = RETRY_MIN_MS;
  zkrc__evq_init(&e->events, tell_app, g_free);
  gboolean closed = FALSE;
  e->observer = zkrc__session_observe(s, on_session, e, &closed);
  if (closed) {
    zkrc__session_unobserve(s, e->observer);
    eph_unref(e);
    return zkrc__fail(ZKRC_ECLOSED);
  }
  try_create(e);
  *out = e;
  return ZKRC_OK;
}

int zkrc_ephemeral_wait_registered(zkrc_ephemeral *e, int timeout_ms) {
  if (e == NULL || !zkrc__timeout_valid(timeout_ms))
    return zkrc__fail(ZKRC_EINVAL);
  int64_t deadline = zkrc__deadline_after(timeout_ms);
  g_mutex_lock(&e->mu);
  while (!e->told_registered && !e->closed && !e->noauth &&
         zkrc__cond_wait_until(&e->cond, &e->mu, deadline))
    ;
  int err = e->told_registered ? ZKRC_OK
            : e->noauth        ? ZKRC_ENOAUTH
            : e->closed        ? ZKRC_ECLOSED
                               : ZKRC_ETIMEDOUT;
  g_mutex_unlock(&e->mu);
  return err == ZKRC_OK ? ZKRC_OK : zkrc__fail(err);
}

int zkrc_ephemeral_is_registered(zkrc_ephemeral *e) {
  if (e == NULL)
    return 0;
  g_mutex_lock(&e->mu);
  uint64_t gen = e->told_registered ? e->created_gen : 0;
  g_mutex_unlock(&e->mu);
  return gen != 0 && zkrc__session_lease_left(e->s, gen) > 0;
}

int zkrc_ephemeral_set_data(zkrc_ephemeral *e, const void *data, size_t len,
                            int timeout_ms) {
  if (e == NULL || !data_valid(data, len) || !zkrc__timeout_valid(timeout_ms))
    return zkrc__fail(ZKRC_EINVAL);
  int fits = data_fits(e->s, e->path, len, zkrc__acl_vector(e->acl));
  if (fits != ZKRC_OK)
    return zkrc__fail(fits); /* the data kept is the previous one */
  GBytes *copy = data_copy(data, len);
  zkrc__call *call = NULL;
  g_mutex_lock(&e->mu);
  if (e->data)
    g_bytes_unref(e->data);
  e->data = copy;
  e->data_seq++;
  uint64_t gen = e->created_gen;
  if (gen) {
    call = zkrc__call_new();
    send_latest_data_locked(e, gen, zkrc__call_stat_done, call);
  }
  g_mutex_unlock(&e->mu);
  if (call == NULL)
    return ZKRC_OK; /* kept for the next creation */
  int err = ZKRC_OK;
  if (!zkrc__call_wait(call, zkrc__deadline_after(timeout_ms)))
    err = ZKRC_ETIMEDOUT;
  else if (zkrc__session_reply_rc(e->s, call->rc) == ZCONNECTIONLOSS)
    err = ZKRC_ECONNLOSS; /* kept: written at the next creation */
  else if (call->rc != ZOK && call->rc != ZNONODE) /* gone: kept */
    err = zkrc__fail_from_zk(call->rc);
  zkrc__call_unref(call);
  return err == ZKRC_OK ? ZKRC_OK : zkrc__fail(err);
}

const char *zkrc_ephemeral_path(zkrc_ephemeral *e) {
  return e ? e->path : NULL;
}

/* Delete our node on the session that created it, waiting at most about a
 * round trip (bounded by the session timeout). */
static void delete_node(zkrc_ephemeral *e, uint64_t gen) {
  zkrc_conn *conn = zkrc__conn_use_connected(e->s, gen);
  if (conn == NULL)
    return; /* it goes with its session */
  zkrc__call *call = zkrc__call_new();
  int rc = zkrc__zk_delete(conn, e->path, -1, zkrc__call_void_done, call);
  zkrc__conn_unuse(conn);
  if (rc != ZOK)
    zkrc__call_fail_unsent(call, rc);
  int t = zkrc_session_timeout(e->s);
  zkrc__call_wait(call, zkrc__deadline_after(t > 1000 ? t : 1000));
  zkrc__call_unref(call);
}

void zkrc_ephemeral_free(zkrc_ephemeral *e) {
  if (e == NULL)
    return;
  zkrc__session_unobserve(e->s, e->observer);
  g_mutex_lock(&e->mu);
  e->freeing = TRUE;
  zkrc__evq_close(&e->events, &e->mu, &e->cond);
  GSource *timer = e->retry_timer;
  e->retry_timer = NULL;
  /* A create in flight may still succeed: wait for it (bounded by the
   * client's own request timeout), so that its node is deleted too. */
  int64_t deadline = zkrc__deadline_after(zkrc_session_timeout(e->s) + 1000);
  while (e->creating && zkrc__cond_wait_until(&e->cond, &e->mu, deadline))
    ;
  uint64_t gen = e->created_gen;
  e->created_gen = 0;
  void *ctx = e->watch_ctx;
  e->watch_ctx = NULL;
  g_mutex_unlock(&e->mu);
  if (ctx)
    zkrc__watch_cancel(ctx);
  if (timer) {
    g_source_destroy(timer);
    g_source_unref(timer);
  }
  if (gen)
    delete_node(e, gen);
  eph_unref(e);
}
