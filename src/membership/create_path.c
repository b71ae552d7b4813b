/*
 * Creating a node and the containers above it without waiting
 * (create_path.h).
 */
#include "config.h"

#include <string.h>

#include "membership/create_path.h"
#include "session/zk_call.h"

typedef struct chain {
  zkrc_session *s; /* referenced */
  char *path, *data;
  int len; /* -1: no data */
  int flags;
  zkrc__acl *acl;
  const char *next; /* the '/' ending the next container; NULL: the node */
  uint64_t generation;
  gboolean node_sent;
  gboolean (*go_on)(void *arg);
  zkrc__create_path_fn done;
  void *arg;
} chain;

static void chain_send(chain *c);

static void chain_end(chain *c, int rc) {
  c->done(rc, c->generation, c->node_sent, c->arg);
  zkrc__acl_unref(c->acl);
  zkrc__session_unref(c->s);
  g_free(c->path);
  g_free(c->data);
  g_free(c);
}

static void chain_reply(int rc, const char *value, const void *data) {
  (void)value;
  chain *c = (chain *)data;
  rc = zkrc__session_reply_rc(c->s, rc);
  if (c->next == NULL || (rc != ZOK && rc != ZNODEEXISTS)) {
    chain_end(c, rc);
    return;
  }
  c->next = strchr(c->next + 1, '/');
  chain_send(c);
}

static void chain_send(chain *c) {
  if (!c->go_on(c->arg)) {
    chain_end(c, ZKRC__CREATE_STOPPED);
    return;
  }
  gboolean node = c->next == NULL;
  char *target =
      node ? c->path : g_strndup(c->path, (gsize)(c->next - c->path));
  zkrc_conn *conn = zkrc__conn_use(c->s);
  int rc = ZCLOSING; /* no handle: reply_rc makes it a lost connection */
  if (conn) {
    c->generation = conn->generation;
    /* Before the send: its reply may run (and end the chain, freeing c)
     * before zkrc__zk_create() returns. */
    c->node_sent = node;
    rc = zkrc__zk_create(conn, target, node ? c->data : NULL,
                         node ? c->len : -1, zkrc__acl_vector(c->acl),
                         node ? c->flags : ZOO_CONTAINER, chain_reply, c);
    zkrc__conn_unuse(conn);
  }
  if (!node)
    g_free(target);
  if (rc != ZOK) { /* not sent: no reply will come, c is still ours */
    c->node_sent = FALSE;
    chain_reply(rc, NULL, c);
  }
}

static void chain_start(void *arg) { chain_send(arg); }

void zkrc__create_path(zkrc_session *s, const zkrc__create_path_args *a,
                       gboolean (*go_on)(void *arg), zkrc__create_path_fn done,
                       void *arg) {
  chain *c = g_new0(chain, 1);
  c->s = zkrc__session_ref(s);
  c->path = g_strdup(a->path);
  c->data = a->data ? g_memdup2(a->data, a->len + 1) : NULL;
  c->len = a->data ? (int)a->len : -1;
  c->flags = a->flags;
  c->acl = zkrc__acl_ref(a->acl);
  c->next = strchr(c->path + 1, '/');
  c->go_on = go_on;
  c->done = done;
  c->arg = arg;
  /* From the worker: go_on and done never run on the caller's thread. */
  zkrc__session_run_on_worker(s, chain_start, c);
}
