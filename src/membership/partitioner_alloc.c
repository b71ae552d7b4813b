/*
 * The set partitioner's state machine (kazoo's SetPartitioner): the party
 * is watched through a children cache; once it has been still for the time
 * boundary the set is split and the locks of our share are taken, all at
 * once; a change of the party aborts an attempt (its locks are given up
 * and the debounce starts again) or, once ACQUIRED, asks the application
 * to release; a lost lock or session ends everything (FAILURE).
 */
#include "config.h"

#include <string.h>

#include "recipes/lock_member.h"
#include "membership/partitioner_private.h"

/* ------------------------------------------------------------ the split */

static gint compare_strings(gconstpointer a, gconstpointer b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

GPtrArray *zkrc__partition_share(char *const *items, size_t n_items,
                                 size_t index, size_t n) {
  GPtrArray *share = g_ptr_array_new();
  for (size_t i = index; n > 0 && i < n_items; i += n)
    g_ptr_array_add(share, items[i]);
  return share;
}

/* The members' identifiers, sorted: what follows the first '-' of each
 * party node's name (kazoo's ShallowParty). */
static GPtrArray *party_members(zkrc_partitioner *p) {
  const zkrc_cache_node **nodes;
  size_t count;
  GPtrArray *members = g_ptr_array_new_with_free_func(g_free);
  if (zkrc_cache_snapshot(p->party_seen, &nodes, &count) != ZKRC_OK)
    return members;
  for (size_t i = 0; i < count; i++) {
    const char *name = strrchr(nodes[i]->path, '/') + 1;
    const char *dash = strchr(name, '-');
    g_ptr_array_add(members, g_strdup(dash ? dash + 1 : name));
  }
  zkrc_cache_nodes_free(nodes, count);
  g_ptr_array_sort(members, compare_strings);
  return members;
}

/* Our index among @p members (the first match, as kazoo's list.index), or
 * -1 when our node is not there. */
static int member_index(GPtrArray *members, const char *identifier) {
  for (guint i = 0; i < members->len; i++) {
    if (strcmp(g_ptr_array_index(members, i), identifier) == 0)
      return (int)i;
  }
  return -1;
}

/* ------------------------------------------------------------ the slots */

static void slot_unref(zkrc__slot *sl) {
  if (!g_atomic_int_dec_and_test(&sl->refs))
    return;
  zkrc__partitioner_unref(sl->p);
  g_free(sl);
}

static void slot_unref_cb(gpointer sl) { slot_unref(sl); }

/* The item's lock object, made on first use and kept until the partitioner
 * is freed (freeing one from the executor could wait on the executor). */
static int item_lock_locked(zkrc_partitioner *p, const char *item,
                            zkrc_lock **out) {
  zkrc_lock *lk = g_hash_table_lookup(p->locks, item);
  *out = lk;
  if (lk)
    return ZKRC_OK;
  char *path = g_strdup_printf("%s/%s", p->locks_dir, item);
  zkrc_lock_options lo;
  zkrc_lock_options_init(&lo);
  lo.participant_id = p->identifier;
  lo.acl = zkrc__acl_vector(p->acl);
  lo.on_event = zkrc__partitioner_lock_event;
  lo.event_arg = p;
  /* kazoo's Lock counts only children named "...__lock__<seq>". */
  int err = zkrc__lock_new_member(&lk, p->s, path, &lo, "__lock__",
                                  zkrc__policy_exclusive);
  g_free(path);
  if (err != ZKRC_OK)
    return err;
  g_hash_table_insert(p->locks, g_strdup(item), lk);
  *out = lk;
  return ZKRC_OK;
}

void zkrc__partitioner_drop_slots_locked(zkrc_partitioner *p) {
  for (guint i = 0; i < p->slots->len; i++) {
    zkrc__slot *sl = g_ptr_array_index(p->slots, i);
    if (sl->hold && sl->held)
      zkrc_lock_hold_release(sl->hold);
    else if (sl->hold && zkrc_lock_hold_cancel(sl->hold) == ZKRC_ESTATE)
      continue; /* decided: its completion sees a stale attempt, releases */
    sl->hold = NULL;
    sl->held = FALSE;
  }
  g_ptr_array_set_size(p->slots, 0);
  p->held = 0;
  p->trying = FALSE;
  p->attempt++;
  p->acquired_id = 0;
}

gboolean zkrc__partitioner_all_held_locked(zkrc_partitioner *p) {
  for (guint i = 0; i < p->slots->len; i++) {
    zkrc__slot *sl = g_ptr_array_index(p->slots, i);
    if (!sl->held || !zkrc_lock_hold_is_held(sl->hold))
      return FALSE;
  }
  return TRUE;
}

int zkrc__partitioner_lease_locked(zkrc_partitioner *p) {
  int least = zkrc_session_lease_remaining(p->s);
  for (guint i = 0; i < p->slots->len; i++) {
    zkrc__slot *sl = g_ptr_array_index(p->slots, i);
    int left = sl->held ? zkrc_lock_hold_lease_remaining(sl->hold) : 0;
    least = MIN(least, left);
  }
  return MAX(least, 0);
}

void zkrc__partitioner_fail_locked(zkrc_partitioner *p, const char *why,
                                   int reason, int zk_error) {
  if (p->state == ZKRC_PARTITIONER_FAILURE)
    return;
  p->why = why; /* logged when FAILURE is told, with no mutex held */
  p->reason = reason;
  p->zk_error = zk_error;
  zkrc__partitioner_stop_timer_locked(p);
  zkrc__partitioner_drop_slots_locked(p);
  zkrc__partitioner_leave_locked(p);
  zkrc__partitioner_set_state_locked(p, ZKRC_PARTITIONER_FAILURE);
}

/* ---------------------------------------------------- taking the locks */

static void acquired_locked(zkrc_partitioner *p) {
  p->trying = FALSE;
  zkrc__partitioner_set_state_locked(p, ZKRC_PARTITIONER_ACQUIRED);
  p->acquired_id = p->state_id;
}

static void lock_acquired(zkrc_lock *lk, zkrc_lock_hold *hold,
                          const zkrc_lock_acquired_info *info, void *arg) {
  (void)lk;
  zkrc__slot *sl = arg;
  zkrc_partitioner *p = sl->p;
  g_mutex_lock(&p->o.mu);
  gboolean current = sl->attempt == p->attempt && !zkrc__object_ending(&p->o) &&
                     p->state == ZKRC_PARTITIONER_ALLOCATING;
  if (info->status == ZKRC_OK && !current) {
    zkrc_lock_hold_release(hold); /* the attempt was given up meanwhile */
    sl->hold = NULL;
  } else if (info->status == ZKRC_OK) {
    sl->held = TRUE;
    if (++p->held == p->slots->len)
      acquired_locked(p);
  } else {
    sl->hold = NULL; /* freed when we return */
    if (current && info->status != ZKRC_ECANCELED)
      zkrc__partitioner_fail_locked(p, zkrc_strerror(info->status),
                                    info->status, ZOK);
  }
  g_mutex_unlock(&p->o.mu);
  slot_unref(sl);
}

/* Split the set among the party as it is now and take our share's locks. */
static void allocate_locked(zkrc_partitioner *p) {
  GPtrArray *members = party_members(p);
  int me = member_index(members, p->identifier);
  if (me < 0) {
    g_ptr_array_free(members, TRUE);
    zkrc__partitioner_fail_locked(p, "our party node is gone", ZKRC_ENONODE,
                                  ZNONODE);
    return;
  }
  GPtrArray *share =
      zkrc__partition_share(p->items, p->n_items, (size_t)me, members->len);
  g_ptr_array_free(members, TRUE);
  p->trying = TRUE;
  for (guint i = 0; i < share->len; i++) {
    zkrc__slot *sl = g_new0(zkrc__slot, 1);
    sl->refs = 2; /* the attempt's and the completion's */
    sl->p = zkrc__partitioner_ref(p);
    sl->attempt = p->attempt;
    int err = item_lock_locked(p, g_ptr_array_index(share, i), &sl->lk);
    g_ptr_array_add(p->slots, sl);
    if (err == ZKRC_OK)
      err = zkrc_lock_acquire_async(sl->lk, ZKRC_WAIT_FOREVER, lock_acquired,
                                    sl, &sl->hold);
    if (err != ZKRC_OK) {
      slot_unref(sl); /* no completion will come */
      g_ptr_array_free(share, TRUE);
      zkrc__partitioner_fail_locked(p, "an item lock could not be asked for",
                                    err, ZOK);
      return;
    }
  }
  g_ptr_array_free(share, TRUE);
  if (p->slots->len == 0)
    acquired_locked(p); /* nothing for us: kazoo acquires an empty share */
}

/* ------------------------------------------------------------ debounce */

typedef struct timer_data {
  zkrc_partitioner *p;
  guint64 gen;
} timer_data;

static void timer_data_free(gpointer data) {
  timer_data *td = data;
  zkrc__partitioner_unref(td->p);
  g_free(td);
}

static gboolean debounce_done(gpointer data) {
  timer_data *td = data;
  zkrc_partitioner *p = td->p;
  g_mutex_lock(&p->o.mu);
  if (td->gen == p->timer_gen && !zkrc__object_ending(&p->o) &&
      p->state == ZKRC_PARTITIONER_ALLOCATING && !p->trying) {
    g_source_unref(p->timer);
    p->timer = NULL;
    allocate_locked(p);
  }
  g_mutex_unlock(&p->o.mu);
  return G_SOURCE_REMOVE;
}

void zkrc__partitioner_stop_timer_locked(zkrc_partitioner *p) {
  p->timer_gen++;
  if (p->timer) {
    g_source_destroy(p->timer);
    g_source_unref(p->timer);
    p->timer = NULL;
  }
}

void zkrc__partitioner_debounce_locked(zkrc_partitioner *p) {
  zkrc__partitioner_stop_timer_locked(p);
  if (!p->party_ready || zkrc__object_ending(&p->o))
    return; /* INITIALIZED starts it */
  timer_data *td = g_new0(timer_data, 1);
  td->p = zkrc__partitioner_ref(p);
  td->gen = p->timer_gen;
  p->timer = zkrc__session_timer(p->s, p->time_boundary_ms, debounce_done, td,
                                 timer_data_free);
}

/* -------------------------------------------------------------- events */

/* The party changed (kazoo: its PatientChildrenWatch fired). */
static void party_changed_locked(zkrc_partitioner *p) {
  switch (p->state) {
  case ZKRC_PARTITIONER_ALLOCATING:
    if (p->trying)
      zkrc__partitioner_drop_slots_locked(p); /* abort the attempt */
    zkrc__partitioner_debounce_locked(p);
    break;
  case ZKRC_PARTITIONER_ACQUIRED:
    zkrc__partitioner_set_state_locked(p, ZKRC_PARTITIONER_RELEASE);
    break;
  default: /* RELEASE waits for the application; FAILURE is final */
    break;
  }
}

void zkrc__partitioner_party_event(zkrc_cache *c, const zkrc_cache_event *ev,
                                   void *arg) {
  zkrc_partitioner *p = arg;
  g_mutex_lock(&p->o.mu);
  if (zkrc__object_ending(&p->o)) { /* nothing more to decide */
    g_mutex_unlock(&p->o.mu);
    return;
  }
  p->party_seen = c; /* maybe before zkrc_children_cache_new() returned it */
  switch (ev->type) {
  case ZKRC_CACHE_INITIALIZED:
    p->party_ready = TRUE;
    if (p->state == ZKRC_PARTITIONER_ALLOCATING && !p->trying)
      zkrc__partitioner_debounce_locked(p);
    break;
  case ZKRC_CACHE_NODE_ADDED:
  case ZKRC_CACHE_NODE_UPDATED: /* deleted and created again */
  case ZKRC_CACHE_NODE_REMOVED:
    if (p->party_ready)
      party_changed_locked(p);
    break;
  default: /* connection events: the session's own events decide */
    break;
  }
  g_mutex_unlock(&p->o.mu);
}

void zkrc__partitioner_session_event(zkrc_session *s,
                                     const zkrc_session_event *ev, void *arg) {
  (void)s;
  zkrc_partitioner *p = arg;
  if (ev->type != ZKRC_SESSION_EVENT_LOST &&
      ev->type != ZKRC_SESSION_EVENT_EXPIRED &&
      ev->type != ZKRC_SESSION_EVENT_CLOSED &&
      ev->type != ZKRC_SESSION_EVENT_AUTH_FAILED)
    return;
  g_mutex_lock(&p->o.mu);
  if (!zkrc__object_ending(&p->o))
    zkrc__partitioner_fail_locked(p, zkrc_session_event_name(ev->type),
                                  ev->reason, ev->zk_error);
  g_mutex_unlock(&p->o.mu);
}

void zkrc__partitioner_lock_event(zkrc_lock *lk, const zkrc_lock_event *info,
                                  void *arg) {
  zkrc_partitioner *p = arg;
  if (info->type != ZKRC_LOCK_LOST)
    return; /* suspended, reconnected: the lease covers them */
  g_mutex_lock(&p->o.mu);
  for (guint i = 0; !zkrc__object_ending(&p->o) && i < p->slots->len; i++) {
    zkrc__slot *sl = g_ptr_array_index(p->slots, i);
    /* The hold itself when the event names it: a late event of a hold
     * released by an earlier attempt on the same item must not count. */
    if (sl->lk == lk && sl->held && (!info->hold || info->hold == sl->hold)) {
      zkrc__partitioner_fail_locked(p, "an item lock was lost", info->reason,
                                    info->zk_error);
      break;
    }
  }
  g_mutex_unlock(&p->o.mu);
}

GPtrArray *zkrc__partitioner_new_slots(void) {
  return g_ptr_array_new_with_free_func(slot_unref_cb);
}
