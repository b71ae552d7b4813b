/*
 * Path validation: the one place that decides whether a path may be sent to
 * ZooKeeper as a recipe's directory.
 */
#include "config.h"

#include <string.h>

#include <glib.h>

#include "core/util.h"
#include "zkrecipes.h"

static int refuse(const char **why, const char *reason) {
  if (why)
    *why = reason;
  return ZKRC_EINVAL;
}

/* Check one component (the bytes between two slashes). */
static const char *component_problem(const char *c, size_t len) {
  if (len == 0)
    return "empty path component (double slash)";
  if ((len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
    return "'.' and '..' components are not allowed";
  for (size_t i = 0; i < len; i++) {
    unsigned char ch = (unsigned char)c[i];
    if (ch == 0)
      return "the path contains a NUL byte";
    if (ch < 0x20 || ch == 0x7f)
      return "the path contains a control character";
  }
  return NULL;
}

/* Characters ZooKeeper's servers refuse in a path (PathUtils.validatePath,
 * which sees Java's UTF-16): C1 controls, everything from the surrogates to
 * the end of the private use area (so every character above U+FFFF, which
 * Java writes as a surrogate pair), and the last 16 code points of the
 * basic plane.  ASCII controls are checked per component. */
static const char *refused_character(const char *path, size_t len) {
  for (const char *p = path; p < path + len; p = g_utf8_next_char(p)) {
    gunichar ch = g_utf8_get_char(p);
    if (ch >= 0x80 && ch <= 0x9f)
      return "the path contains a C1 control character";
    if (ch >= 0xd800 && ch <= 0xf8ff)
      return "the path contains a private-use or surrogate character";
    if (ch >= 0xfff0)
      return "the path contains a character ZooKeeper refuses "
             "(U+FFF0..U+FFFF, or above U+FFFF)";
  }
  return NULL;
}

int zkrc_path_validate_n(const char *path, size_t len, const char **why) {
  if (why)
    *why = NULL;
  if (path == NULL)
    return refuse(why, "the path is NULL");
  if (len == 0)
    return refuse(why, "the path is empty");
  if (path[0] != '/')
    return refuse(why, "the path is relative: it must start with '/'");
  if (len == 1)
    return refuse(why, "the root \"/\" cannot be a recipe's directory");
  if (len > ZKRC_PATH_MAX)
    return refuse(why, "the path is longer than ZKRC_PATH_MAX bytes");
  if (path[len - 1] == '/')
    return refuse(why, "the path ends with a slash");
  if (memchr(path, '\0', len) != NULL)
    return refuse(why, "the path contains a NUL byte");
  if (!g_utf8_validate(path, (gssize)len, NULL))
    return refuse(why, "the path is not valid UTF-8");
  const char *bad_char = refused_character(path, len);
  if (bad_char)
    return refuse(why, bad_char);

  const char *start = path + 1, *end = path + len;
  int first = 1;
  while (start <= end) {
    const char *slash = memchr(start, '/', (size_t)(end - start));
    const char *stop = slash ? slash : end;
    const char *problem = component_problem(start, (size_t)(stop - start));
    if (problem)
      return refuse(why, problem);
    if (first && stop - start == 9 && memcmp(start, "zookeeper", 9) == 0)
      return refuse(why, "/zookeeper is reserved for the servers");
    first = 0;
    if (!slash)
      break;
    start = slash + 1;
  }
  return ZKRC_OK;
}

int zkrc_path_validate(const char *path, const char **why) {
  if (path == NULL)
    return refuse(why, "the path is NULL");
  /* Measure at most one byte past the limit: an over-long path is refused
   * without scanning all of it. */
  size_t len = strnlen(path, ZKRC_PATH_MAX + 1);
  return zkrc_path_validate_n(path, len, why);
}
