/*
 * What every chaos worker process shares (chaos_worker.h).
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "chaos_worker.h"

int log_fd = -1;
chaos_slot *slot;
chaos_slot *slots;
volatile sig_atomic_t stopping;

void record_at(int64_t t, const char *fmt, ...) {
  char buf[512];
  int n = snprintf(buf, sizeof buf, "%" PRId64 " ", t);
  va_list ap;
  va_start(ap, fmt);
  n += vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
  va_end(ap);
  if (n > (int)sizeof buf - 2)
    n = (int)sizeof buf - 2;
  buf[n++] = '\n';
  (void)!write(log_fd, buf, (size_t)n);
}

void set_phase(int phase) {
  __atomic_store_n(&slot->phase, phase, __ATOMIC_RELEASE);
}

void progress(void) {
  __atomic_store_n(&slot->progress_us, chaos_now_us(), __ATOMIC_RELEASE);
}

int env_int(const char *name, int fallback) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : fallback;
}

void record_session_event(zkrc_session *s, zkrc_session_event_type ev) {
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

chaos_slot *next_other_worker(int *i) {
  for (int empty = 0; *i < CHAOS_MAX_INSTANCES && empty < 32;) {
    chaos_slot *o = &slots[(*i)++];
    if (__atomic_load_n(&o->pid, __ATOMIC_ACQUIRE) == 0) {
      empty++;
      continue;
    }
    empty = 0;
    if (o != slot)
      return o;
  }
  return NULL;
}

void control_done(int made, int64_t what) {
  __atomic_store_n(&slot->control_waiting, 0, __ATOMIC_RELEASE);
  if (made >= 0)
    __atomic_add_fetch(made ? &slot->control_made : &slot->control_missed, 1,
                       __ATOMIC_ACQ_REL);
  record("CONTROL %s %" PRId64,
         made > 0 ? "made"
         : made   ? "stopped"
                  : "missed",
         what);
}

static void on_term(int sig) {
  (void)sig;
  stopping = 1;
}

static chaos_slot *map_slots(const char *file) {
  int fd = open(file, O_RDWR | O_CLOEXEC);
  if (fd < 0)
    return NULL;
  void *p = mmap(NULL, sizeof(chaos_slot) * CHAOS_MAX_INSTANCES,
                 PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  return p == MAP_FAILED ? NULL : (chaos_slot *)p;
}

int chaos_worker_start(const char *name, const char *logfile,
                       const char *statusfile, int instance, int32_t kind) {
  log_fd = open(logfile, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  slots = map_slots(statusfile);
  if (log_fd < 0 || slots == NULL) {
    fprintf(stderr, "%s: %s / %s: %s\n", name, logfile, statusfile,
            strerror(errno));
    return 2;
  }
  slot = slots + instance;
  slot->kind = kind;
  __atomic_store_n(&slot->pid, (int32_t)getpid(), __ATOMIC_RELEASE);
  progress();
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_term;
  sa.sa_flags = SA_RESTART; /* the ZooKeeper client's threads see it too */
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  record("START %d", (int)getpid());
  return 0;
}
