/*
 * zkrecipes/glib.h - running zkrecipes callbacks on a GLib main context.
 *
 * The core API is plain C; this adapter is the only header that needs
 * GLib.  Put the executor in zkrc_session_options.executor and every
 * callback of that session and its recipes (listeners, lock and election
 * events, completions of zkrc_lock_acquire_async()) is dispatched by the
 * GMainContext you chose, on the thread iterating it, in order:
 *
 *     zkrc_executor ex;
 *     zkrc_glib_executor_init(&ex, NULL);   // NULL: the default context
 *     zkrc_session_options o;
 *     zkrc_session_options_init(&o);
 *     o.executor = &ex;
 *     zkrc_session_connect(&s, hosts, &o);
 *     ...
 *     g_main_loop_run(loop);
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef ZKRECIPES_GLIB_H
#define ZKRECIPES_GLIB_H

#include <glib.h>
#include <zkrecipes/session.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Fill @p out with an executor that dispatches on @p context (NULL: the
 * global default context): it attaches a source to the context, which
 * stays until zkrc_glib_executor_clear().
 *
 * Callbacks posted before the context is iterated wait for it.
 * zkrc_session_close() does not wait for this executor: callbacks posted
 * until then (the CLOSED event among them) run when the context is next
 * iterated, or at the latest in zkrc_glib_executor_clear().
 * Threading: any thread.
 */
void zkrc_glib_executor_init(zkrc_executor *out, GMainContext *context);

/**
 * Run the callbacks still waiting (on the calling thread) and release what
 * zkrc_glib_executor_init() took.  Call after the sessions using it are
 * closed, from the thread that iterates the context.
 */
void zkrc_glib_executor_clear(zkrc_executor *ex);

#ifdef __cplusplus
}
#endif
#endif /* ZKRECIPES_GLIB_H */
