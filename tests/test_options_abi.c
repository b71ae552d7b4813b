/*
 * The options structs' ABI (issue 31): *_options_init() is inline and
 * passes the size of the caller's struct, so that
 *
 *  - a program built against an older header, whose struct is shorter than
 *    the library's, is never written past its end: its struct, ending at a
 *    guard page, gets the defaults of the fields it has, and the library
 *    reads no more than it has;
 *  - a newer program, whose struct is longer, gets zeros in the fields the
 *    library does not know, and the library ignores them.
 *
 * The checker (a struct against a guard page) is proven by a control: the
 * old way of writing the library's whole size into it is killed by SIGSEGV.
 * No ZooKeeper server: a session's constructor connects in the background.
 */
#include "config.h"

#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>

#include "testutil.h"
#include "zkrecipes/cache.h"
#include "zkrecipes/discovery.h"
#include "zkrecipes/shared.h"
#include "zkrecipes/election.h"
#include "zkrecipes/ephemeral.h"
#include "zkrecipes/group.h"
#include "zkrecipes/lock.h"
#include "zkrecipes/partitioner.h"
#include "zkrecipes/rwlock.h"
#include "zkrecipes/semaphore.h"
#include "zkrecipes/stats.h"
#include "zkrecipes/counter.h"
#include "zkrecipes/ttlnode.h"

typedef void (*init_sized_fn)(void *opts, size_t size);
typedef void (*init_fn)(void *opts); /* the inline one, at our sizeof */

typedef struct kind {
  const char *name;
  init_sized_fn init;
  init_fn init_inline;
  size_t size; /* the library's struct, as this program sees it */
} kind;

/* Calls of each kind through one signature (not through a cast function
 * pointer, whose call would be undefined). */
#define KIND_FNS(type, stem)                                                   \
  static void stem##_sized(void *o, size_t n) { zkrc_##stem##_sized(o, n); }   \
  static void stem##_inline(void *o) { zkrc_##stem((type *)o); }
#define KIND(type, stem)                                                       \
  { #type, stem##_sized, stem##_inline, sizeof(type) }

KIND_FNS(zkrc_session_options, session_options_init)
KIND_FNS(zkrc_lock_options, lock_options_init)
KIND_FNS(zkrc_rwlock_options, rwlock_options_init)
KIND_FNS(zkrc_semaphore_options, semaphore_options_init)
KIND_FNS(zkrc_election_options, election_options_init)
KIND_FNS(zkrc_cache_options, cache_options_init)
KIND_FNS(zkrc_ephemeral_options, ephemeral_options_init)
KIND_FNS(zkrc_group_options, group_options_init)
KIND_FNS(zkrc_partitioner_options, partitioner_options_init)
KIND_FNS(zkrc_service_options, service_options_init)
KIND_FNS(zkrc_service_provider_options, service_provider_options_init)
KIND_FNS(zkrc_shared_watch_options, shared_watch_options_init)
KIND_FNS(zkrc_stats_sources, stats_sources_init)
KIND_FNS(zkrc_ensemble_options, ensemble_options_init)
KIND_FNS(zkrc_spawn_options, spawn_options_init)
KIND_FNS(zkrc_counter_options, counter_options_init)
KIND_FNS(zkrc_time_lease_options, time_lease_options_init)
KIND_FNS(zkrc_runner_options, runner_options_init)
KIND_FNS(zkrc_ttl_node_options, ttl_node_options_init)

static const kind kinds[] = {
    KIND(zkrc_session_options, session_options_init),
    KIND(zkrc_lock_options, lock_options_init),
    KIND(zkrc_rwlock_options, rwlock_options_init),
    KIND(zkrc_semaphore_options, semaphore_options_init),
    KIND(zkrc_election_options, election_options_init),
    KIND(zkrc_cache_options, cache_options_init),
    KIND(zkrc_ephemeral_options, ephemeral_options_init),
    KIND(zkrc_group_options, group_options_init),
    KIND(zkrc_partitioner_options, partitioner_options_init),
    KIND(zkrc_service_options, service_options_init),
    KIND(zkrc_service_provider_options, service_provider_options_init),
    KIND(zkrc_shared_watch_options, shared_watch_options_init),
    KIND(zkrc_stats_sources, stats_sources_init),
    KIND(zkrc_ensemble_options, ensemble_options_init),
    KIND(zkrc_spawn_options, spawn_options_init),
    KIND(zkrc_counter_options, counter_options_init),
    KIND(zkrc_time_lease_options, time_lease_options_init),
    KIND(zkrc_runner_options, runner_options_init),
    KIND(zkrc_ttl_node_options, ttl_node_options_init),
};

/* A size @p n rounded down to a multiple of 8, so that a struct ending at
 * the guard page is aligned as a real one is. */
static size_t aligned(size_t n) { return n & ~(size_t)7; }

/* ---------------------------------------------------- the guard page */

typedef struct guarded {
  unsigned char *map; /* two pages: the second one unreadable */
  size_t page;
} guarded;

/* @p size bytes ending exactly where the guard page begins. */
static void *guarded_new(guarded *g, size_t size) {
  g->page = (size_t)sysconf(_SC_PAGESIZE);
  g->map = mmap(NULL, 2 * g->page, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CU_ASSERT_FATAL(g->map != MAP_FAILED);
  CU_ASSERT_EQUAL_FATAL(mprotect(g->map + g->page, g->page, PROT_NONE), 0);
  return g->map + g->page - size;
}

static void guarded_free(guarded *g) { munmap(g->map, 2 * g->page); }

/* ----------------------------------------------------------- the tests */

/* Every struct one byte short of the library's, and half of it, against
 * the guard page: filled up to its end with the defaults, its size field
 * its own size. */
static void test_shorter_struct_is_not_overrun(void) {
  for (size_t k = 0; k < G_N_ELEMENTS(kinds); k++) {
    unsigned char *full = g_malloc(kinds[k].size);
    kinds[k].init(full, kinds[k].size);
    size_t shorter[] = {aligned(kinds[k].size - 1),
                        MAX(aligned(kinds[k].size / 2), 16)};
    for (size_t i = 0; i < G_N_ELEMENTS(shorter); i++) {
      guarded g;
      unsigned char *opts = guarded_new(&g, shorter[i]);
      memset(opts, 0xab, shorter[i]);
      kinds[k].init(opts, shorter[i]); /* an overrun: SIGSEGV */
      size_t said;
      memcpy(&said, opts, sizeof said);
      CU_ASSERT_EQUAL(said, shorter[i]);
      if (memcmp(opts + sizeof said, full + sizeof said,
                 shorter[i] - sizeof said) != 0) {
        fprintf(stderr, "%s: defaults differ in %zu bytes\n", kinds[k].name,
                shorter[i]);
        CU_FAIL("the fields the caller has are not the defaults");
      }
      guarded_free(&g);
    }
    g_free(full);
  }
}

/* The inline init, as a program calls it, sets the size of the struct as
 * the program sees it, and the defaults. */
static void test_inline_init_passes_the_programs_size(void) {
  for (size_t k = 0; k < G_N_ELEMENTS(kinds); k++) {
    unsigned char *by_inline = g_malloc(kinds[k].size);
    unsigned char *by_sized = g_malloc(kinds[k].size);
    memset(by_inline, 0xab, kinds[k].size);
    kinds[k].init_inline(by_inline);
    kinds[k].init(by_sized, kinds[k].size);
    size_t said;
    memcpy(&said, by_inline, sizeof said);
    CU_ASSERT_EQUAL(said, kinds[k].size);
    CU_ASSERT_EQUAL(memcmp(by_inline, by_sized, kinds[k].size), 0);
    g_free(by_inline);
    g_free(by_sized);
  }
  /* One default by its documented value, not by the library's other
   * call: a session's timeout is 10 s. */
  zkrc_session_options o;
  zkrc_session_options_init(&o);
  CU_ASSERT_EQUAL(o.session_timeout_ms, 10000);
}

/* A struct longer than the library's: the defaults, then zeros where the
 * library knows nothing, and its size field its own size. */
static void test_longer_struct_gets_zeros_past_ours(void) {
  enum { MORE = 64 };
  for (size_t k = 0; k < G_N_ELEMENTS(kinds); k++) {
    size_t size = kinds[k].size + MORE;
    unsigned char *full = g_malloc(kinds[k].size);
    kinds[k].init(full, kinds[k].size);
    guarded g;
    unsigned char *opts = guarded_new(&g, size);
    memset(opts, 0xab, size);
    kinds[k].init(opts, size);
    size_t said;
    memcpy(&said, opts, sizeof said);
    CU_ASSERT_EQUAL(said, size);
    CU_ASSERT_EQUAL(memcmp(opts + sizeof said, full + sizeof said,
                           kinds[k].size - sizeof said),
                    0);
    static const unsigned char zeros[MORE];
    CU_ASSERT_EQUAL(memcmp(opts + kinds[k].size, zeros, MORE), 0);
    guarded_free(&g);
    g_free(full);
  }
}

/* A session made from a shorter struct and from a longer one: the fields
 * given are used, nothing past the struct is read (the guard page), and
 * what the library does not know is ignored. */
static void test_constructor_reads_only_the_callers_struct(void) {
  size_t sizes[] = {offsetof(zkrc_session_options, connect_timeout_ms) +
                        sizeof(int),
                    sizeof(zkrc_session_options) + 64};
  for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
    guarded g;
    zkrc_session_options *o = guarded_new(&g, sizes[i]);
    zkrc_session_options_init_sized(o, sizes[i]);
    o->session_timeout_ms = 3000;
    zkrc_session *s = NULL;
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_new(&s, "127.0.0.1:1", o));
    CU_ASSERT_EQUAL(zkrc_session_timeout(s), 3000);
    zkrc_session_close(s);
    guarded_free(&g);
  }
}

/* The statistics' sources, shorter (no elections: they are none) and
 * longer than the library's, are read as far as they go. */
static void test_stats_sources_read_as_far_as_they_go(void) {
  size_t sizes[] = {offsetof(zkrc_stats_sources, n_sessions) + sizeof(size_t),
                    sizeof(zkrc_stats_sources) + 64};
  for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
    guarded g;
    zkrc_stats_sources *src = guarded_new(&g, sizes[i]);
    zkrc_stats_sources_init_sized(src, sizes[i]);
    char *text = zkrc_stats_prometheus(src);
    CU_ASSERT_PTR_NOT_NULL(text);
    free(text);
    guarded_free(&g);
  }
}

/* The control: writing the library's whole struct into one a byte shorter,
 * as *_options_init() did before, is caught by the guard page. */
static void test_control_overrun_is_caught(void) {
  guarded g;
  unsigned char *opts = guarded_new(&g, sizeof(zkrc_lock_options) - 1);
  fflush(NULL);
  pid_t pid = fork();
  CU_ASSERT_FATAL(pid >= 0);
  if (pid == 0) {
    signal(SIGSEGV, SIG_DFL); /* not a sanitizer's report and exit */
    memset(opts, 0, sizeof(zkrc_lock_options)); /* one byte too many */
    _exit(0);
  }
  int status = 0;
  CU_ASSERT_EQUAL_FATAL(waitpid(pid, &status, 0), pid);
  /* Killed by the fault; under ASan, which may keep its handler, its
   * report and a failing exit. */
  CU_ASSERT_TRUE((WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV) ||
                 (WIFEXITED(status) && WEXITSTATUS(status) != 0));
  guarded_free(&g);
}

static void add_suites(void) {
  ZKT_SUITE(
      "options ABI",
      {"the inline init passes the program's size",
       test_inline_init_passes_the_programs_size},
      {"a shorter struct is not overrun", test_shorter_struct_is_not_overrun},
      {"a longer struct gets zeros past ours",
       test_longer_struct_gets_zeros_past_ours},
      {"a constructor reads only the caller's struct",
       test_constructor_reads_only_the_callers_struct},
      {"the statistics' sources are read as far as they go",
       test_stats_sources_read_as_far_as_they_go},
      {"control: an overrun is caught by the guard page",
       test_control_overrun_is_caught});
}

int main(void) { return zkt_run("test_options_abi", add_suites); }
