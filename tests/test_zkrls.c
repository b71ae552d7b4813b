/*
 * tests/test_zkrls.c - zkr-ls, run as built (tools/zkr-ls) against the
 * program's real one-member ensemble: the contenders it lists are made by
 * the library itself (locks, read-write locks, an election, a semaphore)
 * and by a kazoo peer (tests/peers/kazoo_peer.py), and checked against
 * what the servers say (czxid of each node, the sessions' ids).  --json
 * output is parsed back with json-glib.
 *
 * Every zkr-ls run is started with the testing library's zkrc_spawn (the
 * child dies with this program), its output read through pipes with poll
 * and its exit awaited with zkrc_child_wait, all with deadlines.  Where a
 * contender's node being queued is announced by nothing, the node count is
 * polled with a deadline (zkt_wait_children).
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>
#include <json-glib/json-glib.h>

#include "interop_peers.h"
#include "testutil.h"

#define ZKR_LS TOP_BUILDDIR "/tools/zkr-ls"
#define ZKR TOP_BUILDDIR "/tools/zkr"
/* Run as `zkr ls' instead of by its own name (one test does). */
static int via_zkr;

/* zkr-ls's exit statuses (zkr-ls --help, zkr-ls(1)). */
#define EXIT_NO_NODE 1
#define EXIT_USAGE 2
#define EXIT_BAD_PATH 65
#define EXIT_UNAVAILABLE 69
#define EXIT_NOPERM 77

#define RUN_TIMEOUT 15000   /* one zkr-ls run, start to exit */
#define QUEUE_TIMEOUT 10000 /* a contender's node appears */
#define LS_TIMEOUT_ARG "2000"

/* ------------------------------------------------------------ running */

typedef struct ls_run {
  int status; /* exit status, 128+N, or -1 (killed at the deadline) */
  GString *out, *err;
  int64_t elapsed_ms;
} ls_run;

static void ls_run_free(ls_run *r) {
  g_string_free(r->out, TRUE);
  g_string_free(r->err, TRUE);
  g_free(r);
}

/* Read @p fd into @p into; 1 at its end. */
static int read_some(int fd, GString *into) {
  char buf[4096];
  ssize_t n = read(fd, buf, sizeof buf);
  if (n > 0)
    g_string_append_len(into, buf, n);
  return n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN);
}

/* Run @p argv (NULL-terminated) to its end, its output captured. */
static ls_run *run_argv(const char *const *argv) {
  zkrc_spawn_options o;
  zkrc_spawn_options_init(&o);
  o.pipe_stdout = o.pipe_stderr = 1;
  zkrc_child child;
  int64_t start = zkt_now_ms();
  CU_ASSERT_EQUAL_FATAL(zkrc_spawn(&child, (char *const *)argv, &o), 0);
  ls_run *r = g_new0(ls_run, 1);
  r->out = g_string_new(NULL);
  r->err = g_string_new(NULL);
  int out_end = 0, err_end = 0;
  int64_t deadline = start + RUN_TIMEOUT;
  while (!(out_end && err_end) && zkt_now_ms() < deadline) {
    struct pollfd pfds[2] = {{out_end ? -1 : child.out_fd, POLLIN, 0},
                             {err_end ? -1 : child.err_fd, POLLIN, 0}};
    if (poll(pfds, 2, (int)(deadline - zkt_now_ms())) < 0 && errno != EINTR)
      break;
    if (pfds[0].revents)
      out_end = read_some(child.out_fd, r->out);
    if (pfds[1].revents)
      err_end = read_some(child.err_fd, r->err);
  }
  int64_t left = deadline - zkt_now_ms();
  r->status = zkrc_child_wait(&child, left > 0 ? (int)left : 0);
  r->elapsed_ms = zkt_now_ms() - start;
  zkrc_child_close(&child);
  return r;
}

/* The run ended with @p want (its stderr is shown when not). */
static void expect_status(const ls_run *r, int want) {
  if (r->status != want)
    fprintf(stderr, "\nzkr-ls exited %d, expected %d; stderr:\n%s", r->status,
            want, r->err->str);
  CU_ASSERT_EQUAL(r->status, want);
}

/* zkr-ls -s HOSTS -t 2000, then @p args. */
static ls_run *run_ls(const char *const *args) {
  const char *argv[24] = {ZKR_LS, "--servers", zkt_hosts(), "-t",
                          LS_TIMEOUT_ARG};
  int n = 5;
  if (via_zkr) { /* zkr ls --servers ... */
    memmove(argv + 2, argv + 1, 4 * sizeof *argv);
    argv[0] = ZKR;
    argv[1] = "ls";
    n = 6;
  }
  for (int i = 0; args[i] && n < 23; i++)
    argv[n++] = args[i];
  argv[n] = NULL;
  return run_argv(argv);
}

/* ------------------------------------------------------------ contenders */

static void acquired_ignored(zkrc_lock *lk, zkrc_lock_hold *hold,
                             const zkrc_lock_acquired_info *info, void *arg) {
  (void)lk;
  (void)hold;
  (void)info;
  (void)arg;
}

static zkrc_lock *new_lock(zkrc_session *s, const char *path, const char *id) {
  zkrc_lock_options o;
  zkrc_lock_options_init(&o);
  o.participant_id = id;
  zkrc_lock *lk = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_new(&lk, s, path, &o));
  CU_ASSERT_PTR_NOT_NULL_FATAL(lk);
  return lk;
}

/* Queue on @p lk without waiting (a hold of its own, never waited for),
 * then wait until @p dir has @p nodes contender nodes: ours is queued. */
static void queue_on(zkrc_lock *lk, zhandle_t *zh, const char *dir, int nodes) {
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire_async(lk, ZKRC_WAIT_FOREVER,
                                                 acquired_ignored, NULL, NULL));
  CU_ASSERT_TRUE_FATAL(zkt_wait_children(zh, dir, nodes, QUEUE_TIMEOUT));
}

static zkrc_rwlock *new_rwlock(zkrc_session *s, const char *path,
                               const char *id) {
  zkrc_rwlock_options o;
  zkrc_rwlock_options_init(&o);
  o.participant_id = id;
  zkrc_rwlock *rw = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_rwlock_new(&rw, s, path, &o));
  CU_ASSERT_PTR_NOT_NULL_FATAL(rw);
  return rw;
}

/* "0x..." as zkr-ls writes a session id. */
static char *session_hex(zkrc_session *s) {
  return g_strdup_printf("0x%" PRIx64, (uint64_t)zkrc_session_id(s));
}

/* ------------------------------------------------------------------ JSON */

/* The parsed document of a --json run (g_object_unref it); fails the test
 * when it is not JSON. */
static JsonParser *parse(const ls_run *r) {
  JsonParser *p = json_parser_new();
  GError *error = NULL;
  if (!json_parser_load_from_data(p, r->out->str, -1, &error)) {
    fprintf(stderr, "\nnot JSON (%s):\n%s\n", error->message, r->out->str);
    g_error_free(error);
  }
  CU_ASSERT_PTR_NOT_NULL_FATAL(json_parser_get_root(p));
  CU_ASSERT_EQUAL_FATAL(JSON_NODE_TYPE(json_parser_get_root(p)),
                        JSON_NODE_OBJECT);
  return p;
}

static JsonArray *queues_of(JsonParser *p) {
  JsonObject *root = json_node_get_object(json_parser_get_root(p));
  CU_ASSERT_FATAL(json_object_has_member(root, "queues"));
  return json_object_get_array_member(root, "queues");
}

static JsonObject *queue_at(JsonArray *queues, guint i) {
  CU_ASSERT_FATAL(i < json_array_get_length(queues));
  return json_array_get_object_element(queues, i);
}

static JsonObject *contender_at(JsonObject *queue, guint i) {
  JsonArray *list = json_object_get_array_member(queue, "contenders");
  CU_ASSERT_FATAL(i < json_array_get_length(list));
  return json_array_get_object_element(list, i);
}

static guint contender_count(JsonObject *queue) {
  return json_array_get_length(
      json_object_get_array_member(queue, "contenders"));
}

static void assert_member(JsonObject *o, const char *name, const char *want) {
  const char *got = json_object_get_string_member(o, name);
  if (g_strcmp0(got, want) != 0)
    fprintf(stderr, "\n%s: \"%s\", expected \"%s\"\n", name,
            got ? got : "(null)", want);
  CU_ASSERT_STRING_EQUAL(got ? got : "(null)", want);
}

/* One contender as the servers know it: role, id, its token the czxid of
 * its node, and the session that owns it. */
static void assert_contender(JsonObject *c, zhandle_t *zh, const char *dir,
                             const char *role, const char *data,
                             const char *session) {
  assert_member(c, "role", role);
  assert_member(c, "data", data);
  assert_member(c, "session", session);
  char *node =
      g_strdup_printf("%s/%s", dir, json_object_get_string_member(c, "node"));
  assert_member(c, "node_path", node);
  CU_ASSERT_EQUAL(json_object_get_int_member(c, "token"), zkt_czxid(zh, node));
  CU_ASSERT(json_object_get_int_member(c, "age_ms") >= 0);
  g_free(node);
}

/* ---------------------------------------------------------------- tests */

/* A zkrecipes lock: its holder and two waiters (another session), listed
 * in queue order with the holder's token, every node's czxid as its token
 * and the right session ids. */
static void test_mutex_queue_json(void) {
  via_zkr = 1; /* zkr ls: the same program */
  char *path = zkt_path("ls-mutex");
  zhandle_t *zh = zkt_raw();
  zkrc_session *s1 = zkt_session(), *s2 = zkt_session();
  zkrc_lock *holder = new_lock(s1, path, "holder");
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(holder, ZKRC_NO_WAIT));
  int64_t token = 0;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_token(holder, &token));
  zkrc_lock *w1 = new_lock(s2, path, "waiter-1");
  queue_on(w1, zh, path, 2);
  zkrc_lock *w2 = new_lock(s2, path, "waiter-2");
  queue_on(w2, zh, path, 3);

  ls_run *r = run_ls((const char *[]){"--json", path, NULL});
  expect_status(r, 0);
  /* JSON lines, as every --json of zkr: the document on one line. */
  CU_ASSERT(g_str_has_suffix(r->out->str, "\n") &&
            strchr(r->out->str, '\n') == r->out->str + r->out->len - 1);
  JsonParser *p = parse(r);
  JsonArray *queues = queues_of(p);
  CU_ASSERT_EQUAL_FATAL(json_array_get_length(queues), 1);
  JsonObject *q = queue_at(queues, 0);
  assert_member(q, "path", path);
  assert_member(q, "recipe", "lock");
  CU_ASSERT_EQUAL_FATAL(contender_count(q), 3);
  char *sid1 = session_hex(s1), *sid2 = session_hex(s2);
  JsonObject *c0 = contender_at(q, 0);
  assert_contender(c0, zh, path, "holder", "holder", sid1);
  CU_ASSERT_EQUAL(json_object_get_int_member(c0, "token"), token);
  CU_ASSERT_TRUE(json_object_get_boolean_member(c0, "holds"));
  assert_member(c0, "kind", "mutex");
  assert_member(c0, "dialect", "curator");
  assert_contender(contender_at(q, 1), zh, path, "waiter", "waiter-1", sid2);
  assert_contender(contender_at(q, 2), zh, path, "waiter", "waiter-2", sid2);
  CU_ASSERT_FALSE(json_object_get_boolean_member(contender_at(q, 1), "holds"));
  CU_ASSERT(json_object_get_int_member(contender_at(q, 1), "token") <
            json_object_get_int_member(contender_at(q, 2), "token"));

  g_object_unref(p);
  ls_run_free(r);
  g_free(sid1);
  g_free(sid2);
  zkrc_lock_free(w2);
  zkrc_lock_free(w1);
  zkrc_lock_free(holder);
  zkrc_session_close(s2);
  zkrc_session_close(s1);
  zookeeper_close(zh);
  g_free(path);
  via_zkr = 0;
}

/* The table: a header, "PATH (lock)", then one line per contender in
 * queue order, each with its role, token, dialect and id. */
static void test_mutex_queue_text(void) {
  char *path = zkt_path("ls-text");
  zhandle_t *zh = zkt_raw();
  zkrc_session *s = zkt_session();
  zkrc_lock *holder = new_lock(s, path, "the-holder");
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(holder, ZKRC_NO_WAIT));
  int64_t token = 0;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_token(holder, &token));
  zkrc_lock *waiter = new_lock(s, path, "the-waiter");
  queue_on(waiter, zh, path, 2);

  ls_run *r = run_ls((const char *[]){path, NULL});
  expect_status(r, 0);
  char **lines = g_strsplit(r->out->str, "\n", -1);
  CU_ASSERT_EQUAL_FATAL(g_strv_length(lines), 5); /* and "" after the last */
  CU_ASSERT(g_str_has_prefix(lines[0], "  ROLE "));
  char *title = g_strdup_printf("%s (lock)", path);
  CU_ASSERT_STRING_EQUAL(lines[1], title);
  char *token_text = g_strdup_printf("  %" PRId64 "  ", token);
  CU_ASSERT(g_str_has_prefix(lines[2], "  holder "));
  CU_ASSERT(g_str_has_suffix(lines[2], "  curator  the-holder"));
  CU_ASSERT_PTR_NOT_NULL(strstr(lines[2], token_text));
  CU_ASSERT(g_str_has_prefix(lines[3], "  waiter "));
  CU_ASSERT(g_str_has_suffix(lines[3], "  curator  the-waiter"));
  CU_ASSERT_STRING_EQUAL(lines[4], "");

  g_free(token_text);
  g_free(title);
  g_strfreev(lines);
  ls_run_free(r);
  zkrc_lock_free(waiter);
  zkrc_lock_free(holder);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(path);
}

/* A kazoo Lock holder ahead of a zkrecipes waiter: the kazoo node
 * ("__lock__") is listed first, as the holder, dialect kazoo, with its
 * identifier as data. */
static void test_kazoo_holder(void) {
  if (!g_file_test(DEBIAN_PYTHON3, G_FILE_TEST_IS_EXECUTABLE)) {
    zkt_skip("no " DEBIAN_PYTHON3 " for the kazoo peer");
    return;
  }
  kill_live_peers();
  char *path = zkt_path("ls-kazoo");
  zhandle_t *zh = zkt_raw();
  peer *k = kazoo_peer("kazoo", "hold", path, "kazoo-1", (char *)NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(k);
  char *node = peer_expect(k, "acquired", START_MS);
  CU_ASSERT_PTR_NOT_NULL_FATAL(node);
  zkrc_session *s = zkt_session();
  zkrc_lock *waiter = new_lock(s, path, "zkrc-waiter");
  queue_on(waiter, zh, path, 2);

  ls_run *r = run_ls((const char *[]){"--json", path, NULL});
  expect_status(r, 0);
  JsonParser *p = parse(r);
  JsonObject *q = queue_at(queues_of(p), 0);
  assert_member(q, "recipe", "lock");
  CU_ASSERT_EQUAL_FATAL(contender_count(q), 2);
  JsonObject *c0 = contender_at(q, 0);
  assert_member(c0, "role", "holder");
  assert_member(c0, "dialect", "kazoo");
  assert_member(c0, "data", "kazoo-1");
  CU_ASSERT_PTR_NOT_NULL(
      strstr(json_object_get_string_member(c0, "node"), "__lock__"));
  CU_ASSERT_PTR_NOT_NULL(
      strstr(node, json_object_get_string_member(c0, "node")));
  char *nodepath =
      g_strdup_printf("%s/%s", path, json_object_get_string_member(c0, "node"));
  CU_ASSERT_EQUAL(json_object_get_int_member(c0, "token"),
                  zkt_czxid(zh, nodepath));
  g_free(nodepath);
  char *sid = session_hex(s);
  assert_contender(contender_at(q, 1), zh, path, "waiter", "zkrc-waiter", sid);
  assert_member(contender_at(q, 1), "dialect", "curator");

  g_free(sid);
  g_object_unref(p);
  ls_run_free(r);
  zkrc_lock_free(waiter);
  g_free(peer_ask(k, "release", "released"));
  CU_ASSERT_EQUAL(peer_finish(k, STEP_MS), 0);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(node);
  g_free(path);
}

/* A read-write lock: two readers, a writer, a reader behind it.  The two
 * readers ahead of the writer hold; the writer and the reader behind it
 * wait. */
static void test_rwlock_roles(void) {
  char *path = zkt_path("ls-rw");
  zhandle_t *zh = zkt_raw();
  zkrc_session *s = zkt_session();
  static const char *const ids[] = {"reader-1", "reader-2", "writer",
                                    "reader-3"};
  zkrc_rwlock *rw[4];
  for (int i = 0; i < 4; i++) {
    rw[i] = new_rwlock(s, path, ids[i]);
    queue_on(i == 2 ? zkrc_rwlock_writer(rw[i]) : zkrc_rwlock_reader(rw[i]), zh,
             path, i + 1);
  }

  ls_run *r = run_ls((const char *[]){"--json", path, NULL});
  expect_status(r, 0);
  JsonParser *p = parse(r);
  JsonObject *q = queue_at(queues_of(p), 0);
  assert_member(q, "recipe", "rwlock");
  CU_ASSERT_EQUAL_FATAL(contender_count(q), 4);
  static const char *const roles[] = {"reader", "reader", "waiter", "waiter"};
  static const char *const kinds[] = {"read", "read", "write", "read"};
  char *sid = session_hex(s);
  for (guint i = 0; i < 4; i++) {
    JsonObject *c = contender_at(q, i);
    assert_contender(c, zh, path, roles[i], ids[i], sid);
    assert_member(c, "kind", kinds[i]);
    CU_ASSERT_EQUAL(json_object_get_boolean_member(c, "holds"), i < 2);
  }

  g_free(sid);
  g_object_unref(p);
  ls_run_free(r);
  for (int i = 3; i >= 0; i--)
    zkrc_rwlock_free(rw[i]);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(path);
}

/* kazoo's ReadLock holding ahead of a zkrecipes writer: one read-write
 * lock of two dialects, the kazoo reader ("__rlock__") holding, the
 * writer waiting. */
static void test_kazoo_reader(void) {
  if (!g_file_test(DEBIAN_PYTHON3, G_FILE_TEST_IS_EXECUTABLE)) {
    zkt_skip("no " DEBIAN_PYTHON3 " for the kazoo peer");
    return;
  }
  kill_live_peers();
  char *path = zkt_path("ls-kazoo-rw");
  zhandle_t *zh = zkt_raw();
  peer *k = kazoo_peer("kazoo", "rhold", path, "kazoo-reader", (char *)NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(k);
  g_free(peer_expect(k, "acquired", START_MS));
  zkrc_session *s = zkt_session();
  zkrc_rwlock *rw = new_rwlock(s, path, "zkrc-writer");
  queue_on(zkrc_rwlock_writer(rw), zh, path, 2);

  ls_run *r = run_ls((const char *[]){"--json", path, NULL});
  expect_status(r, 0);
  JsonParser *p = parse(r);
  JsonObject *q = queue_at(queues_of(p), 0);
  assert_member(q, "recipe", "rwlock");
  CU_ASSERT_EQUAL_FATAL(contender_count(q), 2);
  JsonObject *c0 = contender_at(q, 0), *c1 = contender_at(q, 1);
  assert_member(c0, "role", "reader");
  assert_member(c0, "kind", "read");
  assert_member(c0, "dialect", "kazoo");
  assert_member(c0, "data", "kazoo-reader");
  CU_ASSERT_PTR_NOT_NULL(
      strstr(json_object_get_string_member(c0, "node"), "__rlock__"));
  char *sid = session_hex(s);
  assert_contender(c1, zh, path, "waiter", "zkrc-writer", sid);
  assert_member(c1, "kind", "write");

  g_free(sid);
  g_object_unref(p);
  ls_run_free(r);
  zkrc_rwlock_free(rw);
  g_free(peer_ask(k, "release", "released"));
  CU_ASSERT_EQUAL(peer_finish(k, STEP_MS), 0);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(path);
}

/* Create a contender node by hand: "_c_<name>-lock-<seq>" under @p dir
 * with @p data (@p len bytes), ephemeral or not; its path (g_free). */
static char *make_node(zhandle_t *zh, const char *dir, const char *name,
                       const char *data, int len, int ephemeral) {
  char *prefix = g_strdup_printf("%s/_c_%s-lock-", dir, name);
  char made[1024];
  int rc = zoo_create(zh, prefix, data, len, &ZOO_OPEN_ACL_UNSAFE,
                      ZOO_SEQUENCE | (ephemeral ? ZOO_EPHEMERAL : 0), made,
                      (int)sizeof made);
  g_free(prefix);
  CU_ASSERT_EQUAL_FATAL(rc, ZOK);
  return g_strdup(made);
}

/* Participant data that needs escaping comes back intact from --json
 * (quotes, a newline, a tab; bytes that are not UTF-8, or a NUL, in
 * data_base64: issue 30, item 7, the data was cut at the NUL),
 * is escaped in the table as zkr-watch escapes it (UTF-8 as it is: issue
 * 30, item 7, it was octal), and a node no session owns (not ephemeral)
 * has no session. */
static void test_data_escaping(void) {
  char *path = zkt_path("ls-data");
  zhandle_t *zh = zkt_raw();
  zkt_make_path(zh, path);
  static const char quoted[] = "he said \"hi\"\n\tand left";
  static const char binary[] = "\xff\xfe-bytes";
  static const char utf8[] = "caf\xc3\xa9 \xe2\x98\x95";
  char *n1 = make_node(zh, path, "quoted", quoted, (int)strlen(quoted), 0);
  char *n2 = make_node(zh, path, "binary", binary, (int)strlen(binary), 1);
  char *n3 = make_node(zh, path, "utf8", utf8, (int)strlen(utf8), 1);
  static const char nul[] = {'a', '\0', 'b'}; /* the id went up to the NUL */
  char *n4 = make_node(zh, path, "nul", nul, (int)sizeof nul, 1);

  ls_run *r = run_ls((const char *[]){"--json", path, NULL});
  expect_status(r, 0);
  JsonParser *p = parse(r);
  JsonObject *q = queue_at(queues_of(p), 0);
  CU_ASSERT_EQUAL_FATAL(contender_count(q), 4);
  JsonObject *c0 = contender_at(q, 0), *c1 = contender_at(q, 1);
  assert_member(contender_at(q, 2), "data", utf8);
  CU_ASSERT_TRUE(json_object_get_null_member(contender_at(q, 3), "data"));
  assert_member(contender_at(q, 3), "data_base64", "YQBi"); /* a NUL b */
  assert_member(c0, "data", quoted);
  CU_ASSERT_TRUE(json_object_get_null_member(c0, "session"));
  CU_ASSERT_TRUE(json_object_get_null_member(c1, "data"));
  char *b64 = g_base64_encode((const guchar *)binary, strlen(binary));
  assert_member(c1, "data_base64", b64);
  g_free(b64);
  g_object_unref(p);
  ls_run_free(r);

  r = run_ls((const char *[]){path, NULL});
  expect_status(r, 0);
  CU_ASSERT_PTR_NOT_NULL(
      strstr(r->out->str, "  -  ")); /* the persistent node's session */
  CU_ASSERT_PTR_NOT_NULL(
      strstr(r->out->str, "  he said \"hi\"\\n\\tand left\n"));
  CU_ASSERT_PTR_NOT_NULL(strstr(r->out->str, "  \\xFF\\xFE-bytes\n"));
  CU_ASSERT_PTR_NOT_NULL(strstr(r->out->str, "  caf\xc3\xa9 \xe2\x98\x95\n"));
  CU_ASSERT_PTR_NOT_NULL(strstr(r->out->str, "  a\\x00b\n"));
  ls_run_free(r);

  CU_ASSERT_EQUAL(zoo_delete(zh, n1, -1), ZOK); /* it outlives us else */
  g_free(n4);
  g_free(n3);
  g_free(n2);
  g_free(n1);
  zookeeper_close(zh);
  g_free(path);
}

/* Issue 30, item 7: a PATH whose ACL forbids listing is 77, as the page
 * says (it was 76), with a message. */
static void test_acl_refusal(void) {
  char *path = zkt_path("ls-acl");
  zhandle_t *zh = zkt_raw();
  zkt_make_path(zh, path);
  zkt_forbid_listing(zh, path);
  ls_run *r = run_ls((const char *[]){path, NULL});
  expect_status(r, EXIT_NOPERM);
  CU_ASSERT_PTR_NOT_NULL(strstr(r->err->str, "not authorized"));
  ls_run_free(r);
  zookeeper_close(zh);
  g_free(path);
}

typedef struct gone_check {
  zhandle_t *zh;
  const char *path;
} gone_check;

static int no_children(void *arg) {
  gone_check *g = arg;
  return zkt_child_count(g->zh, g->path) <= 0;
}

/* The queues of a subtree with -r, and the order of a second run. */
static char *queue_paths(const ls_run *r) {
  JsonParser *p = parse(r);
  JsonArray *queues = queues_of(p);
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < json_array_get_length(queues); i++) {
    JsonObject *q = queue_at(queues, i);
    g_string_append_printf(s, "%s(%s) ",
                           json_object_get_string_member(q, "path"),
                           json_object_get_string_member(q, "recipe"));
  }
  g_object_unref(p);
  return g_string_free(s, FALSE);
}

/* -r over a subtree with a lock deep down, a lock, an election, a
 * semaphore and a node without contenders: every queue listed, depth
 * first in byte order, the same twice; the semaphore's leases as
 * "lease", holds unknown. */
static void test_recursive(void) {
  char *base = zkt_path("ls-tree");
  zhandle_t *zh = zkt_raw();
  zkrc_session *s = zkt_session();
  char *deep = g_strdup_printf("%s/a/deep", base);
  char *lock_b = g_strdup_printf("%s/b-lock", base);
  char *elect = g_strdup_printf("%s/c-elect", base);
  char *sem_path = g_strdup_printf("%s/sem", base);
  char *empty = g_strdup_printf("%s/d-empty/x", base);
  zkt_make_path(zh, empty);

  zkrc_lock *l1 = new_lock(s, deep, "deep-holder");
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(l1, ZKRC_NO_WAIT));
  zkrc_lock *l2 = new_lock(s, deep, "deep-waiter");
  queue_on(l2, zh, deep, 2);
  zkrc_lock *l3 = new_lock(s, lock_b, "b-holder");
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(l3, ZKRC_NO_WAIT));
  zkrc_election_options eo;
  zkrc_election_options_init(&eo);
  eo.participant_id = "the-leader";
  zkrc_election *e = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_new(&e, s, elect, &eo));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_join(e));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_wait_leader(e, QUEUE_TIMEOUT));
  zkrc_semaphore_options so;
  zkrc_semaphore_options_init(&so);
  so.participant_id = "lessee";
  zkrc_semaphore *sem = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_new(&sem, s, sem_path, 2, &so));
  zkrc_semaphore_lease *lease = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_semaphore_acquire(sem, ZKRC_NO_WAIT, &lease));
  /* The semaphore's internal lock is let go in the background. */
  char *sem_locks = g_strdup_printf("%s/locks", sem_path);
  gone_check g = {zh, sem_locks};
  CU_ASSERT_TRUE(zkt_wait_for(no_children, &g, QUEUE_TIMEOUT));

  char *want = g_strdup_printf("%s(lock) %s(lock) %s(election) %s(semaphore) ",
                               deep, lock_b, elect, sem_path);
  for (int run = 0; run < 2; run++) {
    ls_run *r = run_ls((const char *[]){"-r", "--json", base, NULL});
    expect_status(r, 0);
    char *got = queue_paths(r);
    if (strcmp(got, want) != 0)
      fprintf(stderr, "\nrun %d: %s\nexpected %s\n", run, got, want);
    CU_ASSERT_STRING_EQUAL(got, want);
    g_free(got);
    JsonParser *p = parse(r);
    JsonArray *queues = queues_of(p);
    assert_member(contender_at(queue_at(queues, 0), 1), "data", "deep-waiter");
    assert_member(contender_at(queue_at(queues, 2), 0), "role", "leader");
    assert_member(contender_at(queue_at(queues, 2), 0), "data", "the-leader");
    JsonObject *sq = queue_at(queues, 3);
    char *leases = g_strdup_printf("%s/leases", sem_path);
    assert_member(sq, "directory", leases);
    g_free(leases);
    JsonObject *lc = contender_at(sq, 0);
    assert_member(lc, "role", "lease");
    assert_member(lc, "data", "lessee");
    CU_ASSERT_TRUE(json_object_get_null_member(lc, "holds"));
    g_object_unref(p);
    ls_run_free(r);
  }

  g_free(want);
  g_free(sem_locks);
  zkrc_semaphore_lease_release(lease);
  zkrc_semaphore_free(sem);
  zkrc_election_free(e);
  zkrc_lock_free(l3);
  zkrc_lock_free(l2);
  zkrc_lock_free(l1);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(empty);
  g_free(sem_path);
  g_free(elect);
  g_free(lock_b);
  g_free(deep);
  g_free(base);
}

/* Bad paths and usage fail before any server is asked, with a message. */
static void test_bad_path(void) {
  ls_run *r = run_ls((const char *[]){"relative/path", NULL});
  expect_status(r, EXIT_BAD_PATH);
  CU_ASSERT_PTR_NOT_NULL(strstr(r->err->str, "invalid path 'relative/path'"));
  CU_ASSERT_EQUAL(r->out->len, 0);
  ls_run_free(r);
  r = run_ls((const char *[]){"/trailing/", NULL});
  expect_status(r, EXIT_BAD_PATH);
  ls_run_free(r);
  r = run_ls((const char *[]){"/", NULL}); /* "/" only with -r */
  expect_status(r, EXIT_BAD_PATH);
  ls_run_free(r);
  r = run_ls((const char *[]){NULL});
  expect_status(r, EXIT_USAGE);
  CU_ASSERT_PTR_NOT_NULL(strstr(r->err->str, "missing PATH"));
  ls_run_free(r);
}

/* A PATH that does not exist: said, exit 1, the other PATHs still
 * listed (one without contenders says so). */
static void test_missing_node(void) {
  char *missing = zkt_path("ls-missing");
  char *empty = zkt_path("ls-empty");
  zhandle_t *zh = zkt_raw();
  zkt_make_path(zh, empty);
  ls_run *r = run_ls((const char *[]){missing, empty, NULL});
  expect_status(r, EXIT_NO_NODE);
  char *said = g_strdup_printf("zkr-ls: %s: no such node\n", missing);
  CU_ASSERT_STRING_EQUAL(r->err->str, said);
  char *listed = g_strdup_printf("%s: no contenders\n", empty);
  CU_ASSERT_STRING_EQUAL(r->out->str, listed);
  g_free(listed);
  g_free(said);
  ls_run_free(r);
  zookeeper_close(zh);
  g_free(empty);
  g_free(missing);
}

/* No server (nothing listens on port 1): 69 at once with "connection
 * refused (127.0.0.1:1)", not after the session timeout (-t 10000) nor the
 * connect timeout (5 s by default). */
static void test_unreachable(void) {
  /* Port 1 (tcpmux): nothing listens there on a test machine. */
  const char *argv[] = {ZKR_LS,  "--servers", "127.0.0.1:1", "-t",
                        "10000", "/x",        NULL};
  ls_run *r = run_argv(argv);
  expect_status(r, EXIT_UNAVAILABLE);
  CU_ASSERT_PTR_NOT_NULL(
      strstr(r->err->str, "connection refused (127.0.0.1:1)"));
  CU_ASSERT_EQUAL(r->out->len, 0);
  CU_ASSERT(r->elapsed_ms < 2000);
  fprintf(stderr, "[unreachable: exit %d after %" PRId64 " ms] ", r->status,
          r->elapsed_ms);
  ls_run_free(r);
}

static void add_suites(void) {
  ZKT_SUITE("zkr-ls", {"mutex queue, --json", test_mutex_queue_json},
            {"mutex queue, text", test_mutex_queue_text},
            {"kazoo holder", test_kazoo_holder},
            {"kazoo reader, zkrecipes writer", test_kazoo_reader},
            {"data escaping", test_data_escaping},
            {"an ACL's refusal", test_acl_refusal},
            {"rwlock roles", test_rwlock_roles}, {"recursive", test_recursive},
            {"bad path", test_bad_path}, {"missing node", test_missing_node},
            {"unreachable servers", test_unreachable});
}

int main(void) { return zkt_run("test_zkrls", add_suites); }
