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
  r->refs = 1;
  g_mutex_init(&r->mu);
  g_cond_init(&r->cond);
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

void zkrc__recipe_stake_free(zkrc__recipe *r, zkrc__contender *c, void *stake) {
  zkrc__contender_unref(c);
  zkrc__recipe_unref(r);
  g_free(stake);
}

/* ------------------------------------------------------------- stakes */

static void stake_front(zkrc__contender *c, void *arg) {
  zkrc__stake *st = arg;
  g_mutex_lock(&st->recipe->mu);
  st->ops->front_locked(st, c);
  g_mutex_unlock(&st->recipe->mu);
}

static void stake_behind(zkrc__contender *c, void *arg) {
  zkrc__stake *st = arg;
  if (st->ops->behind_locked == NULL)
    return;
  g_mutex_lock(&st->recipe->mu);
  st->ops->behind_locked(st);
  g_mutex_unlock(&st->recipe->mu);
}

static void stake_connection(zkrc__contender *c, zkrc_session_event_type ev,
                             void *arg) {
  zkrc__stake *st = arg;
  g_mutex_lock(&st->recipe->mu);
  st->ops->connection_locked(st, ev);
  g_mutex_unlock(&st->recipe->mu);
}

static void post_freed_locked(zkrc__recipe *r);

static void stake_ended(zkrc__contender *c, int err, int zk_rc, void *arg) {
  zkrc__stake *st = arg;
  zkrc__recipe *r = st->recipe;
  g_mutex_lock(&r->mu);
  st->ops->ended_locked(st, err, zk_rc);
  if (--r->stakes_live == 0 && r->detached)
    post_freed_locked(r);
  g_cond_broadcast(&r->cond);
  g_mutex_unlock(&r->mu);
  st->ops->unref(st); /* the contender's reference */
}

const zkrc__contender_ops zkrc__stake_contender_ops = {
    .front = stake_front,
    .behind = stake_behind,
    .connection = stake_connection,
    .ended = stake_ended,
};

void zkrc__recipe_lock_for_free(zkrc__recipe *r) {
  g_mutex_lock(&r->mu);
  r->freeing = TRUE;
  g_cond_broadcast(&r->cond);
}

void zkrc__recipe_stake_started_locked(zkrc__recipe *r) { r->stakes_live++; }

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

void *zkrc__recipe_event_new(size_t size, void (*run)(zkrc__recipe_event *ev),
                             void (*release)(zkrc__recipe_event *ev)) {
  zkrc__recipe_event *ev = g_malloc0(size);
  ev->run = run;
  ev->release = release;
  return ev;
}

void zkrc__recipe_post(zkrc__recipe *r, zkrc__recipe_event *ev,
                       const char *node) {
  ev->r = zkrc__recipe_ref(r);
  ev->node = g_strdup(node);
  zkrc__session_post(r->q.session, event_run, ev);
}

/* --------------------------------------------------------- free_async */

/* The last call of a detached recipe: after everything queued before it,
 * tell the application, which may free what the callbacks use; nothing is
 * told after. */
static void freed_run(zkrc__recipe_event *ev) {
  zkrc__recipe *r = ev->r;
  g_mutex_lock(&r->mu);
  r->freeing = TRUE; /* drop anything queued behind us */
  g_mutex_unlock(&r->mu);
  r->freed(r->freed_arg);
}

static void post_freed_locked(zkrc__recipe *r) {
  zkrc__recipe_event *ev = zkrc__recipe_event_new(sizeof *ev, freed_run, NULL);
  zkrc__recipe_post(r, ev, NULL);
}

void zkrc__recipe_detach_locked(zkrc__recipe *r, zkrc_callback_fn done,
                                void *arg) {
  r->detached = TRUE;
  r->freed = done;
  r->freed_arg = arg;
  g_cond_broadcast(&r->cond);
  if (r->stakes_live == 0)
    post_freed_locked(r);
}

struct zkrc__free_join {
  gint parts;
  zkrc_callback_fn done, last;
  void *arg, *last_arg;
};

zkrc__free_join *zkrc__free_join_new(int parts, zkrc_callback_fn done,
                                     void *arg, zkrc_callback_fn last,
                                     void *last_arg) {
  zkrc__free_join *j = g_new0(zkrc__free_join, 1);
  *j = (zkrc__free_join){parts, done, last, arg, last_arg};
  return j;
}

void zkrc__free_join_part(void *join) {
  zkrc__free_join *j = join;
  if (!g_atomic_int_dec_and_test(&j->parts))
    return;
  j->done(j->arg);
  if (j->last)
    j->last(j->last_arg);
  g_free(j);
}

/* --------------------------------------------------------- withdrawing */

int zkrc__recipe_delete_grace_ms(zkrc__recipe *r) {
  int t = zkrc_session_timeout(r->q.session);
  return t > 1000 ? t : 1000;
}

void zkrc__recipe_withdraw_locked(zkrc__recipe *r, zkrc__contender *c,
                                  const gboolean *ended, int grace_ms) {
  g_mutex_unlock(&r->mu);
  zkrc__contender_withdraw(c);
  g_mutex_lock(&r->mu);
  int64_t deadline = zkrc__deadline_after(grace_ms);
  while (!*ended && zkrc__contender_deleting(c) &&
         zkrc__session_connected(zkrc__contender_session(c), 0)) {
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
  int err = zkrc__queue_participants(
      r->q.session, r->q.dir, markers,
      zkrc__queue_look_deadline(r->q.session, timeout_ms), &gv);
  if (err != ZKRC_OK)
    return err;
  *ids = zkrc__strv_to_malloc(gv, count);
  g_strfreev(gv);
  return *ids ? ZKRC_OK : zkrc__fail(ZKRC_ENOMEM);
}
