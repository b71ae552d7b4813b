/*
 * zkrecipes/path.h - the one place where ZooKeeper paths are checked.
 *
 * Every recipe validates the paths it is given with these functions before
 * anything is sent to a server, so a bad path fails fast with ZKRC_EINVAL and
 * changes nothing.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef ZKRECIPES_PATH_H
#define ZKRECIPES_PATH_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Longest path, in bytes, a recipe accepts for its own directory (the lock
 * or election path).  Recipes append a contender name of about 60 bytes, and
 * ZooKeeper requests must stay small, so this is deliberately modest.
 */
#define ZKRC_PATH_MAX 1024

/**
 * Check that @p path is an absolute ZooKeeper path a recipe may use as its
 * directory: it starts with '/', is not "/" itself, has no trailing slash, no
 * empty, "." or ".." component, is valid UTF-8 without a character the
 * servers refuse (U+0000..U+001F, U+007F..U+009F, U+D800..U+F8FF, U+FFF0
 * and above: so no character outside the basic plane either), does not
 * lie under the reserved "/zookeeper" tree, and is at most ZKRC_PATH_MAX
 * bytes long.
 *
 * @param path  NUL-terminated path; NULL is refused.
 * @param why   if not NULL, receives a static sentence naming the first
 *              problem found (or NULL when the path is valid).
 * @return ZKRC_OK, or ZKRC_EINVAL.
 * Threading: any thread.  Nothing is sent to a server.
 */
int zkrc_path_validate(const char *path, const char **why);

/**
 * Like zkrc_path_validate() for a path given with its length, so that an
 * embedded NUL byte (which a C string cannot show) is detected and refused.
 *
 * @param path  @p len bytes, not necessarily NUL-terminated.
 */
int zkrc_path_validate_n(const char *path, size_t len, const char **why);

#ifdef __cplusplus
}
#endif
#endif /* ZKRECIPES_PATH_H */
