/*
 * The object runtime (src/core/object.h) on an executor of the test's own,
 * without a server: events told in the order decided and never from inside
 * the call that queued them, dropped once closed, a free from a callback
 * that does not wait for itself and one from another thread that does,
 * free_async's done after what was queued and only once pending work
 * ended, owed answers told also once closed, and the memory finalized
 * once, last.
 */
#include "config.h"

#include <glib.h>

#include "core/object.h"
#include "testutil.h"

/* ------------------------------------------- an executor run by hand */

typedef struct call {
  zkrc_callback_fn fn;
  void *arg;
} call;

typedef struct manual {
  GMutex mu;
  GQueue calls;
} manual;

static void manual_post(void *ctx, zkrc_callback_fn fn, void *arg) {
  manual *m = ctx;
  call *c = g_new(call, 1);
  *c = (call){fn, arg};
  g_mutex_lock(&m->mu);
  g_queue_push_tail(&m->calls, c);
  g_mutex_unlock(&m->mu);
}

/* Runs what was posted until nothing is left; returns how many ran. */
static int manual_run(manual *m) {
  int n = 0;
  for (;;) {
    g_mutex_lock(&m->mu);
    call *c = g_queue_pop_head(&m->calls);
    g_mutex_unlock(&m->mu);
    if (c == NULL)
      return n;
    c->fn(c->arg);
    g_free(c);
    n++;
  }
}

static int manual_waiting(manual *m) {
  g_mutex_lock(&m->mu);
  int n = (int)g_queue_get_length(&m->calls);
  g_mutex_unlock(&m->mu);
  return n;
}

/* ------------------------------------------------------- a test object */

typedef struct thing {
  zkrc__object o;
  GString *told; /* the events told, in order: "1 2 3" */
  int released;  /* events released (told or dropped) */
  int *finalized;
  gboolean in_callback_seen;
  /* The "blocking tell" test: */
  gboolean closer_returned; /* set under o.mu by the closer */
  gboolean closer_was_waiting;
} thing;

static void thing_finalize(zkrc__object *o) {
  thing *t = (thing *)o;
  (*t->finalized)++;
  g_string_free(t->told, TRUE);
  g_free(t);
}

static thing *thing_new(manual *m, int *finalized) {
  thing *t = g_new0(thing, 1);
  zkrc__object_init(&t->o, (zkrc_executor){manual_post, m}, thing_finalize);
  t->told = g_string_new(NULL);
  t->finalized = finalized;
  return t;
}

typedef struct numbered {
  zkrc__object_event base;
  int n;
} numbered;

static void numbered_tell(zkrc__object *o, zkrc__object_event *ev) {
  thing *t = (thing *)o;
  g_mutex_lock(&o->mu);
  t->in_callback_seen = zkrc__object_in_callback_locked(o);
  g_mutex_unlock(&o->mu);
  g_string_append_printf(t->told, "%s%d", t->told->len ? " " : "",
                         ((numbered *)ev)->n);
}

static void numbered_release(zkrc__object_event *ev) {
  thing *t = (thing *)ev->o;
  if (t) /* NULL: released when queued on a closed object */
    t->released++;
  g_free(ev);
}

static void tell_n(thing *t, int n) {
  numbered *ev =
      zkrc__object_event_new(sizeof *ev, numbered_tell, numbered_release);
  ev->n = n;
  g_mutex_lock(&t->o.mu);
  zkrc__object_tell_locked(&t->o, &ev->base);
  g_mutex_unlock(&t->o.mu);
}

/* Queue an event that runs @p tell. */
static void tell_fn(thing *t,
                    void (*tell)(zkrc__object *o, zkrc__object_event *ev)) {
  g_mutex_lock(&t->o.mu);
  zkrc__object_tell_locked(
      &t->o, zkrc__object_event_new(sizeof(zkrc__object_event), tell, NULL));
  g_mutex_unlock(&t->o.mu);
}

/* ------------------------------------------------------------- tests */

static void test_told_in_order_later(void) {
  manual m = {0};
  int finalized = 0;
  thing *t = thing_new(&m, &finalized);
  tell_n(t, 1);
  tell_n(t, 2);
  tell_n(t, 3);
  /* Nothing is told from inside the call that queued it. */
  CU_ASSERT_STRING_EQUAL(t->told->str, "");
  CU_ASSERT_EQUAL(manual_run(&m), 3);
  CU_ASSERT_STRING_EQUAL(t->told->str, "1 2 3");
  CU_ASSERT_EQUAL(t->released, 3);
  CU_ASSERT_TRUE(t->in_callback_seen);
  g_mutex_lock(&t->o.mu);
  CU_ASSERT_FALSE(zkrc__object_in_callback_locked(&t->o));
  g_mutex_unlock(&t->o.mu);
  zkrc__object_unref(&t->o);
  CU_ASSERT_EQUAL(finalized, 1);
}

static void test_queued_events_outlive_the_owner(void) {
  manual m = {0};
  int finalized = 0;
  thing *t = thing_new(&m, &finalized);
  tell_n(t, 1);
  zkrc__object_unref(&t->o); /* the owner's reference */
  /* The queued event keeps the memory. */
  CU_ASSERT_EQUAL(finalized, 0);
  CU_ASSERT_EQUAL(manual_run(&m), 1);
  CU_ASSERT_EQUAL(finalized, 1);
}

static void test_close_drops_what_is_queued(void) {
  manual m = {0};
  int finalized = 0;
  thing *t = thing_new(&m, &finalized);
  tell_n(t, 1);
  tell_n(t, 2);
  g_mutex_lock(&t->o.mu);
  zkrc__object_close_locked(&t->o);
  CU_ASSERT_TRUE(zkrc__object_ending(&t->o));
  g_mutex_unlock(&t->o.mu);
  tell_n(t, 3); /* after the close: released at once */
  CU_ASSERT_EQUAL(manual_waiting(&m), 2);
  manual_run(&m);
  CU_ASSERT_STRING_EQUAL(t->told->str, "");
  CU_ASSERT_EQUAL(t->released, 2); /* 3 was released before it had an o */
  zkrc__object_unref(&t->o);
  CU_ASSERT_EQUAL(finalized, 1);
}

/* A free from the object's own callback: no wait for itself. */
static void close_from_callback(zkrc__object *o, zkrc__object_event *ev) {
  (void)ev;
  g_mutex_lock(&o->mu);
  zkrc__object_close_locked(o); /* would wait forever if it waited */
  g_mutex_unlock(&o->mu);
  g_string_append(((thing *)o)->told, "closed");
}

static void test_close_from_own_callback(void) {
  manual m = {0};
  int finalized = 0;
  thing *t = thing_new(&m, &finalized);
  tell_fn(t, close_from_callback);
  tell_n(t, 2); /* queued behind: dropped by the close */
  manual_run(&m);
  CU_ASSERT_STRING_EQUAL(t->told->str, "closed");
  zkrc__object_unref(&t->o);
  CU_ASSERT_EQUAL(finalized, 1);
}

/* A free on another thread waits for the callback running now. */
static gpointer closer_main(gpointer data) {
  thing *t = data;
  g_mutex_lock(&t->o.mu);
  zkrc__object_close_locked(&t->o);
  t->closer_returned = TRUE; /* under o.mu: the tell reads it there */
  g_mutex_unlock(&t->o.mu);
  return NULL;
}

static GThread *closer_thread;

static void tell_while_closed(zkrc__object *o, zkrc__object_event *ev) {
  thing *t = (thing *)o;
  (void)ev;
  closer_thread = g_thread_new("closer", closer_main, t);
  /* The closer marks the object closed under o.mu and lets o.mu go only
   * in its wait, or once it returned: when we see it closed, whether it
   * had returned says whether it waited for us. */
  int64_t deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
  g_mutex_lock(&o->mu);
  while (!o->closed && g_get_monotonic_time() < deadline) {
    g_mutex_unlock(&o->mu);
    g_thread_yield();
    g_mutex_lock(&o->mu);
  }
  t->closer_was_waiting = o->closed && !t->closer_returned;
  g_mutex_unlock(&o->mu);
}

static void test_close_waits_for_a_running_callback(void) {
  manual m = {0};
  int finalized = 0;
  thing *t = thing_new(&m, &finalized);
  tell_fn(t, tell_while_closed);
  manual_run(&m);
  g_thread_join(closer_thread);
  CU_ASSERT_TRUE(t->closer_was_waiting);
  CU_ASSERT_TRUE(t->closer_returned);
  zkrc__object_unref(&t->o);
  CU_ASSERT_EQUAL(finalized, 1);
}

/* free_async: done after what was queued before, once pending work ended;
 * nothing queued after it is told. */
static void freed_done(void *arg) {
  thing *t = arg;
  g_string_append_printf(t->told, "%sdone", t->told->len ? " " : "");
}

static void test_free_async_waits_pending_then_tells_done_last(void) {
  manual m = {0};
  int finalized = 0;
  thing *t = thing_new(&m, &finalized);
  tell_n(t, 1);
  g_mutex_lock(&t->o.mu);
  zkrc__object_busy_locked(&t->o); /* a delete in flight */
  zkrc__object_detach_locked(&t->o, freed_done, t);
  CU_ASSERT_TRUE(zkrc__object_ending(&t->o));
  g_mutex_unlock(&t->o.mu);
  manual_run(&m);
  CU_ASSERT_STRING_EQUAL(t->told->str, "1"); /* not done: still pending */
  tell_n(t, 2); /* the delete's last word, before done */
  zkrc__object_idle(&t->o);
  tell_n(t, 3); /* behind done: never told */
  manual_run(&m);
  CU_ASSERT_STRING_EQUAL(t->told->str, "1 2 done");
  CU_ASSERT_EQUAL(t->released, 3);
  zkrc__object_unref(&t->o);
  CU_ASSERT_EQUAL(finalized, 1);
}

static void test_free_async_with_nothing_pending(void) {
  manual m = {0};
  int finalized = 0;
  thing *t = thing_new(&m, &finalized);
  g_mutex_lock(&t->o.mu);
  zkrc__object_detach_locked(&t->o, freed_done, t);
  g_mutex_unlock(&t->o.mu);
  CU_ASSERT_STRING_EQUAL(t->told->str, ""); /* never from inside */
  zkrc__object_unref(&t->o);
  CU_ASSERT_EQUAL(finalized, 0); /* done's event holds it */
  CU_ASSERT_EQUAL(manual_run(&m), 1);
  CU_ASSERT_EQUAL(finalized, 1);
}

static int posted_ran;
static void count_post(void *arg) {
  (void)arg;
  posted_ran++;
}

static void test_post_runs_even_when_closed(void) {
  manual m = {0};
  int finalized = 0;
  thing *t = thing_new(&m, &finalized);
  posted_ran = 0;
  g_mutex_lock(&t->o.mu);
  zkrc__object_close_locked(&t->o);
  zkrc__object_post_locked(&t->o, count_post, NULL);
  g_mutex_unlock(&t->o.mu);
  zkrc__object_unref(&t->o);
  CU_ASSERT_EQUAL(finalized, 0);
  manual_run(&m);
  CU_ASSERT_EQUAL(posted_ran, 1);
  CU_ASSERT_EQUAL(finalized, 1);
}

/* Work posted as pending: run even once detached, and done after it. */
static void pending_work(void *arg) {
  thing *t = arg;
  g_string_append_printf(t->told, "%swork", t->told->len ? " " : "");
}

static void test_pending_post_runs_before_done(void) {
  manual m = {0};
  int finalized = 0;
  thing *t = thing_new(&m, &finalized);
  g_mutex_lock(&t->o.mu);
  zkrc__object_post_pending_locked(&t->o, pending_work, t);
  zkrc__object_detach_locked(&t->o, freed_done, t);
  CU_ASSERT_EQUAL(t->o.pending, 1); /* done waits for it */
  g_mutex_unlock(&t->o.mu);
  CU_ASSERT_STRING_EQUAL(t->told->str, ""); /* never from inside */
  manual_run(&m);
  CU_ASSERT_STRING_EQUAL(t->told->str, "work done");
  zkrc__object_unref(&t->o);
  CU_ASSERT_EQUAL(finalized, 1);
}

/* An owed answer (a completion) is told even once closed, in order. */
static void test_owed_told_when_closed(void) {
  manual m = {0};
  int finalized = 0;
  thing *t = thing_new(&m, &finalized);
  tell_n(t, 1);
  numbered *ev =
      zkrc__object_event_new(sizeof *ev, numbered_tell, numbered_release);
  ev->n = 2;
  g_mutex_lock(&t->o.mu);
  zkrc__object_tell_owed_locked(&t->o, &ev->base);
  zkrc__object_close_locked(&t->o);
  ev = zkrc__object_event_new(sizeof *ev, numbered_tell, numbered_release);
  ev->n = 3;
  zkrc__object_tell_owed_locked(&t->o, &ev->base); /* after the close */
  g_mutex_unlock(&t->o.mu);
  tell_n(t, 4); /* an event after the close: dropped at once */
  CU_ASSERT_EQUAL(manual_run(&m), 3); /* 1 dropped, 2 and 3 told */
  CU_ASSERT_STRING_EQUAL(t->told->str, "2 3");
  zkrc__object_unref(&t->o);
  CU_ASSERT_EQUAL(finalized, 1);
}

static void add_suites(void) {
  ZKT_SUITE(
      "object runtime", {"told in order, later", test_told_in_order_later},
      {"queued events outlive the owner", test_queued_events_outlive_the_owner},
      {"close drops what is queued", test_close_drops_what_is_queued},
      {"close from its own callback", test_close_from_own_callback},
      {"close waits for a callback running elsewhere",
       test_close_waits_for_a_running_callback},
      {"free_async waits pending work, then done, last",
       test_free_async_waits_pending_then_tells_done_last},
      {"free_async with nothing pending", test_free_async_with_nothing_pending},
      {"its own work runs when closed", test_post_runs_even_when_closed},
      {"pending work posted runs before done",
       test_pending_post_runs_before_done},
      {"an owed answer is told when closed", test_owed_told_when_closed});
}

int main(void) { return zkt_run("test_object", add_suites); }
