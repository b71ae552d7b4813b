/*
 * zkr-bench: scale: many waiters on one lock, many locks in one process.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include "bench.h"

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

void scale_waiters(void) {
  int procs = opt.scale_procs;
  long total = (long)procs * opt.scale_sessions * opt.scale_holds;
  char *path = znode("scale/waiters");
  char sessions[16], holds[16];
  snprintf(sessions, sizeof sessions, "%d", opt.scale_sessions);
  snprintf(holds, sizeof holds, "%d", opt.scale_holds);
  progress("scale: %ld waiters on one lock (%d processes x %d sessions x %d "
           "holds)",
           total, procs, opt.scale_sessions, opt.scale_holds);
  proc **w = g_new0(proc *, procs);
  for (int i = 0; i < procs; i++) {
    const char *args[] = {"waiters", hosts, path, sessions, holds, NULL};
    char *name = g_strdup_printf("waiters %d", i);
    w[i] = worker_start(name, args);
    g_free(name);
  }
  for (int i = 0; i < procs; i++)
    g_free(proc_expect(w[i], "ready", START_MS));
  int64_t start = now_ns();
  for (int i = 0; i < procs; i++)
    proc_send(w[i], "go");
  int failures = 0;
  bench_holds *held = bench_holds_new();
  for (int i = 0; i < procs; i++) {
    char *done = proc_expect(w[i], "done", 600000);
    failures += (int)need_field(w[i]->name, done, "failures");
    char *ops = proc_line(w[i], STEP_MS);
    parse_holds(w[i]->name, i, ops, held);
    g_free(ops);
    g_free(done);
  }
  double secs = (double)(now_ns() - start) / 1e9;
  for (int i = 0; i < procs; i++)
    proc_finish(w[i], STEP_MS);
  /* Holds must not overlap, and the fencing tokens must grow with every
   * handoff (the queue order is the creation order). */
  int overlaps, token_disorder;
  bench_holds_check(held, TRUE, &overlaps, &token_disorder);
  bench_holds_free(held);
  char figure[64];
  snprintf(figure, sizeof figure, "%ld waiters: total time", total);
  record("scale", "zkrecipes", figure, "s", secs);
  snprintf(figure, sizeof figure, "%ld waiters: acquisitions/s", total);
  record("scale", "zkrecipes", figure, "ops/s", (double)total / secs);
  snprintf(figure, sizeof figure, "%ld waiters: violations", total);
  record("scale", "zkrecipes", figure, "count", overlaps + token_disorder);
  snprintf(figure, sizeof figure, "%ld waiters: failed acquisitions", total);
  record("scale", "zkrecipes", figure, "count", failures);
  progress("  %ld waiters done in %.1f s: %d overlaps, %d tokens out of "
           "order, %d failures",
           total, secs, overlaps, token_disorder, failures);
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
  scale_locks_run(0);
  scale_locks_settle();
  scale_locks_run(64);
}
