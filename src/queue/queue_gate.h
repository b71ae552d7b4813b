/*
 * The session's gate on contenders entering their queues (queue_gate.c).
 *
 * Every contender a session starts (a lock's acquisition, an election's
 * candidacy, ...) first passes this gate: at most ZKRC__GATE_SLOTS of them
 * are between "start" and their first look at the queue (their create and
 * listing sent, not yet answered) at once; the others wait here, in the
 * order they were started, and go as slots free.  100,000 acquisitions
 * asked back to back would otherwise put 300,000 requests in the ZooKeeper
 * client's queues at once: their buffers, the heap fragmented once they
 * are answered, and the lease's renewal queued behind all of them, so late
 * that the lease runs out (it did, here).  Reads of a cache are bounded in
 * the same way (cache.c).
 *
 * A contender waiting at the gate has sent nothing: it can be withdrawn
 * (its deadline passed) or ended (the session closed) there, and leaves
 * the line at once.
 *
 * The gate's mutex comes after a contender's and is never held while
 * taking one (lock order: session_private.h).
 */
#ifndef ZKRC_QUEUE_GATE_H
#define ZKRC_QUEUE_GATE_H

#include "session/session_internal.h" /* zkrc__gate, ZKRC__GATE_SLOTS */

/* For tests: set the session's bound (0: none).  Affects contenders
 * started afterwards. */
void zkrc__gate_set_limit(zkrc_session *s, int limit);

#endif /* ZKRC_QUEUE_GATE_H */
