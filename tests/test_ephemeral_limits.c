/*
 * One session's ephemeral nodes at ZooKeeper's limit (issue 30, item 1;
 * ZOOKEEPER-4306).  When a session closes or expires, the leader proposes
 * one transaction listing every ephemeral node it still has; past what a
 * follower reads of a proposal (2 x jute.maxbuffer by default) the
 * followers cannot read it, and the member that logged it can never load
 * its database again.  So:
 *
 *  - locks whose nodes take more than one such transaction can list are
 *    held on several sessions (the library opens them beside the
 *    application's, with its credentials, also those added later), none of
 *    them over the budget, the application's keeping room for its kept
 *    ephemeral nodes, each hold's lease its own session's, and the
 *    ensemble still commits writes through every member after the
 *    sessions close with the locks they hold;
 *  - a kept ephemeral node (groups, discovery) that would take its session
 *    past the budget is refused, with nothing sent;
 *  - the checker of that first promise is proven on an ensemble of its own:
 *    the same nodes made on one plain handle, whose close lists them all,
 *    leave a member that commits no write (by construction: the list is
 *    larger than a follower reads of a proposal).
 */
#include "config.h"

#include <inttypes.h>
#include <string.h>

#include <glib.h>

#include "testutil.h"
#include "zkrecipes/ephemeral.h"
#include "zkrecipes/lock.h"

/* The most a follower reads of one proposal from its leader: jute.maxbuffer
 * and zookeeper.jute.maxbuffer.extrasize, which defaults to it (ZooKeeper
 * 3.8.0's BinaryInputArchive.checkLength); and the budget the library
 * keeps each session's ephemeral nodes under (session_internal.h). */
#define PROPOSAL_MAX (2 * 0xfffff)
#define EPHEMERAL_BUDGET (768 * 1024)
/* Locks held at once, each in a directory of its own under a long path:
 * their nodes take some 2.3 MB in a close, past what a follower reads. */
#define LOCKS 2200
#define PAD 958

/* A root whose lock directories, and so their nodes, have long paths. */
static char *long_root(zhandle_t *zh, const char *tag) {
  char *base = zkt_path(tag);
  char *pad = g_strnfill(PAD, 'p');
  char *root = g_strdup_printf("%s/%s", base, pad);
  zkt_make_path(zh, root);
  g_free(pad);
  g_free(base);
  return root;
}

/* ------------------------------------------------ is the ensemble alive? */

typedef struct connected {
  GMutex mu;
  GCond cond;
  int up;
} connected;

static void watch_connected(zhandle_t *zh, int type, int state,
                            const char *path, void *ctx) {
  (void)zh, (void)path;
  connected *c = ctx;
  if (type != ZOO_SESSION_EVENT)
    return;
  g_mutex_lock(&c->mu);
  c->up = state == ZOO_CONNECTED_STATE;
  g_cond_broadcast(&c->cond);
  g_mutex_unlock(&c->mu);
}

static void quiet_log(const char *message) { (void)message; }

/* Whether a write committed through member @p i before @p deadline (ms,
 * zkt_now_ms()): a handle to that member alone, and a sequential create.
 * A member that lost its quorum refuses connections or leaves the create
 * unanswered until the handle gives up (2/3 of its 3 s timeout). */
static int commits_through(zkrc_ensemble *e, int i, int64_t deadline) {
  connected c = {0};
  g_mutex_init(&c.mu);
  g_cond_init(&c.cond);
  zhandle_t *zh =
      zookeeper_init2(zkrc_ensemble_member_address(e, i), watch_connected, 3000,
                      NULL, &c, 0, getenv("ZKR_LOG") ? NULL : quiet_log);
  int ok = 0;
  while (zh && !ok && zkt_now_ms() < deadline) {
    g_mutex_lock(&c.mu);
    if (!c.up)
      g_cond_wait_until(&c.cond, &c.mu, g_get_monotonic_time() + 100000);
    int up = c.up;
    g_mutex_unlock(&c.mu);
    if (up)
      ok = zoo_create(zh, "/alive-", "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_SEQUENCE,
                      NULL, 0) == ZOK;
  }
  if (zh)
    zookeeper_close(zh);
  g_mutex_clear(&c.mu);
  g_cond_clear(&c.cond);
  return ok;
}

/* The checker: how many members of @p e commit a write within 10 s. */
static int members_committing(zkrc_ensemble *e) {
  int64_t deadline = zkt_now_ms() + 10000;
  int n = 0;
  for (int i = 0; i < zkrc_ensemble_size(e); i++)
    n += commits_through(e, i, deadline);
  return n;
}

/* ------------------------------------------------------------- the locks */

typedef struct acquired {
  GMutex mu;
  GCond cond;
  int ok, failed;
} acquired;

static void on_acquired(zkrc_lock *lk, zkrc_lock_hold *hold,
                        const zkrc_lock_acquired_info *info, void *arg) {
  (void)lk, (void)hold;
  acquired *a = arg;
  g_mutex_lock(&a->mu);
  if (info->status == ZKRC_OK)
    a->ok++;
  else
    a->failed++;
  g_cond_broadcast(&a->cond);
  g_mutex_unlock(&a->mu);
}

static int wait_acquired(acquired *a, int n, int timeout_ms) {
  int64_t end = g_get_monotonic_time() + (int64_t)timeout_ms * 1000;
  g_mutex_lock(&a->mu);
  while (a->ok + a->failed < n && g_cond_wait_until(&a->cond, &a->mu, end))
    ;
  int ok = a->ok;
  g_mutex_unlock(&a->mu);
  return ok;
}

/* What one node takes in its session's close: 4 and its path. */
static size_t close_bytes(const char *path) { return 4 + strlen(path); }

/* The owner of every held node, and each owner's bytes in its close. */
typedef struct owners {
  GHashTable *bytes; /* session id (int64 *) -> size_t * */
  int64_t *owner_of; /* of each lock */
} owners;

static void count_owners(zhandle_t *zh, zkrc_lock_hold **holds, owners *o) {
  o->bytes = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
  o->owner_of = g_new0(int64_t, LOCKS);
  for (int i = 0; i < LOCKS; i++) {
    char *node = NULL;
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_hold_node(holds[i], &node));
    struct Stat st;
    CU_ASSERT_PTR_NOT_NULL_FATAL(node);
    CU_ASSERT_EQUAL_FATAL(zoo_exists(zh, node, 0, &st), ZOK);
    o->owner_of[i] = st.ephemeralOwner;
    size_t *b = g_hash_table_lookup(o->bytes, &st.ephemeralOwner);
    if (b == NULL) {
      b = g_new0(size_t, 1);
      g_hash_table_insert(o->bytes, g_memdup2(&st.ephemeralOwner, 8), b);
    }
    *b += close_bytes(node);
    g_free(node);
  }
}

static void owners_clear(owners *o) {
  g_hash_table_destroy(o->bytes);
  g_free(o->owner_of);
}

/* How many holds on session @p id, and on the others, are held with a
 * lease left. */
static void check_held_by(zkrc_lock_hold **holds, const owners *o, int64_t id,
                          int *held_there, int *held_elsewhere) {
  *held_there = *held_elsewhere = 0;
  for (int i = 0; i < LOCKS; i++) {
    int held = zkrc_lock_hold_is_held(holds[i]) &&
               zkrc_lock_hold_lease_remaining(holds[i]) > 0;
    if (o->owner_of[i] == id)
      *held_there += held;
    else
      *held_elsewhere += held;
  }
}

typedef struct lost_seen {
  zkrc_lock_hold **holds;
  const owners *o;
  int64_t primary;
} lost_seen;

/* Every hold on the expired session is no longer held. */
static int primary_holds_lost(void *arg) {
  lost_seen *l = arg;
  int there, elsewhere;
  check_held_by(l->holds, l->o, l->primary, &there, &elsewhere);
  return there == 0;
}

/* Only the holder of @p cred may create under @p path (and read it); the
 * others may not even list it. */
static void only_for(zhandle_t *zh, const char *path, const char *cred) {
  char *id = zkt_digest_id(cred);
  struct ACL entry = {ZOO_PERM_ALL, {"digest", id}};
  struct ACL_vector acl = {1, &entry};
  CU_ASSERT_EQUAL_FATAL(zoo_set_acl(zh, path, -1, &acl), ZOK);
  g_free(id);
}

#define CRED "spread:secret"

/* Lock @p from.. @p to - 1 under @p parent, asynchronously. */
static void acquire_range(zkrc_session *s, const char *parent, int from, int to,
                          zkrc_lock **locks, zkrc_lock_hold **holds,
                          acquired *a) {
  for (int i = from; i < to; i++) {
    char *dir = g_strdup_printf("%s/l%04d", parent, i);
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_new(&locks[i], s, dir, NULL));
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire_async(locks[i], 60000, on_acquired,
                                                   a, &holds[i]));
    g_free(dir);
  }
}

/* Held at once: first this many locks in an open directory, then the
 * others in one only our credential may write. */
#define FIRST 1500

static void test_locks_spread_over_sessions(void) {
  zhandle_t *zh = zkt_raw();
  char *root = long_root(zh, "spread");
  char *open_dir = g_strdup_printf("%s/o", root);
  char *closed_dir = g_strdup_printf("%s/c", root);
  zkt_make_path(zh, open_dir);
  zkt_make_path(zh, closed_dir);
  only_for(zh, closed_dir, CRED);
  zkrc_session *s = zkt_session_knowing_tick(4000, 0, NULL);
  zkrc_lock **locks = g_new0(zkrc_lock *, LOCKS);
  zkrc_lock_hold **holds = g_new0(zkrc_lock_hold *, LOCKS);
  acquired a = {0};
  g_mutex_init(&a.mu);
  g_cond_init(&a.cond);
  acquire_range(s, open_dir, 0, FIRST, locks, holds, &a);
  CU_ASSERT_EQUAL_FATAL(wait_acquired(&a, FIRST, 90000), FIRST);

  /* A credential added now reaches the sessions opened beside ours: the
   * next locks, under the directory only it may write, go on them. */
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_add_auth(s, "digest", CRED, 10000));
  acquire_range(s, closed_dir, FIRST, LOCKS, locks, holds, &a);
  CU_ASSERT_EQUAL_FATAL(wait_acquired(&a, LOCKS, 90000), LOCKS);

  /* Our session keeps room for its kept ephemeral nodes. */
  char *kept_path = g_strdup_printf("%s/kept", open_dir);
  zkrc_ephemeral *kept = NULL;
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_ephemeral_new(&kept, s, kept_path, NULL, 0, NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_ephemeral_wait_registered(kept, 10000));
  zkrc_ephemeral_free(kept);
  g_free(kept_path);

  /* More than one session holds them, each within the budget, and one
   * session alone would have gone past jute.maxbuffer. */
  owners o;
  count_owners(zh, holds, &o);
  size_t total = 0, most = 0;
  GHashTableIter it;
  gpointer key, value;
  g_hash_table_iter_init(&it, o.bytes);
  while (g_hash_table_iter_next(&it, &key, &value)) {
    total += *(size_t *)value;
    most = MAX(most, *(size_t *)value);
  }
  printf("\n    %d locks: %u sessions, %zu bytes of paths in all, at most "
         "%zu in one session's close\n",
         LOCKS, g_hash_table_size(o.bytes), total, most);
  CU_ASSERT_TRUE(total > PROPOSAL_MAX);
  CU_ASSERT_TRUE(g_hash_table_size(o.bytes) >= 2);
  CU_ASSERT_TRUE(most <= EPHEMERAL_BUDGET);

  /* Each hold's lease is its own session's: when the application's
   * session expires, its holds are lost and the others stay held. */
  int64_t primary = zkrc_session_id(s);
  int there, elsewhere;
  check_held_by(holds, &o, primary, &there, &elsewhere);
  CU_ASSERT_TRUE(there > 0);
  CU_ASSERT_EQUAL(there + elsewhere, LOCKS);
  int on_others = elsewhere;
  zkt_expire(s);
  lost_seen l = {holds, &o, primary};
  CU_ASSERT_TRUE(zkt_wait_for(primary_holds_lost, &l, 15000));
  check_held_by(holds, &o, primary, &there, &elsewhere);
  CU_ASSERT_EQUAL(there, 0);
  CU_ASSERT_EQUAL(elsewhere, on_others);
  owners_clear(&o);

  /* Closing: ours (a new session since the expiry) and those beside it,
   * with every lock they still hold.  The servers delete every node, and
   * every member still commits writes. */
  zkrc_session_close(s);
  CU_ASSERT_EQUAL(members_committing(zkt_ensemble()), 3);
  CU_ASSERT_EQUAL(zoo_add_auth(zh, "digest", CRED, strlen(CRED), NULL, NULL),
                  ZOK);
  int left = 0;
  for (int i = 0; i < LOCKS; i++) {
    char *dir =
        g_strdup_printf("%s/l%04d", i < FIRST ? open_dir : closed_dir, i);
    left += zkt_nodes_left(zh, dir);
    g_free(dir);
  }
  CU_ASSERT_EQUAL(left, 0);
  for (int i = 0; i < LOCKS; i++)
    zkrc_lock_free(locks[i]);
  g_free(locks);
  g_free(holds);
  g_mutex_clear(&a.mu);
  g_cond_clear(&a.cond);
  g_free(open_dir);
  g_free(closed_dir);
  g_free(root);
  zookeeper_close(zh);
}

/* Kept ephemeral nodes stay on their session: past its budget the next is
 * refused with ZKRC_ETOOBIG, nothing sent, and fits again once one goes. */
static void test_kept_nodes_refused_past_the_budget(void) {
  zhandle_t *zh = zkt_raw();
  char *root = long_root(zh, "kept");
  zkrc_session *s = zkt_session();
  enum { MOST = EPHEMERAL_BUDGET / 512 }; /* more than can fit */
  zkrc_ephemeral **kept = g_new0(zkrc_ephemeral *, MOST + 1);
  size_t bytes = 0, cost = 0;
  int n = 0, rc = ZKRC_OK;
  char *path = NULL;
  for (; n < MOST; n++) {
    path = g_strdup_printf("%s/e%04d", root, n);
    cost = close_bytes(path);
    rc = zkrc_ephemeral_new(&kept[n], s, path, NULL, 0, NULL);
    if (rc != ZKRC_OK)
      break;
    bytes += cost;
    g_free(path);
    path = NULL;
  }
  printf("\n    %d kept nodes of %zu bytes each taken, the next refused\n", n,
         cost);
  ZKT_ASSERT_RC(ZKRC_ETOOBIG, rc);
  CU_ASSERT_TRUE(bytes <= EPHEMERAL_BUDGET);
  CU_ASSERT_TRUE(bytes + cost > EPHEMERAL_BUDGET);
  CU_ASSERT_PTR_NULL(kept[n]);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_ephemeral_wait_registered(kept[n - 1], 30000));
  CU_ASSERT_FALSE(zkt_exists(zh, path)); /* nothing sent */

  zkrc_ephemeral_free(kept[0]);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_ephemeral_new(&kept[0], s, path, NULL, 0, NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_ephemeral_wait_registered(kept[0], 30000));
  for (int i = 0; i < n; i++)
    zkrc_ephemeral_free(kept[i]);
  zkrc_session_close(s);
  CU_ASSERT_EQUAL(zkt_nodes_left(zh, root), 0);
  g_free(kept);
  g_free(path);
  g_free(root);
  zookeeper_close(zh);
}

/* Create @p path (@p flags) on a fresh ensemble's handle: a reply lost to
 * a loaded machine (connection loss, timeout) is asked again, at most 5
 * times, 100 ms apart; "exists" after such a loss is our create's.  ZOK,
 * or the error. */
static int create_made(zhandle_t *zh, const char *path, int flags) {
  int rc = ZCONNECTIONLOSS;
  for (int i = 0; i < 5 && (rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT);
       i++) {
    if (i > 0)
      g_usleep(100 * 1000); /* the retry's backoff */
    rc = zoo_create(zh, path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, flags, NULL, 0);
    if (rc == ZNODEEXISTS && i > 0)
      rc = ZOK;
  }
  if (rc != ZOK)
    fprintf(stderr, "create %s: %s\n", path, zerror(rc));
  return rc;
}

/* The control: the same nodes on one plain handle, closed.  Its close lists
 * more than a follower reads of a proposal: the followers drop out, and
 * the leader, which logged it, can never load its database again ("Unable
 * to run quorum server ... Unreasonable length"), so at most the two others
 * commit writes afterwards (seen: they elect a leader between them). */
static void test_control_one_session_takes_a_member_down(void) {
  zkrc_ensemble_options eo;
  zkrc_ensemble_options_init(&eo);
  eo.members = 3;
  eo.no_fsync = 1;
  zkrc_ensemble *e = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_ensemble_start(&e, &eo), 0);
  zhandle_t *zh = zkt_raw_to(zkrc_ensemble_connect_string(e));
  char *root = long_root(zh, "control");
  size_t total = 0;
  for (int i = 0; i < LOCKS; i++) {
    char *dir = g_strdup_printf("%s/l%04d", root, i);
    char *node = g_strdup_printf("%s/_c_%036d-lock-%010d", dir, i, 0);
    CU_ASSERT_EQUAL_FATAL(create_made(zh, dir, 0), ZOK);
    CU_ASSERT_EQUAL_FATAL(create_made(zh, node, ZOO_EPHEMERAL), ZOK);
    total += close_bytes(node);
    g_free(node);
    g_free(dir);
  }
  CU_ASSERT_TRUE_FATAL(total > PROPOSAL_MAX);
  CU_ASSERT_EQUAL(members_committing(e), 3); /* before the close */
  zookeeper_close(zh);
  int after = members_committing(e);
  printf("\n    control: %zu bytes in one close; members committing after "
         "it: %d of 3\n",
         total, after);
  CU_ASSERT_TRUE(after < 3);
  zkrc_ensemble_stop(e);
  g_free(root);
}

static void add_suites(void) {
  zkt_configure(3, 0);
  static const zkt_test tests[] = {
      {"locks past one session's close are spread over sessions",
       test_locks_spread_over_sessions},
      {"kept ephemeral nodes past the budget are refused",
       test_kept_nodes_refused_past_the_budget},
      {"control: one session's close past the limit takes a member down",
       test_control_one_session_takes_a_member_down},
  };
  zkt_add_suite("ephemeral limits", tests, G_N_ELEMENTS(tests));
}

int main(void) { return zkt_run("test_ephemeral_limits", add_suites); }
