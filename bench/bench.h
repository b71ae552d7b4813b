/*
 * zkr-bench: what its parts share.  zkrecipes' lock against the ensemble's
 * own limit, Apache Curator's InterProcessMutex, kazoo's Lock and a naive
 * "herd" lock, and zkrecipes' read-write lock and semaphore against
 * Curator's, on the same ensemble and the same workloads, in one run.
 * See --help, and bench/RESULTS.md for what the figures mean.
 *
 * How it measures:
 *  - It starts a local 3-member ensemble with real fsync (or uses -s HOSTS)
 *    and runs every participant as a separate process (bench-proc.c):
 *    zkr-bench-worker for the C ones (the limit, zkrecipes, the naive
 *    lock), the interoperability peers for Curator (Java) and kazoo
 *    (Python), in their "bench" and "herd" modes.
 *  - Fsync makes write latency swing from one run to the next, so the
 *    throughput workloads run in rounds that interleave the
 *    implementations; the table gives medians over the rounds, and ratios
 *    that are the median of the per-round ratios (bench-results.c).
 *  - Request and notification counts come from the servers' own `mntr`
 *    counters, summed over the members (bench-counters.c); every `mntr`
 *    this program sends is itself one received packet on that member, and
 *    is subtracted.
 *
 * The parts: zkr-bench.c (options, set-up, main), bench-util.c,
 * bench-proc.c, bench-counters.c, bench-results.c, bench-holds.c (the
 * exclusion check), the workloads (bench-throughput.c, bench-herd.c,
 * bench-scale.c, bench-election.c, bench-family.c, bench-cache.c,
 * bench-partition.c),
 * bench-report.c and bench-machine.c.  One process, one thread: the state
 * below is plain globals.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef ZKR_BENCH_H
#define ZKR_BENCH_H

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <glib.h>
#include <zookeeper/zookeeper.h>

#include "zkrecipes/testing.h"

#define MAX_MEMBERS 9

/* Session timeout of every measuring client: long, so that pings are rare
 * (clients ping after a third of it without traffic). */
#define MEASURE_SESSION_MS 30000

/* How long a process may take to start and connect its sessions (a JVM with
 * a hundred Curator clients on a busy machine is slow). */
#define START_MS 180000
/* Bound of every other single step. */
#define STEP_MS 120000

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
  int scale_join_rate; /* waiters joining the queue a second */
  int scale_locks;
  int scale_threads[3]; /* threads on one lock object, few to many */
  int scale_rounds;     /* rounds of the threads workload */
  gboolean scale_nudge; /* keep the members awake (bench-threads.c) */
  int election_reps;
  int election_session_ms;
  int cache_changes;
  gboolean with_curator, with_kazoo;
  gboolean run_throughput, run_herd, run_scale, run_election, run_family;
  gboolean run_cache, run_partition, run_idle;
  const char *worker, *java, *curator_cp, *python, *kazoo_peer;
} options;

/* The options (zkr-bench.c) and the run's state. */
extern options opt;
extern zkrc_ensemble *ensemble; /* NULL with -s */
extern char *hosts;             /* connect string of the measured ensemble */
extern char *member_addr[MAX_MEMBERS];
extern int members;
extern char *root;       /* znode under which this run works */
extern char *marker_dir; /* temporary directory of the marker files */
extern int64_t run_start_ns;

/* Stops everything this run started (zkr-bench.c); fatal() calls it. */
void cleanup(void);

/* ---------------------------------------------------------- bench-util.c */

int64_t now_ns(void);
void sleep_ms(int ms);
void fatal(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));
/* Progress on stderr, with the time since the start. */
void progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Nearest-rank quantile of @p n values (sorted in place). */
double quantile(double *v, size_t n, double p);
double median_of(const double *v, size_t n);
/* The @p i-th of @p n implementations (or sizes) measured in round
 * @p round: forward in odd rounds, backward in even ones, so that drift and
 * position effects cancel while neighbours (zkrecipes and the limit,
 * zkrecipes and Curator) stay next to each other. */
size_t round_order(int round, size_t i, size_t n);
/* The value of "key=" in a line of key=value words; fatal when missing. */
double need_field(const char *who, const char *line, const char *key);
/* A znode under the run's root, and a marker file of the run. */
char *znode(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *marker_file(const char *tag);

/* ---------------------------------------------------------- bench-proc.c */

typedef struct proc {
  char *name;
  pid_t pid;
  int in_fd, out_fd;
  GString *buf;
  gboolean eof;
} proc;

extern GPtrArray *live_procs;
void proc_kill(proc *p);
void proc_free(proc *p);
proc *proc_start(const char *name, char *const *argv, char *const *extra_env);
char *proc_line(proc *p, int timeout_ms);
char *proc_try_line(proc *p, int timeout_ms);
char *proc_expect(proc *p, const char *prefix, int timeout_ms);
void proc_send(proc *p, const char *line);
void proc_finish(proc *p, int timeout_ms);
proc *worker_start(const char *name, const char *const *args);
proc *peer_start(const char *impl, const char *const *args, int session_ms);

/* ------------------------------------------------------ bench-counters.c */

typedef struct snap {
  int64_t at;
  int64_t fourlw; /* fourlw_sent after this snapshot */
  int64_t packets, notifications, watches;
  int64_t child_notifications; /* of notifications: children watches */
  int64_t ephemerals[MAX_MEMBERS];
} snap;

char *fetch_mntr(int i);
/* The latest zxid among the members (srvr's "Zxid"): the leader's, once
 * its followers have caught up.  Every transaction takes one, failed
 * writes (error transactions) included: the difference of two readings is
 * the proposals between them. */
int64_t latest_zxid(void);
/* after - before, or NaN when a new leader (epoch) came in between. */
double proposals_between(int64_t before, int64_t after);
void snap_take(snap *s);
int64_t client_packets(const snap *a, const snap *b);

/* ------------------------------------------------------- bench-results.c */

typedef struct metric {
  char *workload, *impl, *figure, *unit;
  GArray *values;       /* double, one per round */
  const char *ref_impl; /* ratio to this implementation's same figure */
} metric;
extern GPtrArray *metrics;
void record(const char *workload, const char *impl, const char *figure,
            const char *unit, double v);
metric *metric_find(const char *workload, const char *impl, const char *figure);
double metric_median(const metric *m);
double median_of_fig(const char *workload, const char *impl,
                     const char *figure);
double metric_ratio(const metric *m);
void set_reference(const char *workload, const char *ref);

/* --------------------------------------------------------- bench-holds.c */

/* The holds the participants reported (from "told it holds" to "release
 * called", microseconds of CLOCK_MONOTONIC), judged by the tests' checker
 * (tests/holds.h): no two overlap, and the fencing tokens rise. */
typedef struct bench_holds bench_holds;
bench_holds *bench_holds_new(void);
/* @p who: the participant (for messages); @p token: -1 when it has none. */
void bench_holds_add(bench_holds *h, int who, int64_t token, int64_t held_us,
                     int64_t releasing_us);
/* The overlapping pairs and the tokens out of order (rising from grant to
 * grant with @p tokens_in_grant_order, else only from a hold to those that
 * began after it ended; no token, no check).  Prints each on stderr. */
void bench_holds_check(bench_holds *h, gboolean tokens_in_grant_order,
                       int *overlaps, int *token_disorder);
void bench_holds_free(bench_holds *h);

/* ------------------------------------------------------------- workloads */

/* limit, zkrecipes, curator, kazoo, naive (bench-throughput.c) */
#define N_IMPLS 5
extern const char *const impl_names[N_IMPLS];
gboolean impl_enabled(const char *impl);
void run_throughput(void); /* bench-throughput.c */
void run_herd(void);       /* bench-herd.c */
void scale_waiters(void);  /* bench-scale.c */
void scale_locks(void);
void scale_threads(void);   /* bench-threads.c */
extern zhandle_t *watch_zh; /* bench-election.c */
void run_election(void);
/* The bench's own handle (watch_zh) connected, if it is not yet. */
void watch_connect(void);
/* Watch @p node for its deletion (it must exist); then deletion_wait()
 * gives the time its deletion was told (now_ns()), fatal after
 * @p timeout_ms. */
void watch_deletion(const char *node);
int64_t deletion_wait(int timeout_ms);
void run_family(void); /* bench-family.c: the read-write lock, the semaphore */
void run_cache(void);  /* bench-cache.c: the node and tree caches */
void run_partition(void); /* bench-partition.c: the set partitioner */
void run_idle(void);      /* bench-idle.c: the cost of staying alive */

/* ------------------------------------------- bench-report.c, -machine.c */

extern GPtrArray *targets;
void evaluate_targets(void);
void print_table(FILE *out);
void print_targets(FILE *out);
void write_csv(const char *file);
extern GString *machine;
char *loadavg(void);
void describe_machine(const char *data_dir);

#endif /* ZKR_BENCH_H */
