/*
 * zkr lock (zkr-lock) - run a command while holding a zkrecipes
 * (Curator-compatible) ZooKeeper lock, the way flock(1) does with a file
 * lock.  See help_head, `zkr lock --help' or zkr-lock(1).
 *
 * How it runs: the main thread connects, then a short-lived thread blocks in
 * zkrc_lock_acquire() (the lock is per thread, and a blocking call cannot be
 * interrupted by a signal) while the main thread's poll loop keeps answering
 * signals.  Once the lock is held COMMAND is forked; the loop then waits for
 * it to exit, forwards signals to it, and stops it when the lock's event
 * callback reports it lost.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
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
    "Usage: zkr lock [OPTIONS] LOCKPATH [--] COMMAND [ARG...]\n"
    "       zkr lock [OPTIONS] LOCKPATH -c STRING\n"
    "       zkr lock [OPTIONS] LOCKPATH... -- COMMAND [ARG...]\n"
    "       zkr lock [OPTIONS] LOCKPATH [LOCKPATH... --]\n"
    "       zkr lock [OPTIONS] --holders LOCKPATH...\n"
    "       zkr lock --help | --version\n"
    "(zkr-lock is the same program.)\n"
    "\n"
    "Acquire the ZooKeeper lock LOCKPATH (a zkrecipes lock: fair, fenced, the\n"
    "protocol of Apache Curator's InterProcessMutex and kazoo's Lock), run\n"
    "COMMAND while holding it, release it when COMMAND exits, and exit with\n"
    "COMMAND's status (128+N when it was killed by signal N).  The letters\n"
    "are flock(1)'s: -s shared, -x exclusive, -n nonblocking, -w wait.\n"
    "\n"
    "Without COMMAND (as `etcdctl lock NAME'), hold the lock until SIGINT or\n"
    "SIGTERM (then release it and exit 0), after printing \"NODE<TAB>TOKEN\"\n"
    "for each lock on standard output; exit 75 if it is lost meanwhile.\n"
    "\n"
    "Several LOCKPATHs (then -- before COMMAND) are taken all or nothing,\n"
    "in the order of their paths whatever order they are given in, so that\n"
    "two commands asking for the same locks in different orders cannot\n"
    "deadlock; -w and -n apply to the whole set, and losing any of them is\n"
    "losing the set.  The first -- ends the paths when the words from the\n"
    "second path to it are all absolute paths (options go before the\n"
    "second path: after it they are COMMAND's); under one lock, put --\n"
    "after LOCKPATH when COMMAND is an absolute path with a -- among its\n"
    "arguments.\n"
    "\n"
    "If the lock is lost while COMMAND runs (the ZooKeeper session expired,\n"
    "its lease ran out, or the lock node was deleted), COMMAND gets the lost\n"
    "signal (SIGTERM), then SIGKILL after the grace period, and zkr lock\n"
    "exits with status 75.  COMMAND is dead by the lease's deadline, before\n"
    "anyone else can get the lock: SIGKILL 50 ms before it, the lost signal\n"
    "so that the grace period (shortened to fit below the lease floor) ends\n"
    "then.  Time zkr lock spends stopped counts against the lease.\n"
    "SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGTSTP (then\n"
    "zkr lock stops too) and SIGCONT are passed on to COMMAND; the lock is\n"
    "released when it exits.  Before the lock is held, SIGINT, SIGTERM,\n"
    "SIGHUP and SIGQUIT give up waiting (status 128+N).\n"
    "\n"
    "COMMAND runs in a process group of its own, so that signals reach\n"
    "everything it starts; a terminal's ^C reaches zkr lock, which passes it\n"
    "on.  With --foreground it stays in zkr lock's group instead (for\n"
    "commands that read the terminal); then only COMMAND itself is signalled\n"
    "on loss.  Should zkr lock itself die, COMMAND gets the lost signal, and\n"
    "a guardian process SIGKILLs its whole process group.\n"
    "\n"
    "With --revocable, a request to give the lock up (zkr revoke, Curator's\n"
    "Revoker.attemptRevoke: \"__REVOKE__\" written on our node) gives\n"
    "COMMAND the lost signal (then SIGKILL after the grace period); the\n"
    "lock is released once it exits, and zkr lock exits with its status.\n"
    "Without COMMAND the lock is released at once (exit 0); while waiting,\n"
    "zkr lock gives up (the -E status).\n";

static const char help_tail[] =
    "\n"
    "Environment:\n" TOOL_ENVIRONMENT_HELP
    "                   auth file (taken out of COMMAND's environment)\n"
    "COMMAND also gets:\n"
    "  ZKR_PATH            LOCKPATH (the first one given)\n"
    "  ZKR_NODE            full path of our lock node\n"
    "  ZKR_FENCING_TOKEN   the fencing token: the node's czxid, in decimal;\n"
    "                      larger for every later holder\n"
    "  ZKR_COUNT           how many locks are held (N)\n"
    "  ZKR_PATH_I, ZKR_NODE_I, ZKR_FENCING_TOKEN_I\n"
    "                      the same for the I-th LOCKPATH given, 1 to N\n"
    "  ZKR_PARTICIPANT_ID  the participant id (--id, or HOSTNAME:PID)\n"
    "  (and, until 0.3, ZKR_LOCK_PATH, ZKR_LOCK_NODE, ZKR_LOCK_COUNT,\n"
    "  ZKR_LOCK_PATH_I and ZKR_LOCK_NODE_I: the same values)\n"
    "\n"
    "Exit status:\n"
    "  COMMAND's status, or 128+N when it was killed by signal N\n"
    "  1    the lock is busy (-n), or was not acquired within -w while the\n"
    "       servers answered; see -E\n"
    "  2    bad usage\n"
    "  65   invalid LOCKPATH\n"
    "  68   a server's name does not resolve\n"
    "  69   every server refused (said at once), none answered within the\n"
    "       connect timeout (with -n too: no answer is not \"busy\"), or the\n"
    "       server list's chroot does not exist\n"
    "  71   a system call failed (fork, pipe, ...)\n"
    "  74   writing standard output failed (--holders)\n"
    "  75   the lock was lost while COMMAND ran, or before it could start\n"
    "  76   ZooKeeper refused or failed (the session expired while\n"
    "       waiting, ...)\n"
    "  77   credentials refused, or an ACL forbids what was needed\n"
    "  126  COMMAND could not be run; 127 COMMAND was not found\n"
    "  128+N  interrupted by signal N while waiting for the lock\n";

static const cli_spec lock_spec = {CLI_LOCK, "lock", CLI_PATHS_COMMAND,
                                   help_head, help_tail};

typedef enum lock_mode { MODE_MUTEX, MODE_SHARED, MODE_EXCLUSIVE } lock_mode;

typedef struct lock_cli {
  tool_options o;
  int wait_ms; /* ZKRC_WAIT_FOREVER, ZKRC_NO_WAIT or ms */
  int conflict_code;
  int holders;
  int json; /* --json, for --holders */
  lock_mode mode;
  int limit;        /* --limit N: one of N leases of a semaphore; 0: a lock */
  const char *path; /* for messages: the path, or the paths joined */
  char **paths;     /* the LOCKPATHs, as given */
  int n_paths;
  char **command;
  const char *shell_command; /* -c STRING */
  char *id;                  /* the participant id */
  int revocable;             /* --revocable */
  zkrc_lock_format format;   /* --format */
} lock_cli;

/* The paths and COMMAND as cli_parse() divided them. */
static void take_words(lock_cli *cli, cli_args *args) {
  if (args->n_paths == 0)
    tool_usage_error("missing LOCKPATH");
  if (cli->shell_command && args->command)
    tool_usage_error("-c gives COMMAND: not a second one");
  if (args->n_paths > ZKRC_MULTILOCK_MAX)
    tool_usage_error("at most %d LOCKPATHs", ZKRC_MULTILOCK_MAX);
  cli->paths = args->paths; /* lives on */
  cli->n_paths = args->n_paths;
  cli->command = cli->holders ? NULL : args->command;
  if (cli->shell_command && !cli->holders)
    cli->command = tool_shell_command(cli->shell_command); /* lives on */
  for (int i = 0; i < cli->n_paths; i++)
    for (int j = 0; j < i; j++)
      if (strcmp(cli->paths[i], cli->paths[j]) == 0)
        tool_usage_error("LOCKPATH given twice: %s", cli->paths[i]);
  cli->path = cli->n_paths == 1 ? cli->paths[0]
                                : g_strjoinv(" ", cli->paths); /* lives on */
}

static void lock_option(int id, const char *value, void *ctx) {
  lock_cli *cli = ctx;
  switch (id) {
  case 'w':
    cli->wait_ms = tool_parse_seconds(value, "--wait");
    break;
  case 'n':
    cli->wait_ms = ZKRC_NO_WAIT;
    break;
  case 'E':
    cli->conflict_code = tool_parse_int(value, 0, 255, "-E");
    break;
  case OPT_HOLDERS:
    cli->holders = 1;
    break;
  case OPT_JSON:
    cli->json = 1;
    break;
  case 's':
    cli->mode = MODE_SHARED;
    break;
  case 'x':
    cli->mode = MODE_EXCLUSIVE;
    break;
  case OPT_LIMIT:
    cli->limit = tool_parse_int(value, 1, INT_MAX, "--limit");
    break;
  case 'c':
    cli->shell_command = value;
    break;
  case OPT_REVOCABLE:
    cli->revocable = 1;
    break;
  case OPT_FORMAT:
    if (strcmp(value, "curator") == 0)
      cli->format = ZKRC_LOCK_FORMAT_CURATOR;
    else if (strcmp(value, "kazoo") == 0)
      cli->format = ZKRC_LOCK_FORMAT_KAZOO;
    else
      tool_usage_error("--format is curator or kazoo, not '%s'", value);
    break;
  }
}

static void parse_args(lock_cli *cli, const char *program, int argc,
                       char **argv) {
  cli->wait_ms = ZKRC_WAIT_FOREVER;
  cli->conflict_code = TOOL_EXIT_NOT_ACQUIRED;
  cli_args args;
  cli_parse(&lock_spec, program, &cli->o, argc, argv, lock_option, cli, &args);
  if (cli->limit && cli->mode != MODE_MUTEX)
    tool_usage_error("--limit excludes --shared and -x");
  if (cli->json && !cli->holders)
    tool_usage_error("--json goes with --holders");
  if (cli->format != ZKRC_LOCK_FORMAT_CURATOR &&
      (cli->limit || cli->mode != MODE_MUTEX))
    tool_usage_error("--format kazoo is the mutex's: not with --shared, -x "
                     "or --limit");
  if (cli->revocable && cli->limit)
    tool_usage_error("--revocable excludes --limit (a semaphore's leases "
                     "are not revocable, as Curator's are not)");
  take_words(cli, &args);
}

/* An invalid LOCKPATH: said as such, with a word for the scripts of
 * before 0.2, where -s took the servers. */
static void check_paths(const lock_cli *cli) {
  for (int i = 0; i < cli->n_paths; i++) {
    const char *why = NULL;
    if (zkrc_path_validate(cli->paths[i], &why) == ZKRC_OK)
      continue;
    if (cli->mode == MODE_SHARED && strchr(cli->paths[i], ':'))
      tool_error("invalid path '%s': %s (-s is --shared, as in flock(1); "
                 "the servers are --servers)",
                 cli->paths[i], why ? why : "refused");
    else
      tool_error("invalid path '%s': %s", cli->paths[i], why ? why : "refused");
    exit(TOOL_EXIT_BAD_PATH);
  }
}

/* --------------------------------------------------------------- holders */

/* The contenders of @p path in queue order (--holders), as text or JSON. */
static int print_holders(zkrc_session *s, const lock_cli *cli, const char *path,
                         int timeout_ms) {
  zkrc_participant *v;
  size_t n;
  int err = cli->limit ? zkrc_semaphore_list(s, path, &v, &n, timeout_ms)
                       : zkrc_lock_list(s, path, &v, &n, timeout_ms);
  if (err != ZKRC_OK)
    return tool_fail("cannot list the contenders", err);
  /* A semaphore's holders are its lease nodes, under path/leases. */
  char *dir = cli->limit ? g_strdup_printf("%s/leases", path) : g_strdup(path);
  queries_print_contenders(stdout, path, dir, v, n, cli->json);
  zkrc_participants_free(v, n);
  g_free(dir);
  if (fflush(stdout) != 0 || ferror(stdout)) {
    tool_error("standard output: %s", strerror(errno));
    return TOOL_EXIT_IOERR;
  }
  return TOOL_EXIT_OK;
}

static int print_all_holders(lock_cli *cli, zkrc_session *s) {
  int status = TOOL_EXIT_OK;
  for (int i = 0; i < cli->n_paths && status == TOOL_EXIT_OK; i++)
    status = print_holders(s, cli, cli->paths[i], zkrc_session_timeout(s));
  return status;
}

/* ---------------------------------------------------------- acquisition */

/* The acquiring thread and the main thread, which may give up meanwhile by
 * freeing the lock.  The mutex keeps the acquirer off a freed lock. */
typedef struct acquirer {
  GMutex mu;
  int n;                       /* locks, one per LOCKPATH, in the order given */
  zkrc_lock **lk;              /* each a mutex or a side of rw[i] */
  zkrc_rwlock **rw;            /* NULL entries for mutexes */
  zkrc_semaphore **sem;        /* --limit: one per LOCKPATH, instead of lk */
  zkrc_semaphore_lease *lease; /* --limit, one LOCKPATH */
  zkrc_multilock *ml;          /* several LOCKPATHs */
  int64_t *tokens;             /* once held: each lock's token and node */
  char **nodes;
  int wait_ms;
  int cancelled;
  zkrc_session *s;
  int session_closed; /* by a cancel of several locks: not to close again */
  lock_cli *cli;
} acquirer;

/* --limit: one lease of the semaphore.  A cancel frees the semaphore
 * under a->mu: the acquisition then returns ZKRC_ECANCELED. */
static void acquire_lease(acquirer *a) {
  zkrc_semaphore_lease *lease = NULL;
  int rc = zkrc_semaphore_acquire(a->sem[0], a->wait_ms, &lease);
  tool_event ev = {.kind = TOOL_EV_ACQUIRED, .code = rc};
  g_mutex_lock(&a->mu);
  if (!a->cancelled && rc == ZKRC_OK) {
    a->lease = lease;
    if (zkrc_semaphore_lease_token(lease, &a->tokens[0]) != ZKRC_OK ||
        zkrc_semaphore_lease_node(lease, &a->nodes[0]) != ZKRC_OK)
      ev.code = ZKRC_ELOCKLOST; /* lost at once */
  }
  g_mutex_unlock(&a->mu);
  tool_post_event(&ev);
}

/* Several LOCKPATHs: all of them at once, in the order of their paths (no
 * deadlock with another zkr-lock asking for them in another order).  The
 * tokens and nodes are kept in the order the paths were given. */
static void acquire_set(acquirer *a, lock_cli *cli) {
  int rc = zkrc_multilock_acquire(a->ml, a->wait_ms);
  tool_event ev = {.kind = TOOL_EV_ACQUIRED, .code = rc};
  g_mutex_lock(&a->mu);
  /* Tokens and nodes of locks are per thread: ask from the holding one. */
  for (size_t j = 0; j < (size_t)a->n && !a->cancelled && rc == ZKRC_OK; j++)
    for (int i = 0; i < a->n; i++)
      if (strcmp(cli->paths[i], zkrc_multilock_path(a->ml, j)) == 0) {
        if (zkrc_multilock_token(a->ml, j, &a->tokens[i]) != ZKRC_OK ||
            zkrc_multilock_node(a->ml, j, &a->nodes[i]) != ZKRC_OK)
          ev.code = ZKRC_ELOCKLOST; /* lost at once */
      }
  g_mutex_unlock(&a->mu);
  tool_post_event(&ev);
}

/* One lock or lease, or a set of them. */
static gpointer acquire_main(gpointer data) {
  acquirer *a = data;
  if (a->ml) {
    acquire_set(a, a->cli);
    return NULL;
  }
  if (a->sem) {
    acquire_lease(a);
    return NULL;
  }
  int rc = zkrc_lock_acquire(a->lk[0], a->wait_ms);
  tool_event ev = {.kind = TOOL_EV_ACQUIRED, .code = rc};
  g_mutex_lock(&a->mu);
  /* Tokens and nodes are per thread: ask from the holding thread. */
  if (!a->cancelled && ev.code == ZKRC_OK)
    ev.code = zkrc_lock_token(a->lk[0], &a->tokens[0]);
  if (!a->cancelled && ev.code == ZKRC_OK)
    ev.code = zkrc_lock_node(a->lk[0], &a->nodes[0]);
  g_mutex_unlock(&a->mu);
  tool_post_event(&ev);
  return NULL;
}

static void on_lease_event(zkrc_semaphore *sem,
                           const zkrc_semaphore_event *info, void *arg) {
  (void)sem;
  (void)arg;
  tool_event ev = {.kind = TOOL_EV_LOCK,
                   .code = (int)info->type,
                   .reason = info->reason,
                   .token = info->token};
  tool_post_event(&ev);
}

static void on_lock_event(zkrc_lock *lk, const zkrc_lock_event *info,
                          void *arg) {
  (void)lk;
  (void)arg;
  tool_event ev = {.kind = TOOL_EV_LOCK,
                   .code = (int)info->type,
                   .reason = info->reason,
                   .token = info->token,
                   .node = (char *)info->node};
  tool_post_event(&ev); /* copies node */
}

/* Why the acquisition did not succeed, as an exit status: "busy" only when
 * another participant holds the lock; when no server answered (-n), or the
 * wait ended while no server did (-w), 69: a cron job must not take that
 * for "someone else is doing the work". */
static int not_acquired_status(lock_cli *cli, zkrc_session *s, int err) {
  int connected = zkrc_session_get_state(s) == ZKRC_SESSION_CONNECTED;
  if (err == ZKRC_ELOCKED ||
      (err == ZKRC_ETIMEDOUT && cli->wait_ms != ZKRC_NO_WAIT && connected)) {
    tool_verbose("%s is held by another participant", cli->path);
    return cli->conflict_code;
  }
  if (err == ZKRC_ETIMEDOUT) {
    tool_error("no ZooKeeper server answered in time: cannot tell whether "
               "%s is free",
               cli->path);
    return TOOL_EXIT_UNAVAILABLE;
  }
  return tool_fail("cannot acquire the lock", err);
}

/* Give up waiting: free the lock under the acquirer's mutex. */
static void free_locks(acquirer *a) {
  /* The set first: it refers to the members.  From this thread it releases
   * the leases; the locks (the acquiring thread's) go with their objects. */
  zkrc_multilock_free(a->ml);
  a->ml = NULL;
  for (int i = 0; a->sem && i < a->n; i++) {
    zkrc_semaphore_free(a->sem[i]); /* releases the lease, if held */
    a->sem[i] = NULL;
  }
  a->lease = NULL;
  for (int i = 0; i < a->n; i++) {
    if (a->rw[i])
      zkrc_rwlock_free(a->rw[i]);
    else if (a->lk[i])
      zkrc_lock_free(a->lk[i]);
    a->rw[i] = NULL;
    a->lk[i] = NULL;
  }
}

/* Give up waiting.  One lock: free it (the acquirer returns
 * ZKRC_ECANCELED and touches it no more).  Several: the acquirer is inside
 * zkrc_multilock_acquire(), which goes on using the other locks (it gives
 * back those it took), so they must stay: close the session instead, which
 * ends the wait with ZKRC_ECLOSED; the locks are freed after the join. */
static void cancel_acquisition(acquirer *a) {
  g_mutex_lock(&a->mu);
  a->cancelled = 1;
  if (a->n == 1)
    free_locks(a);
  g_mutex_unlock(&a->mu);
  if (a->n > 1) {
    a->session_closed = 1;
    zkrc_session_close(a->s);
  }
}

/* Signals while waiting: a stop signal gives up (returns 128+N); ^Z stops
 * us; the rest are for a COMMAND that does not run yet. */
static int signals_while_waiting(lock_cli *cli, acquirer *a) {
  tool_signal sig;
  tool_child none = {0};
  while (tool_next_signal(&sig)) {
    if (!tool_is_stop_signal(sig.signo)) {
      tool_child_forward(&none, &sig, &cli->o, 1);
      continue;
    }
    tool_verbose("signal %s while waiting: giving up", sigabbrev_np(sig.signo));
    cancel_acquisition(a);
    return 128 + sig.signo;
  }
  return 0;
}

/* Is the session's lease live, for the watchdog: more than the margin
 * COMMAND's SIGKILL keeps before its deadline (a LOST is told just
 * before the deadline: the watchdog is fed no more by then). */
static int lease_live(zkrc_session *s) {
  return zkrc_session_lease_remaining(s) > 2 * TOOL_KILL_MARGIN_MS;
}

/* Wait for the acquiring thread's verdict while answering signals.  Returns
 * 1 when the locks are held (a->tokens, a->nodes set); else 0 with the exit
 * status in *status (which -E may make 0).  A LOST that overtook the
 * verdict (the callback thread posts it, the acquirer its result) sets
 * *lost_early: the hold is gone before COMMAND could start. */
static int wait_for_lock(lock_cli *cli, zkrc_session *s, acquirer *a,
                         int *status, int *lost_early) {
  for (;;) {
    tool_wait(tool_notify_watchdog(lease_live(s), -1));
    if ((*status = signals_while_waiting(cli, a)) != 0)
      return 0;
    tool_event ev;
    while (tool_next_event(&ev)) {
      if (ev.kind == TOOL_EV_SESSION && ev.code == ZKRC_SESSION_EVENT_CONNECTED)
        tool_verbose("new ZooKeeper session");
      if (ev.kind == TOOL_EV_LOCK && ev.code == ZKRC_LOCK_LOST)
        *lost_early = 1;
      if (ev.kind == TOOL_EV_LOCK && ev.code == ZKRC_LOCK_REVOKE_REQUESTED) {
        /* Asked to give up our place (zkr revoke NODE): do. */
        tool_event_clear(&ev);
        tool_error("revocation of %s requested while waiting: giving up",
                   cli->path);
        cancel_acquisition(a);
        *status = cli->conflict_code;
        return 0;
      }
      if (ev.kind != TOOL_EV_ACQUIRED) {
        tool_event_clear(&ev);
        continue;
      }
      if (ev.code == ZKRC_OK)
        return 1;
      tool_event_clear(&ev);
      *status = not_acquired_status(cli, s, ev.code);
      return 0;
    }
  }
}

/* ----------------------------------------------------------- supervision */

typedef struct supervision {
  lock_cli *cli;
  zkrc_session *s;
  tool_child child;
  int lost;
  int revoked; /* --revocable: a revocation was requested */
} supervision;

/* The lock is gone: stop COMMAND (the lease check keeps the grace within
 * the hold's last deadline). */
static void lock_lost(supervision *sv, int reason) {
  if (sv->lost)
    return;
  sv->lost = 1;
  tool_error("lock %s lost (%s): stopping COMMAND with SIG%s", sv->cli->path,
             zkrc_strerror(reason), sigabbrev_np(sv->cli->o.lost_signal));
  tool_notify("STATUS=lock %s lost (%s): stopping COMMAND", sv->cli->path,
              zkrc_strerror(reason));
  tool_child_stop(&sv->child, sv->cli->o.lost_signal, sv->cli->o.grace_ms);
}

/* --revocable: asked to give the lock up.  Stop COMMAND as on a loss;
 * the lock is released once it exits. */
static void revocation_requested(supervision *sv) {
  if (sv->revoked || sv->lost)
    return;
  sv->revoked = 1;
  tool_error("revocation of %s requested: stopping COMMAND with SIG%s",
             sv->cli->path, sigabbrev_np(sv->cli->o.lost_signal));
  tool_notify("STATUS=revocation of %s requested: stopping COMMAND",
              sv->cli->path);
  tool_child_stop(&sv->child, sv->cli->o.lost_signal, sv->cli->o.grace_ms);
}

static void supervise_once(supervision *sv) {
  /* The session's lease is the lock's while we hold it (our thread does
   * not: zkrc_lock_lease_remaining is the acquiring thread's). */
  int remaining = sv->lost ? 0 : zkrc_session_lease_remaining(sv->s);
  int timeout =
      tool_child_lease(&sv->child, remaining, zkrc_session_lease_floor(sv->s),
                       &sv->cli->o, tool_child_timeout(&sv->child, -1));
  if (sv->child.lease_ran_out && !sv->lost) {
    sv->lost = 1;
    tool_notify("STATUS=lock %s lost (the lease runs out): stopping COMMAND",
                sv->cli->path);
  }
  tool_wait(tool_notify_watchdog(!sv->lost && lease_live(sv->s), timeout));
  tool_signal sig;
  while (tool_next_signal(&sig)) {
    int lease_ok = !sv->lost && zkrc_session_lease_remaining(sv->s) >
                                    2 * TOOL_KILL_MARGIN_MS;
    tool_child_forward(&sv->child, &sig, &sv->cli->o, lease_ok);
  }
  tool_event ev;
  while (tool_next_event(&ev)) {
    if (ev.kind == TOOL_EV_LOCK && ev.code == ZKRC_LOCK_LOST)
      lock_lost(sv, ev.reason);
    else if (ev.kind == TOOL_EV_LOCK && ev.code == ZKRC_LOCK_REVOKE_REQUESTED)
      revocation_requested(sv);
    else if (ev.kind == TOOL_EV_LOCK)
      tool_verbose("lock %s: %s", sv->cli->path,
                   zkrc_lock_event_name((zkrc_lock_event_type)ev.code));
    tool_event_clear(&ev);
  }
}

/* May COMMAND start?  Not after a LOST that came behind the grant, and
 * only with a lease long enough for its grace period (as zkr-elect);
 * while renewals are late, look again every 100 ms: the lease recovers
 * or runs out, within a session timeout.  1: start; 0: the lock is lost. */
static int ready_to_start(supervision *sv) {
  for (;;) {
    tool_event ev;
    while (tool_next_event(&ev)) {
      if (ev.kind == TOOL_EV_LOCK && ev.code == ZKRC_LOCK_LOST)
        sv->lost = 1;
      if (ev.kind == TOOL_EV_LOCK && ev.code == ZKRC_LOCK_REVOKE_REQUESTED)
        sv->revoked = 1;
      tool_event_clear(&ev);
    }
    int remaining = zkrc_session_lease_remaining(sv->s);
    if (sv->lost || sv->revoked || remaining <= 0)
      return 0;
    if (tool_lease_allows_start(remaining, zkrc_session_lease_floor(sv->s),
                                &sv->cli->o))
      return 1;
    tool_verbose("lease of %s too short (%d ms): COMMAND waits", sv->cli->path,
                 remaining);
    tool_wait(tool_notify_watchdog(lease_live(sv->s), 100));
  }
}

/* Run COMMAND while the lock is held.  Returns zkr lock's exit status. */
/* COMMAND's environment: the first lock's path, node and token as with
 * one lock, the count, and each lock's numbered from 1 (g_strfreev). */
static char **command_env(lock_cli *cli, const acquirer *a) {
  GPtrArray *env = g_ptr_array_new();
  char number[24];
  tool_env_add(env, "ZKR_PATH", "ZKR_LOCK_PATH", cli->paths[0]);
  tool_env_add(env, "ZKR_NODE", "ZKR_LOCK_NODE", a->nodes[0]);
  snprintf(number, sizeof number, "%" PRId64, a->tokens[0]);
  tool_env_add(env, "ZKR_FENCING_TOKEN", NULL, number);
  snprintf(number, sizeof number, "%d", a->n);
  tool_env_add(env, "ZKR_COUNT", "ZKR_LOCK_COUNT", number);
  for (int i = 0; i < a->n; i++) {
    char name[48], old[48];
    snprintf(name, sizeof name, "ZKR_PATH_%d", i + 1);
    snprintf(old, sizeof old, "ZKR_LOCK_PATH_%d", i + 1);
    tool_env_add(env, name, old, cli->paths[i]);
    snprintf(name, sizeof name, "ZKR_NODE_%d", i + 1);
    snprintf(old, sizeof old, "ZKR_LOCK_NODE_%d", i + 1);
    tool_env_add(env, name, old, a->nodes[i]);
    snprintf(name, sizeof name, "ZKR_FENCING_TOKEN_%d", i + 1);
    snprintf(number, sizeof number, "%" PRId64, a->tokens[i]);
    tool_env_add(env, name, NULL, number);
  }
  tool_env_add(env, "ZKR_PARTICIPANT_ID", NULL, cli->id);
  g_ptr_array_add(env, NULL);
  return (char **)g_ptr_array_free(env, FALSE);
}

static int run_locked(lock_cli *cli, zkrc_session *s, const acquirer *a) {
  char **env = command_env(cli, a);
  supervision sv = {.cli = cli, .s = s};
  if (!ready_to_start(&sv)) {
    g_strfreev(env);
    if (sv.revoked && !sv.lost) {
      tool_error("revocation of %s requested before COMMAND could start",
                 cli->path);
      return cli->conflict_code;
    }
    tool_error("lock %s lost before COMMAND could start", cli->path);
    return TOOL_EXIT_LOST;
  }
  int status = tool_child_start(&sv.child, cli->command, env, &cli->o);
  g_strfreev(env);
  if (status != 0)
    return status;
  tool_verbose("running %s (pid %d)", cli->command[0], (int)sv.child.pid);
  tool_notify("READY=1\nSTATUS=holding %s (fencing token %" PRId64
              "), running %s",
              cli->path, a->tokens[0], cli->command[0]);
  while (!tool_child_poll(&sv.child))
    supervise_once(&sv);
  tool_verbose("COMMAND exited with status %d", sv.child.status);
  /* Nothing COMMAND started may go on without the lock. */
  tool_child_end(&sv.child, sv.lost);
  return sv.lost ? TOOL_EXIT_LOST : sv.child.status;
}

/* No COMMAND: print each lock's node and token, then hold until SIGINT or
 * SIGTERM (0) or until a lock is lost (75). */
static int hold_until_signalled(lock_cli *cli, zkrc_session *s,
                                const acquirer *a) {
  for (int i = 0; i < a->n; i++)
    printf("%s\t%" PRId64 "\n", a->nodes[i], a->tokens[i]);
  if (fflush(stdout) != 0 || ferror(stdout)) {
    tool_error("standard output: %s", strerror(errno));
    return TOOL_EXIT_IOERR;
  }
  /* Ready only for a hold still there: no LOST behind the grant, and a
   * lease (as COMMAND's start checks it). */
  supervision sv = {.cli = cli, .s = s};
  if (!ready_to_start(&sv)) {
    if (sv.revoked && !sv.lost) {
      tool_verbose("revocation of %s requested: releasing", cli->path);
      return TOOL_EXIT_OK;
    }
    tool_error("lock %s lost", cli->path);
    tool_notify("STATUS=lock %s lost", cli->path);
    return TOOL_EXIT_LOST;
  }
  tool_notify("READY=1\nSTATUS=holding %s (fencing token %" PRId64 ")",
              cli->path, a->tokens[0]);
  for (;;) {
    tool_wait(tool_notify_watchdog(lease_live(s), -1));
    tool_signal sig;
    while (tool_next_signal(&sig))
      if (tool_is_stop_signal(sig.signo)) {
        tool_notify("STOPPING=1\nSTATUS=releasing %s", cli->path);
        tool_verbose("signal %s: releasing %s", sigabbrev_np(sig.signo),
                     cli->path);
        return TOOL_EXIT_OK;
      }
    tool_event ev;
    while (tool_next_event(&ev)) {
      int lost = ev.kind == TOOL_EV_LOCK && ev.code == ZKRC_LOCK_LOST;
      int revoked =
          ev.kind == TOOL_EV_LOCK && ev.code == ZKRC_LOCK_REVOKE_REQUESTED;
      int reason = ev.reason;
      tool_event_clear(&ev);
      if (revoked) {
        tool_notify("STOPPING=1\nSTATUS=revocation requested: releasing %s",
                    cli->path);
        tool_verbose("revocation of %s requested: releasing", cli->path);
        return TOOL_EXIT_OK;
      }
      if (lost) {
        tool_error("lock %s lost (%s)", cli->path, zkrc_strerror(reason));
        tool_notify("STATUS=lock %s lost (%s)", cli->path,
                    zkrc_strerror(reason));
        return TOOL_EXIT_LOST;
      }
    }
    (void)s;
  }
}

/* ----------------------------------------------------------------- main */

/* The lock on @p path the command line asks for: a mutex, or a side of a
 * read-write lock (then *rw owns it). */
static int new_lock(lock_cli *cli, zkrc_session *s, const char *path,
                    zkrc_lock **lk, zkrc_rwlock **rw) {
  *rw = NULL;
  if (cli->mode == MODE_MUTEX) {
    zkrc_lock_options lo;
    zkrc_lock_options_init(&lo);
    lo.participant_id = cli->id;
    lo.on_event = on_lock_event;
    lo.revocable = cli->revocable;
    lo.format = cli->format;
    return zkrc_lock_new(lk, s, path, &lo);
  }
  zkrc_rwlock_options ro;
  zkrc_rwlock_options_init(&ro);
  ro.participant_id = cli->id;
  ro.on_event = on_lock_event;
  ro.revocable = cli->revocable;
  int err = zkrc_rwlock_new(rw, s, path, &ro);
  if (err == ZKRC_OK)
    *lk = cli->mode == MODE_SHARED ? zkrc_rwlock_reader(*rw)
                                   : zkrc_rwlock_writer(*rw);
  return err;
}

static void acquirer_clear(acquirer *a) {
  free_locks(a);
  for (int i = 0; i < a->n; i++)
    free(a->nodes[i]);
  g_free(a->lk);
  g_free(a->rw);
  g_free(a->sem);
  g_free(a->tokens);
  g_free(a->nodes);
  g_mutex_clear(&a->mu);
}

/* Returns the exit status; *session_closed when the session was closed
 * here (the caller must not close it again). */
static int new_semaphore(lock_cli *cli, zkrc_session *s, const char *path,
                         zkrc_semaphore **sem) {
  zkrc_semaphore_options so;
  zkrc_semaphore_options_init(&so);
  so.participant_id = cli->id;
  so.on_event = on_lease_event;
  return zkrc_semaphore_new(sem, s, path, cli->limit, &so);
}

/* Several LOCKPATHs: one set of them all. */
static int new_set(acquirer *a) {
  int err = zkrc_multilock_new(&a->ml);
  for (int i = 0; i < a->n && err == ZKRC_OK; i++)
    err = a->sem ? zkrc_multilock_add_semaphore(a->ml, a->sem[i])
                 : zkrc_multilock_add_lock(a->ml, a->lk[i]);
  return err;
}

static int lock_and_run(lock_cli *cli, zkrc_session *s, int *session_closed) {
  tool_notify("STATUS=waiting for %s", cli->path);
  acquirer a = {.n = cli->n_paths, .wait_ms = cli->wait_ms, .s = s, .cli = cli};
  g_mutex_init(&a.mu);
  a.lk = g_new0(zkrc_lock *, a.n);
  a.rw = g_new0(zkrc_rwlock *, a.n);
  if (cli->limit)
    a.sem = g_new0(zkrc_semaphore *, a.n);
  a.tokens = g_new0(int64_t, a.n);
  a.nodes = g_new0(char *, a.n);
  int err = ZKRC_OK;
  for (int i = 0; i < a.n && err == ZKRC_OK; i++)
    err = cli->limit ? new_semaphore(cli, s, cli->paths[i], &a.sem[i])
                     : new_lock(cli, s, cli->paths[i], &a.lk[i], &a.rw[i]);
  if (err == ZKRC_OK && a.n > 1)
    err = new_set(&a);
  if (err != ZKRC_OK) {
    acquirer_clear(&a);
    return tool_fail("cannot create the lock", err);
  }
  GThread *thread = g_thread_new("zkr-lock-acquire", acquire_main, &a);
  int status = 0, lost_early = 0;
  int held = wait_for_lock(cli, s, &a, &status, &lost_early);
  g_thread_join(thread);
  if (held && lost_early) {
    tool_error("lock %s lost before COMMAND could start", cli->path);
    status = TOOL_EXIT_LOST;
  } else if (held) {
    for (int i = 0; i < a.n; i++)
      tool_verbose("acquired %s: node %s, fencing token %" PRId64,
                   cli->paths[i], a.nodes[i], a.tokens[i]);
    status = cli->command ? run_locked(cli, s, &a)
                          : hold_until_signalled(cli, s, &a);
  }
  /* Freeing releases: the next waiter wakes. */
  if (held && !a.cancelled && status != TOOL_EXIT_LOST)
    tool_verbose("released %s", cli->path);
  *session_closed = a.session_closed;
  acquirer_clear(&a);
  return status;
}

/* What parse_args() allocated, and the participant id. */
static void lock_cli_clear(lock_cli *cli) {
  if (cli->n_paths > 1)
    g_free((char *)cli->path); /* the paths joined */
  if (cli->shell_command && cli->command)
    g_free(cli->command); /* tool_shell_command()'s array */
  g_free(cli->paths);
  g_free(cli->id);
}

static int lock_main(lock_cli *cli) {
  check_paths(cli);
  zkrc_session *s;
  /* No new session after an expiry: by then the lock is lost anyway. */
  int status = tool_start_session(&cli->o, 1, &s);
  if (status != 0)
    return status;
  cli->id = tool_participant_id(&cli->o);
  int closed = 0;
  status =
      cli->holders ? print_all_holders(cli, s) : lock_and_run(cli, s, &closed);
  if (!closed)
    zkrc_session_close(s);
  return status;
}

int cmd_lock(const char *program, int argc, char **argv) {
  lock_cli cli;
  memset(&cli, 0, sizeof cli);
  parse_args(&cli, program, argc, argv);
  int status = lock_main(&cli);
  lock_cli_clear(&cli);
  return status;
}
