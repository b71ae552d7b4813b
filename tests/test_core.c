/*
 * Tests that need no server: error codes, path validation, contender names
 * and their order, and refusals of bad arguments before anything is sent.
 */
#include "config.h"

#include <stddef.h>

#include <limits.h>
#include <string.h>

#include "core/names.h"
#include "queue/queue_private.h"
#include "testutil.h"
#include "core/util.h"

/* ---------------------------------------------------------------- errors */

static void test_every_error_has_name_and_message(void) {
#define CHECK_ERR(name, value, msg)                                            \
  CU_ASSERT_STRING_EQUAL(zkrc_err_name(ZKRC_##name), "ZKRC_" #name);           \
  CU_ASSERT_STRING_EQUAL(zkrc_strerror(ZKRC_##name), msg);                     \
  /* never one of ZooKeeper's own codes (ZOO_ERRORS: -1..-15, -100..-199) */   \
  CU_ASSERT(ZKRC_##name <= -1000);                                             \
  CU_ASSERT_STRING_EQUAL(zerror(ZKRC_##name), "unknown error");
  ZKRC_ERRNO_MAP(CHECK_ERR)
#undef CHECK_ERR
  CU_ASSERT_STRING_EQUAL(zkrc_err_name(ZKRC_OK), "ZKRC_OK");
  /* One version: the header's, which configure reads. */
  CU_ASSERT_STRING_EQUAL(zkrc_version(), ZKRECIPES_VERSION_STRING);
  CU_ASSERT_STRING_EQUAL(zkrc_version(), PACKAGE_VERSION);
  CU_ASSERT_STRING_EQUAL(zkrc_err_name(-9999), "ZKRC_UNKNOWN");
  CU_ASSERT_STRING_EQUAL(zkrc_strerror(12345), "unknown zkrecipes error");
}

static void test_zookeeper_codes_map_to_ours(void) {
  CU_ASSERT_EQUAL(zkrc_from_zk_error(ZOK), ZKRC_OK);
  CU_ASSERT_EQUAL(zkrc_from_zk_error(ZNONODE), ZKRC_ENONODE);
  CU_ASSERT_EQUAL(zkrc_from_zk_error(ZNOAUTH), ZKRC_ENOAUTH);
  CU_ASSERT_EQUAL(zkrc_from_zk_error(ZCONNECTIONLOSS), ZKRC_ECONNLOSS);
  CU_ASSERT_EQUAL(zkrc_from_zk_error(ZSESSIONEXPIRED), ZKRC_ESESSIONEXPIRED);
  CU_ASSERT_EQUAL(zkrc_from_zk_error(ZNOTEMPTY), ZKRC_ENOTEMPTY);
  CU_ASSERT_EQUAL(zkrc_from_zk_error(ZRUNTIMEINCONSISTENCY), ZKRC_EZOOKEEPER);
}

/* ----------------------------------------------------------------- paths */

static void test_valid_paths_pass(void) {
  const char *ok[] = {"/a",   "/locks/job-1", "/a/b/c",      "/x.y",
                      "/..a", "/a../b",       "/zookeeper2", "/ünïcode/ok"};
  for (size_t i = 0; i < G_N_ELEMENTS(ok); i++) {
    const char *why = "unset";
    int rc = zkrc_path_validate(ok[i], &why);
    if (rc != ZKRC_OK)
      fprintf(stderr, "\n%s refused: %s\n", ok[i], why);
    CU_ASSERT_EQUAL(rc, ZKRC_OK);
    CU_ASSERT_PTR_NULL(why);
  }
}

static void test_invalid_paths_are_refused_with_a_reason(void) {
  const char *bad[] = {"",
                       "a",
                       "a/b",
                       "/",
                       "/a/",
                       "//a",
                       "/a//b",
                       "/.",
                       "/a/.",
                       "/a/../b",
                       "/..",
                       "/zookeeper",
                       "/zookeeper/x",
                       "/a\001b",
                       "/a\177",
                       "/\xff\xfe",
                       "/a\xc2\x85" /* U+0085, a C1 control */,
                       "/\xee\x80\x80" /* U+E000, private use */,
                       "/\xef\xbf\xbf" /* U+FFFF */,
                       "/\xf0\x9f\x94\x92" /* U+1F512, an emoji */};
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
    const char *why = NULL;
    CU_ASSERT_EQUAL(zkrc_path_validate(bad[i], &why), ZKRC_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(why);
  }
  const char *why = NULL;
  CU_ASSERT_EQUAL(zkrc_path_validate(NULL, &why), ZKRC_EINVAL);
  CU_ASSERT_PTR_NOT_NULL(why);
  CU_ASSERT_EQUAL(zkrc_path_validate(NULL, NULL), ZKRC_EINVAL);
}

static void test_embedded_nul_and_length_limit(void) {
  const char with_nul[] = "/a\0b";
  CU_ASSERT_EQUAL(zkrc_path_validate_n(with_nul, sizeof with_nul - 1, NULL),
                  ZKRC_EINVAL);
  char *longest = g_malloc(ZKRC_PATH_MAX + 2);
  longest[0] = '/';
  memset(longest + 1, 'x', ZKRC_PATH_MAX - 1);
  longest[ZKRC_PATH_MAX] = '\0';
  CU_ASSERT_EQUAL(zkrc_path_validate(longest, NULL), ZKRC_OK);
  longest[ZKRC_PATH_MAX] = 'x';
  longest[ZKRC_PATH_MAX + 1] = '\0';
  CU_ASSERT_EQUAL(zkrc_path_validate(longest, NULL), ZKRC_EINVAL);
  g_free(longest);
}

/* ------------------------------------------------------- contender names */

static void test_contender_names_are_recognised(void) {
  int32_t seq = 0;
  CU_ASSERT_TRUE(zkrc__contender_seq(
      "_c_0f8e2c1a-4a8b-4c47-9a0e-6f1a2b3c4d5e-lock-0000000042",
      zkrc__lock_markers, &seq));
  CU_ASSERT_EQUAL(seq, 42);
  CU_ASSERT_TRUE(
      zkrc__contender_seq("3f2a__lock__0000000007", zkrc__lock_markers, &seq));
  CU_ASSERT_EQUAL(seq, 7);
  CU_ASSERT_TRUE(
      zkrc__contender_seq("lock-2147483647", zkrc__lock_markers, &seq));
  CU_ASSERT_EQUAL(seq, INT32_MAX);
  /* After 2^31 creations the server's counter is negative. */
  CU_ASSERT_TRUE(
      zkrc__contender_seq("x-lock--2147483648", zkrc__lock_markers, &seq));
  CU_ASSERT_EQUAL(seq, INT32_MIN);
  CU_ASSERT_TRUE(
      zkrc__contender_seq("x-lock--000000001", zkrc__lock_markers, &seq));
  CU_ASSERT_EQUAL(seq, -1);
  CU_ASSERT_TRUE(
      zkrc__contender_seq("_c_x-latch-0000000003", zkrc__latch_markers, &seq));
  CU_ASSERT_EQUAL(seq, 3);
}

static void test_other_children_are_ignored(void) {
  int32_t seq;
  const char *not_contenders[] = {
      "lock-",
      "lock-12",
      "lock-00000000001",
      "lock-abcdefghij",
      "readme",
      "x-lock-000000004x",
      "lock-2147483648",
      "lock--0000000000",
      "lock--0000000001" /* not how %010d writes -1 */,
      "x-latch-0000000001" /* a latch is not a lock contender */,
      ""};
  for (size_t i = 0; i < G_N_ELEMENTS(not_contenders); i++)
    CU_ASSERT_FALSE(
        zkrc__contender_seq(not_contenders[i], zkrc__lock_markers, &seq));
  CU_ASSERT_FALSE(zkrc__contender_seq(NULL, zkrc__lock_markers, &seq));
}

static void test_contenders_sort_by_signed_sequence(void) {
  char *names[] = {"b-lock-0000000010",   "junk",
                   "a__lock__0000000002", "c-lock--000000005",
                   "d-lock-0000000001",   "e-lock-x"};
  GArray *sorted =
      zkrc__contenders_sorted(names, G_N_ELEMENTS(names), zkrc__lock_markers);
  CU_ASSERT_EQUAL_FATAL(sorted->len, 4);
  const char *expect[] = {"c-lock--000000005", "d-lock-0000000001",
                          "a__lock__0000000002", "b-lock-0000000010"};
  for (int i = 0; i < 4; i++)
    CU_ASSERT_STRING_EQUAL(g_array_index(sorted, zkrc__contender_entry, i).name,
                           expect[i]);
  CU_ASSERT_EQUAL(zkrc__contenders_find(sorted, "a__lock__0000000002"), 2);
  CU_ASSERT_EQUAL(zkrc__contenders_find(sorted, "junk"), -1);
  zkrc__contenders_free(sorted);
}

static void test_protected_prefix_has_curators_form(void) {
  static const guint8 uuid[16] = {0x0f, 0x8e, 0x2c, 0x1a, 0x4a, 0x8b,
                                  0x4c, 0x47, 0x9a, 0x0e, 0x6f, 0x1a,
                                  0x2b, 0x3c, 0x4d, 0x5e};
  char p[ZKRC__PROTECTED_PREFIX_LEN + 1];
  zkrc__protected_prefix(uuid, p);
  CU_ASSERT_STRING_EQUAL(p, "_c_0f8e2c1a-4a8b-4c47-9a0e-6f1a2b3c4d5e-");
  CU_ASSERT_EQUAL(strlen(p), ZKRC__PROTECTED_PREFIX_LEN);
}

/* A random uuid is a version 4 one, as Curator's (Java's randomUUID):
 * "xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx", and two differ. */
static void test_random_uuid_is_version_4(void) {
  guint8 a[16], b[16];
  zkrc__uuid_bytes_random(a);
  zkrc__uuid_bytes_random(b);
  char p[ZKRC__PROTECTED_PREFIX_LEN + 1];
  zkrc__protected_prefix(a, p);
  CU_ASSERT_EQUAL(p[3 + 14], '4');
  CU_ASSERT_PTR_NOT_NULL(strchr("89ab", p[3 + 19]));
  CU_ASSERT_EQUAL(p[3 + 8], '-');
  CU_ASSERT_EQUAL(p[3 + 36], '-');
  CU_ASSERT(memcmp(a, b, 16) != 0);
}

/* ------------------------------------------------------------ bad input */

/* A contender keeps only its node's sequence number and makes its name
 * again (queue_node.c): the name must be the servers' for every number
 * Java's "%010d" can append, past the counter's wrap too (kazoo #606),
 * where it takes eleven characters; with every recipe's marker; from the
 * node's path (a create's reply) and from its name (a recovery's listing). */
/* The number right after another: the next create's, never across the
 * wrap (INT32_MAX is followed by INT32_MIN, which sorts first). */
static void test_sequence_right_after(void) {
  CU_ASSERT_TRUE(zkrc__sequence_right_after(0, 1));
  CU_ASSERT_TRUE(zkrc__sequence_right_after(41, 42));
  CU_ASSERT_TRUE(zkrc__sequence_right_after(-5, -4));
  CU_ASSERT_TRUE(zkrc__sequence_right_after(-1, 0));
  CU_ASSERT_TRUE(zkrc__sequence_right_after(INT32_MAX - 1, INT32_MAX));
  CU_ASSERT_FALSE(zkrc__sequence_right_after(INT32_MAX, INT32_MIN));
  CU_ASSERT_FALSE(zkrc__sequence_right_after(41, 43));
  CU_ASSERT_FALSE(zkrc__sequence_right_after(42, 42));
  CU_ASSERT_FALSE(zkrc__sequence_right_after(42, 41));
}

static void test_node_names_survive_the_sequence_wrap(void) {
  static const char *java[] = {"0000000000",  "0000000007",  "2147483647",
                               "-2147483648", "-000000005",  "-999999999",
                               "-1000000000", "-1500000000", "-2147483647"};
  static const char *markers[] = {"lock-", "__READ__", "__WRIT__", "lease-",
                                  "latch-"};
  zkrc__contender c = {0};
  c.dir = "/locks/x";
  zkrc__uuid_bytes_random(c.uuid);
  char prefix[ZKRC__PROTECTED_PREFIX_LEN + 1];
  zkrc__protected_prefix(c.uuid, prefix);
  int mismatches = 0;
  for (size_t m = 0; m < G_N_ELEMENTS(markers); m++) {
    c.marker = markers[m];
    for (size_t i = 0; i < G_N_ELEMENTS(java); i++) {
      char *servers =
          g_strdup_printf("%s/%s%s%s", c.dir, prefix, c.marker, java[i]);
      zkrc__q_set_path_locked(&c, servers);
      char *ours = zkrc__q_path(&c);
      if (strcmp(ours, servers) != 0) {
        printf("\n  %s made again as %s", servers, ours);
        mismatches++;
      }
      g_free(ours);
      /* By its name alone, as a recovery finds it in a listing. */
      zkrc__q_set_path_locked(&c, strrchr(servers, '/') + 1);
      ours = zkrc__q_path(&c);
      mismatches += strcmp(ours, servers) != 0;
      g_free(ours);
      g_free(servers);
    }
  }
  CU_ASSERT_EQUAL(mismatches, 0);
}

static void test_session_refuses_bad_arguments(void) {
  zkrc_session *s = (zkrc_session *)0x1;
  CU_ASSERT_EQUAL(zkrc_session_connect(&s, NULL, NULL), ZKRC_EINVAL);
  CU_ASSERT_PTR_NULL(s);
  CU_ASSERT_EQUAL(zkrc_session_connect(&s, "", NULL), ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_session_connect(NULL, "127.0.0.1:1", NULL), ZKRC_EINVAL);
  zkrc_session_options o;
  zkrc_session_options_init(&o);
  o.connect_timeout_ms = -5;
  CU_ASSERT_EQUAL(zkrc_session_connect(&s, "127.0.0.1:1", &o), ZKRC_EINVAL);
  zkrc_session_options_init(&o);
  o.session_timeout_ms = -1;
  CU_ASSERT_EQUAL(zkrc_session_connect(&s, "127.0.0.1:1", &o), ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_session_connect(&s, "no-port-here::::", NULL),
                  ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_session_connect(&s, "h:0", NULL), ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_session_connect(&s, "h:65536", NULL), ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_session_connect(&s, "h:1,:2", NULL), ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_session_connect(&s, "h:1/bad/", NULL), ZKRC_EINVAL);
  /* Options never initialized (no size): refused, not misread. */
  zkrc_session_options raw;
  memset(&raw, 0, sizeof raw);
  raw.session_timeout_ms = 2000;
  CU_ASSERT_EQUAL(zkrc_session_new(&s, "127.0.0.1:1", &raw), ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_session_wait_connected(NULL, 10), ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_session_get_state(NULL), ZKRC_SESSION_CLOSED);
  CU_ASSERT_EQUAL(zkrc_session_add_listener(NULL, NULL, NULL, NULL),
                  ZKRC_EINVAL);
  zkrc_session_close(NULL);
}

/* A session stopped right after it started stops its worker thread again.
 * That used to lose the stop now and then (a quit before the thread's loop
 * had started), and the call never returned; so this repeats it, on a
 * thread, watched with a deadline: sessions that fail to start (a host
 * string the library refuses before anything starts) and sessions closed
 * at once (threads started and stopped). */
typedef struct failing_starts {
  GMutex mu;
  GCond cond;
  int done, refused;
} failing_starts;

static gpointer start_failing_sessions(gpointer data) {
  failing_starts *f = data;
  int refused = 0;
  for (int i = 0; i < 3000; i++) {
    zkrc_session *s = NULL;
    if (zkrc_session_connect(&s, "no-port-here::::", NULL) == ZKRC_EINVAL)
      refused++;
  }
  for (int i = 0; i < 500; i++) {
    zkrc_session *s = NULL;
    if (zkrc_session_new(&s, "127.0.0.1:1", NULL) == ZKRC_OK)
      zkrc_session_close(s);
    else
      refused = -1;
  }
  g_mutex_lock(&f->mu);
  f->refused = refused;
  f->done = 1;
  g_cond_signal(&f->cond);
  g_mutex_unlock(&f->mu);
  return NULL;
}

static void test_failed_session_start_returns(void) {
  static failing_starts f; /* left to the thread if it hangs */
  g_mutex_init(&f.mu);
  g_cond_init(&f.cond);
  GThread *t = g_thread_new("failing-starts", start_failing_sessions, &f);
  int64_t deadline = g_get_monotonic_time() + 60 * G_TIME_SPAN_SECOND;
  g_mutex_lock(&f.mu);
  while (!f.done && g_cond_wait_until(&f.cond, &f.mu, deadline))
    ;
  int done = f.done;
  g_mutex_unlock(&f.mu);
  CU_ASSERT_FATAL(done); /* else a zkrc_session_connect() call hangs */
  g_thread_join(t);
  CU_ASSERT_EQUAL(f.refused, 3000);
}

static void test_unreachable_servers_fail_within_the_timeout(void) {
  /* A loopback port nothing listens on: connect() is refused at once, and
   * the client keeps retrying until our deadline. */
  zkrc_session_options o;
  zkrc_session_options_init(&o);
  o.session_timeout_ms = 2000;
  o.connect_timeout_ms = 700;
  zkrc_session *s = (zkrc_session *)0x1;
  int64_t start = zkt_now_ms();
  ZKT_ASSERT_RC(ZKRC_ECONNECT, zkrc_session_connect(&s, "127.0.0.1:1", &o));
  int64_t took = zkt_now_ms() - start;
  CU_ASSERT_PTR_NULL(s);
  CU_ASSERT(took >= 650 && took < 2000);
}

static void test_recipes_refuse_bad_arguments(void) {
  zkrc_session *s = NULL;
  CU_ASSERT_EQUAL(zkrc_session_new(&s, "127.0.0.1:1", NULL), ZKRC_OK);
  zkrc_lock *lk = (zkrc_lock *)0x1;
  CU_ASSERT_EQUAL(zkrc_lock_new(&lk, NULL, "/a", NULL), ZKRC_EINVAL);
  CU_ASSERT_PTR_NULL(lk);
  CU_ASSERT_EQUAL(zkrc_lock_new(&lk, s, "relative", NULL), ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_lock_new(&lk, s, "/a/", NULL), ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_lock_new(NULL, s, "/a", NULL), ZKRC_EINVAL);
  struct ACL_vector empty_acl = {0, NULL};
  zkrc_lock_options lo;
  zkrc_lock_options_init(&lo);
  lo.acl = &empty_acl;
  CU_ASSERT_EQUAL(zkrc_lock_new(&lk, s, "/a", &lo), ZKRC_EINVAL);
  /* Options never initialized: refused.  Options of an older, smaller
   * struct: only the fields it has are read. */
  zkrc_lock_options raw;
  memset(&raw, 0, sizeof raw);
  CU_ASSERT_EQUAL(zkrc_lock_new(&lk, s, "/a", &raw), ZKRC_EINVAL);
  zkrc_election_options eraw;
  memset(&eraw, 0, sizeof eraw);
  zkrc_election *never = NULL;
  CU_ASSERT_EQUAL(zkrc_election_new(&never, s, "/a", &eraw), ZKRC_EINVAL);
  zkrc_lock_options old;
  memset(&old, 0xff, sizeof old); /* what a newer field would hold: junk */
  old.size = offsetof(zkrc_lock_options, acl);
  old.participant_id = "older";
  CU_ASSERT_EQUAL(zkrc_lock_new(&lk, s, "/a", &old), ZKRC_OK);
  zkrc_lock_free(lk);
  CU_ASSERT_EQUAL(zkrc_lock_new(&lk, s, "/a", NULL), ZKRC_OK);
  CU_ASSERT_EQUAL(zkrc_lock_acquire(lk, -2), ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_lock_acquire(lk, INT_MIN), ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_lock_acquire(NULL, 0), ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_lock_release(lk), ZKRC_ENOTOWNER);
  CU_ASSERT_EQUAL(zkrc_lock_release(NULL), ZKRC_EINVAL);
  int64_t token = 77;
  CU_ASSERT_EQUAL(zkrc_lock_token(lk, &token), ZKRC_ENOTOWNER);
  CU_ASSERT_EQUAL(token, 77);
  CU_ASSERT_EQUAL(zkrc_lock_token(lk, NULL), ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_lock_is_held(lk), 0);
  CU_ASSERT_EQUAL(zkrc_lock_is_held(NULL), 0);
  CU_ASSERT_EQUAL(zkrc_lock_fenced_multi(lk, 0, NULL, NULL, 100),
                  ZKRC_ENOTOWNER);
  CU_ASSERT_EQUAL(zkrc_lock_fenced_multi(lk, -1, NULL, NULL, 100), ZKRC_EINVAL);
  zkrc_lock_free(lk);
  zkrc_lock_free(NULL);

  zkrc_election *e = (zkrc_election *)0x1;
  CU_ASSERT_EQUAL(zkrc_election_new(&e, s, "", NULL), ZKRC_EINVAL);
  CU_ASSERT_PTR_NULL(e);
  CU_ASSERT_EQUAL(zkrc_election_new(&e, s, "/e", NULL), ZKRC_OK);
  CU_ASSERT_EQUAL(zkrc_election_resign(e), ZKRC_ENOTLEADER);
  CU_ASSERT_EQUAL(zkrc_election_leave(e), ZKRC_ESTATE);
  CU_ASSERT_EQUAL(zkrc_election_wait_leader(e, -7), ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_election_wait_leader(e, 10), ZKRC_ESTATE);
  CU_ASSERT_EQUAL(zkrc_election_token(e, &token), ZKRC_ENOTLEADER);
  char *id = (char *)0x1;
  CU_ASSERT_EQUAL(zkrc_election_query_leader(s, "bad", &id, 10), ZKRC_EINVAL);
  CU_ASSERT_PTR_NULL(id);
  zkrc_election_free(e);
  zkrc_election_free(NULL);
  zkrc_session_close(s);
}

static void test_closed_session_refuses_new_recipes(void) {
  zkrc_session *s = NULL;
  CU_ASSERT_EQUAL(zkrc_session_new(&s, "127.0.0.1:1", NULL), ZKRC_OK);
  zkrc_lock *lk = NULL;
  CU_ASSERT_EQUAL(zkrc_lock_new(&lk, s, "/a", NULL), ZKRC_OK);
  zkrc_session_close(s); /* the lock keeps the memory alive */
  ZKT_ASSERT_RC(ZKRC_ECLOSED, zkrc_lock_acquire(lk, 100));
  zkrc_lock_free(lk);
}

static void test_last_zk_error_is_per_thread(void) {
  (void)zkrc__fail_zk(ZKRC_ENOAUTH, ZNOAUTH);
  CU_ASSERT_EQUAL(zkrc_last_zk_error(), ZNOAUTH);
  (void)zkrc__fail(ZKRC_EINVAL);
  CU_ASSERT_EQUAL(zkrc_last_zk_error(), ZOK);
}

static void add_suites(void) {
  ZKT_SUITE(
      "errors",
      {"every error has a name and a message",
       test_every_error_has_name_and_message},
      {"ZooKeeper codes map to ours", test_zookeeper_codes_map_to_ours},
      {"last ZooKeeper error is per thread", test_last_zk_error_is_per_thread});
  ZKT_SUITE(
      "paths", {"valid paths pass", test_valid_paths_pass},
      {"invalid paths are refused with a reason",
       test_invalid_paths_are_refused_with_a_reason},
      {"embedded NUL and length limit", test_embedded_nul_and_length_limit});
  ZKT_SUITE(
      "names",
      {"contender names are recognised", test_contender_names_are_recognised},
      {"other children are ignored", test_other_children_are_ignored},
      {"contenders sort by signed sequence",
       test_contenders_sort_by_signed_sequence},
      {"protected prefix has Curator's form",
       test_protected_prefix_has_curators_form},
      {"random uuid is version 4", test_random_uuid_is_version_4},
      {"node names survive the sequence wrap",
       test_node_names_survive_the_sequence_wrap},
      {"a sequence right after another", test_sequence_right_after});
  ZKT_SUITE(
      "bad input",
      {"session refuses bad arguments", test_session_refuses_bad_arguments},
      {"failed session start returns", test_failed_session_start_returns},
      {"unreachable servers fail within the timeout",
       test_unreachable_servers_fail_within_the_timeout},
      {"recipes refuse bad arguments", test_recipes_refuse_bad_arguments},
      {"closed session refuses new work",
       test_closed_session_refuses_new_recipes});
}

int main(void) { return zkt_run("test_core", add_suites); }
