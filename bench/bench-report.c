/*
 * zkr-bench: the report: targets, the table and the CSV.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include "bench.h"

/* ------------------------------------------------------------ the report */

typedef struct target {
  char what[100];
  char measured[160];
  int met; /* 1 met, 0 not, -1 not measured */
} target;

GPtrArray *targets;

static void add_target(const char *what, int met, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void add_target(const char *what, int met, const char *fmt, ...) {
  target *t = g_new0(target, 1);
  snprintf(t->what, sizeof t->what, "%s", what);
  t->met = met;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t->measured, sizeof t->measured, fmt, ap);
  va_end(ap);
  g_ptr_array_add(targets, t);
}

/* Issue 15: the read-write lock and the semaphore against Curator. */
/* Issue 19: fresh locks from one session at >= 0.8x the ensemble's
 * pipelined write rate per proposal a fresh lock needs, and fewer than 3
 * proposals per fresh lock (bench-scale.c measures both in one run). */
static void fresh_lock_targets(void) {
  const char *how[] = {"all at once", "64 at a time"};
  for (size_t i = 0; i < G_N_ELEMENTS(how); i++) {
    char figure[160], what[100];
    snprintf(figure, sizeof figure,
             "%d locks, %s: acquisitions/s / (pipelined creates/s / proposals "
             "per lock) (goal >= 0.8)",
             opt.scale_locks, how[i]);
    metric *ratio = metric_find("scale", "zkrecipes", figure);
    snprintf(figure, sizeof figure, "%d locks, %s: proposals per fresh lock",
             opt.scale_locks, how[i]);
    metric *proposals = metric_find("scale", "zkrecipes", figure);
    snprintf(what, sizeof what,
             "fresh locks (%s) >= 0.8x pipelined writes per proposal, < 3 "
             "proposals",
             how[i]);
    if (ratio == NULL || proposals == NULL) {
      add_target(what, -1, "not run");
      continue;
    }
    double r = metric_median(ratio), p = metric_median(proposals);
    add_target(what, r >= 0.8 && p < 3, "%.2fx, %.2f proposals per lock", r, p);
  }
}

static void family_targets(void) {
  const char *sem_goal = "semaphore acquisitions/s >= 1.5x Curator's";
  metric *sem = metric_find("semaphore", "zkrecipes", "acquisitions/s");
  if (sem && opt.with_curator) {
    double r = metric_ratio(sem);
    add_target(sem_goal, r >= 1.5, "%.2fx (%.0f vs %.0f acquisitions/s)", r,
               metric_median(sem),
               median_of_fig("semaphore", "curator", "acquisitions/s"));
  } else {
    add_target(sem_goal, -1, "not run");
  }
  const char *rw_goal = "rwlock reader acquisitions/s >= Curator's";
  metric *rw = metric_find("rwlock", "zkrecipes", "reader acquisitions/s");
  if (rw && opt.with_curator) {
    double r = metric_ratio(rw);
    add_target(rw_goal, r >= 1.0, "%.2fx (%.0f vs %.0f acquisitions/s)", r,
               metric_median(rw),
               median_of_fig("rwlock", "curator", "reader acquisitions/s"));
  } else {
    add_target(rw_goal, -1, "not run");
  }
  if (sem || rw) {
    double worst = 0;
    const char *const workloads[] = {"rwlock", "semaphore"};
    const char *const impls[] = {"zkrecipes", "curator"};
    for (size_t w = 0; w < 2; w++)
      for (size_t i = 0; i < 2; i++) {
        metric *v = metric_find(workloads[w], impls[i],
                                "violations (in-process check)");
        for (guint k = 0; v && k < v->values->len; k++)
          worst = MAX(worst, g_array_index(v->values, double, k));
      }
    add_target("rwlock, semaphore: 0 exclusion violations (both, every round)",
               worst == 0, "%.0f at most", worst);
  }
}

/* Issue 19's many waiters and many threads: one notification per release
 * with all the waiters queued at once; the hand-over with the most threads
 * on one lock object within 1.5x of that with the fewest. */
static void scale_queue_targets(void) {
  char figure[96], what[100];
  long total = (long)opt.scale_procs * opt.scale_sessions * opt.scale_holds;
  snprintf(figure, sizeof figure, "%ld waiters: notifications per release",
           total);
  snprintf(what, sizeof what, "%ld waiters: exactly 1 notification per release",
           total);
  metric *n = metric_find("scale", "zkrecipes", figure);
  if (n)
    add_target(what, fabs(metric_median(n) - 1.0) < 1e-9, "%.3f",
               metric_median(n));
  else
    add_target(what, -1, "not run");
  int few = opt.scale_threads[0];
  int many = opt.scale_threads[G_N_ELEMENTS(opt.scale_threads) - 1];
  snprintf(figure, sizeof figure,
           "hand-over p50, %d threads / %d threads on one lock object", many,
           few);
  snprintf(what, sizeof what,
           "hand-over with %d threads on one lock object <= 1.5x %d threads",
           many, few);
  metric *r = metric_find("scale", "zkrecipes", figure);
  if (r)
    add_target(what, metric_median(r) <= 1.5, "%.2fx", metric_median(r));
  else
    add_target(what, -1, "not run");
}

void evaluate_targets(void) {
  targets = g_ptr_array_new();
  metric *u = metric_find("uncontended", "zkrecipes", "ops/s");
  if (u) {
    double r = metric_ratio(u);
    add_target("uncontended >= 90% of the raw sequential create+delete rate",
               r >= 0.90, "%.0f%% (%.0f vs %.0f ops/s)", 100 * r,
               metric_median(u),
               median_of_fig("uncontended", "limit", "ops/s"));
  } else {
    add_target("uncontended >= 90% of the raw sequential create+delete rate",
               -1, "not run");
  }
  metric *c = metric_find("contended", "zkrecipes", "handoffs/s");
  if (c && opt.with_curator) {
    double r = metric_ratio(c);
    add_target("contended handoffs >= 2x Curator's", r >= 2.0,
               "%.2fx (%.0f vs %.0f handoffs/s)", r, metric_median(c),
               median_of_fig("contended", "curator", "handoffs/s"));
  } else {
    add_target("contended handoffs >= 2x Curator's", -1, "not run");
  }
  if (c) {
    double worst = 0;
    for (size_t i = 1; i < N_IMPLS; i++) {
      metric *v = metric_find("contended", impl_names[i],
                              "violations (marker + overlapping holds)");
      for (guint k = 0; v && k < v->values->len; k++)
        worst = MAX(worst, g_array_index(v->values, double, k));
    }
    add_target("contended: 0 mutual-exclusion violations (every lock, every "
               "round)",
               worst == 0, "%.0f at most", worst);
  }
  metric *h = metric_find("herd", "zkrecipes", "notifications per release");
  if (h) {
    double notes = metric_median(h);
    add_target("herd: exactly 1 notification per release",
               fabs(notes - 1.0) < 1e-9, "%.3f", notes);
    double mine =
        median_of_fig("herd", "zkrecipes", "requests per acquisition");
    double cur = median_of_fig("herd", "curator", "requests per acquisition");
    double kaz = median_of_fig("herd", "kazoo", "requests per acquisition");
    gboolean fewer =
        (!opt.with_curator || mine < cur) && (!opt.with_kazoo || mine < kaz);
    add_target("herd: fewer requests per acquisition than Curator and kazoo",
               opt.with_curator || opt.with_kazoo ? fewer : -1,
               "%.2f vs Curator %.2f, kazoo %.2f", mine, cur, kaz);
  } else {
    add_target("herd: exactly 1 notification per release", -1, "not run");
  }
  family_targets();
  fresh_lock_targets();
  scale_queue_targets();
  char figure[64];
  long total = (long)opt.scale_procs * opt.scale_sessions * opt.scale_holds;
  snprintf(figure, sizeof figure, "%ld waiters: violations", total);
  metric *sv = metric_find("scale", "zkrecipes", figure);
  snprintf(figure, sizeof figure, "%ld waiters: failed acquisitions", total);
  metric *sf = metric_find("scale", "zkrecipes", figure);
  char what[100];
  snprintf(what, sizeof what, "%ld waiters all acquire, 0 violations", total);
  if (sv && sf) {
    double v = metric_median(sv), f = metric_median(sf);
    snprintf(figure, sizeof figure, "%ld waiters: total time", total);
    add_target(what, v == 0 && f == 0,
               "%ld acquired in %.1f s, %.0f violations, %.0f failures", total,
               median_of_fig("scale", "zkrecipes", figure), v, f);
    snprintf(figure, sizeof figure, "%d locks, all at once: RSS per held lock",
             opt.scale_locks);
    double b = median_of_fig("scale", "zkrecipes", figure);
    snprintf(figure, sizeof figure, "%d locks, 64 at a time: RSS per held lock",
             opt.scale_locks);
    double w = median_of_fig("scale", "zkrecipes", figure);
    snprintf(what, sizeof what,
             "<= 1 KiB RSS per held lock, %d held, acquired 64 at a time",
             opt.scale_locks);
    add_target(what, w <= 1024, "%.0f bytes", w);
    snprintf(what, sizeof what,
             "<= 1 KiB RSS per held lock, %d held, all acquired at once",
             opt.scale_locks);
    add_target(what, b <= 1024, "%.0f bytes", b);
  } else {
    add_target(what, -1, "not run");
  }
}

static void fmt_value(char *buf, size_t size, double v) {
  if (isnan(v))
    snprintf(buf, size, "-");
  else if (fabs(v) >= 1000 || v == floor(v))
    snprintf(buf, size, "%.0f", v);
  else if (fabs(v) >= 10)
    snprintf(buf, size, "%.1f", v);
  else
    snprintf(buf, size, "%.2f", v);
}

void print_table(FILE *out) {
  fprintf(out, "%-11s %-12s %-45s %10s %-5s %18s  %s\n", "WORKLOAD", "IMPL",
          "FIGURE", "MEDIAN", "UNIT", "RATIO", "ROUNDS");
  const char *last = "";
  for (guint i = 0; i < metrics->len; i++) {
    metric *m = g_ptr_array_index(metrics, i);
    if (strcmp(last, m->workload) != 0 && i > 0)
      fputc('\n', out);
    last = m->workload;
    char med[32], ratio[48] = "", rounds[160] = "";
    fmt_value(med, sizeof med, metric_median(m));
    double r = metric_ratio(m);
    if (!isnan(r) && strcmp(m->impl, m->ref_impl) != 0)
      snprintf(ratio, sizeof ratio, "%.2fx %s", r, m->ref_impl);
    size_t used = 0;
    for (guint k = 0; k < m->values->len && m->values->len > 1; k++) {
      char v[32];
      fmt_value(v, sizeof v, g_array_index(m->values, double, k));
      used += (size_t)snprintf(rounds + used, sizeof rounds - used, "%s%s",
                               k ? " " : "", v);
      if (used >= sizeof rounds)
        break;
    }
    fprintf(out, "%-11s %-12s %-45s %10s %-5s %18s  %s\n", m->workload, m->impl,
            m->figure, med, m->unit, ratio, rounds);
  }
}

void print_targets(FILE *out) {
  fprintf(out, "%-70s %-44s %s\n", "TARGET", "MEASURED", "MET");
  for (guint i = 0; i < targets->len; i++) {
    target *t = g_ptr_array_index(targets, i);
    fprintf(out, "%-70s %-44s %s\n", t->what, t->measured,
            t->met < 0 ? "n/a"
            : t->met   ? "yes"
                       : "NO");
  }
}

void write_csv(const char *file) {
  FILE *f = fopen(file, "w");
  if (f == NULL)
    fatal("%s: %s", file, strerror(errno));
  fprintf(f, "workload,implementation,figure,unit,median,ratio,ratio_to,"
             "rounds\n");
  for (guint i = 0; i < metrics->len; i++) {
    metric *m = g_ptr_array_index(metrics, i);
    double r = metric_ratio(m);
    char *fig = g_strstrip(g_strdup(m->figure));
    fprintf(f, "%s,%s,\"%s\",%s,%.6g,", m->workload, m->impl, fig, m->unit,
            metric_median(m));
    g_free(fig);
    if (!isnan(r))
      fprintf(f, "%.4f,%s,", r, m->ref_impl);
    else
      fprintf(f, ",,");
    for (guint k = 0; k < m->values->len; k++)
      fprintf(f, "%s%.6g", k ? ";" : "", g_array_index(m->values, double, k));
    fputc('\n', f);
  }
  for (guint i = 0; i < targets->len; i++) {
    target *t = g_ptr_array_index(targets, i);
    fprintf(f, "target,,\"%s\",,\"%s\",%s,,\n", t->what, t->measured,
            t->met < 0 ? "n/a"
            : t->met   ? "met"
                       : "not met");
  }
  if (fclose(f) != 0)
    fatal("%s: %s", file, strerror(errno));
}
