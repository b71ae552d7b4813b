/*
 * zkr-demo: a tour of zkrecipes on a live ensemble.
 *
 *   1. Three worker threads share one lock object; each thread is a
 *      participant of its own, so they take turns.  Every holder prints its
 *      fencing token: strictly increasing.
 *   2. Three participants elect a leader; the leader resigns twice and the
 *      leadership moves down the queue, each leader with a higher token.
 *   3. A read-write lock: a writer holds, a thread downgrades to reading
 *      (takes the read side, lets the write side go), another reader joins
 *      it, and a thread that reads cannot upgrade (ZKRC_EDEADLK, at once).
 *
 * Run it with `make demo` (which starts a local 3-member ensemble), or
 * against your own servers: ZKR_SERVERS=host:2181 ./zkr-demo
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <zkrecipes.h>

#define ROUNDS 3

static zkrc_lock *lock;

static void *worker(void *arg) {
  const char *name = arg;
  for (int i = 0; i < ROUNDS; i++) {
    int rc = zkrc_lock_acquire(lock, 10000);
    if (rc != ZKRC_OK) {
      fprintf(stderr, "%s: acquire: %s\n", name, zkrc_strerror(rc));
      return NULL;
    }
    int64_t token = 0;
    zkrc_lock_token(lock, &token);
    printf("  %s holds the lock, fencing token %" PRId64 "\n", name, token);
    zkrc_lock_release(lock);
  }
  return NULL;
}

static void lock_demo(void) {
  printf("1. Three threads take turns on /demo/lock:\n");
  pthread_t threads[3];
  static char *names[] = {"thread-a", "thread-b", "thread-c"};
  for (int i = 0; i < 3; i++)
    pthread_create(&threads[i], NULL, worker, names[i]);
  for (int i = 0; i < 3; i++)
    pthread_join(threads[i], NULL);
}

static void on_election(zkrc_election *e, const zkrc_election_event *info,
                        void *arg) {
  printf("  %s %s (token %" PRId64 ")\n", (const char *)arg,
         info->type == ZKRC_ELECTION_ELECTED ? "is elected" : "is revoked",
         info->token);
}

static void election_demo(zkrc_session *s) {
  printf("2. Three participants elect a leader on /demo/election:\n");
  static char *ids[] = {"alpha", "bravo", "charlie"};
  zkrc_election *members[3];
  for (int i = 0; i < 3; i++) {
    zkrc_election_options o;
    zkrc_election_options_init(&o);
    o.participant_id = ids[i];
    o.on_event = on_election;
    o.event_arg = ids[i];
    zkrc_election_new(&members[i], s, "/demo/election", &o);
    zkrc_election_join(members[i]);
    if (i == 0) /* join in a known order: alpha first */
      zkrc_election_wait_leader(members[0], 10000);
  }
  for (int turn = 0; turn < 2; turn++) {
    char *leader = NULL;
    zkrc_election_leader_id(members[0], &leader, 5000);
    printf("  leader is %s; it resigns\n", leader ? leader : "(none)");
    free(leader);
    zkrc_election_resign(members[turn]);
    zkrc_election_wait_leader(members[turn + 1], 10000);
  }
  for (int i = 0; i < 3; i++)
    zkrc_election_free(members[i]);
}

static zkrc_rwlock *rwlock;

static void *second_reader(void *arg) {
  zkrc_lock *reader = zkrc_rwlock_reader(rwlock);
  int rc = zkrc_lock_acquire(reader, 10000);
  int64_t token = 0;
  zkrc_lock_token(reader, &token);
  printf("  another thread reads too (%s, token %" PRId64 ")\n",
         zkrc_strerror(rc), token);
  if (rc == ZKRC_OK)
    zkrc_lock_release(reader);
  return arg;
}

static void rwlock_demo(zkrc_session *s) {
  printf("3. A read-write lock on /demo/rwlock:\n");
  zkrc_rwlock_new(&rwlock, s, "/demo/rwlock", NULL);
  zkrc_lock *reader = zkrc_rwlock_reader(rwlock);
  zkrc_lock *writer = zkrc_rwlock_writer(rwlock);
  int64_t token = 0;
  if (zkrc_lock_acquire(writer, 10000) == ZKRC_OK) {
    zkrc_lock_token(writer, &token);
    printf("  the main thread writes (token %" PRId64 ")\n", token);
    zkrc_lock_acquire(reader, 10000); /* downgrade: admitted at once */
    zkrc_lock_release(writer);
    zkrc_lock_token(reader, &token);
    printf("  ... and now only reads (token %" PRId64 ")\n", token);
    pthread_t t;
    pthread_create(&t, NULL, second_reader, NULL);
    pthread_join(t, NULL);
    printf("  asking for the write side while reading: %s\n",
           zkrc_err_name(zkrc_lock_acquire(writer, 10000)));
    zkrc_lock_release(reader);
  }
  zkrc_rwlock_free(rwlock);
}

int main(void) {
  const char *hosts = getenv("ZKR_SERVERS");
  if (hosts == NULL)
    hosts = "127.0.0.1:2181";
  zkrc_log_from_env(); /* the ZooKeeper client's own log: silent */

  zkrc_session *session = NULL;
  int rc = zkrc_session_connect(&session, hosts, NULL);
  if (rc != ZKRC_OK) {
    fprintf(stderr, "zkr-demo: cannot connect to %s: %s\n", hosts,
            zkrc_strerror(rc));
    return 1;
  }
  printf("Connected to %s (session 0x%" PRIx64 ", timeout %d ms)\n", hosts,
         (uint64_t)zkrc_session_id(session), zkrc_session_timeout(session));

  zkrc_lock_new(&lock, session, "/demo/lock", NULL);
  lock_demo();
  zkrc_lock_free(lock);

  election_demo(session);
  rwlock_demo(session);
  zkrc_session_close(session);
  printf("Done: every node the demo created is gone with it.\n");
  return 0;
}
