/*
 * The read-write lock against a real single-member ensemble: readers share,
 * a writer excludes readers, writers and the mutex (and they it), a reader
 * behind a writer is admitted when it releases, a writer is not overtaken by
 * later readers, per-thread reentrancy on both sides, downgrade, upgrade
 * refused at once, fencing tokens, deadlines, loss told on the side that
 * held, and no node left behind.
 *
 * Each participant of another "process" is a thread with its own session
 * (parties below): it acquires a side, reports on a shared board what it
 * holds (the board counts an overlap a writer would make), and holds until
 * the test lets it go.  Tests wait for the board's or the servers' events,
 * each bounded in time.
 */
#include "config.h"

#include <string.h>

#include <glib.h>

#include "holds.h"
#include "testutil.h"

/* ------------------------------------------------------------ helpers */

static zkrc_rwlock *new_rwlock(zkrc_session *s, const char *path) {
  zkrc_rwlock *rw = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_rwlock_new(&rw, s, path, NULL), ZKRC_OK);
  return rw;
}

/* What every party of a test reports, under one mutex. */
typedef struct board {
  GMutex mu;
  GCond cond;
  int readers_in, writers_in; /* holding now */
  int overlaps; /* a writer with anyone else, or a reader with a writer */
} board;

typedef struct party {
  board *b;
  zkrc_lock *side;
  gboolean writer;
  int timeout_ms;
  GThread *t;
  /* Reported under b->mu. */
  gboolean done; /* its acquisition returned */
  int rc;
  int64_t token;
  gboolean go; /* the test lets it release */
} party;

static gpointer party_run(gpointer data) {
  party *p = data;
  board *b = p->b;
  int rc = zkrc_lock_acquire(p->side, p->timeout_ms);
  int64_t token = 0;
  if (rc == ZKRC_OK)
    zkrc_lock_token(p->side, &token);
  g_mutex_lock(&b->mu);
  p->done = TRUE;
  p->rc = rc;
  p->token = token;
  if (rc == ZKRC_OK) {
    b->overlaps += p->writer ? b->readers_in + b->writers_in : b->writers_in;
    *(p->writer ? &b->writers_in : &b->readers_in) += 1;
  }
  g_cond_broadcast(&b->cond);
  int64_t until = g_get_monotonic_time() + 30 * G_TIME_SPAN_SECOND;
  while (rc == ZKRC_OK && !p->go && g_cond_wait_until(&b->cond, &b->mu, until))
    ;
  if (rc == ZKRC_OK)
    *(p->writer ? &b->writers_in : &b->readers_in) -= 1;
  g_mutex_unlock(&b->mu);
  if (rc == ZKRC_OK)
    zkrc_lock_release(p->side);
  return NULL;
}

static void party_start(party *p, board *b, zkrc_lock *side, gboolean writer,
                        int timeout_ms) {
  *p =
      (party){.b = b, .side = side, .writer = writer, .timeout_ms = timeout_ms};
  p->t = g_thread_new("party", party_run, p);
}

/* Wait until @p p's acquisition returned, at most @p ms; TRUE if it did. */
static gboolean party_done(party *p, int ms) {
  int64_t until = g_get_monotonic_time() + ms * G_TIME_SPAN_MILLISECOND;
  g_mutex_lock(&p->b->mu);
  while (!p->done && g_cond_wait_until(&p->b->cond, &p->b->mu, until))
    ;
  gboolean done = p->done;
  g_mutex_unlock(&p->b->mu);
  return done;
}

static gboolean party_is_done(party *p) {
  g_mutex_lock(&p->b->mu);
  gboolean done = p->done;
  g_mutex_unlock(&p->b->mu);
  return done;
}

/* Let @p p release and wait for its thread. */
static void party_finish(party *p) {
  g_mutex_lock(&p->b->mu);
  p->go = TRUE;
  g_cond_broadcast(&p->b->cond);
  g_mutex_unlock(&p->b->mu);
  g_thread_join(p->t);
}

static void board_init(board *b) {
  memset(b, 0, sizeof *b);
  g_mutex_init(&b->mu);
  g_cond_init(&b->cond);
}

static void board_clear(board *b) {
  g_mutex_clear(&b->mu);
  g_cond_clear(&b->cond);
}

/* ------------------------------------------------------------ fixture */

enum { MAX_SESSIONS = 4 };

/* What most tests need: @p n sessions with a read-write lock each, all on
 * one path, a plain handle to look at the servers, and a board. */
typedef struct fixture {
  char *path;
  int n;
  zkrc_session *s[MAX_SESSIONS];
  zkrc_rwlock *rw[MAX_SESSIONS];
  zhandle_t *zh;
  board b;
} fixture;

static void fixture_open(fixture *f, const char *tag, int n) {
  memset(f, 0, sizeof *f);
  f->path = zkt_path(tag);
  f->n = n;
  for (int i = 0; i < n; i++) {
    f->s[i] = zkt_session();
    f->rw[i] = new_rwlock(f->s[i], f->path);
  }
  f->zh = zkt_raw();
  board_init(&f->b);
}

/* Asserts that no node is left under the path, then frees everything. */
static void fixture_close(fixture *f) {
  CU_ASSERT_EQUAL(zkt_nodes_left(f->zh, f->path), 0);
  for (int i = 0; i < f->n; i++) {
    zkrc_rwlock_free(f->rw[i]);
    zkrc_session_close(f->s[i]);
  }
  zookeeper_close(f->zh);
  board_clear(&f->b);
  g_free(f->path);
}

/* Session @p i's read side and write side. */
static zkrc_lock *reader(fixture *f, int i) {
  return zkrc_rwlock_reader(f->rw[i]);
}
static zkrc_lock *writer(fixture *f, int i) {
  return zkrc_rwlock_writer(f->rw[i]);
}

/* ------------------------------------------------------- sharing, order */

static void test_readers_share(void) {
  fixture f;
  fixture_open(&f, "rw-share", 3);
  for (int i = 0; i < 3; i++)
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(reader(&f, i), ZKRC_NO_WAIT));
  for (int i = 0; i < 3; i++)
    CU_ASSERT_TRUE(zkrc_lock_is_held(reader(&f, i)));
  CU_ASSERT_EQUAL(zkt_child_count(f.zh, f.path), 3);
  for (int i = 0; i < 3; i++)
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(reader(&f, i)));
  fixture_close(&f);
}

/* Nobody gets in beside a writer, a mutex holder excludes both sides, and
 * a reader excludes writers and the mutex. */
static void test_writer_and_mutex_exclude(void) {
  fixture f;
  fixture_open(&f, "rw-exclude", 2);
  zkrc_lock *mutex = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_new(&mutex, f.s[1], f.path, NULL), ZKRC_OK);
  zkrc_lock *ar = reader(&f, 0), *aw = writer(&f, 0);
  zkrc_lock *br = reader(&f, 1), *bw = writer(&f, 1);

  CU_ASSERT_EQUAL_FATAL(zkrc_lock_acquire(aw, 5000), ZKRC_OK);
  ZKT_ASSERT_RC(ZKRC_ELOCKED, zkrc_lock_acquire(br, ZKRC_NO_WAIT));
  ZKT_ASSERT_RC(ZKRC_ELOCKED, zkrc_lock_acquire(bw, ZKRC_NO_WAIT));
  ZKT_ASSERT_RC(ZKRC_ELOCKED, zkrc_lock_acquire(mutex, ZKRC_NO_WAIT));
  CU_ASSERT_EQUAL(zkt_child_count(f.zh, f.path), 1);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(aw));

  CU_ASSERT_EQUAL_FATAL(zkrc_lock_acquire(ar, 5000), ZKRC_OK);
  ZKT_ASSERT_RC(ZKRC_ELOCKED, zkrc_lock_acquire(bw, ZKRC_NO_WAIT));
  ZKT_ASSERT_RC(ZKRC_ELOCKED, zkrc_lock_acquire(mutex, ZKRC_NO_WAIT));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(ar));

  CU_ASSERT_EQUAL_FATAL(zkrc_lock_acquire(mutex, 5000), ZKRC_OK);
  ZKT_ASSERT_RC(ZKRC_ELOCKED, zkrc_lock_acquire(ar, ZKRC_NO_WAIT));
  ZKT_ASSERT_RC(ZKRC_ELOCKED, zkrc_lock_acquire(aw, ZKRC_NO_WAIT));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(mutex));
  zkrc_lock_free(mutex);
  fixture_close(&f);
}

/* Two readers queued behind a writer are both admitted, together, by its
 * release; none of them before. */
static void test_readers_behind_a_writer_enter_at_its_release(void) {
  fixture f;
  fixture_open(&f, "rw-behind", 3);
  party w, r1, r2;
  party_start(&w, &f.b, writer(&f, 0), TRUE, 10000);
  CU_ASSERT_FATAL(party_done(&w, 10000));
  ZKT_ASSERT_RC(ZKRC_OK, w.rc);
  party_start(&r1, &f.b, reader(&f, 1), FALSE, 20000);
  party_start(&r2, &f.b, reader(&f, 2), FALSE, 20000);
  CU_ASSERT(zkt_wait_children(f.zh, f.path, 3, 10000)); /* both queued */
  CU_ASSERT_FALSE(party_is_done(&r1) || party_is_done(&r2));
  party_finish(&w);
  CU_ASSERT(party_done(&r1, 10000) && party_done(&r2, 10000));
  ZKT_ASSERT_RC(ZKRC_OK, r1.rc);
  ZKT_ASSERT_RC(ZKRC_OK, r2.rc);
  g_mutex_lock(&f.b.mu);
  CU_ASSERT_EQUAL(f.b.readers_in, 2); /* at the same time */
  CU_ASSERT_EQUAL(f.b.overlaps, 0);
  g_mutex_unlock(&f.b.mu);
  party_finish(&r1);
  party_finish(&r2);
  fixture_close(&f);
}

/* A writer waiting behind a reader is not overtaken by readers that come
 * after it: they wait for it, and it holds before them. */
static void test_a_waiting_writer_is_not_starved(void) {
  fixture f;
  fixture_open(&f, "rw-fair", 3);
  party r1, w, r2;
  party_start(&r1, &f.b, reader(&f, 0), FALSE, 10000);
  CU_ASSERT_FATAL(party_done(&r1, 10000));
  party_start(&w, &f.b, writer(&f, 1), TRUE, 20000);
  CU_ASSERT(zkt_wait_children(f.zh, f.path, 2, 10000));
  /* A later reader: a reader holds, but the writer is ahead of it. */
  ZKT_ASSERT_RC(ZKRC_ELOCKED, zkrc_lock_acquire(reader(&f, 2), ZKRC_NO_WAIT));
  party_start(&r2, &f.b, reader(&f, 2), FALSE, 20000);
  CU_ASSERT(zkt_wait_children(f.zh, f.path, 3, 10000));
  party_finish(&r1);
  CU_ASSERT(party_done(&w, 10000));
  ZKT_ASSERT_RC(ZKRC_OK, w.rc);
  CU_ASSERT_FALSE(party_is_done(&r2)); /* still behind the writer */
  party_finish(&w);
  CU_ASSERT(party_done(&r2, 10000));
  ZKT_ASSERT_RC(ZKRC_OK, r2.rc);
  party_finish(&r2);
  CU_ASSERT(w.token > r1.token && r2.token > w.token);
  CU_ASSERT_EQUAL(f.b.overlaps, 0);
  fixture_close(&f);
}

/* How many sessions watch the readers' and the writers' nodes of @p dir
 * (the servers' wchp), and whether anyone watches @p dir itself. */
typedef struct watchers {
  int on_readers, on_writers;
  gboolean on_dir;
} watchers;

static watchers watchers_of(const char *dir) {
  watchers w = {0, 0, FALSE};
  char *wchp = NULL;
  if (zkrc_ensemble_four_letter(zkt_ensemble(), 0, "wchp", &wchp) != 0)
    return w;
  char **lines = g_strsplit(wchp, "\n", -1);
  int *count = NULL;
  for (char **l = lines; *l; l++) {
    if ((*l)[0] == '/') {
      gboolean ours = g_str_has_prefix(*l, dir) && (*l)[strlen(dir)] == '/';
      w.on_dir |= strcmp(*l, dir) == 0;
      count = !ours                    ? NULL
              : strstr(*l, "__WRIT__") ? &w.on_writers
              : strstr(*l, "__READ__") ? &w.on_readers
                                       : NULL;
    } else if (count && g_strstrip(*l)[0] == '0') {
      (*count)++; /* one line per watching session: "0x..." */
    }
  }
  g_strfreev(lines);
  g_free(wchp);
  return w;
}

static int writer_watched_by_two(void *arg) {
  watchers w = watchers_of(arg);
  return w.on_writers == 2 && w.on_readers == 1;
}

/* Reader 0 holds, a writer waits for it, readers 2 and 3 wait for the
 * writer: the writer watches reader 0's node only, both readers the
 * writer's node only, nobody the directory or a reader behind; the
 * writer's turn comes at reader 0's release, theirs at the writer's. */
static void test_waiting_readers_watch_only_the_writer(void) {
  fixture f;
  fixture_open(&f, "rw-watches", 4);
  party r0, w, r2, r3;
  party_start(&r0, &f.b, reader(&f, 0), FALSE, 10000);
  CU_ASSERT_FATAL(party_done(&r0, 10000));
  party_start(&w, &f.b, writer(&f, 1), TRUE, 20000);
  CU_ASSERT(zkt_wait_children(f.zh, f.path, 2, 10000));
  party_start(&r2, &f.b, reader(&f, 2), FALSE, 20000);
  party_start(&r3, &f.b, reader(&f, 3), FALSE, 20000);
  CU_ASSERT(zkt_wait_for(writer_watched_by_two, f.path, 10000));
  watchers seen = watchers_of(f.path);
  CU_ASSERT_EQUAL(seen.on_writers, 2);
  CU_ASSERT_EQUAL(seen.on_readers, 1);
  CU_ASSERT_FALSE(seen.on_dir);
  party_finish(&r0);
  CU_ASSERT(party_done(&w, 10000));
  ZKT_ASSERT_RC(ZKRC_OK, w.rc);
  CU_ASSERT_FALSE(party_is_done(&r2) || party_is_done(&r3));
  party_finish(&w);
  CU_ASSERT(party_done(&r2, 10000) && party_done(&r3, 10000));
  party_finish(&r2);
  party_finish(&r3);
  CU_ASSERT_EQUAL(f.b.overlaps, 0);
  fixture_close(&f);
}

/* ------------------------------------------ reentrancy, down- and upgrade */

static void test_reentrancy_on_both_sides(void) {
  fixture f;
  fixture_open(&f, "rw-reentrant", 1);
  zkrc_lock *r = reader(&f, 0), *w = writer(&f, 0);
  for (int depth = 1; depth <= 3; depth++) {
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(r, 5000));
    CU_ASSERT_EQUAL(zkrc_lock_depth(r), depth);
  }
  CU_ASSERT_EQUAL(zkt_child_count(f.zh, f.path), 1); /* one node for three */
  for (int depth = 3; depth >= 1; depth--)
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(r));
  ZKT_ASSERT_RC(ZKRC_ENOTOWNER, zkrc_lock_release(r));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(w, 5000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(w, 5000));
  CU_ASSERT_EQUAL(zkrc_lock_depth(w), 2);
  CU_ASSERT_EQUAL(zkt_child_count(f.zh, f.path), 1);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(w));
  CU_ASSERT_TRUE(zkrc_lock_is_held(w));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(w));
  CU_ASSERT_FALSE(zkrc_lock_is_held(w));
  fixture_close(&f);
}

/* Write side, then read side (at once), then the write side released: the
 * thread reads on, other readers join, writers stay out. */
static void test_downgrade(void) {
  fixture f;
  fixture_open(&f, "rw-downgrade", 2);
  zkrc_lock *ar = reader(&f, 0), *aw = writer(&f, 0);
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_acquire(aw, 5000), ZKRC_OK);
  int64_t start = zkt_now_ms();
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(ar, 5000));
  CU_ASSERT(zkt_now_ms() - start < 2000); /* admitted, not timed out */
  CU_ASSERT_EQUAL(zkt_child_count(f.zh, f.path), 2);
  int64_t wtoken = 0, rtoken = 0;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_token(aw, &wtoken));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_token(ar, &rtoken));
  CU_ASSERT(rtoken > wtoken);
  ZKT_ASSERT_RC(ZKRC_ELOCKED, zkrc_lock_acquire(reader(&f, 1), ZKRC_NO_WAIT));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(aw));
  CU_ASSERT_TRUE(zkrc_lock_is_held(ar));
  CU_ASSERT_FALSE(zkrc_lock_is_held(aw));
  ZKT_ASSERT_RC(ZKRC_ELOCKED, zkrc_lock_acquire(writer(&f, 1), ZKRC_NO_WAIT));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(reader(&f, 1), ZKRC_NO_WAIT));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(reader(&f, 1)));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(ar));
  fixture_close(&f);
}

/* A writer queued behind ours before the downgrade would hold beside our
 * reader once our writer goes: the downgrade fails at once, leaving
 * everything as it was. */
static void test_downgrade_behind_another_writer_fails_at_once(void) {
  fixture f;
  fixture_open(&f, "rw-downgrade-behind", 2);
  zkrc_lock *ar = reader(&f, 0), *aw = writer(&f, 0);
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_acquire(aw, 5000), ZKRC_OK);
  party w2;
  party_start(&w2, &f.b, writer(&f, 1), TRUE, 20000);
  CU_ASSERT(zkt_wait_children(f.zh, f.path, 2, 10000));
  int64_t start = zkt_now_ms();
  ZKT_ASSERT_RC(ZKRC_EDEADLK, zkrc_lock_acquire(ar, 5000));
  CU_ASSERT(zkt_now_ms() - start < 2000);
  CU_ASSERT_EQUAL(zkt_child_count(f.zh, f.path), 2); /* its node is gone */
  CU_ASSERT_TRUE(zkrc_lock_is_held(aw));
  CU_ASSERT_FALSE(zkrc_lock_is_held(ar));
  CU_ASSERT_FALSE(party_is_done(&w2));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(aw));
  CU_ASSERT(party_done(&w2, 10000));
  ZKT_ASSERT_RC(ZKRC_OK, w2.rc);
  party_finish(&w2);
  fixture_close(&f);
}

/* Read side held, write side asked: refused at once, nothing changed. */
static void test_upgrade_fails_at_once(void) {
  fixture f;
  fixture_open(&f, "rw-upgrade", 1);
  zkrc_lock *r = reader(&f, 0), *w = writer(&f, 0);
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_acquire(r, 5000), ZKRC_OK);
  int64_t start = zkt_now_ms();
  ZKT_ASSERT_RC(ZKRC_EDEADLK, zkrc_lock_acquire(w, ZKRC_WAIT_FOREVER));
  ZKT_ASSERT_RC(ZKRC_EDEADLK, zkrc_lock_acquire(w, ZKRC_NO_WAIT));
  CU_ASSERT(zkt_now_ms() - start < 200); /* nothing sent */
  CU_ASSERT_STRING_EQUAL(zkrc_err_name(ZKRC_EDEADLK), "ZKRC_EDEADLK");
  CU_ASSERT_EQUAL(zkt_child_count(f.zh, f.path), 1);
  CU_ASSERT_TRUE(zkrc_lock_is_held(r));
  CU_ASSERT_EQUAL(zkrc_lock_depth(r), 1);
  CU_ASSERT_FALSE(zkrc_lock_is_held(w));
  ZKT_ASSERT_RC(ZKRC_ENOTOWNER, zkrc_lock_release(w));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(r));
  /* Released, the write side is ours to take. */
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(w, 5000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(w));
  fixture_close(&f);
}

/* ------------------------------------------------- tokens and deadlines */

/* The token of a hold of @p side, acquired and released again. */
static int64_t token_of_a_hold(zkrc_lock *side) {
  int64_t token = 0;
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_acquire(side, 5000), ZKRC_OK);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_token(side, &token));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(side));
  return token;
}

/* A writer's token exceeds every token admitted before it; readers
 * admitted together have tokens between their writers'. */
static void test_tokens_order_writers_after_readers(void) {
  fixture f;
  fixture_open(&f, "rw-tokens", 2);
  int64_t w1 = token_of_a_hold(writer(&f, 0)), r1 = 0, r2 = 0;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(reader(&f, 1), 5000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(reader(&f, 0), 5000));
  zkrc_lock_token(reader(&f, 1), &r1);
  zkrc_lock_token(reader(&f, 0), &r2);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(reader(&f, 0)));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(reader(&f, 1)));
  int64_t w2 = token_of_a_hold(writer(&f, 1));
  CU_ASSERT(w1 > 0 && r1 > w1 && r2 > w1 && w2 > r1 && w2 > r2);
  fixture_close(&f);
}

/* Behind a writer, a reader's and a writer's deadlines are honoured and
 * their nodes are gone when the calls return. */
static void test_deadline_leaves_no_node(void) {
  fixture f;
  fixture_open(&f, "rw-deadline", 2);
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_acquire(writer(&f, 0), 5000), ZKRC_OK);
  for (int side = 0; side < 2; side++) {
    zkrc_lock *lk = side ? writer(&f, 1) : reader(&f, 1);
    int64_t start = zkt_now_ms();
    ZKT_ASSERT_RC(ZKRC_ETIMEDOUT, zkrc_lock_acquire(lk, 400));
    int64_t took = zkt_now_ms() - start;
    CU_ASSERT(took >= 400 && took < 900);
    CU_ASSERT_EQUAL(zkt_child_count(f.zh, f.path), 1);
    CU_ASSERT_FALSE(zkrc_lock_is_held(lk));
  }
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(writer(&f, 0)));
  fixture_close(&f);
}

/* ------------------------------------------------------ many sessions */

enum { CLIENTS = 5, ROUNDS = 12 };

/* A shared resource that reveals a violation: writers read, pause and
 * write the counter back plus one; readers check it does not move while
 * they hold.  (Atomics only so that a violation is a wrong number, not
 * undefined behaviour.) */
typedef struct resource {
  gint counter, writes, moved, failures;
} resource;

typedef struct client {
  const char *path;
  resource *res;
  int id;
  GArray *holds; /* of zkt_hold */
} client;

static void use_resource(resource *res, gboolean writer) {
  gint before = g_atomic_int_get(&res->counter);
  g_usleep(2000); /* the work inside the hold */
  if (writer) {
    g_atomic_int_set(&res->counter, before + 1);
    g_atomic_int_inc(&res->writes);
  } else if (g_atomic_int_get(&res->counter) != before) {
    g_atomic_int_inc(&res->moved);
  }
}

static gpointer client_run(gpointer data) {
  client *c = data;
  zkrc_session *s = zkt_session();
  zkrc_rwlock *rw = NULL;
  if (zkrc_rwlock_new(&rw, s, c->path, NULL) != ZKRC_OK) {
    g_atomic_int_inc(&c->res->failures);
    zkrc_session_close(s);
    return NULL;
  }
  for (int i = 0; i < ROUNDS; i++) {
    gboolean writer = (i + c->id) % 3 == 0;
    zkrc_lock *side = writer ? zkrc_rwlock_writer(rw) : zkrc_rwlock_reader(rw);
    int64_t token = 0;
    if (zkrc_lock_acquire(side, 20000) != ZKRC_OK ||
        zkrc_lock_token(side, &token) != ZKRC_OK) {
      g_atomic_int_inc(&c->res->failures);
      continue;
    }
    int64_t acquired = zkt_hold_now_us();
    use_resource(c->res, writer);
    zkt_hold_add(c->holds, c->id, token, acquired, zkt_hold_now_us())->shared =
        !writer;
    if (zkrc_lock_release(side) != ZKRC_OK)
      g_atomic_int_inc(&c->res->failures);
  }
  zkrc_rwlock_free(rw);
  zkrc_session_close(s);
  return NULL;
}

/* Pairs of readers that held at the same time. */
static int readers_together(GArray *all) {
  int pairs = 0;
  for (guint i = 0; i < all->len; i++)
    for (guint j = i + 1; j < all->len; j++) {
      zkt_hold *a = &g_array_index(all, zkt_hold, i);
      zkt_hold *b = &g_array_index(all, zkt_hold, j);
      pairs += a->shared && b->shared && a->acquired < b->end &&
               b->acquired < a->end;
    }
  return pairs;
}

/* Five sessions take either side for a dozen rounds each: no writer
 * overlaps anyone and tokens rise past every ended hold (holds.h's
 * checker), the counter moves under no reader and loses no write, no node
 * is left. */
static void test_many_sessions_keep_the_rule(void) {
  char *path = zkt_path("rw-many");
  resource res = {0};
  client clients[CLIENTS];
  GThread *threads[CLIENTS];
  for (int i = 0; i < CLIENTS; i++) {
    clients[i] =
        (client){path, &res, i, g_array_new(FALSE, TRUE, sizeof(zkt_hold))};
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
  CU_ASSERT_EQUAL(zkt_check_hold_array(&c, all), 0);
  CU_ASSERT_EQUAL(all->len, CLIENTS * ROUNDS);
  CU_ASSERT_EQUAL(res.failures, 0);
  CU_ASSERT_EQUAL(res.moved, 0);
  CU_ASSERT_EQUAL(res.counter, res.writes);
  printf("(%u holds, %d writes, %d reader pairs held together) ", all->len,
         res.writes, readers_together(all));
  zkt_checker_clear(&c);
  g_array_free(all, TRUE);
  zhandle_t *zh = zkt_raw();
  CU_ASSERT_EQUAL(zkt_nodes_left(zh, path), 0);
  zookeeper_close(zh);
  g_free(path);
}

/* ------------------------------------------------------------ loss */

typedef struct lost_probe {
  GMutex mu;
  GCond cond;
  zkrc_lock *side; /* the side the LOST was about */
  int lost, reason;
} lost_probe;

static void on_side_event(zkrc_lock *lk, const zkrc_lock_event *info,
                          void *arg) {
  lost_probe *p = arg;
  g_mutex_lock(&p->mu);
  if (info->type == ZKRC_LOCK_LOST) {
    p->lost++;
    p->side = lk;
    p->reason = info->reason;
  }
  g_cond_broadcast(&p->cond);
  g_mutex_unlock(&p->mu);
}

/* A reader whose session expires is told LOST about its side, and the
 * write side (not held) hears nothing. */
static void test_expired_reader_is_told(void) {
  char *path = zkt_path("rw-lost");
  zkrc_session *s = zkt_session();
  lost_probe p = {0};
  g_mutex_init(&p.mu);
  g_cond_init(&p.cond);
  zkrc_rwlock_options o;
  zkrc_rwlock_options_init(&o);
  o.on_event = on_side_event;
  o.event_arg = &p;
  zkrc_rwlock *rw = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_rwlock_new(&rw, s, path, &o), ZKRC_OK);
  zkrc_lock *r = zkrc_rwlock_reader(rw);
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_acquire(r, 5000), ZKRC_OK);
  zkt_expire(s);
  int64_t until = g_get_monotonic_time() + 10 * G_TIME_SPAN_SECOND;
  g_mutex_lock(&p.mu);
  while (p.lost == 0 && g_cond_wait_until(&p.cond, &p.mu, until))
    ;
  CU_ASSERT_EQUAL(p.lost, 1);
  CU_ASSERT_PTR_EQUAL(p.side, r);
  CU_ASSERT(p.reason == ZKRC_ESESSIONEXPIRED || p.reason == ZKRC_ELOCKLOST);
  g_mutex_unlock(&p.mu);
  CU_ASSERT_FALSE(zkrc_lock_is_held(r));
  ZKT_ASSERT_RC(ZKRC_ELOCKLOST, zkrc_lock_release(r));
  zkrc_rwlock_free(rw);
  zkrc_session_close(s);
  g_mutex_clear(&p.mu);
  g_cond_clear(&p.cond);
  g_free(path);
}

/* ------------------------------------------------- non-blocking, free */

typedef struct async_probe {
  GMutex mu;
  GCond cond;
  gboolean called;
  int status;
  int64_t token;
} async_probe;

static void async_done(zkrc_lock *lk, zkrc_lock_hold *hold,
                       const zkrc_lock_acquired_info *info, void *arg) {
  async_probe *p = arg;
  g_mutex_lock(&p->mu);
  p->called = TRUE;
  p->status = info->status;
  p->token = info->token;
  g_cond_broadcast(&p->cond);
  g_mutex_unlock(&p->mu);
}

/* A non-blocking read hold waits for a writer and holds at its release;
 * zkrc_rwlock_free() releases what is held. */
static void test_async_reader_and_free(void) {
  fixture f;
  fixture_open(&f, "rw-async", 2);
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_acquire(writer(&f, 0), 5000), ZKRC_OK);
  async_probe p;
  memset(&p, 0, sizeof p);
  g_mutex_init(&p.mu);
  g_cond_init(&p.cond);
  zkrc_lock_hold *hold = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire_async(reader(&f, 1), 10000,
                                                 async_done, &p, &hold));
  CU_ASSERT(zkt_wait_children(f.zh, f.path, 2, 10000));
  g_mutex_lock(&p.mu);
  CU_ASSERT_FALSE(p.called);
  g_mutex_unlock(&p.mu);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(writer(&f, 0)));
  int64_t until = g_get_monotonic_time() + 10 * G_TIME_SPAN_SECOND;
  g_mutex_lock(&p.mu);
  while (!p.called && g_cond_wait_until(&p.cond, &p.mu, until))
    ;
  CU_ASSERT_TRUE(p.called);
  ZKT_ASSERT_RC(ZKRC_OK, p.status);
  CU_ASSERT(p.token > 0);
  g_mutex_unlock(&p.mu);
  CU_ASSERT_TRUE(zkrc_lock_hold_is_held(hold));
  /* Another reader shares with it; a writer does not. */
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(reader(&f, 0), ZKRC_NO_WAIT));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(reader(&f, 0)));
  ZKT_ASSERT_RC(ZKRC_ELOCKED, zkrc_lock_acquire(writer(&f, 0), ZKRC_NO_WAIT));
  zkrc_rwlock_free(f.rw[1]); /* releases the hold (no node left: below) */
  f.rw[1] = NULL;
  fixture_close(&f);
  g_mutex_clear(&p.mu);
  g_cond_clear(&p.cond);
}

static void test_bad_input(void) {
  zkrc_session *s = zkt_session();
  zkrc_rwlock *rw = (zkrc_rwlock *)1;
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_rwlock_new(&rw, s, "no-slash", NULL));
  CU_ASSERT_PTR_NULL(rw);
  zkrc_rwlock_options o;
  memset(&o, 0, sizeof o); /* never initialized */
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_rwlock_new(&rw, s, "/rw-bad", &o));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_rwlock_new(NULL, s, "/rw-bad", NULL));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_rwlock_new(&rw, NULL, "/rw-bad", NULL));
  CU_ASSERT_PTR_NULL(zkrc_rwlock_reader(NULL));
  CU_ASSERT_PTR_NULL(zkrc_rwlock_writer(NULL));
  zkrc_rwlock_free(NULL);
  zkrc_rwlock_options_init(&o);
  o.participant_id = "rw-test";
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_rwlock_new(&rw, s, "/rw-bad", &o));
  zkrc_lock_free(zkrc_rwlock_reader(rw)); /* ignored: the rwlock owns it */
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(zkrc_rwlock_reader(rw), 5000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(zkrc_rwlock_reader(rw)));
  zkrc_rwlock_free(rw);
  zkrc_session_close(s);
}

static void add_suites(void) {
  ZKT_SUITE(
      "rwlock", {"readers share", test_readers_share},
      {"writer and mutex exclude", test_writer_and_mutex_exclude},
      {"readers behind a writer enter at its release",
       test_readers_behind_a_writer_enter_at_its_release},
      {"a waiting writer is not starved", test_a_waiting_writer_is_not_starved},
      {"waiting readers watch only the writer",
       test_waiting_readers_watch_only_the_writer},
      {"reentrancy on both sides", test_reentrancy_on_both_sides},
      {"downgrade", test_downgrade},
      {"downgrade behind another writer fails at once",
       test_downgrade_behind_another_writer_fails_at_once},
      {"upgrade fails at once", test_upgrade_fails_at_once},
      {"tokens order writers after readers",
       test_tokens_order_writers_after_readers},
      {"deadline leaves no node", test_deadline_leaves_no_node},
      {"many sessions keep the rule", test_many_sessions_keep_the_rule},
      {"expired reader is told", test_expired_reader_is_told},
      {"async reader and free", test_async_reader_and_free},
      {"bad input", test_bad_input});
}

int main(void) { return zkt_run("test_rwlock", add_suites); }
