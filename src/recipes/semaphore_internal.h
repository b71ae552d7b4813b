/*
 * What the semaphore's files share (semaphore.c: the object, its
 * non-blocking acquisition and its leases; semaphore_wait.c: the blocking
 * acquisition on top of the non-blocking one).
 */
#ifndef ZKRC_SEMAPHORE_INTERNAL_H
#define ZKRC_SEMAPHORE_INTERNAL_H

#include <stdint.h>

#include <glib.h>

#include "recipes/stats_internal.h"
#include "zkrecipes/semaphore.h"

typedef enum lease_state {
  L_MUTEX, /* waiting for the internal mutex */
  L_LEASE, /* holds the mutex, waits for a lease */
  L_HELD,  /* holds a lease */
  L_DONE   /* failed, or released */
} lease_state;

struct zkrc_semaphore_lease {
  gint refs;
  zkrc_semaphore *sem; /* referenced */
  /* Guarded by sem->mu. */
  lease_state state;
  zkrc_lock_hold *mhold; /* the internal mutex's hold, until released */
  zkrc_lock_hold *lhold; /* the pool's hold, once asked for */
  gboolean cancelled;
  int64_t deadline; /* ZKRC__NEVER: none */
  gboolean no_wait;
  zkrc_semaphore_acquired_fn done;
  void *arg;
  int64_t asked_us, held_us; /* statistics */
};

struct zkrc_semaphore {
  gint refs;
  GMutex mu;
  zkrc_session *s; /* used only before the free */
  zkrc_lock *mutex, *pool;
  char *path; /* its directory */
  int max_leases;
  zkrc_semaphore_event_fn on_event;
  void *event_arg;
  GHashTable *live; /* leases not freed yet (a reference each) */
  gboolean freeing;
  zkrc__lock_stats stats; /* under mu; lost holds are the pool's */
};

zkrc_semaphore *zkrc__semaphore_ref(zkrc_semaphore *sem);
void zkrc__semaphore_unref(zkrc_semaphore *sem);

#endif /* ZKRC_SEMAPHORE_INTERNAL_H */
