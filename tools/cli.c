/*
 * tools/cli.c - the option table of every zkr subcommand, the parser they
 * share and their --help (see cli.h).
 *
 * The letters follow flock(1) where the lock has one of flock's options
 * (-s shared, -x/-e exclusive, -n nonblock, -w wait, -E conflict exit
 * code, -c command), and mean the same in every subcommand; the servers
 * are --servers (etcdctl's --endpoints, without a letter: -s is flock's).
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "cli.h"

#define L CLI_LOCK
#define E CLI_ELECT
#define LS CLI_LS
#define W CLI_WATCH
#define M CLI_MEMBERS
#define H CLI_HEALTH
#define C CLI_COUNTER
#define NO_CMD CLI_NO_COMMAND

/* In --help order: what every subcommand takes first, then the rest. */
const cli_option cli_options[] = {
    {OPT_SERVERS, "servers", 0, "HOSTS", CLI_ALL, 0,
     "ZooKeeper servers, host:port[,host:port...][/chroot] (default: "
     "$ZKR_SERVERS, else 127.0.0.1:2181)"},
    {'t', "session-timeout", 't', "MS", CLI_ALL, 0,
     "session timeout in ms (default 10000)"},
    {OPT_CONNECT_TIMEOUT, "connect-timeout", 0, "SECONDS", CLI_ALL, 0,
     "wait at most this long for a connection and a session (fractions "
     "allowed; default 5); servers that refuse are reported at once"},
    /* zkr lock */
    {'w', "wait", 'w', "SECONDS", L, 0,
     "wait at most this long for the lock, once connected (fractions "
     "allowed; 0 means -n; also --timeout); default: no limit"},
    {'w', "timeout", 0, "SECONDS", L, 0, NULL},
    {'n', "nonblock", 'n', NULL, L, 0,
     "do not wait: fail if another holder has it (also --nb)"},
    {'n', "nb", 0, NULL, L, 0, NULL},
    {'s', "shared", 's', NULL, L, 0,
     "take the read side of the read-write lock on LOCKPATH (Curator's "
     "InterProcessReadWriteLock): shared with other readers, excluded by "
     "writers"},
    {'x', "exclusive", 'x', NULL, L, 0,
     "take its write side (also -e): alone (readers, writers and plain "
     "locks all exclude it)"},
    {'x', NULL, 'e', NULL, L, 0, NULL},
    {OPT_LIMIT, "limit", 0, "N", L, 0,
     "take one of N leases of the semaphore on LOCKPATH (Curator's "
     "InterProcessSemaphoreV2), like consul lock -n: at most N commands run "
     "at once (one lease of each, with several LOCKPATHs)"},
    {'E', "conflict-exit-code", 'E', "CODE", L, 0,
     "exit status when the lock was not acquired (-n, -w), 0 to 255 "
     "(default 1)"},
    {OPT_HOLDERS, "holders", 0, NULL, L, NO_CMD,
     "print the contenders of each LOCKPATH in queue order, the holder "
     "first: one line each, \"ID<TAB>NODE\"; nothing when there are none"},
    {OPT_REVOCABLE, "revocable", 0, NULL, L, 0,
     "a revocable lock (Curator's makeRevocable): when zkr revoke or "
     "Curator's Revoker asks, COMMAND gets the lost signal and the lock is "
     "released once it exits; without COMMAND, released at once"},
    {OPT_FORMAT, "format", 0, "FORMAT", L, 0,
     "the contender nodes' format: curator (InterProcessMutex's, the "
     "default) or kazoo (kazoo's \"__lock__\": a kazoo Lock not told "
     "about Curator's names sees them); not with --shared, -x or --limit"},
    /* zkr elect */
    {OPT_ONCE, "once", 0, NULL, E, 0, "run COMMAND at most once, then exit"},
    {OPT_READY_ON, "ready-on", 0, "EVENT", E, 0,
     "under systemd (NOTIFY_SOCKET): say READY=1 once \"elected\" (the "
     "default) or once \"joined\" (a standby is then active too)"},
    {OPT_REJOIN_DELAY, "rejoin-delay", 0, "SECONDS", E, 0,
     "after COMMAND exited by itself, wait this long before rejoining "
     "(default 1)"},
    {OPT_LEADER, "leader", 0, NULL, E, NO_CMD,
     "print the current leader's id and exit (status 3 when there is none)"},
    {OPT_HOLDERS, "holders", 0, NULL, E, NO_CMD,
     "print the participants in line, the leader first, one per line: "
     "\"ID<TAB>NODE\" (as zkr lock --holders)"},
    {OPT_WATCH, "watch", 0, NULL, E, NO_CMD,
     "print \"TIME<TAB>ID<TAB>TOKEN\" now and at each change of leader "
     "(above)"},
    /* zkr ls */
    {'r', "recursive", 'r', NULL, LS, 0,
     "list every queue in the subtree of PATH (PATH itself included), depth "
     "first, children in byte order; PATH may be /"},
    /* zkr watch */
    {OPT_CHILDREN, "children", 0, NULL, W, 0,
     "watch the children of PATH (not PATH)"},
    {'r', "recursive", 'r', NULL, W, 0,
     "watch PATH and all its descendants (also --tree)"},
    {'r', "tree", 0, NULL, W, 0, NULL},
    {'d', "depth", 'd', "N", W, 0,
     "with -r: down to N levels below PATH (0: PATH alone; default: no "
     "limit)"},
    {'i', "initial", 'i', NULL, W, 0,
     "first report the nodes there are now, as added (COMMAND runs for "
     "each)"},
    {OPT_COUNT, "count", 0, "N", W, 0, "exit (status 0) after N changes"},
    {OPT_EXIT_ON_ERROR, "exit-on-error", 0, NULL, W, 0,
     "exit when COMMAND fails, with its status"},
    /* zkr members */
    {OPT_WATCH, "watch", 0, NULL, M, 0, "follow the group (above)"},
    {OPT_SERVICE, "service", 0, "NAME", M, 0,
     "the instances of service NAME under BASE"},
    {'i', "initial", 'i', NULL, M, 0,
     "with --watch: first report the members there are now, as joined"},
    {OPT_COUNT, "count", 0, "N", M, 0,
     "with --watch: exit (status 0) after N changes"},
    {OPT_FORMAT, "format", 0, "FORMAT", M, 0,
     "the group's node format: curator (GroupMember; the default), party or "
     "shallow-party (kazoo's)"},
    /* zkr counter */
    {OPT_FORMAT, "format", 0, "FORMAT", C, 0,
     "the node's format: curator (SharedCount, 4 bytes; the default), "
     "atomic-long (DistributedAtomicLong, 8 bytes) or kazoo (text)"},
    /* zkr barrier, zkr double-barrier */
    {'w', "wait", 'w', "SECONDS", CLI_BARRIER, 0,
     "wait: at most this long for the barrier to go (fractions allowed; 0: "
     "look once; also --timeout); default: no limit"},
    {'w', "timeout", 0, "SECONDS", CLI_BARRIER, 0, NULL},
    {'w', "wait", 'w', "SECONDS", CLI_DOUBLE_BARRIER, 0,
     "wait at most this long for N members to be in (fractions allowed; "
     "also --timeout); default: no limit"},
    {'w', "timeout", 0, "SECONDS", CLI_DOUBLE_BARRIER, 0, NULL},
    {OPT_FORMAT, "format", 0, "FORMAT", CLI_DOUBLE_BARRIER, 0,
     "the member's node format: curator (Curator's "
     "DistributedDoubleBarrier, the default) or kazoo (kazoo's "
     "DoubleBarrier)"},
    {'c', "command", 'c', "STRING", CLI_DOUBLE_BARRIER, NO_CMD,
     "COMMAND is STRING, run by /bin/sh -c (before PATH N: after N, words "
     "are COMMAND's)"},
    {'k', "lost-signal", 'k', "SIGNAL", CLI_DOUBLE_BARRIER, 0,
     "signal COMMAND gets when this member is lost (name or number; "
     "default TERM)"},
    {'g', "grace", 'g', "SECONDS", CLI_DOUBLE_BARRIER, 0,
     "then SIGKILL after this long (default 5; shortened to fit the lease)"},
    {OPT_ID, "id", 0, "ID", CLI_DOUBLE_BARRIER, 0,
     "with --format kazoo: the id stored in our node (default "
     "HOSTNAME:PID)"},
    /* Printing */
    {OPT_JSON, "json", 0, NULL, H | C, 0, "JSON instead: one object, one line"},
    {OPT_JSON, "json", 0, NULL, LS | W | M, 0,
     "JSON instead (see the subcommand's page): a listing as one document, "
     "each change as one line"},
    {OPT_JSON, "json", 0, NULL, L | E, 0,
     "with --holders, --leader or --watch: JSON instead, one document per "
     "line (a listing, a leader, a change)"},
    /* Running COMMAND */
    {'c', "command", 'c', "STRING", L | E, NO_CMD,
     "COMMAND is STRING, run by /bin/sh -c (as flock -c)"},
    /* Not -c in zkr watch: it was --children there in 0.1. */
    {'c', "command", 0, "STRING", W, NO_CMD,
     "COMMAND is STRING, run by /bin/sh -c (-c is not taken here: it was "
     "--children in 0.1)"},
    {'k', "lost-signal", 'k', "SIGNAL", L | E, 0,
     "signal COMMAND gets when the lock or leadership is lost (name or "
     "number; default TERM)"},
    {'g', "grace", 'g', "SECONDS", L | E, 0,
     "then SIGKILL after this long (default 5; shortened to fit the lease)"},
    {'g', "grace", 'g', "SECONDS", W, 0,
     "after a stop signal, SIGKILL a running COMMAND after this long "
     "(default 5)"},
    {OPT_FOREGROUND, "foreground", 0, NULL, CLI_RUNS, 0,
     "keep COMMAND in our process group (for a COMMAND that reads the "
     "terminal)"},
    {OPT_ID, "id", 0, "ID", L | E, 0,
     "participant id stored in our node (default HOSTNAME:PID)"},
    /* Every subcommand again */
    {OPT_SERVER_TICK, "server-tick", 0, "MS", CLI_ALL, 0,
     "the servers' tickTime, for the lease (default 2000, at most half of "
     "-t)"},
    {OPT_AUTH_FILE, "auth-file", 0, "FILE", CLI_ALL, 0,
     "authenticate (digest) with the USER:PASSWORD on FILE's first line "
     "(also $ZKR_AUTH_FILE); with --sasl-user, FILE's first line is the "
     "password"},
    {OPT_SASL_USER, "sasl-user", 0, "USER", CLI_ALL, 0,
     "authenticate with SASL (DIGEST-MD5) as USER, the password on the first "
     "line of --auth-file (also $ZKR_SASL_USER)"},
    {OPT_TLS_CA, "tls-ca", 0, "FILE", CLI_ALL, 0,
     "connect over TLS, checking the servers' certificates against this CA "
     "(PEM; also $ZKR_TLS_CA); needs --tls-cert and --tls-key"},
    {OPT_TLS_CERT, "tls-cert", 0, "FILE", CLI_ALL, 0,
     "the client's certificate chain for TLS (PEM; also $ZKR_TLS_CERT)"},
    {OPT_TLS_KEY, "tls-key", 0, "FILE", CLI_ALL, 0,
     "the client's private key for TLS (PEM; also $ZKR_TLS_KEY)"},
    {'v', "verbose", 'v', NULL, CLI_ALL, 0,
     "report progress on stderr, including the session id (never its "
     "password)"},
    {'h', "help", 'h', NULL, CLI_ALL, 0, "show this help and exit"},
    {'V', "version", 'V', NULL, CLI_ALL, 0, "show the version and exit"},
    {0, NULL, 0, NULL, 0, 0, NULL},
};

/* Letters that meant something else before 0.2 (or in another
 * subcommand), with what to type instead: an unknown option's hint. */
static const struct moved_letter {
  int letter;
  unsigned commands; /* where the letter is unknown now */
  const char *hint;
} moved_letters[] = {
    {'s', E | LS | W | M,
     "the servers are --servers; -s is zkr lock's --shared, as in flock"},
    {'n', W | M, "a count is --count"},
    {'w', M, "following the group is --watch"},
    {'r', E, "the delay before rejoining is --rejoin-delay"},
    {'e', W, "that is --exit-on-error"},
    {'c', W,
     "watching the children is --children; a shell COMMAND is --command"},
    {0, 0, NULL},
};

/* ------------------------------------------------------------ look-ups */

static const cli_option *by_letter(cli_command cmd, int letter) {
  for (const cli_option *o = cli_options; o->id; o++)
    if (o->letter == letter && (o->commands & cmd))
      return o;
  return NULL;
}

/* The entry of a long option, by its full name or an unambiguous prefix
 * (as getopt_long takes it); NULL when unknown or ambiguous. */
static const cli_option *by_name(cli_command cmd, const char *name,
                                 size_t len) {
  const cli_option *found = NULL;
  for (const cli_option *o = cli_options; o->id; o++) {
    if (!o->name || !(o->commands & cmd) || strncmp(o->name, name, len) != 0)
      continue;
    if (strlen(o->name) == len)
      return o;
    if (found && found->id != o->id)
      return NULL;
    found = o;
  }
  return found;
}

/* --------------------------------------------------------- the prescan */

/* Classify the option word argv[i]: its index (and its value's, when the
 * value is the next word) go to option_words; returns the index after it.
 * *no_command is set by an option that leaves no COMMAND.  An unknown
 * option is taken as one without a value: getopt_long reports it. */
static int take_option(cli_command cmd, int argc, char *const *argv, int i,
                       int *words, int *n, int *no_command) {
  const char *w = argv[i];
  words[(*n)++] = i;
  const cli_option *o = NULL;
  int value_inline = 0;
  if (w[1] == '-') {
    const char *eq = strchr(w + 2, '=');
    size_t len = eq ? (size_t)(eq - w - 2) : strlen(w + 2);
    o = by_name(cmd, w + 2, len);
    value_inline = eq != NULL;
  } else {
    /* A cluster (-nv, -w5): the first letter with a value ends it. */
    for (const char *p = w + 1; *p; p++) {
      o = by_letter(cmd, (unsigned char)*p);
      if (o && o->flags & CLI_NO_COMMAND)
        *no_command = 1;
      if (o && o->value) {
        value_inline = p[1] != '\0';
        break;
      }
    }
  }
  if (o && o->flags & CLI_NO_COMMAND)
    *no_command = 1;
  if (o && o->value && !value_inline && i + 1 < argc)
    words[(*n)++] = ++i;
  return i + 1;
}

static int is_option_word(const char *w) {
  return w[0] == '-' && w[1] != '\0' && strcmp(w, "--") != 0;
}

/* CLI_PATHS_COMMAND: are the words from @p from to the first "--" all
 * absolute paths (as in 0.1: no options among them, which may as well be
 * COMMAND's own)?  Returns the index of that "--", or -1. */
static int paths_until_dashes(int argc, char *const *argv, int from) {
  for (int i = from; i < argc; i++) {
    if (strcmp(argv[i], "--") == 0)
      return i;
    if (argv[i][0] != '/')
      return -1;
  }
  return -1;
}

int cli_split(cli_command cmd, cli_layout layout, int argc, char *const *argv,
              int *option_words, int *n_option_words, int *path_words,
              int *n_path_words) {
  *n_option_words = *n_path_words = 0;
  int no_command = 0, options_done = 0;
  for (int i = 1; i < argc;) {
    const char *w = argv[i];
    if (strcmp(w, "--") == 0 && !options_done && *n_path_words == 0 &&
        layout != CLI_PATHS && !no_command) {
      /* Before the path, "--" only ends the options (as getopt's). */
      options_done = 1;
      i++;
      continue;
    }
    if (strcmp(w, "--") == 0) {
      /* After the path: the rest are paths, or COMMAND. */
      if (layout == CLI_PATHS || no_command) {
        for (int j = i + 1; j < argc; j++)
          path_words[(*n_path_words)++] = j;
        return argc;
      }
      return i + 1;
    }
    if (!options_done && is_option_word(w)) {
      i = take_option(cmd, argc, argv, i, option_words, n_option_words,
                      &no_command);
      continue;
    }
    int command_here =
        *n_path_words >= 1 && !no_command &&
        (layout == CLI_PATH_COMMAND || layout == CLI_PATHS_COMMAND);
    /* Several LOCKPATHs, when a -- ends them. */
    if (command_here && layout == CLI_PATHS_COMMAND &&
        paths_until_dashes(argc, argv, i) > 0)
      command_here = 0;
    if (command_here)
      return i;
    path_words[(*n_path_words)++] = i;
    i++;
  }
  return argc;
}

/* ------------------------------------------------------------- parsing */

static const char *letter_hint(cli_command cmd, int letter) {
  for (const struct moved_letter *m = moved_letters; m->letter; m++)
    if (m->letter == letter && (m->commands & cmd))
      return m->hint;
  return NULL;
}

/* getopt_long's tables for @p cmd (g_free both). */
static void getopt_tables(cli_command cmd, char **shortopts,
                          struct option **longopts) {
  GString *s = g_string_new("+:"); /* the words come ordered: see below */
  GArray *l = g_array_new(TRUE, TRUE, sizeof(struct option));
  for (const cli_option *o = cli_options; o->id; o++) {
    if (!(o->commands & cmd))
      continue;
    if (o->letter && !strchr(s->str + 2, o->letter)) {
      g_string_append_c(s, (char)o->letter);
      if (o->value)
        g_string_append_c(s, ':');
    }
    if (o->name) {
      struct option lo = {o->name, o->value ? required_argument : no_argument,
                          NULL, o->id};
      g_array_append_val(l, lo);
    }
  }
  *shortopts = g_string_free(s, FALSE);
  *longopts = (struct option *)(void *)g_array_free(l, FALSE);
}

/* What every subcommand takes; 1 when @p id was one of those. */
static int common_option(const cli_spec *spec, tool_options *o, int id,
                         const char *arg) {
  switch (id) {
  case OPT_SERVERS:
    if (*arg == '\0')
      tool_usage_error("the server list (--servers) is empty");
    o->servers = arg;
    return 1;
  case 't':
    o->session_timeout_ms =
        tool_parse_int(arg, 1, 3600000, "the session timeout (ms)");
    return 1;
  case OPT_CONNECT_TIMEOUT:
    o->connect_timeout_ms = tool_parse_seconds(arg, "--connect-timeout");
    if (o->connect_timeout_ms == 0)
      tool_usage_error("--connect-timeout must be more than 0");
    return 1;
  case 'k':
    o->lost_signal = tool_parse_signal(arg, "--lost-signal");
    return 1;
  case 'g':
    o->grace_ms = tool_parse_seconds(arg, "--grace");
    return 1;
  case 'v':
    tool_set_verbose(o);
    return 1;
  case 'h':
    cli_print_help(spec, stdout);
    exit(fflush(stdout) == 0 ? TOOL_EXIT_OK : TOOL_EXIT_IOERR);
  case 'V':
    printf("%s (%s) %s\n", tool_program(), PACKAGE_NAME, PACKAGE_VERSION);
    exit(fflush(stdout) == 0 ? TOOL_EXIT_OK : TOOL_EXIT_IOERR);
  case OPT_ID:
    if (*arg == '\0')
      tool_usage_error("the participant id (--id) is empty");
    o->id = arg;
    return 1;
  case OPT_FOREGROUND:
    o->foreground = 1;
    return 1;
  case OPT_SERVER_TICK:
    o->server_tick_ms = tool_parse_int(arg, 1, 3600000,
                                       "the servers' tick (--server-tick, ms)");
    return 1;
  case OPT_AUTH_FILE:
    o->auth_file = arg;
    return 1;
  case OPT_SASL_USER:
    o->sasl_user = arg;
    return 1;
  case OPT_TLS_CA:
    o->tls_ca = arg;
    return 1;
  case OPT_TLS_CERT:
    o->tls_cert = arg;
    return 1;
  case OPT_TLS_KEY:
    o->tls_key = arg;
    return 1;
  }
  return 0;
}

static void unknown_option(const cli_spec *spec, const char *word, int letter) {
  const char *hint = letter ? letter_hint(spec->command, letter) : NULL;
  if (hint)
    tool_usage_error("unknown option: %s (%s)", word, hint);
  tool_usage_error("unknown option: %s", word);
}

/* The options, in the order given: getopt_long over just the option words
 * (so that no environment variable can stop the permutation). */
static void parse_options(const cli_spec *spec, tool_options *o, int n,
                          char **words, cli_option_fn fn, void *ctx) {
  char *shortopts;
  struct option *longopts;
  getopt_tables(spec->command, &shortopts, &longopts);
  opterr = 0; /* our own messages */
  optind = 0; /* start afresh (glibc) */
  int c;
  while ((c = getopt_long(n, words, shortopts, longopts, NULL)) != -1) {
    /* A letter inside a cluster (-nq) is named alone: optind may not have
     * moved past its word yet. */
    const char *word = words[optind > 1 ? optind - 1 : 1];
    char letter_word[3] = {'-', (char)optopt, '\0'};
    int short_one = optopt > 0 && optopt < 256 && word[1] != '-';
    if (c == ':')
      tool_usage_error("option %s needs a value",
                       short_one ? letter_word : word);
    if (c == '?' && !short_one)
      tool_usage_error("unknown option, ambiguous abbreviation, or a value "
                       "the option does not take: %s",
                       word);
    if (c == '?')
      unknown_option(spec, letter_word, optopt);
    const cli_option *entry = c < 256 ? by_letter(spec->command, c) : NULL;
    int id = entry ? entry->id : c;
    if (!common_option(spec, o, id, optarg))
      fn(id, optarg, ctx);
  }
  g_free(shortopts);
  g_free(longopts);
}

void cli_parse(const cli_spec *spec, const char *program, tool_options *o,
               int argc, char **argv, cli_option_fn fn, void *ctx,
               cli_args *out) {
  tool_options_init(o, program);
  int option_idx[argc > 0 ? argc : 1], path_idx[argc > 0 ? argc : 1];
  int n_options, n_paths;
  int command = cli_split(spec->command, spec->layout, argc, argv, option_idx,
                          &n_options, path_idx, &n_paths);
  char **words = g_new0(char *, (size_t)n_options + 2);
  words[0] = argv[0];
  for (int i = 0; i < n_options; i++)
    words[i + 1] = argv[option_idx[i]];
  parse_options(spec, o, n_options + 1, words, fn, ctx);
  g_free(words);
  out->paths = g_new0(char *, (size_t)n_paths + 1);
  for (int i = 0; i < n_paths; i++)
    out->paths[i] = argv[path_idx[i]];
  out->n_paths = n_paths;
  out->command = command < argc ? argv + command : NULL;
  out->dashes =
      command == argc && argc > 1 && strcmp(argv[argc - 1], "--") == 0;
}

const char *cli_one_path(cli_args *args, int command_wanted) {
  int n = args->n_paths;
  const char *path = n > 0 ? args->paths[0] : NULL;
  const char *second = n > 1 ? args->paths[1] : NULL;
  g_free(args->paths);
  args->paths = NULL;
  if (path == NULL)
    tool_usage_error("missing %s",
                     command_wanted ? "PATH and COMMAND" : "PATH");
  if (second)
    tool_usage_error("one PATH only: %s", second);
  if (command_wanted && args->command == NULL)
    tool_usage_error("missing COMMAND after %s", path);
  if (!command_wanted && args->command)
    tool_usage_error("unexpected argument: %s", args->command[0]);
  return path;
}

/* ---------------------------------------------------------------- help */

#define HELP_COLUMN 29
#define HELP_WIDTH 78

/* @p text from column @p at (the cursor's), wrapped at HELP_WIDTH with
 * continuation lines starting at HELP_COLUMN. */
static void print_wrapped(FILE *out, const char *text, int at) {
  int col = at;
  gchar **words = g_strsplit(text, " ", -1);
  for (int i = 0; words[i]; i++) {
    int len = (int)strlen(words[i]);
    if (col > HELP_COLUMN && col + 1 + len > HELP_WIDTH) {
      fprintf(out, "\n%*s", HELP_COLUMN, "");
      col = HELP_COLUMN;
    } else if (col > HELP_COLUMN) {
      fputc(' ', out);
      col++;
    }
    fputs(words[i], out);
    col += len;
  }
  fputc('\n', out);
  g_strfreev(words);
}

static void print_option(FILE *out, const cli_option *o) {
  char left[64];
  int n = o->letter
              ? snprintf(left, sizeof left, "  -%c, --%s", o->letter, o->name)
              : snprintf(left, sizeof left, "      --%s", o->name);
  if (o->value)
    snprintf(left + n, sizeof left - (size_t)n, " %s", o->value);
  fputs(left, out);
  int col = (int)strlen(left);
  if (col >= HELP_COLUMN - 1) {
    fprintf(out, "\n%*s", HELP_COLUMN, "");
    col = HELP_COLUMN;
  } else {
    fprintf(out, "%*s", HELP_COLUMN - col, "");
    col = HELP_COLUMN;
  }
  print_wrapped(out, o->help, col);
}

void cli_print_help(const cli_spec *spec, FILE *out) {
  fputs(spec->help_head, out);
  fputs(spec->command & CLI_RUNS ? "\nOptions (anywhere before COMMAND):\n"
                                 : "\nOptions:\n",
        out);
  for (const cli_option *o = cli_options; o->id; o++)
    if ((o->commands & spec->command) && o->help && o->name)
      print_option(out, o);
  fputs(spec->help_tail, out);
}
