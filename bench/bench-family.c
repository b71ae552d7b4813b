/*
 * zkr-bench: the recipe family against Curator (issue 15): the read-write
 * lock with readers and a writer, and the semaphore with more clients than
 * leases.  Both implementations run the same workload the same way: one
 * process (zkr-bench-worker's rwlock and semaphore modes, CuratorPeer's
 * bench commands of the same names) with one thread and one session per
 * client, the same clients, hold time and session timeout; each warms up
 * (one cycle per client) before the counters are read, then all start
 * together.  Rounds interleave the two (forward, backward).
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include "bench.h"

/* The workloads: the figures. */
#define RW_READERS 8 /* plus one writer */
#define SEM_CLIENTS 8
#define SEM_LEASES 2
#define HOLD_MS 1 /* the writer's and each lease holder's hold */

static const char *const family_impls[] = {"zkrecipes", "curator"};

/* The warm-up round measures nothing. */
static gboolean discarding;

static void family_record(const char *workload, const char *impl,
                          const char *figure, const char *unit, double v) {
  if (!discarding)
    record(workload, impl, figure, unit, v);
}

/* Run one measurement of @p impl: "rwlock" or "semaphore" with its
 * arguments @p args (after the path); the counters are read around the
 * measured part (after the warm-up, before the sessions close).  Returns
 * the "done" line. */
static char *family_measure(const char *impl, const char *kind,
                            const char *path, const char *const *args,
                            proc *curator, snap *a, snap *b) {
  char secs[16];
  snprintf(secs, sizeof secs, "%d", opt.seconds);
  if (strcmp(impl, "zkrecipes") == 0) {
    const char *argv[8] = {kind, hosts, path, secs};
    for (int i = 0; args[i]; i++)
      argv[4 + i] = args[i];
    char *name = g_strdup_printf("zkrecipes %s", kind);
    proc *w = worker_start(name, argv);
    g_free(name);
    g_free(proc_expect(w, "ready", START_MS));
    snap_take(a);
    proc_send(w, "go");
    char *done = proc_expect(w, "done", STEP_MS + opt.seconds * 1000);
    snap_take(b);
    proc_finish(w, STEP_MS); /* its sessions close now */
    return done;
  }
  char *rest = g_strjoinv(" ", (char **)args);
  char *cmd = g_strdup_printf("%s %s %s %s", kind, path, secs, rest);
  proc_send(curator, cmd);
  g_free(cmd);
  g_free(rest);
  g_free(proc_expect(curator, "ready", START_MS));
  snap_take(a);
  proc_send(curator, "go");
  char *done = proc_expect(curator, "done", STEP_MS + opt.seconds * 1000);
  snap_take(b);
  return done;
}

static void rwlock_run(const char *impl, int round, proc *curator) {
  char *path = znode("family/rwlock-%s-r%d", impl, round);
  char readers[16], hold[16];
  snprintf(readers, sizeof readers, "%d", RW_READERS);
  snprintf(hold, sizeof hold, "%d", HOLD_MS);
  const char *args[] = {readers, hold, NULL};
  snap a, b;
  char *done = family_measure(impl, "rwlock", path, args, curator, &a, &b);
  double secs = need_field(impl, done, "secs");
  double reads = need_field(impl, done, "reader_ops");
  double writes = need_field(impl, done, "writer_ops");
  double violations = need_field(impl, done, "violations");
  double w50 = need_field(impl, done, "writer_wait_p50_us") / 1000;
  double w99 = need_field(impl, done, "writer_wait_p99_us") / 1000;
  family_record("rwlock", impl, "reader acquisitions/s", "ops/s", reads / secs);
  family_record("rwlock", impl, "reader wait p50", "ms",
                need_field(impl, done, "reader_wait_p50_us") / 1000);
  family_record("rwlock", impl, "writer acquisitions/s", "ops/s",
                writes / secs);
  family_record("rwlock", impl, "writer wait p50", "ms", w50);
  family_record("rwlock", impl, "writer wait p99", "ms", w99);
  family_record("rwlock", impl, "requests per acquisition (mntr)", "count",
                (double)client_packets(&a, &b) / (reads + writes));
  family_record("rwlock", impl, "notifications per acquisition (mntr)", "count",
                (double)(b.notifications - a.notifications) / (reads + writes));
  family_record("rwlock", impl, "  of which children watches (mntr)", "count",
                (double)(b.child_notifications - a.child_notifications) /
                    (reads + writes));
  family_record("rwlock", impl, "violations (in-process check)", "count",
                violations);
  progress("  rwlock    %-9s %8.1f reader acquisitions/s, %.1f writes/s "
           "(writer wait p50 %.1f ms, p99 %.1f ms; %.0f violations)",
           impl, reads / secs, writes / secs, w50, w99, violations);
  g_free(done);
  g_free(path);
}

static void semaphore_run(const char *impl, int round, proc *curator) {
  char *path = znode("family/semaphore-%s-r%d", impl, round);
  char clients[16], leases[16], hold[16];
  snprintf(clients, sizeof clients, "%d", SEM_CLIENTS);
  snprintf(leases, sizeof leases, "%d", SEM_LEASES);
  snprintf(hold, sizeof hold, "%d", HOLD_MS);
  const char *args[] = {clients, leases, hold, NULL};
  snap a, b;
  char *done = family_measure(impl, "semaphore", path, args, curator, &a, &b);
  double secs = need_field(impl, done, "secs");
  double ops = need_field(impl, done, "ops");
  double violations = need_field(impl, done, "violations");
  double requests = (double)client_packets(&a, &b) / ops;
  double notes = (double)(b.notifications - a.notifications) / ops;
  family_record("semaphore", impl, "acquisitions/s", "ops/s", ops / secs);
  family_record("semaphore", impl, "wait p50", "ms",
                need_field(impl, done, "wait_p50_us") / 1000);
  family_record("semaphore", impl, "wait p99", "ms",
                need_field(impl, done, "wait_p99_us") / 1000);
  family_record("semaphore", impl, "requests per acquisition (mntr)", "count",
                requests);
  family_record("semaphore", impl, "notifications per release (mntr)", "count",
                notes);
  family_record("semaphore", impl, "  of which children watches (mntr)",
                "count",
                (double)(b.child_notifications - a.child_notifications) / ops);
  family_record("semaphore", impl, "violations (in-process check)", "count",
                violations);
  progress("  semaphore %-9s %8.1f acquisitions/s (%.2f requests and %.2f "
           "notifications each; %.0f violations)",
           impl, ops / secs, requests, notes, violations);
  g_free(done);
  g_free(path);
}

/* Round @p round: zkrecipes first in odd rounds, Curator first in even
 * ones (round 0, the warm-up, like odd). */
static void family_round(int round, proc *curator) {
  size_t n = opt.with_curator ? 2 : 1;
  for (size_t i = 0; i < n; i++) {
    size_t k = round % 2 == 0 && round > 0 ? n - 1 - i : i;
    rwlock_run(family_impls[k], round, curator);
  }
  for (size_t i = 0; i < n; i++) {
    size_t k = round % 2 == 0 && round > 0 ? n - 1 - i : i;
    semaphore_run(family_impls[k], round, curator);
  }
}

void run_family(void) {
  proc *curator = NULL;
  if (opt.with_curator) {
    const char *args[] = {"bench", hosts, NULL};
    curator = peer_start("curator", args, MEASURE_SESSION_MS);
    g_free(proc_expect(curator, "ready", START_MS));
  }
  progress("family: read-write lock (%d readers, 1 writer holding %d ms), "
           "semaphore (N=%d, %d clients holding %d ms); warm-up round "
           "(discarded), 2 s each",
           RW_READERS, HOLD_MS, SEM_LEASES, SEM_CLIENTS, HOLD_MS);
  int seconds = opt.seconds;
  opt.seconds = 2;
  discarding = TRUE;
  family_round(0, curator);
  discarding = FALSE;
  opt.seconds = seconds;
  for (int r = 1; r <= opt.rounds; r++) {
    progress("round %d of %d: family, %d s each", r, opt.rounds, opt.seconds);
    family_round(r, curator);
  }
  if (curator) {
    proc_send(curator, "quit");
    proc_finish(curator, STEP_MS);
  }
  set_reference("rwlock", opt.with_curator ? "curator" : NULL);
  set_reference("semaphore", opt.with_curator ? "curator" : NULL);
}
