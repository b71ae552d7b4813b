/*
 * Service instance records (zkrecipes/discovery.h) as JSON, read and
 * written with json-glib in the shape of Curator's JsonInstanceSerializer
 * (Jackson): the fields in its order, null for what is unset, unknown
 * fields ignored when reading (Curator's FAIL_ON_UNKNOWN_PROPERTIES off).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <json-glib/json-glib.h>

#include "membership/discovery_internal.h"
#include "core/util.h"
#include "zkrecipes/discovery.h"
#include "zkrecipes/error.h"

static const char *const type_names[] = {"DYNAMIC", "STATIC", "PERMANENT",
                                         "DYNAMIC_SEQUENTIAL"};

const char *zkrc_service_type_name(zkrc_service_type type) {
  if ((unsigned)type >= G_N_ELEMENTS(type_names))
    return "?";
  return type_names[type];
}

/* ------------------------------------------------------------ records */

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

zkrc_service_instance *zkrc_service_instance_new(const char *name,
                                                 const char *id,
                                                 const char *address,
                                                 int port) {
  if (name == NULL || id == NULL)
    return NULL;
  zkrc_service_instance *inst = calloc(1, sizeof *inst);
  if (inst == NULL)
    return NULL;
  inst->name = strdup(name);
  inst->id = strdup(id);
  inst->address = dup_or_null(address);
  inst->port = port;
  inst->ssl_port = ZKRC_SERVICE_NO_PORT;
  inst->enabled = 1;
  if (!inst->name || !inst->id || (address && !inst->address)) {
    zkrc_service_instance_free(inst);
    return NULL;
  }
  return inst;
}

zkrc_service_instance *
zkrc_service_instance_copy(const zkrc_service_instance *inst) {
  if (inst == NULL || inst->name == NULL || inst->id == NULL)
    return NULL;
  zkrc_service_instance *c =
      zkrc_service_instance_new(inst->name, inst->id, inst->address, 0);
  if (c == NULL)
    return NULL;
  c->port = inst->port;
  c->ssl_port = inst->ssl_port;
  c->payload = dup_or_null(inst->payload);
  c->registration_time_utc = inst->registration_time_utc;
  c->service_type = inst->service_type;
  c->uri_spec = dup_or_null(inst->uri_spec);
  c->enabled = inst->enabled;
  if ((inst->payload && !c->payload) || (inst->uri_spec && !c->uri_spec)) {
    zkrc_service_instance_free(c);
    return NULL;
  }
  return c;
}

void zkrc_service_instance_free(zkrc_service_instance *inst) {
  if (inst == NULL)
    return;
  free(inst->name);
  free(inst->id);
  free(inst->address);
  free(inst->payload);
  free(inst->uri_spec);
  free(inst);
}

void zkrc_service_instances_free(zkrc_service_instance **instances,
                                 size_t count) {
  if (instances == NULL)
    return;
  for (size_t i = 0; i < count; i++)
    zkrc_service_instance_free(instances[i]);
  free(instances);
}

/* ------------------------------------------------------------ reading */

/* Where the string starting at s[i] (a '"') ends, past its closing quote
 * (n when it does not end). */
static size_t skip_string(const char *s, size_t n, size_t i) {
  for (i++; i < n; i++) {
    if (s[i] == '\\')
      i++;
    else if (s[i] == '"')
      return i + 1;
  }
  return n;
}

/* The deepest nesting of objects and arrays given to the parser.
 * json-glib parses recursively: a record of 60,000 nested arrays, which
 * anyone who may write the node can leave there, overflowed the stack (an
 * 8 MiB main thread; 40,000 did not, and threads may have less).  Curator's
 * records nest 4 deep (the instance, its uriSpec, the parts, a part) plus
 * the payload's own nesting: 128 leaves any real payload ample room while
 * the parser's recursion stays a few hundred frames at most. */
#define JSON_DEPTH_MAX 128

/* Where the value starting at s[i] ends, judged by its brackets and
 * strings only (the parser judges the rest); *@p deepest is raised to its
 * deepest nesting. */
static size_t skip_value(const char *s, size_t n, size_t i, int *deepest) {
  if (s[i] == '"')
    return skip_string(s, n, i);
  if (s[i] != '{' && s[i] != '[') {
    while (i < n && !strchr(" \t\r\n{}[]\",:", s[i]))
      i++;
    return i;
  }
  int depth = 0;
  while (i < n) {
    if (s[i] == '"') {
      i = skip_string(s, n, i);
      continue;
    }
    if (s[i] == '{' || s[i] == '[') {
      depth++;
      *deepest = MAX(*deepest, depth);
    } else if ((s[i] == '}' || s[i] == ']') && --depth == 0)
      return i + 1;
    i++;
  }
  return n;
}

/* Is there nothing but white space after the first value of @p s, and is
 * that value nested at most @p max_depth deep?  json-glib 1.6 accepts
 * values one after another ("{}[1]", "true[1]"): it returns the first and
 * leaks the others (seen with valgrind on fuzz_discovery's inputs), and
 * deep nesting overflows its stack (JSON_DEPTH_MAX), so such text never
 * reaches it.  A cheap scan: one pass, no allocation. */
static gboolean one_value(const char *s, size_t n, int max_depth) {
  size_t i = 0;
  while (i < n && g_ascii_isspace(s[i]))
    i++;
  if (i == n)
    return TRUE;
  int deepest = 0;
  for (i = skip_value(s, n, i, &deepest); i < n; i++)
    if (!g_ascii_isspace(s[i]))
      return FALSE;
  return deepest <= max_depth;
}

/* Jackson's ideas of a field's value: absent and null are the same. */
static gboolean is_null(JsonNode *n) {
  return n == NULL || JSON_NODE_HOLDS_NULL(n);
}

static gboolean is_type(JsonNode *n, GType t) {
  return JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == t;
}

/* A string value that is valid UTF-8 (json-glib lets some invalid escapes
 * through as raw bytes, which no JSON writer could write again). */
static gboolean is_text(JsonNode *n) {
  return is_type(n, G_TYPE_STRING) &&
         g_utf8_validate(json_node_get_string(n), -1, NULL);
}

/* A string field: NULL for null; FALSE when it is something else. */
static gboolean read_string(JsonObject *o, const char *field, char **out) {
  JsonNode *n = json_object_get_member(o, field);
  *out = NULL;
  if (is_null(n))
    return TRUE;
  if (!is_text(n))
    return FALSE;
  *out = strdup(json_node_get_string(n));
  return *out != NULL;
}

static gboolean read_port(JsonObject *o, const char *field, int *out) {
  JsonNode *n = json_object_get_member(o, field);
  *out = ZKRC_SERVICE_NO_PORT;
  if (is_null(n))
    return TRUE;
  if (!is_type(n, G_TYPE_INT64))
    return FALSE;
  gint64 v = json_node_get_int(n);
  if (v < 0 || v > 65535)
    return FALSE;
  *out = (int)v;
  return TRUE;
}

static gboolean read_type(JsonObject *o, zkrc_service_type *out) {
  JsonNode *n = json_object_get_member(o, "serviceType");
  *out = ZKRC_SERVICE_DYNAMIC;
  if (is_null(n))
    return TRUE;
  if (!is_type(n, G_TYPE_STRING))
    return FALSE;
  for (size_t i = 0; i < G_N_ELEMENTS(type_names); i++)
    if (strcmp(json_node_get_string(n), type_names[i]) == 0) {
      *out = (zkrc_service_type)i;
      return TRUE;
    }
  return FALSE; /* Jackson refuses an unknown enum constant too */
}

static JsonNode *parse_payload(const char *text);

/* Any JSON value, as its text: text that parses again (a number too large
 * for a double would be written "inf", which is not JSON: refused). */
static gboolean read_payload(JsonObject *o, char **out) {
  JsonNode *n = json_object_get_member(o, "payload");
  *out = NULL;
  if (is_null(n))
    return TRUE;
  JsonGenerator *g = json_generator_new();
  json_generator_set_root(g, n);
  gchar *text = json_generator_to_data(g, NULL);
  g_object_unref(g);
  JsonNode *again = text ? parse_payload(text) : NULL;
  if (again) {
    json_node_unref(again);
    *out = strdup(text);
  }
  g_free(text);
  return *out != NULL;
}

/* One part of a UriSpec appended to its template: a variable in braces
 * (FALSE for a name with a brace, which no template can hold and Curator's
 * UriSpec(String) never makes), a literal with its braces as Curator's
 * brace variables "{[}" and "{]}" (which UriSpec.build() turns into
 * braces).  Empty parts, which Curator's parser never makes, are left
 * out. */
static gboolean append_part(GString *spec, const char *value, gboolean var) {
  if (var) {
    if (strpbrk(value, "{}"))
      return FALSE;
    if (*value)
      g_string_append_printf(spec, "{%s}", value);
    return TRUE;
  }
  for (const char *c = value; *c; c++)
    if (*c == '{')
      g_string_append(spec, "{[}");
    else if (*c == '}')
      g_string_append(spec, "{]}");
    else
      g_string_append_c(spec, *c);
  return TRUE;
}

/* UriSpec {"parts":[{"value":V,"variable":B},...]} as its template. */
static gboolean read_uri_spec(JsonObject *o, char **out) {
  JsonNode *n = json_object_get_member(o, "uriSpec");
  *out = NULL;
  if (is_null(n))
    return TRUE;
  if (!JSON_NODE_HOLDS_OBJECT(n))
    return FALSE;
  JsonNode *parts = json_object_get_member(json_node_get_object(n), "parts");
  if (is_null(parts)) {
    *out = strdup("");
    return *out != NULL;
  }
  if (!JSON_NODE_HOLDS_ARRAY(parts))
    return FALSE;
  GString *spec = g_string_new(NULL);
  JsonArray *a = json_node_get_array(parts);
  gboolean ok = TRUE;
  for (guint i = 0; ok && i < json_array_get_length(a); i++) {
    JsonNode *p = json_array_get_element(a, i);
    JsonObject *po = JSON_NODE_HOLDS_OBJECT(p) ? json_node_get_object(p) : NULL;
    JsonNode *value = po ? json_object_get_member(po, "value") : NULL;
    JsonNode *variable = po ? json_object_get_member(po, "variable") : NULL;
    ok = value && is_text(value) &&
         (is_null(variable) || is_type(variable, G_TYPE_BOOLEAN));
    if (!ok)
      break;
    gboolean var = !is_null(variable) && json_node_get_boolean(variable);
    ok = append_part(spec, json_node_get_string(value), var);
  }
  if (ok)
    *out = strdup(spec->str);
  g_string_free(spec, TRUE);
  return ok && *out != NULL;
}

static gboolean read_fields(JsonObject *o, zkrc_service_instance *inst) {
  JsonNode *time = json_object_get_member(o, "registrationTimeUTC");
  JsonNode *enabled = json_object_get_member(o, "enabled");
  if (!is_null(time) && !is_type(time, G_TYPE_INT64))
    return FALSE;
  if (!is_null(enabled) && !is_type(enabled, G_TYPE_BOOLEAN))
    return FALSE;
  inst->registration_time_utc = is_null(time) ? 0 : json_node_get_int(time);
  inst->enabled = is_null(enabled) ? 1 : json_node_get_boolean(enabled);
  return read_string(o, "name", &inst->name) && inst->name &&
         read_string(o, "id", &inst->id) && inst->id &&
         read_string(o, "address", &inst->address) &&
         read_port(o, "port", &inst->port) &&
         read_port(o, "sslPort", &inst->ssl_port) &&
         read_payload(o, &inst->payload) && read_type(o, &inst->service_type) &&
         read_uri_spec(o, &inst->uri_spec);
}

int zkrc_service_instance_from_json(const char *json, size_t len,
                                    zkrc_service_instance **out) {
  if (out)
    *out = NULL;
  if (out == NULL || (json == NULL && len > 0) || len > G_MAXSSIZE)
    return zkrc__fail(ZKRC_EINVAL);
  JsonParser *parser = json_parser_new();
  gboolean parsed = json != NULL && one_value(json, len, JSON_DEPTH_MAX) &&
                    json_parser_load_from_data(parser, json, (gssize)len, NULL);
  JsonNode *root = parsed ? json_parser_get_root(parser) : NULL;
  zkrc_service_instance *inst = NULL;
  if (root && JSON_NODE_HOLDS_OBJECT(root)) {
    inst = calloc(1, sizeof *inst);
    if (inst && !read_fields(json_node_get_object(root), inst)) {
      zkrc_service_instance_free(inst);
      inst = NULL;
    }
  }
  g_object_unref(parser);
  if (inst == NULL)
    return zkrc__fail(ZKRC_EBADNODE);
  *out = inst;
  return ZKRC_OK;
}

/* ------------------------------------------------------------ writing */

/* Curator's UriSpec(String) parse: literal text and {variables}; an empty
 * variable is dropped; braces must pair. */
static JsonNode *uri_spec_node(const char *spec) {
  JsonBuilder *b = json_builder_new();
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "parts");
  json_builder_begin_array(b);
  gboolean inside = FALSE, ok = TRUE;
  GString *part = g_string_new(NULL);
  for (const char *c = spec;; c++) {
    gboolean end = *c == '\0';
    if (end || *c == '{' || *c == '}') {
      if ((end && inside) || (*c == '{' && inside) || (*c == '}' && !inside))
        ok = FALSE;
      if (!ok)
        break;
      if (part->len > 0) {
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "value");
        json_builder_add_string_value(b, part->str);
        json_builder_set_member_name(b, "variable");
        json_builder_add_boolean_value(b, inside);
        json_builder_end_object(b);
        g_string_truncate(part, 0);
      }
      if (end)
        break;
      inside = *c == '{';
    } else {
      g_string_append_c(part, *c);
    }
  }
  g_string_free(part, TRUE);
  json_builder_end_array(b);
  json_builder_end_object(b);
  JsonNode *root = ok ? json_builder_get_root(b) : NULL;
  g_object_unref(b);
  return root;
}

static void add_port(JsonBuilder *b, const char *field, int port) {
  json_builder_set_member_name(b, field);
  if (port == ZKRC_SERVICE_NO_PORT)
    json_builder_add_null_value(b);
  else
    json_builder_add_int_value(b, port);
}

static void add_string(JsonBuilder *b, const char *field, const char *s) {
  json_builder_set_member_name(b, field);
  if (s)
    json_builder_add_string_value(b, s);
  else
    json_builder_add_null_value(b);
}

/* @p payload and @p uri_spec: parsed nodes (taken) or NULL. */
static gchar *generate(const zkrc_service_instance *inst, JsonNode *payload,
                       JsonNode *uri_spec) {
  JsonBuilder *b = json_builder_new();
  json_builder_begin_object(b);
  add_string(b, "name", inst->name);
  add_string(b, "id", inst->id);
  add_string(b, "address", inst->address);
  add_port(b, "port", inst->port);
  add_port(b, "sslPort", inst->ssl_port);
  json_builder_set_member_name(b, "payload");
  json_builder_add_value(b, payload ? payload : json_node_new(JSON_NODE_NULL));
  json_builder_set_member_name(b, "registrationTimeUTC");
  json_builder_add_int_value(b, inst->registration_time_utc);
  add_string(b, "serviceType", zkrc_service_type_name(inst->service_type));
  json_builder_set_member_name(b, "uriSpec");
  json_builder_add_value(b,
                         uri_spec ? uri_spec : json_node_new(JSON_NODE_NULL));
  if (!inst->enabled) {
    json_builder_set_member_name(b, "enabled");
    json_builder_add_boolean_value(b, FALSE);
  }
  json_builder_end_object(b);
  JsonNode *root = json_builder_get_root(b);
  g_object_unref(b);
  JsonGenerator *g = json_generator_new();
  json_generator_set_root(g, root);
  gchar *text = json_generator_to_data(g, NULL);
  g_object_unref(g);
  json_node_unref(root);
  return text;
}

static gboolean port_valid(int port) {
  return port == ZKRC_SERVICE_NO_PORT || (port >= 0 && port <= 65535);
}

/* The payload's JSON text parsed (NULL when it is not one JSON value, or
 * nested so deep that the record holding it, one level more, would be
 * refused by zkrc_service_instance_from_json()). */
static JsonNode *parse_payload(const char *text) {
  JsonParser *parser = json_parser_new();
  JsonNode *n = NULL;
  if (one_value(text, strlen(text), JSON_DEPTH_MAX - 1) &&
      json_parser_load_from_data(parser, text, -1, NULL) &&
      json_parser_get_root(parser))
    n = json_node_copy(json_parser_get_root(parser));
  g_object_unref(parser);
  return n;
}

int zkrc_service_instance_to_json(const zkrc_service_instance *inst,
                                  char **json, size_t *len) {
  if (json)
    *json = NULL;
  if (json == NULL || inst == NULL || inst->name == NULL || inst->id == NULL ||
      !port_valid(inst->port) || !port_valid(inst->ssl_port) ||
      (unsigned)inst->service_type >= G_N_ELEMENTS(type_names))
    return zkrc__fail(ZKRC_EINVAL);
  JsonNode *payload = inst->payload ? parse_payload(inst->payload) : NULL;
  JsonNode *uri = inst->uri_spec ? uri_spec_node(inst->uri_spec) : NULL;
  if ((inst->payload && !payload) || (inst->uri_spec && !uri)) {
    if (payload)
      json_node_unref(payload);
    if (uri)
      json_node_unref(uri);
    return zkrc__fail(ZKRC_EINVAL);
  }
  gchar *text = generate(inst, payload, uri);
  *json = dup_or_null(text);
  g_free(text);
  if (*json == NULL)
    return zkrc__fail(ZKRC_ENOMEM);
  if (len)
    *len = strlen(*json);
  return ZKRC_OK;
}
