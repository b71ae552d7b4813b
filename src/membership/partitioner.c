/*
 * The set partitioner (zkrecipes/partitioner.h): the public calls, joining
 * and leaving the party, and telling the application.  The state machine
 * is in partitioner_alloc.c.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "session/call.h"
#include "core/log_internal.h"
#include "membership/partitioner_private.h"
#include "recipes/recipe.h"
#include "core/util.h"
#include "session/zk_call.h"

const char *zkrc_partitioner_state_name(zkrc_partitioner_state st) {
  switch (st) {
  case ZKRC_PARTITIONER_ALLOCATING:
    return "allocating";
  case ZKRC_PARTITIONER_ACQUIRED:
    return "acquired";
  case ZKRC_PARTITIONER_RELEASE:
    return "release";
  case ZKRC_PARTITIONER_FAILURE:
    return "failure";
  }
  return "unknown";
}

/* The defaults, in a whole struct of ours. */
static void partitioner_options_defaults(zkrc_partitioner_options *opts) {
  zkrc__recipe_options_init(opts, sizeof *opts);
  if (opts)
    opts->time_boundary_ms = 30000; /* kazoo's time_boundary=30 */
}

void zkrc_partitioner_options_init_sized(zkrc_partitioner_options *opts,
                                         size_t size) {
  zkrc_partitioner_options full;
  partitioner_options_defaults(&full);
  zkrc__options_give(opts, size, &full, sizeof full);
}

zkrc_partitioner *zkrc__partitioner_ref(zkrc_partitioner *p) {
  g_atomic_int_inc(&p->refs);
  return p;
}

void zkrc__partitioner_unref(zkrc_partitioner *p) {
  if (!g_atomic_int_dec_and_test(&p->refs))
    return;
  g_ptr_array_free(p->slots, TRUE);
  if (p->locks)
    g_hash_table_destroy(p->locks);
  zkrc__acl_unref(p->acl);
  zkrc__session_unref(p->s);
  g_strfreev(p->items);
  g_free(p->path);
  g_free(p->party_dir);
  g_free(p->locks_dir);
  g_free(p->node);
  g_free(p->identifier);
  g_mutex_clear(&p->mu);
  g_cond_clear(&p->cond);
  g_free(p);
}

/* ------------------------------------------------ telling the application */

typedef struct delivery {
  zkrc_partitioner *p;
  zkrc_partitioner_state st;
  int reason, zk_error; /* FAILURE: why */
  guint64 id;
  char **items; /* ACQUIRED: the share */
} delivery;

static char **share_copy_locked(zkrc_partitioner *p) {
  char **items = g_new0(char *, p->slots->len + 1);
  for (guint i = 0; i < p->slots->len; i++) {
    zkrc__slot *sl = g_ptr_array_index(p->slots, i);
    items[i] = g_strdup(zkrc_lock_path(sl->lk) + strlen(p->locks_dir) + 1);
  }
  return items;
}

static void deliver(void *arg) {
  delivery *d = arg;
  zkrc_partitioner *p = d->p;
  g_mutex_lock(&p->mu);
  /* ACQUIRED only while that share is still ours and held (held means
   * held: a lease that ran out meanwhile is followed by FAILURE). */
  gboolean skip =
      p->freeing ||
      (d->st == ZKRC_PARTITIONER_ACQUIRED &&
       (p->acquired_id != d->id || !zkrc__partitioner_all_held_locked(p)));
  const char *why = p->why;
  if (!skip)
    p->in_callback++;
  g_mutex_unlock(&p->mu);
  if (!skip && d->st == ZKRC_PARTITIONER_FAILURE)
    zkrc__log(ZKRC_LOG_WARN, "partitioner %s: FAILURE (%s)", p->path,
              why ? why : "?");
  if (!skip && p->on_event) {
    zkrc_partitioner_event ev = {
        .type = d->st,
        .reason = d->reason,
        .zk_error = d->zk_error,
        .items = (const char *const *)d->items,
        .count = d->items ? g_strv_length(d->items) : 0,
    };
    p->on_event(p, &ev, p->event_arg);
  }
  g_mutex_lock(&p->mu);
  if (!skip)
    p->in_callback--;
  g_cond_broadcast(&p->cond);
  g_mutex_unlock(&p->mu);
  g_strfreev(d->items);
  zkrc__partitioner_unref(p);
  g_free(d);
}

void zkrc__partitioner_set_state_locked(zkrc_partitioner *p,
                                        zkrc_partitioner_state st) {
  p->state = st;
  p->state_id++;
  g_cond_broadcast(&p->cond);
  delivery *d = g_new0(delivery, 1);
  d->p = zkrc__partitioner_ref(p);
  d->st = st;
  d->zk_error = ZOK;
  if (st == ZKRC_PARTITIONER_FAILURE) {
    d->reason = p->reason;
    d->zk_error = p->zk_error;
  }
  d->id = p->state_id;
  if (st == ZKRC_PARTITIONER_ACQUIRED)
    d->items = share_copy_locked(p);
  zkrc__session_post(p->s, deliver, d);
}

/* ------------------------------------------------------ requests we wait */

/* zkrc__call_request, with ZOPERATIONTIMEOUT when the deadline passed. */
static int request(zkrc_session *s, zkrc__send_fn send, const void *arg,
                   int64_t deadline) {
  int rc = zkrc__call_request(s, send, arg, deadline, NULL);
  return rc == ZKRC__CALL_TIMED_OUT ? ZOPERATIONTIMEOUT : rc;
}

typedef struct create_arg {
  const char *path;
  const char *data;
  int flags;
  struct ACL_vector *acl;
} create_arg;

static int send_create(zkrc_conn *conn, zkrc__call *call, const void *arg) {
  const create_arg *a = arg;
  return zkrc__zk_create(conn, a->path, a->data,
                         a->data ? (int)strlen(a->data) : -1, a->acl, a->flags,
                         zkrc__call_string_done, call);
}

static int send_delete(zkrc_conn *conn, zkrc__call *call, const void *arg) {
  return zkrc__zk_delete(conn, arg, -1, zkrc__call_void_done, call);
}

/* Create the containers @p dir and its missing ancestors. */
static int make_dirs(zkrc_partitioner *p, const char *dir, int64_t deadline) {
  for (const char *slash = strchr(dir + 1, '/');;
       slash = strchr(slash + 1, '/')) {
    char *d = slash ? g_strndup(dir, (gsize)(slash - dir)) : g_strdup(dir);
    create_arg a = {d, NULL, ZOO_CONTAINER, zkrc__acl_vector(p->acl)};
    int rc = request(p->s, send_create, &a, deadline);
    g_free(d);
    if (rc != ZOK && rc != ZNODEEXISTS)
      return rc;
    if (slash == NULL)
      return ZOK;
  }
}

static gboolean freeing(zkrc_partitioner *p) {
  g_mutex_lock(&p->mu);
  gboolean f = p->freeing;
  g_mutex_unlock(&p->mu);
  return f;
}

static gboolean retryable(int rc) {
  return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT || rc == ZNONODE;
}

/* Join the party: the directories, then our ephemeral node (kazoo's
 * ShallowParty.join: an existing node with our uuid is ours, created by a
 * try whose reply was lost).  Retried after a lost connection (once it is
 * back) or a container removed under us, until the session timeout.
 * Returns ZooKeeper's code (ZOPERATIONTIMEOUT when the deadline passed);
 * sets *@p gen to the ZooKeeper session that created the node. */
static int join(zkrc_partitioner *p, uint64_t *gen) {
  int64_t deadline = zkrc__deadline_after(zkrc_session_timeout(p->s));
  int rc, backoff_ms = 20;
  do {
    /* Not <path>/locks: the item locks make it, as they make their own
     * directories (a container that never had a child would stay). */
    rc = make_dirs(p, p->party_dir, deadline);
    if (rc == ZOK) {
      create_arg a = {p->node, p->identifier, ZOO_EPHEMERAL,
                      zkrc__acl_vector(p->acl)};
      rc = request(p->s, send_create, &a, deadline);
    }
    if (rc == ZNODEEXISTS)
      rc = ZOK;
    if (rc == ZOK)
      *gen = zkrc__session_look(p->s, 0).generation;
    if (rc == ZOK || !retryable(rc) || zkrc__ms_left(deadline) <= 0 ||
        freeing(p))
      break;
    /* The backoff: wait for the connection, then a little longer each
     * time (a container removed under us is retried at once otherwise). */
    if (zkrc_session_wait_connected(p->s, zkrc__ms_left(deadline)) != ZKRC_OK)
      break;
    g_usleep((gulong)CLAMP(zkrc__ms_left(deadline), 0, backoff_ms) * 1000);
    backoff_ms = MIN(backoff_ms * 2, 500);
  } while (TRUE);
  return rc;
}

void zkrc__partitioner_leave_async_locked(zkrc_partitioner *p) {
  zkrc_conn *conn = zkrc__conn_use(p->s);
  if (conn == NULL)
    return; /* the node goes with the session */
  zkrc__zk_delete(conn, p->node, -1, zkrc__ignore_void_done, NULL);
  zkrc__conn_unuse(conn);
}

/* ------------------------------------------------------------- creating */

/* A node name kazoo can use for a lock or a party member. */
static gboolean name_valid(const char *name) {
  return name && *name && strchr(name, '/') == NULL && strcmp(name, ".") &&
         strcmp(name, "..");
}

static gint compare_strings(gconstpointer a, gconstpointer b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* An item ZooKeeper takes as a node name under <path>/locks. */
static gboolean item_valid(const char *item) {
  if (!name_valid(item))
    return FALSE;
  char *path = g_strconcat("/", item, NULL);
  gboolean ok = zkrc_path_validate(path, NULL) == ZKRC_OK;
  g_free(path);
  return ok;
}

/* The items sorted, or NULL when one is invalid or repeated.  Each is
 * checked before the sort, which cannot compare a NULL. */
static char **sorted_items(const char *const *items, size_t count) {
  if (count > 0 && items == NULL)
    return NULL;
  for (size_t i = 0; i < count; i++)
    if (!item_valid(items[i]))
      return NULL;
  char **sorted = g_new0(char *, count + 1);
  for (size_t i = 0; i < count; i++)
    sorted[i] = g_strdup(items[i]);
  qsort(sorted, count, sizeof *sorted, compare_strings);
  for (size_t i = 1; i < count; i++)
    if (strcmp(sorted[i - 1], sorted[i]) == 0) {
      g_strfreev(sorted);
      return NULL;
    }
  return sorted;
}

/* kazoo's uuid4().hex: 32 hex digits, no '-' (the member is what follows
 * the first '-'). */
static char *uuid_hex(void) {
  char *uuid = zkrc__uuid(), *out = uuid;
  for (const char *in = uuid; *in; in++) {
    if (*in != '-')
      *out++ = *in;
  }
  *out = '\0';
  return uuid;
}

static zkrc_partitioner *partitioner_alloc(zkrc_session *s, const char *path,
                                           char **items,
                                           const zkrc_partitioner_options *o) {
  zkrc_partitioner *p = g_new0(zkrc_partitioner, 1);
  p->refs = 1;
  g_mutex_init(&p->mu);
  g_cond_init(&p->cond);
  p->s = zkrc__session_ref(s);
  p->path = g_strdup(path);
  p->party_dir = g_strconcat(path, "/party", NULL);
  p->locks_dir = g_strconcat(path, "/locks", NULL);
  p->identifier =
      o->identifier ? g_strdup(o->identifier) : zkrc__default_participant_id();
  char *uuid = uuid_hex();
  p->node = g_strdup_printf("%s/%s-%s", p->party_dir, uuid, p->identifier);
  g_free(uuid);
  p->items = items;
  p->n_items = g_strv_length(items);
  p->time_boundary_ms = o->time_boundary_ms;
  p->acl = zkrc__acl_new(o->acl);
  p->on_event = o->on_event;
  p->event_arg = o->event_arg;
  p->state = ZKRC_PARTITIONER_ALLOCATING;
  p->slots = zkrc__partitioner_new_slots();
  p->locks = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  return p;
}

/* Watch the party and the session (after joining: the first read of the
 * party then includes us). */
static int start_watching(zkrc_partitioner *p) {
  int err = zkrc_session_add_listener(p->s, zkrc__partitioner_session_event, p,
                                      &p->listener);
  if (err != ZKRC_OK)
    return err;
  zkrc_cache_options co;
  zkrc_cache_options_init(&co);
  co.on_event = zkrc__partitioner_party_event;
  co.event_arg = p;
  zkrc_cache *c = NULL;
  err = zkrc_children_cache_new(&c, p->s, p->party_dir, &co);
  /* Its listener may have run already: it sets p->party too. */
  g_mutex_lock(&p->mu);
  p->party = c;
  g_mutex_unlock(&p->mu);
  return err;
}

/* The join, on a thread of its own so that zkrc_partitioner_new() never
 * waits for the network (join() is bounded by the session timeout), then
 * the watches.  Holds a reference of @p arg. */
static gpointer join_thread(gpointer arg) {
  zkrc_partitioner *p = arg;
  uint64_t gen = 0;
  int rc = join(p, &gen);
  g_mutex_lock(&p->mu);
  p->joining = FALSE;
  if (rc == ZOK)
    p->node_gen = gen;
  if (p->freeing) {
    if (rc == ZOK) /* freed while joining: leave again */
      zkrc__partitioner_leave_async_locked(p);
  } else if (rc != ZOK) {
    int err = rc == ZOPERATIONTIMEOUT ? ZKRC_ETIMEDOUT : zkrc_from_zk_error(rc);
    zkrc__partitioner_fail_locked(p, "the party could not be joined", err,
                                  rc == ZOPERATIONTIMEOUT ? ZOK : rc);
  } else {
    p->starting = TRUE;
  }
  gboolean start = p->starting;
  g_cond_broadcast(&p->cond);
  g_mutex_unlock(&p->mu);
  if (start) {
    int err = start_watching(p);
    g_mutex_lock(&p->mu);
    p->starting = FALSE;
    if (err != ZKRC_OK)
      zkrc__partitioner_fail_locked(p, "the party could not be watched", err,
                                    ZOK);
    g_cond_broadcast(&p->cond);
    g_mutex_unlock(&p->mu);
  }
  zkrc__partitioner_unref(p);
  return NULL;
}

int zkrc_partitioner_new(zkrc_partitioner **out, zkrc_session *s,
                         const char *path, const char *const *items,
                         size_t count, const zkrc_partitioner_options *opts) {
  if (out)
    *out = NULL;
  zkrc_partitioner_options o;
  zkrc_partitioner_options_init(&o);
  if (out == NULL || s == NULL || !zkrc__options_take(&o, sizeof o, opts) ||
      zkrc_path_validate(path, NULL) != ZKRC_OK || strcmp(path, "/") == 0 ||
      o.time_boundary_ms < 0 ||
      (o.identifier &&
       (!name_valid(o.identifier) || strlen(o.identifier) > 200)) ||
      (o.acl && !zkrc__acl_valid(o.acl)))
    return zkrc__fail(ZKRC_EINVAL);
  char **sorted = sorted_items(items, count);
  if (sorted == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  zkrc_partitioner *p = partitioner_alloc(s, path, sorted, &o);
  /* Our node's full path (the identifier may hold what no path may: a
   * control character, invalid UTF-8), checked before anything is sent:
   * refused after the party's containers were made, they would never have
   * a child, and ZooKeeper would never remove them. */
  int invalid = zkrc_path_validate(p->node, NULL) != ZKRC_OK;
  if (invalid || zkrc__session_closed(s)) {
    zkrc__partitioner_unref(p);
    return zkrc__fail(invalid ? ZKRC_EINVAL : ZKRC_ECLOSED);
  }
  p->joining = TRUE;
  g_thread_unref(
      g_thread_new("zkrc-partition", join_thread, zkrc__partitioner_ref(p)));
  *out = p;
  return ZKRC_OK;
}

/* ----------------------------------------------------------- the calls */

zkrc_partitioner_state zkrc_partitioner_get_state(zkrc_partitioner *p) {
  if (p == NULL)
    return 0;
  g_mutex_lock(&p->mu);
  zkrc_partitioner_state st = p->state;
  g_mutex_unlock(&p->mu);
  return st;
}

int zkrc_partitioner_wait(zkrc_partitioner *p, zkrc_partitioner_state st,
                          int timeout_ms) {
  if (p == NULL || !zkrc__timeout_valid(timeout_ms))
    return zkrc__fail(ZKRC_EINVAL);
  int64_t deadline = zkrc__deadline_after(timeout_ms);
  g_mutex_lock(&p->mu);
  while (p->state != st && p->state != ZKRC_PARTITIONER_FAILURE &&
         zkrc__cond_wait_until(&p->cond, &p->mu, deadline))
    ;
  int err = p->state == st                         ? ZKRC_OK
            : p->state == ZKRC_PARTITIONER_FAILURE ? ZKRC_ESTATE
                                                   : ZKRC_ETIMEDOUT;
  g_mutex_unlock(&p->mu);
  return err == ZKRC_OK ? ZKRC_OK : zkrc__fail(err);
}

int zkrc_partitioner_items(zkrc_partitioner *p, char ***items, size_t *count) {
  if (items)
    *items = NULL;
  if (count)
    *count = 0;
  if (p == NULL || items == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  g_mutex_lock(&p->mu);
  gboolean ours = p->state == ZKRC_PARTITIONER_ACQUIRED &&
                  zkrc__partitioner_all_held_locked(p);
  char **share = ours ? share_copy_locked(p) : NULL;
  g_mutex_unlock(&p->mu);
  if (!ours)
    return zkrc__fail(ZKRC_ESTATE);
  *items = zkrc__strv_to_malloc(share, count);
  g_strfreev(share);
  return *items ? ZKRC_OK : zkrc__fail(ZKRC_ENOMEM);
}

int zkrc_partitioner_lease_remaining(zkrc_partitioner *p) {
  if (p == NULL)
    return 0;
  g_mutex_lock(&p->mu);
  int left = p->state == ZKRC_PARTITIONER_ACQUIRED
                 ? zkrc__partitioner_lease_locked(p)
                 : 0;
  g_mutex_unlock(&p->mu);
  return left;
}

int zkrc_partitioner_release_set(zkrc_partitioner *p) {
  if (p == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  g_mutex_lock(&p->mu);
  gboolean releasing = p->state == ZKRC_PARTITIONER_RELEASE && !p->freeing;
  if (releasing) {
    zkrc__partitioner_drop_slots_locked(p);
    zkrc__partitioner_set_state_locked(p, ZKRC_PARTITIONER_ALLOCATING);
    zkrc__partitioner_debounce_locked(p);
  }
  g_mutex_unlock(&p->mu);
  return releasing ? ZKRC_OK : zkrc__fail(ZKRC_ESTATE);
}

const char *zkrc_partitioner_identifier(zkrc_partitioner *p) {
  return p ? p->identifier : NULL;
}

static void last_unref(void *arg) { zkrc__partitioner_unref(arg); }

void zkrc_partitioner_free(zkrc_partitioner *p) {
  if (p == NULL)
    return;
  g_mutex_lock(&p->mu);
  p->freeing = TRUE;
  zkrc__partitioner_stop_timer_locked(p);
  zkrc__partitioner_drop_slots_locked(p);
  /* The join's thread, past the network, starting the party's cache: a
   * moment.  Before that it sees p->freeing and leaves by itself. */
  while (p->in_callback > 0 || p->starting)
    g_cond_wait(&p->cond, &p->mu);
  gboolean joined = p->node_gen != 0;
  g_mutex_unlock(&p->mu);
  if (p->listener)
    zkrc_session_remove_listener(p->s, p->listener);
  zkrc_cache_free(p->party);
  p->party = NULL;
  GHashTableIter it;
  gpointer lk;
  g_hash_table_iter_init(&it, p->locks);
  while (g_hash_table_iter_next(&it, NULL, &lk))
    zkrc_lock_free(lk);
  g_hash_table_remove_all(p->locks);
  /* kazoo's finish(): leave the party. */
  int64_t deadline = zkrc__deadline_after(zkrc_session_timeout(p->s));
  if (joined && !zkrc__session_closed(p->s)) {
    int rc = request(p->s, send_delete, p->node, deadline);
    /* Not deleted now (no connection): the session deletes it once it is
     * connected again, unless that ZooKeeper session expired meanwhile.
     * Otherwise a member that joins again after its FAILURE shares the
     * party with its own old node until the old session expires, and the
     * items that node's share names wait for nobody. */
    if (rc != ZOK && rc != ZNONODE && p->node_gen) {
      const char *name = strrchr(p->node, '/') + 1;
      zkrc__session_reap(p->s, p->party_dir, name, name, p->node_gen);
    }
  }
  /* Whatever the executor still has for us (lock events, deliveries, which
   * see p->freeing) runs before this last reference goes. */
  zkrc__session_post(p->s, last_unref, p);
}
