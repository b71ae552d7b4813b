/*
 * The contender queue: the one mechanism behind every recipe.
 *
 * A contender is one participant's place in a recipe's directory:
 *
 *  1. Protected sequential create.  It creates the EPHEMERAL_SEQUENTIAL node
 *     "<dir>/_c_<uuid>-<marker><seq>" and, in the same breath (ZooKeeper
 *     answers one session's requests in order), reads the directory's
 *     children: one round trip when uncontended.  A missing directory is
 *     created, with its missing ancestors, as container nodes.  A
 *     contender whose recipe object has a node still queued or held does
 *     not read the children: its node most likely comes right after that
 *     one, which its sequence number proves (queue_tail.c), and then that
 *     node is its predecessor; otherwise it reads them once the create is
 *     answered.
 *  2. Ordering.  Contenders are the children ending in a marker and a
 *     sequence (names.h); the lowest sequence is at the front.
 *  3. Waiting.  A contender behind others watches only its immediate
 *     predecessor, with a data watch (a getData that fails on a node already
 *     gone leaves no watch behind).  When that predecessor goes, it reads the
 *     children again (one request) and decides from that fresh listing: at
 *     the front, or behind a new predecessor (one that was not the front may
 *     have left).  The direct successor (its listing showed that the
 *     predecessor's departure alone admits it, or the predecessor was a
 *     node its recipe object saw first of all: zkrc__queue.front_czxid)
 *     does not list: nothing can be ahead of it (sequence numbers only
 *     grow), so it reads only its own node's stat, which shows that the
 *     node is still there and its own
 *     (a watch on its own node would not: one multi may delete the
 *     predecessor and then it, and the servers do not deliver the deletion
 *     of a node it may not read).  A contender that may not read its
 *     predecessors (ACL) watches the directory's children instead.
 *  4. Recovery.  When a create's reply is lost with the connection, the
 *     contender looks for its node by its protected prefix after reconnecting
 *     instead of creating a second one.  A contender whose ZooKeeper session
 *     expires or is lost ends with an error; nodes a presumed-lost session may
 *     have left behind are deleted by the session's reaper on the next
 *     session.
 *
 * The contender tells its owner (a recipe) what happens through
 * zkrc__contender_ops.  Those calls come from ZooKeeper's completion thread
 * or the session's worker, never from inside a zkrc__contender_* call and
 * never with a contender mutex held; they must not block.
 */
#ifndef ZKRC_QUEUE_H
#define ZKRC_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include <zookeeper/zookeeper.h>
#include <zkrecipes/participants.h>

#include "queue/admission.h"
#include "session/session_internal.h"

typedef struct zkrc__contender zkrc__contender;

/* The newest node of one recipe object's contenders under the exclusive
 * policy, while its contender is queued or holds (queue_tail.c): a
 * contender of the same object whose node the servers number right after
 * it knows its predecessor without listing the queue.  Under its mutex
 * (the last in the lock order after a contender's: session_private.h). */
typedef struct zkrc__queue_tail {
  GMutex mu;
  const char *marker; /* static; NULL: no live tail */
  int32_t seq;
  guint8 uuid[16];
} zkrc__queue_tail;

/* One recipe object's queue: where it lives (session and directory) and who
 * takes part (the participant id its nodes carry, and their ACL).  Locks and
 * elections embed one; every contender they start inherits it. */
typedef struct zkrc__queue {
  zkrc_session *session; /* referenced */
  /* GRefStrings, shared with the contenders (one copy per recipe object,
   * not one per contender). */
  char *dir;
  char *participant_id;
  zkrc__acl *acl; /* referenced */
  /* The czxid of the last node of this queue's contenders that was proven
   * first under the exclusive policy (0: none yet; written and read
   * atomically by its contenders).  Nothing can ever come ahead of such a
   * node, so a waiter whose predecessor it was is next once it is gone,
   * without listing the queue again (queue_decide.c). */
  int64_t front_czxid;
  zkrc__queue_tail tail;
} zkrc__queue;

/* Check the arguments every recipe constructor takes and fill @p q.
 * Returns ZKRC_OK; ZKRC_EINVAL (NULL session, invalid path or ACL);
 * ZKRC_ETOOBIG (our create, with @p participant_id as its data, would not
 * pass the size rule of request_size.h); ZKRC_ECLOSED (the session is
 * closed).  @p participant_id NULL means
 * "<hostname>:<pid>", @p acl NULL the open ACL. */
int zkrc__queue_init(zkrc__queue *q, zkrc_session *s, const char *dir,
                     const char *participant_id, const struct ACL_vector *acl);
void zkrc__queue_clear(zkrc__queue *q);

typedef struct zkrc__contender_ops {
  /* The contender is at the front: its node has the lowest sequence and
   * belongs to the current ZooKeeper session. */
  void (*front)(zkrc__contender *c, void *arg);
  /* The contender's first look at the queue found others ahead of it. */
  void (*behind)(zkrc__contender *c, void *arg);
  /* While at the front: the connection dropped (SUSPENDED) or came back with
   * the same session (RECONNECTED). */
  void (*connection)(zkrc__contender *c, zkrc_session_event_type ev, void *arg);
  /* The contender is finished; called exactly once, last.  @p err is
   * ZKRC_OK after zkrc__contender_withdraw(), else why it ended:
   * ZKRC_ESESSIONEXPIRED, ZKRC_ESESSIONLOST, ZKRC_ECLOSED, ZKRC_ELOCKLOST
   * (our node was deleted while at the front), or a ZooKeeper failure
   * (@p zk_rc keeps its code). */
  void (*ended)(zkrc__contender *c, int err, int zk_rc, void *arg);
  /* A revocable contender (zkrc__contender_config.revocable): a read of
   * our node found its data "__REVOKE__" (Curator's revocation request),
   * at data version @p version.  The same version may be told again (a
   * watch set anew after a reconnection reads it again): the owner tells
   * its application once per version.  May be NULL. */
  void (*revoke)(zkrc__contender *c, int32_t version, void *arg);
} zkrc__contender_ops;

typedef struct zkrc__contender_config {
  /* Session, directory, id and ACL.  The contender shares its
   * front_czxid and tail, which it reads and writes only until it ended (a
   * recipe's stake keeps the recipe, and so this queue, until then). */
  zkrc__queue *queue;
  const char *marker;          /* "lock-" or "latch-" (static string) */
  const zkrc__marker *markers; /* markers that count as contenders */
  /* Who of them is admitted, and whom a waiter watches (admission.h). */
  zkrc__policy_fn policy;
  const void *policy_arg;
  /* Keep a data watch on our own node from its creation on, so that its
   * deletion by someone else ends the contender with ZKRC_ELOCKLOST at the
   * front, and queues it again before. */
  int watch_own_node;
  /* With watch_own_node: look at the data every read of our own node
   * returns, and tell ops->revoke when it is "__REVOKE__". */
  int revocable;
  const zkrc__contender_ops *ops;
  void *ops_arg;
} zkrc__contender_config;

/* A new contender (one reference, the caller's).  Nothing is sent yet. */
zkrc__contender *zkrc__contender_new(const zkrc__contender_config *cfg);

/* Enter the queue: create our node (as soon as the session is connected). */
void zkrc__contender_start(zkrc__contender *c);

/* Leave the queue: delete our node if it exists (or have the reaper delete
 * it once the connection is back).  ops->ended follows with ZKRC_OK unless
 * the contender had already ended.  Idempotent. */
void zkrc__contender_withdraw(zkrc__contender *c);

/* TRUE while the withdrawal's delete is still waiting for its reply on a
 * live connection (a caller that must not return before its node is gone
 * waits for ops->ended while this holds). */
gboolean zkrc__contender_deleting(zkrc__contender *c);

zkrc__contender *zkrc__contender_ref(zkrc__contender *c);
void zkrc__contender_unref(zkrc__contender *c);

/* Our node's full path (made anew each call, g_free it; NULL before it is
 * known), its czxid and ephemeral owner, valid once ops->front was called.
 * The contender keeps only the node's sequence number (its name is made
 * of its uuid, marker and sequence), not the path: a held lock's owner
 * asks for it where needed rather than keeping a copy. */
char *zkrc__contender_path(zkrc__contender *c);
int64_t zkrc__contender_czxid(zkrc__contender *c);
/* How many contenders its last listing of the directory held (0 before
 * the first); for the statistics' queue length. */
int zkrc__contender_listed(zkrc__contender *c);
/* The ZooKeeper session generation our node belongs to (0 before create). */
uint64_t zkrc__contender_generation(zkrc__contender *c);
/* The session our node lives on: the recipe's, or one opened beside it
 * (zkrc__session_place()); its generations, lease and handle are the ones
 * that count for this contender.  Not referenced: valid while @p c is. */
zkrc_session *zkrc__contender_session(zkrc__contender *c);
/* Microseconds left of the lease of our node's ZooKeeper session
 * (zkrc__session_lease_left() on zkrc__contender_session()). */
int64_t zkrc__contender_lease_left(zkrc__contender *c);

/* Every contender in @p dir, in queue order, with its node name and
 * participant id (node data): one getChildren and one getData per
 * contender, pipelined.  A missing directory yields none; a contender that
 * leaves meanwhile is not listed.  Returns a ZKRC_* code; *list is
 * malloc'ed (zkrc_participants_free). */
int zkrc__queue_list(zkrc_session *s, const char *dir,
                     const zkrc__marker *markers, int64_t deadline,
                     zkrc_participant **list, size_t *count);

/* zkrc__queue_list() behind the argument checks of the public list calls
 * (zkrc_lock_list, zkrc_election_list): ZKRC_EINVAL, nothing sent, for a
 * NULL or an invalid path or timeout. */
int zkrc__queue_list_checked(zkrc_session *s, const char *path,
                             const zkrc__marker *markers, int timeout_ms,
                             zkrc_participant **list, size_t *count);

/* The deadline of a look at a queue (a listing, a leader), or of a
 * fenced write's reply, asked with
 * @p timeout_ms: ZKRC_NO_WAIT looks once, which takes a round trip, so it
 * waits for that answer at most the session timeout (as a lock's try
 * does); otherwise @p timeout_ms from now. */
int64_t zkrc__queue_look_deadline(zkrc_session *s, int timeout_ms);

/* The participant ids (node data) of every contender in @p dir, in queue
 * order, as a NULL-terminated g_malloc'ed array (g_strfreev).  Pipelines one
 * getChildren and one getData per contender.  A missing directory yields an
 * empty list.  Returns a ZKRC_* code. */
int zkrc__queue_participants(zkrc_session *s, const char *dir,
                             const zkrc__marker *markers, int64_t deadline,
                             char ***ids);

#endif /* ZKRC_QUEUE_H */
