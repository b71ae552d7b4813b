/*
 * zkr-worker: a pool of worker daemons that find each other and split a
 * list of work items among themselves, each item worked on by exactly one
 * of them, and moved to the others when a worker stops or dies.
 *
 *   zkr-worker zk1:2181,zk2:2181 /pools/mail a queue-1 queue-2 queue-3 ...
 *   zkr-worker zk1:2181,zk2:2181 /pools/mail b queue-1 queue-2 queue-3 ...
 *
 * Every worker is started with the same PATH and ITEMs and an ID of its
 * own.  It uses two recipes:
 *  - group membership (zkrecipes/group.h) under PATH/members: its node
 *    ID holds "pid P on HOST", and the group's view says who is in the
 *    pool; the worker logs it whenever it changes;
 *  - a set partitioner (zkrecipes/partitioner.h) under PATH/work over the
 *    ITEMs: once the pool has been still for the time boundary, each worker
 *    is told ACQUIRED with its share, held under one lock per item.  When
 *    the pool changes it is told RELEASE: it stops working on its items
 *    and only then confirms (zkrc_partitioner_release_set()), so that no
 *    item is ever worked on twice.  FAILURE (the session's lease ran out:
 *    the items may go to others) is final for that partitioner: the worker
 *    stops and joins again with a new one.
 *
 * The "work" here is only a log line naming the items a worker now works
 * on ("working on: ...") and one when it stops ("stopped working on:
 * ..."); a real worker would start and stop its consumers there.
 *
 * Threads: the recipes' callbacks run on the session's callback thread, one
 * at a time.  The main thread waits for a signal or a FAILURE, and makes and
 * frees partitioners (which blocks, so never on that callback thread).  A
 * mutex guards what both touch.
 *
 * One option exists for the tests only (tests/test_worker_pool.c):
 * --keep-items-on-release confirms a RELEASE without stopping the work, the
 * bug the test's "each item owned once" check must catch.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zkrecipes.h>
#include <zkrecipes/group.h>
#include <zkrecipes/partitioner.h>

#define MAX_ITEMS 1024
#define ITEMS_TEXT 4096 /* a log line's list of items */

typedef struct worker {
  const char *id;
  const char *const *items; /* all of them, from the command line */
  size_t n_items;
  int time_boundary_ms;
  int keep_items_on_release; /* the tests' control: the bug */

  pthread_mutex_t mu; /* guards what follows */
  pthread_cond_t changed;
  char *working[MAX_ITEMS]; /* the items worked on now */
  size_t n_working;
  int stopping; /* no new work: a signal came, or a FAILURE */
  int signal;   /* which one, once it came */
  int failed;   /* FAILURE: 1, join again; 2, for good (closed, refused) */

  int pool_read; /* the group's first view is in (see on_member()) */
} worker;

static const char *me = "?"; /* the worker's id, for say() */

/* One timestamped line on stderr. */
static void say(const char *fmt, ...) {
  struct timespec now;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &now);
  localtime_r(&now.tv_sec, &tm);
  char line[ITEMS_TEXT + 256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%02d:%02d:%02d.%03ld zkr-worker[%s]: %s\n", tm.tm_hour,
          tm.tm_min, tm.tm_sec, now.tv_nsec / 1000000, me, line);
}

/* @p items joined by blanks into @p out ("nothing" when there are none). */
static const char *join(char *out, size_t size, const char *const *items,
                        size_t n) {
  size_t used = 0;
  out[0] = '\0';
  for (size_t i = 0; i < n && used < size; i++)
    used += (size_t)snprintf(out + used, size - used, "%s%s", i ? " " : "",
                             items[i]);
  return n ? out : "nothing";
}

/* ================================================================ the work */

/* Start working on @p items, besides what is worked on already (nothing,
 * unless a RELEASE was not obeyed).  Caller holds w->mu. */
static void start_work(worker *w, const char *const *items, size_t n) {
  for (size_t i = 0; i < n && w->n_working < MAX_ITEMS; i++)
    w->working[w->n_working++] = strdup(items[i]);
  char text[ITEMS_TEXT];
  say("working on: %s",
      join(text, sizeof text, (const char *const *)w->working, w->n_working));
}

/* Stop working on every item (@p why: what made us).  Caller holds w->mu. */
static void stop_work(worker *w, const char *why) {
  if (w->n_working == 0)
    return;
  char text[ITEMS_TEXT];
  say("stopped working on: %s (%s)",
      join(text, sizeof text, (const char *const *)w->working, w->n_working),
      why);
  for (size_t i = 0; i < w->n_working; i++)
    free(w->working[i]);
  w->n_working = 0;
}

/* ========================================================= the partitioner */

static void on_partition(zkrc_partitioner *p, const zkrc_partitioner_event *ev,
                         void *arg) {
  worker *w = arg;
  pthread_mutex_lock(&w->mu);
  switch (ev->type) {
  case ZKRC_PARTITIONER_ALLOCATING:
    say("allocating: waiting for the pool to be still for %d ms",
        w->time_boundary_ms);
    break;
  case ZKRC_PARTITIONER_ACQUIRED:
    if (!w->stopping)
      start_work(w, ev->items, ev->count);
    break;
  case ZKRC_PARTITIONER_RELEASE:
    /* Stop first, confirm after: the locks go only now. */
    if (!w->keep_items_on_release)
      stop_work(w, "the pool changed");
    zkrc_partitioner_release_set(p);
    break;
  case ZKRC_PARTITIONER_FAILURE:
    say("partitioner failed: %s", zkrc_strerror(ev->reason));
    stop_work(w, "partitioner failed");
    /* For good when no new partitioner can do better. */
    w->failed = ev->reason == ZKRC_ECLOSED || ev->reason == ZKRC_ENOAUTH ||
                        ev->reason == ZKRC_EAUTHFAILED
                    ? 2
                    : 1;
    pthread_cond_broadcast(&w->changed);
    break;
  }
  pthread_mutex_unlock(&w->mu);
}

/* Join the work's party; on failure, wait and try again (1 s doubling to
 * 30 s) until it works or a signal comes.  NULL after a signal, or when
 * the session is closed for good. */
static zkrc_partitioner *join_work(worker *w, zkrc_session *s,
                                   const char *path) {
  zkrc_partitioner_options o;
  zkrc_partitioner_options_init(&o);
  o.identifier = w->id;
  o.time_boundary_ms = w->time_boundary_ms;
  o.on_event = on_partition;
  o.event_arg = w;
  int pause_ms = 1000;
  for (;;) {
    zkrc_partitioner *p = NULL;
    int rc = zkrc_partitioner_new(&p, s, path, w->items, w->n_items, &o);
    if (rc == ZKRC_OK)
      return p;
    say("cannot join %s: %s", path, zkrc_strerror(rc));
    if (rc == ZKRC_ECLOSED || rc == ZKRC_EINVAL || rc == ZKRC_ENOAUTH)
      return NULL;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += pause_ms / 1000;
    pthread_mutex_lock(&w->mu);
    while (!w->stopping &&
           pthread_cond_timedwait(&w->changed, &w->mu, &until) != ETIMEDOUT)
      ;
    int stopping = w->stopping;
    pthread_mutex_unlock(&w->mu);
    if (stopping)
      return NULL;
    pause_ms = pause_ms < 16000 ? pause_ms * 2 : 30000;
  }
}

/* ================================================================ the pool */

/* Log the pool as the group's view has it now. */
static void say_pool(zkrc_group *g) {
  zkrc_group_member *m = NULL;
  size_t n = 0;
  if (zkrc_group_members(g, &m, &n) != ZKRC_OK)
    return;
  const char *ids[MAX_ITEMS];
  for (size_t i = 0; i < n && i < MAX_ITEMS; i++)
    ids[i] = m[i].id;
  char text[ITEMS_TEXT];
  say("pool: %s", join(text, sizeof text, ids, n < MAX_ITEMS ? n : MAX_ITEMS));
  zkrc_group_members_free(m, n);
}

/* The group's events.  The first view is logged whole once read
 * (INITIALIZED); after it, each member joining or leaving. */
static void on_member(zkrc_group *g, const zkrc_group_event *ev, void *arg) {
  worker *w = arg; /* pool_read: only this callback touches it */
  const zkrc_group_member *m = ev->member;
  switch (ev->type) {
  case ZKRC_GROUP_INITIALIZED:
    w->pool_read = 1;
    say_pool(g);
    break;
  case ZKRC_GROUP_JOINED:
  case ZKRC_GROUP_LEFT:
    if (!w->pool_read)
      break;
    say("%s %s the pool (%s)", m->id,
        ev->type == ZKRC_GROUP_JOINED ? "joined" : "left",
        m->data ? m->data : "");
    say_pool(g);
    break;
  case ZKRC_GROUP_REGISTERED:
    say("in the pool as %s", zkrc_group_id(g));
    break;
  case ZKRC_GROUP_LOST:
    say("maybe out of the pool (trying to join it again)");
    break;
  case ZKRC_GROUP_UPDATED:
  case ZKRC_GROUP_CLOSED:
    break;
  }
}

/* ================================================================= main */

/* Waits for SIGINT or SIGTERM (blocked in every other thread). */
static void *wait_for_signal(void *arg) {
  worker *w = arg;
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  int sig = 0;
  sigwait(&stop, &sig);
  pthread_mutex_lock(&w->mu);
  w->stopping = 1;
  w->signal = sig;
  pthread_cond_broadcast(&w->changed);
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

static int usage(void) {
  fprintf(stderr,
          "usage: zkr-worker [--session-timeout MS] [--time-boundary MS] "
          "HOSTS PATH ID ITEM...\n"
          "  joins the pool PATH as ID and works on its share of the ITEMs\n"
          "  (defaults: session timeout 10000 ms, time boundary 2000 ms)\n"
          "  for tests only: --keep-items-on-release (does not stop its\n"
          "  work on RELEASE)\n");
  return 2;
}

int main(int argc, char **argv) {
  worker w = {.time_boundary_ms = 2000};
  int session_timeout_ms = 10000;
  static const struct option options[] = {
      {"session-timeout", required_argument, NULL, 's'},
      {"time-boundary", required_argument, NULL, 'b'},
      {"keep-items-on-release", no_argument, NULL, 'K'},
      {NULL, 0, NULL, 0}};
  for (int c; (c = getopt_long(argc, argv, "+s:b:", options, NULL)) != -1;) {
    if (c == 's')
      session_timeout_ms = atoi(optarg);
    else if (c == 'b')
      w.time_boundary_ms = atoi(optarg);
    else if (c == 'K')
      w.keep_items_on_release = 1;
    else
      return usage();
  }
  if (argc - optind < 4 || argc - optind - 3 > MAX_ITEMS)
    return usage();
  const char *hosts = argv[optind], *pool = argv[optind + 1];
  me = w.id = argv[optind + 2];
  w.items = (const char *const *)argv + optind + 3;
  w.n_items = (size_t)(argc - optind - 3);
  pthread_mutex_init(&w.mu, NULL);
  pthread_cond_init(&w.changed, NULL);

  /* SIGINT and SIGTERM blocked before any thread starts (threads inherit
   * the mask): only wait_for_signal() takes them. */
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, NULL);
  pthread_t signal_thread;
  pthread_create(&signal_thread, NULL, wait_for_signal, &w);

  char members[1024], work[1024], data[300], host[256] = "";
  snprintf(members, sizeof members, "%s/members", pool);
  snprintf(work, sizeof work, "%s/work", pool);
  gethostname(host, sizeof host - 1);
  snprintf(data, sizeof data, "pid %ld on %s", (long)getpid(), host);

  zkrc_session_options so;
  zkrc_session_options_init(&so);
  so.session_timeout_ms = session_timeout_ms;
  zkrc_session *s = NULL;
  zkrc_group *g = NULL;
  zkrc_group_options go;
  zkrc_group_options_init(&go);
  go.on_event = on_member;
  go.event_arg = &w;
  go.id = w.id;
  go.data = data;
  go.data_len = strlen(data);
  int rc = zkrc_session_connect(&s, hosts, &so);
  if (rc == ZKRC_OK)
    rc = zkrc_group_new(&g, s, members, &go);
  if (rc != ZKRC_OK) {
    say("cannot join %s: %s", members, zkrc_strerror(rc));
    zkrc_session_close(s);
    return 1;
  }
  say("joining %s with %zu items (%s)", pool, w.n_items, data);

  /* Work until a signal; after a FAILURE, join again. */
  int status = 0;
  for (;;) {
    zkrc_partitioner *p = join_work(&w, s, work);
    pthread_mutex_lock(&w.mu);
    while (p && !w.stopping && !w.failed)
      pthread_cond_wait(&w.changed, &w.mu);
    if (w.signal)
      say("stopping (%s)", w.signal == SIGINT ? "SIGINT" : "SIGTERM");
    w.stopping = 1; /* p's last callbacks start no work */
    stop_work(&w, "stopping");
    int joined = p != NULL, signalled = w.signal != 0;
    int again = w.failed == 1 && !signalled;
    joined = joined && w.failed != 2;
    w.failed = 0;
    pthread_mutex_unlock(&w.mu);
    zkrc_partitioner_free(p); /* its locks go now that the work stopped */
    if (!again) {
      status = !joined && !signalled; /* could not join for good */
      break;
    }
    say("joining %s again with a new partitioner", work);
    pthread_mutex_lock(&w.mu);
    w.stopping = w.signal != 0; /* one may have come meanwhile */
    pthread_mutex_unlock(&w.mu);
  }

  zkrc_group_free(g); /* leave the pool */
  zkrc_session_close(s);
  if (status != 0) /* the signal thread still waits: end it */
    pthread_kill(signal_thread, SIGTERM);
  pthread_join(signal_thread, NULL);
  say("stopped");
  return status;
}
