/*
 * Shared values and counters (zkrecipes/shared.h) against a real
 * single-member ensemble: read with a seed, compare-and-set on the
 * version, last-writer-wins set, counters in Curator SharedCount's format
 * incremented concurrently (also with kazoo's Counter(support_curator) and
 * Curator's SharedCount),
 * and bad input refused with nothing sent.
 */
#include "config.h"

#include <string.h>

#include <glib.h>

#include "interop_peers.h"
#include "testutil.h"
#include "zkrecipes/shared.h"

#define KAZOO_COUNTER TOP_SRCDIR "/tests/peers/kazoo_counter.py"

/* Seeded on first read (parents made as well); read again, the same
 * value and version; a compare-and-set at a stale version changes nothing
 * (ZKRC_EBADVERSION); at the current one it writes and moves the version;
 * set writes whatever the version. */
static void test_value_compare_and_set(void) {
  char *path = zkt_path("shared-value");
  char *deep = g_strdup_printf("%s/a/b", path);
  zkrc_session *s = zkt_session();
  zkrc_versioned_value v;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_shared_value_get(s, deep, "seed", 4, &v, 5000));
  CU_ASSERT_EQUAL(v.len, 4);
  CU_ASSERT_STRING_EQUAL(v.data, "seed");
  CU_ASSERT_EQUAL(v.version, 0);
  int32_t old = v.version, now = -5;
  zkrc_versioned_value_clear(&v);
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_shared_value_try_set(s, deep, old, "one", 3, &now, 5000));
  CU_ASSERT_EQUAL(now, 1);
  ZKT_ASSERT_RC(ZKRC_EBADVERSION,
                zkrc_shared_value_try_set(s, deep, old, "two", 3, NULL, 5000));
  /* At -1 (sent as a multi with a check): the node is at 1, so refused. */
  ZKT_ASSERT_RC(ZKRC_EBADVERSION,
                zkrc_shared_value_try_set(s, deep, -1, "two", 3, NULL, 5000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_shared_value_get(s, deep, NULL, 0, &v, 5000));
  CU_ASSERT_STRING_EQUAL(v.data, "one");
  CU_ASSERT_EQUAL(v.version, 1);
  zkrc_versioned_value_clear(&v);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_shared_value_set(s, deep, "three", 5, 5000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_shared_value_get(s, deep, "x", 1, &v, 5000));
  CU_ASSERT_STRING_EQUAL(v.data, "three");
  CU_ASSERT_EQUAL(v.version, 2);
  zkrc_versioned_value_clear(&v);
  char *missing = g_strdup_printf("%s/missing", path);
  ZKT_ASSERT_RC(ZKRC_ENONODE,
                zkrc_shared_value_get(s, missing, NULL, 0, &v, 5000));
  CU_ASSERT_PTR_NULL(v.data);
  zkrc_session_close(s);
  g_free(missing);
  g_free(deep);
  g_free(path);
}

typedef struct adder {
  zkrc_session *s;
  const char *path;
  int n, ok;
} adder;

static gpointer add_n(gpointer data) {
  adder *a = data;
  for (int i = 0; i < a->n; i++)
    a->ok +=
        zkrc_shared_count_add(a->s, a->path, 1, 1000, NULL, 20000) == ZKRC_OK;
  return NULL;
}

/* Four sessions adding 1, 25 times each, at once: every add lands once
 * (compare-and-set retried on conflicts): the counter ends at 100. */
static void test_concurrent_adds_lose_nothing(void) {
  char *path = zkt_path("shared-count");
  adder a[4];
  GThread *t[4];
  for (int i = 0; i < 4; i++) {
    a[i] = (adder){.s = zkt_session(), .path = path, .n = 25};
    t[i] = g_thread_new("adder", add_n, &a[i]);
  }
  for (int i = 0; i < 4; i++) {
    g_thread_join(t[i]);
    CU_ASSERT_EQUAL(a[i].ok, 25);
  }
  int32_t value = -1;
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_shared_count_get(a[0].s, path, 0, &value, NULL, 5000));
  CU_ASSERT_EQUAL(value, 100);
  for (int i = 0; i < 4; i++)
    zkrc_session_close(a[i].s);
  g_free(path);
}

/* Run kazoo_counter.py; its stdout's first line as a number (-1 on
 * failure). */
static long kazoo_counter(const char *path, const char *mode, const char *n) {
  const char *argv[] = {
      DEBIAN_PYTHON3, KAZOO_COUNTER, zkt_hosts(), path, mode, n, NULL};
  char buf[64];
  int status = zkt_run_output(argv, buf, sizeof buf, 60000);
  CU_ASSERT_EQUAL(status, 0);
  return status == 0 ? strtol(buf, NULL, 10) : -1;
}

/* kazoo's Counter(support_curator=True) and ours on one node: each reads
 * what the other wrote, and their concurrent adds all land. */
static void test_kazoo_counter_both_ways(void) {
  char *path = zkt_path("shared-kazoo");
  zkrc_session *s = zkt_session();
  int32_t value = 0, version = 0;
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_shared_count_get(s, path, 0, &value, &version, 5000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_shared_count_try_set(s, path, version, 42, 5000));
  CU_ASSERT_EQUAL(kazoo_counter(path, "read", NULL), 42);
  CU_ASSERT_EQUAL(kazoo_counter(path, "set", "-7"), -7);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_shared_count_get(s, path, 0, &value, NULL, 5000));
  CU_ASSERT_EQUAL(value, -7);
  /* kazoo's write moved the version past ours (1): a stale compare fails. */
  ZKT_ASSERT_RC(ZKRC_EBADVERSION,
                zkrc_shared_count_try_set(s, path, 1, 0, 5000));
  /* Concurrent adds: 30 by kazoo, 30 by us. */
  adder a = {.s = s, .path = path, .n = 30};
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_shared_count_get(s, path, 0, &value, &version, 5000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_shared_count_try_set(s, path, version, 0, 5000));
  GThread *t = g_thread_new("adder", add_n, &a);
  long kazoo_saw = kazoo_counter(path, "add", "30");
  g_thread_join(t);
  CU_ASSERT_EQUAL(a.ok, 30);
  CU_ASSERT(kazoo_saw >= 30 && kazoo_saw <= 60);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_shared_count_get(s, path, 0, &value, NULL, 5000));
  CU_ASSERT_EQUAL(value, 60);
  zkrc_session_close(s);
  g_free(path);
}

/* Curator's SharedCount on our counter ("sharedcount" OP [N]): the value
 * it printed at its end, or INT64_MIN when it failed. */
static int64_t curator_count(const char *path, const char *op, const char *n) {
  peer *p = curator_peer("curator", "sharedcount", path, op, n, (char *)NULL);
  char *value = peer_expect(p, "value", 60000);
  int64_t v = value ? g_ascii_strtoll(value, NULL, 10) : INT64_MIN;
  g_free(value);
  CU_ASSERT_EQUAL(peer_finish(p, 30000), 0);
  return v;
}

/* Curator's SharedCount and ours on one node: each reads what the other
 * wrote, and their concurrent adds all land. */
static void test_curator_shared_count_both_ways(void) {
  char *path = zkt_path("shared-curator");
  zkrc_session *s = zkt_session();
  int32_t value = 0, version = 0;
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_shared_count_get(s, path, 0, &value, &version, 5000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_shared_count_try_set(s, path, version, 42, 5000));
  CU_ASSERT_EQUAL(curator_count(path, "read", NULL), 42);
  CU_ASSERT_EQUAL(curator_count(path, "set", "-7"), -7);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_shared_count_get(s, path, 0, &value, NULL, 5000));
  CU_ASSERT_EQUAL(value, -7);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_shared_count_add(s, path, 7, 10, NULL, 5000));
  /* Concurrent adds: 20 by Curator, 20 by us, from 0. */
  adder a = {.s = s, .path = path, .n = 20};
  GThread *t = g_thread_new("adder", add_n, &a);
  int64_t curator_saw = curator_count(path, "add", "20");
  g_thread_join(t);
  CU_ASSERT_EQUAL(a.ok, 20);
  CU_ASSERT(curator_saw >= 20 && curator_saw <= 40);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_shared_count_get(s, path, 0, &value, NULL, 5000));
  CU_ASSERT_EQUAL(value, 40);
  zkrc_session_close(s);
  g_free(path);
}

/* Overflow is refused and writes nothing; a node that is not 4 bytes is
 * not a counter; bad arguments are refused before anything is sent. */
static void test_bad_input_changes_nothing(void) {
  char *path = zkt_path("shared-bad");
  zkrc_session *s = zkt_session();
  int32_t value = 0, result = 0;
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_shared_count_get(s, path, INT32_MAX, &value, NULL, 5000));
  ZKT_ASSERT_RC(ZKRC_EOVERFLOW,
                zkrc_shared_count_add(s, path, 1, 5, &result, 5000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_shared_count_get(s, path, 0, &value, NULL, 5000));
  CU_ASSERT_EQUAL(value, INT32_MAX);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_shared_value_set(s, path, "abc", 3, 5000));
  ZKT_ASSERT_RC(ZKRC_EBADNODE,
                zkrc_shared_count_get(s, path, 0, &value, NULL, 5000));
  zkrc_versioned_value v;
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkrc_shared_value_get(NULL, path, NULL, 0, &v, 5000));
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkrc_shared_value_get(s, "no-slash", NULL, 0, &v, 5000));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_shared_value_get(s, "/", NULL, 0, &v, 5000));
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkrc_shared_value_get(s, path, NULL, 0, NULL, 5000));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_shared_value_get(s, path, NULL, 0, &v, -5));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_shared_value_set(s, path, NULL, 3, 5000));
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkrc_shared_count_add(s, path, 1, 0, &result, 5000));
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkrc_shared_count_get(s, path, 0, NULL, NULL, 5000));
  zkrc_versioned_value_clear(NULL);
  zkrc_session_close(s);
  g_free(path);
}

/* ZKRC_NO_WAIT is one look: it works on a connected session and is
 * ZKRC_ECONNLOSS at once on one not connected (yet); the refused call
 * writes nothing. */
static void test_no_wait_looks_once(void) {
  char *path = zkt_path("shared-nowait");
  zkrc_session *s = zkt_session();
  int32_t value = 0, version = -1, result = 0;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_shared_count_get(s, path, 3, &value, &version,
                                               ZKRC_NO_WAIT));
  CU_ASSERT_EQUAL(value, 3);
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_shared_count_try_set(s, path, version, 4, ZKRC_NO_WAIT));
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_shared_count_add(s, path, 1, 3, &result, ZKRC_NO_WAIT));
  CU_ASSERT_EQUAL(result, 5);
  zkrc_session_options o;
  zkrc_session_options_init(&o);
  zkrc_session *later = NULL; /* a server no one listens on: never connected */
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_new(&later, "127.0.0.1:1", &o));
  ZKT_ASSERT_RC(ZKRC_ECONNLOSS,
                zkrc_shared_value_set(later, path, "x", 1, ZKRC_NO_WAIT));
  zkrc_session_close(later);
  zkrc_session_close(s);
  s = zkt_session();
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_shared_count_get(s, path, 0, &value, NULL, ZKRC_NO_WAIT));
  CU_ASSERT_EQUAL(value, 5); /* the refused set wrote nothing */
  zkrc_session_close(s);
  g_free(path);
}

/* Issue 30: a write over the limit is ZKRC_ETOOBIG at once, with nothing
 * sent and no connection dropped: a setData of ZKT_DATA_MAX + 1 bytes
 * (which the servers would take, but no Java client could read back), the
 * issue's 1,048,677 bytes, a seed one byte over its create's limit, and
 * the compare-and-set at -1 (a multi of the setData and a check) one byte
 * over its own envelope.  At each limit the write goes: ZKT_DATA_MAX set
 * and read back whole, the seed created and read back, the multi answered
 * by the servers (EBADVERSION: the node is not at -1). */
static void test_size_limit(void) {
  char *path = zkt_path("shared-size"); /* 17 to 41 bytes: see below */
  char *seeded = g_strdup_printf("%s/s", path);
  size_t set_max = ZKT_DATA_MAX, len = strlen(path);
  size_t seed_max =
      MIN(ZKT_DATA_MAX, ZKT_PACKET_MAX - zkt_create_envelope(seeded));
  /* header, and a MultiHeader (9) before each op and at the end; the
   * check is the path and a version */
  size_t multi_max =
      ZKT_PACKET_MAX - zkt_set_envelope(path) - 3 * 9 - (4 + len + 4);
  CU_ASSERT_TRUE(zkt_set_envelope(path) + set_max <= ZKT_PACKET_MAX);
  CU_ASSERT_TRUE(multi_max < set_max);
  char *data = zkt_pattern(1048677);
  zkrc_session *s = zkt_session();
  zhandle_t *zh = zkt_raw();
  zkrc_versioned_value v;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_shared_value_get(s, path, "x", 1, &v, 5000));
  zkrc_versioned_value_clear(&v);
  uint64_t sent = zkt_requests_but_renewals(s), lost = zkt_suspensions(s);
  ZKT_ASSERT_RC(ZKRC_ETOOBIG,
                zkrc_shared_value_set(s, path, data, set_max + 1, 5000));
  ZKT_ASSERT_RC(ZKRC_ETOOBIG,
                zkrc_shared_value_set(s, path, data, 1048677, 5000));
  ZKT_ASSERT_RC(ZKRC_ETOOBIG, zkrc_shared_value_try_set(
                                  s, path, 0, data, set_max + 1, NULL, 5000));
  ZKT_ASSERT_RC(
      ZKRC_ETOOBIG,
      zkrc_shared_value_try_set(s, path, -1, data, multi_max + 1, NULL, 5000));
  ZKT_ASSERT_RC(ZKRC_ETOOBIG,
                zkrc_shared_value_get(s, seeded, data, seed_max + 1, &v, 5000));
  CU_ASSERT_EQUAL(zkt_requests_but_renewals(s), sent);
  CU_ASSERT_TRUE(zkt_data_is(zh, path, "x", 1));
  CU_ASSERT_FALSE(zkt_exists(zh, seeded));
  ZKT_ASSERT_RC(
      ZKRC_EBADVERSION,
      zkrc_shared_value_try_set(s, path, -1, data, multi_max, NULL, 5000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_shared_value_set(s, path, data, set_max, 5000));
  CU_ASSERT_TRUE(zkt_data_is(zh, path, data, set_max));
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_shared_value_get(s, seeded, data, seed_max, &v, 5000));
  CU_ASSERT_TRUE(v.len == seed_max && memcmp(v.data, data, seed_max) == 0);
  zkrc_versioned_value_clear(&v);
  CU_ASSERT_EQUAL(zkt_suspensions(s), lost);
  zookeeper_close(zh);
  zkrc_session_close(s);
  g_free(data);
  g_free(seeded);
  g_free(path);
}

static void add_suites(void) {
  ZKT_SUITE(
      "shared", {"value compare-and-set", test_value_compare_and_set},
      {"concurrent adds lose nothing", test_concurrent_adds_lose_nothing},
      {"kazoo counter both ways", test_kazoo_counter_both_ways},
      {"curator shared count both ways", test_curator_shared_count_both_ways},
      {"bad input changes nothing", test_bad_input_changes_nothing},
      {"size limit, envelope included", test_size_limit},
      {"ZKRC_NO_WAIT looks once", test_no_wait_looks_once});
}

int main(void) { return zkt_run("test_shared", add_suites); }
