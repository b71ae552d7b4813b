/*
 * tests/test_harness_security.c - TLS and SASL ensembles of
 * libzkrecipes-testing (issue 33), proven with another client: Debian's
 * kazoo (tests/peers/kazoo_security.py, one process per check).
 *
 *  - TLS (three members): the connect string names the secure ports, a
 *    member answers nothing in plaintext, the harness knows the leader
 *    through its own TLS client (also after a leader is killed), kazoo
 *    with the client certificate creates a node, kazoo trusting the
 *    unrelated CA, or showing no client certificate, or one of the
 *    unrelated CA, is refused; a kazoo session is expired over TLS; fault
 *    proxies are refused.
 *  - SASL (one member): alice creates a node only she may use (ACL
 *    sasl:alice:cdrwa), zkrc and an unauthenticated client cannot read it,
 *    a wrong password fails to authenticate.
 *  - TLS and SASL together (one member).
 *  - Start times of a plain, a TLS and a SASL member, in one run (printed),
 *    and the plain member's configuration unchanged.
 *
 * Every wait is bounded; every peer is a child that is killed and reaped
 * at its deadline, or when this program dies.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CUnit/CUnit.h>
#include <glib.h>

#include "testutil.h"
#include "zkrecipes/testing.h"

#define KAZOO_SECURITY TOP_SRCDIR "/tests/peers/kazoo_security.py"

/* A kazoo check that should succeed: Python's start and a connection. */
#define PEER_MS 30000
/* How long a kazoo that should be refused tries (it retries until then). */
#define REFUSED_TRY_MS "3000"
#define START_TIMEOUT_MS 60000
#define SERVE_TIMEOUT_MS 30000

static gint64 now_ms(void) { return g_get_monotonic_time() / 1000; }

/* ---- kazoo ---------------------------------------------------------------- */

/* A kazoo_security.py process and what it wrote so far. */
typedef struct kazoo {
  zkrc_child child;
  GString *out;
  gint64 deadline;
} kazoo;

/* Start kazoo_security.py CONNECT ACTION PATH ARGS... (NULL-terminated). */
static G_GNUC_NULL_TERMINATED kazoo *
kazoo_start(const char *connect, const char *action, const char *path, ...) {
  GPtrArray *argv = g_ptr_array_new();
  g_ptr_array_add(argv, (char *)DEBIAN_PYTHON3);
  g_ptr_array_add(argv, (char *)KAZOO_SECURITY);
  g_ptr_array_add(argv, (char *)connect);
  g_ptr_array_add(argv, (char *)action);
  g_ptr_array_add(argv, (char *)path);
  va_list ap;
  va_start(ap, path);
  for (const char *a; (a = va_arg(ap, const char *));)
    g_ptr_array_add(argv, (char *)a);
  va_end(ap);
  g_ptr_array_add(argv, NULL);
  zkrc_spawn_options o;
  zkrc_spawn_options_init(&o);
  o.pipe_stdout = 1;
  kazoo *k = g_new0(kazoo, 1);
  k->out = g_string_new(NULL);
  k->deadline = now_ms() + PEER_MS;
  if (zkrc_spawn(&k->child, (char **)argv->pdata, &o) != 0) {
    CU_FAIL("cannot start kazoo_security.py");
    k->child.pid = 0;
  }
  g_ptr_array_free(argv, TRUE);
  return k;
}

/* The next line it writes (g_free it), or NULL at its end or deadline. */
static char *kazoo_line(kazoo *k) {
  for (;;) {
    char *nl = memchr(k->out->str, '\n', k->out->len);
    if (nl) {
      char *line = g_strndup(k->out->str, (gsize)(nl - k->out->str));
      g_string_erase(k->out, 0, nl - k->out->str + 1);
      return line;
    }
    gint64 left = k->deadline - now_ms();
    if (k->child.out_fd < 0 || left <= 0)
      return NULL;
    struct pollfd p = {k->child.out_fd, POLLIN, 0};
    if (poll(&p, 1, (int)left) <= 0)
      continue;
    char buf[1024];
    ssize_t n = read(k->child.out_fd, buf, sizeof buf);
    if (n > 0) {
      g_string_append_len(k->out, buf, n);
    } else if (n == 0 || errno != EINTR) {
      close(k->child.out_fd);
      k->child.out_fd = -1;
    }
  }
}

/* Wait for it to exit (killed at its deadline); its status.  Frees @p k. */
static int kazoo_finish(kazoo *k) {
  gint64 left = k->deadline - now_ms();
  int status = k->child.pid > 0
                   ? zkrc_child_wait(&k->child, left > 0 ? (int)left : 0)
                   : -1;
  zkrc_child_close(&k->child);
  g_string_free(k->out, TRUE);
  g_free(k);
  return status;
}

/* Run one check to its end: its one line of output (g_free it), or NULL
 * (then the test has failed). */
static G_GNUC_NULL_TERMINATED char *
kazoo_run(const char *connect, const char *action, const char *path, ...) {
  /* At most 10 options; va_list cannot be passed on to kazoo_start(). */
  const char *a[11] = {NULL};
  va_list ap;
  va_start(ap, path);
  for (int i = 0; i < 10 && (a[i] = va_arg(ap, const char *)); i++)
    ;
  va_end(ap);
  kazoo *k = kazoo_start(connect, action, path, a[0], a[1], a[2], a[3], a[4],
                         a[5], a[6], a[7], a[8], a[9], (char *)NULL);
  char *line = kazoo_line(k);
  int status = kazoo_finish(k);
  if (status != 0 || !line) {
    fprintf(stderr, "kazoo_security.py %s %s: exit %d, said %s\n", action, path,
            status, line ? line : "nothing");
    CU_FAIL("kazoo_security.py did not finish as expected");
    g_free(line);
    return NULL;
  }
  printf("  kazoo %s %s: %s\n", action, path, line);
  return line;
}

static int starts_with(const char *s, const char *prefix) {
  return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

static int contains(const char *s, const char *needle) {
  return s && strstr(s, needle) != NULL;
}

/* A path unique to this run, under /open: kazoo makes the missing parents
 * with the node's ACL, so alice's nodes (create-private) go under
 * /private, which only she may then use. */
static char *unique_path(const char *tag) {
  static int n;
  return g_strdup_printf("/%s/%s-%d-%d",
                         strncmp(tag, "alice", 5) == 0 ? "private" : "open",
                         tag, (int)getpid(), ++n);
}

static char *read_text(const char *path) {
  char *text = NULL;
  if (!g_file_get_contents(path, &text, NULL, NULL))
    return NULL;
  return text;
}

static int start_with(zkrc_ensemble **e, int members, int tls, int sasl,
                      const char *base_dir, gint64 *took_ms) {
  zkrc_ensemble_options o;
  zkrc_ensemble_options_init(&o);
  o.members = members;
  o.tls = tls;
  o.sasl = sasl;
  o.no_fsync = 1;
  o.start_timeout_ms = START_TIMEOUT_MS;
  o.base_dir = base_dir;
  gint64 t0 = now_ms();
  int rc = zkrc_ensemble_start(e, &o);
  if (took_ms)
    *took_ms = now_ms() - t0;
  return rc;
}

/* ---- TLS: three members ----------------------------------------------------- */

static zkrc_ensemble *tls_e;

static int tls_init(void) {
  gint64 took;
  if (start_with(&tls_e, 3, 1, 0, NULL, &took) != 0)
    return -1;
  printf("\n  a TLS ensemble of 3 started in %" G_GINT64_FORMAT " ms\n", took);
  return 0;
}

static int tls_cleanup(void) {
  zkrc_ensemble_stop(tls_e);
  tls_e = NULL;
  return 0;
}

/* kazoo over TLS trusting @p ca, with @p cert and @p key (NULL: none). */
static char *tls_kazoo(const char *action, const char *path, const char *ca,
                       const char *cert, const char *key,
                       const char *timeout_ms) {
  const char *connect = zkrc_ensemble_connect_string(tls_e);
  if (cert)
    return kazoo_run(connect, action, path, "--ca", ca, "--cert", cert, "--key",
                     key, "--timeout-ms", timeout_ms, (char *)NULL);
  return kazoo_run(connect, action, path, "--ca", ca, "--timeout-ms",
                   timeout_ms, (char *)NULL);
}

static void test_tls_files(void) {
  for (int f = ZKRC_TLS_CA; f <= ZKRC_TLS_SERVER_KEYSTORE; f++) {
    const char *path = zkrc_ensemble_tls_file(tls_e, (zkrc_tls_file)f);
    CU_ASSERT_PTR_NOT_NULL_FATAL(path);
    struct stat st;
    CU_ASSERT(stat(path, &st) == 0 && st.st_size > 0);
  }
  CU_ASSERT_PTR_NULL(zkrc_ensemble_tls_file(tls_e, (zkrc_tls_file)99));
  CU_ASSERT_PTR_NULL(zkrc_ensemble_tls_file(NULL, ZKRC_TLS_CA));
  const char *user = "x", *file = "x";
  CU_ASSERT_EQUAL(zkrc_ensemble_sasl_user(tls_e, 0, &user, &file), -1);
  CU_ASSERT_PTR_NULL(user);
  CU_ASSERT_PTR_NULL(file);
  char *cert = read_text(zkrc_ensemble_tls_file(tls_e, ZKRC_TLS_CLIENT_CERT));
  char *key = read_text(zkrc_ensemble_tls_file(tls_e, ZKRC_TLS_CLIENT_KEY));
  CU_ASSERT(contains(cert, "-----BEGIN CERTIFICATE-----"));
  CU_ASSERT(contains(key, "-----BEGIN PRIVATE KEY-----"));
  g_free(cert);
  g_free(key);
}

/* The connect string names the secure ports, and the members' configs
 * have no plaintext client port. */
static void test_tls_secure_ports_only(void) {
  GString *want = g_string_new(NULL);
  for (int i = 0; i < zkrc_ensemble_size(tls_e); i++)
    g_string_append_printf(want, "%s127.0.0.1:%d", i ? "," : "",
                           zkrc_ensemble_member_port(tls_e, i));
  CU_ASSERT_STRING_EQUAL(zkrc_ensemble_connect_string(tls_e), want->str);
  CU_ASSERT_STRING_EQUAL(zkrc_ensemble_direct_connect_string(tls_e), want->str);
  g_string_free(want, TRUE);
  /* ENSEMBLE_DIR/tls/ca.pem: the members' configs are ENSEMBLE_DIR/mI. */
  char *tls_dir =
      g_path_get_dirname(zkrc_ensemble_tls_file(tls_e, ZKRC_TLS_CA));
  char *dir = g_path_get_dirname(tls_dir);
  for (int i = 0; i < zkrc_ensemble_size(tls_e); i++) {
    char *cfg_path = g_strdup_printf("%s/m%d/zoo.cfg", dir, i);
    char *cfg = read_text(cfg_path);
    char *secure = g_strdup_printf("\nsecureClientPort=%d\n",
                                   zkrc_ensemble_member_port(tls_e, i));
    CU_ASSERT(contains(cfg, secure));
    CU_ASSERT(!contains(cfg, "\nclientPort="));
    CU_ASSERT(contains(cfg, "\nssl.clientAuth=need\n"));
    g_free(secure);
    g_free(cfg);
    g_free(cfg_path);
  }
  g_free(dir);
  g_free(tls_dir);
}

/* A four-letter word in plaintext gets no answer: nothing but TLS. */
static void test_tls_no_plaintext(void) {
  for (int i = 0; i < zkrc_ensemble_size(tls_e); i++) {
    char *answer = NULL;
    int rc = zkrc_four_letter(zkrc_ensemble_member_address(tls_e, i), "srvr",
                              3000, &answer);
    CU_ASSERT(rc != 0 || !contains(answer, "Mode:"));
    free(answer);
  }
}

/* The harness's own questions go over TLS. */
static void test_tls_four_letter_words(void) {
  for (int i = 0; i < zkrc_ensemble_size(tls_e); i++) {
    char *answer = NULL;
    CU_ASSERT_EQUAL(zkrc_ensemble_four_letter(tls_e, i, "srvr", &answer), 0);
    CU_ASSERT(contains(answer, "Mode: "));
    free(answer);
  }
  CU_ASSERT(zkrc_ensemble_leader(tls_e) >= 0);
  CU_ASSERT(zkrc_ensemble_mntr_sum(tls_e, "zk_znode_count") > 0);
}

static void test_tls_kazoo_with_client_cert(void) {
  char *path = unique_path("tls");
  char *line =
      tls_kazoo("create", path, zkrc_ensemble_tls_file(tls_e, ZKRC_TLS_CA),
                zkrc_ensemble_tls_file(tls_e, ZKRC_TLS_CLIENT_CERT),
                zkrc_ensemble_tls_file(tls_e, ZKRC_TLS_CLIENT_KEY), "15000");
  CU_ASSERT(starts_with(line, "created "));
  g_free(line);
  g_free(path);
}

static void test_tls_kazoo_other_ca(void) {
  char *path = unique_path("tls-other-ca");
  char *line = tls_kazoo(
      "create", path, zkrc_ensemble_tls_file(tls_e, ZKRC_TLS_OTHER_CA),
      zkrc_ensemble_tls_file(tls_e, ZKRC_TLS_CLIENT_CERT),
      zkrc_ensemble_tls_file(tls_e, ZKRC_TLS_CLIENT_KEY), REFUSED_TRY_MS);
  CU_ASSERT(starts_with(line, "refused "));
  CU_ASSERT(contains(line, "CERTIFICATE_VERIFY_FAILED"));
  g_free(line);
  g_free(path);
}

static void test_tls_kazoo_no_client_cert(void) {
  char *path = unique_path("tls-no-cert");
  char *line =
      tls_kazoo("create", path, zkrc_ensemble_tls_file(tls_e, ZKRC_TLS_CA),
                NULL, NULL, REFUSED_TRY_MS);
  CU_ASSERT(starts_with(line, "refused "));
  /* The member's alert: bad_certificate (TLS 1.2) or
   * certificate_required (1.3). */
  CU_ASSERT(contains(line, "CERTIFICATE"));
  g_free(line);
  g_free(path);
}

static void test_tls_kazoo_other_client_cert(void) {
  char *path = unique_path("tls-other-cert");
  char *line = tls_kazoo(
      "create", path, zkrc_ensemble_tls_file(tls_e, ZKRC_TLS_CA),
      zkrc_ensemble_tls_file(tls_e, ZKRC_TLS_OTHER_CLIENT_CERT),
      zkrc_ensemble_tls_file(tls_e, ZKRC_TLS_OTHER_CLIENT_KEY), REFUSED_TRY_MS);
  CU_ASSERT(starts_with(line, "refused "));
  CU_ASSERT(contains(line, "CERTIFICATE"));
  g_free(line);
  g_free(path);
}

/* zkrc_ensemble_expire_session_id() on a TLS ensemble: kazoo's session is
 * lost. */
static void test_tls_expire_session(void) {
  kazoo *k =
      kazoo_start(zkrc_ensemble_connect_string(tls_e), "session", "/", "--ca",
                  zkrc_ensemble_tls_file(tls_e, ZKRC_TLS_CA), "--cert",
                  zkrc_ensemble_tls_file(tls_e, ZKRC_TLS_CLIENT_CERT), "--key",
                  zkrc_ensemble_tls_file(tls_e, ZKRC_TLS_CLIENT_KEY),
                  "--timeout-ms", "15000", (char *)NULL);
  char *line = kazoo_line(k);
  CU_ASSERT(starts_with(line, "session 0x"));
  if (starts_with(line, "session 0x")) {
    int64_t id =
        (int64_t)g_ascii_strtoull(line + strlen("session 0x"), NULL, 16);
    gint64 t0 = now_ms();
    CU_ASSERT_EQUAL(zkrc_ensemble_expire_session_id(tls_e, id, 10000), 0);
    printf("  expired 0x%" PRIx64 " over TLS in %" G_GINT64_FORMAT " ms\n", id,
           now_ms() - t0);
    char *then = kazoo_line(k);
    CU_ASSERT_STRING_EQUAL(then ? then : "(nothing)", "lost");
    g_free(then);
  }
  g_free(line);
  CU_ASSERT_EQUAL(kazoo_finish(k), 0);
  /* A session that never was is expired at once. */
  CU_ASSERT_EQUAL(zkrc_ensemble_expire_session_id(tls_e, 0x7777, 10000), 0);
}

/* Knowing the leader (through TLS) after it is killed, and a restarted
 * member serving again. */
static void test_tls_kill_leader(void) {
  int leader = zkrc_ensemble_leader(tls_e);
  CU_ASSERT_FATAL(leader >= 0);
  CU_ASSERT_EQUAL(zkrc_ensemble_kill(tls_e, leader), 0);
  CU_ASSERT_EQUAL(zkrc_ensemble_wait_serving(tls_e, -1, SERVE_TIMEOUT_MS), 0);
  int next = zkrc_ensemble_leader(tls_e);
  CU_ASSERT(next >= 0 && next != leader);
  CU_ASSERT_EQUAL(zkrc_ensemble_restart(tls_e, leader), 0);
  CU_ASSERT_EQUAL(zkrc_ensemble_wait_serving(tls_e, leader, SERVE_TIMEOUT_MS),
                  0);
}

/* Fault proxies cannot read TLS: the combination is refused at once. */
static void test_tls_refuses_proxies(void) {
  zkrc_ensemble_options o;
  zkrc_ensemble_options_init(&o);
  o.tls = 1;
  o.with_proxies = 1;
  zkrc_ensemble *e = NULL;
  gint64 t0 = now_ms();
  CU_ASSERT_EQUAL(zkrc_ensemble_start(&e, &o), -1);
  CU_ASSERT_PTR_NULL(e);
  CU_ASSERT(now_ms() - t0 < 1000);
}

/* ---- SASL: one member ------------------------------------------------------- */

static zkrc_ensemble *sasl_e;

static int sasl_init(void) {
  gint64 took;
  if (start_with(&sasl_e, 1, 0, 1, NULL, &took) != 0)
    return -1;
  printf("\n  a SASL ensemble of 1 started in %" G_GINT64_FORMAT " ms\n", took);
  return 0;
}

static int sasl_cleanup(void) {
  zkrc_ensemble_stop(sasl_e);
  sasl_e = NULL;
  return 0;
}

static void test_sasl_users(void) {
  const char *user, *file;
  CU_ASSERT_EQUAL_FATAL(zkrc_ensemble_sasl_user(sasl_e, 0, &user, &file), 0);
  CU_ASSERT_STRING_EQUAL(user, "zkrc");
  char *password = read_text(file);
  CU_ASSERT(password && *password && !strchr(password, '\n'));
  g_free(password);
  CU_ASSERT_EQUAL_FATAL(zkrc_ensemble_sasl_user(sasl_e, 1, &user, &file), 0);
  CU_ASSERT_STRING_EQUAL(user, "alice");
  CU_ASSERT_EQUAL(zkrc_ensemble_sasl_user(sasl_e, 2, &user, &file), -1);
  CU_ASSERT_PTR_NULL(user);
  CU_ASSERT_EQUAL(zkrc_ensemble_sasl_user(sasl_e, 0, NULL, NULL), 0);
  CU_ASSERT_PTR_NULL(zkrc_ensemble_tls_file(sasl_e, ZKRC_TLS_CA));
}

/* kazoo as SASL user @p i of @p e, over TLS when @p e is a TLS ensemble. */
static char *sasl_kazoo(zkrc_ensemble *e, int i, const char *action,
                        const char *path) {
  const char *user, *file;
  if (zkrc_ensemble_sasl_user(e, i, &user, &file) != 0) {
    CU_FAIL("no SASL user");
    return NULL;
  }
  const char *connect = zkrc_ensemble_connect_string(e);
  if (zkrc_ensemble_tls_file(e, ZKRC_TLS_CA))
    return kazoo_run(connect, action, path, "--user", user, "--password-file",
                     file, "--ca", zkrc_ensemble_tls_file(e, ZKRC_TLS_CA),
                     "--cert", zkrc_ensemble_tls_file(e, ZKRC_TLS_CLIENT_CERT),
                     "--key", zkrc_ensemble_tls_file(e, ZKRC_TLS_CLIENT_KEY),
                     (char *)NULL);
  return kazoo_run(connect, action, path, "--user", user, "--password-file",
                   file, (char *)NULL);
}

/* alice's node: she reads it, zkrc and an unauthenticated client cannot. */
static void check_private_node(zkrc_ensemble *e) {
  char *path = unique_path("alice");
  char *line = sasl_kazoo(e, 1, "create-private", path);
  CU_ASSERT(starts_with(line, "created "));
  g_free(line);
  line = sasl_kazoo(e, 1, "read", path);
  CU_ASSERT(starts_with(line, "read "));
  g_free(line);
  line = sasl_kazoo(e, 0, "read", path);
  CU_ASSERT_STRING_EQUAL(line ? line : "(nothing)", "noauth");
  g_free(line);
  g_free(path);
}

static void test_sasl_acl(void) {
  check_private_node(sasl_e);
  /* No SASL at all: served as anyone, and the ACL says no. */
  char *path = unique_path("anyone");
  char *line = kazoo_run(zkrc_ensemble_connect_string(sasl_e), "create", path,
                         (char *)NULL);
  CU_ASSERT(starts_with(line, "created "));
  g_free(line);
  g_free(path);
}

static void test_sasl_anyone_cannot_read(void) {
  char *path = unique_path("alice-only");
  char *line = sasl_kazoo(sasl_e, 1, "create-private", path);
  CU_ASSERT(starts_with(line, "created "));
  g_free(line);
  line = kazoo_run(zkrc_ensemble_connect_string(sasl_e), "read", path,
                   (char *)NULL);
  CU_ASSERT_STRING_EQUAL(line ? line : "(nothing)", "noauth");
  g_free(line);
  g_free(path);
}

static void test_sasl_wrong_password(void) {
  char *path = unique_path("wrong");
  char *line = kazoo_run(zkrc_ensemble_connect_string(sasl_e), "create", path,
                         "--user", "alice", "--password", "not-her-password",
                         "--timeout-ms", REFUSED_TRY_MS, (char *)NULL);
  CU_ASSERT(starts_with(line, "authfailed"));
  g_free(line);
  g_free(path);
}

/* ---- TLS and SASL: one member ----------------------------------------------- */

static void test_tls_and_sasl(void) {
  zkrc_ensemble *e = NULL;
  gint64 took;
  CU_ASSERT_EQUAL_FATAL(start_with(&e, 1, 1, 1, NULL, &took), 0);
  printf("\n  a TLS and SASL ensemble of 1 started in %" G_GINT64_FORMAT
         " ms\n",
         took);
  check_private_node(e);
  zkrc_ensemble_stop(e);
}

/* ---- start times ------------------------------------------------------------ */

/* The one zkr-ensemble-* directory under @p base (g_free it), or NULL. */
static char *ensemble_dir_in(const char *base) {
  DIR *d = opendir(base);
  char *found = NULL;
  for (struct dirent *de; d && (de = readdir(d));)
    if (strncmp(de->d_name, "zkr-ensemble-", 13) == 0)
      found = g_strdup_printf("%s/%s", base, de->d_name);
  if (d)
    closedir(d);
  return found;
}

/* One member each: plain, TLS, SASL; and the plain member's zoo.cfg as it
 * always was. */
static void test_start_times(void) {
  const char *tmp = getenv("TMPDIR");
  char *base =
      g_strdup_printf("%s/zkr-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(base));
  static const struct {
    const char *name;
    int tls, sasl;
  } kinds[] = {{"plain", 0, 0}, {"TLS", 1, 0}, {"SASL", 0, 1}};
  printf("\n");
  for (size_t k = 0; k < G_N_ELEMENTS(kinds); k++) {
    zkrc_ensemble *e = NULL;
    gint64 took;
    CU_ASSERT_EQUAL_FATAL(
        start_with(&e, 1, kinds[k].tls, kinds[k].sasl, base, &took), 0);
    printf("  start of one %s member: %" G_GINT64_FORMAT " ms\n", kinds[k].name,
           took);
    if (k == 0) {
      char *dir = ensemble_dir_in(base);
      char *cfg_path = g_strdup_printf("%s/m0/zoo.cfg", dir);
      char *cfg = read_text(cfg_path);
      char *want = g_strdup_printf("# written by libzkrecipes-testing\n"
                                   "tickTime=200\n"
                                   "dataDir=%s/m0/data\n"
                                   "clientPort=%d\n"
                                   "clientPortAddress=127.0.0.1\n"
                                   "admin.enableServer=false\n"
                                   "4lw.commands.whitelist=*\n"
                                   "maxClientCnxns=0\n"
                                   "forceSync=no\n",
                                   dir, zkrc_ensemble_member_port(e, 0));
      CU_ASSERT_STRING_EQUAL(cfg ? cfg : "(none)", want);
      char *tls_dir = g_strdup_printf("%s/tls", dir);
      char *sasl_dir = g_strdup_printf("%s/sasl", dir);
      CU_ASSERT(!g_file_test(tls_dir, G_FILE_TEST_EXISTS));
      CU_ASSERT(!g_file_test(sasl_dir, G_FILE_TEST_EXISTS));
      g_free(tls_dir);
      g_free(sasl_dir);
      g_free(want);
      g_free(cfg);
      g_free(cfg_path);
      g_free(dir);
    }
    zkrc_ensemble_stop(e);
  }
  rmdir(base);
  g_free(base);
}

/* ---- main ------------------------------------------------------------------- */

static CU_TestInfo tls_tests[] = {
    {"credential files", test_tls_files},
    {"secure ports only", test_tls_secure_ports_only},
    {"no plaintext answer", test_tls_no_plaintext},
    {"four-letter words over TLS", test_tls_four_letter_words},
    {"kazoo with the client certificate", test_tls_kazoo_with_client_cert},
    {"kazoo trusting another CA is refused", test_tls_kazoo_other_ca},
    {"kazoo without a client certificate is refused",
     test_tls_kazoo_no_client_cert},
    {"kazoo with another CA's certificate is refused",
     test_tls_kazoo_other_client_cert},
    {"expire a session over TLS", test_tls_expire_session},
    {"leader killed, member restarted", test_tls_kill_leader},
    {"fault proxies refused", test_tls_refuses_proxies},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo sasl_tests[] = {
    {"users", test_sasl_users},
    {"ACL sasl:alice", test_sasl_acl},
    {"unauthenticated cannot read", test_sasl_anyone_cannot_read},
    {"wrong password", test_sasl_wrong_password},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo both_tests[] = {
    {"SASL inside TLS", test_tls_and_sasl},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo time_tests[] = {
    {"plain, TLS, SASL", test_start_times},
    CU_TEST_INFO_NULL,
};

static void add_suites(void) {
  CU_SuiteInfo suites[] = {
      {"tls", tls_init, tls_cleanup, NULL, NULL, tls_tests},
      {"sasl", sasl_init, sasl_cleanup, NULL, NULL, sasl_tests},
      {"tls and sasl", NULL, NULL, NULL, NULL, both_tests},
      {"start times", NULL, NULL, NULL, NULL, time_tests},
      CU_SUITE_INFO_NULL,
  };
  CU_register_suites(suites);
}

int main(void) { return zkt_run("test_harness_security", add_suites); }
