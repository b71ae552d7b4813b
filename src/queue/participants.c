/*
 * Who takes part in a queue: the participant listing every recipe hands
 * out (zkrc_lock_list, zkrc_election_list, ..._participants).  A read of
 * the directory, one getData per contender, nothing cached.
 */
#include "config.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "session/call.h"
#include "core/names.h"
#include "queue/queue.h"
#include "core/util.h"
#include "session/zk_call.h"
#include "zkrecipes.h"

/* --------------------------------------------------------- participants */

/* A participant's id: the node's data and a NUL, its length just before
 * it, where zkrc_participant_id_len() finds it.  zkrc_participant cannot
 * carry the length itself: lists are arrays of it, and a field more would
 * change their stride (the ABI).  Freed by zkrc_participants_free(). */
typedef struct id_block {
  size_t len;
  char bytes[];
} id_block;

static char *id_new(const char *data, int len) {
  size_t n = data && len > 0 ? (size_t)len : 0;
  id_block *b = malloc(sizeof *b + n + 1);
  if (b == NULL)
    return NULL;
  b->len = n;
  if (n)
    memcpy(b->bytes, data, n);
  b->bytes[n] = '\0';
  /* Not a leak: id_free() gets the block back from this pointer. */
  // cppcheck-suppress memleak
  return b->bytes;
}

static id_block *id_block_of(char *id) {
  return (id_block *)(id - offsetof(id_block, bytes));
}

size_t zkrc_participant_id_len(const zkrc_participant *p) {
  return p && p->id ? id_block_of(p->id)->len : 0;
}

static void id_free(char *id) {
  if (id)
    free(id_block_of(id));
}

int zkrc__queue_list(zkrc_session *s, const char *dir,
                     const zkrc__marker *markers, int64_t deadline,
                     zkrc_participant **list, size_t *count) {
  *list = NULL;
  *count = 0;
  if (zkrc__session_closed(s))
    return zkrc__fail(ZKRC_ECLOSED);
  zkrc_conn *conn = zkrc__conn_use(s);
  if (conn == NULL)
    return zkrc__fail(ZKRC_ECONNLOSS);
  zkrc__call *children = zkrc__call_new();
  int rc = zkrc__zk_get_children(conn, dir, NULL, zkrc__call_children_done,
                                 children);
  if (rc != ZOK)
    zkrc__call_fail_unsent(children, rc);
  zkrc__conn_unuse(conn);
  if (!zkrc__call_wait(children, deadline)) {
    zkrc__call_unref(children);
    return zkrc__fail(ZKRC_ETIMEDOUT);
  }
  int zk_rc = children->rc;
  GArray *sorted =
      zk_rc == ZOK ? zkrc__contenders_sorted(children->children.data,
                                             children->children.count, markers)
                   : NULL;
  zkrc__call_unref(children);
  if (zk_rc == ZNONODE) /* no directory: nobody takes part */
    return ZKRC_OK;
  if (zk_rc != ZOK) /* a handle closed under it: a lost connection */
    return zkrc__fail_zk(zkrc_from_zk_error(zkrc__session_reply_rc(s, zk_rc)),
                         zk_rc);

  /* One getData per contender, all sent before waiting for any. */
  GPtrArray *reads = g_ptr_array_new();
  conn = zkrc__conn_use(s);
  for (guint i = 0; i < sorted->len; i++) {
    zkrc__call *read = zkrc__call_new();
    char *path = g_strdup_printf(
        "%s/%s", dir, g_array_index(sorted, zkrc__contender_entry, i).name);
    rc = conn ? zkrc__zk_get(conn, path, NULL, zkrc__call_data_done, read)
              : ZCONNECTIONLOSS;
    if (rc != ZOK)
      zkrc__call_fail_unsent(read, rc);
    g_free(path);
    g_ptr_array_add(reads, read);
  }
  if (conn)
    zkrc__conn_unuse(conn);

  int err = ZKRC_OK;
  zk_rc = ZOK;
  GArray *out = g_array_new(FALSE, TRUE, sizeof(zkrc_participant));
  for (guint i = 0; i < reads->len; i++) {
    zkrc__call *read = g_ptr_array_index(reads, i);
    if (err == ZKRC_OK && !zkrc__call_wait(read, deadline)) {
      err = ZKRC_ETIMEDOUT;
    } else if (err == ZKRC_OK && read->rc == ZOK) {
      zkrc_participant p = {
          id_new(read->value, read->value_len),
          strdup(g_array_index(sorted, zkrc__contender_entry, i).name),
          read->stat.czxid, read->stat.ctime};
      g_array_append_val(out, p);
    } else if (err == ZKRC_OK && read->rc != ZNONODE) {
      /* A node that left meanwhile is simply not listed. */
      err = zkrc_from_zk_error(zkrc__session_reply_rc(s, read->rc));
      zk_rc = read->rc;
    }
    zkrc__call_unref(read);
  }
  g_ptr_array_free(reads, TRUE);
  zkrc__contenders_free(sorted);
  size_t n = out->len;
  /* Hand out malloc'ed memory the caller frees with free(). */
  zkrc_participant *result = n ? malloc(n * sizeof *result) : NULL;
  if (n && result) {
    memcpy(result, out->data, n * sizeof *result);
  } else if (n) { /* out of memory: drop the strings too */
    for (size_t i = 0; i < n; i++) {
      id_free(g_array_index(out, zkrc_participant, i).id);
      free(g_array_index(out, zkrc_participant, i).node);
    }
    n = 0;
    if (err == ZKRC_OK)
      err = ZKRC_ENOMEM;
  }
  g_array_free(out, TRUE);
  if (err != ZKRC_OK) {
    zkrc_participants_free(result, n);
    return zk_rc ? zkrc__fail_zk(err, zk_rc) : zkrc__fail(err);
  }
  *list = result;
  *count = n;
  return ZKRC_OK;
}

int64_t zkrc__queue_look_deadline(zkrc_session *s, int timeout_ms) {
  return zkrc__deadline_after(
      timeout_ms == ZKRC_NO_WAIT ? zkrc_session_timeout(s) : timeout_ms);
}

int zkrc__queue_list_checked(zkrc_session *s, const char *path,
                             const zkrc__marker *markers, int timeout_ms,
                             zkrc_participant **list, size_t *count) {
  if (list)
    *list = NULL;
  if (count)
    *count = 0;
  if (s == NULL || list == NULL || count == NULL ||
      zkrc_path_validate(path, NULL) != ZKRC_OK ||
      !zkrc__timeout_valid(timeout_ms))
    return zkrc__fail(ZKRC_EINVAL);
  return zkrc__queue_list(
      s, path, markers, zkrc__queue_look_deadline(s, timeout_ms), list, count);
}

void zkrc_participants_free(zkrc_participant *list, size_t count) {
  for (size_t i = 0; list && i < count; i++) {
    id_free(list[i].id);
    free(list[i].node);
  }
  free(list);
}

int zkrc__queue_participants(zkrc_session *s, const char *dir,
                             const zkrc__marker *markers, int64_t deadline,
                             char ***ids) {
  zkrc_participant *list = NULL;
  size_t n = 0;
  *ids = NULL;
  int err = zkrc__queue_list(s, dir, markers, deadline, &list, &n);
  if (err != ZKRC_OK)
    return err;
  char **strv = g_new0(char *, n + 1);
  for (size_t i = 0; i < n; i++)
    strv[i] = g_strdup(list[i].id);
  zkrc_participants_free(list, n);
  *ids = strv;
  return ZKRC_OK;
}
