/*
 * Time leases (zkrecipes/timelease.h), kazoo's NonBlockingLease and
 * MultiNonBlockingLease: under a kazoo-format lock on the lease's
 * directory (a lock object of lock_member.h: the one contender queue),
 * read lease_holder, decide (timelease_decide.h), and write our record as
 * one multi that also checks that our lock node still exists.  Every
 * request waits with the caller's deadline (call.h).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "queue/admission.h"
#include "recipes/lock_member.h"
#include "recipes/timelease_decide.h"
#include "session/call.h"
#include "session/request_size.h"
#include "session/session_internal.h"
#include "session/zk_call.h"
#include "zkrecipes/error.h"
#include "zkrecipes/lock.h"
#include "zkrecipes/path.h"
#include "zkrecipes/timelease.h"

#define MAX_SLOTS 1000
#define HOLDER_NODE "lease_holder"

static const char *const outcome_names[] = {"obtained", "renewed", "held",
                                            "other_version"};

const char *zkrc_time_lease_outcome_name(zkrc_time_lease_outcome outcome) {
  if (outcome < ZKRC_TIME_LEASE_OBTAINED ||
      outcome > ZKRC_TIME_LEASE_OTHER_VERSION)
    return "unknown";
  return outcome_names[outcome - 1];
}

void zkrc_time_lease_result_clear(zkrc_time_lease_result *r) {
  if (r == NULL)
    return;
  free(r->holder);
  memset(r, 0, sizeof *r);
}

static void options_defaults(zkrc_time_lease_options *o) {
  memset(o, 0, sizeof *o);
  o->size = sizeof *o;
}

void zkrc_time_lease_options_init_sized(zkrc_time_lease_options *opts,
                                        size_t size) {
  zkrc_time_lease_options full;
  options_defaults(&full);
  zkrc__options_give(opts, size, &full, sizeof full);
}

static int64_t system_clock(void *arg) {
  (void)arg;
  return g_get_real_time() / 1000;
}

/* One call's settings, shared by its slots. */
typedef struct attempt {
  zkrc_session *s;
  zkrc_time_lease_options o;
  char *ident; /* g_malloc'ed */
  int64_t duration_ms;
  int timeout_ms;
  int64_t deadline;
} attempt;

/* ------------------------------------------------------- the requests */

typedef struct write_arg {
  const char *lock_node;
  const char *holder_path;
  int32_t old_version; /* -1: no lease_holder to delete */
  const char *data;
  size_t len;
  const struct ACL_vector *acl;
} write_arg;

static int send_get(zkrc_conn *conn, zkrc__call *call, const void *arg) {
  return zkrc__zk_get(conn, arg, NULL, zkrc__call_data_done, call);
}

/* The ops of our write: the check of our lock node, the delete of the
 * record read (if any), the create of ours. */
static int write_ops(const write_arg *a, zoo_op_t ops[3]) {
  int n = 0;
  zoo_check_op_init(&ops[n++], a->lock_node, -1);
  if (a->old_version >= 0)
    zoo_delete_op_init(&ops[n++], a->holder_path, a->old_version);
  zoo_create_op_init(&ops[n++], a->holder_path, a->data, (int)a->len,
                     a->acl ? a->acl : &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
  return n;
}

static int send_write(zkrc_conn *conn, zkrc__call *call, const void *arg) {
  zoo_op_t ops[3];
  int n = write_ops(arg, ops);
  if (!zkrc__call_take_ops(call, 0, n, ops))
    return ZBADARGUMENTS;
  return zkrc__zk_multi(conn, call->op_count, call->ops, call->results,
                        zkrc__call_multi_done, call);
}

/* A ZooKeeper reply code (or ZKRC__CALL_TIMED_OUT) as the caller's error. */
static int failure(int rc) {
  return rc == ZKRC__CALL_TIMED_OUT ? zkrc__fail(ZKRC_ETIMEDOUT)
                                    : zkrc__fail_from_zk(rc);
}

/* Read lease_holder: ZKRC_OK with *@p found and @p rec filled, or an
 * error. */
static int read_record(attempt *a, const char *holder_path, gboolean *found,
                       zkrc__lease_record *rec, int32_t *version) {
  zkrc__call *call;
  int rc = zkrc__call_request(a->s, send_get, holder_path, a->deadline, &call);
  int err = ZKRC_OK;
  *found = rc == ZOK;
  if (rc == ZOK) {
    *version = call->stat.version;
    err = zkrc__lease_record_parse(
        call->value, call->value_len > 0 ? (size_t)call->value_len : 0, rec);
    if (err != ZKRC_OK)
      err = zkrc__fail(err);
  } else if (rc != ZNONODE) {
    err = failure(rc);
  }
  if (call)
    zkrc__call_unref(call);
  return err;
}

/* Write our record ending at @p end_ms. */
static int write_record(attempt *a, write_arg *w, int64_t end_ms) {
  w->data = zkrc__lease_record_format(a->ident, end_ms, &w->len);
  zoo_op_t ops[3];
  int n = write_ops(w, ops);
  int err = zkrc__request_check(a->s, TRUE, n, ops);
  if (err != ZKRC_OK) {
    g_free((char *)w->data);
    return zkrc__fail(err);
  }
  zkrc__call *call;
  int rc = zkrc__call_request(a->s, send_write, w, a->deadline, &call);
  if (rc != ZOK && rc != ZKRC__CALL_TIMED_OUT && call &&
      call->results[0].err == ZNONODE)
    err = zkrc__fail_zk(ZKRC_ELOCKLOST, ZNONODE); /* our lock node went */
  else if (rc == ZNONODE || rc == ZBADVERSION || rc == ZNODEEXISTS)
    err = zkrc__fail_zk(ZKRC_EBADVERSION, rc); /* written without the lock */
  else if (rc != ZOK)
    err = failure(rc);
  if (call)
    zkrc__call_unref(call);
  g_free((char *)w->data);
  return err;
}

/* ---------------------------------------------------------- one slot */

/* The kazoo lock on @p dir, waited for within the call's deadline, or
 * only looked at (@p look_once: ZKRC_ELOCKED when another has it). */
static int take_lock(attempt *a, const char *dir, gboolean look_once,
                     zkrc_lock **out) {
  zkrc_lock_options lo;
  zkrc_lock_options_init(&lo);
  lo.participant_id = a->ident;
  lo.acl = a->o.acl;
  /* kazoo's Lock: children named "<uuid hex>__lock__<seq>". */
  int err = zkrc__lock_new_member(out, a->s, dir, &lo, "__lock__",
                                  zkrc__policy_exclusive);
  if (err != ZKRC_OK)
    return err;
  int wait = look_once ? ZKRC_NO_WAIT : a->timeout_ms;
  if (wait > 0) {
    wait = zkrc__ms_left(a->deadline);
    if (wait <= 0) {
      zkrc_lock_free(*out);
      *out = NULL;
      return zkrc__fail(ZKRC_ETIMEDOUT);
    }
  }
  err = zkrc_lock_acquire(*out, wait);
  if (err != ZKRC_OK) {
    zkrc_lock_free(*out);
    *out = NULL;
  }
  return err;
}

/* Decide the lease at @p dir under its lock (take_lock()), filling @p out
 * on ZKRC_OK. */
static int decide_slot(attempt *a, const char *dir, gboolean look_once,
                       zkrc_time_lease_result *out) {
  zkrc_lock *lk;
  int err = take_lock(a, dir, look_once, &lk);
  if (err != ZKRC_OK)
    return err;
  char *holder_path = g_strdup_printf("%s/" HOLDER_NODE, dir);
  write_arg w = {
      .holder_path = holder_path, .old_version = -1, .acl = a->o.acl};
  zkrc__lease_record rec = {0};
  gboolean found = FALSE;
  char *node = NULL;
  err = zkrc_lock_node(lk, &node);
  if (err == ZKRC_OK)
    err = read_record(a, holder_path, &found, &rec, &w.old_version);
  if (err == ZKRC_OK) {
    int64_t now = a->o.clock(a->o.clock_arg);
    zkrc_time_lease_outcome outcome =
        zkrc__lease_decide(found ? &rec : NULL, a->ident, now);
    int64_t end = rec.end_ms;
    if (outcome <= ZKRC_TIME_LEASE_RENEWED &&
        !zkrc__lease_end(now, a->duration_ms, &end)) {
      err = zkrc__fail(ZKRC_EINVAL); /* the end is past year 9999 */
    } else if (outcome <= ZKRC_TIME_LEASE_RENEWED) {
      w.lock_node = node;
      err = write_record(a, &w, end);
    }
    if (err == ZKRC_OK) {
      out->outcome = outcome;
      out->end_ms = outcome == ZKRC_TIME_LEASE_OTHER_VERSION ? 0 : end;
      out->remaining_ms = out->end_ms ? end - now : 0;
      const char *who = outcome == ZKRC_TIME_LEASE_HELD            ? rec.holder
                        : outcome == ZKRC_TIME_LEASE_OTHER_VERSION ? NULL
                                                                   : a->ident;
      out->holder = who ? strdup(who) : NULL;
      if (who && out->holder == NULL)
        err = zkrc__fail(ZKRC_ENOMEM);
    }
  }
  free(node);
  zkrc__lease_record_clear(&rec);
  g_free(holder_path);
  int last = zkrc_last_zk_error();
  (void)zkrc_lock_release(lk); /* waits for the delete when connected */
  zkrc_lock_free(lk);
  return err == ZKRC_OK ? ZKRC_OK : zkrc__fail_zk(err, last);
}

/* ---------------------------------------------------------- the calls */

static int begin(attempt *a, zkrc_session *s, const char *path,
                 int64_t duration_ms, const zkrc_time_lease_options *opts,
                 zkrc_time_lease_result *out, int timeout_ms) {
  if (out)
    memset(out, 0, sizeof *out);
  memset(a, 0, sizeof *a);
  options_defaults(&a->o);
  if (s == NULL || out == NULL || path == NULL ||
      zkrc_path_validate(path, NULL) != ZKRC_OK || strcmp(path, "/") == 0 ||
      duration_ms <= 0 || !zkrc__timeout_valid(timeout_ms) ||
      !zkrc__options_take(&a->o, sizeof a->o, opts) ||
      (a->o.acl && !zkrc__acl_valid(a->o.acl)))
    return zkrc__fail(ZKRC_EINVAL);
  if (a->o.identifier && (a->o.identifier[0] == '\0' ||
                          !g_utf8_validate(a->o.identifier, -1, NULL)))
    return zkrc__fail(ZKRC_EINVAL);
  if (a->o.clock == NULL)
    a->o.clock = system_clock;
  int64_t end;
  if (!zkrc__lease_end(a->o.clock(a->o.clock_arg), duration_ms, &end))
    return zkrc__fail(ZKRC_EINVAL);
  a->s = s;
  a->duration_ms = duration_ms;
  a->timeout_ms = timeout_ms;
  a->ident = a->o.identifier ? g_strdup(a->o.identifier)
                             : zkrc__default_participant_id();
  /* The largest record we could write must pass the size rule. */
  char *probe = g_strdup_printf("%s/" HOLDER_NODE, path);
  size_t len;
  char *data = zkrc__lease_record_format(a->ident, end, &len);
  write_arg w = {.lock_node = probe,
                 .holder_path = probe,
                 .old_version = 0,
                 .data = data,
                 .len = len,
                 .acl = a->o.acl};
  zoo_op_t ops[3];
  int n = write_ops(&w, ops);
  int err = zkrc__request_check(s, TRUE, n, ops);
  g_free(data);
  g_free(probe);
  if (err == ZKRC_OK)
    err = zkrc__request_deadline(s, timeout_ms, &a->deadline);
  if (err != ZKRC_OK) {
    g_free(a->ident);
    return zkrc__fail(err);
  }
  return ZKRC_OK;
}

int zkrc_time_lease_obtain(zkrc_session *s, const char *path,
                           int64_t duration_ms,
                           const zkrc_time_lease_options *opts,
                           zkrc_time_lease_result *out, int timeout_ms) {
  attempt a;
  int err = begin(&a, s, path, duration_ms, opts, out, timeout_ms);
  if (err != ZKRC_OK)
    return err;
  err = decide_slot(&a, path, FALSE, out);
  g_free(a.ident);
  return err;
}

/* Is refusal @p r a better one to report than @p best (the one that ends
 * first; a held one before another version)? */
static gboolean ends_first(const zkrc_time_lease_result *r,
                           const zkrc_time_lease_result *best) {
  if (best->outcome == 0)
    return TRUE;
  if (r->outcome != best->outcome)
    return r->outcome == ZKRC_TIME_LEASE_HELD;
  return r->outcome == ZKRC_TIME_LEASE_HELD && r->end_ms < best->end_ms;
}

/* The multi form's state: the result so far, the first skipped slot's
 * error, and the slots left for the waiting pass. */
typedef struct multi {
  attempt a;
  const char *path;
  zkrc_time_lease_result *out;
  int undecided;
  gboolean *later;
} multi;

static gboolean obtained(const zkrc_time_lease_result *r) {
  return r->outcome && r->outcome <= ZKRC_TIME_LEASE_RENEWED;
}

/* Decide slot @p i (@p look_once: without waiting for its lock) and keep
 * in m->out the slot obtained or the refusal that ends first.  ZKRC_OK to
 * go on (decided, skipped, or left for later), else the error that ends
 * the call. */
static int try_slot(multi *m, int i, gboolean look_once) {
  char *dir = g_strdup_printf("%s/%d", m->path, i);
  zkrc_time_lease_result r = {0};
  int err = decide_slot(&m->a, dir, look_once, &r);
  g_free(dir);
  r.slot = i;
  gboolean may_wait = m->a.timeout_ms != ZKRC_NO_WAIT;
  if (look_once && may_wait && (err == ZKRC_ELOCKED || err == ZKRC_ECONNLOSS)) {
    m->later[i] = TRUE; /* its lock is waited for once no slot was free */
    return ZKRC_OK;
  }
  if (err == ZKRC_ELOCKED || err == ZKRC_EBADNODE) {
    if (m->undecided == ZKRC_OK)
      m->undecided = err;
    return ZKRC_OK;
  }
  if (err != ZKRC_OK)
    return err;
  if (obtained(&r) || ends_first(&r, m->out)) {
    zkrc_time_lease_result_clear(m->out);
    *m->out = r;
  } else {
    zkrc_time_lease_result_clear(&r);
  }
  return ZKRC_OK;
}

/* The two passes: every slot looked at without waiting for its lock, in
 * order; then, when none was obtained, the slots whose lock was taken,
 * in order, each waited for within the call's deadline.  While the
 * connection is down a look would wait for it (up to a session timeout,
 * whatever the deadline): such a slot is left to the second pass, as are
 * the slots not looked at before the deadline (the second pass then ends
 * with ZKRC_ETIMEDOUT). */
static int obtain_slots(multi *m, int count) {
  gboolean may_wait = m->a.timeout_ms != ZKRC_NO_WAIT;
  int err = ZKRC_OK;
  for (int i = 0; i < count && err == ZKRC_OK && !obtained(m->out); i++) {
    if (may_wait && zkrc__ms_left(m->a.deadline) <= 0)
      m->later[i] = TRUE; /* out of time: the second pass says so */
    else if (!may_wait ||
             zkrc_session_get_state(m->a.s) == ZKRC_SESSION_CONNECTED)
      err = try_slot(m, i, TRUE);
    else
      m->later[i] = TRUE;
  }
  for (int i = 0; i < count && err == ZKRC_OK && !obtained(m->out); i++)
    if (m->later[i])
      err = try_slot(m, i, FALSE);
  return err;
}

int zkrc_time_lease_obtain_multi(zkrc_session *s, const char *path, int count,
                                 int64_t duration_ms,
                                 const zkrc_time_lease_options *opts,
                                 zkrc_time_lease_result *out, int timeout_ms) {
  if (count < 1 || count > MAX_SLOTS) {
    if (out)
      memset(out, 0, sizeof *out);
    return zkrc__fail(ZKRC_EINVAL);
  }
  multi m = {.path = path, .out = out, .undecided = ZKRC_OK};
  int err = begin(&m.a, s, path, duration_ms, opts, out, timeout_ms);
  if (err != ZKRC_OK)
    return err;
  m.later = g_new0(gboolean, count);
  err = obtain_slots(&m, count);
  g_free(m.later);
  g_free(m.a.ident);
  if (err == ZKRC_OK && !obtained(out) && m.undecided != ZKRC_OK)
    err = zkrc__fail(m.undecided);
  if (err != ZKRC_OK)
    zkrc_time_lease_result_clear(out);
  return err;
}
