/*
 * The contender queue's inside, shared by its files (queue.c,
 * queue_decide.c, queue_node.c, queue_watch.c): the contender, its states
 * and steps, a request in flight, and the functions the files call of each
 * other (named zkrc__q_*; what each does is said where it is defined).
 * Functions named *_locked are called with c->mu held; the others take it.
 */
#ifndef ZKRC_QUEUE_PRIVATE_H
#define ZKRC_QUEUE_PRIVATE_H

#include <stdint.h>

#include <glib.h>

#include "session/call.h"
#include "core/names.h"
#include "queue/queue.h"
#include "queue/queue_decide.h"
#include "core/util.h"
#include "zkrecipes.h"

/* Creates sent for one contender before giving up: the directory can vanish
 * between our creating it and creating our node (containers are removed
 * when empty), and an administrator can delete a waiting node. */
#define MAX_CREATE_ATTEMPTS 10
/* Failed requests of a kind that may pass (neither a lost connection nor a
 * refusal) retried in a row before the contender gives up with the error. */
#define MAX_FAILURES 8
/* Retries wait 10 ms, then twice as long each time, at most this long. */
#define RETRY_FIRST_MS 10
#define RETRY_MAX_MS 1000

typedef enum cstate {
  C_NEW,      /* not started */
  C_PENDING,  /* waiting for a connection to send the create */
  C_CREATING, /* create (and children read) sent */
  C_WAITING,  /* behind others, watching a predecessor */
  C_FRONT,    /* at the front */
  C_ENDED     /* the last: see the assertion after enum step */
} cstate;

/* A contender at the session's gate (queue_gate.h). */
typedef enum gate_state {
  GATE_NONE,    /* not started yet */
  GATE_WAITING, /* in the gate's line: sends nothing */
  GATE_HOLDING, /* holds a slot until its first look at the queue */
  GATE_DONE     /* past the gate (or ended in its line) */
} gate_state;

typedef enum step {
  STEP_NONE,
  STEP_SEND_CREATE,
  STEP_WATCH_PRED,
  STEP_CONFIRM_OWN, /* the direct successor: is our node still there? */
  STEP_WATCH_DIR,
  STEP_RECOVER,
  STEP_DELETE,
  STEP_ARM_OWN_WATCH,
  STEP_FETCH_STAT,
  STEP_RECHECK,     /* after a reconnection at the front */
  STEP_RETRY_LATER, /* c->retry_step, after a backoff; the last */
} step;
_Static_assert(C_ENDED < 16 && STEP_RETRY_LATER < 16,
               "contender states and steps fit their 4-bit fields");

typedef enum out_kind {
  OUT_FRONT,
  OUT_BEHIND,
  OUT_CONNECTION,
  OUT_ENDED,
  OUT_REVOKE /* value: our node's data version */
} out_kind;

typedef struct outbox_item {
  out_kind kind;
  int value; /* session event, or error */
  int zk_rc;
  /* OUT_ENDED: for the log line, whether we were at the front, and our
   * node's name (or NULL) */
  gboolean front;
  char *node;
} outbox_item;

struct zkrc__contender {
  gint refs;
  int data_len;
  /* What its node takes of c->s's budget (zkrc__session_place): kept, as
   * its directory may be gone when the budget is given back. */
  uint16_t placed_cost;
  GMutex mu;
  zkrc_session *s;
  char *dir;          /* GRefString, the queue's */
  const char *marker; /* static */
  const zkrc__marker *markers;
  zkrc__policy_fn policy;
  const void *policy_arg;
  char *data; /* GRefString: the participant id */
  zkrc__acl *acl;
  const zkrc__contender_ops *ops;
  void *ops_arg;
  /* Its place among the session's contenders, which one session observer
   * tells of the session's events (queue_observe.c); under the
   * session's contender list mutex. */
  zkrc__contender *observed_prev, *observed_next;

  /* The uuid of its protected prefix "_c_<uuid>-" (zkrc__protected_prefix()): 16
   * bytes instead of the 41 of the string, which only a create, a recovery
   * and the reaper need. */
  guint8 uuid[16];

  /* Flags, packed: 100,000 contenders live in a process holding 100,000
   * locks.  Bit-fields: each is written only with c->mu held. */
  unsigned watch_own : 1;
  unsigned observed : 1; /* in the session's contender list */
  /* c->s is a session opened beside its recipe's (zkrc__session_place):
   * its reference is a recipe's.  Set when made, never changed. */
  unsigned on_sibling : 1;
  unsigned name_known : 1;
  unsigned seq_set : 1; /* seq was set once (it stays: the last node's) */
  unsigned create_unknown : 1; /* a create's reply was lost */
  unsigned recover_needed : 1; /* a request was lost with the connection */
  /* The create sent last: whether container creates went before it (for
   * the directories not known to exist, dirtable.h), whether the first of
   * them was a child of the root, and how creating the first (when it was
   * not our directory) and our directory went. */
  unsigned containers_sent : 1;
  unsigned top_from_root : 1;
  /* A create failed with ZNONODE although our directory's container create
   * went before it: its parent is missing too, so the next attempt creates
   * every ancestor not known to exist (otherwise the parent is presumed to
   * be there, and only our directory is created). */
  unsigned ancestors_missing : 1;
  /* Whether the listing went pipelined behind the create sent last (else
   * the create's reply decides, queue_node.c). */
  unsigned listing_sent : 1;
  /* At the front by the listing, but the session has no lease yet: waits
   * for ZKRC__SESSION_EVENT_LEASED (or the session's end). */
  unsigned awaiting_lease : 1;
  /* Counted among the session's lease dependents (zkrc__q_want_lease_locked):
   * from the moment the listing puts us at the front, before the lease is
   * looked at, until we leave the front or end. */
  unsigned wants_lease : 1;
  /* Reconnected at the front: RECONNECTED is told only once our node is
   * seen again, owned by our session and first in the queue. */
  unsigned recheck_pending : 1;
  /* The re-check's stat showed our node owned by our session. */
  unsigned recheck_owner_matches : 1;
  unsigned withdrawing : 1;
  unsigned deleting : 1;
  unsigned behind_told : 1;
  /* By the last listing, pred's departure alone admits us
   * (zkrc__admitted_without()): when it goes, read only our own node's
   * stat, not the listing (zkrc__q_pred_gone_locked()). */
  unsigned front_when_pred_goes : 1;
  /* Not allowed to read our predecessors (their ACL): the servers would
   * not even deliver a watch event on them (ZooKeeper checks READ before
   * delivering one, since CVE-2024-23944), so watch the directory's
   * children instead and look again at every change. */
  unsigned watch_dir : 1;
  unsigned delivering : 1;
  /* Its watches were taken out of the client's tables when the connection
   * went (queue_observe.c): the reconnection sets them again, the
   * predecessor's or the directory's (watch_again) and our own node's
   * (own_again). */
  unsigned watch_again : 1;
  unsigned own_again : 1;
  /* Tell ops->revoke when our node's data is "__REVOKE__" (queue_watch.c);
   * set when made, never changed. */
  unsigned revocable : 1;
  unsigned state : 4;      /* a cstate */
  unsigned retry_step : 4; /* a step: what a pending retry will do */
  unsigned epoch;
  uint64_t generation; /* handle generation our create went to */
  int64_t czxid;
  int64_t owner;
  int root_rc;      /* the first container's, when it is not the directory */
  int parent_rc;    /* our directory's */
  int attempts;     /* creates sent since the last one that succeeded */
  int retries;      /* retries since the last success: the backoff */
  int failures;     /* passing failures in a row: the bound */
  int retry_reason; /* the ZooKeeper code that made us retry */
  GSource *retry_timer;
  int recheck_stat_rc;
  int listed; /* contenders in the last listing (statistics) */

  char *pred; /* the contender just before us, as last listed */
  /* Its czxid, as the getData that watches it read it (0: not read). */
  int64_t pred_czxid;
  /* The recipe object's queue, for its front_czxid and tail (queue.h);
   * used only before we ended, while our owner's stake keeps the queue's
   * recipe. */
  zkrc__queue *queue;
  void *dir_watch;
  void *pred_watch;
  void *own_watch;

  GQueue outbox; /* of outbox_item* */

  /* Its slot at the session's gate (queue_gate.c): a gate_state, and its
   * neighbours in the gate's line while it waits there (under the gate's
   * mutex; links in the contender, not a list cell allocated for each of
   * 100,000 acquisitions asked at once, freed later as holes). */
  gint gate;
  /* Our node's sequence number, once known (name_known): its name is
   * "<protected prefix><marker><seq as %010d>" (zkrc__q_name()) and its
   * path that name under dir (zkrc__q_path()), made where needed rather
   * than kept (112 bytes and more per held lock).  Next to gate: no
   * padding. */
  int32_t seq;
  zkrc__contender *gate_prev, *gate_next;
};

/* The listing of a directory that is not there (or of a request that was
 * not answered): handlers get this rather than NULL. */
extern const struct String_vector zkrc__q_no_children;

/* A request in flight: the contender and the epoch it belongs to. */
typedef struct req {
  zkrc__contender *c;
  unsigned epoch;
  void *watch;   /* registry context of a watch this request sets */
  int64_t czxid; /* a watching getData's: the node's czxid (0: failed) */
  /* A watching getData's: the node's data was "__REVOKE__" (Curator's
   * revocation request), at data version `version`. */
  gboolean revoke;
  int32_t version;
  /* A watching getData's reply (queue_watch.c), given its return code. */
  void (*on_reply)(struct req *r, int rc);
} req;

/* queue.c: requests and replies, the outbox, ending, steps */
req *zkrc__q_req_new_locked(zkrc__contender *c);
void zkrc__q_req_free(req *r);
zkrc_conn *zkrc__q_conn_for_locked(zkrc__contender *c);
req *zkrc__q_watch_req_new_locked(zkrc__contender *c, void **slot,
                                  zkrc__watch_fn fired, zkrc_conn **conn);
void zkrc__q_finish_locked_reply(req *r, step next);
void zkrc__q_unlock_and_perform(zkrc__contender *c, step next);
/* Count us among the session's lease dependents, or no longer
 * (zkrc__session_lease_want; c->mu held, so that it is never off while a
 * hold it vouches for is reported). */
void zkrc__q_want_lease_locked(zkrc__contender *c, gboolean want);
void zkrc__q_drop_watch_locked(void **slot);
gboolean zkrc__q_take_fired_watch_locked(zkrc__contender *c, void *ctx,
                                         void **slot, gboolean wanted);
void zkrc__q_perform(zkrc__contender *c, step st);
void zkrc__q_deliver(zkrc__contender *c);
void zkrc__q_finish_stale_reply(req *r);
gboolean zkrc__q_lock_if_current(req *r);
gboolean zkrc__q_begin_reply(req *r);
void zkrc__q_emit_locked(zkrc__contender *c, out_kind kind, int value,
                         int zk_rc);
void zkrc__q_cancel_watches_locked(zkrc__contender *c);
void zkrc__q_end_locked(zkrc__contender *c, int err, int zk_rc, gboolean reap);
void zkrc__q_end_with(zkrc__contender *c, int err, int zk_rc);
void zkrc__q_end_later(zkrc__contender *c, int err);

/* queue_observe.c: the session's events.  Observe: put the contender in
 * the session's list, whose observer tells it of the session's events
 * (with a reference of the list's); TRUE when the session was closed
 * already.  Unobserve: take it out (the caller drops the list's
 * reference, with c->mu released). */
gboolean zkrc__q_observe_locked(zkrc__contender *c);
void zkrc__q_unobserve_locked(zkrc__contender *c);

/* queue_gate.c: the session's gate */
gboolean zkrc__q_gate_enter(zkrc__contender *c);
gboolean zkrc__q_gate_passed(zkrc__contender *c);
void zkrc__q_gate_settle(zkrc__contender *c);

/* queue_decide.c: decisions (c->mu held; they send nothing) */
step zkrc__q_evaluate_locked(zkrc__contender *c,
                             const struct String_vector *kids,
                             gboolean watched);
step zkrc__q_after_failure_locked(zkrc__contender *c, int rc);
step zkrc__q_relist_locked(zkrc__contender *c);
step zkrc__q_wait_behind_locked(zkrc__contender *c, const char *pred);
step zkrc__q_pred_gone_locked(zkrc__contender *c);
step zkrc__q_own_confirmed_locked(zkrc__contender *c, int rc,
                                  const struct Stat *stat);
step zkrc__q_recheck_judge_locked(zkrc__contender *c, int rc,
                                  const struct String_vector *kids);

/* Room for our node's name: the protected prefix, a marker (at most
 * ZKRC__Q_MARKER_MAX bytes, checked when a contender is made), a sequence
 * number (ten digits; a sign and nine, or past the wrap a sign and ten:
 * "-1500000000") and the NUL. */
#define ZKRC__Q_MARKER_MAX 16
#define ZKRC__Q_NAME_MAX (ZKRC__PROTECTED_PREFIX_LEN + ZKRC__Q_MARKER_MAX + 12)

/* queue_node.c: our node */
/* Its name, written to @p name, and its full path (g_free it); valid
 * while c->name_known (c->mu held, or the contender's owner after it
 * was told the contender is at the front: the name no longer changes). */
void zkrc__q_name(const zkrc__contender *c, char name[ZKRC__Q_NAME_MAX]);
/* The name of a node of ours made of its parts (zkrc__q_name()'s). */
void zkrc__q_node_name(const guint8 uuid[16], const char *marker, int32_t seq,
                       char name[ZKRC__Q_NAME_MAX]);
char *zkrc__q_path(const zkrc__contender *c);
/* For the policy: our node's name in @p buf, or NULL before any (the last
 * node's while a new one is made, as the policy always saw it). */
const char *zkrc__q_policy_name_locked(const zkrc__contender *c,
                                       char buf[ZKRC__Q_NAME_MAX]);
void zkrc__q_reap_leftovers_locked(zkrc__contender *c);
void zkrc__q_set_path_locked(zkrc__contender *c, const char *path);
void zkrc__q_send_create(zkrc__contender *c);
void zkrc__q_send_delete(zkrc__contender *c);

/* queue_tail.c: the recipe object's newest node (zkrc__queue_tail) */
/* Has our object a node whose contender is queued or holds (then ours
 * most likely comes right after it)? */
gboolean zkrc__q_tail_live_locked(const zkrc__contender *c);
/* Our node was just created: it is the object's newest now.  TRUE when it
 * is numbered right after the one that was, whose name goes to @p pred:
 * our predecessor, with nothing between. */
gboolean zkrc__q_tail_follow_locked(zkrc__contender *c,
                                    char pred[ZKRC__Q_NAME_MAX]);
/* Our node goes (we delete it, or we end): if it is the newest, the
 * object has no live tail. */
void zkrc__q_tail_leave_locked(zkrc__contender *c);

/* queue_watch.c: listings and watches (each takes c->mu) */
/* Is a node's data (@p len bytes at @p value; -1 for none) Curator's
 * revocation request, ZKRC__REVOKE_MESSAGE (names.h)? */
gboolean zkrc__q_is_revoke(const char *value, int len);
void zkrc__q_watch_pred(zkrc__contender *c);
void zkrc__q_watch_dir(zkrc__contender *c);
void zkrc__q_arm_own_watch(zkrc__contender *c);
void zkrc__q_fetch_own_stat(zkrc__contender *c);
void zkrc__q_confirm_own(zkrc__contender *c);
void zkrc__q_recover(zkrc__contender *c);
void zkrc__q_recheck(zkrc__contender *c);

#endif /* ZKRC_QUEUE_PRIVATE_H */
