/*
 * Fresh locks (issue 19): what a lock whose directory does not exist yet
 * costs the ensemble, counted in proposals (every transaction takes a zxid,
 * a failed write's error transaction too), and that the cheaper create
 * keeps its guarantees: a create whose reply is lost leaves one node and
 * the lock is held, missing ancestors are made as containers, a missing
 * chroot is ZKRC_ENONODE.  Also the session's table of directories seen to
 * exist (src/core/dirtable.c) on its own.
 *
 * One member behind a fault proxy: its zxid is the ensemble's.  The
 * proposal counts are read first, before any container of this program is
 * left empty for the servers' container sweep (a delete: a transaction).
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "core/dirtable.h"
#include "session/session_internal.h"
#include "testutil.h"

static zkrc_lock *new_lock(zkrc_session *s, const char *path) {
  zkrc_lock *lk = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_new(&lk, s, path, NULL), ZKRC_OK);
  return lk;
}

/* The member's last zxid (srvr's "Zxid: 0x..."). */
static int64_t zxid_now(void) {
  char *text = NULL;
  CU_ASSERT_EQUAL_FATAL(
      zkrc_ensemble_four_letter(zkt_ensemble(), 0, "srvr", &text), 0);
  const char *at = strstr(text, "Zxid: 0x");
  CU_ASSERT_PTR_NOT_NULL_FATAL(at);
  int64_t z = g_ascii_strtoll(at + strlen("Zxid: 0x"), NULL, 16);
  g_free(text);
  return z;
}

/* Proposals the acquisition of @p lk costs (it must succeed). */
static int64_t proposals_to_acquire(zkrc_lock *lk) {
  int64_t before = zxid_now();
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lk, 10000));
  return zxid_now() - before;
}

/* A raw handle straight to the member, unaffected by proxy faults. */
static zhandle_t *direct(void) {
  return zkt_raw_to(zkrc_ensemble_direct_connect_string(zkt_ensemble()));
}

typedef struct node_at {
  zhandle_t *zh;
  const char *path;
} node_at;

static int node_gone(void *arg) {
  node_at *n = arg;
  return !zkt_exists(n->zh, n->path);
}

/* @p path, a directory made as a container, is removed by the servers'
 * sweep (every 100 ms in the harness) now that it is empty: a persistent
 * node would stay. */
static int container_goes(zhandle_t *zh, const char *path) {
  node_at n = {zh, path};
  return zkt_wait_for(node_gone, &n, 15000);
}

/* ------------------------------------------------------------ proposals */

/* Fresh locks in an existing parent.  The first one the session takes
 * there is guessed to be in an existing directory (dirtable.h), wrongly:
 * its create is refused with NoNode, then its directory's container create
 * and its create again, 3 proposals.  Its siblings are then guessed fresh:
 * the container create and the create, nothing refused, 2 proposals and 2
 * requests (the node's sequence number, the directory's first, spares the
 * listing).  The old create took 3 for every fresh lock (2 + the depth of
 * a nested one).  A lock whose directory the session has seen: its create
 * alone. */
static void test_proposals_per_fresh_lock(void) {
  char *parent = zkt_path("fresh-proposals");
  zhandle_t *zh = direct();
  zkt_make_path(zh, parent);
  char *a = g_strdup_printf("%s/a", parent);
  char *b = g_strdup_printf("%s/b", parent);
  char *c = g_strdup_printf("%s/c", parent);
  zkrc_session *s = zkt_session();
  zkrc_lock *la = new_lock(s, a), *lb = new_lock(s, b), *lc = new_lock(s, c);

  int64_t first = proposals_to_acquire(la);
  uint64_t requests = zkt_requests_but_renewals(s);
  int64_t fresh = proposals_to_acquire(lb); /* guessed fresh now */
  requests = zkt_requests_but_renewals(s) - requests;
  /* A directory the session has seen exist: c gets a node of its own that
   * keeps the container from the sweep while c's lock is released. */
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lc, 10000));
  char *keep = g_strdup_printf("%s/keep", c);
  CU_ASSERT_EQUAL(
      zoo_create(zh, keep, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(lc));
  int64_t known = proposals_to_acquire(lc);
  printf("(first %" PRId64 ", fresh %" PRId64 ", known %" PRId64
         "; requests for a fresh lock %" PRIu64 ") ",
         first, fresh, known, requests);
  CU_ASSERT_EQUAL(first, 3);
  CU_ASSERT_EQUAL(fresh, 2);
  CU_ASSERT_EQUAL(requests, 2);
  CU_ASSERT_EQUAL(known, 1);

  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(la));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(lb));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(lc));
  CU_ASSERT_EQUAL(zoo_delete(zh, keep, -1), ZOK);
  /* The directories were made as containers. */
  CU_ASSERT(container_goes(zh, a));
  CU_ASSERT(container_goes(zh, b));
  CU_ASSERT(container_goes(zh, c));
  zkrc_lock_free(la);
  zkrc_lock_free(lb);
  zkrc_lock_free(lc);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(keep);
  g_free(a);
  g_free(b);
  g_free(c);
  g_free(parent);
}

/* Proposals and requests (renewals aside) that acquiring @p lk costs. */
static void acquisition_cost(zkrc_session *s, zkrc_lock *lk, int64_t *proposals,
                             uint64_t *requests) {
  uint64_t before = zkt_requests_but_renewals(s);
  *proposals = proposals_to_acquire(lk);
  *requests = zkt_requests_but_renewals(s) - before;
}

/* Locks in places others use (the herd's case: many sessions, one existing
 * lock, each session's first acquisition there): a session that has not
 * seen the directory creates its node alone, with the listing pipelined
 * behind: 1 proposal, 2 requests (a container create first would be
 * refused: 2 proposals, 3 requests).  The guess follows what the last first
 * touch in the parent found: after a fresh sibling the next unseen existing
 * directory costs the refused container create once, and the one after is
 * guessed present again. */
static void test_unseen_existing_directories(void) {
  char *parent = zkt_path("fresh-unseen");
  zhandle_t *zh = direct();
  char *dir[4];
  for (int i = 0; i < 3; i++) {
    dir[i] = g_strdup_printf("%s/existing-%d", parent, i);
    zkt_make_path(zh, dir[i]); /* persistent: made by someone else */
  }
  dir[3] = g_strdup_printf("%s/fresh", parent);
  zkrc_session *s = zkt_session();
  zkrc_lock *lk[4];
  for (int i = 0; i < 4; i++)
    lk[i] = new_lock(s, dir[i]);
  int64_t proposals[4];
  uint64_t requests[4];
  /* existing-0, then the fresh one, then existing-1 and existing-2. */
  const int order[4] = {0, 3, 1, 2};
  for (int k = 0; k < 4; k++)
    acquisition_cost(s, lk[order[k]], &proposals[k], &requests[k]);
  printf("(existing %" PRId64 "/%" PRIu64 ", fresh %" PRId64 "/%" PRIu64
         ", existing after it %" PRId64 "/%" PRIu64 ", then %" PRId64
         "/%" PRIu64 " proposals/requests) ",
         proposals[0], requests[0], proposals[1], requests[1], proposals[2],
         requests[2], proposals[3], requests[3]);
  CU_ASSERT_EQUAL(proposals[0], 1);
  CU_ASSERT_EQUAL(requests[0], 2);
  CU_ASSERT_EQUAL(proposals[1], 3); /* guessed present: refused once */
  CU_ASSERT_EQUAL(proposals[2], 2); /* guessed fresh: container refused */
  CU_ASSERT_EQUAL(proposals[3], 1);
  CU_ASSERT_EQUAL(requests[3], 2);
  for (int i = 0; i < 4; i++) {
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(lk[i]));
    CU_ASSERT_EQUAL(zkt_nodes_left(zh, dir[i]), 0);
    zkrc_lock_free(lk[i]);
    g_free(dir[i]);
  }
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(parent);
}

/* A directory the session has not seen, which another session holds: our
 * node's sequence number is not the first, so the directory is listed and
 * we wait behind the holder; we hold once it releases. */
static void test_presumed_fresh_directory_with_a_holder(void) {
  char *dir = zkt_path("fresh-held");
  zkrc_session *holder_s = zkt_session(), *s = zkt_session();
  zkrc_lock *holder = new_lock(holder_s, dir), *lk = new_lock(s, dir);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(holder, 10000));
  CU_ASSERT_EQUAL(zkrc__dirtable_known(zkrc__session_dirs(s), dir), 0);
  ZKT_ASSERT_RC(ZKRC_ETIMEDOUT, zkrc_lock_acquire(lk, 300));
  CU_ASSERT_EQUAL(zkrc_lock_is_held(lk), 0);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(holder));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lk, 10000));
  ZKT_ASSERT_RC(ZKRC_ETIMEDOUT, zkrc_lock_acquire(holder, 300));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(lk));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(holder, 10000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(holder));
  zkrc_lock_free(holder);
  zkrc_lock_free(lk);
  zkrc_session_close(holder_s);
  zkrc_session_close(s);
  g_free(dir);
}

/* ---------------------------------------------------- lost create reply */

/* Acquire @p lk with the reply to the session's next request swallowed
 * (the request took effect; the connection closes): the lock is held by
 * exactly one node of ours in @p dir, and the token is that node's czxid. */
static void acquire_with_reply_lost(zkrc_session *s, zkrc_lock *lk,
                                    zhandle_t *zh, const char *dir) {
  zkrc_session_stats before, after;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_get_stats(s, &before, sizeof before));
  CU_ASSERT_EQUAL_FATAL(zkrc_proxy_drop_after_next_request(zkt_ensemble(), 0),
                        0);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lk, 15000));
  CU_ASSERT_EQUAL(zkt_child_count(zh, dir), 1); /* found, not duplicated */
  char *node = NULL;
  int64_t token = 0;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_node(lk, &node));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_token(lk, &token));
  CU_ASSERT_EQUAL(zkt_czxid(zh, node), token);
  free(node);
  /* The reply was indeed lost: the connection dropped under the create. */
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_get_stats(s, &after, sizeof after));
  CU_ASSERT(after.suspensions > before.suspensions);
}

/* A fresh lock, guessed fresh (a sibling was): the first request sent is
 * the directory's container create, and the node's create is pipelined
 * behind it, so the connection closes with both answered by the server
 * and neither heard: the node is found by its protected name. */
static void test_lost_reply_in_a_fresh_directory(void) {
  char *parent = zkt_path("fresh-lost");
  zhandle_t *zh = direct();
  zkt_make_path(zh, parent);
  char *sibling = g_strdup_printf("%s/first", parent);
  char *dir = g_strdup_printf("%s/lock", parent);
  zkrc_session *s = zkt_session();
  zkrc_lock *first = new_lock(s, sibling), *lk = new_lock(s, dir);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(first, 10000));
  CU_ASSERT(zkrc__dirtable_children_fresh(zkrc__session_dirs(s), dir));
  acquire_with_reply_lost(s, lk, zh, dir);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(lk));
  CU_ASSERT_EQUAL(zkt_nodes_left(zh, dir), 0);
  CU_ASSERT(container_goes(zh, dir)); /* made as a container, as usual */
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(first));
  zkrc_lock_free(first);
  zkrc_lock_free(lk);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(sibling);
  g_free(dir);
  g_free(parent);
}

/* A directory the session has seen: the node's create is the first request
 * sent, and its own reply is the one lost. */
static void test_lost_reply_of_the_create_itself(void) {
  char *dir = zkt_path("fresh-lost-create");
  zhandle_t *zh = direct();
  zkt_make_path(zh, dir); /* persistent: no sweep between the acquisitions */
  zkrc_session *s = zkt_session();
  zkrc_lock *lk = new_lock(s, dir);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lk, 10000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(lk));
  CU_ASSERT_EQUAL(zkrc__dirtable_known(zkrc__session_dirs(s), dir),
                  strlen(dir));
  acquire_with_reply_lost(s, lk, zh, dir);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(lk));
  CU_ASSERT_EQUAL(zkt_nodes_left(zh, dir), 0);
  zkrc_lock_free(lk);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(dir);
}

/* ------------------------------------------------ missing parent, chroot */

/* The directory's parent and grandparent are missing too: the create that
 * presumed the parent there fails, and the next attempt makes every
 * missing ancestor, as containers, in order. */
static void test_missing_ancestors_become_containers(void) {
  char *base = zkt_path("fresh-ancestors");
  zhandle_t *zh = direct();
  zkt_make_path(zh, base);
  char *x = g_strdup_printf("%s/x", base);
  char *dir = g_strdup_printf("%s/x/y/lock", base);
  zkrc_session *s = zkt_session();
  zkrc_lock *lk = new_lock(s, dir);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lk, 10000));
  CU_ASSERT_EQUAL(zkt_child_count(zh, dir), 1);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(lk));
  /* All three were containers: the directory goes, then y, then x. */
  CU_ASSERT(container_goes(zh, x));
  CU_ASSERT(zkt_exists(zh, base)); /* made by us, persistent */
  zkrc_lock_free(lk);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(dir);
  g_free(x);
  g_free(base);
}

/* A chroot that does not exist, under a nested lock directory (whose
 * parent the first attempt presumes there): ZKRC_ENONODE, at once. */
static void test_missing_chroot_under_a_nested_directory(void) {
  char *hosts =
      g_strdup_printf("%s/zkt-fresh-no-chroot-%d", zkt_hosts(), (int)getpid());
  zkrc_session_options o;
  zkrc_session_options_init(&o);
  o.session_timeout_ms = 4000;
  zkrc_session *s = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_session_connect(&s, hosts, &o), ZKRC_OK);
  zkrc_lock *nested = new_lock(s, "/locks/a/b");
  zkrc_lock *top = new_lock(s, "/top");
  int64_t t0 = zkt_now_ms();
  ZKT_ASSERT_RC(ZKRC_ENONODE, zkrc_lock_acquire(nested, 10000));
  ZKT_ASSERT_RC(ZKRC_ENONODE, zkrc_lock_acquire(top, 10000));
  int64_t took = zkt_now_ms() - t0;
  printf("(%" PRId64 " ms) ", took);
  CU_ASSERT(took < 2000);
  zkrc_lock_free(nested);
  zkrc_lock_free(top);
  zkrc_session_close(s);
  g_free(hosts);
}

/* --------------------------------------------------------- the table */

static void test_table_knows_ancestors_and_forgets(void) {
  zkrc__dirtable *t = zkrc__dirtable_new(4);
  CU_ASSERT_EQUAL(zkrc__dirtable_known(t, "/a/b/c"), 0);
  zkrc__dirtable_note(t, "/a/b/c"); /* /a, /a/b, /a/b/c */
  CU_ASSERT_EQUAL(zkrc__dirtable_size(t), 3);
  CU_ASSERT_EQUAL(zkrc__dirtable_known(t, "/a/b/c"), strlen("/a/b/c"));
  CU_ASSERT_EQUAL(zkrc__dirtable_known(t, "/a/b/d"), strlen("/a/b"));
  CU_ASSERT_EQUAL(zkrc__dirtable_known(t, "/a/bb"), strlen("/a"));
  CU_ASSERT_EQUAL(zkrc__dirtable_known(t, "/z"), 0);
  /* Forgetting a directory forgets its ancestors (one of them may be the
   * one that went), not its siblings' entries below them. */
  zkrc__dirtable_note(t, "/q");
  zkrc__dirtable_forget(t, "/a/b/x");
  CU_ASSERT_EQUAL(zkrc__dirtable_known(t, "/a/b/c"), strlen("/a/b/c"));
  CU_ASSERT_EQUAL(zkrc__dirtable_known(t, "/a/b"), 0);
  CU_ASSERT_EQUAL(zkrc__dirtable_known(t, "/q"), strlen("/q"));
  CU_ASSERT_EQUAL(zkrc__dirtable_size(t), 2);
  zkrc__dirtable_free(t);
}

static void test_table_drops_the_least_recently_used(void) {
  zkrc__dirtable *t = zkrc__dirtable_new(3);
  zkrc__dirtable_note(t, "/1");
  zkrc__dirtable_note(t, "/2");
  zkrc__dirtable_note(t, "/3");
  CU_ASSERT_EQUAL(zkrc__dirtable_known(t, "/1"), 2); /* now the most recent */
  zkrc__dirtable_note(t, "/4");                      /* /2 goes */
  CU_ASSERT_EQUAL(zkrc__dirtable_size(t), 3);
  CU_ASSERT_EQUAL(zkrc__dirtable_known(t, "/2"), 0);
  CU_ASSERT_EQUAL(zkrc__dirtable_known(t, "/1"), 2);
  CU_ASSERT_EQUAL(zkrc__dirtable_known(t, "/3"), 2);
  CU_ASSERT_EQUAL(zkrc__dirtable_known(t, "/4"), 2);
  zkrc__dirtable_free(t);
}

/* The guess for a directory not known to exist follows the last first
 * touch among its siblings; none yet means "present". */
static void test_table_guesses_from_siblings(void) {
  zkrc__dirtable *t = zkrc__dirtable_new(8);
  CU_ASSERT_FALSE(zkrc__dirtable_children_fresh(t, "/jobs/1"));
  zkrc__dirtable_note_first_touch(t, "/jobs/1", TRUE);
  CU_ASSERT_TRUE(zkrc__dirtable_children_fresh(t, "/jobs/2"));
  CU_ASSERT_FALSE(zkrc__dirtable_children_fresh(t, "/tenants/a"));
  CU_ASSERT_FALSE(zkrc__dirtable_children_fresh(t, "/jobs/1/x"));
  zkrc__dirtable_note_first_touch(t, "/jobs/2", FALSE);
  CU_ASSERT_FALSE(zkrc__dirtable_children_fresh(t, "/jobs/3"));
  zkrc__dirtable_note_first_touch(t, "/top", TRUE); /* the root's children */
  CU_ASSERT_TRUE(zkrc__dirtable_children_fresh(t, "/other"));
  CU_ASSERT_EQUAL(zkrc__dirtable_known(t, "/jobs/3"), strlen("/jobs"));
  zkrc__dirtable_free(t);
}

static void add_suites(void) {
  zkt_configure(1, 1);
  /* The proposal counts first: no container of ours is empty yet. */
  ZKT_SUITE(
      "fresh locks",
      {"proposals per fresh lock", test_proposals_per_fresh_lock},
      {"unseen existing directories", test_unseen_existing_directories},
      {"presumed fresh directory with a holder",
       test_presumed_fresh_directory_with_a_holder},
      {"lost reply in a fresh directory", test_lost_reply_in_a_fresh_directory},
      {"lost reply of the create itself", test_lost_reply_of_the_create_itself},
      {"missing ancestors become containers",
       test_missing_ancestors_become_containers},
      {"missing chroot under a nested directory",
       test_missing_chroot_under_a_nested_directory});
  ZKT_SUITE(
      "directory table",
      {"knows ancestors and forgets", test_table_knows_ancestors_and_forgets},
      {"drops the least recently used",
       test_table_drops_the_least_recently_used},
      {"guesses from siblings", test_table_guesses_from_siblings});
}

int main(void) { return zkt_run("test_fresh_locks", add_suites); }
