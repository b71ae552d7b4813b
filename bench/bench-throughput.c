/*
 * zkr-bench: uncontended and contended throughput (and the limit).
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include "bench.h"

/* ------------------------------------------- uncontended (and the limit) */

const char *const impl_names[N_IMPLS] = {"limit", "zkrecipes", "curator",
                                         "kazoo", "naive"};

gboolean impl_enabled(const char *impl) {
  if (strcmp(impl, "curator") == 0)
    return opt.with_curator;
  if (strcmp(impl, "kazoo") == 0)
    return opt.with_kazoo;
  return TRUE;
}

/* Requests and notifications per operation over a measurement, from the
 * servers' counters (not corrected for pings: with 30 s sessions they are
 * a handful per measurement, against thousands of requests). */
static void record_server_counts(const char *workload, const char *impl,
                                 const snap *a, const snap *b, double ops) {
  if (ops <= 0)
    return;
  record(workload, impl, "requests per acquisition (mntr)", "count",
         (double)client_packets(a, b) / ops);
  record(workload, impl, "notifications per acquisition (mntr)", "count",
         (double)(b->notifications - a->notifications) / ops);
}

/* Record a loop line ("done ops= secs= ops_per_sec= acquire_p50_us= ..."). */
static void record_loop(const char *impl, const char *line) {
  const char *who = impl;
  double rate = need_field(who, line, "ops_per_sec");
  record("uncontended", impl, "ops/s", "ops/s", rate);
  record("uncontended", impl, "acquire p50", "ms",
         need_field(who, line, "acquire_p50_us") / 1000);
  record("uncontended", impl, "acquire p99", "ms",
         need_field(who, line, "acquire_p99_us") / 1000);
  record("uncontended", impl, "cycle p50", "ms",
         need_field(who, line, "cycle_p50_us") / 1000);
  record("uncontended", impl, "cycle p99", "ms",
         need_field(who, line, "cycle_p99_us") / 1000);
  progress("  uncontended %-9s %8.1f ops/s  (cycle p50 %.2f ms)", impl, rate,
           need_field(who, line, "cycle_p50_us") / 1000);
}

/* A worker that warms up, says "ready", runs on the start line, and
 * prints one "done" line; the counters are taken around the run. */
static char *run_worker_once(const char *name, const char *const *args, snap *a,
                             snap *b) {
  proc *p = worker_start(name, args);
  g_free(proc_expect(p, "ready", START_MS));
  snap_take(a);
  proc_send(p, "go");
  char *line = proc_expect(p, "done", STEP_MS + opt.seconds * 1000);
  snap_take(b);
  proc_finish(p, STEP_MS);
  return line;
}

static void uncontended_round(int round, proc *curator, proc *kazoo) {
  char secs[16];
  snprintf(secs, sizeof secs, "%d", opt.seconds);
  size_t n = N_IMPLS;
  for (size_t i = 0; i < n; i++) {
    const char *impl = impl_names[round_order(round, i, n)];
    if (!impl_enabled(impl))
      continue;
    char *path = znode("uncontended/%s-r%d", impl, round);
    char *line;
    snap a, b;
    if (strcmp(impl, "limit") == 0) {
      const char *args[] = {"seq", hosts, path, secs, NULL};
      line = run_worker_once("limit seq", args, &a, &b);
    } else if (strcmp(impl, "zkrecipes") == 0 || strcmp(impl, "naive") == 0) {
      const char *args[] = {
          "loop", impl[0] == 'z' ? "zkr" : "naive", hosts, path, secs, NULL};
      line = run_worker_once(impl, args, &a, &b);
    } else {
      /* The peer warms up on the command before it starts timing: the
       * counters then include that one acquisition too. */
      proc *peer = impl[0] == 'c' ? curator : kazoo;
      char *cmd = g_strdup_printf("loop %s %d", path, opt.seconds);
      snap_take(&a);
      proc_send(peer, cmd);
      g_free(cmd);
      line = proc_expect(peer, "done", STEP_MS + opt.seconds * 1000);
      snap_take(&b);
    }
    record_loop(impl, line);
    double ops = need_field(impl, line, "ops");
    if (strcmp(impl, "curator") == 0 || strcmp(impl, "kazoo") == 0)
      ops += 1; /* the warm-up */
    record_server_counts("uncontended", impl, &a, &b, ops);
    g_free(line);
    g_free(path);
  }
}

static void pipelined_round(int round) {
  char *path = znode("limit/pipelined-r%d", round);
  char secs[16];
  snprintf(secs, sizeof secs, "%d", opt.seconds < 3 ? opt.seconds : 3);
  const char *args[] = {"pipe", hosts, path, secs, "500", NULL};
  snap a, b;
  char *line = run_worker_once("limit pipe", args, &a, &b);
  double rate = need_field("limit pipe", line, "ops_per_sec");
  record("limit", "zookeeper", "pipelined creates/s (500 in flight)", "ops/s",
         rate);
  progress("  pipelined creates   %8.1f ops/s", rate);
  g_free(line);
  g_free(path);
}

/* ----------------------------------------------------------- contended */

typedef struct cycle {
  /* us: acquire called, acquired, release called, released */
  int64_t a, h, r, d;
  int who; /* the contender process (0 for a peer's threads) */
} cycle;

static int compare_cycle_held(const void *x, const void *y) {
  const cycle *a = x, *b = y;
  return a->h < b->h ? -1 : a->h > b->h;
}

/* Parse an "ops A,H,R,D ..." line of contender @p index into @p cycles. */
static void parse_cycles(const char *who, int index, const char *line,
                         GArray *cycles) {
  if (!g_str_has_prefix(line, "ops"))
    fatal("%s: expected an ops line, got \"%.100s\"", who, line);
  const char *p = line + 3;
  while (*p == ' ') {
    cycle c = {.who = index};
    int used = 0;
    if (sscanf(p, " %" SCNd64 ",%" SCNd64 ",%" SCNd64 ",%" SCNd64 "%n", &c.a,
               &c.h, &c.r, &c.d, &used) != 4)
      fatal("%s: bad ops line near \"%.40s\"", who, p);
    g_array_append_val(cycles, c);
    p += used;
  }
}

/* The holds of the cycles (from acquired to release called; no tokens)
 * judged by the tests' checker: how many overlapping pairs. */
static int contended_overlaps(const cycle *c, size_t n) {
  bench_holds *holds = bench_holds_new();
  for (size_t i = 0; i < n; i++)
    bench_holds_add(holds, c[i].who, -1, c[i].h, c[i].r);
  int overlaps, no_tokens;
  bench_holds_check(holds, FALSE, &overlaps, &no_tokens);
  bench_holds_free(holds);
  return overlaps;
}

/* Handoffs, waits, and the exclusion check from the cycles' times. */
static void analyze_contended(const char *workload, const char *impl,
                              GArray *cycles, int marker_violations) {
  size_t n = cycles->len;
  if (n < 2)
    fatal("%s: only %zu cycles in the contended run", impl, n);
  cycle *c = (cycle *)(void *)cycles->data;
  qsort(c, n, sizeof *c, compare_cycle_held);
  int64_t first = c[0].a, last = c[0].d;
  double *wait = g_new(double, n), *gap = g_new(double, n),
         *del = g_new(double, n), *wake = g_new(double, n);
  size_t gaps = 0;
  int overlaps = contended_overlaps(c, n);
  for (size_t i = 0; i < n; i++) {
    if (c[i].a < first)
      first = c[i].a;
    if (c[i].d > last)
      last = c[i].d;
    wait[i] = (double)(c[i].h - c[i].a) / 1000;
    if (i + 1 < n) {
      /* A handoff: the next holder was already waiting when this one
       * started to release. */
      if (c[i + 1].a < c[i].r) {
        gap[gaps] = (double)(c[i + 1].h - c[i].r) / 1000;
        del[gaps] = (double)(c[i].d - c[i].r) / 1000;
        wake[gaps] = (double)(c[i + 1].h - c[i].d) / 1000;
        gaps++;
      }
    }
  }
  double secs = (double)(last - first) / 1e6;
  double rate = (double)n / secs;
  record(workload, impl, "handoffs/s", "ops/s", rate);
  record(workload, impl, "wait p50", "ms", quantile(wait, n, 0.50));
  record(workload, impl, "wait p99", "ms", quantile(wait, n, 0.99));
  record(workload, impl, "handoff p50 (release called -> next holds)", "ms",
         quantile(gap, gaps, 0.50));
  record(workload, impl, "  release's delete p50", "ms",
         quantile(del, gaps, 0.50));
  record(workload, impl, "  next holds after delete confirmed p50", "ms",
         quantile(wake, gaps, 0.50));
  record(workload, impl, "violations (marker + overlapping holds)", "count",
         marker_violations + overlaps);
  progress("  %-11s %-9s %8.1f handoffs/s  (wait p50 %.1f ms, handoff "
           "p50 %.2f ms, %d violations)",
           workload, impl, rate, quantile(wait, n, 0.50),
           quantile(gap, gaps, 0.50), marker_violations + overlaps);
  g_free(wait);
  g_free(gap);
  g_free(del);
  g_free(wake);
}

/* The C contenders: one process (one session) each. */
static void contended_workers(const char *impl, const char *path,
                              int contenders, GArray *cycles, snap *a,
                              snap *b) {
  char secs[16];
  snprintf(secs, sizeof secs, "%d", opt.seconds);
  proc **w = g_new0(proc *, contenders);
  for (int i = 0; i < contenders; i++) {
    const char *args[] = {"contend", impl, hosts, path, secs, NULL};
    char *name = g_strdup_printf("%s contender %d", impl, i);
    w[i] = worker_start(name, args);
    g_free(name);
  }
  for (int i = 0; i < contenders; i++)
    g_free(proc_expect(w[i], "ready", START_MS));
  snap_take(a);
  for (int i = 0; i < contenders; i++)
    proc_send(w[i], "go");
  char **done_lines = g_new0(char *, contenders);
  for (int i = 0; i < contenders; i++)
    done_lines[i] = proc_expect(w[i], "done", STEP_MS + opt.seconds * 1000);
  snap_take(b);
  for (int i = 0; i < contenders; i++) {
    char *done = done_lines[i];
    char *ops = proc_line(w[i], STEP_MS);
    parse_cycles(w[i]->name, i, ops, cycles);
    g_free(ops);
    g_free(done);
    proc_finish(w[i], STEP_MS);
  }
  g_free(done_lines);
  g_free(w);
}

/* One round of @p workload: @p contenders sessions loop acquire/release on
 * one lock, each implementation in turn. */
static void contended_round(const char *workload, int contenders, int round,
                            proc *curator, proc *kazoo) {
  size_t n = N_IMPLS - 1; /* all but the limit */
  for (size_t i = 0; i < n; i++) {
    const char *impl = impl_names[1 + round_order(round, i, n)];
    if (!impl_enabled(impl))
      continue;
    char *path = znode("%s/%s-r%d", workload, impl, round);
    char *tag = g_strdup_printf("%s-%s-r%d", workload, impl, round);
    char *marker = marker_file(tag);
    GArray *cycles = g_array_new(FALSE, FALSE, sizeof(cycle));
    int violations = 0; /* the peers' own marker check; ours: the holds */
    snap a, b;
    if (strcmp(impl, "zkrecipes") == 0 || strcmp(impl, "naive") == 0) {
      contended_workers(impl[0] == 'z' ? "zkr" : "naive", path, contenders,
                        cycles, &a, &b);
    } else {
      /* The peer's threads warm up (one acquisition each) after the
       * command: the counters include those too. */
      proc *peer = impl[0] == 'c' ? curator : kazoo;
      char *cmd = g_strdup_printf("contend %s %d %d %s", path, opt.seconds,
                                  contenders, marker);
      snap_take(&a);
      proc_send(peer, cmd);
      g_free(cmd);
      char *done = proc_expect(peer, "done", START_MS + opt.seconds * 1000);
      snap_take(&b);
      violations = (int)need_field(impl, done, "violations");
      char *ops = proc_line(peer, STEP_MS);
      parse_cycles(impl, 0, ops, cycles);
      g_free(ops);
      g_free(done);
    }
    int warm_ups = strcmp(impl, "curator") == 0 || strcmp(impl, "kazoo") == 0
                       ? contenders
                       : 0;
    record_server_counts(workload, impl, &a, &b,
                         (double)(cycles->len + warm_ups));
    analyze_contended(workload, impl, cycles, violations);
    unlink(marker); /* left only by a violation */
    g_array_free(cycles, TRUE);
    g_free(marker);
    g_free(tag);
    g_free(path);
  }
}

/* A first, discarded round of every measurement, 2 s each: a new
 * ensemble is slow at first (the servers' JIT, the first transaction log
 * files), and so are the peers' JVM and Python. */
static void warm_up(proc *curator, proc *kazoo) {
  progress("warm-up round (discarded), 2 s each");
  int seconds = opt.seconds;
  opt.seconds = 2;
  uncontended_round(0, curator, kazoo);
  contended_round("contended", opt.contenders, 0, curator, kazoo);
  if (opt.contenders != 2)
    contended_round("two-party", 2, 0, curator, kazoo);
  opt.seconds = seconds;
  for (guint i = 0; i < metrics->len; i++)
    g_array_set_size(((metric *)g_ptr_array_index(metrics, i))->values, 0);
}

void run_throughput(void) {
  proc *curator = NULL, *kazoo = NULL;
  if (opt.with_curator) {
    const char *args[] = {"bench", hosts, NULL};
    curator = peer_start("curator", args, MEASURE_SESSION_MS);
    g_free(proc_expect(curator, "ready", START_MS));
  }
  if (opt.with_kazoo) {
    const char *args[] = {"bench", hosts, NULL};
    kazoo = peer_start("kazoo", args, MEASURE_SESSION_MS);
    g_free(proc_expect(kazoo, "ready", START_MS));
  }
  warm_up(curator, kazoo);
  for (int r = 1; r <= opt.rounds; r++) {
    progress("round %d of %d: uncontended, %d s each", r, opt.rounds,
             opt.seconds);
    uncontended_round(r, curator, kazoo);
    pipelined_round(r);
    progress("round %d of %d: contended, %d sessions, %d s each", r, opt.rounds,
             opt.contenders, opt.seconds);
    contended_round("contended", opt.contenders, r, curator, kazoo);
    if (opt.contenders != 2) {
      progress("round %d of %d: two-party, 2 sessions, %d s each", r,
               opt.rounds, opt.seconds);
      contended_round("two-party", 2, r, curator, kazoo);
    }
  }
  if (curator) {
    proc_send(curator, "quit");
    proc_finish(curator, STEP_MS);
  }
  if (kazoo) {
    proc_send(kazoo, "quit");
    proc_finish(kazoo, STEP_MS);
  }
  set_reference("uncontended", "limit");
  set_reference("contended", opt.with_curator ? "curator" : NULL);
  set_reference("two-party", opt.with_curator ? "curator" : NULL);
}
