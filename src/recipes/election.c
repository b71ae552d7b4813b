/*
 * Leader election: one contender at a time on the shared contender queue.
 *
 * Each time the participant enters the queue (join, resign, rejoin after a
 * lost session) it starts a new "round": a contender plus the bookkeeping the
 * contender's callbacks need.  Callbacks from an earlier round are ignored,
 * so a late "ended" of a resigned round cannot revoke the next one.
 */
#include "config.h"

#include <string.h>

#include "core/names.h"
#include "queue/queue.h"
#include "recipes/election_private.h"
#include "recipes/recipe.h"
#include "recipes/stats_internal.h"
#include "core/util.h"
#include "zkrecipes.h"
#include "zkrecipes/election.h"

typedef struct round round;

struct zkrc_election {
  zkrc__recipe r; /* references, mutex, condition, queue; first */
  zkrc_election_event_fn on_event;
  void *event_arg;
  gboolean revoke_on_suspend;
  gboolean no_rejoin;

  gboolean joined;    /* wants to take part */
  round *current;     /* the round in the queue now, or NULL */
  gboolean leader;    /* elected and not revoked */
  gboolean suspended; /* revoked for a dropped connection, node still first */
  /* The token of the leadership the application was last told ELECTED of
   * and not yet REVOKED (0: none); events are checked against it when
   * they are delivered, which may be long after they were posted. */
  int64_t told_token;
  /* An ELECTED dropped because its delivery found the lease out, while we
   * still lead with that token: told again once the lease is back (the
   * renewals may restore it; the queue sends no second ELECTED). */
  GSource *retell_timer;
  int retell_ms;
  int64_t retell_token; /* the leadership whose ELECTED was dropped */
  int64_t token;
  char *node;
  /* Statistics: leaderships as acquisitions, resignations (and leaves) as
   * releases, other revocations as losses; since when the current round
   * waits, and since when we lead. */
  zkrc__lock_stats stats;
  int64_t round_us, led_us, suspended_us;
};

struct round {
  zkrc__stake st; /* its contender callbacks and recipe; first */
  gint refs;
  zkrc_election *e;
  zkrc__contender *c;
};

const char *zkrc_election_event_name(zkrc_election_event_type type) {
  return type == ZKRC_ELECTION_ELECTED   ? "elected"
         : type == ZKRC_ELECTION_REVOKED ? "revoked"
         : type == ZKRC_ELECTION_FAILED  ? "failed"
                                         : "unknown";
}

/* The defaults, in a whole struct of ours. */
static void election_options_defaults(zkrc_election_options *opts) {
  zkrc__recipe_options_init(opts, sizeof *opts);
}

void zkrc_election_options_init_sized(zkrc_election_options *opts,
                                      size_t size) {
  zkrc_election_options full;
  election_options_defaults(&full);
  zkrc__options_give(opts, size, &full, sizeof full);
}

/* ------------------------------------------------------------ lifetime */

static zkrc_election *election_ref(zkrc_election *e) {
  zkrc__recipe_ref(&e->r);
  return e;
}

static void election_unref(zkrc_election *e) { zkrc__recipe_unref(&e->r); }

static void finalize_election(zkrc__recipe *r) {
  zkrc_election *e = (zkrc_election *)r;
  if (e->retell_timer) /* fired or destroyed: its reference is gone */
    g_source_unref(e->retell_timer);
  g_free(e->node);
  g_free(e);
}

static void round_unref(round *r) {
  if (g_atomic_int_dec_and_test(&r->refs))
    zkrc__recipe_stake_free(&r->e->r, r->c, r);
}

/* ------------------------------------------------------ user callbacks */

typedef struct election_event_call {
  zkrc__object_event ev; /* first */
  zkrc_election_event info;
  char *node; /* info.node's */
} election_event_call;

static int64_t leader_lease_left_locked(zkrc_election *e);

/* Is the event still true when it is delivered?  ELECTED only while we
 * still lead with that token under a live lease: an executor may run it
 * long after it was posted, after the leadership was lost; then neither it
 * nor the REVOKED that follows is told.  REVOKED only of a leadership the
 * application was told of. */
static gboolean still_true_locked(zkrc_election *e,
                                  const zkrc_election_event *info) {
  if (info->type == ZKRC_ELECTION_ELECTED) {
    if (!e->leader || e->token != info->token || e->told_token == info->token ||
        leader_lease_left_locked(e) <= 0)
      return FALSE; /* not ours now, told already, or no lease to tell */
    e->told_token = info->token;
  } else if (info->type == ZKRC_ELECTION_REVOKED) {
    if (e->told_token != info->token)
      return FALSE;
    e->told_token = 0;
  }
  return TRUE;
}

static void post_event_locked(zkrc_election *e, zkrc_election_event_type ev,
                              int reason, int zk_error);

#define RETELL_FIRST_MS 20
#define RETELL_MAX_MS 1000

/* Do we lead, untold, with no lease to tell it under now? */
static gboolean untold_without_lease_locked(zkrc_election *e) {
  return e->leader && e->told_token != e->token &&
         leader_lease_left_locked(e) <= 0 && !zkrc__object_ending(&e->r.o);
}

static void retell_armed_locked(zkrc_election *e);

/* The re-tell's timer: ELECTED posted again (checked again when it is
 * delivered) once the lease is back; else look again later.  Bounded by
 * the leadership: once it ends (REVOKED, a loss, a free) nothing is
 * told and the timer stops. */
static gboolean retell_fired(gpointer data) {
  zkrc_election *e = data;
  g_mutex_lock(&e->r.o.mu);
  GSource *timer = e->retell_timer;
  e->retell_timer = NULL;
  if (timer) {
    g_source_unref(timer);
    /* Only the leadership whose ELECTED was dropped: another one's own
     * ELECTED tells it. */
    gboolean same = e->leader && e->token == e->retell_token &&
                    e->told_token != e->token && !zkrc__object_ending(&e->r.o);
    if (same && leader_lease_left_locked(e) <= 0)
      retell_armed_locked(e);
    else if (same)
      post_event_locked(e, ZKRC_ELECTION_ELECTED, ZKRC_OK, ZOK);
  }
  g_mutex_unlock(&e->r.o.mu);
  return G_SOURCE_REMOVE;
}

static void election_unref_data(void *data) { election_unref(data); }

static void retell_armed_locked(zkrc_election *e) {
  if (e->retell_timer)
    return;
  int ms = e->retell_ms ? e->retell_ms : RETELL_FIRST_MS;
  e->retell_ms = MIN(ms * 2, RETELL_MAX_MS);
  e->retell_timer = zkrc__session_timer(e->r.q.session, ms, retell_fired,
                                        election_ref(e), election_unref_data);
}

/* No leadership to tell any more (revoked, resigned, freed): the timer
 * and its reference on the election go now, not at its next firing. */
static void retell_stopped_locked(zkrc_election *e) {
  GSource *timer = e->retell_timer;
  e->retell_timer = NULL;
  e->retell_ms = 0;
  if (timer) {
    g_source_destroy(timer); /* its reference goes; not the last one */
    g_source_unref(timer);
  }
}

/* Told unless the election was closed (zkrc_election_free(): the object
 * drops it) or the event is no longer true.  An ELECTED of the leadership
 * we still hold, dropped only for want of a lease, is told again later. */
static void election_event_tell(zkrc__object *o, zkrc__object_event *ev) {
  election_event_call *call = (election_event_call *)ev;
  zkrc_election *e = (zkrc_election *)o;
  g_mutex_lock(&e->r.o.mu);
  gboolean wanted = still_true_locked(e, &call->info);
  if (wanted)
    e->retell_ms = 0;
  else if (call->info.type == ZKRC_ELECTION_ELECTED &&
           call->info.token == e->token && untold_without_lease_locked(e)) {
    e->retell_token = e->token;
    retell_armed_locked(e);
  }
  g_mutex_unlock(&e->r.o.mu);
  if (wanted)
    e->on_event(e, &call->info, e->event_arg);
}

static void election_event_release(zkrc__object_event *ev) {
  election_event_call *call = (election_event_call *)ev;
  g_free(call->node);
  g_free(call);
}

static void post_event_locked(zkrc_election *e, zkrc_election_event_type ev,
                              int reason, int zk_error) {
  if (e->on_event == NULL || zkrc__object_ending(&e->r.o))
    return;
  election_event_call *call = zkrc__object_event_new(
      sizeof *call, election_event_tell, election_event_release);
  call->info = (zkrc_election_event){
      .type = ev,
      .reason = reason,
      .zk_error = zk_error,
      /* FAILED is about no term: the token of an earlier one would mislead. */
      .token = ev == ZKRC_ELECTION_FAILED ? 0 : e->token,
  };
  call->node = g_strdup(e->node);
  call->info.node = call->node;
  zkrc__object_tell_locked(&e->r.o, &call->ev);
}

/* Microseconds left of our leadership's lease: 0 when we do not lead. */
static int64_t leader_lease_left_locked(zkrc_election *e) {
  if (!e->leader || e->current == NULL)
    return 0;
  return zkrc__contender_lease_left(e->current->c);
}

/* Stop leading (if we do), telling the application why. */
static void revoke_locked(zkrc_election *e, int reason, int zk_error) {
  if (e->leader) {
    post_event_locked(e, ZKRC_ELECTION_REVOKED, reason, zk_error);
    if (reason == ZKRC_OK)
      e->stats.releases++;
    else
      e->stats.lost++;
    zkrc__histogram_record(&e->stats.hold, g_get_monotonic_time() - e->led_us);
  }
  e->leader = FALSE;
  e->suspended = FALSE;
  retell_stopped_locked(e);
  g_cond_broadcast(&e->r.o.cond);
}

/* ------------------------------------------------- contender callbacks */

static void start_round_locked(zkrc_election *e);

static void on_front_locked(zkrc__stake *st, zkrc__contender *c) {
  round *r = (round *)st;
  zkrc_election *e = r->e;
  if (e->current == r && !e->leader) {
    e->leader = TRUE;
    e->led_us = g_get_monotonic_time();
    e->stats.acquisitions++;
    zkrc__histogram_record(&e->stats.wait, e->led_us - e->round_us);
    e->token = zkrc__contender_czxid(c);
    g_free(e->node);
    e->node = zkrc__contender_path(c);
    post_event_locked(e, ZKRC_ELECTION_ELECTED, ZKRC_OK, ZOK);
    g_cond_broadcast(&e->r.o.cond);
  }
}

static void on_connection_locked(zkrc__stake *st, zkrc_session_event_type ev) {
  round *r = (round *)st;
  zkrc_election *e = r->e;
  if (e->current == r && e->revoke_on_suspend) {
    if (ev == ZKRC_SESSION_EVENT_SUSPENDED && e->leader) {
      revoke_locked(e, ZKRC_ECONNLOSS, ZCONNECTIONLOSS);
      e->suspended = TRUE;
      e->suspended_us = g_get_monotonic_time();
    } else if (ev == ZKRC_SESSION_EVENT_RECONNECTED && e->suspended) {
      /* Same session, our node still first: we lead again. */
      e->suspended = FALSE;
      e->leader = TRUE;
      e->led_us = g_get_monotonic_time();
      e->stats.acquisitions++; /* its wait: since the suspension */
      zkrc__histogram_record(&e->stats.wait, e->led_us - e->suspended_us);
      post_event_locked(e, ZKRC_ELECTION_ELECTED, ZKRC_OK, ZOK);
      g_cond_broadcast(&e->r.o.cond);
    }
  }
}

static gboolean worth_rejoining(int err) {
  return err == ZKRC_ESESSIONEXPIRED || err == ZKRC_ESESSIONLOST ||
         err == ZKRC_ELOCKLOST;
}

static void on_ended_locked(zkrc__stake *st, int err, int zk_rc) {
  round *r = (round *)st;
  zkrc_election *e = r->e;
  if (e->current == r) {
    revoke_locked(e, err == ZKRC_OK ? ZKRC_ELOCKLOST : err, zk_rc);
    e->current = NULL;
    round_unref(r); /* the election's reference to its current round */
    if (e->joined && !e->no_rejoin && worth_rejoining(err)) {
      start_round_locked(e);
    } else if (e->joined) {
      e->joined = FALSE;
      e->stats.failures++;
      post_event_locked(e, ZKRC_ELECTION_FAILED, err, zk_rc);
    }
  }
}

static void round_stake_unref(zkrc__stake *st) { round_unref((round *)st); }

static const zkrc__stake_ops round_stake_ops = {
    .front_locked = on_front_locked,
    .connection_locked = on_connection_locked,
    .ended_locked = on_ended_locked,
    .unref = round_stake_unref,
};

/* ---------------------------------------------------------------- rounds */

static void start_task(void *data) {
  round *r = data;
  zkrc__contender_start(r->c);
  round_unref(r);
}

/* Enter the queue with a new node.  Called with e->r.o.mu held, so the start
 * itself runs on the session's worker (it may call back into us). */
static void start_round_locked(zkrc_election *e) {
  round *r = g_new0(round, 1);
  r->refs = 3; /* the election's, the contender's, the start task's */
  r->e = election_ref(e);
  r->st.ops = &round_stake_ops;
  r->st.recipe = &e->r;
  zkrc__contender_config cfg = {
      .queue = &e->r.q,
      .marker = "latch-",
      .markers = zkrc__latch_markers,
      .policy = zkrc__policy_exclusive,
      .watch_own_node = 1,
      .ops = &zkrc__stake_contender_ops,
      .ops_arg = &r->st,
  };
  r->c = zkrc__contender_new(&cfg);
  e->current = r;
  zkrc__recipe_stake_started_locked(&e->r);
  e->round_us = g_get_monotonic_time();
  zkrc__session_run_on_worker(e->r.q.session, start_task, r);
}

/* Take the current round out of the queue (its node is deleted).  Returns
 * the round, still referenced, for a caller that wants to wait for it. */
static round *end_round_locked(zkrc_election *e, int reason) {
  round *r = e->current;
  if (r == NULL)
    return NULL;
  revoke_locked(e, reason, ZOK);
  e->current = NULL;
  return r; /* the election's reference passes to the caller */
}

static void withdraw_round(round *r) {
  if (r) {
    zkrc__contender_withdraw(r->c);
    round_unref(r);
  }
}

/* ------------------------------------------------------------ public API */

static void configure_election(zkrc__recipe *r, const void *opts) {
  const zkrc_election_options *o = opts;
  zkrc_election *e = (zkrc_election *)r;
  e->on_event = o->on_event;
  e->event_arg = o->event_arg;
  e->revoke_on_suspend = o->revoke_on_suspend != 0;
  e->no_rejoin = o->no_rejoin != 0;
}

ZKRC__RECIPE_KIND(election_kind, zkrc_election, zkrc_election_options,
                  configure_election, finalize_election);

int zkrc_election_new(zkrc_election **out, zkrc_session *s, const char *path,
                      const zkrc_election_options *opts) {
  return zkrc__recipe_create((void **)out, &election_kind, s, path, opts);
}

int zkrc_election_join(zkrc_election *e) {
  if (e == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  if (zkrc__session_closed(e->r.q.session))
    return zkrc__fail(ZKRC_ECLOSED);
  g_mutex_lock(&e->r.o.mu);
  int err = zkrc__object_ending(&e->r.o) ? ZKRC_ECANCELED
            : e->joined                  ? ZKRC_ESTATE
                                         : ZKRC_OK;
  if (err == ZKRC_OK) {
    e->joined = TRUE;
    start_round_locked(e);
  }
  g_mutex_unlock(&e->r.o.mu);
  return zkrc__fail(err);
}

int zkrc_election_resign(zkrc_election *e) {
  if (e == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  g_mutex_lock(&e->r.o.mu);
  if (!e->leader) {
    g_mutex_unlock(&e->r.o.mu);
    return zkrc__fail(ZKRC_ENOTLEADER);
  }
  round *old = end_round_locked(e, ZKRC_OK);
  /* The delete is sent now and the new create later (from the worker); one
   * session's requests are processed in order, so our new node lands behind
   * everyone waiting now. */
  zkrc__contender_withdraw(old->c);
  start_round_locked(e);
  g_mutex_unlock(&e->r.o.mu);
  round_unref(old);
  return ZKRC_OK;
}

int zkrc_election_leave(zkrc_election *e) {
  if (e == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  g_mutex_lock(&e->r.o.mu);
  if (!e->joined) {
    g_mutex_unlock(&e->r.o.mu);
    return zkrc__fail(ZKRC_ESTATE);
  }
  e->joined = FALSE;
  round *old = end_round_locked(e, ZKRC_OK);
  g_mutex_unlock(&e->r.o.mu);
  withdraw_round(old);
  return ZKRC_OK;
}

void zkrc_election_free(zkrc_election *e) {
  if (e == NULL)
    return;
  g_mutex_lock(&e->r.o.mu);
  /* Nothing more is told (queued events are dropped); a callback running
   * on another thread ends first. */
  zkrc__object_close_locked(&e->r.o);
  e->joined = FALSE;
  round *old = end_round_locked(e, ZKRC_OK);
  g_mutex_unlock(&e->r.o.mu);
  /* Our node is deleted in the background (also a create still in flight,
   * once answered), or by the session's reaper when that fails; the rounds
   * keep the election's memory until their contenders ended. */
  withdraw_round(old);
  election_unref(e);
}

int zkrc_election_free_async(zkrc_election *e, zkrc_callback_fn done,
                             void *arg) {
  if (e == NULL || done == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  g_mutex_lock(&e->r.o.mu);
  e->joined = FALSE;
  round *old = end_round_locked(e, ZKRC_OK); /* REVOKED, if we led */
  /* The end of the last round alive (our node deleted: this one's, or a
   * left or resigned one's still on its way) posts `done`. */
  zkrc__object_detach_locked(&e->r.o, done, arg);
  g_mutex_unlock(&e->r.o.mu);
  withdraw_round(old);
  election_unref(e); /* the application's reference */
  return ZKRC_OK;
}

/* leader_lease_left_locked, taking e->r.o.mu; 0 for a NULL @p e.  The lease
 * says no the moment it runs out (also after a freeze), even before the
 * session has declared itself lost and revoked us. */
static int64_t leader_lease_left(zkrc_election *e) {
  if (e == NULL)
    return 0;
  g_mutex_lock(&e->r.o.mu);
  int64_t left = leader_lease_left_locked(e);
  g_mutex_unlock(&e->r.o.mu);
  return left;
}

int zkrc_election_is_leader(zkrc_election *e) {
  return leader_lease_left(e) > 0;
}

int zkrc_election_lease_remaining(zkrc_election *e) {
  return (int)(leader_lease_left(e) / 1000);
}

int zkrc_election_wait_leader(zkrc_election *e, int timeout_ms) {
  if (e == NULL || !zkrc__timeout_valid(timeout_ms))
    return zkrc__fail(ZKRC_EINVAL);
  int64_t deadline = zkrc__deadline_after(timeout_ms);
  int err = ZKRC_OK;
  /* A free meanwhile wakes us (ZKRC_ESTATE) and may drop the last other
   * reference while we wait for the mutex. */
  election_ref(e);
  g_mutex_lock(&e->r.o.mu);
  while (!e->leader) {
    if (!e->joined) {
      err = ZKRC_ESTATE;
      break;
    }
    if (!zkrc__cond_wait_until(&e->r.o.cond, &e->r.o.mu, deadline) &&
        !e->leader) {
      err = ZKRC_ETIMEDOUT;
      break;
    }
  }
  g_mutex_unlock(&e->r.o.mu);
  election_unref(e);
  return zkrc__fail(err);
}

int zkrc_election_token(zkrc_election *e, int64_t *token) {
  if (e == NULL || token == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  g_mutex_lock(&e->r.o.mu);
  int err = e->leader ? ZKRC_OK : ZKRC_ENOTLEADER;
  if (err == ZKRC_OK)
    *token = e->token;
  g_mutex_unlock(&e->r.o.mu);
  return zkrc__fail(err);
}

int zkrc_election_query_leader(zkrc_session *s, const char *path, char **id,
                               int timeout_ms) {
  if (id)
    *id = NULL;
  if (s == NULL || id == NULL || zkrc_path_validate(path, NULL) != ZKRC_OK ||
      !zkrc__timeout_valid(timeout_ms))
    return zkrc__fail(ZKRC_EINVAL);
  char **gv = NULL;
  int err =
      zkrc__queue_participants(s, path, zkrc__latch_markers,
                               zkrc__queue_look_deadline(s, timeout_ms), &gv);
  if (err != ZKRC_OK)
    return err;
  if (gv[0]) {
    *id = strdup(gv[0]);
    if (*id == NULL)
      err = zkrc__fail(ZKRC_ENOMEM);
  }
  g_strfreev(gv);
  return err;
}

int zkrc_election_leader_id(zkrc_election *e, char **id, int timeout_ms) {
  if (id)
    *id = NULL;
  if (e == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  return zkrc_election_query_leader(e->r.q.session, e->r.q.dir, id, timeout_ms);
}

int zkrc_election_participants(zkrc_election *e, char ***ids, size_t *count,
                               int timeout_ms) {
  return zkrc__recipe_participants(e ? &e->r : NULL, zkrc__latch_markers, ids,
                                   count, timeout_ms);
}

const char *zkrc_election_path(zkrc_election *e) {
  return e ? e->r.q.dir : NULL;
}

int zkrc_election_list(zkrc_session *s, const char *path,
                       zkrc_participant **list, size_t *count, int timeout_ms) {
  return zkrc__queue_list_checked(s, path, zkrc__latch_markers, timeout_ms,
                                  list, count);
}

int zkrc_election_get_stats(zkrc_election *e, zkrc_lock_stats *out,
                            size_t size) {
  if (e == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  g_mutex_lock(&e->r.o.mu);
  zkrc__lock_stats copy = e->stats;
  uint32_t holding = e->leader ? 1 : 0;
  uint32_t waiting = e->current && !e->leader ? 1 : 0;
  int listed = e->current ? zkrc__contender_listed(e->current->c) : 0;
  g_mutex_unlock(&e->r.o.mu);
  return zkrc__stats_give(&copy, waiting, holding, (uint32_t)MAX(listed, 0),
                          out, size);
}

int zkrc__election_told(zkrc_election *e, int64_t token) {
  g_mutex_lock(&e->r.o.mu);
  int told = token != 0 && e->told_token == token;
  g_mutex_unlock(&e->r.o.mu);
  return told;
}
