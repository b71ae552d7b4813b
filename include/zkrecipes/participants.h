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

/** One contender of a lock or an election, as the servers list it. */
typedef struct zkrc_participant {
  char *id;   /**< its node's data: the participant id */
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

#ifdef __cplusplus
}
#endif
#endif /* ZKRECIPES_PARTICIPANTS_H */
