/*
 * zkr-bench: the servers' own counters (mntr), summed over the members.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include "bench.h"

/* ---------------------------------------------------------------- mntr */

/* Four-letter words this process has sent: each one is a received packet
 * on the member it went to (the server counts it before answering, so a
 * snapshot's own mntr is in its own figures). */
static int64_t fourlw_sent;

/* Bound of one `mntr`. */
#define MNTR_TIMEOUT_MS 5000

/* Member @p i's answer to four-letter word @p cmd, or NULL. */
static char *fetch_fourlw(int i, const char *cmd) {
  char *text = NULL;
  fourlw_sent++;
  if (ensemble) {
    if (zkrc_ensemble_four_letter(ensemble, i, cmd, &text) != 0)
      text = NULL;
  } else {
    if (zkrc_four_letter(member_addr[i], cmd, MNTR_TIMEOUT_MS, &text) != 0)
      text = NULL;
  }
  return text;
}

char *fetch_mntr(int i) { return fetch_fourlw(i, "mntr"); }

int64_t latest_zxid(void) {
  int64_t latest = -1;
  for (int i = 0; i < members; i++) {
    char *text = fetch_fourlw(i, "srvr");
    const char *at = text ? strstr(text, "Zxid: 0x") : NULL;
    if (at) {
      int64_t z = g_ascii_strtoll(at + strlen("Zxid: 0x"), NULL, 16);
      latest = MAX(latest, z);
    }
    g_free(text);
  }
  if (latest < 0)
    fatal("no member answered srvr with its Zxid (is srvr allowed by "
          "4lw.commands.whitelist?)");
  return latest;
}

double proposals_between(int64_t before, int64_t after) {
  /* The high 32 bits are the leader's epoch: a new leader restarts the
   * counter, and the difference means nothing then. */
  if (before >> 32 != after >> 32)
    return NAN;
  return (double)(after - before);
}

/* The integer value of mntr key @p key in @p text, or -1. */
static int64_t mntr_value(const char *text, const char *key) {
  int64_t v;
  return text && zkrc_mntr_value(text, key, &v) ? v : -1;
}

static const char *const notification_keys[] = {
    "zk_sum_node_deleted_watch_count", "zk_sum_node_changed_watch_count",
    "zk_sum_node_children_watch_count", "zk_sum_node_created_watch_count"};

/* Sum the counters over the members (fatal when one does not answer). */
void snap_take(snap *s) {
  memset(s, 0, sizeof *s);
  for (int i = 0; i < members; i++) {
    char *text = fetch_mntr(i);
    int64_t packets = text ? mntr_value(text, "zk_packets_received") : -1;
    if (packets < 0)
      fatal("member %d (%s) gave no mntr counters (is mntr allowed by "
            "4lw.commands.whitelist?)",
            i, member_addr[i]);
    s->packets += packets;
    for (size_t k = 0; k < G_N_ELEMENTS(notification_keys); k++) {
      int64_t v = mntr_value(text, notification_keys[k]);
      if (v < 0)
        fatal("member %d: no %s in mntr", i, notification_keys[k]);
      s->notifications += v;
    }
    s->child_notifications +=
        mntr_value(text, "zk_sum_node_children_watch_count");
    s->watches += mntr_value(text, "zk_watch_count");
    s->ephemerals[i] = mntr_value(text, "zk_ephemerals_count");
    g_free(text);
  }
  s->at = now_ns();
  s->fourlw = fourlw_sent;
}

/* Client packets between two snapshots: the servers' count minus our own
 * four-letter words. */
int64_t client_packets(const snap *a, const snap *b) {
  return (b->packets - a->packets) - (b->fourlw - a->fourlw);
}
