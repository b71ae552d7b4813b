/*
 * The cache object, for the files that implement it: cache.c (the reads
 * that keep the copy current, the events, the lifetime) and cache_read.c
 * (reading the copy).  c->mu guards every field below except the
 * constants set at creation (s, tree's root, listener); it is a recipe's
 * mutex in the lock order (session_private.h).
 */
#ifndef ZKRC_CACHE_PRIVATE_H
#define ZKRC_CACHE_PRIVATE_H

#include <stdint.h>

#include <glib.h>

#include "cache_tree.h"
#include "evq.h"
#include "zkrecipes/cache.h"

struct zkrc_cache {
  gint refs; /* the owner's, each read in flight, a posted drain, watches */
  GMutex mu;
  GCond cond; /* initialized, closed, dispatching */
  zkrc_session *s;
  zkrc__ctree *tree;
  zkrc_cache_listener_fn listener;
  void *listener_arg;
  unsigned long observer;
  void *watch_ctx; /* registry context for handle watch_gen */
  uint64_t watch_gen;
  uint64_t generation;    /* the latest handle a read was sent on */
  uint64_t full_read_gen; /* the handle of the latest full read (0: none) */
  int inflight;           /* reads decided and not answered (backlog too) */
  int on_wire;            /* of those, sent: at most WINDOW (cache.c) */
  GQueue backlog;         /* of read_req*, decided and not sent yet */
  gboolean incomplete;    /* a read failed: the next full read completes it */
  gboolean initialized, closed, freeing;
  gboolean down_told;       /* SUSPENDED or LOST told, RECONNECTED not yet */
  uint64_t lost_generation; /* LOST told for this handle */
  gboolean lost_told;       /* LOST told, no connection since */
  zkrc__evq events;         /* of zkrc__cache_ev*, for the listener */
  /* Nodes whose deletion was announced: the parent's next listing says
   * whether they are back (created again, maybe in the same multi). */
  GHashTable *deleted;   /* path (owned) → TRUE */
  GSource *repair_timer; /* a full read after reads failed while connected */
  int repair_ms;         /* its next delay; 0: the first */
};

/* A path a cache may be made for or asked about: one a recipe may use
 * (zkrc_path_validate), "/", or one below the servers' own "/zookeeper"
 * (which a tree cache of "/" holds). */
gboolean zkrc__cache_path_ok(const char *path);

/* The connection went: take the cache's watches out of the ZooKeeper
 * client's tables, so that the next connection's SetWatches request does
 * not carry them (cache_forget.c says why).  The session's worker, without
 * c->mu. */
void zkrc__cache_forget_watches(zkrc_cache *c);

#endif /* ZKRC_CACHE_PRIVATE_H */
