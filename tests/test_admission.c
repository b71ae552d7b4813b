/*
 * Admission (src/queue/admission.c) on in-memory listings, without a server:
 * who holds and whom each waiter watches, for listings mixing dialects,
 * foreign and malformed names, sequence numbers past the wrap, duplicates,
 * and a node of ours that is gone; then random listings, checked for the
 * properties every policy must keep (admission as the policy says, a
 * waiter watches a node ahead of it, and following the watches from any
 * waiter leads to an admitted contender: nobody waits for nothing).
 * Then the contender queue's moves (src/queue/queue_decide.h): what a contender
 * does after a listing, from the listing, its name and its state, and
 * after the re-check that follows a reconnection at the front.
 */
#include "config.h"

#include <string.h>

#include <glib.h>

#include <zookeeper/zookeeper.h>

#include "queue/admission.h"
#include "queue/queue_decide.h"
#include "testutil.h"

/* The table cases use the lock family's markers as the library does
 * (zkrc__lock_markers: our mutex, Curator's InterProcessMutex and
 * InterProcessReadWriteLock, kazoo's Lock, ReadLock and WriteLock); the
 * random listings these read-write dialects. */
static const zkrc__marker rw_markers[] = {
    {"__READ__", ZKRC__CLAIM_SHARED},  {"__WRIT__", ZKRC__CLAIM_EXCLUSIVE},
    {"__rlock__", ZKRC__CLAIM_SHARED}, {"__lock__", ZKRC__CLAIM_EXCLUSIVE},
    {"lock-", ZKRC__CLAIM_EXCLUSIVE},  {NULL, 0}};

typedef struct admission_case {
  const char *what;
  const char *listing[8]; /* NULL-terminated */
  const char *me;
  int rw; /* readers_writers, else exclusive */
  zkrc__verdict_kind kind;
  const char *watch; /* WAIT: the node to watch */
  int position;
} admission_case;

static const admission_case cases[] = {
    {"alone: admitted",
     {"_c_a-lock-0000000007", NULL},
     "_c_a-lock-0000000007",
     0,
     ZKRC__ADMITTED,
     NULL,
     0},
    {"third in line: watches the second",
     {"_c_c-lock-0000000003", "_c_a-lock-0000000001", "_c_b-lock-0000000002",
      NULL},
     "_c_c-lock-0000000003",
     0,
     ZKRC__WAIT,
     "_c_b-lock-0000000002",
     2},
    {"our node gone: absent",
     {"_c_a-lock-0000000001", NULL},
     "_c_z-lock-0000000009",
     0,
     ZKRC__ABSENT,
     NULL,
     -1},
    {"empty directory: absent",
     {NULL},
     "_c_z-lock-0000000009",
     0,
     ZKRC__ABSENT,
     NULL,
     -1},
    {"foreign and malformed names are not contenders",
     {"keep", "_c_x-lock-12", "_c_y-lock-00000000x1", "config0000000001",
      "_c_w-lock--0000000001", "_c_me-lock-0000000005", NULL},
     "_c_me-lock-0000000005",
     0,
     ZKRC__ADMITTED,
     NULL,
     0},
    {"kazoo's and Curator's nodes are ordered together",
     {"9f2c__lock__0000000004", "_c_me-lock-0000000006", "_c_q-lock-0000000005",
      NULL},
     "_c_me-lock-0000000006",
     0,
     ZKRC__WAIT,
     "_c_q-lock-0000000005",
     2},
    {"past the wrap: negative sequences come first",
     {"_c_old-lock-2147483647", "_c_me-lock--2147483648", NULL},
     "_c_me-lock--2147483648",
     0,
     ZKRC__ADMITTED,
     NULL,
     0},
    {"past the wrap: behind a negative sequence",
     {"_c_a-lock--2147483647", "_c_me-lock-0000000001", "_c_b-lock--2147483648",
      NULL},
     "_c_me-lock-0000000001",
     0,
     ZKRC__WAIT,
     "_c_a-lock--2147483647",
     2},
    {"duplicates count once",
     {"_c_a-lock-0000000001", "_c_a-lock-0000000001", "_c_me-lock-0000000002",
      NULL},
     "_c_me-lock-0000000002",
     0,
     ZKRC__WAIT,
     "_c_a-lock-0000000001",
     1},
    {"readers ahead of a reader: admitted",
     {"_c_a-__READ__0000000001", "_c_b-__READ__0000000002",
      "_c_me-__READ__0000000003", NULL},
     "_c_me-__READ__0000000003",
     1,
     ZKRC__ADMITTED,
     NULL,
     2},
    {"a reader waits for the nearest writer ahead",
     {"_c_a-__READ__0000000001", "_c_w-__WRIT__0000000002",
      "_c_b-__READ__0000000003", "_c_me-__READ__0000000004", NULL},
     "_c_me-__READ__0000000004",
     1,
     ZKRC__WAIT,
     "_c_w-__WRIT__0000000002",
     3},
    {"a writer waits for the contender just before it",
     {"_c_a-__READ__0000000001", "_c_b-__READ__0000000002",
      "_c_me-__WRIT__0000000003", NULL},
     "_c_me-__WRIT__0000000003",
     1,
     ZKRC__WAIT,
     "_c_b-__READ__0000000002",
     2},
    {"a writer first in line: admitted",
     {"_c_me-__WRIT__0000000001", "_c_b-__READ__0000000002", NULL},
     "_c_me-__WRIT__0000000001",
     1,
     ZKRC__ADMITTED,
     NULL,
     0},
    {"kazoo's reader behind our mutex node waits for it",
     {"_c_m-lock-0000000001", "ab12__rlock__0000000002", NULL},
     "ab12__rlock__0000000002",
     1,
     ZKRC__WAIT,
     "_c_m-lock-0000000001",
     1},
    {"a reader behind kazoo's write lock waits for it",
     {"ab12__lock__0000000001", "_c_me-__READ__0000000002", NULL},
     "_c_me-__READ__0000000002",
     1,
     ZKRC__WAIT,
     "ab12__lock__0000000001",
     1},
    {"a reader behind our mutex node waits for it",
     {"_c_m-lock-0000000001", "_c_r-__READ__0000000002",
      "_c_me-__READ__0000000003", NULL},
     "_c_me-__READ__0000000003",
     1,
     ZKRC__WAIT,
     "_c_m-lock-0000000001",
     2},
    {"a reader ahead of a mutex node is admitted",
     {"_c_me-__READ__0000000001", "_c_m-lock-0000000002", NULL},
     "_c_me-__READ__0000000001",
     1,
     ZKRC__ADMITTED,
     NULL,
     0},
    {"our mutex behind readers waits for the one just before it",
     {"_c_a-__READ__0000000001", "ab12__rlock__0000000002",
      "_c_me-lock-0000000003", NULL},
     "_c_me-lock-0000000003",
     0,
     ZKRC__WAIT,
     "ab12__rlock__0000000002",
     2},
    {"our mutex behind a writer of each dialect waits for the nearest",
     {"_c_w-__WRIT__0000000001", "ab12__lock__0000000002",
      "_c_me-lock-0000000004", NULL},
     "_c_me-lock-0000000004",
     0,
     ZKRC__WAIT,
     "ab12__lock__0000000002",
     2},
    {"readers of both dialects past the wrap are admitted together",
     {"_c_a-__READ__2147483647", "ab12__rlock__-2147483648",
      "_c_me-__READ__-2147483647", NULL},
     "_c_me-__READ__-2147483647",
     1,
     ZKRC__ADMITTED,
     NULL,
     1},
    {"a writer past the wrap is ahead of a reader before it",
     {"_c_me-__READ__2147483647", "_c_w-__WRIT__-2147483648", NULL},
     "_c_me-__READ__2147483647",
     1,
     ZKRC__WAIT,
     "_c_w-__WRIT__-2147483648",
     1},
};

/* A downgrade: the thread's own writer (the policy's argument) does not
 * stop its reader; any other exclusive claim still does. */
static void test_downgrade_excuses_only_our_writer(void) {
  const char *alone[] = {"_c_w-__WRIT__0000000001", "_c_b-__READ__0000000002",
                         "_c_me-__READ__0000000003"};
  zkrc__verdict v = zkrc__admit(
      (char *const *)alone, 3, zkrc__lock_markers, "_c_me-__READ__0000000003",
      zkrc__policy_readers_writers, "_c_w-__WRIT__0000000001");
  CU_ASSERT_EQUAL(v.kind, ZKRC__ADMITTED);
  /* Without the excuse, the same reader waits for that writer. */
  v = zkrc__admit((char *const *)alone, 3, zkrc__lock_markers,
                  "_c_me-__READ__0000000003", zkrc__policy_readers_writers,
                  NULL);
  CU_ASSERT_EQUAL(v.kind, ZKRC__WAIT);
  CU_ASSERT_STRING_EQUAL(v.watch, "_c_w-__WRIT__0000000001");
  /* Another writer queued between ours and the reader stops it. */
  const char *between[] = {"_c_w-__WRIT__0000000001", "ab12__lock__0000000002",
                           "_c_me-__READ__0000000003"};
  v = zkrc__admit((char *const *)between, 3, zkrc__lock_markers,
                  "_c_me-__READ__0000000003", zkrc__policy_readers_writers,
                  "_c_w-__WRIT__0000000001");
  CU_ASSERT_EQUAL(v.kind, ZKRC__WAIT);
  CU_ASSERT_STRING_EQUAL(v.watch, "ab12__lock__0000000002");
  /* The excuse is for a shared claim only: a writer still waits. */
  const char *writer[] = {"_c_w-__WRIT__0000000001",
                          "_c_me-__WRIT__0000000002"};
  v = zkrc__admit((char *const *)writer, 2, zkrc__lock_markers,
                  "_c_me-__WRIT__0000000002", zkrc__policy_readers_writers,
                  "_c_w-__WRIT__0000000001");
  CU_ASSERT_EQUAL(v.kind, ZKRC__WAIT);
}

static void test_table(void) {
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const admission_case *c = &cases[i];
    int count = 0;
    while (c->listing[count])
      count++;
    zkrc__verdict v = zkrc__admit(
        (char *const *)c->listing, count, zkrc__lock_markers, c->me,
        c->rw ? zkrc__policy_readers_writers : zkrc__policy_exclusive, NULL);
    gboolean ok = v.kind == c->kind && v.position == c->position &&
                  g_strcmp0(v.watch, c->watch) == 0;
    if (!ok)
      fprintf(stderr, "\n  case \"%s\": kind %d watch %s position %d\n",
              c->what, v.kind, v.watch ? v.watch : "-", v.position);
    CU_ASSERT_TRUE(ok);
    /* Pure: asked again, the same answer. */
    zkrc__verdict again = zkrc__admit(
        (char *const *)c->listing, count, zkrc__lock_markers, c->me,
        c->rw ? zkrc__policy_readers_writers : zkrc__policy_exclusive, NULL);
    CU_ASSERT(again.kind == v.kind && again.watch == v.watch);
  }
}

/* ------------------------------------------------- N permits */

typedef struct permits_case {
  const char *what;
  const char *listing[8]; /* NULL-terminated */
  const char *me;
  int permits;
  zkrc__verdict_kind kind;
  int position;
} permits_case;

static const zkrc__marker lease_markers[] = {{"-lease-", ZKRC__CLAIM_SHARED},
                                             {NULL, 0}};

static const permits_case permits_cases[] = {
    {"one of two permits taken: admitted",
     {"_c_a-lease-0000000001", "_c_me-lease-0000000002", NULL},
     "_c_me-lease-0000000002",
     2,
     ZKRC__ADMITTED,
     1},
    {"both permits taken: watch the directory, no single node",
     {"_c_b-lease-0000000002", "_c_a-lease-0000000001",
      "_c_me-lease-0000000003", NULL},
     "_c_me-lease-0000000003",
     2,
     ZKRC__WAIT_CHILDREN,
     2},
    {"one permit: a mutex's front is admitted",
     {"_c_me-lease-0000000004", "_c_z-lease-0000000005", NULL},
     "_c_me-lease-0000000004",
     1,
     ZKRC__ADMITTED,
     0},
    {"past the wrap: the negative sequence holds the permit",
     {"_c_old-lease-2147483647", "_c_me-lease--2147483648", NULL},
     "_c_me-lease--2147483648",
     1,
     ZKRC__ADMITTED,
     0},
    {"foreign names take no permit",
     {"config", "_c_x-lock-0000000001", "_c_me-lease-0000000009", NULL},
     "_c_me-lease-0000000009",
     1,
     ZKRC__ADMITTED,
     0},
    {"our lease gone: absent",
     {"_c_a-lease-0000000001", NULL},
     "_c_me-lease-0000000002",
     3,
     ZKRC__ABSENT,
     -1},
};

static void test_permits(void) {
  for (size_t i = 0; i < G_N_ELEMENTS(permits_cases); i++) {
    const permits_case *c = &permits_cases[i];
    int count = 0;
    while (c->listing[count])
      count++;
    zkrc__verdict v =
        zkrc__admit((char *const *)c->listing, count, lease_markers, c->me,
                    zkrc__policy_permits, &c->permits);
    gboolean ok =
        v.kind == c->kind && v.position == c->position && v.watch == NULL;
    if (!ok)
      fprintf(stderr, "\n  case \"%s\": kind %d position %d\n", c->what, v.kind,
              v.position);
    CU_ASSERT_TRUE(ok);
  }
  /* A waiter for a permit lists and watches the directory, once. */
  zkrc__listing_facts waiting = {.verdict = ZKRC__WAIT_CHILDREN};
  CU_ASSERT_EQUAL(zkrc__listing_decide(&waiting), ZKRC__MOVE_WATCH_DIR);
  waiting.dir_watched = TRUE;
  CU_ASSERT_EQUAL(zkrc__listing_decide(&waiting), ZKRC__MOVE_WAIT);
  /* A holder that finds itself waiting again was overtaken. */
  zkrc__listing_facts holder = {.verdict = ZKRC__WAIT_CHILDREN,
                                .at_front = TRUE};
  CU_ASSERT_EQUAL(zkrc__listing_decide(&holder), ZKRC__MOVE_LOST_OVERTAKEN);
}

/* ------------------------------------------------- random listings */

enum { MAX_N = 12 };

typedef struct listing {
  char *names[MAX_N];
  int n;
} listing;

static gboolean is_writer(const char *name) {
  return strstr(name, "__WRIT__") != NULL;
}

/* A random queue of readers and writers with distinct sequences, in a
 * random order (a listing is not sorted); sequences may be negative. */
static void random_listing(GRand *rng, listing *l, gboolean readers) {
  l->n = g_rand_int_range(rng, 1, MAX_N + 1);
  int32_t base = g_rand_boolean(rng) ? -2147483647 + 3 : 100;
  for (int i = 0; i < l->n; i++) {
    gboolean writer = !readers || g_rand_int_range(rng, 0, 3) == 0;
    int32_t seq = base + i * 2;
    char digits[16];
    if (seq < 0)
      snprintf(digits, sizeof digits, "%d", seq);
    else
      snprintf(digits, sizeof digits, "%010d", seq);
    l->names[i] = g_strdup_printf("_c_%02d-%s%s", i,
                                  writer ? "__WRIT__" : "__READ__", digits);
  }
  for (int i = l->n - 1; i > 0; i--) { /* shuffle the listing */
    int j = g_rand_int_range(rng, 0, i + 1);
    char *t = l->names[i];
    l->names[i] = l->names[j];
    l->names[j] = t;
  }
}

/* Queue position of @p name: its index (names carry it as "_c_NN-"). */
static int index_of(const char *name) { return atoi(name + 3); }

static void check_properties(listing *l, zkrc__policy_fn policy,
                             gboolean readers, int *failures) {
  int watches[MAX_N];
  gboolean in[MAX_N];
  for (int i = 0; i < l->n; i++) {
    zkrc__verdict v =
        zkrc__admit(l->names, l->n, rw_markers, l->names[i], policy, NULL);
    int me = index_of(l->names[i]);
    /* Expected: exclusive claims admitted only first in line; shared ones
     * when no exclusive claim is ahead. */
    gboolean writer_ahead = FALSE;
    for (int k = 0; k < l->n; k++)
      writer_ahead |= index_of(l->names[k]) < me && is_writer(l->names[k]);
    gboolean mine_writer = is_writer(l->names[i]);
    gboolean expect = mine_writer || !readers ? me == 0 : !writer_ahead;
    in[me] = v.kind == ZKRC__ADMITTED;
    watches[me] = v.kind == ZKRC__WAIT ? index_of(v.watch) : -1;
    if (v.kind == ZKRC__ABSENT || in[me] != expect || v.position != me ||
        (v.kind == ZKRC__WAIT && watches[me] >= me))
      (*failures)++;
  }
  /* From every waiter, the watches lead to an admitted contender. */
  for (int i = 0; i < l->n; i++) {
    int at = i, steps = 0;
    while (!in[at] && watches[at] >= 0 && steps++ <= l->n)
      at = watches[at];
    if (!in[at])
      (*failures)++;
  }
}

static void test_random_listings_keep_the_properties(void) {
  GRand *rng = g_rand_new_with_seed(1234);
  int failures = 0, runs = 20000;
  for (int r = 0; r < runs; r++) {
    listing l;
    gboolean readers = r % 2 == 1;
    random_listing(rng, &l, readers);
    check_properties(
        &l, readers ? zkrc__policy_readers_writers : zkrc__policy_exclusive,
        readers, &failures);
    for (int i = 0; i < l.n; i++)
      g_free(l.names[i]);
  }
  printf("(%d random listings, %d broken properties) ", runs, failures);
  CU_ASSERT_EQUAL(failures, 0);
  g_rand_free(rng);
}

/* What the evaluation of a listing uses: one ordering of the listing for
 * both the verdict and whether the watched node's departure alone would
 * admit us.  On random listings (with a duplicate name and a name that is
 * no contender), zkrc__admit_and_next() says what zkrc__admit() and
 * zkrc__admitted_without() of the node it watches say, and its watch
 * points into the listing. */
static void test_one_ordering_answers_both(void) {
  GRand *rng = g_rand_new_with_seed(4321);
  int runs = 5000, checked = 0, differ = 0, admitted_next = 0;
  for (int r = 0; r < runs; r++) {
    listing l;
    gboolean readers = r % 2 == 1;
    zkrc__policy_fn policy =
        readers ? zkrc__policy_readers_writers : zkrc__policy_exclusive;
    random_listing(rng, &l, readers);
    char *names[MAX_N + 2];
    memcpy(names, l.names, (size_t)l.n * sizeof *names);
    names[l.n] = l.names[g_rand_int_range(rng, 0, l.n)]; /* a duplicate */
    names[l.n + 1] = "_c_zz-not-a-contender";
    int count = l.n + 2;
    for (int i = 0; i < count; i++, checked++) {
      int next = -1;
      zkrc__verdict v = zkrc__admit_and_next(names, count, rw_markers, names[i],
                                             policy, NULL, &next);
      zkrc__verdict w =
          zkrc__admit(names, count, rw_markers, names[i], policy, NULL);
      int expected = w.kind == ZKRC__WAIT &&
                     zkrc__admitted_without(names, count, rw_markers, names[i],
                                            policy, NULL, w.watch);
      gboolean into_listing = v.watch == NULL;
      for (int k = 0; k < count; k++)
        into_listing |= v.watch == names[k];
      differ += v.kind != w.kind || v.position != w.position ||
                v.contenders != w.contenders ||
                g_strcmp0(v.watch, w.watch) != 0 || !into_listing ||
                next != expected;
      admitted_next += next;
    }
    for (int i = 0; i < l.n; i++)
      g_free(l.names[i]);
  }
  printf("(%d verdicts, %d admitted once the watched node goes, %d differ) ",
         checked, admitted_next, differ);
  CU_ASSERT_EQUAL(differ, 0);
  CU_ASSERT(admitted_next > 0); /* the case it is for occurs */
  g_rand_free(rng);
}

/* The exclusive policy under another name: zkrc__admit_and_next() orders
 * the listing for it, as for any policy but the exclusive one. */
static zkrc__verdict exclusive_ordered(const zkrc__rank *queue, int n, int me,
                                       const void *arg) {
  return zkrc__policy_exclusive(queue, n, me, arg);
}

/* The exclusive policy's single pass (no ordering of the listing) gives
 * what the ordered path gives, on random listings of mutex nodes with
 * negative sequences, a name that is no contender, and at times a
 * duplicate name or two names sharing a sequence, for every member and
 * for a name not in the listing. */
static void test_exclusive_single_pass_agrees(void) {
  GRand *rng = g_rand_new_with_seed(777);
  int runs = 5000, checked = 0, differ = 0, waits = 0;
  for (int r = 0; r < runs; r++) {
    listing l;
    random_listing(rng, &l, FALSE);
    char *names[MAX_N + 3];
    memcpy(names, l.names, (size_t)l.n * sizeof *names);
    int count = l.n;
    names[count++] = "_c_zz-not-a-contender";
    char *shared = NULL;
    if (r % 3 == 1) /* a duplicate */
      names[count++] = l.names[g_rand_int_range(rng, 0, l.n)];
    if (r % 3 == 2) /* another name with a sequence already listed */
      names[count++] = shared = g_strdup_printf(
          "_c_yy-__WRIT__%s",
          strstr(l.names[g_rand_int_range(rng, 0, l.n)], "__WRIT__") + 8);
    for (int i = 0; i <= count; i++, checked++) {
      const char *me = i < count ? names[i] : "_c_xx-__WRIT__0000000007";
      int fast_next = -1, ordered_next = -1;
      zkrc__verdict v =
          zkrc__admit_and_next(names, count, rw_markers, me,
                               zkrc__policy_exclusive, NULL, &fast_next);
      zkrc__verdict w = zkrc__admit_and_next(
          names, count, rw_markers, me, exclusive_ordered, NULL, &ordered_next);
      differ += v.kind != w.kind || v.position != w.position ||
                v.contenders != w.contenders ||
                g_strcmp0(v.watch, w.watch) != 0 || fast_next != ordered_next;
      waits += v.kind == ZKRC__WAIT;
    }
    g_free(shared);
    for (int i = 0; i < l.n; i++)
      g_free(l.names[i]);
  }
  printf("(%d verdicts, %d waits, %d differ) ", checked, waits, differ);
  CU_ASSERT_EQUAL(differ, 0);
  CU_ASSERT(waits > 0);
  g_rand_free(rng);
}

/* The property check itself can fail: a policy that admits everyone, and
 * one whose waiters watch themselves, are caught. */
static zkrc__verdict admit_everyone(const zkrc__rank *queue, int n, int me,
                                    const void *arg) {
  zkrc__verdict v = {ZKRC__ADMITTED, NULL, me, n};
  return v;
}

static zkrc__verdict watch_self(const zkrc__rank *queue, int n, int me,
                                const void *arg) {
  zkrc__verdict v = {me == 0 ? ZKRC__ADMITTED : ZKRC__WAIT,
                     me == 0 ? NULL : queue[me].name, me, n};
  return v;
}

static void test_broken_policies_are_caught(void) {
  GRand *rng = g_rand_new_with_seed(99);
  int everyone = 0, self = 0;
  for (int r = 0; r < 200; r++) {
    listing l;
    random_listing(rng, &l, FALSE);
    check_properties(&l, admit_everyone, FALSE, &everyone);
    check_properties(&l, watch_self, FALSE, &self);
    for (int i = 0; i < l.n; i++)
      g_free(l.names[i]);
  }
  CU_ASSERT(everyone > 0);
  CU_ASSERT(self > 0);
  g_rand_free(rng);
}

/* ------------------------------------------------ the queue's moves */

/* A contender's state when a listing comes back (zkrc__listing_facts
 * without the verdict, which the listing gives). */
typedef struct state {
  gboolean at_front, watch_own, own_watched, watch_dir, dir_watched;
} state;

static const state queued = {FALSE, FALSE, FALSE, FALSE, FALSE};
static const state queued_dir = {FALSE, FALSE, FALSE, TRUE, FALSE};
static const state queued_dir_watched = {FALSE, FALSE, FALSE, TRUE, TRUE};
static const state front = {TRUE, FALSE, FALSE, FALSE, FALSE};
static const state front_own_lost = {TRUE, TRUE, FALSE, FALSE, FALSE};
static const state front_own_armed = {TRUE, TRUE, TRUE, FALSE, FALSE};

typedef struct move_case {
  const char *what;
  const char *listing[6]; /* NULL-terminated */
  const char *me;
  const state *st;
  zkrc__listing_move move;
} move_case;

static const move_case moves[] = {
    {"admitted in the queue: take the front",
     {"_c_me-lock-0000000001", "_c_b-lock-0000000002", NULL},
     "_c_me-lock-0000000001",
     &queued,
     ZKRC__MOVE_TAKE_FRONT},
    {"admitted at the front, its own watch lost: arm it again",
     {"_c_me-lock-0000000001", NULL},
     "_c_me-lock-0000000001",
     &front_own_lost,
     ZKRC__MOVE_ARM_OWN_WATCH},
    {"admitted at the front, its own watch armed: stay",
     {"_c_me-lock-0000000001", NULL},
     "_c_me-lock-0000000001",
     &front_own_armed,
     ZKRC__MOVE_STAY},
    {"admitted at the front, no own watch wanted: stay",
     {"_c_me-lock-0000000001", NULL},
     "_c_me-lock-0000000001",
     &front,
     ZKRC__MOVE_STAY},
    {"a holder overtaken by a sequence past the wrap: lost, its node goes",
     {"_c_me-lock-2147483647", "_c_w-lock--2147483648", NULL},
     "_c_me-lock-2147483647",
     &front,
     ZKRC__MOVE_LOST_OVERTAKEN},
    {"a holder behind a node made by hand (kazoo's): lost",
     {"_c_me-lock-0000000005", "9f2c__lock__0000000004", NULL},
     "_c_me-lock-0000000005",
     &front_own_armed,
     ZKRC__MOVE_LOST_OVERTAKEN},
    {"a holder whose node was deleted: lost",
     {"_c_a-lock-0000000002", NULL},
     "_c_me-lock-0000000001",
     &front,
     ZKRC__MOVE_LOST_DELETED},
    {"a holder in an empty directory: lost",
     {NULL},
     "_c_me-lock-0000000001",
     &front,
     ZKRC__MOVE_LOST_DELETED},
    {"behind: watch the predecessor",
     {"_c_me-lock-0000000002", "_c_a-lock-0000000001", NULL},
     "_c_me-lock-0000000002",
     &queued,
     ZKRC__MOVE_WATCH_PRED},
    {"behind a duplicated name: watch it",
     {"_c_a-lock-0000000001", "_c_a-lock-0000000001", "_c_me-lock-0000000002",
      NULL},
     "_c_me-lock-0000000002",
     &queued,
     ZKRC__MOVE_WATCH_PRED},
    {"behind, not allowed to read predecessors: list and watch the directory",
     {"_c_a-lock-0000000001", "_c_me-lock-0000000002", NULL},
     "_c_me-lock-0000000002",
     &queued_dir,
     ZKRC__MOVE_WATCH_DIR},
    {"behind, and the listing watched the directory: wait",
     {"_c_a-lock-0000000001", "_c_me-lock-0000000002", NULL},
     "_c_me-lock-0000000002",
     &queued_dir_watched,
     ZKRC__MOVE_WAIT},
    {"our node gone before the front: create it again",
     {"_c_a-lock-0000000001", NULL},
     "_c_me-lock-0000000002",
     &queued,
     ZKRC__MOVE_CREATE},
    {"only foreign and malformed names: create again",
     {"keep", "_c_x-lock-12", "_c_me-lock-00000000x2", NULL},
     "_c_me-lock-0000000002",
     &queued_dir,
     ZKRC__MOVE_CREATE},
    {"admitted past the wrap, with the directory watched: take the front",
     {"_c_old-lock-2147483647", "_c_me-lock--2147483648", NULL},
     "_c_me-lock--2147483648",
     &queued_dir_watched,
     ZKRC__MOVE_TAKE_FRONT},
};

static zkrc__listing_move move_after(const move_case *m) {
  int count = 0;
  while (m->listing[count])
    count++;
  zkrc__verdict v =
      zkrc__admit((char *const *)m->listing, count, zkrc__lock_markers, m->me,
                  zkrc__policy_exclusive, NULL);
  zkrc__listing_facts f = {v.kind,           m->st->at_front,
                           m->st->watch_own, m->st->own_watched,
                           m->st->watch_dir, m->st->dir_watched};
  return zkrc__listing_decide(&f);
}

static void test_moves_after_a_listing(void) {
  for (size_t i = 0; i < G_N_ELEMENTS(moves); i++) {
    zkrc__listing_move got = move_after(&moves[i]);
    if (got != moves[i].move)
      fprintf(stderr, "\n  case \"%s\": move %d, expected %d\n", moves[i].what,
              got, moves[i].move);
    CU_ASSERT_EQUAL(got, moves[i].move);
    CU_ASSERT_EQUAL(move_after(&moves[i]), got); /* pure */
  }
}

typedef struct recheck_case {
  const char *what;
  zkrc__recheck_facts facts;
  zkrc__recheck_move move;
  int failed_rc; /* LATER, FAILED */
} recheck_case;

static const recheck_case rechecks[] = {
    {"still ours and first: confirmed",
     {ZOK, ZOK, TRUE, TRUE, ZKRC__ADMITTED, TRUE},
     ZKRC__RECHECK_CONFIRMED,
     ZOK},
    {"the stat lost with the connection: check again later",
     {ZCONNECTIONLOSS, ZOK, TRUE, TRUE, ZKRC__ADMITTED, TRUE},
     ZKRC__RECHECK_LATER,
     ZCONNECTIONLOSS},
    {"the listing timed out: check again later",
     {ZOK, ZOPERATIONTIMEOUT, TRUE, TRUE, ZKRC__ADMITTED, TRUE},
     ZKRC__RECHECK_LATER,
     ZOPERATIONTIMEOUT},
    {"the session expired: later (the session ends us)",
     {ZSESSIONEXPIRED, ZSESSIONEXPIRED, TRUE, TRUE, ZKRC__ABSENT, TRUE},
     ZKRC__RECHECK_LATER,
     ZSESSIONEXPIRED},
    {"the stat's failure counts first",
     {ZNOAUTH, ZCONNECTIONLOSS, TRUE, TRUE, ZKRC__ABSENT, TRUE},
     ZKRC__RECHECK_FAILED,
     ZNOAUTH},
    {"the listing refused: failed",
     {ZOK, ZNOAUTH, TRUE, TRUE, ZKRC__ABSENT, TRUE},
     ZKRC__RECHECK_FAILED,
     ZNOAUTH},
    {"our node deleted meanwhile: lost",
     {ZNONODE, ZOK, FALSE, TRUE, ZKRC__ABSENT, TRUE},
     ZKRC__RECHECK_LOST_DELETED,
     ZOK},
    {"the directory gone: lost",
     {ZOK, ZNONODE, TRUE, TRUE, ZKRC__ABSENT, TRUE},
     ZKRC__RECHECK_LOST_DELETED,
     ZOK},
    {"a node of another session's: lost, the node left alone",
     {ZOK, ZOK, FALSE, TRUE, ZKRC__ADMITTED, TRUE},
     ZKRC__RECHECK_LOST_NOT_OURS,
     ZOK},
    {"a new session meanwhile: lost",
     {ZOK, ZOK, TRUE, FALSE, ZKRC__ADMITTED, TRUE},
     ZKRC__RECHECK_LOST_NOT_OURS,
     ZOK},
    {"someone ahead now: lost, our node goes",
     {ZOK, ZOK, TRUE, TRUE, ZKRC__WAIT, TRUE},
     ZKRC__RECHECK_LOST_OVERTAKEN,
     ZOK},
    {"our node missing from the listing: lost",
     {ZOK, ZOK, TRUE, TRUE, ZKRC__ABSENT, TRUE},
     ZKRC__RECHECK_LOST_OVERTAKEN,
     ZOK},
    {"first, but the lease ran out: no RECONNECTED (LOST follows)",
     {ZOK, ZOK, TRUE, TRUE, ZKRC__ADMITTED, FALSE},
     ZKRC__RECHECK_WAIT_LOST,
     ZOK},
};

static void test_moves_after_a_recheck(void) {
  for (size_t i = 0; i < G_N_ELEMENTS(rechecks); i++) {
    const recheck_case *r = &rechecks[i];
    zkrc__recheck_outcome o = zkrc__recheck_decide(&r->facts);
    gboolean has_rc =
        o.move == ZKRC__RECHECK_LATER || o.move == ZKRC__RECHECK_FAILED;
    gboolean ok = o.move == r->move && (!has_rc || o.failed_rc == r->failed_rc);
    if (!ok)
      fprintf(stderr, "\n  case \"%s\": move %d rc %d\n", r->what, o.move,
              o.failed_rc);
    CU_ASSERT_TRUE(ok);
  }
}

/* The public reading of names (for tools such as zkr-ls): the marker a
 * contender's name ends with, and its sequence; NULL for anything else. */
static void test_contender_marker(void) {
  int32_t seq = 0;
  CU_ASSERT_STRING_EQUAL(zkrc_contender_marker("_c_0f8f-lock-0000000042", &seq),
                         "lock-");
  CU_ASSERT_EQUAL(seq, 42);
  CU_ASSERT_STRING_EQUAL(zkrc_contender_marker("ab12__rlock__0000000005", NULL),
                         "__rlock__");
  CU_ASSERT_STRING_EQUAL(
      zkrc_contender_marker("_c_x-__WRIT__-2147483648", &seq), "__WRIT__");
  CU_ASSERT_EQUAL(seq, INT32_MIN);
  CU_ASSERT_STRING_EQUAL(zkrc_contender_marker("_c_x-latch-0000000001", NULL),
                         "latch-");
  CU_ASSERT_STRING_EQUAL(zkrc_contender_marker("_c_x-lease-0000000001", NULL),
                         "lease-");
  CU_ASSERT_PTR_NULL(zkrc_contender_marker("lock-12", NULL)); /* malformed */
  CU_ASSERT_PTR_NULL(zkrc_contender_marker("leases", NULL));
  CU_ASSERT_PTR_NULL(zkrc_contender_marker(NULL, NULL));
}

/* The two-party hand-over's shortcut: the watched node's departure alone
 * admits a waiter only when nothing else ahead of it blocks it. */
static void test_admitted_without_the_watched_node(void) {
  const char *two[] = {"_c_a-lock-0000000001", "_c_me-lock-0000000002"};
  CU_ASSERT_TRUE(zkrc__admitted_without(
      (char *const *)two, 2, zkrc__lock_markers, "_c_me-lock-0000000002",
      zkrc__policy_exclusive, NULL, "_c_a-lock-0000000001"));
  /* Third in line: the front is still ahead when our predecessor goes. */
  const char *three[] = {"_c_a-lock-0000000001", "_c_b-lock-0000000002",
                         "_c_me-lock-0000000003"};
  CU_ASSERT_FALSE(zkrc__admitted_without(
      (char *const *)three, 3, zkrc__lock_markers, "_c_me-lock-0000000003",
      zkrc__policy_exclusive, NULL, "_c_b-lock-0000000002"));
  /* A reader behind a writer with only readers ahead of it: admitted once
   * the writer goes; behind two writers it is not. */
  const char *readers[] = {"_c_r-__READ__0000000001", "_c_w-__WRIT__0000000002",
                           "_c_me-__READ__0000000003"};
  CU_ASSERT_TRUE(zkrc__admitted_without(
      (char *const *)readers, 3, zkrc__lock_markers, "_c_me-__READ__0000000003",
      zkrc__policy_readers_writers, NULL, "_c_w-__WRIT__0000000002"));
  const char *writers[] = {"_c_v-__WRIT__0000000001", "_c_w-__WRIT__0000000002",
                           "_c_me-__READ__0000000003"};
  zkrc__verdict v = zkrc__admit((char *const *)writers, 3, zkrc__lock_markers,
                                "_c_me-__READ__0000000003",
                                zkrc__policy_readers_writers, NULL);
  CU_ASSERT_EQUAL(v.kind, ZKRC__WAIT);
  CU_ASSERT_FALSE(zkrc__admitted_without(
      (char *const *)writers, 3, zkrc__lock_markers, "_c_me-__READ__0000000003",
      zkrc__policy_readers_writers, NULL, v.watch));
  /* Our own node gone from the listing: never admitted. */
  CU_ASSERT_FALSE(zkrc__admitted_without(
      (char *const *)two, 2, zkrc__lock_markers, "_c_me-lock-0000000002",
      zkrc__policy_exclusive, NULL, "_c_me-lock-0000000002"));
}

static void add_suites(void) {
  ZKT_SUITE("admission", {"table", test_table},
            {"a downgrade excuses only our writer",
             test_downgrade_excuses_only_our_writer},
            {"N permits", test_permits},
            {"the public reading of names", test_contender_marker},
            {"admitted without the watched node",
             test_admitted_without_the_watched_node},
            {"random listings keep the properties",
             test_random_listings_keep_the_properties},
            {"one ordering answers both", test_one_ordering_answers_both},
            {"exclusive single pass agrees", test_exclusive_single_pass_agrees},
            {"broken policies are caught", test_broken_policies_are_caught},
            {"moves after a listing", test_moves_after_a_listing},
            {"moves after a re-check", test_moves_after_a_recheck});
}

int main(void) { return zkt_run("test_admission", add_suites); }
