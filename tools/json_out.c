/*
 * tools/json_out.c - JSON members and documents for --json (json_out.h).
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <glib.h>

#include "json_out.h"

void json_out_string(JsonBuilder *b, const char *name, const char *value) {
  json_builder_set_member_name(b, name);
  if (value)
    json_builder_add_string_value(b, value);
  else
    json_builder_add_null_value(b);
}

void json_out_int(JsonBuilder *b, const char *name, int64_t value) {
  json_builder_set_member_name(b, name);
  json_builder_add_int_value(b, value);
}

void json_out_text(JsonBuilder *b, const char *name, const char *bytes,
                   size_t len) {
  /* With a length, g_utf8_validate() also refuses NUL bytes. */
  if (bytes == NULL || g_utf8_validate(bytes, (gssize)len, NULL)) {
    char *text = bytes ? g_strndup(bytes, len) : NULL;
    json_out_string(b, name, text);
    g_free(text);
    return;
  }
  json_out_string(b, name, NULL);
  char *b64 = g_base64_encode((const guchar *)bytes, len);
  char *b64_name = g_strdup_printf("%s_base64", name);
  json_out_string(b, b64_name, b64);
  g_free(b64_name);
  g_free(b64);
}

int json_out_print(FILE *out, JsonBuilder *b) {
  JsonNode *root = json_builder_get_root(b);
  JsonGenerator *gen = json_generator_new();
  json_generator_set_root(gen, root); /* not pretty: one line */
  char *text = json_generator_to_data(gen, NULL);
  fprintf(out, "%s\n", text);
  g_free(text);
  g_object_unref(gen);
  json_node_unref(root);
  g_object_unref(b);
  return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}
