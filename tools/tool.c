/*
 * tools/tool.c - the code the zkr subcommands share (see tool.h).
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <glib.h>

#include "tool.h"
#include "runtime.h"

#define DEFAULT_SERVERS "127.0.0.1:2181"
#define DEFAULT_SESSION_TIMEOUT_MS 10000
#define DEFAULT_CONNECT_TIMEOUT_MS 5000
#define DEFAULT_GRACE_MS 5000

static const char *program = "zkr-tool";
static int verbose;

/* ------------------------------------------------------------ messages */

const char *tool_program(void) { return program; }

static void vmessage(const char *fmt, va_list ap) {
  /* One write per line, so lines of concurrent processes do not mix. */
  char line[2048];
  int n = snprintf(line, sizeof line, "%s: ", program);
  vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
  size_t len = strlen(line);
  line[len++] = '\n';
  ssize_t unused = write(STDERR_FILENO, line, len);
  (void)unused;
}

void tool_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmessage(fmt, ap);
  va_end(ap);
}

void tool_verbose(const char *fmt, ...) {
  if (!verbose)
    return;
  va_list ap;
  va_start(ap, fmt);
  vmessage(fmt, ap);
  va_end(ap);
}

void tool_usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmessage(fmt, ap);
  va_end(ap);
  fprintf(stderr, "Try `%s --help'.\n", program);
  exit(TOOL_EXIT_USAGE);
}

/* ------------------------------------------------------------- options */

static const char *nonempty_env(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

void tool_options_init(tool_options *o, const char *name) {
  program = name;
  memset(o, 0, sizeof *o);
  const char *env = getenv("ZKR_SERVERS");
  o->servers = env && *env ? env : DEFAULT_SERVERS;
  o->session_timeout_ms = DEFAULT_SESSION_TIMEOUT_MS;
  o->connect_timeout_ms = DEFAULT_CONNECT_TIMEOUT_MS;
  o->lost_signal = SIGTERM;
  o->grace_ms = DEFAULT_GRACE_MS;
  env = getenv("ZKR_AUTH_FILE");
  o->auth_file = env && *env ? env : NULL;
  o->sasl_user = nonempty_env("ZKR_SASL_USER");
  o->tls_ca = nonempty_env("ZKR_TLS_CA");
  o->tls_cert = nonempty_env("ZKR_TLS_CERT");
  o->tls_key = nonempty_env("ZKR_TLS_KEY");
  /* A secret: keep a copy, wipe the environment's (which
   * /proc/PID/environ shows), and keep it from COMMAND. */
  char *secret = getenv("ZKR_AUTH");
  if (secret && *secret) {
    o->auth_env = g_strdup(secret);
    memset(secret, 0, strlen(secret));
  }
  unsetenv("ZKR_AUTH");
}

char *tool_participant_id(const tool_options *o) {
  if (o->id)
    return g_strdup(o->id);
  char host[256];
  if (gethostname(host, sizeof host) != 0)
    g_strlcpy(host, "unknown-host", sizeof host);
  host[sizeof host - 1] = '\0';
  return g_strdup_printf("%s:%ld", host, (long)getpid());
}

int tool_parse_int(const char *text, int min, int max, const char *what) {
  char *end;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (errno || end == text || *end || v < min || v > max)
    tool_usage_error("%s must be an integer from %d to %d: %s", what, min, max,
                     text);
  return (int)v;
}

int tool_parse_seconds(const char *text, const char *what) {
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  /* Decimal only: strtod would also take "inf", "nan" and hex floats. */
  int decimal = strspn(text, "0123456789.") == strlen(text);
  if (errno || end == text || *end || !decimal || !isfinite(v) || v < 0 ||
      v > 2000000.0)
    tool_usage_error("%s must be a number of seconds (fractions allowed, at "
                     "most 2000000): %s",
                     what, text);
  return (int)ceil(v * 1000.0);
}

int tool_parse_signal(const char *text, const char *what) {
  if (isdigit((unsigned char)text[0]))
    return tool_parse_int(text, 1, NSIG - 1, what);
  const char *name = strncasecmp(text, "SIG", 3) == 0 ? text + 3 : text;
  for (int sig = 1; sig < NSIG; sig++) {
    const char *abbrev = sigabbrev_np(sig);
    if (abbrev && strcasecmp(abbrev, name) == 0)
      return sig;
  }
  tool_usage_error("%s: unknown signal %s (use a name such as TERM, or a "
                   "number)",
                   what, text);
}

void tool_set_program(const char *name) { program = name; }

void tool_set_verbose(tool_options *o) { o->verbose = verbose = 1; }

char **tool_shell_command(const char *string) {
  char **argv = g_new0(char *, 4);
  argv[0] = (char *)"/bin/sh";
  argv[1] = (char *)"-c";
  argv[2] = (char *)string;
  return argv;
}

void tool_env_add(GPtrArray *env, const char *name, const char *old_name,
                  const char *value) {
  g_ptr_array_add(env, g_strdup_printf("%s=%s", name, value));
  if (old_name)
    g_ptr_array_add(env, g_strdup_printf("%s=%s", old_name, value));
}

void tool_check_path(const char *path) {
  const char *why = NULL;
  if (zkrc_path_validate(path, &why) != ZKRC_OK) {
    tool_error("invalid path '%s': %s", path, why ? why : "refused");
    exit(TOOL_EXIT_BAD_PATH);
  }
}

/* ---------------------------------------------------------------- time */

int64_t tool_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int tool_ms_until(int64_t deadline, int timeout) {
  if (deadline < 0)
    return timeout;
  int64_t left = deadline - tool_now_ms();
  int ms = left <= 0 ? 0 : left > 3600000 ? 3600000 : (int)left;
  return timeout < 0 || ms < timeout ? ms : timeout;
}

/* ------------------------------------------------------------- signals */

/* Signals arrive as 2-byte records (number, sent-by-the-terminal) on this
 * pipe; writes of at most PIPE_BUF bytes are atomic, so records never mix. */
static int signal_pipe[2] = {-1, -1};
/* Library callbacks queue an event and write a byte here. */
static int wake_pipe[2] = {-1, -1};

/* SIGTSTP and SIGCONT too: ^Z and `fg' must reach COMMAND's group. */
static const int caught_signals[] = {SIGINT,  SIGTERM, SIGHUP,
                                     SIGQUIT, SIGUSR1, SIGUSR2,
                                     SIGCHLD, SIGTSTP, SIGCONT};
#define N_CAUGHT (sizeof caught_signals / sizeof caught_signals[0])

/* What COMMAND gets back: the dispositions and mask we started with (an
 * ignored SIGINT of a background job stays ignored, as a shell does it). */
static struct sigaction initial_actions[N_CAUGHT];
static struct sigaction initial_sigpipe;
static sigset_t initial_mask;

/* File descriptors we inherited: the only ones COMMAND inherits too.  The
 * ZooKeeper client opens its sockets and pipes without close-on-exec. */
static int *inherited_fds;
static int n_inherited_fds;
static int max_fd_hint = 1024;

static void on_signal(int sig, siginfo_t *info, void *uctx) {
  (void)uctx;
  int saved = errno;
  unsigned char rec[2] = {(unsigned char)sig,
                          (unsigned char)(info && info->si_code == SI_KERNEL)};
  ssize_t unused = write(signal_pipe[1], rec, sizeof rec);
  (void)unused;
  errno = saved;
}

static int compare_ints(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

static void add_inherited(int fd) {
  inherited_fds = g_renew(int, inherited_fds, n_inherited_fds + 1);
  inherited_fds[n_inherited_fds++] = fd;
}

/* Note the descriptors open now, before anything of ours is. */
static void note_inherited_fds(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
    max_fd_hint = rl.rlim_cur > 1048576 ? 1048576 : (int)rl.rlim_cur;
  DIR *d = opendir("/proc/self/fd");
  if (d) {
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
      char *end;
      long fd = strtol(de->d_name, &end, 10);
      if (*end == '\0' && end != de->d_name && fd > 2 && fd != dirfd(d))
        add_inherited((int)fd);
    }
    closedir(d);
  } else {
    for (int fd = 3; fd < max_fd_hint && fd < 65536; fd++)
      if (fcntl(fd, F_GETFD) != -1)
        add_inherited(fd);
  }
  if (n_inherited_fds > 0)
    qsort(inherited_fds, (size_t)n_inherited_fds, sizeof(int), compare_ints);
}

int tool_runtime_init(void) {
  note_inherited_fds();
  zkrc_log_from_env();
  if (pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0 ||
      pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    tool_error("pipe: %s", strerror(errno));
    return -1;
  }
  pthread_sigmask(SIG_SETMASK, NULL, &initial_mask);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < N_CAUGHT; i++) {
    if (sigaction(caught_signals[i], &sa, &initial_actions[i]) != 0) {
      tool_error("sigaction: %s", strerror(errno));
      return -1;
    }
  }
  /* A reader that went away is a write error for us, not a death. */
  struct sigaction ign;
  memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  sigaction(SIGPIPE, &ign, &initial_sigpipe);
  return 0;
}

int tool_signal_fd(void) { return signal_pipe[0]; }

int tool_is_stop_signal(int sig) {
  return sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT;
}

int tool_stop_signal_caught(void) {
  tool_signal sig;
  int stop = 0;
  while (tool_next_signal(&sig))
    if (!stop && tool_is_stop_signal(sig.signo))
      stop = 128 + sig.signo;
  return stop;
}

int tool_next_signal(tool_signal *out) {
  unsigned char rec[2];
  for (;;) {
    ssize_t n = read(signal_pipe[0], rec, sizeof rec);
    if (n == (ssize_t)sizeof rec) {
      out->signo = rec[0];
      out->from_terminal = rec[1];
      return out->signo;
    }
    if (n < 0 && errno == EINTR)
      continue;
    out->signo = 0;
    out->from_terminal = 0;
    return 0;
  }
}

/* ------------------------------------------------- for child.c (runtime.h) */

void tool_runtime_restore_in_child(void) {
  for (size_t i = 0; i < N_CAUGHT; i++)
    sigaction(caught_signals[i], &initial_actions[i], NULL);
  sigaction(SIGPIPE, &initial_sigpipe, NULL);
  sigprocmask(SIG_SETMASK, &initial_mask, NULL);
}

int *tool_runtime_fds_to_keep(int extra, int *count) {
  int *keep = g_new(int, n_inherited_fds + 1);
  memcpy(keep, inherited_fds, sizeof(int) * (size_t)n_inherited_fds);
  keep[n_inherited_fds] = extra;
  *count = n_inherited_fds + 1;
  qsort(keep, (size_t)*count, sizeof(int), compare_ints);
  return keep;
}

void tool_runtime_close_from_to(int lo, int hi) {
  unsigned int last = hi < 0 ? ~0U : (unsigned int)hi;
#ifdef SYS_close_range
  if (syscall(SYS_close_range, (unsigned int)lo, last, 0) == 0)
    return;
#endif
  int end = hi < 0 ? max_fd_hint - 1 : hi;
  for (int fd = lo; fd <= end; fd++)
    close(fd);
}

/* -------------------------------------------------------------- events */

/* The running COMMAND, for the last-resort exit below. */
static tool_child *live_child;

void tool_runtime_set_live_child(tool_child *c) { live_child = c; }

static GMutex queue_mu;
static GQueue event_queue = G_QUEUE_INIT;

void tool_post_event(const tool_event *ev) {
  tool_event *copy = g_new(tool_event, 1);
  *copy = *ev;
  copy->node = ev->node ? g_strdup(ev->node) : NULL;
  g_mutex_lock(&queue_mu);
  g_queue_push_tail(&event_queue, copy);
  g_mutex_unlock(&queue_mu);
  /* Only a wake-up: when the pipe is full the loop is awake anyway. */
  unsigned char byte = 1;
  ssize_t unused = write(wake_pipe[1], &byte, 1);
  (void)unused;
}

int tool_next_event(tool_event *out) {
  g_mutex_lock(&queue_mu);
  tool_event *ev = g_queue_pop_head(&event_queue);
  g_mutex_unlock(&queue_mu);
  if (ev == NULL)
    return 0;
  *out = *ev;
  g_free(ev);
  return 1;
}

void tool_event_clear(tool_event *ev) {
  g_free(ev->node);
  ev->node = NULL;
}

static int events_pending(void) {
  g_mutex_lock(&queue_mu);
  int n = !g_queue_is_empty(&event_queue);
  g_mutex_unlock(&queue_mu);
  return n;
}

void tool_wait(int timeout_ms) {
  if (events_pending())
    return;
  struct pollfd pfds[2] = {{signal_pipe[0], POLLIN, 0},
                           {wake_pipe[0], POLLIN, 0}};
  if (poll(pfds, 2, timeout_ms) < 0 && errno != EINTR) {
    tool_error("poll: %s", strerror(errno));
    tool_child_kill_and_reap(live_child); /* never leave COMMAND running */
    exit(TOOL_EXIT_OSERR);
  }
  if (pfds[1].revents) {
    unsigned char buf[256];
    while (read(wake_pipe[0], buf, sizeof buf) > 0)
      ;
  }
}

/* ------------------------------------------------------------- session */

void tool_session_listener(zkrc_session *s, const zkrc_session_event *ev,
                           void *arg) {
  (void)s;
  (void)arg;
  tool_event e = {.kind = TOOL_EV_SESSION, .code = (int)ev->type};
  tool_post_event(&e);
}

/* ------------------------------------------------------ authentication */

/* Wipe and free credentials. */
static void forget_credentials(char *cred) {
  if (cred) {
    memset(cred, 0, strlen(cred));
    g_free(cred);
  }
}

/* Is @p cred of the form USER:PASSWORD (both non-empty)? */
static int well_formed(const char *cred) {
  const char *colon = strchr(cred, ':');
  return colon && colon != cred && colon[1] != '\0';
}

/* The digest credentials "USER:PASSWORD" to authenticate with (the
 * caller's to wipe): the first line of --auth-file (or $ZKR_AUTH_FILE),
 * else $ZKR_AUTH, whose copy in @p o is handed over; NULL with *status 0
 * when there are none; NULL with the exit status in *status when the file
 * cannot be read or they are not USER:PASSWORD. */
static char *credentials(tool_options *o, int *status) {
  *status = 0;
  char *from_env = o->auth_env;
  o->auth_env = NULL;
  if (o->auth_file == NULL) {
    if (from_env && !well_formed(from_env)) {
      tool_error("$ZKR_AUTH: no credentials: it must be USER:PASSWORD");
      forget_credentials(from_env);
      *status = TOOL_EXIT_NOPERM;
      return NULL;
    }
    return from_env;
  }
  forget_credentials(from_env);
  char *text = NULL;
  GError *error = NULL;
  if (!g_file_get_contents(o->auth_file, &text, NULL, &error)) {
    tool_error("cannot read the credentials: %s", error->message);
    g_error_free(error);
    *status = TOOL_EXIT_NOPERM;
    return NULL;
  }
  text[strcspn(text, "\r\n")] = '\0';
  if (!well_formed(text)) {
    tool_error("%s: no credentials: its first line must be USER:PASSWORD",
               o->auth_file);
    forget_credentials(text);
    *status = TOOL_EXIT_NOPERM;
    return NULL;
  }
  return text;
}

/* Authenticate the session (digest), waiting at most @p timeout_ms for
 * the servers' answer. */
static int authenticate(zkrc_session *s, const char *cred, int timeout_ms) {
  int err = zkrc_session_add_auth(s, "digest", cred, timeout_ms);
  if (err == ZKRC_OK) {
    tool_verbose("authenticated (digest) as %.*s", (int)strcspn(cred, ":"),
                 cred);
    return 0;
  }
  return tool_fail("cannot authenticate", err);
}

/* TLS and SASL settings into @p so: 0, or the exit status of a usage
 * error (the files are the library's to check). */
static int secure_options(const tool_options *o, zkrc_session_options *so) {
  if (o->tls_ca || o->tls_cert || o->tls_key) {
    if (!(o->tls_ca && o->tls_cert && o->tls_key)) {
      tool_error("TLS needs all of --tls-ca, --tls-cert and --tls-key");
      return TOOL_EXIT_USAGE;
    }
    so->tls_ca_file = o->tls_ca;
    so->tls_cert_file = o->tls_cert;
    so->tls_key_file = o->tls_key;
  }
  if (o->sasl_user) {
    if (o->auth_file == NULL) {
      tool_error("--sasl-user needs --auth-file with the password");
      return TOOL_EXIT_USAGE;
    }
    so->sasl_user = o->sasl_user;
    so->sasl_password_file = o->auth_file;
  }
  return 0;
}

/* Open a session and wait until it is connected, at most the connect
 * timeout (a server must accept a connection first: tool_reach_servers());
 * 0 with *out set, or the exit status. */
static int open_session(const tool_options *o, int no_reopen,
                        zkrc_session **out) {
  /* One timeout for both: the probe's time counts against the session's. */
  int64_t deadline = tool_now_ms() + o->connect_timeout_ms;
  zkrc_session_options so;
  zkrc_session_options_init(&so);
  so.session_timeout_ms = o->session_timeout_ms;
  so.connect_timeout_ms = o->connect_timeout_ms;
  so.no_reopen = no_reopen;
  so.server_tick_ms = o->server_tick_ms;
  /* One session per process, whose lease the tools show (zkr health) and
   * feed systemd's watchdog with while they wait (zkr lock, zkr elect):
   * renewed all the time, as in earlier releases. */
  so.lease_renewal = ZKRC_LEASE_ALWAYS;
  int status = secure_options(o, &so);
  if (status == 0)
    status = tool_reach_servers(o->servers, o->connect_timeout_ms);
  if (status != 0)
    return status;
  zkrc_session *s = NULL;
  int err = zkrc_session_new(&s, o->servers, &so);
  if (err == ZKRC_ENOTSUP) {
    tool_error("%s: %s", o->sasl_user ? "SASL" : "TLS", zkrc_strerror(err));
    return TOOL_EXIT_UNAVAILABLE;
  }
  if (err == ZKRC_EINVAL && (o->tls_ca || o->sasl_user)) {
    tool_error("cannot use the %s settings (see the line above, with "
               "ZKR_LOG=1)",
               o->sasl_user ? "SASL" : "TLS");
    return TOOL_EXIT_USAGE;
  }
  if (err == ZKRC_EINVAL) {
    tool_error("cannot use the server list '%s' (malformed, or a host name "
               "that does not resolve)",
               o->servers);
    return TOOL_EXIT_UNAVAILABLE;
  }
  if (err != ZKRC_OK)
    return tool_fail("cannot open a ZooKeeper session", err);
  /* Listen first, then look: a connection made in between is not missed. */
  zkrc_session_add_listener(s, tool_session_listener, NULL, NULL);
  while (zkrc_session_get_state(s) != ZKRC_SESSION_CONNECTED) {
    if (tool_now_ms() >= deadline) {
      tool_error("no ZooKeeper server of %s answered within %d ms (a "
                 "connection was accepted, but no session was made)",
                 o->servers, o->connect_timeout_ms);
      zkrc_session_close(s);
      return TOOL_EXIT_UNAVAILABLE;
    }
    tool_wait(tool_ms_until(deadline, -1));
    tool_signal sig;
    while (tool_next_signal(&sig)) {
      if (tool_is_stop_signal(sig.signo)) {
        zkrc_session_close(s);
        return 128 + sig.signo;
      }
    }
    tool_event ev;
    while (tool_next_event(&ev))
      tool_event_clear(&ev); /* only session events so far */
  }
  *out = s;
  return 0;
}

/* Runs with the session's handle pinned: does the chroot (the session's
 * "/") exist? */
static int chroot_exists_with_handle(zhandle_t *zh, void *arg) {
  (void)arg;
  struct Stat st;
  return zkrc_from_zk_error(zoo_exists(zh, "/", 0, &st));
}

/* A server list with a chroot ("host:port/app"): the chroot must exist,
 * or every path would be "no such node" without a word on why. */
static int check_chroot(const tool_options *o, zkrc_session *s) {
  const char *chroot = strchr(o->servers, '/');
  if (chroot == NULL || strcmp(chroot, "/") == 0)
    return 0;
  int err = zkrc_session_with_handle(s, chroot_exists_with_handle, NULL);
  if (err == ZKRC_OK)
    return 0;
  if (err == ZKRC_ENONODE && o->waits_for_nodes) {
    tool_verbose("the chroot %s does not exist (yet): waiting", chroot);
    return 0;
  }
  if (err == ZKRC_ENONODE) {
    tool_error("the chroot %s of the server list does not exist on the "
               "servers",
               chroot);
    return TOOL_EXIT_UNAVAILABLE;
  }
  char *what = g_strdup_printf("cannot look at the chroot %s", chroot);
  int status = tool_fail(what, err);
  g_free(what);
  return status;
}

int tool_connect(tool_options *o, int no_reopen, zkrc_session **out) {
  *out = NULL;
  int status = 0;
  char *cred = NULL;
  if (o->sasl_user) { /* the file is SASL's password: no digest */
    forget_credentials(o->auth_env);
    o->auth_env = NULL;
  } else {
    cred = credentials(o, &status);
  }
  zkrc_session *s = NULL;
  if (status == 0)
    status = open_session(o, no_reopen, &s);
  if (status == 0 && cred)
    status = authenticate(s, cred, o->session_timeout_ms);
  forget_credentials(cred);
  if (status == 0)
    status = check_chroot(o, s);
  if (status != 0) {
    zkrc_session_close(s);
    return status;
  }
  tool_print_session(s);
  *out = s;
  return 0;
}

int tool_start_session(tool_options *o, int no_reopen, zkrc_session **out) {
  *out = NULL;
  /* Before any thread of the client's: unsetenv() is not safe beside a
   * getenv() elsewhere. */
  tool_notify_init();
  if (tool_runtime_init() != 0)
    return TOOL_EXIT_OSERR;
  return tool_connect(o, no_reopen, out);
}

void tool_print_session(zkrc_session *s) {
  /* The id only: the password would let whoever reads the log take the
   * session over. */
  if (verbose)
    tool_verbose("session 0x%llx timeout %d ms",
                 (unsigned long long)zkrc_session_id(s),
                 zkrc_session_timeout(s));
}

int tool_fail(const char *what, int err) {
  tool_error("%s: %s", what, zkrc_strerror(err));
  switch (err) {
  case ZKRC_ECONNECT:
  case ZKRC_ECONNLOSS:
  case ZKRC_ETIMEDOUT:
  case ZKRC_ESESSIONLOST:
    return TOOL_EXIT_UNAVAILABLE;
  case ZKRC_ENOMEM:
    return TOOL_EXIT_OSERR;
  case ZKRC_EAUTHFAILED:
  case ZKRC_ENOAUTH:
    return TOOL_EXIT_NOPERM;
  default:
    return TOOL_EXIT_ZOOKEEPER;
  }
}

/* ------------------------------------------------------------ watching */

static void watch_fired(zhandle_t *zh, int type, int state, const char *path,
                        void *ctx) {
  (void)zh;
  (void)state;
  (void)path;
  (void)ctx;
  /* Session events reach every watcher; the session listener has those. */
  if (type == ZOO_SESSION_EVENT)
    return;
  tool_event ev = {.kind = TOOL_EV_WATCH};
  tool_post_event(&ev);
}

/* Runs with the session's handle pinned: a watch on the directory's
 * children, or on its creation while it does not exist. */
static int set_watch_with_handle(zhandle_t *zh, void *arg) {
  const char *dir = arg;
  for (int tries = 0; tries < 3; tries++) {
    struct String_vector kids = {0, NULL};
    int rc = zoo_wget_children(zh, dir, watch_fired, NULL, &kids);
    deallocate_String_vector(&kids);
    if (rc != ZNONODE)
      return zkrc_from_zk_error(rc);
    struct Stat st;
    rc = zoo_wexists(zh, dir, watch_fired, NULL, &st);
    if (rc != ZOK) /* ZNONODE: the watch waits for its creation */
      return rc == ZNONODE ? ZKRC_OK : zkrc_from_zk_error(rc);
    /* Created meanwhile: look again. */
  }
  return ZKRC_OK;
}

int tool_watch_children(zkrc_session *s, const char *dir) {
  return zkrc_session_with_handle(s, set_watch_with_handle, (void *)dir);
}
