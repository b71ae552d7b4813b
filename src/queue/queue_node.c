/*
 * The contender queue: our node.  Creating it (with its directory and
 * ancestors not known to exist as containers, the children read pipelined
 * behind), deleting it when the owner withdraws, and handing what may
 * outlive us to the session's reaper.  See queue_private.h.
 */
#include "config.h"

#include <string.h>

#include "queue/queue_private.h"
#include "session/zk_call.h"

/* Our node may outlive us on the servers: have the session delete it.
 * (The reaper drops the entry by itself if the session turns out expired.) */
void zkrc__q_reap_leftovers_locked(zkrc__contender *c) {
  if (c->generation == 0)
    return;
  char prefix[ZKRC__PROTECTED_PREFIX_LEN + 1];
  zkrc__protected_prefix(c->uuid, prefix);
  if (c->name_known) {
    char name[ZKRC__Q_NAME_MAX];
    zkrc__q_name(c, name);
    zkrc__session_reap(c->s, c->dir, prefix, name, c->generation);
  } else if (c->create_unknown)
    zkrc__session_reap(c->s, c->dir, prefix, NULL, c->generation);
}

void zkrc__q_node_name(const guint8 uuid[16], const char *marker, int32_t seq,
                       char name[ZKRC__Q_NAME_MAX]) {
  zkrc__protected_prefix(uuid, name);
  g_snprintf(name + ZKRC__PROTECTED_PREFIX_LEN,
             ZKRC__Q_NAME_MAX - ZKRC__PROTECTED_PREFIX_LEN,
             "%s%010" G_GINT32_FORMAT, marker, seq);
}

void zkrc__q_name(const zkrc__contender *c, char name[ZKRC__Q_NAME_MAX]) {
  zkrc__q_node_name(c->uuid, c->marker, c->seq, name);
}

char *zkrc__q_path(const zkrc__contender *c) {
  char name[ZKRC__Q_NAME_MAX];
  zkrc__q_name(c, name);
  return g_strconcat(c->dir, "/", name, NULL);
}

const char *zkrc__q_policy_name_locked(const zkrc__contender *c,
                                       char buf[ZKRC__Q_NAME_MAX]) {
  if (!c->seq_set)
    return NULL;
  zkrc__q_name(c, buf);
  return buf;
}

/* Remember our node, of full path or name @p path (a recovery finds it by
 * name in a listing; ours: our protected prefix and
 * marker, then the sequence ZooKeeper appended as "%010d"): its sequence
 * number, from which zkrc__q_name() makes its name again. */
void zkrc__q_set_path_locked(zkrc__contender *c, const char *path) {
  /* After our prefix and marker, not the last ten characters: past the
   * counter's wrap the number may take eleven ("-1500000000"). */
  const char *slash = strrchr(path, '/');
  const char *seq = (slash ? slash + 1 : path) + ZKRC__PROTECTED_PREFIX_LEN;
  size_t marker_len = strlen(c->marker);
  c->seq_set = TRUE;
  if (strlen(seq) <= marker_len ||
      !zkrc__parse_sequence(seq + marker_len, &c->seq))
    c->seq = 0;
  char name[ZKRC__Q_NAME_MAX];
  zkrc__q_name(c, name);
  /* Never otherwise: the servers name a sequential node so. */
  g_warn_if_fail(g_str_has_suffix(path, name));
}

/* ----------------------------------------------------- create + children */

/* How creating a container went: our directory, or the first one sent. */
static void note_container(req *r, int rc, gboolean first) {
  if (zkrc__q_lock_if_current(r)) {
    *(first ? &r->c->root_rc : &r->c->parent_rc) = rc;
    g_mutex_unlock(&r->c->mu);
  }
  zkrc__q_req_free(r);
}

static void parent_done(int rc, const char *value, const void *data) {
  note_container((req *)data, rc, FALSE);
}

static void root_done(int rc, const char *value, const void *data) {
  note_container((req *)data, rc, TRUE);
}

/* The create failed with ZNONODE after the first container we sent, a child
 * of the root, failed with ZNONODE too: the root, the session's chroot, is
 * missing.  No retry can help. */
static gboolean root_missing_locked(zkrc__contender *c) {
  if (!c->containers_sent || !c->top_from_root)
    return FALSE;
  /* A top-level directory was the only container sent: its result is the
   * first one's. */
  gboolean top_level = strchr(c->dir + 1, '/') == NULL;
  return c->root_rc == ZNONODE || (top_level && c->parent_rc == ZNONODE);
}

/* Our create failed with ZNONODE: the directory is missing (or went away
 * between the container create and ours).  Returns the next step. */
static step after_no_directory_locked(zkrc__contender *c) {
  /* What the table knew is stale: next time, create the directories. */
  zkrc__dirtable *dirs = zkrc__session_dirs(c->s);
  zkrc__dirtable_forget(dirs, c->dir);
  if (!c->containers_sent) /* presumed there: guess fresh for its siblings */
    zkrc__dirtable_note_first_touch(dirs, c->dir, TRUE);
  if (c->withdrawing) {
    zkrc__q_end_locked(c, ZKRC_OK, 0, FALSE);
  } else if (root_missing_locked(c)) {
    zkrc__q_end_locked(c, ZKRC_ENONODE, ZNONODE, FALSE);
  } else if (c->attempts >= MAX_CREATE_ATTEMPTS) {
    int cause = c->parent_rc != ZOK && c->parent_rc != ZNODEEXISTS
                    ? c->parent_rc
                    : ZNONODE;
    zkrc__q_end_locked(c, zkrc_from_zk_error(cause), cause, FALSE);
  } else if (!c->containers_sent) {
    return STEP_SEND_CREATE; /* with our directory, this time */
  } else if (!c->top_from_root && !c->ancestors_missing) {
    c->ancestors_missing = TRUE;
    return STEP_SEND_CREATE; /* with its missing ancestors, this time */
  } else {
    /* Someone keeps removing the directory: do not race them flat out. */
    c->retry_step = STEP_SEND_CREATE;
    c->retry_reason = ZNONODE;
    return STEP_RETRY_LATER;
  }
  return STEP_NONE;
}

/* Is our node, just created, the first child its directory ever had?  Its
 * sequence number is the directory's count of child creations and
 * deletions before it (cversion): 0 means that no node was ever ahead of
 * ours in this directory, and every later one sorts after it. */
static gboolean first_ever_locked(const zkrc__contender *c) {
  return c->seq == 0;
}

/* May we read a directory created with @p acl by our session?  Only when
 * the ACL says so for anyone or for its creator (other schemes, digest or
 * ip, would need the servers' view of who we are). */
static gboolean readable_by_creator(zkrc__acl *acl) {
  const struct ACL_vector *v = zkrc__acl_vector(acl);
  for (int i = 0; i < v->count; i++) {
    const struct ACL *a = &v->data[i];
    gboolean anyone =
        strcmp(a->id.scheme, "world") == 0 && strcmp(a->id.id, "anyone") == 0;
    gboolean creator = strcmp(a->id.scheme, "auth") == 0;
    if ((a->perms & ZOO_PERM_READ) && (anyone || creator))
      return TRUE;
  }
  return FALSE;
}

/* Can the create's reply stand for the listing?  When our directory's
 * container create, just before it, made the directory (with our ACL,
 * which lets us read it: a queue we could not read would fail with
 * ZKRC_ENOAUTH, as it does with the listing), and our node is its first. */
static gboolean no_listing_needed_locked(zkrc__contender *c) {
  return c->parent_rc == ZOK && readable_by_creator(c->acl) &&
         first_ever_locked(c);
}

/* Decide as on a listing of our directory that holds our node alone: what
 * the listing pipelined behind the create would have shown. */
static step alone_at_front_locked(zkrc__contender *c) {
  char name[ZKRC__Q_NAME_MAX];
  zkrc__q_name(c, name);
  char *only = name;
  struct String_vector alone = {1, &only};
  return zkrc__q_evaluate_locked(c, &alone, FALSE);
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
    if (rc == ZOK) {
      char prefix[ZKRC__PROTECTED_PREFIX_LEN + 1];
      zkrc__protected_prefix(c->uuid, prefix);
      zkrc__session_reap(c->s, c->dir, prefix, strrchr(value, '/') + 1,
                         c->generation);
    }
    g_mutex_unlock(&c->mu);
    zkrc__q_finish_stale_reply(r);
    return;
  }
  if (rc == ZOK) {
    c->name_known = TRUE;
    c->create_unknown = FALSE;
    zkrc__q_set_path_locked(c, value);
    char pred[ZKRC__Q_NAME_MAX];
    gboolean behind_own_tail = zkrc__q_tail_follow_locked(c, pred);
    c->czxid = stat->czxid;
    c->owner = stat->ephemeralOwner;
    c->attempts = 0;
    c->ancestors_missing = FALSE;
    /* Our next create here (or another contender's) need not create it. */
    zkrc__dirtable *dirs = zkrc__session_dirs(c->s);
    zkrc__dirtable_note(dirs, c->dir);
    if (c->containers_sent && c->parent_rc == ZNODEEXISTS)
      /* Presumed missing, it was there: guess present for its siblings. */
      zkrc__dirtable_note_first_touch(dirs, c->dir, FALSE);
    if (c->withdrawing)
      next = STEP_DELETE;
    else if (!c->listing_sent)
      next = no_listing_needed_locked(c) ? alone_at_front_locked(c)
             : behind_own_tail           ? zkrc__q_wait_behind_locked(c, pred)
                                         : zkrc__q_relist_locked(c);
    else if (c->watch_own)
      /* Watch our node from the start, so that the hand-over, when it
       * comes, costs one read; the children reply is right behind. */
      next = STEP_ARM_OWN_WATCH;
  } else if (rc == ZNONODE) {
    next = after_no_directory_locked(c);
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

/* Containers the create must be preceded by: the components of our
 * directory after its first @p known characters (which exist). */
static int containers_needed(const zkrc__contender *c, size_t known) {
  int n = 0;
  for (const char *p = c->dir + known; *p; p++)
    n += *p == '/';
  return n;
}

/* Create our directory's components after its first @p known characters
 * as containers, in order, without waiting: the create that follows tells
 * whether it worked.  The first one's result goes to @p first (when it is
 * not the directory), the directory's to @p last. */
static void send_containers(zkrc__contender *c, zkrc_conn *conn, size_t known,
                            req *first, req *last) {
  GString *path = g_string_new_len(c->dir, (gssize)known);
  for (const char *p = c->dir + known; *p;) {
    const char *next = strchr(p + 1, '/');
    size_t len = next ? (size_t)(next - p) : strlen(p);
    gboolean is_first = path->len == known;
    g_string_append_len(path, p, (gssize)len);
    p += len;
    gboolean is_dir = *p == '\0';
    string_completion_t done = is_dir     ? parent_done
                               : is_first ? root_done
                                          : zkrc__ignore_string_done;
    req *r = is_dir ? last : is_first ? first : NULL;
    if (zkrc__zk_create(conn, path->str, NULL, -1, zkrc__acl_vector(c->acl),
                        ZOO_CONTAINER, done, r) != ZOK &&
        r)
      zkrc__q_req_free(r); /* not sent: no completion will free it */
  }
  g_string_free(path, TRUE);
}

/* How much of our directory's path to presume exists.  Every container
 * create costs a proposal, even one refused with NodeExists, and so does a
 * create refused with NoNode; so a directory not known to exist is guessed
 * (dirtable.h): on the first try, present unless its siblings' last first
 * touch found them missing.  Else at least its parent is presumed there,
 * unless a create just showed that missing too. */
static size_t presumed_present_locked(const zkrc__contender *c) {
  zkrc__dirtable *dirs = zkrc__session_dirs(c->s);
  size_t known = zkrc__dirtable_known(dirs, c->dir);
  size_t len = strlen(c->dir);
  if (known == len || c->ancestors_missing)
    return known;
  if (c->attempts == 0 && !zkrc__dirtable_children_fresh(dirs, c->dir))
    return len;
  size_t parent = (size_t)(strrchr(c->dir, '/') - c->dir);
  return MAX(known, parent);
}

void zkrc__q_send_create(zkrc__contender *c) {
  g_mutex_lock(&c->mu);
  if (c->state == C_ENDED || c->withdrawing) {
    g_mutex_unlock(&c->mu);
    return;
  }
  size_t known = presumed_present_locked(c);
  int containers = containers_needed(c, known);
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
  c->containers_sent = containers > 0;
  c->top_from_root = known == 0;
  c->parent_rc = ZOK;
  c->root_rc = ZOK;
  /* A directory presumed fresh: our node is most likely its first, which
   * its sequence number proves without a listing (first_ever_locked).
   * Behind a node of our own object: most likely right behind it, which
   * its sequence number proves too (queue_tail.c).  The listing, if one is
   * needed after all, goes once the create is answered.  Whoever watches
   * its own node from the start keeps the pipelined one. */
  c->listing_sent =
      c->watch_own || (!c->containers_sent && !zkrc__q_tail_live_locked(c));
  unsigned epoch = c->epoch;
  req *on_first = containers > 1 ? zkrc__q_req_new_locked(c) : NULL;
  req *on_dir = containers > 0 ? zkrc__q_req_new_locked(c) : NULL;
  req *on_create = zkrc__q_req_new_locked(c);
  req *on_children = c->listing_sent ? zkrc__q_req_new_locked(c) : NULL;
  g_mutex_unlock(&c->mu);

  if (containers > 0)
    send_containers(c, conn, known, on_first, on_dir);
  char prefix[ZKRC__PROTECTED_PREFIX_LEN + 1];
  zkrc__protected_prefix(c->uuid, prefix);
  char *create_path = g_strdup_printf("%s/%s%s", c->dir, prefix, c->marker);
  int rc = zkrc__zk_create2(conn, create_path, c->data, c->data_len,
                            zkrc__acl_vector(c->acl), ZOO_EPHEMERAL_SEQUENTIAL,
                            create_done, on_create);
  g_free(create_path);
  /* Pipelined: the server answers this after the create, so the listing
   * includes our node. */
  int rc2 = rc == ZOK && on_children
                ? zkrc__zk_get_children(conn, c->dir, NULL, children_done,
                                        on_children)
                : rc;
  zkrc__conn_unuse(conn);
  if (rc != ZOK) {
    /* Nothing was sent: the handle is going away; its events resume us. */
    zkrc__q_req_free(on_create);
    g_mutex_lock(&c->mu);
    if (c->state == C_CREATING && c->epoch == epoch)
      c->state = C_PENDING;
    g_mutex_unlock(&c->mu);
  }
  if (rc2 != ZOK && on_children)
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
  zkrc__q_tail_leave_locked(c);
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
  char *path = zkrc__q_path(c);
  g_mutex_unlock(&c->mu);
  int rc = zkrc__zk_delete(conn, path, -1, delete_done, r);
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
