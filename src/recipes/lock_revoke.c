/*
 * Asking a lock's holder to give it up: Curator's Revoker.attemptRevoke(),
 * a setData of "__REVOKE__" on the holder's node (names.h's
 * ZKRC__REVOKE_MESSAGE).  Whoever made the lock revocable is told (the
 * queue reads its own node's data: queue_watch.c); the holder decides.
 */
#include "config.h"

#include <string.h>

#include "session/call.h"
#include "core/names.h"
#include "queue/queue.h"
#include "session/request_size.h"
#include "core/util.h"
#include "session/zk_call.h"
#include "zkrecipes.h"

static int send_revoke(zkrc_conn *conn, zkrc__call *call, const void *arg) {
  static const char revoke[] = ZKRC__REVOKE_MESSAGE;
  return zkrc__zk_set(conn, (const char *)arg, revoke, (int)sizeof revoke - 1,
                      -1, zkrc__call_stat_done, call);
}

/* Is @p path a lock contender's node: a valid path whose last name ends
 * in a marker of the lock family and a sequence? */
static gboolean is_lock_node(const char *path) {
  if (path == NULL || zkrc_path_validate(path, NULL) != ZKRC_OK)
    return FALSE;
  const char *name = strrchr(path, '/') + 1;
  int32_t seq;
  return zkrc__contender_seq(name, zkrc__lock_markers, &seq);
}

int zkrc_lock_revoke(zkrc_session *s, const char *node_path, int timeout_ms) {
  if (s == NULL || !is_lock_node(node_path) || !zkrc__timeout_valid(timeout_ms))
    return zkrc__fail(ZKRC_EINVAL);
  int fits =
      zkrc__request_check_set(s, node_path, sizeof ZKRC__REVOKE_MESSAGE - 1);
  if (fits != ZKRC_OK) /* a path near the size limit */
    return zkrc__fail(fits);
  zkrc__call *call;
  int rc = zkrc__call_request(s, send_revoke, node_path,
                              zkrc__queue_look_deadline(s, timeout_ms), &call);
  if (call)
    zkrc__call_unref(call);
  if (rc == ZKRC__CALL_TIMED_OUT)
    return zkrc__fail(ZKRC_ETIMEDOUT);
  return rc == ZOK ? ZKRC_OK : zkrc__fail_from_zk(rc);
}
