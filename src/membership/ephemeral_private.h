/*
 * The kept ephemeral node's inside (zkrecipes/ephemeral.h), shared by
 * ephemeral.c (keeping the node: creates, its watch, the session's events,
 * the calls) and ephemeral_free.c (ending it: free, free_async, the
 * delete sent without waiting and the session's reaper behind it).  This
 * folder only.
 */
#ifndef ZKRC_EPHEMERAL_PRIVATE_H
#define ZKRC_EPHEMERAL_PRIVATE_H

#include <glib.h>

#include "core/object.h"
#include "session/session_internal.h"
#include "zkrecipes/ephemeral.h"

/* Everything below o is under o.mu, a recipe's mutex in the lock order
 * (session_private.h); o.closed / o.detached (zkrc__object_ending): free or
 * free_async was called, the node is no longer kept. */
struct zkrc_ephemeral {
  zkrc__object o; /* first: references, mutex, condition, events */
  zkrc_session *s;
  char *path;
  zkrc__acl *acl;
  zkrc_ephemeral_event_fn on_event;
  void *event_arg;
  unsigned long observer;
  gboolean reserved;    /* our path's part of the session's budget, and a
                      * dependent of its lease (zkrc__session_lease_want) */
  GBytes *data;         /* the latest data (NULL: none) */
  uint64_t data_seq;    /* set_data calls so far */
  gboolean creating;    /* a create (or its owner check) is in flight */
  gboolean create_busy; /* ... and free_async counts it as pending work */
  uint64_t created_gen; /* the session whose create succeeded; 0: none */
  gboolean told_registered;
  gboolean ended; /* CLOSED told: the session is closed for good */
  gboolean noauth;
  gboolean parent_refused; /* a parent's create was refused (ACL) */
  gboolean watched;        /* a watch on our node of created_gen is armed */
  gboolean arming;         /* an exists to arm it is in flight */
  void *watch_ctx;         /* the latest watch's context (cancelled at free) */
  int retry_ms;            /* the next retry's delay */
  GSource *retry_timer;
};

/* ephemeral_free.c.  Our node of ZooKeeper session @p gen is not wanted
 * any more (the object is ending): its delete is sent without waiting,
 * counted as pending work (zkrc__object_busy_locked) until it is
 * confirmed or, unconfirmed, handed to the session's reaper. */
void zkrc__eph_delete_locked(zkrc_ephemeral *e, uint64_t gen);

/* ephemeral_free.c.  Our node of session @p gen may exist and cannot be
 * deleted now (no connection, or a reply lost): the session's reaper
 * deletes it once connected again, unless session @p gen is over (its
 * ephemeral nodes went, or go, with it). */
void zkrc__eph_reap(zkrc_ephemeral *e, uint64_t gen);

/* ephemeral_free.c.  A create on session @p gen answered @p rc once the
 * object is ending: the node it made is deleted (zkrc__eph_delete_locked);
 * one whose reply was lost may have made it, so the reaper looks.  TRUE
 * when the node exists and may be ours (ZNODEEXISTS): the caller sends
 * the owner check (without a watch), and its answer deletes the node if it
 * is ours; FALSE: the create is over. */
gboolean zkrc__eph_created_ending_locked(zkrc_ephemeral *e, uint64_t gen,
                                         int rc);

/* ephemeral.c.  Give our path's part of the session's budget of
 * ephemeral paths back (session_place.c), once: at the free, whatever
 * becomes of the node (the session's close deletes it if it still
 * exists), or at the end of an object that never got so far. */
void zkrc__eph_release_locked(zkrc_ephemeral *e);

#endif /* ZKRC_EPHEMERAL_PRIVATE_H */
