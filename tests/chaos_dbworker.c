/*
 * chaos_dbworker: one member of test_chaos's double barrier run, exec'd by
 * it.
 *
 *   chaos_dbworker INSTANCE HOSTS PATH STOREPORT KEY LOGFILE STATUSFILE
 *                  members=N [cheat-enter=MS | cheat-leave=MS]
 *     (STOREPORT and KEY are test_chaos's common arguments, unused here)
 *     members=N       the barrier's N (zkrc_double_barrier_new())
 *     cheat-enter=MS  the control: never wait for the barrier, but once
 *                     N - 1 members (itself included) are in its round -
 *                     as far as the status file shows, waiting for that at
 *                     most MS ms - report ENTERED; logged as CONTROL made /
 *                     missed (chaos.h)
 *     cheat-leave=MS  the other control: once entered, start leaving
 *                     without waiting and report LEFT as soon as another
 *                     member of its round is seen entered and not leaving
 *                     yet (at most MS ms); made when that member is still
 *                     seen so after the report
 *
 * Rounds until SIGTERM, each on a barrier of its own, PATH/r<round>: a
 * barrier is used once, so that a "ready" node always belongs to the round
 * it was made for.  A member joins the highest round any member of the run
 * has published in its slot (barrier_round) or its own next one, creates
 * its node (zkrc_double_barrier_new(), the Curator dialect on even
 * instances, kazoo's on odd ones: they share a path), waits to be told
 * ENTERED (at most CHAOS_ACQUIRE_MS, and no longer than until a member
 * moved on to a higher round: it joins that one), works CHAOS_WORK_MS to
 * 10 times that, leaves (at most CHAOS_ACQUIRE_MS) and frees its barrier.
 *
 * Records (times in CLOCK_MONOTONIC µs):
 *   ASK <round>                    (before its node is created)
 *   NEW <round> <rc-name> <node>
 *   ENTERED <round> <took-us>      (wait_entered() said ZKRC_OK)
 *   WAIT <round> <rc-name> <took-us> <zk>   (it said something else)
 *   BEV <round> <event> <reason-name> <zk>  (each event, as told)
 *   LEAVE <round>                  (leave called: its node may go now)
 *   LEFT <round> <took-us>         (leave said ZKRC_OK)
 *   LEAVERC <round> <rc-name> <took-us> <zk>  (it said something else)
 *   FREE <round>                   (freed: its node is deleted)
 *   CONTROL <made|missed|stopped> <round>
 * Exit status: 0 after SIGTERM; 4 when the library returned a code no
 * fault can explain; 2 for bad arguments.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <zkrecipes.h>

#include "chaos.h"
#include "chaos_worker.h"

static void on_session(zkrc_session *s, const zkrc_session_event *ev,
                       void *arg) {
  (void)arg;
  record_session_event(s, ev->type);
}

static void on_barrier(zkrc_double_barrier *b,
                       const zkrc_double_barrier_event *ev, void *arg) {
  (void)b;
  record("BEV %d %s %s %d", (int)(intptr_t)arg,
         zkrc_double_barrier_event_name(ev->type), zkrc_err_name(ev->reason),
         ev->zk_error);
}

/* The double barrier workers' slots, scanned to the end of the run's
 * instances: with @p count, how many have reached @p round (their
 * published round is at least it: rounds only rise, and a member
 * publishes its round before its ASK record); the highest round
 * published, otherwise. */
static int scan_rounds(int round, int count) {
  int n = 0, highest = 0;
  int i = 0;
  for (chaos_slot *o = slot; o != NULL; o = next_other_worker(&i)) {
    if (o->kind != CHAOS_KIND_BARRIER)
      continue;
    int r = __atomic_load_n(&o->barrier_round, __ATOMIC_ACQUIRE);
    n += r >= round;
    highest = r > highest ? r : highest;
  }
  return count ? n : highest;
}

/* The control: report ENTERED once @p members - 1 members reached
 * @p round, at most @p ms.  With no more than N - 1 members in the whole
 * run (test_chaos checks), no N were ever in this round: a violation by
 * construction. */
static void cheat_enter(int round, int members, int ms) {
  int64_t deadline = chaos_now_us() + (int64_t)ms * 1000;
  __atomic_store_n(&slot->control_waiting, 1, __ATOMIC_RELEASE);
  int made = 0;
  while (!stopping && chaos_now_us() < deadline &&
         !(made = scan_rounds(round, 1) >= members - 1)) {
    usleep(2000);
    progress();
  }
  if (made)
    record("ENTERED %d 0", round);
  control_done(made ? 1 : stopping ? -1 : 0, round);
}

/* Is a member other than us in @p round, entered and not leaving yet (its
 * holding flag: set after its ENTERED record, cleared before its LEAVE
 * record)? */
static int another_in(int round) {
  int i = 0;
  for (chaos_slot *o; (o = next_other_worker(&i)) != NULL;) {
    if (o->kind == CHAOS_KIND_BARRIER &&
        __atomic_load_n(&o->barrier_round, __ATOMIC_ACQUIRE) == round &&
        __atomic_load_n(&o->holding, __ATOMIC_ACQUIRE))
      return 1;
  }
  return 0;
}

/* The other control: report LEFT while another member is seen in, at most
 * @p ms after entering.  Seen in again after the record, that member's
 * ENTERED came before the record and its LEAVE comes after: a violation
 * of rule L by construction. */
static void cheat_leave(int round, int ms) {
  int64_t deadline = chaos_now_us() + (int64_t)ms * 1000;
  __atomic_store_n(&slot->control_waiting, 1, __ATOMIC_RELEASE);
  int seen = 0;
  while (!stopping && chaos_now_us() < deadline && !(seen = another_in(round)))
    usleep(1000);
  int made = 0;
  if (seen) {
    record("LEFT %d 0", round);
    made = another_in(round);
  }
  control_done(made ? 1 : stopping ? -1 : 0, round);
}

/* Codes no fault can explain. */
static int misuse(int rc) {
  return rc == ZKRC_EINVAL || rc == ZKRC_ESTATE || rc == ZKRC_ENOMEM ||
         rc == ZKRC_ECLOSED;
}

/* Wait to be told ENTERED, in slices (SIGTERM, a higher round). */
static int wait_entered(zkrc_double_barrier *b, int round, int acquire_ms) {
  int64_t start = chaos_now_us(), deadline = start + acquire_ms * 1000LL;
  int rc;
  for (;;) {
    rc = zkrc_double_barrier_wait_entered(b, 100);
    progress();
    if (rc != ZKRC_ETIMEDOUT || stopping || chaos_now_us() >= deadline ||
        scan_rounds(0, 0) > round)
      break;
  }
  if (rc == ZKRC_OK)
    record("ENTERED %d %" PRId64, round, chaos_now_us() - start);
  else
    record("WAIT %d %s %" PRId64 " %d", round, zkrc_err_name(rc),
           chaos_now_us() - start,
           rc == ZKRC_ETIMEDOUT ? 0 : zkrc_last_zk_error());
  return rc;
}

/* One round on PATH/r<round>.  Returns a code no fault explains, or
 * ZKRC_OK. */
static int one_round(zkrc_session *s, const char *path, int instance, int round,
                     int members, int cheat_ms, int cheat_leave_ms,
                     unsigned *seed) {
  int acquire_ms = env_int("CHAOS_ACQUIRE_MS", 8000);
  int work_ms = env_int("CHAOS_WORK_MS", 30);
  char dir[512];
  snprintf(dir, sizeof dir, "%s/r%06d", path, round);
  zkrc_double_barrier_options o;
  zkrc_double_barrier_options_init(&o);
  o.dialect = instance % 2 ? ZKRC_BARRIER_KAZOO : ZKRC_BARRIER_CURATOR;
  o.on_event = on_barrier;
  o.event_arg = (void *)(intptr_t)round;
  __atomic_store_n(&slot->barrier_round, round, __ATOMIC_RELEASE);
  set_phase(CHAOS_ACQUIRING);
  record("ASK %d", round);
  zkrc_double_barrier *b = NULL;
  int rc = zkrc_double_barrier_new(&b, s, dir, members, &o);
  record("NEW %d %s %s", round, zkrc_err_name(rc),
         rc == ZKRC_OK ? zkrc_double_barrier_node(b) : "-");
  if (rc != ZKRC_OK)
    return misuse(rc) ? rc : ZKRC_OK;
  if (cheat_ms > 0) {
    cheat_enter(round, members, cheat_ms);
    rc = ZKRC_ETIMEDOUT; /* never leave: not entered for the library */
  } else {
    rc = wait_entered(b, round, acquire_ms);
  }
  if (rc == ZKRC_OK && cheat_leave_ms > 0) {
    record("LEAVE %d", round);
    rc = zkrc_double_barrier_leave(b, ZKRC_NO_WAIT);
    cheat_leave(round, cheat_leave_ms);
  } else if (rc == ZKRC_OK) {
    __atomic_store_n(&slot->holding, 1, __ATOMIC_RELEASE);
    set_phase(CHAOS_WORKING);
    usleep((useconds_t)(work_ms * (1 + rand_r(seed) % 10)) * 1000);
    set_phase(CHAOS_RELEASING);
    __atomic_store_n(&slot->holding, 0, __ATOMIC_RELEASE);
    record("LEAVE %d", round);
    int64_t start = chaos_now_us();
    rc = zkrc_double_barrier_leave(b, acquire_ms);
    if (rc == ZKRC_OK)
      record("LEFT %d %" PRId64, round, chaos_now_us() - start);
    else
      record("LEAVERC %d %s %" PRId64 " %d", round, zkrc_err_name(rc),
             chaos_now_us() - start,
             rc == ZKRC_ETIMEDOUT ? 0 : zkrc_last_zk_error());
  }
  zkrc_double_barrier_free(b);
  record("FREE %d", round);
  progress();
  return misuse(rc) ? rc : ZKRC_OK;
}

static int run(const char *hosts, const char *path, int instance, int members,
               int cheat_ms, int cheat_leave_ms) {
  zkrc_session_options so;
  zkrc_session_options_init(&so);
  so.session_timeout_ms = env_int("CHAOS_SESSION_MS", 2000);
  so.connect_timeout_ms = env_int("CHAOS_ACQUIRE_MS", 8000);
  zkrc_session *s;
  int rc = zkrc_session_new(&s, hosts, &so);
  if (rc != ZKRC_OK) {
    record("EXIT 4 session %s", zkrc_err_name(rc));
    return 4;
  }
  zkrc_session_add_listener(s, on_session, NULL, NULL);
  unsigned seed = (unsigned)getpid() ^ (unsigned)chaos_now_us();
  int status = 0, round = 0;
  while (!stopping && status == 0) {
    int highest = scan_rounds(0, 0);
    round = round + 1 > highest ? round + 1 : highest;
    if ((rc = one_round(s, path, instance, round, members, cheat_ms,
                        cheat_leave_ms, &seed)) != ZKRC_OK)
      status = 4;
    set_phase(CHAOS_IDLE);
  }
  zkrc_session_close(s);
  set_phase(CHAOS_EXITED);
  record("EXIT %d%s%s", status, status ? " " : "",
         status ? zkrc_err_name(rc) : "");
  return status;
}

int main(int argc, char **argv) {
  if (argc < 9) {
    fprintf(stderr, "usage: chaos_dbworker INSTANCE HOSTS PATH STOREPORT KEY "
                    "LOGFILE STATUSFILE members=N [cheat-enter=MS | "
                    "cheat-leave=MS]\n");
    return 2;
  }
  int members = 0, cheat_ms = 0, cheat_leave_ms = 0;
  for (int i = 8; i < argc; i++) {
    if (strncmp(argv[i], "members=", 8) == 0)
      members = atoi(argv[i] + 8);
    else if (strncmp(argv[i], "cheat-enter=", 12) == 0)
      cheat_ms = atoi(argv[i] + 12);
    else if (strncmp(argv[i], "cheat-leave=", 12) == 0)
      cheat_leave_ms = atoi(argv[i] + 12);
    else
      return 2;
  }
  int instance = atoi(argv[1]);
  if (members < 1 || instance < 0 || instance >= CHAOS_MAX_INSTANCES)
    return 2;
  zkrc_log_from_env();
  int started = chaos_worker_start("chaos_dbworker", argv[6], argv[7], instance,
                                   CHAOS_KIND_BARRIER);
  if (started != 0)
    return started;
  return run(argv[2], argv[3], instance, members, cheat_ms, cheat_leave_ms);
}
