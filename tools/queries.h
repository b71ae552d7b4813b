/*
 * tools/queries.h - what zkr lock and zkr elect print when asked rather
 * than run (--holders, --leader, --watch): text lines for people and
 * shell loops, or with --json one JSON document per line (json-glib), as
 * zkr ls, zkr watch and zkr members print theirs.  queries_output.c;
 * internal to the tools.
 *
 * Every function returns 0, or -1 when writing @p out failed; each line is
 * flushed.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef ZKR_QUERIES_H
#define ZKR_QUERIES_H

#include <stdint.h>
#include <stdio.h>

#include <zkrecipes/participants.h>

/* The contenders of @p path (in queue order, the holder or leader first),
 * their nodes in @p dir (path, or path/leases for a semaphore).  Text: a
 * line "ID<TAB>NODE" each.  JSON: one line {"path": PATH, "contenders":
 * [{"id": ID, "node": NODE, "token": N, "ctime_ms": N}, ...]} (an id that
 * is not UTF-8 text: "id" null and "id_base64" its bytes). */
int queries_print_contenders(FILE *out, const char *path, const char *dir,
                             const zkrc_participant *v, size_t n, int json);

/* The leader's id (NULL: none).  Text: "ID" (nothing when none).  JSON:
 * {"path": PATH, "leader": ID or null}. */
int queries_print_leader(FILE *out, const char *path, const char *id, int json);

/* A change of leader seen at @p when (ISO 8601, UTC): @p id and @p token
 * (NULL, 0: nobody leads).  Text: "TIME<TAB>ID<TAB>TOKEN" (ID and TOKEN
 * empty when nobody leads).  JSON: {"time": TIME, "path": PATH, "leader":
 * ID or null, "token": N or null}. */
int queries_print_leader_change(FILE *out, const char *path, const char *when,
                                const char *id, int64_t token, int json);

#endif /* ZKR_QUERIES_H */
