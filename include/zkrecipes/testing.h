/*
 * zkrecipes/testing.h - a real local ZooKeeper ensemble for tests
 * (libzkrecipes-testing).
 *
 * Starts 1 to 5 members of the installed ZooKeeper server (Debian's
 * `zookeeper` package, run on the installed Java) on free loopback ports, each
 * in its own temporary data directory; waits until a quorum serves requests;
 * and gives the connect string.  Members can be killed, stopped, restarted
 * with their data, paused and resumed, and, in an ensemble that allows
 * reconfiguration, added and removed; the leader can be found; a client's
 * session can be expired on demand; and a loopback fault proxy can sit
 * between clients and each member.
 *
 * Everything started is stopped, and its directories removed, by
 * zkrc_ensemble_stop() - and also when the test process crashes or is killed:
 * a small reaper process watches the test process and cleans up after it, and
 * every member is started with a parent-death signal.
 *
 * Layout: the ensemble directory is BASE/zkr-ensemble-XXXXXX; member i has
 * mI/zoo.cfg, mI/data (its dataDir) and mI/member.log (its stdout and stderr,
 * appended to on restart).  When a member fails to start, the tail of its log
 * is printed to stderr.  A TLS ensemble's credentials are in tls/ (and
 * tls/openssl.log what the openssl command said), a SASL ensemble's JAAS file
 * and password files in sasl/.
 *
 * Crash safety: each member is forked with PR_SET_PDEATHSIG(SIGKILL), tied to
 * the thread that forked it (see zkrc_ensemble_start()).  Each ensemble also
 * forks a reaper process, linked to the test process by a socket; when that
 * link reaches end-of-file without zkrc_ensemble_stop()'s goodbye (crash,
 * SIGKILL, exit or exec without a stop), the reaper SIGKILLs the members it
 * was told about (each restart tells it the new pid), removes the directory,
 * and exits.  A child forked by the test process without exec inherits the
 * link and delays the reaper until that child exits too.
 *
 * Threading: the functions may be called from any thread, concurrently,
 * except zkrc_ensemble_stop(), which must not race with any other call on the
 * same ensemble.  Answers from members (four-letter words, waits) are
 * obtained without holding the ensemble's lock.
 *
 * Environment: ZKR_ZOOKEEPER_CLASSPATH overrides the server's class path
 * (default: the jars in /usr/share/java), ZKR_JAVA the java binary (default:
 * java on PATH), ZKR_ENSEMBLE_KEEP=1 keeps the directories for inspection
 * (also after a crash), ZKR_ENSEMBLE_LOG=1 lets members write their log to
 * stderr (and lets the harness's own ZooKeeper handle log).
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef ZKRECIPES_TESTING_H
#define ZKRECIPES_TESTING_H

#include <stddef.h>
#include <sys/types.h>
#include <stdint.h>
#include <zookeeper/zookeeper.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zkrc_ensemble zkrc_ensemble;

/** Options of an ensemble; initialize with zkrc_ensemble_options_init(). */
typedef struct zkrc_ensemble_options {
  /** Set by zkrc_ensemble_options_init() to the size of the struct your
   *  program was compiled with, so that later versions of the library,
   *  with more fields, read only the fields it knows.  Options that were
   *  not initialised (size 0) are refused. */
  size_t size;
  /** Number of members, 1 to 5.  Default 1. */
  int members;
  /** tickTime in ms.  Default 200, so the shortest session timeout is 400
   *  ms and expiry tests are fast. */
  int tick_ms;
  /** maxSessionTimeout in ms (0: ZooKeeper's default of 20 ticks). */
  int max_session_timeout_ms;
  /** znode.container.checkIntervalMs (0: 100 ms, so container cleanup is
   *  quick to observe). */
  int container_check_ms;
  /** Non-zero: put a fault proxy (below) in front of every member; the
   *  connect string then names the proxies.  Default 0. */
  int with_proxies;
  /** How long zkrc_ensemble_start() waits for a serving quorum, in ms.
   *  Default 60000. */
  int start_timeout_ms;
  /** Parent directory of the ensemble's temporary directory.  NULL: $TMPDIR
   *  or /tmp. */
  const char *base_dir;
  /** Non-zero: forceSync=no (members do not fsync their transaction log).
   *  Faster and steadier for functional tests; leave 0 (real fsync) when
   *  measuring.  Default 0. */
  int no_fsync;
  /** Each member's Java heap (-Xmx), in MiB; 0: 256.  A member keeps every
   *  node in memory, about 0.7 KiB each: 100,000 locks are 200,000 nodes,
   *  and the empty directories they leave are removed at most 10,000 a
   *  minute. */
  int heap_mb;
  /** Non-zero: every member serves clients over TLS only, with mutual
   *  authentication.  Each listens on a secureClientPort (Netty,
   *  NettyServerCnxnFactory) and on no plaintext client port at all; it
   *  presents a certificate of a test CA made at the start (see
   *  zkrc_ensemble_tls_file()) and requires a client certificate signed by
   *  that CA (ssl.clientAuth=need).  The connect string and the members'
   *  addresses and ports name the secure ports.  Connections between
   *  members (quorum and election) stay plaintext, on loopback.  The
   *  harness asks its members its four-letter words over TLS, with the
   *  client certificate, so the waits, zkrc_ensemble_leader() and
   *  zkrc_ensemble_four_letter() work as without TLS; so does
   *  zkrc_ensemble_expire_session(), through a TLS connection of the
   *  harness's own.  Cannot be combined with with_proxies (a fault proxy
   *  follows ZooKeeper's packets, which TLS hides): zkrc_ensemble_start()
   *  refuses that.  Needs the openssl command (Debian's `openssl`), which
   *  makes the credentials in 0.2 to 0.4 s.  Default 0. */
  int tls;
  /** Non-zero: members authenticate clients that ask with SASL
   *  DIGEST-MD5, for two users (see zkrc_ensemble_sasl_user()) from a JAAS
   *  file made at the start (its "Server" section,
   *  -Djava.security.auth.login.config), and know the `sasl' ACL scheme
   *  (authProvider.sasl=...SASLAuthenticationProvider).  Authentication is
   *  not required: a client that does not ask is served as anyone, and
   *  ACLs decide (sasl:USER:PERMS); a client whose authentication fails
   *  is refused (its handle reports an authentication failure).  The
   *  server's DIGEST-MD5 is protocol "zookeeper", server name and realm
   *  "zk-sasl-md5".  May be combined with tls (SASL inside TLS) and with
   *  with_proxies.  Default 0. */
  int sasl;
  /** Non-zero: members accept TTL nodes and the other extended node types
   *  (-Dzookeeper.extendedTypesEnabled=true; ZooKeeper then reserves the
   *  server id 255, which the harness never uses).  Off, as ZooKeeper's
   *  default, servers refuse a create of a TTL node (ZUNIMPLEMENTED).  The
   *  nodes expire at the container checks (container_check_ms).
   *  Default 0. */
  int extended_types;
  /** Non-zero: members allow dynamic reconfiguration, as a client's
   *  zoo_reconfig() asks: reconfigEnabled=true, standaloneEnabled=false
   *  (one member too runs as a quorum), skipACL=yes (any client may
   *  reconfigure), and each server line carries its client address
   *  ("server.N=127.0.0.1:PEER:ELECTION:participant;127.0.0.1:CLIENT"), so
   *  that /zookeeper/config lists every member's.  ZooKeeper keeps the
   *  membership in a dynamic file beside the member's configuration.  Not
   *  with tls.  Default 0. */
  int reconfig;
} zkrc_ensemble_options;

/** Fill @p opts with the defaults.  Fills the first @p size bytes of @p
 *  opts, the size of the struct as your program was compiled with it, and
 *  sets its size field to it: the fields a program built against an
 *  older, shorter zkrc_ensemble_options lacks are never written.  Call
 *  zkrc_ensemble_options_init(), which passes it. */
void zkrc_ensemble_options_init_sized(zkrc_ensemble_options *opts, size_t size);

/** Fill @p opts with the defaults.  Inline: it passes sizeof *@p opts as
 *  this header defines it to zkrc_ensemble_options_init_sized(), so a
 *  program keeps working with a later library whose struct has grown (and
 *  a later program, whose struct is longer, with this library: the fields
 *  it does not know are ignored). */
static inline void zkrc_ensemble_options_init(zkrc_ensemble_options *opts) {
  zkrc_ensemble_options_init_sized(opts, sizeof *opts);
}

/**
 * Start an ensemble and wait until a quorum serves requests - in fact until
 * every member does, as zkrc_ensemble_wait_serving() means it (so
 * zkrc_ensemble_leader() names the leader), so that tests start from a
 * settled ensemble.
 *
 * Ports: each member gets a client, a peer and an election port, chosen free
 * on 127.0.0.1 below the kernel's ephemeral range (so outgoing connections
 * cannot take them while a member is down) and held for the ensemble's
 * lifetime against other ensembles of this process.  Should a port be taken
 * by another process before the JVM binds it, the start is retried on new
 * ports.
 *
 * @param out   receives the ensemble, or NULL on failure.
 * @param opts  NULL for the defaults; zero fields take their default.
 * @return 0; -1 with a message on stderr (and the failing member's log tail)
 *         when it could not start in time or an option is out of range
 *         (everything started is stopped again).
 * Threading: call from the thread that will stay alive for the ensemble's
 * lifetime (the parent-death signal is tied to it); usually main.
 */
int zkrc_ensemble_start(zkrc_ensemble **out, const zkrc_ensemble_options *opts);

/** Stop the proxies (closing their connections), every member (SIGKILL:
 *  the data is discarded anyway) and the reaper; remove the directories
 *  (unless ZKR_ENSEMBLE_KEEP=1); free @p e.  NULL is ignored.
 *  Threading: no other call on @p e may run concurrently or follow. */
void zkrc_ensemble_stop(zkrc_ensemble *e);

/** Number of members: the first ones and those zkrc_ensemble_add_member()
 *  added (removed ones included). */
int zkrc_ensemble_size(const zkrc_ensemble *e);

/** "127.0.0.1:p1,127.0.0.1:p2,..." (through the proxies when enabled; the
 *  secure client ports in a TLS ensemble).
 *  Owned by the ensemble; valid until zkrc_ensemble_stop(). */
const char *zkrc_ensemble_connect_string(const zkrc_ensemble *e);

/** The same, naming the members directly even when proxies are enabled. */
const char *zkrc_ensemble_direct_connect_string(const zkrc_ensemble *e);

/** "127.0.0.1:port" of member @p i (0-based), through its proxy when
 *  enabled.  Owned by the ensemble. */
const char *zkrc_ensemble_member_address(const zkrc_ensemble *e, int i);

/** Client port of member @p i (the member itself, not its proxy); its
 *  secure client port in a TLS ensemble. */
int zkrc_ensemble_member_port(const zkrc_ensemble *e, int i);

/* ---- credentials of TLS and SASL ensembles ------------------------------ */

/** The files of a TLS ensemble's test credentials
 *  (zkrc_ensemble_tls_file()).  Certificates are PEM, keys unencrypted
 *  PEM (PKCS#8, EC P-256); certificates for members and clients name
 *  IP:127.0.0.1 and DNS:localhost.  Made with the openssl command at the
 *  ensemble's start, in ENSEMBLE_DIR/tls, valid for a year. */
typedef enum zkrc_tls_file {
  /** The test CA's certificate: what clients trust, and members too (for
   *  client certificates). */
  ZKRC_TLS_CA,
  /** A client certificate the test CA signed: members accept it. */
  ZKRC_TLS_CLIENT_CERT,
  /** Its private key. */
  ZKRC_TLS_CLIENT_KEY,
  /** The same key and certificate (with the CA's) as a PKCS12 key store,
   *  for Java clients (zookeeper.ssl.keyStore.type=PKCS12); its password
   *  is ZKRC_TLS_STORE_PASSWORD.  A Java client can trust ZKRC_TLS_CA as
   *  it is (zookeeper.ssl.trustStore.type=PEM). */
  ZKRC_TLS_CLIENT_KEYSTORE,
  /** An unrelated CA's certificate: a client that trusts only it must
   *  refuse the members. */
  ZKRC_TLS_OTHER_CA,
  /** A client certificate the unrelated CA signed: members refuse it. */
  ZKRC_TLS_OTHER_CLIENT_CERT,
  /** Its private key. */
  ZKRC_TLS_OTHER_CLIENT_KEY,
  /** The members' PKCS12 key store (their key, certificate and the CA's),
   *  password ZKRC_TLS_STORE_PASSWORD. */
  ZKRC_TLS_SERVER_KEYSTORE
} zkrc_tls_file;

/** The password of the PKCS12 key stores of zkrc_ensemble_tls_file(). */
#define ZKRC_TLS_STORE_PASSWORD "zkrecipes-test"

/**
 * The path of credential file @p which of a TLS ensemble.  For the
 * ZooKeeper C client's zookeeper_init_ssl(), the certificate string is
 * "CA,CLIENT_CERT,CLIENT_KEY,PASSWORD" of these paths (the key is not
 * encrypted: any PASSWORD does); with ZKRC_TLS_OTHER_CA, or the other
 * client certificate and key, it must fail.
 * @return the path (owned by the ensemble, valid until
 *         zkrc_ensemble_stop()), or NULL when @p e is NULL, was not
 *         started with tls, or @p which is not a zkrc_tls_file.
 * Threading: any thread.
 */
const char *zkrc_ensemble_tls_file(const zkrc_ensemble *e, zkrc_tls_file which);

/**
 * SASL user @p i (0 or 1) of a SASL ensemble: its name ("zkrc", then
 * "alice") and the file holding its password (a random one per ensemble,
 * the file's whole content, without a newline: what the ZooKeeper C
 * client's zoo_sasl_make_basic_callbacks() reads).  Members know both
 * users (DIGEST-MD5); neither is a super user.
 * @param user           receives the name, or NULL on failure (may be
 *                       NULL).
 * @param password_file  receives the path, or NULL on failure (may be
 *                       NULL).
 * Both are owned by the ensemble, valid until zkrc_ensemble_stop().
 * @return 0, or -1 when @p e is NULL, was not started with sasl, or @p i
 *         is out of range.  Threading: any thread.
 */
int zkrc_ensemble_sasl_user(const zkrc_ensemble *e, int i, const char **user,
                            const char **password_file);

/** Process id of member @p i, or -1 when it is not running (a member that
 *  exited on its own is noticed and reaped here).  A paused member has its
 *  pid. */
int zkrc_ensemble_member_pid(const zkrc_ensemble *e, int i);

/** SIGKILL member @p i (paused or not) and reap it; it is gone when this
 *  returns.  @return 0, or -1 for a bad index or a member not running. */
int zkrc_ensemble_kill(zkrc_ensemble *e, int i);
/** SIGTERM member @p i (continuing it if paused) and wait for it to exit;
 *  SIGKILL after 15 s.  @return 0, or -1 for a bad index or a member not
 *  running. */
int zkrc_ensemble_stop_member(zkrc_ensemble *e, int i);
/** Start a killed or stopped member again with its data, on the same ports.
 *  Does not wait for it to serve: see zkrc_ensemble_wait_serving().
 *  @return 0, or -1 for a bad index, a member still running, or a failed
 *  fork/exec.  Threading: as for zkrc_ensemble_start(), the new process's
 *  parent-death signal is tied to the calling thread. */
int zkrc_ensemble_restart(zkrc_ensemble *e, int i);
/** SIGSTOP member @p i and wait until it is stopped (so it is frozen when
 *  this returns).  Pausing a paused member does nothing.  While paused, the
 *  member is not asked anything by zkrc_ensemble_leader(),
 *  zkrc_ensemble_mntr_sum() and the waits (the epoch it recorded on disk
 *  still counts, see zkrc_ensemble_leader()), and zkrc_ensemble_four_letter()
 *  fails at once for it.  A member paused longer than syncLimit (10 ticks:
 *  2 s by default) is given up by the others; a paused leader is then
 *  replaced by a new one.
 *  @return 0 or -1. */
int zkrc_ensemble_pause(zkrc_ensemble *e, int i);
/** SIGCONT member @p i.  It then goes on from where it was frozen: a
 *  member the others gave up still answers `srvr` as before ("Mode: leader"
 *  for a deposed leader, for up to about a tick) until it notices; use
 *  zkrc_ensemble_wait_serving() to know when it is back in the quorum.
 *  @return 0, or -1 when it is not running. */
int zkrc_ensemble_resume(zkrc_ensemble *e, int i);

/**
 * Add a member by dynamic reconfiguration, the way ZooKeeper's
 * reconfiguration guide adds a server to a running ensemble: a new member
 * (index zkrc_ensemble_size() before the call, myid that plus 1) on new
 * free loopback ports, in its own directory (mI), starts with the
 * configuration the members have now (/zookeeper/config's server lines)
 * plus itself as a participant, and follows the leader without a vote;
 * then the harness's own client asks for the reconfiguration ("add
 * server.N=127.0.0.1:PEER:ELECTION:participant;127.0.0.1:CLIENT", as
 * zoo_reconfig()), again with a backoff while the leader refuses it (no
 * quorum of the new configuration synced yet, another reconfiguration
 * under way), and waits until the member serves in the quorum
 * (zkrc_ensemble_wait_serving()).  Only for an ensemble started with
 * reconfig and without with_proxies.
 *
 * The new member is then a member like the others (killed, paused,
 * restarted, asked, stopped and reaped with the ensemble: the reaper
 * knows its process); zkrc_ensemble_size() counts it, and the quorum's
 * majority is of the members in the configuration.  The connect strings
 * stay those of the first members; zkrc_ensemble_member_address() and
 * zkrc_ensemble_member_port() name the new one.  At most 5 members in
 * all, removed ones included.
 *
 * @param timeout_ms  bound of the whole addition (a JVM's start
 *                    included: give it 60000 on a loaded machine).
 * @return the new member's index; -1 with a message on stderr (the
 *         member's log tail when it failed: it is then killed, and stays
 *         counted, outside the configuration) when the ensemble is full,
 *         not started with reconfig, has proxies, or the addition did not
 *         complete in time.
 * Threading: as zkrc_ensemble_restart() (the member's parent-death signal
 * is tied to the calling thread); must not race with another call on
 * @p e.  Blocks up to @p timeout_ms.
 */
int zkrc_ensemble_add_member(zkrc_ensemble *e, int timeout_ms);

/**
 * Remove member @p i from the configuration by dynamic reconfiguration
 * (the harness's client asks "remove N", as zoo_reconfig(), again with a
 * backoff while the leader refuses), then wait until a quorum of the
 * remaining members serves (a removed leader is replaced).  The member
 * keeps running, outside the configuration: the quorum neither asks nor
 * counts it, and zkrc_ensemble_wait_serving() never sees it serve;
 * zkrc_ensemble_stop_member() or zkrc_ensemble_kill() ends it.  It cannot
 * be added back.
 * @return 0, or -1 (bad index, not started with reconfig, a member not in
 *         the configuration, no answer or no quorum within @p timeout_ms).
 * Threading: must not race with another call on @p e.  Blocks up to
 * @p timeout_ms.
 */
int zkrc_ensemble_remove_member(zkrc_ensemble *e, int i, int timeout_ms);

/**
 * Wait until member @p i serves requests in the current quorum, or, with
 * @p i == -1, until a quorum serves under a leader it agrees on (then
 * zkrc_ensemble_leader() names it).  Member @p i serves when it is that
 * leader, or when it answers "Mode: follower" and has joined that leader
 * (its recorded epoch is the leader's), and the leader counts at least as
 * many synced followers (`mntr` zk_synced_followers) as members claim to
 * follow it - else some claim is stale (a follower dropped while paused
 * says "follower" until it notices) and none is trusted yet.  A member's
 * own Mode is not enough: a resumed, deposed leader still says "leader".
 * With one member: when it answers "Mode: standalone".  Looks every 50 ms.
 * @return 0, or -1 on timeout, for a bad index, or at once when member
 *         @p i is not running (killed, stopped, or exited).
 */
int zkrc_ensemble_wait_serving(zkrc_ensemble *e, int i, int timeout_ms);

/**
 * Index of the leader a quorum agrees on (with one member: 0 when it serves,
 * standalone, or with reconfig as a quorum of one); -1 while there is none - during an election, or right after
 * a paused leader was replaced and resumed, while it still claims to lead:
 * poll it with a deadline.  Never a deposed leader.
 *
 * From one look at the members: every running, unpaused member's `srvr`
 * (its Mode, and its Zxid, whose high 32 bits are the epoch), the leader's
 * `mntr`, and every member's currentEpoch file (data/version-2/currentEpoch
 * of its directory, read before and after; paused and killed members'
 * too).  A member is named only when
 *  - it answers "Mode: leader" in the newest epoch any member has recorded
 *    (a member records an epoch only once a quorum accepted it, so a later
 *    leader always has a newer epoch: of two claiming to lead, the newer
 *    epoch wins, and a leader deposed while paused, whose epoch is older,
 *    never does), and
 *  - with the running followers that recorded its epoch and that it counts
 *    as synced, it makes a majority of all members.
 * @return the index, or -1.
 */
int zkrc_ensemble_leader(zkrc_ensemble *e);

/**
 * Send the four-letter word @p cmd ("srvr", "mntr", "wchc", "wchp", ...) to
 * member @p i and return its whole answer.
 * Sent directly to the member, never through its proxy; over TLS, with the
 * client certificate of zkrc_ensemble_tls_file(), in a TLS ensemble.
 * @param out  receives a malloc'ed NUL-terminated answer; free() it.  Set to
 *             NULL on failure.
 * @return 0, or -1 (bad index, member not running or paused, no complete
 *         answer within 5 s).  A word the member does not know or allow
 *         yields its own error text, with 0.
 */
int zkrc_ensemble_four_letter(zkrc_ensemble *e, int i, const char *cmd,
                              char **out);

/**
 * Sum of the integer value of `mntr` key @p key (e.g.
 * "zk_packets_received") over all running, unpaused members.
 * @return the sum over the members that report the key, or -1 when none
 *         does (unknown key, or no member answered).
 */
int64_t zkrc_ensemble_mntr_sum(zkrc_ensemble *e, const char *key);

/**
 * Send the four-letter word @p cmd to any ZooKeeper server, "HOST:PORT"
 * (a name, an IPv4 address or "[IPv6]:PORT"): for a benchmark or a check
 * against an ensemble this harness did not start (its members must allow
 * the word: 4lw.commands.whitelist).  Any thread.
 * @param out  receives a malloc'ed NUL-terminated answer; free() it.  Set to
 *             NULL on failure.
 * @return 0, or -1 (NULL argument, negative timeout, unparsable address,
 *         name not resolved, no connection, or no complete answer within
 *         @p timeout_ms).
 */
int zkrc_four_letter(const char *host_port, const char *cmd, int timeout_ms,
                     char **out);

/**
 * The integer value of key @p key ("zk_packets_received") in a `mntr`
 * answer (lines "KEY<TAB>VALUE").
 * @return 1 with *@p value set, or 0 when the key is missing, its value is
 *         not an integer, or an argument is NULL.
 */
int zkrc_mntr_value(const char *answer, const char *key, int64_t *value);

/**
 * Expire the session @p id on the servers, the way ZooKeeper's own tests do:
 * open a second handle with the same session id and password, wait for it to
 * connect, then close it.  The client owning the session learns of the
 * expiry when it next talks to a server (its connection is usually closed at
 * once, so that is soon): its watcher gets ZOO_EXPIRED_SESSION_STATE.  The
 * second handle connects directly to the members (not through proxies) and
 * logs nothing unless ZKR_ENSEMBLE_LOG=1.  Taking the session over makes the
 * servers drop its owner's connection, and the owner may reconnect and take
 * it back before the close arrives; so this repeats until a fresh handle on
 * the session is told it has expired: when it returns 0, the session is
 * dead on the servers.
 * @return 0 (also when the session had expired already), or -1 when that
 *         could not be achieved within @p timeout_ms.
 * Threading: blocks up to @p timeout_ms plus the close; do not call it from
 * a ZooKeeper watcher or completion of the handle owning the session.
 */
int zkrc_ensemble_expire_session(zkrc_ensemble *e, const clientid_t *id,
                                 int timeout_ms);

/**
 * The password the servers gave session @p session_id.  ZooKeeper's
 * servers derive it from the id and a fixed constant
 * (ZooKeeperServer.generatePasswd), so a test can expire the session of a
 * process that shows only its session id (zkr-lock -v prints the id, never
 * the password).  Threading: any thread; pure.
 */
void zkrc_ensemble_session_password(int64_t session_id, char passwd[16]);

/**
 * zkrc_ensemble_expire_session() knowing only the session's id (its
 * password from zkrc_ensemble_session_password()).
 * @return as zkrc_ensemble_expire_session().
 */
int zkrc_ensemble_expire_session_id(zkrc_ensemble *e, int64_t session_id,
                                    int timeout_ms);

/* ------------------------------------------------------------------------
 * Fault proxy: a loopback TCP proxy in front of one member.  With
 * zkrc_ensemble_options.with_proxies, member i has proxy i.  One thread of
 * the test process serves all proxies of an ensemble; it follows
 * ZooKeeper's packet framing in both directions.  Every function below is
 * thread-safe, takes effect before it returns (the proxy thread has applied
 * it), and returns 0, or -1 for a bad index or when proxies are not
 * enabled.
 * --------------------------------------------------------------------- */

/** Close every connection through proxy @p i now (clients see connection
 *  loss and reconnect, with their sessions intact). */
int zkrc_proxy_drop_all(zkrc_ensemble *e, int i);

/**
 * Arm proxy @p i: the next client request through it (a packet with a
 * non-negative xid: not the handshake, a ping, an auth or a set-watches
 * packet) is forwarded to the member; when the member's reply to it arrives,
 * the reply and everything after it is swallowed and the connection closed.
 * So the request took effect on the servers, and the client sees connection
 * loss (ZCONNECTIONLOSS for that request and any after it on the same
 * connection) instead of its reply.  Only the first such request through the
 * proxy, on any of its connections, is affected; the proxy stays armed until
 * one passes.
 */
int zkrc_proxy_drop_after_next_request(zkrc_ensemble *e, int i);

/** Delay all traffic through proxy @p i by @p ms in each direction (0 ends
 *  the delay; bytes already held keep their delay).  A round trip then takes
 *  at least 2 * @p ms.  Order is kept. */
int zkrc_proxy_delay(zkrc_ensemble *e, int i, int ms);

/** Black-hole proxy @p i for @p ms: connections stay open but nothing gets
 *  through, and new connections are accepted but get nothing (a partition
 *  as the client sees it; the member sees nothing of new connections either).
 *  Bytes are held, not lost, as TCP would retransmit them: afterwards traffic
 *  flows again, starting with what was held, on the connections the client
 *  has not given up.  @p ms <= 0 ends a blackhole early. */
int zkrc_proxy_blackhole(zkrc_ensemble *e, int i, int ms);

/** Refuse new connections through proxy @p i (and drop current ones) while
 *  @p refuse is non-zero.  The proxy keeps its port: a new connection is
 *  accepted and reset at once, so the client sees ECONNRESET rather than
 *  ECONNREFUSED - both are a failed connect to the ZooKeeper client. */
int zkrc_proxy_refuse(zkrc_ensemble *e, int i, int refuse);

/* ---- child processes ---------------------------------------------------- */

/** How zkrc_spawn() starts a child.  Initialise with
 *  zkrc_spawn_options_init(), then set what you need. */
typedef struct zkrc_spawn_options {
  /** Set by zkrc_spawn_options_init(), as zkrc_ensemble_options.size. */
  size_t size;
  /** Non-zero: the child's stdin is a pipe whose write end is
   *  zkrc_child.in_fd.  Otherwise it shares ours. */
  int pipe_stdin;
  /** Non-zero: the child's stdout is a pipe whose read end is
   *  zkrc_child.out_fd.  Otherwise it shares ours. */
  int pipe_stdout;
  /** Non-zero: the child's stderr is a pipe whose read end is
   *  zkrc_child.err_fd.  Otherwise it shares ours. */
  int pipe_stderr;
  /** NULL, or "NAME=value" strings (NULL-terminated) added to our
   *  environment for the child, replacing variables of the same name. */
  char *const *extra_env;
  /** Non-zero: the child leads a process group of its own (so that
   *  kill(-pid, sig) reaches it and whatever it starts). */
  int new_process_group;
} zkrc_spawn_options;

/** A child started by zkrc_spawn(). */
typedef struct zkrc_child {
  pid_t pid;  /**< its process id; 0 once reaped */
  int in_fd;  /**< write end of its stdin pipe, or -1 */
  int out_fd; /**< read end of its stdout pipe, or -1 */
  int err_fd; /**< read end of its stderr pipe, or -1 */
} zkrc_child;

/** Fill @p o with the defaults: no pipes, our environment, our process
 *  group.  Fills the first @p size bytes of @p o, the size of the struct
 *  as your program was compiled with it, and sets its size field to it:
 *  the fields a program built against an older, shorter
 *  zkrc_spawn_options lacks are never written.  Call
 *  zkrc_spawn_options_init(), which passes it. */
void zkrc_spawn_options_init_sized(zkrc_spawn_options *o, size_t size);

/** Fill @p o with the defaults: no pipes, our environment, our process
 *  group.  Inline: it passes sizeof *@p o as this header defines it to
 *  zkrc_spawn_options_init_sized(), so a program keeps working with a
 *  later library whose struct has grown (and a later program, whose
 *  struct is longer, with this library: the fields it does not know are
 *  ignored). */
static inline void zkrc_spawn_options_init(zkrc_spawn_options *o) {
  zkrc_spawn_options_init_sized(o, sizeof *o);
}

/**
 * Start @p argv (argv[0] looked up in PATH unless it holds a '/') as a
 * child that cannot outlive the calling thread: it gets SIGKILL when the
 * thread that spawned it ends (PR_SET_PDEATHSIG), so a test that crashes
 * or is killed leaves no child behind.  Spawn from a thread that lives as
 * long as the child should (the main thread, in a test).  The child
 * inherits no descriptor but 0, 1 and 2; our ends of its pipes are
 * close-on-exec, so no other child inherits them.  It starts with every
 * signal at its default disposition and none blocked, whatever the
 * spawning thread ignored or blocked.  Safe in a process with
 * threads (the child runs only async-signal-safe calls before exec).
 * @param child  filled in on success (pid, and the pipes asked for, -1
 *               otherwise); on failure pid is 0 and every fd is -1.
 * @param o      NULL for the defaults.
 * @return 0; -1 with errno set (EINVAL: NULL @p child or @p argv, empty
 *         argv, options not initialised; or what pipe2() or fork() said).
 *         A program that cannot be executed is a child that exits 127.
 */
int zkrc_spawn(zkrc_child *child, char *const argv[],
               const zkrc_spawn_options *o);

/**
 * Wait at most @p timeout_ms for @p child to end and reap it; on timeout
 * it is SIGKILLed (its process group too when it leads one) and reaped.
 * Closes neither pipe (zkrc_child_close() does).
 * @return its exit status (0..255), 128 + the signal that killed it, or -1
 *         (timeout, NULL, already reaped, or not our child).
 */
int zkrc_child_wait(zkrc_child *child, int timeout_ms);

/** Close whichever of @p child's pipes are open (sets them to -1).  Does
 *  not wait for it. */
void zkrc_child_close(zkrc_child *child);

#ifdef __cplusplus
}
#endif
#endif /* ZKRECIPES_TESTING_H */
