/*
 * Group membership (zkrecipes/group.h), Curator's GroupMember: this
 * member's node PATH/ID is a kept ephemeral node (ephemeral.c), the view a
 * children cache of PATH (cache.c).  The group adds no state of its own
 * beyond the two: the view is read from the cache's copy, and the events
 * of both, which already run on the session's executor in order and
 * without a zkrecipes mutex held, are handed on translated.
 *
 * Lock order: start_mu, held only while the two are created, comes before
 * the cache's and the session's mutexes; events take it alone, and let it
 * go before calling the application.
 */
#include "config.h"

#include <string.h>

#include "session/session_internal.h"
#include "core/util.h"
#include "zkrecipes/cache.h"
#include "zkrecipes/ephemeral.h"
#include "zkrecipes/error.h"
#include "zkrecipes/group.h"
#include "zkrecipes/path.h"

struct zkrc_group {
  zkrc_session *s; /* a recipe's reference */
  char *path;
  char *id; /* NULL for a watcher */
  zkrc_group_options opts;
  zkrc_cache *view;
  zkrc_ephemeral *self; /* NULL for a watcher */
  /* Held while zkrc_group_new() starts the two: an event that comes
   * before they are both in place (a quick REGISTERED whose listener reads
   * the view or frees the group) waits for it.  start_failed (under it):
   * the start failed and the group is being destroyed; tell nothing. */
  GMutex start_mu;
  gboolean start_failed;
  /* A watcher was told CLOSED (the cache reports LOST both when a session
   * not reopened expires and when it is closed).  Only read and written
   * by events, which run one at a time. */
  gboolean closed_told;
};

const char *zkrc_group_event_name(zkrc_group_event_type type) {
  switch (type) {
  case ZKRC_GROUP_JOINED:
    return "joined";
  case ZKRC_GROUP_UPDATED:
    return "updated";
  case ZKRC_GROUP_LEFT:
    return "left";
  case ZKRC_GROUP_INITIALIZED:
    return "initialized";
  case ZKRC_GROUP_REGISTERED:
    return "registered";
  case ZKRC_GROUP_LOST:
    return "lost";
  case ZKRC_GROUP_CLOSED:
    return "closed";
  }
  return "unknown";
}

/* The defaults, in a whole struct of ours. */
static void group_options_defaults(zkrc_group_options *opts) {
  if (opts == NULL)
    return;
  memset(opts, 0, sizeof *opts);
  opts->size = sizeof *opts;
}

void zkrc_group_options_init_sized(zkrc_group_options *opts, size_t size) {
  zkrc_group_options full;
  group_options_defaults(&full);
  zkrc__options_give(opts, size, &full, sizeof full);
}

/* A member id is one node name: not empty, no '/', not "." or "..", at
 * most ZKRC_GROUP_ID_MAX bytes; the characters the servers refuse are
 * checked with the whole path (zkrc_path_validate()). */
static gboolean id_valid(const char *id) {
  if (id == NULL || id[0] == '\0' || strchr(id, '/') != NULL)
    return FALSE;
  if (strcmp(id, ".") == 0 || strcmp(id, "..") == 0)
    return FALSE;
  return strlen(id) <= ZKRC_GROUP_ID_MAX;
}

/* The size is the member's node's to judge (ZKRC_ETOOBIG, ephemeral.c). */
static gboolean data_valid(const void *data, size_t len) {
  return data != NULL || len == 0;
}

/* The member a node of the view stands for: its fields point into @p n
 * (valid while @p n is). */
static zkrc_group_member member_of(const zkrc_cache_node *n) {
  const char *slash = strrchr(n->path, '/');
  zkrc_group_member m = {
      .id = (char *)(slash ? slash + 1 : n->path),
      .data = (char *)n->data,
      .len = n->len,
      .czxid = n->stat.czxid,
      .ctime_ms = n->stat.ctime,
  };
  return m;
}

/* Once the group is started: FALSE when it failed to (nothing to tell).
 * Never blocks for long: the start sends nothing and waits for nothing. */
static gboolean started(zkrc_group *g) {
  g_mutex_lock(&g->start_mu);
  gboolean ok = !g->start_failed;
  g_mutex_unlock(&g->start_mu);
  return ok;
}

static void tell(zkrc_group *g, zkrc_group_event_type type, int reason,
                 int zk_error, const zkrc_group_member *m) {
  if (g->opts.on_event == NULL)
    return;
  zkrc_group_event ev = {
      .type = type, .reason = reason, .zk_error = zk_error, .member = m};
  g->opts.on_event(g, &ev, g->opts.event_arg);
}

/* The view's events, on the executor.  Connection events are the view's
 * business (it reads again); a member hears about its own registration
 * from its node, a watcher that the session was closed from the cache. */
static void on_view(zkrc_cache *c, const zkrc_cache_event *ev, void *arg) {
  (void)c;
  zkrc_group *g = arg;
  zkrc_group_member m;
  if (!started(g))
    return;
  switch (ev->type) {
  case ZKRC_CACHE_NODE_ADDED:
  case ZKRC_CACHE_NODE_UPDATED:
  case ZKRC_CACHE_NODE_REMOVED:
    m = member_of(ev->node);
    tell(g,
         ev->type == ZKRC_CACHE_NODE_ADDED     ? ZKRC_GROUP_JOINED
         : ev->type == ZKRC_CACHE_NODE_UPDATED ? ZKRC_GROUP_UPDATED
                                               : ZKRC_GROUP_LEFT,
         ZKRC_OK, ZOK, &m);
    break;
  case ZKRC_CACHE_INITIALIZED:
    tell(g, ZKRC_GROUP_INITIALIZED, ZKRC_OK, ZOK, NULL);
    break;
  case ZKRC_CACHE_LOST:
    if (g->self == NULL && !g->closed_told && zkrc__session_closed(g->s)) {
      g->closed_told = TRUE;
      tell(g, ZKRC_GROUP_CLOSED, ev->reason, ev->zk_error, NULL);
    }
    break;
  default:
    break;
  }
}

/* This member's node's events, on the executor. */
static void on_self(zkrc_ephemeral *e, const zkrc_ephemeral_event *ev,
                    void *arg) {
  (void)e;
  zkrc_group *g = arg;
  if (!started(g))
    return;
  switch (ev->type) {
  case ZKRC_EPHEMERAL_REGISTERED:
    tell(g, ZKRC_GROUP_REGISTERED, ev->reason, ev->zk_error, NULL);
    break;
  case ZKRC_EPHEMERAL_LOST:
    tell(g, ZKRC_GROUP_LOST, ev->reason, ev->zk_error, NULL);
    break;
  case ZKRC_EPHEMERAL_CLOSED:
    tell(g, ZKRC_GROUP_CLOSED, ev->reason, ev->zk_error, NULL);
    break;
  }
}

static void group_destroy(zkrc_group *g) {
  /* The view first, so that a member leaving is not told its own LEFT. */
  zkrc_cache_free(g->view);
  zkrc_ephemeral_free(g->self);
  zkrc__session_unref_recipe(g->s);
  g_mutex_clear(&g->start_mu);
  g_free(g->id);
  g_free(g->path);
  g_free(g);
}

/* Start this member's node (when @p id is set), then the view, as Curator
 * starts them. */
static int group_start(zkrc_group *g, const void *data, size_t len) {
  int rc;
  if (g->id != NULL) {
    zkrc_ephemeral_options eo;
    zkrc_ephemeral_options_init(&eo);
    eo.acl = g->opts.acl;
    eo.on_event = on_self;
    eo.event_arg = g;
    char *node = g_strdup_printf("%s/%s", g->path, g->id);
    rc = zkrc_ephemeral_new(&g->self, g->s, node, data, len, &eo);
    g_free(node);
    if (rc != ZKRC_OK)
      return rc;
  }
  zkrc_cache_options co;
  zkrc_cache_options_init(&co);
  co.on_event = on_view;
  co.event_arg = g;
  return zkrc_children_cache_new(&g->view, g->s, g->path, &co);
}

int zkrc_group_new(zkrc_group **out, zkrc_session *s, const char *path,
                   const zkrc_group_options *opts) {
  zkrc_group_options o;
  zkrc_group_options_init(&o);
  if (out == NULL || s == NULL || zkrc_path_validate(path, NULL) != ZKRC_OK ||
      !zkrc__options_take(&o, sizeof o, opts) ||
      !data_valid(o.data, o.data_len) || (o.id == NULL && o.data != NULL))
    return zkrc__fail(ZKRC_EINVAL);
  const char *id = o.id;
  const void *data = o.data;
  size_t len = o.data_len;
  o.id = NULL; /* the caller's: copied below, and the data by the node */
  o.data = NULL;
  o.data_len = 0;
  if (id != NULL) {
    char *node = g_strdup_printf("%s/%s", path, id);
    int valid = id_valid(id) && zkrc_path_validate(node, NULL) == ZKRC_OK;
    g_free(node);
    if (!valid)
      return zkrc__fail(ZKRC_EINVAL);
  }
  if (o.acl != NULL && !zkrc__acl_valid(o.acl))
    return zkrc__fail(ZKRC_EINVAL);
  if (zkrc__session_closed(s))
    return zkrc__fail(ZKRC_ECLOSED);
  zkrc_group *g = g_new0(zkrc_group, 1);
  g->s = zkrc__session_ref_recipe(s);
  g->path = g_strdup(path);
  g->id = g_strdup(id);
  g->opts = o;
  g_mutex_init(&g->start_mu);
  g_mutex_lock(&g->start_mu);
  int rc = group_start(g, data, len);
  g->start_failed = rc != ZKRC_OK;
  g_mutex_unlock(&g->start_mu);
  if (rc != ZKRC_OK) {
    /* Not under start_mu: freeing waits for events, which take it. */
    group_destroy(g);
    return zkrc__fail(rc);
  }
  *out = g;
  return ZKRC_OK;
}

int zkrc_group_wait_initialized(zkrc_group *g, int timeout_ms) {
  if (g == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  return zkrc_cache_wait_initialized(g->view, timeout_ms);
}

int zkrc_group_wait_registered(zkrc_group *g, int timeout_ms) {
  if (g == NULL || g->self == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  return zkrc_ephemeral_wait_registered(g->self, timeout_ms);
}

int zkrc_group_is_registered(zkrc_group *g) {
  return g != NULL && g->self != NULL && zkrc_ephemeral_is_registered(g->self);
}

int zkrc_group_set_data(zkrc_group *g, const void *data, size_t len,
                        int timeout_ms) {
  if (g == NULL || g->self == NULL || !data_valid(data, len) ||
      !zkrc__timeout_valid(timeout_ms))
    return zkrc__fail(ZKRC_EINVAL);
  return zkrc_ephemeral_set_data(g->self, data, len, timeout_ms);
}

/* A copy of @p n's member, for the caller to keep. */
static void member_copy(zkrc_group_member *to, const zkrc_cache_node *n) {
  zkrc_group_member m = member_of(n);
  to->id = g_strdup(m.id);
  to->data = n->data ? g_memdup2(n->data, n->len + 1) : NULL;
  to->len = m.len;
  to->czxid = m.czxid;
  to->ctime_ms = m.ctime_ms;
}

int zkrc_group_members(zkrc_group *g, zkrc_group_member **members,
                       size_t *count) {
  if (g == NULL || members == NULL || count == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  const zkrc_cache_node **nodes = NULL;
  size_t n = 0;
  int rc = zkrc_cache_snapshot(g->view, &nodes, &n);
  if (rc != ZKRC_OK)
    return rc;
  /* The copy is sorted by path, and every path is PATH/ID: by id. */
  zkrc_group_member *list = n ? g_new0(zkrc_group_member, n) : NULL;
  for (size_t i = 0; i < n; i++)
    member_copy(&list[i], nodes[i]);
  zkrc_cache_nodes_free(nodes, n);
  *members = list;
  *count = n;
  return ZKRC_OK;
}

void zkrc_group_members_free(zkrc_group_member *members, size_t count) {
  if (members == NULL)
    return;
  for (size_t i = 0; i < count; i++) {
    g_free(members[i].id);
    g_free(members[i].data);
  }
  g_free(members);
}

const char *zkrc_group_id(zkrc_group *g) { return g ? g->id : NULL; }

const char *zkrc_group_path(zkrc_group *g) { return g ? g->path : NULL; }

void zkrc_group_free(zkrc_group *g) {
  if (g != NULL)
    group_destroy(g);
}
