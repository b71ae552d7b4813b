/*
 * Time leases (zkrecipes/timelease.h), kazoo's NonBlockingLease and
 * MultiNonBlockingLease: the record and the decision as pure functions
 * (no server), then on a real single-member ensemble: one holder per
 * period among contenders deciding at once (judged by holds.h's checker,
 * with a control it catches), renewal, the multi form's N, malformed and
 * foreign records refused with nothing changed, the decision's lock
 * (kazoo's, on the contender queue), the write refused when our lock node
 * went (ZKRC_ELOCKLOST), the multi form taking a free slot before waiting
 * for a busy one, bad input, and kazoo 2.8's leases both ways.  The clock is the options' own (simulated periods), so no
 * test waits for a lease to run out.
 */
#include "config.h"

#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "holds.h"
#include "recipes/timelease_decide.h"
#include "testutil.h"
#include "zkrecipes/timelease.h"

#define KAZOO_LEASE TOP_SRCDIR "/tests/peers/kazoo_lease.py"

/* A moment of the simulated clocks: 2027-01-15T08:00:00 UTC. */
#define T0 INT64_C(1800000000000)

static int64_t sim_clock(void *arg) { return *(const int64_t *)arg; }

static void sim_options(zkrc_time_lease_options *o, const char *ident,
                        int64_t *now) {
  zkrc_time_lease_options_init(o);
  o->identifier = ident;
  o->clock = sim_clock;
  o->clock_arg = now;
}

/* Is @p dir/lease_holder kazoo's record of @p holder until @p end? */
static int record_is(const char *dir, const char *holder, const char *end) {
  zhandle_t *zh = zkt_raw();
  char *node = g_strdup_printf("%s/lease_holder", dir);
  char *want = g_strdup_printf(
      "{\"version\": 1, \"holder\": \"%s\", \"end\": \"%s\"}", holder, end);
  int is = zkt_data_is(zh, node, want, strlen(want));
  zookeeper_close(zh);
  g_free(want);
  g_free(node);
  return is;
}

/* ------------------------------------------------- pure: the record */

static zkrc_time_lease_outcome decide(const char *json, const char *ident,
                                      int64_t now, int *err) {
  zkrc__lease_record rec;
  *err = zkrc__lease_record_parse(json, strlen(json), &rec);
  zkrc_time_lease_outcome o = zkrc__lease_decide(&rec, ident, now);
  zkrc__lease_record_clear(&rec);
  return o;
}

/* kazoo's rule, row by row: another's running end refuses, its end
 * reached (now == end) admits, our own renews while running; no record
 * admits; another version refuses whatever else it holds. */
static void test_decision(void) {
  const char *rec =
      "{\"version\": 1, \"holder\": \"a\", \"end\": \"2027-01-15T08:00:10\"}";
  int64_t end = T0 + 10000;
  int err;
  CU_ASSERT_EQUAL(decide(rec, "b", end - 1, &err), ZKRC_TIME_LEASE_HELD);
  ZKT_ASSERT_RC(ZKRC_OK, err);
  CU_ASSERT_EQUAL(decide(rec, "b", end, &err), ZKRC_TIME_LEASE_OBTAINED);
  CU_ASSERT_EQUAL(decide(rec, "a", end - 1, &err), ZKRC_TIME_LEASE_RENEWED);
  CU_ASSERT_EQUAL(decide(rec, "a", end, &err), ZKRC_TIME_LEASE_OBTAINED);
  CU_ASSERT_EQUAL(zkrc__lease_decide(NULL, "a", end), ZKRC_TIME_LEASE_OBTAINED);
  /* Another version: refused before anything else is read. */
  CU_ASSERT_EQUAL(decide("{\"version\": 2}", "a", end, &err),
                  ZKRC_TIME_LEASE_OTHER_VERSION);
  ZKT_ASSERT_RC(ZKRC_OK, err);
  CU_ASSERT_EQUAL(decide("{\"version\": \"1\", \"end\": 5}", "a", end, &err),
                  ZKRC_TIME_LEASE_OTHER_VERSION);
  /* Python compares by value: 1.0 is version 1. */
  CU_ASSERT_EQUAL(decide("{\"version\": 1.0, \"holder\": \"a\", \"end\": "
                         "\"2027-01-15T08:00:10\"}",
                         "b", end - 1, &err),
                  ZKRC_TIME_LEASE_HELD);
  /* Python's strptime takes one-digit fields. */
  CU_ASSERT_EQUAL(decide("{\"version\": 1, \"holder\": \"a\", \"end\": "
                         "\"2027-1-15T8:0:10\"}",
                         "b", end - 1, &err),
                  ZKRC_TIME_LEASE_HELD);
  ZKT_ASSERT_RC(ZKRC_OK, err);
}

/* What kazoo cannot read is ZKRC_EBADNODE: not JSON, not an object, no
 * version, a version-1 record without a string holder or a readable end
 * (kazoo's strptime format, whole: no zone, no fraction, no space). */
static void test_malformed_records(void) {
  static const char *const bad[] = {
      "",
      "not json",
      "[1]",
      "{\"holder\": \"a\", \"end\": \"2027-01-15T08:00:10\"}",
      "{\"version\": 1, \"end\": \"2027-01-15T08:00:10\"}",
      "{\"version\": 1, \"holder\": 7, \"end\": \"2027-01-15T08:00:10\"}",
      "{\"version\": 1, \"holder\": \"a\"}",
      "{\"version\": 1, \"holder\": \"a\", \"end\": \"2027-01-15 08:00:10\"}",
      "{\"version\": 1, \"holder\": \"a\", \"end\": \"2027-01-15T08:00:10Z\"}",
      "{\"version\": 1, \"holder\": \"a\", \"end\": \"2027-01-15T08:00:10.5\"}",
      "{\"version\": 1, \"holder\": \"a\", \"end\": \"2027-02-30T08:00:10\"}",
      "{\"version\": 1, \"holder\": \"a\", \"end\": \"2027-01-15T24:00:00\"}",
      "{\"version\": 1, \"holder\": \"a\", \"end\": \"27-01-15T08:00:10\"}",
      "{\"version\": 1, \"holder\": \"a\", \"end\": 1800000010}",
  };
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
    zkrc__lease_record rec;
    int err = zkrc__lease_record_parse(bad[i], strlen(bad[i]), &rec);
    if (err != ZKRC_EBADNODE)
      fprintf(stderr, "accepted: %s\n", bad[i]);
    CU_ASSERT_EQUAL(err, ZKRC_EBADNODE);
    CU_ASSERT_PTR_NULL(rec.holder);
  }
  zkrc__lease_record rec;
  CU_ASSERT_EQUAL(zkrc__lease_record_parse("\xff", 1, &rec), ZKRC_EBADNODE);
  CU_ASSERT_EQUAL(zkrc__lease_record_parse(NULL, 0, &rec), ZKRC_EBADNODE);
}

/* Our record is what Python's json.dumps writes for the same dict
 * (ensure_ascii escapes included; the expected bytes are Python 3's), and
 * reads back. */
static void test_record_format(void) {
  const char *ident = "a\"b\\\xc3\xa9\xf0\x9f\x98\x80\x7f\x01\n";
  size_t len;
  char *json = zkrc__lease_record_format(ident, T0 + 10000, &len);
  const char *python = "{\"version\": 1, \"holder\": "
                       "\"a\\\"b\\\\\\u00e9\\ud83d\\ude00\\u007f\\u0001\\n\", "
                       "\"end\": \"2027-01-15T08:00:10\"}";
  CU_ASSERT_STRING_EQUAL(json, python);
  CU_ASSERT_EQUAL(len, strlen(python));
  zkrc__lease_record rec;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc__lease_record_parse(json, len, &rec));
  CU_ASSERT_TRUE(rec.current);
  CU_ASSERT_STRING_EQUAL(rec.holder, ident);
  CU_ASSERT_EQUAL(rec.end_ms, T0 + 10000);
  zkrc__lease_record_clear(&rec);
  g_free(json);
}

/* The end is rounded up to a whole second (kazoo truncates): never before
 * the duration; bounded by the format's four-digit year. */
static void test_end_rounding(void) {
  int64_t end = 0;
  CU_ASSERT_TRUE(zkrc__lease_end(T0, 1000, &end));
  CU_ASSERT_EQUAL(end, T0 + 1000);
  CU_ASSERT_TRUE(zkrc__lease_end(T0 + 500, 1, &end));
  CU_ASSERT_EQUAL(end, T0 + 1000);
  CU_ASSERT_TRUE(zkrc__lease_end(T0 + 1, 1000, &end));
  CU_ASSERT_EQUAL(end, T0 + 2000);
  CU_ASSERT_FALSE(zkrc__lease_end(T0, 0, &end));
  CU_ASSERT_FALSE(zkrc__lease_end(T0, -5, &end));
  CU_ASSERT_FALSE(zkrc__lease_end(T0, INT64_MAX, &end));
  CU_ASSERT_FALSE(zkrc__lease_end(-1, 1000, &end));
  char buf[20];
  zkrc__lease_format_time(T0, buf);
  CU_ASSERT_STRING_EQUAL(buf, "2027-01-15T08:00:00");
  int64_t ms = 0;
  CU_ASSERT_TRUE(zkrc__lease_parse_time("9999-12-31T23:59:59", &ms));
  CU_ASSERT_FALSE(zkrc__lease_end(ms - 1000, 2000, &end));
  CU_ASSERT_STRING_EQUAL(zkrc_time_lease_outcome_name(ZKRC_TIME_LEASE_HELD),
                         "held");
  CU_ASSERT_STRING_EQUAL(zkrc_time_lease_outcome_name(0), "unknown");
}

/* -------------------------------------------------- contenders at once */

typedef struct contender {
  zkrc_session *s;
  char ident[16];
  const char *path;
  int count; /* 0: the single form */
  int64_t now;
  gboolean skip; /* sit this round out */
  int err;
  zkrc_time_lease_result r;
} contender;

static gpointer contend(gpointer data) {
  contender *c = data;
  zkrc_time_lease_options o;
  sim_options(&o, c->ident, &c->now);
  c->err = c->count
               ? zkrc_time_lease_obtain_multi(c->s, c->path, c->count, 1000, &o,
                                              &c->r, 20000)
               : zkrc_time_lease_obtain(c->s, c->path, 1000, &o, &c->r, 20000);
  return NULL;
}

/* Every contender not told to skip decides at @p now, all at once. */
static void round_at(contender *c, int n, int64_t now) {
  GThread *t[8];
  g_assert(n <= 8);
  for (int i = 0; i < n; i++) {
    zkrc_time_lease_result_clear(&c[i].r);
    c[i].now = now;
    c[i].err = ZKRC_OK;
    t[i] = c[i].skip ? NULL : g_thread_new("contender", contend, &c[i]);
  }
  for (int i = 0; i < n; i++)
    if (t[i])
      g_thread_join(t[i]);
}

static void contenders_start(contender *c, int n, const char *path, int count) {
  for (int i = 0; i < n; i++) {
    memset(&c[i], 0, sizeof c[i]);
    c[i].s = zkt_session();
    g_snprintf(c[i].ident, sizeof c[i].ident, "c%d", i);
    c[i].path = path;
    c[i].count = count;
  }
}

static void contenders_end(contender *c, int n) {
  for (int i = 0; i < n; i++) {
    zkrc_time_lease_result_clear(&c[i].r);
    zkrc_session_close(c[i].s);
  }
}

/* Rounds of four contenders deciding at once, 400 ms of the simulated
 * clock apart, leases of 1 s: each obtained lease is a hold from its
 * round to its end (a renewal extends it), judged by holds.h's checker.
 * The holder tries only every fourth round, so that the lease changes
 * hands (and is renewed in between).
 * With @p cheat_round >= 0, in that round a taker that ignores the end
 * writes its own record over a running lease (raw, as a buggy or
 * clock-skewed peer would) and claims a hold: the control, which the
 * checker must catch.  Returns the checker's violations; *@p holds_out
 * the holds counted. */
static int periods(const char *tag, int cheat_round, int *holds_out) {
  char *path = zkt_path(tag);
  contender c[4];
  contenders_start(c, 4, path, 0);
  zhandle_t *zh = zkt_raw();
  GArray *holds = g_array_new(FALSE, TRUE, sizeof(zkt_hold));
  int holder = -1, cheated = 0;
  int64_t end = 0;
  for (int k = 0; k < 15; k++) {
    int64_t now = T0 + 400 * k;
    for (int i = 0; i < 4; i++)
      c[i].skip = i == holder && k % 4 != 0;
    round_at(c, 4, now);
    int won = 0;
    int64_t before = end;         /* a refusal may come before a renewal */
    for (int i = 0; i < 4; i++) { /* the round's winner first */
      zkrc_time_lease_outcome o = c[i].r.outcome;
      ZKT_ASSERT_RC(ZKRC_OK, c[i].err);
      if (c[i].skip || o == ZKRC_TIME_LEASE_HELD)
        continue;
      CU_ASSERT_TRUE(o == ZKRC_TIME_LEASE_OBTAINED ||
                     o == ZKRC_TIME_LEASE_RENEWED);
      won++;
      end = c[i].r.end_ms;
      CU_ASSERT_EQUAL(c[i].r.remaining_ms, end - now);
      if (o == ZKRC_TIME_LEASE_RENEWED && holds->len > 0) {
        CU_ASSERT_EQUAL(i, holder);
        g_array_index(holds, zkt_hold, holds->len - 1).end = end * 1000;
      } else {
        zkt_hold_add(holds, i, end, now * 1000, end * 1000);
      }
      holder = i;
    }
    for (int i = 0; i < 4; i++) { /* then the refused: a running end */
      if (c[i].skip || c[i].r.outcome != ZKRC_TIME_LEASE_HELD)
        continue;
      int64_t seen = c[i].r.end_ms;
      CU_ASSERT_TRUE(now < seen);
      CU_ASSERT_TRUE(seen == end || seen == before);
    }
    CU_ASSERT_TRUE(won <= 1);
    if (k == cheat_round && now < end) {
      /* The cheater: its record over a lease it saw running. */
      char *holder_path = g_strdup_printf("%s/lease_holder", path);
      size_t len;
      CU_ASSERT_TRUE(zkrc__lease_end(now, 1000, &end));
      char *rec = zkrc__lease_record_format("cheat", end, &len);
      CU_ASSERT_EQUAL(zoo_set(zh, holder_path, rec, (int)len, -1), ZOK);
      zkt_hold_add(holds, 9, now + 1, now * 1000, end * 1000);
      holder = 9;
      cheated = 1;
      g_free(rec);
      g_free(holder_path);
    }
  }
  if (cheat_round >= 0 && !cheated)
    CU_FAIL("CONTROL COULD NOT BE SET UP: no running lease to cheat on");
  zkt_checker ck;
  zkt_checker_init(&ck, NULL, NULL);
  int violations = zkt_check_hold_array(&ck, holds);
  zkt_checker_clear(&ck);
  *holds_out = (int)holds->len;
  g_array_free(holds, TRUE);
  /* Our lock nodes are all gone: only lease_holder is left. */
  CU_ASSERT_TRUE(zkt_wait_children(zh, path, 1, 10000));
  zookeeper_close(zh);
  contenders_end(c, 4);
  g_free(path);
  return violations;
}

static void test_one_holder_per_period(void) {
  int holds = 0;
  CU_ASSERT_EQUAL(periods("timelease-periods", -1, &holds), 0);
  CU_ASSERT_TRUE(holds >= 3); /* it changed hands */
}

static void test_control_cheater_caught(void) {
  int holds = 0;
  CU_ASSERT_TRUE(periods("timelease-cheat", 4, &holds) >= 1);
}

/* Renewal: the holder's second obtain before its end moves the end; the
 * other is refused until the new end, then takes it. */
static void test_renewal_then_takeover(void) {
  char *path = zkt_path("timelease-renew");
  zkrc_session *s = zkt_session();
  int64_t now = T0;
  zkrc_time_lease_options a, b;
  sim_options(&a, "alpha", &now);
  sim_options(&b, "beta", &now);
  zkrc_time_lease_result r;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_time_lease_obtain(s, path, 10000, &a, &r, 5000));
  CU_ASSERT_EQUAL(r.outcome, ZKRC_TIME_LEASE_OBTAINED);
  CU_ASSERT_EQUAL(r.end_ms, T0 + 10000);
  CU_ASSERT_STRING_EQUAL(r.holder, "alpha");
  zkrc_time_lease_result_clear(&r);
  now = T0 + 5000;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_time_lease_obtain(s, path, 10000, &a, &r, 5000));
  CU_ASSERT_EQUAL(r.outcome, ZKRC_TIME_LEASE_RENEWED);
  CU_ASSERT_EQUAL(r.end_ms, T0 + 15000);
  zkrc_time_lease_result_clear(&r);
  now = T0 + 12000; /* past the first end, before the renewed one */
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_time_lease_obtain(s, path, 10000, &b, &r, 5000));
  CU_ASSERT_EQUAL(r.outcome, ZKRC_TIME_LEASE_HELD);
  CU_ASSERT_STRING_EQUAL(r.holder, "alpha");
  CU_ASSERT_EQUAL(r.end_ms, T0 + 15000);
  CU_ASSERT_EQUAL(r.remaining_ms, 3000);
  zkrc_time_lease_result_clear(&r);
  now = T0 + 15000;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_time_lease_obtain(s, path, 1500, &b, &r, 5000));
  CU_ASSERT_EQUAL(r.outcome, ZKRC_TIME_LEASE_OBTAINED);
  CU_ASSERT_EQUAL(r.end_ms, T0 + 17000); /* 16.5 s rounded up */
  zkrc_time_lease_result_clear(&r);
  CU_ASSERT_TRUE(record_is(path, "beta", "2027-01-15T08:00:17"));
  zkrc_session_close(s);
  g_free(path);
}

/* The multi form: six contenders at once on three slots, twice (the
 * second time after every end): three obtain, each a slot of its own,
 * three are refused; the checker, at capacity 3, finds no fourth. */
static void test_multi_admits_n(void) {
  char *path = zkt_path("timelease-multi");
  contender c[6];
  contenders_start(c, 6, path, 3);
  GArray *holds = g_array_new(FALSE, TRUE, sizeof(zkt_hold));
  for (int k = 0; k < 2; k++) {
    int64_t now = T0 + 2000 * k;
    round_at(c, 6, now);
    int won = 0, slots = 0;
    for (int i = 0; i < 6; i++) {
      ZKT_ASSERT_RC(ZKRC_OK, c[i].err);
      if (c[i].r.outcome == ZKRC_TIME_LEASE_OBTAINED) {
        won++;
        slots |= 1 << c[i].r.slot;
        zkt_hold_add(holds, i, now + c[i].r.slot, now * 1000,
                     c[i].r.end_ms * 1000);
      } else {
        CU_ASSERT_EQUAL(c[i].r.outcome, ZKRC_TIME_LEASE_HELD);
      }
    }
    CU_ASSERT_EQUAL(won, 3);
    CU_ASSERT_EQUAL(slots, 7);
  }
  CU_ASSERT_TRUE(zkt_overlapping_pairs(holds) > 0); /* they ran together */
  zkt_checker ck;
  zkt_checker_init(&ck, NULL, NULL);
  ck.capacity = 3;
  CU_ASSERT_EQUAL(zkt_check_hold_array(&ck, holds), 0);
  zkt_checker_clear(&ck);
  g_array_free(holds, TRUE);
  zhandle_t *zh = zkt_raw();
  CU_ASSERT_EQUAL(zkt_child_count(zh, path), 3); /* 0, 1, 2: no slot 3 */
  zookeeper_close(zh);
  contenders_end(c, 6);
  g_free(path);
}

/* A lease_holder we cannot read (not kazoo's JSON) is ZKRC_EBADNODE and
 * stays as it was; one of another version is refused as kazoo refuses it,
 * unchanged too.  The multi form skips either and takes the next slot. */
static void test_foreign_records_unchanged(void) {
  char *path = zkt_path("timelease-foreign");
  char *bad = g_strdup_printf("%s/bad", path);
  char *v2 = g_strdup_printf("%s/v2", path);
  zhandle_t *zh = zkt_raw();
  const char *garbage = "{\"version\": 1, \"holder\": \"x\"}";
  const char *other = "{\"version\": 2, \"holders\": [\"x\"]}";
  char *node = g_strdup_printf("%s/0/lease_holder", bad);
  zkt_make_path(zh, node);
  CU_ASSERT_EQUAL(zoo_set(zh, node, garbage, (int)strlen(garbage), -1), ZOK);
  char *node2 = g_strdup_printf("%s/0/lease_holder", v2);
  zkt_make_path(zh, node2);
  CU_ASSERT_EQUAL(zoo_set(zh, node2, other, (int)strlen(other), -1), ZOK);
  zkrc_session *s = zkt_session();
  int64_t now = T0;
  zkrc_time_lease_options o;
  sim_options(&o, "us", &now);
  zkrc_time_lease_result r;
  char *bad0 = g_strdup_printf("%s/0", bad), *v20 = g_strdup_printf("%s/0", v2);
  ZKT_ASSERT_RC(ZKRC_EBADNODE,
                zkrc_time_lease_obtain(s, bad0, 1000, &o, &r, 5000));
  CU_ASSERT_EQUAL(r.outcome, 0);
  CU_ASSERT_TRUE(zkt_data_is(zh, node, garbage, strlen(garbage)));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_time_lease_obtain(s, v20, 1000, &o, &r, 5000));
  CU_ASSERT_EQUAL(r.outcome, ZKRC_TIME_LEASE_OTHER_VERSION);
  CU_ASSERT_PTR_NULL(r.holder);
  CU_ASSERT_TRUE(zkt_data_is(zh, node2, other, strlen(other)));
  /* Every slot foreign: the multi form obtains nothing. */
  ZKT_ASSERT_RC(ZKRC_EBADNODE,
                zkrc_time_lease_obtain_multi(s, bad, 1, 1000, &o, &r, 5000));
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_time_lease_obtain_multi(s, v2, 1, 1000, &o, &r, 5000));
  CU_ASSERT_EQUAL(r.outcome, ZKRC_TIME_LEASE_OTHER_VERSION);
  /* ... and with a free slot after it, takes that one. */
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_time_lease_obtain_multi(s, bad, 2, 1000, &o, &r, 5000));
  CU_ASSERT_EQUAL(r.outcome, ZKRC_TIME_LEASE_OBTAINED);
  CU_ASSERT_EQUAL(r.slot, 1);
  zkrc_time_lease_result_clear(&r);
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_time_lease_obtain_multi(s, v2, 2, 1000, &o, &r, 5000));
  CU_ASSERT_EQUAL(r.outcome, ZKRC_TIME_LEASE_OBTAINED);
  CU_ASSERT_EQUAL(r.slot, 1);
  zkrc_time_lease_result_clear(&r);
  CU_ASSERT_TRUE(zkt_data_is(zh, node, garbage, strlen(garbage)));
  CU_ASSERT_TRUE(zkt_data_is(zh, node2, other, strlen(other)));
  CU_ASSERT_TRUE(zkt_wait_children(zh, bad0, 1, 10000)); /* no lock left */
  zookeeper_close(zh);
  zkrc_session_close(s);
  g_free(bad0);
  g_free(v20);
  g_free(node);
  g_free(node2);
  g_free(bad);
  g_free(v2);
  g_free(path);
}

/* The decision's lock is kazoo's on the contender queue: a kazoo-named
 * contender node ahead of ours makes ZKRC_NO_WAIT return ZKRC_ELOCKED and
 * a bounded wait ZKRC_ETIMEDOUT, nothing written; once it goes, the lease
 * is taken. */
static void test_busy_lock(void) {
  char *path = zkt_path("timelease-busy");
  zhandle_t *zh = zkt_raw();
  zkt_make_path(zh, path);
  char *prefix =
      g_strdup_printf("%s/0123456789abcdef0123456789abcdef__lock__", path);
  char made[512];
  CU_ASSERT_EQUAL_FATAL(zoo_create(zh, prefix, "kazoo", 5, &ZOO_OPEN_ACL_UNSAFE,
                                   ZOO_EPHEMERAL | ZOO_SEQUENCE, made,
                                   sizeof made),
                        ZOK);
  zkrc_session *s = zkt_session();
  int64_t now = T0;
  zkrc_time_lease_options o;
  sim_options(&o, "us", &now);
  zkrc_time_lease_result r;
  ZKT_ASSERT_RC(ZKRC_ELOCKED,
                zkrc_time_lease_obtain(s, path, 1000, &o, &r, ZKRC_NO_WAIT));
  ZKT_ASSERT_RC(ZKRC_ETIMEDOUT,
                zkrc_time_lease_obtain(s, path, 1000, &o, &r, 300));
  char *holder = g_strdup_printf("%s/lease_holder", path);
  CU_ASSERT_FALSE(zkt_exists(zh, holder));
  CU_ASSERT_TRUE(zkt_wait_children(zh, path, 1, 10000)); /* only kazoo's */
  CU_ASSERT_EQUAL(zoo_delete(zh, made, -1), ZOK);
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_time_lease_obtain(s, path, 1000, &o, &r, ZKRC_NO_WAIT));
  CU_ASSERT_EQUAL(r.outcome, ZKRC_TIME_LEASE_OBTAINED);
  zkrc_time_lease_result_clear(&r);
  CU_ASSERT_TRUE(zkt_exists(zh, holder));
  zookeeper_close(zh);
  zkrc_session_close(s);
  g_free(holder);
  g_free(prefix);
  g_free(path);
}

/* A kazoo-named contender node in @p dir's queue, made by the raw handle
 * @p zh (ephemeral: it goes with @p zh), so that the decision's lock is
 * another's; its path into @p made (@p size bytes). */
static void foreign_lock(zhandle_t *zh, const char *dir, char *made, int size) {
  zkt_make_path(zh, dir);
  char *prefix =
      g_strdup_printf("%s/0123456789abcdef0123456789abcdef__lock__", dir);
  CU_ASSERT_EQUAL_FATAL(zoo_create(zh, prefix, "kazoo", 5, &ZOO_OPEN_ACL_UNSAFE,
                                   ZOO_EPHEMERAL | ZOO_SEQUENCE, made, size),
                        ZOK);
  g_free(prefix);
}

/* A clock that, at its call number @p at (the first is the call's own
 * check of the end, the second the decision's reading under the lock),
 * deletes every lock node in @p dir with the raw handle @p zh: our lock
 * node gone between the read of lease_holder and the write. */
typedef struct cutting_clock {
  int64_t now;
  zhandle_t *zh;
  const char *dir;
  int at, calls, deleted;
} cutting_clock;

static int64_t cut_lock_then_tell(void *arg) {
  cutting_clock *c = arg;
  if (++c->calls != c->at)
    return c->now;
  struct String_vector kids = {0};
  if (zoo_get_children(c->zh, c->dir, 0, &kids) == ZOK) {
    for (int i = 0; i < kids.count; i++) {
      if (strstr(kids.data[i], "__lock__") == NULL)
        continue;
      char *node = g_strdup_printf("%s/%s", c->dir, kids.data[i]);
      c->deleted += zoo_delete(c->zh, node, -1) == ZOK;
      g_free(node);
    }
    deallocate_String_vector(&kids);
  }
  return c->now;
}

/* The write path's ZKRC_ELOCKLOST, by construction: the clock, read under
 * the lock just before the write, deletes our lock node; the write's multi
 * (the check of our lock node first) is refused: ZKRC_ELOCKLOST with
 * ZooKeeper's ZNONODE, nothing written, the result zeroed, no lock node
 * left.  The same call again (the clock harmless now) obtains it. */
static void test_lock_lost_before_write(void) {
  char *path = zkt_path("timelease-lost");
  char *holder = g_strdup_printf("%s/lease_holder", path);
  zhandle_t *zh = zkt_raw();
  zkrc_session *s = zkt_session();
  cutting_clock c = {.now = T0, .zh = zh, .dir = path, .at = 2};
  zkrc_time_lease_options o;
  zkrc_time_lease_options_init(&o);
  o.identifier = "us";
  o.clock = cut_lock_then_tell;
  o.clock_arg = &c;
  zkrc_time_lease_result r;
  ZKT_ASSERT_RC(ZKRC_ELOCKLOST,
                zkrc_time_lease_obtain(s, path, 1000, &o, &r, 20000));
  CU_ASSERT_EQUAL(zkrc_last_zk_error(), ZNONODE);
  CU_ASSERT_EQUAL(c.calls, 2);
  CU_ASSERT_EQUAL(c.deleted, 1);
  CU_ASSERT_EQUAL(r.outcome, 0);
  CU_ASSERT_PTR_NULL(r.holder);
  CU_ASSERT_FALSE(zkt_exists(zh, holder));
  CU_ASSERT_TRUE(zkt_wait_children_or_gone(zh, path, 0, 10000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_time_lease_obtain(s, path, 1000, &o, &r, 20000));
  CU_ASSERT_EQUAL(r.outcome, ZKRC_TIME_LEASE_OBTAINED);
  CU_ASSERT_TRUE(record_is(path, "us", "2027-01-15T08:00:01"));
  zkrc_time_lease_result_clear(&r);
  zookeeper_close(zh);
  zkrc_session_close(s);
  g_free(holder);
  g_free(path);
}

/* For zkt_wait_for(): does @p dir hold two children (the other's lock node
 * and one more) after its children changed enough times (cversion: a
 * look's node made and deleted, then a waiter's node made)? */
typedef struct queue_grown {
  zhandle_t *zh;
  const char *dir;
  int32_t cversion;
} queue_grown;

static int second_node_queued(void *arg) {
  const queue_grown *q = arg;
  struct Stat st;
  return zoo_exists(q->zh, q->dir, 0, &st) == ZOK && st.numChildren == 2 &&
         st.cversion >= q->cversion;
}

/* The multi form with a timeout does not spend it on a busy slot: slot 0's
 * lock is another's (kept), slot 1 is free: slot 1 is obtained, well within
 * the timeout, and slot 0 is left unwritten.  Then, slot 1 held (by us)
 * and slot 0's lock still taken, another identifier's call looks at slot
 * 0 (its node made and deleted), decides slot 1 (held), then waits for
 * slot 0's lock (its node queued again behind the other's: slot 0's
 * children changed three times), and obtains slot 0 once that lock goes. */
static void test_multi_free_slot_first(void) {
  char *path = zkt_path("timelease-freeslot");
  char *slot0 = g_strdup_printf("%s/0", path);
  char *holder0 = g_strdup_printf("%s/lease_holder", slot0);
  zhandle_t *zh = zkt_raw();
  char made[512];
  foreign_lock(zh, slot0, made, sizeof made);
  zkrc_session *s = zkt_session();
  int64_t now = T0;
  zkrc_time_lease_options o;
  sim_options(&o, "us", &now);
  zkrc_time_lease_result r;
  const int timeout_ms = 20000;
  int64_t began = zkt_now_ms();
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_time_lease_obtain_multi(s, path, 2, 1000, &o, &r,
                                                      timeout_ms));
  int64_t took = zkt_now_ms() - began;
  printf(" (slot 1 in %" PRId64 " ms) ", took);
  CU_ASSERT(took < timeout_ms / 2);
  CU_ASSERT_EQUAL(r.outcome, ZKRC_TIME_LEASE_OBTAINED);
  CU_ASSERT_EQUAL(r.slot, 1);
  zkrc_time_lease_result_clear(&r);
  CU_ASSERT_FALSE(zkt_exists(zh, holder0));
  CU_ASSERT_TRUE(zkt_wait_children(zh, slot0, 1, 10000)); /* only the other's */
  contender them;
  contenders_start(&them, 1, path, 2);
  g_strlcpy(them.ident, "them", sizeof them.ident);
  them.now = T0;
  struct Stat st;
  CU_ASSERT_EQUAL_FATAL(zoo_exists(zh, slot0, 0, &st), ZOK);
  queue_grown waiting = {.zh = zh, .dir = slot0, .cversion = st.cversion + 3};
  GThread *t = g_thread_new("contender", contend, &them);
  CU_ASSERT_TRUE(zkt_wait_for(second_node_queued, &waiting, 15000));
  CU_ASSERT_EQUAL(zoo_delete(zh, made, -1), ZOK);
  g_thread_join(t);
  ZKT_ASSERT_RC(ZKRC_OK, them.err);
  CU_ASSERT_EQUAL(them.r.outcome, ZKRC_TIME_LEASE_OBTAINED);
  CU_ASSERT_EQUAL(them.r.slot, 0);
  CU_ASSERT_TRUE(record_is(slot0, "them", "2027-01-15T08:00:01"));
  contenders_end(&them, 1);
  zookeeper_close(zh);
  zkrc_session_close(s);
  g_free(holder0);
  g_free(slot0);
  g_free(path);
}

/* Bad input: ZKRC_EINVAL (an identifier too large for the size rule:
 * ZKRC_ETOOBIG), nothing sent, nothing made, the result zeroed. */
static void test_bad_input(void) {
  char *path = zkt_path("timelease-bad");
  zkrc_session *s = zkt_session();
  zhandle_t *zh = zkt_raw();
  int64_t now = T0;
  zkrc_time_lease_options o, uninit;
  sim_options(&o, "us", &now);
  memset(&uninit, 0, sizeof uninit);
  zkrc_time_lease_options empty = o, notutf8 = o, big = o;
  empty.identifier = "";
  notutf8.identifier = "\xc3(";
  char *huge = g_malloc(1100000);
  memset(huge, 'h', 1099999);
  huge[1099999] = '\0';
  big.identifier = huge;
  zkrc_time_lease_result r;
  uint64_t sent = zkt_requests_but_renewals(s);
#define BAD(call)                                                              \
  do {                                                                         \
    memset(&r, 0x5a, sizeof r);                                                \
    ZKT_ASSERT_RC(ZKRC_EINVAL, call);                                          \
    CU_ASSERT_EQUAL(r.outcome, 0);                                             \
    CU_ASSERT_PTR_NULL(r.holder);                                              \
  } while (0)
  BAD(zkrc_time_lease_obtain(NULL, path, 1000, &o, &r, 5000));
  BAD(zkrc_time_lease_obtain(s, NULL, 1000, &o, &r, 5000));
  BAD(zkrc_time_lease_obtain(s, "nope", 1000, &o, &r, 5000));
  BAD(zkrc_time_lease_obtain(s, "/", 1000, &o, &r, 5000));
  BAD(zkrc_time_lease_obtain(s, path, 0, &o, &r, 5000));
  BAD(zkrc_time_lease_obtain(s, path, -1000, &o, &r, 5000));
  BAD(zkrc_time_lease_obtain(s, path, INT64_MAX, &o, &r, 5000));
  BAD(zkrc_time_lease_obtain(s, path, 1000, &o, &r, -2));
  BAD(zkrc_time_lease_obtain(s, path, 1000, &uninit, &r, 5000));
  BAD(zkrc_time_lease_obtain(s, path, 1000, &empty, &r, 5000));
  BAD(zkrc_time_lease_obtain(s, path, 1000, &notutf8, &r, 5000));
  BAD(zkrc_time_lease_obtain_multi(s, path, 0, 1000, &o, &r, 5000));
  BAD(zkrc_time_lease_obtain_multi(s, path, -1, 1000, &o, &r, 5000));
  BAD(zkrc_time_lease_obtain_multi(s, path, 1001, 1000, &o, &r, 5000));
  BAD(zkrc_time_lease_obtain_multi(s, path, 2, 0, &o, &r, 5000));
#undef BAD
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkrc_time_lease_obtain(s, path, 1000, &o, NULL, 5000));
  ZKT_ASSERT_RC(ZKRC_ETOOBIG,
                zkrc_time_lease_obtain(s, path, 1000, &big, &r, 5000));
  CU_ASSERT_EQUAL(zkt_requests_but_renewals(s), sent);
  CU_ASSERT_FALSE(zkt_exists(zh, path));
  zookeeper_close(zh);
  zkrc_session_close(s);
  g_free(huge);
  g_free(path);
}

/* The defaults: the system's clock and "<hostname>:<pid>".  The end is
 * the clock's reading plus the duration, rounded up to the second; a
 * second call of the same process renews. */
static void test_defaults(void) {
  char *path = zkt_path("timelease-defaults");
  zkrc_session *s = zkt_session();
  zkrc_time_lease_result r;
  int64_t before = g_get_real_time() / 1000;
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_time_lease_obtain(s, path, 60000, NULL, &r, 5000));
  int64_t after = g_get_real_time() / 1000;
  CU_ASSERT_EQUAL(r.outcome, ZKRC_TIME_LEASE_OBTAINED);
  CU_ASSERT_TRUE(r.end_ms >= before + 60000 && r.end_ms < after + 61000);
  CU_ASSERT_EQUAL(r.end_ms % 1000, 0);
  CU_ASSERT_TRUE(r.remaining_ms >= 60000 && r.remaining_ms < 61000);
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  char *me = g_strdup_printf("%s:%d", host, (int)getpid());
  CU_ASSERT_STRING_EQUAL(r.holder, me);
  zkrc_time_lease_result_clear(&r);
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_time_lease_obtain(s, path, 60000, NULL, &r, 5000));
  CU_ASSERT_EQUAL(r.outcome, ZKRC_TIME_LEASE_RENEWED);
  zkrc_time_lease_result_clear(&r);
  g_free(me);
  zkrc_session_close(s);
  g_free(path);
}

/* ------------------------------------------------------ kazoo 2.8 */

/* kazoo_lease.py MODE [COUNT] IDENT MS NOW: 1 obtained, 0 refused, -1 on
 * failure. */
static int kazoo_lease(const char *path, const char *mode, const char *count,
                       const char *ident, int64_t ms, int64_t now_ms) {
  char *dur = g_strdup_printf("%" G_GINT64_FORMAT, ms);
  char *now = g_strdup_printf("%" G_GINT64_FORMAT ".%03d", now_ms / 1000,
                              (int)(now_ms % 1000));
  const char *argv[10];
  int n = 0;
  argv[n++] = DEBIAN_PYTHON3;
  argv[n++] = KAZOO_LEASE;
  argv[n++] = zkt_hosts();
  argv[n++] = path;
  argv[n++] = mode;
  if (count)
    argv[n++] = count;
  argv[n++] = ident;
  argv[n++] = dur;
  argv[n++] = now;
  argv[n] = NULL;
  char buf[64];
  int status = zkt_run_output(argv, buf, sizeof buf, 60000);
  g_free(dur);
  g_free(now);
  CU_ASSERT_EQUAL(status, 0);
  if (status != 0)
    return -1;
  return g_str_has_prefix(buf, "obtained")  ? 1
         : g_str_has_prefix(buf, "refused") ? 0
                                            : -1;
}

/* kazoo holds, we are refused, and the reverse; after each end the other
 * takes it; kazoo renews its own lease by identifier; our lock and
 * kazoo's exclude each other on the same queue (both decide under it). */
static void test_kazoo_both_ways(void) {
  char *path = zkt_path("timelease-kazoo");
  zkrc_session *s = zkt_session();
  int64_t now = T0;
  zkrc_time_lease_options o;
  sim_options(&o, "zkrecipes", &now);
  zkrc_time_lease_result r;
  CU_ASSERT_EQUAL(kazoo_lease(path, "obtain", NULL, "kazoo", 10000, T0), 1);
  now = T0 + 5000;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_time_lease_obtain(s, path, 10000, &o, &r, 5000));
  CU_ASSERT_EQUAL(r.outcome, ZKRC_TIME_LEASE_HELD);
  CU_ASSERT_STRING_EQUAL(r.holder, "kazoo");
  CU_ASSERT_EQUAL(r.end_ms, T0 + 10000);
  zkrc_time_lease_result_clear(&r);
  /* kazoo renews (the same identifier) at T0 + 6 s: until T0 + 16 s. */
  CU_ASSERT_EQUAL(kazoo_lease(path, "obtain", NULL, "kazoo", 10000, T0 + 6000),
                  1);
  now = T0 + 12000;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_time_lease_obtain(s, path, 10000, &o, &r, 5000));
  CU_ASSERT_EQUAL(r.outcome, ZKRC_TIME_LEASE_HELD);
  CU_ASSERT_EQUAL(r.end_ms, T0 + 16000);
  zkrc_time_lease_result_clear(&r);
  /* After kazoo's end we take it; kazoo is refused until ours ends. */
  now = T0 + 16000;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_time_lease_obtain(s, path, 10000, &o, &r, 5000));
  CU_ASSERT_EQUAL(r.outcome, ZKRC_TIME_LEASE_OBTAINED);
  zkrc_time_lease_result_clear(&r);
  CU_ASSERT_EQUAL(kazoo_lease(path, "obtain", NULL, "kazoo", 10000, T0 + 25999),
                  0);
  CU_ASSERT_EQUAL(kazoo_lease(path, "obtain", NULL, "kazoo", 10000, T0 + 26000),
                  1);
  /* The multi form: kazoo's MultiNonBlockingLease and ours on two slots. */
  char *multi = g_strdup_printf("%s-multi", path);
  now = T0;
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_time_lease_obtain_multi(s, multi, 2, 10000, &o, &r, 5000));
  CU_ASSERT_EQUAL(r.slot, 0);
  zkrc_time_lease_result_clear(&r);
  CU_ASSERT_EQUAL(kazoo_lease(multi, "multi", "2", "k1", 10000, T0 + 1000), 1);
  CU_ASSERT_EQUAL(kazoo_lease(multi, "multi", "2", "k2", 10000, T0 + 2000), 0);
  zkrc_time_lease_options o2;
  sim_options(&o2, "zkrecipes-2", &now);
  now = T0 + 3000;
  ZKT_ASSERT_RC(
      ZKRC_OK, zkrc_time_lease_obtain_multi(s, multi, 2, 10000, &o2, &r, 5000));
  CU_ASSERT_EQUAL(r.outcome, ZKRC_TIME_LEASE_HELD);
  CU_ASSERT_EQUAL(r.slot, 0); /* ours ends first (T0 + 10 s) */
  CU_ASSERT_STRING_EQUAL(r.holder, "zkrecipes");
  zkrc_time_lease_result_clear(&r);
  char *slot1 = g_strdup_printf("%s/1", multi);
  CU_ASSERT_TRUE(record_is(slot1, "k1", "2027-01-15T08:00:11"));
  g_free(slot1);
  g_free(multi);
  zkrc_session_close(s);
  g_free(path);
}

static void add_suites(void) {
  ZKT_SUITE("time lease decision", {"kazoo's rule", test_decision},
            {"malformed records", test_malformed_records},
            {"record as python writes it", test_record_format},
            {"end rounded up to the second", test_end_rounding});
  ZKT_SUITE("time lease", {"one holder per period", test_one_holder_per_period},
            {"control: a taker ignoring the end is caught",
             test_control_cheater_caught},
            {"renewal, then another takes it", test_renewal_then_takeover},
            {"multi admits exactly n", test_multi_admits_n},
            {"foreign records unchanged", test_foreign_records_unchanged},
            {"busy lock", test_busy_lock},
            {"our lock node gone before the write: ZKRC_ELOCKLOST",
             test_lock_lost_before_write},
            {"multi: a free slot first, then a busy one waited for",
             test_multi_free_slot_first},
            {"bad input changes nothing", test_bad_input},
            {"defaults: system clock, hostname:pid", test_defaults},
            {"kazoo both ways", test_kazoo_both_ways});
}

int main(void) { return zkt_run("test_timelease", add_suites); }
