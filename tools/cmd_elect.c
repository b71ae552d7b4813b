/*
 * zkr elect (zkr elect) - run a command on whichever host is the elected
 * leader (zkrecipes election, the protocol of Apache Curator's
 * LeaderLatch).  See help_head, `zkr elect --help' or zkr elect(1).
 *
 * The main thread's poll loop does everything: the election's callbacks
 * only queue "elected"/"revoked" for it (tool.h).  The loop keeps one
 * picture - do we lead, with which token; does COMMAND run; is it being
 * stopped; are we paused before rejoining - and after every wake-up starts
 * or stops COMMAND to match it.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "cli.h"
#include "commands.h"
#include "queries.h"
#include "tool.h"

static const char help_head[] =
    "Usage: zkr elect [OPTIONS] ELECTIONPATH [--] COMMAND [ARG...]\n"
    "       zkr elect [OPTIONS] ELECTIONPATH -c STRING\n"
    "       zkr elect [OPTIONS] --leader ELECTIONPATH\n"
    "       zkr elect [OPTIONS] --watch ELECTIONPATH\n"
    "       zkr elect [OPTIONS] --holders ELECTIONPATH\n"
    "       zkr elect --help | --version\n"
    "(zkr-elect is the same program.)\n"
    "\n"
    "Join the leader election ELECTIONPATH (zkrecipes; the protocol of Apache\n"
    "Curator's LeaderLatch) and run COMMAND whenever this participant leads.\n"
    "\n"
    "When leadership is lost while COMMAND runs (the ZooKeeper session "
    "expired\n"
    "or its lease ran out, or our node was deleted), COMMAND gets the lost\n"
    "signal (SIGTERM), then SIGKILL after the grace period; zkr elect then\n"
    "waits to be elected again (it rejoins by itself) and runs COMMAND anew,\n"
    "or with --once exits with status 75.  COMMAND is dead by the lease's\n"
    "deadline, before anyone else can be elected: SIGKILL 50 ms before it,\n"
    "the lost signal so that the grace period (shortened to fit below the\n"
    "lease floor) ends then.  Time zkr elect spends stopped counts against\n"
    "the lease.  When the election fails for good (not authorized, ...),\n"
    "zkr elect exits with status 76.\n"
    "\n"
    "When COMMAND exits by itself while leading, zkr elect steps down: it\n"
    "leaves the election so that another participant takes over, rejoins "
    "after\n"
    "the rejoin delay, and runs COMMAND again when elected again (a service\n"
    "that fails moves to another host; alone, it is restarted after the\n"
    "delay).  With --once it leaves and exits with COMMAND's status instead.\n"
    "\n"
    "SIGINT, SIGTERM, SIGHUP and SIGQUIT stop zkr elect: they are passed on "
    "to\n"
    "a running COMMAND, and once it has exited zkr elect leaves the election\n"
    "(the next participant is elected at once) and exits with COMMAND's\n"
    "status; with no COMMAND running it exits with 128+N.  After SIGTERM\n"
    "(how supervisors stop a service) a clean step-down exits 0 instead.\n"
    "SIGUSR1, SIGUSR2,\n"
    "SIGTSTP (then zkr elect stops too) and SIGCONT are passed on to\n"
    "COMMAND.  COMMAND runs in a process group of its own unless\n"
    "--foreground; should zkr elect die, COMMAND gets the lost signal and a\n"
    "guardian process SIGKILLs its whole process group.\n"
    "\n"
    "With --watch, print \"TIME<TAB>ID<TAB>TOKEN\" (UTC; the leader's id and\n"
    "fencing token, both empty when nobody leads) now and again at each\n"
    "change of leader, one line each, until interrupted (then status 0).\n"
    "Changes closer together than a round trip to ZooKeeper may show as\n"
    "one.  --leader and --holders print once; --holders prints nothing\n"
    "when there are no participants.\n";

static const char help_tail[] =
    "\n"
    "Environment:\n" TOOL_ENVIRONMENT_HELP
    "                   auth file (taken out of COMMAND's environment)\n"
    "COMMAND also gets:\n"
    "  ZKR_PATH            ELECTIONPATH\n"
    "  ZKR_NODE            full path of our election node\n"
    "  ZKR_FENCING_TOKEN   the fencing token of this leadership: the node's\n"
    "                      czxid, in decimal; larger for every later leader\n"
    "  ZKR_PARTICIPANT_ID  our participant id\n"
    "  (and, until 0.3, ZKR_ELECTION_PATH, ZKR_ELECTION_NODE and\n"
    "  ZKR_LEADER_TOKEN: the same values)\n"
    "\n"
    "Exit status:\n"
    "  0    stopped by SIGTERM, having stepped down cleanly (COMMAND ended\n"
    "       with 0 or by that SIGTERM, or was not running)\n"
    "  COMMAND's status (128+N when killed by signal N) after another stop\n"
    "  signal, or with --once\n"
    "  2    bad usage\n"
    "  3    --leader: there is no leader\n"
    "  65   invalid ELECTIONPATH\n"
    "  68   a server's name does not resolve\n"
    "  69   every server refused (said at once), none answered within the\n"
    "       connect timeout, or the server list's chroot does not exist\n"
    "  71   a system call failed (fork, pipe, ...)\n"
    "  74   writing standard output failed (--leader, --watch)\n"
    "  75   --once: leadership was lost while COMMAND ran\n"
    "  76   ZooKeeper refused or failed; the election failed for good\n"
    "  77   credentials refused, or an ACL forbids what was needed\n"
    "  126  COMMAND could not be run; 127 COMMAND was not found\n"
    "  128+N  stopped by signal N (not SIGTERM) while COMMAND was not\n"
    "       running\n";

static const cli_spec elect_spec = {CLI_ELECT, "elect", CLI_PATH_COMMAND,
                                    help_head, help_tail};

typedef struct elect_cli {
  tool_options o;
  int once;
  int leader_query;
  int watch;
  int holders;
  int json;            /* --json, for --leader, --holders, --watch */
  int ready_on_joined; /* --ready-on joined */
  int rejoin_delay_ms;
  const char *path;
  char **command;
  const char *shell_command; /* -c STRING */
  char *id;
} elect_cli;

static void elect_option(int id, const char *value, void *ctx) {
  elect_cli *cli = ctx;
  switch (id) {
  case OPT_ONCE:
    cli->once = 1;
    break;
  case OPT_LEADER:
    cli->leader_query = 1;
    break;
  case OPT_WATCH:
    cli->watch = 1;
    break;
  case OPT_HOLDERS:
    cli->holders = 1;
    break;
  case OPT_JSON:
    cli->json = 1;
    break;
  case OPT_READY_ON:
    if (strcmp(value, "joined") != 0 && strcmp(value, "elected") != 0)
      tool_usage_error("--ready-on is \"elected\" or \"joined\": %s", value);
    cli->ready_on_joined = strcmp(value, "joined") == 0;
    break;
  case OPT_REJOIN_DELAY:
    cli->rejoin_delay_ms = tool_parse_seconds(value, "--rejoin-delay");
    break;
  case 'c':
    cli->shell_command = value;
    break;
  }
}

static void parse_args(elect_cli *cli, const char *program, int argc,
                       char **argv) {
  cli->rejoin_delay_ms = 1000;
  cli_args args;
  cli_parse(&elect_spec, program, &cli->o, argc, argv, elect_option, cli,
            &args);
  if (cli->leader_query + cli->watch + cli->holders > 1)
    tool_usage_error("--leader, --watch and --holders exclude each other");
  int query = cli->leader_query || cli->watch || cli->holders;
  if (query && cli->shell_command)
    tool_usage_error("-c goes with a COMMAND to run, not with a query");
  if (cli->json && !query)
    tool_usage_error("--json goes with --leader, --holders or --watch");
  cli->path = cli_one_path(&args, !query && !cli->shell_command);
  cli->command = cli->shell_command ? tool_shell_command(cli->shell_command)
                                    : args.command;
}

static int flush_stdout(void) {
  if (fflush(stdout) != 0 || ferror(stdout)) {
    tool_error("standard output: %s", strerror(errno));
    return TOOL_EXIT_IOERR;
  }
  return 0;
}

/* ------------------------------------------------------ leader queries */

static int print_leader(elect_cli *cli, zkrc_session *s) {
  char *id = NULL;
  int err =
      zkrc_election_query_leader(s, cli->path, &id, cli->o.session_timeout_ms);
  if (err != ZKRC_OK)
    return tool_fail("cannot ask for the leader", err);
  if (id == NULL)
    tool_verbose("%s has no leader", cli->path);
  int printed = queries_print_leader(stdout, cli->path, id, cli->json);
  free(id);
  if (printed != 0)
    return flush_stdout();
  return id ? TOOL_EXIT_OK : TOOL_EXIT_NO_LEADER;
}

/* The participants in line, the leader first: "ID<TAB>NODE" each. */
static int print_holders(elect_cli *cli, zkrc_session *s) {
  zkrc_participant *v;
  size_t n;
  int err = zkrc_election_list(s, cli->path, &v, &n, cli->o.session_timeout_ms);
  if (err != ZKRC_OK)
    return tool_fail("cannot list the participants", err);
  int printed =
      queries_print_contenders(stdout, cli->path, cli->path, v, n, cli->json);
  zkrc_participants_free(v, n);
  return printed == 0 ? TOOL_EXIT_OK : flush_stdout();
}

/* Look at the election (setting a watch first, so that no change after
 * the look goes unnoticed).  Returns ZKRC_OK with the leader's node name,
 * id and token (NULL, NULL, 0: none), or an error. */
static int look_at_leader(elect_cli *cli, zkrc_session *s, char **node,
                          char **id, int64_t *token) {
  *node = *id = NULL;
  *token = 0;
  int err = tool_watch_children(s, cli->path);
  if (err != ZKRC_OK)
    return err;
  zkrc_participant *v;
  size_t n;
  err = zkrc_election_list(s, cli->path, &v, &n, zkrc_session_timeout(s));
  if (err != ZKRC_OK)
    return err;
  if (n > 0) {
    *node = g_strdup(v[0].node);
    *id = g_strdup(v[0].id);
    *token = v[0].token;
  }
  zkrc_participants_free(v, n);
  return ZKRC_OK;
}

/* "TIME<TAB>ID<TAB>TOKEN": when the change was seen (UTC, ISO 8601), the
 * leader's id and fencing token; both empty when nobody leads. */
static void print_watch_line(const elect_cli *cli, const char *id,
                             int64_t token) {
  GDateTime *now = g_date_time_new_now_utc();
  char *when = g_date_time_format_iso8601(now);
  g_date_time_unref(now);
  /* A write error shows in flush_stdout() after it. */
  queries_print_leader_change(stdout, cli->path, when, id, token, cli->json);
  g_free(when);
}

static int watch_leader(elect_cli *cli, zkrc_session *s) {
  char *shown = NULL; /* node name of the leader last printed */
  int printed = 0, stale = 1;
  int64_t retry_at = -1;
  for (;;) {
    if (stale || (retry_at >= 0 && tool_now_ms() >= retry_at)) {
      char *node, *id;
      int64_t token;
      int err = look_at_leader(cli, s, &node, &id, &token);
      if (err != ZKRC_OK) {
        tool_verbose("cannot read %s (%s); trying again", cli->path,
                     zkrc_strerror(err));
        retry_at = tool_now_ms() + 1000;
      } else {
        stale = 0;
        retry_at = -1;
        if (!printed || g_strcmp0(node, shown) != 0) {
          print_watch_line(cli, id, token);
          int status = flush_stdout();
          if (status != 0) {
            g_free(node);
            g_free(id);
            g_free(shown);
            return status;
          }
          printed = 1;
          g_free(shown);
          shown = g_strdup(node);
        }
        g_free(node);
        g_free(id);
      }
    }
    tool_wait(tool_ms_until(retry_at, -1));
    tool_signal sig;
    while (tool_next_signal(&sig)) {
      if (tool_is_stop_signal(sig.signo)) {
        g_free(shown);
        return TOOL_EXIT_OK;
      }
    }
    tool_event ev;
    while (tool_next_event(&ev)) {
      if (ev.kind == TOOL_EV_WATCH)
        stale = 1;
      /* A new session lost our watch; a reconnection may have missed a
       * change: look again either way. */
      if (ev.kind == TOOL_EV_SESSION &&
          (ev.code == ZKRC_SESSION_EVENT_CONNECTED ||
           ev.code == ZKRC_SESSION_EVENT_RECONNECTED)) {
        stale = 1;
        if (ev.code == ZKRC_SESSION_EVENT_CONNECTED)
          tool_print_session(s);
      }
      tool_event_clear(&ev);
    }
  }
}

/* ----------------------------------------------------------- the runner */

typedef struct runner {
  elect_cli *cli;
  zkrc_session *s;
  zkrc_election *e;
  int leading; /* per the events so far */
  int64_t token;
  char *node;
  tool_child child;  /* child.pid > 0 while COMMAND runs */
  int lost;          /* COMMAND is being stopped: leadership lost */
  int quit_signal;   /* a stop signal arrived */
  int failed;        /* the election failed: the exit status, else 0 */
  int64_t rejoin_at; /* -1, or when to join again */
  int64_t start_at;  /* -1, or when to look at the lease again */
  int ready_sent;    /* READY=1 told to systemd */
  int done;          /* leave the loop with status */
  int status;
} runner;

static void on_election_event(zkrc_election *e, const zkrc_election_event *info,
                              void *arg) {
  (void)e;
  (void)arg;
  tool_event ev = {.kind = TOOL_EV_ELECTION,
                   .code = (int)info->type,
                   .reason = info->reason,
                   .token = info->token,
                   .node = (char *)info->node};
  tool_post_event(&ev); /* copies node */
}

static void finish(runner *r, int status) {
  r->done = 1;
  r->status = status;
}

/* Leave the election after COMMAND exited by itself; rejoin later. */
static void step_down(runner *r, int command_status) {
  zkrc_election_leave(r->e); /* ZKRC_ESTATE: not joined; nothing to do */
  r->leading = 0;
  if (r->cli->once) {
    finish(r, command_status);
    return;
  }
  tool_error("COMMAND exited with status %d while leading: stepping down, "
             "rejoining in %d ms",
             command_status, r->cli->rejoin_delay_ms);
  tool_notify("STATUS=COMMAND exited with status %d: stepped down from %s",
              command_status, r->cli->path);
  r->rejoin_at = tool_now_ms() + r->cli->rejoin_delay_ms;
}

/* The status after the operator's stop signal: SIGTERM is the normal way
 * to stop a service (systemd, supervisors), so stepping down cleanly on it
 * is a success (0) when COMMAND ended well or by that SIGTERM; other stop
 * signals, and a COMMAND that failed, keep their status. */
static int stopped_status(const runner *r, int command_status) {
  int clean = command_status == 0 || command_status == 128 + SIGTERM;
  return r->quit_signal == SIGTERM && clean ? TOOL_EXIT_OK : command_status;
}

static void command_exited(runner *r) {
  int status = r->child.status;
  tool_verbose("COMMAND exited with status %d", status);
  tool_child_end(&r->child, r->lost); /* after a loss nothing may run on */
  if (r->failed) {
    finish(r, r->failed);
    return;
  }
  if (r->lost) {
    r->lost = 0;
    if (r->cli->once)
      finish(r, TOOL_EXIT_LOST);
    else if (r->quit_signal)
      finish(r, status);
    return; /* the election rejoins by itself */
  }
  if (r->quit_signal) {
    finish(r, stopped_status(r, status));
    return;
  }
  step_down(r, status);
}

static void start_command(runner *r) {
  GPtrArray *env = g_ptr_array_new_with_free_func(g_free);
  char token[24];
  snprintf(token, sizeof token, "%" PRId64, r->token);
  tool_env_add(env, "ZKR_PATH", "ZKR_ELECTION_PATH", r->cli->path);
  tool_env_add(env, "ZKR_NODE", "ZKR_ELECTION_NODE", r->node ? r->node : "");
  tool_env_add(env, "ZKR_FENCING_TOKEN", "ZKR_LEADER_TOKEN", token);
  tool_env_add(env, "ZKR_PARTICIPANT_ID", NULL, r->cli->id);
  g_ptr_array_add(env, NULL);
  int status = tool_child_start(&r->child, r->cli->command,
                                (char *const *)env->pdata, &r->cli->o);
  g_ptr_array_unref(env);
  if (status != 0) {
    finish(r, status); /* not found, not executable: no point in retrying */
    return;
  }
  tool_verbose("running %s (pid %d) as leader, token %" PRId64,
               r->cli->command[0], (int)r->child.pid, r->token);
  /* READY once, at the first leadership unless --ready-on joined said it
   * already (Type=notify units wait for it). */
  tool_notify("%sSTATUS=leading %s (fencing token %" PRId64 "), running %s",
              r->ready_sent ? "" : "READY=1\n", r->cli->path, r->token,
              r->cli->command[0]);
  r->ready_sent = 1;
}

static void handle_signal(runner *r, const tool_signal *sig) {
  int running = r->child.pid > 0;
  if (tool_is_stop_signal(sig->signo) && !r->quit_signal) {
    r->quit_signal = sig->signo;
    tool_notify("STOPPING=1\nSTATUS=stopping on SIG%s",
                sigabbrev_np(sig->signo));
    if (!running) /* a candidate, or between two terms */
      finish(r, stopped_status(r, 128 + sig->signo));
  }
  int lease_ok =
      !r->lost && zkrc_election_lease_remaining(r->e) > 2 * TOOL_KILL_MARGIN_MS;
  tool_child_forward(&r->child, sig, &r->cli->o, lease_ok);
}

/* Leadership is gone: stop COMMAND, also after a stop signal was passed
 * on (it may ignore that one). */
static void leadership_lost(runner *r, int reason) {
  if (r->leading && !r->lost)
    tool_notify("STATUS=leadership of %s lost (%s)", r->cli->path,
                zkrc_strerror(reason));
  r->leading = 0;
  if (r->child.pid <= 0 || r->lost)
    return;
  r->lost = 1;
  tool_error("leadership of %s lost (%s): stopping COMMAND with SIG%s",
             r->cli->path, zkrc_strerror(reason),
             sigabbrev_np(r->cli->o.lost_signal));
  tool_child_stop(&r->child, r->cli->o.lost_signal, r->cli->o.grace_ms);
}

/* Taking part ended for good (not authorized, ...): exit 76 once COMMAND
 * (stopped by the REVOKED before) is gone. */
static void election_failed(runner *r, int reason) {
  leadership_lost(r, reason);
  r->failed = tool_fail("the election failed", reason);
  if (r->child.pid <= 0)
    finish(r, r->failed);
}

static void handle_event(runner *r, tool_event *ev) {
  if (ev->kind == TOOL_EV_SESSION && ev->code == ZKRC_SESSION_EVENT_CONNECTED) {
    tool_print_session(r->s);
  } else if (ev->kind == TOOL_EV_ELECTION &&
             ev->code == ZKRC_ELECTION_ELECTED) {
    tool_verbose("elected: node %s, token %" PRId64, ev->node, ev->token);
    r->leading = 1;
    r->token = ev->token;
    g_free(r->node);
    r->node = ev->node;
    ev->node = NULL;
  } else if (ev->kind == TOOL_EV_ELECTION && ev->code == ZKRC_ELECTION_FAILED) {
    election_failed(r, ev->reason);
  } else if (ev->kind == TOOL_EV_ELECTION) {
    tool_verbose("revoked: %s", zkrc_strerror(ev->reason));
    leadership_lost(r, ev->reason);
  }
  tool_event_clear(ev);
}

/* Start COMMAND unless the lease is already too short for it (renewals
 * late: it would be stopped at once).  Then look again every 100 ms: the
 * lease recovers, or REVOKED comes by its deadline. */
static void start_when_leased(runner *r) {
  int remaining = zkrc_election_lease_remaining(r->e);
  if (tool_lease_allows_start(remaining, zkrc_session_lease_floor(r->s),
                              &r->cli->o)) {
    r->start_at = -1;
    start_command(r);
    return;
  }
  tool_verbose("lease of %s too short (%d ms): COMMAND waits", r->cli->path,
               remaining);
  r->start_at = tool_now_ms() + 100;
}

/* Start COMMAND when we lead and nothing stands in the way. */
static void reconcile(runner *r) {
  r->start_at = -1; /* set again below while the lease stands in the way */
  if (r->done || r->quit_signal || r->failed)
    return;
  if (r->rejoin_at >= 0 && tool_now_ms() >= r->rejoin_at) {
    r->rejoin_at = -1;
    int err = zkrc_election_join(r->e);
    if (err != ZKRC_OK && err != ZKRC_ESTATE)
      finish(r, tool_fail("cannot rejoin the election", err));
    else
      tool_verbose("rejoined %s", r->cli->path);
  }
  if (r->leading && r->child.pid <= 0 && r->rejoin_at < 0 && !r->done)
    start_when_leased(r);
}

/* Before each wait: keep COMMAND dead by the leadership's deadline.
 * Returns the wait's timeout. */
static int keep_within_lease(runner *r) {
  int remaining =
      r->lost || !r->leading ? 0 : zkrc_election_lease_remaining(r->e);
  int timeout = tool_ms_until(r->start_at, tool_ms_until(r->rejoin_at, -1));
  timeout = tool_child_timeout(&r->child, timeout);
  timeout =
      tool_child_lease(&r->child, remaining, zkrc_session_lease_floor(r->s),
                       &r->cli->o, timeout);
  if (r->child.pid > 0 && r->child.lease_ran_out && !r->lost) {
    r->lost = 1; /* (an ended command's flag is stale) */
    tool_notify("STATUS=leadership of %s lost (the lease runs out): "
                "stopping COMMAND",
                r->cli->path);
  }
  return timeout;
}

static int run_elected(elect_cli *cli, zkrc_session *s) {
  runner r;
  memset(&r, 0, sizeof r);
  r.cli = cli;
  r.s = s;
  r.rejoin_at = -1;
  r.start_at = -1;
  zkrc_election_options eo;
  zkrc_election_options_init(&eo);
  eo.participant_id = cli->id;
  eo.on_event = on_election_event;
  int err = zkrc_election_new(&r.e, s, cli->path, &eo);
  if (err == ZKRC_OK)
    err = zkrc_election_join(r.e);
  if (err != ZKRC_OK) {
    zkrc_election_free(r.e);
    return tool_fail("cannot join the election", err);
  }
  tool_verbose("joined %s as %s", cli->path, cli->id);
  r.ready_sent = cli->ready_on_joined;
  tool_notify("%sSTATUS=joined %s as %s, waiting to lead",
              cli->ready_on_joined ? "READY=1\n" : "", cli->path, cli->id);
  for (;;) {
    if (tool_child_poll(&r.child))
      command_exited(&r);
    /* Also right after an exit: we may have been re-elected meanwhile. */
    reconcile(&r);
    if (r.done)
      break;
    /* The watchdog is fed while the session's lease is live, leading or
     * not: a participant whose lease is stuck is restarted. */
    int live = zkrc_session_lease_remaining(s) > 2 * TOOL_KILL_MARGIN_MS;
    tool_wait(tool_notify_watchdog(live, keep_within_lease(&r)));
    tool_signal sig;
    while (tool_next_signal(&sig))
      handle_signal(&r, &sig);
    tool_event ev;
    while (tool_next_event(&ev))
      handle_event(&r, &ev);
  }
  tool_child_kill_and_reap(&r.child); /* only after an internal failure */
  zkrc_election_free(r.e); /* leaves: the next participant is elected */
  g_free(r.node);
  return r.status;
}

static int elect_main(elect_cli *cli) {
  tool_check_path(cli->path);
  zkrc_session *s;
  /* A new session after an expiry only matters to a participant. */
  int status =
      tool_start_session(&cli->o, cli->leader_query || cli->holders, &s);
  if (status != 0)
    return status;
  cli->id = tool_participant_id(&cli->o);
  if (cli->leader_query)
    status = print_leader(cli, s);
  else if (cli->watch)
    status = watch_leader(cli, s);
  else if (cli->holders)
    status = print_holders(cli, s);
  else
    status = run_elected(cli, s);
  zkrc_session_close(s);
  return status;
}

int cmd_elect(const char *program, int argc, char **argv) {
  elect_cli cli;
  memset(&cli, 0, sizeof cli);
  parse_args(&cli, program, argc, argv);
  int status = elect_main(&cli);
  if (cli.shell_command)
    g_free(cli.command); /* tool_shell_command()'s array */
  g_free(cli.id);
  return status;
}
