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
  zkrc__object_ref(&p->o);
  return p;
}

void zkrc__partitioner_unref(zkrc_partitioner *p) { zkrc__object_unref(&p->o); }

/* After the last reference (core/object.h). */
static void partitioner_finalize(zkrc__object *o) {
  zkrc_partitioner *p = (zkrc_partitioner *)o;
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
  g_free(p);
}

/* ------------------------------------------------ telling the application */

typedef struct state_event {
  zkrc__object_event base;
  zkrc_partitioner_state st;
  int reason, zk_error; /* FAILURE: why */
  guint64 id;
  char **items; /* ACQUIRED: the share */
} state_event;

static char **share_copy_locked(zkrc_partitioner *p) {
  char **items = g_new0(char *, p->slots->len + 1);
  for (guint i = 0; i < p->slots->len; i++) {
    zkrc__slot *sl = g_ptr_array_index(p->slots, i);
    items[i] = g_strdup(zkrc_lock_path(sl->lk) + strlen(p->locks_dir) + 1);
  }
  return items;
}

static void state_release(zkrc__object_event *e) {
  g_strfreev(((state_event *)e)->items);
  g_free(e);
}

/* On the executor, with no mutex held (core/object.h). */
static void state_tell(zkrc__object *o, zkrc__object_event *e) {
  zkrc_partitioner *p = (zkrc_partitioner *)o;
  const state_event *d = (const state_event *)e;
  g_mutex_lock(&p->o.mu);
  /* ACQUIRED only while that share is still ours and held (held means
   * held: a lease that ran out meanwhile is followed by FAILURE). */
  gboolean skip =
      d->st == ZKRC_PARTITIONER_ACQUIRED &&
      (p->acquired_id != d->id || !zkrc__partitioner_all_held_locked(p));
  const char *why = p->why;
  g_mutex_unlock(&p->o.mu);
  if (skip)
    return;
  if (d->st == ZKRC_PARTITIONER_FAILURE)
    zkrc__log(ZKRC_LOG_WARN, "partitioner %s: FAILURE (%s)", p->path,
              why ? why : "?");
  if (p->on_event) {
    zkrc_partitioner_event ev = {
        .type = d->st,
        .reason = d->reason,
        .zk_error = d->zk_error,
        .items = (const char *const *)d->items,
        .count = d->items ? g_strv_length(d->items) : 0,
    };
    p->on_event(p, &ev, p->event_arg);
  }
}

void zkrc__partitioner_set_state_locked(zkrc_partitioner *p,
                                        zkrc_partitioner_state st) {
  p->state = st;
  p->state_id++;
  g_cond_broadcast(&p->o.cond);
  state_event *d = zkrc__object_event_new(sizeof *d, state_tell, state_release);
  d->st = st;
  d->zk_error = ZOK;
  if (st == ZKRC_PARTITIONER_FAILURE) {
    d->reason = p->reason;
    d->zk_error = p->zk_error;
  }
  d->id = p->state_id;
  if (st == ZKRC_PARTITIONER_ACQUIRED)
    d->items = share_copy_locked(p);
  zkrc__object_tell_locked(&p->o, &d->base);
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
  zkrc__object_init(&p->o, zkrc__session_executor(s), partitioner_finalize);
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
  zkrc__partitioner_join(p); /* never waits: partitioner_join.c */
  *out = p;
  return ZKRC_OK;
}

/* ----------------------------------------------------------- the calls */

zkrc_partitioner_state zkrc_partitioner_get_state(zkrc_partitioner *p) {
  if (p == NULL)
    return 0;
  g_mutex_lock(&p->o.mu);
  zkrc_partitioner_state st = p->state;
  g_mutex_unlock(&p->o.mu);
  return st;
}

int zkrc_partitioner_wait(zkrc_partitioner *p, zkrc_partitioner_state st,
                          int timeout_ms) {
  if (p == NULL || !zkrc__timeout_valid(timeout_ms))
    return zkrc__fail(ZKRC_EINVAL);
  int64_t deadline = zkrc__deadline_after(timeout_ms);
  g_mutex_lock(&p->o.mu);
  while (p->state != st && p->state != ZKRC_PARTITIONER_FAILURE &&
         zkrc__cond_wait_until(&p->o.cond, &p->o.mu, deadline))
    ;
  int err = p->state == st                         ? ZKRC_OK
            : p->state == ZKRC_PARTITIONER_FAILURE ? ZKRC_ESTATE
                                                   : ZKRC_ETIMEDOUT;
  g_mutex_unlock(&p->o.mu);
  return err == ZKRC_OK ? ZKRC_OK : zkrc__fail(err);
}

int zkrc_partitioner_items(zkrc_partitioner *p, char ***items, size_t *count) {
  if (items)
    *items = NULL;
  if (count)
    *count = 0;
  if (p == NULL || items == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  g_mutex_lock(&p->o.mu);
  gboolean ours = p->state == ZKRC_PARTITIONER_ACQUIRED &&
                  zkrc__partitioner_all_held_locked(p);
  char **share = ours ? share_copy_locked(p) : NULL;
  g_mutex_unlock(&p->o.mu);
  if (!ours)
    return zkrc__fail(ZKRC_ESTATE);
  *items = zkrc__strv_to_malloc(share, count);
  g_strfreev(share);
  return *items ? ZKRC_OK : zkrc__fail(ZKRC_ENOMEM);
}

int zkrc_partitioner_lease_remaining(zkrc_partitioner *p) {
  if (p == NULL)
    return 0;
  g_mutex_lock(&p->o.mu);
  int left = p->state == ZKRC_PARTITIONER_ACQUIRED
                 ? zkrc__partitioner_lease_locked(p)
                 : 0;
  g_mutex_unlock(&p->o.mu);
  return left;
}

int zkrc_partitioner_release_set(zkrc_partitioner *p) {
  if (p == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  g_mutex_lock(&p->o.mu);
  gboolean releasing =
      p->state == ZKRC_PARTITIONER_RELEASE && !zkrc__object_ending(&p->o);
  if (releasing) {
    zkrc__partitioner_drop_slots_locked(p);
    zkrc__partitioner_set_state_locked(p, ZKRC_PARTITIONER_ALLOCATING);
    zkrc__partitioner_debounce_locked(p);
  }
  g_mutex_unlock(&p->o.mu);
  return releasing ? ZKRC_OK : zkrc__fail(ZKRC_ESTATE);
}

const char *zkrc_partitioner_identifier(zkrc_partitioner *p) {
  return p ? p->identifier : NULL;
}

/* Give up what the object holds, without waiting (free and free_async):
 * the timers, the locks' holds, the join, our party node; returns the
 * party cache and the item locks (freed by the caller, with no mutex
 * held) and takes out the listener. */
static zkrc_cache *give_up_locked(zkrc_partitioner *p, GHashTable **locks,
                                  unsigned long *listener) {
  zkrc__partitioner_stop_timer_locked(p);
  zkrc__partitioner_drop_slots_locked(p);
  zkrc__partitioner_stop_join_locked(p);
  zkrc__partitioner_leave_locked(p); /* kazoo's finish() */
  zkrc_cache *party = p->party;
  p->party = NULL;
  *locks = p->locks;
  p->locks = NULL;
  *listener = p->listener;
  p->listener = 0;
  return party;
}

/* An item lock's free_async is over. */
static void lock_freed(void *arg) {
  zkrc_partitioner *p = arg;
  zkrc__object_idle(&p->o);
  zkrc__partitioner_unref(p);
}

/* The item locks freed in the background (a lock's free would wait for
 * its deletes); each is work free_async's done waits for, counted before
 * the caller detaches. */
static void count_locks_locked(zkrc_partitioner *p, GHashTable *locks) {
  for (guint i = 0; locks && i < g_hash_table_size(locks); i++)
    zkrc__object_busy_locked(&p->o);
}

static void drop_owner(void *p) { zkrc__partitioner_unref(p); }

/* The end of both frees, with no mutex held: the listener out, the item
 * locks freed in the background, and the owner's reference dropped on the
 * executor, behind a call of the listener that may be running there now
 * (removing it does not wait for that). */
static void let_go(zkrc_partitioner *p, GHashTable *locks,
                   unsigned long listener) {
  if (listener)
    zkrc_session_remove_listener(p->s, listener);
  if (locks) {
    GHashTableIter it;
    gpointer lk;
    g_hash_table_iter_init(&it, locks);
    while (g_hash_table_iter_next(&it, NULL, &lk))
      zkrc_lock_free_async(lk, lock_freed, zkrc__partitioner_ref(p));
    g_hash_table_destroy(locks);
  }
  /* (Not zkrc__object_post_locked: with o.mu held, its run could drop the
   * last reference before we let go of the mutex.) */
  zkrc__session_post(p->s, drop_owner, p);
}

void zkrc_partitioner_free(zkrc_partitioner *p) {
  if (p == NULL)
    return;
  GHashTable *locks;
  unsigned long listener;
  g_mutex_lock(&p->o.mu);
  /* Nothing told from now on; back once no callback of ours runs on
   * another thread (from our own callback: at once). */
  zkrc__object_close_locked(&p->o);
  zkrc_cache *party = give_up_locked(p, &locks, &listener);
  count_locks_locked(p, locks);
  g_mutex_unlock(&p->o.mu);
  /* Never waits for the network: the cache's free does not, the locks
   * go in the background. */
  zkrc_cache_free(party);
  let_go(p, locks, listener);
}

/* The party cache's free, on the executor (free_async): no callback of
 * the cache can be running on another thread there, so it waits for
 * none. */
static void party_free(void *party) { zkrc_cache_free(party); }

int zkrc_partitioner_free_async(zkrc_partitioner *p, zkrc_callback_fn done,
                                void *arg) {
  if (p == NULL || done == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  GHashTable *locks;
  unsigned long listener;
  g_mutex_lock(&p->o.mu);
  zkrc_cache *party = give_up_locked(p, &locks, &listener);
  count_locks_locked(p, locks);
  if (party)
    zkrc__object_post_pending_locked(&p->o, party_free, party);
  zkrc__object_detach_locked(&p->o, done, arg);
  g_mutex_unlock(&p->o.mu);
  let_go(p, locks, listener);
  return ZKRC_OK;
}
