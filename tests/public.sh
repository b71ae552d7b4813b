# Shell functions of the tests that check the public lists against the
# build (test_public_lists, test_completion, test_man1): what the build's
# Makefiles say, so that no test keeps a list of its own.  Sourced, with
# TOP_BUILDDIR and TOP_SRCDIR set.

# make_var DIR VARIABLE: the variable's value in the build's DIR/Makefile
# (marked, so that what make may print first, remaking the Makefile, is
# left out).
make_var() {
  # shellcheck disable=SC2016 # $(VAR) is for make, not the shell
  printf 'zkt-print-var:\n\t@echo "zkt-var=$(%s)"\n' "$2" |
    make -s --no-print-directory -C "$TOP_BUILDDIR/$1" -f Makefile -f - \
      zkt-print-var | sed -n 's/^zkt-var=//p'
}

# built_programs: every program the build installs in bindir, one a line,
# as DIR/NAME (tools/zkr): the bin_PROGRAMS of each directory of the top
# Makefile's SUBDIRS, and the other names it installs them under
# (TOOL_ALIASES: tools/zkr-lock, a link to zkr, is in the build tree a
# script that runs zkr by that name).
built_programs() {
  for dir in $(make_var . SUBDIRS); do
    for p in $(make_var "$dir" bin_PROGRAMS) $(make_var "$dir" TOOL_ALIASES); do
      echo "$dir/$p"
    done
  done
}

# public_headers GROUP...: include/headers.am's headers of those groups
# (index, core, glib, testing; every one without GROUP), as paths under
# the source tree (include/zkrecipes/lock.h), one a line, in its order.
public_headers() {
  awk -v groups=" $* " '
    /^zkrc_[a-z]+_headers? *=/ {
      var = $1; sub(/^zkrc_/, "", var); sub(/_headers?$/, "", var)
    }
    /^[^\t#]/ && !/^zkrc_/ { var = "" }
    var != "" && (groups == "  " || index(groups, " " var " ")) {
      for (i = 1; i <= NF; i++)
        if ($i ~ /^\$\(top_srcdir\)\/.*\.h$/) {
          sub(/^\$\(top_srcdir\)\//, "", $i); print $i
        }
    }' "$TOP_SRCDIR/include/headers.am"
}
