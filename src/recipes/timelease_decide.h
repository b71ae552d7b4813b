/*
 * Time leases (zkrecipes/timelease.h): kazoo's lease_holder record and
 * the decision it leads to, as pure functions of the record's bytes, the
 * identifier and the clock's reading.  No I/O, no session: tests/
 * test_timelease.c runs them without a server.
 */
#ifndef ZKRC_TIMELEASE_DECIDE_H
#define ZKRC_TIMELEASE_DECIDE_H

#include <stddef.h>
#include <stdint.h>

#include <glib.h>

#include "zkrecipes/timelease.h"

/* The one format version kazoo 2.8 writes and takes over. */
#define ZKRC__TIME_LEASE_VERSION 1

/* A lease_holder record as read. */
typedef struct zkrc__lease_record {
  gboolean current; /* version 1; when FALSE nothing else is read */
  char *holder;     /* g_malloc'ed; NULL unless current */
  int64_t end_ms;   /* the end, ms since the epoch UTC (a whole second) */
} zkrc__lease_record;

/* Parse the @p len bytes of @p data (JSON, UTF-8) into @p rec: ZKRC_OK,
 * or ZKRC_EBADNODE (not a JSON object, no "version", or a version-1
 * record whose "holder" is not a string or whose "end" is not
 * "%Y-%m-%dT%H:%M:%S").  A version other than 1 (by value: 1.0 is 1, as
 * kazoo's Python compares) is ZKRC_OK with rec->current FALSE, whatever
 * else the record holds.  Free with zkrc__lease_record_clear(). */
int zkrc__lease_record_parse(const char *data, size_t len,
                             zkrc__lease_record *rec);
void zkrc__lease_record_clear(zkrc__lease_record *rec);

/* kazoo's decision for @p ident at @p now_ms: @p rec NULL (no record)
 * or expired, OBTAINED; ours and still running, RENEWED; another's and
 * running (now < end), HELD; another version, OTHER_VERSION. */
zkrc_time_lease_outcome zkrc__lease_decide(const zkrc__lease_record *rec,
                                           const char *ident, int64_t now_ms);

/* The end we write: @p now_ms + @p duration_ms rounded up to a whole
 * second (kazoo truncates: we never end before the duration).  FALSE when
 * it falls outside the years 1970 to 9999 (the format's four digits). */
gboolean zkrc__lease_end(int64_t now_ms, int64_t duration_ms, int64_t *end_ms);

/* "%Y-%m-%dT%H:%M:%S" of @p end_ms (UTC) into @p buf (20 bytes). */
void zkrc__lease_format_time(int64_t end_ms, char buf[20]);
/* The time "%Y-%m-%dT%H:%M:%S" (UTC) as ms since the epoch; FALSE when
 * @p text is not such a time. */
gboolean zkrc__lease_parse_time(const char *text, int64_t *ms);

/* kazoo's record for @p ident (valid UTF-8) ending at @p end_ms:
 * {"version": 1, "holder": ..., "end": ...} as Python's json.dumps writes
 * it.  g_malloc'ed; *@p len its bytes. */
char *zkrc__lease_record_format(const char *ident, int64_t end_ms, size_t *len);

#endif /* ZKRC_TIMELEASE_DECIDE_H */
