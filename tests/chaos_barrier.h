/*
 * chaos_barrier.h - the double barrier rounds in test_chaos's barrier
 * members' logs (chaos_dbworker.c gives the format), judged against what
 * zkrecipes/barrier.h promises.  Pure: no server, no process.
 *
 * Each round has a barrier of its own (PATH/r<round>), so a "ready" node
 * belongs to the round it was made for.  From the logs (one clock:
 * CLOCK_MONOTONIC of one machine) each member's node in a round is bounded
 * on both sides:
 *   - it may exist ("possibly in") from the member's ASK (logged before
 *     zkrc_double_barrier_new()) until the member was told LEFT (every
 *     member's node gone, its own too); with no LEFT, until the end of
 *     the run (a node freed, lost or of a dead member goes when the
 *     servers get to it);
 *   - it surely exists ("surely in") from the member's ENTERED (told only
 *     while its node is registered) until the first of: it called leave,
 *     it was told LOST (told before the servers can expire its session),
 *     it freed the barrier, it died, it was frozen, its session was closed
 *     by the operator (the last two may delete its node untold).
 * The rules, per round, for a barrier of N:
 *   E. a member told ENTERED (the first of the event and wait_entered()'s
 *      ZKRC_OK) had, at or before that moment, N members possibly in at
 *      once: "told ENTERED once N members' nodes were there" (a member
 *      told LOST still counts until LEFT or the end: its node may stay
 *      until the servers expire its session);
 *   L. a member told LEFT (the first of the event and leave's ZKRC_OK)
 *      was told so while no other member was surely in: "LEFT once every
 *      member's node is gone".
 * The rounds share nothing, so a round whose members never were N may
 * never be entered; how many rounds were entered is counted, not judged.
 */
#ifndef ZKT_CHAOS_BARRIER_H
#define ZKT_CHAOS_BARRIER_H

#include <stdint.h>

#include <glib.h>

typedef struct chaos_db_run {
  int members;        /* the barrier's N */
  GHashTable *rounds; /* round -> GPtrArray of the members' records */
  GPtrArray *keep;    /* every record */
  int asked, entered, left, lost, rounds_entered, most_in_a_round;
  int bad_records;
} chaos_db_run;

void chaos_db_init(chaos_db_run *r, int members);
void chaos_db_clear(chaos_db_run *r);

/* Add the rounds of one member's log @p text.  @p died: when the process
 * was killed (0: it was not), @p end: when it ended (or the run did);
 * @p pauses, @p expiries (of zkt_span, holds.h; may be NULL): what was
 * done to the run's instances. */
void chaos_db_add_log(chaos_db_run *r, const char *text, int instance,
                      int64_t died, int64_t end, GArray *pauses,
                      GArray *expiries);

/* Judge every round (E and L above); the violations go to @p violations
 * (of char *).  Returns their number. */
int chaos_db_check(chaos_db_run *r, GPtrArray *violations);

#endif /* ZKT_CHAOS_BARRIER_H */
