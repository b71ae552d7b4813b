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

/* The log callback every handle gets: the client's lines, mapped to levels
 * and rate-limited. */
void zkrc__log_trampoline(const char *message);

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
