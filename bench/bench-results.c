/*
 * zkr-bench: the figures measured, per workload, implementation and round.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include "bench.h"

/* ------------------------------------------------------------- results */

GPtrArray *metrics;

static metric *metric_get(const char *workload, const char *impl,
                          const char *figure, const char *unit) {
  for (guint i = 0; i < metrics->len; i++) {
    metric *m = g_ptr_array_index(metrics, i);
    if (!strcmp(m->workload, workload) && !strcmp(m->impl, impl) &&
        !strcmp(m->figure, figure))
      return m;
  }
  metric *m = g_new0(metric, 1);
  m->workload = g_strdup(workload);
  m->impl = g_strdup(impl);
  m->figure = g_strdup(figure);
  m->unit = g_strdup(unit);
  m->values = g_array_new(FALSE, FALSE, sizeof(double));
  g_ptr_array_add(metrics, m);
  return m;
}

void record(const char *workload, const char *impl, const char *figure,
            const char *unit, double v) {
  metric *m = metric_get(workload, impl, figure, unit);
  g_array_append_val(m->values, v);
}

metric *metric_find(const char *workload, const char *impl,
                    const char *figure) {
  for (guint i = 0; i < metrics->len; i++) {
    metric *m = g_ptr_array_index(metrics, i);
    if (!strcmp(m->workload, workload) && !strcmp(m->impl, impl) &&
        !strcmp(m->figure, figure))
      return m;
  }
  return NULL;
}

double metric_median(const metric *m) {
  return m ? median_of((const double *)(void *)m->values->data, m->values->len)
           : NAN;
}

double median_of_fig(const char *workload, const char *impl,
                     const char *figure) {
  return metric_median(metric_find(workload, impl, figure));
}

/* The ratio of @p m to its reference: the median of the per-round ratios
 * when both have a value every round, else the ratio of the medians. */
double metric_ratio(const metric *m) {
  if (m->ref_impl == NULL)
    return NAN;
  const metric *ref = metric_find(m->workload, m->ref_impl, m->figure);
  if (ref == NULL)
    return NAN;
  /* A ratio of figures that can be negative (an event that arrives before
   * the write's reply) says nothing. */
  if (metric_median(ref) <= 0 || metric_median(m) < 0)
    return NAN;
  if (ref->values->len != m->values->len || m->values->len == 0)
    return metric_median(m) / metric_median(ref);
  double *r = g_new(double, m->values->len);
  for (guint i = 0; i < m->values->len; i++) {
    double d = g_array_index(ref->values, double, i);
    r[i] = d != 0 ? g_array_index(m->values, double, i) / d : NAN;
  }
  double med = median_of(r, m->values->len);
  g_free(r);
  return med;
}

/* Every metric of @p workload (all implementations) gets @p ref as the
 * reference of its ratio. */
void set_reference(const char *workload, const char *ref) {
  for (guint i = 0; i < metrics->len; i++) {
    metric *m = g_ptr_array_index(metrics, i);
    if (!strcmp(m->workload, workload))
      m->ref_impl = ref;
  }
}
