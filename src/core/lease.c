/*
 * The session lease's arithmetic (see lease.h for the argument).
 */
#include "config.h"

#include <string.h>

#include "core/lease.h"

/* ZooKeeper's default tickTime, assumed when the application names none. */
#define DEFAULT_TICK_MS 2000
/* The renewal period, as a share of the session timeout: a little more
 * often than the ZooKeeper client pings an idle connection (every third of
 * the timeout), so that the renewals replace its pings rather than add to
 * them. */
#define PERIOD_PERMILLE 300
/* The default scheduling allowance (lease.h): a tenth of the session
 * timeout, at most this.  Measured on two loaded cores (bench/RESULTS.md,
 * "Telling a loss in time"), LOST reached the callbacks within tens of
 * milliseconds of the lapse. */
#define DEFAULT_ALLOWANCE_MAX_MS 100

int zkrc__lease_default_allowance_ms(int timeout_ms) {
  int tenth = timeout_ms / 10;
  return tenth < DEFAULT_ALLOWANCE_MAX_MS ? tenth : DEFAULT_ALLOWANCE_MAX_MS;
}

/* A woken lease is established by its first renewal, sent at w, when a
 * keepalive was answered at least a relay before w (the rule's earlier
 * request) and sent late enough that the lease from it leaves a wake
 * margin after the answer (zkrc__lease_confirm): sent within the window
 * [w - (T - drift - margin), w - relay].  Keepalives closer together than
 * that window always leave one in it; a quarter of it is kept for their
 * answers and a late timer.  With ZooKeeper's ticks unknown and a timeout
 * of a few seconds, the assumed tick is half the timeout and the window
 * only a quarter of it, less than a period: a period apart, a wake would
 * then often wait for a second renewal a relay after the first (bench/
 * RESULTS.md: half the holds in a chaos run).  A window too narrow to be
 * worth the traffic (under a third of a period) keeps the period. */
static int64_t keepalive_spacing(const zkrc__lease_params *p) {
  int64_t window =
      p->timeout_us - p->drift_us - zkrc__lease_wake_margin(p) - p->relay_us;
  int64_t spacing = window * 3 / 4;
  if (spacing >= p->period_us || spacing < p->period_us / 3)
    return p->period_us;
  return spacing;
}

void zkrc__lease_params_init(zkrc__lease_params *p, int timeout_ms, int tick_ms,
                             int allowance_ms) {
  if (timeout_ms < 1)
    timeout_ms = 1;
  int max_tick = timeout_ms / 2 > 0 ? timeout_ms / 2 : 1;
  if (tick_ms <= 0)
    tick_ms = DEFAULT_TICK_MS < max_tick ? DEFAULT_TICK_MS : max_tick;
  if (allowance_ms <= 0)
    allowance_ms = zkrc__lease_default_allowance_ms(timeout_ms);
  if (allowance_ms > timeout_ms / 2) /* the servers chose a shorter T */
    allowance_ms = timeout_ms / 2;
  int64_t t = (int64_t)timeout_ms * 1000;
  p->timeout_us = t;
  p->allowance_us = (int64_t)allowance_ms * 1000;
  p->relay_us = (int64_t)tick_ms * 1000 * 6 / 10;
  p->drift_us = t / 1000 + p->allowance_us;
  p->period_us = t * PERIOD_PERMILLE / 1000;
  p->keepalive_us = keepalive_spacing(p);
}

void zkrc__lease_begin_session(zkrc__lease *l, const zkrc__lease_params *p,
                               int64_t opened, int64_t now) {
  memset(l, 0, sizeof *l);
  l->p = *p;
  /* The leader created the session after the handle was opened. */
  l->deadline = opened + p->timeout_us - p->drift_us;
  l->established = l->deadline > now;
}

void zkrc__lease_new_connection(zkrc__lease *l) { l->n = 0; }

int64_t zkrc__lease_lapse_at(const zkrc__lease *l) {
  if (l->established && !l->resting)
    return l->deadline;
  if (l->established && l->deadline > l->heard_until)
    return l->deadline; /* resting on a deadline not yet passed */
  return l->heard_until;
}

gboolean zkrc__lease_expired_at(const zkrc__lease *l, int64_t now) {
  int64_t at = zkrc__lease_lapse_at(l);
  return l->lapsed || (at > 0 && now >= at);
}

/* Any answer to a request sent at @p sent: the server had the session. */
static void heard(zkrc__lease *l, int64_t sent) {
  int64_t until = sent + l->p.timeout_us - l->p.drift_us;
  if (until > l->heard_until)
    l->heard_until = until;
}

int64_t zkrc__lease_remaining(const zkrc__lease *l, int64_t now) {
  if (!l->established || l->lapsed || now >= l->deadline)
    return 0;
  return l->deadline - now;
}

void zkrc__lease_rest(zkrc__lease *l, int64_t now) {
  if (l->lapsed || l->resting)
    return;
  if (zkrc__lease_expired_at(l, now))
    l->lapsed = TRUE; /* the lapse timer was late: still a loss */
  else
    l->resting = TRUE;
}

int64_t zkrc__lease_wake_margin(const zkrc__lease_params *p) {
  return p->relay_us + p->period_us / 2;
}

void zkrc__lease_wake(zkrc__lease *l, int64_t now) {
  if (!l->resting)
    return;
  l->resting = FALSE;
  if (now + zkrc__lease_wake_margin(&l->p) >= l->deadline) {
    /* Too little left to be extended in time (or none): start again
     * from the renewals, no loss. */
    l->established = FALSE;
    l->deadline = 0;
  }
}

static void remember(zkrc__lease *l, int64_t sent, int64_t replied) {
  if (l->n == ZKRC__LEASE_HISTORY) {
    memmove(&l->hist[0], &l->hist[1], sizeof l->hist[0] * (l->n - 1));
    l->n--;
  }
  l->hist[l->n].sent = sent;
  l->hist[l->n].replied = replied;
  l->n++;
}

void zkrc__lease_touched(zkrc__lease *l, int64_t sent, int64_t replied) {
  if (zkrc__lease_expired_at(l, replied))
    return; /* too late: the lapse stands */
  remember(l, sent, replied);
  heard(l, sent);
}

gboolean zkrc__lease_confirm(zkrc__lease *l, int64_t sent, int64_t replied) {
  if (zkrc__lease_expired_at(l, replied)) {
    l->lapsed = TRUE;
    return FALSE;
  }
  /* The latest earlier renewal answered at least a relay before this one
   * was sent: the leader has heard of us since that one was sent. */
  int64_t proven = INT64_MIN;
  for (int i = l->n; i-- > 0;) {
    if (l->hist[i].replied + l->p.relay_us <= sent) {
      proven = l->hist[i].sent;
      break;
    }
  }
  remember(l, sent, replied);
  heard(l, sent);
  l->extended = FALSE;
  if (proven == INT64_MIN)
    return FALSE;
  int64_t candidate = proven + l->p.timeout_us - l->p.drift_us;
  if (candidate <= l->deadline || candidate <= replied)
    return FALSE;
  /* Establishing (after a wake, or a slow connect): not on a proof so old
   * (a keepalive up to a relay and a period back) that the lease would
   * end before the next renewal, a relay after this answer, could extend
   * it.  The renewal a relay later proves this one instead. */
  if (!l->established && candidate < replied + zkrc__lease_wake_margin(&l->p))
    return FALSE;
  l->deadline = candidate;
  l->established = TRUE;
  l->extended = TRUE;
  return TRUE;
}

int64_t zkrc__lease_next_renewal(const zkrc__lease_params *p, int64_t sent,
                                 int64_t replied) {
  int64_t by_period = sent + p->period_us;
  int64_t by_relay = replied + p->relay_us;
  return by_period > by_relay ? by_period : by_relay;
}

int64_t zkrc__lease_next_renewal_for(const zkrc__lease *l, int64_t sent,
                                     int64_t replied) {
  /* That answer extended nothing: the next one will. */
  if (!l->extended || !l->established)
    return replied + l->p.relay_us;
  return zkrc__lease_next_renewal(&l->p, sent, replied);
}

int64_t zkrc__lease_floor(const zkrc__lease_params *p) {
  /* When every renewal is answered within an eighth of a period (a healthy
   * connection answers within milliseconds), they go out `spacing` apart
   * (zkrc__lease_next_renewal); the lease is extended from the one before
   * the latest answered, and the next answer may take that eighth again. */
  int64_t answer = p->period_us / 8;
  int64_t by_relay = p->relay_us + answer;
  int64_t spacing = p->period_us > by_relay ? p->period_us : by_relay;
  int64_t floor = p->timeout_us - p->drift_us - 2 * spacing - answer;
  return floor > 0 ? floor : 0;
}
