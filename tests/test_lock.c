/*
 * The lock recipe against a real single-member ensemble: mutual exclusion
 * between processes, one notification per release, reentrancy, timeouts
 * that leave no node, fencing tokens, holders that die or expire, container
 * cleanup, and bad input.  (Faults that need a 3-member ensemble or a proxy
 * are in test_lock_faults.c.)
 */
#include "config.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>

#include "session/session_internal.h"
#include "holds.h"
#include "testutil.h"

#define WORKER TOP_BUILDDIR "/tests/lockworker"

/* ------------------------------------------------------------ helpers */

static zkrc_lock *new_lock(zkrc_session *s, const char *path) {
  zkrc_lock *lk = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_new(&lk, s, path, NULL), ZKRC_OK);
  return lk;
}

/* Start lockworker with @p argv (NULL-terminated, argv[0] unused) and a
 * pipe to its stdin and from its stdout. */
typedef struct worker {
  pid_t pid;
  FILE *out; /* its stdout */
  int in_fd; /* its stdin */
} worker;

static worker start_worker(char **argv) {
  zkrc_spawn_options o;
  zkrc_spawn_options_init(&o);
  o.pipe_stdin = o.pipe_stdout = 1;
  argv[0] = WORKER;
  zkrc_child c;
  CU_ASSERT_EQUAL_FATAL(zkrc_spawn(&c, argv, &o), 0);
  zkt_track_child(c.pid);
  worker w = {c.pid, fdopen(c.out_fd, "r"), c.in_fd};
  return w;
}

static void finish_worker(worker *w) {
  if (w->in_fd >= 0)
    close(w->in_fd);
  if (w->out)
    fclose(w->out);
  w->in_fd = -1;
  w->out = NULL;
}

static int wait_worker(worker *w, int timeout_ms) {
  int status = zkt_wait_child(w->pid, timeout_ms);
  finish_worker(w);
  return status;
}

static int read_int_file(const char *file) {
  FILE *f = fopen(file, "r");
  int v = -1;
  if (f) {
    if (fscanf(f, "%d", &v) != 1)
      v = -1;
    fclose(f);
  }
  return v;
}

/* ----------------------------------------------------- mutual exclusion */

static void test_eight_processes_never_overlap(void) {
  enum { PROCS = 8, ITERATIONS = 200 };
  char *path = zkt_path("mutex");
  char *dir = g_dir_make_tmp("zkt-mutex-XXXXXX", NULL);
  char *counter = g_build_filename(dir, "counter", NULL);
  char *holds = g_build_filename(dir, "holds", NULL);
  char iterations[16];
  snprintf(iterations, sizeof iterations, "%d", ITERATIONS);
  worker w[PROCS];
  for (int i = 0; i < PROCS; i++) {
    char *argv[] = {NULL,  "count",    (char *)zkt_hosts(),
                    path,  iterations, counter,
                    holds, NULL};
    w[i] = start_worker(argv);
  }
  for (int i = 0; i < PROCS; i++)
    CU_ASSERT_EQUAL(wait_worker(&w[i], 120000), 0); /* 4: lock error */
  /* No lost update: every increment survived. */
  CU_ASSERT_EQUAL(read_int_file(counter), PROCS * ITERATIONS);
  /* Every hold, as its process wrote it: none began before the previous
   * one ended, and tokens rose from each to the next (holds.h). */
  int violations = -1;
  CU_ASSERT_EQUAL(zkt_check_hold_log(holds, &violations), PROCS * ITERATIONS);
  CU_ASSERT_EQUAL(violations, 0);
  unlink(counter);
  unlink(holds);
  rmdir(dir);
  g_free(counter);
  g_free(holds);
  g_free(dir);
  g_free(path);
}

/* ------------------------------------------------------------- the herd */

typedef struct waiter {
  zkrc_lock *lk; /* shared object: every thread is its own participant */
  int index;
  GMutex *mu;
  GCond *cond;
  int *holder;       /* index of the thread holding, or -1 */
  int *release_turn; /* index allowed to release */
  int failed;
} waiter;

static gpointer waiter_main(gpointer data) {
  waiter *w = data;
  if (zkrc_lock_acquire(w->lk, 60000) != ZKRC_OK) {
    w->failed = 1;
    return NULL;
  }
  g_mutex_lock(w->mu);
  if (*w->holder != -1)
    w->failed = 1; /* two holders */
  *w->holder = w->index;
  g_cond_broadcast(w->cond);
  while (*w->release_turn != w->index)
    g_cond_wait(w->cond, w->mu);
  *w->holder = -1;
  g_mutex_unlock(w->mu);
  if (zkrc_lock_release(w->lk) != ZKRC_OK)
    w->failed = 1;
  return NULL;
}

static int64_t watch_count(void) {
  return zkrc_ensemble_mntr_sum(zkt_ensemble(), "zk_watch_count");
}

static int watches_reached(void *arg) {
  return watch_count() == *(int64_t *)arg;
}

/* Each waiter watches only its predecessor: wchp lists every contender
 * node but the last with exactly one watching session, and nothing watches
 * the directory. */
static void check_only_predecessors_watched(const char *path, int nodes) {
  char *wchp = NULL;
  CU_ASSERT_EQUAL_FATAL(
      zkrc_ensemble_four_letter(zkt_ensemble(), 0, "wchp", &wchp), 0);
  int watched_paths = 0, sessions = 0;
  gboolean dir_watched = FALSE;
  char **lines = g_strsplit(wchp, "\n", -1);
  gboolean in_ours = FALSE;
  for (char **l = lines; *l; l++) {
    if ((*l)[0] == '/') {
      in_ours = g_str_has_prefix(*l, path) && (*l)[strlen(path)] == '/';
      dir_watched |= strcmp(*l, path) == 0;
      watched_paths += in_ours;
    } else if (in_ours && g_strstrip(*l)[0] == '0') {
      sessions++; /* one line per watching session: "0x..." */
    }
  }
  g_strfreev(lines);
  g_free(wchp);
  CU_ASSERT_FALSE(dir_watched);
  CU_ASSERT_EQUAL(watched_paths, nodes - 1);
  CU_ASSERT_EQUAL(sessions, nodes - 1);
}

static void test_one_release_wakes_one_waiter(void) {
  enum { WAITERS = 100 };
  char *path = zkt_path("herd");
  zkrc_session *s = zkt_session_with(10000, 0);
  zkrc_lock *lk = new_lock(s, path);
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_acquire(lk, 5000), ZKRC_OK);

  GMutex mu;
  GCond cond;
  g_mutex_init(&mu);
  g_cond_init(&cond);
  int holder = -1, release_turn = -1;
  waiter w[WAITERS];
  GThread *threads[WAITERS];
  zhandle_t *zh = zkt_raw();
  int64_t watches_before = watch_count();
  for (int i = 0; i < WAITERS; i++) {
    w[i] = (waiter){lk, i, &mu, &cond, &holder, &release_turn, 0};
    threads[i] = g_thread_new("waiter", waiter_main, &w[i]);
    /* Queue them in a known order: wait until this one's node is there. */
    CU_ASSERT_FATAL(zkt_wait_children(zh, path, i + 2, 10000));
  }
  /* Every waiter has set exactly one watch, on its predecessor. */
  int64_t expected = watches_before + WAITERS;
  CU_ASSERT_FATAL(zkt_wait_for(watches_reached, &expected, 10000));
  check_only_predecessors_watched(path, WAITERS + 1);

  /* Release one by one: each release delivers exactly one watch event (to
   * the next waiter) and removes exactly one watch on the servers. */
  int bad_events = 0, bad_watches = 0, out_of_order = 0;
  int64_t packets_before =
      zkrc_ensemble_mntr_sum(zkt_ensemble(), "zk_packets_received");
  for (int i = 0; i <= WAITERS; i++) {
    guint64 events_before = zkrc__watch_events_delivered();
    int64_t watches = watch_count();
    if (i == 0) {
      CU_ASSERT_EQUAL(zkrc_lock_release(lk), ZKRC_OK);
    } else {
      g_mutex_lock(&mu);
      release_turn = i - 1;
      g_cond_broadcast(&cond);
      g_mutex_unlock(&mu);
    }
    if (i == WAITERS)
      break;
    g_mutex_lock(&mu);
    int64_t deadline = g_get_monotonic_time() + 10 * G_TIME_SPAN_SECOND;
    while (holder != i && g_cond_wait_until(&cond, &mu, deadline))
      ;
    out_of_order += holder != i;
    g_mutex_unlock(&mu);
    bad_events += zkrc__watch_events_delivered() - events_before != 1;
    bad_watches += watch_count() != watches - 1;
  }
  for (int i = 0; i < WAITERS; i++) {
    g_thread_join(threads[i]);
    CU_ASSERT_EQUAL(w[i].failed, 0);
  }
  /* Each hand-over costs the releaser's delete, the successor's one read
   * (the stat of its own node: its predecessor was first of all) and the
   * first renewal of the successor's lease, which rested while it waited:
   * a constant, not a walk through the queue.  The servers count our own
   * mntr probes as packets too: two per round, and this one. */
  int64_t packets =
      zkrc_ensemble_mntr_sum(zkt_ensemble(), "zk_packets_received") -
      packets_before - (2 * WAITERS + 1) - 1;
  double per_handover = (double)packets / (WAITERS + 1);
  printf("(%.2f requests per hand-over) ", per_handover);
  CU_ASSERT(per_handover >= 2.5 && per_handover < 3.5);
  CU_ASSERT_EQUAL(out_of_order, 0); /* fair: in queue order */
  CU_ASSERT_EQUAL(bad_events, 0);
  CU_ASSERT_EQUAL(bad_watches, 0);
  CU_ASSERT_EQUAL(zkt_nodes_left(zh, path), 0);
  zookeeper_close(zh);
  zkrc_lock_free(lk);
  zkrc_session_close(s);
  g_mutex_clear(&mu);
  g_cond_clear(&cond);
  g_free(path);
}

/* ------------------------------------------------ many threads, one object */

/* lock_private.h's (whose types this file's names would shadow). */
guint zkrc__lock_thread_wakeups(void);

typedef struct crowd {
  zkrc_lock *lk;
  gint holding; /* threads between their acquire and release */
  gint overlaps, failures, holds;
} crowd;

static gpointer crowd_member(gpointer data) {
  crowd *c = data;
  if (zkrc_lock_acquire(c->lk, 60000) != ZKRC_OK) {
    g_atomic_int_inc(&c->failures);
    return NULL;
  }
  if (g_atomic_int_add(&c->holding, 1) != 0)
    g_atomic_int_inc(&c->overlaps);
  g_atomic_int_inc(&c->holds);
  g_atomic_int_add(&c->holding, -1);
  if (zkrc_lock_release(c->lk) != ZKRC_OK)
    g_atomic_int_inc(&c->failures);
  return NULL;
}

/* 200 threads queued on one lock object: each gets it in turn, one at a
 * time, and a hand-over wakes the thread it admits, not every waiting one
 * (counted by the library: with one condition broadcast to all, the 200
 * hand-overs would wake about 200 * 200 / 2 threads). */
static void test_two_hundred_threads_on_one_object_wake_one_each(void) {
  enum { THREADS = 200 };
  char *path = zkt_path("crowd");
  zkrc_session *s = zkt_session_with(10000, 0);
  crowd c = {.lk = new_lock(s, path)};
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_acquire(c.lk, 5000), ZKRC_OK);
  zhandle_t *zh = zkt_raw();
  GThread *threads[THREADS];
  for (int i = 0; i < THREADS; i++)
    threads[i] = g_thread_new("crowd", crowd_member, &c);
  CU_ASSERT_FATAL(zkt_wait_children(zh, path, THREADS + 1, 30000));
  guint wakeups_before = zkrc__lock_thread_wakeups();
  CU_ASSERT_EQUAL(zkrc_lock_release(c.lk), ZKRC_OK);
  for (int i = 0; i < THREADS; i++)
    g_thread_join(threads[i]);
  guint wakeups = zkrc__lock_thread_wakeups() - wakeups_before;
  printf("(%u wake-ups for %d hand-overs) ", wakeups, THREADS);
  CU_ASSERT_EQUAL(c.failures, 0);
  CU_ASSERT_EQUAL(c.overlaps, 0);
  CU_ASSERT_EQUAL(c.holds, THREADS);
  /* Its turn, and perhaps the news that others are ahead (a first listing
   * that had not come back when all the nodes were there). */
  CU_ASSERT(wakeups >= THREADS && wakeups <= 2 * THREADS);
  CU_ASSERT_EQUAL(zkt_nodes_left(zh, path), 0);
  zookeeper_close(zh);
  zkrc_lock_free(c.lk);
  zkrc_session_close(s);
  g_free(path);
}

/* ----------------------------------------------------------- reentrancy */

typedef struct contender_probe {
  zkrc_lock *lk;
  int try_rc, timed_rc, final_rc;
  GMutex mu;
  GCond cond;
  int stage;
} contender_probe;

static gpointer second_thread(gpointer data) {
  contender_probe *p = data;
  p->try_rc = zkrc_lock_acquire(p->lk, ZKRC_NO_WAIT);
  p->timed_rc = zkrc_lock_acquire(p->lk, 300);
  g_mutex_lock(&p->mu);
  p->stage = 1;
  g_cond_broadcast(&p->cond);
  g_mutex_unlock(&p->mu);
  p->final_rc = zkrc_lock_acquire(p->lk, 10000);
  if (p->final_rc == ZKRC_OK)
    zkrc_lock_release(p->lk);
  return NULL;
}

static void test_reentrancy_is_per_thread(void) {
  char *path = zkt_path("reentrant");
  zkrc_session *s = zkt_session();
  zkrc_lock *lk = new_lock(s, path);
  zhandle_t *zh = zkt_raw();
  for (int depth = 1; depth <= 3; depth++) {
    CU_ASSERT_EQUAL(zkrc_lock_acquire(lk, 5000), ZKRC_OK);
    CU_ASSERT_EQUAL(zkrc_lock_depth(lk), depth);
  }
  CU_ASSERT_EQUAL(zkt_child_count(zh, path), 1); /* one node for all three */

  contender_probe p = {.lk = lk};
  g_mutex_init(&p.mu);
  g_cond_init(&p.cond);
  GThread *t = g_thread_new("second", second_thread, &p);
  g_mutex_lock(&p.mu);
  while (p.stage == 0)
    g_cond_wait(&p.cond, &p.mu);
  g_mutex_unlock(&p.mu);
  ZKT_ASSERT_RC(ZKRC_ELOCKED, p.try_rc);
  ZKT_ASSERT_RC(ZKRC_ETIMEDOUT, p.timed_rc);
  CU_ASSERT_EQUAL(zkrc_lock_release(lk), ZKRC_OK);
  CU_ASSERT_EQUAL(zkrc_lock_release(lk), ZKRC_OK);
  CU_ASSERT_TRUE(zkrc_lock_is_held(lk)); /* one level left */
  CU_ASSERT_EQUAL(zkrc_lock_release(lk), ZKRC_OK);
  CU_ASSERT_FALSE(zkrc_lock_is_held(lk));
  g_thread_join(t);
  ZKT_ASSERT_RC(ZKRC_OK, p.final_rc);
  ZKT_ASSERT_RC(ZKRC_ENOTOWNER, zkrc_lock_release(lk));
  g_mutex_clear(&p.mu);
  g_cond_clear(&p.cond);
  zookeeper_close(zh);
  zkrc_lock_free(lk);
  zkrc_session_close(s);
  g_free(path);
}

typedef struct release_probe {
  zkrc_lock *lk;
  int rc;
} release_probe;

static gpointer release_from_other_thread(gpointer data) {
  release_probe *p = data;
  p->rc = zkrc_lock_release(p->lk);
  return NULL;
}

static void test_release_by_another_thread_is_refused(void) {
  char *path = zkt_path("not-owner");
  zkrc_session *s = zkt_session();
  zkrc_lock *lk = new_lock(s, path);
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_acquire(lk, 5000), ZKRC_OK);
  release_probe p = {lk, 0};
  g_thread_join(g_thread_new("other", release_from_other_thread, &p));
  ZKT_ASSERT_RC(ZKRC_ENOTOWNER, p.rc);
  CU_ASSERT_TRUE(zkrc_lock_is_held(lk)); /* nothing changed */
  zhandle_t *zh = zkt_raw();
  CU_ASSERT_EQUAL(zkt_child_count(zh, path), 1);
  CU_ASSERT_EQUAL(zkrc_lock_release(lk), ZKRC_OK);
  zookeeper_close(zh);
  zkrc_lock_free(lk);
  zkrc_session_close(s);
  g_free(path);
}

/* ------------------------------------------------------------ timeouts */

static void test_timeout_and_try_leave_no_node(void) {
  char *path = zkt_path("timeout");
  zkrc_session *s1 = zkt_session(), *s2 = zkt_session();
  zkrc_lock *holder = new_lock(s1, path), *other = new_lock(s2, path);
  zhandle_t *zh = zkt_raw();
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_acquire(holder, 5000), ZKRC_OK);

  int64_t start = zkt_now_ms();
  ZKT_ASSERT_RC(ZKRC_ELOCKED, zkrc_lock_acquire(other, ZKRC_NO_WAIT));
  CU_ASSERT(zkt_now_ms() - start < 1000);
  CU_ASSERT_EQUAL(zkt_child_count(zh, path), 1); /* only the holder's */

  start = zkt_now_ms();
  ZKT_ASSERT_RC(ZKRC_ETIMEDOUT, zkrc_lock_acquire(other, 400));
  int64_t took = zkt_now_ms() - start;
  CU_ASSERT(took >= 400 && took < 900);
  CU_ASSERT_EQUAL(zkt_child_count(zh, path), 1);
  CU_ASSERT_FALSE(zkrc_lock_is_held(other));

  /* The holder can still hand over: the timed-out node is truly gone. */
  CU_ASSERT_EQUAL(zkrc_lock_release(holder), ZKRC_OK);
  CU_ASSERT_EQUAL(zkrc_lock_acquire(other, ZKRC_NO_WAIT), ZKRC_OK);
  CU_ASSERT_EQUAL(zkrc_lock_release(other), ZKRC_OK);
  zookeeper_close(zh);
  zkrc_lock_free(holder);
  zkrc_lock_free(other);
  zkrc_session_close(s1);
  zkrc_session_close(s2);
  g_free(path);
}

/* -------------------------------------------------------------- tokens */

static int parent_gone(void *arg) {
  zhandle_t **zh_path = arg;
  return !zkt_exists(zh_path[0], (const char *)zh_path[1]);
}

static void test_tokens_increase_across_holders_and_recreation(void) {
  char *path = zkt_path("tokens");
  zkrc_session *s[3] = {zkt_session(), zkt_session(), zkt_session()};
  zkrc_lock *lk[3];
  for (int i = 0; i < 3; i++)
    lk[i] = new_lock(s[i], path);
  int64_t previous = 0;
  int increasing = 1;
  for (int i = 0; i < 50; i++) {
    zkrc_lock *l = lk[i % 3];
    CU_ASSERT_EQUAL_FATAL(zkrc_lock_acquire(l, 5000), ZKRC_OK);
    int64_t token = 0;
    CU_ASSERT_EQUAL(zkrc_lock_token(l, &token), ZKRC_OK);
    increasing &= token > previous;
    previous = token;
    CU_ASSERT_EQUAL(zkrc_lock_release(l), ZKRC_OK);
  }
  CU_ASSERT_TRUE(increasing);

  /* The empty directory (a container) is removed by the servers; a new
   * one starts its sequence at 0 again, but the token still grows. */
  zhandle_t *zh = zkt_raw();
  void *zh_path[2] = {zh, path};
  CU_ASSERT_FATAL(zkt_wait_for(parent_gone, zh_path, 10000));
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_acquire(lk[0], 5000), ZKRC_OK);
  int64_t token = 0;
  char *node = NULL;
  CU_ASSERT_EQUAL(zkrc_lock_token(lk[0], &token), ZKRC_OK);
  CU_ASSERT_EQUAL(zkrc_lock_node(lk[0], &node), ZKRC_OK);
  CU_ASSERT(token > previous);
  CU_ASSERT_PTR_NOT_NULL(node);
  if (node)
    CU_ASSERT(g_str_has_suffix(node, "lock-0000000000"));
  CU_ASSERT_EQUAL(zkt_czxid(zh, node), token); /* the token is the czxid */
  free(node);
  CU_ASSERT_EQUAL(zkrc_lock_release(lk[0]), ZKRC_OK);
  for (int i = 0; i < 3; i++) {
    zkrc_lock_free(lk[i]);
    zkrc_session_close(s[i]);
  }
  zookeeper_close(zh);
  g_free(path);
}

/* ------------------------------------------------------ dying holders */

static void test_killed_holders_successor_gets_it_within_the_timeout(void) {
  char *path = zkt_path("killed");
  char *argv[] = {NULL, "hold", (char *)zkt_hosts(), path, NULL};
  worker w = start_worker(argv); /* session timeout 2000 ms */
  char line[128] = "";
  CU_ASSERT_PTR_NOT_NULL_FATAL(fgets(line, sizeof line, w.out));
  CU_ASSERT_FATAL(g_str_has_prefix(line, "held "));
  zkrc_session *s = zkt_session();
  zkrc_lock *lk = new_lock(s, path);
  ZKT_ASSERT_RC(ZKRC_ELOCKED, zkrc_lock_acquire(lk, ZKRC_NO_WAIT));
  kill(w.pid, SIGKILL);
  int64_t killed = zkt_now_ms();
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lk, 10000));
  int64_t waited = zkt_now_ms() - killed;
  printf("(successor after %" PRId64 " ms) ", waited);
  CU_ASSERT(waited < 2000 + 2000);
  CU_ASSERT_EQUAL(wait_worker(&w, 5000), 128 + SIGKILL);
  zkrc_lock_release(lk);
  zkrc_lock_free(lk);
  zkrc_session_close(s);
  g_free(path);
}

typedef struct events {
  GMutex mu;
  GCond cond;
  int lost;
  int reason;
  int64_t token;
} events;

static void on_lock_event(zkrc_lock *lk, const zkrc_lock_event *info,
                          void *arg) {
  events *ev = arg;
  g_mutex_lock(&ev->mu);
  if (info->type == ZKRC_LOCK_LOST) {
    ev->lost++;
    ev->reason = info->reason;
    ev->token = info->token;
  }
  g_cond_broadcast(&ev->cond);
  g_mutex_unlock(&ev->mu);
}

static int wait_lost(events *ev, int timeout_ms) {
  int64_t deadline = g_get_monotonic_time() + (int64_t)timeout_ms * 1000;
  g_mutex_lock(&ev->mu);
  while (ev->lost == 0 && g_cond_wait_until(&ev->cond, &ev->mu, deadline))
    ;
  int lost = ev->lost;
  g_mutex_unlock(&ev->mu);
  return lost;
}

typedef struct replaced_check {
  zkrc_session *s;
  int64_t old_id;
} replaced_check;

/* Has the session object opened (and connected) a new ZooKeeper session? */
static int session_replaced(void *arg) {
  replaced_check *rc = arg;
  int64_t id = zkrc_session_id(rc->s);
  return id != 0 && id != rc->old_id &&
         zkrc_session_get_state(rc->s) == ZKRC_SESSION_CONNECTED;
}

static void test_expired_holder_is_told_and_cannot_write(void) {
  char *path = zkt_path("expired");
  zkrc_session *s = zkt_session();
  events ev = {0};
  g_mutex_init(&ev.mu);
  g_cond_init(&ev.cond);
  zkrc_lock_options o;
  zkrc_lock_options_init(&o);
  o.on_event = on_lock_event;
  o.event_arg = &ev;
  zkrc_lock *lk = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_new(&lk, s, path, &o), ZKRC_OK);
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_acquire(lk, 5000), ZKRC_OK);
  int64_t token = 0;
  zkrc_lock_token(lk, &token);

  /* A fenced write works while we hold the lock. */
  char *data = g_strdup_printf("%s-data", path);
  zoo_op_t op;
  char created[256];
  zoo_create_op_init(&op, data, "v1", 2, &ZOO_OPEN_ACL_UNSAFE, 0, created,
                     sizeof created);
  zoo_op_result_t result;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_fenced_multi(lk, 1, &op, &result, 5000));
  CU_ASSERT_EQUAL(result.err, ZOK);
  CU_ASSERT_STRING_EQUAL(created, data);

  int64_t first_session = zkrc_session_id(s);
  zkt_expire(s);
  CU_ASSERT_EQUAL_FATAL(wait_lost(&ev, 10000), 1);
  /* The servers delete our node when they expire the session; which of the
   * two we hear of first depends on when our client reconnects. */
  CU_ASSERT(ev.reason == ZKRC_ESESSIONEXPIRED || ev.reason == ZKRC_ELOCKLOST);
  CU_ASSERT_EQUAL(ev.token, token);
  CU_ASSERT_FALSE(zkrc_lock_is_held(lk));
  /* The holder that lost its lock cannot write. */
  zoo_op_t set;
  zoo_set_op_init(&set, data, "v2", 2, -1, NULL);
  ZKT_ASSERT_RC(ZKRC_ELOCKLOST,
                zkrc_lock_fenced_multi(lk, 1, &set, NULL, 5000));
  zhandle_t *zh = zkt_raw();
  char buf[8];
  int len = sizeof buf;
  CU_ASSERT_EQUAL(zoo_get(zh, data, 0, buf, &len, NULL), ZOK);
  CU_ASSERT(len == 2 && memcmp(buf, "v1", 2) == 0);
  ZKT_ASSERT_RC(ZKRC_ELOCKLOST, zkrc_lock_token(lk, &token));
  ZKT_ASSERT_RC(ZKRC_ELOCKLOST, zkrc_lock_acquire(lk, 100)); /* release first */
  ZKT_ASSERT_RC(ZKRC_ELOCKLOST, zkrc_lock_release(lk));
  /* After the release the same object works on the next session. */
  replaced_check rc = {s, first_session};
  CU_ASSERT(zkt_wait_for(session_replaced, &rc, 10000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lk, 10000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(lk));
  CU_ASSERT_EQUAL(ev.lost, 1); /* exactly once */
  zoo_delete(zh, data, -1);
  zookeeper_close(zh);
  zkrc_lock_free(lk);
  zkrc_session_close(s);
  g_mutex_clear(&ev.mu);
  g_cond_clear(&ev.cond);
  g_free(data);
  g_free(path);
}

static void test_deleted_node_makes_the_holder_lose(void) {
  char *path = zkt_path("deleted");
  zkrc_session *s = zkt_session();
  events ev = {0};
  g_mutex_init(&ev.mu);
  g_cond_init(&ev.cond);
  zkrc_lock_options o;
  zkrc_lock_options_init(&o);
  o.on_event = on_lock_event;
  o.event_arg = &ev;
  zkrc_lock *lk = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_new(&lk, s, path, &o), ZKRC_OK);
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_acquire(lk, 5000), ZKRC_OK);
  char *node = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_node(lk, &node), ZKRC_OK);
  zhandle_t *zh = zkt_raw();
  /* The own-node watch is set just after the acquisition returned; an
   * administrator's delete before it lands is still seen (as ZNONODE). */
  CU_ASSERT_EQUAL(zoo_delete(zh, node, -1), ZOK);
  CU_ASSERT_EQUAL(wait_lost(&ev, 10000), 1);
  CU_ASSERT_EQUAL(ev.reason, ZKRC_ELOCKLOST);
  CU_ASSERT_FALSE(zkrc_lock_is_held(lk));
  ZKT_ASSERT_RC(ZKRC_ELOCKLOST,
                zkrc_lock_fenced_multi(lk, 0, NULL, NULL, 1000));
  ZKT_ASSERT_RC(ZKRC_ELOCKLOST, zkrc_lock_release(lk));
  free(node);
  zookeeper_close(zh);
  zkrc_lock_free(lk);
  zkrc_session_close(s);
  g_mutex_clear(&ev.mu);
  g_cond_clear(&ev.cond);
  g_free(path);
}

typedef struct blocked {
  zkrc_lock *lk;
  int rc;
} blocked;

static gpointer blocked_acquire(gpointer data) {
  blocked *b = data;
  b->rc = zkrc_lock_acquire(b->lk, 20000);
  return NULL;
}

/* Acquire and release in one thread (ownership is per thread). */
static gpointer acquire_then_release(gpointer data) {
  blocked *b = data;
  b->rc = zkrc_lock_acquire(b->lk, 20000);
  if (b->rc == ZKRC_OK)
    b->rc = zkrc_lock_release(b->lk);
  return NULL;
}

static void test_waiter_returns_an_error_on_expiry(void) {
  char *path = zkt_path("waiter-expiry");
  zkrc_session *s1 = zkt_session(), *s2 = zkt_session();
  zkrc_lock *holder = new_lock(s1, path), *lk = new_lock(s2, path);
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_acquire(holder, 5000), ZKRC_OK);
  blocked b = {lk, 0};
  GThread *t = g_thread_new("blocked", blocked_acquire, &b);
  zhandle_t *zh = zkt_raw();
  CU_ASSERT_FATAL(zkt_wait_children(zh, path, 2, 5000));
  int64_t start = zkt_now_ms();
  zkt_expire(s2);
  g_thread_join(t);
  ZKT_ASSERT_RC(ZKRC_ESESSIONEXPIRED, b.rc);
  CU_ASSERT(zkt_now_ms() - start < 5000);
  CU_ASSERT_EQUAL(zkt_child_count(zh, path), 1); /* the holder's only */
  CU_ASSERT_EQUAL(zkrc_lock_release(holder), ZKRC_OK);
  zookeeper_close(zh);
  zkrc_lock_free(holder);
  zkrc_lock_free(lk);
  zkrc_session_close(s1);
  zkrc_session_close(s2);
  g_free(path);
}

/* ----------------------------------------------------- containers, ids */

/* What the tests of threads on one object start from: a session (10 s),
 * a lock object on a fresh path, held by this thread, and a raw handle. */
typedef struct held_object {
  char *path;
  zkrc_session *s;
  zkrc_lock *lk;
  zhandle_t *zh;
} held_object;

static held_object held_object_new(const char *name) {
  held_object o = {zkt_path(name), zkt_session_with(10000, 0), NULL, NULL};
  o.lk = new_lock(o.s, o.path);
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_acquire(o.lk, 5000), ZKRC_OK);
  o.zh = zkt_raw();
  return o;
}

/* Check that no node is left under it, and free it all. */
static void held_object_done(held_object *o) {
  CU_ASSERT_EQUAL(zkt_nodes_left(o->zh, o->path), 0);
  zookeeper_close(o->zh);
  zkrc_lock_free(o->lk);
  zkrc_session_close(o->s);
  g_free(o->path);
}

/* Release @p lk, then join the @p n threads @p t, each of which must have
 * got the lock and released it (@p b). */
static void release_and_join(zkrc_lock *lk, GThread **t, const blocked *b,
                             int n) {
  CU_ASSERT_EQUAL(zkrc_lock_release(lk), ZKRC_OK);
  for (int i = 0; i < n; i++) {
    g_thread_join(t[i]);
    ZKT_ASSERT_RC(ZKRC_OK, b[i].rc);
  }
}

/* Threads queued on one lock object, each behind the one before (its
 * first listing showed all those ahead of it): once the front leaves, its
 * successor holds, and when that one leaves, the next one holds on the
 * stat of its own node alone, as every later one does, without listing the
 * queue again (its predecessor was first of all when it left, which its
 * lock object knows).  Shown by the servers: once they all wait, nobody
 * may list the directory any more (its ACL loses READ); a thread that
 * listed again would be refused (ZKRC_ENOAUTH). */
static void test_threads_take_over_in_turn_without_listing(void) {
  enum { THREADS = 3 };
  held_object o = held_object_new("turns-unlisted");
  zkrc_lock *lk = o.lk;
  zhandle_t *zh = o.zh;
  int64_t watches = watch_count() + THREADS; /* each on its predecessor */
  blocked b[THREADS];
  GThread *t[THREADS];
  for (int i = 0; i < THREADS; i++) {
    b[i] = (blocked){lk, -1};
    t[i] = g_thread_new("turn", acquire_then_release, &b[i]);
    CU_ASSERT_FATAL(zkt_wait_children(zh, o.path, i + 2, 10000)); /* in order */
  }
  CU_ASSERT_FATAL(zkt_wait_for(watches_reached, &watches, 10000));
  zkt_forbid_listing(zh, o.path);
  release_and_join(lk, t, b, THREADS);
  CU_ASSERT_EQUAL(zoo_set_acl(zh, o.path, -1, &ZOO_OPEN_ACL_UNSAFE), ZOK);
  held_object_done(&o);
}

/* Has the session sent @p arg[1] requests (besides renewals) since
 * @p arg[2] were counted? */
static int sent_since(void *arg) {
  void **s_n_before = arg;
  uint64_t n = (uint64_t)GPOINTER_TO_SIZE(s_n_before[1]);
  uint64_t before = *(uint64_t *)s_n_before[2];
  return zkt_requests_but_renewals(s_n_before[0]) >= before + n;
}

/* Threads joining one lock object while it is held, one after the other:
 * each one's node is numbered right after the one before, so the object
 * knows each one's predecessor without a listing (queue_tail.c).  Shown by
 * the servers: nobody may list the directory from the first hold on (its
 * ACL loses READ), and yet every thread queues, watches its predecessor
 * (one watch each) and holds in turn; a thread that listed would be
 * refused (ZKRC_ENOAUTH). */
static void test_threads_join_behind_each_other_without_listing(void) {
  enum { THREADS = 3 };
  held_object o = held_object_new("joins-unlisted");
  zkrc_lock *lk = o.lk;
  zhandle_t *zh = o.zh;
  zkt_forbid_listing(zh, o.path);
  int64_t watches = watch_count();
  blocked b[THREADS];
  GThread *t[THREADS];
  for (int i = 0; i < THREADS; i++) {
    b[i] = (blocked){lk, -1};
    t[i] = g_thread_new("join", acquire_then_release, &b[i]);
    watches++; /* its, on its predecessor: joined in this order */
    CU_ASSERT_FATAL(zkt_wait_for(watches_reached, &watches, 10000));
  }
  release_and_join(lk, t, b, THREADS);
  CU_ASSERT_EQUAL(zoo_set_acl(zh, o.path, -1, &ZOO_OPEN_ACL_UNSAFE), ZOK);
  held_object_done(&o);
}

/* The requests of a thread joining a held lock object until it watches
 * its predecessor: right behind the object's newest node, its create and
 * the getData that watches (2); with someone else's node created between
 * (a node of another client), its number proves nothing: its create, a
 * listing and the getData (3). */
static void test_joiner_lists_when_another_node_came_between(void) {
  held_object o = held_object_new("joins-between");
  zkrc_lock *lk = o.lk;
  zhandle_t *zh = o.zh;
  int64_t watches = watch_count() + 1;
  uint64_t before = zkt_requests_but_renewals(o.s);
  blocked right_behind = {lk, -1}, after_other = {lk, -1};
  GThread *t1 = g_thread_new("behind", acquire_then_release, &right_behind);
  CU_ASSERT_FATAL(zkt_wait_for(watches_reached, &watches, 10000));
  CU_ASSERT_EQUAL(zkt_requests_but_renewals(o.s) - before, 2);
  char *other = g_strdup_printf("%s/other-", o.path);
  char made[256];
  CU_ASSERT_EQUAL_FATAL(zoo_create(zh, other, NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
                                   ZOO_EPHEMERAL_SEQUENTIAL, made, sizeof made),
                        ZOK);
  watches++;
  before = zkt_requests_but_renewals(o.s);
  GThread *t2 = g_thread_new("after", acquire_then_release, &after_other);
  CU_ASSERT_FATAL(zkt_wait_for(watches_reached, &watches, 10000));
  CU_ASSERT_EQUAL(zkt_requests_but_renewals(o.s) - before, 3);
  CU_ASSERT_EQUAL(zkrc_lock_release(lk), ZKRC_OK);
  g_thread_join(t1);
  g_thread_join(t2);
  ZKT_ASSERT_RC(ZKRC_OK, right_behind.rc);
  ZKT_ASSERT_RC(ZKRC_OK, after_other.rc);
  CU_ASSERT_EQUAL(zoo_delete(zh, made, -1), ZOK);
  g_free(other);
  held_object_done(&o);
}

/* For zkt_wait_for(): does waiter @p arg hold? */
static int waiter_holds(void *arg) {
  waiter *w = arg;
  g_mutex_lock(w->mu);
  int holds = *w->holder == w->index;
  g_mutex_unlock(w->mu);
  return holds;
}

/* Deletions are not numbered (ZooKeeper counts a directory's creates):
 * the thread that handed the lock over joins again right behind the
 * object's newest node, although its own node was deleted between the two
 * creates, and so without a listing: its create and the getData that
 * watches (2 requests; a listing would make 3). */
static void test_joiner_after_a_handover_joins_without_listing(void) {
  held_object o = held_object_new("joins-after-handover");
  zkrc_lock *lk = o.lk;
  GMutex mu;
  GCond cond;
  g_mutex_init(&mu);
  g_cond_init(&cond);
  int holder = -1, release_turn = -1;
  waiter next = {lk, 0, &mu, &cond, &holder, &release_turn, 0};
  int64_t watches = watch_count() + 1;
  GThread *tn = g_thread_new("next", waiter_main, &next);
  CU_ASSERT_FATAL(zkt_wait_for(watches_reached, &watches, 10000));
  CU_ASSERT_EQUAL(zkrc_lock_release(lk), ZKRC_OK);
  CU_ASSERT(zkt_wait_for(waiter_holds, &next, 10000));
  watches = watch_count() + 1;
  uint64_t before = zkt_requests_but_renewals(o.s);
  blocked again = {lk, -1};
  GThread *ta = g_thread_new("again", acquire_then_release, &again);
  CU_ASSERT(zkt_wait_for(watches_reached, &watches, 10000));
  CU_ASSERT_EQUAL(zkt_requests_but_renewals(o.s) - before, 2);
  g_mutex_lock(&mu);
  release_turn = 0;
  g_cond_broadcast(&cond);
  g_mutex_unlock(&mu);
  g_thread_join(tn);
  g_thread_join(ta);
  CU_ASSERT_EQUAL(next.failed, 0);
  ZKT_ASSERT_RC(ZKRC_OK, again.rc);
  g_cond_clear(&cond);
  g_mutex_clear(&mu);
  held_object_done(&o);
}

static int queue_length_is(void *arg) {
  void **lk_and_n = arg;
  zkrc_lock_stats st;
  return zkrc_lock_get_stats(lk_and_n[0], &st, sizeof st) == ZKRC_OK &&
         st.queue_length == (uint32_t)GPOINTER_TO_INT(lk_and_n[1]);
}

static int by_sequence(const void *a, const void *b) {
  int32_t x = 0, y = 0;
  zkrc_contender_marker(*(char *const *)a, &x);
  zkrc_contender_marker(*(char *const *)b, &y);
  return (x > y) - (x < y);
}

/* The full path of the contender at place @p place (from 0) in @p path's
 * queue, or NULL. */
static char *queue_place(zhandle_t *zh, const char *path, int place) {
  struct String_vector kids = {0, NULL};
  if (zoo_get_children(zh, path, 0, &kids) != ZOK)
    return NULL;
  qsort(kids.data, (size_t)kids.count, sizeof *kids.data, by_sequence);
  char *node = place < kids.count
                   ? g_strdup_printf("%s/%s", path, kids.data[place])
                   : NULL;
  deallocate_String_vector(&kids);
  return node;
}

/* The other side of the above: a thread whose predecessor leaves from the
 * middle of the queue (its node deleted while the first one holds) was not
 * behind the first of all: it lists the queue again and watches the holder
 * (two requests, the second sent once the listing was judged) and keeps
 * waiting behind it, rather than taking its own node's presence for the
 * lock (which would cost one request, a stat of its node).  The threads
 * joined right behind each other: their places came from their nodes'
 * numbers (queue_tail.c), and the queue's length from the object's own
 * holds. */
static void test_waiter_behind_a_middle_departure_keeps_waiting(void) {
  held_object o = held_object_new("middle-departure");
  zkrc_lock *lk = o.lk;
  zhandle_t *zh = o.zh;
  int64_t watches = watch_count() + 2; /* each on its predecessor */
  blocked middle = {lk, -1}, last = {lk, -1};
  GThread *tm = g_thread_new("middle", acquire_then_release, &middle);
  CU_ASSERT_FATAL(zkt_wait_children(zh, o.path, 2, 10000));
  GThread *tl = g_thread_new("last", acquire_then_release, &last);
  CU_ASSERT_FATAL(zkt_wait_children(zh, o.path, 3, 10000));
  CU_ASSERT_FATAL(zkt_wait_for(watches_reached, &watches, 10000));
  void *three[] = {lk, GINT_TO_POINTER(3)};
  CU_ASSERT_FATAL(zkt_wait_for(queue_length_is, three, 10000));
  char *second = queue_place(zh, o.path, 1);
  CU_ASSERT_FATAL(second != NULL);
  uint64_t before = zkt_requests_but_renewals(o.s);
  CU_ASSERT_EQUAL(zoo_delete(zh, second, -1), ZOK);
  void *listed_and_watched[] = {o.s, GSIZE_TO_POINTER(2), &before};
  CU_ASSERT(zkt_wait_for(sent_since, listed_and_watched, 10000));
  zkrc_lock_stats st;
  CU_ASSERT_EQUAL(zkrc_lock_get_stats(lk, &st, sizeof st), ZKRC_OK);
  CU_ASSERT_EQUAL(st.acquisitions, 1); /* the first thread's alone */
  CU_ASSERT_EQUAL(st.holding, 1);
  CU_ASSERT_EQUAL(st.waiting, 2);
  CU_ASSERT_EQUAL(zkrc_lock_release(lk), ZKRC_OK);
  g_thread_join(tm); /* queued again once it found its node gone */
  g_thread_join(tl);
  ZKT_ASSERT_RC(ZKRC_OK, middle.rc);
  ZKT_ASSERT_RC(ZKRC_OK, last.rc);
  g_free(second);
  held_object_done(&o);
}

static void test_directory_is_a_container_removed_when_empty(void) {
  char *path = zkt_path("container");
  char *deep = g_strdup_printf("%s/a/b", path);
  zkrc_session *s = zkt_session();
  zkrc_lock *lk = new_lock(s, deep);
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_acquire(lk, 5000), ZKRC_OK);
  zhandle_t *zh = zkt_raw();
  struct Stat st;
  CU_ASSERT_EQUAL(zoo_exists(zh, deep, 0, &st), ZOK);
  CU_ASSERT_EQUAL(zkrc_lock_release(lk), ZKRC_OK);
  /* Every missing ancestor was created as a container too: all go. */
  void *zh_path[2] = {zh, path};
  CU_ASSERT(zkt_wait_for(parent_gone, zh_path, 15000));
  zookeeper_close(zh);
  zkrc_lock_free(lk);
  zkrc_session_close(s);
  g_free(deep);
  g_free(path);
}

static void test_participants_are_listed_in_queue_order(void) {
  char *path = zkt_path("ids");
  zkrc_session *s1 = zkt_session(), *s2 = zkt_session();
  zkrc_lock_options o;
  zkrc_lock_options_init(&o);
  o.participant_id = "first";
  zkrc_lock *a = NULL, *b = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_new(&a, s1, path, &o), ZKRC_OK);
  b = new_lock(s2, path); /* default id: hostname:pid */
  char **ids = NULL;
  size_t n = 99;
  CU_ASSERT_EQUAL(zkrc_lock_participants(a, &ids, &n, 5000), ZKRC_OK);
  CU_ASSERT_EQUAL(n, 0); /* no directory yet: nobody */
  zkrc_strv_free(ids);
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_acquire(a, 5000), ZKRC_OK);
  blocked bl = {b, 0};
  GThread *t = g_thread_new("b", acquire_then_release, &bl);
  zhandle_t *zh = zkt_raw();
  CU_ASSERT_FATAL(zkt_wait_children(zh, path, 2, 5000));
  /* Someone else's non-contender child is ignored. */
  char *junk = g_strdup_printf("%s/readme", path);
  CU_ASSERT_EQUAL(
      zoo_create(zh, junk, "x", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
  CU_ASSERT_EQUAL(zkrc_lock_participants(b, &ids, &n, 5000), ZKRC_OK);
  CU_ASSERT_EQUAL_FATAL(n, 2);
  CU_ASSERT_STRING_EQUAL(ids[0], "first");
  char host[256];
  gethostname(host, sizeof host);
  char *expected = g_strdup_printf("%s:%d", host, (int)getpid());
  CU_ASSERT_STRING_EQUAL(ids[1], expected);
  CU_ASSERT_PTR_NULL(ids[2]);
  zkrc_strv_free(ids);
  /* ZKRC_NO_WAIT looks once: its answer is awaited (a round trip); any
   * other negative timeout is refused. */
  CU_ASSERT_EQUAL(zkrc_lock_participants(b, &ids, &n, ZKRC_NO_WAIT), ZKRC_OK);
  CU_ASSERT_EQUAL(n, 2);
  zkrc_strv_free(ids);
  CU_ASSERT_EQUAL(zkrc_lock_participants(b, &ids, &n, -2), ZKRC_EINVAL);
  /* The same through zkrc_lock_list, with node names, no lock object. */
  zkrc_participant *list = NULL;
  size_t count = 0;
  char *held = NULL;
  CU_ASSERT_EQUAL(zkrc_lock_node(a, &held), ZKRC_OK);
  CU_ASSERT_EQUAL(zkrc_lock_list(s2, path, &list, &count, 5000), ZKRC_OK);
  CU_ASSERT_EQUAL_FATAL(count, 2);
  CU_ASSERT_STRING_EQUAL(list[0].id, "first");
  CU_ASSERT_EQUAL(zkrc_participant_id_len(&list[0]), 5);
  CU_ASSERT_EQUAL(zkrc_participant_id_len(NULL), 0);
  CU_ASSERT(held && g_str_has_suffix(held, list[0].node));
  CU_ASSERT_STRING_EQUAL(list[1].id, expected);
  zkrc_participants_free(list, count);
  free(held);
  CU_ASSERT_EQUAL(zkrc_lock_list(s2, path, &list, &count, ZKRC_NO_WAIT),
                  ZKRC_OK);
  CU_ASSERT_EQUAL(count, 2);
  zkrc_participants_free(list, count);
  CU_ASSERT_EQUAL(zkrc_lock_list(s2, path, &list, &count, -2), ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_lock_list(s2, "bad path", &list, &count, 5000),
                  ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_lock_release(a), ZKRC_OK);
  g_thread_join(t);
  CU_ASSERT_EQUAL(bl.rc, ZKRC_OK); /* the junk child did not get in the way */
  zoo_delete(zh, junk, -1);
  zookeeper_close(zh);
  zkrc_lock_free(a);
  zkrc_lock_free(b);
  zkrc_session_close(s1);
  zkrc_session_close(s2);
  g_free(expected);
  g_free(junk);
  g_free(path);
}

/* ------------------------------------------------------------ bad input */

/* zkrc_lock_free() from the lock's own completion (issue 31): it does not
 * wait for the callback it is called from, and the node goes in the
 * background. */
static void free_in_completion(zkrc_lock *lk, zkrc_lock_hold *h,
                               const zkrc_lock_acquired_info *info, void *arg) {
  (void)h;
  g_atomic_int_set((gint *)arg, info->status == ZKRC_OK ? 1 : 2);
  zkrc_lock_free(lk);
  g_atomic_int_inc((gint *)arg); /* 2: freed, and back */
}

static int freed_in_completion(void *arg) {
  return g_atomic_int_get((gint *)arg) >= 2;
}

static void test_free_from_its_own_completion(void) {
  char *path = zkt_path("free-in-completion");
  zkrc_session *s = zkt_session();
  zkrc_lock *lk = new_lock(s, path);
  gint state = 0;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire_async(lk, 5000, free_in_completion,
                                                 &state, NULL));
  CU_ASSERT(zkt_wait_for(freed_in_completion, &state, 10000));
  CU_ASSERT_EQUAL(g_atomic_int_get(&state), 2); /* granted, freed */
  zhandle_t *zh = zkt_raw();
  CU_ASSERT(zkt_wait_children_or_gone(zh, path, 0, 10000));
  zookeeper_close(zh);
  zkrc_session_close(s);
  g_free(path);
}

static void test_free_while_another_thread_waits(void) {
  char *path = zkt_path("free-waiting");
  zkrc_session *s = zkt_session();
  zkrc_lock *lk = new_lock(s, path);
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_acquire(lk, 5000), ZKRC_OK);
  blocked b = {lk, 0};
  GThread *t = g_thread_new("waiting", blocked_acquire, &b);
  zhandle_t *zh = zkt_raw();
  CU_ASSERT_FATAL(zkt_wait_children(zh, path, 2, 5000));
  zkrc_lock_free(lk); /* the waiter is told; what we held is released */
  g_thread_join(t);
  ZKT_ASSERT_RC(ZKRC_ECANCELED, b.rc);
  /* The deletes go on in the background: free does not wait for them. */
  CU_ASSERT(zkt_wait_children_or_gone(zh, path, 0, 10000));
  zookeeper_close(zh);
  zkrc_session_close(s);
  g_free(path);
}

/* Issue 30: a participant id too large for a contender's create is
 * ZKRC_ETOOBIG from zkrc_lock_new(), nothing sent; a fenced multi (our
 * node's check and a setData) one byte over the limit is ZKRC_ETOOBIG,
 * nothing sent, the lock still held and no connection dropped; at the
 * limit it is written and reads back whole. */
static void test_size_limit(void) {
  char *path = zkt_path("lock-size");
  char *target = g_strdup_printf("%s-data", path);
  zkrc_session *s = zkt_session();
  zhandle_t *zh = zkt_raw();
  CU_ASSERT_EQUAL(
      zoo_create(zh, target, "x", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
  char *data = zkt_pattern(1024 * 1024);
  uint64_t sent = zkt_requests_but_renewals(s), lost = zkt_suspensions(s);
  zkrc_lock_options o;
  zkrc_lock_options_init(&o);
  o.participant_id = data;
  zkrc_lock *lk = (zkrc_lock *)1;
  ZKT_ASSERT_RC(ZKRC_ETOOBIG, zkrc_lock_new(&lk, s, path, &o));
  CU_ASSERT_PTR_NULL(lk);
  CU_ASSERT_EQUAL(zkt_requests_but_renewals(s), sent);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_new(&lk, s, path, NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lk, 5000));
  char *node = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_node(lk, &node));
  /* header 8; a MultiHeader (9) before each op and at the end; the check:
   * path and version; the setData: path, data's length, version */
  size_t max = ZKT_PACKET_MAX - 8 - 3 * 9 - (4 + strlen(node) + 4) -
               (4 + strlen(target) + 4 + 4);
  CU_ASSERT_TRUE(max < ZKT_DATA_MAX);
  zoo_op_t set;
  zoo_set_op_init(&set, target, data, (int)max + 1, -1, NULL);
  sent = zkt_requests_but_renewals(s);
  ZKT_ASSERT_RC(ZKRC_ETOOBIG, zkrc_lock_fenced_multi(lk, 1, &set, NULL, 5000));
  CU_ASSERT_EQUAL(zkt_requests_but_renewals(s), sent);
  CU_ASSERT_TRUE(zkt_data_is(zh, target, "x", 1));
  zoo_set_op_init(&set, target, data, (int)max, -1, NULL);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_fenced_multi(lk, 1, &set, NULL, 5000));
  CU_ASSERT_TRUE(zkt_data_is(zh, target, data, max));
  CU_ASSERT_TRUE(zkrc_lock_is_held(lk));
  CU_ASSERT_EQUAL(zkt_suspensions(s), lost);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(lk));
  zkrc_lock_free(lk);
  free(node);
  zookeeper_close(zh);
  zkrc_session_close(s);
  g_free(data);
  g_free(target);
  g_free(path);
}

static void add_suites(void) {
  ZKT_SUITE(
      "lock",
      {"eight processes never overlap", test_eight_processes_never_overlap},
      {"one release wakes one waiter", test_one_release_wakes_one_waiter},
      {"two hundred threads on one object wake one each",
       test_two_hundred_threads_on_one_object_wake_one_each},
      {"threads take over in turn without listing",
       test_threads_take_over_in_turn_without_listing},
      {"threads join behind each other without listing",
       test_threads_join_behind_each_other_without_listing},
      {"a joiner lists when another node came between",
       test_joiner_lists_when_another_node_came_between},
      {"a joiner after a hand-over joins without listing",
       test_joiner_after_a_handover_joins_without_listing},
      {"waiter behind a middle departure keeps waiting",
       test_waiter_behind_a_middle_departure_keeps_waiting},
      {"reentrancy is per thread", test_reentrancy_is_per_thread},
      {"release by another thread is refused",
       test_release_by_another_thread_is_refused},
      {"timeout and try leave no node", test_timeout_and_try_leave_no_node},
      {"tokens increase across holders and re-creation",
       test_tokens_increase_across_holders_and_recreation},
      {"killed holder's successor gets it within the timeout",
       test_killed_holders_successor_gets_it_within_the_timeout},
      {"expired holder is told and cannot write",
       test_expired_holder_is_told_and_cannot_write},
      {"deleted node makes the holder lose",
       test_deleted_node_makes_the_holder_lose},
      {"waiter returns an error on expiry",
       test_waiter_returns_an_error_on_expiry},
      {"directory is a container removed when empty",
       test_directory_is_a_container_removed_when_empty},
      {"participants are listed in queue order",
       test_participants_are_listed_in_queue_order},
      {"free while another thread waits", test_free_while_another_thread_waits},
      {"free from its own completion", test_free_from_its_own_completion},
      {"size limit, envelope included", test_size_limit});
}

int main(void) { return zkt_run("test_lock", add_suites); }
