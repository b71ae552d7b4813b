/*
 * holds.h - the one checker of "held means held" shared by the tests: the
 * lock's (eight processes), the election's (leaderships of worker
 * processes and of members), the async lock queue's and the chaos run's.
 * Each test turns what it observed into holds (zkt_hold: who held, with
 * which token, from when to when) and asks zkt_check_holds() whether two
 * of them overlapped and whether the tokens rose.  Pure: no server, no
 * process; test_chaos_check runs it on synthetic logs, so that the rule is
 * shown to catch what it must.
 *
 * The rule ("held means held", issue 12): a hold (a leadership, in an
 * election) lasts from the moment its holder was told it holds until the
 * first of: it was told LOST (REVOKED), it called release (resign), its
 * process died.  Two holds may overlap only when the earlier holder could
 * not have been told in time, which a test states as an excuse:
 *   - it was frozen (SIGSTOP) while acquiring or holding, before the
 *     successor's grant: a stopped process is told nothing (the checker's
 *     pauses);
 *   - its session was closed by an operator action: the chaos test's
 *     "expire-holder" fault takes the session over with its password
 *     (zkrc_ensemble_expire_session) and closes it, which the servers carry
 *     out at once, with no lease to wait for - as an administrator's
 *     kill-session would (the checker's expiries);
 *   - the test says so for that hold (zkt_hold.excuse), for an overlap of
 *     the test's own making, with the test's comment saying why;
 *   - it was killed (SIGKILL): then its hold ended at its death, which is
 *     before anyone else's grant, so that case needs no excuse.
 * Everything else - a holder partitioned from the ensemble (a black-holed
 * or dropped proxy), a session the servers expired, a member that died or
 * froze under it - must have told the holder LOST before its successor was
 * told it holds.  The tests without faults give no excuse at all.
 *
 * Tokens: no two holds have the same token, and a hold that began after
 * another ended has a higher token.  A test may ask for more
 * (zkt_checker.tokens_in_grant_order).  All times are microseconds of one
 * clock (CLOCK_MONOTONIC of one machine: g_get_monotonic_time(),
 * chaos_now_us()), in the test and in every process it started.
 */
#ifndef ZKT_HOLDS_H
#define ZKT_HOLDS_H

#include <stdint.h>

#include <glib.h>

typedef struct zkt_hold {
  int instance;     /* who held: a worker, a member, a slot */
  int n;            /* its n-th hold (for messages) */
  const char *name; /* who, in messages (NULL: "w<instance>") */
  void *owner;      /* the test's own record of who, for its callbacks */
  int64_t token;    /* -1: lost before the holder could read it */
  int64_t asked;    /* when its acquisition (its wait to be elected) began */
  int64_t acquired; /* when its holder was told it holds */
  int64_t lost;     /* when told LOST / REVOKED for this token; 0: never */
  int64_t released; /* when release / resign was called; 0: never */
  int64_t end;      /* the first of lost, released, its death */
  char rel[32];     /* release's result, "" when it never came */
  /* Not NULL: why this hold may still last when a later one is granted
   * (an overlap the test itself causes, explained where it is set). */
  const char *excuse;
  /* A read-write lock's reader: it may overlap other shared holds (not an
   * exclusive one), and the tokens of two shared holds may come in any
   * order (readers admitted together hear of it in any order). */
  gboolean shared;
  gboolean counted_overlap;
} zkt_hold;

/* Something done to one instance (a freeze, an operator's close). */
typedef struct zkt_span {
  int instance;
  int64_t start, end;
} zkt_span;

typedef struct zkt_checker {
  /* Input: what was done to the holders (arrays of zkt_span, NULL for
   * none), and (optional, set after init) when proxies were black-holed:
   * spans whose instance is -1, for all. */
  GArray *pauses, *expiries, *partitions;
  /* Optional, set after init: tokens rise in the order of the grants, not
   * only from a hold to the holds that began after it ended - except for a
   * holder granted again the token it had, with no grant between (an
   * election's leader that took its session back). */
  gboolean tokens_in_grant_order;
  /* Optional, set after init: how many holds may run at once (a
   * semaphore's N); 0 or 1: one at a time (readers beside readers aside).
   * The rule above, generalised: a grant while that many still run is a
   * violation unless excuses cover enough of them to leave room - the
   * excused ones do not count, and the others are reported only when they
   * alone fill the capacity ("N+1 holders at once"). */
  int capacity;
  /* Optional: judge the tokens only, not the overlaps (a test that
   * provokes overlaps to measure them). */
  gboolean tokens_only;
  /* Optional: called for every overlapping pair (@p a granted first,
   * @p excuse NULL when nothing excused it), e.g. to print the holders'
   * lines around it. */
  void (*on_overlap)(const zkt_hold *a, const zkt_hold *b, const char *excuse,
                     void *ctx);
  void *ctx;
  /* Output */
  GPtrArray *violations;                    /* of char *: one line each */
  int overlap_violations, token_violations; /* violations, by rule */
  int overlaps, overlapping_holds;
  int excused_frozen, excused_closed; /* overlapping pairs, by excuse */
  int excused_own;                    /* ... excused by zkt_hold.excuse */
  int64_t worst_excused_own;          /* the longest of those (µs) */
  /* The smallest gap between the end of every earlier hold and a grant
   * that overlapped none (µs; G_MAXINT64 when there was none). */
  int64_t closest;
  /* Holds ended by LOST (no freeze, no operator close) that have a
   * successor: the successor's grant minus the LOST, in microseconds. */
  GArray *lost_margins; /* of int64_t */
  /* The same, for holds told LOST while a partition was on: the margin
   * the lease leaves to a holder cut off from the ensemble. */
  GArray *partition_margins; /* of int64_t */
} zkt_checker;

/* @p pauses and @p expiries (of zkt_span) may be NULL. */
void zkt_checker_init(zkt_checker *c, GArray *pauses, GArray *expiries);
void zkt_checker_clear(zkt_checker *c);

/* A hold of @p instance with @p token from @p acquired to @p end (what the
 * tests without a log write), appended to @p holds (of zkt_hold); returns
 * it, for the optional fields. */
zkt_hold *zkt_hold_add(GArray *holds, int instance, int64_t token,
                       int64_t acquired, int64_t end);

/* The rule above, and the tokens.  @p all: zkt_hold *, sorted here by
 * grant time.  Returns the number of violations. */
int zkt_check_holds(zkt_checker *c, GPtrArray *all);

/* zkt_check_holds() over every hold of @p holds (of zkt_hold), with no
 * excuse but the holds' own, the violations printed on stderr.  Returns
 * the number of violations. */
int zkt_check_hold_array(zkt_checker *c, GArray *holds);

/* How many pairs of @p holds (of zkt_hold) overlapped in time, readers
 * beside readers aside: what a one-at-a-time checker would call overlaps.
 * The control of a test that allows several holds at once (capacity):
 * that they did happen. */
int zkt_overlapping_pairs(GArray *holds);

/* The holds a process wrote to @p file, one a line: "WHO TOKEN ACQUIRED
 * END" (decimal; times of CLOCK_MONOTONIC in microseconds, as
 * zkt_hold_now_us() reads it), appended to @p holds.  Returns how many,
 * or -1 when @p file cannot be read. */
int zkt_read_hold_log(const char *file, GArray *holds);

/* The holds of @p file (zkt_read_hold_log()) judged with no excuse and
 * tokens rising from grant to grant; *violations gets the number found
 * (printed on stderr).  Returns how many holds, or -1 (no file). */
int zkt_check_hold_log(const char *file, int *violations);

/* CLOCK_MONOTONIC in microseconds: the clock of every hold. */
int64_t zkt_hold_now_us(void);

/* Minimum and median of @p margins (c->lost_margins or
 * c->partition_margins; 0 when empty). */
void zkt_margin_stats(GArray *margins, int64_t *min, int64_t *median);

#endif /* ZKT_HOLDS_H */
