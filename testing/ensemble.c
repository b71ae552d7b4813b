/*
 * testing/ensemble.c - the public API of libzkrecipes-testing: starting and
 * stopping an ensemble, controlling its members, asking them questions, and
 * expiring sessions.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <glib.h>

#include "internal.h"

#define DEFAULT_TICK_MS 200
#define DEFAULT_CONTAINER_CHECK_MS 100
#define DEFAULT_START_TIMEOUT_MS 60000
/* Bound of one four-letter word asked by the user. */
#define FOUR_LETTER_TIMEOUT_MS 5000
/* Pause between two polls of `srvr`. */
#define POLL_INTERVAL_MS 50
/* Attempts at starting, each on new ports, when a port was taken. */
#define START_ATTEMPTS 3
/* Log lines shown when a member fails. */
#define LOG_TAIL_LINES 40

/* The server's jars in Debian's layout (/usr/share/java); the first two are
 * required. */
static const char *const server_jars[] = {
    "zookeeper",
    "zookeeper-jute",
    "netty-handler",
    "netty-common",
    "netty-buffer",
    "netty-transport",
    "netty-codec",
    "netty-resolver",
    "netty-transport-native-epoll",
    "netty-transport-native-unix-common",
    "slf4j-api",
    "slf4j-simple",
    "metrics-core",
    "commons-cli",
    "snappy-java",
};
#define REQUIRED_JARS 2
#define JAR_DIR "/usr/share/java"

static int env_flag(const char *name) {
  const char *value = getenv(name);
  return value && *value && strcmp(value, "0") != 0;
}

/* ---- options ------------------------------------------------------------ */

/* The defaults, in a whole struct of ours. */
static void ensemble_options_defaults(zkrc_ensemble_options *opts) {
  memset(opts, 0, sizeof *opts);
  opts->size = sizeof *opts;
  opts->members = 1;
  opts->tick_ms = DEFAULT_TICK_MS;
  opts->start_timeout_ms = DEFAULT_START_TIMEOUT_MS;
}

void zkrc_ensemble_options_init_sized(zkrc_ensemble_options *opts,
                                      size_t size) {
  zkrc_ensemble_options full;
  ensemble_options_defaults(&full);
  zkrc__testing_options_give(opts, size, &full, sizeof full);
}

/* Copy @p in (NULL: defaults) with zeros replaced by defaults.  -1 when an
 * option is out of range. */
static int normalize_options(const zkrc_ensemble_options *in,
                             zkrc_ensemble_options *out) {
  zkrc_ensemble_options_init(out);
  if (in && in->size == 0) {
    fprintf(stderr, "zkrecipes-testing: ensemble options not initialised "
                    "(zkrc_ensemble_options_init)\n");
    return -1;
  }
  if (in) /* what the caller's version of the struct has; defaults after */
    memcpy(out, in, MIN(in->size, sizeof *out));
  out->size = sizeof *out;
  if (out->members == 0)
    out->members = 1;
  if (out->members < 1 || out->members > ZKRC__MAX_MEMBERS) {
    fprintf(stderr,
            "zkrecipes-testing: an ensemble has 1 to %d members, "
            "not %d\n",
            ZKRC__MAX_MEMBERS, out->members);
    return -1;
  }
  if (out->tick_ms <= 0)
    out->tick_ms = DEFAULT_TICK_MS;
  if (out->container_check_ms <= 0)
    out->container_check_ms = DEFAULT_CONTAINER_CHECK_MS;
  if (out->start_timeout_ms <= 0)
    out->start_timeout_ms = DEFAULT_START_TIMEOUT_MS;
  if (out->max_session_timeout_ms < 0)
    out->max_session_timeout_ms = 0;
  out->tls = out->tls != 0;
  out->sasl = out->sasl != 0;
  out->extended_types = out->extended_types != 0;
  out->reconfig = out->reconfig != 0;
  if (out->tls && out->with_proxies) {
    fprintf(stderr,
            "zkrecipes-testing: a fault proxy cannot stand in front of a "
            "TLS member: it follows ZooKeeper's packets, which TLS hides "
            "(with_proxies and tls together)\n");
    return -1;
  }
  if (out->tls && out->reconfig) {
    fprintf(stderr, "zkrecipes-testing: reconfig names plaintext client "
                    "ports (reconfig and tls together)\n");
    return -1;
  }
  return 0;
}

/* ---- setting up --------------------------------------------------------- */

static char *default_class_path(void) {
  GString *cp = g_string_new(NULL);
  for (size_t i = 0; i < sizeof server_jars / sizeof server_jars[0]; i++) {
    char *jar = g_strdup_printf(JAR_DIR "/%s.jar", server_jars[i]);
    if (access(jar, R_OK) == 0) {
      g_string_append_printf(cp, "%s%s", cp->len ? ":" : "", jar);
    } else if (i < REQUIRED_JARS) {
      fprintf(stderr,
              "zkrecipes-testing: %s not found: install the "
              "`zookeeper` package or set ZKR_ZOOKEEPER_CLASSPATH\n",
              jar);
      g_free(jar);
      g_string_free(cp, TRUE);
      return NULL;
    }
    g_free(jar);
  }
  return g_string_free(cp, FALSE);
}

static int find_server(zkrc_ensemble *e) {
  const char *java = getenv("ZKR_JAVA");
  if (!java || !*java)
    java = "java";
  char *path = zkrc__find_program(java);
  if (!path) {
    fprintf(stderr,
            "zkrecipes-testing: %s not found: install Java or set "
            "ZKR_JAVA\n",
            java);
    return -1;
  }
  /* Same allocator for everything freed in ensemble_free(). */
  e->java = g_strdup(path);
  free(path);

  const char *cp = getenv("ZKR_ZOOKEEPER_CLASSPATH");
  e->class_path = cp && *cp ? g_strdup(cp) : default_class_path();
  return e->class_path ? 0 : -1;
}

static int make_ensemble_dir(zkrc_ensemble *e, const char *base) {
  if (!base || !*base)
    base = getenv("TMPDIR");
  if (!base || !*base)
    base = "/tmp";
  char *template = g_strdup_printf("%s/zkr-ensemble-XXXXXX", base);
  if (!mkdtemp(template)) {
    fprintf(stderr,
            "zkrecipes-testing: cannot create a directory in %s: "
            "%s\n",
            base, strerror(errno));
    g_free(template);
    return -1;
  }
  /* Absolute: it goes into the members' command lines and configs. */
  char *absolute = realpath(template, NULL);
  if (!absolute) {
    fprintf(stderr, "zkrecipes-testing: realpath %s: %s\n", template,
            strerror(errno));
    rmdir(template);
    g_free(template);
    return -1;
  }
  e->dir = g_strdup(absolute);
  free(absolute);
  g_free(template);
  return 0;
}

static void ensemble_free(zkrc_ensemble *e) {
  for (int i = 0; i < ZKRC__MAX_MEMBERS; i++)
    zkrc__member_free(&e->members[i]);
  zkrc__security_free(e);
  g_free(e->dir);
  g_free(e->java);
  g_free(e->class_path);
  g_free(e->connect_string);
  g_free(e->direct_connect_string);
  pthread_mutex_destroy(&e->lock);
  g_free(e);
}

static zkrc_ensemble *ensemble_new(const zkrc_ensemble_options *opts) {
  zkrc_ensemble *e = g_new0(zkrc_ensemble, 1);
  e->opts = *opts;
  e->opts.base_dir = NULL; /* the caller's string: not ours to keep */
  e->size = opts->members;
  e->keep_dir = env_flag("ZKR_ENSEMBLE_KEEP");
  e->log_to_stderr = env_flag("ZKR_ENSEMBLE_LOG");
  e->reaper.pid = -1;
  e->reaper.fd = -1;
  for (int i = 0; i < ZKRC__MAX_MEMBERS; i++)
    e->members[i].pid = -1;
  pthread_mutex_init(&e->lock, NULL);
  return e;
}

static void member_ports(zkrc__member *m, int *ports) {
  ports[0] = m->client_port;
  ports[1] = m->peer_port;
  ports[2] = m->election_port;
}

static void release_member_ports(zkrc_ensemble *e) {
  for (int i = 0; i < e->size; i++) {
    int ports[3];
    member_ports(&e->members[i], ports);
    zkrc__release_ports(ports, 3);
    e->members[i].client_port = e->members[i].peer_port =
        e->members[i].election_port = 0;
  }
}

static int choose_ports(zkrc_ensemble *e) {
  int ports[3 * ZKRC__MAX_MEMBERS];
  if (zkrc__reserve_ports(3 * e->size, ports) != 0)
    return -1;
  for (int i = 0; i < e->size; i++) {
    e->members[i].client_port = ports[3 * i];
    e->members[i].peer_port = ports[3 * i + 1];
    e->members[i].election_port = ports[3 * i + 2];
  }
  return 0;
}

/* ---- waiting ------------------------------------------------------------ */

void zkrc__pause_until_next_poll(int64_t deadline) {
  int64_t left = deadline - zkrc__now_ms();
  if (left > 0)
    zkrc__sleep_ms(left < POLL_INTERVAL_MS ? (int)left : POLL_INTERVAL_MS);
}

zkrc__member_view zkrc__view_member(zkrc_ensemble *e, int i) {
  zkrc__member_view v;
  pthread_mutex_lock(&e->lock);
  zkrc__member *m = &e->members[i];
  zkrc__member_reap_if_exited(e, m);
  v.running = m->pid > 0 && !m->paused;
  v.port = m->client_port;
  v.voter = !m->outside;
  pthread_mutex_unlock(&e->lock);
  return v;
}

void zkrc__report_failed_member(const zkrc_ensemble *e, const zkrc__member *m,
                                const char *what) {
  fprintf(stderr, "zkrecipes-testing: member %d (127.0.0.1:%d) %s\n", m->index,
          m->client_port, what);
  if (!e->log_to_stderr)
    zkrc__print_tail(m->log_path, LOG_TAIL_LINES, "  | ");
}

/* Outcome of one start attempt. */
typedef enum start_result { STARTED, START_FAILED, PORT_TAKEN } start_result;

/* Whether every member serves under the leader a quorum agrees on: what
 * zkrc_ensemble_wait_serving() waits for, for each of them. */
static int all_serving_in_quorum(zkrc_ensemble *e, int64_t deadline) {
  zkrc__quorum_look look;
  zkrc__look_at_quorum(e, deadline, &look);
  for (int i = 0; i < e->size; i++)
    if (!look.serving[i])
      return 0;
  return 1;
}

/* Wait until every member serves (first each on its own word, then all in
 * one agreeing quorum).  A member that exits fails the start - or asks for
 * new ports if its log says a port was taken. */
static start_result wait_all_serving(zkrc_ensemble *e, int64_t deadline) {
  int serving[ZKRC__MAX_MEMBERS] = {0};
  int count = 0;
  for (;;) {
    for (int i = 0; i < e->size; i++) {
      if (serving[i])
        continue;
      zkrc__member *m = &e->members[i];
      zkrc__member_view v = zkrc__view_member(e, i);
      if (!v.running) {
        if (zkrc__file_contains(m->log_path, "Address already in use"))
          return PORT_TAKEN;
        zkrc__report_failed_member(e, m, "exited while starting");
        return START_FAILED;
      }
      if (zkrc__member_serving(e, v.port, zkrc__poll_timeout(deadline), NULL,
                               0)) {
        serving[i] = 1;
        count++;
      }
    }
    if (count == e->size && all_serving_in_quorum(e, deadline))
      return STARTED;
    if (zkrc__now_ms() >= deadline)
      break;
    zkrc__pause_until_next_poll(deadline);
  }
  fprintf(stderr,
          "zkrecipes-testing: the ensemble did not serve within %d "
          "ms\n",
          e->opts.start_timeout_ms);
  if (count == e->size)
    fprintf(stderr, "zkrecipes-testing: every member answers, but no "
                    "leader has a quorum of them in its epoch\n");
  for (int i = 0; i < e->size; i++)
    if (!serving[i])
      zkrc__report_failed_member(e, &e->members[i], "is not serving");
  return START_FAILED;
}

static void kill_all_members(zkrc_ensemble *e) {
  pthread_mutex_lock(&e->lock);
  /* Signal them all first: they then die in parallel. */
  for (int i = 0; i < e->size; i++) {
    if (e->members[i].pid > 0)
      kill(e->members[i].pid, SIGKILL);
  }
  for (int i = 0; i < e->size; i++)
    zkrc__member_kill(e, &e->members[i]);
  pthread_mutex_unlock(&e->lock);
}

static start_result start_members(zkrc_ensemble *e, int64_t deadline) {
  if (choose_ports(e) != 0)
    return START_FAILED;
  for (int i = 0; i < e->size; i++) {
    if (zkrc__member_configure(e, &e->members[i], NULL) != 0)
      return START_FAILED;
  }
  pthread_mutex_lock(&e->lock);
  int rc = 0;
  for (int i = 0; i < e->size && rc == 0; i++)
    rc = zkrc__member_spawn(e, &e->members[i]);
  pthread_mutex_unlock(&e->lock);
  if (rc != 0)
    return START_FAILED;
  return wait_all_serving(e, deadline);
}

static char *join_addresses(const zkrc_ensemble *e, int direct) {
  GString *s = g_string_new(NULL);
  for (int i = 0; i < e->size; i++) {
    const zkrc__member *m = &e->members[i];
    int port = direct || !e->proxies ? m->client_port
                                     : zkrc__proxy_port(e->proxies, i);
    g_string_append_printf(s, "%s127.0.0.1:%d", i ? "," : "", port);
  }
  return g_string_free(s, FALSE);
}

static int start_proxies(zkrc_ensemble *e) {
  int targets[ZKRC__MAX_MEMBERS];
  for (int i = 0; i < e->size; i++)
    targets[i] = e->members[i].client_port;
  e->proxies = zkrc__proxies_start(e->size, targets);
  return e->proxies ? 0 : -1;
}

static void set_addresses(zkrc_ensemble *e) {
  for (int i = 0; i < e->size; i++) {
    zkrc__member *m = &e->members[i];
    int port = e->proxies ? zkrc__proxy_port(e->proxies, i) : m->client_port;
    snprintf(m->address, sizeof m->address, "127.0.0.1:%d", port);
  }
  e->connect_string = join_addresses(e, 0);
  e->direct_connect_string = join_addresses(e, 1);
}

/* Everything up to the members: directory, reaper, member directories. */
static int prepare(zkrc_ensemble *e, const char *base_dir) {
  if (find_server(e) != 0 || make_ensemble_dir(e, base_dir) != 0)
    return -1;
  if (zkrc__reaper_start(&e->reaper, e->dir, e->keep_dir) != 0)
    return -1;
  /* Credentials once, whatever ports the members end up on. */
  if (zkrc__security_prepare(e) != 0)
    return -1;
  for (int i = 0; i < e->size; i++) {
    if (zkrc__member_init(e, &e->members[i], i) != 0)
      return -1;
  }
  return 0;
}

int zkrc_ensemble_start(zkrc_ensemble **out,
                        const zkrc_ensemble_options *opts) {
  zkrc_ensemble_options o;
  *out = NULL;
  if (normalize_options(opts, &o) != 0)
    return -1;
  zkrc_ensemble *e = ensemble_new(&o);
  int rc = prepare(e, o.base_dir);
  int64_t deadline = zkrc__now_ms() + o.start_timeout_ms;
  start_result started = START_FAILED;
  for (int attempt = 0; rc == 0 && attempt < START_ATTEMPTS; attempt++) {
    started = start_members(e, deadline);
    if (started != PORT_TAKEN)
      break;
    /* Someone took a port between our probe and the JVM's bind: start
     * over on new ports. */
    fprintf(stderr, "zkrecipes-testing: a port was taken meanwhile; "
                    "starting again on new ports\n");
    kill_all_members(e);
    release_member_ports(e);
    for (int i = 0; i < e->size; i++)
      zkrc__member_wipe(&e->members[i]);
  }
  if (rc == 0 && started == PORT_TAKEN)
    fprintf(stderr, "zkrecipes-testing: ports kept being taken\n");
  if (rc == 0 && started == STARTED && o.with_proxies)
    rc = start_proxies(e);
  if (rc != 0 || started != STARTED) {
    zkrc_ensemble_stop(e);
    return -1;
  }
  set_addresses(e);
  *out = e;
  return 0;
}

void zkrc_ensemble_stop(zkrc_ensemble *e) {
  if (!e)
    return;
  /* Proxies first: clients lose their connections at once instead of
   * talking to dying members. */
  zkrc__proxies_stop(e->proxies);
  e->proxies = NULL;
  kill_all_members(e);
  if (e->dir) {
    if (e->keep_dir)
      fprintf(stderr, "zkrecipes-testing: ZKR_ENSEMBLE_KEEP: kept %s\n",
              e->dir);
    else if (zkrc__remove_tree(e->dir) != 0)
      fprintf(stderr, "zkrecipes-testing: cannot remove %s: %s\n", e->dir,
              strerror(errno));
  }
  /* Only now: had we died above, the reaper would have finished the job. */
  zkrc__reaper_finish(&e->reaper);
  release_member_ports(e);
  ensemble_free(e);
}

/* ---- queries ------------------------------------------------------------ */

static int valid_index(const zkrc_ensemble *e, int i) {
  return e && i >= 0 && i < e->size;
}

int zkrc_ensemble_size(const zkrc_ensemble *e) { return e ? e->size : 0; }

const char *zkrc_ensemble_connect_string(const zkrc_ensemble *e) {
  return e ? e->connect_string : NULL;
}

const char *zkrc_ensemble_direct_connect_string(const zkrc_ensemble *e) {
  return e ? e->direct_connect_string : NULL;
}

const char *zkrc_ensemble_member_address(const zkrc_ensemble *e, int i) {
  return valid_index(e, i) ? e->members[i].address : NULL;
}

int zkrc_ensemble_member_port(const zkrc_ensemble *e, int i) {
  return valid_index(e, i) ? e->members[i].client_port : -1;
}

int zkrc_ensemble_member_pid(const zkrc_ensemble *e, int i) {
  if (!valid_index(e, i))
    return -1;
  /* The lock is not const; the API promises a read-only look. */
  zkrc_ensemble *mutable_e = (zkrc_ensemble *)e;
  pthread_mutex_lock(&mutable_e->lock);
  zkrc__member *m = &mutable_e->members[i];
  zkrc__member_reap_if_exited(mutable_e, m);
  int pid = m->pid > 0 ? (int)m->pid : -1;
  pthread_mutex_unlock(&mutable_e->lock);
  return pid;
}

/* ---- member control ----------------------------------------------------- */

typedef int (*member_action)(zkrc_ensemble *e, zkrc__member *m);

/* Run @p action on member @p i under the lock. */
static int with_member(zkrc_ensemble *e, int i, member_action action) {
  if (!valid_index(e, i))
    return -1;
  pthread_mutex_lock(&e->lock);
  zkrc__member *m = &e->members[i];
  zkrc__member_reap_if_exited(e, m);
  int rc = action(e, m);
  pthread_mutex_unlock(&e->lock);
  return rc;
}

static int kill_action(zkrc_ensemble *e, zkrc__member *m) {
  if (m->pid <= 0)
    return -1;
  zkrc__member_kill(e, m);
  return 0;
}

static int restart_action(zkrc_ensemble *e, zkrc__member *m) {
  if (m->pid > 0) {
    fprintf(stderr,
            "zkrecipes-testing: member %d is running; kill or stop "
            "it before restarting it\n",
            m->index);
    return -1;
  }
  return zkrc__member_spawn(e, m);
}

static int pause_action(zkrc_ensemble *e, zkrc__member *m) {
  if (m->pid <= 0)
    return -1;
  if (m->paused)
    return 0;
  if (kill(m->pid, SIGSTOP) != 0)
    return -1;
  /* SIGSTOP takes effect asynchronously: wait, so the member is frozen
   * when we return. */
  int rc = zkrc__wait_stopped(m->pid, 5000);
  if (rc < 0) {
    zkrc__reaper_forget(&e->reaper, m->pid); /* it died; reaped */
    m->pid = -1;
    return -1;
  }
  m->paused = 1;
  return rc == 1 ? 0 : -1;
}

static int resume_action(zkrc_ensemble *e, zkrc__member *m) {
  if (m->pid <= 0 || kill(m->pid, SIGCONT) != 0)
    return -1;
  m->paused = 0;
  return 0;
}

int zkrc_ensemble_kill(zkrc_ensemble *e, int i) {
  return with_member(e, i, kill_action);
}

int zkrc_ensemble_stop_member(zkrc_ensemble *e, int i) {
  return with_member(e, i, zkrc__member_terminate);
}

int zkrc_ensemble_restart(zkrc_ensemble *e, int i) {
  return with_member(e, i, restart_action);
}

int zkrc_ensemble_pause(zkrc_ensemble *e, int i) {
  return with_member(e, i, pause_action);
}

int zkrc_ensemble_resume(zkrc_ensemble *e, int i) {
  return with_member(e, i, resume_action);
}

/* ---- asking members ----------------------------------------------------- */

int zkrc_ensemble_wait_serving(zkrc_ensemble *e, int i, int timeout_ms) {
  if (!e || i < -1 || i >= e->size)
    return -1;
  int64_t deadline = zkrc__now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
  for (;;) {
    if (i >= 0 && zkrc_ensemble_member_pid(e, i) < 0)
      return -1; /* not running: it cannot come to serve */
    zkrc__quorum_look look;
    zkrc__look_at_quorum(e, deadline, &look);
    if (i == -1 ? look.leader >= 0 : look.serving[i])
      return 0;
    if (zkrc__now_ms() >= deadline)
      return -1;
    zkrc__pause_until_next_poll(deadline);
  }
}

int zkrc_ensemble_leader(zkrc_ensemble *e) {
  if (!e)
    return -1;
  zkrc__quorum_look look;
  zkrc__look_at_quorum(e, zkrc__now_ms() + FOUR_LETTER_TIMEOUT_MS, &look);
  return look.leader;
}

int zkrc_ensemble_four_letter(zkrc_ensemble *e, int i, const char *cmd,
                              char **out) {
  if (out)
    *out = NULL;
  if (!valid_index(e, i) || !cmd || !out)
    return -1;
  zkrc__member_view v = zkrc__view_member(e, i);
  if (!v.running)
    return -1;
  return zkrc__four_letter(e->tls_ctx, v.port, cmd, FOUR_LETTER_TIMEOUT_MS,
                           out);
}

int64_t zkrc_ensemble_mntr_sum(zkrc_ensemble *e, const char *key) {
  if (!e || !key)
    return -1;
  int64_t sum = 0;
  int found = 0;
  for (int i = 0; i < e->size; i++) {
    char *answer = NULL;
    int64_t value;
    if (zkrc_ensemble_four_letter(e, i, "mntr", &answer) == 0 &&
        zkrc__mntr_value(answer, key, &value)) {
      sum += value;
      found = 1;
    }
    free(answer);
  }
  return found ? sum : -1;
}

/* ---- expiring sessions -------------------------------------------------- */

typedef struct session_watch {
  pthread_mutex_t lock;
  pthread_cond_t changed;
  int state;
} session_watch;

static void session_watcher(zhandle_t *zh, int type, int state,
                            const char *path, void *context) {
  session_watch *w = context;
  if (type != ZOO_SESSION_EVENT)
    return;
  pthread_mutex_lock(&w->lock);
  w->state = state;
  pthread_cond_broadcast(&w->changed);
  pthread_mutex_unlock(&w->lock);
}

static void silent_log(const char *message) {}

/* Wait until the handle is connected or the session known to be gone.
 * 0, or -1 on timeout or failed authentication. */
static int wait_connected(session_watch *w, int timeout_ms) {
  struct timespec deadline;
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  deadline.tv_sec += timeout_ms / 1000;
  deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
  if (deadline.tv_nsec >= 1000000000L) {
    deadline.tv_sec++;
    deadline.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&w->lock);
  int timed_out = 0;
  while (w->state != ZOO_CONNECTED_STATE &&
         w->state != ZOO_EXPIRED_SESSION_STATE &&
         w->state != ZOO_AUTH_FAILED_STATE && !timed_out)
    timed_out =
        pthread_cond_timedwait(&w->changed, &w->lock, &deadline) == ETIMEDOUT;
  int state = w->state;
  pthread_mutex_unlock(&w->lock);
  /* Expired already: what we were asked for has happened. */
  return state == ZOO_CONNECTED_STATE || state == ZOO_EXPIRED_SESSION_STATE
             ? 0
             : -1;
}

static int session_watch_init(session_watch *w) {
  pthread_condattr_t attr;
  if (pthread_condattr_init(&attr) != 0)
    return -1;
  int rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  if (rc == 0)
    rc = pthread_cond_init(&w->changed, &attr);
  pthread_condattr_destroy(&attr);
  if (rc != 0)
    return -1;
  pthread_mutex_init(&w->lock, NULL);
  w->state = 0;
  return 0;
}

/* Attach one handle to session @p id, wait until the servers answer, and
 * close it.  Returns the state the servers answered with (CONNECTED: the
 * close just killed the session, or tried to; EXPIRED: it is dead), or -1. */
/* Does member @p i hold a connection of session @p id ("cons")? */
static int has_connection_of(zkrc_ensemble *e, int i, int64_t id) {
  char sid[40], *cons = NULL;
  snprintf(sid, sizeof sid, "sid=0x%llx", (unsigned long long)id);
  int found = zkrc_ensemble_four_letter(e, i, "cons", &cons) == 0 && cons &&
              strstr(cons, sid) != NULL;
  free(cons);
  return found;
}

/* The members to take session @p id over through ("host:port,..."; g_free
 * it): those that hold no connection of it, when there are such.  Through
 * the follower its owner is connected to, the take-over orphans the
 * owner's connection: the close is not carried to it (that member's
 * FinalRequestProcessor closes only connections of a close that came from
 * elsewhere), the follower's session tracker touches any session, and
 * the leader answers a sync without checking the session, so the owner's
 * lease renewals went on being answered, for 5 s and more, after its
 * session was closed (bench/experiments/orphaned-connection.c). */
static char *take_over_hosts(zkrc_ensemble *e, int64_t id) {
  GString *hosts = g_string_new(NULL);
  for (int i = 0; e->size > 1 && i < e->size; i++) {
    zkrc__member_view v = zkrc__view_member(e, i);
    if (v.running && !has_connection_of(e, i, id))
      g_string_append_printf(hosts, "%s127.0.0.1:%d", hosts->len ? "," : "",
                             e->members[i].client_port);
  }
  if (hosts->len == 0)
    g_string_assign(hosts, e->direct_connect_string);
  return g_string_free(hosts, FALSE);
}

static int take_over_and_close(zkrc_ensemble *e, const clientid_t *id,
                               int timeout_ms) {
  session_watch w;
  if (session_watch_init(&w) != 0)
    return -1;
  /* Directly to the members: a fault in a proxy must not get in the way. */
  char *hosts = take_over_hosts(e, id->client_id);
  zhandle_t *zh = zookeeper_init2(hosts, session_watcher, 10000, id, &w, 0,
                                  e->log_to_stderr ? NULL : silent_log);
  g_free(hosts);
  int state = -1;
  if (zh) {
    if (wait_connected(&w, timeout_ms) == 0) {
      pthread_mutex_lock(&w.lock);
      state = w.state;
      pthread_mutex_unlock(&w.lock);
    }
    zookeeper_close(zh);
  }
  pthread_cond_destroy(&w.changed);
  pthread_mutex_destroy(&w.lock);
  return state;
}

/* ---- the same over TLS -------------------------------------------------- */

/* The C client at hand may lack TLS (Debian's libzookeeper-mt has no
 * zookeeper_init_ssl), so for a TLS ensemble the harness speaks the two
 * requests itself, over its own TLS connection: ConnectRequest with the
 * session's id and password, then CloseSession. */

#define ZK_CLOSE_SESSION_OP (-11)
/* Largest frame read back (a ConnectResponse is 36 bytes or so). */
#define MAX_FRAME 4096

static void put_be32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (unsigned char)(v >> (24 - 8 * i));
}

static void put_be64(unsigned char *p, uint64_t v) {
  put_be32(p, (uint32_t)(v >> 32));
  put_be32(p + 4, (uint32_t)v);
}

static uint32_t get_be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         (uint32_t)p[3];
}

/* One length-prefixed frame into @p buf (at least MAX_FRAME bytes).
 * Its length, or -1. */
static int read_frame(zkrc__tls_conn *c, unsigned char *buf, int64_t deadline) {
  unsigned char len_bytes[4];
  if (zkrc__tls_read(c, len_bytes, 4, deadline) != 0)
    return -1;
  uint32_t len = get_be32(len_bytes);
  if (len > MAX_FRAME || zkrc__tls_read(c, buf, len, deadline) != 0)
    return -1;
  return (int)len;
}

/* take_over_and_close() on member @p port over TLS: ZOO_CONNECTED_STATE
 * (the close was sent and answered, or the member hung up after it),
 * ZOO_EXPIRED_SESSION_STATE, or -1 (no connection or no answer). */
static int take_over_tls_member(zkrc_ensemble *e, int port,
                                const clientid_t *id, int64_t deadline) {
  zkrc__tls_conn *c = zkrc__tls_connect(e->tls_ctx, port, deadline);
  if (!c)
    return -1;
  /* ConnectRequest: protocolVersion, lastZxidSeen, timeOut, sessionId,
   * passwd (a buffer: length, bytes), readOnly. */
  unsigned char req[4 + 45];
  put_be32(req, 45);
  put_be32(req + 4, 0);
  put_be64(req + 8, 0);
  put_be32(req + 16, 10000);
  put_be64(req + 20, (uint64_t)id->client_id);
  put_be32(req + 28, 16);
  memcpy(req + 32, id->passwd, 16);
  req[48] = 0;
  unsigned char frame[MAX_FRAME];
  int state = -1;
  int len = zkrc__tls_write(c, req, sizeof req, deadline) == 0
                ? read_frame(c, frame, deadline)
                : -1;
  /* ConnectResponse: protocolVersion, timeOut (0: no such session). */
  if (len >= 8 && (int32_t)get_be32(frame + 4) <= 0) {
    state = ZOO_EXPIRED_SESSION_STATE;
  } else if (len >= 8) {
    unsigned char close_req[4 + 8];
    put_be32(close_req, 8);
    put_be32(close_req + 4, 1); /* xid */
    put_be32(close_req + 8, (uint32_t)ZK_CLOSE_SESSION_OP);
    if (zkrc__tls_write(c, close_req, sizeof close_req, deadline) == 0) {
      /* Its reply, or the member hanging up, or nothing by the deadline:
       * the caller looks again whether the session is gone. */
      read_frame(c, frame, deadline);
      state = ZOO_CONNECTED_STATE;
    }
  }
  zkrc__tls_close(c);
  return state;
}

static int take_over_and_close_tls(zkrc_ensemble *e, const clientid_t *id,
                                   int timeout_ms) {
  int64_t deadline = zkrc__now_ms() + timeout_ms;
  /* The first member that answers, as a client would find one: in the
   * first pass only those without a connection of the session (see
   * take_over_hosts). */
  for (int k = 0; k < 2 * e->size; k++) {
    int i = k % e->size;
    zkrc__member_view v = zkrc__view_member(e, i);
    if (!v.running ||
        (k < e->size && e->size > 1 && has_connection_of(e, i, id->client_id)))
      continue;
    int state = take_over_tls_member(e, v.port, id, deadline);
    if (state == ZOO_CONNECTED_STATE || state == ZOO_EXPIRED_SESSION_STATE)
      return state;
  }
  return -1;
}

/* ZooKeeperServer.generatePasswd(): new java.util.Random(id ^ superSecret)
 * .nextBytes(16 bytes), superSecret being the constant 0xB3415C00.
 * java.util.Random is a 48-bit linear congruential generator whose
 * algorithm Java specifies exactly. */
#define JAVA_RANDOM_MULTIPLIER 0x5DEECE66DULL
#define JAVA_RANDOM_MASK ((1ULL << 48) - 1)
#define ZOOKEEPER_SUPER_SECRET 0xB3415C00ULL

static int32_t java_random_next_int(uint64_t *seed) {
  *seed = (*seed * JAVA_RANDOM_MULTIPLIER + 0xB) & JAVA_RANDOM_MASK;
  return (int32_t)(uint32_t)(*seed >> 16);
}

void zkrc_ensemble_session_password(int64_t session_id, char passwd[16]) {
  uint64_t seed = ((uint64_t)session_id ^ ZOOKEEPER_SUPER_SECRET);
  seed = (seed ^ JAVA_RANDOM_MULTIPLIER) & JAVA_RANDOM_MASK;
  for (int i = 0; i < 16;) { /* nextBytes: 4 bytes per int, low first */
    uint32_t rnd = (uint32_t)java_random_next_int(&seed);
    for (int n = 0; n < 4 && i < 16; n++, rnd >>= 8)
      passwd[i++] = (char)(rnd & 0xff);
  }
}

int zkrc_ensemble_expire_session_id(zkrc_ensemble *e, int64_t session_id,
                                    int timeout_ms) {
  clientid_t id;
  memset(&id, 0, sizeof id);
  id.client_id = session_id;
  zkrc_ensemble_session_password(session_id, id.passwd);
  return zkrc_ensemble_expire_session(e, &id, timeout_ms);
}

/* Refuse (or accept again) new connections through every proxy. */
static void set_refuse_all(zkrc_ensemble *e, int refuse) {
  for (int i = 0; e->proxies && i < e->size; i++)
    zkrc__proxy_refuse(e->proxies, i, refuse);
}

int zkrc_ensemble_expire_session(zkrc_ensemble *e, const clientid_t *id,
                                 int timeout_ms) {
  if (!e || !id || id->client_id == 0)
    return -1;
  /* Taking the session over makes the servers drop its owner's connection;
   * the owner reconnects at once and may take the session back before our
   * close arrives, which then closes nothing.  So repeat until a fresh
   * handle on the session is told it has expired. */
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  int expired = 0, refused = 0;
  for (int attempt = 0; !expired; attempt++) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long spent = (now.tv_sec - start.tv_sec) * 1000L +
                 (now.tv_nsec - start.tv_nsec) / 1000000L;
    if (spent >= timeout_ms)
      break;
    /* The owner took the session back before our close: from the second
     * attempt on, an owner that goes through the proxies cannot reconnect
     * until the close is done (its connection drops meanwhile). */
    if (attempt == 1) {
      set_refuse_all(e, 1);
      refused = 1;
    }
    int state = e->tls_ctx
                    ? take_over_and_close_tls(e, id, timeout_ms - (int)spent)
                    : take_over_and_close(e, id, timeout_ms - (int)spent);
    if (state == ZOO_EXPIRED_SESSION_STATE)
      expired = 1;
    else if (state != ZOO_CONNECTED_STATE)
      break;
  }
  if (refused)
    set_refuse_all(e, 0);
  if (expired)
    return 0;
  fprintf(stderr,
          "zkrecipes-testing: could not expire session 0x%llx "
          "within %d ms\n",
          (unsigned long long)id->client_id, timeout_ms);
  return -1;
}

/* ---- proxies ------------------------------------------------------------ */

static zkrc__proxies *proxies_of(zkrc_ensemble *e, int i) {
  return valid_index(e, i) ? e->proxies : NULL;
}

int zkrc_proxy_drop_all(zkrc_ensemble *e, int i) {
  return zkrc__proxy_drop_all(proxies_of(e, i), i);
}

int zkrc_proxy_drop_after_next_request(zkrc_ensemble *e, int i) {
  return zkrc__proxy_drop_after_next_request(proxies_of(e, i), i);
}

int zkrc_proxy_delay(zkrc_ensemble *e, int i, int ms) {
  return zkrc__proxy_delay(proxies_of(e, i), i, ms);
}

int zkrc_proxy_blackhole(zkrc_ensemble *e, int i, int ms) {
  return zkrc__proxy_blackhole(proxies_of(e, i), i, ms);
}

int zkrc_proxy_refuse(zkrc_ensemble *e, int i, int refuse) {
  return zkrc__proxy_refuse(proxies_of(e, i), i, refuse);
}
