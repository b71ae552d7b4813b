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
 *  - the participant listing;
 *  - freeing without blocking (every object's zkrc_X_free_async()): the
 *    recipe is detached, and its `done` runs on the executor once the
 *    last of its stakes' contenders ended, behind every event posted
 *    before; zkrc__free_join does the same for an object made of several
 *    recipes (a read-write lock, a semaphore).
 *
 * A recipe embeds a zkrc__recipe as its first member and passes a finalize
 * function that frees what it added.
 */
#ifndef ZKRC_RECIPE_H
#define ZKRC_RECIPE_H

#include <stddef.h>
#include <stdint.h>

#include <glib.h>

#include "queue/queue.h"
#include "zkrecipes/executor.h"

typedef struct zkrc__recipe zkrc__recipe;

struct zkrc__recipe {
  gint refs;
  /* Its free was called: no event reaches the application any more.
   * (Next to refs: no padding.) */
  gboolean freeing;
  /* Its free_async was called: no new event is posted (the recipe checks
   * it: zkrc__recipe_ending), and `freed` runs once the last stake's
   * contender ended and what was queued before has run. */
  gboolean detached;
  int stakes_live; /* stakes whose contender has not ended yet */
  zkrc_callback_fn freed;
  void *freed_arg;
  GMutex mu;
  GCond cond;
  zkrc__queue q;
  /* Frees what the recipe added to the base (and its memory), last. */
  void (*finalize)(zkrc__recipe *r);
};

/* How every recipe's public options struct begins (zkrc_lock_options,
 * zkrc_election_options): its size, then what the base takes.  A recipe
 * checks its struct with ZKRC__RECIPE_OPTIONS_CHECK (ZKRC__RECIPE_KIND
 * does). */
typedef struct zkrc__recipe_options {
  size_t size;
  const char *participant_id;
  const struct ACL_vector *acl;
} zkrc__recipe_options;

#define ZKRC__RECIPE_OPTIONS_CHECK(type)                                       \
  G_STATIC_ASSERT(offsetof(type, size) == 0 &&                                 \
                  sizeof(((type *)0)->size) == sizeof(size_t) &&               \
                  offsetof(type, participant_id) ==                            \
                      offsetof(zkrc__recipe_options, participant_id) &&        \
                  offsetof(type, acl) == offsetof(zkrc__recipe_options, acl))

/* A recipe's kind, @p name, declared as every recipe does: its object
 * @p type, its options struct (checked) and its two functions. */
#define ZKRC__RECIPE_KIND(name, type, options_type, configure_fn, finalize_fn) \
  ZKRC__RECIPE_OPTIONS_CHECK(options_type);                                    \
  static const zkrc__recipe_kind name = {sizeof(type), sizeof(options_type),   \
                                         configure_fn, finalize_fn}

/* What the base needs to know of a recipe to make one. */
typedef struct zkrc__recipe_kind {
  size_t size;         /* the object's (zeroed; a zkrc__recipe first) */
  size_t options_size; /* its options struct's */
  /* Takes the recipe's own options from @p opts (its options struct). */
  void (*configure)(zkrc__recipe *r, const void *opts);
  /* Frees what the recipe added to the base (and its memory), last. */
  void (*finalize)(zkrc__recipe *r);
} zkrc__recipe_kind;

/* Every recipe's public constructor: *@p out cleared (when not NULL); the
 * caller's options @p given taken over the recipe's defaults (its options
 * struct begins with a zkrc__recipe_options);
 * the arguments every recipe takes checked; a new object of @p kind with
 * one reference, the caller's, configured and stored in *@p out.  Returns
 * ZKRC_OK; ZKRC_EINVAL (NULL @p out or session, options never initialized,
 * invalid path or ACL); ZKRC_ECLOSED (the session is closed).  A
 * participant id NULL means "<hostname>:<pid>", an ACL NULL the open
 * ACL. */
int zkrc__recipe_create(void **out, const zkrc__recipe_kind *kind,
                        zkrc_session *s, const char *path, const void *given);

/* A recipe's options_init: zeroes @p opts and sets its size field (the
 * first member) to @p size; NULL is ignored. */
void zkrc__recipe_options_init(void *opts, size_t size);

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

/* A new event record of @p size bytes (zeroed; a zkrc__recipe_event first)
 * that runs @p run and then @p release (may be NULL), for
 * zkrc__recipe_post. */
void *zkrc__recipe_event_new(size_t size, void (*run)(zkrc__recipe_event *ev),
                             void (*release)(zkrc__recipe_event *ev));

/* Drop a recipe's stake (a lock's holder, an election's round) once its
 * last reference went: its contender's reference, its reference on the
 * recipe, and its memory @p stake. */
void zkrc__recipe_stake_free(zkrc__recipe *r, zkrc__contender *c, void *stake);

/* A stake's contender callbacks, as the base runs them: each with the
 * recipe's mutex held (so they must not block, nor call user code).  The
 * base broadcasts the recipe's condition after ended_locked, then drops the
 * contender's reference on the stake (unref). */
typedef struct zkrc__stake zkrc__stake;
typedef struct zkrc__stake_ops {
  void (*front_locked)(zkrc__stake *st, zkrc__contender *c);
  void (*behind_locked)(zkrc__stake *st); /* may be NULL */
  void (*connection_locked)(zkrc__stake *st, zkrc_session_event_type ev);
  void (*ended_locked)(zkrc__stake *st, int err, int zk_rc);
  void (*unref)(zkrc__stake *st);
} zkrc__stake_ops;

/* What a stake begins with: its callbacks and its recipe. */
struct zkrc__stake {
  const zkrc__stake_ops *ops;
  zkrc__recipe *recipe;
};

/* The contender ops of every stake: ops_arg is the zkrc__stake. */
extern const zkrc__contender_ops zkrc__stake_contender_ops;

/* A recipe's free begins: takes r->mu (the caller lets it go), marks the
 * recipe freeing (no event reaches the application any more) and wakes
 * its waiters to see it. */
void zkrc__recipe_lock_for_free(zkrc__recipe *r);

/* Is the recipe being freed?  (Takes r->mu.) */
gboolean zkrc__recipe_freeing(zkrc__recipe *r);

/* Is the recipe being freed, at once or in the background (detached)?
 * r->mu held.  What it starts from then on is refused (ZKRC_ECANCELED). */
static inline gboolean zkrc__recipe_ending(const zkrc__recipe *r) {
  return r->freeing || r->detached;
}

/* A stake's contender was made (r->mu held): the recipe's free_async
 * waits for it to end (the base counts its end, after ended_locked). */
void zkrc__recipe_stake_started_locked(zkrc__recipe *r);

/* A recipe's free_async begins (r->mu held): the recipe is detached (its
 * waiters woken to see it; the recipe posts no new event), and @p done
 * will run with @p arg on the session's executor once no stake's
 * contender is live (at once if none is), behind what was posted before;
 * from then on nothing queued reaches the application.  The recipe then
 * gives up what it holds without waiting and drops the application's
 * reference. */
void zkrc__recipe_detach_locked(zkrc__recipe *r, zkrc_callback_fn done,
                                void *arg);

/* The free_async of an object made of @p parts recipes (each freed with
 * its own free_async, whose done is zkrc__free_join_part with the join):
 * after the last part, @p done runs with @p arg, then @p last with
 * @p last_arg (the object's own memory; may be NULL). */
typedef struct zkrc__free_join zkrc__free_join;
zkrc__free_join *zkrc__free_join_new(int parts, zkrc_callback_fn done,
                                     void *arg, zkrc_callback_fn last,
                                     void *last_arg);
void zkrc__free_join_part(void *join);

/* How long giving up a node waits at most for the servers to confirm its
 * delete: a round trip normally; the ZooKeeper client gives up on a
 * request (connection loss) within the session timeout, so that, or 1 s. */
int zkrc__recipe_delete_grace_ms(zkrc__recipe *r);

/* With r->mu held: withdraw @p c (r->mu let go meanwhile: the withdrawal
 * may call back into the recipe), then wait until the servers confirmed
 * the delete of its node (or *@p ended, or the connection is down), at
 * most @p grace_ms.  The recipe broadcasts r->cond when *@p ended changes
 * (the base does, after a stake's ended_locked). */
void zkrc__recipe_withdraw_locked(zkrc__recipe *r, zkrc__contender *c,
                                  const gboolean *ended, int grace_ms);

/* The participant ids (node data) of the recipe's queue, in queue order, as
 * the public API hands them out (zkrc_strv_free).  Checks its arguments. */
int zkrc__recipe_participants(zkrc__recipe *r, const zkrc__marker *markers,
                              char ***ids, size_t *count, int timeout_ms);

#endif /* ZKRC_RECIPE_H */
