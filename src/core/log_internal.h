/*
 * The library's side of zkrecipes/log.h.  Every function here may call the
 * application's log handler: call them with no zkrecipes mutex held
 * (HACKING: no user code under an internal mutex).
 */
#ifndef ZKRC_LOG_INTERNAL_H
#define ZKRC_LOG_INTERNAL_H

#include <glib.h>

#include "zkrecipes/log.h"

/* Would a line of @p level be produced?  (Cheap: check before building an
 * expensive line.) */
gboolean zkrc__log_enabled(zkrc_log_level level);

/* A line of the library's own, printf-style. */
void zkrc__log(zkrc_log_level level, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

/* The log callback every handle gets: the client's lines, parsed, mapped
 * to levels and rate-limited. */
void zkrc__log_trampoline(const char *message);

/* Split a line of the ZooKeeper client (3.8's zk_log.c log_message():
 * "2026-11-29 12:00:00,123:12345(0x7f3a):ZOO_ERROR@zookeeper_interest@2597:
 * Socket [...]"): *level gets the client's level, as ours, and *text points
 * into @p line at "zookeeper_interest@2597: Socket [...]" (the timestamp,
 * process and thread dropped: the handler has its own clock).  FALSE for a
 * line not in that form (then nothing is set).  Pure. */
gboolean zkrc__log_parse_client_line(const char *line, zkrc_log_level *level,
                                     const char **text);

/* The level a parsed client line is given: the client's own (@p said),
 * except for its routine retries, at INFO (log.h's "a retry"): the errors
 * of a connection refused, dropped or timed out ("Socket [...] zk
 * retcode=-4" or -7), which it tries again by itself, and its warning
 * "Delaying connection after exhaustively trying all servers".  What they
 * mean for the application the library says itself (a session suspended,
 * lost).  Pure. */
zkrc_log_level zkrc__log_client_level(zkrc_log_level said, const char *text);

/* The token bucket of the client's lines: at most burst + per_second * T
 * lines (summaries included) in any T seconds.  per_second 0: no limit. */
typedef struct zkrc__log_bucket {
  int burst, per_second;
  double tokens;
  gint64 refilled_us;
  unsigned long held_back;   /* since the last summary */
  zkrc_log_level held_worst; /* the most severe of them */
  gint64 summary_us;         /* when the last summary was told; 0: never */
} zkrc__log_bucket;

/* A summary is due at most this often while lines keep being held back
 * (and when the limit lets up). */
#define ZKRC__LOG_SUMMARY_INTERVAL_US (10 * G_USEC_PER_SEC)

/* What the bucket says about one line. */
typedef struct zkrc__log_verdict {
  gboolean pass;                /* the line goes to the handler */
  unsigned long summary;        /* >0: tell first that this many were held
                                   back (it took a token of its own) */
  zkrc_log_level summary_level; /* the most severe of them */
} zkrc__log_verdict;

/* A line of @p level at @p now_us (monotonic): pass it, hold it back
 * (counted), and is a summary due first?  Pure; the caller serializes. */
zkrc__log_verdict zkrc__log_bucket_take(zkrc__log_bucket *b,
                                        zkrc_log_level level, gint64 now_us);

/* Before a handle is opened: the client's own level, unless the
 * application chose one (quiet by default). */
void zkrc__log_before_open(void);

/* Around a ZooKeeper call made with a zkrecipes mutex held that may log
 * from the calling thread (zookeeper_init2): the lines it logs are kept;
 * defer_end returns them (or NULL), to be given to zkrc__log_flush() once
 * no mutex is held. */
void zkrc__log_defer_begin(void);
void *zkrc__log_defer_end(void);
void zkrc__log_flush(void *lines);

#endif /* ZKRC_LOG_INTERNAL_H */
