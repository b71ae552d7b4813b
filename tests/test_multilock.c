/*
 * Several locks at once (zkrecipes/multilock.h) against a real
 * single-member ensemble: all or nothing, taken in the order of their
 * paths whatever the caller's order (so that opposite orders cannot
 * deadlock), one deadline, nothing left behind on failure, a lock lost
 * meanwhile fails the set, and bad sets refused before anything is sent;
 * mixed sets of locks and semaphore leases (zkrc_multilock) likewise.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <glib.h>

#include "testutil.h"

#define N_ROUNDS 25

static zkrc_lock *new_lock(zkrc_session *s, const char *path) {
  zkrc_lock *lk = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_new(&lk, s, path, NULL), ZKRC_OK);
  return lk;
}

/* Three lock paths whose order ("a" < "b" < "c") the tests rely on. */
typedef struct paths {
  char *p[3];
} paths;

static paths new_paths(const char *tag) {
  paths ps;
  for (int i = 0; i < 3; i++) {
    char *t = g_strdup_printf("%s-%c", tag, 'a' + i);
    ps.p[i] = zkt_path(t);
    g_free(t);
  }
  /* zkt_path() makes "/zkt/<tag>-<pid>-<n>": the tag decides the order. */
  CU_ASSERT_FATAL(strcmp(ps.p[0], ps.p[1]) < 0 && strcmp(ps.p[1], ps.p[2]) < 0);
  return ps;
}

static void free_paths(paths *ps) {
  for (int i = 0; i < 3; i++)
    g_free(ps->p[i]);
}

/* The multilock of @p locks, added in the order given. */
static zkrc_multilock *ml_of(zkrc_lock *const *locks, size_t count) {
  int rc;
  zkrc_multilock *ml = zkt_multilock_of(locks, count, &rc);
  ZKT_ASSERT_RC(ZKRC_OK, rc);
  CU_ASSERT_FATAL(ml != NULL);
  return ml;
}

/* ------------------------------------------------------- all at once */

static void test_acquire_all_holds_every_lock(void) {
  paths ps = new_paths("ml-all");
  zkrc_session *s = zkt_session(), *other = zkt_session();
  zkrc_lock *a = new_lock(s, ps.p[0]), *b = new_lock(s, ps.p[1]),
            *c = new_lock(s, ps.p[2]);
  zkrc_lock *set[] = {c, a, b}; /* not in path order */
  zkrc_multilock *ml = ml_of(set, 3);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_acquire(ml, 5000));
  for (int i = 0; i < 3; i++) {
    CU_ASSERT(zkrc_lock_is_held(set[i]));
    CU_ASSERT_EQUAL(zkrc_lock_depth(set[i]), 1);
    zkrc_lock *theirs = new_lock(other, ps.p[i]);
    ZKT_ASSERT_RC(ZKRC_ELOCKED, zkrc_lock_acquire(theirs, ZKRC_NO_WAIT));
    zkrc_lock_free(theirs);
  }
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_release(ml));
  zkrc_multilock_free(ml);
  zhandle_t *zh = zkt_raw();
  for (int i = 0; i < 3; i++) {
    CU_ASSERT(!zkrc_lock_is_held(set[i]));
    CU_ASSERT_EQUAL(zkt_nodes_left(zh, ps.p[i]), 0);
  }
  zookeeper_close(zh);
  for (int i = 0; i < 3; i++)
    zkrc_lock_free(set[i]);
  zkrc_session_close(s);
  zkrc_session_close(other);
  free_paths(&ps);
}

/* A thread that asks for a set of locks (its own session's objects). */
typedef struct asker {
  zkrc_lock *set[2];
  int rc;
  gint *inside; /* how many askers hold their set now (shared) */
  int overlaps;
  int rounds_done;
} asker;

static gpointer ask_once(gpointer data) {
  asker *k = data;
  zkrc_multilock *ml = zkt_multilock_of(k->set, 2, &k->rc);
  if (ml)
    k->rc = zkrc_multilock_acquire(ml, 10000);
  if (k->rc == ZKRC_OK)
    k->rc = zkrc_multilock_release(ml);
  zkrc_multilock_free(ml);
  return NULL;
}

/* Whoever holds its set first must have waited for the lock whose path
 * comes first, holding nothing: a caller's order of {b, a} taken as given
 * would hold b while waiting for a, and, against {a, b}, deadlock. */
static void test_locks_are_taken_in_path_order(void) {
  paths ps = new_paths("ml-order");
  zkrc_session *s1 = zkt_session(), *s2 = zkt_session(), *s3 = zkt_session();
  zkrc_lock *blocker = new_lock(s3, ps.p[0]);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(blocker, 5000));
  asker backwards = {.set = {new_lock(s1, ps.p[1]), new_lock(s1, ps.p[0])}};
  asker forwards = {.set = {new_lock(s2, ps.p[0]), new_lock(s2, ps.p[1])}};
  GThread *t1 = g_thread_new("backwards", ask_once, &backwards);
  zhandle_t *zh = zkt_raw();
  CU_ASSERT_FATAL(zkt_wait_children(zh, ps.p[0], 2, 5000));
  GThread *t2 = g_thread_new("forwards", ask_once, &forwards);
  CU_ASSERT_FATAL(zkt_wait_children(zh, ps.p[0], 3, 5000));
  /* Both wait for a; neither took b first. */
  CU_ASSERT(zkt_child_count(zh, ps.p[1]) <= 0);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(blocker));
  g_thread_join(t1);
  g_thread_join(t2);
  ZKT_ASSERT_RC(ZKRC_OK, backwards.rc);
  ZKT_ASSERT_RC(ZKRC_OK, forwards.rc);
  CU_ASSERT_EQUAL(zkt_nodes_left(zh, ps.p[0]), 0);
  CU_ASSERT_EQUAL(zkt_nodes_left(zh, ps.p[1]), 0);
  zookeeper_close(zh);
  for (int i = 0; i < 2; i++) {
    zkrc_lock_free(backwards.set[i]);
    zkrc_lock_free(forwards.set[i]);
  }
  zkrc_lock_free(blocker);
  zkrc_session_close(s1);
  zkrc_session_close(s2);
  zkrc_session_close(s3);
  free_paths(&ps);
}

static gpointer ask_rounds(gpointer data) {
  asker *k = data;
  zkrc_multilock *ml = zkt_multilock_of(k->set, 2, &k->rc);
  for (k->rounds_done = 0; ml && k->rounds_done < N_ROUNDS; k->rounds_done++) {
    k->rc = zkrc_multilock_acquire(ml, 10000);
    if (k->rc != ZKRC_OK)
      break;
    if (g_atomic_int_add(k->inside, 1) != 0)
      k->overlaps++;
    if (!zkrc_lock_is_held(k->set[0]) || !zkrc_lock_is_held(k->set[1]))
      k->overlaps++;
    g_atomic_int_add(k->inside, -1);
    k->rc = zkrc_multilock_release(ml);
    if (k->rc != ZKRC_OK)
      break;
  }
  zkrc_multilock_free(ml);
  return NULL;
}

/* Two threads (two sessions) asking for {a, b} and {b, a} again and again:
 * every round completes (no deadlock until a timeout) and the sets are
 * never held by both at once. */
static void test_opposite_orders_complete_without_overlap(void) {
  paths ps = new_paths("ml-opposite");
  zkrc_session *s1 = zkt_session(), *s2 = zkt_session();
  gint inside = 0;
  asker k1 = {.set = {new_lock(s1, ps.p[0]), new_lock(s1, ps.p[1])},
              .inside = &inside};
  asker k2 = {.set = {new_lock(s2, ps.p[1]), new_lock(s2, ps.p[0])},
              .inside = &inside};
  GThread *t1 = g_thread_new("ab", ask_rounds, &k1);
  GThread *t2 = g_thread_new("ba", ask_rounds, &k2);
  g_thread_join(t1);
  g_thread_join(t2);
  ZKT_ASSERT_RC(ZKRC_OK, k1.rc);
  ZKT_ASSERT_RC(ZKRC_OK, k2.rc);
  CU_ASSERT_EQUAL(k1.rounds_done, N_ROUNDS);
  CU_ASSERT_EQUAL(k2.rounds_done, N_ROUNDS);
  CU_ASSERT_EQUAL(k1.overlaps + k2.overlaps, 0);
  for (int i = 0; i < 2; i++) {
    zkrc_lock_free(k1.set[i]);
    zkrc_lock_free(k2.set[i]);
  }
  zkrc_session_close(s1);
  zkrc_session_close(s2);
  free_paths(&ps);
}

/* ------------------------------------------------------------ failures */

typedef struct failing {
  zkrc_lock *set[3];
  int timeout_ms;
  int rc;
  int depth[3]; /* this thread's depth on each lock after the call */
  int64_t took_ms;
} failing;

static gpointer ask_and_look(gpointer data) {
  failing *f = data;
  zkrc_multilock *ml = zkt_multilock_of(f->set, 3, &f->rc);
  int64_t start = zkt_now_ms();
  if (ml)
    f->rc = zkrc_multilock_acquire(ml, f->timeout_ms);
  f->took_ms = zkt_now_ms() - start;
  zkrc_multilock_free(ml); /* releases nothing: the call failed */
  for (int i = 0; i < 3; i++)
    f->depth[i] = zkrc_lock_depth(f->set[i]);
  return NULL;
}

/* b is held elsewhere: a is taken, b times out at the set's deadline, and
 * a is given back; c is never asked for.  No node of ours is left. */
static void test_timeout_gives_back_what_was_taken(void) {
  paths ps = new_paths("ml-timeout");
  zkrc_session *s = zkt_session(), *other = zkt_session();
  zkrc_lock *theirs = new_lock(other, ps.p[1]);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(theirs, 5000));
  failing f = {
      .set = {new_lock(s, ps.p[2]), new_lock(s, ps.p[1]), new_lock(s, ps.p[0])},
      .timeout_ms = 600};
  g_thread_join(g_thread_new("asker", ask_and_look, &f));
  ZKT_ASSERT_RC(ZKRC_ETIMEDOUT, f.rc);
  CU_ASSERT(f.took_ms >= 600);
  CU_ASSERT(f.took_ms < 600 + 1500);
  for (int i = 0; i < 3; i++)
    CU_ASSERT_EQUAL(f.depth[i], 0);
  zhandle_t *zh = zkt_raw();
  CU_ASSERT_EQUAL(zkt_nodes_left(zh, ps.p[0]), 0);
  CU_ASSERT_EQUAL(zkt_child_count(zh, ps.p[1]), 1); /* theirs only */
  CU_ASSERT(zkt_child_count(zh, ps.p[2]) <= 0);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(theirs));
  zookeeper_close(zh);
  for (int i = 0; i < 3; i++)
    zkrc_lock_free(f.set[i]);
  zkrc_lock_free(theirs);
  zkrc_session_close(s);
  zkrc_session_close(other);
  free_paths(&ps);
}

/* ZKRC_NO_WAIT: c is held elsewhere; a and b are given back at once. */
static void test_no_wait_fails_when_one_is_held(void) {
  paths ps = new_paths("ml-nowait");
  zkrc_session *s = zkt_session(), *other = zkt_session();
  zkrc_lock *theirs = new_lock(other, ps.p[2]);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(theirs, 5000));
  failing f = {
      .set = {new_lock(s, ps.p[0]), new_lock(s, ps.p[1]), new_lock(s, ps.p[2])},
      .timeout_ms = ZKRC_NO_WAIT};
  g_thread_join(g_thread_new("asker", ask_and_look, &f));
  ZKT_ASSERT_RC(ZKRC_ELOCKED, f.rc);
  for (int i = 0; i < 3; i++)
    CU_ASSERT_EQUAL(f.depth[i], 0);
  zhandle_t *zh = zkt_raw();
  CU_ASSERT_EQUAL(zkt_nodes_left(zh, ps.p[0]), 0);
  CU_ASSERT_EQUAL(zkt_nodes_left(zh, ps.p[1]), 0);
  CU_ASSERT_EQUAL(zkt_child_count(zh, ps.p[2]), 1);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(theirs));
  zookeeper_close(zh);
  for (int i = 0; i < 3; i++)
    zkrc_lock_free(f.set[i]);
  zkrc_lock_free(theirs);
  zkrc_session_close(s);
  zkrc_session_close(other);
  free_paths(&ps);
}

/* Told when lock a is lost. */
typedef struct loss {
  GMutex mu;
  GCond cond;
  int lost;
} loss;

static void on_a_event(zkrc_lock *lk, const zkrc_lock_event *info, void *arg) {
  loss *l = arg;
  g_mutex_lock(&l->mu);
  if (info->type == ZKRC_LOCK_LOST)
    l->lost = 1;
  g_cond_broadcast(&l->cond);
  g_mutex_unlock(&l->mu);
}

/* Has a been told LOST (waiting at most @p timeout_ms)? */
static int wait_lost(loss *l, int timeout_ms) {
  gint64 end = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
  g_mutex_lock(&l->mu);
  while (!l->lost && g_cond_wait_until(&l->cond, &l->mu, end))
    ;
  int lost = l->lost;
  g_mutex_unlock(&l->mu);
  return lost;
}

/* a (on its own session) is taken, then lost while b is awaited: the set
 * fails (at once: the next test measures that), and b is given back. */
static void test_lock_lost_meanwhile_fails_the_set(void) {
  paths ps = new_paths("ml-lost");
  zkrc_session *sa = zkt_session(), *sb = zkt_session(), *other = zkt_session();
  loss l = {.lost = 0};
  g_mutex_init(&l.mu);
  g_cond_init(&l.cond);
  zkrc_lock_options o;
  zkrc_lock_options_init(&o);
  o.on_event = on_a_event;
  o.event_arg = &l;
  zkrc_lock *a = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_new(&a, sa, ps.p[0], &o), ZKRC_OK);
  zkrc_lock *theirs = new_lock(other, ps.p[1]);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(theirs, 5000));
  failing f = {.set = {a, new_lock(sb, ps.p[1]), new_lock(sb, ps.p[2])},
               .timeout_ms = 20000};
  GThread *t = g_thread_new("asker", ask_and_look, &f);
  zhandle_t *zh = zkt_raw();
  CU_ASSERT_FATAL(zkt_wait_children(zh, ps.p[1], 2, 5000));
  zkt_expire(sa);
  CU_ASSERT(wait_lost(&l, 10000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(theirs));
  g_thread_join(t);
  ZKT_ASSERT_RC(ZKRC_ELOCKLOST, f.rc);
  for (int i = 0; i < 3; i++)
    CU_ASSERT_EQUAL(f.depth[i], 0);
  CU_ASSERT_EQUAL(zkt_nodes_left(zh, ps.p[1]), 0);
  CU_ASSERT_EQUAL(zkt_nodes_left(zh, ps.p[2]), 0);
  zookeeper_close(zh);
  for (int i = 0; i < 3; i++)
    zkrc_lock_free(f.set[i]);
  zkrc_lock_free(theirs);
  zkrc_session_close(sa);
  zkrc_session_close(sb);
  zkrc_session_close(other);
  g_cond_clear(&l.cond);
  g_mutex_clear(&l.mu);
  free_paths(&ps);
}

/* An asker that tells when its call returned. */
typedef struct timed_ask {
  failing f;
  GMutex mu;
  GCond cond;
  int64_t returned_us; /* monotonic; 0 until the call returned */
} timed_ask;

static gpointer ask_and_tell(gpointer data) {
  timed_ask *t = data;
  ask_and_look(&t->f);
  g_mutex_lock(&t->mu);
  t->returned_us = g_get_monotonic_time();
  g_cond_broadcast(&t->cond);
  g_mutex_unlock(&t->mu);
  return NULL;
}

/* When the asker returned (0: not by @p deadline_us). */
static int64_t wait_returned(timed_ask *t, int64_t deadline_us) {
  g_mutex_lock(&t->mu);
  while (t->returned_us == 0 &&
         g_cond_wait_until(&t->cond, &t->mu, deadline_us))
    ;
  int64_t at = t->returned_us;
  g_mutex_unlock(&t->mu);
  return at;
}

/* The only node under @p dir, deleted (as an operator would); the moment
 * the servers confirmed it, or 0 on failure. */
static int64_t delete_only_child(zhandle_t *zh, const char *dir) {
  struct String_vector kids = {0, NULL};
  int64_t at = 0;
  if (zoo_get_children(zh, dir, 0, &kids) == ZOK && kids.count == 1) {
    char *node = g_strdup_printf("%s/%s", dir, kids.data[0]);
    if (zoo_delete(zh, node, -1) == ZOK)
      at = g_get_monotonic_time();
    g_free(node);
  }
  deallocate_String_vector(&kids);
  return at;
}

/* a is taken, then its node is deleted while b (held elsewhere) is
 * awaited: the set fails with ZKRC_ELOCKLOST at once - not when b comes,
 * which here is only after the test gives up waiting, 3 s later - and
 * gives back what it took, its node in b's queue too. */
static void test_lock_deleted_meanwhile_fails_at_once(void) {
  paths ps = new_paths("ml-deleted");
  zkrc_session *s = zkt_session(), *other = zkt_session();
  loss l = {.lost = 0};
  g_mutex_init(&l.mu);
  g_cond_init(&l.cond);
  zkrc_lock_options o;
  zkrc_lock_options_init(&o);
  o.on_event = on_a_event; /* a watches its node */
  o.event_arg = &l;
  zkrc_lock *a = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_new(&a, s, ps.p[0], &o), ZKRC_OK);
  zkrc_lock *theirs = new_lock(other, ps.p[1]);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(theirs, 5000));
  timed_ask t = {.f = {.set = {a, new_lock(s, ps.p[1]), new_lock(s, ps.p[2])},
                       .timeout_ms = 20000}};
  g_mutex_init(&t.mu);
  g_cond_init(&t.cond);
  GThread *th = g_thread_new("asker", ask_and_tell, &t);
  zhandle_t *zh = zkt_raw();
  CU_ASSERT_FATAL(zkt_wait_children(zh, ps.p[1], 2, 5000)); /* b awaited */
  int64_t deleted = delete_only_child(zh, ps.p[0]);
  CU_ASSERT_FATAL(deleted > 0);
  int64_t returned = wait_returned(&t, deleted + 3 * G_USEC_PER_SEC);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(theirs)); /* b comes */
  g_thread_join(th);
  CU_ASSERT(wait_lost(&l, 10000));
  if (returned == 0)
    returned = wait_returned(&t, g_get_monotonic_time());
  printf("\n    ELOCKLOST %.0f ms after the deletion ",
         (double)(returned - deleted) / 1000.0);
  CU_ASSERT(returned - deleted < 200 * 1000);
  ZKT_ASSERT_RC(ZKRC_ELOCKLOST, t.f.rc);
  for (int i = 0; i < 3; i++)
    CU_ASSERT_EQUAL(t.f.depth[i], 0);
  for (int i = 0; i < 3; i++)
    CU_ASSERT_EQUAL(zkt_nodes_left(zh, ps.p[i]), 0);
  zookeeper_close(zh);
  for (int i = 0; i < 3; i++)
    zkrc_lock_free(t.f.set[i]);
  zkrc_lock_free(theirs);
  zkrc_session_close(s);
  zkrc_session_close(other);
  g_cond_clear(&t.cond);
  g_mutex_clear(&t.mu);
  g_cond_clear(&l.cond);
  g_mutex_clear(&l.mu);
  free_paths(&ps);
}

/* ---------------------------------------------------------- reentrancy */

static void test_locks_already_held_count_once_more(void) {
  paths ps = new_paths("ml-reentrant");
  zkrc_session *s = zkt_session();
  zkrc_lock *a = new_lock(s, ps.p[0]), *b = new_lock(s, ps.p[1]);
  zkrc_lock *set[] = {a, b};
  zkrc_multilock *ml = ml_of(set, 2);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(a, 5000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_acquire(ml, 5000));
  CU_ASSERT_EQUAL(zkrc_lock_depth(a), 2);
  CU_ASSERT_EQUAL(zkrc_lock_depth(b), 1);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_release(ml));
  zkrc_multilock_free(ml);
  CU_ASSERT_EQUAL(zkrc_lock_depth(a), 1);
  CU_ASSERT_EQUAL(zkrc_lock_depth(b), 0);
  CU_ASSERT(zkrc_lock_is_held(a));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(a));
  zkrc_lock_free(a);
  zkrc_lock_free(b);
  zkrc_session_close(s);
  free_paths(&ps);
}

/* ----------------------------------------------------------- bad input */

static void test_bad_sets_are_refused_and_change_nothing(void) {
  paths ps = new_paths("ml-bad");
  zkrc_session *s = zkt_session();
  zkrc_lock *a = new_lock(s, ps.p[0]), *b = new_lock(s, ps.p[1]),
            *a_again = new_lock(s, ps.p[0]);
  zkrc_lock *good[] = {a, b}, *with_null[] = {a, NULL},
            *same_path[] = {a, b, a_again};
  /* The one API: a bad set is refused as it is built (each add), an
   * empty one when it is acquired. */
  int rc = ZKRC_OK;
  CU_ASSERT_PTR_NULL(zkt_multilock_of(NULL, 2, &rc));
  ZKT_ASSERT_RC(ZKRC_EINVAL, rc);
  zkrc_multilock *empty = ml_of(good, 0);
  ZKT_ASSERT_RC(ZKRC_ESTATE, zkrc_multilock_acquire(empty, 1000));
  zkrc_multilock_free(empty);
  zkrc_multilock *full = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_new(&full));
  zkrc_lock **many = g_new0(zkrc_lock *, ZKRC_MULTILOCK_MAX + 1);
  for (int i = 0; i <= ZKRC_MULTILOCK_MAX; i++) {
    char *p = g_strdup_printf("%s/%04d", ps.p[2], i);
    many[i] = new_lock(s, p);
    g_free(p);
    rc = zkrc_multilock_add_lock(full, many[i]);
    if (i < ZKRC_MULTILOCK_MAX)
      ZKT_ASSERT_RC(ZKRC_OK, rc);
  }
  ZKT_ASSERT_RC(ZKRC_EINVAL, rc); /* one past the most */
  CU_ASSERT_EQUAL(zkrc_multilock_count(full), ZKRC_MULTILOCK_MAX);
  zkrc_multilock_free(full);
  for (int i = 0; i <= ZKRC_MULTILOCK_MAX; i++)
    zkrc_lock_free(many[i]);
  g_free(many);
  CU_ASSERT_PTR_NULL(zkt_multilock_of(with_null, 2, &rc));
  ZKT_ASSERT_RC(ZKRC_EINVAL, rc);
  CU_ASSERT_PTR_NULL(zkt_multilock_of(same_path, 3, &rc));
  ZKT_ASSERT_RC(ZKRC_EINVAL, rc);
  zkrc_multilock *ml = ml_of(good, 2);
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_multilock_acquire(ml, -5));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_multilock_acquire(NULL, 1000));
  zhandle_t *zh = zkt_raw();
  CU_ASSERT_EQUAL(zkt_exists(zh, ps.p[0]), 0); /* nothing was sent */
  CU_ASSERT_EQUAL(zkt_exists(zh, ps.p[1]), 0);

  /* Releasing a set that is not held releases nothing; nor does a
   * release by a thread that does not wholly hold it (zkrc_multilock's
   * ENOTOWNER: see test_mixed_misuse_is_refused). */
  ZKT_ASSERT_RC(ZKRC_ESTATE, zkrc_multilock_release(ml));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(a, 5000));
  ZKT_ASSERT_RC(ZKRC_ESTATE, zkrc_multilock_release(ml));
  CU_ASSERT_EQUAL(zkrc_lock_depth(a), 1);
  CU_ASSERT(zkrc_lock_is_held(a));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_multilock_release(NULL));
  CU_ASSERT_EQUAL(zkrc_lock_depth(a), 1);
  /* A set its thread no longer wholly holds (it gave b back on its own):
   * its release is refused and releases nothing. */
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_acquire(ml, 5000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(b));
  ZKT_ASSERT_RC(ZKRC_ENOTOWNER, zkrc_multilock_release(ml));
  CU_ASSERT_EQUAL(zkrc_lock_depth(a), 2);
  CU_ASSERT_EQUAL(zkrc_lock_depth(b), 0);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(b, 5000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_release(ml));
  CU_ASSERT_EQUAL(zkrc_lock_depth(a), 1);
  CU_ASSERT_EQUAL(zkrc_lock_depth(b), 0);
  zkrc_multilock_free(ml);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(a));
  zookeeper_close(zh);
  zkrc_lock_free(a);
  zkrc_lock_free(b);
  zkrc_lock_free(a_again);
  zkrc_session_close(s);
  free_paths(&ps);
}

/* -------------------------------------------------------- non-blocking */

/* Wait (at most 5 s) until no node is left under @p path: released holds
 * delete theirs in the background. */
typedef struct where {
  zhandle_t *zh;
  const char *path;
} where;

static int none_left(void *arg) {
  where *w = arg;
  return zkt_nodes_left(w->zh, w->path) == 0;
}

static int no_nodes_left(zhandle_t *zh, const char *path) {
  where w = {zh, path};
  return zkt_wait_for(none_left, &w, 5000);
}

/* What a set's completion told, and what it saw when it ran. */
typedef struct outcome {
  GMutex mu;
  GCond cond;
  int called;
  int status;
  zkrc_lock *failed;
  int held;      /* zkrc_multilock_hold_is_held() in the callback */
  int sorted;    /* the set's locks came in path order */
  int tokens_ok; /* every member hold had a token */
  zkrc_multilock_hold *set;
} outcome;

static void outcome_init(outcome *o) {
  memset(o, 0, sizeof *o);
  g_mutex_init(&o->mu);
  g_cond_init(&o->cond);
}

static void outcome_clear(outcome *o) {
  g_cond_clear(&o->cond);
  g_mutex_clear(&o->mu);
}

static void on_set_done(zkrc_multilock_hold *set,
                        const zkrc_multilock_acquired_info *info, void *arg) {
  outcome *o = arg;
  int held = zkrc_multilock_hold_is_held(set);
  int sorted = 1, tokens_ok = 1;
  int64_t tok = 0;
  for (size_t i = 0; i < zkrc_multilock_hold_count(set); i++) {
    if (i > 0 && strcmp(zkrc_lock_path(zkrc_multilock_hold_lock(set, i - 1)),
                        zkrc_lock_path(zkrc_multilock_hold_lock(set, i))) >= 0)
      sorted = 0;
    if (zkrc_lock_hold_token(zkrc_multilock_hold_member(set, i), &tok) !=
            ZKRC_OK ||
        tok <= 0)
      tokens_ok = 0;
  }
  g_mutex_lock(&o->mu);
  o->called++;
  o->status = info->status;
  o->failed = info->failed;
  o->held = held;
  o->sorted = sorted;
  o->tokens_ok = tokens_ok;
  o->set = info->status == ZKRC_OK ? set : NULL;
  g_cond_broadcast(&o->cond);
  g_mutex_unlock(&o->mu);
}

/* Wait (at most 15 s) for the completion; returns how many came. */
static int wait_outcome(outcome *o) {
  gint64 end = g_get_monotonic_time() + 15 * G_TIME_SPAN_SECOND;
  g_mutex_lock(&o->mu);
  while (o->called == 0 && g_cond_wait_until(&o->cond, &o->mu, end))
    ;
  int called = o->called;
  g_mutex_unlock(&o->mu);
  return called;
}

static void test_async_acquires_all_and_releases(void) {
  paths ps = new_paths("ml-async");
  zkrc_session *s = zkt_session();
  zkrc_lock *set[] = {new_lock(s, ps.p[2]), new_lock(s, ps.p[0]),
                      new_lock(s, ps.p[1])};
  outcome o;
  outcome_init(&o);
  zkrc_multilock_hold *h = NULL;
  ZKT_ASSERT_RC(ZKRC_OK,
                zkt_multilock_acquire_async(set, 3, 5000, on_set_done, &o, &h));
  CU_ASSERT_PTR_NOT_NULL(h);
  CU_ASSERT_EQUAL_FATAL(wait_outcome(&o), 1);
  ZKT_ASSERT_RC(ZKRC_OK, o.status);
  CU_ASSERT(o.held);
  CU_ASSERT(o.sorted);
  CU_ASSERT(o.tokens_ok);
  CU_ASSERT_PTR_EQUAL(o.set, h);
  CU_ASSERT_PTR_EQUAL(zkrc_multilock_hold_arg(h), &o);
  ZKT_ASSERT_RC(ZKRC_ESTATE, zkrc_multilock_hold_cancel(h));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_hold_release(h));
  zhandle_t *zh = zkt_raw();
  for (int i = 0; i < 3; i++)
    CU_ASSERT(no_nodes_left(zh, ps.p[i]));
  zookeeper_close(zh);
  for (int i = 0; i < 3; i++)
    zkrc_lock_free(set[i]);
  zkrc_session_close(s);
  outcome_clear(&o);
  free_paths(&ps);
}

/* The second path held by another session, and our set of both (listed
 * second path first) with its outcome. */
typedef struct second_held {
  paths ps;
  zkrc_session *s, *other;
  zkrc_lock *theirs;
  zkrc_lock *set[2]; /* ours on ps.p[1], then on ps.p[0] */
  outcome o;
  zhandle_t *zh;
} second_held;

static void second_held_open(second_held *f, const char *tag) {
  f->ps = new_paths(tag);
  f->s = zkt_session();
  f->other = zkt_session();
  f->theirs = new_lock(f->other, f->ps.p[1]);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(f->theirs, 5000));
  f->set[0] = new_lock(f->s, f->ps.p[1]);
  f->set[1] = new_lock(f->s, f->ps.p[0]);
  outcome_init(&f->o);
  f->zh = zkt_raw();
}

/* What a failed set leaves: their node alone on the second path, none of
 * ours on the first; then everything closed. */
static void second_held_close(second_held *f) {
  CU_ASSERT(zkt_wait_children(f->zh, f->ps.p[1], 1, 5000));
  CU_ASSERT(no_nodes_left(f->zh, f->ps.p[0]));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(f->theirs));
  zookeeper_close(f->zh);
  for (int i = 0; i < 2; i++)
    zkrc_lock_free(f->set[i]);
  zkrc_lock_free(f->theirs);
  zkrc_session_close(f->s);
  zkrc_session_close(f->other);
  outcome_clear(&f->o);
  free_paths(&f->ps);
}

static void test_async_timeout_gives_back_what_was_taken(void) {
  second_held f;
  second_held_open(&f, "ml-async-timeout");
  int64_t start = zkt_now_ms();
  ZKT_ASSERT_RC(ZKRC_OK, zkt_multilock_acquire_async(f.set, 2, 600, on_set_done,
                                                     &f.o, NULL));
  CU_ASSERT_EQUAL_FATAL(wait_outcome(&f.o), 1);
  int64_t took = zkt_now_ms() - start;
  ZKT_ASSERT_RC(ZKRC_ETIMEDOUT, f.o.status);
  CU_ASSERT_PTR_EQUAL(f.o.failed, f.set[0]); /* the lock on ps.p[1] */
  CU_ASSERT(took >= 600 && took < 600 + 1500);
  second_held_close(&f);
}

static void test_async_cancel_gives_back_what_was_taken(void) {
  second_held f;
  second_held_open(&f, "ml-async-cancel");
  zkrc_multilock_hold *h = NULL;
  ZKT_ASSERT_RC(ZKRC_OK,
                zkt_multilock_acquire_async(f.set, 2, ZKRC_WAIT_FOREVER,
                                            on_set_done, &f.o, &h));
  /* The first path is ours; we queue on the second. */
  CU_ASSERT_FATAL(zkt_wait_children(f.zh, f.ps.p[1], 2, 5000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_hold_cancel(h));
  CU_ASSERT_EQUAL_FATAL(wait_outcome(&f.o), 1);
  ZKT_ASSERT_RC(ZKRC_ECANCELED, f.o.status);
  second_held_close(&f);
}

/* A held set whose session expires: one LOST per member.  An application
 * that releases the set on the first (finding it with
 * zkrc_lock_hold_arg(info->hold), as the header says) gets no second one
 * naming the freed set: a released hold is told nothing more. */
typedef struct lost_watch {
  GMutex mu;
  GCond cond;
  zkrc_multilock_hold *set; /* NULL once released */
  int lost_events;
  int after_release; /* LOST events delivered after the set was released */
} lost_watch;

static void on_member_event(zkrc_lock *lk, const zkrc_lock_event *info,
                            void *arg) {
  lost_watch *w = arg;
  if (info->type != ZKRC_LOCK_LOST)
    return;
  g_mutex_lock(&w->mu);
  w->lost_events++;
  zkrc_multilock_hold *set = w->set;
  if (set && zkrc_lock_hold_arg(info->hold) == (void *)set) {
    w->set = NULL;
    g_mutex_unlock(&w->mu);
    ZKT_ASSERT_RC(ZKRC_ELOCKLOST, zkrc_multilock_hold_release(set));
    g_mutex_lock(&w->mu);
  } else {
    w->after_release++;
  }
  g_cond_broadcast(&w->cond);
  g_mutex_unlock(&w->mu);
}

static void test_no_member_event_after_set_release(void) {
  paths ps = new_paths("ml-lost-events");
  zkrc_session *s = zkt_session();
  lost_watch w = {.set = NULL};
  g_mutex_init(&w.mu);
  g_cond_init(&w.cond);
  zkrc_lock_options lo;
  zkrc_lock_options_init(&lo);
  lo.on_event = on_member_event;
  lo.event_arg = &w;
  zkrc_lock *set[2] = {NULL, NULL};
  for (int i = 0; i < 2; i++)
    CU_ASSERT_EQUAL_FATAL(zkrc_lock_new(&set[i], s, ps.p[i], &lo), ZKRC_OK);
  outcome o;
  outcome_init(&o);
  zkrc_multilock_hold *h = NULL;
  ZKT_ASSERT_RC(ZKRC_OK,
                zkt_multilock_acquire_async(set, 2, 5000, on_set_done, &o, &h));
  CU_ASSERT_EQUAL_FATAL(wait_outcome(&o), 1);
  ZKT_ASSERT_RC(ZKRC_OK, o.status);
  g_mutex_lock(&w.mu);
  w.set = h;
  g_mutex_unlock(&w.mu);
  zkt_reopened r = {s, zkrc_session_id(s)};
  zkt_expire(s);
  gint64 end = g_get_monotonic_time() + 15 * G_TIME_SPAN_SECOND;
  g_mutex_lock(&w.mu);
  while (w.lost_events < 1 && g_cond_wait_until(&w.cond, &w.mu, end))
    ;
  g_mutex_unlock(&w.mu);
  /* Both LOSTs were posted when the expiry was announced, before the new
   * session: once it is there, closing runs whatever is still queued. */
  CU_ASSERT(zkt_wait_for(zkt_session_reopened, &r, 15000));
  zkrc_session_close(s);
  CU_ASSERT_EQUAL(w.lost_events, 1);
  CU_ASSERT_EQUAL(w.after_release, 0);
  for (int i = 0; i < 2; i++)
    zkrc_lock_free(set[i]);
  outcome_clear(&o);
  g_cond_clear(&w.cond);
  g_mutex_clear(&w.mu);
  free_paths(&ps);
}

static void test_async_bad_sets_are_refused(void) {
  paths ps = new_paths("ml-async-bad");
  zkrc_session *s = zkt_session();
  zkrc_lock *a = new_lock(s, ps.p[0]), *a_again = new_lock(s, ps.p[0]);
  zkrc_lock *same_path[] = {a, a_again}, *one[] = {a};
  outcome o;
  outcome_init(&o);
  zkrc_multilock_hold *h = (zkrc_multilock_hold *)&o; /* must be left alone */
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkt_multilock_acquire_async(one, 1, 1000, NULL, &o, &h));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkt_multilock_acquire_async(same_path, 2, 1000,
                                                         on_set_done, &o, &h));
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkt_multilock_acquire_async(one, 1, -7, on_set_done, &o, &h));
  CU_ASSERT_PTR_EQUAL(h, (zkrc_multilock_hold *)&o);
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_multilock_hold_cancel(NULL));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_multilock_hold_release(NULL));
  CU_ASSERT_EQUAL(zkrc_multilock_hold_is_held(NULL), 0);
  CU_ASSERT_PTR_NULL(zkrc_multilock_hold_member(NULL, 0));
  zhandle_t *zh = zkt_raw();
  CU_ASSERT_EQUAL(zkt_exists(zh, ps.p[0]), 0); /* nothing was sent */
  zookeeper_close(zh);
  CU_ASSERT_EQUAL(o.called, 0);
  zkrc_lock_free(a);
  zkrc_lock_free(a_again);
  zkrc_session_close(s);
  outcome_clear(&o);
  free_paths(&ps);
}

/* ------------------------------------------- mixed sets (zkrc_multilock) */

static zkrc_semaphore *new_semaphore(zkrc_session *s, const char *path, int n) {
  zkrc_semaphore *sem = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_semaphore_new(&sem, s, path, n, NULL), ZKRC_OK);
  return sem;
}

/* A lock, a lease of a one-lease semaphore and a read-write lock's writer,
 * added in no particular order: all held together (others are refused
 * each), listed in path order with their tokens and nodes, and gone from
 * the servers after the release. */
static void test_mixed_set_holds_locks_and_leases(void) {
  paths ps = new_paths("ml-mixed");
  zkrc_session *s = zkt_session(), *other = zkt_session();
  zkrc_lock *a = new_lock(s, ps.p[0]);
  zkrc_semaphore *b = new_semaphore(s, ps.p[1], 1);
  zkrc_rwlock *c = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_rwlock_new(&c, s, ps.p[2], NULL));
  zkrc_multilock *ml = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_new(&ml));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_add_lock(ml, zkrc_rwlock_writer(c)));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_add_semaphore(ml, b));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_add_lock(ml, a));
  CU_ASSERT_EQUAL(zkrc_multilock_count(ml), 3);
  for (size_t i = 0; i < 3; i++)
    CU_ASSERT_STRING_EQUAL(zkrc_multilock_path(ml, i), ps.p[i]);
  int64_t tok = 0;
  char *node = NULL;
  /* not held yet */
  ZKT_ASSERT_RC(ZKRC_ESTATE, zkrc_multilock_token(ml, 0, &tok));
  ZKT_ASSERT_RC(ZKRC_ESTATE, zkrc_multilock_node(ml, 0, &node));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_multilock_token(ml, 3, &tok));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_multilock_token(ml, 0, NULL));
  CU_ASSERT_EQUAL(tok, 0);
  CU_ASSERT_PTR_NULL(node);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_acquire(ml, 5000));
  CU_ASSERT(zkrc_multilock_is_held(ml));
  zhandle_t *zh = zkt_raw();
  for (size_t i = 0; i < 3; i++) {
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_node(ml, i, &node));
    CU_ASSERT_FATAL(node != NULL);
    CU_ASSERT(g_str_has_prefix(node, ps.p[i]));
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_token(ml, i, &tok));
    CU_ASSERT_EQUAL(tok, zkt_czxid(zh, node));
    free(node);
  }
  zkrc_lock *their_a = new_lock(other, ps.p[0]);
  ZKT_ASSERT_RC(ZKRC_ELOCKED, zkrc_lock_acquire(their_a, ZKRC_NO_WAIT));
  zkrc_semaphore *their_b = new_semaphore(other, ps.p[1], 1);
  zkrc_semaphore_lease *lease = NULL;
  ZKT_ASSERT_RC(ZKRC_ELOCKED,
                zkrc_semaphore_acquire(their_b, ZKRC_NO_WAIT, &lease));
  zkrc_rwlock *their_c = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_rwlock_new(&their_c, other, ps.p[2], NULL));
  ZKT_ASSERT_RC(ZKRC_ELOCKED,
                zkrc_lock_acquire(zkrc_rwlock_reader(their_c), ZKRC_NO_WAIT));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_release(ml));
  CU_ASSERT(!zkrc_multilock_is_held(ml));
  CU_ASSERT_EQUAL(zkt_nodes_left(zh, ps.p[0]), 0);
  CU_ASSERT(zkt_wait_semaphore_empty(zh, ps.p[1], 5000));
  CU_ASSERT_EQUAL(zkt_nodes_left(zh, ps.p[2]), 0);
  zookeeper_close(zh);
  zkrc_multilock_free(ml);
  zkrc_lock_free(a);
  zkrc_lock_free(their_a);
  zkrc_semaphore_free(b);
  zkrc_semaphore_free(their_b);
  zkrc_rwlock_free(c);
  zkrc_rwlock_free(their_c);
  zkrc_session_close(s);
  zkrc_session_close(other);
  free_paths(&ps);
}

/* The semaphore (whose path comes last) has its one lease held elsewhere:
 * the lock taken first is given back at the set's deadline, and no node
 * of ours is left. */
static void test_mixed_timeout_gives_back_the_lock(void) {
  paths ps = new_paths("ml-mixto");
  zkrc_session *s = zkt_session(), *other = zkt_session();
  zkrc_semaphore *theirs = new_semaphore(other, ps.p[1], 1);
  zkrc_semaphore_lease *their_lease = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_acquire(theirs, 5000, &their_lease));
  zkrc_lock *a = new_lock(s, ps.p[0]);
  zkrc_semaphore *b = new_semaphore(s, ps.p[1], 1);
  zkrc_multilock *ml = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_new(&ml));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_add_semaphore(ml, b));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_add_lock(ml, a));
  int64_t start = zkt_now_ms();
  ZKT_ASSERT_RC(ZKRC_ETIMEDOUT, zkrc_multilock_acquire(ml, 600));
  int64_t took = zkt_now_ms() - start;
  CU_ASSERT(took >= 600);
  CU_ASSERT(took < 600 + 1500);
  CU_ASSERT(!zkrc_multilock_is_held(ml));
  CU_ASSERT_EQUAL(zkrc_lock_depth(a), 0);
  ZKT_ASSERT_RC(ZKRC_ESTATE, zkrc_multilock_release(ml));
  zhandle_t *zh = zkt_raw();
  CU_ASSERT_EQUAL(zkt_nodes_left(zh, ps.p[0]), 0);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_lease_release(their_lease));
  CU_ASSERT(zkt_wait_semaphore_empty(zh, ps.p[1], 5000));
  zookeeper_close(zh);
  zkrc_multilock_free(ml);
  zkrc_lock_free(a);
  zkrc_semaphore_free(b);
  zkrc_semaphore_free(theirs);
  zkrc_session_close(s);
  zkrc_session_close(other);
  free_paths(&ps);
}

/* A thread taking a mixed set {lock, one-lease semaphore} in rounds. */
typedef struct mixed_asker {
  zkrc_session *s;
  const char *lock_path, *sem_path;
  gboolean semaphore_first; /* the order it adds them in */
  gint *inside;
  int rc, overlaps, rounds_done;
} mixed_asker;

static gpointer mixed_rounds(gpointer data) {
  mixed_asker *k = data;
  zkrc_lock *lk = NULL;
  zkrc_semaphore *sem = NULL;
  zkrc_multilock *ml = NULL;
  k->rc = zkrc_lock_new(&lk, k->s, k->lock_path, NULL);
  if (k->rc == ZKRC_OK)
    k->rc = zkrc_semaphore_new(&sem, k->s, k->sem_path, 1, NULL);
  if (k->rc == ZKRC_OK)
    k->rc = zkrc_multilock_new(&ml);
  if (k->rc == ZKRC_OK)
    k->rc = k->semaphore_first ? zkrc_multilock_add_semaphore(ml, sem)
                               : zkrc_multilock_add_lock(ml, lk);
  if (k->rc == ZKRC_OK)
    k->rc = k->semaphore_first ? zkrc_multilock_add_lock(ml, lk)
                               : zkrc_multilock_add_semaphore(ml, sem);
  for (k->rounds_done = 0; k->rc == ZKRC_OK && k->rounds_done < N_ROUNDS;
       k->rounds_done++) {
    if ((k->rc = zkrc_multilock_acquire(ml, 10000)) != ZKRC_OK)
      break;
    if (g_atomic_int_add(k->inside, 1) != 0 || !zkrc_multilock_is_held(ml))
      k->overlaps++;
    g_atomic_int_add(k->inside, -1);
    k->rc = zkrc_multilock_release(ml);
  }
  zkrc_multilock_free(ml);
  zkrc_semaphore_free(sem);
  zkrc_lock_free(lk);
  return NULL;
}

/* Two sessions adding {lock, semaphore} in opposite orders, round after
 * round: every round completes (no deadlock) and never both at once. */
static void test_mixed_opposite_orders_complete_without_overlap(void) {
  paths ps = new_paths("ml-mixord");
  gint inside = 0;
  mixed_asker k[2];
  for (int i = 0; i < 2; i++)
    k[i] = (mixed_asker){.s = zkt_session(),
                         .lock_path = ps.p[0],
                         .sem_path = ps.p[1],
                         .semaphore_first = i == 1,
                         .inside = &inside};
  GThread *t[2];
  for (int i = 0; i < 2; i++)
    t[i] = g_thread_new("mixed", mixed_rounds, &k[i]);
  for (int i = 0; i < 2; i++) {
    g_thread_join(t[i]);
    ZKT_ASSERT_RC(ZKRC_OK, k[i].rc);
    CU_ASSERT_EQUAL(k[i].rounds_done, N_ROUNDS);
    CU_ASSERT_EQUAL(k[i].overlaps, 0);
  }
  zhandle_t *zh = zkt_raw();
  CU_ASSERT_EQUAL(zkt_nodes_left(zh, ps.p[0]), 0);
  CU_ASSERT(zkt_wait_semaphore_empty(zh, ps.p[1], 5000));
  zookeeper_close(zh);
  for (int i = 0; i < 2; i++)
    zkrc_session_close(k[i].s);
  free_paths(&ps);
}

static gpointer release_elsewhere(gpointer data) {
  return GINT_TO_POINTER(zkrc_multilock_release(data));
}

/* Misuse is refused with a named error and changes nothing. */
static void test_mixed_misuse_is_refused(void) {
  paths ps = new_paths("ml-mixbad");
  zkrc_session *s = zkt_session();
  zkrc_lock *a = new_lock(s, ps.p[0]);
  zkrc_lock *a_again = new_lock(s, ps.p[0]);
  zkrc_semaphore *b = new_semaphore(s, ps.p[1], 2);
  zkrc_semaphore *on_a = new_semaphore(s, ps.p[0], 2);
  zkrc_multilock *ml = NULL;
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_multilock_new(NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_new(&ml));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_multilock_add_lock(NULL, a));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_multilock_add_lock(ml, NULL));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_multilock_add_semaphore(ml, NULL));
  ZKT_ASSERT_RC(ZKRC_ESTATE, zkrc_multilock_acquire(ml, 1000)); /* empty */
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_add_lock(ml, a));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_multilock_add_lock(ml, a_again));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_multilock_add_semaphore(ml, on_a));
  CU_ASSERT_EQUAL(zkrc_multilock_count(ml), 1);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_add_semaphore(ml, b));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_multilock_acquire(ml, -5));
  ZKT_ASSERT_RC(ZKRC_ESTATE, zkrc_multilock_release(ml)); /* not held */
  zhandle_t *zh = zkt_raw();
  CU_ASSERT_EQUAL(zkt_exists(zh, ps.p[0]), 0); /* nothing was sent */
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_acquire(ml, 5000));
  ZKT_ASSERT_RC(ZKRC_ESTATE, zkrc_multilock_acquire(ml, 5000));
  ZKT_ASSERT_RC(ZKRC_ESTATE, zkrc_multilock_add_lock(ml, a_again));
  /* Another thread does not hold the lock: it cannot release the set. */
  GThread *t = g_thread_new("other", release_elsewhere, ml);
  ZKT_ASSERT_RC(ZKRC_ENOTOWNER, GPOINTER_TO_INT(g_thread_join(t)));
  CU_ASSERT(zkrc_multilock_is_held(ml));
  CU_ASSERT_EQUAL(zkt_child_count(zh, ps.p[0]), 1);
  /* Freeing a held set releases it (the deletes in the background). */
  zkrc_multilock_free(ml);
  CU_ASSERT_EQUAL(zkrc_lock_depth(a), 0);
  CU_ASSERT(zkt_wait_children_or_gone(zh, ps.p[0], 0, 5000));
  CU_ASSERT(zkt_wait_semaphore_empty(zh, ps.p[1], 5000));
  zookeeper_close(zh);
  zkrc_lock_free(a);
  zkrc_lock_free(a_again);
  zkrc_semaphore_free(b);
  zkrc_semaphore_free(on_a);
  zkrc_session_close(s);
  free_paths(&ps);
}

static void on_mixed_done(zkrc_multilock_hold *set,
                          const zkrc_multilock_acquired_info *info, void *arg) {
  outcome *o = arg;
  int held = zkrc_multilock_hold_is_held(set);
  int tokens_ok = 1;
  int64_t tok = 0;
  for (size_t i = 0; i < zkrc_multilock_hold_count(set); i++)
    if (zkrc_multilock_hold_token(set, i, &tok) != ZKRC_OK || tok <= 0)
      tokens_ok = 0;
  g_mutex_lock(&o->mu);
  o->called++;
  o->status = info->status;
  o->failed = info->failed;
  o->held = held;
  o->tokens_ok = tokens_ok;
  o->set = info->status == ZKRC_OK ? set : NULL;
  g_cond_broadcast(&o->cond);
  g_mutex_unlock(&o->mu);
}

static gpointer release_set_elsewhere(gpointer data) {
  return GINT_TO_POINTER(zkrc_multilock_hold_release(data));
}

/* A mixed set, non-blocking: a lock, a one-lease semaphore whose lease is
 * held elsewhere, and a writer side, in path order.  The lock is taken,
 * the lease awaited, the writer not asked for yet; once the lease is free
 * the set completes held, with every member's token (the lease's from its
 * node); the set hold (not a thread) holds them, so another thread
 * releases them; nothing is left.  The multilock object was freed right
 * after the start (the set copied its members). */
static void test_mixed_async_acquires_and_releases(void) {
  paths ps = new_paths("ml-mixasync");
  zkrc_session *s = zkt_session(), *other = zkt_session();
  zkrc_semaphore *theirs = new_semaphore(other, ps.p[1], 1);
  zkrc_semaphore_lease *their_lease = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_acquire(theirs, 5000, &their_lease));
  zkrc_lock *a = new_lock(s, ps.p[0]);
  zkrc_semaphore *b = new_semaphore(s, ps.p[1], 1);
  zkrc_rwlock *c = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_rwlock_new(&c, s, ps.p[2], NULL));
  zkrc_multilock *ml = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_new(&ml));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_add_lock(ml, zkrc_rwlock_writer(c)));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_add_semaphore(ml, b));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_add_lock(ml, a));
  outcome o;
  outcome_init(&o);
  zkrc_multilock_hold *h = NULL;
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_multilock_acquire_async(ml, 10000, on_mixed_done, &o, &h));
  zkrc_multilock_free(ml);
  zhandle_t *zh = zkt_raw();
  char *leases = g_strdup_printf("%s/leases", ps.p[1]);
  CU_ASSERT_FATAL(zkt_wait_children(zh, leases, 2, 5000)); /* ours waits */
  CU_ASSERT_EQUAL(zkt_child_count(zh, ps.p[0]), 1);        /* a is ours */
  CU_ASSERT(zkt_child_count(zh, ps.p[2]) <= 0);            /* c not yet */
  CU_ASSERT_EQUAL(o.called, 0);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_lease_release(their_lease));
  CU_ASSERT_EQUAL_FATAL(wait_outcome(&o), 1);
  ZKT_ASSERT_RC(ZKRC_OK, o.status);
  CU_ASSERT(o.held);
  CU_ASSERT(o.tokens_ok);
  CU_ASSERT_PTR_EQUAL(o.set, h);
  CU_ASSERT_PTR_NOT_NULL(zkrc_multilock_hold_member(h, 0));
  CU_ASSERT_PTR_NULL(zkrc_multilock_hold_member(h, 1));
  CU_ASSERT_PTR_NULL(zkrc_multilock_hold_lock(h, 1));
  zkrc_semaphore_lease *lease = zkrc_multilock_hold_lease(h, 1);
  CU_ASSERT_FATAL(lease != NULL);
  char *node = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_lease_node(lease, &node));
  int64_t tok = 0;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_hold_token(h, 1, &tok));
  CU_ASSERT_EQUAL(tok, zkt_czxid(zh, node));
  char *same = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_hold_node(h, 1, &same));
  CU_ASSERT_STRING_EQUAL(same, node);
  free(same);
  free(node);
  GThread *t = g_thread_new("releaser", release_set_elsewhere, h);
  ZKT_ASSERT_RC(ZKRC_OK, GPOINTER_TO_INT(g_thread_join(t)));
  CU_ASSERT(no_nodes_left(zh, ps.p[0]));
  CU_ASSERT(zkt_wait_semaphore_empty(zh, ps.p[1], 5000));
  CU_ASSERT(no_nodes_left(zh, ps.p[2]));
  zookeeper_close(zh);
  g_free(leases);
  zkrc_lock_free(a);
  zkrc_semaphore_free(b);
  zkrc_semaphore_free(theirs);
  zkrc_rwlock_free(c);
  zkrc_session_close(s);
  zkrc_session_close(other);
  outcome_clear(&o);
  free_paths(&ps);
}

/* Cancelled while it waits for a lease: ZKRC_ECANCELED (no failed lock:
 * the member was a semaphore), the lock it took given back, only their
 * lease left. */
static void test_mixed_async_cancel_gives_back_the_lock(void) {
  paths ps = new_paths("ml-mixcancel");
  zkrc_session *s = zkt_session(), *other = zkt_session();
  zkrc_semaphore *theirs = new_semaphore(other, ps.p[1], 1);
  zkrc_semaphore_lease *their_lease = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_acquire(theirs, 5000, &their_lease));
  zkrc_lock *a = new_lock(s, ps.p[0]);
  zkrc_semaphore *b = new_semaphore(s, ps.p[1], 1);
  zkrc_multilock *ml = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_new(&ml));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_add_semaphore(ml, b));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_add_lock(ml, a));
  outcome o;
  outcome_init(&o);
  zkrc_multilock_hold *h = NULL;
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_multilock_acquire_async(ml, 10000, on_mixed_done, &o, &h));
  zhandle_t *zh = zkt_raw();
  char *leases = g_strdup_printf("%s/leases", ps.p[1]);
  CU_ASSERT_FATAL(zkt_wait_children(zh, leases, 2, 5000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_hold_cancel(h));
  CU_ASSERT_EQUAL_FATAL(wait_outcome(&o), 1);
  ZKT_ASSERT_RC(ZKRC_ECANCELED, o.status);
  CU_ASSERT_PTR_NULL(o.failed);
  CU_ASSERT(no_nodes_left(zh, ps.p[0]));
  CU_ASSERT(zkt_wait_children(zh, leases, 1, 5000)); /* theirs */
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_lease_release(their_lease));
  CU_ASSERT(zkt_wait_semaphore_empty(zh, ps.p[1], 5000));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_multilock_acquire_async(
                                 NULL, 1000, on_mixed_done, &o, NULL));
  zkrc_multilock *empty = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_new(&empty));
  ZKT_ASSERT_RC(ZKRC_ESTATE, zkrc_multilock_acquire_async(
                                 empty, 1000, on_mixed_done, &o, NULL));
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkrc_multilock_acquire_async(ml, 1000, NULL, &o, NULL));
  CU_ASSERT_EQUAL(o.called, 1); /* no completion for the refused ones */
  zkrc_multilock_free(empty);
  zookeeper_close(zh);
  g_free(leases);
  zkrc_multilock_free(ml);
  zkrc_lock_free(a);
  zkrc_semaphore_free(b);
  zkrc_semaphore_free(theirs);
  zkrc_session_close(s);
  zkrc_session_close(other);
  outcome_clear(&o);
  free_paths(&ps);
}

/* Against the header's advice, a member lock already taken is freed while
 * the set waits for the next: its hold is given back, and when the set's
 * last member comes the set fails with ZKRC_ELOCKLOST, once, leaving no
 * node (and no dangling hold: valgrind). */
static void test_async_member_freed_meanwhile_fails_the_set(void) {
  second_held f;
  second_held_open(&f, "ml-freed");
  zkrc_multilock_hold *h = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkt_multilock_acquire_async(f.set, 2, 10000,
                                                     on_set_done, &f.o, &h));
  CU_ASSERT_FATAL(zkt_wait_children(f.zh, f.ps.p[1], 2, 5000)); /* waits */
  CU_ASSERT_EQUAL(zkt_child_count(f.zh, f.ps.p[0]), 1);         /* took a */
  zkrc_lock_free(f.set[1]);            /* ours on the first path, taken */
  f.set[1] = new_lock(f.s, f.ps.p[0]); /* for second_held_close */
  CU_ASSERT(zkt_wait_children(f.zh, f.ps.p[0], -1, 5000) ||
            zkt_child_count(f.zh, f.ps.p[0]) == 0);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(f.theirs));
  CU_ASSERT_EQUAL_FATAL(wait_outcome(&f.o), 1);
  ZKT_ASSERT_RC(ZKRC_ELOCKLOST, f.o.status);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(f.theirs, 5000)); /* given back */
  second_held_close(&f);
}

static void add_suites(void) {
  ZKT_SUITE(
      "multilock",
      {"acquire_all_holds_every_lock", test_acquire_all_holds_every_lock},
      {"locks_are_taken_in_path_order", test_locks_are_taken_in_path_order},
      {"opposite_orders_complete_without_overlap",
       test_opposite_orders_complete_without_overlap},
      {"timeout_gives_back_what_was_taken",
       test_timeout_gives_back_what_was_taken},
      {"no_wait_fails_when_one_is_held", test_no_wait_fails_when_one_is_held},
      {"lock_lost_meanwhile_fails_the_set",
       test_lock_lost_meanwhile_fails_the_set},
      {"lock_deleted_meanwhile_fails_at_once",
       test_lock_deleted_meanwhile_fails_at_once},
      {"locks_already_held_count_once_more",
       test_locks_already_held_count_once_more},
      {"bad_sets_are_refused_and_change_nothing",
       test_bad_sets_are_refused_and_change_nothing},
      {"async_acquires_all_and_releases", test_async_acquires_all_and_releases},
      {"async_timeout_gives_back_what_was_taken",
       test_async_timeout_gives_back_what_was_taken},
      {"async_cancel_gives_back_what_was_taken",
       test_async_cancel_gives_back_what_was_taken},
      {"async_bad_sets_are_refused", test_async_bad_sets_are_refused},
      {"async_member_freed_meanwhile_fails_the_set",
       test_async_member_freed_meanwhile_fails_the_set},
      {"no_member_event_after_set_release",
       test_no_member_event_after_set_release},
      {"mixed_set_holds_locks_and_leases",
       test_mixed_set_holds_locks_and_leases},
      {"mixed_timeout_gives_back_the_lock",
       test_mixed_timeout_gives_back_the_lock},
      {"mixed_opposite_orders_complete_without_overlap",
       test_mixed_opposite_orders_complete_without_overlap},
      {"mixed_misuse_is_refused", test_mixed_misuse_is_refused},
      {"mixed_async_acquires_and_releases",
       test_mixed_async_acquires_and_releases},
      {"mixed_async_cancel_gives_back_the_lock",
       test_mixed_async_cancel_gives_back_the_lock});
}

int main(void) { return zkt_run("test_multilock", add_suites); }
