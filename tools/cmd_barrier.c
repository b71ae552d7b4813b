/*
 * zkr barrier and zkr double-barrier - the barriers of zkrecipes/barrier.h
 * from the shell.  See help_head, `zkr barrier --help', `zkr
 * double-barrier --help' or zkr(1).
 *
 * zkr barrier wait blocks in zkrc_barrier_wait() on a short-lived thread
 * while the main thread's poll loop answers signals (as zkr lock does).
 * zkr double-barrier enters with a zkrc_double_barrier, whose events come
 * to the loop; once ENTERED it runs COMMAND, stopped like zkr lock's when
 * the member is LOST, and leaves when COMMAND exits.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "cli.h"
#include "commands.h"
#include "tool.h"

static const char barrier_head[] =
    "Usage: zkr barrier [OPTIONS] wait|set|remove PATH\n"
    "       zkr barrier --help | --version\n"
    "\n"
    "The barrier PATH (Apache Curator's DistributedBarrier, kazoo's "
    "Barrier):\n"
    "while the node PATH exists, whoever waits on it waits.  set creates it\n"
    "(and its missing parents, as containers), remove deletes it, wait\n"
    "returns once it is gone (at once when it is not set).\n";

static const char barrier_tail[] =
    "\n"
    "Environment:\n" TOOL_ENVIRONMENT_HELP "                   auth file\n"
    "\n"
    "Exit status:\n"
    "  0    done: set, removed, or gone\n"
    "  1    wait: still set after -w; remove: it was not set\n"
    "  2    bad usage\n"
    "  65   invalid PATH\n"
    "  68, 69, 76, 77  as zkr lock: no server, ZooKeeper failed, refused\n"
    "  128+N  interrupted by signal N while waiting\n";

static const char double_head[] =
    "Usage: zkr double-barrier [OPTIONS] PATH N [--] COMMAND [ARG...]\n"
    "       zkr double-barrier [OPTIONS] -c STRING PATH N\n"
    "       zkr double-barrier --help | --version\n"
    "\n"
    "Coordinate N machines for a job: enter the double barrier PATH (Apache\n"
    "Curator's DistributedDoubleBarrier, or kazoo's DoubleBarrier with\n"
    "--format kazoo) as one of N members, start COMMAND once N are in,\n"
    "leave when it exits and wait until every member left; exit with\n"
    "COMMAND's status.  Options go before N (after it they are COMMAND's).\n"
    "\n"
    "If this member's node is lost while COMMAND runs (the ZooKeeper session\n"
    "expired or its lease ran out), COMMAND gets the lost signal (SIGTERM),\n"
    "then SIGKILL after the grace period, by the lease's deadline, and zkr\n"
    "double-barrier exits with status 75.  Signals are passed on to COMMAND\n"
    "as zkr lock does; before it runs, SIGINT, SIGTERM, SIGHUP and SIGQUIT\n"
    "give up (status 128+N).\n";

static const char double_tail[] =
    "\n"
    "Environment:\n" TOOL_ENVIRONMENT_HELP
    "                   auth file (taken out of COMMAND's environment)\n"
    "COMMAND also gets:\n"
    "  ZKR_PATH            PATH\n"
    "  ZKR_NODE            our member node's name under PATH\n"
    "  ZKR_MEMBERS         N\n"
    "\n"
    "Exit status:\n"
    "  COMMAND's status, or 128+N when it was killed by signal N\n"
    "  1    not N members within -w\n"
    "  2    bad usage\n"
    "  65   invalid PATH\n"
    "  68, 69, 76, 77  as zkr lock: no server, ZooKeeper failed, refused\n"
    "  75   this member was lost while COMMAND ran, or before it started\n"
    "  126  COMMAND could not be run; 127 COMMAND was not found\n"
    "  128+N  interrupted by signal N while entering or leaving\n";

static const cli_spec barrier_spec = {CLI_BARRIER, "barrier", CLI_PATHS,
                                      barrier_head, barrier_tail};
static const cli_spec double_spec = {CLI_DOUBLE_BARRIER, "double-barrier",
                                     CLI_PATH_COMMAND, double_head,
                                     double_tail};

typedef struct barrier_cli {
  tool_options o;
  int wait_ms; /* ZKRC_WAIT_FOREVER, ZKRC_NO_WAIT or ms */
  zkrc_barrier_dialect dialect;
  const char *shell_command;
} barrier_cli;

static void barrier_option(int id, const char *value, void *ctx) {
  barrier_cli *cli = ctx;
  switch (id) {
  case 'w':
    cli->wait_ms = tool_parse_seconds(value, "--wait");
    break;
  case 'c':
    cli->shell_command = value;
    break;
  case OPT_FORMAT:
    if (strcmp(value, "curator") == 0)
      cli->dialect = ZKRC_BARRIER_CURATOR;
    else if (strcmp(value, "kazoo") == 0)
      cli->dialect = ZKRC_BARRIER_KAZOO;
    else
      tool_usage_error("--format is curator or kazoo, not '%s'", value);
    break;
  }
}

static void check_path(const char *path) {
  const char *why = NULL;
  if (zkrc_path_validate(path, &why) == ZKRC_OK && strcmp(path, "/") != 0)
    return;
  tool_error("invalid path '%s': %s", path, why ? why : "not a barrier's");
  exit(TOOL_EXIT_BAD_PATH);
}

/* ------------------------------------------------------ zkr barrier */

typedef struct waiter {
  zkrc_session *s;
  const char *path;
  int wait_ms;
} waiter;

static gpointer wait_main(gpointer data) {
  waiter *w = data;
  tool_event ev = {.kind = TOOL_EV_ACQUIRED,
                   .code = zkrc_barrier_wait(w->s, w->path, w->wait_ms)};
  tool_post_event(&ev);
  return NULL;
}

/* Wait on a thread while answering signals: 0, 1 (still set) or the
 * exit status. */
static int barrier_wait(barrier_cli *cli, zkrc_session *s, const char *path) {
  waiter w = {s, path, cli->wait_ms};
  GThread *thread = g_thread_new("zkr-barrier-wait", wait_main, &w);
  int status = -1;
  while (status < 0) {
    tool_wait(-1);
    int sig = tool_stop_signal_caught();
    if (sig) {
      zkrc_session_close(s); /* the wait returns ZKRC_ECLOSED */
      g_thread_join(thread);
      return sig;
    }
    tool_event ev;
    while (status < 0 && tool_next_event(&ev)) {
      if (ev.kind == TOOL_EV_ACQUIRED)
        status = ev.code == ZKRC_OK          ? TOOL_EXIT_OK
                 : ev.code == ZKRC_ETIMEDOUT ? TOOL_EXIT_NOT_ACQUIRED
                                             : tool_fail("wait", ev.code);
      tool_event_clear(&ev);
    }
  }
  g_thread_join(thread);
  zkrc_session_close(s);
  return status;
}

int cmd_barrier(const char *program, int argc, char **argv) {
  barrier_cli cli = {.wait_ms = ZKRC_WAIT_FOREVER};
  cli_args args;
  cli_parse(&barrier_spec, program, &cli.o, argc, argv, barrier_option, &cli,
            &args);
  if (args.n_paths != 2) {
    g_free(args.paths);
    tool_usage_error("give wait, set or remove, and PATH");
  }
  const char *verb = args.paths[0], *path = args.paths[1];
  g_free(args.paths);
  if (strcmp(verb, "wait") != 0 && strcmp(verb, "set") != 0 &&
      strcmp(verb, "remove") != 0)
    tool_usage_error("unknown action '%s': wait, set or remove", verb);
  check_path(path);
  zkrc_session *s;
  int status = tool_start_session(&cli.o, 1, &s);
  if (status != 0)
    return status;
  if (strcmp(verb, "wait") == 0)
    return barrier_wait(&cli, s, path);
  int timeout = cli.o.connect_timeout_ms > 0 ? cli.o.connect_timeout_ms : 5000;
  int err = strcmp(verb, "set") == 0 ? zkrc_barrier_set(s, path, timeout)
                                     : zkrc_barrier_remove(s, path, timeout);
  zkrc_session_close(s);
  if (err == ZKRC_ENONODE) {
    tool_verbose("%s was not set", path);
    return TOOL_EXIT_NOT_ACQUIRED;
  }
  return err == ZKRC_OK ? TOOL_EXIT_OK : tool_fail(verb, err);
}

/* ----------------------------------------------- zkr double-barrier */

static void on_member(zkrc_double_barrier *b,
                      const zkrc_double_barrier_event *ev, void *arg) {
  (void)b;
  (void)arg;
  tool_event e = {
      .kind = TOOL_EV_BARRIER, .code = (int)ev->type, .reason = ev->reason};
  tool_post_event(&e);
}

/* Wait for event @p want (or a LOST, a CLOSED, a stop signal, the
 * deadline); signals for a running @p child are passed on.  0 when it
 * came; else the exit status. */
static int await(barrier_cli *cli, zkrc_double_barrier_event_type want,
                 int64_t deadline) {
  for (;;) {
    tool_wait(tool_ms_until(deadline, -1));
    int sig = tool_stop_signal_caught();
    if (sig)
      return sig;
    tool_event ev;
    while (tool_next_event(&ev)) {
      int code = ev.kind == TOOL_EV_BARRIER ? ev.code : 0, why = ev.reason;
      tool_event_clear(&ev);
      if (code == (int)want)
        return 0;
      if (code == ZKRC_DOUBLE_BARRIER_LOST) {
        tool_error("member of %s lost (%s)", "the barrier", zkrc_strerror(why));
        return TOOL_EXIT_LOST;
      }
      if (code == ZKRC_DOUBLE_BARRIER_CLOSED)
        return tool_fail("the session ended", why);
    }
    if (deadline >= 0 && tool_now_ms() >= deadline)
      return TOOL_EXIT_NOT_ACQUIRED;
    (void)cli;
  }
}

/* Run COMMAND while the member is in; 75 when it was lost meanwhile. */
static int run_inside(barrier_cli *cli, zkrc_session *s, zkrc_double_barrier *b,
                      char **command, int n) {
  GPtrArray *env = g_ptr_array_new();
  char number[16];
  snprintf(number, sizeof number, "%d", n);
  tool_env_add(env, "ZKR_PATH", NULL, zkrc_double_barrier_path(b));
  tool_env_add(env, "ZKR_NODE", NULL, zkrc_double_barrier_node(b));
  tool_env_add(env, "ZKR_MEMBERS", NULL, number);
  g_ptr_array_add(env, NULL);
  tool_child child = {0};
  int status = tool_child_start(&child, command, (char **)env->pdata, &cli->o);
  g_ptr_array_free(env, TRUE);
  if (status != 0)
    return status;
  int lost = 0;
  while (!tool_child_poll(&child)) {
    int remaining = lost ? 0 : zkrc_session_lease_remaining(s);
    int timeout =
        tool_child_lease(&child, remaining, zkrc_session_lease_floor(s),
                         &cli->o, tool_child_timeout(&child, -1));
    tool_wait(timeout);
    tool_signal sig;
    while (tool_next_signal(&sig))
      tool_child_forward(&child, &sig, &cli->o, !lost);
    tool_event ev;
    while (tool_next_event(&ev)) {
      if (ev.kind == TOOL_EV_BARRIER && !lost &&
          (ev.code == ZKRC_DOUBLE_BARRIER_LOST ||
           ev.code == ZKRC_DOUBLE_BARRIER_CLOSED)) {
        lost = 1;
        tool_error("member of %s lost (%s): stopping COMMAND",
                   zkrc_double_barrier_path(b), zkrc_strerror(ev.reason));
        tool_child_stop(&child, cli->o.lost_signal, cli->o.grace_ms);
      }
      tool_event_clear(&ev);
    }
    lost |= child.lease_ran_out;
  }
  tool_child_end(&child, lost);
  return lost ? TOOL_EXIT_LOST : child.status;
}

static int enter_run_leave(barrier_cli *cli, zkrc_session *s, const char *path,
                           int n, char **command) {
  zkrc_double_barrier_options opts;
  zkrc_double_barrier_options_init(&opts);
  opts.dialect = cli->dialect;
  opts.id = cli->o.id;
  opts.on_event = on_member;
  zkrc_double_barrier *b;
  int err = zkrc_double_barrier_new(&b, s, path, n, &opts);
  if (err != ZKRC_OK)
    return tool_fail("cannot enter the barrier", err);
  int64_t deadline =
      cli->wait_ms == ZKRC_WAIT_FOREVER ? -1 : tool_now_ms() + cli->wait_ms;
  int status = await(cli, ZKRC_DOUBLE_BARRIER_ENTERED, deadline);
  if (status == TOOL_EXIT_NOT_ACQUIRED)
    tool_verbose("fewer than %d members in %s within -w", n, path);
  if (status == 0) {
    tool_verbose("entered %s as %s", path, zkrc_double_barrier_node(b));
    status = run_inside(cli, s, b, command, n);
    if (status != TOOL_EXIT_LOST) {
      int left = zkrc_double_barrier_leave(b, ZKRC_NO_WAIT);
      if (left == ZKRC_ETIMEDOUT)
        left = await(cli, ZKRC_DOUBLE_BARRIER_LEFT, -1);
      else if (left != ZKRC_OK)
        left = tool_fail("cannot leave the barrier", left);
      if (left != 0)
        status = left;
    }
  }
  zkrc_double_barrier_free(b);
  return status;
}

int cmd_double_barrier(const char *program, int argc, char **argv) {
  barrier_cli cli = {.wait_ms = ZKRC_WAIT_FOREVER,
                     .dialect = ZKRC_BARRIER_CURATOR};
  cli_args args;
  cli_parse(&double_spec, program, &cli.o, argc, argv, barrier_option, &cli,
            &args);
  /* With -c the words are PATH N; else N is COMMAND's first word. */
  int want = cli.shell_command ? 2 : 1;
  if (args.n_paths != want || (!cli.shell_command && args.command == NULL)) {
    g_free(args.paths);
    tool_usage_error("give PATH, N and COMMAND");
  }
  const char *path = args.paths[0];
  const char *count = cli.shell_command ? args.paths[1] : args.command[0];
  g_free(args.paths);
  int n = tool_parse_int(count, 1, INT_MAX, "N");
  char **command = NULL;
  if (cli.shell_command) {
    command = tool_shell_command(cli.shell_command);
  } else {
    command = args.command + 1;
    if (command[0] && strcmp(command[0], "--") == 0)
      command++;
  }
  if (command == NULL || command[0] == NULL)
    tool_usage_error("missing COMMAND");
  check_path(path);
  zkrc_session *s;
  int status = tool_start_session(&cli.o, 1, &s);
  if (status == 0) {
    status = enter_run_leave(&cli, s, path, n, command);
    zkrc_session_close(s);
  }
  if (cli.shell_command)
    g_free(command);
  return status;
}
