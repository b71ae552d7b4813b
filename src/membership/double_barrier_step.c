/*
 * The double barrier's protocol (zkrecipes/barrier.h), as Curator's
 * DistributedDoubleBarrier and kazoo's DoubleBarrier run it, one
 * asynchronous request at a time, each sent from the previous one's
 * completion (never a blocking call, never on the caller's thread):
 *
 * Entering, once our node is registered: exists(ready) with a watch; there
 * -> ENTERED.  Missing -> the children of the path: N or more (the
 * libraries count "ready" too) -> create ready (one that exists counts)
 * -> ENTERED; fewer -> wait for the watch (ready created), then again.
 *
 * Leaving: kazoo deletes ready first.  Then the children, without
 * "ready", sorted as byte strings: none -> all out; ours missing while it
 * should be there -> LOST (ENONODE); ours the lowest -> alone: delete it,
 * all out; else watch the highest and look again once it is gone.  Not
 * the lowest -> delete ours (once), watch the lowest, look again once it
 * is gone.  All out: Curator deletes ready, then LEFT.
 *
 * A request that fails transiently (connection lost, a new session) is
 * sent again after a backoff (50 ms doubling to 2 s, from 50 ms again
 * after progress: entered, fewer members in) until the member is out or LOST; a connection back
 * looks again at once.  A refusal (an ACL) ends the member, LOST, as do
 * MAX_FAILURES other failures without progress.  Our node given up while
 * disconnected is deleted by the session's reaper once connected: while
 * it is still listed, we watch it until it is gone.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/object.h"
#include "core/util.h"
#include "membership/double_barrier_private.h"
#include "session/session_internal.h"
#include "session/zk_call.h"
#include "zkrecipes/error.h"

#define RETRY_MAX_MS 2000
#define MAX_FAILURES 10

static void unref_b(void *b) { zkrc__object_unref(b); }

static void watch_ref(void *b) { zkrc__object_ref(b); }

static const zkrc__watch_target_ops watch_ops = {watch_ref, unref_b};

void zkrc__db_quiet_locked(zkrc_double_barrier *b) {
  if (b->watch_ctx) {
    zkrc__watch_cancel(b->watch_ctx);
    b->watch_ctx = NULL;
  }
  GSource *timer = b->retry_timer;
  b->retry_timer = NULL;
  if (timer) {
    g_source_destroy(timer);
    g_source_unref(timer);
  }
}

static gboolean active_locked(const zkrc_double_barrier *b) {
  return !zkrc__object_ending(&b->o) && !b->closed &&
         (b->phase == ZKRC__DB_ENTERING || b->phase == ZKRC__DB_LEAVING);
}

/* ------------------------------------------------------------ retries */

static gboolean retry_fired(gpointer data) {
  zkrc_double_barrier *b = data;
  g_mutex_lock(&b->o.mu);
  GSource *timer = b->retry_timer;
  b->retry_timer = NULL;
  if (timer) {
    g_source_unref(timer);
    zkrc__db_step_locked(b);
  }
  g_mutex_unlock(&b->o.mu);
  return G_SOURCE_REMOVE;
}

/* Progress (entered, or fewer members left in): the backoff and the count
 * of failures start over.  Not any answer: a step that fails after one
 * that succeeds would otherwise be retried every 50 ms for good. */
static void progress_locked(zkrc_double_barrier *b) {
  b->failures = 0;
  b->retry_ms = 50;
}

static void retry_later_locked(zkrc_double_barrier *b) {
  if (b->retry_timer || !active_locked(b))
    return;
  int ms = b->retry_ms;
  b->retry_ms = MIN(ms * 2, RETRY_MAX_MS);
  b->retry_timer = zkrc__session_timer(b->s, ms, retry_fired,
                                       zkrc__object_ref(&b->o), unref_b);
}

/* The connection or the session is in trouble: asking again after a
 * backoff can help (the member's lease bounds it: LOST ends it). */
static gboolean connection_trouble(int rc) {
  return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT ||
         rc == ZSESSIONMOVED || rc == ZSESSIONEXPIRED || rc == ZCLOSING ||
         rc == ZINVALIDSTATE;
}

/* Refusals that asking again cannot change. */
static gboolean refused(int rc) {
  return rc == ZNOAUTH || rc == ZINVALIDACL || rc == ZBADARGUMENTS ||
         rc == ZNOCHILDRENFOREPHEMERALS || rc == ZMARSHALLINGERROR;
}

/* A failed request's code: connection trouble is retried after a backoff;
 * a refusal ends the member (LOST with its error) at once, any other code
 * after MAX_FAILURES failures without progress. */
static void failed_locked(zkrc_double_barrier *b, int rc) {
  if (!connection_trouble(rc) && (refused(rc) || ++b->failures > MAX_FAILURES))
    zkrc__db_lost_locked(b, zkrc_from_zk_error(rc), rc);
  else
    retry_later_locked(b);
}

/* ------------------------------------------------------------ sending */

static void entered_locked(zkrc_double_barrier *b);

/* The watch on a node (ready, or the member we wait for) fired.  "ready"
 * created is entering, as kazoo takes it: a member that leaves first may
 * delete it (kazoo's do, at once) and its node before we look again. */
static void on_watch(int type, const char *path, void *target, void *ctx) {
  (void)path;
  zkrc_double_barrier *b = target;
  g_mutex_lock(&b->o.mu);
  if (ctx == b->watch_ctx) {
    b->watch_ctx = NULL;
    if (b->phase == ZKRC__DB_ENTERING && type == ZOO_CREATED_EVENT)
      b->ready_seen = TRUE;
    if (b->ready_seen && b->phase == ZKRC__DB_ENTERING)
      entered_locked(b);
    zkrc__db_step_locked(b);
  }
  g_mutex_unlock(&b->o.mu);
}

/* A request in flight: the object referenced, busy set.  The completion
 * takes it back (done_locked) and checks the object is still going. */
static zkrc_conn *begin_locked(zkrc_double_barrier *b) {
  zkrc_conn *c = zkrc__conn_use(b->s);
  if (c == NULL)
    return NULL; /* between sessions: the next CONNECTED steps */
  b->busy = TRUE;
  zkrc__object_ref(&b->o);
  return c;
}

/* The request could not be queued (@p rc). */
static void not_sent_locked(zkrc_double_barrier *b, zkrc_conn *c, int rc) {
  zkrc__conn_unuse(c);
  b->busy = FALSE;
  zkrc__object_unref(&b->o); /* not the last: the caller has one */
  failed_locked(b, rc);
}

/* A completion's end: a step asked for meanwhile is taken. */
static void done_end(zkrc_double_barrier *b) {
  if (b->again)
    zkrc__db_step_locked(b);
  g_mutex_unlock(&b->o.mu);
  zkrc__object_unref(&b->o);
}

/* A completion's start: the object locked, busy cleared; FALSE (and the
 * request's reference dropped) when it has nothing more to do: the object
 * is ending, or no longer in the @p phase the request was sent in.  An
 * entering request answered after leave() began (the member entered by
 * the watch on ready meanwhile) must not act: it would create "ready"
 * again among the leaving members (kazoo's take it for a member and wait
 * for it to go) and set the phase back to ENTERED. */
static gboolean done_begin(zkrc_double_barrier *b, int *rc,
                           zkrc__db_phase phase) {
  *rc = zkrc__session_reply_rc(b->s, *rc);
  g_mutex_lock(&b->o.mu);
  b->busy = FALSE;
  if (active_locked(b) && b->phase == phase)
    return TRUE;
  if (active_locked(b)) {
    done_end(b); /* the step leave() asked for while we were busy */
    return FALSE;
  }
  g_mutex_unlock(&b->o.mu);
  zkrc__object_unref(&b->o);
  return FALSE;
}

static void send_exists_locked(zkrc_double_barrier *b, const char *path,
                               stat_completion_t done) {
  zkrc_conn *c = begin_locked(b);
  if (c == NULL)
    return;
  if (b->watch_ctx)
    zkrc__watch_cancel(b->watch_ctx);
  b->watch_ctx = zkrc__watch_register(c, on_watch, b, &watch_ops);
  int rc = zkrc__zk_exists(c, path, b->watch_ctx, done, b);
  if (rc != ZOK) {
    zkrc__watch_cancel(b->watch_ctx);
    b->watch_ctx = NULL;
    not_sent_locked(b, c, rc);
    return;
  }
  zkrc__conn_unuse(c);
}

static void send_children_locked(zkrc_double_barrier *b,
                                 strings_completion_t done) {
  zkrc_conn *c = begin_locked(b);
  if (c == NULL)
    return;
  int rc = zkrc__zk_get_children(c, b->path, NULL, done, b);
  if (rc != ZOK)
    not_sent_locked(b, c, rc);
  else
    zkrc__conn_unuse(c);
}

static void send_delete_locked(zkrc_double_barrier *b, const char *path,
                               void_completion_t done) {
  zkrc_conn *c = begin_locked(b);
  if (c == NULL)
    return;
  int rc = zkrc__zk_delete(c, path, -1, done, b);
  if (rc != ZOK)
    not_sent_locked(b, c, rc);
  else
    zkrc__conn_unuse(c);
}

/* ----------------------------------------------------------- entering */

/* ENTERED, if our node is registered now (by the lease); else its next
 * REGISTERED looks again. */
static void entered_locked(zkrc_double_barrier *b) {
  if (b->self == NULL || !zkrc_ephemeral_is_registered(b->self))
    return;
  zkrc__db_quiet_locked(b);
  progress_locked(b);
  b->phase = ZKRC__DB_ENTERED;
  b->entered = TRUE;
  zkrc__db_tell_locked(b, ZKRC_DOUBLE_BARRIER_ENTERED, ZKRC_OK, ZOK);
}

static void ready_created(int rc, const char *value, const void *data) {
  (void)value;
  zkrc_double_barrier *b = (zkrc_double_barrier *)data;
  if (!done_begin(b, &rc, ZKRC__DB_ENTERING))
    return;
  if (rc == ZOK || rc == ZNODEEXISTS)
    entered_locked(b);
  else
    failed_locked(b, rc);
  done_end(b);
}

static void entering_counted(int rc, const struct String_vector *children,
                             const void *data) {
  zkrc_double_barrier *b = (zkrc_double_barrier *)data;
  if (!done_begin(b, &rc, ZKRC__DB_ENTERING))
    return;
  if (rc != ZOK) {
    failed_locked(b, rc);
  } else if (children->count >= b->members) {
    zkrc_conn *c = begin_locked(b);
    if (c) {
      rc = zkrc__zk_create(c, b->ready, NULL, -1, zkrc__acl_vector(b->acl), 0,
                           ready_created, b);
      if (rc != ZOK)
        not_sent_locked(b, c, rc);
      else
        zkrc__conn_unuse(c);
    }
  } /* else: fewer, the watch on ready tells */
  done_end(b);
}

static void entering_ready(int rc, const struct Stat *stat, const void *data) {
  (void)stat;
  zkrc_double_barrier *b = (zkrc_double_barrier *)data;
  if (!done_begin(b, &rc, ZKRC__DB_ENTERING))
    return;
  if (rc == ZOK)
    entered_locked(b);
  else if (rc == ZNONODE)
    send_children_locked(b, entering_counted);
  else
    failed_locked(b, rc);
  done_end(b);
}

/* ------------------------------------------------------------ leaving */

static void all_out_locked(zkrc_double_barrier *b);

static void ready_cleared(int rc, const void *data) {
  zkrc_double_barrier *b = (zkrc_double_barrier *)data;
  if (!done_begin(b, &rc, ZKRC__DB_LEAVING))
    return;
  if (rc == ZOK || rc == ZNONODE) {
    if (b->finishing) {
      b->phase = ZKRC__DB_LEFT;
      zkrc__db_quiet_locked(b);
      zkrc__db_tell_locked(b, ZKRC_DOUBLE_BARRIER_LEFT, ZKRC_OK, ZOK);
    } else {
      b->ready_cleared = TRUE;
      b->again = TRUE;
    }
  } else {
    failed_locked(b, rc);
  }
  done_end(b);
}

/* Every member's node is gone: Curator deletes ready now. */
static void all_out_locked(zkrc_double_barrier *b) {
  b->finishing = TRUE;
  if (b->dialect == ZKRC_BARRIER_CURATOR) {
    send_delete_locked(b, b->ready, ready_cleared);
    return;
  }
  b->phase = ZKRC__DB_LEFT;
  zkrc__db_quiet_locked(b);
  zkrc__db_tell_locked(b, ZKRC_DOUBLE_BARRIER_LEFT, ZKRC_OK, ZOK);
}

static int by_name(const void *x, const void *y) {
  return strcmp(*(char *const *)x, *(char *const *)y);
}

/* A node we wait for is there (watched), or gone already: look again. */
static void waiting_on(int rc, const struct Stat *stat, const void *data) {
  (void)stat;
  zkrc_double_barrier *b = (zkrc_double_barrier *)data;
  if (!done_begin(b, &rc, ZKRC__DB_LEAVING))
    return;
  if (rc == ZNONODE)
    b->again = TRUE;
  else if (rc != ZOK)
    failed_locked(b, rc);
  done_end(b);
}

/* The members still in, sorted, "ready" left out; our place among them. */
static void leaving_listed(int rc, const struct String_vector *children,
                           const void *data) {
  zkrc_double_barrier *b = (zkrc_double_barrier *)data;
  if (!done_begin(b, &rc, ZKRC__DB_LEAVING))
    return;
  if (rc != ZOK && rc != ZNONODE) {
    failed_locked(b, rc);
    done_end(b);
    return;
  }
  int n = 0, count = rc == ZOK ? children->count : 0;
  char **names = g_new0(char *, count + 1);
  for (int i = 0; i < count; i++)
    if (strcmp(children->data[i], "ready") != 0)
      names[n++] = children->data[i];
  qsort(names, (size_t)n, sizeof *names, by_name);
  int ours = -1;
  for (int i = 0; i < n && ours < 0; i++)
    if (strcmp(names[i], b->name) == 0)
      ours = i;
  char *watch = NULL;
  if (n < b->last_listed) {
    b->last_listed = n;
    progress_locked(b);
  }
  if (n == 0)
    all_out_locked(b);
  else if (ours < 0 && !b->ours_gone)
    zkrc__db_lost_locked(b, ZKRC_ENONODE, ZNONODE);
  else if (ours >= 0 && b->ours_gone) /* its delete is the reaper's now */
    watch = g_strdup_printf("%s/%s", b->path, b->name);
  else if (ours == 0 && n == 1)
    zkrc__db_give_up_node_locked(b, TRUE); /* then: none left */
  else if (ours == 0)
    watch = g_strdup_printf("%s/%s", b->path, names[n - 1]);
  else if (!b->ours_gone)
    zkrc__db_give_up_node_locked(b, TRUE); /* then: watch the lowest */
  else
    watch = g_strdup_printf("%s/%s", b->path, names[0]);
  if (watch)
    send_exists_locked(b, watch, waiting_on);
  g_free(watch);
  g_free(names);
  done_end(b);
}

/* ----------------------------------------------------------- the step */

void zkrc__db_step_locked(zkrc_double_barrier *b) {
  if (!active_locked(b))
    return;
  if (b->busy || b->retry_timer) {
    b->again = !b->busy ? b->again : TRUE;
    return;
  }
  b->again = FALSE;
  if (b->phase == ZKRC__DB_ENTERING) {
    if (b->registered && b->ready_seen)
      entered_locked(b);
    else if (b->registered)
      send_exists_locked(b, b->ready, entering_ready);
  } else if (b->dialect == ZKRC_BARRIER_KAZOO && !b->ready_cleared) {
    send_delete_locked(b, b->ready, ready_cleared);
  } else if (b->finishing) {
    send_delete_locked(b, b->ready, ready_cleared);
  } else {
    send_children_locked(b, leaving_listed);
  }
}
