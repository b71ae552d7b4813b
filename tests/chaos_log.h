/*
 * chaos_log.h - the holds in the chaos workers' logs (chaos.h gives the
 * format), for the shared checker (holds.h).
 */
#ifndef ZKT_CHAOS_LOG_H
#define ZKT_CHAOS_LOG_H

#include <stdint.h>

#include <glib.h>

#include "holds.h"

/* Append to @p holds (of zkt_hold) the holds in one worker's log @p text:
 * the ACQ records that said ZKRC_OK (shared when they name the read side),
 * with their LOCKEVENT lost and REL.  A
 * hold with neither ends at @p died when non-zero (the worker was killed),
 * else at @p last_resort (the worker's end). */
void chaos_log_holds(const char *text, int instance, int64_t died,
                     int64_t last_resort, GArray *holds);

#endif /* ZKT_CHAOS_LOG_H */
