/*
 * The set partitioner's object, shared by its two files: partitioner.c
 * (the public calls, joining and leaving the party, telling the
 * application) and partitioner_alloc.c (the state machine: the party's
 * changes, the debounce, the item locks).
 *
 * The object is a zkrc__object (core/object.h): its references, its
 * mutex p->o.mu and condition, its events told in order.  Everything below
 * is guarded by p->o.mu, which comes before the item locks' mutexes (lock
 * calls are made with it held; the locks never call back with theirs
 * held).  Callbacks into the application run with no mutex held.
 *
 * Joining and leaving the party (partitioner_join.c) never wait: the join
 * is a chain of asynchronous requests (membership/create_path.h) retried
 * with a backoff until the session timeout, and the leave a delete sent
 * without waiting, handed to the session's reaper when it cannot be
 * confirmed.
 */
#ifndef ZKRC_PARTITIONER_PRIVATE_H
#define ZKRC_PARTITIONER_PRIVATE_H

#include <glib.h>

#include "core/object.h"
#include "session/session_internal.h"
#include "zkrecipes.h"
#include "zkrecipes/partitioner.h"

/* One item lock taken for one allocation attempt.  Two references: the
 * attempt's (p->slots) and the pending acquisition's completion. */
typedef struct zkrc__slot {
  gint refs;
  zkrc_partitioner *p; /* referenced */
  guint64 attempt;
  zkrc_lock *lk;        /* the item's lock (owned by p->locks) */
  zkrc_lock_hold *hold; /* pending or held; NULL once given up */
  gboolean held;
} zkrc__slot;

struct zkrc_partitioner {
  zkrc__object o;  /* first: references, mutex, events */
  zkrc_session *s; /* referenced */
  char *path, *party_dir, *locks_dir, *node, *identifier;
  uint64_t node_gen; /* the ZooKeeper session that created node; 0: none */
  char **items;      /* sorted (byte order), NULL-terminated */
  size_t n_items;
  int time_boundary_ms;
  zkrc__acl *acl;
  zkrc_partitioner_event_fn on_event;
  void *event_arg;
  zkrc_cache *party;      /* ours (freed with us); NULL until watched */
  zkrc_cache *party_seen; /* the party cache as its events name it */
  unsigned long listener;

  zkrc_partitioner_state state;
  guint64 state_id;     /* one more at every state change */
  guint64 acquired_id;  /* the state_id of the ACQUIRED in force, or 0 */
  gboolean party_ready; /* the party cache has read the party once */
  GSource *timer;       /* the debounce, or NULL */
  guint64 timer_gen;
  guint64 attempt;      /* one more at every allocation attempt and abort */
  gboolean trying;      /* an attempt is taking its locks */
  GPtrArray *slots;     /* zkrc__slot* of the current attempt */
  guint held;           /* slots of the current attempt that hold */
  GHashTable *locks;    /* item → zkrc_lock*, made on first use */
  const char *why;      /* the cause of FAILURE (a static string) */
  int reason, zk_error; /* and as codes, for the FAILURE event */

  /* The join (partitioner_join.c), pending work of the object from its
   * start until the party is watched or the join gave up. */
  gboolean joining;
  gboolean join_inflight; /* its chain of creates is at work */
  gboolean join_waiting;  /* for the connection, to try again */
  int64_t join_deadline;  /* a session timeout after the start */
  int join_backoff_ms;    /* the next retry's pause */
  GSource *join_timer;    /* the pause before a retry, or NULL */
  GSource *join_deadline_timer;
  unsigned long join_observer; /* the session's events while joining */
  uint64_t maybe_gen; /* a create of node went on it, outcome unknown */
  gboolean leaving;   /* we must leave the party (failure, free) */
  gboolean left;      /* the leave was sent, or handed to the reaper */
};

zkrc_partitioner *zkrc__partitioner_ref(zkrc_partitioner *p);
void zkrc__partitioner_unref(zkrc_partitioner *p);

/* Change the state and tell the application (posted to the executor). */
void zkrc__partitioner_set_state_locked(zkrc_partitioner *p,
                                        zkrc_partitioner_state st);

/* partitioner_join.c */
/* Start joining the party (p not shared yet: no mutex). */
void zkrc__partitioner_join(zkrc_partitioner *p);
/* Leave the party without waiting (after a failure, at the free): our
 * node's delete sent, or handed to the session's reaper when it cannot be
 * confirmed; once the join ended if it is under way.  Once. */
void zkrc__partitioner_leave_locked(zkrc_partitioner *p);
/* The object is ending: a join waiting to try again stops now (one with a
 * request in flight stops at its reply). */
void zkrc__partitioner_stop_join_locked(zkrc_partitioner *p);

/* partitioner_alloc.c */
void zkrc__partitioner_party_event(zkrc_cache *c, const zkrc_cache_event *ev,
                                   void *arg);
void zkrc__partitioner_session_event(zkrc_session *s,
                                     const zkrc_session_event *ev, void *arg);
void zkrc__partitioner_lock_event(zkrc_lock *lk, const zkrc_lock_event *info,
                                  void *arg);
/* Give up every lock of the current attempt (cancel or release). */
void zkrc__partitioner_drop_slots_locked(zkrc_partitioner *p);
/* Split again once the party has been still for the time boundary. */
void zkrc__partitioner_debounce_locked(zkrc_partitioner *p);
void zkrc__partitioner_stop_timer_locked(zkrc_partitioner *p);
/* Does every lock of the current attempt hold (by its lease)? */
gboolean zkrc__partitioner_all_held_locked(zkrc_partitioner *p);
/* The shortest lease of the current attempt's locks, in ms. */
int zkrc__partitioner_lease_locked(zkrc_partitioner *p);
/* FAILURE: drop the locks and leave the party (once).  @p why for the log,
 * @p reason and @p zk_error for the event. */
void zkrc__partitioner_fail_locked(zkrc_partitioner *p, const char *why,
                                   int reason, int zk_error);
/* An empty p->slots. */
GPtrArray *zkrc__partitioner_new_slots(void);
/* The items of member @p index of @p n (kazoo's split). */
GPtrArray *zkrc__partition_share(char *const *items, size_t n_items,
                                 size_t index, size_t n);

#endif /* ZKRC_PARTITIONER_PRIVATE_H */
