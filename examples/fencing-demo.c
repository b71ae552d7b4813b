/*
 * fencing-demo - what the fencing token is for, with real processes.
 *
 * The classic failure of a lock service: client A holds the lock and writes
 * to a resource; A freezes (a long GC pause, a swapped-out VM; here SIGSTOP)
 * for longer than its ZooKeeper session timeout; the servers expire its
 * session, so B acquires the lock and writes; then A wakes up and, still
 * believing it holds the lock, writes again.  A lock alone cannot stop that
 * write: A is not asking anyone.  The resource can, if every write carries
 * the writer's fencing token: B's token is higher than A's, so the store
 * (fenced-store) refuses A's stale write.
 *
 * The demo shows both lines of defence: once A resumes, zkrecipes tells it
 * at once that the lock is lost (zkrc_lock_is_held() returns 0, the lock's
 * event callback reports "lost") - but a careless A that writes without
 * asking is still refused by the resource.
 *
 * Run:   fencing-demo            (starts a local 3-member ensemble through
 *                                 libzkrecipes-testing)
 *        ZKR_SERVERS=host:port,... fencing-demo
 *        fencing-demo --no-fencing   (the same story against a store that
 *                                 ignores the tokens: B's write is lost)
 * It runs fenced-store from FENCED_STORE, or from its own directory (or the
 * one above it, for libtool's .libs).  Exit status 0 when the story went as
 * it must: the stale write refused and B's write kept (with --no-fencing:
 * the stale write accepted, overwriting B's).
 *
 * Processes: this program narrates; it runs fenced-store and itself twice,
 * as clients A and B (`fencing-demo client NAME HOSTS PATH PORT T0`), which
 * take commands on standard input and report on standard output.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <zkrecipes.h>
#include <zkrecipes/testing.h>

#include "fenced-store.h"

#define KEY "report"
#define SESSION_TIMEOUT_MS 2000
#define STEP_TIMEOUT_MS 30000

static int64_t t0_us;
static int no_fencing; /* --no-fencing: the store ignores the tokens */

/* One transcript line: "  12.345 s  WHO    text".  One write() per line, so
 * lines from several threads or processes never mix. */
static void say(int fd, const char *who, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(int fd, const char *who, const char *fmt, ...) {
  char buf[1024];
  int64_t us = fenced_now_us() - t0_us;
  int n = snprintf(buf, sizeof buf, "%4" PRId64 ".%03d s  %-5s  ", us / 1000000,
                   (int)(us / 1000 % 1000), who);
  va_list ap;
  va_start(ap, fmt);
  n += vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
  va_end(ap);
  if (n > (int)sizeof buf - 2)
    n = (int)sizeof buf - 2;
  buf[n++] = '\n';
  (void)!write(fd, buf, (size_t)n);
}

/* ================================================================ client */

typedef struct client {
  const char *name;
  int port;
  zkrc_session *s;
  zkrc_lock *lk;
  int64_t token;
  pthread_mutex_t mu;
  pthread_cond_t cond;
  int lost;
} client;

/* Clients report to the narrator on this descriptor ("state args" lines);
 * their transcript lines go straight to the shared standard output, so that
 * the lines of all processes appear in the order things happened. */
#define REPORT_FD 3

static void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void report(const char *fmt, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
  va_end(ap);
  if (n > (int)sizeof buf - 2)
    n = (int)sizeof buf - 2;
  buf[n++] = '\n';
  (void)!write(REPORT_FD, buf, (size_t)n);
}

static void on_lock_event(zkrc_lock *lk, const zkrc_lock_event *info,
                          void *arg) {
  client *c = arg;
  say(STDOUT_FILENO, c->name, "lock event: %s (%s, token %" PRId64 ")",
      zkrc_lock_event_name(info->type), zkrc_err_name(info->reason),
      info->token);
  if (info->type == ZKRC_LOCK_LOST) {
    pthread_mutex_lock(&c->mu);
    c->lost = 1;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->mu);
  }
}

static void client_acquire(client *c) {
  say(STDOUT_FILENO, c->name, "asks for the lock");
  int rc = zkrc_lock_acquire(c->lk, STEP_TIMEOUT_MS);
  if (rc != ZKRC_OK) {
    say(STDOUT_FILENO, c->name, "zkrc_lock_acquire() = %s", zkrc_err_name(rc));
    report("failed");
    return;
  }
  zkrc_lock_token(c->lk, &c->token);
  say(STDOUT_FILENO, c->name, "holds the lock: fencing token %" PRId64,
      c->token);
  report("acquired %" PRId64, c->token);
}

/* Write with the token of our hold - without asking the library whether we
 * still hold the lock: that is the point of the demo. */
static void client_write(client *c, const char *value) {
  char request[2 * FENCED_MAX_LINE], reply[FENCED_MAX_LINE];
  snprintf(request, sizeof request, "WRITE %s %" PRId64 " %s", KEY, c->token,
           value);
  say(STDOUT_FILENO, c->name, "writes \"%s\" with token %" PRId64, value,
      c->token);
  if (fenced_request(c->port, request, reply, sizeof reply, 5000) != 0) {
    say(STDOUT_FILENO, c->name, "store request failed: %s", strerror(errno));
    report("wrote ERR");
    return;
  }
  int ok = strncmp(reply, "OK ", 3) == 0;
  int refused = strncmp(reply, "REFUSED ", 8) == 0;
  if (!ok)
    say(STDOUT_FILENO, c->name, "is told: %s", reply);
  report("wrote %s", ok ? "OK" : refused ? "REFUSED" : "ERR");
}

static void client_ask(client *c) {
  int held = zkrc_lock_is_held(c->lk);
  say(STDOUT_FILENO, c->name, "asks the library: zkrc_lock_is_held() = %d%s",
      held, held ? "" : " (the lock is lost)");
  report("asked %d", held);
}

static void client_wait_lost(client *c) {
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 10;
  pthread_mutex_lock(&c->mu);
  while (!c->lost &&
         pthread_cond_timedwait(&c->cond, &c->mu, &deadline) != ETIMEDOUT)
    ;
  int lost = c->lost;
  pthread_mutex_unlock(&c->mu);
  report("lost %d", lost);
}

static void client_release(client *c) {
  int rc = zkrc_lock_release(c->lk);
  say(STDOUT_FILENO, c->name, "zkrc_lock_release() = %s", zkrc_err_name(rc));
  report("released %s", zkrc_err_name(rc));
}

static int run_client(char **argv) {
  client c = {.name = argv[2], .port = atoi(argv[5])};
  t0_us = strtoll(argv[6], NULL, 10);
  pthread_mutex_init(&c.mu, NULL);
  pthread_cond_init(&c.cond, NULL);
  zkrc_session_options so;
  zkrc_session_options_init(&so);
  so.session_timeout_ms = SESSION_TIMEOUT_MS;
  so.connect_timeout_ms = 15000;
  int rc = zkrc_session_connect(&c.s, argv[3], &so);
  if (rc != ZKRC_OK) {
    say(STDOUT_FILENO, c.name, "cannot connect: %s", zkrc_strerror(rc));
    report("failed");
    return 1;
  }
  zkrc_lock_options lo;
  zkrc_lock_options_init(&lo);
  lo.participant_id = c.name;
  lo.on_event = on_lock_event;
  lo.event_arg = &c;
  if ((rc = zkrc_lock_new(&c.lk, c.s, argv[4], &lo)) != ZKRC_OK) {
    say(STDOUT_FILENO, c.name, "zkrc_lock_new: %s", zkrc_strerror(rc));
    report("failed");
    zkrc_session_close(c.s);
    return 1;
  }
  say(STDOUT_FILENO, c.name, "connected (session timeout %d ms)",
      zkrc_session_timeout(c.s));
  report("ready %d", zkrc_session_timeout(c.s));
  char line[512];
  while (fgets(line, sizeof line, stdin)) {
    line[strcspn(line, "\n")] = '\0';
    if (strcmp(line, "acquire") == 0)
      client_acquire(&c);
    else if (strncmp(line, "write ", 6) == 0)
      client_write(&c, line + 6);
    else if (strcmp(line, "ask") == 0)
      client_ask(&c);
    else if (strcmp(line, "wait-lost") == 0)
      client_wait_lost(&c);
    else if (strcmp(line, "release") == 0)
      client_release(&c);
    else if (strcmp(line, "quit") == 0)
      break;
  }
  zkrc_lock_free(c.lk);
  zkrc_session_close(c.s);
  pthread_mutex_destroy(&c.mu);
  pthread_cond_destroy(&c.cond);
  return 0;
}

/* ============================================================= narrator */

typedef struct child {
  const char *name;
  pid_t pid;
  int in;  /* its standard input (commands), or -1 */
  int rep; /* its reports, or -1 */
  char buf[4096];
  size_t len;
} child;

static child store = {.name = "store", .pid = -1, .in = -1, .rep = -1};
static child client_a = {.name = "A", .pid = -1, .in = -1, .rep = -1};
static child client_b = {.name = "B", .pid = -1, .in = -1, .rep = -1};
static child *children[] = {&store, &client_a, &client_b};

/*
 * Start @p argv with a pipe for its standard input.  A client reports on
 * REPORT_FD; the store's standard output (its port) comes to us and its
 * standard error (its transcript) goes to our standard output.
 */
static int spawn(child *ch, char *const argv[], int is_store) {
  int in[2], rep[2];
  if (pipe2(in, O_CLOEXEC) != 0)
    return -1;
  if (pipe2(rep, O_CLOEXEC) != 0) {
    close(in[0]);
    close(in[1]);
    return -1;
  }
  pid_t parent = getpid();
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    close(in[0]);
    close(in[1]);
    close(rep[0]);
    close(rep[1]);
    return -1;
  }
  if (pid == 0) {
    /* Die with the narrator, even if it is killed (Linux). */
    int fail = prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent;
    fail |= dup2(in[0], STDIN_FILENO) < 0;
    if (is_store)
      fail |= dup2(STDOUT_FILENO, STDERR_FILENO) < 0 ||
              dup2(rep[1], STDOUT_FILENO) < 0;
    else
      fail |= dup2(rep[1], REPORT_FD) < 0;
    if (!fail)
      execv(argv[0], argv);
    fprintf(stderr, "fencing-demo: exec %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  close(in[0]);
  close(rep[1]);
  ch->pid = pid;
  ch->in = in[1];
  ch->rep = rep[0];
  return 0;
}

static void send_command(child *ch, const char *cmd) {
  char line[512];
  int n = snprintf(line, sizeof line, "%s\n", cmd);
  if (write(ch->in, line, (size_t)n) != n)
    fprintf(stderr, "fencing-demo: %s does not listen: %s\n", ch->name,
            strerror(errno));
}

/*
 * Wait until @p from reports a line starting with @p state (copied into
 * @p got), at most STEP_TIMEOUT_MS.  Returns 0, or -1 on timeout or when
 * @p from has gone.
 */
static int await(child *from, const char *state, char *got, size_t size) {
  int64_t deadline = fenced_now_us() + (int64_t)STEP_TIMEOUT_MS * 1000;
  for (;;) {
    char *nl;
    while ((nl = memchr(from->buf, '\n', from->len)) != NULL) {
      *nl = '\0';
      int match = strncmp(from->buf, state, strlen(state)) == 0;
      if (match) {
        size_t n = strlen(from->buf) < size ? strlen(from->buf) : size - 1;
        memcpy(got, from->buf, n);
        got[n] = '\0';
      }
      size_t used = (size_t)(nl + 1 - from->buf);
      memmove(from->buf, nl + 1, from->len - used);
      from->len -= used;
      if (match)
        return 0;
    }
    if (fenced_wait_fd(from->rep, POLLIN, deadline) <= 0)
      return -1;
    ssize_t r = read(from->rep, from->buf + from->len,
                     sizeof from->buf - 1 - from->len);
    if (r <= 0)
      return -1;
    from->len += (size_t)r;
  }
}

/* Tell @p ch to do @p cmd and wait for its report @p state. */
static int step(child *ch, const char *cmd, const char *state, char *got,
                size_t size) {
  send_command(ch, cmd);
  if (await(ch, state, got, size) != 0) {
    fprintf(stderr, "fencing-demo: %s did not report '%s' after '%s'\n",
            ch->name, state, cmd);
    return -1;
  }
  return 0;
}

static void stop_children(void) {
  for (int i = 2; i >= 0; i--) {
    child *ch = children[i];
    if (ch->pid <= 0)
      continue;
    if (ch->in >= 0) {
      send_command(ch, "quit");
      close(ch->in);
      ch->in = -1;
    }
    kill(ch->pid, SIGCONT); /* in case it is still frozen */
    if (ch == &store)
      kill(ch->pid, SIGTERM);
    int status;
    int64_t deadline = fenced_now_us() + 15 * 1000000LL;
    while (waitpid(ch->pid, &status, WNOHANG) == 0) {
      if (fenced_now_us() > deadline) {
        kill(ch->pid, SIGKILL);
        waitpid(ch->pid, &status, 0);
        break;
      }
      usleep(10000);
    }
    ch->pid = -1;
    if (ch->rep >= 0)
      close(ch->rep);
    ch->rep = -1;
  }
}

/* The fenced-store program: $FENCED_STORE, or next to us. */
static char *store_program(void) {
  const char *env = getenv("FENCED_STORE");
  if (env)
    return strdup(env);
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0)
    return NULL;
  self[n] = '\0';
  char *dir = dirname(self);
  char *path = NULL;
  const char *where[] = {"%s/fenced-store", "%s/../fenced-store"};
  for (int i = 0; i < 2; i++) {
    if (asprintf(&path, where[i], dir) < 0)
      return NULL;
    if (access(path, X_OK) == 0)
      return path;
    free(path);
  }
  return NULL;
}

static int start_store(const char *journal, int *port) {
  char *program = store_program();
  if (program == NULL) {
    fprintf(stderr,
            "fencing-demo: fenced-store not found (set FENCED_STORE)\n");
    return -1;
  }
  char t0[32];
  snprintf(t0, sizeof t0, "%" PRId64, t0_us);
  char *argv[] = {program,
                  "--echo",
                  "--t0",
                  t0,
                  "--journal",
                  (char *)journal,
                  no_fencing ? "--no-fencing" : NULL,
                  NULL};
  int rc = spawn(&store, argv, 1);
  free(program);
  if (rc != 0)
    return -1;
  /* Its first line names its port. */
  char line[128];
  size_t len = 0;
  int64_t deadline = fenced_now_us() + 10 * 1000000LL;
  while (len < sizeof line - 1 && (len == 0 || line[len - 1] != '\n')) {
    if (fenced_wait_fd(store.rep, POLLIN, deadline) <= 0)
      return -1;
    ssize_t r = read(store.rep, line + len, 1);
    if (r <= 0)
      return -1;
    len += (size_t)r;
  }
  line[len] = '\0';
  const char *colon = strrchr(line, ':');
  *port = colon ? atoi(colon + 1) : 0;
  return *port > 0 ? 0 : -1;
}

static int start_client(child *ch, const char *hosts, const char *path,
                        int port) {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0)
    return -1;
  self[n] = '\0';
  char port_s[16], t0[32];
  snprintf(port_s, sizeof port_s, "%d", port);
  snprintf(t0, sizeof t0, "%" PRId64, t0_us);
  char *argv[] = {
      self, "client", (char *)ch->name, (char *)hosts, (char *)path, port_s,
      t0,   NULL};
  return spawn(ch, argv, 0);
}

/* Freeze @p ch, and know it is frozen when this returns. */
static int freeze(child *ch) {
  if (kill(ch->pid, SIGSTOP) != 0)
    return -1;
  int status;
  return waitpid(ch->pid, &status, WUNTRACED) == ch->pid && WIFSTOPPED(status)
             ? 0
             : -1;
}

static int the_story(const char *hosts, const char *path, int port) {
  char got[256];
  int ok_a1 = 0, ok_b = 0, refused_a2 = 0, held_a2 = -1, lost_a = 0;
  if (start_client(&client_a, hosts, path, port) != 0 ||
      start_client(&client_b, hosts, path, port) != 0 ||
      await(&client_a, "ready", got, sizeof got) != 0 ||
      await(&client_b, "ready", got, sizeof got) != 0)
    return -1;
  int timeout_ms = atoi(got + strlen("ready "));

  if (step(&client_a, "acquire", "acquired", got, sizeof got) != 0 ||
      step(&client_a, "write written by A, first", "wrote", got, sizeof got) !=
          0)
    return -1;
  ok_a1 = strcmp(got, "wrote OK") == 0;

  if (freeze(&client_a) != 0)
    return -1;
  int64_t frozen_at = fenced_now_us();
  say(STDOUT_FILENO, "demo", "freezes A (SIGSTOP), as a long GC pause would");
  if (step(&client_b, "acquire", "acquired", got, sizeof got) != 0 ||
      step(&client_b, "write written by B", "wrote", got, sizeof got) != 0)
    return -1;
  ok_b = strcmp(got, "wrote OK") == 0;

  say(STDOUT_FILENO, "demo",
      "resumes A (SIGCONT) after %d ms frozen (its session timeout: %d ms)",
      (int)((fenced_now_us() - frozen_at) / 1000), timeout_ms);
  if (kill(client_a.pid, SIGCONT) != 0)
    return -1;
  say(STDOUT_FILENO, "demo",
      "A carries on where it stopped: it writes again, without asking");
  if (step(&client_a, "write written by A, second (stale)", "wrote", got,
           sizeof got) != 0)
    return -1;
  refused_a2 = strcmp(got, "wrote REFUSED") == 0;
  if (step(&client_a, "wait-lost", "lost", got, sizeof got) != 0)
    return -1;
  lost_a = strcmp(got, "lost 1") == 0;
  if (step(&client_a, "ask", "asked", got, sizeof got) != 0)
    return -1;
  held_a2 = atoi(got + strlen("asked "));
  if (step(&client_a, "release", "released", got, sizeof got) != 0 ||
      step(&client_b, "release", "released", got, sizeof got) != 0)
    return -1;

  char reply[FENCED_MAX_LINE];
  if (fenced_request(port, "READ " KEY, reply, sizeof reply, 5000) != 0)
    return -1;
  say(STDOUT_FILENO, "demo", "the store holds: %s", reply);
  int kept_b = strstr(reply, "written by B") != NULL;
  int common = ok_a1 && ok_b && held_a2 == 0 && lost_a;
  if (no_fencing) {
    int good = common && !refused_a2 && !kept_b;
    printf("%s\n", good ? "fencing-demo: without fencing, A's stale write was "
                          "accepted: B's write is lost."
                        : "fencing-demo: the story did not go as it should "
                          "(see above).");
    return good ? 0 : 1;
  }
  int good = common && refused_a2 && kept_b;
  printf("%s\n",
         good ? "fencing-demo: A's stale write was refused; B's write stands."
              : "fencing-demo: the story did not go as it should (see above).");
  return good ? 0 : 1;
}

static int run_demo(void) {
  const char *hosts = getenv("ZKR_SERVERS");
  zkrc_ensemble *e = NULL;
  if (hosts == NULL || *hosts == '\0') {
    printf("fencing-demo: starting a local 3-member ZooKeeper ensemble...\n");
    fflush(stdout);
    zkrc_ensemble_options eo;
    zkrc_ensemble_options_init(&eo);
    eo.members = 3;
    if (zkrc_ensemble_start(&e, &eo) != 0)
      return 1;
    hosts = zkrc_ensemble_connect_string(e);
  }
  char dir[] = "/tmp/fencing-demo-XXXXXX";
  if (mkdtemp(dir) == NULL) {
    perror("fencing-demo: mkdtemp");
    zkrc_ensemble_stop(e);
    return 1;
  }
  char journal[sizeof dir + 16], path[64];
  snprintf(journal, sizeof journal, "%s/journal", dir);
  snprintf(path, sizeof path, "/fencing-demo/lock-%d", (int)getpid());
  t0_us = fenced_now_us();
  int port = 0;
  int status = 1;
  if (start_store(journal, &port) != 0) {
    fprintf(stderr, "fencing-demo: the store did not start\n");
  } else {
    printf("fencing-demo: lock %s on %s\n", path, hosts);
    printf("fencing-demo: fenced-store on 127.0.0.1:%d, key \"%s\"%s\n", port,
           KEY, no_fencing ? ", fencing OFF" : "");
    fflush(stdout);
    status = the_story(hosts, path, port);
    if (status < 0) {
      fprintf(stderr, "fencing-demo: a step failed or timed out\n");
      status = 1;
    }
  }
  stop_children();
  unlink(journal);
  rmdir(dir);
  zkrc_ensemble_stop(e);
  return status;
}

int main(int argc, char **argv) {
  signal(SIGPIPE, SIG_IGN);
  zkrc_log_from_env(); /* the ZooKeeper client is silent unless ZKR_LOG */
  if (argc == 7 && strcmp(argv[1], "client") == 0)
    return run_client(argv);
  no_fencing = argc == 2 && strcmp(argv[1], "--no-fencing") == 0;
  if (argc != 1 && !no_fencing) {
    fprintf(stderr, "usage: fencing-demo [--no-fencing]   (ZKR_SERVERS="
                    "host:port,... to use your own ensemble)\n");
    return 2;
  }
  return run_demo();
}
