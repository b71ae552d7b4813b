/*
 * chaos_check.h - the pure part of test_chaos's checker: holds read from
 * the workers' logs (chaos.h gives the format), and the rule about
 * overlapping holds.  No server, no process: test_chaos_check runs it on
 * synthetic logs, so that the rule is shown to catch what it must.
 *
 * The rule ("held means held", issue 12): a hold (a leadership, in an
 * election run) lasts from the moment its holder was told it holds until
 * the first of: it was told LOST (REVOKED), it called release (resign), its
 * process died.  Two holds may overlap only when the earlier holder could
 * not have been told in time:
 *   - it was frozen (SIGSTOP) while acquiring or holding, before the
 *     successor's grant: a stopped process is told nothing;
 *   - its session was closed by an operator action: the test's
 *     "expire-holder" fault takes the session over with its password
 *     (zkrc_ensemble_expire_session) and closes it, which the servers carry
 *     out at once, with no lease to wait for - as an administrator's
 *     kill-session would;
 *   - it was killed (SIGKILL): then its hold ended at its death, which is
 *     before anyone else's grant, so that case needs no excuse.
 * Everything else - a holder partitioned from the ensemble (a black-holed
 * or dropped proxy), a session the servers expired, a member that died or
 * froze under it - must have told the holder LOST before its successor was
 * told it holds.  All times are CLOCK_MONOTONIC microseconds of one machine
 * (chaos_now_us()), in the test and in every worker.
 */
#ifndef ZKT_CHAOS_CHECK_H
#define ZKT_CHAOS_CHECK_H

#include <stdint.h>

#include <glib.h>

typedef struct chaos_hold {
  int instance, n;
  int64_t token;    /* -1: lost before the holder could read it */
  int64_t asked;    /* when its acquisition (its wait to be elected) began */
  int64_t acquired; /* when its holder was told it holds */
  int64_t lost;     /* when told LOST / REVOKED for this token; 0: never */
  int64_t released; /* when release / resign was called; 0: never */
  int64_t end;      /* the first of lost, released, its death */
  char rel[32];     /* release's result, "" when it never came */
  gboolean counted_overlap;
} chaos_hold;

/* Something done to one worker instance by the schedule. */
typedef struct chaos_span {
  int instance;
  int64_t start, end;
} chaos_span;

typedef struct chaos_checker {
  /* Input: what was done to the workers (arrays of chaos_span), and
   * (optional, set after init) when proxies were black-holed: spans whose
   * instance is -1, for all. */
  GArray *pauses, *expiries, *partitions;
  /* Output */
  GPtrArray *violations; /* of char *: one line each */
  int overlaps, overlapping_holds;
  int excused_frozen, excused_closed; /* overlapping pairs, by excuse */
  /* Holds ended by LOST (no freeze, no operator close) that have a
   * successor: the successor's grant minus the LOST, in microseconds. */
  GArray *lost_margins; /* of int64_t */
  /* The same, for holds told LOST while a partition was on: the margin
   * the lease leaves to a holder cut off from the ensemble. */
  GArray *partition_margins; /* of int64_t */
} chaos_checker;

void chaos_checker_init(chaos_checker *c, GArray *pauses, GArray *expiries);
void chaos_checker_clear(chaos_checker *c);

/* Append to @p holds (of chaos_hold) the holds in one worker's log @p text:
 * the ACQ records that said ZKRC_OK, with their LOCKEVENT lost and REL.  A
 * hold with neither ends at @p died when non-zero (the worker was killed),
 * else at @p last_resort (the worker's end). */
void chaos_log_holds(const char *text, int instance, int64_t died,
                     int64_t last_resort, GArray *holds);

/* The rule above, and the tokens: no two holds with the same token; a hold
 * that began after another ended has a higher token.  @p all: chaos_hold *,
 * sorted here by grant time. */
void chaos_check_holds(chaos_checker *c, GPtrArray *all);

/* Minimum and median of @p margins (c->lost_margins or
 * c->partition_margins; 0 when empty). */
void chaos_margin_stats(GArray *margins, int64_t *min, int64_t *median);

#endif /* ZKT_CHAOS_CHECK_H */
