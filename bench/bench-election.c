/*
 * zkr-bench: election failover and resign.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include "bench.h"

/* ------------------------------------------------------------ election */

typedef struct elector {
  const char *impl;
  proc *p;
  gboolean elected; /* said so while we waited for something else */
  char *node;       /* its node: Curator says it on joining, zkrecipes
                     * when elected */
} elector;

static const char *elected_word(const elector *e) {
  return strcmp(e->impl, "zkrecipes") == 0 ? "elected" : "leader";
}

/* Note what a line of an elector says: elected, its node. */
static void elector_note(elector *e, const char *line) {
  char **w = g_strsplit(line, " ", 0);
  if (g_str_has_prefix(line, elected_word(e))) {
    e->elected = TRUE;
    if (w[0] && w[1] && w[2]) { /* zkrecipes: "elected T NODE" */
      g_free(e->node);
      e->node = g_strdup(w[2]);
    }
  } else if (g_str_has_prefix(line, "joined ") && w[1]) { /* Curator */
    g_free(e->node);
    e->node = g_strdup(w[1]);
  }
  g_strfreev(w);
}

/* Wait for a line starting with @p prefix, noting an election on the way
 * (the events come in any order with the answers). */
static void elector_expect(elector *e, const char *prefix) {
  int64_t deadline = now_ns() + (int64_t)START_MS * 1000000;
  for (;;) {
    int left = (int)((deadline - now_ns()) / 1000000);
    char *line = proc_line(e->p, left > 0 ? left : 1);
    if (g_str_has_prefix(line, "error") || g_str_has_prefix(line, "timeout"))
      fatal("%s: %s", e->p->name, line);
    elector_note(e, line);
    gboolean done = g_str_has_prefix(line, prefix);
    g_free(line);
    if (done)
      return;
  }
}

/* A plain ZooKeeper handle of the bench's own, to see a node's deletion
 * the moment the servers tell (the new leader learns it the same way). */
typedef struct deletion_watch {
  GMutex mu;
  GCond cond;
  int state;
  int64_t deleted_at;
  int synced; /* a sync's answer: 1 done, -1 failed, 0 none yet */
} deletion_watch;

static deletion_watch dwatch;
zhandle_t *watch_zh;

static void quiet_zk_log(const char *message) { (void)message; }

static void dwatch_session(zhandle_t *zh, int type, int state, const char *path,
                           void *ctx) {
  g_mutex_lock(&dwatch.mu);
  if (type == ZOO_SESSION_EVENT)
    dwatch.state = state;
  g_cond_broadcast(&dwatch.cond);
  g_mutex_unlock(&dwatch.mu);
}

static void dwatch_fired(zhandle_t *zh, int type, int state, const char *path,
                         void *ctx) {
  int64_t t = now_ns();
  g_mutex_lock(&dwatch.mu);
  if (type == ZOO_DELETED_EVENT && dwatch.deleted_at == 0)
    dwatch.deleted_at = t;
  g_cond_broadcast(&dwatch.cond);
  g_mutex_unlock(&dwatch.mu);
}

void watch_connect(void) {
  if (watch_zh)
    return;
  watch_zh = zookeeper_init2(hosts, dwatch_session, 30000, NULL, NULL, 0,
                             quiet_zk_log);
  if (watch_zh == NULL)
    fatal("zookeeper_init: %s", strerror(errno));
  int64_t deadline = g_get_monotonic_time() + (int64_t)STEP_MS * 1000;
  g_mutex_lock(&dwatch.mu);
  while (dwatch.state != ZOO_CONNECTED_STATE)
    if (!g_cond_wait_until(&dwatch.cond, &dwatch.mu, deadline))
      fatal("the bench's own ZooKeeper handle could not connect");
  g_mutex_unlock(&dwatch.mu);
}

/* Watch @p node for its deletion (it must exist). */
void watch_deletion(const char *node) {
  g_mutex_lock(&dwatch.mu);
  dwatch.deleted_at = 0;
  g_mutex_unlock(&dwatch.mu);
  struct Stat st;
  int rc = zoo_wexists(watch_zh, node, dwatch_fired, NULL, &st);
  if (rc != ZOK)
    fatal("the leader's node %s: %s", node, zerror(rc));
}

static void synced(int rc, const char *value, const void *data) {
  (void)value;
  (void)data;
  g_mutex_lock(&dwatch.mu);
  dwatch.synced = rc == ZOK ? 1 : -1;
  g_cond_broadcast(&dwatch.cond);
  g_mutex_unlock(&dwatch.mu);
}

/* Whether @p node still exists once the bench's member has caught up
 * with the leader (a sync first).  The bench's watch comes from its own
 * member, which may apply a deletion after the new leader's member did:
 * a watch not yet fired is no proof that the node is still there. */
static int exists_after_sync(const char *node) {
  g_mutex_lock(&dwatch.mu);
  dwatch.synced = 0;
  g_mutex_unlock(&dwatch.mu);
  int rc = zoo_async(watch_zh, node, synced, NULL);
  if (rc != ZOK)
    fatal("sync %s: %s", node, zerror(rc));
  int64_t deadline = g_get_monotonic_time() + (int64_t)STEP_MS * 1000;
  g_mutex_lock(&dwatch.mu);
  while (dwatch.synced == 0)
    if (!g_cond_wait_until(&dwatch.cond, &dwatch.mu, deadline))
      fatal("sync %s: no answer within %d ms", node, STEP_MS);
  int ok = dwatch.synced > 0;
  g_mutex_unlock(&dwatch.mu);
  if (!ok)
    fatal("sync %s failed", node);
  struct Stat st;
  rc = zoo_exists(watch_zh, node, 0, &st);
  if (rc != ZOK && rc != ZNONODE)
    fatal("exists %s: %s", node, zerror(rc));
  return rc == ZOK;
}

static int64_t deletion_seen(void) {
  g_mutex_lock(&dwatch.mu);
  int64_t t = dwatch.deleted_at;
  g_mutex_unlock(&dwatch.mu);
  return t;
}

int64_t deletion_wait(int timeout_ms) {
  int64_t deadline = g_get_monotonic_time() + (int64_t)timeout_ms * 1000;
  g_mutex_lock(&dwatch.mu);
  while (dwatch.deleted_at == 0)
    if (!g_cond_wait_until(&dwatch.cond, &dwatch.mu, deadline))
      fatal("the watched node was not deleted within %d ms", timeout_ms);
  int64_t t = dwatch.deleted_at;
  g_mutex_unlock(&dwatch.mu);
  return t;
}

/* Wait until @p e says it leads (or has said so already). */
static void elector_wait_elected(elector *e) {
  if (!e->elected)
    elector_expect(e, elected_word(e));
  e->elected = FALSE;
}

static elector elector_start(const char *impl, const char *path, int index) {
  char id[32];
  snprintf(id, sizeof id, "%s-%d", impl, index);
  elector e = {impl, NULL, FALSE, NULL};
  if (strcmp(impl, "zkrecipes") == 0) {
    /* A short session, unlike the measuring clients: failover waits for
     * the dead leader's session to expire. */
    char session[64];
    snprintf(session, sizeof session, "ZKR_PEER_SESSION_MS=%d",
             opt.election_session_ms);
    const char *argv[] = {opt.worker, "elect", hosts, path, id, NULL};
    char *const env[] = {session, "ZKR_PEER_TIMEOUT_MS=900000",
                         "ZKR_PEER_LIFETIME_S=3600", NULL};
    e.p = proc_start(id, (char *const *)argv, env);
  } else {
    const char *args[] = {"latch", hosts, path, id, NULL};
    e.p = peer_start(impl, args, opt.election_session_ms);
  }
  /* zkrecipes prints "joined" once its node is listed; Curator once its
   * node is created. */
  elector_expect(&e, "joined");
  return e;
}

static void elector_quit(elector *e) {
  proc_send(e->p, "quit");
  proc_finish(e->p, STEP_MS);
  e->p = NULL;
  g_free(e->node);
  e->node = NULL;
}

/* After the leader was killed: wait until @p next is elected. */
static void failover_wait(elector *next) {
  int64_t deadline = now_ns() + (int64_t)STEP_MS * 1000000;
  while (!next->elected) {
    char *line = proc_try_line(next->p, 1000);
    if (line &&
        (g_str_has_prefix(line, "error") || g_str_has_prefix(line, "timeout")))
      fatal("%s: %s", next->p->name, line);
    if (line)
      elector_note(next, line);
    g_free(line);
    if (now_ns() > deadline)
      fatal("%s: no new leader within %d ms", next->impl, STEP_MS);
  }
  next->elected = FALSE;
}

static void election_run(const char *impl) {
  char *path = znode("election/%s", impl);
  int index = 0;
  progress("election (%s): session timeout %d ms", impl,
           opt.election_session_ms);
  elector leader = elector_start(impl, path, index++);
  elector_wait_elected(&leader);
  for (int rep = 0; rep < opt.election_reps; rep++) {
    elector next = elector_start(impl, path, index++);
    if (next.elected)
      fatal("%s: a second participant was elected while the first led", impl);
    /* The servers expire a session a timeout after its last packet; an
     * idle client pings every third of the timeout.  Kill at a random
     * point between two pings, the same way for every implementation (the
     * leader elected just before, or a follower slow to start, would
     * otherwise decide the phase). */
    sleep_ms(opt.election_session_ms / 3 +
             g_random_int_range(0, opt.election_session_ms / 3 + 1));
    watch_deletion(leader.node);
    int64_t t0 = now_ns();
    proc_kill(leader.p); /* SIGKILL: its session has to expire */
    failover_wait(&next);
    int64_t elected = now_ns(), gone = deletion_seen();
    if (gone == 0 && exists_after_sync(leader.node))
      fatal("%s: elected while the old leader's node still exists", impl);
    if (gone == 0) /* deleted: our member's watch is on its way */
      gone = deletion_wait(STEP_MS);
    double ms = (double)(elected - t0) / 1e6;
    double expiry_ms = (double)(gone - t0) / 1e6;
    proc_free(leader.p);
    record("election", impl, "failover after SIGKILL", "ms", ms);
    record("election", impl, "failover / session timeout", "x",
           ms / opt.election_session_ms);
    record("election", impl, "  SIGKILL -> its node deleted (expiry)", "ms",
           expiry_ms);
    record("election", impl, "  deletion seen -> new leader says so", "ms",
           ms - expiry_ms);
    progress("  %s: SIGKILL -> new leader in %.0f ms (node deleted after "
             "%.0f ms)",
             impl, ms, expiry_ms);
    g_free(leader.node);
    leader = next;
  }
  elector follower = elector_start(impl, path, index++);
  for (int rep = 0; rep < opt.election_reps; rep++) {
    int64_t t0 = now_ns();
    if (strcmp(impl, "zkrecipes") == 0) {
      proc_send(leader.p, "resign");
      elector_wait_elected(&follower);
      double ms = (double)(now_ns() - t0) / 1e6;
      record("election", impl, "resign -> new leader", "ms", ms);
      progress("  %s: resign -> new leader in %.1f ms", impl, ms);
      /* The old leader queues again behind: wait until its node is in. */
      elector_expect(&leader, "rejoined");
    } else {
      /* LeaderLatch has no resign: close() leaves, join() queues again. */
      proc_send(leader.p, "close");
      elector_wait_elected(&follower);
      double ms = (double)(now_ns() - t0) / 1e6;
      record("election", impl, "resign -> new leader", "ms", ms);
      progress("  %s: close -> new leader in %.1f ms", impl, ms);
      elector_expect(&leader, "closed");
      proc_send(leader.p, "join");
      elector_expect(&leader, "joined");
    }
    if (leader.elected)
      fatal("%s: the old leader was elected again at once", impl);
    elector t = leader;
    leader = follower;
    follower = t;
  }
  elector_quit(&leader);
  elector_quit(&follower);
  g_free(path);
}

void run_election(void) {
  watch_connect();
  election_run("zkrecipes");
  if (opt.with_curator)
    election_run("curator");
}
