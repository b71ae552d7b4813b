#!/bin/sh
# Set up and build zkrecipes on Debian 12 (or a close relative):
#   1. install the Debian packages that are missing (and only those) for
#      what is asked,
#   2. generate the build system if needed, configure, and build.
#
# Usage: ./setup.sh [build | demo | check | all]
#   build  (the default) what building the libraries and zkr needs
#   demo   and the ZooKeeper server and Java: `make demo' runs on a local
#          ensemble (and openssl, which makes a TLS ensemble's credentials)
#   check  and what `make check' needs besides: CUnit, the peers of the
#          interoperability tests (Debian's Curator and kazoo), groff and
#          bash-completion (the pages' and completion's tests), clang with
#          its runtime (libFuzzer), systemd-analyze (the example unit),
#          pure-sasl (kazoo's SASL, in test_harness_security),
#          prometheus-client (Prometheus' own parser, in test_metrics)
#   all    and the developers' tools: valgrind (check-valgrind), clang-format
#          and cppcheck (make lint)
#
# Environment: CONFIGURE_FLAGS (default --enable-werror) for ./configure.
set -eu
cd "$(dirname "$0")"

what=${1:-build}
build="build-essential autoconf automake libtool pkg-config python3
  libzookeeper-mt-dev libglib2.0-dev libjson-glib-dev libssl-dev"
demo="zookeeper default-jdk-headless procps openssl"
check="libcunit1-dev libcurator-recipes-java libcurator-discovery-java
  python3-kazoo python3-pure-sasl python3-prometheus-client groff-base bash-completion clang libclang-rt-14-dev systemd"
all="valgrind clang-format cppcheck"
case $what in
  build) packages=$build ;;
  demo) packages="$build $demo" ;;
  check) packages="$build $demo $check" ;;
  all) packages="$build $demo $check $all" ;;
  *)
    echo "usage: $0 [build | demo | check | all]" >&2
    exit 2
    ;;
esac

missing=""
for p in $packages; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done
if [ -n "$missing" ]; then
  echo "setup: installing:$missing"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  # shellcheck disable=SC2086
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
fi

if [ ! -x configure ] || [ configure.ac -nt configure ]; then
  autoreconf -fi
fi
# Configure again after installing: it looks for what is there (CUnit,
# the peers, clang).
# Keep the options it was configured with (a --prefix, ...) unless
# CONFIGURE_FLAGS says others.
if [ ! -f config.status ] || [ -n "${CONFIGURE_FLAGS+set}" ]; then
  ./configure ${CONFIGURE_FLAGS:---enable-werror}
elif [ -n "$missing" ] || [ ! -f Makefile ] || [ configure -nt config.status ]; then
  ./config.status --recheck && ./config.status
fi
make -j"$(nproc)"
