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

#include <zkrecipes/discovery.h>
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

/* --service: a service instance (Curator's curator-x-discovery record). */

/* "ID<TAB>ADDRESS<TAB>PORT\n" (ADDRESS escaped as watch_escape() does;
 * empty when the record has none, as PORT), after "EVENT<TAB>" when
 * @p event is not NULL.  Returns 0, or -1 when writing failed. */
int members_print_instance_text(FILE *out, const char *event,
                                const zkrc_service_instance *inst);

/* The instances as one JSON document on one line: {"path": PATH,
 * "service": NAME, "instances": [INSTANCE...]} (zkr-members(1)).
 * Returns 0, or -1 when writing failed. */
int members_print_instances_json(FILE *out, const char *path,
                                 const char *service,
                                 zkrc_service_instance *const *instances,
                                 size_t count);

/* A change of an instance as one line of JSON: INSTANCE with "event"
 * first.  Returns 0, or -1 when writing failed. */
int members_print_instance_json_change(FILE *out, const char *event,
                                       const zkrc_service_instance *inst);

#endif /* ZKR_MEMBERS_H */
