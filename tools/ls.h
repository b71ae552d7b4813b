/*
 * tools/ls.h - what zkr-ls finds (the queues of contenders on the servers)
 * and how it prints them: zkr-ls.c reads (the raw reads in ls_zk.c),
 * ls_output.c prints, as aligned text or as JSON (json-glib).  Internal to
 * zkr-ls.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef ZKR_LS_H
#define ZKR_LS_H

#include <stdint.h>
#include <stdio.h>

#include <glib.h>

#include "zkrecipes.h"

/* Whether a contender holds: a semaphore's leases do not say (the number
 * of leases, N, is known to the participants only). */
typedef enum ls_holds { LS_WAITS, LS_HOLDS, LS_UNKNOWN } ls_holds;

/* One contender node, as the servers list it. */
typedef struct ls_contender {
  const char *role;    /* holder, reader, writer, leader, lease, waiter */
  ls_holds holds;      /* what role says, as a tri-state for --json */
  const char *kind;    /* what the node asks for: mutex, read, write, latch,
                          lease (from its name) */
  const char *dialect; /* whose node names: curator (Curator and zkrecipes,
                          which speaks Curator's protocol) or kazoo */
  char *node;          /* its name (g_free) */
  int64_t session;     /* its ephemeralOwner: the session that made it */
  int64_t token;       /* its czxid: the fencing token */
  int64_t ctime_ms;    /* when it was made (the servers' clock) */
  char *data;          /* its data: the participant id, NUL-terminated
                          (g_free) */
  size_t data_len;     /* its bytes (NULs inside included) */
} ls_contender;

/* The contenders of one recipe, in queue order. */
typedef struct ls_queue {
  char *path;         /* the recipe's path (g_free) */
  char *dir;          /* where its nodes are: path, or path/leases (g_free) */
  const char *recipe; /* lock, rwlock, election, semaphore; NULL: none */
  GArray *contenders; /* of ls_contender */
} ls_queue;

ls_queue *ls_queue_new(const char *path, const char *dir, const char *recipe);
void ls_queue_free(gpointer q);

/* Print @p queues (of ls_queue *) to @p out: a header, then each queue's
 * path and recipe and one aligned line per contender; ages from
 * @p now_ms (ms since the epoch).  Returns 0, or -1 when writing failed. */
int ls_print_text(FILE *out, const GPtrArray *queues, int64_t now_ms);

/* The same as one JSON document (see zkr-ls(1)). */
int ls_print_json(FILE *out, const GPtrArray *queues, int64_t now_ms);

/* ------------------------------------------------- raw reads (ls_zk.c) */

/* The children of @p path, sorted by bytes (*names: g_strfreev; NULL on
 * failure), waiting at most @p timeout_ms.  Returns the ZooKeeper result:
 * ZOK, ZNONODE, ZNOAUTH, ...; ZOPERATIONTIMEOUT when no answer came in
 * time; ZCONNECTIONLOSS when the session has no handle now. */
int ls_zk_children(zkrc_session *s, const char *path, int timeout_ms,
                   char ***names);

/* The session owning each of the @p n nodes @p paths (ephemeralOwner; 0
 * for a node no session owns, -1 for one that does not exist), all asked
 * at once and awaited at most @p timeout_ms together.  Returns ZOK, or the
 * first failure other than ZNONODE. */
int ls_zk_owners(zkrc_session *s, char **paths, int n, int timeout_ms,
                 int64_t *owners);

#endif /* ZKR_LS_H */
