/*
 * Statistics (zkrecipes/stats.h): histograms and the lock's counters
 * (the session's are src/session/session_stats.c).  The lock's are
 * counted by the hold core and its two clients (hold.c, lock.c,
 * lock_async.c) through the zkrc__lock_stat_* functions, always with the
 * lock object's mutex held.
 */
#include "config.h"

#include <string.h>

#include "recipes/lock_private.h"
#include "core/histogram.h"
#include "recipes/stats_internal.h"
#include "core/util.h"
#include "zkrecipes/stats.h"

/* ---------------------------------------------------------------- lock */

/* The first acquisition of a lock whose only outcome it is (see
 * zkrc_lock.first_wait_us) into @p st. */
static void add_first_acquisition(const zkrc_lock *lk, zkrc__lock_stats *st) {
  if (lk->first_wait_us == 0)
    return;
  st->acquisitions++;
  zkrc__histogram_record(&st->wait, (int64_t)(lk->first_wait_us - 1));
}

static zkrc__lock_stats *stats_locked(zkrc_lock *lk) {
  if (lk->stats == NULL) {
    lk->stats = g_new0(zkrc__lock_stats, 1);
    add_first_acquisition(lk, lk->stats);
    lk->first_wait_us = 0;
  }
  return lk->stats;
}

void zkrc__lock_stat_front_locked(holder *h) {
  h->held_us = g_get_monotonic_time();
}

void zkrc__lock_stat_delivered_locked(holder *h) {
  zkrc_lock *lk = h->lk;
  int64_t wait = h->held_us - h->asked_us;
  h->delivered = TRUE;
  if (lk->stats == NULL && lk->first_wait_us == 0) {
    lk->first_wait_us = (uint64_t)(wait > 0 ? wait : 0) + 1;
    return;
  }
  zkrc__lock_stats *st = stats_locked(lk);
  st->acquisitions++;
  zkrc__histogram_record(&st->wait, wait);
}

void zkrc__lock_stat_lost_locked(holder *h) {
  if (h->delivered)
    stats_locked(h->lk)->lost++;
}

void zkrc__lock_stat_released_locked(holder *h) {
  if (!h->delivered)
    return;
  zkrc__lock_stats *st = stats_locked(h->lk);
  st->releases++;
  zkrc__histogram_record(&st->hold, g_get_monotonic_time() - h->held_us);
}

void zkrc__stats_gave_up(zkrc__lock_stats *st, int err) {
  if (err == ZKRC_ETIMEDOUT)
    st->timeouts++;
  else if (err == ZKRC_ELOCKED)
    st->refusals++;
  else
    st->failures++;
}

void zkrc__lock_stat_gave_up_locked(zkrc_lock *lk, int err) {
  zkrc__stats_gave_up(stats_locked(lk), err);
}

/* Count hold @p h by state, and the longest queue listed. */
static void count_state(const holder *h, uint32_t *waiting, uint32_t *holding,
                        uint32_t *listed) {
  *waiting += h->state == H_WAITING;
  *holding += h->state == H_HELD;
  if (h->state == H_WAITING || h->state == H_HELD) {
    int n = zkrc__contender_listed(h->c); /* recipe -> contender */
    if (n > 0 && (uint32_t)n > *listed)
      *listed = (uint32_t)n;
  }
}

/* The same for every hold of @p table (a set or a map of holder*). */
static void count_states(GHashTable *table, uint32_t *waiting,
                         uint32_t *holding, uint32_t *listed) {
  if (table == NULL)
    return;
  GHashTableIter it;
  gpointer key, value;
  g_hash_table_iter_init(&it, table);
  while (g_hash_table_iter_next(&it, &key, &value))
    count_state(value ? value : key, waiting, holding, listed);
}

int zkrc__stats_give(const zkrc__lock_stats *in, uint32_t waiting,
                     uint32_t holding, uint32_t queue_length,
                     zkrc_lock_stats *out, size_t size) {
  zkrc_lock_stats st;
  memset(&st, 0, sizeof st);
  if (in) {
    st.acquisitions = in->acquisitions;
    st.timeouts = in->timeouts;
    st.refusals = in->refusals;
    st.failures = in->failures;
    st.lost = in->lost;
    st.releases = in->releases;
    zkrc__histogram_export(&in->wait, &st.wait);
    zkrc__histogram_export(&in->hold, &st.hold);
  }
  st.waiting = waiting;
  st.holding = holding;
  st.queue_length = queue_length;
  return zkrc__struct_give(out, &st, sizeof st, size, sizeof st.acquisitions);
}

int zkrc_lock_get_stats(zkrc_lock *lk, zkrc_lock_stats *out, size_t size) {
  if (lk == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  uint32_t waiting = 0, holding = 0, listed = 0;
  g_mutex_lock(&lk->r.o.mu);
  count_states(lk->holders, &waiting, &holding, &listed);
  count_states(lk->holds, &waiting, &holding, &listed);
  if (lk->hold) /* the only one (lock_private.h) */
    count_state(lk->hold, &waiting, &holding, &listed);
  zkrc__lock_stats copy;
  gboolean any = lk->stats != NULL || lk->first_wait_us != 0;
  if (lk->stats) {
    copy = *lk->stats;
  } else if (any) {
    memset(&copy, 0, sizeof copy);
    add_first_acquisition(lk, &copy);
  }
  g_mutex_unlock(&lk->r.o.mu);
  /* A hold that joined right behind another of this object did not list
   * the queue (queue_tail.c): the object's own holds in it count too. */
  uint32_t queue_length = MAX(listed, waiting + holding);
  return zkrc__stats_give(any ? &copy : NULL, waiting, holding, queue_length,
                          out, size);
}

const char *zkrc__lock_kind(zkrc_lock *lk) {
  if (lk->permits > 0)
    return "lease";
  if (lk->other)
    return lk->shared ? "read" : "write";
  return "mutex";
}
