/*
 * The set partitioner (zkrecipes/partitioner.h, issue 17) on a real
 * one-member ensemble with a fault proxy in front of it.
 *
 * Members are partitioners on sessions of this process (one each) whose
 * "application" (on_state) keeps the items it may use: set at ACQUIRED,
 * emptied at RELEASE (before it confirms with release_set) and at FAILURE.
 * Every ACQUIRED checks that no other member's application still uses one
 * of the items it is given: that count of overlaps is what "no item owned
 * by two running members" means here.
 *
 * The items are q-1 .. q-10 given out of order; sorted (byte order, as
 * kazoo's sorted()) they are q-1 q-10 q-2 ... q-9, so kazoo's split of them
 * among alpha, bravo and charlie (sorted identifiers; member i takes items
 * i, i+3, ...) is:
 */
#include "config.h"

#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "ending.h"
#include "interop_peers.h"
#include "testutil.h"

#define ALPHA_OF_3 "q-1,q-3,q-6,q-9"
#define BRAVO_OF_3 "q-10,q-4,q-7"
#define CHARLIE_OF_3 "q-2,q-5,q-8"
/* ... and without bravo: */
#define ALPHA_OF_2 "q-1,q-2,q-4,q-6,q-8"
#define CHARLIE_OF_2 "q-10,q-3,q-5,q-7,q-9"

static const char *const ITEMS[] = {"q-7", "q-2", "q-10", "q-1", "q-9",
                                    "q-5", "q-3", "q-8",  "q-4", "q-6"};
#define N_ITEMS G_N_ELEMENTS(ITEMS)
#define BOUNDARY_MS 300
#define WAIT_MS 20000

typedef struct group group;

typedef struct member {
  group *g;
  const char *id;
  zkrc_session *s;
  zkrc_partitioner *p;
  /* Guarded by g->mu. */
  zkrc_partitioner_state last;
  int fail_reason, fail_zk; /* FAILURE's reason and ZooKeeper code */
  char *owned;              /* the items the application uses, "a,b" or NULL */
  int64_t acquired_at_ms;   /* the last ACQUIRED */
  int64_t failed_at_ms;     /* FAILURE, or 0 */
  gboolean ignore_failure;  /* the control: keep using the items */
} member;

struct group {
  GMutex mu;
  GCond cond;
  member m[3];
  int n;
  int overlaps; /* items given to one while another used them */
};

/* Is @p item in the comma-separated @p list? */
static gboolean listed(const char *list, const char *item) {
  if (list == NULL)
    return FALSE;
  char **v = g_strsplit(list, ",", -1);
  gboolean found = g_strv_contains((const char *const *)v, item);
  g_strfreev(v);
  return found;
}

static void on_state(zkrc_partitioner *p, const zkrc_partitioner_event *ev,
                     void *arg) {
  member *m = arg;
  group *g = m->g;
  zkrc_partitioner_state st = ev->type;
  const char *const *items = ev->items;
  size_t count = ev->count;
  g_mutex_lock(&g->mu);
  m->last = st;
  if (st == ZKRC_PARTITIONER_FAILURE) {
    m->fail_reason = ev->reason;
    m->fail_zk = ev->zk_error;
  } else {
    CU_ASSERT_EQUAL(ev->reason, ZKRC_OK); /* no loss, no reason */
    CU_ASSERT_EQUAL(ev->zk_error, ZOK);
  }
  if (st == ZKRC_PARTITIONER_ACQUIRED) {
    for (int i = 0; i < g->n; i++) {
      for (size_t k = 0; &g->m[i] != m && k < count; k++) {
        if (listed(g->m[i].owned, items[k])) {
          fprintf(stderr, "\noverlap: %s given %s, still used by %s", m->id,
                  items[k], g->m[i].id);
          g->overlaps++;
        }
      }
    }
    g_free(m->owned);
    static char *none[] = {NULL};
    m->owned = g_strjoinv(",", count ? (char **)items : none);
    m->acquired_at_ms = zkt_now_ms();
  } else if (st == ZKRC_PARTITIONER_RELEASE ||
             (st == ZKRC_PARTITIONER_FAILURE && !m->ignore_failure)) {
    g_clear_pointer(&m->owned, g_free);
  }
  if (st == ZKRC_PARTITIONER_FAILURE)
    m->failed_at_ms = zkt_now_ms();
  g_cond_broadcast(&g->cond);
  g_mutex_unlock(&g->mu);
  if (st == ZKRC_PARTITIONER_RELEASE) /* stopped using them: confirm */
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_partitioner_release_set(p));
}

static group *group_new(void) {
  group *g = g_new0(group, 1);
  g_mutex_init(&g->mu);
  g_cond_init(&g->cond);
  return g;
}

/* Member @p id joins on @p s (NULL: a session straight to the member) to
 * divide @p items. */
static member *join_items(group *g, const char *path, const char *id,
                          zkrc_session *s, const char *const *items,
                          size_t count) {
  member *m = &g->m[g->n++];
  m->g = g;
  m->id = id;
  m->s = s ? s : zkt_direct_session();
  zkrc_partitioner_options o;
  zkrc_partitioner_options_init(&o);
  o.identifier = id;
  o.time_boundary_ms = BOUNDARY_MS;
  o.on_event = on_state;
  o.event_arg = m;
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_partitioner_new(&m->p, m->s, path, items, count, &o));
  CU_ASSERT_PTR_NOT_NULL_FATAL(m->p);
  return m;
}

static member *join(group *g, const char *path, const char *id,
                    zkrc_session *s) {
  return join_items(g, path, id, s, ITEMS, N_ITEMS);
}

static void leave(member *m) {
  zkrc_partitioner_free(m->p);
  m->p = NULL;
  zkrc_session_close(m->s);
  m->s = NULL;
}

static void group_free(group *g) {
  for (int i = 0; i < g->n; i++) {
    if (g->m[i].p)
      leave(&g->m[i]);
    g_free(g->m[i].owned);
  }
  g_mutex_clear(&g->mu);
  g_cond_clear(&g->cond);
  g_free(g);
}

/* Do the @p n members named in @p want ("id=items", NULL to skip a member)
 * use exactly those items, ACQUIRED? */
static gboolean split_is_locked(group *g, const char *const *want) {
  for (int i = 0; i < g->n; i++) {
    member *m = &g->m[i];
    if (want[i] && (m->last != ZKRC_PARTITIONER_ACQUIRED || m->owned == NULL ||
                    strcmp(m->owned, want[i]) != 0))
      return FALSE;
  }
  return TRUE;
}

/* Wait until the split is @p want (one entry per member, NULL: any). */
static int wait_split(group *g, const char *const *want) {
  int64_t deadline = g_get_monotonic_time() + WAIT_MS * G_TIME_SPAN_MILLISECOND;
  g_mutex_lock(&g->mu);
  while (!split_is_locked(g, want) &&
         g_cond_wait_until(&g->cond, &g->mu, deadline))
    ;
  int ok = split_is_locked(g, want);
  if (!ok) {
    for (int i = 0; i < g->n; i++)
      fprintf(stderr, "\n%s: %s [%s], want [%s]", g->m[i].id,
              zkrc_partitioner_state_name(g->m[i].last),
              g->m[i].owned ? g->m[i].owned : "", want[i] ? want[i] : "*");
  }
  g_mutex_unlock(&g->mu);
  return ok;
}

/* Wait until @p m's application has been told @p st. */
static int wait_told(group *g, member *m, zkrc_partitioner_state st) {
  int64_t deadline = g_get_monotonic_time() + WAIT_MS * G_TIME_SPAN_MILLISECOND;
  g_mutex_lock(&g->mu);
  while (m->last != st && g_cond_wait_until(&g->cond, &g->mu, deadline))
    ;
  int told = m->last == st;
  g_mutex_unlock(&g->mu);
  return told;
}

/* The participant id and fencing token of the holder of item @p item. */
static int64_t holder(zkrc_session *s, const char *path, const char *item,
                      char **id, char **node) {
  char *dir = g_strdup_printf("%s/locks/%s", path, item);
  zkrc_participant *list = NULL;
  size_t n = 0;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_list(s, dir, &list, &n, 10000));
  g_free(dir);
  int64_t token = n ? list[0].token : 0;
  if (id)
    *id = n ? g_strdup(list[0].id) : NULL;
  if (node)
    *node = n ? g_strdup(list[0].node) : NULL;
  zkrc_participants_free(list, n);
  return token;
}

static int path_gone(void *arg) {
  zhandle_t *zh =
      zkt_raw_to(zkrc_ensemble_direct_connect_string(zkt_ensemble()));
  int gone = !zkt_exists(zh, arg);
  zookeeper_close(zh);
  return gone;
}

/* Nothing left: every node we made is a container or ephemeral. */
static void assert_nothing_left(const char *path) {
  CU_ASSERT_TRUE(zkt_wait_for(path_gone, (void *)path, 10000));
}

/* ------------------------------------------------------------- the split */

/* Three members split ten items as kazoo would, with kazoo's node names;
 * joining order (charlie first) does not matter, only sorted identifiers. */
static void test_split_of_three(void) {
  char *path = zkt_path("split");
  group *g = group_new();
  join(g, path, "charlie", NULL);
  join(g, path, "alpha", NULL);
  join(g, path, "bravo", NULL);
  const char *const want[] = {CHARLIE_OF_3, ALPHA_OF_3, BRAVO_OF_3};
  CU_ASSERT_TRUE(wait_split(g, want));
  CU_ASSERT_EQUAL(g->overlaps, 0);

  /* The items as zkrc_partitioner_items() has them, and their holders. */
  char **items = NULL;
  size_t n = 0;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_partitioner_items(g->m[1].p, &items, &n));
  CU_ASSERT_EQUAL(n, 4);
  char *joined = items ? g_strjoinv(",", items) : NULL;
  CU_ASSERT_STRING_EQUAL(joined ? joined : "", ALPHA_OF_3);
  g_free(joined);
  zkrc_strv_free(items);
  CU_ASSERT_TRUE(zkrc_partitioner_lease_remaining(g->m[1].p) > 0);
  GRegex *lock_name =
      g_regex_new("^_c_[-0-9a-f]{36}-__lock__[0-9]{10}$", 0, 0, NULL);
  for (size_t i = 0; i < N_ITEMS; i++) {
    char *id = NULL, *node = NULL;
    holder(g->m[0].s, path, ITEMS[i], &id, &node);
    const char *owner = listed(ALPHA_OF_3, ITEMS[i])   ? "alpha"
                        : listed(BRAVO_OF_3, ITEMS[i]) ? "bravo"
                                                       : "charlie";
    CU_ASSERT_STRING_EQUAL(id ? id : "", owner);
    CU_ASSERT_TRUE(node && g_regex_match(lock_name, node, 0, NULL));
    g_free(id);
    g_free(node);
  }
  g_regex_unref(lock_name);

  /* The party: kazoo's ShallowParty nodes "<uuid hex>-<id>", data <id>. */
  zhandle_t *zh =
      zkt_raw_to(zkrc_ensemble_direct_connect_string(zkt_ensemble()));
  char *party = g_strconcat(path, "/party", NULL);
  struct String_vector v = {0, NULL};
  CU_ASSERT_EQUAL(zoo_get_children(zh, party, 0, &v), ZOK);
  CU_ASSERT_EQUAL(v.count, 3);
  GRegex *party_name =
      g_regex_new("^[0-9a-f]{32}-(alpha|bravo|charlie)$", 0, 0, NULL);
  for (int i = 0; i < v.count; i++) {
    CU_ASSERT_TRUE(g_regex_match(party_name, v.data[i], 0, NULL));
    char *child = g_strdup_printf("%s/%s", party, v.data[i]);
    char buf[64];
    int len = sizeof buf - 1;
    CU_ASSERT_EQUAL(zoo_get(zh, child, 0, buf, &len, NULL), ZOK);
    buf[len < 0 ? 0 : len] = '\0';
    CU_ASSERT_STRING_EQUAL(buf, strchr(v.data[i], '-') + 1);
    g_free(child);
  }
  g_regex_unref(party_name);
  deallocate_String_vector(&v);
  zookeeper_close(zh);
  g_free(party);

  group_free(g);
  assert_nothing_left(path);
  g_free(path);
}

/* More members than items: the last member is ACQUIRED with nothing, as
 * kazoo's all_partitions[2::3] is empty. */
static void test_more_members_than_items(void) {
  char *path = zkt_path("few");
  group *g = group_new();
  const char *const two[] = {"y", "x"};
  join_items(g, path, "alpha", NULL, two, 2);
  join_items(g, path, "bravo", NULL, two, 2);
  join_items(g, path, "charlie", NULL, two, 2);
  const char *const want[] = {"x", "y", ""};
  CU_ASSERT_TRUE(wait_split(g, want));
  char **items = NULL;
  size_t n = 1;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_partitioner_items(g->m[2].p, &items, &n));
  CU_ASSERT_EQUAL(n, 0);
  CU_ASSERT_PTR_NULL(items ? items[0] : "not NULL-terminated");
  zkrc_strv_free(items);
  CU_ASSERT_EQUAL(g->overlaps, 0);
  group_free(g);
  assert_nothing_left(path);
  g_free(path);
}

/* bravo leaves: after the debounce alpha and charlie take its items, split
 * as kazoo splits ten items between two. */
static void test_member_leaves(void) {
  char *path = zkt_path("leave");
  group *g = group_new();
  join(g, path, "alpha", NULL);
  member *bravo = join(g, path, "bravo", NULL);
  join(g, path, "charlie", NULL);
  const char *const three[] = {ALPHA_OF_3, BRAVO_OF_3, CHARLIE_OF_3};
  CU_ASSERT_TRUE_FATAL(wait_split(g, three));
  /* bravo's application stops using its items, then leaves (finish). */
  g_mutex_lock(&g->mu);
  g_clear_pointer(&bravo->owned, g_free);
  bravo->last = 0;
  g_mutex_unlock(&g->mu);
  int64_t left_at = zkt_now_ms();
  leave(bravo);
  const char *const two[] = {ALPHA_OF_2, NULL, CHARLIE_OF_2};
  CU_ASSERT_TRUE(wait_split(g, two));
  /* Not before the party had been still for the time boundary. */
  CU_ASSERT_TRUE(g->m[0].acquired_at_ms - left_at >= BOUNDARY_MS);
  CU_ASSERT_TRUE(g->m[2].acquired_at_ms - left_at >= BOUNDARY_MS);
  printf("\n  rebalanced %" G_GINT64_FORMAT " ms after bravo left "
         "(time boundary %d ms) ",
         MAX(g->m[0].acquired_at_ms, g->m[2].acquired_at_ms) - left_at,
         BOUNDARY_MS);
  CU_ASSERT_EQUAL(g->overlaps, 0);
  group_free(g);
  assert_nothing_left(path);
  g_free(path);
}

/* --------------------------------------------------------------- expiry */

/* bravo, through the proxy, is cut off past its session timeout.  Its
 * lease runs out: it is told FAILURE; the servers expire its session; then
 * alpha and charlie take its items.  A new partitioner for bravo then gets
 * its share back.  @p ignore_failure: the control, a
 * bravo that keeps using its items after FAILURE. */
static int cut_off_bravo(gboolean ignore_failure) {
  char *path = zkt_path(ignore_failure ? "expiry-control" : "expiry");
  group *g = group_new();
  join(g, path, "alpha", NULL);
  member *bravo =
      join(g, path, "bravo", zkt_session_knowing_tick(2000, 0, NULL));
  bravo->ignore_failure = ignore_failure;
  join(g, path, "charlie", NULL);
  const char *const three[] = {ALPHA_OF_3, BRAVO_OF_3, CHARLIE_OF_3};
  CU_ASSERT_TRUE_FATAL(wait_split(g, three));
  int64_t before[3];
  const char *bravos[] = {"q-10", "q-4", "q-7"};
  for (int i = 0; i < 3; i++)
    before[i] = holder(g->m[0].s, path, bravos[i], NULL, NULL);

  int64_t cut_at = zkt_now_ms();
  CU_ASSERT_EQUAL(zkrc_proxy_blackhole(zkt_ensemble(), 0, 3 * 2000 + 1000), 0);
  const char *const two[] = {ALPHA_OF_2, NULL, CHARLIE_OF_2};
  CU_ASSERT_TRUE(wait_split(g, two));
  g_mutex_lock(&g->mu);
  int64_t failed = bravo->failed_at_ms;
  int64_t taken = MIN(g->m[0].acquired_at_ms, g->m[2].acquired_at_ms);
  int overlaps = g->overlaps;
  g_mutex_unlock(&g->mu);
  CU_ASSERT_TRUE(failed > 0 && failed < taken);
  /* Why: the session's lease ran out (no code of ZooKeeper's). */
  g_mutex_lock(&g->mu);
  ZKT_ASSERT_RC(ZKRC_ESESSIONLOST, bravo->fail_reason);
  CU_ASSERT_EQUAL(bravo->fail_zk, ZOK);
  g_mutex_unlock(&g->mu);
  CU_ASSERT_EQUAL(zkrc_partitioner_get_state(bravo->p),
                  ZKRC_PARTITIONER_FAILURE);
  printf("\n  %scut at 0: bravo told FAILURE at %" G_GINT64_FORMAT
         " ms, its items taken at %" G_GINT64_FORMAT " ms, overlaps %d ",
         ignore_failure ? "control: " : "", failed ? failed - cut_at : -1,
         taken - cut_at, overlaps);
  /* Fencing: each of bravo's items has a new holder with a larger token. */
  for (int i = 0; i < 3; i++) {
    char *id = NULL;
    int64_t after = holder(g->m[0].s, path, bravos[i], &id, NULL);
    CU_ASSERT_TRUE(after > before[i]);
    CU_ASSERT_STRING_EQUAL(id ? id : "",
                           listed(ALPHA_OF_2, bravos[i]) ? "alpha" : "charlie");
    g_free(id);
  }
  zkrc_proxy_blackhole(zkt_ensemble(), 0, 0);
  if (!ignore_failure) {
    /* FAILURE is final: bravo takes part again as a new partitioner. */
    leave(bravo);
    g_mutex_lock(&g->mu);
    bravo->last = 0;
    g_mutex_unlock(&g->mu);
    int n = g->n;
    g->n = 1; /* bravo's place */
    join(g, path, "bravo", NULL);
    g->n = n;
    CU_ASSERT_TRUE(wait_split(g, three));
    CU_ASSERT_EQUAL(g->overlaps, 0);
  }
  group_free(g);
  assert_nothing_left(path);
  g_free(path);
  return overlaps;
}

static void test_expired_member_is_told_first(void) {
  CU_ASSERT_EQUAL(cut_off_bravo(FALSE), 0);
}

/* The control: the overlap check does see a member that keeps using its
 * items after FAILURE (its three items were given to the others). */
static void test_control_ignoring_failure_overlaps(void) {
  CU_ASSERT_EQUAL(cut_off_bravo(TRUE), 3);
}

/* An item's lock node deleted behind a member's back (an operator): the
 * lock is lost, so the member is told FAILURE, leaves the party and gives
 * up its other items. */
static void test_lost_lock_is_failure(void) {
  char *path = zkt_path("lost-lock");
  group *g = group_new();
  const char *const abc[] = {"c", "a", "b"};
  member *m = join_items(g, path, "solo", NULL, abc, 3);
  const char *const want[] = {"a,b,c"};
  CU_ASSERT_TRUE_FATAL(wait_split(g, want));
  char *node = NULL;
  holder(m->s, path, "b", NULL, &node);
  CU_ASSERT_PTR_NOT_NULL_FATAL(node);
  char *full = g_strdup_printf("%s/locks/b/%s", path, node);
  zhandle_t *zh =
      zkt_raw_to(zkrc_ensemble_direct_connect_string(zkt_ensemble()));
  CU_ASSERT_EQUAL(zoo_delete(zh, full, -1), ZOK);
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_partitioner_wait(m->p, ZKRC_PARTITIONER_FAILURE, WAIT_MS));
  CU_ASSERT_EQUAL(zkrc_partitioner_get_state(m->p), ZKRC_PARTITIONER_FAILURE);
  char **items = NULL;
  ZKT_ASSERT_RC(ZKRC_ESTATE, zkrc_partitioner_items(m->p, &items, NULL));
  CU_ASSERT_EQUAL(zkrc_partitioner_lease_remaining(m->p), 0);
  char *party = g_strconcat(path, "/party", NULL);
  CU_ASSERT_TRUE(zkt_wait_children_or_gone(zh, party, 0, 10000));
  char *a = g_strconcat(path, "/locks/a", NULL);
  CU_ASSERT_TRUE(zkt_wait_children_or_gone(zh, a, 0, 10000));
  CU_ASSERT_TRUE(wait_told(g, m, ZKRC_PARTITIONER_FAILURE));
  g_mutex_lock(&g->mu);
  CU_ASSERT_PTR_NULL(m->owned); /* the application stopped */
  /* Why: the item's lock was lost, its node deleted. */
  ZKT_ASSERT_RC(ZKRC_ELOCKLOST, m->fail_reason);
  CU_ASSERT_EQUAL(m->fail_zk, ZNONODE);
  g_mutex_unlock(&g->mu);
  group_free(g);
  zookeeper_close(zh);
  assert_nothing_left(path);
  g_free(a);
  g_free(party);
  g_free(full);
  g_free(node);
  g_free(path);
}

/* ---------------------------------------------------------------- kazoo */

/* The items of the last "acquired" line of kazoo's member within
 * WAIT_MS that equals @p want (NULL when none did). */
static gboolean kazoo_acquires(peer *k, const char *want) {
  int64_t deadline = zkt_now_ms() + WAIT_MS;
  while (zkt_now_ms() < deadline) {
    char *line = peer_next(k, (int)(deadline - zkt_now_ms()));
    const char *rest;
    gboolean match =
        line && line_is(line, "acquired", &rest) && strcmp(rest, want) == 0;
    if (line)
      fprintf(stderr, "\nkazoo: %s", line);
    g_free(line);
    if (match)
      return TRUE;
    if (line == NULL)
      break;
  }
  return FALSE;
}

static void delete_tree(zhandle_t *zh, const char *path) {
  struct String_vector v = {0, NULL};
  if (zoo_get_children(zh, path, 0, &v) == ZOK) {
    for (int i = 0; i < v.count; i++) {
      char *child = g_strdup_printf("%s/%s", path, v.data[i]);
      delete_tree(zh, child);
      g_free(child);
    }
    deallocate_String_vector(&v);
  }
  zoo_delete(zh, path, -1);
}

/* A kazoo SetPartitioner member (bravo) and two of ours share a party: the
 * same split as among three of ours; the locks exclude each other both
 * ways; when kazoo's member finishes, ours take its items. */
static void test_kazoo_member(void) {
  kill_live_peers();
  char *path = zkt_path("kazoo");
  char *boundary = g_strdup_printf("%d", BOUNDARY_MS);
  GString *list = g_string_new(ITEMS[0]);
  for (size_t i = 1; i < N_ITEMS; i++)
    g_string_append_printf(list, ",%s", ITEMS[i]);
  char *items = g_string_free(list, FALSE);
  peer *k = kazoo_peer("kazoo", "partition", path, "bravo", boundary, items,
                       (char *)NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(k);
  group *g = group_new();
  join(g, path, "alpha", NULL);
  g->m[g->n++].id = "bravo (kazoo's)";
  join(g, path, "charlie", NULL);
  CU_ASSERT_TRUE(kazoo_acquires(k, BRAVO_OF_3));
  const char *const three[] = {ALPHA_OF_3, NULL, CHARLIE_OF_3};
  CU_ASSERT_TRUE(wait_split(g, three));

  /* kazoo's lock on q-4 (its "<uuid hex>__lock__<n>" node) stops ours... */
  char *id = NULL, *node = NULL;
  holder(g->m[0].s, path, "q-4", &id, &node);
  CU_ASSERT_TRUE(node && g_regex_match_simple("^[0-9a-f]{32}__lock__[0-9]{10}$",
                                              node, 0, 0));
  g_free(id);
  g_free(node);
  char *q4 = g_strconcat(path, "/locks/q-4", NULL);
  zkrc_lock *lk = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_new(&lk, g->m[0].s, q4, NULL));
  ZKT_ASSERT_RC(ZKRC_ELOCKED, zkrc_lock_acquire(lk, ZKRC_NO_WAIT));
  zkrc_lock_free(lk);
  g_free(q4);
  /* ... and our lock on q-1 stops a kazoo Lock. */
  char *q1 = g_strconcat(path, "/locks/q-1", NULL);
  peer *h = kazoo_peer("kazoo-hold", "hold", q1, "intruder", "0", (char *)NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(h);
  char *line = peer_next(h, START_MS);
  CU_ASSERT_STRING_EQUAL(line ? line : "", "timeout");
  g_free(line);
  CU_ASSERT_EQUAL(peer_finish(h, STEP_MS), 3);
  g_free(q1);

  /* kazoo's member finishes: ours take its items. */
  CU_ASSERT_TRUE(peer_send(k, "quit"));
  char *finished = peer_expect(k, "finished", STEP_MS);
  CU_ASSERT_PTR_NOT_NULL(finished);
  g_free(finished);
  CU_ASSERT_EQUAL(peer_finish(k, STEP_MS), 0);
  const char *const two[] = {ALPHA_OF_2, NULL, CHARLIE_OF_2};
  CU_ASSERT_TRUE(wait_split(g, two));
  CU_ASSERT_EQUAL(g->overlaps, 0);
  group_free(g);

  /* kazoo made <path>, locks and party persistent (ensure_path): no
   * ephemeral node may be left in them; then they go. */
  zhandle_t *zh =
      zkt_raw_to(zkrc_ensemble_direct_connect_string(zkt_ensemble()));
  char *party = g_strconcat(path, "/party", NULL);
  CU_ASSERT_TRUE(zkt_wait_children_or_gone(zh, party, 0, 10000));
  for (size_t i = 0; i < N_ITEMS; i++) {
    char *dir = g_strdup_printf("%s/locks/%s", path, ITEMS[i]);
    CU_ASSERT_TRUE(zkt_wait_children_or_gone(zh, dir, 0, 10000));
    g_free(dir);
  }
  delete_tree(zh, path);
  zookeeper_close(zh);
  g_free(party);
  g_free(items);
  g_free(boundary);
  g_free(path);
}

/* The constructor never waits for the network: a party whose directory
 * the servers refuse (its parent's ACL lets us only read) is a partitioner
 * made at once, then told FAILURE with the join's reason; nothing is
 * created. */
static void test_refused_join_is_failure(void) {
  char *path = zkt_path("refused");
  zhandle_t *zh =
      zkt_raw_to(zkrc_ensemble_direct_connect_string(zkt_ensemble()));
  /* /zkt may be a container the servers remove once empty (the recipes
   * make it so): made again when it went meanwhile. */
  int rc = ZNONODE;
  for (int i = 0; i < 3 && rc == ZNONODE; i++) {
    rc = zoo_create(zh, path, NULL, -1, &ZOO_READ_ACL_UNSAFE, 0, NULL, 0);
    if (rc == ZNONODE)
      zoo_create(zh, "/zkt", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
  }
  CU_ASSERT_EQUAL_FATAL(rc, ZOK);
  char *party = g_strconcat(path, "/work", NULL);
  group *g = group_new();
  int64_t start = zkt_now_ms();
  member *m = join(g, party, "solo", NULL);
  int64_t took = zkt_now_ms() - start;
  CU_ASSERT_TRUE(took < 1000); /* no round trip waited for (generous) */
  zkrc_partitioner_state st = zkrc_partitioner_get_state(m->p);
  CU_ASSERT_TRUE(st == ZKRC_PARTITIONER_ALLOCATING ||
                 st == ZKRC_PARTITIONER_FAILURE); /* told already: quick */
  ZKT_ASSERT_RC(ZKRC_ESTATE, zkrc_partitioner_wait(
                                 m->p, ZKRC_PARTITIONER_ACQUIRED, WAIT_MS));
  CU_ASSERT_TRUE(wait_told(g, m, ZKRC_PARTITIONER_FAILURE));
  g_mutex_lock(&g->mu);
  ZKT_ASSERT_RC(ZKRC_ENOAUTH, m->fail_reason);
  CU_ASSERT_EQUAL(m->fail_zk, ZNOAUTH);
  g_mutex_unlock(&g->mu);
  CU_ASSERT_EQUAL(zkt_child_count(zh, path), 0);
  group_free(g);
  CU_ASSERT_EQUAL(zoo_delete(zh, path, -1), ZOK);
  zookeeper_close(zh);
  g_free(party);
  g_free(path);
}

/* Party @p arg has one member (read now). */
static int one_member(void *arg) {
  zhandle_t *zh =
      zkt_raw_to(zkrc_ensemble_direct_connect_string(zkt_ensemble()));
  int one = zkt_child_count(zh, arg) == 1;
  zookeeper_close(zh);
  return one;
}

/* Freed whatever the session's state: after zkrc_session_close(), and
 * while the join is still under way (the session not connected yet). */
static void test_free_whatever_the_session(void) {
  char *path = zkt_path("free-closed");
  char *party = g_strconcat(path, "/party", NULL);
  zkrc_session *s = zkt_session();
  zkrc_partitioner *p = NULL;
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_partitioner_new(&p, s, path, ITEMS, N_ITEMS, NULL));
  CU_ASSERT_TRUE(zkt_wait_for(one_member, party, 10000)); /* joined */
  zkrc_session_close(s);
  ZKT_ASSERT_RC(ZKRC_ESTATE,
                zkrc_partitioner_wait(p, ZKRC_PARTITIONER_ACQUIRED, WAIT_MS));
  zkrc_partitioner_free(p);
  assert_nothing_left(path);
  /* A session still connecting: the join waits for it; the free not. */
  char *other = zkt_path("free-joining");
  zkrc_session_options o;
  zkrc_session_options_init(&o);
  s = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_new(&s, zkt_hosts(), &o));
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_partitioner_new(&p, s, other, ITEMS, N_ITEMS, NULL));
  int64_t start = zkt_now_ms();
  zkrc_partitioner_free(p);
  CU_ASSERT_TRUE(zkt_now_ms() - start < 1000); /* no round trip waited */
  zkrc_session_close(s);
  /* The join may have made the containers before the close: remove them
   * (a container that never had a child is never removed by the servers). */
  zhandle_t *zh =
      zkt_raw_to(zkrc_ensemble_direct_connect_string(zkt_ensemble()));
  char *other_party = g_strconcat(other, "/party", NULL);
  zoo_delete(zh, other_party, -1);
  zoo_delete(zh, other, -1);
  CU_ASSERT_FALSE(zkt_exists(zh, other));
  zookeeper_close(zh);
  g_free(other_party);
  g_free(other);
  g_free(party);
  g_free(path);
}

/* ------------------------------------------------------------ free_async */

/* A partitioner freed with zkrc_partitioner_free_async() (ending.h): its
 * trigger is ACQUIRED. */
static void ending_event(zkrc_partitioner *p, const zkrc_partitioner_event *ev,
                         void *arg) {
  zkt_ending *e = arg;
  if (zkt_ending_event(e, ev->type == ZKRC_PARTITIONER_ACQUIRED))
    zkt_ending_freed(e, zkrc_partitioner_free_async(p, zkt_ending_done, e));
}

static zkrc_partitioner *ending_new(zkrc_session *s, const char *path,
                                    zkt_ending *e) {
  zkrc_partitioner_options o;
  zkrc_partitioner_options_init(&o);
  o.identifier = "solo";
  o.time_boundary_ms = BOUNDARY_MS;
  o.on_event = ending_event;
  o.event_arg = e;
  zkrc_partitioner *p = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_partitioner_new(&p, s, path, ITEMS, 3, &o));
  return p;
}

/* Nodes of ours under @p path now: the party's, the item locks' (ITEMS[0..3)). */
static int our_nodes(zhandle_t *zh, const char *path) {
  char *party = g_strconcat(path, "/party", NULL);
  int n = zkt_nodes_left(zh, party);
  g_free(party);
  for (int i = 0; i < 3; i++) {
    char *dir = g_strdup_printf("%s/locks/%s", path, ITEMS[i]);
    n += zkt_nodes_left(zh, dir);
    g_free(dir);
  }
  return n;
}

/* free_async from another thread and from the partitioner's own callback:
 * ZKRC_OK at once, done after the last event (the ACQUIRED) and after the
 * callback that called it, nothing told after done, and by done our nodes
 * are gone (the party's and the item locks', deleted: the connection is
 * up).  A party change after done (a member joining, which would make a
 * live member RELEASE) tells nothing either. */
static void free_async_case(gboolean in_callback) {
  char *path = zkt_path(in_callback ? "free-async-cb" : "free-async");
  zkrc_session *s = zkt_session();
  zhandle_t *zh =
      zkt_raw_to(zkrc_ensemble_direct_connect_string(zkt_ensemble()));
  zkt_ending *e = zkt_ending_new(in_callback);
  zkrc_partitioner *p = ending_new(s, path, e);
  CU_ASSERT_TRUE_FATAL(zkt_wait_for(zkt_ending_triggered, e, WAIT_MS));
  if (!in_callback) { /* (freed by the callback, they may be gone now) */
    CU_ASSERT_EQUAL(our_nodes(zh, path), 4); /* the party node, 3 locks */
    int64_t start = zkt_now_ms();
    zkt_ending_freed(e, zkrc_partitioner_free_async(p, zkt_ending_done, e));
    CU_ASSERT_TRUE(zkt_now_ms() - start < 500); /* never waits */
  }
  CU_ASSERT_TRUE_FATAL(zkt_ending_wait_done(e, WAIT_MS));
  g_mutex_lock(&e->mu);
  ZKT_ASSERT_RC(ZKRC_OK, e->free_rc);
  /* From its own callback: done only after that callback returned. */
  CU_ASSERT_TRUE(!in_callback || e->done_after_callback);
  CU_ASSERT_EQUAL(e->triggers, 1);
  g_mutex_unlock(&e->mu);
  CU_ASSERT_EQUAL(our_nodes(zh, path), 0); /* gone by done */
  /* A party change now: nothing more is told. */
  group *g = group_new();
  member *m = join_items(g, path, "other", NULL, ITEMS, 3);
  CU_ASSERT_TRUE(wait_told(g, m, ZKRC_PARTITIONER_ACQUIRED));
  g_mutex_lock(&e->mu);
  CU_ASSERT_EQUAL(e->after_done, 0);
  g_mutex_unlock(&e->mu);
  group_free(g);
  zkrc_session_close(s);
  zookeeper_close(zh);
  zkt_ending_free(e);
  assert_nothing_left(path);
  g_free(path);
}

static void test_free_async_done_last(void) { free_async_case(FALSE); }

static void test_free_async_from_own_callback(void) { free_async_case(TRUE); }

/* free_async before zkrc_session_close() (done still runs, after it) and
 * after it (the partitioner in FAILURE); free after the close is in
 * test_free_whatever_the_session. */
static void test_free_async_around_close(void) {
  char *path = zkt_path("free-async-close");
  for (int after = 0; after < 2; after++) {
    zkrc_session *s = zkt_session();
    zkt_ending *e = zkt_ending_new(FALSE);
    zkrc_partitioner *p = ending_new(s, path, e);
    CU_ASSERT_TRUE_FATAL(zkt_wait_for(zkt_ending_triggered, e, WAIT_MS));
    if (after) {
      zkrc_session_close(s);
      ZKT_ASSERT_RC(ZKRC_ESTATE,
                    zkrc_partitioner_wait(p, ZKRC_PARTITIONER_ACQUIRED, 0));
    }
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_partitioner_free_async(p, zkt_ending_done, e));
    if (!after)
      zkrc_session_close(s);
    CU_ASSERT_TRUE(zkt_ending_wait_done(e, WAIT_MS));
    zkt_ending_free(e);
  }
  assert_nothing_left(path);
  g_free(path);
}

static void test_free_async_bad_input(void) {
  char *path = zkt_path("free-async-bad");
  zkrc_session *s = zkt_session();
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkrc_partitioner_free_async(NULL, zkt_ending_done, NULL));
  zkt_ending *e = zkt_ending_new(FALSE);
  zkrc_partitioner *p = ending_new(s, path, e);
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_partitioner_free_async(p, NULL, NULL));
  /* Nothing changed: it still joins and acquires. */
  CU_ASSERT_TRUE(zkt_wait_for(zkt_ending_triggered, e, WAIT_MS));
  zkrc_partitioner_free(p);
  zkrc_session_close(s);
  zkt_ending_free(e);
  assert_nothing_left(path);
  g_free(path);
}

/* --------------------------------------------- frees that never wait */

/* The connection frozen (the proxy holds every byte) while a member is in
 * the party: its free returns at once, well under the session timeout,
 * and once the connection is back the party node is gone (the delete sent
 * by the free went through). */
static void test_free_while_frozen(void) {
  char *path = zkt_path("free-frozen");
  char *party = g_strconcat(path, "/party", NULL);
  zkrc_session *s = zkt_session_knowing_tick(ZKT_SESSION_TIMEOUT_MS, 0, NULL);
  zkt_ending *e = zkt_ending_new(FALSE);
  zkrc_partitioner *p = ending_new(s, path, e);
  CU_ASSERT_TRUE_FATAL(zkt_wait_for(zkt_ending_triggered, e, WAIT_MS));
  CU_ASSERT_TRUE(one_member(party));
  CU_ASSERT_EQUAL(zkrc_proxy_blackhole(zkt_ensemble(), 0, 800), 0);
  int64_t start = zkt_now_ms();
  zkrc_partitioner_free(p);
  int64_t took = zkt_now_ms() - start;
  printf("\n  free took %" G_GINT64_FORMAT " ms, the connection frozen ", took);
  CU_ASSERT_TRUE(took < ZKT_SESSION_TIMEOUT_MS / 4);
  /* The blackhole ends by itself; then the delete goes through. */
  zhandle_t *zh =
      zkt_raw_to(zkrc_ensemble_direct_connect_string(zkt_ensemble()));
  CU_ASSERT_TRUE(zkt_wait_children(zh, party, 0, WAIT_MS));
  zookeeper_close(zh);
  zkrc_session_close(s);
  zkt_ending_free(e);
  assert_nothing_left(path);
  g_free(party);
  g_free(path);
}

/* The join's first request takes effect but its reply is lost with the
 * connection (the proxy drops it): the join tries again once the
 * connection is back, after its pause, and the member joins and
 * acquires.  The session saw the connection go (the path was taken). */
static void test_join_retried_after_connection_loss(void) {
  char *path = zkt_path("join-retry");
  zkrc_session *s = zkt_session_knowing_tick(ZKT_SESSION_TIMEOUT_MS, 0, NULL);
  uint64_t lost_before = zkt_suspensions(s);
  CU_ASSERT_EQUAL(zkrc_proxy_drop_after_next_request(zkt_ensemble(), 0), 0);
  zkt_ending *e = zkt_ending_new(FALSE);
  zkrc_partitioner *p = ending_new(s, path, e);
  CU_ASSERT_TRUE(zkt_wait_for(zkt_ending_triggered, e, WAIT_MS));
  CU_ASSERT_EQUAL(zkrc_partitioner_get_state(p), ZKRC_PARTITIONER_ACQUIRED);
  CU_ASSERT_TRUE(zkt_suspensions(s) > lost_before);
  zkrc_partitioner_free(p);
  zkrc_session_close(s);
  zkt_ending_free(e);
  assert_nothing_left(path);
  g_free(path);
}

/* ------------------------------------------------------------ no thread */

/* Threads of this process now (entries of /proc/self/task). */
static int thread_count(void) {
  GDir *d = g_dir_open("/proc/self/task", 0, NULL);
  int n = 0;
  if (d == NULL)
    return -1;
  while (g_dir_read_name(d))
    n++;
  g_dir_close(d);
  return n;
}

/* The control's thread: parked until told to go, as a thread waiting for
 * a reply would be. */
static gpointer park(gpointer queue) {
  g_async_queue_pop(queue);
  return NULL;
}

static int registration_done(void *arg) {
  return zkrc_service_registration_wait(arg, ZKRC_NO_WAIT) == ZKRC_OK;
}

/* zkrc_partitioner_new() and zkrc_service_registration_new() (a STATIC
 * node: created in the background) make no thread: the process's thread
 * count is the same after six of each, made while every round trip takes
 * 0.4 s (the proxy delays), when a thread each would still be waiting
 * for its first reply.  The control: one thread started here, parked as
 * such a thread would be, is counted. */
static void test_new_makes_no_thread(void) {
  char *path = zkt_path("no-thread");
  char *base = zkt_path("no-thread-svc");
  zkrc_session *s = zkt_session_knowing_tick(10000, 0, NULL);
  CU_ASSERT_EQUAL(zkrc_proxy_delay(zkt_ensemble(), 0, 200), 0);
  int before = thread_count();
  CU_ASSERT_TRUE_FATAL(before > 0);
  zkrc_partitioner *p[6];
  zkrc_service_registration *r[6];
  for (int i = 0; i < 6; i++) {
    char id[16];
    g_snprintf(id, sizeof id, "m%d", i);
    zkrc_partitioner_options o;
    zkrc_partitioner_options_init(&o);
    o.identifier = id;
    ZKT_ASSERT_RC(ZKRC_OK,
                  zkrc_partitioner_new(&p[i], s, path, ITEMS, N_ITEMS, &o));
    zkrc_service_instance *inst =
        zkrc_service_instance_new("svc", id, "127.0.0.1", 80);
    inst->service_type = ZKRC_SERVICE_STATIC;
    ZKT_ASSERT_RC(ZKRC_OK,
                  zkrc_service_registration_new(&r[i], s, base, inst, NULL));
    zkrc_service_instance_free(inst);
  }
  int during = thread_count();
  /* Still under way: no reply yet (a round trip takes 0.4 s). */
  ZKT_ASSERT_RC(ZKRC_ETIMEDOUT,
                zkrc_service_registration_wait(r[0], ZKRC_NO_WAIT));
  GAsyncQueue *go = g_async_queue_new();
  GThread *control = g_thread_new("control", park, go);
  int with_control = thread_count();
  g_async_queue_push(go, GINT_TO_POINTER(1));
  g_thread_join(control);
  g_async_queue_unref(go);
  printf("\n  threads: %d before, %d after 12 objects, %d with the control ",
         before, during, with_control);
  CU_ASSERT_EQUAL(during, before);
  CU_ASSERT_EQUAL(with_control, during + 1);
  /* And the work is done all the same. */
  CU_ASSERT_EQUAL(zkrc_proxy_delay(zkt_ensemble(), 0, 0), 0);
  for (int i = 0; i < 6; i++)
    CU_ASSERT_TRUE(zkt_wait_for(registration_done, r[i], WAIT_MS));
  char *party = g_strconcat(path, "/party", NULL);
  zhandle_t *zh =
      zkt_raw_to(zkrc_ensemble_direct_connect_string(zkt_ensemble()));
  CU_ASSERT_EQUAL(zkt_wait_children(zh, party, 6, WAIT_MS), 1);
  for (int i = 0; i < 6; i++) {
    zkrc_partitioner_free(p[i]);
    zkrc_service_unregister(r[i]);
  }
  zkrc_session_close(s);
  zookeeper_close(zh);
  assert_nothing_left(path);
  assert_nothing_left(base);
  g_free(party);
  g_free(base);
  g_free(path);
}

/* ------------------------------------------------------------ bad input */

static int new_with(zkrc_session *s, const char *path, const char *const *items,
                    size_t n, const char *id, int boundary) {
  zkrc_partitioner_options o;
  zkrc_partitioner_options_init(&o);
  o.identifier = id;
  o.time_boundary_ms = boundary;
  zkrc_partitioner *p = (zkrc_partitioner *)&o; /* must be reset to NULL */
  int rc = zkrc_partitioner_new(&p, s, path, items, n, &o);
  CU_ASSERT_PTR_NULL(p);
  return rc;
}

static void test_bad_input(void) {
  char *path = zkt_path("bad");
  zkrc_session *s = zkt_session();
  const char *const slash[] = {"a", "b/c"};
  const char *const empty[] = {"a", ""};
  const char *const dot[] = {".."};
  const char *const twice[] = {"x", "y", "x"};
  ZKT_ASSERT_RC(ZKRC_EINVAL, new_with(NULL, path, ITEMS, N_ITEMS, "a", 0));
  ZKT_ASSERT_RC(ZKRC_EINVAL, new_with(s, "relative", ITEMS, N_ITEMS, "a", 0));
  ZKT_ASSERT_RC(ZKRC_EINVAL, new_with(s, "/", ITEMS, N_ITEMS, "a", 0));
  ZKT_ASSERT_RC(ZKRC_EINVAL, new_with(s, path, NULL, 2, "a", 0));
  ZKT_ASSERT_RC(ZKRC_EINVAL, new_with(s, path, slash, 2, "a", 0));
  ZKT_ASSERT_RC(ZKRC_EINVAL, new_with(s, path, empty, 2, "a", 0));
  ZKT_ASSERT_RC(ZKRC_EINVAL, new_with(s, path, dot, 1, "a", 0));
  ZKT_ASSERT_RC(ZKRC_EINVAL, new_with(s, path, twice, 3, "a", 0));
  ZKT_ASSERT_RC(ZKRC_EINVAL, new_with(s, path, ITEMS, N_ITEMS, "x/y", 0));
  ZKT_ASSERT_RC(ZKRC_EINVAL, new_with(s, path, ITEMS, N_ITEMS, "", 0));
  ZKT_ASSERT_RC(ZKRC_EINVAL, new_with(s, path, ITEMS, N_ITEMS, "a", -1));
  /* A NULL among several items (they were sorted before they were checked:
   * a crash), and identifiers no path may hold (refused by the servers once
   * the party's containers were made, which then stayed for ever). */
  const char *const with_null[] = {"a", NULL, "b"};
  ZKT_ASSERT_RC(ZKRC_EINVAL, new_with(s, path, with_null, 3, "a", 0));
  ZKT_ASSERT_RC(ZKRC_EINVAL, new_with(s, path, ITEMS, N_ITEMS, "tab\there", 0));
  ZKT_ASSERT_RC(ZKRC_EINVAL, new_with(s, path, ITEMS, N_ITEMS, "bad\xff", 0));
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                new_with(s, path, ITEMS, N_ITEMS, "c1\xc2\x85", 0));
  zkrc_partitioner_options raw;
  memset(&raw, 0, sizeof raw); /* not initialized */
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkrc_partitioner_new(NULL, s, path, ITEMS, N_ITEMS, NULL));
  zkrc_partitioner *p = NULL;
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkrc_partitioner_new(&p, s, path, ITEMS, N_ITEMS, &raw));
  zhandle_t *zh =
      zkt_raw_to(zkrc_ensemble_direct_connect_string(zkt_ensemble()));
  CU_ASSERT_FALSE(zkt_exists(zh, path));       /* nothing was created */
  CU_ASSERT(zkt_child_count(zh, "/zkt") <= 0); /* nor beside it */

  /* Calls out of place, on a partitioner still debouncing (30 s). */
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_partitioner_new(&p, s, path, NULL, 0, NULL));
  CU_ASSERT_EQUAL(zkrc_partitioner_get_state(p), ZKRC_PARTITIONER_ALLOCATING);
  ZKT_ASSERT_RC(ZKRC_ESTATE, zkrc_partitioner_release_set(p));
  char **items = NULL;
  ZKT_ASSERT_RC(ZKRC_ESTATE, zkrc_partitioner_items(p, &items, NULL));
  CU_ASSERT_PTR_NULL(items);
  CU_ASSERT_EQUAL(zkrc_partitioner_lease_remaining(p), 0);
  ZKT_ASSERT_RC(ZKRC_EINVAL,
                zkrc_partitioner_wait(p, ZKRC_PARTITIONER_ACQUIRED, -5));
  ZKT_ASSERT_RC(ZKRC_ETIMEDOUT,
                zkrc_partitioner_wait(p, ZKRC_PARTITIONER_ACQUIRED, 50));
  /* ZKRC_NO_WAIT looks once. */
  ZKT_ASSERT_RC(
      ZKRC_ETIMEDOUT,
      zkrc_partitioner_wait(p, ZKRC_PARTITIONER_ACQUIRED, ZKRC_NO_WAIT));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_partitioner_wait(p, ZKRC_PARTITIONER_ALLOCATING,
                                               ZKRC_NO_WAIT));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_partitioner_release_set(NULL));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_partitioner_items(NULL, &items, NULL));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_partitioner_items(p, NULL, NULL));
  CU_ASSERT_STRING_EQUAL(zkrc_partitioner_state_name(99), "unknown");
  CU_ASSERT_STRING_EQUAL(zkrc_partitioner_state_name(0), "unknown");
  CU_ASSERT_STRING_EQUAL(zkrc_partitioner_state_name(ZKRC_PARTITIONER_RELEASE),
                         "release");
  CU_ASSERT_EQUAL(ZKRC_PARTITIONER_ALLOCATING, 1);
  /* The default identifier is every recipe's: "<hostname>:<pid>". */
  char *suffix = g_strdup_printf(":%ld", (long)getpid());
  CU_ASSERT_TRUE(g_str_has_suffix(zkrc_partitioner_identifier(p), suffix));
  g_free(suffix);
  zkrc_partitioner_free(p);
  zkrc_partitioner_free(NULL);
  zookeeper_close(zh);
  zkrc_session_close(s);
  assert_nothing_left(path);
  g_free(path);
}

static void add_suites(void) {
  zkt_configure(1, 1);
  ZKT_SUITE("partitioner", {"bad_input", test_bad_input},
            {"split_of_three", test_split_of_three},
            {"more_members_than_items", test_more_members_than_items},
            {"member_leaves", test_member_leaves},
            {"expired_member_is_told_first", test_expired_member_is_told_first},
            {"control_ignoring_failure_overlaps",
             test_control_ignoring_failure_overlaps},
            {"lost_lock_is_failure", test_lost_lock_is_failure},
            {"kazoo_member", test_kazoo_member},
            {"refused_join_is_failure", test_refused_join_is_failure},
            {"free_whatever_the_session", test_free_whatever_the_session},
            {"free_async_done_last", test_free_async_done_last},
            {"free_async_from_own_callback", test_free_async_from_own_callback},
            {"free_async_around_close", test_free_async_around_close},
            {"free_async_bad_input", test_free_async_bad_input},
            {"free_while_frozen", test_free_while_frozen},
            {"join_retried_after_connection_loss",
             test_join_retried_after_connection_loss},
            {"new_makes_no_thread", test_new_makes_no_thread});
}

int main(void) { return zkt_run("test_partitioner", add_suites); }
