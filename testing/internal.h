/*
 * testing/internal.h - the pieces libzkrecipes-testing is built from.
 *
 * Nothing here is exported (the library exports only ^zkrc_[a-z] symbols);
 * the zkrc__ prefix keeps these names apart from the public API and from the
 * core library's own internals.
 *
 *   process.c  forking members with a parent-death signal, waiting for them
 *   reaper.c   the process that cleans up when the test process dies
 *   fsutil.c   removing a directory tree (async-signal-safe), reading logs
 *   net.c      loopback ports and the four-letter-word client (plain or TLS)
 *   security.c a TLS or SASL ensemble's test credentials, and the TLS
 *              context the harness asks its members with
 *   proxy.c    the fault proxy thread
 *   member.c   one ZooKeeper member: its config, start, kill, stop, pause
 *   quorum.c   which leader a quorum agrees on, and who serves under it
 *   reconfig.c members added and removed by dynamic reconfiguration
 *   ensemble.c the public API
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef ZKRECIPES_TESTING_INTERNAL_H
#define ZKRECIPES_TESTING_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "zkrecipes/testing.h"

/* An *_options_init_sized() of this library: the caller's @p size bytes
 * get our defaults' first bytes, zeros past them, and @p size in the first
 * field (a struct of an older, shorter header is never written past its
 * end); NULL and sizes too small are ignored. */
void zkrc__testing_options_give(void *opts, size_t size, const void *full,
                                size_t full_size);

#define ZKRC__MAX_MEMBERS 5

/* ---- time --------------------------------------------------------------- */

/** Milliseconds on the monotonic clock. */
int64_t zkrc__now_ms(void);

/** Sleep @p ms milliseconds (restarted on EINTR). */
void zkrc__sleep_ms(int ms);

/* ---- process.c ---------------------------------------------------------- */

/** In a forked child, before exec (async-signal-safe): every signal's
 *  disposition to the default and an empty signal mask, whatever the test
 *  process had. */
void zkrc__default_signals(void);

/**
 * Fork and exec @p argv[0] (an absolute path) with @p argv, in directory
 * @p cwd, stdin from /dev/null and stdout and stderr on @p out_fd.  The child
 * gets SIGKILL when the calling thread dies (PR_SET_PDEATHSIG), its own
 * process group, default signal dispositions and an empty signal mask, and no
 * descriptor but 0, 1 and 2.
 * @return the child's pid, or -1 with a message on stderr (including when
 *         the exec itself failed).
 */
pid_t zkrc__spawn(char *const argv[], const char *cwd, int out_fd);

/**
 * Wait up to @p timeout_ms for child @p pid to exit, and reap it.
 * @return 1 when it exited (or is no longer our child), 0 on timeout,
 *         -1 on an unexpected error.
 */
int zkrc__wait_exit(pid_t pid, int timeout_ms);

/**
 * Wait up to @p timeout_ms until child @p pid is stopped by a signal.
 * @return 1 once stopped, 0 on timeout, -1 when it exited (and was reaped)
 *         or on error.
 */
int zkrc__wait_stopped(pid_t pid, int timeout_ms);

/** Non-blocking: 1 when child @p pid has exited (it is then reaped), else 0. */
int zkrc__has_exited(pid_t pid, int *status);

/** Absolute path of @p name looked up in $PATH (or @p name itself when it
 *  holds a '/'); malloc'ed, or NULL when not found. */
char *zkrc__find_program(const char *name);

/** Close every descriptor from @p lowest up, in a forked child
 *  (async-signal-safe). */
void zkrc__close_from(int lowest);

/* ---- reaper.c ----------------------------------------------------------- */

/** The parent's end of the link to one ensemble's reaper process. */
typedef struct zkrc__reaper {
  pid_t pid; /* -1 when not started */
  int fd;    /* our end of the socket pair; -1 when closed */
} zkrc__reaper;

/**
 * Fork the reaper of the ensemble directory @p dir.  When its link to us
 * reaches end-of-file without zkrc__reaper_finish() (we crashed or were
 * killed), it SIGKILLs every pid it was told about and, unless @p keep_dir,
 * removes @p dir; then it exits.  @return 0, or -1 with a message.
 */
int zkrc__reaper_start(zkrc__reaper *r, const char *dir, int keep_dir);

/** Tell the reaper about a member process (new pid after each start). */
void zkrc__reaper_watch(zkrc__reaper *r, pid_t pid);

/** Tell the reaper that @p pid is gone (we reaped it ourselves). */
void zkrc__reaper_forget(zkrc__reaper *r, pid_t pid);

/** Orderly goodbye: the reaper exits without touching anything; wait for
 *  it.  Safe on a reaper that was never started. */
void zkrc__reaper_finish(zkrc__reaper *r);

/* ---- fsutil.c ----------------------------------------------------------- */

/**
 * Remove @p path and everything below it.  Async-signal-safe (no malloc, no
 * stdio), so the reaper can use it in a child forked from a multi-threaded
 * process.  @return 0, or -1 with errno set.
 */
int zkrc__remove_tree(const char *path);

/** Write the last @p max_lines lines of file @p path to stderr, each
 *  prefixed with @p prefix. */
void zkrc__print_tail(const char *path, int max_lines, const char *prefix);

/** 1 when file @p path contains @p needle (within its last 1 MB). */
int zkrc__file_contains(const char *path, const char *needle);

/** Write @p text to a new file @p path (mode 0644).  @return 0 or -1 with a
 *  message. */
int zkrc__write_file(const char *path, const char *text);

/* ---- net.c -------------------------------------------------------------- */

/**
 * Choose @p count distinct loopback ports that are free now and that no other
 * ensemble of this process holds, and hold them (process-wide) until
 * zkrc__release_ports().  They are taken below the kernel's ephemeral range
 * when possible, so that outgoing connections cannot take them between a
 * member's stop and its restart.  @return 0 or -1.
 */
int zkrc__reserve_ports(int count, int *ports);

/** Give back ports from zkrc__reserve_ports() (0 entries are skipped). */
void zkrc__release_ports(const int *ports, int count);

/* OpenSSL's SSL_CTX, without its headers. */
struct ssl_ctx_st;

/**
 * Send four-letter word @p cmd to 127.0.0.1:@p port and read the answer to
 * end-of-file, all within @p timeout_ms.  With @p tls (a TLS ensemble's
 * context, see security.c), over TLS: a TLS-only member answers the words
 * on its secure client port once the handshake (with the harness's client
 * certificate) is done.
 * @param out  receives the malloc'ed, NUL-terminated answer.
 * @return 0, or -1 (connection refused, failed handshake, timeout, ...).
 */
int zkrc__four_letter(struct ssl_ctx_st *tls, int port, const char *cmd,
                      int timeout_ms, char **out);

/* A TLS connection of the harness to a member (net.c). */
typedef struct zkrc__tls_conn zkrc__tls_conn;

/** Connect to 127.0.0.1:@p port and do the TLS handshake with context
 *  @p tls (the member's certificate must name 127.0.0.1), by @p deadline
 *  (zkrc__now_ms()).  @return the connection, or NULL. */
zkrc__tls_conn *zkrc__tls_connect(struct ssl_ctx_st *tls, int port,
                                  int64_t deadline);
/** Write all of @p data by @p deadline.  @return 0 or -1. */
int zkrc__tls_write(zkrc__tls_conn *c, const void *data, size_t len,
                    int64_t deadline);
/** Read what there is (at most @p size bytes), waiting until @p deadline.
 *  @return the count, 0 at the end (close_notify or end of file), -1 on
 *  error or timeout. */
ssize_t zkrc__tls_read_some(zkrc__tls_conn *c, void *buf, size_t size,
                            int64_t deadline);
/** Read exactly @p len bytes by @p deadline.  @return 0 or -1. */
int zkrc__tls_read(zkrc__tls_conn *c, void *buf, size_t len, int64_t deadline);
/** Close and free @p c (NULL is ignored). */
void zkrc__tls_close(zkrc__tls_conn *c);

/* ---- proxy.c ------------------------------------------------------------ */

typedef struct zkrc__proxies zkrc__proxies;

/**
 * Start one proxy per entry of @p target_ports (each listening on a new
 * loopback port and forwarding to 127.0.0.1:target) and the thread that
 * serves them all.  @return the proxies, or NULL with a message.
 */
zkrc__proxies *zkrc__proxies_start(int count, const int *target_ports);

/** Stop the thread, close every connection and listener, free.  NULL is
 *  ignored. */
void zkrc__proxies_stop(zkrc__proxies *p);

/** The port proxy @p i listens on. */
int zkrc__proxy_port(const zkrc__proxies *p, int i);

/* The faults; each returns once the proxy thread has applied it: 0, or -1
 * when the thread did not answer within 5 s. */
int zkrc__proxy_drop_all(zkrc__proxies *p, int i);
int zkrc__proxy_drop_after_next_request(zkrc__proxies *p, int i);
int zkrc__proxy_delay(zkrc__proxies *p, int i, int ms);
int zkrc__proxy_blackhole(zkrc__proxies *p, int i, int ms);
int zkrc__proxy_refuse(zkrc__proxies *p, int i, int refuse);

/* ---- member.c ----------------------------------------------------------- */

/** One member of the ensemble. */
typedef struct zkrc__member {
  int index;  /* 0-based; its myid is index + 1 */
  pid_t pid;  /* -1 when not running */
  int paused; /* SIGSTOPped by zkrc_ensemble_pause() */
  /* Not a participant of the ensemble's configuration: a member joining
   * (zkrc_ensemble_add_member() before its reconfiguration is done) or
   * removed (zkrc_ensemble_remove_member()).  The quorum neither asks
   * nor counts it. */
  int outside;
  int client_port;
  int peer_port;
  int election_port;
  char *dir;         /* ENSEMBLE_DIR/mI: cwd, config and log */
  char *data_dir;    /* ENSEMBLE_DIR/mI/data */
  char *config_path; /* ENSEMBLE_DIR/mI/zoo.cfg */
  char *log_path;    /* ENSEMBLE_DIR/mI/member.log */
  char address[32];  /* "127.0.0.1:port" for clients (proxy if any) */
} zkrc__member;

/* Number of zkrc_tls_file values, and of SASL users. */
#define ZKRC__TLS_FILES (ZKRC_TLS_SERVER_KEYSTORE + 1)
#define ZKRC__SASL_USERS 2

/** What every member of an ensemble shares. */
struct zkrc_ensemble {
  zkrc_ensemble_options opts;
  int size;
  char *dir;         /* the ensemble directory */
  int keep_dir;      /* ZKR_ENSEMBLE_KEEP=1 */
  int log_to_stderr; /* ZKR_ENSEMBLE_LOG=1 */
  char *java;        /* absolute path of java */
  char *class_path;
  zkrc__member members[ZKRC__MAX_MEMBERS];
  char *connect_string;
  char *direct_connect_string;
  zkrc__reaper reaper;
  zkrc__proxies *proxies; /* NULL without with_proxies */
  /* With opts.tls (else NULL): the credentials' paths, indexed by
   * zkrc_tls_file, and the context of the harness's own TLS client. */
  char *tls_files[ZKRC__TLS_FILES];
  struct ssl_ctx_st *tls_ctx;
  /* With opts.sasl (else NULL): the members' JAAS file, the users and
   * their password files. */
  char *jaas_path;
  char *sasl_users[ZKRC__SASL_USERS];
  char *sasl_password_files[ZKRC__SASL_USERS];
  /* Guards members[].pid and .paused and the reaper link, so that members
   * may be controlled from any thread. */
  pthread_mutex_t lock;
};

/** Fill in the member's paths under the ensemble directory and create them.
 *  @return 0 or -1. */
int zkrc__member_init(zkrc_ensemble *e, zkrc__member *m, int index);

/** Free the member's strings (the process must be gone). */
void zkrc__member_free(zkrc__member *m);

/** Write the member's zoo.cfg and myid for the ports now chosen: with
 *  @p servers NULL, the server lines of every member (the first
 *  configuration); else @p servers ("server.N=...\n" lines, the current
 *  configuration) and the member's own line as a participant (a joiner).
 *  @return 0 or -1. */
int zkrc__member_configure(const zkrc_ensemble *e, const zkrc__member *m,
                           const char *servers);

/** Remove the member's data (for a fresh start on new ports). */
void zkrc__member_wipe(zkrc__member *m);

/** Start the member's JVM (caller holds e->lock).  @return 0 or -1. */
int zkrc__member_spawn(zkrc_ensemble *e, zkrc__member *m);

/** SIGKILL the member and reap it (caller holds e->lock).  Idempotent. */
void zkrc__member_kill(zkrc_ensemble *e, zkrc__member *m);

/** SIGTERM the member and wait (SIGKILL after 15 s).  Caller holds
 *  e->lock.  @return 0, or -1 when it was not running. */
int zkrc__member_terminate(zkrc_ensemble *e, zkrc__member *m);

/** Notice a member that exited on its own (caller holds e->lock).
 *  @return 1 when it had exited. */
int zkrc__member_reap_if_exited(zkrc_ensemble *e, zkrc__member *m);

/** 1 when the member's `srvr` answer (within @p timeout_ms) has a Mode; also
 *  stores the mode ("leader", "follower", "standalone", ...) in @p mode
 *  (size @p mode_size) when not NULL.  Over TLS for a TLS ensemble. */
int zkrc__member_serving(const zkrc_ensemble *e, int client_port,
                         int timeout_ms, char *mode, size_t mode_size);

/* ---- security.c --------------------------------------------------------- */

/**
 * Make what opts.tls and opts.sasl ask for, once per ensemble, under the
 * ensemble directory: DIR/tls (a test CA, the members' PKCS12 key store,
 * client certificates and keys, an unrelated CA, made with the openssl
 * command) and the TLS context of the harness's own client; DIR/sasl (the
 * members' JAAS file and the users' password files).  Fills in the
 * ensemble's tls_* and sasl_* fields.  @return 0, or -1 with a message.
 */
int zkrc__security_prepare(zkrc_ensemble *e);

/** Free what zkrc__security_prepare() made (not the files). */
void zkrc__security_free(zkrc_ensemble *e);

/* ---- ensemble.c --------------------------------------------------------- */

/** Snapshot of member @p i, for asking it questions without the lock. */
typedef struct zkrc__member_view {
  int running; /* a process, not paused */
  int port;    /* its client port */
  int voter;   /* a participant of the configuration (not outside) */
} zkrc__member_view;

/** Take the snapshot (under e->lock; notices a member that exited). */
zkrc__member_view zkrc__view_member(zkrc_ensemble *e, int i);

/** Pause the poll interval (50 ms), but not past @p deadline. */
void zkrc__pause_until_next_poll(int64_t deadline);

/** A member's failure to stderr: @p what, and the tail of its log. */
void zkrc__report_failed_member(const zkrc_ensemble *e, const zkrc__member *m,
                                const char *what);

/* ---- quorum.c ----------------------------------------------------------- */

/** Timeout for one four-letter word asked before @p deadline: what is left,
 *  at most 1 s; 0 once it has passed. */
int zkrc__poll_timeout(int64_t deadline);

/** The integer value of `mntr` line "KEY\tVALUE" in @p answer, in @p value.
 *  @return 1, or 0 when the key is absent or its value not an integer. */
int zkrc__mntr_value(const char *answer, const char *key, int64_t *value);

/** One look at the ensemble (see quorum.c for the reasoning). */
typedef struct zkrc__quorum_look {
  /** The leader a quorum agrees on, or -1: it answers "Mode: leader" in the
   *  newest epoch any member has recorded, and with the followers that
   *  recorded that epoch and that it counts as synced, it makes a majority
   *  of all members.  Single member: 0 when it answers "standalone". */
  int leader;
  int64_t epoch; /**< that leader's epoch; -1 without one */
  /** Members serving under that leader: the leader itself, and running
   *  followers in its epoch, unless more claim to follow it than it counts
   *  as synced (then some claim is stale and none is trusted). */
  int serving[ZKRC__MAX_MEMBERS];
} zkrc__quorum_look;

/** Ask every running, unpaused member `srvr` (and the leader `mntr`), read
 *  every member's currentEpoch file before and after, and judge.  Four-letter
 *  words are bounded by @p deadline.  Takes e->lock only briefly. */
void zkrc__look_at_quorum(zkrc_ensemble *e, int64_t deadline,
                          zkrc__quorum_look *look);

#endif /* ZKRECIPES_TESTING_INTERNAL_H */
