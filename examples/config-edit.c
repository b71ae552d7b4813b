/*
 * zkr-config-edit: change settings of the configuration that
 * zkr-config-daemon follows, without ever losing someone else's change.
 *
 *   zkr-config-edit zk1:2181 /config/payments workers=8 --delete debug
 *
 * A read-modify-write with compare-and-set (zkrecipes/shared.h): read the
 * text with its version (zkrc_shared_value_get()), apply the edits, and
 * write only if the node is still at that version
 * (zkrc_shared_value_try_set()).  When another editor wrote in between,
 * nothing is written and the call says ZKRC_EBADVERSION: read again, apply
 * the edits again to what is there now, and try again after a short random
 * pause (growing, a bounded number of times).  A plain read-then-write
 * would instead write over the other editor's change: a lost update.
 *
 * When the connection is lost during the write, whether it happened is not
 * known: the editor says so and exits 1.  Running it again is safe, since
 * setting and deleting keys are idempotent.
 *
 * Two options exist for the tests only (tests/test_config_daemon.c):
 * --plain-set writes without the compare, to show that lost update;
 * --pause-after-read waits between the first read and the write until its
 * standard input ends, so that a test can make another editor write in
 * that window, on cue.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zkrecipes.h>
#include <zkrecipes/shared.h>

#include "config-text.h"

#define MAX_ATTEMPTS 30 /* writes tried before giving up */
#define CALL_TIMEOUT_MS 5000

/* One edit: set key to value, or delete key (value NULL). */
typedef struct edit {
  const char *key;
  const char *value;
} edit;

typedef struct request {
  const char *hosts, *path;
  edit *edits;
  int n_edits;
  int plain_set, pause_after_read;
} request;

static int usage(const char *why) {
  fprintf(stderr,
          "zkr-config-edit: %s\n"
          "usage: zkr-config-edit HOSTS PATH EDIT...\n"
          "  EDIT: KEY=VALUE (set) or --delete KEY\n"
          "  for tests only: --plain-set (no compare-and-set: loses "
          "concurrent edits),\n"
          "  --pause-after-read (wait for stdin to end before writing)\n",
          why);
  return 2;
}

/* Fill @p r from the command line (KEY=VALUE split in place); 0 when it
 * is valid. */
static int parse_args(int argc, char **argv, request *r) {
  int positional = 0;
  for (int i = 1; i < argc; i++) {
    char *a = argv[i], *eq = strchr(a, '=');
    if (strcmp(a, "--plain-set") == 0)
      r->plain_set = 1;
    else if (strcmp(a, "--pause-after-read") == 0)
      r->pause_after_read = 1;
    else if (strcmp(a, "--delete") == 0 && i + 1 < argc)
      r->edits[r->n_edits++] = (edit){argv[++i], NULL};
    else if (a[0] == '-')
      return -1;
    else if (positional < 2)
      *(positional++ == 0 ? &r->hosts : &r->path) = a;
    else if (eq != NULL) {
      *eq = '\0';
      r->edits[r->n_edits++] = (edit){a, eq + 1};
    } else
      return -1;
  }
  for (int i = 0; i < r->n_edits; i++)
    if (!config_key_valid(r->edits[i].key) ||
        (r->edits[i].value && strchr(r->edits[i].value, '\n')))
      return -1;
  return positional == 2 && r->n_edits > 0 ? 0 : -1;
}

/* Apply the edits to @p c; 0, or -1 when out of memory. */
static int apply_edits(config *c, const request *r) {
  for (int i = 0; i < r->n_edits; i++)
    if (r->edits[i].value == NULL)
      config_delete(c, r->edits[i].key);
    else if (config_set(c, r->edits[i].key, r->edits[i].value) != 0)
      return -1;
  return 0;
}

/* Before retrying: 1 ms doubling up to 64 ms, each time a random part of
 * it, so that two editors that collided do not collide again in step. */
static void back_off(int attempt) {
  long ms = 1L << (attempt < 7 ? attempt - 1 : 6);
  long ns = ms * 1000000L / 2 + rand() % (ms * 1000000L / 2 + 1);
  struct timespec t = {ns / 1000000000L, ns % 1000000000L};
  nanosleep(&t, NULL);
}

/* For the tests: hold still between read and write until stdin ends. */
static void pause_until_stdin_ends(int32_t version) {
  fprintf(stderr,
          "zkr-config-edit: read version %" PRId32
          "; waiting for stdin to end\n",
          version);
  char buf[64];
  while (read(0, buf, sizeof buf) > 0)
    ;
}

/* One read-modify-write.  ZKRC_OK with *written set, ZKRC_EBADVERSION when
 * another editor wrote first, or another error (*why says more when the
 * text itself is the problem). */
static int edit_once(zkrc_session *s, const request *r, int attempt,
                     int32_t *written, char *why, size_t why_size) {
  zkrc_versioned_value v = {NULL, 0, 0};
  /* A missing node is created empty ("" as the seed). */
  int rc = zkrc_shared_value_get(s, r->path, "", 0, &v, CALL_TIMEOUT_MS);
  if (rc != ZKRC_OK)
    return rc;
  config c = {NULL, 0};
  char *text = NULL;
  if (config_parse(v.data, v.len, &c, why, why_size) != 0) {
    rc = ZKRC_EBADNODE;
  } else {
    text = apply_edits(&c, r) == 0 ? config_format(&c) : NULL;
    rc = text ? ZKRC_OK : ZKRC_ENOMEM;
  }
  if (rc == ZKRC_OK && r->pause_after_read && attempt == 1)
    pause_until_stdin_ends(v.version);
  if (rc == ZKRC_OK && r->plain_set) {
    rc = zkrc_shared_value_set(s, r->path, text, strlen(text), CALL_TIMEOUT_MS);
    *written = -1; /* a plain set does not tell */
  } else if (rc == ZKRC_OK) {
    rc = zkrc_shared_value_try_set(s, r->path, v.version, text, strlen(text),
                                   written, CALL_TIMEOUT_MS);
    if (rc == ZKRC_EBADVERSION)
      fprintf(stderr,
              "zkr-config-edit: version %" PRId32
              " was changed by someone else; reading again\n",
              v.version);
  }
  free(text);
  config_clear(&c);
  zkrc_versioned_value_clear(&v);
  return rc;
}

/* Read-modify-write until a write lands on the version it read, at most
 * MAX_ATTEMPTS times; *conflicts counts the writes that did not. */
static int edit_until_written(zkrc_session *s, const request *r,
                              int32_t *written, int *conflicts, char *why,
                              size_t why_size) {
  for (int attempt = 1;; attempt++) {
    int rc = edit_once(s, r, attempt, written, why, why_size);
    if (rc != ZKRC_EBADVERSION || attempt == MAX_ATTEMPTS)
      return rc;
    ++*conflicts;
    back_off(attempt);
  }
}

int main(int argc, char **argv) {
  request r = {NULL, NULL, calloc((size_t)argc, sizeof(edit)), 0, 0, 0};
  if (r.edits == NULL || parse_args(argc, argv, &r) != 0) {
    free(r.edits);
    return usage("need HOSTS, PATH and at least one valid edit");
  }
  srand((unsigned)getpid() ^ (unsigned)time(NULL));

  zkrc_session_options so;
  zkrc_session_options_init(&so);
  so.connect_timeout_ms = CALL_TIMEOUT_MS;
  zkrc_session *s = NULL;
  int rc = zkrc_session_connect(&s, r.hosts, &so);
  int32_t written = 0;
  int conflicts = 0;
  char why[160] = "";
  if (rc == ZKRC_OK)
    rc = edit_until_written(s, &r, &written, &conflicts, why, sizeof why);
  zkrc_session_close(s);
  free(r.edits);
  if (rc == ZKRC_EBADNODE) {
    fprintf(stderr, "zkr-config-edit: %s does not parse (%s): not editing\n",
            r.path, why);
    return 1;
  } else if (rc != ZKRC_OK) {
    int unknown = rc == ZKRC_ECONNLOSS || rc == ZKRC_ETIMEDOUT;
    fprintf(stderr, "zkr-config-edit: %s%s\n", zkrc_strerror(rc),
            unknown ? " (written or not: run it again)" : "");
    return 1;
  }
  if (written < 0)
    printf("written without compare-and-set\n");
  else
    printf("wrote version %" PRId32 " (%d conflict%s)\n", written, conflicts,
           conflicts == 1 ? "" : "s");
  return 0;
}
