/*
 * The cache object, for the files that implement it: cache.c (the reads
 * that keep the copy current, the events), cache_life.c (making and
 * freeing it) and cache_read.c (reading the copy).  c->o.mu guards every
 * field below except the constants set at creation (s, tree's root,
 * on_event, event_arg, observer); it is a recipe's mutex in the lock order
 * (session_private.h).
 */
#ifndef ZKRC_CACHE_PRIVATE_H
#define ZKRC_CACHE_PRIVATE_H

#include <stdint.h>

#include <glib.h>

#include "core/object.h"
#include "watched/cache_tree.h"
#include "zkrecipes/cache.h"

struct zkrc_cache {
  /* References (the owner's, each read in flight, the repair timer, the
   * watch context), the mutex, the condition (initialized,
   * session_closed), the events and the free (core/object.h).  Once it
   * is ending (zkrc__object_ending) the cache sends nothing and decides
   * nothing more. */
  zkrc__object o;
  zkrc_session *s;
  zkrc__ctree *tree;
  zkrc_cache_event_fn on_event;
  void *event_arg;
  unsigned long observer;
  void *watch_ctx; /* registry context for handle watch_gen */
  uint64_t watch_gen;
  uint64_t generation;    /* the latest handle a read was sent on */
  uint64_t full_read_gen; /* the handle of the latest full read (0: none) */
  int inflight;           /* reads decided and not answered (backlog too) */
  int on_wire;            /* of those, sent: at most WINDOW (cache.c) */
  GQueue backlog;         /* of read_req*, decided and not sent yet */
  gboolean incomplete;    /* a read failed: the next full read completes it */
  gboolean initialized;
  gboolean session_closed;  /* told CLOSED or AUTH_FAILED by the session */
  gboolean down_told;       /* SUSPENDED or LOST told, RECONNECTED not yet */
  uint64_t lost_generation; /* LOST told for this handle */
  gboolean lost_told;       /* LOST told, no connection since */
  /* Nodes whose deletion was announced: the parent's next listing says
   * whether they are back (created again, maybe in the same multi). */
  GHashTable *deleted; /* path (owned) → TRUE */
  /* Nodes whose read ZooKeeper refused (ZNOAUTH), watched with exists()
   * until they change (cache_refused.c). */
  GHashTable *refused;   /* path (owned) → GINT_TO_POINTER(UNREADABLE told) */
  GSource *repair_timer; /* a full read after reads failed while connected */
  int repair_ms;         /* its next delay; 0: the first */
};

/* ------------------------------------- between cache.c and cache_life.c */

/* The session's events for the cache (its observer: the session's
 * worker). */
void zkrc__cache_on_session(zkrc_session *s, zkrc_session_event_type ev,
                            uint64_t generation, void *arg);

/* Read every node of the copy again, and the root when it is not in it. */
void zkrc__cache_read_all(zkrc_cache *c);

/* The cache is ending (closed or detached): cancel its watch context and
 * repair timer and drop the reads not sent yet.  Without c->o.mu; never
 * waits. */
void zkrc__cache_give_up(zkrc_cache *c);

/* A path a cache may be made for or asked about: one a recipe may use
 * (zkrc_path_validate), "/", or one below the servers' own "/zookeeper"
 * (which a tree cache of "/" holds). */
gboolean zkrc__cache_path_ok(const char *path);

/* The connection went: take the cache's watches out of the ZooKeeper
 * client's tables, so that the next connection's SetWatches request does
 * not carry them (cache_forget.c says why).  The session's worker, without
 * c->mu. */
void zkrc__cache_forget_watches(zkrc_cache *c);

/* ---------------------- nodes the cache may not read (cache_refused.c)
 * All under c->mu.  A read of a node that ZooKeeper refused leaves it out
 * of the copy (cache.c); an exists() with the cache's watch, which needs no
 * permission, then says whether it is there, and fires at its next change,
 * when cache.c reads it again. */

/* A read of @p path was refused.  TRUE: send an exists() with a watch on
 * it (the first refusal of the node, or a refused getData, whose watch was
 * not set). */
gboolean zkrc__cache_refused_locked(zkrc_cache *c, const char *path,
                                    gboolean data_read);

/* The exists() after a refusal answered @p rc: ZOK (@p stat), UNREADABLE
 * is appended to @p events, once until the node is read or gone; ZNONODE,
 * the refusal is forgotten; other codes change nothing (retry). */
void zkrc__cache_refused_exists_locked(zkrc_cache *c, const char *path, int rc,
                                       const struct Stat *stat, GQueue *events);

/* Was a read of @p path refused, and the node not read or gone since? */
gboolean zkrc__cache_is_refused_locked(zkrc_cache *c, const char *path);

/* @p path was read, or is gone: forget its refusal. */
void zkrc__cache_refused_forget_locked(zkrc_cache *c, const char *path);

/* @p parent was listed with these @p count @p names: forget the refused
 * children it no longer has (deleted while no watch could tell). */
void zkrc__cache_refused_listed_locked(zkrc_cache *c, const char *parent,
                                       char *const *names, int count);

/* The name of @p path when it is a child of @p parent ("/a/b" of "/a":
 * "b"), else NULL. */
const char *zkrc__cache_child_name(const char *parent, const char *path);

#endif /* ZKRC_CACHE_PRIVATE_H */
