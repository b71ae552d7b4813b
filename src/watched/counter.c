/*
 * Counters of the other dialects (zkrecipes/counter.h): Curator's
 * DistributedAtomicLong, kazoo's Counter and Curator's SharedCount, one
 * engine: a try is a read and a write at the version read (or a create of a
 * missing node); tries are repeated with a backoff, then, when asked,
 * repeated under a zkrc_lock at the promoted lock path (Curator's
 * PromotedToLock).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "session/request_size.h"
#include "session/session_internal.h"
#include "watched/shared_internal.h"
#include "zkrecipes/counter.h"
#include "zkrecipes/error.h"
#include "zkrecipes/lock.h"
#include "zkrecipes/path.h"

const char *zkrc_counter_format_name(zkrc_counter_format format) {
  switch (format) {
  case ZKRC_COUNTER_ATOMIC_LONG:
    return "atomic-long";
  case ZKRC_COUNTER_KAZOO:
    return "kazoo";
  case ZKRC_COUNTER_SHARED_COUNT:
    return "shared-count";
  }
  return "unknown";
}

static void defaults(zkrc_counter_options *o) {
  memset(o, 0, sizeof *o);
  o->size = sizeof *o;
  o->format = ZKRC_COUNTER_ATOMIC_LONG;
  o->max_attempts = 10;
  o->backoff_ms = 1;
  o->max_backoff_ms = 64;
  o->promoted_lock_timeout_ms = ZKRC_WAIT_FOREVER;
  o->promoted_max_attempts = 1;
}

void zkrc_counter_options_init_sized(zkrc_counter_options *opts, size_t size) {
  zkrc_counter_options full;
  defaults(&full);
  zkrc__options_give(opts, size, &full, sizeof full);
}

/* ------------------------------------------------------------ formats */

/* The most bytes a value takes in any format ("-9223372036854775808"). */
#define VALUE_MAX 24

static gboolean format_known(zkrc_counter_format f) {
  return f == ZKRC_COUNTER_ATOMIC_LONG || f == ZKRC_COUNTER_KAZOO ||
         f == ZKRC_COUNTER_SHARED_COUNT;
}

static int64_t big_endian(const unsigned char *in, int n) {
  uint64_t u = 0;
  for (int i = 0; i < n; i++)
    u = (u << 8) | in[i];
  if (n == 4)
    return (int32_t)(uint32_t)u;
  return (int64_t)u;
}

/* Python's int() of ASCII text: spaces around, a sign, decimal digits. */
static int parse_text(const char *text, size_t len, int64_t *value) {
  size_t i = 0, end = len;
  while (i < end && g_ascii_isspace(text[i]))
    i++;
  while (end > i && g_ascii_isspace(text[end - 1]))
    end--;
  gboolean negative = i < end && text[i] == '-';
  if (i < end && (text[i] == '-' || text[i] == '+'))
    i++;
  if (i == end)
    return ZKRC_EBADNODE;
  uint64_t u = 0, limit = negative ? (uint64_t)INT64_MAX + 1 : INT64_MAX;
  gboolean over = FALSE;
  for (; i < end; i++) {
    if (!g_ascii_isdigit(text[i]))
      return ZKRC_EBADNODE; /* a float's "1.5", "1e9", "inf", or not a number */
    unsigned d = (unsigned)(text[i] - '0');
    if (u > (limit - d) / 10)
      over = TRUE;
    else
      u = u * 10 + d;
  }
  if (over)
    return ZKRC_EOVERFLOW;
  *value = negative ? (int64_t)(0 - u) : (int64_t)u;
  return ZKRC_OK;
}

int zkrc_counter_decode(zkrc_counter_format format, const void *data,
                        size_t len, int64_t *value) {
  if (value == NULL || !format_known(format) || (data == NULL && len > 0))
    return zkrc__fail(ZKRC_EINVAL);
  if (len == 0) {
    *value = 0; /* an empty node: Curator's and kazoo's default */
    return ZKRC_OK;
  }
  int err = ZKRC_EBADNODE;
  if (format == ZKRC_COUNTER_ATOMIC_LONG && len == 8)
    err = (*value = big_endian(data, 8), ZKRC_OK);
  else if (format == ZKRC_COUNTER_SHARED_COUNT && len == 4)
    err = (*value = big_endian(data, 4), ZKRC_OK);
  else if (format == ZKRC_COUNTER_KAZOO && len <= 4096)
    err = parse_text(data, len, value);
  return err == ZKRC_OK ? ZKRC_OK : zkrc__fail(err);
}

/* @p value in @p format into @p out (VALUE_MAX bytes): its length, or
 * ZKRC_EOVERFLOW when it does not fit the format. */
static int encode(zkrc_counter_format format, int64_t value, char *out,
                  size_t *len) {
  if (format == ZKRC_COUNTER_KAZOO) {
    *len = (size_t)snprintf(out, VALUE_MAX, "%" G_GINT64_FORMAT, value);
    return ZKRC_OK;
  }
  int n = format == ZKRC_COUNTER_SHARED_COUNT ? 4 : 8;
  if (n == 4 && (value > INT32_MAX || value < INT32_MIN))
    return ZKRC_EOVERFLOW;
  for (int i = 0; i < n; i++)
    out[i] = (char)(unsigned char)((uint64_t)value >> (8 * (n - 1 - i)));
  *len = (size_t)n;
  return ZKRC_OK;
}

/* -------------------------------------------------------------- a call */

typedef enum change_kind { CHANGE_ADD = 1, CHANGE_SET } change_kind;

typedef struct counter_call {
  zkrc_session *s;
  const char *path;
  zkrc_counter_options o;
  int64_t deadline;
  gboolean forever;
  change_kind kind;
  int64_t operand;       /* the delta, or the value to set */
  gboolean empty_is_bad; /* SharedCount's own calls: 4 bytes or nothing */
  zkrc_counter_result *r;
} counter_call;

/* The timeout left for the next request: ZKRC_ETIMEDOUT when none is. */
static int time_left(const counter_call *c, int *ms) {
  if (c->forever) {
    *ms = ZKRC_WAIT_FOREVER;
    return ZKRC_OK;
  }
  *ms = zkrc__ms_left(c->deadline);
  return *ms > 0 ? ZKRC_OK : ZKRC_ETIMEDOUT;
}

/* Check the arguments every call takes and start its deadline. */
static int call_begin(counter_call *c, zkrc_session *s, const char *path,
                      const zkrc_counter_options *opts, int timeout_ms) {
  memset(c, 0, sizeof *c);
  defaults(&c->o);
  if (s == NULL || zkrc_path_validate(path, NULL) != ZKRC_OK ||
      strcmp(path, "/") == 0 || !zkrc__timeout_valid(timeout_ms) ||
      !zkrc__options_take(&c->o, sizeof c->o, opts) ||
      !format_known(c->o.format) || c->o.max_attempts < 1 ||
      c->o.backoff_ms < 0 || c->o.max_backoff_ms < 0 ||
      c->o.promoted_max_attempts < 1 ||
      !zkrc__timeout_valid(c->o.promoted_lock_timeout_ms) ||
      (c->o.promoted_lock_path &&
       (zkrc_path_validate(c->o.promoted_lock_path, NULL) != ZKRC_OK ||
        strcmp(c->o.promoted_lock_path, "/") == 0)))
    return ZKRC_EINVAL;
  c->s = s;
  c->path = path;
  c->forever = timeout_ms == ZKRC_WAIT_FOREVER;
  int err = zkrc__request_deadline(s, timeout_ms, &c->deadline);
  if (err == ZKRC_OK && timeout_ms == ZKRC_NO_WAIT)
    c->forever = FALSE; /* its tries share the one round's time */
  return err;
}

/* Read the value: ZKRC_OK (*exists 0 for a missing node, value 0) or an
 * error, remembered. */
static int read_counter(counter_call *c, gboolean *exists, int64_t *value,
                        int32_t *version) {
  zkrc_versioned_value v = {0};
  int rc = zkrc__shared_read(c->s, c->path, c->deadline, &v);
  *exists = rc == ZOK;
  *value = 0;
  *version = -1;
  int err = ZKRC_OK;
  if (rc == ZOK && v.len == 0 && c->empty_is_bad) {
    err = zkrc__fail(ZKRC_EBADNODE);
  } else if (rc == ZOK) {
    err = zkrc_counter_decode(c->o.format, v.data, v.len, value);
    *version = v.version;
  } else if (rc != ZNONODE) {
    err = zkrc__shared_failure(rc);
  }
  zkrc_versioned_value_clear(&v);
  return err;
}

/* One try: ZKRC_OK (written), ZKRC_EBADVERSION (a concurrent change: try
 * again), or an error that ends the call. */
static int try_once(counter_call *c) {
  gboolean exists;
  int64_t pre;
  int32_t version;
  int err = read_counter(c, &exists, &pre, &version);
  if (err != ZKRC_OK)
    return err;
  c->r->pre_value = c->r->post_value = pre;
  c->r->version = version;
  int64_t post = c->operand;
  if (c->kind == CHANGE_ADD &&
      ((c->operand > 0 && pre > INT64_MAX - c->operand) ||
       (c->operand < 0 && pre < INT64_MIN - c->operand)))
    return zkrc__fail(ZKRC_EOVERFLOW);
  if (c->kind == CHANGE_ADD)
    post = pre + c->operand;
  char bytes[VALUE_MAX];
  size_t len;
  err = encode(c->o.format, post, bytes, &len);
  if (err != ZKRC_OK)
    return zkrc__fail(err);
  int ms;
  err = time_left(c, &ms);
  if (err != ZKRC_OK)
    return zkrc__fail(err);
  int32_t now = -1;
  if (exists) {
    err =
        zkrc_shared_value_try_set(c->s, c->path, version, bytes, len, &now, ms);
  } else {
    err =
        zkrc__request_check_create(c->s, c->path, len, &ZOO_OPEN_ACL_UNSAFE, 0);
    if (err != ZKRC_OK)
      return zkrc__fail(err);
    int rc = zkrc__shared_create(c->s, c->path, bytes, len, c->deadline);
    err = rc == ZOK           ? ZKRC_OK
          : rc == ZNODEEXISTS ? ZKRC_EBADVERSION
                              : zkrc__shared_failure(rc);
    now = 0;
  }
  if (err == ZKRC_ENONODE)
    err = ZKRC_EBADVERSION; /* deleted since: try again (Curator does) */
  if (err == ZKRC_OK) {
    c->r->post_value = post;
    c->r->version = now;
  }
  return err;
}

/* Wait before try @p attempt (> 0): backoff_ms doubling to max_backoff_ms,
 * half of it random, never past the deadline. */
static void back_off(const counter_call *c, int attempt) {
  int64_t us = (int64_t)c->o.backoff_ms * 1000;
  for (int i = 1; i < attempt && us < (int64_t)c->o.max_backoff_ms * 1000; i++)
    us *= 2;
  us = MIN(us, (int64_t)c->o.max_backoff_ms * 1000);
  if (us <= 0)
    return;
  us = us / 2 + g_random_int_range(0, (gint32)MIN(us / 2, G_MAXINT32 - 1) + 1);
  if (!c->forever)
    us = MIN(us, (int64_t)zkrc__ms_left(c->deadline) * 1000);
  if (us > 0)
    g_usleep((gulong)us);
}

/* Up to @p attempts tries; *tries counts them. */
static int tries(counter_call *c, int attempts, int *count) {
  int err = ZKRC_EBADVERSION;
  for (int i = 0; i < attempts && err == ZKRC_EBADVERSION; i++) {
    if (i > 0)
      back_off(c, i);
    (*count)++;
    err = try_once(c);
  }
  return err;
}

/* The promoted phase: the tries again under the lock. */
static int promoted(counter_call *c) {
  int ms;
  int err = time_left(c, &ms);
  if (err != ZKRC_OK)
    return zkrc__fail(err);
  int lock_ms = c->o.promoted_lock_timeout_ms;
  gboolean lock_bounds = TRUE; /* the lock's own timeout is the shorter */
  if (ms != ZKRC_WAIT_FOREVER &&
      (lock_ms == ZKRC_WAIT_FOREVER || lock_ms > ms)) {
    lock_ms = ms;
    lock_bounds = FALSE;
  }
  zkrc_lock *lk;
  err = zkrc_lock_new(&lk, c->s, c->o.promoted_lock_path, NULL);
  if (err != ZKRC_OK)
    return err;
  err = zkrc_lock_acquire(lk, lock_ms);
  if (err == ZKRC_OK) {
    err = tries(c, c->o.promoted_max_attempts, &c->r->promoted_tries);
    int rel = zkrc_lock_release(lk);
    if (err == ZKRC_OK && rel != ZKRC_OK && rel != ZKRC_ELOCKLOST)
      err = rel; /* written; a release's error is only told when lost */
  } else if (err == ZKRC_ETIMEDOUT && lock_bounds) {
    err = ZKRC_EBADVERSION; /* Curator's acquire(maxLockTime) false */
  }
  zkrc_lock_free(lk);
  return err;
}

/* call_begin() for a call with a result, which it zeroes first. */
static int result_begin(counter_call *c, zkrc_counter_result *result,
                        zkrc_session *s, const char *path,
                        const zkrc_counter_options *opts, int timeout_ms) {
  if (result == NULL)
    return ZKRC_EINVAL;
  memset(result, 0, sizeof *result);
  int err = call_begin(c, s, path, opts, timeout_ms);
  c->r = result;
  return err;
}

static int change(zkrc_session *s, const char *path, change_kind kind,
                  int64_t operand, const zkrc_counter_options *opts,
                  gboolean empty_is_bad, zkrc_counter_result *result,
                  int timeout_ms) {
  counter_call c;
  int err = result_begin(&c, result, s, path, opts, timeout_ms);
  if (err != ZKRC_OK)
    return zkrc__fail(err);
  c.empty_is_bad = empty_is_bad;
  c.kind = kind;
  c.operand = operand;
  err = tries(&c, c.o.max_attempts, &result->optimistic_tries);
  if (err == ZKRC_EBADVERSION && c.o.promoted_lock_path)
    err = promoted(&c);
  result->succeeded = err == ZKRC_OK;
  if (err != ZKRC_OK)
    result->post_value = result->pre_value;
  return err == ZKRC_OK ? ZKRC_OK : zkrc__fail(err);
}

int zkrc_counter_add(zkrc_session *s, const char *path, int64_t delta,
                     const zkrc_counter_options *opts,
                     zkrc_counter_result *result, int timeout_ms) {
  return change(s, path, CHANGE_ADD, delta, opts, FALSE, result, timeout_ms);
}

int zkrc__counter_shared_count_add(zkrc_session *s, const char *path,
                                   int32_t delta, int max_attempts,
                                   int32_t *result, int timeout_ms) {
  zkrc_counter_options o;
  defaults(&o); /* zkrc_shared_count_add()'s backoff: 1 ms doubling to 64 */
  o.format = ZKRC_COUNTER_SHARED_COUNT;
  o.max_attempts = max_attempts;
  zkrc_counter_result r;
  int err = change(s, path, CHANGE_ADD, delta, &o, TRUE, &r, timeout_ms);
  if (err == ZKRC_OK && result)
    *result = (int32_t)r.post_value;
  return err;
}

int zkrc_counter_try_set(zkrc_session *s, const char *path, int64_t value,
                         const zkrc_counter_options *opts,
                         zkrc_counter_result *result, int timeout_ms) {
  return change(s, path, CHANGE_SET, value, opts, FALSE, result, timeout_ms);
}

int zkrc_counter_get(zkrc_session *s, const char *path,
                     const zkrc_counter_options *opts,
                     zkrc_counter_result *result, int timeout_ms) {
  counter_call c;
  int err = result_begin(&c, result, s, path, opts, timeout_ms);
  if (err != ZKRC_OK)
    return zkrc__fail(err);
  gboolean exists;
  err = read_counter(&c, &exists, &result->pre_value, &result->version);
  result->post_value = result->pre_value;
  result->succeeded = err == ZKRC_OK;
  return err;
}

int zkrc_counter_compare_and_set(zkrc_session *s, const char *path,
                                 int64_t expected, int64_t value,
                                 const zkrc_counter_options *opts,
                                 zkrc_counter_result *result, int timeout_ms) {
  counter_call c;
  int err = result_begin(&c, result, s, path, opts, timeout_ms);
  char bytes[VALUE_MAX];
  size_t len;
  if (err == ZKRC_OK)
    err = encode(c.o.format, value, bytes, &len);
  if (err != ZKRC_OK)
    return zkrc__fail(err);
  gboolean exists;
  int32_t version;
  err = read_counter(&c, &exists, &result->pre_value, &version);
  result->post_value = result->pre_value;
  result->version = version;
  if (err != ZKRC_OK)
    return err;
  if (!exists || result->pre_value != expected)
    return zkrc__fail(ZKRC_EBADVERSION);
  int ms, now = -1;
  err = time_left(&c, &ms);
  if (err != ZKRC_OK)
    return zkrc__fail(err);
  err = zkrc_shared_value_try_set(s, path, version, bytes, len, &now, ms);
  if (err == ZKRC_ENONODE)
    err = zkrc__fail(ZKRC_EBADVERSION);
  if (err == ZKRC_OK) {
    result->succeeded = 1;
    result->post_value = value;
    result->version = now;
  }
  return err;
}

/* forceSet (Curator's: a set of any version, a create when missing, a set
 * again when created since) and initialize (the create only). */
static int write_any(zkrc_session *s, const char *path, int64_t value,
                     const zkrc_counter_options *opts, gboolean overwrite,
                     int *created, int timeout_ms) {
  counter_call c;
  char bytes[VALUE_MAX];
  size_t len = 0;
  int err = call_begin(&c, s, path, opts, timeout_ms);
  if (err == ZKRC_OK)
    err = encode(c.o.format, value, bytes, &len);
  if (err == ZKRC_OK)
    err = zkrc__request_check_create(s, path, len, &ZOO_OPEN_ACL_UNSAFE, 0);
  if (err != ZKRC_OK)
    return zkrc__fail(err);
  int ms = 0;
  if (overwrite) {
    err = time_left(&c, &ms);
    if (err == ZKRC_OK)
      err = zkrc_shared_value_set(s, path, bytes, len, ms);
    if (err != ZKRC_ENONODE)
      return err == ZKRC_ETIMEDOUT ? zkrc__fail(err) : err;
  }
  int rc = zkrc__shared_create(s, path, bytes, len, c.deadline);
  if (created)
    *created = rc == ZOK;
  if (rc != ZNODEEXISTS)
    return rc == ZOK ? ZKRC_OK : zkrc__shared_failure(rc);
  if (!overwrite)
    return ZKRC_OK;
  err = time_left(&c, &ms);
  return err == ZKRC_OK ? zkrc_shared_value_set(s, path, bytes, len, ms)
                        : zkrc__fail(err);
}

int zkrc_counter_force_set(zkrc_session *s, const char *path, int64_t value,
                           const zkrc_counter_options *opts, int timeout_ms) {
  return write_any(s, path, value, opts, TRUE, NULL, timeout_ms);
}

int zkrc_counter_initialize(zkrc_session *s, const char *path, int64_t value,
                            const zkrc_counter_options *opts, int *created,
                            int timeout_ms) {
  if (created)
    *created = 0;
  return write_any(s, path, value, opts, FALSE, created, timeout_ms);
}
