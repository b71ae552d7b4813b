/*
 * Embedding in daemons (issue 8): non-blocking lock holds, executors and
 * elections on an event loop, against a real single-member ensemble.
 *
 * Most tests run a GMainContext of their own on the test's thread: the
 * sessions under test use the GLib executor on it, and the test iterates it
 * until what it waits for has happened (loop_run_until, bounded).  Every
 * callback checks that it runs on the thread expected to run it; a callback
 * on another thread only counts a mistake (CUnit's asserts are not
 * thread-safe), and each test asserts the count is zero.
 *
 * A second session with the default executor plays the "other client"
 * where one is needed (zkrc_lock_acquire from the test's thread), and a raw
 * ZooKeeper handle checks the servers' view: which nodes exist, whose node
 * is first.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <glib.h>

#include "holds.h"
#include "glib_loop.h"
#include "testutil.h"
#include "zkrecipes/executor.h"
#include "zkrecipes/glib.h"

/* Upper time bounds stretch under valgrind; lower bounds never do. */
static int slow(int ms) { return getenv("ZKR_UNDER_VALGRIND") ? ms * 4 : ms; }

/* ============================================================ threads */

static GThread *expected_thread; /* who must run the callbacks now */
static gint wrong_thread;        /* callbacks that ran anywhere else */

static void expect_thread(GThread *t) {
  expected_thread = t;
  g_atomic_int_set(&wrong_thread, 0);
}

static void check_thread(void) {
  if (g_thread_self() != expected_thread)
    g_atomic_int_inc(&wrong_thread);
}

/* ========================================================== the loop */

/* The loop (glib_loop.h), whose thread must run every callback. */
static void loop_init(loop *lp) {
  loop_open(lp);
  expect_thread(g_thread_self());
}

static zkrc_session *loop_session(loop *lp) { return loop_session_on(&lp->ex); }

static zkrc_lock *new_lock(zkrc_session *s, const char *path,
                           zkrc_lock_event_fn on_event, void *arg) {
  zkrc_lock_options o;
  zkrc_lock_options_init(&o);
  o.on_event = on_event;
  o.event_arg = arg;
  zkrc_lock *lk = NULL;
  int rc = zkrc_lock_new(&lk, s, path, &o);
  ZKT_ASSERT_RC(ZKRC_OK, rc);
  if (rc != ZKRC_OK)
    CU_FAIL_FATAL("zkrc_lock_new failed");
  return lk;
}

/* ================================================== recorded outcomes */

/* One non-blocking acquisition: what its completion and events said. */
typedef struct slot {
  int index;
  zkrc_lock_hold *hold; /* as returned by zkrc_lock_acquire_async */
  int calls;            /* completions */
  int status;
  int64_t token;
  int64_t called_ms;
  gboolean wrong_hold; /* the completion named another hold */
  int lost;            /* ZKRC_LOCK_LOST events about this hold */
  int lost_reason;
  int suspended, reconnected;
  int after_lost; /* events that came after LOST */
} slot;

static int completions; /* of the current test, on the loop thread */
static int lock_events;

static void on_done(zkrc_lock *lk, zkrc_lock_hold *hold,
                    const zkrc_lock_acquired_info *info, void *arg) {
  int status = info->status;
  int64_t token = info->token;
  check_thread();
  slot *sl = arg;
  sl->calls++;
  sl->status = status;
  sl->token = token;
  sl->called_ms = zkt_now_ms();
  sl->wrong_hold |= sl->hold != NULL && hold != sl->hold;
  completions++;
}

/* Lock events of a lock whose event_arg is an array of slots (n_slots). */
typedef struct slots {
  slot *v;
  int n;
} slots;

static void on_lock_event(zkrc_lock *lk, const zkrc_lock_event *info,
                          void *arg) {
  check_thread();
  slots *ss = arg;
  lock_events++;
  for (int i = 0; i < ss->n; i++) {
    if (ss->v[i].hold == info->hold && info->hold != NULL) {
      slot *sl = &ss->v[i];
      sl->after_lost += sl->lost > 0;
      if (info->type == ZKRC_LOCK_LOST) {
        sl->lost++;
        sl->lost_reason = info->reason;
      } else if (info->type == ZKRC_LOCK_SUSPENDED) {
        sl->suspended++;
      } else {
        sl->reconnected++;
      }
      return;
    }
  }
  fprintf(stderr, "\nlock event %s about an unknown hold %p\n",
          zkrc_lock_event_name(info->type), (void *)info->hold);
  CU_FAIL("a lock event named a hold we do not know");
}

static void reset_counts(void) {
  completions = 0;
  lock_events = 0;
}

static int completions_reach(void *arg) { return completions >= *(int *)arg; }

/* Run the loop until @p n completions in all, at most @p timeout_ms. */
static int run_until_completions(loop *lp, int n, int timeout_ms) {
  return loop_run_until(lp, completions_reach, &n, timeout_ms);
}

static int slot_called(void *arg) { return ((slot *)arg)->calls > 0; }

/* ==================================================== server's view */

/* The czxid of the contender at the front of @p dir (lowest sequence), or
 * 0 when there is none. */
static int64_t front_czxid(zhandle_t *zh, const char *dir) {
  struct String_vector v = {0, NULL};
  if (zoo_get_children(zh, dir, 0, &v) != ZOK)
    return 0;
  const char *first = NULL;
  long first_seq = 0;
  for (int i = 0; i < v.count; i++) {
    const char *dash = strrchr(v.data[i], '-');
    long seq = dash ? strtol(dash + 1, NULL, 10) : 0;
    if (first == NULL || seq < first_seq) {
      first = v.data[i];
      first_seq = seq;
    }
  }
  int64_t czxid = 0;
  if (first) {
    char *node = g_strdup_printf("%s/%s", dir, first);
    czxid = zkt_czxid(zh, node);
    g_free(node);
  }
  deallocate_String_vector(&v);
  return czxid;
}

/* ====================================================== bad input */

static void test_bad_input_gets_clear_errors(void) {
  loop lp;
  loop_init(&lp);
  reset_counts();
  zkrc_session *s = loop_session(&lp);
  char *path = zkt_path("async-bad");
  zkrc_lock *lk = new_lock(s, path, NULL, NULL);
  slot sl = {0};
  zkrc_lock_hold *h = (zkrc_lock_hold *)&sl; /* must be cleared on error */

  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkrc_lock_acquire_async(NULL, 100, on_done, &sl, &h));
  CU_ASSERT_PTR_NULL(h);
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_lock_acquire_async(lk, 100, NULL, &sl, &h));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_lock_acquire_async(lk, -5, on_done, &sl, &h));
  CU_ASSERT_PTR_NULL(h);
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_lock_hold_cancel(NULL));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_lock_hold_release(NULL));
  CU_ASSERT_EQUAL(zkrc_lock_hold_is_held(NULL), 0);
  int64_t tok = 7;
  char *node = NULL;
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_lock_hold_token(NULL, &tok));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_lock_hold_node(NULL, &node));
  CU_ASSERT_EQUAL(tok, 7);
  CU_ASSERT_PTR_NULL(node);

  /* Releasing a hold that is still waiting is refused and changes nothing:
   * it still completes (here: acquires, nobody else holds). */
  zhandle_t *zh = zkt_raw();
  zkrc_session *other = zkt_session();
  zkrc_lock *olk = new_lock(other, path, NULL, NULL);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(olk, 10000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire_async(lk, ZKRC_WAIT_FOREVER, on_done,
                                                 &sl, &sl.hold));
  CU_ASSERT_FATAL(sl.hold != NULL);
  CU_ASSERT(zkt_wait_children_or_gone(zh, path, 2, slow(10000)));
  ZKT_ASSERT_RC(ZKRC_ESTATE, zkrc_lock_hold_release(sl.hold));
  CU_ASSERT_EQUAL(zkrc_lock_hold_is_held(sl.hold), 0);
  ZKT_ASSERT_RC(ZKRC_ESTATE, zkrc_lock_hold_token(sl.hold, &tok));
  ZKT_ASSERT_RC(ZKRC_ESTATE, zkrc_lock_hold_node(sl.hold, &node));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_lock_hold_token(sl.hold, NULL));
  CU_ASSERT_EQUAL(tok, 7);
  CU_ASSERT_PTR_NULL(node);
  CU_ASSERT_EQUAL(zkt_children_now(zh, path), 2);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(olk));
  CU_ASSERT(loop_run_until(&lp, slot_called, &sl, slow(10000)));
  ZKT_ASSERT_RC(ZKRC_OK, sl.status);
  CU_ASSERT_EQUAL(zkrc_lock_hold_is_held(sl.hold), 1);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_hold_release(sl.hold));
  CU_ASSERT(zkt_wait_children_or_gone(zh, path, 0, slow(5000)));

  /* A closed session refuses, and no callback comes. */
  zkrc_lock_free(olk);
  zkrc_session_close(other);
  zkrc_session_close(s);
  slot late = {0};
  ZKT_ASSERT_RC(ZKRC_ECLOSED,
                zkrc_lock_acquire_async(lk, 100, on_done, &late, NULL));
  zkrc_lock_free(lk);
  loop_clear(&lp);
  CU_ASSERT_EQUAL(late.calls, 0);
  CU_ASSERT_EQUAL(sl.calls, 1);
  CU_ASSERT_EQUAL(g_atomic_int_get(&wrong_thread), 0);
  zookeeper_close(zh);
  g_free(path);
}

/* ======================================================= many locks */

#define MANY 100

static void test_hundred_locks_from_one_loop(void) {
  loop lp;
  loop_init(&lp);
  reset_counts();
  zkrc_session *s = loop_session(&lp);
  char *base = zkt_path("async-many");
  zkrc_lock *locks[MANY];
  char *paths[MANY];
  slot sl[MANY];
  memset(sl, 0, sizeof sl);
  for (int i = 0; i < MANY; i++) {
    paths[i] = g_strdup_printf("%s/lock-%03d", base, i);
    locks[i] = new_lock(s, paths[i], NULL, NULL);
  }

  int64_t t0 = zkt_now_ms();
  for (int i = 0; i < MANY; i++) {
    sl[i].index = i;
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire_async(locks[i], 30000, on_done,
                                                   &sl[i], &sl[i].hold));
  }
  int64_t issued = zkt_now_ms() - t0;
  CU_ASSERT(run_until_completions(&lp, MANY, slow(60000)));
  int64_t took = zkt_now_ms() - t0;
  printf("\n    %d locks: acquisitions issued in %" PRId64
         " ms, all acquired after %" PRId64 " ms ",
         MANY, issued, took);

  zhandle_t *zh = zkt_raw();
  GHashTable *tokens = g_hash_table_new(g_int64_hash, g_int64_equal);
  int ok = 0, single = 0;
  int64_t tok = 0;
  for (int i = 0; i < MANY; i++) {
    ok += sl[i].calls == 1 && sl[i].status == ZKRC_OK && sl[i].token > 0 &&
          !sl[i].wrong_hold && zkrc_lock_hold_is_held(sl[i].hold) &&
          zkrc_lock_hold_token(sl[i].hold, &tok) == ZKRC_OK &&
          tok == sl[i].token;
    /* The servers agree: our node is the lock's only one, with our token. */
    single += zkt_child_count(zh, paths[i]) == 1 &&
              front_czxid(zh, paths[i]) == sl[i].token;
    g_hash_table_add(tokens, &sl[i].token);
  }
  CU_ASSERT_EQUAL(ok, MANY);
  CU_ASSERT_EQUAL(single, MANY);
  CU_ASSERT_EQUAL(g_hash_table_size(tokens), MANY); /* one zxid each */
  g_hash_table_destroy(tokens);

  for (int i = 0; i < MANY; i++)
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_hold_release(sl[i].hold));
  int gone = 0;
  for (int i = 0; i < MANY; i++)
    gone += zkt_wait_children_or_gone(zh, paths[i], 0, slow(10000));
  CU_ASSERT_EQUAL(gone, MANY);

  loop_run_for(&lp, 100); /* nothing more may come */
  CU_ASSERT_EQUAL(completions, MANY);
  for (int i = 0; i < MANY; i++) {
    zkrc_lock_free(locks[i]);
    g_free(paths[i]);
  }
  zkrc_session_close(s);
  loop_clear(&lp);
  CU_ASSERT_EQUAL(g_atomic_int_get(&wrong_thread), 0);
  zookeeper_close(zh);
  g_free(base);
}

/* ==================================================== one lock, queue */

#define QUEUED 20

typedef struct queue_run {
  zhandle_t *zh;
  const char *path;
  slot sl[QUEUED];
  int order[QUEUED]; /* indexes in completion order */
  int n;
  GArray *holds;   /* of zkt_hold: each turn, for the shared checker */
  int not_front;   /* completions whose node was not first on the servers */
  int wrong_count; /* completions that saw predecessors' nodes still there */
  int release_failed;
} queue_run;

static queue_run *qr; /* the current run, for its callbacks */

static void on_queue_turn(zkrc_lock *lk, zkrc_lock_hold *hold,
                          const zkrc_lock_acquired_info *info, void *arg) {
  int status = info->status;
  on_done(lk, hold, info, arg);
  slot *sl = arg;
  if (status != ZKRC_OK)
    return;
  int64_t granted = g_get_monotonic_time();
  /* The k-th to get the lock sees the k-1 before it gone and the rest
   * still queued, and its own node first. */
  qr->not_front += front_czxid(qr->zh, qr->path) != info->token;
  qr->wrong_count += zkt_child_count(qr->zh, qr->path) != QUEUED - qr->n;
  qr->order[qr->n++] = sl->index;
  qr->release_failed += zkrc_lock_hold_release(hold) != ZKRC_OK;
  /* The turn ends when release returns: a completion run from inside it
   * (a turn within a turn) is an overlap. */
  zkt_hold_add(qr->holds, sl->index, info->token, granted,
               g_get_monotonic_time());
}

/* Create @p path (persistent) and its parent "/zkt" if needed.  "/zkt" is
 * a container the recipes created: the servers may remove it whenever it
 * is empty, so try again if it went away in between. */
static int create_with_parent(zhandle_t *zh, const char *path) {
  int rc = ZNONODE;
  for (int attempt = 0; attempt < 5 && rc == ZNONODE; attempt++) {
    zoo_create(zh, "/zkt", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    rc = zoo_create(zh, path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
  }
  return rc;
}

static void test_queue_on_one_lock_completes_in_order(void) {
  loop lp;
  loop_init(&lp);
  reset_counts();
  zkrc_session *s = loop_session(&lp);
  char *path = zkt_path("async-queue");
  zkrc_lock *lk = new_lock(s, path, NULL, NULL);
  queue_run run;
  memset(&run, 0, sizeof run);
  run.zh = zkt_raw();
  run.path = path;
  run.holds = g_array_new(FALSE, TRUE, sizeof(zkt_hold));
  qr = &run;
  /* The lock's directory exists beforehand: on a path that does not exist
   * yet, the creates that raced the directory's creation are retried and
   * may land behind later ones, so the queue order (the order of the
   * nodes, which the tokens show) would not be the order of the calls. */
  CU_ASSERT_EQUAL_FATAL(create_with_parent(run.zh, path), ZOK);

  int64_t t0 = zkt_now_ms();
  for (int i = 0; i < QUEUED; i++) {
    run.sl[i].index = i;
    ZKT_ASSERT_RC(ZKRC_OK,
                  zkrc_lock_acquire_async(lk, ZKRC_WAIT_FOREVER, on_queue_turn,
                                          &run.sl[i], &run.sl[i].hold));
  }
  /* Every node is created before the loop runs any completion (the
   * completions come only from this thread's iterations), so the k-th
   * holder must see exactly QUEUED - k nodes. */
  CU_ASSERT_FATAL(zkt_wait_children_or_gone(run.zh, path, QUEUED, slow(10000)));
  CU_ASSERT_EQUAL(completions, 0);
  CU_ASSERT(run_until_completions(&lp, QUEUED, slow(60000)));
  printf("\n    %d holds took turns in %" PRId64 " ms ", QUEUED,
         zkt_now_ms() - t0);
  CU_ASSERT_EQUAL(run.n, QUEUED);
  CU_ASSERT_EQUAL(run.not_front, 0);
  CU_ASSERT_EQUAL(run.wrong_count, 0);
  CU_ASSERT_EQUAL(run.release_failed, 0);
  /* One turn at a time, tokens rising from turn to turn (holds.h). */
  zkt_checker c;
  zkt_checker_init(&c, NULL, NULL);
  c.tokens_in_grant_order = TRUE;
  CU_ASSERT_EQUAL(zkt_check_hold_array(&c, run.holds), 0);
  zkt_checker_clear(&c);
  CU_ASSERT_EQUAL(run.holds->len, QUEUED);
  g_array_free(run.holds, TRUE);
  /* Turns in queue order, which here is the order of the calls. */
  int in_order = 0, once = 0;
  for (int i = 0; i < run.n; i++) {
    in_order += run.order[i] == i;
    once += run.sl[i].calls == 1 && run.sl[i].status == ZKRC_OK;
  }
  CU_ASSERT_EQUAL(in_order, QUEUED);
  CU_ASSERT_EQUAL(once, QUEUED);
  CU_ASSERT(zkt_wait_children_or_gone(run.zh, path, 0, slow(5000)));
  CU_ASSERT_EQUAL(zoo_delete(run.zh, path, -1), ZOK);

  zkrc_lock_free(lk);
  zkrc_session_close(s);
  loop_clear(&lp);
  CU_ASSERT_EQUAL(completions, QUEUED);
  CU_ASSERT_EQUAL(g_atomic_int_get(&wrong_thread), 0);
  zookeeper_close(run.zh);
  qr = NULL;
  g_free(path);
}

/* ============================================================ cancel */

/* A completion that checks the servers' view when it runs: the node of a
 * failed acquisition must be gone by then. */
static zhandle_t *check_zh;
static const char *check_path;
static int children_at_completion;

static void on_done_count_children(zkrc_lock *lk, zkrc_lock_hold *hold,
                                   const zkrc_lock_acquired_info *info,
                                   void *arg) {
  on_done(lk, hold, info, arg);
  children_at_completion = zkt_children_now(check_zh, check_path);
}

static int hold_is_held(void *arg) {
  return zkrc_lock_hold_is_held(((slot *)arg)->hold);
}

static void test_cancel(void) {
  loop lp;
  loop_init(&lp);
  reset_counts();
  zkrc_session *s = loop_session(&lp);
  char *path = zkt_path("async-cancel");
  zkrc_lock *lk = new_lock(s, path, NULL, NULL);
  zhandle_t *zh = zkt_raw();
  check_zh = zh;
  check_path = path;
  zkrc_session *other = zkt_session();
  zkrc_lock *olk = new_lock(other, path, NULL, NULL);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(olk, 10000));

  /* 1. Cancel while waiting: ECANCELED once, after our node is gone. */
  slot w = {0};
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_lock_acquire_async(lk, ZKRC_WAIT_FOREVER,
                                        on_done_count_children, &w, &w.hold));
  CU_ASSERT(zkt_wait_children_or_gone(zh, path, 2, slow(10000)));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_hold_cancel(w.hold));
  CU_ASSERT(loop_run_until(&lp, slot_called, &w, slow(5000)));
  ZKT_ASSERT_RC(ZKRC_ECANCELED, w.status);
  CU_ASSERT_EQUAL(w.token, 0);
  CU_ASSERT_EQUAL(children_at_completion, 1); /* only the other's node */
  loop_run_for(&lp, 300);
  CU_ASSERT_EQUAL(w.calls, 1);
  CU_ASSERT_EQUAL(zkt_children_now(zh, path), 1);

  /* 2. Cancel after acquisition (delivered): ESTATE, nothing changes. */
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(olk));
  slot a = {0};
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_lock_acquire_async(lk, 10000, on_done, &a, &a.hold));
  CU_ASSERT(loop_run_until(&lp, slot_called, &a, slow(10000)));
  ZKT_ASSERT_RC(ZKRC_OK, a.status);
  ZKT_ASSERT_RC(ZKRC_ESTATE, zkrc_lock_hold_cancel(a.hold));
  CU_ASSERT_EQUAL(zkrc_lock_hold_is_held(a.hold), 1);
  int64_t tok = 0;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_hold_token(a.hold, &tok));
  CU_ASSERT_EQUAL(tok, a.token);
  CU_ASSERT_EQUAL(front_czxid(zh, path), a.token);
  CU_ASSERT_EQUAL(zkt_children_now(zh, path), 1);
  loop_run_for(&lp, 200);
  CU_ASSERT_EQUAL(a.calls, 1);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_hold_release(a.hold));
  CU_ASSERT(zkt_wait_children_or_gone(zh, path, 0, slow(5000)));

  /* 3. Cancel once acquired but before the completion was delivered (the
   * loop is not iterated meanwhile): ESTATE, and the completion comes with
   * the lock, as it would have. */
  slot b = {0};
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_lock_acquire_async(lk, 10000, on_done, &b, &b.hold));
  CU_ASSERT_FATAL(zkt_wait_for(hold_is_held, &b, slow(10000)));
  CU_ASSERT_EQUAL(b.calls, 0);
  ZKT_ASSERT_RC(ZKRC_ESTATE, zkrc_lock_hold_cancel(b.hold));
  CU_ASSERT(loop_run_until(&lp, slot_called, &b, slow(5000)));
  ZKT_ASSERT_RC(ZKRC_OK, b.status);
  CU_ASSERT(b.token > a.token);
  CU_ASSERT_EQUAL(front_czxid(zh, path), b.token);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_hold_release(b.hold));
  CU_ASSERT(zkt_wait_children_or_gone(zh, path, 0, slow(5000)));
  loop_run_for(&lp, 200);
  CU_ASSERT_EQUAL(b.calls, 1);
  CU_ASSERT_EQUAL(completions, 3);

  zkrc_lock_free(olk);
  zkrc_session_close(other);
  zkrc_lock_free(lk);
  zkrc_session_close(s);
  loop_clear(&lp);
  CU_ASSERT_EQUAL(g_atomic_int_get(&wrong_thread), 0);
  zookeeper_close(zh);
  g_free(path);
}

/* ========================================================== timeouts */

static void test_timeout_and_try(void) {
  loop lp;
  loop_init(&lp);
  reset_counts();
  zkrc_session *s = loop_session(&lp);
  char *path = zkt_path("async-timeout");
  zkrc_lock *lk = new_lock(s, path, NULL, NULL);
  zhandle_t *zh = zkt_raw();
  check_zh = zh;
  check_path = path;
  zkrc_session *other = zkt_session();
  zkrc_lock *olk = new_lock(other, path, NULL, NULL);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(olk, 10000));

  /* 300 ms while another holds: ETIMEDOUT on time, node gone by then. */
  slot t = {0};
  int64_t t0 = zkt_now_ms();
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire_async(
                             lk, 300, on_done_count_children, &t, &t.hold));
  CU_ASSERT(loop_run_until(&lp, slot_called, &t, slow(5000)));
  int64_t waited = t.called_ms - t0;
  printf("\n    300 ms timeout: completion after %" PRId64 " ms", waited);
  ZKT_ASSERT_RC(ZKRC_ETIMEDOUT, t.status);
  CU_ASSERT(waited >= 300);
  CU_ASSERT(waited <= slow(1000));
  CU_ASSERT_EQUAL(children_at_completion, 1);

  /* ZKRC_NO_WAIT while another holds: ELOCKED promptly, node gone. */
  slot n = {0};
  t0 = zkt_now_ms();
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_lock_acquire_async(lk, ZKRC_NO_WAIT,
                                        on_done_count_children, &n, &n.hold));
  CU_ASSERT(loop_run_until(&lp, slot_called, &n, slow(5000)));
  waited = n.called_ms - t0;
  printf(", try: ELOCKED after %" PRId64 " ms ", waited);
  ZKT_ASSERT_RC(ZKRC_ELOCKED, n.status);
  CU_ASSERT(waited <= slow(1000));
  CU_ASSERT_EQUAL(children_at_completion, 1);

  /* ZKRC_NO_WAIT on a free lock acquires it. */
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(olk));
  slot f = {0};
  ZKT_ASSERT_RC(
      ZKRC_OK, zkrc_lock_acquire_async(lk, ZKRC_NO_WAIT, on_done, &f, &f.hold));
  CU_ASSERT(loop_run_until(&lp, slot_called, &f, slow(5000)));
  ZKT_ASSERT_RC(ZKRC_OK, f.status);
  CU_ASSERT_EQUAL(front_czxid(zh, path), f.token);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_hold_release(f.hold));
  CU_ASSERT(zkt_wait_children_or_gone(zh, path, 0, slow(5000)));

  /* A timer that would have fired later must not fire after an acquired
   * hold was released: nothing more comes. */
  loop_run_for(&lp, 400);
  CU_ASSERT_EQUAL(t.calls + n.calls + f.calls, 3);
  CU_ASSERT_EQUAL(completions, 3);

  zkrc_lock_free(olk);
  zkrc_session_close(other);
  zkrc_lock_free(lk);
  zkrc_session_close(s);
  loop_clear(&lp);
  CU_ASSERT_EQUAL(g_atomic_int_get(&wrong_thread), 0);
  zookeeper_close(zh);
  g_free(path);
}

/* A session keeps its acquisitions' deadlines in one heap with one timer
 * (session_deadline.c): each still fires on its own time, in the order of
 * the deadlines (not of the calls), and one disarmed by its acquisition's
 * success disturbs none.  Four waiting acquisitions of one session behind
 * another session's holder: deadlines 900, 300 and 600 ms, and 30 s (that
 * one gets the lock once the holder lets go). */
static void test_deadlines_of_one_session_fire_in_their_order(void) {
  loop lp;
  loop_init(&lp);
  reset_counts();
  zkrc_session *s = loop_session(&lp);
  char *path = zkt_path("async-deadlines");
  zkrc_lock *lk = new_lock(s, path, NULL, NULL);
  zkrc_session *other = zkt_session();
  zkrc_lock *olk = new_lock(other, path, NULL, NULL);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(olk, 10000));

  static const int ms[3] = {900, 300, 600};
  slot t[3] = {{0}}, w = {0};
  int64_t t0 = zkt_now_ms();
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_lock_acquire_async(lk, 30000, on_done, &w, &w.hold));
  for (int i = 0; i < 3; i++)
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire_async(lk, ms[i], on_done, &t[i],
                                                   &t[i].hold));
  for (int i = 0; i < 3; i++)
    CU_ASSERT(loop_run_until(&lp, slot_called, &t[i], slow(5000)));
  printf("\n    deadlines 900/300/600 ms: completions after");
  for (int i = 0; i < 3; i++) {
    int64_t waited = t[i].called_ms - t0;
    printf(" %" PRId64, waited);
    ZKT_ASSERT_RC(ZKRC_ETIMEDOUT, t[i].status);
    CU_ASSERT(waited >= ms[i]);
    CU_ASSERT(waited <= ms[i] + slow(1000));
  }
  printf(" ms ");
  CU_ASSERT(t[1].called_ms <= t[2].called_ms);
  CU_ASSERT(t[2].called_ms <= t[0].called_ms);
  CU_ASSERT_EQUAL(w.calls, 0);

  /* The 30 s one still waits, and gets the lock when it is let go. */
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(olk));
  CU_ASSERT(loop_run_until(&lp, slot_called, &w, slow(5000)));
  ZKT_ASSERT_RC(ZKRC_OK, w.status);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_hold_release(w.hold));
  /* Its disarmed deadline never fires: nothing more comes. */
  loop_run_for(&lp, 400);
  CU_ASSERT_EQUAL(completions, 4);

  zkrc_lock_free(olk);
  zkrc_session_close(other);
  zkrc_lock_free(lk);
  zkrc_session_close(s);
  loop_clear(&lp);
  CU_ASSERT_EQUAL(g_atomic_int_get(&wrong_thread), 0);
  g_free(path);
}

/* ============================================================ expiry */

#define EXPIRING 10

typedef struct session_rec {
  int events[ZKRC_SESSION_EVENT_CLOSED + 1];
} session_rec;

static void on_session_event(zkrc_session *s, const zkrc_session_event *ev_,
                             void *arg) {
  zkrc_session_event_type ev = ev_->type;
  check_thread();
  ((session_rec *)arg)->events[ev]++;
}

typedef struct expiry_run {
  slot held[EXPIRING], pending[EXPIRING];
  session_rec sr;
} expiry_run;

static int expiry_told(void *arg) {
  expiry_run *r = arg;
  int lost = 0, failed = 0;
  for (int i = 0; i < EXPIRING; i++) {
    lost += r->held[i].lost > 0;
    failed += r->pending[i].calls > 0;
  }
  /* ... and the session is back with a new ZooKeeper session. */
  return lost == EXPIRING && failed == EXPIRING &&
         r->sr.events[ZKRC_SESSION_EVENT_CONNECTED] > 0;
}

static gboolean expiry_reason(int err) {
  return err == ZKRC_ESESSIONEXPIRED || err == ZKRC_ESESSIONLOST;
}

/* Why a held lock may be lost when the harness expires its session: the
 * harness takes the session over and closes it.  If our client got the
 * session back in between (RECONNECTED), the close deletes our node while
 * we are connected, and the node watch reports that first (ELOCKLOST)
 * before the expiry is noticed. */
static gboolean lost_reason_ok(int err) {
  return expiry_reason(err) || err == ZKRC_ELOCKLOST;
}

static void test_expiry_reaches_every_hold_once(void) {
  loop lp;
  loop_init(&lp);
  reset_counts();
  zkrc_session *s = loop_session(&lp);
  zkrc_session *other = zkt_session();
  zhandle_t *zh = zkt_raw();
  char *base = zkt_path("async-expiry");
  expiry_run run;
  memset(&run, 0, sizeof run);
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_session_add_listener(s, on_session_event, &run.sr, NULL));
  zkrc_lock *held[EXPIRING], *pending[EXPIRING], *theirs[EXPIRING];
  slots held_slots[EXPIRING], pending_slots[EXPIRING];
  char *held_path[EXPIRING], *pending_path[EXPIRING];

  /* Ten locks we hold, ten we wait for (the other session holds them). */
  for (int i = 0; i < EXPIRING; i++) {
    held_path[i] = g_strdup_printf("%s/held-%d", base, i);
    pending_path[i] = g_strdup_printf("%s/pending-%d", base, i);
    held_slots[i] = (slots){&run.held[i], 1};
    pending_slots[i] = (slots){&run.pending[i], 1};
    held[i] = new_lock(s, held_path[i], on_lock_event, &held_slots[i]);
    pending[i] = new_lock(s, pending_path[i], on_lock_event, &pending_slots[i]);
    theirs[i] = new_lock(other, pending_path[i], NULL, NULL);
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(theirs[i], 10000));
  }
  for (int i = 0; i < EXPIRING; i++)
    ZKT_ASSERT_RC(ZKRC_OK,
                  zkrc_lock_acquire_async(held[i], 30000, on_done, &run.held[i],
                                          &run.held[i].hold));
  CU_ASSERT_FATAL(run_until_completions(&lp, EXPIRING, slow(30000)));
  for (int i = 0; i < EXPIRING; i++)
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire_async(
                               pending[i], ZKRC_WAIT_FOREVER, on_done,
                               &run.pending[i], &run.pending[i].hold));
  int queued = 0;
  for (int i = 0; i < EXPIRING; i++)
    queued += zkt_wait_children_or_gone(zh, pending_path[i], 2, slow(10000));
  CU_ASSERT_EQUAL_FATAL(queued, EXPIRING);
  /* Count from here: the first session's CONNECTED may or may not have
   * reached the listener (added after zkrc_session_connect returned); it
   * ran before the completions above if it came (the executor keeps
   * order). */
  reset_counts();
  memset(&run.sr, 0, sizeof run.sr);

  int64_t t0 = zkt_now_ms();
  zkt_expire(s);
  CU_ASSERT(loop_run_until(&lp, expiry_told, &run, slow(30000)));
  printf("\n    expiry told to %d holds in %" PRId64 " ms ", 2 * EXPIRING,
         zkt_now_ms() - t0);
  loop_run_for(&lp, 500); /* nothing arrives twice */

  /* Taking the session over (that is how the harness expires it) drops
   * our connection first: a held lock may hear "suspended" (and
   * "reconnected", if the client got its session back for a moment)
   * before "lost", as the session's listener does (the listener also hears
   * those that come after the lock was lost); never anything after
   * "lost". */
  int lost_once = 0, failed_once = 0, quiet = 0, as_session = 0;
  int lock_conn = 0;
  int suspended = run.sr.events[ZKRC_SESSION_EVENT_SUSPENDED];
  int reconnected = run.sr.events[ZKRC_SESSION_EVENT_RECONNECTED];
  for (int i = 0; i < EXPIRING; i++) {
    slot *h = &run.held[i], *p = &run.pending[i];
    lost_once += h->lost == 1 && lost_reason_ok(h->lost_reason) &&
                 h->calls == 1 && zkrc_lock_hold_is_held(h->hold) == 0;
    failed_once += p->calls == 1 && expiry_reason(p->status) && p->token == 0 &&
                   !p->wrong_hold;
    quiet += h->after_lost == 0 && p->lost + p->suspended + p->reconnected == 0;
    as_session += h->suspended <= suspended && h->reconnected <= reconnected &&
                  h->reconnected <= h->suspended;
    lock_conn += h->suspended + h->reconnected;
  }
  printf("(connection dropped %d time(s) first) ", suspended);
  CU_ASSERT_EQUAL(lost_once, EXPIRING);
  CU_ASSERT_EQUAL(failed_once, EXPIRING);
  CU_ASSERT_EQUAL(quiet, EXPIRING);
  CU_ASSERT_EQUAL(as_session, EXPIRING);
  CU_ASSERT_EQUAL(completions, EXPIRING);
  CU_ASSERT_EQUAL(lock_events, EXPIRING + lock_conn);
  CU_ASSERT_EQUAL(run.sr.events[ZKRC_SESSION_EVENT_EXPIRED] +
                      run.sr.events[ZKRC_SESSION_EVENT_LOST],
                  1);
  CU_ASSERT_EQUAL(run.sr.events[ZKRC_SESSION_EVENT_CONNECTED], 1);

  /* The lost holds are released with ELOCKLOST; the servers kept only the
   * other session's nodes. */
  int gone = 0;
  for (int i = 0; i < EXPIRING; i++) {
    ZKT_ASSERT_RC(ZKRC_ELOCKLOST, zkrc_lock_hold_release(run.held[i].hold));
    gone += zkt_children_now(zh, held_path[i]) == 0 &&
            zkt_children_now(zh, pending_path[i]) == 1;
  }
  CU_ASSERT_EQUAL(gone, EXPIRING);

  for (int i = 0; i < EXPIRING; i++) {
    zkrc_lock_free(held[i]);
    zkrc_lock_free(pending[i]);
    zkrc_lock_free(theirs[i]);
    g_free(held_path[i]);
    g_free(pending_path[i]);
  }
  zkrc_session_close(other);
  zkrc_session_close(s);
  loop_clear(&lp);
  CU_ASSERT_EQUAL(g_atomic_int_get(&wrong_thread), 0);
  zookeeper_close(zh);
  g_free(base);
}

/* ========================================================= lock_free */

static void test_free_cancels_pending_holds(void) {
  loop lp;
  loop_init(&lp);
  reset_counts();
  zkrc_session *s = loop_session(&lp);
  zkrc_session *other = zkt_session();
  zhandle_t *zh = zkt_raw();
  char *path = zkt_path("async-free");
  char *path2 = zkt_path("async-free-held");
  enum { PENDING = 6 };
  slot p[PENDING], h = {0};
  memset(p, 0, sizeof p);
  slots ps = {p, PENDING}, hs = {&h, 1};
  zkrc_lock *lk = new_lock(s, path, on_lock_event, &ps);
  zkrc_lock *lk2 = new_lock(s, path2, on_lock_event, &hs);
  zkrc_lock *olk = new_lock(other, path, NULL, NULL);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(olk, 10000));

  for (int i = 0; i < PENDING; i++)
    ZKT_ASSERT_RC(
        ZKRC_OK, zkrc_lock_acquire_async(lk, i == 0 ? 60000 : ZKRC_WAIT_FOREVER,
                                         on_done, &p[i], &p[i].hold));
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_lock_acquire_async(lk2, 10000, on_done, &h, &h.hold));
  CU_ASSERT_FATAL(loop_run_until(&lp, slot_called, &h, slow(10000)));
  ZKT_ASSERT_RC(ZKRC_OK, h.status);
  CU_ASSERT_FATAL(
      zkt_wait_children_or_gone(zh, path, PENDING + 1, slow(10000)));

  /* Free with six holds waiting: each completes once with ECANCELED (after
   * the free returned: never from inside it), its node gone. */
  zkrc_lock_free(lk);
  CU_ASSERT_EQUAL(completions, 1);
  CU_ASSERT(run_until_completions(&lp, PENDING + 1, slow(10000)));
  int canceled = 0;
  for (int i = 0; i < PENDING; i++)
    canceled += p[i].calls == 1 && p[i].status == ZKRC_ECANCELED;
  CU_ASSERT_EQUAL(canceled, PENDING);
  CU_ASSERT_EQUAL(zkt_children_now(zh, path), 1); /* the other's node */

  /* Free with a hold acquired: released as by zkrc_lock_hold_release (in
   * the background), no completion, no event. */
  zkrc_lock_free(lk2);
  CU_ASSERT(zkt_wait_children_or_gone(zh, path2, 0, slow(5000)));
  loop_run_for(&lp, 300);
  CU_ASSERT_EQUAL(completions, PENDING + 1);
  CU_ASSERT_EQUAL(lock_events, 0);

  zkrc_lock_free(olk);
  zkrc_session_close(other);
  zkrc_session_close(s);
  loop_clear(&lp);
  CU_ASSERT_EQUAL(g_atomic_int_get(&wrong_thread), 0);
  zookeeper_close(zh);
  g_free(path);
  g_free(path2);
}

/* ======================================================== fd executor */

/* A plain poll() loop on the executor's descriptor, in a thread of its own;
 * a second eventfd tells it to stop. */
typedef struct fd_loop {
  zkrc_fd_executor *fx;
  int stop_fd;
  GThread *thread;
  int poll_errors;
} fd_loop;

static gpointer fd_loop_main(gpointer data) {
  fd_loop *fl = data;
  for (;;) {
    struct pollfd pfd[2] = {{zkrc_fd_executor_fd(fl->fx), POLLIN, 0},
                            {fl->stop_fd, POLLIN, 0}};
    int n = poll(pfd, 2, -1);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      fl->poll_errors++;
      break;
    }
    if (pfd[0].revents & POLLIN)
      zkrc_fd_executor_dispatch(fl->fx);
    if (pfd[1].revents & POLLIN)
      break;
  }
  return NULL;
}

static void fd_loop_start(fd_loop *fl) {
  memset(fl, 0, sizeof *fl);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_fd_executor_new(&fl->fx));
  CU_ASSERT_PTR_NOT_NULL_FATAL(fl->fx);
  fl->stop_fd = eventfd(0, EFD_CLOEXEC);
  CU_ASSERT_FATAL(fl->stop_fd >= 0);
  fl->thread = g_thread_new("fd-loop", fd_loop_main, fl);
  expect_thread(fl->thread);
}

/* Stop the thread; what is left is dispatched by zkrc_fd_executor_free on
 * the caller's thread (the caller has made sure none of its own is). */
static void fd_loop_stop(fd_loop *fl) {
  uint64_t one = 1;
  CU_ASSERT_EQUAL(write(fl->stop_fd, &one, sizeof one), (ssize_t)sizeof one);
  g_thread_join(fl->thread);
  close(fl->stop_fd);
  zkrc_fd_executor_free(fl->fx);
  CU_ASSERT_EQUAL(fl->poll_errors, 0);
}

/* The executor alone: level-triggered readiness, order kept per poster. */
typedef struct post_rec {
  GMutex mu;
  GCond cond;
  int last[2]; /* last sequence number seen from each poster */
  int out_of_order;
  int ran;
} post_rec;

typedef struct post_item {
  post_rec *r;
  int poster;
  int seq;
} post_item;

static void posted(void *arg) {
  post_item *it = arg;
  check_thread();
  g_mutex_lock(&it->r->mu);
  if (it->seq != it->r->last[it->poster] + 1)
    it->r->out_of_order++;
  it->r->last[it->poster] = it->seq;
  it->r->ran++;
  g_cond_broadcast(&it->r->cond);
  g_mutex_unlock(&it->r->mu);
  g_free(it);
}

#define POSTS 20000

typedef struct poster_arg {
  zkrc_executor ex;
  post_rec *r;
  int poster;
} poster_arg;

static gpointer poster_main(gpointer data) {
  poster_arg *pa = data;
  for (int i = 1; i <= POSTS; i++) {
    post_item *it = g_new(post_item, 1);
    *it = (post_item){pa->r, pa->poster, i};
    pa->ex.post(pa->ex.ctx, posted, it);
  }
  return NULL;
}

static int readable(int fd) {
  struct pollfd pfd = {fd, POLLIN, 0};
  return poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN);
}

static void test_fd_executor_keeps_order(void) {
  post_rec r;
  memset(&r, 0, sizeof r);
  g_mutex_init(&r.mu);
  g_cond_init(&r.cond);

  /* Readiness, with no loop running: readable while something waits, and
   * still readable until it is dispatched (level triggered). */
  zkrc_fd_executor *fx = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_fd_executor_new(&fx));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_fd_executor_new(NULL));
  zkrc_executor ex;
  zkrc_fd_executor_get(fx, &ex);
  int fd = zkrc_fd_executor_fd(fx);
  expect_thread(g_thread_self());
  CU_ASSERT(!readable(fd));
  for (int i = 1; i <= 2; i++) {
    post_item *it = g_new(post_item, 1);
    *it = (post_item){&r, 0, i};
    ex.post(ex.ctx, posted, it);
  }
  CU_ASSERT(readable(fd));
  CU_ASSERT(readable(fd));
  CU_ASSERT_EQUAL(zkrc_fd_executor_dispatch(fx), 2);
  CU_ASSERT(!readable(fd));
  CU_ASSERT_EQUAL(zkrc_fd_executor_dispatch(fx), 0);
  CU_ASSERT_EQUAL(r.ran, 2);
  zkrc_fd_executor_free(fx);

  /* Two threads post 20000 calls each while a poll() loop dispatches: all
   * run on the loop's thread, each poster's calls in its order. */
  memset(r.last, 0, sizeof r.last);
  r.ran = 0;
  fd_loop fl;
  fd_loop_start(&fl);
  poster_arg pa[2];
  GThread *posters[2];
  for (int i = 0; i < 2; i++) {
    pa[i].r = &r;
    pa[i].poster = i;
    zkrc_fd_executor_get(fl.fx, &pa[i].ex);
    posters[i] = g_thread_new("poster", poster_main, &pa[i]);
  }
  for (int i = 0; i < 2; i++)
    g_thread_join(posters[i]);
  int64_t deadline = g_get_monotonic_time() + slow(20000) * (int64_t)1000;
  g_mutex_lock(&r.mu);
  while (r.ran < 2 * POSTS && g_cond_wait_until(&r.cond, &r.mu, deadline))
    ;
  int ran = r.ran;
  g_mutex_unlock(&r.mu);
  fd_loop_stop(&fl);
  CU_ASSERT_EQUAL(ran, 2 * POSTS);
  CU_ASSERT_EQUAL(r.out_of_order, 0);
  CU_ASSERT_EQUAL(r.last[0], POSTS);
  CU_ASSERT_EQUAL(r.last[1], POSTS);
  CU_ASSERT_EQUAL(g_atomic_int_get(&wrong_thread), 0);
  g_mutex_clear(&r.mu);
  g_cond_clear(&r.cond);
}

/* The session and a lock through a poll() loop: what the loop's thread
 * saw, in the order it saw it. */
enum { SEEN_DONE_A, SEEN_DONE_B, SEEN_LOST_B, SEEN_LOCK_OTHER, SEEN_SESSION };

typedef struct seen {
  int kind;
  int value; /* status, reason, or the session event */
} seen;

typedef struct fd_run {
  GMutex mu;
  GCond cond;
  GArray *seen; /* of seen */
  slot a, b;
} fd_run;

static void fd_record(fd_run *r, int kind, int value) {
  check_thread();
  seen x = {kind, value};
  g_mutex_lock(&r->mu);
  g_array_append_val(r->seen, x);
  g_cond_broadcast(&r->cond);
  g_mutex_unlock(&r->mu);
}

static fd_run *fdr; /* the current run */

static void fd_on_session(zkrc_session *s, const zkrc_session_event *ev_,
                          void *arg) {
  zkrc_session_event_type ev = ev_->type;
  fd_record(arg, SEEN_SESSION, ev);
}

static void fd_on_done(zkrc_lock *lk, zkrc_lock_hold *hold,
                       const zkrc_lock_acquired_info *info, void *arg) {
  int status = info->status;
  int64_t token = info->token;
  slot *sl = arg;
  g_mutex_lock(&fdr->mu);
  sl->calls++;
  sl->status = status;
  sl->token = token;
  g_mutex_unlock(&fdr->mu);
  /* Recorded last: the test reads the slot once it sees the record. */
  fd_record(fdr, sl == &fdr->a ? SEEN_DONE_A : SEEN_DONE_B, status);
}

static void fd_on_lock_event(zkrc_lock *lk, const zkrc_lock_event *info,
                             void *arg) {
  fd_run *r = arg;
  if (info->type == ZKRC_LOCK_LOST && info->hold == r->b.hold)
    fd_record(r, SEEN_LOST_B, info->reason);
  else
    fd_record(r, SEEN_LOCK_OTHER, info->type);
}

/* Wait until the loop has seen @p kind (with @p value, or any value when
 * @p value is -1) at position @p from or later; returns its position or -1
 * after @p timeout_ms. */
static int fd_wait_seen_from(fd_run *r, int kind, int value, int from,
                             int timeout_ms) {
  int64_t deadline = g_get_monotonic_time() + (int64_t)timeout_ms * 1000;
  int at = -1;
  g_mutex_lock(&r->mu);
  for (;;) {
    for (guint i = (guint)(from < 0 ? 0 : from); i < r->seen->len && at < 0;
         i++) {
      seen *x = &g_array_index(r->seen, seen, i);
      if (x->kind == kind && (value == -1 || x->value == value))
        at = (int)i;
    }
    if (at >= 0 || !g_cond_wait_until(&r->cond, &r->mu, deadline))
      break;
  }
  g_mutex_unlock(&r->mu);
  return at;
}

static int fd_wait_seen(fd_run *r, int kind, int value, int timeout_ms) {
  return fd_wait_seen_from(r, kind, value, 0, timeout_ms);
}

static void test_fd_executor_runs_everything_on_its_thread(void) {
  fd_loop fl;
  fd_loop_start(&fl);
  fd_run run;
  memset(&run, 0, sizeof run);
  g_mutex_init(&run.mu);
  g_cond_init(&run.cond);
  run.seen = g_array_new(FALSE, FALSE, sizeof(seen));
  fdr = &run;
  zhandle_t *zh = zkt_raw();
  char *path = zkt_path("async-fd");

  zkrc_executor ex;
  zkrc_fd_executor_get(fl.fx, &ex);
  zkrc_session_options o;
  zkrc_session_options_init(&o);
  o.session_timeout_ms = ZKT_SESSION_TIMEOUT_MS;
  o.connect_timeout_ms = 15000;
  o.executor = &ex;
  zkrc_session *s = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_connect(&s, zkt_hosts(), &o));
  CU_ASSERT_FATAL(s != NULL);
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_session_add_listener(s, fd_on_session, &run, NULL));
  zkrc_lock *lk = new_lock(s, path, fd_on_lock_event, &run);

  /* A acquires; B queues behind it and gets the lock when A is released
   * (from this thread: any thread may release a hold). */
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire_async(lk, 10000, fd_on_done, &run.a,
                                                 &run.a.hold));
  CU_ASSERT_FATAL(fd_wait_seen(&run, SEEN_DONE_A, ZKRC_OK, slow(10000)) >= 0);
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_lock_acquire_async(lk, ZKRC_WAIT_FOREVER, fd_on_done,
                                        &run.b, &run.b.hold));
  CU_ASSERT_FATAL(zkt_wait_children_or_gone(zh, path, 2, slow(10000)));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_hold_release(run.a.hold));
  CU_ASSERT_FATAL(fd_wait_seen(&run, SEEN_DONE_B, ZKRC_OK, slow(10000)) >= 0);
  CU_ASSERT_EQUAL(front_czxid(zh, path), run.b.token);

  /* Expiry: B is told it lost the lock, the listener hears it, then the
   * new ZooKeeper session.  (The listener may or may not have heard the
   * first session's CONNECTED: it was added after zkrc_session_connect()
   * returned, and that event can be announced a moment later.) */
  g_mutex_lock(&run.mu);
  int before = (int)run.seen->len;
  g_mutex_unlock(&run.mu);
  zkt_expire(s);
  CU_ASSERT(fd_wait_seen_from(&run, SEEN_LOST_B, -1, before, slow(20000)) >= 0);
  CU_ASSERT(fd_wait_seen_from(&run, SEEN_SESSION, ZKRC_SESSION_EVENT_CONNECTED,
                              before, slow(20000)) >= 0);
  ZKT_ASSERT_RC(ZKRC_ELOCKLOST, zkrc_lock_hold_release(run.b.hold));
  zkrc_lock_free(lk);
  zkrc_session_close(s);
  CU_ASSERT(fd_wait_seen(&run, SEEN_SESSION, ZKRC_SESSION_EVENT_CLOSED,
                         slow(10000)) >= 0);
  fd_loop_stop(&fl);

  /* Everything ran on the loop's thread, each event once, in the order it
   * happened.  Taking the session over (the harness's way to expire it)
   * drops the connection first: the held lock hears "suspended" (maybe
   * "reconnected") as often as the listener does, all before "lost". */
  int at_a = fd_wait_seen(&run, SEEN_DONE_A, ZKRC_OK, 0);
  int at_b = fd_wait_seen(&run, SEEN_DONE_B, ZKRC_OK, 0);
  int at_lost = fd_wait_seen(&run, SEEN_LOST_B, -1, 0);
  int at_expired =
      fd_wait_seen(&run, SEEN_SESSION, ZKRC_SESSION_EVENT_EXPIRED, 0);
  if (at_expired < 0) /* presumed expired: also fine */
    at_expired = fd_wait_seen(&run, SEEN_SESSION, ZKRC_SESSION_EVENT_LOST, 0);
  int first_connected =
      fd_wait_seen(&run, SEEN_SESSION, ZKRC_SESSION_EVENT_CONNECTED, 0);
  int early = first_connected >= 0 && first_connected < before; /* 0 or 1 */
  int at_connected = fd_wait_seen_from(&run, SEEN_SESSION,
                                       ZKRC_SESSION_EVENT_CONNECTED, before, 0);
  int at_closed =
      fd_wait_seen(&run, SEEN_SESSION, ZKRC_SESSION_EVENT_CLOSED, 0);
  CU_ASSERT(at_a >= 0 && at_a < at_b);
  CU_ASSERT(at_b < at_lost && at_b < at_expired);
  CU_ASSERT(at_expired < at_connected);
  CU_ASSERT(at_lost < at_closed && at_connected < at_closed);
  CU_ASSERT_EQUAL(at_closed, (int)run.seen->len - 1); /* the last one */
  int lock_conn = 0, session_conn = 0, late = 0;
  for (guint i = 0; i < run.seen->len; i++) {
    seen *x = &g_array_index(run.seen, seen, i);
    lock_conn +=
        x->kind == SEEN_LOCK_OTHER &&
        (x->value == ZKRC_LOCK_SUSPENDED || x->value == ZKRC_LOCK_RECONNECTED);
    session_conn +=
        x->kind == SEEN_SESSION && (x->value == ZKRC_SESSION_EVENT_SUSPENDED ||
                                    x->value == ZKRC_SESSION_EVENT_RECONNECTED);
    late += x->kind == SEEN_LOCK_OTHER && (int)i > at_lost;
  }
  CU_ASSERT(lock_conn <= session_conn);
  CU_ASSERT_EQUAL(late, 0);
  /* Nothing else, nothing twice. */
  int expected = 6 + early + lock_conn + session_conn;
  CU_ASSERT_EQUAL((int)run.seen->len, expected);
  if ((int)run.seen->len != expected || getenv("ZKT_VERBOSE"))
    for (guint i = 0; i < run.seen->len; i++)
      fprintf(stderr, "\n  seen %u: kind %d value %d", i,
              g_array_index(run.seen, seen, i).kind,
              g_array_index(run.seen, seen, i).value);
  if (at_lost >= 0)
    CU_ASSERT(lost_reason_ok(g_array_index(run.seen, seen, at_lost).value));
  CU_ASSERT_EQUAL(g_atomic_int_get(&wrong_thread), 0);
  CU_ASSERT(zkt_wait_children_or_gone(zh, path, 0, slow(5000)));

  fdr = NULL;
  g_array_free(run.seen, TRUE);
  g_mutex_clear(&run.mu);
  g_cond_clear(&run.cond);
  zookeeper_close(zh);
  g_free(path);
}

/* ========================================================= elections */

typedef struct voter {
  zkrc_session *s;
  zkrc_election *e;
  int elected, revoked, failed;
  int64_t token;
  int revoke_reason;
  int64_t elected_ms;
} voter;

static void on_vote(zkrc_election *e, const zkrc_election_event *info,
                    void *arg) {
  check_thread();
  voter *v = arg;
  switch (info->type) {
  case ZKRC_ELECTION_ELECTED:
    v->elected++;
    v->token = info->token;
    v->elected_ms = zkt_now_ms();
    break;
  case ZKRC_ELECTION_REVOKED:
    v->revoked++;
    v->revoke_reason = info->reason;
    break;
  case ZKRC_ELECTION_FAILED:
    v->failed++;
    break;
  }
}

static int voter_elected(void *arg) { return ((voter *)arg)->elected > 0; }

typedef struct handover {
  voter *from, *to;
} handover;

static int handed_over(void *arg) {
  handover *h = arg;
  return h->from->revoked > 0 && h->to->elected > 0;
}

static int leaders(voter *v, int n) {
  int count = 0;
  for (int i = 0; i < n; i++)
    count += zkrc_election_is_leader(v[i].e);
  return count;
}

static void test_election_on_glib_loop(void) {
  loop lp;
  loop_init(&lp);
  zhandle_t *zh = zkt_raw();
  char *path = zkt_path("async-elect");
  voter v[3];
  memset(v, 0, sizeof v);
  for (int i = 0; i < 3; i++) {
    v[i].s = loop_session(&lp);
    zkrc_election_options o;
    zkrc_election_options_init(&o);
    o.on_event = on_vote;
    o.event_arg = &v[i];
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_new(&v[i].e, v[i].s, path, &o));
  }
  /* Join in a known order: v0 first, then v1 and v2 queue behind it. */
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_join(v[0].e));
  CU_ASSERT_FATAL(loop_run_until(&lp, voter_elected, &v[0], slow(10000)));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_join(v[1].e));
  CU_ASSERT_FATAL(zkt_wait_children_or_gone(zh, path, 2, slow(10000)));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_join(v[2].e));
  CU_ASSERT_FATAL(zkt_wait_children_or_gone(zh, path, 3, slow(10000)));
  loop_run_for(&lp, 100);
  CU_ASSERT_EQUAL(leaders(v, 3), 1);
  CU_ASSERT_EQUAL(v[1].elected + v[2].elected, 0);
  CU_ASSERT_EQUAL(front_czxid(zh, path), v[0].token);

  /* v0 resigns: v1 is elected, with a higher token; v0 goes to the back. */
  int64_t t0 = zkt_now_ms();
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_resign(v[0].e));
  CU_ASSERT_EQUAL(zkrc_election_is_leader(v[0].e), 0);
  handover h1 = {&v[0], &v[1]};
  CU_ASSERT(loop_run_until(&lp, handed_over, &h1, slow(10000)));
  printf("\n    resign handed over in %" PRId64 " ms ", v[1].elected_ms - t0);
  ZKT_ASSERT_RC(ZKRC_OK, v[0].revoke_reason);
  CU_ASSERT(v[1].token > v[0].token);
  CU_ASSERT_EQUAL(leaders(v, 3), 1);
  CU_ASSERT(zkrc_election_is_leader(v[1].e));

  /* v1 leaves: v2 is next in the queue (v0 is behind it now). */
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_leave(v[1].e));
  handover h2 = {&v[1], &v[2]};
  CU_ASSERT(loop_run_until(&lp, handed_over, &h2, slow(10000)));
  ZKT_ASSERT_RC(ZKRC_OK, v[1].revoke_reason);
  CU_ASSERT(v[2].token > v[1].token);
  CU_ASSERT_EQUAL(leaders(v, 3), 1);
  CU_ASSERT(zkrc_election_is_leader(v[2].e));

  /* v2 resigns: back to v0, with the highest token yet. */
  v[0].elected = 0;
  handover h3 = {&v[2], &v[0]};
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_resign(v[2].e));
  CU_ASSERT(loop_run_until(&lp, handed_over, &h3, slow(10000)));
  CU_ASSERT(v[0].token > v[2].token);
  CU_ASSERT_EQUAL(leaders(v, 3), 1);
  loop_run_for(&lp, 200);
  CU_ASSERT_EQUAL(v[0].elected, 1);
  CU_ASSERT_EQUAL(v[1].elected, 1);
  CU_ASSERT_EQUAL(v[2].elected, 1);
  CU_ASSERT_EQUAL(v[0].failed + v[1].failed + v[2].failed, 0);

  for (int i = 0; i < 3; i++) {
    zkrc_election_free(v[i].e);
    zkrc_session_close(v[i].s);
  }
  CU_ASSERT_EQUAL(zkt_children_now(zh, path), 0);
  loop_clear(&lp);
  CU_ASSERT_EQUAL(g_atomic_int_get(&wrong_thread), 0);
  zookeeper_close(zh);
  g_free(path);
}

/* What a session listener on the loop heard. */
typedef struct heard {
  int closed;
  int events;
} heard;

static void on_session_heard(zkrc_session *s, const zkrc_session_event *ev_,
                             void *arg) {
  zkrc_session_event_type ev = ev_->type;
  heard *h = arg;
  check_thread();
  h->events++;
  if (ev == ZKRC_SESSION_EVENT_CLOSED)
    h->closed++;
}

static int heard_closed(void *arg) { return ((heard *)arg)->closed > 0; }

/* Closing a session that has a listener, from the thread that runs its
 * GLib executor, returns at once: it does not wait for the CLOSED call it
 * queued on that loop (which only this thread can run; it used to stall
 * every close for 2 s).  The listener hears CLOSED once, when the loop
 * runs, and the session goes then. */
static void test_close_with_listener_on_loop_is_prompt(void) {
  loop lp;
  loop_init(&lp);
  zkrc_session *s = loop_session(&lp);
  heard h = {0, 0};
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_session_add_listener(s, on_session_heard, &h, NULL));
  int64_t start = zkt_now_ms();
  zkrc_session_close(s);
  int64_t took = zkt_now_ms() - start;
  printf("\n    close with a listener on the loop took %" PRId64 " ms ", took);
  CU_ASSERT(took < 1000);
  CU_ASSERT_EQUAL(h.closed, 0); /* queued on this thread's loop */
  CU_ASSERT(loop_run_until(&lp, heard_closed, &h, slow(5000)));
  loop_run_for(&lp, 100);
  CU_ASSERT_EQUAL(h.closed, 1);
  loop_clear(&lp);
  CU_ASSERT_EQUAL(g_atomic_int_get(&wrong_thread), 0);
}

/* A voter whose election is freed with zkrc_election_free_async(). */
typedef struct leaving {
  voter v;
  zhandle_t *zh;
  const char *path;
  int revoked_before_freed; /* REVOKED had come when `freed` ran */
  int freed;
  int nodes_at_freed; /* children of the election's path then */
} leaving;

static void on_freed(void *arg) {
  check_thread();
  leaving *l = arg;
  l->freed++;
  l->revoked_before_freed = l->v.revoked;
  l->nodes_at_freed = zkt_children_now(l->zh, l->path);
}

static int leaving_freed(void *arg) { return ((leaving *)arg)->freed > 0; }

/* Freed without blocking: the REVOKED of the leadership the application
 * was told of still comes (zkrc_election_free() drops it), then `freed`,
 * once our node is gone; nothing after.  Whether the leave came before
 * (the daemon's pattern) or the free leaves by itself. */
static void free_async_case(int leave_first) {
  loop lp;
  loop_init(&lp);
  leaving l;
  memset(&l, 0, sizeof l);
  l.zh = zkt_raw();
  char *path = zkt_path("async-free");
  l.path = path;
  l.v.s = loop_session(&lp);
  zkrc_election_options o;
  zkrc_election_options_init(&o);
  o.on_event = on_vote;
  o.event_arg = &l.v;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_new(&l.v.e, l.v.s, path, &o));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_join(l.v.e));
  CU_ASSERT_FATAL(loop_run_until(&lp, voter_elected, &l.v, slow(10000)));
  if (leave_first)
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_leave(l.v.e));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_free_async(l.v.e, on_freed, &l));
  CU_ASSERT_EQUAL(l.v.revoked, 0); /* queued on this thread's loop */
  CU_ASSERT(loop_run_until(&lp, leaving_freed, &l, slow(10000)));
  loop_run_for(&lp, 100);
  CU_ASSERT_EQUAL(l.freed, 1);
  CU_ASSERT_EQUAL(l.revoked_before_freed, 1);
  CU_ASSERT_EQUAL(l.v.revoked, 1);
  ZKT_ASSERT_RC(ZKRC_OK, l.v.revoke_reason);
  CU_ASSERT_EQUAL(l.v.failed, 0);
  CU_ASSERT(l.nodes_at_freed <= 0);
  zkrc_session_close(l.v.s);
  loop_clear(&lp);
  CU_ASSERT_EQUAL(g_atomic_int_get(&wrong_thread), 0);
  zookeeper_close(l.zh);
  g_free(path);
}

static void test_free_async_after_leave_tells_revoked(void) {
  free_async_case(1);
}

static void test_free_async_alone_tells_revoked(void) { free_async_case(0); }

static void test_free_async_bad_input(void) {
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_election_free_async(NULL, on_freed, NULL));
  zkrc_session *s = zkt_session();
  char *path = zkt_path("async-free-bad");
  zkrc_election *e = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_new(&e, s, path, NULL));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_election_free_async(e, NULL, NULL));
  zkrc_election_free(e); /* still whole: the refused call changed nothing */
  zkrc_session_close(s);
  g_free(path);
}

/* ===================================================== free_async */

/* An object (lock, read-write lock, semaphore) freed with its free_async
 * from inside its own event callback, the LOST of a hold whose node an
 * operator deleted, while a second acquisition waits behind it: what came,
 * and in which order. */
typedef struct ending {
  zhandle_t *zh;
  const char *path;
  int semaphore;   /* nodes under path/locks and path/leases */
  int events;      /* events delivered */
  int lost;        /* of which LOST */
  int completions; /* acquisitions' completions delivered */
  int first_ok;    /* the first acquisition's completion was ZKRC_OK */
  int free_rc;     /* the free_async called from the LOST event */
  int frees;       /* free_async calls */
  int done;        /* done calls */
  int events_at_done, completions_at_done;
  int nodes_at_done; /* the object's nodes left when done ran */
  char *node;        /* the first acquisition's node */
  int (*free_async)(void *obj, zkrc_callback_fn done, void *arg);
  void *obj;
} ending;

static void ending_done(void *arg) {
  check_thread();
  ending *e = arg;
  e->done++;
  e->events_at_done = e->events;
  e->completions_at_done = e->completions;
  e->nodes_at_done = e->semaphore ? zkt_semaphore_nodes_left(e->zh, e->path)
                                  : zkt_nodes_left(e->zh, e->path);
}

static int ending_has_done(void *arg) { return ((ending *)arg)->done > 0; }
static int ending_has_first(void *arg) {
  return ((ending *)arg)->completions > 0;
}

/* An event: on the first LOST, free the object from inside its callback. */
static void ending_event(ending *e, int lost) {
  check_thread();
  e->events++;
  if (lost && e->lost++ == 0) {
    e->frees++;
    e->free_rc = e->free_async(e->obj, ending_done, e);
  }
}

static void ending_lock_event(zkrc_lock *lk, const zkrc_lock_event *ev,
                              void *arg) {
  ending_event(arg, ev->type == ZKRC_LOCK_LOST);
}

static void ending_sem_event(zkrc_semaphore *sem,
                             const zkrc_semaphore_event *ev, void *arg) {
  ending_event(arg, ev->type == ZKRC_LOCK_LOST);
}

static void ending_lock_done(zkrc_lock *lk, zkrc_lock_hold *hold,
                             const zkrc_lock_acquired_info *info, void *arg) {
  check_thread();
  ending *e = arg;
  if (e->completions++ == 0 && info->status == ZKRC_OK) {
    e->first_ok = 1;
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_hold_node(hold, &e->node));
  }
}

static void ending_sem_done(zkrc_semaphore *sem, zkrc_semaphore_lease *lease,
                            const zkrc_semaphore_acquired_info *info,
                            void *arg) {
  check_thread();
  ending *e = arg;
  if (e->completions++ == 0 && info->status == ZKRC_OK) {
    e->first_ok = 1;
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_lease_node(lease, &e->node));
  }
}

static int free_lock_async(void *obj, zkrc_callback_fn done, void *arg) {
  return zkrc_lock_free_async(obj, done, arg);
}

static int free_rwlock_async(void *obj, zkrc_callback_fn done, void *arg) {
  return zkrc_rwlock_free_async(obj, done, arg);
}

static int free_semaphore_async(void *obj, zkrc_callback_fn done, void *arg) {
  return zkrc_semaphore_free_async(obj, done, arg);
}

/* The first acquisition (started by the caller) holds; a second waits
 * behind it; its node is deleted by an operator: LOST, whose callback
 * frees the object.  Then `done` comes once, after every event and
 * completion (the second acquisition's, cancelled or granted and given
 * back), with none of the object's nodes left, and nothing after it. */
static void ending_run(loop *lp, ending *e) {
  CU_ASSERT_FATAL(loop_run_until(lp, ending_has_first, e, slow(10000)));
  CU_ASSERT_FATAL(e->first_ok && e->node != NULL);
  ZKT_ASSERT_RC(ZOK, zoo_delete(e->zh, e->node, -1));
  CU_ASSERT(loop_run_until(lp, ending_has_done, e, slow(15000)));
  int events = e->events, told = e->completions;
  loop_run_for(lp, 300); /* nothing may come after `done` */
  CU_ASSERT_EQUAL(e->frees, 1);
  ZKT_ASSERT_RC(ZKRC_OK, e->free_rc);
  CU_ASSERT_EQUAL(e->done, 1);
  CU_ASSERT_EQUAL(e->lost, 1);
  CU_ASSERT_EQUAL(e->completions_at_done, 2); /* the second's came first */
  CU_ASSERT_EQUAL(e->events_at_done, events);
  CU_ASSERT_EQUAL(e->events, events);
  CU_ASSERT_EQUAL(e->completions, told);
  CU_ASSERT_EQUAL(e->nodes_at_done, 0);
  CU_ASSERT_EQUAL(g_atomic_int_get(&wrong_thread), 0);
  free(e->node);
}

static void ending_open(loop *lp, ending *e, const char *tag, char **path) {
  loop_init(lp);
  memset(e, 0, sizeof *e);
  e->zh = zkt_raw();
  *path = zkt_path(tag);
  e->path = *path;
}

static void ending_close(loop *lp, ending *e, zkrc_session *s, char *path) {
  zkrc_session_close(s);
  loop_clear(lp);
  zookeeper_close(e->zh);
  g_free(path);
}

static void test_lock_free_async_from_its_event(void) {
  loop lp;
  ending e;
  char *path;
  ending_open(&lp, &e, "free-async-lock", &path);
  zkrc_session *s = loop_session(&lp);
  zkrc_lock *lk = new_lock(s, path, ending_lock_event, &e);
  e.obj = lk;
  e.free_async = free_lock_async;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire_async(lk, slow(10000),
                                                 ending_lock_done, &e, NULL));
  CU_ASSERT_FATAL(loop_run_until(&lp, ending_has_first, &e, slow(10000)));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire_async(lk, ZKRC_WAIT_FOREVER,
                                                 ending_lock_done, &e, NULL));
  CU_ASSERT_FATAL(zkt_wait_children(e.zh, path, 2, slow(5000)));
  ending_run(&lp, &e);
  ending_close(&lp, &e, s, path);
}

static void test_rwlock_free_async_from_its_event(void) {
  loop lp;
  ending e;
  char *path;
  ending_open(&lp, &e, "free-async-rw", &path);
  zkrc_session *s = loop_session(&lp);
  zkrc_rwlock_options o;
  zkrc_rwlock_options_init(&o);
  o.on_event = ending_lock_event;
  o.event_arg = &e;
  zkrc_rwlock *rw = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_rwlock_new(&rw, s, path, &o));
  e.obj = rw;
  e.free_async = free_rwlock_async;
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_lock_acquire_async(zkrc_rwlock_writer(rw), slow(10000),
                                        ending_lock_done, &e, NULL));
  CU_ASSERT_FATAL(loop_run_until(&lp, ending_has_first, &e, slow(10000)));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire_async(zkrc_rwlock_reader(rw),
                                                 ZKRC_WAIT_FOREVER,
                                                 ending_lock_done, &e, NULL));
  CU_ASSERT_FATAL(zkt_wait_children(e.zh, path, 2, slow(5000)));
  ending_run(&lp, &e);
  ending_close(&lp, &e, s, path);
}

static int second_lease_made(void *arg) {
  ending *e = arg;
  char *leases = g_strconcat(e->path, "/leases", NULL);
  int n = zkt_children_now(e->zh, leases);
  g_free(leases);
  return n == 2;
}

static void test_semaphore_free_async_from_its_event(void) {
  loop lp;
  ending e;
  char *path;
  ending_open(&lp, &e, "free-async-sem", &path);
  e.semaphore = 1;
  zkrc_session *s = loop_session(&lp);
  zkrc_semaphore_options o;
  zkrc_semaphore_options_init(&o);
  o.on_event = ending_sem_event;
  o.event_arg = &e;
  zkrc_semaphore *sem = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_new(&sem, s, path, 1, &o));
  e.obj = sem;
  e.free_async = free_semaphore_async;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_acquire_async(
                             sem, slow(10000), ending_sem_done, &e, NULL));
  CU_ASSERT_FATAL(loop_run_until(&lp, ending_has_first, &e, slow(10000)));
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_semaphore_acquire_async(sem, ZKRC_WAIT_FOREVER,
                                             ending_sem_done, &e, NULL));
  /* The second waits for a lease, holding the internal mutex (its steps
   * run on the loop). */
  CU_ASSERT_FATAL(loop_run_until(&lp, second_lease_made, &e, slow(5000)));
  ending_run(&lp, &e);
  ending_close(&lp, &e, s, path);
}

static void ignore_done(void *arg) { (void)arg; }

/* Event types start at 1 (zeroed memory is none of them), named in
 * lower case, "unknown" for any other value. */
static void test_event_types_and_names(void) {
  CU_ASSERT_EQUAL(ZKRC_LOCK_SUSPENDED, 1);
  CU_ASSERT_EQUAL(ZKRC_ELECTION_ELECTED, 1);
  CU_ASSERT_STRING_EQUAL(zkrc_lock_event_name(ZKRC_LOCK_SUSPENDED),
                         "suspended");
  CU_ASSERT_STRING_EQUAL(zkrc_lock_event_name(ZKRC_LOCK_RECONNECTED),
                         "reconnected");
  CU_ASSERT_STRING_EQUAL(zkrc_lock_event_name(ZKRC_LOCK_LOST), "lost");
  CU_ASSERT_STRING_EQUAL(zkrc_lock_event_name((zkrc_lock_event_type)0),
                         "unknown");
  CU_ASSERT_STRING_EQUAL(zkrc_lock_event_name(ZKRC_LOCK_REVOKE_REQUESTED),
                         "revoke-requested");
  CU_ASSERT_STRING_EQUAL(zkrc_lock_event_name((zkrc_lock_event_type)5),
                         "unknown");
  CU_ASSERT_STRING_EQUAL(zkrc_election_event_name(ZKRC_ELECTION_ELECTED),
                         "elected");
  CU_ASSERT_STRING_EQUAL(zkrc_election_event_name(ZKRC_ELECTION_REVOKED),
                         "revoked");
  CU_ASSERT_STRING_EQUAL(zkrc_election_event_name(ZKRC_ELECTION_FAILED),
                         "failed");
  CU_ASSERT_STRING_EQUAL(zkrc_election_event_name((zkrc_election_event_type)0),
                         "unknown");
}

/* NULL objects and NULL callbacks are refused, and so is a read-write
 * lock's side alone; nothing changes (the objects are freed whole). */
static void test_free_async_bad_input_changes_nothing(void) {
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_lock_free_async(NULL, ignore_done, NULL));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_rwlock_free_async(NULL, ignore_done, NULL));
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkrc_semaphore_free_async(NULL, ignore_done, NULL));
  zkrc_session *s = zkt_session();
  char *path = zkt_path("free-async-bad");
  zkrc_lock *lk = NULL;
  zkrc_rwlock *rw = NULL;
  zkrc_semaphore *sem = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_new(&lk, s, path, NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_rwlock_new(&rw, s, path, NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_new(&sem, s, path, 2, NULL));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_lock_free_async(lk, NULL, NULL));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_rwlock_free_async(rw, NULL, NULL));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_semaphore_free_async(sem, NULL, NULL));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_lock_free_async(zkrc_rwlock_reader(rw),
                                                  ignore_done, NULL));
  /* Still whole: they work, then free as usual. */
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lk, 5000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(lk));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(zkrc_rwlock_reader(rw), 5000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(zkrc_rwlock_reader(rw)));
  zkrc_semaphore_lease *lease = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_acquire(sem, 5000, &lease));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_lease_release(lease));
  zkrc_lock_free(lk);
  zkrc_rwlock_free(rw);
  zkrc_semaphore_free(sem);
  zkrc_session_close(s);
  g_free(path);
}

/* A thread waiting in zkrc_lock_acquire() when the lock is freed with
 * zkrc_lock_free_async() returns ZKRC_ECANCELED, its node deleted; `done`
 * comes after, with no node left. */
typedef struct waiting_thread {
  zkrc_lock *lk;
  int rc;
} waiting_thread;

static gpointer wait_for_lock(gpointer data) {
  waiting_thread *w = data;
  w->rc = zkrc_lock_acquire(w->lk, ZKRC_WAIT_FOREVER);
  return NULL;
}

static void test_lock_free_async_cancels_waiting_threads(void) {
  loop lp;
  ending e;
  char *path;
  ending_open(&lp, &e, "free-async-wait", &path);
  zkrc_session *s = loop_session(&lp);
  zkrc_session *other = zkt_session();
  zkrc_lock *theirs = new_lock(other, path, NULL, NULL);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(theirs, 5000));
  zkrc_lock *lk = new_lock(s, path, NULL, NULL);
  waiting_thread w = {lk, ZKRC_OK};
  GThread *t = g_thread_new("waiter", wait_for_lock, &w);
  CU_ASSERT_FATAL(zkt_wait_children(e.zh, path, 2, slow(5000)));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_free_async(lk, ending_done, &e));
  g_thread_join(t);
  ZKT_ASSERT_RC(ZKRC_ECANCELED, w.rc);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(theirs));
  CU_ASSERT(loop_run_until(&lp, ending_has_done, &e, slow(10000)));
  CU_ASSERT_EQUAL(e.done, 1);
  CU_ASSERT_EQUAL(e.nodes_at_done, 0);
  zkrc_lock_free(theirs);
  zkrc_session_close(other);
  ending_close(&lp, &e, s, path);
}

/* ================================================================ main */

static void add_suites(void) {
  zkt_configure(1, 0);
  ZKT_SUITE(
      "async-lock",
      {"bad input gets clear errors", test_bad_input_gets_clear_errors},
      {"hundred locks from one loop", test_hundred_locks_from_one_loop},
      {"queue on one lock completes in order",
       test_queue_on_one_lock_completes_in_order},
      {"cancel", test_cancel}, {"timeout and try", test_timeout_and_try},
      {"deadlines of one session fire in their order",
       test_deadlines_of_one_session_fire_in_their_order},
      {"expiry reaches every hold once", test_expiry_reaches_every_hold_once},
      {"free cancels pending holds", test_free_cancels_pending_holds});
  ZKT_SUITE(
      "executors", {"fd executor keeps order", test_fd_executor_keeps_order},
      {"fd executor runs everything on its thread",
       test_fd_executor_runs_everything_on_its_thread},
      {"election on a GLib loop", test_election_on_glib_loop},
      {"close with a listener on the loop is prompt",
       test_close_with_listener_on_loop_is_prompt},
      {"free_async after leave tells revoked",
       test_free_async_after_leave_tells_revoked},
      {"free_async alone tells revoked", test_free_async_alone_tells_revoked},
      {"free_async bad input", test_free_async_bad_input});
  ZKT_SUITE(
      "free_async",
      {"lock freed from its own event", test_lock_free_async_from_its_event},
      {"rwlock freed from its own event",
       test_rwlock_free_async_from_its_event},
      {"semaphore freed from its own event",
       test_semaphore_free_async_from_its_event},
      {"waiting threads are cancelled",
       test_lock_free_async_cancels_waiting_threads},
      {"bad input changes nothing", test_free_async_bad_input_changes_nothing},
      {"event types and names", test_event_types_and_names});
}

int main(void) { return zkt_run("test_async", add_suites); }
