/*
 * What the C peers share: interopworker (the interoperability tests) and
 * bench/zkr-bench-worker (the benchmark).  A peer is driven by another
 * program through its standard input and output, lives no longer than a
 * watchdog allows, and reports timings.  Not thread-safe unless said.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef ZKR_PEERUTIL_H
#define ZKR_PEERUTIL_H

#include <stddef.h>
#include <stdint.h>

/* The name the messages below start with (a static string); call first. */
void peer_init(const char *program);

/* CLOCK_MONOTONIC in nanoseconds (thread-safe). */
int64_t peer_now_ns(void);

/* The positive whole number in environment variable @p name, or @p dflt
 * when it is unset or empty; a bad value is reported and ignored. */
long peer_env_long(const char *name, long dflt);

/* In @p seconds (at least 1), say "PROGRAM: watchdog fired" on stderr and
 * _exit(@p exit_code), whatever the peer is doing.  Returns 0, or -1. */
int peer_arm_watchdog(long seconds, int exit_code);

/* Read one line of standard input into @p line (newline dropped, cut to
 * @p size - 1 bytes) within @p timeout_ms.  Returns 1 for a line; 0 at the
 * end of input (@p line empty); -1 with errno ETIMEDOUT when no line came
 * in time, or another errno when reading failed. */
int peer_read_line(char *line, size_t size, int timeout_ms);

/* The @p p quantile (nearest rank) of the @p n samples @p ns, sorted in
 * place, in microseconds; 0 when there are none. */
long peer_quantile_us(int64_t *ns, size_t n, double p);

#endif /* ZKR_PEERUTIL_H */
