/*
 * TLS and SASL (zkrc_session_options.tls_*, sasl_*): the options checked
 * and copied, and the handle opened with the ZooKeeper client's
 * zookeeper_init_ssl or zookeeper_init_sasl.  Debian's libzookeeper-mt has
 * neither; configure finds them in a client built with them
 * (--with-zookeeper, scripts/build-zookeeper-client) and defines
 * HAVE_ZOOKEEPER_INIT_SSL and HAVE_ZOOKEEPER_INIT_SASL.  Without them the
 * options are refused with ZKRC_ENOTSUP: never a silent fall back to
 * plaintext.
 */
#include "config.h"

/* zookeeper.h declares the TLS and SASL entry points only under these. */
#ifdef HAVE_ZOOKEEPER_INIT_SSL
#define HAVE_OPENSSL_H 1
#endif
#ifdef HAVE_ZOOKEEPER_INIT_SASL
#define HAVE_CYRUS_SASL_H 1
#endif

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log_internal.h"
#include "session/session_private.h"
#include "zkrecipes.h"

struct zkrc__secure {
  char *cert; /* "ca,cert,key[,password[,name]]"; NULL: no TLS */
  char *ca_file, *cert_file, *key_file, *key_password, *server_name;
  char *user, *password_file; /* NULL: no SASL */
  char *mechanism, *service, *host, *realm;
#ifdef HAVE_ZOOKEEPER_INIT_SASL
  sasl_callback_t *callbacks; /* the handles' (freed after them) */
#endif
};

unsigned zkrc_features(void) {
  unsigned f = 0;
#ifdef HAVE_ZOOKEEPER_INIT_SSL
  f |= ZKRC_FEATURE_TLS;
#endif
#ifdef HAVE_ZOOKEEPER_INIT_SASL
  f |= ZKRC_FEATURE_SASL;
#endif
#ifdef HAVE_ZOOKEEPER_SSL_SERVER_NAME
  f |= ZKRC_FEATURE_TLS_SERVER_NAME;
#endif
  return f;
}

/* ---------------------------------------------------------- checking */

static gboolean wants_tls(const zkrc_session_options *o) {
  return o->tls_ca_file || o->tls_cert_file || o->tls_key_file ||
         o->tls_key_password || o->tls_server_name;
}

static gboolean wants_sasl(const zkrc_session_options *o) {
  return o->sasl_user || o->sasl_password_file || o->sasl_mechanism ||
         o->sasl_service || o->sasl_host || o->sasl_realm;
}

/* A file option: set, readable, and without a comma. */
static gboolean file_usable(const char *what, const char *path) {
  if (path == NULL || *path == '\0') {
    zkrc__log(ZKRC_LOG_ERROR, "session options: %s is needed", what);
    return FALSE;
  }
  if (strchr(path, ',')) {
    zkrc__log(ZKRC_LOG_ERROR,
              "session options: %s \"%s\" has a comma, which the ZooKeeper "
              "client cannot take",
              what, path);
    return FALSE;
  }
  if (access(path, R_OK) != 0) {
    zkrc__log(ZKRC_LOG_ERROR, "session options: %s \"%s\": %s", what, path,
              g_strerror(errno));
    return FALSE;
  }
  return TRUE;
}

static int check_server_name(const char *name) {
  if (!(zkrc_features() & ZKRC_FEATURE_TLS_SERVER_NAME)) {
    zkrc__log(ZKRC_LOG_ERROR, "session options: tls_server_name asked for, "
                              "and the ZooKeeper client cannot check it "
                              "(scripts/build-zookeeper-client builds one "
                              "that can)");
    return ZKRC_ENOTSUP;
  }
  if (*name == '\0' || strchr(name, ',')) {
    zkrc__log(ZKRC_LOG_ERROR,
              "session options: tls_server_name \"%s\" is "
              "empty or has a comma",
              name);
    return ZKRC_EINVAL;
  }
  return ZKRC_OK;
}

static int check_tls(const zkrc_session_options *o) {
  if (!(zkrc_features() & ZKRC_FEATURE_TLS)) {
    zkrc__log(ZKRC_LOG_ERROR, "session options: TLS asked for, and the "
                              "ZooKeeper client was built without it");
    return ZKRC_ENOTSUP;
  }
  if (!file_usable("tls_ca_file", o->tls_ca_file) ||
      !file_usable("tls_cert_file", o->tls_cert_file) ||
      !file_usable("tls_key_file", o->tls_key_file))
    return ZKRC_EINVAL;
  if (o->tls_key_password && strchr(o->tls_key_password, ',')) {
    zkrc__log(ZKRC_LOG_ERROR, "session options: tls_key_password has a "
                              "comma, which the ZooKeeper client cannot take");
    return ZKRC_EINVAL;
  }
  return o->tls_server_name ? check_server_name(o->tls_server_name) : ZKRC_OK;
}

static gboolean is_digest(const zkrc_session_options *o) {
  return o->sasl_mechanism == NULL ||
         g_ascii_strcasecmp(o->sasl_mechanism, "DIGEST-MD5") == 0;
}

static int check_sasl(const zkrc_session_options *o) {
  if (!(zkrc_features() & ZKRC_FEATURE_SASL)) {
    zkrc__log(ZKRC_LOG_ERROR, "session options: SASL asked for, and the "
                              "ZooKeeper client was built without it");
    return ZKRC_ENOTSUP;
  }
  if (o->sasl_user == NULL || *o->sasl_user == '\0') {
    zkrc__log(ZKRC_LOG_ERROR, "session options: SASL needs sasl_user");
    return ZKRC_EINVAL;
  }
  if ((is_digest(o) || o->sasl_password_file) &&
      !file_usable("sasl_password_file", o->sasl_password_file))
    return ZKRC_EINVAL;
  return ZKRC_OK;
}

int zkrc__secure_check(const zkrc_session_options *o) {
  gboolean tls = wants_tls(o), sasl = wants_sasl(o);
  if (tls && sasl) {
    zkrc__log(ZKRC_LOG_ERROR, "session options: TLS and SASL together: the "
                              "ZooKeeper C client 3.8 has no such handle");
    return ZKRC_ENOTSUP;
  }
  if (tls)
    return check_tls(o);
  if (sasl)
    return check_sasl(o);
  return ZKRC_OK;
}

/* ------------------------------------------------------------ copying */

zkrc__secure *zkrc__secure_new(zkrc_session_options *o) {
  if (!wants_tls(o) && !wants_sasl(o))
    return NULL;
  zkrc__secure *sec = g_new0(zkrc__secure, 1);
  if (wants_tls(o)) {
    sec->ca_file = g_strdup(o->tls_ca_file);
    sec->cert_file = g_strdup(o->tls_cert_file);
    sec->key_file = g_strdup(o->tls_key_file);
    sec->key_password = g_strdup(o->tls_key_password);
    sec->server_name = g_strdup(o->tls_server_name);
    /* The client skips empty fields: a name needs a password field before
     * it, any placeholder for a key that is not encrypted (OpenSSL asks
     * for the passphrase only to decrypt one). */
    const char *password =
        sec->key_password || !sec->server_name ? sec->key_password : "-";
    sec->cert =
        g_strjoin(",", sec->ca_file, sec->cert_file, sec->key_file, password,
                  sec->server_name, NULL); /* NULL ends it early */
  } else {
    sec->user = g_strdup(o->sasl_user);
    sec->password_file = g_strdup(o->sasl_password_file);
    sec->mechanism =
        g_strdup(o->sasl_mechanism ? o->sasl_mechanism : "DIGEST-MD5");
    sec->service = g_strdup(o->sasl_service ? o->sasl_service : "zookeeper");
    sec->host = g_strdup(o->sasl_host ? o->sasl_host : "zk-sasl-md5");
    sec->realm = g_strdup(o->sasl_realm);
  }
  /* The caller's strings may go once the session is made; ours stay, and
   * a sibling session copies the options again from these. */
  o->tls_ca_file = sec->ca_file;
  o->tls_cert_file = sec->cert_file;
  o->tls_key_file = sec->key_file;
  o->tls_key_password = sec->key_password;
  o->tls_server_name = sec->server_name;
  o->sasl_user = sec->user;
  o->sasl_password_file = sec->password_file;
  o->sasl_mechanism = sec->mechanism;
  o->sasl_service = sec->service;
  o->sasl_host = sec->host;
  o->sasl_realm = sec->realm;
  return sec;
}

void zkrc__secure_free(zkrc__secure *sec) {
  if (sec == NULL)
    return;
  if (sec->key_password) { /* no passphrase left in freed memory */
    memset(sec->cert, 0, strlen(sec->cert));
    memset(sec->key_password, 0, strlen(sec->key_password));
  }
  g_free(sec->cert);
  g_free(sec->ca_file);
  g_free(sec->cert_file);
  g_free(sec->key_file);
  g_free(sec->key_password);
  g_free(sec->server_name);
  g_free(sec->user);
  g_free(sec->password_file);
  g_free(sec->mechanism);
  g_free(sec->service);
  g_free(sec->host);
  g_free(sec->realm);
#ifdef HAVE_ZOOKEEPER_INIT_SASL
  free(sec->callbacks);
#endif
  g_free(sec);
}

/* ------------------------------------------------------------ opening */

#ifdef HAVE_ZOOKEEPER_INIT_SASL
static gpointer sasl_init_once(gpointer unused) {
  (void)unused;
  return GINT_TO_POINTER(sasl_client_init(NULL));
}

static zhandle_t *open_sasl(zkrc__secure *sec, const char *hosts,
                            watcher_fn watcher, int timeout, void *ctx,
                            log_callback_fn log) {
  static GOnce once = G_ONCE_INIT;
  if (GPOINTER_TO_INT(g_once(&once, sasl_init_once, NULL)) != SASL_OK) {
    zkrc__log(ZKRC_LOG_ERROR, "SASL: the Cyrus SASL library did not start");
    errno = EINVAL;
    return NULL;
  }
  if (sec->callbacks == NULL)
    sec->callbacks = zoo_sasl_make_basic_callbacks(sec->user, sec->realm,
                                                   sec->password_file);
  if (sec->callbacks == NULL) {
    errno = ENOMEM;
    return NULL;
  }
  zoo_sasl_params_t params = {.service = sec->service,
                              .host = sec->host,
                              .mechlist = sec->mechanism,
                              .callbacks = sec->callbacks};
  return zookeeper_init_sasl(hosts, watcher, timeout, NULL, ctx, 0, log,
                             &params);
}
#endif

zhandle_t *zkrc__secure_open(zkrc__secure *sec, const char *hosts,
                             watcher_fn watcher, int timeout, void *ctx,
                             log_callback_fn log) {
#ifdef HAVE_ZOOKEEPER_INIT_SSL
  if (sec->cert) {
    /* It takes no log callback: its first lines go to the client's
     * default stream. */
    zhandle_t *zh =
        zookeeper_init_ssl(hosts, sec->cert, watcher, timeout, NULL, ctx, 0);
    if (zh)
      zoo_set_log_callback(zh, log);
    return zh;
  }
#endif
#ifdef HAVE_ZOOKEEPER_INIT_SASL
  if (sec->user)
    return open_sasl(sec, hosts, watcher, timeout, ctx, log);
#endif
  (void)hosts, (void)watcher, (void)timeout, (void)ctx, (void)log;
  errno = EINVAL; /* zkrc__secure_check refused these options */
  return NULL;
}
