/*
 * zkrecipes/log.h - where the ZooKeeper client's log lines go.
 *
 * The ZooKeeper C client writes its log to stderr unless told otherwise.  A
 * daemon wants those lines in its own log, and a test wants silence, so every
 * handle zkrecipes opens sends its lines to one process-wide hook.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef ZKRECIPES_LOG_H
#define ZKRECIPES_LOG_H

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Receives one formatted log line of the ZooKeeper client (no trailing
 * newline).  Called on whichever thread the ZooKeeper client logs from,
 * including its I/O and completion threads: keep it short and non-blocking,
 * and do not call zkrecipes or ZooKeeper functions from it.
 */
typedef void (*zkrc_log_fn)(const char *line, void *arg);

/**
 * Send the ZooKeeper client's log lines of every handle zkrecipes opens (and
 * of handles adopted afterwards) to @p fn.  NULL silences them.  The default,
 * before any call, writes them to stderr.
 *
 * Threading: any thread; takes effect for lines logged after it returns.
 * Ownership: @p arg stays the caller's; it must outlive its use as the hook.
 */
void zkrc_log_set_handler(zkrc_log_fn fn, void *arg);

/** Verbosity of the ZooKeeper client's log (process-wide). */
typedef enum zkrc_log_level {
  ZKRC_LOG_ERROR = 1,
  ZKRC_LOG_WARN = 2,
  ZKRC_LOG_INFO = 3,
  ZKRC_LOG_DEBUG = 4
} zkrc_log_level;

/**
 * Set the ZooKeeper client's log level (it is one global of that client, so
 * this affects handles opened without zkrecipes too).  zkrecipes leaves the
 * client's own default (INFO) alone unless this is called.
 * Threading: any thread.
 */
void zkrc_log_set_level(zkrc_log_level level);

/**
 * Honour the environment variable ZKR_LOG: unset or "0" silences the
 * ZooKeeper client, "1" or "warn" logs warnings and errors to stderr, "debug"
 * everything.  Test programs and the command-line tools call this first.
 * Threading: any thread; call before opening sessions.
 */
void zkrc_log_from_env(void);

#ifdef __cplusplus
}
#endif
#endif /* ZKRECIPES_LOG_H */
