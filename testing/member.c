/*
 * testing/member.c - one ZooKeeper member: its directory and configuration,
 * and its JVM's start, kill, stop and exit.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>

#include "internal.h"

/* How long a member gets to exit after SIGTERM before SIGKILL. */
#define TERMINATE_WAIT_MS 15000
/* How long a SIGKILLed member may take to die. */
#define KILL_WAIT_MS 10000

static int make_dir(const char *path) {
  if (mkdir(path, 0755) != 0 && errno != EEXIST) {
    fprintf(stderr, "zkrecipes-testing: cannot create %s: %s\n", path,
            strerror(errno));
    return -1;
  }
  return 0;
}

int zkrc__member_init(zkrc_ensemble *e, zkrc__member *m, int index) {
  memset(m, 0, sizeof *m);
  m->index = index;
  m->pid = -1;
  m->dir = g_strdup_printf("%s/m%d", e->dir, index);
  m->data_dir = g_strdup_printf("%s/data", m->dir);
  m->config_path = g_strdup_printf("%s/zoo.cfg", m->dir);
  m->log_path = g_strdup_printf("%s/member.log", m->dir);
  if (make_dir(m->dir) != 0 || make_dir(m->data_dir) != 0)
    return -1;
  return 0;
}

void zkrc__member_free(zkrc__member *m) {
  g_free(m->dir);
  g_free(m->data_dir);
  g_free(m->config_path);
  g_free(m->log_path);
  m->dir = m->data_dir = m->config_path = m->log_path = NULL;
}

void zkrc__member_wipe(zkrc__member *m) {
  if (zkrc__remove_tree(m->data_dir) != 0)
    fprintf(stderr, "zkrecipes-testing: cannot remove %s: %s\n", m->data_dir,
            strerror(errno));
  make_dir(m->data_dir);
  unlink(m->log_path);
}

/* TLS only: the secure client port, and no clientPort at all (ZooKeeper
 * then opens no plaintext client port).  Client certificates are required
 * (need) and checked against the test CA (its PEM certificate as the trust
 * store: see security.c).  The peers' connections stay plaintext
 * (no sslQuorum). */
static void append_tls_config(const zkrc_ensemble *e, const zkrc__member *m,
                              GString *cfg) {
  g_string_append_printf(
      cfg,
      "secureClientPort=%d\n"
      "secureClientPortAddress=127.0.0.1\n"
      "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n"
      "ssl.keyStore.location=%s\n"
      "ssl.keyStore.password=" ZKRC_TLS_STORE_PASSWORD "\n"
      "ssl.keyStore.type=PKCS12\n"
      "ssl.trustStore.location=%s\n"
      "ssl.trustStore.type=PEM\n"
      "ssl.clientAuth=need\n",
      m->client_port, e->tls_files[ZKRC_TLS_SERVER_KEYSTORE],
      e->tls_files[ZKRC_TLS_CA]);
}

/* The server lines of the first configuration: every member, with its
 * client address when the ensemble allows reconfiguration. */
static void append_server_lines(const zkrc_ensemble *e, GString *cfg) {
  for (int i = 0; i < e->size; i++) {
    g_string_append_printf(cfg, "server.%d=127.0.0.1:%d:%d", i + 1,
                           e->members[i].peer_port,
                           e->members[i].election_port);
    if (e->opts.reconfig)
      g_string_append_printf(cfg, ":participant;127.0.0.1:%d",
                             e->members[i].client_port);
    g_string_append_c(cfg, '\n');
  }
}

int zkrc__member_configure(const zkrc_ensemble *e, const zkrc__member *m,
                           const char *servers) {
  const zkrc_ensemble_options *o = &e->opts;
  GString *cfg = g_string_new(NULL);
  g_string_append_printf(cfg,
                         "# written by libzkrecipes-testing\n"
                         "tickTime=%d\n"
                         "dataDir=%s\n",
                         o->tick_ms, m->data_dir);
  if (o->tls)
    append_tls_config(e, m, cfg);
  else if (!o->reconfig) /* else in the server lines */
    g_string_append_printf(cfg,
                           "clientPort=%d\n"
                           "clientPortAddress=127.0.0.1\n",
                           m->client_port);
  g_string_append(cfg, "admin.enableServer=false\n"
                       "4lw.commands.whitelist=*\n"
                       "maxClientCnxns=0\n");
  if (o->sasl)
    g_string_append(cfg, "authProvider.sasl="
                         "org.apache.zookeeper.server.auth."
                         "SASLAuthenticationProvider\n");
  if (o->max_session_timeout_ms > 0)
    g_string_append_printf(cfg, "maxSessionTimeout=%d\n",
                           o->max_session_timeout_ms);
  if (o->no_fsync)
    g_string_append(cfg, "forceSync=no\n");
  if (o->reconfig)
    g_string_append(cfg, "reconfigEnabled=true\nstandaloneEnabled=false\n"
                         "skipACL=yes\n");
  if (e->size > 1 || o->reconfig) {
    /* Generous in ticks, since a tick is only 200 ms: a JVM starting on a
     * loaded machine must not miss initLimit. */
    g_string_append(cfg, "initLimit=50\nsyncLimit=10\n");
    if (servers == NULL) {
      append_server_lines(e, cfg);
    } else { /* a joiner: the configuration it joins, then itself */
      g_string_append(cfg, servers);
      g_string_append_printf(cfg,
                             "server.%d=127.0.0.1:%d:%d:participant;"
                             "127.0.0.1:%d\n",
                             m->index + 1, m->peer_port, m->election_port,
                             m->client_port);
    }
  }
  int rc = zkrc__write_file(m->config_path, cfg->str);
  g_string_free(cfg, TRUE);
  if (rc == 0 && (e->size > 1 || o->reconfig)) {
    char *myid_path = g_strdup_printf("%s/myid", m->data_dir);
    char myid[16];
    snprintf(myid, sizeof myid, "%d\n", m->index + 1);
    rc = zkrc__write_file(myid_path, myid);
    g_free(myid_path);
  }
  return rc;
}

/* Append a printf-formatted argument to @p argv. */
static void __attribute__((format(printf, 2, 3)))
add_arg(GPtrArray *argv, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_ptr_array_add(argv, g_strdup_vprintf(fmt, ap));
  va_end(ap);
}

/* The JVM's command line.  Every string is owned by the returned array
 * (g_strfreev). */
static char **java_argv(const zkrc_ensemble *e, const zkrc__member *m) {
  const zkrc_ensemble_options *o = &e->opts;
  GPtrArray *a = g_ptr_array_new();
  add_arg(a, "%s", e->java);
  /* A small, quickly starting JVM: members only hold test data. */
  add_arg(a, "-Xmx%dm", o->heap_mb > 0 ? o->heap_mb : 256);
  add_arg(a, "-Xms32m");
  add_arg(a, "-XX:+UseSerialGC");
  add_arg(a, "-XX:TieredStopAtLevel=1");
  add_arg(a, "-XX:-UsePerfData"); /* no /tmp/hsperfdata_USER */
  add_arg(a, "-XX:+ExitOnOutOfMemoryError");
  add_arg(a, "-Djava.net.preferIPv4Stack=true");
  add_arg(a, "-Dzookeeper.admin.enableServer=false");
  add_arg(a, "-Dznode.container.checkIntervalMs=%d", o->container_check_ms);
  /* Elections back off up to 60 s by default; a test cannot wait that. */
  add_arg(a, "-Dzookeeper.fastleader.maxNotificationInterval=2000");
  add_arg(a, "-Dzookeeper.cnxTimeout=2000");
  add_arg(a, "-Dzookeeper.preAllocSize=4096");
  if (o->no_fsync)
    add_arg(a, "-Dzookeeper.forceSync=no");
  /* The JAAS file's "Server" section: SASL DIGEST-MD5 users. */
  if (o->sasl)
    add_arg(a, "-Djava.security.auth.login.config=%s", e->jaas_path);
  /* TTL nodes (zkrc_ensemble_options.extended_types). */
  if (o->extended_types)
    add_arg(a, "-Dzookeeper.extendedTypesEnabled=true");
  add_arg(a, "-Dorg.slf4j.simpleLogger.showDateTime=true");
  add_arg(a, "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS");
  add_arg(a, "-cp");
  add_arg(a, "%s", e->class_path);
  add_arg(a, "org.apache.zookeeper.server.quorum.QuorumPeerMain");
  /* Last, and under the ensemble directory: the reaper recognises its
   * members by it. */
  add_arg(a, "%s", m->config_path);
  g_ptr_array_add(a, NULL);
  return (char **)g_ptr_array_free(a, FALSE);
}

/* Where the member's output goes: its log file, or our stderr. */
static int open_output(const zkrc_ensemble *e, const zkrc__member *m) {
  if (e->log_to_stderr)
    return fcntl(2, F_DUPFD_CLOEXEC, 3);
  int fd = open(m->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    fprintf(stderr, "zkrecipes-testing: cannot open %s: %s\n", m->log_path,
            strerror(errno));
  return fd;
}

int zkrc__member_spawn(zkrc_ensemble *e, zkrc__member *m) {
  if (m->pid > 0)
    return 0;
  int out = open_output(e, m);
  if (out < 0)
    return -1;
  if (!e->log_to_stderr) {
    char banner[96];
    int len =
        snprintf(banner, sizeof banner,
                 "=== zkrecipes-testing: starting member %d ===\n", m->index);
    ssize_t unused = write(out, banner, (size_t)len);
    (void)unused;
  }
  char **argv = java_argv(e, m);
  pid_t pid = zkrc__spawn(argv, m->dir, out);
  g_strfreev(argv);
  close(out);
  if (pid < 0)
    return -1;
  m->pid = pid;
  m->paused = 0;
  zkrc__reaper_watch(&e->reaper, pid);
  return 0;
}

/* The member is gone: forget it. */
static void member_gone(zkrc_ensemble *e, zkrc__member *m) {
  zkrc__reaper_forget(&e->reaper, m->pid);
  m->pid = -1;
  m->paused = 0;
}

void zkrc__member_kill(zkrc_ensemble *e, zkrc__member *m) {
  if (m->pid <= 0)
    return;
  if (kill(m->pid, SIGKILL) != 0 && errno != ESRCH)
    fprintf(stderr, "zkrecipes-testing: kill %d: %s\n", (int)m->pid,
            strerror(errno));
  if (zkrc__wait_exit(m->pid, KILL_WAIT_MS) != 1)
    fprintf(stderr, "zkrecipes-testing: member %d (pid %d) did not die\n",
            m->index, (int)m->pid);
  member_gone(e, m);
}

int zkrc__member_terminate(zkrc_ensemble *e, zkrc__member *m) {
  if (m->pid <= 0)
    return -1;
  if (kill(m->pid, SIGTERM) != 0 && errno != ESRCH)
    fprintf(stderr, "zkrecipes-testing: kill %d: %s\n", (int)m->pid,
            strerror(errno));
  /* A stopped process acts on SIGTERM only once continued. */
  if (m->paused)
    kill(m->pid, SIGCONT);
  if (zkrc__wait_exit(m->pid, TERMINATE_WAIT_MS) != 1) {
    fprintf(stderr,
            "zkrecipes-testing: member %d ignored SIGTERM for %d "
            "ms; killing it\n",
            m->index, TERMINATE_WAIT_MS);
    zkrc__member_kill(e, m);
    return 0;
  }
  member_gone(e, m);
  return 0;
}

int zkrc__member_reap_if_exited(zkrc_ensemble *e, zkrc__member *m) {
  int status = 0;
  if (m->pid <= 0 || !zkrc__has_exited(m->pid, &status))
    return 0;
  member_gone(e, m);
  return 1;
}

int zkrc__member_serving(const zkrc_ensemble *e, int client_port,
                         int timeout_ms, char *mode, size_t mode_size) {
  char *answer = NULL;
  if (zkrc__four_letter(e->tls_ctx, client_port, "srvr", timeout_ms, &answer) !=
      0)
    return 0;
  const char *line = strstr(answer, "Mode: ");
  int serving = line != NULL;
  if (serving && mode && mode_size > 0) {
    line += strlen("Mode: ");
    size_t len = strcspn(line, "\r\n");
    if (len >= mode_size)
      len = mode_size - 1;
    memcpy(mode, line, len);
    mode[len] = '\0';
  }
  free(answer);
  return serving;
}
