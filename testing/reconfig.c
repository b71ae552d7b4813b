/*
 * testing/reconfig.c - members added to and removed from a running ensemble
 * by dynamic reconfiguration (zkrc_ensemble_options.reconfig), the way
 * ZooKeeper's reconfiguration guide adds a server: the joiner starts with
 * the current configuration plus itself as a participant, finds the leader
 * through the others and follows it without a vote; then a client's
 * reconfig (incremental: "add server.N=...") makes it a participant.  A
 * removal is the reconfig "remove N".
 *
 * The harness talks to the members through a ZooKeeper handle of its own
 * (skipACL=yes: any client may reconfigure), on the members of the
 * configuration it knows.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "internal.h"

/* The harness's handle: its session timeout (the servers bound it). */
#define HANDLE_TIMEOUT_MS 10000
/* Room for /zookeeper/config of five members. */
#define CONFIG_MAX 8192
/* Between two refused reconfigurations: doubling up to a second. */
#define BACKOFF_FIRST_MS 50
#define BACKOFF_MAX_MS 1000

static void quiet_watcher(zhandle_t *zh, int type, int state, const char *path,
                          void *ctx) {
  (void)zh;
  (void)type;
  (void)state;
  (void)path;
  (void)ctx;
}

static void quiet_log(const char *message) { (void)message; }

/* "127.0.0.1:P,..." of the running members of the configuration. */
static char *voter_hosts(zkrc_ensemble *e) {
  GString *s = g_string_new(NULL);
  for (int i = 0; i < e->size; i++) {
    zkrc__member_view v = zkrc__view_member(e, i);
    if (v.running && v.voter)
      g_string_append_printf(s, "%s127.0.0.1:%d", s->len ? "," : "", v.port);
  }
  return g_string_free(s, FALSE);
}

/* The harness's handle on the members of the configuration, connected by
 * @p deadline; NULL (with a message) otherwise. */
static zhandle_t *connect_voters(zkrc_ensemble *e, int64_t deadline) {
  char *hosts = voter_hosts(e);
  zhandle_t *zh = NULL;
  if (*hosts)
    zh = zookeeper_init2(hosts, quiet_watcher, HANDLE_TIMEOUT_MS, NULL, NULL, 0,
                         e->log_to_stderr ? NULL : quiet_log);
  g_free(hosts);
  while (zh && zoo_state(zh) != ZOO_CONNECTED_STATE) {
    if (zkrc__now_ms() >= deadline) {
      zookeeper_close(zh);
      zh = NULL;
      break;
    }
    zkrc__pause_until_next_poll(deadline);
  }
  if (!zh)
    fprintf(stderr, "zkrecipes-testing: no member of the configuration "
                    "answered in time\n");
  return zh;
}

/* The "server.N=..." lines of the configuration the handle's member knows,
 * each ending with a newline (g_free them); NULL when it could not be
 * read. */
static char *server_lines(zhandle_t *zh) {
  char buf[CONFIG_MAX];
  int len = (int)sizeof buf - 1;
  struct Stat st;
  if (zoo_getconfig(zh, 0, buf, &len, &st) != ZOK || len < 0)
    return NULL;
  buf[len] = '\0';
  GString *s = g_string_new(NULL);
  char **lines = g_strsplit(buf, "\n", -1);
  for (char **l = lines; *l; l++)
    if (g_str_has_prefix(*l, "server."))
      g_string_append_printf(s, "%s\n", *l);
  g_strfreev(lines);
  return g_string_free(s, FALSE);
}

/* 1 when the configuration lists server @p id, 0 when not, -1 when it
 * could not be read. */
static int lists_server(zhandle_t *zh, int id) {
  char *lines = server_lines(zh);
  if (!lines)
    return -1;
  char needle[32];
  snprintf(needle, sizeof needle, "\nserver.%d=", id);
  char *all = g_strconcat("\n", lines, NULL);
  int found = strstr(all, needle) != NULL;
  g_free(all);
  g_free(lines);
  return found;
}

/* Ask for the reconfiguration (@p joining a server line, or @p leaving a
 * server id), again with a backoff while the ensemble cannot yet (no
 * quorum of the new configuration synced, another one under way) or the
 * connection dropped, until server @p id is listed (@p want_listed 1) or
 * gone (0), or @p deadline.  0, or -1 with a message. */
static int reconfigure(zhandle_t *zh, const char *joining, const char *leaving,
                       int id, int want_listed, int64_t deadline) {
  int backoff = BACKOFF_FIRST_MS;
  for (;;) {
    char buf[CONFIG_MAX];
    int len = (int)sizeof buf;
    struct Stat st;
    int rc = zoo_reconfig(zh, joining, leaving, NULL, -1, buf, &len, &st);
    if (rc == ZOK)
      return 0;
    int again = rc == ZNEWCONFIGNOQUORUM || rc == ZRECONFIGINPROGRESS ||
                rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT;
    /* A lost reply: it may have been done. */
    if (again && lists_server(zh, id) == want_listed)
      return 0;
    if (!again || zkrc__now_ms() + backoff >= deadline) {
      fprintf(stderr, "zkrecipes-testing: reconfig %s %s: %s\n",
              joining ? "add" : "remove", joining ? joining : leaving,
              zerror(rc));
      return -1;
    }
    zkrc__sleep_ms(backoff);
    backoff = MIN(2 * backoff, BACKOFF_MAX_MS);
  }
}

/* ---- adding ------------------------------------------------------------- */

/* A new member after the others, outside the configuration, on new ports;
 * NULL (with a message) when there is no room or no ports. */
static zkrc__member *new_member(zkrc_ensemble *e) {
  if (e->size >= ZKRC__MAX_MEMBERS) {
    fprintf(stderr, "zkrecipes-testing: an ensemble has at most %d members\n",
            ZKRC__MAX_MEMBERS);
    return NULL;
  }
  int ports[3];
  if (zkrc__reserve_ports(3, ports) != 0)
    return NULL;
  zkrc__member *m = &e->members[e->size];
  if (zkrc__member_init(e, m, e->size) != 0) {
    zkrc__member_free(m);
    m->pid = -1;
    zkrc__release_ports(ports, 3);
    return NULL;
  }
  m->client_port = ports[0];
  m->peer_port = ports[1];
  m->election_port = ports[2];
  m->outside = 1;
  snprintf(m->address, sizeof m->address, "127.0.0.1:%d", m->client_port);
  pthread_mutex_lock(&e->lock);
  e->size++; /* from now on stopped, and its ports released, with the rest */
  pthread_mutex_unlock(&e->lock);
  return m;
}

/* Wait until the joiner follows the leader (as a non-voting follower it
 * says "Mode: follower").  0, or -1 with a message. */
static int wait_following(zkrc_ensemble *e, zkrc__member *m, int64_t deadline) {
  for (;;) {
    pthread_mutex_lock(&e->lock);
    zkrc__member_reap_if_exited(e, m);
    int running = m->pid > 0;
    pthread_mutex_unlock(&e->lock);
    if (!running) {
      zkrc__report_failed_member(e, m, "exited while joining");
      return -1;
    }
    char mode[16] = "";
    if (zkrc__member_serving(e, m->client_port, zkrc__poll_timeout(deadline),
                             mode, sizeof mode) &&
        strcmp(mode, "follower") == 0)
      return 0;
    if (zkrc__now_ms() >= deadline) {
      zkrc__report_failed_member(e, m, "did not follow the leader in time");
      return -1;
    }
    zkrc__pause_until_next_poll(deadline);
  }
}

/* Start member @p m with the configuration @p zh's member knows plus
 * itself, and wait until it follows.  0 or -1. */
static int start_joiner(zkrc_ensemble *e, zkrc__member *m, zhandle_t *zh,
                        int64_t deadline) {
  char *servers = server_lines(zh);
  if (!servers) {
    fprintf(stderr, "zkrecipes-testing: cannot read /zookeeper/config\n");
    return -1;
  }
  int rc = zkrc__member_configure(e, m, servers);
  g_free(servers);
  if (rc != 0)
    return -1;
  pthread_mutex_lock(&e->lock);
  rc = zkrc__member_spawn(e, m);
  pthread_mutex_unlock(&e->lock);
  return rc == 0 ? wait_following(e, m, deadline) : -1;
}

static int remaining_ms(int64_t deadline) {
  int64_t left = deadline - zkrc__now_ms();
  return left > 0 ? (int)MIN(left, INT32_MAX) : 0;
}

int zkrc_ensemble_add_member(zkrc_ensemble *e, int timeout_ms) {
  if (!e || !e->opts.reconfig || e->proxies || timeout_ms <= 0) {
    fprintf(stderr, "zkrecipes-testing: add a member to an ensemble started "
                    "with reconfig and without proxies, with a timeout\n");
    return -1;
  }
  int64_t deadline = zkrc__now_ms() + timeout_ms;
  /* First the members' answer: without it, no member is made. */
  zhandle_t *zh = connect_voters(e, deadline);
  if (!zh)
    return -1;
  zkrc__member *m = new_member(e);
  if (!m) {
    zookeeper_close(zh);
    return -1;
  }
  int rc = start_joiner(e, m, zh, deadline);
  if (rc == 0) {
    char *joining = g_strdup_printf(
        "server.%d=127.0.0.1:%d:%d:participant;127.0.0.1:%d", m->index + 1,
        m->peer_port, m->election_port, m->client_port);
    rc = reconfigure(zh, joining, NULL, m->index + 1, 1, deadline);
    g_free(joining);
  }
  zookeeper_close(zh);
  pthread_mutex_lock(&e->lock);
  if (rc == 0)
    m->outside = 0;
  else
    zkrc__member_kill(e, m); /* stays outside, counted for the stop */
  pthread_mutex_unlock(&e->lock);
  if (rc == 0 &&
      zkrc_ensemble_wait_serving(e, m->index, remaining_ms(deadline)) != 0) {
    zkrc__report_failed_member(e, m, "joined but does not serve");
    return -1;
  }
  return rc == 0 ? m->index : -1;
}

/* ---- removing ----------------------------------------------------------- */

int zkrc_ensemble_remove_member(zkrc_ensemble *e, int i, int timeout_ms) {
  if (!e || !e->opts.reconfig || i < 0 || i >= e->size || timeout_ms <= 0)
    return -1;
  zkrc__member_view v = zkrc__view_member(e, i);
  if (!v.voter) {
    fprintf(stderr,
            "zkrecipes-testing: member %d is not in the "
            "configuration\n",
            i);
    return -1;
  }
  int64_t deadline = zkrc__now_ms() + timeout_ms;
  zhandle_t *zh = connect_voters(e, deadline);
  if (!zh)
    return -1;
  char leaving[16];
  snprintf(leaving, sizeof leaving, "%d", i + 1);
  int rc = reconfigure(zh, NULL, leaving, i + 1, 0, deadline);
  zookeeper_close(zh);
  if (rc != 0)
    return -1;
  pthread_mutex_lock(&e->lock);
  e->members[i].outside = 1;
  pthread_mutex_unlock(&e->lock);
  /* The leader may have been the one removed: wait for the next. */
  return zkrc_ensemble_wait_serving(e, -1, remaining_ms(deadline));
}
