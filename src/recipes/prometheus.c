/*
 * zkrc_stats_prometheus() (zkrecipes/stats.h): the statistics in
 * Prometheus' text exposition format, version 0.0.4.  Each metric family
 * is written once (its HELP and TYPE lines, then one sample per session
 * or lock), as the format requires.
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

/* ------------------------------------------------------------ sessions */

typedef struct session_row {
  char label[40]; /* session="0x..." */
  zkrc_session_stats st;
} session_row;

static void session_sample(GString *out, const char *name, const session_row *r,
                           double v) {
  g_string_append_printf(out, "%s{%s} ", name, r->label);
  append_number(out, v);
  g_string_append_c(out, '\n');
}

typedef struct session_metric {
  const char *name, *type, *help;
  size_t offset; /* of a uint64_t in zkrc_session_stats, or SIZE_MAX */
} session_metric;

#define SESSION_COUNTER(field, help)                                           \
  {                                                                            \
    "zkrecipes_session_" #field "_total", "counter", help,                     \
        offsetof(zkrc_session_stats, field)                                    \
  }

static const session_metric session_metrics[] = {
    SESSION_COUNTER(sessions, "ZooKeeper sessions established."),
    SESSION_COUNTER(suspensions, "Connections lost with the session alive."),
    SESSION_COUNTER(reconnects, "Connections regained with the session."),
    SESSION_COUNTER(expiries, "ZooKeeper sessions expired."),
    SESSION_COUNTER(requests, "Requests sent to the servers (no pings)."),
    SESSION_COUNTER(renewals, "Lease renewals (syncs), among the requests."),
    SESSION_COUNTER(lease_losses, "Leases that ran out (the session LOST)."),
    SESSION_COUNTER(late_losses,
                    "Lease losses told later than the scheduling allowance."),
};

static void write_sessions(GString *out, const session_row *rows, size_t n) {
  if (n == 0)
    return;
  for (size_t m = 0; m < G_N_ELEMENTS(session_metrics); m++) {
    const session_metric *sm = &session_metrics[m];
    family(out, sm->name, sm->type, sm->help);
    for (size_t i = 0; i < n; i++) {
      uint64_t v;
      memcpy(&v, (const char *)&rows[i].st + sm->offset, sizeof v);
      session_sample(out, sm->name, &rows[i], (double)v);
    }
  }
  family(out, "zkrecipes_session_connected", "gauge",
         "1 while the session is connected.");
  for (size_t i = 0; i < n; i++)
    session_sample(out, "zkrecipes_session_connected", &rows[i],
                   rows[i].st.state == ZKRC_SESSION_CONNECTED);
  family(out, "zkrecipes_session_lease_remaining_seconds", "gauge",
         "How long the session certainly lasts from now.");
  for (size_t i = 0; i < n; i++)
    session_sample(out, "zkrecipes_session_lease_remaining_seconds", &rows[i],
                   rows[i].st.lease_remaining_ms / 1000.0);
}

/* --------------------------------------------------------------- locks */

typedef struct lock_row {
  GString *labels; /* path="...",kind="..." */
  zkrc_lock_stats st;
} lock_row;

static void lock_sample(GString *out, const char *name, const char *suffix,
                        const lock_row *r, const char *extra, double v) {
  g_string_append_printf(out, "%s%s{%s%s} ", name, suffix, r->labels->str,
                         extra ? extra : "");
  append_number(out, v);
  g_string_append_c(out, '\n');
}

typedef struct lock_metric {
  const char *name, *type, *help;
  size_t offset; /* of a uint64_t in zkrc_lock_stats */
} lock_metric;

#define LOCK_COUNTER(field, help)                                              \
  {                                                                            \
    "zkrecipes_recipe_" #field "_total", "counter", help,                      \
        offsetof(zkrc_lock_stats, field)                                       \
  }

static const lock_metric lock_metrics[] = {
    LOCK_COUNTER(acquisitions,
                 "Acquisitions that got the lock (lease, leadership)."),
    LOCK_COUNTER(timeouts, "Acquisitions that gave up at their deadline."),
    LOCK_COUNTER(refusals, "Tries that found the lock held."),
    LOCK_COUNTER(failures, "Acquisitions that failed otherwise."),
    LOCK_COUNTER(lost, "Holds lost."),
    LOCK_COUNTER(releases, "Holds released by their owner."),
};

static void write_histogram(GString *out, const char *name, const char *help,
                            const lock_row *rows, size_t n, size_t offset) {
  family(out, name, "histogram", help);
  for (size_t i = 0; i < n; i++) {
    const zkrc_histogram *h =
        (const zkrc_histogram *)((const char *)&rows[i].st + offset);
    uint64_t cumulative = 0;
    for (int b = 0; b < ZKRC_HISTOGRAM_BUCKETS; b++) {
      cumulative += h->buckets[b];
      GString *le = g_string_new(",le=\"");
      append_number(le, zkrc_histogram_bound(b));
      g_string_append_c(le, '"');
      lock_sample(out, name, "_bucket", &rows[i], le->str, (double)cumulative);
      g_string_free(le, TRUE);
    }
    lock_sample(out, name, "_sum", &rows[i], NULL, h->sum_seconds);
    lock_sample(out, name, "_count", &rows[i], NULL, (double)h->count);
  }
}

static void write_locks(GString *out, const lock_row *rows, size_t n) {
  if (n == 0)
    return;
  for (size_t m = 0; m < G_N_ELEMENTS(lock_metrics); m++) {
    const lock_metric *lm = &lock_metrics[m];
    family(out, lm->name, lm->type, lm->help);
    for (size_t i = 0; i < n; i++) {
      uint64_t v;
      memcpy(&v, (const char *)&rows[i].st + lm->offset, sizeof v);
      lock_sample(out, lm->name, "", &rows[i], NULL, (double)v);
    }
  }
  family(out, "zkrecipes_recipe_waiting", "gauge",
         "This object's acquisitions waiting in the queue.");
  for (size_t i = 0; i < n; i++)
    lock_sample(out, "zkrecipes_recipe_waiting", "", &rows[i], NULL,
                rows[i].st.waiting);
  family(out, "zkrecipes_recipe_holding", "gauge",
         "This object's holds (leases, leadership) held now.");
  for (size_t i = 0; i < n; i++)
    lock_sample(out, "zkrecipes_recipe_holding", "", &rows[i], NULL,
                rows[i].st.holding);
  family(out, "zkrecipes_recipe_queue_length", "gauge",
         "Contenders in the queue, as this object last listed it.");
  for (size_t i = 0; i < n; i++)
    lock_sample(out, "zkrecipes_recipe_queue_length", "", &rows[i], NULL,
                rows[i].st.queue_length);
  write_histogram(out, "zkrecipes_recipe_wait_seconds",
                  "How long acquisitions that got the lock waited.", rows, n,
                  offsetof(zkrc_lock_stats, wait));
  write_histogram(out, "zkrecipes_recipe_hold_seconds",
                  "How long released holds were held.", rows, n,
                  offsetof(zkrc_lock_stats, hold));
}

/* ------------------------------------------------------------------ all */

static gboolean read_sessions(zkrc_session *const *s, size_t n,
                              session_row *rows) {
  for (size_t i = 0; i < n; i++) {
    if (s[i] == NULL)
      return FALSE;
    (void)zkrc_session_get_stats(s[i], &rows[i].st, sizeof rows[i].st);
    int64_t id = zkrc__session_label_id(s[i]);
    g_snprintf(rows[i].label, sizeof rows[i].label, "session=\"0x%" PRIx64 "\"",
               (uint64_t)id);
  }
  return TRUE;
}

/* One recipe row: its statistics and labels; FALSE for a NULL object. */
typedef int (*get_stats_fn)(void *obj, zkrc_lock_stats *out, size_t size);

static gboolean read_row(lock_row *row, void *obj, get_stats_fn get,
                         const char *path, const char *kind) {
  if (obj == NULL)
    return FALSE;
  (void)get(obj, &row->st, sizeof row->st);
  row->labels = g_string_new("path=\"");
  append_label_value(row->labels, path);
  g_string_append_printf(row->labels, "\",kind=\"%s\"", kind);
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

/* Every recipe of @p src as rows (lock, semaphore, election order). */
static gboolean read_recipes(const zkrc_stats_sources *src, lock_row *rows) {
  size_t k = 0;
  gboolean ok = TRUE;
  for (size_t i = 0; ok && i < src->n_locks; i++, k++)
    ok = read_row(&rows[k], src->locks[i], lock_stats,
                  src->locks[i] ? zkrc_lock_path(src->locks[i]) : NULL,
                  src->locks[i] ? zkrc__lock_kind(src->locks[i]) : NULL);
  for (size_t i = 0; ok && i < src->n_semaphores; i++, k++)
    ok = read_row(&rows[k], src->semaphores[i], semaphore_stats,
                  zkrc_semaphore_path(src->semaphores[i]), "semaphore");
  for (size_t i = 0; ok && i < src->n_elections; i++, k++)
    ok = read_row(&rows[k], src->elections[i], election_stats,
                  zkrc_election_path(src->elections[i]), "election");
  return ok;
}

/* ------------------------------------------------- one series per label */

/* Prometheus keeps one sample per series and silently drops duplicates, so
 * objects that share their labels (two lock objects on one path, one in
 * each session; a session listed twice) are summed into one row: counters,
 * gauges and histograms added, the queue's length the longest seen. */
static void add_histogram(zkrc_histogram *into, const zkrc_histogram *h) {
  into->count += h->count;
  into->sum_seconds += h->sum_seconds;
  for (int b = 0; b < ZKRC_HISTOGRAM_BUCKETS; b++)
    into->buckets[b] += h->buckets[b];
}

static void add_recipe_stats(zkrc_lock_stats *into, const zkrc_lock_stats *s) {
  into->acquisitions += s->acquisitions;
  into->timeouts += s->timeouts;
  into->refusals += s->refusals;
  into->failures += s->failures;
  into->lost += s->lost;
  into->releases += s->releases;
  into->waiting += s->waiting;
  into->holding += s->holding;
  into->queue_length = MAX(into->queue_length, s->queue_length);
  add_histogram(&into->wait, &s->wait);
  add_histogram(&into->hold, &s->hold);
}

/* Merge rows with equal labels into the first of them; returns how many
 * rows are left (the merged ones' labels freed). */
static size_t merge_recipes(lock_row *rows, size_t n) {
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) {
    size_t j = 0;
    while (j < kept && !g_string_equal(rows[j].labels, rows[i].labels))
      j++;
    if (j < kept) {
      add_recipe_stats(&rows[j].st, &rows[i].st);
      g_string_free(rows[i].labels, TRUE);
    } else {
      rows[kept++] = rows[i];
    }
  }
  return kept;
}

static void add_session_stats(zkrc_session_stats *into,
                              const zkrc_session_stats *s) {
  into->sessions += s->sessions;
  into->suspensions += s->suspensions;
  into->reconnects += s->reconnects;
  into->expiries += s->expiries;
  into->requests += s->requests;
  into->renewals += s->renewals;
  into->lease_losses += s->lease_losses;
  into->late_losses += s->late_losses;
  if (s->state == ZKRC_SESSION_CONNECTED) /* connected if either is */
    into->state = s->state;
  into->lease_remaining_ms =
      MAX(into->lease_remaining_ms, s->lease_remaining_ms);
}

static size_t merge_sessions(session_row *rows, size_t n) {
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) {
    size_t j = 0;
    while (j < kept && strcmp(rows[j].label, rows[i].label) != 0)
      j++;
    if (j < kept)
      add_session_stats(&rows[j].st, &rows[i].st);
    else
      rows[kept++] = rows[i];
  }
  return kept;
}

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

char *zkrc_stats_prometheus(const zkrc_stats_sources *given) {
  /* The caller's struct, as long as it is: a shorter one's missing
   * sources are none, a longer one's unknown fields ignored. */
  zkrc_stats_sources sources;
  stats_sources_defaults(&sources);
  if (given == NULL || !zkrc__options_take(&sources, sizeof sources, given) ||
      !sources_valid(&sources))
    return NULL;
  const zkrc_stats_sources *src = &sources;
  size_t n_recipes = src->n_locks + src->n_semaphores + src->n_elections;
  session_row *srows = g_new0(session_row, src->n_sessions);
  lock_row *lrows = g_new0(lock_row, n_recipes);
  char *text = NULL;
  if (read_sessions(src->sessions, src->n_sessions, srows) &&
      read_recipes(src, lrows)) {
    size_t n_srows = merge_sessions(srows, src->n_sessions);
    n_recipes = merge_recipes(lrows, n_recipes);
    GString *out = g_string_new(NULL);
    write_sessions(out, srows, n_srows);
    write_locks(out, lrows, n_recipes);
    text = strdup(out->str);
    g_string_free(out, TRUE);
  }
  for (size_t i = 0; i < n_recipes; i++)
    if (lrows[i].labels)
      g_string_free(lrows[i].labels, TRUE);
  g_free(srows);
  g_free(lrows);
  return text;
}
