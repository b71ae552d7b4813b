/*
 * electworker: one participant of an election in a process of its own,
 * exec'd by the election tests (a leader can then be SIGKILLed or SIGSTOPped
 * without touching the test process).
 *
 *   electworker HOSTS PATH ID TIMEOUT_MS [OPTION...]
 *     OPTION: revoke_on_suspend, no_rejoin, nojoin (wait for "join").
 *
 * Everything it reports is one line on stdout; T is CLOCK_MONOTONIC in
 * microseconds (the clock is system-wide, so the test can compare it with
 * its own clock and with other workers'):
 *   session SID PASSWD TIMEOUT T  each new ZooKeeper session (SID and the
 *                                 password in hex, TIMEOUT negotiated, ms)
 *   sevent NAME T                 every session event ("suspended", ...)
 *   joined T                      zkrc_election_join() returned ZKRC_OK
 *   elected TOKEN T               the election callback, as it runs
 *   revoked REASON TOKEN T        (REASON: ZKRC_OK, ZKRC_ESESSIONLOST, ...)
 *   failed REASON TOKEN T         taking part ended for good (FAILED)
 *   rc CMD RCNAME T0 T            reply to resign/leave/join; T0: just
 *                                 before the call
 *   status ISLEADER TOKEN T       reply to "status" (TOKEN 0 if none)
 *   participants N ID... T        reply to "participants"
 *   leader ID T                   reply to "leader" ("-" for no leader)
 *   renewals N T                  reply to "renewals": the lease renewals
 *                                 (syncs) the session sent so far
 *   thaw GAP_MS FIRST SEEN SAMPLES T
 *                                 the process was frozen for GAP_MS; FIRST is
 *                                 zkrc_election_is_leader() at once after the
 *                                 freeze, SEEN how many of SAMPLES calls in
 *                                 the THAW_WATCH_MS after it returned
 *                                 non-zero, T the time of the first call
 *   quit T                        about to free the election: we no longer
 *                                 lead (free drops the REVOKED callback)
 *   bye T                         about to exit 0
 * Commands, one per line on stdin: resign, leave, join, status,
 * participants, leader, renewals, quit.  End of stdin is "quit".  Exit status: 0
 * after quit; 2 for bad arguments; 4 when it could not connect or join.
 */
#include "config.h"

#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zkrecipes.h>

/* A gap this long between two looks at the clock means we were frozen. */
#define FREEZE_GAP_US 250000
/* How long the thaw watcher keeps asking is_leader() after a freeze. */
#define THAW_WATCH_MS 300

static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;
static zkrc_election *election;
static atomic_int stopping;

static int64_t mono_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Write one whole line at once (so lines from several threads never mix);
 * a failed write means the test is gone, and stdin's end tells us so too. */
static void emit(const char *fmt, ...) {
  char buf[4096];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
  va_end(ap);
  if (n < 0)
    return;
  if ((size_t)n > sizeof buf - 2)
    n = (int)sizeof buf - 2;
  buf[n++] = '\n';
  pthread_mutex_lock(&out_mu);
  for (int off = 0; off < n;) {
    ssize_t w = write(STDOUT_FILENO, buf + off, (size_t)(n - off));
    if (w <= 0)
      break;
    off += (int)w;
  }
  pthread_mutex_unlock(&out_mu);
}

static void hex(char *out, const unsigned char *p, size_t len) {
  for (size_t i = 0; i < len; i++)
    sprintf(out + 2 * i, "%02x", p[i]);
}

static void report_session(zkrc_session *s) {
  clientid_t id;
  if (zkrc_session_client_id(s, &id) != ZKRC_OK)
    return;
  char pw[2 * sizeof id.passwd + 1];
  hex(pw, (const unsigned char *)id.passwd, sizeof id.passwd);
  emit("session %" PRIx64 " %s %d %" PRId64, (uint64_t)id.client_id, pw,
       zkrc_session_timeout(s), mono_us());
}

static void on_session(zkrc_session *s, const zkrc_session_event *ev_,
                       void *arg) {
  zkrc_session_event_type ev = ev_->type;
  (void)arg;
  emit("sevent %s %" PRId64, zkrc_session_event_name(ev), mono_us());
  if (ev == ZKRC_SESSION_EVENT_CONNECTED)
    report_session(s);
}

static void on_election(zkrc_election *e, const zkrc_election_event *info,
                        void *arg) {
  (void)e;
  (void)arg;
  int64_t now = mono_us();
  if (info->type == ZKRC_ELECTION_ELECTED)
    emit("elected %" PRId64 " %" PRId64, info->token, now);
  else /* "revoked" or "failed" */
    emit("%s %s %" PRId64 " %" PRId64, zkrc_election_event_name(info->type),
         zkrc_err_name(info->reason), info->token, now);
}

/* Watches for a freeze of the whole process (SIGSTOP): right after one, the
 * library must already say we do not lead (zkrc_election_is_leader()
 * promises it even before the session has noticed), and must keep saying
 * so while it catches up. */
static void *thaw_watch(void *arg) {
  (void)arg;
  int64_t prev = mono_us();
  while (!stopping) {
    struct timespec nap = {0, 2000000};
    nanosleep(&nap, NULL);
    int64_t now = mono_us();
    if (now - prev > FREEZE_GAP_US) {
      int first = zkrc_election_is_leader(election);
      int64_t t_first = mono_us();
      unsigned samples = 0, seen = 0;
      while (mono_us() < t_first + THAW_WATCH_MS * 1000 && !stopping) {
        seen += zkrc_election_is_leader(election) != 0;
        samples++;
      }
      emit("thaw %" PRId64 " %d %u %u %" PRId64, (now - prev) / 1000, first,
           seen, samples, t_first);
    }
    prev = mono_us();
  }
  return NULL;
}

static void reply_rc(const char *cmd, int (*fn)(zkrc_election *)) {
  int64_t t0 = mono_us();
  int rc = fn(election);
  emit("rc %s %s %" PRId64 " %" PRId64, cmd, zkrc_err_name(rc), t0, mono_us());
}

static zkrc_session *session;

static void reply_renewals(void) {
  zkrc_session_stats st;
  uint64_t n = zkrc_session_get_stats(session, &st, sizeof st) == ZKRC_OK
                   ? st.renewals
                   : 0;
  emit("renewals %" PRIu64 " %" PRId64, n, mono_us());
}

static void reply_status(void) {
  int leader = zkrc_election_is_leader(election);
  int64_t t = mono_us();
  int64_t token = 0;
  if (zkrc_election_token(election, &token) != ZKRC_OK)
    token = 0;
  emit("status %d %" PRId64 " %" PRId64, leader, token, t);
}

static void reply_participants(void) {
  char **ids = NULL;
  size_t n = 0;
  int rc = zkrc_election_participants(election, &ids, &n, 5000);
  if (rc != ZKRC_OK) {
    emit("participants -1 %s %" PRId64, zkrc_err_name(rc), mono_us());
    return;
  }
  char line[3000] = "";
  size_t used = 0;
  for (size_t i = 0; i < n && used < sizeof line - 200; i++)
    used += (size_t)snprintf(line + used, sizeof line - used, "%s ", ids[i]);
  emit("participants %zu %s%" PRId64, n, line, mono_us());
  zkrc_strv_free(ids);
}

static void reply_leader(void) {
  char *id = NULL;
  int rc = zkrc_election_leader_id(election, &id, 5000);
  emit("leader %s %" PRId64,
       rc != ZKRC_OK ? zkrc_err_name(rc)
       : id          ? id
                     : "-",
       mono_us());
  free(id);
}

/* Obey stdin until "quit" or its end. */
static void command_loop(void) {
  char line[256];
  while (fgets(line, sizeof line, stdin)) {
    line[strcspn(line, "\r\n")] = '\0';
    if (strcmp(line, "quit") == 0)
      break;
    else if (strcmp(line, "resign") == 0)
      reply_rc("resign", zkrc_election_resign);
    else if (strcmp(line, "leave") == 0)
      reply_rc("leave", zkrc_election_leave);
    else if (strcmp(line, "join") == 0)
      reply_rc("join", zkrc_election_join);
    else if (strcmp(line, "status") == 0)
      reply_status();
    else if (strcmp(line, "participants") == 0)
      reply_participants();
    else if (strcmp(line, "leader") == 0)
      reply_leader();
    else if (strcmp(line, "renewals") == 0)
      reply_renewals();
    else
      emit("error unknown command %s %" PRId64, line, mono_us());
  }
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: electworker HOSTS PATH ID TIMEOUT_MS "
                    "[revoke_on_suspend] [no_rejoin] [nojoin]\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  zkrc_log_from_env();
  zkrc_election_options eo;
  zkrc_election_options_init(&eo);
  eo.participant_id = argv[3];
  eo.on_event = on_election;
  int join = 1;
  for (int i = 5; i < argc; i++) {
    if (strcmp(argv[i], "revoke_on_suspend") == 0)
      eo.revoke_on_suspend = 1;
    else if (strcmp(argv[i], "no_rejoin") == 0)
      eo.no_rejoin = 1;
    else if (strcmp(argv[i], "nojoin") == 0)
      join = 0;
    else {
      fprintf(stderr, "electworker: unknown option %s\n", argv[i]);
      return 2;
    }
  }

  zkrc_session_options so;
  zkrc_session_options_init(&so);
  so.session_timeout_ms = atoi(argv[4]);
  zkrc_session *s = NULL;
  int rc = zkrc_session_new(&s, argv[1], &so);
  if (rc == ZKRC_OK)
    rc = zkrc_session_add_listener(s, on_session, NULL, NULL);
  if (rc == ZKRC_OK)
    rc = zkrc_session_wait_connected(s, 15000);
  session = s;
  if (rc == ZKRC_OK)
    rc = zkrc_election_new(&election, s, argv[2], &eo);
  if (rc == ZKRC_OK && join)
    rc = zkrc_election_join(election);
  if (rc != ZKRC_OK) {
    fprintf(stderr, "electworker %s: %s\n", argv[3], zkrc_strerror(rc));
    zkrc_election_free(election);
    zkrc_session_close(s);
    return 4;
  }
  /* The listener may have missed the first session's CONNECTED. */
  report_session(s);
  if (join)
    emit("joined %" PRId64, mono_us());

  pthread_t watcher;
  int have_watcher = pthread_create(&watcher, NULL, thaw_watch, NULL) == 0;
  command_loop();
  stopping = 1;
  if (have_watcher)
    pthread_join(watcher, NULL);
  /* We stop leading here.  Freeing drops the REVOKED callback, and an
   * ELECTED one may still run while we free (no longer wanted). */
  emit("quit %" PRId64, mono_us());
  zkrc_election_free(election);
  zkrc_session_close(s);
  emit("bye %" PRId64, mono_us());
  return 0;
}
