/*
 * What every chaos worker process shares (chaosworker, chaos_tlworker,
 * chaos_dbworker): its log, its status slot and the run's others, the
 * SIGTERM flag, and its start.  One process each: plain globals.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef ZKT_CHAOS_WORKER_H
#define ZKT_CHAOS_WORKER_H

#include <signal.h>
#include <stdint.h>

#include <zkrecipes.h>

#include "chaos.h"

extern int log_fd;                     /* the worker's log (O_APPEND) */
extern chaos_slot *slot;               /* its own status slot */
extern chaos_slot *slots;              /* every worker's: the controls look */
extern volatile sig_atomic_t stopping; /* SIGTERM came */

/* One record stamped @p t (CLOCK_MONOTONIC µs): a single write() to the
 * O_APPEND log, so records of several threads never mix and a SIGKILL
 * leaves whole lines. */
void record_at(int64_t t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
#define record(...) record_at(chaos_now_us(), __VA_ARGS__)

void set_phase(int phase);
void progress(void);
int env_int(const char *name, int fallback);

/* The session listener's common part: the slot's session id (and
 * password, for the harness's expiry) kept current, and a SESSION
 * record. */
void record_session_event(zkrc_session *s, zkrc_session_event_type ev);

/* The run's other workers' slots, in instance order: start with *@p i
 * = 0; NULL at the end.  Instances are numbered in the order they were
 * started: the scan ends after a run of 32 slots no worker has taken. */
chaos_slot *next_other_worker(int *i);

/* A control's end: made (1), missed (0) or stopped by SIGTERM (-1, not
 * counted), counted in our slot and recorded as "CONTROL made|missed|
 * stopped @p what". */
void control_done(int made, int64_t what);

/* The start every worker makes, after parsing its arguments: the log
 * @p logfile opened, the status file @p statusfile mapped (every slot),
 * our slot @p instance marked @p kind and this pid, SIGTERM caught
 * (stopping), SIGPIPE ignored, "START pid" recorded.  0, or 2 (said on
 * stderr as @p name) when a file could not be opened. */
int chaos_worker_start(const char *name, const char *logfile,
                       const char *statusfile, int instance, int32_t kind);

#endif
