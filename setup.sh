#!/bin/sh
# Set up and build zkrecipes on Debian 12 (or a close relative):
#   1. install the Debian packages that are missing (and only those),
#   2. generate the build system if needed, configure, and build.
# Then `make demo` runs the demo and `make check` the test suite, each on a
# local ZooKeeper ensemble it starts by itself.
#
# Environment: CONFIGURE_FLAGS (default --enable-werror) for ./configure.
set -eu
cd "$(dirname "$0")"

# Build tools and libraries (python3 makes the man3 pages); the ZooKeeper
# server, Java and the peers used by the interoperability tests and the
# benchmark (Curator and kazoo); groff and bash-completion for the tests of
# the pages and of the tools' completion.
packages="build-essential autoconf automake libtool pkg-config python3
  libzookeeper-mt-dev libglib2.0-dev libjson-glib-dev libcunit1-dev groff-base bash-completion
  zookeeper default-jdk-headless libcurator-recipes-java libcurator-discovery-java
  python3-kazoo
  procps valgrind clang libclang-rt-14-dev clang-format cppcheck"

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
if [ ! -f Makefile ] || [ configure -nt config.status ]; then
  ./configure ${CONFIGURE_FLAGS:---enable-werror}
fi
make -j"$(nproc)"
