/*
 * The smallest complete zkrecipes program: take a lock, write a fenced
 * value under it, let it go.  Builds with nothing but pkg-config:
 *
 *   cc minimal.c $(pkg-config --cflags --libs zkrecipes) -o minimal
 *   ZKR_SERVERS=127.0.0.1:2181 ./minimal
 *
 * (tests/test_pkgconfig builds it that way against an installed copy.)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zkrecipes.h>

/* Write @p value to @p path only while @p lock is still ours: one
 * ZooKeeper multi that also checks our lock node (zoo_create_op_init is
 * ZooKeeper's own, hence -lzookeeper_mt in zkrecipes.pc). */
static int fenced_write(zkrc_lock *lock, const char *path, const char *value) {
  zoo_op_t op;
  char created[256];
  zoo_create_op_init(&op, path, value, (int)strlen(value), &ZOO_OPEN_ACL_UNSAFE,
                     ZOO_EPHEMERAL, created, sizeof created);
  return zkrc_lock_fenced_multi(lock, 1, &op, NULL, 5000);
}

int main(void) {
  const char *servers = getenv("ZKR_SERVERS");
  if (servers == NULL) {
    fprintf(stderr, "minimal: set ZKR_SERVERS (host:port,...)\n");
    return 2;
  }
  zkrc_session *s = NULL;
  zkrc_lock *lock = NULL;
  int rc = zkrc_session_connect(&s, servers, NULL);
  if (rc == ZKRC_OK)
    rc = zkrc_lock_new(&lock, s, "/minimal/lock", NULL);
  if (rc == ZKRC_OK)
    rc = zkrc_lock_acquire(lock, 10000);
  if (rc == ZKRC_OK) {
    int64_t token = 0;
    zkrc_lock_token(lock, &token);
    rc = fenced_write(lock, "/minimal-value", "hello");
    printf("held with token %" PRId64 "; fenced write: %s\n", token,
           zkrc_strerror(rc));
    zkrc_lock_release(lock);
  }
  if (rc != ZKRC_OK)
    fprintf(stderr, "minimal: %s\n", zkrc_strerror(rc));
  zkrc_lock_free(lock);
  zkrc_session_close(s);
  return rc == ZKRC_OK ? 0 : 1;
}
