/*
 * zkr revoke - ask the holder of a lock to give it up: Curator's
 * Revoker.attemptRevoke(), the "__REVOKE__" data on the holder's node
 * (zkrc_lock_revoke()).  A revocable holder (zkr lock --revocable,
 * Curator's makeRevocable(), zkrc_lock_options.revocable) is told and
 * decides.  See help_head or zkr(1).
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "cli.h"
#include "commands.h"
#include "tool.h"

static const char help_head[] =
    "Usage: zkr revoke [OPTIONS] LOCKPATH [NODE]\n"
    "       zkr revoke --help | --version\n"
    "\n"
    "Ask whoever holds the lock LOCKPATH to give it up, as Apache Curator's\n"
    "Revoker.attemptRevoke() does: set the holder's node's data to\n"
    "\"__REVOKE__\".  Without NODE, every holder as zkr ls finds them (the\n"
    "first contender, or the readers ahead of every writer); with NODE, that\n"
    "contender of LOCKPATH (its name, or its full path), holder or waiter.\n"
    "Print the full path of each node asked, one a line.\n"
    "\n"
    "A revocable holder (zkr lock --revocable, Curator's makeRevocable(),\n"
    "zkrc_lock_options.revocable) is told and decides: zkr lock --revocable\n"
    "stops COMMAND and releases.  Any other holder keeps the lock (its\n"
    "participant id then reads \"__REVOKE__\").  kazoo has no revocation.\n";

static const char help_tail[] =
    "\n"
    "Environment:\n" TOOL_ENVIRONMENT_HELP "                   auth file\n"
    "\n"
    "Exit status:\n"
    "  0    asked (every node given or found)\n"
    "  1    nobody holds LOCKPATH, or NODE is not there (nothing written)\n"
    "  2    bad usage\n"
    "  65   invalid LOCKPATH, or NODE is not a lock contender's node\n"
    "  68   a server's name does not resolve\n"
    "  69   every server refused (said at once), none answered within the\n"
    "       connect timeout, or the server list's chroot does not exist\n"
    "  74   writing standard output failed\n"
    "  76   ZooKeeper refused or failed\n"
    "  77   credentials refused, or an ACL forbids the write\n";

static const cli_spec revoke_spec = {CLI_REVOKE, "revoke", CLI_PATHS, help_head,
                                     help_tail};

typedef struct revoke_cli {
  tool_options o;
  const char *path;
  const char *node; /* NULL: the holders */
} revoke_cli;

static void revoke_option(int id, const char *value, void *ctx) {
  (void)id;
  (void)value;
  (void)ctx; /* only the options every subcommand takes */
}

/* NODE as a full path under LOCKPATH (g_free it), or NULL when it is
 * neither a name nor a path of a child of LOCKPATH. */
static char *node_path(const char *lockpath, const char *node) {
  if (node[0] != '/')
    return strchr(node, '/') ? NULL : g_strdup_printf("%s/%s", lockpath, node);
  size_t n = strlen(lockpath);
  if (strncmp(node, lockpath, n) != 0 || node[n] != '/' ||
      strchr(node + n + 1, '/'))
    return NULL;
  return g_strdup(node);
}

/* Is the node @p name a reader's (held beside other readers)? */
static int is_reader(const char *name) {
  const char *marker = zkrc_contender_marker(name, NULL);
  return marker &&
         (strcmp(marker, "__READ__") == 0 || strcmp(marker, "__rlock__") == 0);
}

/* The holders of LOCKPATH as zkr ls finds them: the readers ahead of every
 * exclusive node, or else the first node alone (g_strfreev; empty when the
 * lock is free). */
static int find_holders(zkrc_session *s, const char *path, char ***out) {
  zkrc_participant *v = NULL;
  size_t n = 0;
  *out = NULL;
  int err = zkrc_lock_list(s, path, &v, &n, zkrc_session_timeout(s));
  if (err != ZKRC_OK)
    return err;
  GPtrArray *holders = g_ptr_array_new();
  for (size_t i = 0; i < n; i++) {
    if (i > 0 && !(is_reader(v[i].node) && is_reader(v[0].node)))
      break;
    g_ptr_array_add(holders, g_strdup_printf("%s/%s", path, v[i].node));
    if (!is_reader(v[i].node))
      break;
  }
  g_ptr_array_add(holders, NULL);
  zkrc_participants_free(v, n);
  *out = (char **)g_ptr_array_free(holders, FALSE);
  return ZKRC_OK;
}

/* Ask each of @p nodes; print those asked.  The exit status. */
static int revoke_all(zkrc_session *s, char **nodes) {
  if (nodes[0] == NULL) {
    tool_error("nobody holds the lock: nothing to revoke");
    return TOOL_EXIT_NOT_ACQUIRED;
  }
  int status = TOOL_EXIT_OK;
  for (int i = 0; nodes[i]; i++) {
    int err = zkrc_lock_revoke(s, nodes[i], zkrc_session_timeout(s));
    if (err == ZKRC_ENONODE) {
      tool_error("%s: no such node", nodes[i]);
      if (status == TOOL_EXIT_OK)
        status = TOOL_EXIT_NOT_ACQUIRED;
      continue;
    }
    if (err != ZKRC_OK)
      return tool_fail("cannot revoke", err);
    tool_verbose("asked %s to give up the lock", nodes[i]);
    printf("%s\n", nodes[i]);
  }
  if (fflush(stdout) != 0 || ferror(stdout)) {
    tool_error("standard output: %s", strerror(errno));
    return TOOL_EXIT_IOERR;
  }
  return status;
}

static int revoke_main(revoke_cli *cli) {
  tool_check_path(cli->path);
  char *given = cli->node ? node_path(cli->path, cli->node) : NULL;
  if (cli->node &&
      (given == NULL ||
       zkrc_contender_marker(strrchr(given, '/') + 1, NULL) == NULL)) {
    tool_error("%s is not a lock contender's node of %s", cli->node, cli->path);
    g_free(given);
    return TOOL_EXIT_BAD_PATH;
  }
  zkrc_session *s;
  int status = tool_start_session(&cli->o, 1, &s);
  if (status != 0) {
    g_free(given);
    return status;
  }
  char **nodes = NULL;
  if (given) {
    nodes = g_new0(char *, 2);
    nodes[0] = given;
  } else {
    int err = find_holders(s, cli->path, &nodes);
    if (err != ZKRC_OK)
      status = tool_fail("cannot list the contenders", err);
  }
  if (nodes)
    status = revoke_all(s, nodes);
  g_strfreev(nodes);
  zkrc_session_close(s);
  return status;
}

int cmd_revoke(const char *program, int argc, char **argv) {
  revoke_cli cli;
  memset(&cli, 0, sizeof cli);
  cli_args args;
  cli_parse(&revoke_spec, program, &cli.o, argc, argv, revoke_option, &cli,
            &args);
  if (args.n_paths == 0)
    tool_usage_error("missing LOCKPATH");
  if (args.n_paths > 2)
    tool_usage_error("unexpected argument: %s", args.paths[2]);
  cli.path = args.paths[0];
  cli.node = args.n_paths > 1 ? args.paths[1] : NULL;
  g_free(args.paths);
  return revoke_main(&cli);
}
