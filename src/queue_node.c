/*
 * The contender queue: our node.  Creating it (with its directory and
 * missing ancestors as containers, the children read pipelined behind),
 * deleting it when the owner withdraws, and handing what may outlive us to
 * the session's reaper.  See queue_private.h.
 */
#include "config.h"

#include <string.h>

#include "queue_private.h"

/* Our node may outlive us on the servers: have the session delete it.
 * (The reaper drops the entry by itself if the session turns out expired.) */
void zkrc__q_reap_leftovers_locked(zkrc__contender *c) {
  if (c->generation == 0)
    return;
  if (c->name_known)
    zkrc__session_reap(c->s, c->dir, c->prefix, c->name, c->generation);
  else if (c->create_unknown)
    zkrc__session_reap(c->s, c->dir, c->prefix, NULL, c->generation);
}

/* Remember our node's full path (its name is the last component), as a
 * GRefString the owner may share (zkrc__contender_path_shared). */
void zkrc__q_set_path_locked(zkrc__contender *c, char *path) {
  if (c->path)
    g_ref_string_release(c->path);
  c->path = g_ref_string_new(path);
  g_free(path);
  c->name = strrchr(c->path, '/') + 1;
}

/* ----------------------------------------------------- create + children */

/* How creating an ancestor went: the directory itself, or the topmost. */
static void note_ancestor(req *r, int rc, gboolean topmost) {
  if (zkrc__q_lock_if_current(r)) {
    *(topmost ? &r->c->root_rc : &r->c->parent_rc) = rc;
    g_mutex_unlock(&r->c->mu);
  }
  zkrc__q_req_free(r);
}

static void parent_done(int rc, const char *value, const void *data) {
  note_ancestor((req *)data, rc, FALSE);
}

static void root_done(int rc, const char *value, const void *data) {
  note_ancestor((req *)data, rc, TRUE);
}

/* Creating our directory's topmost ancestor failed with ZNONODE: its parent,
 * the root, does not exist: the session's chroot is missing.  No retry can
 * help. */
static gboolean root_missing_locked(zkrc__contender *c) {
  gboolean top_level = strchr(c->dir + 1, '/') == NULL;
  return c->root_rc == ZNONODE || (top_level && c->parent_rc == ZNONODE);
}

static void create_done(int rc, const char *value, const struct Stat *stat,
                        const void *data) {
  req *r = (req *)data;
  zkrc__contender *c = r->c;
  step next = STEP_NONE;
  g_mutex_lock(&c->mu);
  if (r->epoch != c->epoch || c->state != C_CREATING) {
    /* Nobody waits for this node any more (the contender ended meanwhile):
     * have the session delete it. */
    if (rc == ZOK)
      zkrc__session_reap(c->s, c->dir, c->prefix, strrchr(value, '/') + 1,
                         c->generation);
    g_mutex_unlock(&c->mu);
    zkrc__q_finish_stale_reply(r);
    return;
  }
  if (rc == ZOK) {
    c->name_known = TRUE;
    c->create_unknown = FALSE;
    zkrc__q_set_path_locked(c, g_strdup(value));
    c->czxid = stat->czxid;
    c->owner = stat->ephemeralOwner;
    c->parent_missing = FALSE;
    c->attempts = 0;
    if (c->withdrawing)
      next = STEP_DELETE;
    else if (c->watch_own)
      /* Watch our node from the start, so that the hand-over, when it
       * comes, costs one read; the children reply is right behind. */
      next = STEP_ARM_OWN_WATCH;
  } else if (rc == ZNONODE) {
    c->parent_missing = TRUE;
    if (c->withdrawing) {
      zkrc__q_end_locked(c, ZKRC_OK, 0, FALSE);
    } else if (root_missing_locked(c)) {
      zkrc__q_end_locked(c, ZKRC_ENONODE, ZNONODE, FALSE);
    } else if (c->attempts >= MAX_CREATE_ATTEMPTS) {
      int cause = c->parent_rc != ZOK && c->parent_rc != ZNODEEXISTS
                      ? c->parent_rc
                      : ZNONODE;
      zkrc__q_end_locked(c, zkrc_from_zk_error(cause), cause, FALSE);
    } else if (c->attempts == 1) {
      next = STEP_SEND_CREATE; /* with the directory, this time */
    } else {
      /* Someone keeps removing the directory: do not race them flat out. */
      c->retry_step = STEP_SEND_CREATE;
      c->retry_reason = ZNONODE;
      next = STEP_RETRY_LATER;
    }
  } else if (zkrc__q_connection_trouble(rc) || zkrc__q_session_gone(rc)) {
    /* Whether the node was made is unknown: look for it by its prefix. */
    c->create_unknown = TRUE;
    if (c->withdrawing)
      zkrc__q_end_locked(c, ZKRC_OK, 0,
                         TRUE); /* the reaper finds and deletes it */
    else
      next = zkrc__q_after_failure_locked(c, rc);
  } else {
    zkrc__q_end_locked(c, zkrc_from_zk_error(rc), rc, FALSE);
  }
  zkrc__q_finish_locked_reply(r, next);
}

static void children_done(int rc, const struct String_vector *kids,
                          const void *data) {
  req *r = (req *)data;
  zkrc__contender *c = r->c;
  step next = STEP_NONE;
  if (!zkrc__q_begin_reply(r))
    return;
  if (c->state == C_CREATING && c->name_known && !c->withdrawing) {
    if (rc == ZOK)
      next = zkrc__q_evaluate_locked(c, kids, FALSE);
    else
      next = zkrc__q_after_failure_locked(c, rc);
  }
  zkrc__q_finish_locked_reply(r, next);
}

/* Create the directory and its missing ancestors as containers, in order,
 * without waiting: the create that follows tells whether it worked. */
static void send_parents(zkrc__contender *c, zhandle_t *zh, req *top,
                         req *last) {
  char **parts = g_strsplit(c->dir + 1, "/", -1);
  GString *path = g_string_new(NULL);
  for (int i = 0; parts[i]; i++) {
    g_string_append_c(path, '/');
    g_string_append(path, parts[i]);
    gboolean is_dir = parts[i + 1] == NULL;
    string_completion_t done = is_dir   ? parent_done
                               : i == 0 ? root_done
                                        : zkrc__ignore_string_done;
    req *r = is_dir ? last : i == 0 ? top : NULL;
    if (zkrc__sent(c->s, zoo_acreate(zh, path->str, NULL, -1,
                                     zkrc__acl_vector(c->acl), ZOO_CONTAINER,
                                     done, r)) != ZOK &&
        r)
      zkrc__q_req_free(r); /* not sent: no completion will free it */
  }
  g_string_free(path, TRUE);
  g_strfreev(parts);
}

void zkrc__q_send_create(zkrc__contender *c) {
  g_mutex_lock(&c->mu);
  if (c->state == C_ENDED || c->withdrawing) {
    g_mutex_unlock(&c->mu);
    return;
  }
  zkrc_conn *conn = zkrc__conn_use_connected(c->s, 0);
  if (conn == NULL) {
    c->state = C_PENDING; /* the session's next connect event resumes us */
    g_mutex_unlock(&c->mu);
    return;
  }
  c->epoch++;
  c->attempts++;
  c->state = C_CREATING;
  c->generation = conn->generation;
  c->name_known = FALSE;
  c->parent_rc = ZOK;
  c->root_rc = ZOK;
  gboolean parents = c->parent_missing;
  gboolean nested = strchr(c->dir + 1, '/') != NULL;
  req *on_root = parents && nested ? zkrc__q_req_new_locked(c) : NULL;
  req *on_parent = parents ? zkrc__q_req_new_locked(c) : NULL;
  req *on_create = zkrc__q_req_new_locked(c);
  req *on_children = zkrc__q_req_new_locked(c);
  g_mutex_unlock(&c->mu);

  if (parents)
    send_parents(c, conn->zh, on_root, on_parent);
  char *create_path = g_strdup_printf("%s/%s%s", c->dir, c->prefix, c->marker);
  int rc = zkrc__sent(conn->session,
                      zoo_acreate2(conn->zh, create_path, c->data, c->data_len,
                                   zkrc__acl_vector(c->acl),
                                   ZOO_EPHEMERAL_SEQUENTIAL, create_done,
                                   on_create));
  g_free(create_path);
  /* Pipelined: the server answers this after the create, so the listing
   * includes our node. */
  int rc2 = rc == ZOK
                ? zkrc__sent(conn->session,
                             zoo_aget_children(conn->zh, c->dir, 0,
                                               children_done, on_children))
                : rc;
  zkrc__conn_unuse(conn);
  if (rc != ZOK) {
    /* Nothing was sent: the handle is going away; its events resume us. */
    zkrc__q_req_free(on_create);
    g_mutex_lock(&c->mu);
    if (c->state == C_CREATING && c->epoch == on_children->epoch)
      c->state = C_PENDING;
    g_mutex_unlock(&c->mu);
  }
  if (rc2 != ZOK)
    zkrc__q_req_free(on_children);
}

/* ----------------------------------------------------------- withdrawal */

static void delete_done(int rc, const void *data) {
  req *r = (req *)data;
  zkrc__contender *c = r->c;
  g_mutex_lock(&c->mu);
  c->deleting = FALSE;
  /* Lost with the connection: the reaper deletes it when it is back. */
  gboolean reap = rc != ZOK && rc != ZNONODE;
  g_mutex_unlock(&c->mu);
  if (reap) {
    g_mutex_lock(&c->mu);
    zkrc__q_reap_leftovers_locked(c);
    g_mutex_unlock(&c->mu);
  }
  zkrc__q_end_with(c, ZKRC_OK, 0);
  zkrc__q_req_free(r);
}

void zkrc__q_send_delete(zkrc__contender *c) {
  g_mutex_lock(&c->mu);
  if (c->state == C_ENDED) {
    g_mutex_unlock(&c->mu);
    return;
  }
  zkrc__q_cancel_watches_locked(c);
  c->epoch++;
  zkrc_conn *conn = zkrc__conn_use_connected(c->s, c->generation);
  if (conn == NULL) {
    zkrc__q_reap_leftovers_locked(c);
    g_mutex_unlock(&c->mu);
    /* Maybe inside the owner's own call (a withdrawal), which may hold its
     * mutex: the owner hears that we ended from the worker, never from
     * here. */
    zkrc__q_end_later(c, ZKRC_OK);
    return;
  }
  c->deleting = TRUE;
  req *r = zkrc__q_req_new_locked(c);
  char *path = g_strdup(c->path);
  g_mutex_unlock(&c->mu);
  int rc = zkrc__sent(conn->session,
                      zoo_adelete(conn->zh, path, -1, delete_done, r));
  zkrc__conn_unuse(conn);
  g_free(path);
  if (rc != ZOK) { /* nothing sent: as above, the reaper and the worker */
    g_mutex_lock(&c->mu);
    c->deleting = FALSE;
    zkrc__q_reap_leftovers_locked(c);
    g_mutex_unlock(&c->mu);
    zkrc__q_end_later(c, ZKRC_OK);
    zkrc__q_req_free(r);
  }
}

void zkrc__contender_withdraw(zkrc__contender *c) {
  g_mutex_lock(&c->mu);
  if (c->state == C_ENDED || c->withdrawing) {
    g_mutex_unlock(&c->mu);
    return;
  }
  c->withdrawing = TRUE;
  step next = STEP_NONE;
  gboolean end_now = FALSE;
  if (c->name_known) {
    next = STEP_DELETE;
  } else if (c->state == C_CREATING && !c->create_unknown) {
    /* The create's reply is on its way: create_done deletes the node. */
  } else {
    if (c->create_unknown)
      zkrc__q_reap_leftovers_locked(c);
    end_now = TRUE;
  }
  g_mutex_unlock(&c->mu);
  if (end_now)
    zkrc__q_end_later(c, ZKRC_OK);
  else if (next == STEP_DELETE)
    zkrc__q_perform(c, STEP_DELETE); /* maybe under the owner's mutex */
}

gboolean zkrc__contender_deleting(zkrc__contender *c) {
  g_mutex_lock(&c->mu);
  gboolean deleting =
      c->deleting ||
      (c->withdrawing && c->state == C_CREATING && !c->create_unknown);
  g_mutex_unlock(&c->mu);
  return deleting;
}
