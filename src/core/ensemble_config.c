/*
 * The servers' dynamic configuration, read as client addresses
 * (ensemble_config.h).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "core/ensemble_config.h"
#include "zkrecipes/error.h"

typedef struct member {
  uint64_t id;
  char *address; /* "HOST:PORT" */
} member;

static int by_id(const void *a, const void *b) {
  uint64_t x = ((const member *)a)->id, y = ((const member *)b)->id;
  return x < y ? -1 : x > y;
}

/* A host at the start of @p s ("[v6]" or up to the first ':'); its end in
 * *@p end.  NULL when empty or unclosed. */
static char *host_of(const char *s, const char **end) {
  const char *e = s[0] == '[' ? strchr(s, ']') : strchr(s, ':');
  if (s[0] == '[' && e)
    e++;
  if (e == NULL)
    e = s + strlen(s);
  *end = e;
  return e > s ? g_strndup(s, (gsize)(e - s)) : NULL;
}

static gboolean is_port(const char *s) {
  char *end;
  long port = strtol(s, &end, 10);
  return *s >= '0' && *s <= '9' && *end == '\0' && port > 0 && port <= 65535;
}

static gboolean is_wildcard(const char *host) {
  return strcmp(host, "0.0.0.0") == 0 || strcmp(host, "[::]") == 0 ||
         strcmp(host, "::") == 0;
}

/* The client address of SPEC ("HOST:QP:EP[:ROLE][;[CHOST:]CPORT]"): TRUE
 * and *@p out ("" without a client part, else "HOST:PORT"), or FALSE when
 * it is malformed. */
static gboolean client_of(const char *spec, char **out) {
  *out = NULL;
  const char *semi = strchr(spec, ';');
  char *quorum = semi ? g_strndup(spec, (gsize)(semi - spec)) : g_strdup(spec);
  const char *rest;
  char *host = host_of(quorum, &rest);
  gboolean ok = host != NULL && *rest == ':';
  g_free(quorum);
  if (ok && (semi == NULL || semi[1] == '\0')) {
    *out = g_strdup("");
  } else if (ok) {
    const char *client = semi + 1, *port = client;
    char *chost = strrchr(client, ':') ? host_of(client, &rest) : NULL;
    if (chost) {
      ok = *rest == ':';
      port = rest + 1;
    }
    ok = ok && is_port(port);
    if (ok)
      *out = g_strdup_printf("%s:%s",
                             chost && !is_wildcard(chost) ? chost : host, port);
    g_free(chost);
  }
  g_free(host);
  return ok;
}

/* One "server.ID=SPEC" line into @p members; FALSE when malformed. */
static gboolean add_server(GArray *members, const char *key, const char *value,
                           zkrc__ensemble_config *out) {
  char *end;
  const char *id = key + strlen("server.");
  uint64_t n = g_ascii_strtoull(id, &end, 10);
  char *address;
  if (*id < '0' || *id > '9' || *end != '\0' || !client_of(value, &address))
    return FALSE;
  out->servers++;
  if (*address == '\0') {
    g_free(address); /* no client address: not one to connect to */
    return TRUE;
  }
  member m = {n, address};
  g_array_append_val(members, m);
  return TRUE;
}

static gboolean parse_line(GArray *members, char *line,
                           zkrc__ensemble_config *out) {
  g_strstrip(line);
  char *eq = strchr(line, '=');
  if (*line == '\0' || *line == '#' || eq == NULL)
    return TRUE;
  *eq = '\0';
  char *key = g_strstrip(line), *value = g_strstrip(eq + 1);
  if (strcmp(key, "version") == 0) {
    char *end;
    out->version = g_ascii_strtoull(value, &end, 16);
    return *value != '\0' && *end == '\0';
  }
  if (strncmp(key, "server.", strlen("server.")) == 0) {
    char *w = value; /* no blank belongs to a server line: drop them */
    for (const char *r = value; *r; r++)
      if (!g_ascii_isspace(*r))
        *w++ = *r;
    *w = '\0';
    return add_server(members, key, value, out);
  }
  return TRUE;
}

void zkrc__ensemble_config_clear(zkrc__ensemble_config *c) {
  if (c == NULL)
    return;
  g_free(c->hosts);
  memset(c, 0, sizeof *c);
}

int zkrc__ensemble_config_parse(const char *text, size_t len,
                                zkrc__ensemble_config *out) {
  memset(out, 0, sizeof *out);
  char *copy = g_strndup(text ? text : "", text ? len : 0);
  char **lines = g_strsplit(copy, "\n", -1);
  g_free(copy);
  GArray *members = g_array_new(FALSE, FALSE, sizeof(member));
  gboolean ok = TRUE;
  for (char **l = lines; ok && *l; l++)
    ok = parse_line(members, *l, out);
  g_strfreev(lines);
  g_array_sort(members, by_id);
  GString *hosts = g_string_new(NULL);
  for (guint i = 0; i < members->len; i++) {
    member *m = &g_array_index(members, member, i);
    if (i > 0 && m->id == g_array_index(members, member, i - 1).id)
      ok = FALSE; /* one id twice */
    g_string_append_printf(hosts, "%s%s", i ? "," : "", m->address);
    g_free(m->address);
  }
  out->members = (int)members->len;
  g_array_free(members, TRUE);
  out->hosts = g_string_free(hosts, out->members == 0);
  if (!ok) {
    zkrc__ensemble_config_clear(out);
    return ZKRC_EBADNODE;
  }
  return ZKRC_OK;
}
