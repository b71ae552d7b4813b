/*
 * tests/test_zkrwatch.c - zkr-watch, run as built (tools/zkr-watch)
 * against the program's real one-member ensemble, reached through its
 * fault proxy (so that a test can take the connection away; another
 * expires its session on the servers); the changes
 * it must report are made by a plain ZooKeeper handle straight to the
 * member, and checked against the stat the servers return for them.
 * --json lines are parsed back with json-glib.
 *
 * Every zkr-watch is started with the testing library's zkrc_spawn (the
 * child dies with this program), stdin at its end, stdout and stderr read
 * through pipes with poll; its exit is awaited with zkrc_child_wait, every
 * wait with a deadline.  The watch is known to be set when zkr-watch -v
 * says "watching PATH" (after the cache's first read): every change made
 * after that must be reported.  Each change is made only once the one
 * before it has been reported, since a node changed twice between two
 * reads is reported once (as with every ZooKeeper watch).  The commands
 * the watch runs print their pid, which is registered so that whatever
 * happens their process groups are SIGKILLed at exit.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "testutil.h"
#include "toolproc.h"

#define ZKR_WATCH TOP_BUILDDIR "/tools/zkr-watch"
#define ZKR TOP_BUILDDIR "/tools/zkr"
/* Run as `zkr watch' instead of by its own name (one test does). */
static int via_zkr;

/* zkr-watch's exit statuses (zkr-watch --help, zkr-watch(1)). */
#define EXIT_USAGE 2
#define EXIT_BAD_PATH 65
#define EXIT_UNAVAILABLE 69
#define EXIT_NOPERM 77
#define EXIT_NOT_FOUND 127

#define START_TIMEOUT 10000  /* zkr-watch connects and reads the node */
#define REPORT_TIMEOUT 10000 /* a change is reported */
#define EXIT_TIMEOUT 10000   /* zkr-watch exits once it should */
/* Connection loss is noticed within 2/3 of the session timeout; then
 * the connection (or a new session) is made again. */
#define RECOVER_TIMEOUT 20000

/* ------------------------------------------------------------ processes */

static GArray *command_pids; /* the commands' pids (and process groups) */
static char *tmp_dir;

static void cleanup_processes(void) {
  proc_free_all();
  for (guint i = 0; command_pids && i < command_pids->len; i++) {
    pid_t pid = g_array_index(command_pids, pid_t, i);
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
  }
  if (command_pids)
    g_array_set_size(command_pids, 0);
}

static void remove_tmp_dir(void) {
  if (tmp_dir == NULL)
    return;
  GDir *d = g_dir_open(tmp_dir, 0, NULL);
  const char *name;
  while (d && (name = g_dir_read_name(d)) != NULL) {
    char *path = g_build_filename(tmp_dir, name, NULL);
    g_unlink(path);
    g_free(path);
  }
  if (d)
    g_dir_close(d);
  g_rmdir(tmp_dir);
  g_clear_pointer(&tmp_dir, g_free);
}

static void cleanup_at_exit(void) {
  cleanup_processes();
  remove_tmp_dir();
}

/* A file name in this program's temporary directory (g_free it). */
static char *tmp_file(const char *name) {
  if (tmp_dir == NULL) {
    tmp_dir = g_dir_make_tmp("zkr-watch-test-XXXXXX", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(tmp_dir);
  }
  static int n;
  return g_strdup_printf("%s/%s-%d", tmp_dir, name, ++n);
}

/* zkr-watch -s HOSTS -t 2000 --server-tick 200, then @p args. */
static proc *watch_start(const char *const *args) {
  const char *argv[40] = {ZKR_WATCH, "--servers", zkt_hosts(), "-t", "2000"};
  int n = 5;
  if (via_zkr) { /* zkr watch --servers ... */
    memmove(argv + 2, argv + 1, 4 * sizeof *argv);
    argv[0] = ZKR;
    argv[1] = "watch";
    n = 6;
  }
  argv[n++] = "--server-tick";
  argv[n++] = G_STRINGIFY(ZKT_TICK_MS);
  for (int i = 0; args[i] && n < 39; i++)
    argv[n++] = args[i];
  argv[n] = NULL;
  return proc_start(argv);
}

static void expect_exit(proc *p, int want) {
  int got = proc_wait(p, EXIT_TIMEOUT);
  if (got != want)
    fprintf(stderr, "\nzkr-watch exited %d, expected %d; stderr:\n%s\n", got,
            want, p->err->str);
  CU_ASSERT_EQUAL(got, want);
}

/* Wait until the watch of @p path is set (-v). */
static void wait_watching(proc *p, const char *path) {
  char *said = g_strdup_printf("%s: watching %s (",
                               via_zkr ? "zkr watch" : "zkr-watch", path);
  CU_ASSERT_TRUE_FATAL(proc_wait_text(p, 1, said, START_TIMEOUT));
  g_free(said);
}

/* "EVENT\tPATH\tVERSION\tVALUE\n" (VALUE escaped by the caller). */
static char *line_of(const char *event, const char *path, int version,
                     const char *value) {
  return g_strdup_printf("%s\t%s\t%d\t%s\n", event, path, version, value);
}

/* The lines expected, one at a time (g_string_free(.., TRUE) it). */
static void add_line(GString *want, const char *event, const char *path,
                     int version, const char *value) {
  g_string_append_printf(want, "%s\t%s\t%d\t%s\n", event, path, version, value);
}

/* Wait until stdout has @p line (a whole line). */
static int wait_line(proc *p, const char *event, const char *path, int version,
                     const char *value) {
  char *line = line_of(event, path, version, value);
  int ok = proc_wait_text(p, 0, line, REPORT_TIMEOUT);
  g_free(line);
  return ok;
}

/* Register the pid a command printed ("pid=N" on stdout) for cleanup. */
static pid_t command_pid(proc *p) {
  if (!proc_wait_text(p, 0, "\n", START_TIMEOUT))
    return 0;
  const char *at = strstr(p->out->str, "pid=");
  pid_t pid = at ? (pid_t)atoi(at + 4) : 0;
  if (command_pids == NULL)
    command_pids = g_array_new(FALSE, FALSE, sizeof(pid_t));
  if (pid > 0)
    g_array_append_val(command_pids, pid);
  return pid;
}

static int group_gone(void *arg) {
  pid_t pgid = (pid_t)(intptr_t)arg;
  return kill(-pgid, 0) != 0 && errno == ESRCH;
}

/* ------------------------------------------------------------ the node */

/* A handle straight to the member, past the proxy (which a test may
 * close): the changes zkr-watch must see. */
static zhandle_t *direct(void) {
  zhandle_t *zh =
      zkt_raw_to(zkrc_ensemble_direct_connect_string(zkt_ensemble()));
  zkt_make_path(zh, "/zkt"); /* zkt_path()'s parent */
  return zh;
}

static struct Stat create(zhandle_t *zh, const char *path, const char *data,
                          int len) {
  struct Stat st;
  memset(&st, 0, sizeof st);
  int rc =
      zoo_create2(zh, path, data, len, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0, &st);
  CU_ASSERT_EQUAL_FATAL(rc, ZOK);
  return st;
}

static struct Stat set(zhandle_t *zh, const char *path, const char *data,
                       int len) {
  struct Stat st;
  memset(&st, 0, sizeof st);
  CU_ASSERT_EQUAL_FATAL(zoo_set2(zh, path, data, len, -1, &st), ZOK);
  return st;
}

static void remove_node(zhandle_t *zh, const char *path) {
  CU_ASSERT_EQUAL_FATAL(zoo_delete(zh, path, -1), ZOK);
}

/* ------------------------------------------------------- plain output */

/* Create, two sets, delete: one line each, with the versions the servers
 * gave (0, 1, 2; REMOVED the last one) and the values escaped (newline,
 * tab, backslash, a control byte, UTF-8 kept); --count 4 then exits 0.
 * Printed VALUE goes back to the bytes with bash's printf %b. */
static void test_text_changes(void) {
  char *path = zkt_path("watch-text");
  zhandle_t *zh = direct();
  const char *args[] = {"-v", "--count", "4", path, NULL};
  proc *p = watch_start(args);
  wait_watching(p, path); /* the node does not exist yet */

  CU_ASSERT_EQUAL(create(zh, path, "one", 3).version, 0);
  CU_ASSERT_TRUE(wait_line(p, "added", path, 0, "one"));
  const char two[] = "two\nlines\tand \\ \x01 h\xc3\xa9";
  CU_ASSERT_EQUAL(set(zh, path, two, (int)strlen(two)).version, 1);
  const char *two_escaped = "two\\nlines\\tand \\\\ \\x01 h\xc3\xa9";
  CU_ASSERT_TRUE(wait_line(p, "updated", path, 1, two_escaped));
  CU_ASSERT_EQUAL(set(zh, path, "three", 5).version, 2);
  CU_ASSERT_TRUE(wait_line(p, "updated", path, 2, "three"));
  remove_node(zh, path);
  CU_ASSERT_TRUE(wait_line(p, "removed", path, 2, "three"));
  expect_exit(p, 0);

  /* Exactly these lines, nothing else on stdout. */
  GString *want = g_string_new(NULL);
  add_line(want, "added", path, 0, "one");
  add_line(want, "updated", path, 1, two_escaped);
  add_line(want, "updated", path, 2, "three");
  add_line(want, "removed", path, 2, "three");
  CU_ASSERT_STRING_EQUAL(p->out->str, want->str);
  g_string_free(want, TRUE);

  /* bash's printf %b gives the bytes back. */
  const char *argv[] = {"bash", "-c",        "printf %b \"$1\"",
                        "bash", two_escaped, NULL};
  proc *b = proc_start(argv);
  CU_ASSERT_EQUAL(proc_wait(b, EXIT_TIMEOUT), 0);
  CU_ASSERT_STRING_EQUAL(b->out->str, two);
  cleanup_processes();
  zookeeper_close(zh);
  g_free(path);
}

/* The state at the start: not printed by default (the first line is the
 * first change); with --initial printed first, as ADDED, with its
 * version. */
static void test_initial(void) {
  char *path = zkt_path("watch-initial");
  zhandle_t *zh = direct();
  create(zh, path, "start", 5);
  set(zh, path, "start2", 6); /* version 1 */

  const char *plain[] = {"-v", "--count", "1", path, NULL};
  proc *p = watch_start(plain);
  wait_watching(p, path);
  set(zh, path, "next", 4);
  CU_ASSERT_TRUE(wait_line(p, "updated", path, 2, "next"));
  expect_exit(p, 0);
  char *only = line_of("updated", path, 2, "next");
  CU_ASSERT_STRING_EQUAL(p->out->str, only);
  g_free(only);

  const char *initial[] = {"-v", "--initial", "--count", "2", path, NULL};
  p = watch_start(initial);
  CU_ASSERT_TRUE(wait_line(p, "added", path, 2, "next"));
  wait_watching(p, path);
  set(zh, path, "last", 4);
  CU_ASSERT_TRUE(wait_line(p, "updated", path, 3, "last"));
  expect_exit(p, 0);
  GString *want = g_string_new(NULL);
  add_line(want, "added", path, 2, "next");
  add_line(want, "updated", path, 3, "last");
  CU_ASSERT_STRING_EQUAL(p->out->str, want->str);
  g_string_free(want, TRUE);
  cleanup_processes();
  zookeeper_close(zh);
  g_free(path);
}

/* ---------------------------------------------------------------- JSON */

static JsonObject *parse_line(const char *line, JsonParser *parser) {
  GError *error = NULL;
  if (!json_parser_load_from_data(parser, line, -1, &error)) {
    fprintf(stderr, "\nnot JSON (%s): %s\n", error->message, line);
    g_error_free(error);
    return NULL;
  }
  JsonNode *root = json_parser_get_root(parser);
  return root && JSON_NODE_HOLDS_OBJECT(root) ? json_node_get_object(root)
                                              : NULL;
}

/* The @p nth (0-based) line of @p text (g_free it), or NULL. */
static char *nth_line(const char *text, int nth) {
  char **lines = g_strsplit(text, "\n", -1);
  char *line = (int)g_strv_length(lines) > nth ? g_strdup(lines[nth]) : NULL;
  g_strfreev(lines);
  return line;
}

/* A binary value (a NUL, 0xFF, a newline) comes back from its base64 as
 * the same bytes, flagged; a UTF-8 one as a string, not flagged; event,
 * path, version and mzxid are the servers'. */
static void test_json(void) {
  char *path = zkt_path("watch-json");
  zhandle_t *zh = direct();
  const char *args[] = {"-v", "--json", "--count", "2", path, NULL};
  proc *p = watch_start(args);
  wait_watching(p, path);
  const char binary[] = {'\0', '\xff', '\x01', 'a', '\n', 'z'};
  struct Stat st1 = create(zh, path, binary, sizeof binary);
  CU_ASSERT_TRUE_FATAL(proc_wait_text(p, 0, "}\n", REPORT_TIMEOUT));
  const char *text = "h\xc3\xa9llo \"world\"\n";
  struct Stat st2 = set(zh, path, text, (int)strlen(text));
  expect_exit(p, 0);

  JsonParser *parser = json_parser_new();
  char *line = nth_line(p->out->str, 0);
  JsonObject *o = line ? parse_line(line, parser) : NULL;
  CU_ASSERT_PTR_NOT_NULL_FATAL(o);
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(o, "event"), "added");
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(o, "path"), path);
  CU_ASSERT_EQUAL(json_object_get_int_member(o, "version"), 0);
  CU_ASSERT_EQUAL(json_object_get_int_member(o, "mzxid"), st1.mzxid);
  CU_ASSERT_EQUAL(json_object_get_int_member(o, "czxid"), st1.czxid);
  CU_ASSERT_EQUAL(json_object_get_int_member(o, "data_length"), sizeof binary);
  CU_ASSERT_TRUE(json_object_get_boolean_member(o, "base64"));
  gsize len = 0;
  guchar *bytes =
      g_base64_decode(json_object_get_string_member(o, "value"), &len);
  CU_ASSERT_EQUAL(len, sizeof binary);
  CU_ASSERT(len == sizeof binary && memcmp(bytes, binary, len) == 0);
  g_free(bytes);
  g_free(line);

  line = nth_line(p->out->str, 1);
  o = line ? parse_line(line, parser) : NULL;
  CU_ASSERT_PTR_NOT_NULL_FATAL(o);
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(o, "event"), "updated");
  CU_ASSERT_EQUAL(json_object_get_int_member(o, "version"), 1);
  CU_ASSERT_EQUAL(json_object_get_int_member(o, "mzxid"), st2.mzxid);
  CU_ASSERT_FALSE(json_object_get_boolean_member(o, "base64"));
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(o, "value"), text);
  CU_ASSERT(json_object_get_null_member(o, "ephemeral_owner"));
  g_free(line);
  char *third = nth_line(p->out->str, 2);
  CU_ASSERT_STRING_EQUAL(third ? third : "(none)", ""); /* two lines only */
  g_free(third);
  g_object_unref(parser);
  cleanup_processes();
  zookeeper_close(zh);
  g_free(path);
}

/* ------------------------------------------------- children and trees */

/* --children: each child's creation, update and deletion; neither the
 * parent's own change nor a grandchild. */
static void test_children(void) {
  char *parent = zkt_path("watch-children");
  char *a = g_strdup_printf("%s/a", parent);
  char *deep = g_strdup_printf("%s/a/deep", parent);
  char *b = g_strdup_printf("%s/b", parent);
  zhandle_t *zh = direct();
  create(zh, parent, "p", 1);
  const char *args[] = {"-v", "--children", "--count", "4", parent, NULL};
  proc *p = watch_start(args);
  wait_watching(p, parent);
  create(zh, a, "A", 1);
  CU_ASSERT_TRUE(wait_line(p, "added", a, 0, "A"));
  create(zh, deep, "D", 1); /* a grandchild: not watched */
  set(zh, parent, "p2", 2); /* the parent itself: not reported */
  create(zh, b, "B", 1);
  CU_ASSERT_TRUE(wait_line(p, "added", b, 0, "B"));
  set(zh, a, "A2", 2);
  CU_ASSERT_TRUE(wait_line(p, "updated", a, 1, "A2"));
  remove_node(zh, b);
  CU_ASSERT_TRUE(wait_line(p, "removed", b, 0, "B"));
  expect_exit(p, 0);
  GString *want = g_string_new(NULL);
  add_line(want, "added", a, 0, "A");
  add_line(want, "added", b, 0, "B");
  add_line(want, "updated", a, 1, "A2");
  add_line(want, "removed", b, 0, "B");
  CU_ASSERT_STRING_EQUAL(p->out->str, want->str);
  g_string_free(want, TRUE);
  cleanup_processes();
  zookeeper_close(zh);
  g_free(b);
  g_free(deep);
  g_free(a);
  g_free(parent);
}

/* --tree: descendants at every depth (created, updated, deleted); with
 * --depth 1 --initial, the root and its children only. */
static void test_tree(void) {
  char *root = zkt_path("watch-tree");
  char *a = g_strdup_printf("%s/a", root);
  char *x = g_strdup_printf("%s/a/x", root);
  char *y = g_strdup_printf("%s/a/x/y", root);
  char *b = g_strdup_printf("%s/b", root);
  zhandle_t *zh = direct();
  create(zh, root, "r", 1);

  const char *deep[] = {"-v", "--tree", "--count", "5", root, NULL};
  proc *p = watch_start(deep);
  wait_watching(p, root);
  create(zh, a, "A", 1);
  CU_ASSERT_TRUE(wait_line(p, "added", a, 0, "A"));
  create(zh, x, "X", 1);
  CU_ASSERT_TRUE(wait_line(p, "added", x, 0, "X"));
  create(zh, y, "Y", 1);
  CU_ASSERT_TRUE(wait_line(p, "added", y, 0, "Y"));
  set(zh, x, "X2", 2);
  CU_ASSERT_TRUE(wait_line(p, "updated", x, 1, "X2"));
  remove_node(zh, y);
  CU_ASSERT_TRUE(wait_line(p, "removed", y, 0, "Y"));
  expect_exit(p, 0);

  const char *shallow[] = {"-v",      "--tree", "--depth", "1", "--initial",
                           "--count", "4",      root,      NULL};
  p = watch_start(shallow);
  CU_ASSERT_TRUE(wait_line(p, "added", root, 0, "r"));
  CU_ASSERT_TRUE(wait_line(p, "added", a, 0, "A"));
  wait_watching(p, root);
  set(zh, x, "X3", 2); /* depth 2: not reported */
  create(zh, b, "B", 1);
  CU_ASSERT_TRUE(wait_line(p, "added", b, 0, "B"));
  set(zh, root, "r2", 2);
  CU_ASSERT_TRUE(wait_line(p, "updated", root, 1, "r2"));
  expect_exit(p, 0);
  CU_ASSERT_PTR_NULL(strstr(p->out->str, x));
  GString *want = g_string_new(NULL);
  add_line(want, "added", root, 0, "r");
  add_line(want, "added", a, 0, "A");
  add_line(want, "added", b, 0, "B");
  add_line(want, "updated", root, 1, "r2");
  CU_ASSERT_STRING_EQUAL(p->out->str, want->str);
  g_string_free(want, TRUE);

  /* The whole tree's root is a root like any other. */
  const char *top[] = {"--tree",  "--depth", "0", "--initial",
                       "--count", "1",       "/", NULL};
  p = watch_start(top);
  expect_exit(p, 0);
  CU_ASSERT_TRUE(g_str_has_prefix(p->out->str, "added\t/\t"));
  cleanup_processes();
  zookeeper_close(zh);
  g_free(b);
  g_free(y);
  g_free(x);
  g_free(a);
  g_free(root);
}

/* ------------------------------------------------------------ COMMAND */

/* COMMAND appends "EVENT|NODE|VERSION|MZXID|" and then its stdin to a
 * file: one run per change, in order, with the raw value (a newline in
 * it, for REMOVED the last value) and the environment (ZKR_PATH the path
 * watched; the names of 0.2, ZKR_WATCH_*, the same values: "MISMATCH|"
 * otherwise); nothing printed. */
static void test_command(void) {
  via_zkr = 1; /* zkr watch: the same program */
  char *path = zkt_path("watch-cmd");
  char *out = tmp_file("cmd-out");
  char *script = g_strdup_printf(
      "printf '%%s|%%s|%%s|%%s|' \"$ZKR_EVENT\" \"$ZKR_NODE\" "
      "\"$ZKR_VERSION\" \"$ZKR_MZXID\" >> '%s'; "
      "[ \"$ZKR_WATCH_EVENT|$ZKR_WATCH_PATH|$ZKR_WATCH_VERSION|"
      "$ZKR_WATCH_MZXID\" = \"$ZKR_EVENT|$ZKR_NODE|$ZKR_VERSION|$ZKR_MZXID\" ] "
      "&& [ \"$ZKR_PATH\" = '%s' ] || printf 'MISMATCH|' >> '%s'; "
      "cat >> '%s'; echo >> '%s'",
      out, path, out, out, out);
  zhandle_t *zh = direct();
  const char *args[] = {"-v", "--count", "3",    path, "--",
                        "sh", "-c",      script, NULL};
  proc *p = watch_start(args);
  wait_watching(p, path);
  char *done = g_strdup_printf("COMMAND done for added %s", path);
  struct Stat st1 = create(zh, path, "v1", 2);
  CU_ASSERT_TRUE(proc_wait_text(p, 1, done, REPORT_TIMEOUT));
  g_free(done);
  done = g_strdup_printf("COMMAND done for updated %s", path);
  struct Stat st2 = set(zh, path, "two\nlines", 9);
  CU_ASSERT_TRUE(proc_wait_text(p, 1, done, REPORT_TIMEOUT));
  g_free(done);
  remove_node(zh, path);
  expect_exit(p, 0);
  char *got = NULL;
  CU_ASSERT_TRUE(g_file_get_contents(out, &got, NULL, NULL));
  char *want =
      g_strdup_printf("added|%s|0|%" PRId64 "|v1\n"
                      "updated|%s|1|%" PRId64 "|two\nlines\n"
                      "removed|%s|1|%" PRId64 "|two\nlines\n",
                      path, st1.mzxid, path, st2.mzxid, path, st2.mzxid);
  CU_ASSERT_STRING_EQUAL(got ? got : "(no file)", want);
  CU_ASSERT_EQUAL(p->out->len, 0); /* with COMMAND nothing is printed */
  g_free(want);
  g_free(got);
  cleanup_processes();
  zookeeper_close(zh);
  g_free(script);
  g_free(out);
  g_free(path);
  via_zkr = 0;
}

/* A failing COMMAND is reported and the watch goes on (two failures, then
 * --count ends it with 0); with --exit-on-error the first failure ends it
 * with COMMAND's status.  A COMMAND that does not exist ends it: 127. */
static void test_command_fails(void) {
  char *path = zkt_path("watch-cmd-fails");
  zhandle_t *zh = direct();
  const char *goes_on[] = {"-v", "--count", "2",      path, "--",
                           "sh", "-c",      "exit 3", NULL};
  proc *p = watch_start(goes_on);
  wait_watching(p, path);
  create(zh, path, "a", 1);
  char *failed = g_strdup_printf("COMMAND exited with status 3 for added %s "
                                 "version 0 (the watch goes on)",
                                 path);
  CU_ASSERT_TRUE(proc_wait_text(p, 1, failed, REPORT_TIMEOUT));
  g_free(failed);
  set(zh, path, "b", 1);
  expect_exit(p, 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(p->err->str, "status 3 for updated"));

  const char *stops[] = {"-v", "--exit-on-error", path, "--", "sh",
                         "-c", "exit 5",          NULL};
  p = watch_start(stops);
  wait_watching(p, path);
  set(zh, path, "c", 1);
  expect_exit(p, 5);

  const char *missing[] = {"--initial", path, "--", "/nonexistent/zkr-cmd",
                           NULL};
  p = watch_start(missing);
  expect_exit(p, EXIT_NOT_FOUND);
  CU_ASSERT_PTR_NOT_NULL(strstr(p->err->str, "/nonexistent/zkr-cmd"));
  cleanup_processes();
  zookeeper_close(zh);
  g_free(path);
}

/* SIGINT ends a watch with 0 at once; SIGTERM while COMMAND runs and
 * ignores it: COMMAND's group is SIGKILLed after the grace period (-g
 * 0.5), then zkr-watch exits 0 and nothing of COMMAND is left. */
static void test_signals(void) {
  char *path = zkt_path("watch-signals");
  zhandle_t *zh = direct();
  create(zh, path, "x", 1);
  const char *plain[] = {"-v", path, NULL};
  proc *p = watch_start(plain);
  wait_watching(p, path);
  kill(p->child.pid, SIGINT);
  expect_exit(p, 0);

  const char *cmd[] = {
      "--initial", "-g", "0.5", path,
      "--",        "sh", "-c",  "trap '' TERM; echo pid=$$; sleep 30",
      NULL};
  p = watch_start(cmd);
  pid_t pid = command_pid(p);
  CU_ASSERT_FATAL(pid > 0);
  int64_t signalled = zkt_now_ms();
  kill(p->child.pid, SIGTERM);
  expect_exit(p, 0);
  int64_t took = zkt_now_ms() - signalled;
  CU_ASSERT(took >= 450); /* it waited the grace period for COMMAND */
  CU_ASSERT_TRUE(zkt_wait_for(group_gone, (void *)(intptr_t)pid, 3000));
  fprintf(stderr, "[SIGTERM to exit: %" PRId64 " ms] ", took);
  cleanup_processes();
  zookeeper_close(zh);
  g_free(path);
}

/* --------------------------------------------------------------- faults */

/* The connection through the proxy is refused: SUSPENDED is said; a
 * change made meanwhile (straight to the member) is reported once the
 * connection is back (RECONNECTED, or LOST and a new session). */
static void test_change_while_disconnected(void) {
  zkrc_ensemble *e = zkt_ensemble();
  char *path = zkt_path("watch-fault");
  zhandle_t *zh = direct();
  create(zh, path, "before", 6);
  const char *args[] = {"-v", "--count", "1", path, NULL};
  proc *p = watch_start(args);
  wait_watching(p, path);
  CU_ASSERT_EQUAL_FATAL(zkrc_proxy_refuse(e, 0, 1), 0);
  int suspended = proc_wait_text(p, 1, "(suspended)", RECOVER_TIMEOUT);
  CU_ASSERT_TRUE(suspended);
  set(zh, path, "during", 6);
  proc_pump(p, 0);
  int early = strstr(p->out->str, "during") != NULL; /* it cannot read */
  CU_ASSERT_EQUAL(zkrc_proxy_refuse(e, 0, 0), 0);
  CU_ASSERT_FALSE(early);
  char *line = line_of("updated", path, 1, "during");
  CU_ASSERT_TRUE(proc_wait_text(p, 0, line, RECOVER_TIMEOUT));
  expect_exit(p, 0);
  CU_ASSERT_STRING_EQUAL(p->out->str, line);
  CU_ASSERT(strstr(p->err->str, "(reconnected)") ||
            strstr(p->err->str, "(lost)"));
  fprintf(stderr, "[%s] ",
          strstr(p->err->str, "(reconnected)") ? "reconnected" : "new session");
  g_free(line);
  cleanup_processes();
  zookeeper_close(zh);
  g_free(path);
}

/* The session zkr-watch -v printed ("session 0x<id> timeout"), or 0. */
static int64_t session_of(proc *p) {
  if (!proc_wait_text(p, 1, " timeout ", START_TIMEOUT))
    return 0;
  unsigned long long sid = 0;
  const char *at = strstr(p->err->str, "session 0x");
  if (at == NULL || sscanf(at, "session 0x%llx timeout ", &sid) != 1)
    return 0;
  return (int64_t)sid;
}

/* The servers expire zkr-watch's session: LOST is said, a new session
 * opened, and a change made meanwhile reported (the cache reads the tree
 * again on the new session). */
static void test_change_across_expiry(void) {
  char *path = zkt_path("watch-expiry");
  zhandle_t *zh = direct();
  create(zh, path, "before", 6);
  const char *args[] = {"-v", "--count", "1", path, NULL};
  proc *p = watch_start(args);
  int64_t sid = session_of(p);
  CU_ASSERT_FATAL(sid != 0);
  wait_watching(p, path);
  CU_ASSERT_EQUAL_FATAL(
      zkrc_ensemble_expire_session_id(zkt_ensemble(), sid, 10000), 0);
  set(zh, path, "after", 5);
  char *line = line_of("updated", path, 1, "after");
  CU_ASSERT_TRUE(proc_wait_text(p, 0, line, RECOVER_TIMEOUT));
  expect_exit(p, 0);
  CU_ASSERT_STRING_EQUAL(p->out->str, line);
  CU_ASSERT_PTR_NOT_NULL(strstr(p->err->str, "session ended (lost)"));
  g_free(line);
  cleanup_processes();
  zookeeper_close(zh);
  g_free(path);
}

/* A reader that went away (`zkr-watch | head -1`): the next line ends
 * zkr-watch quietly with 128+SIGPIPE, as it ends a program that does not
 * catch SIGPIPE. */
static void test_reader_gone(void) {
  char *path = zkt_path("watch-reader-gone");
  zhandle_t *zh = direct();
  const char *args[] = {"-v", path, NULL};
  proc *p = watch_start(args);
  wait_watching(p, path);
  create(zh, path, "one", 3);
  CU_ASSERT_TRUE(wait_line(p, "added", path, 0, "one"));
  close(p->child.out_fd); /* as head(1) does after its line */
  p->child.out_fd = -1;
  p->out_eof = 1;
  set(zh, path, "two", 3);
  expect_exit(p, 128 + SIGPIPE);
  CU_ASSERT_PTR_NULL(strstr(p->err->str, "standard output"));
  cleanup_processes();
  zookeeper_close(zh);
  g_free(path);
}

/* ---------------------------------------------------------- bad input */

static proc *run_to_end(const char *const *argv) {
  proc *p = proc_start(argv);
  proc_wait(p, EXIT_TIMEOUT);
  return p;
}

static void expect_refusal(const char *const *args, int status,
                           const char *message) {
  proc *p = watch_start(args);
  expect_exit(p, status);
  if (!strstr(p->err->str, message))
    fprintf(stderr, "\nexpected '%s' on stderr, got:\n%s\n", message,
            p->err->str);
  CU_ASSERT_PTR_NOT_NULL(strstr(p->err->str, message));
  CU_ASSERT_EQUAL(p->out->len, 0);
  proc_free(p);
}

/* Invalid paths (65) and usage (2) fail with a message before any server
 * is asked; --help names the environment. */
static void test_bad_input(void) {
  expect_refusal((const char *[]){"relative", NULL}, EXIT_BAD_PATH,
                 "invalid path 'relative'");
  expect_refusal((const char *[]){"/trailing/", NULL}, EXIT_BAD_PATH,
                 "invalid path '/trailing/'");
  expect_refusal((const char *[]){"/a//b", NULL}, EXIT_BAD_PATH,
                 "invalid path '/a//b'");
  expect_refusal((const char *[]){"--tree", "--depth", "x", "/a", NULL},
                 EXIT_USAGE, "--depth must be an integer from 0");
  expect_refusal((const char *[]){"--tree", "--depth", "-1", "/a", NULL},
                 EXIT_USAGE, "--depth must be an integer from 0");
  expect_refusal((const char *[]){"--depth", "2", "/a", NULL}, EXIT_USAGE,
                 "--depth goes with -r");
  expect_refusal((const char *[]){"--children", "--tree", "/a", NULL},
                 EXIT_USAGE, "exclude each other");
  expect_refusal((const char *[]){"/a", "/b", NULL}, EXIT_USAGE,
                 "one PATH only");
  expect_refusal((const char *[]){"/a", "--", NULL}, EXIT_USAGE,
                 "missing COMMAND");
  expect_refusal((const char *[]){"--json", "/a", "--", "true", NULL},
                 EXIT_USAGE, "not both");
  expect_refusal((const char *[]){"--count", "0", "/a", NULL}, EXIT_USAGE,
                 "--count must be");
  expect_refusal((const char *[]){NULL}, EXIT_USAGE, "missing PATH");

  const char *help[] = {ZKR_WATCH, "--help", NULL};
  proc *p = run_to_end(help);
  CU_ASSERT_EQUAL(p->status, 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(p->out->str, "ZKR_AUTH_FILE"));
  CU_ASSERT_PTR_NOT_NULL(strstr(p->out->str, "ZKR_VERSION"));
  cleanup_processes();
}

/* Issue 30, item 6: PATH whose ACL refuses READ ends zkr-watch with 77
 * and a message, as zkr-members ends (it said "watching PATH (0 nodes
 * now)" and waited forever); with --tree, a child that may not be read is
 * said on stderr and the others are reported. */
static void test_unreadable(void) {
  char *root = zkt_path("watch-acl");
  char *shut = g_strdup_printf("%s/shut", root);
  char *open_ = g_strdup_printf("%s/open", root);
  zhandle_t *zh = direct();
  create(zh, root, "r", 1);
  CU_ASSERT_EQUAL(zoo_create(zh, shut, "s", 1, zkt_acl_no_read(), 0, NULL, 0),
                  ZOK);
  const char *node[] = {"-v", shut, NULL};
  proc *p = watch_start(node);
  expect_exit(p, EXIT_NOPERM);
  CU_ASSERT_PTR_NOT_NULL(strstr(p->err->str, "ACL does not let"));
  CU_ASSERT_PTR_NULL(strstr(p->err->str, "watching"));

  const char *tree[] = {"-v", "--tree", "--count", "1", root, NULL};
  p = watch_start(tree);
  wait_watching(p, root);
  CU_ASSERT_PTR_NOT_NULL(strstr(p->err->str, "left out"));
  create(zh, open_, "o", 1);
  expect_exit(p, 0);
  CU_ASSERT_TRUE(g_str_has_prefix(p->out->str, "added\t"));
  CU_ASSERT_PTR_NOT_NULL(strstr(p->out->str, open_));
  cleanup_processes();
  zookeeper_close(zh);
  g_free(open_);
  g_free(shut);
  g_free(root);
}

/* No server (nothing listens on port 1): 69 at once with "connection
 * refused (127.0.0.1:1)", not after the session timeout (-t 10000) nor the
 * connect timeout (5 s by default). */
static void test_unreachable(void) {
  const char *argv[] = {ZKR_WATCH, "--servers", "127.0.0.1:1", "-t",
                        "10000",   "/x",        NULL};
  proc *p = run_to_end(argv);
  int64_t took = zkt_now_ms() - p->started_ms;
  CU_ASSERT_EQUAL(p->status, EXIT_UNAVAILABLE);
  CU_ASSERT_PTR_NOT_NULL(
      strstr(p->err->str, "connection refused (127.0.0.1:1)"));
  CU_ASSERT_EQUAL(p->out->len, 0);
  CU_ASSERT(took < 2000);
  fprintf(stderr, "[unreachable: exit %d after %" PRId64 " ms] ", p->status,
          took);
  cleanup_processes();
}

static void add_suites(void) {
  atexit(cleanup_at_exit); /* runs before the ensemble is stopped */
  ZKT_SUITE("zkr-watch", {"text changes", test_text_changes},
            {"initial state", test_initial}, {"json", test_json},
            {"children", test_children}, {"tree", test_tree},
            {"command", test_command}, {"command fails", test_command_fails},
            {"signals", test_signals},
            {"change while disconnected", test_change_while_disconnected},
            {"change across expiry", test_change_across_expiry},
            {"reader gone", test_reader_gone}, {"bad input", test_bad_input},
            {"a node it may not read", test_unreadable},
            {"unreachable", test_unreachable});
}

int main(void) {
  zkt_configure(1, 1); /* a proxy, to take the connection away */
  return zkt_run("test_zkrwatch", add_suites);
}
