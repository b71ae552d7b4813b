/*
 * zkr-daemon: a daemon that does its periodic work only while it leads.
 *
 * Run several instances; they elect a leader among themselves.  The leader
 * appends a line "token id seq" to a shared work log every --interval ms;
 * the others wait.  When the leader stops (SIGTERM), dies (SIGKILL) or loses
 * its ZooKeeper session, another instance takes over.
 *
 *   zkr-daemon --id a --servers zk1:2181,zk2:2181 --log /var/tmp/work.log
 *
 * Everything runs on one GLib main loop.  zkrecipes delivers its callbacks
 * there (the GLib executor), so the election events, the work timer and the
 * signal handlers never run concurrently: the daemon needs no mutex.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib-unix.h>
#include <glib.h>
#include <zkrecipes.h>
#include <zkrecipes/glib.h>

typedef struct instance {
  const char *id;
  const char *log_path;
  int interval_ms;
  GMainLoop *loop;
  zkrc_election *election;
  guint work_timer;   /* the periodic work: armed only while we lead */
  int64_t token;      /* our fencing token while we lead */
  unsigned seq;       /* lines this process wrote */
  int64_t session_id; /* the ZooKeeper session we last reported */
  int exit_code;
} instance;

static const char *my_id = "?";

/* One timestamped line on stderr.  Also called by the ZooKeeper client's
 * threads (its log hook); stdio serializes the lines. */
static void G_GNUC_PRINTF(1, 2) say(const char *fmt, ...) {
  GDateTime *now = g_date_time_new_now_local();
  char *stamp = g_date_time_format(now, "%H:%M:%S");
  va_list ap;
  va_start(ap, fmt);
  char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s.%03d zkr-daemon[%s]: %s\n", stamp,
          g_date_time_get_microsecond(now) / 1000, my_id, msg);
  g_free(msg);
  g_free(stamp);
  g_date_time_unref(now);
}

/* Log lines of zkrecipes and of the ZooKeeper client, with their level
 * (a daemon under systemd could hand them to sd_journal_print as is). */
static void library_log(zkrc_log_level level, zkrc_log_origin origin,
                        const char *line, void *arg) {
  say("%s %s: %s", origin == ZKRC_LOG_ZOOKEEPER ? "zookeeper" : "zkrecipes",
      zkrc_log_level_name(level), line);
}

/* ------------------------------------------------------------------------
 * The fenced resource.  The work log stands for whatever the leader changes
 * (a database, a file, a remote service).  Leadership alone cannot protect
 * it: a leader that stalls (a long GC-like pause, SIGSTOP, a hung disk) may
 * resume after its session expired and another instance was elected, still
 * believing it leads, and write once more.  So the resource itself
 * remembers the highest fencing token it has accepted - here, the tokens
 * already in the file - and refuses a writer whose token is lower.  Tokens
 * (the zxid that created the leader's node) only ever increase from one
 * leader to the next.  The check and the append must be atomic with respect
 * to other writers: for a local file, flock() does that.
 * --------------------------------------------------------------------- */

/* The highest token in the log open on @p fd (0 for an empty log): the one
 * on its last line, since this check keeps the tokens in the file from ever
 * going down. */
static int64_t highest_token(int fd) {
  char tail[256];
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size == 0)
    return 0;
  off_t from = st.st_size > (off_t)sizeof tail - 1
                   ? st.st_size - (off_t)sizeof tail + 1
                   : 0;
  ssize_t n = pread(fd, tail, sizeof tail - 1, from);
  if (n <= 0)
    return 0;
  tail[n] = '\0';
  if (tail[n - 1] == '\n')
    tail[n - 1] = '\0'; /* the last line is the one before the final newline */
  char *last = strrchr(tail, '\n');
  return g_ascii_strtoll(last ? last + 1 : tail, NULL, 10);
}

/* Append @p line if @p token is not below the highest token in the log.
 * Returns 0 when written, 1 when refused (*highest says why), -1 on an I/O
 * error (errno says which). */
static int fenced_append(const char *path, int64_t token, const char *line,
                         int64_t *highest) {
  int fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return -1;
  int rc = -1;
  /* Other writers wait between our check and our write. */
  if (flock(fd, LOCK_EX) == 0) {
    *highest = highest_token(fd);
    if (token < *highest) {
      rc = 1;
    } else {
      size_t len = strlen(line);
      rc = write(fd, line, len) == (ssize_t)len ? 0 : -1;
    }
  }
  int saved = errno;
  close(fd); /* releases the flock */
  errno = saved;
  return rc;
}

/* ----------------------------------------------------------------- work */

static gboolean do_work(gpointer data) {
  instance *d = data;
  /* The callbacks stop the timer when we are revoked; this local check (no
   * server round trip) also says no at once after a freeze longer than the
   * session timeout, before the revocation has been delivered. */
  if (!zkrc_election_is_leader(d->election))
    return G_SOURCE_CONTINUE;
  char line[128];
  snprintf(line, sizeof line, "%" PRId64 " %s %u\n", d->token, d->id,
           d->seq + 1);
  int64_t highest = 0;
  int rc = fenced_append(d->log_path, d->token, line, &highest);
  if (rc == 0)
    d->seq++;
  else if (rc > 0)
    say("fenced off: our token %" PRId64 " is below %" PRId64
        " in the log; not writing",
        d->token, highest);
  else
    say("cannot write %s: %s", d->log_path, g_strerror(errno));
  return G_SOURCE_CONTINUE;
}

static void start_work(instance *d) {
  if (d->work_timer == 0)
    d->work_timer = g_timeout_add(d->interval_ms, do_work, d);
}

static void stop_work(instance *d) {
  if (d->work_timer != 0) {
    g_source_remove(d->work_timer);
    d->work_timer = 0;
  }
}

/* ------------------------------------------------- zkrecipes callbacks */

/* All of these run on the main loop (the GLib executor). */
static void on_leadership(zkrc_election *e, const zkrc_election_event *info,
                          void *arg) {
  instance *d = arg;
  switch (info->type) {
  case ZKRC_ELECTION_ELECTED:
    d->token = info->token;
    say("elected leader, fencing token %" PRId64, info->token);
    start_work(d);
    break;
  case ZKRC_ELECTION_REVOKED:
    stop_work(d);
    say("revoked (%s), fencing token %" PRId64,
        info->reason == ZKRC_OK ? "resigned" : zkrc_strerror(info->reason),
        info->token);
    break;
  case ZKRC_ELECTION_FAILED:
    stop_work(d);
    say("cannot take part in the election: %s", zkrc_strerror(info->reason));
    d->exit_code = 1;
    g_main_loop_quit(d->loop);
    break;
  }
}

static void on_session(zkrc_session *s, const zkrc_session_event *ev,
                       void *arg) {
  instance *d = arg;
  (void)s;
  switch (ev->type) {
  case ZKRC_SESSION_EVENT_SUSPENDED:
    say("connection lost; the session may still live");
    break;
  case ZKRC_SESSION_EVENT_RECONNECTED:
    say("connection back, same session");
    break;
  case ZKRC_SESSION_EVENT_LOST:
  case ZKRC_SESSION_EVENT_EXPIRED:
    say("session %s (%s): rejoining with a new one",
        zkrc_session_event_name(ev->type), zkrc_strerror(ev->reason));
    break;
  case ZKRC_SESSION_EVENT_CONNECTED:
    /* The first session's CONNECTED may or may not reach a listener added
     * after zkrc_session_connect(): only new sessions are news. */
    if (ev->session_id != d->session_id) {
      d->session_id = ev->session_id;
      say("new session 0x%" PRIx64, (uint64_t)d->session_id);
    }
    break;
  default:
    say("session %s", zkrc_session_event_name(ev->type));
  }
}

/* The election is gone (our node with it), after its last events. */
static void on_election_freed(void *data) {
  instance *d = data;
  g_main_loop_quit(d->loop);
}

/* SIGTERM, SIGINT: step down before anything else, then leave the loop
 * once the election has told its REVOKED and deleted our node (without
 * blocking the loop that delivers them). */
static gboolean on_signal(gpointer data) {
  instance *d = data;
  if (d->election == NULL) /* a second signal */
    return G_SOURCE_REMOVE;
  say("stopping%s",
      zkrc_election_is_leader(d->election) ? ": stepping down" : "");
  stop_work(d); /* no write after this point */
  zkrc_election_free_async(d->election, on_election_freed, d);
  d->election = NULL;
  return G_SOURCE_REMOVE;
}

/* ----------------------------------------------------------------- main */

int main(int argc, char **argv) {
  instance d = {.interval_ms = 500};
  char *servers = NULL, *path = NULL, *id = NULL, *log_path = NULL;
  int session_timeout_ms = 10000;
  GOptionEntry entries[] = {
      {"id", 0, 0, G_OPTION_ARG_STRING, &id, "this instance's name", "ID"},
      {"servers", 0, 0, G_OPTION_ARG_STRING, &servers,
       "ZooKeeper servers (default: $ZKR_SERVERS)", "HOSTS"},
      {"election", 0, 0, G_OPTION_ARG_STRING, &path,
       "election path (default /zkr-daemon/leader)", "PATH"},
      {"log", 0, 0, G_OPTION_ARG_FILENAME, &log_path,
       "the shared work log the leader appends to", "FILE"},
      {"interval", 0, 0, G_OPTION_ARG_INT, &d.interval_ms,
       "ms between two lines of work (default 500)", "MS"},
      {"session-timeout", 0, 0, G_OPTION_ARG_INT, &session_timeout_ms,
       "ZooKeeper session timeout in ms (default 10000)", "MS"},
      {NULL, 0, 0, G_OPTION_ARG_NONE, NULL, NULL, NULL}};
  GOptionContext *oc = g_option_context_new("- work while leading");
  g_option_context_add_main_entries(oc, entries, NULL);
  GError *err = NULL;
  gboolean parsed = g_option_context_parse(oc, &argc, &argv, &err);
  g_option_context_free(oc);
  if (servers == NULL && getenv("ZKR_SERVERS"))
    servers = g_strdup(getenv("ZKR_SERVERS"));
  if (!parsed || id == NULL || log_path == NULL || servers == NULL ||
      d.interval_ms <= 0 || session_timeout_ms <= 0) {
    fprintf(stderr, "zkr-daemon: %s\n",
            err ? err->message
                : "--id, --log and --servers (or ZKR_SERVERS) are required; "
                  "timeouts must be positive");
    g_clear_error(&err);
    g_free(servers);
    g_free(path);
    g_free(id);
    g_free(log_path);
    return 2;
  }
  my_id = d.id = id;
  d.log_path = log_path;

  /* Warnings and errors of zkrecipes and the ZooKeeper client go to our
   * log, with our timestamps. */
  zkrc_log_set_level(ZKRC_LOG_WARN);
  zkrc_log_set_handler(library_log, NULL);

  /* Every zkrecipes callback of this session runs on the default main
   * context, the one g_main_loop_run() iterates below. */
  zkrc_executor executor;
  zkrc_glib_executor_init(&executor, NULL);
  zkrc_session_options so;
  zkrc_session_options_init(&so);
  so.executor = &executor;
  so.session_timeout_ms = session_timeout_ms;
  zkrc_session *session = NULL;
  int rc = zkrc_session_connect(&session, servers, &so);
  if (rc == ZKRC_OK)
    rc = zkrc_session_add_listener(session, on_session, &d, NULL);

  zkrc_election_options eo;
  zkrc_election_options_init(&eo);
  eo.participant_id = d.id;
  eo.on_event = on_leadership;
  eo.event_arg = &d;
  eo.revoke_on_suspend = 1; /* stop working as soon as the connection drops */
  if (rc == ZKRC_OK)
    rc = zkrc_election_new(&d.election, session,
                           path ? path : "/zkr-daemon/leader", &eo);
  if (rc == ZKRC_OK)
    rc = zkrc_election_join(d.election);
  if (rc != ZKRC_OK) {
    say("cannot start: %s", zkrc_strerror(rc));
    d.exit_code = 1;
  } else {
    d.session_id = zkrc_session_id(session);
    say("joined %s (session 0x%" PRIx64 ", timeout %d ms)",
        zkrc_election_path(d.election), (uint64_t)d.session_id,
        zkrc_session_timeout(session));
    d.loop = g_main_loop_new(NULL, FALSE);
    g_unix_signal_add(SIGTERM, on_signal, &d);
    g_unix_signal_add(SIGINT, on_signal, &d);
    g_main_loop_run(d.loop);
    g_main_loop_unref(d.loop);
  }

  zkrc_election_free(d.election); /* after a failure; NULL after a signal */
  zkrc_session_close(session);
  zkrc_glib_executor_clear(&executor); /* runs what the session posted last */
  say("stopped");
  g_free(servers);
  g_free(path);
  g_free(id);
  g_free(log_path);
  return d.exit_code;
}
