/*
 * zkrecipes/log.h - where log lines go: the library's own and the
 * ZooKeeper client's.
 *
 * Every line comes with a level, numbered as syslog's priorities (ERROR is
 * LOG_ERR, WARN LOG_WARNING, ...), so that a daemon can hand it to
 * syslog(3) or sd_journal_print(3) as it is, and with its origin: the
 * library itself (session state, holds and leaderships lost, retries and
 * their reason) or the ZooKeeper client, whose lines are mapped to the
 * same levels and rate-limited (while the servers are down it would
 * otherwise write dozens of lines a second; see
 * zkrc_log_set_rate_limit()).
 *
 * The levels mean the same from both origins.  A session lost (its lease
 * ran out) or expired is an ERROR; a hold or leadership lost, or a
 * connection dropped (a session suspended), a WARN; a reconnection a
 * NOTICE; a session connected or closed, and a retry, INFO.  The client's
 * lines keep the client's level (ZOO_ERROR is ERROR, ZOO_WARN WARN, ...)
 * but for its routine retries: a connection refused, dropped or timed out,
 * which it tries again by itself (ZOO_ERROR "Socket [...] zk retcode=-4"
 * or -7), and its pause after trying every server (ZOO_WARN "Delaying
 * connection after exhaustively trying all servers") are INFO; what they
 * mean for the application the library tells itself (SUSPENDED, LOST).
 * The client's text comes without its timestamp, process id, thread and
 * level ("2026-11-29 12:00:00,123:4242(0x7f3a):ZOO_INFO@"): it starts
 * with where in the client the line was made ("zookeeper_interest@2597:
 * Socket [...]"), which tells apart messages written in several places.
 *
 * Quiet by default: lines less severe than ZKRC_LOG_WARN are not produced
 * (the client's retries among them: the library's WARN and ERROR lines
 * tell what they come to), and the others go to stderr.
 * zkrc_log_set_level() asks for more; zkrc_log_set_handler() sends them
 * elsewhere.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef ZKRECIPES_LOG_H
#define ZKRECIPES_LOG_H

#ifdef __cplusplus
extern "C" {
#endif

/** How severe a line is: the values of syslog's LOG_ERR .. LOG_DEBUG. */
typedef enum zkrc_log_level {
  ZKRC_LOG_ERROR = 3,  /**< something failed for good (a session lost or
                            expired) */
  ZKRC_LOG_WARN = 4,   /**< a hold lost, a connection dropped (suspended) */
  ZKRC_LOG_NOTICE = 5, /**< normal but significant (reconnected) */
  ZKRC_LOG_INFO = 6,   /**< a session connected, a retry (the client's
                            refused connections included) */
  ZKRC_LOG_DEBUG = 7
} zkrc_log_level;

/** Who wrote a line (numbered from 1: zeroed memory is no origin). */
typedef enum zkrc_log_origin {
  ZKRC_LOG_LIBRARY = 1,  /**< zkrecipes itself */
  ZKRC_LOG_ZOOKEEPER = 2 /**< the ZooKeeper C client (its text, from
                            "function@line: ") */
} zkrc_log_origin;

/**
 * Receives one log line (no trailing newline; valid during the call).
 * Called on whichever thread logs, including the ZooKeeper client's I/O
 * and completion threads and the library's own, never with a zkrecipes
 * mutex held, but maybe with one of the ZooKeeper client's: keep it short
 * and non-blocking, and call no zkrecipes or ZooKeeper function from it.
 */
typedef void (*zkrc_log_fn)(zkrc_log_level level, zkrc_log_origin origin,
                            const char *line, void *arg);

/**
 * Send every log line (of every session, process-wide) to @p fn; NULL
 * silences them.  The default, before any call, writes them to stderr
 * ("zkrecipes: error: LINE", "zookeeper: info: LINE").
 * Threading: any thread; takes effect for lines logged after it returns.
 * Ownership: @p arg stays the caller's; it must outlive its use.
 */
void zkrc_log_set_handler(zkrc_log_fn fn, void *arg);

/**
 * Produce the lines at least as severe as @p level (process-wide; default
 * ZKRC_LOG_WARN).  It also sets the ZooKeeper client's own level, which is
 * one global of that client (so it affects handles opened without
 * zkrecipes too); until this is called, zkrecipes sets the client to WARN
 * when it opens its first handle.  A value out of range is ignored.
 * Threading: any thread.
 */
void zkrc_log_set_level(zkrc_log_level level);

/** The current level (see zkrc_log_set_level()). */
zkrc_log_level zkrc_log_get_level(void);

/** "error", "warn", "notice", "info", "debug"; "unknown" otherwise.
 *  A static string. */
const char *zkrc_log_level_name(zkrc_log_level level);

/**
 * How many of the ZooKeeper client's lines may reach the handler in a
 * burst, and then per second (process-wide; defaults 20 and 5): in any
 * T seconds at most @p burst + @p per_second * T of them, counting the
 * lines that tell what was held back (with the defaults, 70 in 10 s).
 * Lines below the level (zkrc_log_set_level()) are dropped before they
 * count.  What is held back is counted and told in a line of the library,
 * "N lines of the ZooKeeper client were held back (rate limit)", at the
 * level of the most severe of them, just before a line that passes: as
 * soon as the limit starts holding lines back, then at most once every
 * 10 s while it goes on, and when it lets up (a passing line finds room
 * for both); a count is told only when a line passes after it.  The
 * library's own lines are not limited: each tells one event (a session's
 * state, a hold lost, a retry after its back-off), and they are the ones
 * that matter.  @p per_second 0 turns the limit off.  Negative values,
 * and a burst of 0 with a rate, are ignored.  A call grants a full burst
 * again.  Threading: any thread.
 */
void zkrc_log_set_rate_limit(int burst, int per_second);

/**
 * Honour the environment variable ZKR_LOG: unset, empty or "0" silences
 * every line; "1" or "warn" logs warnings and errors to stderr; "info" and
 * "debug" more.  Test programs and the command-line tools call this first.
 * Threading: any thread; call before opening sessions.
 */
void zkrc_log_from_env(void);

#ifdef __cplusplus
}
#endif
#endif /* ZKRECIPES_LOG_H */
