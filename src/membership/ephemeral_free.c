/*
 * Ending a kept ephemeral node (zkrecipes/ephemeral.h): zkrc_ephemeral_free
 * and zkrc_ephemeral_free_async, and what they give up in the background.
 *
 * Neither waits for the network.  The node, when it is ours, gets its
 * delete sent without waiting; a delete that fails unconfirmed (the
 * connection went, its reply was lost) or that cannot be sent (no
 * connection now) hands the node to the session's reaper
 * (zkrc__session_reap), which deletes it once connected again, unless its
 * ZooKeeper session is over (closed or expired: the node went with it).
 * A create in flight when the object ends deletes what it made once its
 * reply comes (ephemeral.c, create_done).  free_async's `done` waits for
 * both, counted as the object's pending work (core/object.h).
 *
 * The reaper deletes by path (any version).  A kept node's path is fixed,
 * so in one case it is not ours by then: our delete applied but its reply
 * was lost, and another session created the path before we reconnected.
 * That member's own keeper (a zkrc_ephemeral too) creates it again.
 */
#include "config.h"

#include <string.h>

#include "core/log_internal.h"
#include "core/util.h"
#include "membership/ephemeral_private.h"
#include "session/zk_call.h"
#include "zkrecipes/error.h"

void zkrc__eph_reap(zkrc_ephemeral *e, uint64_t gen) {
  if (zkrc__session_look(e->s, 0).generation != gen)
    return; /* that handle is over (closed, expired, or given up after
             * a loss and closed): the node goes with its session */
  /* The reaper writes PARENT/NAME: a node right under the root has the
   * parent "" (not "/"). */
  const char *name = strrchr(e->path, '/') + 1;
  char *parent = g_strndup(e->path, (gsize)(name - 1 - e->path));
  zkrc__session_reap(e->s, parent, name, name, gen);
  g_free(parent);
}

/* Did a delete's reply leave the node's fate unknown (so the reaper
 * tries again)?  Gone, or refused for good (an ACL: the reaper would
 * be refused each time too), is an answer. */
static gboolean unconfirmed(int rc) {
  return rc != ZOK && rc != ZNONODE && rc != ZNOAUTH;
}

typedef struct eph_delete {
  zkrc_ephemeral *e; /* referenced */
  uint64_t gen;
} eph_delete;

/* The delete's reply (ZooKeeper's completion thread). */
static void delete_done(int rc, const void *data) {
  eph_delete *d = (eph_delete *)data;
  zkrc_ephemeral *e = d->e;
  if (unconfirmed(rc))
    zkrc__eph_reap(e, d->gen);
  else if (rc == ZNOAUTH)
    zkrc__log(ZKRC_LOG_WARN, "ephemeral: may not delete %s (%s)", e->path,
              zerror(rc));
  zkrc__object_idle(&e->o);
  zkrc__object_unref(&e->o);
  g_free(d);
}

void zkrc__eph_delete_locked(zkrc_ephemeral *e, uint64_t gen) {
  zkrc_conn *conn = zkrc__conn_use_connected(e->s, gen);
  if (conn == NULL) {
    zkrc__eph_reap(e, gen); /* not connected now */
    return;
  }
  eph_delete *d = g_new(eph_delete, 1);
  d->e = e;
  d->gen = gen;
  zkrc__object_ref(&e->o);
  zkrc__object_busy_locked(&e->o);
  int rc = zkrc__zk_delete(conn, e->path, -1, delete_done, d);
  zkrc__conn_unuse(conn);
  if (rc == ZOK)
    return;
  /* Not sent (its completion never runs): as an unconfirmed reply, under
   * the mutex the caller holds; the caller's reference keeps e. */
  zkrc__eph_reap(e, gen);
  zkrc__object_idle_locked(&e->o);
  zkrc__object_unref(&e->o);
  g_free(d);
}

gboolean zkrc__eph_created_ending_locked(zkrc_ephemeral *e, uint64_t gen,
                                         int rc) {
  if (rc == ZNODEEXISTS)
    return TRUE;
  if (rc == ZOK)
    zkrc__eph_delete_locked(e, gen);
  else if (rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT)
    zkrc__eph_reap(e, gen);
  return FALSE;
}

/* What an ending object gives up outside its mutex. */
typedef struct eph_stop {
  GSource *timer;
  void *watch_ctx;
} eph_stop;

/* The object is ending (closed or detached): nothing is created any more;
 * the node is deleted in the background; a create in flight is pending
 * work until its reply is handled.  Returns what to give up outside. */
static eph_stop stop_locked(zkrc_ephemeral *e) {
  eph_stop st = {e->retry_timer, e->watch_ctx};
  e->retry_timer = NULL;
  e->watch_ctx = NULL;
  if (e->creating && !e->create_busy) {
    e->create_busy = TRUE;
    zkrc__object_busy_locked(&e->o);
  }
  uint64_t gen = e->created_gen;
  e->created_gen = 0;
  if (gen)
    zkrc__eph_delete_locked(e, gen);
  zkrc__eph_release_locked(e);
  return st;
}

static void stop_outside(eph_stop st) {
  if (st.watch_ctx)
    zkrc__watch_cancel(st.watch_ctx);
  if (st.timer) {
    g_source_destroy(st.timer);
    g_source_unref(st.timer);
  }
}

void zkrc_ephemeral_free(zkrc_ephemeral *e) {
  if (e == NULL)
    return;
  zkrc__session_unobserve(e->s, e->observer);
  g_mutex_lock(&e->o.mu);
  zkrc__object_close_locked(&e->o); /* no event after this returns */
  eph_stop st = stop_locked(e);
  g_mutex_unlock(&e->o.mu);
  stop_outside(st);
  zkrc__object_unref(&e->o); /* the owner's */
}

int zkrc_ephemeral_free_async(zkrc_ephemeral *e, zkrc_callback_fn done,
                              void *arg) {
  if (e == NULL || done == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  zkrc__session_unobserve(e->s, e->observer);
  g_mutex_lock(&e->o.mu);
  /* Detached first: what is sent from now on sees the object ending. */
  zkrc__object_busy_locked(&e->o);
  zkrc__object_detach_locked(&e->o, done, arg);
  eph_stop st = stop_locked(e);
  zkrc__object_idle_locked(&e->o); /* done once the rest is over too */
  g_mutex_unlock(&e->o.mu);
  stop_outside(st);
  zkrc__object_unref(&e->o); /* the owner's */
  return ZKRC_OK;
}
