/*
 * Lock revocation (issue 34): Curator's makeRevocable() and
 * Revoker.attemptRevoke() on our lock.  A revocable holder, or waiter, is
 * told ZKRC_LOCK_REVOKE_REQUESTED when its node's data becomes
 * "__REVOKE__" and keeps the lock until it gives it up; a lock that is not
 * revocable is told nothing and goes on; zkrc_lock_revoke() refuses what
 * is not a lock contender's node and says ZKRC_ENONODE for a missing one.
 * Both ways with Curator 5.4's real classes (tests/peers/
 * CuratorRevokePeer.java): a revocable Curator holder (a mutex, or either
 * side of an InterProcessReadWriteLock) releases when we ask, and ours is
 * told when Curator's Revoker asks.  A request made while the holder is
 * cut off is told once it is back.  kazoo has no revocation.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "interop_peers.h"
#include "testutil.h"

/* ------------------------------------------------------- lock events */

/* The lock events one test saw, in order, waited for with a deadline. */
typedef struct seen {
  GMutex mu;
  GCond cond;
  GPtrArray *events; /* of zkrc_lock_event copies (node owned) */
} seen;

static void seen_init(seen *v) {
  g_mutex_init(&v->mu);
  g_cond_init(&v->cond);
  v->events = g_ptr_array_new();
}

static void seen_clear(seen *v) {
  for (guint i = 0; i < v->events->len; i++) {
    zkrc_lock_event *ev = g_ptr_array_index(v->events, i);
    g_free((char *)ev->node);
    g_free(ev);
  }
  g_ptr_array_free(v->events, TRUE);
  g_mutex_clear(&v->mu);
  g_cond_clear(&v->cond);
}

static void on_event(zkrc_lock *lk, const zkrc_lock_event *ev, void *arg) {
  (void)lk;
  seen *v = arg;
  zkrc_lock_event *copy = g_memdup2(ev, sizeof *ev);
  copy->node = g_strdup(ev->node);
  g_mutex_lock(&v->mu);
  g_ptr_array_add(v->events, copy);
  g_cond_broadcast(&v->cond);
  g_mutex_unlock(&v->mu);
}

/* How many events of @p type were seen by now. */
static int seen_count(seen *v, zkrc_lock_event_type type) {
  int n = 0;
  g_mutex_lock(&v->mu);
  for (guint i = 0; i < v->events->len; i++)
    n += ((zkrc_lock_event *)g_ptr_array_index(v->events, i))->type == type;
  g_mutex_unlock(&v->mu);
  return n;
}

/* The @p nth (from 1) event of @p type, waited for at most @p ms; a copy
 * (node owned: g_free it and the event), or NULL. */
static zkrc_lock_event *seen_wait(seen *v, zkrc_lock_event_type type, int nth,
                                  int ms) {
  int64_t until = g_get_monotonic_time() + ms * G_TIME_SPAN_MILLISECOND;
  zkrc_lock_event *found = NULL;
  g_mutex_lock(&v->mu);
  do {
    int n = 0;
    for (guint i = 0; i < v->events->len && !found; i++) {
      zkrc_lock_event *ev = g_ptr_array_index(v->events, i);
      if (ev->type == type && ++n == nth) {
        found = g_memdup2(ev, sizeof *ev);
        found->node = g_strdup(ev->node);
      }
    }
  } while (!found && g_cond_wait_until(&v->cond, &v->mu, until));
  g_mutex_unlock(&v->mu);
  return found;
}

static void event_free(zkrc_lock_event *ev) {
  if (ev)
    g_free((char *)ev->node);
  g_free(ev);
}

static zkrc_lock *new_lock(zkrc_session *s, const char *path, seen *v,
                           int revocable) {
  zkrc_lock_options o;
  zkrc_lock_options_init(&o);
  o.on_event = on_event;
  o.event_arg = v;
  o.revocable = revocable;
  zkrc_lock *lk = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_new(&lk, s, path, &o), ZKRC_OK);
  return lk;
}

/* A lock at @p path told into @p v (initialized here), acquired; its node
 * in *@p node (free() it). */
static zkrc_lock *held_lock(zkrc_session *s, const char *path, seen *v,
                            int revocable, char **node) {
  seen_init(v);
  zkrc_lock *lk = new_lock(s, path, v, revocable);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lk, STEP_MS));
  *node = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_node(lk, node));
  return lk;
}

/* ------------------------------------------------------------- tests */

/* A revocable holder is told each request (its node and token), keeps the
 * lock meanwhile (the library releases nothing), and releases normally. */
static void test_holder_told(void) {
  char *path = zkt_path("revoke-holder");
  zkrc_session *s = zkt_session();
  zkrc_session *asker = zkt_session();
  zhandle_t *zh = zkt_raw();
  seen v;
  seen_init(&v);
  zkrc_lock *lk = new_lock(s, path, &v, 1);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lk, STEP_MS));
  char *node = NULL;
  int64_t token = 0;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_node(lk, &node));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_token(lk, &token));
  CU_ASSERT_EQUAL(seen_count(&v, ZKRC_LOCK_REVOKE_REQUESTED), 0);

  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_revoke(asker, node, STEP_MS));
  CU_ASSERT(zkt_data_is(zh, node, "__REVOKE__", 10));
  zkrc_lock_event *ev = seen_wait(&v, ZKRC_LOCK_REVOKE_REQUESTED, 1, STEP_MS);
  CU_ASSERT_PTR_NOT_NULL_FATAL(ev);
  CU_ASSERT_EQUAL(ev->reason, ZKRC_OK);
  CU_ASSERT_EQUAL(ev->zk_error, ZOK);
  CU_ASSERT_EQUAL(ev->token, token);
  CU_ASSERT_STRING_EQUAL(ev->node, node);
  CU_ASSERT_PTR_NULL(ev->hold);
  CU_ASSERT_STRING_EQUAL(zkrc_lock_event_name(ev->type), "revoke-requested");
  event_free(ev);
  CU_ASSERT(zkrc_lock_is_held(lk)); /* the application decides */
  CU_ASSERT(zkt_exists(zh, node));

  /* A second request is a second event. */
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_revoke(asker, node, ZKRC_NO_WAIT));
  ev = seen_wait(&v, ZKRC_LOCK_REVOKE_REQUESTED, 2, STEP_MS);
  CU_ASSERT_PTR_NOT_NULL(ev);
  event_free(ev);
  CU_ASSERT(zkrc_lock_is_held(lk));

  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(lk));
  CU_ASSERT_FALSE(zkt_exists(zh, node));
  CU_ASSERT_EQUAL(seen_count(&v, ZKRC_LOCK_LOST), 0);
  zkrc_lock_free(lk);
  seen_clear(&v);
  free(node);
  zookeeper_close(zh);
  zkrc_session_close(asker);
  zkrc_session_close(s);
  g_free(path);
}

/* A lock that is not revocable (but watches its own node: it has
 * on_event) is told nothing: a revocable lock of the same session, asked
 * right after, is told through the same session's events and executor,
 * so that anything the first would have been told came before.  It still
 * holds, its participant id now reads "__REVOKE__", and it releases. */
static void test_not_revocable_ignores(void) {
  char *path = zkt_path("revoke-plain");
  char *other_path = zkt_path("revoke-plain-control");
  zkrc_session *s = zkt_session();
  zkrc_session *asker = zkt_session();
  zhandle_t *zh = zkt_raw();
  seen plain, control;
  char *node, *other_node;
  zkrc_lock *lk = held_lock(s, path, &plain, 0, &node);
  zkrc_lock *other = held_lock(s, other_path, &control, 1, &other_node);

  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_revoke(asker, node, STEP_MS));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_revoke(asker, other_node, STEP_MS));
  zkrc_lock_event *ev =
      seen_wait(&control, ZKRC_LOCK_REVOKE_REQUESTED, 1, STEP_MS);
  CU_ASSERT_PTR_NOT_NULL(ev); /* the control was told */
  event_free(ev);
  CU_ASSERT_EQUAL(plain.events->len, 0); /* nothing at all */
  CU_ASSERT(zkrc_lock_is_held(lk));
  char **ids = NULL;
  size_t count = 0;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_participants(lk, &ids, &count, STEP_MS));
  CU_ASSERT_EQUAL(count, 1);
  if (count == 1)
    CU_ASSERT_STRING_EQUAL(ids[0], "__REVOKE__");
  zkrc_strv_free(ids);

  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(lk));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(other));
  CU_ASSERT_FALSE(zkt_exists(zh, node));
  CU_ASSERT_EQUAL(plain.events->len, 0);
  zkrc_lock_free(lk);
  zkrc_lock_free(other);
  seen_clear(&plain);
  seen_clear(&control);
  free(node);
  free(other_node);
  zookeeper_close(zh);
  zkrc_session_close(asker);
  zkrc_session_close(s);
  g_free(other_path);
  g_free(path);
}

typedef struct outcome {
  GMutex mu;
  GCond cond;
  gboolean done;
  int status;
} outcome;

static void on_acquired(zkrc_lock *lk, zkrc_lock_hold *hold,
                        const zkrc_lock_acquired_info *info, void *arg) {
  (void)lk;
  (void)hold;
  outcome *o = arg;
  g_mutex_lock(&o->mu);
  o->done = TRUE;
  o->status = info->status;
  g_cond_broadcast(&o->cond);
  g_mutex_unlock(&o->mu);
}

static int outcome_wait(outcome *o, int ms) {
  int64_t until = g_get_monotonic_time() + ms * G_TIME_SPAN_MILLISECOND;
  g_mutex_lock(&o->mu);
  while (!o->done && g_cond_wait_until(&o->cond, &o->mu, until))
    ;
  int status = o->done ? o->status : 1;
  g_mutex_unlock(&o->mu);
  return status;
}

/* A waiter of a revocable lock is told too (its node, no token, its
 * hold), and may give up its place: cancelled, its node goes. */
static void test_waiter_told(void) {
  char *path = zkt_path("revoke-waiter");
  zkrc_session *s = zkt_session();
  zhandle_t *zh = zkt_raw();
  seen hv, wv;
  seen_init(&hv);
  seen_init(&wv);
  zkrc_lock *holder = new_lock(s, path, &hv, 1);
  zkrc_lock *waiter = new_lock(s, path, &wv, 1);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(holder, STEP_MS));
  outcome o = {0};
  g_mutex_init(&o.mu);
  g_cond_init(&o.cond);
  zkrc_lock_hold *hold = NULL;
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_lock_acquire_async(waiter, 60000, on_acquired, &o, &hold));
  CU_ASSERT_FATAL(zkt_wait_children(zh, path, 2, STEP_MS));
  zkrc_participant *list = NULL;
  size_t n = 0;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_list(s, path, &list, &n, STEP_MS));
  CU_ASSERT_EQUAL_FATAL(n, 2);
  char *waiter_node = g_strdup_printf("%s/%s", path, list[1].node);
  zkrc_participants_free(list, n);

  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_revoke(s, waiter_node, STEP_MS));
  zkrc_lock_event *ev = seen_wait(&wv, ZKRC_LOCK_REVOKE_REQUESTED, 1, STEP_MS);
  CU_ASSERT_PTR_NOT_NULL_FATAL(ev);
  CU_ASSERT_STRING_EQUAL(ev->node, waiter_node);
  CU_ASSERT_EQUAL(ev->token, 0);
  CU_ASSERT_PTR_EQUAL(ev->hold, hold);
  event_free(ev);
  CU_ASSERT_EQUAL(outcome_wait(&o, 0), 1); /* still waiting */
  CU_ASSERT_EQUAL(hv.events->len, 0);      /* the holder was not asked */
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_hold_cancel(hold));
  CU_ASSERT_EQUAL(outcome_wait(&o, STEP_MS), ZKRC_ECANCELED);
  CU_ASSERT(zkt_wait_children(zh, path, 1, STEP_MS));
  CU_ASSERT(zkrc_lock_is_held(holder));

  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(holder));
  zkrc_lock_free(waiter);
  zkrc_lock_free(holder);
  seen_clear(&hv);
  seen_clear(&wv);
  g_mutex_clear(&o.mu);
  g_cond_clear(&o.cond);
  g_free(waiter_node);
  zookeeper_close(zh);
  zkrc_session_close(s);
  g_free(path);
}

/* A node that is not there: ZKRC_ENONODE, and nothing is made. */
static void test_missing_node(void) {
  char *path = zkt_path("revoke-missing");
  zkrc_session *s = zkt_session();
  zhandle_t *zh = zkt_raw();
  char *node = g_strdup_printf(
      "%s/_c_00000000-0000-4000-8000-000000000000-lock-0000000007", path);
  ZKT_ASSERT_RC(ZKRC_ENONODE, zkrc_lock_revoke(s, node, STEP_MS));
  CU_ASSERT_EQUAL(zkrc_last_zk_error(), ZNONODE);
  CU_ASSERT_FALSE(zkt_exists(zh, path));
  /* The directory there, the node not. */
  zkt_make_path(zh, path);
  ZKT_ASSERT_RC(ZKRC_ENONODE, zkrc_lock_revoke(s, node, ZKRC_NO_WAIT));
  CU_ASSERT_FALSE(zkt_exists(zh, node));
  CU_ASSERT_EQUAL(zkt_child_count(zh, path), 0);
  g_free(node);
  zookeeper_close(zh);
  zkrc_session_close(s);
  g_free(path);
}

/* Bad input: ZKRC_EINVAL, nothing written (a holder's node keeps its id);
 * a revocable lock or read-write lock without on_event is refused. */
static void test_bad_input(void) {
  char *path = zkt_path("revoke-bad");
  zkrc_session *s = zkt_session();
  zhandle_t *zh = zkt_raw();
  zkrc_lock_options o;
  zkrc_lock_options_init(&o);
  o.participant_id = "me";
  zkrc_lock *lk = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_new(&lk, s, path, &o));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lk, STEP_MS));
  char *node = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_node(lk, &node));

  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_lock_revoke(NULL, node, STEP_MS));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_lock_revoke(s, NULL, STEP_MS));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_lock_revoke(s, node, -2));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_lock_revoke(s, node + 1, STEP_MS));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_lock_revoke(s, path, STEP_MS));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_lock_revoke(s, "/", STEP_MS));
  char *trailing = g_strconcat(node, "/", NULL);
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_lock_revoke(s, trailing, STEP_MS));
  g_free(trailing);
  const char *not_lock[] = {"/x/plain", "/x/lock-", "/x/lock-12a",
                            "/x/_c_u-latch-0000000001",
                            "/x/_c_u-lease-0000000001"};
  for (size_t i = 0; i < G_N_ELEMENTS(not_lock); i++)
    ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_lock_revoke(s, not_lock[i], STEP_MS));
  CU_ASSERT(zkt_data_is(zh, node, "me", 2)); /* nothing written */
  CU_ASSERT_FALSE(zkt_exists(zh, "/x"));

  /* Revocable needs on_event. */
  zkrc_lock *refused = (zkrc_lock *)&o; /* cleared on refusal */
  o.revocable = 1;
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_lock_new(&refused, s, path, &o));
  CU_ASSERT_PTR_NULL(refused);
  zkrc_rwlock_options ro;
  zkrc_rwlock_options_init(&ro);
  ro.revocable = 1;
  zkrc_rwlock *rw = (zkrc_rwlock *)&ro;
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_rwlock_new(&rw, s, path, &ro));
  CU_ASSERT_PTR_NULL(rw);

  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(lk));
  zkrc_lock_free(lk);
  free(node);
  zookeeper_close(zh);
  zkrc_session_close(s);
  g_free(path);
}

/* A read-write lock's writer, made revocable, is told. */
static void test_rwlock_writer_told(void) {
  char *path = zkt_path("revoke-rw");
  zkrc_session *s = zkt_session();
  seen v;
  seen_init(&v);
  zkrc_rwlock_options ro;
  zkrc_rwlock_options_init(&ro);
  ro.on_event = on_event;
  ro.event_arg = &v;
  ro.revocable = 1;
  zkrc_rwlock *rw = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_rwlock_new(&rw, s, path, &ro));
  zkrc_lock *w = zkrc_rwlock_writer(rw);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(w, STEP_MS));
  char *node = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_node(w, &node));
  CU_ASSERT(strstr(node, "__WRIT__") != NULL);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_revoke(s, node, STEP_MS));
  zkrc_lock_event *ev = seen_wait(&v, ZKRC_LOCK_REVOKE_REQUESTED, 1, STEP_MS);
  CU_ASSERT_PTR_NOT_NULL(ev);
  if (ev)
    CU_ASSERT_STRING_EQUAL(ev->node, node);
  event_free(ev);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(w));
  zkrc_rwlock_free(rw);
  seen_clear(&v);
  free(node);
  zkrc_session_close(s);
  g_free(path);
}

static int session_suspended(void *arg) {
  return zkrc_session_get_state(arg) == ZKRC_SESSION_SUSPENDED;
}

static int session_connected(void *arg) {
  return zkrc_session_get_state(arg) == ZKRC_SESSION_CONNECTED;
}

/* A request made while the holder is cut off (its connection dropped and
 * its proxy black-holed, shorter than its session timeout) cannot reach
 * it then; once it is back (same session, still holding) it is told,
 * once: the watch on its node is set again and sees the change it missed.
 * A control lock of the same session, asked after the holder was told,
 * is told through the same executor: nothing more for the holder came
 * before it. */
static void test_told_after_reconnect(void) {
  char *path = zkt_path("revoke-reconnect");
  char *control_path = zkt_path("revoke-reconnect-control");
  /* Through the proxy; a timeout long enough that the same session comes
   * back on a loaded machine (the client may wait out a black-holed
   * handshake before it tries again). */
  zkrc_session *s = zkt_session_with(3 * ZKT_SESSION_TIMEOUT_MS, 0);
  zkrc_session *asker = zkt_direct_session();
  seen v, cv;
  char *node, *control_node;
  zkrc_lock *lk = held_lock(s, path, &v, 1, &node);
  zkrc_lock *control = held_lock(s, control_path, &cv, 1, &control_node);
  int64_t token = 0;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_token(lk, &token));
  int64_t session_id = zkrc_session_id(s);

  CU_ASSERT_EQUAL(zkrc_proxy_blackhole(zkt_ensemble(), 0, STEP_MS), 0);
  CU_ASSERT_EQUAL(zkrc_proxy_drop_all(zkt_ensemble(), 0), 0);
  CU_ASSERT(zkt_wait_for(session_suspended, s, STEP_MS));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_revoke(asker, node, STEP_MS));
  CU_ASSERT_EQUAL(seen_count(&v, ZKRC_LOCK_REVOKE_REQUESTED), 0);
  CU_ASSERT_EQUAL(zkrc_proxy_blackhole(zkt_ensemble(), 0, 0), 0); /* back */

  zkrc_lock_event *ev = seen_wait(&v, ZKRC_LOCK_REVOKE_REQUESTED, 1, STEP_MS);
  CU_ASSERT_PTR_NOT_NULL(ev);
  if (ev) {
    CU_ASSERT_STRING_EQUAL(ev->node, node);
    CU_ASSERT_EQUAL(ev->token, token);
  }
  event_free(ev);
  CU_ASSERT(zkt_wait_for(session_connected, s, STEP_MS));
  CU_ASSERT_EQUAL(zkrc_session_id(s), session_id); /* the same session */
  CU_ASSERT(zkrc_lock_is_held(lk));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_revoke(asker, control_node, STEP_MS));
  ev = seen_wait(&cv, ZKRC_LOCK_REVOKE_REQUESTED, 1, STEP_MS);
  CU_ASSERT_PTR_NOT_NULL(ev); /* the control was told */
  event_free(ev);
  CU_ASSERT_EQUAL(seen_count(&v, ZKRC_LOCK_REVOKE_REQUESTED), 1); /* once */
  CU_ASSERT_EQUAL(seen_count(&v, ZKRC_LOCK_LOST), 0);

  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(lk));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(control));
  zkrc_lock_free(lk);
  zkrc_lock_free(control);
  seen_clear(&v);
  seen_clear(&cv);
  free(node);
  free(control_node);
  zkrc_session_close(asker);
  zkrc_session_close(s);
  g_free(control_path);
  g_free(path);
}

/* ------------------------------------------------- Curator, both ways */

#define REVOKE_PEER "CuratorRevokePeer"

/* Ask the Curator peer @p p holding @p node to give it up: it is told,
 * releases and ends. */
static void revoke_until_released(zkrc_session *s, peer *p, const char *node) {
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_revoke(s, node, STEP_MS));
  char *line = peer_expect(p, "revoke-requested", STEP_MS);
  CU_ASSERT_PTR_NOT_NULL(line);
  g_free(line);
  line = peer_expect(p, "released", STEP_MS);
  CU_ASSERT_PTR_NOT_NULL(line);
  g_free(line);
  CU_ASSERT_EQUAL(peer_finish(p, STEP_MS), 0);
}

/* A Curator holder made revocable releases when zkrc_lock_revoke() asks;
 * then the lock is ours at once. */
static void test_curator_holder_releases(void) {
  kill_live_peers();
  char *path = zkt_path("revoke-curator-holder");
  zkrc_session *s = zkt_session();
  peer *p = curator_class_peer("curator-holder", REVOKE_PEER, "hold", path,
                               "curator", (char *)NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  char *node = peer_expect(p, "acquired", START_MS);
  CU_ASSERT_PTR_NOT_NULL_FATAL(node);
  CU_ASSERT(g_str_has_prefix(node, path) && strstr(node, "-lock-"));
  zkrc_lock *lk = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_new(&lk, s, path, NULL));
  ZKT_ASSERT_RC(ZKRC_ELOCKED, zkrc_lock_acquire(lk, ZKRC_NO_WAIT));

  revoke_until_released(s, p, node);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lk, ZKRC_NO_WAIT));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(lk));
  zkrc_lock_free(lk);
  g_free(node);
  zkrc_session_close(s);
  g_free(path);
}

/* Curator 5.4's InterProcessReadWriteLock sides are InterProcessMutex
 * subclasses: makeRevocable() applies to them.  A Curator reader or
 * writer made revocable releases when zkrc_lock_revoke() asks for its
 * node; then our writer has the lock at once. */
static void curator_side_case(const char *mode, const char *marker) {
  kill_live_peers();
  char *path = zkt_path("revoke-curator-rw");
  zkrc_session *s = zkt_session();
  peer *p = curator_class_peer("curator-rw", REVOKE_PEER, mode, path, "curator",
                               (char *)NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  char *node = peer_expect(p, "acquired", START_MS);
  CU_ASSERT_PTR_NOT_NULL_FATAL(node);
  CU_ASSERT(g_str_has_prefix(node, path) && strstr(node, marker));
  zkrc_rwlock *rw = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_rwlock_new(&rw, s, path, NULL));
  zkrc_lock *w = zkrc_rwlock_writer(rw);
  ZKT_ASSERT_RC(ZKRC_ELOCKED, zkrc_lock_acquire(w, ZKRC_NO_WAIT));

  revoke_until_released(s, p, node);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(w, ZKRC_NO_WAIT));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(w));
  zkrc_rwlock_free(rw);
  g_free(node);
  zkrc_session_close(s);
  g_free(path);
}

static void test_curator_reader_releases(void) {
  curator_side_case("hold-read", "__READ__");
}

static void test_curator_writer_releases(void) {
  curator_side_case("hold-write", "__WRIT__");
}

/* Our revocable holder is told when Curator's Revoker.attemptRevoke()
 * asks; Curator's Revoker ignores a node that is gone, as it says. */
static void test_curator_revoker_asks(void) {
  kill_live_peers();
  char *path = zkt_path("revoke-curator-revoker");
  zkrc_session *s = zkt_session();
  seen v;
  seen_init(&v);
  zkrc_lock *lk = new_lock(s, path, &v, 1);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lk, STEP_MS));
  char *node = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_node(lk, &node));

  peer *p = curator_class_peer("curator-revoker", REVOKE_PEER, "revoke", node,
                               (char *)NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  char *line = peer_expect(p, "revoked", START_MS);
  CU_ASSERT_PTR_NOT_NULL(line);
  g_free(line);
  CU_ASSERT_EQUAL(peer_finish(p, STEP_MS), 0);
  zkrc_lock_event *ev = seen_wait(&v, ZKRC_LOCK_REVOKE_REQUESTED, 1, STEP_MS);
  CU_ASSERT_PTR_NOT_NULL(ev);
  if (ev)
    CU_ASSERT_STRING_EQUAL(ev->node, node);
  event_free(ev);
  CU_ASSERT(zkrc_lock_is_held(lk));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(lk));

  zkrc_lock_free(lk);
  seen_clear(&v);
  free(node);
  zkrc_session_close(s);
  g_free(path);
}

static void add_suites(void) {
  zkt_configure(1, 1); /* a proxy, for the reconnection */
  ZKT_SUITE("revoke", {"holder told", test_holder_told},
            {"not revocable ignores", test_not_revocable_ignores},
            {"waiter told", test_waiter_told},
            {"missing node", test_missing_node}, {"bad input", test_bad_input},
            {"rwlock writer told", test_rwlock_writer_told},
            {"told after a reconnection", test_told_after_reconnect});
  ZKT_SUITE("revoke curator",
            {"curator holder releases", test_curator_holder_releases},
            {"curator revoker asks", test_curator_revoker_asks},
            {"curator reader releases", test_curator_reader_releases},
            {"curator writer releases", test_curator_writer_releases});
}

int main(void) { return zkt_run("test_revoke", add_suites); }
