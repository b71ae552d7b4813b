/*
 * The servers' dynamic configuration (the data of /zookeeper/config, as
 * ZooKeeper 3.5 and later write it) read as the client addresses of its
 * members: what a session that follows a reconfigured ensemble gives the
 * ZooKeeper client (zoo_set_servers), as Curator's EnsembleTracker gives its
 * connection string.  Pure: no I/O, no session (tests/test_ensemble_config.c).
 *
 * The text is a properties file, one "key=value" a line:
 *   server.ID=HOST:QUORUMPORT:ELECTIONPORT[:ROLE][;[CLIENTHOST:]CLIENTPORT]
 *   version=HEX
 * (HOST may be an IPv6 address in brackets).  Other keys are ignored, as
 * Curator's QuorumMaj ignores them.  A member without a client address
 * (nothing after ';', as a static configuration's members are written) is
 * left out; a client host missing or a wildcard (0.0.0.0, ::) is the
 * member's HOST, as Curator 5 does.  Participants and observers alike.
 */
#ifndef ZKRC_ENSEMBLE_CONFIG_H
#define ZKRC_ENSEMBLE_CONFIG_H

#include <stddef.h>
#include <stdint.h>

typedef struct zkrc__ensemble_config {
  /* "HOST:PORT,HOST:PORT" in server id order (g_malloc), NULL when no
   * member has a client address. */
  char *hosts;
  int members;      /* members with a client address */
  int servers;      /* server lines, with a client address or not */
  uint64_t version; /* the "version" line's, 0 without one */
} zkrc__ensemble_config;

/* Read @p len bytes of @p text into *@p out (cleared first).  ZKRC_OK, or
 * ZKRC_EBADNODE for a malformed server line or version (*@p out then
 * holds nothing).  @p text need not end with a NUL. */
int zkrc__ensemble_config_parse(const char *text, size_t len,
                                zkrc__ensemble_config *out);

/* Free what *@p c holds and zero it (NULL is ignored). */
void zkrc__ensemble_config_clear(zkrc__ensemble_config *c);

#endif /* ZKRC_ENSEMBLE_CONFIG_H */
