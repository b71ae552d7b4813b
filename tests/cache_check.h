/*
 * The cache checker (issue 16): what a cache's listener was told, replayed
 * and judged against include/zkrecipes/cache.h, in memory only, so that
 * test_cache_check can prove on synthetic and corrupted streams that it
 * catches what it must (and test_cache_faults uses it on the real thing).
 *
 * A stream is an array of cc_event, deep copies of what the listener got.
 * cc_replay() applies it in order to an empty map (ADDED and UPDATED set
 * the path's value, REMOVED deletes it) and counts every violation of the
 * header's rules, naming each in a report:
 *  - a node event carries a node, UPDATED also the old value, other events
 *    neither, but UNREADABLE (its path and stat, no data, in scope; the
 *    copy unchanged);
 *  - every node lies in the cache's scope (its root, between a minimum and
 *    a maximum depth below it);
 *  - ADDED only for a path not in the copy; UPDATED and REMOVED only for
 *    one in it;
 *  - UPDATED's old value and REMOVED's value are the last value reported
 *    for the path; UPDATED's new mzxid differs from the old one;
 *  - INITIALIZED exactly once;
 *  - RECONNECTED only after SUSPENDED or LOST (connected again).
 * It also counts, without calling them violations (the header does not
 * forbid them), values whose mzxid is older than one reported before for
 * the same path: the copy went back in time, as it may after a new session
 * on a member that lags.
 */
#ifndef ZKT_CACHE_CHECK_H
#define ZKT_CACHE_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include <glib.h>
#include <zkrecipes/cache.h>

/* A node's value: data (NULL with len -1 when the node has none) and the
 * parts of its stat that change with its data. */
typedef struct cc_value {
  char *data; /* len bytes (plus a NUL), or NULL */
  int len;    /* -1: no data */
  int64_t czxid, mzxid;
  int32_t version, data_length;
} cc_value;

/* One event as the listener was told it. */
typedef struct cc_event {
  int type;   /* zkrc_cache_event_type */
  char *path; /* node events: node->path; NULL otherwise */
  int has_node, has_old;
  cc_value node, old;
} cc_event;

/* Deep copies (free with cc_event_clear()). */
cc_event cc_event_from(const zkrc_cache_event *ev);
cc_value cc_value_from(const zkrc_cache_node *n);
cc_value cc_value_copy(const cc_value *v);
void cc_value_clear(cc_value *v);
void cc_event_clear(cc_event *e);
cc_event cc_event_copy(const cc_event *e);
/* The same value (data bytes, NULL-ness and the stat fields above)? */
int cc_value_equal(const cc_value *a, const cc_value *b);
/* "ADDED", ... without the library (the checker must not need it). */
const char *cc_type_name(int type);

/* A state: path -> cc_value*, owning both. */
GHashTable *cc_state_new(void);
void cc_state_put(GHashTable *state, const char *path, const cc_value *v);
GHashTable *cc_state_copy(GHashTable *state);
/* Paths missing from @p got, extra in it, or with another value; each
 * named in @p report (at most the first 20) when it is not NULL. */
int cc_state_diff(GHashTable *want, GHashTable *got, GString *report);

/* Where a cache's nodes may lie: @p root itself has depth 0. */
typedef struct cc_scope {
  const char *root;
  int min_depth;
  int max_depth; /* -1: no limit */
} cc_scope;

/* What a replay found. */
typedef struct cc_replay {
  GHashTable *state;          /* the copy after the last event */
  GHashTable *at_initialized; /* the copy when INITIALIZED came, or NULL */
  long initialized_index;     /* its index in the stream, -1 if none */
  long counts[9];             /* events by type (index: type) */
  int violations;
  int regressions; /* values older than one reported before */
  int down_at_end; /* the last connection event was SUSPENDED or LOST */
  GString *report; /* one line per violation (the first 50) */
} cc_replay;

/* Replay @p n events; fills @p out (free with cc_replay_clear()); returns
 * out->violations. */
int cc_replay_run(const cc_event *events, size_t n, const cc_scope *scope,
                  cc_replay *out);
void cc_replay_clear(cc_replay *r);

/* Depth of @p path below @p root (0: root itself), -1 when it is not
 * under it. */
int cc_depth(const char *root, const char *path);

/* A change of one node that a cache's copy should hold (its mzxid). */
typedef struct cc_copy_has {
  zkrc_cache *c;
  const char *path;
  int64_t mzxid;
} cc_copy_has;

/* For zkt_wait_for(): does the copy of h->c (a cc_copy_has) hold that
 * change now?  Polled where no event can announce it (a listener held up
 * on purpose). */
int cc_copy_has_change(void *h);

#endif /* ZKT_CACHE_CHECK_H */
