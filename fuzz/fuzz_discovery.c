/*
 * Fuzz target: service instance records (src/membership/discovery_json.c):
 * zkrc_service_instance_from_json, zkrc_service_instance_to_json.
 *
 * The input is a node's data as another writer may have left it.
 * Properties checked for every input:
 *  1. Reading it returns ZKRC_OK with a record or ZKRC_EBADNODE with none
 *     (never anything else, never a crash).
 *  2. A record read has what the header promises: a name and an id, ports
 *     in 0..65535 or ZKRC_SERVICE_NO_PORT, a known service type, enabled 0
 *     or 1.
 *  3. A record read can be written (zkrc_service_instance_to_json accepts
 *     it: its payload is JSON, its URI spec a template), and what is
 *     written reads back as the same record, field for field.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zkrecipes/discovery.h>
#include <zkrecipes/error.h>

#include "fuzz.h"

const char *const fuzz_target_name = "discovery";

static int same_string(const char *a, const char *b) {
  return (a == NULL && b == NULL) || (a && b && strcmp(a, b) == 0);
}

static int port_ok(int port) {
  return port == ZKRC_SERVICE_NO_PORT || (port >= 0 && port <= 65535);
}

static void check_round_trip(const zkrc_service_instance *i) {
  char *json = NULL;
  size_t len = 0;
  int rc = zkrc_service_instance_to_json(i, &json, &len);
  FUZZ_CHECK(rc == ZKRC_OK,
             "a record read cannot be written (%d): payload %s, "
             "uri spec %s",
             rc, i->payload ? i->payload : "null",
             i->uri_spec ? i->uri_spec : "null");
  zkrc_service_instance *again = NULL;
  rc = zkrc_service_instance_from_json(json, len, &again);
  FUZZ_CHECK(rc == ZKRC_OK, "what we wrote does not read back: %s", json);
  FUZZ_CHECK(same_string(i->name, again->name) &&
                 same_string(i->id, again->id) &&
                 same_string(i->address, again->address) &&
                 i->port == again->port && i->ssl_port == again->ssl_port &&
                 same_string(i->payload, again->payload) &&
                 i->registration_time_utc == again->registration_time_utc &&
                 i->service_type == again->service_type &&
                 same_string(i->uri_spec, again->uri_spec) &&
                 i->enabled == again->enabled,
             "read back differently: %s", json);
  zkrc_service_instance_free(again);
  free(json);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  zkrc_service_instance *i = (zkrc_service_instance *)&size; /* not NULL */
  int rc = zkrc_service_instance_from_json((const char *)data, size, &i);
  FUZZ_CHECK(rc == ZKRC_OK || rc == ZKRC_EBADNODE, "unexpected code %d", rc);
  FUZZ_CHECK((rc == ZKRC_OK) == (i != NULL), "code %d with record %p", rc,
             (void *)i);
  if (i == NULL)
    return 0;
  FUZZ_CHECK(i->name && i->id, "a record without a name or an id");
  FUZZ_CHECK(port_ok(i->port) && port_ok(i->ssl_port), "ports %d, %d", i->port,
             i->ssl_port);
  FUZZ_CHECK((unsigned)i->service_type <= ZKRC_SERVICE_DYNAMIC_SEQUENTIAL,
             "service type %d", (int)i->service_type);
  FUZZ_CHECK(i->enabled == 0 || i->enabled == 1, "enabled %d", i->enabled);
  check_round_trip(i);
  zkrc_service_instance_free(i);
  return 0;
}
