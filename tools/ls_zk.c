/*
 * tools/ls_zk.c - zkr-ls's raw ZooKeeper reads (see ls.h): children and
 * ephemeral owners, which the library's participant lists do not give.
 * Asynchronous calls sent with the session's handle pinned
 * (zkrc_session_with_handle), each awaited at most a timeout: a server
 * that stops answering cannot hold zkr-ls beyond it.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "ls.h"

static int64_t deadline_after(int ms) {
  return g_get_monotonic_time() + (int64_t)ms * 1000;
}

/* One asynchronous read.  Its completion runs on the ZooKeeper client's
 * thread, maybe after we stopped waiting: it holds a reference. */
typedef struct zk_op {
  gint refs;
  int done; /* under op_mu */
  int rc;
  int64_t owner; /* exists: the ephemeralOwner */
  char **names;  /* get_children: the names (g_strfreev) */
} zk_op;

static GMutex op_mu;
static GCond op_done;

static zk_op *op_new(void) {
  zk_op *op = g_new0(zk_op, 1);
  op->refs = 2; /* ours and the completion's */
  return op;
}

static void op_unref(zk_op *op) {
  if (op && g_atomic_int_dec_and_test(&op->refs)) {
    g_strfreev(op->names);
    g_free(op);
  }
}

static void op_finish(zk_op *op, int rc) {
  g_mutex_lock(&op_mu);
  op->rc = rc;
  op->done = 1;
  g_cond_broadcast(&op_done);
  g_mutex_unlock(&op_mu);
  op_unref(op); /* the completion's */
}

static void children_done(int rc, const struct String_vector *kids,
                          const void *data) {
  zk_op *op = (zk_op *)data;
  if (rc == ZOK) {
    op->names = g_new0(char *, (kids ? kids->count : 0) + 1);
    for (int i = 0; kids && i < kids->count; i++)
      op->names[i] = g_strdup(kids->data[i]);
  }
  op_finish(op, rc);
}

static void exists_done(int rc, const struct Stat *stat, const void *data) {
  zk_op *op = (zk_op *)data;
  if (rc == ZOK && stat)
    op->owner = stat->ephemeralOwner;
  op_finish(op, rc);
}

/* Requests to send with the handle pinned: get_children of one path, or
 * exists of several. */
typedef struct zk_batch {
  int children; /* 1: get_children of paths[0]; 0: exists of each */
  char **paths;
  zk_op **ops;
  int n;
} zk_batch;

static int send_batch(zhandle_t *zh, void *arg) {
  zk_batch *b = arg;
  for (int i = 0; i < b->n; i++) {
    int rc =
        b->children
            ? zoo_aget_children(zh, b->paths[i], 0, children_done, b->ops[i])
            : zoo_aexists(zh, b->paths[i], 0, exists_done, b->ops[i]);
    if (rc != ZOK)
      op_finish(b->ops[i], rc); /* no completion will come */
  }
  return ZKRC_OK;
}

/* Send the batch's requests; those that could not go are done with
 * ZCONNECTIONLOSS. */
static void batch_send(zkrc_session *s, zk_batch *b) {
  b->ops = g_new(zk_op *, b->n);
  for (int i = 0; i < b->n; i++)
    b->ops[i] = op_new();
  if (zkrc_session_with_handle(s, send_batch, b) != ZKRC_OK)
    for (int i = 0; i < b->n; i++)
      op_finish(b->ops[i], ZCONNECTIONLOSS);
}

/* Wait for @p op until @p deadline (monotonic, µs); its result, or
 * ZOPERATIONTIMEOUT. */
static int op_wait(zk_op *op, int64_t deadline) {
  g_mutex_lock(&op_mu);
  while (!op->done && g_cond_wait_until(&op_done, &op_mu, deadline))
    ;
  int rc = op->done ? op->rc : ZOPERATIONTIMEOUT;
  g_mutex_unlock(&op_mu);
  return rc;
}

static void batch_free(zk_batch *b) {
  for (int i = 0; i < b->n; i++)
    op_unref(b->ops[i]);
  g_free(b->ops);
}

static int compare_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int ls_zk_children(zkrc_session *s, const char *path, int timeout_ms,
                   char ***names) {
  char *paths[] = {(char *)path};
  zk_batch b = {.children = 1, .paths = paths, .n = 1};
  batch_send(s, &b);
  int rc = op_wait(b.ops[0], deadline_after(timeout_ms));
  *names = NULL;
  if (rc == ZOK) {
    *names = g_strdupv(b.ops[0]->names);
    qsort(*names, g_strv_length(*names), sizeof(char *), compare_names);
  }
  batch_free(&b);
  return rc;
}

int ls_zk_owners(zkrc_session *s, char **paths, int n, int timeout_ms,
                 int64_t *owners) {
  zk_batch b = {.children = 0, .paths = paths, .n = n};
  batch_send(s, &b);
  int64_t deadline = deadline_after(timeout_ms);
  int failure = ZOK;
  for (int i = 0; i < n; i++) {
    int rc = op_wait(b.ops[i], deadline);
    owners[i] = rc == ZOK ? b.ops[i]->owner : -1;
    if (rc != ZOK && rc != ZNONODE && failure == ZOK)
      failure = rc;
  }
  batch_free(&b);
  return failure;
}
