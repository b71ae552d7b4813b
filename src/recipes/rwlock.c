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

/* The read-write lock's object: its events are its sides' (each a lock
 * object of its own); its own are only free_async's done, told once both
 * sides' frees told theirs (each counted as pending work meanwhile). */
struct zkrc_rwlock {
  zkrc__object o; /* first */
  zkrc_lock *reader;
  zkrc_lock *writer;
};

/* The last reference went: the sides' too.  Each side asks the other what
 * its thread holds there, so both stay alive until neither side has a
 * thread inside a call. */
static void rwlock_finalize(zkrc__object *o) {
  zkrc_rwlock *rw = (zkrc_rwlock *)o;
  zkrc__lock_unref(rw->writer); /* both made before the object */
  zkrc__lock_unref(rw->reader);
  g_free(rw);
}

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
  if (!zkrc__options_take(&o, sizeof o, given) ||
      (o.revocable && o.on_event == NULL)) /* told through on_event */
    return FALSE;
  zkrc_lock_options_init(out);
  out->participant_id = o.participant_id;
  out->acl = o.acl;
  out->on_event = o.on_event;
  out->event_arg = o.event_arg;
  out->revocable = o.revocable;
  return TRUE;
}

int zkrc_rwlock_new(zkrc_rwlock **out, zkrc_session *s, const char *path,
                    const zkrc_rwlock_options *opts) {
  if (out)
    *out = NULL;
  zkrc_lock_options lo;
  if (out == NULL || !side_options(&lo, opts))
    return zkrc__fail(ZKRC_EINVAL);
  zkrc_lock *reader = NULL, *writer = NULL;
  int err = zkrc__lock_new_member(&reader, s, path, &lo, "__READ__",
                                  zkrc__policy_readers_writers);
  if (err == ZKRC_OK)
    err = zkrc__lock_new_member(&writer, s, path, &lo, "__WRIT__",
                                zkrc__policy_readers_writers);
  if (err != ZKRC_OK) {
    zkrc__lock_free(reader);
    return zkrc__fail(err);
  }
  zkrc_rwlock *rw = g_new0(zkrc_rwlock, 1);
  /* The session outlives the object: the sides hold it until the last
   * reference goes. */
  zkrc__object_init(&rw->o, zkrc__session_executor(s), rwlock_finalize);
  /* The object's references on its sides; the application's are given up
   * by the free. */
  rw->reader = zkrc__lock_ref(reader);
  rw->writer = zkrc__lock_ref(writer);
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
  g_mutex_lock(&rw->o.mu);
  zkrc__object_close_locked(&rw->o); /* tells nothing of its own */
  g_mutex_unlock(&rw->o.mu);
  /* Each side as zkrc_lock_free(): never waiting for the network. */
  zkrc__lock_free(rw->writer);
  zkrc__lock_free(rw->reader);
  zkrc__object_unref(&rw->o);
}

/* A side's free told its end (on its executor). */
static void side_freed(void *data) {
  zkrc_rwlock *rw = data;
  zkrc__object_idle(&rw->o); /* the second tells `done` */
  zkrc__object_unref(&rw->o);
}

int zkrc_rwlock_free_async(zkrc_rwlock *rw, zkrc_callback_fn done, void *arg) {
  if (rw == NULL || done == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  /* `done` is told after the later side's last event: each side's free is
   * pending work of ours, with a reference, until it told its end. */
  g_mutex_lock(&rw->o.mu);
  zkrc__object_busy_locked(&rw->o);
  zkrc__object_busy_locked(&rw->o);
  zkrc__object_detach_locked(&rw->o, done, arg);
  g_mutex_unlock(&rw->o.mu);
  zkrc__object_ref(&rw->o);
  zkrc__object_ref(&rw->o);
  zkrc__lock_free_async(rw->writer, side_freed, rw);
  zkrc__lock_free_async(rw->reader, side_freed, rw);
  zkrc__object_unref(&rw->o); /* the application's reference */
  return ZKRC_OK;
}
