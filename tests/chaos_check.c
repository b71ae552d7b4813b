/*
 * chaos_check.c - the pure part of test_chaos's checker (chaos_check.h).
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "chaos_check.h"

void chaos_checker_init(chaos_checker *c, GArray *pauses, GArray *expiries) {
  memset(c, 0, sizeof *c);
  c->pauses = pauses;
  c->expiries = expiries;
  c->violations = g_ptr_array_new_with_free_func(g_free);
  c->lost_margins = g_array_new(FALSE, FALSE, sizeof(int64_t));
  c->partition_margins = g_array_new(FALSE, FALSE, sizeof(int64_t));
}

void chaos_checker_clear(chaos_checker *c) {
  if (c->violations)
    g_ptr_array_free(c->violations, TRUE);
  if (c->lost_margins)
    g_array_free(c->lost_margins, TRUE);
  if (c->partition_margins)
    g_array_free(c->partition_margins, TRUE);
  memset(c, 0, sizeof *c);
}

static void violation(chaos_checker *c, const char *fmt, ...)
    G_GNUC_PRINTF(2, 3);
static void violation(chaos_checker *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_ptr_array_add(c->violations, g_strdup_vprintf(fmt, ap));
  va_end(ap);
}

/* ------------------------------------------------------------- parsing */

static chaos_hold *hold_numbered(GArray *holds, guint from, int n) {
  for (guint i = from; i < holds->len; i++)
    if (g_array_index(holds, chaos_hold, i).n == n)
      return &g_array_index(holds, chaos_hold, i);
  return NULL;
}

/* The latest hold with @p token that has not been told LOST yet. */
static chaos_hold *hold_with_token(GArray *holds, guint from, int64_t token) {
  for (guint i = holds->len; i > from; i--) {
    chaos_hold *h = &g_array_index(holds, chaos_hold, i - 1);
    if (h->token == token && h->lost == 0)
      return h;
  }
  return NULL;
}

void chaos_log_holds(const char *text, int instance, int64_t died,
                     int64_t last_resort, GArray *holds) {
  guint first = holds->len;
  /* Tokens told LOST before the acquisition that got them returned (a lock
   * lost on its way back to the caller): those holds were empty. */
  GArray *lost_early = g_array_new(FALSE, FALSE, sizeof(int64_t));
  gchar **lines = g_strsplit(text, "\n", -1);
  for (int i = 0; lines[i]; i++) {
    int64_t t, token, d;
    int n, zk;
    char what[32], s1[64], s2[64];
    if (sscanf(lines[i], "%" SCNd64 " %31s", &t, what) != 2)
      continue;
    if (strcmp(what, "ACQ") == 0 &&
        sscanf(lines[i], "%*d ACQ %d %63s %" SCNd64 " %" SCNd64 " %d", &n, s1,
               &token, &d, &zk) == 5 &&
        strcmp(s1, "ZKRC_OK") == 0) {
      chaos_hold h = {.instance = instance, .n = n, .token = token,
                      .asked = t - d, .acquired = t};
      for (guint j = 0; j < lost_early->len; j++)
        if (g_array_index(lost_early, int64_t, j) == token)
          h.lost = t;
      if (token == -1)
        h.lost = t;
      g_array_append_val(holds, h);
    } else if (strcmp(what, "LOCKEVENT") == 0 &&
               sscanf(lines[i], "%*d LOCKEVENT %63s %63s %" SCNd64, s1, s2,
                      &token) == 3 &&
               strcmp(s1, "lost") == 0) {
      chaos_hold *h = hold_with_token(holds, first, token);
      if (h)
        h->lost = t;
      else
        g_array_append_val(lost_early, token);
    } else if (strcmp(what, "REL") == 0 &&
               sscanf(lines[i], "%*d REL %d %63s %" SCNd64, &n, s1, &d) == 3) {
      chaos_hold *h = hold_numbered(holds, first, n);
      if (h && h->released == 0) {
        h->released = t - d;
        g_strlcpy(h->rel, s1, sizeof h->rel);
      }
    }
  }
  g_strfreev(lines);
  g_array_free(lost_early, TRUE);
  for (guint i = first; i < holds->len; i++) {
    chaos_hold *h = &g_array_index(holds, chaos_hold, i);
    int64_t end = died ? died : last_resort;
    if (h->lost)
      end = MIN(end, h->lost);
    if (h->released)
      end = MIN(end, h->released);
    h->end = MAX(end, h->acquired);
  }
}

/* ------------------------------------------------------------ checking */

static gboolean spans_meet(GArray *spans, int instance, int64_t a, int64_t b) {
  for (guint i = 0; spans && i < spans->len; i++) {
    chaos_span *s = &g_array_index(spans, chaos_span, i);
    if ((s->instance == instance || s->instance == -1) && s->start < b &&
        s->end > a)
      return TRUE;
  }
  return FALSE;
}

static gint by_acquired(gconstpointer x, gconstpointer y) {
  const chaos_hold *a = *(chaos_hold *const *)x, *b = *(chaos_hold *const *)y;
  return a->acquired < b->acquired ? -1 : a->acquired > b->acquired;
}

/* @p a was still told it held when @p b was told it holds. */
static void judge_overlap(chaos_checker *c, chaos_hold *a, chaos_hold *b) {
  c->overlaps++;
  if (!a->counted_overlap) {
    a->counted_overlap = TRUE;
    c->overlapping_holds++;
  }
  if (spans_meet(c->pauses, a->instance, a->asked, b->acquired)) {
    c->excused_frozen++;
  } else if (spans_meet(c->expiries, a->instance, a->asked, b->acquired)) {
    c->excused_closed++;
  } else {
    char told[64];
    if (a->lost)
      g_snprintf(told, sizeof told, "told LOST %.3f s after",
                 (double)(a->lost - b->acquired) / 1e6);
    else
      g_strlcpy(told, "never told LOST", sizeof told);
    violation(c,
              "two holders at once: w%d #%d (token %" PRId64 ", %s, release "
              "%s) still held %.3f s after w%d #%d was told it holds (token "
              "%" PRId64 "), and was neither frozen nor closed by an operator",
              a->instance, a->n, a->token, told, a->rel[0] ? a->rel : "none",
              (double)(a->end - b->acquired) / 1e6, b->instance, b->n,
              b->token);
  }
}

/* The margin of a hold ended by LOST that nothing excused: how long before
 * the next grant after it (sorted @p all, @p i its index) it was told. */
static void measure_margin(chaos_checker *c, GPtrArray *all, guint i) {
  chaos_hold *a = g_ptr_array_index(all, i);
  if (a->lost == 0 || a->lost != a->end || a->lost == a->acquired ||
      spans_meet(c->pauses, a->instance, a->asked, a->lost) ||
      spans_meet(c->expiries, a->instance, a->asked, a->lost))
    return;
  if (i + 1 < all->len) {
    chaos_hold *b = g_ptr_array_index(all, i + 1);
    int64_t margin = b->acquired - a->lost;
    g_array_append_val(c->lost_margins, margin);
    if (spans_meet(c->partitions, a->instance, a->lost - 1, a->lost + 1))
      g_array_append_val(c->partition_margins, margin);
  }
}

void chaos_check_holds(chaos_checker *c, GPtrArray *all) {
  g_ptr_array_sort(all, by_acquired);
  GHashTable *tokens = g_hash_table_new(g_int64_hash, g_int64_equal);
  for (guint i = 0; i < all->len; i++) {
    chaos_hold *b = g_ptr_array_index(all, i);
    chaos_hold *same = g_hash_table_lookup(tokens, &b->token);
    if (same && b->token != -1)
      violation(c, "token %" PRId64 " was given to two holds (w%d #%d, w%d #%d)",
                b->token, same->instance, same->n, b->instance, b->n);
    g_hash_table_insert(tokens, &b->token, b);
    for (guint j = 0; j < i; j++) {
      chaos_hold *a = g_ptr_array_index(all, j);
      if (a->end > b->acquired)
        judge_overlap(c, a, b);
      else if (a->token >= b->token && b->token != -1)
        violation(c, "w%d #%d got token %" PRId64 " after w%d #%d had ended "
                  "with the higher token %" PRId64,
                  b->instance, b->n, b->token, a->instance, a->n, a->token);
    }
    measure_margin(c, all, i);
  }
  g_hash_table_destroy(tokens);
}

static gint by_value(gconstpointer x, gconstpointer y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return a < b ? -1 : a > b;
}

void chaos_margin_stats(GArray *margins, int64_t *min, int64_t *median) {
  *min = *median = 0;
  if (margins->len == 0)
    return;
  g_array_sort(margins, by_value);
  *min = g_array_index(margins, int64_t, 0);
  *median = g_array_index(margins, int64_t, margins->len / 2);
}
