/*
 * What the semaphore's files share (semaphore.c: the object, its
 * non-blocking acquisition and its leases; semaphore_wait.c: the blocking
 * acquisition on top of the non-blocking one).
 */
#ifndef ZKRC_SEMAPHORE_INTERNAL_H
#define ZKRC_SEMAPHORE_INTERNAL_H

#include <stdint.h>

#include <glib.h>

#include "core/object.h"
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
  /* Guarded by sem->o.mu. */
  lease_state state;
  zkrc_lock_hold *mhold; /* the internal mutex's hold, until released */
  zkrc_lock_hold *lhold; /* the pool's hold, once asked for */
  gboolean cancelled;
  int64_t deadline; /* ZKRC__NEVER: none */
  gboolean no_wait;
  zkrc_semaphore_acquired_fn done;
  void *arg;
  void (*arg_free)(void *arg); /* when the lease goes (may be NULL) */
  int64_t asked_us, held_us;   /* statistics */
};

struct zkrc_semaphore {
  /* References (the application's, each lease's, each member lock's free
   * in the background), its mutex, its events (the leases' completions and
   * events, told on the session's executor), closed (zkrc_semaphore_free)
   * and detached (zkrc_semaphore_free_async: pending while a member lock's
   * free has not told its end); first. */
  zkrc__object o;
  zkrc_session *s; /* the member locks' (alive while they are) */
  zkrc_lock *mutex, *pool;
  char *path; /* its directory */
  int max_leases;
  zkrc_semaphore_event_fn on_event;
  void *event_arg;
  GHashTable *live; /* leases not freed yet (a reference each) */
  /* The conditions of threads waiting in zkrc_semaphore_acquire() (on
   * their stacks): zkrc_semaphore_free() wakes them and waits until none
   * is left. */
  GSList *waiters;
  zkrc__lock_stats stats; /* under o.mu; lost holds are the pool's */
};

zkrc_semaphore *zkrc__semaphore_ref(zkrc_semaphore *sem);
void zkrc__semaphore_unref(zkrc_semaphore *sem);

/* zkrc_semaphore_acquire_async(), and @p arg_free(@p arg) once the lease
 * goes (its completion told, or dropped by zkrc_semaphore_free(); held:
 * released); NULL: nothing.  On an error @p arg stays the caller's. */
int zkrc__semaphore_acquire_async(zkrc_semaphore *sem, int timeout_ms,
                                  zkrc_semaphore_acquired_fn done, void *arg,
                                  void (*arg_free)(void *arg),
                                  zkrc_semaphore_lease **pending);

#endif /* ZKRC_SEMAPHORE_INTERNAL_H */
