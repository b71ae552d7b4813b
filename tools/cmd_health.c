/*
 * zkr health - can this host use ZooKeeper: connect as every subcommand
 * does, wait for the session's lease to be confirmed, and report the
 * member it is connected to, the session, the lease, and the member's
 * version and mode (its "srvr" four-letter word).  Exit 0 or 69, for
 * scripts and container probes.  See help_head or zkr(1).
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <glib.h>
#include "cli.h"
#include "commands.h"
#include "json_out.h"
#include "tool.h"

static const char help_head[] =
    "Usage: zkr health [OPTIONS]\n"
    "       zkr health --help | --version\n"
    "\n"
    "Connect to the servers as every subcommand does, send a sync through\n"
    "the session and wait for its answer (the member forwards it to the\n"
    "ensemble's leader: the session is known there), and print, one\n"
    "\"KEY<TAB>VALUE\" line each (--json: one JSON object, null for\n"
    "\"unknown\"):\n"
    "  server      the member connected to (its address:port)\n"
    "  session     the session id (hex)\n"
    "  timeout_ms  the session timeout the servers granted\n"
    "  lease_ms    the session's lease remaining once the sync was answered\n"
    "  version     the member's ZooKeeper version   (from its \"srvr\"\n"
    "  mode        leader, follower, standalone...   four-letter word;\n"
    "                                                \"unknown\" when "
    "refused)\n"
    "Then close the session and exit 0: the servers can be used from here.\n"
    "For scripts, container probes and monitoring.\n";

static const char help_tail[] =
    "\n"
    "Environment:\n" TOOL_ENVIRONMENT_HELP "                   auth file\n"
    "\n"
    "Exit status:\n"
    "  0    connected, the sync answered\n"
    "  2    bad usage\n"
    "  68   a server's name does not resolve\n"
    "  69   every server refused (said at once), none answered within the\n"
    "       connect timeout, the sync was not answered within a session\n"
    "       timeout, or the server list's chroot does not exist\n"
    "  74   writing standard output failed\n"
    "  76   ZooKeeper refused or failed\n"
    "  77   credentials refused\n";

static const cli_spec health_spec = {CLI_HEALTH, "health", CLI_PATHS, help_head,
                                     help_tail};

typedef struct health_cli {
  tool_options o;
  int json;
} health_cli;

/* What was found. */
typedef struct health {
  char *server;
  int64_t session;
  int timeout_ms;
  int lease_ms;
  char *version; /* NULL: unknown */
  char *mode;    /* NULL: unknown */
} health;

static void health_option(int id, const char *value, void *ctx) {
  (void)value;
  health_cli *cli = ctx;
  if (id == OPT_JSON)
    cli->json = 1;
}

/* ------------------------------------------------- the member's "srvr" */

/* @p word's answer from the member at @p hostport (NULL when it cannot
 * be had within @p timeout_ms); g_free it. */
static char *four_letter_word(const char *hostport, const char *word,
                              int timeout_ms) {
  char *host, *port;
  if (tool_split_host_port(hostport, &host, &port) != 0)
    return NULL;
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
  int rc = getaddrinfo(host, port, &hints, &ai);
  g_free(host);
  g_free(port);
  if (rc != 0)
    return NULL;
  int fd = tool_connect_within(ai, timeout_ms);
  freeaddrinfo(ai);
  if (fd < 0)
    return NULL;
  GString *answer = g_string_new(NULL);
  int64_t deadline = tool_now_ms() + timeout_ms;
  int ok = send(fd, word, strlen(word), MSG_NOSIGNAL) == (ssize_t)strlen(word);
  while (ok && answer->len < 65536) {
    struct pollfd p = {fd, POLLIN, 0};
    int left = tool_ms_until(deadline, -1);
    if (left == 0 || poll(&p, 1, left) <= 0)
      break;
    char buf[4096];
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0)
      break; /* the member closes once it has answered */
    g_string_append_len(answer, buf, n);
  }
  close(fd);
  return g_string_free(answer, answer->len == 0);
}

/* The value of "KEY: value" in @p text (g_free it), or NULL. */
static char *field(const char *text, const char *key) {
  gchar **lines = g_strsplit(text, "\n", -1);
  char *value = NULL;
  size_t len = strlen(key);
  for (int i = 0; lines[i] && !value; i++)
    if (strncmp(lines[i], key, len) == 0 && lines[i][len] == ':')
      value = g_strdup(g_strstrip(lines[i] + len + 1));
  g_strfreev(lines);
  return value;
}

/* ------------------------------------------------------------- session */

static int current_server_with_handle(zhandle_t *zh, void *arg) {
  const char *server = zoo_get_current_server(zh);
  *(char **)arg = g_strdup(server ? server : "");
  return ZKRC_OK;
}

/* A sync sent through the session, answered on the completion thread. */
typedef struct synced {
  GMutex mu;
  GCond cond;
  int rc;   /* its answer (ZOK, ...) */
  int done; /* answered */
} synced;

static void sync_answered(int rc, const char *value, const void *data) {
  (void)value;
  synced *y = (synced *)data;
  g_mutex_lock(&y->mu);
  y->rc = rc;
  y->done = 1;
  g_cond_signal(&y->cond);
  g_mutex_unlock(&y->mu);
}

static int send_sync_with_handle(zhandle_t *zh, void *arg) {
  return zkrc_from_zk_error(zoo_async(zh, "/", sync_answered, arg));
}

/* Confirm the session with the ensemble: a sync through it (which its
 * member forwards to the leader) answered within @p timeout_ms, and a
 * lease then.  Returns the lease remaining (ms), 0 when not confirmed, or
 * -(128+N) after stop signal N. */
static int confirm_lease(zkrc_session *s, int timeout_ms) {
  int64_t deadline = tool_now_ms() + timeout_ms;
  static synced y; /* outlives us: an answer may come after the close */
  g_mutex_lock(&y.mu);
  y.done = 0;
  g_mutex_unlock(&y.mu);
  if (zkrc_session_with_handle(s, send_sync_with_handle, &y) != ZKRC_OK)
    return 0;
  for (;;) {
    g_mutex_lock(&y.mu);
    int done = y.done, rc = y.rc;
    g_mutex_unlock(&y.mu);
    if (done)
      return rc == ZOK && zkrc_session_lease_remaining(s) > 0
                 ? zkrc_session_lease_remaining(s)
                 : 0;
    if (tool_now_ms() >= deadline)
      return 0;
    int stop = tool_stop_signal_caught();
    if (stop)
      return -stop;
    /* The answer wakes no pipe of ours: look again shortly. */
    g_mutex_lock(&y.mu);
    if (!y.done)
      g_cond_wait_until(&y.cond, &y.mu, g_get_monotonic_time() + 10000);
    g_mutex_unlock(&y.mu);
  }
}

/* ------------------------------------------------------------- output */

static int print_text(const health *h) {
  printf("server\t%s\n", h->server);
  printf("session\t0x%" PRIx64 "\n", (uint64_t)h->session);
  printf("timeout_ms\t%d\n", h->timeout_ms);
  printf("lease_ms\t%d\n", h->lease_ms);
  printf("version\t%s\n", h->version ? h->version : "unknown");
  printf("mode\t%s\n", h->mode ? h->mode : "unknown");
  return fflush(stdout) == 0 && !ferror(stdout) ? 0 : -1;
}

static int print_json(const health *h) {
  JsonBuilder *b = json_builder_new();
  json_builder_begin_object(b);
  json_out_string(b, "server", h->server);
  char *id = g_strdup_printf("0x%" PRIx64, (uint64_t)h->session);
  json_out_string(b, "session", id);
  g_free(id);
  json_out_int(b, "timeout_ms", h->timeout_ms);
  json_out_int(b, "lease_ms", h->lease_ms);
  /* null when the member did not say (text: "unknown") */
  json_out_text(b, "version", h->version, h->version ? strlen(h->version) : 0);
  json_out_text(b, "mode", h->mode, h->mode ? strlen(h->mode) : 0);
  json_builder_end_object(b);
  return json_out_print(stdout, b);
}

/* ---------------------------------------------------------------- main */

static int check(health_cli *cli, health *h) {
  zkrc_session *s;
  int status = tool_start_session(&cli->o, 1, &s);
  if (status != 0)
    return status;
  /* At most a session timeout more: a sync is one round trip. */
  int confirm_ms = zkrc_session_timeout(s);
  h->lease_ms = confirm_lease(s, confirm_ms);
  h->session = zkrc_session_id(s);
  h->timeout_ms = zkrc_session_timeout(s);
  if (zkrc_session_with_handle(s, current_server_with_handle, &h->server) !=
          ZKRC_OK ||
      h->server[0] == '\0') {
    g_free(h->server);
    h->server = g_strdup("unknown");
  }
  zkrc_session_close(s);
  if (h->lease_ms < 0)
    return -h->lease_ms; /* a stop signal: 128+N */
  if (h->lease_ms == 0) {
    tool_error("connected to %s, but a sync through the session was not "
               "answered within %d ms",
               h->server, confirm_ms);
    return TOOL_EXIT_UNAVAILABLE;
  }
  /* Not long: a member that does not answer it is still usable. */
  int srvr_ms =
      cli->o.connect_timeout_ms < 2000 ? cli->o.connect_timeout_ms : 2000;
  char *srvr = strcmp(h->server, "unknown") == 0
                   ? NULL
                   : four_letter_word(h->server, "srvr", srvr_ms);
  int stop = tool_stop_signal_caught();
  if (stop) {
    g_free(srvr);
    return stop;
  }
  if (srvr) {
    h->version = field(srvr, "Zookeeper version");
    h->mode = field(srvr, "Mode");
  }
  if (h->version == NULL)
    tool_verbose("%s did not answer srvr (not in its "
                 "4lw.commands.whitelist?)",
                 h->server);
  g_free(srvr);
  int printed = cli->json ? print_json(h) : print_text(h);
  if (printed != 0) {
    tool_error("standard output: %s", strerror(errno));
    return TOOL_EXIT_IOERR;
  }
  return TOOL_EXIT_OK;
}

int cmd_health(const char *program, int argc, char **argv) {
  health_cli cli;
  memset(&cli, 0, sizeof cli);
  cli_args args;
  cli_parse(&health_spec, program, &cli.o, argc, argv, health_option, &cli,
            &args);
  if (args.n_paths > 0)
    tool_usage_error("unexpected argument: %s", args.paths[0]);
  g_free(args.paths);
  health h = {0};
  int status = check(&cli, &h);
  g_free(h.server);
  g_free(h.version);
  g_free(h.mode);
  return status;
}
