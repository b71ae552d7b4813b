/*
 * Interoperability of the semaphore: zkrecipes' zkrc_semaphore on the same
 * paths as Apache Curator 5's InterProcessSemaphoreV2 (CuratorPeer shold /
 * scount), both ways: a Curator lease counts against our N and ours
 * against Curator's, a Curator waiter is admitted at our release and ours
 * at Curator's; and Curator processes and our sessions taking leases in a
 * loop never hold more than N at once (slot files taken exclusively inside
 * each lease).  kazoo's Semaphore speaks another protocol (see
 * zkrecipes/semaphore.h) and is not tested here.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "interop_peers.h"
#include "testutil.h"

static zkrc_semaphore *new_semaphore(zkrc_session *s, const char *path, int n) {
  zkrc_semaphore *sem = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_semaphore_new(&sem, s, path, n, NULL), ZKRC_OK);
  return sem;
}

static char *child(const char *path, const char *name) {
  return g_strconcat(path, "/", name, NULL);
}

/* Our releases delete in the background: wait for them, at most STEP_MS. */
static gboolean nodes_gone(zhandle_t *zh, const char *path) {
  return zkt_wait_semaphore_empty(zh, path, STEP_MS);
}

/* A blocking acquisition on a thread of its own. */
typedef struct waiter {
  zkrc_semaphore *sem;
  int timeout_ms;
  GThread *t;
  GMutex mu;
  GCond cond;
  gboolean done;
  int rc;
  zkrc_semaphore_lease *lease;
} waiter;

static gpointer waiter_run(gpointer data) {
  waiter *w = data;
  zkrc_semaphore_lease *lease = NULL;
  int rc = zkrc_semaphore_acquire(w->sem, w->timeout_ms, &lease);
  g_mutex_lock(&w->mu);
  w->done = TRUE;
  w->rc = rc;
  w->lease = lease;
  g_cond_broadcast(&w->cond);
  g_mutex_unlock(&w->mu);
  return NULL;
}

static waiter *waiter_start(zkrc_semaphore *sem, int timeout_ms) {
  waiter *w = g_new0(waiter, 1);
  w->sem = sem;
  w->timeout_ms = timeout_ms;
  g_mutex_init(&w->mu);
  g_cond_init(&w->cond);
  w->t = g_thread_new("waiter", waiter_run, w);
  return w;
}

/* Its result within @p ms, or 1 while it still waits. */
static int waiter_result(waiter *w, int ms) {
  int64_t until = g_get_monotonic_time() + ms * G_TIME_SPAN_MILLISECOND;
  g_mutex_lock(&w->mu);
  while (!w->done && g_cond_wait_until(&w->cond, &w->mu, until))
    ;
  int rc = w->done ? w->rc : 1;
  g_mutex_unlock(&w->mu);
  return rc;
}

/* Join it (it ends by its deadline) and return its lease, if any. */
static zkrc_semaphore_lease *waiter_finish(waiter *w) {
  g_thread_join(w->t);
  zkrc_semaphore_lease *lease = w->lease;
  g_mutex_clear(&w->mu);
  g_cond_clear(&w->cond);
  g_free(w);
  return lease;
}

/* A Curator lease of an N=@p n semaphore: TRUE when it got one within
 * @p timeout_ms (then returned), FALSE when it timed out (exit 3). */
static gboolean curator_try(const char *path, const char *n,
                            const char *timeout_ms) {
  peer *p = curator_peer("curator-try", "shold", path, "curator-try", n,
                         timeout_ms, (char *)NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  char *line = peer_next(p, START_MS);
  gboolean got = line && line_is(line, "acquired", NULL);
  if (got)
    g_free(peer_ask(p, "release", "released"));
  CU_ASSERT_EQUAL(peer_finish(p, STEP_MS), got ? 0 : 3);
  g_free(line);
  return got;
}

/* N=2.  A Curator lease and one of ours fill the semaphore: our next try
 * fails, and our waiter is admitted when Curator returns its lease.  Then
 * ours fill it: Curator cannot get one (it times out), and a Curator
 * waiter (which holds Curator's internal mutex, ours too) is admitted when
 * we release one; nothing is left. */
static void test_curator_both_ways(void) {
  kill_live_peers();
  char *path = zkt_path("sem-curator");
  char *leases = child(path, "leases");
  zkrc_session *s = zkt_session();
  zkrc_semaphore *sem = new_semaphore(s, path, 2);
  zhandle_t *zh = zkt_raw();

  peer *p = curator_peer("curator-holder", "shold", path, "curator-holder", "2",
                         "30000", (char *)NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  char *node = peer_expect(p, "acquired", START_MS);
  CU_ASSERT(node && strstr(node, "-lease-"));
  g_free(node);
  zkrc_semaphore_lease *ours = NULL, *tried = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_acquire(sem, STEP_MS, &ours));
  ZKT_ASSERT_RC(ZKRC_ELOCKED,
                zkrc_semaphore_acquire(sem, ZKRC_NO_WAIT, &tried));
  waiter *w = waiter_start(sem, 30000);
  CU_ASSERT(zkt_wait_children(zh, leases, 3, STEP_MS));
  CU_ASSERT_EQUAL(waiter_result(w, 0), 1); /* still waiting */
  g_free(peer_ask(p, "release", "released"));
  ZKT_ASSERT_RC(ZKRC_OK, waiter_result(w, STEP_MS));
  CU_ASSERT_EQUAL(peer_finish(p, STEP_MS), 0);
  zkrc_semaphore_lease *second = waiter_finish(w);

  /* Ours fill it. */
  CU_ASSERT_FALSE(curator_try(path, "2", "1000"));
  p = curator_peer("curator-waiter", "shold", path, "curator-waiter", "2",
                   "30000", (char *)NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  CU_ASSERT(zkt_wait_children(zh, leases, 3, START_MS));
  CU_ASSERT_FALSE(peer_said(p, "acquired"));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_lease_release(ours));
  node = peer_expect(p, "acquired", STEP_MS);
  CU_ASSERT_PTR_NOT_NULL(node);
  g_free(node);
  g_free(peer_ask(p, "release", "released"));
  CU_ASSERT_EQUAL(peer_finish(p, STEP_MS), 0);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_lease_release(second));

  CU_ASSERT(nodes_gone(zh, path));
  zookeeper_close(zh);
  zkrc_semaphore_free(sem);
  zkrc_session_close(s);
  g_free(leases);
  g_free(path);
}

/* ------------------------------------------- never more than N, mixed */

#define PERMITS 2
#define ROUNDS 25

typedef struct slot_client {
  const char *path, *dir;
  int violations, failures;
} slot_client;

/* One of the N slot files of @p dir, created exclusively; NULL when all N
 * are taken (more than N inside). */
static char *take_slot(const char *dir) {
  for (int k = 0; k < PERMITS; k++) {
    char name[16];
    snprintf(name, sizeof name, "slot-%d", k);
    char *slot = g_build_filename(dir, name, NULL);
    FILE *f = fopen(slot, "wx");
    if (f) {
      fclose(f);
      return slot;
    }
    g_free(slot);
  }
  return NULL;
}

/* Our participant: CuratorPeer scount's rounds, on our semaphore. */
static gpointer slot_client_run(gpointer data) {
  slot_client *c = data;
  zkrc_session *s = zkt_session();
  zkrc_semaphore *sem = NULL;
  c->failures += zkrc_semaphore_new(&sem, s, c->path, PERMITS, NULL) != 0;
  for (int i = 0; sem && i < ROUNDS; i++) {
    zkrc_semaphore_lease *lease = NULL;
    if (zkrc_semaphore_acquire(sem, 30000, &lease) != ZKRC_OK) {
      c->failures++;
      continue;
    }
    char *slot = take_slot(c->dir);
    c->violations += slot == NULL;
    g_usleep(2000); /* the work inside the lease */
    if (slot)
      g_unlink(slot);
    g_free(slot);
    c->failures += zkrc_semaphore_lease_release(lease) != ZKRC_OK;
  }
  zkrc_semaphore_free(sem);
  zkrc_session_close(s);
  return NULL;
}

/* Two Curator processes and two of our sessions take one of two leases 25
 * times each: none ever finds both slots taken, every round was served,
 * nothing is left. */
static void test_curator_mixed_never_more_than_n(void) {
  kill_live_peers();
  char *path = zkt_path("sem-mixed");
  char *dir = g_dir_make_tmp("zkt-sem-XXXXXX", NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
  /* The control: with every slot taken, a holder finds no slot. */
  char *taken[PERMITS];
  for (int k = 0; k < PERMITS; k++)
    taken[k] = take_slot(dir);
  CU_ASSERT_PTR_NULL(take_slot(dir));
  for (int k = 0; k < PERMITS; k++) {
    CU_ASSERT_PTR_NOT_NULL(taken[k]);
    if (taken[k])
      g_unlink(taken[k]);
    g_free(taken[k]);
  }
  char n[8], rounds[16];
  snprintf(n, sizeof n, "%d", PERMITS);
  snprintf(rounds, sizeof rounds, "%d", ROUNDS);
  peer *peers[2];
  for (int i = 0; i < 2; i++) {
    const char *id = i ? "curator-2" : "curator-1";
    peers[i] =
        curator_peer(id, "scount", path, id, n, rounds, dir, (char *)NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(peers[i]);
  }
  for (int i = 0; i < 2; i++)
    g_free(peer_expect(peers[i], "ready", START_MS));
  for (int i = 0; i < 2; i++)
    peer_send(peers[i], "go");
  slot_client ours[2] = {{path, dir, 0, 0}, {path, dir, 0, 0}};
  GThread *threads[2];
  for (int i = 0; i < 2; i++)
    threads[i] = g_thread_new("slots", slot_client_run, &ours[i]);
  int violations = 0, served = 0;
  for (int i = 0; i < 2; i++) {
    char *done = peer_expect(peers[i], "done", 12 * STEP_MS);
    int r = 0, v = -1;
    CU_ASSERT(done && sscanf(done, "%d violations=%d", &r, &v) == 2);
    violations += v;
    served += r;
    g_free(done);
    CU_ASSERT_EQUAL(peer_finish(peers[i], STEP_MS), 0);
  }
  for (int i = 0; i < 2; i++) {
    g_thread_join(threads[i]);
    CU_ASSERT_EQUAL(ours[i].failures, 0);
    violations += ours[i].violations;
    served += ROUNDS - ours[i].failures;
  }
  printf("(%d leases, %d found more than %d inside) ", served, violations,
         PERMITS);
  CU_ASSERT_EQUAL(served, 4 * ROUNDS);
  CU_ASSERT_EQUAL(violations, 0);
  zhandle_t *zh = zkt_raw();
  CU_ASSERT(nodes_gone(zh, path));
  zookeeper_close(zh);
  g_rmdir(dir);
  g_free(dir);
  g_free(path);
}

static void add_suites(void) {
  ZKT_SUITE("interop semaphore", {"curator both ways", test_curator_both_ways},
            {"curator mixed never more than n",
             test_curator_mixed_never_more_than_n});
}

int main(void) { return zkt_run("test_interop_semaphore", add_suites); }
