/*
 * Shared by the service discovery files (discovery.c, discovery_json.c,
 * discovery_provider.c).
 */
#ifndef ZKRC_DISCOVERY_INTERNAL_H
#define ZKRC_DISCOVERY_INTERNAL_H
#include <stddef.h>

#include "zkrecipes/discovery.h"

/* Is @p name one node name (no '/', not "." or "..", a valid path below
 * "/")? */
int zkrc__discovery_name_valid(const char *name);

/* The record in a node's data, or NULL after a log line saying why the
 * node at @p path is skipped. */
zkrc_service_instance *zkrc__discovery_parse_node(const char *path,
                                                  const char *data, size_t len);

/* qsort comparator of instance pointers, by id. */
int zkrc__discovery_by_id(const void *a, const void *b);
#endif /* ZKRC_DISCOVERY_INTERNAL_H */
