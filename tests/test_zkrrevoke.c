/*
 * tests/test_zkrrevoke.c - lock revocation from the command line (issue
 * 34), run as built (tools/zkr): `zkr lock --revocable' stops COMMAND
 * with its lost signal when `zkr revoke' asks, and releases once COMMAND
 * exited (or releases at once without COMMAND, or gives up waiting); a
 * lock that is not revocable keeps its holder; `zkr revoke''s exit
 * statuses; and both ways with Curator 5.4's real classes
 * (tests/peers/CuratorRevokePeer.java).
 */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "interop_peers.h"
#include "testutil.h"
#include "toolproc.h"

#define ZKR TOP_BUILDDIR "/tools/zkr"

/* zkr's exit statuses (zkr(1)). */
#define EXIT_NOT_ACQUIRED 1
#define EXIT_USAGE 2
#define EXIT_BAD_PATH 65

#define EXIT_TIMEOUT 15000 /* a tool exits once it should */

/* zkr SUBCOMMAND --servers HOSTS -t 2000 --server-tick 200 ARGS... */
static proc *zkr_start(const char *sub, const char *const *args) {
  const char *argv[40] = {
      ZKR,  sub,    "--servers",     zkt_hosts(),
      "-t", "2000", "--server-tick", G_STRINGIFY(ZKT_TICK_MS)};
  int n = 8;
  for (int i = 0; args[i] && n < 39; i++)
    argv[n++] = args[i];
  argv[n] = NULL;
  return proc_start(argv);
}

/* zkr revoke ARGS... run to its end: its exit status, its stdout in
 * *@p out when not NULL (g_free it). */
static int zkr_revoke(const char *const *args, char **out) {
  proc *p = zkr_start("revoke", args);
  int status = proc_wait(p, EXIT_TIMEOUT);
  if (out)
    *out = g_strdup(p->out->str);
  proc_free(p);
  return status;
}

/* The @p nth (from 0, in queue order) contender's node of the lock at
 * @p path, as a full path (g_free it), or NULL. */
static char *contender(zkrc_session *s, const char *path, size_t nth) {
  zkrc_participant *v = NULL;
  size_t n = 0;
  if (zkrc_lock_list(s, path, &v, &n, STEP_MS) != ZKRC_OK || n <= nth) {
    zkrc_participants_free(v, n);
    return NULL;
  }
  char *node = g_strdup_printf("%s/%s", path, v[nth].node);
  zkrc_participants_free(v, n);
  return node;
}

/* `zkr lock -v [--format FORMAT] --revocable PATH -- sleep 60', once it
 * runs COMMAND (a request before that: not started, status 1); its node,
 * the lock's first contender, in *@p node (g_free it). */
static proc *revocable_holder(zkrc_session *s, const char *path,
                              const char *format, char **node) {
  const char *lock_args[10];
  int n = 0;
  lock_args[n++] = "-v";
  if (format) {
    lock_args[n++] = "--format";
    lock_args[n++] = format;
  }
  const char *rest[] = {"--revocable", path, "--", "sleep", "60", NULL};
  for (size_t i = 0; i < G_N_ELEMENTS(rest); i++)
    lock_args[n++] = rest[i];
  proc *holder = zkr_start("lock", lock_args);
  CU_ASSERT_FATAL(proc_wait_text(holder, 1, "running sleep", STEP_MS));
  *node = contender(s, path, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(*node);
  return holder;
}

/* COMMAND gets the lost signal at `zkr revoke LOCKPATH' (which prints the
 * node it asked); zkr lock exits with COMMAND's status (143: SIGTERM) and
 * the lock is free. */
static void test_command_stopped(void) {
  char *path = zkt_path("zkr-revoke-command");
  zkrc_session *s = zkt_session();
  zhandle_t *zh = zkt_raw();
  char *node = NULL;
  proc *holder = revocable_holder(s, path, NULL, &node);

  char *out = NULL;
  const char *args[] = {path, NULL};
  CU_ASSERT_EQUAL(zkr_revoke(args, &out), 0);
  char *want = g_strconcat(node, "\n", NULL);
  CU_ASSERT_STRING_EQUAL(out, want);
  CU_ASSERT_EQUAL(proc_wait(holder, EXIT_TIMEOUT), 128 + SIGTERM);
  CU_ASSERT_PTR_NOT_NULL(strstr(holder->err->str, "revocation"));
  CU_ASSERT(zkt_wait_children_or_gone(zh, path, 0, STEP_MS));
  proc_free(holder);
  g_free(want);
  g_free(out);
  g_free(node);
  zookeeper_close(zh);
  zkrc_session_close(s);
  g_free(path);
}

/* Without COMMAND, zkr lock --revocable releases at once and exits 0; a
 * revocable waiter asked by NODE (its name) gives up with the -E status,
 * and the holder it waited for is not asked. */
static void test_hold_and_waiter(void) {
  char *path = zkt_path("zkr-revoke-hold");
  zkrc_session *s = zkt_session();
  zhandle_t *zh = zkt_raw();
  const char *hold_args[] = {"--revocable", path, NULL};
  proc *holder = zkr_start("lock", hold_args);
  CU_ASSERT_FATAL(zkt_wait_children(zh, path, 1, STEP_MS));
  char *holder_node = contender(s, path, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(holder_node);
  const char *wait_args[] = {"--revocable", "-E",   "9", path,
                             "--",          "true", NULL};
  proc *waiter = zkr_start("lock", wait_args);
  CU_ASSERT_FATAL(zkt_wait_children(zh, path, 2, STEP_MS));
  char *waiter_node = contender(s, path, 1);
  CU_ASSERT_PTR_NOT_NULL_FATAL(waiter_node);

  const char *by_name[] = {path, strrchr(waiter_node, '/') + 1, NULL};
  CU_ASSERT_EQUAL(zkr_revoke(by_name, NULL), 0);
  CU_ASSERT_EQUAL(proc_wait(waiter, EXIT_TIMEOUT), 9);
  CU_ASSERT(zkt_wait_children(zh, path, 1, STEP_MS));
  char *left = contender(s, path, 0); /* the holder's, not asked */
  CU_ASSERT_PTR_NOT_NULL(left);
  if (left)
    CU_ASSERT_STRING_EQUAL(left, holder_node);
  CU_ASSERT_FALSE(zkt_data_is(zh, holder_node, "__REVOKE__", 10));
  g_free(left);

  const char *args[] = {path, NULL};
  CU_ASSERT_EQUAL(zkr_revoke(args, NULL), 0);
  CU_ASSERT_EQUAL(proc_wait(holder, EXIT_TIMEOUT), 0);
  CU_ASSERT(zkt_wait_children_or_gone(zh, path, 0, STEP_MS));
  proc_free(waiter);
  proc_free(holder);
  g_free(waiter_node);
  g_free(holder_node);
  zookeeper_close(zh);
  zkrc_session_close(s);
  g_free(path);
}

/* A zkr lock without --revocable keeps the lock: its node now reads
 * "__REVOKE__", another zkr lock -n finds it busy, and it releases at
 * SIGTERM as ever (exit 0). */
static void test_not_revocable(void) {
  char *path = zkt_path("zkr-revoke-plain");
  zkrc_session *s = zkt_session();
  zhandle_t *zh = zkt_raw();
  const char *hold_args[] = {path, NULL};
  proc *holder = zkr_start("lock", hold_args);
  CU_ASSERT_FATAL(zkt_wait_children(zh, path, 1, STEP_MS));
  char *node = contender(s, path, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(node);
  const char *args[] = {path, node, NULL}; /* NODE as a full path */
  CU_ASSERT_EQUAL(zkr_revoke(args, NULL), 0);
  CU_ASSERT(zkt_data_is(zh, node, "__REVOKE__", 10));
  const char *try_args[] = {"-n", path, "--", "true", NULL};
  proc *other = zkr_start("lock", try_args);
  CU_ASSERT_EQUAL(proc_wait(other, EXIT_TIMEOUT), EXIT_NOT_ACQUIRED);
  CU_ASSERT(zkt_exists(zh, node));
  kill(holder->child.pid, SIGTERM);
  CU_ASSERT_EQUAL(proc_wait(holder, EXIT_TIMEOUT), 0);
  proc_free(other);
  proc_free(holder);
  g_free(node);
  zookeeper_close(zh);
  zkrc_session_close(s);
  g_free(path);
}

/* zkr revoke's refusals and "nothing to ask": nothing is written. */
static void test_statuses(void) {
  char *path = zkt_path("zkr-revoke-statuses");
  zhandle_t *zh = zkt_raw();
  const char *free_lock[] = {path, NULL};
  CU_ASSERT_EQUAL(zkr_revoke(free_lock, NULL), EXIT_NOT_ACQUIRED);
  const char *missing[] = {
      path, "_c_00000000-0000-4000-8000-000000000000-lock-0000000003", NULL};
  CU_ASSERT_EQUAL(zkr_revoke(missing, NULL), EXIT_NOT_ACQUIRED);
  CU_ASSERT_FALSE(zkt_exists(zh, path));
  const char *not_lock[] = {path, "member-0000000001", NULL};
  CU_ASSERT_EQUAL(zkr_revoke(not_lock, NULL), EXIT_BAD_PATH);
  const char *elsewhere[] = {path, "/other/lock-0000000001", NULL};
  CU_ASSERT_EQUAL(zkr_revoke(elsewhere, NULL), EXIT_BAD_PATH);
  const char *bad_path[] = {"no-slash", NULL};
  CU_ASSERT_EQUAL(zkr_revoke(bad_path, NULL), EXIT_BAD_PATH);
  const char *none[] = {NULL};
  CU_ASSERT_EQUAL(zkr_revoke(none, NULL), EXIT_USAGE);
  const char *three[] = {path, "lock-0000000001", "extra", NULL};
  CU_ASSERT_EQUAL(zkr_revoke(three, NULL), EXIT_USAGE);
  const char *limit[] = {"--revocable", "--limit", "2", path,
                         "--",          "true",    NULL};
  proc *p = zkr_start("lock", limit);
  CU_ASSERT_EQUAL(proc_wait(p, EXIT_TIMEOUT), EXIT_USAGE);
  proc_free(p);
  CU_ASSERT_FALSE(zkt_exists(zh, path));
  zookeeper_close(zh);
  g_free(path);
}

/* ------------------------------------------------- Curator, both ways */

#define REVOKE_PEER "CuratorRevokePeer"

/* `zkr revoke LOCKPATH' makes a revocable Curator holder release. */
static void test_curator_holder(void) {
  kill_live_peers();
  char *path = zkt_path("zkr-revoke-curator");
  peer *p = curator_class_peer("curator-holder", REVOKE_PEER, "hold", path,
                               "curator", (char *)NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  char *node = peer_expect(p, "acquired", START_MS);
  CU_ASSERT_PTR_NOT_NULL_FATAL(node);
  char *out = NULL;
  const char *args[] = {path, NULL};
  CU_ASSERT_EQUAL(zkr_revoke(args, &out), 0);
  CU_ASSERT(g_str_has_prefix(out, node));
  char *line = peer_expect(p, "revoke-requested", STEP_MS);
  CU_ASSERT_PTR_NOT_NULL(line);
  g_free(line);
  CU_ASSERT_EQUAL(peer_finish(p, STEP_MS), 0);
  g_free(out);
  g_free(node);
  g_free(path);
}

/* Curator's Revoker.attemptRevoke() stops zkr lock --revocable's COMMAND. */
static void test_curator_revoker(void) {
  kill_live_peers();
  char *path = zkt_path("zkr-revoke-by-curator");
  zkrc_session *s = zkt_session();
  zhandle_t *zh = zkt_raw();
  char *node = NULL;
  proc *holder = revocable_holder(s, path, NULL, &node);
  peer *p = curator_class_peer("curator-revoker", REVOKE_PEER, "revoke", node,
                               (char *)NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  char *line = peer_expect(p, "revoked", START_MS);
  CU_ASSERT_PTR_NOT_NULL(line);
  g_free(line);
  CU_ASSERT_EQUAL(peer_finish(p, STEP_MS), 0);
  CU_ASSERT_EQUAL(proc_wait(holder, EXIT_TIMEOUT), 128 + SIGTERM);
  CU_ASSERT(zkt_wait_children_or_gone(zh, path, 0, STEP_MS));
  proc_free(holder);
  g_free(node);
  zookeeper_close(zh);
  zkrc_session_close(s);
  g_free(path);
}

static void cleanup_at_exit(void) {
  proc_free_all();
  kill_live_peers();
}

/* zkr lock --format kazoo: its node carries kazoo's "__lock__" marker,
 * and revocation works on it as on Curator's; a format it does not know,
 * or kazoo's with a read-write lock's side, is a usage error. */
static void test_kazoo_format(void) {
  char *path = zkt_path("zkr-lock-kazoo");
  zkrc_session *s = zkt_session();
  zhandle_t *zh = zkt_raw();
  char *node = NULL;
  proc *holder = revocable_holder(s, path, "kazoo", &node);
  CU_ASSERT_PTR_NOT_NULL(strstr(node, "-__lock__"));
  const char *args[] = {path, NULL};
  CU_ASSERT_EQUAL(zkr_revoke(args, NULL), 0);
  CU_ASSERT_EQUAL(proc_wait(holder, EXIT_TIMEOUT), 128 + SIGTERM);
  CU_ASSERT(zkt_wait_children_or_gone(zh, path, 0, STEP_MS));
  proc_free(holder);
  const char *bad[] = {"--format", "zk", path, "--", "true", NULL};
  const char *shared[] = {"--format", "kazoo", "-s", path, "--", "true", NULL};
  proc *p = zkr_start("lock", bad);
  CU_ASSERT_EQUAL(proc_wait(p, EXIT_TIMEOUT), EXIT_USAGE);
  proc_free(p);
  p = zkr_start("lock", shared);
  CU_ASSERT_EQUAL(proc_wait(p, EXIT_TIMEOUT), EXIT_USAGE);
  proc_free(p);
  g_free(node);
  zookeeper_close(zh);
  zkrc_session_close(s);
  g_free(path);
}

static void add_suites(void) {
  atexit(cleanup_at_exit); /* runs before the ensemble is stopped */
  ZKT_SUITE("zkr revoke", {"command stopped", test_command_stopped},
            {"hold and waiter", test_hold_and_waiter},
            {"not revocable", test_not_revocable}, {"statuses", test_statuses},
            {"zkr lock --format kazoo", test_kazoo_format});
  ZKT_SUITE("zkr revoke curator", {"curator holder", test_curator_holder},
            {"curator revoker", test_curator_revoker});
}

int main(void) { return zkt_run("test_zkrrevoke", add_suites); }
