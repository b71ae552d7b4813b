/*
 * The session's statistics (zkrc_session_get_stats, zkrecipes/stats.h):
 * its events counted under the session mutex (session_conn.c,
 * session_lease.c), its requests atomically where they are sent
 * (zkrc__sent, called by the seam, zk_call.c), and the session id that
 * labels its exposition (prometheus.c).
 */
#include "config.h"

#include "core/util.h"
#include "session/session_private.h"
#include "zkrecipes/error.h"
#include "zkrecipes/stats.h"

int zkrc__sent(zkrc_session *s, int rc) {
  if (rc == ZOK && s)
    __atomic_fetch_add(&s->n_requests, 1, __ATOMIC_RELAXED);
  return rc;
}

int zkrc_session_get_stats(zkrc_session *s, zkrc_session_stats *out,
                           size_t size) {
  if (s == NULL)
    return zkrc__fail(ZKRC_EINVAL);
  zkrc_session_stats st = {0};
  g_mutex_lock(&s->o.mu);
  st.sessions = s->n_sessions;
  st.suspensions = s->n_suspensions;
  st.reconnects = s->n_reconnects;
  st.expiries = s->n_expiries;
  st.lease_losses = s->n_lease_losses;
  st.late_losses = s->n_late_losses;
  zkrc__histogram_export(&s->loss_delivery, &st.loss_delivery);
  st.lease_dependents = s->lease_demand;
  g_mutex_unlock(&s->o.mu);
  st.keepalives = __atomic_load_n(&s->n_keepalives, __ATOMIC_RELAXED);
  st.renewals = __atomic_load_n(&s->n_renewals, __ATOMIC_RELAXED);
  st.requests = __atomic_load_n(&s->n_requests, __ATOMIC_RELAXED);
  st.state = (int)zkrc_session_get_state(s);
  st.lease_remaining_ms = zkrc_session_lease_remaining(s);
  return zkrc__struct_give(out, &st, sizeof st, size, sizeof st.sessions);
}

int64_t zkrc__session_label_id(zkrc_session *s) {
  g_mutex_lock(&s->o.mu);
  int64_t id =
      s->conn && s->conn->session_id ? s->conn->session_id : s->last_session_id;
  g_mutex_unlock(&s->o.mu);
  return id;
}
