/*
 * zkrecipes/discovery.h - service discovery in the format of Apache
 * Curator's curator-x-discovery (ServiceDiscovery, ServiceProvider).
 *
 * An instance of a service is the node <base>/<service name>/<instance id>
 * holding the JSON record Curator's JsonInstanceSerializer writes:
 *
 *   {"name":"api","id":"7f3c...","address":"10.0.0.5","port":8080,
 *    "sslPort":null,"payload":{"zone":"a"},"registrationTimeUTC":1795...,
 *    "serviceType":"DYNAMIC","uriSpec":{"parts":[{"value":"scheme",
 *    "variable":true},{"value":"://foo:","variable":false},...]}}
 *
 * Records of other writers are read as Curator reads them: unknown fields
 * are ignored, missing ones take Curator's defaults (null, 0, DYNAMIC,
 * enabled).  A node whose data is not such a record (not JSON, a name or id
 * that is not a string, a port that is not an integer, ...) is skipped, with
 * a log line (zkrecipes/log.h), never fatal.
 *
 * A DYNAMIC instance is an ephemeral node kept by the library
 * (zkrecipes/ephemeral.h): created again after its session expired, as
 * Curator's ServiceDiscovery re-registers its instances.  STATIC and
 * PERMANENT instances are persistent nodes (Curator's CreateMode.PERSISTENT
 * for both) that stay after their session.  Missing parents are created as
 * containers, as Curator does.
 *
 * The payload is kept as JSON text: whatever JSON value the writer stored
 * (Curator writes a Map payload as {"@class":"java.util.HashMap",...} and a
 * String payload as a JSON string); Curator's default reader (payload
 * class Object or Map) reads an object without "@class" as a Map.
 *
 * A write that fails with ZKRC_ETIMEDOUT or ZKRC_ECONNLOSS (also while the
 * session is reopening) may or may not have been applied; ZKRC_ECLOSED
 * comes only from a closed session or object (zkrecipes/error.h).
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef ZKRECIPES_DISCOVERY_H
#define ZKRECIPES_DISCOVERY_H

#include <stddef.h>
#include <stdint.h>

#include <zkrecipes/participants.h>
#include <zkrecipes/session.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Curator's ServiceType (the "serviceType" field). */
typedef enum zkrc_service_type {
  ZKRC_SERVICE_DYNAMIC = 0,       /**< ephemeral, re-registered (default) */
  ZKRC_SERVICE_STATIC,            /**< persistent */
  ZKRC_SERVICE_PERMANENT,         /**< persistent */
  ZKRC_SERVICE_DYNAMIC_SEQUENTIAL /**< ephemeral sequential: read only (a
                                       registration of this type is
                                       ZKRC_EINVAL) */
} zkrc_service_type;

/** "DYNAMIC", "STATIC", "PERMANENT", "DYNAMIC_SEQUENTIAL" ("?" if
 *  unknown): Curator's JSON values, so in capitals, and not an enum the
 *  contract renumbers from 1 (ZKRC_SERVICE_DYNAMIC, 0, is Curator's
 *  default, what a record without the field means). */
const char *zkrc_service_type_name(zkrc_service_type type);

/** "No port" in zkrc_service_instance.port and .ssl_port (JSON null). */
#define ZKRC_SERVICE_NO_PORT (-1)

/**
 * One instance record.  The strings are malloc'ed and NUL-terminated.  A
 * record you build yourself stays yours (the library copies what it
 * needs); a record the library gives you is yours to free with
 * zkrc_service_instance_free().
 */
typedef struct zkrc_service_instance {
  char *name;    /**< the service's name (required: a node name) */
  char *id;      /**< the instance's id (required: a node name) */
  char *address; /**< host name or address; NULL: none (JSON null) */
  int port;      /**< 0..65535, or ZKRC_SERVICE_NO_PORT */
  int ssl_port;  /**< 0..65535, or ZKRC_SERVICE_NO_PORT */
  /** The payload as JSON text (any JSON value: object, string, number,
   *  ...); NULL: no payload (JSON null). */
  char *payload;
  /** Milliseconds since the epoch (UTC) of the registration.  0 at
   *  registration: set to now. */
  int64_t registration_time_utc;
  zkrc_service_type service_type;
  /** Curator's UriSpec as its template string (what UriSpec(String)
   *  parses): variables in braces, e.g. "{scheme}://{address}:{port}/x";
   *  a literal brace is Curator's variable "{[}" or "{]}".  NULL: none
   *  (JSON null). */
  char *uri_spec;
  /** Curator's "enabled" flag (1 when the record has none); written only
   *  when 0, as Curator's default serializer leaves it out. */
  int enabled;
} zkrc_service_instance;

/**
 * A new record with @p name, @p id and @p address (copied; @p address may
 * be NULL) and @p port; the rest at the defaults (no SSL port, no payload,
 * time 0, DYNAMIC, no URI spec, enabled).  Set the other fields with
 * malloc'ed strings (the record frees them).
 * @return the record (zkrc_service_instance_free()), or NULL when out of
 *         memory or a NULL @p name / @p id.
 */
zkrc_service_instance *zkrc_service_instance_new(const char *name,
                                                 const char *id,
                                                 const char *address, int port);

/** A deep copy of @p inst (NULL when out of memory or @p inst is NULL). */
zkrc_service_instance *
zkrc_service_instance_copy(const zkrc_service_instance *inst);

/** Free @p inst and its strings (NULL is ignored). */
void zkrc_service_instance_free(zkrc_service_instance *inst);

/** Free @p count instances and the array (NULL is ignored). */
void zkrc_service_instances_free(zkrc_service_instance **instances,
                                 size_t count);

/**
 * Parse the @p len bytes of @p json as Curator's JsonInstanceSerializer
 * reads them (unknown fields ignored).
 * Text nested deeper than 128 objects and arrays (Curator's records nest
 * 4, plus the payload's own) is refused before it is parsed, so that a
 * record written by anyone cannot exhaust the stack.
 * @return ZKRC_OK (*@p out is yours); ZKRC_EBADNODE (not such a record,
 *         or nested too deep: *@p out NULL); ZKRC_EINVAL (NULL @p out, or
 *         NULL @p json with @p len > 0); ZKRC_ENOMEM.
 * Threading: any thread; no server round trip.
 */
int zkrc_service_instance_from_json(const char *json, size_t len,
                                    zkrc_service_instance **out);

/**
 * Write @p inst as Curator's JsonInstanceSerializer writes it (the fields
 * in its order; null where unset).
 * @return ZKRC_OK (*@p json malloc'ed, NUL-terminated, *@p len bytes
 *         without the NUL; @p len may be NULL); ZKRC_EINVAL (NULL
 *         arguments, a NULL name or id, a port out of range, a payload that
 *         is not JSON, an unknown service type); ZKRC_ENOMEM.
 */
int zkrc_service_instance_to_json(const zkrc_service_instance *inst,
                                  char **json, size_t *len);

/* ------------------------------------------------------- registering */

typedef struct zkrc_service_registration zkrc_service_registration;

/** Options of a registration; initialize with
 *  zkrc_service_options_init(). */
typedef struct zkrc_service_options {
  /** Set by zkrc_service_options_init() (see zkrc_lock_options.size). */
  size_t size;
  /** ACL of the instance's node and the parents created.  NULL (default):
   *  ZOO_OPEN_ACL_UNSAFE.  Copied. */
  const struct ACL_vector *acl;
  /** How long the background create of a STATIC / PERMANENT node may
   *  take, in ms (ZKRC_WAIT_FOREVER, ZKRC_NO_WAIT: once, at once
   *  ZKRC_ECONNLOSS when not connected, or > 0); its result is what
   *  zkrc_service_registration_wait() says.  Default 10000.  DYNAMIC
   *  instances are kept for ever (zkrecipes/ephemeral.h). */
  int timeout_ms;
} zkrc_service_options;

/** Zero @p opts, set its size and the defaults (NULL is ignored).  Fills
 *  the first @p size bytes of @p opts, the size of the struct as your
 *  program was compiled with it, and sets its size field to it: the
 *  fields a program built against an older, shorter zkrc_service_options
 *  lacks are never written.  Call zkrc_service_options_init(), which
 *  passes it. */
void zkrc_service_options_init_sized(zkrc_service_options *opts, size_t size);

/** Zero @p opts, set its size and the defaults (NULL is ignored).
 *  Inline: it passes sizeof *@p opts as this header defines it to
 *  zkrc_service_options_init_sized(), so a program keeps working with a
 *  later library whose struct has grown (and a later program, whose
 *  struct is longer, with this library: the fields it does not know are
 *  ignored). */
static inline void zkrc_service_options_init(zkrc_service_options *opts) {
  zkrc_service_options_init_sized(opts, sizeof *opts);
}

/**
 * Register @p inst (copied; registration_time_utc 0 is set to now) as
 * <@p base>/<name>/<id>.  Returns at once; it never waits for the network
 * (zkrc_service_registration_wait() waits for the node).  DYNAMIC: an
 * ephemeral node the library keeps.  STATIC and PERMANENT: a persistent
 * node created (or overwritten, when it exists already, as Curator does)
 * in the background, within opts->timeout_ms, by asynchronous requests
 * (no thread of its own).
 * @param base  a path as zkrc_path_validate() accepts (not "/").
 * @return ZKRC_OK (*@p out is yours: zkrc_service_unregister(),
 *         zkrc_service_registration_free() or
 *         zkrc_service_registration_free_async()); ZKRC_EINVAL (NULL arguments,
 *         an invalid base, a name or id that is not a node name, a record
 *         zkrc_service_instance_to_json() refuses, DYNAMIC_SEQUENTIAL,
 *         options not initialized, a bad timeout: nothing sent);
 *         ZKRC_ETOOBIG (the record's JSON would not pass ZooKeeper's size
 *         limit in the node's create, envelope included, as
 *         zkrc_ephemeral_new() says, whatever the type: nothing sent, not
 *         even the parents); ZKRC_ECLOSED; ZKRC_ENOMEM.
 * Threading: any thread.
 */
int zkrc_service_registration_new(zkrc_service_registration **out,
                                  zkrc_session *s, const char *base,
                                  const zkrc_service_instance *inst,
                                  const zkrc_service_options *opts);

/**
 * Wait until the instance's node exists (DYNAMIC: created by this session
 * and verified by its lease; see zkrc_ephemeral_wait_registered();
 * STATIC, PERMANENT: the background create done), at most @p timeout_ms
 * (ZKRC_WAIT_FOREVER, ZKRC_NO_WAIT or > 0).
 * @return ZKRC_OK; ZKRC_ETIMEDOUT (not yet, or the persistent create's own
 *         deadline passed); ZKRC_ENOAUTH; ZKRC_ECLOSED; ZKRC_ECONNLOSS
 *         (the persistent create failed so); ZKRC_EINVAL.  A persistent
 *         create's failure is final: register again.  Not from a session
 *         callback.
 */
int zkrc_service_registration_wait(zkrc_service_registration *r,
                                   int timeout_ms);

/**
 * Replace the record with @p inst (copied: same name, id and service type
 * as registered, else ZKRC_EINVAL; registration_time_utc 0 keeps the
 * registered one), at most @p timeout_ms (ZKRC_WAIT_FOREVER, ZKRC_NO_WAIT
 * or > 0).  A persistent node's update waits (within @p timeout_ms) for
 * its background create.
 * @return ZKRC_OK; ZKRC_EINVAL (nothing changed); ZKRC_ETOOBIG (the new
 *         record would not pass the size limit: the setData of a
 *         persistent node, the create of a DYNAMIC one; nothing sent,
 *         nothing changed); ZKRC_ETIMEDOUT,
 *         ZKRC_ECONNLOSS (DYNAMIC: kept and written again when the node is
 *         created again); ZKRC_ENONODE (a persistent node deleted by
 *         someone); ZKRC_ENOAUTH.
 * Threading: any thread but a session callback; not concurrently with
 * another call on @p r.
 */
int zkrc_service_update(zkrc_service_registration *r,
                        const zkrc_service_instance *inst, int timeout_ms);

/** The record as last registered or updated (owned by @p r). */
const zkrc_service_instance *
zkrc_service_registration_instance(zkrc_service_registration *r);

/**
 * Delete the instance's node (whatever its type, as Curator's
 * unregisterService does) and free @p r.  A persistent node: waits for
 * its create still under way, then at most about the session timeout for
 * the delete.  A DYNAMIC node: its delete is sent and not waited for, as
 * zkrc_ephemeral_free() does (the session deletes it once connected again
 * if the delete cannot be confirmed).  Kept beside zkrc_service_registration_free(), not folded
 * into it: a persistent (STATIC, PERMANENT) registration has two ends,
 * deleted (this, which waits for the network: not from a session
 * callback) or left registered for others to find (the free, which never
 * waits).  Works whatever the session's state (closed: nothing can be
 * deleted; a DYNAMIC node went with the session).  NULL is ignored.
 */
void zkrc_service_unregister(zkrc_service_registration *r);

/**
 * Free @p r without deleting a persistent (STATIC, PERMANENT) node: it
 * stays registered (a create still under way goes on in the background,
 * within its timeout; the free does not wait for it).  A DYNAMIC node is
 * deleted (nobody keeps it any more) in the background, as
 * zkrc_ephemeral_free() does: the free never waits for the network.  Works whatever the session's state: open,
 * suspended or closed (before or after zkrc_session_close()).  NULL is
 * ignored.  Do not use @p r afterwards.
 * Threading: any thread.
 */
void zkrc_service_registration_free(zkrc_service_registration *r);

/**
 * Free @p r without blocking: as zkrc_service_registration_free() (a
 * persistent node stays registered, a DYNAMIC one is deleted), then
 * @p done runs with @p arg on the session's executor once the background
 * work is over: a persistent node's create still under way ended (within
 * its timeout), a DYNAMIC node's delete confirmed or handed to the session
 * to retry (zkrc_ephemeral_free_async()).  A registration tells no events: @p done is the only
 * call.  After @p done returns @p r is gone; do not use it from this call
 * on.
 * @return ZKRC_OK (@p done will run); ZKRC_EINVAL (NULL @p r or @p done:
 *         nothing changes).
 * Threading: any thread, the executor's included, while the session's
 * executor runs.  Call it once, instead of zkrc_service_registration_free()
 * or zkrc_service_unregister().
 */
int zkrc_service_registration_free_async(zkrc_service_registration *r,
                                         zkrc_callback_fn done, void *arg);

/* ----------------------------------------------------------- queries */

/**
 * The names of the services under @p base (its children, sorted), read
 * now (Curator's queryForNames), at most @p timeout_ms (ZKRC_WAIT_FOREVER,
 * > 0, or ZKRC_NO_WAIT: one try, ZKRC_ECONNLOSS at once when the session
 * is not connected now, else bounded by the session timeout).
 * @return ZKRC_OK (*@p names: *@p count malloc'ed strings in a
 *         NULL-terminated array, free with zkrc_strv_free(); no base: 0
 *         names); ZKRC_EINVAL; ZKRC_ETIMEDOUT; ZKRC_ECONNLOSS;
 *         ZKRC_ENOAUTH; ZKRC_ECLOSED.
 * Not from a session callback.
 */
int zkrc_service_names(zkrc_session *s, const char *base, char ***names,
                       size_t *count, int timeout_ms);

/**
 * The instances of service @p name, read now (Curator's
 * queryForInstances), sorted by id; malformed records are skipped (logged).
 * @return ZKRC_OK (*@p out: an array of *@p count records, free with
 *         zkrc_service_instances_free(); none: 0 and an array holding
 *         NULL); the errors of zkrc_service_names().
 */
int zkrc_service_query(zkrc_session *s, const char *base, const char *name,
                       zkrc_service_instance ***out, size_t *count,
                       int timeout_ms);

/* ---------------------------------------------------------- provider */

/** A service's instances kept current by a children cache
 *  (zkrecipes/cache.h) of <base>/<name>: reads never go to the servers. */
typedef struct zkrc_service_provider zkrc_service_provider;

/** How zkrc_service_provider_get() picks an instance (from 1: the
 *  options' init sets the default, RANDOM). */
typedef enum zkrc_service_strategy {
  ZKRC_SERVICE_RANDOM = 1, /**< uniformly at random (Curator's
                                 RandomStrategy, its default) */
  ZKRC_SERVICE_ROUND_ROBIN /**< each call the next one, by id (Curator's
                                 RoundRobinStrategy) */
} zkrc_service_strategy;

/** What a provider reports. */
typedef enum zkrc_service_provider_event_type {
  /** The copy changed: an instance's node was added, changed or removed
   *  (the record may be one that is skipped). */
  ZKRC_SERVICE_PROVIDER_CHANGED = 1,
  /** The first read completed (once). */
  ZKRC_SERVICE_PROVIDER_INITIALIZED,
  /** The connection is down (reason ZKRC_ECONNLOSS): the copy may be
   *  stale. */
  ZKRC_SERVICE_PROVIDER_SUSPENDED,
  /** Connected again; the service is read again. */
  ZKRC_SERVICE_PROVIDER_RECONNECTED,
  /** The session expired (ZKRC_ESESSIONEXPIRED), its lease ran out
   *  (ZKRC_ESESSIONLOST) or it was closed (ZKRC_ECLOSED; nothing
   *  follows).  The copy is kept and read again on a new session. */
  ZKRC_SERVICE_PROVIDER_LOST
} zkrc_service_provider_event_type;

/** "changed", "initialized", "suspended", "reconnected", "lost"
 *  ("unknown" for another value).  Static string; any thread. */
const char *
zkrc_service_provider_event_name(zkrc_service_provider_event_type type);

/** A provider's event, valid during the call. */
typedef struct zkrc_service_provider_event {
  /** What happened. */
  zkrc_service_provider_event_type type;
  /** SUSPENDED and LOST: why, as a zkrc error (above); ZKRC_OK otherwise. */
  int reason;
  /** ZooKeeper's code behind @c reason; ZOK when there is none. */
  int zk_error;
  /** CHANGED: the id (node name) of the instance whose node changed;
   *  NULL for the other events. */
  const char *id;
} zkrc_service_provider_event;

/**
 * Told each event of the provider.  Runs on the session's executor, one
 * call at a time, in order, never with a zkrecipes mutex held; it may read
 * the provider (zkrc_service_provider_instances(), _get()) and free it,
 * but not wait for the executor.
 */
typedef void (*zkrc_service_provider_event_fn)(
    zkrc_service_provider *p, const zkrc_service_provider_event *ev, void *arg);

/** A provider's options; initialize with
 *  zkrc_service_provider_options_init(). */
typedef struct zkrc_service_provider_options {
  /** Set by zkrc_service_provider_options_init() (see
   *  zkrc_lock_options.size). */
  size_t size;
  /** How zkrc_service_provider_get() picks.  Default ZKRC_SERVICE_RANDOM. */
  zkrc_service_strategy strategy;
  /** Told each event (above), with @c event_arg.  NULL (default): none. */
  zkrc_service_provider_event_fn on_event;
  void *event_arg;
} zkrc_service_provider_options;

/** Zero @p opts and set its size (NULL is ignored).  Fills the first @p
 *  size bytes of @p opts, the size of the struct as your program was
 *  compiled with it, and sets its size field to it: the fields a program
 *  built against an older, shorter zkrc_service_provider_options lacks
 *  are never written.  Call zkrc_service_provider_options_init(), which
 *  passes it. */
void zkrc_service_provider_options_init_sized(
    zkrc_service_provider_options *opts, size_t size);

/** Zero @p opts and set its size (NULL is ignored).  Inline: it passes
 *  sizeof *@p opts as this header defines it to
 *  zkrc_service_provider_options_init_sized(), so a program keeps working
 *  with a later library whose struct has grown (and a later program,
 *  whose struct is longer, with this library: the fields it does not know
 *  are ignored). */
static inline void
zkrc_service_provider_options_init(zkrc_service_provider_options *opts) {
  zkrc_service_provider_options_init_sized(opts, sizeof *opts);
}

/**
 * Start keeping the instances of service @p name under @p base.  Returns
 * at once (zkrc_service_provider_wait_initialized() waits for the first
 * read).  The service need not exist yet.
 * @param opts  NULL for the defaults.
 * @return ZKRC_OK (*@p out is yours: zkrc_service_provider_free());
 *         ZKRC_EINVAL (NULL arguments, invalid base, a name that is not a
 *         node name, an unknown strategy, options not initialized);
 *         ZKRC_ECLOSED.  Any thread.
 */
int zkrc_service_provider_new(zkrc_service_provider **out, zkrc_session *s,
                              const char *base, const char *name,
                              const zkrc_service_provider_options *opts);

/** Wait for the provider's first complete read (see
 *  zkrc_cache_wait_initialized()): ZKRC_OK, ZKRC_ETIMEDOUT, ZKRC_EINVAL,
 *  ZKRC_ECLOSED.  Not from a session callback. */
int zkrc_service_provider_wait_initialized(zkrc_service_provider *p,
                                           int timeout_ms);

/**
 * All instances in the provider's copy now, sorted by id (malformed
 * records skipped).  No server round trip; any thread.
 * @return ZKRC_OK (*@p out, *@p count as zkrc_service_query());
 *         ZKRC_EINVAL; ZKRC_ENOMEM.
 */
int zkrc_service_provider_instances(zkrc_service_provider *p,
                                    zkrc_service_instance ***out,
                                    size_t *count);

/**
 * One instance, chosen by the provider's strategy.  No server round trip;
 * any thread (round robin is shared by all callers).
 * @return ZKRC_OK (*@p out is yours: zkrc_service_instance_free());
 *         ZKRC_ENONODE (no instance now); ZKRC_EINVAL; ZKRC_ENOMEM.
 */
int zkrc_service_provider_get(zkrc_service_provider *p,
                              zkrc_service_instance **out);

/**
 * Stop and free @p p (as zkrc_cache_free()): never waits for the network;
 * after it returns no event of @p p is told, and it waits only for one
 * running on another thread (from @p p's own callback it does not wait).
 * Works whatever the session's state: open, suspended or closed (before or
 * after zkrc_session_close()).  NULL is ignored.
 * Threading: any thread, @p p's own callback included.
 */
void zkrc_service_provider_free(zkrc_service_provider *p);

/**
 * Free @p p without blocking: as zkrc_service_provider_free(), then
 * @p done runs with @p arg on the session's executor, after the provider's
 * cache is freed and after the last event.  Events queued before this
 * call are still told, none after @p done.  From this call on, use @p p
 * only in the callbacks still to come; after @p done returns it is gone.
 * @return ZKRC_OK (@p done will run); ZKRC_EINVAL (NULL @p p or @p done:
 *         nothing changes).
 * Threading: any thread, including the executor's and @p p's own event
 * callback, while the session's executor runs.  Call it once, instead of
 * zkrc_service_provider_free().
 */
int zkrc_service_provider_free_async(zkrc_service_provider *p,
                                     zkrc_callback_fn done, void *arg);

#ifdef __cplusplus
}
#endif
#endif /* ZKRECIPES_DISCOVERY_H */
