/*
 * What the lock's files count for zkrecipes/stats.h (stats.c).  Every
 * zkrc__lock_stat_* function is called with the lock object's mutex held.
 */
#ifndef ZKRC_STATS_INTERNAL_H
#define ZKRC_STATS_INTERNAL_H

#include <stdint.h>

#include <glib.h>

#include "core/histogram.h"
#include "zkrecipes/stats.h"

/* A recipe object's counters (a lock's, allocated with its first
 * outcome; a semaphore's and an election's, in the object). */
typedef struct zkrc__lock_stats {
  uint64_t acquisitions, timeouts, refusals, failures, lost, releases;
  zkrc__histogram wait, hold;
} zkrc__lock_stats;

/* Count an acquisition that ended without the lock, with @p err. */
void zkrc__stats_gave_up(zkrc__lock_stats *st, int err);
/* The public view of @p in (NULL: all zero) and the gauges, into the
 * first @p size bytes of @p out. */
int zkrc__stats_give(const zkrc__lock_stats *in, uint32_t waiting,
                     uint32_t holding, uint32_t queue_length,
                     zkrc_lock_stats *out, size_t size);

typedef struct zkrc_lock_hold holder;

/* The hold got to the front: holder.held_us is set (nothing counted yet:
 * the grant may never reach its owner). */
void zkrc__lock_stat_front_locked(holder *h);
/* Its owner was told it holds: an acquisition, and how long it waited
 * (from holder.asked_us to the front). */
void zkrc__lock_stat_delivered_locked(holder *h);
/* A held hold was lost (counted if its owner had been told it held). */
void zkrc__lock_stat_lost_locked(holder *h);
/* Its owner released a held (or lost) hold: how long it was held. */
void zkrc__lock_stat_released_locked(holder *h);
/* An acquisition of @p lk ended without the lock, with @p err. */
void zkrc__lock_stat_gave_up_locked(zkrc_lock *lk, int err);

/* "mutex", "read", "write" or "lease": which member of the lock family
 * @p lk is (for labels). */
const char *zkrc__lock_kind(zkrc_lock *lk);

/* Would zkrc_stats_prometheus() take @p src (initialized, no array NULL
 * with a count, no NULL object)?  zkrc_stats_serve() asks before it reads
 * the request. */
gboolean zkrc__stats_sources_usable(const zkrc_stats_sources *src);

#endif /* ZKRC_STATS_INTERNAL_H */
