/*
 * Credentials (zkrc_session_add_auth): kept for every new handle of the
 * session, sent on the current one, and given to the sessions opened
 * beside it (session_place.c).
 */
#include "config.h"

#include <string.h>

#include "session/call.h"
#include "session/session_private.h"
#include "core/util.h"
#include "session/zk_call.h"
#include "zkrecipes/error.h"

void zkrc__auth_entry_free(gpointer p) {
  auth_entry *a = p;
  g_free(a->scheme);
  memset(a->cred, 0, strlen(a->cred)); /* a secret */
  g_free(a->cred);
  g_free(a);
}

static auth_entry *auth_entry_new(const char *scheme, const char *cred) {
  auth_entry *a = g_new(auth_entry, 1);
  a->scheme = g_strdup(scheme);
  a->cred = g_strdup(cred);
  return a;
}

void zkrc__session_copy_auths(zkrc_session *to, zkrc_session *from) {
  GPtrArray *copies = g_ptr_array_new();
  g_mutex_lock(&from->o.mu);
  for (guint i = 0; i < from->auths->len; i++) {
    const auth_entry *a = g_ptr_array_index(from->auths, i);
    g_ptr_array_add(copies, auth_entry_new(a->scheme, a->cred));
  }
  g_mutex_unlock(&from->o.mu);
  g_mutex_lock(&to->o.mu);
  for (guint i = 0; i < copies->len; i++)
    g_ptr_array_add(to->auths, g_ptr_array_index(copies, i));
  g_mutex_unlock(&to->o.mu);
  g_ptr_array_free(copies, TRUE);
}

/* Keep the credential for every new handle of @p s; its current handle,
 * pinned, or NULL between sessions (the next one gets it at its start). */
static zkrc_conn *keep_auth(zkrc_session *s, const char *scheme,
                            const char *cred) {
  auth_entry *a = auth_entry_new(scheme, cred);
  g_mutex_lock(&s->o.mu);
  g_ptr_array_add(s->auths, a);
  g_mutex_unlock(&s->o.mu);
  return zkrc__conn_use(s);
}

void zkrc__session_give_auth(zkrc_session *s, const char *scheme,
                             const char *cred) {
  zkrc_conn *c = keep_auth(s, scheme, cred);
  if (c == NULL)
    return;
  zkrc__zk_add_auth(c, scheme, cred, NULL, NULL);
  zkrc__conn_unuse(c);
}

int zkrc__session_add_auth_until(zkrc_session *s, const char *scheme,
                                 const char *cred, int64_t deadline) {
  if (zkrc__session_closed(s))
    return ZKRC_ECLOSED;
  zkrc_conn *c = keep_auth(s, scheme, cred);
  if (c == NULL)
    return ZKRC_OK;
  zkrc__call *call = zkrc__call_new();
  int rc = zkrc__zk_add_auth(c, scheme, cred, zkrc__call_void_done, call);
  zkrc__conn_unuse(c);
  if (rc != ZOK)
    zkrc__call_fail_unsent(call, rc);
  int err = ZKRC_OK;
  if (!zkrc__call_wait(call, deadline))
    err = zkrc__fail(ZKRC_ETIMEDOUT);
  else if (call->rc != ZOK)
    err = zkrc__fail_zk(
        call->rc == ZAUTHFAILED
            ? ZKRC_EAUTHFAILED
            : zkrc_from_zk_error(zkrc__session_reply_rc(s, call->rc)),
        call->rc);
  zkrc__call_unref(call);
  return err;
}

int zkrc_session_add_auth(zkrc_session *s, const char *scheme, const char *cred,
                          int timeout_ms) {
  if (s == NULL || scheme == NULL || *scheme == '\0' || cred == NULL ||
      !zkrc__timeout_valid(timeout_ms))
    return zkrc__fail(ZKRC_EINVAL);
  int err = zkrc__session_add_auth_until(s, scheme, cred,
                                         zkrc__deadline_after(timeout_ms));
  /* The sessions beside it (session_place.c) carry its nodes too: they get
   * it whatever our handle's answer (kept for every new handle all the
   * same), without waiting for theirs. */
  if (err != ZKRC_ECLOSED)
    zkrc__session_siblings_add_auth(s, scheme, cred);
  return err == ZKRC_ECLOSED ? zkrc__fail(err) : err;
}
