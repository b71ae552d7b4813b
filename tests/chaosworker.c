/*
 * chaosworker: one client of test_chaos, exec'd by it.
 *
 *   chaosworker INSTANCE HOSTS LOCKPATH STOREPORT KEY LOGFILE STATUSFILE
 *
 * Loops until SIGTERM: acquire the lock (with a deadline), write KEY to the
 * fenced store CHAOS_WRITES times with the hold's fencing token (pausing
 * CHAOS_WORK_MS between writes, as if working), release.  It never asks the
 * library whether it still holds the lock before writing - a careless client
 * on purpose, so that a client frozen or partitioned past its session timeout
 * does send stale writes, and the test can check that the store refuses them.
 * Everything it does goes to LOGFILE (format in chaos.h); what it is doing
 * right now goes to its slot of STATUSFILE.
 *
 * Environment: CHAOS_SESSION_MS (2000), CHAOS_ACQUIRE_MS (8000),
 * CHAOS_WRITES (3), CHAOS_WORK_MS (30).
 * Exit status: 0 after SIGTERM; 4 when the library returned an error that no
 * fault can explain (a misuse code such as ZKRC_EINVAL or ZKRC_ENOTOWNER);
 * 2 for bad arguments.
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
#include "fenced-store.h"

static int log_fd = -1;
static chaos_slot *slot;
static zkrc_session *session;
static volatile sig_atomic_t stopping;

static void on_term(int sig) {
  (void)sig;
  stopping = 1;
}

/* One record: a single write() to an O_APPEND file, so records of several
 * threads never mix and a SIGKILL leaves whole lines. */
static void record(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void record(const char *fmt, ...) {
  char buf[512];
  int n = snprintf(buf, sizeof buf, "%" PRId64 " ", chaos_now_us());
  va_list ap;
  va_start(ap, fmt);
  n += vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
  va_end(ap);
  if (n > (int)sizeof buf - 2)
    n = (int)sizeof buf - 2;
  buf[n++] = '\n';
  (void)!write(log_fd, buf, (size_t)n);
}

static void set_phase(int phase) {
  __atomic_store_n(&slot->phase, phase, __ATOMIC_RELEASE);
}

static void progress(void) {
  __atomic_store_n(&slot->progress_us, chaos_now_us(), __ATOMIC_RELEASE);
}

static int env_int(const char *name, int fallback) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : fallback;
}

/* ------------------------------------------------------------ callbacks */

static void on_session(zkrc_session *s, zkrc_session_event ev, void *arg) {
  clientid_t id;
  int64_t sid = 0;
  if (ev == ZKRC_SESSION_EVENT_CONNECTED &&
      zkrc_session_client_id(s, &id) == ZKRC_OK) {
    sid = id.client_id;
    memcpy(slot->passwd, id.passwd, sizeof slot->passwd);
  }
  if (ev == ZKRC_SESSION_EVENT_CONNECTED || ev == ZKRC_SESSION_EVENT_LOST ||
      ev == ZKRC_SESSION_EVENT_EXPIRED || ev == ZKRC_SESSION_EVENT_CLOSED)
    __atomic_store_n(&slot->session_id, sid, __ATOMIC_RELEASE);
  record("SESSION %s %" PRIx64, zkrc_session_event_name(ev),
         (uint64_t)zkrc_session_id(s));
}

static void on_lock_event(zkrc_lock *lk, const zkrc_lock_event_info *info,
                          void *arg) {
  record("LOCKEVENT %s %s %" PRId64 " %d", zkrc_lock_event_name(info->event),
         zkrc_err_name(info->reason), info->token, info->zk_error);
}

/* --------------------------------------------------------------- client */

/* Codes no fault can explain: the worker uses the API wrongly, or the
 * library lost track of its own state. */
static int misuse(int rc) {
  return rc == ZKRC_EINVAL || rc == ZKRC_ENOTOWNER || rc == ZKRC_ECLOSED ||
         rc == ZKRC_ECANCELED || rc == ZKRC_EOVERFLOW || rc == ZKRC_ENOMEM ||
         rc == ZKRC_ESTATE;
}

static void store_write(int port, const char *key, int instance, int hold,
                        int k, int64_t token, int held) {
  char request[FENCED_MAX_LINE], reply[FENCED_MAX_LINE], result[64];
  snprintf(request, sizeof request, "WRITE %s %" PRId64 " w%d.%d.%d", key,
           token, instance, hold, k);
  int64_t start = chaos_now_us();
  if (fenced_request(port, request, reply, sizeof reply, 3000) != 0)
    snprintf(result, sizeof result, "ERR:%d", errno);
  else if (strncmp(reply, "OK ", 3) == 0)
    snprintf(result, sizeof result, "OK");
  else if (strncmp(reply, "REFUSED ", 8) == 0)
    snprintf(result, sizeof result, "REFUSED");
  else
    snprintf(result, sizeof result, "ERR:reply");
  record("WRITE %d %d %" PRId64 " %d %s %" PRId64, hold, k, token, held, result,
         chaos_now_us() - start);
}

static int run(int instance, const char *hosts, const char *path, int port,
               const char *key) {
  int session_ms = env_int("CHAOS_SESSION_MS", 2000);
  int acquire_ms = env_int("CHAOS_ACQUIRE_MS", 8000);
  int writes = env_int("CHAOS_WRITES", 3);
  int work_ms = env_int("CHAOS_WORK_MS", 30);

  zkrc_session_options so;
  zkrc_session_options_init(&so);
  so.session_timeout_ms = session_ms;
  so.connect_timeout_ms = acquire_ms;
  /* Not connected yet is fine: the acquisitions wait for the connection. */
  int rc = zkrc_session_new(&session, hosts, &so);
  if (rc != ZKRC_OK) {
    record("EXIT 4 session %s", zkrc_err_name(rc));
    return 4;
  }
  zkrc_session_add_listener(session, on_session, NULL, NULL);
  char id[32];
  snprintf(id, sizeof id, "w%d", instance);
  zkrc_lock_options lo;
  zkrc_lock_options_init(&lo);
  lo.participant_id = id;
  lo.on_event = on_lock_event;
  zkrc_lock *lk = NULL;
  if ((rc = zkrc_lock_new(&lk, session, path, &lo)) != ZKRC_OK) {
    record("EXIT 4 lock_new %s", zkrc_err_name(rc));
    zkrc_session_close(session);
    return 4;
  }

  int status = 0;
  for (int hold = 1; !stopping && status == 0; hold++) {
    slot->hold = hold;
    set_phase(CHAOS_ACQUIRING);
    int64_t start = chaos_now_us();
    rc = zkrc_lock_acquire(lk, acquire_ms);
    int zk = rc == ZKRC_OK ? 0 : zkrc_last_zk_error();
    int64_t token = 0;
    if (rc == ZKRC_OK && zkrc_lock_token(lk, &token) != ZKRC_OK)
      token = -1; /* lost already; the writes below are stale */
    record("ACQ %d %s %" PRId64 " %" PRId64 " %d", hold, zkrc_err_name(rc),
           token, chaos_now_us() - start, zk);
    progress();
    if (rc != ZKRC_OK) {
      if (misuse(rc))
        status = 4;
      set_phase(CHAOS_IDLE);
      continue;
    }
    slot->token = token;
    for (int k = 1; k <= writes; k++) {
      slot->writes_left = writes - k + 1;
      if (k > 1) {
        set_phase(CHAOS_WORKING);
        usleep((useconds_t)work_ms * 1000);
      }
      set_phase(CHAOS_WRITING);
      /* Asked for the record only: the write goes out whatever it says. */
      int held = zkrc_lock_is_held(lk);
      store_write(port, key, instance, hold, k, token, held);
      progress();
    }
    slot->writes_left = 0;
    set_phase(CHAOS_RELEASING);
    start = chaos_now_us();
    rc = zkrc_lock_release(lk);
    zk = rc == ZKRC_OK ? 0 : zkrc_last_zk_error();
    record("REL %d %s %" PRId64 " %d", hold, zkrc_err_name(rc),
           chaos_now_us() - start, zk);
    progress();
    if (rc != ZKRC_OK && rc != ZKRC_ELOCKLOST)
      status = 4;
    set_phase(CHAOS_IDLE);
  }
  zkrc_lock_free(lk);
  zkrc_session_close(session);
  set_phase(CHAOS_EXITED);
  record("EXIT %d", status);
  return status;
}

static chaos_slot *map_slot(const char *file, int instance) {
  int fd = open(file, O_RDWR | O_CLOEXEC);
  if (fd < 0)
    return NULL;
  void *p = mmap(NULL, sizeof(chaos_slot) * CHAOS_MAX_INSTANCES,
                 PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  return p == MAP_FAILED ? NULL : (chaos_slot *)p + instance;
}

int main(int argc, char **argv) {
  if (argc != 8) {
    fprintf(stderr, "usage: chaosworker INSTANCE HOSTS LOCKPATH STOREPORT KEY "
                    "LOGFILE STATUSFILE\n");
    return 2;
  }
  zkrc_log_from_env();
  int instance = atoi(argv[1]);
  if (instance < 0 || instance >= CHAOS_MAX_INSTANCES)
    return 2;
  log_fd = open(argv[6], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  slot = map_slot(argv[7], instance);
  if (log_fd < 0 || slot == NULL) {
    fprintf(stderr, "chaosworker: %s / %s: %s\n", argv[6], argv[7],
            strerror(errno));
    return 2;
  }
  slot->pid = (int32_t)getpid();
  progress();
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_term;
  sa.sa_flags = SA_RESTART; /* the ZooKeeper client's threads see it too */
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  record("START %d", (int)getpid());
  return run(instance, argv[2], argv[3], atoi(argv[4]), argv[5]);
}
