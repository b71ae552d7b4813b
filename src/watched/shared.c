/*
 * Shared values and counters (zkrecipes/shared.h): a getData, a create
 * with its parents, and a conditional setData (or, at version -1, a multi
 * of the setData and a check), each waited for with the caller's deadline
 * (call.h), never with the synchronous client calls.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "session/call.h"
#include "session/request_size.h"
#include "session/session_internal.h"
#include "core/util.h"
#include "session/zk_call.h"
#include "zkrecipes/error.h"
#include "zkrecipes/path.h"
#include "zkrecipes/shared.h"
#include "watched/shared_internal.h"

void zkrc_versioned_value_clear(zkrc_versioned_value *v) {
  if (v == NULL)
    return;
  free(v->data);
  memset(v, 0, sizeof *v);
}

/* ------------------------------------------------------ one request */

int zkrc__shared_failure(int rc) {
  return rc == ZKRC__CALL_TIMED_OUT ? zkrc__fail(ZKRC_ETIMEDOUT)
                                    : zkrc__fail_from_zk(rc);
}

typedef struct data_arg {
  const char *path;
  const void *data;
  size_t len;
  int32_t version;
  int flags; /* create: ZOO_CONTAINER or 0 */
} data_arg;

static int send_get(zkrc_conn *conn, zkrc__call *call, const void *arg) {
  const data_arg *a = arg;
  return zkrc__zk_get(conn, a->path, NULL, zkrc__call_data_done, call);
}

static int send_create(zkrc_conn *conn, zkrc__call *call, const void *arg) {
  const data_arg *a = arg;
  return zkrc__zk_create(conn, a->path, a->data, a->data ? (int)a->len : -1,
                         &ZOO_OPEN_ACL_UNSAFE, a->flags, zkrc__call_string_done,
                         call);
}

static int send_set(zkrc_conn *conn, zkrc__call *call, const void *arg) {
  const data_arg *a = arg;
  return zkrc__zk_set(conn, a->path, a->data, (int)a->len, a->version,
                      zkrc__call_stat_done, call);
}

/* A compare-and-set at version -1, which setData would read as "any":
 * the write and a check that the node is now at version 0, as one multi
 * (the servers apply both or neither). */
static int send_set_at_minus_one(zkrc_conn *conn, zkrc__call *call,
                                 const void *arg) {
  const data_arg *a = arg;
  zoo_op_t ops[2];
  zoo_set_op_init(&ops[0], a->path, a->data, (int)a->len, -1, NULL);
  zoo_check_op_init(&ops[1], a->path, 0);
  if (!zkrc__call_take_ops(call, 0, 2, ops))
    return ZBADARGUMENTS;
  return zkrc__zk_multi(conn, call->op_count, call->ops, call->results,
                        zkrc__call_multi_done, call);
}

/* The size rule (request_size.h) for the write of @p a: a setData, or
 * the multi of send_set_at_minus_one(). */
static int write_fits(zkrc_session *s, const data_arg *a, gboolean multi) {
  if (a->len > ZKRC__DATA_MAX)
    return ZKRC_ETOOBIG; /* before the int the ops hold */
  zoo_op_t ops[2];
  zoo_set_op_init(&ops[0], a->path, NULL, (int)a->len, -1, NULL);
  zoo_check_op_init(&ops[1], a->path, 0);
  return zkrc__request_check(s, multi, multi ? 2 : 1, ops);
}

/* ----------------------------------------------------------- values */

static gboolean args_valid(zkrc_session *s, const char *path, int timeout_ms) {
  return s && zkrc_path_validate(path, NULL) == ZKRC_OK &&
         strcmp(path, "/") != 0 && zkrc__timeout_valid(timeout_ms);
}

int zkrc__shared_create(zkrc_session *s, const char *path, const void *seed,
                        size_t len, int64_t deadline) {
  int rc = ZOK;
  for (const char *slash = strchr(path + 1, '/'); slash;
       slash = strchr(slash + 1, '/')) {
    char *parent = g_strndup(path, (gsize)(slash - path));
    data_arg a = {.path = parent, .flags = ZOO_CONTAINER};
    zkrc__call *call;
    rc = zkrc__call_request(s, send_create, &a, deadline, &call);
    if (call)
      zkrc__call_unref(call);
    g_free(parent);
    if (rc != ZOK && rc != ZNODEEXISTS)
      return rc;
  }
  data_arg a = {.path = path, .data = seed, .len = len};
  zkrc__call *call;
  rc = zkrc__call_request(s, send_create, &a, deadline, &call);
  if (call)
    zkrc__call_unref(call);
  return rc;
}

int zkrc__shared_read(zkrc_session *s, const char *path, int64_t deadline,
                      zkrc_versioned_value *out) {
  data_arg a = {.path = path};
  zkrc__call *call;
  int rc = zkrc__call_request(s, send_get, &a, deadline, &call);
  if (rc == ZOK) {
    out->len = call->value_len > 0 ? (size_t)call->value_len : 0;
    out->data = call->value_len >= 0 ? malloc(out->len + 1) : NULL;
    if (out->data) {
      memcpy(out->data, call->value ? call->value : "", out->len);
      out->data[out->len] = '\0';
    }
    out->version = call->stat.version;
  }
  if (call)
    zkrc__call_unref(call);
  return rc;
}

int zkrc_shared_value_get(zkrc_session *s, const char *path, const void *seed,
                          size_t seed_len, zkrc_versioned_value *out,
                          int timeout_ms) {
  if (out)
    memset(out, 0, sizeof *out);
  if (out == NULL || !args_valid(s, path, timeout_ms) ||
      (seed == NULL && seed_len > 0))
    return zkrc__fail(ZKRC_EINVAL);
  int fits = seed ? zkrc__request_check_create(s, path, seed_len,
                                               &ZOO_OPEN_ACL_UNSAFE, 0)
                  : ZKRC_OK;
  if (fits != ZKRC_OK)
    return zkrc__fail(fits);
  int64_t deadline;
  int err = zkrc__request_deadline(s, timeout_ms, &deadline);
  if (err != ZKRC_OK)
    return zkrc__fail(err);
  int rc = zkrc__shared_read(s, path, deadline, out);
  if (rc == ZNONODE && seed) {
    rc = zkrc__shared_create(s, path, seed, seed_len, deadline);
    if (rc == ZOK || rc == ZNODEEXISTS) /* or someone else seeded it first */
      rc = zkrc__shared_read(s, path, deadline, out);
  }
  return rc == ZOK ? ZKRC_OK : zkrc__shared_failure(rc);
}

/* setData at @p version (-1: any), or the multi for a compare at -1. */
static int write_value(zkrc_session *s, const char *path, const void *data,
                       size_t len, int32_t version, gboolean compare,
                       int32_t *new_version, int timeout_ms) {
  if (!args_valid(s, path, timeout_ms) || (data == NULL && len > 0))
    return zkrc__fail(ZKRC_EINVAL);
  data_arg a = {.path = path, .data = data, .len = len, .version = version};
  gboolean multi = compare && version == -1;
  int fits = write_fits(s, &a, multi);
  if (fits != ZKRC_OK)
    return zkrc__fail(fits);
  int64_t deadline;
  int err = zkrc__request_deadline(s, timeout_ms, &deadline);
  if (err != ZKRC_OK)
    return zkrc__fail(err);
  zkrc__call *call;
  int rc = zkrc__call_request(s, multi ? send_set_at_minus_one : send_set, &a,
                              deadline, &call);
  if (rc == ZOK && new_version)
    *new_version = multi ? call->op_stats[0].version : call->stat.version;
  if (multi && call && rc != ZOK && rc != ZCONNECTIONLOSS &&
      call->results[1].err == ZBADVERSION)
    rc = ZBADVERSION; /* the check: the node was not at -1 */
  if (call)
    zkrc__call_unref(call);
  return rc == ZOK ? ZKRC_OK : zkrc__shared_failure(rc);
}

int zkrc_shared_value_try_set(zkrc_session *s, const char *path,
                              int32_t expected_version, const void *data,
                              size_t len, int32_t *new_version,
                              int timeout_ms) {
  return write_value(s, path, data, len, expected_version, TRUE, new_version,
                     timeout_ms);
}

int zkrc_shared_value_set(zkrc_session *s, const char *path, const void *data,
                          size_t len, int timeout_ms) {
  return write_value(s, path, data, len, -1, FALSE, NULL, timeout_ms);
}

/* --------------------------------------------------------- counters */

static void encode(int32_t value, unsigned char out[4]) {
  uint32_t u = (uint32_t)value;
  for (int i = 0; i < 4; i++)
    out[i] = (unsigned char)(u >> (24 - 8 * i));
}

static int32_t decode(const unsigned char in[4]) {
  uint32_t u = 0;
  for (int i = 0; i < 4; i++)
    u = (u << 8) | in[i];
  return (int32_t)u;
}

int zkrc_shared_count_decode(const zkrc_versioned_value *value,
                             int32_t *count) {
  if (value == NULL || count == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  if (value->len != 4 || value->data == NULL)
    return zkrc__fail(ZKRC_EBADNODE);
  *count = decode((const unsigned char *)value->data);
  return ZKRC_OK;
}

int zkrc_shared_count_get(zkrc_session *s, const char *path, int32_t seed,
                          int32_t *value, int32_t *version, int timeout_ms) {
  if (value == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  unsigned char seed_bytes[4];
  encode(seed, seed_bytes);
  zkrc_versioned_value v;
  int err = zkrc_shared_value_get(s, path, seed_bytes, 4, &v, timeout_ms);
  if (err == ZKRC_OK && (v.data == NULL || v.len != 4))
    err = zkrc__fail(ZKRC_EBADNODE);
  if (err == ZKRC_OK) {
    *value = decode((const unsigned char *)v.data);
    if (version)
      *version = v.version;
  }
  zkrc_versioned_value_clear(&v);
  return err;
}

int zkrc_shared_count_try_set(zkrc_session *s, const char *path,
                              int32_t expected_version, int32_t value,
                              int timeout_ms) {
  unsigned char bytes[4];
  encode(value, bytes);
  return zkrc_shared_value_try_set(s, path, expected_version, bytes, 4, NULL,
                                   timeout_ms);
}

/* The counters' engine (counter.c), in SharedCount's format. */
int zkrc_shared_count_add(zkrc_session *s, const char *path, int32_t delta,
                          int max_attempts, int32_t *result, int timeout_ms) {
  return zkrc__counter_shared_count_add(s, path, delta, max_attempts, result,
                                        timeout_ms);
}
