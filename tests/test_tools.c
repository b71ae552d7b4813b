/*
 * tests/test_tools.c - the command-line tools zkr-lock and zkr-elect, run
 * as built (tools/zkr-lock, tools/zkr-elect) against the program's real
 * one-member ensemble.
 *
 * Every tool process is started with the testing library's zkrc_spawn
 * (the child dies with this program and gets default signal dispositions),
 * stdin at its end, stdout and stderr captured through pipes; output is
 * awaited with poll and the exit with zkrc_child_wait: both are events,
 * and every wait has a deadline.  The shell commands the tools run print their pid ("pid=N"),
 * which is registered, so that whatever happens every tool, every command
 * and every command's process group is SIGKILLed and reaped (the tools'
 * commands run in process groups of their own).  Where nothing announces a
 * change (a contender queued on the server, a process reparented away from
 * us dying), the state is polled with a deadline.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "testutil.h"

/* One program, two names (issue 32): zkr-lock is `zkr lock'.  Tests run
 * each subcommand both ways: tool names below, or zkr with the
 * subcommand (tool_start_as). */
#define ZKR_LOCK TOP_BUILDDIR "/tools/zkr-lock"
#define ZKR_ELECT TOP_BUILDDIR "/tools/zkr-elect"
#define ZKR TOP_BUILDDIR "/tools/zkr"

/* The tools' exit statuses (tools/tool.h, documented in --help). */
#define EXIT_NOT_ACQUIRED 1
#define EXIT_USAGE 2
#define EXIT_NO_LEADER 3
#define EXIT_BAD_PATH 65
#define EXIT_NOHOST 68
#define EXIT_UNAVAILABLE 69
#define EXIT_LOST 75
#define EXIT_ZOOKEEPER 76
#define EXIT_NOPERM 77
#define EXIT_NOT_FOUND 127

/* Session timeout given to the tools (-t), and the bounds of the waits. */
#define TOOL_SESSION_MS ZKT_SESSION_TIMEOUT_MS
#define TOOL_SESSION_ARG "2000"
#define START_TIMEOUT 10000 /* a tool connects and its command starts */
#define EXIT_TIMEOUT 10000  /* a tool exits once told to */

/* ------------------------------------------------------------ processes */

typedef struct proc {
  zkrc_child child;     /* child.pid: 0 once reaped */
  int out_eof, err_eof; /* the pipe's writers are all gone */
  GString *out, *err;
  int status; /* as a shell reports it, once reaped */
} proc;

static GPtrArray *procs;     /* every proc started, until freed */
static GArray *command_pids; /* pids (and groups) of the tools' commands */
static char *tmp_dir;

static void kill_registered(void) {
  for (guint i = 0; command_pids && i < command_pids->len; i++) {
    pid_t pid = g_array_index(command_pids, pid_t, i);
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
  }
  if (command_pids)
    g_array_set_size(command_pids, 0);
}

static void proc_kill(proc *p) {
  if (p->child.pid <= 0)
    return;
  kill(p->child.pid, SIGKILL);
  p->status = zkrc_child_wait(&p->child, EXIT_TIMEOUT);
}

/* Send @p sig to the tool, unless it has been reaped (kill(0, sig) would
 * reach our own process group). */
static void proc_signal(proc *p, int sig) {
  if (p->child.pid > 0)
    kill(p->child.pid, sig);
}

static void proc_free(proc *p) {
  if (p == NULL)
    return;
  proc_kill(p);
  zkrc_child_close(&p->child);
  g_string_free(p->out, TRUE);
  g_string_free(p->err, TRUE);
  if (procs)
    g_ptr_array_remove(procs, p);
  g_free(p);
}

/* Kill and reap everything a test started (also what a failed one left). */
static void cleanup_processes(void) {
  while (procs && procs->len > 0)
    proc_free(g_ptr_array_index(procs, procs->len - 1));
  kill_registered();
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
  g_free(tmp_dir);
  tmp_dir = NULL;
}

static void cleanup_at_exit(void) {
  cleanup_processes();
  remove_tmp_dir();
}

/* A file name in this program's temporary directory (g_free it). */
static char *tmp_file(const char *name) {
  if (tmp_dir == NULL) {
    tmp_dir = g_dir_make_tmp("zkr-tools-XXXXXX", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(tmp_dir);
  }
  static int n;
  return g_strdup_printf("%s/%s-%d", tmp_dir, name, ++n);
}

/* Start @p argv (NULL-terminated; argv[0] a path) with stdout and stderr
 * captured, stdin at its end (a pipe closed at once: reads see EOF, as from
 * /dev/null), only descriptors 0-2, default signal dispositions. */
static proc *proc_start(const char *const *argv) {
  zkrc_spawn_options o;
  zkrc_spawn_options_init(&o);
  o.pipe_stdin = o.pipe_stdout = o.pipe_stderr = 1;
  zkrc_child child;
  int rc = zkrc_spawn(&child, (char *const *)argv, &o);
  if (rc != 0)
    fprintf(stderr, "zkrc_spawn %s: %s\n", argv[0], strerror(errno));
  CU_ASSERT_EQUAL_FATAL(rc, 0);
  proc *p = g_new0(proc, 1);
  p->child = child;
  close(p->child.in_fd);
  p->child.in_fd = -1;
  fcntl(p->child.out_fd, F_SETFL, O_NONBLOCK);
  fcntl(p->child.err_fd, F_SETFL, O_NONBLOCK);
  p->out = g_string_new(NULL);
  p->err = g_string_new(NULL);
  if (procs == NULL)
    procs = g_ptr_array_new();
  g_ptr_array_add(procs, p);
  return p;
}

/* The harness's tick, for --server-tick. */
#define TICK_ARG G_STRINGIFY(ZKT_TICK_MS)

/* Start a tool: @p tool (with @p subcommand: zkr SUBCOMMAND), then
 * "--servers HOSTS -t 2000 --server-tick 200", then @p args. */
static proc *tool_start_as(const char *tool, const char *subcommand,
                           const char *const *args) {
  const char *argv[32];
  int n = 0;
  argv[n++] = tool;
  if (subcommand)
    argv[n++] = subcommand;
  argv[n++] = "--servers";
  argv[n++] = zkt_hosts();
  argv[n++] = "-t";
  argv[n++] = TOOL_SESSION_ARG;
  argv[n++] = "--server-tick";
  argv[n++] = TICK_ARG;
  for (int i = 0; args[i] && n < 31; i++)
    argv[n++] = args[i];
  argv[n] = NULL;
  return proc_start(argv);
}

static proc *tool_start(const char *tool, const char *const *args) {
  return tool_start_as(tool, NULL, args);
}

/* Read what @p fd has (non-blocking); *eof once its writers are gone. */
static void drain(int fd, GString *into, int *eof) {
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0)
    g_string_append_len(into, buf, n);
  if (n == 0)
    *eof = 1;
}

static void proc_drain(proc *p) {
  drain(p->child.out_fd, p->out, &p->out_eof);
  drain(p->child.err_fd, p->err, &p->err_eof);
}

/* Its output has ended: the tool and whatever inherited its stdout and
 * stderr (its commands) are gone, so no text can come any more. */
static int proc_output_ended(const proc *p) { return p->out_eof && p->err_eof; }

/* Wait up to @p ms for output, and read what there is. */
static void proc_pump(proc *p, int ms) {
  struct pollfd pfds[2] = {{p->out_eof ? -1 : p->child.out_fd, POLLIN, 0},
                           {p->err_eof ? -1 : p->child.err_fd, POLLIN, 0}};
  if (poll(pfds, 2, proc_output_ended(p) ? 0 : ms) < 0 && errno != EINTR)
    CU_FAIL("poll failed");
  proc_drain(p);
}

/* Wait until the process exits; its status, or -1 (then it is killed)
 * after @p timeout_ms.  Its output is read afterwards: the tools print far
 * less than a pipe holds (64 KiB), so none blocks on a full pipe. */
static int proc_wait(proc *p, int timeout_ms) {
  if (p->child.pid <= 0)
    return p->status;
  pid_t pid = p->child.pid;
  p->status = zkrc_child_wait(&p->child, timeout_ms);
  proc_drain(p);
  if (p->status < 0)
    fprintf(stderr, "\nprocess %d did not exit in %d ms; stderr:\n%s\n",
            (int)pid, timeout_ms, p->err->str);
  return p->status;
}

/* Wait until @p needle appears in stdout (@p on_stderr: stderr).  Gives up
 * at the deadline or when the output ended without it. */
static int proc_wait_text(proc *p, int on_stderr, const char *needle,
                          int timeout_ms) {
  GString *buf = on_stderr ? p->err : p->out;
  int64_t deadline = zkt_now_ms() + timeout_ms;
  for (;;) {
    if (strstr(buf->str, needle))
      return 1;
    int64_t left = deadline - zkt_now_ms();
    int ended = proc_output_ended(p);
    if (left <= 0 || ended) {
      proc_drain(p);
      if (strstr(buf->str, needle))
        return 1;
      fprintf(stderr, "\nno '%s' from process (%s); stdout:\n%s\nstderr:\n%s\n",
              needle, ended ? "its output ended" : "timeout", p->out->str,
              p->err->str);
      return 0;
    }
    proc_pump(p, (int)left);
  }
}

/* Run a tool to its end; returns its status (-1: killed at the deadline). */
/* zkr SUBCOMMAND: as tool_run(). */
static int zkr_run(const char *subcommand, const char *const *args,
                   proc **out) {
  proc *p = tool_start_as(ZKR, subcommand, args);
  int status = proc_wait(p, EXIT_TIMEOUT);
  if (out)
    *out = p;
  else
    proc_free(p);
  return status;
}

static int tool_run(const char *tool, const char *const *args, proc **out) {
  proc *p = tool_start(tool, args);
  int status = proc_wait(p, EXIT_TIMEOUT);
  if (out)
    *out = p;
  else
    proc_free(p);
  return status;
}

/* The @p nth (0-based) "key=value" in @p text (at a line start or after a
 * space): the value (g_free it), or NULL.  *complete (if not NULL) says
 * whether its line has ended. */
static char *value_at(const char *text, const char *key, int nth,
                      int *complete) {
  char *pattern = g_strdup_printf("%s=", key);
  const char *at = text;
  char *value = NULL;
  while ((at = strstr(at, pattern)) != NULL) {
    if ((at == text || at[-1] == '\n' || at[-1] == ' ') && nth-- == 0) {
      at += strlen(pattern);
      size_t len = strcspn(at, " \n");
      value = g_strndup(at, len);
      if (complete)
        *complete = strchr(at, '\n') != NULL;
      break;
    }
    at++;
  }
  g_free(pattern);
  return value;
}

static char *value_of(const char *text, const char *key, int nth) {
  return value_at(text, key, nth, NULL);
}

/* Wait until the @p nth (0-based) "key=value" of stdout is complete (its
 * line ended); returns the value (g_free it) or NULL at the deadline. */
static char *wait_value(proc *p, const char *key, int nth, int timeout_ms) {
  int64_t deadline = zkt_now_ms() + timeout_ms;
  for (;;) {
    int complete = 0;
    char *v = value_at(p->out->str, key, nth, &complete);
    if (v && complete)
      return v;
    g_free(v);
    int64_t left = deadline - zkt_now_ms();
    if (left <= 0 || proc_output_ended(p)) {
      proc_drain(p);
      v = value_of(p->out->str, key, nth);
      if (v == NULL)
        fprintf(stderr,
                "\nno %s= (#%d) from process; stdout:\n%s\n"
                "stderr:\n%s\n",
                key, nth, p->out->str, p->err->str);
      return v;
    }
    proc_pump(p, (int)left);
  }
}

/* Register a command's pid (its process group too) for the cleanup. */
static void register_command(pid_t pid) {
  if (command_pids == NULL)
    command_pids = g_array_new(FALSE, FALSE, sizeof(pid_t));
  if (pid > 0)
    g_array_append_val(command_pids, pid);
}

/* Wait for the command's first "pid=N" and register N for the cleanup. */
static pid_t command_pid(proc *p) {
  char *v = wait_value(p, "pid", 0, START_TIMEOUT);
  pid_t pid = v ? (pid_t)atoi(v) : 0;
  g_free(v);
  register_command(pid);
  return pid;
}

/* A process gone, or a zombie nobody of ours will reap. */
static int process_gone(void *arg) {
  pid_t pid = (pid_t)(intptr_t)arg;
  if (kill(pid, 0) != 0 && errno == ESRCH)
    return 1;
  char path[64], state = '?';
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return 1;
  int r = fscanf(f, "%*d (%*[^)]) %c", &state);
  fclose(f);
  return r == 1 && (state == 'Z' || state == 'X');
}

static int group_gone(void *arg) {
  pid_t pgid = (pid_t)(intptr_t)arg;
  return kill(-pgid, 0) != 0 && errno == ESRCH;
}

/* The session a -v tool printed ("session 0x<id> timeout <ms> ms"; never
 * its password, which the servers derive from the id:
 * zkrc_ensemble_session_password()). */
static int session_of(proc *p, clientid_t *id) {
  if (!proc_wait_text(p, 1, " timeout ", START_TIMEOUT))
    return 0;
  const char *line = strstr(p->err->str, "session 0x");
  unsigned long long sid;
  if (line == NULL || sscanf(line, "session 0x%llx timeout ", &sid) != 1 ||
      strstr(line, "password") != NULL)
    return 0;
  memset(id, 0, sizeof *id);
  id->client_id = (int64_t)sid;
  zkrc_ensemble_session_password(id->client_id, id->passwd);
  return 1;
}

/* -------------------------------------------------- server-side polling */

typedef struct count_check {
  zhandle_t *zh;
  const char *path;
  int want;
} count_check;

static int has_children(void *arg) {
  count_check *c = arg;
  int n = zkt_child_count(c->zh, c->path);
  return (n < 0 ? 0 : n) == c->want;
}

/* Wait until @p path has @p want children (a missing one counts as 0). */
static int wait_children(zhandle_t *zh, const char *path, int want) {
  count_check c = {zh, path, want};
  return zkt_wait_for(has_children, &c, 10000);
}

static char *read_file(const char *path) {
  char *text = NULL;
  if (!g_file_get_contents(path, &text, NULL, NULL))
    return NULL;
  return text;
}

/* ------------------------------------------------------------ zkr-lock */

/* Ten zkr-lock processes at once, each read-sleep-write a counter under
 * the lock: no update is lost. */
static void test_lock_exclusion(void) {
  cleanup_processes();
  char *path = zkt_path("tools-excl");
  char *counter = tmp_file("counter");
  CU_ASSERT_FATAL(g_file_set_contents(counter, "0\n", -1, NULL));
  char *script = g_strdup_printf(
      "n=$(cat '%s'); sleep 0.05; echo $((n + 1)) > '%s'", counter, counter);
  proc *p[10];
  for (int i = 0; i < 10; i++) {
    const char *args[] = {"-w", "60", path, "--", "sh", "-c", script, NULL};
    p[i] = tool_start(ZKR_LOCK, args);
  }
  for (int i = 0; i < 10; i++) {
    int status = proc_wait(p[i], 60000);
    if (status != 0)
      fprintf(stderr, "\nzkr-lock %d: status %d: %s\n", i, status,
              p[i]->err->str);
    CU_ASSERT_EQUAL(status, 0);
    proc_free(p[i]);
  }
  char *text = read_file(counter);
  CU_ASSERT_STRING_EQUAL(text ? text : "", "10\n");
  g_free(text);
  g_free(script);
  g_free(counter);
  g_free(path);
}

/* While one zkr-lock holds: -n fails at once with 1, -w with the -E code
 * after the wait, neither runs its command; --holders lists the holder
 * then the waiters; a waiter interrupted by SIGTERM exits 143 and leaves
 * the queue; SIGTERM reaches the holder's command. */
static void test_lock_conflict(void) {
  cleanup_processes();
  char *path = zkt_path("tools-busy");
  char *marker = tmp_file("ran");
  char *touch = g_strdup_printf("touch '%s'", marker);
  zhandle_t *zh = zkt_raw();

  const char *hold[] = {
      "--id", "holder", path, "--", "sh", "-c", "echo pid=$$; exec sleep 30",
      NULL};
  proc *a = tool_start(ZKR_LOCK, hold);
  CU_ASSERT_FATAL(command_pid(a) > 0);

  const char *nowait[] = {"-n", path, "--", "sh", "-c", touch, NULL};
  int64_t t0 = zkt_now_ms();
  CU_ASSERT_EQUAL(tool_run(ZKR_LOCK, nowait, NULL), EXIT_NOT_ACQUIRED);
  /* At once: the holder keeps it for 30 s (5 s: a loaded machine). */
  CU_ASSERT(zkt_now_ms() - t0 < 5000);

  const char *waits[] = {"-w", "0.5", "-E", "7",   path,
                         "--", "sh",  "-c", touch, NULL};
  t0 = zkt_now_ms();
  CU_ASSERT_EQUAL(tool_run(ZKR_LOCK, waits, NULL), 7);
  int64_t waited = zkt_now_ms() - t0;
  CU_ASSERT(waited >= 500 && waited < 500 + 5000);
  CU_ASSERT_FALSE(g_file_test(marker, G_FILE_TEST_EXISTS));
  /* -E 0: "not acquired" may be made a success; still nothing runs. */
  const char *quiet[] = {"-n", "-E", "0", path, "--", "sh", "-c", touch, NULL};
  CU_ASSERT_EQUAL(tool_run(ZKR_LOCK, quiet, NULL), 0);
  CU_ASSERT_FALSE(g_file_test(marker, G_FILE_TEST_EXISTS));

  /* Two waiters queue behind the holder, in order. */
  const char *w1[] = {"--id", "waiter1", "-w", "30",  path,
                      "--",   "sh",      "-c", touch, NULL};
  proc *b = tool_start(ZKR_LOCK, w1);
  CU_ASSERT_FATAL(wait_children(zh, path, 2));
  const char *w2[] = {"--id", "waiter2", "-w", "30",  path,
                      "--",   "sh",      "-c", touch, NULL};
  proc *c = tool_start(ZKR_LOCK, w2);
  CU_ASSERT_FATAL(wait_children(zh, path, 3));
  proc *h;
  const char *holders[] = {"--holders", path, NULL};
  CU_ASSERT_EQUAL(tool_run(ZKR_LOCK, holders, &h), 0);
  char **lines = g_strsplit(h->out->str, "\n", -1);
  CU_ASSERT_EQUAL(g_strv_length(lines), 4); /* 3 lines and "" */
  const char *ids[] = {"holder\t", "waiter1\t", "waiter2\t"};
  char *prefix = g_strdup_printf("%s/", path);
  for (int i = 0; i < 3 && lines[i]; i++) {
    CU_ASSERT(g_str_has_prefix(lines[i], ids[i]));
    const char *node = strchr(lines[i], '\t');
    CU_ASSERT(node && g_str_has_prefix(node + 1, prefix) &&
              strstr(node, "-lock-") && zkt_exists(zh, node + 1));
  }
  g_free(prefix);
  g_strfreev(lines);
  proc_free(h);

  /* A waiter stopped by a signal gives up: 128+15, nothing run. */
  proc_signal(c, SIGTERM);
  CU_ASSERT_EQUAL(proc_wait(c, EXIT_TIMEOUT), 128 + SIGTERM);
  CU_ASSERT(wait_children(zh, path, 2));
  proc_signal(b, SIGINT);
  CU_ASSERT_EQUAL(proc_wait(b, EXIT_TIMEOUT), 128 + SIGINT);
  CU_ASSERT(wait_children(zh, path, 1));
  CU_ASSERT_FALSE(g_file_test(marker, G_FILE_TEST_EXISTS));

  /* SIGTERM goes to the command; its death by it is the status. */
  proc_signal(a, SIGTERM);
  CU_ASSERT_EQUAL(proc_wait(a, EXIT_TIMEOUT), 128 + SIGTERM);
  CU_ASSERT(wait_children(zh, path, 0));
  CU_ASSERT_EQUAL(tool_run(ZKR_LOCK, nowait, NULL), 0);
  CU_ASSERT_TRUE(g_file_test(marker, G_FILE_TEST_EXISTS));

  cleanup_processes();
  zookeeper_close(zh);
  g_free(touch);
  g_free(marker);
  g_free(path);
}

/* The command's environment: ZKR_PATH, ZKR_NODE (our node, which exists
 * while it runs), ZKR_FENCING_TOKEN = that node's czxid, larger on the
 * next run; ZKR_PARTICIPANT_ID; and the names of 0.1, ZKR_LOCK_PATH and
 * ZKR_LOCK_NODE, with the same values (kept one release, issue 32). */
static void test_lock_environment(void) {
  cleanup_processes();
  char *path = zkt_path("tools-env");
  zhandle_t *zh = zkt_raw();
  /* fds: what ls sees open - 0-2 and its directory; the tool's ZooKeeper
   * connection and pipes must not leak into the command. */
  const char *script = "echo path=$ZKR_PATH node=$ZKR_NODE "
                       "token=$ZKR_FENCING_TOKEN id=$ZKR_PARTICIPANT_ID "
                       "old=$ZKR_LOCK_PATH,$ZKR_LOCK_NODE "
                       "fds=$(ls /proc/self/fd | tr '\\n' ,); "
                       "echo pid=$$; exec sleep 30";
  const char *args[] = {"--id", "env-test", path,   "--",
                        "sh",   "-c",       script, NULL};
  int64_t tokens[2] = {0, 0};
  for (int run = 0; run < 2; run++) {
    proc *p = tool_start(ZKR_LOCK, args);
    CU_ASSERT_FATAL(command_pid(p) > 0);
    char *lpath = value_of(p->out->str, "path", 0);
    char *node = value_of(p->out->str, "node", 0);
    char *token = value_of(p->out->str, "token", 0);
    char *id = value_of(p->out->str, "id", 0);
    char *fds = value_of(p->out->str, "fds", 0);
    CU_ASSERT_STRING_EQUAL(fds ? fds : "", "0,1,2,3,");
    g_free(fds);
    char *old = value_of(p->out->str, "old", 0);
    char *same =
        g_strdup_printf("%s,%s", lpath ? lpath : "-", node ? node : "-");
    CU_ASSERT_STRING_EQUAL(old ? old : "", same);
    g_free(old);
    g_free(same);
    CU_ASSERT_STRING_EQUAL(lpath ? lpath : "", path);
    CU_ASSERT_STRING_EQUAL(id ? id : "", "env-test");
    CU_ASSERT_FATAL(node != NULL && token != NULL);
    CU_ASSERT(strncmp(node, path, strlen(path)) == 0 &&
              node[strlen(path)] == '/');
    tokens[run] = g_ascii_strtoll(token, NULL, 10);
    CU_ASSERT(tokens[run] > 0);
    CU_ASSERT_EQUAL(zkt_czxid(zh, node), tokens[run]);
    proc_signal(p, SIGTERM);
    CU_ASSERT_EQUAL(proc_wait(p, EXIT_TIMEOUT), 128 + SIGTERM);
    CU_ASSERT_FALSE(zkt_exists(zh, node));
    g_free(lpath);
    g_free(node);
    g_free(token);
    g_free(id);
    proc_free(p);
  }
  CU_ASSERT(tokens[1] > tokens[0]);
  zookeeper_close(zh);
  g_free(path);
}

/* Several LOCKPATHs are one all-or-nothing set: with one of them busy,
 * -n fails, runs nothing and leaves no node on the free one; once free,
 * COMMAND gets every lock's path, node and token, numbered in the order
 * given (the unnumbered ones are the first's), the nodes existing while it
 * runs. */
static void test_lock_several_paths(void) {
  cleanup_processes();
  char *a = zkt_path("tools-multi-a"), *b = zkt_path("tools-multi-b");
  zhandle_t *zh = zkt_raw();
  const char *hold_b[] = {b,   "--", "sh", "-c", "echo pid=$$; exec sleep 30",
                          NULL};
  proc *holder = tool_start(ZKR_LOCK, hold_b);
  CU_ASSERT_FATAL(command_pid(holder) > 0);
  char *marker = tmp_file("multi-ran");
  char *touch = g_strdup_printf("touch '%s'", marker);
  const char *busy[] = {"-n", a, b, "--", "sh", "-c", touch, NULL};
  CU_ASSERT_EQUAL(tool_run(ZKR_LOCK, busy, NULL), EXIT_NOT_ACQUIRED);
  CU_ASSERT_FALSE(g_file_test(marker, G_FILE_TEST_EXISTS));
  CU_ASSERT(wait_children(zh, a, 0));
  /* Waiting for the set (holding a, queued on b), ^C gives up: 130, the
   * node on a given back, nothing run. */
  const char *waits[] = {a, b, "--", "sh", "-c", touch, NULL};
  proc *w = tool_start(ZKR_LOCK, waits);
  CU_ASSERT(wait_children(zh, a, 1));
  CU_ASSERT(wait_children(zh, b, 2));
  proc_signal(w, SIGINT);
  CU_ASSERT_EQUAL(proc_wait(w, EXIT_TIMEOUT), 128 + SIGINT);
  proc_free(w);
  CU_ASSERT(wait_children(zh, a, 0));
  CU_ASSERT(wait_children(zh, b, 1));
  CU_ASSERT_FALSE(g_file_test(marker, G_FILE_TEST_EXISTS));
  proc_signal(holder, SIGTERM);
  CU_ASSERT_EQUAL(proc_wait(holder, EXIT_TIMEOUT), 128 + SIGTERM);

  const char *script =
      "echo count=$ZKR_COUNT p1=$ZKR_PATH_1 p2=$ZKR_PATH_2 "
      "n1=$ZKR_NODE_1 n2=$ZKR_NODE_2 t1=$ZKR_FENCING_TOKEN_1 "
      "t2=$ZKR_FENCING_TOKEN_2 t=$ZKR_FENCING_TOKEN p=$ZKR_PATH; "
      "echo pid=$$; exec sleep 30";
  const char *both[] = {b, a, "--", "sh", "-c", script, NULL};
  proc *p = tool_start(ZKR_LOCK, both);
  CU_ASSERT_FATAL(command_pid(p) > 0);
  const char *keys[] = {"count", "p1", "p2", "n1", "n2", "t1", "t2", "t", "p"};
  char *v[9];
  for (int i = 0; i < 9; i++)
    v[i] = value_of(p->out->str, keys[i], 0);
  CU_ASSERT_STRING_EQUAL(v[0] ? v[0] : "", "2");
  CU_ASSERT_STRING_EQUAL(v[1] ? v[1] : "", b);
  CU_ASSERT_STRING_EQUAL(v[2] ? v[2] : "", a);
  CU_ASSERT(v[3] && g_str_has_prefix(v[3], b) && zkt_exists(zh, v[3]));
  CU_ASSERT(v[4] && g_str_has_prefix(v[4], a) && zkt_exists(zh, v[4]));
  CU_ASSERT(v[3] && v[5] &&
            zkt_czxid(zh, v[3]) == g_ascii_strtoll(v[5], NULL, 10));
  CU_ASSERT(v[4] && v[6] &&
            zkt_czxid(zh, v[4]) == g_ascii_strtoll(v[6], NULL, 10));
  CU_ASSERT_STRING_EQUAL(v[7] ? v[7] : "", v[5] ? v[5] : "-");
  CU_ASSERT_STRING_EQUAL(v[8] ? v[8] : "", b);
  proc_signal(p, SIGTERM);
  CU_ASSERT_EQUAL(proc_wait(p, EXIT_TIMEOUT), 128 + SIGTERM);
  CU_ASSERT(wait_children(zh, a, 0));
  CU_ASSERT(wait_children(zh, b, 0));
  for (int i = 0; i < 9; i++)
    g_free(v[i]);
  proc_free(p);
  proc_free(holder);
  zookeeper_close(zh);
  g_free(touch);
  g_free(marker);
  g_free(a);
  g_free(b);
}

static int count_char(const char *text, char c) {
  int n = 0;
  for (; *text; text++)
    n += *text == c;
  return n;
}

/* Without COMMAND (as `etcdctl lock NAME`): each lock's node and token
 * on stdout, held until SIGTERM (exit 0, released); a lock whose node is
 * deleted meanwhile is lost: 75. */
static void test_lock_hold_without_command(void) {
  cleanup_processes();
  char *a = zkt_path("tools-hold-a"), *b = zkt_path("tools-hold-b");
  zhandle_t *zh = zkt_raw();
  const char *both[] = {a, b, "--", NULL};
  proc *p = tool_start(ZKR_LOCK, both);
  int64_t deadline = zkt_now_ms() + START_TIMEOUT;
  while (count_char(p->out->str, '\n') < 2 && zkt_now_ms() < deadline &&
         !proc_output_ended(p))
    proc_pump(p, (int)(deadline - zkt_now_ms()));
  CU_ASSERT_FATAL(count_char(p->out->str, '\n') == 2);
  char **lines = g_strsplit(p->out->str, "\n", -1);
  CU_ASSERT_FATAL(g_strv_length(lines) >= 2);
  for (int i = 0; i < 2; i++) {
    char **f = g_strsplit(lines[i], "\t", 2);
    CU_ASSERT_FATAL(g_strv_length(f) == 2);
    CU_ASSERT(g_str_has_prefix(f[0], i == 0 ? a : b));
    CU_ASSERT_EQUAL(zkt_czxid(zh, f[0]), g_ascii_strtoll(f[1], NULL, 10));
    g_strfreev(f);
  }
  g_strfreev(lines);
  const char *busy[] = {"-n", a, "--", "true", NULL};
  CU_ASSERT_EQUAL(tool_run(ZKR_LOCK, busy, NULL), EXIT_NOT_ACQUIRED);
  proc_signal(p, SIGTERM);
  CU_ASSERT_EQUAL(proc_wait(p, EXIT_TIMEOUT), 0);
  proc_free(p);
  CU_ASSERT(wait_children(zh, a, 0));
  CU_ASSERT(wait_children(zh, b, 0));

  const char *one[] = {a, NULL};
  p = tool_start(ZKR_LOCK, one);
  CU_ASSERT_FATAL(proc_wait_text(p, 0, "\t", START_TIMEOUT));
  char *node = g_strndup(p->out->str, strcspn(p->out->str, "\t"));
  CU_ASSERT_EQUAL(zoo_delete(zh, node, -1), ZOK);
  CU_ASSERT_EQUAL(proc_wait(p, EXIT_TIMEOUT), EXIT_LOST);
  proc_free(p);
  g_free(node);
  zookeeper_close(zh);
  g_free(a);
  g_free(b);
}

/* --limit 2: two commands run at once on one path, a third is refused
 * (-n); --holders lists the two leases; when one ends, the third runs. */
static void test_lock_limit(void) {
  cleanup_processes();
  char *path = zkt_path("tools-limit");
  const char *hold[] = {"--limit",
                        "2",
                        path,
                        "--",
                        "sh",
                        "-c",
                        "echo pid=$$ token=$ZKR_FENCING_TOKEN; exec sleep 30",
                        NULL};
  proc *p1 = tool_start(ZKR_LOCK, hold);
  CU_ASSERT_FATAL(command_pid(p1) > 0);
  proc *p2 = tool_start(ZKR_LOCK, hold);
  CU_ASSERT_FATAL(command_pid(p2) > 0);
  const char *third[] = {"-n", "--limit", "2", path, "--", "true", NULL};
  CU_ASSERT_EQUAL(tool_run(ZKR_LOCK, third, NULL), EXIT_NOT_ACQUIRED);
  proc *h;
  const char *holders[] = {"--limit", "2", "--holders", path, NULL};
  CU_ASSERT_EQUAL(tool_run(ZKR_LOCK, holders, &h), 0);
  char **lines = g_strsplit(h->out->str, "\n", -1);
  CU_ASSERT_EQUAL(g_strv_length(lines), 3); /* 2 lines and "" */
  for (int i = 0; i < 2 && lines[i]; i++)
    CU_ASSERT_PTR_NOT_NULL(strstr(lines[i], "-lease-"));
  g_strfreev(lines);
  proc_free(h);
  char *t1 = value_of(p1->out->str, "token", 0);
  char *t2 = value_of(p2->out->str, "token", 0);
  CU_ASSERT(t1 && t2 && g_ascii_strtoll(t1, NULL, 10) > 0 &&
            g_ascii_strtoll(t2, NULL, 10) > 0 && strcmp(t1, t2) != 0);
  g_free(t1);
  g_free(t2);
  proc_signal(p1, SIGTERM);
  CU_ASSERT_EQUAL(proc_wait(p1, EXIT_TIMEOUT), 128 + SIGTERM);
  CU_ASSERT_EQUAL(tool_run(ZKR_LOCK, third, NULL), 0);
  proc_signal(p2, SIGTERM);
  CU_ASSERT_EQUAL(proc_wait(p2, EXIT_TIMEOUT), 128 + SIGTERM);
  proc_free(p1);
  proc_free(p2);
  g_free(path);
}

/* --limit with several paths: one lease of each semaphore, all or nothing
 * (a multi-lock of leases): COMMAND gets each lease's path, node and token
 * in the order the paths were given; while it runs, both semaphores (one
 * lease each) are full; a set that cannot be completed gives back what it
 * took; after COMMAND, no lease is left. */
static void test_lock_limit_several_paths(void) {
  cleanup_processes();
  char *a = zkt_path("tools-limits-a"), *b = zkt_path("tools-limits-b");
  const char *hold[] = {
      "--limit",
      "1",
      b,
      a,
      "--",
      "sh",
      "-c",
      "echo count=$ZKR_LOCK_COUNT p1=$ZKR_LOCK_PATH_1 n1=$ZKR_LOCK_NODE_1 "
      "t1=$ZKR_FENCING_TOKEN_1 n2=$ZKR_LOCK_NODE_2 t2=$ZKR_FENCING_TOKEN_2; "
      "exec sleep 30",
      NULL};
  proc *p = tool_start(ZKR_LOCK, hold);
  char *t2 = wait_value(p, "t2", 0, START_TIMEOUT);
  CU_ASSERT_FATAL(t2 != NULL);
  char *count = value_of(p->out->str, "count", 0);
  char *p1 = value_of(p->out->str, "p1", 0);
  char *n1 = value_of(p->out->str, "n1", 0),
       *n2 = value_of(p->out->str, "n2", 0);
  char *t1 = value_of(p->out->str, "t1", 0);
  CU_ASSERT_STRING_EQUAL(count, "2");
  CU_ASSERT_STRING_EQUAL(p1, b); /* the order given, not the path order */
  char *b_leases = g_strdup_printf("%s/leases/", b);
  char *a_leases = g_strdup_printf("%s/leases/", a);
  CU_ASSERT(g_str_has_prefix(n1, b_leases));
  CU_ASSERT(g_str_has_prefix(n2, a_leases));
  zhandle_t *zh = zkt_raw();
  CU_ASSERT_EQUAL(zkt_czxid(zh, n1), g_ascii_strtoll(t1, NULL, 10));
  CU_ASSERT_EQUAL(zkt_czxid(zh, n2), g_ascii_strtoll(t2, NULL, 10));
  const char *full_a[] = {"-n", "--limit", "1", a, "--", "true", NULL};
  CU_ASSERT_EQUAL(tool_run(ZKR_LOCK, full_a, NULL), EXIT_NOT_ACQUIRED);
  /* c is free, a is not: the set {a, c} is refused and c given back. */
  char *c = zkt_path("tools-limits-c");
  const char *a_and_c[] = {"-n", "--limit", "1", c, a, "--", "true", NULL};
  CU_ASSERT_EQUAL(tool_run(ZKR_LOCK, a_and_c, NULL), EXIT_NOT_ACQUIRED);
  CU_ASSERT(zkt_wait_semaphore_empty(zh, c, EXIT_TIMEOUT));
  proc_signal(p, SIGTERM);
  CU_ASSERT_EQUAL(proc_wait(p, EXIT_TIMEOUT), 128 + SIGTERM);
  CU_ASSERT(zkt_wait_semaphore_empty(zh, a, EXIT_TIMEOUT));
  CU_ASSERT(zkt_wait_semaphore_empty(zh, b, EXIT_TIMEOUT));
  zookeeper_close(zh);
  proc_free(p);
  g_free(count);
  g_free(p1);
  g_free(n1);
  g_free(n2);
  g_free(t1);
  g_free(t2);
  g_free(a_leases);
  g_free(b_leases);
  g_free(a);
  g_free(b);
  g_free(c);
}

/* -s (--shared, as in flock) takes the read side, -x the write side of
 * the read-write lock: while a reader runs, another reader runs too, a
 * writer and a plain lock are refused (-n); once it is gone, a writer
 * runs.  Both names of the program, options after the path (GNU
 * permutation, up to COMMAND) and flock's -c STRING and -e. */
static void test_lock_shared_exclusive(void) {
  cleanup_processes();
  char *path = zkt_path("tools-rw");
  const char *reader[] = {
      "-s", path, "--", "sh", "-c", "echo pid=$$; exec sleep 30", NULL};
  proc *r = tool_start(ZKR_LOCK, reader);
  CU_ASSERT_FATAL(command_pid(r) > 0);
  const char *reader2[] = {path, "-n", "--shared", "--", "true", NULL};
  CU_ASSERT_EQUAL(zkr_run("lock", reader2, NULL), 0);
  char *marker = tmp_file("rw-marker");
  char *touch = g_strdup_printf("touch '%s'", marker);
  const char *reader3[] = {path, "-s", "-n", "-c", touch, NULL};
  CU_ASSERT_EQUAL(zkr_run("lock", reader3, NULL), 0);
  CU_ASSERT_TRUE(g_file_test(marker, G_FILE_TEST_EXISTS)); /* -c ran */
  g_unlink(marker);
  const char *writer_e[] = {path, "-ne", "-c", touch, NULL};
  CU_ASSERT_EQUAL(zkr_run("lock", writer_e, NULL), EXIT_NOT_ACQUIRED);
  CU_ASSERT_FALSE(g_file_test(marker, G_FILE_TEST_EXISTS));
  g_free(touch);
  g_free(marker);
  const char *writer[] = {"-n", "-x", path, "--", "true", NULL};
  CU_ASSERT_EQUAL(tool_run(ZKR_LOCK, writer, NULL), EXIT_NOT_ACQUIRED);
  const char *mutex[] = {"-n", path, "--", "true", NULL};
  CU_ASSERT_EQUAL(tool_run(ZKR_LOCK, mutex, NULL), EXIT_NOT_ACQUIRED);
  proc *h;
  const char *holders[] = {"--holders", path, NULL};
  CU_ASSERT_EQUAL(tool_run(ZKR_LOCK, holders, &h), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(h->out->str, "__READ__"));
  proc_free(h);
  proc_signal(r, SIGTERM);
  CU_ASSERT_EQUAL(proc_wait(r, EXIT_TIMEOUT), 128 + SIGTERM);
  CU_ASSERT_EQUAL(tool_run(ZKR_LOCK, writer, NULL), 0);
  /* -e takes the write side: while it holds, its node is a writer's. */
  char *list = g_strdup_printf("'%s' --servers '%s' --holders '%s'", ZKR_LOCK,
                               zkt_hosts(), path);
  const char *writer_e2[] = {"-e", path, "-c", list, NULL};
  proc *w;
  CU_ASSERT_EQUAL(zkr_run("lock", writer_e2, &w), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(w->out->str, "__WRIT__"));
  proc_free(w);
  g_free(list);
  proc_free(r);
  g_free(path);
}

/* A SIGKILLed zkr-lock cannot release: its lock goes with its session,
 * after the session timeout, and a waiter gets it within timeout + 2 s.
 * Its command, which it could not stop, got the parent-death signal. */
static void test_lock_holder_killed(void) {
  cleanup_processes();
  char *path = zkt_path("tools-kill");
  zhandle_t *zh = zkt_raw();
  const char *hold[] = {path, "--", "sh", "-c", "echo pid=$$; exec sleep 30",
                        NULL};
  proc *a = tool_start(ZKR_LOCK, hold);
  pid_t cmd = command_pid(a);
  CU_ASSERT_FATAL(cmd > 0);
  const char *wait[] = {"-w", "20", path,          "--",
                        "sh", "-c", "echo got-it", NULL};
  proc *b = tool_start(ZKR_LOCK, wait);
  CU_ASSERT_FATAL(wait_children(zh, path, 2));

  int64_t t0 = zkt_now_ms();
  proc_signal(a, SIGKILL);
  CU_ASSERT_EQUAL(proc_wait(a, EXIT_TIMEOUT), 128 + SIGKILL);
  CU_ASSERT_TRUE(proc_wait_text(b, 0, "got-it", TOOL_SESSION_MS + 4000));
  int64_t took = zkt_now_ms() - t0;
  printf(" (lock passed %lld ms after the kill) ", (long long)took);
  /* Not before the session could expire; within timeout + 2 s. */
  CU_ASSERT(took >= TOOL_SESSION_MS / 2);
  CU_ASSERT(took <= TOOL_SESSION_MS + 2000);
  CU_ASSERT_EQUAL(proc_wait(b, EXIT_TIMEOUT), 0);
  CU_ASSERT_TRUE(zkt_wait_for(process_gone, (void *)(intptr_t)cmd, 5000));

  cleanup_processes();
  zookeeper_close(zh);
  g_free(path);
}

/* The holder's session expires while its command runs: the command gets
 * SIGTERM, zkr-lock exits 75 (whatever the command's status). */
static void test_lock_lost(void) {
  cleanup_processes();
  char *path = zkt_path("tools-lost");
  zhandle_t *zh = zkt_raw();
  const char *script = "trap 'echo got-term; exit 0' TERM; echo pid=$$; "
                       "while :; do sleep 0.1; done";
  const char *args[] = {"-v", path, "--", "sh", "-c", script, NULL};
  proc *a = tool_start(ZKR_LOCK, args);
  CU_ASSERT_FATAL(command_pid(a) > 0);
  clientid_t id;
  CU_ASSERT_FATAL(session_of(a, &id));
  CU_ASSERT_EQUAL_FATAL(
      zkrc_ensemble_expire_session(zkt_ensemble(), &id, 10000), 0);
  CU_ASSERT_EQUAL(proc_wait(a, EXIT_TIMEOUT), EXIT_LOST);
  CU_ASSERT_PTR_NOT_NULL(strstr(a->out->str, "got-term"));
  CU_ASSERT_PTR_NOT_NULL(strstr(a->err->str, "lost"));
  CU_ASSERT(wait_children(zh, path, 0));
  cleanup_processes();
  zookeeper_close(zh);
  g_free(path);
}

/* The same with -k USR1 -g 0.5 and a command that ignores both: it gets
 * SIGUSR1, then SIGKILL after the grace period, and nothing of its process
 * group survives. */
static void test_lock_lost_grace(void) {
  cleanup_processes();
  char *path = zkt_path("tools-grace");
  /* A background process that ignores both: only SIGKILL ends it. */
  const char *script = "trap 'echo got-usr1' USR1; trap '' TERM; "
                       "(trap '' USR1; exec sleep 30) & echo pid=$$ bg=$!; "
                       "while :; do sleep 0.1; done";
  const char *args[] = {"-v", "-k", "USR1", "-g",   "0.5", path,
                        "--", "sh", "-c",   script, NULL};
  proc *a = tool_start(ZKR_LOCK, args);
  pid_t cmd = command_pid(a);
  CU_ASSERT_FATAL(cmd > 0);
  char *bg_text = wait_value(a, "bg", 0, START_TIMEOUT);
  pid_t bg = bg_text ? (pid_t)atoi(bg_text) : 0;
  g_free(bg_text);
  register_command(bg);
  CU_ASSERT_FATAL(bg > 0);
  clientid_t id;
  CU_ASSERT_FATAL(session_of(a, &id));
  int64_t t0 = zkt_now_ms();
  CU_ASSERT_EQUAL_FATAL(
      zkrc_ensemble_expire_session(zkt_ensemble(), &id, 10000), 0);
  CU_ASSERT_EQUAL(proc_wait(a, EXIT_TIMEOUT), EXIT_LOST);
  CU_ASSERT(zkt_now_ms() - t0 >= 500);
  CU_ASSERT_PTR_NOT_NULL(strstr(a->out->str, "got-usr1"));
  CU_ASSERT_PTR_NOT_NULL(strstr(a->err->str, "SIGKILL"));
  CU_ASSERT_TRUE(process_gone((void *)(intptr_t)cmd));
  /* The group: no process of it is left, the background one included
   * (killed ones may take a moment to be reaped by init). */
  CU_ASSERT_TRUE(zkt_wait_for(process_gone, (void *)(intptr_t)bg, 3000));
  CU_ASSERT_TRUE(zkt_wait_for(group_gone, (void *)(intptr_t)cmd, 3000));
  cleanup_processes();
  g_free(path);
}

/* Signals reach the command (SIGINT here), whose status is passed on; a
 * command that cannot be found gives 127 and releases the lock. */
static void test_lock_signals_and_status(void) {
  cleanup_processes();
  char *path = zkt_path("tools-sig");
  zhandle_t *zh = zkt_raw();
  const char *script = "trap 'echo got-int; exit 3' INT; echo pid=$$; "
                       "while :; do sleep 0.1; done";
  const char *args[] = {path, "--", "sh", "-c", script, NULL};
  proc *a = tool_start(ZKR_LOCK, args);
  CU_ASSERT_FATAL(command_pid(a) > 0);
  proc_signal(a, SIGINT);
  CU_ASSERT_EQUAL(proc_wait(a, EXIT_TIMEOUT), 3);
  CU_ASSERT_PTR_NOT_NULL(strstr(a->out->str, "got-int"));

  const char *exit5[] = {path, "sh", "-c", "exit 5", NULL}; /* no "--" */
  CU_ASSERT_EQUAL(tool_run(ZKR_LOCK, exit5, NULL), 5);
  const char *missing[] = {path, "--", "/nonexistent/zkr-command", NULL};
  proc *m;
  CU_ASSERT_EQUAL(tool_run(ZKR_LOCK, missing, &m), EXIT_NOT_FOUND);
  CU_ASSERT_PTR_NOT_NULL(strstr(m->err->str, "zkr-lock: cannot run"));
  proc_free(m);
  CU_ASSERT(wait_children(zh, path, 0));
  cleanup_processes();
  zookeeper_close(zh);
  g_free(path);
}

/* ----------------------------------------------------------- zkr-elect */

static proc *start_candidate(const char *path, const char *id,
                             const char *log) {
  char *script = g_strdup_printf(
      "echo \"$ZKR_PARTICIPANT_ID $ZKR_FENCING_TOKEN\" >> '%s'; "
      "echo pid=$$ token=$ZKR_FENCING_TOKEN "
      "old=$ZKR_LEADER_TOKEN,$ZKR_ELECTION_PATH "
      "path=$ZKR_PATH; exec sleep 30",
      log);
  const char *args[] = {"--id", id, path, "--", "sh", "-c", script, NULL};
  proc *p = tool_start(ZKR_ELECT, args);
  g_free(script);
  return p;
}

/* Ask --leader (zkr elect); returns its status and the printed id in
 * *id. */
static int leader_of(const char *path, char **id) {
  const char *args[] = {path, "--leader", NULL};
  proc *p;
  int status = zkr_run("elect", args, &p);
  *id = g_strdup(p->out->str);
  proc_free(p);
  return status;
}

/* Two zkr-elect: the first leads and runs its command; SIGTERM to it stops
 * its command and makes it resign (exit 0: a clean step-down), and the
 * second runs its command, with a larger token; SIGINT stops that one with
 * its command's 130.  --leader follows, and says 3 when nobody is left. */
static void test_elect_failover(void) {
  cleanup_processes();
  char *path = zkt_path("tools-elect");
  char *log = tmp_file("leaders");
  zhandle_t *zh = zkt_raw();
  char *id;
  CU_ASSERT_EQUAL(leader_of(path, &id), EXIT_NO_LEADER);
  CU_ASSERT_STRING_EQUAL(id, "");
  g_free(id);

  proc *a = start_candidate(path, "cand-A", log);
  CU_ASSERT_FATAL(command_pid(a) > 0);
  proc *b = start_candidate(path, "cand-B", log);
  CU_ASSERT_FATAL(wait_children(zh, path, 2));
  CU_ASSERT_EQUAL(leader_of(path, &id), 0);
  CU_ASSERT_STRING_EQUAL(id, "cand-A\n");
  g_free(id);
  CU_ASSERT_STRING_EQUAL(b->out->str, ""); /* B waits */
  /* The token and path under their names, and those of 0.1. */
  char *token = value_of(a->out->str, "token", 0);
  char *old = value_of(a->out->str, "old", 0);
  char *same = g_strdup_printf("%s,%s", token ? token : "-", path);
  CU_ASSERT(token && g_ascii_strtoll(token, NULL, 10) > 0);
  CU_ASSERT_STRING_EQUAL(old ? old : "", same);
  char *epath = value_of(a->out->str, "path", 0);
  CU_ASSERT_STRING_EQUAL(epath ? epath : "", path);
  g_free(token);
  g_free(old);
  g_free(same);
  g_free(epath);
  /* --holders: the participants in line, the leader first. */
  const char *holders[] = {"--holders", path, NULL};
  proc *h;
  CU_ASSERT_EQUAL(tool_run(ZKR_ELECT, holders, &h), 0);
  char **in_line = g_strsplit(h->out->str, "\n", -1);
  CU_ASSERT_EQUAL_FATAL(g_strv_length(in_line), 3); /* 2 lines and "" */
  CU_ASSERT(g_str_has_prefix(in_line[0], "cand-A\t"));
  CU_ASSERT(g_str_has_prefix(in_line[1], "cand-B\t"));
  for (int i = 0; i < 2; i++) {
    const char *node = strchr(in_line[i], '\t') + 1;
    CU_ASSERT(g_str_has_prefix(node, path));
    CU_ASSERT(zkt_exists(zh, node));
  }
  g_strfreev(in_line);
  proc_free(h);

  proc_signal(a, SIGTERM);
  CU_ASSERT_EQUAL(proc_wait(a, EXIT_TIMEOUT), 0 /* a clean step-down */);
  CU_ASSERT_FATAL(command_pid(b) > 0);
  CU_ASSERT_EQUAL(leader_of(path, &id), 0);
  CU_ASSERT_STRING_EQUAL(id, "cand-B\n");
  g_free(id);

  char *text = read_file(log);
  char **lines = g_strsplit(text ? text : "", "\n", -1);
  CU_ASSERT_EQUAL_FATAL(g_strv_length(lines), 3);
  CU_ASSERT(g_str_has_prefix(lines[0], "cand-A "));
  CU_ASSERT(g_str_has_prefix(lines[1], "cand-B "));
  CU_ASSERT(g_ascii_strtoll(lines[1] + 7, NULL, 10) >
            g_ascii_strtoll(lines[0] + 7, NULL, 10));
  g_strfreev(lines);
  g_free(text);

  /* Other stop signals keep the status of COMMAND, killed by them. */
  proc_signal(b, SIGINT);
  CU_ASSERT_EQUAL(proc_wait(b, EXIT_TIMEOUT), 128 + SIGINT);
  CU_ASSERT_EQUAL(leader_of(path, &id), EXIT_NO_LEADER);
  g_free(id);
  cleanup_processes();
  zookeeper_close(zh);
  g_free(log);
  g_free(path);
}

/* The leader's session expires: its command gets SIGTERM; zkr-elect rejoins
 * with a new session and, alone, is elected again - while the command is
 * still busy stopping (1 s) - and runs the command again once it exited,
 * with a larger token.  With --once it exits 75 instead. */
static void test_elect_lost(void) {
  cleanup_processes();
  char *path = zkt_path("tools-elost");
  const char *script = "trap 'echo got-term; sleep 1; exit 0' TERM; "
                       "echo pid=$$ token=$ZKR_LEADER_TOKEN; "
                       "while :; do sleep 0.1; done";
  const char *args[] = {"-v", path, "--", "sh", "-c", script, NULL};
  proc *a = tool_start(ZKR_ELECT, args);
  CU_ASSERT_FATAL(command_pid(a) > 0);
  clientid_t id;
  CU_ASSERT_FATAL(session_of(a, &id));
  CU_ASSERT_EQUAL_FATAL(
      zkrc_ensemble_expire_session(zkt_ensemble(), &id, 10000), 0);
  CU_ASSERT_TRUE(proc_wait_text(a, 0, "got-term", EXIT_TIMEOUT));
  /* The second run, after the first stopped. */
  char *pid2 = wait_value(a, "pid", 1, EXIT_TIMEOUT);
  register_command(pid2 ? (pid_t)atoi(pid2) : 0);
  CU_ASSERT_FATAL(pid2 != NULL);
  g_free(pid2);
  CU_ASSERT(strstr(a->out->str, "got-term") <
            strstr(strstr(a->out->str, "pid=") + 1, "pid="));
  char *t1 = value_of(a->out->str, "token", 0);
  char *t2 = value_of(a->out->str, "token", 1);
  CU_ASSERT_FATAL(t1 && t2);
  CU_ASSERT(g_ascii_strtoll(t2, NULL, 10) > g_ascii_strtoll(t1, NULL, 10));
  g_free(t1);
  g_free(t2);
  CU_ASSERT_PTR_NOT_NULL(strstr(a->err->str, "lost"));
  proc_signal(a, SIGTERM);
  CU_ASSERT_EQUAL(proc_wait(a, EXIT_TIMEOUT), 0); /* the trap's exit 0 */
  proc_free(a);

  const char *once[] = {"-v", "--once", path, "--", "sh", "-c", script, NULL};
  proc *o = tool_start(ZKR_ELECT, once);
  CU_ASSERT_FATAL(command_pid(o) > 0);
  CU_ASSERT_FATAL(session_of(o, &id));
  CU_ASSERT_EQUAL_FATAL(
      zkrc_ensemble_expire_session(zkt_ensemble(), &id, 10000), 0);
  CU_ASSERT_EQUAL(proc_wait(o, EXIT_TIMEOUT), EXIT_LOST);
  CU_ASSERT_PTR_NOT_NULL(strstr(o->out->str, "got-term"));
  cleanup_processes();
  g_free(path);
}

/* A command that exits by itself while leading: with --once zkr-elect
 * exits with its status and leaves; without, it steps down so that the
 * other participant takes over. */
static void test_elect_command_exits(void) {
  cleanup_processes();
  char *path = zkt_path("tools-eexit");
  zhandle_t *zh = zkt_raw();
  const char *once[] = {"--once", path, "--", "sh", "-c", "exit 5", NULL};
  CU_ASSERT_EQUAL(tool_run(ZKR_ELECT, once, NULL), 5);
  char *id;
  CU_ASSERT_EQUAL(leader_of(path, &id), EXIT_NO_LEADER);
  g_free(id);

  /* A's command ends after B has queued; B takes over. */
  char *go = tmp_file("go");
  char *script = g_strdup_printf(
      "echo pid=$$; while [ ! -e '%s' ]; do sleep 0.05; done; exit 4", go);
  const char *first[] = {"--id", "quitter", "--rejoin-delay", "30", path, "--",
                         "sh",   "-c",      script,           NULL};
  proc *a = tool_start(ZKR_ELECT, first);
  CU_ASSERT_FATAL(command_pid(a) > 0);
  char *log = tmp_file("takeover");
  proc *b = start_candidate(path, "taker", log);
  CU_ASSERT_FATAL(wait_children(zh, path, 2));
  CU_ASSERT_FATAL(g_file_set_contents(go, "", 0, NULL));
  CU_ASSERT_FATAL(command_pid(b) > 0);
  CU_ASSERT_TRUE(proc_wait_text(a, 1, "stepping down", EXIT_TIMEOUT));
  CU_ASSERT_PTR_NOT_NULL(strstr(a->err->str, "status 4"));
  CU_ASSERT_EQUAL(leader_of(path, &id), 0);
  CU_ASSERT_STRING_EQUAL(id, "taker\n");
  g_free(id);
  /* A waits out its rejoin delay; a stop signal ends it at once. */
  proc_signal(a, SIGTERM);
  CU_ASSERT_EQUAL(proc_wait(a, EXIT_TIMEOUT), 0);
  cleanup_processes();
  zookeeper_close(zh);
  g_free(log);
  g_free(script);
  g_free(go);
  g_free(path);
}

/* The ID column of --watch's "TIME<TAB>ID<TAB>TOKEN" lines, one per line
 * (g_free): "" where nobody led.  Each line's time parses as ISO 8601 and
 * never goes back, and the tokens grow (*well_formed). */
static char *watch_ids(const char *out, int *well_formed) {
  GString *ids = g_string_new(NULL);
  char **lines = g_strsplit(out, "\n", -1);
  GDateTime *last = NULL;
  int64_t last_token = 0;
  *well_formed = 1;
  for (int i = 0; lines[i] && lines[i][0]; i++) {
    char **f = g_strsplit(lines[i], "\t", 3);
    GDateTime *t =
        g_strv_length(f) == 3 ? g_date_time_new_from_iso8601(f[0], NULL) : NULL;
    int64_t token = t ? g_ascii_strtoll(f[2], NULL, 10) : 0;
    if (t == NULL || (last && g_date_time_compare(last, t) > 0) ||
        (f[1][0] != '\0') != (token > 0) || (token && token <= last_token))
      *well_formed = 0;
    if (token)
      last_token = token;
    g_string_append_printf(ids, "%s\n", t ? f[1] : "?");
    if (last)
      g_date_time_unref(last);
    last = t;
    g_strfreev(f);
  }
  if (last)
    g_date_time_unref(last);
  g_strfreev(lines);
  return g_string_free(ids, FALSE);
}

/* Wait until the IDs --watch printed are @p want. */
static int watch_shows(proc *w, const char *want) {
  int64_t deadline = zkt_now_ms() + START_TIMEOUT;
  for (;;) {
    int ok;
    char *ids = watch_ids(w->out->str, &ok);
    int done = strcmp(ids, want) == 0;
    g_free(ids);
    if (done)
      return ok;
    if (zkt_now_ms() >= deadline || proc_output_ended(w))
      return 0;
    proc_pump(w, (int)(deadline - zkt_now_ms()));
  }
}

/* --watch prints the leader now (none: empty ID and token) and at each
 * change, with the time and the leader's token, also after its session
 * expired (it watches again on the new one). */
static void test_elect_watch(void) {
  cleanup_processes();
  char *path = zkt_path("tools-watch");
  char *log = tmp_file("watched");
  zhandle_t *zh = zkt_raw();
  const char *args[] = {"-v", "--watch", path, NULL};
  proc *w = tool_start(ZKR_ELECT, args);
  CU_ASSERT_FATAL(watch_shows(w, "\n"));
  proc *a = start_candidate(path, "watched-A", log);
  CU_ASSERT_FATAL(command_pid(a) > 0);
  CU_ASSERT_TRUE(watch_shows(w, "\nwatched-A\n"));

  clientid_t id;
  CU_ASSERT_FATAL(session_of(w, &id));
  char *first =
      g_strdup_printf("session 0x%llx ", (unsigned long long)id.client_id);
  CU_ASSERT_EQUAL_FATAL(
      zkrc_ensemble_expire_session(zkt_ensemble(), &id, 10000), 0);
  /* Its next session: a second "session" line. */
  int64_t deadline = zkt_now_ms() + START_TIMEOUT;
  while (zkt_now_ms() < deadline &&
         !strstr(strstr(w->err->str, first) + strlen(first), "session 0x"))
    proc_pump(w, 100);
  CU_ASSERT_PTR_NOT_NULL_FATAL(
      strstr(strstr(w->err->str, first) + strlen(first), "session 0x"));
  g_free(first);

  proc *b = start_candidate(path, "watched-B", log);
  CU_ASSERT_FATAL(wait_children(zh, path, 2));
  proc_signal(a, SIGTERM);
  CU_ASSERT_TRUE(watch_shows(w, "\nwatched-A\nwatched-B\n"));
  /* Its node leads; its command has logged its token once it runs. */
  CU_ASSERT_FATAL(command_pid(b) > 0);
  proc_signal(b, SIGTERM);
  CU_ASSERT_TRUE(watch_shows(w, "\nwatched-A\nwatched-B\n\n"));
  CU_ASSERT_EQUAL(proc_wait(a, EXIT_TIMEOUT), 0);
  CU_ASSERT_EQUAL(proc_wait(b, EXIT_TIMEOUT), 0);
  proc_signal(w, SIGINT);
  CU_ASSERT_EQUAL(proc_wait(w, EXIT_TIMEOUT), 0);
  int ok;
  char *ids = watch_ids(w->out->str, &ok);
  CU_ASSERT_STRING_EQUAL(ids, "\nwatched-A\nwatched-B\n\n");
  CU_ASSERT(ok);
  g_free(ids);
  /* The tokens are the leaders' own (what their commands got). */
  char *text = read_file(log);
  char **runs = g_strsplit(text ? text : "", "\n", -1);
  for (int i = 0; i < 2; i++) {
    char **f = g_strsplit(runs[i] ? runs[i] : "", " ", 2);
    char *line = g_strdup_printf("\t%s\t%s\n", f[0] ? f[0] : "-",
                                 f[0] && f[1] ? f[1] : "-");
    CU_ASSERT_PTR_NOT_NULL(strstr(w->out->str, line));
    if (strstr(w->out->str, line) == NULL)
      fprintf(stderr, "\nno \"%s\" in --watch's output:\n%s", line,
              w->out->str);
    g_free(line);
    g_strfreev(f);
  }
  g_strfreev(runs);
  g_free(text);
  cleanup_processes();
  zookeeper_close(zh);
  g_free(log);
  g_free(path);
}

/* ---------------------------------------------------------------- JSON */

/* The @p nth line of @p text parsed as a JSON object (json-glib): NULL
 * (and a test failure) when it is not one.  g_object_unref *parser. */
static JsonObject *json_line(const char *text, int nth, JsonParser **parser) {
  char **lines = g_strsplit(text, "\n", -1);
  *parser = json_parser_new();
  GError *error = NULL;
  JsonObject *o = NULL;
  if ((int)g_strv_length(lines) > nth &&
      json_parser_load_from_data(*parser, lines[nth], -1, &error)) {
    JsonNode *root = json_parser_get_root(*parser);
    if (root && JSON_NODE_HOLDS_OBJECT(root))
      o = json_node_get_object(root);
  }
  if (o == NULL)
    fprintf(stderr, "\nline %d is no JSON object (%s):\n%s\n", nth,
            error ? error->message : "missing", text);
  CU_ASSERT_PTR_NOT_NULL(o);
  g_clear_error(&error);
  g_strfreev(lines);
  return o;
}

/* --json (issue 32): zkr lock --holders, zkr elect --holders, --leader and
 * --watch print one JSON document per line, parsed back with json-glib,
 * with the contenders' ids, nodes (which exist) and tokens (their
 * czxids); a leader of null when nobody leads (exit 3 as without it). */
static void test_json_answers(void) {
  cleanup_processes();
  char *lock = zkt_path("tools-json-lock");
  char *other = zkt_path("tools-json-other");
  char *election = zkt_path("tools-json-elect");
  zhandle_t *zh = zkt_raw();
  const char *hold[] = {"--id",
                        "json-holder",
                        lock,
                        "--",
                        "sh",
                        "-c",
                        "echo pid=$$; exec sleep 30",
                        NULL};
  proc *h = tool_start(ZKR_LOCK, hold);
  CU_ASSERT_FATAL(command_pid(h) > 0);

  proc *p;
  const char *holders[] = {"--holders", "--json", lock, other, NULL};
  CU_ASSERT_EQUAL(zkr_run("lock", holders, &p), 0);
  JsonParser *jp;
  JsonObject *o = json_line(p->out->str, 0, &jp);
  if (o) {
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(o, "path"), lock);
    JsonArray *c = json_object_get_array_member(o, "contenders");
    CU_ASSERT_EQUAL_FATAL(json_array_get_length(c), 1);
    JsonObject *first = json_array_get_object_element(c, 0);
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(first, "id"),
                           "json-holder");
    const char *node = json_object_get_string_member(first, "node");
    CU_ASSERT(g_str_has_prefix(node, lock) && zkt_exists(zh, node));
    CU_ASSERT_EQUAL(json_object_get_int_member(first, "token"),
                    zkt_czxid(zh, node));
  }
  g_object_unref(jp);
  o = json_line(p->out->str, 1, &jp); /* the second path: nobody */
  if (o)
    CU_ASSERT_EQUAL(
        json_array_get_length(json_object_get_array_member(o, "contenders")),
        0);
  g_object_unref(jp);
  proc_free(p);

  const char *leader[] = {"--leader", "--json", election, NULL};
  CU_ASSERT_EQUAL(tool_run(ZKR_ELECT, leader, &p), EXIT_NO_LEADER);
  o = json_line(p->out->str, 0, &jp);
  if (o)
    CU_ASSERT_TRUE(json_object_get_null_member(o, "leader"));
  g_object_unref(jp);
  proc_free(p);

  const char *watch[] = {"--watch", "--json", election, NULL};
  proc *w = tool_start(ZKR_ELECT, watch);
  int64_t deadline = zkt_now_ms() + START_TIMEOUT; /* its "nobody" first */
  while (zkt_now_ms() < deadline && count_char(w->out->str, '\n') < 1)
    proc_pump(w, 100);
  char *log = tmp_file("json-leaders");
  proc *a = start_candidate(election, "json-A", log);
  CU_ASSERT_FATAL(command_pid(a) > 0);
  CU_ASSERT_EQUAL(zkr_run("elect", leader, &p), 0);
  o = json_line(p->out->str, 0, &jp);
  if (o) {
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(o, "leader"),
                           "json-A");
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(o, "path"), election);
  }
  g_object_unref(jp);
  proc_free(p);
  const char *eholders[] = {"--holders", "--json", election, NULL};
  CU_ASSERT_EQUAL(tool_run(ZKR_ELECT, eholders, &p), 0);
  o = json_line(p->out->str, 0, &jp);
  if (o) {
    JsonArray *c = json_object_get_array_member(o, "contenders");
    CU_ASSERT_EQUAL_FATAL(json_array_get_length(c), 1);
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(
                               json_array_get_object_element(c, 0), "id"),
                           "json-A");
  }
  g_object_unref(jp);
  proc_free(p);
  /* --watch: nobody, then json-A with its token, a line each. */
  deadline = zkt_now_ms() + START_TIMEOUT;
  while (zkt_now_ms() < deadline && count_char(w->out->str, '\n') < 2)
    proc_pump(w, 100);
  JsonObject *none = json_line(w->out->str, 0, &jp);
  if (none) {
    CU_ASSERT_TRUE(json_object_get_null_member(none, "leader"));
    CU_ASSERT_TRUE(json_object_get_null_member(none, "token"));
    CU_ASSERT(strlen(json_object_get_string_member(none, "time")) > 10);
  }
  g_object_unref(jp);
  o = json_line(w->out->str, 1, &jp);
  char *token = value_of(a->out->str, "token", 0);
  if (o) {
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(o, "leader"),
                           "json-A");
    CU_ASSERT_EQUAL(json_object_get_int_member(o, "token"),
                    g_ascii_strtoll(token ? token : "-1", NULL, 10));
  }
  g_object_unref(jp);
  g_free(token);
  proc_signal(w, SIGINT);
  CU_ASSERT_EQUAL(proc_wait(w, EXIT_TIMEOUT), 0);
  proc_signal(a, SIGTERM);
  CU_ASSERT_EQUAL(proc_wait(a, EXIT_TIMEOUT), 0);
  proc_signal(h, SIGTERM);
  CU_ASSERT_EQUAL(proc_wait(h, EXIT_TIMEOUT), 128 + SIGTERM);
  cleanup_processes();
  zookeeper_close(zh);
  g_free(log);
  g_free(lock);
  g_free(other);
  g_free(election);
}

/* ------------------------------------------------------------- health */

/* zkr health (issue 32): 0 with the member it connected to (one of the
 * list), the session, a confirmed lease no longer than the session
 * timeout, and the member's version and mode from its "srvr"; the same as
 * one JSON object; 69 at once when every server refuses. */
static void test_health(void) {
  cleanup_processes();
  /* The members themselves: "srvr" is no ZooKeeper request, which the
   * harness's fault proxies (framing requests) would not pass on. */
  const char *direct = zkrc_ensemble_direct_connect_string(zkt_ensemble());
  proc *p;
  const char *plain[] = {"--servers", direct, NULL};
  CU_ASSERT_EQUAL_FATAL(zkr_run("health", plain, &p), 0);
  char *text = p->out->str;
  char *server = NULL, *session = NULL, *timeout = NULL, *lease = NULL,
       *version = NULL, *mode = NULL;
  gchar **lines = g_strsplit(text, "\n", -1);
  for (int i = 0; lines[i]; i++) {
    gchar **kv = g_strsplit(lines[i], "\t", 2);
    char **into = !kv[0] || !kv[1]                   ? NULL
                  : strcmp(kv[0], "server") == 0     ? &server
                  : strcmp(kv[0], "session") == 0    ? &session
                  : strcmp(kv[0], "timeout_ms") == 0 ? &timeout
                  : strcmp(kv[0], "lease_ms") == 0   ? &lease
                  : strcmp(kv[0], "version") == 0    ? &version
                  : strcmp(kv[0], "mode") == 0       ? &mode
                                                     : NULL;
    if (into)
      *into = g_strdup(kv[1]);
    g_strfreev(kv);
  }
  g_strfreev(lines);
  CU_ASSERT_FATAL(server && session && timeout && lease && version && mode);
  char *listed = g_strdup_printf(",%s,", direct);
  char *item = g_strdup_printf(",%s,", server);
  CU_ASSERT_PTR_NOT_NULL(strstr(listed, item)); /* one of the list */
  CU_ASSERT(g_str_has_prefix(session, "0x") &&
            g_ascii_strtoull(session + 2, NULL, 16) != 0);
  int timeout_ms = atoi(timeout), lease_ms = atoi(lease);
  CU_ASSERT(timeout_ms > 0 && timeout_ms <= TOOL_SESSION_MS);
  CU_ASSERT(lease_ms > 0 && lease_ms <= timeout_ms);
  CU_ASSERT(g_str_has_prefix(version, "3."));
  CU_ASSERT(strcmp(mode, "leader") == 0 || strcmp(mode, "follower") == 0);
  g_free(listed);
  g_free(item);
  g_free(server);
  g_free(session);
  g_free(timeout);
  g_free(lease);
  g_free(version);
  g_free(mode);
  proc_free(p);

  const char *json[] = {"--json", "--servers", direct, NULL};
  CU_ASSERT_EQUAL(zkr_run("health", json, &p), 0);
  JsonParser *jp;
  JsonObject *o = json_line(p->out->str, 0, &jp);
  if (o) {
    CU_ASSERT(json_object_get_int_member(o, "lease_ms") > 0);
    CU_ASSERT(
        g_str_has_prefix(json_object_get_string_member(o, "session"), "0x"));
    const char *m = json_object_get_string_member(o, "mode");
    CU_ASSERT(m && (strcmp(m, "leader") == 0 || strcmp(m, "follower") == 0));
  }
  g_object_unref(jp);
  proc_free(p);

  const char *refused[] = {ZKR, "health", "--servers", "127.0.0.1:1", NULL};
  p = proc_start(refused);
  CU_ASSERT_EQUAL(proc_wait(p, EXIT_TIMEOUT), EXIT_UNAVAILABLE);
  CU_ASSERT_PTR_NOT_NULL(strstr(p->err->str, "connection refused"));
  CU_ASSERT_EQUAL(p->out->len, 0);
  proc_free(p);
}

/* The letters that meant something else in 0.1 (issue 32) are refused,
 * before any server is asked, with a word on what they became; zkr-lock's
 * -s is flock's --shared, and an old "-s HOSTS" is an invalid path that
 * says so. */
static void test_changed_letters(void) {
  cleanup_processes();
  static const struct {
    const char *tool;
    const char *args[6];
    int status;
    const char *hint;
  } cases[] = {
      {"zkr-ls",
       {"-s", "h:1", "/p", NULL},
       EXIT_USAGE,
       "the servers are --servers"},
      {"zkr-watch", {"-n", "3", "/p", NULL}, EXIT_USAGE, "a count is --count"},
      {"zkr-watch",
       {"-c", "/p", NULL},
       EXIT_USAGE,
       "watching the children is --children"},
      {"zkr-watch",
       {"-e", "/p", "--", "true", NULL},
       EXIT_USAGE,
       "that is --exit-on-error"},
      {"zkr-members",
       {"-w", "/p", NULL},
       EXIT_USAGE,
       "following the group is --watch"},
      {"zkr-members",
       {"--watch", "-n", "2", "/p", NULL},
       EXIT_USAGE,
       "a count is --count"},
      {"zkr-elect",
       {"-r", "2", "/p", "--", "true", NULL},
       EXIT_USAGE,
       "--rejoin-delay"},
      {"zkr-lock",
       {"-s", "h:2181", "/p", "--", "true", NULL},
       EXIT_BAD_PATH,
       "-s is --shared, as in flock(1); the servers are --servers"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    char *tool = g_strdup_printf("%s/tools/%s", TOP_BUILDDIR, cases[i].tool);
    const char *argv[12] = {tool, "--servers", "127.0.0.1:1"};
    int n = 3;
    for (int j = 0; cases[i].args[j]; j++)
      argv[n++] = cases[i].args[j];
    argv[n] = NULL;
    proc *p = proc_start(argv);
    int status = proc_wait(p, EXIT_TIMEOUT);
    if (status != cases[i].status || !strstr(p->err->str, cases[i].hint))
      fprintf(stderr, "\ncase %zu (%s %s): status %d, stderr: %s\n", i,
              cases[i].tool, cases[i].args[0], status, p->err->str);
    CU_ASSERT_EQUAL(status, cases[i].status);
    CU_ASSERT_PTR_NOT_NULL(strstr(p->err->str, cases[i].hint));
    CU_ASSERT_STRING_EQUAL(p->out->str, "");
    proc_free(p);
    g_free(tool);
  }
}

/* ---------------------------------------------------------------- both */

typedef struct usage_case {
  const char *tool;
  const char *args[8];
  int status;
} usage_case;

/* Bad usage 2, invalid paths 65, each with a message naming the program;
 * nothing is sent to a server (the server list is unreachable). */
static void test_usage_and_paths(void) {
  cleanup_processes();
  static const usage_case cases[] = {
      {ZKR_LOCK, {NULL}, EXIT_USAGE},
      {ZKR_LOCK, {"--bogus", "/p", "--", "true", NULL}, EXIT_USAGE},
      {ZKR_LOCK, {"/p", "-n", "-q", "--", "true", NULL}, EXIT_USAGE},
      {ZKR_LOCK, {"-w", "soon", "/p", "--", "true", NULL}, EXIT_USAGE},
      {ZKR_LOCK, {"-w", "-1", "/p", "--", "true", NULL}, EXIT_USAGE},
      {ZKR_LOCK, {"-E", "256", "/p", "--", "true", NULL}, EXIT_USAGE},
      {ZKR_LOCK, {"-k", "NOSUCH", "/p", "--", "true", NULL}, EXIT_USAGE},
      {ZKR_LOCK, {"-w", NULL}, EXIT_USAGE},
      {ZKR_LOCK, {"--holders", "/p", "extra", NULL}, EXIT_BAD_PATH},
      {ZKR_LOCK, {"/p", "/p", "--", "true", NULL}, EXIT_USAGE},
      {ZKR_LOCK, {"--limit", "0", "/p", "--", "true", NULL}, EXIT_USAGE},
      {ZKR_LOCK, {"--limit", "2", "-x", "/p", "--", "true", NULL}, EXIT_USAGE},
      {ZKR_ELECT, {NULL}, EXIT_USAGE},
      {ZKR_ELECT, {"/p", NULL}, EXIT_USAGE},
      {ZKR_ELECT, {"--leader", "--watch", "/p", NULL}, EXIT_USAGE},
      {ZKR_ELECT, {"--holders", "--watch", "/p", NULL}, EXIT_USAGE},
      {ZKR_ELECT, {"-r", "x", "/p", "--", "true", NULL}, EXIT_USAGE},
      {ZKR_LOCK, {"--server-tick", "0", "/p", "--", "true", NULL}, EXIT_USAGE},
      {ZKR_ELECT, {"--server-tick", "x", "/p", "--", "true", NULL}, EXIT_USAGE},
      {ZKR_LOCK, {"relative", "--", "true", NULL}, EXIT_BAD_PATH},
      {ZKR_LOCK, {"/a//b", "--", "true", NULL}, EXIT_BAD_PATH},
      {ZKR_LOCK, {"--holders", "/zookeeper/x", NULL}, EXIT_BAD_PATH},
      {ZKR_ELECT, {"/a/", "--", "true", NULL}, EXIT_BAD_PATH},
      {ZKR_ELECT, {"--leader", "/a/../b", NULL}, EXIT_BAD_PATH},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *argv[12] = {cases[i].tool, "--servers", "127.0.0.1:1", "-t",
                            "500"};
    int n = 5;
    for (int j = 0; cases[i].args[j]; j++)
      argv[n++] = cases[i].args[j];
    argv[n] = NULL;
    proc *p = proc_start(argv);
    int status = proc_wait(p, EXIT_TIMEOUT);
    if (status != cases[i].status)
      fprintf(stderr, "\ncase %zu (%s %s): status %d, expected %d\n", i,
              cases[i].tool, cases[i].args[0] ? cases[i].args[0] : "", status,
              cases[i].status);
    CU_ASSERT_EQUAL(status, cases[i].status);
    const char *name = strstr(cases[i].tool, "zkr-");
    char *prefix = g_strdup_printf("%s: ", name);
    CU_ASSERT(g_str_has_prefix(p->err->str, prefix));
    CU_ASSERT_STRING_EQUAL(p->out->str, "");
    g_free(prefix);
    proc_free(p);
  }
}

/* Servers that cannot be had, each said as what it is (issue 32): all
 * refusing, 69 at once with "connection refused (host:port, ...)"; one
 * that accepts and never answers, 69 after --connect-timeout; a name that
 * does not resolve, 68; a chroot that does not exist, 69 naming it.
 * --help and --version exit 0; ZKR_SERVERS is the default. */
static void test_unreachable_help_env(void) {
  cleanup_processes();
  const char *tools[] = {ZKR_LOCK, ZKR_ELECT};
  /* A port that accepts connections and never answers: the test's own. */
  int silent = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sin = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof sin;
  CU_ASSERT_FATAL(silent >= 0 &&
                  bind(silent, (struct sockaddr *)&sin, sizeof sin) == 0 &&
                  listen(silent, 16) == 0 &&
                  getsockname(silent, (struct sockaddr *)&sin, &len) == 0);
  char *silent_hp = g_strdup_printf("127.0.0.1:%d", ntohs(sin.sin_port));
  char *no_chroot = g_strdup_printf("%s/zkt-no-such-chroot", zkt_hosts());
  for (int i = 0; i < 2; i++) {
    /* Every server refuses (nothing listens on ports 1 and 2): said at
     * once, not after the session or connect timeout (10 s, 5 s). */
    const char *argv[] = {tools[i],
                          "--servers",
                          "127.0.0.1:1,127.0.0.1:2",
                          "/zkt/unreachable",
                          "--",
                          "true",
                          NULL};
    int64_t t0 = zkt_now_ms();
    proc *p = proc_start(argv);
    CU_ASSERT_EQUAL(proc_wait(p, EXIT_TIMEOUT), EXIT_UNAVAILABLE);
    int64_t took = zkt_now_ms() - t0;
    printf(" (refused: exit after %lld ms) ", (long long)took);
    CU_ASSERT(took < 2000);
    CU_ASSERT_PTR_NOT_NULL(
        strstr(p->err->str, "connection refused (127.0.0.1:1, 127.0.0.1:2)"));
    proc_free(p);
    /* A server that takes the connection and says nothing: the connect
     * timeout, with its own words. */
    const char *mute[] = {
        tools[i], "--servers",        silent_hp, "--connect-timeout",
        "0.5",    "/zkt/unreachable", "--",      "true",
        NULL};
    t0 = zkt_now_ms();
    p = proc_start(mute);
    CU_ASSERT_EQUAL(proc_wait(p, EXIT_TIMEOUT), EXIT_UNAVAILABLE);
    took = zkt_now_ms() - t0;
    CU_ASSERT(took >= 500 && took < 3000);
    CU_ASSERT_PTR_NOT_NULL(strstr(p->err->str, "within 500 ms"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p->err->str, "no session was made"));
    proc_free(p);
    /* A name that does not resolve: 68, named. */
    const char *noname[] = {tools[i],
                            "--servers",
                            "zkt-no-such-host.invalid:2181",
                            "/zkt/unreachable",
                            "--",
                            "true",
                            NULL};
    p = proc_start(noname);
    CU_ASSERT_EQUAL(proc_wait(p, EXIT_TIMEOUT), EXIT_NOHOST);
    CU_ASSERT_PTR_NOT_NULL(strstr(p->err->str, "cannot resolve the server name "
                                               "zkt-no-such-host.invalid"));
    proc_free(p);
    /* A chroot that does not exist: named, before anything is made. */
    const char *chroot[] = {tools[i], "--servers",      no_chroot,
                            "-t",     TOOL_SESSION_ARG, "/zkt/unreachable",
                            "--",     "true",           NULL};
    p = proc_start(chroot);
    CU_ASSERT_EQUAL(proc_wait(p, EXIT_TIMEOUT), EXIT_UNAVAILABLE);
    CU_ASSERT_PTR_NOT_NULL(
        strstr(p->err->str, "the chroot /zkt-no-such-chroot of the server "
                            "list does not exist"));
    proc_free(p);

    const char *help[] = {tools[i], "--help", NULL};
    p = proc_start(help);
    CU_ASSERT_EQUAL(proc_wait(p, EXIT_TIMEOUT), 0);
    CU_ASSERT(g_str_has_prefix(p->out->str, "Usage: "));
    CU_ASSERT_PTR_NOT_NULL(strstr(p->out->str, "Exit status"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p->out->str, "ZKR_SERVERS"));
    proc_free(p);
    const char *version[] = {tools[i], "--version", NULL};
    p = proc_start(version);
    CU_ASSERT_EQUAL(proc_wait(p, EXIT_TIMEOUT), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p->out->str, PACKAGE_VERSION));
    proc_free(p);
  }
  /* No -s: ZKR_SERVERS names the servers. */
  g_setenv("ZKR_SERVERS", zkt_hosts(), TRUE);
  const char *query[] = {ZKR_ELECT, "--leader", "/zkt/env-test", NULL};
  proc *p = proc_start(query);
  CU_ASSERT_EQUAL(proc_wait(p, EXIT_TIMEOUT), EXIT_NO_LEADER);
  proc_free(p);
  const char *holders[] = {ZKR_LOCK, "--holders", "/zkt/env-test", NULL};
  p = proc_start(holders);
  CU_ASSERT_EQUAL(proc_wait(p, EXIT_TIMEOUT), 0);
  CU_ASSERT_STRING_EQUAL(p->out->str, "");
  proc_free(p);
  g_unsetenv("ZKR_SERVERS");
  close(silent);
  g_free(silent_hp);
  g_free(no_chroot);
}

/* ----------------------------------------------- digest authentication */

#define AUTH_ALICE "alice:alice-secret"

/* A directory only alice (digest) may use: every permission, no one else
 * any. */
static char *alice_only_dir(zhandle_t *zh) {
  char *path = zkt_path("tools-auth");
  zkt_make_path(zh, "/zkt");
  char *id = zkt_digest_id(AUTH_ALICE);
  struct ACL alice = {ZOO_PERM_ALL, {"digest", id}};
  struct ACL_vector acl = {1, &alice};
  CU_ASSERT_EQUAL_FATAL(zoo_create(zh, path, "", 0, &acl, 0, NULL, 0), ZOK);
  g_free(id);
  return path;
}

/* A file holding @p text (g_free the name). */
static char *file_with(const char *name, const char *text) {
  char *file = tmp_file(name);
  CU_ASSERT_FATAL(g_file_set_contents(file, text, -1, NULL));
  return file;
}

/* Digest credentials from --auth-file, $ZKR_AUTH_FILE or $ZKR_AUTH open a
 * directory whose ACL admits alice only; without them, or with the wrong
 * password, the tools exit 77 (EX_NOPERM) at once; an unreadable or
 * malformed file is refused before anything is sent; COMMAND does not
 * inherit $ZKR_AUTH; -v shows the session id but no password. */
static void test_auth(void) {
  cleanup_processes();
  zhandle_t *zh = zkt_raw();
  char *dir = alice_only_dir(zh);
  char *good = file_with("auth-good", AUTH_ALICE "\n");
  char *wrong = file_with("auth-wrong", "alice:not-her-secret\n");
  char *malformed = file_with("auth-malformed", "alice\n");
  char *missing = tmp_file("auth-missing");
  const char *show = "echo auth=${ZKR_AUTH-unset}";
  const char *none[] = {dir, "--", "true", NULL};
  CU_ASSERT_EQUAL(tool_run(ZKR_LOCK, none, NULL), EXIT_NOPERM);
  const char *with_file[] = {"-v", "--auth-file", good, dir, "--",
                             "sh", "-c",          show, NULL};
  proc *p;
  CU_ASSERT_EQUAL(tool_run(ZKR_LOCK, with_file, &p), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(p->out->str, "auth=unset"));
  CU_ASSERT_PTR_NOT_NULL(strstr(p->err->str, "session 0x"));
  CU_ASSERT_PTR_NULL(strstr(p->err->str, "password"));
  proc_free(p);
  const char *with_wrong[] = {"--auth-file", wrong, dir, "--", "true", NULL};
  CU_ASSERT_EQUAL(tool_run(ZKR_LOCK, with_wrong, NULL), EXIT_NOPERM);
  const char *bad_files[] = {malformed, missing};
  for (int i = 0; i < 2; i++) {
    const char *args[] = {"--auth-file", bad_files[i], dir, "--", "true", NULL};
    CU_ASSERT_EQUAL(tool_run(ZKR_LOCK, args, &p), EXIT_NOPERM);
    CU_ASSERT_PTR_NOT_NULL(strstr(p->err->str, "credentials"));
    proc_free(p);
  }
  g_setenv("ZKR_AUTH", "alice", TRUE); /* not USER:PASSWORD */
  CU_ASSERT_EQUAL(tool_run(ZKR_LOCK, none, &p), EXIT_NOPERM);
  CU_ASSERT_PTR_NOT_NULL(strstr(p->err->str, "ZKR_AUTH"));
  proc_free(p);
  g_setenv("ZKR_AUTH", AUTH_ALICE, TRUE);
  const char *from_env[] = {dir, "--", "sh", "-c", show, NULL};
  CU_ASSERT_EQUAL(tool_run(ZKR_LOCK, from_env, &p), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(p->out->str, "auth=unset"));
  proc_free(p);
  /* Holding (no COMMAND): the secret is wiped from what
   * /proc/PID/environ shows of the tool. */
  const char *hold[] = {dir, NULL};
  p = tool_start(ZKR_LOCK, hold);
  CU_ASSERT_FATAL(proc_wait_text(p, 0, "\t", START_TIMEOUT));
  char *environ_file = g_strdup_printf("/proc/%d/environ", (int)p->child.pid);
  gchar *env_text = NULL;
  gsize env_len = 0;
  CU_ASSERT_FATAL(g_file_get_contents(environ_file, &env_text, &env_len, NULL));
  /* (memmem: the file is NUL-separated strings) */
  CU_ASSERT_PTR_NULL(memmem(env_text, env_len, "alice-secret", 12));
  g_free(env_text);
  g_free(environ_file);
  proc_signal(p, SIGTERM);
  CU_ASSERT_EQUAL(proc_wait(p, EXIT_TIMEOUT), 0);
  proc_free(p);
  g_unsetenv("ZKR_AUTH");
  g_setenv("ZKR_AUTH_FILE", good, TRUE);
  const char *elect[] = {"--once", dir, "--", "true", NULL};
  CU_ASSERT_EQUAL(tool_run(ZKR_ELECT, elect, NULL), 0);
  g_unsetenv("ZKR_AUTH_FILE");
  CU_ASSERT_EQUAL(tool_run(ZKR_ELECT, elect, NULL), EXIT_NOPERM);
  zookeeper_close(zh);
  char *files[] = {good, wrong, malformed, missing};
  for (int i = 0; i < 4; i++) {
    (void)g_unlink(files[i]);
    g_free(files[i]);
  }
  g_free(dir);
}

/* ------------------------------------------------ held means held (#12) */

/* The partition tests' session timeout: the example. */
#define PART_SESSION_ARG "4000"
#define PART_TIMEOUT 30000 /* the successor runs, the holder is dead */

static int64_t realtime_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The last line of @p path as a number (0: none). */
static int64_t last_number(const char *path) {
  char *text = read_file(path);
  int64_t v = 0;
  char **lines = g_strsplit(text ? text : "", "\n", -1);
  for (int i = 0; lines[i]; i++)
    if (*lines[i])
      v = g_ascii_strtoll(lines[i], NULL, 10);
  g_strfreev(lines);
  g_free(text);
  return v;
}

static int file_has_line(void *arg) { return last_number(arg) > 0; }

/* "127.0.0.1:p1,127.0.0.1:p2": the members but the first, directly. */
static char *other_members(void) {
  zkrc_ensemble *e = zkt_ensemble();
  GString *s = g_string_new(NULL);
  for (int i = 1; i < zkrc_ensemble_size(e); i++)
    g_string_append_printf(s, "%s127.0.0.1:%d", i > 1 ? "," : "",
                           zkrc_ensemble_member_port(e, i));
  return g_string_free(s, FALSE);
}

/* Start @p tool with "-s HOSTS -t 4000 --server-tick 200", then @p args. */
static proc *start_on(const char *tool, const char *hosts,
                      const char *const *args) {
  const char *argv[32] = {tool,    "--servers",      hosts,
                          "-t",    PART_SESSION_ARG, "--server-tick",
                          TICK_ARG};
  int n = 7;
  for (int i = 0; args[i] && n < 31; i++)
    argv[n++] = args[i];
  argv[n] = NULL;
  return proc_start(argv);
}

/* Wait until the process with @p pidfd exits or @p start_file has a line,
 * both, or the deadline.  Returns when the first did (realtime ns, 0:
 * not seen). */
static int64_t wait_death_and_start(int pidfd, const char *start_file) {
  int64_t death = 0, deadline = zkt_now_ms() + PART_TIMEOUT;
  while (zkt_now_ms() < deadline) {
    if (death == 0) {
      struct pollfd pfd = {pidfd, POLLIN, 0};
      if (poll(&pfd, 1, 10) == 1)
        death = realtime_ns();
    } else if (file_has_line((void *)start_file)) {
      break;
    } else {
      struct pollfd none = {-1, 0, 0};
      poll(&none, 1, 10); /* the file has no event to wait on */
    }
  }
  return death;
}

/* The first example, for @p tool: a holder connected through
 * member 0's proxy runs a ticker that ignores SIGTERM (default grace: 5 s);
 * a contender connected to the other members waits; member 0's proxy is
 * black-holed.  The holder's command must be dead - last tick written,
 * process gone - before the contender's command starts; the holder exits
 * 75. */
static void partition_case(const char *tool, const char *holder_flag,
                           const char *waiter_flag) {
  zkrc_ensemble *e = zkt_ensemble();
  char *path = zkt_path("tools-part");
  char *ticks = tmp_file("ticks"), *start = tmp_file("start");
  char *others = other_members();
  zhandle_t *zh = zkt_raw_to(others);
  /* Deaf to SIGTERM (its children too): only the SIGKILL due before the
   * deadline ends it, whatever the grace period. */
  char *ticker = g_strdup_printf("trap '' TERM; echo pid=$$; while :; do "
                                 "date +%%s%%N >> '%s'; sleep 0.02; done",
                                 ticks);
  const char *hold[] = {holder_flag, path, "--", "sh", "-c", ticker, NULL};
  proc *a = start_on(tool, zkrc_ensemble_member_address(e, 0), hold);
  pid_t cmd = command_pid(a);
  CU_ASSERT_FATAL(cmd > 0);
  CU_ASSERT_FATAL(zkt_wait_for(file_has_line, ticks, START_TIMEOUT));
  char *starter = g_strdup_printf("date +%%s%%N > '%s'; echo pid=$$; "
                                  "exec sleep 60",
                                  start);
  const char *wait[] = {waiter_flag, "60", path,    "--",
                        "sh",        "-c", starter, NULL};
  proc *b = start_on(tool, others, waiter_flag ? wait : wait + 2);
  CU_ASSERT_FATAL(wait_children(zh, path, 2));
  int pidfd = (int)syscall(SYS_pidfd_open, cmd, 0);
  CU_ASSERT_FATAL(pidfd >= 0);

  int64_t cut = realtime_ns();
  CU_ASSERT_EQUAL_FATAL(zkrc_proxy_blackhole(e, 0, 60000), 0);
  int64_t death = wait_death_and_start(pidfd, start);
  close(pidfd);
  register_command(command_pid(b));
  int64_t started = last_number(start), last_tick = last_number(ticks);
  CU_ASSERT(death > 0);
  CU_ASSERT(started > 0);
  CU_ASSERT(last_tick > 0 && last_tick < started);
  CU_ASSERT(death > 0 && death < started);
  printf(" (%s: cut to death %.0f ms, last tick %.0f ms and death %.0f ms "
         "before the successor's start) ",
         strstr(tool, "zkr-"), (death - cut) / 1e6, (started - last_tick) / 1e6,
         (started - death) / 1e6);
  CU_ASSERT_EQUAL(proc_wait(a, PART_TIMEOUT), EXIT_LOST);
  CU_ASSERT_EQUAL(zkrc_proxy_blackhole(e, 0, 0), 0);
  cleanup_processes();
  zookeeper_close(zh);
  g_free(starter);
  g_free(ticker);
  g_free(others);
  g_free(start);
  g_free(ticks);
  g_free(path);
}

/* ------------------------------------------------------------- systemd */

/* systemd's side of sd_notify(3): a datagram socket of the test's own,
 * each message kept with when it came. */
typedef struct notified {
  int fd;
  char *path;
  GPtrArray *msgs; /* of char *, in order */
  GArray *at_ms;   /* when each came (zkt_now_ms) */
} notified;

/* A socket at a path, or with @p abstract in the abstract namespace
 * (NOTIFY_SOCKET "@name"); n->path is what NOTIFY_SOCKET says. */
static void notified_open(notified *n, int abstract) {
  n->path = abstract ? g_strdup_printf("@zkt-notify-%d", (int)getpid())
                     : tmp_file("notify");
  n->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  struct sockaddr_un sun = {.sun_family = AF_UNIX};
  CU_ASSERT_FATAL(n->fd >= 0 && strlen(n->path) < sizeof sun.sun_path);
  strcpy(sun.sun_path, n->path);
  socklen_t len = sizeof sun;
  if (abstract) {
    sun.sun_path[0] = '\0';
    len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(n->path));
  }
  CU_ASSERT_FATAL(bind(n->fd, (struct sockaddr *)&sun, len) == 0);
  n->msgs = g_ptr_array_new_with_free_func(g_free);
  n->at_ms = g_array_new(FALSE, FALSE, sizeof(int64_t));
}

static void notified_close(notified *n) {
  close(n->fd);
  if (n->path[0] == '/')
    g_unlink(n->path);
  g_free(n->path);
  g_ptr_array_unref(n->msgs);
  g_array_free(n->at_ms, TRUE);
}

/* Take what has come, waiting up to @p ms for the first. */
static void notified_read(notified *n, int ms) {
  struct pollfd p = {n->fd, POLLIN, 0};
  if (poll(&p, 1, ms) <= 0)
    return;
  char buf[2048];
  ssize_t len;
  while ((len = recv(n->fd, buf, sizeof buf - 1, 0)) > 0) {
    buf[len] = '\0';
    int64_t now = zkt_now_ms();
    g_ptr_array_add(n->msgs, g_strdup(buf));
    g_array_append_val(n->at_ms, now);
  }
}

/* The index of the first message from @p from on containing @p text,
 * waiting up to @p timeout_ms for it; -1 when none came. */
static int notified_wait(notified *n, int from, const char *text,
                         int timeout_ms) {
  int64_t deadline = zkt_now_ms() + timeout_ms;
  for (;;) {
    for (int i = from; i < (int)n->msgs->len; i++)
      if (strstr(g_ptr_array_index(n->msgs, i), text))
        return i;
    int64_t left = deadline - zkt_now_ms();
    if (left <= 0)
      return -1;
    notified_read(n, left > 100 ? 100 : (int)left);
  }
}

static int notified_count(const notified *n, int from, int to,
                          const char *text) {
  int count = 0;
  for (int i = from; i < to && i < (int)n->msgs->len; i++)
    count += strstr(g_ptr_array_index(n->msgs, i), text) != NULL;
  return count;
}

/* With NOTIFY_SOCKET (issue 32): zkr elect says READY=1 and STATUS=leading
 * once elected and running COMMAND, feeds the watchdog (WATCHDOG_USEC 200
 * ms: every 100 ms) while the session's lease is live, and never once it
 * is not: cut off from the servers (member 0's proxy black-holed), it says
 * leadership is lost, the watchdog is fed no more within the session
 * timeout of the cut, and not at all for the next second or more while
 * the cut lasts, so WatchdogSec= would restart it; it is fed again once
 * the servers are back.  COMMAND gets none of the variables.  With
 * --ready-on joined a standby says READY=1 without leading.  zkr lock
 * without COMMAND, through an abstract socket: READY=1 with its token
 * once held, the watchdog fed while it holds, STOPPING=1 on SIGTERM. */
static void test_systemd_notify(void) {
  cleanup_processes();
  zkrc_ensemble *e = zkt_ensemble();
  notified n;
  notified_open(&n, 0);
  g_setenv("NOTIFY_SOCKET", n.path, TRUE);
  g_setenv("WATCHDOG_USEC", "200000", TRUE);
  char *path = zkt_path("tools-systemd");
  const char *run[] = {"--id",
                       "sd",
                       path,
                       "--",
                       "sh",
                       "-c",
                       "echo pid=$$ notify=${NOTIFY_SOCKET:-none} "
                       "wd=${WATCHDOG_USEC:-none}; exec sleep 60",
                       NULL};
  proc *a = start_on(ZKR_ELECT, zkrc_ensemble_member_address(e, 0), run);
  g_unsetenv("NOTIFY_SOCKET");
  g_unsetenv("WATCHDOG_USEC");
  CU_ASSERT_FATAL(command_pid(a) > 0);
  char *notify = value_of(a->out->str, "notify", 0);
  char *wd = value_of(a->out->str, "wd", 0);
  CU_ASSERT_STRING_EQUAL(notify ? notify : "", "none");
  CU_ASSERT_STRING_EQUAL(wd ? wd : "", "none");
  g_free(notify);
  g_free(wd);
  int ready = notified_wait(&n, 0, "READY=1", START_TIMEOUT);
  CU_ASSERT_FATAL(ready >= 0);
  CU_ASSERT_PTR_NOT_NULL(
      strstr(g_ptr_array_index(n.msgs, ready), "STATUS=leading"));
  int64_t fed_from = zkt_now_ms();
  while (zkt_now_ms() < fed_from + 600)
    notified_read(&n, 50);
  int fed = notified_count(&n, ready, (int)n.msgs->len, "WATCHDOG=1");
  printf(" (%d WATCHDOG=1 in 0.6 s while leading) ", fed);
  CU_ASSERT(fed >= 3);

  int64_t cut_at = zkt_now_ms();
  CU_ASSERT_EQUAL_FATAL(zkrc_proxy_blackhole(e, 0, 60000), 0);
  int lost = notified_wait(&n, ready, "lost", PART_TIMEOUT);
  CU_ASSERT_FATAL(lost >= 0);
  /* Its lease ends by the session timeout (4 s) after the cut, the LOST
   * status somewhat before: watch 3 s past the status, still cut. */
  int64_t lost_at = g_array_index(n.at_ms, int64_t, lost);
  while (zkt_now_ms() < lost_at + 3000)
    notified_read(&n, 50);
  int after = (int)n.msgs->len;
  int64_t last_fed = cut_at;
  for (int i = 0; i < after; i++)
    if (strstr(g_ptr_array_index(n.msgs, i), "WATCHDOG=1"))
      last_fed = g_array_index(n.at_ms, int64_t, i);
  int64_t quiet = zkt_now_ms() - last_fed;
  printf(" (cut: last WATCHDOG=1 %lld ms after the cut, then none for "
         "%lld ms) ",
         (long long)(last_fed - cut_at), (long long)quiet);
  CU_ASSERT(last_fed - cut_at <= 4000); /* not past the session timeout */
  CU_ASSERT(quiet >= 1000);             /* WatchdogSec=1 would restart it */
  CU_ASSERT_EQUAL(zkrc_proxy_blackhole(e, 0, 0), 0);
  CU_ASSERT(notified_wait(&n, after, "WATCHDOG=1", PART_TIMEOUT) >= 0);
  proc_signal(a, SIGTERM);
  CU_ASSERT(notified_wait(&n, after, "STOPPING=1", EXIT_TIMEOUT) >= 0);
  CU_ASSERT(proc_wait(a, EXIT_TIMEOUT) >= 0);

  /* --ready-on joined: READY=1 once in line, a standby's too. */
  const char *lead[] = {path, "--", "sh", "-c", "echo pid=$$; exec sleep 60",
                        NULL};
  proc *leader = tool_start(ZKR_ELECT, lead);
  CU_ASSERT_FATAL(command_pid(leader) > 0);
  g_setenv("NOTIFY_SOCKET", n.path, TRUE);
  const char *standby_args[] = {"--ready-on", "joined", path,          "--",
                                "sh",         "-c",     "echo pid=$$", NULL};
  proc *standby = tool_start(ZKR_ELECT, standby_args);
  g_unsetenv("NOTIFY_SOCKET");
  int from = (int)n.msgs->len;
  ready = notified_wait(&n, from, "READY=1", START_TIMEOUT);
  CU_ASSERT_FATAL(ready >= 0);
  CU_ASSERT_PTR_NOT_NULL(
      strstr(g_ptr_array_index(n.msgs, ready), "STATUS=joined"));
  proc_pump(standby, 200);
  CU_ASSERT_PTR_NULL(strstr(standby->out->str, "pid=")); /* not leading */
  proc_signal(standby, SIGTERM);
  proc_wait(standby, EXIT_TIMEOUT);
  proc_signal(leader, SIGTERM);
  proc_wait(leader, EXIT_TIMEOUT);

  /* zkr lock, holding without COMMAND, told through an abstract socket:
   * READY=1 with its token once held, the watchdog fed while it holds,
   * STOPPING=1 on SIGTERM. */
  notified m;
  notified_open(&m, 1);
  g_setenv("NOTIFY_SOCKET", m.path, TRUE);
  g_setenv("WATCHDOG_USEC", "200000", TRUE);
  const char *hold[] = {path, NULL};
  proc *l = tool_start_as(ZKR, "lock", hold);
  g_unsetenv("NOTIFY_SOCKET");
  g_unsetenv("WATCHDOG_USEC");
  ready = notified_wait(&m, 0, "READY=1", START_TIMEOUT);
  CU_ASSERT_FATAL(ready >= 0);
  proc_pump(l, 1000);
  char *line = g_strdup(l->out->str);
  char *tab = strchr(line, '\t');
  char *want = g_strdup_printf("STATUS=holding %s (fencing token %s", path,
                               tab ? g_strstrip(tab + 1) : "?");
  CU_ASSERT_PTR_NOT_NULL(strstr(g_ptr_array_index(m.msgs, ready), want));
  int64_t held_from = zkt_now_ms();
  while (zkt_now_ms() < held_from + 600)
    notified_read(&m, 50);
  CU_ASSERT(notified_count(&m, ready, (int)m.msgs->len, "WATCHDOG=1") >= 3);
  proc_signal(l, SIGTERM);
  CU_ASSERT(notified_wait(&m, ready, "STOPPING=1", EXIT_TIMEOUT) >= 0);
  CU_ASSERT_EQUAL(proc_wait(l, EXIT_TIMEOUT), 0);
  notified_close(&m);
  g_free(want);
  g_free(line);
  cleanup_processes();
  notified_close(&n);
  g_free(path);
}

static void test_partition_lock(void) {
  cleanup_processes();
  partition_case(ZKR_LOCK, "-v", "-w");
}

static void test_partition_elect(void) {
  cleanup_processes();
  partition_case(ZKR_ELECT, "--once", NULL);
}

/* The tool itself is SIGKILLed: its command's whole process group dies,
 * a background grandchild included, and the guardian with it. */
static void test_tool_killed_group_dies(void) {
  cleanup_processes();
  const char *tools[] = {ZKR_LOCK, ZKR_ELECT};
  for (int i = 0; i < 2; i++) {
    char *path = zkt_path("tools-guard");
    const char *args[] = {path,
                          "--",
                          "sh",
                          "-c",
                          "trap '' TERM; sleep 4711 & echo pid=$$ bg=$!; wait",
                          NULL};
    proc *a = tool_start(tools[i], args);
    pid_t cmd = command_pid(a);
    char *bg_text = wait_value(a, "bg", 0, START_TIMEOUT);
    pid_t bg = bg_text ? (pid_t)atoi(bg_text) : 0;
    g_free(bg_text);
    register_command(bg);
    CU_ASSERT_FATAL(cmd > 0 && bg > 0);
    proc_kill(a);
    CU_ASSERT_TRUE(zkt_wait_for(process_gone, (void *)(intptr_t)bg, 5000));
    CU_ASSERT_TRUE(zkt_wait_for(group_gone, (void *)(intptr_t)cmd, 5000));
    cleanup_processes();
    g_free(path);
  }
}

/* /proc/PID/stat's state letter ('?' when gone). */
static char process_state(pid_t pid) {
  char file[64], state = '?';
  snprintf(file, sizeof file, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(file, "r");
  if (f == NULL)
    return '?';
  if (fscanf(f, "%*d (%*[^)]) %c", &state) != 1)
    state = '?';
  fclose(f);
  return state;
}

static int is_stopped(void *arg) {
  return process_state((pid_t)(intptr_t)arg) == 'T';
}
static int is_running(void *arg) {
  char st = process_state((pid_t)(intptr_t)arg);
  return st != 'T' && st != '?';
}

/* ^Z to the tool stops it and its command @p cmd; SIGCONT continues the
 * command. */
static void stop_then_continue(proc *a, pid_t cmd) {
  void *cmd_arg = (void *)(intptr_t)cmd,
       *tool_arg = (void *)(intptr_t)a->child.pid;
  proc_signal(a, SIGTSTP);
  CU_ASSERT_TRUE(zkt_wait_for(is_stopped, cmd_arg, 5000));
  CU_ASSERT_TRUE(zkt_wait_for(is_stopped, tool_arg, 5000));
  proc_signal(a, SIGCONT);
  CU_ASSERT_TRUE(zkt_wait_for(is_running, cmd_arg, 5000));
}

/* ^Z (SIGTSTP) stops the command's group and zkr-lock; SIGCONT continues
 * both.  Stopped past the lease (the servers expired the session
 * meanwhile), the command is not continued but killed: status 75. */
static void test_lock_stop_continue(void) {
  cleanup_processes();
  char *path = zkt_path("tools-tstp");
  char *ticks = tmp_file("ticks"), *fifo = tmp_file("fifo");
  CU_ASSERT_FATAL(mkfifo(fifo, 0600) == 0);
  zhandle_t *zh = zkt_raw();
  /* One process that never forks (a shell waiting for a vfork'ed child
   * that got stopped would show 'D', not 'T'): bash's builtins only. */
  char *script = g_strdup_printf(
      "echo pid=$$; exec 3<>'%s'; while :; do "
      "echo ${EPOCHREALTIME/./} >> '%s'; read -t 0.02 -u 3; done",
      fifo, ticks);
  const char *args[] = {"-v", path, "--", "bash", "-c", script, NULL};
  proc *a = tool_start(ZKR_LOCK, args);
  pid_t cmd = command_pid(a);
  CU_ASSERT_FATAL(cmd > 0);
  void *cmd_arg = (void *)(intptr_t)cmd,
       *tool_arg = (void *)(intptr_t)a->child.pid;
  stop_then_continue(a, cmd);

  proc_signal(a, SIGTSTP);
  CU_ASSERT_TRUE(zkt_wait_for(is_stopped, cmd_arg, 5000));
  CU_ASSERT_TRUE(zkt_wait_for(is_stopped, tool_arg, 5000));
  int64_t frozen_tick = last_number(ticks);
  CU_ASSERT(wait_children(zh, path, 0)); /* the servers expired it */
  proc_signal(a, SIGCONT);
  CU_ASSERT_EQUAL(proc_wait(a, EXIT_TIMEOUT), EXIT_LOST);
  CU_ASSERT_TRUE(zkt_wait_for(group_gone, cmd_arg, 5000));
  CU_ASSERT_EQUAL(last_number(ticks), frozen_tick); /* not one more tick */
  cleanup_processes();
  zookeeper_close(zh);
  g_free(script);
  g_unlink(fifo);
  g_free(fifo);
  g_free(ticks);
  g_free(path);
}

/* A COMMAND that ignores SIGTSTP is stopped all the same by ^Z: nothing
 * keeps it within the lease while zkr-lock is stopped.  SIGCONT continues
 * it. */
static void test_lock_stop_ignored_tstp(void) {
  cleanup_processes();
  char *path = zkt_path("tools-tstp-ignored");
  char *fifo = tmp_file("fifo");
  CU_ASSERT_FATAL(mkfifo(fifo, 0600) == 0);
  char *script =
      g_strdup_printf("trap '' TSTP; echo pid=$$; exec 3<>'%s'; while :; do "
                      "read -t 0.02 -u 3; done",
                      fifo);
  const char *args[] = {"-v", path, "--", "bash", "-c", script, NULL};
  proc *a = tool_start(ZKR_LOCK, args);
  pid_t cmd = command_pid(a);
  CU_ASSERT_FATAL(cmd > 0);
  stop_then_continue(a, cmd);
  proc_signal(a, SIGTERM); /* forwarded: bash ends, zkr-lock with it */
  CU_ASSERT(proc_wait(a, EXIT_TIMEOUT) >= 0);
  cleanup_processes();
  g_free(script);
  g_unlink(fifo);
  g_free(fifo);
  g_free(path);
}

/* -n when the servers do not answer in time is never "busy", whatever -E
 * says.  Every packet through the proxy is delayed 700 ms each way: the
 * handshake fits the session timeout, but the lease's renewals do not.
 * When the lease runs out before the acquisition's round trips are done,
 * that is 69 (an ETIMEDOUT, which the lease pre-empts, is mapped to 69 as
 * well); a fresh lock's directory needs one round trip only, so the lock
 * may be held first and then lost before COMMAND starts: 75. */
static void test_lock_nonblock_no_answer(void) {
  cleanup_processes();
  zkrc_ensemble *e = zkt_ensemble();
  for (int i = 0; i < 2; i++) {
    char *path = zkt_path("tools-slow");
    const char *plain[] = {"-n", path, "--", "true", NULL};
    const char *quiet[] = {"-n", "-E", "0", path, "--", "true", NULL};
    const char *const *args = i == 0 ? plain : quiet;
    CU_ASSERT_EQUAL_FATAL(zkrc_proxy_delay(e, 0, 700), 0);
    proc *p = start_on(ZKR_LOCK, zkrc_ensemble_member_address(e, 0), args);
    int status = proc_wait(p, EXIT_TIMEOUT);
    zkrc_proxy_delay(e, 0, 0);
    if (status != EXIT_UNAVAILABLE)
      fprintf(stderr, "\n-n, no answer: status %d; stderr:\n%s\n", status,
              p->err->str);
    CU_ASSERT(status == EXIT_UNAVAILABLE || status == EXIT_LOST);
    proc_free(p);
    g_free(path);
  }
}

/* A directory whose ACL allows create but not read: zkr-lock and zkr-elect
 * exit 77 (EX_NOPERM; not a wait without end). */
static void test_no_read_permission(void) {
  cleanup_processes();
  zhandle_t *zh = zkt_raw();
  const char *tools[] = {ZKR_LOCK, ZKR_ELECT};
  for (int i = 0; i < 2; i++) {
    char *path = zkt_path("tools-noread");
    zkt_make_path(zh, "/zkt");
    struct Id anyone = {"world", "anyone"};
    struct ACL only_create = {ZOO_PERM_CREATE | ZOO_PERM_DELETE, anyone};
    struct ACL_vector acl = {1, &only_create};
    CU_ASSERT_EQUAL_FATAL(zoo_create(zh, path, "", 0, &acl, 0, NULL, 0), ZOK);
    const char *args[] = {path, "--", "true", NULL};
    proc *p;
    CU_ASSERT_EQUAL(tool_run(tools[i], args, &p), EXIT_NOPERM);
    proc_free(p);
    g_free(path);
  }
  zookeeper_close(zh);
}

/* zkr-elect passed a SIGTERM on to a command that ignores it; leadership
 * is then lost (session expired): the command is still stopped (SIGKILL
 * after the grace period) and zkr-elect exits. */
static void test_elect_lost_after_stop_signal(void) {
  cleanup_processes();
  char *path = zkt_path("tools-equit");
  const char *script = "trap 'echo got-term' TERM; echo pid=$$; "
                       "while :; do sleep 0.1; done";
  const char *args[] = {"-v", "-g", "0.5",  path, "--",
                        "sh", "-c", script, NULL};
  proc *a = tool_start(ZKR_ELECT, args);
  pid_t cmd = command_pid(a);
  CU_ASSERT_FATAL(cmd > 0);
  clientid_t id;
  CU_ASSERT_FATAL(session_of(a, &id));
  proc_signal(a, SIGTERM);
  CU_ASSERT_TRUE(proc_wait_text(a, 0, "got-term", EXIT_TIMEOUT));
  CU_ASSERT_EQUAL_FATAL(
      zkrc_ensemble_expire_session(zkt_ensemble(), &id, 10000), 0);
  CU_ASSERT_EQUAL(proc_wait(a, EXIT_TIMEOUT), 128 + SIGKILL);
  CU_ASSERT_PTR_NOT_NULL(strstr(a->err->str, "lost"));
  CU_ASSERT_TRUE(zkt_wait_for(process_gone, (void *)(intptr_t)cmd, 3000));
  cleanup_processes();
  g_free(path);
}

static void add_suites(void) {
  atexit(cleanup_at_exit); /* runs before the ensemble is stopped */
  ZKT_SUITE("zkr-lock", {"exclusion", test_lock_exclusion},
            {"conflict", test_lock_conflict},
            {"environment", test_lock_environment},
            {"several paths", test_lock_several_paths},
            {"shared and exclusive", test_lock_shared_exclusive},
            {"limit", test_lock_limit},
            {"limit several paths", test_lock_limit_several_paths},
            {"hold without a command", test_lock_hold_without_command},
            {"holder_killed", test_lock_holder_killed},
            {"lost", test_lock_lost}, {"lost_grace", test_lock_lost_grace},
            {"signals_and_status", test_lock_signals_and_status},
            {"json answers", test_json_answers}, {"health", test_health});
  ZKT_SUITE(
      "zkr-elect", {"failover", test_elect_failover}, {"lost", test_elect_lost},
      {"command_exits", test_elect_command_exits}, {"watch", test_elect_watch});
  ZKT_SUITE(
      "held means held", {"partition_lock", test_partition_lock},
      {"systemd_notify", test_systemd_notify},
      {"partition_elect", test_partition_elect},
      {"tool_killed_group_dies", test_tool_killed_group_dies},
      {"lock_stop_continue", test_lock_stop_continue},
      {"lock_stop_ignored_tstp", test_lock_stop_ignored_tstp},
      {"lock_nonblock_no_answer", test_lock_nonblock_no_answer},
      {"no_read_permission", test_no_read_permission},
      {"elect_lost_after_stop_signal", test_elect_lost_after_stop_signal});
  ZKT_SUITE("usage", {"usage_and_paths", test_usage_and_paths},
            {"changed letters", test_changed_letters}, {"auth", test_auth},
            {"unreachable_help_env", test_unreachable_help_env});
}

int main(void) {
  zkt_configure(3, 1); /* partitions need a quorum without member 0 */
  return zkt_run("test_tools", add_suites);
}
