/*
 * zkrecipes/stats.h - statistics a daemon can export: per session and per
 * lock, readable through the API, formatted as Prometheus' text
 * exposition format by one call, and served at /metrics by another.
 *
 * A recipe's statistics are one struct, zkrc_lock_stats, for every
 * recipe: a lock (or a side of a read-write lock), a semaphore (its
 * leases), an election (its leaderships).
 *
 * Everything here is counted by the library as it works; reading it sends
 * nothing to the servers.  Counters only grow (they start at 0 when the
 * object is created); gauges say how things are now.
 *
 * Durations (how long acquisitions waited, how long holds were held) are
 * kept as histograms of fixed buckets whose bounds double from 0.1 ms to
 * about 3.5 minutes: ZKRC_HISTOGRAM_BUCKETS counters, 4 bytes each, per
 * histogram, allocated with the lock's first acquisition.  Percentiles are
 * estimated from them as Prometheus' histogram_quantile() does (linear
 * within the bucket), so they are exact to within a factor of 2; the
 * Prometheus output exports the buckets themselves, which aggregate across
 * processes.
 *
 * Room to grow: each stats struct is filled up to the size the caller
 * passes (sizeof of the struct it was compiled with), so fields can be
 * added at the end without breaking programs built against an older
 * header.
 */
#ifndef ZKRECIPES_STATS_H
#define ZKRECIPES_STATS_H

#include <stddef.h>
#include <stdint.h>

#include <zkrecipes/election.h>
#include <zkrecipes/lock.h>
#include <zkrecipes/semaphore.h>
#include <zkrecipes/session.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Buckets of a histogram: bound(i) = 0.0001 s * 2^i for i < 22, then
 *  +Inf. */
#define ZKRC_HISTOGRAM_BUCKETS 23

/** A histogram of durations. */
typedef struct zkrc_histogram {
  /** How many durations were recorded, and their sum in seconds. */
  uint64_t count;
  double sum_seconds;
  /** buckets[i]: durations in (bound(i-1), bound(i)] (not cumulative). */
  uint64_t buckets[ZKRC_HISTOGRAM_BUCKETS];
} zkrc_histogram;

/** The upper bound, in seconds, of bucket @p i (INFINITY for the last);
 *  NAN when @p i is out of range.  Threading: any; pure. */
double zkrc_histogram_bound(int i);

/**
 * Estimate the @p q quantile (0 <= q <= 1; 0.5 the median, 0.99 the 99th
 * percentile) of @p h, in seconds: the bucket holding it, interpolated
 * linearly (as Prometheus' histogram_quantile()).  A quantile in the last
 * (+Inf) bucket is reported as the bound below it.
 * @return the estimate; NAN for NULL, an empty histogram or a bad @p q.
 * Threading: any; pure.
 */
double zkrc_histogram_quantile(const zkrc_histogram *h, double q);

/* ------------------------------------------------------------- session */

/** What a session object has seen since it was created. */
typedef struct zkrc_session_stats {
  /** ZooKeeper sessions established (1 for the first, one more after
   *  each expiry the object recovered from). */
  uint64_t sessions;
  /** Connections lost (SUSPENDED) and got back with the session intact
   *  (RECONNECTED). */
  uint64_t suspensions;
  uint64_t reconnects;
  /** ZooKeeper sessions that expired under this object. */
  uint64_t expiries;
  /** Requests the library sent to the servers (creates, reads, deletes,
   *  multis, lease renewals, authentications; not the ZooKeeper client's
   *  own pings). */
  uint64_t requests;
  /** Of those, the lease's renewals (a sync each, zkrecipes/session.h):
   *  the lease's own cost to the servers' leader, sent while something
   *  depends on the lease (zkrc_lease_renewal). */
  uint64_t renewals;
  /** Now: the state (zkrc_session_state) and how long, in ms, the
   *  session's lease certainly lasts (zkrc_session_lease_remaining()). */
  int state;
  int lease_remaining_ms;
  /** Leases that ran out (the session was reported LOST: the servers may
   *  have expired it since), whether or not the servers expired it
   *  later; expiries counts only those the servers confirmed.  A resting
   *  lease's (zkrc_lease_renewal) counts too: the servers had answered
   *  nothing for a session timeout. */
  uint64_t lease_losses;
  /** How long after the lease's deadline each of those LOSTs reached
   *  the executor (after every recipe's LOST posted before it).  The
   *  deadline is the servers' earliest possible expiry less the clocks'
   *  allowance and the scheduling allowance
   *  (zkrc_session_options.lease_allowance_ms); late_losses counts the
   *  LOSTs that took longer than the scheduling allowance: someone else
   *  may have been granted what the session held before it was told. */
  zkrc_histogram loss_delivery;
  uint64_t late_losses;
  /** Requests (of @c requests) that kept a resting lease's connection
   *  alive in place of the ZooKeeper client's pings: reads the server
   *  answers without its leader (zkrc_lease_renewal). */
  uint64_t keepalives;
  /** Now: how many things depend on the lease (holds, leaderships, kept
   *  nodes; one more with ZKRC_LEASE_ALWAYS); 0: the lease rests. */
  int lease_dependents;
} zkrc_session_stats;

/**
 * Read @p s's statistics into @p out, filling its first @p size bytes
 * (pass sizeof *out).
 * @return ZKRC_OK; ZKRC_EINVAL (NULL, or @p size smaller than the first
 *         field).  After zkrc_session_close() only while a recipe object
 *         built on the session is not freed yet (they keep it alive; then
 *         state is ZKRC_SESSION_CLOSED).  Threading: any thread.
 */
int zkrc_session_get_stats(zkrc_session *s, zkrc_session_stats *out,
                           size_t size);

/* ---------------------------------------------------------------- lock */

/** What a lock object has seen since it was created: its threads' holds
 *  and its non-blocking holds (zkrecipes/lock.h), and the same for a side
 *  of a read-write lock (zkrecipes/rwlock.h).  A reentrant acquisition
 *  (by a thread that already holds the lock) is not counted again. */
typedef struct zkrc_lock_stats {
  /** Acquisitions that got the lock. */
  uint64_t acquisitions;
  /** Acquisitions that gave up at their deadline (ZKRC_ETIMEDOUT). */
  uint64_t timeouts;
  /** Tries (ZKRC_NO_WAIT) that found it held (ZKRC_ELOCKED). */
  uint64_t refusals;
  /** Acquisitions that ended otherwise: session lost or expired,
   *  cancelled, freed, refused by an ACL, ... */
  uint64_t failures;
  /** Holds lost (told ZKRC_LOCK_LOST) and holds released by their owner
   *  (a lost hold is released too). */
  uint64_t lost;
  uint64_t releases;
  /** Now: holds of this object waiting in the queue, and holding. */
  uint32_t waiting;
  uint32_t holding;
  /** How long acquisitions that got the lock waited, and how long
   *  released holds were held (from the grant to the release). */
  zkrc_histogram wait;
  zkrc_histogram hold;
  /** Now: the queue's length (every contender of the directory, other
   *  processes' and other clients' included) as this object's holds last
   *  listed it, and at least the number of this object's holds in it (a
   *  hold that joins right behind another of the same object learns its
   *  place without listing the queue); 0 when none of them is in it. */
  uint32_t queue_length;
} zkrc_lock_stats;

/**
 * Read @p lk's statistics into @p out, filling its first @p size bytes
 * (pass sizeof *out).
 * @return ZKRC_OK; ZKRC_EINVAL (NULL, @p size too small).
 * Threading: any thread; takes the lock object's mutex briefly.
 */
int zkrc_lock_get_stats(zkrc_lock *lk, zkrc_lock_stats *out, size_t size);

/**
 * A semaphore's statistics, as zkrc_lock_get_stats() gives a lock's:
 * acquisitions are leases granted, their wait runs from the call to the
 * grant (the internal mutex's wait included), releases and the hold time
 * are the leases released, lost the leases lost; waiting and holding count
 * this object's leases.
 * @return ZKRC_OK; ZKRC_EINVAL (NULL, @p size too small).
 * Threading: any thread.
 */
int zkrc_semaphore_get_stats(zkrc_semaphore *sem, zkrc_lock_stats *out,
                             size_t size);

/**
 * An election's statistics, as zkrc_lock_get_stats() gives a lock's:
 * acquisitions are the leaderships this participant got (their wait runs
 * from the start of its turn in the queue to ELECTED), releases the
 * leaderships it gave up (resign, leave, free), lost the ones revoked
 * otherwise (the lease ran out, the session expired, the connection was
 * dropped with revoke_on_suspend), failures the FAILED events; holding is
 * 1 while it leads, waiting 1 while it is in the queue and does not.
 * @return ZKRC_OK; ZKRC_EINVAL (NULL, @p size too small).
 * Threading: any thread.
 */
int zkrc_election_get_stats(zkrc_election *e, zkrc_lock_stats *out,
                            size_t size);

/* ---------------------------------------------------------- Prometheus */

/** What zkrc_stats_prometheus() describes: arrays of objects (not owned;
 *  each may be NULL with its count 0; an object listed twice counts
 *  once).  Initialize with zkrc_stats_sources_init() (room to grow: fields
 *  are only ever added at the end). */
typedef struct zkrc_stats_sources {
  size_t size; /**< set by zkrc_stats_sources_init() */
  zkrc_session *const *sessions;
  size_t n_sessions;
  zkrc_lock *const *locks;
  size_t n_locks;
  zkrc_semaphore *const *semaphores;
  size_t n_semaphores;
  zkrc_election *const *elections;
  size_t n_elections;
  /** 0 (the default): the recipes' series are one per kind, summed over
   *  the objects of that kind: at most 5 x 59 series, however many
   *  objects there are.  Non-zero: one per kind and path (a label
   *  path="<directory>"), for a few paths worth a graph of their own:
   *  each path costs 59 series (6 counters, 3 gauges, and 2 histograms of
   *  ZKRC_HISTOGRAM_BUCKETS buckets, a sum and a count), so 100,000 lock
   *  paths would be 5.9 million series, more than a Prometheus server
   *  should be given; list only the objects you want that way. */
  int per_path;
} zkrc_stats_sources;

/** Empty sources, with their size.  Threading: any thread.  Fills the
 *  first @p size bytes of @p src, the size of the struct as your program
 *  was compiled with it, and sets its size field to it: the fields a
 *  program built against an older, shorter zkrc_stats_sources lacks are
 *  never written.  Call zkrc_stats_sources_init(), which passes it. */
void zkrc_stats_sources_init_sized(zkrc_stats_sources *src, size_t size);

/** Empty sources, with their size.  Threading: any thread.  Inline: it
 *  passes sizeof *@p src as this header defines it to
 *  zkrc_stats_sources_init_sized(), so a program keeps working with a
 *  later library whose struct has grown (and a later program, whose
 *  struct is longer, with this library: the fields it does not know are
 *  ignored). */
static inline void zkrc_stats_sources_init(zkrc_stats_sources *src) {
  zkrc_stats_sources_init_sized(src, sizeof *src);
}

/**
 * Everything above for the objects of @p src, in Prometheus' text
 * exposition format (version 0.0.4), ready to serve at /metrics (or let
 * zkrc_stats_serve() do it).
 *
 * The series keep their names and labels for the life of the process, a
 * session's expiry included, so that rate() and increase() work across
 * it.  The sessions' are one series each, without labels, for all the
 * session objects given: counters summed (a new ZooKeeper session after
 * an expiry continues them), zkrecipes_sessions_connected the number of
 * objects connected, zkrecipes_lease_remaining_seconds the shortest of
 * their leases:
 *
 *   zkrecipes_sessions_total, zkrecipes_session_suspensions_total,
 *   zkrecipes_session_reconnects_total, zkrecipes_session_expiries_total,
 *   zkrecipes_session_lease_losses_total,
 *   zkrecipes_session_late_losses_total, zkrecipes_requests_total,
 *   zkrecipes_lease_renewals_total, zkrecipes_lease_keepalives_total
 *   (counters); zkrecipes_sessions_connected,
 *   zkrecipes_lease_remaining_seconds (of the leases something depends
 *   on: +Inf when none is), zkrecipes_lease_dependents (gauges);
 *   zkrecipes_lease_loss_delivery_seconds (a histogram).
 *
 * The ZooKeeper session ids are in an info metric, one series per
 * distinct id among the objects (their current one, or their last while
 * they have none; 0x0 before the first): the only series whose labels
 * change with an expiry, as an info metric's do:
 *
 *   zkrecipes_session_info{session_id="0x1000a3c5e2f0003"} 1
 *
 * The recipes' are labelled kind="mutex" | "read" | "write" (the sides of
 * a read-write lock) | "semaphore" | "election", summed over the objects
 * of that kind (the gauge zkrecipes_recipe_queue_length is the longest
 * among them); with per_path, path="<directory>" first, summed over the
 * objects on that path:
 *
 *   zkrecipes_recipe_acquisitions_total{kind="mutex"} 7
 *   zkrecipes_recipe_wait_seconds_bucket{kind="mutex",le="0.0016"} 5
 *   zkrecipes_recipe_holding{path="/locks/a",kind="mutex"} 1  (per_path)
 *
 * (counters zkrecipes_recipe_{acquisitions,timeouts,refusals,failures,
 * lost,releases}_total; gauges zkrecipes_recipe_{waiting,holding,
 * queue_length}; histograms zkrecipes_recipe_{wait,hold}_seconds).  A
 * kind (a path) has series once an object of it is given.  Label values
 * are escaped as the format requires.  Give the same objects at every
 * call: a sum over fewer objects (one freed and no longer listed) goes
 * down, which Prometheus takes for a counter's reset.
 *
 * @return the text, malloc'ed (free it with free()); NULL for NULL or
 *         uninitialized @p src, a NULL object in its arrays, or an array
 *         NULL with a count above 0.
 * Threading: any thread; takes each object's mutex briefly, one at a
 * time.
 */
char *zkrc_stats_prometheus(const zkrc_stats_sources *src);

/** The largest request zkrc_stats_serve() reads: its request line and
 *  headers, in bytes. */
#define ZKRC_STATS_REQUEST_MAX 8192

/**
 * Answer one HTTP/1.x request on @p fd, a connected stream socket (one
 * that accept() gave you), with zkrc_stats_prometheus() of @p src: the
 * /metrics endpoint of a daemon without an HTTP server.
 *
 * GET /metrics (a query string is ignored) is answered 200 with the text,
 * Content-Type "text/plain; version=0.0.4; charset=utf-8", its
 * Content-Length and "Connection: close"; HEAD /metrics the same without
 * the body.  Another method on /metrics is answered 405 (with Allow: GET,
 * HEAD), another path 404, a request that is not HTTP/1.x 400, one whose
 * request line and headers exceed ZKRC_STATS_REQUEST_MAX bytes 431.  One
 * request per call: the answer says Connection: close, a request body is
 * not read.
 *
 * The whole exchange, reading the request and writing the answer, takes
 * at most @p timeout_ms: the call never blocks past that deadline (it
 * waits with poll() and reads and writes without blocking, whether or not
 * @p fd is non-blocking; its flags are left as they are).  Then the
 * writing side is shut down (the client sees the end of the answer).
 *
 * Ownership: the caller keeps @p fd and closes it after the call, whatever
 * it returned; @p src as zkrc_stats_prometheus() takes it.
 * Threading: any thread, but not a session's or a recipe's callback (it
 * waits for the client); calls on different sockets may run at once.
 * SIGPIPE is not raised (MSG_NOSIGNAL).
 * @return ZKRC_OK when an answer (any of the above) was written whole;
 *         ZKRC_ETIMEDOUT when the request was not complete, or the answer
 *         not written, before the deadline; ZKRC_ECONNLOSS when the
 *         client closed or reset the connection before (or a read or a
 *         write failed otherwise); ZKRC_EINVAL for @p fd below 0, not a
 *         socket, @p timeout_ms below 0, or @p src as
 *         zkrc_stats_prometheus() refuses it (then the client gets 500);
 *         ZKRC_ENOMEM never: allocation failures abort, as GLib's do.
 */
int zkrc_stats_serve(int fd, const zkrc_stats_sources *src, int timeout_ms);

#ifdef __cplusplus
}
#endif

#endif /* ZKRECIPES_STATS_H */
