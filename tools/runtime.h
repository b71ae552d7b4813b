/*
 * tools/runtime.h - what tool.c keeps of the process's start (signal
 * dispositions, inherited descriptors) for child.c, which starts COMMAND.
 * Internal to the tools.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef ZKR_RUNTIME_H
#define ZKR_RUNTIME_H

#include "tool.h"

/* In a forked child: the signal dispositions and mask this program started
 * with.  Async-signal-safe. */
void tool_runtime_restore_in_child(void);

/* The descriptors COMMAND keeps: the inherited ones and @p extra, sorted
 * (g_free it). */
int *tool_runtime_fds_to_keep(int extra, int *count);

/* In a forked child: close [lo, hi] (hi -1: to the end).  Async-signal-safe. */
void tool_runtime_close_from_to(int lo, int hi);

/* The COMMAND that tool_wait() kills before exiting on a failed poll(). */
void tool_runtime_set_live_child(tool_child *c);

#endif /* ZKR_RUNTIME_H */
