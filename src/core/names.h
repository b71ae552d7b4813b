/*
 * Contender names: which children of a recipe's directory take part, and in
 * what order.
 *
 * A contender's name ends with a marker ("lock-", kazoo's "__lock__",
 * Curator LeaderLatch's "latch-") followed by the sequence number the server
 * appended: "%010d" of a signed 32-bit counter, so "0000000042", and after
 * 2^31 creations "-2147483648" and upwards.  Contenders are ordered by that
 * number read as signed.  Anything else in the directory is ignored.
 */
#ifndef ZKRC_NAMES_H
#define ZKRC_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include <glib.h>

/* What a contender node asks for. */
typedef enum zkrc__claim {
  ZKRC__CLAIM_EXCLUSIVE, /* alone: a mutex holder, a writer, a leader */
  ZKRC__CLAIM_SHARED     /* alongside other shared claims: a reader */
} zkrc__claim;

/* A name marker ("lock-", Curator's "__READ__", kazoo's "__lock__") that
 * the sequence number follows, and the claim of the nodes it marks.  A
 * recipe's table ends with {NULL}; the first marker a name ends with
 * counts. */
typedef struct zkrc__marker {
  const char *text;
  zkrc__claim claim;
} zkrc__marker;

/* Markers of the lock family: the mutex (ours, Curator InterProcessMutex,
 * kazoo Lock: exclusive) and the read-write lock (Curator
 * InterProcessReadWriteLock's "__WRIT__" and "__READ__", kazoo WriteLock's
 * "__lock__" and ReadLock's "__rlock__"); and of the election (Curator
 * LeaderLatch). */
extern const zkrc__marker zkrc__lock_markers[];
extern const zkrc__marker zkrc__latch_markers[];
/* The leases of a semaphore (Curator InterProcessSemaphoreV2's "lease-"
 * under "<path>/leases"): all alike, admitted by count (policy permits). */
extern const zkrc__marker zkrc__lease_markers[];

/* Parse the sequence number of @p name if it ends with one of @p markers
 * followed by a well-formed sequence.  Returns the marker (and sets *seq),
 * or NULL for a name that is not a contender. */
const zkrc__marker *zkrc__contender_marker(const char *name,
                                           const zkrc__marker *markers,
                                           int32_t *seq);
/* The same, as a yes or no. */
gboolean zkrc__contender_seq(const char *name, const zkrc__marker *markers,
                             int32_t *seq);

/* One contender of a children listing. */
typedef struct zkrc__contender_entry {
  char *name; /* owned */
  int32_t seq;
  zkrc__claim claim;
} zkrc__contender_entry;

/* The queue's order of two contenders (<0, 0, >0): by sequence; ties
 * (which one directory cannot produce) by name.  Every ordering of the
 * queue uses it. */
int zkrc__queue_order(int32_t a_seq, const char *a_name, int32_t b_seq,
                      const char *b_name);

/* The contenders among @p names (@p count of them), ordered by sequence
 * (ties, which one directory cannot produce, by name).  Returns a GArray of
 * zkrc__contender_entry; free it with zkrc__contenders_free(). */
GArray *zkrc__contenders_sorted(char *const *names, int count,
                                const zkrc__marker *markers);
void zkrc__contenders_free(GArray *contenders);

/* The sequence number ZooKeeper appended to a node's name ("%010d" of an
 * int32, so negative once its directory's counter wrapped: "-000000005",
 * "-1500000000"), given exactly those characters.  FALSE when @p s is not
 * one. */
gboolean zkrc__parse_sequence(const char *s, int32_t *seq);

/* Is @p seq the number a directory gives the first child created after
 * the one numbered @p before (the next count of its creates)?  Not across
 * the counter's wrap, where the queue's order (by sequence) turns over. */
gboolean zkrc__sequence_right_after(int32_t before, int32_t seq);

/* Index of @p name in @p contenders, or -1. */
int zkrc__contenders_find(const GArray *contenders, const char *name);

/* The data a revoker writes on a lock contender's node to ask its owner
 * to give the lock up (Curator's LockInternals.REVOKE_MESSAGE, written by
 * its Revoker.attemptRevoke(); zkrc_lock_revoke()). */
#define ZKRC__REVOKE_MESSAGE "__REVOKE__"

/* The length of a protected prefix "_c_<uuid>-" (without its NUL). */
#define ZKRC__PROTECTED_PREFIX_LEN 40

/* A new random (version 4) uuid, as its 16 bytes: what a contender keeps
 * of its protected prefix (the 41-byte string is made only when needed). */
void zkrc__uuid_bytes_random(guint8 uuid[16]);

/* The protected prefix "_c_<uuid>-" of a node name, as Apache Curator's
 * protected mode writes it (the uuid in its lowercase 8-4-4-4-12 form, as
 * Java's UUID.toString()), of the uuid @p uuid, written to @p out. */
void zkrc__protected_prefix(const guint8 uuid[16],
                            char out[ZKRC__PROTECTED_PREFIX_LEN + 1]);

#endif /* ZKRC_NAMES_H */
