/*
 * zkr-elect - run a command on whichever host is the elected leader
 * (zkrecipes election, the protocol of Apache Curator's LeaderLatch).  See
 * usage_text, `zkr-elect --help' or zkr-elect(1).
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
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "tool.h"

static const char usage_text[] =
    "Usage: zkr-elect [OPTIONS] ELECTIONPATH [--] COMMAND [ARG...]\n"
    "       zkr-elect [OPTIONS] --leader ELECTIONPATH\n"
    "       zkr-elect [OPTIONS] --watch ELECTIONPATH\n"
    "       zkr-elect [OPTIONS] --holders ELECTIONPATH\n"
    "       zkr-elect --help | --version\n"
    "\n"
    "Join the leader election ELECTIONPATH (zkrecipes; the protocol of Apache\n"
    "Curator's LeaderLatch) and run COMMAND whenever this participant leads.\n"
    "\n"
    "When leadership is lost while COMMAND runs (the ZooKeeper session "
    "expired\n"
    "or its lease ran out, or our node was deleted), COMMAND gets the lost\n"
    "signal (SIGTERM), then SIGKILL after the grace period; zkr-elect then\n"
    "waits to be elected again (it rejoins by itself) and runs COMMAND anew,\n"
    "or with --once exits with status 75.  COMMAND is dead by the lease's\n"
    "deadline, before anyone else can be elected: SIGKILL 50 ms before it,\n"
    "the lost signal so that the grace period (shortened to fit below the\n"
    "lease floor) ends then.  Time zkr-elect spends stopped counts against\n"
    "the lease.  When the election fails for good (not authorized, ...),\n"
    "zkr-elect exits with status 76.\n"
    "\n"
    "When COMMAND exits by itself while leading, zkr-elect steps down: it\n"
    "leaves the election so that another participant takes over, rejoins "
    "after\n"
    "the rejoin delay, and runs COMMAND again when elected again (a service\n"
    "that fails moves to another host; alone, it is restarted after the\n"
    "delay).  With --once it leaves and exits with COMMAND's status instead.\n"
    "\n"
    "SIGINT, SIGTERM, SIGHUP and SIGQUIT stop zkr-elect: they are passed on "
    "to\n"
    "a running COMMAND, and once it has exited zkr-elect leaves the election\n"
    "(the next participant is elected at once) and exits with COMMAND's\n"
    "status; with no COMMAND running it exits with 128+N.  After SIGTERM\n"
    "(how supervisors stop a service) a clean step-down exits 0 instead.\n"
    "SIGUSR1, SIGUSR2,\n"
    "SIGTSTP (then zkr-elect stops too) and SIGCONT are passed on to\n"
    "COMMAND.  COMMAND runs in a process group of its own unless\n"
    "--foreground; should zkr-elect die, COMMAND gets the lost signal and a\n"
    "guardian process SIGKILLs its whole process group.\n"
    "\n"
    "  --leader   print the current leader's id and exit (status 3 when there\n"
    "             is none)\n"
    "  --holders  print the participants in line, the leader first, one per\n"
    "             line: \"ID<TAB>NODE\" (as zkr-lock --holders); nothing when\n"
    "             there are none\n"
    "  --watch    print \"TIME<TAB>ID<TAB>TOKEN\" (UTC; the leader's id and\n"
    "             fencing token, both empty when nobody leads) now and\n"
    "             again at each change of leader, one line each, until\n"
    "             interrupted (then status 0).  Changes closer together than\n"
    "             a round trip to ZooKeeper may show as one.\n"
    "\n"
    "Options (before ELECTIONPATH):\n"
    "  -s, --servers HOSTS        ZooKeeper servers, host:port[,host:port...]\n"
    "                             [/chroot] (default: $ZKR_SERVERS, else\n"
    "                             127.0.0.1:2181)\n"
    "  -t, --session-timeout MS   session timeout in ms (default 10000); also\n"
    "                             how long to wait for a server to answer\n"
    "      --id ID                our participant id, shown as the leader's "
    "id\n"
    "                             (default HOSTNAME:PID)\n"
    "      --once                 run COMMAND at most once, then exit\n"
    "  -r, --rejoin-delay SECONDS after COMMAND exited by itself, wait this\n"
    "                             long before rejoining (default 1)\n"
    "  -k, --lost-signal SIGNAL   signal COMMAND gets when leadership is lost\n"
    "                             (name or number; default TERM)\n"
    "  -g, --grace SECONDS        then SIGKILL after this long (default 5;\n"
    "                             shortened to fit the lease)\n"
    "      --server-tick MS       the servers' tickTime, for the lease\n"
    "                             (default 2000, at most half of -t)\n"
    "      --auth-file FILE       authenticate (digest) with the "
    "USER:PASSWORD\n"
    "                             on FILE's first line (also $ZKR_AUTH_FILE)\n"
    "      --foreground           keep COMMAND in zkr-elect's process group\n"
    "  -v, --verbose              report progress on stderr, including the\n"
    "                             session id (never its password)\n"
    "  -h, --help                 show this help and exit\n"
    "  -V, --version              show the version and exit\n"
    "\n"
    "Environment:\n" TOOL_ENVIRONMENT_HELP
    "                   auth file (taken out of COMMAND's environment)\n"
    "COMMAND also gets:\n"
    "  ZKR_ELECTION_PATH   ELECTIONPATH\n"
    "  ZKR_ELECTION_NODE   full path of our election node\n"
    "  ZKR_LEADER_TOKEN    the fencing token of this leadership: the node's\n"
    "                      czxid, in decimal; larger for every later leader\n"
    "  ZKR_PARTICIPANT_ID  our participant id\n"
    "\n"
    "Exit status:\n"
    "  0    stopped by SIGTERM, having stepped down cleanly (COMMAND ended\n"
    "       with 0 or by that SIGTERM, or was not running)\n"
    "  COMMAND's status (128+N when killed by signal N) after another stop\n"
    "  signal, or with --once\n"
    "  2    bad usage\n"
    "  3    --leader: there is no leader\n"
    "  65   invalid ELECTIONPATH\n"
    "  69   no ZooKeeper server answered within the session timeout\n"
    "  71   a system call failed (fork, pipe, ...)\n"
    "  74   writing standard output failed (--leader, --watch)\n"
    "  75   --once: leadership was lost while COMMAND ran\n"
    "  76   ZooKeeper refused or failed; the election failed for good\n"
    "  77   credentials refused, or an ACL forbids what was needed\n"
    "  126  COMMAND could not be run; 127 COMMAND was not found\n"
    "  128+N  stopped by signal N (not SIGTERM) while COMMAND was not\n"
    "       running\n";

enum { OPT_ONCE = TOOL_OPT_FIRST_FREE, OPT_LEADER, OPT_WATCH, OPT_HOLDERS };

typedef struct elect_cli {
  tool_options o;
  int once;
  int leader_query;
  int watch;
  int holders;
  int rejoin_delay_ms;
  const char *path;
  char **command;
  char *id;
} elect_cli;

static void parse_args(elect_cli *cli, int argc, char **argv) {
  static const struct option longopts[] = {
      TOOL_COMMON_LONGOPTS,
      {"once", no_argument, NULL, OPT_ONCE},
      {"leader", no_argument, NULL, OPT_LEADER},
      {"watch", no_argument, NULL, OPT_WATCH},
      {"holders", no_argument, NULL, OPT_HOLDERS},
      {"rejoin-delay", required_argument, NULL, 'r'},
      {NULL, 0, NULL, 0},
  };
  tool_options_init(&cli->o, "zkr-elect");
  cli->rejoin_delay_ms = 1000;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "+:" TOOL_COMMON_SHORTOPTS "r:", longopts,
                          NULL)) != -1) {
    if (tool_common_option(&cli->o, c, optarg, usage_text))
      continue;
    switch (c) {
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
    case 'r':
      cli->rejoin_delay_ms = tool_parse_seconds(optarg, "--rejoin-delay");
      break;
    case ':':
      tool_usage_error("option %s needs a value", argv[optind - 1]);
    default:
      tool_usage_error("unknown option: %s", argv[optind - 1]);
    }
  }
  if (cli->leader_query + cli->watch + cli->holders > 1)
    tool_usage_error("--leader, --watch and --holders exclude each other");
  int query = cli->leader_query || cli->watch || cli->holders;
  int cmd = tool_split_command(argc, argv, optind, !query);
  cli->path = argv[optind];
  cli->command = cmd < argc ? argv + cmd : NULL;
}

static int is_stop_signal(int sig) {
  return sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT;
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
  if (id == NULL) {
    tool_verbose("%s has no leader", cli->path);
    return TOOL_EXIT_NO_LEADER;
  }
  printf("%s\n", id);
  free(id);
  return flush_stdout();
}

/* The participants in line, the leader first: "ID<TAB>NODE" each. */
static int print_holders(elect_cli *cli, zkrc_session *s) {
  zkrc_participant *v;
  size_t n;
  int err = zkrc_election_list(s, cli->path, &v, &n, cli->o.session_timeout_ms);
  if (err != ZKRC_OK)
    return tool_fail("cannot list the participants", err);
  for (size_t i = 0; i < n; i++)
    printf("%s\t%s/%s\n", v[i].id, cli->path, v[i].node);
  zkrc_participants_free(v, n);
  return flush_stdout();
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
static void print_watch_line(const char *id, int64_t token) {
  GDateTime *now = g_date_time_new_now_utc();
  char *when = g_date_time_format_iso8601(now);
  g_date_time_unref(now);
  if (id)
    printf("%s\t%s\t%" PRId64 "\n", when, id, token);
  else
    printf("%s\t\t\n", when);
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
          print_watch_line(id, token);
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
      if (is_stop_signal(sig.signo)) {
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
  char *env[5];
  int k = 0;
  env[k++] = g_strdup_printf("ZKR_ELECTION_PATH=%s", r->cli->path);
  env[k++] = g_strdup_printf("ZKR_ELECTION_NODE=%s", r->node ? r->node : "");
  env[k++] = g_strdup_printf("ZKR_LEADER_TOKEN=%" PRId64, r->token);
  env[k++] = g_strdup_printf("ZKR_PARTICIPANT_ID=%s", r->cli->id);
  env[k] = NULL;
  int status = tool_child_start(&r->child, r->cli->command, env, &r->cli->o);
  for (int i = 0; i < k; i++)
    g_free(env[i]);
  if (status != 0) {
    finish(r, status); /* not found, not executable: no point in retrying */
    return;
  }
  tool_verbose("running %s (pid %d) as leader, token %" PRId64,
               r->cli->command[0], (int)r->child.pid, r->token);
}

static void handle_signal(runner *r, const tool_signal *sig) {
  int running = r->child.pid > 0;
  if (is_stop_signal(sig->signo) && !r->quit_signal) {
    r->quit_signal = sig->signo;
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
  if (r->child.pid > 0 && r->child.lease_ran_out)
    r->lost = 1; /* (an ended command's flag is stale) */
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
  for (;;) {
    if (tool_child_poll(&r.child))
      command_exited(&r);
    /* Also right after an exit: we may have been re-elected meanwhile. */
    reconcile(&r);
    if (r.done)
      break;
    tool_wait(keep_within_lease(&r));
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

int main(int argc, char **argv) {
  elect_cli cli;
  memset(&cli, 0, sizeof cli);
  parse_args(&cli, argc, argv);
  tool_check_path(cli.path);
  if (tool_runtime_init() != 0)
    return TOOL_EXIT_OSERR;
  zkrc_session *s;
  /* A new session after an expiry only matters to a participant. */
  int status = tool_connect(&cli.o, cli.leader_query || cli.holders, &s);
  if (status != 0)
    return status;
  cli.id = tool_participant_id(&cli.o);
  if (cli.leader_query)
    status = print_leader(&cli, s);
  else if (cli.watch)
    status = watch_leader(&cli, s);
  else if (cli.holders)
    status = print_holders(&cli, s);
  else
    status = run_elected(&cli, s);
  zkrc_session_close(s);
  g_free(cli.id);
  return status;
}
