/*
 * The semaphore against a real single-member ensemble: never more than N
 * holders (holds.h's checker with a capacity), every contender served, a
 * waiter admitted at a release, only one waiter watching the leases (the
 * servers' wchp), deadlines that leave no node under locks/ or leases/,
 * a try, loss told when a holder's session expires, the non-blocking form
 * (cancel, free), and bad input.
 *
 * Each participant of another "process" is a thread with its own session
 * (parties below); tests wait for their reports or the servers' state,
 * each wait bounded in time.
 */
#include "config.h"

#include <string.h>

#include <glib.h>

#include "holds.h"
#include "session/session_internal.h"
#include "testutil.h"

/* ------------------------------------------------------------ helpers */

static zkrc_semaphore *new_semaphore(zkrc_session *s, const char *path, int n) {
  zkrc_semaphore *sem = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_semaphore_new(&sem, s, path, n, NULL), ZKRC_OK);
  return sem;
}

/* Nothing left under the semaphore (releases delete in the background),
 * within 10 s. */
static gboolean nodes_gone(zhandle_t *zh, const char *path) {
  return zkt_wait_semaphore_empty(zh, path, 10000);
}

/* A party: a thread that acquires a lease with @p timeout_ms, reports, and
 * holds until the test lets it go. */
typedef struct party {
  GMutex *mu;
  GCond *cond;
  zkrc_semaphore *sem;
  int timeout_ms;
  GThread *t;
  gboolean done, go; /* under *mu */
  int rc;
  int64_t took_ms;
  zkrc_semaphore_lease *lease;
} party;

static GMutex board_mu;
static GCond board_cond;

static gpointer party_run(gpointer data) {
  party *p = data;
  int64_t start = zkt_now_ms();
  zkrc_semaphore_lease *lease = NULL;
  int rc = zkrc_semaphore_acquire(p->sem, p->timeout_ms, &lease);
  g_mutex_lock(p->mu);
  p->done = TRUE;
  p->rc = rc;
  p->lease = lease;
  p->took_ms = zkt_now_ms() - start;
  g_cond_broadcast(p->cond);
  int64_t until = g_get_monotonic_time() + 30 * G_TIME_SPAN_SECOND;
  while (rc == ZKRC_OK && !p->go && g_cond_wait_until(p->cond, p->mu, until))
    ;
  g_mutex_unlock(p->mu);
  if (rc == ZKRC_OK)
    zkrc_semaphore_lease_release(lease);
  return NULL;
}

static void party_start(party *p, zkrc_semaphore *sem, int timeout_ms) {
  *p = (party){.mu = &board_mu,
               .cond = &board_cond,
               .sem = sem,
               .timeout_ms = timeout_ms};
  p->t = g_thread_new("party", party_run, p);
}

static gboolean party_done(party *p, int ms) {
  int64_t until = g_get_monotonic_time() + ms * G_TIME_SPAN_MILLISECOND;
  g_mutex_lock(p->mu);
  while (!p->done && g_cond_wait_until(p->cond, p->mu, until))
    ;
  gboolean done = p->done;
  g_mutex_unlock(p->mu);
  return done;
}

static gboolean party_is_done(party *p) {
  g_mutex_lock(p->mu);
  gboolean done = p->done;
  g_mutex_unlock(p->mu);
  return done;
}

static void party_finish(party *p) {
  g_mutex_lock(p->mu);
  p->go = TRUE;
  g_cond_broadcast(p->cond);
  g_mutex_unlock(p->mu);
  g_thread_join(p->t);
}

/* ------------------------------------------------------------ fixture */

enum { MAX_SESSIONS = 4 };

typedef struct fixture {
  char *path;
  int n;
  zkrc_session *s[MAX_SESSIONS];
  zkrc_semaphore *sem[MAX_SESSIONS];
  zhandle_t *zh;
} fixture;

static void fixture_open(fixture *f, const char *tag, int sessions,
                         int max_leases) {
  memset(f, 0, sizeof *f);
  f->path = zkt_path(tag);
  f->n = sessions;
  for (int i = 0; i < sessions; i++) {
    f->s[i] = zkt_session();
    f->sem[i] = new_semaphore(f->s[i], f->path, max_leases);
  }
  f->zh = zkt_raw();
}

/* Asserts that no node is left, then frees everything. */
static void fixture_close(fixture *f) {
  CU_ASSERT(nodes_gone(f->zh, f->path));
  for (int i = 0; i < f->n; i++) {
    zkrc_semaphore_free(f->sem[i]);
    zkrc_session_close(f->s[i]);
  }
  zookeeper_close(f->zh);
  g_free(f->path);
}

static char *child(const fixture *f, const char *name) {
  return g_strconcat(f->path, "/", name, NULL);
}

/* ------------------------------------------------------ at most N */

enum { CLIENTS = 6, ROUNDS = 8, PERMITS = 2 };

typedef struct shared_count {
  gint in, most, failures;
} shared_count;

typedef struct client {
  const char *path;
  shared_count *count;
  int id;
  GArray *holds; /* of zkt_hold */
} client;

static gpointer client_run(gpointer data) {
  client *c = data;
  zkrc_session *s = zkt_session();
  zkrc_semaphore *sem = NULL;
  if (zkrc_semaphore_new(&sem, s, c->path, PERMITS, NULL) != ZKRC_OK) {
    g_atomic_int_inc(&c->count->failures);
    zkrc_session_close(s);
    return NULL;
  }
  for (int i = 0; i < ROUNDS; i++) {
    zkrc_semaphore_lease *lease = NULL;
    if (zkrc_semaphore_acquire(sem, 30000, &lease) != ZKRC_OK) {
      g_atomic_int_inc(&c->count->failures);
      continue;
    }
    int64_t acquired = zkt_hold_now_us();
    int64_t token = 0;
    (void)zkrc_semaphore_lease_token(lease, &token); /* 0: lost */
    gint now = g_atomic_int_add(&c->count->in, 1) + 1;
    for (gint most = g_atomic_int_get(&c->count->most);
         now > most &&
         !g_atomic_int_compare_and_exchange(&c->count->most, most, now);
         most = g_atomic_int_get(&c->count->most))
      ;
    g_usleep(10000); /* the work inside the lease */
    g_atomic_int_add(&c->count->in, -1);
    zkt_hold_add(c->holds, c->id, token, acquired, zkt_hold_now_us());
    if (zkrc_semaphore_lease_release(lease) != ZKRC_OK)
      g_atomic_int_inc(&c->count->failures);
  }
  zkrc_semaphore_free(sem);
  zkrc_session_close(s);
  return NULL;
}

/* Six sessions take one of two leases eight times each: never more than
 * two at once (a shared counter, and the checker with capacity 2), two at
 * once did happen (the checker with capacity 1 sees overlaps: its
 * control), tokens rise past every ended lease, every acquisition
 * succeeded, no node is left. */
static void test_never_more_than_n(void) {
  /* Start the program's ensemble here: zkt_ensemble() starts it on first
   * use, and the clients' threads must not race to do so. */
  CU_ASSERT_PTR_NOT_NULL_FATAL(zkt_ensemble());
  char *path = zkt_path("sem-many");
  shared_count count = {0, 0, 0};
  client clients[CLIENTS];
  GThread *threads[CLIENTS];
  for (int i = 0; i < CLIENTS; i++) {
    clients[i] =
        (client){path, &count, i, g_array_new(FALSE, TRUE, sizeof(zkt_hold))};
    threads[i] = g_thread_new("client", client_run, &clients[i]);
  }
  GArray *all = g_array_new(FALSE, TRUE, sizeof(zkt_hold));
  for (int i = 0; i < CLIENTS; i++) {
    g_thread_join(threads[i]);
    g_array_append_vals(all, clients[i].holds->data, clients[i].holds->len);
    g_array_free(clients[i].holds, TRUE);
  }
  zkt_checker c;
  zkt_checker_init(&c, NULL, NULL);
  c.capacity = PERMITS;
  CU_ASSERT_EQUAL(zkt_check_hold_array(&c, all), 0);
  int together = zkt_overlapping_pairs(all);
  CU_ASSERT(together > 0); /* two did hold at once: the control */
  CU_ASSERT_EQUAL(all->len, CLIENTS * ROUNDS);
  CU_ASSERT_EQUAL(count.failures, 0);
  CU_ASSERT(count.most <= PERMITS);
  CU_ASSERT_EQUAL(count.most, PERMITS);
  printf("(%u leases, at most %d at once, %d pairs together) ", all->len,
         count.most, together);
  zkt_checker_clear(&c);
  g_array_free(all, TRUE);
  zhandle_t *zh = zkt_raw();
  CU_ASSERT(nodes_gone(zh, path));
  zookeeper_close(zh);
  g_free(path);
}

/* ------------------------------------------------ waiting and watches */

/* How many sessions watch @p dir itself and the nodes under it (the
 * servers' wchp: a path line, then one line per watching session). */
typedef struct watchers {
  int on_dir, on_children;
} watchers;

static watchers watchers_of(const char *dir) {
  watchers w = {0, 0};
  char *wchp = NULL;
  if (zkrc_ensemble_four_letter(zkt_ensemble(), 0, "wchp", &wchp) != 0)
    return w;
  char **lines = g_strsplit(wchp, "\n", -1);
  int *count = NULL;
  for (char **l = lines; *l; l++) {
    if ((*l)[0] == '/') {
      gboolean under = g_str_has_prefix(*l, dir) && (*l)[strlen(dir)] == '/';
      count = strcmp(*l, dir) == 0 ? &w.on_dir : under ? &w.on_children : NULL;
    } else if (count && g_strstrip(*l)[0] == '0') {
      (*count)++;
    }
  }
  g_strfreev(lines);
  g_free(wchp);
  return w;
}

typedef struct settled_probe {
  zhandle_t *zh;
  const char *leases, *locks;
  int on_leases, on_locks;
} settled_probe;

/* @p on_leases lease nodes, @p on_locks mutex nodes, and every waiter in
 * the mutex queue watching its predecessor (wchp: data watches only). */
static int settled(void *arg) {
  settled_probe *p = arg;
  return zkt_child_count(p->zh, p->leases) == p->on_leases &&
         zkt_child_count(p->zh, p->locks) == p->on_locks &&
         watchers_of(p->locks).on_children == p->on_locks - 1;
}

/* N=2: two hold; a third waits for a lease holding the internal mutex, a
 * fourth waits for the mutex, watching the third's mutex node (wchp), and
 * nobody watches a lease node.  A release admits the third and wakes
 * exactly two watches in all: the third's on the leases directory and the
 * fourth's on the mutex node the third let go (this process's count of
 * delivered watch events); the fourth then waits for a lease in its place
 * and is admitted at the next release. */
static void test_waiter_admitted_at_release_without_herd(void) {
  fixture f;
  fixture_open(&f, "sem-wait", 4, 2);
  char *leases = child(&f, "leases"), *locks = child(&f, "locks");
  party p[4];
  party_start(&p[0], f.sem[0], 10000);
  CU_ASSERT_FATAL(party_done(&p[0], 10000));
  party_start(&p[1], f.sem[1], 10000);
  CU_ASSERT_FATAL(party_done(&p[1], 10000));
  ZKT_ASSERT_RC(ZKRC_OK, p[0].rc);
  ZKT_ASSERT_RC(ZKRC_OK, p[1].rc);
  party_start(&p[2], f.sem[2], 20000);
  CU_ASSERT(zkt_wait_children(f.zh, leases, 3, 10000));
  party_start(&p[3], f.sem[3], 20000);
  settled_probe sp = {f.zh, leases, locks, 3, 2};
  CU_ASSERT(zkt_wait_for(settled, &sp, 10000));
  CU_ASSERT_EQUAL(watchers_of(leases).on_children, 0);
  CU_ASSERT_FALSE(party_is_done(&p[2]) || party_is_done(&p[3]));
  zkrc_participant *list = NULL;
  size_t count = 0;
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_semaphore_list(f.s[0], f.path, &list, &count, 5000));
  CU_ASSERT_EQUAL(count, 3); /* two holders and the mutex's holder */
  for (size_t i = 0; i < count; i++)
    CU_ASSERT(strstr(list[i].node, "-lease-") != NULL);
  zkrc_participants_free(list, count);
  guint64 events_before = zkrc__watch_events_delivered();
  party_finish(&p[0]);
  CU_ASSERT(party_done(&p[2], 10000));
  ZKT_ASSERT_RC(ZKRC_OK, p[2].rc);
  /* The fourth now holds the mutex and waits for a lease in its turn. */
  settled_probe after = {f.zh, leases, locks, 3, 1};
  CU_ASSERT(zkt_wait_for(settled, &after, 10000));
  guint64 woken = zkrc__watch_events_delivered() - events_before;
  CU_ASSERT_EQUAL(woken, 2);
  printf("(%" G_GUINT64_FORMAT " watch events for one release) ", woken);
  CU_ASSERT_FALSE(party_is_done(&p[3]));
  party_finish(&p[1]);
  CU_ASSERT(party_done(&p[3], 10000));
  ZKT_ASSERT_RC(ZKRC_OK, p[3].rc);
  party_finish(&p[2]);
  party_finish(&p[3]);
  g_free(leases);
  g_free(locks);
  fixture_close(&f);
}

/* ------------------------------------------------------------ deadlines */

/* N=1 held: a waiter for the lease (holding the mutex) and a waiter for
 * the mutex both time out within their deadlines, and each leaves nothing
 * behind: then only the holder's lease node remains; a try fails at once
 * with ZKRC_ELOCKED and leaves nothing either. */
static void test_deadlines_leave_no_node(void) {
  fixture f;
  fixture_open(&f, "sem-deadline", 3, 1);
  char *leases = child(&f, "leases"), *locks = child(&f, "locks");
  zkrc_semaphore_lease *held = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_acquire(f.sem[0], 5000, &held));
  party lease_waiter, mutex_waiter;
  party_start(&lease_waiter, f.sem[1], 1500);
  CU_ASSERT(zkt_wait_children(f.zh, leases, 2, 10000));
  party_start(&mutex_waiter, f.sem[2], 500);
  CU_ASSERT(party_done(&mutex_waiter, 5000));
  ZKT_ASSERT_RC(ZKRC_ETIMEDOUT, mutex_waiter.rc);
  CU_ASSERT(mutex_waiter.took_ms >= 500 && mutex_waiter.took_ms < 1500);
  CU_ASSERT(party_done(&lease_waiter, 5000));
  ZKT_ASSERT_RC(ZKRC_ETIMEDOUT, lease_waiter.rc);
  CU_ASSERT(lease_waiter.took_ms >= 1500 && lease_waiter.took_ms < 2500);
  printf("(timed out after %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT " ms) ",
         mutex_waiter.took_ms, lease_waiter.took_ms);
  CU_ASSERT_EQUAL(zkt_nodes_left(f.zh, leases), 1);
  CU_ASSERT_EQUAL(zkt_nodes_left(f.zh, locks), 0);
  zkrc_semaphore_lease *tried = NULL;
  int64_t start = zkt_now_ms();
  ZKT_ASSERT_RC(ZKRC_ELOCKED,
                zkrc_semaphore_acquire(f.sem[1], ZKRC_NO_WAIT, &tried));
  CU_ASSERT(zkt_now_ms() - start < 2000);
  CU_ASSERT_PTR_NULL(tried);
  CU_ASSERT_EQUAL(zkt_nodes_left(f.zh, leases), 1);
  CU_ASSERT_EQUAL(zkt_nodes_left(f.zh, locks), 0);
  party_finish(&lease_waiter);
  party_finish(&mutex_waiter);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_lease_release(held));
  g_free(leases);
  g_free(locks);
  fixture_close(&f);
}

/* ------------------------------------------------------------ loss */

typedef struct lost_probe {
  GMutex mu;
  GCond cond;
  int lost, reason;
  zkrc_semaphore_lease *lease;
} lost_probe;

static void on_lease_event(zkrc_semaphore *sem,
                           const zkrc_semaphore_event *info, void *arg) {
  lost_probe *p = arg;
  g_mutex_lock(&p->mu);
  if (info->type == ZKRC_LOCK_LOST) {
    p->lost++;
    p->reason = info->reason;
    p->lease = info->lease;
  }
  g_cond_broadcast(&p->cond);
  g_mutex_unlock(&p->mu);
}

/* N=1: the holder's session expires: it is told LOST about its lease (no
 * longer held), and the waiter is admitted. */
static void test_expired_holder_is_told_and_replaced(void) {
  fixture f;
  fixture_open(&f, "sem-expire", 0, 1);
  f.s[0] = zkt_session();
  f.s[1] = zkt_session();
  f.n = 2;
  lost_probe lp = {0};
  g_mutex_init(&lp.mu);
  g_cond_init(&lp.cond);
  zkrc_semaphore_options o;
  zkrc_semaphore_options_init(&o);
  o.on_event = on_lease_event;
  o.event_arg = &lp;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_new(&f.sem[0], f.s[0], f.path, 1, &o));
  f.sem[1] = new_semaphore(f.s[1], f.path, 1);
  zkrc_semaphore_lease *held = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_acquire(f.sem[0], 5000, &held));
  CU_ASSERT(zkrc_semaphore_lease_is_held(held));
  CU_ASSERT(zkrc_semaphore_lease_remaining(held) > 0);
  party waiter;
  party_start(&waiter, f.sem[1], 30000);
  char *leases = child(&f, "leases");
  CU_ASSERT(zkt_wait_children(f.zh, leases, 2, 10000));
  zkt_expire(f.s[0]);
  int64_t until = g_get_monotonic_time() + 15 * G_TIME_SPAN_SECOND;
  g_mutex_lock(&lp.mu);
  while (lp.lost == 0 && g_cond_wait_until(&lp.cond, &lp.mu, until))
    ;
  CU_ASSERT_EQUAL(lp.lost, 1);
  CU_ASSERT_PTR_EQUAL(lp.lease, held);
  CU_ASSERT(lp.reason == ZKRC_ESESSIONEXPIRED ||
            lp.reason == ZKRC_ESESSIONLOST || lp.reason == ZKRC_ELOCKLOST);
  g_mutex_unlock(&lp.mu);
  CU_ASSERT_FALSE(zkrc_semaphore_lease_is_held(held));
  int64_t tok = 0;
  ZKT_ASSERT_RC(ZKRC_ELOCKLOST, zkrc_semaphore_lease_token(held, &tok));
  CU_ASSERT_EQUAL(tok, 0);
  CU_ASSERT(party_done(&waiter, 15000));
  ZKT_ASSERT_RC(ZKRC_OK, waiter.rc);
  ZKT_ASSERT_RC(ZKRC_ELOCKLOST, zkrc_semaphore_lease_release(held));
  party_finish(&waiter);
  g_free(leases);
  fixture_close(&f);
  g_mutex_clear(&lp.mu);
  g_cond_clear(&lp.cond);
}

/* ------------------------------------------------------ non-blocking */

typedef struct async_probe {
  GMutex mu;
  GCond cond;
  int calls, status, zk_error;
  int64_t token;
  zkrc_semaphore_lease *lease;
} async_probe;

static void async_done(zkrc_semaphore *sem, zkrc_semaphore_lease *lease,
                       const zkrc_semaphore_acquired_info *info, void *arg) {
  int status = info->status;
  int64_t token = info->token;
  async_probe *p = arg;
  g_mutex_lock(&p->mu);
  p->calls++;
  p->status = status;
  p->zk_error = info->zk_error;
  p->token = token;
  p->lease = lease;
  g_cond_broadcast(&p->cond);
  g_mutex_unlock(&p->mu);
}

static gboolean async_wait(async_probe *p, int calls) {
  int64_t until = g_get_monotonic_time() + 10 * G_TIME_SPAN_SECOND;
  g_mutex_lock(&p->mu);
  while (p->calls < calls && g_cond_wait_until(&p->cond, &p->mu, until))
    ;
  gboolean ok = p->calls >= calls;
  g_mutex_unlock(&p->mu);
  return ok;
}

/* The servers refuse the acquisition (the semaphore's directory is
 * read-only to us): the completion says so with ZooKeeper's code beside
 * ours, and so does the blocking form (zkrc_last_zk_error()). */
static void test_refusal_carries_zookeepers_code(void) {
  zhandle_t *zh = zkt_raw();
  char *path = zkt_path("sem-refused");
  (void)zoo_create(zh, "/zkt", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
  CU_ASSERT_EQUAL_FATAL(
      zoo_create(zh, path, NULL, -1, &ZOO_READ_ACL_UNSAFE, 0, NULL, 0), ZOK);
  zkrc_session *s = zkt_session();
  zkrc_semaphore *sem = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_new(&sem, s, path, 1, NULL));
  async_probe a = {0};
  a.token = -1;
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_semaphore_acquire_async(sem, 5000, async_done, &a, NULL));
  CU_ASSERT_FATAL(async_wait(&a, 1));
  ZKT_ASSERT_RC(ZKRC_ENOAUTH, a.status);
  CU_ASSERT_EQUAL(a.zk_error, ZNOAUTH);
  CU_ASSERT_EQUAL(a.token, 0);
  CU_ASSERT_PTR_NULL(a.lease);
  zkrc_semaphore_lease *lease = NULL;
  ZKT_ASSERT_RC(ZKRC_ENOAUTH, zkrc_semaphore_acquire(sem, 5000, &lease));
  CU_ASSERT_EQUAL(zkrc_last_zk_error(), ZNOAUTH);
  CU_ASSERT_PTR_NULL(lease);
  CU_ASSERT_EQUAL(zkt_child_count(zh, path), 0); /* nothing made */
  zkrc_semaphore_free(sem);
  zkrc_session_close(s);
  CU_ASSERT_EQUAL(zoo_delete(zh, path, -1), ZOK);
  zookeeper_close(zh);
  g_free(path);
}

/* N=1: a non-blocking acquisition completes with its lease and token; a
 * second waits, is cancelled (ECANCELED, its nodes gone); a third waits and
 * the semaphore is freed under it and the held lease (ECANCELED, every
 * node gone). */
static void test_async_cancel_and_free(void) {
  fixture f;
  fixture_open(&f, "sem-async", 1, 1);
  char *leases = child(&f, "leases");
  async_probe a = {0}, b = {0}, c = {0};
  zkrc_semaphore_lease *pending = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_acquire_async(f.sem[0], 10000,
                                                      async_done, &a, NULL));
  CU_ASSERT_FATAL(async_wait(&a, 1));
  ZKT_ASSERT_RC(ZKRC_OK, a.status);
  CU_ASSERT(a.token > 0);
  int64_t tok = 0;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_lease_token(a.lease, &tok));
  CU_ASSERT_EQUAL(tok, a.token);
  ZKT_ASSERT_RC(ZKRC_ESTATE, zkrc_semaphore_lease_cancel(a.lease)); /* held */
  char *node = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_lease_node(a.lease, &node));
  CU_ASSERT(node && strstr(node, "/leases/_c_") && strstr(node, "-lease-"));
  free(node);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_acquire_async(
                             f.sem[0], 20000, async_done, &b, &pending));
  CU_ASSERT(zkt_wait_children(f.zh, leases, 2, 10000));
  /* not held yet: cancel it, do not release it; it has no token yet */
  ZKT_ASSERT_RC(ZKRC_ESTATE, zkrc_semaphore_lease_release(pending));
  tok = 0;
  ZKT_ASSERT_RC(ZKRC_ESTATE, zkrc_semaphore_lease_token(pending, &tok));
  CU_ASSERT_EQUAL(tok, 0);
  CU_ASSERT_FALSE(zkrc_semaphore_lease_is_held(pending));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_lease_cancel(pending));
  CU_ASSERT(async_wait(&b, 1));
  ZKT_ASSERT_RC(ZKRC_ECANCELED, b.status);
  CU_ASSERT_PTR_NULL(b.lease);
  CU_ASSERT(zkt_wait_children(f.zh, leases, 1, 10000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_acquire_async(f.sem[0], 20000,
                                                      async_done, &c, NULL));
  CU_ASSERT(zkt_wait_children(f.zh, leases, 2, 10000));
  zkrc_semaphore_free(f.sem[0]);
  f.sem[0] = NULL;
  CU_ASSERT(async_wait(&c, 1));
  ZKT_ASSERT_RC(ZKRC_ECANCELED, c.status);
  g_free(leases);
  fixture_close(&f);
}

/* ------------------------------------------------------------ bad input */

/* Refused with ZKRC_EINVAL, and nothing sent (the path never appears). */
static void test_bad_input(void) {
  zkrc_session *s = zkt_session();
  char *path = zkt_path("sem-bad");
  zkrc_semaphore *sem = NULL;
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_semaphore_new(&sem, s, path, 0, NULL));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_semaphore_new(&sem, s, path, -3, NULL));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_semaphore_new(NULL, s, path, 2, NULL));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_semaphore_new(&sem, NULL, path, 2, NULL));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_semaphore_new(&sem, s, "no-slash", 2, NULL));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_semaphore_new(&sem, s, NULL, 2, NULL));
  zkrc_semaphore_options o;
  memset(&o, 0, sizeof o); /* never initialized */
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_semaphore_new(&sem, s, path, 2, &o));
  CU_ASSERT_PTR_NULL(sem);
  sem = new_semaphore(s, path, 2);
  CU_ASSERT_EQUAL(zkrc_semaphore_max_leases(sem), 2);
  zkrc_semaphore_lease *lease = NULL;
  int64_t start = zkt_now_ms();
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_semaphore_acquire(sem, -5, &lease));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_semaphore_acquire(NULL, 1000, &lease));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_semaphore_acquire(sem, 1000, NULL));
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkrc_semaphore_acquire_async(sem, 1000, NULL, NULL, NULL));
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkrc_semaphore_acquire_async(sem, -7, async_done, NULL, NULL));
  CU_ASSERT(zkt_now_ms() - start < 200);
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_semaphore_lease_release(NULL));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_semaphore_lease_cancel(NULL));
  CU_ASSERT_EQUAL(zkrc_semaphore_lease_is_held(NULL), 0);
  int64_t tok = 5;
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_semaphore_lease_token(NULL, &tok));
  CU_ASSERT_EQUAL(tok, 5);
  CU_ASSERT_EQUAL(zkrc_semaphore_lease_remaining(NULL), 0);
  char *node = (char *)"untouched";
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_semaphore_lease_node(NULL, &node));
  CU_ASSERT_PTR_NULL(node);
  zkrc_semaphore_free(NULL);
  zkrc_participant *list = NULL;
  size_t count = 7;
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkrc_semaphore_list(s, "bad", &list, &count, 1000));
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkrc_semaphore_list(NULL, path, &list, &count, 1000));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_semaphore_list(s, path, &list, &count, -4));
  CU_ASSERT_EQUAL(count, 0);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_list(s, path, &list, &count, 5000));
  CU_ASSERT_EQUAL(count, 0); /* no such path yet: empty */
  zhandle_t *zh = zkt_raw();
  CU_ASSERT_FALSE(zkt_exists(zh, path)); /* nothing was sent */
  zkrc_semaphore_free(sem);
  zookeeper_close(zh);
  zkrc_session_close(s);
  g_free(path);
}

static void add_suites(void) {
  ZKT_SUITE("semaphore", {"never more than N", test_never_more_than_n},
            {"waiter admitted at release without herd",
             test_waiter_admitted_at_release_without_herd},
            {"deadlines leave no node", test_deadlines_leave_no_node},
            {"expired holder is told and replaced",
             test_expired_holder_is_told_and_replaced},
            {"async cancel and free", test_async_cancel_and_free},
            {"refusal carries ZooKeeper's code",
             test_refusal_carries_zookeepers_code},
            {"bad input", test_bad_input});
}

int main(void) { return zkt_run("test_semaphore", add_suites); }
