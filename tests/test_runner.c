/*
 * Take turns and run while holding (zkrecipes/runner.h, issue 34): the
 * function runs while the hold is verified and the hold goes back when it
 * returns; its cancellation fires at a loss under a partition before the
 * next contender starts (tests/holds.h judges, with a control that it
 * catches), for the election kind too, and still after a cancel the
 * function ignores; an election granted with its lease out, or whose
 * ELECTED was dropped, still gets its turn; three runners take turns in
 * queue order; free and cancel while running; bad input; the election and
 * kazoo-lock kinds' nodes;
 * and turns shared with kazoo's Election.run and Curator's LeaderSelector
 * (autoRequeue) on one path, both directions.
 *
 * One member behind a fault proxy: zkt_session() goes through it,
 * zkt_direct_session() past it.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "core/object.h"
#include "holds.h"
#include "interop_peers.h"
#include "recipes/election_private.h"
#include "recipes/runner_private.h"
#include "session/session_private.h"
#include "stall.h"
#include "testutil.h"

#define STEP 10000 /* ms: any one step of a test */

/* A plain handle past the proxy. */
static zhandle_t *direct_raw(void) {
  return zkt_raw_to(zkrc_ensemble_direct_connect_string(zkt_ensemble()));
}

/* ------------------------------------------------------------ a worker */

typedef enum mode {
  QUICK = 1, /* work for work_ms (a wait on the cancellation), return */
  GO,        /* wait for the test's go (a pipe) or the cancellation: poll */
  CANCEL,    /* wait for the cancellation (at most 30 s) */
  IGNORE,    /* the control: ignore the cancellation until `other` ran */
  SELF_FREE, /* free its own runner, then return */
  STUBBORN   /* ignore the cancellation: wait for the test's go (a pipe) */
} mode;

typedef struct turns turns;

typedef struct worker {
  turns *t;
  int instance;
  mode mode;
  int work_ms;
  int result;
  int go[2]; /* GO: a byte written to go[1] lets the function return */
  /* Under t->mu. */
  int started, returned;
  int64_t token;
  int in_running;       /* zkrc_runner_is_running() inside the function */
  int reason;           /* zkrc_cancel_reason() when it returned */
  int fd_fired;         /* GO: the cancellation's fd was readable */
  GArray *events;       /* of zkrc_runner_event (node-less copies) */
  int64_t lost_us;      /* when LOST was told (zkt_hold_now_us), 0: never */
  int freed;            /* free_async's done */
  struct worker *other; /* IGNORE: until this one started */
  zkrc_runner *r;
} worker;

struct turns {
  GMutex mu;
  GCond cond;
  GArray *holds; /* of zkt_hold, appended as functions return */
  GArray *order; /* of int: the instance of each turn, as they started */
};

static void turns_init(turns *t) {
  g_mutex_init(&t->mu);
  g_cond_init(&t->cond);
  t->holds = g_array_new(FALSE, TRUE, sizeof(zkt_hold));
  t->order = g_array_new(FALSE, TRUE, sizeof(int));
}

static void turns_clear(turns *t) {
  g_array_free(t->holds, TRUE);
  g_array_free(t->order, TRUE);
  g_mutex_clear(&t->mu);
  g_cond_clear(&t->cond);
}

static void worker_init(worker *w, turns *t, int instance, mode m) {
  memset(w, 0, sizeof *w);
  w->t = t;
  w->instance = instance;
  w->mode = m;
  w->go[0] = w->go[1] = -1;
  if (m == GO || m == STUBBORN)
    CU_ASSERT_FATAL(pipe(w->go) == 0);
  w->events = g_array_new(FALSE, TRUE, sizeof(zkrc_runner_event));
}

static void worker_clear(worker *w) {
  if (w->go[0] >= 0) {
    close(w->go[0]);
    close(w->go[1]);
  }
  g_array_free(w->events, TRUE);
}

static void worker_go(worker *w) {
  char b = 1;
  CU_ASSERT_EQUAL(write(w->go[1], &b, 1), 1);
}

static int work(zkrc_runner *r, zkrc_cancel *c, int64_t token, void *arg) {
  worker *w = arg;
  turns *t = w->t;
  int64_t t0 = zkt_hold_now_us();
  int running = zkrc_runner_is_running(r);
  g_mutex_lock(&t->mu);
  w->started++;
  w->token = token;
  w->in_running = running;
  g_array_append_val(t->order, w->instance);
  mode m = w->mode; /* the test may change it between turns */
  int work_ms = w->work_ms;
  g_cond_broadcast(&t->cond);
  g_mutex_unlock(&t->mu);
  int fd_fired = 0;
  switch (m) {
  case QUICK:
    (void)zkrc_cancel_wait(c, work_ms > 0 ? work_ms : ZKRC_NO_WAIT);
    break;
  case GO: {
    struct pollfd p[2] = {{.fd = zkrc_cancel_fd(c), .events = POLLIN},
                          {.fd = w->go[0], .events = POLLIN}};
    while (poll(p, 2, 30000) < 0 && errno == EINTR)
      ;
    fd_fired = (p[0].revents & POLLIN) != 0;
    if (p[1].revents & POLLIN) {
      char b;
      (void)read(w->go[0], &b, 1);
    }
    break;
  }
  case CANCEL:
    (void)zkrc_cancel_wait(c, 30000);
    break;
  case STUBBORN: { /* the go only, cancelled or not */
    struct pollfd p = {.fd = w->go[0], .events = POLLIN};
    while (poll(&p, 1, 30000) < 0 && errno == EINTR)
      ;
    char b;
    if (p.revents & POLLIN)
      (void)read(w->go[0], &b, 1);
    break;
  }
  case SELF_FREE: /* does not wait for this function: it returns at once */
    zkrc_runner_free(r);
    (void)zkrc_cancel_wait(c, 30000); /* the free fires it */
    break;
  case IGNORE: { /* hold on, cancelled or not, until the other started */
    int64_t deadline = g_get_monotonic_time() + 30 * G_TIME_SPAN_SECOND;
    g_mutex_lock(&t->mu);
    while (w->other->started == 0 &&
           g_cond_wait_until(&t->cond, &t->mu, deadline))
      ;
    g_mutex_unlock(&t->mu);
    break;
  }
  }
  int64_t t1 = zkt_hold_now_us();
  int reason = zkrc_cancel_reason(c);
  g_mutex_lock(&t->mu);
  zkt_hold_add(t->holds, w->instance, token, t0, t1);
  w->returned++;
  w->reason = reason;
  w->fd_fired = fd_fired;
  g_cond_broadcast(&t->cond);
  g_mutex_unlock(&t->mu);
  return w->result;
}

static void on_event(zkrc_runner *r, const zkrc_runner_event *ev, void *arg) {
  (void)r;
  worker *w = arg;
  int64_t now = zkt_hold_now_us();
  g_mutex_lock(&w->t->mu);
  if (ev->type == ZKRC_RUNNER_LOST && w->lost_us == 0)
    w->lost_us = now;
  g_array_append_val(w->events, *ev);
  g_cond_broadcast(&w->t->cond);
  g_mutex_unlock(&w->t->mu);
}

static void on_freed(void *arg) {
  worker *w = arg;
  g_mutex_lock(&w->t->mu);
  w->freed = 1;
  g_cond_broadcast(&w->t->cond);
  g_mutex_unlock(&w->t->mu);
}

static int runner_start(worker *w, zkrc_session *s, const char *path,
                        zkrc_runner_kind kind, int requeue) {
  zkrc_runner_options o;
  zkrc_runner_options_init(&o);
  o.kind = kind;
  o.requeue = requeue;
  o.on_event = on_event;
  o.event_arg = w;
  char id[32];
  g_snprintf(id, sizeof id, "runner-%d", w->instance);
  o.participant_id = id;
  return zkrc_runner_new(&w->r, s, path, work, w, &o);
}

/* Wait (at most STEP ms) until @p cond(w) holds, under t->mu. */
static int wait_until(worker *w, int (*cond)(worker *w)) {
  int64_t deadline = g_get_monotonic_time() + STEP * G_TIME_SPAN_MILLISECOND;
  g_mutex_lock(&w->t->mu);
  int ok;
  while (!(ok = cond(w)) && g_cond_wait_until(&w->t->cond, &w->t->mu, deadline))
    ;
  g_mutex_unlock(&w->t->mu);
  return ok;
}

static int has_started(worker *w) { return w->started > 0; }
static int has_returned(worker *w) { return w->returned > 0; }
static int is_freed(worker *w) { return w->freed; }

static int count_events(worker *w, zkrc_runner_event_type type) {
  int n = 0;
  for (guint i = 0; i < w->events->len; i++)
    n += g_array_index(w->events, zkrc_runner_event, i).type == type;
  return n;
}

static int has_closed(worker *w) {
  return count_events(w, ZKRC_RUNNER_CLOSED) > 0;
}

static int has_cancelled(worker *w) {
  return count_events(w, ZKRC_RUNNER_CANCELLED) > 0;
}

static const zkrc_runner_event *event_of(worker *w,
                                         zkrc_runner_event_type type) {
  for (guint i = 0; i < w->events->len; i++)
    if (g_array_index(w->events, zkrc_runner_event, i).type == type)
      return &g_array_index(w->events, zkrc_runner_event, i);
  return NULL;
}

/* The types of @p w's events so far, as "started,returned,closed". */
static char *event_names(worker *w) {
  g_mutex_lock(&w->t->mu);
  GString *s = g_string_new("");
  for (guint i = 0; i < w->events->len; i++)
    g_string_append_printf(
        s, "%s%s", i ? "," : "",
        zkrc_runner_event_name(
            g_array_index(w->events, zkrc_runner_event, i).type));
  g_mutex_unlock(&w->t->mu);
  return g_string_free(s, FALSE);
}

/* The holds judged by the shared checker: 0 violations expected. */
static int violations(GArray *holds, GArray *partitions) {
  zkt_checker c;
  zkt_checker_init(&c, NULL, NULL);
  c.partitions = partitions;
  int v = zkt_check_hold_array(&c, holds);
  zkt_checker_clear(&c);
  return v;
}

/* ------------------------------------------------------------ a fixture */

/* A test's session (past the proxy), its path, its record of turns and a
 * plain handle to look at the nodes. */
typedef struct fixture {
  zkrc_session *s;
  char *path;
  turns t;
  zhandle_t *zh;
} fixture;

static void fixture_open(fixture *f, const char *tag) {
  f->s = zkt_direct_session();
  f->path = zkt_path(tag);
  turns_init(&f->t);
  f->zh = direct_raw();
}

/* @p w (a worker of @p m) runs a runner of @p kind on the fixture's path,
 * started and running. */
static void start_running(fixture *f, worker *w, int instance, mode m,
                          zkrc_runner_kind kind, int requeue) {
  worker_init(w, &f->t, instance, m);
  CU_ASSERT_EQUAL_FATAL(runner_start(w, f->s, f->path, kind, requeue), ZKRC_OK);
  CU_ASSERT_FATAL(wait_until(w, has_started));
}

/* The test's end: no node is left under its path. */
static void fixture_close(fixture *f) {
  CU_ASSERT(zkt_wait_children_or_gone(f->zh, f->path, 0, STEP));
  zookeeper_close(f->zh);
  turns_clear(&f->t);
  g_free(f->path);
  zkrc_session_close(f->s);
}

/* --------------------------------------------------------------- tests */

/* It runs while held (the runner says so inside), a contender of the same
 * lock waits meanwhile, and gets the lock once the function returned;
 * STARTED, RETURNED (the result), CLOSED in that order. */
static void test_runs_while_held(void) {
  zkrc_session *s2 = zkt_direct_session();
  fixture f;
  fixture_open(&f, "held");
  worker w;
  worker_init(&w, &f.t, 0, GO);
  w.result = 42;
  CU_ASSERT_EQUAL_FATAL(runner_start(&w, f.s, f.path, ZKRC_RUNNER_LOCK, 0),
                        ZKRC_OK);
  CU_ASSERT_EQUAL(zkrc_runner_wait_running(w.r, STEP), ZKRC_OK);
  CU_ASSERT(wait_until(&w, has_started));
  CU_ASSERT(w.in_running);
  CU_ASSERT_EQUAL(zkrc_runner_turns(w.r), 1);
  CU_ASSERT_STRING_EQUAL(zkrc_runner_path(w.r), f.path);
  zkrc_participant *list = NULL;
  size_t n = 0;
  CU_ASSERT_EQUAL(zkrc_lock_list(s2, f.path, &list, &n, STEP), ZKRC_OK);
  CU_ASSERT_EQUAL(n, 1);
  if (n == 1)
    CU_ASSERT_STRING_EQUAL(list[0].id, "runner-0");
  zkrc_participants_free(list, n);
  /* Another contender cannot have it while the function runs. */
  zkrc_lock *lk = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_new(&lk, s2, f.path, NULL), ZKRC_OK);
  CU_ASSERT_EQUAL(zkrc_lock_acquire(lk, ZKRC_NO_WAIT), ZKRC_ELOCKED);
  worker_go(&w);
  CU_ASSERT_EQUAL(zkrc_lock_acquire(lk, STEP), ZKRC_OK); /* given back */
  int64_t got = zkt_hold_now_us();
  CU_ASSERT(wait_until(&w, has_closed));
  g_mutex_lock(&f.t.mu);
  CU_ASSERT_EQUAL(f.t.holds->len, 1);
  if (f.t.holds->len == 1)
    CU_ASSERT(g_array_index(f.t.holds, zkt_hold, 0).end < got);
  CU_ASSERT_EQUAL(w.reason, ZKRC_OK); /* never cancelled */
  CU_ASSERT_FALSE(w.fd_fired);
  g_mutex_unlock(&f.t.mu);
  int64_t token = 0;
  CU_ASSERT_EQUAL(zkrc_lock_token(lk, &token), ZKRC_OK);
  CU_ASSERT(token > w.token);
  char *names = event_names(&w);
  CU_ASSERT_STRING_EQUAL(names, "started,returned,closed");
  g_free(names);
  const zkrc_runner_event *ev = event_of(&w, ZKRC_RUNNER_RETURNED);
  CU_ASSERT(ev && ev->result == 42 && ev->token == w.token && ev->turns == 1);
  ev = event_of(&w, ZKRC_RUNNER_CLOSED);
  CU_ASSERT(ev && ev->reason == ZKRC_OK);
  CU_ASSERT_EQUAL(zkrc_runner_wait_running(w.r, ZKRC_NO_WAIT), ZKRC_ESTATE);
  CU_ASSERT_EQUAL(zkrc_lock_release(lk), ZKRC_OK);
  zkrc_lock_free(lk);
  zkrc_runner_free(w.r);
  worker_clear(&w);
  zkrc_session_close(s2);
  fixture_close(&f);
}

/* The end of a case of two runners at @p path: both freed, nothing left
 * under it, the rest given back. */
static void two_runners_done(worker *a, worker *b, turns *t, zhandle_t *zh,
                             char *path, GArray *partitions) {
  zkrc_runner_free(a->r);
  zkrc_runner_free(b->r);
  CU_ASSERT(zkt_wait_children_or_gone(zh, path, 0, 3 * STEP));
  zookeeper_close(zh);
  g_array_free(partitions, TRUE);
  worker_clear(a);
  worker_clear(b);
  turns_clear(t);
  g_free(path);
}

/* Runner A (through the proxy) runs; B (direct) waits its turn, both of
 * @p kind.  The proxy goes black: A's cancellation must fire (LOST) before
 * B's function starts (for an election: before B is elected), judged by
 * holds.h.  With @p control, A's function ignores its cancellation until B
 * started: the checker must catch that overlap. */
static void partition_case(int control, zkrc_runner_kind kind) {
  zkrc_session *sa = zkt_session();
  zkrc_session *sb = zkt_direct_session();
  char *path = zkt_path(control ? "partition-control" : "partition");
  turns t;
  turns_init(&t);
  worker a, b;
  worker_init(&a, &t, 0, control ? IGNORE : CANCEL);
  worker_init(&b, &t, 1, QUICK);
  a.other = &b;
  CU_ASSERT_EQUAL_FATAL(runner_start(&a, sa, path, kind, 0), ZKRC_OK);
  CU_ASSERT_FATAL(wait_until(&a, has_started));
  CU_ASSERT_EQUAL_FATAL(runner_start(&b, sb, path, kind, 0), ZKRC_OK);
  zhandle_t *zh = direct_raw();
  CU_ASSERT_FATAL(zkt_wait_children(zh, path, 2, STEP));
  GArray *partitions = g_array_new(FALSE, TRUE, sizeof(zkt_span));
  zkt_span span = {.instance = -1, .start = zkt_hold_now_us()};
  CU_ASSERT_EQUAL(zkrc_proxy_blackhole(zkt_ensemble(), 0, 3 * STEP), 0);
  CU_ASSERT(wait_until(&a, has_returned));
  CU_ASSERT(wait_until(&b, has_started));
  CU_ASSERT(wait_until(&b, has_closed));
  span.end = zkt_hold_now_us();
  CU_ASSERT_EQUAL(zkrc_proxy_blackhole(zkt_ensemble(), 0, 0), 0);
  g_array_append_val(partitions, span);
  g_mutex_lock(&t.mu);
  CU_ASSERT_EQUAL(t.holds->len, 2);
  int v = violations(t.holds, partitions);
  int reason = a.reason;
  g_mutex_unlock(&t.mu);
  if (control) {
    if (b.started == 0)
      CU_FAIL("CONTROL COULD NOT BE SET UP: B never started");
    CU_ASSERT(v > 0); /* the checker catches a function that held on */
  } else {
    CU_ASSERT_EQUAL(v, 0);
    CU_ASSERT(reason == ZKRC_ESESSIONLOST || reason == ZKRC_ESESSIONEXPIRED);
    CU_ASSERT(wait_until(&a, has_closed));
    char *names = event_names(&a);
    CU_ASSERT_STRING_EQUAL(names, "started,lost,cancelled,returned,closed");
    g_free(names);
    const zkrc_runner_event *ev = event_of(&a, ZKRC_RUNNER_LOST);
    CU_ASSERT(ev && ev->reason == reason);
  }
  two_runners_done(&a, &b, &t, zh, path, partitions);
  zkrc_session_close(sb);
  zkrc_session_close(sa);
}

static void test_lost_under_partition(void) {
  partition_case(0, ZKRC_RUNNER_LOCK);
}
static void test_partition_control(void) {
  partition_case(1, ZKRC_RUNNER_LOCK);
}
static void test_election_lost_under_partition(void) {
  partition_case(0, ZKRC_RUNNER_ELECTION);
}

/* Runner A (through the proxy) is cancelled while its function runs and
 * ignores the cancellation; then the proxy goes black.  Held means held:
 * A must still be told LOST, before B (direct, waiting its turn) starts,
 * while A's function still runs (it returns only once B started).  A's
 * hold ends at its LOST (holds.h), and the checker finds no overlap. */
static void test_lost_after_cancel(void) {
  zkrc_session *sa = zkt_session();
  zkrc_session *sb = zkt_direct_session();
  char *path = zkt_path("lost-after-cancel");
  turns t;
  turns_init(&t);
  worker a, b;
  worker_init(&a, &t, 0, STUBBORN);
  worker_init(&b, &t, 1, QUICK);
  CU_ASSERT_EQUAL_FATAL(runner_start(&a, sa, path, ZKRC_RUNNER_LOCK, 0),
                        ZKRC_OK);
  CU_ASSERT_FATAL(wait_until(&a, has_started));
  CU_ASSERT_EQUAL_FATAL(runner_start(&b, sb, path, ZKRC_RUNNER_LOCK, 0),
                        ZKRC_OK);
  zhandle_t *zh = direct_raw();
  CU_ASSERT_FATAL(zkt_wait_children(zh, path, 2, STEP));
  CU_ASSERT_EQUAL(zkrc_runner_cancel(a.r), ZKRC_OK);
  CU_ASSERT(wait_until(&a, has_cancelled));
  GArray *partitions = g_array_new(FALSE, TRUE, sizeof(zkt_span));
  zkt_span span = {.instance = -1, .start = zkt_hold_now_us()};
  CU_ASSERT_EQUAL(zkrc_proxy_blackhole(zkt_ensemble(), 0, 3 * STEP), 0);
  CU_ASSERT(wait_until(&b, has_started)); /* A's session expired */
  CU_ASSERT_EQUAL(zkrc_runner_is_running(a.r), 0);
  worker_go(&a); /* only now does A's function return */
  CU_ASSERT(wait_until(&a, has_returned));
  CU_ASSERT(wait_until(&b, has_closed));
  span.end = zkt_hold_now_us();
  CU_ASSERT_EQUAL(zkrc_proxy_blackhole(zkt_ensemble(), 0, 0), 0);
  g_array_append_val(partitions, span);
  g_mutex_lock(&t.mu);
  CU_ASSERT_EQUAL(t.holds->len, 2);
  for (guint i = 0; i < t.holds->len; i++) {
    zkt_hold *h = &g_array_index(t.holds, zkt_hold, i);
    if (h->instance == 0 && a.lost_us > 0 && a.lost_us < h->end)
      h->end = h->lost = a.lost_us; /* held until told LOST */
  }
  CU_ASSERT_EQUAL(violations(t.holds, partitions), 0);
  CU_ASSERT_EQUAL(a.reason, ZKRC_ECANCELED); /* its first reason stays */
  g_mutex_unlock(&t.mu);
  CU_ASSERT(wait_until(&a, has_closed));
  char *names = event_names(&a);
  CU_ASSERT_STRING_EQUAL(names, "started,cancelled,lost,returned,closed");
  g_free(names);
  const zkrc_runner_event *ev = event_of(&a, ZKRC_RUNNER_LOST);
  CU_ASSERT(ev && (ev->reason == ZKRC_ESESSIONLOST ||
                   ev->reason == ZKRC_ESESSIONEXPIRED));
  ev = event_of(&a, ZKRC_RUNNER_CANCELLED);
  CU_ASSERT(ev && ev->reason == ZKRC_ECANCELED);
  two_runners_done(&a, &b, &t, zh, path, partitions);
  zkrc_session_close(sb);
  zkrc_session_close(sa);
}

/* (The test holds r->o.mu.)  The election's ELECTED of @p arg's current
 * leadership passed its check (ours, under a live lease): its callback
 * into the runner is on its way, and waits for the runner's mutex. */
static int election_told_now(void *arg) {
  zkrc_runner *r = arg;
  int64_t token = 0;
  return zkrc_election_token(r->e, &token) == ZKRC_OK &&
         zkrc__election_told(r->e, token);
}

/* An election at a fresh fixture's path led by another participant
 * (@p s2's, returned), and a one-turn election runner @p w queued behind
 * it. */
static zkrc_election *runner_behind_leader(fixture *f, worker *w,
                                           zkrc_session *s2, const char *tag) {
  fixture_open(f, tag);
  zkrc_election *first = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_election_new(&first, s2, f->path, NULL), ZKRC_OK);
  CU_ASSERT_EQUAL_FATAL(zkrc_election_join(first), ZKRC_OK);
  CU_ASSERT_EQUAL_FATAL(zkrc_election_wait_leader(first, STEP), ZKRC_OK);
  worker_init(w, &f->t, 0, CANCEL);
  CU_ASSERT_EQUAL_FATAL(runner_start(w, f->s, f->path, ZKRC_RUNNER_ELECTION, 0),
                        ZKRC_OK);
  CU_ASSERT_FATAL(zkt_wait_children(f->zh, f->path, 2, STEP));
  return first;
}

/* An election runner (one turn) told ELECTED, whose lease is out when its
 * thread looks (held means held: no turn then), must give the leadership
 * back for real and ask again after its backoff - not wait for good while
 * it still leads (its lease comes back, and the election tells no second
 * ELECTED of the same leadership).  Its turn then starts under a new
 * leadership (a higher token). */
static void test_election_granted_lease_out(void) {
  zkrc_session *s2 = zkt_direct_session();
  fixture f;
  worker w;
  zkrc_election *first = runner_behind_leader(&f, &w, s2, "election-lease-out");
  zkrc_runner *r = w.r;
  int64_t first_token = 0;
  g_mutex_lock(&r->o.mu); /* the runner's thread cannot look meanwhile */
  CU_ASSERT_EQUAL(zkrc_election_leave(first), ZKRC_OK); /* r's turn */
  int blocked = zkt_wait_for(election_told_now, r, STEP);
  if (blocked) { /* ELECTED, checked under a live lease, on its way */
    CU_ASSERT_EQUAL(zkrc_election_token(r->e, &first_token), ZKRC_OK);
    lease_restart(f.s);
    CU_ASSERT_EQUAL(zkrc_election_lease_remaining(r->e), 0);
  }
  g_mutex_unlock(&r->o.mu);
  if (!blocked)
    CU_FAIL("COULD NOT BE SET UP: ELECTED never waited for the runner");
  CU_ASSERT(wait_until(&w, has_started));
  g_mutex_lock(&f.t.mu);
  CU_ASSERT(w.token > first_token); /* a new leadership */
  g_mutex_unlock(&f.t.mu);
  zkrc_runner_free(w.r);
  zkrc_election_free(first);
  zkrc_session_close(s2);
  worker_clear(&w);
  fixture_close(&f);
}

static int nine_turns(worker *w) { return w->t->order->len >= 9; }

/* Three runners with requeue, queued A, B, C: they take turns in that
 * order, A B C A B C A B C, one at a time, tokens rising. */
static void turns_case(zkrc_runner_kind kind, const char *marker) {
  fixture f;
  fixture_open(&f, "turns");
  worker w[3];
  worker_init(&w[0], &f.t, 0, GO); /* its first turn waits for the queue */
  for (int i = 1; i < 3; i++) {
    worker_init(&w[i], &f.t, i, QUICK);
    w[i].work_ms = 20;
  }
  for (int i = 0; i < 3; i++) {
    CU_ASSERT_EQUAL_FATAL(runner_start(&w[i], f.s, f.path, kind, 1), ZKRC_OK);
    CU_ASSERT_FATAL(zkt_wait_children(f.zh, f.path, i + 1, STEP));
  }
  /* The nodes are the recipe's. */
  struct String_vector kids = {0};
  CU_ASSERT_EQUAL(zoo_get_children(f.zh, f.path, 0, &kids), ZOK);
  for (int i = 0; i < kids.count; i++)
    CU_ASSERT_PTR_NOT_NULL(strstr(kids.data[i], marker));
  deallocate_String_vector(&kids);
  g_mutex_lock(&f.t.mu);
  w[0].mode = QUICK; /* later turns: quick */
  w[0].work_ms = 20;
  g_mutex_unlock(&f.t.mu);
  worker_go(&w[0]);
  CU_ASSERT(wait_until(&w[0], nine_turns));
  for (int i = 0; i < 3; i++)
    CU_ASSERT_EQUAL(zkrc_runner_cancel(w[i].r), ZKRC_OK);
  for (int i = 0; i < 3; i++) {
    CU_ASSERT(wait_until(&w[i], has_closed));
    const zkrc_runner_event *ev = event_of(&w[i], ZKRC_RUNNER_CLOSED);
    CU_ASSERT(ev && ev->reason == ZKRC_ECANCELED);
  }
  g_mutex_lock(&f.t.mu);
  for (guint k = 0; k < 9 && k < f.t.order->len; k++)
    CU_ASSERT_EQUAL(g_array_index(f.t.order, int, k), (int)(k % 3));
  CU_ASSERT_EQUAL(violations(f.t.holds, NULL), 0);
  g_mutex_unlock(&f.t.mu);
  for (int i = 0; i < 3; i++) {
    zkrc_runner_free(w[i].r);
    worker_clear(&w[i]);
  }
  fixture_close(&f);
}

static void test_turns_lock(void) { turns_case(ZKRC_RUNNER_LOCK, "-lock-"); }
static void test_turns_kazoo_lock(void) {
  turns_case(ZKRC_RUNNER_KAZOO_LOCK, "__lock__");
}
static void test_turns_election(void) {
  turns_case(ZKRC_RUNNER_ELECTION, "-latch-");
}

/* Free while the function runs: the cancellation fires (ZKRC_ECLOSED, its
 * fd readable), free returns once the function did, the node goes. */
static void test_free_while_running(void) {
  fixture f;
  fixture_open(&f, "free");
  worker w;
  start_running(&f, &w, 0, GO, ZKRC_RUNNER_LOCK, 1);
  zkrc_runner_free(w.r);
  g_mutex_lock(&f.t.mu);
  CU_ASSERT_EQUAL(w.returned, 1); /* free waited for it */
  CU_ASSERT_EQUAL(w.reason, ZKRC_ECLOSED);
  CU_ASSERT(w.fd_fired);
  g_mutex_unlock(&f.t.mu);
  worker_clear(&w);
  fixture_close(&f);
}

/* The function frees its own runner: the free does not wait for it, the
 * hold is given back once it returned, and nothing is left. */
static void test_free_from_work(void) {
  fixture f;
  fixture_open(&f, "free-self");
  worker w;
  start_running(&f, &w, 0, SELF_FREE, ZKRC_RUNNER_KAZOO_LOCK, 1);
  CU_ASSERT(wait_until(&w, has_returned));
  g_mutex_lock(&f.t.mu);
  CU_ASSERT_EQUAL(w.started, 1); /* no second turn: it was freed */
  CU_ASSERT_EQUAL(w.reason, ZKRC_ECLOSED);
  g_mutex_unlock(&f.t.mu);
  worker_clear(&w);
  fixture_close(&f); /* the node goes */
}

/* free_async while the function runs: it does not wait; RETURNED and
 * CLOSED (ZKRC_ECLOSED) are told, then done. */
static void test_free_async_while_running(void) {
  fixture f;
  fixture_open(&f, "free-async");
  worker w;
  start_running(&f, &w, 0, GO, ZKRC_RUNNER_ELECTION, 1);
  CU_ASSERT_EQUAL(zkrc_runner_free_async(w.r, on_freed, &w), ZKRC_OK);
  CU_ASSERT(wait_until(&w, is_freed));
  g_mutex_lock(&f.t.mu);
  CU_ASSERT_EQUAL(w.reason, ZKRC_ECLOSED);
  g_mutex_unlock(&f.t.mu);
  char *names = event_names(&w);
  CU_ASSERT_STRING_EQUAL(names, "started,cancelled,returned,closed");
  g_free(names);
  const zkrc_runner_event *ev = event_of(&w, ZKRC_RUNNER_CLOSED);
  CU_ASSERT(ev && ev->reason == ZKRC_ECLOSED);
  worker_clear(&w);
  fixture_close(&f);
}

/* The session closed under a running turn: its cancellation fires
 * (ZKRC_ECLOSED), and the runner, which cannot queue again, is CLOSED
 * (ZKRC_ECLOSED); it is freed after the session's close. */
static void test_session_closed(void) {
  zkrc_session *s = zkt_direct_session();
  char *path = zkt_path("session-closed");
  turns t;
  turns_init(&t);
  worker w;
  worker_init(&w, &t, 0, CANCEL);
  CU_ASSERT_EQUAL_FATAL(runner_start(&w, s, path, ZKRC_RUNNER_LOCK, 1),
                        ZKRC_OK);
  CU_ASSERT_FATAL(wait_until(&w, has_started));
  zkrc_session_close(s);
  CU_ASSERT(wait_until(&w, has_closed));
  g_mutex_lock(&t.mu);
  CU_ASSERT_EQUAL(w.reason, ZKRC_ECLOSED);
  CU_ASSERT_EQUAL(w.started, 1);
  g_mutex_unlock(&t.mu);
  const zkrc_runner_event *ev = event_of(&w, ZKRC_RUNNER_CLOSED);
  CU_ASSERT(ev && ev->reason == ZKRC_ECLOSED);
  zkrc_runner_free(w.r);
  zhandle_t *zh = direct_raw();
  CU_ASSERT(zkt_wait_children_or_gone(zh, path, 0, STEP));
  zookeeper_close(zh);
  worker_clear(&w);
  turns_clear(&t);
  g_free(path);
}

/* Cancel: a running turn's cancellation fires with ZKRC_ECANCELED; a
 * queued runner leaves the queue without a turn; both CLOSED. */
static void test_cancel(void) {
  fixture f;
  fixture_open(&f, "cancel");
  worker a, b;
  start_running(&f, &a, 0, CANCEL, ZKRC_RUNNER_LOCK, 1);
  worker_init(&b, &f.t, 1, QUICK);
  CU_ASSERT_EQUAL_FATAL(runner_start(&b, f.s, f.path, ZKRC_RUNNER_LOCK, 1),
                        ZKRC_OK);
  CU_ASSERT_FATAL(zkt_wait_children(f.zh, f.path, 2, STEP));
  CU_ASSERT_EQUAL(zkrc_runner_cancel(b.r), ZKRC_OK); /* queued */
  CU_ASSERT(wait_until(&b, has_closed));
  CU_ASSERT_EQUAL(b.started, 0);
  CU_ASSERT(zkt_wait_children(f.zh, f.path, 1, STEP));
  CU_ASSERT_EQUAL(zkrc_runner_cancel(a.r), ZKRC_OK); /* running */
  CU_ASSERT(wait_until(&a, has_closed));
  g_mutex_lock(&f.t.mu);
  CU_ASSERT_EQUAL(a.reason, ZKRC_ECANCELED);
  CU_ASSERT_EQUAL(a.started, 1);
  g_mutex_unlock(&f.t.mu);
  char *names = event_names(&a);
  CU_ASSERT_STRING_EQUAL(names, "started,cancelled,returned,closed");
  g_free(names);
  CU_ASSERT(zkt_wait_children_or_gone(f.zh, f.path, 0, STEP)); /* before free */
  zkrc_runner_free(a.r);
  zkrc_runner_free(b.r);
  worker_clear(&a);
  worker_clear(&b);
  fixture_close(&f);
}

/* Bad input: a named error and nothing created (no node, no runner). */
static void test_bad_input(void) {
  fixture f;
  fixture_open(&f, "bad");
  zkrc_runner *r = (zkrc_runner *)&r; /* not NULL: must be cleared */
  zkrc_runner_options o;
  zkrc_runner_options_init(&o);
  CU_ASSERT_EQUAL(o.kind, ZKRC_RUNNER_LOCK);
  CU_ASSERT_EQUAL(o.requeue, 0);
  CU_ASSERT_EQUAL(zkrc_runner_new(NULL, f.s, f.path, work, NULL, &o),
                  ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_runner_new(&r, NULL, f.path, work, NULL, &o),
                  ZKRC_EINVAL);
  CU_ASSERT_PTR_NULL(r);
  CU_ASSERT_EQUAL(zkrc_runner_new(&r, f.s, NULL, work, NULL, &o), ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_runner_new(&r, f.s, f.path, NULL, NULL, &o),
                  ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_runner_new(&r, f.s, "no/slash", work, NULL, &o),
                  ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_runner_new(&r, f.s, "/a//b", work, NULL, &o),
                  ZKRC_EINVAL);
  zkrc_runner_options bad = o;
  bad.kind = (zkrc_runner_kind)0;
  CU_ASSERT_EQUAL(zkrc_runner_new(&r, f.s, f.path, work, NULL, &bad),
                  ZKRC_EINVAL);
  bad.kind = (zkrc_runner_kind)4;
  CU_ASSERT_EQUAL(zkrc_runner_new(&r, f.s, f.path, work, NULL, &bad),
                  ZKRC_EINVAL);
  zkrc_runner_options zero;
  memset(&zero, 0, sizeof zero); /* never initialized */
  CU_ASSERT_EQUAL(zkrc_runner_new(&r, f.s, f.path, work, NULL, &zero),
                  ZKRC_EINVAL);
  CU_ASSERT_PTR_NULL(r);
  /* The calls on NULL. */
  CU_ASSERT_EQUAL(zkrc_runner_cancel(NULL), ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_runner_wait_running(NULL, 0), ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_runner_free_async(NULL, on_freed, NULL), ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_runner_is_running(NULL), 0);
  CU_ASSERT_EQUAL(zkrc_runner_turns(NULL), 0);
  CU_ASSERT_PTR_NULL(zkrc_runner_path(NULL));
  zkrc_runner_free(NULL);
  CU_ASSERT_EQUAL(zkrc_cancel_requested(NULL), 0);
  CU_ASSERT_EQUAL(zkrc_cancel_wait(NULL, 0), ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_cancel_fd(NULL), -1);
  CU_ASSERT_EQUAL(zkrc_cancel_reason(NULL), ZKRC_EINVAL);
  /* A live runner: bad timeouts and a NULL done change nothing. */
  worker w;
  worker_init(&w, &f.t, 0, CANCEL);
  CU_ASSERT_EQUAL_FATAL(runner_start(&w, f.s, f.path, ZKRC_RUNNER_LOCK, 0),
                        ZKRC_OK);
  CU_ASSERT_EQUAL(zkrc_runner_wait_running(w.r, -2), ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_runner_free_async(w.r, NULL, NULL), ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_runner_wait_running(w.r, STEP), ZKRC_OK);
  CU_ASSERT_EQUAL(zkrc_runner_is_running(w.r), 1); /* still running */
  zkrc_runner_free(w.r);
  CU_ASSERT_EQUAL(w.reason, ZKRC_ECLOSED);
  /* Names. */
  CU_ASSERT_STRING_EQUAL(zkrc_runner_event_name(ZKRC_RUNNER_STARTED),
                         "started");
  CU_ASSERT_STRING_EQUAL(zkrc_runner_event_name(ZKRC_RUNNER_CANCELLED),
                         "cancelled");
  CU_ASSERT_STRING_EQUAL(zkrc_runner_event_name(ZKRC_RUNNER_RETURNED),
                         "returned");
  CU_ASSERT_STRING_EQUAL(zkrc_runner_event_name(ZKRC_RUNNER_LOST), "lost");
  CU_ASSERT_STRING_EQUAL(zkrc_runner_event_name(ZKRC_RUNNER_CLOSED), "closed");
  CU_ASSERT_STRING_EQUAL(zkrc_runner_event_name((zkrc_runner_event_type)0),
                         "unknown");
  worker_clear(&w);
  fixture_close(&f);
}

/* ------------------------------------------------------------- interop */

typedef enum peer_kind { KAZOO = 1, CURATOR } peer_kind;

#define PEER_TURNS 3

/* kazoo's Election.run (tests/peers/kazoo_election.py) or Curator's
 * LeaderSelector with autoRequeue (tests/peers/CuratorSelectorPeer.java)
 * on @p path: PEER_TURNS turns of 20 ms, the first held until a line on
 * its stdin with @p hold_first. */
static peer *selector_peer(peer_kind k, const char *path, int hold_first) {
  char nturns[8];
  g_snprintf(nturns, sizeof nturns, "%d", PEER_TURNS);
  const char *hf = hold_first ? "1" : "0";
  if (k == KAZOO) {
    const char *argv[] = {DEBIAN_PYTHON3,
                          TOP_SRCDIR "/tests/peers/kazoo_election.py",
                          zkt_hosts(),
                          path,
                          "kazoo-peer",
                          nturns,
                          "20",
                          hf,
                          NULL};
    return peer_start("kazoo", (char **)argv);
  }
  const char *argv[] = {JAVA_PROG,
                        "-XX:+UseSerialGC",
                        "-XX:TieredStopAtLevel=1",
                        "-cp",
                        CURATOR_PEER_CLASSPATH,
                        "CuratorSelectorPeer",
                        zkt_hosts(),
                        path,
                        "curator-peer",
                        nturns,
                        "20",
                        hf,
                        NULL};
  return peer_start("curator", (char **)argv);
}

/* The peer's "TURN TOKEN T0 T1" lines (all written before its DONE) as
 * holds of instance 1. */
static int peer_holds(peer *p, GArray *holds) {
  int n = 0;
  for (GList *l = p->lines.head; l; l = l->next) {
    const char *rest;
    long long token, t0, t1;
    if (line_is(l->data, "TURN", &rest) &&
        sscanf(rest, "%lld %lld %lld", &token, &t0, &t1) == 3) {
      zkt_hold *h = zkt_hold_add(holds, 1, token, t0, t1);
      h->name = "peer";
      CU_ASSERT(token > 0); /* the peer found its own node at the front */
      n++;
    }
  }
  return n;
}

static gint by_start(gconstpointer a, gconstpointer b) {
  const zkt_hold *x = a, *y = b;
  return x->acquired < y->acquired ? -1 : x->acquired > y->acquired;
}

/* Our runner (requeue) and the peer take turns on one path: each side's
 * turns never overlap the other's (holds.h), tokens rise, and they
 * alternate.  @p ours_first: our runner holds when the peer queues; else
 * the peer holds when ours does. */
static void interop_case(peer_kind k, int ours_first) {
  fixture f;
  fixture_open(&f, k == KAZOO ? "kazoo" : "curator");
  worker w;
  worker_init(&w, &f.t, 0, ours_first ? GO : QUICK);
  w.work_ms = 20;
  zkrc_runner_kind kind =
      k == KAZOO ? ZKRC_RUNNER_KAZOO_LOCK : ZKRC_RUNNER_LOCK;
  peer *p = NULL;
  if (ours_first) {
    CU_ASSERT_EQUAL_FATAL(runner_start(&w, f.s, f.path, kind, 1), ZKRC_OK);
    CU_ASSERT_FATAL(wait_until(&w, has_started));
    p = selector_peer(k, f.path, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    g_free(peer_expect(p, "READY", START_MS));
    CU_ASSERT(zkt_wait_children(f.zh, f.path, 2, START_MS));
    g_mutex_lock(&f.t.mu);
    w.mode = QUICK;
    g_mutex_unlock(&f.t.mu);
    worker_go(&w);
  } else {
    p = selector_peer(k, f.path, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    char *started = peer_expect(p, "STARTED", START_MS);
    CU_ASSERT_PTR_NOT_NULL(started);
    g_free(started);
    CU_ASSERT_EQUAL_FATAL(runner_start(&w, f.s, f.path, kind, 1), ZKRC_OK);
    CU_ASSERT(zkt_wait_children(f.zh, f.path, 2, STEP));
    CU_ASSERT(peer_send(p, "go"));
  }
  char *done = peer_expect(p, "DONE", 2 * START_MS);
  CU_ASSERT_PTR_NOT_NULL(done);
  g_free(done);
  CU_ASSERT_EQUAL(zkrc_runner_cancel(w.r), ZKRC_OK);
  CU_ASSERT(wait_until(&w, has_closed));
  g_mutex_lock(&f.t.mu);
  int ours = (int)f.t.holds->len;
  int theirs = peer_holds(p, f.t.holds);
  CU_ASSERT(ours >= 2);
  CU_ASSERT(theirs >= PEER_TURNS);
  CU_ASSERT_EQUAL(violations(f.t.holds, NULL), 0);
  g_array_sort(f.t.holds, by_start);
  /* They take turns: the first five turns alternate between the sides. */
  for (guint i = 1; i < f.t.holds->len && i < 5; i++)
    CU_ASSERT_NOT_EQUAL(g_array_index(f.t.holds, zkt_hold, i).instance,
                        g_array_index(f.t.holds, zkt_hold, i - 1).instance);
  if (f.t.holds->len > 0)
    CU_ASSERT_EQUAL(g_array_index(f.t.holds, zkt_hold, 0).instance,
                    ours_first ? 0 : 1);
  g_mutex_unlock(&f.t.mu);
  CU_ASSERT_EQUAL(peer_finish(p, STEP), 0);
  zkrc_runner_free(w.r);
  worker_clear(&w);
  fixture_close(&f);
}

static void test_kazoo_after_ours(void) { interop_case(KAZOO, 1); }
static void test_ours_after_kazoo(void) { interop_case(KAZOO, 0); }
static void test_curator_after_ours(void) { interop_case(CURATOR, 1); }
static void test_ours_after_curator(void) { interop_case(CURATOR, 0); }

static int is_leader(void *arg) { return zkrc_election_is_leader(arg); }

/* An election runner elected while its session's executor is held up, and
 * whose lease is out (starting again from its renewals, no loss) when its
 * ELECTED is delivered: the election drops that ELECTED (told only under a
 * live lease) and, its lease back, leads on with no second one.  The
 * runner must not wait for good while it leads: its turn starts, under
 * that leadership. */
static void test_election_elected_dropped(void) {
  zkrc_session *s2 = zkt_direct_session();
  fixture f;
  worker w;
  zkrc_election *first = runner_behind_leader(&f, &w, s2, "election-dropped");
  zkrc_runner *r = w.r;
  gate g = {0};
  g_mutex_init(&g.mu);
  g_cond_init(&g.cond);
  zkrc_executor ex = zkrc__session_executor(f.s);
  ex.post(ex.ctx, gate_fn, &g);
  CU_ASSERT(zkt_wait_for(gate_entered, &g, STEP));
  CU_ASSERT_EQUAL(zkrc_election_leave(first), ZKRC_OK); /* r's turn */
  int elected = zkt_wait_for(is_leader, r->e, STEP);    /* ELECTED queued */
  int64_t token = 0;
  if (elected) {
    CU_ASSERT_EQUAL(zkrc_election_token(r->e, &token), ZKRC_OK);
    lease_restart(f.s);
  }
  gate_open(&g);
  CU_ASSERT_FATAL(elected);
  CU_ASSERT(zkt_wait_for(is_leader, r->e, STEP)); /* its lease is back */
  CU_ASSERT(wait_until(&w, has_started));
  g_mutex_lock(&f.t.mu);
  CU_ASSERT_EQUAL(w.token, token); /* that leadership */
  g_mutex_unlock(&f.t.mu);
  zkrc_runner_free(w.r);
  zkrc_election_free(first);
  zkrc_session_close(s2);
  worker_clear(&w);
  g_mutex_clear(&g.mu);
  g_cond_clear(&g.cond);
  fixture_close(&f);
}

static void add_suites(void) {
  zkt_configure(1, 1);
  ZKT_SUITE(
      "runner", {"runs while held", test_runs_while_held},
      {"turns: lock", test_turns_lock},
      {"turns: kazoo lock", test_turns_kazoo_lock},
      {"turns: election", test_turns_election},
      {"free while running", test_free_while_running},
      {"free_async while running", test_free_async_while_running},
      {"free from the work function", test_free_from_work},
      {"cancel", test_cancel},
      {"session closed while running", test_session_closed},
      {"bad input", test_bad_input},
      {"lost under a partition", test_lost_under_partition},
      {"partition control", test_partition_control},
      {"election: lost under a partition", test_election_lost_under_partition},
      {"lost after a cancel", test_lost_after_cancel},
      {"election: granted with its lease out", test_election_granted_lease_out},
      {"election: ELECTED dropped, still leading",
       test_election_elected_dropped});
  ZKT_SUITE("runner interop",
            {"kazoo Election.run after ours", test_kazoo_after_ours},
            {"ours after kazoo Election.run", test_ours_after_kazoo},
            {"Curator LeaderSelector after ours", test_curator_after_ours},
            {"ours after Curator LeaderSelector", test_ours_after_curator});
}

int main(void) { return zkt_run("test_runner", add_suites); }
