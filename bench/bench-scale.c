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
  zhandle_t *zh = zookeeper_init(hosts, NULL, MEASURE_SESSION_MS, NULL, NULL, 0);
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

/* One process acquires opt.scale_locks locks, at most @p window at a time
 * (0: all at once). */
static void scale_locks_run(int window) {
  char *prefix = znode("scale/locks-w%d", window);
  char count[16], win[16];
  snprintf(count, sizeof count, "%d", opt.scale_locks);
  snprintf(win, sizeof win, "%d", window);
  char how[32];
  if (window)
    snprintf(how, sizeof how, "%d at a time", window);
  else
    snprintf(how, sizeof how, "all at once");
  progress("scale: one process holding %d different locks, acquired %s",
           opt.scale_locks, how);
  const char *args[] = {"locks", hosts, prefix, count, win, NULL};
  proc *p = worker_start("locks", args);
  g_free(proc_expect(p, "ready", START_MS));
  proc_send(p, "go");
  char *done = proc_expect(p, "done", 600000);
  proc_finish(p, 600000);
  char figure[96];
  snprintf(figure, sizeof figure, "%d locks, %s: time to acquire all",
           opt.scale_locks, how);
  record("scale", "zkrecipes", figure, "s", need_field("locks", done, "secs"));
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
  g_free(done);
  g_free(prefix);
}

void scale_locks(void) {
  scale_locks_run(0);
  scale_locks_run(64);
}
