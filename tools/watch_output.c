/*
 * tools/watch_output.c - zkr-watch's output lines: text, one change per
 * line with the value escaped, for people and shell loops; JSON, one
 * object per line (made by json-glib, which does the escaping), for
 * programs.  See watch.h.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <glib.h>

#include "json_out.h"

#include "watch.h"

/* ------------------------------------------------------------------ text */

static void append_hex(GString *s, unsigned char byte) {
  g_string_append_printf(s, "\\x%02X", byte);
}

/* One byte below 0x80, escaped when it is a control or a backslash. */
static void append_ascii(GString *s, unsigned char c) {
  switch (c) {
  case '\\':
    g_string_append(s, "\\\\");
    return;
  case '\t':
    g_string_append(s, "\\t");
    return;
  case '\n':
    g_string_append(s, "\\n");
    return;
  case '\r':
    g_string_append(s, "\\r");
    return;
  }
  if (c < 0x20 || c == 0x7f)
    append_hex(s, c);
  else
    g_string_append_c(s, (char)c);
}

char *watch_escape(const char *data, size_t len) {
  GString *s = g_string_sized_new(len + 8);
  if (data == NULL)
    return g_string_free(s, FALSE);
  /* With an explicit length a NUL byte makes the validation fail: such a
   * value is escaped byte by byte, as any other binary value. */
  int utf8 = g_utf8_validate(data, (gssize)len, NULL);
  const char *p = data, *end = data + len;
  while (p < end) {
    unsigned char c = (unsigned char)*p;
    if (c < 0x80) {
      append_ascii(s, c);
      p++;
    } else if (!utf8) {
      append_hex(s, c);
      p++;
    } else {
      const char *next = g_utf8_next_char(p);
      gunichar u = g_utf8_get_char(p);
      /* C1 controls (a terminal takes U+009B for an escape sequence). */
      for (const char *b = p; u >= 0x80 && u <= 0x9f && b < next; b++)
        append_hex(s, (unsigned char)*b);
      if (u > 0x9f)
        g_string_append_len(s, p, next - p);
      p = next;
    }
  }
  return g_string_free(s, FALSE);
}

int watch_print_text(FILE *out, zkrc_cache_event_type type,
                     const zkrc_cache_node *node) {
  char *value = watch_escape(node->data, node->len);
  fprintf(out, "%s\t%s\t%" PRId32 "\t%s\n", zkrc_cache_event_name(type),
          node->path, node->stat.version, value);
  g_free(value);
  return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}

/* ------------------------------------------------------------------ JSON */

/* "value": the data as a string when it is UTF-8 (JSON text must be; a
 * NUL byte is not taken as text either), else its base64; "base64" says
 * which.  A node without data (NULL) has "value" null. */
static void add_value(JsonBuilder *b, const zkrc_cache_node *node) {
  int text = node->data == NULL ||
             g_utf8_validate(node->data, (gssize)node->len, NULL);
  char *b64 =
      text ? NULL : g_base64_encode((const guchar *)node->data, node->len);
  json_out_string(b, "value", text ? node->data : b64);
  json_builder_set_member_name(b, "base64");
  json_builder_add_boolean_value(b, !text);
  g_free(b64);
}

/* The stat, as the servers gave it with the value. */
static void add_stat(JsonBuilder *b, const struct Stat *st) {
  json_out_int(b, "version", st->version);
  json_out_int(b, "data_length", st->dataLength);
  json_out_int(b, "czxid", st->czxid);
  json_out_int(b, "mzxid", st->mzxid);
  json_out_int(b, "pzxid", st->pzxid);
  json_out_int(b, "ctime_ms", st->ctime);
  json_out_int(b, "mtime_ms", st->mtime);
  json_out_int(b, "cversion", st->cversion);
  json_out_int(b, "aversion", st->aversion);
  json_out_int(b, "num_children", st->numChildren);
  char *owner = g_strdup_printf("0x%" PRIx64, (uint64_t)st->ephemeralOwner);
  json_out_string(b, "ephemeral_owner", st->ephemeralOwner ? owner : NULL);
  g_free(owner);
}

int watch_print_json(FILE *out, zkrc_cache_event_type type,
                     const zkrc_cache_node *node) {
  JsonBuilder *b = json_builder_new();
  json_builder_begin_object(b);
  json_out_string(b, "event", zkrc_cache_event_name(type));
  json_out_string(b, "path", node->path);
  add_value(b, node);
  add_stat(b, &node->stat);
  json_builder_end_object(b);
  return json_out_print(out, b);
}
