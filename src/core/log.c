/*
 * Log lines: the library's own (zkrc__log) and the ZooKeeper client's
 * (zkrc__log_trampoline, given to every handle: the client's per-handle log
 * callback carries no user pointer), both to one process-wide handler,
 * each with a level (zkrecipes/log.h).  The client's lines are
 * rate-limited by a token bucket.
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
  if (origin == ZKRC_LOG_ZOOKEEPER) /* it says its level and time itself */
    fprintf(stderr, "%s\n", line);
  else
    fprintf(stderr, "zkrecipes: %s: %s\n", zkrc_log_level_name(level), line);
}

/* The handler and the bucket, under log_mutex; the level is read without
 * it (a stale read only lets one line more or less through). */
static GMutex log_mutex;
static zkrc_log_fn log_handler = log_to_stderr;
static void *log_arg;
static gint log_level = ZKRC_LOG_WARN;
static gint level_chosen; /* zkrc_log_set_level() was called */

static struct bucket {
  int burst, per_second;
  double tokens;
  gint64 refilled_us;
  unsigned long held_back; /* since lines last passed */
} bucket = {20, 5, 20.0, 0, 0};

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

/* The level of a client line: it names it ("...:ZOO_WARN@func@line: ..."). */
static zkrc_log_level client_line_level(const char *message) {
  static const struct {
    const char *tag;
    zkrc_log_level level;
  } tags[] = {{"ZOO_ERROR@", ZKRC_LOG_ERROR},
              {"ZOO_WARN@", ZKRC_LOG_WARN},
              {"ZOO_INFO@", ZKRC_LOG_INFO},
              {"ZOO_DEBUG@", ZKRC_LOG_DEBUG}};
  for (size_t i = 0; i < G_N_ELEMENTS(tags); i++)
    if (strstr(message, tags[i].tag))
      return tags[i].level;
  return ZKRC_LOG_INFO;
}

/* May a client line pass now?  If it may after some were held back, how
 * many is said in *held_back (and forgotten). */
static gboolean bucket_take(unsigned long *held_back) {
  *held_back = 0;
  g_mutex_lock(&log_mutex);
  gboolean pass = TRUE;
  if (bucket.per_second > 0) {
    gint64 now = g_get_monotonic_time();
    if (bucket.refilled_us != 0)
      bucket.tokens += (double)(now - bucket.refilled_us) / G_USEC_PER_SEC *
                       bucket.per_second;
    if (bucket.tokens > bucket.burst)
      bucket.tokens = bucket.burst;
    bucket.refilled_us = now;
    pass = bucket.tokens >= 1.0;
  }
  if (pass) {
    if (bucket.per_second > 0)
      bucket.tokens -= 1.0;
    *held_back = bucket.held_back;
    bucket.held_back = 0;
  } else {
    bucket.held_back++;
  }
  g_mutex_unlock(&log_mutex);
  return pass;
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
  unsigned long held_back;
  if (!bucket_take(&held_back))
    return;
  if (held_back > 0)
    zkrc__log(ZKRC_LOG_WARN,
              "%lu lines of the ZooKeeper client were held back (rate limit)",
              held_back);
  deliver(level, ZKRC_LOG_ZOOKEEPER, line);
}

void zkrc__log_trampoline(const char *message) {
  if (message == NULL)
    return;
  zkrc_log_level level = client_line_level(message);
  if (!zkrc__log_enabled(level))
    return;
  /* The client's lines end with a newline; handlers get them without. */
  size_t len = strlen(message);
  while (len > 0 && (message[len - 1] == '\n' || message[len - 1] == '\r'))
    len--;
  char *line = g_strndup(message, len);
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
