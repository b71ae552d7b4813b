/*
 * Interoperability of the read-write lock: zkrecipes' zkrc_rwlock on the
 * same paths as Apache Curator 5's InterProcessReadWriteLock (CuratorPeer
 * rhold / whold) and kazoo's ReadLock / WriteLock created with
 * extra_lock_patterns for the other dialects (kazoo_peer.py rhold / whold),
 * both ways: their writer stops our readers, writers and mutex, ours stops
 * theirs; readers of every dialect share; a reader waiting for a writer of
 * the other implementation enters at its release; and Curator's and our,
 * then kazoo's and our readers and writers on one shared counter, which no
 * reader sees move and no writer loses an update of.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "interop_peers.h"
#include "testutil.h"

static zkrc_rwlock *new_rwlock(zkrc_session *s, const char *path) {
  zkrc_rwlock *rw = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_rwlock_new(&rw, s, path, NULL), ZKRC_OK);
  return rw;
}

static peer *rw_peer(const char *kind, const char *mode, const char *path,
                     const char *id, const char *timeout_ms) {
  if (strcmp(kind, "curator") == 0)
    return curator_peer(kind, mode, path, id, timeout_ms, (char *)NULL);
  return kazoo_peer(kind, mode, path, id, timeout_ms, (char *)NULL);
}

/* Does a child of @p path carry @p marker? */
static gboolean has_child_marked(zhandle_t *zh, const char *path,
                                 const char *marker) {
  struct String_vector kids = {0, NULL};
  gboolean found = FALSE;
  if (zoo_get_children(zh, path, 0, &kids) == ZOK)
    for (int i = 0; i < kids.count; i++)
      found |= strstr(kids.data[i], marker) != NULL;
  deallocate_String_vector(&kids);
  return found;
}

/* A foreign try-once acquisition: TRUE when it got the side (then it is
 * released), FALSE when it timed out (exit 3). */
static gboolean foreign_try(const char *kind, const char *mode,
                            const char *path) {
  peer *p = rw_peer(kind, mode, path, "foreign-try", "0");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  char *line = peer_next(p, START_MS);
  gboolean got = line && line_is(line, "acquired", NULL);
  if (got)
    g_free(peer_ask(p, "release", "released"));
  CU_ASSERT_EQUAL(peer_finish(p, STEP_MS), got ? 0 : 3);
  g_free(line);
  return got;
}

/* Our blocking acquisition in a thread of its own (ownership is per
 * thread), released when the test says so. */
typedef struct waiter {
  zkrc_lock *side;
  GAsyncQueue *results; /* rc + 1000 */
  GAsyncQueue *go;
  GThread *t;
} waiter;

static gpointer waiter_run(gpointer data) {
  waiter *w = data;
  int rc = zkrc_lock_acquire(w->side, 30000);
  g_async_queue_push(w->results, GINT_TO_POINTER(rc + 2000));
  g_async_queue_timeout_pop(w->go, 30 * G_TIME_SPAN_SECOND);
  if (rc == ZKRC_OK)
    rc = zkrc_lock_release(w->side);
  g_async_queue_push(w->results, GINT_TO_POINTER(rc + 2000));
  return NULL;
}

static waiter *waiter_start(zkrc_lock *side) {
  waiter *w = g_new0(waiter, 1);
  w->side = side;
  w->results = g_async_queue_new();
  w->go = g_async_queue_new();
  w->t = g_thread_new("waiter", waiter_run, w);
  return w;
}

/* Its next result within @p ms, or 1 (no result). */
static int waiter_result(waiter *w, int ms) {
  gpointer r = g_async_queue_timeout_pop(w->results,
                                         (guint64)ms * G_TIME_SPAN_MILLISECOND);
  return r ? GPOINTER_TO_INT(r) - 2000 : 1;
}

static void waiter_finish(waiter *w) {
  g_async_queue_push(w->go, GINT_TO_POINTER(1));
  ZKT_ASSERT_RC(ZKRC_OK, waiter_result(w, STEP_MS));
  g_thread_join(w->t);
  g_async_queue_unref(w->results);
  g_async_queue_unref(w->go);
  g_free(w);
}

/* Their writer holds: our reader, writer and mutex are refused, and our
 * reader queued behind it enters at its release.  Then ours hold: their
 * writer is refused both times, their reader shares with our reader only. */
static void both_ways(const char *kind) {
  kill_live_peers();
  char *path = zkt_path(kind);
  zkrc_session *s = zkt_session();
  zkrc_rwlock *rw = new_rwlock(s, path);
  zkrc_lock *r = zkrc_rwlock_reader(rw), *w = zkrc_rwlock_writer(rw);
  zkrc_lock *mutex = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_new(&mutex, s, path, NULL), ZKRC_OK);
  zhandle_t *zh = zkt_raw();

  peer *p = rw_peer(kind, "whold", path, "foreign-writer", "30000");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  g_free(peer_expect(p, "acquired", START_MS));
  CU_ASSERT_TRUE(has_child_marked(
      zh, path, strcmp(kind, "curator") == 0 ? "__WRIT__" : "__lock__"));
  ZKT_ASSERT_RC(ZKRC_ELOCKED, zkrc_lock_acquire(r, ZKRC_NO_WAIT));
  ZKT_ASSERT_RC(ZKRC_ELOCKED, zkrc_lock_acquire(w, ZKRC_NO_WAIT));
  ZKT_ASSERT_RC(ZKRC_ELOCKED, zkrc_lock_acquire(mutex, ZKRC_NO_WAIT));
  waiter *reader = waiter_start(r);
  CU_ASSERT_TRUE(zkt_wait_children(zh, path, 2, STEP_MS));
  CU_ASSERT_EQUAL(waiter_result(reader, 0), 1); /* still waiting */
  g_free(peer_ask(p, "release", "released"));
  ZKT_ASSERT_RC(ZKRC_OK, waiter_result(reader, STEP_MS));
  CU_ASSERT_EQUAL(peer_finish(p, STEP_MS), 0);
  /* Our reader holds: their reader shares, their writer does not. */
  CU_ASSERT_TRUE(foreign_try(kind, "rhold", path));
  CU_ASSERT_FALSE(foreign_try(kind, "whold", path));
  waiter_finish(reader);

  CU_ASSERT_EQUAL_FATAL(zkrc_lock_acquire(w, 5000), ZKRC_OK);
  CU_ASSERT_FALSE(foreign_try(kind, "rhold", path));
  CU_ASSERT_FALSE(foreign_try(kind, "whold", path));
  /* Their reader queued behind our writer enters at its release. */
  p = rw_peer(kind, "rhold", path, "foreign-reader", "30000");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  CU_ASSERT_TRUE(zkt_wait_children(zh, path, 2, START_MS));
  CU_ASSERT_FALSE(peer_said(p, "acquired"));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(w));
  g_free(peer_expect(p, "acquired", STEP_MS));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(r, ZKRC_NO_WAIT)); /* shares */
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(r));
  g_free(peer_ask(p, "release", "released"));
  CU_ASSERT_EQUAL(peer_finish(p, STEP_MS), 0);

  CU_ASSERT_EQUAL(zkt_nodes_left(zh, path), 0);
  zookeeper_close(zh);
  zkrc_lock_free(mutex);
  zkrc_rwlock_free(rw);
  zkrc_session_close(s);
  g_free(path);
}

static void test_curator_both_ways(void) { both_ways("curator"); }
static void test_kazoo_both_ways(void) { both_ways("kazoo"); }

/* ------------------------------------------------ a shared counter */

/* Rounds of each participant; every third one writes. */
#define COUNT_ROUNDS 30

typedef struct counter_client {
  const char *path, *file;
  int writes, moved, failures;
} counter_client;

static int read_counter(const char *file) {
  char *text = NULL;
  int value = g_file_get_contents(file, &text, NULL, NULL) ? atoi(text) : 0;
  g_free(text);
  return value;
}

/* Our participant: the rounds CuratorPeer's rwcount runs, on our sides. */
static gpointer counter_client_run(gpointer data) {
  counter_client *c = data;
  zkrc_session *s = zkt_session();
  zkrc_rwlock *rw = NULL;
  c->failures += zkrc_rwlock_new(&rw, s, c->path, NULL) != ZKRC_OK;
  for (int i = 0; rw && i < COUNT_ROUNDS; i++) {
    gboolean write = i % 3 == 0;
    zkrc_lock *side = write ? zkrc_rwlock_writer(rw) : zkrc_rwlock_reader(rw);
    if (zkrc_lock_acquire(side, 30000) != ZKRC_OK) {
      c->failures++;
      continue;
    }
    int value = read_counter(c->file);
    g_usleep(1000); /* widen the window a violation would need */
    if (write) {
      char text[16];
      snprintf(text, sizeof text, "%d", value + 1);
      c->failures += !g_file_set_contents(c->file, text, -1, NULL);
      c->writes++;
    } else {
      c->moved += read_counter(c->file) != value;
    }
    c->failures += zkrc_lock_release(side) != ZKRC_OK;
  }
  zkrc_rwlock_free(rw);
  zkrc_session_close(s);
  return NULL;
}

/* A foreign rwcount peer of @p kind ("curator" or "kazoo"). */
static peer *counter_peer(const char *kind, const char *name, const char *path,
                          const char *rounds, const char *file) {
  if (strcmp(kind, "curator") == 0)
    return curator_peer(name, "rwcount", path, name, rounds, file,
                        (char *)NULL);
  return kazoo_peer(name, "rwcount", path, name, rounds, file, (char *)NULL);
}

/* Two foreign processes of @p kind and two of our sessions, each reading
 * and writing the counter under the read-write lock: the counter ends at
 * the number of writes, and no reader saw it move. */
static void shared_counter(const char *kind) {
  kill_live_peers();
  char *tag = g_strconcat(kind, "-rwcount", NULL);
  char *path = zkt_path(tag);
  char *dir = g_dir_make_tmp("zkt-interop-XXXXXX", NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
  char *file = g_build_filename(dir, "counter", NULL);
  char rounds[16];
  snprintf(rounds, sizeof rounds, "%d", COUNT_ROUNDS);
  peer *peers[2];
  char *names[2];
  for (int i = 0; i < 2; i++) {
    names[i] = g_strdup_printf("%s-%d", kind, i + 1);
    peers[i] = counter_peer(kind, names[i], path, rounds, file);
    CU_ASSERT_PTR_NOT_NULL_FATAL(peers[i]);
  }
  for (int i = 0; i < 2; i++)
    g_free(peer_expect(peers[i], "ready", START_MS));
  int64_t t0 = zkt_now_ms();
  for (int i = 0; i < 2; i++)
    peer_send(peers[i], "go");
  counter_client ours[2] = {{path, file, 0, 0, 0}, {path, file, 0, 0, 0}};
  GThread *threads[2];
  for (int i = 0; i < 2; i++)
    threads[i] = g_thread_new("counter", counter_client_run, &ours[i]);
  int writes = 0, moved = 0, foreign_moved = 0;
  for (int i = 0; i < 2; i++) {
    char *done = peer_expect(peers[i], "done", 12 * STEP_MS);
    int n = 0, w = -1, m = -1;
    CU_ASSERT(done && sscanf(done, "%d writes=%d moved=%d", &n, &w, &m) == 3);
    writes += w;
    moved += m;
    foreign_moved += m;
    g_free(done);
    CU_ASSERT_EQUAL(peer_finish(peers[i], STEP_MS), 0);
  }
  for (int i = 0; i < 2; i++) {
    g_thread_join(threads[i]);
    CU_ASSERT_EQUAL(ours[i].failures, 0);
    writes += ours[i].writes;
    moved += ours[i].moved;
  }
  printf("(%d writes, %d reads saw the counter move, %d of them %s's; "
         "%" G_GINT64_FORMAT " ms) ",
         writes, moved, foreign_moved, kind, zkt_now_ms() - t0);
  CU_ASSERT_EQUAL(writes, 4 * ((COUNT_ROUNDS + 2) / 3));
  CU_ASSERT_EQUAL(read_counter(file), writes);
  CU_ASSERT_EQUAL(moved, 0);
  for (int i = 0; i < 2; i++)
    g_free(names[i]);
  g_unlink(file);
  g_rmdir(dir);
  g_free(file);
  g_free(dir);
  g_free(path);
  g_free(tag);
}

static void test_curator_shared_counter(void) { shared_counter("curator"); }
static void test_kazoo_shared_counter(void) { shared_counter("kazoo"); }

static void add_suites(void) {
  ZKT_SUITE("rwlock interop", {"curator both ways", test_curator_both_ways},
            {"curator shared counter", test_curator_shared_counter},
            {"kazoo both ways", test_kazoo_both_ways},
            {"kazoo shared counter", test_kazoo_shared_counter});
}

int main(void) { return zkt_run("test_interop_rwlock", add_suites); }
