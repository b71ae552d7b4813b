/*
 * Run while leading: a daemon's work that must run on one machine at a
 * time, with no thread or lease flag of its own (zkrecipes/runner.h).
 *
 *   ZKR_SERVERS=127.0.0.1:2181 ./run-while-leading [PATH] [election|lock]
 *
 * Start it on several machines: one works (a step a second, each step
 * stamped with the turn's fencing token) while the others wait their
 * turn.  The work stops when the leadership is lost (no later than the
 * session's lease deadline, before anyone else can lead) and when the
 * program is asked to stop (SIGINT, SIGTERM); with requeue, a runner that
 * lost its turn queues again by itself.  Stop the leader and the next one
 * takes over.
 */
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zkrecipes.h>

/* The work: a step a second until the cancellation fires. */
static int lead(zkrc_runner *r, zkrc_cancel *cancel, int64_t token, void *arg) {
  (void)r;
  (void)arg;
  for (int step = 1;; step++) {
    printf("leading (token %" PRId64 "): step %d\n", token, step);
    fflush(stdout);
    /* Sleeps a second, or returns at once when the turn ends. */
    if (zkrc_cancel_wait(cancel, 1000) == ZKRC_OK)
      break;
  }
  printf("stopping: %s\n", zkrc_strerror(zkrc_cancel_reason(cancel)));
  fflush(stdout);
  return 0;
}

static void on_event(zkrc_runner *r, const zkrc_runner_event *ev, void *arg) {
  (void)r;
  (void)arg;
  fprintf(stderr, "runner: %s (%s), token %" PRId64 "\n",
          zkrc_runner_event_name(ev->type), zkrc_strerror(ev->reason),
          ev->token);
}

int main(int argc, char **argv) {
  const char *servers = getenv("ZKR_SERVERS");
  const char *path = argc > 1 ? argv[1] : "/examples/run-while-leading";
  if (servers == NULL) {
    fprintf(stderr, "run-while-leading: set ZKR_SERVERS (host:port,...)\n");
    return 2;
  }
  /* The signals are waited for by main alone: block them before any
   * thread (the session's, the runner's) starts, so they inherit it. */
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, NULL);

  zkrc_session *s = NULL;
  int rc = zkrc_session_new(&s, servers, NULL);
  if (rc != ZKRC_OK) {
    fprintf(stderr, "run-while-leading: %s\n", zkrc_strerror(rc));
    return 1;
  }
  zkrc_runner_options o;
  zkrc_runner_options_init(&o);
  o.kind = argc > 2 && strcmp(argv[2], "lock") == 0 ? ZKRC_RUNNER_LOCK
                                                    : ZKRC_RUNNER_ELECTION;
  o.requeue = 1; /* after a lost turn, queue again */
  o.on_event = on_event;
  zkrc_runner *r = NULL;
  rc = zkrc_runner_new(&r, s, path, lead, NULL, &o);
  if (rc == ZKRC_OK) {
    int sig = 0;
    sigwait(&stop, &sig);
    /* Cancels the work (ZKRC_ECLOSED), waits for lead() to return, and
     * gives the leadership back. */
    zkrc_runner_free(r);
  } else {
    fprintf(stderr, "run-while-leading: %s\n", zkrc_strerror(rc));
  }
  zkrc_session_close(s);
  return rc == ZKRC_OK ? 0 : 1;
}
