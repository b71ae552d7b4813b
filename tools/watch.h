/*
 * tools/watch.h - how zkr-watch writes a change: one text line (the value
 * escaped so that it stays on its line) or one JSON object per line
 * (json-glib).  watch_output.c; internal to zkr-watch.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef ZKR_WATCH_H
#define ZKR_WATCH_H

#include <stdio.h>

#include <zkrecipes/cache.h>

/* @p len bytes of @p data as printable text on one line (g_free it):
 * backslash, tab, newline and carriage return as \\, \t, \n and \r; any
 * other control byte (0x00-0x1F, 0x7F, and the C1 controls U+0080-U+009F
 * of UTF-8 text) as \xHH, as are all bytes from 0x80 up when the value is
 * not UTF-8.  UTF-8 text is kept as it is otherwise.  bash's printf %b, and
 * most unescapers, turn it back into the bytes.  NULL is "". */
char *watch_escape(const char *data, size_t len);

/* "EVENT<TAB>PATH<TAB>VERSION<TAB>VALUE\n" (VALUE escaped as above) on
 * @p out.  Returns 0, or -1 when writing failed (errno set). */
int watch_print_text(FILE *out, zkrc_cache_event_type type,
                     const zkrc_cache_node *node);

/* The same as one line of JSON (see zkr-watch(1) for the members).
 * Returns 0, or -1 when writing failed. */
int watch_print_json(FILE *out, zkrc_cache_event_type type,
                     const zkrc_cache_node *node);

#endif /* ZKR_WATCH_H */
