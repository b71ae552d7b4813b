/*
 * tools/queries_output.c - zkr lock's and zkr elect's answers to
 * --holders, --leader and --watch, as text or JSON lines (see queries.h).
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <inttypes.h>
#include <string.h>

#include <glib.h>
#include <json-glib/json-glib.h>

#include "queries.h"

/* Write @p b's document on one line, flushed, and free @p b. */
static int print_built(FILE *out, JsonBuilder *b) {
  JsonNode *root = json_builder_get_root(b);
  JsonGenerator *gen = json_generator_new();
  json_generator_set_root(gen, root);
  char *text = json_generator_to_data(gen, NULL); /* not pretty: one line */
  fprintf(out, "%s\n", text);
  g_free(text);
  g_object_unref(gen);
  json_node_unref(root);
  g_object_unref(b);
  return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}

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

/* @p name: @p text when it is UTF-8 (JSON text must be), else null and
 * NAME_base64 its bytes. */
static void add_text(JsonBuilder *b, const char *name, const char *text) {
  if (text == NULL || g_utf8_validate(text, -1, NULL)) {
    add_string(b, name, text);
    return;
  }
  add_string(b, name, NULL);
  char *b64 = g_base64_encode((const guchar *)text, strlen(text));
  char *b64_name = g_strdup_printf("%s_base64", name);
  add_string(b, b64_name, b64);
  g_free(b64_name);
  g_free(b64);
}

/* "id": the participant's id when it is UTF-8 text without NUL bytes
 * (JSON text must be), else null and "id_base64" its bytes. */
static void add_id(JsonBuilder *b, const zkrc_participant *p) {
  size_t len = zkrc_participant_id_len(p);
  int text = strlen(p->id) == len && g_utf8_validate(p->id, (gssize)len, NULL);
  add_string(b, "id", text ? p->id : NULL);
  if (!text) {
    char *b64 = g_base64_encode((const guchar *)p->id, len);
    add_string(b, "id_base64", b64);
    g_free(b64);
  }
}

int queries_print_contenders(FILE *out, const char *path, const char *dir,
                             const zkrc_participant *v, size_t n, int json) {
  if (!json) {
    for (size_t i = 0; i < n; i++)
      fprintf(out, "%s\t%s/%s\n", v[i].id, dir, v[i].node);
    return fflush(out) == 0 && !ferror(out) ? 0 : -1;
  }
  JsonBuilder *b = json_builder_new();
  json_builder_begin_object(b);
  add_string(b, "path", path);
  json_builder_set_member_name(b, "contenders");
  json_builder_begin_array(b);
  for (size_t i = 0; i < n; i++) {
    json_builder_begin_object(b);
    add_id(b, &v[i]);
    char *node = g_strdup_printf("%s/%s", dir, v[i].node);
    add_string(b, "node", node);
    g_free(node);
    add_int(b, "token", v[i].token);
    add_int(b, "ctime_ms", v[i].ctime_ms);
    json_builder_end_object(b);
  }
  json_builder_end_array(b);
  json_builder_end_object(b);
  return print_built(out, b);
}

int queries_print_leader(FILE *out, const char *path, const char *id,
                         int json) {
  if (!json) {
    if (id)
      fprintf(out, "%s\n", id);
    return fflush(out) == 0 && !ferror(out) ? 0 : -1;
  }
  JsonBuilder *b = json_builder_new();
  json_builder_begin_object(b);
  add_string(b, "path", path);
  add_text(b, "leader", id);
  json_builder_end_object(b);
  return print_built(out, b);
}

int queries_print_leader_change(FILE *out, const char *path, const char *when,
                                const char *id, int64_t token, int json) {
  if (!json) {
    if (id)
      fprintf(out, "%s\t%s\t%" PRId64 "\n", when, id, token);
    else
      fprintf(out, "%s\t\t\n", when);
    return fflush(out) == 0 && !ferror(out) ? 0 : -1;
  }
  JsonBuilder *b = json_builder_new();
  json_builder_begin_object(b);
  add_string(b, "time", when);
  add_string(b, "path", path);
  add_text(b, "leader", id);
  json_builder_set_member_name(b, "token");
  if (id)
    json_builder_add_int_value(b, token);
  else
    json_builder_add_null_value(b);
  json_builder_end_object(b);
  return print_built(out, b);
}
