/*
 * The lock facing what others put on the servers: children of its directory
 * that are not contenders, a directory that is a plain node with data or an
 * ephemeral node (which cannot have children), and an administrator who
 * deletes a waiting contender's node.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <glib.h>

#include "testutil.h"

static zkrc_lock *new_lock(zkrc_session *s, const char *path, const char *id) {
  zkrc_lock_options o;
  zkrc_lock_options_init(&o);
  o.participant_id = id;
  zkrc_lock *lk = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_lock_new(&lk, s, path, &o), ZKRC_OK);
  return lk;
}

static void make_node(zhandle_t *zh, const char *path, const char *data,
                      int flags) {
  int rc = zoo_create(zh, path, data, data ? (int)strlen(data) : -1,
                      &ZOO_OPEN_ACL_UNSAFE, flags, NULL, 0);
  CU_ASSERT_EQUAL_FATAL(rc, ZOK);
}

static void open_root(zhandle_t *zh) {
  int rc = zoo_create(zh, "/zkt", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
  CU_ASSERT(rc == ZOK || rc == ZNODEEXISTS);
}

/* Who holds, in which order, and never two at once. */
typedef struct ledger {
  GMutex mu;
  int inside, max_inside;
  GString *order;
} ledger;

typedef struct contender {
  const char *name;
  zkrc_lock *lk;
  ledger *led;
  int timeout_ms;
  int hold_ms;
  int rc;
  int64_t token;
} contender;

static gpointer contend(gpointer data) {
  contender *c = data;
  c->rc = zkrc_lock_acquire(c->lk, c->timeout_ms);
  if (c->rc != ZKRC_OK)
    return NULL;
  zkrc_lock_token(c->lk, &c->token);
  g_mutex_lock(&c->led->mu);
  c->led->inside++;
  c->led->max_inside = MAX(c->led->max_inside, c->led->inside);
  g_string_append_printf(c->led->order, "%s ", c->name);
  g_mutex_unlock(&c->led->mu);
  g_usleep((gulong)c->hold_ms * 1000); /* hold it a while: the window
                                          another holder would show in */
  g_mutex_lock(&c->led->mu);
  c->led->inside--;
  g_mutex_unlock(&c->led->mu);
  CU_ASSERT_EQUAL(zkrc_lock_release(c->lk), ZKRC_OK);
  return NULL;
}

/* ------------------------------------------------ non-contender children */

static const char *const junk[] = {"junk",
                                   "lock-",
                                   "lock-12",
                                   "lock-000000000x",
                                   "x-lock-abc",
                                   "__lock__",
                                   "latch-0000000001",
                                   "lock-00000000001",
                                   "lock-9999999999",
                                   "lock--2147483649",
                                   "lock-+000000001",
                                   "lock- 000000001"};
#define NJUNK ((int)G_N_ELEMENTS(junk))

static void test_children_that_are_not_contenders_are_ignored(void) {
  char *path = zkt_path("junk");
  zhandle_t *admin = zkt_raw();
  open_root(admin);
  make_node(admin, path, NULL, 0);
  for (int i = 0; i < NJUNK / 2; i++) {
    char *child = g_strdup_printf("%s/%s", path, junk[i]);
    make_node(admin, child, "not a contender", 0);
    g_free(child);
  }
  zkrc_session *sa = zkt_session(), *sb = zkt_session();
  zkrc_lock *a = new_lock(sa, path, "a"), *b = new_lock(sb, path, "b");
  /* Nobody but junk: a try gets it at once. */
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(a, ZKRC_NO_WAIT));
  char **ids = NULL;
  size_t n = 0;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_participants(a, &ids, &n, 5000));
  CU_ASSERT_EQUAL(n, 1);
  if (n == 1)
    CU_ASSERT_STRING_EQUAL(ids[0], "a");
  zkrc_strv_free(ids);
  ZKT_ASSERT_RC(ZKRC_ELOCKED, zkrc_lock_acquire(b, ZKRC_NO_WAIT));

  /* More junk while b waits, and some junk goes away: b keeps waiting. */
  ledger led = {.order = g_string_new(NULL)};
  g_mutex_init(&led.mu);
  contender cb = {"b", b, &led, 15000, 50, -999, 0};
  GThread *t = g_thread_new("b", contend, &cb);
  CU_ASSERT_FATAL(zkt_wait_children(admin, path, NJUNK / 2 + 2, 10000));
  for (int i = NJUNK / 2; i < NJUNK; i++) {
    char *child = g_strdup_printf("%s/%s", path, junk[i]);
    make_node(admin, child, "not a contender", 0);
    g_free(child);
  }
  char *gone = g_strdup_printf("%s/%s", path, junk[0]);
  CU_ASSERT_EQUAL(zoo_delete(admin, gone, -1), ZOK);
  g_free(gone);
  CU_ASSERT_TRUE(zkrc_lock_is_held(a));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_fenced_multi(a, 0, NULL, NULL, 5000));
  CU_ASSERT_EQUAL(cb.rc, -999);
  int64_t token = 0;
  zkrc_lock_token(a, &token);
  CU_ASSERT_EQUAL(zkrc_lock_release(a), ZKRC_OK);
  g_thread_join(t);
  ZKT_ASSERT_RC(ZKRC_OK, cb.rc);
  CU_ASSERT(cb.token > token);
  /* The junk is not ours to delete: all of it is still there. */
  CU_ASSERT_EQUAL(zkt_child_count(admin, path), NJUNK - 1);

  zkrc_lock_free(a);
  zkrc_lock_free(b);
  zkrc_session_close(sa);
  zkrc_session_close(sb);
  zookeeper_close(admin);
  g_string_free(led.order, TRUE);
  g_mutex_clear(&led.mu);
  g_free(path);
}

/* ---------------------------------------- directories that are odd nodes */

static void test_directory_with_data_works(void) {
  char *path = zkt_path("data-dir");
  zhandle_t *admin = zkt_raw();
  open_root(admin);
  make_node(admin, path, "not a directory", 0);
  zkrc_session *s = zkt_session();
  zkrc_lock *lk = new_lock(s, path, "x");
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lk, 5000));
  CU_ASSERT_EQUAL(zkt_child_count(admin, path), 1);
  CU_ASSERT_EQUAL(zkrc_lock_release(lk), ZKRC_OK);
  /* Left as it was: no children, the same data. */
  char buf[64];
  int len = sizeof buf - 1;
  struct Stat st;
  CU_ASSERT_EQUAL_FATAL(zoo_get(admin, path, 0, buf, &len, &st), ZOK);
  buf[len] = '\0';
  CU_ASSERT_STRING_EQUAL(buf, "not a directory");
  CU_ASSERT_EQUAL(st.numChildren, 0);
  CU_ASSERT_EQUAL(st.ephemeralOwner, 0);
  zkrc_lock_free(lk);
  zkrc_session_close(s);
  zookeeper_close(admin);
  g_free(path);
}

static void test_ephemeral_directory_fails_cleanly(void) {
  char *path = zkt_path("ephemeral-dir");
  zhandle_t *admin = zkt_raw();
  open_root(admin);
  char *parent = g_strdup(path);
  *strrchr(parent, '/') = '\0';
  (void)zoo_create(admin, parent, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
  g_free(parent);
  make_node(admin, path, "ephemeral", ZOO_EPHEMERAL);
  zkrc_session *s = zkt_session();
  zkrc_lock *lk = new_lock(s, path, "x");
  int64_t start = zkt_now_ms();
  ZKT_ASSERT_RC(ZKRC_EZOOKEEPER, zkrc_lock_acquire(lk, 5000));
  CU_ASSERT_EQUAL(zkrc_last_zk_error(), ZNOCHILDRENFOREPHEMERALS);
  CU_ASSERT(zkt_now_ms() - start < 4000); /* refused, not timed out */
  CU_ASSERT_FALSE(zkrc_lock_is_held(lk));
  ZKT_ASSERT_RC(ZKRC_ENOTOWNER, zkrc_lock_release(lk));
  char buf[64];
  int len = sizeof buf - 1;
  struct Stat st;
  CU_ASSERT_EQUAL_FATAL(zoo_get(admin, path, 0, buf, &len, &st), ZOK);
  buf[len] = '\0';
  CU_ASSERT_STRING_EQUAL(buf, "ephemeral");
  CU_ASSERT_EQUAL(st.numChildren, 0);

  /* Once the odd node is gone, the same lock object works. */
  zookeeper_close(admin); /* its session ends: the ephemeral goes */
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lk, 5000));
  CU_ASSERT_EQUAL(zkrc_lock_release(lk), ZKRC_OK);
  zkrc_lock_free(lk);
  zkrc_session_close(s);
  g_free(path);
}

/* --------------------------- an administrator deletes a waiting node */

/* The contenders' node names, in queue order. */
static char **queue_of(zhandle_t *zh, const char *path) {
  struct String_vector kids;
  if (zoo_get_children(zh, path, 0, &kids) != ZOK)
    return NULL;
  GPtrArray *names = g_ptr_array_new();
  for (int i = 0; i < kids.count; i++)
    g_ptr_array_add(names, g_strdup(kids.data[i]));
  deallocate_String_vector(&kids);
  /* Same length of sequence suffix for every lock node: sort by it. */
  for (guint i = 1; i < names->len; i++)
    for (guint j = i; j > 0; j--) {
      const char *x = g_ptr_array_index(names, j - 1),
                 *y = g_ptr_array_index(names, j);
      if (strcmp(x + strlen(x) - 10, y + strlen(y) - 10) <= 0)
        break;
      names->pdata[j - 1] = (gpointer)y;
      names->pdata[j] = (gpointer)x;
    }
  g_ptr_array_add(names, NULL);
  return (char **)g_ptr_array_free(names, FALSE);
}

static void test_deleted_waiter_requeues_and_successor_waits(void) {
  char *path = zkt_path("deleted-waiter");
  zhandle_t *admin = zkt_raw();
  open_root(admin);
  zkrc_session *sh = zkt_session(), *s1 = zkt_session(), *s2 = zkt_session();
  zkrc_lock *holder = new_lock(sh, path, "holder");
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(holder, 5000));
  ledger led = {.order = g_string_new(NULL)};
  g_mutex_init(&led.mu);
  contender w1 = {"w1", new_lock(s1, path, "w1"), &led, 20000, 300, -999, 0};
  contender w2 = {"w2", new_lock(s2, path, "w2"), &led, 20000, 300, -999, 0};
  GThread *t1 = g_thread_new("w1", contend, &w1);
  CU_ASSERT_FATAL(zkt_wait_children(admin, path, 2, 10000));
  GThread *t2 = g_thread_new("w2", contend, &w2);
  CU_ASSERT_FATAL(zkt_wait_children(admin, path, 3, 10000));

  char **q = queue_of(admin, path);
  CU_ASSERT_FATAL(q && q[0] && q[1] && q[2]);
  char *holder_node = g_strdup_printf("%s/%s", path, q[0]);
  char *w1_node = g_strdup_printf("%s/%s", path, q[1]);
  char *w2_node = g_strdup_printf("%s/%s", path, q[2]);
  /* Waiting as expected: w2 watches w1. */
  zkt_watch_seen w2_on_w1 = {w1_node, zkrc_session_id(s2)};
  CU_ASSERT(zkt_wait_for(zkt_session_watches, &w2_on_w1, 10000));

  /* The administrator deletes w1's node. */
  CU_ASSERT_EQUAL(zoo_delete(admin, w1_node, -1), ZOK);
  /* w2 notices and watches the holder instead - it must not take the lock
   * while the holder holds it. */
  zkt_watch_seen w2_on_holder = {holder_node, zkrc_session_id(s2)};
  CU_ASSERT(zkt_wait_for(zkt_session_watches, &w2_on_holder, 10000));
  CU_ASSERT_EQUAL(w2.rc, -999);
  CU_ASSERT_EQUAL(w1.rc, -999);
  CU_ASSERT_TRUE(zkrc_lock_is_held(holder));
  CU_ASSERT_EQUAL(zkt_child_count(admin, path), 2);
  char **ids = NULL;
  size_t n = 0;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_participants(holder, &ids, &n, 5000));
  CU_ASSERT_EQUAL(n, 2);
  if (n == 2) {
    CU_ASSERT_STRING_EQUAL(ids[0], "holder");
    CU_ASSERT_STRING_EQUAL(ids[1], "w2");
  }
  zkrc_strv_free(ids);

  /* The holder lets go: w2 is next; w1 queues again and comes after. */
  int64_t token = 0;
  zkrc_lock_token(holder, &token);
  CU_ASSERT_EQUAL(zkrc_lock_release(holder), ZKRC_OK);
  g_thread_join(t2);
  g_thread_join(t1);
  ZKT_ASSERT_RC(ZKRC_OK, w2.rc);
  ZKT_ASSERT_RC(ZKRC_OK, w1.rc);
  CU_ASSERT_STRING_EQUAL(led.order->str, "w2 w1 ");
  CU_ASSERT_EQUAL(led.max_inside, 1);
  CU_ASSERT(w2.token > token);
  CU_ASSERT(w1.token > w2.token); /* a new node: a new, higher token */
  CU_ASSERT_FALSE(zkt_exists(admin, w2_node));
  /* No node left (-1: the container directory is already gone too). */
  CU_ASSERT(zkt_child_count(admin, path) <= 0);

  g_strfreev(q);
  g_free(holder_node);
  g_free(w1_node);
  g_free(w2_node);
  zkrc_lock_free(holder);
  zkrc_lock_free(w1.lk);
  zkrc_lock_free(w2.lk);
  zkrc_session_close(sh);
  zkrc_session_close(s1);
  zkrc_session_close(s2);
  zookeeper_close(admin);
  g_string_free(led.order, TRUE);
  g_mutex_clear(&led.mu);
  g_free(path);
}

/* The direct successor takes the lock without listing the directory
 * again, so something else must show that its node is still there.  A
 * watch on its own node does not (an earlier version of the shortcut
 * trusted one, and this test, from its review, found two holders): the
 * servers (3.8 with the CVE-2024-23944 fix, as installed here, and every
 * release from 3.8.4 / 3.9.2 on) deliver a watch event only to a session
 * allowed to READ the node.  An administrator takes READ away from the
 * successor's node, then deletes it.  Held means held: the successor must
 * not hold with its node gone, and never two at once. */
static int someone_inside(void *arg) {
  ledger *led = arg;
  g_mutex_lock(&led->mu);
  int in = led->inside;
  g_mutex_unlock(&led->mu);
  return in > 0;
}

static void test_unreadable_deleted_successor_does_not_hold(void) {
  char *path = zkt_path("unreadable-successor");
  zhandle_t *admin = zkt_raw();
  open_root(admin);
  zkrc_session *sh = zkt_session(), *s1 = zkt_session(), *s3 = zkt_session();
  zkrc_lock *holder = new_lock(sh, path, "holder");
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(holder, 5000));
  ledger led = {.order = g_string_new(NULL)};
  g_mutex_init(&led.mu);
  contender w1 = {"w1", new_lock(s1, path, "w1"), &led, 20000, 3000, -999, 0};
  contender w3 = {"w3", new_lock(s3, path, "w3"), &led, 15000, 300, -999, 0};
  GThread *t1 = g_thread_new("w1", contend, &w1);
  CU_ASSERT_FATAL(zkt_wait_children(admin, path, 2, 10000));
  char **q = queue_of(admin, path);
  CU_ASSERT_FATAL(q && q[0] && q[1]);
  char *w1_node = g_strdup_printf("%s/%s", path, q[1]);
  char *holder_node = g_strdup_printf("%s/%s", path, q[0]);
  zkt_watch_seen w1_on_holder = {holder_node, zkrc_session_id(s1)};
  CU_ASSERT_FATAL(zkt_wait_for(zkt_session_watches, &w1_on_holder, 10000));
  g_free(holder_node);

  /* The administrator takes READ away from w1's node, then deletes it. */
  CU_ASSERT_EQUAL_FATAL(zoo_set_acl(admin, w1_node, -1, zkt_acl_no_read()),
                        ZOK);
  CU_ASSERT_EQUAL_FATAL(zoo_delete(admin, w1_node, -1), ZOK);
  CU_ASSERT_FALSE(zkt_exists(admin, w1_node));

  /* The holder lets go.  w1 may hold only with a node of its own. */
  CU_ASSERT_EQUAL(zkrc_lock_release(holder), ZKRC_OK);
  int w1_held = zkt_wait_for(someone_inside, &led, 5000);
  int w1_children = zkt_child_count(admin, path);
  printf("\n  w1 held=%d, children in the directory while it holds: %d\n",
         w1_held, w1_children);
  CU_ASSERT_TRUE(w1_held);
  CU_ASSERT_EQUAL(w1_children, 1); /* its own new node */

  /* A newcomer must wait for w1. */
  GThread *t3 = g_thread_new("w3", contend, &w3);
  g_thread_join(t3);
  g_thread_join(t1);
  printf("  order: %s max inside: %d\n", led.order->str, led.max_inside);
  CU_ASSERT_EQUAL(led.max_inside, 1);
  CU_ASSERT_STRING_EQUAL(led.order->str, "w1 w3 ");

  g_strfreev(q);
  g_free(w1_node);
  zkrc_lock_free(holder);
  zkrc_lock_free(w1.lk);
  zkrc_lock_free(w3.lk);
  zkrc_session_close(sh);
  zkrc_session_close(s1);
  zkrc_session_close(s3);
  zookeeper_close(admin);
  g_string_free(led.order, TRUE);
  g_mutex_clear(&led.mu);
  g_free(path);
}

/* Contender nodes their own creator may not read (the lock's ACL has no
 * READ; the directory, made beforehand, may be listed).  The waiter's
 * watch on its predecessor is refused, so it watches the directory
 * (queue_private.h, watch_dir).  The successor must still get the lock
 * when the holder lets go (an earlier version of the direct successor's
 * shortcut read its own node with a getData, refused here). */
static void test_unreadable_contender_nodes_successor_acquires(void) {
  char *path = zkt_path("unreadable-nodes");
  zhandle_t *admin = zkt_raw();
  open_root(admin);
  make_node(admin, path, NULL, 0);
  zkrc_session *sh = zkt_session(), *s1 = zkt_session();
  zkrc_lock_options o;
  zkrc_lock_options_init(&o);
  o.acl = zkt_acl_no_read();
  zkrc_lock *holder = NULL, *succ = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_new(&holder, sh, path, &o));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_new(&succ, s1, path, &o));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(holder, 5000));
  ledger led = {.order = g_string_new(NULL)};
  g_mutex_init(&led.mu);
  contender w1 = {"w1", succ, &led, 10000, 10, -999, 0};
  GThread *t1 = g_thread_new("w1", contend, &w1);
  CU_ASSERT(zkt_wait_children(admin, path, 2, 10000));
  CU_ASSERT_EQUAL(zkrc_lock_release(holder), ZKRC_OK);
  g_thread_join(t1);
  printf("\n  successor: rc %d (%s)\n", w1.rc, zkrc_strerror(w1.rc));
  ZKT_ASSERT_RC(ZKRC_OK, w1.rc);
  zkrc_lock_free(holder);
  zkrc_lock_free(succ);
  zkrc_session_close(sh);
  zkrc_session_close(s1);
  zoo_delete(admin, path, -1);
  zookeeper_close(admin);
  g_string_free(led.order, TRUE);
  g_mutex_clear(&led.mu);
  g_free(path);
}

/* One transaction deletes the holder's node and then the direct
 * successor's (a multi, as zkCli's deleteall sends).  The servers tell
 * the holder's deletion first (an earlier version of the shortcut, which
 * trusted a watch on its own node, held then): the successor must not
 * hold with the node that the same transaction deleted (it may hold with
 * a new one). */
static void test_multi_deleting_holder_then_successor(void) {
  char *path = zkt_path("multi-deleted");
  zhandle_t *admin = zkt_raw();
  open_root(admin);
  zkrc_session *sh = zkt_session(), *s1 = zkt_session();
  zkrc_lock *holder = new_lock(sh, path, "holder");
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(holder, 5000));
  zkt_acquirer w1 = {new_lock(s1, path, "w1"), 10000, -999, 0};
  GThread *t1 = g_thread_new("w1", zkt_acquire_once, &w1);
  CU_ASSERT_FATAL(zkt_wait_children(admin, path, 2, 10000));
  char **q = queue_of(admin, path);
  CU_ASSERT_FATAL(q && q[0] && q[1]);
  char *holder_node = g_strdup_printf("%s/%s", path, q[0]);
  char *w1_node = g_strdup_printf("%s/%s", path, q[1]);
  zkt_watch_seen w1_on_holder = {holder_node, zkrc_session_id(s1)};
  CU_ASSERT_FATAL(zkt_wait_for(zkt_session_watches, &w1_on_holder, 10000));
  struct Stat st;
  CU_ASSERT_EQUAL_FATAL(zoo_exists(admin, w1_node, 0, &st), ZOK);
  int64_t old_czxid = st.czxid;

  zoo_op_t ops[2];
  zoo_op_result_t results[2];
  zoo_delete_op_init(&ops[0], holder_node, -1);
  zoo_delete_op_init(&ops[1], w1_node, -1);
  CU_ASSERT_EQUAL_FATAL(zoo_multi(admin, 2, ops, results), ZOK);
  g_thread_join(t1);
  printf("\n  w1: rc %d, token %" PRId64 ", its deleted node's czxid %" PRId64
         "\n",
         w1.rc, w1.token, old_czxid);
  ZKT_ASSERT_RC(ZKRC_OK, w1.rc); /* with a new node */
  CU_ASSERT_NOT_EQUAL(w1.token, old_czxid);

  g_strfreev(q);
  g_free(holder_node);
  g_free(w1_node);
  zkrc_lock_release(holder);
  zkrc_lock_free(holder);
  zkrc_lock_free(w1.lk);
  zkrc_session_close(sh);
  zkrc_session_close(s1);
  zookeeper_close(admin);
  g_free(path);
}

static void add_suites(void) {
  ZKT_SUITE("malformed server input",
            {"children that are not contenders are ignored",
             test_children_that_are_not_contenders_are_ignored},
            {"directory with data works", test_directory_with_data_works},
            {"ephemeral directory fails cleanly",
             test_ephemeral_directory_fails_cleanly},
            {"deleted waiter requeues and successor waits",
             test_deleted_waiter_requeues_and_successor_waits},
            {"review: unreadable deleted successor does not hold",
             test_unreadable_deleted_successor_does_not_hold},
            {"review: unreadable contender nodes, successor acquires",
             test_unreadable_contender_nodes_successor_acquires},
            {"review: multi deleting holder then successor",
             test_multi_deleting_holder_then_successor});
}

int main(void) { return zkt_run("test_malformed", add_suites); }
