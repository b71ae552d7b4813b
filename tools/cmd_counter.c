/*
 * zkr counter - read or add to a counter in the format of Curator's
 * SharedCount (the default), Curator's DistributedAtomicLong or kazoo's
 * Counter (zkrecipes/counter.h).  See help_head or zkr(1).
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>
#include "cli.h"
#include "commands.h"
#include "json_out.h"
#include "tool.h"
#include "zkrecipes/counter.h"

static const char help_head[] =
    "Usage: zkr counter [OPTIONS] get PATH\n"
    "       zkr counter [OPTIONS] add PATH [N]\n"
    "       zkr counter --help | --version\n"
    "\n"
    "Print the counter at PATH, or add N (default 1; a negative N after\n"
    "\"--\") and print the new value.  An add reads the value and writes\n"
    "the sum only at the version it read, and tries again after a\n"
    "concurrent change (10 tries, with a backoff), creating the node\n"
    "when it does not exist; a missing or empty node reads 0.  --json\n"
    "prints {\"path\", \"format\", \"value\", \"previous\" (add), "
    "\"version\"}.\n"
    "Formats (--format):\n"
    "  curator      Curator's SharedCount: 4 bytes, big-endian (the\n"
    "               default; also kazoo's Counter(support_curator=True))\n"
    "  atomic-long  Curator's DistributedAtomicLong: 8 bytes, big-endian\n"
    "  kazoo        kazoo's Counter: the number as decimal text\n";

static const char help_tail[] =
    "\n"
    "Environment:\n" TOOL_ENVIRONMENT_HELP "                   auth file\n"
    "\n"
    "Exit status:\n"
    "  0    printed (the add applied)\n"
    "  2    bad usage\n"
    "  65   invalid PATH, or the node's data is not a counter of the\n"
    "       format (nothing written), or the sum would overflow it\n"
    "  68   a server's name does not resolve\n"
    "  69   no server within the connect timeout, or no answer within a\n"
    "       session timeout (an add may or may not have applied)\n"
    "  74   writing standard output failed\n"
    "  75   the add met a concurrent change at every try (not applied)\n"
    "  76   ZooKeeper refused or failed\n"
    "  77   credentials refused\n";

static const cli_spec counter_spec = {CLI_COUNTER, "counter", CLI_PATHS,
                                      help_head, help_tail};

typedef struct counter_cli {
  tool_options o;
  int json;
  zkrc_counter_format format;
} counter_cli;

static void counter_option(int id, const char *value, void *ctx) {
  counter_cli *cli = ctx;
  if (id == OPT_JSON) {
    cli->json = 1;
  } else if (id == OPT_FORMAT) {
    if (strcmp(value, "curator") == 0)
      cli->format = ZKRC_COUNTER_SHARED_COUNT;
    else if (strcmp(value, "atomic-long") == 0)
      cli->format = ZKRC_COUNTER_ATOMIC_LONG;
    else if (strcmp(value, "kazoo") == 0)
      cli->format = ZKRC_COUNTER_KAZOO;
    else
      tool_usage_error("--format is curator, atomic-long or kazoo, not %s",
                       value);
  }
}

/* The format's name as --format spells it. */
static const char *format_word(zkrc_counter_format f) {
  return f == ZKRC_COUNTER_SHARED_COUNT ? "curator"
                                        : zkrc_counter_format_name(f);
}

static int print_result(const counter_cli *cli, const char *path, int add,
                        const zkrc_counter_result *r) {
  if (!cli->json) {
    printf("%" PRId64 "\n", r->post_value);
    return fflush(stdout) == 0 && !ferror(stdout) ? 0 : -1;
  }
  JsonBuilder *b = json_builder_new();
  json_builder_begin_object(b);
  json_out_string(b, "path", path);
  json_out_string(b, "format", format_word(cli->format));
  json_out_int(b, "value", r->post_value);
  if (add)
    json_out_int(b, "previous", r->pre_value);
  json_out_int(b, "version", r->version);
  json_builder_end_object(b);
  return json_out_print(stdout, b);
}

/* A counter call's error as an exit status, after a message. */
static int counter_fail(const counter_cli *cli, const char *path, int err) {
  switch (err) {
  case ZKRC_EBADNODE:
    tool_error("%s: not a counter of format %s (--format curator, "
               "atomic-long or kazoo?); nothing written",
               path, format_word(cli->format));
    return TOOL_EXIT_BAD_PATH;
  case ZKRC_EOVERFLOW:
    tool_error("%s: %s; nothing written", path, zkrc_strerror(err));
    return TOOL_EXIT_BAD_PATH;
  case ZKRC_EBADVERSION:
    tool_error("%s: changed by others at every try; not applied", path);
    return TOOL_EXIT_LOST;
  default:
    return tool_fail(path, err);
  }
}

static int run(counter_cli *cli, const char *op, const char *path, int64_t n) {
  zkrc_session *s;
  int status = tool_start_session(&cli->o, 1, &s);
  if (status != 0)
    return status;
  zkrc_counter_options co;
  zkrc_counter_options_init(&co);
  co.format = cli->format;
  zkrc_counter_result r;
  int add = strcmp(op, "add") == 0;
  /* Each try is a round trip or two; all of them within two session
   * timeouts. */
  int timeout_ms = 2 * zkrc_session_timeout(s);
  int err = add ? zkrc_counter_add(s, path, n, &co, &r, timeout_ms)
                : zkrc_counter_get(s, path, &co, &r, timeout_ms);
  zkrc_session_close(s);
  if (err != ZKRC_OK)
    return counter_fail(cli, path, err);
  if (print_result(cli, path, add, &r) != 0) {
    tool_error("standard output: %s", strerror(errno));
    return TOOL_EXIT_IOERR;
  }
  return TOOL_EXIT_OK;
}

int cmd_counter(const char *program, int argc, char **argv) {
  counter_cli cli;
  memset(&cli, 0, sizeof cli);
  cli.format = ZKRC_COUNTER_SHARED_COUNT;
  cli_args args;
  cli_parse(&counter_spec, program, &cli.o, argc, argv, counter_option, &cli,
            &args);
  const char *op = args.n_paths > 0 ? args.paths[0] : NULL;
  int add = op && strcmp(op, "add") == 0;
  if (op == NULL || (!add && strcmp(op, "get") != 0))
    tool_usage_error("say get or add (zkr counter get|add PATH [N])");
  if (args.n_paths < 2)
    tool_usage_error("PATH is missing");
  if (args.n_paths > (add ? 3 : 2))
    tool_usage_error("unexpected argument: %s", args.paths[add ? 3 : 2]);
  const char *path = args.paths[1];
  int64_t n = 1;
  if (args.n_paths == 3) {
    char *end;
    errno = 0;
    n = g_ascii_strtoll(args.paths[2], &end, 10);
    if (errno != 0 || end == args.paths[2] || *end != '\0')
      tool_usage_error("N is a whole number, not %s", args.paths[2]);
  }
  g_free(args.paths);
  tool_check_path(path);
  return run(&cli, op, path, n);
}
