/*
 * chaos_timelease.h - the time leases in test_chaos's time lease workers'
 * logs (chaos_tlworker.c gives the format), as holds for the shared
 * checker (holds.h).
 *
 * What zkrecipes/timelease.h promises, and what is checked: nobody may
 * take a slot before the end its holder wrote, whether the holder's
 * session lives or not, as long as every participant's clock agrees (the
 * workers share one clock, CLOCK_MONOTONIC plus one offset, so the
 * margin the header asks for is zero and no overlap at all is allowed).
 * So a lease is held, for the checker, from its decision (the clock
 * reading of the decider, which the worker logs: end - remaining) until
 * the end written or, when the worker went on working after it (the
 * control), its last step of work; a renewal by the same worker of a
 * lease still running extends it.  Two holds of one slot that overlap are
 * a violation, with no excuse: neither a freeze nor a session closed by
 * the operator lets a taker in before the end written, and an honest
 * worker's last step comes before its end by construction (stamped with
 * the reading that allowed it).  A lease whose write may have landed but
 * whose taker was told an error (ZKRC_ETIMEDOUT, ZKRC_ECONNLOSS, ...) is
 * unknown to the checker: it can only make others wait, never overlap a
 * known hold.
 */
#ifndef ZKT_CHAOS_TIMELEASE_H
#define ZKT_CHAOS_TIMELEASE_H

#include <stdint.h>

#include <glib.h>

#include "holds.h"

typedef struct chaos_tl_run {
  int nslots;
  GArray **by_slot; /* of zkt_hold, one array per lease slot */
  /* What the logs show: attempts by outcome, steps of work. */
  int attempts, obtained, renewed, refused, failed, work_steps;
  int renewed_running; /* renewals of a lease still running (merged) */
  int late_steps;      /* steps of work at or after their lease's end */
  int bad_records;
} chaos_tl_run;

void chaos_tl_init(chaos_tl_run *r, int nslots);
void chaos_tl_clear(chaos_tl_run *r);

/* Add the leases of one worker's log @p text (instance @p instance; the
 * holds' owner @p owner). */
void chaos_tl_add_log(chaos_tl_run *r, const char *text, int instance,
                      void *owner);

/* Judge every slot (holds.h, capacity 1, no excuse): the violations go to
 * @p violations (of char *, "slot K: ..."); *@p overlaps gets the
 * overlapping pairs, *@p most the most holds running at one instant over
 * all slots.  Returns the number of violations. */
int chaos_tl_check(chaos_tl_run *r, GPtrArray *violations, int *overlaps,
                   int *most);

#endif /* ZKT_CHAOS_TIMELEASE_H */
