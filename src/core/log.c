/*
 * Log lines: the library's own (zkrc__log) and the ZooKeeper client's
 * (zkrc__log_trampoline, given to every handle: the client's per-handle log
 * callback carries no user pointer), both to one process-wide handler,
 * each with a level (zkrecipes/log.h).  The client's lines lose their
 * prefix (timestamp, process, thread, level), get a level of ours (its
 * routine retries INFO) and are rate-limited by a token bucket, which the
 * summaries of what it held back draw on too: the bound log.h states holds
 * for every line of the client's that reaches the handler.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>
#include <zookeeper/zookeeper.h>

#include "core/log_internal.h"
#include "zkrecipes.h"

static void log_to_stderr(zkrc_log_level level, zkrc_log_origin origin,
                          const char *line, void *arg) {
  (void)arg;
  fprintf(stderr, "%s: %s: %s\n",
          origin == ZKRC_LOG_ZOOKEEPER ? "zookeeper" : "zkrecipes",
          zkrc_log_level_name(level), line);
}

/* The handler and the bucket (of the client's lines), under log_mutex; the
 * level is read without it (a stale read only lets one line more or less
 * through). */
static GMutex log_mutex;
static zkrc_log_fn log_handler = log_to_stderr;
static void *log_arg;
static gint log_level = ZKRC_LOG_WARN;
static gint level_chosen; /* zkrc_log_set_level() was called */

static zkrc__log_bucket bucket = {.burst = 20, .per_second = 5, .tokens = 20.0};

void zkrc_log_set_handler(zkrc_log_fn fn, void *arg) {
  g_mutex_lock(&log_mutex);
  log_handler = fn;
  log_arg = arg;
  g_mutex_unlock(&log_mutex);
}

const char *zkrc_log_level_name(zkrc_log_level level) {
  switch (level) {
  case ZKRC_LOG_ERROR:
    return "error";
  case ZKRC_LOG_WARN:
    return "warn";
  case ZKRC_LOG_NOTICE:
    return "notice";
  case ZKRC_LOG_INFO:
    return "info";
  case ZKRC_LOG_DEBUG:
    return "debug";
  }
  return "unknown";
}

static gboolean level_valid(int level) {
  return level >= ZKRC_LOG_ERROR && level <= ZKRC_LOG_DEBUG;
}

/* The client has no NOTICE: at NOTICE it logs warnings and errors. */
static ZooLogLevel client_level(int level) {
  return level <= ZKRC_LOG_ERROR    ? ZOO_LOG_LEVEL_ERROR
         : level <= ZKRC_LOG_NOTICE ? ZOO_LOG_LEVEL_WARN
         : level == ZKRC_LOG_INFO   ? ZOO_LOG_LEVEL_INFO
                                    : ZOO_LOG_LEVEL_DEBUG;
}

void zkrc_log_set_level(zkrc_log_level level) {
  if (!level_valid(level))
    return;
  g_atomic_int_set(&log_level, level);
  g_atomic_int_set(&level_chosen, 1);
  zoo_set_debug_level(client_level(level));
}

zkrc_log_level zkrc_log_get_level(void) {
  return (zkrc_log_level)g_atomic_int_get(&log_level);
}

void zkrc__log_before_open(void) {
  if (!g_atomic_int_get(&level_chosen))
    zoo_set_debug_level(client_level(g_atomic_int_get(&log_level)));
}

void zkrc_log_set_rate_limit(int burst, int per_second) {
  if (burst < 0 || per_second < 0 || (burst == 0 && per_second > 0))
    return; /* a bucket of 0 would hold back every line, never saying so */
  g_mutex_lock(&log_mutex);
  bucket.burst = burst;
  bucket.per_second = per_second;
  bucket.tokens = burst;
  bucket.refilled_us = g_get_monotonic_time();
  g_mutex_unlock(&log_mutex);
}

gboolean zkrc__log_enabled(zkrc_log_level level) {
  return (int)level <= g_atomic_int_get(&log_level);
}

static void deliver(zkrc_log_level level, zkrc_log_origin origin,
                    const char *line) {
  g_mutex_lock(&log_mutex);
  zkrc_log_fn fn = log_handler;
  void *arg = log_arg;
  g_mutex_unlock(&log_mutex);
  if (fn)
    fn(level, origin, line, arg);
}

void zkrc__log(zkrc_log_level level, const char *fmt, ...) {
  if (!zkrc__log_enabled(level))
    return;
  va_list ap;
  va_start(ap, fmt);
  char *line = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  deliver(level, ZKRC_LOG_LIBRARY, line);
  g_free(line);
}

/* ------------------------------------------------ the ZooKeeper client */

/* A cursor over a client line: each skip_ advances it past what it expects,
 * or says FALSE (the line is not in the client's form). */
static gboolean skip_char(const char **p, char c) {
  if (**p != c)
    return FALSE;
  (*p)++;
  return TRUE;
}

/* At least @p min and at most @p max (0: no limit) decimal digits. */
static gboolean skip_digits(const char **p, int min, int max) {
  int n = 0;
  while (g_ascii_isdigit((*p)[n]) && (max == 0 || n < max))
    n++;
  *p += n;
  return n >= min;
}

static gboolean skip_hex_number(const char **p) {
  if (!skip_char(p, '0') || !skip_char(p, 'x') || !g_ascii_isxdigit(**p))
    return FALSE;
  while (g_ascii_isxdigit(**p))
    (*p)++;
  return TRUE;
}

/* "2026-11-29 12:00:00,123" (zk_log.c time_now(): "%Y-%m-%d %H:%M:%S" and
 * ",%03d" for the milliseconds). */
static gboolean skip_timestamp(const char **p) {
  return skip_digits(p, 4, 4) && skip_char(p, '-') && skip_digits(p, 2, 2) &&
         skip_char(p, '-') && skip_digits(p, 2, 2) && skip_char(p, ' ') &&
         skip_digits(p, 2, 2) && skip_char(p, ':') && skip_digits(p, 2, 2) &&
         skip_char(p, ':') && skip_digits(p, 2, 2) && skip_char(p, ',') &&
         skip_digits(p, 3, 3);
}

/* ":12345(0x7f3a...):" from a threaded client, ":12345:" from the other. */
static gboolean skip_pid_and_thread(const char **p) {
  if (!skip_char(p, ':') || !skip_digits(p, 1, 0))
    return FALSE;
  if (skip_char(p, '(') && !(skip_hex_number(p) && skip_char(p, ')')))
    return FALSE;
  return skip_char(p, ':');
}

/* "ZOO_WARN@": the client's level, as ours. */
static gboolean take_client_level(const char **p, zkrc_log_level *level) {
  static const struct {
    const char *tag;
    zkrc_log_level level;
  } tags[] = {{"ZOO_ERROR@", ZKRC_LOG_ERROR},
              {"ZOO_WARN@", ZKRC_LOG_WARN},
              {"ZOO_INFO@", ZKRC_LOG_INFO},
              {"ZOO_DEBUG@", ZKRC_LOG_DEBUG}};
  for (size_t i = 0; i < G_N_ELEMENTS(tags); i++)
    if (g_str_has_prefix(*p, tags[i].tag)) {
      *p += strlen(tags[i].tag);
      *level = tags[i].level;
      return TRUE;
    }
  return FALSE;
}

/* "zookeeper_interest@2597: ": where in the client (a C identifier, '@',
 * the line).  Checked, not skipped: it stays in the text. */
static gboolean is_client_location(const char *p) {
  if (!g_ascii_isalpha(*p) && *p != '_')
    return FALSE;
  while (g_ascii_isalnum(*p) || *p == '_')
    p++;
  return skip_char(&p, '@') && skip_digits(&p, 1, 0) && skip_char(&p, ':') &&
         skip_char(&p, ' ');
}

gboolean zkrc__log_parse_client_line(const char *line, zkrc_log_level *level,
                                     const char **text) {
  const char *p = line;
  zkrc_log_level said;
  if (!skip_timestamp(&p) || !skip_pid_and_thread(&p) ||
      !take_client_level(&p, &said) || !is_client_location(p))
    return FALSE;
  *level = said;
  *text = p;
  return TRUE;
}

/* The message of a parsed line's text, after "function@line: ". */
static const char *client_message(const char *text) {
  const char *colon = strstr(text, ": ");
  return colon ? colon + 2 : text;
}

/* "Socket [host:port] zk retcode=-4, errno=111(Connection refused): ...":
 * a connection that failed or dropped (ZCONNECTIONLOSS) or timed out
 * (ZOPERATIONTIMEOUT), which the client tries again by itself. */
static gboolean is_connection_retry(const char *message) {
  if (!g_str_has_prefix(message, "Socket "))
    return FALSE;
  char loss[32], timeout[32];
  g_snprintf(loss, sizeof loss, " zk retcode=%d,", ZCONNECTIONLOSS);
  g_snprintf(timeout, sizeof timeout, " zk retcode=%d,", ZOPERATIONTIMEOUT);
  return strstr(message, loss) != NULL || strstr(message, timeout) != NULL;
}

zkrc_log_level zkrc__log_client_level(zkrc_log_level said, const char *text) {
  const char *message = client_message(text);
  if (said == ZKRC_LOG_ERROR && is_connection_retry(message))
    return ZKRC_LOG_INFO;
  if (said == ZKRC_LOG_WARN &&
      g_str_has_prefix(message, "Delaying connection after exhaustively"))
    return ZKRC_LOG_INFO; /* the pause between two rounds of retries */
  return said;
}

static void bucket_refill(zkrc__log_bucket *b, gint64 now_us) {
  if (b->refilled_us != 0 && now_us > b->refilled_us)
    b->tokens +=
        (double)(now_us - b->refilled_us) / G_USEC_PER_SEC * b->per_second;
  if (b->tokens > b->burst)
    b->tokens = b->burst;
  b->refilled_us = now_us;
}

/* Is it time to tell what was held back?  When the limit starts holding
 * lines back (the first summary, or the first in an interval), and when
 * it lets up: a passing line finds room for the summary and itself. */
static gboolean summary_due(const zkrc__log_bucket *b, gint64 now_us) {
  if (b->held_back == 0)
    return FALSE;
  return b->summary_us == 0 ||
         now_us - b->summary_us >= ZKRC__LOG_SUMMARY_INTERVAL_US ||
         b->tokens >= 2.0;
}

/* Take what was held back into @p v, to be told now. */
static void take_summary(zkrc__log_bucket *b, zkrc__log_verdict *v,
                         gint64 now_us) {
  v->summary = b->held_back;
  v->summary_level = b->held_worst;
  b->held_back = 0;
  b->summary_us = now_us;
}

zkrc__log_verdict zkrc__log_bucket_take(zkrc__log_bucket *b,
                                        zkrc_log_level level, gint64 now_us) {
  zkrc__log_verdict v = {FALSE, 0, ZKRC_LOG_DEBUG};
  if (b->per_second == 0) { /* no limit */
    if (b->held_back > 0)
      take_summary(b, &v, now_us);
    v.pass = TRUE;
    return v;
  }
  bucket_refill(b, now_us);
  /* The summary is a line like any other: it takes a token. */
  if (summary_due(b, now_us) && b->tokens >= 1.0) {
    b->tokens -= 1.0;
    take_summary(b, &v, now_us);
  }
  if (b->tokens >= 1.0) {
    b->tokens -= 1.0;
    v.pass = TRUE;
  } else {
    if (b->held_back == 0 || level < b->held_worst)
      b->held_worst = level;
    b->held_back++;
  }
  return v;
}

/* Lines logged while a zkrecipes mutex is held (zookeeper_init2() logs
 * from the calling thread) wait here, per thread, to be delivered later
 * without it. */
static _Thread_local GPtrArray *deferred;
static _Thread_local int deferring;

typedef struct held_line {
  zkrc_log_level level;
  char *text;
} held_line;

static void held_line_free(gpointer p) {
  held_line *h = p;
  g_free(h->text);
  g_free(h);
}

static void client_line(zkrc_log_level level, const char *line) {
  g_mutex_lock(&log_mutex);
  zkrc__log_verdict v =
      zkrc__log_bucket_take(&bucket, level, g_get_monotonic_time());
  g_mutex_unlock(&log_mutex);
  if (v.summary > 0 && zkrc__log_enabled(v.summary_level)) {
    char *said = g_strdup_printf(
        "%lu lines of the ZooKeeper client were held back (rate limit)",
        v.summary);
    deliver(v.summary_level, ZKRC_LOG_LIBRARY, said);
    g_free(said);
  }
  if (v.pass)
    deliver(level, ZKRC_LOG_ZOOKEEPER, line);
}

/* A copy of the client's line as handlers get it: from @p text on, without
 * the trailing newline. */
static char *client_text(const char *text) {
  size_t len = strlen(text);
  while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r'))
    len--;
  return g_strndup(text, len);
}

void zkrc__log_trampoline(const char *message) {
  if (message == NULL)
    return;
  /* A line not in the client's form passes as it is, at INFO. */
  zkrc_log_level level = ZKRC_LOG_INFO;
  const char *text = message;
  if (zkrc__log_parse_client_line(message, &level, &text))
    level = zkrc__log_client_level(level, text);
  if (!zkrc__log_enabled(level))
    return;
  char *line = client_text(text);
  if (deferring) {
    held_line *h = g_new(held_line, 1);
    h->level = level;
    h->text = line;
    if (deferred == NULL)
      deferred = g_ptr_array_new_with_free_func(held_line_free);
    g_ptr_array_add(deferred, h);
    return;
  }
  client_line(level, line);
  g_free(line);
}

void zkrc__log_defer_begin(void) { deferring++; }

void *zkrc__log_defer_end(void) {
  if (--deferring > 0 || deferred == NULL)
    return NULL;
  GPtrArray *lines = deferred;
  deferred = NULL;
  return lines;
}

void zkrc__log_flush(void *lines) {
  GPtrArray *a = lines;
  for (guint i = 0; a && i < a->len; i++) {
    held_line *h = g_ptr_array_index(a, i);
    client_line(h->level, h->text);
  }
  if (a)
    g_ptr_array_free(a, TRUE);
}

/* ----------------------------------------------------- the environment */

void zkrc_log_from_env(void) {
  const char *v = getenv("ZKR_LOG");
  if (v == NULL || *v == '\0' || strcmp(v, "0") == 0) {
    zkrc_log_set_handler(NULL, NULL);
    zkrc_log_set_level(ZKRC_LOG_ERROR);
    return;
  }
  zkrc_log_set_handler(log_to_stderr, NULL);
  zkrc_log_set_level(strcmp(v, "debug") == 0  ? ZKRC_LOG_DEBUG
                     : strcmp(v, "info") == 0 ? ZKRC_LOG_INFO
                                              : ZKRC_LOG_WARN);
}
