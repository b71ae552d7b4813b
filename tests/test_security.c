/*
 * The lock with ACLs and digest authentication: nodes created with the ACL
 * the application gives (zkrc_lock_options.acl), sessions authenticated with
 * zkrc_session_add_auth().  Someone without the credentials can neither
 * read, delete nor join the lock's nodes, nor break the lock; clients with
 * the same credentials still exclude each other; a waiter that may not read
 * its predecessor's data still waits for it (the exists fallback) and gets
 * the lock; and the credentials outlive an expired session.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <glib.h>

#include "testutil.h"

#define ALICE "alice:alice-secret"
#define BOB "bob:bob-secret"

/* ------------------------------------------------------------ helpers */

/* An ACL granting @p perms to each digest credential given (NULL-ended). */
typedef struct acl_list {
  struct ACL_vector v;
  struct ACL entries[4];
  char *ids[4];
} acl_list;

static void acl_for(acl_list *a, int perms, const char *cred1,
                    const char *cred2) {
  memset(a, 0, sizeof *a);
  const char *creds[] = {cred1, cred2};
  for (int i = 0; i < 2 && creds[i]; i++) {
    a->ids[i] = zkt_digest_id(creds[i]);
    a->entries[i].perms = perms;
    a->entries[i].id.scheme = "digest";
    a->entries[i].id.id = a->ids[i];
    a->v.count = i + 1;
  }
  a->v.data = a->entries;
}

static void acl_free(acl_list *a) {
  for (int i = 0; i < 4; i++)
    g_free(a->ids[i]);
}

typedef struct auth_wait {
  GMutex mu;
  GCond cond;
  int rc;
  gboolean done;
} auth_wait;

static void auth_done(int rc, const void *data) {
  auth_wait *w = (auth_wait *)data;
  g_mutex_lock(&w->mu);
  w->rc = rc;
  w->done = TRUE;
  g_cond_broadcast(&w->cond);
  g_mutex_unlock(&w->mu);
}

/* A raw handle, authenticated with @p cred (NULL: anonymous). */
static zhandle_t *raw_as(const char *cred) {
  zhandle_t *zh = zkt_raw();
  if (cred == NULL)
    return zh;
  auth_wait w = {.rc = -1};
  g_mutex_init(&w.mu);
  g_cond_init(&w.cond);
  CU_ASSERT_EQUAL_FATAL(
      zoo_add_auth(zh, "digest", cred, (int)strlen(cred), auth_done, &w), ZOK);
  int64_t deadline = g_get_monotonic_time() + 10 * G_TIME_SPAN_SECOND;
  g_mutex_lock(&w.mu);
  while (!w.done && g_cond_wait_until(&w.cond, &w.mu, deadline))
    ;
  g_mutex_unlock(&w.mu);
  CU_ASSERT_EQUAL_FATAL(w.rc, ZOK);
  g_mutex_clear(&w.mu);
  g_cond_clear(&w.cond);
  return zh;
}

static zkrc_session *session_as(const char *cred) {
  zkrc_session *s = zkt_session();
  if (cred)
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_add_auth(s, "digest", cred, 10000));
  return s;
}

static zkrc_lock *new_lock(zkrc_session *s, const char *path,
                           const struct ACL_vector *acl) {
  zkrc_lock_options o;
  zkrc_lock_options_init(&o);
  o.acl = acl;
  zkrc_lock *lk = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_new(&lk, s, path, &o), ZKRC_OK);
  return lk;
}

/* /zkt as a plain open node: the recipes would otherwise create it as a
 * container with the first test's ACL, and it would keep everyone else
 * out of the tests that follow. */
static void open_root(void) {
  zhandle_t *zh = zkt_raw();
  int rc = zoo_create(zh, "/zkt", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
  CU_ASSERT(rc == ZOK || rc == ZNODEEXISTS);
  zookeeper_close(zh);
}

typedef struct bg_acquire {
  zkrc_lock *lk;
  int timeout_ms;
  int rc;
  int64_t token;
  int64_t at; /* when it returned */
} bg_acquire;

static gpointer acquire_then_hold(gpointer data) {
  bg_acquire *b = data;
  b->rc = zkrc_lock_acquire(b->lk, b->timeout_ms);
  b->at = zkt_now_ms();
  if (b->rc == ZKRC_OK) {
    zkrc_lock_token(b->lk, &b->token);
    CU_ASSERT_EQUAL(zkrc_lock_release(b->lk), ZKRC_OK);
  }
  return NULL;
}

/* ---------------------------------------------- creator-only ACL */

static void test_creator_acl_keeps_others_out(void) {
  open_root();
  char *path = zkt_path("creator-acl");
  zkrc_session *alice = session_as(ALICE);
  zkrc_lock *lk = new_lock(alice, path, &ZOO_CREATOR_ALL_ACL);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lk, 5000));
  char *node = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_node(lk, &node), ZKRC_OK);
  zhandle_t *alice_raw = raw_as(ALICE);

  /* The directory and the node carry alice's creator-only ACL. */
  struct ACL_vector acl;
  struct Stat st;
  char *alice_id = zkt_digest_id(ALICE);
  const char *checked[] = {path, node};
  for (int i = 0; i < 2; i++) {
    CU_ASSERT_EQUAL_FATAL(zoo_get_acl(alice_raw, checked[i], &acl, &st), ZOK);
    CU_ASSERT_EQUAL(acl.count, 1);
    CU_ASSERT_STRING_EQUAL(acl.data[0].id.scheme, "digest");
    CU_ASSERT_STRING_EQUAL(acl.data[0].id.id, alice_id);
    CU_ASSERT_EQUAL(acl.data[0].perms, ZOO_PERM_ALL);
    deallocate_ACL_vector(&acl);
  }
  g_free(alice_id);

  /* Anonymous, and alice's name with the wrong password: nothing works. */
  const char *intruders[] = {NULL, "alice:wrong-password"};
  for (int i = 0; i < 2; i++) {
    zhandle_t *zh = raw_as(intruders[i]);
    char buf[64];
    int len = sizeof buf;
    struct String_vector kids;
    CU_ASSERT_EQUAL(zoo_get(zh, node, 0, buf, &len, &st), ZNOAUTH);
    CU_ASSERT_EQUAL(zoo_delete(zh, node, -1), ZNOAUTH);
    CU_ASSERT_EQUAL(zoo_set(zh, node, "x", 1, -1), ZNOAUTH);
    CU_ASSERT_EQUAL(zoo_get_children(zh, path, 0, &kids), ZNOAUTH);
    CU_ASSERT_EQUAL(zoo_set_acl(zh, path, -1, &ZOO_OPEN_ACL_UNSAFE), ZNOAUTH);
    char *fake = g_strdup_printf("%s/_c_intruder-lock-", path);
    CU_ASSERT_EQUAL(zoo_create(zh, fake, "x", 1, &ZOO_OPEN_ACL_UNSAFE,
                               ZOO_EPHEMERAL_SEQUENTIAL, NULL, 0),
                    ZNOAUTH);
    g_free(fake);
    zookeeper_close(zh);

    /* Through the library: a clean refusal that leaves nothing. */
    zkrc_session *s = session_as(intruders[i]);
    zkrc_lock *other = new_lock(s, path, NULL);
    int64_t start = zkt_now_ms();
    ZKT_ASSERT_RC(ZKRC_ENOAUTH, zkrc_lock_acquire(other, 5000));
    CU_ASSERT_EQUAL(zkrc_last_zk_error(), ZNOAUTH);
    CU_ASSERT(zkt_now_ms() - start < 4000); /* refused, not timed out */
    char **ids = NULL;
    ZKT_ASSERT_RC(ZKRC_ENOAUTH,
                  zkrc_lock_participants(other, &ids, NULL, 5000));
    CU_ASSERT_PTR_NULL(ids);
    zkrc_lock_free(other);
    zkrc_session_close(s);
  }
  CU_ASSERT_EQUAL(zkt_child_count(alice_raw, path), 1);
  CU_ASSERT_TRUE(zkrc_lock_is_held(lk));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_fenced_multi(lk, 0, NULL, NULL, 5000));

  /* Another session with alice's credentials is excluded all the same. */
  zkrc_session *alice2 = session_as(ALICE);
  zkrc_lock *lk2 = new_lock(alice2, path, &ZOO_CREATOR_ALL_ACL);
  ZKT_ASSERT_RC(ZKRC_ELOCKED, zkrc_lock_acquire(lk2, ZKRC_NO_WAIT));
  ZKT_ASSERT_RC(ZKRC_ETIMEDOUT, zkrc_lock_acquire(lk2, 300));
  char **ids = NULL;
  size_t n = 0;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_participants(lk2, &ids, &n, 5000));
  CU_ASSERT_EQUAL(n, 1); /* the failed tries left nothing */
  zkrc_strv_free(ids);
  int64_t token = 0;
  zkrc_lock_token(lk, &token);
  bg_acquire b = {lk2, 15000, -999, 0, 0};
  GThread *t = g_thread_new("alice2", acquire_then_hold, &b);
  CU_ASSERT(zkt_wait_children(alice_raw, path, 2, 10000));
  int64_t released = zkt_now_ms();
  CU_ASSERT_EQUAL(zkrc_lock_release(lk), ZKRC_OK);
  g_thread_join(t);
  ZKT_ASSERT_RC(ZKRC_OK, b.rc);
  CU_ASSERT(b.at >= released);
  CU_ASSERT(b.token > token);
  /* No node left (-1: the container directory is already gone too). */
  CU_ASSERT(zkt_child_count(alice_raw, path) <= 0);

  free(node);
  zkrc_lock_free(lk2);
  zkrc_lock_free(lk);
  zkrc_session_close(alice2);
  zkrc_session_close(alice);
  zookeeper_close(alice_raw);
  g_free(path);
}

static void test_creator_acl_needs_an_authenticated_session(void) {
  open_root();
  char *path = zkt_path("creator-anon");
  zkrc_session *s = session_as(NULL);
  zkrc_lock *lk = new_lock(s, path, &ZOO_CREATOR_ALL_ACL);
  int64_t start = zkt_now_ms();
  /* The servers refuse the ACL (no identity to grant it to): a clear error
   * at once, not a timeout, and nothing created. */
  ZKT_ASSERT_RC(ZKRC_ENOAUTH, zkrc_lock_acquire(lk, 5000));
  CU_ASSERT_EQUAL(zkrc_last_zk_error(), ZINVALIDACL);
  CU_ASSERT(zkt_now_ms() - start < 4000);
  zhandle_t *zh = zkt_raw();
  CU_ASSERT_FALSE(zkt_exists(zh, path));
  zookeeper_close(zh);
  CU_ASSERT_FALSE(zkrc_lock_is_held(lk));
  zkrc_lock_free(lk);
  zkrc_session_close(s);
  g_free(path);
}

/* ---------------------- a waiter that may not read its predecessor */

/* Does the servers' total watch count exceed *@p arg? */
static int watch_count_above(void *arg) {
  return zkrc_ensemble_mntr_sum(zkt_ensemble(), "zk_watch_count") >
         *(int64_t *)arg;
}

static void test_waiter_without_read_access_still_gets_the_lock(void) {
  open_root();
  char *path = zkt_path("no-read");
  /* The directory: alice and bob may both create (and delete) nodes in it;
   * each one's node is readable by its creator only. */
  acl_list dir_acl;
  acl_for(&dir_acl, ZOO_PERM_ALL, ALICE, BOB);
  zhandle_t *admin = zkt_raw();
  CU_ASSERT_EQUAL_FATAL(
      zoo_create(admin, path, NULL, -1, &dir_acl.v, 0, NULL, 0), ZOK);

  zkrc_session *alice = session_as(ALICE), *bob = session_as(BOB);
  zkrc_lock *la = new_lock(alice, path, &ZOO_CREATOR_ALL_ACL);
  zkrc_lock *lb = new_lock(bob, path, &ZOO_CREATOR_ALL_ACL);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(la, 5000));
  char *alice_node = NULL;
  int64_t alice_token = 0;
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_node(la, &alice_node), ZKRC_OK);
  zkrc_lock_token(la, &alice_token);

  int64_t watches_before =
      zkrc_ensemble_mntr_sum(zkt_ensemble(), "zk_watch_count");
  bg_acquire b = {lb, 10000, -999, 0, 0};
  GThread *t = g_thread_new("bob", acquire_then_hold, &b);
  zhandle_t *bob_raw = raw_as(BOB);
  CU_ASSERT_FATAL(zkt_wait_children(bob_raw, path, 2, 10000));

  /* The premise: bob can see alice's node but not read it. */
  char buf[64];
  int len = sizeof buf;
  struct Stat st;
  CU_ASSERT_EQUAL(zoo_get(bob_raw, alice_node, 0, buf, &len, &st), ZNOAUTH);
  CU_ASSERT_EQUAL(zoo_exists(bob_raw, alice_node, 0, &st), ZOK);

  /* Bob has set his watch (whatever it is on: nobody else here sets
   * one) ... */
  CU_ASSERT(zkt_wait_for(watch_count_above, &watches_before, 10000));
  /* ... and waits quietly: no request loop against the refusal.  Each
   * session only pings (every third of its timeout) meanwhile. */
  int64_t before =
      zkrc_ensemble_mntr_sum(zkt_ensemble(), "zk_packets_received");
  g_usleep(G_USEC_PER_SEC); /* measuring a rate: this sleep is the window */
  int64_t packets =
      zkrc_ensemble_mntr_sum(zkt_ensemble(), "zk_packets_received") - before;
  printf("(%" PRId64 " packets in 1 s while bob waits) ", packets);
  CU_ASSERT(packets < 100);
  CU_ASSERT_EQUAL(b.rc, -999); /* still waiting */

  int64_t released = zkt_now_ms();
  CU_ASSERT_EQUAL(zkrc_lock_release(la), ZKRC_OK);
  g_thread_join(t);
  if (b.rc != ZKRC_OK)
    printf("\n  bob was never woken: the servers do not deliver a watch "
           "event on a node its watcher may not read (CVE-2024-23944 fix), "
           "so an exists watch on alice's node never fires\n");
  ZKT_ASSERT_RC(ZKRC_OK, b.rc);
  CU_ASSERT(b.at >= released);
  CU_ASSERT(b.token > alice_token);
  CU_ASSERT_EQUAL(zkt_nodes_left(bob_raw, path), 0);

  free(alice_node);
  zkrc_lock_free(la);
  zkrc_lock_free(lb);
  zkrc_session_close(alice);
  zkrc_session_close(bob);
  zookeeper_close(bob_raw);
  zoo_delete(admin, path, -1); /* admin may: the root is open */
  zookeeper_close(admin);
  acl_free(&dir_acl);
  g_free(path);
}

/* ------------------------- a directory we may write to but not read */

typedef struct async_result {
  GMutex mu;
  GCond cond;
  int status; /* 1 until the completion came */
} async_result;

static void set_result(async_result *r, int status) {
  g_mutex_lock(&r->mu);
  r->status = status;
  g_cond_broadcast(&r->cond);
  g_mutex_unlock(&r->mu);
}

static void on_acquired(zkrc_lock *lk, zkrc_lock_hold *hold,
                        const zkrc_lock_acquired_info *info, void *arg) {
  CU_ASSERT(info->status != ZKRC_ENOAUTH || info->zk_error == ZNOAUTH);
  set_result(arg, info->status);
}

static int wait_async(async_result *r, int timeout_ms) {
  int64_t deadline = g_get_monotonic_time() + (int64_t)timeout_ms * 1000;
  g_mutex_lock(&r->mu);
  while (r->status == 1 && g_cond_wait_until(&r->cond, &r->mu, deadline))
    ;
  int status = r->status;
  g_mutex_unlock(&r->mu);
  return status;
}

static void on_election(zkrc_election *e, const zkrc_election_event *info,
                        void *arg) {
  if (info->type == ZKRC_ELECTION_FAILED)
    set_result(arg, info->reason);
}

static int64_t packets_received(void) {
  return zkrc_ensemble_mntr_sum(zkt_ensemble(), "zk_packets_received");
}

/* Everyone may create and delete nodes in the directory, but only alice
 * may list it: an acquisition creates its node, cannot read the queue, and
 * must fail at once with ZKRC_ENOAUTH, its node deleted, instead of asking
 * again and again (it used to send 16,000 requests in 3 s, for ever with
 * ZKRC_WAIT_FOREVER).  The servers' request counter proves it. */
static void test_unreadable_directory_fails_at_once(void) {
  open_root();
  char *path = zkt_path("write-only");
  acl_list dir_acl;
  acl_for(&dir_acl, ZOO_PERM_ALL, ALICE, NULL);
  dir_acl.entries[1].perms = ZOO_PERM_CREATE | ZOO_PERM_DELETE;
  dir_acl.entries[1].id.scheme = "world";
  dir_acl.entries[1].id.id = "anyone";
  dir_acl.v.count = 2;
  zhandle_t *alice = raw_as(ALICE);
  CU_ASSERT_EQUAL_FATAL(
      zoo_create(alice, path, NULL, -1, &dir_acl.v, 0, NULL, 0), ZOK);
  zkrc_session *s = zkt_session();
  zkrc_lock *lk = new_lock(s, path, NULL);

  int64_t before = packets_received();
  int64_t t0 = zkt_now_ms();
  ZKT_ASSERT_RC(ZKRC_ENOAUTH, zkrc_lock_acquire(lk, ZKRC_WAIT_FOREVER));
  ZKT_ASSERT_RC(ZKRC_ENOAUTH, zkrc_lock_acquire(lk, 3000));
  async_result r = {.status = 1};
  g_mutex_init(&r.mu);
  g_cond_init(&r.cond);
  CU_ASSERT_EQUAL(
      zkrc_lock_acquire_async(lk, ZKRC_WAIT_FOREVER, on_acquired, &r, NULL),
      ZKRC_OK);
  ZKT_ASSERT_RC(ZKRC_ENOAUTH, wait_async(&r, 10000));
  zkrc_election_options eo;
  zkrc_election_options_init(&eo);
  eo.on_event = on_election;
  eo.event_arg = &r;
  r.status = 1;
  zkrc_election *e = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_election_new(&e, s, path, &eo), ZKRC_OK);
  CU_ASSERT_EQUAL(zkrc_election_join(e), ZKRC_OK);
  ZKT_ASSERT_RC(ZKRC_ENOAUTH, wait_async(&r, 10000));
  int64_t took = zkt_now_ms() - t0;
  CU_ASSERT_EQUAL(zkt_nodes_left(alice, path), 0);
  int64_t packets = packets_received() - before;
  printf("(4 refused attempts: %" PRId64 " ms, %" PRId64 " requests to the "
         "servers) ",
         took, packets);
  /* Each attempt: a create, a listing, a delete, a watch on its own node
   * at most; plus the session's lease renewals meanwhile. */
  CU_ASSERT(packets < 40);
  CU_ASSERT(took < 2000);

  zkrc_election_free(e);
  zkrc_lock_free(lk);
  zkrc_session_close(s);
  zoo_delete(alice, path, -1);
  zookeeper_close(alice);
  g_mutex_clear(&r.mu);
  g_cond_clear(&r.cond);
  acl_free(&dir_acl);
  g_free(path);
}

/* ------------------------------ credentials outlive an expired session */

typedef struct new_sessions {
  GMutex mu;
  GCond cond;
  int count;
} new_sessions;

static void count_new_sessions(zkrc_session *s, const zkrc_session_event *ev_,
                               void *arg) {
  zkrc_session_event_type ev = ev_->type;
  new_sessions *ns = arg;
  if (ev != ZKRC_SESSION_EVENT_CONNECTED)
    return;
  g_mutex_lock(&ns->mu);
  ns->count++;
  g_cond_broadcast(&ns->cond);
  g_mutex_unlock(&ns->mu);
}

static void test_credentials_survive_session_expiry(void) {
  open_root();
  char *path = zkt_path("reauth");
  /* A directory only alice may use, so that acquiring in it proves the
   * session is alice. */
  acl_list dir_acl;
  acl_for(&dir_acl, ZOO_PERM_ALL, ALICE, NULL);
  zhandle_t *admin = zkt_raw();
  CU_ASSERT_EQUAL_FATAL(
      zoo_create(admin, path, NULL, -1, &dir_acl.v, 0, NULL, 0), ZOK);
  zkrc_session *s = session_as(ALICE);
  zkrc_lock *lk = new_lock(s, path, &ZOO_CREATOR_ALL_ACL);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lk, 5000));
  CU_ASSERT_EQUAL(zkrc_lock_release(lk), ZKRC_OK);

  new_sessions ns = {.count = 0};
  g_mutex_init(&ns.mu);
  g_cond_init(&ns.cond);
  unsigned long listener = 0;
  CU_ASSERT_EQUAL(
      zkrc_session_add_listener(s, count_new_sessions, &ns, &listener), 0);
  int64_t old_id = zkrc_session_id(s);
  zkt_expire(s);
  /* The session reopens by itself (a new ZooKeeper session). */
  int64_t deadline = g_get_monotonic_time() + 15 * G_TIME_SPAN_SECOND;
  g_mutex_lock(&ns.mu);
  while (ns.count == 0 && g_cond_wait_until(&ns.cond, &ns.mu, deadline))
    ;
  g_mutex_unlock(&ns.mu);
  CU_ASSERT_EQUAL_FATAL(ns.count, 1);
  CU_ASSERT_NOT_EQUAL(zkrc_session_id(s), old_id);
  zkrc_session_remove_listener(s, listener);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lk, 5000));
  CU_ASSERT_EQUAL(zkrc_lock_release(lk), ZKRC_OK);

  /* Without the credentials the same directory refuses. */
  zkrc_session *anon = session_as(NULL);
  zkrc_lock *other = new_lock(anon, path, NULL);
  ZKT_ASSERT_RC(ZKRC_ENOAUTH, zkrc_lock_acquire(other, 5000));
  zkrc_lock_free(other);
  zkrc_session_close(anon);

  zkrc_lock_free(lk);
  zkrc_session_close(s);
  g_mutex_clear(&ns.mu);
  g_cond_clear(&ns.cond);
  zoo_delete(admin, path, -1);
  zookeeper_close(admin);
  acl_free(&dir_acl);
  g_free(path);
}

static void add_suites(void) {
  ZKT_SUITE(
      "security",
      {"creator-only ACL keeps others out", test_creator_acl_keeps_others_out},
      {"creator ACL needs an authenticated session",
       test_creator_acl_needs_an_authenticated_session},
      {"waiter without read access still gets the lock",
       test_waiter_without_read_access_still_gets_the_lock},
      {"unreadable directory fails at once",
       test_unreadable_directory_fails_at_once},
      {"credentials survive session expiry",
       test_credentials_survive_session_expiry});
}

int main(void) { return zkt_run("test_security", add_suites); }
