/*
 * The session's deadlines: a binary min-heap (by time, then by the order
 * they were armed) and one GSource on the worker whose ready time is the
 * earliest.  See session_internal.h.  Arming and disarming cost no
 * allocation of their own (the heap is one array, given back as it
 * empties), so that 100,000 deadlines armed at once and disarmed as their
 * acquisitions succeed leave no holes behind in the heap.
 */
#include "config.h"

#include "session/session_private.h"

typedef struct zkrc__deadline {
  int64_t at_us; /* monotonic */
  uint64_t order;
  zkrc__deadline_fn fire;
  void *obj;
  unsigned *slot; /* the owner's: its index in the heap, plus one */
} deadline;

#define AT(s, i) (&(s)->deadlines[(i)])

static gboolean earlier(const deadline *a, const deadline *b) {
  return a->at_us < b->at_us || (a->at_us == b->at_us && a->order < b->order);
}

/* Put @p d at index @p i and tell its owner. */
static void place(zkrc_session *s, guint i, const deadline *d) {
  *AT(s, i) = *d;
  *d->slot = i + 1;
}

static void sift_up(zkrc_session *s, guint i) {
  deadline d = *AT(s, i);
  while (i > 0 && earlier(&d, AT(s, (i - 1) / 2))) {
    place(s, i, AT(s, (i - 1) / 2));
    i = (i - 1) / 2;
  }
  place(s, i, &d);
}

static void sift_down(zkrc_session *s, guint i) {
  guint n = s->n_deadlines;
  deadline d = *AT(s, i);
  for (;;) {
    guint child = 2 * i + 1;
    if (child >= n)
      break;
    if (child + 1 < n && earlier(AT(s, child + 1), AT(s, child)))
      child++;
    if (!earlier(AT(s, child), &d))
      break;
    place(s, i, AT(s, child));
    i = child;
  }
  place(s, i, &d);
}

/* Take the deadline at index @p i out of the heap (its slot set to 0). */
static void remove_at(zkrc_session *s, guint i) {
  *AT(s, i)->slot = 0;
  guint last = --s->n_deadlines;
  if (i != last) {
    deadline moved = *AT(s, last);
    place(s, i, &moved);
    if (i > 0 && earlier(&moved, AT(s, (i - 1) / 2)))
      sift_up(s, i);
    else
      sift_down(s, i);
  }
  /* Give the array back once empty, when it grew to hold many. */
  if (s->n_deadlines == 0 && s->deadlines_room > 1024) {
    g_free(s->deadlines);
    s->deadlines = NULL;
    s->deadlines_room = 0;
  }
}

/* The source's wake-up: the earliest deadline's time, or never. */
static void rearm_locked(zkrc_session *s) {
  g_source_set_ready_time(s->deadline_src,
                          s->n_deadlines ? AT(s, 0)->at_us : -1);
}

/* The worker: fire every deadline that has come, earliest first, with no
 * mutex held. */
static gboolean deadlines_due(gpointer data) {
  zkrc_session *s = data;
  int64_t now = g_get_monotonic_time();
  GArray *due = g_array_new(FALSE, FALSE, sizeof(deadline));
  g_mutex_lock(&s->deadlines_mu);
  while (s->n_deadlines && AT(s, 0)->at_us <= now) {
    g_array_append_val(due, *AT(s, 0));
    remove_at(s, 0);
  }
  rearm_locked(s);
  g_mutex_unlock(&s->deadlines_mu);
  for (guint i = 0; i < due->len; i++) {
    deadline *d = &g_array_index(due, deadline, i);
    d->fire(d->obj);
  }
  g_array_free(due, TRUE);
  return G_SOURCE_CONTINUE;
}

static gboolean source_dispatch(GSource *src, GSourceFunc fn, gpointer data) {
  (void)src;
  return fn(data);
}

static GSourceFuncs deadline_source_funcs = {NULL, NULL, source_dispatch,
                                             NULL, NULL, NULL};

void zkrc__session_deadlines_init(zkrc_session *s) {
  g_mutex_init(&s->deadlines_mu);
  s->deadlines = NULL;
  s->n_deadlines = s->deadlines_room = 0;
  s->deadline_src = NULL;
}

void zkrc__session_deadlines_clear(zkrc_session *s) {
  g_assert(s->n_deadlines == 0);
  if (s->deadline_src) {
    g_source_destroy(s->deadline_src);
    g_source_unref(s->deadline_src);
  }
  g_free(s->deadlines);
  g_mutex_clear(&s->deadlines_mu);
}

void zkrc__session_deadline_arm(zkrc_session *s, int ms, zkrc__deadline_fn fire,
                                void *obj, unsigned *slot) {
  deadline d = {g_get_monotonic_time() + (int64_t)ms * 1000, 0, fire, obj,
                slot};
  g_mutex_lock(&s->deadlines_mu);
  g_assert(*slot == 0);
  d.order = ++s->deadlines_armed;
  if (s->deadline_src == NULL) {
    /* Its callback takes no reference: the session clears it last. */
    s->deadline_src = g_source_new(&deadline_source_funcs, sizeof(GSource));
    g_source_set_callback(s->deadline_src, deadlines_due, s, NULL);
    g_source_attach(s->deadline_src, s->worker_ctx);
  }
  if (s->n_deadlines == s->deadlines_room) {
    s->deadlines_room = s->deadlines_room ? 2 * s->deadlines_room : 16;
    s->deadlines = g_renew(deadline, s->deadlines, s->deadlines_room);
  }
  s->deadlines[s->n_deadlines++] = d;
  sift_up(s, s->n_deadlines - 1);
  if (*slot == 1) /* the earliest now */
    rearm_locked(s);
  g_mutex_unlock(&s->deadlines_mu);
}

gboolean zkrc__session_deadline_disarm(zkrc_session *s, unsigned *slot) {
  g_mutex_lock(&s->deadlines_mu);
  unsigned at = *slot;
  if (at) {
    remove_at(s, at - 1);
    if (at == 1)
      rearm_locked(s);
  }
  g_mutex_unlock(&s->deadlines_mu);
  return at != 0;
}
