/*
 * tests/test_zkrmembers.c - zkr-members, run as built (tools/zkr-members)
 * against the program's real one-member ensemble: the members it lists are
 * joined with zkrc_group_new() (and one by Curator's GroupMember, through
 * the CuratorPeer's group mode), and checked against what was joined;
 * --json is parsed back with json-glib; --watch must print JOINED, UPDATED
 * and LEFT as members come, change and go, a member whose session the
 * servers expire included.  --service lists and follows a service's
 * instances registered with zkrc_service_registration_new() and by Curator's
 * ServiceDiscovery (CuratorPeer's discovery mode).
 *
 * Every zkr-members is started with the testing library's zkrc_spawn (the
 * child dies with this program), stdin at its end, stdout and stderr read
 * through pipes with poll; its exit is awaited with zkrc_child_wait, every
 * wait with a deadline.  A follower is known to have read the group when
 * zkr-members -v says "watching PATH": every change made after that must
 * be reported.  Each change is made only once the one before it has been
 * reported (two changes between two reads would be reported once).
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include <zkrecipes/discovery.h>

#include "interop_peers.h"
#include "testutil.h"
#include "toolproc.h"

#define ZKR_MEMBERS TOP_BUILDDIR "/tools/zkr-members"
#define ZKR TOP_BUILDDIR "/tools/zkr"
/* Run as `zkr members' instead of by its own name (one test does). */
static int via_zkr;

/* zkr-members's exit statuses (zkr-members --help, zkr-members(1)). */
#define EXIT_USAGE 2
#define EXIT_BAD_PATH 65
#define EXIT_UNAVAILABLE 69
#define EXIT_NOPERM 77

#define START_TIMEOUT 10000  /* zkr-members connects and reads the group */
#define REPORT_TIMEOUT 10000 /* a change is reported */
#define EXIT_TIMEOUT 10000   /* zkr-members exits once it should */

/* ------------------------------------------------------------ processes */

static void cleanup_processes(void) { proc_free_all(); }

/* zkr-members -s HOSTS -t 2000 --server-tick 200, then @p args. */
static proc *members_start(const char *const *args) {
  const char *argv[40] = {ZKR_MEMBERS, "--servers", zkt_hosts(), "-t", "2000"};
  int n = 5;
  if (via_zkr) { /* zkr members --servers ... */
    memmove(argv + 2, argv + 1, 4 * sizeof *argv);
    argv[0] = ZKR;
    argv[1] = "members";
    n = 6;
  }
  argv[n++] = "--server-tick";
  argv[n++] = G_STRINGIFY(ZKT_TICK_MS);
  for (int i = 0; args[i] && n < 39; i++)
    argv[n++] = args[i];
  argv[n] = NULL;
  return proc_start(argv);
}

static void expect_exit(proc *p, int want) {
  int got = proc_wait(p, EXIT_TIMEOUT);
  if (got != want)
    fprintf(stderr, "\nzkr-members exited %d, expected %d; stderr:\n%s\n", got,
            want, p->err->str);
  CU_ASSERT_EQUAL(got, want);
}

/* Run zkr-members with @p args to its end. */
static proc *members_run(const char *const *args) {
  proc *p = members_start(args);
  proc_wait(p, EXIT_TIMEOUT);
  return p;
}

/* Wait until the follower has read the group (-v). */
static void wait_watching(proc *p, const char *path) {
  char *said = g_strdup_printf("%s: watching %s\n",
                               via_zkr ? "zkr members" : "zkr-members", path);
  CU_ASSERT_TRUE_FATAL(proc_wait_text(p, 1, said, START_TIMEOUT));
  g_free(said);
}

#define ASSERT_TEXT(got, want)                                                 \
  do {                                                                         \
    if (strcmp((got), (want)) != 0)                                            \
      fprintf(stderr, "\ngot:\n%s\nwanted:\n%s\n", (got), (want));             \
    CU_ASSERT_STRING_EQUAL((got), (want));                                     \
  } while (0)

/* ------------------------------------------------------------ members */

static zkrc_group *join(zkrc_session *s, const char *path, const char *id,
                        const char *data, size_t len) {
  zkrc_group *g = NULL;
  zkrc_group_options o;
  zkrc_group_options_init(&o);
  o.id = id;
  o.data = data;
  o.data_len = len;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_new(&g, s, path, &o));
  CU_ASSERT_PTR_NOT_NULL_FATAL(g);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_wait_registered(g, 10000));
  return g;
}

/* Three members joined by zkrecipes (data with a tab and a newline, data
 * not UTF-8, no data) and one by Curator: listed sorted by id, one line
 * each, the data escaped; exit 0.  A group that does not exist: "no such
 * node" and exit 1, as zkr ls says it (issue 32); an empty group: nothing
 * printed, exit 0. */
static void test_list(void) {
  char *path = zkt_path("members-list");
  zkrc_session *s = zkt_session();
  zkrc_group *a = join(s, path, "a", "host:1\tx\ny", 10);
  zkrc_group *b = join(s, path, "b", "\xff\x01", 2);
  zkrc_group *c = join(s, path, "c", NULL, 0);
  peer *java = curator_peer("curator", "group", path, "java", "java-payload",
                            (char *)NULL);
  char *line = peer_expect(java, "joined", START_MS);
  CU_ASSERT_PTR_NOT_NULL(line);
  g_free(line);

  proc *p = members_run((const char *[]){path, NULL});
  CU_ASSERT_EQUAL(p->status, 0);
  ASSERT_TEXT(p->out->str, "a\thost:1\\tx\\ny\n"
                           "b\t\\xFF\\x01\n"
                           "c\t\n"
                           "java\tjava-payload\n");

  char *none = g_strdup_printf("%s/none", path);
  proc *q = members_run((const char *[]){none, NULL});
  CU_ASSERT_EQUAL(q->status, 1);
  ASSERT_TEXT(q->out->str, "");
  CU_ASSERT_PTR_NOT_NULL(strstr(q->err->str, "no such node"));
  zkt_make_path(zkt_raw(), none);
  proc *e = members_run((const char *[]){none, NULL});
  CU_ASSERT_EQUAL(e->status, 0);
  ASSERT_TEXT(e->out->str, "");
  g_free(none);

  CU_ASSERT_EQUAL(peer_finish(java, STEP_MS), 0);
  zkrc_group_free(a);
  zkrc_group_free(b);
  zkrc_group_free(c);
  cleanup_processes();
  zkrc_session_close(s);
  g_free(path);
}

/* --json: one document that json-glib parses, "path" and "members" in id
 * order with id, data (text, or base64 when not UTF-8; null without data),
 * base64, and the czxid and ctime_ms of each member's node. */
static void test_json(void) {
  via_zkr = 1; /* zkr members: the same program */
  char *path = zkt_path("members-json");
  zkrc_session *s = zkt_session();
  zkrc_group *a = join(s, path, "a", "10.0.0.1:80", 11);
  zkrc_group *b = join(s, path, "b", "\xff\x01", 2);
  zkrc_group *c = join(s, path, "c", NULL, 0);
  proc *p = members_run((const char *[]){"--json", path, NULL});
  CU_ASSERT_EQUAL(p->status, 0);

  JsonParser *parser = json_parser_new();
  GError *err = NULL;
  CU_ASSERT_TRUE_FATAL(
      json_parser_load_from_data(parser, p->out->str, -1, &err));
  JsonObject *root = json_node_get_object(json_parser_get_root(parser));
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(root, "path"), path);
  JsonArray *members = json_object_get_array_member(root, "members");
  CU_ASSERT_EQUAL_FATAL(json_array_get_length(members), 3);
  JsonObject *ma = json_array_get_object_element(members, 0);
  JsonObject *mb = json_array_get_object_element(members, 1);
  JsonObject *mc = json_array_get_object_element(members, 2);
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(ma, "id"), "a");
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(ma, "data"),
                         "10.0.0.1:80");
  CU_ASSERT_FALSE(json_object_get_boolean_member(ma, "base64"));
  CU_ASSERT(json_object_get_int_member(ma, "czxid") > 0);
  CU_ASSERT(json_object_get_int_member(ma, "ctime_ms") > 0);
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(mb, "id"), "b");
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(mb, "data"), "/wE=");
  CU_ASSERT_TRUE(json_object_get_boolean_member(mb, "base64"));
  CU_ASSERT(json_object_get_int_member(mb, "czxid") >
            json_object_get_int_member(ma, "czxid"));
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(mc, "id"), "c");
  CU_ASSERT_TRUE(json_object_get_null_member(mc, "data"));
  g_object_unref(parser);

  zkrc_group_free(a);
  zkrc_group_free(b);
  zkrc_group_free(c);
  cleanup_processes();
  zkrc_session_close(s);
  g_free(path);
  via_zkr = 0;
}

/* --watch: a member joins, changes its data, leaves: JOINED, UPDATED, LEFT
 * (the last data), one line each, in order; the member there at the start
 * is not reported; SIGTERM then ends it with status 0.  --json --watch
 * --initial: the member at the start as JOINED, as one JSON line. */
static void test_watch(void) {
  char *path = zkt_path("members-watch");
  zkrc_session *s = zkt_session();
  zkrc_group *old = join(s, path, "old", "o", 1);
  proc *p = members_start((const char *[]){"-v", "--watch", path, NULL});
  proc *j = members_start((const char *[]){
      "-v", "--watch", "--initial", "--json", "--count", "1", path, NULL});
  wait_watching(p, path);
  /* j's first read is done before "m" joins: "old" alone in it. */
  CU_ASSERT_TRUE(proc_wait_text(j, 0, "\"old\"", START_TIMEOUT));
  zkrc_group *m = join(s, path, "m", "one", 3);
  CU_ASSERT_TRUE(proc_wait_text(p, 0, "joined\tm\tone\n", REPORT_TIMEOUT));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_set_data(m, "two\n", 4, 10000));
  CU_ASSERT_TRUE(proc_wait_text(p, 0, "updated\tm\ttwo\\n\n", REPORT_TIMEOUT));
  zkrc_group_free(m);
  CU_ASSERT_TRUE(proc_wait_text(p, 0, "left\tm\ttwo\\n\n", REPORT_TIMEOUT));
  kill(p->child.pid, SIGTERM);
  expect_exit(p, 0);
  ASSERT_TEXT(p->out->str,
              "joined\tm\tone\nupdated\tm\ttwo\\n\nleft\tm\ttwo\\n\n");

  expect_exit(j, 0);
  JsonParser *parser = json_parser_new();
  CU_ASSERT_TRUE_FATAL(
      json_parser_load_from_data(parser, j->out->str, -1, NULL));
  JsonObject *o = json_node_get_object(json_parser_get_root(parser));
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(o, "event"), "joined");
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(o, "id"), "old");
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(o, "data"), "o");
  g_object_unref(parser);

  zkrc_group_free(old);
  cleanup_processes();
  zkrc_session_close(s);
  g_free(path);
}

/* A member's session is expired on the servers (a session that does not
 * reopen, so that the member does not come back): LEFT with its data. */
static void test_watch_expired_member(void) {
  char *path = zkt_path("members-expiry");
  zkrc_session *s = zkt_session_with(ZKT_SESSION_TIMEOUT_MS, 1);
  zkrc_group *m = join(s, path, "gone", "d", 1);
  proc *p = members_start(
      (const char *[]){"-v", "--watch", "--count", "1", path, NULL});
  wait_watching(p, path);
  zkt_expire(s);
  CU_ASSERT_TRUE(proc_wait_text(p, 0, "left\tgone\td\n", REPORT_TIMEOUT));
  expect_exit(p, 0);
  ASSERT_TEXT(p->out->str, "left\tgone\td\n");
  zkrc_group_free(m);
  cleanup_processes();
  zkrc_session_close(s);
  g_free(path);
}

/* ------------------------------------------------------------- services */

/* Register a DYNAMIC instance of "api" under @p base (payload @p payload,
 * JSON text or NULL) and wait until its node exists. */
static zkrc_service_registration *register_api(zkrc_session *s,
                                               const char *base, const char *id,
                                               const char *address, int port,
                                               const char *payload) {
  zkrc_service_instance *inst =
      zkrc_service_instance_new("api", id, address, port);
  CU_ASSERT_PTR_NOT_NULL_FATAL(inst);
  inst->payload = payload ? g_strdup(payload) : NULL;
  zkrc_service_registration *r = NULL;
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_service_registration_new(&r, s, base, inst, NULL));
  zkrc_service_instance_free(inst);
  CU_ASSERT_PTR_NOT_NULL_FATAL(r);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_service_registration_wait(r, 10000));
  return r;
}

/* --service api BASE: the instances registered by zkrecipes (one without
 * address or port) and by Curator's ServiceDiscovery listed by id as
 * ID, ADDRESS, PORT; a node without a record is left out, said on stderr.
 * --json: the records, payloads as JSON values. */
static void test_service_list(void) {
  char *base = zkt_path("members-services");
  zkrc_session *s = zkt_session();
  zkrc_service_registration *a =
      register_api(s, base, "a", "10.0.0.1", 8080, "{\"zone\":\"a\"}");
  zkrc_service_registration *b =
      register_api(s, base, "b", NULL, ZKRC_SERVICE_NO_PORT, NULL);
  peer *java = curator_peer("curator", "discovery", base, "register", "api",
                            "j", "10.0.0.9", "7070", (char *)NULL);
  char *line = peer_expect(java, "registered", START_MS);
  CU_ASSERT_PTR_NOT_NULL(line);
  g_free(line);
  zhandle_t *zh = zkt_raw();
  char *junk = g_strdup_printf("%s/api/junk", base);
  CU_ASSERT_EQUAL(zoo_create(zh, junk, "not json", 8, &ZOO_OPEN_ACL_UNSAFE,
                             ZOO_EPHEMERAL, NULL, 0),
                  ZOK);

  proc *p = members_run((const char *[]){"--service", "api", base, NULL});
  CU_ASSERT_EQUAL(p->status, 0);
  ASSERT_TEXT(p->out->str, "a\t10.0.0.1\t8080\n"
                           "b\t\t\n"
                           "j\t10.0.0.9\t7070\n");
  CU_ASSERT_PTR_NOT_NULL(strstr(p->err->str, "/api/junk: not a service"));

  p = members_run((const char *[]){"--json", "--service", "api", base, NULL});
  CU_ASSERT_EQUAL(p->status, 0);
  JsonParser *parser = json_parser_new();
  CU_ASSERT_TRUE_FATAL(
      json_parser_load_from_data(parser, p->out->str, -1, NULL));
  JsonObject *root = json_node_get_object(json_parser_get_root(parser));
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(root, "service"), "api");
  JsonArray *all = json_object_get_array_member(root, "instances");
  CU_ASSERT_EQUAL_FATAL(json_array_get_length(all), 3);
  JsonObject *ia = json_array_get_object_element(all, 0);
  JsonObject *ib = json_array_get_object_element(all, 1);
  JsonObject *ij = json_array_get_object_element(all, 2);
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(ia, "id"), "a");
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(ia, "name"), "api");
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(ia, "address"),
                         "10.0.0.1");
  CU_ASSERT_EQUAL(json_object_get_int_member(ia, "port"), 8080);
  CU_ASSERT_TRUE(json_object_get_null_member(ia, "ssl_port"));
  JsonObject *pa = json_object_get_object_member(ia, "payload");
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(pa, "zone"), "a");
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(ia, "service_type"),
                         "DYNAMIC");
  CU_ASSERT(json_object_get_int_member(ia, "registration_time_utc") > 0);
  CU_ASSERT_TRUE(json_object_get_null_member(ib, "address"));
  CU_ASSERT_TRUE(json_object_get_null_member(ib, "port"));
  CU_ASSERT_TRUE(json_object_get_null_member(ib, "payload"));
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(ij, "id"), "j");
  JsonObject *pj = json_object_get_object_member(ij, "payload");
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(pj, "lang"), "java");
  g_object_unref(parser);

  CU_ASSERT_EQUAL(peer_finish(java, STEP_MS), 0);
  zkrc_service_unregister(a);
  zkrc_service_unregister(b);
  cleanup_processes();
  g_free(junk);
  zookeeper_close(zh);
  zkrc_session_close(s);
  g_free(base);
}

/* --service --watch: an instance registered, its port changed, then
 * unregistered: JOINED, UPDATED, LEFT with ID, ADDRESS, PORT; SIGTERM ends
 * it with status 0. */
static void test_service_watch(void) {
  char *base = zkt_path("members-services-watch");
  zkrc_session *s = zkt_session();
  proc *p = members_start(
      (const char *[]){"-v", "--watch", "--service", "api", base, NULL});
  char *path = g_strdup_printf("%s/api", base);
  wait_watching(p, path);
  zkrc_service_registration *c =
      register_api(s, base, "c", "10.0.0.3", 9090, NULL);
  CU_ASSERT_TRUE(
      proc_wait_text(p, 0, "joined\tc\t10.0.0.3\t9090\n", REPORT_TIMEOUT));
  zkrc_service_instance *moved =
      zkrc_service_instance_new("api", "c", "10.0.0.3", 9191);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_service_update(c, moved, 10000));
  zkrc_service_instance_free(moved);
  CU_ASSERT_TRUE(
      proc_wait_text(p, 0, "updated\tc\t10.0.0.3\t9191\n", REPORT_TIMEOUT));
  zkrc_service_unregister(c);
  CU_ASSERT_TRUE(
      proc_wait_text(p, 0, "left\tc\t10.0.0.3\t9191\n", REPORT_TIMEOUT));
  kill(p->child.pid, SIGTERM);
  expect_exit(p, 0);
  ASSERT_TEXT(p->out->str, "joined\tc\t10.0.0.3\t9090\n"
                           "updated\tc\t10.0.0.3\t9191\n"
                           "left\tc\t10.0.0.3\t9191\n");
  cleanup_processes();
  zkrc_session_close(s);
  g_free(path);
  g_free(base);
}

/* ---------------------------------------------------------- permission */

#define AUTH_ALICE "alice:alice-secret"

/* A group whose node admits alice (digest) only: without credentials, or
 * with the wrong password, 77 and a message, nothing listed (not an empty
 * list); with alice's (--auth-file) the member alice put there is listed. */
static void test_permission(void) {
  zhandle_t *zh = zkt_raw();
  zkt_make_path(zh, "/zkt");
  char *path = zkt_path("members-alice");
  char *id = zkt_digest_id(AUTH_ALICE);
  struct ACL alice = {ZOO_PERM_ALL, {"digest", id}};
  struct ACL_vector acl = {1, &alice};
  CU_ASSERT_EQUAL_FATAL(zoo_create(zh, path, "", 0, &acl, 0, NULL, 0), ZOK);
  CU_ASSERT_EQUAL_FATAL(zoo_add_auth(zh, "digest", AUTH_ALICE,
                                     (int)strlen(AUTH_ALICE), NULL, NULL),
                        ZOK);
  char *member = g_strdup_printf("%s/m1", path);
  CU_ASSERT_EQUAL_FATAL(
      zoo_create(zh, member, "d1", 2, &acl, ZOO_EPHEMERAL, NULL, 0), ZOK);

  char *dir = g_dir_make_tmp("zkr-members-test-XXXXXX", NULL);
  char *good = g_build_filename(dir, "good", NULL);
  char *wrong = g_build_filename(dir, "wrong", NULL);
  CU_ASSERT_FATAL(g_file_set_contents(good, AUTH_ALICE "\n", -1, NULL));
  CU_ASSERT_FATAL(g_file_set_contents(wrong, "alice:nope\n", -1, NULL));

  proc *p = members_run((const char *[]){path, NULL});
  CU_ASSERT_EQUAL(p->status, EXIT_NOPERM);
  CU_ASSERT_EQUAL(p->out->len, 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(p->err->str, "cannot list the group"));
  p = members_run(
      (const char *[]){"--auth-file", wrong, "--watch", path, NULL});
  CU_ASSERT_EQUAL(p->status, EXIT_NOPERM);
  CU_ASSERT_EQUAL(p->out->len, 0);
  p = members_run((const char *[]){"--auth-file", good, path, NULL});
  CU_ASSERT_EQUAL(p->status, 0);
  ASSERT_TEXT(p->out->str, "m1\td1\n");

  cleanup_processes();
  g_unlink(good);
  g_unlink(wrong);
  g_rmdir(dir);
  g_free(good);
  g_free(wrong);
  g_free(dir);
  g_free(member);
  g_free(id);
  zookeeper_close(zh);
  g_free(path);
}

/* ---------------------------------------------------------- bad input */

static void expect_refusal(const char *const *args, int status,
                           const char *message) {
  proc *p = members_run(args);
  if (p->status != status)
    fprintf(stderr, "\nexit %d, expected %d\n", p->status, status);
  CU_ASSERT_EQUAL(p->status, status);
  if (!strstr(p->err->str, message))
    fprintf(stderr, "\nexpected '%s' on stderr, got:\n%s\n", message,
            p->err->str);
  CU_ASSERT_PTR_NOT_NULL(strstr(p->err->str, message));
  CU_ASSERT_EQUAL(p->out->len, 0);
  proc_free(p);
}

/* Invalid paths (65) and usage (2) fail with a message, nothing on
 * stdout; --help names the environment. */
static void test_bad_input(void) {
  expect_refusal((const char *[]){"relative", NULL}, EXIT_BAD_PATH,
                 "invalid path 'relative'");
  expect_refusal((const char *[]){"/trailing/", NULL}, EXIT_BAD_PATH,
                 "invalid path '/trailing/'");
  expect_refusal((const char *[]){"/", NULL}, EXIT_BAD_PATH,
                 "invalid path '/'");
  expect_refusal((const char *[]){"/a", "/b", NULL}, EXIT_USAGE,
                 "one PATH only");
  expect_refusal((const char *[]){"--count", "2", "/a", NULL}, EXIT_USAGE,
                 "go with --watch");
  expect_refusal((const char *[]){"--watch", "--count", "0", "/a", NULL},
                 EXIT_USAGE, "--count must be");
  expect_refusal((const char *[]){"--bogus", "/a", NULL}, EXIT_USAGE,
                 "unknown option");
  expect_refusal((const char *[]){NULL}, EXIT_USAGE, "missing PATH");
  expect_refusal((const char *[]){"--service", "a/b", "/s", NULL},
                 EXIT_BAD_PATH, "invalid service name 'a/b'");
  expect_refusal((const char *[]){"--service", "", "/s", NULL}, EXIT_BAD_PATH,
                 "invalid service name ''");
  expect_refusal((const char *[]){"--service", "api", "rel", NULL},
                 EXIT_BAD_PATH, "invalid path 'rel'");

  proc *p = proc_start((const char *[]){ZKR_MEMBERS, "--help", NULL});
  CU_ASSERT_EQUAL(proc_wait(p, EXIT_TIMEOUT), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(p->out->str, "ZKR_AUTH_FILE"));
  CU_ASSERT_PTR_NOT_NULL(strstr(p->out->str, "ZKR_SERVERS"));
  cleanup_processes();
}

/* No server (nothing listens on port 1): 69 at once with "connection
 * refused (127.0.0.1:1)", not after the session timeout (-t 10000) nor the
 * connect timeout (5 s by default). */
static void test_unreachable(void) {
  const char *argv[] = {ZKR_MEMBERS, "--servers", "127.0.0.1:1", "-t",
                        "10000",     "/x",        NULL};
  proc *p = proc_start(argv);
  proc_wait(p, EXIT_TIMEOUT);
  int64_t took = zkt_now_ms() - p->started_ms;
  CU_ASSERT_EQUAL(p->status, EXIT_UNAVAILABLE);
  CU_ASSERT_PTR_NOT_NULL(
      strstr(p->err->str, "connection refused (127.0.0.1:1)"));
  CU_ASSERT_EQUAL(p->out->len, 0);
  CU_ASSERT(took < 2000);
  fprintf(stderr, "[unreachable: exit %d after %" PRId64 " ms] ", p->status,
          took);
  cleanup_processes();
}

static void add_suites(void) {
  atexit(cleanup_processes); /* runs before the ensemble is stopped */
  ZKT_SUITE("zkr-members", {"list", test_list}, {"json", test_json},
            {"watch", test_watch},
            {"watch: a member's session expires", test_watch_expired_member},
            {"service instances listed", test_service_list},
            {"service instances followed", test_service_watch},
            {"permission", test_permission}, {"bad input", test_bad_input},
            {"unreachable", test_unreachable});
}

int main(void) { return zkt_run("test_zkrmembers", add_suites); }
