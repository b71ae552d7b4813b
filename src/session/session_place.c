/*
 * Where an ephemeral node lives: the session's own ZooKeeper session, or
 * one opened beside it when that one holds as many as it safely can.
 *
 * When a ZooKeeper session closes or expires, the leader proposes one
 * transaction that lists the path of every ephemeral node it still has
 * (CloseSessionTxn).  A follower reads at most jute.maxbuffer and
 * zookeeper.jute.maxbuffer.extrasize of a proposal (twice jute.maxbuffer
 * by default, at least jute.maxbuffer and 1 KiB); past that the followers
 * drop out, and the member that logged it cannot load its database again
 * (ZOOKEEPER-4306; it broke the bench's ensemble with 100,000 locks in one
 * session).  So every session keeps the bytes its ephemeral nodes take in
 * that list (4 and the path, chroot included) under
 * ZKRC__EPHEMERAL_BUDGET.
 *
 * A contender goes on the application's session while that one's nodes
 * take less than half the budget (the rest is kept for its kept ephemeral
 * nodes: groups, discovery, which stay on it and are refused past the
 * budget), else on a sibling: a session with the same hosts, options and
 * credentials, opened when needed (the worker opens the next one when the
 * last is three quarters full, so that an acquisition seldom waits for
 * it), kept until the application's closes, never told to its listeners.
 * A sibling that ended for good (its authentication failed) is passed
 * over.
 *
 * Lock order: s->siblings_mu is taken before any session's mutex (a new
 * sibling's is taken under it), never under one; the budgets are atomic.
 * Log lines go out from the worker: our callers hold a recipe's mutex.
 */
#include "config.h"

#include <string.h>

#include "core/log_internal.h"
#include "session/session_private.h"
#include "core/util.h"
#include "zkrecipes/error.h"

/* At most this many siblings: 64 sessions of 768 KiB of paths each hold
 * some 600,000 lock nodes of 70 bytes. */
#define MAX_SIBLINGS 64
/* What the application's own session gives its contenders: half the
 * budget, the rest kept for its kept ephemeral nodes. */
#define OWN_LIMIT (ZKRC__EPHEMERAL_BUDGET / 2)

size_t zkrc__ephemeral_cost(zkrc_session *s, size_t path_len) {
  return 4 + zkrc__session_chroot_len(s) + path_len;
}

/* Take @p bytes of @p s's budget if its nodes then take at most @p limit. */
static gboolean reserve_within(zkrc_session *s, size_t bytes, gint limit) {
  if (bytes > (size_t)limit)
    return FALSE;
  gint want = (gint)bytes;
  gint old = g_atomic_int_get(&s->placed_bytes);
  do {
    if (old > limit - want)
      return FALSE;
  } while (!g_atomic_int_compare_and_exchange_full(&s->placed_bytes, old,
                                                   old + want, &old));
  return TRUE;
}

gboolean zkrc__session_reserve(zkrc_session *s, size_t bytes) {
  return reserve_within(s, bytes, ZKRC__EPHEMERAL_BUDGET);
}

void zkrc__session_release(zkrc_session *s, size_t bytes) {
  gint before = g_atomic_int_add(&s->placed_bytes, -(gint)bytes);
  g_assert(before >= (gint)bytes);
}

/* ------------------------------------------------------------- logging */

/* Worker: a log line made under a mutex. */
static void log_line(void *data) {
  zkrc__log(ZKRC_LOG_INFO, "%s", (char *)data);
  g_free(data);
}

/* ------------------------------------------------------------ siblings */

/* A new session beside @p s (s->siblings_mu held): the same hosts and
 * options, no listener, the application's executor when @p s has one (a
 * sibling posts nothing to it: its contenders' owners post to their own
 * session), every credential added to @p s so far, and a new session
 * after an expiry whatever @p s does (its contenders end, others come).
 * Added to s->siblings.  NULL when it cannot be opened (an adopted handle
 * has no hosts to open; the limit; no memory).  Its log lines are
 * deferred: the caller has them delivered later. */
static zkrc_session *open_sibling_locked(zkrc_session *s) {
  if (s->hosts == NULL || s->siblings->len >= MAX_SIBLINGS)
    return NULL;
  zkrc_session_options o = s->opts;
  o.on_event = NULL;
  o.event_arg = NULL;
  o.no_reopen = 0;
  o.executor = s->opts.executor ? &s->executor : NULL;
  zkrc_session *sib = zkrc__session_alloc(s->hosts, &o);
  zkrc__session_copy_auths(sib, s);
  if (zkrc__session_open_first(sib) != ZKRC_OK)
    return NULL;
  g_ptr_array_add(s->siblings, sib);
  zkrc__session_run_on_worker(
      s, log_line,
      g_strdup_printf("session: %u ZooKeeper sessions hold its ephemeral "
                      "nodes now, each at most %d bytes of their paths "
                      "(ZOOKEEPER-4306)",
                      s->siblings->len + 1, ZKRC__EPHEMERAL_BUDGET));
  return sib;
}

/* Whether no sibling may be opened or used any more: @p s is closing, or
 * closed itself (an expiry without reopening, failed authentication). */
static gboolean siblings_over_locked(zkrc_session *s) {
  return s->siblings_closed || zkrc__session_closed(s);
}

/* Worker: open the next sibling before it is needed, unless one with room
 * appeared meanwhile. */
static void open_spare(void *data) {
  zkrc_session *s = data;
  zkrc__log_defer_begin();
  g_mutex_lock(&s->siblings_mu);
  s->spare_asked = FALSE;
  guint n = s->siblings->len;
  zkrc_session *last = n ? g_ptr_array_index(s->siblings, n - 1) : NULL;
  if (!siblings_over_locked(s) &&
      (last == NULL ||
       g_atomic_int_get(&last->placed_bytes) > ZKRC__EPHEMERAL_BUDGET / 4 * 3))
    open_sibling_locked(s);
  g_mutex_unlock(&s->siblings_mu);
  zkrc__log_flush(zkrc__log_defer_end());
  zkrc__session_unref(s);
}

/* Ask the worker for a spare sibling when @p last, the newest session
 * contenders go to, has three quarters of @p limit taken (siblings_mu
 * held). */
static void maybe_ask_spare_locked(zkrc_session *s, zkrc_session *last,
                                   gint limit) {
  if (s->spare_asked || g_atomic_int_get(&last->placed_bytes) <= limit / 4 * 3)
    return;
  s->spare_asked = TRUE;
  zkrc__session_run_on_worker(s, open_spare, zkrc__session_ref(s));
}

/* A live sibling with room for @p bytes, taken (siblings_mu held). */
static zkrc_session *sibling_with_room_locked(zkrc_session *s, size_t bytes) {
  for (guint i = 0; i < s->siblings->len; i++) {
    zkrc_session *sib = g_ptr_array_index(s->siblings, i);
    if (!zkrc__session_closed(sib) && zkrc__session_reserve(sib, bytes)) {
      if (i == s->siblings->len - 1)
        maybe_ask_spare_locked(s, sib, ZKRC__EPHEMERAL_BUDGET);
      return sib;
    }
  }
  return NULL;
}

/* Where a contender's node goes (siblings_mu held): @p s or a sibling,
 * its bytes taken; NULL when no session can take them. */
static zkrc_session *place_locked(zkrc_session *s, size_t bytes) {
  if (reserve_within(s, bytes, OWN_LIMIT)) {
    if (s->siblings->len == 0)
      maybe_ask_spare_locked(s, s, OWN_LIMIT);
    return s;
  }
  zkrc_session *sib = sibling_with_room_locked(s, bytes);
  if (sib == NULL && (sib = open_sibling_locked(s)) != NULL) {
    gboolean room = zkrc__session_reserve(sib, bytes);
    g_assert(room); /* a new session's budget is whole */
  }
  return sib;
}

zkrc_session *zkrc__session_place(zkrc_session *s, size_t bytes,
                                  gboolean *beside) {
  zkrc__log_defer_begin();
  g_mutex_lock(&s->siblings_mu);
  /* Closing, or closed by itself: on @p s, whose contenders end at once. */
  zkrc_session *placed =
      siblings_over_locked(s) ? NULL : place_locked(s, bytes);
  if (placed == NULL) {
    if (!siblings_over_locked(s) && !s->over_budget_told)
      zkrc__session_run_on_worker(
          s, log_line,
          g_strdup("session: its ephemeral nodes go past half its budget "
                   "and no session could be opened beside it: its close "
                   "may list more than the followers read "
                   "(ZOOKEEPER-4306)"));
    s->over_budget_told = TRUE;
    g_atomic_int_add(&s->placed_bytes, (gint)bytes); /* given back later */
    placed = s;
  }
  *beside = placed != s;
  /* A sibling's contenders count as its recipes: closing it does not wait
   * for references that live as long as the application's objects. */
  zkrc_session *ref =
      *beside ? zkrc__session_ref_recipe(placed) : zkrc__session_ref(placed);
  g_mutex_unlock(&s->siblings_mu);
  void *lines = zkrc__log_defer_end();
  if (lines)
    zkrc__session_run_on_worker(s, zkrc__log_flush, lines);
  return ref;
}

/* ------------------------------------------------ credentials, closing */

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

void zkrc__session_siblings_add_auth(zkrc_session *s, const char *scheme,
                                     const char *cred) {
  GPtrArray *list = siblings_snapshot(s);
  for (guint i = 0; i < list->len; i++)
    zkrc__session_give_auth(g_ptr_array_index(list, i), scheme, cred);
  g_ptr_array_free(list, TRUE);
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
