/*
 * zkrecipes.h - ZooKeeper coordination recipes for C daemons.
 *
 * Include this one header for the whole core API:
 *   zkrecipes/error.h     error codes and messages
 *   zkrecipes/path.h      path validation
 *   zkrecipes/log.h       the ZooKeeper client's log hook
 *   zkrecipes/executor.h  where callbacks run (and the fd executor)
 *   zkrecipes/session.h   sessions that survive expiry, the lease, listeners
 *   zkrecipes/participants.h  the contenders of a lock or an election, listed
 *   zkrecipes/lock.h      the fair, fenced, per-thread reentrant lock
 *   zkrecipes/multilock.h several locks at once, all or nothing
 *   zkrecipes/rwlock.h    the read-write lock, whose sides are locks
 *   zkrecipes/semaphore.h the counting semaphore (Curator's V2 protocol)
 *   zkrecipes/election.h  leader election on the same contender queue
 *   zkrecipes/stats.h     statistics, and their Prometheus text format
 *   zkrecipes/shared.h    shared values and counters (compare-and-set)
 *   zkrecipes/cache.h     a local, current copy of nodes (node, children,
 *                         tree)
 *   zkrecipes/ephemeral.h an ephemeral node kept registered
 *   zkrecipes/group.h     group membership
 *   zkrecipes/partitioner.h  members dividing a set of items (kazoo's
 *                         SetPartitioner)
 *   zkrecipes/discovery.h service discovery (Curator's curator-x-discovery)
 *   zkrecipes/counter.h   counters in Curator's DistributedAtomicLong,
 *                         kazoo's Counter and SharedCount formats
 *   zkrecipes/timelease.h time leases: one holder (or N) per period (kazoo's
 *                         NonBlockingLease)
 *   zkrecipes/runner.h    take turns: run a function while a lock or
 *                         leadership is held
 *   zkrecipes/ttlnode.h   a node kept alive by a TTL child (Curator's
 *                         PersistentTtlNode)
 *   zkrecipes/barrier.h   barriers and double barriers (Curator's, kazoo's)
 *
 * The event-loop adapter (zkrecipes/glib.h, pkg-config zkrecipes-glib) and
 * the test harness (zkrecipes/testing.h, in libzkrecipes-testing) are
 * separate on purpose: include them where you use them.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef ZKRECIPES_H
#define ZKRECIPES_H

/* The one place the version is written: configure reads it from here. */
#define ZKRECIPES_VERSION_MAJOR 0
#define ZKRECIPES_VERSION_MINOR 2
#define ZKRECIPES_VERSION_PATCH 0
/* "MAJOR.MINOR.PATCH", made from the three numbers above. */
#define ZKRECIPES_VERSION_STRING                                               \
  ZKRC__VERSION_STR(ZKRECIPES_VERSION_MAJOR)                                   \
  "." ZKRC__VERSION_STR(ZKRECIPES_VERSION_MINOR) "." ZKRC__VERSION_STR(        \
      ZKRECIPES_VERSION_PATCH)
#define ZKRC__VERSION_STR(x) ZKRC__VERSION_STR_(x)
#define ZKRC__VERSION_STR_(x) #x

#include <zkrecipes/error.h>
#include <zkrecipes/path.h>
#include <zkrecipes/log.h>
#include <zkrecipes/executor.h>
#include <zkrecipes/session.h>
#include <zkrecipes/participants.h>
#include <zkrecipes/lock.h>
#include <zkrecipes/multilock.h>
#include <zkrecipes/rwlock.h>
#include <zkrecipes/semaphore.h>
#include <zkrecipes/election.h>
#include <zkrecipes/stats.h>
#include <zkrecipes/shared.h>
#include <zkrecipes/cache.h>
#include <zkrecipes/ephemeral.h>
#include <zkrecipes/group.h>
#include <zkrecipes/partitioner.h>
#include <zkrecipes/discovery.h>
#include <zkrecipes/counter.h>
#include <zkrecipes/timelease.h>
#include <zkrecipes/runner.h>
#include <zkrecipes/ttlnode.h>
#include <zkrecipes/barrier.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The library's version string, e.g. "0.2.0" (static). */
const char *zkrc_version(void);

#ifdef __cplusplus
}
#endif
#endif /* ZKRECIPES_H */
