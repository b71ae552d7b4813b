/*
 * config-text.h - the configuration centre's text format, shared by
 * zkr-config-daemon (which reads it) and zkr-config-edit (which edits it).
 *
 * One setting a line, "key = value"; blank lines and lines starting with
 * '#' are ignored.  A key is 1..64 of [A-Za-z0-9_.-]; a value is the rest
 * of the line, without the blanks around it (it may be empty).  A key may
 * appear once.  Anything else is an error that names its line, so that a
 * daemon can say why it refuses a configuration.
 *
 *   # the payment service
 *   listen = 0.0.0.0:8080
 *   workers = 4
 *
 * zkr-config-edit writes the settings back in their order, one
 * "key = value" line each: it does not keep comments.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef CONFIG_TEXT_H
#define CONFIG_TEXT_H

#include <stddef.h>

#define CONFIG_MAX_KEY 64

typedef struct config_entry {
  char *key;
  char *value;
} config_entry;

/** A parsed configuration: its settings in the order of the text. */
typedef struct config {
  config_entry *entries;
  size_t count;
} config;

/** Parse the @p len bytes of @p text into *@p out (which it empties
 *  first).  Returns 0, or -1 with the reason ("line 3: ...") in @p why
 *  and *@p out empty. */
int config_parse(const char *text, size_t len, config *out, char *why,
                 size_t why_size);

/** Is @p key a valid key? */
int config_key_valid(const char *key);

/** The value of @p key, or NULL. */
const char *config_get(const config *c, const char *key);

/** Set @p key (valid) to @p value (no newline), adding it at the end when
 *  new.  Returns 0, -1 when out of memory. */
int config_set(config *c, const char *key, const char *value);

/** Remove @p key.  Returns 1 when it was there, 0 otherwise. */
int config_delete(config *c, const char *key);

/** The text of @p c (malloc'ed, NUL-terminated; NULL when out of memory). */
char *config_format(const config *c);

/** Free what @p c holds and empty it. */
void config_clear(config *c);

#endif /* CONFIG_TEXT_H */
