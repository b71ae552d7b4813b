/*
 * holds.c - the checker of holds shared by the tests (holds.h).
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "holds.h"

void zkt_checker_init(zkt_checker *c, GArray *pauses, GArray *expiries) {
  memset(c, 0, sizeof *c);
  c->pauses = pauses;
  c->expiries = expiries;
  c->closest = G_MAXINT64;
  c->violations = g_ptr_array_new_with_free_func(g_free);
  c->lost_margins = g_array_new(FALSE, FALSE, sizeof(int64_t));
  c->partition_margins = g_array_new(FALSE, FALSE, sizeof(int64_t));
}

void zkt_checker_clear(zkt_checker *c) {
  if (c->violations)
    g_ptr_array_free(c->violations, TRUE);
  if (c->lost_margins)
    g_array_free(c->lost_margins, TRUE);
  if (c->partition_margins)
    g_array_free(c->partition_margins, TRUE);
  memset(c, 0, sizeof *c);
}

zkt_hold *zkt_hold_add(GArray *holds, int instance, int64_t token,
                       int64_t acquired, int64_t end) {
  zkt_hold h = {.instance = instance,
                .token = token,
                .asked = acquired,
                .acquired = acquired,
                .end = MAX(end, acquired)};
  for (guint i = 0; i < holds->len; i++)
    h.n += g_array_index(holds, zkt_hold, i).instance == instance;
  h.n++;
  g_array_append_val(holds, h);
  return &g_array_index(holds, zkt_hold, holds->len - 1);
}

static void violation(zkt_checker *c, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void violation(zkt_checker *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_ptr_array_add(c->violations, g_strdup_vprintf(fmt, ap));
  va_end(ap);
}

/* "w3 #2" or "p3 #2": who and which of its holds, for messages. */
static const char *who(const zkt_hold *h, char *buf, size_t size) {
  if (h->name)
    g_snprintf(buf, size, "%s #%d", h->name, h->n);
  else
    g_snprintf(buf, size, "w%d #%d", h->instance, h->n);
  return buf;
}

/* ------------------------------------------------------------ checking */

static gboolean spans_meet(GArray *spans, int instance, int64_t a, int64_t b) {
  for (guint i = 0; spans && i < spans->len; i++) {
    zkt_span *s = &g_array_index(spans, zkt_span, i);
    if ((s->instance == instance || s->instance == -1) && s->start < b &&
        s->end > a)
      return TRUE;
  }
  return FALSE;
}

static gint by_acquired(gconstpointer x, gconstpointer y) {
  const zkt_hold *a = *(zkt_hold *const *)x, *b = *(zkt_hold *const *)y;
  return a->acquired < b->acquired ? -1 : a->acquired > b->acquired;
}

static const char FROZEN[] = "frozen";
static const char CLOSED[] = "closed by an operator";

/* What excuses @p a still holding when @p b was told it holds (FROZEN,
 * CLOSED or the test's own zkt_hold.excuse), or NULL. */
static const char *overlap_excuse(const zkt_checker *c, const zkt_hold *a,
                                  const zkt_hold *b) {
  if (spans_meet(c->pauses, a->instance, a->asked, b->acquired))
    return FROZEN;
  if (spans_meet(c->expiries, a->instance, a->asked, b->acquired))
    return CLOSED;
  return a->excuse;
}

static void count_excuse(zkt_checker *c, const zkt_hold *a, const zkt_hold *b,
                         const char *excuse) {
  if (excuse == NULL)
    return;
  if (excuse == FROZEN) {
    c->excused_frozen++;
  } else if (excuse == CLOSED) {
    c->excused_closed++;
  } else {
    c->excused_own++;
    c->worst_excused_own = MAX(c->worst_excused_own, a->end - b->acquired);
  }
}

/* @p a was still told it held when @p b was told it holds, one of
 * @p together holds (@p b included) with no excuse, more than
 * c->capacity: a violation unless @p excuse. */
static void judge_overlap(zkt_checker *c, zkt_hold *a, zkt_hold *b,
                          const char *excuse, int together) {
  c->overlaps++;
  if (!a->counted_overlap) {
    a->counted_overlap = TRUE;
    c->overlapping_holds++;
  }
  count_excuse(c, a, b, excuse);
  if (c->on_overlap)
    c->on_overlap(a, b, excuse, c->ctx);
  if (excuse)
    return;
  char told[64], wa[80], wb[80], many[64];
  if (a->lost)
    g_snprintf(told, sizeof told, "told LOST %.3f s after",
               (double)(a->lost - b->acquired) / 1e6);
  else
    g_strlcpy(told, "never told LOST", sizeof told);
  if (c->capacity > 1)
    g_snprintf(many, sizeof many, "%d holders at once (at most %d)", together,
               c->capacity);
  else
    g_strlcpy(many, "two holders at once", sizeof many);
  c->overlap_violations++;
  violation(c,
            "%s: %s (token %" PRId64 ", %s, release %s) "
            "still held %.3f s after %s was told it holds (token %" PRId64
            "), and was neither frozen nor closed by an operator",
            many, who(a, wa, sizeof wa), a->token, told,
            a->rel[0] ? a->rel : "none", (double)(a->end - b->acquired) / 1e6,
            who(b, wb, sizeof wb), b->token);
}

/* Does @p a (granted before @p b) still run when @p b is granted, other
 * than as a reader beside a reader?  (The compatibility of two holds: only
 * shared ones may run together without counting against the capacity.) */
static gboolean runs_with(const zkt_hold *a, const zkt_hold *b) {
  return a->end > b->acquired && !(a->shared && b->shared);
}

/* The grant that a hold @p a (the @p i-th of sorted @p all) ended by LOST
 * had to make room for: the first later one that could not run beside it
 * (a writer's next grant, a reader's next writer) and that found the rest
 * of the capacity taken (for a semaphore, the grant that would have been
 * one too many had @p a still held).  NULL when there is none. */
static zkt_hold *successor(const zkt_checker *c, GPtrArray *all, guint i) {
  zkt_hold *a = g_ptr_array_index(all, i);
  for (guint j = i + 1; j < all->len; j++) {
    zkt_hold *b = g_ptr_array_index(all, j);
    if (a->shared && b->shared)
      continue;
    int others = 0;
    for (guint k = 0; k < j; k++)
      others += k != i && runs_with(g_ptr_array_index(all, k), b);
    if (others >= MAX(c->capacity, 1) - 1)
      return b;
  }
  return NULL;
}

/* The margin of a hold ended by LOST that nothing excused: how long before
 * its successor's grant it was told. */
static void measure_margin(zkt_checker *c, GPtrArray *all, guint i) {
  zkt_hold *a = g_ptr_array_index(all, i);
  if (a->lost == 0 || a->lost != a->end || a->lost == a->acquired ||
      spans_meet(c->pauses, a->instance, a->asked, a->lost) ||
      spans_meet(c->expiries, a->instance, a->asked, a->lost))
    return;
  zkt_hold *b = successor(c, all, i);
  if (b) {
    int64_t margin = b->acquired - a->lost;
    g_array_append_val(c->lost_margins, margin);
    if (spans_meet(c->partitions, a->instance, a->lost - 1, a->lost + 1))
      g_array_append_val(c->partition_margins, margin);
  }
}

/* @p b's token is wrong against @p a's: @p how says why. */
static void token_violation(zkt_checker *c, const zkt_hold *a,
                            const zkt_hold *b, const char *how) {
  char wa[80], wb[80];
  c->token_violations++;
  violation(c, "%s got token %" PRId64 " %s %s (token %" PRId64 ")",
            who(b, wb, sizeof wb), b->token, how, who(a, wa, sizeof wa),
            a->token);
}

/* Tokens rise from grant to grant (c->tokens_in_grant_order): @p b, the
 * @p i-th grant of sorted @p all, against the highest before it. */
static void check_grant_order(zkt_checker *c, GPtrArray *all, guint i) {
  zkt_hold *b = g_ptr_array_index(all, i), *top = NULL;
  zkt_hold *prev = i ? g_ptr_array_index(all, i - 1) : NULL;
  if (prev && prev->instance == b->instance && prev->token == b->token)
    return; /* granted again the token it had: the same hold resumed */
  for (guint j = 0; j < i; j++) {
    zkt_hold *a = g_ptr_array_index(all, j);
    if (top == NULL || a->token > top->token)
      top = a;
  }
  char wb[80];
  if (b->token <= 0) {
    c->token_violations++;
    violation(c, "%s got no token (%" PRId64 ")", who(b, wb, sizeof wb),
              b->token);
  } else if (top && b->token <= top->token) {
    token_violation(c, top, b, "not above the one granted before it to");
  }
}

/* Tokens: no two holds with the same one, and a hold @p b (the @p i-th of
 * sorted @p all) that began after another ended has a higher token. */
static void check_tokens(zkt_checker *c, GPtrArray *all, guint i,
                         GHashTable *tokens) {
  zkt_hold *b = g_ptr_array_index(all, i);
  zkt_hold *same = g_hash_table_lookup(tokens, &b->token);
  if (same && b->token != -1)
    token_violation(c, same, b, "already given to");
  g_hash_table_insert(tokens, &b->token, b);
  for (guint j = 0; j < i; j++) {
    zkt_hold *a = g_ptr_array_index(all, j);
    if (a->end <= b->acquired && a->token >= b->token && b->token != -1 &&
        !(a->shared && b->shared))
      token_violation(c, a, b, "not above that of the ended hold");
  }
}

/* The grant of the @p i-th hold of sorted @p all, against the holds
 * granted before it that still run then.  With the capacity C (1: a
 * mutex, a writer against everyone; N: a semaphore), at most C - 1 of them
 * may run; the ones an excuse covers (frozen, closed by the operator, the
 * test's own) do not count, since their holders could not have been told
 * in time, and the others are then judged only when they still leave no
 * room: a semaphore's holder is not blamed for a frozen co-holder. */
static void judge_grant(zkt_checker *c, GPtrArray *all, guint i) {
  zkt_hold *b = g_ptr_array_index(all, i);
  int capacity = MAX(c->capacity, 1), running = 0, unexcused = 0;
  for (guint j = 0; j < i; j++)
    if (runs_with(g_ptr_array_index(all, j), b)) {
      running++;
      unexcused += overlap_excuse(c, g_ptr_array_index(all, j), b) == NULL;
    }
  if (running < capacity)
    return;
  for (guint j = 0; j < i; j++) {
    zkt_hold *a = g_ptr_array_index(all, j);
    if (!runs_with(a, b))
      continue;
    const char *excuse = overlap_excuse(c, a, b);
    if (excuse || unexcused >= capacity)
      judge_overlap(c, a, b, excuse, unexcused + 1);
  }
}

int zkt_check_holds(zkt_checker *c, GPtrArray *all) {
  g_ptr_array_sort(all, by_acquired);
  GHashTable *tokens = g_hash_table_new(g_int64_hash, g_int64_equal);
  int64_t max_end = G_MININT64;
  for (guint i = 0; i < all->len; i++) {
    zkt_hold *b = g_ptr_array_index(all, i);
    if (c->tokens_in_grant_order)
      check_grant_order(c, all, i);
    else
      check_tokens(c, all, i, tokens);
    if (!c->tokens_only)
      judge_grant(c, all, i);
    if (i > 0 && b->acquired >= max_end)
      c->closest = MIN(c->closest, b->acquired - max_end);
    max_end = MAX(max_end, b->end);
    measure_margin(c, all, i);
  }
  g_hash_table_destroy(tokens);
  return (int)c->violations->len;
}

int zkt_check_hold_array(zkt_checker *c, GArray *holds) {
  GPtrArray *all = g_ptr_array_new();
  for (guint i = 0; i < holds->len; i++)
    g_ptr_array_add(all, &g_array_index(holds, zkt_hold, i));
  int n = zkt_check_holds(c, all);
  for (guint i = 0; i < c->violations->len; i++)
    fprintf(stderr, "\n%s\n", (char *)g_ptr_array_index(c->violations, i));
  g_ptr_array_free(all, TRUE);
  return n;
}

int zkt_overlapping_pairs(GArray *holds) {
  int pairs = 0;
  for (guint i = 0; i < holds->len; i++)
    for (guint j = i + 1; j < holds->len; j++) {
      const zkt_hold *a = &g_array_index(holds, zkt_hold, i);
      const zkt_hold *b = &g_array_index(holds, zkt_hold, j);
      pairs += a->acquired < b->end && b->acquired < a->end &&
               !(a->shared && b->shared);
    }
  return pairs;
}

int zkt_read_hold_log(const char *file, GArray *holds) {
  FILE *f = fopen(file, "r");
  if (f == NULL)
    return -1;
  int who, n = 0;
  int64_t token, acquired, end;
  while (fscanf(f, "%d %" SCNd64 " %" SCNd64 " %" SCNd64, &who, &token,
                &acquired, &end) == 4) {
    zkt_hold_add(holds, who, token, acquired, end);
    n++;
  }
  fclose(f);
  return n;
}

int zkt_check_hold_log(const char *file, int *violations) {
  GArray *holds = g_array_new(FALSE, TRUE, sizeof(zkt_hold));
  int n = zkt_read_hold_log(file, holds);
  zkt_checker c;
  zkt_checker_init(&c, NULL, NULL);
  c.tokens_in_grant_order = TRUE;
  *violations = zkt_check_hold_array(&c, holds);
  zkt_checker_clear(&c);
  g_array_free(holds, TRUE);
  return n;
}

int64_t zkt_hold_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static gint by_value(gconstpointer x, gconstpointer y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return a < b ? -1 : a > b;
}

void zkt_margin_stats(GArray *margins, int64_t *min, int64_t *median) {
  *min = *median = 0;
  if (margins->len == 0)
    return;
  g_array_sort(margins, by_value);
  *min = g_array_index(margins, int64_t, 0);
  *median = g_array_index(margins, int64_t, margins->len / 2);
}
