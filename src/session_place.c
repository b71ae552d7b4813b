/*
 * Where an ephemeral node lives: the session's own ZooKeeper session, or
 * one opened beside it when that one holds as many as it safely can.
 *
 * When a ZooKeeper session closes or expires, the leader proposes one
 * transaction that lists the path of every ephemeral node it still has
 * (CloseSessionTxn).  Past jute.maxbuffer the followers cannot read that
 * proposal: they drop out of the quorum, and every following election
 * fails the same way (ZOOKEEPER-4306; it broke the bench's ensemble with
 * 100,000 locks in one session).  So every session keeps the bytes its
 * ephemeral nodes take in that list (4 and the path, chroot included)
 * under ZKRC__EPHEMERAL_BUDGET.  A contender that does not fit is placed
 * on a sibling: a session with the same hosts, options and credentials,
 * opened when needed, kept until its primary closes, never told to the
 * application's listeners.  A kept ephemeral node (zkrc_ephemeral: groups,
 * discovery) stays on its own session and is refused when it does not fit.
 *
 * Lock order: s->siblings_mu is taken before any session's mutex (a new
 * sibling's is taken under it), never under one; the budgets are atomic.
 */
#include "config.h"

#include <string.h>

#include "log_internal.h"
#include "session_private.h"
#include "util.h"
#include "zkrecipes/error.h"

size_t zkrc__ephemeral_cost(zkrc_session *s, size_t path_len) {
  return 4 + zkrc__session_chroot_len(s) + path_len;
}

gboolean zkrc__session_reserve(zkrc_session *s, size_t bytes) {
  if (bytes > ZKRC__EPHEMERAL_BUDGET)
    return FALSE;
  gint want = (gint)bytes;
  gint old = g_atomic_int_get(&s->placed_bytes);
  do {
    if (old > ZKRC__EPHEMERAL_BUDGET - want)
      return FALSE;
  } while (!g_atomic_int_compare_and_exchange_full(&s->placed_bytes, old,
                                                   old + want, &old));
  return TRUE;
}

void zkrc__session_release(zkrc_session *s, size_t bytes) {
  gint before = g_atomic_int_add(&s->placed_bytes, -(gint)bytes);
  g_assert(before >= (gint)bytes);
}

/* A new session beside @p s (s->siblings_mu held): the same hosts and
 * options, no listener, the application's executor when @p s has one (a
 * sibling posts nothing to it today: its contenders' owners post to their
 * own session), and every credential added to @p s so far.  NULL when it
 * cannot be opened (an adopted handle has no hosts to open; no memory). */
static zkrc_session *open_sibling_locked(zkrc_session *s) {
  if (s->hosts == NULL)
    return NULL;
  zkrc_session_options o = s->opts;
  o.listener = NULL;
  o.listener_arg = NULL;
  o.executor = s->opts.executor ? &s->executor : NULL;
  zkrc_session *sib = zkrc__session_alloc(s->hosts, &o);
  zkrc__session_copy_auths(sib, s);
  if (zkrc__session_open_first(sib) != ZKRC_OK)
    return NULL;
  zkrc__log(ZKRC_LOG_INFO,
            "session: %u sessions hold this one's ephemeral nodes now "
            "(each at most %d bytes of paths, ZOOKEEPER-4306)",
            s->siblings->len + 2, ZKRC__EPHEMERAL_BUDGET);
  return sib;
}

zkrc_session *zkrc__session_place(zkrc_session *s, size_t bytes) {
  if (zkrc__session_reserve(s, bytes))
    return zkrc__session_ref(s);
  zkrc_session *placed = NULL;
  /* Our callers hold a recipe's mutex: the log lines (ours, the new
   * handle's) reach the application from the worker, as queue.c's do. */
  zkrc__log_defer_begin();
  g_mutex_lock(&s->siblings_mu);
  for (guint i = 0; placed == NULL && i < s->siblings->len; i++) {
    zkrc_session *sib = g_ptr_array_index(s->siblings, i);
    if (zkrc__session_reserve(sib, bytes))
      placed = zkrc__session_ref(sib);
  }
  zkrc_session *sib =
      placed || s->siblings_closed ? NULL : open_sibling_locked(s);
  if (sib) {
    g_ptr_array_add(s->siblings, sib);
    gboolean room = zkrc__session_reserve(sib, bytes);
    g_assert(room); /* a new session's budget is whole */
    placed = zkrc__session_ref(sib);
  } else if (placed == NULL) {
    /* Closing (its contenders end at once), or no session can be opened
     * (an adopted handle): past the budget here rather than nowhere. */
    if (!s->siblings_closed && !s->over_budget_told)
      zkrc__log(ZKRC_LOG_WARN,
                "session: its ephemeral nodes go past %d bytes of paths, "
                "more than its close may list (ZOOKEEPER-4306), and no "
                "session could be opened beside it",
                ZKRC__EPHEMERAL_BUDGET);
    s->over_budget_told = TRUE;
    g_atomic_int_add(&s->placed_bytes, (gint)bytes);
    placed = zkrc__session_ref(s);
  }
  g_mutex_unlock(&s->siblings_mu);
  void *lines = zkrc__log_defer_end();
  if (lines)
    zkrc__session_run_on_worker(s, zkrc__log_flush, lines);
  return placed;
}

/* The siblings of @p s, referenced, for a caller outside siblings_mu. */
static GPtrArray *siblings_snapshot(zkrc_session *s) {
  GPtrArray *list =
      g_ptr_array_new_with_free_func((GDestroyNotify)zkrc__session_unref);
  g_mutex_lock(&s->siblings_mu);
  for (guint i = 0; i < s->siblings->len; i++)
    g_ptr_array_add(list, zkrc__session_ref(g_ptr_array_index(s->siblings, i)));
  g_mutex_unlock(&s->siblings_mu);
  return list;
}

int zkrc__session_siblings_add_auth(zkrc_session *s, const char *scheme,
                                    const char *cred, int64_t deadline) {
  GPtrArray *list = siblings_snapshot(s);
  int err = ZKRC_OK;
  for (guint i = 0; i < list->len && err == ZKRC_OK; i++)
    err = zkrc__session_add_auth_until(g_ptr_array_index(list, i), scheme, cred,
                                       deadline);
  g_ptr_array_free(list, TRUE);
  return err;
}

void zkrc__session_close_siblings(zkrc_session *s) {
  g_mutex_lock(&s->siblings_mu);
  s->siblings_closed = TRUE;
  GPtrArray *list = s->siblings;
  s->siblings = g_ptr_array_new();
  g_mutex_unlock(&s->siblings_mu);
  /* Each close ends its contenders (ECLOSED: their owners post to their
   * own session, still open), lets the servers delete their nodes, and
   * drops the list's reference. */
  g_ptr_array_set_free_func(list, NULL);
  for (guint i = 0; i < list->len; i++)
    zkrc_session_close(g_ptr_array_index(list, i));
  g_ptr_array_free(list, TRUE);
}
