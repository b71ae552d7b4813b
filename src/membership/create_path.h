/*
 * Creating a node and the containers above it without waiting: one
 * request after the other, each sent from the previous one's completion,
 * for the objects of this folder whose constructors never wait for the
 * network (the partitioner's party node, a registration's persistent
 * node).
 */
#ifndef ZKRC_CREATE_PATH_H
#define ZKRC_CREATE_PATH_H

#include <stddef.h>
#include <stdint.h>

#include <glib.h>

#include "session/session_internal.h"

/* What done() gets instead of a ZooKeeper code when go_on() said stop. */
#define ZKRC__CREATE_STOPPED 1

/* The chain's end: @p rc is ZooKeeper's code (as zkrc__session_reply_rc
 * gives it) of the node's create, or of the first container's create
 * that failed otherwise than with ZNODEEXISTS, or ZKRC__CREATE_STOPPED;
 * @p generation is the ZooKeeper session of the handle the last request
 * went on (0 when none was sent); @p node_sent says whether the node's
 * create was sent (its outcome may be unknown: ZCONNECTIONLOSS). */
typedef void (*zkrc__create_path_fn)(int rc, uint64_t generation,
                                     gboolean node_sent, void *arg);

typedef struct zkrc__create_path_args {
  const char *path;
  const char *data; /* NULL: none */
  size_t len;
  int flags;      /* the node's (the containers are ZOO_CONTAINER) */
  zkrc__acl *acl; /* of every node created (referenced by the chain) */
} zkrc__create_path_args;

/* Create @p a->path (copied, as its data), after the containers above it
 * (from the top; one that exists counts as made), one request at a time
 * on @p s's current handle.  Before each request go_on(@p arg) is asked
 * (FALSE: stop); done(..., @p arg) runs once at the end.  Both run on
 * the session's worker or ZooKeeper's completion thread, never on the
 * caller's, with no zkrecipes mutex held; neither may block.  Never
 * waits. */
void zkrc__create_path(zkrc_session *s, const zkrc__create_path_args *a,
                       gboolean (*go_on)(void *arg), zkrc__create_path_fn done,
                       void *arg);

#endif /* ZKRC_CREATE_PATH_H */
