/*
 * A GMainContext iterated by a test's own thread, with the GLib executor
 * (zkrecipes/glib.h) on it, for the tests of the non-blocking forms
 * (test_async, test_async_family).  Every wait is bounded.
 */
#ifndef ZKT_GLIB_LOOP_H
#define ZKT_GLIB_LOOP_H

#include <glib.h>

#include "zkrecipes.h"
#include "zkrecipes/glib.h"

/* One executor may serve several sessions. */
typedef struct loop {
  GMainContext *ctx;
  zkrc_executor ex;
} loop;

/* A new context, the thread's default from now on, the executor on it. */
void loop_open(loop *lp);
/* After the sessions on it are closed: runs what is left, on this
 * thread, and drops the context. */
void loop_clear(loop *lp);
/* Iterate until @p done(@p arg) holds, at most @p timeout_ms; returns
 * done's last answer. */
int loop_run_until(loop *lp, int (*done)(void *), void *arg, int timeout_ms);
/* Iterate for @p ms: to see that nothing more arrives. */
void loop_run_for(loop *lp, int ms);
/* A session (the harness's ensemble, its session timeout) whose
 * callbacks go to @p ex; the test fails at once when it cannot connect. */
zkrc_session *loop_session_on(zkrc_executor *ex);

#endif /* ZKT_GLIB_LOOP_H */
