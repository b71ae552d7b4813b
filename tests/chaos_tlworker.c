/*
 * chaos_tlworker: one client of test_chaos's time lease run, exec'd by it.
 *
 *   chaos_tlworker INSTANCE HOSTS PATH STOREPORT KEY LOGFILE STATUSFILE
 *                  slots=N [ignore-end=MS]
 *     (STOREPORT and KEY are test_chaos's common arguments, unused here:
 *      a time lease gives no fencing token)
 *     slots=N        take one of the N slots of the time lease at PATH
 *                    (zkrc_time_lease_obtain_multi(), kazoo's
 *                    MultiNonBlockingLease): PATH/0 ... PATH/N-1
 *     ignore-end=MS  the control: keep working after the lease's end until
 *                    another worker is seen holding the same slot (at most
 *                    MS ms), then work once more - an application that
 *                    ignores the end it was given; logged as CONTROL
 *                    made / missed (chaos.h)
 *
 * Loops until SIGTERM: try to obtain a slot for CHAOS_LEASE_MS (with a
 * deadline of CHAOS_ACQUIRE_MS); obtained (or renewed), work in steps of
 * CHAOS_WORK_MS while the lease's clock is more than CHAOS_MARGIN_MS before
 * the end written, each step a WORK record stamped with the clock reading
 * that allowed it; then pause 0-300 ms (so that about half the next
 * attempts come before the end passed: renewals) and try again.  Refused,
 * wait for the holder's end (at most 500 ms) and try again; failed, back
 * off 100-300 ms.
 *
 * The lease's clock (zkrc_time_lease_options.clock) is CLOCK_MONOTONIC
 * plus CHAOS_EPOCH_MS, one offset for every worker (set by test_chaos from
 * the wall clock when it starts): the same clock for every participant,
 * which is the header's clock assumption (zkrecipes/timelease.h) made
 * exact, and which lets the checker compare the ends written with the
 * records of every worker on one clock.
 *
 * Records (chaos.h gives the common ones; times in CLOCK_MONOTONIC µs):
 *   TL <n> <rc-name> <outcome|-> <slot> <decided-us> <end-us> <took-us> <zk>
 *       (an attempt: decided-us the clock reading of the decision, end-us
 *        the end written (obtained, renewed) or read (held), 0 when none)
 *   WORK <n>     (a step of work under lease n, stamped with the reading
 *                 that allowed it)
 *   DONE <n>     (lease n no longer used)
 *   CONTROL <made|missed|stopped> <n>
 * Exit status: 0 after SIGTERM; 4 when the library returned a code no
 * fault can explain; 2 for bad arguments.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <zkrecipes.h>

#include "chaos.h"
#include "chaos_worker.h"

static int64_t epoch_ms; /* the lease clock's offset from CLOCK_MONOTONIC */

static int64_t lease_clock(void *arg) {
  (void)arg;
  return chaos_now_us() / 1000 + epoch_ms;
}

/* A time on the lease's clock (ms) as CLOCK_MONOTONIC µs. */
static int64_t to_mono_us(int64_t lease_ms) {
  return (lease_ms - epoch_ms) * 1000;
}

static void on_session(zkrc_session *s, const zkrc_session_event *ev,
                       void *arg) {
  (void)arg;
  record_session_event(s, ev->type);
}

/* Does another time lease worker claim lease slot @p ls right now? */
static int another_holds(int ls) {
  int i = 0;
  for (chaos_slot *o; (o = next_other_worker(&i)) != NULL;) {
    if (o->kind == CHAOS_KIND_TIMELEASE &&
        __atomic_load_n(&o->holding, __ATOMIC_ACQUIRE) &&
        __atomic_load_n(&o->lease_slot, __ATOMIC_ACQUIRE) == ls)
      return 1;
  }
  return 0;
}

/* The control: past the end of lease @p n, go on working until another
 * worker claims the slot, at most @p ms.  Its TL record was written
 * before it set its flag, with a decision no earlier than our end (were
 * the library right); our WORK record after seeing it is later still: an
 * overlap by construction. */
static void overstay(int n, int ls, int ms) {
  int64_t deadline = chaos_now_us() + (int64_t)ms * 1000;
  __atomic_store_n(&slot->control_waiting, 1, __ATOMIC_RELEASE);
  int made = 0;
  while (!stopping && chaos_now_us() < deadline &&
         !(made = another_holds(ls))) {
    record("WORK %d", n);
    progress();
    usleep(20000);
  }
  if (made)
    record("WORK %d", n);
  control_done(made ? 1 : stopping ? -1 : 0, n);
}

/* Work under lease @p n (slot @p ls) while the clock is more than
 * @p margin_ms before @p end_ms: each step stamped with the reading that
 * allowed it, so that a freeze or a slow scheduler between the two cannot
 * make an honest step look late. */
static void work(int n, int ls, int64_t end_ms, int margin_ms, int work_ms,
                 int ignore_end_ms) {
  __atomic_store_n(&slot->lease_slot, ls, __ATOMIC_RELEASE);
  __atomic_store_n(&slot->token, n, __ATOMIC_RELEASE);
  __atomic_store_n(&slot->holding, 1, __ATOMIC_RELEASE);
  set_phase(CHAOS_WORKING);
  while (!stopping) {
    int64_t now = chaos_now_us();
    if (now / 1000 + epoch_ms >= end_ms - margin_ms)
      break;
    record_at(now, "WORK %d", n);
    progress();
    usleep((useconds_t)work_ms * 1000);
  }
  if (ignore_end_ms > 0 && !stopping)
    overstay(n, ls, ignore_end_ms);
  __atomic_store_n(&slot->holding, 0, __ATOMIC_RELEASE);
  record("DONE %d", n);
}

/* Codes no fault can explain. */
static int misuse(int rc) {
  return rc == ZKRC_EINVAL || rc == ZKRC_ECLOSED || rc == ZKRC_ENOMEM ||
         rc == ZKRC_EBADNODE || rc == ZKRC_ESTATE;
}

static int run(const char *hosts, const char *path, int count,
               int ignore_end_ms) {
  int session_ms = env_int("CHAOS_SESSION_MS", 2000);
  int acquire_ms = env_int("CHAOS_ACQUIRE_MS", 8000);
  int lease_ms = env_int("CHAOS_LEASE_MS", 2000);
  int margin_ms = env_int("CHAOS_MARGIN_MS", 200);
  int work_ms = env_int("CHAOS_WORK_MS", 30);
  unsigned seed = (unsigned)getpid() ^ (unsigned)chaos_now_us();
  zkrc_session_options so;
  zkrc_session_options_init(&so);
  so.session_timeout_ms = session_ms;
  so.connect_timeout_ms = acquire_ms;
  zkrc_session *session;
  int rc = zkrc_session_new(&session, hosts, &so);
  if (rc != ZKRC_OK) {
    record("EXIT 4 session %s", zkrc_err_name(rc));
    return 4;
  }
  zkrc_session_add_listener(session, on_session, NULL, NULL);
  zkrc_time_lease_options to;
  zkrc_time_lease_options_init(&to);
  to.clock = lease_clock;
  int status = 0;
  for (int n = 1; !stopping && status == 0; n++) {
    set_phase(CHAOS_ACQUIRING);
    zkrc_time_lease_result res;
    memset(&res, 0, sizeof res);
    int64_t start = chaos_now_us();
    rc = zkrc_time_lease_obtain_multi(session, path, count, lease_ms, &to, &res,
                                      acquire_ms);
    int zk = rc == ZKRC_OK ? 0 : zkrc_last_zk_error();
    int64_t took = chaos_now_us() - start;
    progress();
    if (rc == ZKRC_OK && res.end_ms > 0) {
      record("TL %d ZKRC_OK %s %d %" PRId64 " %" PRId64 " %" PRId64 " 0", n,
             zkrc_time_lease_outcome_name(res.outcome), res.slot,
             to_mono_us(res.end_ms - res.remaining_ms), to_mono_us(res.end_ms),
             took);
    } else {
      record("TL %d %s %s %d 0 0 %" PRId64 " %d", n, zkrc_err_name(rc),
             rc == ZKRC_OK ? zkrc_time_lease_outcome_name(res.outcome) : "-",
             res.slot, took, zk);
    }
    if (rc == ZKRC_OK && (res.outcome == ZKRC_TIME_LEASE_OBTAINED ||
                          res.outcome == ZKRC_TIME_LEASE_RENEWED)) {
      work(n, res.slot, res.end_ms, margin_ms, work_ms, ignore_end_ms);
      set_phase(CHAOS_IDLE);
      usleep((useconds_t)(rand_r(&seed) % 300) * 1000);
    } else if (rc == ZKRC_OK) { /* refused: try again about its end */
      set_phase(CHAOS_IDLE);
      int64_t wait_ms = res.remaining_ms < 500 ? res.remaining_ms : 500;
      usleep((useconds_t)((wait_ms > 0 ? wait_ms : 0) + rand_r(&seed) % 50) *
             1000);
    } else if (misuse(rc)) {
      status = 4;
    } else {
      set_phase(CHAOS_IDLE);
      usleep((useconds_t)(100 + rand_r(&seed) % 200) * 1000);
    }
    zkrc_time_lease_result_clear(&res);
    progress();
  }
  zkrc_session_close(session);
  set_phase(CHAOS_EXITED);
  record("EXIT %d", status);
  return status;
}

int main(int argc, char **argv) {
  if (argc < 9) {
    fprintf(stderr, "usage: chaos_tlworker INSTANCE HOSTS PATH STOREPORT KEY "
                    "LOGFILE STATUSFILE slots=N [ignore-end=MS]\n");
    return 2;
  }
  int count = 0, ignore_end_ms = 0;
  for (int i = 8; i < argc; i++) {
    if (strncmp(argv[i], "slots=", 6) == 0)
      count = atoi(argv[i] + 6);
    else if (strncmp(argv[i], "ignore-end=", 11) == 0)
      ignore_end_ms = atoi(argv[i] + 11);
    else
      return 2;
  }
  int instance = atoi(argv[1]);
  const char *epoch = getenv("CHAOS_EPOCH_MS");
  if (count < 1 || instance < 0 || instance >= CHAOS_MAX_INSTANCES ||
      epoch == NULL)
    return 2;
  epoch_ms = strtoll(epoch, NULL, 10);
  zkrc_log_from_env();
  int started = chaos_worker_start("chaos_tlworker", argv[6], argv[7], instance,
                                   CHAOS_KIND_TIMELEASE);
  if (started != 0)
    return started;
  return run(argv[2], argv[3], count, ignore_end_ms);
}
