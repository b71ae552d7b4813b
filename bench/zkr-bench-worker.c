/*
 * zkr-bench-worker: the C participants of the benchmark (bench/zkr-bench.c
 * starts them; they are not meant to be run by hand, but can be).
 *
 *   zkr-bench-worker seq      HOSTS DIR SECONDS
 *   zkr-bench-worker pipe     HOSTS DIR SECONDS WINDOW
 *   zkr-bench-worker loop     IMPL HOSTS PATH SECONDS
 *   zkr-bench-worker contend  IMPL HOSTS PATH SECONDS
 *   zkr-bench-worker herd     IMPL HOSTS PATH N
 *   zkr-bench-worker waiters  HOSTS PATH SESSIONS HOLDS [RATE]
 *   zkr-bench-worker threads  HOSTS PATH NTHREADS SECONDS
 *   zkr-bench-worker locks    HOSTS PREFIX N WINDOW
 *   zkr-bench-worker elect    HOSTS PATH ID
 *   zkr-bench-worker rwlock   HOSTS PATH SECONDS READERS HOLD_MS
 *   zkr-bench-worker semaphore HOSTS PATH SECONDS CLIENTS N HOLD_MS
 *   zkr-bench-worker cache    HOSTS PATH node|tree
 *   zkr-bench-worker partition HOSTS PATH ID TIME_BOUNDARY_MS ITEM[,ITEM...]
 *
 * IMPL is "zkr" (zkrecipes' lock) or "naive" (the herd lock below: every
 * waiter watches the whole children list).
 *
 * seq: the limit of one session: create an ephemeral sequential node, wait,
 *   delete it, wait; as fast as possible.  pipe: WINDOW asynchronous creates
 *   always in flight from one session.  loop: acquire and release as fast as
 *   possible.  All three warm up, print "ready", wait for a line, run for
 *   SECONDS and print the loop line of the interoperability peers:
 *   "done ops=N secs=S ops_per_sec=R acquire_p50_us=A acquire_p99_us=B
 *   cycle_p50_us=C cycle_p99_us=D" (seq: "acquire" is the create).
 *
 * contend: one contender of the contended workload: warm up, "ready", wait
 *   for a line, then for SECONDS: acquire; release.  Prints "done ops=N
 *   secs=S" and "ops A,H,R,D ..." with the CLOCK_MONOTONIC times (us) of
 *   every cycle: acquire called, acquired, release called, released.
 *   zkr-bench judges the holds of all contenders (from acquired to release
 *   called) with the tests' checker, tests/holds.h.
 *
 * herd: N+1 sessions on one lock: "ready"; "hold" makes session 0 acquire
 *   ("held"); "queue" makes the N others wait for it, each in a thread
 *   ("acquired K" when one gets it); every "release" releases whoever holds
 *   it ("released"); after N+1 releases, "done N"; the sessions close on
 *   the next line (or end of input).
 *
 * waiters: SESSIONS sessions with HOLDS non-blocking acquisitions each on
 *   one lock: "ready", wait for a line, start them all (RATE given: RATE
 *   a second, round robin over the sessions); each holder releases at
 *   once.  Prints "done n=N failures=F" and "ops H,R,TOKEN ..."
 *   (R 0: that acquisition failed), judged as in contend.
 *
 * threads: one session, one lock object, NTHREADS threads each looping
 *   zkrc_lock_acquire/zkrc_lock_release on it (all queued at once: a
 *   thread's own node per thread): each does one cycle, then "ready"; the
 *   start line starts SECONDS of cycles.  Prints "done threads=T ops=N
 *   secs=S ops_per_sec=R handover_p50_us=A handover_p99_us=B
 *   handover_max_us=M violations=V failures=F" (hand-over: from one
 *   thread's release call to the next one's return from acquire;
 *   violations: holds that began before the previous one's release was
 *   called).
 *
 * locks: one session acquires N different locks PREFIX/lock-<i> without
 *   blocking, at most WINDOW acquisitions in flight (0: all at once), and
 *   reports the time and the resident memory per held lock: "done n=N
 *   secs=S rss_before=B rss_after=A bytes_per_lock=P ...
 *   trimmed_bytes_per_lock=T" (trimmed: after malloc_trim(0), which gives
 *   freed heap back, both before and after); then releases them on its next
 *   input line (or the end of input), so that the driver can read the
 *   servers' counters first.
 *
 * elect: one zkrecipes election participant: "joined" once its node is in
 *   the queue; "elected T NODE" / "revoked T NODE" / "failed T NODE" as they
 *   happen (T: CLOCK_MONOTONIC in us); commands "resign" (then "rejoined"
 *   once our new node is queued behind the new leader), "quit".
 *
 * rwlock: READERS reader sessions and one writer session on one
 *   zkrc_rwlock path, one thread each: readers loop acquire-read/release,
 *   the writer acquire-write/hold HOLD_MS/release.  semaphore: CLIENTS
 *   sessions loop acquire/hold HOLD_MS/release on an N-lease semaphore.
 *   Each thread warms up (one cycle), then "ready"; the start line starts
 *   them all for SECONDS; then "done secs=S violations=V" and, per side,
 *   "[reader_|writer_]ops=N ..wait_p50_us=A ..wait_p99_us=B" (wait: from
 *   acquire called to held; violations: holds that overlapped when they
 *   must not, seen in-process).  The sessions close on the next line.
 *   CuratorPeer's bench mode runs Curator's the same way.
 *
 * cache: one zkrecipes cache (zkrecipes/cache.h) of PATH, a node cache or
 *   a tree cache without depth limit: "ready init_us=N nodes=K" once it is
 *   initialized (N: since the cache was created; K: nodes in the copy), then
 *   one line per change of the copy as CuratorPeer's cache mode prints
 *   them, "event ADDED|UPDATED|REMOVED PATH VERSION MZXID T_NS" (T_NS:
 *   CLOCK_MONOTONIC on entering the listener); commands "clock" ("clock
 *   T_NS"), "stats" ("stats requests=R renewals=N": the session's counters,
 *   zkrecipes/stats.h), "quit" or end of input.
 *
 * partition: one member of a set partitioner (zkrecipes/partitioner.h) of
 *   PATH with identifier ID, as kazoo_peer.py's partition mode with
 *   ZKR_PEER_STAMP=1 prints it: "acquired T_NS A,B,..." (its share, sorted)
 *   each time it is ACQUIRED, "release T_NS" (then it calls
 *   zkrc_partitioner_release_set() at once), "failure T_NS" (the exit
 *   status is then 5); T_NS: CLOCK_MONOTONIC on entering the state
 *   callback.  Commands "clock" ("clock T_NS"), "quit" or end of input
 *   (leaves the party).
 *   The benchmark kills it with SIGKILL to see the others rebalance.
 *
 * Exit codes: 0 done; 2 usage; 3 an acquisition timed out; 4 could not
 * connect; 5 any other error; 6 no command within the peer timeout; 124 the
 * watchdog fired.  Environment (as for the interoperability peers):
 * ZKR_PEER_SESSION_MS session timeout (default 30000), ZKR_PEER_TIMEOUT_MS
 * bound of every wait (default 120000), ZKR_PEER_LIFETIME_S watchdog
 * (default 900), ZKR_LOG the ZooKeeper client's log.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <glib.h>
#include <zookeeper/zookeeper.h>

#include "peerutil.h"
#include "zkrecipes.h"

enum {
  EXIT_OK = 0,
  EXIT_USAGE = 2,
  EXIT_TIMEOUT = 3,
  EXIT_CONNECT = 4,
  EXIT_ERROR = 5,
  EXIT_NO_COMMAND = 6,
  EXIT_WATCHDOG = 124
};

static int session_ms;
static int peer_timeout_ms;
static int quiet_zk_log;

/* ------------------------------------------------------------ utilities */

/* A positive whole number, or -1. */
static long parse_positive(const char *s) {
  char *end;
  errno = 0;
  long n = strtol(s, &end, 10);
  return errno || end == s || *end || n <= 0 || n > INT_MAX ? -1 : n;
}

static void die(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));
static void die(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("zkr-bench-worker: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  /* Other threads (ZooKeeper's, waiters) may be inside calls: do not run
   * exit handlers under them. */
  fflush(stdout);
  _exit(code);
}

/* Write all of @p len bytes to stdout (lines longer than a pipe's atomic
 * size come from one thread at a time: say() holds a mutex). */
static void write_all(const char *buf, size_t len) {
  while (len > 0) {
    ssize_t n = write(STDOUT_FILENO, buf, len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      die(EXIT_ERROR, "stdout: %s", strerror(errno));
    buf += n;
    len -= (size_t)n;
  }
}

static GMutex say_mu;

/* One output line, whole, from any thread. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *line = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_mutex_lock(&say_mu);
  write_all(line, strlen(line));
  write_all("\n", 1);
  g_mutex_unlock(&say_mu);
  g_free(line);
}

static void say_gstring(GString *line) {
  g_string_append_c(line, '\n');
  g_mutex_lock(&say_mu);
  write_all(line->str, line->len);
  g_mutex_unlock(&say_mu);
}

/* Read one line of stdin (newline dropped) within the peer timeout.
 * Returns 1 for a line, 0 at end of input; exits when none comes. */
static int read_command(char *line, size_t size) {
  int r = peer_read_line(line, size, peer_timeout_ms);
  if (r < 0 && errno == ETIMEDOUT)
    die(EXIT_NO_COMMAND, "no command within %d ms", peer_timeout_ms);
  if (r < 0)
    die(EXIT_ERROR, "stdin: %s", strerror(errno));
  return r;
}

/* "ready", then wait for the start line (any line, or end of input). */
static void ready_and_wait(void) {
  char line[256];
  say("ready");
  read_command(line, sizeof line);
}

/* A growing array of int64_t samples. */
typedef struct samples {
  int64_t *v;
  size_t n, cap;
} samples;

static void samples_add(samples *s, int64_t x) {
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 4096;
    s->v = g_renew(int64_t, s->v, s->cap);
  }
  s->v[s->n++] = x;
}

/* The loop line shared with the interoperability peers. */
static void say_loop_result(samples *acq, samples *cyc, int64_t start,
                            int64_t end) {
  double secs = (double)(end - start) / 1e9;
  size_t n = acq->n;
  say("done ops=%zu secs=%.3f ops_per_sec=%.1f acquire_p50_us=%ld "
      "acquire_p99_us=%ld cycle_p50_us=%ld cycle_p99_us=%ld",
      n, secs, (double)n / secs, peer_quantile_us(acq->v, n, 0.50),
      peer_quantile_us(acq->v, n, 0.99), peer_quantile_us(cyc->v, n, 0.50),
      peer_quantile_us(cyc->v, n, 0.99));
}

/* Resident memory of this process, in bytes. */
static long resident_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long size, resident;
  if (f == NULL)
    die(EXIT_ERROR, "/proc/self/statm: %s", strerror(errno));
  int n = fscanf(f, "%ld %ld", &size, &resident);
  fclose(f);
  if (n != 2)
    die(EXIT_ERROR, "cannot parse /proc/self/statm");
  return resident * sysconf(_SC_PAGESIZE);
}

/* ------------------------------------------------- plain ZooKeeper handles */

static void quiet_log(const char *message) { (void)message; }

typedef struct raw_conn {
  GMutex mu;
  GCond cond;
  int state;
} raw_conn;

static void raw_session_watcher(zhandle_t *zh, int type, int state,
                                const char *path, void *ctx) {
  raw_conn *rc = ctx;
  if (type != ZOO_SESSION_EVENT)
    return;
  g_mutex_lock(&rc->mu);
  rc->state = state;
  g_cond_broadcast(&rc->cond);
  g_mutex_unlock(&rc->mu);
}

/* A plain handle, connected; exits when it cannot connect in time.  The
 * raw_conn must outlive the handle. */
static zhandle_t *raw_connect(const char *hosts, raw_conn *rc) {
  g_mutex_init(&rc->mu);
  g_cond_init(&rc->cond);
  rc->state = 0;
  zhandle_t *zh = zookeeper_init2(hosts, raw_session_watcher, session_ms, NULL,
                                  rc, 0, quiet_zk_log ? quiet_log : NULL);
  if (zh == NULL)
    die(EXIT_CONNECT, "zookeeper_init %s: %s", hosts, strerror(errno));
  /* By default the client resolves every host of HOSTS again on each turn
   * of its I/O loop (getaddrinfo, a netlink socket each): a cost of the
   * client, not of the ensemble, so the limit does without it. */
  if (zoo_set_servers_resolution_delay(zh, -1) != ZOK)
    die(EXIT_ERROR, "zoo_set_servers_resolution_delay failed");
  int64_t deadline = g_get_monotonic_time() + (int64_t)peer_timeout_ms * 1000;
  g_mutex_lock(&rc->mu);
  while (rc->state != ZOO_CONNECTED_STATE)
    if (!g_cond_wait_until(&rc->cond, &rc->mu, deadline))
      die(EXIT_CONNECT, "could not connect to %s", hosts);
  g_mutex_unlock(&rc->mu);
  return zh;
}

/* A zkrecipes session with the worker's timeouts, connected; exits when
 * it cannot connect. */
static zkrc_session *zkr_connect(const char *hosts) {
  zkrc_session_options so;
  zkrc_session_options_init(&so);
  so.session_timeout_ms = session_ms;
  so.connect_timeout_ms = peer_timeout_ms;
  zkrc_session *s;
  int rc = zkrc_session_connect(&s, hosts, &so);
  if (rc != ZKRC_OK)
    die(EXIT_CONNECT, "connect %s: %s", hosts, zkrc_strerror(rc));
  return s;
}

/* Create @p path and its missing ancestors as persistent nodes. */
static void ensure_path(zhandle_t *zh, const char *path) {
  char *p = g_strdup(path);
  for (char *slash = strchr(p + 1, '/');; slash = strchr(slash + 1, '/')) {
    if (slash)
      *slash = '\0';
    int rc = zoo_create(zh, p, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    if (rc != ZOK && rc != ZNODEEXISTS)
      die(EXIT_ERROR, "create %s: %s", p, zerror(rc));
    if (slash == NULL)
      break;
    *slash = '/';
  }
  g_free(p);
}

/* ------------------------------------------------------------ the limit */

static int mode_seq(const char *hosts, const char *dir, long seconds) {
  raw_conn conn;
  zhandle_t *zh = raw_connect(hosts, &conn);
  ensure_path(zh, dir);
  char *prefix = g_strdup_printf("%s/n-", dir);
  char node[512];
  samples create_ns = {0}, cycle_ns = {0};
  int64_t start = 0, end = 0, now = 0;
  for (int warm = 1; warm >= 0; warm--) {
    if (!warm) {
      ready_and_wait();
      start = now = peer_now_ns();
      end = start + seconds * 1000000000;
    }
    do {
      int rc = zoo_create(zh, prefix, "x", 1, &ZOO_OPEN_ACL_UNSAFE,
                          ZOO_EPHEMERAL_SEQUENTIAL, node, sizeof node);
      if (rc != ZOK)
        die(EXIT_ERROR, "create %s: %s", prefix, zerror(rc));
      int64_t created = peer_now_ns();
      if ((rc = zoo_delete(zh, node, -1)) != ZOK)
        die(EXIT_ERROR, "delete %s: %s", node, zerror(rc));
      int64_t done = peer_now_ns();
      if (!warm) {
        samples_add(&create_ns, created - now);
        samples_add(&cycle_ns, done - now);
      }
      now = done;
    } while (!warm && now < end);
  }
  say_loop_result(&create_ns, &cycle_ns, start, now);
  zookeeper_close(zh);
  g_free(prefix);
  return EXIT_OK;
}

typedef struct pipe_state {
  GMutex mu;
  GCond cond;
  long in_flight;
  long completed; /* before the end of the window */
  int64_t end;
  int failed_rc;
} pipe_state;

static void pipe_create_done(int rc, const char *value, const void *data) {
  pipe_state *ps = (pipe_state *)data;
  int64_t t = peer_now_ns();
  g_mutex_lock(&ps->mu);
  ps->in_flight--;
  if (rc != ZOK)
    ps->failed_rc = rc;
  else if (t <= ps->end)
    ps->completed++;
  g_cond_broadcast(&ps->cond);
  g_mutex_unlock(&ps->mu);
}

static int mode_pipe(const char *hosts, const char *dir, long seconds,
                     long window) {
  raw_conn conn;
  zhandle_t *zh = raw_connect(hosts, &conn);
  ensure_path(zh, dir);
  char *prefix = g_strdup_printf("%s/n-", dir);
  pipe_state ps = {.end = INT64_MAX};
  g_mutex_init(&ps.mu);
  g_cond_init(&ps.cond);
  ready_and_wait();
  int64_t start = peer_now_ns();
  g_mutex_lock(&ps.mu);
  ps.end = start + seconds * 1000000000;
  for (;;) {
    while (ps.in_flight < window && peer_now_ns() < ps.end && !ps.failed_rc) {
      ps.in_flight++;
      g_mutex_unlock(&ps.mu);
      /* Ephemeral: the session's close removes them all. */
      int rc = zoo_acreate(zh, prefix, "x", 1, &ZOO_OPEN_ACL_UNSAFE,
                           ZOO_EPHEMERAL_SEQUENTIAL, pipe_create_done, &ps);
      g_mutex_lock(&ps.mu);
      if (rc != ZOK) {
        ps.in_flight--;
        ps.failed_rc = rc;
      }
    }
    if (ps.failed_rc || (peer_now_ns() >= ps.end && ps.in_flight == 0))
      break;
    int64_t wake = g_get_monotonic_time() + 100000;
    g_cond_wait_until(&ps.cond, &ps.mu, wake);
  }
  long completed = ps.completed;
  int failed = ps.failed_rc;
  g_mutex_unlock(&ps.mu);
  if (failed)
    die(EXIT_ERROR, "pipelined create: %s", zerror(failed));
  double secs = (double)seconds;
  say("done ops=%ld secs=%.3f ops_per_sec=%.1f window=%ld", completed, secs,
      (double)completed / secs, window);
  zookeeper_close(zh);
  g_free(prefix);
  return EXIT_OK;
}

/* -------------------------------------------------------------- locks */

/* The two lock implementations measured from C, behind one interface:
 * blocking acquire and release on one session each. */
typedef struct bench_lock bench_lock;
typedef struct lock_impl {
  const char *name;
  bench_lock *(*open)(const char *hosts, const char *path, const char *id);
  void (*acquire)(bench_lock *l); /* exits on failure */
  void (*release)(bench_lock *l);
  void (*close)(bench_lock *l);
} lock_impl;

struct bench_lock {
  /* zkrecipes */
  zkrc_session *s;
  zkrc_lock *lk;
  /* naive */
  raw_conn conn;
  zhandle_t *zh;
  char *dir;
  char *prefix;
  char *id;
  char node[512];
  GMutex mu;
  GCond cond;
  gboolean changed;
};

/* zkrecipes' lock. */

static bench_lock *zkr_open(const char *hosts, const char *path,
                            const char *id) {
  bench_lock *l = g_new0(bench_lock, 1);
  l->s = zkr_connect(hosts);
  zkrc_lock_options lo;
  zkrc_lock_options_init(&lo);
  lo.participant_id = id;
  int rc = zkrc_lock_new(&l->lk, l->s, path, &lo);
  if (rc != ZKRC_OK)
    die(EXIT_ERROR, "lock %s: %s", path, zkrc_strerror(rc));
  return l;
}

static void zkr_acquire(bench_lock *l) {
  int rc = zkrc_lock_acquire(l->lk, peer_timeout_ms);
  if (rc == ZKRC_ETIMEDOUT)
    die(EXIT_TIMEOUT, "acquire: timed out");
  if (rc != ZKRC_OK)
    die(EXIT_ERROR, "acquire: %s", zkrc_strerror(rc));
}

static void zkr_release(bench_lock *l) {
  int rc = zkrc_lock_release(l->lk);
  if (rc != ZKRC_OK)
    die(EXIT_ERROR, "release: %s", zkrc_strerror(rc));
}

static void zkr_close(bench_lock *l) {
  zkrc_lock_free(l->lk);
  zkrc_session_close(l->s);
  g_free(l);
}

/* The naive lock, the comparison point for the herd: create an ephemeral
 * sequential node, read the children with a watch on the directory, hold
 * when lowest, else wait for any change of the children and read again.
 * Every waiter wakes on every change. */

static void naive_children_changed(zhandle_t *zh, int type, int state,
                                   const char *path, void *ctx) {
  bench_lock *l = ctx;
  g_mutex_lock(&l->mu);
  l->changed = TRUE;
  g_cond_broadcast(&l->cond);
  g_mutex_unlock(&l->mu);
}

static bench_lock *naive_open(const char *hosts, const char *path,
                              const char *id) {
  bench_lock *l = g_new0(bench_lock, 1);
  g_mutex_init(&l->mu);
  g_cond_init(&l->cond);
  l->zh = raw_connect(hosts, &l->conn);
  l->dir = g_strdup(path);
  l->prefix = g_strdup_printf("%s/lock-", path);
  l->id = g_strdup(id);
  ensure_path(l->zh, path);
  return l;
}

/* The sequence number ending a child's name ("lock-0000000042"). */
static long long sequence_of(const char *name) {
  size_t len = strlen(name);
  return len >= 10 ? atoll(name + len - 10) : -1;
}

static gboolean naive_is_lowest(const struct String_vector *kids,
                                const char *mine) {
  long long me = sequence_of(mine);
  gboolean found = FALSE;
  for (int i = 0; i < kids->count; i++) {
    if (strcmp(kids->data[i], mine) == 0)
      found = TRUE;
    else if (sequence_of(kids->data[i]) < me)
      return FALSE;
  }
  if (!found)
    die(EXIT_ERROR, "naive lock: our node %s is gone", mine);
  return TRUE;
}

static void naive_acquire(bench_lock *l) {
  int rc = zoo_create(l->zh, l->prefix, l->id, (int)strlen(l->id),
                      &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL_SEQUENTIAL, l->node,
                      sizeof l->node);
  if (rc != ZOK)
    die(EXIT_ERROR, "naive create %s: %s", l->prefix, zerror(rc));
  const char *mine = strrchr(l->node, '/') + 1;
  int64_t deadline = g_get_monotonic_time() + (int64_t)peer_timeout_ms * 1000;
  for (;;) {
    g_mutex_lock(&l->mu);
    l->changed = FALSE; /* before the read that arms the watch */
    g_mutex_unlock(&l->mu);
    struct String_vector kids = {0, NULL};
    rc = zoo_wget_children(l->zh, l->dir, naive_children_changed, l, &kids);
    if (rc != ZOK)
      die(EXIT_ERROR, "naive getChildren %s: %s", l->dir, zerror(rc));
    gboolean lowest = naive_is_lowest(&kids, mine);
    deallocate_String_vector(&kids);
    if (lowest)
      return;
    g_mutex_lock(&l->mu);
    while (!l->changed)
      if (!g_cond_wait_until(&l->cond, &l->mu, deadline))
        die(EXIT_TIMEOUT, "naive acquire: timed out");
    g_mutex_unlock(&l->mu);
  }
}

static void naive_release(bench_lock *l) {
  int rc = zoo_delete(l->zh, l->node, -1);
  if (rc != ZOK)
    die(EXIT_ERROR, "naive delete %s: %s", l->node, zerror(rc));
}

static void naive_close(bench_lock *l) {
  zookeeper_close(l->zh);
  g_free(l->dir);
  g_free(l->prefix);
  g_free(l->id);
  g_free(l);
}

static const lock_impl impls[] = {
    {"zkr", zkr_open, zkr_acquire, zkr_release, zkr_close},
    {"naive", naive_open, naive_acquire, naive_release, naive_close},
};

static const lock_impl *find_impl(const char *name) {
  for (size_t i = 0; i < G_N_ELEMENTS(impls); i++)
    if (strcmp(impls[i].name, name) == 0)
      return &impls[i];
  return NULL;
}

/* ----------------------------------------------- uncontended, contended */

static int mode_loop(const lock_impl *impl, const char *hosts, const char *path,
                     long seconds) {
  bench_lock *l = impl->open(hosts, path, "bench-loop");
  impl->acquire(l); /* warm-up: the first one creates the directory */
  impl->release(l);
  ready_and_wait();
  samples acq = {0}, cyc = {0};
  int64_t start = peer_now_ns(), now = start;
  int64_t end = start + seconds * 1000000000;
  while (now < end) {
    impl->acquire(l);
    int64_t held = peer_now_ns();
    impl->release(l);
    int64_t done = peer_now_ns();
    samples_add(&acq, held - now);
    samples_add(&cyc, done - now);
    now = done;
  }
  say_loop_result(&acq, &cyc, start, now);
  impl->close(l);
  g_free(acq.v);
  g_free(cyc.v);
  return EXIT_OK;
}

static int mode_contend(const lock_impl *impl, const char *hosts,
                        const char *path, long seconds) {
  char *id = g_strdup_printf("bench-contend-%d", (int)getpid());
  bench_lock *l = impl->open(hosts, path, id);
  impl->acquire(l); /* warm-up */
  impl->release(l);
  ready_and_wait();
  samples times = {0}; /* 4 per cycle */
  int64_t start = peer_now_ns(), now = start;
  int64_t end = start + seconds * 1000000000;
  while (now < end) {
    impl->acquire(l);
    int64_t held = peer_now_ns();
    int64_t releasing = peer_now_ns();
    impl->release(l);
    int64_t done = peer_now_ns();
    samples_add(&times, now);
    samples_add(&times, held);
    samples_add(&times, releasing);
    samples_add(&times, done);
    now = done;
  }
  size_t ops = times.n / 4;
  say("done ops=%zu secs=%.3f", ops, (double)(now - start) / 1e9);
  GString *line = g_string_new("ops");
  for (size_t i = 0; i < times.n; i += 4)
    g_string_append_printf(line,
                           " %" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64,
                           times.v[i] / 1000, times.v[i + 1] / 1000,
                           times.v[i + 2] / 1000, times.v[i + 3] / 1000);
  say_gstring(line);
  g_string_free(line, TRUE);
  impl->close(l);
  g_free(times.v);
  g_free(id);
  return EXIT_OK;
}

/* ------------------------------------------------------------------ herd */

typedef struct herd_waiter {
  const lock_impl *impl;
  bench_lock *l;
  int index;
  GAsyncQueue *holders; /* of herd_waiter*, the one holding now */
  GMutex mu;
  GCond cond;
  gboolean release_now, released;
  GThread *thread;
} herd_waiter;

static gpointer herd_wait_turn(gpointer data) {
  herd_waiter *w = data;
  w->impl->acquire(w->l);
  say("acquired %d", w->index);
  g_async_queue_push(w->holders, w);
  g_mutex_lock(&w->mu);
  while (!w->release_now)
    g_cond_wait(&w->cond, &w->mu);
  g_mutex_unlock(&w->mu);
  w->impl->release(w->l);
  g_mutex_lock(&w->mu);
  w->released = TRUE;
  g_cond_broadcast(&w->cond);
  g_mutex_unlock(&w->mu);
  return NULL;
}

/* Have waiter @p w (a thread: locks may be owned per thread) release. */
static void herd_release_waiter(herd_waiter *w) {
  g_mutex_lock(&w->mu);
  w->release_now = TRUE;
  g_cond_broadcast(&w->cond);
  while (!w->released)
    g_cond_wait(&w->cond, &w->mu);
  g_mutex_unlock(&w->mu);
}

static void expect_command(const char *want) {
  char line[256];
  if (!read_command(line, sizeof line) || strcmp(line, want) != 0)
    die(EXIT_USAGE, "expected the command \"%s\", got \"%s\"", want, line);
}

static int mode_herd(const lock_impl *impl, const char *hosts, const char *path,
                     long n) {
  GAsyncQueue *holders = g_async_queue_new();
  herd_waiter *w = g_new0(herd_waiter, n + 1);
  for (long i = 0; i <= n; i++) {
    char id[64];
    snprintf(id, sizeof id, "herd-%ld", i);
    w[i].impl = impl;
    w[i].index = (int)i;
    w[i].holders = holders;
    w[i].l = impl->open(hosts, path, id);
    g_mutex_init(&w[i].mu);
    g_cond_init(&w[i].cond);
  }
  say("ready");
  expect_command("hold");
  impl->acquire(w[0].l);
  say("held");
  expect_command("queue");
  for (long i = 1; i <= n; i++)
    w[i].thread = g_thread_new("waiter", herd_wait_turn, &w[i]);
  for (long released = 0; released <= n; released++) {
    expect_command("release");
    if (released == 0) {
      impl->release(w[0].l);
    } else {
      herd_waiter *holder =
          g_async_queue_timeout_pop(holders, (guint64)peer_timeout_ms * 1000);
      if (holder == NULL)
        die(EXIT_TIMEOUT, "nobody acquired the lock in time");
      herd_release_waiter(holder);
    }
    say("released");
  }
  say("done %ld", n);
  /* Keep the sessions until told: the bench reads the servers' counters
   * before our sessions close (a close is a request too). */
  char line[256];
  read_command(line, sizeof line);
  for (long i = 1; i <= n; i++)
    g_thread_join(w[i].thread);
  for (long i = 0; i <= n; i++)
    impl->close(w[i].l);
  g_async_queue_unref(holders);
  g_free(w);
  return EXIT_OK;
}

/* ------------------------------------------------------- scale: waiters */

typedef struct hold_record {
  int64_t held, releasing, token;
} hold_record;

typedef struct waiters_state {
  GMutex mu;
  GCond cond;
  long total, done, failures;
  hold_record *records;
} waiters_state;

typedef struct waiter_ctx {
  waiters_state *ws;
  long index;
} waiter_ctx;

static void waiter_acquired(zkrc_lock *lk, zkrc_lock_hold *hold,
                            const zkrc_lock_acquired_info *info, void *arg) {
  int status = info->status;
  int64_t token = info->token;
  waiter_ctx *ctx = arg;
  waiters_state *ws = ctx->ws;
  hold_record *rec = &ws->records[ctx->index];
  rec->held = peer_now_ns();
  if (status == ZKRC_OK) {
    rec->releasing = peer_now_ns();
    rec->token = token;
    int rc = zkrc_lock_hold_release(hold);
    if (rc != ZKRC_OK)
      die(EXIT_ERROR, "hold release: %s", zkrc_strerror(rc));
  } else {
    fprintf(stderr, "zkr-bench-worker: acquisition failed: %s\n",
            zkrc_strerror(status));
  }
  g_mutex_lock(&ws->mu);
  ws->failures += status != ZKRC_OK;
  ws->done++;
  g_cond_broadcast(&ws->cond);
  g_mutex_unlock(&ws->mu);
}

static int mode_waiters(const char *hosts, const char *path, long sessions,
                        long holds, long rate) {
  waiters_state ws = {.total = sessions * holds};
  g_mutex_init(&ws.mu);
  g_cond_init(&ws.cond);
  ws.records = g_new0(hold_record, ws.total);
  waiter_ctx *ctx = g_new0(waiter_ctx, ws.total);
  zkrc_session **s = g_new0(zkrc_session *, sessions);
  zkrc_lock **lk = g_new0(zkrc_lock *, sessions);
  for (long i = 0; i < sessions; i++) {
    s[i] = zkr_connect(hosts);
    int rc;
    if ((rc = zkrc_lock_new(&lk[i], s[i], path, NULL)) != ZKRC_OK)
      die(EXIT_ERROR, "lock %s: %s", path, zkrc_strerror(rc));
  }
  ready_and_wait();
  int64_t start = peer_now_ns();
  for (long i = 0; i < ws.total; i++) {
    if (rate > 0) { /* pacing the joins: the i-th at start + i / rate */
      int64_t due = start + i * (int64_t)1000000000 / rate;
      int64_t ahead = due - peer_now_ns();
      if (ahead > 0)
        g_usleep((gulong)(ahead / 1000));
    }
    ctx[i].ws = &ws;
    ctx[i].index = i;
    int rc = zkrc_lock_acquire_async(lk[i % sessions], peer_timeout_ms,
                                     waiter_acquired, &ctx[i], NULL);
    if (rc != ZKRC_OK)
      die(EXIT_ERROR, "acquire_async: %s", zkrc_strerror(rc));
  }
  int64_t deadline = g_get_monotonic_time() + (int64_t)peer_timeout_ms * 1000;
  g_mutex_lock(&ws.mu);
  while (ws.done < ws.total)
    if (!g_cond_wait_until(&ws.cond, &ws.mu, deadline))
      die(EXIT_TIMEOUT, "only %ld of %ld acquisitions done in time", ws.done,
          ws.total);
  g_mutex_unlock(&ws.mu);
  int64_t end = peer_now_ns();
  say("done n=%ld secs=%.3f failures=%ld", ws.total,
      (double)(end - start) / 1e9, ws.failures);
  GString *line = g_string_new("ops");
  for (long i = 0; i < ws.total; i++)
    g_string_append_printf(line, " %" PRId64 ",%" PRId64 ",%" PRId64,
                           ws.records[i].held / 1000,
                           ws.records[i].releasing / 1000, ws.records[i].token);
  say_gstring(line);
  g_string_free(line, TRUE);
  for (long i = 0; i < sessions; i++) {
    zkrc_lock_free(lk[i]);
    zkrc_session_close(s[i]);
  }
  g_free(lk);
  g_free(s);
  g_free(ctx);
  g_free(ws.records);
  return EXIT_OK;
}

/* ------------------------------------------------------- scale: threads */

/* One hold of the lock object by one of the threads: when its acquisition
 * returned and when its release was called (CLOCK_MONOTONIC, ns). */
typedef struct thread_hold {
  int64_t held, releasing;
} thread_hold;

/* Between two threads' first acquisitions after the start: joining the
 * queue costs a listing of it (ZooKeeper cannot list less), so 2,000
 * threads joining at once would send about 2,000^2/2 names down the one
 * connection, behind which the session's pings would wait. */
#define THREADS_RAMP_US 2000

typedef struct threads_state {
  zkrc_lock *lk;
  GMutex mu;
  GCond cond;
  /* One per place: thread K waits on turn[K] for its warm-up cycle, so
   * that each cycle's end wakes the next thread alone (one condition for
   * all would wake 2,000 threads 2,000 times). */
  GCond *turn;
  long nthreads;
  long joined;        /* threads that took their place */
  long started;       /* threads past their warm-up cycle */
  gboolean go;        /* the threads may join the queue */
  gboolean measuring; /* all have joined: holds are recorded */
  gboolean stop;      /* the measured period ended */
  thread_hold *holds;
  size_t n, cap;
  long failures;
} threads_state;

static void threads_record(threads_state *ts, int64_t held, int64_t releasing) {
  g_mutex_lock(&ts->mu);
  if (ts->measuring && !ts->stop) {
    if (ts->n == ts->cap) {
      ts->cap = ts->cap ? 2 * ts->cap : 4096;
      ts->holds = g_renew(thread_hold, ts->holds, ts->cap);
    }
    ts->holds[ts->n++] = (thread_hold){held, releasing};
  }
  g_mutex_unlock(&ts->mu);
}

/* One cycle: acquire, release.  Returns FALSE when the acquisition failed. */
static gboolean threads_cycle(threads_state *ts) {
  int rc = zkrc_lock_acquire(ts->lk, peer_timeout_ms);
  if (rc != ZKRC_OK) {
    fprintf(stderr, "zkr-bench-worker: acquire: %s\n", zkrc_strerror(rc));
    return FALSE;
  }
  int64_t held = peer_now_ns();
  int64_t releasing = peer_now_ns();
  rc = zkrc_lock_release(ts->lk);
  if (rc != ZKRC_OK)
    die(EXIT_ERROR, "release: %s", zkrc_strerror(rc));
  threads_record(ts, held, releasing);
  return TRUE;
}

/* A thread: one warm-up cycle, one thread after the other (all at once,
 * they would all list a queue of them all), then, its place in the ramp
 * after the start, cycles until the end. */
static gpointer threads_thread(gpointer arg) {
  threads_state *ts = arg;
  g_mutex_lock(&ts->mu);
  long place = ts->joined++;
  while (ts->started != place)
    g_cond_wait(&ts->turn[place], &ts->mu);
  g_mutex_unlock(&ts->mu);
  gboolean ok = threads_cycle(ts);
  g_mutex_lock(&ts->mu);
  ts->failures += !ok;
  ts->started++;
  g_cond_signal(&ts->turn[place + 1]); /* the next place's, or nobody's */
  if (ts->started == ts->nthreads)
    g_cond_broadcast(&ts->cond); /* the main thread waits for the last */
  while (!ts->go)
    g_cond_wait(&ts->cond, &ts->mu);
  g_mutex_unlock(&ts->mu);
  g_usleep((gulong)(place * THREADS_RAMP_US));
  g_mutex_lock(&ts->mu);
  while (!ts->stop) {
    g_mutex_unlock(&ts->mu);
    ok = threads_cycle(ts);
    g_mutex_lock(&ts->mu);
    ts->failures += !ok;
  }
  g_mutex_unlock(&ts->mu);
  return NULL;
}

static int compare_hold(const void *a, const void *b) {
  const thread_hold *x = a, *y = b;
  return (x->held > y->held) - (x->held < y->held);
}

/* The hand-overs of the recorded holds: from one hold's release call to
 * the next hold's return from acquire (in ns, into @p gaps); returns the
 * holds that began before the previous one's release was called (must be
 * 0: one lock object, one holder at a time). */
static long threads_handovers(threads_state *ts, int64_t *gaps) {
  qsort(ts->holds, ts->n, sizeof *ts->holds, compare_hold);
  long overlaps = 0;
  for (size_t i = 1; i < ts->n; i++) {
    gaps[i - 1] = ts->holds[i].held - ts->holds[i - 1].releasing;
    overlaps += gaps[i - 1] < 0;
  }
  return overlaps;
}

static int mode_threads(const char *hosts, const char *path, long nthreads,
                        long seconds) {
  threads_state ts = {0};
  g_mutex_init(&ts.mu);
  g_cond_init(&ts.cond);
  zkrc_session *s = zkr_connect(hosts);
  int rc;
  if ((rc = zkrc_lock_new(&ts.lk, s, path, NULL)) != ZKRC_OK)
    die(EXIT_ERROR, "lock %s: %s", path, zkrc_strerror(rc));
  ts.nthreads = nthreads;
  ts.turn = g_new(GCond, nthreads + 1);
  for (long i = 0; i <= nthreads; i++)
    g_cond_init(&ts.turn[i]);
  GThread **t = g_new0(GThread *, nthreads);
  for (long i = 0; i < nthreads; i++)
    t[i] = g_thread_new("waiter", threads_thread, &ts);
  int64_t deadline = g_get_monotonic_time() + (int64_t)peer_timeout_ms * 1000;
  g_mutex_lock(&ts.mu);
  while (ts.started < nthreads)
    if (!g_cond_wait_until(&ts.cond, &ts.mu, deadline))
      die(EXIT_TIMEOUT, "only %ld of %ld threads warmed up", ts.started,
          nthreads);
  g_mutex_unlock(&ts.mu);
  ready_and_wait();
  g_mutex_lock(&ts.mu);
  ts.go = TRUE;
  g_cond_broadcast(&ts.cond);
  g_mutex_unlock(&ts.mu);
  /* the ramp, and as long again for the queue to settle */
  g_usleep((gulong)(2 * nthreads * THREADS_RAMP_US));
  g_mutex_lock(&ts.mu);
  ts.measuring = TRUE;
  g_mutex_unlock(&ts.mu);
  int64_t start = peer_now_ns();
  g_usleep((gulong)seconds * G_USEC_PER_SEC); /* the measured period */
  g_mutex_lock(&ts.mu);
  ts.stop = TRUE;
  g_mutex_unlock(&ts.mu);
  int64_t end = peer_now_ns();
  for (long i = 0; i < nthreads; i++) /* each finishes its turn */
    g_thread_join(t[i]);
  int64_t *gaps = g_new0(int64_t, ts.n + 1);
  long overlaps = threads_handovers(&ts, gaps);
  size_t ng = ts.n > 0 ? ts.n - 1 : 0;
  double secs = (double)(end - start) / 1e9;
  say("done threads=%ld ops=%zu secs=%.3f ops_per_sec=%.1f "
      "handover_p50_us=%ld handover_p99_us=%ld handover_max_us=%ld "
      "violations=%ld failures=%ld",
      nthreads, ts.n, secs, (double)ts.n / secs,
      peer_quantile_us(gaps, ng, 0.50), peer_quantile_us(gaps, ng, 0.99),
      peer_quantile_us(gaps, ng, 1.0), overlaps, ts.failures);
  g_free(gaps);
  for (long i = 0; i <= nthreads; i++)
    g_cond_clear(&ts.turn[i]);
  g_free(ts.turn);
  g_free(t);
  g_free(ts.holds);
  zkrc_lock_free(ts.lk);
  zkrc_session_close(s);
  return EXIT_OK;
}

/* --------------------------------------------------------- scale: locks */

typedef struct locks_state {
  GMutex mu;
  GCond cond;
  long done, failures;
  long in_flight;
  GHashTable *failed; /* holds that failed: freed once their callback ran */
} locks_state;

static void lock_acquired(zkrc_lock *lk, zkrc_lock_hold *hold,
                          const zkrc_lock_acquired_info *info, void *arg) {
  int status = info->status;
  locks_state *ls = arg;
  if (status != ZKRC_OK)
    fprintf(stderr, "zkr-bench-worker: acquisition failed: %s\n",
            zkrc_strerror(status));
  g_mutex_lock(&ls->mu);
  ls->done++;
  ls->in_flight--;
  ls->failures += status != ZKRC_OK;
  if (status != ZKRC_OK)
    g_hash_table_add(ls->failed, hold);
  g_cond_broadcast(&ls->cond);
  g_mutex_unlock(&ls->mu);
}

/* Resident memory before and after malloc_trim(0). */
static void measure_rss(long *raw, long *trimmed) {
  *raw = resident_bytes();
  malloc_trim(0);
  *trimmed = resident_bytes();
}

/* The heap as malloc sees it (every arena): bytes allocated and not
 * freed, and bytes free inside it (the allocator's slack). */
static void measure_heap(long *in_use, long *free_bytes) {
  struct mallinfo2 mi = mallinfo2();
  *in_use = (long)(mi.uordblks + mi.hblkhd);
  *free_bytes = (long)mi.fordblks;
}

/* Wait until fewer than @p most acquisitions are in flight. */
static void locks_wait_below(locks_state *ls, long most, int64_t deadline) {
  g_mutex_lock(&ls->mu);
  while (ls->in_flight >= most)
    if (!g_cond_wait_until(&ls->cond, &ls->mu, deadline))
      die(EXIT_TIMEOUT, "only %ld locks acquired in time", ls->done);
  g_mutex_unlock(&ls->mu);
}

/* Is the directory of lock @p i under @p prefix empty (or gone)? */
static gboolean lock_dir_empty(zhandle_t *zh, const char *prefix, long i) {
  char dir[512];
  snprintf(dir, sizeof dir, "%s/lock-%06ld", prefix, i);
  struct Stat st;
  int zrc = zoo_exists(zh, dir, 0, &st);
  return zrc == ZNONODE || (zrc == ZOK && st.numChildren == 0);
}

/* Wait (at most a minute) until the servers have deleted the nodes of the
 * @p n locks under @p prefix: a sample of a hundred directories, the last
 * one included, is empty. */
static void locks_wait_deleted(const char *hosts, const char *prefix, long n) {
  raw_conn rc;
  zhandle_t *zh = raw_connect(hosts, &rc);
  int64_t deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
  long step = n / 100 > 0 ? n / 100 : 1;
  for (long i = n - 1; i >= 0;) {
    if (lock_dir_empty(zh, prefix, i)) {
      i -= step;
      continue;
    }
    if (g_get_monotonic_time() > deadline) {
      fprintf(stderr,
              "zkr-bench-worker: %ld locks' nodes not deleted in 60 s; "
              "closing anyway\n",
              n);
      break;
    }
    g_usleep(100 * 1000);
  }
  zookeeper_close(zh);
}

static int mode_locks(const char *hosts, const char *prefix, long n,
                      long window) {
  zkrc_session *s = zkr_connect(hosts);
  int rc;
  /* Warm-up: one lock acquired and freed, so that what every process
   * allocates once (tables, the executor) is already there. */
  char *warm = g_strdup_printf("%s/warm-up", prefix);
  zkrc_lock *wl = NULL;
  if (zkrc_lock_new(&wl, s, warm, NULL) != ZKRC_OK ||
      zkrc_lock_acquire(wl, peer_timeout_ms) != ZKRC_OK ||
      zkrc_lock_release(wl) != ZKRC_OK)
    die(EXIT_ERROR, "warm-up lock %s failed", warm);
  zkrc_lock_free(wl);
  g_free(warm);

  locks_state ls = {0};
  ls.failed = g_hash_table_new(g_direct_hash, g_direct_equal);
  g_mutex_init(&ls.mu);
  g_cond_init(&ls.cond);
  zkrc_lock **locks = g_new0(zkrc_lock *, n);
  zkrc_lock_hold **holds = g_new0(zkrc_lock_hold *, n);
  ready_and_wait();
  long before, before_trimmed, used_before, slack_before;
  measure_rss(&before, &before_trimmed);
  measure_heap(&used_before, &slack_before);
  int64_t start = peer_now_ns();
  int64_t deadline = g_get_monotonic_time() + (int64_t)peer_timeout_ms * 1000;
  for (long i = 0; i < n; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/lock-%06ld", prefix, i);
    if (window > 0)
      locks_wait_below(&ls, window, deadline);
    g_mutex_lock(&ls.mu);
    ls.in_flight++;
    g_mutex_unlock(&ls.mu);
    if ((rc = zkrc_lock_new(&locks[i], s, path, NULL)) != ZKRC_OK ||
        (rc = zkrc_lock_acquire_async(locks[i], peer_timeout_ms, lock_acquired,
                                      &ls, &holds[i])) != ZKRC_OK)
      die(EXIT_ERROR, "lock %s: %s", path, zkrc_strerror(rc));
  }
  locks_wait_below(&ls, 1, deadline);
  int64_t end = peer_now_ns();
  /* The completions ran on the session's executor; what they freed there is
   * back in the heap by now.  Measure the raw figure first. */
  long after, after_trimmed, used_after, slack_after;
  measure_rss(&after, &after_trimmed);
  measure_heap(&used_after, &slack_after);
  say("done n=%ld secs=%.3f failures=%ld rss_before=%ld rss_after=%ld "
      "bytes_per_lock=%.0f trimmed_rss_before=%ld trimmed_rss_after=%ld "
      "trimmed_bytes_per_lock=%.0f heap_in_use_per_lock=%.0f "
      "heap_free_per_lock=%.0f",
      n, (double)(end - start) / 1e9, ls.failures, before, after,
      (double)(after - before) / (double)n, before_trimmed, after_trimmed,
      (double)(after_trimmed - before_trimmed) / (double)n,
      (double)(used_after - used_before) / (double)n,
      (double)(slack_after - slack_before) / (double)n);
  /* The driver may count the servers' transactions first: release on its
   * next line (or the end of input). */
  char line[256];
  read_command(line, sizeof line);
  /* Release in the background (the deletes are pipelined), then free. */
  g_mutex_lock(&ls.mu); /* no completion runs any more: n are done */
  for (long i = 0; i < n; i++)
    if (holds[i] && !g_hash_table_contains(ls.failed, holds[i]) &&
        zkrc_lock_hold_is_held(holds[i]))
      zkrc_lock_hold_release(holds[i]);
  g_mutex_unlock(&ls.mu);
  /* Close only once the servers have deleted the nodes.  Written when a
   * close with them all broke the bench's ensemble (ZOOKEEPER-4306:
   * 100,000 nodes in one session's close); the library now spreads them
   * over sessions of at most 768 KiB of paths each (README, "Many locks
   * in one process"), and the wait is kept so that the next run starts
   * from an empty tree. */
  locks_wait_deleted(hosts, prefix, n);
  for (long i = 0; i < n; i++)
    zkrc_lock_free(locks[i]);
  zkrc_session_close(s);
  g_hash_table_destroy(ls.failed);
  g_free(locks);
  g_free(holds);
  return EXIT_OK;
}

/* -------------------------------------------------------------- election */

static GMutex revoked_mu;
static GCond revoked_cond;
static gboolean revoked;

static void on_election_event(zkrc_election *e, const zkrc_election_event *info,
                              void *arg) {
  say("%s %" PRId64 " %s", zkrc_election_event_name(info->type),
      peer_now_ns() / 1000, info->node ? info->node : "-");
  if (info->type == ZKRC_ELECTION_REVOKED) {
    g_mutex_lock(&revoked_mu);
    revoked = TRUE;
    g_cond_broadcast(&revoked_cond);
    g_mutex_unlock(&revoked_mu);
  }
}

/* Is @p id among the participants, behind someone else (@p behind) or
 * anywhere?  A follower gets no event when its node is created. */
static gboolean election_has(zkrc_election *e, const char *id,
                             gboolean behind) {
  char **ids = NULL;
  if (zkrc_election_participants(e, &ids, NULL, peer_timeout_ms) != ZKRC_OK)
    return FALSE;
  gboolean found = FALSE;
  for (size_t i = behind ? 1 : 0; ids[0] && ids[i] && !found; i++)
    found = strcmp(ids[i], id) == 0;
  if (behind && ids[0] && strcmp(ids[0], id) == 0)
    found = FALSE;
  zkrc_strv_free(ids);
  return found;
}

/* Poll the queue (nothing announces a follower's node) until we are in
 * it; exits when that takes longer than the peer timeout. */
static void wait_in_queue(zkrc_election *e, const char *id, gboolean behind) {
  int64_t deadline = peer_now_ns() + (int64_t)peer_timeout_ms * 1000000;
  while (!election_has(e, id, behind)) {
    if (peer_now_ns() > deadline)
      die(EXIT_TIMEOUT, "our node did not appear in time");
    g_usleep(5000);
  }
}

static int mode_elect(const char *hosts, const char *path, const char *id) {
  zkrc_session *s = zkr_connect(hosts);
  int rc;
  zkrc_election_options eo;
  zkrc_election_options_init(&eo);
  eo.participant_id = id;
  eo.on_event = on_election_event;
  zkrc_election *e = NULL;
  if ((rc = zkrc_election_new(&e, s, path, &eo)) != ZKRC_OK ||
      (rc = zkrc_election_join(e)) != ZKRC_OK)
    die(EXIT_ERROR, "election %s: %s", path, zkrc_strerror(rc));
  wait_in_queue(e, id, FALSE);
  say("joined");
  char line[256];
  while (read_command(line, sizeof line) && strcmp(line, "quit") != 0) {
    if (strcmp(line, "resign") == 0) {
      g_mutex_lock(&revoked_mu);
      revoked = FALSE;
      g_mutex_unlock(&revoked_mu);
      rc = zkrc_election_resign(e);
      if (rc != ZKRC_OK) {
        say("error %s", zkrc_strerror(rc));
        continue;
      }
      /* Back in the queue, behind the new leader: "rejoined". */
      int64_t deadline =
          g_get_monotonic_time() + (int64_t)peer_timeout_ms * 1000;
      g_mutex_lock(&revoked_mu);
      while (!revoked)
        if (!g_cond_wait_until(&revoked_cond, &revoked_mu, deadline))
          die(EXIT_TIMEOUT, "no REVOKED after resigning");
      g_mutex_unlock(&revoked_mu);
      wait_in_queue(e, id, TRUE);
      say("rejoined");
    } else {
      say("error unknown command: %s", line);
    }
  }
  zkrc_election_free(e);
  zkrc_session_close(s);
  return EXIT_OK;
}

/* --------------------------------------------- family: rwlock, semaphore */

/* The read-write lock and the semaphore as CuratorPeer's bench mode runs
 * Curator's ("rwlock" and "semaphore" commands): one process, one thread
 * and one session per client, each warmed up (one acquisition) before
 * "ready", all started together by the start line; each loops until
 * SECONDS have passed since the start.  Per cycle a thread records how
 * long its acquisition waited. */

typedef struct family_run {
  GMutex mu;
  GCond cond;
  int warmed;
  gboolean go;
  int64_t start_ns, end_ns;
  int hold_ms; /* writers' and the semaphore holders' hold */
  int leases;  /* the semaphore's N */
  int readers_in, writers_in, leases_in; /* inside a hold (atomics) */
  int violations;                        /* atomic */
} family_run;

typedef struct family_client {
  family_run *run;
  gboolean writer; /* rwlock: the write side, else the read side */
  zkrc_session *s;
  zkrc_rwlock *rw; /* or: */
  zkrc_semaphore *sem;
  samples waits; /* ns from acquire called to held, one per cycle */
  int64_t finished_ns;
  GThread *thread;
} family_client;

static void must(const char *what, int rc) {
  if (rc == ZKRC_ETIMEDOUT)
    die(EXIT_TIMEOUT, "%s: timed out", what);
  if (rc != ZKRC_OK)
    die(EXIT_ERROR, "%s: %s", what, zkrc_strerror(rc));
}

static void hold_for(int ms) {
  if (ms > 0)
    g_usleep((gulong)ms * 1000);
}

/* One cycle of a read-write lock client, with the exclusion check (a
 * writer holds alone, readers while no writer holds); returns when it
 * held (ns). */
static int64_t rw_cycle(family_client *c) {
  family_run *r = c->run;
  int64_t held;
  if (c->writer) {
    zkrc_lock *w = zkrc_rwlock_writer(c->rw);
    must("acquire write", zkrc_lock_acquire(w, peer_timeout_ms));
    held = peer_now_ns();
    if (g_atomic_int_add(&r->writers_in, 1) != 0 ||
        g_atomic_int_get(&r->readers_in) != 0)
      g_atomic_int_inc(&r->violations);
    hold_for(r->hold_ms);
    g_atomic_int_add(&r->writers_in, -1);
    must("release write", zkrc_lock_release(w));
  } else {
    zkrc_lock *rd = zkrc_rwlock_reader(c->rw);
    must("acquire read", zkrc_lock_acquire(rd, peer_timeout_ms));
    held = peer_now_ns();
    g_atomic_int_inc(&r->readers_in);
    if (g_atomic_int_get(&r->writers_in) != 0)
      g_atomic_int_inc(&r->violations);
    g_atomic_int_add(&r->readers_in, -1);
    must("release read", zkrc_lock_release(rd));
  }
  return held;
}

/* One cycle of a semaphore client, with the check: at most N inside. */
static int64_t sem_cycle(family_client *c) {
  family_run *r = c->run;
  zkrc_semaphore_lease *lease;
  must("acquire lease",
       zkrc_semaphore_acquire(c->sem, peer_timeout_ms, &lease));
  int64_t held = peer_now_ns();
  if (g_atomic_int_add(&r->leases_in, 1) >= r->leases)
    g_atomic_int_inc(&r->violations);
  hold_for(r->hold_ms);
  g_atomic_int_add(&r->leases_in, -1);
  must("release lease", zkrc_semaphore_lease_release(lease));
  return held;
}

static int64_t family_cycle(family_client *c) {
  return c->rw ? rw_cycle(c) : sem_cycle(c);
}

static gpointer family_thread(gpointer data) {
  family_client *c = data;
  family_run *r = c->run;
  family_cycle(c); /* warm-up: the first ones create the directories */
  g_mutex_lock(&r->mu);
  r->warmed++;
  g_cond_broadcast(&r->cond);
  while (!r->go)
    g_cond_wait(&r->cond, &r->mu);
  g_mutex_unlock(&r->mu);
  int64_t now = r->start_ns;
  while (now < r->end_ns) {
    int64_t held = family_cycle(c);
    samples_add(&c->waits, held - now);
    now = peer_now_ns();
  }
  c->finished_ns = now;
  return NULL;
}

/* The waits of the clients whose writer flag is @p writers, in one array
 * (g_free it); their count in *n. */
static int64_t *family_waits(family_client *c, int clients, gboolean writers,
                             size_t *n) {
  *n = 0;
  for (int i = 0; i < clients; i++)
    if (c[i].writer == writers)
      *n += c[i].waits.n;
  int64_t *all = g_new(int64_t, *n + 1);
  size_t k = 0;
  for (int i = 0; i < clients; i++)
    if (c[i].writer == writers) {
      memcpy(all + k, c[i].waits.v, c[i].waits.n * sizeof *all);
      k += c[i].waits.n;
    }
  return all;
}

/* The figures of one side, appended to @p line: "PREFIXops=N
 * PREFIXwait_p50_us=A PREFIXwait_p99_us=B". */
static void family_side(GString *line, family_client *c, int clients,
                        gboolean writers, const char *prefix) {
  size_t n;
  int64_t *w = family_waits(c, clients, writers, &n);
  long p50 = peer_quantile_us(w, n, 0.50), p99 = peer_quantile_us(w, n, 0.99);
  g_string_append_printf(line, " %sops=%zu %swait_p50_us=%ld %swait_p99_us=%ld",
                         prefix, n, prefix, p50, prefix, p99);
  g_free(w);
}

/* rwlock (@p leases 0): @p clients readers and one writer; semaphore:
 * @p clients clients of an N = @p leases semaphore.  Prints "done secs=S
 * violations=V" and the sides' figures (rwlock: reader_ and writer_,
 * semaphore: no prefix). */
static int mode_family(const char *hosts, const char *path, long seconds,
                       int clients, int leases, int hold_ms) {
  family_run r = {.hold_ms = hold_ms, .leases = leases};
  g_mutex_init(&r.mu);
  g_cond_init(&r.cond);
  int n = leases ? clients : clients + 1;
  family_client *c = g_new0(family_client, n);
  for (int i = 0; i < n; i++) {
    c[i].run = &r;
    c[i].s = zkr_connect(hosts);
    char *id = g_strdup_printf("bench-family-%d-%d", (int)getpid(), i);
    if (leases) {
      zkrc_semaphore_options o;
      zkrc_semaphore_options_init(&o);
      o.participant_id = id;
      must("semaphore",
           zkrc_semaphore_new(&c[i].sem, c[i].s, path, leases, &o));
    } else {
      zkrc_rwlock_options o;
      zkrc_rwlock_options_init(&o);
      o.participant_id = id;
      must("rwlock", zkrc_rwlock_new(&c[i].rw, c[i].s, path, &o));
      c[i].writer = i == clients;
    }
    g_free(id);
  }
  for (int i = 0; i < n; i++)
    c[i].thread = g_thread_new("family", family_thread, &c[i]);
  g_mutex_lock(&r.mu);
  while (r.warmed < n)
    g_cond_wait(&r.cond, &r.mu);
  g_mutex_unlock(&r.mu);
  ready_and_wait();
  g_mutex_lock(&r.mu);
  r.start_ns = peer_now_ns();
  r.end_ns = r.start_ns + seconds * 1000000000;
  r.go = TRUE;
  g_cond_broadcast(&r.cond);
  g_mutex_unlock(&r.mu);
  int64_t last = r.start_ns;
  for (int i = 0; i < n; i++) {
    g_thread_join(c[i].thread);
    last = MAX(last, c[i].finished_ns);
  }
  GString *line = g_string_new(NULL);
  g_string_printf(line, "done secs=%.3f violations=%d",
                  (double)(last - r.start_ns) / 1e9, r.violations);
  family_side(line, c, n, FALSE, leases ? "" : "reader_");
  if (!leases)
    family_side(line, c, n, TRUE, "writer_");
  say_gstring(line);
  g_string_free(line, TRUE);
  /* The sessions close on the next line: zkr-bench reads the servers'
   * counters first (a close is a request too). */
  char cmd[64];
  read_command(cmd, sizeof cmd);
  for (int i = 0; i < n; i++) {
    zkrc_rwlock_free(c[i].rw);
    zkrc_semaphore_free(c[i].sem);
    zkrc_session_close(c[i].s);
    g_free(c[i].waits.v);
  }
  g_free(c);
  g_mutex_clear(&r.mu);
  g_cond_clear(&r.cond);
  return EXIT_OK;
}

/* ----------------------------------------------------------------- cache */

/* One line per change of the copy, as CuratorPeer's cache mode prints
 * them: "event TYPE PATH VERSION MZXID T_NS", T_NS read on entering the
 * listener (CLOCK_MONOTONIC).  The listener runs on the session's
 * executor; "ready" comes from the main thread once the first read is in
 * the copy. */
static void on_cache_event(zkrc_cache *c, const zkrc_cache_event *ev,
                           void *arg) {
  int64_t t = peer_now_ns();
  (void)c;
  (void)arg;
  /* The peers' protocol names events in capitals (CuratorPeer.java). */
  char *type = g_ascii_strup(zkrc_cache_event_name(ev->type), -1);
  if (ev->node == NULL) {
    if (ev->type != ZKRC_CACHE_INITIALIZED)
      say("connection %s", type);
  } else {
    say("event %s %s %" PRId32 " %" PRId64 " %" PRId64, type, ev->node->path,
        ev->node->stat.version, (int64_t)ev->node->stat.mzxid, t);
  }
  g_free(type);
}

/* Commands of the cache mode: "clock" ("clock T_NS", CLOCK_MONOTONIC now),
 * "stats" ("stats requests=R renewals=N", the session's counters), "quit"
 * or end of input. */
static int mode_cache(const char *hosts, const char *path, const char *kind) {
  zkrc_session *s = zkr_connect(hosts);
  zkrc_cache_options co;
  zkrc_cache_options_init(&co);
  co.on_event = on_cache_event;
  zkrc_cache *c = NULL;
  int64_t start = peer_now_ns();
  must("cache", strcmp(kind, "node") == 0
                    ? zkrc_node_cache_new(&c, s, path, &co)
                    : zkrc_tree_cache_new(&c, s, path, &co));
  must("the cache's first read",
       zkrc_cache_wait_initialized(c, peer_timeout_ms));
  say("ready init_us=%" PRId64 " nodes=%zu", (peer_now_ns() - start) / 1000,
      zkrc_cache_size(c));
  char line[256];
  while (read_command(line, sizeof line) && strcmp(line, "quit") != 0) {
    if (strcmp(line, "clock") == 0) {
      say("clock %" PRId64, peer_now_ns());
    } else if (strcmp(line, "stats") == 0) {
      zkrc_session_stats st;
      must("stats", zkrc_session_get_stats(s, &st, sizeof st));
      say("stats requests=%" PRIu64 " renewals=%" PRIu64, st.requests,
          st.renewals);
    } else {
      say("error unknown command: %s", line);
    }
  }
  zkrc_cache_free(c);
  zkrc_session_close(s);
  return EXIT_OK;
}

/* ------------------------------------------------------------ partition */

static GMutex part_mu;
static gboolean part_failed; /* FAILURE was told: exit 5 */

/* The state callback, on the session's executor: one line per state, as
 * kazoo_peer.py's partition mode prints them with ZKR_PEER_STAMP=1. */
static void on_partition_state(zkrc_partitioner *p,
                               const zkrc_partitioner_event *ev, void *arg) {
  int64_t t = peer_now_ns();
  (void)arg;
  if (ev->type == ZKRC_PARTITIONER_ACQUIRED) {
    GString *line = g_string_new(NULL);
    g_string_printf(line, "acquired %" PRId64 " ", t);
    for (size_t i = 0; i < ev->count; i++)
      g_string_append_printf(line, "%s%s", i ? "," : "", ev->items[i]);
    say_gstring(line);
    g_string_free(line, TRUE);
  } else if (ev->type == ZKRC_PARTITIONER_RELEASE) {
    say("release %" PRId64, t);
    if (zkrc_partitioner_release_set(p) != ZKRC_OK)
      say("error release_set refused");
  } else if (ev->type == ZKRC_PARTITIONER_FAILURE) {
    say("failure %" PRId64, t);
    g_mutex_lock(&part_mu);
    part_failed = TRUE;
    g_mutex_unlock(&part_mu);
  }
}

static int mode_partition(const char *hosts, const char *path, const char *id,
                          long boundary_ms, const char *item_list) {
  zkrc_session *s = zkr_connect(hosts);
  char **items = g_strsplit(item_list, ",", -1);
  zkrc_partitioner_options po;
  zkrc_partitioner_options_init(&po);
  po.identifier = id;
  po.time_boundary_ms = (int)boundary_ms;
  po.on_event = on_partition_state;
  zkrc_partitioner *p = NULL;
  must("partitioner",
       zkrc_partitioner_new(&p, s, path, (const char *const *)items,
                            g_strv_length(items), &po));
  char line[256];
  while (read_command(line, sizeof line) && strcmp(line, "quit") != 0) {
    if (strcmp(line, "clock") == 0)
      say("clock %" PRId64, peer_now_ns());
    else
      say("error unknown command: %s", line);
  }
  g_mutex_lock(&part_mu);
  gboolean failed = part_failed;
  g_mutex_unlock(&part_mu);
  zkrc_partitioner_free(p);
  zkrc_session_close(s);
  g_strfreev(items);
  return failed ? EXIT_ERROR : EXIT_OK;
}

/* ------------------------------------------------------------------ idle */

/* What staying alive costs: SESSIONS idle sessions of KIND (zkr: zkrecipes
 * sessions, each holding LOCKS locks; raw: plain C client handles, which
 * only ping), with a session timeout of SESSION_MS, idle for SECONDS after
 * "go".  Prints the negotiated timeout, and the library's own requests
 * and renewals in the window; the servers' packet counters (the bench)
 * say what else was sent. */
static int mode_idle(const char *hosts, const char *prefix, const char *kind,
                     long sessions, long locks, long timeout_ms, long seconds) {
  session_ms = (int)timeout_ms;
  gboolean raw = strcmp(kind, "raw") == 0;
  zkrc_session **zs = g_new0(zkrc_session *, sessions);
  zhandle_t **zh = g_new0(zhandle_t *, sessions);
  raw_conn *rcs = g_new0(raw_conn, sessions);
  GPtrArray *held = g_ptr_array_new();
  int negotiated = 0;
  for (long i = 0; i < sessions; i++) {
    if (raw) {
      zh[i] = raw_connect(hosts, &rcs[i]);
      negotiated = zoo_recv_timeout(zh[i]);
      continue;
    }
    zs[i] = zkr_connect(hosts);
    int rc;
    for (long j = 0; j < locks; j++) {
      char *path = g_strdup_printf("%s/s%ld-l%ld", prefix, i, j);
      zkrc_lock *lk = NULL;
      if ((rc = zkrc_lock_new(&lk, zs[i], path, NULL)) != ZKRC_OK ||
          (rc = zkrc_lock_acquire(lk, peer_timeout_ms)) != ZKRC_OK)
        die(EXIT_ERROR, "lock %s: %s", path, zkrc_strerror(rc));
      g_ptr_array_add(held, lk);
      g_free(path);
    }
  }
  /* Let the set-up's replies and the first renewals settle. */
  g_usleep(G_USEC_PER_SEC);
  ready_and_wait();
  uint64_t requests = 0, renewals = 0;
  zkrc_session_stats before, after;
  for (long i = 0; !raw && i < sessions; i++) {
    zkrc_session_get_stats(zs[i], &before, sizeof before);
    requests -= before.requests;
    renewals -= before.renewals;
  }
  g_usleep((gulong)seconds * G_USEC_PER_SEC);
  for (long i = 0; !raw && i < sessions; i++) {
    zkrc_session_get_stats(zs[i], &after, sizeof after);
    requests += after.requests;
    renewals += after.renewals;
  }
  /* (zkrecipes does not say what it negotiated; the bench's ensemble
   * grants up to 30 s, so it is what was asked.) */
  say("done sessions=%ld locks=%ld secs=%ld timeout_ms=%d negotiated_ms=%d "
      "requests=%" PRIu64 " renewals=%" PRIu64,
      sessions, locks, seconds, session_ms, raw ? negotiated : session_ms,
      requests, renewals);
  for (guint i = 0; i < held->len; i++) {
    zkrc_lock_release(g_ptr_array_index(held, i));
    zkrc_lock_free(g_ptr_array_index(held, i));
  }
  for (long i = 0; i < sessions; i++) {
    if (zs[i])
      zkrc_session_close(zs[i]);
    if (zh[i])
      zookeeper_close(zh[i]);
  }
  g_ptr_array_free(held, TRUE);
  g_free(zs);
  g_free(zh);
  g_free(rcs);
  return EXIT_OK;
}

/* ------------------------------------------------------------------ main */

static const char usage_text[] =
    "usage: zkr-bench-worker seq HOSTS DIR SECONDS\n"
    "       zkr-bench-worker pipe HOSTS DIR SECONDS WINDOW\n"
    "       zkr-bench-worker loop IMPL HOSTS PATH SECONDS\n"
    "       zkr-bench-worker contend IMPL HOSTS PATH SECONDS\n"
    "       zkr-bench-worker herd IMPL HOSTS PATH N\n"
    "       zkr-bench-worker waiters HOSTS PATH SESSIONS HOLDS [RATE]\n"
    "       zkr-bench-worker threads HOSTS PATH NTHREADS SECONDS\n"
    "       zkr-bench-worker locks HOSTS PREFIX N WINDOW\n"
    "       zkr-bench-worker elect HOSTS PATH ID\n"
    "       zkr-bench-worker rwlock HOSTS PATH SECONDS READERS HOLD_MS\n"
    "       zkr-bench-worker semaphore HOSTS PATH SECONDS CLIENTS N HOLD_MS\n"
    "       zkr-bench-worker cache HOSTS PATH node|tree\n"
    "       zkr-bench-worker partition HOSTS PATH ID TIME_BOUNDARY_MS ITEMS\n"
    "       zkr-bench-worker idle HOSTS PREFIX zkr|raw SESSIONS LOCKS "
    "SESSION_MS SECONDS\n"
    "IMPL: zkr (zkrecipes) or naive (every waiter watches the directory)\n";

static int usage(void) {
  fputs(usage_text, stderr);
  return EXIT_USAGE;
}

/* The number in argv[i], or exit with the usage. */
static long number_arg(char **argv, int i) {
  long n = parse_positive(argv[i]);
  if (n < 0) {
    fprintf(stderr, "zkr-bench-worker: not a positive number: %s\n", argv[i]);
    exit(usage());
  }
  return n;
}

static int run(int argc, char **argv) {
  const char *mode = argv[1];
  if (strcmp(mode, "seq") == 0 && argc == 5)
    return mode_seq(argv[2], argv[3], number_arg(argv, 4));
  if (strcmp(mode, "pipe") == 0 && argc == 6)
    return mode_pipe(argv[2], argv[3], number_arg(argv, 4),
                     number_arg(argv, 5));
  if (strcmp(mode, "waiters") == 0 && (argc == 6 || argc == 7))
    return mode_waiters(argv[2], argv[3], number_arg(argv, 4),
                        number_arg(argv, 5),
                        argc == 7 ? number_arg(argv, 6) : 0);
  if (strcmp(mode, "threads") == 0 && argc == 6)
    return mode_threads(argv[2], argv[3], number_arg(argv, 4),
                        number_arg(argv, 5));
  if (strcmp(mode, "locks") == 0 && argc == 6)
    return mode_locks(argv[2], argv[3], number_arg(argv, 4),
                      strcmp(argv[5], "0") == 0 ? 0 : number_arg(argv, 5));
  if (strcmp(mode, "elect") == 0 && argc == 5)
    return mode_elect(argv[2], argv[3], argv[4]);
  if (strcmp(mode, "rwlock") == 0 && argc == 7)
    return mode_family(
        argv[2], argv[3], number_arg(argv, 4), (int)number_arg(argv, 5), 0,
        strcmp(argv[6], "0") == 0 ? 0 : (int)number_arg(argv, 6));
  if (strcmp(mode, "semaphore") == 0 && argc == 8)
    return mode_family(argv[2], argv[3], number_arg(argv, 4),
                       (int)number_arg(argv, 5), (int)number_arg(argv, 6),
                       strcmp(argv[7], "0") == 0 ? 0
                                                 : (int)number_arg(argv, 7));
  if (strcmp(mode, "cache") == 0 && argc == 5 &&
      (strcmp(argv[4], "node") == 0 || strcmp(argv[4], "tree") == 0))
    return mode_cache(argv[2], argv[3], argv[4]);
  if (strcmp(mode, "partition") == 0 && argc == 7)
    return mode_partition(argv[2], argv[3], argv[4],
                          strcmp(argv[5], "0") == 0 ? 0 : number_arg(argv, 5),
                          argv[6]);
  if (strcmp(mode, "idle") == 0 && argc == 9 &&
      (strcmp(argv[4], "zkr") == 0 || strcmp(argv[4], "raw") == 0))
    return mode_idle(argv[2], argv[3], argv[4], number_arg(argv, 5),
                     strcmp(argv[6], "0") == 0 ? 0 : number_arg(argv, 6),
                     number_arg(argv, 7), number_arg(argv, 8));
  const lock_impl *impl = argc > 2 ? find_impl(argv[2]) : NULL;
  if (impl == NULL)
    return usage();
  if (strcmp(mode, "loop") == 0 && argc == 6)
    return mode_loop(impl, argv[3], argv[4], number_arg(argv, 5));
  if (strcmp(mode, "contend") == 0 && argc == 6)
    return mode_contend(impl, argv[3], argv[4], number_arg(argv, 5));
  if (strcmp(mode, "herd") == 0 && argc == 6)
    return mode_herd(impl, argv[3], argv[4], number_arg(argv, 5));
  return usage();
}

int main(int argc, char **argv) {
  peer_init("zkr-bench-worker");
  if (argc < 2)
    return usage();
  session_ms = (int)peer_env_long("ZKR_PEER_SESSION_MS", 30000);
  peer_timeout_ms = (int)peer_env_long("ZKR_PEER_TIMEOUT_MS", 120000);
  long lifetime = peer_env_long("ZKR_PEER_LIFETIME_S", 900);
  const char *log = getenv("ZKR_LOG");
  quiet_zk_log = log == NULL || *log == '\0' || strcmp(log, "0") == 0;

  if (peer_arm_watchdog(lifetime, EXIT_WATCHDOG) != 0)
    return EXIT_ERROR;
  signal(SIGPIPE, SIG_IGN);
  zkrc_log_from_env();
  return run(argc, argv);
}
