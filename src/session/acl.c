/*
 * ACLs as recipes keep them (session_internal.h): immutable and shared by
 * reference.
 */
#include "config.h"

#include <pthread.h>

#include <zookeeper/zookeeper.h>

#include "session/session_internal.h"

struct zkrc__acl {
  gint refs; /* 0: the shared static open ACL, never freed */
  struct ACL_vector v;
};

static zkrc__acl open_acl; /* v filled from ZOO_OPEN_ACL_UNSAFE on use */

int zkrc__acl_valid(const struct ACL_vector *acl) {
  if (acl == NULL)
    return 1;
  if (acl->count <= 0 || acl->data == NULL)
    return 0;
  for (int i = 0; i < acl->count; i++) {
    const struct ACL *a = &acl->data[i];
    if (a->id.scheme == NULL || a->id.id == NULL || a->perms == 0 ||
        (a->perms & ~ZOO_PERM_ALL) != 0)
      return 0;
  }
  return 1;
}

static gboolean is_open_acl(const struct ACL_vector *acl) {
  return acl == NULL || acl == &ZOO_OPEN_ACL_UNSAFE;
}

static void fill_open_acl(void) { open_acl.v = ZOO_OPEN_ACL_UNSAFE; }

zkrc__acl *zkrc__acl_new(const struct ACL_vector *acl) {
  if (is_open_acl(acl)) {
    /* Filled once (ZOO_OPEN_ACL_UNSAFE is no compile-time constant):
     * threads creating recipes at once must not write it together. */
    static pthread_once_t filled = PTHREAD_ONCE_INIT;
    pthread_once(&filled, fill_open_acl);
    return &open_acl;
  }
  zkrc__acl *copy = g_new0(zkrc__acl, 1);
  copy->refs = 1;
  copy->v.count = acl->count;
  copy->v.data = g_new0(struct ACL, acl->count);
  for (int i = 0; i < acl->count; i++) {
    copy->v.data[i].perms = acl->data[i].perms;
    copy->v.data[i].id.scheme = g_strdup(acl->data[i].id.scheme);
    copy->v.data[i].id.id = g_strdup(acl->data[i].id.id);
  }
  return copy;
}

zkrc__acl *zkrc__acl_ref(zkrc__acl *acl) {
  if (g_atomic_int_get(&acl->refs) > 0) /* 0: a static ACL, never freed */
    g_atomic_int_inc(&acl->refs);
  return acl;
}

void zkrc__acl_unref(zkrc__acl *acl) {
  if (acl == NULL || g_atomic_int_get(&acl->refs) == 0 ||
      !g_atomic_int_dec_and_test(&acl->refs))
    return;
  for (int i = 0; i < acl->v.count; i++) {
    g_free(acl->v.data[i].id.scheme);
    g_free(acl->v.data[i].id.id);
  }
  g_free(acl->v.data);
  g_free(acl);
}

struct ACL_vector *zkrc__acl_vector(zkrc__acl *acl) {
  return &acl->v;
}
