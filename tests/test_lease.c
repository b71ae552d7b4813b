/*
 * The session lease's arithmetic (src/core/lease.c), on in-memory input: no
 * server.  Besides the rules one by one, a simulation of the servers'
 * session tracking (a leader that pings its follower every half tick and
 * learns of our session only from the follower's answers, a follower that
 * may die at any moment, a client whose renewals arrive late and whose
 * answers come back late) checks the promise itself: the lease never runs
 * past the moment the leader could expire the session.  A control runs the
 * same simulation with too short a relay allowance and must find broken
 * promises, so the simulation can fail.
 */
#include "config.h"

#include <stdio.h>

#include <glib.h>

#include "core/lease.h"
#include "testutil.h"

#define MS 1000 /* microseconds */

/* With a 10 ms scheduling allowance, so that the drift of a 4000 ms
 * timeout is 14 ms in the arithmetic below. */
static zkrc__lease fresh_lease(int timeout_ms, int tick_ms, int64_t opened,
                               int64_t now) {
  zkrc__lease_params p;
  zkrc__lease_params_init(&p, timeout_ms, tick_ms, 10);
  zkrc__lease l;
  zkrc__lease_begin_session(&l, &p, opened, now);
  return l;
}

/* ---------------------------------------------------------- the rules */

static void test_parameters(void) {
  zkrc__lease_params p;
  zkrc__lease_params_init(&p, 4000, 200, 0);
  CU_ASSERT_EQUAL(p.timeout_us, 4000 * MS);
  CU_ASSERT_EQUAL(p.relay_us, 120 * MS);          /* 0.6 tick */
  CU_ASSERT_EQUAL(p.allowance_us, 100 * MS);      /* the default's cap */
  CU_ASSERT_EQUAL(p.drift_us, 4 * MS + 100 * MS); /* 0.1% + allowance */
  CU_ASSERT_EQUAL(p.period_us, 1200 * MS);        /* 0.3 timeout */
  CU_ASSERT_EQUAL(p.keepalive_us, p.period_us);   /* many ticks: a period */
  /* No tick given: ZooKeeper's default, at most half the timeout. */
  zkrc__lease_params_init(&p, 10000, 0, 0);
  CU_ASSERT_EQUAL(p.relay_us, 1200 * MS);
  zkrc__lease_params_init(&p, 2000, 0, 0);
  CU_ASSERT_EQUAL(p.relay_us, 600 * MS);
  /* Two assumed ticks: keepalives three quarters of the window of
   * T - drift - (relay + period / 2) - relay = 2000 - 102 - 900 - 600 ms. */
  CU_ASSERT_EQUAL(p.keepalive_us, 398 * MS * 3 / 4);
  /* The floor: T - drift - 2 spacing - an eighth of a period. */
  zkrc__lease_params_init(&p, 4000, 200, 0);
  CU_ASSERT_EQUAL(zkrc__lease_floor(&p), (4000 - 104 - 2400 - 150) * MS);
}

/* The scheduling allowance: a tenth of a short timeout, capped for long
 * ones; the application's own when it names one, but never more than
 * half the negotiated timeout (the servers may grant less than asked). */
static void test_allowance(void) {
  zkrc__lease_params p;
  CU_ASSERT_EQUAL(zkrc__lease_default_allowance_ms(400), 40);
  CU_ASSERT_EQUAL(zkrc__lease_default_allowance_ms(1000), 100);
  CU_ASSERT_EQUAL(zkrc__lease_default_allowance_ms(30000), 100);
  zkrc__lease_params_init(&p, 400, 200, 0);
  CU_ASSERT_EQUAL(p.allowance_us, 40 * MS);
  zkrc__lease_params_init(&p, 10000, 0, 250);
  CU_ASSERT_EQUAL(p.allowance_us, 250 * MS);
  CU_ASSERT_EQUAL(p.drift_us, 10 * MS + 250 * MS);
  zkrc__lease_params_init(&p, 400, 200, 300);
  CU_ASSERT_EQUAL(p.allowance_us, 200 * MS);
  /* A lease begun at 0 ends the drift before T. */
  zkrc__lease l;
  zkrc__lease_params_init(&p, 4000, 200, 500);
  zkrc__lease_begin_session(&l, &p, 0, 1);
  CU_ASSERT_EQUAL(l.deadline, (4000 - 4 - 500) * MS);
}

static void test_new_session_starts_from_its_opening(void) {
  zkrc__lease l = fresh_lease(4000, 200, 1000 * MS, 1010 * MS);
  CU_ASSERT_TRUE(l.established);
  CU_ASSERT_EQUAL(l.deadline, (1000 + 4000 - 14) * MS);
  CU_ASSERT_EQUAL(zkrc__lease_remaining(&l, 2000 * MS), (4986 - 2000) * MS);
  CU_ASSERT_FALSE(zkrc__lease_expired_at(&l, 4985 * MS));
  CU_ASSERT_TRUE(zkrc__lease_expired_at(&l, 4986 * MS));
  CU_ASSERT_EQUAL(zkrc__lease_remaining(&l, 5000 * MS), 0);
  /* Connected only after its first lease would have run out: none yet,
   * and that is no loss. */
  l = fresh_lease(4000, 200, 0, 6000 * MS);
  CU_ASSERT_FALSE(l.established);
  CU_ASSERT_FALSE(zkrc__lease_expired_at(&l, 6000 * MS));
  CU_ASSERT_EQUAL(zkrc__lease_remaining(&l, 6000 * MS), 0);
}

static void test_extended_from_the_renewal_before(void) {
  zkrc__lease l = fresh_lease(4000, 200, 0, 0);
  /* The first renewal on a connection proves nothing by itself. */
  CU_ASSERT_FALSE(zkrc__lease_confirm(&l, 100 * MS, 102 * MS));
  /* Sent less than a relay (120 ms) after that one was answered: still
   * nothing. */
  CU_ASSERT_FALSE(zkrc__lease_confirm(&l, 200 * MS, 201 * MS));
  /* Sent a relay after the first's answer: the leader heard of the first,
   * so the lease runs from its sending. */
  CU_ASSERT_TRUE(zkrc__lease_confirm(&l, 222 * MS, 223 * MS));
  CU_ASSERT_EQUAL(l.deadline, (100 + 3986) * MS);
  /* Later ones extend from the latest qualifying earlier one. */
  CU_ASSERT_TRUE(zkrc__lease_confirm(&l, 1500 * MS, 1501 * MS));
  CU_ASSERT_EQUAL(l.deadline, (222 + 3986) * MS);
}

static void test_a_new_connection_starts_over(void) {
  zkrc__lease l = fresh_lease(4000, 200, 0, 0);
  zkrc__lease_confirm(&l, 1000 * MS, 1001 * MS);
  zkrc__lease_confirm(&l, 2200 * MS, 2201 * MS);
  int64_t before = l.deadline;
  zkrc__lease_new_connection(&l);
  /* On the new server, an answer proves nothing about the old one's
   * exchanges with the leader, nor the other way round. */
  CU_ASSERT_FALSE(zkrc__lease_confirm(&l, 3000 * MS, 3001 * MS));
  CU_ASSERT_EQUAL(l.deadline, before);
  CU_ASSERT_TRUE(zkrc__lease_confirm(&l, 3200 * MS, 3201 * MS));
  CU_ASSERT_EQUAL(l.deadline, (3000 + 3986) * MS);
}

static void test_a_run_out_lease_stays_out(void) {
  zkrc__lease l = fresh_lease(4000, 200, 0, 0);
  zkrc__lease_confirm(&l, 1000 * MS, 1001 * MS);
  /* Answered after the deadline (a freeze, a long stall): no extension,
   * whatever was sent, and never again. */
  CU_ASSERT_FALSE(zkrc__lease_confirm(&l, 3900 * MS, 4100 * MS));
  CU_ASSERT_TRUE(l.lapsed);
  CU_ASSERT_FALSE(zkrc__lease_confirm(&l, 4200 * MS, 4201 * MS));
  CU_ASSERT_EQUAL(zkrc__lease_remaining(&l, 4300 * MS), 0);
}

static void test_next_renewal(void) {
  zkrc__lease_params p;
  zkrc__lease_params_init(&p, 4000, 200, 0);
  /* A period after the last one was sent... */
  CU_ASSERT_EQUAL(zkrc__lease_next_renewal(&p, 0, 2 * MS), 1200 * MS);
  /* ...but not before a relay has passed since it was answered. */
  CU_ASSERT_EQUAL(zkrc__lease_next_renewal(&p, 0, 1150 * MS),
                  (1150 + 120) * MS);
}

/* After a reconnection the connection's first answer extends nothing; the
 * second renewal goes a relay after it, not a period after the first was
 * sent, and that one extends the lease. */
static void test_second_renewal_soon_after_a_reconnection(void) {
  zkrc__lease l = fresh_lease(4000, 200, 0, 0);
  CU_ASSERT_FALSE(zkrc__lease_confirm(&l, 10 * MS, 12 * MS));
  CU_ASSERT_EQUAL(zkrc__lease_next_renewal_for(&l, 10 * MS, 12 * MS),
                  (12 + 120) * MS); /* the session's first: soon too */
  CU_ASSERT_TRUE(zkrc__lease_confirm(&l, 1200 * MS, 1202 * MS));
  /* Settled: a period after the last one was sent. */
  CU_ASSERT_EQUAL(zkrc__lease_next_renewal_for(&l, 1200 * MS, 1202 * MS),
                  2400 * MS);
  int64_t before = l.deadline;
  zkrc__lease_new_connection(&l);
  CU_ASSERT_FALSE(zkrc__lease_confirm(&l, 2000 * MS, 2004 * MS));
  int64_t next = zkrc__lease_next_renewal_for(&l, 2000 * MS, 2004 * MS);
  CU_ASSERT_EQUAL(next, (2004 + 120) * MS);
  CU_ASSERT_TRUE(zkrc__lease_confirm(&l, next, next + 3 * MS));
  CU_ASSERT(l.deadline > before);
  CU_ASSERT_EQUAL(l.deadline, 2000 * MS + l.p.timeout_us - l.p.drift_us);
}

/* ------------------------------------------------------------ resting */

/* A resting lease is not extended, and its deadline passing is no loss
 * while the servers answer keepalives: it lapses a session timeout (less
 * drift) after the last request they answered was sent. */
static void test_a_resting_lease_lapses_only_when_unheard(void) {
  zkrc__lease l = fresh_lease(4000, 200, 0, 0);
  zkrc__lease_rest(&l, 0);
  CU_ASSERT_EQUAL(zkrc__lease_lapse_at(&l), 3986 * MS);
  zkrc__lease_touched(&l, 1000 * MS, 1001 * MS);
  zkrc__lease_touched(&l, 2200 * MS, 2201 * MS);
  CU_ASSERT_EQUAL(l.deadline, 3986 * MS); /* not extended */
  CU_ASSERT_EQUAL(zkrc__lease_lapse_at(&l), (2200 + 3986) * MS);
  CU_ASSERT_FALSE(zkrc__lease_expired_at(&l, 5000 * MS));
  CU_ASSERT_EQUAL(zkrc__lease_remaining(&l, 5000 * MS), 0); /* proven: none */
  CU_ASSERT_TRUE(zkrc__lease_expired_at(&l, 6186 * MS));
  /* An answer that comes after the lapse extends nothing. */
  zkrc__lease_touched(&l, 6000 * MS, 6200 * MS);
  CU_ASSERT_EQUAL(zkrc__lease_lapse_at(&l), 6186 * MS);
  /* Woken after its deadline: not established; lapses when unheard. */
  zkrc__lease m = fresh_lease(4000, 200, 0, 0);
  zkrc__lease_rest(&m, 0);
  zkrc__lease_touched(&m, 3400 * MS, 3401 * MS);
  zkrc__lease_wake(&m, 5000 * MS);
  CU_ASSERT_FALSE(m.established);
  CU_ASSERT_EQUAL(zkrc__lease_remaining(&m, 5000 * MS), 0);
  CU_ASSERT_FALSE(zkrc__lease_expired_at(&m, 5000 * MS));
  CU_ASSERT_EQUAL(zkrc__lease_lapse_at(&m), (3400 + 3986) * MS);
}

/* Woken before its deadline, a lease keeps it, and its end is a loss
 * again; a lapsed lease cannot rest its way out of its loss. */
static void test_woken_in_time_the_deadline_stands(void) {
  zkrc__lease l = fresh_lease(4000, 200, 0, 0);
  zkrc__lease_rest(&l, 0);
  zkrc__lease_wake(&l, 3000 * MS);
  CU_ASSERT_TRUE(l.established);
  CU_ASSERT_EQUAL(l.deadline, 3986 * MS);
  CU_ASSERT_TRUE(zkrc__lease_expired_at(&l, 3986 * MS));
  CU_ASSERT_FALSE(zkrc__lease_confirm(&l, 3900 * MS, 4000 * MS));
  CU_ASSERT_TRUE(l.lapsed);
  zkrc__lease_rest(&l, 4000 * MS);
  CU_ASSERT_TRUE(zkrc__lease_expired_at(&l, 4000 * MS));
  /* Its deadline passed before the lapse timer saw it: resting then is
   * still the loss it was. */
  zkrc__lease late = fresh_lease(4000, 200, 0, 0);
  zkrc__lease_rest(&late, 3990 * MS);
  CU_ASSERT_TRUE(late.lapsed);
  CU_ASSERT_FALSE(late.resting);
  /* Woken with less left than the renewals need to extend it: forgotten,
   * the grant waits for a renewal. */
  zkrc__lease near = fresh_lease(4000, 200, 0, 0);
  zkrc__lease_rest(&near, 0);
  CU_ASSERT_EQUAL(zkrc__lease_wake_margin(&near.p), (120 + 600) * MS);
  zkrc__lease_wake(&near, 3700 * MS);
  CU_ASSERT_FALSE(near.established);
  CU_ASSERT_EQUAL(zkrc__lease_remaining(&near, 3700 * MS), 0);
  CU_ASSERT_FALSE(zkrc__lease_expired_at(&near, 3700 * MS));
}

/* A keepalive (answered by the follower alone) extends nothing; as the
 * earlier request of a renewal sent a relay after its answer, it proves
 * the leader heard of the session from its sending on. */
static void test_a_keepalive_is_only_the_earlier_request(void) {
  zkrc__lease l = fresh_lease(4000, 200, 0, 0);
  zkrc__lease_rest(&l, 0);
  zkrc__lease_touched(&l, 1000 * MS, 1001 * MS);
  zkrc__lease_touched(&l, 2200 * MS, 2201 * MS);
  CU_ASSERT_EQUAL(l.deadline, 3986 * MS); /* the opening's, unchanged */
  zkrc__lease_touched(&l, 3400 * MS, 3401 * MS);
  zkrc__lease_touched(&l, 4600 * MS, 4601 * MS);
  zkrc__lease_wake(&l, 4650 * MS);
  CU_ASSERT_FALSE(l.established);
  /* Sent 49 ms after the latest keepalive's answer: extends from the one
   * before (answered more than a relay earlier), at once. */
  CU_ASSERT_TRUE(zkrc__lease_confirm(&l, 4650 * MS, 4652 * MS));
  CU_ASSERT_EQUAL(l.deadline, (3400 + 3986) * MS);
  /* A single keepalive just before the renewal: the renewal extends
   * nothing, and the next goes a relay after its answer. */
  zkrc__lease m = fresh_lease(4000, 200, 0, 6000 * MS);
  zkrc__lease_rest(&m, 6000 * MS);
  zkrc__lease_touched(&m, 6000 * MS, 6001 * MS);
  zkrc__lease_wake(&m, 6010 * MS);
  CU_ASSERT_FALSE(zkrc__lease_confirm(&m, 6010 * MS, 6012 * MS));
  CU_ASSERT_EQUAL(zkrc__lease_next_renewal_for(&m, 6010 * MS, 6012 * MS),
                  (6012 + 120) * MS);
}

/* Woken on a new connection right after its first keepalive's answer,
 * the renewal proves nothing (sent within a relay of that answer): the
 * next goes a relay after it, not a period later, while the old
 * deadline still runs. */
static void test_a_renewal_that_extended_nothing_is_followed_soon(void) {
  zkrc__lease l = fresh_lease(4000, 200, 0, 0);
  CU_ASSERT_FALSE(zkrc__lease_confirm(&l, 1000 * MS, 1001 * MS));
  CU_ASSERT_TRUE(zkrc__lease_confirm(&l, 1200 * MS, 1201 * MS));
  CU_ASSERT_EQUAL(l.deadline, (1000 + 3986) * MS);
  zkrc__lease_rest(&l, 1300 * MS);
  zkrc__lease_new_connection(&l);
  zkrc__lease_touched(&l, 1400 * MS, 1401 * MS);
  zkrc__lease_wake(&l, 1450 * MS);
  CU_ASSERT_TRUE(l.established); /* 3536 ms left: it stands */
  CU_ASSERT_FALSE(zkrc__lease_confirm(&l, 1450 * MS, 1452 * MS));
  CU_ASSERT_EQUAL(zkrc__lease_next_renewal_for(&l, 1450 * MS, 1452 * MS),
                  (1452 + 120) * MS);
  CU_ASSERT_TRUE(zkrc__lease_confirm(&l, 1572 * MS, 1574 * MS));
  CU_ASSERT_EQUAL(l.deadline, (1450 + 3986) * MS);
  CU_ASSERT_EQUAL(zkrc__lease_next_renewal_for(&l, 1572 * MS, 1574 * MS),
                  (1572 + 1200) * MS); /* settled: a period */
}

/* Timeout two ticks (relay = period = 300 ms): the keepalive a woken
 * lease could extend from is up to a relay and a period old, and the
 * lease it gave would end before the next renewal, a relay after the
 * first's answer, could be answered.  It is not established on it: the
 * second renewal proves the first. */
static void test_a_woken_lease_is_not_established_on_a_stale_proof(void) {
  zkrc__lease l = fresh_lease(1000, 500, 0, 0);
  CU_ASSERT_EQUAL(l.p.relay_us, 300 * MS);
  CU_ASSERT_EQUAL(l.p.period_us, 300 * MS);
  zkrc__lease_rest(&l, 0);
  for (int64_t t = 0; t <= 900; t += 300)
    zkrc__lease_touched(&l, t * MS, (t + 1) * MS);
  zkrc__lease_wake(&l, 1200 * MS); /* the opening's lease is over */
  CU_ASSERT_FALSE(l.established);
  /* The proof would be the keepalive sent at 600 ms: a lease to 1589 ms,
   * 387 ms after this answer, less than a relay and half a period. */
  CU_ASSERT_FALSE(zkrc__lease_confirm(&l, 1200 * MS, 1202 * MS));
  CU_ASSERT_FALSE(l.established);
  int64_t next = zkrc__lease_next_renewal_for(&l, 1200 * MS, 1202 * MS);
  CU_ASSERT_EQUAL(next, 1502 * MS);
  CU_ASSERT_TRUE(zkrc__lease_confirm(&l, next, next + 2 * MS));
  CU_ASSERT_EQUAL(l.deadline, (1200 + 1000 - 11) * MS);
}

/* The floor holds while renewals are answered within an eighth of a
 * period: follow a renewal schedule and look just before every answer. */
static void test_floor_holds_while_renewals_keep_up(void) {
  GRand *rng = g_rand_new_with_seed(7);
  for (int tick = 100; tick <= 2000; tick += 300) {
    zkrc__lease l = fresh_lease(4000, tick, 0, 0);
    int64_t floor = zkrc__lease_floor(&l.p), worst = INT64_MAX;
    int64_t sent = 10 * MS;
    for (int i = 0; i < 200; i++) {
      int64_t replied = sent + g_rand_int_range(rng, 100, l.p.period_us / 8);
      int64_t left = zkrc__lease_remaining(&l, replied - 1);
      if (i > 3 && left < worst)
        worst = left;
      zkrc__lease_confirm(&l, sent, replied);
      sent = zkrc__lease_next_renewal(&l.p, sent, replied);
    }
    CU_ASSERT(worst >= floor);
  }
  g_rand_free(rng);
}

/* ------------------------------------------------------- the simulation */

/* One run: a client connected to a follower of a leader.  The leader pings
 * the follower every half tick (late by up to a twentieth of a tick); the
 * follower answers each ping (after up to a twentieth of a tick) with
 * whether our session sent it anything since its previous answer; the
 * leader expires the session a timeout after its last such answer (or the
 * session's creation).  Renewals follow the library's schedule; each takes
 * a random time to reach the follower and to come back.  The follower dies
 * at a random moment: nothing it would send after that arrives.  Returns
 * the lease's excess over the leader's expiry (> 0: a broken promise). */
typedef enum sim_mode {
  RENEWING,      /* renewals from the start */
  RESTING,       /* keepalives, then renewals from a random moment */
  KEEPALIVE_LIE, /* the control: keepalives taken for renewals */
} sim_mode;

static int64_t simulate(GRand *rng, const zkrc__lease_params *p, int tick_ms,
                        sim_mode mode) {
  const int64_t tick = (int64_t)tick_ms * MS;
  const int64_t opened = 0;
  const int64_t created = g_rand_int_range(rng, 0, 5 * MS);
  const int64_t dies = g_rand_int_range(rng, 0, (gint32)(8 * p->timeout_us));
  const int64_t wakes =
      mode == RENEWING ? 0
                       : g_rand_int_range(rng, 0, (gint32)(8 * p->timeout_us));
  zkrc__lease l;
  zkrc__lease_begin_session(&l, p, opened, created + MS);
  if (mode == RESTING)
    zkrc__lease_rest(&l, created + MS);

  /* Arrivals of renewals at the follower, in order (sent in order). */
  GArray *arrivals = g_array_new(FALSE, FALSE, sizeof(int64_t));
  int64_t sent = created + MS, last_arrival = 0;
  int64_t end = dies + 2 * p->timeout_us;
  while (sent < end) {
    int64_t slow = g_rand_int_range(rng, 0, 10) == 0;
    int64_t there = sent + g_rand_int_range(rng, 50, slow ? 300 * MS : 5 * MS);
    if (there < last_arrival)
      there = last_arrival; /* one connection: in order */
    last_arrival = there;
    g_array_append_val(arrivals, there);
    /* The follower forwards it, the leader answers, the follower passes
     * the answer on (the follower must still be alive then), and the
     * answer travels back to us.  A keepalive the follower answers
     * itself, also once it is cut off from the leader ("dies" is then
     * when it was cut off). */
    gboolean keepalive = sent < wakes;
    int64_t answered =
        there + g_rand_int_range(rng, 50, slow ? 300 * MS : 5 * MS);
    if (answered >= dies && !keepalive)
      break; /* never answered; the client sends no more */
    int64_t replied = answered + g_rand_int_range(rng, 50, MS);
    if (keepalive && mode == RESTING) {
      zkrc__lease_touched(&l, sent, replied);
      sent += p->keepalive_us;
      continue;
    }
    if (!keepalive && l.resting)
      zkrc__lease_wake(&l, sent);
    zkrc__lease_confirm(&l, sent, replied);
    sent = keepalive ? sent + p->keepalive_us
                     : zkrc__lease_next_renewal_for(&l, sent, replied);
  }

  /* The leader's last news of the session: the latest ping answer the
   * follower sent before dying that named it. */
  int64_t touched = created, ping = 0, previous_answer = 0;
  guint next = 0;
  while (ping < dies) {
    ping += tick / 2 + g_rand_int_range(rng, 0, (gint32)(tick / 20) + 1);
    int64_t answer = ping + g_rand_int_range(rng, 0, (gint32)(tick / 20) + 1);
    if (answer >= dies)
      break;
    gboolean named = FALSE;
    while (next < arrivals->len &&
           g_array_index(arrivals, int64_t, next) <= answer) {
      named = named || g_array_index(arrivals, int64_t, next) > previous_answer;
      next++;
    }
    if (named)
      touched = answer;
    previous_answer = answer;
  }
  g_array_free(arrivals, TRUE);
  int64_t expiry = touched + p->timeout_us;
  /* A resting lease promises nothing (the control's never rests). */
  gboolean promised = l.established && (!l.resting || mode == KEEPALIVE_LIE);
  return promised ? l.deadline - expiry : INT64_MIN;
}

/* @p relay_us, @p period_us: 0, or what to use instead of the library's
 * choice (for the control). */
static int broken_promises(int runs, int timeout_ms, int tick_ms,
                           int64_t relay_us, int64_t period_us, sim_mode mode,
                           int64_t *closest) {
  GRand *rng = g_rand_new_with_seed(42);
  zkrc__lease_params p;
  zkrc__lease_params_init(&p, timeout_ms, tick_ms, 0);
  if (relay_us > 0)
    p.relay_us = relay_us;
  if (period_us > 0)
    p.period_us = period_us;
  int broken = 0;
  *closest = INT64_MIN;
  for (int i = 0; i < runs; i++) {
    int64_t excess = simulate(rng, &p, tick_ms, mode);
    broken += excess > 0;
    if (excess > *closest)
      *closest = excess;
  }
  g_rand_free(rng);
  return broken;
}

static void test_simulated_servers_never_expire_a_leased_session(void) {
  static const int cases[][2] = {{2000, 200},  {4000, 200},   {1000, 500},
                                 {4000, 2000}, {10000, 2000}, {400, 200}};
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    int64_t closest;
    int broken = broken_promises(3000, cases[i][0], cases[i][1], 0, 0, RENEWING,
                                 &closest);
    printf("\n    timeout %5d ms, tick %4d ms: 3000 runs, %d broken; "
           "closest lease ended %.1f ms before the expiry",
           cases[i][0], cases[i][1], broken, -closest / 1000.0);
    CU_ASSERT_EQUAL(broken, 0);
  }
  /* Renewals more often than the leader pings: the relay rule alone keeps
   * the promise (it picks an earlier renewal to extend from). */
  int64_t closest;
  int broken = broken_promises(3000, 4000, 200, 0, 30 * MS, RENEWING, &closest);
  printf("\n    timeout  4000 ms, tick  200 ms, renewals every 30 ms: 3000 "
         "runs, %d broken; closest %.1f ms before\n    ",
         broken, -closest / 1000.0);
  CU_ASSERT_EQUAL(broken, 0);
}

/* The control: renewals sent more often than the leader pings, with a
 * relay allowance shorter than the ping interval, must be caught making
 * leases that outlive the session. */
static void test_simulation_catches_too_short_a_relay(void) {
  int64_t closest;
  int broken =
      broken_promises(3000, 4000, 200, 40 * MS, 30 * MS, RENEWING, &closest);
  printf("(relay 40 ms, renewals every 30 ms, tick 200 ms: %d of 3000 runs "
         "broke the promise, by up to %.1f ms) ",
         broken, closest / 1000.0);
  CU_ASSERT(broken > 0);
}

/* A lease that rested on keepalives and was woken by a renewal at a
 * random moment, with the follower cut off from the leader at another
 * (it goes on answering keepalives): never past the leader's expiry. */
static void test_simulated_servers_never_expire_a_woken_lease(void) {
  static const int cases[][2] = {
      {2000, 200}, {4000, 200}, {1000, 500}, {4000, 2000}, {10000, 2000}};
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    int64_t closest;
    int broken = broken_promises(3000, cases[i][0], cases[i][1], 0, 0, RESTING,
                                 &closest);
    printf("\n    timeout %5d ms, tick %4d ms, resting then woken: 3000 "
           "runs, %d broken; closest %.1f ms before the expiry",
           cases[i][0], cases[i][1], broken, -closest / 1000.0);
    CU_ASSERT_EQUAL(broken, 0);
  }
  printf("\n    ");
}

/* Liveness: with a follower that never fails and answers within 5 ms, a
 * lease woken at a random moment (its renewal sent then, between two
 * keepalives) never lapses in the four timeouts after.  Returns how many
 * of @p runs lapsed; *@p slow_wakes: how many needed more than one renewal
 * to be established again.  @p keepalive_us: 0, or the keepalive spacing
 * to use instead of the library's (for the control). */
static int woken_leases_lapsed(int runs, int timeout_ms, int tick_ms,
                               int64_t keepalive_us, int *slow_wakes) {
  GRand *rng = g_rand_new_with_seed(11);
  zkrc__lease_params p;
  zkrc__lease_params_init(&p, timeout_ms, tick_ms, 0);
  if (keepalive_us > 0)
    p.keepalive_us = keepalive_us;
  int lapsed = 0;
  *slow_wakes = 0;
  for (int i = 0; i < runs; i++) {
    zkrc__lease l;
    zkrc__lease_begin_session(&l, &p, 0, MS);
    zkrc__lease_rest(&l, MS);
    int64_t wakes = MS + g_rand_int_range(rng, 0, (gint32)(4 * p.timeout_us));
    int64_t end = wakes + 4 * p.timeout_us, sent = MS;
    int renewals_to_establish = 0;
    while (sent < end && !l.lapsed) {
      int64_t replied = sent + g_rand_int_range(rng, 100, 5 * MS);
      if (l.resting && sent < wakes) {
        zkrc__lease_touched(&l, sent, replied);
        sent = MIN(sent + p.keepalive_us, wakes);
        continue;
      }
      if (l.resting)
        zkrc__lease_wake(&l, sent);
      if (!l.established)
        renewals_to_establish++;
      zkrc__lease_confirm(&l, sent, replied);
      sent = zkrc__lease_next_renewal_for(&l, sent, replied);
    }
    lapsed += l.lapsed;
    *slow_wakes += renewals_to_establish > 1;
  }
  g_rand_free(rng);
  return lapsed;
}

/* Timeouts and ticks (0: not told, ZooKeeper's default assumed). */
static const int woken_cases[][2] = {{1000, 500},   {2000, 200}, {4000, 2000},
                                     {10000, 2000}, {400, 200},  {2000, 0},
                                     {4000, 0},     {10000, 0}};

static void test_woken_leases_do_not_lapse_on_a_healthy_follower(void) {
  for (size_t i = 0; i < G_N_ELEMENTS(woken_cases); i++) {
    int slow;
    int lapsed = woken_leases_lapsed(3000, woken_cases[i][0], woken_cases[i][1],
                                     0, &slow);
    printf("\n    timeout %5d ms, tick %4d ms: %d of 3000 woken leases "
           "lapsed",
           woken_cases[i][0], woken_cases[i][1], lapsed);
    CU_ASSERT_EQUAL(lapsed, 0);
  }
  printf("\n    ");
}

/* Latency: on a healthy follower, the first renewal after a wake
 * establishes the lease (a grant to a rested waiter costs one round trip
 * to the leader), whatever the timeout and tick, told or assumed. */
static void test_one_renewal_establishes_a_woken_lease(void) {
  for (size_t i = 0; i < G_N_ELEMENTS(woken_cases); i++) {
    int slow;
    zkrc__lease_params p;
    zkrc__lease_params_init(&p, woken_cases[i][0], woken_cases[i][1], 0);
    woken_leases_lapsed(3000, woken_cases[i][0], woken_cases[i][1], 0, &slow);
    printf("\n    timeout %5d ms, tick %4d ms, keepalives %4.0f ms apart: "
           "%d of 3000 wakes needed a second renewal",
           woken_cases[i][0], woken_cases[i][1], p.keepalive_us / 1000.0, slow);
    CU_ASSERT_EQUAL(slow, 0);
  }
  printf("\n    ");
}

/* The control: keepalives a period apart, with a timeout of two assumed
 * ticks, leave wakes with no keepalive to establish on. */
static void test_latency_check_catches_keepalives_a_period_apart(void) {
  zkrc__lease_params p;
  zkrc__lease_params_init(&p, 2000, 0, 0);
  int slow;
  int lapsed = woken_leases_lapsed(3000, 2000, 0, p.period_us, &slow);
  printf("(keepalives %.0f ms apart: %d of 3000 wakes needed a second "
         "renewal, %d lapsed) ",
         p.period_us / 1000.0, slow, lapsed);
  CU_ASSERT(slow > 0);
  CU_ASSERT_EQUAL(lapsed, 0);
}

/* The control: a library that took the follower's answers to keepalives
 * for renewals would extend the lease on a follower cut off from the
 * leader, and the simulation must catch it. */
static void test_simulation_catches_keepalives_taken_for_renewals(void) {
  int64_t closest;
  int broken = broken_promises(3000, 4000, 200, 0, 0, KEEPALIVE_LIE, &closest);
  printf("(%d of 3000 runs broke the promise, by up to %.1f ms) ", broken,
         closest / 1000.0);
  CU_ASSERT(broken > 0);
}

static void add_suites(void) {
  ZKT_SUITE("lease", {"parameters", test_parameters},
            {"scheduling allowance", test_allowance},
            {"new session starts from its opening",
             test_new_session_starts_from_its_opening},
            {"extended from the renewal before",
             test_extended_from_the_renewal_before},
            {"a new connection starts over", test_a_new_connection_starts_over},
            {"a run-out lease stays out", test_a_run_out_lease_stays_out},
            {"next renewal", test_next_renewal},
            {"second renewal soon after a reconnection",
             test_second_renewal_soon_after_a_reconnection},
            {"floor holds while renewals keep up",
             test_floor_holds_while_renewals_keep_up},
            {"simulated servers never expire a leased session",
             test_simulated_servers_never_expire_a_leased_session},
            {"a resting lease lapses only when unheard",
             test_a_resting_lease_lapses_only_when_unheard},
            {"woken in time the deadline stands",
             test_woken_in_time_the_deadline_stands},
            {"a keepalive is only the earlier request",
             test_a_keepalive_is_only_the_earlier_request},
            {"a renewal that extended nothing is followed soon",
             test_a_renewal_that_extended_nothing_is_followed_soon},
            {"a woken lease is not established on a stale proof",
             test_a_woken_lease_is_not_established_on_a_stale_proof},
            {"simulated servers never expire a woken lease",
             test_simulated_servers_never_expire_a_woken_lease},
            {"woken leases do not lapse on a healthy follower",
             test_woken_leases_do_not_lapse_on_a_healthy_follower},
            {"one renewal establishes a woken lease",
             test_one_renewal_establishes_a_woken_lease},
            {"latency check catches keepalives a period apart",
             test_latency_check_catches_keepalives_a_period_apart},
            {"simulation catches keepalives taken for renewals",
             test_simulation_catches_keepalives_taken_for_renewals},
            {"simulation catches too short a relay",
             test_simulation_catches_too_short_a_relay});
}

int main(void) { return zkt_run("test_lease", add_suites); }
