/* Contender names: recognising them and ordering them. */
#include "config.h"

#include <string.h>

#include "core/names.h"
#include "zkrecipes/participants.h"

/* One table for the whole lock family, so that a mutex, readers and writers
 * of every dialect on one path exclude each other: a mutex (policy
 * exclusive) waits for whoever is ahead, whatever it claims; a reader waits
 * for a mutex node as for a writer. */
const zkrc__marker zkrc__lock_markers[] = {
    {"lock-", ZKRC__CLAIM_EXCLUSIVE},    /* our mutex, InterProcessMutex */
    {"__lock__", ZKRC__CLAIM_EXCLUSIVE}, /* kazoo Lock and WriteLock */
    {"__WRIT__", ZKRC__CLAIM_EXCLUSIVE}, /* InterProcessReadWriteLock */
    {"__READ__", ZKRC__CLAIM_SHARED},    /* InterProcessReadWriteLock */
    {"__rlock__", ZKRC__CLAIM_SHARED},   /* kazoo ReadLock */
    {NULL, ZKRC__CLAIM_EXCLUSIVE}};
const zkrc__marker zkrc__latch_markers[] = {{"latch-", ZKRC__CLAIM_EXCLUSIVE},
                                            {NULL, ZKRC__CLAIM_EXCLUSIVE}};
const zkrc__marker zkrc__lease_markers[] = {{"lease-", ZKRC__CLAIM_SHARED},
                                            {NULL, ZKRC__CLAIM_EXCLUSIVE}};

/* "%010d" of an int32: ten digits; or, negative, '-' and nine digits (the
 * width of 10 counts the sign), or '-' and ten when nine are not enough
 * (then the first is not a zero). */
gboolean zkrc__parse_sequence(const char *s, int32_t *seq) {
  gboolean negative = s[0] == '-';
  const char *digits = negative ? s + 1 : s;
  size_t n = strlen(digits);
  if (negative ? !(n == 9 || (n == 10 && digits[0] != '0')) : n != 10)
    return FALSE;
  int64_t value = 0;
  for (size_t i = 0; i < n; i++) {
    if (digits[i] < '0' || digits[i] > '9')
      return FALSE;
    value = value * 10 + (digits[i] - '0');
  }
  if (negative)
    value = -value;
  if (value < INT32_MIN || value > INT32_MAX || (negative && value == 0))
    return FALSE;
  *seq = (int32_t)value;
  return TRUE;
}

gboolean zkrc__sequence_right_after(int32_t before, int32_t seq) {
  return before != INT32_MAX && seq == before + 1;
}

/* Does @p marker (@p len bytes) end at @p end, the text after it (to the
 * end of @p name) being a sequence, and occur nowhere after that?  That
 * is: is this the marker's last occurrence in @p name? */
static gboolean marker_ends_at(const char *name, const char *end,
                               const char *marker, size_t len) {
  if ((size_t)(end - name) < len || memcmp(end - len, marker, len) != 0)
    return FALSE;
  return strstr(end - len + 1, marker) == NULL;
}

/* A name is a contender of a marker when the text after the marker's last
 * occurrence is a sequence.  A sequence is 10 or 11 characters ("%010d"),
 * so only the name's last 10 and 11 characters are parsed, once, and each
 * marker is looked for just before them: with thousands of names in a
 * listing, scanning each name for every marker cost more than the rest of
 * the decision. */
const zkrc__marker *zkrc__contender_marker(const char *name,
                                           const zkrc__marker *markers,
                                           int32_t *seq) {
  if (name == NULL)
    return NULL;
  size_t n = strlen(name);
  int32_t seq10 = 0, seq11 = 0;
  gboolean ok10 = n >= 10 && zkrc__parse_sequence(name + n - 10, &seq10);
  gboolean ok11 = n >= 11 && zkrc__parse_sequence(name + n - 11, &seq11);
  if (!ok10 && !ok11)
    return NULL;
  for (const zkrc__marker *m = markers; m->text; m++) {
    size_t len = strlen(m->text);
    if (ok10 && marker_ends_at(name, name + n - 10, m->text, len)) {
      *seq = seq10;
      return m;
    }
    if (ok11 && marker_ends_at(name, name + n - 11, m->text, len)) {
      *seq = seq11;
      return m;
    }
  }
  return NULL;
}

const char *zkrc_contender_marker(const char *name, int32_t *seq) {
  const zkrc__marker *tables[] = {zkrc__lock_markers, zkrc__latch_markers,
                                  zkrc__lease_markers};
  int32_t ignored;
  for (size_t i = 0; i < G_N_ELEMENTS(tables); i++) {
    const zkrc__marker *m =
        zkrc__contender_marker(name, tables[i], seq ? seq : &ignored);
    if (m)
      return m->text;
  }
  return NULL;
}

gboolean zkrc__contender_seq(const char *name, const zkrc__marker *markers,
                             int32_t *seq) {
  return zkrc__contender_marker(name, markers, seq) != NULL;
}

int zkrc__queue_order(int32_t a_seq, const char *a_name, int32_t b_seq,
                      const char *b_name) {
  if (a_seq != b_seq)
    return a_seq < b_seq ? -1 : 1;
  return strcmp(a_name, b_name);
}

static gint compare_entries(gconstpointer a, gconstpointer b) {
  const zkrc__contender_entry *x = a, *y = b;
  return zkrc__queue_order(x->seq, x->name, y->seq, y->name);
}

static void clear_entry(gpointer p) {
  g_free(((zkrc__contender_entry *)p)->name);
}

GArray *zkrc__contenders_sorted(char *const *names, int count,
                                const zkrc__marker *markers) {
  GArray *out = g_array_new(FALSE, FALSE, sizeof(zkrc__contender_entry));
  g_array_set_clear_func(out, clear_entry);
  for (int i = 0; i < count; i++) {
    zkrc__contender_entry e;
    const zkrc__marker *m = zkrc__contender_marker(names[i], markers, &e.seq);
    if (m == NULL)
      continue;
    e.claim = m->claim;
    e.name = g_strdup(names[i]);
    g_array_append_val(out, e);
  }
  g_array_sort(out, compare_entries);
  return out;
}

void zkrc__contenders_free(GArray *contenders) {
  if (contenders)
    g_array_free(contenders, TRUE);
}

int zkrc__contenders_find(const GArray *contenders, const char *name) {
  for (guint i = 0; i < contenders->len; i++) {
    if (strcmp(g_array_index(contenders, zkrc__contender_entry, i).name,
               name) == 0)
      return (int)i;
  }
  return -1;
}

void zkrc__uuid_bytes_random(guint8 uuid[16]) {
  for (int i = 0; i < 16; i += 4) {
    guint32 r = g_random_int();
    memcpy(uuid + i, &r, 4);
  }
  uuid[6] = (guint8)((uuid[6] & 0x0f) | 0x40); /* version 4: random */
  uuid[8] = (guint8)((uuid[8] & 0x3f) | 0x80); /* variant: RFC 4122 */
}

void zkrc__protected_prefix(const guint8 uuid[16],
                            char out[ZKRC__PROTECTED_PREFIX_LEN + 1]) {
  static const char hex[] = "0123456789abcdef";
  char *p = out;
  *p++ = '_';
  *p++ = 'c';
  *p++ = '_';
  for (int i = 0; i < 16; i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10)
      *p++ = '-';
    *p++ = hex[uuid[i] >> 4];
    *p++ = hex[uuid[i] & 0x0f];
  }
  *p++ = '-';
  *p = '\0';
}
