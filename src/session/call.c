/* Waiting for one asynchronous ZooKeeper call with a deadline. */
#include "config.h"

#include <string.h>

#include "session/call.h"
#include "session/session_internal.h"
#include "core/util.h"

zkrc__call *zkrc__call_new(void) {
  zkrc__call *call = g_new0(zkrc__call, 1);
  call->refs = 2;
  g_mutex_init(&call->mu);
  g_cond_init(&call->cond);
  call->value_len = -1;
  return call;
}

static void free_children(struct String_vector *v) {
  for (int i = 0; i < v->count; i++)
    g_free(v->data[i]);
  g_free(v->data);
  v->data = NULL;
  v->count = 0;
}

void zkrc__call_unref(zkrc__call *call) {
  if (!g_atomic_int_dec_and_test(&call->refs))
    return;
  g_free(call->value);
  free_children(&call->children);
  for (int i = 0; i < call->op_count; i++)
    g_free(call->op_bufs ? call->op_bufs[i] : NULL);
  g_free(call->op_bufs);
  g_free(call->op_stats);
  g_free(call->ops);
  g_free(call->results);
  g_mutex_clear(&call->mu);
  g_cond_clear(&call->cond);
  g_free(call);
}

gboolean zkrc__call_wait(zkrc__call *call, int64_t deadline) {
  g_mutex_lock(&call->mu);
  while (!call->done) {
    if (!zkrc__cond_wait_until(&call->cond, &call->mu, deadline))
      break;
  }
  gboolean done = call->done;
  g_mutex_unlock(&call->mu);
  return done;
}

static void finish(zkrc__call *call, int rc) {
  g_mutex_lock(&call->mu);
  call->rc = rc;
  call->done = TRUE;
  g_cond_broadcast(&call->cond);
  g_mutex_unlock(&call->mu);
  zkrc__call_unref(call);
}

void zkrc__call_fail_unsent(zkrc__call *call, int rc) { finish(call, rc); }

void zkrc__call_void_done(int rc, const void *data) {
  finish((zkrc__call *)data, rc);
}

void zkrc__call_string_done(int rc, const char *value, const void *data) {
  zkrc__call *call = (zkrc__call *)data;
  if (rc == ZOK && value) {
    call->value = g_strdup(value);
    call->value_len = (int)strlen(value);
  }
  finish(call, rc);
}

void zkrc__call_stat_done(int rc, const struct Stat *stat, const void *data) {
  zkrc__call *call = (zkrc__call *)data;
  if (rc == ZOK && stat)
    call->stat = *stat;
  finish(call, rc);
}

void zkrc__call_data_done(int rc, const char *value, int value_len,
                          const struct Stat *stat, const void *data) {
  zkrc__call *call = (zkrc__call *)data;
  if (rc == ZOK) {
    if (stat)
      call->stat = *stat;
    call->value_len = value ? value_len : -1;
    if (value && value_len >= 0) {
      call->value = g_malloc((gsize)value_len + 1);
      memcpy(call->value, value, (size_t)value_len);
      call->value[value_len] = '\0';
    }
  }
  finish(call, rc);
}

void zkrc__call_children_done(int rc, const struct String_vector *strings,
                              const void *data) {
  zkrc__call *call = (zkrc__call *)data;
  if (rc == ZOK && strings) {
    call->children.count = strings->count;
    call->children.data =
        g_new0(char *, strings->count > 0 ? strings->count : 1);
    for (int i = 0; i < strings->count; i++)
      call->children.data[i] = g_strdup(strings->data[i]);
  }
  finish(call, rc);
}

void zkrc__call_multi_done(int rc, const void *data) {
  finish((zkrc__call *)data, rc);
}

gboolean zkrc__call_take_ops(zkrc__call *call, int prefix, int count,
                             const zoo_op_t *ops) {
  int total = prefix + count;
  call->op_count = total;
  call->ops = g_new0(zoo_op_t, total);
  call->results = g_new0(zoo_op_result_t, total);
  call->op_stats = g_new0(struct Stat, total);
  call->op_bufs = g_new0(char *, total);
  for (int i = 0; i < count; i++) {
    zoo_op_t *op = &call->ops[prefix + i];
    *op = ops[i];
    switch (op->type) {
    case ZOO_CREATE_OP:
      if (op->create_op.path == NULL || op->create_op.buflen < 0)
        return FALSE;
      if (op->create_op.buflen > 0) {
        call->op_bufs[prefix + i] = g_malloc0((gsize)op->create_op.buflen);
        op->create_op.buf = call->op_bufs[prefix + i];
      }
      break;
    case ZOO_SETDATA_OP:
      if (op->set_op.path == NULL)
        return FALSE;
      op->set_op.stat = &call->op_stats[prefix + i];
      break;
    case ZOO_DELETE_OP:
      if (op->delete_op.path == NULL)
        return FALSE;
      break;
    case ZOO_CHECK_OP:
      if (op->check_op.path == NULL)
        return FALSE;
      break;
    default:
      return FALSE;
    }
  }
  return TRUE;
}

void zkrc__call_give_results(zkrc__call *call, int prefix, const zoo_op_t *ops,
                             zoo_op_result_t *results) {
  for (int i = 0; i < call->op_count - prefix; i++) {
    const zoo_op_t *mine = &call->ops[prefix + i];
    const zoo_op_t *theirs = &ops[i];
    zoo_op_result_t *out = results ? &results[i] : NULL;
    if (out) {
      out->err = call->results[prefix + i].err;
      out->value = NULL;
      out->valuelen = 0;
      out->stat = NULL;
    }
    if (mine->type == ZOO_CREATE_OP && theirs->create_op.buf &&
        theirs->create_op.buflen > 0) {
      memcpy(theirs->create_op.buf, mine->create_op.buf,
             (size_t)theirs->create_op.buflen);
      if (out) {
        out->value = theirs->create_op.buf;
        out->valuelen = (int)strlen(theirs->create_op.buf);
      }
    } else if (mine->type == ZOO_SETDATA_OP && theirs->set_op.stat) {
      *theirs->set_op.stat = *mine->set_op.stat;
      if (out)
        out->stat = theirs->set_op.stat;
    }
  }
}

/* The ZooKeeper client calls completions without checking them for NULL:
 * fire-and-forget requests get these. */
void zkrc__ignore_string_done(int rc, const char *value, const void *data) {}
void zkrc__ignore_void_done(int rc, const void *data) {}

int zkrc__call_request(zkrc_session *s, zkrc__send_fn send, const void *arg,
                       int64_t deadline, zkrc__call **out) {
  if (out)
    *out = NULL;
  zkrc__call *call = zkrc__call_new();
  zkrc_conn *conn = zkrc__conn_use(s);
  /* No handle: between two (a new session is being opened), or closed. */
  int rc = conn ? send(conn, call, arg) : ZCLOSING;
  if (rc != ZOK)
    zkrc__call_fail_unsent(call, rc);
  if (conn)
    zkrc__conn_unuse(conn);
  if (!zkrc__call_wait(call, deadline)) {
    zkrc__call_unref(call);
    return ZKRC__CALL_TIMED_OUT;
  }
  /* A handle closed under the request is ECLOSED only for a closed
   * session: the session's own turnover is a lost connection. */
  rc = zkrc__session_reply_rc(s, call->rc);
  if (out)
    *out = call;
  else
    zkrc__call_unref(call);
  return rc;
}
