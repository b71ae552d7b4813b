/*
 * The example daemon (examples/zkr-daemon) against a real single-member
 * ensemble.  Instances share one election and one work log:
 *  - failover: the test stops the leader (SIGTERM), kills the next one
 *    (SIGKILL), and checks from the work log that exactly one instance
 *    wrote at a time, each leadership as one block of lines with its own,
 *    strictly higher, fencing token;
 *  - a leader frozen (SIGSTOP) past its session timeout never writes after
 *    its successor once it runs again;
 *  - the log's fence refuses a token lower than one already written;
 *  - bad arguments get a clear message.
 *
 * Each instance's stderr is read by a thread of this program, which stamps
 * every line with its arrival time (this process's monotonic clock): the
 * handover times are measured from the signal to the "elected" line.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>

#include "testutil.h"

#define DAEMON_PROGRAM TOP_BUILDDIR "/examples/zkr-daemon"
#define INTERVAL_MS "100"
#define ELECTED "elected leader, fencing token "

static int slow(int ms) { return getenv("ZKR_UNDER_VALGRIND") ? ms * 4 : ms; }

/* ============================================================ instances */

typedef struct line {
  char *text;
  int64_t at_ms; /* when it arrived here */
} line;

typedef struct instance {
  char id[16];
  pid_t pid;
  GThread *reader;
  GPtrArray *lines; /* of line*, guarded by mu */
  gboolean eof;
  gboolean reaped;
  int status; /* once reaped: exit status, or 128 + signal */
} instance;

static GMutex mu;
static GCond cond;
static GPtrArray *instances; /* every instance not freed yet */

typedef struct reader_arg {
  instance *in;
  int fd;
} reader_arg;

static gpointer read_lines(gpointer data) {
  reader_arg *ra = data;
  instance *in = ra->in;
  FILE *f = fdopen(ra->fd, "r");
  g_free(ra);
  char *buf = NULL;
  size_t cap = 0;
  while (f && getline(&buf, &cap, f) > 0) {
    buf[strcspn(buf, "\n")] = '\0';
    if (getenv("ZKT_VERBOSE"))
      fprintf(stderr, "%s\n", buf);
    line *l = g_new(line, 1);
    l->text = g_strdup(buf);
    l->at_ms = zkt_now_ms();
    g_mutex_lock(&mu);
    g_ptr_array_add(in->lines, l);
    g_cond_broadcast(&cond);
    g_mutex_unlock(&mu);
  }
  free(buf);
  if (f)
    fclose(f);
  g_mutex_lock(&mu);
  in->eof = TRUE;
  g_cond_broadcast(&cond);
  g_mutex_unlock(&mu);
  return NULL;
}

static int line_count(instance *in) {
  g_mutex_lock(&mu);
  int n = (int)in->lines->len;
  g_mutex_unlock(&mu);
  return n;
}

/* Index of the first line of @p in from @p from on containing @p what; -1
 * after @p timeout_ms or once its stderr has ended. */
static int wait_line(instance *in, const char *what, int from, int timeout_ms) {
  int64_t deadline = g_get_monotonic_time() + (int64_t)timeout_ms * 1000;
  int found = -1;
  g_mutex_lock(&mu);
  for (;;) {
    for (guint i = (guint)from; i < in->lines->len && found < 0; i++)
      if (strstr(((line *)g_ptr_array_index(in->lines, i))->text, what))
        found = (int)i;
    if (found >= 0 || in->eof || !g_cond_wait_until(&cond, &mu, deadline))
      break;
  }
  g_mutex_unlock(&mu);
  return found;
}

/* How many lines of @p in contain @p what. */
static int lines_with(instance *in, const char *what) {
  int n = 0;
  g_mutex_lock(&mu);
  for (guint i = 0; i < in->lines->len; i++)
    n += strstr(((line *)g_ptr_array_index(in->lines, i))->text, what) != NULL;
  g_mutex_unlock(&mu);
  return n;
}

static instance *start_instance(const char *id, const char *path,
                                const char *log) {
  const char *timeout = G_STRINGIFY(ZKT_SESSION_TIMEOUT_MS);
  const char *argv[] = {DAEMON_PROGRAM, "--id",      id,
                        "--servers",    zkt_hosts(), "--election",
                        path,           "--log",     log,
                        "--interval",   INTERVAL_MS, "--session-timeout",
                        timeout,        NULL};
  /* The instance dies with us even if we are SIGKILLed. */
  zkrc_spawn_options o;
  zkrc_spawn_options_init(&o);
  o.pipe_stderr = 1;
  zkrc_child c;
  CU_ASSERT_EQUAL_FATAL(zkrc_spawn(&c, (char *const *)argv, &o), 0);
  pid_t pid = c.pid;
  zkt_track_child(pid);
  instance *in = g_new0(instance, 1);
  g_strlcpy(in->id, id, sizeof in->id);
  in->pid = pid;
  in->lines = g_ptr_array_new();
  reader_arg *ra = g_new(reader_arg, 1);
  ra->in = in;
  ra->fd = c.err_fd;
  in->reader = g_thread_new("daemon-stderr", read_lines, ra);
  g_mutex_lock(&mu);
  if (instances == NULL)
    instances = g_ptr_array_new();
  g_ptr_array_add(instances, in);
  g_mutex_unlock(&mu);
  if (wait_line(in, "joined", 0, slow(20000)) < 0) {
    fprintf(stderr, "\nzkr-daemon %s did not start (is %s built?)\n", id,
            DAEMON_PROGRAM);
    CU_FAIL_FATAL("zkr-daemon did not start");
  }
  return in;
}

/* Send @p sig and wait at most @p timeout_ms for the instance to exit;
 * returns its exit status (128 + signal if killed by one), -1 on timeout
 * (it is then killed). */
static int stop_instance(instance *in, int sig, int timeout_ms) {
  if (in->reaped)
    return in->status;
  CU_ASSERT_EQUAL(kill(in->pid, sig), 0);
  in->status = zkt_wait_child(in->pid, timeout_ms);
  in->reaped = TRUE;
  return in->status;
}

static void free_instance(instance *in) {
  if (!in->reaped)
    stop_instance(in, SIGKILL, 5000);
  g_thread_join(in->reader); /* its stderr ended with the process */
  for (guint i = 0; i < in->lines->len; i++) {
    line *l = g_ptr_array_index(in->lines, i);
    g_free(l->text);
    g_free(l);
  }
  g_ptr_array_free(in->lines, TRUE);
  g_free(in);
}

/* Kill, reap and free every instance still around (end of a test, and at
 * exit after a fatal failure). */
static void instances_cleanup(void) {
  g_mutex_lock(&mu);
  GPtrArray *all = instances;
  instances = NULL;
  g_mutex_unlock(&mu);
  for (guint i = 0; all && i < all->len; i++)
    free_instance(g_ptr_array_index(all, i));
  if (all)
    g_ptr_array_free(all, TRUE);
}

/* The first of @p n instances to log "elected" at or after its line
 * @p from[i]; its token in *token and the line's arrival in *at_ms.  NULL
 * after @p timeout_ms. */
static instance *wait_elected(instance **ins, const int *from, int n,
                              int timeout_ms, int64_t *token, int64_t *at_ms) {
  int64_t deadline = g_get_monotonic_time() + (int64_t)timeout_ms * 1000;
  instance *who = NULL;
  g_mutex_lock(&mu);
  for (;;) {
    for (int k = 0; k < n && who == NULL; k++) {
      for (guint i = (guint)from[k]; i < ins[k]->lines->len && !who; i++) {
        line *l = g_ptr_array_index(ins[k]->lines, i);
        const char *at = strstr(l->text, ELECTED);
        if (at) {
          who = ins[k];
          *token = g_ascii_strtoll(at + strlen(ELECTED), NULL, 10);
          *at_ms = l->at_ms;
        }
      }
    }
    if (who || !g_cond_wait_until(&cond, &mu, deadline))
      break;
  }
  g_mutex_unlock(&mu);
  return who;
}

/* ============================================================ work log */

typedef struct block {
  int64_t token;
  char id[16];
  int lines;
} block;

typedef struct work_log {
  GArray *blocks;  /* of block: consecutive lines with one token */
  int malformed;   /* lines that do not parse */
  int interleaved; /* a token's lines split by another's, or a block with
                    * two writers */
  int decreasing;  /* a token lower than the one before it */
  int seq_gaps;    /* an instance's seq not going up by one */
} work_log;

static void read_work_log(const char *path, work_log *wl) {
  memset(wl, 0, sizeof *wl);
  wl->blocks = g_array_new(FALSE, FALSE, sizeof(block));
  char *text = NULL;
  if (!g_file_get_contents(path, &text, NULL, NULL))
    return;
  GHashTable *last_seq =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  char **lines = g_strsplit(text, "\n", -1);
  for (int i = 0; lines[i]; i++) {
    if (lines[i][0] == '\0')
      continue;
    char id[16];
    int64_t token;
    unsigned seq;
    if (sscanf(lines[i], "%" SCNd64 " %15s %u", &token, id, &seq) != 3) {
      wl->malformed++;
      continue;
    }
    block *last = wl->blocks->len
                      ? &g_array_index(wl->blocks, block, wl->blocks->len - 1)
                      : NULL;
    if (last && token < last->token)
      wl->decreasing++;
    if (last && token == last->token) {
      wl->interleaved += strcmp(last->id, id) != 0;
      last->lines++;
    } else {
      for (guint b = 0; b < wl->blocks->len; b++)
        wl->interleaved += g_array_index(wl->blocks, block, b).token == token;
      block nb = {token, "", 1};
      g_strlcpy(nb.id, id, sizeof nb.id);
      g_array_append_val(wl->blocks, nb);
    }
    unsigned before = GPOINTER_TO_UINT(g_hash_table_lookup(last_seq, id));
    wl->seq_gaps += seq != before + 1;
    g_hash_table_replace(last_seq, g_strdup(id), GUINT_TO_POINTER(seq));
  }
  g_strfreev(lines);
  g_hash_table_destroy(last_seq);
  g_free(text);
}

static void work_log_clear(work_log *wl) { g_array_free(wl->blocks, TRUE); }

typedef struct written_arg {
  const char *path;
  int64_t token;
  int want;
} written_arg;

/* Has the leader with @p token written at least @p want lines? */
static int written(void *arg) {
  written_arg *w = arg;
  work_log wl;
  read_work_log(w->path, &wl);
  int n = 0;
  for (guint b = 0; b < wl.blocks->len; b++) {
    block *bl = &g_array_index(wl.blocks, block, b);
    n += bl->token == w->token ? bl->lines : 0;
  }
  work_log_clear(&wl);
  return n >= w->want;
}

static int wait_written(const char *log, int64_t token, int want) {
  written_arg w = {log, token, want};
  return zkt_wait_for(written, &w, slow(10000));
}

/* ================================================================ tests */

static void test_three_instances_fail_over(void) {
  instances_cleanup();
  char *path = zkt_path("daemon");
  char *dir = g_dir_make_tmp("zkt-daemon-XXXXXX", NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
  char *log = g_build_filename(dir, "work.log", NULL);
  zhandle_t *zh = zkt_raw();

  instance *all[4];
  all[0] = start_instance("a", path, log);
  all[1] = start_instance("b", path, log);
  all[2] = start_instance("c", path, log);
  int from[4] = {0, 0, 0, 0};
  int64_t t1 = 0, t2 = 0, t3 = 0, at = 0;
  instance *l1 = wait_elected(all, from, 3, slow(10000), &t1, &at);
  CU_ASSERT_PTR_NOT_NULL_FATAL(l1);
  CU_ASSERT(wait_written(log, t1, 4));

  /* SIGTERM the leader: it steps down and exits 0; another takes over. */
  /* rest and rest2: the instances other than the leaders, who are among
   * all[]; initialized since cppcheck cannot see that the loops fill every
   * slot wait_elected reads. */
  instance *rest[3] = {NULL, NULL, NULL};
  int n = 0;
  for (int i = 0; i < 3; i++)
    if (all[i] != l1) {
      from[n] = line_count(all[i]);
      rest[n++] = all[i];
    }
  int64_t t_term = zkt_now_ms();
  CU_ASSERT_EQUAL(stop_instance(l1, SIGTERM, slow(10000)), 0);
  instance *l2 = wait_elected(rest, from, 2, slow(5000), &t2, &at);
  CU_ASSERT_PTR_NOT_NULL_FATAL(l2);
  int64_t term_ms = at - t_term;
  CU_ASSERT(t2 > t1);
  CU_ASSERT(lines_with(l1, "stopping: stepping down") == 1);
  /* It hears its own step-down before it stops (the REVOKED of the
   * leave, which a blocking free would drop). */
  CU_ASSERT(lines_with(l1, "revoked (resigned)") == 1);
  CU_ASSERT(lines_with(l1, "stopped") == 1);
  CU_ASSERT(wait_written(log, t2, 4));

  /* A replacement joins (at the back of the queue). */
  all[3] = start_instance("d", path, log);

  /* SIGKILL the leader: its node goes with its session, after the session
   * timeout; the next in the queue (not the newcomer) takes over. */
  instance *rest2[2] = {NULL, NULL};
  n = 0;
  for (int i = 0; i < 4; i++)
    if (all[i] != l1 && all[i] != l2) {
      from[n] = line_count(all[i]);
      rest2[n++] = all[i];
    }
  int64_t t_kill = zkt_now_ms();
  CU_ASSERT_EQUAL(stop_instance(l2, SIGKILL, slow(5000)), 128 + SIGKILL);
  instance *l3 = wait_elected(rest2, from, 2,
                              slow(ZKT_SESSION_TIMEOUT_MS + 2000), &t3, &at);
  CU_ASSERT_PTR_NOT_NULL_FATAL(l3);
  int64_t kill_ms = at - t_kill;
  CU_ASSERT(t3 > t2);
  CU_ASSERT(l3 != all[3]);
  CU_ASSERT(wait_written(log, t3, 4));
  printf("\n    handover after SIGTERM %" PRId64 " ms, after SIGKILL %" PRId64
         " ms (session timeout %d ms) ",
         term_ms, kill_ms, ZKT_SESSION_TIMEOUT_MS);

  /* Everyone still running exits 0 on SIGTERM and leaves no node (the
   * follower first, so that the leadership ends with the leader). */
  for (int i = 0; i < 4; i++)
    if (all[i] != l3 && !all[i]->reaped)
      CU_ASSERT_EQUAL(stop_instance(all[i], SIGTERM, slow(10000)), 0);
  CU_ASSERT_EQUAL(stop_instance(l3, SIGTERM, slow(10000)), 0);
  CU_ASSERT(zkt_child_count(zh, path) <= 0);

  /* The work log: three leaderships, one block each, one writer at a
   * time, tokens strictly increasing; no write was ever refused (no two
   * instances believed they led at once). */
  work_log wl;
  read_work_log(log, &wl);
  CU_ASSERT_EQUAL(wl.malformed, 0);
  CU_ASSERT_EQUAL(wl.interleaved, 0);
  CU_ASSERT_EQUAL(wl.decreasing, 0);
  CU_ASSERT_EQUAL(wl.seq_gaps, 0);
  CU_ASSERT_EQUAL_FATAL(wl.blocks->len, 3);
  block *b = (block *)wl.blocks->data;
  CU_ASSERT(b[0].token == t1 && strcmp(b[0].id, l1->id) == 0);
  CU_ASSERT(b[1].token == t2 && strcmp(b[1].id, l2->id) == 0);
  CU_ASSERT(b[2].token == t3 && strcmp(b[2].id, l3->id) == 0);
  int refused = 0, elected = 0;
  for (int i = 0; i < 4; i++) {
    refused += lines_with(all[i], "fenced off");
    elected += lines_with(all[i], ELECTED);
  }
  CU_ASSERT_EQUAL(refused, 0);
  CU_ASSERT_EQUAL(elected, 3);
  work_log_clear(&wl);

  instances_cleanup();
  zookeeper_close(zh);
  unlink(log);
  rmdir(dir);
  g_free(log);
  g_free(dir);
  g_free(path);
}

/* A leader frozen (SIGSTOP) for longer than its session timeout is
 * replaced; when it runs again it must not write after its successor: it
 * learns it is no longer leader (and, should it try anyway, the log's
 * fence refuses its lower token). */
static void test_frozen_leader_does_not_write_after_successor(void) {
  instances_cleanup();
  char *path = zkt_path("daemon-freeze");
  char *dir = g_dir_make_tmp("zkt-daemon-XXXXXX", NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
  char *log = g_build_filename(dir, "work.log", NULL);
  instance *all[2];
  all[0] = start_instance("a", path, log);
  all[1] = start_instance("b", path, log);
  int from[2] = {0, 0};
  int64_t t1 = 0, t2 = 0, at = 0;
  instance *l1 = wait_elected(all, from, 2, slow(10000), &t1, &at);
  CU_ASSERT_PTR_NOT_NULL_FATAL(l1);
  instance *other = l1 == all[0] ? all[1] : all[0];
  CU_ASSERT(wait_written(log, t1, 3));

  CU_ASSERT_EQUAL_FATAL(kill(l1->pid, SIGSTOP), 0);
  int64_t t_stop = zkt_now_ms();
  int from_other = line_count(other);
  instance *l2 = wait_elected(&other, &from_other, 1,
                              slow(ZKT_SESSION_TIMEOUT_MS + 2000), &t2, &at);
  CU_ASSERT_PTR_NOT_NULL(l2);
  printf("\n    successor elected %" PRId64 " ms after SIGSTOP ", at - t_stop);
  CU_ASSERT(t2 > t1);
  CU_ASSERT(wait_written(log, t2, 3));
  int from_l1 = line_count(l1);
  CU_ASSERT_EQUAL(kill(l1->pid, SIGCONT), 0);
  CU_ASSERT(wait_line(l1, "revoked", from_l1, slow(10000)) >= 0);
  /* Some more work by the successor while the old leader runs again. */
  CU_ASSERT(wait_written(log, t2, 8));

  CU_ASSERT_EQUAL(stop_instance(l1, SIGTERM, slow(10000)), 0);
  CU_ASSERT_EQUAL(stop_instance(other, SIGTERM, slow(10000)), 0);
  work_log wl;
  read_work_log(log, &wl);
  CU_ASSERT_EQUAL(wl.malformed, 0);
  CU_ASSERT_EQUAL(wl.interleaved, 0);
  CU_ASSERT_EQUAL(wl.decreasing, 0);
  CU_ASSERT_EQUAL(wl.blocks->len, 2);
  if (wl.blocks->len == 2) {
    block *b = (block *)wl.blocks->data;
    CU_ASSERT(b[0].token == t1 && strcmp(b[0].id, l1->id) == 0);
    CU_ASSERT(b[1].token == t2 && strcmp(b[1].id, other->id) == 0);
  }
  printf("(the old leader tried to write %d time(s) after it resumed) ",
         lines_with(l1, "fenced off"));
  work_log_clear(&wl);
  instances_cleanup();
  unlink(log);
  rmdir(dir);
  g_free(log);
  g_free(dir);
  g_free(path);
}

/* A stale leader is fenced off by the work log: a line with a higher token
 * already there makes the daemon refuse to write. */
static void test_lower_token_is_refused(void) {
  instances_cleanup();
  char *path = zkt_path("daemon-fence");
  char *dir = g_dir_make_tmp("zkt-daemon-XXXXXX", NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
  char *log = g_build_filename(dir, "work.log", NULL);
  /* A token far above any this ensemble will hand out soon. */
  CU_ASSERT_FATAL(
      g_file_set_contents(log, "9000000000000000000 z 1\n", -1, NULL));
  instance *in = start_instance("a", path, log);
  int from = 0;
  int64_t token = 0, at = 0;
  CU_ASSERT_PTR_NOT_NULL_FATAL(
      wait_elected(&in, &from, 1, slow(10000), &token, &at));
  CU_ASSERT(wait_line(in, "fenced off", 0, slow(5000)) >= 0);
  CU_ASSERT_EQUAL(stop_instance(in, SIGTERM, slow(10000)), 0);
  char *text = NULL;
  CU_ASSERT(g_file_get_contents(log, &text, NULL, NULL));
  CU_ASSERT_STRING_EQUAL(text ? text : "", "9000000000000000000 z 1\n");
  g_free(text);
  instances_cleanup();
  unlink(log);
  rmdir(dir);
  g_free(log);
  g_free(dir);
  g_free(path);
}

static void test_bad_arguments(void) {
  /* No --id: a clear message, exit status 2, nothing started. */
  char *out = NULL, *err = NULL;
  int status = -1;
  const char *argv[] = {DAEMON_PROGRAM, "--servers",      "127.0.0.1:1",
                        "--log",        "/nonexistent/x", NULL};
  CU_ASSERT_FATAL(g_spawn_sync(NULL, (char **)argv, NULL, 0, NULL, NULL, &out,
                               &err, &status, NULL));
  CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 2);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "--id"));
  g_free(out);
  g_free(err);
}

/* ================================================================ main */

static void add_suites(void) {
  /* Runs before testutil's own exit cleanup (atexit order). */
  atexit(instances_cleanup);
  zkt_configure(1, 0);
  ZKT_SUITE("daemon", {"bad arguments", test_bad_arguments},
            {"lower token is refused", test_lower_token_is_refused},
            {"three instances fail over", test_three_instances_fail_over},
            {"frozen leader does not write after successor",
             test_frozen_leader_does_not_write_after_successor});
}

int main(void) { return zkt_run("test_daemon", add_suites); }
