/*
 * The recipe base (see recipe.h).
 */
#include "config.h"

#include <string.h>

#include "recipes/recipe.h"
#include "core/util.h"
#include "zkrecipes.h"

void zkrc__recipe_options_init(void *opts, size_t size) {
  if (opts) {
    memset(opts, 0, size);
    *(size_t *)opts = size;
  }
}

/* The recipe's last reference went (its mutex and condition are cleared). */
static void recipe_finalize(zkrc__object *o) {
  zkrc__recipe *r = (zkrc__recipe *)o;
  zkrc__queue_clear(&r->q);
  r->finalize(r); /* frees the recipe's memory too */
}

/* A new recipe of @p kind with the options @p o (complete, checked). */
static int recipe_new(void **out, const zkrc__recipe_kind *kind,
                      zkrc_session *s, const char *path, const void *o) {
  const zkrc__recipe_options *base = o;
  zkrc__recipe *r = g_malloc0(kind->size);
  int err = zkrc__queue_init(&r->q, s, path, base->participant_id, base->acl);
  if (err != ZKRC_OK) {
    g_free(r);
    return zkrc__fail(err);
  }
  zkrc__object_init(&r->o, zkrc__session_executor(s), recipe_finalize);
  r->finalize = kind->finalize;
  kind->configure(r, o);
  *out = r;
  return ZKRC_OK;
}

int zkrc__recipe_create(void **out, const zkrc__recipe_kind *kind,
                        zkrc_session *s, const char *path, const void *given) {
  if (out)
    *out = NULL;
  void *o = g_malloc(kind->options_size);
  zkrc__recipe_options_init(o, kind->options_size);
  int err = out && zkrc__options_take(o, kind->options_size, given)
                ? recipe_new(out, kind, s, path, o)
                : zkrc__fail(ZKRC_EINVAL);
  g_free(o);
  return err;
}

zkrc__recipe *zkrc__recipe_ref(zkrc__recipe *r) {
  zkrc__object_ref(&r->o);
  return r;
}

void zkrc__recipe_unref(zkrc__recipe *r) { zkrc__object_unref(&r->o); }

void zkrc__recipe_stake_free(zkrc__recipe *r, zkrc__contender *c, void *stake) {
  zkrc__contender_unref(c);
  zkrc__recipe_unref(r);
  g_free(stake);
}

/* ------------------------------------------------------------- stakes */

static void stake_front(zkrc__contender *c, void *arg) {
  zkrc__stake *st = arg;
  g_mutex_lock(&st->recipe->o.mu);
  st->ops->front_locked(st, c);
  g_mutex_unlock(&st->recipe->o.mu);
}

static void stake_behind(zkrc__contender *c, void *arg) {
  zkrc__stake *st = arg;
  if (st->ops->behind_locked == NULL)
    return;
  g_mutex_lock(&st->recipe->o.mu);
  st->ops->behind_locked(st);
  g_mutex_unlock(&st->recipe->o.mu);
}

static void stake_connection(zkrc__contender *c, zkrc_session_event_type ev,
                             void *arg) {
  zkrc__stake *st = arg;
  g_mutex_lock(&st->recipe->o.mu);
  st->ops->connection_locked(st, ev);
  g_mutex_unlock(&st->recipe->o.mu);
}

static void stake_ended(zkrc__contender *c, int err, int zk_rc, void *arg) {
  zkrc__stake *st = arg;
  zkrc__recipe *r = st->recipe;
  g_mutex_lock(&r->o.mu);
  st->ops->ended_locked(st, err, zk_rc);
  zkrc__object_idle_locked(&r->o); /* broadcasts r->o.cond */
  g_mutex_unlock(&r->o.mu);
  st->ops->unref(st); /* the contender's reference */
}

static void stake_revoke(zkrc__contender *c, int32_t version, void *arg) {
  zkrc__stake *st = arg;
  if (st->ops->revoke_locked == NULL)
    return;
  g_mutex_lock(&st->recipe->o.mu);
  st->ops->revoke_locked(st, version);
  g_mutex_unlock(&st->recipe->o.mu);
}

const zkrc__contender_ops zkrc__stake_contender_ops = {
    .front = stake_front,
    .behind = stake_behind,
    .connection = stake_connection,
    .ended = stake_ended,
    .revoke = stake_revoke,
};

void zkrc__recipe_stake_started_locked(zkrc__recipe *r) {
  zkrc__object_busy_locked(&r->o);
}

/* --------------------------------------------------------- withdrawing */

int zkrc__recipe_delete_grace_ms(zkrc__recipe *r) {
  int t = zkrc_session_timeout(r->q.session);
  return t > 1000 ? t : 1000;
}

void zkrc__recipe_withdraw_locked(zkrc__recipe *r, zkrc__contender *c,
                                  const gboolean *ended, int grace_ms) {
  g_mutex_unlock(&r->o.mu);
  zkrc__contender_withdraw(c);
  g_mutex_lock(&r->o.mu);
  if (grace_ms <= 0)
    return; /* deleted in the background, or by the reaper */
  int64_t deadline = zkrc__deadline_after(grace_ms);
  while (!*ended && zkrc__contender_deleting(c) &&
         zkrc__session_connected(zkrc__contender_session(c), 0)) {
    if (!zkrc__cond_wait_until(&r->o.cond, &r->o.mu, deadline))
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
  int err = zkrc__queue_participants(
      r->q.session, r->q.dir, markers,
      zkrc__queue_look_deadline(r->q.session, timeout_ms), &gv);
  if (err != ZKRC_OK)
    return err;
  *ids = zkrc__strv_to_malloc(gv, count);
  g_strfreev(gv);
  return *ids ? ZKRC_OK : zkrc__fail(ZKRC_ENOMEM);
}
