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
 * runs out or it expires, or the node is deleted.  The object is a
 * zkrc__object (core/object.h): its events are told in the order decided
 * under e->o.mu, a recipe's mutex (session_private.h).  Ending it (free,
 * free_async, and the node's delete behind them) is ephemeral_free.c.
 */
#include "config.h"

#include <string.h>

#include "core/util.h"
#include "membership/ephemeral_private.h"
#include "session/call.h"
#include "session/request_size.h"
#include "session/zk_call.h"
#include "zkrecipes/error.h"
#include "zkrecipes/path.h"

#define RETRY_MIN_MS 50
#define RETRY_MAX_MS 2000

static void try_create(zkrc_ephemeral *e);

/* ------------------------------------------------------------ lifetime */

/* What our node takes of its session's budget (session_internal.h). */
static size_t path_cost(zkrc_session *s, const char *path) {
  return zkrc__ephemeral_cost(s, strlen(path));
}

void zkrc__eph_release_locked(zkrc_ephemeral *e) {
  if (e->reserved) {
    zkrc__session_release(e->s, path_cost(e->s, e->path));
    zkrc__session_lease_want(e->s, FALSE);
  }
  e->reserved = FALSE;
}

/* The last reference went (core/object.h). */
static void eph_finalize(zkrc__object *o) {
  zkrc_ephemeral *e = (zkrc_ephemeral *)o;
  if (e->data)
    g_bytes_unref(e->data);
  zkrc__acl_unref(e->acl);
  zkrc__eph_release_locked(e); /* o.mu is cleared: nobody else is left */
  zkrc__session_unref_recipe(e->s);
  g_free(e->path);
  g_free(e);
}

static zkrc_ephemeral *eph_ref(zkrc_ephemeral *e) {
  zkrc__object_ref(&e->o);
  return e;
}

static void eph_unref(zkrc_ephemeral *e) { zkrc__object_unref(&e->o); }

static void target_ref(void *t) { eph_ref(t); }
static void target_unref(void *t) { eph_unref(t); }
static const zkrc__watch_target_ops watch_ops = {target_ref, target_unref};

/* ---------------------------------------------------------- the events */

/* An event on its way to the application (core/object.h). */
typedef struct eph_event {
  zkrc__object_event base;
  zkrc_ephemeral_event ev;
} eph_event;

static void eph_tell(zkrc__object *o, zkrc__object_event *base) {
  zkrc_ephemeral *e = (zkrc_ephemeral *)o;
  e->on_event(e, &((eph_event *)base)->ev, e->event_arg);
}

/* Tell @p type with its @p reason and @p zk_error, after what was decided
 * before; nothing once the object is ending. */
static void tell_locked(zkrc_ephemeral *e, zkrc_ephemeral_event_type type,
                        int reason, int zk_error) {
  e->told_registered = type == ZKRC_EPHEMERAL_REGISTERED;
  g_cond_broadcast(&e->o.cond);
  if (e->on_event == NULL || zkrc__object_ending(&e->o))
    return;
  eph_event *r = zkrc__object_event_new(sizeof *r, eph_tell, NULL);
  r->ev = (zkrc_ephemeral_event){type, reason, zk_error};
  zkrc__object_tell_locked(&e->o, &r->base);
}

/* LOST for @p reason, if REGISTERED was the last thing told. */
static void lost_locked(zkrc_ephemeral *e, int reason, int zk_error) {
  if (e->told_registered)
    tell_locked(e, ZKRC_EPHEMERAL_LOST, reason, zk_error);
}

/* ------------------------------------------------------------- retries */

static gboolean retry_fired(gpointer data) {
  zkrc_ephemeral *e = data;
  g_mutex_lock(&e->o.mu);
  GSource *timer = e->retry_timer;
  e->retry_timer = NULL;
  g_mutex_unlock(&e->o.mu);
  if (timer)
    g_source_unref(timer);
  try_create(e);
  return G_SOURCE_REMOVE;
}

/* Try again after a backoff (50 ms doubling to 2 s) while connected; the
 * next connection tries anyway. */
static void retry_later_locked(zkrc_ephemeral *e) {
  if (e->retry_timer || zkrc__object_ending(&e->o) || e->ended)
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
 * for its going), on the handle of @p r; *@p r is answered either way.
 * Once the object is ending (an owner check behind a create that was in
 * flight), without a watch. */
static void send_exists(zkrc_ephemeral *e, eph_req *r) {
  zkrc_conn *conn = zkrc__conn_use_connected(e->s, r->generation);
  int rc = ZCONNECTIONLOSS;
  if (conn) {
    void *ctx = zkrc__watch_register(conn, on_node_watch, e, &watch_ops);
    g_mutex_lock(&e->o.mu);
    gboolean ending = zkrc__object_ending(&e->o);
    void *old = ending ? ctx : e->watch_ctx; /* fired already, superseded */
    if (!ending)
      e->watch_ctx = ctx;
    g_mutex_unlock(&e->o.mu);
    if (old)
      zkrc__watch_cancel(old);
    rc = zkrc__zk_exists(conn, e->path, ending ? NULL : ctx, exists_done, r);
    zkrc__conn_unuse(conn);
  }
  if (rc != ZOK)
    exists_done(rc, NULL, r);
}

/* A create that is over (done or failed); no longer pending work of a
 * free_async (ephemeral_free.c counted it). */
static void create_over_locked(zkrc_ephemeral *e) {
  e->creating = FALSE;
  g_cond_broadcast(&e->o.cond);
  if (e->create_busy) {
    e->create_busy = FALSE;
    zkrc__object_idle_locked(&e->o);
  }
}

/* Our node exists on session @p r: registered, if the lease says so. */
static void created_locked(zkrc_ephemeral *e, eph_req *r) {
  e->created_gen = r->generation;
  e->retry_ms = RETRY_MIN_MS;
  create_over_locked(e);
  if (zkrc__session_lease_left(e->s, r->generation) <= 0)
    return; /* told when the lease says so (LEASED, CONNECTED) */
  if (!e->told_registered)
    tell_locked(e, ZKRC_EPHEMERAL_REGISTERED, ZKRC_OK, ZOK);
}

/* The node is not (or no longer) ours on session @p gen, for @p reason. */
static void not_ours_locked(zkrc_ephemeral *e, uint64_t gen, int reason,
                            int zk_error) {
  if (e->created_gen == gen)
    e->created_gen = 0;
  e->watched = FALSE;
  lost_locked(e, reason, zk_error);
}

static void exists_done(int rc, const struct Stat *stat, const void *data) {
  eph_req *r = (eph_req *)data;
  zkrc_ephemeral *e = r->e;
  gboolean again = FALSE;
  gboolean ours = rc == ZOK && stat && stat->ephemeralOwner == r->session_id;
  g_mutex_lock(&e->o.mu);
  if (!r->owner_check)
    e->arming = FALSE;
  if (zkrc__object_ending(&e->o)) {
    if (ours && r->owner_check) /* a create whose reply was lost */
      zkrc__eph_delete_locked(e, r->generation);
  } else if (ours) {
    if (r->owner_check)
      created_locked(e, r); /* a create whose reply was lost */
    e->watched = e->created_gen == r->generation;
  } else if (rc == ZOK || rc == ZNONODE) {
    /* Another session's (its watch waits for it to go), or gone. */
    again = rc == ZNONODE;
    if (again)
      not_ours_locked(e, r->generation, ZKRC_ENONODE, ZNONODE);
    else
      not_ours_locked(e, r->generation, ZKRC_ENODEEXISTS, ZNODEEXISTS);
  } else {
    e->watched = FALSE;
    retry_later_locked(e);
  }
  if (r->owner_check)
    create_over_locked(e);
  g_mutex_unlock(&e->o.mu);
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
 * failure leaves it to the next creation); e->o.mu held, so that no other
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
    g_mutex_lock(&e->o.mu);
    e->parent_refused = TRUE;
    g_mutex_unlock(&e->o.mu);
  }
  eph_unref(e);
}

static void create_done(int rc, const char *value, const void *data) {
  (void)value;
  eph_req *r = (eph_req *)data;
  zkrc_ephemeral *e = r->e;
  gboolean parents = FALSE, check = FALSE, arm = FALSE;
  g_mutex_lock(&e->o.mu);
  if (zkrc__object_ending(&e->o)) {
    check = zkrc__eph_created_ending_locked(e, r->generation, rc);
    if (!check)
      create_over_locked(e);
  } else if (rc == ZOK) {
    created_locked(e, r);
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
  g_mutex_unlock(&e->o.mu);
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
  g_mutex_lock(&e->o.mu);
  if (conn == NULL || zkrc__object_ending(&e->o) || e->ended) {
    create_over_locked(e); /* the next connection tries again */
    g_mutex_unlock(&e->o.mu);
    if (conn)
      zkrc__conn_unuse(conn);
    return;
  }
  eph_req *r = req_new(e, conn->generation, conn->session_id);
  r->data_seq = e->data_seq;
  r->with_parents = with_parents;
  e->parent_refused = FALSE;
  GBytes *data = e->data ? g_bytes_ref(e->data) : NULL;
  g_mutex_unlock(&e->o.mu);
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
  g_mutex_lock(&e->o.mu);
  gboolean can = !e->creating && !zkrc__object_ending(&e->o) && !e->ended &&
                 !e->noauth && view.generation != 0;
  gboolean create = can && e->created_gen != view.generation;
  gboolean arm = can && !create && !e->watched && !e->arming;
  if (create)
    e->creating = TRUE;
  if (arm)
    e->arming = TRUE;
  g_mutex_unlock(&e->o.mu);
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
  g_mutex_lock(&e->o.mu);
  gboolean ending = zkrc__object_ending(&e->o);
  if (!ending && type == ZOO_DELETED_EVENT) {
    e->created_gen = 0;
    e->watched = FALSE;
    lost_locked(e, ZKRC_ENONODE, ZNONODE);
  } else if (!ending) {
    e->watched = FALSE;
  }
  g_mutex_unlock(&e->o.mu);
  if (!ending)
    try_create(e);
}

/* ------------------------------------------------------ session events */

/* The session's worker: register on each connection, lose with the lease. */
static void on_session(zkrc_session *s, zkrc_session_event_type ev,
                       uint64_t generation, void *arg) {
  (void)s;
  zkrc_ephemeral *e = arg;
  gboolean create = FALSE;
  int reason, zk_error;
  g_mutex_lock(&e->o.mu);
  switch ((int)ev) {
  case ZKRC_SESSION_EVENT_CONNECTED:
  case ZKRC_SESSION_EVENT_RECONNECTED:
  case ZKRC__SESSION_EVENT_LEASED:
    /* A create that succeeded before the lease was running is told now. */
    if (e->created_gen == generation && !e->told_registered &&
        zkrc__session_lease_left(e->s, generation) > 0)
      tell_locked(e, ZKRC_EPHEMERAL_REGISTERED, ZKRC_OK, ZOK);
    create = TRUE;
    break;
  case ZKRC_SESSION_EVENT_LOST:
  case ZKRC_SESSION_EVENT_EXPIRED:
    zkrc__session_event_reason(e->s, ev, &reason, &zk_error);
    not_ours_locked(e, generation, reason, zk_error);
    break;
  case ZKRC_SESSION_EVENT_CLOSED:
  case ZKRC_SESSION_EVENT_AUTH_FAILED:
    zkrc__session_event_reason(e->s, ev, &reason, &zk_error);
    if (!e->ended)
      tell_locked(e, ZKRC_EPHEMERAL_CLOSED, reason, zk_error);
    e->ended = TRUE;
    break;
  default:
    break;
  }
  g_mutex_unlock(&e->o.mu);
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
  zkrc__object_init(&e->o, zkrc__session_executor(s), eph_finalize);
  e->s = zkrc__session_ref_recipe(s);
  /* The budget's share, and a dependent of the lease (REGISTERED is told
   * only while it runs), until the object ends. */
  e->reserved = TRUE;
  zkrc__session_lease_want(s, TRUE);
  e->path = g_strdup(path);
  e->acl = zkrc__acl_new(o.acl);
  e->on_event = o.on_event;
  e->event_arg = o.event_arg;
  e->data = data_copy(data, len);
  e->retry_ms = RETRY_MIN_MS;
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
  eph_ref(e); /* a free from another thread wakes us: ZKRC_ECLOSED */
  g_mutex_lock(&e->o.mu);
  while (!e->told_registered && !e->ended && !e->noauth &&
         !zkrc__object_ending(&e->o) &&
         zkrc__cond_wait_until(&e->o.cond, &e->o.mu, deadline))
    ;
  int err = e->told_registered           ? ZKRC_OK
            : e->noauth                  ? ZKRC_ENOAUTH
            : e->ended                   ? ZKRC_ECLOSED
            : zkrc__object_ending(&e->o) ? ZKRC_ECLOSED
                                         : ZKRC_ETIMEDOUT;
  g_mutex_unlock(&e->o.mu);
  eph_unref(e);
  return err == ZKRC_OK ? ZKRC_OK : zkrc__fail(err);
}

int zkrc_ephemeral_is_registered(zkrc_ephemeral *e) {
  if (e == NULL)
    return 0;
  g_mutex_lock(&e->o.mu);
  uint64_t gen = e->told_registered ? e->created_gen : 0;
  g_mutex_unlock(&e->o.mu);
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
  g_mutex_lock(&e->o.mu);
  if (e->data)
    g_bytes_unref(e->data);
  e->data = copy;
  e->data_seq++;
  uint64_t gen = e->created_gen;
  if (gen) {
    call = zkrc__call_new();
    send_latest_data_locked(e, gen, zkrc__call_stat_done, call);
  }
  g_mutex_unlock(&e->o.mu);
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
