/*
 * zkr-bench: mutual exclusion, judged by the tests' one checker of "held
 * means held" (tests/holds.h) over the holds every participant reported.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include "bench.h"
#include "holds.h"

struct bench_holds {
  GArray *holds; /* of zkt_hold */
};

bench_holds *bench_holds_new(void) {
  bench_holds *h = g_new0(bench_holds, 1);
  h->holds = g_array_new(FALSE, TRUE, sizeof(zkt_hold));
  return h;
}

void bench_holds_add(bench_holds *h, int who, int64_t token, int64_t held_us,
                     int64_t releasing_us) {
  zkt_hold_add(h->holds, who, token, held_us, releasing_us);
}

void bench_holds_check(bench_holds *h, gboolean tokens_in_grant_order,
                       int *overlaps, int *token_disorder) {
  zkt_checker c;
  zkt_checker_init(&c, NULL, NULL);
  c.tokens_in_grant_order = tokens_in_grant_order;
  zkt_check_hold_array(&c, h->holds); /* prints each violation */
  *overlaps = c.overlap_violations;
  *token_disorder = c.token_violations;
  zkt_checker_clear(&c);
}

void bench_holds_free(bench_holds *h) {
  g_array_free(h->holds, TRUE);
  g_free(h);
}
