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

#include "json_out.h"
#include "queries.h"

int queries_print_contenders(FILE *out, const char *path, const char *dir,
                             const zkrc_participant *v, size_t n, int json) {
  if (!json) {
    for (size_t i = 0; i < n; i++)
      fprintf(out, "%s\t%s/%s\n", v[i].id, dir, v[i].node);
    return fflush(out) == 0 && !ferror(out) ? 0 : -1;
  }
  JsonBuilder *b = json_builder_new();
  json_builder_begin_object(b);
  json_out_string(b, "path", path);
  json_builder_set_member_name(b, "contenders");
  json_builder_begin_array(b);
  for (size_t i = 0; i < n; i++) {
    json_builder_begin_object(b);
    json_out_text(b, "id", v[i].id, zkrc_participant_id_len(&v[i]));
    char *node = g_strdup_printf("%s/%s", dir, v[i].node);
    json_out_string(b, "node", node);
    g_free(node);
    json_out_int(b, "token", v[i].token);
    json_out_int(b, "ctime_ms", v[i].ctime_ms);
    json_builder_end_object(b);
  }
  json_builder_end_array(b);
  json_builder_end_object(b);
  return json_out_print(out, b);
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
  json_out_string(b, "path", path);
  json_out_text(b, "leader", id, id ? strlen(id) : 0);
  json_builder_end_object(b);
  return json_out_print(out, b);
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
  json_out_string(b, "time", when);
  json_out_string(b, "path", path);
  json_out_text(b, "leader", id, id ? strlen(id) : 0);
  json_builder_set_member_name(b, "token");
  if (id)
    json_builder_add_int_value(b, token);
  else
    json_builder_add_null_value(b);
  json_builder_end_object(b);
  return json_out_print(out, b);
}
