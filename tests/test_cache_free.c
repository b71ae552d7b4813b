/*
 * How caches and shared watches end (zkrecipes/cache.h, shared.h; HACKING,
 * "The contract: one object model"), against a one-member ensemble behind
 * a fault proxy:
 *
 *  - free_async delivers the events queued before it (a listener held up
 *    while changes queue behind it), then `done`, on the executor, and
 *    nothing after; it returns while the listener is still held up;
 *  - free_async from the object's own callback;
 *  - free and free_async before and after the session's close (done comes
 *    after the session is closed too);
 *  - with the connection frozen (black-holed) and reads in flight, free
 *    returns at once and free_async's done comes at once;
 *  - bad input: ZKRC_EINVAL, and the object goes on as before.
 *
 * "Nothing after done" is shown as the other tests of the library show
 * it: after done, changes are made, a witness cache on the same session
 * (same executor) is told a later change, the session is closed (every
 * callback posted has run by then), and the count has not moved.
 */
#include "config.h"

#include <string.h>

#include <glib.h>

#include "cache_check.h"
#include "testutil.h"
#include "zkrecipes/cache.h"
#include "zkrecipes/shared.h"

/* A frozen connection lasts this long unless the test ends it: far longer
 * than any free may take. */
#define FREEZE_MS 60000
/* What "at once" means here: well under the session timeout, and nothing
 * that waited for the frozen connection could take less. */
#define AT_ONCE_MS 1000

static zhandle_t *direct(void) {
  return zkt_raw_to(zkrc_ensemble_direct_connect_string(zkt_ensemble()));
}

static char *child(const char *parent, const char *name) {
  return g_strconcat(parent, "/", name, NULL);
}

static void create_node(zhandle_t *zh, const char *path, const char *data) {
  CU_ASSERT_EQUAL(zoo_create(zh, path, data, (int)strlen(data),
                             &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0),
                  ZOK);
}

/* ------------------------------------------------------------ recorder */

/* What one object (a cache or a shared watch) told, and its `done`. */
typedef struct rec {
  GMutex mu;
  GCond cond;
  int events;      /* callback calls */
  int lost;        /* of which LOST */
  int in_callback; /* a callback is running now */
  int done;        /* done calls */
  int events_at_done, in_callback_at_done;
  int after_done; /* callback calls after done */
  GThread *event_thread, *done_thread;
  int threads_differ; /* a callback or done ran on another thread */
  /* The latest mzxid told for `leaf`, and that value when done ran. */
  const char *leaf;
  int64_t leaf_mzxid, leaf_mzxid_at_done;
  /* Hold the first callback until `gate` (set by the test). */
  int block_first, blocked, gate;
  /* Free with free_async from the callback told `trigger` (a cache's
   * ADDED, a watch's first VALUE when trigger is ""). */
  const char *trigger;
  void *obj;
  int free_rc, frees;
} rec;

static void rec_init(rec *r) {
  memset(r, 0, sizeof *r);
  g_mutex_init(&r->mu);
  g_cond_init(&r->cond);
}

static void rec_clear(rec *r) {
  g_mutex_clear(&r->mu);
  g_cond_clear(&r->cond);
}

/* Under r->mu: the thread everything of this object runs on. */
static void rec_thread(rec *r, GThread **slot) {
  GThread *self = g_thread_self();
  *slot = self;
  if (r->event_thread && r->event_thread != self)
    r->threads_differ = 1;
  if (r->done_thread && r->done_thread != self)
    r->threads_differ = 1;
}

static void on_done(void *arg) {
  rec *r = arg;
  g_mutex_lock(&r->mu);
  r->done++;
  r->events_at_done = r->events;
  r->in_callback_at_done = r->in_callback;
  r->leaf_mzxid_at_done = r->leaf_mzxid;
  rec_thread(r, &r->done_thread);
  g_cond_broadcast(&r->cond);
  g_mutex_unlock(&r->mu);
}

/* Wait until *@p flag is at least @p want, at most @p timeout_ms. */
static int rec_wait(rec *r, const int *flag, int want, int timeout_ms) {
  int64_t deadline = g_get_monotonic_time() + (int64_t)timeout_ms * 1000;
  g_mutex_lock(&r->mu);
  while (*flag < want && g_cond_wait_until(&r->cond, &r->mu, deadline))
    ;
  int ok = *flag >= want;
  g_mutex_unlock(&r->mu);
  return ok;
}

static void rec_open_gate(rec *r) {
  g_mutex_lock(&r->mu);
  r->gate = 1;
  g_cond_broadcast(&r->cond);
  g_mutex_unlock(&r->mu);
}

/* One callback call: counted; held up when it is the first and the test
 * asked; TRUE when it is the one to free from. */
static gboolean rec_event(rec *r, int lost, const char *path, int64_t mzxid) {
  g_mutex_lock(&r->mu);
  r->events++;
  r->in_callback = 1;
  r->after_done += r->done;
  r->lost += lost;
  rec_thread(r, &r->event_thread);
  if (path && r->leaf && strcmp(path, r->leaf) == 0)
    r->leaf_mzxid = mzxid;
  if (r->block_first && r->events == 1) {
    r->blocked = 1;
    g_cond_broadcast(&r->cond);
    int64_t deadline = g_get_monotonic_time() + 15 * G_TIME_SPAN_SECOND;
    while (!r->gate && g_cond_wait_until(&r->cond, &r->mu, deadline))
      ;
  }
  gboolean mine = r->trigger && r->frees == 0 && path &&
                  (r->trigger[0] == '\0' || strcmp(path, r->trigger) == 0);
  if (mine)
    r->frees++;
  g_cond_broadcast(&r->cond);
  g_mutex_unlock(&r->mu);
  return mine;
}

/* The free_async called from the callback returned @p rc. */
static void rec_freed(rec *r, int rc) {
  g_mutex_lock(&r->mu);
  r->free_rc = rc;
  g_mutex_unlock(&r->mu);
}

static void rec_event_end(rec *r) {
  g_mutex_lock(&r->mu);
  r->in_callback = 0;
  g_mutex_unlock(&r->mu);
}

static void cache_listener(zkrc_cache *c, const zkrc_cache_event *ev,
                           void *arg) {
  rec *r = arg;
  const zkrc_cache_node *n = ev->node;
  gboolean added = ev->type == ZKRC_CACHE_NODE_ADDED;
  if (rec_event(r, ev->type == ZKRC_CACHE_LOST,
                n && (added || ev->type == ZKRC_CACHE_NODE_UPDATED) ? n->path
                                                                    : NULL,
                n ? n->stat.mzxid : 0) &&
      added) {
    rec_freed(r, zkrc_cache_free_async(c, on_done, r));
  }
  rec_event_end(r);
}

static zkrc_cache *cache_on(zkrc_session *s, const char *path, rec *r) {
  zkrc_cache_options o;
  zkrc_cache_options_init(&o);
  o.on_event = cache_listener;
  o.event_arg = r;
  zkrc_cache *c = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_tree_cache_new(&c, s, path, &o));
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  r->obj = c;
  return c;
}

static void watch_listener(zkrc_shared_watch *w,
                           const zkrc_shared_watch_event *ev, void *arg) {
  rec *r = arg;
  gboolean value = ev->type == ZKRC_SHARED_WATCH_VALUE && ev->value;
  if (rec_event(r, ev->type == ZKRC_SHARED_WATCH_LOST, value ? "" : NULL, 0)) {
    rec_freed(r, zkrc_shared_watch_free_async(w, on_done, r));
  }
  rec_event_end(r);
}

static zkrc_shared_watch *watch_on(zkrc_session *s, const char *path, rec *r) {
  zkrc_shared_watch_options o;
  zkrc_shared_watch_options_init(&o);
  o.on_event = watch_listener;
  o.event_arg = r;
  zkrc_shared_watch *w = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_shared_watch_new(&w, s, path, &o));
  CU_ASSERT_PTR_NOT_NULL_FATAL(w);
  r->obj = w;
  return w;
}

/* After done: a change under @p changed, then a witness's own change told
 * on the same session; then the session closed (every callback posted has
 * run).  Nothing may have reached @p r after done. */
static void assert_quiet_after_done(zhandle_t *zh, zkrc_session *s,
                                    const char *changed, rec *r) {
  char *w = g_strconcat(changed, "-witness", NULL);
  char *after = child(changed, "after-done");
  rec wr;
  rec_init(&wr);
  zkrc_cache *witness = cache_on(s, w, &wr);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_cache_wait_initialized(witness, 10000));
  create_node(zh, after, "x");
  create_node(zh, w, "w");
  CU_ASSERT_TRUE(rec_wait(&wr, &wr.events, 2, 10000)); /* INITIALIZED, ADDED */
  zkrc_cache_free(witness);
  zkrc_session_close(s);
  g_mutex_lock(&r->mu);
  CU_ASSERT_EQUAL(r->done, 1);
  CU_ASSERT_EQUAL(r->after_done, 0);
  CU_ASSERT_EQUAL(r->events, r->events_at_done);
  CU_ASSERT_EQUAL(r->threads_differ, 0);
  g_mutex_unlock(&r->mu);
  rec_clear(&wr);
  g_free(after);
  g_free(w);
}

/* -------------------------------------------------------------- caches */

/* The listener is held in its first call while 30 changes of a node
 * queue behind it; free_async returns at once all the same; once let go,
 * every queued event is told, the last change among them, then done, on
 * the executor's thread, and nothing after. */
static void test_free_async_tells_the_queued_events_then_done(void) {
  char *t = zkt_path("free-async-queued");
  char *leaf = child(t, "leaf");
  zhandle_t *zh = direct();
  zkt_make_path(zh, t);
  create_node(zh, leaf, "0");
  zkrc_session *s = zkt_session();
  rec r;
  rec_init(&r);
  r.block_first = 1;
  r.leaf = leaf;
  zkrc_cache *c = cache_on(s, t, &r);
  CU_ASSERT_TRUE_FATAL(rec_wait(&r, &r.blocked, 1, 10000));
  struct Stat st;
  for (int i = 1; i <= 30; i++) {
    char data[16];
    g_snprintf(data, sizeof data, "v%d", i);
    CU_ASSERT_EQUAL(zoo_set2(zh, leaf, data, (int)strlen(data), -1, &st), ZOK);
  }
  cc_copy_has h = {c, leaf, st.mzxid};
  CU_ASSERT_TRUE(zkt_wait_for(cc_copy_has_change, &h, 10000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_cache_free_async(c, on_done, &r));
  g_mutex_lock(&r.mu);
  CU_ASSERT_EQUAL(r.done, 0); /* the listener is still held: */
  CU_ASSERT_EQUAL(r.gate, 0); /* free_async did not wait for it */
  CU_ASSERT_EQUAL(r.events, 1);
  g_mutex_unlock(&r.mu);
  rec_open_gate(&r);
  CU_ASSERT_TRUE_FATAL(rec_wait(&r, &r.done, 1, 10000));
  g_mutex_lock(&r.mu);
  CU_ASSERT_TRUE(r.events_at_done > 1);
  CU_ASSERT_EQUAL(r.leaf_mzxid_at_done, st.mzxid); /* queued before */
  CU_ASSERT_EQUAL(r.in_callback_at_done, 0);
  g_mutex_unlock(&r.mu);
  assert_quiet_after_done(zh, s, t, &r);
  rec_clear(&r);
  zookeeper_close(zh);
  g_free(leaf), g_free(t);
}

/* free_async from the listener's own call (the trigger's ADDED): it
 * returns ZKRC_OK there, done comes after that call has returned, once,
 * and nothing after. */
static void test_free_async_from_its_own_listener(void) {
  char *t = zkt_path("free-async-inside");
  char *trigger = child(t, "trigger");
  zhandle_t *zh = direct();
  zkt_make_path(zh, t);
  zkrc_session *s = zkt_session();
  rec r;
  rec_init(&r);
  r.trigger = trigger;
  zkrc_cache *c = cache_on(s, t, &r);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_cache_wait_initialized(c, 10000));
  create_node(zh, trigger, "go");
  CU_ASSERT_TRUE_FATAL(rec_wait(&r, &r.done, 1, 10000));
  g_mutex_lock(&r.mu);
  CU_ASSERT_EQUAL(r.frees, 1);
  ZKT_ASSERT_RC(ZKRC_OK, r.free_rc);
  CU_ASSERT_EQUAL(r.in_callback_at_done, 0);
  g_mutex_unlock(&r.mu);
  assert_quiet_after_done(zh, s, t, &r);
  rec_clear(&r);
  zookeeper_close(zh);
  g_free(trigger), g_free(t);
}

/* How the object is ended in test_end_around_close. */
typedef enum { FREE_BEFORE, FREE_AFTER, ASYNC_BEFORE, ASYNC_AFTER } ending;

static const char *const ending_names[] = {
    "free before close", "free after close", "free_async before close",
    "free_async after close"};

/* A cache (@p watch 0) or a shared watch ended by @p how around its
 * session's close: free returns, free_async's done comes (also when the
 * session was closed before or right after it), after the LOST that the
 * close told (when it came first), and nothing comes after either. */
static void end_around_close(int watch, ending how) {
  printf("(%s %s) ", watch ? "watch" : "cache", ending_names[how]);
  char *t = zkt_path(watch ? "watch-close" : "cache-close");
  zhandle_t *zh = direct();
  zkt_make_path(zh, t);
  zkrc_session *s = zkt_session();
  rec r;
  rec_init(&r);
  zkrc_cache *c = NULL;
  zkrc_shared_watch *w = NULL;
  if (watch) {
    w = watch_on(s, t, &r);
    CU_ASSERT_TRUE_FATAL(rec_wait(&r, &r.events, 1, 10000)); /* VALUE */
  } else {
    c = cache_on(s, t, &r);
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_cache_wait_initialized(c, 10000));
  }
  int async = how == ASYNC_BEFORE || how == ASYNC_AFTER;
  int after = how == FREE_AFTER || how == ASYNC_AFTER;
  if (after) {
    zkrc_session_close(s);
    CU_ASSERT_TRUE(rec_wait(&r, &r.lost, 1, 10000));
  }
  if (async) {
    ZKT_ASSERT_RC(ZKRC_OK, watch ? zkrc_shared_watch_free_async(w, on_done, &r)
                                 : zkrc_cache_free_async(c, on_done, &r));
  } else if (watch) {
    zkrc_shared_watch_free(w);
  } else {
    zkrc_cache_free(c);
  }
  g_mutex_lock(&r.mu);
  int told = r.events;
  g_mutex_unlock(&r.mu);
  if (!after)
    zkrc_session_close(s);
  if (async) {
    CU_ASSERT_TRUE(rec_wait(&r, &r.done, 1, 10000));
    g_mutex_lock(&r.mu);
    CU_ASSERT_EQUAL(r.events_at_done, r.events);
    CU_ASSERT_EQUAL(r.lost, after ? 1 : 0);
    g_mutex_unlock(&r.mu);
  }
  g_mutex_lock(&r.mu);
  CU_ASSERT_EQUAL(r.done, async ? 1 : 0);
  CU_ASSERT_EQUAL(r.after_done, 0);
  CU_ASSERT_EQUAL(r.threads_differ, 0);
  if (!async)
    CU_ASSERT_EQUAL(r.events, told); /* nothing after free returned */
  g_mutex_unlock(&r.mu);
  rec_clear(&r);
  zookeeper_close(zh);
  g_free(t);
}

static void test_cache_ended_around_close(void) {
  for (ending how = FREE_BEFORE; how <= ASYNC_AFTER; how++)
    end_around_close(0, how);
}

/* While the connection is frozen, with reads in flight (objects made
 * during the freeze): free returns at once, free_async's done comes at
 * once; once the connection is back, the replies of the freed caches'
 * reads come into nothing, and the session goes on. */
static void test_ending_while_frozen_is_at_once(void) {
  char *t = zkt_path("frozen");
  char *leaf = child(t, "leaf");
  zhandle_t *zh = direct();
  zkt_make_path(zh, t);
  create_node(zh, leaf, "0");
  zkrc_session *s = zkt_session();
  rec before, r[4];
  rec_init(&before);
  for (int i = 0; i < 4; i++)
    rec_init(&r[i]);
  /* One made before the freeze, whose watch's change is held up. */
  zkrc_cache *early = cache_on(s, t, &before);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_cache_wait_initialized(early, 10000));
  CU_ASSERT_EQUAL(zkrc_proxy_blackhole(zkt_ensemble(), 0, FREEZE_MS), 0);
  int64_t frozen_at = zkt_now_ms();
  CU_ASSERT_EQUAL(zoo_set(zh, leaf, "1", 1, -1), ZOK);
  zkrc_cache *c_sync = cache_on(s, t, &r[0]);
  zkrc_cache *c_async = cache_on(s, t, &r[1]);
  zkrc_shared_watch *w_sync = watch_on(s, leaf, &r[2]);
  zkrc_shared_watch *w_async = watch_on(s, leaf, &r[3]);

  int64_t t0 = zkt_now_ms();
  zkrc_cache_free(c_sync);
  zkrc_shared_watch_free(w_sync);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_cache_free_async(c_async, on_done, &r[1]));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_shared_watch_free_async(w_async, on_done, &r[3]));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_cache_free_async(early, on_done, &before));
  int64_t returned = zkt_now_ms() - t0;
  CU_ASSERT_TRUE(rec_wait(&r[1], &r[1].done, 1, AT_ONCE_MS));
  CU_ASSERT_TRUE(rec_wait(&r[3], &r[3].done, 1, AT_ONCE_MS));
  CU_ASSERT_TRUE(rec_wait(&before, &before.done, 1, AT_ONCE_MS));
  int64_t all_done = zkt_now_ms() - t0;
  printf("(frees returned in %" G_GINT64_FORMAT
         " ms, every done in %" G_GINT64_FORMAT
         " ms, the freeze %" G_GINT64_FORMAT " ms old) ",
         returned, all_done, zkt_now_ms() - frozen_at);
  CU_ASSERT_TRUE(returned < AT_ONCE_MS);
  CU_ASSERT_TRUE(zkt_now_ms() - frozen_at < FREEZE_MS); /* still frozen */
  /* The freed caches never saw the tree (their reads were held). */
  CU_ASSERT_EQUAL(r[0].events, 0);
  CU_ASSERT_EQUAL(r[1].events, 0);

  CU_ASSERT_EQUAL(zkrc_proxy_blackhole(zkt_ensemble(), 0, 0), 0);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_session_wait_connected(s, 15000));
  assert_quiet_after_done(zh, s, t, &before); /* closes s */
  for (int i = 0; i < 4; i++) {
    CU_ASSERT_EQUAL(r[i].after_done, 0);
    CU_ASSERT_EQUAL(r[i].done, i % 2); /* the free_async ones, once */
    rec_clear(&r[i]);
  }
  rec_clear(&before);
  zookeeper_close(zh);
  g_free(leaf), g_free(t);
}

/* NULL object or done: ZKRC_EINVAL, and the object goes on telling. */
static void test_free_async_bad_input(void) {
  char *t = zkt_path("free-async-bad");
  char *a = child(t, "a");
  zhandle_t *zh = direct();
  zkt_make_path(zh, t);
  zkrc_session *s = zkt_session();
  rec r, wr;
  rec_init(&r);
  rec_init(&wr);
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_cache_free_async(NULL, on_done, &r));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_shared_watch_free_async(NULL, on_done, &r));
  zkrc_cache *c = cache_on(s, t, &r);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_cache_wait_initialized(c, 10000));
  zkrc_shared_watch *w = watch_on(s, a, &wr);
  CU_ASSERT_TRUE_FATAL(rec_wait(&wr, &wr.events, 1, 10000)); /* none yet */
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_cache_free_async(c, NULL, &r));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_shared_watch_free_async(w, NULL, &wr));
  g_mutex_lock(&r.mu);
  int cache_told = r.events;
  g_mutex_unlock(&r.mu);
  create_node(zh, a, "a"); /* ADDED, and a VALUE */
  CU_ASSERT_TRUE(rec_wait(&r, &r.events, cache_told + 1, 10000));
  CU_ASSERT_TRUE(rec_wait(&wr, &wr.events, 2, 10000));
  zkrc_shared_watch_free(w);
  zkrc_cache_free(c);
  zkrc_session_close(s);
  CU_ASSERT_EQUAL(r.done + wr.done, 0);
  rec_clear(&r);
  rec_clear(&wr);
  zookeeper_close(zh);
  g_free(a), g_free(t);
}

/* ------------------------------------------------------- shared watches */

/* free_async from the watch's own callback (its first value): ZKRC_OK
 * there, done once after that call returned, nothing after (a change of
 * the value made after done is not told). */
static void test_watch_free_async_from_its_own_callback(void) {
  char *t = zkt_path("watch-inside");
  char *v = child(t, "value");
  zhandle_t *zh = direct();
  zkt_make_path(zh, t);
  create_node(zh, v, "1");
  zkrc_session *s = zkt_session();
  rec r;
  rec_init(&r);
  r.trigger = "";
  watch_on(s, v, &r);
  CU_ASSERT_TRUE_FATAL(rec_wait(&r, &r.done, 1, 10000));
  g_mutex_lock(&r.mu);
  CU_ASSERT_EQUAL(r.frees, 1);
  ZKT_ASSERT_RC(ZKRC_OK, r.free_rc);
  CU_ASSERT_EQUAL(r.in_callback_at_done, 0);
  CU_ASSERT_EQUAL(r.events_at_done, 1);
  g_mutex_unlock(&r.mu);
  CU_ASSERT_EQUAL(zoo_set(zh, v, "2", 1, -1), ZOK);
  assert_quiet_after_done(zh, s, t, &r);
  rec_clear(&r);
  zookeeper_close(zh);
  g_free(v), g_free(t);
}

/* The watch's callback held in its first call while the value changes 20
 * times: free_async returns; once let go, the values queued before it are
 * told, then done, then nothing. */
static void test_watch_free_async_tells_the_queued_values(void) {
  char *t = zkt_path("watch-queued");
  char *v = child(t, "value");
  zhandle_t *zh = direct();
  zkt_make_path(zh, t);
  create_node(zh, v, "0");
  zkrc_session *s = zkt_session();
  rec r, mirror;
  rec_init(&r);
  rec_init(&mirror);
  r.block_first = 1;
  mirror.leaf = v;
  zkrc_shared_watch *w = watch_on(s, v, &r);
  CU_ASSERT_TRUE_FATAL(rec_wait(&r, &r.blocked, 1, 10000));
  /* A cache on the same session tells the last change: the watch's cache
   * has read it by then, and queued its value. */
  zkrc_cache *c = cache_on(s, t, &mirror);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_cache_wait_initialized(c, 10000));
  struct Stat st;
  for (int i = 1; i <= 20; i++) {
    char data[16];
    g_snprintf(data, sizeof data, "v%d", i);
    CU_ASSERT_EQUAL(zoo_set2(zh, v, data, (int)strlen(data), -1, &st), ZOK);
  }
  cc_copy_has h = {c, v, st.mzxid};
  CU_ASSERT_TRUE(zkt_wait_for(cc_copy_has_change, &h, 10000));
  zkrc_cache_free(c);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_shared_watch_free_async(w, on_done, &r));
  g_mutex_lock(&r.mu);
  CU_ASSERT_EQUAL(r.done, 0); /* the callback is still held */
  g_mutex_unlock(&r.mu);
  rec_open_gate(&r);
  CU_ASSERT_TRUE_FATAL(rec_wait(&r, &r.done, 1, 10000));
  g_mutex_lock(&r.mu);
  CU_ASSERT_TRUE(r.events_at_done > 1);
  CU_ASSERT_EQUAL(r.in_callback_at_done, 0);
  g_mutex_unlock(&r.mu);
  assert_quiet_after_done(zh, s, t, &r);
  rec_clear(&r);
  rec_clear(&mirror);
  zookeeper_close(zh);
  g_free(v), g_free(t);
}

static void test_watch_ended_around_close(void) {
  for (ending how = FREE_BEFORE; how <= ASYNC_AFTER; how++)
    end_around_close(1, how);
}

static void add_suites(void) {
  ZKT_SUITE("cache",
            {"free_async tells the queued events, then done",
             test_free_async_tells_the_queued_events_then_done},
            {"free_async from its own listener",
             test_free_async_from_its_own_listener},
            {"free and free_async around the session's close",
             test_cache_ended_around_close},
            {"bad input changes nothing", test_free_async_bad_input});
  ZKT_SUITE("shared_watch",
            {"free_async from its own callback",
             test_watch_free_async_from_its_own_callback},
            {"free_async tells the queued values, then done",
             test_watch_free_async_tells_the_queued_values},
            {"free and free_async around the session's close",
             test_watch_ended_around_close});
  ZKT_SUITE("frozen", {"free and free_async while frozen are at once",
                       test_ending_while_frozen_is_at_once});
}

int main(void) {
  zkt_configure(1, 1);
  return zkt_run("test_cache_free", add_suites);
}
