/*
 * Promises the headers make, each broken once by an adversarial test (issue
 * 13) and kept since; one member with a fault proxy in front of it.
 *
 *  1. a create whose reply is lost while the acquisition is given up
 *     (timeout, cancel, leave) leaves no node once the connection is back;
 *  2. an election whose directory an operator keeps deleting keeps its
 *     participants (a deleted node means rejoin, however often); a chroot
 *     that does not exist is a prompt ZKRC_ENONODE;
 *  3. zkrc_lock_free() turns a grant still queued on the executor into
 *     ZKRC_ECANCELED: nobody is told it holds a lock it no longer has;
 *  4. closing a session with replies in flight removes its ephemeral nodes
 *     at once;
 *  5. recipes on a session that is closed for good fail with ZKRC_ECLOSED
 *     instead of waiting for ever, and an election joined before is told
 *     FAILED (with no stale token);
 *  6. host names that do not resolve (a name service not up yet, or gone
 *     for a while) are tried again, at the first connect and when the
 *     session is reopened after an expiry: never a silent, final CLOSED;
 *  7. a write cut off while the session is reopening (issue 30: a handle
 *     closed under it at LOST) fails with a transient error, never
 *     ZKRC_ECLOSED, which only a session closed for good gives.
 */
#include "config.h"

#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include <glib.h>

#include "testutil.h"
#include "zkrecipes/executor.h"

static zhandle_t *direct(void) {
  return zkt_raw_to(zkrc_ensemble_direct_connect_string(zkt_ensemble()));
}

/* Another session gets the lock on @p path at once: it is free. */
static void assert_lock_is_free(const char *path) {
  zkrc_session *other = zkt_session_knowing_tick(4000, 0, NULL);
  zkrc_lock *olk = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_new(&olk, other, path, NULL), ZKRC_OK);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(olk, 2000));
  zkrc_lock_free(olk);
  zkrc_session_close(other);
}

/* A completion's result, for waiting on it from the test's thread. */
typedef struct outcome {
  GMutex mu;
  GCond cond;
  int status; /* 1 until it came */
  int count;
} outcome;

static void outcome_init(outcome *o) {
  g_mutex_init(&o->mu);
  g_cond_init(&o->cond);
  o->status = 1;
  o->count = 0;
}

static void outcome_clear(outcome *o) {
  g_mutex_clear(&o->mu);
  g_cond_clear(&o->cond);
}

static void outcome_set(outcome *o, int status) {
  g_mutex_lock(&o->mu);
  o->status = status;
  o->count++;
  g_cond_broadcast(&o->cond);
  g_mutex_unlock(&o->mu);
}

static int outcome_wait(outcome *o, int timeout_ms) {
  int64_t deadline = g_get_monotonic_time() + (int64_t)timeout_ms * 1000;
  g_mutex_lock(&o->mu);
  while (o->status == 1 && g_cond_wait_until(&o->cond, &o->mu, deadline))
    ;
  int status = o->status;
  g_mutex_unlock(&o->mu);
  return status;
}

static void on_acquired(zkrc_lock *lk, zkrc_lock_hold *hold,
                        const zkrc_lock_acquired_info *info, void *arg) {
  int status = info->status;
  outcome_set(arg, status);
}

/* --------------------------------------- 1. a lost create reply, given up */

/* Counts the session's reconnections. */
static void on_session(zkrc_session *s, const zkrc_session_event *ev_,
                       void *arg) {
  zkrc_session_event_type ev = ev_->type;
  if (ev == ZKRC_SESSION_EVENT_RECONNECTED)
    outcome_set(arg, ev);
}

typedef enum give_up { BY_TIMEOUT, BY_CANCEL, BY_LEAVE } give_up;

typedef struct created {
  zhandle_t *zh;
  const char *dir;
} created;

/* A node was created in the directory (its cversion moved): seen straight
 * from the members, not through the slow proxy. */
static int created_in(void *arg) {
  created *c = arg;
  struct Stat st;
  return zoo_exists(c->zh, c->dir, 0, &st) == ZOK && st.cversion >= 1;
}

/* The create reaches the servers, its reply is lost with the connection,
 * and the participant gives up before the reply could have come: the node
 * must be gone once the connection is back, so that someone else gets the
 * lock (or leadership) at once. */
static void lost_create_reply_then_give_up(give_up how) {
  char *path = zkt_path("lost-reply");
  zhandle_t *zh = direct();
  zkt_make_path(zh, path); /* so the create is the next request sent */
  zkrc_session *s = zkt_session_knowing_tick(4000, 0, NULL);
  outcome back;
  outcome_init(&back);
  CU_ASSERT_EQUAL(zkrc_session_add_listener(s, on_session, &back, NULL),
                  ZKRC_OK);
  zkrc_lock *lk = NULL;
  zkrc_election *e = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_new(&lk, s, path, NULL), ZKRC_OK);
  zkrc_election_options eo;
  zkrc_election_options_init(&eo);
  eo.participant_id = "withdrawn";
  CU_ASSERT_EQUAL_FATAL(zkrc_election_new(&e, s, path, &eo), ZKRC_OK);
  /* Slow, so that giving up comes before the lost reply is noticed. */
  CU_ASSERT_EQUAL(zkrc_proxy_delay(zkt_ensemble(), 0, 150), 0);
  CU_ASSERT_EQUAL(zkrc_proxy_drop_after_next_request(zkt_ensemble(), 0), 0);
  outcome done;
  outcome_init(&done);
  created cd = {zh, path};
  if (how == BY_TIMEOUT) {
    ZKT_ASSERT_RC(ZKRC_ETIMEDOUT, zkrc_lock_acquire(lk, 100));
  } else if (how == BY_CANCEL) {
    zkrc_lock_hold *h = NULL;
    CU_ASSERT_EQUAL(
        zkrc_lock_acquire_async(lk, ZKRC_WAIT_FOREVER, on_acquired, &done, &h),
        ZKRC_OK);
    /* The create reached the servers; its (lost) reply is still on its
     * way back through the slow proxy: give up now. */
    CU_ASSERT(zkt_wait_for(created_in, &cd, 10000));
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_hold_cancel(h));
    ZKT_ASSERT_RC(ZKRC_ECANCELED, outcome_wait(&done, 10000));
  } else {
    CU_ASSERT_EQUAL(zkrc_election_join(e), ZKRC_OK);
    CU_ASSERT(zkt_wait_for(created_in, &cd, 10000)); /* as above */
    CU_ASSERT_EQUAL(zkrc_election_leave(e), ZKRC_OK);
  }
  /* The reply is lost: the connection drops and comes back, with the same
   * session (well within its lease). */
  CU_ASSERT_EQUAL(outcome_wait(&back, 10000), ZKRC_SESSION_EVENT_RECONNECTED);
  CU_ASSERT_EQUAL(zkrc_proxy_delay(zkt_ensemble(), 0, 0), 0);
  /* The create did reach the servers... */
  struct Stat st;
  CU_ASSERT_EQUAL(zoo_exists(zh, path, 0, &st), ZOK);
  CU_ASSERT(st.cversion >= 1);
  /* ...and its node goes once the connection is back. */
  CU_ASSERT(zkt_wait_children(zh, path, 0, 5000));
  if (how == BY_LEAVE) {
    /* No ghost leader: the servers name nobody (not the participant that
     * left), asked through the election that left. */
    char *leader = NULL;
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_leader_id(e, &leader, 5000));
    CU_ASSERT_PTR_NULL(leader);
    free(leader);
  }
  /* Another session gets the lock at once. */
  assert_lock_is_free(path);
  zkrc_election_free(e);
  zkrc_lock_free(lk);
  zkrc_session_close(s);
  if (how == BY_CANCEL) {
    /* The hold's completion came exactly once (ZKRC_ECANCELED, above),
     * also after the lost reply was settled and the session closed. */
    g_mutex_lock(&done.mu);
    CU_ASSERT_EQUAL(done.count, 1);
    g_mutex_unlock(&done.mu);
  }
  outcome_clear(&done);
  outcome_clear(&back);
  zookeeper_close(zh);
  g_free(path);
}

static void test_lost_create_reply_then_timeout(void) {
  lost_create_reply_then_give_up(BY_TIMEOUT);
}

static void test_lost_create_reply_then_cancel(void) {
  lost_create_reply_then_give_up(BY_CANCEL);
}

static void test_lost_create_reply_then_leave(void) {
  lost_create_reply_then_give_up(BY_LEAVE);
}

/* -------------------------------- 2. a directory deleted again and again */

typedef struct voter {
  GMutex mu;
  int elected, failed;
} voter;

static void on_vote(zkrc_election *e, const zkrc_election_event *info,
                    void *arg) {
  voter *v = arg;
  g_mutex_lock(&v->mu);
  v->elected += info->type == ZKRC_ELECTION_ELECTED;
  v->failed += info->type == ZKRC_ELECTION_FAILED;
  g_mutex_unlock(&v->mu);
}

/* Delete @p path with its children in one transaction, so that nobody can
 * slip a node in between (as participants quickly would). */
static int delete_tree(zhandle_t *zh, const char *path) {
  struct String_vector kids = {0, NULL};
  int rc = zoo_get_children(zh, path, 0, &kids);
  if (rc != ZOK)
    return rc;
  int n = kids.count + 1;
  zoo_op_t *ops = g_new0(zoo_op_t, n);
  zoo_op_result_t *results = g_new0(zoo_op_result_t, n);
  char **paths = g_new0(char *, n);
  for (int i = 0; i < kids.count; i++) {
    paths[i] = g_strdup_printf("%s/%s", path, kids.data[i]);
    zoo_delete_op_init(&ops[i], paths[i], -1);
  }
  zoo_delete_op_init(&ops[kids.count], path, -1);
  rc = zoo_multi(zh, n, ops, results);
  for (int i = 0; i < n; i++)
    g_free(paths[i]);
  g_free(paths);
  g_free(ops);
  g_free(results);
  deallocate_String_vector(&kids);
  return rc;
}

static int three_listed(void *arg) {
  zkrc_participant *list = NULL;
  size_t n = 0;
  void **a = arg;
  int ok = zkrc_election_list(a[0], a[1], &list, &n, 2000) == ZKRC_OK && n == 3;
  zkrc_participants_free(list, n);
  return ok;
}

static int one_leader_of_three(void *arg) {
  zkrc_election **e = arg;
  int leaders = 0;
  for (int i = 0; i < 3; i++)
    leaders += zkrc_election_is_leader(e[i]) != 0;
  return leaders == 1;
}

/* Delete every waiting participant's node (all but the leader's), as an
 * operator might to "kick" them: each one queues again. */
static void delete_followers(zkrc_session *s, zhandle_t *zh, const char *path) {
  zkrc_participant *list = NULL;
  size_t n = 0;
  CU_ASSERT_EQUAL(zkrc_election_list(s, path, &list, &n, 5000), ZKRC_OK);
  for (size_t i = 1; i < n; i++) {
    char *node = g_strdup_printf("%s/%s", path, list[i].node);
    CU_ASSERT_EQUAL(zoo_delete(zh, node, -1), ZOK);
    g_free(node);
  }
  zkrc_participants_free(list, n);
}

/* An operator deletes the waiting participants' nodes a dozen times, then
 * the whole directory a few times: every participant comes back each time
 * (a deleted node means rejoin), none is told FAILED.  (Each used to count
 * every create of its life against a budget of ten, and gave up with
 * ZKRC_ENONODE the next time it found the directory gone.) */
static void
test_participants_survive_a_directory_deleted_again_and_again(void) {
  enum { N = 3, KICKS = 12, DELETIONS = 3 };
  char *path = zkt_path("deleted-dir");
  zhandle_t *zh = direct();
  zkrc_session *s = zkt_session_knowing_tick(4000, 0, NULL);
  zkrc_election *e[N];
  voter v[N];
  for (int i = 0; i < N; i++) {
    g_mutex_init(&v[i].mu);
    v[i].elected = v[i].failed = 0;
    zkrc_election_options o;
    zkrc_election_options_init(&o);
    o.on_event = on_vote;
    o.event_arg = &v[i];
    CU_ASSERT_EQUAL_FATAL(zkrc_election_new(&e[i], s, path, &o), ZKRC_OK);
    CU_ASSERT_EQUAL(zkrc_election_join(e[i]), ZKRC_OK);
  }
  void *args[2] = {s, path};
  CU_ASSERT_FATAL(zkt_wait_for(three_listed, args, 10000));
  for (int k = 0; k < KICKS; k++) {
    delete_followers(s, zh, path);
    CU_ASSERT(zkt_wait_for(three_listed, args, 10000));
  }
  for (int k = 0; k < DELETIONS; k++) {
    /* A node may come between the listing and the delete: try again. */
    int rc;
    for (int tries = 0; (rc = delete_tree(zh, path)) == ZNOTEMPTY && tries < 20;
         tries++)
      ;
    CU_ASSERT_EQUAL(rc, ZOK);
    CU_ASSERT(zkt_wait_for(three_listed, args, 10000));
  }
  CU_ASSERT(zkt_wait_for(one_leader_of_three, e, 10000));
  for (int i = 0; i < N; i++) {
    g_mutex_lock(&v[i].mu);
    CU_ASSERT_EQUAL(v[i].failed, 0);
    g_mutex_unlock(&v[i].mu);
  }
  for (int i = 0; i < N; i++) {
    zkrc_election_free(e[i]);
    g_mutex_clear(&v[i].mu);
  }
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(path);
}

/* A chroot that does not exist: the lock's directory cannot be made; the
 * header names the error, and it comes at once. */
static void test_missing_chroot_is_a_prompt_enonode(void) {
  char *hosts =
      g_strdup_printf("%s/zkt-no-such-chroot-%d", zkt_hosts(), (int)getpid());
  zkrc_session_options o;
  zkrc_session_options_init(&o);
  o.session_timeout_ms = 4000;
  zkrc_session *s = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_session_connect(&s, hosts, &o), ZKRC_OK);
  zkrc_lock *lk = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_new(&lk, s, "/locks/a", NULL), ZKRC_OK);
  int64_t t0 = zkt_now_ms();
  ZKT_ASSERT_RC(ZKRC_ENONODE, zkrc_lock_acquire(lk, 10000));
  int64_t took = zkt_now_ms() - t0;
  /* The same for a non-blocking hold: its completion says ZKRC_ENONODE. */
  outcome done;
  outcome_init(&done);
  int64_t t1 = zkt_now_ms();
  CU_ASSERT_EQUAL(zkrc_lock_acquire_async(lk, 10000, on_acquired, &done, NULL),
                  ZKRC_OK);
  ZKT_ASSERT_RC(ZKRC_ENONODE, outcome_wait(&done, 10000));
  int64_t took_async = zkt_now_ms() - t1;
  printf("(%" PRId64 " ms, non-blocking %" PRId64 " ms) ", took, took_async);
  CU_ASSERT(took < 1000);
  CU_ASSERT(took_async < 1000);
  outcome_clear(&done);
  zkrc_lock_free(lk);
  zkrc_session_close(s);
  g_free(hosts);
}

/* ------------------------------ 3. a queued grant after zkrc_lock_free */

static int hold_is_held(void *arg) { return zkrc_lock_hold_is_held(arg); }

/* With an executor nobody dispatches yet, a hold is granted (its ZKRC_OK
 * completion queued), then the lock is freed, which releases the hold's
 * node.  When the loop dispatches, the completion must say ZKRC_ECANCELED,
 * as lock.h promises for pending holds: never ZKRC_OK for a lock that
 * someone else may already hold. */
static void test_free_cancels_a_grant_still_queued(void) {
  char *path = zkt_path("queued-grant");
  zkrc_fd_executor *fx = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_fd_executor_new(&fx), ZKRC_OK);
  zkrc_executor ex;
  zkrc_fd_executor_get(fx, &ex);
  zkrc_session *s = zkt_session_knowing_tick(4000, 0, &ex);
  zkrc_lock *lk = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_new(&lk, s, path, NULL), ZKRC_OK);
  outcome done;
  outcome_init(&done);
  zkrc_lock_hold *h = NULL;
  CU_ASSERT_EQUAL(zkrc_lock_acquire_async(lk, 10000, on_acquired, &done, &h),
                  ZKRC_OK);
  CU_ASSERT_FATAL(zkt_wait_for(hold_is_held, h, 10000));
  zkrc_lock_free(lk); /* the grant is still queued */
  zkrc_fd_executor_dispatch(fx);
  ZKT_ASSERT_RC(ZKRC_ECANCELED, done.status);
  CU_ASSERT_EQUAL(done.count, 1);
  /* The lock is free for others. */
  assert_lock_is_free(path);
  zkrc_session_close(s);
  zkrc_fd_executor_dispatch(fx);
  zkrc_fd_executor_free(fx);
  outcome_clear(&done);
  g_free(path);
}

/* The same for an election: ELECTED is queued on an executor nobody
 * dispatches yet, then the leadership is lost (the node deleted by an
 * operator).  When the loop dispatches, the application must not be told
 * it leads with that token, nor be told REVOKED of a leadership it never
 * heard of; it hears of its next leadership, with a new token. */
typedef struct votes {
  GArray *tokens; /* +token for ELECTED, -token for REVOKED */
} votes;

static void record_vote(zkrc_election *e, const zkrc_election_event *info,
                        void *arg) {
  votes *v = arg;
  int64_t t = info->type == ZKRC_ELECTION_ELECTED   ? info->token
              : info->type == ZKRC_ELECTION_REVOKED ? -info->token
                                                    : 0;
  g_array_append_val(v->tokens, t);
}

static int is_leader(void *arg) { return zkrc_election_is_leader(arg); }

typedef struct leads_anew {
  zkrc_election *e;
  int64_t old_token;
} leads_anew;

/* Leading again, with a new node (it rejoins by itself). */
static int leads_with_a_new_token(void *arg) {
  leads_anew *l = arg;
  int64_t t = 0;
  return zkrc_election_token(l->e, &t) == ZKRC_OK && t > l->old_token;
}

static void test_a_lost_leadership_queued_is_not_told(void) {
  char *path = zkt_path("queued-elected");
  zhandle_t *zh = direct();
  zkrc_fd_executor *fx = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_fd_executor_new(&fx), ZKRC_OK);
  zkrc_executor ex;
  zkrc_fd_executor_get(fx, &ex);
  zkrc_session *s = zkt_session_knowing_tick(4000, 0, &ex);
  votes v = {g_array_new(FALSE, FALSE, sizeof(int64_t))};
  zkrc_election_options o;
  zkrc_election_options_init(&o);
  o.on_event = record_vote;
  o.event_arg = &v;
  zkrc_election *e = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_election_new(&e, s, path, &o), ZKRC_OK);
  CU_ASSERT_EQUAL(zkrc_election_join(e), ZKRC_OK);
  CU_ASSERT_FATAL(zkt_wait_for(is_leader, e, 10000));
  int64_t first = 0;
  CU_ASSERT_EQUAL(zkrc_election_token(e, &first), ZKRC_OK);
  struct String_vector kids = {0, NULL};
  CU_ASSERT_EQUAL_FATAL(zoo_get_children(zh, path, 0, &kids), ZOK);
  CU_ASSERT_EQUAL_FATAL(kids.count, 1);
  char *node = g_strdup_printf("%s/%s", path, kids.data[0]);
  deallocate_String_vector(&kids);
  CU_ASSERT_EQUAL(zoo_delete(zh, node, -1), ZOK);
  leads_anew l = {e, first};
  CU_ASSERT(zkt_wait_for(leads_with_a_new_token, &l, 10000));
  zkrc_fd_executor_dispatch(fx);
  /* Told only of the new leadership. */
  CU_ASSERT_EQUAL(v.tokens->len, 1);
  for (guint i = 0; i < v.tokens->len; i++) {
    int64_t t = g_array_index(v.tokens, int64_t, i);
    CU_ASSERT(t > first);
  }
  zkrc_election_free(e);
  zkrc_session_close(s);
  zkrc_fd_executor_dispatch(fx);
  zkrc_fd_executor_free(fx);
  g_array_free(v.tokens, TRUE);
  zookeeper_close(zh);
  g_free(node);
  g_free(path);
}

/* -------------------------------- 4. closing with replies in flight */

typedef struct closer {
  zkrc_session *s;
  outcome first;   /* the first completion came */
  gboolean inside; /* close from inside that completion */
} closer;

static void close_on_first(zkrc_lock *lk, zkrc_lock_hold *hold,
                           const zkrc_lock_acquired_info *info, void *arg) {
  int status = info->status;
  closer *c = arg;
  gboolean first;
  g_mutex_lock(&c->first.mu);
  first = c->first.count == 0;
  g_mutex_unlock(&c->first.mu);
  if (first && c->inside)
    zkrc_session_close(c->s);
  outcome_set(&c->first, status);
}

/* A hundred non-blocking acquisitions in flight (creates, listings, own-node
 * watches), and the session is closed as soon as the first completes: its
 * ephemeral nodes must be gone when the close returns, not a session
 * timeout later (the close request must reach the servers). */
static void close_with_replies_in_flight(gboolean inside) {
  enum { N = 100 };
  char *path = zkt_path(inside ? "close-inside" : "close-in-flight");
  zhandle_t *zh = direct();
  closer c = {.inside = inside};
  outcome_init(&c.first);
  c.s = zkt_session_knowing_tick(4000, 0, NULL);
  zkrc_lock *lk = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_new(&lk, c.s, path, NULL), ZKRC_OK);
  for (int i = 0; i < N; i++)
    CU_ASSERT_EQUAL(zkrc_lock_acquire_async(lk, ZKRC_WAIT_FOREVER,
                                            close_on_first, &c, NULL),
                    ZKRC_OK);
  CU_ASSERT_FATAL(outcome_wait(&c.first, 10000) != 1);
  if (!inside)
    zkrc_session_close(c.s); /* else the completion closed it, and returned */
  int left = zkt_nodes_left(zh, path);
  printf("(%d of %d nodes left) ", left, N);
  CU_ASSERT_EQUAL(left, 0);
  zkrc_lock_free(lk);
  outcome_clear(&c.first);
  zookeeper_close(zh);
  g_free(path);
}

static void test_close_with_replies_in_flight(void) {
  close_with_replies_in_flight(FALSE);
}

static void test_close_inside_a_completion(void) {
  close_with_replies_in_flight(TRUE);
}

/* ---------------------------------------- 5. a session closed for good */

static void on_failed(zkrc_election *e, const zkrc_election_event *info,
                      void *arg) {
  if (info->type == ZKRC_ELECTION_FAILED) {
    CU_ASSERT_EQUAL(info->token, 0); /* about no term */
    outcome_set(arg, info->reason);
  }
}

static void test_recipes_on_a_dead_session_fail_at_once(void) {
  char *path = zkt_path("dead");
  zkrc_session *s = zkt_session_knowing_tick(4000, 1, NULL); /* no_reopen */
  zkrc_lock *before = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_new(&before, s, path, NULL), ZKRC_OK);
  outcome failed;
  outcome_init(&failed);
  zkrc_election_options eo;
  zkrc_election_options_init(&eo);
  eo.on_event = on_failed;
  eo.event_arg = &failed;
  zkrc_election *joined = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_election_new(&joined, s, path, &eo), ZKRC_OK);
  CU_ASSERT_EQUAL(zkrc_election_join(joined), ZKRC_OK);
  CU_ASSERT_EQUAL(zkrc_election_wait_leader(joined, 10000), ZKRC_OK);

  zkt_expire(s);
  /* The election joined before: revoked, then FAILED, not left hanging. */
  ZKT_ASSERT_RC(ZKRC_ECLOSED, outcome_wait(&failed, 10000));
  CU_ASSERT_EQUAL(zkrc_session_get_state(s), ZKRC_SESSION_CLOSED);

  int64_t t0 = zkt_now_ms();
  zkrc_lock *lk = NULL;
  ZKT_ASSERT_RC(ZKRC_ECLOSED, zkrc_lock_new(&lk, s, path, NULL));
  ZKT_ASSERT_RC(ZKRC_ECLOSED, zkrc_lock_acquire(before, 3000));
  ZKT_ASSERT_RC(ZKRC_ECLOSED, zkrc_lock_acquire(before, ZKRC_WAIT_FOREVER));
  outcome done;
  outcome_init(&done);
  ZKT_ASSERT_RC(ZKRC_ECLOSED,
                zkrc_lock_acquire_async(before, ZKRC_WAIT_FOREVER, on_acquired,
                                        &done, NULL));
  zkrc_election *e = NULL;
  ZKT_ASSERT_RC(ZKRC_ECLOSED, zkrc_election_new(&e, s, path, NULL));
  ZKT_ASSERT_RC(ZKRC_ECLOSED, zkrc_election_join(joined));
  /* Told FAILED, the participant is no longer joined: waiting to lead
   * says so at once, not at the deadline. */
  ZKT_ASSERT_RC(ZKRC_ESTATE, zkrc_election_wait_leader(joined, 3000));
  ZKT_ASSERT_RC(ZKRC_ESTATE,
                zkrc_election_wait_leader(joined, ZKRC_WAIT_FOREVER));
  zkrc_participant *list = NULL;
  size_t n = 0;
  ZKT_ASSERT_RC(ZKRC_ECLOSED, zkrc_lock_list(s, path, &list, &n, 1000));
  /* A write too (it said ZKRC_ECONNLOSS, as if the session could come
   * back). */
  ZKT_ASSERT_RC(ZKRC_ECLOSED, zkrc_shared_value_set(s, path, "x", 1, 1000));
  CU_ASSERT(zkt_now_ms() - t0 < 1000);

  zkrc_election_free(joined);
  zkrc_lock_free(before);
  zkrc_session_close(s);
  outcome_clear(&failed);
  outcome_clear(&done);
  g_free(path);
}

/* ------------------------------- 6. names that do not resolve, for a while */

/* The name service of a child process: its own /etc/hosts (rewritten in
 * place, so the bind mount keeps seeing it) and an /etc/resolv.conf that
 * sends queries to a port where nothing answers, so that a name missing
 * from the hosts file fails at once. */
typedef struct names {
  char *dir, *hosts_file, *resolv_file;
  char *name;    /* the member's name, while it resolves */
  char *connect; /* "NAME:PORT" */
} names;

static int write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w"); /* same inode: the bind mount follows */
  if (f == NULL)
    return -1;
  int rc = fputs(text, f) < 0 ? -1 : 0;
  return fclose(f) != 0 ? -1 : rc;
}

static int names_resolve(names *n, gboolean resolve) {
  char *text = resolve ? g_strdup_printf("127.0.0.1 %s\n", n->name)
                       : g_strdup("# nothing\n");
  int rc = write_text(n->hosts_file, text);
  g_free(text);
  return rc;
}

/* Not root: become root of a user namespace of our own (the forked child
 * has a single thread, as unshare(CLONE_NEWUSER) needs), mapped to our
 * user, which may then mount in a mount namespace of its own. */
static int own_user_namespace(void) {
  char map[64];
  uid_t uid = geteuid();
  gid_t gid = getegid();
  if (unshare(CLONE_NEWUSER) != 0 ||
      write_text("/proc/self/setgroups", "deny") != 0)
    return -1;
  g_snprintf(map, sizeof map, "0 %u 1", (unsigned)uid);
  if (write_text("/proc/self/uid_map", map) != 0)
    return -1;
  g_snprintf(map, sizeof map, "0 %u 1", (unsigned)gid);
  return write_text("/proc/self/gid_map", map);
}

/* 0; 1 when the files could not be written (a failure whoever runs it);
 * 2 when the namespaces or mounts were refused (privilege). */
static int private_name_service(names *n) {
  if (write_text(n->resolv_file, "nameserver 127.0.0.1\n"
                                 "options timeout:1 attempts:1\n") != 0 ||
      names_resolve(n, FALSE) != 0)
    return 1;
  if ((geteuid() != 0 && own_user_namespace() != 0) ||
      unshare(CLONE_NEWNS) != 0 ||
      /* (the type is ignored for these; named for valgrind's sake) */
      mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) != 0 ||
      mount(n->hosts_file, "/etc/hosts", "none", MS_BIND, NULL) != 0 ||
      mount(n->resolv_file, "/etc/resolv.conf", "none", MS_BIND, NULL) != 0)
    return 2;
  return 0;
}

typedef struct session_log {
  GMutex mu;
  GCond cond;
  int expired, closed, connected;
} session_log;

static void log_session(zkrc_session *s, const zkrc_session_event *ev_,
                        void *arg) {
  zkrc_session_event_type ev = ev_->type;
  session_log *l = arg;
  g_mutex_lock(&l->mu);
  /* Expired, or lost: with the name gone, the client cannot even reach a
   * server to hear that it expired; its lease runs out instead. */
  l->expired +=
      ev == ZKRC_SESSION_EVENT_EXPIRED || ev == ZKRC_SESSION_EVENT_LOST;
  l->closed += ev == ZKRC_SESSION_EVENT_CLOSED;
  l->connected += ev == ZKRC_SESSION_EVENT_CONNECTED;
  g_cond_broadcast(&l->cond);
  g_mutex_unlock(&l->mu);
}

/* Wait until the counter at @p field reaches @p n (listeners run on the
 * callback thread, a moment after the state changed). */
static gboolean wait_count(session_log *l, int *field, int n, int timeout_ms) {
  int64_t deadline = g_get_monotonic_time() + (int64_t)timeout_ms * 1000;
  g_mutex_lock(&l->mu);
  while (*field < n && g_cond_wait_until(&l->cond, &l->mu, deadline))
    ;
  gboolean reached = *field >= n;
  g_mutex_unlock(&l->mu);
  return reached;
}

#define CHILD_CHECK(cond, code)                                                \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "\nnames child: %s: failed (line %d)\n", #cond,          \
              __LINE__);                                                       \
      return code;                                                             \
    }                                                                          \
  } while (0)

/* Runs in a child (its own mount namespace); returns 0, 77 when it lacked
 * the privilege to set up the name service (not root, and no user
 * namespaces), or the number of the check that failed. */
static int names_child(void *arg) {
  names *n = arg;
  gboolean root = geteuid() == 0; /* before a user namespace makes us 0 */
  int setup = private_name_service(n);
  CHILD_CHECK(setup != 1, 18);
  if (setup == 2 && !root)
    return 77;
  CHILD_CHECK(setup == 0, 19);
  /* A. Connecting before the name resolves: not "invalid", not dead. */
  zkrc_session_options o;
  zkrc_session_options_init(&o);
  o.session_timeout_ms = 2000;
  o.connect_timeout_ms = 500;
  o.server_tick_ms = 200;
  session_log l = {.expired = 0};
  g_mutex_init(&l.mu);
  g_cond_init(&l.cond);
  o.on_event = log_session;
  o.event_arg = &l;
  zkrc_session *s = NULL;
  CHILD_CHECK(zkrc_session_connect(&s, n->connect, &o) == ZKRC_ECONNECT, 1);
  CHILD_CHECK(zkrc_session_new(&s, n->connect, &o) == ZKRC_OK, 2);
  CHILD_CHECK(zkrc_session_wait_connected(s, 300) == ZKRC_ETIMEDOUT, 3);
  CHILD_CHECK(names_resolve(n, TRUE) == 0, 4);
  CHILD_CHECK(zkrc_session_wait_connected(s, 15000) == ZKRC_OK, 5);
  int64_t first = zkrc_session_id(s);

  /* B. The session expires while the name does not resolve: it must keep
   * trying to open a new one, and get it once the name is back. */
  g_mutex_lock(&l.mu);
  int closed_before = l.closed; /* the failed connect's session, closed */
  g_mutex_unlock(&l.mu);
  CHILD_CHECK(names_resolve(n, FALSE) == 0, 6);
  clientid_t id;
  CHILD_CHECK(zkrc_session_client_id(s, &id) == ZKRC_OK, 7);
  CHILD_CHECK(zkrc_ensemble_expire_session(zkt_ensemble(), &id, 10000) == 0, 8);
  CHILD_CHECK(wait_count(&l, &l.expired, 1, 10000), 9);
  CHILD_CHECK(zkrc_session_wait_connected(s, 500) == ZKRC_ETIMEDOUT, 10);
  CHILD_CHECK(zkrc_session_get_state(s) == ZKRC_SESSION_CONNECTING, 11);
  CHILD_CHECK(names_resolve(n, TRUE) == 0, 12);
  CHILD_CHECK(zkrc_session_wait_connected(s, 15000) == ZKRC_OK, 13);
  CHILD_CHECK(zkrc_session_id(s) != first, 14);
  CHILD_CHECK(wait_count(&l, &l.connected, 2, 5000), 15);
  g_mutex_lock(&l.mu);
  int closed = l.closed, connected = l.connected;
  g_mutex_unlock(&l.mu);
  CHILD_CHECK(closed == closed_before, 16);
  CHILD_CHECK(connected == 2, 17);
  zkrc_session_close(s);
  return 0;
}

static void test_names_that_do_not_resolve_are_tried_again(void) {
  const char *direct_hosts =
      zkrc_ensemble_direct_connect_string(zkt_ensemble());
  names n;
  n.dir = g_dir_make_tmp("zkt-names-XXXXXX", NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(n.dir);
  n.hosts_file = g_build_filename(n.dir, "hosts", NULL);
  n.resolv_file = g_build_filename(n.dir, "resolv.conf", NULL);
  n.name = g_strdup_printf("zkt-member-%d.test", (int)getpid());
  n.connect = g_strdup_printf("%s%s", n.name, strrchr(direct_hosts, ':'));
  pid_t pid = zkt_spawn(names_child, &n);
  int status = zkt_wait_child(pid, 90000);
  /* Not a pass: nothing was tested. */
  if (status == 77)
    zkt_skip("could not give a child its own /etc/hosts: that needs root, "
             "or unprivileged user namespaces");
  else if (status != 0)
    fprintf(stderr, "\n(the child ended with status %d)\n", status);
  if (status != 77)
    CU_ASSERT_EQUAL(status, 0);
  unlink(n.hosts_file);
  unlink(n.resolv_file);
  rmdir(n.dir);
  g_free(n.hosts_file);
  g_free(n.resolv_file);
  g_free(n.name);
  g_free(n.connect);
  g_free(n.dir);
}

/* ------------------------ 7. a session reopening is not a closed session */

/* Shared value writes one after the other, and what they returned. */
typedef struct writer {
  zkrc_session *s;
  const char *path;
  gint stop;
  int ok, transient, closed, other, other_rc;
} writer;

static gpointer keep_writing(gpointer data) {
  writer *w = data;
  while (!g_atomic_int_get(&w->stop)) {
    int rc = zkrc_shared_value_set(w->s, w->path, "w", 1, 20000);
    if (rc == ZKRC_OK) {
      w->ok++;
    } else if (rc == ZKRC_ECONNLOSS || rc == ZKRC_ETIMEDOUT ||
               rc == ZKRC_ESESSIONEXPIRED) {
      w->transient++;
    } else if (rc == ZKRC_ECLOSED) {
      w->closed++;
    } else {
      w->other_rc = rc;
      w->other++;
    }
  }
  return NULL;
}

static void on_lost(zkrc_session *s, const zkrc_session_event *ev_, void *arg) {
  zkrc_session_event_type ev = ev_->type;
  if (ev == ZKRC_SESSION_EVENT_LOST)
    outcome_set(arg, ZKRC_OK);
}

/* Writes go on while the proxy is a black hole until the lease runs out
 * (LOST: the handle is closed with writes in flight, a new one opened);
 * once the new session is connected, the writes stop.  None said
 * ZKRC_ECLOSED, some failed with a transient error, and a write now
 * succeeds. */
static void test_a_session_reopening_is_not_closed(void) {
  char *path = zkt_path("reopening");
  zkrc_session *s = zkt_session_knowing_tick(2000, 0, NULL);
  outcome lost;
  outcome_init(&lost);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_add_listener(s, on_lost, &lost, NULL));
  zkrc_versioned_value v;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_shared_value_get(s, path, "0", 1, &v, 5000));
  zkrc_versioned_value_clear(&v);
  int64_t first = zkrc_session_id(s);
  writer w = {.s = s, .path = path};
  GThread *t = g_thread_new("writer", keep_writing, &w);
  int timeout = zkrc_session_timeout(s);
  CU_ASSERT_EQUAL(zkrc_proxy_blackhole(zkt_ensemble(), 0, 3 * timeout), 0);
  ZKT_ASSERT_RC(ZKRC_OK, outcome_wait(&lost, 4 * timeout));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_wait_connected(s, 8 * timeout));
  g_atomic_int_set(&w.stop, 1);
  g_thread_join(t);
  CU_ASSERT(zkrc_session_id(s) != first);
  printf("\n    writes while the session turned over: %d ok, %d transient, "
         "%d ECLOSED, %d other (%s) ",
         w.ok, w.transient, w.closed, w.other, zkrc_err_name(w.other_rc));
  CU_ASSERT_EQUAL(w.closed, 0);
  CU_ASSERT_EQUAL(w.other, 0);
  CU_ASSERT(w.transient > 0);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_shared_value_set(s, path, "after", 5, 5000));
  zkrc_session_close(s);
  outcome_clear(&lost);
  g_free(path);
}

static void add_suites(void) {
  zkt_configure(1, 1);
  ZKT_SUITE(
      "promises",
      {"lost create reply then timeout", test_lost_create_reply_then_timeout},
      {"lost create reply then cancel", test_lost_create_reply_then_cancel},
      {"lost create reply then leave", test_lost_create_reply_then_leave},
      {"participants survive a directory deleted again and again",
       test_participants_survive_a_directory_deleted_again_and_again},
      {"missing chroot is a prompt ENONODE",
       test_missing_chroot_is_a_prompt_enonode},
      {"free cancels a grant still queued",
       test_free_cancels_a_grant_still_queued},
      {"a lost leadership queued is not told",
       test_a_lost_leadership_queued_is_not_told},
      {"close with replies in flight", test_close_with_replies_in_flight},
      {"close inside a completion", test_close_inside_a_completion},
      {"recipes on a dead session fail at once",
       test_recipes_on_a_dead_session_fail_at_once},
      {"names that do not resolve are tried again",
       test_names_that_do_not_resolve_are_tried_again},
      {"a session reopening is not closed",
       test_a_session_reopening_is_not_closed});
}

int main(void) { return zkt_run("test_promises", add_suites); }
