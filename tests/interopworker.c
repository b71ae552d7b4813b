/*
 * interopworker: zkrecipes' own participant in the interoperability tests
 * (and the benchmark), speaking the same command line and output protocol
 * as the Curator and kazoo peers (tests/peers/CuratorPeer.java):
 *
 *   interopworker hold  CONNECT PATH ID [TIMEOUT_MS]
 *   interopworker count CONNECT PATH ID N COUNTERFILE
 *   interopworker loop  CONNECT PATH SECONDS [ID]
 *
 * Output lines: "acquired NODE", "timeout", "participants ID,...",
 * "released", "ready", "done ...".  Exit codes: 0 done; 2 usage; 3 an
 * acquisition timed out (or, TIMEOUT_MS 0, the lock was held); 4 could not
 * connect; 5 any other error; 6 no command within the peer timeout; 124
 * the watchdog fired.  Environment: ZKR_PEER_TIMEOUT_MS (default 60000),
 * ZKR_PEER_SESSION_MS (default 10000), ZKR_PEER_LIFETIME_S (default 300,
 * plus SECONDS in loop mode), ZKR_LOG (the ZooKeeper client's log).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "peerutil.h"
#include "zkrecipes.h"

enum {
  EXIT_OK = 0,
  EXIT_USAGE = 2,
  EXIT_TIMEOUT = 3,
  EXIT_CONNECT = 4,
  EXIT_ERROR = 5,
  EXIT_NO_COMMAND = 6,
  EXIT_WATCHDOG = 124
};

static const char usage_text[] =
    "usage: interopworker hold CONNECT PATH ID [TIMEOUT_MS]\n"
    "       interopworker count CONNECT PATH ID N COUNTERFILE\n"
    "       interopworker loop CONNECT PATH SECONDS [ID]\n";

static int peer_timeout_ms;

/* A whole non-negative number, or -1. */
static long parse_count(const char *s) {
  char *end;
  errno = 0;
  long n = strtol(s, &end, 10);
  return errno || end == s || *end || n < 0 || n > INT_MAX ? -1 : n;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  putchar('\n');
  fflush(stdout);
}

/* Wait for any line (or end of input); returns an exit code. */
static int wait_for_command(char *line, size_t size) {
  if (peer_read_line(line, size, peer_timeout_ms) < 0) {
    fprintf(stderr, "interopworker: no command within %d ms: %s\n",
            peer_timeout_ms, strerror(errno));
    return EXIT_NO_COMMAND;
  }
  return EXIT_OK;
}

/* ------------------------------------------------------------ the lock */

static int acquire_or_report(zkrc_lock *lk, int timeout_ms) {
  int rc = zkrc_lock_acquire(lk, timeout_ms);
  if (rc == ZKRC_OK)
    return EXIT_OK;
  if (rc == ZKRC_ETIMEDOUT || rc == ZKRC_ELOCKED) {
    say("timeout");
    return EXIT_TIMEOUT;
  }
  fprintf(stderr, "interopworker: acquire: %s\n", zkrc_strerror(rc));
  return EXIT_ERROR;
}

static int release_or_report(zkrc_lock *lk) {
  int rc = zkrc_lock_release(lk);
  if (rc == ZKRC_OK)
    return EXIT_OK;
  fprintf(stderr, "interopworker: release: %s\n", zkrc_strerror(rc));
  return EXIT_ERROR;
}

static int print_participants(zkrc_lock *lk) {
  char **ids = NULL;
  int rc = zkrc_lock_participants(lk, &ids, NULL, peer_timeout_ms);
  if (rc != ZKRC_OK) {
    fprintf(stderr, "interopworker: participants: %s\n", zkrc_strerror(rc));
    return EXIT_ERROR;
  }
  fputs("participants ", stdout);
  for (size_t i = 0; ids[i]; i++)
    printf("%s%s", i ? "," : "", ids[i]);
  say("%s", "");
  zkrc_strv_free(ids);
  return EXIT_OK;
}

static int hold(zkrc_lock *lk, int timeout_ms) {
  int code = acquire_or_report(lk, timeout_ms == 0 ? ZKRC_NO_WAIT : timeout_ms);
  if (code != EXIT_OK)
    return code;
  char *node = NULL;
  if (zkrc_lock_node(lk, &node) != ZKRC_OK) {
    zkrc_lock_release(lk);
    return EXIT_ERROR;
  }
  say("acquired %s", node);
  free(node);
  char line[256];
  while ((code = wait_for_command(line, sizeof line)) == EXIT_OK &&
         strcmp(line, "participants") == 0)
    if ((code = print_participants(lk)) != EXIT_OK)
      break;
  int rc = release_or_report(lk);
  if (code == EXIT_OK && rc == EXIT_OK)
    say("released");
  return code != EXIT_OK ? code : rc;
}

/* Warm up (one acquisition: the first one creates the directory), say
 * "ready" and wait for the start line. */
static int warm_up_and_wait(zkrc_lock *lk) {
  int code = acquire_or_report(lk, peer_timeout_ms);
  if (code != EXIT_OK)
    return code;
  if ((code = release_or_report(lk)) != EXIT_OK)
    return code;
  say("ready");
  char line[256];
  return wait_for_command(line, sizeof line);
}

static int read_counter(const char *file, long *value) {
  char buf[64];
  int fd = open(file, O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) {
    *value = 0;
    return 0;
  }
  if (fd < 0)
    return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n < 0)
    return -1;
  buf[n] = '\0';
  char *end;
  *value = strtol(buf, &end, 10);
  while (*end == ' ' || *end == '\n')
    end++;
  return *end ? -1 : 0;
}

static int write_file(const char *file, int flags, const char *text) {
  int fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC | flags, 0644);
  if (fd < 0)
    return -1;
  size_t len = strlen(text);
  ssize_t n = write(fd, text, len);
  int rc = close(fd);
  return n == (ssize_t)len && rc == 0 ? 0 : -1;
}

/* One guarded read-modify-write of the counter, traced. */
static int bump_counter(const char *file, const char *trace, const char *id) {
  long value;
  if (read_counter(file, &value) != 0) {
    fprintf(stderr, "interopworker: cannot read counter %s\n", file);
    return EXIT_ERROR;
  }
  /* Widen the window a lost update would need. */
  struct timespec ms = {0, 1000000};
  nanosleep(&ms, NULL);
  char text[32], line[300];
  snprintf(text, sizeof text, "%ld", value + 1);
  snprintf(line, sizeof line, "%s\n", id);
  if (write_file(file, O_TRUNC, text) != 0 ||
      write_file(trace, O_APPEND, line) != 0) {
    fprintf(stderr, "interopworker: cannot write %s: %s\n", file,
            strerror(errno));
    return EXIT_ERROR;
  }
  return EXIT_OK;
}

static int count(zkrc_lock *lk, const char *id, long n, const char *file) {
  char trace[PATH_MAX];
  if (snprintf(trace, sizeof trace, "%s.trace", file) >= (int)sizeof trace)
    return EXIT_USAGE;
  int code = warm_up_and_wait(lk);
  for (long i = 0; code == EXIT_OK && i < n; i++) {
    if ((code = acquire_or_report(lk, peer_timeout_ms)) != EXIT_OK)
      break;
    code = bump_counter(file, trace, id);
    int rc = release_or_report(lk);
    if (code == EXIT_OK)
      code = rc;
  }
  if (code == EXIT_OK)
    say("done %ld", n);
  return code;
}

static int loop(zkrc_lock *lk, long seconds) {
  int code = warm_up_and_wait(lk);
  if (code != EXIT_OK)
    return code;
  size_t cap = 1 << 16, n = 0;
  int64_t *acq = malloc(cap * sizeof *acq), *cyc = malloc(cap * sizeof *cyc);
  if (!acq || !cyc) {
    free(acq);
    free(cyc);
    return EXIT_ERROR;
  }
  int64_t start = peer_now_ns(), now = start;
  int64_t end = start + seconds * 1000000000;
  while (now < end) {
    if (n == cap) {
      cap *= 2;
      int64_t *a = realloc(acq, cap * sizeof *acq);
      if (a)
        acq = a;
      int64_t *c = a ? realloc(cyc, cap * sizeof *cyc) : NULL;
      if (c)
        cyc = c;
      if (!a || !c) {
        code = EXIT_ERROR;
        break;
      }
    }
    if ((code = acquire_or_report(lk, peer_timeout_ms)) != EXIT_OK)
      break;
    int64_t held = peer_now_ns();
    if ((code = release_or_report(lk)) != EXIT_OK)
      break;
    int64_t done = peer_now_ns();
    acq[n] = held - now;
    cyc[n] = done - now;
    n++;
    now = done;
  }
  if (code == EXIT_OK) {
    double secs = (double)(now - start) / 1e9;
    say("done ops=%zu secs=%.3f ops_per_sec=%.1f acquire_p50_us=%ld "
        "acquire_p99_us=%ld cycle_p50_us=%ld cycle_p99_us=%ld",
        n, secs, (double)n / secs, peer_quantile_us(acq, n, 0.50),
        peer_quantile_us(acq, n, 0.99), peer_quantile_us(cyc, n, 0.50),
        peer_quantile_us(cyc, n, 0.99));
  }
  free(acq);
  free(cyc);
  return code;
}

/* ----------------------------------------------------------------- main */

static int usage(void) {
  fputs(usage_text, stderr);
  return EXIT_USAGE;
}

int main(int argc, char **argv) {
  peer_init("interopworker");
  if (argc < 5)
    return usage();
  const char *mode = argv[1], *hosts = argv[2], *path = argv[3];
  long lifetime = peer_env_long("ZKR_PEER_LIFETIME_S", 300), number = 0;
  int is_hold = strcmp(mode, "hold") == 0;
  int is_count = strcmp(mode, "count") == 0;
  int is_loop = strcmp(mode, "loop") == 0;
  if (is_hold && (argc == 5 || argc == 6))
    number = argc == 6 ? parse_count(argv[5]) : 0;
  else if (is_count && argc == 7)
    number = parse_count(argv[5]);
  else if (is_loop && (argc == 5 || argc == 6))
    number = parse_count(argv[4]);
  else
    return usage();
  if (number < 0 || (is_loop && number == 0))
    return usage();
  if (is_loop)
    lifetime += number;
  peer_timeout_ms = (int)peer_env_long("ZKR_PEER_TIMEOUT_MS", 60000);
  int hold_timeout = is_hold && argc == 6 ? (int)number : peer_timeout_ms;
  const char *id = is_loop ? (argc == 6 ? argv[5] : "zkrecipes-loop") : argv[4];

  if (peer_arm_watchdog(lifetime, EXIT_WATCHDOG) != 0)
    return EXIT_ERROR;
  signal(SIGPIPE, SIG_IGN);
  zkrc_log_from_env();

  zkrc_session_options so;
  zkrc_session_options_init(&so);
  so.session_timeout_ms = (int)peer_env_long("ZKR_PEER_SESSION_MS", 10000);
  so.connect_timeout_ms = peer_timeout_ms;
  zkrc_session *s = NULL;
  int rc = zkrc_session_connect(&s, hosts, &so);
  if (rc != ZKRC_OK) {
    fprintf(stderr, "interopworker: connect %s: %s\n", hosts,
            zkrc_strerror(rc));
    return rc == ZKRC_EINVAL ? EXIT_USAGE : EXIT_CONNECT;
  }
  zkrc_lock_options lo;
  zkrc_lock_options_init(&lo);
  lo.participant_id = id;
  zkrc_lock *lk = NULL;
  rc = zkrc_lock_new(&lk, s, path, &lo);
  int code;
  if (rc != ZKRC_OK) {
    fprintf(stderr, "interopworker: lock %s: %s\n", path, zkrc_strerror(rc));
    code = rc == ZKRC_EINVAL ? EXIT_USAGE : EXIT_ERROR;
  } else if (is_hold) {
    code = hold(lk, hold_timeout);
  } else if (is_count) {
    code = count(lk, id, number, argv[6]);
  } else {
    code = loop(lk, number);
  }
  zkrc_lock_free(lk);
  zkrc_session_close(s);
  return code;
}
