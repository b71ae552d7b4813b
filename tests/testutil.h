/*
 * Shared support for the CUnit test programs.
 *
 * Conventions every test program follows:
 *  - One ensemble per program, started on first use by zkt_ensemble() and
 *    stopped when the program exits (the harness's reaper also cleans up if
 *    the program is killed).  Tests use unique paths (zkt_path()) so they do
 *    not see each other's nodes.
 *  - Every wait is bounded: zkt_wait_for() polls server-side state with a
 *    deadline only where no event can be awaited; everything else waits on
 *    the event itself.
 *  - Child processes are started with zkt_spawn() and are SIGKILLed and
 *    reaped when the program exits, whatever happened.
 *  - The ZooKeeper client's log is silent unless ZKR_LOG is set.
 */
#ifndef ZKT_TESTUTIL_H
#define ZKT_TESTUTIL_H

#include <stdint.h>
#include <sys/types.h>

#include <CUnit/CUnit.h>
#include <zookeeper/zookeeper.h>

#include "zkrecipes.h"
#include "zkrecipes/testing.h"

/* Session timeout the tests use: short, so expiry tests are fast (the
 * harness's tickTime is 200 ms, so the servers allow 400..4000 ms). */
#define ZKT_SESSION_TIMEOUT_MS 2000

/* Options of the program's ensemble; call before the first zkt_ensemble().
 * Default: 1 member, no proxies, no fsync. */
void zkt_configure(int members, int with_proxies);
/* The program's ensemble accepts TTL nodes
 * (zkrc_ensemble_options.extended_types); call before zkt_ensemble(). */
void zkt_configure_extended_types(void);
/* The program's ensemble allows reconfiguration
 * (zkrc_ensemble_options.reconfig); call before zkt_ensemble(). */
void zkt_configure_reconfig(void);

/* The program's ensemble, started on first call (a failure to start fails
 * the program with a message). */
zkrc_ensemble *zkt_ensemble(void);

/* A session straight to the members, past any fault proxy (session
 * timeout ZKT_SESSION_TIMEOUT_MS, the tick known); fails the test when it
 * cannot connect. */
zkrc_session *zkt_direct_session(void);

/* The connect string of the program's ensemble. */
const char *zkt_hosts(void);

/* A fresh unique path "/zkt/<tag>-<pid>-<n>" (g_free it). */
char *zkt_path(const char *tag);

/* A session on the program's ensemble with ZKT_SESSION_TIMEOUT_MS; the test
 * fails (CU_FAIL_FATAL) when it cannot connect. */
zkrc_session *zkt_session(void);
/* The same with a chosen session timeout and options. */
zkrc_session *zkt_session_with(int timeout_ms, int no_reopen);
/* The harness's tickTime (the servers' tick every zkt ensemble has). */
#define ZKT_TICK_MS 200
/* A session that knows the servers' tick (ZKT_TICK_MS), so that its lease
 * is as long as the protocol allows: room for the short disconnections a
 * test makes.  @p ex: NULL, or an executor of the test's. */
zkrc_session *zkt_session_knowing_tick(int timeout_ms, int no_reopen,
                                       const zkrc_executor *ex);

/* A plain ZooKeeper handle, connected (waits at most 10 s), silent. */
zhandle_t *zkt_raw(void);
zhandle_t *zkt_raw_to(const char *hosts);

/* Create @p path and its missing ancestors (plain, open nodes). */
void zkt_make_path(zhandle_t *zh, const char *path);

/* Number of children of @p path (-1 when it does not exist). */
int zkt_child_count(zhandle_t *zh, const char *path);
/* Let the member @p zh is connected to catch up with the leader (a sync
 * of @p path): a read after it sees every write committed before, also
 * another client's (ZooKeeper's reads are only sequentially consistent
 * per client).  A sync that takes over 10 s fails the test. */
void zkt_sync(zhandle_t *zh, const char *path);

/* Nodes left under @p path once the member @p zh is on has caught up (a
 * sync first; each one is named on stderr): 0 also when @p path is gone,
 * as a lock directory (a container) is once empty; -1 on error. */
int zkt_nodes_left(zhandle_t *zh, const char *path);
/* Nodes left under a semaphore's two directories, @p path/locks and
 * @p path/leases (zkt_nodes_left() of each), and waiting until there are
 * none (releases delete in the background) at most @p timeout_ms:
 * non-zero when it happened. */
int zkt_semaphore_nodes_left(zhandle_t *zh, const char *path);
int zkt_wait_semaphore_empty(zhandle_t *zh, const char *path, int timeout_ms);
/* "user:base64(sha1(user:password))": the id of a digest ACL entry for
 * the credentials "user:password" (g_free it). */
char *zkt_digest_id(const char *cred);
/* Does @p path exist? */
int zkt_exists(zhandle_t *zh, const char *path);
/* The czxid of @p path (0 if missing). */
int64_t zkt_czxid(zhandle_t *zh, const char *path);

/* Poll @p check every 20 ms until it returns non-zero or @p timeout_ms
 * passes; returns the last result.  For server-side state that no event
 * announces (container removal, a member's role). */
int zkt_wait_for(int (*check)(void *arg), void *arg, int timeout_ms);

/* Wait until @p path has exactly @p count children (-1: until it does not
 * exist), at most @p timeout_ms; non-zero when it happened. */
int zkt_wait_children(zhandle_t *zh, const char *path, int count,
                      int timeout_ms);

/* Wait until @p path has @p want children, at most @p timeout_ms; with
 * @p want 0, its being gone counts too (a lock directory, a container, is
 * removed once empty).  Non-zero when it happened. */
int zkt_wait_children_or_gone(zhandle_t *zh, const char *path, int want,
                              int timeout_ms);
/* Its test, for other pollers: @p want (a zkt_children_want) met now? */
typedef struct zkt_children_want {
  zhandle_t *zh;
  const char *path;
  int want;
} zkt_children_want;
int zkt_children_want_met(void *want);
/* Children of @p path now (0 when it does not exist). */
int zkt_children_now(zhandle_t *zh, const char *path);

/* For zkt_wait_for(): has @p s (a zkt_reopened) got a ZooKeeper session
 * other than old_id (a new one after an expiry)? */
typedef struct zkt_reopened {
  zkrc_session *s;
  int64_t old_id;
} zkt_reopened;
int zkt_session_reopened(void *reopened);

/* Milliseconds on a monotonic clock. */
int64_t zkt_now_ms(void);

/* A zkrc_multilock of @p locks, added in the order given (free it with
 * zkrc_multilock_free()); NULL when an add is refused, its error in *@p rc
 * (ZKRC_OK otherwise; @p rc may be NULL).  Nothing is sent. */
zkrc_multilock *zkt_multilock_of(zkrc_lock *const *locks, size_t count,
                                 int *rc);

/* zkrc_multilock_acquire_async() of a multilock of @p locks (freed once
 * the hold started: it copies the members); an add's refusal is returned
 * as it is, and then nothing is started. */
int zkt_multilock_acquire_async(zkrc_lock *const *locks, size_t count,
                                int timeout_ms, zkrc_multilock_acquired_fn done,
                                void *arg, zkrc_multilock_hold **hold);

/* Expire @p s's current ZooKeeper session on the servers. */
void zkt_expire(zkrc_session *s);

/* Fork a child that runs @p fn(@p arg) and exits with its result.  The
 * child is SIGKILLed at program exit if still running. */
pid_t zkt_spawn(int (*fn)(void *arg), void *arg);
/* Register a child the test forked itself (e.g. fork + exec of a worker)
 * so that it, too, is SIGKILLed and reaped at program exit. */
void zkt_track_child(pid_t pid);
/* Wait for a spawned child at most @p timeout_ms; returns its exit status
 * (0..255), 128+signal, or -1 on timeout (the child is then killed). */
int zkt_wait_child(pid_t pid, int timeout_ms);

/* Run the CUnit suites registered by @p add_suites and return the process
 * exit status (0 when every test passed).  Also installs the exit cleanup. */
int zkt_run(const char *program, void (*add_suites)(void));

/* The running test cannot be run here (@p why: what is missing).  CUnit has
 * no "skipped": the test, which must return right after this without
 * asserting anything, still counts as run by CUnit, so this prints a
 * "SKIPPED" line now and zkt_run() names every skipped test in its summary
 * instead of letting them pass unnoticed. */
void zkt_skip(const char *why);

/* Add a suite with its tests: ZKT_SUITE("name", {"test", fn}, ...). */
typedef struct zkt_test {
  const char *name;
  void (*fn)(void);
} zkt_test;
void zkt_add_suite(const char *name, const zkt_test *tests, int count);
#define ZKT_SUITE(name, ...)                                                   \
  do {                                                                         \
    static const zkt_test zkt_tests_[] = {__VA_ARGS__};                        \
    zkt_add_suite(name, zkt_tests_,                                            \
                  (int)(sizeof zkt_tests_ / sizeof zkt_tests_[0]));            \
  } while (0)

/* Everyone may create, delete, write and administer, nobody may read. */
struct ACL_vector *zkt_acl_no_read(void);

/* Take READ away from @p path (zkt_acl_no_read): nobody may list it any
 * more, which the test checks. */
void zkt_forbid_listing(zhandle_t *zh, const char *path);

/* What session @p s sent besides its lease's own requests, renewals and
 * keepalives (its statistics). */
uint64_t zkt_requests_but_renewals(zkrc_session *s);

/* For zkt_wait_for(): does any member's `wchp` list @p arg's session as
 * watching its node? */
typedef struct zkt_watch_seen {
  const char *node;
  int64_t session;
} zkt_watch_seen;
int zkt_session_watches(void *arg);

/* A thread body (g_thread_new): acquire @p lk within @p timeout_ms; when
 * that worked, note its fencing token and release.  @p rc: the acquisition's
 * result. */
typedef struct zkt_acquirer {
  zkrc_lock *lk;
  int timeout_ms;
  int rc;
  int64_t token;
} zkt_acquirer;
void *zkt_acquire_once(void *data);

/* ZooKeeper's size limit, counted here apart from the library, from
 * jute's encoding: the servers (and Java clients, for replies) refuse a
 * packet over ZKT_PACKET_MAX bytes after its length prefix (the default
 * jute.maxbuffer), and a getData reply carries 88 bytes beside the data
 * (reply header 16, the data's length 4, the Stat 68). */
#define ZKT_PACKET_MAX 0xfffff
#define ZKT_DATA_MAX (ZKT_PACKET_MAX - 88)
/* A create request's bytes beside its data: header 8, the path (4 + its
 * length, no chroot), the data's length 4, the open ACL list (4 + 4 +
 * "world" 4+5 + "anyone" 4+6 = 27) and the flags 4.  A setData's: header
 * 8, the path, the data's length 4 and the version 4. */
size_t zkt_create_envelope(const char *path);
size_t zkt_set_envelope(const char *path);
/* The connections @p s lost (its stats' suspensions) so far. */
uint64_t zkt_suspensions(zkrc_session *s);
/* @p len bytes of a pattern that a cut or shifted copy does not match
 * (g_free). */
char *zkt_pattern(size_t len);
/* Is the data of @p path exactly @p len bytes of @p want (read raw)? */
int zkt_data_is(zhandle_t *zh, const char *path, const char *want, size_t len);

/* The name of ZooKeeper's code @p zk_rc ("ZNONODE"), for event lines;
 * "ZOTHER" for a code the tests do not expect in an event.  Static. */
const char *zkt_zk_error_name(int zk_rc);
/* An event's reason and ZooKeeper code as a line's tail: "" for none,
 * else " ZKRC_E... [Z...]" (the code only when it is not ZOK).  Static
 * strings joined into @p buf of @p size bytes; returns @p buf. */
char *zkt_reason_text(char *buf, size_t size, int reason, int zk_error);

/* CU_ASSERT_EQUAL that prints both values and names the zkrecipes codes. */
#define ZKT_ASSERT_RC(expected, actual)                                        \
  do {                                                                         \
    int zkt_e_ = (expected), zkt_a_ = (actual);                                \
    if (zkt_e_ != zkt_a_)                                                      \
      zkt_report_rc(__FILE__, __LINE__, #actual, zkt_e_, zkt_a_);              \
    CU_ASSERT_EQUAL(zkt_e_, zkt_a_);                                           \
  } while (0)
void zkt_report_rc(const char *file, int line, const char *expr, int expected,
                   int actual);

/* Run @p argv (NULL-terminated) as a child of the testing library, wait
 * for it at most @p timeout_ms (killed past it), then read what it wrote
 * on stdout, a short reply that fits the pipe, into @p buf (@p size
 * bytes, NUL-terminated).  Its exit status as zkrc_child_wait() gives it;
 * -1 when it could not start. */
int zkt_run_output(const char *const *argv, char *buf, size_t size,
                   int timeout_ms);

#endif /* ZKT_TESTUTIL_H */
