/*
 * chaos_barrier.c - the double barrier's rules over the members' logs
 * (chaos_barrier.h says which, and why they are sound).
 */
#include "config.h"

#include "chaos_barrier.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "holds.h"

typedef struct member_round {
  int instance, round;
  int64_t asked;    /* ASK */
  int64_t entered;  /* the first telling of ENTERED; 0: never */
  int64_t left;     /* the first telling of LEFT; 0: never */
  int64_t lost;     /* told LOST; 0: never */
  int64_t out;      /* leave called, or freed; 0: neither */
  int64_t sure_end; /* the end of "surely in" (see the header) */
} member_round;

void chaos_db_init(chaos_db_run *r, int members) {
  memset(r, 0, sizeof *r);
  r->members = members;
  r->rounds = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL,
                                    (GDestroyNotify)g_ptr_array_unref);
  r->keep = g_ptr_array_new_with_free_func(g_free);
}

void chaos_db_clear(chaos_db_run *r) {
  if (r->rounds)
    g_hash_table_destroy(r->rounds);
  if (r->keep)
    g_ptr_array_free(r->keep, TRUE);
  memset(r, 0, sizeof *r);
}

static int64_t first_of(int64_t a, int64_t b) {
  return a == 0 ? b : b == 0 ? a : MIN(a, b);
}

/* The first moment after @p from when something in @p spans (of
 * zkt_span) was done to @p instance: a freeze, an operator's close. */
static int64_t first_span(GArray *spans, int instance, int64_t from) {
  int64_t t = 0;
  for (guint i = 0; spans && i < spans->len; i++) {
    zkt_span *s = &g_array_index(spans, zkt_span, i);
    if (s->instance == instance && s->end > from)
      t = first_of(t, MAX(s->start, from));
  }
  return t;
}

static member_round *find(GHashTable *mine, int round) {
  return g_hash_table_lookup(mine, GINT_TO_POINTER(round));
}

void chaos_db_add_log(chaos_db_run *r, const char *text, int instance,
                      int64_t died, int64_t end, GArray *pauses,
                      GArray *expiries) {
  GHashTable *mine = g_hash_table_new(g_direct_hash, g_direct_equal);
  gchar **lines = g_strsplit(text, "\n", -1);
  for (int i = 0; lines[i]; i++) {
    int64_t t;
    int round;
    char what[16], ev[16] = "";
    if (sscanf(lines[i], "%" SCNd64 " %15s %d %15s", &t, what, &round, ev) < 3)
      continue;
    member_round *m = find(mine, round);
    if (strcmp(what, "ASK") == 0) {
      if (m) {
        r->bad_records++; /* a round is joined once */
        continue;
      }
      m = g_new0(member_round, 1);
      m->instance = instance;
      m->round = round;
      m->asked = t;
      g_ptr_array_add(r->keep, m);
      g_hash_table_insert(mine, GINT_TO_POINTER(round), m);
      GPtrArray *all = g_hash_table_lookup(r->rounds, GINT_TO_POINTER(round));
      if (all == NULL) {
        all = g_ptr_array_new();
        g_hash_table_insert(r->rounds, GINT_TO_POINTER(round), all);
      }
      g_ptr_array_add(all, m);
      r->asked++;
      continue;
    }
    if (m == NULL) {
      if (strcmp(what, "SESSION") != 0 && strcmp(what, "START") != 0 &&
          strcmp(what, "EXIT") != 0)
        r->bad_records++;
      continue;
    }
    if (strcmp(what, "ENTERED") == 0 ||
        (strcmp(what, "BEV") == 0 && strcmp(ev, "entered") == 0))
      m->entered = first_of(m->entered, t);
    else if (strcmp(what, "LEFT") == 0 ||
             (strcmp(what, "BEV") == 0 && strcmp(ev, "left") == 0))
      m->left = first_of(m->left, t);
    else if (strcmp(what, "BEV") == 0 && strcmp(ev, "lost") == 0)
      m->lost = first_of(m->lost, t);
    else if (strcmp(what, "LEAVE") == 0 || strcmp(what, "FREE") == 0)
      m->out = first_of(m->out, t);
  }
  g_strfreev(lines);
  GHashTableIter it;
  gpointer v;
  g_hash_table_iter_init(&it, mine);
  while (g_hash_table_iter_next(&it, NULL, &v)) {
    member_round *m = v;
    r->entered += m->entered != 0;
    r->left += m->left != 0;
    r->lost += m->lost != 0;
    if (m->entered == 0)
      continue;
    int64_t e = first_of(first_of(m->out, m->lost), first_of(died, end));
    e = first_of(e, first_span(pauses, instance, m->entered));
    e = first_of(e, first_span(expiries, instance, m->entered));
    m->sure_end = e;
  }
  g_hash_table_destroy(mine);
}

/* The most members of @p all possibly in at once at or before @p t. */
static int most_in_by(GPtrArray *all, int64_t t) {
  int most = 0;
  for (guint i = 0; i < all->len; i++) { /* the count peaks at an ASK */
    member_round *a = g_ptr_array_index(all, i);
    if (a->asked > t)
      continue;
    int n = 0;
    for (guint j = 0; j < all->len; j++) {
      member_round *b = g_ptr_array_index(all, j);
      n += b->asked <= a->asked && (b->left == 0 || b->left > a->asked);
    }
    most = MAX(most, n);
  }
  return most;
}

static int check_round(chaos_db_run *r, int round, GPtrArray *all,
                       GPtrArray *violations) {
  int found = 0, entered = 0;
  r->most_in_a_round = MAX(r->most_in_a_round, most_in_by(all, G_MAXINT64));
  for (guint i = 0; i < all->len; i++) {
    member_round *x = g_ptr_array_index(all, i);
    if (x->entered) {
      entered = 1;
      int most = most_in_by(all, x->entered);
      if (most < r->members) {
        found++;
        g_ptr_array_add(violations,
                        g_strdup_printf("round %d: w%d was told ENTERED when "
                                        "at most %d members had been in at "
                                        "once (N = %d)",
                                        round, x->instance, most, r->members));
      }
    }
    for (guint j = 0; x->left && j < all->len; j++) {
      member_round *y = g_ptr_array_index(all, j);
      if (y != x && y->entered && y->entered <= x->left &&
          x->left < y->sure_end) {
        found++;
        g_ptr_array_add(violations,
                        g_strdup_printf("round %d: w%d was told LEFT while "
                                        "w%d's node was surely there (told "
                                        "ENTERED %.3f s before, still in "
                                        "%.3f s after)",
                                        round, x->instance, y->instance,
                                        (double)(x->left - y->entered) / 1e6,
                                        (double)(y->sure_end - x->left) / 1e6));
      }
    }
  }
  r->rounds_entered += entered;
  return found;
}

int chaos_db_check(chaos_db_run *r, GPtrArray *violations) {
  int found = 0;
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, r->rounds);
  while (g_hash_table_iter_next(&it, &k, &v))
    found += check_round(r, GPOINTER_TO_INT(k), v, violations);
  return found;
}
