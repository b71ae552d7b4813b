/*
 * Fuzz target: contender names (src/core/names.c): zkrc__contender_seq,
 * zkrc__contenders_sorted, zkrc__contenders_find.
 *
 * The input is a directory listing: names separated by '\n' (at most 64;
 * a NUL byte also separates).  For the lock's markers and the election's,
 * the target checks:
 *  1. zkrc__contender_seq() accepts a name exactly when it ends with one of
 *     the markers followed by a sequence the server can write: "%010d" of a
 *     signed 32-bit number, and then yields that number (so not
 *     "-0000000001", which "%010d" never writes).
 *  2. zkrc__contenders_sorted() keeps exactly the names that parse (with
 *     their multiplicity), each with its parsed sequence, in an order that
 *     is total and consistent with the sequences: (seq, name) ascending.
 *  3. zkrc__contenders_find() returns, for every contender, the index of its
 *     first occurrence in the sorted list, and -1 for a name that is not a
 *     contender.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "core/names.h"

#include "fuzz.h"

const char *const fuzz_target_name = "names";

#define MAX_NAMES 64

/* Is @p s (@p n bytes) what "%010d" writes for some int32?  Sets *v. */
static int canonical_sequence(const char *s, size_t n, int32_t *v) {
  if (n != 10 && n != 11)
    return 0;
  for (size_t i = s[0] == '-' ? 1 : 0; i < n; i++)
    if (s[i] < '0' || s[i] > '9')
      return 0;
  char buf[16], out[16];
  memcpy(buf, s, n);
  buf[n] = '\0';
  long long x = strtoll(buf, NULL, 10);
  if (x < INT32_MIN || x > INT32_MAX)
    return 0;
  snprintf(out, sizeof out, "%010d", (int)x);
  if (strcmp(out, buf) != 0)
    return 0;
  *v = (int32_t)x;
  return 1;
}

/* Property 1's oracle: does @p name end with a marker and a sequence? */
static int oracle_seq(const char *name, const zkrc__marker *markers,
                      int32_t *seq) {
  size_t len = strlen(name);
  for (int m = 0; markers[m].text; m++) {
    size_t ml = strlen(markers[m].text);
    for (size_t sl = 10; sl <= 11; sl++) {
      if (len < ml + sl)
        continue;
      const char *s = name + len - sl;
      if (memcmp(s - ml, markers[m].text, ml) != 0)
        continue;
      if (canonical_sequence(s, sl, seq))
        return 1;
    }
  }
  return 0;
}

static int compare_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void check_listing(char **names, int count,
                          const zkrc__marker *markers) {
  int parsed_count = 0;
  int32_t seqs[MAX_NAMES];
  int parses[MAX_NAMES];
  for (int i = 0; i < count; i++) {
    int32_t lib = 0, want = 0;
    parses[i] = zkrc__contender_seq(names[i], markers, &lib);
    int expected = oracle_seq(names[i], markers, &want);
    FUZZ_CHECK(parses[i] == expected, "\"%s\": library %s, oracle %s", names[i],
               parses[i] ? "parses" : "ignores",
               expected ? "parses" : "ignores");
    FUZZ_CHECK(!parses[i] || lib == want, "\"%s\": library seq %d, oracle %d",
               names[i], (int)lib, (int)want);
    seqs[i] = lib;
    parsed_count += parses[i];
  }

  GArray *sorted = zkrc__contenders_sorted(names, count, markers);
  FUZZ_CHECK((int)sorted->len == parsed_count, "%u sorted, %d parse",
             sorted->len, parsed_count);
  for (guint i = 0; i < sorted->len; i++) {
    zkrc__contender_entry *e = &g_array_index(sorted, zkrc__contender_entry, i);
    int32_t again;
    FUZZ_CHECK(zkrc__contender_seq(e->name, markers, &again) && again == e->seq,
               "sorted entry \"%s\" (seq %d) does not parse back", e->name,
               (int)e->seq);
    if (i > 0) {
      zkrc__contender_entry *p =
          &g_array_index(sorted, zkrc__contender_entry, i - 1);
      FUZZ_CHECK(p->seq < e->seq ||
                     (p->seq == e->seq && strcmp(p->name, e->name) <= 0),
                 "out of order: (%d, \"%s\") before (%d, \"%s\")", (int)p->seq,
                 p->name, (int)e->seq, e->name);
    }
  }
  /* The same multiset of names. */
  char **mine = g_new0(char *, parsed_count + 1),
       **theirs = g_new0(char *, parsed_count + 1);
  for (int i = 0, j = 0; i < count; i++)
    if (parses[i])
      mine[j++] = names[i];
  for (guint i = 0; i < sorted->len; i++)
    theirs[i] = g_array_index(sorted, zkrc__contender_entry, i).name;
  qsort(mine, (size_t)parsed_count, sizeof *mine, compare_names);
  qsort(theirs, sorted->len, sizeof *theirs, compare_names);
  for (int i = 0; i < parsed_count; i++)
    FUZZ_CHECK(strcmp(mine[i], theirs[i]) == 0, "\"%s\" vs \"%s\"", mine[i],
               theirs[i]);
  g_free(mine);
  g_free(theirs);

  for (int i = 0; i < count; i++) {
    int idx = zkrc__contenders_find(sorted, names[i]);
    if (!parses[i]) {
      FUZZ_CHECK(idx == -1, "\"%s\" is no contender but found at %d", names[i],
                 idx);
      continue;
    }
    FUZZ_CHECK(idx >= 0 && (guint)idx < sorted->len, "\"%s\" not found",
               names[i]);
    zkrc__contender_entry *e =
        &g_array_index(sorted, zkrc__contender_entry, idx);
    FUZZ_CHECK(strcmp(e->name, names[i]) == 0 && e->seq == seqs[i],
               "find(\"%s\") gave \"%s\"", names[i], e->name);
    for (int j = 0; j < idx; j++)
      FUZZ_CHECK(strcmp(g_array_index(sorted, zkrc__contender_entry, j).name,
                        names[i]) != 0,
                 "find(\"%s\") is not the first occurrence", names[i]);
  }
  FUZZ_CHECK(zkrc__contenders_find(sorted, "") == -1, "empty name found");
  zkrc__contenders_free(sorted);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = g_malloc(size + 1);
  memcpy(text, data, size);
  text[size] = '\0';
  char *names[MAX_NAMES];
  int count = 0;
  /* Split on '\n' and NUL (a NUL ends the name it is in). */
  for (size_t start = 0; start <= size && count < MAX_NAMES;) {
    size_t end = start;
    while (end < size && text[end] != '\n' && text[end] != '\0')
      end++;
    text[end] = '\0';
    names[count++] = text + start;
    start = end + 1;
  }
  check_listing(names, count, zkrc__lock_markers);
  check_listing(names, count, zkrc__latch_markers);
  g_free(text);
  return 0;
}
