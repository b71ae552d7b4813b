/*
 * The recipe base (see recipe.h).
 */
#include "config.h"

#include "recipe.h"
#include "util.h"
#include "zkrecipes.h"

void *zkrc__recipe_new(size_t size, zkrc_session *s, const char *path,
                       const char *participant_id, const struct ACL_vector *acl,
                       void (*finalize)(zkrc__recipe *r), int *err) {
  zkrc__recipe *r = g_malloc0(size);
  *err = zkrc__queue_init(&r->q, s, path, participant_id, acl);
  if (*err != ZKRC_OK) {
    g_free(r);
    return NULL;
  }
  r->refs = 1;
  g_mutex_init(&r->mu);
  g_cond_init(&r->cond);
  r->finalize = finalize;
  return r;
}

zkrc__recipe *zkrc__recipe_ref(zkrc__recipe *r) {
  g_atomic_int_inc(&r->refs);
  return r;
}

void zkrc__recipe_unref(zkrc__recipe *r) {
  if (!g_atomic_int_dec_and_test(&r->refs))
    return;
  zkrc__queue_clear(&r->q);
  g_mutex_clear(&r->mu);
  g_cond_clear(&r->cond);
  r->finalize(r); /* frees the recipe's memory too */
}

gboolean zkrc__recipe_freeing(zkrc__recipe *r) {
  g_mutex_lock(&r->mu);
  gboolean freeing = r->freeing;
  g_mutex_unlock(&r->mu);
  return freeing;
}

/* ------------------------------------------------------------- events */

static void event_run(void *data) {
  zkrc__recipe_event *ev = data;
  zkrc__recipe *r = ev->r;
  ev->run(ev);
  if (ev->release)
    ev->release(ev);
  g_free(ev->node);
  g_free(ev);
  zkrc__recipe_unref(r);
}

void zkrc__recipe_post(zkrc__recipe *r, zkrc__recipe_event *ev,
                       const char *node) {
  ev->r = zkrc__recipe_ref(r);
  ev->node = g_strdup(node);
  zkrc__session_post(r->q.session, event_run, ev);
}

/* --------------------------------------------------------- withdrawing */

int zkrc__recipe_delete_grace_ms(zkrc__recipe *r) {
  int t = zkrc_session_timeout(r->q.session);
  return t > 1000 ? t : 1000;
}

void zkrc__recipe_wait_withdrawn_locked(zkrc__recipe *r, zkrc__contender *c,
                                        const gboolean *ended,
                                        int64_t deadline) {
  while (!*ended && zkrc__contender_deleting(c) &&
         zkrc__session_connected(r->q.session, 0)) {
    if (!zkrc__cond_wait_until(&r->cond, &r->mu, deadline))
      break;
  }
}

/* -------------------------------------------------------- participants */

int zkrc__recipe_participants(zkrc__recipe *r, const zkrc__marker *markers,
                              char ***ids, size_t *count, int timeout_ms) {
  if (ids)
    *ids = NULL;
  if (count)
    *count = 0;
  if (r == NULL || ids == NULL || !zkrc__timeout_valid(timeout_ms))
    return zkrc__fail(ZKRC_EINVAL);
  char **gv = NULL;
  int err = zkrc__queue_participants(r->q.session, r->q.dir, markers,
                                     zkrc__deadline_after(timeout_ms), &gv);
  if (err != ZKRC_OK)
    return err;
  *ids = zkrc__strv_to_malloc(gv, count);
  g_strfreev(gv);
  return *ids ? ZKRC_OK : zkrc__fail(ZKRC_ENOMEM);
}
