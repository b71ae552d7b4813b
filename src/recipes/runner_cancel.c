/*
 * A runner's turn's cancellation (zkrecipes/runner.h): a flag with its
 * reason, a condition to wait on, and an eventfd that turns readable when
 * it fires, for a work function's poll loop.  Fired once, by the runner's
 * thread (runner.c); read by the work function.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <glib.h>

#include "core/util.h"
#include "recipes/runner_private.h"
#include "zkrecipes/error.h"
#include "zkrecipes/runner.h"

struct zkrc_cancel {
  GMutex mu;
  GCond cond;
  int fired;
  int reason;
  int fd; /* eventfd, written once when fired; -1 if none could be made */
};

zkrc_cancel *zkrc__cancel_new(void) {
  zkrc_cancel *c = g_new0(zkrc_cancel, 1);
  g_mutex_init(&c->mu);
  g_cond_init(&c->cond);
  c->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  return c;
}

void zkrc__cancel_free(zkrc_cancel *c) {
  if (c == NULL)
    return;
  if (c->fd >= 0)
    close(c->fd);
  g_mutex_clear(&c->mu);
  g_cond_clear(&c->cond);
  g_free(c);
}

gboolean zkrc__cancel_fire(zkrc_cancel *c, int reason) {
  g_mutex_lock(&c->mu);
  gboolean first = !c->fired;
  if (first) {
    c->fired = 1;
    c->reason = reason;
    if (c->fd >= 0) {
      uint64_t one = 1;
      ssize_t n;
      do
        n = write(c->fd, &one, sizeof one);
      while (n < 0 && errno == EINTR);
    }
    g_cond_broadcast(&c->cond);
  }
  g_mutex_unlock(&c->mu);
  return first;
}

int zkrc_cancel_requested(zkrc_cancel *c) {
  if (c == NULL)
    return 0;
  g_mutex_lock(&c->mu);
  int fired = c->fired;
  g_mutex_unlock(&c->mu);
  return fired;
}

int zkrc_cancel_wait(zkrc_cancel *c, int timeout_ms) {
  if (c == NULL || !zkrc__timeout_valid(timeout_ms))
    return zkrc__fail(ZKRC_EINVAL);
  int64_t deadline = zkrc__deadline_after(timeout_ms);
  g_mutex_lock(&c->mu);
  while (!c->fired && zkrc__cond_wait_until(&c->cond, &c->mu, deadline))
    ;
  int fired = c->fired;
  g_mutex_unlock(&c->mu);
  return fired ? ZKRC_OK : zkrc__fail(ZKRC_ETIMEDOUT);
}

int zkrc_cancel_fd(zkrc_cancel *c) { return c ? c->fd : -1; }

int zkrc_cancel_reason(zkrc_cancel *c) {
  if (c == NULL)
    return ZKRC_EINVAL;
  g_mutex_lock(&c->mu);
  int reason = c->fired ? c->reason : ZKRC_OK;
  g_mutex_unlock(&c->mu);
  return reason;
}
