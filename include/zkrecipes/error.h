/*
 * zkrecipes/error.h - error codes and their messages.
 *
 * Every zkrecipes function that can fail returns an int: ZKRC_OK (0) on
 * success or one of the negative ZKRC_E* codes below.  zkrc_strerror() turns
 * a code into a sentence and zkrc_err_name() into its symbolic name.
 *
 * When a failure came from ZooKeeper itself, the ZooKeeper return code
 * (ZNONODE, ZNOAUTH, ZCONNECTIONLOSS, ...) is kept: zkrc_last_zk_error()
 * returns it for the most recent failure reported to the calling thread, and
 * asynchronous callbacks receive it alongside the zkrecipes code.
 *
 * Transient failures: ZKRC_ECONNLOSS, ZKRC_ETIMEDOUT, ZKRC_ESESSIONEXPIRED
 * and ZKRC_ESESSIONLOST.  The call did not complete in time, or its
 * connection or ZooKeeper session went away; the session reconnects, or
 * opens a new ZooKeeper session (unless no_reopen), and a later call may
 * succeed.  After one of them the outcome of a write that was in flight
 * is unknown: it may have been applied or not (read the node again, its
 * version says, before writing again).  A call made while the session is
 * between two ZooKeeper sessions (reopening after an expiry or a LOST),
 * or cut off by that turnover, fails with ZKRC_ECONNLOSS.  ZKRC_ECLOSED
 * says only that the session was closed (zkrc_session_close()) or is dead
 * for good (no_reopen, failed authentication), or that the object was
 * closed by its owner: calling again cannot help.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef ZKRECIPES_ERROR_H
#define ZKRECIPES_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/*
 * X-macro list of every error: name, value, message.  The values lie from
 * -1001 down, apart from ZooKeeper's own codes (ZOO_ERRORS: -1 to -15 and
 * -100 to -199), so that a function that may return either (such as
 * zkrc_session_with_handle()) is never ambiguous.  They are stable across
 * releases; new codes are only ever appended.
 */
#define ZKRC_ERRNO_MAP(XX)                                                     \
  XX(EINVAL, -1001, "invalid argument")                                        \
  XX(ENOMEM, -1002, "out of memory")                                           \
  XX(ETIMEDOUT, -1003, "the deadline passed before the operation completed")   \
  XX(ELOCKED, -1004, "held by another participant (try without waiting)")      \
  XX(ENOTOWNER, -1005, "the calling thread does not hold this lock")           \
  XX(ECONNLOSS, -1006, "the connection to ZooKeeper was lost")                 \
  XX(ESESSIONEXPIRED, -1007, "the ZooKeeper session expired")                  \
  XX(ESESSIONLOST, -1008,                                                      \
     "the session's lease ran out: the servers may expire it from now on, "    \
     "so it is treated as expired")                                            \
  XX(ELOCKLOST, -1009,                                                         \
     "no longer held: our node is gone (lock or leadership)")                  \
  XX(ECLOSED, -1010, "the session or object has been closed")                  \
  XX(ECANCELED, -1011, "the operation was cancelled")                          \
  XX(ECONNECT, -1012, "could not connect to any ZooKeeper server in time")     \
  XX(ENOAUTH, -1013, "not authorized by the node's ACL")                       \
  XX(EAUTHFAILED, -1014, "authentication with ZooKeeper failed")               \
  XX(ENONODE, -1015, "the node does not exist")                                \
  XX(ENODEEXISTS, -1016, "the node already exists")                            \
  XX(ENOTEMPTY, -1017, "the node has children")                                \
  XX(EBADVERSION, -1018, "the node's version did not match")                   \
  XX(EZOOKEEPER, -1019,                                                        \
     "ZooKeeper reported an error (see zkrc_last_zk_error)")                   \
  XX(ESTATE, -1020, "the object is not in a state that allows this call")      \
  XX(ENOTLEADER, -1021, "this participant is not the leader")                  \
  XX(EBADNODE, -1022, "a node has a name or content zkrecipes cannot use")     \
  XX(EOVERFLOW, -1023, "a counter would overflow")                             \
  XX(EDEADLK, -1024,                                                           \
     "would deadlock: only a release by the calling thread could grant it "    \
     "(a read-write lock's upgrade, or a downgrade behind another writer)")    \
  XX(ETOOBIG, -1025,                                                           \
     "too large: ZooKeeper refuses a request of 1 MiB or more "                \
     "(jute.maxbuffer), envelope included, or a session's ephemeral nodes "    \
     "would take more than its close may list; nothing was sent")              \
  XX(ENOTSUP, -1026,                                                           \
     "not supported by the ZooKeeper client this library was built with "      \
     "(TLS and SASL need one built with them: zkrc_features()), or by the "    \
     "servers (TTL nodes need zookeeper.extendedTypesEnabled)")

/** The error codes. */
typedef enum zkrc_errno {
  ZKRC_OK = 0,
#define ZKRC_ERRNO_ENUM(name, value, msg) ZKRC_##name = value,
  ZKRC_ERRNO_MAP(ZKRC_ERRNO_ENUM)
#undef ZKRC_ERRNO_ENUM
} zkrc_errno;

/**
 * A sentence describing @p err (a ZKRC_* code).
 *
 * Ownership: the string is static; do not free it.
 * Threading: safe from any thread.
 * Errors: an unknown code yields "unknown zkrecipes error".
 */
const char *zkrc_strerror(int err);

/**
 * The symbolic name of @p err, such as "ZKRC_ETIMEDOUT".
 *
 * Ownership: static string.  Threading: any thread.
 * Errors: an unknown code yields "ZKRC_UNKNOWN".
 */
const char *zkrc_err_name(int err);

/**
 * The ZooKeeper return code (a ZOO_ERRORS value from zookeeper.h such as
 * ZNOAUTH) behind the most recent error a zkrecipes call returned to this
 * thread, or 0 (ZOK) when that error did not come from ZooKeeper.
 *
 * The value is per thread, like errno, and is overwritten by the next failing
 * zkrecipes call on the same thread; successful calls leave it unchanged.
 * Threading: any thread.
 */
int zkrc_last_zk_error(void);

/**
 * Map a ZooKeeper return code to the zkrecipes code that describes it
 * (ZOK → ZKRC_OK, ZNONODE → ZKRC_ENONODE, an unlisted one → ZKRC_EZOOKEEPER).
 * Threading: any thread.
 */
int zkrc_from_zk_error(int zk_rc);

#ifdef __cplusplus
}
#endif
#endif /* ZKRECIPES_ERROR_H */
