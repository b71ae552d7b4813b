/*
 * The lock's fenced write (zkrc_lock_fenced_multi): the caller's operations
 * in one multi behind a check of the calling thread's lock node, sent on
 * the session that node lives on.
 */
#include "config.h"

#include "session/call.h"
#include "recipes/lock_private.h"
#include "session/request_size.h"
#include "core/util.h"
#include "session/zk_call.h"

/* --------------------------------------------------------- fenced write */

/* The first failing operation's code in a failed multi (the servers mark
 * the others ZRUNTIMEINCONSISTENCY). */
static int first_failure(const zoo_op_result_t *results, int n) {
  for (int i = 0; i < n; i++)
    if (results[i].err != ZOK && results[i].err != ZRUNTIMEINCONSISTENCY)
      return results[i].err;
  return ZSYSTEMERROR;
}

/* Send @p ops behind a check of our @p node (of ZooKeeper session
 * @p generation of @p s, the one our node lives on) as one multi for
 * @p call, unless they are malformed (ZKRC_EINVAL) or the
 * multi would not pass the size rule (ZKRC_ETOOBIG, request_size.h): then
 * nothing is sent and the call is failed. */
static int send_fenced(zkrc_session *s, zkrc__call *call, const char *node,
                       uint64_t generation, int count, const zoo_op_t *ops) {
  if (!zkrc__call_take_ops(call, 1, count, ops)) {
    zkrc__call_fail_unsent(call, ZBADARGUMENTS);
    return ZKRC_EINVAL;
  }
  zoo_check_op_init(&call->ops[0], node, -1);
  int err = zkrc__request_check(s, TRUE, call->op_count, call->ops);
  if (err != ZKRC_OK) {
    zkrc__call_fail_unsent(call, ZBADARGUMENTS);
    return err;
  }
  zkrc_conn *conn = zkrc__conn_use(s);
  int rc;
  if (conn == NULL || conn->generation != generation) {
    rc = ZSESSIONEXPIRED; /* our node belonged to an earlier session */
    zkrc__call_fail_unsent(call, rc);
  } else {
    rc = zkrc__zk_multi(conn, call->op_count, call->ops, call->results,
                        zkrc__call_multi_done, call);
    if (rc != ZOK)
      zkrc__call_fail_unsent(call, rc);
  }
  if (conn)
    zkrc__conn_unuse(conn);
  return ZKRC_OK;
}

int zkrc_lock_fenced_multi(zkrc_lock *lk, int count, const zoo_op_t *ops,
                           zoo_op_result_t *results, int timeout_ms) {
  if (lk == NULL || count < 0 || (count > 0 && ops == NULL) ||
      !zkrc__timeout_valid(timeout_ms))
    return zkrc__fail(ZKRC_EINVAL);
  holder *h = zkrc__lock_my_holder_locked(lk);
  if (h == NULL)
    return zkrc__fail(ZKRC_ENOTOWNER);
  if (h->state != H_HELD) {
    g_mutex_unlock(&lk->r.o.mu);
    return zkrc__fail(ZKRC_ELOCKLOST);
  }
  char *node = zkrc__holder_node(h);
  uint64_t generation = zkrc__contender_generation(h->c);
  zkrc_session *s = zkrc__session_ref(zkrc__contender_session(h->c));
  g_mutex_unlock(&lk->r.o.mu);

  zkrc__call *call = zkrc__call_new();
  int err = send_fenced(s, call, node, generation, count, ops);
  if (err == ZKRC_OK) {
    if (!zkrc__call_wait(call, zkrc__queue_look_deadline(s, timeout_ms))) {
      err = zkrc__fail(ZKRC_ETIMEDOUT);
    } else if (call->rc == ZOK) {
      zkrc__call_give_results(call, 1, ops, results);
    } else if (call->rc == ZSESSIONEXPIRED || call->results[0].err == ZNONODE) {
      err = zkrc__fail_zk(ZKRC_ELOCKLOST, ZNONODE);
    } else if (call->rc == ZCONNECTIONLOSS || call->rc == ZOPERATIONTIMEOUT ||
               call->rc == ZCLOSING || call->rc == ZINVALIDSTATE) {
      /* Applied or not, nobody knows: ECLOSED only for a closed session. */
      int rc = zkrc__session_reply_rc(s, call->rc);
      err = zkrc__fail_zk(zkrc_from_zk_error(rc), call->rc);
    } else {
      zkrc__call_give_results(call, 1, ops, results);
      err = zkrc__fail_from_zk(first_failure(call->results, call->op_count));
    }
  } else {
    err = zkrc__fail(err);
  }
  zkrc__call_unref(call);
  zkrc__session_unref(s);
  g_free(node);
  return err;
}
