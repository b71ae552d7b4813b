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

void scale_locks(void) {
  /* The pipelined rate before and after (fsync makes it drift): the
   * locks are measured against the mean of the two. */
  double proposals_before, proposals_after, rate0, rate64, proposals0,
      proposals64;
  double before = scale_pipe_rate(0, &proposals_before);
  scale_locks_run(0, &rate0, &proposals0);
  scale_locks_run(64, &rate64, &proposals64);
  double after = scale_pipe_rate(1, &proposals_after);
  double pipe_rate = (before + after) / 2;
  progress("  pipelined creates/s before and after the locks: %.1f, %.1f",
           before, after);
  record_goal(0, rate0, proposals0, pipe_rate);
  record_goal(64, rate64, proposals64, pipe_rate);
}
