/*
 * chaos_timelease.c - the time leases of test_chaos's workers as holds
 * (chaos_timelease.h says what is checked and why).
 */
#include "config.h"

#include "chaos_timelease.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void chaos_tl_init(chaos_tl_run *r, int nslots) {
  memset(r, 0, sizeof *r);
  r->nslots = nslots;
  r->by_slot = g_new0(GArray *, nslots);
  for (int i = 0; i < nslots; i++)
    r->by_slot[i] = g_array_new(FALSE, TRUE, sizeof(zkt_hold));
}

void chaos_tl_clear(chaos_tl_run *r) {
  for (int i = 0; r->by_slot && i < r->nslots; i++)
    g_array_free(r->by_slot[i], TRUE);
  g_free(r->by_slot);
  memset(r, 0, sizeof *r);
}

/* A lease obtained or renewed: a new hold, or (a renewal of the worker's
 * lease on that slot still running) the end of that hold moved.  Returns
 * the hold's index in its slot's array. */
static guint add_lease(chaos_tl_run *r, int instance, void *owner, int n,
                       int ls, gboolean renewed, int64_t decided, int64_t end,
                       int *last_of_slot) {
  GArray *holds = r->by_slot[ls];
  if (renewed && last_of_slot[ls] >= 0) {
    zkt_hold *h = &g_array_index(holds, zkt_hold, last_of_slot[ls]);
    if (h->end >= decided) {
      h->end = MAX(h->end, end);
      r->renewed_running++;
      return (guint)last_of_slot[ls];
    }
  }
  zkt_hold h = {.instance = instance,
                .n = n,
                .owner = owner,
                .token = -1, /* a time lease gives no fencing token */
                .asked = decided,
                .acquired = decided,
                .end = end};
  g_array_append_val(holds, h);
  last_of_slot[ls] = (int)holds->len - 1;
  return holds->len - 1;
}

void chaos_tl_add_log(chaos_tl_run *r, const char *text, int instance,
                      void *owner) {
  int *last_of_slot = g_new(int, r->nslots);
  for (int i = 0; i < r->nslots; i++)
    last_of_slot[i] = -1;
  int cur_n = -1, cur_slot = -1;
  guint cur = 0;
  gchar **lines = g_strsplit(text, "\n", -1);
  for (int i = 0; lines[i]; i++) {
    int64_t t, decided, end;
    int n, ls;
    char what[16], rc[48], outcome[24];
    if (sscanf(lines[i], "%" SCNd64 " %15s", &t, what) != 2)
      continue;
    if (strcmp(what, "TL") == 0) {
      if (sscanf(lines[i],
                 "%*d TL %d %47s %23s %d %" SCNd64 " %" SCNd64 " %*d %*d", &n,
                 rc, outcome, &ls, &decided, &end) != 6) {
        r->bad_records++;
        continue;
      }
      r->attempts++;
      if (strcmp(rc, "ZKRC_OK") != 0) {
        r->failed++;
        continue;
      }
      gboolean renewed = strcmp(outcome, "renewed") == 0;
      if (!renewed && strcmp(outcome, "obtained") != 0) {
        r->refused++;
        continue;
      }
      if (ls < 0 || ls >= r->nslots || end <= decided) {
        r->bad_records++;
        continue;
      }
      r->obtained += !renewed;
      r->renewed += renewed;
      cur = add_lease(r, instance, owner, n, ls, renewed, decided, end,
                      last_of_slot);
      cur_n = n;
      cur_slot = ls;
    } else if (strcmp(what, "WORK") == 0 &&
               sscanf(lines[i], "%*d WORK %d", &n) == 1) {
      r->work_steps++;
      if (n != cur_n) {
        r->bad_records++;
        continue;
      }
      /* A step after the end written: the hold lasts until it. */
      zkt_hold *h = &g_array_index(r->by_slot[cur_slot], zkt_hold, cur);
      if (t >= h->end) {
        r->late_steps++;
        h->end = t + 1;
      }
    }
  }
  g_strfreev(lines);
  g_free(last_of_slot);
}

typedef struct edge {
  int64_t t;
  int delta;
} edge;

static gint by_time(gconstpointer x, gconstpointer y) {
  const edge *a = x, *b = y;
  if (a->t != b->t)
    return a->t < b->t ? -1 : 1;
  return a->delta - b->delta; /* an end before a grant at the same time */
}

static int most_at_once(chaos_tl_run *r) {
  GArray *edges = g_array_new(FALSE, FALSE, sizeof(edge));
  for (int s = 0; s < r->nslots; s++)
    for (guint i = 0; i < r->by_slot[s]->len; i++) {
      zkt_hold *h = &g_array_index(r->by_slot[s], zkt_hold, i);
      edge a = {h->acquired, 1}, b = {h->end, -1};
      g_array_append_val(edges, a);
      g_array_append_val(edges, b);
    }
  g_array_sort(edges, by_time);
  int running = 0, most = 0;
  for (guint i = 0; i < edges->len; i++) {
    running += g_array_index(edges, edge, i).delta;
    most = MAX(most, running);
  }
  g_array_free(edges, TRUE);
  return most;
}

int chaos_tl_check(chaos_tl_run *r, GPtrArray *violations, int *overlaps,
                   int *most) {
  int found = 0;
  *overlaps = 0;
  for (int s = 0; s < r->nslots; s++) {
    zkt_checker c;
    zkt_checker_init(&c, NULL, NULL); /* no excuse: see the header */
    GPtrArray *all = g_ptr_array_new();
    for (guint i = 0; i < r->by_slot[s]->len; i++)
      g_ptr_array_add(all, &g_array_index(r->by_slot[s], zkt_hold, i));
    found += zkt_check_holds(&c, all);
    *overlaps += c.overlaps;
    for (guint i = 0; i < c.violations->len; i++)
      g_ptr_array_add(violations, g_strdup_printf("slot %d: %s", s,
                                                  (char *)g_ptr_array_index(
                                                      c.violations, i)));
    g_ptr_array_free(all, TRUE);
    zkt_checker_clear(&c);
  }
  *most = most_at_once(r);
  return found;
}
