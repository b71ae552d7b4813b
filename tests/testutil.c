/* Shared support for the CUnit test programs (see testutil.h). */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <CUnit/Basic.h>
#include <glib.h>

#include "testutil.h"

static zkrc_ensemble *ensemble;
/* The children's pids again, as a plain array the signal handler can read. */
static pid_t child_pids[256];
static volatile sig_atomic_t child_count;
static int cfg_members = 1, cfg_proxies = 0;
static int cfg_extended_types, cfg_reconfig;
static GArray *children; /* pids spawned */
static pid_t main_pid;

void zkt_configure(int members, int with_proxies) {
  cfg_members = members;
  cfg_proxies = with_proxies;
}

void zkt_configure_extended_types(void) { cfg_extended_types = 1; }

void zkt_configure_reconfig(void) { cfg_reconfig = 1; }

static int make_test_root(const char *hosts);

/* Started once, also when test threads ask for it first at the same time
 * (each would otherwise start an ensemble of its own). */
zkrc_ensemble *zkt_ensemble(void) {
  static GMutex starting;
  g_mutex_lock(&starting);
  if (ensemble == NULL) {
    zkrc_ensemble_options o;
    zkrc_ensemble_options_init(&o);
    o.members = cfg_members;
    o.with_proxies = cfg_proxies;
    o.extended_types = cfg_extended_types;
    o.reconfig = cfg_reconfig;
    o.no_fsync = 1;
    if (zkrc_ensemble_start(&ensemble, &o) != 0) {
      fprintf(stderr, "testutil: the ZooKeeper ensemble did not start\n");
      exit(2);
    }
    if (make_test_root(zkrc_ensemble_connect_string(ensemble)) != 0) {
      fprintf(stderr, "testutil: could not create /zkt\n");
      exit(2);
    }
  }
  zkrc_ensemble *e = ensemble;
  g_mutex_unlock(&starting);
  return e;
}

const char *zkt_hosts(void) {
  return zkrc_ensemble_connect_string(zkt_ensemble());
}

char *zkt_path(const char *tag) {
  static gint n; /* test threads may ask at once */
  return g_strdup_printf("/zkt/%s-%d-%d", tag, (int)getpid(),
                         g_atomic_int_add(&n, 1) + 1);
}

zkrc_session *zkt_session_with(int timeout_ms, int no_reopen) {
  zkrc_session_options o;
  zkrc_session_options_init(&o);
  o.session_timeout_ms = timeout_ms;
  o.connect_timeout_ms = 15000;
  o.no_reopen = no_reopen;
  zkrc_session *s = NULL;
  int rc = zkrc_session_connect(&s, zkt_hosts(), &o);
  if (rc != ZKRC_OK) {
    fprintf(stderr, "testutil: connect: %s\n", zkrc_strerror(rc));
    CU_FAIL_FATAL("could not connect to the test ensemble");
  }
  return s;
}

/* A session to @p hosts that knows the harness's tick. */
static zkrc_session *session_knowing_tick_to(const char *hosts, int timeout_ms,
                                             int no_reopen,
                                             const zkrc_executor *ex) {
  zkrc_session_options o;
  zkrc_session_options_init(&o);
  o.session_timeout_ms = timeout_ms;
  o.connect_timeout_ms = 15000;
  o.no_reopen = no_reopen;
  o.server_tick_ms = ZKT_TICK_MS;
  o.executor = ex;
  zkrc_session *s = NULL;
  CU_ASSERT_EQUAL_FATAL(zkrc_session_connect(&s, hosts, &o), ZKRC_OK);
  return s;
}

zkrc_session *zkt_direct_session(void) {
  return session_knowing_tick_to(
      zkrc_ensemble_direct_connect_string(zkt_ensemble()),
      ZKT_SESSION_TIMEOUT_MS, 0, NULL);
}

zkrc_session *zkt_session_knowing_tick(int timeout_ms, int no_reopen,
                                       const zkrc_executor *ex) {
  return session_knowing_tick_to(zkt_hosts(), timeout_ms, no_reopen, ex);
}

void zkt_make_path(zhandle_t *zh, const char *path) {
  char *copy = g_strdup(path);
  for (char *p = strchr(copy + 1, '/'); p; p = strchr(p + 1, '/')) {
    *p = '\0';
    zoo_create(zh, copy, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    *p = '/';
  }
  zoo_create(zh, copy, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
  g_free(copy);
}

zkrc_session *zkt_session(void) {
  return zkt_session_with(ZKT_SESSION_TIMEOUT_MS, 0);
}

/* ------------------------------------------------------------ raw handles */

typedef struct raw_wait {
  GMutex mu;
  GCond cond;
  int connected;
} raw_wait;

static void raw_watcher(zhandle_t *zh, int type, int state, const char *path,
                        void *ctx) {
  raw_wait *w = ctx;
  if (type != ZOO_SESSION_EVENT || w == NULL)
    return;
  g_mutex_lock(&w->mu);
  w->connected = state == ZOO_CONNECTED_STATE;
  g_cond_broadcast(&w->cond);
  g_mutex_unlock(&w->mu);
}

static void silent_log(const char *message) { (void)message; }

/* A raw handle to @p hosts, connected within 10 s; NULL if not. */
static zhandle_t *raw_connect(const char *hosts) {
  static raw_wait w; /* shared: only "connected" matters, checked below */
  static gsize init;
  if (g_once_init_enter(&init)) {
    g_mutex_init(&w.mu);
    g_cond_init(&w.cond);
    g_once_init_leave(&init, 1);
  }
  zhandle_t *zh = zookeeper_init2(hosts, raw_watcher, 10000, NULL, &w, 0,
                                  getenv("ZKR_LOG") ? NULL : silent_log);
  if (zh == NULL)
    return NULL;
  int64_t deadline = g_get_monotonic_time() + 10 * G_TIME_SPAN_SECOND;
  g_mutex_lock(&w.mu);
  while (zoo_state(zh) != ZOO_CONNECTED_STATE &&
         g_get_monotonic_time() < deadline)
    g_cond_wait_until(&w.cond, &w.mu, g_get_monotonic_time() + 50000);
  g_mutex_unlock(&w.mu);
  if (zoo_state(zh) != ZOO_CONNECTED_STATE) {
    zookeeper_close(zh);
    return NULL;
  }
  return zh;
}

zhandle_t *zkt_raw_to(const char *hosts) {
  zhandle_t *zh = raw_connect(hosts);
  if (zh == NULL)
    CU_FAIL_FATAL("raw handle did not connect within 10 s");
  return zh;
}

/* "/zkt", zkt_path()'s parent, made a plain persistent node as the
 * ensemble starts.  Made by a recipe it would be a container, which the
 * servers remove whenever it is empty: a peer that creates a path under
 * it (kazoo's ensure_path) then fails with NoNodeError by chance. */
static int make_test_root(const char *hosts) {
  zhandle_t *zh = raw_connect(hosts);
  if (zh == NULL)
    return -1;
  int rc = zoo_create(zh, "/zkt", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
  zookeeper_close(zh);
  return rc == ZOK || rc == ZNODEEXISTS ? 0 : -1;
}

zhandle_t *zkt_raw(void) { return zkt_raw_to(zkt_hosts()); }

int zkt_child_count(zhandle_t *zh, const char *path) {
  struct String_vector v = {0, NULL};
  int rc = zoo_get_children(zh, path, 0, &v);
  if (rc != ZOK)
    return -1;
  int n = v.count;
  deallocate_String_vector(&v);
  return n;
}

typedef struct sync_wait {
  GMutex mu;
  GCond cond;
  int done;
} sync_wait;

static void sync_done(int rc, const char *value, const void *data) {
  sync_wait *w = (sync_wait *)data;
  (void)rc;
  (void)value;
  g_mutex_lock(&w->mu);
  w->done = 1;
  g_cond_signal(&w->cond);
  g_mutex_unlock(&w->mu);
}

/* Let the member @p zh is connected to catch up with the leader, so that a
 * read after it sees every write committed before (ZooKeeper's reads are
 * only sequentially consistent per client). */
void zkt_sync(zhandle_t *zh, const char *path) {
  /* On the heap: after a timeout the completion may still come. */
  sync_wait *w = g_new0(sync_wait, 1);
  g_mutex_init(&w->mu);
  g_cond_init(&w->cond);
  /* Sent with w->mu held, which the wait lets go: the completion's lock
   * then follows our writes to w (ThreadSanitizer sees the hand-off by the
   * mutex; the client's own queue is not instrumented). */
  g_mutex_lock(&w->mu);
  if (zoo_async(zh, path, sync_done, w) == ZOK) {
    int64_t deadline = g_get_monotonic_time() + 10 * G_TIME_SPAN_SECOND;
    while (!w->done && g_cond_wait_until(&w->cond, &w->mu, deadline))
      ;
    int done = w->done;
    g_mutex_unlock(&w->mu);
    if (!done) /* w is left to the completion */
      CU_FAIL_FATAL("a sync with the leader took over 10 s");
  } else {
    g_mutex_unlock(&w->mu);
  }
  g_mutex_clear(&w->mu);
  g_cond_clear(&w->cond);
  g_free(w);
}

int zkt_nodes_left(zhandle_t *zh, const char *path) {
  zkt_sync(zh, path);
  struct String_vector v = {0, NULL};
  int rc = zoo_get_children(zh, path, 0, &v);
  if (rc == ZNONODE)
    return 0;
  if (rc != ZOK)
    return -1;
  for (int i = 0; i < v.count; i++)
    fprintf(stderr, "\nleft behind: %s/%s", path, v.data[i]);
  int n = v.count;
  deallocate_String_vector(&v);
  return n;
}

int zkt_semaphore_nodes_left(zhandle_t *zh, const char *path) {
  char *locks = g_strconcat(path, "/locks", NULL);
  char *leases = g_strconcat(path, "/leases", NULL);
  int a = zkt_nodes_left(zh, locks), b = zkt_nodes_left(zh, leases);
  g_free(locks);
  g_free(leases);
  return a < 0 || b < 0 ? -1 : a + b;
}

typedef struct semaphore_probe {
  zhandle_t *zh;
  const char *path;
} semaphore_probe;

static int semaphore_empty(void *arg) {
  semaphore_probe *p = arg;
  return zkt_semaphore_nodes_left(p->zh, p->path) == 0;
}

int zkt_wait_semaphore_empty(zhandle_t *zh, const char *path, int timeout_ms) {
  semaphore_probe p = {zh, path};
  return zkt_wait_for(semaphore_empty, &p, timeout_ms);
}

int zkt_exists(zhandle_t *zh, const char *path) {
  struct Stat st;
  return zoo_exists(zh, path, 0, &st) == ZOK;
}

int64_t zkt_czxid(zhandle_t *zh, const char *path) {
  struct Stat st;
  return zoo_exists(zh, path, 0, &st) == ZOK ? st.czxid : 0;
}

/* ------------------------------------------------------------- waiting */

int64_t zkt_now_ms(void) { return g_get_monotonic_time() / 1000; }

int zkt_wait_for(int (*check)(void *arg), void *arg, int timeout_ms) {
  int64_t deadline = zkt_now_ms() + timeout_ms;
  for (;;) {
    int r = check(arg);
    if (r || zkt_now_ms() >= deadline)
      return r;
    g_usleep(20000);
  }
}

typedef struct children_wait {
  zhandle_t *zh;
  const char *path;
  int count;
} children_wait;

static int children_are(void *arg) {
  children_wait *cw = arg;
  return zkt_child_count(cw->zh, cw->path) == cw->count;
}

int zkt_wait_children(zhandle_t *zh, const char *path, int count,
                      int timeout_ms) {
  children_wait cw = {zh, path, count};
  return zkt_wait_for(children_are, &cw, timeout_ms);
}

void zkt_expire(zkrc_session *s) {
  clientid_t id;
  CU_ASSERT_EQUAL_FATAL(zkrc_session_client_id(s, &id), ZKRC_OK);
  CU_ASSERT_EQUAL_FATAL(
      zkrc_ensemble_expire_session(zkt_ensemble(), &id, 10000), 0);
}

/* ------------------------------------------------------------ children */

pid_t zkt_spawn(int (*fn)(void *arg), void *arg) {
  /* Not fflush(NULL): it locks every stream, and a thread blocked reading
   * one would block us. */
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0)
    CU_FAIL_FATAL("fork failed");
  if (pid == 0) {
    /* The child must not run the parent's exit cleanup (ensemble stop). */
    int status = fn(arg);
    fflush(stdout);
    fflush(stderr);
    _exit(status);
  }
  zkt_track_child(pid);
  return pid;
}

static void sync_signal_copy(void) {
  /* What the signal handler may read without locks: a plain array. */
  child_count = 0;
  for (guint i = 0;
       children && i < children->len && i < G_N_ELEMENTS(child_pids); i++)
    child_pids[i] = g_array_index(children, pid_t, i);
  child_count =
      children ? (sig_atomic_t)MIN(children->len, G_N_ELEMENTS(child_pids)) : 0;
}

void zkt_track_child(pid_t pid) {
  if (children == NULL)
    children = g_array_new(FALSE, FALSE, sizeof(pid_t));
  g_array_append_val(children, pid);
  sync_signal_copy();
}

static void forget_child(pid_t pid) {
  for (guint i = 0; children && i < children->len; i++)
    if (g_array_index(children, pid_t, i) == pid) {
      g_array_remove_index_fast(children, i);
      break;
    }
  sync_signal_copy();
}

int zkt_wait_child(pid_t pid, int timeout_ms) {
  int64_t deadline = zkt_now_ms() + timeout_ms;
  int status;
  for (;;) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid)
      break;
    if (r < 0 && errno != EINTR) {
      forget_child(pid);
      return -1;
    }
    if (zkt_now_ms() >= deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      forget_child(pid);
      return -1;
    }
    g_usleep(5000);
  }
  forget_child(pid);
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

static void cleanup_at_exit(void) {
  if (getpid() != main_pid)
    return;
  for (guint i = 0; children && i < children->len; i++) {
    pid_t pid = g_array_index(children, pid_t, i);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
  }
  if (ensemble) {
    zkrc_ensemble_stop(ensemble);
    ensemble = NULL;
  }
}

/* ------------------------------------------------------------- running */

void zkt_report_rc(const char *file, int line, const char *expr, int expected,
                   int actual) {
  fprintf(stderr, "\n%s:%d: %s returned %s (%s), expected %s\n", file, line,
          expr, zkrc_err_name(actual), zkrc_strerror(actual),
          zkrc_err_name(expected));
}

void zkt_add_suite(const char *name, const zkt_test *tests, int count) {
  CU_pSuite suite = CU_add_suite(name, NULL, NULL);
  if (suite == NULL) {
    fprintf(stderr, "CU_add_suite: %s\n", CU_get_error_msg());
    exit(2);
  }
  for (int i = 0; i < count; i++)
    CU_add_test(suite, tests[i].name, tests[i].fn);
}

/* Interrupted (by run-test's time bound, or ^C): only async-signal-safe
 * calls here.  Kill the children we know of and leave; the harness's reaper
 * process sees us go and stops the ensemble and removes its directory. */
static void on_signal(int sig) {
  for (sig_atomic_t i = 0; i < child_count; i++)
    kill(child_pids[i], SIGKILL);
  _exit(128 + sig);
}

/* The tests that called zkt_skip(), for the summary. */
static GString *skipped_tests;
static unsigned skipped_count;

void zkt_skip(const char *why) {
  CU_pTest test = CU_get_current_test();
  const char *name = test && test->pName ? test->pName : "?";
  printf("SKIPPED (%s) ", why);
  if (skipped_tests == NULL)
    skipped_tests = g_string_new(NULL);
  g_string_append_printf(skipped_tests, "\n  %s: %s", name, why);
  skipped_count++;
}

int zkt_run(const char *program, void (*add_suites)(void)) {
  main_pid = getpid();
  setvbuf(stdout, NULL, _IOLBF, 0);
  zkrc_log_from_env();
  signal(SIGPIPE, SIG_IGN);
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);
  atexit(cleanup_at_exit);
  if (CU_initialize_registry() != CUE_SUCCESS)
    return 2;
  add_suites();
  CU_basic_set_mode(CU_BRM_VERBOSE);
  /* A single test may be chosen: ZKT_ONLY="suite:test". */
  const char *only = getenv("ZKT_ONLY");
  if (only) {
    char **parts = g_strsplit(only, ":", 2);
    CU_pSuite suite = CU_get_suite(parts[0]);
    CU_pTest test = suite && parts[1] ? CU_get_test(suite, parts[1]) : NULL;
    if (test)
      CU_basic_run_test(suite, test);
    else if (suite)
      CU_basic_run_suite(suite);
    else
      fprintf(stderr, "%s: no suite %s\n", program, parts[0]);
    g_strfreev(parts);
  } else {
    CU_basic_run_tests();
  }
  unsigned failed =
      CU_get_number_of_failures() + CU_get_number_of_tests_failed();
  unsigned ran = CU_get_number_of_tests_run();
  CU_cleanup_registry();
  printf("%s: %u tests run, %s\n", program, ran,
         failed ? "FAILURES" : "all passed");
  if (skipped_tests) {
    printf("%s: %u of them SKIPPED (not tested here):%s\n", program,
           skipped_count, skipped_tests->str);
    g_string_free(skipped_tests, TRUE);
  }
  return failed || ran == 0 ? 1 : 0;
}

char *zkt_digest_id(const char *cred) {
  guint8 sha[20];
  gsize len = sizeof sha;
  GChecksum *c = g_checksum_new(G_CHECKSUM_SHA1);
  g_checksum_update(c, (const guchar *)cred, (gssize)strlen(cred));
  g_checksum_get_digest(c, sha, &len);
  g_checksum_free(c);
  char *b64 = g_base64_encode(sha, len);
  const char *colon = strchr(cred, ':');
  char *id = g_strdup_printf("%.*s:%s", (int)(colon - cred), cred, b64);
  g_free(b64);
  return id;
}

int zkt_children_want_met(void *arg) {
  zkt_children_want *c = arg;
  int n = zkt_child_count(c->zh, c->path);
  return n == c->want || (c->want == 0 && n < 0);
}

int zkt_wait_children_or_gone(zhandle_t *zh, const char *path, int want,
                              int timeout_ms) {
  zkt_children_want c = {zh, path, want};
  return zkt_wait_for(zkt_children_want_met, &c, timeout_ms);
}

int zkt_children_now(zhandle_t *zh, const char *path) {
  int n = zkt_child_count(zh, path);
  return n < 0 ? 0 : n;
}

int zkt_session_reopened(void *arg) {
  zkt_reopened *r = arg;
  int64_t id = zkrc_session_id(r->s);
  return id != 0 && id != r->old_id;
}

struct ACL_vector *zkt_acl_no_read(void) {
  /* The C client's permission bits and ids are variables, not constants. */
  static struct ACL no_read[1];
  static struct ACL_vector v = {1, no_read};
  static gsize made = 0;
  if (g_once_init_enter(&made)) {
    no_read[0].perms =
        ZOO_PERM_CREATE | ZOO_PERM_DELETE | ZOO_PERM_WRITE | ZOO_PERM_ADMIN;
    no_read[0].id = ZOO_ANYONE_ID_UNSAFE;
    g_once_init_leave(&made, 1);
  }
  return &v;
}

void zkt_forbid_listing(zhandle_t *zh, const char *path) {
  CU_ASSERT_EQUAL_FATAL(zoo_set_acl(zh, path, -1, zkt_acl_no_read()), ZOK);
  struct String_vector kids = {0, NULL};
  CU_ASSERT_EQUAL(zoo_get_children(zh, path, 0, &kids), ZNOAUTH);
}

uint64_t zkt_requests_but_renewals(zkrc_session *s) {
  zkrc_session_stats st;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_get_stats(s, &st, sizeof st));
  return st.requests - st.renewals - st.keepalives;
}

size_t zkt_create_envelope(const char *path) {
  return 8 + 4 + strlen(path) + 4 + 27 + 4;
}

size_t zkt_set_envelope(const char *path) {
  return 8 + 4 + strlen(path) + 4 + 4;
}

uint64_t zkt_suspensions(zkrc_session *s) {
  zkrc_session_stats st;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_get_stats(s, &st, sizeof st));
  return st.suspensions;
}

char *zkt_pattern(size_t len) {
  char *p = g_malloc(len + 1);
  for (size_t i = 0; i < len; i++)
    p[i] = (char)('a' + (i * 7 + i / 26) % 26);
  p[len] = '\0';
  return p;
}

int zkt_data_is(zhandle_t *zh, const char *path, const char *want, size_t len) {
  int cap = (int)len + 1, got = cap;
  char *buf = g_malloc((gsize)cap);
  int same = zoo_get(zh, path, 0, buf, &got, NULL) == ZOK && got == (int)len &&
             memcmp(buf, want, len) == 0;
  g_free(buf);
  return same;
}

int zkt_session_watches(void *arg) {
  zkt_watch_seen *w = arg;
  char hex[32];
  snprintf(hex, sizeof hex, "0x%" PRIx64, (uint64_t)w->session);
  int found = 0;
  for (int m = 0; m < zkrc_ensemble_size(zkt_ensemble()) && !found; m++) {
    char *out = NULL;
    if (zkrc_ensemble_four_letter(zkt_ensemble(), m, "wchp", &out) != 0)
      continue;
    gchar **lines = g_strsplit(out, "\n", -1);
    for (int i = 0; lines[i] && !found; i++) {
      if (strcmp(g_strstrip(lines[i]), w->node) != 0)
        continue;
      for (int j = i + 1; lines[j] && lines[j][0] == '\t'; j++)
        if (strcmp(g_strstrip(lines[j]), hex) == 0)
          found = 1;
    }
    g_strfreev(lines);
    free(out);
  }
  return found;
}

void *zkt_acquire_once(void *data) {
  zkt_acquirer *a = data;
  a->rc = zkrc_lock_acquire(a->lk, a->timeout_ms);
  if (a->rc == ZKRC_OK) {
    zkrc_lock_token(a->lk, &a->token);
    zkrc_lock_release(a->lk);
  }
  return NULL;
}

zkrc_multilock *zkt_multilock_of(zkrc_lock *const *locks, size_t count,
                                 int *rc) {
  zkrc_multilock *ml = NULL;
  int err = zkrc_multilock_new(&ml);
  for (size_t i = 0; err == ZKRC_OK && i < count; i++)
    err = zkrc_multilock_add_lock(ml, locks ? locks[i] : NULL);
  if (rc)
    *rc = err;
  if (err != ZKRC_OK) {
    zkrc_multilock_free(ml);
    return NULL;
  }
  return ml;
}

int zkt_multilock_acquire_async(zkrc_lock *const *locks, size_t count,
                                int timeout_ms, zkrc_multilock_acquired_fn done,
                                void *arg, zkrc_multilock_hold **hold) {
  int rc;
  zkrc_multilock *ml = zkt_multilock_of(locks, count, &rc);
  if (ml == NULL)
    return rc; /* *hold left alone, as zkrc_multilock_acquire_async() */
  rc = zkrc_multilock_acquire_async(ml, timeout_ms, done, arg, hold);
  zkrc_multilock_free(ml);
  return rc;
}

const char *zkt_zk_error_name(int zk_rc) {
  switch (zk_rc) {
  case ZOK:
    return "ZOK";
  case ZCONNECTIONLOSS:
    return "ZCONNECTIONLOSS";
  case ZSESSIONEXPIRED:
    return "ZSESSIONEXPIRED";
  case ZAUTHFAILED:
    return "ZAUTHFAILED";
  case ZNONODE:
    return "ZNONODE";
  case ZNODEEXISTS:
    return "ZNODEEXISTS";
  case ZNOAUTH:
    return "ZNOAUTH";
  case ZUNIMPLEMENTED:
    return "ZUNIMPLEMENTED";
  default:
    return "ZOTHER";
  }
}

char *zkt_reason_text(char *buf, size_t size, int reason, int zk_error) {
  buf[0] = '\0';
  if (reason != ZKRC_OK)
    snprintf(buf, size, " %s", zkrc_err_name(reason));
  if (zk_error != ZOK) {
    size_t used = strlen(buf);
    snprintf(buf + used, size - used, " %s", zkt_zk_error_name(zk_error));
  }
  return buf;
}

int zkt_run_output(const char *const *argv, char *buf, size_t size,
                   int timeout_ms) {
  zkrc_spawn_options o;
  zkrc_spawn_options_init(&o);
  o.pipe_stdout = 1;
  zkrc_child child;
  buf[0] = '\0';
  if (zkrc_spawn(&child, (char *const *)argv, &o) != 0)
    return -1;
  int status = zkrc_child_wait(&child, timeout_ms);
  ssize_t got = read(child.out_fd, buf, size - 1);
  buf[got > 0 ? got : 0] = '\0';
  zkrc_child_close(&child);
  return status;
}
