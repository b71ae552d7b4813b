/*
 * zkr-lease - measures the session lease (issue 12): what it costs an idle
 * session, and how much earlier than the servers a partitioned holder
 * learns that it lost its lock.  It measures and prints; it is not a test.
 *
 *   zkr-lease [--idle-rounds N] [--idle-seconds S] [--sessions K]
 *             [--partitions N] [--cli-partitions N] [--load N]
 *             [--allowance MS]
 *
 * 1. Idle cost.  K idle zkrecipes sessions, then K plain ZooKeeper handles
 *    (the C client's own pings alone), then again, for N rounds of S
 *    seconds each: client packets per second per session from the
 *    members' mntr (zk_packets_received).  Also with 100 locks held per
 *    session, which must cost nothing more.
 * 2. Library partitions.  A holder connected through one member's fault
 *    proxy holds a lock; a successor connected straight to the members
 *    waits; the proxy is black-holed.  Margin: from the holder's LOST event
 *    to the successor's acquisition (it must be positive), and the lease's
 *    own measure of how late LOST reached the executor after the lease's
 *    deadline (zkrc_session_stats.loss_delivery), against its allowance
 *    (--allowance, zkrc_session_options.lease_allowance_ms; default the
 *    library's).  --load N runs N busy loops meanwhile, as a loaded
 *    machine.
 * 3. zkr-lock partitions.  The same with two zkr-lock processes (session
 *    timeout 4000 ms): margin from the death of the holder's command (its
 *    pipe's end closed) to the start of the successor's command.
 *
 * A local 3-member ensemble with proxies (libzkrecipes-testing, tick
 * 200 ms, real fsync); loopback only; every process it starts is stopped.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "zkrecipes.h"
#include "zkrecipes/testing.h"

#define TICK_MS 200
#define LIB_TIMEOUT_MS 2000
#define CLI_TIMEOUT_MS 4000

static struct {
  int idle_rounds, idle_seconds, sessions, partitions, cli_partitions;
  int load, allowance_ms;
} opt = {3, 20, 20, 60, 20, 0, 0};

static zkrc_ensemble *ensemble;

static int64_t now_us(void) { return g_get_monotonic_time(); }

static void silent_log(const char *message) { (void)message; }

static void fatal(const char *what) {
  fprintf(stderr, "zkr-lease: %s\n", what);
  zkrc_ensemble_stop(ensemble);
  exit(1);
}

static int compare_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* "n, min, median, max" of @p v in ms. */
static void summary(const char *what, GArray *v) {
  if (v->len == 0) {
    printf("%-44s no samples\n", what);
    return;
  }
  g_array_sort(v, compare_i64);
  int64_t *x = (int64_t *)v->data;
  printf("%-44s n=%u  min %.0f  median %.0f  max %.0f ms\n", what, v->len,
         x[0] / 1000.0, x[v->len / 2] / 1000.0, x[v->len - 1] / 1000.0);
}

/* ------------------------------------------------------------ idle cost */

static int64_t packets(void) {
  return zkrc_ensemble_mntr_sum(ensemble, "zk_packets_received");
}

static zkrc_session *lib_session(const char *hosts, int timeout_ms) {
  zkrc_session_options o;
  zkrc_session_options_init(&o);
  o.session_timeout_ms = timeout_ms;
  o.server_tick_ms = TICK_MS;
  o.lease_allowance_ms = opt.allowance_ms;
  zkrc_session *s = NULL;
  if (zkrc_session_connect(&s, hosts, &o) != ZKRC_OK)
    fatal("cannot connect a session");
  return s;
}

static void raw_watcher(zhandle_t *zh, int type, int state, const char *path,
                        void *ctx) {}

/* Client packets per second per session over @p seconds, with @p k
 * sessions of one kind open (@p locks held by each zkrecipes session). */
static double idle_rate(gboolean library, int timeout_ms, int locks) {
  const char *hosts = zkrc_ensemble_direct_connect_string(ensemble);
  int k = opt.sessions;
  zkrc_session **s = g_new0(zkrc_session *, k);
  zhandle_t **zh = g_new0(zhandle_t *, k);
  GPtrArray *held = g_ptr_array_new();
  for (int i = 0; i < k; i++) {
    if (library) {
      s[i] = lib_session(hosts, timeout_ms);
      for (int j = 0; j < locks; j++) {
        char path[96];
        snprintf(path, sizeof path, "/zkr-lease/idle/s%d-l%d", i, j);
        zkrc_lock *lk = NULL;
        if (zkrc_lock_new(&lk, s[i], path, NULL) != ZKRC_OK ||
            zkrc_lock_acquire(lk, 10000) != ZKRC_OK)
          fatal("cannot take the locks");
        g_ptr_array_add(held, lk);
      }
    } else {
      zh[i] = zookeeper_init2(hosts, raw_watcher, timeout_ms, NULL, NULL, 0,
                              silent_log);
      if (zh[i] == NULL)
        fatal("zookeeper_init");
    }
  }
  g_usleep(2 * G_USEC_PER_SEC); /* settle: connected, locks taken */
  int64_t p0 = packets(), t0 = now_us();
  g_usleep((gulong)opt.idle_seconds * G_USEC_PER_SEC); /* the window */
  int64_t p1 = packets(), t1 = now_us();
  for (guint i = 0; i < held->len; i++) {
    zkrc_lock_release(held->pdata[i]);
    zkrc_lock_free(held->pdata[i]);
  }
  g_ptr_array_free(held, TRUE);
  for (int i = 0; i < k; i++) {
    if (s[i])
      zkrc_session_close(s[i]);
    if (zh[i])
      zookeeper_close(zh[i]);
  }
  g_free(s);
  g_free(zh);
  return (double)(p1 - p0) / ((t1 - t0) / 1e6) / k;
}

static void measure_idle(void) {
  static const int timeouts[] = {CLI_TIMEOUT_MS, 10000};
  for (size_t t = 0; t < G_N_ELEMENTS(timeouts); t++) {
    /* Not over the servers' maximum (20 ticks): ask what they grant. */
    int timeout = MIN(timeouts[t], 20 * TICK_MS);
    if (t > 0 && timeout == timeouts[t - 1])
      continue;
    GArray *raw = g_array_new(FALSE, FALSE, sizeof(double));
    GArray *lib = g_array_new(FALSE, FALSE, sizeof(double));
    GArray *lib_locks = g_array_new(FALSE, FALSE, sizeof(double));
    for (int r = 0; r < opt.idle_rounds; r++) {
      double a = idle_rate(FALSE, timeout, 0);
      double b = idle_rate(TRUE, timeout, 0);
      double c = idle_rate(TRUE, timeout, 100);
      g_array_append_val(raw, a);
      g_array_append_val(lib, b);
      g_array_append_val(lib_locks, c);
      printf("  idle round %d (timeout %d ms, %d sessions): C client alone "
             "%.3f, zkrecipes %.3f, zkrecipes with 100 held locks %.3f "
             "packets/s per session\n",
             r + 1, timeout, opt.sessions, a, b, c);
      fflush(stdout);
    }
    double sa = 0, sb = 0, sc = 0;
    for (guint i = 0; i < raw->len; i++) {
      sa += g_array_index(raw, double, i);
      sb += g_array_index(lib, double, i);
      sc += g_array_index(lib_locks, double, i);
    }
    printf("idle cost, timeout %d ms: C client %.3f/s, zkrecipes %.3f/s "
           "(%.2fx), with 100 locks %.3f/s per session\n",
           timeout, sa / raw->len, sb / lib->len, sb / sa, sc / lib->len);
    g_array_free(raw, TRUE);
    g_array_free(lib, TRUE);
    g_array_free(lib_locks, TRUE);
  }
}

/* --------------------------------------------------- library partitions */

typedef struct told {
  GMutex mu;
  GCond cond;
  int64_t lost_at;     /* the holder's LOST event */
  int64_t acquired_at; /* the successor's acquisition */
} told;

static void on_lock_event(zkrc_lock *lk, const zkrc_lock_event *info,
                          void *arg) {
  told *t = arg;
  if (info->type != ZKRC_LOCK_LOST)
    return;
  g_mutex_lock(&t->mu);
  if (t->lost_at == 0)
    t->lost_at = now_us();
  g_cond_broadcast(&t->cond);
  g_mutex_unlock(&t->mu);
}

static void on_acquired(zkrc_lock *lk, zkrc_lock_hold *hold,
                        const zkrc_lock_acquired_info *info, void *arg) {
  int status = info->status;
  told *t = arg;
  g_mutex_lock(&t->mu);
  t->acquired_at = status == ZKRC_OK ? now_us() : -1;
  g_cond_broadcast(&t->cond);
  g_mutex_unlock(&t->mu);
  if (status == ZKRC_OK)
    zkrc_lock_hold_release(hold);
}

static gboolean wait_both(told *t, int timeout_ms) {
  int64_t deadline = now_us() + (int64_t)timeout_ms * 1000;
  g_mutex_lock(&t->mu);
  while ((t->lost_at == 0 || t->acquired_at == 0) &&
         g_cond_wait_until(&t->cond, &t->mu, deadline))
    ;
  gboolean both = t->lost_at > 0 && t->acquired_at > 0;
  g_mutex_unlock(&t->mu);
  return both;
}

static int lock_nodes(zkrc_session *s, const char *path) {
  zkrc_participant *list = NULL;
  size_t n = 0;
  if (zkrc_lock_list(s, path, &list, &n, 5000) != ZKRC_OK)
    return -1;
  zkrc_participants_free(list, n);
  return (int)n;
}

/* Wait until @p path's queue has @p n contenders. */
static gboolean wait_nodes(zkrc_session *s, const char *path, int n,
                           int timeout_ms) {
  int64_t deadline = now_us() + (int64_t)timeout_ms * 1000;
  while (lock_nodes(s, path) != n) {
    if (now_us() > deadline)
      return FALSE;
    g_usleep(10 * 1000); /* polling the servers' state, no event for it */
  }
  return TRUE;
}

/* @p n processes that only spin, as other work on a loaded machine; they
 * die with us. */
static GArray *start_load(int n) {
  GArray *pids = g_array_new(FALSE, FALSE, sizeof(pid_t));
  for (int i = 0; i < n; i++) {
    pid_t pid = fork();
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      for (volatile unsigned long x = 0;; x++)
        ;
    }
    if (pid > 0)
      g_array_append_val(pids, pid);
  }
  return pids;
}

static void stop_load(GArray *pids) {
  for (guint i = 0; i < pids->len; i++)
    kill(g_array_index(pids, pid_t, i), SIGKILL);
  for (guint i = 0; i < pids->len; i++)
    waitpid(g_array_index(pids, pid_t, i), NULL, 0);
  g_array_free(pids, TRUE);
}

/* The session's own measure of its one loss: microseconds from the
 * lease's deadline to LOST on the executor (-1: not measured within a
 * second), and whether it counted it late. */
static int64_t loss_delivery(zkrc_session *s, gboolean *late) {
  zkrc_session_stats st;
  int64_t deadline = now_us() + 1000 * 1000;
  do {
    (void)zkrc_session_get_stats(s, &st, sizeof st);
    if (st.loss_delivery.count == 1) {
      *late = st.late_losses > 0;
      return (int64_t)(st.loss_delivery.sum_seconds * 1e6);
    }
    g_usleep(1000); /* the probe runs on the executor, after the lock's */
  } while (now_us() < deadline);
  return -1;
}

static void measure_library_partitions(void) {
  GArray *load = start_load(opt.load);
  GArray *delivery = g_array_new(FALSE, FALSE, sizeof(int64_t));
  int late = 0;
  GArray *margins = g_array_new(FALSE, FALSE, sizeof(int64_t));
  GArray *noticed = g_array_new(FALSE, FALSE, sizeof(int64_t));
  GArray *left_at_cut = g_array_new(FALSE, FALSE, sizeof(int));
  int overlaps = 0;
  zkrc_session *succ_s = lib_session(
      zkrc_ensemble_direct_connect_string(ensemble), LIB_TIMEOUT_MS);
  for (int i = 0; i < opt.partitions; i++) {
    int proxy = i % zkrc_ensemble_size(ensemble);
    char path[64];
    snprintf(path, sizeof path, "/zkr-lease/lib/p%d", i);
    told t = {.lost_at = 0};
    g_mutex_init(&t.mu);
    g_cond_init(&t.cond);
    zkrc_session *hold_s = lib_session(
        zkrc_ensemble_member_address(ensemble, proxy), LIB_TIMEOUT_MS);
    /* A holder whose session is older than its first lease (the one from
     * its creation), as a daemon's is: the lease under test is one the
     * renewals made. */
    g_usleep((gulong)LIB_TIMEOUT_MS * 1000);
    zkrc_lock_options o;
    zkrc_lock_options_init(&o);
    o.on_event = on_lock_event;
    o.event_arg = &t;
    zkrc_lock *holder = NULL, *succ = NULL;
    if (zkrc_lock_new(&holder, hold_s, path, &o) != ZKRC_OK ||
        zkrc_lock_acquire(holder, 10000) != ZKRC_OK ||
        zkrc_lock_new(&succ, succ_s, path, NULL) != ZKRC_OK ||
        zkrc_lock_acquire_async(succ, 30000, on_acquired, &t, NULL) !=
            ZKRC_OK ||
        !wait_nodes(succ_s, path, 2, 10000))
      fatal("cannot set up a library partition");
    /* Vary where in the renewal cycle the cut falls. */
    g_usleep(g_random_int_range(0, 600) * 1000);
    int left = zkrc_session_lease_remaining(hold_s);
    int64_t cut = now_us();
    zkrc_proxy_blackhole(ensemble, proxy, 4 * LIB_TIMEOUT_MS);
    g_array_append_val(left_at_cut, left);
    if (!wait_both(&t, 20000))
      fatal("a library partition did not end in time");
    int64_t margin = t.acquired_at - t.lost_at;
    g_array_append_val(margins, margin);
    int64_t after_cut = t.lost_at - cut;
    g_array_append_val(noticed, after_cut);
    overlaps += margin <= 0;
    gboolean was_late = FALSE;
    int64_t delivered = loss_delivery(hold_s, &was_late);
    if (delivered >= 0)
      g_array_append_val(delivery, delivered);
    late += was_late;
    zkrc_proxy_blackhole(ensemble, proxy, 0);
    zkrc_lock_free(holder);
    zkrc_lock_free(succ);
    zkrc_session_close(hold_s);
    g_mutex_clear(&t.mu);
    g_cond_clear(&t.cond);
    if ((i + 1) % 10 == 0) {
      printf("  %d library partitions done\n", i + 1);
      fflush(stdout);
    }
  }
  zkrc_session_close(succ_s);
  stop_load(load);
  char allowance[32] = "default";
  if (opt.allowance_ms)
    snprintf(allowance, sizeof allowance, "%d ms", opt.allowance_ms);
  printf("library holder, session timeout %d ms, tick %d ms, allowance %s, "
         "%d busy loops:\n",
         LIB_TIMEOUT_MS, TICK_MS, allowance, opt.load);
  int lo = INT_MAX, hi = 0;
  for (guint i = 0; i < left_at_cut->len; i++) {
    lo = MIN(lo, g_array_index(left_at_cut, int, i));
    hi = MAX(hi, g_array_index(left_at_cut, int, i));
  }
  printf("  lease left at the cut: %d..%d ms\n", lo, hi);
  summary("  cut -> holder told LOST", noticed);
  summary("  holder told LOST -> successor holds", margins);
  printf("  successor held before the holder was told: %d of %u\n", overlaps,
         margins->len);
  summary("  lease deadline -> LOST on the executor", delivery);
  printf("  of those, later than the allowance: %d\n", late);
  g_array_free(delivery, TRUE);
  g_array_free(margins, TRUE);
  g_array_free(noticed, TRUE);
  g_array_free(left_at_cut, TRUE);
}

/* --------------------------------------------------- zkr-lock partitions */

/* Start @p argv (it dies with us); its stdout is ours. */
static zkrc_child spawn(char *const argv[]) {
  zkrc_child c;
  if (zkrc_spawn(&c, argv, NULL) != 0)
    fatal("cannot start zkr-lock");
  return c;
}

/* Read @p fd until EOF (or @p want bytes), at most @p timeout_ms; the
 * monotonic time it happened, or 0. */
static int64_t wait_fd(int fd, gboolean eof, int timeout_ms) {
  int64_t deadline = now_us() + (int64_t)timeout_ms * 1000;
  for (;;) {
    int left = (int)((deadline - now_us()) / 1000);
    if (left <= 0)
      return 0;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, left) <= 0)
      continue;
    char buf[64];
    ssize_t r = read(fd, buf, sizeof buf);
    if (r == 0 && eof)
      return now_us();
    if (r > 0 && !eof)
      return now_us();
    if (r < 0 && errno != EAGAIN && errno != EINTR)
      return 0;
  }
}

static void measure_cli_partitions(void) {
  GArray *margins = g_array_new(FALSE, FALSE, sizeof(int64_t));
  int overlaps = 0, lost_status = 0;
  char *dir = g_dir_make_tmp("zkr-lease-XXXXXX", NULL);
  char *held_fifo = g_build_filename(dir, "holder", NULL);
  char *succ_fifo = g_build_filename(dir, "successor", NULL);
  if (mkfifo(held_fifo, 0600) != 0 || mkfifo(succ_fifo, 0600) != 0)
    fatal("mkfifo");
  char timeout[16], tick[16];
  snprintf(timeout, sizeof timeout, "%d", CLI_TIMEOUT_MS);
  snprintf(tick, sizeof tick, "%d", TICK_MS);
  /* The holder's command says it runs, then keeps the fifo open until it
   * dies; the successor's command writes a line as it starts. */
  char *held_cmd =
      g_strdup_printf("exec 3>%s; echo up >&3; exec sleep 1000", held_fifo);
  char *succ_cmd = g_strdup_printf("echo go >%s; exec sleep 1000", succ_fifo);
  zkrc_session *probe =
      lib_session(zkrc_ensemble_direct_connect_string(ensemble), 4000);
  for (int i = 0; i < opt.cli_partitions; i++) {
    int proxy = i % zkrc_ensemble_size(ensemble);
    char path[64];
    snprintf(path, sizeof path, "/zkr-lease/cli/p%d", i);
    int hfd = open(held_fifo, O_RDONLY | O_NONBLOCK);
    int sfd = open(succ_fifo, O_RDONLY | O_NONBLOCK);
    char *holder_argv[] = {
        ZKR_LOCK,
        "--servers",
        (char *)zkrc_ensemble_member_address(ensemble, proxy),
        "-t",
        timeout,
        "--server-tick",
        tick,
        "-g",
        "1",
        path,
        "--",
        "/bin/sh",
        "-c",
        held_cmd,
        NULL};
    zkrc_child holder = spawn(holder_argv);
    if (wait_fd(hfd, FALSE, 20000) == 0) /* "up": it runs, holding */
      fatal("zkr-lock partition: the holder's command did not start");
    char *succ_argv[] = {ZKR_LOCK,
                         "--servers",
                         (char *)zkrc_ensemble_direct_connect_string(ensemble),
                         "-t",
                         timeout,
                         "--server-tick",
                         tick,
                         "-w",
                         "60",
                         path,
                         "--",
                         "/bin/sh",
                         "-c",
                         succ_cmd,
                         NULL};
    zkrc_child succ = spawn(succ_argv);
    if (!wait_nodes(probe, path, 2, 20000))
      fatal("zkr-lock partition: no successor queued");
    g_usleep(g_random_int_range(0, 1200) * 1000); /* vary the cut */
    zkrc_proxy_blackhole(ensemble, proxy, 4 * CLI_TIMEOUT_MS);
    int64_t dead_at = wait_fd(hfd, TRUE, 30000);
    int64_t started_at = wait_fd(sfd, FALSE, 30000);
    if (dead_at == 0 || started_at == 0)
      fatal("a zkr-lock partition did not end in time");
    int64_t margin = started_at - dead_at;
    g_array_append_val(margins, margin);
    overlaps += margin <= 0;
    lost_status += zkrc_child_wait(&holder, 20000) == 75;
    kill(succ.pid, SIGTERM);
    zkrc_child_wait(&succ, 20000);
    zkrc_proxy_blackhole(ensemble, proxy, 0);
    close(hfd);
    close(sfd);
    if ((i + 1) % 5 == 0) {
      printf("  %d zkr-lock partitions done\n", i + 1);
      fflush(stdout);
    }
  }
  zkrc_session_close(probe);
  printf("zkr-lock holder, -t %d, --server-tick %d, -g 1:\n", CLI_TIMEOUT_MS,
         TICK_MS);
  summary("  holder's command dead -> successor's starts", margins);
  printf("  successor's command started before the holder's was dead: %d "
         "of %u; holder exited 75: %d\n",
         overlaps, margins->len, lost_status);
  g_unlink(held_fifo);
  g_unlink(succ_fifo);
  g_rmdir(dir);
  g_free(held_cmd);
  g_free(succ_cmd);
  g_free(held_fifo);
  g_free(succ_fifo);
  g_free(dir);
  g_array_free(margins, TRUE);
}

/* ----------------------------------------------------------------- main */

static void usage(int status) {
  printf("Usage: zkr-lease [--idle-rounds N] [--idle-seconds S] "
         "[--sessions K]\n"
         "                 [--partitions N] [--cli-partitions N] [--load N]\n"
         "                 [--allowance MS]\n"
         "Measures the session lease on a local 3-member ensemble: the idle\n"
         "cost of the renewals, and the margins of partitioned holders.\n"
         "A count of 0 skips that part.\n");
  exit(status);
}

static void parse(int argc, char **argv) {
  static const struct option longopts[] = {
      {"idle-rounds", required_argument, NULL, 'r'},
      {"idle-seconds", required_argument, NULL, 'S'},
      {"sessions", required_argument, NULL, 'k'},
      {"partitions", required_argument, NULL, 'p'},
      {"cli-partitions", required_argument, NULL, 'c'},
      {"load", required_argument, NULL, 'l'},
      {"allowance", required_argument, NULL, 'a'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    int v = optarg ? atoi(optarg) : 0;
    switch (c) {
    case 'r':
      opt.idle_rounds = v;
      break;
    case 'S':
      opt.idle_seconds = MAX(v, 1);
      break;
    case 'k':
      opt.sessions = MAX(v, 1);
      break;
    case 'p':
      opt.partitions = v;
      break;
    case 'c':
      opt.cli_partitions = v;
      break;
    case 'l':
      opt.load = MAX(v, 0);
      break;
    case 'a':
      opt.allowance_ms = MAX(v, 0);
      break;
    case 'h':
      usage(0);
      break;
    default:
      usage(2);
    }
  }
}

int main(int argc, char **argv) {
  parse(argc, argv);
  signal(SIGPIPE, SIG_IGN);
  zkrc_log_from_env(); /* quiet unless ZKR_LOG says otherwise */
  zkrc_ensemble_options eo;
  zkrc_ensemble_options_init(&eo);
  eo.members = 3;
  eo.tick_ms = TICK_MS;
  eo.with_proxies = 1;
  if (zkrc_ensemble_start(&ensemble, &eo) != 0)
    fatal("the ensemble did not start");
  printf("zkr-lease: 3 members (tick %d ms, real fsync), %s\n", TICK_MS,
         zkrc_version());
  fflush(stdout);
  if (opt.idle_rounds > 0)
    measure_idle();
  if (opt.partitions > 0)
    measure_library_partitions();
  if (opt.cli_partitions > 0)
    measure_cli_partitions();
  zkrc_ensemble_stop(ensemble);
  return 0;
}
