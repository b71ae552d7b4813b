/*
 * chaos.h - what test_chaos and its workers (chaosworker) share.
 *
 * Each worker instance owns one slot of a status file that the test maps
 * too: the worker publishes what it is doing, so that the test can aim its
 * faults (freeze the holder between two of its writes, expire the holder's
 * session) and watch for a worker that stopped making progress.
 *
 * The workers' logs, one line per record, "<monotonic-us> WHAT args":
 *   START <pid>
 *   SESSION <event> <session-id-hex>
 *   ACQ <hold> <rc-name> <token> <duration-us> <zk> [read|write]
 *       (the side, in a read-write lock run only: a reader's hold is
 *        shared; with no side the hold is exclusive, or a lease)
 *   WRITE <hold> <k> <token> <held> <OK|REFUSED|ERR:<errno>> <duration-us>
 *         (<held>: what zkrc_lock_is_held() said just before the write; the
 *          worker writes whatever it says - a careless client on purpose)
 *   READ <hold> <k> <token> <held> <seen-token|NONE|ERR:<errno>> <duration-us>
 *         (a read-write lock's reader reads the writers' key instead of
 *          writing; <seen-token>: the token the value was written with)
 *   REL <hold> <rc-name> <duration-us> <zk>
 *   LOCKEVENT <event> <reason-name> <token> <zk>
 *   (<zk>: ZooKeeper's own code behind a failure, zkrc_last_zk_error() or
 *    the event's zk_error; 0 (ZOK) when there is none, so that an
 *    unexpected ZKRC_EZOOKEEPER can be told apart)
 *   CONTROL <made|missed|stopped> <token>  (a control's cheat, see
 *       chaosworker.c: made: it saw the other holders it waited for while
 *       it still claimed the hold with <token>, so that the overlap the
 *       checker must report is certain; missed: they did not come by the
 *       deadline; stopped: SIGTERM came first, at the end of the run)
 *   EXIT <status>
 * In an election run (chaosworker ... elect), ELECTED is logged as
 * "ACQ <n> ZKRC_OK <token> 0 0" (n counts the leaderships), REVOKED as
 * "LOCKEVENT lost <reason> <token> <zk>" and a resignation as REL, so that
 * one checker (chaos_log.c, holds.c) reads both kinds of run.  In a
 * semaphore run (... semaphore=N) each ACQ is a lease, LOCKEVENT lost its
 * loss, REL its release.
 * A partitioner member (... partition=N) logs instead
 *   PARTNEW <identifier> <rc-name>   (a partitioner made: a new member)
 *   PART <state>                     (each state it is told)
 *   ITEM <item> ACQ                  (an item of the share, at ACQUIRED)
 *   ITEM <item> END <RELEASE|FAILURE|STOP>  (no longer used: before
 *        confirming RELEASE, at FAILURE, before leaving the party)
 * The value a worker writes is "w<instance>.<hold>.<k>", which is how the
 * store's journal lines are matched to the writes.
 */
#ifndef ZKT_CHAOS_H
#define ZKT_CHAOS_H

#include <stdint.h>
#include <time.h>

#define CHAOS_MAX_INSTANCES 4096

/* The recipe a worker takes part in (its slot's kind). */
enum chaos_kind {
  CHAOS_KIND_LOCK = 0,
  CHAOS_KIND_ELECTION = 1,
  CHAOS_KIND_RWLOCK = 2,
  CHAOS_KIND_SEMAPHORE = 3,
  CHAOS_KIND_PARTITION = 4,
  CHAOS_KIND_TIMELEASE = 5, /* chaos_tlworker.c */
  CHAOS_KIND_BARRIER = 6,   /* chaos_dbworker.c */
  CHAOS_KIND_RUNNER = 7     /* chaosworker.c runner */
};

enum chaos_phase {
  CHAOS_STARTING = 0,
  CHAOS_ACQUIRING = 1,
  CHAOS_WRITING = 2, /* holding; a write is in flight */
  CHAOS_WORKING = 3, /* holding, between two writes (writes_left > 0) */
  CHAOS_RELEASING = 4,
  CHAOS_IDLE = 5,
  CHAOS_EXITED = 6
};

typedef struct chaos_slot {
  int32_t pid;
  int32_t phase;       /* enum chaos_phase */
  int32_t writes_left; /* while holding: writes not sent yet */
  int32_t hold;        /* number of the current or last hold */
  int64_t token;       /* token of the current or last hold */
  int64_t session_id;  /* current ZooKeeper session, 0 when none */
  char passwd[16];     /* its password, for zkrc_ensemble_expire_session */
  int64_t progress_us; /* when the worker last finished a step */
  int32_t linger;      /* set by the test: hold on until told LOST */
  int32_t shared;      /* the current or last hold is a reader's */
  int32_t kind;        /* enum chaos_kind */
  /* What the worker claims to hold, for the controls that wait to see
   * another holder (chaosworker.c): 1 from just after its ACQ record until
   * just before the record that ends the hold (LOST, release); cleared by
   * the test when the worker dies. */
  int32_t holding;
  uint32_t items;          /* a partitioner member: the items it claims, i<n>
                          * as bit n (the control's, ever claimed) */
  int32_t control_made;    /* the control's cheats that made their overlap */
  int32_t control_missed;  /* ... and that saw no other holder in time */
  int32_t control_waiting; /* a cheat is waiting for the others now */
  int32_t lease_slot;      /* a time lease's holder: the slot it holds */
  int32_t barrier_round;   /* a double barrier's member: its round */
} chaos_slot;

/* Microseconds on the system-wide monotonic clock: comparable between the
 * processes of one machine, so the logs of all of them can be merged. */
static inline int64_t chaos_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

#endif /* ZKT_CHAOS_H */
