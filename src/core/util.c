/* Deadlines, timeouts and identities used throughout the library. */
#include "config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"
#include "zkrecipes.h"

int zkrc__timeout_valid(int timeout_ms) {
  return timeout_ms == ZKRC_WAIT_FOREVER || timeout_ms >= 0;
}

int64_t zkrc__deadline_after(int timeout_ms) {
  if (timeout_ms == ZKRC_WAIT_FOREVER)
    return ZKRC__NEVER;
  return g_get_monotonic_time() + (int64_t)timeout_ms * 1000;
}

int zkrc__ms_left(int64_t deadline) {
  if (deadline == ZKRC__NEVER)
    return INT_MAX;
  int64_t left_us = deadline - g_get_monotonic_time();
  if (left_us <= 0)
    return 0;
  int64_t left_ms = (left_us + 999) / 1000;
  return left_ms > INT_MAX ? INT_MAX : (int)left_ms;
}

gboolean zkrc__cond_wait_until(GCond *cond, GMutex *mutex, int64_t deadline) {
  if (deadline == ZKRC__NEVER) {
    g_cond_wait(cond, mutex);
    return TRUE;
  }
  return g_cond_wait_until(cond, mutex, deadline);
}

gboolean zkrc__options_take(void *defaults, size_t full, const void *opts) {
  if (opts == NULL)
    return TRUE;
  size_t size = *(const size_t *)opts;
  if (size < sizeof(size_t) * 2)
    return FALSE; /* 0: never initialized */
  memcpy(defaults, opts, MIN(size, full));
  *(size_t *)defaults = full;
  return TRUE;
}

void zkrc__options_give(void *opts, size_t size, const void *full,
                        size_t full_size) {
  if (opts == NULL || size < sizeof(size_t) * 2)
    return;
  memset(opts, 0, size);
  memcpy(opts, full, MIN(size, full_size));
  *(size_t *)opts = size;
}

int zkrc__struct_give(void *out, const void *full, size_t full_size,
                      size_t size, size_t min_size) {
  if (out == NULL || size < min_size)
    return zkrc__fail(ZKRC_EINVAL);
  memcpy(out, full, MIN(size, full_size));
  return ZKRC_OK;
}

char *zkrc__default_participant_id(void) {
  char host[256];
  if (gethostname(host, sizeof host) != 0)
    g_strlcpy(host, "unknown-host", sizeof host);
  host[sizeof host - 1] = '\0';
  return g_strdup_printf("%s:%ld", host, (long)getpid());
}

char *zkrc__uuid(void) { return g_uuid_string_random(); }

const char *zkrc_version(void) { return PACKAGE_VERSION; }

void zkrc_strv_free(char **strv) {
  if (strv == NULL)
    return;
  for (char **p = strv; *p; p++)
    free(*p);
  free(strv);
}

char **zkrc__strv_to_malloc(char **gv, size_t *count) {
  size_t n = gv ? g_strv_length(gv) : 0;
  char **out = calloc(n + 1, sizeof *out);
  for (size_t i = 0; out && i < n; i++) {
    out[i] = strdup(gv[i]);
    if (out[i] == NULL) {
      zkrc_strv_free(out);
      out = NULL;
    }
  }
  if (count)
    *count = out ? n : 0;
  return out;
}
