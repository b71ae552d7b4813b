/*
 * zkrecipes/session.h - a ZooKeeper session that outlives its handles.
 *
 * A zkrc_session owns one ZooKeeper handle (zhandle_t) at a time.  It
 * connects, reports what happens to the connection to listeners, and keeps a
 * lease: a conservative, client-side estimate of how long the servers
 * certainly keep the session, in the manner of Google Chubby's client lease.
 *
 * The lease.  The ZooKeeper client learns that its session expired only when
 * it reaches a server again, and notices a dead connection only after two
 * thirds of the session timeout, while the servers expire a session one
 * timeout after they last heard of it: a holder that waits for the client to
 * notice learns of its loss after someone else was granted the lock.  So the
 * session renews a lease with a sync (a request the server must forward to
 * the ZooKeeper leader) about every 0.3 session timeouts, replacing the
 * client's own pings, and computes from the answers a deadline before which
 * the leader cannot have expired the session, whatever the network did:
 * the send time of a sync that the leader has certainly heard of, plus the
 * session timeout, minus 0.1% of it for clock rates and an allowance for
 * scheduling (zkrc_session_options.lease_allowance_ms: by default a tenth
 * of the timeout, at most 100 ms).  A sync answered by a follower proves that the leader heard of
 * an earlier one when it was sent at least 0.6 server ticks after the
 * earlier one was answered (the leader collects what followers heard every
 * half tick), which is why the session needs to know the servers' tick
 * (zkrc_session_options.server_tick_ms).  When the lease runs out the
 * session is reported LOST and treated as expired, at that moment, connected
 * or not: so every recipe built on it reports its hold lost before the
 * servers can give it to anyone else.  By default the lease is renewed
 * only while something depends on it (zkrc_lease_renewal): an idle or
 * waiting session costs the leader nothing.  A process frozen past its lease
 * (SIGSTOP, a debugger) sees the lease run out as soon as it runs again.
 * Not covered: an operator closing the session from another handle, which
 * the servers carry out at once.
 *
 * After an expiry or a loss the session tells every recipe built on it,
 * then opens a new ZooKeeper session for later operations (unless told not
 * to).
 *
 * Callbacks.  Listener and recipe callbacks never run on ZooKeeper's own
 * threads and never with a zkrecipes mutex held.  They run on the session's
 * executor: by default one callback thread the session owns, in the order the
 * events happened.  zkrc_session_options.executor substitutes another (the
 * GLib adapter in zkrecipes/glib.h, or your own).
 *
 * A write that fails with ZKRC_ETIMEDOUT or ZKRC_ECONNLOSS (also while the
 * session is reopening) may or may not have been applied; ZKRC_ECLOSED
 * comes only from a closed session or object (zkrecipes/error.h).
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef ZKRECIPES_SESSION_H
#define ZKRECIPES_SESSION_H

#include <stddef.h>
#include <stdint.h>
#include <zookeeper/zookeeper.h>
#include <zkrecipes/executor.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Wait without limit (a timeout argument). */
#define ZKRC_WAIT_FOREVER (-1)
/** Do not wait at all (a timeout argument). */
#define ZKRC_NO_WAIT 0

typedef struct zkrc_session zkrc_session;

/** What the connection is doing now.  Numbered from 1 (zeroed memory is
 *  no state). */
typedef enum zkrc_session_state {
  /** Opening a ZooKeeper session (the first, or a new one after expiry). */
  ZKRC_SESSION_CONNECTING = 1,
  /** Connected; the session is live. */
  ZKRC_SESSION_CONNECTED = 2,
  /** Connection lost; the session may still be alive on the servers. */
  ZKRC_SESSION_SUSPENDED = 3,
  /** Closed by zkrc_session_close(), or dead and not reopened. */
  ZKRC_SESSION_CLOSED = 4
} zkrc_session_state;

/** What happened (zkrc_session_event.type).  Numbered from 1. */
typedef enum zkrc_session_event_type {
  /** A new ZooKeeper session was established (a new session id). */
  ZKRC_SESSION_EVENT_CONNECTED = 1,
  /** The connection dropped; the session may still live. Locks may be lost.
   *  reason ZKRC_ECONNLOSS, zk_error ZCONNECTIONLOSS. */
  ZKRC_SESSION_EVENT_SUSPENDED = 2,
  /** The connection is back with the same session: nothing was lost. */
  ZKRC_SESSION_EVENT_RECONNECTED = 3,
  /** The lease ran out (see above): the servers may expire the session
   *  from now on, so it is treated as expired.  reason
   *  ZKRC_ESESSIONLOST, zk_error ZOK. */
  ZKRC_SESSION_EVENT_LOST = 4,
  /** A server reported the session expired.  reason
   *  ZKRC_ESESSIONEXPIRED, zk_error ZSESSIONEXPIRED. */
  ZKRC_SESSION_EVENT_EXPIRED = 5,
  /** Authentication failed; the session is closed for good.  reason
   *  ZKRC_EAUTHFAILED, zk_error ZAUTHFAILED. */
  ZKRC_SESSION_EVENT_AUTH_FAILED = 6,
  /** The session was closed; the last event a listener sees.  reason
   *  ZKRC_ECLOSED (zkrc_session_close()), or, for a session that closed
   *  itself (no_reopen, refused credentials), the reason of the event
   *  that ended it (LOST, EXPIRED, AUTH_FAILED). */
  ZKRC_SESSION_EVENT_CLOSED = 7,
  /** The session follows a new list of servers
   *  (zkrc_session_options.follow_ensemble): the ensemble was
   *  reconfigured, and the ZooKeeper client was given its members' client
   *  addresses.  zkrc_session_servers() tells the list (a later change
   *  may have replaced it by then).  Nothing is lost: the session, its
   *  connection (which the client may move to balance the load, as a
   *  reconnection) and every hold stay.  reason ZKRC_OK, zk_error ZOK;
   *  session_id the current session's.  Told to listeners only, never
   *  after CLOSED, and only by a session made with follow_ensemble (new
   *  in 0.2.0 too): a program built before never sees it. */
  ZKRC_SESSION_EVENT_SERVERS_CHANGED = 8
} zkrc_session_event_type;

/** One session event, valid during the listener's call. */
typedef struct zkrc_session_event {
  /** What happened. */
  zkrc_session_event_type type;
  /** For SUSPENDED, LOST, EXPIRED, AUTH_FAILED and CLOSED: why, as a zkrc
   *  error (above at each type); ZKRC_OK otherwise. */
  int reason;
  /** ZooKeeper's code behind @c reason; ZOK when there is none (a lease
   *  that ran out, a close, the events that are no loss). */
  int zk_error;
  /** The ZooKeeper session the event is about: the new one for
   *  CONNECTED, the one that was suspended, resumed, lost or expired; for
   *  CLOSED the last one established (0 when none ever was). */
  int64_t session_id;
} zkrc_session_event;

/** Name of an event type ("connected", "suspended", "reconnected", "lost",
 *  "expired", "auth-failed", "closed", "servers-changed"; "unknown" for
 *  another value);
 *  static string, any thread. */
const char *zkrc_session_event_name(zkrc_session_event_type type);

/** Name of a state ("connecting", "connected", "suspended", "closed";
 *  "unknown" for another value); static string, any thread. */
const char *zkrc_session_state_name(zkrc_session_state st);

/** Receives session events on the session's executor, one at a time, in
 *  order, never with a zkrecipes mutex held.  @p ev is valid during the
 *  call. */
typedef void (*zkrc_session_event_fn)(zkrc_session *s,
                                      const zkrc_session_event *ev, void *arg);

/** Options of a session; initialize with zkrc_session_options_init(). */
typedef struct zkrc_session_options {
  /** Set by the _init function to the size of the struct your program was
   *  compiled with, so that later versions of the library, with more
   *  fields, read only the fields it knows.  Options that were not
   *  initialized (size 0) are refused with ZKRC_EINVAL. */
  size_t size;
  /** Requested session timeout in ms (the servers clamp it to 2..20 ticks;
   *  values outside 100..10^9 are first brought into that range, since the
   *  ZooKeeper client gives up a handshake slower than two thirds of the
   *  requested timeout).  Default 10000.  Negative: ZKRC_EINVAL. */
  int session_timeout_ms;
  /** How long zkrc_session_connect() waits for the first connection, in ms.
   *  Default: the session timeout. */
  int connect_timeout_ms;
  /** Non-zero: after an expiry or a loss, stay closed instead of opening a
   *  new ZooKeeper session.  Default 0. */
  int no_reopen;
  /** Where callbacks run.  NULL (default): a thread owned by the session.
   *  The executor must stay valid until zkrc_session_close() returns.  One
   *  executor may serve several sessions. */
  const zkrc_executor *executor;
  /** A listener registered before the session connects, so that it hears
   *  the first CONNECTED too (one added after zkrc_session_connect() may
   *  not), with @c event_arg.  NULL (default): none. */
  zkrc_session_event_fn on_event;
  void *event_arg;
  /** The servers' tickTime in ms (their zoo.cfg), for the lease.  The lease
   *  is only safe when the real tick is not longer than this.  0 (default):
   *  assume ZooKeeper's default of 2000 ms, but at most half the negotiated
   *  session timeout (the servers' default minimum session timeout is two
   *  ticks).  A shorter tick gives a longer lease. */
  int server_tick_ms;
  /** How much earlier than the servers may expire the session its lease
   *  ends, in ms: the time the library allows itself for noticing the end
   *  and for LOST to reach every recipe and your callbacks (a loaded
   *  machine runs timers and threads late).  A loss delivered later than
   *  this after the lease ended may come after someone else was granted
   *  what you held: zkrc_session_stats counts such late losses and
   *  measures every delivery (loss_delivery), so that you can tell whether
   *  it is enough.  0 (default): a tenth of the session timeout, at most
   *  100 ms.  At most half the negotiated timeout is used.  Negative, or
   *  more than half the requested session timeout: ZKRC_EINVAL. */
  int lease_allowance_ms;

  /* TLS (mutual: the ZooKeeper client always presents a certificate).
   * All three files, or none (plaintext).  Paths may not contain a comma
   * (the client takes them as one comma-separated string).  The strings
   * are copied.  What the ZooKeeper C client 3.8 checks: the servers'
   * chain against tls_ca_file and the system's default CAs; not the
   * servers' names, unless tls_server_name (below) asks a client that can
   * (scripts/build-zookeeper-client's); use a CA of your own for
   * ZooKeeper either way.  Set with a client built without TLS
   * (zkrc_features()): ZKRC_ENOTSUP. */
  /** The CA (PEM) the servers' certificates are checked against. */
  const char *tls_ca_file;
  /** The client's certificate chain and private key (PEM). */
  const char *tls_cert_file;
  const char *tls_key_file;
  /** The private key's passphrase; NULL: the key is not encrypted. */
  const char *tls_key_password;

  /* SASL (the servers' SASLAuthenticationProvider): the session
   * authenticates on every connection, before anything else; refused
   * credentials end it with ZKRC_SESSION_EVENT_AUTH_FAILED (reason
   * ZKRC_EAUTHFAILED).  Nodes are then readable under "sasl:USER" ACLs.
   * The strings are copied.  Not together with TLS: the ZooKeeper C
   * client 3.8 has no handle with both (ZKRC_ENOTSUP).  Set with a client
   * built without SASL: ZKRC_ENOTSUP. */
  /** The user; NULL: no SASL (the other sasl_ fields must be NULL too). */
  const char *sasl_user;
  /** A file whose first line is the password (so that it never sits in
   *  the program's arguments or environment).  Required for DIGEST-MD5. */
  const char *sasl_password_file;
  /** The mechanism; NULL: "DIGEST-MD5", what ZooKeeper's DigestLoginModule
   *  serves.  "GSSAPI" (Kerberos) takes its credentials from the process
   *  (KRB5CCNAME, KRB5_CLIENT_KTNAME) and needs no password file. */
  const char *sasl_mechanism;
  /** The servers' SASL service and host names; NULL: "zookeeper" and
   *  "zk-sasl-md5", ZooKeeper's defaults (for GSSAPI, the servers'
   *  principal is service/host). */
  const char *sasl_service;
  const char *sasl_host;
  /** The realm; NULL: none (the servers' default). */
  const char *sasl_realm;

  /** When the lease is renewed (zkrc_lease_renewal; see "The lease"
   *  above).  ZKRC_LEASE_ON_DEMAND (default) or ZKRC_LEASE_ALWAYS;
   *  another value: ZKRC_EINVAL. */
  int lease_renewal;

  /** TLS: the name every server's certificate must carry (a DNS name in
   *  its subjectAltName, checked in the handshake), also sent as SNI; a
   *  certificate the CA signed for another name is refused like one from
   *  another CA (ZKRC_ECONNECT at the connect timeout, the reason in the
   *  log).  NULL (default): any certificate the CA signed, which is all
   *  the ZooKeeper C client 3.8 checks by itself.  Copied.  Needs a
   *  client with ZKRC_FEATURE_TLS_SERVER_NAME (the one
   *  scripts/build-zookeeper-client builds), else ZKRC_ENOTSUP; empty, or
   *  with a comma, or without the other tls_ files: ZKRC_EINVAL. */
  const char *tls_server_name;

  /** Non-zero: follow the ensemble's membership, as Curator's
   *  EnsembleTracker does.  On each connection the session reads the
   *  servers' dynamic configuration (/zookeeper/config, with a watch, and
   *  again whenever it changes) and, when the client addresses of its
   *  members differ from the servers it knows, gives the ZooKeeper client
   *  the new list (zoo_set_servers: it may move its connection to balance
   *  the load, as a reconnection) and opens later handles (after an
   *  expiry) on it; zkrc_session_servers() tells the list, and
   *  listeners are told ZKRC_SESSION_EVENT_SERVERS_CHANGED.  A
   *  configuration in which a member has no client address (a static
   *  one, where each server announces only its own) changes nothing: only
   *  dynamic configurations (reconfigEnabled, "server.N=...;HOST:PORT")
   *  are followed.  An adopted handle (zkrc_session_adopt()) is
   *  followed from the hosts given with it, the list it compares with and
   *  reopens with; without hosts, not at all.  0 (default): the connect
   *  string stays, unlike Curator (on by default): a client that reaches
   *  the servers through other addresses than the ones they announce (a
   *  proxy, NAT, a tunnel, a wildcard address) would lose them. */
  int follow_ensemble;
} zkrc_session_options;

/** When a session renews its lease (zkrc_session_options.lease_renewal).
 *  A renewal is a sync, which the servers forward to their leader: a
 *  session renewing all the time costs the leader about 3 requests per
 *  session timeout, even while it holds nothing. */
typedef enum zkrc_lease_renewal {
  /** Only while something depends on the lease: a lock, read-write lock
   *  or semaphore hold, a leadership, a kept ephemeral node (membership,
   *  discovery, the partitioner), or a waiter at the front of its queue
   *  while it is granted.  Otherwise the lease rests: the session sends a
   *  keepalive instead of the ZooKeeper client's ping (a read its server
   *  answers without the leader, as cheap as the ping) and the lease is
   *  not extended.  A resting session is reported LOST only when its
   *  servers answered nothing for a session timeout (counted from the
   *  sending of the last request they answered, less the allowance), as
   *  Curator reports LOST after a session timeout without its servers.
   *  A grant to a session whose lease rested waits for one sync (a round
   *  trip to the leader) before it is reported.  Keepalives go every 0.3
   *  of the session timeout, or closer when the timeout is only a few
   *  server ticks (told or assumed: down to about a tenth of it at two
   *  ticks), so that one sync always suffices. */
  ZKRC_LEASE_ON_DEMAND = 0,
  /** All the time (what earlier releases did): a session holding nothing
   *  is reported LOST when its renewed lease runs out, as a holder is.
   *  For an application that makes its own ephemeral nodes or needs
   *  zkrc_session_lease_remaining() kept up. */
  ZKRC_LEASE_ALWAYS = 1
} zkrc_lease_renewal;

/** What the ZooKeeper client this library was built with can do
 *  (zkrc_features()). */
typedef enum zkrc_feature {
  /** zkrc_session_options.tls_* (zookeeper_init_ssl). */
  ZKRC_FEATURE_TLS = 1 << 0,
  /** zkrc_session_options.sasl_* (zookeeper_init_sasl). */
  ZKRC_FEATURE_SASL = 1 << 1,
  /** zkrc_session_options.tls_server_name (a client patched to check it:
   *  scripts/build-zookeeper-client). */
  ZKRC_FEATURE_TLS_SERVER_NAME = 1 << 2
} zkrc_feature;

/** The zkrc_feature bits of the ZooKeeper client this library was built
 *  with.  Debian's libzookeeper-mt has neither; see README, "TLS and
 *  SASL", for a client that has both.  Threading: any; pure. */
unsigned zkrc_features(void);

/** Fill @p opts with the defaults.  Threading: any thread.  Fills the
 *  first @p size bytes of @p opts, the size of the struct as your program
 *  was compiled with it, and sets its size field to it: the fields a
 *  program built against an older, shorter zkrc_session_options lacks are
 *  never written.  Call zkrc_session_options_init(), which passes it. */
void zkrc_session_options_init_sized(zkrc_session_options *opts, size_t size);

/** Fill @p opts with the defaults.  Threading: any thread.  Inline: it
 *  passes sizeof *@p opts as this header defines it to
 *  zkrc_session_options_init_sized(), so a program keeps working with a
 *  later library whose struct has grown (and a later program, whose
 *  struct is longer, with this library: the fields it does not know are
 *  ignored). */
static inline void zkrc_session_options_init(zkrc_session_options *opts) {
  zkrc_session_options_init_sized(opts, sizeof *opts);
}

/**
 * Open a session to @p hosts ("host:port,host:port[/chroot]") and wait until
 * it is connected, at most opts->connect_timeout_ms.
 *
 * Host names that do not resolve (a name service not up yet) are not an
 * error: the session tries again, 100 ms later and then twice as long each
 * time up to 10 s, also when it reopens after an expiry.
 *
 * @param out   receives the session; set to NULL on failure.
 * @param opts  NULL for the defaults.
 * @return ZKRC_OK; ZKRC_EINVAL for a NULL or malformed argument (a negative
 *         timeout, a host string that is not "host:port[,host:port...]
 *         [/chroot]" with ports 1..65535 and a valid chroot path);
 *         ZKRC_ECONNECT when no server answered in time, names that did
 *         not resolve included, and over TLS a handshake refused by
 *         either side (the ZooKeeper client logs why; nothing is left
 *         running), and a SASL password the servers refuse (they close
 *         the connection, which the 3.8 client retries); ZKRC_EAUTHFAILED
 *         when the client reports refused credentials; ZKRC_ENOTSUP for TLS or SASL options the client
 *         cannot honour (zkrc_features()); ZKRC_ENOMEM.
 * Threading: any thread, not a session callback of this session.
 * Ownership: the caller owns *out and closes it with zkrc_session_close().
 */
int zkrc_session_connect(zkrc_session **out, const char *hosts,
                         const zkrc_session_options *opts);

/**
 * Like zkrc_session_connect() but returns at once; the session connects in
 * the background (for ever, until closed: also while the host names do not
 * resolve).  Use zkrc_session_wait_connected() or a listener.
 */
int zkrc_session_new(zkrc_session **out, const char *hosts,
                     const zkrc_session_options *opts);

/**
 * Wait until the session is connected.
 *
 * @param timeout_ms  ZKRC_WAIT_FOREVER, ZKRC_NO_WAIT or a positive count of
 *                    milliseconds; other negative values are refused.
 * @return ZKRC_OK when connected; ZKRC_ETIMEDOUT; ZKRC_ECLOSED when the
 *         session is closed; ZKRC_EINVAL.
 * Threading: any thread except the session's callback thread.
 */
int zkrc_session_wait_connected(zkrc_session *s, int timeout_ms);

/**
 * Take over a handle the application already opened with zookeeper_init().
 * The session installs its own watcher on the handle and calls the
 * application's previous watcher (with its context) for every event after
 * its own processing, so the application keeps seeing what it saw before.
 *
 * @param zh     the handle; the session owns it from now on and closes it.
 *               Do not call zookeeper_close() on it yourself.  Its context
 *               (zoo_set_context) belongs to the session from now on:
 *               zoo_get_context() returns the session's own; the previous
 *               one is still what the application's watcher receives.
 * @param hosts  the host string to open a new session with after expiry, or
 *               NULL to close the session for good on expiry instead.
 * @return ZKRC_OK; ZKRC_EINVAL (NULL handle, handle already expired);
 *         ZKRC_ENOMEM.
 */
int zkrc_session_adopt(zkrc_session **out, zhandle_t *zh, const char *hosts,
                       const zkrc_session_options *opts);

/**
 * Close the ZooKeeper session (its ephemeral nodes go away at once when
 * connected), tell every recipe and listener (ZKRC_SESSION_EVENT_CLOSED),
 * and release the caller's reference.  With the default executor, returns
 * once every callback posted until then (CLOSED included) has run, so the
 * caller may free what its listeners use; with an executor of your own,
 * such callbacks may still be queued there (close does not wait for your
 * loop to run them).  When every recipe built on the session was freed
 * before, the session's threads have exited when this returns (it waits
 * up to 2 s for requests still in flight), or, with an executor of your
 * own that still holds calls of the session, when the last of them ran.
 * Recipes still open on the session fail later calls with ZKRC_ECLOSED
 * and must still be freed; the memory of the session goes when the last of
 * them is freed.  The sessions the library opened beside this one for lock
 * nodes ("Many nodes" at zkrc_lock_acquire_async()) are closed first, the
 * same way.
 *
 * Threading: any thread, including the session's own callback thread.
 * NULL is accepted and ignored.
 */
void zkrc_session_close(zkrc_session *s);

/** Current state.  Threading: any thread. NULL yields ZKRC_SESSION_CLOSED. */
zkrc_session_state zkrc_session_get_state(zkrc_session *s);

/**
 * The servers the session connects to now, as a connect string (with its
 * chroot, if any): the one it was made with, or the latest membership it
 * followed (zkrc_session_options.follow_ensemble).  Returns a copy
 * (free() it), or NULL for NULL @p s or an adopted handle without hosts.
 * Threading: any thread; never a round trip.
 */
char *zkrc_session_servers(zkrc_session *s);

/**
 * The current ZooKeeper session id, or 0 while none is established.
 * Threading: any thread.
 */
int64_t zkrc_session_id(zkrc_session *s);

/**
 * The session timeout the servers granted, in ms, or the requested one
 * while none is established.  Threading: any thread.
 */
int zkrc_session_timeout(zkrc_session *s);

/**
 * How long, in ms, the servers certainly keep the current ZooKeeper session
 * from now on (see "The lease" above): 0 when there is none (not connected
 * yet, run out, closed).  While the lease rests (nothing depends on it:
 * zkrc_lease_renewal) it is not extended, and this is what is left of the
 * last one.  A daemon may refuse to start a piece of work that
 * would outlive it, as Chubby clients do.  Local state only; nothing is
 * sent.  Threading: any thread.  NULL yields 0.
 */
int zkrc_session_lease_remaining(zkrc_session *s);

/**
 * While the servers keep answering the renewals promptly, the remaining
 * lease does not fall below this many ms (about a quarter of the session
 * timeout when the tick is short).  A remaining lease below it means the
 * renewals are late: the connection is down, or the servers are slow or cut
 * off from their leader; time to wind down what must not outlive the lease
 * (zkr-lock sends its command SIGTERM then).  0 when there is no lease.
 * Threading: any thread.  NULL yields 0.
 */
int zkrc_session_lease_floor(zkrc_session *s);

/**
 * The current session's id and password, for tools that need to open a
 * second handle on the same session (the test harness expires sessions that
 * way).  @return ZKRC_OK; ZKRC_ESTATE when no session is established.
 */
int zkrc_session_client_id(zkrc_session *s, clientid_t *out);

/**
 * Register @p fn to receive every later event.
 *
 * @param id  if not NULL, receives a handle for zkrc_session_remove_listener.
 * @return ZKRC_OK; ZKRC_EINVAL; ZKRC_ECLOSED; ZKRC_ENOMEM.
 * Threading: any thread.  Ownership: @p arg stays the caller's.
 */
int zkrc_session_add_listener(zkrc_session *s, zkrc_session_event_fn fn,
                              void *arg, unsigned long *id);

/**
 * Stop delivering events to listener @p id.  Events already queued for it are
 * dropped; a call running on the callback thread at this moment finishes, so
 * free @p arg only once that cannot be the case (for example from a
 * callback, or after zkrc_session_close()).
 * @return ZKRC_OK; ZKRC_EINVAL for an unknown id.
 */
int zkrc_session_remove_listener(zkrc_session *s, unsigned long id);

/**
 * Add authentication (zoo_add_auth) to the session and wait for the server
 * to accept it.  The credentials are remembered and given again to every new
 * ZooKeeper session this object opens after an expiry, and to the sessions
 * the library opens beside it for lock nodes ("Many nodes" at
 * zkrc_lock_acquire_async(); it does not wait for their answer: a refusal
 * ends that session, as it would end this one).
 *
 * @param scheme  e.g. "digest"; @param cred e.g. "user:password".
 * @return ZKRC_OK; ZKRC_EAUTHFAILED; ZKRC_ETIMEDOUT; ZKRC_EINVAL;
 *         ZKRC_ECLOSED.
 * Threading: any thread except the callback thread.
 */
int zkrc_session_add_auth(zkrc_session *s, const char *scheme, const char *cred,
                          int timeout_ms);

/**
 * Call @p fn with the current ZooKeeper handle, pinned so that it stays open
 * while @p fn runs.  For raw ZooKeeper calls next to the recipes.  @p fn must
 * not block for long (issue asynchronous calls, or synchronous ones with the
 * session's timeout in mind) and must not close the handle.
 *
 * @return what @p fn returned; ZKRC_ECONNLOSS when no handle is open right
 *         now (between an expiry and the next session); ZKRC_ECLOSED.
 */
int zkrc_session_with_handle(zkrc_session *s,
                             int (*fn)(zhandle_t *zh, void *arg), void *arg);

#ifdef __cplusplus
}
#endif
#endif /* ZKRECIPES_SESSION_H */
