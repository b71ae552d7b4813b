/*
 * testing/quorum.c - which leader, if any, a quorum of members agrees on, and
 * which members serve under it, as seen from outside the members.
 *
 * Why a member's own word is not enough: a member answers `srvr` with what it
 * believes.  A leader frozen (SIGSTOP) past syncLimit is given up by its
 * followers, who elect a new leader in a new epoch; once resumed, the old
 * leader answers "Mode: leader" until its leader loop, which checks its
 * followers every half tick, notices it has none (up to about 0.2 s with a
 * tick of 200 ms).  A follower the leader dropped while it was frozen
 * likewise answers "Mode: follower" until it reads the end of its closed
 * connection.
 *
 * What tells them apart:
 *  - The epoch.  A member records the epoch of the leader it joins in
 *    dataDir/version-2/currentEpoch (written atomically, by rename) before it
 *    serves; a leader records its own before it leads, and its `srvr` Zxid
 *    carries it in the high 32 bits from the moment it leads.  A member
 *    writes epoch E only once a quorum has accepted E (a leader after its
 *    quorum's ACKEPOCH, a follower on NEWLEADER), so every later leader has
 *    a higher epoch than any currentEpoch written before it (quorums
 *    intersect): the leader of the newest epoch recorded by any member is
 *    the only one that can still lead, and a deposed leader's epoch is
 *    older.  Followers' `srvr` Zxid is no help: it stays at the last
 *    transaction applied (0x0 in a fresh ensemble whose leader is at
 *    0x100000000) until the new epoch commits one.
 *  - The leader's count of synced followers (`mntr` zk_synced_followers, the
 *    learners it forwards to).  It drops a follower that stopped answering;
 *    when more members claim to follow it than it counts, some claim is
 *    stale, and no claimant is trusted until the counts agree.
 *
 * Everything members say in one look is read between two reads of every
 * epoch file; a member whose file changed in between (it joined a leader
 * meanwhile) is not counted in that look.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/* Bound of one four-letter word within a look.  Also over TLS, although a
 * member's first TLS handshakes take a second or more (its JVM loads and
 * warms up JSSE): a member goes on with a handshake the harness gave up,
 * so while the harness asks the next member, the members of a starting
 * ensemble warm up together rather than one after the other. */
#define LOOK_REQUEST_TIMEOUT_MS 1000

int zkrc__poll_timeout(int64_t deadline) {
  int64_t left = deadline - zkrc__now_ms();
  if (left <= 0)
    return 0;
  return left < LOOK_REQUEST_TIMEOUT_MS ? (int)left : LOOK_REQUEST_TIMEOUT_MS;
}

int zkrc__mntr_value(const char *answer, const char *key, int64_t *value) {
  size_t key_len = strlen(key);
  for (const char *line = answer; line && *line;) {
    if (strncmp(line, key, key_len) == 0 && line[key_len] == '\t') {
      char *end;
      errno = 0;
      long long v = strtoll(line + key_len + 1, &end, 10);
      if (errno != 0 || end == line + key_len + 1)
        return 0;
      *value = v;
      return 1;
    }
    line = strchr(line, '\n');
    if (line)
      line++;
  }
  return 0;
}

int zkrc_mntr_value(const char *answer, const char *key, int64_t *value) {
  if (answer == NULL || key == NULL || value == NULL)
    return 0;
  return zkrc__mntr_value(answer, key, value);
}

/* ---- epoch files -------------------------------------------------------- */

/* One read of a member's currentEpoch file. */
typedef struct epoch_file {
  int64_t value; /* -1: absent or unreadable */
  dev_t dev;     /* which file: each write renames a new one in place */
  ino_t ino;
  struct timespec mtime;
} epoch_file;

static epoch_file read_epoch_file(const zkrc__member *m) {
  epoch_file f = {.value = -1};
  char path[4096];
  snprintf(path, sizeof path, "%s/version-2/currentEpoch", m->data_dir);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return f;
  struct stat st;
  char text[32];
  ssize_t len = fstat(fd, &st) == 0 ? read(fd, text, sizeof text - 1) : -1;
  close(fd);
  if (len <= 0)
    return f;
  text[len] = '\0';
  char *end;
  errno = 0;
  long long value = strtoll(text, &end, 10);
  if (errno != 0 || end == text || value < 0)
    return f;
  f.value = value;
  f.dev = st.st_dev;
  f.ino = st.st_ino;
  f.mtime = st.st_mtim;
  return f;
}

/* The value when @p a and @p b are the same file, else -1. */
static int64_t stable_epoch(const epoch_file *a, const epoch_file *b) {
  if (a->value < 0 || a->value != b->value || a->dev != b->dev ||
      a->ino != b->ino || a->mtime.tv_sec != b->mtime.tv_sec ||
      a->mtime.tv_nsec != b->mtime.tv_nsec)
    return -1;
  return a->value;
}

/* ---- what members say --------------------------------------------------- */

/* What one member said in one look. */
typedef struct member_word {
  int answered;       /* running, not paused, `srvr` gave a Mode */
  char mode[16];      /* "leader", "follower", "standalone", ... */
  int64_t zxid_epoch; /* high 32 bits of its Zxid; -1 when absent */
} member_word;

/* The text after "@p key: " in a `srvr` answer, up to the end of line. */
static int srvr_field(const char *answer, const char *key, char *out,
                      size_t size) {
  char prefix[32];
  snprintf(prefix, sizeof prefix, "%s: ", key);
  const char *line = strstr(answer, prefix);
  if (!line || size == 0)
    return 0;
  line += strlen(prefix);
  size_t len = strcspn(line, "\r\n");
  if (len >= size)
    len = size - 1;
  memcpy(out, line, len);
  out[len] = '\0';
  return 1;
}

static member_word ask_srvr(zkrc_ensemble *e, int i, int64_t deadline) {
  member_word w = {.zxid_epoch = -1};
  zkrc__member_view v = zkrc__view_member(e, i);
  char *answer = NULL;
  /* A member outside the configuration (joining, or removed) is not part
   * of the quorum, whatever it says. */
  if (!v.running || !v.voter ||
      zkrc__four_letter(e->tls_ctx, v.port, "srvr",
                        zkrc__poll_timeout(deadline), &answer) != 0)
    return w;
  w.answered = srvr_field(answer, "Mode", w.mode, sizeof w.mode);
  char zxid[32];
  if (srvr_field(answer, "Zxid", zxid, sizeof zxid)) {
    char *end;
    errno = 0;
    unsigned long long value = strtoull(zxid, &end, 16);
    if (errno == 0 && end != zxid)
      w.zxid_epoch = (int64_t)(value >> 32);
  }
  free(answer);
  return w;
}

/* The leader's count of synced followers, or -1. */
static int64_t synced_followers(zkrc_ensemble *e, int i, int64_t deadline) {
  zkrc__member_view v = zkrc__view_member(e, i);
  char *answer = NULL;
  int64_t count = -1;
  if (v.running &&
      zkrc__four_letter(e->tls_ctx, v.port, "mntr",
                        zkrc__poll_timeout(deadline), &answer) == 0 &&
      !zkrc__mntr_value(answer, "zk_synced_followers", &count))
    count = -1;
  free(answer);
  return count;
}

/* The member claiming leadership in the highest epoch; -1 when none, or
 * when two claim the same epoch (never in a sound ensemble). */
static int leading_claimant(const member_word *words, int n) {
  int best = -1, tie = 0;
  for (int i = 0; i < n; i++) {
    if (!words[i].answered || strcmp(words[i].mode, "leader") != 0)
      continue;
    if (best < 0 || words[i].zxid_epoch > words[best].zxid_epoch) {
      best = i;
      tie = 0;
    } else if (words[i].zxid_epoch == words[best].zxid_epoch) {
      tie = 1;
    }
  }
  return tie ? -1 : best;
}

/* ---- the verdict -------------------------------------------------------- */

static void look_at_single(zkrc_ensemble *e, int64_t deadline,
                           zkrc__quorum_look *look) {
  member_word w = ask_srvr(e, 0, deadline);
  if (w.answered && strcmp(w.mode, "standalone") == 0) {
    look->leader = 0;
    look->serving[0] = 1;
  }
}

/* Decide from what was said (@p words of the @p n members, the leader
 * claimant's @p synced count) and the epochs that stayed put during the
 * look; a majority is of the @p voters (the members in the
 * configuration). */
static void judge(int n, int voters, const member_word *words,
                  const int64_t *epochs, int64_t newest, int claimant,
                  int64_t synced, zkrc__quorum_look *look) {
  if (claimant < 0 || synced < 0)
    return;
  int64_t epoch = words[claimant].zxid_epoch;
  /* A leader deposed while frozen speaks for an older epoch. */
  if (epoch < 0 || epochs[claimant] != epoch || epoch != newest)
    return;
  int claims = 0;
  for (int i = 0; i < n; i++)
    claims += words[i].answered && strcmp(words[i].mode, "follower") == 0 &&
              epochs[i] == epoch;
  int64_t supported = 1 + (claims < synced ? claims : synced);
  if (supported <= voters / 2)
    return;
  look->leader = claimant;
  look->epoch = epoch;
  look->serving[claimant] = 1;
  if (claims > synced)
    return; /* someone's claim is stale: trust none until it is gone */
  for (int i = 0; i < n; i++)
    look->serving[i] |= words[i].answered &&
                        strcmp(words[i].mode, "follower") == 0 &&
                        epochs[i] == epoch;
}

/* The members in the configuration (not joining, not removed). */
static int voters_of(zkrc_ensemble *e) {
  int voters = 0;
  pthread_mutex_lock(&e->lock);
  for (int i = 0; i < e->size; i++)
    voters += !e->members[i].outside;
  pthread_mutex_unlock(&e->lock);
  return voters;
}

void zkrc__look_at_quorum(zkrc_ensemble *e, int64_t deadline,
                          zkrc__quorum_look *look) {
  memset(look, 0, sizeof *look);
  look->leader = -1;
  look->epoch = -1;
  int n = e->size;
  /* One member with reconfig (standaloneEnabled=false) leads a quorum of
   * one, in an epoch, like any leader: the general case. */
  if (n == 1 && !e->opts.reconfig) {
    look_at_single(e, deadline, look);
    return;
  }
  epoch_file before[ZKRC__MAX_MEMBERS], after[ZKRC__MAX_MEMBERS];
  member_word words[ZKRC__MAX_MEMBERS];
  /* Killed and paused members' files count too: an epoch recorded by any
   * member was accepted by a quorum, and only its leader or a later one
   * can lead. */
  for (int i = 0; i < n; i++)
    before[i] = read_epoch_file(&e->members[i]);
  for (int i = 0; i < n; i++)
    words[i] = ask_srvr(e, i, deadline);
  int claimant = leading_claimant(words, n);
  int64_t synced = claimant >= 0 ? synced_followers(e, claimant, deadline) : -1;
  int64_t epochs[ZKRC__MAX_MEMBERS];
  int64_t newest = -1;
  for (int i = 0; i < n; i++) {
    after[i] = read_epoch_file(&e->members[i]);
    if (after[i].value > newest)
      newest = after[i].value;
    epochs[i] = stable_epoch(&before[i], &after[i]);
  }
  judge(n, voters_of(e), words, epochs, newest, claimant, synced, look);
}
