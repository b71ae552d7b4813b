/*
 * The contender queue: one recipe object's tail.  Threads queued on one lock
 * object join again at the back each time they release, and a listing of
 * the queue to learn their predecessor costs as much as the queue is long
 * (2,000 names for 2,000 threads), on the one connection and completion
 * thread that every hand-over of the session shares.  But the object
 * knows its own newest node, and the servers number a directory's children
 * by counting their creations (deletions do not count: ZooKeeper names a
 * sequential node after its parent's count of creates, the cversion less
 * its deletions).  So a node numbered right after the object's newest was
 * the next child created after it: nothing can be between the two, and the
 * newer one's predecessor is the older one, without a listing.
 *
 * That is what a listing would have shown, and the waiter goes on as after
 * one (queue_decide.c): it watches that predecessor with a getData (gone
 * already: it lists the queue), and when it goes, it either knows from
 * front_czxid that the predecessor was first, or lists.  The name also
 * stands for the proof: in the directory that still holds our node (the
 * hand-over reads our node's stat before we hold), only the create just
 * before ours got the number just before ours.  Only under the exclusive
 * policy, where the predecessor is the one to watch.
 *
 * The tail is forgotten when its contender deletes its node or ends; a
 * tail that is stale for another reason (its node deleted by someone
 * else) costs a listing, never a wrong decision.  See queue_private.h.
 */
#include "config.h"

#include <string.h>

#include "queue/queue_private.h"

/* Does the tail concern @p c: a contender under the exclusive policy? */
static gboolean tail_applies(const zkrc__contender *c) {
  return c->policy == zkrc__policy_exclusive;
}

gboolean zkrc__q_tail_live_locked(const zkrc__contender *c) {
  if (!tail_applies(c))
    return FALSE;
  zkrc__queue_tail *t = &c->queue->tail;
  g_mutex_lock(&t->mu);
  gboolean live = t->marker != NULL;
  g_mutex_unlock(&t->mu);
  return live;
}

gboolean zkrc__q_tail_follow_locked(zkrc__contender *c,
                                    char pred[ZKRC__Q_NAME_MAX]) {
  if (!tail_applies(c))
    return FALSE;
  zkrc__queue_tail *t = &c->queue->tail;
  g_mutex_lock(&t->mu);
  gboolean behind =
      t->marker != NULL && zkrc__sequence_right_after(t->seq, c->seq);
  if (behind)
    zkrc__q_node_name(t->uuid, t->marker, t->seq, pred);
  t->marker = c->marker;
  t->seq = c->seq;
  memcpy(t->uuid, c->uuid, sizeof t->uuid);
  g_mutex_unlock(&t->mu);
  return behind;
}

void zkrc__q_tail_leave_locked(zkrc__contender *c) {
  if (!tail_applies(c) || !c->name_known)
    return;
  zkrc__queue_tail *t = &c->queue->tail;
  g_mutex_lock(&t->mu);
  if (t->marker != NULL && t->seq == c->seq &&
      memcmp(t->uuid, c->uuid, sizeof t->uuid) == 0)
    t->marker = NULL;
  g_mutex_unlock(&t->mu);
}
