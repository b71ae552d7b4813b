/*
 * The read-write lock: two lock objects on one directory, the read side
 * ("__READ__", shared) and the write side ("__WRIT__", exclusive), both
 * admitted by the readers-writers policy.  Everything else is the lock's
 * (lock.c, hold.c, lock_async.c): a side is a zkrc_lock whose marker and
 * policy differ, and which knows its other side for a thread's downgrade
 * and upgrade.
 */
#include "config.h"

#include "recipes/lock_private.h"
#include "core/util.h"

struct zkrc_rwlock {
  zkrc_lock *reader;
  zkrc_lock *writer;
};

/* The defaults, in a whole struct of ours. */
static void rwlock_options_defaults(zkrc_rwlock_options *opts) {
  zkrc__recipe_options_init(opts, sizeof *opts);
}

void zkrc_rwlock_options_init_sized(zkrc_rwlock_options *opts, size_t size) {
  zkrc_rwlock_options full;
  rwlock_options_defaults(&full);
  zkrc__options_give(opts, size, &full, sizeof full);
}

/* The lock options of a side, from the caller's read-write lock options. */
static gboolean side_options(zkrc_lock_options *out,
                             const zkrc_rwlock_options *given) {
  zkrc_rwlock_options o;
  zkrc_rwlock_options_init(&o);
  if (!zkrc__options_take(&o, sizeof o, given))
    return FALSE;
  zkrc_lock_options_init(out);
  out->participant_id = o.participant_id;
  out->acl = o.acl;
  out->on_event = o.on_event;
  out->event_arg = o.event_arg;
  return TRUE;
}

int zkrc_rwlock_new(zkrc_rwlock **out, zkrc_session *s, const char *path,
                    const zkrc_rwlock_options *opts) {
  if (out)
    *out = NULL;
  zkrc_lock_options lo;
  if (out == NULL || !side_options(&lo, opts))
    return zkrc__fail(ZKRC_EINVAL);
  zkrc_rwlock *rw = g_new0(zkrc_rwlock, 1);
  int err = zkrc__lock_new_member(&rw->reader, s, path, &lo, "__READ__",
                                  zkrc__policy_readers_writers);
  if (err == ZKRC_OK)
    err = zkrc__lock_new_member(&rw->writer, s, path, &lo, "__WRIT__",
                                zkrc__policy_readers_writers);
  if (err != ZKRC_OK) {
    zkrc__lock_free(rw->reader);
    g_free(rw);
    return zkrc__fail(err);
  }
  rw->reader->shared = TRUE;
  rw->reader->other = rw->writer;
  rw->writer->other = rw->reader;
  *out = rw;
  return ZKRC_OK;
}

zkrc_lock *zkrc_rwlock_reader(zkrc_rwlock *rw) {
  return rw ? rw->reader : NULL;
}

zkrc_lock *zkrc_rwlock_writer(zkrc_rwlock *rw) {
  return rw ? rw->writer : NULL;
}

void zkrc_rwlock_free(zkrc_rwlock *rw) {
  if (rw == NULL)
    return;
  /* Each side asks the other what its thread holds there: both stay alive
   * until neither side has a thread inside a call. */
  zkrc__lock_ref(rw->reader);
  zkrc__lock_ref(rw->writer);
  zkrc__lock_free(rw->writer);
  zkrc__lock_free(rw->reader);
  zkrc__lock_unref(rw->writer);
  zkrc__lock_unref(rw->reader);
  g_free(rw);
}

/* The last of zkrc_rwlock_free_async(): both sides are gone. */
static void rwlock_freed(void *data) {
  zkrc_rwlock *rw = data;
  zkrc__lock_unref(rw->writer);
  zkrc__lock_unref(rw->reader);
  g_free(rw);
}

int zkrc_rwlock_free_async(zkrc_rwlock *rw, zkrc_callback_fn done, void *arg) {
  if (rw == NULL || done == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  /* As zkrc_rwlock_free(): each side may ask the other until both are
   * done; `done` runs after the later side's last event. */
  zkrc__lock_ref(rw->reader);
  zkrc__lock_ref(rw->writer);
  zkrc__free_join *j = zkrc__free_join_new(2, done, arg, rwlock_freed, rw);
  zkrc__lock_free_async(rw->writer, zkrc__free_join_part, j);
  zkrc__lock_free_async(rw->reader, zkrc__free_join_part, j);
  return ZKRC_OK;
}
