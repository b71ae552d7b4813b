/*
 * The recipe base: what every recipe object (a lock, an election, and the
 * recipes to come) is built on, so that a recipe is only its policy on the
 * contender queue and its own API.
 *
 *  - its object (core/object.h), first: references, its mutex and
 *    condition (the first in the lock order: see session_private.h),
 *    events told in order on the session's executor and dropped once the
 *    recipe is closed (zkrc_X_free) or after free_async's done, "inside
 *    one of its callbacks", and freeing at once or in the background;
 *  - its queue (queue.h): session, directory, participant id, ACL;
 *  - its stakes (a lock's holders, an election's rounds): each contender
 *    counts as the object's pending work (zkrc__object_busy_locked) from
 *    its start to its end, so free_async's done comes once the last one
 *    ended;
 *  - giving up a stake's node, waiting for the delete's confirmation (a
 *    release) or not (every free);
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

#include "core/object.h"
#include "queue/queue.h"
#include "zkrecipes/executor.h"

typedef struct zkrc__recipe zkrc__recipe;

struct zkrc__recipe {
  /* References, mutex (r->o.mu) and condition (r->o.cond), events,
   * closed (its free) and detached (its free_async), pending (live
   * stakes' contenders); first. */
  zkrc__object o;
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

/* Drop a recipe's stake (a lock's holder, an election's round) once its
 * last reference went: its contender's reference, its reference on the
 * recipe, and its memory @p stake. */
void zkrc__recipe_stake_free(zkrc__recipe *r, zkrc__contender *c, void *stake);

/* A stake's contender callbacks, as the base runs them: each with the
 * recipe's mutex held (so they must not block, nor call user code).  The
 * base counts the contender's end (zkrc__object_idle_locked: free_async's
 * done may follow) and broadcasts the recipe's condition after
 * ended_locked, then drops the contender's reference on the stake
 * (unref). */
typedef struct zkrc__stake zkrc__stake;
typedef struct zkrc__stake_ops {
  void (*front_locked)(zkrc__stake *st, zkrc__contender *c);
  void (*behind_locked)(zkrc__stake *st); /* may be NULL */
  void (*connection_locked)(zkrc__stake *st, zkrc_session_event_type ev);
  void (*ended_locked)(zkrc__stake *st, int err, int zk_rc);
  void (*unref)(zkrc__stake *st);
  /* A revocable contender's node was asked to give up (queue.h's
   * ops->revoke, with its data version); may be NULL. */
  void (*revoke_locked)(zkrc__stake *st, int32_t version);
} zkrc__stake_ops;

/* What a stake begins with: its callbacks and its recipe. */
struct zkrc__stake {
  const zkrc__stake_ops *ops;
  zkrc__recipe *recipe;
};

/* The contender ops of every stake: ops_arg is the zkrc__stake. */
extern const zkrc__contender_ops zkrc__stake_contender_ops;

/* How long giving up a node waits at most for the servers to confirm its
 * delete: a round trip normally; the ZooKeeper client gives up on a
 * request (connection loss) within the session timeout, so that, or 1 s. */
int zkrc__recipe_delete_grace_ms(zkrc__recipe *r);

/* A stake's contender was made (r->o.mu held): it counts as the recipe's
 * pending work until it ended (the base counts its end). */
void zkrc__recipe_stake_started_locked(zkrc__recipe *r);

/* With r->o.mu held: withdraw @p c (r->o.mu let go meanwhile: the
 * withdrawal may call back into the recipe), then wait until the servers
 * confirmed the delete of its node (or *@p ended, or the connection is
 * down), at most @p grace_ms; 0 waits for nothing (the delete goes on in
 * the background, the session's reaper takes over when it fails: every
 * free).  The recipe broadcasts r->o.cond when *@p ended changes (the base
 * does, after a stake's ended_locked). */
void zkrc__recipe_withdraw_locked(zkrc__recipe *r, zkrc__contender *c,
                                  const gboolean *ended, int grace_ms);

/* The participant ids (node data) of the recipe's queue, in queue order, as
 * the public API hands them out (zkrc_strv_free).  Checks its arguments. */
int zkrc__recipe_participants(zkrc__recipe *r, const zkrc__marker *markers,
                              char ***ids, size_t *count, int timeout_ms);

#endif /* ZKRC_RECIPE_H */
