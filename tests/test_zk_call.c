/*
 * The seam between the library and the ZooKeeper client (src/session/zk_call.h),
 * white-box: its injected faults, and a path only they reach on a healthy
 * ensemble.
 *
 * A lock's release deletes its node; when that delete fails (the server
 * never answers it, the connection stays) the node must not be left for
 * the session's lifetime: the release hands it to the session's reaper,
 * which deletes it while connected.  A real server does not fail a delete
 * of our own node on a connection that stays up, so the delete is failed
 * by the seam (ZOPERATIONTIMEOUT, not sent).  The control runs the same
 * release without the fault: its delete is the release's own, none was
 * failed, and the checker that the reaper removed the node objects.
 */
#include "config.h"

#include <glib.h>

#include "testutil.h"
#include "session/zk_call.h"

/* What one release saw. */
typedef struct release_seen {
  uint64_t failed; /* deletes failed by the seam */
  uint64_t sent;   /* deletes sent by the library */
  int released_rc; /* zkrc_lock_release */
  int node_gone;   /* the node gone within the deadline */
} release_seen;

/* Acquire a lock, then release it with its delete failed by the seam when
 * @p inject. */
static release_seen release_once(const char *tag, gboolean inject) {
  release_seen seen = {0};
  char *path = zkt_path(tag);
  zhandle_t *zh = zkt_raw();
  zkrc_session *s = zkt_session();
  zkrc_lock *lk = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_new(&lk, s, path, NULL), ZKRC_OK);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lk, 15000));
  char *node = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_node(lk, &node));
  CU_ASSERT_TRUE(zkt_exists(zh, node));

  uint64_t failed = zkrc__zk_failed_count(ZKRC__ZK_DELETE);
  uint64_t sent = zkrc__zk_sent_count(ZKRC__ZK_DELETE);
  if (inject)
    ZKT_ASSERT_RC(ZKRC_OK,
                  zkrc__zk_fail_nth(ZKRC__ZK_DELETE, 1, ZOPERATIONTIMEOUT));
  seen.released_rc = zkrc_lock_release(lk);
  seen.node_gone = zkt_wait_children(zh, node, -1, 15000);
  seen.failed = zkrc__zk_failed_count(ZKRC__ZK_DELETE) - failed;
  seen.sent = zkrc__zk_sent_count(ZKRC__ZK_DELETE) - sent;
  /* Nothing armed is left behind for the next test. */
  ZKT_ASSERT_RC(ZKRC_OK, zkrc__zk_fail_nth(ZKRC__ZK_DELETE, 0, ZOK));

  free(node);
  zkrc_lock_free(lk);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(path);
  return seen;
}

/* The checker: the release's own delete failed, and still the node went,
 * by a delete the reaper sent. */
static int reaped_after_failed_delete(const release_seen *seen) {
  return seen->released_rc == ZKRC_OK && seen->failed == 1 && seen->sent >= 1 &&
         seen->node_gone;
}

static void test_failed_release_delete_is_reaped(void) {
  release_seen seen = release_once("failed-delete", TRUE);
  CU_ASSERT_EQUAL(seen.released_rc, ZKRC_OK);
  CU_ASSERT_EQUAL(seen.failed, 1);
  CU_ASSERT(seen.sent >= 1); /* the reaper's: the release's was not sent */
  CU_ASSERT_TRUE(seen.node_gone);
  CU_ASSERT_TRUE(reaped_after_failed_delete(&seen));
}

/* Control: without the fault the release deletes its node itself, and the
 * checker above objects (the path was not taken). */
static void test_control_without_fault(void) {
  release_seen seen = release_once("no-fault", FALSE);
  CU_ASSERT_EQUAL(seen.released_rc, ZKRC_OK);
  CU_ASSERT_EQUAL(seen.failed, 0);
  CU_ASSERT_EQUAL(seen.sent, 1);
  CU_ASSERT_TRUE(seen.node_gone);
  CU_ASSERT_FALSE(reaped_after_failed_delete(&seen));
}

/* The hook itself: an unknown kind is refused; the nth call, not an
 * earlier one, is failed, with the error given; disarming works. */
static int get_rc;
static gboolean get_done_flag;
static GMutex get_mu;
static GCond get_cond;

static void get_done(int rc, const char *value, int value_len,
                     const struct Stat *stat, const void *data) {
  (void)value;
  (void)value_len;
  (void)stat;
  (void)data;
  g_mutex_lock(&get_mu);
  get_rc = rc;
  get_done_flag = TRUE;
  g_cond_broadcast(&get_cond);
  g_mutex_unlock(&get_mu);
}

/* One read of "/" through the seam on @p s's handle (a kind of request a
 * session does not send by itself); its completion's code, or 1 when it
 * did not come within 15 s. */
static int one_get(zkrc_session *s) {
  g_mutex_lock(&get_mu);
  get_done_flag = FALSE;
  g_mutex_unlock(&get_mu);
  zkrc_conn *conn = zkrc__conn_use(s);
  CU_ASSERT_PTR_NOT_NULL_FATAL(conn);
  int rc = zkrc__zk_get(conn, "/", NULL, get_done, NULL);
  zkrc__conn_unuse(conn);
  if (rc != ZOK)
    return rc;
  int64_t end = g_get_monotonic_time() + 15 * G_TIME_SPAN_SECOND;
  g_mutex_lock(&get_mu);
  while (!get_done_flag && g_cond_wait_until(&get_cond, &get_mu, end))
    ;
  rc = get_done_flag ? get_rc : 1;
  g_mutex_unlock(&get_mu);
  return rc;
}

static void test_fail_nth(void) {
  CU_ASSERT_EQUAL(zkrc__zk_fail_nth(0, 1, ZAPIERROR), ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc__zk_fail_nth(ZKRC__ZK_OPS, 1, ZAPIERROR), ZKRC_EINVAL);
  zkrc_session *s = zkt_session();
  uint64_t sent = zkrc__zk_sent_count(ZKRC__ZK_GET);
  uint64_t failed = zkrc__zk_failed_count(ZKRC__ZK_GET);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc__zk_fail_nth(ZKRC__ZK_GET, 2, ZAPIERROR));
  CU_ASSERT_EQUAL(one_get(s), ZOK);       /* the first: sent */
  CU_ASSERT_EQUAL(one_get(s), ZAPIERROR); /* the second: failed */
  CU_ASSERT_EQUAL(one_get(s), ZOK);       /* and only it */
  ZKT_ASSERT_RC(ZKRC_OK, zkrc__zk_fail_nth(ZKRC__ZK_GET, 1, ZAPIERROR));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc__zk_fail_nth(ZKRC__ZK_GET, 0, ZOK));
  CU_ASSERT_EQUAL(one_get(s), ZOK); /* disarmed */
  /* Three were sent, and one was not. */
  CU_ASSERT_EQUAL(zkrc__zk_sent_count(ZKRC__ZK_GET) - sent, 3);
  CU_ASSERT_EQUAL(zkrc__zk_failed_count(ZKRC__ZK_GET) - failed, 1);
  zkrc_session_close(s);
}

static void add_suites(void) {
  ZKT_SUITE(
      "faults", {"fail nth", test_fail_nth},
      {"failed release delete is reaped", test_failed_release_delete_is_reaped},
      {"control without fault", test_control_without_fault});
}

int main(void) { return zkt_run("test_zk_call", add_suites); }
