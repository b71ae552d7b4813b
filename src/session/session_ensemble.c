/*
 * Following the ensemble's membership (zkrc_session_options.follow_ensemble,
 * Curator's EnsembleTracker): on each connection, and whenever the servers'
 * dynamic configuration changes, read /zookeeper/config with a watch and
 * give the client the members' client addresses (zoo_set_servers) when they
 * differ from the servers it knows.  The reading and its reply never block:
 * an observer on the worker sends it, the reply on the completion thread
 * sets the list (zoo_set_servers takes the client's lock only); core/
 * ensemble_config.c reads the text.
 */
#include "config.h"

#include <string.h>

#include "core/ensemble_config.h"
#include "core/log_internal.h"
#include "session/session_private.h"
#include "session/zk_call.h"
#include "zkrecipes/error.h"

static void read_config(zkrc_session *s);

static void target_ref(void *s) { zkrc__session_ref(s); }
static void target_unref(void *s) { zkrc__session_unref(s); }
static const zkrc__watch_target_ops session_target = {target_ref, target_unref};

/* /zookeeper/config changed: read it again (with a new watch). */
static void on_config_watch(int type, const char *path, void *target,
                            void *ctx) {
  (void)path;
  zkrc_session *s = target;
  g_mutex_lock(&s->o.mu);
  gboolean current = s->config_watch == ctx;
  if (current)
    s->config_watch = NULL;
  g_mutex_unlock(&s->o.mu);
  if (current && type == ZOO_CHANGED_EVENT)
    read_config(s);
}

/* The list @p hosts to give the client (a copy), or NULL when it knows it
 * already.  The session's connect string keeps its chroot after the new
 * hosts, for the handles opened later; the client is given the hosts.
 * *@p previous: the string it replaced (yours), to put back if the client
 * refuses the list. */
static char *take_hosts_locked(zkrc_session *s, const char *hosts,
                               char **previous) {
  const char *now = zkrc__session_hosts_locked(s);
  if (hosts == NULL || now == NULL)
    return NULL;
  const char *chroot = strchr(s->hosts, '/');
  char *full = g_strconcat(hosts, chroot ? chroot : "", NULL);
  if (strcmp(now, full) == 0) {
    g_free(full);
    return NULL;
  }
  *previous = s->followed_hosts;
  s->followed_hosts = full;
  return g_strdup(hosts);
}

static void config_done(int rc, const char *value, int len,
                        const struct Stat *stat, const void *data) {
  (void)stat;
  zkrc_session *s = (zkrc_session *)data;
  zkrc__ensemble_config cfg = {0};
  int parsed = ZKRC_EBADNODE;
  if (rc == ZOK)
    parsed =
        zkrc__ensemble_config_parse(value, value && len > 0 ? len : 0, &cfg);
  char *hosts = NULL, *previous = NULL;
  if (parsed == ZKRC_OK) {
    g_mutex_lock(&s->o.mu);
    /* A member without a client address (a static configuration, where
     * each server knows only its own): not a list to connect by. */
    hosts = take_hosts_locked(s, cfg.members == cfg.servers ? cfg.hosts : NULL,
                              &previous);
    g_mutex_unlock(&s->o.mu);
  }
  int set = ZOK;
  if (hosts) {
    zkrc_conn *conn = zkrc__conn_use(s);
    set = conn ? zkrc__zk_set_servers(conn, hosts) : ZOK;
    if (conn)
      zkrc__conn_unuse(conn);
    if (set != ZOK) { /* not followed: the next change tries again */
      g_mutex_lock(&s->o.mu);
      g_free(s->followed_hosts);
      s->followed_hosts = previous;
      previous = NULL;
      g_mutex_unlock(&s->o.mu);
    }
  }
  g_free(previous);
  if (hosts && set == ZOK)
    zkrc__session_tell_servers_changed(s);
  if (hosts || (rc == ZOK && parsed != ZKRC_OK) || set != ZOK)
    zkrc__log(set == ZOK && parsed == ZKRC_OK ? ZKRC_LOG_INFO : ZKRC_LOG_WARN,
              "session: ensemble %s (config version %llx)%s",
              hosts ? hosts : "unreadable", (unsigned long long)cfg.version,
              set == ZOK ? "" : ": the client refused it");
  g_free(hosts);
  zkrc__ensemble_config_clear(&cfg);
  zkrc__session_unref(s);
}

static void read_config(zkrc_session *s) {
  zkrc_conn *conn = zkrc__conn_use(s);
  if (conn == NULL)
    return; /* the next connection reads it */
  void *ctx = zkrc__watch_register(conn, on_config_watch, s, &session_target);
  g_mutex_lock(&s->o.mu);
  void *old = s->config_watch;
  s->config_watch = ctx;
  g_mutex_unlock(&s->o.mu);
  if (old)
    zkrc__watch_cancel(old);
  zkrc__session_ref(s); /* the reply's */
  int rc = zkrc__zk_getconfig(conn, ctx, config_done, s);
  zkrc__conn_unuse(conn);
  if (rc != ZOK) { /* not sent: the next connection tries again */
    g_mutex_lock(&s->o.mu);
    gboolean ours = s->config_watch == ctx;
    if (ours)
      s->config_watch = NULL;
    g_mutex_unlock(&s->o.mu);
    if (ours)
      zkrc__watch_cancel(ctx);
    zkrc__session_unref(s);
  }
}

static void on_session(zkrc_session *s, zkrc_session_event_type ev,
                       uint64_t generation, void *arg) {
  (void)generation;
  (void)arg;
  if (ev == ZKRC_SESSION_EVENT_CONNECTED ||
      ev == ZKRC_SESSION_EVENT_RECONNECTED)
    read_config(s);
}

void zkrc__session_ensemble_start(zkrc_session *s) {
  if (s->opts.follow_ensemble)
    zkrc__session_observe(s, on_session, NULL, NULL);
}

void zkrc__session_ensemble_read_now(zkrc_session *s) {
  if (s->opts.follow_ensemble)
    read_config(s);
}

const char *zkrc__session_hosts_locked(zkrc_session *s) {
  return s->followed_hosts ? s->followed_hosts : s->hosts;
}

char *zkrc_session_servers(zkrc_session *s) {
  if (s == NULL)
    return NULL;
  g_mutex_lock(&s->o.mu);
  const char *hosts = zkrc__session_hosts_locked(s);
  char *copy = hosts ? strdup(hosts) : NULL;
  g_mutex_unlock(&s->o.mu);
  return copy;
}
