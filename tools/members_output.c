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
#include <string.h>

#include <glib.h>

#include "json_out.h"
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

/* A member's object members: "id"; "data" as a string when it is UTF-8
 * (JSON text must be; a NUL byte is not taken as text), else its base64,
 * "base64" saying which (null data: a node without data); "czxid" and
 * "ctime_ms" of its node. */
static void add_member(JsonBuilder *b, const zkrc_group_member *m) {
  json_out_string(b, "id", m->id);
  int text = m->data == NULL || g_utf8_validate(m->data, (gssize)m->len, NULL);
  char *b64 = text ? NULL : g_base64_encode((const guchar *)m->data, m->len);
  json_out_string(b, "data", text ? m->data : b64);
  json_builder_set_member_name(b, "base64");
  json_builder_add_boolean_value(b, !text);
  g_free(b64);
  json_out_int(b, "czxid", m->czxid);
  json_out_int(b, "ctime_ms", m->ctime_ms);
}

int members_print_json_list(FILE *out, const char *path,
                            const zkrc_group_member *members, size_t count) {
  JsonBuilder *b = json_builder_new();
  json_builder_begin_object(b);
  json_out_string(b, "path", path);
  json_builder_set_member_name(b, "members");
  json_builder_begin_array(b);
  for (size_t i = 0; i < count; i++) {
    json_builder_begin_object(b);
    add_member(b, &members[i]);
    json_builder_end_object(b);
  }
  json_builder_end_array(b);
  json_builder_end_object(b);
  return json_out_print(out, b);
}

int members_print_json_change(FILE *out, const char *event,
                              const zkrc_group_member *m) {
  JsonBuilder *b = json_builder_new();
  json_builder_begin_object(b);
  json_out_string(b, "event", event);
  add_member(b, m);
  json_builder_end_object(b);
  return json_out_print(out, b);
}

/* ------------------------------------------------------------ instances */

int members_print_instance_text(FILE *out, const char *event,
                                const zkrc_service_instance *inst) {
  char *id = watch_escape(inst->id, strlen(inst->id));
  char *address =
      watch_escape(inst->address, inst->address ? strlen(inst->address) : 0);
  if (event)
    fprintf(out, "%s\t", event);
  if (inst->port == ZKRC_SERVICE_NO_PORT)
    fprintf(out, "%s\t%s\t\n", id, address);
  else
    fprintf(out, "%s\t%s\t%d\n", id, address, inst->port);
  g_free(id);
  g_free(address);
  return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}

/* A port, or null for none. */
static void add_port(JsonBuilder *b, const char *name, int port) {
  json_builder_set_member_name(b, name);
  if (port == ZKRC_SERVICE_NO_PORT)
    json_builder_add_null_value(b);
  else
    json_builder_add_int_value(b, port);
}

/* "payload": the record's JSON value as it is (null for none). */
static void add_payload(JsonBuilder *b, const char *payload) {
  json_builder_set_member_name(b, "payload");
  JsonNode *value = payload ? json_from_string(payload, NULL) : NULL;
  if (value)
    json_builder_add_value(b, value); /* takes it */
  else
    json_builder_add_null_value(b);
}

/* An instance's object members, named as the record's fields are in
 * zkrecipes/discovery.h. */
static void add_instance(JsonBuilder *b, const zkrc_service_instance *inst) {
  json_out_string(b, "id", inst->id);
  json_out_string(b, "name", inst->name);
  json_out_string(b, "address", inst->address);
  add_port(b, "port", inst->port);
  add_port(b, "ssl_port", inst->ssl_port);
  add_payload(b, inst->payload);
  json_out_int(b, "registration_time_utc", inst->registration_time_utc);
  json_out_string(b, "service_type",
                  zkrc_service_type_name(inst->service_type));
  json_out_string(b, "uri_spec", inst->uri_spec);
  json_builder_set_member_name(b, "enabled");
  json_builder_add_boolean_value(b, inst->enabled != 0);
}

int members_print_instances_json(FILE *out, const char *path,
                                 const char *service,
                                 zkrc_service_instance *const *instances,
                                 size_t count) {
  JsonBuilder *b = json_builder_new();
  json_builder_begin_object(b);
  json_out_string(b, "path", path);
  json_out_string(b, "service", service);
  json_builder_set_member_name(b, "instances");
  json_builder_begin_array(b);
  for (size_t i = 0; i < count; i++) {
    json_builder_begin_object(b);
    add_instance(b, instances[i]);
    json_builder_end_object(b);
  }
  json_builder_end_array(b);
  json_builder_end_object(b);
  return json_out_print(out, b);
}

int members_print_instance_json_change(FILE *out, const char *event,
                                       const zkrc_service_instance *inst) {
  JsonBuilder *b = json_builder_new();
  json_builder_begin_object(b);
  json_out_string(b, "event", event);
  add_instance(b, inst);
  json_builder_end_object(b);
  return json_out_print(out, b);
}
