/*
 * zkrecipes/runner.h - take turns: run a function while a lock or a
 * leadership is held, in a thread the library manages.
 *
 * What a daemon otherwise writes by hand (a worker thread, a flag polled
 * against zkrc_lock_lease_remaining()), as one object.  A runner queues
 * for the lock or the election at its path; once its turn is verified
 * (the node is ours, at the front, under the session's lease) it starts
 * the work function in a thread of its own, with the turn's fencing token
 * and a cancellation (zkrc_cancel); when the function returns, the hold
 * is given back (the node deleted), and with @c requeue the runner queues
 * again at the back: N runners on one path take turns.
 *
 * The wire is the one of the recipe it runs on, nothing of its own:
 *   ZKRC_RUNNER_LOCK        zkrc_lock's nodes, "_c_<uuid>-lock-<seq>":
 *                           Curator's InterProcessMutex, which Curator's
 *                           LeaderSelector takes turns on;
 *   ZKRC_RUNNER_KAZOO_LOCK  "_c_<uuid>-__lock__<seq>": kazoo's Lock, which
 *                           kazoo's Election.run takes turns on;
 *   ZKRC_RUNNER_ELECTION    zkrc_election's nodes, "_c_<uuid>-latch-<seq>":
 *                           Curator's LeaderLatch.
 *
 * Cancellation.  The turn's zkrc_cancel fires (and the function is asked
 * to return) when the turn ends without the function: the hold was lost
 * (the session expired or was lost, our node was deleted: reason
 * ZKRC_ESESSIONEXPIRED, ZKRC_ESESSIONLOST, ZKRC_ELOCKLOST), the runner is
 * being freed (ZKRC_ECLOSED), or zkrc_runner_cancel() asked for it
 * (ZKRC_ECANCELED).  A loss fires it no later than the session's lease
 * deadline, before the servers can give the hold to anyone else: the
 * runner's own thread watches the lease while the function runs, whatever
 * the executor is doing.  The function may poll (zkrc_cancel_requested),
 * wait (zkrc_cancel_wait) or put zkrc_cancel_fd() in its poll loop.
 * Nothing stops a function that ignores it: the hold is only given back
 * (and the next turn only starts) once the function has returned.
 *
 * A loss after the cancellation.  Held means held: a turn whose
 * cancellation already fired for another reason (zkrc_runner_cancel(), a
 * free) still holds while its function runs, and its loss is still told,
 * by the same deadline: the listener gets LOST (reason: the loss's) and no
 * second CANCELLED; the function sees zkrc_runner_is_running() turn 0 (for
 * the rest of the turn, even if the lease comes back), while its
 * zkrc_cancel keeps the reason it fired with (zkrc_cancel_reason()).
 *
 * A grant that comes with its lease already out (the session
 * reconnecting) starts no turn: the hold is given back for real (a lock's
 * node deleted, an election left), and the runner asks again after a
 * backoff (100 ms, doubling to 5 s).  An election's runner also looks at
 * its leadership every second while it waits, and takes one it leads
 * under a live lease without having been told (an ELECTED dropped because
 * the lease was out when it was delivered, the lease back since: the
 * election tells no second one).
 *
 * Events (zkrc_runner_event) run on the session's executor, in order,
 * never on a ZooKeeper thread and never with a zkrecipes mutex held: for
 * each turn STARTED (with its token), then LOST if the hold was lost and
 * CANCELLED when the cancellation fired, in the order they happened (a
 * loss that fires it is told LOST, then CANCELLED; a loss after a cancel
 * CANCELLED, then LOST), each at most once, and RETURNED (the function's
 * result) once it returned; CLOSED once the runner queues no more.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef ZKRECIPES_RUNNER_H
#define ZKRECIPES_RUNNER_H

#include <stddef.h>
#include <stdint.h>
#include <zookeeper/zookeeper.h>
#include <zkrecipes/executor.h>
#include <zkrecipes/session.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zkrc_runner zkrc_runner;

/** A turn's cancellation, given to the work function; valid until the
 *  function returns. */
typedef struct zkrc_cancel zkrc_cancel;

/**
 * Non-zero once @p c has fired: the function should stop and return.
 * Threading: any thread, while @p c is valid.  NULL yields 0.
 */
int zkrc_cancel_requested(zkrc_cancel *c);

/**
 * Wait until @p c fires: at most @p timeout_ms, ZKRC_NO_WAIT (look once)
 * or ZKRC_WAIT_FOREVER; any other negative value is refused.  A function
 * that works in steps sleeps here between them.
 * @return ZKRC_OK (it fired); ZKRC_ETIMEDOUT (it has not);
 *         ZKRC_EINVAL (NULL @p c or bad timeout).
 * Threading: any thread, while @p c is valid.
 */
int zkrc_cancel_wait(zkrc_cancel *c, int timeout_ms);

/**
 * A file descriptor that turns readable (POLLIN) when @p c fires and stays
 * so, for a function's own poll loop.  Owned by @p c: do not read it or
 * close it.  -1 for NULL.  Threading: any thread, while @p c is valid.
 */
int zkrc_cancel_fd(zkrc_cancel *c);

/**
 * Why @p c fired: ZKRC_ESESSIONEXPIRED, ZKRC_ESESSIONLOST, ZKRC_ELOCKLOST
 * (our node was deleted), ZKRC_ECONNLOSS (an election's revoke_on_suspend
 * only), ZKRC_ECLOSED (the runner is being freed, or the session closed),
 * ZKRC_ECANCELED (zkrc_runner_cancel()); ZKRC_OK while it has not.
 * ZKRC_EINVAL for NULL.  Threading: any thread, while @p c is valid.
 */
int zkrc_cancel_reason(zkrc_cancel *c);

/**
 * The work function: runs in the runner's thread while this turn holds,
 * and ends the turn by returning; the hold is given back then.  @p token
 * is the turn's fencing token (the czxid of our node: it rises from turn
 * to turn, whoever holds).  Its result is told as RETURNED's result.  It
 * may call any zkrecipes function, zkrc_runner_free() of its own runner
 * included (which then does not wait for it).
 */
typedef int (*zkrc_runner_work_fn)(zkrc_runner *r, zkrc_cancel *cancel,
                                   int64_t token, void *arg);

/** What the runner runs on (zkrc_runner_options.kind).  Starts at 1. */
typedef enum zkrc_runner_kind {
  /** A zkrc_lock: Curator's InterProcessMutex nodes (default). */
  ZKRC_RUNNER_LOCK = 1,
  /** A lock whose nodes kazoo's Lock (and Election) counts:
   *  "_c_<uuid>-__lock__<seq>". */
  ZKRC_RUNNER_KAZOO_LOCK = 2,
  /** A zkrc_election: Curator's LeaderLatch nodes. */
  ZKRC_RUNNER_ELECTION = 3
} zkrc_runner_kind;

/** What happened (zkrc_runner_event.type).  Starts at 1. */
typedef enum zkrc_runner_event_type {
  /** The function was started; ev->token is the turn's token. */
  ZKRC_RUNNER_STARTED = 1,
  /** The turn's cancellation fired; ev->reason says why. */
  ZKRC_RUNNER_CANCELLED = 2,
  /** The function returned (ev->result); the hold is given back. */
  ZKRC_RUNNER_RETURNED = 3,
  /** The turn's hold was lost (ev->reason) while the function ran, also
   *  after its cancellation fired for another reason (see the top). */
  ZKRC_RUNNER_LOST = 4,
  /** The runner queues no more: its turn is done and requeue is off
   *  (reason ZKRC_OK), it was cancelled (ZKRC_ECANCELED), or queueing
   *  failed for good (ZKRC_ENOAUTH, ZKRC_ENONODE, ZKRC_ECLOSED, ...). */
  ZKRC_RUNNER_CLOSED = 5
} zkrc_runner_event_type;

/** Name of an event type, lower-case ("started", "cancelled",
 *  "returned", "lost", "closed"; "unknown" for a value that is none of
 *  them); a static string.  Threading: any thread. */
const char *zkrc_runner_event_name(zkrc_runner_event_type type);

/** A runner event; valid only during the callback.  Its first three
 *  fields are every zkrecipes event's (HACKING, "The contract"). */
typedef struct zkrc_runner_event {
  /** What happened. */
  zkrc_runner_event_type type;
  /** For CANCELLED, LOST and CLOSED: why (see zkrc_cancel_reason());
   *  ZKRC_OK otherwise. */
  int reason;
  /** The ZooKeeper code behind @p reason, or ZOK when there is none. */
  int zk_error;
  /** The turn's fencing token (0 for CLOSED). */
  int64_t token;
  /** For RETURNED: what the function returned; 0 otherwise. */
  int result;
  /** How many turns this runner has started, this one included. */
  int turns;
} zkrc_runner_event;

/** Told of the runner's turns; see the top of this file. */
typedef void (*zkrc_runner_event_fn)(zkrc_runner *r,
                                     const zkrc_runner_event *ev, void *arg);

/** Options; initialize with zkrc_runner_options_init(). */
typedef struct zkrc_runner_options {
  /** Set by the _init function to the size of the struct your program was
   *  compiled with.  Options that were not initialized (size 0) are
   *  refused with ZKRC_EINVAL. */
  size_t size;
  /** What it runs on; default ZKRC_RUNNER_LOCK. */
  zkrc_runner_kind kind;
  /** Non-zero: after the function returns, queue again at the back (take
   *  turns; Curator's autoRequeue), also after a loss.  Default 0: one
   *  turn, then CLOSED. */
  int requeue;
  /** Our nodes' data, the participant id.  NULL (default):
   *  "<hostname>:<pid>". */
  const char *participant_id;
  /** ACL of the nodes created.  NULL (default): ZOO_OPEN_ACL_UNSAFE. */
  const struct ACL_vector *acl;
  /** Told of the runner's turns.  May be NULL. */
  zkrc_runner_event_fn on_event;
  void *event_arg;
} zkrc_runner_options;

/** Fill @p opts with the defaults.  Threading: any thread.  Fills the
 *  first @p size bytes of @p opts, the size of the struct as your program
 *  was compiled with it, and sets its size field to it.  Call
 *  zkrc_runner_options_init(), which passes it. */
void zkrc_runner_options_init_sized(zkrc_runner_options *opts, size_t size);

/** Fill @p opts with the defaults.  Threading: any thread.  Inline: it
 *  passes sizeof *@p opts to zkrc_runner_options_init_sized(), so that
 *  the struct can grow without breaking the ABI. */
static inline void zkrc_runner_options_init(zkrc_runner_options *opts) {
  zkrc_runner_options_init_sized(opts, sizeof *opts);
}

/**
 * Create a runner for the lock or election at @p path and start queueing
 * (as soon as the session is connected); returns at once, never waiting
 * for the network.  @p work runs with @p work_arg at each turn.
 *
 * @return ZKRC_OK; ZKRC_EINVAL (NULL @p out, @p s, @p path or @p work,
 *         invalid path or ACL, options not initialized, unknown kind;
 *         nothing is created); ZKRC_ETOOBIG (participant_id too large);
 *         ZKRC_ECLOSED (session closed); ZKRC_ENOMEM.
 * Ownership: free with zkrc_runner_free() or zkrc_runner_free_async();
 * the runner keeps a session reference and starts one thread of its own.
 * Threading: any thread.
 */
int zkrc_runner_new(zkrc_runner **out, zkrc_session *s, const char *path,
                    zkrc_runner_work_fn work, void *work_arg,
                    const zkrc_runner_options *opts);

/**
 * Stop taking turns: a waiting runner leaves the queue, a running
 * function's cancellation fires (reason ZKRC_ECANCELED); once the
 * function returned and the hold is given back, CLOSED (ZKRC_ECANCELED).
 * Does not wait.  @return ZKRC_OK; ZKRC_EINVAL (NULL).
 * Threading: any thread, also the work function and the callbacks.
 */
int zkrc_runner_cancel(zkrc_runner *r);

/**
 * Wait until the runner's function is running (a turn started), at most
 * @p timeout_ms, ZKRC_NO_WAIT or ZKRC_WAIT_FOREVER.
 * @return ZKRC_OK; ZKRC_ETIMEDOUT; ZKRC_ESTATE (the runner queues no
 *         more); ZKRC_EINVAL.
 * Threading: not on the session's callback thread.
 */
int zkrc_runner_wait_running(zkrc_runner *r, int timeout_ms);

/**
 * Non-zero while the function runs under a hold the library still
 * verifies (as zkrc_lock_is_held()); 0 for NULL, and 0 for the rest of a
 * turn once its loss was seen (LOST).  Local state.
 * Threading: any thread.
 */
int zkrc_runner_is_running(zkrc_runner *r);

/** How many turns the runner has started.  0 for NULL.  Threading: any
 *  thread. */
int zkrc_runner_turns(zkrc_runner *r);

/** The runner's path (owned by the runner: valid until its free).  NULL
 *  for NULL.  Threading: any thread. */
const char *zkrc_runner_path(zkrc_runner *r);

/**
 * Free the runner: the running function's cancellation fires (reason
 * ZKRC_ECLOSED) and this waits for the function to return - the one wait
 * of this free, bounded by the function alone, never by the network: a
 * function that ignores its cancellation keeps this call waiting (use
 * zkrc_runner_free_async() where that must not block).  Then the hold is
 * given back in the background (the underlying zkrc_lock_free() or
 * zkrc_election_free()); no event is told after it returns.  NULL is
 * ignored.  Threading: any thread.  From the work function itself, or
 * from this runner's own event callback, it does not wait for the
 * function: the runner's thread gives the hold back and frees the rest
 * once the function returned.  Do not use @p r after this call.
 */
void zkrc_runner_free(zkrc_runner *r);

/**
 * Free the runner without blocking: the cancellation fires (ZKRC_ECLOSED),
 * and once the function has returned (however long that takes), its
 * RETURNED and the runner's CLOSED are told and the hold is given back,
 * @p done runs on the session's executor, the last call about the runner.
 * @return ZKRC_OK (@p done will run); ZKRC_EINVAL (NULL @p r or @p done;
 *         nothing changes).
 * Threading: any thread, also the work function and the callbacks.  Call
 * it once, instead of zkrc_runner_free().
 */
int zkrc_runner_free_async(zkrc_runner *r, zkrc_callback_fn done, void *arg);

#ifdef __cplusplus
}
#endif
#endif /* ZKRECIPES_RUNNER_H */
