# ZKR_CHECK_ZOOKEEPER
# -------------------
# Find the multi-threaded ZooKeeper C client (libzookeeper_mt).  It ships no
# pkg-config file, so look for the header and the library ourselves, honouring
# --with-zookeeper=PREFIX.  Sets and substitutes ZOOKEEPER_CPPFLAGS,
# ZOOKEEPER_LDFLAGS and ZOOKEEPER_LIBS; fails configure when either is missing.
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
        [ZOOKEEPER_LDFLAGS="$ZOOKEEPER_LDFLAGS -L$zkr_zk_libdir"])
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
  CPPFLAGS="$zkr_zk_save_CPPFLAGS"
  LDFLAGS="$zkr_zk_save_LDFLAGS"
  LIBS="$zkr_zk_save_LIBS"
  AC_SUBST([ZOOKEEPER_CPPFLAGS])
  AC_SUBST([ZOOKEEPER_LDFLAGS])
  AC_SUBST([ZOOKEEPER_LIBS])
])
