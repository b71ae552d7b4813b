/*
 * Error codes, their names and messages, and the per-thread ZooKeeper code
 * kept behind the most recent failure.
 */
#include "config.h"

#include <zookeeper/zookeeper.h>

#include "core/util.h"
#include "zkrecipes.h"

static _Thread_local int last_zk_error;

const char *zkrc_strerror(int err) {
  switch (err) {
  case ZKRC_OK:
    return "success";
#define ZKRC_STRERROR_CASE(name, value, msg)                                   \
  case ZKRC_##name:                                                            \
    return msg;
    ZKRC_ERRNO_MAP(ZKRC_STRERROR_CASE)
#undef ZKRC_STRERROR_CASE
  default:
    return "unknown zkrecipes error";
  }
}

const char *zkrc_err_name(int err) {
  switch (err) {
  case ZKRC_OK:
    return "ZKRC_OK";
#define ZKRC_ERR_NAME_CASE(name, value, msg)                                   \
  case ZKRC_##name:                                                            \
    return "ZKRC_" #name;
    ZKRC_ERRNO_MAP(ZKRC_ERR_NAME_CASE)
#undef ZKRC_ERR_NAME_CASE
  default:
    return "ZKRC_UNKNOWN";
  }
}

int zkrc_last_zk_error(void) { return last_zk_error; }

int zkrc_from_zk_error(int zk_rc) {
  switch (zk_rc) {
  case ZOK:
    return ZKRC_OK;
  case ZNONODE:
    return ZKRC_ENONODE;
  case ZNODEEXISTS:
    return ZKRC_ENODEEXISTS;
  case ZNOTEMPTY:
    return ZKRC_ENOTEMPTY;
  case ZBADVERSION:
    return ZKRC_EBADVERSION;
  case ZNOAUTH:
  case ZINVALIDACL:
    return ZKRC_ENOAUTH;
  case ZAUTHFAILED:
    return ZKRC_EAUTHFAILED;
  case ZCONNECTIONLOSS:
  case ZOPERATIONTIMEOUT:
    return ZKRC_ECONNLOSS;
  case ZSESSIONEXPIRED:
    return ZKRC_ESESSIONEXPIRED;
  case ZCLOSING:
    return ZKRC_ECLOSED;
  case ZBADARGUMENTS:
    return ZKRC_EINVAL;
  case ZUNIMPLEMENTED: /* a request the servers do not serve (TTL nodes) */
    return ZKRC_ENOTSUP;
  case ZSYSTEMERROR:
  case ZMARSHALLINGERROR:
    return ZKRC_EZOOKEEPER;
  default:
    return ZKRC_EZOOKEEPER;
  }
}

int zkrc__fail(int err) {
  if (err != ZKRC_OK)
    last_zk_error = ZOK;
  return err;
}

int zkrc__fail_zk(int err, int zk_rc) {
  if (err != ZKRC_OK)
    last_zk_error = zk_rc;
  return err;
}

int zkrc__fail_from_zk(int zk_rc) {
  return zkrc__fail_zk(zkrc_from_zk_error(zk_rc), zk_rc);
}
