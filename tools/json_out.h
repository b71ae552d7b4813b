/*
 * tools/json_out.h - what every subcommand's --json writes with: members
 * of a json-glib builder, and the document written out.  json_out.c;
 * internal to the tools.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef ZKR_JSON_OUT_H
#define ZKR_JSON_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <json-glib/json-glib.h>

/* "NAME": @p value, or null when it is NULL. */
void json_out_string(JsonBuilder *b, const char *name, const char *value);

/* "NAME": @p value. */
void json_out_int(JsonBuilder *b, const char *name, int64_t value);

/* "NAME": the @p len bytes at @p bytes as a string when they are UTF-8
 * without a NUL byte (JSON text must be, and json-glib takes C strings);
 * else null, and "NAME_base64" the bytes.  NULL bytes: null alone. */
void json_out_text(JsonBuilder *b, const char *name, const char *bytes,
                   size_t len);

/* Write @p b's document on @p out on one line (every --json writes JSON
 * lines), flush, free @p b.  0, or -1 when writing failed. */
int json_out_print(FILE *out, JsonBuilder *b);

#endif /* ZKR_JSON_OUT_H */
