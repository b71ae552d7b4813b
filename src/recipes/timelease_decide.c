/*
 * kazoo's lease_holder record and the time lease's decision
 * (timelease_decide.h): pure functions, tested without a server.
 */
#include "config.h"

#include <string.h>

#include <json-glib/json-glib.h>

#include "recipes/timelease_decide.h"
#include "zkrecipes/error.h"

/* The end's bounds: 1970-01-01T00:00:00 and 9999-12-31T23:59:59 UTC. */
#define FIRST_MS INT64_C(0)
#define LAST_MS (INT64_C(253402300799) * 1000)

void zkrc__lease_record_clear(zkrc__lease_record *rec) {
  if (rec == NULL)
    return;
  g_free(rec->holder);
  memset(rec, 0, sizeof *rec);
}

/* Python's comparison "version != 1" on what json.loads gave. */
static gboolean is_version_one(JsonNode *v) {
  if (v == NULL || !JSON_NODE_HOLDS_VALUE(v))
    return FALSE;
  switch (json_node_get_value_type(v)) {
  case G_TYPE_INT64:
    return json_node_get_int(v) == ZKRC__TIME_LEASE_VERSION;
  case G_TYPE_DOUBLE:
    return json_node_get_double(v) == (double)ZKRC__TIME_LEASE_VERSION;
  case G_TYPE_BOOLEAN: /* True == 1 in Python */
    return json_node_get_boolean(v) ? ZKRC__TIME_LEASE_VERSION == 1 : FALSE;
  default:
    return FALSE;
  }
}

/* A string member of @p o, or NULL. */
static const char *string_member(JsonObject *o, const char *name) {
  JsonNode *n = json_object_get_member(o, name);
  if (n == NULL || !JSON_NODE_HOLDS_VALUE(n) ||
      json_node_get_value_type(n) != G_TYPE_STRING)
    return NULL;
  return json_node_get_string(n);
}

int zkrc__lease_record_parse(const char *data, size_t len,
                             zkrc__lease_record *rec) {
  memset(rec, 0, sizeof *rec);
  if (data == NULL || len == 0 || len > G_MAXSSIZE ||
      !g_utf8_validate(data, (gssize)len, NULL))
    return ZKRC_EBADNODE;
  JsonParser *parser = json_parser_new();
  int err = ZKRC_EBADNODE;
  if (json_parser_load_from_data(parser, data, (gssize)len, NULL)) {
    JsonNode *root = json_parser_get_root(parser);
    JsonObject *o = root && JSON_NODE_HOLDS_OBJECT(root)
                        ? json_node_get_object(root)
                        : NULL;
    JsonNode *version = o ? json_object_get_member(o, "version") : NULL;
    if (version && !is_version_one(version)) {
      err = ZKRC_OK; /* another format: not ours to read further */
    } else if (version) {
      const char *holder = string_member(o, "holder");
      const char *end = string_member(o, "end");
      if (holder && end && zkrc__lease_parse_time(end, &rec->end_ms)) {
        rec->current = TRUE;
        rec->holder = g_strdup(holder);
        err = ZKRC_OK;
      }
    }
  }
  g_object_unref(parser);
  return err;
}

zkrc_time_lease_outcome zkrc__lease_decide(const zkrc__lease_record *rec,
                                           const char *ident, int64_t now_ms) {
  if (rec == NULL)
    return ZKRC_TIME_LEASE_OBTAINED;
  if (!rec->current)
    return ZKRC_TIME_LEASE_OTHER_VERSION;
  gboolean running = now_ms < rec->end_ms;
  gboolean ours = strcmp(rec->holder, ident) == 0;
  if (running && !ours)
    return ZKRC_TIME_LEASE_HELD;
  return running ? ZKRC_TIME_LEASE_RENEWED : ZKRC_TIME_LEASE_OBTAINED;
}

gboolean zkrc__lease_end(int64_t now_ms, int64_t duration_ms, int64_t *end_ms) {
  if (duration_ms <= 0 || now_ms < FIRST_MS || now_ms > LAST_MS ||
      duration_ms > LAST_MS - now_ms)
    return FALSE;
  int64_t end = now_ms + duration_ms;
  end = (end + 999) / 1000 * 1000;
  if (end > LAST_MS)
    return FALSE;
  *end_ms = end;
  return TRUE;
}

void zkrc__lease_format_time(int64_t end_ms, char buf[20]) {
  GDateTime *t = g_date_time_new_from_unix_utc(end_ms / 1000);
  char *s = t ? g_date_time_format(t, "%Y-%m-%dT%H:%M:%S") : NULL;
  g_strlcpy(buf, s ? s : "", 20);
  g_free(s);
  if (t)
    g_date_time_unref(t);
}

/* @p max_digits (at least one) of a number at *@p p, moved past them. */
static gboolean digits(const char **p, int min_digits, int max_digits,
                       int *out) {
  int n = 0, v = 0;
  while (n < max_digits && g_ascii_isdigit((*p)[n])) {
    v = v * 10 + ((*p)[n] - '0');
    n++;
  }
  if (n < min_digits)
    return FALSE;
  *p += n;
  *out = v;
  return TRUE;
}

/* Python's strptime(text, "%Y-%m-%dT%H:%M:%S"): a year of four digits,
 * the other fields of one or two, nothing before or after. */
gboolean zkrc__lease_parse_time(const char *text, int64_t *ms) {
  const char *p = text;
  int f[6];
  static const char seps[] = "--T::";
  for (int i = 0; i < 6; i++) {
    if (!digits(&p, i == 0 ? 4 : 1, i == 0 ? 4 : 2, &f[i]))
      return FALSE;
    if (i < 5 && *p++ != seps[i])
      return FALSE;
  }
  if (*p != '\0' || f[0] < 1970 || f[1] < 1 || f[1] > 12 || f[2] < 1 ||
      f[3] > 23 || f[4] > 59 || f[5] > 59 ||
      !g_date_valid_dmy((GDateDay)f[2], (GDateMonth)f[1], (GDateYear)f[0]))
    return FALSE;
  GDateTime *t = g_date_time_new_utc(f[0], f[1], f[2], f[3], f[4], f[5]);
  if (t == NULL)
    return FALSE;
  *ms = g_date_time_to_unix(t) * 1000;
  g_date_time_unref(t);
  return TRUE;
}

/* @p s as a JSON string the way Python's json.dumps writes it
 * (ensure_ascii: every character past ASCII as \uXXXX, surrogate pairs
 * past the BMP). */
static void append_json_string(GString *out, const char *s) {
  g_string_append_c(out, '"');
  for (const char *p = s; *p; p = g_utf8_next_char(p)) {
    gunichar c = g_utf8_get_char(p);
    switch (c) {
    case '"':
      g_string_append(out, "\\\"");
      break;
    case '\\':
      g_string_append(out, "\\\\");
      break;
    case '\n':
      g_string_append(out, "\\n");
      break;
    case '\r':
      g_string_append(out, "\\r");
      break;
    case '\t':
      g_string_append(out, "\\t");
      break;
    case '\b':
      g_string_append(out, "\\b");
      break;
    case '\f':
      g_string_append(out, "\\f");
      break;
    default:
      if (c < 0x20 || (c > 0x7e && c < 0x10000)) {
        g_string_append_printf(out, "\\u%04x", (unsigned)c);
      } else if (c >= 0x10000) {
        gunichar v = c - 0x10000;
        g_string_append_printf(out, "\\u%04x\\u%04x",
                               (unsigned)(0xd800 + (v >> 10)),
                               (unsigned)(0xdc00 + (v & 0x3ff)));
      } else {
        g_string_append_c(out, (char)c);
      }
    }
  }
  g_string_append_c(out, '"');
}

char *zkrc__lease_record_format(const char *ident, int64_t end_ms,
                                size_t *len) {
  char end[20];
  zkrc__lease_format_time(end_ms, end);
  GString *out = g_string_new("{\"version\": ");
  g_string_append_printf(out, "%d, \"holder\": ", ZKRC__TIME_LEASE_VERSION);
  append_json_string(out, ident);
  g_string_append_printf(out, ", \"end\": \"%s\"}", end);
  *len = out->len;
  return g_string_free(out, FALSE);
}
