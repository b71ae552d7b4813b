/*
 * zkr-bench: scale: many threads on one lock object (zkr-bench-worker
 * threads): the hand-over time with few and with many threads waiting, and
 * their ratio (issue 19: within 1.5x).
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include "bench.h"

/* One run of @p nthreads threads; returns the hand-over p50 in ms. */
static double scale_threads_run(int nthreads) {
  char *path = znode("scale/threads-%d", nthreads);
  char n[16], secs[16];
  snprintf(n, sizeof n, "%d", nthreads);
  snprintf(secs, sizeof secs, "%d", opt.seconds);
  progress("scale: %d threads on one lock object, %d s", nthreads, opt.seconds);
  const char *args[] = {"threads", hosts, path, n, secs, NULL};
  proc *p = worker_start("threads", args);
  g_free(proc_expect(p, "ready", START_MS));
  proc_send(p, "go");
  char *done = proc_expect(p, "done", 600000);
  proc_finish(p, STEP_MS);
  double p50 = need_field("threads", done, "handover_p50_us") / 1000.0;
  char figure[96];
  snprintf(figure, sizeof figure, "%d threads, one lock object: hand-over p50",
           nthreads);
  record("scale", "zkrecipes", figure, "ms", p50);
  snprintf(figure, sizeof figure, "%d threads, one lock object: hand-over p99",
           nthreads);
  record("scale", "zkrecipes", figure, "ms",
         need_field("threads", done, "handover_p99_us") / 1000.0);
  snprintf(figure, sizeof figure, "%d threads, one lock object: acquisitions/s",
           nthreads);
  record("scale", "zkrecipes", figure, "ops/s",
         need_field("threads", done, "ops_per_sec"));
  snprintf(figure, sizeof figure, "%d threads, one lock object: violations",
           nthreads);
  record("scale", "zkrecipes", figure, "count",
         need_field("threads", done, "violations"));
  snprintf(figure, sizeof figure,
           "%d threads, one lock object: failed acquisitions", nthreads);
  record("scale", "zkrecipes", figure, "count",
         need_field("threads", done, "failures"));
  progress("  %s", done);
  g_free(done);
  g_free(path);
  return p50;
}

void scale_threads(void) {
  double p50[G_N_ELEMENTS(opt.scale_threads)] = {0};
  for (size_t i = 0; i < G_N_ELEMENTS(opt.scale_threads); i++)
    p50[i] = scale_threads_run(opt.scale_threads[i]);
  size_t last = G_N_ELEMENTS(opt.scale_threads) - 1;
  char figure[96];
  snprintf(figure, sizeof figure,
           "hand-over p50, %d threads / %d threads on one lock object",
           opt.scale_threads[last], opt.scale_threads[0]);
  record("scale", "zkrecipes", figure, "x",
         p50[0] > 0 ? p50[last] / p50[0] : 0);
}
