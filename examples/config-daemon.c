/*
 * zkr-config-daemon: a service that takes its configuration from a
 * ZooKeeper node and applies every change at once, without restarting.
 *
 *   zkr-config-daemon zk1:2181,zk2:2181,zk3:2181 /config/payments
 *
 * The configuration is the text of one node ("key = value" lines,
 * config-text.h).  A shared watch (zkrc_shared_watch_new(),
 * zkrecipes/shared.h) tells the daemon the
 * node's value when it starts and again after each change.  The daemon
 * parses it, logs the version and what changed, and applies it.  A
 * configuration that does not parse is refused: the daemon says why and
 * keeps running with the last good one.  zkr-config-edit changes the node
 * without losing anyone else's change.
 *
 * Its callback runs on the session's callback thread, one call at a time,
 * and it alone touches the configuration: no mutex.  The main thread only
 * waits for SIGINT or SIGTERM.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <zkrecipes.h>
#include <zkrecipes/shared.h>

#include "config-text.h"

typedef struct service {
  config current;  /* the last good configuration */
  int32_t version; /* its node's version; -1 before the first one */
} service;

/* One timestamped line on stderr. */
static void say(const char *fmt, ...) {
  struct timespec now;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &now);
  localtime_r(&now.tv_sec, &tm);
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%02d:%02d:%02d.%03ld zkr-config-daemon: %s\n", tm.tm_hour,
          tm.tm_min, tm.tm_sec, now.tv_nsec / 1000000, line);
}

typedef struct changes {
  int added, changed, removed;
} changes;

/* What differs from @p before to @p after; each difference logged when
 * @p show.  (Linear lookups: a configuration is a few dozen settings.) */
static changes compare(const config *before, const config *after, int show) {
  changes n = {0, 0, 0};
  for (size_t i = 0; i < after->count; i++) {
    const config_entry *e = &after->entries[i];
    const char *was = config_get(before, e->key);
    if (was == NULL) {
      n.added++;
      if (show)
        say("  added   %s = %s", e->key, e->value);
    } else if (strcmp(was, e->value) != 0) {
      n.changed++;
      if (show)
        say("  changed %s = %s (was %s)", e->key, e->value, was);
    }
  }
  for (size_t i = 0; i < before->count; i++) {
    const config_entry *e = &before->entries[i];
    if (config_get(after, e->key) == NULL) {
      n.removed++;
      if (show)
        say("  removed %s (was %s)", e->key, e->value);
    }
  }
  return n;
}

/* The node's value: at the start, then after every change. */
static void on_value(zkrc_shared_watch *w, const zkrc_shared_watch_event *ev,
                     void *arg) {
  service *svc = arg;
  (void)w;
  if (ev->type != ZKRC_SHARED_WATCH_VALUE)
    return; /* connection news: on_session() says them */
  const zkrc_versioned_value *value = ev->value;
  if (value == NULL) {
    if (svc->version < 0)
      say("no configuration node yet: waiting for it");
    else
      say("configuration node deleted: keeping version %" PRId32, svc->version);
    return;
  }
  config next = {NULL, 0};
  char why[160];
  if (config_parse(value->data, value->len, &next, why, sizeof why) != 0) {
    if (svc->version < 0)
      say("version %" PRId32 " refused: %s; no configuration yet",
          value->version, why);
    else
      say("version %" PRId32 " refused: %s; keeping version %" PRId32,
          value->version, why, svc->version);
    return;
  }
  changes n = compare(&svc->current, &next, 0);
  const char *plural = next.count == 1 ? "" : "s";
  if (n.added + n.changed + n.removed == 0)
    say("version %" PRId32 ": %zu setting%s; no change", value->version,
        next.count, plural);
  else
    say("version %" PRId32 ": %zu setting%s; %d added, %d changed, %d removed",
        value->version, next.count, plural, n.added, n.changed, n.removed);
  compare(&svc->current, &next, 1);
  /* Here a real service would apply the settings that changed: resize a
   * pool, re-open a log file, move a listening port. */
  config_clear(&svc->current);
  svc->current = next;
  svc->version = value->version;
}

/* Connection news, on the same thread as on_value(). */
static void on_session(zkrc_session *s, const zkrc_session_event *ev,
                       void *arg) {
  const service *svc = arg;
  (void)s;
  if (ev->type == ZKRC_SESSION_EVENT_SUSPENDED)
    say("connection lost: keeping version %" PRId32 " until it is back",
        svc->version);
  else
    say("session %s", zkrc_session_event_name(ev->type));
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: zkr-config-daemon HOSTS PATH\n"
                    "  follows the configuration in the node PATH "
                    "(\"key = value\" lines)\n");
    return 2;
  }
  const char *hosts = argv[1], *path = argv[2];

  /* SIGINT and SIGTERM blocked here, before the library starts its
   * threads (which inherit the mask): only sigwait() below takes them. */
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, NULL);

  service svc = {{NULL, 0}, -1};
  zkrc_session_options so;
  zkrc_session_options_init(&so);
  so.on_event = on_session;
  so.event_arg = &svc;
  zkrc_session *s = NULL;
  zkrc_shared_watch *watch = NULL;
  int rc = zkrc_session_connect(&s, hosts, &so);
  zkrc_shared_watch_options wo;
  zkrc_shared_watch_options_init(&wo);
  wo.on_event = on_value;
  wo.event_arg = &svc;
  if (rc == ZKRC_OK)
    rc = zkrc_shared_watch_new(&watch, s, path, &wo);
  if (rc != ZKRC_OK) {
    say("cannot follow %s: %s", path, zkrc_strerror(rc));
    zkrc_session_close(s);
    return 1;
  }
  say("following %s", path);

  int sig = 0;
  sigwait(&stop, &sig);
  say("stopping (%s)", sig == SIGINT ? "SIGINT" : "SIGTERM");
  zkrc_shared_watch_free(watch); /* on_value() has returned for good */
  zkrc_session_close(s);
  if (svc.version < 0)
    say("stopped; no configuration was loaded");
  else
    say("stopped with version %" PRId32, svc.version);
  config_clear(&svc.current);
  return 0;
}
