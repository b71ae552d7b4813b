/*
 * Metrics an operator can graph (issue 33): zkrc_stats_prometheus()'s
 * series keep their names and labels across a session's expiry (only the
 * info metric's session_id changes) and its counters go on; the text is
 * read back by Prometheus' own parser (Debian's python3-prometheus-client,
 * through peers/prom_parse.py); the recipes' series stay few for a
 * thousand locks unless per_path asks for them; and zkrc_stats_serve()
 * answers HTTP on a socket, within its deadline whatever the client does.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "testutil.h"
#include "zkrecipes/stats.h"

#define PROM_PARSE TOP_SRCDIR "/tests/peers/prom_parse.py"
/* Series of one recipe row: 6 counters, 3 gauges, 2 histograms of
 * ZKRC_HISTOGRAM_BUCKETS buckets, a sum and a count. */
#define RECIPE_SERIES (6 + 3 + 2 * (ZKRC_HISTOGRAM_BUCKETS + 2))
#define MANY_LOCKS 1000

/* ------------------------------------------------ Prometheus' parser */

/* Can DEBIAN_PYTHON3 import prometheus_client? */
static gboolean have_parser(void) {
  const char *argv[] = {DEBIAN_PYTHON3, "-c", "import prometheus_client", NULL};
  zkrc_child child;
  if (zkrc_spawn(&child, (char *const *)argv, NULL) != 0)
    return FALSE;
  return zkrc_child_wait(&child, 30000) == 0;
}

/* A text as Prometheus' parser read it: each series ("name{labels}", the
 * labels sorted by name) with its value and its family's type. */
typedef struct parsed {
  GHashTable *values; /* series -> double* */
  GHashTable *types;  /* series -> type */
} parsed;

static void parsed_clear(parsed *p) {
  g_hash_table_destroy(p->values);
  g_hash_table_destroy(p->types);
}

/* A new temporary file holding @p text; its name (g_free it). */
static char *temp_file_with(const char *text) {
  char *name = NULL;
  int fd = g_file_open_tmp("zkt-metrics-XXXXXX", &name, NULL);
  CU_ASSERT_FATAL(fd >= 0);
  close(fd);
  CU_ASSERT_FATAL(g_file_set_contents(name, text, -1, NULL));
  return name;
}

/* One line "TYPE\tSERIES\tVALUE" of prom_parse.py into @p p; a series
 * twice fails the test (Prometheus would keep one of them). */
static void add_parsed_line(parsed *p, const char *line) {
  char **f = g_strsplit(line, "\t", 3);
  CU_ASSERT_FATAL(g_strv_length(f) == 3);
  CU_ASSERT_FALSE(g_hash_table_contains(p->values, f[1]));
  double *v = g_new(double, 1);
  *v = g_ascii_strtod(f[2], NULL);
  g_hash_table_insert(p->types, g_strdup(f[1]), g_strdup(f[0]));
  g_hash_table_insert(p->values, g_strdup(f[1]), v);
  g_strfreev(f);
}

/* @p text read by Prometheus' parser (have_parser() first): a text it
 * refuses fails the test. */
static parsed parse_with_prometheus(const char *text) {
  char *in = temp_file_with(text);
  char *out = temp_file_with("");
  const char *argv[] = {DEBIAN_PYTHON3, PROM_PARSE, in, out, NULL};
  zkrc_child child;
  CU_ASSERT_EQUAL_FATAL(zkrc_spawn(&child, (char *const *)argv, NULL), 0);
  CU_ASSERT_EQUAL(zkrc_child_wait(&child, 60000), 0);
  parsed p = {g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free),
              g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free)};
  char *listing = NULL;
  CU_ASSERT_FATAL(g_file_get_contents(out, &listing, NULL, NULL));
  char **lines = g_strsplit(listing, "\n", -1);
  for (int i = 0; lines[i] && lines[i][0]; i++)
    add_parsed_line(&p, lines[i]);
  g_strfreev(lines);
  g_free(listing);
  g_unlink(in);
  g_unlink(out);
  g_free(in);
  g_free(out);
  return p;
}

/* The value of @p series, NAN when there is none. */
static double value_of(const parsed *p, const char *series) {
  const double *v = g_hash_table_lookup(p->values, series);
  return v ? *v : NAN;
}

/* Series whose name starts with @p prefix. */
static guint count_series(const parsed *p, const char *prefix) {
  guint n = 0;
  GHashTableIter it;
  gpointer key;
  g_hash_table_iter_init(&it, p->values);
  while (g_hash_table_iter_next(&it, &key, NULL))
    n += g_str_has_prefix(key, prefix);
  return n;
}

/* -------------------------------------------------- across an expiry */

/* The id of the newest ZooKeeper session a listener heard CONNECTED. */
typedef struct connected_id {
  GMutex mu;
  GCond cond;
  int64_t id;
} connected_id;

static void on_event(zkrc_session *s, const zkrc_session_event *ev, void *arg) {
  (void)s;
  connected_id *c = arg;
  if (ev->type != ZKRC_SESSION_EVENT_CONNECTED)
    return;
  g_mutex_lock(&c->mu);
  c->id = ev->session_id;
  g_cond_broadcast(&c->cond);
  g_mutex_unlock(&c->mu);
}

/* Wait at most 15 s for a CONNECTED of a session other than @p old. */
static int64_t wait_new_session(connected_id *c, int64_t old) {
  int64_t deadline = g_get_monotonic_time() + 15 * G_TIME_SPAN_SECOND;
  g_mutex_lock(&c->mu);
  while ((c->id == 0 || c->id == old) &&
         g_cond_wait_until(&c->cond, &c->mu, deadline))
    ;
  int64_t id = c->id;
  g_mutex_unlock(&c->mu);
  return id;
}

static parsed parse_sources(const zkrc_stats_sources *src) {
  char *text = zkrc_stats_prometheus(src);
  CU_ASSERT_FATAL(text != NULL);
  CU_ASSERT_PTR_NULL(strstr(text, "session=\"")); /* the old label */
  parsed p = parse_with_prometheus(text);
  free(text);
  return p;
}

/* Every series of @p before is in @p after and the other way round, but
 * the info metric's (its session_id changes); counters and histograms did
 * not go down. */
static void check_same_series(const parsed *before, const parsed *after) {
  const char *info = "zkrecipes_session_info{";
  CU_ASSERT_EQUAL(count_series(before, info), 1);
  CU_ASSERT_EQUAL(count_series(after, info), 1);
  CU_ASSERT_EQUAL(g_hash_table_size(before->values),
                  g_hash_table_size(after->values));
  GHashTableIter it;
  gpointer key, value;
  g_hash_table_iter_init(&it, before->values);
  while (g_hash_table_iter_next(&it, &key, &value)) {
    if (g_str_has_prefix(key, info))
      continue;
    const double *now = g_hash_table_lookup(after->values, key);
    if (now == NULL) {
      fprintf(stderr, "gone after the expiry: %s\n", (char *)key);
      CU_FAIL("a series is gone after the expiry");
      continue;
    }
    const char *type = g_hash_table_lookup(before->types, key);
    if (strcmp(type, "counter") == 0 || strcmp(type, "histogram") == 0)
      CU_ASSERT(*now >= *(const double *)value);
  }
}

static char *info_series(int64_t id) {
  return g_strdup_printf("zkrecipes_session_info{session_id=\"0x%" PRIx64 "\"}",
                         (uint64_t)id);
}

/* A lock, a semaphore and an election of one session: the same series
 * after the servers expired it and it opened another, counters on. */
static void test_series_survive_an_expiry(void) {
  if (!have_parser()) {
    zkt_skip("no python3-prometheus-client for " DEBIAN_PYTHON3);
    return;
  }
  char *path = zkt_path("metrics-lock");
  char *sem_path = zkt_path("metrics-sem");
  char *el_path = zkt_path("metrics-el");
  zkrc_session *s = zkt_session();
  connected_id c = {.id = 0};
  g_mutex_init(&c.mu);
  g_cond_init(&c.cond);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_add_listener(s, on_event, &c, NULL));
  zkrc_lock *lk = NULL;
  zkrc_semaphore *sem = NULL;
  zkrc_election *e = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_new(&lk, s, path, NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_new(&sem, s, sem_path, 2, NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_new(&e, s, el_path, NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lk, 5000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(lk));
  zkrc_semaphore_lease *lease = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_acquire(sem, 5000, &lease));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_lease_release(lease));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_join(e));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_wait_leader(e, 5000));
  zkrc_stats_sources src;
  zkrc_stats_sources_init(&src);
  src.sessions = &s, src.n_sessions = 1;
  src.locks = &lk, src.n_locks = 1;
  src.semaphores = &sem, src.n_semaphores = 1;
  src.elections = &e, src.n_elections = 1;
  int64_t old_id = zkrc_session_id(s);
  parsed before = parse_sources(&src);
  char *old_info = info_series(old_id);
  CU_ASSERT_EQUAL(value_of(&before, old_info), 1);
  CU_ASSERT_EQUAL(value_of(&before, "zkrecipes_sessions_total{}"), 1);
  CU_ASSERT_EQUAL(value_of(&before, "zkrecipes_sessions_connected{}"), 1);
  CU_ASSERT_EQUAL(
      value_of(&before, "zkrecipes_recipe_acquisitions_total{kind=\"mutex\"}"),
      1);

  zkt_expire(s);
  int64_t new_id = wait_new_session(&c, old_id);
  CU_ASSERT_FATAL(new_id != 0 && new_id != old_id);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lk, 5000)); /* in the new one */
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(lk));
  parsed after = parse_sources(&src);
  check_same_series(&before, &after);
  char *new_info = info_series(new_id);
  CU_ASSERT_EQUAL(value_of(&after, new_info), 1);
  CU_ASSERT(isnan(value_of(&after, old_info)));
  CU_ASSERT_EQUAL(value_of(&after, "zkrecipes_sessions_total{}"), 2);
  CU_ASSERT(value_of(&after, "zkrecipes_session_expiries_total{}") >= 1);
  CU_ASSERT_EQUAL(
      value_of(&after, "zkrecipes_recipe_acquisitions_total{kind=\"mutex\"}"),
      2);
  CU_ASSERT_EQUAL(
      count_series(&after, "zkrecipes_lease_loss_delivery_seconds_bucket{"),
      ZKRC_HISTOGRAM_BUCKETS);
  g_free(old_info);
  g_free(new_info);
  parsed_clear(&before);
  parsed_clear(&after);
  zkrc_election_free(e);
  zkrc_semaphore_free(sem);
  zkrc_lock_free(lk);
  zkrc_session_close(s);
  g_mutex_clear(&c.mu);
  g_cond_clear(&c.cond);
  g_free(path);
  g_free(sem_path);
  g_free(el_path);
}

/* ---------------------------------------------------------- cardinality */

typedef struct many_locks {
  zkrc_session *s;
  char *base;
  zkrc_lock **locks; /* n + 1: the first again at the end */
  size_t n;
} many_locks;

/* @p n lock objects on @p n paths; the first 3 acquired and released once
 * each. */
static many_locks many_locks_new(size_t n) {
  many_locks m = {zkt_session(), zkt_path("metrics-many"),
                  g_new0(zkrc_lock *, n + 1), n};
  for (size_t i = 0; i < n; i++) {
    char *path = g_strdup_printf("%s/lock-%04zu", m.base, i);
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_new(&m.locks[i], m.s, path, NULL));
    g_free(path);
  }
  m.locks[n] = m.locks[0]; /* listed twice: counted once */
  for (size_t i = 0; i < 3 && i < n; i++) {
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(m.locks[i], 5000));
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(m.locks[i]));
  }
  return m;
}

static void many_locks_free(many_locks *m) {
  for (size_t i = 0; i < m->n; i++)
    zkrc_lock_free(m->locks[i]);
  g_free(m->locks);
  zkrc_session_close(m->s);
  g_free(m->base);
}

static zkrc_stats_sources many_locks_sources(const many_locks *m,
                                             int per_path) {
  zkrc_stats_sources src;
  zkrc_stats_sources_init(&src);
  src.sessions = &m->s, src.n_sessions = 1;
  src.locks = m->locks, src.n_locks = m->n + 1;
  src.per_path = per_path;
  return src;
}

/* 1000 locks on 1000 paths: by default one row of series for the kind,
 * without a path; with per_path one row per path. */
static void test_series_bounded_unless_per_path(void) {
  if (!have_parser()) {
    zkt_skip("no python3-prometheus-client for " DEBIAN_PYTHON3);
    return;
  }
  many_locks m = many_locks_new(MANY_LOCKS);
  zkrc_stats_sources src = many_locks_sources(&m, 0);
  char *text = zkrc_stats_prometheus(&src);
  CU_ASSERT_FATAL(text != NULL);
  CU_ASSERT_PTR_NULL(strstr(text, "path="));
  parsed p = parse_with_prometheus(text);
  free(text);
  CU_ASSERT_EQUAL(count_series(&p, "zkrecipes_recipe_"), RECIPE_SERIES);
  CU_ASSERT(g_hash_table_size(p.values) <= 100); /* sessions' too */
  CU_ASSERT_EQUAL(
      value_of(&p, "zkrecipes_recipe_acquisitions_total{kind=\"mutex\"}"), 3);
  CU_ASSERT_EQUAL(
      value_of(&p, "zkrecipes_recipe_wait_seconds_count{kind=\"mutex\"}"), 3);
  parsed_clear(&p);

  src = many_locks_sources(&m, 1);
  text = zkrc_stats_prometheus(&src);
  CU_ASSERT_FATAL(text != NULL);
  p = parse_with_prometheus(text);
  free(text);
  CU_ASSERT_EQUAL(count_series(&p, "zkrecipes_recipe_"),
                  RECIPE_SERIES * MANY_LOCKS);
  for (size_t i = 0; i < MANY_LOCKS; i += MANY_LOCKS - 1) {
    char *series = g_strdup_printf("zkrecipes_recipe_acquisitions_total{"
                                   "kind=\"mutex\",path=\"%s/lock-%04zu\"}",
                                   m.base, i);
    CU_ASSERT_EQUAL(value_of(&p, series), i == 0 ? 1 : 0);
    g_free(series);
  }
  parsed_clear(&p);
  many_locks_free(&m);
}

/* ------------------------------------------------------------- serving */

/* What a client got: the status line, the headers, the body. */
typedef struct answer {
  char *status;
  char *headers; /* each line ends "\r\n" */
  char *body;
  size_t body_len;
} answer;

static void answer_clear(answer *a) {
  g_free(a->status);
  g_free(a->headers);
  g_free(a->body);
}

/* Everything @p fd gives until its end (bounded by the test's run-test
 * watchdog: the server's side is closed before). */
static GString *read_to_end(int fd) {
  GString *got = g_string_new(NULL);
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0)
      g_string_append_len(got, buf, n);
  return got;
}

static answer split_answer(const GString *raw) {
  answer a = {0};
  const char *end = strstr(raw->str, "\r\n\r\n");
  CU_ASSERT_FATAL(end != NULL);
  const char *eol = strstr(raw->str, "\r\n");
  a.status = g_strndup(raw->str, (gsize)(eol - raw->str));
  a.headers = g_strndup(eol + 2, (gsize)(end + 2 - (eol + 2)));
  a.body_len = raw->len - (size_t)(end + 4 - raw->str);
  a.body = g_strndup(end + 4, a.body_len);
  return a;
}

/* The value of header @p name (g_free it), NULL when absent. */
static char *header(const answer *a, const char *name) {
  char *key = g_strdup_printf("%s: ", name);
  const char *at = strstr(a->headers, key);
  char *v =
      at ? g_strndup(at + strlen(key), strcspn(at + strlen(key), "\r")) : NULL;
  g_free(key);
  return v;
}

/* @p request sent on a socket pair, served, and the answer read; the
 * serve's result in *@p rc. */
static answer serve_on_pair(const char *request, size_t len,
                            const zkrc_stats_sources *src, int *rc) {
  int sv[2];
  CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  CU_ASSERT_EQUAL_FATAL(write(sv[0], request, len), (ssize_t)len);
  *rc = zkrc_stats_serve(sv[1], src, 5000);
  close(sv[1]);
  GString *raw = read_to_end(sv[0]);
  close(sv[0]);
  answer a = split_answer(raw);
  g_string_free(raw, TRUE);
  return a;
}

static answer serve_text(const char *request, const zkrc_stats_sources *src,
                         int *rc) {
  return serve_on_pair(request, strlen(request), src, rc);
}

/* GET and HEAD /metrics: 200, the text's type, its length, close. */
static void test_serve_get_and_head(void) {
  zkrc_session *s = zkt_session();
  zkrc_stats_sources src;
  zkrc_stats_sources_init(&src);
  src.sessions = &s, src.n_sessions = 1;
  int rc = -1;
  answer a = serve_text("GET /metrics HTTP/1.1\r\nHost: x\r\n"
                        "Accept: */*\r\n\r\n",
                        &src, &rc);
  ZKT_ASSERT_RC(ZKRC_OK, rc);
  CU_ASSERT_STRING_EQUAL(a.status, "HTTP/1.1 200 OK");
  char *type = header(&a, "Content-Type");
  CU_ASSERT_STRING_EQUAL(type ? type : "-",
                         "text/plain; version=0.0.4; charset=utf-8");
  char *length = header(&a, "Content-Length");
  CU_ASSERT_FATAL(length != NULL);
  CU_ASSERT_EQUAL(strtoul(length, NULL, 10), a.body_len);
  char *connection = header(&a, "Connection");
  CU_ASSERT_STRING_EQUAL(connection ? connection : "-", "close");
  CU_ASSERT(g_str_has_prefix(a.body, "# HELP zkrecipes_sessions_total "));
  CU_ASSERT_PTR_NOT_NULL(strstr(a.body, "\nzkrecipes_sessions_total 1\n"));
  g_free(type);
  g_free(length);
  g_free(connection);
  answer_clear(&a);

  a = serve_text("HEAD /metrics HTTP/1.0\r\n\r\n", &src, &rc);
  ZKT_ASSERT_RC(ZKRC_OK, rc);
  CU_ASSERT_STRING_EQUAL(a.status, "HTTP/1.1 200 OK");
  length = header(&a, "Content-Length");
  CU_ASSERT(length && strtoul(length, NULL, 10) > 100);
  CU_ASSERT_EQUAL(a.body_len, 0);
  g_free(length);
  answer_clear(&a);

  /* A query is ignored; a bare "\n" ends lines too. */
  a = serve_text("GET /metrics?name[]=x HTTP/1.1\n\n", &src, &rc);
  ZKT_ASSERT_RC(ZKRC_OK, rc);
  CU_ASSERT_STRING_EQUAL(a.status, "HTTP/1.1 200 OK");
  answer_clear(&a);
  zkrc_session_close(s);
}

/* Other methods, paths and requests: 405, 404, 400, 431, answered whole
 * (ZKRC_OK); the caller's mistakes: ZKRC_EINVAL, nothing read. */
static void test_serve_refusals(void) {
  zkrc_stats_sources src;
  zkrc_stats_sources_init(&src);
  int rc = -1;
  answer a = serve_text("POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n"
                        "\r\nabc",
                        &src, &rc);
  ZKT_ASSERT_RC(ZKRC_OK, rc);
  CU_ASSERT_STRING_EQUAL(a.status, "HTTP/1.1 405 Method Not Allowed");
  char *allow = header(&a, "Allow");
  CU_ASSERT_STRING_EQUAL(allow ? allow : "-", "GET, HEAD");
  g_free(allow);
  answer_clear(&a);
  a = serve_text("GET /metricsx HTTP/1.1\r\n\r\n", &src, &rc);
  ZKT_ASSERT_RC(ZKRC_OK, rc);
  CU_ASSERT_STRING_EQUAL(a.status, "HTTP/1.1 404 Not Found");
  answer_clear(&a);
  a = serve_text("hello there\r\n\r\n", &src, &rc);
  ZKT_ASSERT_RC(ZKRC_OK, rc);
  CU_ASSERT_STRING_EQUAL(a.status, "HTTP/1.1 400 Bad Request");
  answer_clear(&a);
  a = serve_text("GET /metrics SPDY/3\r\n\r\n", &src, &rc);
  CU_ASSERT_STRING_EQUAL(a.status, "HTTP/1.1 400 Bad Request");
  answer_clear(&a);
  GString *big = g_string_new("GET /metrics HTTP/1.1\r\n");
  while (big->len <= ZKRC_STATS_REQUEST_MAX)
    g_string_append(big, "X-Filler: 0123456789abcdef\r\n");
  a = serve_on_pair(big->str, big->len, &src, &rc);
  ZKT_ASSERT_RC(ZKRC_OK, rc);
  CU_ASSERT_STRING_EQUAL(a.status,
                         "HTTP/1.1 431 Request Header Fields Too Large");
  answer_clear(&a);
  g_string_free(big, TRUE);

  int sv[2], pipefd[2];
  CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  CU_ASSERT_EQUAL_FATAL(pipe(pipefd), 0);
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_stats_serve(-1, &src, 100));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_stats_serve(pipefd[0], &src, 100));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_stats_serve(sv[1], &src, -1));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_stats_serve(sv[1], NULL, 100));
  zkrc_lock *none[] = {NULL};
  src.locks = none, src.n_locks = 1;
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_stats_serve(sv[1], &src, 100));
  close(pipefd[0]);
  close(pipefd[1]);
  close(sv[0]);
  close(sv[1]);
}

/* Serve @p sv[1] with @p timeout_ms: its result, and how long it took in
 * *@p took_ms. */
static int timed_serve(int fd, const zkrc_stats_sources *src, int timeout_ms,
                       int64_t *took_ms) {
  int64_t start = zkt_now_ms();
  int rc = zkrc_stats_serve(fd, src, timeout_ms);
  *took_ms = zkt_now_ms() - start;
  return rc;
}

/* A client that sends nothing, half a request, or reads nothing of a
 * long answer: ZKRC_ETIMEDOUT at the deadline, not later; one that closed
 * before asking: ZKRC_ECONNLOSS at once. */
static void test_serve_keeps_its_deadline(void) {
  const int timeout_ms = 300, margin_ms = 1000;
  zkrc_stats_sources src;
  zkrc_stats_sources_init(&src);
  int sv[2];
  int64_t took = 0;
  CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  ZKT_ASSERT_RC(ZKRC_ETIMEDOUT, timed_serve(sv[1], &src, timeout_ms, &took));
  CU_ASSERT(took >= timeout_ms && took < timeout_ms + margin_ms);
  CU_ASSERT_EQUAL_FATAL(write(sv[0], "GET /metr", 9), 9);
  ZKT_ASSERT_RC(ZKRC_ETIMEDOUT, timed_serve(sv[1], &src, timeout_ms, &took));
  CU_ASSERT(took >= timeout_ms && took < timeout_ms + margin_ms);
  close(sv[0]);
  close(sv[1]);

  CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  CU_ASSERT_EQUAL_FATAL(shutdown(sv[0], SHUT_WR), 0);
  ZKT_ASSERT_RC(ZKRC_ECONNLOSS, timed_serve(sv[1], &src, 5000, &took));
  CU_ASSERT(took < margin_ms);
  close(sv[0]);
  close(sv[1]);

  /* 300 paths' series, a few MB: more than the socket holds. */
  many_locks m = many_locks_new(300);
  src = many_locks_sources(&m, 1);
  CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  const char *get = "GET /metrics HTTP/1.1\r\n\r\n";
  CU_ASSERT_EQUAL_FATAL(write(sv[0], get, strlen(get)), (ssize_t)strlen(get));
  ZKT_ASSERT_RC(ZKRC_ETIMEDOUT, timed_serve(sv[1], &src, timeout_ms, &took));
  CU_ASSERT(took >= timeout_ms && took < timeout_ms + margin_ms);
  close(sv[0]);
  close(sv[1]);
  many_locks_free(&m);
}

/* A client on a loopback TCP socket, in its own thread. */
typedef struct tcp_client {
  uint16_t port;
  GString *got;
} tcp_client;

static gpointer fetch_metrics(gpointer data) {
  tcp_client *c = data;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(c->port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const char *get = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
      write(fd, get, strlen(get)) == (ssize_t)strlen(get))
    c->got = read_to_end(fd);
  close(fd);
  return NULL;
}

/* The same over TCP, as Prometheus would scrape it. */
static void test_serve_over_tcp(void) {
  zkrc_session *s = zkt_session();
  zkrc_stats_sources src;
  zkrc_stats_sources_init(&src);
  src.sessions = &s, src.n_sessions = 1;
  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  CU_ASSERT_EQUAL_FATAL(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
  CU_ASSERT_EQUAL_FATAL(listen(lfd, 1), 0);
  CU_ASSERT_EQUAL_FATAL(getsockname(lfd, (struct sockaddr *)&a, &len), 0);
  tcp_client c = {ntohs(a.sin_port), NULL};
  GThread *t = g_thread_new("scraper", fetch_metrics, &c);
  int fd = accept(lfd, NULL, NULL);
  CU_ASSERT_FATAL(fd >= 0);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_stats_serve(fd, &src, 5000));
  close(fd);
  g_thread_join(t);
  close(lfd);
  CU_ASSERT_FATAL(c.got != NULL);
  answer ans = split_answer(c.got);
  CU_ASSERT_STRING_EQUAL(ans.status, "HTTP/1.1 200 OK");
  CU_ASSERT_PTR_NOT_NULL(strstr(ans.body, "zkrecipes_session_info{"));
  answer_clear(&ans);
  g_string_free(c.got, TRUE);
  zkrc_session_close(s);
}

static void add_suites(void) {
  ZKT_SUITE("series",
            {"unchanged across an expiry", test_series_survive_an_expiry},
            {"bounded unless per_path", test_series_bounded_unless_per_path});
  ZKT_SUITE("serve", {"GET and HEAD /metrics", test_serve_get_and_head},
            {"405, 404, 400, 431, EINVAL", test_serve_refusals},
            {"keeps its deadline", test_serve_keeps_its_deadline},
            {"over TCP", test_serve_over_tcp});
}

int main(void) { return zkt_run("test_metrics", add_suites); }
