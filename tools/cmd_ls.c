/*
 * zkr ls (zkr-ls) - who holds a ZooKeeper lock, leads an election or has
 * a semaphore's leases, and since when: every contender of every dialect
 * (zkrecipes, Curator, kazoo) in queue order, with its session, age,
 * fencing token and participant data.  See help_head or zkr-ls(1).
 *
 * How it reads: the library lists each queue (zkrc_lock_list,
 * zkrc_election_list, zkrc_semaphore_list: the contenders it recognises,
 * in the order it ranks them, with data, czxid and ctime); the session
 * that owns each node (ephemeralOwner), which those lists do not carry,
 * and the children of the nodes walked are raw reads (ls_zk.c).  Nothing
 * is written.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "ls.h"
#include "runtime.h"
#include "cli.h"
#include "commands.h"
#include "tool.h"

static const char help_head[] =
    "Usage: zkr ls [OPTIONS] PATH...\n"
    "       zkr ls [OPTIONS] -r PATH...\n"
    "       zkr ls --help | --version\n"
    "(zkr-ls is the same program.)\n"
    "\n"
    "List the contenders of the lock, read-write lock, election or\n"
    "semaphore at each PATH in queue order: who holds it, who waits, and\n"
    "since when.  Nodes of zkrecipes, Apache Curator (InterProcessMutex,\n"
    "InterProcessReadWriteLock, LeaderLatch, LeaderSelector,\n"
    "InterProcessSemaphoreV2) and kazoo (Lock, ReadLock, WriteLock,\n"
    "Election) are recognised by their names.  Nothing is written.\n"
    "\n"
    "Each PATH gets a line \"PATH (RECIPE)\", then one line per contender:\n"
    "  ROLE     holder (a mutex's first node), reader (a reader ahead of\n"
    "           every writer), writer (a writer first in line), leader (an\n"
    "           election's first node), lease (a semaphore's lease node:\n"
    "           the first N hold, N is not stored on the servers), or\n"
    "           waiter\n"
    "  NODE     the contender's node name\n"
    "  SESSION  the ZooKeeper session that owns it (ephemeralOwner, hex)\n"
    "  AGE      time since the node was made (servers' clock vs ours)\n"
    "  TOKEN    its fencing token (the node's czxid, decimal)\n"
    "  DIALECT  curator (Curator's names, which zkrecipes writes too) or\n"
    "           kazoo\n"
    "  DATA     the node's data, the participant id (escaped as\n"
    "           zkr-watch escapes it: UTF-8 as it is)\n"
    "A PATH without contenders prints \"PATH: no contenders\".  A\n"
    "semaphore's leases are found under PATH/leases.\n";

static const char help_tail[] =
    "\n"
    "Environment:\n" TOOL_ENVIRONMENT_HELP "                   auth file\n"
    "\n"
    "Exit status:\n"
    "  0    listed\n"
    "  1    a PATH does not exist (the others are listed)\n"
    "  2    bad usage\n"
    "  65   invalid PATH\n"
    "  68   a server's name does not resolve\n"
    "  69   every server refused (said at once), none answered within the\n"
    "       connect timeout, or the server list's chroot does not exist\n"
    "  74   writing standard output failed\n"
    "  76   ZooKeeper failed a read: what could be read is listed; the\n"
    "       session expired: nothing is\n"
    "  77   credentials refused, or an ACL forbids a read (what could be\n"
    "       read is listed)\n";

/* A PATH that does not exist. */
#define EXIT_NO_NODE 1

static const cli_spec ls_spec = {CLI_LS, "ls", CLI_PATHS, help_head, help_tail};

typedef struct ls_cli {
  tool_options o;
  int recursive;
  int json;
  char **paths;
  int n_paths;
} ls_cli;

static void ls_option(int id, const char *value, void *ctx) {
  (void)value;
  ls_cli *cli = ctx;
  if (id == 'r')
    cli->recursive = 1;
  else if (id == OPT_JSON)
    cli->json = 1;
}

static void parse_args(ls_cli *cli, const char *program, int argc,
                       char **argv) {
  cli_args args;
  cli_parse(&ls_spec, program, &cli->o, argc, argv, ls_option, cli, &args);
  if (args.n_paths == 0)
    tool_usage_error("missing PATH");
  cli->paths = args.paths; /* lives on */
  cli->n_paths = args.n_paths;
}

/* --------------------------------------------------------------- names */

/* What each contender marker means for zkr-ls: the library reads the
 * names (zkrc_contender_marker(): which marker a name ends with, followed
 * by a well-formed sequence); this table only says, for each marker, the
 * family whose queue it joins - the lock family shares one queue per path,
 * an election's latch nodes another, a semaphore's leases one under
 * PATH/leases - and how to show it. */
typedef enum family { FAMILY_LOCK, FAMILY_LATCH, FAMILY_LEASE } family;

typedef struct marker {
  const char *text;
  family fam;
  const char *kind; /* ls_contender.kind */
  const char *dialect;
  int shared; /* held alongside other shared nodes (readers) */
} marker;

static const marker markers[] = {
    {"lock-", FAMILY_LOCK, "mutex", "curator", 0},
    {"__lock__", FAMILY_LOCK, "mutex", "kazoo", 0}, /* Lock, WriteLock */
    {"__WRIT__", FAMILY_LOCK, "write", "curator", 0},
    {"__READ__", FAMILY_LOCK, "read", "curator", 1},
    {"__rlock__", FAMILY_LOCK, "read", "kazoo", 1},
    {"latch-", FAMILY_LATCH, "latch", "curator", 0},
    {"lease-", FAMILY_LEASE, "lease", "curator", 1},
};
#define N_MARKERS (sizeof markers / sizeof markers[0])

/* The marker of @p name within family @p fam, or NULL. */
static const marker *marker_of(const char *name, family fam) {
  const char *text = zkrc_contender_marker(name, NULL);
  for (size_t i = 0; text && i < N_MARKERS; i++)
    if (markers[i].fam == fam && strcmp(markers[i].text, text) == 0)
      return &markers[i];
  return NULL;
}

static int any_of_family(char **names, family fam) {
  for (int i = 0; names && names[i]; i++)
    if (marker_of(names[i], fam))
      return 1;
  return 0;
}

static int is_contender(const char *name) {
  return marker_of(name, FAMILY_LOCK) || marker_of(name, FAMILY_LATCH) ||
         marker_of(name, FAMILY_LEASE);
}

/* --------------------------------------------------------------- reading */

typedef struct ls_run {
  zkrc_session *s;
  int timeout_ms;
  GPtrArray *queues; /* of ls_queue *, in the order found */
  int status;        /* the first failure's exit status */
  int fatal;         /* no server answers: stop */
} ls_run;

static void note_status(ls_run *r, int status) {
  if (r->status == TOOL_EXIT_OK)
    r->status = status;
}

/* The session can no longer read (no server answers, or it expired):
 * stop, with what the other tools say then. */
static void stop_with(ls_run *r, int status) {
  r->fatal = 1;
  r->status = status;
}

/* A ZooKeeper failure on @p path: said, and noted as the exit status; no
 * answer, or the session's end, stops the listing. */
static void zk_failed(ls_run *r, const char *path, int zk_rc) {
  if (zk_rc == ZOPERATIONTIMEOUT || zk_rc == ZCONNECTIONLOSS ||
      zk_rc == ZCLOSING) {
    tool_error("%s: no answer from the servers within %d ms (%s)", path,
               r->timeout_ms, zerror(zk_rc));
    return stop_with(r, TOOL_EXIT_UNAVAILABLE);
  }
  tool_error("%s: %s", path, zkrc_strerror(zkrc_from_zk_error(zk_rc)));
  if (zk_rc == ZSESSIONEXPIRED || zk_rc == ZINVALIDSTATE)
    return stop_with(r, TOOL_EXIT_ZOOKEEPER);
  /* An ACL's refusal is 77, as the page says and the library's lists do. */
  note_status(r, zk_rc == ZNOAUTH ? TOOL_EXIT_NOPERM : TOOL_EXIT_ZOOKEEPER);
}

/* The same for a recipe's error (from the library's lists). */
static void recipe_failed(ls_run *r, const char *path, int err) {
  int status = tool_fail(path, err);
  if (status == TOOL_EXIT_UNAVAILABLE || err == ZKRC_ESESSIONEXPIRED ||
      err == ZKRC_ECLOSED)
    return stop_with(r, status);
  note_status(r, status);
}

/* The children of @p path, sorted by bytes (g_strfreev); the ZooKeeper
 * result code. */
static int children_of(ls_run *r, const char *path, char ***names) {
  return ls_zk_children(r->s, path, r->timeout_ms, names);
}

/* The library's list of the queue of @p fam at @p path. */
static int library_list(ls_run *r, family fam, const char *path,
                        zkrc_participant **v, size_t *n) {
  switch (fam) {
  case FAMILY_LOCK:
    return zkrc_lock_list(r->s, path, v, n, r->timeout_ms);
  case FAMILY_LATCH:
    return zkrc_election_list(r->s, path, v, n, r->timeout_ms);
  default:
    return zkrc_semaphore_list(r->s, path, v, n, r->timeout_ms);
  }
}

/* The session owning each listed node (ephemeralOwner), all asked at once;
 * -1 for a node that has gone meanwhile.  ZOK or a ZooKeeper failure. */
static int owners_of(ls_run *r, const char *dir, const zkrc_participant *v,
                     size_t n, int64_t *owners) {
  char **paths = g_new0(char *, n + 1);
  for (size_t i = 0; i < n; i++)
    paths[i] = g_strdup_printf("%s/%s", dir, v[i].node);
  int rc = ls_zk_owners(r->s, paths, (int)n, r->timeout_ms, owners);
  g_strfreev(paths);
  return rc;
}

/* Who holds, by each recipe's rule (the one the library, Curator and
 * kazoo follow alike): an election's first node leads; in the lock family
 * the shared nodes (readers) ahead of every exclusive one hold, or else
 * the first node alone (a mutex's holder, a writer); a semaphore's first
 * N leases hold, and N is not on the servers. */
static void assign_roles(ls_queue *q, family fam) {
  int ahead_of_exclusive = 1;
  for (guint i = 0; i < q->contenders->len; i++) {
    ls_contender *c = &g_array_index(q->contenders, ls_contender, i);
    const marker *m = marker_of(c->node, fam);
    int shared = m && m->shared;
    c->holds = LS_WAITS;
    c->role = "waiter";
    if (fam == FAMILY_LEASE) {
      c->holds = LS_UNKNOWN;
      c->role = "lease";
    } else if (fam == FAMILY_LATCH && i == 0) {
      c->holds = LS_HOLDS;
      c->role = "leader";
    } else if (fam == FAMILY_LOCK && ahead_of_exclusive && shared) {
      c->holds = LS_HOLDS;
      c->role = "reader";
    } else if (fam == FAMILY_LOCK && i == 0) {
      c->holds = LS_HOLDS;
      c->role = m && strcmp(m->kind, "write") == 0 ? "writer" : "holder";
    }
    if (!shared)
      ahead_of_exclusive = 0;
  }
}

/* A lock family's queue with a reader or a writer node is a read-write
 * lock's. */
static const char *recipe_name(family fam, const ls_queue *q) {
  if (fam == FAMILY_LATCH)
    return "election";
  if (fam == FAMILY_LEASE)
    return "semaphore";
  for (guint i = 0; i < q->contenders->len; i++)
    if (strcmp(g_array_index(q->contenders, ls_contender, i).kind, "mutex"))
      return "rwlock";
  return "lock";
}

/* The queue of @p fam: the recipe at @p path, its nodes in @p dir.  Adds
 * it to r->queues when it has contenders; returns whether it did. */
static int add_queue(ls_run *r, family fam, const char *path, const char *dir) {
  zkrc_participant *v = NULL;
  size_t n = 0;
  int err = library_list(r, fam, path, &v, &n);
  if (err != ZKRC_OK) {
    recipe_failed(r, path, err);
    return 0;
  }
  int64_t *owners = g_new0(int64_t, n ? n : 1);
  int rc = owners_of(r, dir, v, n, owners);
  ls_queue *q = ls_queue_new(path, dir, NULL);
  for (size_t i = 0; rc == ZOK && i < n; i++) {
    const marker *m = marker_of(v[i].node, fam);
    if (owners[i] < 0 || m == NULL) /* gone since it was listed */
      continue;
    size_t id_len = zkrc_participant_id_len(&v[i]); /* NULs inside too */
    ls_contender c = {.kind = m->kind,
                      .dialect = m->dialect,
                      .node = g_strdup(v[i].node),
                      .session = owners[i],
                      .token = v[i].token,
                      .ctime_ms = v[i].ctime_ms,
                      .data = g_memdup2(v[i].id, id_len + 1),
                      .data_len = id_len};
    g_array_append_val(q->contenders, c);
  }
  zkrc_participants_free(v, n);
  g_free(owners);
  if (rc != ZOK)
    zk_failed(r, dir, rc);
  if (rc != ZOK || q->contenders->len == 0) {
    ls_queue_free(q);
    return 0;
  }
  assign_roles(q, fam);
  q->recipe = recipe_name(fam, q);
  tool_verbose("%s: %s with %u contenders", path, q->recipe,
               q->contenders->len);
  g_ptr_array_add(r->queues, q);
  return 1;
}

/* The queues whose nodes are the children @p names of @p dir: a lock
 * family's, an election's, and when @p dir is a semaphore's "leases" its
 * leases (listed as the semaphore, the parent).  Returns how many. */
static int queues_in(ls_run *r, const char *dir, char **names) {
  int found = 0;
  if (any_of_family(names, FAMILY_LOCK))
    found += add_queue(r, FAMILY_LOCK, dir, dir);
  if (!r->fatal && any_of_family(names, FAMILY_LATCH))
    found += add_queue(r, FAMILY_LATCH, dir, dir);
  char *parent = g_path_get_dirname(dir);
  char *base = g_path_get_basename(dir);
  if (!r->fatal && strcmp(base, "leases") == 0 &&
      zkrc_path_validate(parent, NULL) == ZKRC_OK &&
      any_of_family(names, FAMILY_LEASE))
    found += add_queue(r, FAMILY_LEASE, parent, dir);
  g_free(parent);
  g_free(base);
  return found;
}

static char *child_path(const char *dir, const char *name) {
  return strcmp(dir, "/") == 0 ? g_strconcat("/", name, NULL)
                               : g_strconcat(dir, "/", name, NULL);
}

static void no_such_node(ls_run *r, const char *path) {
  tool_error("%s: no such node", path);
  note_status(r, EXIT_NO_NODE);
}

/* PATH alone: the queues of its children, and a semaphore's leases. */
static void list_path(ls_run *r, const char *path) {
  char **names;
  int rc = children_of(r, path, &names);
  if (rc == ZNONODE)
    return no_such_node(r, path);
  if (rc != ZOK)
    return zk_failed(r, path, rc);
  int found = queues_in(r, path, names);
  if (!r->fatal && g_strv_contains((const char *const *)names, "leases")) {
    char *leases = child_path(path, "leases");
    char **lease_names;
    rc = children_of(r, leases, &lease_names);
    if (rc == ZOK)
      found += queues_in(r, leases, lease_names);
    else if (rc != ZNONODE)
      zk_failed(r, leases, rc);
    g_strfreev(lease_names);
    g_free(leases);
  }
  if (!found && !r->fatal)
    g_ptr_array_add(r->queues, ls_queue_new(path, path, NULL));
  g_strfreev(names);
}

/* -r: @p path and its subtree, depth first, children in byte order.
 * Contender nodes are ephemeral (no children): not descended into. */
static void walk(ls_run *r, const char *path, int top) {
  char **names;
  int rc = children_of(r, path, &names);
  if (rc == ZNONODE && top)
    return no_such_node(r, path);
  if (rc == ZNONODE) /* gone meanwhile */
    return;
  if (rc != ZOK)
    return zk_failed(r, path, rc);
  queues_in(r, path, names);
  for (int i = 0; names[i] && !r->fatal; i++) {
    if (is_contender(names[i]))
      continue;
    if (strcmp(path, "/") == 0 && strcmp(names[i], "zookeeper") == 0)
      continue; /* the servers' own tree */
    char *child = child_path(path, names[i]);
    walk(r, child, 0);
    g_free(child);
  }
  g_strfreev(names);
}

/* ----------------------------------------------------------------- main */

static void check_paths(const ls_cli *cli) {
  for (int i = 0; i < cli->n_paths; i++)
    if (!(cli->recursive && strcmp(cli->paths[i], "/") == 0))
      tool_check_path(cli->paths[i]);
}

/* Once connected, signals do what they do to any lister (SIGINT ends it,
 * SIGPIPE too, as for ls | head); one that came while connecting counts. */
static int default_signals(void) {
  tool_runtime_restore_in_child();
  return tool_stop_signal_caught();
}

static int print_queues(const ls_cli *cli, const GPtrArray *queues) {
  int64_t now_ms = g_get_real_time() / 1000;
  int rc = cli->json ? ls_print_json(stdout, queues, now_ms)
                     : ls_print_text(stdout, queues, now_ms);
  if (rc == 0)
    return TOOL_EXIT_OK;
  tool_error("standard output: %s", strerror(errno));
  return TOOL_EXIT_IOERR;
}

static int ls_main(ls_cli *cli);

int cmd_ls(const char *program, int argc, char **argv) {
  ls_cli cli;
  memset(&cli, 0, sizeof cli);
  parse_args(&cli, program, argc, argv);
  int status = ls_main(&cli);
  g_free(cli.paths);
  return status;
}

static int ls_main(ls_cli *cli) {
  check_paths(cli);
  zkrc_session *s;
  int status = tool_start_session(&cli->o, 1, &s);
  if (status == 0)
    status = default_signals();
  if (status != 0)
    return status;
  ls_run r = {.s = s,
              .timeout_ms = zkrc_session_timeout(s),
              .queues = g_ptr_array_new_with_free_func(ls_queue_free)};
  for (int i = 0; i < cli->n_paths && !r.fatal; i++) {
    if (cli->recursive)
      walk(&r, cli->paths[i], 1);
    else
      list_path(&r, cli->paths[i]);
  }
  /* No server: nothing printed (a part would look like the whole). */
  if (!r.fatal) {
    int out = print_queues(cli, r.queues);
    if (out != TOOL_EXIT_OK)
      r.status = out;
  }
  g_ptr_array_free(r.queues, TRUE);
  zkrc_session_close(s);
  return r.status;
}
