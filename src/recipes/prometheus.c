/*
 * zkrc_stats_prometheus() (zkrecipes/stats.h): the statistics in
 * Prometheus' text exposition format, version 0.0.4.  Each metric family
 * is written once (its HELP and TYPE lines, then its samples), as the
 * format requires.
 *
 * The series are few and stable (issue 33): the sessions' statistics are
 * one series per process, summed over the session objects, so that a new
 * ZooKeeper session after an expiry continues them and rate() goes on;
 * the ids are in an info metric, the only series whose labels change.
 * Recipes are one series per kind, summed over the objects, unless the
 * caller asks for one per path (per_path: about 60 series each).
 */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "recipes/lock_private.h"
#include "recipes/stats_internal.h"
#include "session/session_internal.h"
#include "core/util.h"
#include "zkrecipes/stats.h"

/* ------------------------------------------------------------ format */

/* A label value escaped as the format asks: backslash, double quote and
 * line feed. */
static void append_label_value(GString *out, const char *v) {
  for (; *v; v++) {
    if (*v == '\\' || *v == '"')
      g_string_append_c(out, '\\');
    if (*v == '\n')
      g_string_append(out, "\\n");
    else
      g_string_append_c(out, *v);
  }
}

/* A number as the format writes it: integers plainly, +Inf, NaN. */
static void append_number(GString *out, double v) {
  if (isinf(v))
    g_string_append(out, v > 0 ? "+Inf" : "-Inf");
  else if (isnan(v))
    g_string_append(out, "NaN");
  else if (v == floor(v) && fabs(v) < 1e15)
    g_string_append_printf(out, "%.0f", v);
  else
    g_string_append_printf(out, "%.9g", v);
}

static void family(GString *out, const char *name, const char *type,
                   const char *help) {
  g_string_append_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name,
                         type);
}

/* "name v", or "name{labels} v" when @p labels is not empty; @p suffix
 * ("_bucket", "_sum", "_count" or "") follows the name. */
static void sample(GString *out, const char *name, const char *suffix,
                   const char *labels, double v) {
  g_string_append_printf(out, "%s%s", name, suffix);
  if (labels[0])
    g_string_append_printf(out, "{%s}", labels);
  g_string_append_c(out, ' ');
  append_number(out, v);
  g_string_append_c(out, '\n');
}

/* A histogram's samples: its cumulative buckets (le="..." after
 * @p labels), its sum and its count. */
static void histogram_samples(GString *out, const char *name,
                              const char *labels, const zkrc_histogram *h) {
  GString *le = g_string_new(NULL);
  uint64_t cumulative = 0;
  for (int b = 0; b < ZKRC_HISTOGRAM_BUCKETS; b++) {
    cumulative += h->buckets[b];
    g_string_printf(le, "%s%sle=\"", labels, labels[0] ? "," : "");
    append_number(le, zkrc_histogram_bound(b));
    g_string_append_c(le, '"');
    sample(out, name, "_bucket", le->str, (double)cumulative);
  }
  g_string_free(le, TRUE);
  sample(out, name, "_sum", labels, h->sum_seconds);
  sample(out, name, "_count", labels, (double)h->count);
}

static void add_histogram(zkrc_histogram *into, const zkrc_histogram *h) {
  into->count += h->count;
  into->sum_seconds += h->sum_seconds;
  for (int b = 0; b < ZKRC_HISTOGRAM_BUCKETS; b++)
    into->buckets[b] += h->buckets[b];
}

/* The uint64_t at @p offset of @p st. */
static double counter_at(const void *st, size_t offset) {
  uint64_t v;
  memcpy(&v, (const char *)st + offset, sizeof v);
  return (double)v;
}

/* A table of counters: their names and where they are in a struct. */
typedef struct counter_metric {
  const char *name, *help;
  size_t offset; /* of a uint64_t */
} counter_metric;

/* ------------------------------------------------------------ sessions */

/* Every session object given, as one: counters and the histogram summed,
 * how many are connected, the shortest lease, and the distinct ids. */
typedef struct session_totals {
  size_t objects;
  zkrc_session_stats st;
  unsigned connected;
  /* The shortest lease among those something depends on; -1: none. */
  int lease_remaining_ms;
  int lease_dependents;
  GArray *ids; /* int64_t, sorted, distinct */
} session_totals;

#define SESSION_COUNTER(metric, field, help)                                   \
  { metric, help, offsetof(zkrc_session_stats, field) }

static const counter_metric session_counters[] = {
    SESSION_COUNTER("zkrecipes_sessions_total", sessions,
                    "ZooKeeper sessions established."),
    SESSION_COUNTER("zkrecipes_session_suspensions_total", suspensions,
                    "Connections lost with the session alive."),
    SESSION_COUNTER("zkrecipes_session_reconnects_total", reconnects,
                    "Connections regained with the session."),
    SESSION_COUNTER("zkrecipes_session_expiries_total", expiries,
                    "ZooKeeper sessions expired."),
    SESSION_COUNTER("zkrecipes_session_lease_losses_total", lease_losses,
                    "Leases that ran out (the session LOST)."),
    SESSION_COUNTER("zkrecipes_session_late_losses_total", late_losses,
                    "Lease losses told later than the scheduling allowance."),
    SESSION_COUNTER("zkrecipes_requests_total", requests,
                    "Requests sent to the servers (no pings)."),
    SESSION_COUNTER("zkrecipes_lease_renewals_total", renewals,
                    "Lease renewals (syncs), among the requests."),
    SESSION_COUNTER("zkrecipes_lease_keepalives_total", keepalives,
                    "Keepalives of resting leases, among the requests."),
};

static gint compare_ids(gconstpointer a, gconstpointer b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Add session @p s to @p t. */
static void add_session(session_totals *t, zkrc_session *s) {
  zkrc_session_stats st;
  memset(&st, 0, sizeof st);
  (void)zkrc_session_get_stats(s, &st, sizeof st);
  for (size_t m = 0; m < G_N_ELEMENTS(session_counters); m++) {
    uint64_t into, v;
    size_t off = session_counters[m].offset;
    memcpy(&into, (char *)&t->st + off, sizeof into);
    memcpy(&v, (const char *)&st + off, sizeof v);
    into += v;
    memcpy((char *)&t->st + off, &into, sizeof into);
  }
  add_histogram(&t->st.loss_delivery, &st.loss_delivery);
  t->connected += st.state == ZKRC_SESSION_CONNECTED;
  /* A resting lease is nobody's concern (zkrc_lease_renewal). */
  if (st.lease_dependents > 0 &&
      (t->lease_remaining_ms < 0 ||
       st.lease_remaining_ms < t->lease_remaining_ms))
    t->lease_remaining_ms = st.lease_remaining_ms;
  t->lease_dependents += st.lease_dependents;
  t->objects++;
  int64_t id = zkrc__session_label_id(s);
  g_array_append_val(t->ids, id);
}

/* The sessions of @p s (each object once, however often it is listed);
 * FALSE for a NULL one. */
static gboolean read_sessions(zkrc_session *const *s, size_t n,
                              session_totals *t) {
  GHashTable *seen = g_hash_table_new(NULL, NULL);
  gboolean ok = TRUE;
  for (size_t i = 0; ok && i < n; i++) {
    ok = s[i] != NULL;
    if (ok && g_hash_table_add(seen, s[i]))
      add_session(t, s[i]);
  }
  g_hash_table_destroy(seen);
  g_array_sort(t->ids, compare_ids);
  return ok;
}

static void write_session_info(GString *out, const GArray *ids) {
  family(out, "zkrecipes_session_info", "gauge",
         "1 for each session object's current (or last) ZooKeeper session.");
  for (guint i = 0; i < ids->len; i++) {
    int64_t id = g_array_index(ids, int64_t, i);
    if (i > 0 && id == g_array_index(ids, int64_t, i - 1))
      continue; /* one series each */
    char label[48];
    g_snprintf(label, sizeof label, "session_id=\"0x%" PRIx64 "\"",
               (uint64_t)id);
    sample(out, "zkrecipes_session_info", "", label, 1);
  }
}

static void write_sessions(GString *out, const session_totals *t) {
  if (t->objects == 0)
    return;
  for (size_t m = 0; m < G_N_ELEMENTS(session_counters); m++) {
    const counter_metric *c = &session_counters[m];
    family(out, c->name, "counter", c->help);
    sample(out, c->name, "", "", counter_at(&t->st, c->offset));
  }
  family(out, "zkrecipes_sessions_connected", "gauge",
         "Session objects connected now.");
  sample(out, "zkrecipes_sessions_connected", "", "", t->connected);
  family(out, "zkrecipes_lease_remaining_seconds", "gauge",
         "How long every lease something depends on certainly lasts from "
         "now (the shortest; +Inf: none).");
  sample(out, "zkrecipes_lease_remaining_seconds", "", "",
         t->lease_remaining_ms < 0 ? INFINITY : t->lease_remaining_ms / 1000.0);
  family(out, "zkrecipes_lease_dependents", "gauge",
         "Holds, leaderships and kept nodes that depend on the leases.");
  sample(out, "zkrecipes_lease_dependents", "", "", t->lease_dependents);
  family(out, "zkrecipes_lease_loss_delivery_seconds", "histogram",
         "How long after the lease's deadline each LOST was told.");
  histogram_samples(out, "zkrecipes_lease_loss_delivery_seconds", "",
                    &t->st.loss_delivery);
  write_session_info(out, t->ids);
}

/* ------------------------------------------------------------- recipes */

/* One series' worth of recipes: its labels (kind="...", after path="..."
 * with per_path) and the statistics of its objects, summed. */
typedef struct recipe_row {
  GString *labels;
  zkrc_lock_stats st;
} recipe_row;

/* The rows in the order their labels first came, and an index by labels:
 * Prometheus keeps one sample per series and drops duplicates, so objects
 * with the same labels (every mutex by default; two objects on one path
 * with per_path) are summed into one row. */
typedef struct recipe_rows {
  GArray *rows;         /* recipe_row */
  GHashTable *by_label; /* labels->str -> row index + 1 */
  GHashTable *seen;     /* the objects counted: each once */
  gboolean per_path;
} recipe_rows;

#define RECIPE_COUNTER(field, help)                                            \
  {                                                                            \
    "zkrecipes_recipe_" #field "_total", help,                                 \
        offsetof(zkrc_lock_stats, field)                                       \
  }

static const counter_metric recipe_counters[] = {
    RECIPE_COUNTER(acquisitions,
                   "Acquisitions that got the lock (lease, leadership)."),
    RECIPE_COUNTER(timeouts, "Acquisitions that gave up at their deadline."),
    RECIPE_COUNTER(refusals, "Tries that found the lock held."),
    RECIPE_COUNTER(failures, "Acquisitions that failed otherwise."),
    RECIPE_COUNTER(lost, "Holds lost."),
    RECIPE_COUNTER(releases, "Holds released by their owner."),
};

static void add_recipe_stats(zkrc_lock_stats *into, const zkrc_lock_stats *s) {
  for (size_t m = 0; m < G_N_ELEMENTS(recipe_counters); m++) {
    uint64_t sum, v;
    size_t off = recipe_counters[m].offset;
    memcpy(&sum, (char *)into + off, sizeof sum);
    memcpy(&v, (const char *)s + off, sizeof v);
    sum += v;
    memcpy((char *)into + off, &sum, sizeof sum);
  }
  into->waiting += s->waiting;
  into->holding += s->holding;
  into->queue_length = MAX(into->queue_length, s->queue_length);
  add_histogram(&into->wait, &s->wait);
  add_histogram(&into->hold, &s->hold);
}

/* Add @p st under the labels of @p path and @p kind. */
static void add_to_row(recipe_rows *r, const char *path, const char *kind,
                       const zkrc_lock_stats *st) {
  GString *labels = g_string_new(NULL);
  if (r->per_path) {
    g_string_append(labels, "path=\"");
    append_label_value(labels, path);
    g_string_append(labels, "\",");
  }
  g_string_append_printf(labels, "kind=\"%s\"", kind);
  guint at = GPOINTER_TO_UINT(g_hash_table_lookup(r->by_label, labels->str));
  if (at > 0) {
    add_recipe_stats(&g_array_index(r->rows, recipe_row, at - 1).st, st);
    g_string_free(labels, TRUE);
    return;
  }
  recipe_row row = {.labels = labels, .st = *st};
  g_array_append_val(r->rows, row);
  g_hash_table_insert(r->by_label, labels->str, GUINT_TO_POINTER(r->rows->len));
}

typedef int (*get_stats_fn)(void *obj, zkrc_lock_stats *out, size_t size);
typedef const char *(*path_fn)(void *obj);
typedef const char *(*kind_fn)(void *obj);

/* A kind of recipe object: how to read it and what to call it. */
typedef struct recipe_kind {
  get_stats_fn get;
  path_fn path;
  kind_fn kind;
} recipe_kind;

/* Add the @p n objects of @p objs (each once); FALSE for a NULL one. */
static gboolean add_objects(recipe_rows *r, void *const *objs, size_t n,
                            const recipe_kind *k) {
  for (size_t i = 0; i < n; i++) {
    if (objs[i] == NULL)
      return FALSE;
    if (!g_hash_table_add(r->seen, objs[i]))
      continue; /* listed twice: counted once */
    zkrc_lock_stats st;
    memset(&st, 0, sizeof st);
    (void)k->get(objs[i], &st, sizeof st);
    add_to_row(r, k->path(objs[i]), k->kind(objs[i]), &st);
  }
  return TRUE;
}

static int lock_stats(void *o, zkrc_lock_stats *out, size_t size) {
  return zkrc_lock_get_stats(o, out, size);
}
static int semaphore_stats(void *o, zkrc_lock_stats *out, size_t size) {
  return zkrc_semaphore_get_stats(o, out, size);
}
static int election_stats(void *o, zkrc_lock_stats *out, size_t size) {
  return zkrc_election_get_stats(o, out, size);
}
static const char *lock_path(void *o) { return zkrc_lock_path(o); }
static const char *semaphore_path(void *o) { return zkrc_semaphore_path(o); }
static const char *election_path(void *o) { return zkrc_election_path(o); }
static const char *lock_kind(void *o) { return zkrc__lock_kind(o); }
static const char *semaphore_kind(void *o) {
  (void)o;
  return "semaphore";
}
static const char *election_kind(void *o) {
  (void)o;
  return "election";
}

/* Every recipe of @p src into @p r (lock, semaphore, election order). */
static gboolean read_recipes(const zkrc_stats_sources *src, recipe_rows *r) {
  static const recipe_kind locks = {lock_stats, lock_path, lock_kind};
  static const recipe_kind semaphores = {semaphore_stats, semaphore_path,
                                         semaphore_kind};
  static const recipe_kind elections = {election_stats, election_path,
                                        election_kind};
  return add_objects(r, (void *const *)src->locks, src->n_locks, &locks) &&
         add_objects(r, (void *const *)src->semaphores, src->n_semaphores,
                     &semaphores) &&
         add_objects(r, (void *const *)src->elections, src->n_elections,
                     &elections);
}

static void recipe_rows_init(recipe_rows *r, gboolean per_path) {
  r->rows = g_array_new(FALSE, TRUE, sizeof(recipe_row));
  r->by_label = g_hash_table_new(g_str_hash, g_str_equal);
  r->seen = g_hash_table_new(NULL, NULL);
  r->per_path = per_path;
}

static void recipe_rows_clear(recipe_rows *r) {
  for (guint i = 0; i < r->rows->len; i++)
    g_string_free(g_array_index(r->rows, recipe_row, i).labels, TRUE);
  g_array_free(r->rows, TRUE);
  g_hash_table_destroy(r->by_label);
  g_hash_table_destroy(r->seen);
}

static const recipe_row *row_at(const recipe_rows *r, guint i) {
  return &g_array_index(r->rows, recipe_row, i);
}

/* A gauge of every row: the uint32_t at @p offset of its statistics. */
static void write_recipe_gauge(GString *out, const recipe_rows *r,
                               const char *name, const char *help,
                               size_t offset) {
  family(out, name, "gauge", help);
  for (guint i = 0; i < r->rows->len; i++) {
    uint32_t v;
    memcpy(&v, (const char *)&row_at(r, i)->st + offset, sizeof v);
    sample(out, name, "", row_at(r, i)->labels->str, v);
  }
}

static void write_recipe_histogram(GString *out, const recipe_rows *r,
                                   const char *name, const char *help,
                                   size_t offset) {
  family(out, name, "histogram", help);
  for (guint i = 0; i < r->rows->len; i++) {
    const recipe_row *row = row_at(r, i);
    const zkrc_histogram *h =
        (const zkrc_histogram *)((const char *)&row->st + offset);
    histogram_samples(out, name, row->labels->str, h);
  }
}

static void write_recipes(GString *out, const recipe_rows *r) {
  if (r->rows->len == 0)
    return;
  for (size_t m = 0; m < G_N_ELEMENTS(recipe_counters); m++) {
    const counter_metric *c = &recipe_counters[m];
    family(out, c->name, "counter", c->help);
    for (guint i = 0; i < r->rows->len; i++)
      sample(out, c->name, "", row_at(r, i)->labels->str,
             counter_at(&row_at(r, i)->st, c->offset));
  }
  write_recipe_gauge(out, r, "zkrecipes_recipe_waiting",
                     "Acquisitions of these objects waiting in the queue.",
                     offsetof(zkrc_lock_stats, waiting));
  write_recipe_gauge(out, r, "zkrecipes_recipe_holding",
                     "Holds (leases, leaderships) of these objects now.",
                     offsetof(zkrc_lock_stats, holding));
  write_recipe_gauge(out, r, "zkrecipes_recipe_queue_length",
                     "The longest queue these objects last listed.",
                     offsetof(zkrc_lock_stats, queue_length));
  write_recipe_histogram(out, r, "zkrecipes_recipe_wait_seconds",
                         "How long acquisitions that got the lock waited.",
                         offsetof(zkrc_lock_stats, wait));
  write_recipe_histogram(out, r, "zkrecipes_recipe_hold_seconds",
                         "How long released holds were held.",
                         offsetof(zkrc_lock_stats, hold));
}

/* ------------------------------------------------------------------ all */

/* The defaults, in a whole struct of ours. */
static void stats_sources_defaults(zkrc_stats_sources *src) {
  if (src) {
    memset(src, 0, sizeof *src);
    src->size = sizeof *src;
  }
}

void zkrc_stats_sources_init_sized(zkrc_stats_sources *src, size_t size) {
  zkrc_stats_sources full;
  stats_sources_defaults(&full);
  zkrc__options_give(src, size, &full, sizeof full);
}

/* Arrays NULL with a count above 0, or sources not initialized. */
static gboolean sources_valid(const zkrc_stats_sources *src) {
  return (src->n_sessions == 0 || src->sessions) &&
         (src->n_locks == 0 || src->locks) &&
         (src->n_semaphores == 0 || src->semaphores) &&
         (src->n_elections == 0 || src->elections);
}

/* The text of @p src's objects into @p out; FALSE for a NULL object. */
static gboolean write_all(GString *out, const zkrc_stats_sources *src) {
  session_totals sessions;
  memset(&sessions, 0, sizeof sessions);
  sessions.lease_remaining_ms = -1; /* no lease depended on yet */
  sessions.ids = g_array_new(FALSE, FALSE, sizeof(int64_t));
  recipe_rows recipes;
  recipe_rows_init(&recipes, src->per_path != 0);
  gboolean ok = read_sessions(src->sessions, src->n_sessions, &sessions) &&
                read_recipes(src, &recipes);
  if (ok) {
    write_sessions(out, &sessions);
    write_recipes(out, &recipes);
  }
  g_array_free(sessions.ids, TRUE);
  recipe_rows_clear(&recipes);
  return ok;
}

/* The caller's struct, as long as it is, into @p src: a shorter one's
 * missing sources are none (and per_path off), a longer one's unknown
 * fields ignored.  FALSE when zkrc_stats_prometheus() refuses it. */
static gboolean take_sources(zkrc_stats_sources *src,
                             const zkrc_stats_sources *given) {
  stats_sources_defaults(src);
  return given != NULL && zkrc__options_take(src, sizeof *src, given) &&
         sources_valid(src);
}

static gboolean none_null(const void *const *objs, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (objs[i] == NULL)
      return FALSE;
  return TRUE;
}

gboolean zkrc__stats_sources_usable(const zkrc_stats_sources *given) {
  zkrc_stats_sources src;
  return take_sources(&src, given) &&
         none_null((const void *const *)src.sessions, src.n_sessions) &&
         none_null((const void *const *)src.locks, src.n_locks) &&
         none_null((const void *const *)src.semaphores, src.n_semaphores) &&
         none_null((const void *const *)src.elections, src.n_elections);
}

char *zkrc_stats_prometheus(const zkrc_stats_sources *given) {
  zkrc_stats_sources src;
  if (!take_sources(&src, given))
    return NULL;
  GString *out = g_string_new(NULL);
  char *text = write_all(out, &src) ? strdup(out->str) : NULL;
  g_string_free(out, TRUE);
  return text;
}
