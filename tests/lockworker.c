/*
 * lockworker: a separate process contending for a zkrecipes lock, exec'd by
 * the lock tests.
 *
 *   lockworker count HOSTS PATH ITERATIONS COUNTERFILE [HOLDLOG]
 *       ITERATIONS times: acquire, read the counter, sleep, write it + 1,
 *       append the hold to HOLDLOG ("PID TOKEN ACQUIRED END", the format
 *       of zkt_read_hold_log() in holds.h: the test judges overlaps and
 *       tokens with the shared checker), release.  Exit 0, or 4 on a lock
 *       error.
 *   lockworker hold HOSTS PATH
 *       acquire, print "held TOKEN SESSIONID\n", wait until stdin closes or
 *       a line arrives, release, exit 0.
 *
 * The session timeout is ZKT_WORKER_TIMEOUT_MS (default 2000).
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zkrecipes.h>

#include "holds.h"

static zkrc_session *connect_or_die(const char *hosts) {
  zkrc_session_options o;
  zkrc_session_options_init(&o);
  const char *t = getenv("ZKT_WORKER_TIMEOUT_MS");
  o.session_timeout_ms = t ? atoi(t) : 2000;
  o.connect_timeout_ms = 15000;
  zkrc_session *s = NULL;
  int rc = zkrc_session_connect(&s, hosts, &o);
  if (rc != ZKRC_OK) {
    fprintf(stderr, "lockworker: connect: %s\n", zkrc_strerror(rc));
    exit(4);
  }
  return s;
}

static int read_counter(const char *file) {
  FILE *f = fopen(file, "r");
  int value = 0;
  if (f) {
    if (fscanf(f, "%d", &value) != 1)
      value = 0;
    fclose(f);
  }
  return value;
}

static int write_counter(const char *file, int value) {
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp.%d", file, (int)getpid());
  FILE *f = fopen(tmp, "w");
  if (f == NULL)
    return -1;
  fprintf(f, "%d\n", value);
  if (fclose(f) != 0)
    return -1;
  return rename(tmp, file);
}

/* One critical section, from @p acquired (when acquire returned).
 * Returns 0, or 4 when the counter could not be written. */
static int critical_section(zkrc_lock *lk, const char *counter,
                            int64_t acquired, FILE *holds) {
  int value = read_counter(counter);
  usleep(200); /* widen the window a lost update would need */
  if (write_counter(counter, value + 1) != 0) {
    perror("lockworker: write counter");
    return 4;
  }
  if (holds) {
    int64_t token = 0;
    zkrc_lock_token(lk, &token);
    /* Ends here, before release is called. */
    fprintf(holds, "%d %" PRId64 " %" PRId64 " %" PRId64 "\n", (int)getpid(),
            token, acquired, zkt_hold_now_us());
    fflush(holds);
  }
  return 0;
}

static int run_count(const char *hosts, const char *path, int iterations,
                     const char *counter, const char *holdlog) {
  zkrc_session *s = connect_or_die(hosts);
  zkrc_lock *lk = NULL;
  if (zkrc_lock_new(&lk, s, path, NULL) != ZKRC_OK)
    return 4;
  FILE *holds = holdlog ? fopen(holdlog, "a") : NULL;
  int status = 0;
  for (int i = 0; i < iterations && status == 0; i++) {
    int rc = zkrc_lock_acquire(lk, 60000);
    if (rc != ZKRC_OK) {
      fprintf(stderr, "lockworker %d: acquire: %s\n", (int)getpid(),
              zkrc_strerror(rc));
      status = 4;
      break;
    }
    status = critical_section(lk, counter, zkt_hold_now_us(), holds);
    rc = zkrc_lock_release(lk);
    if (rc != ZKRC_OK && status == 0) {
      fprintf(stderr, "lockworker: release: %s\n", zkrc_strerror(rc));
      status = 4;
    }
  }
  if (holds)
    fclose(holds);
  zkrc_lock_free(lk);
  zkrc_session_close(s);
  return status;
}

static int run_hold(const char *hosts, const char *path) {
  zkrc_session *s = connect_or_die(hosts);
  zkrc_lock *lk = NULL;
  if (zkrc_lock_new(&lk, s, path, NULL) != ZKRC_OK)
    return 4;
  int rc = zkrc_lock_acquire(lk, 60000);
  if (rc != ZKRC_OK) {
    fprintf(stderr, "lockworker: acquire: %s\n", zkrc_strerror(rc));
    return 4;
  }
  int64_t token = 0;
  zkrc_lock_token(lk, &token);
  printf("held %" PRId64 " %" PRIx64 "\n", token, (uint64_t)zkrc_session_id(s));
  fflush(stdout);
  char line[64];
  (void)!fgets(line, sizeof line, stdin); /* a line, or EOF */
  zkrc_lock_release(lk);
  zkrc_lock_free(lk);
  zkrc_session_close(s);
  return 0;
}

int main(int argc, char **argv) {
  zkrc_log_from_env();
  if (argc >= 6 && strcmp(argv[1], "count") == 0)
    return run_count(argv[2], argv[3], atoi(argv[4]), argv[5],
                     argc > 6 ? argv[6] : NULL);
  if (argc == 4 && strcmp(argv[1], "hold") == 0)
    return run_hold(argv[2], argv[3]);
  fprintf(stderr,
          "usage: lockworker count HOSTS PATH N COUNTERFILE [TOKENLOG]\n"
          "       lockworker hold HOSTS PATH\n");
  return 2;
}
