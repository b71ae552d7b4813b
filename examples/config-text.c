/*
 * config-text.c - the configuration centre's text format (config-text.h).
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config-text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* A copy of [from, to) without the blanks around it. */
static char *trimmed_copy(const char *from, const char *to) {
  while (from < to && is_blank(*from))
    from++;
  while (to > from && is_blank(to[-1]))
    to--;
  size_t n = (size_t)(to - from);
  char *s = malloc(n + 1);
  if (s) {
    memcpy(s, from, n);
    s[n] = '\0';
  }
  return s;
}

int config_key_valid(const char *key) {
  size_t n = strlen(key);
  return n > 0 && n <= CONFIG_MAX_KEY &&
         strspn(key, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                     "0123456789_.-") == n;
}

/* Add a setting we own (key and value malloc'ed), or free them. */
static int add_entry(config *c, char *key, char *value) {
  config_entry *more = realloc(c->entries, (c->count + 1) * sizeof *more);
  if (more == NULL) {
    free(key);
    free(value);
    return -1;
  }
  c->entries = more;
  c->entries[c->count++] = (config_entry){key, value};
  return 0;
}

/* Parse one line [line, end) (without its newline) into @p c.  Returns 0,
 * or -1 with @p why set (without the line number). */
static int parse_line(config *c, const char *line, const char *end, char *why,
                      size_t why_size) {
  const char *p = line;
  while (p < end && is_blank(*p))
    p++;
  if (p == end || *p == '#')
    return 0;
  if (memchr(p, '\0', (size_t)(end - p))) {
    snprintf(why, why_size, "a NUL byte");
    return -1;
  }
  const char *eq = memchr(p, '=', (size_t)(end - p));
  if (eq == NULL) {
    snprintf(why, why_size, "expected \"key = value\", got \"%.*s\"",
             (int)(end - p > 40 ? 40 : end - p), p);
    return -1;
  }
  char *key = trimmed_copy(p, eq);
  char *value = trimmed_copy(eq + 1, end);
  int rc = -1;
  if (key == NULL || value == NULL)
    snprintf(why, why_size, "out of memory");
  else if (!config_key_valid(key))
    snprintf(why, why_size, "invalid key \"%.*s\"", CONFIG_MAX_KEY, key);
  else if (config_get(c, key))
    snprintf(why, why_size, "\"%s\" set twice", key);
  else
    rc = 0;
  if (rc == 0)
    return add_entry(c, key, value);
  free(key);
  free(value);
  return -1;
}

int config_parse(const char *text, size_t len, config *out, char *why,
                 size_t why_size) {
  config_clear(out);
  const char *end = text ? text + len : NULL;
  int number = 1;
  for (const char *line = text; line && line < end; number++) {
    const char *nl = memchr(line, '\n', (size_t)(end - line));
    const char *line_end = nl ? nl : end;
    char reason[128];
    if (parse_line(out, line, line_end, reason, sizeof reason) != 0) {
      snprintf(why, why_size, "line %d: %s", number, reason);
      config_clear(out);
      return -1;
    }
    line = nl ? nl + 1 : end;
  }
  return 0;
}

const char *config_get(const config *c, const char *key) {
  for (size_t i = 0; i < c->count; i++)
    if (strcmp(c->entries[i].key, key) == 0)
      return c->entries[i].value;
  return NULL;
}

int config_set(config *c, const char *key, const char *value) {
  char *copy = strdup(value);
  if (copy == NULL)
    return -1;
  for (size_t i = 0; i < c->count; i++)
    if (strcmp(c->entries[i].key, key) == 0) {
      free(c->entries[i].value);
      c->entries[i].value = copy;
      return 0;
    }
  char *key_copy = strdup(key);
  if (key_copy == NULL) {
    free(copy);
    return -1;
  }
  return add_entry(c, key_copy, copy);
}

int config_delete(config *c, const char *key) {
  for (size_t i = 0; i < c->count; i++)
    if (strcmp(c->entries[i].key, key) == 0) {
      free(c->entries[i].key);
      free(c->entries[i].value);
      memmove(&c->entries[i], &c->entries[i + 1],
              (c->count - i - 1) * sizeof c->entries[i]);
      c->count--;
      return 1;
    }
  return 0;
}

char *config_format(const config *c) {
  size_t size = 1;
  for (size_t i = 0; i < c->count; i++)
    size += strlen(c->entries[i].key) + strlen(c->entries[i].value) + 4;
  char *text = malloc(size);
  if (text == NULL)
    return NULL;
  size_t at = 0;
  for (size_t i = 0; i < c->count; i++)
    at += (size_t)snprintf(text + at, size - at, "%s = %s\n", c->entries[i].key,
                           c->entries[i].value);
  text[at] = '\0';
  return text;
}

void config_clear(config *c) {
  for (size_t i = 0; i < c->count; i++) {
    free(c->entries[i].key);
    free(c->entries[i].value);
  }
  free(c->entries);
  c->entries = NULL;
  c->count = 0;
}
