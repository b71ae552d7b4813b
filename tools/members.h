/*
 * tools/members.h - how zkr-members writes a group's members: one text
 * line per member (its data escaped as zkr-watch escapes values, so that
 * it stays on its line) or JSON (json-glib).  members_output.c; internal
 * to zkr-members.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef ZKR_MEMBERS_H
#define ZKR_MEMBERS_H

#include <stddef.h>
#include <stdio.h>

#include <zkrecipes/group.h>

/* "ID<TAB>DATA\n" on @p out (DATA escaped as watch_escape() does), after
 * "EVENT<TAB>" when @p event is not NULL (--watch).  Returns 0, or -1 when
 * writing failed (errno set). */
int members_print_text(FILE *out, const char *event,
                       const zkrc_group_member *m);

/* The listing as one JSON document on one line: {"path": PATH,
 * "members": [MEMBER...]} (see zkr-members(1) for MEMBER's members).
 * Returns 0, or -1 when writing failed. */
int members_print_json_list(FILE *out, const char *path,
                            const zkrc_group_member *members, size_t count);

/* A change as one line of JSON: MEMBER with "event" first.  Returns 0, or
 * -1 when writing failed. */
int members_print_json_change(FILE *out, const char *event,
                              const zkrc_group_member *m);

#endif /* ZKR_MEMBERS_H */
