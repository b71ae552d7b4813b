/*
 * zkr-bench: the herd: notifications and requests per release with many waiters.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include "bench.h"

/* ---------------------------------------------------------------- herd */

/* Wait until the servers show the queue settled: every member has applied
 * the creates and deletes so far (its count of ephemeral nodes is
 * @p ephemerals), and the watches set are @p watches in total.  Since a
 * member fires the watches of a change when it applies it, and every
 * contender holds at most one watch, this means every notification of the
 * changes so far has been handled and the watch it led to is set. */
static void herd_settle(const char *impl, int64_t ephemerals, int64_t watches,
                        snap *s) {
  int64_t deadline = now_ns() + (int64_t)STEP_MS * 1000000;
  for (;;) {
    snap_take(s);
    gboolean applied = TRUE;
    for (int i = 0; i < members; i++)
      applied = applied && s->ephemerals[i] == ephemerals;
    if (applied && s->watches == watches)
      return;
    if (now_ns() > deadline)
      fatal("%s herd: the queue did not settle (ephemerals %" PRId64
            " on member 0, want %" PRId64 "; watches %" PRId64 ", want %" PRId64
            ")",
            impl, s->ephemerals[0], ephemerals, s->watches, watches);
    sleep_ms(10);
  }
}

static void herd_run(const char *impl) {
  int n = opt.herd_waiters;
  char *path = znode("herd/%s", impl);
  char count[16];
  snprintf(count, sizeof count, "%d", n);
  proc *p;
  if (strcmp(impl, "zkrecipes") == 0 || strcmp(impl, "naive") == 0) {
    const char *args[] = {
        "herd", impl[0] == 'z' ? "zkr" : "naive", hosts, path, count, NULL};
    p = worker_start(impl, args);
  } else {
    const char *args[] = {"herd", hosts, path, count, NULL};
    p = peer_start(impl, args, MEASURE_SESSION_MS);
  }
  /* The naive lock's holder keeps the watch its last read set (it is armed
   * whenever the holder was a waiter), and its own delete fires it. */
  int holder_watch = strcmp(impl, "naive") == 0;
  g_free(proc_expect(p, "ready", START_MS));
  proc_send(p, "hold");
  g_free(proc_expect(p, "held", STEP_MS));

  /* What these sessions send while idle (zkrecipes' lease renewals, the
   * other clients' pings), shown beside the figure and not subtracted: the
   * servers' counters do not tell it from the lock's requests, and it comes
   * in rounds (sessions opened together renew together, every 0.3 session
   * timeouts), so a rate times the window is off by up to a round. */
  snap idle0, idle1;
  snap_take(&idle0);
  sleep_ms(opt.idle_ms);
  snap_take(&idle1);
  double idle_packets = (double)client_packets(&idle0, &idle1);
  double idle_s = (double)(idle1.at - idle0.at) / 1e9;

  /* b: the last settled queue (the loop below runs at least once; zeroed
   * since cppcheck cannot see that). */
  snap a, q, b = {0};
  snap_take(&a);
  /* At a: the first holder's node, and (naive only) its watch. */
  int64_t other_watches = a.watches - holder_watch;
  proc_send(p, "queue");
  herd_settle(impl, a.ephemerals[0] + n, other_watches + n, &q);
  for (int k = 1; k <= n + 1; k++) {
    proc_send(p, "release");
    int want_acquired = k <= n, want_released = 1;
    while (want_acquired || want_released) {
      char *line = proc_line(p, STEP_MS);
      if (g_str_has_prefix(line, "acquired") && want_acquired)
        want_acquired = 0;
      else if (strcmp(line, "released") == 0 && want_released)
        want_released = 0;
      else
        fatal("%s herd: unexpected \"%s\"", impl, line);
      g_free(line);
    }
    int64_t waiting = n - k < 0 ? 0 : n - k;
    int64_t armed = waiting + (k <= n ? holder_watch : 0);
    herd_settle(impl, a.ephemerals[0] + n - k, other_watches + armed, &b);
  }
  /* b is taken: now the sessions may close. */
  g_free(proc_expect(p, "done", STEP_MS));
  proc_send(p, "quit");
  proc_finish(p, STEP_MS);

  double window_s = (double)(b.at - a.at) / 1e9;
  double packets = (double)client_packets(&a, &b);
  double per_acq = packets / n; /* housekeeping included: see above */
  double release_notes = (double)(b.notifications - q.notifications) / n;
  record("herd", impl, "notifications per release", "count", release_notes);
  record("herd", impl, "notifications while queueing (total)", "count",
         (double)(q.notifications - a.notifications));
  record("herd", impl, "requests per acquisition", "count", per_acq);
  record("herd", impl, "  idle packets/s of its sessions (not subtracted)",
         "packets/s", idle_s > 0 ? idle_packets / idle_s : 0);
  record("herd", impl, "window", "s", window_s);
  progress("  herd %-9s %.2f notifications/release, %.2f requests/acquisition"
           " (%.0f client packets in %.1f s; idle before: %.0f packets in "
           "%.1f s, not subtracted)",
           impl, release_notes, per_acq, packets, window_s, idle_packets,
           idle_s);
  g_free(path);
}

void run_herd(void) {
  progress("herd: %d waiters queued, released one by one", opt.herd_waiters);
  for (size_t i = 1; i < N_IMPLS; i++)
    if (impl_enabled(impl_names[i]))
      herd_run(impl_names[i]);
  set_reference("herd", opt.with_curator ? "curator" : NULL);
}
