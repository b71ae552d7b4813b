/*
 * What white-box tests may ask an election (tests/test_runner.c), beside
 * its public header.  Not for recipes: they go by its events.
 */
#ifndef ZKRC_ELECTION_PRIVATE_H
#define ZKRC_ELECTION_PRIVATE_H

#include <stdint.h>

#include "zkrecipes/election.h"

/* Has the ELECTED of the leadership @p token passed its delivery check
 * (still ours, under a live lease: the application's callback is called
 * or about to be)?  Any thread; takes the election's mutex. */
int zkrc__election_told(zkrc_election *e, int64_t token);

#endif /* ZKRC_ELECTION_PRIVATE_H */
