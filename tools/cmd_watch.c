/*
 * zkr watch (zkr-watch) - print, or run a command on, every change of a
 * ZooKeeper node, of its children or of its subtree, as `etcdctl watch'
 * does for etcd keys.  See help_head, `zkr watch --help' or zkr-watch(1).
 *
 * The changes come from a cache of the library (zkrecipes/cache.h: a node,
 * children or tree cache), which reads the nodes with watches, reads them
 * again after a reconnection or a new session, and reports each change of
 * its copy once, in order.  Its listener runs on the session's callback
 * thread and only queues the event (with a reference on the node) and
 * wakes the main thread's loop (tool.h), which prints the events or runs
 * COMMAND for each, one at a time, in order.
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
#include <sys/mman.h>
#include <unistd.h>

#include <glib.h>

#include <zkrecipes/cache.h>

#include "cli.h"
#include "commands.h"
#include "tool.h"
#include "watch.h"

static const char help_head[] =
    "Usage: zkr watch [OPTIONS] PATH\n"
    "       zkr watch [OPTIONS] PATH -- COMMAND [ARG...]\n"
    "       zkr watch [OPTIONS] PATH --command STRING\n"
    "       zkr watch --help | --version\n"
    "(zkr-watch is the same program.)\n"
    "\n"
    "Watch the ZooKeeper node PATH (with --children: its children; with\n"
    "-r: it and its descendants) and report every change, one line each:\n"
    "  EVENT<TAB>PATH<TAB>VERSION<TAB>VALUE\n"
    "  EVENT    added (created), updated (data set, or deleted and created\n"
    "           again) or removed (deleted)\n"
    "  PATH     the node's full path\n"
    "  VERSION  its data version (removed: the last one reported)\n"
    "  VALUE    its data (removed: the last value reported), escaped so\n"
    "           that it stays on its line: \\\\ \\t \\n \\r, and \\xHH for "
    "other\n"
    "           control bytes and for every byte of a value that is not\n"
    "           UTF-8 (printf '%b' turns it back into the bytes)\n"
    "Only changes are reported, not the state at the start (see --initial).\n"
    "A node changed twice between two reads is reported once, with its\n"
    "latest value; changes made while the connection is down are reported\n"
    "once it is back.  Connection events go to stderr, always.\n"
    "\n"
    "With COMMAND, nothing is printed: COMMAND runs once for each change,\n"
    "one at a time and in order, with the value on its standard input and\n"
    "ZKR_EVENT (added, updated, removed), ZKR_PATH (PATH), ZKR_NODE (the\n"
    "node that changed), ZKR_VERSION and ZKR_MZXID in its environment (and,\n"
    "until 0.3, the same as ZKR_WATCH_EVENT, ZKR_WATCH_PATH for ZKR_NODE,\n"
    "ZKR_WATCH_VERSION and ZKR_WATCH_MZXID).  A COMMAND that fails is\n"
    "reported on stderr and the watch goes on (unless --exit-on-error).\n"
    "\n"
    "SIGINT, SIGTERM, SIGHUP and SIGQUIT end the watch: a running COMMAND\n"
    "gets the signal (SIGKILL after the grace period), then zkr watch exits\n"
    "with status 0.\n";

static const char help_tail[] =
    "\n"
    "Environment:\n" TOOL_ENVIRONMENT_HELP
    "                   auth file (taken out of COMMAND's environment)\n"
    "\n"
    "Exit status:\n"
    "  0    stopped by a signal, or --count changes reported\n"
    "  COMMAND's status with --exit-on-error\n"
    "  2    bad usage\n"
    "  65   invalid PATH\n"
    "  68   a server's name does not resolve\n"
    "  69   every server refused (said at once), none answered within the\n"
    "       connect timeout, or the server list's chroot does not exist\n"
    "  71   a system call failed (fork, pipe, ...)\n"
    "  74   writing standard output failed\n"
    "  76   ZooKeeper refused the watch, or the session was closed\n"
    "  77   credentials refused, or PATH's ACL does not let the session\n"
    "       read it\n"
    "  126  COMMAND could not be run; 127 COMMAND was not found\n"
    "  128+N  interrupted by signal N while connecting\n";

static const cli_spec watch_spec = {CLI_WATCH, "watch", CLI_PATH_DASH_COMMAND,
                                    help_head, help_tail};

typedef enum watch_shape { SHAPE_NODE, SHAPE_CHILDREN, SHAPE_TREE } watch_shape;

typedef struct watch_cli {
  tool_options o;
  watch_shape shape;
  int depth; /* --depth; -1: no limit */
  int depth_given;
  int json;
  int initial;
  int exit_on_error;
  int count; /* --count; 0: no limit */
  const char *path;
  char **command;            /* NULL: print */
  const char *shell_command; /* --command STRING */
} watch_cli;

static void set_shape(watch_cli *cli, watch_shape shape) {
  if (cli->shape != SHAPE_NODE && cli->shape != shape)
    tool_usage_error("--children and -r exclude each other");
  cli->shape = shape;
}

static void watch_option(int id, const char *value, void *ctx) {
  watch_cli *cli = ctx;
  switch (id) {
  case OPT_CHILDREN:
    set_shape(cli, SHAPE_CHILDREN);
    break;
  case 'r':
    set_shape(cli, SHAPE_TREE);
    break;
  case 'd':
    cli->depth = tool_parse_int(value, 0, 1000, "--depth");
    cli->depth_given = 1;
    break;
  case 'i':
    cli->initial = 1;
    break;
  case OPT_JSON:
    cli->json = 1;
    break;
  case OPT_COUNT:
    cli->count = tool_parse_int(value, 1, 1000000000, "--count");
    break;
  case OPT_EXIT_ON_ERROR:
    cli->exit_on_error = 1;
    break;
  case 'c':
    cli->shell_command = value;
    break;
  }
}

static void parse_args(watch_cli *cli, const char *program, int argc,
                       char **argv) {
  cli->depth = -1;
  cli_args args;
  cli_parse(&watch_spec, program, &cli->o, argc, argv, watch_option, cli,
            &args);
  cli->o.waits_for_nodes = 1; /* a chroot made later is watched for */
  if (cli->depth_given && cli->shape != SHAPE_TREE)
    tool_usage_error("--depth goes with -r");
  if (args.n_paths > 1)
    tool_usage_error("one PATH only; put -- before COMMAND: %s", args.paths[1]);
  if (args.dashes && !args.command && !cli->shell_command)
    tool_usage_error("missing COMMAND after --");
  if (cli->shell_command && args.command)
    tool_usage_error("--command gives COMMAND: not a second one");
  cli->path = cli_one_path(&args, args.command != NULL); /* optional */
  cli->command = cli->shell_command ? tool_shell_command(cli->shell_command)
                                    : args.command;
  if (cli->json && cli->command)
    tool_usage_error("--json prints the changes; COMMAND gets them instead: "
                     "not both");
  if (cli->exit_on_error && !cli->command)
    tool_usage_error("--exit-on-error goes with a COMMAND");
}

/* ------------------------------------------------ from the cache thread */

/* A change, or a connection event, as the cache reported it. */
typedef struct watch_event {
  zkrc_cache_event_type type;
  const zkrc_cache_node *node; /* referenced; NULL for the others */
} watch_event;

static GMutex queue_mu;
static GQueue queue = G_QUEUE_INIT; /* of watch_event *, oldest first */

static void watch_event_free(gpointer p) {
  watch_event *ev = p;
  if (ev) {
    zkrc_cache_node_unref(ev->node);
    g_free(ev);
  }
}

/* The cache's listener (its thread): queue, wake the loop. */
static void on_cache_event(zkrc_cache *c, const zkrc_cache_event *ev,
                           void *arg) {
  (void)c;
  (void)arg;
  watch_event *copy = g_new(watch_event, 1);
  copy->type = ev->type;
  copy->node = zkrc_cache_node_ref(ev->node);
  g_mutex_lock(&queue_mu);
  g_queue_push_tail(&queue, copy);
  g_mutex_unlock(&queue_mu);
  tool_event wake = {.kind = TOOL_EV_WATCH};
  tool_post_event(&wake);
}

static watch_event *next_cache_event(void) {
  g_mutex_lock(&queue_mu);
  watch_event *ev = g_queue_pop_head(&queue);
  g_mutex_unlock(&queue_mu);
  return ev;
}

/* ------------------------------------------------------------ the loop */

typedef struct watcher {
  watch_cli *cli;
  zkrc_session *s;
  zkrc_cache *cache;
  int initialized;          /* the first read is in (INITIALIZED came) */
  GQueue pending;           /* changes not reported yet (of watch_event *) */
  watch_event *for_command; /* the change the running COMMAND is for */
  tool_child child;         /* child.pid > 0 while COMMAND runs */
  int reported;             /* changes reported so far */
  int quit_signal;          /* a stop signal came: end once COMMAND is gone */
  int done;
  int status;
} watcher;

static void finish(watcher *w, int status) {
  if (!w->done) {
    w->done = 1;
    w->status = status;
  }
}

/* A change was reported: printed, or COMMAND ran for it. */
static void count_reported(watcher *w) {
  w->reported++;
  if (w->cli->count > 0 && w->reported >= w->cli->count) {
    tool_verbose("%d changes reported", w->reported);
    finish(w, TOOL_EXIT_OK);
  }
}

static void print_change(watcher *w, const watch_event *ev) {
  int rc = w->cli->json ? watch_print_json(stdout, ev->type, ev->node)
                        : watch_print_text(stdout, ev->type, ev->node);
  if (rc != 0 && errno == EPIPE) {
    finish(w, 128 + SIGPIPE); /* the reader went away, as for `| head' */
    return;
  }
  if (rc != 0) {
    tool_error("standard output: %s", strerror(errno));
    finish(w, TOOL_EXIT_IOERR);
    return;
  }
  count_reported(w);
}

/* COMMAND's standard input: the value, in a memory file (no pipe to keep
 * fed, whatever its size and however COMMAND reads it).  -1 on failure. */
static int value_file(const zkrc_cache_node *node) {
  int fd = memfd_create("zkr-watch-value", MFD_CLOEXEC);
  if (fd < 0) {
    tool_error("memfd_create: %s", strerror(errno));
    return -1;
  }
  size_t done = 0;
  while (node->data && done < node->len) {
    ssize_t n = write(fd, node->data + done, node->len - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      tool_error("writing the value for COMMAND: %s", strerror(errno));
      close(fd);
      return -1;
    }
    done += (size_t)n;
  }
  if (lseek(fd, 0, SEEK_SET) != 0) {
    tool_error("lseek: %s", strerror(errno));
    close(fd);
    return -1;
  }
  return fd;
}

static void start_command(watcher *w, watch_event *ev) {
  int fd = value_file(ev->node);
  if (fd < 0) {
    watch_event_free(ev);
    finish(w, TOOL_EXIT_OSERR);
    return;
  }
  const struct Stat *st = &ev->node->stat;
  GPtrArray *env = g_ptr_array_new_with_free_func(g_free);
  char version[16], mzxid[24];
  snprintf(version, sizeof version, "%" PRId32, st->version);
  snprintf(mzxid, sizeof mzxid, "%" PRId64, st->mzxid);
  tool_env_add(env, "ZKR_EVENT", "ZKR_WATCH_EVENT",
               zkrc_cache_event_name(ev->type));
  tool_env_add(env, "ZKR_PATH", NULL, w->cli->path);
  tool_env_add(env, "ZKR_NODE", "ZKR_WATCH_PATH", ev->node->path);
  tool_env_add(env, "ZKR_VERSION", "ZKR_WATCH_VERSION", version);
  tool_env_add(env, "ZKR_MZXID", "ZKR_WATCH_MZXID", mzxid);
  g_ptr_array_add(env, NULL);
  int status = tool_child_start_with_input(
      &w->child, w->cli->command, (char *const *)env->pdata, &w->cli->o, fd);
  close(fd);
  g_ptr_array_unref(env);
  if (status != 0) {
    watch_event_free(ev);
    finish(w, status); /* not found, not executable: the next would fail too */
    return;
  }
  w->for_command = ev;
  tool_verbose("running %s (pid %d) for %s %s", w->cli->command[0],
               (int)w->child.pid, zkrc_cache_event_name(ev->type),
               ev->node->path);
}

static void command_exited(watcher *w) {
  int status = w->child.status;
  tool_child_end(&w->child, 0);
  watch_event *ev = w->for_command;
  w->for_command = NULL;
  if (w->quit_signal) {
    watch_event_free(ev);
    finish(w, TOOL_EXIT_OK);
    return;
  }
  if (status != 0)
    tool_error("COMMAND exited with status %d for %s %s version %" PRId32 "%s",
               status, zkrc_cache_event_name(ev->type), ev->node->path,
               ev->node->stat.version,
               w->cli->exit_on_error ? "" : " (the watch goes on)");
  else
    tool_verbose("COMMAND done for %s %s", zkrc_cache_event_name(ev->type),
                 ev->node->path);
  watch_event_free(ev);
  if (status != 0 && w->cli->exit_on_error)
    finish(w, status);
  else
    count_reported(w);
}

/* Report what is pending: print it all, or start COMMAND for the oldest
 * change when none runs. */
static void report_pending(watcher *w) {
  while (!w->done && w->child.pid <= 0 && !g_queue_is_empty(&w->pending)) {
    watch_event *ev = g_queue_pop_head(&w->pending);
    if (w->cli->command) {
      start_command(w, ev);
      return;
    }
    print_change(w, ev);
    watch_event_free(ev);
  }
}

static void connection_event(watcher *w, zkrc_cache_event_type type) {
  const char *path = w->cli->path;
  switch (type) {
  case ZKRC_CACHE_SUSPENDED:
    tool_error("connection lost (suspended): changes to %s are reported once "
               "it is back",
               path);
    break;
  case ZKRC_CACHE_RECONNECTED:
    tool_error("connected again (reconnected): reading %s again", path);
    break;
  case ZKRC_CACHE_LOST:
    tool_error("session ended (lost): reading %s again on a new session", path);
    break;
  default:
    break;
  }
}

/* A node the session may not read (its ACL): PATH itself ends the watch,
 * as zkr-members ends; a node below it is left out, said on stderr. */
static void unreadable(watcher *w, const char *path) {
  if (strcmp(path, w->cli->path) == 0) {
    tool_error("%s: the node's ACL does not let this session read it", path);
    finish(w, TOOL_EXIT_NOPERM);
    return;
  }
  tool_error("%s: the node's ACL does not let this session read it: left "
             "out until it changes and may be read",
             path);
}

static void cache_event(watcher *w, watch_event *ev) {
  if (w->done) { /* ending: nothing more is said */
    watch_event_free(ev);
    return;
  }
  if (ev->type == ZKRC_CACHE_NODE_UNREADABLE) {
    unreadable(w, ev->node->path);
    watch_event_free(ev);
    return;
  }
  if (ev->node) {
    /* Before INITIALIZED: the state at the start. */
    if (w->initialized || w->cli->initial)
      g_queue_push_tail(&w->pending, ev);
    else
      watch_event_free(ev);
    return;
  }
  if (ev->type == ZKRC_CACHE_INITIALIZED) {
    w->initialized = 1;
    tool_verbose("watching %s (%zu nodes now)", w->cli->path,
                 zkrc_cache_size(w->cache));
  } else {
    connection_event(w, ev->type);
  }
  watch_event_free(ev);
}

static void handle_signal(watcher *w, const tool_signal *sig) {
  if (!tool_is_stop_signal(sig->signo)) {
    tool_child_forward(&w->child, sig, &w->cli->o, 1);
    return;
  }
  tool_verbose("SIG%s: stopping", sigabbrev_np(sig->signo));
  w->quit_signal = sig->signo;
  if (w->child.pid <= 0) {
    finish(w, TOOL_EXIT_OK);
    return;
  }
  /* A terminal's ^C reached a COMMAND in our group already: only the
   * SIGKILL after the grace period is ours to send. */
  if (!(w->cli->o.foreground && sig->from_terminal)) {
    tool_child_stop(&w->child, sig->signo, w->cli->o.grace_ms);
  } else if (w->child.stop_signal == 0) {
    w->child.stop_signal = sig->signo;
    w->child.kill_at = tool_now_ms() + w->cli->o.grace_ms;
  }
}

static void session_event(watcher *w, int code) {
  if (code == ZKRC_SESSION_EVENT_CONNECTED)
    tool_print_session(w->s);
  else if (code == ZKRC_SESSION_EVENT_AUTH_FAILED)
    finish(w, tool_fail("the session ended", ZKRC_EAUTHFAILED));
}

static void drain_events(watcher *w) {
  tool_event ev;
  while (tool_next_event(&ev)) {
    if (ev.kind == TOOL_EV_SESSION)
      session_event(w, ev.code);
    tool_event_clear(&ev);
  }
  watch_event *cev;
  while ((cev = next_cache_event()) != NULL)
    cache_event(w, cev);
}

static int new_cache(watcher *w) {
  zkrc_cache_options co;
  zkrc_cache_options_init(&co);
  co.on_event = on_cache_event;
  co.event_arg = w;
  co.max_depth = w->cli->depth;
  const char *path = w->cli->path;
  int err;
  if (w->cli->shape == SHAPE_CHILDREN)
    err = zkrc_children_cache_new(&w->cache, w->s, path, &co);
  else if (w->cli->shape == SHAPE_TREE)
    err = zkrc_tree_cache_new(&w->cache, w->s, path, &co);
  else
    err = zkrc_node_cache_new(&w->cache, w->s, path, &co);
  if (err == ZKRC_EINVAL) {
    tool_error("invalid path '%s': refused by the cache", path);
    return TOOL_EXIT_BAD_PATH;
  }
  return err == ZKRC_OK ? 0 : tool_fail("cannot watch", err);
}

static int run_watch(watch_cli *cli, zkrc_session *s) {
  watcher w;
  memset(&w, 0, sizeof w);
  w.cli = cli;
  w.s = s;
  g_queue_init(&w.pending);
  int status = new_cache(&w);
  if (status != 0)
    return status;
  while (!w.done) {
    if (tool_child_poll(&w.child))
      command_exited(&w);
    report_pending(&w);
    if (w.done)
      break;
    tool_wait(tool_child_timeout(&w.child, -1));
    tool_signal sig;
    while (tool_next_signal(&sig))
      handle_signal(&w, &sig);
    drain_events(&w);
  }
  tool_child_kill_and_reap(&w.child); /* only after an internal failure */
  watch_event_free(w.for_command);
  zkrc_cache_free(w.cache); /* no listener runs after this */
  g_queue_clear_full(&w.pending, watch_event_free);
  watch_event *ev;
  while ((ev = next_cache_event()) != NULL)
    watch_event_free(ev);
  return w.status;
}

static int watch_main(watch_cli *cli) {
  if (strcmp(cli->path, "/") != 0) /* a cache of the whole tree is fine */
    tool_check_path(cli->path);
  zkrc_session *s;
  /* A watch goes on across expiries: a new session is opened. */
  int status = tool_start_session(&cli->o, 0, &s);
  if (status != 0)
    return status;
  status = run_watch(cli, s);
  zkrc_session_close(s);
  return status;
}

int cmd_watch(const char *program, int argc, char **argv) {
  watch_cli cli;
  memset(&cli, 0, sizeof cli);
  parse_args(&cli, program, argc, argv);
  int status = watch_main(&cli);
  if (cli.shell_command)
    g_free(cli.command); /* tool_shell_command()'s array */
  return status;
}
