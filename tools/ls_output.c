/*
 * tools/ls_output.c - zkr-ls's output: aligned text for people, JSON (made
 * by json-glib, which does the escaping) for programs.  See ls.h.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <glib.h>

#include "json_out.h"

#include "ls.h"
#include "watch.h"

ls_queue *ls_queue_new(const char *path, const char *dir, const char *recipe) {
  ls_queue *q = g_new0(ls_queue, 1);
  q->path = g_strdup(path);
  q->dir = g_strdup(dir);
  q->recipe = recipe;
  q->contenders = g_array_new(FALSE, TRUE, sizeof(ls_contender));
  return q;
}

void ls_queue_free(gpointer p) {
  ls_queue *q = p;
  if (q == NULL)
    return;
  for (guint i = 0; i < q->contenders->len; i++) {
    ls_contender *c = &g_array_index(q->contenders, ls_contender, i);
    g_free(c->node);
    g_free(c->data);
  }
  g_array_free(q->contenders, TRUE);
  g_free(q->path);
  g_free(q->dir);
  g_free(q);
}

/* The time since @p ctime_ms, short: "4.2s", "5m07s", "3h12m", "2d04h".  A
 * creation time ahead of our clock (skew between us and the servers) is an
 * age of 0. */
static char *format_age(int64_t now_ms, int64_t ctime_ms) {
  int64_t ms = now_ms > ctime_ms ? now_ms - ctime_ms : 0;
  int64_t s = ms / 1000;
  if (s < 60)
    return g_strdup_printf("%" PRId64 ".%" PRId64 "s", s, (ms % 1000) / 100);
  if (s < 3600)
    return g_strdup_printf("%" PRId64 "m%02" PRId64 "s", s / 60, s % 60);
  if (s < 86400)
    return g_strdup_printf("%" PRId64 "h%02" PRId64 "m", s / 3600,
                           (s % 3600) / 60);
  return g_strdup_printf("%" PRId64 "d%02" PRId64 "h", s / 86400,
                         (s % 86400) / 3600);
}

/* "0x..." as zkr-lock -v and the servers' logs write session ids; "-" for
 * a node no session owns (not ephemeral). */
static char *format_session(int64_t session) {
  return session ? g_strdup_printf("0x%" PRIx64, (uint64_t)session)
                 : g_strdup("-");
}

/* ctime as ISO 8601 UTC with milliseconds. */
static char *format_ctime(int64_t ctime_ms) {
  GDateTime *t = g_date_time_new_from_unix_utc(ctime_ms / 1000);
  if (t == NULL)
    return g_strdup("?");
  char *secs = g_date_time_format(t, "%Y-%m-%dT%H:%M:%S");
  char *text = g_strdup_printf("%s.%03dZ", secs, (int)(ctime_ms % 1000));
  g_free(secs);
  g_date_time_unref(t);
  return text;
}

/* ------------------------------------------------------------------ text */

/* One contender's columns, as printed. */
enum { COL_ROLE, COL_NODE, COL_SESSION, COL_AGE, COL_TOKEN, COL_DIALECT, COLS };
static const char *const column_names[COLS] = {"ROLE", "NODE",  "SESSION",
                                               "AGE",  "TOKEN", "DIALECT"};

static void contender_columns(const ls_contender *c, int64_t now_ms,
                              char *cols[COLS]) {
  cols[COL_ROLE] = g_strdup(c->role);
  cols[COL_NODE] = g_strdup(c->node);
  cols[COL_SESSION] = format_session(c->session);
  cols[COL_AGE] = format_age(now_ms, c->ctime_ms);
  cols[COL_TOKEN] = g_strdup_printf("%" PRId64, c->token);
  cols[COL_DIALECT] = g_strdup(c->dialect);
}

static void columns_free(char *cols[COLS]) {
  for (int i = 0; i < COLS; i++)
    g_free(cols[i]);
}

/* The width of each column over every contender (and its name). */
static void column_widths(const GPtrArray *queues, int64_t now_ms,
                          int widths[COLS]) {
  for (int i = 0; i < COLS; i++)
    widths[i] = (int)strlen(column_names[i]);
  for (guint q = 0; q < queues->len; q++) {
    const ls_queue *queue = g_ptr_array_index(queues, q);
    for (guint i = 0; i < queue->contenders->len; i++) {
      char *cols[COLS];
      contender_columns(&g_array_index(queue->contenders, ls_contender, i),
                        now_ms, cols);
      for (int k = 0; k < COLS; k++)
        widths[k] = MAX(widths[k], (int)strlen(cols[k]));
      columns_free(cols);
    }
  }
}

static void print_row(FILE *out, char *const cols[COLS], const int widths[COLS],
                      const char *data) {
  fputs("  ", out);
  for (int k = 0; k < COLS; k++)
    fprintf(out, "%-*s  ", widths[k], cols[k]);
  fprintf(out, "%s\n", data);
}

/* Node data as one printable line, escaped as zkr-watch and zkr-members
 * escape it (UTF-8 kept as it is); "-" when there is none. */
static char *printable_data(const char *data, size_t len) {
  return data && len ? watch_escape(data, len) : g_strdup("-");
}

int ls_print_text(FILE *out, const GPtrArray *queues, int64_t now_ms) {
  int widths[COLS];
  column_widths(queues, now_ms, widths);
  int header_done = 0;
  for (guint q = 0; q < queues->len; q++) {
    const ls_queue *queue = g_ptr_array_index(queues, q);
    if (queue->recipe == NULL) {
      fprintf(out, "%s: no contenders\n", queue->path);
      continue;
    }
    if (!header_done) {
      print_row(out, (char **)column_names, widths, "DATA");
      header_done = 1;
    }
    fprintf(out, "%s (%s)\n", queue->path, queue->recipe);
    for (guint i = 0; i < queue->contenders->len; i++) {
      const ls_contender *c =
          &g_array_index(queue->contenders, ls_contender, i);
      char *cols[COLS];
      contender_columns(c, now_ms, cols);
      char *data = printable_data(c->data, c->data_len);
      print_row(out, cols, widths, data);
      g_free(data);
      columns_free(cols);
    }
  }
  return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}

/* ------------------------------------------------------------------ JSON */

static void add_contender(JsonBuilder *b, const ls_queue *q,
                          const ls_contender *c, int position, int64_t now_ms) {
  json_builder_begin_object(b);
  json_out_int(b, "position", position);
  json_out_string(b, "role", c->role);
  json_builder_set_member_name(b, "holds");
  if (c->holds == LS_UNKNOWN)
    json_builder_add_null_value(b);
  else
    json_builder_add_boolean_value(b, c->holds == LS_HOLDS);
  json_out_string(b, "kind", c->kind);
  json_out_string(b, "dialect", c->dialect);
  json_out_string(b, "node", c->node);
  char *full = g_strdup_printf("%s/%s", q->dir, c->node);
  json_out_string(b, "node_path", full);
  g_free(full);
  char *session = format_session(c->session);
  json_out_string(b, "session", c->session ? session : NULL);
  g_free(session);
  json_out_int(b, "token", c->token);
  json_out_int(b, "ctime_ms", c->ctime_ms);
  char *ctime = format_ctime(c->ctime_ms);
  json_out_string(b, "ctime", ctime);
  g_free(ctime);
  json_out_int(b, "age_ms", now_ms > c->ctime_ms ? now_ms - c->ctime_ms : 0);
  json_out_text(b, "data", c->data ? c->data : "", c->data ? c->data_len : 0);
  json_builder_end_object(b);
}

static void add_queue(JsonBuilder *b, const ls_queue *q, int64_t now_ms) {
  json_builder_begin_object(b);
  json_out_string(b, "path", q->path);
  json_out_string(b, "recipe", q->recipe);
  json_out_string(b, "directory", q->dir);
  json_builder_set_member_name(b, "contenders");
  json_builder_begin_array(b);
  for (guint i = 0; i < q->contenders->len; i++)
    add_contender(b, q, &g_array_index(q->contenders, ls_contender, i), (int)i,
                  now_ms);
  json_builder_end_array(b);
  json_builder_end_object(b);
}

int ls_print_json(FILE *out, const GPtrArray *queues, int64_t now_ms) {
  JsonBuilder *b = json_builder_new();
  json_builder_begin_object(b);
  json_out_int(b, "now_ms", now_ms);
  json_builder_set_member_name(b, "queues");
  json_builder_begin_array(b);
  for (guint q = 0; q < queues->len; q++)
    add_queue(b, g_ptr_array_index(queues, q), now_ms);
  json_builder_end_array(b);
  json_builder_end_object(b);

  return json_out_print(out, b); /* one line, as every --json */
}
