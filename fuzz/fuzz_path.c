/*
 * Fuzz target: path validation (zkrc_path_validate_n, zkrc_path_validate).
 *
 * Properties checked for every input:
 *  1. The verdict agrees with an independent reading of the documented rules
 *     (zkrecipes/path.h): starts with '/', is not "/", no trailing slash, no
 *     empty, "." or ".." component, valid UTF-8 (RFC 3629: no overlong
 *     forms, surrogates or values above U+10FFFF) without U+0000..U+001F,
 *     U+007F..U+009F, U+D800..U+F8FF or U+FFF0 and above, first component
 *     not "zookeeper", at most ZKRC_PATH_MAX bytes.  Accepted means: all of
 *     them hold; refused: one does not.
 *  2. A refusal names its reason (why != NULL); an acceptance clears it.
 *  3. The ZooKeeper C client would send an accepted path (its isValidPath,
 *     restated here: the client's is static).
 *  4. For a NUL-free input, zkrc_path_validate() on the same bytes gives
 *     the same verdict and reason.
 *  5. The ZooKeeper server would accept an accepted path: its
 *     PathUtils.validatePath works on UTF-16 code units, so every character
 *     above U+FFFF (a surrogate pair) is refused too; restated separately
 *     from property 1 as the server's own rule.
 */
#include <stdlib.h>
#include <string.h>

#include <zkrecipes/error.h>
#include <zkrecipes/path.h>

#include "fuzz.h"

const char *const fuzz_target_name = "path";

/* Decode one UTF-8 sequence at @p s (n bytes left) per RFC 3629.  Returns
 * its length and sets *cp, or 0 when it is malformed. */
static size_t utf8_decode(const unsigned char *s, size_t n, unsigned *cp) {
  unsigned c = s[0];
  size_t len;
  unsigned min;
  if (c < 0x80) {
    *cp = c;
    return 1;
  } else if (c >= 0xc2 && c <= 0xdf) {
    len = 2, min = 0x80, c &= 0x1f;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3, min = 0x800, c &= 0x0f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4, min = 0x10000, c &= 0x07;
  } else {
    return 0;
  }
  if (n < len)
    return 0;
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80)
      return 0;
    c = (c << 6) | (s[i] & 0x3f);
  }
  if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
    return 0;
  *cp = c;
  return len;
}

/* Property 1's oracle. */
static int documented_valid(const unsigned char *p, size_t n) {
  if (n < 2 || n > ZKRC_PATH_MAX || p[0] != '/' || p[n - 1] == '/')
    return 0;
  for (size_t i = 0; i < n;) {
    unsigned cp;
    size_t len = utf8_decode(p + i, n - i, &cp);
    if (len == 0 || cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) ||
        (cp >= 0xd800 && cp <= 0xf8ff) || cp >= 0xfff0)
      return 0;
    i += len;
  }
  size_t start = 1;
  for (int first = 1; start <= n; first = 0) {
    size_t end = start;
    while (end < n && p[end] != '/')
      end++;
    size_t len = end - start;
    if (len == 0 || (len == 1 && p[start] == '.') ||
        (len == 2 && p[start] == '.' && p[start + 1] == '.'))
      return 0;
    if (first && len == 9 && memcmp(p + start, "zookeeper", 9) == 0)
      return 0;
    start = end + 1;
  }
  return 1;
}

/* Property 3: the ZooKeeper C client's isValidPath (zookeeper.c), for a
 * node that is not sequential.  Its characters are plain (signed) chars. */
static int client_valid(const char *path, size_t len) {
  if (len == 0 || path[0] != '/')
    return 0;
  if (len == 1)
    return 1;
  if (path[len - 1] == '/')
    return 0;
  char lastc = '/';
  for (size_t i = 1; i < len; lastc = path[i], i++) {
    char c = path[i];
    if (c == 0)
      return 0;
    if (c == '/' && lastc == '/')
      return 0;
    if (c == '.' && lastc == '.') {
      if (path[i - 2] == '/' && (i + 1 == len || path[i + 1] == '/'))
        return 0;
    } else if (c == '.') {
      if (path[i - 1] == '/' && (i + 1 == len || path[i + 1] == '/'))
        return 0;
    } else if (c > 0x00 && c < 0x1f) {
      return 0;
    }
  }
  return 1;
}

/* Property 5: the server's PathUtils.validatePath character rules, on the
 * UTF-16 code units Java sees.  (The structural rules are property 1's.) */
static int server_chars_valid(const unsigned char *p, size_t n) {
  for (size_t i = 0; i < n;) {
    unsigned cp;
    size_t len = utf8_decode(p + i, n - i, &cp);
    if (len == 0)
      return 0;
    if (cp > 0xffff) /* a surrogate pair: D800..DFFF units */
      return 0;
    if ((cp >= 0x7f && cp <= 0x9f) || (cp >= 0xd800 && cp <= 0xf8ff) ||
        cp >= 0xfff0)
      return 0;
    i += len;
  }
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = (const char *)data;
  const char *why = "unset";
  int rc = zkrc_path_validate_n(path, size, &why);
  FUZZ_CHECK(rc == ZKRC_OK || rc == ZKRC_EINVAL, "rc %d", rc);
  int expected = documented_valid(data, size);
  FUZZ_CHECK((rc == ZKRC_OK) == expected,
             "zkrc_path_validate_n says %s (%s), the documented rules say %s",
             rc == ZKRC_OK ? "valid" : "invalid", why ? why : "-",
             expected ? "valid" : "invalid");
  FUZZ_CHECK((rc == ZKRC_OK) == (why == NULL), "why is %s for rc %d",
             why ? why : "NULL", rc);
  FUZZ_CHECK(why == NULL || why[0] != '\0', "empty reason");
  if (rc == ZKRC_OK) {
    FUZZ_CHECK(client_valid(path, size), "the C client would refuse it");
    FUZZ_CHECK(server_chars_valid(data, size),
               "accepted, but the ZooKeeper server refuses its characters");
  }
  if (memchr(data, '\0', size) == NULL) {
    char *copy = malloc(size + 1);
    if (copy == NULL)
      return 0;
    memcpy(copy, data, size);
    copy[size] = '\0';
    const char *why2 = "unset";
    int rc2 = zkrc_path_validate(copy, &why2);
    FUZZ_CHECK(rc2 == rc &&
                   (why2 == why || (why && why2 && !strcmp(why, why2))),
               "zkrc_path_validate %d (%s) vs zkrc_path_validate_n %d (%s)",
               rc2, why2 ? why2 : "-", rc, why ? why : "-");
    free(copy);
  }
  FUZZ_CHECK(zkrc_path_validate_n(NULL, size, NULL) == ZKRC_EINVAL,
             "NULL path");
  return 0;
}
