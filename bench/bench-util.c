/*
 * zkr-bench: clocks, errors, progress, statistics, znode and marker paths.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include "bench.h"

/* ----------------------------------------------------------- utilities */

int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
}

void fatal(const char *fmt, ...) {
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
void progress(const char *fmt, ...) {
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
double quantile(double *v, size_t n, double p) {
  if (n == 0)
    return NAN;
  qsort(v, n, sizeof *v, compare_double);
  size_t i = (size_t)ceil(p * (double)n);
  i = i == 0 ? 0 : i - 1;
  return v[i < n ? i : n - 1];
}

double median_of(const double *v, size_t n) {
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

double need_field(const char *who, const char *line, const char *key) {
  double v = field(line, key);
  if (isnan(v))
    fatal("%s: no %s in \"%.200s\"", who, key, line);
  return v;
}

/* --------------------------------------------------------------- paths */

char *znode(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *rel = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  char *path = g_strdup_printf("%s/%s", root, rel);
  g_free(rel);
  return path;
}

char *marker_file(const char *tag) {
  return g_strdup_printf("%s/marker-%s", marker_dir, tag);
}

size_t round_order(int round, size_t i, size_t n) {
  return round % 2 == 0 && round > 0 ? n - 1 - i : i;
}
