/*
 * An object freed with its free_async, as the tests see it: the events it
 * told (and any told after done, which must stay none), whether free_async
 * was called from its own callback and returned before done ran.
 */
#ifndef ZKT_ENDING_H
#define ZKT_ENDING_H

#include <glib.h>

typedef struct zkt_ending {
  GMutex mu;
  GCond cond;
  gboolean free_in_callback; /* free_async from the first trigger event */
  int events, triggers;      /* told; of those, the trigger kind */
  int after_done;            /* told after done: must stay 0 */
  gboolean callback_over;    /* the call of free_async returned */
  gboolean done, done_after_callback;
  int free_rc; /* what free_async returned */
} zkt_ending;

zkt_ending *zkt_ending_new(gboolean free_in_callback);
void zkt_ending_free(zkt_ending *e);

/* A free_async's done (@p arg: the zkt_ending). */
void zkt_ending_done(void *arg);

/* An event was told (@p trigger: of the kind the test waits for): TRUE
 * when the callback must now call free_async (free_in_callback, the first
 * trigger), then zkt_ending_freed() with what it returned. */
gboolean zkt_ending_event(zkt_ending *e, gboolean trigger);
void zkt_ending_freed(zkt_ending *e, int rc);

/* For zkt_wait_for(): a trigger event was told. */
int zkt_ending_triggered(void *e);

/* Wait until done ran, at most @p timeout_ms: non-zero when it did. */
int zkt_ending_wait_done(zkt_ending *e, int timeout_ms);

#endif /* ZKT_ENDING_H */
