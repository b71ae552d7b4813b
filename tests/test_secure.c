/*
 * tests/test_secure.c - sessions over TLS and with SASL (issue 33), on the
 * harness's own TLS and SASL members (zkrc_ensemble_options.tls, .sasl).
 *
 *  - Always: zkrc_features() says what the client was built with, and
 *    options the client cannot honour are refused with ZKRC_ENOTSUP,
 *    never served in plaintext; malformed ones with ZKRC_EINVAL.
 *  - Built against a client with TLS (./configure --with-zookeeper,
 *    scripts/build-zookeeper-client; `make check-tls'): a lock and an
 *    election over mutual TLS, with the lease renewed; a client that
 *    trusts another CA, or shows a certificate of another CA, makes no
 *    session.  With a client that checks the servers' name
 *    (scripts/build-zookeeper-client's): the members' name makes a
 *    session, another name signed by the same CA makes none.
 *  - With SASL: a node under a sasl: ACL is open to its user and closed to
 *    another; a wrong password makes no session.
 * In a build against Debian's client the tests that need TLS or SASL say
 * SKIPPED (zkt_skip), by name.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/CUnit.h>
#include <glib.h>
#include <glib/gstdio.h>

#include "testutil.h"

#define CONNECT_MS 15000
/* A client that cannot make a session gives up after this. */
#define REFUSED_MS 3000

static gboolean has(unsigned feature) {
  return (zkrc_features() & feature) != 0;
}

/* ------------------------------------------------------- the ensembles */

static zkrc_ensemble *tls_ensemble, *sasl_ensemble;

static zkrc_ensemble *start(int tls, int sasl) {
  zkrc_ensemble_options eo;
  zkrc_ensemble_options_init(&eo);
  eo.tls = tls;
  eo.sasl = sasl;
  eo.no_fsync = 1;
  zkrc_ensemble *e = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_ensemble_start(&e, &eo), 0);
  return e;
}

static zkrc_ensemble *tls_members(void) {
  if (tls_ensemble == NULL)
    tls_ensemble = start(1, 0);
  return tls_ensemble;
}

static zkrc_ensemble *sasl_members(void) {
  if (sasl_ensemble == NULL)
    sasl_ensemble = start(0, 1);
  return sasl_ensemble;
}

/* Options of a session to the TLS members with the CA @p ca and the
 * client certificate @p cert and key @p key. */
static zkrc_session_options tls_options(zkrc_tls_file ca, zkrc_tls_file cert,
                                        zkrc_tls_file key) {
  zkrc_ensemble *e = tls_members();
  zkrc_session_options o;
  zkrc_session_options_init(&o);
  o.session_timeout_ms = ZKT_SESSION_TIMEOUT_MS;
  o.server_tick_ms = 200;
  o.connect_timeout_ms = CONNECT_MS;
  o.tls_ca_file = zkrc_ensemble_tls_file(e, ca);
  o.tls_cert_file = zkrc_ensemble_tls_file(e, cert);
  o.tls_key_file = zkrc_ensemble_tls_file(e, key);
  return o;
}

static zkrc_session *tls_session(void) {
  zkrc_session_options o =
      tls_options(ZKRC_TLS_CA, ZKRC_TLS_CLIENT_CERT, ZKRC_TLS_CLIENT_KEY);
  zkrc_session *s = NULL;
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_session_connect(
                    &s, zkrc_ensemble_connect_string(tls_members()), &o));
  return s;
}

/* A session to the SASL members as user @p i, with @p password_file
 * (NULL: the user's own). */
static int sasl_connect_within(int i, const char *password_file, int connect_ms,
                               zkrc_session **s) {
  zkrc_ensemble *e = sasl_members();
  const char *user = NULL, *file = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_ensemble_sasl_user(e, i, &user, &file), 0);
  zkrc_session_options o;
  zkrc_session_options_init(&o);
  o.session_timeout_ms = ZKT_SESSION_TIMEOUT_MS;
  o.server_tick_ms = 200;
  o.sasl_user = user;
  o.sasl_password_file = password_file ? password_file : file;
  o.connect_timeout_ms = connect_ms;
  return zkrc_session_connect(s, zkrc_ensemble_connect_string(e), &o);
}

static int sasl_connect(int i, zkrc_session **s) {
  return sasl_connect_within(i, NULL, CONNECT_MS, s);
}

/* ------------------------------------------------- what the client has */

static void test_features(void) {
  unsigned expected = 0;
#ifdef HAVE_ZOOKEEPER_INIT_SSL
  expected |= ZKRC_FEATURE_TLS;
#endif
#ifdef HAVE_ZOOKEEPER_INIT_SASL
  expected |= ZKRC_FEATURE_SASL;
#endif
#ifdef HAVE_ZOOKEEPER_SSL_SERVER_NAME
  expected |= ZKRC_FEATURE_TLS_SERVER_NAME;
#endif
  CU_ASSERT_EQUAL(zkrc_features(), expected);
  printf("(client: TLS %s, server name check %s, SASL %s) ",
         has(ZKRC_FEATURE_TLS) ? "yes" : "no",
         has(ZKRC_FEATURE_TLS_SERVER_NAME) ? "yes" : "no",
         has(ZKRC_FEATURE_SASL) ? "yes" : "no");
}

/* Nothing is opened: the options are refused before any connection. */
static void expect_refused(int rc, const zkrc_session_options *o) {
  zkrc_session *s = (zkrc_session *)&s; /* overwritten with NULL */
  ZKT_ASSERT_RC(rc, zkrc_session_new(&s, "127.0.0.1:1", o));
  CU_ASSERT_PTR_NULL(s);
}

static void test_unsupported_refused(void) {
  zkrc_session_options o;
  zkrc_session_options_init(&o);
  o.tls_ca_file = o.tls_cert_file = o.tls_key_file = "/dev/null";
  if (!has(ZKRC_FEATURE_TLS))
    expect_refused(ZKRC_ENOTSUP, &o);
  o.tls_server_name = "localhost";
  if (!has(ZKRC_FEATURE_TLS_SERVER_NAME))
    expect_refused(ZKRC_ENOTSUP, &o);
  o.tls_server_name = NULL;
  /* Both at once: the 3.8 client has no such handle, whatever it has. */
  o.sasl_user = "alice";
  o.sasl_password_file = "/dev/null";
  expect_refused(ZKRC_ENOTSUP, &o);
  zkrc_session_options_init(&o);
  o.sasl_user = "alice";
  o.sasl_password_file = "/dev/null";
  if (!has(ZKRC_FEATURE_SASL))
    expect_refused(ZKRC_ENOTSUP, &o);
  CU_ASSERT_STRING_EQUAL(zkrc_err_name(ZKRC_ENOTSUP), "ZKRC_ENOTSUP");
}

static void test_malformed_refused(void) {
  if (!has(ZKRC_FEATURE_TLS) || !has(ZKRC_FEATURE_SASL)) {
    zkt_skip("the ZooKeeper client has no TLS or no SASL");
    return;
  }
  char *dir = g_dir_make_tmp("zkt-secure-XXXXXX", NULL);
  char *comma = g_build_filename(dir, "a,b.pem", NULL);
  CU_ASSERT_TRUE(g_file_set_contents(comma, "x", 1, NULL));
  zkrc_session_options o;
  zkrc_session_options_init(&o);
  o.tls_ca_file = "/dev/null"; /* only one of the three */
  expect_refused(ZKRC_EINVAL, &o);
  o.tls_cert_file = o.tls_key_file = "/nonexistent/zkt.pem";
  expect_refused(ZKRC_EINVAL, &o);
  o.tls_cert_file = o.tls_key_file = comma;
  expect_refused(ZKRC_EINVAL, &o);
  if (has(ZKRC_FEATURE_TLS_SERVER_NAME)) {
    o = tls_options(ZKRC_TLS_CA, ZKRC_TLS_CLIENT_CERT, ZKRC_TLS_CLIENT_KEY);
    o.tls_server_name = "";
    expect_refused(ZKRC_EINVAL, &o);
    o.tls_server_name = "a,b";
    expect_refused(ZKRC_EINVAL, &o);
  }
  zkrc_session_options_init(&o);
  o.sasl_password_file = "/dev/null"; /* no user */
  expect_refused(ZKRC_EINVAL, &o);
  o.sasl_user = "alice"; /* DIGEST-MD5 without a password */
  o.sasl_password_file = NULL;
  expect_refused(ZKRC_EINVAL, &o);
  g_unlink(comma);
  g_rmdir(dir);
  g_free(comma);
  g_free(dir);
}

/* --------------------------------------------------------------- TLS */

static void test_lock_and_election_over_tls(void) {
  if (!has(ZKRC_FEATURE_TLS)) {
    zkt_skip("the ZooKeeper client has no TLS");
    return;
  }
  zkrc_session *a = tls_session(), *b = tls_session();
  CU_ASSERT_FATAL(a != NULL && b != NULL);
  /* The lease is renewed over TLS like any request. */
  CU_ASSERT(zkrc_session_lease_remaining(a) > 0);

  zkrc_lock *la = NULL, *lb = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_new(&la, a, "/zkt-tls/lock", NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_new(&lb, b, "/zkt-tls/lock", NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(la, CONNECT_MS));
  ZKT_ASSERT_RC(ZKRC_ELOCKED, zkrc_lock_acquire(lb, ZKRC_NO_WAIT));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(la));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lb, CONNECT_MS));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(lb));
  zkrc_lock_free(la);
  zkrc_lock_free(lb);

  zkrc_election *ea = NULL, *eb = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_new(&ea, a, "/zkt-tls/elect", NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_new(&eb, b, "/zkt-tls/elect", NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_join(ea));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_wait_leader(ea, CONNECT_MS));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_join(eb));
  /* A join makes its node in the background: wait for it in the queue,
   * behind the leader, before the leader resigns. */
  size_t count = 0;
  int64_t until = g_get_monotonic_time() + CONNECT_MS * 1000LL;
  while (count < 2 && g_get_monotonic_time() < until) {
    char **ids = NULL;
    if (zkrc_election_participants(ea, &ids, &count, CONNECT_MS) == ZKRC_OK)
      zkrc_strv_free(ids);
    if (count < 2)
      g_usleep(10 * 1000); /* a listing of the servers' state: no event */
  }
  CU_ASSERT_EQUAL_FATAL(count, 2);
  CU_ASSERT_TRUE(zkrc_election_is_leader(ea));
  CU_ASSERT_FALSE(zkrc_election_is_leader(eb));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_resign(ea));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_election_wait_leader(eb, CONNECT_MS));
  zkrc_election_free(ea);
  zkrc_election_free(eb);
  zkrc_session_close(a);
  zkrc_session_close(b);
}

/* A handshake that fails is a session never made, reported when the
 * connect timeout passes, with the client's reason in the log. */
static void expect_no_session(zkrc_tls_file ca, zkrc_tls_file cert,
                              zkrc_tls_file key) {
  zkrc_session_options o = tls_options(ca, cert, key);
  o.connect_timeout_ms = REFUSED_MS;
  zkrc_session *s = (zkrc_session *)&s;
  int64_t start = g_get_monotonic_time();
  ZKT_ASSERT_RC(ZKRC_ECONNECT,
                zkrc_session_connect(
                    &s, zkrc_ensemble_connect_string(tls_members()), &o));
  CU_ASSERT_PTR_NULL(s);
  int64_t took_ms = (g_get_monotonic_time() - start) / 1000;
  CU_ASSERT(took_ms < REFUSED_MS + 2000);
}

static void test_other_ca_refused(void) {
  if (!has(ZKRC_FEATURE_TLS)) {
    zkt_skip("the ZooKeeper client has no TLS");
    return;
  }
  /* We refuse the members' certificate... */
  expect_no_session(ZKRC_TLS_OTHER_CA, ZKRC_TLS_CLIENT_CERT,
                    ZKRC_TLS_CLIENT_KEY);
  /* ...and the members refuse ours. */
  expect_no_session(ZKRC_TLS_CA, ZKRC_TLS_OTHER_CLIENT_CERT,
                    ZKRC_TLS_OTHER_CLIENT_KEY);
}

/* The members' certificates name localhost (and 127.0.0.1): a client
 * that expects that name gets its session; one that expects another name
 * refuses them, although the CA it trusts signed them. */
static void test_server_name_checked(void) {
  if (!has(ZKRC_FEATURE_TLS_SERVER_NAME)) {
    zkt_skip("the ZooKeeper client does not check the servers' name");
    return;
  }
  zkrc_session_options o =
      tls_options(ZKRC_TLS_CA, ZKRC_TLS_CLIENT_CERT, ZKRC_TLS_CLIENT_KEY);
  o.tls_server_name = "localhost";
  zkrc_session *s = NULL;
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_session_connect(
                    &s, zkrc_ensemble_connect_string(tls_members()), &o));
  zkrc_session_close(s);
  o.tls_server_name = "zookeeper.invalid";
  o.connect_timeout_ms = REFUSED_MS;
  s = (zkrc_session *)&s;
  ZKT_ASSERT_RC(ZKRC_ECONNECT,
                zkrc_session_connect(
                    &s, zkrc_ensemble_connect_string(tls_members()), &o));
  CU_ASSERT_PTR_NULL(s);
}

/* -------------------------------------------------------------- SASL */

static const char *protected_node = "/zkt-sasl-alice";

static int create_for_alice(zhandle_t *zh, void *arg) {
  (void)arg;
  struct Id id = {"sasl", "alice"};
  struct ACL acl = {ZOO_PERM_ALL, id};
  struct ACL_vector only_alice = {1, &acl};
  return zoo_create(zh, protected_node, "mine", 4, &only_alice, 0, NULL, 0);
}

static int read_it(zhandle_t *zh, void *arg) {
  (void)arg;
  char buf[16];
  int len = sizeof buf;
  return zoo_get(zh, protected_node, 0, buf, &len, NULL);
}

static void test_sasl_acl(void) {
  if (!has(ZKRC_FEATURE_SASL)) {
    zkt_skip("the ZooKeeper client has no SASL");
    return;
  }
  zkrc_session *alice = NULL, *other = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, sasl_connect(1, &alice));
  ZKT_ASSERT_RC(ZKRC_OK, sasl_connect(0, &other));
  CU_ASSERT_FATAL(alice != NULL && other != NULL);
  CU_ASSERT_EQUAL(zkrc_session_with_handle(alice, create_for_alice, NULL), ZOK);
  CU_ASSERT_EQUAL(zkrc_session_with_handle(alice, read_it, NULL), ZOK);
  CU_ASSERT_EQUAL(zkrc_session_with_handle(other, read_it, NULL), ZNOAUTH);
  /* A recipe works as that user too: a lock under alice's node. */
  zkrc_lock *lk = NULL;
  ZKT_ASSERT_RC(ZKRC_OK,
                zkrc_lock_new(&lk, alice, "/zkt-sasl-alice/lock", NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_acquire(lk, CONNECT_MS));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_lock_release(lk));
  zkrc_lock_free(lk);
  zkrc_session_close(alice);
  zkrc_session_close(other);
}

static void test_sasl_wrong_password(void) {
  if (!has(ZKRC_FEATURE_SASL)) {
    zkt_skip("the ZooKeeper client has no SASL");
    return;
  }
  char *dir = g_dir_make_tmp("zkt-secure-XXXXXX", NULL);
  char *wrong = g_build_filename(dir, "password", NULL);
  CU_ASSERT_TRUE(g_file_set_contents(wrong, "not-the-password", -1, NULL));
  /* The servers close a connection whose DIGEST-MD5 response is wrong,
   * and the 3.8 client takes that for a dropped connection and tries
   * again: no session is ever made, and the connect gives up at its
   * timeout. */
  zkrc_session *s = (zkrc_session *)&s;
  int64_t start = g_get_monotonic_time();
  int rc = sasl_connect_within(1, wrong, REFUSED_MS, &s);
  CU_ASSERT(rc == ZKRC_ECONNECT || rc == ZKRC_EAUTHFAILED);
  CU_ASSERT_PTR_NULL(s);
  int64_t took_ms = (g_get_monotonic_time() - start) / 1000;
  CU_ASSERT(took_ms < REFUSED_MS + 2000);
  printf("(%s after %" G_GINT64_FORMAT " ms) ", zkrc_err_name(rc), took_ms);
  g_unlink(wrong);
  g_rmdir(dir);
  g_free(wrong);
  g_free(dir);
}

static void stop_ensembles(void) {
  if (tls_ensemble)
    zkrc_ensemble_stop(tls_ensemble);
  if (sasl_ensemble)
    zkrc_ensemble_stop(sasl_ensemble);
  tls_ensemble = sasl_ensemble = NULL;
}

static void test_stop(void) {
  stop_ensembles();
  CU_PASS("stopped");
}

static void add_suites(void) {
  ZKT_SUITE(
      "secure", {"features of the client", test_features},
      {"options the client cannot honour are refused",
       test_unsupported_refused},
      {"malformed TLS and SASL options are refused", test_malformed_refused},
      {"lock and election over mutual TLS", test_lock_and_election_over_tls},
      {"another CA on either side makes no session", test_other_ca_refused},
      {"the servers' name is checked when asked", test_server_name_checked},
      {"SASL: a sasl ACL admits its user, not another", test_sasl_acl},
      {"SASL: a wrong password is refused", test_sasl_wrong_password},
      {"ensembles stopped", test_stop});
}

int main(void) { return zkt_run("test_secure", add_suites); }
