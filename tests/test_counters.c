/*
 * Counters of the other dialects (zkrecipes/counter.h): the formats
 * without a server, then against a real single-member ensemble: Curator's
 * DistributedAtomicLong (peers/CuratorAtomicPeer.java) and kazoo's plain
 * Counter (peers/kazoo_plain_counter.py) both ways, and Curator's
 * DistributedAtomicInteger on SharedCount's format, their increments
 * interleaved with ours summing exactly, the promotion to a lock against
 * Curator's InterProcessMutex, malformed and oversized nodes and bad input
 * changing nothing, ZKRC_NO_WAIT refused at once while disconnected.
 */
#include "config.h"

#include <inttypes.h>
#include <string.h>

#include <glib.h>

#include "interop_peers.h"
#include "session/zk_call.h"
#include "testutil.h"
#include "toolproc.h"
#include "zkrecipes/counter.h"
#include "zkrecipes/shared.h"

#define KAZOO_PLAIN_COUNTER TOP_SRCDIR "/tests/peers/kazoo_plain_counter.py"
#define ZKR TOP_BUILDDIR "/tools/zkr"

static zkrc_counter_options format_opts(zkrc_counter_format f) {
  zkrc_counter_options o;
  zkrc_counter_options_init(&o);
  o.format = f;
  return o;
}

/* ----------------------------------------------- formats, no server */

/* Each format's bytes as Curator and kazoo write them; empty is 0; a
 * length or text of another kind is ZKRC_EBADNODE; text past 64 bits
 * ZKRC_EOVERFLOW. */
static void test_decode(void) {
  int64_t v = -1;
  static const char long_bytes[8] = {0, 0, 0, 0, 0, 0, 0x01, 0x02};
  static const char minus_one[8] = {'\xff', '\xff', '\xff', '\xff',
                                    '\xff', '\xff', '\xff', '\xff'};
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_counter_decode(ZKRC_COUNTER_ATOMIC_LONG,
                                             long_bytes, 8, &v));
  CU_ASSERT_EQUAL(v, 258);
  ZKT_ASSERT_RC(
      ZKRC_OK, zkrc_counter_decode(ZKRC_COUNTER_ATOMIC_LONG, minus_one, 8, &v));
  CU_ASSERT_EQUAL(v, -1);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_counter_decode(ZKRC_COUNTER_SHARED_COUNT,
                                             minus_one, 4, &v));
  CU_ASSERT_EQUAL(v, -1);
  v = 5;
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_counter_decode(ZKRC_COUNTER_ATOMIC_LONG, NULL, 0, &v));
  CU_ASSERT_EQUAL(v, 0);
  ZKT_ASSERT_RC(ZKRC_EBADNODE, zkrc_counter_decode(ZKRC_COUNTER_ATOMIC_LONG,
                                                   long_bytes, 4, &v));
  ZKT_ASSERT_RC(ZKRC_EBADNODE, zkrc_counter_decode(ZKRC_COUNTER_SHARED_COUNT,
                                                   long_bytes, 8, &v));
  static const struct {
    const char *text;
    int rc;
    int64_t value;
  } texts[] = {
      {"0", ZKRC_OK, 0},
      {"-12", ZKRC_OK, -12},
      {" +7\n", ZKRC_OK, 7},
      {"9223372036854775807", ZKRC_OK, INT64_MAX},
      {"-9223372036854775808", ZKRC_OK, INT64_MIN},
      {"9223372036854775808", ZKRC_EOVERFLOW, 0},
      {"-99999999999999999999", ZKRC_EOVERFLOW, 0},
      {"1.5", ZKRC_EBADNODE, 0},
      {"1e3", ZKRC_EBADNODE, 0},
      {"inf", ZKRC_EBADNODE, 0},
      {"-", ZKRC_EBADNODE, 0},
      {"  ", ZKRC_EBADNODE, 0},
      {"1_000", ZKRC_EBADNODE, 0},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(texts); i++) {
    v = -42;
    int rc = zkrc_counter_decode(ZKRC_COUNTER_KAZOO, texts[i].text,
                                 strlen(texts[i].text), &v);
    if (rc != texts[i].rc)
      fprintf(stderr, "decode \"%s\": %s\n", texts[i].text, zkrc_strerror(rc));
    CU_ASSERT_EQUAL(rc, texts[i].rc);
    CU_ASSERT_EQUAL(v, texts[i].rc == ZKRC_OK ? texts[i].value : -42);
  }
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkrc_counter_decode(ZKRC_COUNTER_KAZOO, "1", 1, NULL));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_counter_decode(0, "1", 1, &v));
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkrc_counter_decode(ZKRC_COUNTER_KAZOO, NULL, 1, &v));
  CU_ASSERT_STRING_EQUAL(zkrc_counter_format_name(ZKRC_COUNTER_ATOMIC_LONG),
                         "atomic-long");
  CU_ASSERT_STRING_EQUAL(zkrc_counter_format_name(ZKRC_COUNTER_KAZOO), "kazoo");
  CU_ASSERT_STRING_EQUAL(zkrc_counter_format_name(ZKRC_COUNTER_SHARED_COUNT),
                         "shared-count");
  CU_ASSERT_STRING_EQUAL(zkrc_counter_format_name(0), "unknown");
}

/* ------------------------------------------------ our own, a server */

/* Every call in each format, and the bytes each leaves in the node. */
static void test_calls_and_bytes(void) {
  char *base = zkt_path("counter-calls");
  zkrc_session *s = zkt_session();
  zhandle_t *zh = zkt_raw();
  static const zkrc_counter_format formats[] = {
      ZKRC_COUNTER_ATOMIC_LONG, ZKRC_COUNTER_KAZOO, ZKRC_COUNTER_SHARED_COUNT};
  static const char *const bytes_41[] = {"\0\0\0\0\0\0\0\x29", "41",
                                         "\0\0\0\x29"};
  static const size_t len_41[] = {8, 2, 4};
  for (size_t f = 0; f < G_N_ELEMENTS(formats); f++) {
    zkrc_counter_options o = format_opts(formats[f]);
    char *path =
        g_strdup_printf("%s/%s/n", base, zkrc_counter_format_name(formats[f]));
    zkrc_counter_result r;
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_counter_get(s, path, &o, &r, 5000));
    CU_ASSERT_TRUE(r.succeeded);
    CU_ASSERT_EQUAL(r.pre_value, 0);
    CU_ASSERT_EQUAL(r.version, -1);
    CU_ASSERT_FALSE(zkt_exists(zh, path)); /* a get creates nothing */
    int created = -1;
    ZKT_ASSERT_RC(ZKRC_OK,
                  zkrc_counter_initialize(s, path, 40, &o, &created, 5000));
    CU_ASSERT_EQUAL(created, 1);
    ZKT_ASSERT_RC(ZKRC_OK,
                  zkrc_counter_initialize(s, path, 7, &o, &created, 5000));
    CU_ASSERT_EQUAL(created, 0);
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_counter_add(s, path, 1, &o, &r, 5000));
    CU_ASSERT_TRUE(r.succeeded);
    CU_ASSERT_EQUAL(r.pre_value, 40);
    CU_ASSERT_EQUAL(r.post_value, 41);
    CU_ASSERT_EQUAL(r.version, 1);
    CU_ASSERT_EQUAL(r.optimistic_tries, 1);
    CU_ASSERT_EQUAL(r.promoted_tries, 0);
    CU_ASSERT_TRUE(zkt_data_is(zh, path, bytes_41[f], len_41[f]));
    ZKT_ASSERT_RC(ZKRC_EBADVERSION,
                  zkrc_counter_compare_and_set(s, path, 40, 0, &o, &r, 5000));
    CU_ASSERT_FALSE(r.succeeded);
    CU_ASSERT_EQUAL(r.pre_value, 41);
    CU_ASSERT_EQUAL(r.post_value, 41);
    ZKT_ASSERT_RC(ZKRC_OK,
                  zkrc_counter_compare_and_set(s, path, 41, -3, &o, &r, 5000));
    CU_ASSERT_TRUE(r.succeeded);
    CU_ASSERT_EQUAL(r.post_value, -3);
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_counter_try_set(s, path, 100, &o, &r, 5000));
    CU_ASSERT_EQUAL(r.pre_value, -3);
    CU_ASSERT_EQUAL(r.post_value, 100);
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_counter_add(s, path, -59, &o, &r, 5000));
    CU_ASSERT_TRUE(zkt_data_is(zh, path, bytes_41[f], len_41[f]));
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_counter_force_set(s, path, 9, &o, 5000));
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_counter_get(s, path, &o, &r, ZKRC_NO_WAIT));
    CU_ASSERT_EQUAL(r.post_value, 9);
    /* forceSet of a missing node creates it, parents as containers */
    char *fresh = g_strdup_printf("%s/x/y", path);
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_counter_force_set(s, fresh, 41, &o, 5000));
    CU_ASSERT_TRUE(zkt_data_is(zh, fresh, bytes_41[f], len_41[f]));
    /* compare-and-set of a missing node never succeeds (Curator's) */
    char *none = g_strdup_printf("%s/none", path);
    ZKT_ASSERT_RC(ZKRC_EBADVERSION,
                  zkrc_counter_compare_and_set(s, none, 0, 1, &o, &r, 5000));
    CU_ASSERT_FALSE(zkt_exists(zh, none));
    /* an add creates a missing node */
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_counter_add(s, none, 5, &o, &r, 5000));
    CU_ASSERT_EQUAL(r.version, 0);
    CU_ASSERT_EQUAL(r.post_value, 5);
    g_free(none);
    g_free(fresh);
    g_free(path);
  }
  zookeeper_close(zh);
  zkrc_session_close(s);
  g_free(base);
}

typedef struct adder {
  zkrc_session *s;
  const char *path;
  zkrc_counter_options o;
  int n, ok, promoted;
} adder;

static gpointer add_n(gpointer data) {
  adder *a = data;
  for (int i = 0; i < a->n; i++) {
    zkrc_counter_result r;
    a->ok += zkrc_counter_add(a->s, a->path, 1, &a->o, &r, 30000) == ZKRC_OK;
    a->promoted += r.promoted_tries > 0;
  }
  return NULL;
}

/* ------------------------------------------------------------ peers */

/* A CuratorAtomicPeer: (mode, path, args..., NULL); the servers' address
 * goes after the mode. */
static peer *atomic_peer(const char *mode, const char *path, const char *a1,
                         const char *a2) {
  const char *argv[] = {JAVA_PROG,
                        "-XX:+UseSerialGC",
                        "-XX:TieredStopAtLevel=1",
                        "-cp",
                        CURATOR_PEER_CLASSPATH,
                        "CuratorAtomicPeer",
                        mode,
                        zkt_hosts(),
                        path,
                        a1,
                        a2,
                        NULL};
  return peer_start("curator-atomic", (char **)argv);
}

/* Curator's "add": started, ready, then told to go. */
static peer *atomic_adder(const char *path, const char *n, const char *lock) {
  peer *p = atomic_peer("add", path, n, lock);
  char *ready = p ? peer_expect(p, "ready", 90000) : NULL;
  CU_ASSERT_PTR_NOT_NULL(ready);
  g_free(ready);
  return p;
}

/* The value Curator printed at its end ("value V"), INT64_MIN on failure;
 * *promoted (if not NULL) its "promoted P". */
static int64_t atomic_value(peer *p, int64_t *promoted) {
  if (promoted) {
    char *line = peer_expect(p, "promoted", 90000);
    *promoted = line ? g_ascii_strtoll(line, NULL, 10) : -1;
    g_free(line);
  }
  char *value = peer_expect(p, "value", 90000);
  int64_t v = value ? g_ascii_strtoll(value, NULL, 10) : INT64_MIN;
  g_free(value);
  CU_ASSERT_EQUAL(peer_finish(p, 30000), 0);
  return v;
}

/* Run kazoo_plain_counter.py; its stdout's first line (g_free it), NULL
 * when it failed. */
static char *kazoo_plain(const char *path, const char *mode, const char *n) {
  const char *argv[] = {
      DEBIAN_PYTHON3, KAZOO_PLAIN_COUNTER, zkt_hosts(), path, mode, n, NULL};
  peer *p = peer_start("kazoo-counter", (char **)argv);
  char *line = p ? peer_next(p, 90000) : NULL;
  int status = peer_finish(p, 30000);
  CU_ASSERT_EQUAL(status, 0);
  if (status != 0) {
    g_free(line);
    return NULL;
  }
  return line;
}

static int64_t kazoo_value(const char *path, const char *mode, const char *n) {
  char *line = kazoo_plain(path, mode, n);
  int64_t v = line ? g_ascii_strtoll(line, NULL, 10) : INT64_MIN;
  g_free(line);
  return v;
}

/* Curator's DistributedAtomicLong and ours on one node: each reads what
 * the other wrote (forceSet, compareAndSet), and 30 increments by Curator
 * interleaved with 30 of ours sum to exactly 60. */
static void test_curator_atomic_long_both_ways(void) {
  char *path = zkt_path("counter-curator");
  zkrc_session *s = zkt_session();
  zkrc_counter_options o = format_opts(ZKRC_COUNTER_ATOMIC_LONG);
  zkrc_counter_result r;
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_counter_force_set(s, path, 5000000000LL, &o, 5000));
  CU_ASSERT_EQUAL(atomic_value(atomic_peer("read", path, NULL, NULL), NULL),
                  5000000000LL);
  CU_ASSERT_EQUAL(
      atomic_value(atomic_peer("set", path, "-7000000000", NULL), NULL),
      -7000000000LL);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_counter_get(s, path, &o, &r, 5000));
  CU_ASSERT_EQUAL(r.post_value, -7000000000LL);
  peer *p = atomic_peer("cas", path, "-7000000000", "0");
  char *cas = p ? peer_expect(p, "cas", 90000) : NULL;
  CU_ASSERT_STRING_EQUAL(cas ? cas : "", "true -7000000000 0");
  g_free(cas);
  CU_ASSERT_EQUAL(peer_finish(p, 30000), 0);
  adder a = {.s = s, .path = path, .o = o, .n = 30};
  peer *curator = atomic_adder(path, "30", NULL);
  GThread *t = g_thread_new("adder", add_n, &a);
  peer_send(curator, "go");
  int64_t curator_saw = atomic_value(curator, NULL);
  g_thread_join(t);
  CU_ASSERT_EQUAL(a.ok, 30);
  CU_ASSERT(curator_saw >= 30 && curator_saw <= 60);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_counter_get(s, path, &o, &r, 5000));
  CU_ASSERT_EQUAL(r.post_value, 60);
  zkrc_session_close(s);
  g_free(path);
}

/* Curator's DistributedAtomicInteger (peers/CuratorAtomicPeer.java's
 * int- modes) and our ZKRC_COUNTER_SHARED_COUNT on one node: the same 4
 * big-endian bytes; an empty node reads 0 to both; each reads what the
 * other wrote (forceSet, compareAndSet), and 30 increments by Curator
 * interleaved with 30 of ours sum to exactly 60. */
static void test_curator_atomic_integer_both_ways(void) {
  char *path = zkt_path("counter-curator-int");
  zkrc_session *s = zkt_session();
  zhandle_t *zh = zkt_raw();
  zkrc_counter_options o = format_opts(ZKRC_COUNTER_SHARED_COUNT);
  zkrc_counter_result r;
  CU_ASSERT_EQUAL_FATAL(
      zoo_create(zh, path, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
  CU_ASSERT_TRUE(zkt_data_is(zh, path, "", 0));
  CU_ASSERT_EQUAL(atomic_value(atomic_peer("int-read", path, NULL, NULL), NULL),
                  0);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_counter_get(s, path, &o, &r, 5000));
  CU_ASSERT_EQUAL(r.post_value, 0);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_counter_force_set(s, path, 2000000000, &o, 5000));
  CU_ASSERT_EQUAL(atomic_value(atomic_peer("int-read", path, NULL, NULL), NULL),
                  2000000000);
  CU_ASSERT_EQUAL(
      atomic_value(atomic_peer("int-set", path, "-2000000000", NULL), NULL),
      -2000000000);
  CU_ASSERT_TRUE(zkt_data_is(zh, path, "\x88\xca\x6c\x00", 4));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_counter_get(s, path, &o, &r, 5000));
  CU_ASSERT_EQUAL(r.post_value, -2000000000);
  peer *p = atomic_peer("int-cas", path, "-2000000000", "0");
  char *cas = p ? peer_expect(p, "cas", 90000) : NULL;
  CU_ASSERT_STRING_EQUAL(cas ? cas : "", "true -2000000000 0");
  g_free(cas);
  CU_ASSERT_EQUAL(peer_finish(p, 30000), 0);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_counter_get(s, path, &o, &r, 5000));
  CU_ASSERT_EQUAL(r.post_value, 0);
  adder a = {.s = s, .path = path, .o = o, .n = 30};
  p = atomic_peer("int-add", path, "30", NULL);
  char *ready = p ? peer_expect(p, "ready", 90000) : NULL;
  CU_ASSERT_PTR_NOT_NULL(ready);
  g_free(ready);
  GThread *t = g_thread_new("adder", add_n, &a);
  peer_send(p, "go");
  int64_t curator_saw = atomic_value(p, NULL);
  g_thread_join(t);
  CU_ASSERT_EQUAL(a.ok, 30);
  CU_ASSERT(curator_saw >= 30 && curator_saw <= 60);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_counter_get(s, path, &o, &r, 5000));
  CU_ASSERT_EQUAL(r.post_value, 60);
  CU_ASSERT_TRUE(zkt_data_is(zh, path, "\0\0\0\x3c", 4));
  zookeeper_close(zh);
  zkrc_session_close(s);
  g_free(path);
}

/* kazoo's plain Counter and ours on one node: the same text ("42"), each
 * reads what the other wrote, kazoo's empty node reads 0, and 30 of
 * kazoo's increments interleaved with 30 of ours sum to 60. */
static void test_kazoo_counter_both_ways(void) {
  char *path = zkt_path("counter-kazoo");
  zkrc_session *s = zkt_session();
  zhandle_t *zh = zkt_raw();
  zkrc_counter_options o = format_opts(ZKRC_COUNTER_KAZOO);
  zkrc_counter_result r;
  /* kazoo's read makes the node, empty (ensure_path): we read 0 */
  CU_ASSERT_EQUAL(kazoo_value(path, "read", NULL), 0);
  CU_ASSERT_TRUE(zkt_data_is(zh, path, "", 0));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_counter_get(s, path, &o, &r, 5000));
  CU_ASSERT_EQUAL(r.post_value, 0);
  CU_ASSERT_EQUAL(r.version, 0);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_counter_add(s, path, 42, &o, &r, 5000));
  char *raw = kazoo_plain(path, "raw", NULL);
  CU_ASSERT_STRING_EQUAL(raw ? raw : "", "42");
  g_free(raw);
  CU_ASSERT_EQUAL(kazoo_value(path, "set", "-9000000000"), -9000000000LL);
  CU_ASSERT_TRUE(zkt_data_is(zh, path, "-9000000000", 11));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_counter_get(s, path, &o, &r, 5000));
  CU_ASSERT_EQUAL(r.post_value, -9000000000LL);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_counter_try_set(s, path, 0, &o, &r, 5000));
  adder a = {.s = s, .path = path, .o = o, .n = 30};
  GThread *t = g_thread_new("adder", add_n, &a);
  int64_t kazoo_saw = kazoo_value(path, "add", "30");
  g_thread_join(t);
  CU_ASSERT_EQUAL(a.ok, 30);
  CU_ASSERT(kazoo_saw >= 30 && kazoo_saw <= 60);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_counter_get(s, path, &o, &r, 5000));
  CU_ASSERT_EQUAL(r.post_value, 60);
  CU_ASSERT_EQUAL(kazoo_value(path, "read", NULL), 60);
  zookeeper_close(zh);
  zkrc_session_close(s);
  g_free(path);
}

/* The promotion: our optimistic try is made to fail (the seam answers its
 * setData with ZBADVERSION), so the add goes for the promoted lock, which
 * Curator's InterProcessMutex holds: not had within its timeout, the add
 * is refused (EBADVERSION, nothing written, no promoted try).  Curator
 * releases: the same add takes the lock and succeeds under it.  Then
 * contention: Curator's DistributedAtomicLong promoted to the same lock
 * and two of our sessions with one optimistic try each add 20 each: 60,
 * exactly. */
static void test_promoted_to_lock(void) {
  char *path = zkt_path("counter-promoted");
  char *lock = g_strdup_printf("%s-lock", path);
  zkrc_session *s = zkt_session();
  zhandle_t *zh = zkt_raw();
  zkrc_counter_options o = format_opts(ZKRC_COUNTER_ATOMIC_LONG);
  o.max_attempts = 1;
  o.promoted_lock_path = lock;
  o.promoted_lock_timeout_ms = 500;
  zkrc_counter_result r;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_counter_force_set(s, path, 10, &o, 5000));
  peer *holder = atomic_peer("hold", lock, NULL, NULL);
  char *held = holder ? peer_expect(holder, "held", 90000) : NULL;
  CU_ASSERT_PTR_NOT_NULL_FATAL(held);
  g_free(held);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc__zk_fail_nth(ZKRC__ZK_SET, 1, ZBADVERSION));
  ZKT_ASSERT_RC(ZKRC_EBADVERSION, zkrc_counter_add(s, path, 1, &o, &r, 10000));
  CU_ASSERT_FALSE(r.succeeded);
  CU_ASSERT_EQUAL(r.optimistic_tries, 1);
  CU_ASSERT_EQUAL(r.promoted_tries, 0);
  CU_ASSERT_EQUAL(r.pre_value, 10);
  CU_ASSERT_EQUAL(r.post_value, 10);
  CU_ASSERT_TRUE(zkt_data_is(zh, path, "\0\0\0\0\0\0\0\x0a", 8));
  CU_ASSERT_EQUAL(zkrc__zk_failed_count(ZKRC__ZK_SET), 1);
  /* Curator lets go: the promoted try runs under our lock */
  peer_send(holder, "release");
  CU_ASSERT_EQUAL(peer_finish(holder, 30000), 0);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc__zk_fail_nth(ZKRC__ZK_SET, 1, ZBADVERSION));
  o.promoted_lock_timeout_ms = 20000;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_counter_add(s, path, 1, &o, &r, 30000));
  CU_ASSERT_TRUE(r.succeeded);
  CU_ASSERT_EQUAL(r.optimistic_tries, 1);
  CU_ASSERT_EQUAL(r.promoted_tries, 1);
  CU_ASSERT_EQUAL(r.post_value, 11);
  CU_ASSERT_EQUAL(zkrc__zk_failed_count(ZKRC__ZK_SET), 2);
  /* Contention, from 0 */
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_counter_force_set(s, path, 0, &o, 5000));
  o.promoted_max_attempts = 20;
  adder a[2];
  GThread *t[2];
  peer *curator = atomic_adder(path, "20", lock);
  for (int i = 0; i < 2; i++) {
    a[i] = (adder){.s = zkt_session(), .path = path, .o = o, .n = 20};
    t[i] = g_thread_new("adder", add_n, &a[i]);
  }
  peer_send(curator, "go");
  int64_t promoted = -1;
  int64_t curator_saw = atomic_value(curator, &promoted);
  for (int i = 0; i < 2; i++) {
    g_thread_join(t[i]);
    CU_ASSERT_EQUAL(a[i].ok, 20);
    zkrc_session_close(a[i].s);
  }
  fprintf(stderr, "promoted adds: ours %d and %d, Curator's %" PRId64 "\n",
          a[0].promoted, a[1].promoted, promoted);
  CU_ASSERT(curator_saw >= 20 && curator_saw <= 60);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_counter_get(s, path, &o, &r, 5000));
  CU_ASSERT_EQUAL(r.post_value, 60);
  /* every lock node gone (ours are deleted in the background) */
  CU_ASSERT_TRUE(zkt_wait_children_or_gone(zh, lock, 0, 10000));
  zookeeper_close(zh);
  zkrc_session_close(s);
  g_free(lock);
  g_free(path);
}

/* A node not in the format is refused and left as it is: wrong length,
 * a kazoo float counter, text past 64 bits; an overflowing add or a value
 * past SharedCount's 32 bits writes nothing. */
static void test_malformed_changes_nothing(void) {
  char *path = zkt_path("counter-bad");
  zkrc_session *s = zkt_session();
  zhandle_t *zh = zkt_raw();
  zkrc_counter_options along = format_opts(ZKRC_COUNTER_ATOMIC_LONG);
  zkrc_counter_options kazoo = format_opts(ZKRC_COUNTER_KAZOO);
  zkrc_counter_options shared = format_opts(ZKRC_COUNTER_SHARED_COUNT);
  zkrc_counter_result r;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_counter_force_set(s, path, 0, &along, 5000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_shared_value_set(s, path, "abc", 3, 5000));
  ZKT_ASSERT_RC(ZKRC_EBADNODE, zkrc_counter_add(s, path, 1, &along, &r, 5000));
  ZKT_ASSERT_RC(ZKRC_EBADNODE,
                zkrc_counter_try_set(s, path, 1, &shared, &r, 5000));
  ZKT_ASSERT_RC(ZKRC_EBADNODE, zkrc_counter_add(s, path, 1, &kazoo, &r, 5000));
  ZKT_ASSERT_RC(ZKRC_EBADNODE, zkrc_counter_get(s, path, &along, &r, 5000));
  CU_ASSERT_TRUE(zkt_data_is(zh, path, "abc", 3));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_shared_value_set(s, path, "1.5", 3, 5000));
  ZKT_ASSERT_RC(ZKRC_EBADNODE, zkrc_counter_add(s, path, 1, &kazoo, &r, 5000));
  CU_ASSERT_TRUE(zkt_data_is(zh, path, "1.5", 3));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_shared_value_set(s, path, "99999999999999999999",
                                               20, 5000));
  ZKT_ASSERT_RC(ZKRC_EOVERFLOW, zkrc_counter_add(s, path, 1, &kazoo, &r, 5000));
  CU_ASSERT_TRUE(zkt_data_is(zh, path, "99999999999999999999", 20));
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_counter_force_set(s, path, INT64_MAX, &along, 5000));
  ZKT_ASSERT_RC(ZKRC_EOVERFLOW, zkrc_counter_add(s, path, 1, &along, &r, 5000));
  CU_ASSERT_FALSE(r.succeeded);
  CU_ASSERT_EQUAL(r.pre_value, INT64_MAX);
  CU_ASSERT_TRUE(zkt_data_is(zh, path, "\x7f\xff\xff\xff\xff\xff\xff\xff", 8));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_counter_force_set(s, path, 3, &shared, 5000));
  ZKT_ASSERT_RC(ZKRC_EOVERFLOW, zkrc_counter_try_set(s, path, INT32_MAX + 1LL,
                                                     &shared, &r, 5000));
  ZKT_ASSERT_RC(ZKRC_EOVERFLOW, zkrc_counter_force_set(s, path, INT32_MIN - 1LL,
                                                       &shared, 5000));
  CU_ASSERT_TRUE(zkt_data_is(zh, path, "\0\0\0\x03", 4));
  zookeeper_close(zh);
  zkrc_session_close(s);
  g_free(path);
}

/* Sizes (counter.h): the largest write a counter makes passes the size
 * rule, so no call is ZKRC_ETOOBIG: kazoo's longest text (INT64_MIN, 20
 * bytes) on a path of ZKRC_PATH_MAX bytes is written, and one past it is
 * ZKRC_EOVERFLOW.  A node holding more than its format's bytes, up to the
 * most data a node may hold, is ZKRC_EBADNODE in every format and every
 * call, and is left as it is; kazoo's text over 4096 bytes too, even all
 * digits. */
static void test_sizes(void) {
  char *base = zkt_path("counter-size");
  GString *long_path = g_string_new(base);
  g_string_append(long_path, "/");
  while (long_path->len < ZKRC_PATH_MAX)
    g_string_append_c(long_path, 'a');
  zkrc_session *s = zkt_session();
  zhandle_t *zh = zkt_raw();
  zkrc_counter_options kazoo = format_opts(ZKRC_COUNTER_KAZOO);
  zkrc_counter_result r;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_path_validate(long_path->str, NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_counter_add(s, long_path->str, INT64_MIN + 1,
                                          &kazoo, &r, 5000));
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_counter_add(s, long_path->str, -1, &kazoo, &r, 5000));
  CU_ASSERT_EQUAL(r.post_value, INT64_MIN);
  CU_ASSERT_TRUE(zkt_data_is(zh, long_path->str, "-9223372036854775808", 20));
  ZKT_ASSERT_RC(ZKRC_EOVERFLOW,
                zkrc_counter_add(s, long_path->str, -1, &kazoo, &r, 5000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_counter_force_set(s, long_path->str, INT64_MIN,
                                                &kazoo, 5000));
  static const zkrc_counter_format formats[] = {
      ZKRC_COUNTER_ATOMIC_LONG, ZKRC_COUNTER_KAZOO, ZKRC_COUNTER_SHARED_COUNT};
  char *path = g_strdup_printf("%s/big", base);
  char *big = zkt_pattern(ZKT_DATA_MAX);
  char digits[4097];
  memset(digits, '1', sizeof digits);
  static const struct {
    const char *what;
    size_t len;
  } nodes[] = {{"the most data a node holds", ZKT_DATA_MAX},
               {"kazoo's text over 4096 bytes", sizeof digits}};
  for (size_t n = 0; n < G_N_ELEMENTS(nodes); n++) {
    const char *data = n == 0 ? big : digits;
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_counter_force_set(s, path, 1, &kazoo, 5000));
    ZKT_ASSERT_RC(ZKRC_OK,
                  zkrc_shared_value_set(s, path, data, nodes[n].len, 5000));
    for (size_t f = 0; f < G_N_ELEMENTS(formats); f++) {
      zkrc_counter_options o = format_opts(formats[f]);
      if (n == 1 && formats[f] != ZKRC_COUNTER_KAZOO)
        continue; /* 4097 bytes are no 8 or 4 either: shown above */
      ZKT_ASSERT_RC(ZKRC_EBADNODE, zkrc_counter_get(s, path, &o, &r, 5000));
      ZKT_ASSERT_RC(ZKRC_EBADNODE, zkrc_counter_add(s, path, 1, &o, &r, 5000));
      ZKT_ASSERT_RC(ZKRC_EBADNODE,
                    zkrc_counter_try_set(s, path, 2, &o, &r, 5000));
      ZKT_ASSERT_RC(ZKRC_EBADNODE,
                    zkrc_counter_compare_and_set(s, path, 0, 2, &o, &r, 5000));
    }
    int32_t sum = 0;
    if (n == 0) /* SharedCount's own add: the same engine */
      ZKT_ASSERT_RC(ZKRC_EBADNODE,
                    zkrc_shared_count_add(s, path, 1, 3, &sum, 5000));
    if (!zkt_data_is(zh, path, data, nodes[n].len))
      CU_FAIL(nodes[n].what); /* changed */
  }
  g_free(big);
  g_free(path);
  zookeeper_close(zh);
  zkrc_session_close(s);
  g_string_free(long_path, TRUE);
  g_free(base);
}

/* The session's events: how many suspensions and reconnections. */
typedef struct connection_log {
  GMutex mu;
  GCond cond;
  int suspended, reconnected;
} connection_log;

static void log_connection(zkrc_session *s, const zkrc_session_event *ev,
                           void *arg) {
  (void)s;
  connection_log *l = arg;
  g_mutex_lock(&l->mu);
  l->suspended += ev->type == ZKRC_SESSION_EVENT_SUSPENDED;
  l->reconnected += ev->type == ZKRC_SESSION_EVENT_RECONNECTED ||
                    ev->type == ZKRC_SESSION_EVENT_CONNECTED;
  g_cond_broadcast(&l->cond);
  g_mutex_unlock(&l->mu);
}

/* Wait until *@p count (a field of @p l) is at least 1, at most
 * @p timeout_ms: non-zero when it is. */
static int connection_wait(connection_log *l, const int *count,
                           int timeout_ms) {
  int64_t end = g_get_monotonic_time() + (int64_t)timeout_ms * 1000;
  g_mutex_lock(&l->mu);
  while (*count < 1 && g_cond_wait_until(&l->cond, &l->mu, end))
    ;
  int reached = *count >= 1;
  g_mutex_unlock(&l->mu);
  return reached;
}

/* ZKRC_NO_WAIT on a session whose connection is down (the member stopped:
 * the session told SUSPENDED) is ZKRC_ECONNLOSS at once, from every call
 * and both adds (zkrc_shared_count_add() too, the same engine), and
 * writes nothing: once the member is back, the counter holds what it held
 * and the missing node was not made. */
static void test_no_wait_disconnected(void) {
  zkrc_ensemble *e = zkt_ensemble();
  char *path = zkt_path("counter-nowait");
  char *none = g_strdup_printf("%s-none", path);
  zkrc_session *s = zkt_session();
  zkrc_counter_options o = format_opts(ZKRC_COUNTER_SHARED_COUNT);
  zkrc_counter_result r;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_counter_force_set(s, path, 7, &o, 5000));
  connection_log l;
  memset(&l, 0, sizeof l);
  g_mutex_init(&l.mu);
  g_cond_init(&l.cond);
  unsigned long id = 0;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_add_listener(s, log_connection, &l, &id));
  CU_ASSERT_EQUAL_FATAL(zkrc_ensemble_stop_member(e, 0), 0);
  CU_ASSERT_FATAL(connection_wait(&l, &l.suspended, 30000));
  int32_t sum = 0;
  int created = -1;
  int64_t began = zkt_now_ms();
  ZKT_ASSERT_RC(ZKRC_ECONNLOSS,
                zkrc_counter_get(s, path, &o, &r, ZKRC_NO_WAIT));
  ZKT_ASSERT_RC(ZKRC_ECONNLOSS,
                zkrc_counter_add(s, path, 1, &o, &r, ZKRC_NO_WAIT));
  CU_ASSERT_FALSE(r.succeeded);
  ZKT_ASSERT_RC(ZKRC_ECONNLOSS,
                zkrc_counter_try_set(s, path, 9, &o, &r, ZKRC_NO_WAIT));
  ZKT_ASSERT_RC(ZKRC_ECONNLOSS, zkrc_counter_compare_and_set(s, path, 7, 9, &o,
                                                             &r, ZKRC_NO_WAIT));
  ZKT_ASSERT_RC(ZKRC_ECONNLOSS,
                zkrc_counter_force_set(s, path, 9, &o, ZKRC_NO_WAIT));
  ZKT_ASSERT_RC(ZKRC_ECONNLOSS, zkrc_counter_initialize(
                                    s, none, 9, &o, &created, ZKRC_NO_WAIT));
  CU_ASSERT_EQUAL(created, 0);
  ZKT_ASSERT_RC(ZKRC_ECONNLOSS,
                zkrc_shared_count_add(s, path, 1, 3, &sum, ZKRC_NO_WAIT));
  /* At once: the seven together well within one session timeout, which a
   * single call waiting for the connection would take. */
  int64_t took = zkt_now_ms() - began;
  printf(" (refused in %" PRId64 " ms) ", took);
  CU_ASSERT(took < ZKT_SESSION_TIMEOUT_MS);
  CU_ASSERT_EQUAL_FATAL(zkrc_ensemble_restart(e, 0), 0);
  CU_ASSERT_EQUAL_FATAL(zkrc_ensemble_wait_serving(e, 0, 60000), 0);
  CU_ASSERT(connection_wait(&l, &l.reconnected, 30000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_remove_listener(s, id));
  zhandle_t *zh = zkt_raw();
  CU_ASSERT_TRUE(zkt_data_is(zh, path, "\0\0\0\x07", 4));
  CU_ASSERT_FALSE(zkt_exists(zh, none));
  zookeeper_close(zh);
  zkrc_session_close(s);
  g_cond_clear(&l.cond);
  g_mutex_clear(&l.mu);
  g_free(none);
  g_free(path);
}

/* Bad arguments: ZKRC_EINVAL with nothing sent. */
static void test_bad_input(void) {
  char *path = zkt_path("counter-input");
  zkrc_session *s = zkt_session();
  zkrc_counter_options o;
  zkrc_counter_options_init(&o);
  CU_ASSERT_EQUAL(o.format, ZKRC_COUNTER_ATOMIC_LONG);
  CU_ASSERT_EQUAL(o.max_attempts, 10);
  CU_ASSERT_EQUAL(o.promoted_lock_timeout_ms, ZKRC_WAIT_FOREVER);
  CU_ASSERT_EQUAL(o.promoted_max_attempts, 1);
  zkrc_counter_result r;
  int created;
  uint64_t sent = zkt_requests_but_renewals(s);
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_counter_get(NULL, path, NULL, &r, 5000));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_counter_get(s, NULL, NULL, &r, 5000));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_counter_get(s, "/", NULL, &r, 5000));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_counter_get(s, "rel", NULL, &r, 5000));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_counter_get(s, path, NULL, NULL, 5000));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_counter_get(s, path, NULL, &r, -2));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_counter_add(s, path, 1, NULL, NULL, 5000));
  zkrc_counter_options bad = o;
  bad.size = 0; /* not initialized */
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_counter_add(s, path, 1, &bad, &r, 5000));
  bad = o;
  bad.format = 7;
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_counter_add(s, path, 1, &bad, &r, 5000));
  bad = o;
  bad.max_attempts = 0;
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_counter_add(s, path, 1, &bad, &r, 5000));
  bad = o;
  bad.promoted_max_attempts = 0;
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_counter_try_set(s, path, 1, &bad, &r, 5000));
  bad = o;
  bad.promoted_lock_path = "no/slash";
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_counter_add(s, path, 1, &bad, &r, 5000));
  bad = o;
  bad.promoted_lock_timeout_ms = -3;
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_counter_add(s, path, 1, &bad, &r, 5000));
  bad = o;
  bad.backoff_ms = -1;
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_counter_add(s, path, 1, &bad, &r, 5000));
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkrc_counter_compare_and_set(s, path, 0, 1, &o, NULL, 5000));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_counter_force_set(s, "", 1, &o, 5000));
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkrc_counter_initialize(s, path, 1, &o, &created, -5));
  CU_ASSERT_EQUAL(zkt_requests_but_renewals(s), sent);
  zhandle_t *zh = zkt_raw();
  CU_ASSERT_FALSE(zkt_exists(zh, path));
  zookeeper_close(zh);
  zkrc_session_close(s);
  g_free(path);
}

/* ------------------------------------------------------- zkr counter */

/* Run `zkr counter ARGS...` (the servers' address first): its exit status;
 * *out (if not NULL) its stdout (g_free it), else a message on failure. */
static int zkr_counter(char **out, const char *a1, const char *a2,
                       const char *a3, const char *a4, const char *a5) {
  const char *argv[] = {ZKR, "counter", "--servers", zkt_hosts(), a1,
                        a2,  a3,        a4,          a5,          NULL};
  proc *p = proc_start(argv);
  int status = proc_wait(p, 30000);
  if (out)
    *out = g_strdup(p->out->str);
  if (status != 0)
    fprintf(stderr, "zkr counter %s %s: %d: %s", a1, a2 ? a2 : "", status,
            p->err->str);
  proc_free(p);
  return status;
}

/* zkr counter get|add in each format, on nodes our library and the
 * peers' formats share: Curator's SharedCount by default; text output and
 * --json; a node of another format refused (65) and left alone; bad usage
 * (2) before anything is sent. */
static void test_zkr_counter(void) {
  char *path = zkt_path("counter-zkr");
  char *text = g_strdup_printf("%s-kazoo", path);
  zkrc_session *s = zkt_session();
  zhandle_t *zh = zkt_raw();
  char *out = NULL;
  CU_ASSERT_EQUAL(zkr_counter(&out, "add", path, NULL, NULL, NULL), 0);
  CU_ASSERT_STRING_EQUAL(out, "1\n");
  g_free(out);
  CU_ASSERT_TRUE(zkt_data_is(zh, path, "\0\0\0\x01", 4));
  CU_ASSERT_EQUAL(zkr_counter(&out, "add", path, "41", NULL, NULL), 0);
  CU_ASSERT_STRING_EQUAL(out, "42\n");
  g_free(out);
  int32_t count = 0;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_shared_count_get(s, path, 0, &count, NULL, 5000));
  CU_ASSERT_EQUAL(count, 42);
  CU_ASSERT_EQUAL(zkr_counter(&out, "add", path, "--", "-2", NULL), 0);
  CU_ASSERT_STRING_EQUAL(out, "40\n");
  g_free(out);
  CU_ASSERT_EQUAL(zkr_counter(&out, "get", path, "--json", NULL, NULL), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"format\":\"curator\""));
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"value\":40"));
  g_free(out);
  /* kazoo's text, written by our library, read and added to by zkr */
  zkrc_counter_options o = format_opts(ZKRC_COUNTER_KAZOO);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_counter_force_set(s, text, -5, &o, 5000));
  CU_ASSERT_EQUAL(zkr_counter(&out, "--format", "kazoo", "add", text, "10"), 0);
  CU_ASSERT_STRING_EQUAL(out, "5\n");
  g_free(out);
  CU_ASSERT_TRUE(zkt_data_is(zh, text, "5", 1));
  CU_ASSERT_EQUAL(
      zkr_counter(&out, "--format=atomic-long", "--json", "add", text, NULL),
      65); /* one byte of text is no 8-byte long */
  CU_ASSERT_STRING_EQUAL(out, "");
  g_free(out);
  CU_ASSERT_TRUE(zkt_data_is(zh, text, "5", 1));
  CU_ASSERT_EQUAL(zkr_counter(NULL, "frob", path, NULL, NULL, NULL), 2);
  CU_ASSERT_EQUAL(zkr_counter(NULL, "add", NULL, NULL, NULL, NULL), 2);
  CU_ASSERT_EQUAL(zkr_counter(NULL, "add", path, "x1", NULL, NULL), 2);
  CU_ASSERT_EQUAL(zkr_counter(NULL, "get", path, "1", NULL, NULL), 2);
  CU_ASSERT_EQUAL(zkr_counter(NULL, "--format", "float", "get", path, NULL), 2);
  CU_ASSERT_EQUAL(zkr_counter(NULL, "get", "no-slash", NULL, NULL, NULL), 65);
  CU_ASSERT_TRUE(zkt_data_is(zh, path, "\0\0\0\x28", 4));
  zookeeper_close(zh);
  zkrc_session_close(s);
  g_free(text);
  g_free(path);
}

static void add_suites(void) {
  ZKT_SUITE("counter formats", {"decode", test_decode});
  ZKT_SUITE(
      "counters", {"calls and bytes", test_calls_and_bytes},
      {"curator atomic long both ways", test_curator_atomic_long_both_ways},
      {"curator atomic integer both ways",
       test_curator_atomic_integer_both_ways},
      {"kazoo counter both ways", test_kazoo_counter_both_ways},
      {"promoted to lock", test_promoted_to_lock},
      {"malformed node changes nothing", test_malformed_changes_nothing},
      {"sizes: no write too big, a big node refused", test_sizes},
      {"bad input", test_bad_input},
      {"ZKRC_NO_WAIT disconnected", test_no_wait_disconnected});
  ZKT_SUITE("zkr counter", {"get and add", test_zkr_counter});
}

int main(void) { return zkt_run("test_counters", add_suites); }
