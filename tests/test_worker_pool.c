/*
 * The worker pool example (examples/zkr-worker, issue 17) against a real
 * single-member ensemble: three worker processes, nine items.
 *  - each item is worked on by exactly one worker, in kazoo's split (ids
 *    a, b, c sorted, items sorted: a takes items 1, 4, 7, ...), and every
 *    worker's view of the pool (the group) lists the three;
 *  - a worker killed with SIGKILL: its items move to the two others once
 *    its session has expired and the pool has been still for the time
 *    boundary (measured and printed, bounded by session timeout + time
 *    boundary + a margin, and no sooner than its session can expire), each
 *    item still worked on once; the others see it leave the pool;
 *  - a worker stopped with SIGTERM exits 0 after stopping its work, and
 *    its items move to the last one (without waiting for a session to
 *    expire);
 *  - its server stopped for longer than its session timeout, a worker is
 *    told FAILURE: it stops its work no later than the session timeout
 *    (measured), joins again with a new partitioner, and works on its items
 *    again once the server is back;
 *  - the control: a worker that confirms a RELEASE without stopping its
 *    work (--keep-items-on-release, the tests' flag) makes the "each item
 *    once" check fail: the same check, on the same logs, finds items
 *    worked on twice.
 *
 * What a worker works on is read from its log: "working on: ITEM..." says
 * its whole current set, "stopped working on: ..." empties it.  The tests
 * wait for those lines (events), never for a time.
 */
#include "config.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "linereader.h"
#include "testutil.h"

#define WORKER_PROGRAM TOP_BUILDDIR "/examples/zkr-worker"
#define WORKERS 3
#define ITEMS 9
#define SESSION_TIMEOUT_MS 2000
#define TIME_BOUNDARY_MS 500
/* Beyond session timeout + time boundary: the servers expire sessions in
 * buckets of a tick (200 ms), then a few round trips on a loaded machine. */
#define MARGIN_MS 1000

static int slow(int ms) { return getenv("ZKR_UNDER_VALGRIND") ? ms * 4 : ms; }

/* ============================================================= a worker */

typedef struct worker_proc {
  char id[8];
  zkrc_child child;
  zkt_lines log; /* its stderr */
  int status;    /* once reaped: exit status, or 128 + signal; -2 before */
} worker_proc;

static worker_proc *pool[WORKERS]; /* started and not freed yet */

/* The text after "zkr-worker[ID]: " in @p line. */
static const char *message(const char *line) {
  const char *m = strstr(line, "]: ");
  return m ? m + 3 : "";
}

/* Index of the first line of @p w from @p from on whose message is
 * @p what (or, with @p prefix, starts with it); -1 after @p timeout_ms or
 * once its stderr has ended. */
static int wait_message(worker_proc *w, const char *what, int prefix, int from,
                        int timeout_ms) {
  int64_t deadline = g_get_monotonic_time() + (int64_t)timeout_ms * 1000;
  int found = -1;
  g_mutex_lock(&zkt_lines_mu);
  for (;;) {
    for (guint i = (guint)from; i < w->log.lines->len && found < 0; i++) {
      const char *m = message(g_ptr_array_index(w->log.lines, i));
      if (prefix ? g_str_has_prefix(m, what) : strcmp(m, what) == 0)
        found = (int)i;
    }
    if (found >= 0 || w->log.eof ||
        !g_cond_wait_until(&zkt_lines_cond, &zkt_lines_mu, deadline))
      break;
  }
  g_mutex_unlock(&zkt_lines_mu);
  if (found < 0)
    fprintf(stderr, "\n  no line \"%s\" from worker %s\n", what, w->id);
  return found;
}

static int line_count(worker_proc *w) {
  g_mutex_lock(&zkt_lines_mu);
  int n = (int)w->log.lines->len;
  g_mutex_unlock(&zkt_lines_mu);
  return n;
}

static const char *item_names[ITEMS + 1] = {
    "item-1", "item-2", "item-3", "item-4", "item-5",
    "item-6", "item-7", "item-8", "item-9", NULL};

static worker_proc *start_worker(const char *path, const char *id,
                                 int keep_items_on_release) {
  char timeout[16], boundary[16];
  snprintf(timeout, sizeof timeout, "%d", SESSION_TIMEOUT_MS);
  snprintf(boundary, sizeof boundary, "%d", TIME_BOUNDARY_MS);
  const char *argv[32] = {WORKER_PROGRAM, "--session-timeout", timeout,
                          "--time-boundary", boundary};
  int n = 5;
  if (keep_items_on_release)
    argv[n++] = "--keep-items-on-release";
  argv[n++] = zkt_hosts();
  argv[n++] = path;
  argv[n++] = id;
  for (int i = 0; i < ITEMS; i++)
    argv[n++] = item_names[i];
  argv[n] = NULL;
  zkrc_spawn_options o;
  zkrc_spawn_options_init(&o);
  o.pipe_stderr = 1;
  worker_proc *w = g_new0(worker_proc, 1);
  g_strlcpy(w->id, id, sizeof w->id);
  w->status = -2;
  CU_ASSERT_EQUAL_FATAL(zkrc_spawn(&w->child, (char *const *)argv, &o), 0);
  zkt_lines_start(&w->log, w->child.err_fd, "worker");
  for (int i = 0; i < WORKERS; i++)
    if (pool[i] == NULL) {
      pool[i] = w;
      break;
    }
  if (wait_message(w, "joining ", 1, 0, slow(20000)) < 0)
    CU_FAIL_FATAL("zkr-worker did not start (is it built?)");
  return w;
}

/* Send @p sig; the exit status (128 + signal if killed by one), -1 if it
 * did not exit within @p timeout_ms (it is then killed). */
static int stop_worker(worker_proc *w, int sig, int timeout_ms) {
  if (w->status == -2) {
    kill(w->child.pid, sig);
    w->status = zkrc_child_wait(&w->child, timeout_ms);
  }
  return w->status;
}

/* Kill and free every worker still around (end of a test, and at exit
 * after a fatal failure). */
static void pool_cleanup(void) {
  for (int i = 0; i < WORKERS; i++) {
    worker_proc *w = pool[i];
    pool[i] = NULL;
    if (w == NULL)
      continue;
    stop_worker(w, SIGKILL, 5000);
    zkt_lines_join(&w->log); /* its stderr ended with the process */
    g_free(w);
  }
}

/* ======================================================== who owns what */

/* What @p w works on now, from its log (its last "working on:" line, or
 * nothing after a "stopped working on:"): a blank-separated list, or NULL
 * when it works on nothing.  Caller holds mu; g_free the result. */
static char *working_on(worker_proc *w) {
  for (guint i = w->log.lines->len; i-- > 0;) {
    const char *m = message(g_ptr_array_index(w->log.lines, i));
    if (g_str_has_prefix(m, "stopped working on: "))
      return NULL;
    if (g_str_has_prefix(m, "working on: "))
      return g_strdup(m + strlen("working on: "));
  }
  return NULL;
}

/* How many times the live workers @p live (@p n of them) work on each
 * item, in @p times; the number of items worked on by nobody.  Whether
 * every one of them works on something goes to @p all_working.  Caller
 * holds mu. */
static int count_owners(worker_proc **live, int n, int times[ITEMS],
                        int *all_working) {
  memset(times, 0, ITEMS * sizeof times[0]);
  *all_working = 1;
  for (int k = 0; k < n; k++) {
    char *set = working_on(live[k]);
    *all_working &= set != NULL;
    char **items = g_strsplit(set ? set : "", " ", -1);
    for (char **it = items; *it; it++)
      for (int i = 0; i < ITEMS; i++)
        times[i] += strcmp(*it, item_names[i]) == 0;
    g_strfreev(items);
    g_free(set);
  }
  int unowned = 0;
  for (int i = 0; i < ITEMS; i++)
    unowned += times[i] == 0;
  return unowned;
}

/* Wait until the @p n live workers all work on something and every item is
 * worked on (by one of them or more), at most @p timeout_ms.  Returns how
 * many items are worked on more than once then (0: each item exactly
 * once), or -1 when that never happened. */
static int wait_all_items_worked_on(worker_proc **live, int n, int timeout_ms) {
  int64_t deadline = g_get_monotonic_time() + (int64_t)timeout_ms * 1000;
  int times[ITEMS], all_working = 0, twice = -1;
  g_mutex_lock(&zkt_lines_mu);
  for (;;) {
    if (count_owners(live, n, times, &all_working) == 0 && all_working) {
      twice = 0;
      for (int i = 0; i < ITEMS; i++)
        twice += times[i] > 1;
      break;
    }
    if (!g_cond_wait_until(&zkt_lines_cond, &zkt_lines_mu, deadline))
      break;
  }
  g_mutex_unlock(&zkt_lines_mu);
  if (twice < 0)
    fprintf(stderr, "\n  the items never were all worked on\n");
  return twice;
}

/* Does @p w work on exactly @p want now? */
static int works_on(worker_proc *w, const char *want) {
  g_mutex_lock(&zkt_lines_mu);
  char *set = working_on(w);
  g_mutex_unlock(&zkt_lines_mu);
  int same = g_strcmp0(set, want) == 0;
  if (!same)
    fprintf(stderr, "\n  worker %s works on \"%s\", not \"%s\"\n", w->id,
            set ? set : "nothing", want);
  g_free(set);
  return same;
}

/* ================================================================ tests */

static void test_items_owned_once_and_moved(void) {
  pool_cleanup();
  char *path = zkt_path("pool");
  worker_proc *a = start_worker(path, "a", 0);
  worker_proc *b = start_worker(path, "b", 0);
  worker_proc *c = start_worker(path, "c", 0);
  worker_proc *all[] = {a, b, c};

  /* Each item once, in kazoo's split; every worker sees the three. */
  CU_ASSERT_EQUAL(wait_all_items_worked_on(all, 3, slow(20000)), 0);
  CU_ASSERT(works_on(a, "item-1 item-4 item-7"));
  CU_ASSERT(works_on(b, "item-2 item-5 item-8"));
  CU_ASSERT(works_on(c, "item-3 item-6 item-9"));
  for (int k = 0; k < 3; k++)
    CU_ASSERT(wait_message(all[k], "pool: a b c", 0, 0, slow(10000)) >= 0);

  /* SIGKILL: c's items go to a and b once its session has expired. */
  int from_a = line_count(a);
  int64_t t0 = zkt_now_ms();
  CU_ASSERT_EQUAL(stop_worker(c, SIGKILL, slow(5000)), 128 + SIGKILL);
  worker_proc *two[] = {a, b};
  CU_ASSERT_EQUAL(
      wait_all_items_worked_on(
          two, 2, slow(SESSION_TIMEOUT_MS + TIME_BOUNDARY_MS + 10000)),
      0);
  int64_t moved_ms = zkt_now_ms() - t0;
  CU_ASSERT(works_on(a, "item-1 item-3 item-5 item-7 item-9"));
  CU_ASSERT(works_on(b, "item-2 item-4 item-6 item-8"));
  /* Not before its session could expire (the servers heard from it at
   * most a third of the timeout before the kill), and within the bound. */
  CU_ASSERT(moved_ms >= SESSION_TIMEOUT_MS * 2 / 3 + TIME_BOUNDARY_MS);
  CU_ASSERT(moved_ms <=
            slow(SESSION_TIMEOUT_MS + TIME_BOUNDARY_MS + MARGIN_MS));
  CU_ASSERT(wait_message(a, "c left the pool (pid ", 1, from_a, slow(5000)) >=
            0);
  CU_ASSERT(wait_message(a, "pool: a b", 0, from_a, slow(5000)) >= 0);
  printf("\n    SIGKILL: c's items moved in %" PRId64 " ms (session timeout "
         "%d ms + time boundary %d ms = %d) ",
         moved_ms, SESSION_TIMEOUT_MS, TIME_BOUNDARY_MS,
         SESSION_TIMEOUT_MS + TIME_BOUNDARY_MS);

  /* SIGTERM: b stops its work, leaves, exits 0; a takes everything. */
  from_a = line_count(a);
  t0 = zkt_now_ms();
  CU_ASSERT_EQUAL(stop_worker(b, SIGTERM, slow(10000)), 0);
  CU_ASSERT(wait_message(b, "stopping (SIGTERM)", 0, 0, slow(5000)) >= 0);
  CU_ASSERT(wait_message(b, "stopped working on: ", 1, 0, slow(5000)) >= 0);
  CU_ASSERT(wait_message(b, "stopped", 0, 0, slow(5000)) >= 0);
  worker_proc *one[] = {a};
  CU_ASSERT_EQUAL(wait_all_items_worked_on(one, 1, slow(10000)), 0);
  moved_ms = zkt_now_ms() - t0;
  CU_ASSERT(works_on(a, "item-1 item-2 item-3 item-4 item-5 item-6 item-7 "
                        "item-8 item-9"));
  CU_ASSERT(moved_ms <= slow(TIME_BOUNDARY_MS + MARGIN_MS));
  CU_ASSERT(wait_message(a, "pool: a", 0, from_a, slow(5000)) >= 0);
  printf("\n    SIGTERM: b exited 0, its items moved in %" PRId64 " ms ",
         moved_ms);

  CU_ASSERT_EQUAL(stop_worker(a, SIGINT, slow(10000)), 0);
  CU_ASSERT(wait_message(a, "stopping (SIGINT)", 0, 0, slow(5000)) >= 0);
  pool_cleanup();
  g_free(path);
}

/* The control: a worker that does not stop on RELEASE.  It starts alone
 * (all nine items), then b and c join: it confirms the RELEASE but keeps
 * working, so the items b and c get are worked on twice, and the check of
 * the test above says so. */
static void test_control_release_without_stopping(void) {
  pool_cleanup();
  char *path = zkt_path("pool-control");
  worker_proc *a = start_worker(path, "a", 1);
  worker_proc *alone[] = {a};
  CU_ASSERT_EQUAL(wait_all_items_worked_on(alone, 1, slow(20000)), 0);
  worker_proc *b = start_worker(path, "b", 0);
  worker_proc *c = start_worker(path, "c", 0);
  worker_proc *all[] = {a, b, c};
  int twice = wait_all_items_worked_on(all, 3, slow(20000));
  CU_ASSERT(twice > 0);
  printf("\n    control: %d of %d items worked on twice ", twice, ITEMS);
  pool_cleanup();
  g_free(path);
}

/* FAILURE: the worker's server stops for longer than its session timeout.
 * The worker stops its work by its lease deadline (measured), then joins
 * again with a new partitioner, which works once the server is back. */
static void test_failure_joins_again(void) {
  pool_cleanup();
  char *path = zkt_path("pool-failure");
  worker_proc *a = start_worker(path, "a", 0);
  worker_proc *alone[] = {a};
  const char *everything = "item-1 item-2 item-3 item-4 item-5 item-6 "
                           "item-7 item-8 item-9";
  CU_ASSERT_EQUAL(wait_all_items_worked_on(alone, 1, slow(20000)), 0);
  CU_ASSERT(works_on(a, everything));

  zkrc_ensemble *e = zkt_ensemble();
  int from = line_count(a);
  int64_t t0 = zkt_now_ms();
  CU_ASSERT_EQUAL_FATAL(zkrc_ensemble_stop_member(e, 0), 0);
  char *want = g_strdup_printf("stopped working on: %s (partitioner failed)",
                               everything);
  from = wait_message(a, want, 0, from, slow(SESSION_TIMEOUT_MS + 5000));
  int64_t stopped_ms = zkt_now_ms() - t0;
  g_free(want);
  CU_ASSERT(from >= 0);
  CU_ASSERT(stopped_ms <= slow(SESSION_TIMEOUT_MS));
  printf("\n    FAILURE: a stopped its work %" PRId64 " ms after its server "
         "stopped (session timeout %d ms) ",
         stopped_ms, SESSION_TIMEOUT_MS);
  CU_ASSERT(wait_message(a, "joining ", 1, from > 0 ? from : 0, slow(5000)) >=
            0);

  CU_ASSERT_EQUAL_FATAL(zkrc_ensemble_restart(e, 0), 0);
  CU_ASSERT_EQUAL_FATAL(zkrc_ensemble_wait_serving(e, 0, slow(30000)), 0);
  CU_ASSERT_EQUAL(wait_all_items_worked_on(alone, 1, slow(60000)), 0);
  CU_ASSERT(works_on(a, everything));
  CU_ASSERT_EQUAL(stop_worker(a, SIGTERM, slow(10000)), 0);
  pool_cleanup();
  g_free(path);
}

/* ================================================================ main */

static void add_suites(void) {
  /* Runs before testutil's own exit cleanup (atexit order). */
  atexit(pool_cleanup);
  zkt_configure(1, 0);
  ZKT_SUITE("worker pool",
            {"each item owned once, moved on SIGKILL and SIGTERM",
             test_items_owned_once_and_moved},
            {"control: release without stopping works twice",
             test_control_release_without_stopping},
            /* Last: it stops the program's one server for a while. */
            {"FAILURE: stops by the lease deadline, joins again",
             test_failure_joins_again});
}

int main(void) { return zkt_run("test_worker_pool", add_suites); }
