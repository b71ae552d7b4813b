/*
 * zkrecipes/executor.h - choosing where callbacks run.
 *
 * Every callback of a session and of the recipes built on it (listeners,
 * lock events, election events, completions of non-blocking calls) runs on
 * the session's executor, in the order the events happened, never on a
 * ZooKeeper thread and never with a zkrecipes mutex held.  Three choices:
 *
 *  - the default (zkrc_session_options.executor = NULL): a callback thread
 *    owned by the session;
 *  - a GLib main context of your choice: zkrecipes/glib.h;
 *  - a file descriptor your own event loop polls (epoll, libuv, libevent,
 *    a plain poll() loop), for daemons that do not use GLib: below.  The
 *    callbacks then run on whichever thread calls
 *    zkrc_fd_executor_dispatch(): that is also how to have them run "on a
 *    thread of your choice" without an event loop (loop on poll + dispatch
 *    in that thread).
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef ZKRECIPES_EXECUTOR_H
#define ZKRECIPES_EXECUTOR_H

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Runs a callback later.  An executor must run each posted call exactly once,
 * after post() has returned, on a thread that is neither one of ZooKeeper's
 * nor in the middle of a zkrecipes call, and in the order calls were posted.
 */
typedef void (*zkrc_callback_fn)(void *arg);
typedef struct zkrc_executor {
  void (*post)(void *ctx, zkrc_callback_fn fn, void *arg);
  void *ctx;
} zkrc_executor;

typedef struct zkrc_fd_executor zkrc_fd_executor;

/**
 * A queue of callbacks announced by a file descriptor.
 * @return ZKRC_OK; ZKRC_EINVAL (NULL); ZKRC_ENOMEM (also when the
 *         descriptor cannot be created).
 * Ownership: free with zkrc_fd_executor_free() after every session using it
 * is closed.
 */
int zkrc_fd_executor_new(zkrc_fd_executor **out);

/**
 * The executor to put in zkrc_session_options.executor.  The struct is
 * filled in by value; @p fx must outlive the sessions using it.
 */
void zkrc_fd_executor_get(zkrc_fd_executor *fx, zkrc_executor *out);

/**
 * A descriptor that is readable while callbacks are waiting (level
 * triggered: it stays readable until they have all been dispatched).
 * Owned by the executor; do not close it.
 */
int zkrc_fd_executor_fd(zkrc_fd_executor *fx);

/**
 * Run the callbacks waiting now, in order, on the calling thread.
 * Callbacks posted while it runs wait for the next call.
 * @return how many ran.
 * Threading: one thread at a time (the one that owns your event loop).
 */
int zkrc_fd_executor_dispatch(zkrc_fd_executor *fx);

/**
 * Run the callbacks still waiting (on the calling thread), then free the
 * executor.  Call after the sessions using it are closed.  NULL ignored.
 */
void zkrc_fd_executor_free(zkrc_fd_executor *fx);

#ifdef __cplusplus
}
#endif
#endif /* ZKRECIPES_EXECUTOR_H */
