/*
 * The recipe base: what every recipe object (a lock, an election, and the
 * recipes to come) is built on, so that a recipe is only its policy on the
 * contender queue and its own API.
 *
 *  - references: a recipe's memory outlives its free while contenders,
 *    holds and posted events still refer to it;
 *  - its mutex and condition (the first in the lock order: see
 *    session_private.h);
 *  - its queue (queue.h): session, directory, participant id, ACL;
 *  - events for the application, posted to the session's executor with a
 *    reference on the recipe, and dropped once the recipe is being freed;
 *  - waiting for a withdrawal's delete to be confirmed;
 *  - the participant listing.
 *
 * A recipe embeds a zkrc__recipe as its first member and passes a finalize
 * function that frees what it added.
 */
#ifndef ZKRC_RECIPE_H
#define ZKRC_RECIPE_H

#include <stddef.h>
#include <stdint.h>

#include <glib.h>

#include "queue.h"

typedef struct zkrc__recipe zkrc__recipe;

struct zkrc__recipe {
  gint refs;
  GMutex mu;
  GCond cond;
  zkrc__queue q;
  /* Its free was called: no event reaches the application any more. */
  gboolean freeing;
  /* Frees what the recipe added to the base (and its memory), last. */
  void (*finalize)(zkrc__recipe *r);
};

/* A new recipe object of @p size bytes (zeroed; a zkrc__recipe first) with
 * one reference, the caller's, after checking the arguments every recipe
 * constructor takes.  NULL with *err set on failure: ZKRC_EINVAL (NULL
 * session, invalid path or ACL), ZKRC_ECLOSED (the session is closed).
 * @p participant_id NULL means "<hostname>:<pid>", @p acl NULL the open
 * ACL. */
void *zkrc__recipe_new(size_t size, zkrc_session *s, const char *path,
                       const char *participant_id, const struct ACL_vector *acl,
                       void (*finalize)(zkrc__recipe *r), int *err);
zkrc__recipe *zkrc__recipe_ref(zkrc__recipe *r);
void zkrc__recipe_unref(zkrc__recipe *r);

/* An event for the application.  The recipe's own event struct embeds this
 * first; run() tells the application (or decides not to: under r->mu it
 * sees r->freeing, and whatever else must still hold).  Then the event,
 * its node copy and its reference on the recipe are released. */
typedef struct zkrc__recipe_event zkrc__recipe_event;
struct zkrc__recipe_event {
  zkrc__recipe *r; /* referenced while the event is queued */
  char *node;      /* the node the event is about (a copy, or NULL) */
  void (*run)(zkrc__recipe_event *ev);
  void (*release)(zkrc__recipe_event *ev); /* frees extras (may be NULL) */
};

/* Post @p ev (g_malloc'ed, whose run is set) to the session's executor;
 * it runs there, never with a zkrecipes mutex held. */
void zkrc__recipe_post(zkrc__recipe *r, zkrc__recipe_event *ev,
                       const char *node);

/* Is the recipe being freed?  (Takes r->mu.) */
gboolean zkrc__recipe_freeing(zkrc__recipe *r);

/* How long giving up a node waits at most for the servers to confirm its
 * delete: a round trip normally; the ZooKeeper client gives up on a
 * request (connection loss) within the session timeout, so that, or 1 s. */
int zkrc__recipe_delete_grace_ms(zkrc__recipe *r);

/* With r->mu held: wait until the servers confirmed the delete of @p c's
 * node (or *@p ended, or the connection is down), at most until
 * @p deadline.  The recipe broadcasts r->cond when *@p ended changes. */
void zkrc__recipe_wait_withdrawn_locked(zkrc__recipe *r, zkrc__contender *c,
                                        const gboolean *ended,
                                        int64_t deadline);

/* The participant ids (node data) of the recipe's queue, in queue order, as
 * the public API hands them out (zkrc_strv_free).  Checks its arguments. */
int zkrc__recipe_participants(zkrc__recipe *r, const zkrc__marker *markers,
                              char ***ids, size_t *count, int timeout_ms);

#endif /* ZKRC_RECIPE_H */
