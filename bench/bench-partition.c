/*
 * zkr-bench: the set partitioner (issue 17).  How long the members of a
 * party take to divide the items again after one of them dies, and how
 * many requests the servers get for it: zkrecipes' partitioner
 * (zkrecipes/partitioner.h) beside kazoo's SetPartitioner, interleaved in
 * rounds.
 *
 * One run: PART_MEMBERS members of one implementation, each a process of
 * its own (zkr-bench-worker's partition mode, kazoo_peer.py's partition
 * mode with ZKR_PEER_STAMP=1), each on one server (member i on server
 * i % 3), the same identifiers "m0".."m7", PART_ITEMS items "i000"..,
 * time boundary PART_BOUNDARY_MS and session timeout PART_SESSION_MS for
 * both.  Once every member is ACQUIRED with its share of the 8-member
 * split (kazoo's: identifiers sorted, member i takes items i, i + n, ...;
 * the shares then cover every item once), the program waits PART_IDLE_MS
 * (the idle request rate), SIGKILLs one member (the same one for both in a
 * round) and waits until every other member is ACQUIRED again with its
 * share of the 7-member split.  Each member prints the CLOCK_MONOTONIC time
 * at which it became ACQUIRED (kazoo: when its _set_state() ran; checked
 * to be our clock, as for the caches); the rebalance ends at the latest of
 * them.
 *
 * The dead member's party node goes only when its session expires, so
 * most of kill -> rebalanced is the session timeout (minus the time since
 * its last ping); this program also watches that node (its own session,
 * bench-election.c's watcher) and splits the time at its deletion.
 * Requests: the servers' packet counters (mntr, summed over the members)
 * from just before the kill to the end of the rebalance, pings and lease
 * renewals of the 7 during the expiry included; the idle rate beside it.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include "bench.h"

#define PART_MEMBERS 8
#define PART_ITEMS 100
#define PART_BOUNDARY_MS 1000 /* time boundary, both implementations */
#define PART_SESSION_MS 4000  /* session timeout, both implementations */
#define PART_IDLE_MS 2000     /* all ACQUIRED, before the kill */

static const char *const part_impls[] = {"zkrecipes", "kazoo"};

typedef struct member {
  proc *p;
  char id[8];
  gboolean alive;
  char *share;       /* the items of its last ACQUIRED; NULL if not since */
  int64_t share_ns;  /* when it became ACQUIRED */
  int64_t clock_ns;  /* its answer to "clock", -1 before */
  int acquired_told; /* ACQUIRED lines since the counter was reset */
} member;

/* "i000,i001,...": every item, or the share of the member at @p index of
 * @p n (kazoo's split: items index, index + n, ...). */
static char *share_of(int index, int n) {
  GString *s = g_string_new(NULL);
  for (int i = index; i < PART_ITEMS; i += n)
    g_string_append_printf(s, "%s%s%03d", s->len ? "," : "", "i", i);
  return g_string_free(s, FALSE);
}

static void member_start(member *m, const char *impl, const char *path,
                         int index) {
  snprintf(m->id, sizeof m->id, "m%d", index);
  char *items = share_of(0, 1);
  char boundary[16], session[64];
  snprintf(boundary, sizeof boundary, "%d", PART_BOUNDARY_MS);
  snprintf(session, sizeof session, "ZKR_PEER_SESSION_MS=%d", PART_SESSION_MS);
  const char *addr = member_addr[index % members];
  gboolean ours = strcmp(impl, "zkrecipes") == 0;
  const char *argv[] = {ours ? opt.worker : opt.python,
                        ours ? "partition" : opt.kazoo_peer,
                        ours ? addr : "partition",
                        ours ? path : addr,
                        ours ? m->id : path,
                        ours ? boundary : m->id,
                        ours ? items : boundary,
                        ours ? NULL : items,
                        NULL};
  char *const env[] = {session, "ZKR_PEER_TIMEOUT_MS=900000",
                       "ZKR_PEER_LIFETIME_S=3600", "ZKR_PEER_STAMP=1", NULL};
  char *name = g_strdup_printf("%s partition %s", impl, m->id);
  m->p = proc_start(name, (char *const *)argv, env);
  m->alive = TRUE;
  m->share = NULL;
  m->clock_ns = -1;
  g_free(name);
  g_free(items);
}

/* A line of @p m: "acquired T_NS ITEMS", "release T_NS", "clock T_NS";
 * "failure" and "error" lines are fatal. */
static void member_line(member *m, char *line) {
  char **w = g_strsplit(line, " ", 3);
  if (g_str_has_prefix(line, "failure") || g_str_has_prefix(line, "error"))
    fatal("%s: %s", m->p->name, line);
  if (strcmp(w[0], "acquired") == 0 && w[1]) {
    g_free(m->share);
    m->share = g_strdup(w[2] ? w[2] : "");
    m->share_ns = g_ascii_strtoll(w[1], NULL, 10);
    m->acquired_told++;
  } else if (strcmp(w[0], "release") == 0) {
    g_free(m->share);
    m->share = NULL;
  } else if (strcmp(w[0], "clock") == 0 && w[1]) {
    m->clock_ns = g_ascii_strtoll(w[1], NULL, 10);
  }
  g_strfreev(w);
  g_free(line);
}

/* Handle the lines the living members have written, waiting up to
 * @p timeout_ms for the first. */
static void members_read(member *ms, int timeout_ms) {
  struct pollfd pfd[PART_MEMBERS];
  member *of[PART_MEMBERS];
  int n = 0;
  for (int i = 0; i < PART_MEMBERS; i++) {
    member *m = &ms[i];
    if (!m->alive)
      continue;
    if (memchr(m->p->buf->str, '\n', m->p->buf->len)) {
      member_line(m, proc_line(m->p, STEP_MS));
      timeout_ms = 0;
    }
    pfd[n] = (struct pollfd){.fd = m->p->out_fd, .events = POLLIN};
    of[n++] = m;
  }
  int r = poll(pfd, (nfds_t)n, timeout_ms);
  if (r < 0 && errno != EINTR)
    fatal("poll: %s", strerror(errno));
  for (int i = 0; r > 0 && i < n; i++) {
    char *line;
    if (pfd[i].revents && (line = proc_try_line(of[i]->p, 0)) != NULL)
      member_line(of[i], line);
  }
}

/* Every living member is ACQUIRED with its share of the split of the
 * living ones (so every item is held once); the latest ACQUIRED time in
 * *@p at. */
static gboolean split_done(member *ms, int64_t *at) {
  int alive = 0, k = 0;
  for (int i = 0; i < PART_MEMBERS; i++)
    alive += ms[i].alive;
  *at = 0;
  for (int i = 0; i < PART_MEMBERS; i++) {
    member *m = &ms[i];
    if (!m->alive)
      continue;
    char *want = share_of(k++, alive);
    gboolean ok = m->share && strcmp(m->share, want) == 0;
    g_free(want);
    if (!ok)
      return FALSE;
    *at = MAX(*at, m->share_ns);
  }
  return TRUE;
}

/* Read until the split of the living members is done; its time. */
static int64_t await_split(member *ms, int timeout_ms, const char *what) {
  int64_t deadline = now_ns() + (int64_t)timeout_ms * 1000000, at;
  while (!split_done(ms, &at)) {
    int left = (int)((deadline - now_ns()) / 1000000);
    if (left <= 0)
      fatal("partition: %s not done within %d ms", what, timeout_ms);
    members_read(ms, left);
  }
  return at;
}

/* Keep reading for @p ms milliseconds (an idle party says nothing). */
static void members_idle(member *ms, int ms_total) {
  int64_t end = now_ns() + (int64_t)ms_total * 1000000;
  for (int left; (left = (int)((end - now_ns()) / 1000000)) > 0;)
    members_read(ms, left);
}

/* Each member's "clock" must fall between our readings around the
 * question: its times are our CLOCK_MONOTONIC. */
static void check_clocks(member *ms) {
  for (int i = 0; i < PART_MEMBERS; i++) {
    member *m = &ms[i];
    m->clock_ns = -1;
    int64_t before = now_ns();
    proc_send(m->p, "clock");
    int64_t deadline = before + (int64_t)STEP_MS * 1000000;
    while (m->clock_ns < 0 && now_ns() < deadline)
      members_read(ms, 100);
    int64_t after = now_ns();
    if (m->clock_ns < before || m->clock_ns > after)
      fatal("%s: its clock (%" PRId64 ") is not our CLOCK_MONOTONIC (%" PRId64
            " .. %" PRId64 ")",
            m->p->name, m->clock_ns, before, after);
  }
}

/* The party node of member @p m (its name ends in "-<id>"), watched for
 * its deletion. */
static void watch_party_node(const char *path, const member *m) {
  char *party = g_strdup_printf("%s/party", path);
  struct String_vector kids = {0};
  int rc = zoo_get_children(watch_zh, party, 0, &kids);
  if (rc != ZOK)
    fatal("get_children %s: %s", party, zerror(rc));
  char *suffix = g_strdup_printf("-%s", m->id), *node = NULL;
  for (int i = 0; i < kids.count && node == NULL; i++)
    if (g_str_has_suffix(kids.data[i], suffix))
      node = g_strdup_printf("%s/%s", party, kids.data[i]);
  deallocate_String_vector(&kids);
  if (node == NULL)
    fatal("no party node of %s in %s", m->id, party);
  watch_deletion(node);
  g_free(node);
  g_free(suffix);
  g_free(party);
}

static void ensure_znode(const char *path) {
  for (const char *p = strchr(path + 1, '/');; p = strchr(p + 1, '/')) {
    char *prefix = p ? g_strndup(path, (gsize)(p - path)) : g_strdup(path);
    int rc = zoo_create(watch_zh, prefix, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0,
                        NULL, 0);
    if (rc != ZOK && rc != ZNODEEXISTS)
      fatal("create %s: %s", prefix, zerror(rc));
    g_free(prefix);
    if (p == NULL)
      return;
  }
}

static double ms_between(int64_t a, int64_t b) { return (double)(b - a) / 1e6; }

/* One run of @p impl in round @p round; @p victim is killed. */
static void partition_run(const char *impl, int round, int victim) {
  const char *w = "partitioner";
  char *path = znode("partition/%s-r%d", impl, round);
  member ms[PART_MEMBERS] = {0};
  int64_t t0 = now_ns();
  for (int i = 0; i < PART_MEMBERS; i++)
    member_start(&ms[i], impl, path, i);
  int64_t first = await_split(ms, START_MS, "the first split");
  record(w, impl, "first split: first start -> all 8 ACQUIRED (with start-up)",
         "ms", ms_between(t0, first));
  check_clocks(ms);

  snap s0, s1, s2;
  snap_take(&s0);
  members_idle(ms, PART_IDLE_MS);
  if (!split_done(ms, &first))
    fatal("partition: the split changed while idle");
  watch_party_node(path, &ms[victim]);
  for (int i = 0; i < PART_MEMBERS; i++) {
    g_free(ms[i].share);
    ms[i].share = NULL;
    ms[i].acquired_told = 0;
  }
  snap_take(&s1);
  int64_t killed = now_ns();
  proc_free(ms[victim].p); /* SIGKILL, then reaped */
  ms[victim].alive = FALSE;
  int64_t done = await_split(ms, STEP_MS, "the rebalance");
  snap_take(&s2);
  int64_t deleted = deletion_wait(STEP_MS);

  int told = 0;
  for (int i = 0; i < PART_MEMBERS; i++)
    told += ms[i].acquired_told;
  double requests = (double)client_packets(&s1, &s2);
  double idle_rate =
      (double)client_packets(&s0, &s1) / ((double)(s1.at - s0.at) / 1e9);
  record(w, impl, "kill -> all 7 ACQUIRED the new split", "ms",
         ms_between(killed, done));
  record(w, impl, "  kill -> its party node deleted (expiry)", "ms",
         ms_between(killed, deleted));
  record(w, impl, "  party node deleted -> all 7 ACQUIRED", "ms",
         ms_between(deleted, done));
  record(w, impl, "requests per rebalance (mntr, kill -> done)", "count",
         requests);
  record(w, impl, "idle requests per second, 8 members (mntr)", "count",
         idle_rate);
  record(w, impl, "ACQUIRED told per member per rebalance", "count",
         (double)told / (PART_MEMBERS - 1));
  progress("  %-9s killed m%d: all ACQUIRED %.0f ms after the kill, %.0f ms "
           "after the expiry; %.0f requests",
           impl, victim, ms_between(killed, done), ms_between(deleted, done),
           requests);

  for (int i = 0; i < PART_MEMBERS; i++)
    if (ms[i].alive)
      proc_send(ms[i].p, "quit");
  for (int i = 0; i < PART_MEMBERS; i++) {
    if (ms[i].alive)
      proc_finish(ms[i].p, STEP_MS);
    g_free(ms[i].share);
  }
  g_free(path);
}

void run_partition(void) {
  watch_connect();
  char *parent = znode("partition");
  ensure_znode(parent);
  g_free(parent);
  progress("partitioner: %d members (processes) per run, %d items, time "
           "boundary %d ms, session timeout %d ms; one member SIGKILLed",
           PART_MEMBERS, PART_ITEMS, PART_BOUNDARY_MS, PART_SESSION_MS);
  size_t n = opt.with_kazoo ? G_N_ELEMENTS(part_impls) : 1;
  for (int r = 1; r <= opt.rounds; r++) {
    progress("round %d of %d: partitioner", r, opt.rounds);
    int victim = (r * 3) % PART_MEMBERS; /* the same for both */
    /* Odd rounds zkrecipes first, even rounds last. */
    for (size_t i = 0; i < n; i++)
      partition_run(part_impls[r % 2 ? i : n - 1 - i], r, victim);
  }
  set_reference("partitioner", opt.with_kazoo ? "kazoo" : NULL);
}
