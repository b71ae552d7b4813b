/*
 * The cache checker (cache_check.[ch]) on synthetic streams, without a
 * server: it passes a correct stream, and it reports every corruption that
 * would hide a broken cache - each node event dropped or repeated, in turn;
 * events swapped; a value changed; INITIALIZED missing or twice; a node
 * outside the scope - so that a pass of test_cache_faults means something.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <glib.h>

#include "cache_check.h"
#include "testutil.h"

/* ------------------------------------------- a correct synthetic stream */

/* A simulated cache: applies random changes to a copy, emitting exactly
 * the events the header promises, with a zxid that only grows. */
typedef struct sim {
  GArray *events; /* of cc_event */
  GHashTable *state;
  int64_t zxid;
  GRand *rand;
} sim;

static const char *const sim_paths[] = {
    "/r",      "/r/a",     "/r/b",     "/r/a/x",   "/r/a/y",
    "/r/b/x",  "/r/a/x/1", "/r/a/x/2", "/r/b/x/1", "/r/c"};

static void sim_emit(sim *s, int type, const char *path, const cc_value *node,
                     const cc_value *old) {
  cc_event e;
  memset(&e, 0, sizeof e);
  e.type = type;
  e.node.len = e.old.len = -1;
  if (node) {
    e.has_node = 1;
    e.path = g_strdup(path);
    e.node = cc_value_copy(node);
  }
  if (old) {
    e.has_old = 1;
    e.old = cc_value_copy(old);
  }
  g_array_append_val(s->events, e);
}

/* A new value for a node: data sometimes NULL, sometimes empty, sometimes
 * with NUL bytes inside. */
static cc_value sim_value(sim *s, const cc_value *prev, int recreated) {
  cc_value v = {NULL, -1, 0, ++s->zxid, 0, 0};
  v.czxid = prev && !recreated ? prev->czxid : v.mzxid;
  v.version = prev && !recreated ? prev->version + 1 : 0;
  int kind = g_rand_int_range(s->rand, 0, 4);
  if (kind > 0) {
    v.len = kind == 1 ? 0 : g_rand_int_range(s->rand, 1, 9);
    v.data = g_malloc0((size_t)v.len + 1);
    for (int i = 0; i < v.len; i++)
      v.data[i] = (char)g_rand_int_range(s->rand, 0, 3); /* NULs too */
    v.data_length = v.len;
  }
  return v;
}

static void sim_step(sim *s) {
  const char *path =
      sim_paths[g_rand_int_range(s->rand, 0, G_N_ELEMENTS(sim_paths))];
  cc_value *cur = g_hash_table_lookup(s->state, path);
  int choice = g_rand_int_range(s->rand, 0, 3);
  if (cur == NULL) {
    cc_value v = sim_value(s, NULL, 0);
    sim_emit(s, ZKRC_CACHE_NODE_ADDED, path, &v, NULL);
    cc_state_put(s->state, path, &v);
    cc_value_clear(&v);
  } else if (choice < 2) { /* changed, or deleted and created again */
    cc_value v = sim_value(s, cur, choice == 1);
    sim_emit(s, ZKRC_CACHE_NODE_UPDATED, path, &v, cur);
    cc_state_put(s->state, path, &v);
    cc_value_clear(&v);
  } else {
    sim_emit(s, ZKRC_CACHE_NODE_REMOVED, path, cur, NULL);
    g_hash_table_remove(s->state, path);
  }
}

/* @p steps changes; INITIALIZED after the fifth; a suspension, an expiry
 * and their reconnections along the way. */
static void sim_run(sim *s, guint32 seed, int steps) {
  s->events = g_array_new(FALSE, FALSE, sizeof(cc_event));
  s->state = cc_state_new();
  s->zxid = 0x100000000LL;
  s->rand = g_rand_new_with_seed(seed);
  for (int i = 0; i < steps; i++) {
    if (i == 5)
      sim_emit(s, ZKRC_CACHE_INITIALIZED, NULL, NULL, NULL);
    if (i == steps / 3 || i == 2 * steps / 3)
      sim_emit(s, i == steps / 3 ? ZKRC_CACHE_SUSPENDED : ZKRC_CACHE_LOST,
               NULL, NULL, NULL);
    if (i == steps / 3 + 2 || i == 2 * steps / 3 + 2)
      sim_emit(s, ZKRC_CACHE_RECONNECTED, NULL, NULL, NULL);
    sim_step(s);
  }
}

static void sim_clear(sim *s) {
  for (guint i = 0; i < s->events->len; i++)
    cc_event_clear(&g_array_index(s->events, cc_event, i));
  g_array_free(s->events, TRUE);
  g_hash_table_destroy(s->state);
  g_rand_free(s->rand);
}

static const cc_scope whole = {"/r", 0, -1};

/* Does the checker object to @p events, as a stream or by its end state? */
static int objects(const cc_event *events, size_t n, GHashTable *final) {
  cc_replay r;
  int v = cc_replay_run(events, n, &whole, &r);
  int d = cc_state_diff(final, r.state, NULL);
  cc_replay_clear(&r);
  return v > 0 || d > 0;
}

static int is_node_event(const cc_event *e) {
  return e->type >= ZKRC_CACHE_NODE_ADDED && e->type <= ZKRC_CACHE_NODE_REMOVED;
}

/* ---------------------------------------------------------------- tests */

static void test_correct_stream_passes(void) {
  for (guint32 seed = 1; seed <= 20; seed++) {
    sim s;
    sim_run(&s, seed, 300);
    cc_replay r;
    CU_ASSERT_EQUAL(cc_replay_run((cc_event *)s.events->data, s.events->len,
                                  &whole, &r),
                    0);
    if (r.violations)
      fprintf(stderr, "\nseed %u:\n%s", seed, r.report->str);
    CU_ASSERT_EQUAL(cc_state_diff(s.state, r.state, NULL), 0);
    CU_ASSERT_EQUAL(r.initialized_index, 5);
    /* Five changes before it: at most five paths in the copy. */
    CU_ASSERT(g_hash_table_size(r.at_initialized) >= 1 &&
              g_hash_table_size(r.at_initialized) <= 5);
    CU_ASSERT_EQUAL(r.counts[ZKRC_CACHE_INITIALIZED], 1);
    CU_ASSERT_EQUAL(r.counts[ZKRC_CACHE_RECONNECTED], 2);
    CU_ASSERT_EQUAL(r.regressions, 0);
    CU_ASSERT_FALSE(r.down_at_end);
    cc_replay_clear(&r);
    sim_clear(&s);
  }
}

/* Every node event dropped in turn, and every one repeated in turn. */
static void test_each_event_dropped_or_repeated_is_reported(void) {
  sim s;
  sim_run(&s, 7, 200);
  cc_event *ev = (cc_event *)s.events->data;
  size_t n = s.events->len;
  cc_event *copy = g_new(cc_event, n + 1);
  int dropped = 0, repeated = 0, missed = 0;
  for (size_t i = 0; i < n; i++) {
    if (!is_node_event(&ev[i]) && ev[i].type != ZKRC_CACHE_INITIALIZED)
      continue;
    /* Shallow copies: the events stay owned by s. */
    memcpy(copy, ev, i * sizeof *ev);
    memcpy(copy + i, ev + i + 1, (n - i - 1) * sizeof *ev);
    if (objects(copy, n - 1, s.state))
      dropped++;
    else
      missed++;
    memcpy(copy, ev, (i + 1) * sizeof *ev);
    memcpy(copy + i + 1, ev + i, (n - i) * sizeof *ev);
    if (objects(copy, n + 1, s.state))
      repeated++;
    else
      missed++;
  }
  printf("(%d drops and %d repeats reported, %d missed) ", dropped, repeated,
         missed);
  CU_ASSERT_EQUAL(missed, 0);
  CU_ASSERT(dropped > 150);
  g_free(copy);
  sim_clear(&s);
}

/* Two events of one path in the wrong order. */
static void test_swapped_events_are_reported(void) {
  sim s;
  sim_run(&s, 11, 200);
  cc_event *ev = (cc_event *)s.events->data;
  size_t n = s.events->len;
  int swaps = 0, missed = 0;
  for (size_t i = 0; i + 1 < n; i++)
    for (size_t j = i + 1; j < n && j < i + 40; j++) {
      if (!is_node_event(&ev[i]) || !is_node_event(&ev[j]) ||
          strcmp(ev[i].path, ev[j].path) != 0)
        continue;
      cc_event t = ev[i];
      ev[i] = ev[j];
      ev[j] = t;
      swaps++;
      missed += !objects(ev, n, s.state);
      ev[j] = ev[i];
      ev[i] = t;
      break; /* the next event of that path only */
    }
  printf("(%d swaps, %d missed) ", swaps, missed);
  CU_ASSERT(swaps > 50);
  CU_ASSERT_EQUAL(missed, 0);
  sim_clear(&s);
}

/* One value changed in place: data, NULL-ness, mzxid, version. */
static void test_changed_values_are_reported(void) {
  sim s;
  sim_run(&s, 3, 120);
  cc_event *ev = (cc_event *)s.events->data;
  size_t n = s.events->len;
  int changed = 0, missed = 0;
  for (size_t i = 0; i < n; i++) {
    if (!is_node_event(&ev[i]))
      continue;
    cc_value saved = ev[i].node;
    cc_value bad = cc_value_copy(&saved);
    switch (i % 4) {
    case 0: /* data NULL <-> empty */
      if (bad.data) {
        cc_value_clear(&bad);
      } else {
        bad.data = g_strdup("");
        bad.len = 0;
      }
      break;
    case 1:
      bad.mzxid++;
      break;
    case 2:
      bad.version++;
      break;
    default: /* a byte after a NUL, or one more byte */
      if (bad.len > 0)
        bad.data[bad.len - 1] ^= 0x40;
      else
        bad.czxid--;
    }
    ev[i].node = bad;
    changed++;
    missed += !objects(ev, n, s.state);
    ev[i].node = saved;
    cc_value_clear(&bad);
  }
  printf("(%d changed, %d missed) ", changed, missed);
  CU_ASSERT_EQUAL(missed, 0);
  sim_clear(&s);
}

static cc_event other(int type) {
  cc_event e;
  memset(&e, 0, sizeof e);
  e.type = type;
  e.node.len = e.old.len = -1;
  return e;
}

static cc_event node_event(int type, const char *path, int64_t mzxid,
                           const cc_value *old) {
  cc_event e = other(type);
  e.path = (char *)path;
  e.has_node = 1;
  e.node.czxid = e.node.mzxid = mzxid;
  if (old) {
    e.has_old = 1;
    e.old = *old;
  }
  return e;
}

/* The rules one at a time, on hand-made streams. */
static void test_each_rule_on_a_minimal_stream(void) {
  cc_replay r;
  cc_event ok[] = {node_event(ZKRC_CACHE_NODE_ADDED, "/r", 5, NULL),
                   other(ZKRC_CACHE_INITIALIZED)};
  CU_ASSERT_EQUAL(cc_replay_run(ok, 2, &whole, &r), 0);
  cc_replay_clear(&r);

  /* No INITIALIZED. */
  CU_ASSERT(cc_replay_run(ok, 1, &whole, &r) > 0);
  cc_replay_clear(&r);

  /* Outside the scope: another tree, or deeper than allowed. */
  cc_event out[] = {node_event(ZKRC_CACHE_NODE_ADDED, "/rr", 5, NULL),
                    other(ZKRC_CACHE_INITIALIZED)};
  CU_ASSERT(cc_replay_run(out, 2, &whole, &r) > 0);
  cc_replay_clear(&r);
  cc_event deep[] = {node_event(ZKRC_CACHE_NODE_ADDED, "/r/a/b", 5, NULL),
                     other(ZKRC_CACHE_INITIALIZED)};
  cc_scope children = {"/r", 1, 1};
  CU_ASSERT(cc_replay_run(deep, 2, &children, &r) > 0);
  cc_replay_clear(&r);
  CU_ASSERT(cc_replay_run(ok, 2, &children, &r) > 0); /* the parent */
  cc_replay_clear(&r);

  /* UPDATED with the same mzxid; with no old value. */
  cc_value v5 = ok[0].node;
  cc_event same[] = {ok[0], node_event(ZKRC_CACHE_NODE_UPDATED, "/r", 5, &v5),
                     other(ZKRC_CACHE_INITIALIZED)};
  CU_ASSERT(cc_replay_run(same, 3, &whole, &r) > 0);
  cc_replay_clear(&r);
  cc_event no_old[] = {ok[0], node_event(ZKRC_CACHE_NODE_UPDATED, "/r", 6,
                                         NULL),
                       other(ZKRC_CACHE_INITIALIZED)};
  CU_ASSERT(cc_replay_run(no_old, 3, &whole, &r) > 0);
  cc_replay_clear(&r);

  /* A node in a connection event; RECONNECTED while connected. */
  cc_event stray = other(ZKRC_CACHE_INITIALIZED);
  stray.has_node = 1;
  CU_ASSERT(cc_replay_run(&stray, 1, &whole, &r) > 0);
  cc_replay_clear(&r);
  cc_event early[] = {other(ZKRC_CACHE_INITIALIZED),
                      other(ZKRC_CACHE_RECONNECTED)};
  CU_ASSERT(cc_replay_run(early, 2, &whole, &r) > 0);
  cc_replay_clear(&r);
  cc_event down[] = {other(ZKRC_CACHE_INITIALIZED),
                     other(ZKRC_CACHE_SUSPENDED)};
  CU_ASSERT_EQUAL(cc_replay_run(down, 2, &whole, &r), 0);
  CU_ASSERT_TRUE(r.down_at_end);
  cc_replay_clear(&r);

  /* Back in time: counted apart, not a violation. */
  cc_event back[] = {ok[0], node_event(ZKRC_CACHE_NODE_UPDATED, "/r", 4, &v5),
                     other(ZKRC_CACHE_INITIALIZED)};
  CU_ASSERT_EQUAL(cc_replay_run(back, 3, &whole, &r), 0);
  CU_ASSERT_EQUAL(r.regressions, 1);
  cc_replay_clear(&r);
}

static void test_depth_and_values(void) {
  CU_ASSERT_EQUAL(cc_depth("/r", "/r"), 0);
  CU_ASSERT_EQUAL(cc_depth("/r", "/r/a"), 1);
  CU_ASSERT_EQUAL(cc_depth("/r", "/r/a/b"), 2);
  CU_ASSERT_EQUAL(cc_depth("/r", "/ra"), -1);
  CU_ASSERT_EQUAL(cc_depth("/r", "/"), -1);
  CU_ASSERT_EQUAL(cc_depth("/", "/"), 0);
  CU_ASSERT_EQUAL(cc_depth("/", "/a/b"), 2);
  cc_value none = {NULL, -1, 1, 1, 0, 0};
  cc_value empty = {"", 0, 1, 1, 0, 0};
  cc_value nul1 = {"a\0b", 3, 1, 1, 0, 3}, nul2 = {"a\0c", 3, 1, 1, 0, 3};
  CU_ASSERT_FALSE(cc_value_equal(&none, &empty));
  CU_ASSERT_FALSE(cc_value_equal(&nul1, &nul2));
  CU_ASSERT_TRUE(cc_value_equal(&nul1, &nul1));
  GHashTable *a = cc_state_new(), *b = cc_state_new();
  cc_state_put(a, "/r", &none);
  cc_state_put(b, "/r", &empty);
  CU_ASSERT_EQUAL(cc_state_diff(a, b, NULL), 1);
  cc_state_put(b, "/r", &none);
  CU_ASSERT_EQUAL(cc_state_diff(a, b, NULL), 0);
  cc_state_put(b, "/r/x", &none);
  GString *why = g_string_new(NULL);
  CU_ASSERT_EQUAL(cc_state_diff(a, b, why), 1);
  CU_ASSERT_PTR_NOT_NULL(strstr(why->str, "/r/x"));
  g_string_free(why, TRUE);
  g_hash_table_destroy(a);
  g_hash_table_destroy(b);
}

static void add_suites(void) {
  ZKT_SUITE("cache_check", {"correct stream passes", test_correct_stream_passes},
            {"each event dropped or repeated is reported",
             test_each_event_dropped_or_repeated_is_reported},
            {"swapped events are reported", test_swapped_events_are_reported},
            {"changed values are reported", test_changed_values_are_reported},
            {"each rule on a minimal stream",
             test_each_rule_on_a_minimal_stream},
            {"depth and values", test_depth_and_values});
}

int main(void) { return zkt_run("test_cache_check", add_suites); }
