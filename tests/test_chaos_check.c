/*
 * The shared checker's rule about overlapping holds (holds.c), on
 * synthetic worker logs and on plain holds: no server, no process.  The
 * control of the strict rule: a partitioned holder told LOST only after its
 * successor was told it holds is reported, while the same overlap is
 * excused when the holder was frozen or its session was closed by the
 * operator, and a holder told in time passes with its margin measured.
 * The plain holds the lock, election and async tests build are judged the
 * same way, with the excuse a test gives a hold and the election's rule
 * that tokens rise from grant to grant.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "chaos_log.h"
#include "testutil.h"

#define S 1000000 /* microseconds */

/* The holds of the logs @p w0 (instance 0) and @p w1 (instance 1), which
 * were not killed and whose logs end at 100 s. */
static GArray *holds_of(const char *w0, const char *w1) {
  GArray *holds = g_array_new(FALSE, TRUE, sizeof(zkt_hold));
  chaos_log_holds(w0, 0, 0, 100 * S, holds);
  chaos_log_holds(w1, 1, 0, 100 * S, holds);
  return holds;
}

typedef struct outcome {
  int violations, overlaps, frozen, closed, margins, cut_margins;
  int64_t margin_min;
} outcome;

/* Check the holds of two logs with the faults given: a pause of instance 0
 * from @p pause_from to @p pause_to and an operator close of its session at
 * @p close_at (seconds; 0: none).  Every proxy is black-holed from 3 s to
 * 3.8 s, which counts only for the margins. */
static outcome check(const char *w0, const char *w1, int pause_from,
                     int pause_to, int close_at) {
  GArray *holds = holds_of(w0, w1);
  GArray *pauses = g_array_new(FALSE, FALSE, sizeof(zkt_span));
  GArray *expiries = g_array_new(FALSE, FALSE, sizeof(zkt_span));
  if (pause_to) {
    zkt_span p = {0, (int64_t)pause_from * S, (int64_t)pause_to * S};
    g_array_append_val(pauses, p);
  }
  if (close_at) {
    zkt_span x = {0, (int64_t)close_at * S, (int64_t)close_at * S + 1000};
    g_array_append_val(expiries, x);
  }
  GPtrArray *all = g_ptr_array_new();
  for (guint i = 0; i < holds->len; i++)
    g_ptr_array_add(all, &g_array_index(holds, zkt_hold, i));
  GArray *cuts = g_array_new(FALSE, FALSE, sizeof(zkt_span));
  zkt_span cut = {-1, 3 * S, 3 * S + 800000};
  g_array_append_val(cuts, cut);
  zkt_checker c;
  zkt_checker_init(&c, pauses, expiries);
  c.partitions = cuts;
  zkt_check_holds(&c, all);
  for (guint i = 0; i < c.violations->len; i++)
    printf("  reported: %s\n", (char *)g_ptr_array_index(c.violations, i));
  int64_t median;
  outcome o = {(int)c.violations->len,
               c.overlaps,
               c.excused_frozen,
               c.excused_closed,
               (int)c.lost_margins->len,
               (int)c.partition_margins->len,
               0};
  zkt_margin_stats(c.lost_margins, &o.margin_min, &median);
  zkt_checker_clear(&c);
  g_ptr_array_free(all, TRUE);
  g_array_free(pauses, TRUE);
  g_array_free(expiries, TRUE);
  g_array_free(cuts, TRUE);
  g_array_free(holds, TRUE);
  return o;
}

/* w0 holds token 5 from 1 s; cut off, it is told LOST at 5 s; w1 was told
 * it holds (token 6) at 4 s. */
static const char late_w0[] = "500000 START 1\n"
                              "1000000 ACQ 1 ZKRC_OK 5 1000 0\n"
                              "1100000 WRITE 1 1 5 1 OK 900\n"
                              "5000000 LOCKEVENT lost ZKRC_ELEASE 5 0\n"
                              "5100000 WRITE 1 2 5 0 REFUSED 800\n"
                              "5200000 REL 1 ZKRC_ELOCKLOST 300 0\n";
static const char w1_at_4s[] = "500000 START 2\n"
                               "4000000 ACQ 1 ZKRC_OK 6 3000000 0\n"
                               "4100000 WRITE 1 1 6 1 OK 900\n"
                               "4200000 REL 1 ZKRC_OK 1000 0\n";

static void test_partitioned_holder_told_late_is_caught(void) {
  outcome o = check(late_w0, w1_at_4s, 0, 0, 0);
  CU_ASSERT_EQUAL(o.violations, 1);
  CU_ASSERT_EQUAL(o.overlaps, 1);
  CU_ASSERT_EQUAL(o.frozen + o.closed, 0);
}

static void test_holder_never_told_is_caught(void) {
  /* Partitioned, never told, still working when the log ends. */
  static const char w0[] = "1000000 ACQ 1 ZKRC_OK 5 1000 0\n"
                           "9000000 WRITE 1 2 5 1 REFUSED 800\n";
  outcome o = check(w0, w1_at_4s, 0, 0, 0);
  CU_ASSERT_EQUAL(o.violations, 1);
}

static void test_holder_told_in_time_passes(void) {
  static const char w0[] = "1000000 ACQ 1 ZKRC_OK 5 1000 0\n"
                           "3500000 LOCKEVENT lost ZKRC_ELEASE 5 0\n"
                           "3600000 REL 1 ZKRC_ELOCKLOST 300 0\n";
  outcome o = check(w0, w1_at_4s, 0, 0, 0);
  CU_ASSERT_EQUAL(o.violations, 0);
  CU_ASSERT_EQUAL(o.overlaps, 0);
  CU_ASSERT_EQUAL(o.margins, 1);
  CU_ASSERT_EQUAL(o.cut_margins, 1); /* told at 3.5 s, in the partition */
  CU_ASSERT_EQUAL(o.margin_min, S / 2);
}

static void test_frozen_holder_is_excused(void) {
  outcome o = check(late_w0, w1_at_4s, 2, 5, 0);
  CU_ASSERT_EQUAL(o.violations, 0);
  CU_ASSERT_EQUAL(o.frozen, 1);
}

static void test_pause_after_the_successor_excuses_nothing(void) {
  outcome o = check(late_w0, w1_at_4s, 4, 6, 0);
  CU_ASSERT_EQUAL(o.violations, 1);
}

static void test_operator_close_is_excused(void) {
  outcome o = check(late_w0, w1_at_4s, 0, 0, 2);
  CU_ASSERT_EQUAL(o.violations, 0);
  CU_ASSERT_EQUAL(o.closed, 1);
}

static void test_leaders_revoked_late_are_caught(void) {
  /* Election logs: ELECTED is an ACQ of no duration, REVOKED a LOCKEVENT
   * lost, a resignation after it a REL saying ZKRC_ENOTLEADER. */
  static const char w0[] = "1000000 ACQ 1 ZKRC_OK 5 0 0\n"
                           "4500000 LOCKEVENT lost ZKRC_ELEASE 5 0\n"
                           "4600000 REL 1 ZKRC_ENOTLEADER 100 0\n";
  static const char w1[] = "4000000 ACQ 1 ZKRC_OK 6 0 0\n"
                           "4200000 REL 1 ZKRC_OK 100 0\n";
  outcome o = check(w0, w1, 0, 0, 0);
  CU_ASSERT_EQUAL(o.violations, 1);
}

static void test_tokens_must_grow(void) {
  static const char w0[] = "1000000 ACQ 1 ZKRC_OK 7 1000 0\n"
                           "2000000 REL 1 ZKRC_OK 300 0\n";
  static const char w1[] = "3000000 ACQ 1 ZKRC_OK 6 1000 0\n"
                           "3500000 REL 1 ZKRC_OK 300 0\n";
  outcome o = check(w0, w1, 0, 0, 0);
  CU_ASSERT_EQUAL(o.violations, 1);
  CU_ASSERT_EQUAL(o.overlaps, 0);
}

static void test_lost_before_acquire_returned_held_nothing(void) {
  /* The LOST came before acquire returned: an empty hold, no overlap. */
  static const char w0[] = "3900000 LOCKEVENT lost ZKRC_ELEASE 5 0\n"
                           "4500000 ACQ 1 ZKRC_OK 5 3000 0\n"
                           "4900000 REL 1 ZKRC_ELOCKLOST 300 0\n";
  static const char w1[] = "4600000 ACQ 1 ZKRC_OK 6 100000 0\n"
                           "4800000 REL 1 ZKRC_OK 300 0\n";
  outcome o = check(w0, w1, 0, 0, 0);
  CU_ASSERT_EQUAL(o.overlaps, 0);
  CU_ASSERT_EQUAL(o.violations, 0);
}

/* ------------------------------ read-write locks and semaphores (capacity) */

/* The holds of the logs @p logs (instance i for the i-th, none killed, all
 * ending at 100 s) judged with @p capacity, instance 0 frozen from
 * @p pause_from to @p pause_to (seconds; 0, 0: never).  The checker is
 * kept in *c (clear it). */
static int check_many(const char *const *logs, int n, int capacity,
                      int pause_from, int pause_to, zkt_checker *c) {
  GArray *holds = g_array_new(FALSE, TRUE, sizeof(zkt_hold));
  for (int i = 0; i < n; i++)
    chaos_log_holds(logs[i], i, 0, 100 * S, holds);
  GArray *pauses = g_array_new(FALSE, FALSE, sizeof(zkt_span));
  if (pause_to) {
    zkt_span p = {0, (int64_t)pause_from * S, (int64_t)pause_to * S};
    g_array_append_val(pauses, p);
  }
  zkt_checker_init(c, pauses, NULL);
  c->capacity = capacity;
  int violations = zkt_check_hold_array(c, holds); /* printed there */
  c->pauses = NULL;
  g_array_free(pauses, TRUE);
  g_array_free(holds, TRUE);
  return violations;
}

/* Read-write lock logs: the side is the ACQ record's last field. */
static const char reader_1_to_5[] = "1000000 ACQ 1 ZKRC_OK 5 1000 0 read\n"
                                    "1100000 READ 1 1 5 1 NONE 900\n"
                                    "5000000 REL 1 ZKRC_OK 300 0\n";
static const char reader_2_to_4[] = "2000000 ACQ 1 ZKRC_OK 6 1000 0 read\n"
                                    "4000000 REL 1 ZKRC_OK 300 0\n";
/* A writer told it holds at 3 s, while both readers still read. */
static const char writer_at_3s[] = "3000000 ACQ 1 ZKRC_OK 7 2000000 0 write\n"
                                   "3100000 WRITE 1 1 7 1 OK 900\n"
                                   "3500000 REL 1 ZKRC_OK 300 0\n";
static const char writer_at_6s[] = "6000000 ACQ 1 ZKRC_OK 7 5000000 0 write\n"
                                   "6500000 REL 1 ZKRC_OK 300 0\n";

static void test_readers_share_a_writer_does_not(void) {
  zkt_checker c;
  /* Two readers together, then a writer after both: no violation. */
  const char *const fine[] = {reader_1_to_5, reader_2_to_4, writer_at_6s};
  CU_ASSERT_EQUAL(check_many(fine, 3, 1, 0, 0, &c), 0);
  CU_ASSERT_EQUAL(c.overlaps, 0);
  zkt_checker_clear(&c);
  /* A writer granted while the two readers hold: each is reported. */
  const char *const bad[] = {reader_1_to_5, reader_2_to_4, writer_at_3s};
  CU_ASSERT_EQUAL(check_many(bad, 3, 1, 0, 0, &c), 2);
  CU_ASSERT_EQUAL(c.overlap_violations, 2);
  CU_ASSERT(strstr(g_ptr_array_index(c.violations, 0), "two holders at once") !=
            NULL);
  zkt_checker_clear(&c);
  /* The same log without sides: three exclusive holds overlapping. */
  static const char plain[] = "3000000 ACQ 1 ZKRC_OK 7 2000000 0\n"
                              "3500000 REL 1 ZKRC_OK 300 0\n";
  const char *const no_sides[] = {"1000000 ACQ 1 ZKRC_OK 5 1000 0\n"
                                  "5000000 REL 1 ZKRC_OK 300 0\n",
                                  reader_2_to_4, plain};
  CU_ASSERT_EQUAL(check_many(no_sides, 3, 1, 0, 0, &c), 3);
  zkt_checker_clear(&c);
}

static void test_writer_beside_a_frozen_reader_is_excused(void) {
  /* Reader 0 frozen from 2 s to 4 s (its session expired meanwhile); the
   * writer is granted at 3 s, after reader 1 ended. */
  static const char reader_2_to_2_5[] = "2000000 ACQ 1 ZKRC_OK 6 1000 0 read\n"
                                        "2500000 REL 1 ZKRC_OK 300 0\n";
  const char *const logs[] = {reader_1_to_5, reader_2_to_2_5, writer_at_3s};
  zkt_checker c;
  CU_ASSERT_EQUAL(check_many(logs, 3, 1, 2, 4, &c), 0);
  CU_ASSERT_EQUAL(c.excused_frozen, 1);
  zkt_checker_clear(&c);
  /* Frozen only after the writer's grant: no excuse. */
  CU_ASSERT_EQUAL(check_many(logs, 3, 1, 4, 5, &c), 1);
  zkt_checker_clear(&c);
}

/* Semaphore logs, two leases: holders from 1 s to 5 s, 2 s to 6 s, and a
 * third told it holds at 3 s. */
static const char lease_1_to_5[] = "1000000 ACQ 1 ZKRC_OK 5 1000 0\n"
                                   "1100000 WRITE 1 1 5 1 OK 900\n"
                                   "5000000 REL 1 ZKRC_OK 300 0\n";
static const char lease_2_to_6[] = "2000000 ACQ 1 ZKRC_OK 6 1000 0\n"
                                   "6000000 REL 1 ZKRC_OK 300 0\n";
static const char lease_at_3s[] = "3000000 ACQ 1 ZKRC_OK 7 2000000 0\n"
                                  "3500000 REL 1 ZKRC_OK 300 0\n";

static void test_n_plus_one_leases_are_caught(void) {
  zkt_checker c;
  const char *const two[] = {lease_1_to_5, lease_2_to_6};
  CU_ASSERT_EQUAL(check_many(two, 2, 2, 0, 0, &c), 0);
  CU_ASSERT_EQUAL(c.overlaps, 0);
  zkt_checker_clear(&c);
  const char *const three[] = {lease_1_to_5, lease_2_to_6, lease_at_3s};
  CU_ASSERT_EQUAL(check_many(three, 3, 2, 0, 0, &c), 2);
  CU_ASSERT_EQUAL(c.overlap_violations, 2);
  CU_ASSERT(strstr(g_ptr_array_index(c.violations, 0),
                   "3 holders at once (at most 2)") != NULL);
  zkt_checker_clear(&c);
  /* With room for three, the same holds pass. */
  CU_ASSERT_EQUAL(check_many(three, 3, 3, 0, 0, &c), 0);
  zkt_checker_clear(&c);
}

/* A lease holder partitioned and told LOST only after the third lease was
 * granted is caught; told in time, it passes; frozen, it is excused - and
 * then its co-holder, which held a lease of its own all along, is not
 * blamed for the overlap. */
static void test_lease_holders_cut_off_and_frozen(void) {
  static const char late[] = "1000000 ACQ 1 ZKRC_OK 5 1000 0\n"
                             "4000000 LOCKEVENT lost ZKRC_ELEASE 5 0\n"
                             "4100000 REL 1 ZKRC_ELOCKLOST 300 0\n";
  static const char in_time[] = "1000000 ACQ 1 ZKRC_OK 5 1000 0\n"
                                "2900000 LOCKEVENT lost ZKRC_ELEASE 5 0\n"
                                "4100000 REL 1 ZKRC_ELOCKLOST 300 0\n";
  zkt_checker c;
  const char *const cut[] = {late, lease_2_to_6, lease_at_3s};
  CU_ASSERT_EQUAL(check_many(cut, 3, 2, 0, 0, &c), 2);
  zkt_checker_clear(&c);
  const char *const told[] = {in_time, lease_2_to_6, lease_at_3s};
  CU_ASSERT_EQUAL(check_many(told, 3, 2, 0, 0, &c), 0);
  CU_ASSERT_EQUAL(c.lost_margins->len, 1);
  /* Measured to the third grant (the one it made room for), not to the
   * second holder's, which needed no room. */
  CU_ASSERT_EQUAL(g_array_index(c.lost_margins, int64_t, 0), S / 10);
  zkt_checker_clear(&c);
  CU_ASSERT_EQUAL(check_many(cut, 3, 2, 2, 4, &c), 0);
  CU_ASSERT_EQUAL(c.excused_frozen, 1);
  CU_ASSERT_EQUAL(c.overlaps, 1);
  zkt_checker_clear(&c);
}

/* ---------------------------------------- holds the plain tests build */

/* zkt_check_holds() over @p holds with the election's token rule (rising
 * from grant to grant) when @p grant_order; the checker kept in *c. */
static int check_plain(GArray *holds, gboolean grant_order, zkt_checker *c) {
  zkt_checker_init(c, NULL, NULL);
  c->tokens_in_grant_order = grant_order;
  return zkt_check_hold_array(c, holds);
}

static void test_plain_handovers_pass(void) {
  GArray *holds = g_array_new(FALSE, TRUE, sizeof(zkt_hold));
  zkt_hold_add(holds, 0, 5, 1 * S, 2 * S);
  zkt_hold_add(holds, 1, 6, 2 * S + 300, 3 * S);
  zkt_hold_add(holds, 0, 8, 3 * S + 100, 4 * S);
  zkt_checker c;
  CU_ASSERT_EQUAL(check_plain(holds, TRUE, &c), 0);
  CU_ASSERT_EQUAL(c.overlaps, 0);
  CU_ASSERT_EQUAL(c.closest, 100);
  zkt_checker_clear(&c);
  g_array_free(holds, TRUE);
}

/* Shared holds (readers) may overlap each other, and their tokens come in
 * any order; a writer overlapping a reader is caught, and so is a writer
 * whose token is not above those of the holds that ended before it. */
static void test_shared_holds(void) {
  GArray *holds = g_array_new(FALSE, TRUE, sizeof(zkt_hold));
  zkt_hold_add(holds, 0, 6, 1 * S, 3 * S)->shared = TRUE;
  zkt_hold_add(holds, 1, 5, 2 * S, 4 * S)->shared = TRUE;
  /* After reader 0 ended, with a lower token: readers come in any order. */
  zkt_hold_add(holds, 2, 4, 3 * S + S / 2, 4 * S + S / 5)->shared = TRUE;
  zkt_checker c;
  CU_ASSERT_EQUAL(check_plain(holds, FALSE, &c), 0);
  CU_ASSERT_EQUAL(c.overlaps, 0);
  zkt_checker_clear(&c);
  /* A writer granted while reader 2 holds; a writer whose token is not
   * above those of the three readers and of the first writer. */
  zkt_hold_add(holds, 3, 9, 4 * S + S / 10, 5 * S);
  zkt_hold_add(holds, 4, 3, 6 * S, 7 * S);
  CU_ASSERT_EQUAL(check_plain(holds, FALSE, &c), 1 + 4);
  CU_ASSERT_EQUAL(c.overlap_violations, 1);
  CU_ASSERT_EQUAL(c.token_violations, 4);
  zkt_checker_clear(&c);
  g_array_free(holds, TRUE);
}

static void test_plain_overlap_is_caught(void) {
  GArray *holds = g_array_new(FALSE, TRUE, sizeof(zkt_hold));
  zkt_hold_add(holds, 0, 5, 1 * S, 2 * S);
  zkt_hold_add(holds, 1, 6, 2 * S - 1, 3 * S);
  zkt_checker c;
  CU_ASSERT_EQUAL(check_plain(holds, FALSE, &c), 1);
  CU_ASSERT_EQUAL(c.overlap_violations, 1);
  zkt_checker_clear(&c);
  /* ... unless the test only asks about tokens. */
  zkt_checker_init(&c, NULL, NULL);
  c.tokens_only = TRUE;
  CU_ASSERT_EQUAL(zkt_check_hold_array(&c, holds), 0);
  zkt_checker_clear(&c);
  g_array_free(holds, TRUE);
}

static void test_own_excuse_is_counted_not_reported(void) {
  GArray *holds = g_array_new(FALSE, TRUE, sizeof(zkt_hold));
  zkt_hold_add(holds, 0, 5, 1 * S, 2 * S);
  zkt_hold_add(holds, 0, 5, 2 * S + 10, 4 * S)->excuse = "regained";
  zkt_hold_add(holds, 1, 6, 3 * S, 5 * S);
  zkt_checker c;
  CU_ASSERT_EQUAL(check_plain(holds, TRUE, &c), 0);
  CU_ASSERT_EQUAL(c.excused_own, 1);
  CU_ASSERT_EQUAL(c.worst_excused_own, 1 * S);
  zkt_checker_clear(&c);
  /* Without the excuse, the same overlap is reported. */
  g_array_index(holds, zkt_hold, 1).excuse = NULL;
  CU_ASSERT_EQUAL(check_plain(holds, TRUE, &c), 1);
  zkt_checker_clear(&c);
  g_array_free(holds, TRUE);
}

static void test_grant_order_tokens(void) {
  GArray *holds = g_array_new(FALSE, TRUE, sizeof(zkt_hold));
  zkt_checker c;
  /* The same token granted again to its holder right after: allowed in
   * grant order, a duplicate token otherwise. */
  zkt_hold_add(holds, 0, 5, 1 * S, 2 * S);
  zkt_hold_add(holds, 0, 5, 3 * S, 4 * S);
  CU_ASSERT_EQUAL(check_plain(holds, TRUE, &c), 0);
  zkt_checker_clear(&c);
  CU_ASSERT(check_plain(holds, FALSE, &c) > 0);
  zkt_checker_clear(&c);
  /* ... but not to another, nor after someone else's grant. */
  zkt_hold_add(holds, 1, 5, 5 * S, 6 * S);
  zkt_hold_add(holds, 0, 5, 7 * S, 8 * S);
  CU_ASSERT_EQUAL(check_plain(holds, TRUE, &c), 2);
  CU_ASSERT_EQUAL(c.token_violations, 2);
  zkt_checker_clear(&c);
  g_array_free(holds, TRUE);
  /* Overlapping holds: tokens must still rise from grant to grant. */
  holds = g_array_new(FALSE, TRUE, sizeof(zkt_hold));
  zkt_hold_add(holds, 0, 7, 1 * S, 3 * S)->excuse = "test";
  zkt_hold_add(holds, 1, 6, 2 * S, 4 * S);
  CU_ASSERT_EQUAL(check_plain(holds, FALSE, &c), 0);
  zkt_checker_clear(&c);
  CU_ASSERT_EQUAL(check_plain(holds, TRUE, &c), 1);
  zkt_checker_clear(&c);
  g_array_free(holds, TRUE);
}

static void test_hold_log_is_read_and_judged(void) {
  /* As lockworker writes it: who, token, acquired, end. */
  char *file = NULL;
  int fd = g_file_open_tmp("zkt-holds-XXXXXX", &file, NULL);
  CU_ASSERT_FATAL(fd >= 0);
  close(fd);
  CU_ASSERT_FATAL(g_file_set_contents(file,
                                      "101 5 1000000 2000000\n"
                                      "102 6 2000100 3000000\n"
                                      "101 7 2999000 4000000\n",
                                      -1, NULL));
  int violations = -1;
  CU_ASSERT_EQUAL(zkt_check_hold_log(file, &violations), 3);
  CU_ASSERT_EQUAL(violations, 1); /* the third began 1 ms early */
  unlink(file);
  CU_ASSERT_EQUAL(zkt_check_hold_log(file, &violations), -1);
  g_free(file);
}

static void add_suites(void) {
  ZKT_SUITE(
      "chaos checker",
      {"partitioned holder told late is caught",
       test_partitioned_holder_told_late_is_caught},
      {"holder never told is caught", test_holder_never_told_is_caught},
      {"holder told in time passes", test_holder_told_in_time_passes},
      {"frozen holder is excused", test_frozen_holder_is_excused},
      {"pause after the successor excuses nothing",
       test_pause_after_the_successor_excuses_nothing},
      {"operator close is excused", test_operator_close_is_excused},
      {"leaders revoked late are caught", test_leaders_revoked_late_are_caught},
      {"tokens must grow", test_tokens_must_grow},
      {"lost before acquire returned held nothing",
       test_lost_before_acquire_returned_held_nothing});
  ZKT_SUITE("capacity",
            {"readers share, a writer does not",
             test_readers_share_a_writer_does_not},
            {"writer beside a frozen reader is excused",
             test_writer_beside_a_frozen_reader_is_excused},
            {"N+1 leases are caught", test_n_plus_one_leases_are_caught},
            {"lease holders cut off and frozen",
             test_lease_holders_cut_off_and_frozen});
  ZKT_SUITE("plain holds", {"plain handovers pass", test_plain_handovers_pass},
            {"plain overlap is caught", test_plain_overlap_is_caught},
            {"shared holds", test_shared_holds},
            {"own excuse is counted, not reported",
             test_own_excuse_is_counted_not_reported},
            {"grant order tokens", test_grant_order_tokens},
            {"hold log is read and judged", test_hold_log_is_read_and_judged});
}

int main(void) { return zkt_run("test_chaos_check", add_suites); }
