/*
 * A histogram as the library keeps it (histogram.c), and its public form
 * (zkrc_histogram, zkrecipes/stats.h).  Not locked: its owner's mutex
 * guards it.
 */
#ifndef ZKRC_HISTOGRAM_H
#define ZKRC_HISTOGRAM_H

#include <stdint.h>

#include "zkrecipes/stats.h"

/* 4-byte buckets (they wrap after 2^32 samples in one bucket; the count
 * and the sum do not). */
typedef struct zkrc__histogram {
  uint64_t count;
  uint64_t sum_us;
  uint32_t buckets[ZKRC_HISTOGRAM_BUCKETS];
} zkrc__histogram;

/* Record a duration of @p us microseconds (negative counts as 0). */
void zkrc__histogram_record(zkrc__histogram *h, int64_t us);

/* The public form of @p h into @p out. */
void zkrc__histogram_export(const zkrc__histogram *h, zkrc_histogram *out);

#endif /* ZKRC_HISTOGRAM_H */
