/*
 * The one seam between the library and the ZooKeeper client: every request
 * the library sends, every watch it sets or removes and every handle it
 * opens or adopts passes through these functions (src/session/zk_call.c), and no
 * other file of src/ calls the client's asynchronous functions.  In one
 * place they
 *
 *  1. count the requests sent (the session's statistics, zkrc__sent(), and
 *     a process-wide count per kind of request for the tests);
 *  2. show ThreadSanitizer the hand-off to the client's completion thread:
 *     in a --enable-tsan build a call's completion is a trampoline of the
 *     seam's, that acquires what the call released before it was made
 *     (tests/tsan.supp makes TSan ignore the client's own mutexes, so it
 *     would not see the hand-off otherwise).  A watch's context is a number
 *     naming an entry of the watch registry (watch.c), handed over under
 *     the registry's mutex: watchers are passed as they are.  Other builds
 *     pass the caller's completion itself;
 *  3. let a test fail a request without sending it (zkrc__zk_fail_nth).
 *
 * Each function is the client's call of the same name on @p c's handle
 * (c->zh), with the same arguments, completion and return code: ZOK when
 * the request was queued (its completion runs exactly once, on the
 * client's completion thread), another code when it failed at once (no
 * completion runs).  A watch_ctx of NULL sets no watch; another is a
 * context of zkrc__watch_register() and sets a watch with
 * zkrc__watch_dispatch.  Call them from any thread, with or without a
 * mutex held, never blocking; the caller pins @p c (zkrc__conn_use).
 */
#ifndef ZKRC_ZK_CALL_H
#define ZKRC_ZK_CALL_H

#include <stdint.h>

#include <zookeeper/zookeeper.h>

#include "session/session_internal.h"

/* The kinds of request, for the counts and the faults. */
typedef enum zkrc__zk_op {
  ZKRC__ZK_CREATE = 1, /* zoo_acreate, zoo_acreate2 */
  ZKRC__ZK_DELETE,
  ZKRC__ZK_SET,
  ZKRC__ZK_EXISTS, /* zoo_aexists, zoo_awexists */
  ZKRC__ZK_GET,    /* zoo_aget, zoo_awget */
  ZKRC__ZK_CHILDREN,
  ZKRC__ZK_MULTI,
  ZKRC__ZK_SYNC,
  ZKRC__ZK_AUTH,
  ZKRC__ZK_OPS /* how many, plus one */
} zkrc__zk_op;

int zkrc__zk_create(zkrc_conn *c, const char *path, const char *value,
                    int valuelen, const struct ACL_vector *acl, int mode,
                    string_completion_t done, const void *data);
int zkrc__zk_create2(zkrc_conn *c, const char *path, const char *value,
                     int valuelen, const struct ACL_vector *acl, int mode,
                     string_stat_completion_t done, const void *data);
/* zoo_acreate_ttl: a node of mode ZOO_PERSISTENT_WITH_TTL or
 * ZOO_PERSISTENT_SEQUENTIAL_WITH_TTL that the servers delete once it has no
 * child and was not written for @p ttl ms (counted as a create). */
int zkrc__zk_create_ttl(zkrc_conn *c, const char *path, const char *value,
                        int valuelen, const struct ACL_vector *acl, int mode,
                        int64_t ttl, string_completion_t done,
                        const void *data);
int zkrc__zk_delete(zkrc_conn *c, const char *path, int version,
                    void_completion_t done, const void *data);
int zkrc__zk_set(zkrc_conn *c, const char *path, const char *buffer, int buflen,
                 int version, stat_completion_t done, const void *data);
int zkrc__zk_exists(zkrc_conn *c, const char *path, void *watch_ctx,
                    stat_completion_t done, const void *data);
int zkrc__zk_get(zkrc_conn *c, const char *path, void *watch_ctx,
                 data_completion_t done, const void *data);
/* zoo_awgetconfig / zoo_agetconfig: the data of /zookeeper/config
 * (counted as a get). */
int zkrc__zk_getconfig(zkrc_conn *c, void *watch_ctx, data_completion_t done,
                       const void *data);
int zkrc__zk_get_children(zkrc_conn *c, const char *path, void *watch_ctx,
                          strings_completion_t done, const void *data);
int zkrc__zk_multi(zkrc_conn *c, int count, const zoo_op_t *ops,
                   zoo_op_result_t *results, void_completion_t done,
                   const void *data);
int zkrc__zk_sync(zkrc_conn *c, const char *path, string_completion_t done,
                  const void *data);
/* @p done may be NULL (nobody waits for the answer). */
int zkrc__zk_add_auth(zkrc_conn *c, const char *scheme, const char *cred,
                      void_completion_t done, const void *data);

/* zoo_remove_watches of a watch set through the seam with @p watch_ctx
 * (not a request of its own: neither counted nor failed). */
int zkrc__zk_remove_watches(zkrc_conn *c, const char *path, ZooWatcherType type,
                            void *watch_ctx, int local);

/* zoo_set_servers on @p c's handle: the client connects to one of
 * @p hosts from then on, moving its connection when the list asks
 * (not a request: neither counted nor failed). */
int zkrc__zk_set_servers(zkrc_conn *c, const char *hosts);

/* zookeeper_init2 for @p c (c->zh not set yet): its watcher is
 * zkrc__session_global_watcher with @p c as the context.  NULL and errno
 * as zookeeper_init2. */
zhandle_t *zkrc__zk_open(zkrc_conn *c, const char *hosts, int recv_timeout,
                         log_callback_fn log);
/* An adopted handle c->zh: makes @p c its context and
 * zkrc__session_global_watcher its watcher; returns the watcher it had. */
watcher_fn zkrc__zk_adopt(zkrc_conn *c);

/* ------------------------------------------------------ for the tests */

/* How many requests of kind @p op the process has sent (queued), injected
 * failures excluded. */
uint64_t zkrc__zk_sent_count(zkrc__zk_op op);

/* Fault injection, for white-box tests (they link the core statically).
 * The @p nth next request of kind @p op (1: the next one), in any session
 * of the process, is not sent: the call returns ZOK, sets no watch, and
 * its completion runs later with @p zk_error and no result (a multi's
 * results as they were), on a thread of the seam's that runs such
 * completions one at a time, never on the caller's thread.  A request
 * without a completion is dropped.  One fault per kind is armed at a
 * time; @p nth <= 0 or @p zk_error ZOK disarms it.  Returns ZKRC_EINVAL
 * (nothing changed) for an unknown @p op. */
int zkrc__zk_fail_nth(zkrc__zk_op op, int nth, int zk_error);
/* How many requests of kind @p op were failed by injection so far. */
uint64_t zkrc__zk_failed_count(zkrc__zk_op op);

#endif /* ZKRC_ZK_CALL_H */
