/*
 * ZooKeeper's size limit, checked before sending (request_size.h).
 *
 * The sizes follow jute's binary encoding, which the C client and the
 * servers share: an int is 4 bytes, a long 8, a boolean 1; a string or a
 * buffer is its length (an int) and then its bytes (none for a null one,
 * whose length is -1).
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "session/request_size.h"
#include "session/session_internal.h"
#include "zkrecipes/error.h"

#define INT_BYTES 4
#define LONG_BYTES 8
#define BOOL_BYTES 1
/* RequestHeader: xid, type. */
#define REQUEST_HEADER (2 * INT_BYTES)
/* MultiHeader: type, done, err; before each op of a multi and at its end. */
#define MULTI_HEADER (INT_BYTES + BOOL_BYTES + INT_BYTES)

static size_t path_bytes(size_t chroot, const char *path) {
  return INT_BYTES + chroot + (path ? strlen(path) : 0);
}

static size_t buffer_bytes(int len) {
  return INT_BYTES + (len > 0 ? (size_t)len : 0);
}

/* An ACL list: its count, then per entry the perms and the Id (scheme,
 * id).  NULL stands for the library's default, ZOO_OPEN_ACL_UNSAFE. */
static size_t acl_bytes(const struct ACL_vector *acl) {
  if (acl == NULL)
    acl = &ZOO_OPEN_ACL_UNSAFE;
  size_t n = INT_BYTES;
  for (int i = 0; acl && i < acl->count; i++) {
    const struct ACL *a = &acl->data[i];
    n += INT_BYTES + path_bytes(0, a->id.scheme) + path_bytes(0, a->id.id);
  }
  return n;
}

static gboolean with_ttl(int flags) {
  return flags == ZOO_PERSISTENT_WITH_TTL ||
         flags == ZOO_PERSISTENT_SEQUENTIAL_WITH_TTL;
}

/* The body of one op (CreateRequest, DeleteRequest, SetDataRequest,
 * CheckVersionRequest), or SIZE_MAX for another type. */
static size_t op_bytes(size_t chroot, const zoo_op_t *op) {
  switch (op->type) {
  case ZOO_CREATE_OP:
  case ZOO_CREATE_CONTAINER_OP: /* zoo_create_op_init's types by mode */
  case ZOO_CREATE_TTL_OP:
    return path_bytes(chroot, op->create_op.path) +
           buffer_bytes(op->create_op.datalen) + acl_bytes(op->create_op.acl) +
           INT_BYTES + (with_ttl(op->create_op.flags) ? LONG_BYTES : 0);
  case ZOO_SETDATA_OP:
    return path_bytes(chroot, op->set_op.path) +
           buffer_bytes(op->set_op.datalen) + INT_BYTES;
  case ZOO_DELETE_OP:
    return path_bytes(chroot, op->delete_op.path) + INT_BYTES;
  case ZOO_CHECK_OP:
    return path_bytes(chroot, op->check_op.path) + INT_BYTES;
  default:
    return SIZE_MAX;
  }
}

size_t zkrc__request_size(zkrc_session *s, gboolean multi, int count,
                          const zoo_op_t *ops) {
  size_t chroot = zkrc__session_chroot_len(s);
  size_t n = REQUEST_HEADER + (multi ? MULTI_HEADER : 0);
  for (int i = 0; i < count; i++) {
    size_t op = op_bytes(chroot, &ops[i]);
    if (op == SIZE_MAX)
      return SIZE_MAX;
    n += op + (multi ? MULTI_HEADER : 0);
  }
  return n;
}

/* The data a create or setData op writes (0 for the others). */
static int op_data_len(const zoo_op_t *op) {
  if (op->type == ZOO_CREATE_OP || op->type == ZOO_CREATE_CONTAINER_OP ||
      op->type == ZOO_CREATE_TTL_OP)
    return op->create_op.datalen;
  if (op->type == ZOO_SETDATA_OP)
    return op->set_op.datalen;
  return 0;
}

int zkrc__request_check(zkrc_session *s, gboolean multi, int count,
                        const zoo_op_t *ops) {
  for (int i = 0; i < count; i++)
    if (op_data_len(&ops[i]) > ZKRC__DATA_MAX)
      return ZKRC_ETOOBIG;
  return zkrc__request_size(s, multi, count, ops) <= ZKRC__PACKET_MAX
             ? ZKRC_OK
             : ZKRC_ETOOBIG;
}

int zkrc__request_check_create(zkrc_session *s, const char *path, size_t len,
                               const struct ACL_vector *acl, int flags) {
  if (len > ZKRC__DATA_MAX)
    return ZKRC_ETOOBIG;
  zoo_op_t op;
  zoo_create_op_init(&op, path, NULL, (int)len, acl, flags, NULL, 0);
  return zkrc__request_check(s, FALSE, 1, &op);
}

int zkrc__request_check_set(zkrc_session *s, const char *path, size_t len) {
  if (len > ZKRC__DATA_MAX)
    return ZKRC_ETOOBIG;
  zoo_op_t op;
  zoo_set_op_init(&op, path, NULL, (int)len, -1, NULL);
  return zkrc__request_check(s, FALSE, 1, &op);
}
