/*
 * bench/experiments/orphaned-connection.c - why an expiry on demand once
 * went unnoticed for about 20 s (issue 33).  Not built by make; an
 * experiment kept with its result.
 *
 * A session on member 0 holds a lock (with on_event, so it watches its own
 * node).  A second handle takes the session over with its id and password
 * and closes it, alternately through member 0 (the owner's own) and
 * through member 1.  Does the owner hear LOST or EXPIRED within 5 s?
 *
 * Result (3 members, tick 200 ms, 4 s sessions; 2026-11-29, 6 rounds
 * each): through member 1, always at once (0-4 ms).  Through member 0,
 * 4 of 6 within 38-64 ms, one after 2.7 s, and one not within 5 s, with
 * the lease still renewed (3.7 s, then 2.4 s left) and no LOST from the
 * lock's own-node watch.  The take-over orphans the owner's connection on
 * that follower: the close came from a connection of its own, so its
 * FinalRequestProcessor closes no other (it does so only for a close that
 * came from elsewhere), its LearnerSessionTracker touches any session
 * without checking it (localSessionsEnabled is off), and the leader
 * answers a sync without checking the session: the lease renewals go on.
 * Meanwhile the servers deleted the session's ephemeral nodes.  Only an
 * operator (or a tool) that has the session's password can do this; the
 * harness now takes sessions over through a member without a connection
 * of theirs (testing/ensemble.c, take_over_hosts).
 *
 *   gcc -o orphan bench/experiments/orphaned-connection.c -Iinclude -I. \
 *     -DTHREADED $(pkg-config --cflags --libs glib-2.0) -Lsrc/.libs \
 *     -Ltesting/.libs -lzkrecipes -lzkrecipes-testing -lzookeeper_mt \
 *     -Wl,-rpath,$PWD/src/.libs:$PWD/testing/.libs && ./orphan 6
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "zkrecipes.h"
#include "zkrecipes/testing.h"

static gint session_lost, lock_lost;

static void on_session(zkrc_session *s, const zkrc_session_event *ev,
                       void *arg) {
  (void)s, (void)arg;
  if (ev->type == ZKRC_SESSION_EVENT_LOST ||
      ev->type == ZKRC_SESSION_EVENT_EXPIRED)
    g_atomic_int_set(&session_lost, 1);
}

static void on_lock(zkrc_lock *lk, const zkrc_lock_event *info, void *arg) {
  (void)lk, (void)arg;
  if (info->type == ZKRC_LOCK_LOST)
    g_atomic_int_set(&lock_lost, 1);
}

static void watcher(zhandle_t *zh, int type, int state, const char *path,
                    void *ctx) {
  (void)zh, (void)type, (void)path;
  if (type == ZOO_SESSION_EVENT)
    g_atomic_int_set((gint *)ctx, state);
}

static int get_id(zhandle_t *zh, void *arg) {
  *(clientid_t *)arg = *zoo_client_id(zh);
  return 0;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 5;
  zkrc_ensemble_options eo;
  zkrc_ensemble_options_init(&eo);
  eo.members = 3;
  eo.no_fsync = 1;
  zkrc_ensemble *e = NULL;
  if (zkrc_ensemble_start(&e, &eo) != 0)
    return 1;
  for (int r = 0; r < 2 * rounds; r++) {
    int same = r % 2 == 0;
    const char *mine = zkrc_ensemble_member_address(e, 0);
    const char *theirs = zkrc_ensemble_member_address(e, same ? 0 : 1);
    g_atomic_int_set(&session_lost, 0);
    g_atomic_int_set(&lock_lost, 0);
    zkrc_session_options o;
    zkrc_session_options_init(&o);
    o.session_timeout_ms = 4000;
    o.server_tick_ms = 200;
    o.on_event = on_session;
    zkrc_session *s = NULL;
    if (zkrc_session_connect(&s, mine, &o) != ZKRC_OK)
      return 2;
    zkrc_lock_options lo;
    zkrc_lock_options_init(&lo);
    lo.on_event = on_lock;
    zkrc_lock *lk = NULL;
    char path[64];
    snprintf(path, sizeof path, "/orphan/r%d", r);
    zkrc_lock_new(&lk, s, path, &lo);
    if (zkrc_lock_acquire(lk, 10000) != ZKRC_OK)
      return 3;
    clientid_t id;
    zkrc_session_with_handle(s, get_id, &id);
    gint state = 0;
    zhandle_t *zh = zookeeper_init(theirs, watcher, 4000, &id, &state, 0);
    int64_t until = g_get_monotonic_time() + 5000000;
    while (g_atomic_int_get(&state) != ZOO_CONNECTED_STATE &&
           g_get_monotonic_time() < until)
      g_usleep(1000);
    int took = g_atomic_int_get(&state) == ZOO_CONNECTED_STATE;
    zookeeper_close(zh); /* closes the session */
    int64_t closed = g_get_monotonic_time();
    until = closed + 5000000;
    while (!g_atomic_int_get(&session_lost) && !g_atomic_int_get(&lock_lost) &&
           g_get_monotonic_time() < until)
      g_usleep(1000);
    int64_t heard = g_get_monotonic_time() - closed;
    g_usleep(200000);
    printf("%s member: took over %d; after %5.0f ms: session lost/expired %d, "
           "lock LOST %d, lease left %d ms\n",
           same ? "same " : "other", took, heard / 1000.0,
           g_atomic_int_get(&session_lost), g_atomic_int_get(&lock_lost),
           zkrc_session_lease_remaining(s));
    fflush(stdout);
    zkrc_lock_free(lk);
    zkrc_session_close(s);
  }
  zkrc_ensemble_stop(e);
  return 0;
}
