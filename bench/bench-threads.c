/*
 * zkr-bench: scale: many threads on one lock object (zkr-bench-worker
 * threads): the hand-over time with few and with many threads waiting, and
 * their ratio (issue 19: within 1.5x).
 *
 * Rounds.  Each round runs every thread count once, each in a fresh
 * worker process (forward in odd rounds, backward in even ones, as the
 * throughput workloads do), and the ratio of the round's p50s is one
 * value: the figure is the median of the rounds' ratios, so that a slow
 * moment of the machine (fsync makes writes swing 2x here) weighs on one
 * round, not on the result.
 *
 * The nudger.  Debian's ZooKeeper 3.8.0 server can hold a session's
 * requests until some other request or commit reaches it (ZOOKEEPER-4537,
 * fixed in 3.8.1: its CommitProcessor reads "is a commit waiting" outside
 * its monitor and can miss the wake-up).  One process whose every request
 * waits for the one before, as these threads' hand-overs do, then stops
 * for up to a lease renewal period (9 s with the bench's 30 s sessions):
 * seen here as measured periods with no hand-over at all (3 of 18 runs of
 * 4 s in one sitting, none of 18 in another).  So while the workload runs, a nudger reads "/" on every member
 * every 200 ms (an exists: no proposal, 15 requests a second in all),
 * which bounds such a stall to 200 ms; --no-nudge leaves it out, and the
 * longest hand-over of each run is printed either way.  (Every 20 ms, it
 * seemed to slow the 8 threads' hand-overs: 1.84 and 2.28 ms against 1.38
 * and 1.48 ms without it in the same sitting.)
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include "bench.h"

#define NUDGE_MS 200

/* ----------------------------------------------------------- the nudger */

typedef struct nudger {
  zhandle_t *zh[MAX_MEMBERS];
  GThread *thread;
  gint stop;
  long sent;
} nudger;

static void nudge_done(int rc, const struct Stat *stat, const void *data) {
  (void)rc, (void)stat, (void)data;
}

static gpointer nudger_main(gpointer arg) {
  nudger *n = arg;
  while (!g_atomic_int_get(&n->stop)) {
    for (int i = 0; i < members; i++)
      if (n->zh[i] && zoo_state(n->zh[i]) == ZOO_CONNECTED_STATE &&
          zoo_aexists(n->zh[i], "/", 0, nudge_done, NULL) == ZOK)
        n->sent++;
    sleep_ms(NUDGE_MS);
  }
  return NULL;
}

/* A handle on each member alone (its own address), nudged from a thread. */
static nudger *nudger_start(void) {
  nudger *n = g_new0(nudger, 1);
  for (int i = 0; i < members; i++)
    n->zh[i] =
        zookeeper_init(member_addr[i], NULL, MEASURE_SESSION_MS, NULL, NULL, 0);
  n->thread = g_thread_new("nudger", nudger_main, n);
  return n;
}

/* Returns the reads it sent. */
static long nudger_stop(nudger *n) {
  g_atomic_int_set(&n->stop, 1);
  g_thread_join(n->thread);
  for (int i = 0; i < members; i++)
    if (n->zh[i])
      zookeeper_close(n->zh[i]);
  long sent = n->sent;
  g_free(n);
  return sent;
}

/* ------------------------------------------------------------- the runs */

static void record_threads(int nthreads, const char *what, const char *unit,
                           double v) {
  char figure[96];
  snprintf(figure, sizeof figure, "%d threads, one lock object: %s", nthreads,
           what);
  record("scale", "zkrecipes", figure, unit, v);
}

/* One run of @p nthreads threads in round @p round; returns the hand-over
 * p50 in ms (0: no hand-over in the measured period). */
static double scale_threads_run(int nthreads, int round) {
  char *path = znode("scale/threads-%d-r%d", nthreads, round);
  char n[16], secs[16];
  snprintf(n, sizeof n, "%d", nthreads);
  snprintf(secs, sizeof secs, "%d", opt.seconds);
  progress("scale: round %d: %d threads on one lock object, %d s", round,
           nthreads, opt.seconds);
  const char *args[] = {"threads", hosts, path, n, secs, NULL};
  proc *p = worker_start("threads", args);
  g_free(proc_expect(p, "ready", START_MS));
  nudger *nudge = opt.scale_nudge ? nudger_start() : NULL;
  proc_send(p, "go");
  char *done = proc_expect(p, "done", 600000);
  long nudges = nudge ? nudger_stop(nudge) : 0;
  proc_finish(p, STEP_MS);
  double p50 = need_field("threads", done, "handover_p50_us") / 1000.0;
  record_threads(nthreads, "hand-over p50", "ms", p50);
  record_threads(nthreads, "hand-over p99", "ms",
                 need_field("threads", done, "handover_p99_us") / 1000.0);
  record_threads(nthreads, "longest hand-over", "ms",
                 need_field("threads", done, "handover_max_us") / 1000.0);
  record_threads(nthreads, "acquisitions/s", "ops/s",
                 need_field("threads", done, "ops_per_sec"));
  record_threads(nthreads, "violations", "count",
                 need_field("threads", done, "violations"));
  record_threads(nthreads, "failed acquisitions", "count",
                 need_field("threads", done, "failures"));
  progress("  %s (%ld nudges)", done, nudges);
  g_free(done);
  g_free(path);
  return p50;
}

void scale_threads(void) {
  enum { COUNTS = G_N_ELEMENTS(opt.scale_threads) };
  char figure[96];
  snprintf(figure, sizeof figure,
           "hand-over p50, %d threads / %d threads on one lock object",
           opt.scale_threads[COUNTS - 1], opt.scale_threads[0]);
  for (int round = 1; round <= opt.scale_rounds; round++) {
    double p50[COUNTS] = {0};
    for (size_t i = 0; i < COUNTS; i++) {
      size_t k = round_order(round, i, COUNTS);
      p50[k] = scale_threads_run(opt.scale_threads[k], round);
    }
    if (p50[0] > 0 && p50[COUNTS - 1] > 0)
      record("scale", "zkrecipes", figure, "x", p50[COUNTS - 1] / p50[0]);
    else /* the table shows one round fewer */
      progress("  round %d: no hand-over measured in a run, no ratio", round);
  }
}
