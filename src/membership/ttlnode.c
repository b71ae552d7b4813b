/*
 * A node kept alive by touching a TTL child (zkrecipes/ttlnode.h), on the
 * format of Curator's PersistentTtlNode: PATH a container with the data,
 * PATH/touch a PERSISTENT_WITH_TTL node written every period.
 *
 * One touch round at a time, a chain of requests each sent from the
 * previous one's completion (no thread, no waiting):
 *   1. unless the node is known to exist with the latest data: its create,
 *      after the containers above it (create_path.h); a node that exists
 *      gets our data (setData), as Curator's PersistentNode does;
 *   2. the touch child's setData; when it is missing, its create with the
 *      TTL; a create that finds no parent (the node was deleted) goes back
 *      to 1, once a round.
 * A round starts when the session connects (and at once when connected),
 * then a period after each round that ended well, and after a failure
 * with a backoff (50 ms doubling up to the period).  The servers' refusal
 * of TTL nodes (ZUNIMPLEMENTED) or of our ACL ends the rounds for good.
 * Nothing is deleted at the free: the node goes a TTL after its last
 * touch, unless another keeper touches it.
 *
 * The object is a zkrc__object (core/object.h); everything below o is
 * under o.mu, a recipe's mutex in the lock order (session_private.h).  No
 * request is sent with it held.
 */
#include "config.h"

#include <string.h>

#include "core/object.h"
#include "core/util.h"
#include "membership/create_path.h"
#include "session/call.h"
#include "session/request_size.h"
#include "session/zk_call.h"
#include "zkrecipes/error.h"
#include "zkrecipes/path.h"
#include "zkrecipes/ttlnode.h"

#define RETRY_MIN_MS 50
#define DEFAULT_CHILD "touch"
#define DEFAULT_FACTOR 2
/* A round's end that is no outcome: the object is ending. */
#define ROUND_STOPPED ZKRC__CREATE_STOPPED

struct zkrc_ttl_node {
  zkrc__object o; /* first: references, mutex, condition, events */
  zkrc_session *s;
  char *path, *touch;
  zkrc__acl *acl;
  int64_t ttl_ms;
  int period_ms;
  zkrc_ttl_node_event_fn on_event;
  void *event_arg;
  unsigned long observer;
  GBytes *data;       /* the latest data (NULL: none) */
  uint64_t data_seq;  /* set_data calls so far */
  uint64_t round_seq; /* the data_seq the round in flight writes */
  gboolean made;      /* the node exists with the latest data, we think */
  gboolean running;   /* a round is in flight (free_async's pending work) */
  gboolean remade;    /* ... and went back to the node's create once */
  gboolean again;     /* another round as soon as this one ends */
  gboolean kept;      /* KEPT is the last thing told */
  gboolean failed_told;
  int refused;    /* ZKRC_ENOTSUP or ZKRC_ENOAUTH: no more rounds */
  gboolean ended; /* CLOSED told: the session is closed for good */
  int retry_ms;
  GSource *timer;
  int64_t round_started; /* when the round in flight began (monotonic) */
  int64_t kept_until;    /* a confirmed touch's node lasts at least until */
};

static void round_start(zkrc_ttl_node *n);

/* ------------------------------------------------------------ lifetime */

static void ttl_finalize(zkrc__object *o) {
  zkrc_ttl_node *n = (zkrc_ttl_node *)o;
  if (n->data)
    g_bytes_unref(n->data);
  zkrc__acl_unref(n->acl);
  zkrc__session_unref_recipe(n->s);
  g_free(n->path);
  g_free(n->touch);
  g_free(n);
}

static zkrc_ttl_node *ttl_ref(zkrc_ttl_node *n) {
  zkrc__object_ref(&n->o);
  return n;
}

static void ttl_unref(void *n) { zkrc__object_unref(&((zkrc_ttl_node *)n)->o); }

/* May a round run: not ending, not refused, the session not closed? */
static gboolean alive_locked(const zkrc_ttl_node *n) {
  return !zkrc__object_ending(&n->o) && !n->ended && n->refused == ZKRC_OK;
}

/* The timer, taken out under o.mu; destroyed outside it. */
static void timer_drop(GSource *timer) {
  if (timer) {
    g_source_destroy(timer);
    g_source_unref(timer);
  }
}

/* ---------------------------------------------------------- the events */

typedef struct ttl_event {
  zkrc__object_event base;
  zkrc_ttl_node_event ev;
} ttl_event;

static void ttl_tell(zkrc__object *o, zkrc__object_event *base) {
  zkrc_ttl_node *n = (zkrc_ttl_node *)o;
  n->on_event(n, &((ttl_event *)base)->ev, n->event_arg);
}

static void tell_locked(zkrc_ttl_node *n, zkrc_ttl_node_event_type type,
                        int reason, int zk_error) {
  n->kept = type == ZKRC_TTL_NODE_KEPT;
  n->failed_told = type == ZKRC_TTL_NODE_FAILED;
  g_cond_broadcast(&n->o.cond);
  if (n->on_event == NULL || zkrc__object_ending(&n->o))
    return;
  ttl_event *r = zkrc__object_event_new(sizeof *r, ttl_tell, NULL);
  r->ev = (zkrc_ttl_node_event){type, reason, zk_error};
  zkrc__object_tell_locked(&n->o, &r->base);
}

/* ---------------------------------------------------------- scheduling */

static gboolean timer_fired(gpointer data) {
  zkrc_ttl_node *n = data;
  g_mutex_lock(&n->o.mu);
  GSource *timer = n->timer;
  n->timer = NULL;
  g_mutex_unlock(&n->o.mu);
  if (timer)
    g_source_unref(timer);
  round_start(n);
  return G_SOURCE_REMOVE;
}

/* The next round in @p ms (unless one is armed already). */
static void schedule_locked(zkrc_ttl_node *n, int ms) {
  if (n->timer || !alive_locked(n))
    return;
  n->timer = zkrc__session_timer(n->s, ms, timer_fired, ttl_ref(n), ttl_unref);
}

/* The round in flight ended with ZooKeeper's code @p rc (ROUND_STOPPED:
 * the object is ending).  Drops the round's reference. */
static void round_end(zkrc_ttl_node *n, int rc) {
  g_mutex_lock(&n->o.mu);
  n->running = FALSE;
  if (rc == ZOK) {
    n->retry_ms = RETRY_MIN_MS;
    /* The touch was written after the round began; the servers count its
     * TTL from then (less 0.1% for the clocks' rates). */
    n->kept_until = n->round_started + n->ttl_ms * 1000 - n->ttl_ms;
    g_cond_broadcast(&n->o.cond);
    if (!n->kept)
      tell_locked(n, ZKRC_TTL_NODE_KEPT, ZKRC_OK, ZOK);
    schedule_locked(n, n->again || !n->made ? 0 : n->period_ms);
  } else if (rc == ZUNIMPLEMENTED || rc == ZNOAUTH || rc == ZINVALIDACL) {
    if (alive_locked(n)) {
      n->refused = zkrc_from_zk_error(rc);
      tell_locked(n, ZKRC_TTL_NODE_FAILED, n->refused, rc);
    }
  } else if (rc != ROUND_STOPPED && rc != ZCLOSING) {
    /* ZCLOSING: the session is closed; its observer tells CLOSED. */
    if (alive_locked(n) && (n->kept || !n->failed_told))
      tell_locked(n, ZKRC_TTL_NODE_FAILED, zkrc_from_zk_error(rc), rc);
    schedule_locked(n, n->again ? 0 : n->retry_ms);
    n->retry_ms = MIN(n->retry_ms * 2, MAX(n->period_ms, RETRY_MIN_MS));
  }
  n->again = FALSE;
  zkrc__object_idle_locked(&n->o); /* after its events */
  g_mutex_unlock(&n->o.mu);
  ttl_unref(n);
}

/* ------------------------------------------------------------ requests */

/* Is the round still wanted (the object not ending)? */
static gboolean round_go_on(void *arg) {
  zkrc_ttl_node *n = arg;
  g_mutex_lock(&n->o.mu);
  gboolean go = !zkrc__object_ending(&n->o);
  g_mutex_unlock(&n->o.mu);
  return go;
}

static void send_node(zkrc_ttl_node *n);

/* The requests of a round after the node's create. */
typedef enum round_req {
  REQ_NODE_DATA = 1, /* setData of the node: our data */
  REQ_TOUCH,         /* setData of the touch child */
  REQ_TOUCH_CREATE   /* its create with the TTL */
} round_req;

static void send_req(zkrc_ttl_node *n, round_req req);

/* The latest data, and its number, for the round. */
static GBytes *round_data(zkrc_ttl_node *n) {
  g_mutex_lock(&n->o.mu);
  GBytes *data = n->data ? g_bytes_ref(n->data) : NULL;
  n->round_seq = n->data_seq;
  g_mutex_unlock(&n->o.mu);
  return data;
}

/* The node exists with the data of the round: known made, unless newer
 * data came meanwhile (then the next round writes it). */
static void node_made(zkrc_ttl_node *n) {
  g_mutex_lock(&n->o.mu);
  n->made = n->round_seq == n->data_seq;
  g_mutex_unlock(&n->o.mu);
  send_req(n, REQ_TOUCH);
}

static void touch_created(int rc, const char *value, const void *data) {
  (void)value;
  zkrc_ttl_node *n = (zkrc_ttl_node *)data;
  rc = zkrc__session_reply_rc(n->s, rc);
  if (rc == ZNONODE && !n->remade) { /* the node went: make it again */
    g_mutex_lock(&n->o.mu);
    n->remade = TRUE;
    n->made = FALSE;
    g_mutex_unlock(&n->o.mu);
    send_node(n);
    return;
  }
  /* ZNODEEXISTS: another keeper made it just now, as good as a touch. */
  round_end(n, rc == ZNODEEXISTS ? ZOK : rc);
}

static void touch_done(int rc, const struct Stat *stat, const void *data) {
  (void)stat;
  zkrc_ttl_node *n = (zkrc_ttl_node *)data;
  rc = zkrc__session_reply_rc(n->s, rc);
  if (rc == ZNONODE)
    send_req(n, REQ_TOUCH_CREATE);
  else
    round_end(n, rc);
}

static void node_data_done(int rc, const struct Stat *stat, const void *data) {
  (void)stat;
  zkrc_ttl_node *n = (zkrc_ttl_node *)data;
  rc = zkrc__session_reply_rc(n->s, rc);
  if (rc == ZOK)
    node_made(n);
  else
    round_end(n, rc); /* ZNONODE: deleted meanwhile, made again soon */
}

/* Send @p req on the current handle; one not sent is answered at once. */
static void send_req(zkrc_ttl_node *n, round_req req) {
  if (!round_go_on(n)) {
    round_end(n, ROUND_STOPPED);
    return;
  }
  GBytes *data = req == REQ_NODE_DATA ? round_data(n) : NULL;
  gsize len = 0;
  const char *bytes = data ? g_bytes_get_data(data, &len) : NULL;
  zkrc_conn *conn = zkrc__conn_use(n->s);
  int rc = ZCLOSING; /* no handle: reply_rc makes it a lost connection */
  if (conn && req == REQ_TOUCH_CREATE)
    rc = zkrc__zk_create_ttl(conn, n->touch, "", 0, zkrc__acl_vector(n->acl),
                             ZOO_PERSISTENT_WITH_TTL, n->ttl_ms, touch_created,
                             n);
  else if (conn && req == REQ_TOUCH)
    rc = zkrc__zk_set(conn, n->touch, "", 0, -1, touch_done, n);
  else if (conn)
    rc = zkrc__zk_set(conn, n->path, bytes, bytes ? (int)len : -1, -1,
                      node_data_done, n);
  if (conn)
    zkrc__conn_unuse(conn);
  if (data)
    g_bytes_unref(data);
  if (rc == ZOK)
    return;
  if (req == REQ_TOUCH_CREATE) /* each applies zkrc__session_reply_rc */
    touch_created(rc, NULL, n);
  else if (req == REQ_TOUCH)
    touch_done(rc, NULL, n);
  else
    node_data_done(rc, NULL, n);
}

static void node_done(int rc, uint64_t generation, gboolean node_sent,
                      void *arg) {
  (void)generation;
  (void)node_sent;
  zkrc_ttl_node *n = arg;
  if (rc == ZOK)
    node_made(n);
  else if (rc == ZNODEEXISTS)
    send_req(n, REQ_NODE_DATA);
  else
    round_end(n, rc);
}

static void send_node(zkrc_ttl_node *n) {
  GBytes *data = round_data(n);
  gsize len = 0;
  const char *bytes = data ? g_bytes_get_data(data, &len) : NULL;
  zkrc__create_path_args a = {n->path, bytes, len, ZOO_CONTAINER, n->acl};
  zkrc__create_path(n->s, &a, round_go_on, node_done, n);
  if (data)
    g_bytes_unref(data);
}

/* A round now, or right after the one in flight. */
static void round_start(zkrc_ttl_node *n) {
  g_mutex_lock(&n->o.mu);
  if (!alive_locked(n) || n->running) {
    n->again = n->running;
    g_mutex_unlock(&n->o.mu);
    return;
  }
  GSource *timer = n->timer; /* the round schedules the next one */
  n->timer = NULL;
  n->running = TRUE;
  n->remade = FALSE;
  zkrc__object_busy_locked(&n->o);
  n->round_started = g_get_monotonic_time();
  ttl_ref(n); /* the round's, dropped by round_end */
  gboolean made = n->made;
  g_mutex_unlock(&n->o.mu);
  timer_drop(timer);
  if (made)
    send_req(n, REQ_TOUCH);
  else
    send_node(n);
}

/* ------------------------------------------------------ session events */

static void on_session(zkrc_session *s, zkrc_session_event_type ev,
                       uint64_t generation, void *arg) {
  (void)generation;
  zkrc_ttl_node *n = arg;
  if (ev == ZKRC_SESSION_EVENT_CONNECTED ||
      ev == ZKRC_SESSION_EVENT_RECONNECTED) {
    round_start(n);
    return;
  }
  if (ev != ZKRC_SESSION_EVENT_CLOSED && ev != ZKRC_SESSION_EVENT_AUTH_FAILED)
    return;
  int reason, zk_error;
  zkrc__session_event_reason(s, ev, &reason, &zk_error);
  g_mutex_lock(&n->o.mu);
  if (!n->ended)
    tell_locked(n, ZKRC_TTL_NODE_CLOSED, reason, zk_error);
  n->ended = TRUE;
  GSource *timer = n->timer;
  n->timer = NULL;
  g_mutex_unlock(&n->o.mu);
  timer_drop(timer);
}

/* ------------------------------------------------------------- the API */

void zkrc_ttl_node_options_init_sized(zkrc_ttl_node_options *opts,
                                      size_t size) {
  zkrc_ttl_node_options full;
  memset(&full, 0, sizeof full);
  full.size = sizeof full;
  zkrc__options_give(opts, size, &full, sizeof full);
}

const char *zkrc_ttl_node_event_name(zkrc_ttl_node_event_type type) {
  switch (type) {
  case ZKRC_TTL_NODE_KEPT:
    return "kept";
  case ZKRC_TTL_NODE_FAILED:
    return "failed";
  case ZKRC_TTL_NODE_CLOSED:
    return "closed";
  }
  return "unknown";
}

static gboolean ttl_valid(int64_t ttl_ms) {
  return ttl_ms >= 1 && ttl_ms <= ZKRC_TTL_MAX_MS;
}

/* PATH/NAME, or NULL when NAME is not one path component. */
static char *child_path(const char *path, const char *name) {
  if (name == NULL || *name == '\0' || strchr(name, '/'))
    return NULL;
  char *child = strcmp(path, "/") == 0 ? g_strconcat("/", name, NULL)
                                       : g_strconcat(path, "/", name, NULL);
  if (zkrc_path_validate(child, NULL) != ZKRC_OK) {
    g_free(child);
    return NULL;
  }
  return child;
}

int zkrc_ttl_node_new(zkrc_ttl_node **out, zkrc_session *s, const char *path,
                      int64_t ttl_ms, const void *data, size_t len,
                      const zkrc_ttl_node_options *given) {
  if (out)
    *out = NULL;
  zkrc_ttl_node_options o;
  zkrc_ttl_node_options_init(&o);
  if (out == NULL || s == NULL || zkrc_path_validate(path, NULL) != ZKRC_OK ||
      strcmp(path, "/") == 0 || !ttl_valid(ttl_ms) ||
      (data == NULL && len > 0) || !zkrc__options_take(&o, sizeof o, given) ||
      !zkrc__acl_valid(o.acl) || o.touch_factor < 0 || o.touch_factor == 1)
    return zkrc__fail(ZKRC_EINVAL);
  char *touch = child_path(path, o.child_name ? o.child_name : DEFAULT_CHILD);
  if (touch == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  int err = zkrc__request_check_create(s, path, len, o.acl, ZOO_CONTAINER);
  if (err == ZKRC_OK)
    err =
        zkrc__request_check_create(s, touch, 0, o.acl, ZOO_PERSISTENT_WITH_TTL);
  if (err != ZKRC_OK) {
    g_free(touch);
    return zkrc__fail(err);
  }
  zkrc_ttl_node *n = g_new0(zkrc_ttl_node, 1);
  zkrc__object_init(&n->o, zkrc__session_executor(s), ttl_finalize);
  n->s = zkrc__session_ref_recipe(s);
  n->path = g_strdup(path);
  n->touch = touch;
  n->acl = zkrc__acl_new(o.acl);
  n->ttl_ms = ttl_ms;
  int64_t period = ttl_ms / (o.touch_factor ? o.touch_factor : DEFAULT_FACTOR);
  n->period_ms = (int)CLAMP(period, 1, G_MAXINT);
  n->on_event = o.on_event;
  n->event_arg = o.event_arg;
  n->data = data ? g_bytes_new(data, len) : NULL;
  n->retry_ms = RETRY_MIN_MS; /* a backoff, even for a tiny TTL */
  gboolean closed = FALSE;
  n->observer = zkrc__session_observe(s, on_session, n, &closed);
  if (closed) {
    zkrc__session_unobserve(s, n->observer);
    ttl_unref(n);
    return zkrc__fail(ZKRC_ECLOSED);
  }
  /* Connected already: no CONNECTED to start it (one that comes too
   * only asks for a second round). */
  if (zkrc__session_connected(s, 0))
    round_start(n);
  *out = n;
  return ZKRC_OK;
}

/* KEPT told, and its touch less than a TTL old: a connection gone
 * silent does not leave the node reported kept past its TTL. */
static gboolean kept_now_locked(const zkrc_ttl_node *n) {
  return n->kept && alive_locked(n) && g_get_monotonic_time() < n->kept_until;
}

int zkrc_ttl_node_wait_kept(zkrc_ttl_node *n, int timeout_ms) {
  if (n == NULL || !zkrc__timeout_valid(timeout_ms))
    return zkrc__fail(ZKRC_EINVAL);
  int64_t deadline = zkrc__deadline_after(timeout_ms);
  ttl_ref(n); /* a free from another thread wakes us: ZKRC_ECLOSED */
  g_mutex_lock(&n->o.mu);
  while (!kept_now_locked(n) && alive_locked(n) &&
         zkrc__cond_wait_until(&n->o.cond, &n->o.mu, deadline))
    ;
  int err = kept_now_locked(n)      ? ZKRC_OK
            : n->refused != ZKRC_OK ? n->refused
            : !alive_locked(n)      ? ZKRC_ECLOSED
                                    : ZKRC_ETIMEDOUT;
  g_mutex_unlock(&n->o.mu);
  ttl_unref(n);
  return err == ZKRC_OK ? ZKRC_OK : zkrc__fail(err);
}

int zkrc_ttl_node_is_kept(zkrc_ttl_node *n) {
  if (n == NULL)
    return 0;
  g_mutex_lock(&n->o.mu);
  int kept = kept_now_locked(n);
  g_mutex_unlock(&n->o.mu);
  return kept;
}

int zkrc_ttl_node_set_data(zkrc_ttl_node *n, const void *data, size_t len) {
  if (n == NULL || (data == NULL && len > 0))
    return zkrc__fail(ZKRC_EINVAL);
  int err = zkrc__request_check_create(n->s, n->path, len,
                                       zkrc__acl_vector(n->acl), ZOO_CONTAINER);
  if (err != ZKRC_OK)
    return zkrc__fail(err);
  GBytes *copy = data ? g_bytes_new(data, len) : NULL;
  g_mutex_lock(&n->o.mu);
  GBytes *old = n->data;
  n->data = copy;
  n->data_seq++;
  n->made = FALSE;
  g_mutex_unlock(&n->o.mu);
  if (old)
    g_bytes_unref(old);
  if (zkrc__session_connected(n->s, 0))
    round_start(n); /* else the next connection's round writes it */
  return ZKRC_OK;
}

const char *zkrc_ttl_node_path(zkrc_ttl_node *n) { return n ? n->path : NULL; }

void zkrc_ttl_node_free(zkrc_ttl_node *n) {
  if (n == NULL)
    return;
  zkrc__session_unobserve(n->s, n->observer);
  g_mutex_lock(&n->o.mu);
  zkrc__object_close_locked(&n->o); /* no event after this returns */
  GSource *timer = n->timer;
  n->timer = NULL;
  g_mutex_unlock(&n->o.mu);
  timer_drop(timer);
  ttl_unref(n); /* the owner's; a round in flight holds its own */
}

int zkrc_ttl_node_free_async(zkrc_ttl_node *n, zkrc_callback_fn done,
                             void *arg) {
  if (n == NULL || done == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  zkrc__session_unobserve(n->s, n->observer);
  g_mutex_lock(&n->o.mu);
  /* done after the round in flight (pending work) has ended */
  zkrc__object_detach_locked(&n->o, done, arg);
  GSource *timer = n->timer;
  n->timer = NULL;
  g_mutex_unlock(&n->o.mu);
  timer_drop(timer);
  ttl_unref(n);
  return ZKRC_OK;
}

/* ------------------------------------------------------------ one shot */

typedef struct ttl_create_arg {
  const char *path;
  const void *data;
  size_t len;
  int mode;
  int64_t ttl_ms;
} ttl_create_arg;

static int send_ttl_create(zkrc_conn *conn, zkrc__call *call, const void *arg) {
  const ttl_create_arg *a = arg;
  return zkrc__zk_create_ttl(conn, a->path, a->data, a->data ? (int)a->len : -1,
                             &ZOO_OPEN_ACL_UNSAFE, a->mode, a->ttl_ms,
                             zkrc__call_string_done, call);
}

int zkrc_ttl_create(zkrc_session *s, const char *path, const void *data,
                    size_t len, int64_t ttl_ms, int sequential, char **created,
                    int timeout_ms) {
  if (created)
    *created = NULL;
  if (s == NULL || zkrc_path_validate(path, NULL) != ZKRC_OK ||
      strcmp(path, "/") == 0 || !ttl_valid(ttl_ms) ||
      (data == NULL && len > 0) || !zkrc__timeout_valid(timeout_ms))
    return zkrc__fail(ZKRC_EINVAL);
  ttl_create_arg a = {path, data, len,
                      sequential ? ZOO_PERSISTENT_SEQUENTIAL_WITH_TTL
                                 : ZOO_PERSISTENT_WITH_TTL,
                      ttl_ms};
  int err = zkrc__request_check_create(s, path, len, NULL, a.mode);
  int64_t deadline = 0;
  if (err == ZKRC_OK)
    err = zkrc__request_deadline(s, timeout_ms, &deadline);
  if (err != ZKRC_OK)
    return zkrc__fail(err);
  zkrc__call *call = NULL;
  int rc = zkrc__call_request(s, send_ttl_create, &a, deadline, &call);
  if (rc == ZKRC__CALL_TIMED_OUT)
    return zkrc__fail(ZKRC_ETIMEDOUT);
  if (rc == ZOK && created)
    *created = strdup(call->value ? call->value : path);
  zkrc__call_unref(call);
  return rc == ZOK ? ZKRC_OK : zkrc__fail_from_zk(rc);
}
