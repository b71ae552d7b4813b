/*
 * Waiting for one asynchronous ZooKeeper call with a deadline.
 *
 * The synchronous ZooKeeper API blocks until the server answers or the
 * client gives up, which can be far past a caller's deadline.  A zkrc__call
 * is the meeting point between the thread that waits (with a deadline) and
 * the completion that eventually runs on ZooKeeper's thread: both hold a
 * reference, so whichever finishes last frees it, and a caller that gave up
 * never has its memory written to.
 */
#ifndef ZKRC_CALL_H
#define ZKRC_CALL_H

#include <stdint.h>

#include <glib.h>
#include <zookeeper/zookeeper.h>

#include "session/session_internal.h"
#include "zkrecipes/session.h"

typedef struct zkrc__call {
  gint refs;
  GMutex mu;
  GCond cond;
  gboolean done;
  int rc;                        /* the ZooKeeper return code */
  struct Stat stat;              /* stat / data / create2 replies */
  char *value;                   /* created path or node data (g_malloc) */
  int value_len;                 /* -1 for a null data */
  struct String_vector children; /* deep copy; free with the call */
  /* multi: the call owns copies of the ops and their output buffers */
  int op_count;
  zoo_op_t *ops;
  zoo_op_result_t *results;
  struct Stat *op_stats;
  char **op_bufs;
} zkrc__call;

/* A call with two references: the waiter's and the completion's. */
zkrc__call *zkrc__call_new(void);
void zkrc__call_unref(zkrc__call *call);

/* Wait until the completion ran or @p deadline passed (TRUE if it ran). */
gboolean zkrc__call_wait(zkrc__call *call, int64_t deadline);

/* Mark the call failed before it was sent (drops the completion's
 * reference, since no completion will run). */
void zkrc__call_fail_unsent(zkrc__call *call, int rc);

/* Completions for zk_call.h's requests with a zkrc__call as data. */
void zkrc__call_void_done(int rc, const void *data);
/* (sync and create replies; a create's path is kept in value) */
void zkrc__call_string_done(int rc, const char *value, const void *data);
void zkrc__call_stat_done(int rc, const struct Stat *stat, const void *data);
void zkrc__call_data_done(int rc, const char *value, int value_len,
                          const struct Stat *stat, const void *data);
void zkrc__call_children_done(int rc, const struct String_vector *strings,
                              const void *data);
void zkrc__call_multi_done(int rc, const void *data);

/* No-op completions for requests nobody waits for (the ZooKeeper client
 * does not accept NULL completions). */
void zkrc__ignore_string_done(int rc, const char *value, const void *data);
void zkrc__ignore_void_done(int rc, const void *data);

/* Copy @p ops into the call (with output buffers of its own) for
 * zkrc__zk_multi(conn, call->op_count, call->ops, call->results, ...);
 * ops[0..prefix) are left for the caller to fill.  Returns FALSE on a
 * malformed op. */
gboolean zkrc__call_take_ops(zkrc__call *call, int prefix, int count,
                             const zoo_op_t *ops);
/* After a completed multi: copy results and outputs back to the caller's
 * ops/results (skipping the first @p prefix ops the call added). */
void zkrc__call_give_results(zkrc__call *call, int prefix, const zoo_op_t *ops,
                             zoo_op_result_t *results);

/* One request waited for with a deadline: what zkrc__call_request()
 * returns when the deadline passed first, above every ZooKeeper code (ZOK
 * is 0, errors are negative). */
#define ZKRC__CALL_TIMED_OUT 1

/* Sends a request for @p call on @p conn (through zk_call.h); returns the
 * client's code. */
typedef int (*zkrc__send_fn)(zkrc_conn *conn, zkrc__call *call,
                             const void *arg);

/* Send with @p send(@p arg) on @p s's current handle and wait until
 * @p deadline.  Returns the reply's ZooKeeper code as
 * zkrc__session_reply_rc() gives it (no handle, or one closed under the
 * request: ZCONNECTIONLOSS while the session reopens, ZCLOSING once it is
 * closed), *@p out set to the call (unref it) when @p out is not NULL; or
 * ZKRC__CALL_TIMED_OUT, *@p out NULL. */
int zkrc__call_request(zkrc_session *s, zkrc__send_fn send, const void *arg,
                       int64_t deadline, zkrc__call **out);

#endif /* ZKRC_CALL_H */
