/*
 * zkr-bench: scale: many waiters on one lock, many locks in one process.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include "bench.h"

/* --------------------------------------------------------------- scale */

typedef struct hold_time {
  int64_t h, r, token;
} hold_time;

static int compare_hold_time(const void *x, const void *y) {
  const hold_time *a = x, *b = y;
  return a->h < b->h ? -1 : a->h > b->h;
}

void scale_waiters(void) {
  int procs = opt.scale_procs;
  long total = (long)procs * opt.scale_sessions * opt.scale_holds;
  char *path = znode("scale/waiters");
  char *marker = marker_file("scale");
  char sessions[16], holds[16];
  snprintf(sessions, sizeof sessions, "%d", opt.scale_sessions);
  snprintf(holds, sizeof holds, "%d", opt.scale_holds);
  progress("scale: %ld waiters on one lock (%d processes x %d sessions x %d "
           "holds)",
           total, procs, opt.scale_sessions, opt.scale_holds);
  proc **w = g_new0(proc *, procs);
  for (int i = 0; i < procs; i++) {
    const char *args[] = {"waiters", hosts,  path, sessions,
                          holds,     marker, NULL};
    char *name = g_strdup_printf("waiters %d", i);
    w[i] = worker_start(name, args);
    g_free(name);
  }
  for (int i = 0; i < procs; i++)
    g_free(proc_expect(w[i], "ready", START_MS));
  int64_t start = now_ns();
  for (int i = 0; i < procs; i++)
    proc_send(w[i], "go");
  int violations = 0, failures = 0;
  GArray *times = g_array_new(FALSE, FALSE, sizeof(hold_time));
  for (int i = 0; i < procs; i++) {
    char *done = proc_expect(w[i], "done", 600000);
    violations += (int)need_field(w[i]->name, done, "violations");
    failures += (int)need_field(w[i]->name, done, "failures");
    char *ops = proc_line(w[i], STEP_MS);
    for (const char *p = ops + 3; *p == ' ';) {
      hold_time t;
      int used = 0;
      if (sscanf(p, " %" SCNd64 ",%" SCNd64 ",%" SCNd64 "%n", &t.h, &t.r,
                 &t.token, &used) != 3)
        fatal("%s: bad ops line", w[i]->name);
      g_array_append_val(times, t);
      p += used;
    }
    g_free(ops);
    g_free(done);
  }
  double secs = (double)(now_ns() - start) / 1e9;
  for (int i = 0; i < procs; i++)
    proc_finish(w[i], STEP_MS);
  /* Holds must not overlap, and the fencing tokens must grow with every
   * handoff (the queue order is the creation order). */
  hold_time *t = (hold_time *)(void *)times->data;
  qsort(t, times->len, sizeof *t, compare_hold_time);
  int overlaps = 0, token_disorder = 0;
  for (guint i = 0; i + 1 < times->len; i++) {
    overlaps += t[i + 1].h < t[i].r;
    token_disorder += t[i + 1].token <= t[i].token;
  }
  char figure[64];
  snprintf(figure, sizeof figure, "%ld waiters: total time", total);
  record("scale", "zkrecipes", figure, "s", secs);
  snprintf(figure, sizeof figure, "%ld waiters: acquisitions/s", total);
  record("scale", "zkrecipes", figure, "ops/s", (double)total / secs);
  snprintf(figure, sizeof figure, "%ld waiters: violations", total);
  record("scale", "zkrecipes", figure, "count",
         violations + overlaps + token_disorder);
  snprintf(figure, sizeof figure, "%ld waiters: failed acquisitions", total);
  record("scale", "zkrecipes", figure, "count", failures);
  progress("  %ld waiters done in %.1f s: %d marker violations, %d overlaps, "
           "%d tokens out of order, %d failures",
           total, secs, violations, overlaps, token_disorder, failures);
  g_array_free(times, TRUE);
  unlink(marker);
  g_free(marker);
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
