/*
 * tools/notify.c - systemd's notification protocol (sd_notify(3)), spoken
 * directly: a datagram of "KEY=VALUE" lines to the socket $NOTIFY_SOCKET
 * names (a path, or "@name" in the abstract namespace).  See tool.h.
 *
 * zkr lock and zkr elect are what a unit runs, and only they know when
 * the lock is held or leadership won, and whether the lease is live:
 * READY=1 then, STATUS= as things change, WATCHDOG=1 every half of
 * $WATCHDOG_USEC but only while the session's lease is live.  A holder
 * whose lease is stuck stops feeding the watchdog, and WatchdogSec=
 * restarts it.  COMMAND does not get these variables: the notifications
 * are ours (its own would be ignored anyway, NotifyAccess=main).
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "tool.h"

static int notify_fd = -1;
static struct sockaddr_un notify_addr;
static socklen_t notify_len;
static int watchdog_ms;       /* half of $WATCHDOG_USEC; 0: no watchdog */
static int64_t watchdog_next; /* when the next WATCHDOG=1 is due */

/* $NOTIFY_SOCKET's address; 0, or -1 when it names none we can use. */
static int notify_address(const char *name) {
  size_t len = strlen(name);
  if ((name[0] != '/' && name[0] != '@') || len < 2 ||
      len >= sizeof notify_addr.sun_path)
    return -1;
  memset(&notify_addr, 0, sizeof notify_addr);
  notify_addr.sun_family = AF_UNIX;
  memcpy(notify_addr.sun_path, name, len);
  if (name[0] == '@')
    notify_addr.sun_path[0] = '\0'; /* abstract: no terminating NUL */
  notify_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len +
                           (name[0] == '/' ? 1 : 0));
  return 0;
}

void tool_notify_init(void) {
  const char *name = getenv("NOTIFY_SOCKET");
  if (name && notify_address(name) == 0)
    notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  const char *usec = getenv("WATCHDOG_USEC");
  const char *pid = getenv("WATCHDOG_PID");
  if (notify_fd >= 0 && usec && (!pid || atol(pid) == (long)getpid())) {
    long long us = strtoll(usec, NULL, 10);
    long long half_ms = us / 2000;
    if (us > 0) /* at least 1 ms, at most an hour */
      watchdog_ms = half_ms < 1         ? 1
                    : half_ms > 3600000 ? 3600000
                                        : (int)half_ms;
  }
  unsetenv("NOTIFY_SOCKET");
  unsetenv("WATCHDOG_USEC");
  unsetenv("WATCHDOG_PID");
}

void tool_notify(const char *fmt, ...) {
  if (notify_fd < 0)
    return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (n <= 0)
    return;
  size_t len = (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1;
  /* Best effort, as sd_notify(): a manager that went away is no error of
   * ours. */
  ssize_t unused = sendto(notify_fd, msg, len, MSG_NOSIGNAL,
                          (struct sockaddr *)&notify_addr, notify_len);
  (void)unused;
}

int tool_notify_watchdog(int lease_live, int timeout) {
  if (notify_fd < 0 || watchdog_ms == 0)
    return timeout;
  int64_t now = tool_now_ms();
  if (lease_live && now >= watchdog_next) {
    tool_notify("WATCHDOG=1");
    watchdog_next = now + watchdog_ms;
  }
  /* Look again when the next is due (or, while the lease is not live,
   * in half a period: it may be live again). */
  int64_t next = lease_live ? watchdog_next - now : watchdog_ms;
  int wait = next <= 0 ? 0 : next > 3600000 ? 3600000 : (int)next;
  return timeout < 0 || wait < timeout ? wait : timeout;
}
