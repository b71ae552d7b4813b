/*
 * zkr-bench: the caches (issue 16).  How long a change on the servers
 * takes to reach a cache's listener, and how many requests a cache sends
 * per change it reports: zkrecipes' node and tree caches
 * (zkrecipes/cache.h) beside Curator's NodeCache, TreeCache and
 * CuratorCache, on the same ensemble, interleaved in rounds.
 *
 * One run = one cache in its own process (zkr-bench-worker's cache mode,
 * CuratorPeer's cache mode), connected to member 1, and this program as
 * the only writer, one session on member 0, making one change at a time:
 * it writes (synchronously), then waits for the cache's event of that
 * change, then CACHE_GAP_MS, then the next.  Events are matched to changes
 * by their node's mzxid (REMOVED: the mzxid of the value it removes), so a
 * stray or late event cannot be taken for another change's.  Both clocks
 * are CLOCK_MONOTONIC (checked at the start of every run: the cache's
 * "clock" answer must fall between our readings around the question).
 *
 * The node workload updates one node; the tree workload changes a tree of
 * TREE_CHILDREN children with TREE_GRANDCHILDREN grandchildren each (100
 * nodes below the root): updates of children and grandchildren (half the
 * changes), creates and deletes of grandchildren (a quarter each).  Then,
 * for the node cache, a burst: BURST updates of the node sent back to
 * back (asynchronously), to see how each cache coalesces them.
 *
 * Requests per change: the servers' packet counters (mntr, summed over the
 * members) between two snapshots around the measured changes, minus this
 * program's own writes and mntr; the same source for every cache.  For
 * zkrecipes also its session's own count (zkrc_session_get_stats()), with
 * the lease renewals apart (the lease's cost, paid also while idle).
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include "bench.h"

#define CACHE_WARMUP 20    /* changes before the measured ones, per run */
#define CACHE_GAP_MS 10    /* after a change's event, before the next change */
#define EVENT_WAIT_MS 5000 /* a change whose event takes longer is missed */
#define TREE_CHILDREN 10
#define TREE_GRANDCHILDREN 9 /* present at the start, of 10 slots each */
#define TREE_SLOTS 10
#define BURST 50

typedef struct cache_impl {
  const char *name;
  const char *kind; /* zkr-bench-worker's or CuratorPeer's cache KIND */
  gboolean curator;
} cache_impl;

static const cache_impl node_impls[] = {{"zkrecipes", "node", FALSE},
                                        {"NodeCache", "node", TRUE},
                                        {"CuratorCache", "curator-node", TRUE}};
static const cache_impl tree_impls[] = {{"zkrecipes", "tree", FALSE},
                                        {"TreeCache", "tree", TRUE},
                                        {"CuratorCache", "curator", TRUE}};
#define N_CACHE_IMPLS 3

/* ------------------------------------------------------------ the writer */

static zhandle_t *writer_zh;
static GMutex writer_mu;
static GCond writer_cond;
static int writer_state;
static int burst_pending;   /* asynchronous sets not answered yet */
static int64_t burst_mzxid; /* the highest mzxid they returned */
static int burst_errors;

static void writer_quiet_log(const char *message) { (void)message; }

static void writer_watcher(zhandle_t *zh, int type, int state, const char *path,
                           void *ctx) {
  (void)zh, (void)path, (void)ctx;
  g_mutex_lock(&writer_mu);
  if (type == ZOO_SESSION_EVENT)
    writer_state = state;
  g_cond_broadcast(&writer_cond);
  g_mutex_unlock(&writer_mu);
}

/* The writer's session, on member 0 (the caches are on member 1). */
static void writer_connect(void) {
  writer_zh =
      zookeeper_init2(member_addr[0], writer_watcher, MEASURE_SESSION_MS, NULL,
                      NULL, 0, writer_quiet_log);
  if (writer_zh == NULL)
    fatal("zookeeper_init: %s", strerror(errno));
  int64_t deadline = g_get_monotonic_time() + (int64_t)STEP_MS * 1000;
  g_mutex_lock(&writer_mu);
  while (writer_state != ZOO_CONNECTED_STATE)
    if (!g_cond_wait_until(&writer_cond, &writer_mu, deadline))
      fatal("the writer's session could not connect to %s", member_addr[0]);
  g_mutex_unlock(&writer_mu);
}

static void must_zk(const char *what, const char *path, int rc) {
  if (rc != ZOK)
    fatal("%s %s: %s", what, path, zerror(rc));
}

/* Create @p path and its missing parents (empty). */
static void ensure_path(const char *path) {
  for (const char *p = strchr(path + 1, '/');; p = strchr(p + 1, '/')) {
    char *prefix = p ? g_strndup(path, (gsize)(p - path)) : g_strdup(path);
    int rc = zoo_create(writer_zh, prefix, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0,
                        NULL, 0);
    if (rc != ZNODEEXISTS)
      must_zk("create", prefix, rc);
    g_free(prefix);
    if (p == NULL)
      return;
  }
}

/* A change: when it was sent and answered, and the event it must cause. */
typedef struct change {
  const char *type; /* the cache event expected */
  int64_t mzxid;    /* of the value that event carries */
  int64_t sent_ns, reply_ns;
} change;

static void write_set(const char *path, int64_t counter, change *c) {
  char data[32];
  int len = snprintf(data, sizeof data, "v%" PRId64, counter);
  struct Stat st;
  c->sent_ns = now_ns();
  must_zk("set", path, zoo_set2(writer_zh, path, data, len, -1, &st));
  c->reply_ns = now_ns();
  c->type = "UPDATED";
  c->mzxid = st.mzxid;
}

static void write_create(const char *path, change *c) {
  struct Stat st;
  c->sent_ns = now_ns();
  must_zk("create", path,
          zoo_create2(writer_zh, path, "new", 3, &ZOO_OPEN_ACL_UNSAFE, 0, NULL,
                      0, &st));
  c->reply_ns = now_ns();
  c->type = "ADDED";
  c->mzxid = st.mzxid;
}

static void write_delete(const char *path, int64_t last_mzxid, change *c) {
  c->sent_ns = now_ns();
  must_zk("delete", path, zoo_delete(writer_zh, path, -1));
  c->reply_ns = now_ns();
  c->type = "REMOVED";
  c->mzxid = last_mzxid;
}

static void burst_set_done(int rc, const struct Stat *st, const void *data) {
  (void)data;
  g_mutex_lock(&writer_mu);
  if (rc != ZOK)
    burst_errors++;
  else if (st->mzxid > burst_mzxid)
    burst_mzxid = st->mzxid;
  burst_pending--;
  g_cond_broadcast(&writer_cond);
  g_mutex_unlock(&writer_mu);
}

/* BURST asynchronous sets of @p path, all sent before the first answer is
 * awaited; returns the mzxid of the last, once all are answered. */
static int64_t write_burst(const char *path, int64_t *counter) {
  g_mutex_lock(&writer_mu);
  burst_pending = BURST;
  burst_mzxid = 0;
  burst_errors = 0;
  g_mutex_unlock(&writer_mu);
  for (int i = 0; i < BURST; i++) {
    char data[32];
    int len = snprintf(data, sizeof data, "v%" PRId64, ++*counter);
    must_zk("aset", path,
            zoo_aset(writer_zh, path, data, len, -1, burst_set_done, NULL));
  }
  int64_t deadline = g_get_monotonic_time() + (int64_t)STEP_MS * 1000;
  g_mutex_lock(&writer_mu);
  while (burst_pending > 0)
    if (!g_cond_wait_until(&writer_cond, &writer_mu, deadline))
      fatal("the burst's sets were not answered in time");
  int64_t last = burst_mzxid;
  int errors = burst_errors;
  g_mutex_unlock(&writer_mu);
  if (errors)
    fatal("%d of the burst's sets failed", errors);
  return last;
}

/* ------------------------------------------------------------ the caches */

/* What a run saw of the cache's events. */
typedef struct event_count {
  int events; /* node events read, the awaited ones and any other */
} event_count;

/* Parse "event TYPE PATH VERSION MZXID T_NS"; FALSE for other lines. */
static gboolean parse_event(const char *line, char *type, size_t type_size,
                            int64_t *mzxid, int64_t *t_ns) {
  char t[16];
  int64_t version;
  if (sscanf(line, "event %15s %*s %" SCNd64 " %" SCNd64 " %" SCNd64, t,
             &version, mzxid, t_ns) != 4)
    return FALSE;
  snprintf(type, type_size, "%s", t);
  return TRUE;
}

/* Read the cache's lines until the event of @p c; its arrival time (ns,
 * CLOCK_MONOTONIC), or -1 when it did not come within EVENT_WAIT_MS. */
static int64_t await_event(proc *p, const change *c, event_count *ec) {
  int64_t deadline = now_ns() + (int64_t)EVENT_WAIT_MS * 1000000;
  for (;;) {
    int left = (int)((deadline - now_ns()) / 1000000);
    char *line = left > 0 ? proc_try_line(p, left) : NULL;
    if (line == NULL)
      return -1;
    char type[16];
    int64_t mzxid, t;
    if (g_str_has_prefix(line, "error"))
      fatal("%s: %s", p->name, line);
    if (parse_event(line, type, sizeof type, &mzxid, &t)) {
      ec->events++;
      if (mzxid == c->mzxid && strcmp(type, c->type) == 0) {
        g_free(line);
        return t;
      }
    }
    g_free(line);
  }
}

/* Start the cache of @p impl on @p path; returns once it is initialized
 * (how long its first read took, ms, in *@p init_ms, and the nodes it then
 * had in *@p nodes) and reads our clock. */
static proc *cache_start(const cache_impl *impl, const char *path,
                         double *init_ms, double *nodes) {
  const char *args[] = {"cache", member_addr[members > 1 ? 1 : 0], path,
                        impl->kind, NULL};
  proc *p = impl->curator ? peer_start("curator", args, MEASURE_SESSION_MS)
                          : worker_start("zkrecipes cache", args);
  char *ready = proc_expect(p, "ready", START_MS);
  *init_ms = need_field(p->name, ready, "init_us") / 1000;
  *nodes = need_field(p->name, ready, "nodes");
  g_free(ready);
  int64_t before = now_ns();
  proc_send(p, "clock");
  char *line = proc_expect(p, "clock", STEP_MS);
  int64_t after = now_ns();
  int64_t theirs = (int64_t)g_ascii_strtoll(line + strlen("clock"), NULL, 10);
  if (theirs < before || theirs > after)
    fatal("%s: its clock (%" PRId64 ") is not our CLOCK_MONOTONIC (%" PRId64
          " .. %" PRId64 ")",
          impl->name, theirs, before, after);
  g_free(line);
  return p;
}

/* zkrecipes' own request count: requests and lease renewals so far. */
static void own_stats(proc *p, double *requests, double *renewals) {
  proc_send(p, "stats");
  char *line = proc_expect(p, "stats", STEP_MS);
  *requests = need_field(p->name, line, "requests");
  *renewals = need_field(p->name, line, "renewals");
  g_free(line);
}

/* --------------------------------------------------------- the workloads */

/* The tree: children c<i>, each with grandchildren g<j> in TREE_SLOTS
 * slots, TREE_GRANDCHILDREN present at the start. */
typedef struct tree_slot {
  char *path;
  gboolean present;
  int64_t mzxid;
} tree_slot;

typedef struct tree_model {
  tree_slot children[TREE_CHILDREN];
  tree_slot grand[TREE_CHILDREN * TREE_SLOTS];
  GRand *rng;
  int64_t counter;
} tree_model;

static void tree_create(tree_model *t, const char *root_path, int round) {
  ensure_path(root_path);
  int n = 0;
  zoo_op_t ops[TREE_CHILDREN * (1 + TREE_SLOTS)];
  zoo_op_result_t results[G_N_ELEMENTS(ops)];
  for (int i = 0; i < TREE_CHILDREN; i++) {
    t->children[i].path = g_strdup_printf("%s/c%d", root_path, i);
    t->children[i].present = TRUE;
    zoo_create_op_init(&ops[n++], t->children[i].path, "c", 1,
                       &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    for (int j = 0; j < TREE_SLOTS; j++) {
      tree_slot *g = &t->grand[i * TREE_SLOTS + j];
      g->path = g_strdup_printf("%s/c%d/g%d", root_path, i, j);
      g->present = j < TREE_GRANDCHILDREN;
      if (g->present)
        zoo_create_op_init(&ops[n++], g->path, "g", 1, &ZOO_OPEN_ACL_UNSAFE, 0,
                           NULL, 0);
    }
  }
  must_zk("multi", root_path, zoo_multi(writer_zh, n, ops, results));
  /* The mzxids, for the deletes' REMOVED events. */
  for (int i = 0; i < TREE_CHILDREN * (1 + TREE_SLOTS); i++) {
    tree_slot *s =
        i < TREE_CHILDREN ? &t->children[i] : &t->grand[i - TREE_CHILDREN];
    struct Stat st;
    if (s->present) {
      must_zk("exists", s->path, zoo_exists(writer_zh, s->path, 0, &st));
      s->mzxid = st.mzxid;
    }
  }
  /* The same changes for every cache of a round. */
  t->rng = g_rand_new_with_seed((guint32)round);
}

static void tree_free(tree_model *t) {
  for (int i = 0; i < TREE_CHILDREN; i++)
    g_free(t->children[i].path);
  for (int i = 0; i < TREE_CHILDREN * TREE_SLOTS; i++)
    g_free(t->grand[i].path);
  g_rand_free(t->rng);
}

/* A random slot whose presence is @p present, among the grandchildren (and
 * the children with @p with_children). */
static tree_slot *tree_pick(tree_model *t, gboolean present,
                            gboolean with_children) {
  tree_slot *c[TREE_CHILDREN * (1 + TREE_SLOTS)];
  int n = 0;
  for (int i = 0; with_children && i < TREE_CHILDREN; i++)
    c[n++] = &t->children[i];
  for (int i = 0; i < TREE_CHILDREN * TREE_SLOTS; i++)
    if (t->grand[i].present == present)
      c[n++] = &t->grand[i];
  return n ? c[g_rand_int_range(t->rng, 0, n)] : NULL;
}

/* Change @p i of the tree: update, create, update, delete, ... */
static void tree_change(tree_model *t, int i, change *c) {
  tree_slot *s;
  if (i % 2 == 0 || (s = tree_pick(t, i % 4 == 3, FALSE)) == NULL) {
    s = tree_pick(t, TRUE, TRUE);
    write_set(s->path, ++t->counter, c);
    s->mzxid = c->mzxid;
  } else if (i % 4 == 1) {
    write_create(s->path, c);
    s->present = TRUE;
    s->mzxid = c->mzxid;
  } else {
    write_delete(s->path, s->mzxid, c);
    s->present = FALSE;
  }
}

/* What a run measured, per change: latencies from the reply and from the
 * send (ms), per event type for the tree. */
typedef struct run_figures {
  GArray *from_reply, *from_sent, *write;
  GArray *by_type[3]; /* ADDED, UPDATED, REMOVED: from the reply */
  int missed;
  event_count ec;
} run_figures;

static const char *const event_types[3] = {"ADDED", "UPDATED", "REMOVED"};

static void figures_add(run_figures *f, const change *c, int64_t event_ns) {
  double reply = (double)(event_ns - c->reply_ns) / 1e6;
  double sent = (double)(event_ns - c->sent_ns) / 1e6;
  double write = (double)(c->reply_ns - c->sent_ns) / 1e6;
  g_array_append_val(f->from_reply, reply);
  g_array_append_val(f->from_sent, sent);
  g_array_append_val(f->write, write);
  for (int k = 0; k < 3; k++)
    if (strcmp(c->type, event_types[k]) == 0)
      g_array_append_val(f->by_type[k], reply);
}

static double q_of(GArray *a, double p) {
  return quantile((double *)(void *)a->data, a->len, p);
}

/* The run's figures into the table, under @p workload. */
static void figures_record(const char *workload, const char *impl,
                           run_figures *f, int changes, double requests,
                           gboolean tree) {
  record(workload, impl, "change -> event p50, from the write's reply", "ms",
         q_of(f->from_reply, 0.5));
  record(workload, impl, "change -> event p99, from the write's reply", "ms",
         q_of(f->from_reply, 0.99));
  record(workload, impl, "change -> event p50, from the write sent", "ms",
         q_of(f->from_sent, 0.5));
  record(workload, impl, "change -> event p99, from the write sent", "ms",
         q_of(f->from_sent, 0.99));
  for (int k = 0; tree && k < 3; k++) {
    char figure[64];
    snprintf(figure, sizeof figure, "  %s p50, from the reply", event_types[k]);
    record(workload, impl, figure, "ms", q_of(f->by_type[k], 0.5));
  }
  record(workload, impl, "the write itself p50 (sent -> reply)", "ms",
         q_of(f->write, 0.5));
  record(workload, impl, "requests per change (mntr)", "count",
         requests / changes);
  record(workload, impl, "events per change", "count",
         (double)f->ec.events / changes);
  record(workload, impl, "changes whose event did not come in 5 s", "count",
         f->missed);
}

static void figures_free(run_figures *f) {
  g_array_free(f->from_reply, TRUE);
  g_array_free(f->from_sent, TRUE);
  g_array_free(f->write, TRUE);
  for (int k = 0; k < 3; k++)
    g_array_free(f->by_type[k], TRUE);
}

/* The burst of the node workload: BURST sets of @p path, then the event
 * of the last; how many events, requests, and how long from the first set
 * sent to the event of the last value (the time the cache lags behind a
 * burst). */
static void node_burst(const char *workload, const cache_impl *impl, proc *p,
                       const char *path, int64_t *counter) {
  snap a, b;
  snap_take(&a);
  change last = {.type = "UPDATED", .sent_ns = now_ns()};
  last.mzxid = write_burst(path, counter);
  event_count ec = {0};
  int64_t t = await_event(p, &last, &ec);
  sleep_ms(200); /* what the cache still reads after the last event */
  char *line;
  while ((line = proc_try_line(p, 0)) != NULL) {
    char type[16];
    int64_t mzxid, at;
    if (parse_event(line, type, sizeof type, &mzxid, &at))
      ec.events++;
    g_free(line);
  }
  snap_take(&b);
  double requests = (double)(client_packets(&a, &b) - BURST);
  char figure[64];
  snprintf(figure, sizeof figure, "burst of %d sets: events", BURST);
  record(workload, impl->name, figure, "count", ec.events);
  snprintf(figure, sizeof figure, "burst of %d sets: requests (mntr)", BURST);
  record(workload, impl->name, figure, "count", requests);
  record(workload, impl->name, "burst: first set sent -> last value's event",
         "ms", t < 0 ? NAN : (double)(t - last.sent_ns) / 1e6);
}

/* One run: @p impl's cache of a node (@p tree FALSE) or a tree. */
static void cache_run(const cache_impl *impl, gboolean tree, int round) {
  const char *workload = tree ? "tree cache" : "node cache";
  char *path =
      znode("cache/%s-%s-r%d", tree ? "tree" : "node", impl->name, round);
  tree_model t = {0};
  int64_t counter = 0;
  if (tree) {
    tree_create(&t, path, round);
  } else {
    ensure_path(path);
  }
  snap s0, s1;
  double init_ms, nodes;
  snap_take(&s0);
  proc *p = cache_start(impl, path, &init_ms, &nodes);
  snap_take(&s1);
  record(workload, impl->name, "first read: nodes in the copy when ready",
         "count", nodes);
  record(workload, impl->name, "first read: time (cache created -> ready)",
         "ms", init_ms);
  record(workload, impl->name, "first read: requests (mntr, with connecting)",
         "count", (double)client_packets(&s0, &s1));
  run_figures f = {0};
  f.from_reply = g_array_new(FALSE, FALSE, sizeof(double));
  f.from_sent = g_array_new(FALSE, FALSE, sizeof(double));
  f.write = g_array_new(FALSE, FALSE, sizeof(double));
  for (int k = 0; k < 3; k++)
    f.by_type[k] = g_array_new(FALSE, FALSE, sizeof(double));
  snap a = {0}, b; /* a: taken when the warm-up ends */
  double own_a = 0, own_b = 0, renew_a = 0, renew_b = 0;
  int changes = opt.cache_changes;
  for (int i = -CACHE_WARMUP; i < changes; i++) {
    if (i == 0) {
      if (!impl->curator)
        own_stats(p, &own_a, &renew_a);
      snap_take(&a);
      f.ec = (event_count){0};
    }
    change c;
    if (tree)
      tree_change(&t, i + CACHE_WARMUP, &c);
    else
      write_set(path, ++counter, &c);
    int64_t at = await_event(p, &c, &f.ec);
    if (at < 0 && i >= 0)
      f.missed++;
    else if (i >= 0)
      figures_add(&f, &c, at);
    sleep_ms(CACHE_GAP_MS);
  }
  snap_take(&b);
  double requests = (double)(client_packets(&a, &b) - changes);
  figures_record(workload, impl->name, &f, changes, requests, tree);
  if (!impl->curator) {
    own_stats(p, &own_b, &renew_b);
    record(workload, impl->name, "requests per change (own count, no lease)",
           "count", (own_b - own_a - (renew_b - renew_a)) / changes);
    record(workload, impl->name, "  lease renewals per change", "count",
           (renew_b - renew_a) / changes);
  }
  progress("  %s %-12s p50 %.2f ms, p99 %.2f ms after the write's reply; "
           "%.2f requests and %.2f events per change; %d missed",
           workload, impl->name, q_of(f.from_reply, 0.5),
           q_of(f.from_reply, 0.99), requests / changes,
           (double)f.ec.events / changes, f.missed);
  if (!tree)
    node_burst(workload, impl, p, path, &counter);
  proc_send(p, "quit");
  proc_finish(p, STEP_MS);
  figures_free(&f);
  if (tree)
    tree_free(&t);
  g_free(path);
}

/* The state of member @p i ("leader", "follower", ...), for the record. */
static char *member_state(int i) {
  char *text = fetch_mntr(i);
  char *state = NULL;
  const char *s = text ? strstr(text, "zk_server_state\t") : NULL;
  if (s) {
    s += strlen("zk_server_state\t");
    state = g_strndup(s, strcspn(s, "\r\n"));
  }
  g_free(text);
  return state ? state : g_strdup("?");
}

void run_cache(void) {
  writer_connect();
  char *w = member_state(0), *c = member_state(members > 1 ? 1 : 0);
  progress("caches: %d changes per run (after %d warm-up ones), one at a "
           "time, %d ms after the previous event; writer on member 0 (%s), "
           "caches on member %d (%s)",
           opt.cache_changes, CACHE_WARMUP, CACHE_GAP_MS, w, members > 1, c);
  g_free(w);
  g_free(c);
  size_t n = opt.with_curator ? N_CACHE_IMPLS : 1;
  for (int r = 1; r <= opt.rounds; r++) {
    progress("round %d of %d: caches", r, opt.rounds);
    /* Odd rounds zkrecipes first, even rounds last. */
    for (size_t i = 0; i < n; i++)
      cache_run(&node_impls[r % 2 ? i : n - 1 - i], FALSE, r);
    for (size_t i = 0; i < n; i++)
      cache_run(&tree_impls[r % 2 ? i : n - 1 - i], TRUE, r);
  }
  zookeeper_close(writer_zh);
  writer_zh = NULL;
  set_reference("node cache", opt.with_curator ? "CuratorCache" : NULL);
  set_reference("tree cache", opt.with_curator ? "CuratorCache" : NULL);
}
