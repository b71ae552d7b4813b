/*
 * testing/security.c - a TLS or SASL ensemble's test credentials, made once
 * at its start under the ensemble directory, and the TLS context the harness
 * asks its TLS-only members with.
 *
 * TLS (ENSEMBLE_DIR/tls): a test CA, the members' key and certificate in a
 * PKCS12 key store, a client certificate and key (PEM, and PKCS12 for Java
 * clients), and an unrelated CA with a client certificate of its own, for
 * the refusals.  Made by the openssl command (`req -x509 -CA`, OpenSSL 3):
 * EC P-256 keys, three rounds of processes that do not depend on each other
 * (CAs; leaf certificates; key stores), 0.2 to 0.4 s in all.  keytool would
 * be a JVM per call (about 1 s each); openssl's PKCS12 key stores are read
 * by Java as they are.  The members trust the CA's PEM certificate
 * (ZooKeeper's ssl.trustStore.type=PEM): a PKCS12 trust store made by
 * OpenSSL 3.0 has no trusted-certificate entries for Java (that needs
 * -jdktrust, OpenSSL 3.2), and keytool -importcert would cost a JVM.
 *
 * SASL (ENSEMBLE_DIR/sasl): the members' JAAS file, whose "Server" section
 * (ZooKeeper's default, zookeeper.sasl.serverconfig) lists the DIGEST-MD5
 * users for DigestLoginModule, and one file per user holding its password,
 * random per ensemble.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "internal.h"

/* How long one openssl command may take. */
#define OPENSSL_TIMEOUT_MS 30000
/* Lines of openssl's log shown when it fails. */
#define LOG_TAIL_LINES 20

/* The extensions of the certificates: CAs, the members' (which serve and,
 * were quorum TLS ever wanted, could be clients too), the clients'. */
static const char openssl_config[] =
    "# written by libzkrecipes-testing: the test credentials' extensions\n"
    "[req]\n"
    "distinguished_name = dn\n"
    "prompt = no\n"
    "[dn]\n"
    "[ca]\n"
    "basicConstraints = critical, CA:TRUE\n"
    "keyUsage = critical, keyCertSign, cRLSign\n"
    "subjectKeyIdentifier = hash\n"
    "[server]\n"
    "basicConstraints = critical, CA:FALSE\n"
    "keyUsage = critical, digitalSignature\n"
    "extendedKeyUsage = serverAuth, clientAuth\n"
    "subjectAltName = IP:127.0.0.1, DNS:localhost\n"
    "subjectKeyIdentifier = hash\n"
    "authorityKeyIdentifier = keyid\n"
    "[client]\n"
    "basicConstraints = critical, CA:FALSE\n"
    "keyUsage = critical, digitalSignature\n"
    "extendedKeyUsage = clientAuth\n"
    "subjectAltName = IP:127.0.0.1, DNS:localhost\n"
    "subjectKeyIdentifier = hash\n"
    "authorityKeyIdentifier = keyid\n";

/* The SASL users (zkrc_ensemble_sasl_user()). */
static const char *const sasl_user_names[ZKRC__SASL_USERS] = {"zkrc", "alice"};

static int make_dir(const char *path) {
  if (mkdir(path, 0700) != 0 && errno != EEXIST) {
    fprintf(stderr, "zkrecipes-testing: cannot create %s: %s\n", path,
            strerror(errno));
    return -1;
  }
  return 0;
}

/* ---- TLS: the openssl commands ------------------------------------------ */

/* One certificate: its key and certificate files (in DIR/tls), subject,
 * extensions section, and the CA that signs it (NULL: self-signed). */
typedef struct cert_spec {
  const char *name; /* NAME.key, NAME.pem */
  const char *subject;
  const char *extensions;
  const char *ca; /* CA.pem and CA.key sign it */
} cert_spec;

/* Append to @p argv (a NULL-terminated GPtrArray of g_strdup'ed strings). */
static void push(GPtrArray *argv, const char *arg) {
  g_ptr_array_add(argv, g_strdup(arg));
}

static char **req_argv(const char *openssl, const cert_spec *c) {
  GPtrArray *a = g_ptr_array_new();
  push(a, openssl);
  push(a, "req");
  push(a, "-x509");
  push(a, "-config");
  push(a, "openssl.cnf");
  push(a, "-newkey");
  push(a, "ec");
  push(a, "-pkeyopt");
  push(a, "ec_paramgen_curve:P-256");
  push(a, "-noenc");
  push(a, "-days");
  push(a, "365");
  push(a, "-subj");
  push(a, c->subject);
  push(a, "-extensions");
  push(a, c->extensions);
  g_ptr_array_add(a, g_strdup_printf("-keyout=%s.key", c->name));
  g_ptr_array_add(a, g_strdup_printf("-out=%s.pem", c->name));
  if (c->ca) {
    g_ptr_array_add(a, g_strdup_printf("-CA=%s.pem", c->ca));
    g_ptr_array_add(a, g_strdup_printf("-CAkey=%s.key", c->ca));
  }
  g_ptr_array_add(a, NULL);
  return (char **)g_ptr_array_free(a, FALSE);
}

/* `openssl pkcs12 -export` of NAME.key and NAME.pem, with the CA's
 * certificate, into NAME.p12. */
static char **pkcs12_argv(const char *openssl, const char *name,
                          const char *ca) {
  GPtrArray *a = g_ptr_array_new();
  push(a, openssl);
  push(a, "pkcs12");
  push(a, "-export");
  g_ptr_array_add(a, g_strdup_printf("-in=%s.pem", name));
  g_ptr_array_add(a, g_strdup_printf("-inkey=%s.key", name));
  g_ptr_array_add(a, g_strdup_printf("-certfile=%s.pem", ca));
  push(a, "-name");
  push(a, name);
  g_ptr_array_add(a, g_strdup_printf("-out=%s.p12", name));
  push(a, "-passout");
  push(a, "pass:" ZKRC_TLS_STORE_PASSWORD);
  g_ptr_array_add(a, NULL);
  return (char **)g_ptr_array_free(a, FALSE);
}

/* Run the commands @p argvs (NULL-terminated list) at once, in @p dir, their
 * output appended to @p log_fd, and wait for them all.  Frees @p argvs.
 * 0 when every one exited 0. */
static int run_round(char ***argvs, const char *dir, int log_fd) {
  pid_t pids[8];
  int n = 0, rc = 0;
  for (; argvs[n]; n++) {
    pids[n] = rc == 0 ? zkrc__spawn(argvs[n], dir, log_fd) : -1;
    if (pids[n] < 0)
      rc = -1;
  }
  for (int i = 0; i < n; i++) {
    if (pids[i] > 0) {
      zkrc_child child = {
          .pid = pids[i], .in_fd = -1, .out_fd = -1, .err_fd = -1};
      int status = zkrc_child_wait(&child, OPENSSL_TIMEOUT_MS);
      if (status != 0) {
        fprintf(stderr, "zkrecipes-testing: openssl %s failed (%d)\n",
                argvs[i][1], status);
        rc = -1;
      }
    }
    g_strfreev(argvs[i]);
  }
  return rc;
}

static int make_tls_files(zkrc_ensemble *e, const char *dir) {
  char *openssl = zkrc__find_program("openssl");
  if (!openssl) {
    fprintf(stderr, "zkrecipes-testing: openssl not found: a TLS ensemble "
                    "makes its credentials with it (apt-get install "
                    "openssl)\n");
    return -1;
  }
  char *config = g_strdup_printf("%s/openssl.cnf", dir);
  char *log = g_strdup_printf("%s/openssl.log", dir);
  int rc = zkrc__write_file(config, openssl_config);
  int log_fd =
      rc == 0 ? open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600) : -1;
  if (rc == 0 && log_fd < 0) {
    fprintf(stderr, "zkrecipes-testing: cannot open %s: %s\n", log,
            strerror(errno));
    rc = -1;
  }
  static const cert_spec cas[] = {
      {"ca", "/CN=zkrecipes test CA", "ca", NULL},
      {"other-ca", "/CN=zkrecipes unrelated test CA", "ca", NULL},
  };
  static const cert_spec leaves[] = {
      {"server", "/CN=localhost", "server", "ca"},
      {"client", "/CN=zkrecipes test client", "client", "ca"},
      {"other-client", "/CN=zkrecipes unrelated test client", "client",
       "other-ca"},
  };
  if (rc == 0) {
    char **round1[] = {req_argv(openssl, &cas[0]), req_argv(openssl, &cas[1]),
                       NULL};
    rc = run_round(round1, dir, log_fd);
  }
  if (rc == 0) {
    char **round2[] = {req_argv(openssl, &leaves[0]),
                       req_argv(openssl, &leaves[1]),
                       req_argv(openssl, &leaves[2]), NULL};
    rc = run_round(round2, dir, log_fd);
  }
  if (rc == 0) {
    char **round3[] = {pkcs12_argv(openssl, "server", "ca"),
                       pkcs12_argv(openssl, "client", "ca"), NULL};
    rc = run_round(round3, dir, log_fd);
  }
  if (log_fd >= 0)
    close(log_fd);
  if (rc != 0)
    zkrc__print_tail(log, LOG_TAIL_LINES, "  | ");
  free(openssl);
  g_free(config);
  g_free(log);
  if (rc != 0)
    return -1;
  static const char *const names[ZKRC__TLS_FILES] = {
      [ZKRC_TLS_CA] = "ca.pem",
      [ZKRC_TLS_CLIENT_CERT] = "client.pem",
      [ZKRC_TLS_CLIENT_KEY] = "client.key",
      [ZKRC_TLS_CLIENT_KEYSTORE] = "client.p12",
      [ZKRC_TLS_OTHER_CA] = "other-ca.pem",
      [ZKRC_TLS_OTHER_CLIENT_CERT] = "other-client.pem",
      [ZKRC_TLS_OTHER_CLIENT_KEY] = "other-client.key",
      [ZKRC_TLS_SERVER_KEYSTORE] = "server.p12",
  };
  for (int i = 0; i < ZKRC__TLS_FILES; i++)
    e->tls_files[i] = g_strdup_printf("%s/%s", dir, names[i]);
  return 0;
}

/* ---- TLS: the harness's client ------------------------------------------ */

static void print_openssl_errors(const char *what) {
  unsigned long err = ERR_get_error();
  char text[256] = "unknown error";
  if (err)
    ERR_error_string_n(err, text, sizeof text);
  fprintf(stderr, "zkrecipes-testing: %s: %s\n", what, text);
  ERR_clear_error();
}

/* The context the harness asks members with: it trusts the test CA and
 * shows the client certificate; each connection also checks that the
 * member's certificate names 127.0.0.1 (net.c). */
static SSL_CTX *make_tls_context(const zkrc_ensemble *e) {
  SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
  if (!ctx) {
    print_openssl_errors("SSL_CTX_new");
    return NULL;
  }
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  /* Members close a four-letter word's connection without close_notify
   * at times: the answer is complete all the same. */
  SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
  if (SSL_CTX_load_verify_locations(ctx, e->tls_files[ZKRC_TLS_CA], NULL) !=
          1 ||
      SSL_CTX_use_certificate_chain_file(
          ctx, e->tls_files[ZKRC_TLS_CLIENT_CERT]) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx, e->tls_files[ZKRC_TLS_CLIENT_KEY],
                                  SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(ctx) != 1) {
    print_openssl_errors("the harness's TLS client credentials");
    SSL_CTX_free(ctx);
    return NULL;
  }
  return ctx;
}

/* ---- SASL ---------------------------------------------------------------- */

static int make_sasl_files(zkrc_ensemble *e, const char *dir) {
  GString *jaas = g_string_new(
      "/* written by libzkrecipes-testing: the members' DIGEST-MD5 users */\n"
      "Server {\n"
      "  org.apache.zookeeper.server.auth.DigestLoginModule required");
  int rc = 0;
  for (int i = 0; i < ZKRC__SASL_USERS && rc == 0; i++) {
    char *password = g_strdup_printf("%s-%08x%08x", sasl_user_names[i],
                                     g_random_int(), g_random_int());
    e->sasl_users[i] = g_strdup(sasl_user_names[i]);
    e->sasl_password_files[i] =
        g_strdup_printf("%s/%s.password", dir, sasl_user_names[i]);
    /* No newline: the file's whole content is the password. */
    rc = zkrc__write_file(e->sasl_password_files[i], password);
    g_string_append_printf(jaas, "\n  user_%s=\"%s\"", sasl_user_names[i],
                           password);
    g_free(password);
  }
  g_string_append(jaas, ";\n};\n");
  e->jaas_path = g_strdup_printf("%s/jaas.conf", dir);
  if (rc == 0)
    rc = zkrc__write_file(e->jaas_path, jaas->str);
  g_string_free(jaas, TRUE);
  return rc;
}

/* ---- the ensemble's ------------------------------------------------------ */

int zkrc__security_prepare(zkrc_ensemble *e) {
  int rc = 0;
  if (e->opts.tls) {
    char *dir = g_strdup_printf("%s/tls", e->dir);
    rc = make_dir(dir);
    if (rc == 0)
      rc = make_tls_files(e, dir);
    g_free(dir);
    if (rc == 0) {
      e->tls_ctx = make_tls_context(e);
      rc = e->tls_ctx ? 0 : -1;
    }
  }
  if (rc == 0 && e->opts.sasl) {
    char *dir = g_strdup_printf("%s/sasl", e->dir);
    rc = make_dir(dir);
    if (rc == 0)
      rc = make_sasl_files(e, dir);
    g_free(dir);
  }
  return rc;
}

void zkrc__security_free(zkrc_ensemble *e) {
  for (int i = 0; i < ZKRC__TLS_FILES; i++) {
    g_free(e->tls_files[i]);
    e->tls_files[i] = NULL;
  }
  SSL_CTX_free(e->tls_ctx);
  e->tls_ctx = NULL;
  g_free(e->jaas_path);
  e->jaas_path = NULL;
  for (int i = 0; i < ZKRC__SASL_USERS; i++) {
    g_free(e->sasl_users[i]);
    g_free(e->sasl_password_files[i]);
    e->sasl_users[i] = e->sasl_password_files[i] = NULL;
  }
}

/* ---- public ------------------------------------------------------------- */

const char *zkrc_ensemble_tls_file(const zkrc_ensemble *e,
                                   zkrc_tls_file which) {
  if (!e || (int)which < 0 || (int)which >= ZKRC__TLS_FILES)
    return NULL;
  return e->tls_files[which];
}

int zkrc_ensemble_sasl_user(const zkrc_ensemble *e, int i, const char **user,
                            const char **password_file) {
  if (user)
    *user = NULL;
  if (password_file)
    *password_file = NULL;
  if (!e || !e->jaas_path || i < 0 || i >= ZKRC__SASL_USERS)
    return -1;
  if (user)
    *user = e->sasl_users[i];
  if (password_file)
    *password_file = e->sasl_password_files[i];
  return 0;
}
