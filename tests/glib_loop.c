/* A test's GLib loop (glib_loop.h). */
#include "config.h"

#include "glib_loop.h"
#include "testutil.h"

void loop_open(loop *lp) {
  lp->ctx = g_main_context_new();
  g_main_context_push_thread_default(lp->ctx);
  zkrc_glib_executor_init(&lp->ex, lp->ctx);
}

void loop_clear(loop *lp) {
  zkrc_glib_executor_clear(&lp->ex); /* runs what is left, on this thread */
  g_main_context_pop_thread_default(lp->ctx);
  g_main_context_unref(lp->ctx);
}

static gboolean flag_set(gpointer data) {
  *(gboolean *)data = TRUE;
  return G_SOURCE_REMOVE;
}

int loop_run_until(loop *lp, int (*done)(void *), void *arg, int timeout_ms) {
  gboolean expired = FALSE;
  GSource *t = g_timeout_source_new((guint)timeout_ms);
  g_source_set_callback(t, flag_set, &expired, NULL);
  g_source_attach(t, lp->ctx);
  while (!done(arg) && !expired)
    g_main_context_iteration(lp->ctx, TRUE);
  g_source_destroy(t);
  g_source_unref(t);
  return done(arg);
}

static int never(void *arg) {
  (void)arg;
  return 0;
}

void loop_run_for(loop *lp, int ms) { loop_run_until(lp, never, NULL, ms); }

zkrc_session *loop_session_on(zkrc_executor *ex) {
  zkrc_session_options o;
  zkrc_session_options_init(&o);
  o.session_timeout_ms = ZKT_SESSION_TIMEOUT_MS;
  o.connect_timeout_ms = 15000;
  o.executor = ex;
  zkrc_session *s = NULL;
  int rc = zkrc_session_connect(&s, zkt_hosts(), &o);
  ZKT_ASSERT_RC(ZKRC_OK, rc);
  if (rc != ZKRC_OK)
    CU_FAIL_FATAL("could not connect a session on the loop");
  return s;
}
