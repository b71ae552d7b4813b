/*
 * chaos_log.c - the holds in the chaos workers' logs (chaos_log.h).
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "chaos_log.h"

static zkt_hold *hold_numbered(GArray *holds, guint from, int n) {
  for (guint i = from; i < holds->len; i++)
    if (g_array_index(holds, zkt_hold, i).n == n)
      return &g_array_index(holds, zkt_hold, i);
  return NULL;
}

/* The latest hold with @p token that has not been told LOST yet. */
static zkt_hold *hold_with_token(GArray *holds, guint from, int64_t token) {
  for (guint i = holds->len; i > from; i--) {
    zkt_hold *h = &g_array_index(holds, zkt_hold, i - 1);
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
    char what[32], s1[64], s2[64], side[16] = "";
    if (sscanf(lines[i], "%" SCNd64 " %31s", &t, what) != 2)
      continue;
    if (strcmp(what, "ACQ") == 0 &&
        sscanf(lines[i], "%*d ACQ %d %63s %" SCNd64 " %" SCNd64 " %d %15s", &n,
               s1, &token, &d, &zk, side) >= 5 &&
        strcmp(s1, "ZKRC_OK") == 0) {
      zkt_hold h = {.instance = instance,
                    .n = n,
                    .token = token,
                    .asked = t - d,
                    .acquired = t,
                    .shared = strcmp(side, "read") == 0};
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
      zkt_hold *h = hold_with_token(holds, first, token);
      if (h)
        h->lost = t;
      else
        g_array_append_val(lost_early, token);
    } else if (strcmp(what, "REL") == 0 &&
               sscanf(lines[i], "%*d REL %d %63s %" SCNd64, &n, s1, &d) == 3) {
      zkt_hold *h = hold_numbered(holds, first, n);
      if (h && h->released == 0) {
        h->released = t - d;
        g_strlcpy(h->rel, s1, sizeof h->rel);
      }
    }
  }
  g_strfreev(lines);
  g_array_free(lost_early, TRUE);
  for (guint i = first; i < holds->len; i++) {
    zkt_hold *h = &g_array_index(holds, zkt_hold, i);
    int64_t end = died ? died : last_resort;
    if (h->lost)
      end = MIN(end, h->lost);
    if (h->released)
      end = MIN(end, h->released);
    h->end = MAX(end, h->acquired);
  }
}
