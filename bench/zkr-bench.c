/*
 * zkr-bench: zkrecipes' lock against the ensemble's own limit, Apache
 * Curator's InterProcessMutex, kazoo's Lock and a naive "herd" lock (and
 * the read-write lock and the semaphore against Curator's), on the same
 * ensemble and the same workloads, in one run.  This file: the
 * options, setting up the ensemble and main; bench.h says how it measures
 * and what the other parts are.  See --help, and bench/RESULTS.md.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <getopt.h>

#include "bench.h"

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

/* ------------------------------------------------------------- options */

options opt = {
    .rounds = 6,
    .seconds = 4,
    .contenders = 8,
    .herd_waiters = 100,
    .idle_ms = 3000,
    .scale_procs = 4,
    .scale_sessions = 5,
    .scale_holds = 500,
    .scale_join_rate = 100,
    .scale_locks = 100000,
    .scale_threads = {8, 300, 2000},
    .scale_rounds = 3,
    .scale_nudge = TRUE,
    .election_reps = 5,
    .election_session_ms = 2000,
    .cache_changes = 100,
    .with_curator = TRUE,
    .with_kazoo = TRUE,
    .run_throughput = TRUE,
    .run_herd = TRUE,
    .run_scale = TRUE,
    .run_election = TRUE,
    .run_family = TRUE,
    .run_cache = TRUE,
    .run_partition = TRUE,
    .run_idle = TRUE,
    .worker = BENCH_WORKER,
    .java = JAVA_PROG,
    .curator_cp = CURATOR_PEER_CLASSPATH,
    .python = DEBIAN_PYTHON3,
    .kazoo_peer = KAZOO_PEER,
};

/* --------------------------------------------------------------- state */

zkrc_ensemble *ensemble; /* NULL with -s */
char *hosts;             /* connect string of the measured ensemble */
char *member_addr[MAX_MEMBERS];
int members;
char *root;       /* znode under which this run works */
char *marker_dir; /* temporary directory of the marker files */
int64_t run_start_ns;

/* ---------------------------------------------------------------- setup */

void cleanup(void) {
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
  /* The scale section holds 100,000 locks twice in a row: up to 300,000
   * nodes with the empty directories the first run left. */
  eo.heap_mb = 1024;
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
          "InterProcessMutex, kazoo's Lock and a naive herd lock, and its "
          "read-write lock,\n"
          "semaphore and caches against Curator's, on one ensemble,\n"
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
          "      --scale-waiters P,S,H[,R]  processes, sessions each, holds "
          "each,\n"
          "                         joining a second (default %d,%d,%d,%d)\n"
          "      --scale-locks N    locks held by one process (default %d)\n"
          "      --scale-threads A,B,C  threads on one lock object, few to "
          "many\n"
          "                         (default 8,300,2000)\n"
          "      --scale-rounds N   rounds of the threads workload (default "
          "%d)\n"
          "      --no-nudge         do not keep the members awake during the "
          "threads\n"
          "                         workload (ZooKeeper 3.8.0's "
          "ZOOKEEPER-4537)\n"
          "      --election-reps N  failovers and resignations measured "
          "(default %d)\n"
          "      --cache-changes N  changes measured per cache and round "
          "(default %d)\n"
          "      --csv FILE         also write the results as CSV\n"
          "      --only LIST        run only these workloads: "
          "throughput,herd,scale,election,\n"
          "                         family (read-write lock, semaphore), "
          "cache (node and\n"
          "                         tree caches), partition (set "
          "partitioner),\n"
          "                         idle (what staying alive costs)\n"
          "      --no-curator, --no-kazoo   leave that implementation out\n"
          "      --quick            a short smoke run (1 round of 2 s, small "
          "sizes)\n"
          "      --worker PATH, --java PATH, --curator-classpath CP,\n"
          "      --python PATH, --kazoo-peer PATH   the participants' "
          "programs\n"
          "  -h, --help\n",
          opt.rounds, opt.seconds, opt.contenders, opt.herd_waiters,
          opt.scale_procs, opt.scale_sessions, opt.scale_holds,
          opt.scale_join_rate, opt.scale_locks, opt.scale_rounds,
          opt.election_reps, opt.cache_changes);
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
  opt.run_throughput = opt.run_herd = opt.run_scale = opt.run_election =
      opt.run_family = opt.run_cache = opt.run_partition = opt.run_idle = FALSE;
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
    else if (!strcmp(*p, "family"))
      opt.run_family = TRUE;
    else if (!strcmp(*p, "cache"))
      opt.run_cache = TRUE;
    else if (!strcmp(*p, "partition"))
      opt.run_partition = TRUE;
    else if (!strcmp(*p, "idle"))
      opt.run_idle = TRUE;
    else {
      fprintf(stderr, "zkr-bench: unknown workload %s\n", *p);
      exit(2);
    }
  }
  g_strfreev(w);
}

static void parse_options(int argc, char **argv) {
  enum {
    O_HERD = 256,
    O_SCALE_WAITERS,
    O_SCALE_LOCKS,
    O_SCALE_THREADS,
    O_SCALE_ROUNDS,
    O_NO_NUDGE,
    O_ELECTION_REPS,
    O_CACHE_CHANGES,
    O_CSV,
    O_ONLY,
    O_NO_CURATOR,
    O_NO_KAZOO,
    O_QUICK,
    O_WORKER,
    O_JAVA,
    O_CP,
    O_PYTHON,
    O_KAZOO_PEER
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
      {"scale-threads", required_argument, NULL, O_SCALE_THREADS},
      {"scale-rounds", required_argument, NULL, O_SCALE_ROUNDS},
      {"no-nudge", no_argument, NULL, O_NO_NUDGE},
      {"election-reps", required_argument, NULL, O_ELECTION_REPS},
      {"cache-changes", required_argument, NULL, O_CACHE_CHANGES},
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
    case 's':
      opt.hosts = optarg;
      break;
    case 'd':
      opt.base_dir = optarg;
      break;
    case 'r':
      opt.rounds = positive("rounds", optarg);
      break;
    case 't':
      opt.seconds = positive("seconds", optarg);
      break;
    case 'c':
      opt.contenders = positive("contenders", optarg);
      break;
    case O_HERD:
      opt.herd_waiters = positive("herd", optarg);
      break;
    case O_SCALE_WAITERS:
      if (sscanf(optarg, "%d,%d,%d,%d", &opt.scale_procs, &opt.scale_sessions,
                 &opt.scale_holds, &opt.scale_join_rate) < 3 ||
          opt.scale_procs <= 0 || opt.scale_sessions <= 0 ||
          opt.scale_holds <= 0 || opt.scale_join_rate <= 0) {
        fprintf(stderr, "zkr-bench: bad --scale-waiters: %s\n", optarg);
        exit(2);
      }
      break;
    case O_SCALE_LOCKS:
      opt.scale_locks = positive("scale-locks", optarg);
      break;
    case O_SCALE_THREADS:
      if (sscanf(optarg, "%d,%d,%d", &opt.scale_threads[0],
                 &opt.scale_threads[1], &opt.scale_threads[2]) != 3 ||
          opt.scale_threads[0] <= 0 || opt.scale_threads[1] <= 0 ||
          opt.scale_threads[2] <= 0) {
        fprintf(stderr, "zkr-bench: bad --scale-threads: %s\n", optarg);
        exit(2);
      }
      break;
    case O_SCALE_ROUNDS:
      opt.scale_rounds = positive("scale-rounds", optarg);
      break;
    case O_NO_NUDGE:
      opt.scale_nudge = FALSE;
      break;
    case O_ELECTION_REPS:
      opt.election_reps = positive("election-reps", optarg);
      break;
    case O_CACHE_CHANGES:
      opt.cache_changes = positive("cache-changes", optarg);
      break;
    case O_CSV:
      opt.csv = optarg;
      break;
    case O_ONLY:
      parse_only(optarg);
      break;
    case O_NO_CURATOR:
      opt.with_curator = FALSE;
      break;
    case O_NO_KAZOO:
      opt.with_kazoo = FALSE;
      break;
    case O_QUICK:
      opt.rounds = 1;
      opt.seconds = 2;
      opt.herd_waiters = 10;
      opt.idle_ms = 500;
      opt.scale_procs = 2;
      opt.scale_sessions = 2;
      opt.scale_holds = 25;
      opt.scale_locks = 1000;
      opt.scale_threads[1] = 50;
      opt.scale_threads[2] = 200;
      opt.scale_rounds = 1;
      opt.election_reps = 1;
      opt.cache_changes = 30;
      break;
    case O_WORKER:
      opt.worker = optarg;
      break;
    case O_JAVA:
      opt.java = optarg;
      break;
    case O_CP:
      opt.curator_cp = optarg;
      break;
    case O_PYTHON:
      opt.python = optarg;
      break;
    case O_KAZOO_PEER:
      opt.kazoo_peer = optarg;
      break;
    case 'h':
      usage(stdout);
      exit(0);
    default:
      usage(stderr);
      exit(2);
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
    scale_threads();
    scale_locks();
  }
  if (opt.run_election)
    run_election();
  if (opt.run_family)
    run_family();
  if (opt.run_cache)
    run_cache();
  if (opt.run_partition)
    run_partition();
  if (opt.run_idle)
    run_idle();

  char *load = loadavg();
  g_string_append_printf(machine,
                         ", %s at the end (2 cores: > 2 means "
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
      "  violations = holds overlapping in time (CLOCK_MONOTONIC; the tests' "
      "checker,\n  tests/holds.h) + Curator's and kazoo's own marker file "
      "found (O_EXCL).\n"
      "- two-party: the same with 2 sessions (the hand-over to a direct "
      "successor, which\n  holds on its predecessor's deletion without "
      "listing the directory again).\n"
      "- requests/notifications: the servers' own mntr counters summed over "
      "the members:\n  zk_packets_received minus this program's mntr "
      "packets; notifications =\n  zk_sum_node_{deleted,changed,children,"
      "created}_watch_count.\n"
      "- herd: %d waiters queue behind a holder, then each release waits "
      "until the servers show\n  the queue settled.  Requests per "
      "acquisition = all client packets from each waiter's create\n  to its "
      "delete (plus the first holder's delete), divided by %d, with what "
      "the\n  sessions sent meanwhile to stay alive (lease renewals, pings: "
      "one round of them,\n  about +1 per acquisition, or none); their idle "
      "rate is shown beside it, not\n  subtracted.\n"
      "- rwlock (8 readers loop acquire-read/release, 1 writer "
      "acquire-write/hold 1 ms/release)\n  and semaphore (N=2, 8 clients "
      "loop acquire/hold 1 ms/release): both implementations\n  as one "
      "process, one thread and one session per client; wait = acquire "
      "called -> held;\n  notifications per release = watch events / "
      "releases (one release per acquisition).\n",
      opt.contenders, opt.contenders, opt.herd_waiters, opt.herd_waiters);
  if (opt.run_scale) {
    printf("- scale, many locks: one session acquires fresh locks (each in a "
           "directory of its own);\n  proposals per lock = the leader's zxid "
           "difference (srvr) over the run / locks (every\n  transaction, a "
           "refused write's too, takes one; the servers' sweep of earlier "
           "runs'\n  empty containers adds a little).  The goal ratio divides "
           "by the pipelined create\n  rate (500 in flight) measured before "
           "and after, in the same run.\n");
    printf("- scale waiters: P processes x S sessions x H non-blocking "
           "acquisitions on one lock,\n  joining R a second behind a "
           "holder of this program's that lets go once all are\n  queued "
           "(the directory's child count); total time from that release; "
           "each holder\n  releases at once.  Notifications per release = "
           "watch events / waiters (mntr).\n"
           "- scale threads: one process, one session, one lock object, N "
           "threads looping\n  acquire/release on it (a node each); "
           "hand-over = one thread's release call to the\n  next one's "
           "return from acquire; each round runs every N in a fresh "
           "process; the\n  ratio is the median of the rounds' ratios.  "
           "%s\n",
           opt.scale_nudge
               ? "A nudger reads \"/\" on every member every 200 ms "
                 "meanwhile:\n  a 3.8.0 server can miss the wake-up of "
                 "its commit processor and hold a lone\n  client's "
                 "requests until the next request (ZOOKEEPER-4537)."
               : "No nudger (--no-nudge).");
  }
  if (opt.run_cache)
    printf(
        "- node cache, tree cache: one writer session (member 0) makes one "
        "change at a time\n  and waits for the cache's event (cache on member "
        "1, own process) before the next;\n  change -> event = the event's "
        "arrival in the listener (CLOCK_MONOTONIC, both sides)\n  minus the "
        "write's reply (or minus the moment before it was sent: includes the "
        "write's\n  commit).  node: updates of one node; tree: 100 nodes, 2 "
        "levels, updates, creates and\n  deletes.  requests per change: "
        "mntr packets minus the writer's and ours, per change.\n  burst: 50 "
        "sets sent back to back; events seen and requests for all of them.\n");
  if (opt.run_partition)
    printf(
        "- partitioner: 8 members (processes, member i on server i %% 3), 100 "
        "items, time boundary\n  1 s, session timeout 4 s (both); all "
        "ACQUIRED with the 8-member split, 2 s idle, one\n  member "
        "SIGKILLed; kill -> the last of the 7 ACQUIRED with the 7-member "
        "split\n  (CLOCK_MONOTONIC, both sides), split at the deletion of "
        "its party node (session\n  expiry) seen by this program's watch.  "
        "requests: mntr packets from the kill to\n  the end, the 7's pings "
        "and lease renewals during the expiry included.\n");
  if (opt.run_idle)
    printf("- idle: 20 sessions, session timeout 4 s, 12 s without a request "
           "of their own; packets:\n  the servers' mntr packets_received "
           "over the window, per session and second.\n  The C client pings "
           "after a third of the timeout without sending; zkrecipes\n  renews "
           "its lease (a sync) every 0.3 timeouts instead.  Held locks: 50 "
           "per session.\n");
  if (opt.csv)
    write_csv(opt.csv);
  return 0;
}
