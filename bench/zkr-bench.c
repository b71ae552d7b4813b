/*
 * zkr-bench: zkrecipes' lock against the ensemble's own limit, Apache
 * Curator's InterProcessMutex, kazoo's Lock and a naive "herd" lock, on the
 * same ensemble and the same workloads, in one run.  See --help, and
 * bench/RESULTS.md for what the figures mean and what was measured.
 *
 * How it measures:
 *  - It starts a local 3-member ensemble with real fsync (or uses -s HOSTS)
 *    and runs every participant as a separate process: zkr-bench-worker for
 *    the C ones (the limit, zkrecipes, the naive lock), the interoperability
 *    peers for Curator (Java) and kazoo (Python), in their "bench" and
 *    "herd" modes.
 *  - Fsync makes write latency swing from one run to the next, so the
 *    throughput workloads run in rounds that interleave the
 *    implementations; the table gives medians over the rounds, and ratios
 *    that are the median of the per-round ratios (each pair measured
 *    minutes apart at most).
 *  - Request and notification counts come from the servers' own `mntr`
 *    counters, summed over the members; every `mntr` this program sends is
 *    itself one received packet on that member, and is subtracted.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <glib.h>
#include <zookeeper/zookeeper.h>

#include "zkrecipes/testing.h"

#ifndef BENCH_WORKER
#define BENCH_WORKER "./zkr-bench-worker"
#endif
#ifndef JAVA_PROG
#define JAVA_PROG "java"
#endif
#ifndef CURATOR_PEER_CLASSPATH
#define CURATOR_PEER_CLASSPATH ""
#endif
#ifndef DEBIAN_PYTHON3
#define DEBIAN_PYTHON3 "/usr/bin/python3"
#endif
#ifndef KAZOO_PEER
#define KAZOO_PEER "kazoo_peer.py"
#endif

#define MAX_MEMBERS 9

/* Session timeout of every measuring client: long, so that pings are rare
 * (clients ping after a third of it without traffic). */
#define MEASURE_SESSION_MS 30000

/* How long a process may take to start and connect its sessions (a JVM with
 * a hundred Curator clients on a busy machine is slow). */
#define START_MS 180000
/* Bound of every other single step. */
#define STEP_MS 120000

extern char **environ;

/* ------------------------------------------------------------- options */

typedef struct options {
  const char *hosts;
  const char *base_dir;
  const char *csv;
  int rounds;
  int seconds;
  int contenders;
  int herd_waiters;
  int idle_ms;
  int scale_procs, scale_sessions, scale_holds;
  int scale_locks;
  int election_reps;
  int election_session_ms;
  gboolean with_curator, with_kazoo;
  gboolean run_throughput, run_herd, run_scale, run_election;
  const char *worker, *java, *curator_cp, *python, *kazoo_peer;
} options;

static options opt = {
    .rounds = 6,
    .seconds = 4,
    .contenders = 8,
    .herd_waiters = 100,
    .idle_ms = 3000,
    .scale_procs = 4,
    .scale_sessions = 5,
    .scale_holds = 50,
    .scale_locks = 10000,
    .election_reps = 5,
    .election_session_ms = 2000,
    .with_curator = TRUE,
    .with_kazoo = TRUE,
    .run_throughput = TRUE,
    .run_herd = TRUE,
    .run_scale = TRUE,
    .run_election = TRUE,
    .worker = BENCH_WORKER,
    .java = JAVA_PROG,
    .curator_cp = CURATOR_PEER_CLASSPATH,
    .python = DEBIAN_PYTHON3,
    .kazoo_peer = KAZOO_PEER,
};

/* --------------------------------------------------------------- state */

static zkrc_ensemble *ensemble; /* NULL with -s */
static char *hosts;             /* connect string of the measured ensemble */
static char *member_addr[MAX_MEMBERS];
static int members;
static char *root;       /* znode under which this run works */
static char *marker_dir; /* temporary directory of the marker files */
static int64_t run_start_ns;

/* ----------------------------------------------------------- utilities */

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
}

static void cleanup(void);

static void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fatal(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("zkr-bench: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  cleanup();
  exit(1);
}

/* Progress on stderr, with the time since the start. */
static void progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void progress(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "[%6.1fs] ", (double)(now_ns() - run_start_ns) / 1e9);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Nearest-rank quantile of @p n values (sorted in place). */
static double quantile(double *v, size_t n, double p) {
  if (n == 0)
    return NAN;
  qsort(v, n, sizeof *v, compare_double);
  size_t i = (size_t)ceil(p * (double)n);
  i = i == 0 ? 0 : i - 1;
  return v[i < n ? i : n - 1];
}

static double median_of(const double *v, size_t n) {
  if (n == 0)
    return NAN;
  double *copy = g_memdup2(v, n * sizeof *v);
  qsort(copy, n, sizeof *copy, compare_double);
  double m = n % 2 ? copy[n / 2] : (copy[n / 2 - 1] + copy[n / 2]) / 2;
  g_free(copy);
  return m;
}

/* The value of "key=" in a line of key=value words, or NAN. */
static double field(const char *line, const char *key) {
  size_t klen = strlen(key);
  for (const char *p = line; (p = strstr(p, key)) != NULL; p += klen) {
    if ((p == line || p[-1] == ' ') && p[klen] == '=')
      return strtod(p + klen + 1, NULL);
  }
  return NAN;
}

static double need_field(const char *who, const char *line, const char *key) {
  double v = field(line, key);
  if (isnan(v))
    fatal("%s: no %s in \"%.200s\"", who, key, line);
  return v;
}

/* ----------------------------------------------------------- processes */

typedef struct proc {
  char *name;
  pid_t pid;
  int in_fd, out_fd;
  GString *buf;
  gboolean eof;
} proc;

static GPtrArray *live_procs;

static void proc_kill(proc *p) {
  if (p->pid > 0) {
    kill(p->pid, SIGKILL);
    while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
      ;
    p->pid = 0;
  }
}

static void proc_free(proc *p) {
  proc_kill(p);
  g_ptr_array_remove(live_procs, p);
  if (p->in_fd >= 0)
    close(p->in_fd);
  close(p->out_fd);
  g_string_free(p->buf, TRUE);
  g_free(p->name);
  g_free(p);
}

/* The environment of a child: ours, with @p extra ("NAME=value") on top. */
static char **child_environ(char *const *extra) {
  GPtrArray *env = g_ptr_array_new();
  for (char **e = environ; *e; e++) {
    gboolean overridden = FALSE;
    for (char *const *x = extra; x && *x && !overridden; x++) {
      size_t n = strcspn(*x, "=");
      overridden = strncmp(*e, *x, n) == 0 && (*e)[n] == '=';
    }
    if (!overridden)
      g_ptr_array_add(env, *e);
  }
  for (char *const *x = extra; x && *x; x++)
    g_ptr_array_add(env, *x);
  g_ptr_array_add(env, NULL);
  return (char **)g_ptr_array_free(env, FALSE);
}

/* Start @p argv with pipes on its stdin and stdout (its stderr is ours). */
static proc *proc_start(const char *name, char *const *argv,
                        char *const *extra_env) {
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
    fatal("pipe2: %s", strerror(errno));
  char **envp = child_environ(extra_env);
  pid_t parent = getpid();
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    /* Only async-signal-safe calls here.  The child dies with us. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
      _exit(127);
    if (dup2(in[0], STDIN_FILENO) < 0 || dup2(out[1], STDOUT_FILENO) < 0)
      _exit(127);
    close_range(3, ~0U, 0);
    execvpe(argv[0], argv, envp);
    _exit(127);
  }
  g_free(envp);
  close(in[0]);
  close(out[1]);
  if (pid < 0)
    fatal("fork: %s", strerror(errno));
  proc *p = g_new0(proc, 1);
  p->name = g_strdup(name);
  p->pid = pid;
  p->in_fd = in[1];
  p->out_fd = out[0];
  p->buf = g_string_new(NULL);
  g_ptr_array_add(live_procs, p);
  return p;
}

static char *proc_exit_text(proc *p) {
  int status;
  pid_t r = p->pid > 0 ? waitpid(p->pid, &status, WNOHANG) : 0;
  if (r == p->pid) {
    p->pid = 0;
    if (WIFEXITED(status))
      return g_strdup_printf("exited with %d", WEXITSTATUS(status));
    return g_strdup_printf("killed by signal %d", WTERMSIG(status));
  }
  return g_strdup("still running");
}

/* The next line of @p p's output; fatal on timeout or end of output. */
static char *proc_line(proc *p, int timeout_ms) {
  int64_t deadline = now_ns() + (int64_t)timeout_ms * 1000000;
  for (;;) {
    char *nl = memchr(p->buf->str, '\n', p->buf->len);
    if (nl) {
      char *line = g_strndup(p->buf->str, (gsize)(nl - p->buf->str));
      g_string_erase(p->buf, 0, (gssize)(nl - p->buf->str) + 1);
      return line;
    }
    if (p->eof) {
      sleep_ms(50); /* let it exit, for the message */
      char *why = proc_exit_text(p);
      fatal("%s: output ended (%s)", p->name, why);
    }
    int left = (int)((deadline - now_ns()) / 1000000);
    if (left <= 0)
      fatal("%s: no answer within %d ms", p->name, timeout_ms);
    struct pollfd pfd = {.fd = p->out_fd, .events = POLLIN};
    int r = poll(&pfd, 1, left);
    if (r < 0 && errno != EINTR)
      fatal("poll: %s", strerror(errno));
    if (r <= 0)
      continue;
    char chunk[65536];
    ssize_t n = read(p->out_fd, chunk, sizeof chunk);
    if (n < 0 && errno != EINTR)
      fatal("%s: read: %s", p->name, strerror(errno));
    if (n == 0)
      p->eof = TRUE;
    if (n > 0)
      g_string_append_len(p->buf, chunk, n);
  }
}

/* The next line if one comes within @p timeout_ms, else NULL. */
static char *proc_try_line(proc *p, int timeout_ms) {
  if (memchr(p->buf->str, '\n', p->buf->len) == NULL && !p->eof) {
    struct pollfd pfd = {.fd = p->out_fd, .events = POLLIN};
    int r = poll(&pfd, 1, timeout_ms);
    if (r < 0 && errno != EINTR)
      fatal("poll: %s", strerror(errno));
    if (r <= 0)
      return NULL;
  }
  return proc_line(p, STEP_MS);
}

/* Read lines until one starts with @p prefix (returned); lines starting
 * with "error" or "timeout" are fatal, others are skipped. */
static char *proc_expect(proc *p, const char *prefix, int timeout_ms) {
  int64_t deadline = now_ns() + (int64_t)timeout_ms * 1000000;
  for (;;) {
    int left = (int)((deadline - now_ns()) / 1000000);
    char *line = proc_line(p, left > 0 ? left : 1);
    if (g_str_has_prefix(line, prefix))
      return line;
    if (g_str_has_prefix(line, "error") || g_str_has_prefix(line, "timeout"))
      fatal("%s: %s", p->name, line);
    g_free(line);
  }
}

static void proc_send(proc *p, const char *line) {
  char *text = g_strdup_printf("%s\n", line);
  size_t len = strlen(text);
  for (size_t done = 0; done < len;) {
    ssize_t n = write(p->in_fd, text + done, len - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      fatal("%s: write: %s", p->name, strerror(errno));
    done += (size_t)n;
  }
  g_free(text);
}

/* Close its input and wait for it to exit (SIGKILL after @p timeout_ms);
 * fatal unless it exits with 0; frees it. */
static void proc_finish(proc *p, int timeout_ms) {
  close(p->in_fd);
  p->in_fd = -1;
  int64_t deadline = now_ns() + (int64_t)timeout_ms * 1000000;
  int status = 0;
  for (;;) {
    pid_t r = waitpid(p->pid, &status, WNOHANG);
    if (r == p->pid)
      break;
    if (r < 0 && errno != EINTR)
      fatal("waitpid: %s", strerror(errno));
    if (now_ns() > deadline) {
      proc_kill(p);
      fatal("%s did not exit within %d ms", p->name, timeout_ms);
    }
    sleep_ms(10);
  }
  p->pid = 0;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fatal("%s failed (status %d)", p->name, status);
  proc_free(p);
}

/* A worker process: zkr-bench-worker ARGS... */
static proc *worker_start(const char *name, const char *const *args) {
  GPtrArray *argv = g_ptr_array_new();
  g_ptr_array_add(argv, (char *)opt.worker);
  for (const char *const *a = args; *a; a++)
    g_ptr_array_add(argv, (char *)*a);
  g_ptr_array_add(argv, NULL);
  char session[64];
  snprintf(session, sizeof session, "ZKR_PEER_SESSION_MS=%d",
           MEASURE_SESSION_MS);
  char *const env[] = {session, "ZKR_PEER_TIMEOUT_MS=900000",
                       "ZKR_PEER_LIFETIME_S=3600", NULL};
  proc *p = proc_start(name, (char *const *)argv->pdata, env);
  g_ptr_array_free(argv, TRUE);
  return p;
}

/* A peer: Curator (java) or kazoo (python) in MODE with ARGS. */
static proc *peer_start(const char *impl, const char *const *args,
                        int session_ms) {
  GPtrArray *argv = g_ptr_array_new();
  if (strcmp(impl, "curator") == 0) {
    g_ptr_array_add(argv, (char *)opt.java);
    g_ptr_array_add(argv, "-cp");
    g_ptr_array_add(argv, (char *)opt.curator_cp);
    g_ptr_array_add(argv, "CuratorPeer");
  } else {
    g_ptr_array_add(argv, (char *)opt.python);
    g_ptr_array_add(argv, (char *)opt.kazoo_peer);
  }
  for (const char *const *a = args; *a; a++)
    g_ptr_array_add(argv, (char *)*a);
  g_ptr_array_add(argv, NULL);
  char session[64];
  snprintf(session, sizeof session, "ZKR_PEER_SESSION_MS=%d", session_ms);
  char *const env[] = {session, "ZKR_PEER_TIMEOUT_MS=900000",
                       "ZKR_PEER_LIFETIME_S=3600", NULL};
  char *name = g_strdup_printf("%s %s", impl, args[0]);
  proc *p = proc_start(name, (char *const *)argv->pdata, env);
  g_free(name);
  g_ptr_array_free(argv, TRUE);
  return p;
}

/* ---------------------------------------------------------------- mntr */

/* Four-letter words this process has sent: each one is a received packet
 * on the member it went to (the server counts it before answering, so a
 * snapshot's own mntr is in its own figures). */
static int64_t fourlw_sent;

/* A four-letter word to "host:port" over a plain socket (for -s). */
static char *four_letter_to(const char *addr, const char *cmd) {
  char *host = g_strdup(addr);
  char *colon = strrchr(host, ':');
  if (colon == NULL) {
    g_free(host);
    return NULL;
  }
  *colon = '\0';
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
  if (getaddrinfo(host, colon + 1, &hints, &res) != 0) {
    g_free(host);
    return NULL;
  }
  g_free(host);
  int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
    if (fd >= 0)
      close(fd);
    freeaddrinfo(res);
    return NULL;
  }
  freeaddrinfo(res);
  GString *answer = g_string_new(NULL);
  gboolean ok = write(fd, cmd, strlen(cmd)) == (ssize_t)strlen(cmd);
  int64_t deadline = now_ns() + 5000000000LL;
  while (ok) {
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    int left = (int)((deadline - now_ns()) / 1000000);
    if (left <= 0 || poll(&pfd, 1, left) <= 0) {
      ok = FALSE;
      break;
    }
    char chunk[8192];
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n <= 0)
      break;
    g_string_append_len(answer, chunk, n);
  }
  close(fd);
  if (!ok) {
    g_string_free(answer, TRUE);
    return NULL;
  }
  return g_string_free(answer, FALSE);
}

static char *fetch_mntr(int i) {
  char *text = NULL;
  fourlw_sent++;
  if (ensemble) {
    if (zkrc_ensemble_four_letter(ensemble, i, "mntr", &text) != 0)
      text = NULL;
  } else {
    text = four_letter_to(member_addr[i], "mntr");
  }
  return text;
}

/* The integer value of mntr key @p key in @p text, or -1. */
static int64_t mntr_value(const char *text, const char *key) {
  size_t klen = strlen(key);
  for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p)
    if (strncmp(p, key, klen) == 0 && p[klen] == '\t')
      return strtoll(p + klen + 1, NULL, 10);
  return -1;
}

static const char *const notification_keys[] = {
    "zk_sum_node_deleted_watch_count", "zk_sum_node_changed_watch_count",
    "zk_sum_node_children_watch_count", "zk_sum_node_created_watch_count"};

typedef struct snap {
  int64_t at;
  int64_t fourlw; /* fourlw_sent after this snapshot */
  int64_t packets, notifications, watches;
  int64_t ephemerals[MAX_MEMBERS];
} snap;

/* Sum the counters over the members (fatal when one does not answer). */
static void snap_take(snap *s) {
  memset(s, 0, sizeof *s);
  for (int i = 0; i < members; i++) {
    char *text = fetch_mntr(i);
    int64_t packets = text ? mntr_value(text, "zk_packets_received") : -1;
    if (packets < 0)
      fatal("member %d (%s) gave no mntr counters (is mntr allowed by "
            "4lw.commands.whitelist?)",
            i, member_addr[i]);
    s->packets += packets;
    for (size_t k = 0; k < G_N_ELEMENTS(notification_keys); k++) {
      int64_t v = mntr_value(text, notification_keys[k]);
      if (v < 0)
        fatal("member %d: no %s in mntr", i, notification_keys[k]);
      s->notifications += v;
    }
    s->watches += mntr_value(text, "zk_watch_count");
    s->ephemerals[i] = mntr_value(text, "zk_ephemerals_count");
    g_free(text);
  }
  s->at = now_ns();
  s->fourlw = fourlw_sent;
}

/* Client packets between two snapshots: the servers' count minus our own
 * four-letter words. */
static int64_t client_packets(const snap *a, const snap *b) {
  return (b->packets - a->packets) - (b->fourlw - a->fourlw);
}

/* ------------------------------------------------------------- results */

typedef struct metric {
  char *workload, *impl, *figure, *unit;
  GArray *values; /* double, one per round */
  const char *ref_impl; /* ratio to this implementation's same figure */
} metric;

static GPtrArray *metrics;

static metric *metric_get(const char *workload, const char *impl,
                          const char *figure, const char *unit) {
  for (guint i = 0; i < metrics->len; i++) {
    metric *m = g_ptr_array_index(metrics, i);
    if (!strcmp(m->workload, workload) && !strcmp(m->impl, impl) &&
        !strcmp(m->figure, figure))
      return m;
  }
  metric *m = g_new0(metric, 1);
  m->workload = g_strdup(workload);
  m->impl = g_strdup(impl);
  m->figure = g_strdup(figure);
  m->unit = g_strdup(unit);
  m->values = g_array_new(FALSE, FALSE, sizeof(double));
  g_ptr_array_add(metrics, m);
  return m;
}

static void record(const char *workload, const char *impl, const char *figure,
                   const char *unit, double v) {
  metric *m = metric_get(workload, impl, figure, unit);
  g_array_append_val(m->values, v);
}

static metric *metric_find(const char *workload, const char *impl,
                           const char *figure) {
  for (guint i = 0; i < metrics->len; i++) {
    metric *m = g_ptr_array_index(metrics, i);
    if (!strcmp(m->workload, workload) && !strcmp(m->impl, impl) &&
        !strcmp(m->figure, figure))
      return m;
  }
  return NULL;
}

static double metric_median(const metric *m) {
  return m ? median_of((const double *)(void *)m->values->data, m->values->len)
           : NAN;
}

static double median_of_fig(const char *workload, const char *impl,
                            const char *figure) {
  return metric_median(metric_find(workload, impl, figure));
}

/* The ratio of @p m to its reference: the median of the per-round ratios
 * when both have a value every round, else the ratio of the medians. */
static double metric_ratio(const metric *m) {
  if (m->ref_impl == NULL)
    return NAN;
  const metric *ref = metric_find(m->workload, m->ref_impl, m->figure);
  if (ref == NULL)
    return NAN;
  if (metric_median(ref) == 0)
    return NAN;
  if (ref->values->len != m->values->len || m->values->len == 0)
    return metric_median(m) / metric_median(ref);
  double *r = g_new(double, m->values->len);
  for (guint i = 0; i < m->values->len; i++) {
    double d = g_array_index(ref->values, double, i);
    r[i] = d != 0 ? g_array_index(m->values, double, i) / d : NAN;
  }
  double med = median_of(r, m->values->len);
  g_free(r);
  return med;
}

/* Every metric of @p workload (all implementations) gets @p ref as the
 * reference of its ratio. */
static void set_reference(const char *workload, const char *ref) {
  for (guint i = 0; i < metrics->len; i++) {
    metric *m = g_ptr_array_index(metrics, i);
    if (!strcmp(m->workload, workload))
      m->ref_impl = ref;
  }
}

/* --------------------------------------------------------------- paths */

static char *znode(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *znode(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *rel = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  char *path = g_strdup_printf("%s/%s", root, rel);
  g_free(rel);
  return path;
}

static char *marker_file(const char *tag) {
  return g_strdup_printf("%s/marker-%s", marker_dir, tag);
}

/* ------------------------------------------- uncontended (and the limit) */

static const char *const impl_names[] = {"limit", "zkrecipes", "curator",
                                         "kazoo", "naive"};

static gboolean impl_enabled(const char *impl) {
  if (strcmp(impl, "curator") == 0)
    return opt.with_curator;
  if (strcmp(impl, "kazoo") == 0)
    return opt.with_kazoo;
  return TRUE;
}

/* Requests and notifications per operation over a measurement, from the
 * servers' counters (not corrected for pings: with 30 s sessions they are
 * a handful per measurement, against thousands of requests). */
static void record_server_counts(const char *workload, const char *impl,
                                 const snap *a, const snap *b, double ops) {
  if (ops <= 0)
    return;
  record(workload, impl, "requests per acquisition (mntr)", "count",
         (double)client_packets(a, b) / ops);
  record(workload, impl, "notifications per acquisition (mntr)", "count",
         (double)(b->notifications - a->notifications) / ops);
}

/* Record a loop line ("done ops= secs= ops_per_sec= acquire_p50_us= ..."). */
static void record_loop(const char *impl, const char *line) {
  const char *who = impl;
  double rate = need_field(who, line, "ops_per_sec");
  record("uncontended", impl, "ops/s", "ops/s", rate);
  record("uncontended", impl, "acquire p50", "ms",
         need_field(who, line, "acquire_p50_us") / 1000);
  record("uncontended", impl, "acquire p99", "ms",
         need_field(who, line, "acquire_p99_us") / 1000);
  record("uncontended", impl, "cycle p50", "ms",
         need_field(who, line, "cycle_p50_us") / 1000);
  record("uncontended", impl, "cycle p99", "ms",
         need_field(who, line, "cycle_p99_us") / 1000);
  progress("  uncontended %-9s %8.1f ops/s  (cycle p50 %.2f ms)", impl, rate,
           need_field(who, line, "cycle_p50_us") / 1000);
}

/* A worker that warms up, says "ready", runs on the start line, and
 * prints one "done" line; the counters are taken around the run. */
static char *run_worker_once(const char *name, const char *const *args,
                             snap *a, snap *b) {
  proc *p = worker_start(name, args);
  g_free(proc_expect(p, "ready", START_MS));
  snap_take(a);
  proc_send(p, "go");
  char *line = proc_expect(p, "done", STEP_MS + opt.seconds * 1000);
  snap_take(b);
  proc_finish(p, STEP_MS);
  return line;
}

/* The @p i-th of @p n implementations measured in round @p round: forward
 * in odd rounds, backward in even ones, so that drift and position effects
 * cancel while neighbours (zkrecipes and the limit, zkrecipes and Curator)
 * stay next to each other. */
static size_t round_order(int round, size_t i, size_t n) {
  return round % 2 == 0 && round > 0 ? n - 1 - i : i;
}

static void uncontended_round(int round, proc *curator, proc *kazoo) {
  char secs[16];
  snprintf(secs, sizeof secs, "%d", opt.seconds);
  size_t n = G_N_ELEMENTS(impl_names);
  for (size_t i = 0; i < n; i++) {
    const char *impl = impl_names[round_order(round, i, n)];
    if (!impl_enabled(impl))
      continue;
    char *path = znode("uncontended/%s-r%d", impl, round);
    char *line;
    snap a, b;
    if (strcmp(impl, "limit") == 0) {
      const char *args[] = {"seq", hosts, path, secs, NULL};
      line = run_worker_once("limit seq", args, &a, &b);
    } else if (strcmp(impl, "zkrecipes") == 0 || strcmp(impl, "naive") == 0) {
      const char *args[] = {"loop", impl[0] == 'z' ? "zkr" : "naive", hosts,
                            path, secs, NULL};
      line = run_worker_once(impl, args, &a, &b);
    } else {
      /* The peer warms up on the command before it starts timing: the
       * counters then include that one acquisition too. */
      proc *peer = impl[0] == 'c' ? curator : kazoo;
      char *cmd = g_strdup_printf("loop %s %d", path, opt.seconds);
      snap_take(&a);
      proc_send(peer, cmd);
      g_free(cmd);
      line = proc_expect(peer, "done", STEP_MS + opt.seconds * 1000);
      snap_take(&b);
    }
    record_loop(impl, line);
    double ops = need_field(impl, line, "ops");
    if (strcmp(impl, "curator") == 0 || strcmp(impl, "kazoo") == 0)
      ops += 1; /* the warm-up */
    record_server_counts("uncontended", impl, &a, &b, ops);
    g_free(line);
    g_free(path);
  }
}

static void pipelined_round(int round) {
  char *path = znode("limit/pipelined-r%d", round);
  char secs[16];
  snprintf(secs, sizeof secs, "%d", opt.seconds < 3 ? opt.seconds : 3);
  const char *args[] = {"pipe", hosts, path, secs, "500", NULL};
  snap a, b;
  char *line = run_worker_once("limit pipe", args, &a, &b);
  double rate = need_field("limit pipe", line, "ops_per_sec");
  record("limit", "zookeeper", "pipelined creates/s (500 in flight)",
         "ops/s", rate);
  progress("  pipelined creates   %8.1f ops/s", rate);
  g_free(line);
  g_free(path);
}

/* ----------------------------------------------------------- contended */

typedef struct cycle {
  int64_t a, h, r, d; /* us: acquire called, acquired, release called, released */
} cycle;

static int compare_cycle_held(const void *x, const void *y) {
  const cycle *a = x, *b = y;
  return a->h < b->h ? -1 : a->h > b->h;
}

/* Parse an "ops A,H,R,D ..." line into @p cycles. */
static void parse_cycles(const char *who, const char *line, GArray *cycles) {
  if (!g_str_has_prefix(line, "ops"))
    fatal("%s: expected an ops line, got \"%.100s\"", who, line);
  const char *p = line + 3;
  while (*p == ' ') {
    cycle c;
    int used = 0;
    if (sscanf(p, " %" SCNd64 ",%" SCNd64 ",%" SCNd64 ",%" SCNd64 "%n", &c.a,
               &c.h, &c.r, &c.d, &used) != 4)
      fatal("%s: bad ops line near \"%.40s\"", who, p);
    g_array_append_val(cycles, c);
    p += used;
  }
}

/* Handoffs, waits, and the exclusion check from the cycles' times. */
static void analyze_contended(const char *impl, GArray *cycles,
                              int marker_violations) {
  size_t n = cycles->len;
  if (n < 2)
    fatal("%s: only %zu cycles in the contended run", impl, n);
  cycle *c = (cycle *)(void *)cycles->data;
  qsort(c, n, sizeof *c, compare_cycle_held);
  int64_t first = c[0].a, last = c[0].d;
  double *wait = g_new(double, n), *gap = g_new(double, n),
         *del = g_new(double, n), *wake = g_new(double, n);
  size_t gaps = 0;
  int overlaps = 0;
  for (size_t i = 0; i < n; i++) {
    if (c[i].a < first)
      first = c[i].a;
    if (c[i].d > last)
      last = c[i].d;
    wait[i] = (double)(c[i].h - c[i].a) / 1000;
    if (i + 1 < n) {
      /* Held from h to r: the next hold must start after this one ends. */
      if (c[i + 1].h < c[i].r)
        overlaps++;
      /* A handoff: the next holder was already waiting when this one
       * started to release. */
      if (c[i + 1].a < c[i].r) {
        gap[gaps] = (double)(c[i + 1].h - c[i].r) / 1000;
        del[gaps] = (double)(c[i].d - c[i].r) / 1000;
        wake[gaps] = (double)(c[i + 1].h - c[i].d) / 1000;
        gaps++;
      }
    }
  }
  double secs = (double)(last - first) / 1e6;
  double rate = (double)n / secs;
  record("contended", impl, "handoffs/s", "ops/s", rate);
  record("contended", impl, "wait p50", "ms", quantile(wait, n, 0.50));
  record("contended", impl, "wait p99", "ms", quantile(wait, n, 0.99));
  record("contended", impl, "handoff p50 (release called -> next holds)",
         "ms", quantile(gap, gaps, 0.50));
  record("contended", impl, "  release's delete p50", "ms",
         quantile(del, gaps, 0.50));
  record("contended", impl, "  next holds after delete confirmed p50", "ms",
         quantile(wake, gaps, 0.50));
  record("contended", impl, "violations (marker + overlapping holds)",
         "count", marker_violations + overlaps);
  progress("  contended   %-9s %8.1f handoffs/s  (wait p50 %.1f ms, handoff "
           "p50 %.2f ms, %d violations)",
           impl, rate, quantile(wait, n, 0.50), quantile(gap, gaps, 0.50),
           marker_violations + overlaps);
  g_free(wait);
  g_free(gap);
  g_free(del);
  g_free(wake);
}

/* The C contenders: one process (one session) each. */
static void contended_workers(const char *impl, const char *path,
                              const char *marker, GArray *cycles,
                              int *violations, snap *a, snap *b) {
  char secs[16];
  snprintf(secs, sizeof secs, "%d", opt.seconds);
  proc **w = g_new0(proc *, opt.contenders);
  for (int i = 0; i < opt.contenders; i++) {
    const char *args[] = {"contend", impl, hosts, path, secs, marker, NULL};
    char *name = g_strdup_printf("%s contender %d", impl, i);
    w[i] = worker_start(name, args);
    g_free(name);
  }
  for (int i = 0; i < opt.contenders; i++)
    g_free(proc_expect(w[i], "ready", START_MS));
  snap_take(a);
  for (int i = 0; i < opt.contenders; i++)
    proc_send(w[i], "go");
  char **done_lines = g_new0(char *, opt.contenders);
  for (int i = 0; i < opt.contenders; i++)
    done_lines[i] = proc_expect(w[i], "done", STEP_MS + opt.seconds * 1000);
  snap_take(b);
  for (int i = 0; i < opt.contenders; i++) {
    char *done = done_lines[i];
    *violations += (int)need_field(w[i]->name, done, "violations");
    char *ops = proc_line(w[i], STEP_MS);
    parse_cycles(w[i]->name, ops, cycles);
    g_free(ops);
    g_free(done);
    proc_finish(w[i], STEP_MS);
  }
  g_free(done_lines);
  g_free(w);
}

static void contended_round(int round, proc *curator, proc *kazoo) {
  size_t n = G_N_ELEMENTS(impl_names) - 1; /* all but the limit */
  for (size_t i = 0; i < n; i++) {
    const char *impl = impl_names[1 + round_order(round, i, n)];
    if (!impl_enabled(impl))
      continue;
    char *path = znode("contended/%s-r%d", impl, round);
    char *tag = g_strdup_printf("%s-r%d", impl, round);
    char *marker = marker_file(tag);
    GArray *cycles = g_array_new(FALSE, FALSE, sizeof(cycle));
    int violations = 0;
    snap a, b;
    if (strcmp(impl, "zkrecipes") == 0 || strcmp(impl, "naive") == 0) {
      contended_workers(impl[0] == 'z' ? "zkr" : "naive", path, marker,
                        cycles, &violations, &a, &b);
    } else {
      /* The peer's threads warm up (one acquisition each) after the
       * command: the counters include those too. */
      proc *peer = impl[0] == 'c' ? curator : kazoo;
      char *cmd = g_strdup_printf("contend %s %d %d %s", path, opt.seconds,
                                  opt.contenders, marker);
      snap_take(&a);
      proc_send(peer, cmd);
      g_free(cmd);
      char *done = proc_expect(peer, "done", START_MS + opt.seconds * 1000);
      snap_take(&b);
      violations = (int)need_field(impl, done, "violations");
      char *ops = proc_line(peer, STEP_MS);
      parse_cycles(impl, ops, cycles);
      g_free(ops);
      g_free(done);
    }
    int warm_ups = strcmp(impl, "curator") == 0 || strcmp(impl, "kazoo") == 0
                       ? opt.contenders
                       : 0;
    record_server_counts("contended", impl, &a, &b,
                         (double)(cycles->len + warm_ups));
    analyze_contended(impl, cycles, violations);
    unlink(marker); /* left only by a violation */
    g_array_free(cycles, TRUE);
    g_free(marker);
    g_free(tag);
    g_free(path);
  }
}

/* A first, discarded round of every measurement, 2 s each: a new
 * ensemble is slow at first (the servers' JIT, the first transaction log
 * files), and so are the peers' JVM and Python. */
static void warm_up(proc *curator, proc *kazoo) {
  progress("warm-up round (discarded), 2 s each");
  int seconds = opt.seconds;
  opt.seconds = 2;
  uncontended_round(0, curator, kazoo);
  contended_round(0, curator, kazoo);
  opt.seconds = seconds;
  for (guint i = 0; i < metrics->len; i++)
    g_array_set_size(((metric *)g_ptr_array_index(metrics, i))->values, 0);
}

static void run_throughput(void) {
  proc *curator = NULL, *kazoo = NULL;
  if (opt.with_curator) {
    const char *args[] = {"bench", hosts, NULL};
    curator = peer_start("curator", args, MEASURE_SESSION_MS);
    g_free(proc_expect(curator, "ready", START_MS));
  }
  if (opt.with_kazoo) {
    const char *args[] = {"bench", hosts, NULL};
    kazoo = peer_start("kazoo", args, MEASURE_SESSION_MS);
    g_free(proc_expect(kazoo, "ready", START_MS));
  }
  warm_up(curator, kazoo);
  for (int r = 1; r <= opt.rounds; r++) {
    progress("round %d of %d: uncontended, %d s each", r, opt.rounds,
             opt.seconds);
    uncontended_round(r, curator, kazoo);
    pipelined_round(r);
    progress("round %d of %d: contended, %d sessions, %d s each", r,
             opt.rounds, opt.contenders, opt.seconds);
    contended_round(r, curator, kazoo);
  }
  if (curator) {
    proc_send(curator, "quit");
    proc_finish(curator, STEP_MS);
  }
  if (kazoo) {
    proc_send(kazoo, "quit");
    proc_finish(kazoo, STEP_MS);
  }
  set_reference("uncontended", "limit");
  set_reference("contended", opt.with_curator ? "curator" : NULL);
}

/* ---------------------------------------------------------------- herd */

/* Wait until the servers show the queue settled: every member has applied
 * the creates and deletes so far (its count of ephemeral nodes is
 * @p ephemerals), and the watches set are @p watches in total.  Since a
 * member fires the watches of a change when it applies it, and every
 * contender holds at most one watch, this means every notification of the
 * changes so far has been handled and the watch it led to is set. */
static void herd_settle(const char *impl, int64_t ephemerals, int64_t watches,
                        snap *s) {
  int64_t deadline = now_ns() + (int64_t)STEP_MS * 1000000;
  for (;;) {
    snap_take(s);
    gboolean applied = TRUE;
    for (int i = 0; i < members; i++)
      applied = applied && s->ephemerals[i] == ephemerals;
    if (applied && s->watches == watches)
      return;
    if (now_ns() > deadline)
      fatal("%s herd: the queue did not settle (ephemerals %" PRId64
            " on member 0, want %" PRId64 "; watches %" PRId64
            ", want %" PRId64 ")",
            impl, s->ephemerals[0], ephemerals, s->watches, watches);
    sleep_ms(10);
  }
}

static void herd_run(const char *impl) {
  int n = opt.herd_waiters;
  char *path = znode("herd/%s", impl);
  char count[16];
  snprintf(count, sizeof count, "%d", n);
  proc *p;
  if (strcmp(impl, "zkrecipes") == 0 || strcmp(impl, "naive") == 0) {
    const char *args[] = {"herd", impl[0] == 'z' ? "zkr" : "naive", hosts,
                          path, count, NULL};
    p = worker_start(impl, args);
  } else {
    const char *args[] = {"herd", hosts, path, count, NULL};
    p = peer_start(impl, args, MEASURE_SESSION_MS);
  }
  /* The naive lock's holder keeps the watch its last read set (it is armed
   * whenever the holder was a waiter), and its own delete fires it. */
  int holder_watch = strcmp(impl, "naive") == 0;
  g_free(proc_expect(p, "ready", START_MS));
  proc_send(p, "hold");
  g_free(proc_expect(p, "held", STEP_MS));

  /* Pings of these sessions while idle, for the correction below. */
  snap idle0, idle1;
  snap_take(&idle0);
  sleep_ms(opt.idle_ms);
  snap_take(&idle1);
  double ping_rate = (double)client_packets(&idle0, &idle1) /
                     ((double)(idle1.at - idle0.at) / 1e9);

  snap a, q, b;
  snap_take(&a);
  /* At a: the first holder's node, and (naive only) its watch. */
  int64_t other_watches = a.watches - holder_watch;
  proc_send(p, "queue");
  herd_settle(impl, a.ephemerals[0] + n, other_watches + n, &q);
  for (int k = 1; k <= n + 1; k++) {
    proc_send(p, "release");
    int want_acquired = k <= n, want_released = 1;
    while (want_acquired || want_released) {
      char *line = proc_line(p, STEP_MS);
      if (g_str_has_prefix(line, "acquired") && want_acquired)
        want_acquired = 0;
      else if (strcmp(line, "released") == 0 && want_released)
        want_released = 0;
      else
        fatal("%s herd: unexpected \"%s\"", impl, line);
      g_free(line);
    }
    int64_t waiting = n - k < 0 ? 0 : n - k;
    int64_t armed = waiting + (k <= n ? holder_watch : 0);
    herd_settle(impl, a.ephemerals[0] + n - k, other_watches + armed, &b);
  }
  /* b is taken: now the sessions may close. */
  g_free(proc_expect(p, "done", STEP_MS));
  proc_send(p, "quit");
  proc_finish(p, STEP_MS);

  double window_s = (double)(b.at - a.at) / 1e9;
  double packets = (double)client_packets(&a, &b);
  double pings = ping_rate > 0 ? ping_rate * window_s : 0;
  double per_acq = (packets - pings) / n;
  double release_notes = (double)(b.notifications - q.notifications) / n;
  record("herd", impl, "notifications per release", "count", release_notes);
  record("herd", impl, "notifications while queueing (total)", "count",
         (double)(q.notifications - a.notifications));
  record("herd", impl, "requests per acquisition", "count", per_acq);
  record("herd", impl, "  of which pings (idle-rate correction)", "count",
         pings / n);
  record("herd", impl, "window", "s", window_s);
  progress("  herd %-9s %.2f notifications/release, %.2f requests/acquisition"
           " (%.0f client packets in %.1f s, minus %.1f pings)",
           impl, release_notes, per_acq, packets, window_s, pings);
  g_free(path);
}

static void run_herd(void) {
  progress("herd: %d waiters queued, released one by one", opt.herd_waiters);
  for (size_t i = 1; i < G_N_ELEMENTS(impl_names); i++)
    if (impl_enabled(impl_names[i]))
      herd_run(impl_names[i]);
  set_reference("herd", opt.with_curator ? "curator" : NULL);
}

/* --------------------------------------------------------------- scale */

typedef struct hold_time {
  int64_t h, r, token;
} hold_time;

static int compare_hold_time(const void *x, const void *y) {
  const hold_time *a = x, *b = y;
  return a->h < b->h ? -1 : a->h > b->h;
}

static void scale_waiters(void) {
  int procs = opt.scale_procs;
  long total = (long)procs * opt.scale_sessions * opt.scale_holds;
  char *path = znode("scale/waiters");
  char *marker = marker_file("scale");
  char sessions[16], holds[16];
  snprintf(sessions, sizeof sessions, "%d", opt.scale_sessions);
  snprintf(holds, sizeof holds, "%d", opt.scale_holds);
  progress("scale: %ld waiters on one lock (%d processes x %d sessions x %d "
           "holds)",
           total, procs, opt.scale_sessions, opt.scale_holds);
  proc **w = g_new0(proc *, procs);
  for (int i = 0; i < procs; i++) {
    const char *args[] = {"waiters", hosts, path, sessions, holds, marker,
                          NULL};
    char *name = g_strdup_printf("waiters %d", i);
    w[i] = worker_start(name, args);
    g_free(name);
  }
  for (int i = 0; i < procs; i++)
    g_free(proc_expect(w[i], "ready", START_MS));
  int64_t start = now_ns();
  for (int i = 0; i < procs; i++)
    proc_send(w[i], "go");
  int violations = 0, failures = 0;
  GArray *times = g_array_new(FALSE, FALSE, sizeof(hold_time));
  for (int i = 0; i < procs; i++) {
    char *done = proc_expect(w[i], "done", 600000);
    violations += (int)need_field(w[i]->name, done, "violations");
    failures += (int)need_field(w[i]->name, done, "failures");
    char *ops = proc_line(w[i], STEP_MS);
    for (const char *p = ops + 3; *p == ' ';) {
      hold_time t;
      int used = 0;
      if (sscanf(p, " %" SCNd64 ",%" SCNd64 ",%" SCNd64 "%n", &t.h, &t.r,
                 &t.token, &used) != 3)
        fatal("%s: bad ops line", w[i]->name);
      g_array_append_val(times, t);
      p += used;
    }
    g_free(ops);
    g_free(done);
  }
  double secs = (double)(now_ns() - start) / 1e9;
  for (int i = 0; i < procs; i++)
    proc_finish(w[i], STEP_MS);
  /* Holds must not overlap, and the fencing tokens must grow with every
   * handoff (the queue order is the creation order). */
  hold_time *t = (hold_time *)(void *)times->data;
  qsort(t, times->len, sizeof *t, compare_hold_time);
  int overlaps = 0, token_disorder = 0;
  for (guint i = 0; i + 1 < times->len; i++) {
    overlaps += t[i + 1].h < t[i].r;
    token_disorder += t[i + 1].token <= t[i].token;
  }
  char figure[64];
  snprintf(figure, sizeof figure, "%ld waiters: total time", total);
  record("scale", "zkrecipes", figure, "s", secs);
  snprintf(figure, sizeof figure, "%ld waiters: acquisitions/s", total);
  record("scale", "zkrecipes", figure, "ops/s", (double)total / secs);
  snprintf(figure, sizeof figure, "%ld waiters: violations", total);
  record("scale", "zkrecipes", figure, "count",
         violations + overlaps + token_disorder);
  snprintf(figure, sizeof figure, "%ld waiters: failed acquisitions", total);
  record("scale", "zkrecipes", figure, "count", failures);
  progress("  %ld waiters done in %.1f s: %d marker violations, %d overlaps, "
           "%d tokens out of order, %d failures",
           total, secs, violations, overlaps, token_disorder, failures);
  g_array_free(times, TRUE);
  unlink(marker);
  g_free(marker);
  g_free(path);
  g_free(w);
}

/* One process acquires opt.scale_locks locks, at most @p window at a time
 * (0: all at once). */
static void scale_locks_run(int window) {
  char *prefix = znode("scale/locks-w%d", window);
  char count[16], win[16];
  snprintf(count, sizeof count, "%d", opt.scale_locks);
  snprintf(win, sizeof win, "%d", window);
  char how[32];
  if (window)
    snprintf(how, sizeof how, "%d at a time", window);
  else
    snprintf(how, sizeof how, "all at once");
  progress("scale: one process holding %d different locks, acquired %s",
           opt.scale_locks, how);
  const char *args[] = {"locks", hosts, prefix, count, win, NULL};
  proc *p = worker_start("locks", args);
  g_free(proc_expect(p, "ready", START_MS));
  proc_send(p, "go");
  char *done = proc_expect(p, "done", 600000);
  proc_finish(p, 600000);
  char figure[96];
  snprintf(figure, sizeof figure, "%d locks, %s: time to acquire all",
           opt.scale_locks, how);
  record("scale", "zkrecipes", figure, "s", need_field("locks", done, "secs"));
  snprintf(figure, sizeof figure, "%d locks, %s: RSS per held lock",
           opt.scale_locks, how);
  record("scale", "zkrecipes", figure, "bytes",
         need_field("locks", done, "bytes_per_lock"));
  snprintf(figure, sizeof figure, "%d locks, %s: same after malloc_trim",
           opt.scale_locks, how);
  record("scale", "zkrecipes", figure, "bytes",
         need_field("locks", done, "trimmed_bytes_per_lock"));
  snprintf(figure, sizeof figure, "%d locks, %s: failed acquisitions",
           opt.scale_locks, how);
  record("scale", "zkrecipes", figure, "count",
         need_field("locks", done, "failures"));
  progress("  %s", done);
  g_free(done);
  g_free(prefix);
}

static void scale_locks(void) {
  scale_locks_run(0);
  scale_locks_run(64);
}

/* ------------------------------------------------------------ election */

typedef struct elector {
  const char *impl;
  proc *p;
  gboolean elected; /* said so while we waited for something else */
  char *node;       /* its node: Curator says it on joining, zkrecipes
                     * when elected */
} elector;

static const char *elected_word(const elector *e) {
  return strcmp(e->impl, "zkrecipes") == 0 ? "elected" : "leader";
}

/* Note what a line of an elector says: elected, its node. */
static void elector_note(elector *e, const char *line) {
  char **w = g_strsplit(line, " ", 0);
  if (g_str_has_prefix(line, elected_word(e))) {
    e->elected = TRUE;
    if (w[0] && w[1] && w[2]) { /* zkrecipes: "elected T NODE" */
      g_free(e->node);
      e->node = g_strdup(w[2]);
    }
  } else if (g_str_has_prefix(line, "joined ") && w[1]) { /* Curator */
    g_free(e->node);
    e->node = g_strdup(w[1]);
  }
  g_strfreev(w);
}

/* Wait for a line starting with @p prefix, noting an election on the way
 * (the events come in any order with the answers). */
static void elector_expect(elector *e, const char *prefix) {
  int64_t deadline = now_ns() + (int64_t)START_MS * 1000000;
  for (;;) {
    int left = (int)((deadline - now_ns()) / 1000000);
    char *line = proc_line(e->p, left > 0 ? left : 1);
    if (g_str_has_prefix(line, "error") || g_str_has_prefix(line, "timeout"))
      fatal("%s: %s", e->p->name, line);
    elector_note(e, line);
    gboolean done = g_str_has_prefix(line, prefix);
    g_free(line);
    if (done)
      return;
  }
}

/* A plain ZooKeeper handle of the bench's own, to see a node's deletion
 * the moment the servers tell (the new leader learns it the same way). */
typedef struct deletion_watch {
  GMutex mu;
  GCond cond;
  int state;
  int64_t deleted_at;
} deletion_watch;

static deletion_watch dwatch;
static zhandle_t *watch_zh;

static void quiet_zk_log(const char *message) { (void)message; }

static void dwatch_session(zhandle_t *zh, int type, int state,
                           const char *path, void *ctx) {
  g_mutex_lock(&dwatch.mu);
  if (type == ZOO_SESSION_EVENT)
    dwatch.state = state;
  g_cond_broadcast(&dwatch.cond);
  g_mutex_unlock(&dwatch.mu);
}

static void dwatch_fired(zhandle_t *zh, int type, int state, const char *path,
                         void *ctx) {
  int64_t t = now_ns();
  g_mutex_lock(&dwatch.mu);
  if (type == ZOO_DELETED_EVENT && dwatch.deleted_at == 0)
    dwatch.deleted_at = t;
  g_cond_broadcast(&dwatch.cond);
  g_mutex_unlock(&dwatch.mu);
}

static void watch_connect(void) {
  if (watch_zh)
    return;
  watch_zh = zookeeper_init2(hosts, dwatch_session, 30000, NULL, NULL, 0,
                             quiet_zk_log);
  if (watch_zh == NULL)
    fatal("zookeeper_init: %s", strerror(errno));
  int64_t deadline = g_get_monotonic_time() + (int64_t)STEP_MS * 1000;
  g_mutex_lock(&dwatch.mu);
  while (dwatch.state != ZOO_CONNECTED_STATE)
    if (!g_cond_wait_until(&dwatch.cond, &dwatch.mu, deadline))
      fatal("the bench's own ZooKeeper handle could not connect");
  g_mutex_unlock(&dwatch.mu);
}

/* Watch @p node for its deletion (it must exist). */
static void watch_deletion(const char *node) {
  g_mutex_lock(&dwatch.mu);
  dwatch.deleted_at = 0;
  g_mutex_unlock(&dwatch.mu);
  struct Stat st;
  int rc = zoo_wexists(watch_zh, node, dwatch_fired, NULL, &st);
  if (rc != ZOK)
    fatal("the leader's node %s: %s", node, zerror(rc));
}

static int64_t deletion_seen(void) {
  g_mutex_lock(&dwatch.mu);
  int64_t t = dwatch.deleted_at;
  g_mutex_unlock(&dwatch.mu);
  return t;
}

/* Wait until @p e says it leads (or has said so already). */
static void elector_wait_elected(elector *e) {
  if (!e->elected)
    elector_expect(e, elected_word(e));
  e->elected = FALSE;
}

static elector elector_start(const char *impl, const char *path, int index) {
  char id[32];
  snprintf(id, sizeof id, "%s-%d", impl, index);
  elector e = {impl, NULL, FALSE, NULL};
  if (strcmp(impl, "zkrecipes") == 0) {
    /* A short session, unlike the measuring clients: failover waits for
     * the dead leader's session to expire. */
    char session[64];
    snprintf(session, sizeof session, "ZKR_PEER_SESSION_MS=%d",
             opt.election_session_ms);
    const char *argv[] = {opt.worker, "elect", hosts, path, id, NULL};
    char *const env[] = {session, "ZKR_PEER_TIMEOUT_MS=900000",
                         "ZKR_PEER_LIFETIME_S=3600", NULL};
    e.p = proc_start(id, (char *const *)argv, env);
  } else {
    const char *args[] = {"latch", hosts, path, id, NULL};
    e.p = peer_start(impl, args, opt.election_session_ms);
  }
  /* zkrecipes prints "joined" once its node is listed; Curator once its
   * node is created. */
  elector_expect(&e, "joined");
  return e;
}

static void elector_quit(elector *e) {
  proc_send(e->p, "quit");
  proc_finish(e->p, STEP_MS);
  e->p = NULL;
  g_free(e->node);
  e->node = NULL;
}

/* After the leader was killed: wait until @p next is elected. */
static void failover_wait(elector *next) {
  int64_t deadline = now_ns() + (int64_t)STEP_MS * 1000000;
  while (!next->elected) {
    char *line = proc_try_line(next->p, 1000);
    if (line && (g_str_has_prefix(line, "error") ||
                 g_str_has_prefix(line, "timeout")))
      fatal("%s: %s", next->p->name, line);
    if (line)
      elector_note(next, line);
    g_free(line);
    if (now_ns() > deadline)
      fatal("%s: no new leader within %d ms", next->impl, STEP_MS);
  }
  next->elected = FALSE;
}

static void election_run(const char *impl) {
  char *path = znode("election/%s", impl);
  int index = 0;
  progress("election (%s): session timeout %d ms", impl,
           opt.election_session_ms);
  elector leader = elector_start(impl, path, index++);
  elector_wait_elected(&leader);
  for (int rep = 0; rep < opt.election_reps; rep++) {
    elector next = elector_start(impl, path, index++);
    if (next.elected)
      fatal("%s: a second participant was elected while the first led",
            impl);
    /* The servers expire a session a timeout after its last packet; an
     * idle client pings every third of the timeout.  Kill at a random
     * point between two pings, the same way for every implementation (the
     * leader elected just before, or a follower slow to start, would
     * otherwise decide the phase). */
    sleep_ms(opt.election_session_ms / 3 +
             g_random_int_range(0, opt.election_session_ms / 3 + 1));
    watch_deletion(leader.node);
    int64_t t0 = now_ns();
    proc_kill(leader.p); /* SIGKILL: its session has to expire */
    failover_wait(&next);
    int64_t elected = now_ns(), gone = deletion_seen();
    if (gone == 0)
      fatal("%s: elected before the old leader's node was deleted", impl);
    double ms = (double)(elected - t0) / 1e6;
    double expiry_ms = (double)(gone - t0) / 1e6;
    proc_free(leader.p);
    record("election", impl, "failover after SIGKILL", "ms", ms);
    record("election", impl, "failover / session timeout", "x",
           ms / opt.election_session_ms);
    record("election", impl, "  SIGKILL -> its node deleted (expiry)", "ms",
           expiry_ms);
    record("election", impl, "  deletion seen -> new leader says so", "ms",
           ms - expiry_ms);
    progress("  %s: SIGKILL -> new leader in %.0f ms (node deleted after "
             "%.0f ms)",
             impl, ms, expiry_ms);
    g_free(leader.node);
    leader = next;
  }
  elector follower = elector_start(impl, path, index++);
  for (int rep = 0; rep < opt.election_reps; rep++) {
    int64_t t0 = now_ns();
    if (strcmp(impl, "zkrecipes") == 0) {
      proc_send(leader.p, "resign");
      elector_wait_elected(&follower);
      double ms = (double)(now_ns() - t0) / 1e6;
      record("election", impl, "resign -> new leader", "ms", ms);
      progress("  %s: resign -> new leader in %.1f ms", impl, ms);
      /* The old leader queues again behind: wait until its node is in. */
      elector_expect(&leader, "rejoined");
    } else {
      /* LeaderLatch has no resign: close() leaves, join() queues again. */
      proc_send(leader.p, "close");
      elector_wait_elected(&follower);
      double ms = (double)(now_ns() - t0) / 1e6;
      record("election", impl, "resign -> new leader", "ms", ms);
      progress("  %s: close -> new leader in %.1f ms", impl, ms);
      elector_expect(&leader, "closed");
      proc_send(leader.p, "join");
      elector_expect(&leader, "joined");
    }
    if (leader.elected)
      fatal("%s: the old leader was elected again at once", impl);
    elector t = leader;
    leader = follower;
    follower = t;
  }
  elector_quit(&leader);
  elector_quit(&follower);
  g_free(path);
}

static void run_election(void) {
  watch_connect();
  election_run("zkrecipes");
  if (opt.with_curator)
    election_run("curator");
}

/* ------------------------------------------------------------ the report */

typedef struct target {
  char what[100];
  char measured[160];
  int met; /* 1 met, 0 not, -1 not measured */
} target;

static GPtrArray *targets;

static void add_target(const char *what, int met, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void add_target(const char *what, int met, const char *fmt, ...) {
  target *t = g_new0(target, 1);
  snprintf(t->what, sizeof t->what, "%s", what);
  t->met = met;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t->measured, sizeof t->measured, fmt, ap);
  va_end(ap);
  g_ptr_array_add(targets, t);
}

static void evaluate_targets(void) {
  targets = g_ptr_array_new();
  metric *u = metric_find("uncontended", "zkrecipes", "ops/s");
  if (u) {
    double r = metric_ratio(u);
    add_target("uncontended >= 90% of the raw sequential create+delete rate",
               r >= 0.90, "%.0f%% (%.0f vs %.0f ops/s)", 100 * r,
               metric_median(u),
               median_of_fig("uncontended", "limit", "ops/s"));
  } else {
    add_target("uncontended >= 90% of the raw sequential create+delete rate",
               -1, "not run");
  }
  metric *c = metric_find("contended", "zkrecipes", "handoffs/s");
  if (c && opt.with_curator) {
    double r = metric_ratio(c);
    add_target("contended handoffs >= 2x Curator's", r >= 2.0,
               "%.2fx (%.0f vs %.0f handoffs/s)", r, metric_median(c),
               median_of_fig("contended", "curator", "handoffs/s"));
  } else {
    add_target("contended handoffs >= 2x Curator's", -1, "not run");
  }
  if (c) {
    double worst = 0;
    for (size_t i = 1; i < G_N_ELEMENTS(impl_names); i++) {
      metric *v = metric_find("contended", impl_names[i],
                              "violations (marker + overlapping holds)");
      for (guint k = 0; v && k < v->values->len; k++)
        worst = MAX(worst, g_array_index(v->values, double, k));
    }
    add_target("contended: 0 mutual-exclusion violations (every lock, every "
               "round)",
               worst == 0, "%.0f at most", worst);
  }
  metric *h = metric_find("herd", "zkrecipes", "notifications per release");
  if (h) {
    double notes = metric_median(h);
    add_target("herd: exactly 1 notification per release",
               fabs(notes - 1.0) < 1e-9, "%.3f", notes);
    double mine = median_of_fig("herd", "zkrecipes", "requests per acquisition");
    double cur = median_of_fig("herd", "curator", "requests per acquisition");
    double kaz = median_of_fig("herd", "kazoo", "requests per acquisition");
    gboolean fewer = (!opt.with_curator || mine < cur) &&
                     (!opt.with_kazoo || mine < kaz);
    add_target("herd: fewer requests per acquisition than Curator and kazoo",
               opt.with_curator || opt.with_kazoo ? fewer : -1,
               "%.2f vs Curator %.2f, kazoo %.2f", mine, cur, kaz);
  } else {
    add_target("herd: exactly 1 notification per release", -1, "not run");
  }
  char figure[64];
  long total = (long)opt.scale_procs * opt.scale_sessions * opt.scale_holds;
  snprintf(figure, sizeof figure, "%ld waiters: violations", total);
  metric *sv = metric_find("scale", "zkrecipes", figure);
  snprintf(figure, sizeof figure, "%ld waiters: failed acquisitions", total);
  metric *sf = metric_find("scale", "zkrecipes", figure);
  char what[100];
  snprintf(what, sizeof what, "%ld waiters all acquire, 0 violations", total);
  if (sv && sf) {
    double v = metric_median(sv), f = metric_median(sf);
    snprintf(figure, sizeof figure, "%ld waiters: total time", total);
    add_target(what, v == 0 && f == 0,
               "%ld acquired in %.1f s, %.0f violations, %.0f failures",
               total, median_of_fig("scale", "zkrecipes", figure), v, f);
    snprintf(figure, sizeof figure,
             "%d locks, all at once: RSS per held lock", opt.scale_locks);
    double b = median_of_fig("scale", "zkrecipes", figure);
    snprintf(figure, sizeof figure,
             "%d locks, 64 at a time: RSS per held lock", opt.scale_locks);
    double w = median_of_fig("scale", "zkrecipes", figure);
    snprintf(what, sizeof what,
             "<= 2 KiB RSS per held lock, %d held, acquired 64 at a time",
             opt.scale_locks);
    add_target(what, w <= 2048, "%.0f bytes", w);
    snprintf(what, sizeof what,
             "<= 2 KiB RSS per held lock, %d held, all acquired at once",
             opt.scale_locks);
    add_target(what, b <= 2048, "%.0f bytes", b);
  } else {
    add_target(what, -1, "not run");
  }
}

static void fmt_value(char *buf, size_t size, double v) {
  if (isnan(v))
    snprintf(buf, size, "-");
  else if (fabs(v) >= 1000 || v == floor(v))
    snprintf(buf, size, "%.0f", v);
  else if (fabs(v) >= 10)
    snprintf(buf, size, "%.1f", v);
  else
    snprintf(buf, size, "%.2f", v);
}

static void print_table(FILE *out) {
  fprintf(out, "%-11s %-9s %-45s %10s %-5s %8s  %s\n", "WORKLOAD", "IMPL",
          "FIGURE", "MEDIAN", "UNIT", "RATIO", "ROUNDS");
  const char *last = "";
  for (guint i = 0; i < metrics->len; i++) {
    metric *m = g_ptr_array_index(metrics, i);
    if (strcmp(last, m->workload) != 0 && i > 0)
      fputc('\n', out);
    last = m->workload;
    char med[32], ratio[48] = "", rounds[160] = "";
    fmt_value(med, sizeof med, metric_median(m));
    double r = metric_ratio(m);
    if (!isnan(r) && strcmp(m->impl, m->ref_impl) != 0)
      snprintf(ratio, sizeof ratio, "%.2fx %s", r, m->ref_impl);
    size_t used = 0;
    for (guint k = 0; k < m->values->len && m->values->len > 1; k++) {
      char v[32];
      fmt_value(v, sizeof v, g_array_index(m->values, double, k));
      used += (size_t)snprintf(rounds + used, sizeof rounds - used, "%s%s",
                               k ? " " : "", v);
      if (used >= sizeof rounds)
        break;
    }
    fprintf(out, "%-11s %-9s %-45s %10s %-5s %8s  %s\n", m->workload,
            m->impl, m->figure, med, m->unit, ratio, rounds);
  }
}

static void print_targets(FILE *out) {
  fprintf(out, "%-70s %-44s %s\n", "TARGET", "MEASURED", "MET");
  for (guint i = 0; i < targets->len; i++) {
    target *t = g_ptr_array_index(targets, i);
    fprintf(out, "%-70s %-44s %s\n", t->what, t->measured,
            t->met < 0 ? "n/a" : t->met ? "yes" : "NO");
  }
}

static void write_csv(const char *file) {
  FILE *f = fopen(file, "w");
  if (f == NULL)
    fatal("%s: %s", file, strerror(errno));
  fprintf(f, "workload,implementation,figure,unit,median,ratio,ratio_to,"
             "rounds\n");
  for (guint i = 0; i < metrics->len; i++) {
    metric *m = g_ptr_array_index(metrics, i);
    double r = metric_ratio(m);
    char *fig = g_strstrip(g_strdup(m->figure));
    fprintf(f, "%s,%s,\"%s\",%s,%.6g,", m->workload, m->impl, fig, m->unit,
            metric_median(m));
    g_free(fig);
    if (!isnan(r))
      fprintf(f, "%.4f,%s,", r, m->ref_impl);
    else
      fprintf(f, ",,");
    for (guint k = 0; k < m->values->len; k++)
      fprintf(f, "%s%.6g", k ? ";" : "", g_array_index(m->values, double, k));
    fputc('\n', f);
  }
  for (guint i = 0; i < targets->len; i++) {
    target *t = g_ptr_array_index(targets, i);
    fprintf(f, "target,,\"%s\",,\"%s\",%s,,\n", t->what, t->measured,
            t->met < 0 ? "n/a" : t->met ? "met" : "not met");
  }
  if (fclose(f) != 0)
    fatal("%s: %s", file, strerror(errno));
}

/* ------------------------------------------------------------ the machine */

static char *first_line_of(const char *cmd) {
  FILE *f = popen(cmd, "r");
  if (f == NULL)
    return g_strdup("?");
  char buf[512] = "";
  if (fgets(buf, sizeof buf, f) == NULL)
    buf[0] = '\0';
  pclose(f);
  return g_strstrip(g_strdup(buf[0] ? buf : "?"));
}

/* The value after "key :" on the first line of @p file starting with @p key. */
static char *file_field(const char *file, const char *key) {
  char *text = NULL, *value = NULL;
  if (!g_file_get_contents(file, &text, NULL, NULL))
    return g_strdup("?");
  char **lines = g_strsplit(text, "\n", -1);
  for (char **l = lines; *l && value == NULL; l++)
    if (g_str_has_prefix(*l, key) && strchr(*l, ':'))
      value = g_strstrip(g_strdup(strchr(*l, ':') + 1));
  g_strfreev(lines);
  g_free(text);
  return value ? value : g_strdup("?");
}

/* The filesystem type and device holding @p dir. */
static char *filesystem_of(const char *dir) {
  char *text = NULL, *best_dev = NULL, *best_type = NULL;
  size_t best_len = 0;
  if (g_file_get_contents("/proc/self/mounts", &text, NULL, NULL)) {
    char **lines = g_strsplit(text, "\n", -1);
    for (char **l = lines; *l; l++) {
      char dev[256], mnt[512], type[64];
      if (sscanf(*l, "%255s %511s %63s", dev, mnt, type) != 3)
        continue;
      size_t len = strlen(mnt);
      if (g_str_has_prefix(dir, mnt) &&
          (dir[len] == '/' || dir[len] == '\0' || len == 1) &&
          len >= best_len) {
        best_len = len;
        g_free(best_dev);
        g_free(best_type);
        best_dev = g_strdup(dev);
        best_type = g_strdup(type);
      }
    }
    g_strfreev(lines);
    g_free(text);
  }
  char *out = g_strdup_printf("%s (%s)", best_type ? best_type : "?",
                              best_dev ? best_dev : "?");
  g_free(best_dev);
  g_free(best_type);
  return out;
}

static char *loadavg(void) {
  char *text = NULL;
  if (!g_file_get_contents("/proc/loadavg", &text, NULL, NULL))
    return g_strdup("?");
  char **w = g_strsplit(text, " ", 4);
  char *out = g_strdup_printf("%s %s %s", w[0], w[1] ? w[1] : "",
                              w[1] && w[2] ? w[2] : "");
  g_strfreev(w);
  g_free(text);
  return out;
}

static GString *machine;

static void describe_machine(const char *data_dir) {
  machine = g_string_new(NULL);
  GDateTime *now = g_date_time_new_now_local();
  char *date = g_date_time_format(now, "%Y-%m-%d %H:%M:%S %Z");
  g_date_time_unref(now);
  struct utsname u;
  uname(&u);
  char *cpu = file_field("/proc/cpuinfo", "model name");
  char *mem = file_field("/proc/meminfo", "MemTotal");
  char *fs = filesystem_of(data_dir);
  char *java = g_strdup_printf("%s -version 2>&1", opt.java);
  char *java_version = first_line_of(java);
  char *py = g_strdup_printf(
      "%s -c 'import sys, kazoo.version as k; print(sys.version.split()[0], "
      "\"kazoo\", k.__version__)' 2>&1",
      opt.python);
  char *py_version = first_line_of(py);
  char *curator = first_line_of(
      "dpkg-query -W -f '${Version}' libcurator-recipes-java 2>/dev/null");
  char *zk = fetch_mntr(0);
  char *zk_version = NULL;
  if (zk) {
    char *p = strstr(zk, "zk_version\t");
    if (p) {
      p += strlen("zk_version\t");
      zk_version = g_strndup(p, strcspn(p, ",-\n"));
    }
  }
  g_free(zk);
  char *load = loadavg();
  g_string_append_printf(machine,
                         "date:       %s\n"
                         "machine:    %s, %ld CPUs, %s RAM, kernel %s\n"
                         "data dirs:  %s on %s\n"
                         "ensemble:   %s\n"
                         "ZooKeeper:  %s\n"
                         "Java:       %s; Curator: %s\n"
                         "Python:     %s\n"
                         "load avg:   %s at the start",
                         date, cpu, sysconf(_SC_NPROCESSORS_ONLN), mem,
                         u.release, data_dir, fs,
                         ensemble ? "local, 3 members, fsync on, "
                                    "tickTime 200 ms"
                                  : hosts,
                         zk_version ? zk_version : "?", java_version,
                         curator, py_version, load);
  g_free(date);
  g_free(cpu);
  g_free(mem);
  g_free(fs);
  g_free(java);
  g_free(java_version);
  g_free(py);
  g_free(py_version);
  g_free(curator);
  g_free(zk_version);
  g_free(load);
}

/* ---------------------------------------------------------------- setup */

static void cleanup(void) {
  static gboolean done;
  if (done)
    return;
  done = TRUE;
  while (live_procs && live_procs->len)
    proc_free(g_ptr_array_index(live_procs, 0));
  if (watch_zh) {
    zookeeper_close(watch_zh);
    watch_zh = NULL;
  }
  if (ensemble) {
    zkrc_ensemble_stop(ensemble);
    ensemble = NULL;
  }
  if (marker_dir) {
    /* Only markers left by violations can be in it. */
    GDir *d = g_dir_open(marker_dir, 0, NULL);
    const char *name;
    while (d && (name = g_dir_read_name(d)) != NULL) {
      char *f = g_build_filename(marker_dir, name, NULL);
      unlink(f);
      g_free(f);
    }
    if (d)
      g_dir_close(d);
    rmdir(marker_dir);
  }
}

static void start_ensemble(void) {
  zkrc_ensemble_options eo;
  zkrc_ensemble_options_init(&eo);
  eo.members = 3;
  eo.no_fsync = 0; /* real fsync: this is a measurement */
  eo.max_session_timeout_ms = MEASURE_SESSION_MS;
  /* ZooKeeper's own default: the harness's 100 ms would remove an idle
   * lock's container between two uncontended cycles. */
  eo.container_check_ms = 60000;
  eo.base_dir = opt.base_dir;
  progress("starting a local 3-member ensemble (fsync on)");
  if (zkrc_ensemble_start(&ensemble, &eo) != 0)
    fatal("could not start the ensemble");
  hosts = g_strdup(zkrc_ensemble_connect_string(ensemble));
  members = zkrc_ensemble_size(ensemble);
  for (int i = 0; i < members; i++)
    member_addr[i] = g_strdup(zkrc_ensemble_member_address(ensemble, i));
  progress("ensemble: %s", hosts);
}

static void use_hosts(const char *connect) {
  hosts = g_strdup(connect);
  char *list = g_strdup(connect);
  char *chroot = strchr(list, '/');
  if (chroot)
    *chroot = '\0';
  char **parts = g_strsplit(list, ",", -1);
  for (char **p = parts; *p && members < MAX_MEMBERS; p++)
    member_addr[members++] = g_strdup(*p);
  g_strfreev(parts);
  g_free(list);
  if (members == 0)
    fatal("no server in \"%s\"", connect);
}

/* A data directory's path, for the machine description. */
static char *data_dir_of_ensemble(void) {
  if (ensemble == NULL)
    return g_strdup("(external ensemble)");
  const char *base = opt.base_dir ? opt.base_dir : g_getenv("TMPDIR");
  return g_strdup(base ? base : "/tmp");
}

/* ------------------------------------------------------------------ main */

static void usage(FILE *out) {
  fprintf(out,
          "Usage: zkr-bench [OPTIONS]\n"
          "\n"
          "Measures zkrecipes' lock against the ensemble's limit, Apache "
          "Curator's\n"
          "InterProcessMutex, kazoo's Lock and a naive herd lock, on one "
          "ensemble,\n"
          "interleaved in rounds, and prints one table (medians; ratios are "
          "medians\n"
          "of per-round ratios) and whether the project's targets are met.\n"
          "\n"
          "  -s, --hosts HOSTS      use this ensemble instead of starting a "
          "local one\n"
          "                         (the herd needs mntr in "
          "4lw.commands.whitelist)\n"
          "  -d, --dir DIR          where the local ensemble's data goes "
          "(default $TMPDIR or /tmp)\n"
          "  -r, --rounds N         rounds of the throughput workloads "
          "(default %d)\n"
          "  -t, --seconds S        length of each throughput measurement "
          "(default %d)\n"
          "  -c, --contenders N     sessions in the contended workload "
          "(default %d)\n"
          "      --herd N           waiters in the herd workload (default "
          "%d)\n"
          "      --scale-waiters P,S,H  processes, sessions each, holds each "
          "(default %d,%d,%d)\n"
          "      --scale-locks N    locks held by one process (default %d)\n"
          "      --election-reps N  failovers and resignations measured "
          "(default %d)\n"
          "      --csv FILE         also write the results as CSV\n"
          "      --only LIST        run only these workloads: "
          "throughput,herd,scale,election\n"
          "      --no-curator, --no-kazoo   leave that implementation out\n"
          "      --quick            a short smoke run (1 round of 2 s, small "
          "sizes)\n"
          "      --worker PATH, --java PATH, --curator-classpath CP,\n"
          "      --python PATH, --kazoo-peer PATH   the participants' "
          "programs\n"
          "  -h, --help\n",
          opt.rounds, opt.seconds, opt.contenders, opt.herd_waiters,
          opt.scale_procs, opt.scale_sessions, opt.scale_holds,
          opt.scale_locks, opt.election_reps);
}

static int positive(const char *what, const char *s) {
  char *end;
  errno = 0;
  long n = strtol(s, &end, 10);
  if (errno || end == s || *end || n <= 0 || n > 1000000) {
    fprintf(stderr, "zkr-bench: bad %s: %s\n", what, s);
    exit(2);
  }
  return (int)n;
}

static void parse_only(const char *list) {
  opt.run_throughput = opt.run_herd = opt.run_scale = opt.run_election = FALSE;
  char **w = g_strsplit(list, ",", -1);
  for (char **p = w; *p; p++) {
    if (!strcmp(*p, "throughput"))
      opt.run_throughput = TRUE;
    else if (!strcmp(*p, "herd"))
      opt.run_herd = TRUE;
    else if (!strcmp(*p, "scale"))
      opt.run_scale = TRUE;
    else if (!strcmp(*p, "election"))
      opt.run_election = TRUE;
    else {
      fprintf(stderr, "zkr-bench: unknown workload %s\n", *p);
      exit(2);
    }
  }
  g_strfreev(w);
}

static void parse_options(int argc, char **argv) {
  enum {
    O_HERD = 256, O_SCALE_WAITERS, O_SCALE_LOCKS, O_ELECTION_REPS, O_CSV,
    O_ONLY, O_NO_CURATOR, O_NO_KAZOO, O_QUICK, O_WORKER, O_JAVA, O_CP,
    O_PYTHON, O_KAZOO_PEER
  };
  static const struct option longopts[] = {
      {"hosts", required_argument, NULL, 's'},
      {"dir", required_argument, NULL, 'd'},
      {"rounds", required_argument, NULL, 'r'},
      {"seconds", required_argument, NULL, 't'},
      {"contenders", required_argument, NULL, 'c'},
      {"herd", required_argument, NULL, O_HERD},
      {"scale-waiters", required_argument, NULL, O_SCALE_WAITERS},
      {"scale-locks", required_argument, NULL, O_SCALE_LOCKS},
      {"election-reps", required_argument, NULL, O_ELECTION_REPS},
      {"csv", required_argument, NULL, O_CSV},
      {"only", required_argument, NULL, O_ONLY},
      {"no-curator", no_argument, NULL, O_NO_CURATOR},
      {"no-kazoo", no_argument, NULL, O_NO_KAZOO},
      {"quick", no_argument, NULL, O_QUICK},
      {"worker", required_argument, NULL, O_WORKER},
      {"java", required_argument, NULL, O_JAVA},
      {"curator-classpath", required_argument, NULL, O_CP},
      {"python", required_argument, NULL, O_PYTHON},
      {"kazoo-peer", required_argument, NULL, O_KAZOO_PEER},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "s:d:r:t:c:h", longopts, NULL)) != -1) {
    switch (c) {
    case 's': opt.hosts = optarg; break;
    case 'd': opt.base_dir = optarg; break;
    case 'r': opt.rounds = positive("rounds", optarg); break;
    case 't': opt.seconds = positive("seconds", optarg); break;
    case 'c': opt.contenders = positive("contenders", optarg); break;
    case O_HERD: opt.herd_waiters = positive("herd", optarg); break;
    case O_SCALE_WAITERS:
      if (sscanf(optarg, "%d,%d,%d", &opt.scale_procs, &opt.scale_sessions,
                 &opt.scale_holds) != 3 ||
          opt.scale_procs <= 0 || opt.scale_sessions <= 0 ||
          opt.scale_holds <= 0) {
        fprintf(stderr, "zkr-bench: bad --scale-waiters: %s\n", optarg);
        exit(2);
      }
      break;
    case O_SCALE_LOCKS: opt.scale_locks = positive("scale-locks", optarg); break;
    case O_ELECTION_REPS:
      opt.election_reps = positive("election-reps", optarg);
      break;
    case O_CSV: opt.csv = optarg; break;
    case O_ONLY: parse_only(optarg); break;
    case O_NO_CURATOR: opt.with_curator = FALSE; break;
    case O_NO_KAZOO: opt.with_kazoo = FALSE; break;
    case O_QUICK:
      opt.rounds = 1;
      opt.seconds = 2;
      opt.herd_waiters = 10;
      opt.idle_ms = 500;
      opt.scale_procs = 2;
      opt.scale_sessions = 2;
      opt.scale_holds = 25;
      opt.scale_locks = 1000;
      opt.election_reps = 1;
      break;
    case O_WORKER: opt.worker = optarg; break;
    case O_JAVA: opt.java = optarg; break;
    case O_CP: opt.curator_cp = optarg; break;
    case O_PYTHON: opt.python = optarg; break;
    case O_KAZOO_PEER: opt.kazoo_peer = optarg; break;
    case 'h': usage(stdout); exit(0);
    default: usage(stderr); exit(2);
    }
  }
  if (optind != argc) {
    usage(stderr);
    exit(2);
  }
}

static void on_signal(int sig) {
  /* Children die with us (PR_SET_PDEATHSIG) and the harness's reaper
   * removes the ensemble: nothing to do but go. */
  signal(sig, SIG_DFL);
  raise(sig);
}

int main(int argc, char **argv) {
  run_start_ns = now_ns();
  parse_options(argc, argv);
  signal(SIGPIPE, SIG_IGN);
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  live_procs = g_ptr_array_new();
  metrics = g_ptr_array_new();

  char tmpl[] = "/tmp/zkr-bench-XXXXXX";
  if (mkdtemp(tmpl) == NULL)
    fatal("mkdtemp: %s", strerror(errno));
  marker_dir = g_strdup(tmpl);

  if (opt.hosts)
    use_hosts(opt.hosts);
  else
    start_ensemble();
  root = g_strdup_printf("/zkr-bench/%d-%" PRId64, (int)getpid(),
                         (int64_t)time(NULL));
  char *data_dir = data_dir_of_ensemble();
  describe_machine(data_dir);
  g_free(data_dir);

  if (opt.run_throughput)
    run_throughput();
  if (opt.run_herd)
    run_herd();
  if (opt.run_scale) {
    scale_waiters();
    scale_locks();
  }
  if (opt.run_election)
    run_election();

  char *load = loadavg();
  g_string_append_printf(machine, ", %s at the end (2 cores: > 2 means "
                                  "others were running too)",
                         load);
  g_free(load);
  double total = (double)(now_ns() - run_start_ns) / 1e9;
  evaluate_targets();
  cleanup();

  printf("zkr-bench: %d round(s), %d s per throughput measurement, %d "
         "contenders, %d herd waiters; whole run %.0f s\n%s\n\n",
         opt.rounds, opt.seconds, opt.contenders, opt.herd_waiters, total,
         machine->str);
  print_table(stdout);
  printf("\n");
  print_targets(stdout);
  printf(
      "\nHow to read it (bench/RESULTS.md has more):\n"
      "- RATIO: median of the per-round ratios to the named implementation. "
      "Rounds alternate\n  the order (forward, backward); 'rounds' lists "
      "each round's value.  Latencies in ms.\n"
      "- limit: the plain ZooKeeper C client, one session: create an "
      "ephemeral sequential node,\n  wait, delete it, wait (host "
      "re-resolution off: zoo_set_servers_resolution_delay -1).\n"
      "- contended: %d sessions loop acquire/release on one lock; zkrecipes "
      "and naive run one\n  process per session, Curator and kazoo one "
      "process with %d clients (one thread each).\n  handoff = from the "
      "holder's release call to the next holder's return from acquire;\n"
      "  split into the release's delete (until the servers confirm it) and "
      "what follows.\n"
      "  violations = marker file found (O_EXCL) + holds overlapping in time "
      "(CLOCK_MONOTONIC).\n"
      "- requests/notifications: the servers' own mntr counters summed over "
      "the members:\n  zk_packets_received minus this program's mntr "
      "packets; notifications =\n  zk_sum_node_{deleted,changed,children,"
      "created}_watch_count.\n"
      "- herd: %d waiters queue behind a holder, then each release waits "
      "until the servers show\n  the queue settled.  Requests per "
      "acquisition = all requests from each waiter's create\n  to its "
      "delete (plus the first holder's delete), minus pings measured in an "
      "idle\n  window, divided by %d.\n",
      opt.contenders, opt.contenders, opt.herd_waiters, opt.herd_waiters);
  if (opt.csv)
    write_csv(opt.csv);
  return 0;
}
