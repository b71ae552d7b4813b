/*
 * A program of a user of the packages: a session whose events are delivered
 * on a GLib main context (zkrecipes/glib.h), built by debian/tests/fresh-install
 * with nothing but `pkg-config --cflags --libs zkrecipes-glib`.
 *
 * Without ZKR_SERVERS it only sets up and tears down the executor (linking
 * and loading are what is checked); with it, it connects, sees CONNECTED
 * delivered on the main context, closes and sees CLOSED there too.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include <stdio.h>
#include <stdlib.h>

#include <glib.h>
#include <zkrecipes.h>
#include <zkrecipes/glib.h>

static GThread *main_thread;
static int connected_seen, closed_seen, wrong_thread;

static void on_event(zkrc_session *s, const zkrc_session_event *ev,
                     void *arg) {
  (void)s;
  (void)arg;
  if (g_thread_self() != main_thread)
    wrong_thread = 1; /* the GLib executor must run us on the loop's thread */
  if (ev->type == ZKRC_SESSION_EVENT_CONNECTED)
    connected_seen = 1;
  if (ev->type == ZKRC_SESSION_EVENT_CLOSED)
    closed_seen = 1;
}

static gboolean on_timeout(gpointer flag) {
  *(int *)flag = 1;
  return G_SOURCE_REMOVE;
}

static int run_session(const char *servers, const zkrc_executor *ex) {
  zkrc_session_options opts;
  zkrc_session_options_init(&opts);
  opts.executor = ex;
  opts.on_event = on_event;
  zkrc_session *s;
  int rc = zkrc_session_connect(&s, servers, &opts);
  if (rc != ZKRC_OK) {
    fprintf(stderr, "glib-prog: connect %s: %s\n", servers, zkrc_strerror(rc));
    return 1;
  }
  /* CONNECTED waits for the context to be iterated: iterate until it came,
   * or until a 10 s timer on the same context says it will not. */
  int timed_out = 0;
  guint timer = g_timeout_add_seconds(10, on_timeout, &timed_out);
  while (!connected_seen && !timed_out)
    g_main_context_iteration(NULL, TRUE);
  if (!timed_out)
    g_source_remove(timer);
  zkrc_session_close(s);
  return 0;
}

int main(void) {
  main_thread = g_thread_self();
  zkrc_executor ex;
  zkrc_glib_executor_init(&ex, NULL);
  const char *servers = getenv("ZKR_SERVERS");
  int failed = servers ? run_session(servers, &ex) : 0;
  zkrc_glib_executor_clear(&ex); /* runs the CLOSED event still waiting */
  if (servers && !failed && (!connected_seen || !closed_seen || wrong_thread)) {
    fprintf(stderr, "glib-prog: connected %d closed %d wrong thread %d\n",
            connected_seen, closed_seen, wrong_thread);
    failed = 1;
  }
  printf("glib-prog: zkrecipes %s, %s\n", zkrc_version(),
         servers ? "session events on the GLib main context" : "no servers");
  return failed;
}
