/*
 * ZooKeeper's size limit (jute.maxbuffer), the one rule every write of the
 * library passes before it is sent.
 *
 * A server reads a request's length (the 4-byte prefix of its packet) and
 * drops the connection when it exceeds jute.maxbuffer, 0xfffff bytes by
 * default: the client then reconnects and a recipe that sends the request
 * again (an ephemeral node after each reconnection) resets every
 * connection of its session.  What counts is the whole request after the
 * prefix: its header, the path (with the session's chroot), the data, the
 * ACL list and the flags, and for a multi every op with its own header.
 *
 * A node's data must also come back: a getData reply (reply header, data,
 * Stat) over jute.maxbuffer is refused by the Java client (Curator's
 * peers), so data is bounded by ZKRC__DATA_MAX, which such a reply fits.
 */
#ifndef ZKRC_REQUEST_SIZE_H
#define ZKRC_REQUEST_SIZE_H

#include <stddef.h>

#include <glib.h>
#include <zookeeper/zookeeper.h>

#include "zkrecipes/session.h"

/* The servers' and the Java client's default jute.maxbuffer: the most
 * bytes a packet may have after its length prefix. */
#define ZKRC__PACKET_MAX 0xfffff
/* A getData reply's bytes beside the data: reply header (xid, zxid, err:
 * 16), the data's length (4) and the Stat (68). */
#define ZKRC__DATA_REPLY_ENVELOPE 88
/* The most data a node written by the library may hold: 1,048,487 bytes,
 * so that a getData reply still fits a Java client's jute.maxbuffer. */
#define ZKRC__DATA_MAX (ZKRC__PACKET_MAX - ZKRC__DATA_REPLY_ENVELOPE)

/* The bytes of the request made of @p ops after its length prefix, as
 * session @p s would send it (its chroot before every path): one request
 * (@p multi FALSE, @p count 1: the op as zoo_acreate, zoo_aset, ...) or a
 * multi.  SIZE_MAX for an op of unknown type. */
size_t zkrc__request_size(zkrc_session *s, gboolean multi, int count,
                          const zoo_op_t *ops);

/* The rule: ZKRC_OK when the request passes (zkrc__request_size() within
 * ZKRC__PACKET_MAX, and no create or setData carries more than
 * ZKRC__DATA_MAX bytes of data), ZKRC_ETOOBIG otherwise.  Pure: sends
 * nothing, takes no lock of a recipe (reads the session's hosts, which
 * never change); call it before sending, from any thread. */
int zkrc__request_check(zkrc_session *s, gboolean multi, int count,
                        const zoo_op_t *ops);

/* zkrc__request_check() of a create (zoo_acreate/zoo_acreate2) or a
 * setData (zoo_aset) of @p len bytes of data on @p path.  In every op, a
 * NULL ACL list counts as ZOO_OPEN_ACL_UNSAFE, the library's default. */
int zkrc__request_check_create(zkrc_session *s, const char *path, size_t len,
                               const struct ACL_vector *acl, int flags);
int zkrc__request_check_set(zkrc_session *s, const char *path, size_t len);

#endif /* ZKRC_REQUEST_SIZE_H */
