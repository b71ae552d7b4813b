/*
 * The log hook.  The ZooKeeper client's per-handle log callback carries no
 * user pointer, so every handle zkrecipes opens gets the same trampoline,
 * which forwards to the process-wide handler set here.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>
#include <zookeeper/zookeeper.h>

#include "session_internal.h"
#include "zkrecipes.h"

static void log_to_stderr(const char *line, void *arg) {
  (void)arg;
  fprintf(stderr, "%s\n", line);
}

static GMutex log_mutex;
static zkrc_log_fn log_handler = log_to_stderr;
static void *log_arg;

void zkrc_log_set_handler(zkrc_log_fn fn, void *arg) {
  g_mutex_lock(&log_mutex);
  log_handler = fn;
  log_arg = arg;
  g_mutex_unlock(&log_mutex);
}

void zkrc__log_trampoline(const char *message) {
  g_mutex_lock(&log_mutex);
  zkrc_log_fn fn = log_handler;
  void *arg = log_arg;
  g_mutex_unlock(&log_mutex);
  if (fn == NULL || message == NULL)
    return;
  /* The client's lines end with a newline; handlers get them without. */
  size_t len = strlen(message);
  while (len > 0 && (message[len - 1] == '\n' || message[len - 1] == '\r'))
    len--;
  char *line = g_strndup(message, len);
  fn(line, arg);
  g_free(line);
}

void zkrc_log_set_level(zkrc_log_level level) {
  static const ZooLogLevel levels[] = {
      [ZKRC_LOG_ERROR] = ZOO_LOG_LEVEL_ERROR,
      [ZKRC_LOG_WARN] = ZOO_LOG_LEVEL_WARN,
      [ZKRC_LOG_INFO] = ZOO_LOG_LEVEL_INFO,
      [ZKRC_LOG_DEBUG] = ZOO_LOG_LEVEL_DEBUG,
  };
  if (level < ZKRC_LOG_ERROR || level > ZKRC_LOG_DEBUG)
    return;
  zoo_set_debug_level(levels[level]);
}

void zkrc_log_from_env(void) {
  const char *v = getenv("ZKR_LOG");
  if (v == NULL || *v == '\0' || strcmp(v, "0") == 0) {
    zkrc_log_set_handler(NULL, NULL);
    zkrc_log_set_level(ZKRC_LOG_ERROR);
    return;
  }
  zkrc_log_set_handler(log_to_stderr, NULL);
  zkrc_log_set_level(strcmp(v, "debug") == 0 ? ZKRC_LOG_DEBUG : ZKRC_LOG_WARN);
}
