/*
 * zkr-bench: scale: many waiters on one lock, many locks in one process.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "bench.h"

#include "zkrecipes.h"

/* --------------------------------------------------------------- scale */

/* Worker @p who's "ops H,R,TOKEN ..." line into @p holds (R 0: that
 * acquisition failed, counted apart: no hold). */
static void parse_holds(const char *name, int who, const char *ops,
                        bench_holds *holds) {
  for (const char *p = ops + 3; *p == ' ';) {
    int64_t h, r, token;
    int used = 0;
    if (sscanf(p, " %" SCNd64 ",%" SCNd64 ",%" SCNd64 "%n", &h, &r, &token,
               &used) != 3)
      fatal("%s: bad ops line", name);
    if (r != 0)
      bench_holds_add(holds, who, token, h, r);
    p += used;
  }
}

/* Waiters joining the queue a second, over all the processes, unless
 * --scale-waiters says (opt.scale_join_rate).  A joining
 * contender lists the whole queue once (ZooKeeper cannot list less): the
 * n-th lists n names (55 bytes each), so 10,000 joining at once send about
 * 3 GB of listings, behind which the sessions' pings (the blocker's too)
 * waited past their leases (every acquisition failed, LOST).  Paced, the
 * same listings are spread over the time to queue. */

/* The blocker: a session of this process holding the lock at @p path, so
 * that every waiter queues before the first one is admitted. */
typedef struct blocker {
  zkrc_session *s;
  zkrc_lock *lk;
} blocker;

static void blocker_hold(blocker *b, const char *path) {
  zkrc_session_options so;
  zkrc_session_options_init(&so);
  so.session_timeout_ms = MEASURE_SESSION_MS;
  int rc = zkrc_session_connect(&b->s, hosts, &so);
  if (rc == ZKRC_OK)
    rc = zkrc_lock_new(&b->lk, b->s, path, NULL);
  if (rc == ZKRC_OK)
    rc = zkrc_lock_acquire(b->lk, STEP_MS);
  if (rc != ZKRC_OK)
    fatal("scale: the blocker: %s", zkrc_strerror(rc));
}

static void blocker_free(blocker *b) {
  zkrc_lock_free(b->lk);
  zkrc_session_close(b->s);
}

/* Wait until @p want contenders are queued on @p path: the directory's
 * number of children, from a handle of its own (an exists is one small
 * answer; zkrc_lock_list() would read every contender's data, 10,000
 * reads a look, behind which the blocker's lease renewals waited until
 * its lease ran out).  Backs off from 100 ms to 2 s. */
static void wait_queued(const char *path, long want) {
  int64_t deadline = now_ns() + (int64_t)START_MS * 1000000 +
                     2 * want * (int64_t)1000000000 / opt.scale_join_rate;
  zhandle_t *zh =
      zookeeper_init(hosts, NULL, MEASURE_SESSION_MS, NULL, NULL, 0);
  if (zh == NULL)
    fatal("scale: zookeeper_init: %s", strerror(errno));
  int pause_ms = 100;
  for (;;) {
    struct Stat st;
    int rc = zoo_exists(zh, path, 0, &st);
    if (rc == ZOK && st.numChildren >= want)
      break;
    if (now_ns() > deadline)
      fatal("scale: only %d of %ld contenders queued (%s)",
            rc == ZOK ? st.numChildren : -1, want, zerror(rc));
    sleep_ms(pause_ms);
    pause_ms = pause_ms < 1000 ? 2 * pause_ms : 2000;
  }
  zookeeper_close(zh);
}

/* opt.scale_procs processes x opt.scale_sessions sessions x
 * opt.scale_holds non-blocking acquisitions, all queued behind a blocker
 * before it lets go: the figure is that many waiters on one lock at once. */
void scale_waiters(void) {
  int procs = opt.scale_procs;
  long total = (long)procs * opt.scale_sessions * opt.scale_holds;
  char *path = znode("scale/waiters");
  char sessions[16], holds[16], rate[16];
  snprintf(sessions, sizeof sessions, "%d", opt.scale_sessions);
  snprintf(holds, sizeof holds, "%d", opt.scale_holds);
  snprintf(rate, sizeof rate, "%d",
           opt.scale_join_rate / procs > 0 ? opt.scale_join_rate / procs : 1);
  progress("scale: %ld waiters on one lock (%d processes x %d sessions x %d "
           "holds), joining %d a second, all queued before the first is "
           "admitted",
           total, procs, opt.scale_sessions, opt.scale_holds,
           opt.scale_join_rate);
  blocker b;
  blocker_hold(&b, path);
  proc **w = g_new0(proc *, procs);
  for (int i = 0; i < procs; i++) {
    const char *args[] = {"waiters", hosts, path, sessions, holds, rate, NULL};
    char *name = g_strdup_printf("waiters %d", i);
    w[i] = worker_start(name, args);
    g_free(name);
  }
  for (int i = 0; i < procs; i++)
    g_free(proc_expect(w[i], "ready", START_MS));
  int64_t queue_start = now_ns();
  for (int i = 0; i < procs; i++)
    proc_send(w[i], "go");
  wait_queued(path, total + 1);
  double queue_secs = (double)(now_ns() - queue_start) / 1e9;
  snap before, after;
  snap_take(&before);
  int64_t start = now_ns();
  if (zkrc_lock_release(b.lk) != ZKRC_OK)
    fatal("scale: the blocker's release failed");
  int failures = 0;
  bench_holds *held = bench_holds_new();
  for (int i = 0; i < procs; i++) {
    char *done = proc_expect(w[i], "done", 900000);
    failures += (int)need_field(w[i]->name, done, "failures");
    char *ops = proc_line(w[i], STEP_MS);
    parse_holds(w[i]->name, i, ops, held);
    g_free(ops);
    g_free(done);
  }
  double secs = (double)(now_ns() - start) / 1e9;
  snap_take(&after);
  for (int i = 0; i < procs; i++)
    proc_finish(w[i], STEP_MS);
  blocker_free(&b);
  /* Holds must not overlap, and the fencing tokens must grow with every
   * handoff (the queue order is the creation order). */
  int overlaps, token_disorder;
  bench_holds_check(held, TRUE, &overlaps, &token_disorder);
  bench_holds_free(held);
  /* total hand-overs: the blocker's to the first, each waiter's but the
   * last's to the next */
  double notes = (double)(after.notifications - before.notifications) / total;
  char figure[64];
  snprintf(figure, sizeof figure, "%ld waiters: time to queue", total);
  record("scale", "zkrecipes", figure, "s", queue_secs);
  snprintf(figure, sizeof figure, "%ld waiters: total time", total);
  record("scale", "zkrecipes", figure, "s", secs);
  snprintf(figure, sizeof figure, "%ld waiters: acquisitions/s", total);
  record("scale", "zkrecipes", figure, "ops/s", (double)total / secs);
  snprintf(figure, sizeof figure, "%ld waiters: notifications per release",
           total);
  record("scale", "zkrecipes", figure, "count", notes);
  snprintf(figure, sizeof figure, "%ld waiters: violations", total);
  record("scale", "zkrecipes", figure, "count", overlaps + token_disorder);
  snprintf(figure, sizeof figure, "%ld waiters: failed acquisitions", total);
  record("scale", "zkrecipes", figure, "count", failures);
  progress("  %ld waiters queued in %.1f s, done in %.1f s: %.3f "
           "notifications per release, %d overlaps, %d tokens out of "
           "order, %d failures",
           total, queue_secs, secs, notes, overlaps, token_disorder, failures);
  g_free(path);
  g_free(w);
}

/* The ensemble's pipelined write rate from one session (500 creates in
 * flight, the limit workload's), measured now; @p proposals receives the
 * proposals per create counted from the zxid (about 1: the creates still
 * in flight at the end of the window are counted in the zxid only). */
static double scale_pipe_rate(int turn, double *proposals) {
  char *path = znode("scale/pipelined-%d", turn);
  char secs[16];
  snprintf(secs, sizeof secs, "%d", opt.seconds < 3 ? opt.seconds : 3);
  const char *args[] = {"pipe", hosts, path, secs, "500", NULL};
  proc *p = worker_start("scale pipe", args);
  g_free(proc_expect(p, "ready", START_MS));
  int64_t zxid_before = latest_zxid();
  proc_send(p, "go");
  char *done = proc_expect(p, "done", STEP_MS + opt.seconds * 1000);
  int64_t zxid_after = latest_zxid();
  proc_finish(p, STEP_MS);
  double rate = need_field("scale pipe", done, "ops_per_sec");
  *proposals = proposals_between(zxid_before, zxid_after) /
               need_field("scale pipe", done, "ops");
  record("scale", "zookeeper", "pipelined creates/s (500 in flight)", "ops/s",
         rate);
  record("scale", "zookeeper", "pipelined creates: proposals per create",
         "count", *proposals);
  progress("  pipelined creates %.1f ops/s, %.2f proposals each", rate,
           *proposals);
  g_free(done);
  g_free(path);
  return rate;
}

/* "N locks, all at once" or "N locks, 64 at a time": @p how. */
static void locks_how(int window, char *how, size_t size) {
  if (window)
    snprintf(how, size, "%d at a time", window);
  else
    snprintf(how, size, "all at once");
}

/* One process acquires opt.scale_locks fresh locks (each in a directory of
 * its own, under one parent), at most @p window at a time (0: all at once):
 * @p rate receives the acquisitions/s, @p proposals the proposals per lock
 * (from the zxid). */
static void scale_locks_run(int window, double *rate, double *proposals) {
  char *prefix = znode("scale/locks-w%d", window);
  char count[16], win[16];
  snprintf(count, sizeof count, "%d", opt.scale_locks);
  snprintf(win, sizeof win, "%d", window);
  char how[32];
  locks_how(window, how, sizeof how);
  progress("scale: one process holding %d different locks, acquired %s",
           opt.scale_locks, how);
  const char *args[] = {"locks", hosts, prefix, count, win, NULL};
  proc *p = worker_start("locks", args);
  g_free(proc_expect(p, "ready", START_MS));
  int64_t zxid_before = latest_zxid();
  proc_send(p, "go");
  char *done = proc_expect(p, "done", 600000);
  /* Read before the worker releases its locks (it waits for our line). */
  int64_t zxid_after = latest_zxid();
  proc_send(p, "release");
  proc_finish(p, 600000);
  double secs = need_field("locks", done, "secs");
  *proposals =
      proposals_between(zxid_before, zxid_after) / (double)opt.scale_locks;
  *rate = (double)opt.scale_locks / secs;
  char figure[96];
  snprintf(figure, sizeof figure, "%d locks, %s: time to acquire all",
           opt.scale_locks, how);
  record("scale", "zkrecipes", figure, "s", secs);
  snprintf(figure, sizeof figure, "%d locks, %s: acquisitions/s",
           opt.scale_locks, how);
  record("scale", "zkrecipes", figure, "ops/s", *rate);
  snprintf(figure, sizeof figure, "%d locks, %s: proposals per fresh lock",
           opt.scale_locks, how);
  record("scale", "zkrecipes", figure, "count", *proposals);
  snprintf(figure, sizeof figure, "%d locks, %s: RSS per held lock",
           opt.scale_locks, how);
  record("scale", "zkrecipes", figure, "bytes",
         need_field("locks", done, "bytes_per_lock"));
  snprintf(figure, sizeof figure, "%d locks, %s: same after malloc_trim",
           opt.scale_locks, how);
  record("scale", "zkrecipes", figure, "bytes",
         need_field("locks", done, "trimmed_bytes_per_lock"));
  snprintf(figure, sizeof figure, "%d locks, %s: failed acquisitions",
           opt.scale_locks, how);
  record("scale", "zkrecipes", figure, "count",
         need_field("locks", done, "failures"));
  progress("  %s", done);
  progress("  %.1f locks/s, %.2f proposals per fresh lock", *rate, *proposals);
  g_free(done);
  g_free(prefix);
}

/* The goal: fresh-lock acquisitions/s >= 0.8 x the ensemble's pipelined
 * write rate / the proposals a fresh lock needs, both from this run. */
static void record_goal(int window, double rate, double proposals,
                        double pipe_rate) {
  char how[32], figure[160];
  locks_how(window, how, sizeof how);
  double ratio = rate / (pipe_rate / proposals);
  snprintf(figure, sizeof figure,
           "%d locks, %s: acquisitions/s / (pipelined creates/s / proposals "
           "per lock) (goal >= 0.8)",
           opt.scale_locks, how);
  record("scale", "zkrecipes", figure, "ratio", ratio);
  progress("  %s: %.2f x the pipelined rate per proposal (goal >= 0.8)", how,
           ratio);
}

/* Wait (at most 5 minutes) until every member has dropped the previous
 * run's ephemeral nodes: its releases and its session's close (100,000
 * deletes) keep the servers busy for a while, and a session started
 * meanwhile waits behind them, long enough for its lease to run out (it
 * did: the second run's acquisitions failed). */
static void scale_locks_settle(void) {
  int64_t deadline = now_ns() + (int64_t)300 * 1000000000;
  for (;;) {
    int64_t most = 0;
    for (int i = 0; i < members; i++) {
      char *text = fetch_mntr(i);
      int64_t v = -1;
      if (text == NULL || !zkrc_mntr_value(text, "zk_ephemerals_count", &v))
        v = INT64_MAX;
      g_free(text);
      most = MAX(most, v);
    }
    if (most < 100)
      return;
    if (now_ns() > deadline) { /* measure anyway: its failures are counted */
      progress("  the servers did not settle in 5 minutes (%s)",
               most == INT64_MAX ? "a member gave no mntr"
                                 : "ephemeral nodes left");
      return;
    }
    sleep_ms(500);
  }
}

void scale_locks(void) {
  /* The pipelined rate before and after (fsync makes it drift): the
   * locks are measured against the mean of the two. */
  double proposals_before, proposals_after, rate0, rate64, proposals0,
      proposals64;
  double before = scale_pipe_rate(0, &proposals_before);
  scale_locks_run(0, &rate0, &proposals0);
  scale_locks_settle();
  scale_locks_run(64, &rate64, &proposals64);
  double after = scale_pipe_rate(1, &proposals_after);
  double pipe_rate = (before + after) / 2;
  progress("  pipelined creates/s before and after the locks: %.1f, %.1f",
           before, after);
  record_goal(0, rate0, proposals0, pipe_rate);
  record_goal(64, rate64, proposals64, pipe_rate);
}
