/*
 * zkrecipes/participants.h - the contenders of a lock or an election, as
 * the servers list them (zkrc_lock_list(), zkrc_election_list(),
 * zkrc_lock_participants(), zkrc_election_participants()).
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef ZKRECIPES_PARTICIPANTS_H
#define ZKRECIPES_PARTICIPANTS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Free a NULL-terminated array of strings returned by a recipe (participant
 * lists).  NULL is ignored.  Threading: any thread.
 */
void zkrc_strv_free(char **strv);

/** One contender of a lock or an election, as the servers list it.  The
 *  lists are arrays of it, owned by the library's allocator: free them
 *  with zkrc_participants_free() only (never free() an id alone). */
typedef struct zkrc_participant {
  /** Its node's data: the participant id, NUL-terminated for convenience;
   *  the data may hold NUL bytes itself: zkrc_participant_id_len() gives
   *  its length.  "" for a node without data. */
  char *id;
  char *node; /**< its node's name (last path component) */
  /** Its fencing token: the zxid that created its node (czxid), what the
   *  participant got as its token once it held or led. */
  int64_t token;
  /** When its node was created, ms since the epoch (the servers' clock):
   *  since when it takes part. */
  int64_t ctime_ms;
} zkrc_participant;

/** Free a list from zkrc_lock_list() / zkrc_election_list() (NULL ok). */
void zkrc_participants_free(zkrc_participant *list, size_t count);

/**
 * The length in bytes of @p p->id (the node's data, which may hold NUL
 * bytes; the NUL after it not counted), kept beside the id by the library
 * (a new field would change the lists' array stride, hence the function).
 * @p p must be an element of a list the library returned (zkrc_lock_list(),
 * zkrc_election_list(), zkrc_semaphore_list()), or a copy of one, not yet
 * freed.  NULL @p p or a NULL id: 0.  Threading: any thread; no I/O.
 */
size_t zkrc_participant_id_len(const zkrc_participant *p);

/**
 * Is @p name (a child of a recipe's directory) a contender, as the library
 * itself reads names?  It is when it ends with one of the markers below
 * followed by a sequence number the servers appended ("%010d" of a signed
 * 32-bit counter):
 *   "lock-"     our mutex, Curator's InterProcessMutex (exclusive)
 *   "__lock__"  kazoo's Lock and WriteLock (exclusive)
 *   "__WRIT__"  a write side: ours, Curator's (exclusive)
 *   "__READ__"  a read side: ours, Curator's (shared)
 *   "__rlock__" kazoo's ReadLock (shared)
 *   "latch-"    an election: ours, Curator's LeaderLatch
 *   "lease-"    a semaphore's lease: ours, Curator's V2 (under PATH/leases)
 * For tools that show queues (zkr-ls): the order is that of @p seq, read
 * as signed.
 * @param seq  if not NULL, receives the sequence number.
 * @return the marker (a static string, one of the above), or NULL when
 *         @p name is not a contender (or is NULL).
 * Threading: any thread; pure.
 */
const char *zkrc_contender_marker(const char *name, int32_t *seq);

#ifdef __cplusplus
}
#endif
#endif /* ZKRECIPES_PARTICIPANTS_H */
