/*
 * Group membership (zkrecipes/group.h), Curator's GroupMember: this
 * member's node PATH/ID is a kept ephemeral node (ephemeral.c), the view a
 * children cache of PATH (cache.c).  The view is read from the cache's
 * copy.  The events of both come to the group on the session's executor;
 * the group translates them (a member copied) and tells them as one
 * stream on its own object (core/object.h), in the order they came:
 * nothing after CLOSED, whichever part it came from, and nothing after
 * the group's free.
 *
 * Lock order: g->o.mu, held while the two parts are created, comes before
 * their mutexes and the session's; the parts' events take it alone and
 * call no application code (they queue).
 */
#include "config.h"

#include <string.h>

#include "core/object.h"
#include "core/util.h"
#include "session/session_internal.h"
#include "zkrecipes/cache.h"
#include "zkrecipes/ephemeral.h"
#include "zkrecipes/error.h"
#include "zkrecipes/group.h"
#include "zkrecipes/path.h"

struct zkrc_group {
  /* First.  o.mu is held while zkrc_group_new() starts the two parts: an
   * event that comes before both are in place waits for it. */
  zkrc__object o;
  zkrc_session *s; /* a recipe's reference */
  char *path;
  char *id; /* NULL for a watcher */
  zkrc_group_options opts;
  zkrc_cache *view;
  zkrc_ephemeral *self; /* NULL for a watcher */
  /* CLOSED was queued (under o.mu): nothing is told after it.  A
   * watcher's comes from the cache's LOST of a closed session, a member's
   * from its node. */
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
  opts->format = ZKRC_GROUP_CURATOR;
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

/* kazoo's Party marks its members' names with this. */
#define PARTY_MARK "__party__"

/* Is the node @p n of the view a member in format @p f? */
static gboolean is_member(zkrc_group_format f, const zkrc_cache_node *n) {
  const char *slash = strrchr(n->path, '/');
  const char *name = slash ? slash + 1 : n->path;
  return f != ZKRC_GROUP_KAZOO_PARTY || strstr(name, PARTY_MARK) != NULL;
}

/* A copy of the member @p n stands for in format @p f (zkrecipes/group.h,
 * zkrc_group_format), for an event or for the caller to keep. */
static void member_copy(zkrc_group_member *to, zkrc_group_format f,
                        const zkrc_cache_node *n) {
  const char *slash = strrchr(n->path, '/');
  const char *name = slash ? slash + 1 : n->path;
  if (f == ZKRC_GROUP_KAZOO_PARTY) {
    to->id = g_strndup(n->data ? n->data : "", n->data ? n->len : 0);
  } else if (f == ZKRC_GROUP_KAZOO_SHALLOW_PARTY) {
    const char *dash = strchr(name, '-');
    to->id = g_strdup(dash ? dash + 1 : name);
  } else {
    to->id = g_strdup(name);
  }
  to->data = n->data ? g_memdup2(n->data, n->len + 1) : NULL;
  to->len = n->len;
  to->czxid = n->stat.czxid;
  to->ctime_ms = n->stat.ctime;
}

/* This member's node's name in format @p f (g_free it): kazoo's are a
 * random uuid's 32 hex digits with the mark or the id. */
static char *node_name(zkrc_group_format f, const char *id) {
  if (f == ZKRC_GROUP_CURATOR)
    return g_strdup(id);
  char *uuid = zkrc__uuid(), *hex = g_malloc(strlen(uuid) + 1), *h = hex;
  for (const char *u = uuid; *u; u++)
    if (*u != '-')
      *h++ = *u;
  *h = '\0';
  char *name = f == ZKRC_GROUP_KAZOO_PARTY ? g_strconcat(hex, PARTY_MARK, NULL)
                                           : g_strconcat(hex, "-", id, NULL);
  g_free(hex);
  g_free(uuid);
  return name;
}

static void member_clear(zkrc_group_member *m) {
  g_free(m->id);
  g_free(m->data);
}

/* An event on its way to the application (core/object.h). */
typedef struct group_event {
  zkrc__object_event base;
  zkrc_group_event ev;
  zkrc_group_member member; /* ev.member points here when there is one */
} group_event;

static void group_tell(zkrc__object *o, zkrc__object_event *base) {
  zkrc_group *g = (zkrc_group *)o;
  g->opts.on_event(g, &((group_event *)base)->ev, g->opts.event_arg);
}

static void group_event_release(zkrc__object_event *base) {
  member_clear(&((group_event *)base)->member);
  g_free(base);
}

/* Queue @p type about @p n (NULL: no member), from a part's event on the
 * executor: told after what came before, unless the group is ending or
 * told CLOSED already. */
static void queue(zkrc_group *g, zkrc_group_event_type type, int reason,
                  int zk_error, const zkrc_cache_node *n) {
  g_mutex_lock(&g->o.mu);
  if (g->opts.on_event && !g->closed_told && !zkrc__object_ending(&g->o)) {
    group_event *r =
        zkrc__object_event_new(sizeof *r, group_tell, group_event_release);
    r->ev = (zkrc_group_event){
        .type = type, .reason = reason, .zk_error = zk_error};
    if (n) {
      member_copy(&r->member, g->opts.format, n);
      r->ev.member = &r->member;
    }
    g->closed_told = type == ZKRC_GROUP_CLOSED;
    zkrc__object_tell_locked(&g->o, &r->base);
  }
  g_mutex_unlock(&g->o.mu);
}

/* The view's events, on the executor.  Connection events are the view's
 * business (it reads again); a member hears about its own registration
 * from its node, a watcher that the session was closed from the cache. */
static void on_view(zkrc_cache *c, const zkrc_cache_event *ev, void *arg) {
  (void)c;
  zkrc_group *g = arg;
  if (ev->node && !is_member(g->opts.format, ev->node))
    return; /* not a kazoo Party's member */
  switch (ev->type) {
  case ZKRC_CACHE_NODE_ADDED:
    queue(g, ZKRC_GROUP_JOINED, ZKRC_OK, ZOK, ev->node);
    break;
  case ZKRC_CACHE_NODE_UPDATED:
    queue(g, ZKRC_GROUP_UPDATED, ZKRC_OK, ZOK, ev->node);
    break;
  case ZKRC_CACHE_NODE_REMOVED:
    queue(g, ZKRC_GROUP_LEFT, ZKRC_OK, ZOK, ev->node);
    break;
  case ZKRC_CACHE_INITIALIZED:
    queue(g, ZKRC_GROUP_INITIALIZED, ZKRC_OK, ZOK, NULL);
    break;
  case ZKRC_CACHE_LOST:
    if (g->id == NULL && zkrc__session_closed(g->s)) /* a watcher */
      queue(g, ZKRC_GROUP_CLOSED, ev->reason, ev->zk_error, NULL);
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
  switch (ev->type) {
  case ZKRC_EPHEMERAL_REGISTERED:
    queue(g, ZKRC_GROUP_REGISTERED, ev->reason, ev->zk_error, NULL);
    break;
  case ZKRC_EPHEMERAL_LOST:
    queue(g, ZKRC_GROUP_LOST, ev->reason, ev->zk_error, NULL);
    break;
  case ZKRC_EPHEMERAL_CLOSED:
    queue(g, ZKRC_GROUP_CLOSED, ev->reason, ev->zk_error, NULL);
    break;
  }
}

/* The last reference went (core/object.h): the parts are freed by then. */
static void group_finalize(zkrc__object *o) {
  zkrc_group *g = (zkrc_group *)o;
  zkrc__session_unref_recipe(g->s);
  g_free(g->id);
  g_free(g->path);
  g_free(g);
}

/* Free the two parts (neither waits for the network); their events do not
 * reach the application any more (the group is ending). */
static void free_parts(zkrc_group *g) {
  /* The view first: it stops before it could read our node's delete. */
  zkrc_cache_free(g->view);
  g->view = NULL;
  zkrc_ephemeral_free(g->self);
  g->self = NULL;
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
    char *name = node_name(g->opts.format, g->id);
    char *node = g_strdup_printf("%s/%s", g->path, name);
    g_free(name);
    if (g->opts.format != ZKRC_GROUP_CURATOR) {
      data = g->id; /* kazoo's identifier, as UTF-8, in both its formats */
      len = strlen(g->id);
    }
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
      !data_valid(o.data, o.data_len) || (o.id == NULL && o.data != NULL) ||
      (o.format != ZKRC_GROUP_CURATOR && o.format != ZKRC_GROUP_KAZOO_PARTY &&
       o.format != ZKRC_GROUP_KAZOO_SHALLOW_PARTY) ||
      (o.format != ZKRC_GROUP_CURATOR && o.data != NULL))
    return zkrc__fail(ZKRC_EINVAL);
  const char *id = o.id;
  const void *data = o.data;
  size_t len = o.data_len;
  o.id = NULL; /* the caller's: copied below, and the data by the node */
  o.data = NULL;
  o.data_len = 0;
  if (id != NULL) {
    char *name = node_name(o.format, id);
    char *node = g_strdup_printf("%s/%s", path, name);
    g_free(name);
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
  zkrc__object_init(&g->o, zkrc__session_executor(s), group_finalize);
  g_mutex_lock(&g->o.mu);
  int rc = group_start(g, data, len);
  if (rc != ZKRC_OK)
    zkrc__object_close_locked(&g->o); /* nothing told */
  g_mutex_unlock(&g->o.mu);
  if (rc != ZKRC_OK) {
    /* Not under o.mu: freeing a part waits for its events, which take
     * it. */
    free_parts(g);
    zkrc__object_unref(&g->o);
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
  if (g->opts.format != ZKRC_GROUP_CURATOR)
    return zkrc__fail(ZKRC_ENOTSUP);
  return zkrc_ephemeral_set_data(g->self, data, len, timeout_ms);
}

/* By id, in byte order (what zkrc_group_members promises). */
static int member_id_order(const void *a, const void *b) {
  return strcmp(((const zkrc_group_member *)a)->id,
                ((const zkrc_group_member *)b)->id);
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
  /* The copy is sorted by path: by id in Curator's format (PATH/ID), by a
   * random uuid in kazoo's, so those are sorted by id below. */
  zkrc_group_member *list = n ? g_new0(zkrc_group_member, n) : NULL;
  size_t kept = 0;
  for (size_t i = 0; i < n; i++)
    if (is_member(g->opts.format, nodes[i]))
      member_copy(&list[kept++], g->opts.format, nodes[i]);
  zkrc_cache_nodes_free(nodes, n);
  if (kept == 0) {
    g_free(list);
    list = NULL;
  } else if (g->opts.format != ZKRC_GROUP_CURATOR) {
    qsort(list, kept, sizeof list[0], member_id_order);
  }
  *members = list;
  *count = kept;
  return ZKRC_OK;
}

void zkrc_group_members_free(zkrc_group_member *members, size_t count) {
  if (members == NULL)
    return;
  for (size_t i = 0; i < count; i++)
    member_clear(&members[i]);
  g_free(members);
}

const char *zkrc_group_id(zkrc_group *g) { return g ? g->id : NULL; }

const char *zkrc_group_path(zkrc_group *g) { return g ? g->path : NULL; }

void zkrc_group_free(zkrc_group *g) {
  if (g == NULL)
    return;
  g_mutex_lock(&g->o.mu);
  zkrc__object_close_locked(&g->o); /* no event after this returns */
  g_mutex_unlock(&g->o.mu);
  free_parts(g);
  zkrc__object_unref(&g->o); /* the owner's */
}

/* The member's node is freed: the group's last pending work. */
static void self_freed(void *arg) {
  zkrc_group *g = arg;
  zkrc__object_idle(&g->o);
  zkrc__object_unref(&g->o);
}

/* Behind the events queued before free_async (which may still read the
 * view): the view goes, and the member's node in the background. */
static void free_parts_async(void *arg) {
  zkrc_group *g = arg;
  zkrc_cache_free(g->view);
  g->view = NULL;
  zkrc_ephemeral *self = g->self;
  g->self = NULL;
  zkrc__object_ref(&g->o); /* self_freed's */
  if (self == NULL || zkrc_ephemeral_free_async(self, self_freed, g) != ZKRC_OK)
    self_freed(g);
}

int zkrc_group_free_async(zkrc_group *g, zkrc_callback_fn done, void *arg) {
  if (g == NULL || done == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  g_mutex_lock(&g->o.mu);
  zkrc__object_busy_locked(&g->o); /* until free_parts_async is over */
  zkrc__object_detach_locked(&g->o, done, arg);
  zkrc__object_post_locked(&g->o, free_parts_async, g);
  g_mutex_unlock(&g->o.mu);
  zkrc__object_unref(&g->o); /* the owner's */
  return ZKRC_OK;
}
