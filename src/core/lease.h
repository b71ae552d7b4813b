/*
 * The session lease: how long the servers certainly keep our ZooKeeper
 * session, computed from renewals they answered.  Pure functions on a small
 * state, no I/O and no clock of their own (every time is an argument), so
 * that the rule can be tested on in-memory input (tests/test_lease.c).
 *
 * Why a renewal proves anything.  The leader expires a session one session
 * timeout T after the last time *it* heard of the session (rounded up to a
 * tick: ExpiryQueue), and it hears of a client connected to a follower only
 * through that follower: the leader pings every follower every half tick and
 * the follower answers with the sessions it heard from since the previous
 * ping (LearnerSessionTracker's touch table).  A follower's own answers do
 * not prove that the leader heard anything: a follower cut off from the
 * leader goes on answering reads and pings for syncLimit ticks.  So the
 * renewal is a sync, which the follower must forward to the leader and the
 * leader must answer.
 *
 * The rule.  Let renewal S' be sent at s' and answered at r', and a later
 * renewal S, on the same connection, be sent at s >= r' + relay and answered.
 * S' reached the follower before r'; a ping exchange with the leader came
 * between (the leader asks every half tick; relay allows for that plus
 * scheduling); the follower answered that ping before forwarding S (both go
 * to the leader in order on one connection, and S was forwarded after it
 * arrived); and S was answered, so the leader received that ping answer and
 * with it our session's touch from no earlier than s'.  Hence the leader
 * cannot expire the session before s' + T, and the lease runs until
 *
 *     s' + T - drift
 *
 * where drift allows for the clocks' rates (0.1% of T, twice the 500 ppm a
 * disciplined clock may be slewed) and for scheduling: the allowance, the
 * time our lapse timer may fire late and LOST take to reach the recipes
 * and the application's callbacks (zkrc_session_options.
 * lease_allowance_ms; by default a tenth of T, at most 100 ms).  relay is
 * 0.6 tick: the half tick between the leader's pings, and a tenth of a tick
 * for the leader's ping loop running late and the follower answering.  A brand-new
 * session starts with a lease from the moment its handle was opened (the
 * leader created the session after that).  A new connection (after a
 * reconnection) keeps the lease it has, and extends it from its second
 * renewal on.  Connected to the leader itself the rule only underestimates.
 *
 * Resting.  A lease costs the leader a sync per period, so it is renewed
 * only while something depends on it (a hold, a leadership, a registered
 * node); otherwise it rests: no renewal is sent and the deadline is not
 * extended.  A resting session sends a keepalive instead (a read the
 * follower answers on its own, in place of the client's ping, which it
 * makes unnecessary): the follower touched the session when the keepalive
 * reached it, so a keepalive counts as the *earlier* request of the rule
 * above, never as the later one, which must be a sync the leader
 * answered.  When something comes to depend on a resting lease, one sync
 * sent a relay after a keepalive's answer establishes it again; the
 * keepalives go close enough together that the sync sent at once always
 * finds one (zkrc__lease_params.keepalive_us).
 *
 * Heard.  Any answer (keepalive or renewal) sent at s shows that the
 * server had the session then; one that stays silent until s + T - drift
 * has probably lost it.  A resting lease (and a woken one, until a renewal
 * establishes it again) lapses then: not a broken promise, since nothing
 * depended on it, but the moment to start over, as Curator reports LOST
 * after a session timeout without its servers.
 *
 * Assumptions, stated where the library documents the lease: the servers'
 * tick is at most the assumed one (zkrc_session_options.server_tick_ms); the
 * leader's pings and the followers' answers keep to a tenth of a tick of
 * their schedule; clock rates differ by less than 0.1%.  Not covered: an operator
 * closing the session from another handle (the servers then revoke at once),
 * and a leader cut off from its quorum that answers syncs until it notices
 * (up to syncLimit + 1 ticks) while the rest elect a new one: the new
 * leader restarts every session's timeout when it takes over, which covers
 * it whenever the renewal period exceeds about a tick and a half.
 */
#ifndef ZKRC_LEASE_H
#define ZKRC_LEASE_H

#include <stdint.h>

#include <glib.h>

/* Times are g_get_monotonic_time() microseconds (CLOCK_MONOTONIC). */

typedef struct zkrc__lease_params {
  int64_t timeout_us; /* the negotiated session timeout T */
  int64_t relay_us;   /* a ping exchange follower-leader happens within this */
  int64_t drift_us;   /* clock rate and scheduling allowance */
  int64_t allowance_us; /* the scheduling allowance alone */
  int64_t period_us;    /* how often a renewal is sent */
  /* How often a resting lease sends a keepalive: the period, or less when
   * the timeout is only a few ticks (zkrc__lease_params_init), so that
   * one renewal always finds a keepalive to establish a woken lease on. */
  int64_t keepalive_us;
} zkrc__lease_params;

/* Renewals remembered per connection: enough to find one sent a relay
 * before the latest even when replies are slow. */
#define ZKRC__LEASE_HISTORY 8

typedef struct zkrc__lease_renewal {
  int64_t sent, replied;
} zkrc__lease_renewal;

typedef struct zkrc__lease {
  zkrc__lease_params p;
  /* Until when the servers certainly keep the session; 0: no lease yet. */
  int64_t deadline;
  /* The deadline was in the future at some point: its passing is a loss.
   * A session whose first lease was already over when it connected (a very
   * slow connect) is not established until a renewal extends it; until
   * then it lapses only when unheard (see "Heard"), and its renewals go
   * a relay apart. */
  gboolean established;
  gboolean lapsed; /* ran out: nothing extends it any more */
  /* Nothing depends on it (see "Resting" above): not extended. */
  gboolean resting;
  /* Until when a server that answered nothing since is presumed to keep
   * the session (see "Heard" above); 0: nothing heard yet. */
  int64_t heard_until;
  /* Renewals (and keepalives) answered on the current connection, oldest
   * first. */
  zkrc__lease_renewal hist[ZKRC__LEASE_HISTORY];
  int n;
  /* The latest renewal answered extended the deadline. */
  gboolean extended;
} zkrc__lease;

/* The parameters for a negotiated timeout of @p timeout_ms, an assumed
 * server tick of @p tick_ms (<= 0: ZooKeeper's default 2000 ms, but at most
 * half the timeout, the servers' default minimum session timeout being two
 * ticks) and a scheduling allowance of @p allowance_ms (<= 0: the
 * default, zkrc__lease_default_allowance_ms()). */
void zkrc__lease_params_init(zkrc__lease_params *p, int timeout_ms, int tick_ms,
                             int allowance_ms);

/* The scheduling allowance for a timeout of @p timeout_ms when the
 * application names none: a tenth of it, at most 100 ms. */
int zkrc__lease_default_allowance_ms(int timeout_ms);

/* A new ZooKeeper session, opened at @p opened (before its handle was
 * created), known established at @p now. */
void zkrc__lease_begin_session(zkrc__lease *l, const zkrc__lease_params *p,
                               int64_t opened, int64_t now);

/* A new connection of the same session: earlier renewals prove nothing about
 * the new server's exchanges with the leader. */
void zkrc__lease_new_connection(zkrc__lease *l);

/* A renewal sent at @p sent on the current connection was answered at
 * @p replied.  Returns TRUE when this moved the deadline later (and so may
 * have established the lease).  A lapsed lease, or one that ran out before
 * @p replied, is not extended. */
gboolean zkrc__lease_confirm(zkrc__lease *l, int64_t sent, int64_t replied);

/* A request other than a renewal (a keepalive), sent at @p sent on the
 * current connection, was answered at @p replied by the server we are
 * connected to: remembered as the earlier request of a later renewal,
 * extending nothing by itself. */
void zkrc__lease_touched(zkrc__lease *l, int64_t sent, int64_t replied);

/* Nothing depends on the lease any more at @p now: it is no longer
 * renewed, and it lapses only when the servers were not heard from for a
 * session timeout (zkrc__lease_lapse_at).  A lease whose deadline passed
 * already lapses (its loss is due, and told). */
void zkrc__lease_rest(zkrc__lease *l, int64_t now);

/* Something depends on the lease again at @p now.  A deadline far enough
 * ahead for the renewals to extend it in time stands (it was proven:
 * zkrc__lease_wake_margin); a nearer one is forgotten, and the next
 * renewals establish the lease anew. */
void zkrc__lease_wake(zkrc__lease *l, int64_t now);

/* How much of a lease must be left for a wake to keep it, or for a
 * renewal to establish one: a relay, which the renewal that extends it
 * may have to wait, and half a period for the answers and scheduling (the
 * steady schedule's own slack is of that order). */
int64_t zkrc__lease_wake_margin(const zkrc__lease_params *p);

/* When the lease lapses: its deadline while it is established and not
 * resting; otherwise when the servers will have been silent too long
 * (the later of heard_until and a resting lease's deadline).  0: never
 * (nothing proven or heard yet). */
int64_t zkrc__lease_lapse_at(const zkrc__lease *l);

/* Has the lease run out at @p now?  (Lapsed, or past its lapse time.) */
gboolean zkrc__lease_expired_at(const zkrc__lease *l, int64_t now);

/* Microseconds of lease left at @p now (0 when none, lapsed or run out). */
int64_t zkrc__lease_remaining(const zkrc__lease *l, int64_t now);

/* When to send the next renewal after one sent at @p sent was answered at
 * @p replied: a period later, and late enough to extend from it. */
int64_t zkrc__lease_next_renewal(const zkrc__lease_params *p, int64_t sent,
                                 int64_t replied);

/* The same for the renewal just confirmed on @p l: when that answer
 * extended nothing (the connection's first, after a reconnection or at the
 * session's start; one sent too soon after a keepalive's answer; a lease
 * not established, woken from rest), the next one will, so it goes as
 * soon as it can, a relay after this answer, instead of a period after
 * this one was sent.  A client that
 * reconnected after a member failed then regains a full lease within about
 * a tick instead of a third of the session timeout, and is not declared
 * lost meanwhile when its lease was short. */
int64_t zkrc__lease_next_renewal_for(const zkrc__lease *l, int64_t sent,
                                     int64_t replied);

/* While renewals are answered within an eighth of a period, the remaining
 * lease stays above this (microseconds; 0 if the parameters allow no such
 * promise). */
int64_t zkrc__lease_floor(const zkrc__lease_params *p);

#endif /* ZKRC_LEASE_H */
