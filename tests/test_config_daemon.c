/*
 * The configuration centre (examples/zkr-config-daemon and
 * examples/zkr-config-edit, issue 16) against a real single-member
 * ensemble:
 *  - the daemon prints the configuration it starts with, then reloads it on
 *    every change: two editor processes making 20 edits each (distinct
 *    keys, concurrently) all land - the node ends with every key and
 *    version 2 + 40, each edit wrote a version of its own - and the
 *    daemon's reloads end on that version, their logged changes adding up
 *    to the node's final text;
 *  - a configuration that does not parse is refused and the last good one
 *    kept (the next good one is compared with it); the editor refuses to
 *    edit it; a deleted node keeps the last good one too; SIGINT stops the
 *    daemon cleanly;
 *  - the control: the lost-update check catches a lost update.  An editor
 *    made to pause between its read and its write while another editor
 *    writes loses nothing with compare-and-set, and loses the other's key
 *    with --plain-set.  The same 2 x 20 load with --plain-set is measured;
 *  - across its server's restart the daemon keeps its configuration, then
 *    follows the node again.
 *
 * The daemon's stderr is read by a thread of this program; the tests wait
 * for its lines (events), never for a time.
 */
#include "config.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "config-text.h"
#include "linereader.h"
#include "testutil.h"

#define DAEMON_PROGRAM TOP_BUILDDIR "/examples/zkr-config-daemon"
#define EDITOR_PROGRAM TOP_BUILDDIR "/examples/zkr-config-edit"
#define EDITORS 2
#define EDITS_EACH 20
#define ALL_EDITS (EDITORS * EDITS_EACH)

static int slow(int ms) { return getenv("ZKR_UNDER_VALGRIND") ? ms * 4 : ms; }

/* ============================================================ the daemon */

typedef struct daemon_proc {
  zkrc_child child;
  zkt_lines log; /* its stderr */
  int status;    /* once reaped: exit status, or 128 + signal; -2 before */
} daemon_proc;

static daemon_proc *running; /* the one daemon not freed yet, if any */

static int line_count(daemon_proc *d) {
  g_mutex_lock(&zkt_lines_mu);
  int n = (int)d->log.lines->len;
  g_mutex_unlock(&zkt_lines_mu);
  return n;
}

/* Index of the first line from @p from on containing @p what; -1 after
 * @p timeout_ms or once the daemon's stderr has ended. */
static int wait_line(daemon_proc *d, const char *what, int from,
                     int timeout_ms) {
  int64_t deadline = g_get_monotonic_time() + (int64_t)timeout_ms * 1000;
  int found = -1;
  g_mutex_lock(&zkt_lines_mu);
  for (;;) {
    for (guint i = (guint)from; i < d->log.lines->len && found < 0; i++)
      if (strstr(g_ptr_array_index(d->log.lines, i), what))
        found = (int)i;
    if (found >= 0 || d->log.eof ||
        !g_cond_wait_until(&zkt_lines_cond, &zkt_lines_mu, deadline))
      break;
  }
  g_mutex_unlock(&zkt_lines_mu);
  if (found < 0)
    fprintf(stderr, "\n  no daemon line with \"%s\"\n", what);
  return found;
}

/* Line @p i (a copy: g_free it). */
static char *line_at(daemon_proc *d, int i) {
  g_mutex_lock(&zkt_lines_mu);
  char *l = g_strdup(g_ptr_array_index(d->log.lines, i));
  g_mutex_unlock(&zkt_lines_mu);
  return l;
}

static daemon_proc *start_daemon(const char *path) {
  const char *argv[] = {DAEMON_PROGRAM, zkt_hosts(), path, NULL};
  zkrc_spawn_options o;
  zkrc_spawn_options_init(&o);
  o.pipe_stderr = 1;
  daemon_proc *d = g_new0(daemon_proc, 1);
  d->status = -2;
  CU_ASSERT_EQUAL_FATAL(zkrc_spawn(&d->child, (char *const *)argv, &o), 0);
  zkt_lines_start(&d->log, d->child.err_fd, "config-daemon");
  running = d;
  if (wait_line(d, "following", 0, slow(20000)) < 0)
    CU_FAIL_FATAL("zkr-config-daemon did not start (is it built?)");
  return d;
}

/* Send @p sig; the exit status (128 + signal if killed by one), -1 if it
 * did not exit within @p timeout_ms (it is then killed). */
static int stop_daemon(daemon_proc *d, int sig, int timeout_ms) {
  if (d->status == -2) {
    kill(d->child.pid, sig);
    d->status = zkrc_child_wait(&d->child, timeout_ms);
  }
  return d->status;
}

/* Kill and free the daemon still around (end of a test, and at exit after
 * a fatal failure). */
static void daemon_cleanup(void) {
  daemon_proc *d = running;
  running = NULL;
  if (d == NULL)
    return;
  stop_daemon(d, SIGKILL, 5000);
  zkt_lines_join(&d->log); /* its stderr ended with the process */
  g_free(d);
}

/* The daemon's view, rebuilt from its log: every "added", "changed" and
 * "removed" line applied in order to an empty configuration.  Also checks
 * that the versions it loaded only ever went up. */
static void daemon_view(daemon_proc *d, config *view, int *versions_down) {
  const char *tag = "zkr-config-daemon: ";
  int64_t last = -1;
  *versions_down = 0;
  for (int i = 0, n = line_count(d); i < n; i++) {
    char *l = line_at(d, i);
    const char *m = strstr(l, tag) ? strstr(l, tag) + strlen(tag) : "";
    char key[CONFIG_MAX_KEY + 1], value[256];
    int32_t version;
    int end = 0;
    if (sscanf(m, "version %" SCNd32 ":%n", &version, &end) == 1 && end > 0) {
      *versions_down += version <= last;
      last = version;
    } else if (sscanf(m, "  added %64s = %255[^\n]", key, value) == 2) {
      config_set(view, key, value);
    } else if (sscanf(m, "  changed %64s = %255[^(]", key, value) == 2) {
      value[strlen(value) - 1] = '\0'; /* the blank before "(was" */
      config_set(view, key, value);
    } else if (sscanf(m, "  removed %64s", key) == 1) {
      config_delete(view, key);
    }
    g_free(l);
  }
}

/* ============================================================ the editor */

typedef struct edit_result {
  int status;       /* exit status */
  int32_t version;  /* written, or -1 */
  int conflicts;    /* compare-and-set failures it retried */
  char output[256]; /* its stdout */
} edit_result;

/* Run the editor on @p path with @p args (NULL-terminated) and wait for
 * it, at most 30 s. */
static void run_editor(const char *path, const char *const *args,
                       edit_result *res) {
  const char *argv[16] = {EDITOR_PROGRAM, zkt_hosts(), path};
  int n = 3;
  while (*args && n < 15)
    argv[n++] = *args++;
  argv[n] = NULL;
  zkrc_spawn_options o;
  zkrc_spawn_options_init(&o);
  o.pipe_stdout = 1;
  o.pipe_stderr = 1;
  zkrc_child c;
  memset(res, 0, sizeof *res);
  res->version = -1;
  res->status = -1;
  if (zkrc_spawn(&c, (char *const *)argv, &o) != 0)
    return;
  res->status = zkrc_child_wait(&c, slow(30000)); /* a few bytes: no stall */
  ssize_t got = read(c.out_fd, res->output, sizeof res->output - 1);
  res->output[got > 0 ? got : 0] = '\0';
  char said[1024];
  got = read(c.err_fd, said, sizeof said - 1);
  if (got > 0 && getenv("ZKT_VERBOSE"))
    fprintf(stderr, "%.*s", (int)got, said);
  zkrc_child_close(&c);
  sscanf(res->output, "wrote version %" SCNd32 " (%d", &res->version,
         &res->conflicts);
}

typedef struct editor_job {
  const char *path;
  int id;
  int plain_set;
  int32_t versions[EDITS_EACH]; /* what each edit wrote */
  int failed, conflicts;
} editor_job;

/* One editor process after another, each setting its own key
 * "e<id>-<i>" = "<i>".  Runs on a thread of its own, which spawns (and so
 * outlives) its editors. */
static gpointer editor_loop(gpointer data) {
  editor_job *job = data;
  for (int i = 0; i < EDITS_EACH; i++) {
    char kv[64];
    snprintf(kv, sizeof kv, "e%d-%d=%d", job->id, i, i);
    const char *args[] = {job->plain_set ? "--plain-set" : kv,
                          job->plain_set ? kv : NULL, NULL};
    edit_result res;
    run_editor(job->path, args, &res);
    job->versions[i] = res.version;
    job->failed += res.status != 0;
    job->conflicts += res.conflicts;
  }
  return NULL;
}

/* Run EDITORS editor loops at once on @p path. */
static void run_editors(const char *path, int plain_set, editor_job *jobs) {
  GThread *threads[EDITORS];
  for (int t = 0; t < EDITORS; t++) {
    jobs[t] = (editor_job){.path = path, .id = t, .plain_set = plain_set};
    threads[t] = g_thread_new("editor", editor_loop, &jobs[t]);
  }
  for (int t = 0; t < EDITORS; t++)
    g_thread_join(threads[t]);
}

/* =============================================================== the node */

/* The configuration at @p path as the servers have it, and its version;
 * 0 when it was read and parsed. */
static int read_node(zhandle_t *zh, const char *path, config *out,
                     int32_t *version) {
  static char buf[65536];
  int len = sizeof buf;
  struct Stat st;
  if (zoo_get(zh, path, 0, buf, &len, &st) != ZOK)
    return -1;
  *version = st.version;
  char why[160];
  return config_parse(buf, len > 0 ? (size_t)len : 0, out, why, sizeof why);
}

/* How many of the @p n edits "key=value" in @p edits are not in the
 * configuration at @p path: lost updates.  (-1: unreadable.) */
static int lost_updates(zhandle_t *zh, const char *path,
                        const char *const *edits, int n) {
  config c = {NULL, 0};
  int32_t version;
  if (read_node(zh, path, &c, &version) != 0)
    return -1;
  int lost = 0;
  for (int i = 0; i < n; i++) {
    const char *eq = strchr(edits[i], '=');
    char *key = g_strndup(edits[i], (gsize)(eq - edits[i]));
    const char *has = config_get(&c, key);
    lost += has == NULL || strcmp(has, eq + 1) != 0;
    g_free(key);
  }
  config_clear(&c);
  return lost;
}

/* Every edit the editor loops make. */
static char **all_edits(void) {
  char **edits = g_new0(char *, ALL_EDITS + 1);
  for (int t = 0; t < EDITORS; t++)
    for (int i = 0; i < EDITS_EACH; i++)
      edits[t * EDITS_EACH + i] = g_strdup_printf("e%d-%d=%d", t, i, i);
  return edits;
}

/* How many versions from @p from to @p to exactly one edit of @p jobs
 * wrote. */
static int versions_written_once(const editor_job *jobs, int32_t from,
                                 int32_t to) {
  int once = 0;
  for (int32_t v = from; v <= to; v++) {
    int by = 0;
    for (int t = 0; t < EDITORS; t++)
      for (int i = 0; i < EDITS_EACH; i++)
        by += jobs[t].versions[i] == v;
    once += by == 1;
  }
  return once;
}

/* How many keys of @p final the daemon's view (daemon_view()) lacks, has
 * with another value, or has in excess. */
static int keys_unlike_daemon_view(daemon_proc *d, const config *final,
                                   int *versions_down) {
  config view = {NULL, 0};
  daemon_view(d, &view, versions_down);
  int unlike = 0;
  for (size_t i = 0; i < final->count; i++) {
    const char *seen = config_get(&view, final->entries[i].key);
    unlike += seen == NULL || strcmp(seen, final->entries[i].value) != 0;
  }
  for (size_t i = 0; i < view.count; i++)
    unlike += config_get(final, view.entries[i].key) == NULL;
  config_clear(&view);
  return unlike;
}

/* ================================================================ tests */

static void test_concurrent_editors_lose_nothing(void) {
  daemon_cleanup();
  char *path = zkt_path("config");
  zhandle_t *zh = zkt_raw();
  edit_result res;
  const char *first[] = {"color=blue", "size=10", NULL};
  run_editor(path, first, &res);
  CU_ASSERT_EQUAL_FATAL(res.status, 0);
  CU_ASSERT_EQUAL(res.version, 1); /* created empty (0), then written */

  /* The daemon starts with what is there, and says so. */
  daemon_proc *d = start_daemon(path);
  CU_ASSERT(wait_line(d, "version 1: 2 settings; 2 added", 0, slow(10000)) >=
            0);
  CU_ASSERT(wait_line(d, "added   color = blue", 0, slow(5000)) >= 0);
  CU_ASSERT(wait_line(d, "added   size = 10", 0, slow(5000)) >= 0);

  /* One change of an existing key, reloaded without a restart. */
  const char *bigger[] = {"size=20", NULL};
  run_editor(path, bigger, &res);
  CU_ASSERT_EQUAL(res.version, 2);
  CU_ASSERT(wait_line(d, "version 2: 2 settings; 0 added, 1 changed", 0,
                      slow(10000)) >= 0);
  CU_ASSERT(wait_line(d, "changed size = 20 (was 10)", 0, slow(5000)) >= 0);

  /* The load: every edit lands, on a version of its own. */
  int64_t t0 = zkt_now_ms();
  editor_job jobs[EDITORS];
  run_editors(path, 0, jobs);
  int64_t took = zkt_now_ms() - t0;
  int failed = 0, conflicts = 0;
  for (int t = 0; t < EDITORS; t++) {
    failed += jobs[t].failed;
    conflicts += jobs[t].conflicts;
  }
  CU_ASSERT_EQUAL(failed, 0);
  CU_ASSERT_EQUAL(versions_written_once(jobs, 3, 2 + ALL_EDITS), ALL_EDITS);
  char **edits = all_edits();
  CU_ASSERT_EQUAL(lost_updates(zh, path, (const char *const *)edits, ALL_EDITS),
                  0);
  config final = {NULL, 0};
  int32_t final_version = -1;
  CU_ASSERT_EQUAL_FATAL(read_node(zh, path, &final, &final_version), 0);
  CU_ASSERT_EQUAL(final_version, 2 + ALL_EDITS);
  CU_ASSERT_EQUAL(final.count, 2 + ALL_EDITS);
  printf("\n    %d edits by %d editors in %" PRId64 " ms: %d conflicts "
         "retried, none lost ",
         ALL_EDITS, EDITORS, took, conflicts);

  /* The daemon's last reload is the final version, and what it logged adds
   * up to the node's text. */
  char *want = g_strdup_printf("version %" PRId32 ": %zu settings",
                               final_version, final.count);
  CU_ASSERT(wait_line(d, want, 0, slow(10000)) >= 0);
  g_free(want);
  CU_ASSERT_EQUAL(stop_daemon(d, SIGTERM, slow(10000)), 0);
  CU_ASSERT(wait_line(d, "stopped with version", 0, slow(5000)) >= 0);
  /* (All its lines are in: the last one was.) */
  int versions_down = -1;
  CU_ASSERT_EQUAL(keys_unlike_daemon_view(d, &final, &versions_down), 0);
  CU_ASSERT_EQUAL(versions_down, 0);
  config_clear(&final);
  g_strfreev(edits);
  daemon_cleanup();
  zookeeper_close(zh);
  g_free(path);
}

static void test_malformed_keeps_last_good(void) {
  daemon_cleanup();
  char *path = zkt_path("config-bad");
  zhandle_t *zh = zkt_raw();
  zkt_make_path(zh, path);
  struct Stat st;
  const char *good = "# first\na = 1\nb = 2\n";
  CU_ASSERT_EQUAL_FATAL(zoo_set2(zh, path, good, (int)strlen(good), -1, &st),
                        ZOK);
  int32_t v_good = st.version;
  daemon_proc *d = start_daemon(path);
  char *want = g_strdup_printf("version %" PRId32 ": 2 settings", v_good);
  CU_ASSERT(wait_line(d, want, 0, slow(10000)) >= 0);
  g_free(want);

  /* Refused, with the reason; the daemon runs on with version v_good. */
  const char *bad = "a = 1\nthis is not a setting\n";
  CU_ASSERT_EQUAL(zoo_set2(zh, path, bad, (int)strlen(bad), -1, &st), ZOK);
  want = g_strdup_printf("version %" PRId32 " refused: line 2: expected "
                         "\"key = value\", got \"this is not a setting\"; "
                         "keeping version %" PRId32,
                         st.version, v_good);
  CU_ASSERT(wait_line(d, want, 0, slow(10000)) >= 0);
  g_free(want);

  /* The editor does not edit what it cannot parse. */
  edit_result res;
  const char *args[] = {"c=3", NULL};
  run_editor(path, args, &res);
  CU_ASSERT_EQUAL(res.status, 1);
  CU_ASSERT_EQUAL(res.version, -1);

  /* The next good version is compared with the last good one (b changed),
   * not with the refused text (which had no b). */
  const char *fixed = "a = 1\nb = 3\n";
  CU_ASSERT_EQUAL(zoo_set2(zh, path, fixed, (int)strlen(fixed), -1, &st), ZOK);
  want = g_strdup_printf("version %" PRId32
                         ": 2 settings; 0 added, 1 changed, 0 removed",
                         st.version);
  int at = wait_line(d, want, 0, slow(10000));
  CU_ASSERT(at >= 0);
  CU_ASSERT(wait_line(d, "changed b = 3 (was 2)", at, slow(5000)) >= 0);
  g_free(want);

  /* A deleted node keeps the last configuration too. */
  int32_t v_fixed = st.version;
  CU_ASSERT_EQUAL(zoo_delete(zh, path, -1), ZOK);
  want = g_strdup_printf("configuration node deleted: keeping version %" PRId32,
                         v_fixed);
  CU_ASSERT(wait_line(d, want, 0, slow(10000)) >= 0);
  g_free(want);

  /* SIGINT: a clean stop. */
  CU_ASSERT_EQUAL(stop_daemon(d, SIGINT, slow(10000)), 0);
  CU_ASSERT(wait_line(d, "stopping (SIGINT)", 0, slow(5000)) >= 0);
  want = g_strdup_printf("stopped with version %" PRId32, v_fixed);
  CU_ASSERT(wait_line(d, want, 0, slow(5000)) >= 0);
  g_free(want);
  daemon_cleanup();
  zookeeper_close(zh);
  g_free(path);
}

/* Editor A reads, then waits on its stdin while editor B reads and writes
 * the same version; then A writes.  The number of B's and A's keys lost. */
static int race_two_editors(const char *path, int plain_set) {
  const char *argv[] = {EDITOR_PROGRAM,
                        zkt_hosts(),
                        path,
                        "--pause-after-read",
                        plain_set ? "--plain-set" : "a=1",
                        plain_set ? "a=1" : NULL,
                        NULL};
  zkrc_spawn_options o;
  zkrc_spawn_options_init(&o);
  o.pipe_stdin = 1;
  o.pipe_stdout = 1;
  o.pipe_stderr = 1;
  zkrc_child a;
  CU_ASSERT_EQUAL_FATAL(zkrc_spawn(&a, (char *const *)argv, &o), 0);
  /* Its "read version N; waiting" line: A has read. */
  char said[256] = "";
  FILE *err = fdopen(a.err_fd, "r");
  CU_ASSERT_PTR_NOT_NULL_FATAL(err);
  a.err_fd = -1; /* now err's */
  CU_ASSERT_PTR_NOT_NULL(fgets(said, sizeof said, err));
  CU_ASSERT_PTR_NOT_NULL(strstr(said, "waiting for stdin to end"));

  edit_result b;
  const char *b_args[] = {"b=2", NULL};
  run_editor(path, b_args, &b);
  CU_ASSERT_EQUAL(b.status, 0);
  close(a.in_fd); /* A's stdin ends: it writes now */
  a.in_fd = -1;
  CU_ASSERT_EQUAL(zkrc_child_wait(&a, slow(30000)), 0);
  fclose(err);
  /* With compare-and-set, A's write was refused once and retried. */
  char out[256] = "";
  ssize_t got = read(a.out_fd, out, sizeof out - 1);
  out[got > 0 ? got : 0] = '\0';
  zkrc_child_close(&a);
  CU_ASSERT_PTR_NOT_NULL(
      strstr(out, plain_set ? "without compare-and-set" : "(1 conflict)"));

  zhandle_t *zh = zkt_raw();
  const char *edits[] = {"a=1", "b=2"};
  int lost = lost_updates(zh, path, edits, 2);
  zookeeper_close(zh);
  return lost;
}

static void test_control_plain_set_loses_updates(void) {
  /* The race on cue: compare-and-set makes A read again (nothing lost);
   * a plain set writes A's copy over B's key (one lost). */
  char *path = zkt_path("config-cas");
  CU_ASSERT_EQUAL(race_two_editors(path, 0), 0);
  g_free(path);
  path = zkt_path("config-plain");
  CU_ASSERT_EQUAL(race_two_editors(path, 1), 1);
  g_free(path);

  /* The concurrent load of the first test, with plain sets: measured. */
  path = zkt_path("config-plain-load");
  editor_job jobs[EDITORS];
  run_editors(path, 1, jobs);
  CU_ASSERT_EQUAL(jobs[0].failed + jobs[1].failed, 0);
  zhandle_t *zh = zkt_raw();
  char **edits = all_edits();
  int lost = lost_updates(zh, path, (const char *const *)edits, ALL_EDITS);
  CU_ASSERT(lost >= 0);
  printf("\n    the same load with plain sets: %d of %d edits lost ", lost,
         ALL_EDITS);
  g_strfreev(edits);
  zookeeper_close(zh);
  g_free(path);
}

/* The daemon rides out its server's restart: it keeps its configuration
 * while disconnected, and follows the node again afterwards (the listener
 * reads it again on the new connection or session). */
static void test_server_restart_keeps_following(void) {
  daemon_cleanup();
  char *path = zkt_path("config-restart");
  edit_result res;
  const char *one[] = {"k=1", NULL};
  run_editor(path, one, &res);
  CU_ASSERT_EQUAL_FATAL(res.version, 1);
  daemon_proc *d = start_daemon(path);
  CU_ASSERT(wait_line(d, "version 1: 1 setting;", 0, slow(10000)) >= 0);

  zkrc_ensemble *e = zkt_ensemble();
  int from = line_count(d);
  CU_ASSERT_EQUAL_FATAL(zkrc_ensemble_stop_member(e, 0), 0);
  CU_ASSERT(wait_line(d, "connection lost: keeping version 1", from,
                      slow(10000)) >= 0);
  CU_ASSERT_EQUAL_FATAL(zkrc_ensemble_restart(e, 0), 0);
  CU_ASSERT_EQUAL_FATAL(zkrc_ensemble_wait_serving(e, 0, slow(30000)), 0);

  const char *two[] = {"k=2", NULL};
  run_editor(path, two, &res);
  CU_ASSERT_EQUAL(res.version, 2);
  from = wait_line(d, "version 2: 1 setting; 0 added, 1 changed", from,
                   slow(30000));
  CU_ASSERT(from >= 0);
  CU_ASSERT(wait_line(d, "changed k = 2 (was 1)", from, slow(5000)) >= 0);
  CU_ASSERT_EQUAL(stop_daemon(d, SIGTERM, slow(10000)), 0);
  daemon_cleanup();
  g_free(path);
}

/* ================================================================ main */

static void add_suites(void) {
  /* Runs before testutil's own exit cleanup (atexit order). */
  atexit(daemon_cleanup);
  zkt_configure(1, 0);
  ZKT_SUITE(
      "config daemon",
      {"concurrent editors lose nothing", test_concurrent_editors_lose_nothing},
      {"malformed configuration keeps the last good one",
       test_malformed_keeps_last_good},
      {"control: plain set loses updates",
       test_control_plain_set_loses_updates},
      /* Last: it stops the program's one server for a while. */
      {"server restart keeps following", test_server_restart_keeps_following});
}

int main(void) { return zkt_run("test_config_daemon", add_suites); }
