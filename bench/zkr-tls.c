/*
 * zkr-tls - what TLS costs a lock (issue 33): uncontended acquire and
 * release of a fresh lock, over mutual TLS and over plaintext, in one run,
 * the rounds interleaved (fsync and a busy machine move absolute times by
 * 2x between runs; their ratio is what this reports).  It measures and
 * prints; it is not a test.
 *
 *   zkr-tls [--rounds N] [--ops N]
 *
 * Two one-member ensembles of libzkrecipes-testing, one plain and one
 * TLS-only (zkrc_ensemble_options.tls), with real fsync; a session to
 * each; each round runs N acquire+release pairs on one, then the other
 * (the first alternating).  Needs a ZooKeeper client with TLS
 * (zkrc_features(); README, "TLS and SASL"): without one it says so and
 * exits 0.  Loopback only; every process it starts is stopped.
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include <glib.h>

#include "zkrecipes.h"
#include "zkrecipes/testing.h"

static struct { int rounds, ops; } opt = {6, 200};

static zkrc_ensemble *plain, *tls;

static void fatal(const char *what) {
  fprintf(stderr, "zkr-tls: %s\n", what);
  if (plain)
    zkrc_ensemble_stop(plain);
  if (tls)
    zkrc_ensemble_stop(tls);
  exit(1);
}

static zkrc_ensemble *start(int with_tls) {
  zkrc_ensemble_options eo;
  zkrc_ensemble_options_init(&eo);
  eo.tls = with_tls;
  zkrc_ensemble *e = NULL;
  if (zkrc_ensemble_start(&e, &eo) != 0)
    fatal("an ensemble did not start");
  return e;
}

static zkrc_session *connect_to(zkrc_ensemble *e, int with_tls) {
  zkrc_session_options o;
  zkrc_session_options_init(&o);
  o.session_timeout_ms = 4000;
  o.server_tick_ms = 200;
  if (with_tls) {
    o.tls_ca_file = zkrc_ensemble_tls_file(e, ZKRC_TLS_CA);
    o.tls_cert_file = zkrc_ensemble_tls_file(e, ZKRC_TLS_CLIENT_CERT);
    o.tls_key_file = zkrc_ensemble_tls_file(e, ZKRC_TLS_CLIENT_KEY);
  }
  zkrc_session *s = NULL;
  if (zkrc_session_connect(&s, zkrc_ensemble_connect_string(e), &o) != ZKRC_OK)
    fatal("cannot connect a session");
  return s;
}

/* Microseconds per acquire+release pair, over @p ops fresh locks. */
static double pairs_us(zkrc_session *s, int round) {
  char path[64];
  snprintf(path, sizeof path, "/zkr-tls/r%d", round);
  zkrc_lock *lk = NULL;
  if (zkrc_lock_new(&lk, s, path, NULL) != ZKRC_OK)
    fatal("cannot make a lock");
  int64_t start = g_get_monotonic_time();
  for (int i = 0; i < opt.ops; i++) {
    if (zkrc_lock_acquire(lk, 10000) != ZKRC_OK ||
        zkrc_lock_release(lk) != ZKRC_OK)
      fatal("an acquisition failed");
  }
  double us = (double)(g_get_monotonic_time() - start) / opt.ops;
  zkrc_lock_free(lk);
  return us;
}

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, compare_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void parse(int argc, char **argv) {
  static const struct option longopts[] = {
      {"rounds", required_argument, NULL, 'r'},
      {"ops", required_argument, NULL, 'o'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    if (c == 'r')
      opt.rounds = MAX(atoi(optarg), 1);
    else if (c == 'o')
      opt.ops = MAX(atoi(optarg), 1);
    else {
      printf("Usage: zkr-tls [--rounds N] [--ops N]\n");
      exit(c == 'h' ? 0 : 2);
    }
  }
}

int main(int argc, char **argv) {
  parse(argc, argv);
  zkrc_log_from_env();
  if (!(zkrc_features() & ZKRC_FEATURE_TLS)) {
    printf("zkr-tls: this ZooKeeper client has no TLS (README, \"TLS and "
           "SASL\"); nothing measured\n");
    return 0;
  }
  plain = start(0);
  tls = start(1);
  zkrc_session *ps = connect_to(plain, 0), *ts = connect_to(tls, 1);
  double *p = g_new(double, opt.rounds), *t = g_new(double, opt.rounds),
         *ratio = g_new(double, opt.rounds);
  printf("zkr-tls: %d rounds of %d acquire+release pairs, one member each "
         "(real fsync), %s\n",
         opt.rounds, opt.ops, zkrc_version());
  for (int r = 0; r < opt.rounds; r++) {
    if (r % 2 == 0) {
      p[r] = pairs_us(ps, r);
      t[r] = pairs_us(ts, r);
    } else {
      t[r] = pairs_us(ts, r);
      p[r] = pairs_us(ps, r);
    }
    ratio[r] = t[r] / p[r];
    printf("  round %d: plaintext %.0f us, TLS %.0f us per pair: %.2fx\n", r,
           p[r], t[r], ratio[r]);
    fflush(stdout);
  }
  printf("median: plaintext %.0f us, TLS %.0f us; TLS / plaintext %.2fx "
         "(median of the rounds' ratios)\n",
         median(p, opt.rounds), median(t, opt.rounds),
         median(ratio, opt.rounds));
  zkrc_session_close(ps);
  zkrc_session_close(ts);
  zkrc_ensemble_stop(plain);
  zkrc_ensemble_stop(tls);
  g_free(p);
  g_free(t);
  g_free(ratio);
  return 0;
}
