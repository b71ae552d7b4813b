/*
 * tools/members_output.c - zkr-members's output: text lines for people and
 * shell loops (the data escaped by watch_escape(), zkr-watch's escaping),
 * JSON made by json-glib (which does the escaping) for programs.  See
 * members.h.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <stdio.h>

#include <glib.h>
#include <json-glib/json-glib.h>

#include "members.h"
#include "watch.h"

/* ------------------------------------------------------------------ text */

int members_print_text(FILE *out, const char *event,
                       const zkrc_group_member *m) {
  char *data = watch_escape(m->data, m->len);
  if (event)
    fprintf(out, "%s\t", event);
  fprintf(out, "%s\t%s\n", m->id, data);
  g_free(data);
  return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}

/* ------------------------------------------------------------------ JSON */

static void add_string(JsonBuilder *b, const char *name, const char *value) {
  json_builder_set_member_name(b, name);
  if (value)
    json_builder_add_string_value(b, value);
  else
    json_builder_add_null_value(b);
}

static void add_int(JsonBuilder *b, const char *name, int64_t value) {
  json_builder_set_member_name(b, name);
  json_builder_add_int_value(b, value);
}

/* A member's object members: "id"; "data" as a string when it is UTF-8
 * (JSON text must be; a NUL byte is not taken as text), else its base64,
 * "base64" saying which (null data: a node without data); "czxid" and
 * "ctime_ms" of its node. */
static void add_member(JsonBuilder *b, const zkrc_group_member *m) {
  add_string(b, "id", m->id);
  int text = m->data == NULL || g_utf8_validate(m->data, (gssize)m->len, NULL);
  char *b64 = text ? NULL : g_base64_encode((const guchar *)m->data, m->len);
  add_string(b, "data", text ? m->data : b64);
  json_builder_set_member_name(b, "base64");
  json_builder_add_boolean_value(b, !text);
  g_free(b64);
  add_int(b, "czxid", m->czxid);
  add_int(b, "ctime_ms", m->ctime_ms);
}

/* Write @p b's document on one line, and free @p b. */
static int print_built(FILE *out, JsonBuilder *b) {
  JsonNode *root = json_builder_get_root(b);
  JsonGenerator *gen = json_generator_new();
  json_generator_set_root(gen, root);
  char *text = json_generator_to_data(gen, NULL); /* one line: not pretty */
  fprintf(out, "%s\n", text);
  g_free(text);
  g_object_unref(gen);
  json_node_unref(root);
  g_object_unref(b);
  return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}

int members_print_json_list(FILE *out, const char *path,
                            const zkrc_group_member *members, size_t count) {
  JsonBuilder *b = json_builder_new();
  json_builder_begin_object(b);
  add_string(b, "path", path);
  json_builder_set_member_name(b, "members");
  json_builder_begin_array(b);
  for (size_t i = 0; i < count; i++) {
    json_builder_begin_object(b);
    add_member(b, &members[i]);
    json_builder_end_object(b);
  }
  json_builder_end_array(b);
  json_builder_end_object(b);
  return print_built(out, b);
}

int members_print_json_change(FILE *out, const char *event,
                              const zkrc_group_member *m) {
  JsonBuilder *b = json_builder_new();
  json_builder_begin_object(b);
  add_string(b, "event", event);
  add_member(b, m);
  json_builder_end_object(b);
  return print_built(out, b);
}
