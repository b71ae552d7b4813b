/*
 * The orphan reaper: nodes we created but can no longer use (an acquisition
 * that timed out while the connection was down, a create whose reply was
 * lost, a node left by a ZooKeeper session we presumed lost) are deleted by
 * the session as soon as it is connected (session_internal.h).
 */
#include "config.h"

#include "session/call.h"
#include "session/session_private.h"
#include "session/zk_call.h"

typedef struct reap_entry {
  char *parent;
  char *prefix; /* "_c_<uuid>-" */
  char *name;   /* the node's name when known, else NULL */
  uint64_t generation;
  gboolean in_flight;
} reap_entry;

typedef struct reap_call {
  zkrc_session *s;
  reap_entry *entry;
} reap_call;

static void free_reap(gpointer p) {
  reap_entry *r = p;
  g_free(r->parent);
  g_free(r->prefix);
  g_free(r->name);
  g_free(r);
}

GPtrArray *zkrc__reaper_new(void) {
  return g_ptr_array_new_with_free_func(free_reap);
}

void zkrc__reaper_forget_locked(zkrc_session *s, uint64_t generation) {
  for (guint i = s->reap->len; i-- > 0;) {
    reap_entry *r = g_ptr_array_index(s->reap, i);
    if (r->generation == generation)
      g_ptr_array_remove_index(s->reap, i);
  }
}

static void reap_done(zkrc_session *s, reap_entry *entry, int rc) {
  g_mutex_lock(&s->o.mu);
  entry->in_flight = FALSE;
  if (rc == ZOK || rc == ZNONODE)
    g_ptr_array_remove(s->reap, entry); /* frees it */
  g_mutex_unlock(&s->o.mu);
}

static void reap_delete_completion(int rc, const void *data) {
  reap_call *rcall = (reap_call *)data;
  reap_done(rcall->s, rcall->entry, rc);
  zkrc__session_unref(rcall->s);
  g_free(rcall);
}

static void reap_children_completion(int rc, const struct String_vector *kids,
                                     const void *data) {
  reap_call *rcall = (reap_call *)data;
  zkrc_session *s = rcall->s;
  reap_entry *entry = rcall->entry;
  int result = rc;
  if (rc == ZOK) {
    zkrc_conn *c = zkrc__conn_use(s);
    for (int i = 0; c && i < kids->count; i++) {
      if (!g_str_has_prefix(kids->data[i], entry->prefix))
        continue;
      char *path = g_strdup_printf("%s/%s", entry->parent, kids->data[i]);
      /* Fire and forget: if this delete is lost, the next connect's pass
       * finds the node again (the entry is kept until a pass sees none). */
      zkrc__zk_delete(c, path, -1, zkrc__ignore_void_done, NULL);
      g_free(path);
      result = ZCONNECTIONLOSS; /* look once more next time */
    }
    if (c)
      zkrc__conn_unuse(c);
  }
  reap_done(s, entry, result);
  zkrc__session_unref(s);
  g_free(rcall);
}

void zkrc__reaper_run(zkrc_session *s) {
  /* A lapsed handle is parked (session_conn.c) until its LOST was told and
   * the allowance passed: its nodes, which the reaper would delete through
   * the new session, wait as long; its close runs the reaper. */
  g_mutex_lock(&s->o.mu);
  gboolean parked = s->parked != NULL;
  g_mutex_unlock(&s->o.mu);
  if (parked)
    return;
  zkrc_conn *c = zkrc__conn_use(s);
  if (c == NULL)
    return;
  g_mutex_lock(&s->o.mu);
  GPtrArray *todo = g_ptr_array_new();
  for (guint i = 0; i < s->reap->len; i++) {
    reap_entry *r = g_ptr_array_index(s->reap, i);
    if (!r->in_flight) {
      r->in_flight = TRUE;
      g_ptr_array_add(todo, r);
    }
  }
  g_mutex_unlock(&s->o.mu);

  for (guint i = 0; i < todo->len; i++) {
    reap_entry *r = g_ptr_array_index(todo, i);
    reap_call *rcall = g_new(reap_call, 1);
    rcall->s = zkrc__session_ref(s);
    rcall->entry = r;
    int rc;
    if (r->name) {
      char *path = g_strdup_printf("%s/%s", r->parent, r->name);
      rc = zkrc__zk_delete(c, path, -1, reap_delete_completion, rcall);
      g_free(path);
    } else {
      rc = zkrc__zk_get_children(c, r->parent, NULL, reap_children_completion,
                                 rcall);
    }
    if (rc != ZOK) {
      reap_done(s, r, ZCONNECTIONLOSS);
      zkrc__session_unref(s);
      g_free(rcall);
    }
  }
  g_ptr_array_free(todo, TRUE);
  zkrc__conn_unuse(c);
}

static void run_reaper_task(void *data) { zkrc__reaper_run(data); }

void zkrc__session_reap(zkrc_session *s, const char *parent, const char *prefix,
                        const char *name, uint64_t generation) {
  reap_entry *r = g_new0(reap_entry, 1);
  r->parent = g_strdup(parent);
  r->prefix = g_strdup(prefix);
  r->name = g_strdup(name);
  r->generation = generation;
  g_mutex_lock(&s->o.mu);
  gboolean closing = s->closing;
  if (!closing)
    g_ptr_array_add(s->reap, r);
  g_mutex_unlock(&s->o.mu);
  if (closing) {
    free_reap(r); /* closing the handle removes our ephemeral nodes */
    return;
  }
  /* If connected now, go at once (from the worker: this may be called on
   * ZooKeeper's completion thread). */
  zkrc__session_run_on_worker(s, run_reaper_task, s);
}
