/*
 * Log lines (zkrecipes/log.h) against a real single-member ensemble: each
 * line carries a syslog level and its origin; the library tells its own
 * significant events (a session's state, a hold lost) at log.h's levels;
 * the ZooKeeper client's lines come without its prefix, at their mapped
 * levels (its routine retries at INFO), and rate-limited to what log.h
 * promises over 10 s of refused connections; and a program that
 * configures nothing prints none of the client's INFO lines.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <syslog.h>
#include <unistd.h>

#include <glib.h>

#include "core/log_internal.h"
#include "testutil.h"

#define MINIMAL TOP_BUILDDIR "/examples/zkr-minimal"

/* Every line the handler got. */
typedef struct logged {
  zkrc_log_level level;
  zkrc_log_origin origin;
  char *text;
  gint64 at_us; /* when it reached the handler (monotonic) */
} logged;

static GMutex mu;
static GCond cond;
static GPtrArray *lines;

static void record(zkrc_log_level level, zkrc_log_origin origin,
                   const char *line, void *arg) {
  logged *l = g_new(logged, 1);
  l->level = level;
  l->origin = origin;
  l->text = g_strdup(line);
  l->at_us = g_get_monotonic_time();
  g_mutex_lock(&mu);
  g_ptr_array_add(lines, l);
  g_cond_broadcast(&cond);
  g_mutex_unlock(&mu);
}

static void logged_free(gpointer p) {
  logged *l = p;
  g_free(l->text);
  g_free(l);
}

static void start_recording(zkrc_log_level level) {
  g_mutex_lock(&mu);
  if (lines)
    g_ptr_array_free(lines, TRUE);
  lines = g_ptr_array_new_with_free_func(logged_free);
  g_mutex_unlock(&mu);
  zkrc_log_set_rate_limit(20, 5);
  zkrc_log_set_level(level);
  zkrc_log_set_handler(record, NULL);
}

static void stop_recording(void) {
  zkrc_log_from_env(); /* what every test program starts with */
  zkrc_log_set_rate_limit(20, 5);
}

/* Lines from @p origin at @p level (0: any) containing @p what (and
 * @p what2, if not NULL). */
static int count_lines(zkrc_log_origin origin, zkrc_log_level level,
                       const char *what, const char *what2) {
  int n = 0;
  for (guint i = 0; i < lines->len; i++) {
    logged *l = g_ptr_array_index(lines, i);
    if (l->origin == origin && (level == 0 || l->level == level) &&
        strstr(l->text, what) && (what2 == NULL || strstr(l->text, what2)))
      n++;
  }
  return n;
}

/* Wait (at most @p timeout_ms) for such a line. */
static int wait_line(zkrc_log_origin origin, zkrc_log_level level,
                     const char *what, const char *what2, int timeout_ms) {
  gint64 end = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
  g_mutex_lock(&mu);
  int n;
  while ((n = count_lines(origin, level, what, what2)) == 0 &&
         g_cond_wait_until(&cond, &mu, end))
    ;
  g_mutex_unlock(&mu);
  return n;
}

/* ---------------------------------------------------------- the levels */

static void test_levels_are_syslog_priorities(void) {
  CU_ASSERT_EQUAL(ZKRC_LOG_ERROR, LOG_ERR);
  CU_ASSERT_EQUAL(ZKRC_LOG_WARN, LOG_WARNING);
  CU_ASSERT_EQUAL(ZKRC_LOG_NOTICE, LOG_NOTICE);
  CU_ASSERT_EQUAL(ZKRC_LOG_INFO, LOG_INFO);
  CU_ASSERT_EQUAL(ZKRC_LOG_DEBUG, LOG_DEBUG);
  CU_ASSERT_STRING_EQUAL(zkrc_log_level_name(ZKRC_LOG_WARN), "warn");
  CU_ASSERT_STRING_EQUAL(zkrc_log_level_name(ZKRC_LOG_NOTICE), "notice");
  CU_ASSERT_STRING_EQUAL(zkrc_log_level_name((zkrc_log_level)42), "unknown");
  zkrc_log_set_level(ZKRC_LOG_INFO);
  zkrc_log_set_level((zkrc_log_level)0); /* out of range: ignored */
  zkrc_log_set_level((zkrc_log_level)8);
  CU_ASSERT_EQUAL(zkrc_log_get_level(), ZKRC_LOG_INFO);
  stop_recording();
}

/* ------------------------------------- the client's lines, in memory */

#define REFUSED                                                                \
  "zookeeper_interest@2597: Socket [127.0.0.1:2181] zk retcode=-4, "           \
  "errno=111(Connection refused): connect() call failed"

/* Parse @p line; the level and text it gives ("" when it refuses it). */
static gboolean parse(const char *line, zkrc_log_level *level,
                      const char **text) {
  *level = (zkrc_log_level)0;
  *text = "";
  return zkrc__log_parse_client_line(line, level, text);
}

/* The client's prefix (zk_log.c log_message(), threaded or not) goes; the
 * level and "function@line: message" stay. */
static void test_client_prefix_is_stripped(void) {
  zkrc_log_level level;
  const char *text;
  CU_ASSERT_TRUE(parse("2026-11-29 12:00:00,123:12345(0x7f3a2b1c0700):"
                       "ZOO_ERROR@" REFUSED,
                       &level, &text));
  CU_ASSERT_EQUAL(level, ZKRC_LOG_ERROR);
  CU_ASSERT_STRING_EQUAL(text, REFUSED);
  CU_ASSERT_TRUE(parse("2026-01-02 03:04:05,006:7:ZOO_INFO@zookeeper_init_"
                       "internal@1335: Initiating client connection\n",
                       &level, &text));
  CU_ASSERT_EQUAL(level, ZKRC_LOG_INFO);
  CU_ASSERT_STRING_EQUAL(text, "zookeeper_init_internal@1335: Initiating "
                               "client connection\n");
  CU_ASSERT_TRUE(parse(
      "2026-11-29 12:00:00,999:1(0xABCdef):ZOO_WARN@f@1: ", &level, &text));
  CU_ASSERT_EQUAL(level, ZKRC_LOG_WARN);
  CU_ASSERT_STRING_EQUAL(text, "f@1: ");
  CU_ASSERT_TRUE(parse("2026-11-29 12:00:00,000:1(0x1):ZOO_DEBUG@_g2@10: x",
                       &level, &text));
  CU_ASSERT_EQUAL(level, ZKRC_LOG_DEBUG);
  CU_ASSERT_STRING_EQUAL(text, "_g2@10: x");
}

/* Lines not in the client's form are refused, and then nothing is set. */
static void test_malformed_client_lines(void) {
  static const char *const bad[] = {
      "",
      "hello",
      "ZOO_ERROR@f@1: no prefix",
      "2026-11-29 12:00",
      "2026-11-29 12:00:00,123",
      "2026-11-29 12:00:00:123:1(0x1):ZOO_ERROR@f@1: no milliseconds",
      "2026-11-29 12:00:00,12:1(0x1):ZOO_ERROR@f@1: two-digit ms",
      "26-11-29 12:00:00,123:1(0x1):ZOO_ERROR@f@1: two-digit year",
      "2026-11-29T12:00:00,123:1(0x1):ZOO_ERROR@f@1: a T",
      "2026-11-29 12:00:00,123::ZOO_ERROR@f@1: no pid",
      "2026-11-29 12:00:00,123:1(7f3a):ZOO_ERROR@f@1: thread without 0x",
      "2026-11-29 12:00:00,123:1(0x):ZOO_ERROR@f@1: empty thread",
      "2026-11-29 12:00:00,123:1(0x1:ZOO_ERROR@f@1: unclosed thread",
      "2026-11-29 12:00:00,123:1(0x1)ZOO_ERROR@f@1: no colon",
      "2026-11-29 12:00:00,123:1(0x1):ZOO_INVALID@f@1: unknown level",
      "2026-11-29 12:00:00,123:1(0x1):ZOO_TRACE@f@1: unknown level",
      "2026-11-29 12:00:00,123:1(0x1):zoo_error@f@1: lower case",
      "2026-11-29 12:00:00,123:1(0x1):ZOO_ERROR@@1: no function",
      "2026-11-29 12:00:00,123:1(0x1):ZOO_ERROR@1f@1: not an identifier",
      "2026-11-29 12:00:00,123:1(0x1):ZOO_ERROR@f@: no line number",
      "2026-11-29 12:00:00,123:1(0x1):ZOO_ERROR@f@1 no colon",
      "2026-11-29 12:00:00,123:1(0x1):ZOO_ERROR@f@1:no space",
      "2026-11-29 12:00:00,123:1(0x1):ZOO_ERROR@f",
  };
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
    zkrc_log_level level;
    const char *text;
    if (parse(bad[i], &level, &text))
      printf("\n    taken: %s ", bad[i]);
    CU_ASSERT_FALSE(parse(bad[i], &level, &text));
    CU_ASSERT_EQUAL(level, 0);
    CU_ASSERT_STRING_EQUAL(text, "");
  }
}

/* The client's routine retries are INFO (log.h: "a retry"); the rest keep
 * the client's level. */
static void test_client_retries_are_info(void) {
  CU_ASSERT_EQUAL(zkrc__log_client_level(ZKRC_LOG_ERROR, REFUSED),
                  ZKRC_LOG_INFO);
  CU_ASSERT_EQUAL(
      zkrc__log_client_level(
          ZKRC_LOG_ERROR,
          "zookeeper_process@2967: Socket [127.0.0.1:2181] zk retcode=-4, "
          "errno=111(Connection refused): server refused to accept the "
          "client"),
      ZKRC_LOG_INFO);
  CU_ASSERT_EQUAL(
      zkrc__log_client_level(
          ZKRC_LOG_ERROR,
          "zookeeper_interest@2647: Socket [10.0.0.1:2181] zk retcode=-7, "
          "errno=110(Connection timed out): connection to 10.0.0.1:2181 "
          "timed out (exceeded timeout by 3ms)"),
      ZKRC_LOG_INFO);
  CU_ASSERT_EQUAL(
      zkrc__log_client_level(ZKRC_LOG_WARN,
                             "zookeeper_interest@2561: Delaying connection "
                             "after exhaustively trying all servers "
                             "[127.0.0.1:2181]"),
      ZKRC_LOG_INFO);
  /* Not routine: an expiry, a TLS failure, a name that does not resolve,
   * a late I/O thread; and a retry's text at another level. */
  CU_ASSERT_EQUAL(
      zkrc__log_client_level(
          ZKRC_LOG_ERROR,
          "check_events@3048: Socket [127.0.0.1:2181] zk retcode=-112, "
          "errno=116(Stale file handle): sessionId=0x1 has expired."),
      ZKRC_LOG_ERROR);
  CU_ASSERT_EQUAL(
      zkrc__log_client_level(ZKRC_LOG_ERROR,
                             "zookeeper_interest@2804: Socket [h:2281] zk "
                             "retcode=-9, errno=0(Success): error creating "
                             "ssl context"),
      ZKRC_LOG_ERROR);
  CU_ASSERT_EQUAL(zkrc__log_client_level(ZKRC_LOG_ERROR,
                                         "resolve_hosts@862: could not "
                                         "resolve zk1.example:2181"),
                  ZKRC_LOG_ERROR);
  CU_ASSERT_EQUAL(zkrc__log_client_level(ZKRC_LOG_WARN,
                                         "zookeeper_interest@2532: Exceeded "
                                         "deadline by 12ms"),
                  ZKRC_LOG_WARN);
  CU_ASSERT_EQUAL(zkrc__log_client_level(ZKRC_LOG_DEBUG, REFUSED),
                  ZKRC_LOG_DEBUG);
  CU_ASSERT_EQUAL(
      zkrc__log_client_level(ZKRC_LOG_ERROR, "f@1: Socket zk retcode=-40,"),
      ZKRC_LOG_ERROR);
}

/* Through the trampoline: a client line reaches the handler stripped, at
 * its mapped level; a malformed one as it is (without the newline), at
 * INFO. */
static void test_trampoline_strips_and_maps(void) {
  start_recording(ZKRC_LOG_DEBUG);
  zkrc_log_set_rate_limit(0, 0);
  zkrc__log_trampoline(
      "2026-11-29 12:00:00,123:12345(0x7f3a):ZOO_ERROR@" REFUSED "\n");
  zkrc__log_trampoline("2026-11-29 12:00:00,123:12345(0x7f3a):ZOO_WARN@"
                       "zoo_cycle_next_server@99: something else");
  zkrc__log_trampoline("not the client's form: ZOO_ERROR@f@1: x\r\n");
  g_mutex_lock(&mu);
  /* (A summary of lines held back in an earlier test may come first.) */
  GPtrArray *client = g_ptr_array_new();
  for (guint i = 0; i < lines->len; i++)
    if (((logged *)g_ptr_array_index(lines, i))->origin == ZKRC_LOG_ZOOKEEPER)
      g_ptr_array_add(client, g_ptr_array_index(lines, i));
  CU_ASSERT_EQUAL_FATAL(client->len, 3);
  logged *refused = g_ptr_array_index(client, 0);
  logged *warned = g_ptr_array_index(client, 1);
  logged *odd = g_ptr_array_index(client, 2);
  CU_ASSERT_EQUAL(refused->origin, ZKRC_LOG_ZOOKEEPER);
  CU_ASSERT_EQUAL(refused->level, ZKRC_LOG_INFO);
  CU_ASSERT_STRING_EQUAL(refused->text, REFUSED);
  CU_ASSERT_EQUAL(warned->level, ZKRC_LOG_WARN);
  CU_ASSERT_STRING_EQUAL(warned->text,
                         "zoo_cycle_next_server@99: something else");
  CU_ASSERT_EQUAL(odd->origin, ZKRC_LOG_ZOOKEEPER);
  CU_ASSERT_EQUAL(odd->level, ZKRC_LOG_INFO);
  CU_ASSERT_STRING_EQUAL(odd->text, "not the client's form: ZOO_ERROR@f@1: x");
  g_ptr_array_free(client, TRUE);
  g_mutex_unlock(&mu);
  stop_recording();
}

/* -------------------------------------------------- the bucket, in memory */

#define SECOND_US G_USEC_PER_SEC

/* What a flood through @p b did: when each line (passed or summary)
 * reached the handler, and the accounting. */
typedef struct flood {
  GArray *delivered_us;
  unsigned long offered, passed, summaries, summarized;
} flood;

/* @p per_second lines a second through @p b from @p from_us for
 * @p seconds. */
static void offer(zkrc__log_bucket *b, flood *f, gint64 from_us, int seconds,
                  int per_second) {
  for (gint64 i = 0; i < (gint64)seconds * per_second; i++) {
    gint64 now = from_us + i * SECOND_US / per_second;
    zkrc__log_verdict v = zkrc__log_bucket_take(b, ZKRC_LOG_INFO, now);
    f->offered++;
    if (v.summary > 0) {
      f->summaries++;
      f->summarized += v.summary;
      g_array_append_val(f->delivered_us, now);
    }
    if (v.pass) {
      f->passed++;
      g_array_append_val(f->delivered_us, now);
    }
  }
}

/* The most lines delivered in any window of @p window_us. */
static int busiest_window(const flood *f, gint64 window_us) {
  int most = 0;
  const gint64 *t = (const gint64 *)(void *)f->delivered_us->data;
  for (guint i = 0, j = 0; i < f->delivered_us->len; i++) {
    while (j < f->delivered_us->len && t[j] <= t[i] + window_us)
      j++;
    most = MAX(most, (int)(j - i));
  }
  return most;
}

/* A bucket of 20 and 5 a second under 100 lines a second for a minute: no
 * window of 10 s gets more than 20 + 5 * 10 lines, summaries included;
 * lines keep passing (summaries do not crowd them out); every line held
 * back is told; a summary at most every 10 s while the flood goes on. */
static void test_bucket_bounds_every_window(void) {
  zkrc__log_bucket b = {.burst = 20, .per_second = 5, .tokens = 20.0};
  flood f = {g_array_new(FALSE, FALSE, sizeof(gint64)), 0, 0, 0, 0};
  gint64 start = 1000 * SECOND_US;
  offer(&b, &f, start, 60, 100);
  int most = busiest_window(&f, 10 * SECOND_US);
  printf("\n    a minute of 100 lines/s: %lu passed, %lu summaries of %lu; "
         "busiest 10 s: %d ",
         f.passed, f.summaries, f.summarized, most);
  CU_ASSERT(most <= 20 + 5 * 10);
  CU_ASSERT(most >= 20 + 5 * 10 - 1); /* and the budget is used */
  CU_ASSERT(f.passed >= 20 + 5 * 60 - 8);
  CU_ASSERT(f.summaries >= 6 && f.summaries <= 7);
  CU_ASSERT_EQUAL(f.passed + f.summarized + b.held_back, f.offered);
  /* The flood is over; the next line, a minute later, tells the rest. */
  gint64 later = start + 120 * SECOND_US;
  zkrc__log_verdict v = zkrc__log_bucket_take(&b, ZKRC_LOG_WARN, later);
  CU_ASSERT_TRUE(v.pass);
  CU_ASSERT(v.summary > 0);
  CU_ASSERT_EQUAL(f.passed + f.summarized + v.summary, f.offered);
  g_array_free(f.delivered_us, TRUE);
}

/* The summary takes the level of the most severe line held back, and is
 * told as soon as the limit lets up (room for it and the line). */
static void test_bucket_summary_level(void) {
  zkrc__log_bucket b = {.burst = 2, .per_second = 1, .tokens = 2.0};
  gint64 t = 1000 * SECOND_US;
  CU_ASSERT_TRUE(zkrc__log_bucket_take(&b, ZKRC_LOG_INFO, t).pass);
  CU_ASSERT_TRUE(zkrc__log_bucket_take(&b, ZKRC_LOG_INFO, t).pass);
  CU_ASSERT_FALSE(zkrc__log_bucket_take(&b, ZKRC_LOG_DEBUG, t).pass);
  CU_ASSERT_FALSE(zkrc__log_bucket_take(&b, ZKRC_LOG_WARN, t).pass);
  CU_ASSERT_FALSE(zkrc__log_bucket_take(&b, ZKRC_LOG_INFO, t).pass);
  /* A second later one token: the summary is due (the first), and takes
   * it; the line waits. */
  zkrc__log_verdict v = zkrc__log_bucket_take(&b, ZKRC_LOG_INFO, t + SECOND_US);
  CU_ASSERT_EQUAL(v.summary, 3);
  CU_ASSERT_EQUAL(v.summary_level, ZKRC_LOG_WARN);
  CU_ASSERT_FALSE(v.pass);
  /* Two tokens (the burst) later: the summary of that one and the line. */
  v = zkrc__log_bucket_take(&b, ZKRC_LOG_DEBUG, t + 3 * SECOND_US);
  CU_ASSERT_EQUAL(v.summary, 1);
  CU_ASSERT_EQUAL(v.summary_level, ZKRC_LOG_INFO);
  CU_ASSERT_TRUE(v.pass);
  /* No limit: every line passes. */
  zkrc__log_bucket none = {.burst = 0, .per_second = 0};
  for (int i = 0; i < 1000; i++)
    CU_ASSERT_TRUE(zkrc__log_bucket_take(&none, ZKRC_LOG_INFO, t).pass);
}

/* Does @p text start where the client made it ("function@line: ")? */
static gboolean starts_with_location(const char *text) {
  return g_regex_match_simple("^[A-Za-z_][A-Za-z0-9_]*@[0-9]+: ", text, 0, 0);
}

/* At INFO: the client's lines come as its own, with the level it gave
 * them, from "function@line: " on; the library says that the session
 * connected and closed. */
static void test_lines_carry_level_and_origin(void) {
  start_recording(ZKRC_LOG_INFO);
  zkrc_session *s = zkt_session();
  int64_t id = zkrc_session_id(s);
  char *hex = g_strdup_printf("0x%" G_GINT64_MODIFIER "x", id);
  zkrc_session_close(s);
  g_mutex_lock(&mu);
  CU_ASSERT(count_lines(ZKRC_LOG_ZOOKEEPER, ZKRC_LOG_INFO,
                        "Initiating client connection", NULL) > 0);
  CU_ASSERT_EQUAL(count_lines(ZKRC_LOG_ZOOKEEPER, 0, "ZOO_", NULL), 0);
  for (guint i = 0; i < lines->len; i++) {
    logged *l = g_ptr_array_index(lines, i);
    if (l->origin == ZKRC_LOG_ZOOKEEPER && !starts_with_location(l->text)) {
      printf("\n    not stripped: %s ", l->text);
      CU_FAIL("a client line with its prefix");
    }
  }
  CU_ASSERT_EQUAL(
      count_lines(ZKRC_LOG_LIBRARY, ZKRC_LOG_INFO, hex, ": connected"), 1);
  CU_ASSERT_EQUAL(
      count_lines(ZKRC_LOG_LIBRARY, ZKRC_LOG_INFO, ": closed", NULL), 1);
  g_mutex_unlock(&mu);
  g_free(hex);
  stop_recording();
}

/* At the default level (WARN), a held lock lost to an expiry is told as a
 * warning naming the lock, the expiry as an error (log.h: a session lost
 * failed for good); nothing of INFO is produced. */
static void test_lost_hold_warns_expiry_errs(void) {
  start_recording(ZKRC_LOG_WARN);
  char *path = zkt_path("log-lost");
  zkrc_session *s = zkt_session();
  char *hex =
      g_strdup_printf("session 0x%" G_GINT64_MODIFIER "x", zkrc_session_id(s));
  zkrc_lock *lk = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_new(&lk, s, path, NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lk, 5000));
  zkt_expire(s);
  CU_ASSERT(wait_line(ZKRC_LOG_LIBRARY, ZKRC_LOG_WARN, path, "lost the node",
                      10000) == 1);
  /* It names the session that expired (its handle is gone by then). */
  CU_ASSERT(wait_line(ZKRC_LOG_LIBRARY, ZKRC_LOG_ERROR, hex, ": expired",
                      10000) == 1);
  g_free(hex);
  zkrc_lock_release(lk);
  zkrc_lock_free(lk);
  zkrc_session_close(s);
  g_mutex_lock(&mu);
  for (guint i = 0; i < lines->len; i++)
    CU_ASSERT(((logged *)g_ptr_array_index(lines, i))->level <= ZKRC_LOG_WARN);
  g_mutex_unlock(&mu);
  g_free(path);
  stop_recording();
}

/* A port where nothing listens: every connection attempt is refused. */
static int refusing_port(int *fd) {
  *fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (*fd < 0 || bind(*fd, (struct sockaddr *)&a, sizeof a) != 0 ||
      getsockname(*fd, (struct sockaddr *)&a, &len) != 0)
    return -1;
  return ntohs(a.sin_port);
}

/* Lines that reached the handler from @p from_us to @p to_us: the
 * client's, the summaries of those held back (and how many they tell of),
 * the library's other lines. */
typedef struct window_count {
  int client, summaries, library;
  unsigned long held;
} window_count;

static window_count count_window(gint64 from_us, gint64 to_us) {
  window_count w = {0, 0, 0, 0};
  for (guint i = 0; i < lines->len; i++) {
    logged *l = g_ptr_array_index(lines, i);
    unsigned long n;
    if (l->at_us < from_us || l->at_us > to_us)
      continue;
    if (l->origin == ZKRC_LOG_ZOOKEEPER) {
      w.client++;
    } else if (sscanf(l->text, "%lu lines of the ZooKeeper client", &n) == 1) {
      w.summaries++;
      w.held += n;
    } else {
      w.library++;
    }
  }
  return w;
}

/* How many lines were held back since the last summary before @p end_us:
 * with the limit off, the next line of the client brings their summary.
 * (For the record: they include the few held since @p end_us.) */
static unsigned long held_since(gint64 end_us) {
  zkrc_log_set_rate_limit(0, 0);
  gint64 deadline = g_get_monotonic_time() + 5 * G_TIME_SPAN_SECOND;
  unsigned long held = 0;
  g_mutex_lock(&mu);
  do {
    window_count late = count_window(end_us + 1, G_MAXINT64);
    held = late.held;
  } while (held == 0 && g_cond_wait_until(&cond, &mu, deadline));
  g_mutex_unlock(&mu);
  return held;
}

/* Wait until @p until_us (a measurement window, not an event). */
static void measure_until(gint64 until_us) {
  g_mutex_lock(&mu);
  while (g_cond_wait_until(&cond, &mu, until_us))
    ;
  g_mutex_unlock(&mu);
}

/* Issue 33: while no server answers, the client writes lines for every
 * attempt (dozens a second).  Over 10 s of refused connections, at the
 * default limit (20, then 5 a second), no more than log.h's burst +
 * per_second * T of them reach the handler, the summaries of what was held
 * back included (the old bucket let every passing line bring a summary of
 * its own: about 10 lines a second).  The refused connections arrive at
 * INFO (a retry). */
static void test_refused_connections_rate(void) {
  int fd;
  int port = refusing_port(&fd);
  CU_ASSERT_FATAL(port > 0);
  start_recording(ZKRC_LOG_INFO);
  char *hosts = g_strdup_printf("127.0.0.1:%d", port);
  zkrc_session_options o;
  zkrc_session_options_init(&o);
  o.session_timeout_ms = 4000; /* a retry every 67 ms (1/60 of it) */
  zkrc_session *s = NULL;
  gint64 start = g_get_monotonic_time();
  zkrc_log_set_rate_limit(20, 5); /* the defaults; the bucket starts full */
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_new(&s, hosts, &o));
  gint64 end = start + 10 * G_TIME_SPAN_SECOND;
  measure_until(end);
  g_mutex_lock(&mu);
  window_count w = count_window(start, end);
  int refused_info = count_lines(ZKRC_LOG_ZOOKEEPER, ZKRC_LOG_INFO,
                                 "Connection refused", NULL);
  int refused_other =
      count_lines(ZKRC_LOG_ZOOKEEPER, 0, "Connection refused", NULL) -
      refused_info;
  g_mutex_unlock(&mu);
  double seconds = (double)(end - start) / G_USEC_PER_SEC;
  double promised = 20 + 5 * seconds;
  printf("\n    %.1f s of refused connections: %d lines reached the handler "
         "(%d of the client, %d summaries of %lu held back; log.h: at most "
         "%.0f), and %d of the library's own; ",
         seconds, w.client + w.summaries, w.client, w.summaries, w.held,
         promised, w.library);
  printf("the client wrote about %lu ", w.client + w.held + held_since(end));
  CU_ASSERT(w.client + w.summaries <= promised);
  CU_ASSERT(w.client >= 20); /* the flood went past the burst */
  CU_ASSERT(w.summaries >= 1 && w.held > 0);
  CU_ASSERT(refused_info > 0);
  CU_ASSERT_EQUAL(refused_other, 0);
  zkrc_session_close(s);
  close(fd);
  g_free(hosts);
  stop_recording();
}

/* The README's minimal program, configuring no log at all, prints none of
 * the client's INFO lines (it used to print a dozen). */
static void test_quiet_by_default(void) {
  char *env[] = {g_strdup_printf("ZKR_SERVERS=%s", zkt_hosts()), NULL};
  char *argv[] = {MINIMAL, NULL};
  zkrc_spawn_options o;
  zkrc_spawn_options_init(&o);
  o.pipe_stdout = 1;
  o.pipe_stderr = 1;
  o.extra_env = env;
  zkrc_child c;
  CU_ASSERT_EQUAL_FATAL(zkrc_spawn(&c, argv, &o), 0);
  GString *err = g_string_new(NULL), *out = g_string_new(NULL);
  char buf[4096];
  ssize_t n;
  while ((n = read(c.err_fd, buf, sizeof buf)) > 0)
    g_string_append_len(err, buf, n);
  while ((n = read(c.out_fd, buf, sizeof buf)) > 0)
    g_string_append_len(out, buf, n);
  CU_ASSERT_EQUAL(zkrc_child_wait(&c, 20000), 0);
  zkrc_child_close(&c);
  CU_ASSERT_PTR_NOT_NULL(strstr(out->str, "held with token"));
  gboolean chatty = strstr(err->str, "ZOO_INFO") != NULL ||
                    strstr(err->str, "zookeeper: info:") != NULL;
  CU_ASSERT_FALSE(chatty);
  if (chatty)
    printf("\n    stderr: %s", err->str);
  g_string_free(err, TRUE);
  g_string_free(out, TRUE);
  g_free(env[0]);
}

/* The log hook never runs with a zkrecipes mutex held.  At DEBUG the
 * ZooKeeper client logs every request it sends ("Sending request ...")
 * from the sending thread; zkrc_election_resign() withdraws its node
 * under the election's mutex and zkrc_multilock_hold_cancel() cancels a
 * member under the set's: no line may reach the hook on this thread
 * inside those calls (the queue hands them to the session's worker). */
static _Thread_local int inside_call;
static gint lines_inside;

static void record_inside(zkrc_log_level level, zkrc_log_origin origin,
                          const char *line, void *arg) {
  if (inside_call)
    g_atomic_int_inc(&lines_inside);
  record(level, origin, line, arg);
}

static void on_set_done(zkrc_multilock_hold *set,
                        const zkrc_multilock_acquired_info *info, void *arg) {
  g_mutex_lock(&mu);
  *(int *)arg = info->status == ZKRC_OK ? 1 : 2;
  g_cond_broadcast(&cond);
  g_mutex_unlock(&mu);
}

static void test_no_line_under_a_mutex(void) {
  start_recording(ZKRC_LOG_DEBUG);
  zkrc_log_set_rate_limit(0, 0); /* every line */
  zkrc_log_set_handler(record_inside, NULL);
  zkrc_session *s = zkt_session(), *other = zkt_session();
  char *epath = zkt_path("log-under-elect");
  zkrc_election *e = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_election_new(&e, s, epath, NULL), ZKRC_OK);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_join(e));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_wait_leader(e, 5000));
  inside_call = 1;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_resign(e));
  inside_call = 0;
  int in_resign = g_atomic_int_get(&lines_inside);

  char *a = zkt_path("log-under-a"), *b = zkt_path("log-under-b");
  zkrc_lock *theirs = NULL, *la = NULL, *lb = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_new(&theirs, other, b, NULL), ZKRC_OK);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(theirs, 5000));
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_new(&la, s, a, NULL), ZKRC_OK);
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_new(&lb, s, b, NULL), ZKRC_OK);
  zkrc_lock *set[] = {la, lb};
  int done = 0;
  zkrc_multilock_hold *h = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkt_multilock_acquire_async(set, 2, ZKRC_WAIT_FOREVER,
                                                     on_set_done, &done, &h));
  zhandle_t *zh = zkt_raw();
  CU_ASSERT_FATAL(zkt_wait_children(zh, b, 2, 5000));
  inside_call = 1;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_multilock_hold_cancel(h));
  inside_call = 0;
  int in_cancel = g_atomic_int_get(&lines_inside) - in_resign;
  CU_ASSERT_EQUAL(in_resign, 0);
  CU_ASSERT_EQUAL(in_cancel, 0);
  /* The client did log them, elsewhere. */
  g_mutex_lock(&mu);
  CU_ASSERT(count_lines(ZKRC_LOG_ZOOKEEPER, ZKRC_LOG_DEBUG, "", NULL) > 0);
  gint64 end = g_get_monotonic_time() + 10 * G_TIME_SPAN_SECOND;
  while (done == 0 && g_cond_wait_until(&cond, &mu, end))
    ;
  CU_ASSERT_EQUAL(done, 2); /* canceled */
  g_mutex_unlock(&mu);
  zookeeper_close(zh);
  zkrc_lock_free(la);
  zkrc_lock_free(lb);
  zkrc_lock_free(theirs);
  zkrc_election_free(e);
  zkrc_session_close(s);
  zkrc_session_close(other);
  stop_recording();
  g_free(a);
  g_free(b);
  g_free(epath);
}

static void add_suites(void) {
  ZKT_SUITE("log",
            {"levels are syslog priorities", test_levels_are_syslog_priorities},
            {"client prefix is stripped", test_client_prefix_is_stripped},
            {"malformed client lines", test_malformed_client_lines},
            {"client retries are info", test_client_retries_are_info},
            {"trampoline strips and maps", test_trampoline_strips_and_maps},
            {"bucket bounds every window", test_bucket_bounds_every_window},
            {"bucket summary level", test_bucket_summary_level},
            {"lines carry level and origin", test_lines_carry_level_and_origin},
            {"lost hold warns, expiry errs", test_lost_hold_warns_expiry_errs},
            {"refused connections rate", test_refused_connections_rate},
            {"quiet by default", test_quiet_by_default},
            {"no line under a mutex", test_no_line_under_a_mutex});
}

int main(void) { return zkt_run("test_log", add_suites); }
