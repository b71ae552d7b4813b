# ZKR_CHECK_ZOOKEEPER
# -------------------
# Find the multi-threaded ZooKeeper C client (libzookeeper_mt).  It ships no
# pkg-config file, so look for the header and the library ourselves, honouring
# --with-zookeeper=PREFIX.  Sets and substitutes ZOOKEEPER_CPPFLAGS,
# ZOOKEEPER_LDFLAGS and ZOOKEEPER_LIBS; fails configure when either is missing.
#
# A client under PREFIX (scripts/build-zookeeper-client builds one with TLS
# and SASL) has the soname of the system's (libzookeeper_mt.so.2), so
# ZOOKEEPER_LDFLAGS records PREFIX/lib as run path too: every program and
# library linked with it (the build tree's and the installed ones, and
# those linked with zkrecipes.pc's flags) loads that client, not
# /usr/lib's.  Each object needs its own: the loader looks up a library's
# dependencies in that library's DT_RUNPATH, not in the program's.
#
# Then what the client can do: defines HAVE_ZOOKEEPER_INIT_SSL and
# HAVE_ZOOKEEPER_INIT_SASL when it exports those and its header declares
# them (under HAVE_OPENSSL_H and HAVE_CYRUS_SASL_H, which a file calling them
# defines before including <zookeeper/zookeeper.h>); substitutes
# ZOOKEEPER_SASL_LIBS (-lsasl2: the caller of zookeeper_init_sasl must call
# sasl_client_init itself).  Sets zkr_zk_summary for configure's last line.
AC_DEFUN([ZKR_CHECK_ZOOKEEPER], [
  AC_ARG_WITH([zookeeper],
    [AS_HELP_STRING([--with-zookeeper=PREFIX],
      [look for the ZooKeeper C client (libzookeeper_mt) under PREFIX])],
    [zkr_zk_prefix="$withval"], [zkr_zk_prefix=""])

  ZOOKEEPER_CPPFLAGS=""
  ZOOKEEPER_LDFLAGS=""
  AS_IF([test "x$zkr_zk_prefix" = xno],
    [AC_MSG_ERROR([zkrecipes cannot be built without the ZooKeeper C client])])
  AS_IF([test -n "$zkr_zk_prefix" && test "x$zkr_zk_prefix" != xyes], [
    ZOOKEEPER_CPPFLAGS="-I$zkr_zk_prefix/include"
    for zkr_zk_libdir in "$zkr_zk_prefix/lib" "$zkr_zk_prefix/lib64"; do
      AS_IF([test -d "$zkr_zk_libdir"],
        [ZOOKEEPER_LDFLAGS="$ZOOKEEPER_LDFLAGS -L$zkr_zk_libdir -Wl,-rpath,$zkr_zk_libdir"])
    done
  ])

  zkr_zk_save_CPPFLAGS="$CPPFLAGS"
  zkr_zk_save_LDFLAGS="$LDFLAGS"
  zkr_zk_save_LIBS="$LIBS"
  CPPFLAGS="$CPPFLAGS $ZOOKEEPER_CPPFLAGS"
  LDFLAGS="$LDFLAGS $ZOOKEEPER_LDFLAGS"

  zkr_zk_missing="libzookeeper_mt was not found${zkr_zk_prefix:+ under $zkr_zk_prefix}.
  On Debian or Ubuntu install it with:  apt-get install libzookeeper-mt-dev
  or point configure at another installation with --with-zookeeper=PREFIX"

  AC_CHECK_HEADER([zookeeper/zookeeper.h], [],
    [AC_MSG_ERROR([the header zookeeper/zookeeper.h: $zkr_zk_missing])])
  AC_CHECK_LIB([zookeeper_mt], [zookeeper_init2], [],
    [AC_MSG_ERROR([$zkr_zk_missing
  (version 3.6 or later is needed: zookeeper_init2 must exist)])])

  AC_MSG_CHECKING([whether the ZooKeeper C client is 3.6 or later])
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <zookeeper/zookeeper.h>]],
    [[int f = ZOO_CONTAINER; (void)f; zoo_op_t op; zoo_check_op_init(&op, "/", -1);]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no])
     AC_MSG_ERROR([the ZooKeeper C client is too old: container nodes are needed (3.6 or later, Debian libzookeeper-mt-dev)])])

  ZOOKEEPER_LIBS="-lzookeeper_mt"
  LIBS="$ZOOKEEPER_LIBS $zkr_zk_save_LIBS"
  _ZKR_ZK_FEATURE([zookeeper_init_ssl], [HAVE_OPENSSL_H], [zkr_zk_tls],
    [[zhandle_t *(*init)(const char *, const char *, watcher_fn, int,
        const clientid_t *, void *, int) = zookeeper_init_ssl;
      zhandle_t *zh = init("127.0.0.1:2181", "ca.pem,client.pem,client.key,",
        0, 10000, 0, 0, 0); (void)zh;]],
    [libssl-dev (<openssl/ossl_typ.h>)])
  _ZKR_ZK_FEATURE([zookeeper_init_sasl], [HAVE_CYRUS_SASL_H], [zkr_zk_sasl],
    [[zhandle_t *(*init)(const char *, watcher_fn, int, const clientid_t *,
        void *, int, log_callback_fn, zoo_sasl_params_t *) = zookeeper_init_sasl;
      zoo_sasl_params_t p = { "zookeeper", "zk-sasl-md5", "DIGEST-MD5", 0 };
      zhandle_t *zh = init("127.0.0.1:2181", 0, 10000, 0, 0, 0, 0, &p); (void)zh;]],
    [libsasl2-dev (<sasl/sasl.h>)])
  ZOOKEEPER_SASL_LIBS=""
  AS_IF([test "x$zkr_zk_sasl" = xyes], [
    AC_CHECK_LIB([sasl2], [sasl_client_init], [ZOOKEEPER_SASL_LIBS="-lsasl2"],
      [AC_MSG_WARN([libzookeeper_mt has SASL but -lsasl2 does not link: apt-get install libsasl2-dev])
       zkr_zk_sasl=no])
  ])
  AS_IF([test "x$zkr_zk_tls" = xyes], [AC_DEFINE([HAVE_ZOOKEEPER_INIT_SSL], [1],
    [Define to 1 if the ZooKeeper client has TLS (zookeeper_init_ssl)])])
  dnl scripts/build-zookeeper-client's client also checks the servers' name
  dnl (a fifth field of the cert string): its header says so.
  zkr_zk_tls_name=no
  AS_IF([test "x$zkr_zk_tls" = xyes], [
    AC_CHECK_DECL([ZOO_SSL_SERVER_NAME], [zkr_zk_tls_name=yes], [],
      [[#define HAVE_OPENSSL_H 1
#include <zookeeper/zookeeper.h>]])])
  AS_IF([test "x$zkr_zk_tls_name" = xyes], [AC_DEFINE([HAVE_ZOOKEEPER_SSL_SERVER_NAME], [1],
    [Define to 1 if zookeeper_init_ssl checks a server name (ZOO_SSL_SERVER_NAME)])])
  AS_IF([test "x$zkr_zk_sasl" = xyes], [AC_DEFINE([HAVE_ZOOKEEPER_INIT_SASL], [1],
    [Define to 1 if the ZooKeeper client has SASL (zookeeper_init_sasl)])])

  dnl Where the client is, for the summary: the prefix asked for, else the
  dnl library the compiler's own search finds (Debian's).
  AS_IF([test -n "$ZOOKEEPER_LDFLAGS"], [zkr_zk_where="$zkr_zk_prefix"],
    [zkr_zk_where=`$CC $CFLAGS -print-file-name=libzookeeper_mt.so 2>/dev/null`
     AS_CASE([$zkr_zk_where],
       [/*], [zkr_zk_where=`dirname "$zkr_zk_where"`
              zkr_zk_where=`cd "$zkr_zk_where" && pwd -P`],
       [zkr_zk_where="the compiler's default search path"])])
  zkr_zk_summary="ZooKeeper client: $zkr_zk_where (TLS: $zkr_zk_tls, server name check: $zkr_zk_tls_name, SASL: $zkr_zk_sasl)"

  CPPFLAGS="$zkr_zk_save_CPPFLAGS"
  LDFLAGS="$zkr_zk_save_LDFLAGS"
  LIBS="$zkr_zk_save_LIBS"
  AC_SUBST([ZOOKEEPER_CPPFLAGS])
  AC_SUBST([ZOOKEEPER_LDFLAGS])
  AC_SUBST([ZOOKEEPER_LIBS])
  AC_SUBST([ZOOKEEPER_SASL_LIBS])
])

# _ZKR_ZK_FEATURE(FUNCTION, HEADER-MACRO, RESULT-VAR, CALL, PACKAGE)
# -----------------------------------------------------------------
# RESULT-VAR=yes when libzookeeper_mt (in LIBS) exports FUNCTION and CALL
# (which names it: an undeclared name is an error, an undeclared call only a
# warning) compiles and links with HEADER-MACRO defined before
# <zookeeper/zookeeper.h>, else no.  The library without its header's
# dependencies (PACKAGE) is no use: a warning says so.
AC_DEFUN([_ZKR_ZK_FEATURE], [
  AC_CHECK_FUNC([$1], [$3=yes], [$3=no])
  AS_IF([test "x$$3" = xyes], [
    AC_CACHE_CHECK([whether <zookeeper/zookeeper.h> declares $1 under $2],
      [zkr_cv_zk_decl_$1],
      [AC_LINK_IFELSE([AC_LANG_PROGRAM([[#define $2 1
#include <zookeeper/zookeeper.h>]], [$4])],
        [zkr_cv_zk_decl_$1=yes], [zkr_cv_zk_decl_$1=no])])
    AS_IF([test "x$zkr_cv_zk_decl_$1" = xno], [
      AC_MSG_WARN([libzookeeper_mt has $1 but <zookeeper/zookeeper.h> does not compile with $2: apt-get install $5])
      $3=no])
  ])
])
