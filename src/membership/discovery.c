/*
 * Service discovery (zkrecipes/discovery.h): registrations and one-shot
 * queries.  A registration is a zkrc__object (core/object.h).  A DYNAMIC
 * instance is a kept ephemeral node (ephemeral.h); a STATIC or PERMANENT
 * one is a persistent node created here, in the background by a chain of
 * asynchronous requests (create_path.h).  Every request the calls wait for
 * is waited for with the caller's deadline (call.h), never with the
 * synchronous client calls.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/object.h"
#include "session/call.h"
#include "membership/create_path.h"
#include "membership/discovery_internal.h"
#include "core/log_internal.h"
#include "session/request_size.h"
#include "session/session_internal.h"
#include "core/util.h"
#include "session/zk_call.h"
#include "zkrecipes/discovery.h"
#include "zkrecipes/ephemeral.h"
#include "zkrecipes/error.h"
#include "zkrecipes/path.h"

struct zkrc_service_registration {
  zkrc__object o;              /* first: references, mutex (no events) */
  zkrc_session *s;             /* the recipe's reference */
  char *path;                  /* <base>/<name>/<id> */
  zkrc_service_instance *inst; /* as last written */
  zkrc_ephemeral *eph;         /* DYNAMIC; NULL for a persistent node */
  zkrc__acl *acl;
  int timeout_ms;
  /* A persistent node's create, a chain of asynchronous requests so that
   * the constructor never waits for the network: under o.mu, creating
   * until it is over, then its result (a zkrc code). */
  gboolean creating;
  int created;
  int creates;           /* of the node itself, so far */
  int parents_lost;      /* chains ended by a container removed meanwhile */
  GSource *create_timer; /* its deadline, or NULL */
  char *json;            /* the record to create */
  size_t len;
};

/* ------------------------------------------------------ one request */

typedef struct req {
  const char *path;
  const char *data;
  size_t len;
  int flags;
  const struct ACL_vector *acl;
} req;

static int failure(int rc) {
  if (rc == ZKRC__CALL_TIMED_OUT)
    return zkrc__fail(ZKRC_ETIMEDOUT);
  return zkrc__fail_from_zk(rc);
}

static int send_delete(zkrc_conn *conn, zkrc__call *call, const void *arg) {
  const req *r = arg;
  return zkrc__zk_delete(conn, r->path, -1, zkrc__call_void_done, call);
}

static int send_set(zkrc_conn *conn, zkrc__call *call, const void *arg) {
  const req *r = arg;
  return zkrc__zk_set(conn, r->path, r->data, (int)r->len, -1,
                      zkrc__call_stat_done, call);
}

static int send_children(zkrc_conn *conn, zkrc__call *call, const void *arg) {
  const req *r = arg;
  return zkrc__zk_get_children(conn, r->path, NULL, zkrc__call_children_done,
                               call);
}

static int send_get(zkrc_conn *conn, zkrc__call *call, const void *arg) {
  const req *r = arg;
  return zkrc__zk_get(conn, r->path, NULL, zkrc__call_data_done, call);
}

/* ------------------------------------------------------------ checks */

int zkrc__discovery_name_valid(const char *name) {
  if (name == NULL || name[0] == '\0' || strchr(name, '/'))
    return 0;
  char *path = g_strconcat("/", name, NULL);
  int ok = zkrc_path_validate(path, NULL) == ZKRC_OK;
  g_free(path);
  return ok;
}

static int base_valid(const char *base) {
  return base && zkrc_path_validate(base, NULL) == ZKRC_OK &&
         strcmp(base, "/") != 0;
}

/* The defaults, in a whole struct of ours. */
static void service_options_defaults(zkrc_service_options *opts) {
  if (opts == NULL)
    return;
  memset(opts, 0, sizeof *opts);
  opts->size = sizeof *opts;
  opts->timeout_ms = 10000;
}

void zkrc_service_options_init_sized(zkrc_service_options *opts, size_t size) {
  zkrc_service_options full;
  service_options_defaults(&full);
  zkrc__options_give(opts, size, &full, sizeof full);
}

/* ------------------------------------------------------ registering */

static void registration_finalize(zkrc__object *o) {
  zkrc_service_registration *r = (zkrc_service_registration *)o;
  g_free(r->json);
  if (r->acl)
    zkrc__acl_unref(r->acl);
  if (r->s)
    zkrc__session_unref_recipe(r->s);
  zkrc_service_instance_free(r->inst);
  g_free(r->path);
  g_free(r);
}

static void registration_unref(zkrc_service_registration *r) {
  zkrc__object_unref(&r->o);
}

/* ------------------------------------------------- persistent nodes */

/* The persistent node's create: its parents as containers, then the node;
 * an existing node is deleted and created again (Curator does so, so that
 * watchers of the old record fire), twice at most.  Asynchronous requests,
 * each sent from the previous one's completion (create_path.h), within
 * the deadline of the registration's timeout (a timer of the session's
 * worker); nothing is sent once it passed. */

static void create_node(zkrc_service_registration *r);

/* The create is over with @p err (a zkrc code), unless it was already (its
 * deadline passed).  Takes o.mu. */
static void create_over(zkrc_service_registration *r, int err) {
  g_mutex_lock(&r->o.mu);
  gboolean first = r->creating;
  if (first) {
    r->creating = FALSE;
    r->created = err;
    if (r->create_timer) {
      g_source_destroy(r->create_timer);
      g_source_unref(r->create_timer);
      r->create_timer = NULL;
    }
    g_cond_broadcast(&r->o.cond);
    zkrc__object_idle_locked(&r->o);
  }
  g_mutex_unlock(&r->o.mu);
  if (first && err != ZKRC_OK)
    zkrc__log(ZKRC_LOG_WARN, "discovery: could not create %s (%s)", r->path,
              zkrc_strerror(err));
}

static int create_error(int rc) {
  return rc == ZKRC__CREATE_STOPPED ? ZKRC_ETIMEDOUT : zkrc_from_zk_error(rc);
}

static gboolean create_go_on(void *arg) {
  zkrc_service_registration *r = arg;
  g_mutex_lock(&r->o.mu);
  gboolean go = r->creating;
  g_mutex_unlock(&r->o.mu);
  return go;
}

/* The old node's delete, with a reference. */
static void old_deleted(int rc, const void *data) {
  zkrc_service_registration *r = (zkrc_service_registration *)data;
  rc = zkrc__session_reply_rc(r->s, rc);
  if (rc != ZOK && rc != ZNONODE)
    create_over(r, create_error(rc));
  else if (r->creates < 2) /* with its parents: a container whose last
                              * child we deleted may be removed meanwhile */
    create_node(r);
  else /* someone keeps creating it */
    create_over(r, zkrc_from_zk_error(ZNODEEXISTS));
  registration_unref(r);
}

static void delete_old(zkrc_service_registration *r) {
  if (!create_go_on(r))
    return; /* the deadline passed */
  zkrc_conn *conn = zkrc__conn_use(r->s);
  int rc = ZCLOSING;
  if (conn) {
    rc = zkrc__zk_delete(conn, r->path, -1, old_deleted,
                         zkrc__object_ref(&r->o));
    zkrc__conn_unuse(conn);
    if (rc != ZOK)
      registration_unref(r); /* not the last: the chain's is held */
  }
  if (rc != ZOK)
    create_over(r, create_error(zkrc__session_reply_rc(r->s, rc)));
}

/* The end of a chain (create_path.h), with its reference. */
static void node_created(int rc, uint64_t gen, gboolean node_sent, void *arg) {
  (void)gen;
  (void)node_sent;
  zkrc_service_registration *r = arg;
  if (rc == ZNODEEXISTS)
    delete_old(r);
  else if (rc == ZNONODE && ++r->parents_lost < 3) {
    /* A container above, emptied, removed after its create: again, with
     * its parents, a bounded number of times (not another writer's
     * create: not counted in creates). */
    r->creates--;
    create_node(r);
  } else
    create_over(r, rc == ZOK ? ZKRC_OK : create_error(rc));
  registration_unref(r);
}

static void create_node(zkrc_service_registration *r) {
  r->creates++; /* one request of the create at a time: no other writer */
  zkrc__create_path_args a = {.path = r->path,
                              .data = r->json,
                              .len = r->len,
                              .flags = 0,
                              .acl = r->acl};
  zkrc__create_path(r->s, &a, create_go_on, node_created,
                    zkrc__object_ref(&r->o));
}

static gboolean create_late(gpointer data) {
  zkrc_service_registration *r = data;
  g_mutex_lock(&r->o.mu);
  gboolean mine = r->create_timer != NULL;
  if (mine) {
    g_source_unref(r->create_timer);
    r->create_timer = NULL;
  }
  g_mutex_unlock(&r->o.mu);
  if (mine)
    create_over(r, ZKRC_ETIMEDOUT);
  return G_SOURCE_REMOVE;
}

static void unref_data(gpointer r) { registration_unref(r); }

/* Start the persistent node's create (r not shared yet). */
static void create_start(zkrc_service_registration *r) {
  int64_t deadline;
  int err = zkrc__request_deadline(r->s, r->timeout_ms, &deadline);
  r->creating = TRUE;
  zkrc__object_busy_locked(&r->o); /* free_async's done waits for it */
  if (err != ZKRC_OK) {
    create_over(r, err);
    return;
  }
  if (deadline != ZKRC__NEVER)
    r->create_timer =
        zkrc__session_timer(r->s, MAX(zkrc__ms_left(deadline), 0), create_late,
                            zkrc__object_ref(&r->o), unref_data);
  create_node(r);
}

/* Wait for the persistent node's create, at most until @p deadline: its
 * result, or ZKRC_ETIMEDOUT. */
static int wait_created(zkrc_service_registration *r, int64_t deadline) {
  g_mutex_lock(&r->o.mu);
  while (r->creating && zkrc__cond_wait_until(&r->o.cond, &r->o.mu, deadline))
    ;
  int err = r->creating ? ZKRC_ETIMEDOUT : r->created;
  g_mutex_unlock(&r->o.mu);
  return err;
}

/* The free: nothing waited for but the DYNAMIC node's free (that of a
 * kept ephemeral node); a persistent node's create goes on. */
static void registration_free(zkrc_service_registration *r) {
  g_mutex_lock(&r->o.mu);
  zkrc__object_close_locked(&r->o);
  zkrc_ephemeral *eph = r->eph;
  r->eph = NULL;
  g_mutex_unlock(&r->o.mu);
  zkrc_ephemeral_free(eph);
  registration_unref(r);
}

static int start(zkrc_service_registration *r, const char *json, size_t len) {
  if (r->inst->service_type == ZKRC_SERVICE_DYNAMIC) {
    zkrc_ephemeral_options eo;
    zkrc_ephemeral_options_init(&eo);
    eo.acl = zkrc__acl_vector(r->acl);
    return zkrc_ephemeral_new(&r->eph, r->s, r->path, json, len, &eo);
  }
  req q = {.path = r->path,
           .data = json,
           .len = len,
           .acl = zkrc__acl_vector(r->acl)};
  int fits = zkrc__request_check_create(r->s, q.path, len, q.acl, 0);
  if (fits != ZKRC_OK)
    return zkrc__fail(fits); /* before the parents too */
  r->json = g_memdup2(json, len + 1);
  r->len = len;
  create_start(r); /* never waits: its outcome is the wait's */
  return ZKRC_OK;
}

int zkrc_service_registration_new(zkrc_service_registration **out,
                                  zkrc_session *s, const char *base,
                                  const zkrc_service_instance *inst,
                                  const zkrc_service_options *opts) {
  zkrc_service_options o;
  zkrc_service_options_init(&o);
  if (out)
    *out = NULL;
  if (out == NULL || s == NULL || !base_valid(base) || inst == NULL ||
      !zkrc__discovery_name_valid(inst->name) ||
      !zkrc__discovery_name_valid(inst->id) ||
      inst->service_type == ZKRC_SERVICE_DYNAMIC_SEQUENTIAL ||
      !zkrc__options_take(&o, sizeof o, opts) ||
      !zkrc__timeout_valid(o.timeout_ms) || (o.acl && !zkrc__acl_valid(o.acl)))
    return zkrc__fail(ZKRC_EINVAL);
  zkrc_service_instance *copy = zkrc_service_instance_copy(inst);
  if (copy == NULL)
    return zkrc__fail(ZKRC_ENOMEM);
  if (copy->registration_time_utc == 0)
    copy->registration_time_utc = g_get_real_time() / 1000;
  char *json;
  size_t len;
  int rc = zkrc_service_instance_to_json(copy, &json, &len);
  if (rc != ZKRC_OK) {
    zkrc_service_instance_free(copy);
    return rc;
  }
  if (zkrc__session_closed(s)) {
    free(json);
    zkrc_service_instance_free(copy);
    return zkrc__fail(ZKRC_ECLOSED);
  }
  zkrc_service_registration *r = g_new0(zkrc_service_registration, 1);
  zkrc__object_init(&r->o, zkrc__session_executor(s), registration_finalize);
  r->s = zkrc__session_ref_recipe(s);
  r->path = g_strdup_printf("%s/%s/%s", base, copy->name, copy->id);
  r->inst = copy;
  r->acl = zkrc__acl_new(o.acl);
  r->timeout_ms = o.timeout_ms;
  rc = zkrc_path_validate(r->path, NULL) == ZKRC_OK ? start(r, json, len)
                                                    : zkrc__fail(ZKRC_EINVAL);
  free(json);
  if (rc != ZKRC_OK) {
    registration_free(r);
    return rc;
  }
  *out = r;
  return ZKRC_OK;
}

int zkrc_service_registration_wait(zkrc_service_registration *r,
                                   int timeout_ms) {
  if (r == NULL || !zkrc__timeout_valid(timeout_ms))
    return zkrc__fail(ZKRC_EINVAL);
  if (r->eph)
    return zkrc_ephemeral_wait_registered(r->eph, timeout_ms);
  int err = wait_created(r, zkrc__deadline_after(timeout_ms));
  return err == ZKRC_OK ? ZKRC_OK : zkrc__fail(err);
}

const zkrc_service_instance *
zkrc_service_registration_instance(zkrc_service_registration *r) {
  return r ? r->inst : NULL;
}

int zkrc_service_update(zkrc_service_registration *r,
                        const zkrc_service_instance *inst, int timeout_ms) {
  if (r == NULL || inst == NULL || !zkrc__timeout_valid(timeout_ms) ||
      inst->name == NULL || inst->id == NULL ||
      strcmp(inst->name, r->inst->name) != 0 ||
      strcmp(inst->id, r->inst->id) != 0 ||
      inst->service_type != r->inst->service_type)
    return zkrc__fail(ZKRC_EINVAL);
  zkrc_service_instance *copy = zkrc_service_instance_copy(inst);
  if (copy == NULL)
    return zkrc__fail(ZKRC_ENOMEM);
  if (copy->registration_time_utc == 0)
    copy->registration_time_utc = r->inst->registration_time_utc;
  char *json;
  size_t len;
  int rc = zkrc_service_instance_to_json(copy, &json, &len);
  if (rc != ZKRC_OK) {
    zkrc_service_instance_free(copy);
    return rc;
  }
  int64_t deadline = 0;
  if (r->eph) {
    rc = zkrc_ephemeral_set_data(r->eph, json, len, timeout_ms);
  } else if ((rc = zkrc__request_check_set(r->s, r->path, len)) != ZKRC_OK ||
             (rc = zkrc__request_deadline(r->s, timeout_ms, &deadline)) !=
                 ZKRC_OK ||
             (rc = wait_created(r, deadline)) != ZKRC_OK) {
    rc = zkrc__fail(rc);
  } else {
    req q = {.path = r->path, .data = json, .len = len};
    int zrc = zkrc__call_request(r->s, send_set, &q, deadline, NULL);
    rc = zrc == ZOK ? ZKRC_OK : failure(zrc);
  }
  free(json);
  /* DYNAMIC: a timeout keeps the new record for the next creation. */
  if (rc == ZKRC_OK ||
      (r->eph && (rc == ZKRC_ETIMEDOUT || rc == ZKRC_ECONNLOSS))) {
    zkrc_service_instance_free(r->inst);
    r->inst = copy;
  } else {
    zkrc_service_instance_free(copy);
  }
  return rc;
}

void zkrc_service_unregister(zkrc_service_registration *r) {
  if (r == NULL)
    return;
  if (r->eph == NULL && !zkrc__session_closed(r->s)) {
    req q = {.path = r->path};
    int timeout = zkrc_session_timeout(r->s);
    /* Not before the create is over: it would come after the delete. */
    wait_created(r, ZKRC__NEVER);
    int rc = zkrc__call_request(
        r->s, send_delete, &q,
        zkrc__deadline_after(timeout > 0 ? timeout : 10000), NULL);
    if (rc != ZOK && rc != ZNONODE)
      zkrc__log(ZKRC_LOG_WARN, "discovery: could not delete %s (%s)", r->path,
                rc == ZKRC__CALL_TIMED_OUT ? "timed out" : zerror(rc));
  }
  registration_free(r);
}

void zkrc_service_registration_free(zkrc_service_registration *r) {
  if (r)
    registration_free(r);
}

/* free_async's end of a DYNAMIC node: its kept node's own free_async is
 * done (the delete confirmed or handed to the reaper). */
static void eph_freed(void *arg) {
  zkrc__object *o = arg;
  zkrc__object_idle(o);
  zkrc__object_unref(o);
}

int zkrc_service_registration_free_async(zkrc_service_registration *r,
                                         zkrc_callback_fn done, void *arg) {
  if (r == NULL || done == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  g_mutex_lock(&r->o.mu);
  zkrc_ephemeral *eph = r->eph;
  r->eph = NULL;
  if (eph) {
    zkrc__object_busy_locked(&r->o);
    zkrc__object_ref(&r->o); /* eph_freed's */
  }
  /* done after the persistent node's create, if it is still under way,
   * and after the DYNAMIC node's delete */
  zkrc__object_detach_locked(&r->o, done, arg);
  g_mutex_unlock(&r->o.mu);
  if (eph)
    zkrc_ephemeral_free_async(eph, eph_freed, &r->o);
  registration_unref(r);
  return ZKRC_OK;
}

/* ------------------------------------------------------------ queries */

int zkrc__discovery_by_id(const void *a, const void *b) {
  const zkrc_service_instance *x = *(zkrc_service_instance *const *)a;
  const zkrc_service_instance *y = *(zkrc_service_instance *const *)b;
  return strcmp(x->id, y->id);
}

zkrc_service_instance *
zkrc__discovery_parse_node(const char *path, const char *data, size_t len) {
  zkrc_service_instance *inst = NULL;
  if (data == NULL ||
      zkrc_service_instance_from_json(data, len, &inst) != ZKRC_OK)
    zkrc__log(ZKRC_LOG_WARN,
              "discovery: %s does not hold a service instance record "
              "(%zu bytes); skipped",
              path, data ? len : 0);
  return inst;
}

static int compare_strings(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The children of @p path, sorted (g_strfreev), or a ZooKeeper code. */
static int read_children(zkrc_session *s, const char *path, int64_t deadline,
                         char ***out) {
  req q = {.path = path};
  zkrc__call *call;
  int rc = zkrc__call_request(s, send_children, &q, deadline, &call);
  *out = NULL;
  if (rc == ZOK) {
    char **v = g_new0(char *, (gsize)call->children.count + 1);
    for (int i = 0; i < call->children.count; i++)
      v[i] = g_strdup(call->children.data[i]);
    qsort(v, (size_t)call->children.count, sizeof *v, compare_strings);
    *out = v;
  }
  if (call)
    zkrc__call_unref(call);
  return rc;
}

/* A query's deadline (zkrc__request_deadline()); ZKRC_ECLOSED for a
 * closed session whatever the timeout. */
static int query_deadline(zkrc_session *s, int timeout_ms, int64_t *deadline) {
  if (zkrc__session_closed(s))
    return ZKRC_ECLOSED;
  return zkrc__request_deadline(s, timeout_ms, deadline);
}

int zkrc_service_names(zkrc_session *s, const char *base, char ***names,
                       size_t *count, int timeout_ms) {
  if (names)
    *names = NULL;
  if (count)
    *count = 0;
  if (s == NULL || !base_valid(base) || names == NULL || count == NULL ||
      !zkrc__timeout_valid(timeout_ms))
    return zkrc__fail(ZKRC_EINVAL);
  int64_t deadline;
  int err = query_deadline(s, timeout_ms, &deadline);
  if (err != ZKRC_OK)
    return zkrc__fail(err);
  char **v;
  int rc = read_children(s, base, deadline, &v);
  if (rc == ZNONODE) {
    rc = ZOK;
    v = g_new0(char *, 1);
  }
  if (rc != ZOK)
    return failure(rc);
  *names = zkrc__strv_to_malloc(v, count);
  g_strfreev(v);
  return *names ? ZKRC_OK : zkrc__fail(ZKRC_ENOMEM);
}

/* Read and parse every child of @p dir into @p found. */
static int read_instances(zkrc_session *s, const char *dir, char **ids,
                          int64_t deadline, GPtrArray *found) {
  for (char **id = ids; *id; id++) {
    char *path = g_strdup_printf("%s/%s", dir, *id);
    req q = {.path = path};
    zkrc__call *call;
    int rc = zkrc__call_request(s, send_get, &q, deadline, &call);
    if (rc == ZOK) {
      zkrc_service_instance *inst = zkrc__discovery_parse_node(
          path, call->value_len >= 0 ? call->value : NULL,
          call->value_len > 0 ? (size_t)call->value_len : 0);
      if (inst)
        g_ptr_array_add(found, inst);
    }
    if (call)
      zkrc__call_unref(call);
    g_free(path);
    if (rc != ZOK && rc != ZNONODE) /* ZNONODE: gone since listed */
      return rc;
  }
  return ZOK;
}

int zkrc_service_query(zkrc_session *s, const char *base, const char *name,
                       zkrc_service_instance ***out, size_t *count,
                       int timeout_ms) {
  if (out)
    *out = NULL;
  if (count)
    *count = 0;
  if (s == NULL || !base_valid(base) || !zkrc__discovery_name_valid(name) ||
      out == NULL || count == NULL || !zkrc__timeout_valid(timeout_ms))
    return zkrc__fail(ZKRC_EINVAL);
  int64_t deadline;
  int err = query_deadline(s, timeout_ms, &deadline);
  if (err != ZKRC_OK)
    return zkrc__fail(err);
  char *dir = g_strdup_printf("%s/%s", base, name);
  char **ids;
  int rc = read_children(s, dir, deadline, &ids);
  if (rc == ZNONODE) {
    rc = ZOK;
    ids = g_new0(char *, 1);
  }
  GPtrArray *found = g_ptr_array_new();
  if (rc == ZOK)
    rc = read_instances(s, dir, ids, deadline, found);
  g_strfreev(ids);
  g_free(dir);
  if (rc != ZOK) {
    for (guint i = 0; i < found->len; i++)
      zkrc_service_instance_free(found->pdata[i]);
    g_ptr_array_free(found, TRUE);
    return failure(rc);
  }
  size_t n = found->len;
  zkrc_service_instance **v = calloc(n + 1, sizeof *v);
  if (v)
    memcpy(v, found->pdata, n * sizeof *v);
  else
    for (guint i = 0; i < found->len; i++)
      zkrc_service_instance_free(found->pdata[i]);
  g_ptr_array_free(found, TRUE);
  if (v == NULL)
    return zkrc__fail(ZKRC_ENOMEM);
  qsort(v, n, sizeof *v, zkrc__discovery_by_id);
  *out = v;
  *count = n;
  return ZKRC_OK;
}
