/*
 * zkr-bench: idle: what staying alive costs.  A zkrecipes session renews
 * its lease (a sync) every 0.3 session timeouts; the plain C client pings
 * after a third of the timeout without sending anything.  Measured by the
 * servers' packet counters over an idle window, for idle sessions of both,
 * and for zkrecipes sessions that hold locks.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include "bench.h"

#define IDLE_SESSIONS 20
#define IDLE_LOCKS 50 /* per session, in the run with locks */
#define IDLE_SESSION_MS 4000
#define IDLE_SECONDS 12

typedef struct idle_result {
  double packets_per_s;  /* per session, the servers' count */
  double requests_per_s; /* per session, the library's own count */
  double renewals_per_s; /* per session, of those requests */
} idle_result;

/* One idle window of IDLE_SESSIONS sessions of @p kind ("zkr", "raw"), each
 * holding @p locks locks. */
static idle_result idle_window(const char *kind, int locks) {
  char *prefix = znode("idle/%s-%d", kind, locks);
  char sessions[16], nlocks[16], ms[16], secs[16];
  snprintf(sessions, sizeof sessions, "%d", IDLE_SESSIONS);
  snprintf(nlocks, sizeof nlocks, "%d", locks);
  snprintf(ms, sizeof ms, "%d", IDLE_SESSION_MS);
  snprintf(secs, sizeof secs, "%d", IDLE_SECONDS);
  const char *args[] = {"idle", hosts, prefix, kind, sessions,
                        nlocks, ms,    secs,   NULL};
  proc *p = worker_start("idle", args);
  g_free(proc_expect(p, "ready", START_MS));
  snap a, b;
  snap_take(&a);
  proc_send(p, "go");
  char *done = proc_expect(p, "done", (IDLE_SECONDS + 60) * 1000);
  snap_take(&b);
  proc_finish(p, STEP_MS);
  double window = (double)(b.at - a.at) / 1e9;
  double per = window * IDLE_SESSIONS;
  idle_result r = {
      .packets_per_s = (double)client_packets(&a, &b) / per,
      .requests_per_s = need_field("idle", done, "requests") / per,
      .renewals_per_s = need_field("idle", done, "renewals") / per,
  };
  progress("  idle %-4s %d locks/session: %.3f packets/s per session "
           "(library requests %.3f/s, renewals %.3f/s) over %.1f s",
           kind, locks, r.packets_per_s, r.requests_per_s, r.renewals_per_s,
           window);
  g_free(done);
  g_free(prefix);
  return r;
}

void run_idle(void) {
  progress("idle: %d sessions, session timeout %d ms, %d s idle", IDLE_SESSIONS,
           IDLE_SESSION_MS, IDLE_SECONDS);
  idle_result raw = idle_window("raw", 0);
  idle_result zkr = idle_window("zkr", 0);
  idle_result held = idle_window("zkr", IDLE_LOCKS);
  record("idle", "C client", "packets/s per idle session (its pings)", "count",
         raw.packets_per_s);
  record("idle", "zkrecipes", "packets/s per idle session", "count",
         zkr.packets_per_s);
  record("idle", "zkrecipes", "  of which lease renewals/s", "count",
         zkr.renewals_per_s);
  char figure[96];
  snprintf(figure, sizeof figure, "packets/s per idle session holding %d locks",
           IDLE_LOCKS);
  record("idle", "zkrecipes", figure, "count", held.packets_per_s);
  record("idle", "zkrecipes", "packets/s per held lock (difference)", "count",
         (held.packets_per_s - zkr.packets_per_s) / IDLE_LOCKS);
}
