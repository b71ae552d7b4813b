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
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef ZKRECIPES_ERROR_H
#define ZKRECIPES_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/*
 * X-macro list of every error: name, value, message.  The values are stable
 * across releases; new codes are only ever appended.
 */
#define ZKRC_ERRNO_MAP(XX)                                                    \
  XX(EINVAL, -1, "invalid argument")                                          \
  XX(ENOMEM, -2, "out of memory")                                             \
  XX(ETIMEDOUT, -3, "the deadline passed before the operation completed")     \
  XX(ELOCKED, -4, "held by another participant (try without waiting)")        \
  XX(ENOTOWNER, -5, "the calling thread does not hold this lock")             \
  XX(ECONNLOSS, -6, "the connection to ZooKeeper was lost")                   \
  XX(ESESSIONEXPIRED, -7, "the ZooKeeper session expired")                    \
  XX(ESESSIONLOST, -8,                                                        \
     "the session's lease ran out: the servers may expire it from now on, "   \
     "so it is treated as expired")                                           \
  XX(ELOCKLOST, -9, "no longer held: our node is gone (lock or leadership)") \
  XX(ECLOSED, -10, "the session or object has been closed")                   \
  XX(ECANCELED, -11, "the operation was cancelled")                           \
  XX(ECONNECT, -12, "could not connect to any ZooKeeper server in time")      \
  XX(ENOAUTH, -13, "not authorized by the node's ACL")                        \
  XX(EAUTHFAILED, -14, "authentication with ZooKeeper failed")                \
  XX(ENONODE, -15, "the node does not exist")                                 \
  XX(ENODEEXISTS, -16, "the node already exists")                             \
  XX(ENOTEMPTY, -17, "the node has children")                                 \
  XX(EBADVERSION, -18, "the node's version did not match")                    \
  XX(EZOOKEEPER, -19, "ZooKeeper reported an error (see zkrc_last_zk_error)") \
  XX(ESTATE, -20, "the object is not in a state that allows this call")       \
  XX(ENOTLEADER, -21, "this participant is not the leader")                   \
  XX(EBADNODE, -22, "a node has a name or content zkrecipes cannot use")      \
  XX(EOVERFLOW, -23, "a counter would overflow")

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
