/*
 * Histograms of durations (zkrecipes/stats.h): kept by the session (its
 * losses' delivery) and by the recipes (waits and holds).
 */
#include "config.h"

#include <math.h>

#include "core/histogram.h"
#include "zkrecipes/stats.h"

#define FIRST_BOUND_S 0.0001

double zkrc_histogram_bound(int i) {
  if (i < 0 || i >= ZKRC_HISTOGRAM_BUCKETS)
    return NAN;
  if (i == ZKRC_HISTOGRAM_BUCKETS - 1)
    return INFINITY;
  return ldexp(FIRST_BOUND_S, i);
}

/* The bucket of a duration of @p us microseconds. */
static int bucket_of(int64_t us) {
  double s = (double)us / 1e6;
  int i = 0;
  while (i < ZKRC_HISTOGRAM_BUCKETS - 1 && s > zkrc_histogram_bound(i))
    i++;
  return i;
}

void zkrc__histogram_record(zkrc__histogram *h, int64_t us) {
  if (us < 0)
    us = 0;
  h->count++;
  h->sum_us += (uint64_t)us;
  h->buckets[bucket_of(us)]++;
}

void zkrc__histogram_export(const zkrc__histogram *h, zkrc_histogram *out) {
  out->count = h->count;
  out->sum_seconds = (double)h->sum_us / 1e6;
  for (int i = 0; i < ZKRC_HISTOGRAM_BUCKETS; i++)
    out->buckets[i] = h->buckets[i];
}

double zkrc_histogram_quantile(const zkrc_histogram *h, double q) {
  if (h == NULL || h->count == 0 || !(q >= 0.0 && q <= 1.0))
    return NAN;
  double rank = q * (double)h->count;
  uint64_t below = 0;
  for (int i = 0; i < ZKRC_HISTOGRAM_BUCKETS; i++) {
    uint64_t in = h->buckets[i];
    if (in == 0 || (double)(below + in) < rank) {
      below += in;
      continue;
    }
    double low = i == 0 ? 0.0 : zkrc_histogram_bound(i - 1);
    if (i == ZKRC_HISTOGRAM_BUCKETS - 1)
      return low; /* +Inf: the bound below it */
    double high = zkrc_histogram_bound(i);
    return low + (high - low) * ((rank - (double)below) / (double)in);
  }
  return zkrc_histogram_bound(ZKRC_HISTOGRAM_BUCKETS - 2);
}
