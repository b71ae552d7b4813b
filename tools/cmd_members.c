/*
 * zkr members (zkr-members) - list the members of a group
 * (zkrecipes/group.h, Curator's GroupMember), or follow them as they join,
 * change and leave; with --service, the instances of a service
 * (zkrecipes/discovery.h, Curator's curator-x-discovery) the same way.  See
 * help_head, `zkr members --help' or zkr-members(1).
 *
 * The view comes from zkrc_group_new() without an id: a children cache of
 * the group, read again after a reconnection or on a new session after an
 * expiry.
 * Its listener runs on the session's executor and only queues a copy of
 * the event and wakes the main thread's loop (tool.h), which prints.
 * A service's instances are the children of BASE/NAME, each holding its
 * JSON record: the same view, each member's data parsed as a record.
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

#include <zkrecipes/discovery.h>
#include <zkrecipes/group.h>

#include "members.h"
#include "cli.h"
#include "commands.h"
#include "tool.h"

static const char help_head[] =
    "Usage: zkr members [OPTIONS] PATH\n"
    "       zkr members --watch [OPTIONS] PATH\n"
    "       zkr members --service NAME [--watch] [OPTIONS] BASE\n"
    "       zkr members --help | --version\n"
    "(zkr-members is the same program.)\n"
    "\n"
    "List the members of the group PATH (zkrecipes' group membership, or\n"
    "Apache Curator's GroupMember: one ephemeral child of PATH per member),\n"
    "sorted by id, one line each:\n"
    "  ID<TAB>DATA\n"
    "  ID    the member's id (its node's name)\n"
    "  DATA  its data, escaped as zkr-watch escapes values: \\\\ \\t \\n \\r,\n"
    "        and \\xHH for other control bytes and for every byte of data\n"
    "        that is not UTF-8 (printf '%b' turns it back into the bytes)\n"
    "A group that does not exist is an error (status 1), as in zkr ls;\n"
    "with --watch its members are reported once it is made.\n"
    "\n"
    "With --watch, follow the group instead: one line per change,\n"
    "  EVENT<TAB>ID<TAB>DATA\n"
    "  EVENT  joined (a member came), updated (its data changed, or its node\n"
    "         was deleted and created again) or left (it went; DATA: the\n"
    "         last data reported)\n"
    "until SIGINT, SIGTERM, SIGHUP or SIGQUIT (exit status 0) or --count\n"
    "changes.  Only changes are reported, not the members at the start\n"
    "(see --initial).  A member that changed twice between two reads is\n"
    "reported once; changes made while the connection is down are reported\n"
    "once it is back, on a new session after an expiry.\n"
    "\n"
    "With --service NAME, list (or follow) the instances of the service\n"
    "NAME registered under BASE (zkrecipes' service discovery, or Apache\n"
    "Curator's curator-x-discovery: the JSON record of each instance in\n"
    "BASE/NAME/ID) instead, one line each:\n"
    "  ID<TAB>ADDRESS<TAB>PORT        (--watch: EVENT<TAB> first)\n"
    "ADDRESS escaped as DATA is; ADDRESS or PORT empty when the record has\n"
    "none.  --json gives the whole record, payload included.  A node that\n"
    "holds no such record is left out, with a message on stderr.\n";

static const char help_tail[] =
    "\n"
    "Environment:\n" TOOL_ENVIRONMENT_HELP "                   auth file\n"
    "\n"
    "Exit status:\n"
    "  0    listed; with --watch: stopped by a signal, or --count changes\n"
    "  1    PATH does not exist (without --watch)\n"
    "  2    bad usage\n"
    "  65   invalid PATH (or BASE, or service NAME)\n"
    "  68   a server's name does not resolve\n"
    "  69   every server refused (said at once), none answered within the\n"
    "       connect timeout, the server list's chroot does not exist, or\n"
    "       the group was not read within the session timeout\n"
    "  74   writing standard output failed\n"
    "  76   ZooKeeper refused the watch, or the session was closed\n"
    "  77   credentials refused, or PATH's ACL forbids listing it\n"
    "  128+N  interrupted by signal N while connecting or reading\n";

static const cli_spec members_spec = {CLI_MEMBERS, "members", CLI_PATHS,
                                      help_head, help_tail};

/* A PATH that does not exist (as zkr ls). */
#define EXIT_NO_NODE 1

typedef struct members_cli {
  tool_options o;
  int watch;
  int initial;
  int json;
  int count;                /* --count; 0: no limit */
  const char *service;      /* --service NAME; NULL: a group */
  const char *path;         /* the group (--service: BASE/NAME) */
  zkrc_group_format format; /* --format; 0: Curator's */
} members_cli;

static void members_option(int id, const char *value, void *ctx) {
  members_cli *cli = ctx;
  switch (id) {
  case OPT_WATCH:
    cli->watch = 1;
    break;
  case 'i':
    cli->initial = 1;
    break;
  case OPT_COUNT:
    cli->count = tool_parse_int(value, 1, 1000000000, "--count");
    break;
  case OPT_JSON:
    cli->json = 1;
    break;
  case OPT_SERVICE:
    cli->service = value;
    break;
  case OPT_FORMAT:
    cli->format = strcmp(value, "curator") == 0 ? ZKRC_GROUP_CURATOR
                  : strcmp(value, "party") == 0 ? ZKRC_GROUP_KAZOO_PARTY
                  : strcmp(value, "shallow-party") == 0
                      ? ZKRC_GROUP_KAZOO_SHALLOW_PARTY
                      : 0;
    if (cli->format == 0)
      tool_usage_error("--format is curator, party or shallow-party, not %s",
                       value);
    break;
  }
}

static void parse_args(members_cli *cli, const char *program, int argc,
                       char **argv) {
  cli_args args;
  cli_parse(&members_spec, program, &cli->o, argc, argv, members_option, cli,
            &args);
  cli->path = cli_one_path(&args, 0);
  cli->o.waits_for_nodes = cli->watch; /* its chroot too, as the group */
  if (!cli->watch && (cli->initial || cli->count > 0))
    tool_usage_error("--initial and --count go with --watch");
  if (cli->service && cli->format)
    tool_usage_error("--format is a group's, not with --service");
}

/* ---------------------------------------------- from the group's executor */

/* An event of the group, copied: the member's fields are ours. */
typedef struct member_event {
  zkrc_group_event_type type;
  zkrc_group_member member; /* id NULL for events without a member */
} member_event;

static GMutex queue_mu;
static GQueue queue = G_QUEUE_INIT; /* of member_event *, oldest first */

static void member_event_free(gpointer p) {
  member_event *ev = p;
  if (ev) {
    g_free(ev->member.id);
    g_free(ev->member.data);
    g_free(ev);
  }
}

/* The group's listener (its executor): copy, queue, wake the loop. */
static void on_group_event(zkrc_group *g, const zkrc_group_event *ev,
                           void *arg) {
  (void)g;
  (void)arg;
  member_event *copy = g_new0(member_event, 1);
  copy->type = ev->type;
  if (ev->member) {
    copy->member = *ev->member;
    copy->member.id = g_strdup(ev->member->id);
    /* One byte more: the NUL the data is terminated with. */
    copy->member.data = ev->member->data
                            ? g_memdup2(ev->member->data, ev->member->len + 1)
                            : NULL;
  }
  g_mutex_lock(&queue_mu);
  g_queue_push_tail(&queue, copy);
  g_mutex_unlock(&queue_mu);
  tool_event wake = {.kind = TOOL_EV_WATCH};
  tool_post_event(&wake);
}

static member_event *next_member_event(void) {
  g_mutex_lock(&queue_mu);
  member_event *ev = g_queue_pop_head(&queue);
  g_mutex_unlock(&queue_mu);
  return ev;
}

/* ------------------------------------------------------------ the loop */

typedef struct follower {
  members_cli *cli;
  zkrc_session *s;
  zkrc_group *group;
  int initialized; /* the first complete view is in */
  int reported;    /* changes printed so far */
  int done;
  int status;
} follower;

static void finish(follower *f, int status) {
  if (!f->done) {
    f->done = 1;
    f->status = status;
  }
}

/* What printing returned: go on, or end (a reader gone, a failed write). */
static void printed(follower *f, int rc) {
  if (rc == 0)
    return;
  if (errno == EPIPE) {
    finish(f, 128 + SIGPIPE); /* the reader went away, as for `| head' */
    return;
  }
  tool_error("standard output: %s", strerror(errno));
  finish(f, TOOL_EXIT_IOERR);
}

/* --service: the record @p m holds (zkrc_service_instance_free() it), or
 * NULL, said on stderr, when it holds none. */
static zkrc_service_instance *instance_of(follower *f,
                                          const zkrc_group_member *m) {
  zkrc_service_instance *inst = NULL;
  int err = zkrc_service_instance_from_json(m->data, m->len, &inst);
  if (err != ZKRC_OK)
    tool_error("%s/%s: not a service instance record (%s): left out",
               f->cli->path, m->id, zkrc_strerror(err));
  return inst;
}

/* --service: @p ev's instance printed; 0 when its node holds no record. */
static int print_instance_change(follower *f, const member_event *ev) {
  zkrc_service_instance *inst = instance_of(f, &ev->member);
  if (inst == NULL)
    return 0;
  const char *name = zkrc_group_event_name(ev->type);
  printed(f, f->cli->json
                 ? members_print_instance_json_change(stdout, name, inst)
                 : members_print_instance_text(stdout, name, inst));
  zkrc_service_instance_free(inst);
  return 1;
}

static void print_change(follower *f, const member_event *ev) {
  const char *name = zkrc_group_event_name(ev->type);
  if (f->cli->service) {
    if (!print_instance_change(f, ev))
      return;
  } else {
    printed(f, f->cli->json
                   ? members_print_json_change(stdout, name, &ev->member)
                   : members_print_text(stdout, name, &ev->member));
  }
  if (f->done)
    return;
  f->reported++;
  if (f->cli->count > 0 && f->reported >= f->cli->count) {
    tool_verbose("%d changes reported", f->reported);
    finish(f, TOOL_EXIT_OK);
  }
}

static void group_event(follower *f, const member_event *ev) {
  switch (ev->type) {
  case ZKRC_GROUP_JOINED:
  case ZKRC_GROUP_UPDATED:
  case ZKRC_GROUP_LEFT:
    /* Before INITIALIZED: the members at the start. */
    if (f->cli->watch && (f->initialized || f->cli->initial))
      print_change(f, ev);
    break;
  case ZKRC_GROUP_INITIALIZED:
    f->initialized = 1;
    if (f->cli->watch)
      tool_verbose("watching %s", f->cli->path);
    break;
  case ZKRC_GROUP_CLOSED:
    tool_error("the session was closed for good");
    finish(f, TOOL_EXIT_ZOOKEEPER);
    break;
  default:
    break;
  }
}

static void handle_signal(follower *f, int signo) {
  if (!tool_is_stop_signal(signo))
    return;
  tool_verbose("SIG%s: stopping", sigabbrev_np(signo));
  /* Following: a stop signal is the normal end.  Still reading the list:
   * interrupted, as a shell reports it. */
  finish(f, f->cli->watch ? TOOL_EXIT_OK : 128 + signo);
}

static void drain_events(follower *f) {
  tool_event ev;
  while (tool_next_event(&ev)) {
    if (ev.kind == TOOL_EV_SESSION && ev.code == ZKRC_SESSION_EVENT_CONNECTED)
      tool_print_session(f->s);
    else if (ev.kind == TOOL_EV_SESSION &&
             ev.code == ZKRC_SESSION_EVENT_AUTH_FAILED)
      finish(f, tool_fail("the session ended", ZKRC_EAUTHFAILED));
    tool_event_clear(&ev);
  }
  member_event *mev;
  while (!f->done && (mev = next_member_event()) != NULL) {
    group_event(f, mev);
    member_event_free(mev);
  }
}

/* --service: the records of @p members printed (those holding one). */
static void print_instances(follower *f, const zkrc_group_member *members,
                            size_t count) {
  zkrc_service_instance **instances =
      g_new0(zkrc_service_instance *, count + 1);
  size_t n = 0;
  for (size_t i = 0; i < count; i++)
    if ((instances[n] = instance_of(f, &members[i])) != NULL)
      n++;
  if (f->cli->json) {
    printed(f, members_print_instances_json(stdout, f->cli->path,
                                            f->cli->service, instances, n));
  } else {
    for (size_t i = 0; i < n && !f->done; i++)
      printed(f, members_print_instance_text(stdout, NULL, instances[i]));
  }
  for (size_t i = 0; i < n; i++)
    zkrc_service_instance_free(instances[i]);
  g_free(instances);
}

/* The view, once read: the members printed. */
static void print_list(follower *f) {
  zkrc_group_member *members = NULL;
  size_t count = 0;
  int err = zkrc_group_members(f->group, &members, &count);
  if (err != ZKRC_OK) {
    finish(f, tool_fail("cannot list the members", err));
    return;
  }
  tool_verbose("%zu members in %s", count, f->cli->path);
  if (f->cli->service) {
    print_instances(f, members, count);
  } else if (f->cli->json) {
    printed(f, members_print_json_list(stdout, f->cli->path, members, count));
  } else {
    for (size_t i = 0; i < count && !f->done; i++)
      printed(f, members_print_text(stdout, NULL, &members[i]));
  }
  zkrc_group_members_free(members, count);
  finish(f, TOOL_EXIT_OK);
}

/* Runs with the session's handle pinned (the main thread, not the
 * completion thread): may PATH's children be listed?  The cache leaves out
 * what it may not read (an empty view, not an error): ask once first.  A
 * group that does not exist yet is for --watch to wait for. */
static int read_children_with_handle(zhandle_t *zh, void *arg) {
  struct String_vector kids = {0, NULL};
  int rc = zoo_get_children(zh, (const char *)arg, 0, &kids);
  deallocate_String_vector(&kids);
  return zkrc_from_zk_error(rc);
}

static int check_readable(follower *f) {
  int err = zkrc_session_with_handle(f->s, read_children_with_handle,
                                     (void *)f->cli->path);
  if (err == ZKRC_OK || (err == ZKRC_ENONODE && f->cli->watch))
    return 0; /* followed: its members come when it is made */
  if (err == ZKRC_ENONODE) {
    tool_error("%s: no such node", f->cli->path); /* as zkr ls says it */
    return EXIT_NO_NODE;
  }
  char *what = g_strdup_printf("cannot list the group %s", f->cli->path);
  int status = tool_fail(what, err);
  g_free(what);
  return status;
}

static int start_group(follower *f) {
  zkrc_group_options go;
  zkrc_group_options_init(&go);
  go.on_event = on_group_event;
  go.event_arg = f;
  if (f->cli->format)
    go.format = f->cli->format;
  int err =
      zkrc_group_new(&f->group, f->s, f->cli->path, &go); /* no id: watch */
  if (err == ZKRC_EINVAL) {
    tool_error("invalid path '%s': refused for a group", f->cli->path);
    return TOOL_EXIT_BAD_PATH;
  }
  return err == ZKRC_OK ? 0 : tool_fail("cannot watch the group", err);
}

static int run(members_cli *cli, zkrc_session *s) {
  follower f;
  memset(&f, 0, sizeof f);
  f.cli = cli;
  f.s = s;
  int status = check_readable(&f);
  if (status == 0)
    status = start_group(&f);
  if (status != 0)
    return status;
  int64_t read_by = tool_now_ms() + cli->o.session_timeout_ms;
  while (!f.done) {
    if (f.initialized && !cli->watch) {
      print_list(&f);
      break;
    }
    if (!f.initialized && tool_now_ms() >= read_by) {
      tool_error("the group %s was not read within %d ms", cli->path,
                 cli->o.session_timeout_ms);
      finish(&f, TOOL_EXIT_UNAVAILABLE);
      break;
    }
    tool_wait(f.initialized ? -1 : tool_ms_until(read_by, -1));
    tool_signal sig;
    while (tool_next_signal(&sig))
      handle_signal(&f, sig.signo);
    drain_events(&f);
  }
  zkrc_group_free(f.group); /* no listener runs after this */
  member_event *ev;
  while ((ev = next_member_event()) != NULL)
    member_event_free(ev);
  return f.status;
}

int cmd_members(const char *program, int argc, char **argv) {
  members_cli cli;
  memset(&cli, 0, sizeof cli);
  parse_args(&cli, program, argc, argv);
  char *service_path = NULL;
  if (cli.service) {
    if (cli.service[0] == '\0' || strchr(cli.service, '/')) {
      tool_error("invalid service name '%s': a node name", cli.service);
      return TOOL_EXIT_BAD_PATH;
    }
    tool_check_path(cli.path); /* BASE itself */
    /* As Curator's ZKPaths.makePath() joins them. */
    const char *base = strcmp(cli.path, "/") == 0 ? "" : cli.path;
    cli.path = service_path = g_strdup_printf("%s/%s", base, cli.service);
  }
  tool_check_path(cli.path);
  zkrc_session *s;
  /* Following goes on across expiries: a new session is opened. */
  int status = tool_start_session(&cli.o, !cli.watch, &s);
  if (status != 0)
    return status;
  status = run(&cli, s);
  zkrc_session_close(s);
  g_free(service_path);
  return status;
}
