/*
 * zkr-fleet - what a fleet of sessions costs the ZooKeeper leader
 * (issue 33, "Leases at fleet scale").  A lease renewal is a sync, which a
 * follower forwards to the leader; the client's own pings, and the
 * keepalives of a resting lease, stay on the follower.  This opens N
 * sessions to the followers only, of which K hold a lock each, and counts
 * the requests the leader's PrepRequestProcessor took in over a window
 * (its `mntr` zk_prep_processor_request_queued: every sync and write it
 * was forwarded; nothing else is written meanwhile), once with the lease
 * renewed on demand (the default) and once with ZKRC_LEASE_ALWAYS, the
 * rounds interleaved.  It measures and prints; it is not a test.
 *
 *   zkr-fleet [--sessions N] [--holders K] [--seconds S] [--rounds R]
 *
 * A local 3-member ensemble of libzkrecipes-testing (tickTime 500 ms,
 * session timeout 10 s, no fsync: the count, not the latency, is measured).
 * Loopback only; every process it starts is stopped.
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "zkrecipes.h"
#include "zkrecipes/testing.h"

#define TICK_MS 500
#define TIMEOUT_MS 10000
#define LEADER_KEY "zk_prep_processor_request_queued"

static struct {
  int sessions, holders, seconds, rounds;
} opt = {1000, 10, 30, 2};

static zkrc_ensemble *ensemble;

static void fatal(const char *what) {
  fprintf(stderr, "zkr-fleet: %s\n", what);
  if (ensemble)
    zkrc_ensemble_stop(ensemble);
  exit(1);
}

/* The integer value of @p key in member @p i's `mntr`; -1 if none. */
static int64_t mntr_value(int i, const char *key) {
  char *out = NULL;
  if (zkrc_ensemble_four_letter(ensemble, i, "mntr", &out) != 0 || !out)
    return -1;
  int64_t v = -1;
  size_t n = strlen(key);
  for (char *line = out; line && *line; line = strchr(line, '\n')) {
    if (*line == '\n')
      line++;
    if (strncmp(line, key, n) == 0 && line[n] == '\t') {
      v = g_ascii_strtoll(line + n + 1, NULL, 10);
      break;
    }
  }
  free(out);
  return v;
}

/* "host:port,host:port" of the members other than the leader @p leader. */
static char *followers(int leader) {
  GString *hosts = g_string_new(NULL);
  for (int i = 0; i < zkrc_ensemble_size(ensemble); i++) {
    if (i == leader)
      continue;
    g_string_append_printf(hosts, "%s%s", hosts->len ? "," : "",
                           zkrc_ensemble_member_address(ensemble, i));
  }
  return g_string_free(hosts, FALSE);
}

typedef struct window {
  double leader_per_s;     /* requests the leader took in, per second */
  double renewals_per_s;   /* the sessions' own count of their syncs */
  double keepalives_per_s; /* and of their keepalives */
} window;

static void client_counts(zkrc_session **s, int n, uint64_t *renewals,
                          uint64_t *keepalives) {
  *renewals = *keepalives = 0;
  for (int i = 0; i < n; i++) {
    zkrc_session_stats st;
    zkrc_session_get_stats(s[i], &st, sizeof st);
    *renewals += st.renewals;
    *keepalives += st.keepalives;
  }
}

/* One window with @p renewal (zkrc_lease_renewal) for every session. */
static window measure(int renewal, int round) {
  int leader = zkrc_ensemble_leader(ensemble);
  if (leader < 0)
    fatal("no leader");
  char *hosts = followers(leader);
  zkrc_session_options o;
  zkrc_session_options_init(&o);
  o.session_timeout_ms = TIMEOUT_MS;
  o.connect_timeout_ms = 60000;
  o.server_tick_ms = TICK_MS;
  o.lease_renewal = renewal;
  zkrc_session **s = g_new0(zkrc_session *, opt.sessions);
  for (int i = 0; i < opt.sessions; i++)
    if (zkrc_session_new(&s[i], hosts, &o) != ZKRC_OK)
      fatal("zkrc_session_new");
  for (int i = 0; i < opt.sessions; i++)
    if (zkrc_session_wait_connected(s[i], 60000) != ZKRC_OK)
      fatal("a session did not connect");
  zkrc_lock **held = g_new0(zkrc_lock *, opt.holders);
  for (int i = 0; i < opt.holders && i < opt.sessions; i++) {
    char path[64];
    snprintf(path, sizeof path, "/zkr-fleet/r%d-%d/lock-%d", round, renewal, i);
    if (zkrc_lock_new(&held[i], s[i], path, NULL) != ZKRC_OK ||
        zkrc_lock_acquire(held[i], 10000) != ZKRC_OK)
      fatal("cannot take a lock");
  }
  /* Settle: the sessions' creations and the locks' writes are behind us,
   * every lease on its steady schedule. */
  g_usleep((gulong)TIMEOUT_MS * 1000);
  uint64_t r0, k0, r1, k1;
  client_counts(s, opt.sessions, &r0, &k0);
  int64_t l0 = mntr_value(leader, LEADER_KEY);
  int64_t t0 = g_get_monotonic_time();
  g_usleep((gulong)opt.seconds * G_USEC_PER_SEC); /* the window */
  int64_t l1 = mntr_value(leader, LEADER_KEY);
  int64_t t1 = g_get_monotonic_time();
  client_counts(s, opt.sessions, &r1, &k1);
  if (l0 < 0 || l1 < 0)
    fatal("the leader's mntr has no " LEADER_KEY);
  if (zkrc_ensemble_leader(ensemble) != leader)
    fatal("the leader changed during the window");
  double secs = (t1 - t0) / 1e6;
  window w = {(l1 - l0) / secs, (r1 - r0) / secs, (k1 - k0) / secs};
  for (int i = 0; i < opt.holders && i < opt.sessions; i++) {
    zkrc_lock_release(held[i]);
    zkrc_lock_free(held[i]);
  }
  for (int i = 0; i < opt.sessions; i++)
    zkrc_session_close(s[i]);
  g_free(held);
  g_free(s);
  g_free(hosts);
  return w;
}

static void report(const char *name, const window *w) {
  printf("  %-10s leader took in %8.1f requests/s; the sessions sent "
         "%8.1f renewals/s and %8.1f keepalives/s\n",
         name, w->leader_per_s, w->renewals_per_s, w->keepalives_per_s);
  fflush(stdout);
}

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, compare_doubles);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void usage(void) {
  printf("Usage: zkr-fleet [--sessions N] [--holders K] [--seconds S] "
         "[--rounds R]\n"
         "Counts the requests a 3-member ensemble's leader takes in from N\n"
         "sessions (on the followers), K of which hold a lock, with the\n"
         "lease renewed on demand and always, interleaved.  Defaults: "
         "1000, 10, 30, 2.\n");
}

static void parse(int argc, char **argv) {
  static const struct option longs[] = {
      {"sessions", required_argument, NULL, 'n'},
      {"holders", required_argument, NULL, 'k'},
      {"seconds", required_argument, NULL, 's'},
      {"rounds", required_argument, NULL, 'r'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "n:k:s:r:h", longs, NULL)) != -1) {
    int v = optarg ? atoi(optarg) : 0;
    switch (c) {
    case 'n':
      opt.sessions = MAX(v, 1);
      break;
    case 'k':
      opt.holders = MAX(v, 0);
      break;
    case 's':
      opt.seconds = MAX(v, 1);
      break;
    case 'r':
      opt.rounds = MAX(v, 1);
      break;
    case 'h':
      usage();
      exit(0);
    default:
      usage();
      exit(2);
    }
  }
}

int main(int argc, char **argv) {
  parse(argc, argv);
  zkrc_ensemble_options eo;
  zkrc_ensemble_options_init(&eo);
  eo.members = 3;
  eo.tick_ms = TICK_MS;
  eo.no_fsync = 1;
  if (zkrc_ensemble_start(&ensemble, &eo) != 0)
    fatal("the ensemble did not start");
  printf("zkr-fleet: %d sessions to the followers, %d holding a lock; "
         "session timeout %d ms, tick %d ms; %d s windows\n",
         opt.sessions, opt.holders, TIMEOUT_MS, TICK_MS, opt.seconds);
  double *demand = g_new(double, opt.rounds);
  double *always = g_new(double, opt.rounds);
  for (int r = 0; r < opt.rounds; r++) {
    printf("round %d\n", r + 1);
    /* Alternate which goes first: the machine's load drifts. */
    for (int j = 0; j < 2; j++) {
      gboolean on_demand = (r + j) % 2 == 0;
      window w =
          measure(on_demand ? ZKRC_LEASE_ON_DEMAND : ZKRC_LEASE_ALWAYS, r);
      report(on_demand ? "on demand" : "always", &w);
      (on_demand ? demand : always)[r] = w.leader_per_s;
    }
  }
  double d = median(demand, opt.rounds), a = median(always, opt.rounds);
  printf("median: the leader took in %.1f requests/s on demand, %.1f "
         "always (%.1fx fewer)\n",
         d, a, d > 0 ? a / d : 0);
  g_free(demand);
  g_free(always);
  zkrc_ensemble_stop(ensemble);
  return 0;
}
