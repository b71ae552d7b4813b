/*
 * The caches of include/zkrecipes/cache.h under faults (issue 16, "Proof"),
 * on a 3-member ensemble with a fault proxy in front of every member.
 *
 * The proof: a writer, on its own session straight to the members, makes
 * CHANGES changes (creates, updates, deletes, re-creations, at depths 1 to
 * 3, and atomic delete-and-create; data NULL, empty, or random bytes with
 * NULs; seeded, the seed printed) to a tree, while a tree cache's session,
 * through the proxies, has its connection dropped, black-holed until
 * SUSPENDED, black-holed until the servers expired it, a read's reply lost,
 * every packet delayed, and its session expired on demand - each fault in
 * the middle of a batch of changes.  A children cache, a node cache and a
 * depth-limited tree cache share that session.  Then, the writer done and
 * the cache connected, once the cache has reported a marker's last change
 * and its events replay to a fresh read of the tree (waited for, bounded):
 * the snapshot equals that read (paths, data, czxid, mzxid, version); the
 * whole event stream obeys the header's rules (tests/cache_check.h);
 * INITIALIZED came once, with the tree as it was when the cache started;
 * one more change yields exactly one event (the cache is quiet); every
 * expiry was told LOST; the other caches converged too; and the checker,
 * given the same stream with one event dropped or repeated, objects (the
 * control; test_cache_check proves the checker at length).
 *
 * Then the smaller promises: a node cache on a node created later, deleted
 * and created again; a children cache that reports neither the parent nor
 * grandchildren; max_depth; data with NUL bytes, empty and NULL; a cache
 * freed from its own listener, and while its events are queued (nodes
 * handed out outliving it); bad input; a closed session; a node deleted
 * and created in one multi; INITIALIZED only with the whole tree; the root
 * deleted and created again.  Every listener also reads the copy (no cache
 * mutex may be held around it) and must never run twice at once.
 *
 * ZKT_CACHE_SEED chooses the seed, ZKT_CACHE_CHANGES the number of changes.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>
#include <zkrecipes/cache.h>

#include "cache_check.h"
#include "testutil.h"

#define CHANGES 10000
/* Requests of the writer in flight at once, and changes per second at
 * most: fast enough to finish in seconds, slow enough that every fault
 * happens while changes are being made. */
#define IN_FLIGHT 64
#define RATE 2000
/* The cache's session: the harness's shortest useful timeout. */
#define CACHE_TIMEOUT_MS 2000

static zhandle_t *direct(void) {
  return zkt_raw_to(zkrc_ensemble_direct_connect_string(zkt_ensemble()));
}

/* ------------------------------------------------------------ recorder */

/* What a listener was told, deep-copied, and the copy those events make
 * (applied as they come, for the waits). */
typedef struct recorder {
  GMutex mu;
  GCond cond;
  GArray *events;             /* of cc_event */
  GHashTable *live;           /* the replay so far */
  int counts[9];              /* by zkrc_cache_event_type */
  int last_conn;              /* the last connection event, 0 if none */
  gint in_listener, overlaps; /* calls at once: one event at a time */
  GString *timeline;          /* connection events, with the session's, timed */
} recorder;

static void recorder_init(recorder *r) {
  memset(r, 0, sizeof *r);
  g_mutex_init(&r->mu);
  g_cond_init(&r->cond);
  r->events = g_array_new(FALSE, FALSE, sizeof(cc_event));
  r->live = cc_state_new();
  r->timeline = g_string_new(NULL);
}

static void recorder_clear(recorder *r) {
  CU_ASSERT_EQUAL(g_atomic_int_get(&r->overlaps), 0);
  for (guint i = 0; i < r->events->len; i++)
    cc_event_clear(&g_array_index(r->events, cc_event, i));
  g_array_free(r->events, TRUE);
  g_hash_table_destroy(r->live);
  g_string_free(r->timeline, TRUE);
  g_mutex_clear(&r->mu);
  g_cond_clear(&r->cond);
}

/* Called with r->mu held. */
static void recorder_add(recorder *r, const zkrc_cache_event *ev) {
  cc_event e = cc_event_from(ev);
  if (e.type == ZKRC_CACHE_NODE_ADDED || e.type == ZKRC_CACHE_NODE_UPDATED)
    cc_state_put(r->live, e.path, &e.node);
  else if (e.type == ZKRC_CACHE_NODE_REMOVED)
    g_hash_table_remove(r->live, e.path);
  else if (e.type >= ZKRC_CACHE_SUSPENDED) {
    r->last_conn = e.type;
    g_string_append_printf(r->timeline, " %" PRId64 ":cache-%s",
                           zkt_now_ms() % 100000, cc_type_name(e.type));
  }
  if (e.type >= 1 && e.type <= 7)
    r->counts[e.type]++;
  g_array_append_val(r->events, e);
  g_cond_broadcast(&r->cond);
}

static void record(zkrc_cache *c, const zkrc_cache_event *ev, void *arg) {
  recorder *r = arg;
  if (g_atomic_int_add(&r->in_listener, 1) > 0)
    g_atomic_int_inc(&r->overlaps);
  /* Reads of the copy from the listener: they would deadlock were the
   * cache's mutex held around us. */
  const zkrc_cache_node *n = NULL;
  if (ev->node && zkrc_cache_get(c, ev->node->path, &n) == ZKRC_OK)
    zkrc_cache_node_unref(n);
  (void)zkrc_cache_size(c);
  g_mutex_lock(&r->mu);
  recorder_add(r, ev);
  g_mutex_unlock(&r->mu);
  g_atomic_int_add(&r->in_listener, -1);
}

/* Wait until @p met(r, arg) (called with r->mu held), at most
 * @p timeout_ms; each event wakes us.  Returns whether it was met. */
static int recorder_wait(recorder *r, int (*met)(recorder *r, void *arg),
                         void *arg, int timeout_ms) {
  int64_t deadline = g_get_monotonic_time() + (int64_t)timeout_ms * 1000;
  g_mutex_lock(&r->mu);
  int ok;
  while (!(ok = met(r, arg)) && g_cond_wait_until(&r->cond, &r->mu, deadline))
    ;
  if (!ok)
    ok = met(r, arg);
  g_mutex_unlock(&r->mu);
  return ok;
}

typedef struct count_want {
  int type;
  int at_least;
} count_want;

static int count_met(recorder *r, void *arg) {
  count_want *w = arg;
  return r->counts[w->type] >= w->at_least;
}

static int wait_count(recorder *r, int type, int at_least, int timeout_ms) {
  count_want w = {type, at_least};
  return recorder_wait(r, count_met, &w, timeout_ms);
}

static int node_events(recorder *r) {
  return r->counts[ZKRC_CACHE_NODE_ADDED] + r->counts[ZKRC_CACHE_NODE_UPDATED] +
         r->counts[ZKRC_CACHE_NODE_REMOVED];
}

static int node_events_met(recorder *r, void *arg) {
  return node_events(r) >= *(int *)arg;
}

static int wait_node_events(recorder *r, int at_least, int timeout_ms) {
  return recorder_wait(r, node_events_met, &at_least, timeout_ms);
}

/* Down: SUSPENDED or LOST told (counts reached). */
typedef struct down_want {
  int suspended, lost;
} down_want;

static int down_met(recorder *r, void *arg) {
  down_want *d = arg;
  return r->counts[ZKRC_CACHE_SUSPENDED] >= d->suspended ||
         r->counts[ZKRC_CACHE_LOST] >= d->lost;
}

/* Back up: RECONNECTED after LOST number @p lost (or after anything). */
typedef struct back_want {
  int lost_at_least;
  int reconnected_at_least;
} back_want;

static int back_met(recorder *r, void *arg) {
  back_want *w = arg;
  return r->counts[ZKRC_CACHE_LOST] >= w->lost_at_least &&
         r->counts[ZKRC_CACHE_RECONNECTED] >= w->reconnected_at_least &&
         r->last_conn == ZKRC_CACHE_RECONNECTED;
}

static int wait_back(recorder *r, int lost_at_least, int reconnected_at_least,
                     int timeout_ms) {
  back_want w = {lost_at_least, reconnected_at_least};
  return recorder_wait(r, back_met, &w, timeout_ms);
}

/* The event at @p i (a copy of the struct; the recorder owns its parts). */
static cc_event event_at(recorder *r, guint i) {
  g_mutex_lock(&r->mu);
  cc_event e = g_array_index(r->events, cc_event, i);
  g_mutex_unlock(&r->mu);
  return e;
}

static guint event_count(recorder *r) {
  g_mutex_lock(&r->mu);
  guint n = r->events->len;
  g_mutex_unlock(&r->mu);
  return n;
}

/* ------------------------------------------------------ the servers' tree */

static cc_value value_of(const char *buf, int len, const struct Stat *st) {
  cc_value v = {NULL, -1, st->czxid, st->mzxid, st->version, st->dataLength};
  if (len >= 0) {
    v.len = len;
    v.data = g_malloc((size_t)len + 1);
    memcpy(v.data, buf, (size_t)len);
    v.data[len] = '\0';
  }
  return v;
}

/* Read @p path and its descendants from @p depth down to @p max_depth
 * (-1: all) into @p into, the nodes from @p min_depth on. */
static int read_tree(zhandle_t *zh, const char *path, int depth, int min_depth,
                     int max_depth, GHashTable *into) {
  char buf[4096];
  int len = sizeof buf;
  struct Stat st;
  int rc = zoo_get(zh, path, 0, buf, &len, &st);
  if (rc == ZNONODE)
    return 0;
  if (rc != ZOK || st.dataLength > (int)sizeof buf)
    return -1;
  if (depth >= min_depth) {
    cc_value v = value_of(buf, len, &st);
    cc_state_put(into, path, &v);
    cc_value_clear(&v);
  }
  if (max_depth >= 0 && depth >= max_depth)
    return 0;
  struct String_vector kids = {0, NULL};
  rc = zoo_get_children(zh, path, 0, &kids);
  if (rc == ZNONODE)
    return 0;
  if (rc != ZOK)
    return -1;
  for (int i = 0; i < kids.count && rc == ZOK; i++) {
    char *child = g_strdup_printf("%s/%s", path, kids.data[i]);
    rc = read_tree(zh, child, depth + 1, min_depth, max_depth, into);
    g_free(child);
  }
  deallocate_String_vector(&kids);
  return rc;
}

/* The tree under @p root as the servers have it, read through @p zh (the
 * handle that wrote it, so that it sees its own writes). */
static GHashTable *servers_tree(zhandle_t *zh, const char *root, int min_depth,
                                int max_depth) {
  GHashTable *t = cc_state_new();
  CU_ASSERT_EQUAL(read_tree(zh, root, 0, min_depth, max_depth, t), 0);
  return t;
}

/* The cache's snapshot as a state; checks it is sorted and sized. */
static GHashTable *snapshot_state(zkrc_cache *c) {
  const zkrc_cache_node **nodes = NULL;
  size_t count = 0;
  GHashTable *t = cc_state_new();
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_cache_snapshot(c, &nodes, &count));
  if (nodes == NULL)
    return t;
  if (count == 0)
    CU_ASSERT_PTR_NULL(nodes[0]);
  for (size_t i = 0; i < count; i++) {
    if (i > 0)
      CU_ASSERT(strcmp(nodes[i - 1]->path, nodes[i]->path) < 0);
    cc_value v = cc_value_from(nodes[i]);
    cc_state_put(t, nodes[i]->path, &v);
    cc_value_clear(&v);
  }
  zkrc_cache_nodes_free(nodes, count);
  return t;
}

/* Replay @p r's events in @p scope; the violations, each printed. */
static int replay_violations(recorder *r, const cc_scope *scope,
                             GHashTable *want_final) {
  cc_replay rp;
  g_mutex_lock(&r->mu);
  int v =
      cc_replay_run((cc_event *)r->events->data, r->events->len, scope, &rp);
  g_mutex_unlock(&r->mu);
  if (v)
    fprintf(stderr, "\n%d violations:\n%s", v, rp.report->str);
  if (want_final) {
    GString *why = g_string_new(NULL);
    int d = cc_state_diff(want_final, rp.state, why);
    if (d)
      fprintf(stderr, "\nreplay differs from the servers:\n%s", why->str);
    v += d;
    g_string_free(why, TRUE);
  }
  cc_replay_clear(&rp);
  return v;
}

/* ------------------------------------------------------------- writer */

/* The writer: seeded random changes to the tree, pipelined (at most
 * IN_FLIGHT requests in flight; one handle keeps them in order, so the
 * model of the tree it keeps is the servers' once they are all done),
 * within a budget the fault schedule raises phase by phase. */
typedef struct writer {
  zhandle_t *zh;
  char *root;
  GPtrArray *pool;   /* the paths it may create (depths 1 to 3) */
  GHashTable *model; /* existing path -> its number of children */
  GHashTable *ever;  /* paths ever created */
  GRand *rand;
  int total;
  GMutex mu;
  GCond cond;
  int budget, issued, completed, in_flight;
  int errors, first_error;
  char first_error_op[300];
  /* what it did */
  int creates, sets, deletes, swaps, recreations, null_data, empty_data;
  int64_t next_send_us; /* the rate limit's next slot */
} writer;

typedef struct write_op {
  writer *w;
  char what[300];
  zoo_op_t ops[2];
  zoo_op_result_t results[2];
} write_op;

static void write_done(int rc, write_op *op) {
  writer *w = op->w;
  g_mutex_lock(&w->mu);
  w->in_flight--;
  w->completed++;
  if (rc != ZOK && w->errors++ == 0) {
    w->first_error = rc;
    g_strlcpy(w->first_error_op, op->what, sizeof w->first_error_op);
  }
  g_cond_broadcast(&w->cond);
  g_mutex_unlock(&w->mu);
  g_free(op);
}

static void void_done(int rc, const void *data) {
  write_done(rc, (write_op *)data);
}
static void stat_done(int rc, const struct Stat *st, const void *data) {
  write_done(rc, (write_op *)data);
}
static void string_done(int rc, const char *value, const void *data) {
  write_done(rc, (write_op *)data);
}

/* Data for a change: NULL, empty, or up to 48 random bytes (NULs too). */
static int random_data(writer *w, char *buf, const char **data) {
  int kind = g_rand_int_range(w->rand, 0, 10);
  if (kind == 0) {
    w->null_data++;
    *data = NULL;
    return -1;
  }
  *data = buf;
  if (kind == 1) {
    w->empty_data++;
    return 0;
  }
  int len = g_rand_int_range(w->rand, 1, 49);
  for (int i = 0; i < len; i++)
    buf[i] = (char)g_rand_int_range(w->rand, 0, 256);
  return len;
}

static char *parent_of(const char *path) {
  return g_strndup(path, (gsize)(strrchr(path, '/') - path));
}

static void model_add(writer *w, const char *path) {
  char *parent = parent_of(path);
  gpointer kids = g_hash_table_lookup(w->model, parent);
  g_hash_table_replace(w->model, parent,
                       GINT_TO_POINTER(GPOINTER_TO_INT(kids) + 1));
  g_hash_table_replace(w->model, g_strdup(path), GINT_TO_POINTER(0));
  if (!g_hash_table_add(w->ever, g_strdup(path)))
    w->recreations++;
}

static void model_remove(writer *w, const char *path) {
  char *parent = parent_of(path);
  gpointer kids = g_hash_table_lookup(w->model, parent);
  g_hash_table_replace(w->model, parent,
                       GINT_TO_POINTER(GPOINTER_TO_INT(kids) - 1));
  g_hash_table_remove(w->model, path);
}

/* The shallowest missing node on the way to @p path (itself if only it is
 * missing). */
static char *first_missing(writer *w, const char *path) {
  size_t rl = strlen(w->root);
  for (const char *p = strchr(path + rl + 1, '/'); p; p = strchr(p + 1, '/')) {
    char *prefix = g_strndup(path, (gsize)(p - path));
    if (!g_hash_table_contains(w->model, prefix))
      return prefix;
    g_free(prefix);
  }
  return g_strdup(path);
}

/* Send one change (the model follows at once: requests on one handle are
 * carried out in order). */
static void write_one(writer *w) {
  int i = (int)g_rand_int_range(w->rand, 0, (gint32)w->pool->len + 1);
  /* One pick in pool->len + 1: the root itself, whose data changes too. */
  const char *path = i == (int)w->pool->len ? w->root : w->pool->pdata[i];
  write_op *op = g_new0(write_op, 1);
  op->w = w;
  char buf[64];
  const char *data;
  int len = random_data(w, buf, &data), rc;
  gpointer kids;
  if (!g_hash_table_lookup_extended(w->model, path, NULL, &kids)) {
    char *missing = first_missing(w, path);
    g_snprintf(op->what, sizeof op->what, "create %s", missing);
    rc = zoo_acreate(w->zh, missing, data, len, &ZOO_OPEN_ACL_UNSAFE, 0,
                     string_done, op);
    model_add(w, missing);
    g_free(missing);
    w->creates++;
  } else if (path == w->root || GPOINTER_TO_INT(kids) > 0 ||
             g_rand_int_range(w->rand, 0, 10) < 6) {
    g_snprintf(op->what, sizeof op->what, "set %s", path);
    rc = zoo_aset(w->zh, path, data, len, -1, stat_done, op);
    w->sets++;
  } else if (g_rand_boolean(w->rand)) { /* deleted and created at once */
    g_snprintf(op->what, sizeof op->what, "delete+create %s", path);
    zoo_delete_op_init(&op->ops[0], path, -1);
    zoo_create_op_init(&op->ops[1], path, data, len, &ZOO_OPEN_ACL_UNSAFE, 0,
                       NULL, 0);
    rc = zoo_amulti(w->zh, 2, op->ops, op->results, void_done, op);
    w->swaps++;
  } else {
    g_snprintf(op->what, sizeof op->what, "delete %s", path);
    rc = zoo_adelete(w->zh, path, -1, void_done, op);
    model_remove(w, path);
    w->deletes++;
  }
  if (rc != ZOK) /* not sent: counted as done, with its error */
    write_done(rc, op);
}

/* Wait for room: the budget, the requests in flight, the rate. */
static int writer_may_send(writer *w, int64_t deadline) {
  g_mutex_lock(&w->mu);
  while ((w->issued >= w->budget || w->in_flight >= IN_FLIGHT) &&
         g_cond_wait_until(&w->cond, &w->mu, deadline))
    ;
  int ok = w->issued < w->budget && w->in_flight < IN_FLIGHT;
  if (ok) {
    w->issued++;
    w->in_flight++;
  }
  g_mutex_unlock(&w->mu);
  /* The rate limit (a pace, not a wait for an event). */
  int64_t now = g_get_monotonic_time();
  if (w->next_send_us < now)
    w->next_send_us = now;
  else if (ok)
    g_usleep((gulong)(w->next_send_us - now));
  w->next_send_us += G_USEC_PER_SEC / RATE;
  return ok;
}

static gpointer writer_run(gpointer data) {
  writer *w = data;
  /* Bounded: the whole run must fit in this. */
  int64_t deadline = g_get_monotonic_time() + 120 * G_TIME_SPAN_SECOND;
  for (int i = 0; i < w->total; i++) {
    if (!writer_may_send(w, deadline))
      break;
    write_one(w);
  }
  g_mutex_lock(&w->mu);
  while (w->in_flight > 0 && g_cond_wait_until(&w->cond, &w->mu, deadline))
    ;
  g_mutex_unlock(&w->mu);
  return NULL;
}

static void writer_grant(writer *w, int more) {
  g_mutex_lock(&w->mu);
  w->budget = MIN(w->total, w->budget + more);
  g_cond_broadcast(&w->cond);
  g_mutex_unlock(&w->mu);
}

static int writer_completed(writer *w) {
  g_mutex_lock(&w->mu);
  int n = w->completed;
  g_mutex_unlock(&w->mu);
  return n;
}

/* Wait until everything granted so far is done. */
static int writer_wait_budget(writer *w, int timeout_ms) {
  int64_t deadline = g_get_monotonic_time() + (int64_t)timeout_ms * 1000;
  g_mutex_lock(&w->mu);
  while (w->completed < w->budget &&
         g_cond_wait_until(&w->cond, &w->mu, deadline))
    ;
  int ok = w->completed >= w->budget;
  g_mutex_unlock(&w->mu);
  return ok;
}

/* Wait until @p n changes are done. */
static int writer_wait_completed(writer *w, int n, int timeout_ms) {
  int64_t deadline = g_get_monotonic_time() + (int64_t)timeout_ms * 1000;
  g_mutex_lock(&w->mu);
  while (w->completed < n && g_cond_wait_until(&w->cond, &w->mu, deadline))
    ;
  int ok = w->completed >= n;
  g_mutex_unlock(&w->mu);
  return ok;
}

/* Wait until @p n more changes are done, or all that were granted. */
static int writer_wait_more(writer *w, int n, int timeout_ms) {
  g_mutex_lock(&w->mu);
  int target = MIN(w->completed + n, w->budget);
  g_mutex_unlock(&w->mu);
  return writer_wait_completed(w, target, timeout_ms);
}

static void writer_init(writer *w, zhandle_t *zh, const char *root,
                        guint32 seed, int total) {
  memset(w, 0, sizeof *w);
  w->zh = zh;
  w->root = g_strdup(root);
  w->rand = g_rand_new_with_seed(seed);
  w->total = total;
  g_mutex_init(&w->mu);
  g_cond_init(&w->cond);
  w->model = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  w->ever = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  g_hash_table_replace(w->model, g_strdup(root), GINT_TO_POINTER(0));
  w->pool = g_ptr_array_new_with_free_func(g_free);
  for (int a = 0; a < 6; a++) {
    g_ptr_array_add(w->pool, g_strdup_printf("%s/a%d", root, a));
    for (int b = 0; b < 5; b++) {
      g_ptr_array_add(w->pool, g_strdup_printf("%s/a%d/b%d", root, a, b));
      for (int c = 0; c < 4; c++)
        g_ptr_array_add(w->pool,
                        g_strdup_printf("%s/a%d/b%d/c%d", root, a, b, c));
    }
  }
}

static void writer_clear(writer *w) {
  g_ptr_array_free(w->pool, TRUE);
  g_hash_table_destroy(w->model);
  g_hash_table_destroy(w->ever);
  g_rand_free(w->rand);
  g_mutex_clear(&w->mu);
  g_cond_clear(&w->cond);
  g_free(w->root);
}

/* ------------------------------------------------------------- faults */

typedef enum fault {
  DROP,              /* every proxy closes its connections */
  EXPIRE,            /* the session expired on demand */
  BLACKHOLE_SUSPEND, /* black-holed until the cache says SUSPENDED */
  BLACKHOLE_EXPIRE,  /* black-holed until the servers expired the session */
  DROP_REPLY,        /* a read carried out, its reply lost, the connection
                      * closed */
  DELAY              /* every packet 40 ms late while changes are made */
} fault;

static const char *fault_name(fault f) {
  static const char *const names[] = {
      "drop",       "expire", "black-hole (suspended)", "black-hole (expired)",
      "reply lost", "delay"};
  return names[f];
}

static int current_server(zhandle_t *zh, void *arg) {
  const char *server = zoo_get_current_server(zh);
  g_strlcpy(arg, server ? server : "", 64);
  return 0;
}

/* The index of the proxy session @p s is connected through, or -1. */
static int proxy_of(zkrc_session *s) {
  char server[64] = "";
  zkrc_session_with_handle(s, current_server, server);
  for (int i = 0; i < zkrc_ensemble_size(zkt_ensemble()); i++)
    if (strcmp(server, zkrc_ensemble_member_address(zkt_ensemble(), i)) == 0)
      return i;
  return -1;
}

static void blackhole_all(int ms) {
  for (int i = 0; i < zkrc_ensemble_size(zkt_ensemble()); i++)
    CU_ASSERT_EQUAL(zkrc_proxy_blackhole(zkt_ensemble(), i, ms), 0);
}

typedef struct gone_watch {
  GMutex mu;
  GCond cond;
  int gone;
} gone_watch;

static void on_gone(zhandle_t *zh, int type, int state, const char *path,
                    void *ctx) {
  gone_watch *g = ctx;
  if (type != ZOO_DELETED_EVENT)
    return;
  g_mutex_lock(&g->mu);
  g->gone = 1;
  g_cond_broadcast(&g->cond);
  g_mutex_unlock(&g->mu);
}

static int create_ephemeral(zhandle_t *zh, void *path) {
  return zoo_create(zh, path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL,
                    NULL, 0);
}

/* Black-hole the cache's session until the servers expired it: an
 * ephemeral node of that session, watched from @p watcher_zh, is deleted
 * then. */
static int blackhole_until_expired(zkrc_session *s, zhandle_t *watcher_zh,
                                   const char *eph) {
  /* On the heap: should the node outlive the wait, the watch may fire at
   * any later time, so g is then left to it. */
  gone_watch *g = g_new0(gone_watch, 1);
  g_mutex_init(&g->mu);
  g_cond_init(&g->cond);
  int ok = zkrc_session_with_handle(s, create_ephemeral, (void *)eph) == ZOK;
  struct Stat st;
  int watching = ok && zoo_wexists(watcher_zh, eph, on_gone, g, &st) == ZOK;
  if (watching) {
    blackhole_all(60000);
    int64_t deadline = g_get_monotonic_time() + 20 * G_TIME_SPAN_SECOND;
    g_mutex_lock(&g->mu);
    while (!g->gone && g_cond_wait_until(&g->cond, &g->mu, deadline))
      ;
    ok = g->gone;
    g_mutex_unlock(&g->mu);
    blackhole_all(0);
  }
  if (watching && !ok)
    return 0; /* g stays the watch's */
  g_mutex_clear(&g->mu);
  g_cond_clear(&g->cond);
  g_free(g);
  return ok && watching;
}

/* Inject @p f and wait until the cache is back.  Returns non-zero when
 * everything happened as it should. */
/* Expiries the client did not hear of within 5 s (see below). */
static int unnoticed_expiries;

/* The members that still hold a connection of session @p id ("cons"). */
static void name_connections(int64_t id) {
  char sid[32];
  g_snprintf(sid, sizeof sid, "sid=0x%" PRIx64, id);
  for (int i = 0; i < zkrc_ensemble_size(zkt_ensemble()); i++) {
    char *cons = NULL;
    if (zkrc_ensemble_four_letter(zkt_ensemble(), i, "cons", &cons) == 0 &&
        strstr(cons, sid))
      fprintf(stderr, " member %d still has a connection of it;", i);
    free(cons);
  }
}

/* Observed about once in ten runs: the harness reports session @p id
 * expired (a second handle took it over and closed it), yet its owner,
 * connected to another member, hears nothing - its connection stays open
 * and its lease renewals (syncs) are answered - for some 20 s.  Said on
 * stderr, counted, and cut short by closing its connection, so that the
 * client learns of the expiry on reconnecting (as after any expiry while
 * disconnected); the cache's part is what follows. */
static void nudge_unnoticed_expiry(zkrc_session *s, int64_t id) {
  unnoticed_expiries++;
  fprintf(stderr,
          "\nsession %#" PRIx64 " expired 5 s ago and its client, "
          "on proxy %d, has not heard:",
          id, proxy_of(s));
  name_connections(id);
  fprintf(stderr, " closing its connection\n");
  for (int i = 0; i < zkrc_ensemble_size(zkt_ensemble()); i++)
    CU_ASSERT_EQUAL(zkrc_proxy_drop_all(zkt_ensemble(), i), 0);
}

static int writer_completed(writer *w);
static int writer_wait_more(writer *w, int n, int timeout_ms);

static int inject(fault f, zkrc_session *s, recorder *r, zhandle_t *watcher_zh,
                  const char *eph, int *expiries, writer *w, int changes) {
  g_mutex_lock(&r->mu);
  int lost = r->counts[ZKRC_CACHE_LOST];
  int back = r->counts[ZKRC_CACHE_RECONNECTED];
  int suspended = r->counts[ZKRC_CACHE_SUSPENDED];
  g_mutex_unlock(&r->mu);
  switch (f) {
  case DROP:
    for (int i = 0; i < zkrc_ensemble_size(zkt_ensemble()); i++)
      CU_ASSERT_EQUAL(zkrc_proxy_drop_all(zkt_ensemble(), i), 0);
    return wait_back(r, lost, back + 1, 15000);
  case EXPIRE: {
    int64_t id = zkrc_session_wait_connected(s, 10000) == ZKRC_OK
                     ? zkrc_session_id(s)
                     : 0;
    int rc =
        id ? zkrc_ensemble_expire_session_id(zkt_ensemble(), id, 10000) : -1;
    if (rc != 0) {
      fprintf(stderr, "\nexpire: session %#" PRIx64 " (state %s): %d\n", id,
              zkrc_session_state_name(zkrc_session_get_state(s)), rc);
      return 0;
    }
    ++*expiries;
    if (!wait_count(r, ZKRC_CACHE_LOST, lost + 1, 5000))
      nudge_unnoticed_expiry(s, id);
    return wait_back(r, lost + 1, back + 1, 20000);
  }
  case DROP_REPLY: {
    /* The next read through the session's proxy: its reply is lost. */
    int proxy =
        zkrc_session_wait_connected(s, 10000) == ZKRC_OK ? proxy_of(s) : -1;
    if (proxy < 0 ||
        zkrc_proxy_drop_after_next_request(zkt_ensemble(), proxy) != 0)
      return 0;
    return wait_back(r, lost, back + 1, 15000);
  }
  case DELAY: {
    for (int i = 0; i < zkrc_ensemble_size(zkt_ensemble()); i++)
      CU_ASSERT_EQUAL(zkrc_proxy_delay(zkt_ensemble(), i, 40), 0);
    int ok = writer_wait_more(w, changes, 30000);
    for (int i = 0; i < zkrc_ensemble_size(zkt_ensemble()); i++)
      CU_ASSERT_EQUAL(zkrc_proxy_delay(zkt_ensemble(), i, 0), 0);
    return ok;
  }
  case BLACKHOLE_SUSPEND: {
    /* Until the cache says the connection is down: SUSPENDED, or, on a
     * loaded machine, LOST first (the lease ran out before the client
     * noticed the silence; its SUSPENDED then never comes). */
    blackhole_all(60000);
    down_want d = {suspended + 1, lost + 1};
    int ok = recorder_wait(r, down_met, &d, 15000);
    blackhole_all(0);
    return ok && wait_back(r, lost, back + 1, 20000);
  }
  default:
    if (!blackhole_until_expired(s, watcher_zh, eph))
      return 0;
    ++*expiries;
    return wait_back(r, lost + 1, back + 1, 20000);
  }
}

/* ------------------------------------------------------------ the proof */

static const fault schedule[] = {DROP,
                                 EXPIRE,
                                 BLACKHOLE_SUSPEND,
                                 DELAY,
                                 EXPIRE,
                                 BLACKHOLE_EXPIRE,
                                 DROP_REPLY,
                                 DROP,
                                 EXPIRE,
                                 BLACKHOLE_SUSPEND,
                                 DROP_REPLY,
                                 DROP};
#define FAULTS ((int)G_N_ELEMENTS(schedule))

static guint32 chosen_seed(void) {
  const char *env = getenv("ZKT_CACHE_SEED");
  return env ? (guint32)strtoul(env, NULL, 10)
             : (guint32)(g_get_real_time() ^ getpid());
}

static int chosen_changes(void) {
  const char *env = getenv("ZKT_CACHE_CHANGES");
  return env ? atoi(env) : CHANGES;
}

typedef struct marker_want {
  const char *path;
  int64_t mzxid;
  GHashTable *tree; /* NULL: the marker alone */
} marker_want;

/* The marker's change reported, and (with a tree) the replay equal to it. */
static int marker_met(recorder *r, void *arg) {
  marker_want *m = arg;
  cc_value *v = g_hash_table_lookup(r->live, m->path);
  if (v == NULL || v->mzxid != m->mzxid)
    return 0;
  return m->tree == NULL || cc_state_diff(m->tree, r->live, NULL) == 0;
}

/* The replay equal to m->tree (the marker unused). */
static int empty_and_diff_met(recorder *r, void *arg) {
  marker_want *m = arg;
  return cc_state_diff(m->tree, r->live, NULL) == 0;
}

static int64_t set_marker(zhandle_t *zh, const char *path, const char *data) {
  struct Stat st;
  CU_ASSERT_EQUAL(zoo_set2(zh, path, data, (int)strlen(data), -1, &st), ZOK);
  return st.mzxid;
}

/* The control: the same stream with one node event dropped, or repeated,
 * must be objected to. */
static void check_control(recorder *r, const cc_scope *scope, GHashTable *final,
                          GRand *rand) {
  g_mutex_lock(&r->mu);
  cc_event *ev = (cc_event *)r->events->data;
  size_t n = r->events->len;
  size_t i;
  do
    i = (size_t)g_rand_int_range(rand, 0, (gint32)n);
  while (ev[i].type > ZKRC_CACHE_NODE_REMOVED);
  cc_event *copy = g_new(cc_event, n + 1);
  int objected[2];
  for (size_t dup = 0; dup < 2; dup++) {
    /* Dropped: ev[0..i) ev(i..n); repeated: ev[0..i] ev[i..n). */
    memcpy(copy, ev, (i + dup) * sizeof *ev);
    memcpy(copy + i + dup, ev + i + 1 - dup, (n - i - 1 + dup) * sizeof *ev);
    cc_replay rp;
    int v = cc_replay_run(copy, n - 1 + 2 * dup, scope, &rp);
    objected[dup] = v > 0 || cc_state_diff(final, rp.state, NULL) > 0;
    cc_replay_clear(&rp);
  }
  g_mutex_unlock(&r->mu);
  printf("control: event %zu (%s %s) dropped: %s, repeated: %s\n", i,
         cc_type_name(ev[i].type), ev[i].path,
         objected[0] ? "reported" : "MISSED",
         objected[1] ? "reported" : "MISSED");
  CU_ASSERT_TRUE(objected[0]);
  CU_ASSERT_TRUE(objected[1]);
  g_free(copy);
}

/* Setup: the root, the marker, and a few nodes before the cache starts. */
static void make_start_tree(writer *w, const char *marker) {
  zkt_make_path(w->zh, w->root);
  CU_ASSERT_EQUAL(
      zoo_create(w->zh, marker, "start", 5, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0),
      ZOK);
  for (int i = 0; i < 30; i++) {
    const char *path = w->pool->pdata[g_rand_int_range(w->rand, 0, 36)];
    char *missing = first_missing(w, path);
    if (!g_hash_table_contains(w->model, missing)) {
      CU_ASSERT_EQUAL(
          zoo_create(w->zh, missing, "0", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0),
          ZOK);
      model_add(w, missing);
    }
    g_free(missing);
  }
}

static zkrc_cache *start_cache(zkrc_session *s, const char *root, recorder *r,
                               int max_depth) {
  zkrc_cache_options o;
  zkrc_cache_options_init(&o);
  o.on_event = record;
  o.event_arg = r;
  o.max_depth = max_depth;
  zkrc_cache *c = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_tree_cache_new(&c, s, root, &o));
  return c;
}

/* Run the fault schedule while the writer works; returns the faults that
 * went as they should. */
static int run_faults(writer *w, zkrc_session *s, recorder *r,
                      zhandle_t *watcher_zh, const char *base, int *expiries) {
  int per_phase = w->total / (FAULTS + 1), good = 0;
  for (int k = 0; k < FAULTS; k++) {
    char *eph = g_strdup_printf("%s-eph%d", base, k);
    int before = writer_completed(w);
    int64_t t0 = zkt_now_ms();
    writer_grant(w, per_phase);
    /* Mid-batch: changes go on while the cache reconnects and reads. */
    CU_ASSERT_TRUE(writer_wait_completed(w, before + per_phase / 3, 30000));
    before = writer_completed(w);
    int ok =
        inject(schedule[k], s, r, watcher_zh, eph, expiries, w, per_phase / 2);
    int during = writer_completed(w) - before;
    printf("fault %d: %-24s %s in %5" PRId64 " ms, %4d changes meanwhile\n",
           k + 1, fault_name(schedule[k]), ok ? "recovered" : "FAILED",
           zkt_now_ms() - t0, during);
    if (!ok) {
      g_mutex_lock(&r->mu);
      fprintf(stderr,
              "\nfault %d (%s) did not go as it should; at %" PRId64
              " ms (mod 100 s), the timeline:%s\n",
              k + 1, fault_name(schedule[k]), zkt_now_ms() % 100000,
              r->timeline->str);
      g_mutex_unlock(&r->mu);
    }
    good += ok;
    CU_ASSERT_TRUE(writer_wait_budget(w, 30000));
    g_free(eph);
  }
  writer_grant(w, w->total);
  return good;
}

static void print_counts(recorder *r, writer *w, int faults, int expiries,
                         int64_t ms, guint32 seed) {
  printf("seed %u: %d changes (%d creates, %d of them re-creations; %d sets; "
         "%d deletes; %d delete+create; %d NULL, %d empty data) in %.1f s\n",
         seed, w->completed, w->creates, w->recreations, w->sets, w->deletes,
         w->swaps, w->null_data, w->empty_data, (double)ms / 1000);
  printf("events: %d ADDED, %d UPDATED, %d REMOVED, %d INITIALIZED, "
         "%d SUSPENDED, %d RECONNECTED, %d LOST; faults %d/%d, expiries %d\n",
         r->counts[1], r->counts[2], r->counts[3], r->counts[4], r->counts[5],
         r->counts[6], r->counts[7], faults, FAULTS, expiries);
  printf("expiries the client did not hear of within 5 s (its connection "
         "closed then): %d\n",
         unnoticed_expiries);
}

/* After the run: converged, equal to the servers, quiet, lawful. */
static void check_end(zkrc_cache *c, recorder *r, writer *w, const char *marker,
                      GHashTable *at_start, int expiries, GRand *rand) {
  int64_t t_end = zkt_now_ms();
  int64_t mz = set_marker(w->zh, marker, "end");
  GHashTable *servers = servers_tree(w->zh, w->root, 0, -1);
  marker_want m = {marker, mz, servers};
  int converged = recorder_wait(r, marker_met, &m, 30000);
  CU_ASSERT_TRUE(converged);
  GHashTable *snap = snapshot_state(c);
  GString *why = g_string_new(NULL);
  CU_ASSERT_EQUAL(cc_state_diff(servers, snap, why), 0);
  if (why->len)
    fprintf(stderr, "\nsnapshot differs from the servers:\n%s", why->str);
  CU_ASSERT_EQUAL(zkrc_cache_size(c), g_hash_table_size(servers));
  printf("end: %u nodes in the tree, cache %s in %.1f s\n",
         g_hash_table_size(servers), converged ? "converged" : "NOT converged",
         (double)(zkt_now_ms() - t_end) / 1000);

  /* Quiet: one more change, one event. */
  guint before = event_count(r);
  marker_want q = {marker, set_marker(w->zh, marker, "quiet"), NULL};
  CU_ASSERT_TRUE(recorder_wait(r, marker_met, &q, 10000));
  CU_ASSERT_EQUAL(event_count(r), before + 1);
  for (guint i = before; i < event_count(r); i++) {
    cc_event e = event_at(r, i);
    if (e.type != ZKRC_CACHE_NODE_UPDATED || strcmp(e.path, marker) != 0)
      fprintf(stderr, "\nafter convergence: %s %s\n", cc_type_name(e.type),
              e.path ? e.path : "-");
  }

  /* The whole stream. */
  GHashTable *final = servers_tree(w->zh, w->root, 0, -1);
  cc_scope scope = {w->root, 0, -1};
  CU_ASSERT_EQUAL(replay_violations(r, &scope, final), 0);
  cc_replay rp;
  g_mutex_lock(&r->mu);
  cc_replay_run((cc_event *)r->events->data, r->events->len, &scope, &rp);
  g_mutex_unlock(&r->mu);
  CU_ASSERT_EQUAL(rp.counts[ZKRC_CACHE_INITIALIZED], 1);
  CU_ASSERT_FALSE(rp.down_at_end);
  CU_ASSERT(rp.counts[ZKRC_CACHE_LOST] >= expiries);
  /* The writer started after INITIALIZED: the copy then was the tree as
   * it was made before the cache started. */
  if (rp.at_initialized) {
    g_string_truncate(why, 0);
    int d = cc_state_diff(at_start, rp.at_initialized, why);
    if (d)
      fprintf(stderr, "\nat INITIALIZED, %d of %u nodes differ:\n%s", d,
              g_hash_table_size(at_start), why->str);
    CU_ASSERT_EQUAL(d, 0);
  }
  printf("values older than one reported before (not a violation): %d\n",
         rp.regressions);
  cc_replay_clear(&rp);
  check_control(r, &scope, final, rand);
  g_string_free(why, TRUE);
  g_hash_table_destroy(servers);
  g_hash_table_destroy(snap);
  g_hash_table_destroy(final);
}

/* Other shapes on the same session, through the same faults. */
typedef struct bystander {
  const char *name;
  int kind; /* 0 node, 1 children, 2 tree */
  char *path;
  int max_depth;
  recorder r;
  zkrc_cache *c;
} bystander;

static void bystander_start(bystander *b, zkrc_session *s) {
  recorder_init(&b->r);
  zkrc_cache_options o;
  zkrc_cache_options_init(&o);
  o.on_event = record;
  o.event_arg = &b->r;
  o.max_depth = b->max_depth;
  int rc = b->kind == 0   ? zkrc_node_cache_new(&b->c, s, b->path, &o)
           : b->kind == 1 ? zkrc_children_cache_new(&b->c, s, b->path, &o)
                          : zkrc_tree_cache_new(&b->c, s, b->path, &o);
  ZKT_ASSERT_RC(ZKRC_OK, rc);
}

/* Converged to the servers (who are quiet now), lawfully. */
static void bystander_check(bystander *b, zhandle_t *zh, int expiries) {
  int lo = b->kind == 1, hi = b->kind == 0   ? 0
                              : b->kind == 1 ? 1
                                             : b->max_depth;
  GHashTable *servers = servers_tree(zh, b->path, lo, hi);
  marker_want m = {NULL, 0, servers};
  int converged = recorder_wait(&b->r, empty_and_diff_met, &m, 15000);
  CU_ASSERT_TRUE(converged);
  GHashTable *snap = snapshot_state(b->c);
  CU_ASSERT_EQUAL(cc_state_diff(servers, snap, NULL), 0);
  cc_scope scope = {b->path, lo, hi};
  CU_ASSERT_EQUAL(replay_violations(&b->r, &scope, servers), 0);
  cc_replay rp;
  g_mutex_lock(&b->r.mu);
  cc_replay_run((cc_event *)b->r.events->data, b->r.events->len, &scope, &rp);
  g_mutex_unlock(&b->r.mu);
  CU_ASSERT_EQUAL(rp.counts[ZKRC_CACHE_INITIALIZED], 1);
  CU_ASSERT_FALSE(rp.down_at_end);
  CU_ASSERT(rp.counts[ZKRC_CACHE_LOST] >= expiries);
  printf("%s: %u nodes, %s; %ld ADDED, %ld UPDATED, %ld REMOVED, %ld LOST\n",
         b->name, g_hash_table_size(servers),
         converged ? "converged" : "NOT converged",
         rp.counts[ZKRC_CACHE_NODE_ADDED], rp.counts[ZKRC_CACHE_NODE_UPDATED],
         rp.counts[ZKRC_CACHE_NODE_REMOVED], rp.counts[ZKRC_CACHE_LOST]);
  cc_replay_clear(&rp);
  g_hash_table_destroy(snap);
  g_hash_table_destroy(servers);
}

static void on_session_event(zkrc_session *s, const zkrc_session_event *ev_,
                             void *arg) {
  zkrc_session_event_type ev = ev_->type;
  recorder *r = arg;
  g_mutex_lock(&r->mu);
  g_string_append_printf(r->timeline, " %" PRId64 ":session-%s(%#" PRIx64 ")",
                         zkt_now_ms() % 100000, zkrc_session_event_name(ev),
                         zkrc_session_id(s));
  g_mutex_unlock(&r->mu);
}

static void test_tree_cache_converges_through_faults(void) {
  guint32 seed = chosen_seed();
  printf("(seed %u: ZKT_CACHE_SEED=%u reproduces the writer) ", seed, seed);
  int64_t t0 = zkt_now_ms();
  char *base = zkt_path("proof");
  char *root = g_strdup_printf("%s/tree", base);
  char *marker = g_strdup_printf("%s/marker", root);
  zhandle_t *zh = direct(), *watcher_zh = direct();
  writer w;
  writer_init(&w, zh, root, seed, chosen_changes());
  make_start_tree(&w, marker);
  GHashTable *at_start = servers_tree(zh, root, 0, -1);

  zkrc_session *s = zkt_session_knowing_tick(CACHE_TIMEOUT_MS, 0, NULL);
  recorder r;
  recorder_init(&r);
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_session_add_listener(s, on_session_event, &r, NULL));
  zkrc_cache *c = start_cache(s, root, &r, -1);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_cache_wait_initialized(c, 15000));
  bystander others[3];
  memset(others, 0, sizeof others);
  others[0] = (bystander){.name = "children cache of the root",
                          .kind = 1,
                          .path = g_strdup(root),
                          .max_depth = -1};
  others[1] = (bystander){.name = "node cache of a0",
                          .kind = 0,
                          .path = g_strdup_printf("%s/a0", root),
                          .max_depth = -1};
  others[2] = (bystander){.name = "tree cache to depth 2",
                          .kind = 2,
                          .path = g_strdup(root),
                          .max_depth = 2};
  for (size_t i = 0; i < G_N_ELEMENTS(others); i++) {
    bystander_start(&others[i], s);
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_cache_wait_initialized(others[i].c, 15000));
  }

  GThread *t = g_thread_new("writer", writer_run, &w);
  int expiries = 0;
  int good = run_faults(&w, s, &r, watcher_zh, base, &expiries);
  g_thread_join(t);
  printf("faults and changes done after %.1f s\n",
         (double)(zkt_now_ms() - t0) / 1000);
  CU_ASSERT_EQUAL(good, FAULTS);
  CU_ASSERT(expiries >= 3);
  CU_ASSERT_EQUAL(w.completed, w.total);
  CU_ASSERT_EQUAL(w.errors, 0);
  if (w.errors)
    fprintf(stderr, "\nwriter: %d errors, the first %s on %s\n", w.errors,
            zerror(w.first_error), w.first_error_op);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_wait_connected(s, 15000));

  GRand *rand = g_rand_new_with_seed(seed);
  check_end(c, &r, &w, marker, at_start, expiries, rand);
  g_rand_free(rand);
  for (size_t i = 0; i < G_N_ELEMENTS(others); i++)
    bystander_check(&others[i], zh, expiries);
  print_counts(&r, &w, good, expiries, zkt_now_ms() - t0, seed);
  for (size_t i = 0; i < G_N_ELEMENTS(others); i++) {
    zkrc_cache_free(others[i].c);
    recorder_clear(&others[i].r);
    g_free(others[i].path);
  }

  zkrc_cache_free(c);
  zkrc_session_close(s);
  recorder_clear(&r);
  g_hash_table_destroy(at_start);
  writer_clear(&w);
  zookeeper_close(zh);
  zookeeper_close(watcher_zh);
  g_free(marker);
  g_free(root);
  g_free(base);
}

/* ------------------------------------------------------ smaller promises */

static zkrc_cache *new_cache(int kind, zkrc_session *s, const char *path,
                             recorder *r, int max_depth) {
  zkrc_cache_options o;
  zkrc_cache_options_init(&o);
  o.on_event = record;
  o.event_arg = r;
  o.max_depth = max_depth;
  zkrc_cache *c = NULL;
  int rc = kind == 0   ? zkrc_node_cache_new(&c, s, path, &o)
           : kind == 1 ? zkrc_children_cache_new(&c, s, path, &o)
                       : zkrc_tree_cache_new(&c, s, path, &o);
  ZKT_ASSERT_RC(ZKRC_OK, rc);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_cache_wait_initialized(c, 15000));
  return c;
}

/* The last event, which must be of @p type on @p path. */
static cc_event expect_last(recorder *r, int type, const char *path) {
  guint n = event_count(r);
  CU_ASSERT_FATAL(n > 0);
  cc_event e = event_at(r, n - 1);
  if (e.type != type || (path && (!e.path || strcmp(e.path, path) != 0)))
    fprintf(stderr, "\nexpected %s %s, got %s %s\n", cc_type_name(type),
            path ? path : "-", cc_type_name(e.type), e.path ? e.path : "-");
  CU_ASSERT_EQUAL(e.type, type);
  return e;
}

static int node_has(zkrc_cache *c, const char *path, const char *data,
                    int len) {
  const zkrc_cache_node *n = NULL;
  if (zkrc_cache_get(c, path, &n) != ZKRC_OK)
    return 0;
  int same = len < 0 ? n->data == NULL
                     : n->data != NULL && (int)n->len == len &&
                           memcmp(n->data, data, (size_t)len) == 0 &&
                           n->data[len] == '\0';
  zkrc_cache_node_unref(n);
  return same;
}

static int value_is(const cc_value *v, const char *data) {
  return v->data && v->len == (int)strlen(data) && strcmp(v->data, data) == 0;
}

static void test_node_cache_created_later_deleted_recreated(void) {
  char *dir = zkt_path("node-later");
  char *path = g_strdup_printf("%s/n", dir);
  zhandle_t *zh = direct();
  zkt_make_path(zh, dir);
  zkrc_session *s = zkt_session();
  recorder r;
  recorder_init(&r);
  zkrc_cache *c = new_cache(0, s, path, &r, -1);
  const zkrc_cache_node *n = (const zkrc_cache_node *)&n;
  ZKT_ASSERT_RC(ZKRC_ENONODE, zkrc_cache_get(c, NULL, &n));
  CU_ASSERT_EQUAL(zkrc_cache_size(c), 0);
  CU_ASSERT_STRING_EQUAL(zkrc_cache_path(c), path);
  CU_ASSERT_TRUE(wait_count(&r, ZKRC_CACHE_INITIALIZED, 1, 10000));
  CU_ASSERT_EQUAL(node_events(&r), 0);

  CU_ASSERT_EQUAL(
      zoo_create(zh, path, "one", 3, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
  CU_ASSERT_TRUE(wait_node_events(&r, 1, 10000));
  cc_event e = expect_last(&r, ZKRC_CACHE_NODE_ADDED, path);
  CU_ASSERT_TRUE(value_is(&e.node, "one"));
  CU_ASSERT_TRUE(node_has(c, NULL, "one", 3));
  CU_ASSERT_TRUE(node_has(c, path, "one", 3));

  CU_ASSERT_EQUAL(zoo_set(zh, path, "two", 3, -1), ZOK);
  CU_ASSERT_TRUE(wait_node_events(&r, 2, 10000));
  e = expect_last(&r, ZKRC_CACHE_NODE_UPDATED, path);
  CU_ASSERT_TRUE(value_is(&e.node, "two"));
  CU_ASSERT_TRUE(value_is(&e.old, "one"));

  CU_ASSERT_EQUAL(zoo_delete(zh, path, -1), ZOK);
  CU_ASSERT_TRUE(wait_node_events(&r, 3, 10000));
  e = expect_last(&r, ZKRC_CACHE_NODE_REMOVED, path);
  CU_ASSERT_TRUE(value_is(&e.node, "two"));
  ZKT_ASSERT_RC(ZKRC_ENONODE, zkrc_cache_get(c, NULL, &n));
  CU_ASSERT_EQUAL(zkrc_cache_size(c), 0);

  CU_ASSERT_EQUAL(
      zoo_create(zh, path, "three", 5, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
  CU_ASSERT_TRUE(wait_node_events(&r, 4, 10000));
  e = expect_last(&r, ZKRC_CACHE_NODE_ADDED, path);
  CU_ASSERT_TRUE(value_is(&e.node, "three"));

  cc_scope scope = {path, 0, 0};
  GHashTable *servers = servers_tree(zh, path, 0, 0);
  CU_ASSERT_EQUAL(replay_violations(&r, &scope, servers), 0);
  GHashTable *snap = snapshot_state(c);
  CU_ASSERT_EQUAL(cc_state_diff(servers, snap, NULL), 0);
  g_hash_table_destroy(snap);
  g_hash_table_destroy(servers);
  zkrc_cache_free(c);
  zkrc_session_close(s);
  recorder_clear(&r);
  zookeeper_close(zh);
  g_free(path);
  g_free(dir);
}

/* Delete and create in one multi: the servers never lack the node, so the
 * cache, which reads after the delete's watch fires, finds it again: one
 * UPDATED with a new czxid ("deleted and created again"), never a REMOVED
 * of a node that was never missing. */
static void check_atomic_recreation(int kind, const char *root,
                                    const char *path, zhandle_t *zh,
                                    zkrc_session *s) {
  recorder r;
  recorder_init(&r);
  zkrc_cache *c = new_cache(kind, s, root, &r, -1);
  GHashTable *before = servers_tree(zh, root, kind == 1, kind == 0 ? 0 : -1);
  marker_want all = {path, 0, before};
  struct Stat st;
  CU_ASSERT_EQUAL(zoo_exists(zh, path, 0, &st), ZOK);
  all.mzxid = st.mzxid;
  CU_ASSERT_TRUE(recorder_wait(&r, marker_met, &all, 10000));
  guint start = event_count(&r);
  zoo_op_t ops[2];
  zoo_op_result_t res[2];
  zoo_delete_op_init(&ops[0], path, -1);
  zoo_create_op_init(&ops[1], path, "again", 5, &ZOO_OPEN_ACL_UNSAFE, 0, NULL,
                     0);
  CU_ASSERT_EQUAL(zoo_multi(zh, 2, ops, res), ZOK);
  CU_ASSERT_EQUAL(zoo_exists(zh, path, 0, &st), ZOK);
  GHashTable *after = servers_tree(zh, root, kind == 1, kind == 0 ? 0 : -1);
  marker_want m = {path, st.mzxid, after};
  CU_ASSERT_TRUE(recorder_wait(&r, marker_met, &m, 10000));
  guint end = event_count(&r);
  for (guint i = start; i < end; i++) {
    cc_event e = event_at(&r, i);
    printf("[%s %s] ", cc_type_name(e.type), e.path ? e.path : "-");
    CU_ASSERT_EQUAL(e.type, ZKRC_CACHE_NODE_UPDATED);
    if (e.type == ZKRC_CACHE_NODE_UPDATED)
      CU_ASSERT(e.node.czxid > e.old.czxid);
  }
  CU_ASSERT_EQUAL(end, start + 1);
  zkrc_cache_free(c);
  recorder_clear(&r);
  g_hash_table_destroy(before);
  g_hash_table_destroy(after);
}

static void test_atomic_recreation_is_one_update(void) {
  char *t = zkt_path("recreate");
  char *a = g_strdup_printf("%s/a", t);
  zhandle_t *zh = direct();
  zkt_make_path(zh, t);
  CU_ASSERT_EQUAL(zoo_create(zh, a, "a", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0),
                  ZOK);
  zkrc_session *s = zkt_session();
  for (int kind = 0; kind <= 2; kind++)
    check_atomic_recreation(kind, kind == 0 ? a : t, a, zh, s);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(a), g_free(t);
}

/* INITIALIZED (and zkrc_cache_wait_initialized) only once the whole tree
 * is in the copy: the events before it replay to the servers' tree, and
 * so does the snapshot taken as soon as the wait returns. */
static void test_initialized_comes_with_the_whole_tree(void) {
  char *t = zkt_path("init");
  zhandle_t *zh = direct();
  zkt_make_path(zh, t);
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 3; j++) {
      char *p = g_strdup_printf("%s/a%d/b%d", t, i, j);
      zkt_make_path(zh, p);
      g_free(p);
    }
  zkrc_session *s = zkt_session();
  GHashTable *servers = servers_tree(zh, t, 0, -1);
  int early_event = 0, early_wait = 0;
  for (int round = 0; round < 10; round++) {
    recorder r;
    recorder_init(&r);
    zkrc_cache *c = new_cache(2, s, t, &r, -1);
    GHashTable *snap = snapshot_state(c);
    early_wait += cc_state_diff(servers, snap, NULL) > 0;
    g_hash_table_destroy(snap);
    CU_ASSERT_TRUE(wait_count(&r, ZKRC_CACHE_INITIALIZED, 1, 10000));
    cc_replay rp;
    cc_scope scope = {t, 0, -1};
    g_mutex_lock(&r.mu);
    cc_replay_run((cc_event *)r.events->data, r.events->len, &scope, &rp);
    g_mutex_unlock(&r.mu);
    if (rp.at_initialized)
      early_event += cc_state_diff(servers, rp.at_initialized, NULL) > 0;
    cc_replay_clear(&rp);
    zkrc_cache_free(c);
    recorder_clear(&r);
  }
  printf("(%u nodes; of 10 caches, %d told INITIALIZED and %d returned from "
         "the wait with part of the tree) ",
         g_hash_table_size(servers), early_event, early_wait);
  CU_ASSERT_EQUAL(early_event, 0);
  CU_ASSERT_EQUAL(early_wait, 0);
  g_hash_table_destroy(servers);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(t);
}

static void create_node(zhandle_t *zh, const char *path, const char *data) {
  CU_ASSERT_EQUAL(zoo_create(zh, path, data, data ? (int)strlen(data) : -1,
                             &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0),
                  ZOK);
}

static char *child(const char *parent, const char *name) {
  return g_strdup_printf("%s/%s", parent, name);
}

static void test_children_cache_reports_only_children(void) {
  char *p = zkt_path("children");
  char *c1 = child(p, "c1"), *c2 = child(p, "c2"), *c3 = child(p, "c3");
  char *g1 = child(c1, "g1"), *g2 = child(c1, "g2");
  zhandle_t *zh = direct();
  zkt_make_path(zh, p);
  create_node(zh, c1, "1");
  create_node(zh, c2, "2");
  create_node(zh, g1, "g");
  zkrc_session *s = zkt_session();
  recorder r;
  recorder_init(&r);
  zkrc_cache *c = new_cache(1, s, p, &r, -1);
  const zkrc_cache_node *n = NULL;
  ZKT_ASSERT_RC(ZKRC_ENONODE, zkrc_cache_get(c, p, &n));
  ZKT_ASSERT_RC(ZKRC_ENONODE, zkrc_cache_get(c, g1, &n));
  /* (Not at once: INITIALIZED may come early, see the test of it.) */
  CU_ASSERT_TRUE(wait_node_events(&r, 2, 10000));
  CU_ASSERT_EQUAL(zkrc_cache_size(c), 2);

  /* The parent's data, grandchildren: not reported; c3: a marker. */
  CU_ASSERT_EQUAL(zoo_set(zh, p, "parent", 6, -1), ZOK);
  create_node(zh, g2, "g2");
  CU_ASSERT_EQUAL(zoo_set(zh, g1, "g!", 2, -1), ZOK);
  CU_ASSERT_EQUAL(zoo_delete(zh, g2, -1), ZOK);
  create_node(zh, c3, "3");
  CU_ASSERT_TRUE(wait_node_events(&r, 3, 10000));
  expect_last(&r, ZKRC_CACHE_NODE_ADDED, c3);
  CU_ASSERT_EQUAL(node_events(&r), 3);
  CU_ASSERT_EQUAL(zoo_set(zh, c1, "1b", 2, -1), ZOK);
  CU_ASSERT_TRUE(wait_node_events(&r, 4, 10000));
  expect_last(&r, ZKRC_CACHE_NODE_UPDATED, c1);
  CU_ASSERT_EQUAL(zoo_delete(zh, c2, -1), ZOK);
  CU_ASSERT_TRUE(wait_node_events(&r, 5, 10000));
  expect_last(&r, ZKRC_CACHE_NODE_REMOVED, c2);

  cc_scope scope = {p, 1, 1};
  GHashTable *servers = servers_tree(zh, p, 1, 1);
  CU_ASSERT_EQUAL(g_hash_table_size(servers), 2);
  CU_ASSERT_EQUAL(replay_violations(&r, &scope, servers), 0);
  GHashTable *snap = snapshot_state(c);
  CU_ASSERT_EQUAL(cc_state_diff(servers, snap, NULL), 0);
  g_hash_table_destroy(snap);
  g_hash_table_destroy(servers);
  zkrc_cache_free(c);
  zkrc_session_close(s);
  recorder_clear(&r);
  zookeeper_close(zh);
  g_free(c1), g_free(c2), g_free(c3), g_free(g1), g_free(g2), g_free(p);
}

/* A tree cache with @p depth: the nodes below it never reported. */
static void check_max_depth(zhandle_t *zh, zkrc_session *s, const char *t,
                            int depth) {
  recorder r;
  recorder_init(&r);
  zkrc_cache *c = new_cache(2, s, t, &r, depth);
  GHashTable *servers = servers_tree(zh, t, 0, depth);
  GHashTable *snap = snapshot_state(c);
  CU_ASSERT_EQUAL(cc_state_diff(servers, snap, NULL), 0);
  g_hash_table_destroy(snap);
  g_hash_table_destroy(servers);
  int before = node_events(&r);
  /* Deeper changes, then one at the limit (the marker). */
  char *deep = g_strdup_printf("%s/a/b/new%d", t, depth);
  create_node(zh, deep, "x");
  CU_ASSERT_EQUAL(zoo_set(zh, t, "t", 1, -1), ZOK);
  char *a = child(t, "a");
  CU_ASSERT_EQUAL(zoo_set(zh, a, "a", 1, -1), ZOK);
  CU_ASSERT_EQUAL(zoo_delete(zh, deep, -1), ZOK);
  char *at_limit = depth == 0 ? g_strdup(t) : child(t, "a");
  CU_ASSERT_EQUAL(zoo_set(zh, at_limit, "limit", 5, -1), ZOK);
  marker_want m = {at_limit, 0, NULL};
  struct Stat st;
  CU_ASSERT_EQUAL(zoo_exists(zh, at_limit, 0, &st), ZOK);
  m.mzxid = st.mzxid;
  CU_ASSERT_TRUE(recorder_wait(&r, marker_met, &m, 10000));
  CU_ASSERT(node_events(&r) > before);
  cc_scope scope = {t, 0, depth};
  servers = servers_tree(zh, t, 0, depth);
  CU_ASSERT_EQUAL(replay_violations(&r, &scope, servers), 0);
  snap = snapshot_state(c);
  CU_ASSERT_EQUAL(cc_state_diff(servers, snap, NULL), 0);
  g_hash_table_destroy(snap);
  g_hash_table_destroy(servers);
  zkrc_cache_free(c);
  recorder_clear(&r);
  g_free(deep), g_free(a), g_free(at_limit);
}

static void test_tree_cache_respects_max_depth(void) {
  char *t = zkt_path("depth");
  zhandle_t *zh = direct();
  zkt_make_path(zh, t);
  const char *names[] = {"a", "a/b", "a/b/c", "a/b/c/d", "e", "e/f"};
  for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
    char *p = child(t, names[i]);
    create_node(zh, p, names[i]);
    g_free(p);
  }
  zkrc_session *s = zkt_session();
  for (int depth = 0; depth <= 2; depth++)
    check_max_depth(zh, s, t, depth);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(t);
}

static void test_data_with_nul_bytes_empty_and_null(void) {
  char *dir = zkt_path("data");
  char *path = child(dir, "n");
  zhandle_t *zh = direct();
  zkt_make_path(zh, dir);
  zkrc_session *s = zkt_session();
  recorder r;
  recorder_init(&r);
  zkrc_cache *c = new_cache(0, s, path, &r, -1);
  create_node(zh, path, NULL);
  CU_ASSERT_TRUE(wait_node_events(&r, 1, 10000));
  cc_event e = expect_last(&r, ZKRC_CACHE_NODE_ADDED, path);
  CU_ASSERT_PTR_NULL(e.node.data);
  CU_ASSERT_TRUE(node_has(c, path, NULL, -1));
  const zkrc_cache_node *n = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_cache_get(c, path, &n));
  if (n) {
    CU_ASSERT_EQUAL(n->len, 0);
    zkrc_cache_node_unref(n);
  }
  static const char nul[] = "a\0b\0\0c"; /* 6 bytes */
  struct {
    const char *data;
    int len;
  } steps[] = {{"", 0}, {nul, 6}, {NULL, -1}, {"\0", 1}, {"", 0}};
  for (size_t i = 0; i < G_N_ELEMENTS(steps); i++) {
    CU_ASSERT_EQUAL(zoo_set(zh, path, steps[i].data, steps[i].len, -1), ZOK);
    CU_ASSERT_TRUE(wait_node_events(&r, (int)i + 2, 10000));
    e = expect_last(&r, ZKRC_CACHE_NODE_UPDATED, path);
    CU_ASSERT_EQUAL(e.node.len, steps[i].len);
    CU_ASSERT_TRUE(node_has(c, path, steps[i].data, steps[i].len));
  }
  cc_scope scope = {path, 0, 0};
  GHashTable *servers = servers_tree(zh, path, 0, 0);
  CU_ASSERT_EQUAL(replay_violations(&r, &scope, servers), 0);
  GHashTable *snap = snapshot_state(c);
  CU_ASSERT_EQUAL(cc_state_diff(servers, snap, NULL), 0);
  g_hash_table_destroy(snap);
  g_hash_table_destroy(servers);
  zkrc_cache_free(c);
  zkrc_session_close(s);
  recorder_clear(&r);
  zookeeper_close(zh);
  g_free(path);
  g_free(dir);
}

/* The cache's root deleted with everything under it, then created again:
 * everything REMOVED, then ADDED again (the root is watched until it
 * exists), for a tree cache and a children cache - this one made before
 * its parent exists. */
static void check_root_gone_and_back(int kind, const char *root, zhandle_t *zh,
                                     zkrc_session *s) {
  recorder r;
  recorder_init(&r);
  zkrc_cache *c = new_cache(kind, s, root, &r, -1);
  static const char *const names[] = {"a", "a/b", "c"};
  int lo = kind == 1, hi = kind == 1 ? 1 : -1; /* children: depth 1 */
  cc_scope scope = {root, lo, hi};
  for (int round = 0; round < 3; round++) {
    zkt_make_path(zh, root);
    for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
      char *p = child(root, names[i]);
      create_node(zh, p, names[i]);
      g_free(p);
    }
    char *marker = child(root, "c");
    GHashTable *servers = servers_tree(zh, root, lo, hi);
    marker_want m = {marker, zkt_czxid(zh, marker), servers};
    CU_ASSERT_TRUE(recorder_wait(&r, marker_met, &m, 10000));
    g_hash_table_destroy(servers);
    /* Gone, deepest first. */
    for (size_t i = G_N_ELEMENTS(names); i-- > 0;) {
      char *p = child(root, names[i]);
      CU_ASSERT_EQUAL(zoo_delete(zh, p, -1), ZOK);
      g_free(p);
    }
    int rc = zoo_delete(zh, root, -1);
    if (rc != ZOK) /* seen once under load, cause unknown: say which */
      fprintf(stderr, "delete %s (round %d): %s\n", root, round, zerror(rc));
    CU_ASSERT_EQUAL(rc, ZOK);
    GHashTable *none = cc_state_new();
    marker_want gone = {"/", -1, none}; /* "/" never cached: diff only */
    CU_ASSERT_TRUE(recorder_wait(&r, empty_and_diff_met, &gone, 10000));
    g_hash_table_destroy(none);
    g_free(marker);
  }
  GHashTable *servers = cc_state_new();
  CU_ASSERT_EQUAL(replay_violations(&r, &scope, servers), 0);
  g_hash_table_destroy(servers);
  printf("(%s: %d ADDED, %d REMOVED) ", kind == 1 ? "children" : "tree",
         r.counts[ZKRC_CACHE_NODE_ADDED], r.counts[ZKRC_CACHE_NODE_REMOVED]);
  CU_ASSERT_EQUAL(zkrc_cache_size(c), 0);
  zkrc_cache_free(c);
  recorder_clear(&r);
}

static void test_root_deleted_and_created_again(void) {
  char *t = zkt_path("root-gone");
  char *tree = child(t, "tree"), *kids = child(t, "kids");
  zhandle_t *zh = direct();
  zkt_make_path(zh, t);
  zkrc_session *s = zkt_session();
  check_root_gone_and_back(2, tree, zh, s);
  check_root_gone_and_back(1, kids, zh, s);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(tree), g_free(kids), g_free(t);
}

/* ------------------------------------------------ freeing a busy cache */

/* A listener that frees its cache on @p trigger's ADDED, or blocks on its
 * first call until the gate opens; and counts calls after the free. */
typedef struct freeing {
  recorder r;
  zkrc_cache *c;
  const char *trigger; /* free from inside on its ADDED; NULL: never */
  int block_first;     /* hold the first call until gate */
  int gate, blocked, free_called, free_returned;
  int calls, calls_after_free;
  const zkrc_cache_node *kept; /* the trigger's node, referenced */
} freeing;

static void freeing_listener(zkrc_cache *c, const zkrc_cache_event *ev,
                             void *arg) {
  freeing *f = arg;
  g_mutex_lock(&f->r.mu);
  f->calls++;
  f->calls_after_free += f->free_returned;
  recorder_add(&f->r, ev);
  int mine = f->trigger && ev->type == ZKRC_CACHE_NODE_ADDED &&
             strcmp(ev->node->path, f->trigger) == 0;
  if (f->block_first && f->calls == 1) {
    f->blocked = 1;
    g_cond_broadcast(&f->r.cond);
    int64_t deadline = g_get_monotonic_time() + 15 * G_TIME_SPAN_SECOND;
    while (!f->gate && g_cond_wait_until(&f->r.cond, &f->r.mu, deadline))
      ;
  }
  g_mutex_unlock(&f->r.mu);
  if (mine) {
    f->kept = zkrc_cache_node_ref(ev->node); /* outlives the cache */
    zkrc_cache_free(c);
    g_mutex_lock(&f->r.mu);
    f->free_returned = 1;
    g_cond_broadcast(&f->r.cond);
    g_mutex_unlock(&f->r.mu);
  }
}

static zkrc_cache *freeing_cache(zkrc_session *s, const char *path,
                                 freeing *f) {
  zkrc_cache_options o;
  zkrc_cache_options_init(&o);
  o.on_event = freeing_listener;
  o.event_arg = f;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_tree_cache_new(&f->c, s, path, &o));
  CU_ASSERT_PTR_NOT_NULL_FATAL(f->c);
  return f->c;
}

static int flag_set(recorder *r, void *flag) { return *(int *)flag; }

static void test_free_from_its_own_listener(void) {
  char *t = zkt_path("free-inside");
  char *trigger = child(t, "trigger"), *w = child(t, "witness");
  zhandle_t *zh = direct();
  zkt_make_path(zh, t);
  zkrc_session *s = zkt_session();
  freeing f;
  memset(&f, 0, sizeof f);
  recorder_init(&f.r);
  f.trigger = trigger;
  freeing_cache(s, t, &f);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_cache_wait_initialized(f.c, 15000));
  /* A witness on the same session: its event comes after any the freed
   * cache could still have had queued. */
  recorder wr;
  recorder_init(&wr);
  zkrc_cache *witness = new_cache(0, s, w, &wr, -1);
  const zkrc_cache_node *got = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_cache_get(f.c, NULL, &got));
  create_node(zh, trigger, "go");
  CU_ASSERT_TRUE(recorder_wait(&f.r, flag_set, &f.free_returned, 10000));
  for (int i = 0; i < 20; i++) {
    char *p = g_strdup_printf("%s/after%d", t, i);
    create_node(zh, p, "x");
    g_free(p);
  }
  CU_ASSERT_EQUAL(zoo_set(zh, trigger, "again", 5, -1), ZOK);
  create_node(zh, w, "w");
  CU_ASSERT_TRUE(wait_node_events(&wr, 1, 10000));
  zkrc_cache_free(witness);
  zkrc_session_close(s); /* every callback posted has run */
  g_mutex_lock(&f.r.mu);
  CU_ASSERT_EQUAL(f.calls_after_free, 0);
  g_mutex_unlock(&f.r.mu);
  /* Nodes handed out stay valid until given back (valgrind sees it). */
  CU_ASSERT_PTR_NOT_NULL_FATAL(f.kept);
  CU_ASSERT_STRING_EQUAL(f.kept->path, trigger);
  CU_ASSERT_TRUE(f.kept->len == 2 && memcmp(f.kept->data, "go", 2) == 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(got);
  CU_ASSERT_STRING_EQUAL(got->path, t);
  zkrc_cache_node_unref(f.kept);
  zkrc_cache_node_unref(got);
  recorder_clear(&f.r);
  recorder_clear(&wr);
  zookeeper_close(zh);
  g_free(trigger), g_free(w), g_free(t);
}

static gpointer free_in_thread(gpointer data) {
  freeing *f = data;
  g_mutex_lock(&f->r.mu);
  f->free_called = 1;
  g_cond_broadcast(&f->r.cond);
  g_mutex_unlock(&f->r.mu);
  zkrc_cache_free(f->c);
  g_mutex_lock(&f->r.mu);
  f->free_returned = 1;
  g_cond_broadcast(&f->r.cond);
  g_mutex_unlock(&f->r.mu);
  return NULL;
}

static void test_free_while_events_are_queued(void) {
  char *t = zkt_path("free-queued");
  char *leaf = child(t, "leaf");
  zhandle_t *zh = direct();
  zkt_make_path(zh, t);
  create_node(zh, leaf, "0");
  zkrc_session *s = zkt_session();
  freeing f;
  memset(&f, 0, sizeof f);
  recorder_init(&f.r);
  f.block_first = 1;
  freeing_cache(s, t, &f);
  CU_ASSERT_TRUE(recorder_wait(&f.r, flag_set, &f.blocked, 10000));
  /* Changes whose events queue up behind the blocked listener: the copy
   * shows the last one (polled: no event can announce it now). */
  struct Stat st;
  for (int i = 0; i < 30; i++) {
    char data[16];
    g_snprintf(data, sizeof data, "v%d", i);
    CU_ASSERT_EQUAL(zoo_set2(zh, leaf, data, (int)strlen(data), -1, &st), ZOK);
  }
  cc_copy_has h = {f.c, leaf, st.mzxid};
  CU_ASSERT_TRUE(zkt_wait_for(cc_copy_has_change, &h, 10000));
  GThread *freer = g_thread_new("free", free_in_thread, &f);
  CU_ASSERT_TRUE(recorder_wait(&f.r, flag_set, &f.free_called, 10000));
  g_mutex_lock(&f.r.mu);
  f.gate = 1;
  g_cond_broadcast(&f.r.cond);
  g_mutex_unlock(&f.r.mu);
  int returned = recorder_wait(&f.r, flag_set, &f.free_returned, 15000);
  CU_ASSERT_TRUE_FATAL(returned); /* else the thread is stuck in free */
  g_thread_join(freer);
  zkrc_session_close(s); /* every callback posted has run */
  g_mutex_lock(&f.r.mu);
  printf("(%d listener calls before the free returned, %d after) ", f.calls,
         f.calls_after_free);
  CU_ASSERT_EQUAL(f.calls_after_free, 0);
  g_mutex_unlock(&f.r.mu);
  recorder_clear(&f.r);
  zookeeper_close(zh);
  g_free(leaf), g_free(t);
}

/* ------------------------------------------------------------ bad input */

typedef int (*cache_new_fn)(zkrc_cache **, zkrc_session *, const char *,
                            const zkrc_cache_options *);

static void test_bad_input_is_refused(void) {
  static const cache_new_fn news[] = {
      zkrc_node_cache_new, zkrc_children_cache_new, zkrc_tree_cache_new};
  static const char *const bad_paths[] = {NULL,  "",      "x",      "/x/",
                                          "//x", "/x//y", "/x/./y", "/x/../y"};
  char *t = zkt_path("bad-input");
  zhandle_t *zh = direct();
  zkt_make_path(zh, t);
  zkrc_session *s = zkt_session();
  zkrc_cache_options blank;
  memset(&blank, 0, sizeof blank); /* not initialized */
  for (size_t k = 0; k < G_N_ELEMENTS(news); k++) {
    zkrc_cache *c = (zkrc_cache *)&c;
    ZKT_ASSERT_RC(ZKRC_EINVAL, news[k](NULL, s, t, NULL));
    ZKT_ASSERT_RC(ZKRC_EINVAL, news[k](&c, NULL, t, NULL));
    CU_ASSERT_PTR_NULL(c);
    for (size_t i = 0; i < G_N_ELEMENTS(bad_paths); i++) {
      c = (zkrc_cache *)&c;
      ZKT_ASSERT_RC(ZKRC_EINVAL, news[k](&c, s, bad_paths[i], NULL));
      CU_ASSERT_PTR_NULL(c);
    }
    c = (zkrc_cache *)&c;
    ZKT_ASSERT_RC(ZKRC_EINVAL, news[k](&c, s, t, &blank));
    CU_ASSERT_PTR_NULL(c);
  }
  zkrc_cache_options_init(NULL);
  CU_ASSERT_STRING_EQUAL(zkrc_cache_event_name(ZKRC_CACHE_NODE_ADDED), "added");
  CU_ASSERT_STRING_EQUAL(zkrc_cache_event_name(ZKRC_CACHE_NODE_UNREADABLE),
                         "unreadable");
  CU_ASSERT_STRING_EQUAL(zkrc_cache_event_name((zkrc_cache_event_type)99),
                         "unknown");
  CU_ASSERT_STRING_EQUAL(zkrc_cache_event_name((zkrc_cache_event_type)0),
                         "unknown");
  CU_ASSERT_PTR_NULL(zkrc_cache_node_ref(NULL));
  zkrc_cache_node_unref(NULL);
  zkrc_cache_free(NULL);
  zkrc_cache_nodes_free(NULL, 0);

  /* On a live cache: refused, and the copy unchanged. */
  char *a = child(t, "a");
  create_node(zh, a, "a");
  recorder r;
  recorder_init(&r);
  zkrc_cache *c = new_cache(2, s, t, &r, -1);
  CU_ASSERT_TRUE(wait_node_events(&r, 2, 10000)); /* t and a */
  size_t size = zkrc_cache_size(c);
  CU_ASSERT_EQUAL(size, 2);
  const zkrc_cache_node *n = (const zkrc_cache_node *)&n;
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_cache_get(NULL, a, &n));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_cache_get(c, a, NULL));
  for (size_t i = 1; i < G_N_ELEMENTS(bad_paths); i++)
    ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_cache_get(c, bad_paths[i], &n));
  const zkrc_cache_node **nodes = NULL;
  size_t count = 0;
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_cache_snapshot(NULL, &nodes, &count));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_cache_snapshot(c, NULL, &count));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_cache_snapshot(c, &nodes, NULL));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_cache_wait_initialized(NULL, 10));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_cache_wait_initialized(c, -5));
  CU_ASSERT_EQUAL(zkrc_cache_size(c), size);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_cache_get(c, a, &n));
  zkrc_cache_node_unref(n);
  cc_scope scope = {t, 0, -1};
  GHashTable *servers = servers_tree(zh, t, 0, -1);
  CU_ASSERT_EQUAL(replay_violations(&r, &scope, servers), 0);
  g_hash_table_destroy(servers);
  zkrc_cache_free(c);
  zkrc_session_close(s);
  recorder_clear(&r);
  zookeeper_close(zh);
  g_free(a), g_free(t);
}

static int lost_is_last(recorder *r, void *arg) {
  return r->events->len > 0 &&
         g_array_index(r->events, cc_event, r->events->len - 1).type ==
             ZKRC_CACHE_LOST;
}

static void test_closed_session_is_eclosed(void) {
  char *t = zkt_path("closed");
  zhandle_t *zh = direct();
  zkt_make_path(zh, t);
  zkrc_session *s = zkt_session();
  recorder r;
  recorder_init(&r);
  zkrc_cache *c = new_cache(2, s, t, &r, -1);
  zkrc_session_close(s); /* c keeps the session's memory */
  zkrc_cache *late = (zkrc_cache *)&late;
  ZKT_ASSERT_RC(ZKRC_ECLOSED, zkrc_node_cache_new(&late, s, t, NULL));
  CU_ASSERT_PTR_NULL(late);
  ZKT_ASSERT_RC(ZKRC_ECLOSED, zkrc_children_cache_new(&late, s, t, NULL));
  ZKT_ASSERT_RC(ZKRC_ECLOSED, zkrc_tree_cache_new(&late, s, t, NULL));
  /* The listener was told LOST, and nothing after it. */
  CU_ASSERT_TRUE(recorder_wait(&r, lost_is_last, NULL, 10000));
  guint n = event_count(&r);
  char *after = child(t, "after");
  create_node(zh, after, "x");
  g_free(after);
  /* The copy is still readable. */
  const zkrc_cache_node *root = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_cache_get(c, NULL, &root));
  zkrc_cache_node_unref(root);
  zkrc_cache_free(c);
  CU_ASSERT_EQUAL(event_count(&r), n);
  recorder_clear(&r);
  zookeeper_close(zh);
  g_free(t);
}

static void add_suites(void) {
  ZKT_SUITE("proof", {"tree cache converges through faults",
                      test_tree_cache_converges_through_faults});
  ZKT_SUITE(
      "promises",
      {"node cache: created later, deleted, re-created",
       test_node_cache_created_later_deleted_recreated},
      {"children cache reports only children",
       test_children_cache_reports_only_children},
      {"tree cache respects max_depth", test_tree_cache_respects_max_depth},
      {"data with NUL bytes, empty and NULL",
       test_data_with_nul_bytes_empty_and_null},
      {"free from its own listener", test_free_from_its_own_listener},
      {"free while events are queued", test_free_while_events_are_queued},
      {"bad input is refused", test_bad_input_is_refused},
      {"atomic re-creation is one UPDATED",
       test_atomic_recreation_is_one_update},
      {"INITIALIZED comes with the whole tree",
       test_initialized_comes_with_the_whole_tree},
      {"root deleted and created again", test_root_deleted_and_created_again},
      {"closed session is ECLOSED", test_closed_session_is_eclosed});
}

int main(void) {
  zkt_configure(3, 1);
  return zkt_run("test_cache_faults", add_suites);
}
