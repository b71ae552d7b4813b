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

/* Markers of the lock (Curator InterProcessMutex, kazoo Lock) and of the
 * election (Curator LeaderLatch). */
extern const char *const zkrc__lock_markers[];
extern const char *const zkrc__latch_markers[];

/* Parse the sequence number of @p name if it ends with one of @p markers
 * (a NULL-terminated list) followed by a well-formed sequence.  Returns
 * TRUE and sets *seq, or FALSE for a name that is not a contender. */
gboolean zkrc__contender_seq(const char *name, const char *const *markers,
                             int32_t *seq);

/* One contender of a children listing. */
typedef struct zkrc__contender_entry {
  char *name; /* owned */
  int32_t seq;
} zkrc__contender_entry;

/* The contenders among @p names (@p count of them), ordered by sequence
 * (ties, which one directory cannot produce, by name).  Returns a GArray of
 * zkrc__contender_entry; free it with zkrc__contenders_free(). */
GArray *zkrc__contenders_sorted(char *const *names, int count,
                                const char *const *markers);
void zkrc__contenders_free(GArray *contenders);

/* Index of @p name in @p contenders, or -1. */
int zkrc__contenders_find(const GArray *contenders, const char *name);

/* The protected prefix "_c_<uuid>-" of a node name, as Apache Curator's
 * protected mode writes it.  (g_free the result.) */
char *zkrc__protected_prefix(const char *uuid);

#endif /* ZKRC_NAMES_H */
