/*
 * testing/reaper.c - cleaning up after a test process that died.
 *
 * Each ensemble forks one small reaper process, linked to the test process
 * by a socket pair.  The test process tells it the pid of every member it
 * starts (and forgets those it reaps).  If the link reaches end-of-file
 * without an orderly goodbye, the test process is gone - crashed, SIGKILLed,
 * or exited without zkrc_ensemble_stop() - and the reaper SIGKILLs the
 * members it knows, waits for them to die, removes the ensemble directory and
 * exits.  The members' parent-death signal usually beats it to the kill;
 * the reaper also covers what that signal cannot (the directory, and a
 * member forked by a thread that is still alive when the process dies).
 *
 * The reaper is forked from a multi-threaded process and never execs, so it
 * sticks to async-signal-safe calls: a fixed pid table, read(), kill(), and
 * the allocation-free zkrc__remove_tree().
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"

/* One message on the link; 8 bytes, so each is written atomically. */
typedef struct reaper_msg {
  char op; /* 'W'atch pid, 'F'orget pid, 'B'ye */
  char pad[3];
  int32_t pid;
} reaper_msg;

#define REAPER_MAX_PIDS 64
#define REAPER_LINK_FD 3

/* How long the reaper waits for SIGKILLed members to die before it removes
 * the directory anyway. */
#define REAPER_KILL_WAIT_MS 10000

static void reaper_log(const char *text) {
  ssize_t unused = write(2, text, strlen(text));
  (void)unused;
}

/* "/proc/PID/" + @p file into @p path (size 64), without snprintf: the
 * reaper sticks to async-signal-safe calls. */
static void proc_path(char *path, pid_t pid, const char *file) {
  char digits[16];
  int len = 0;
  for (int v = pid; v > 0 && len < (int)sizeof digits; v /= 10)
    digits[len++] = (char)('0' + v % 10);
  memcpy(path, "/proc/", 6);
  size_t at = 6;
  while (len > 0)
    path[at++] = digits[--len];
  path[at++] = '/';
  size_t file_len = strlen(file);
  if (at + file_len >= 64)
    file_len = 64 - at - 1;
  memcpy(path + at, file, file_len);
  path[at + file_len] = '\0';
}

/* Read up to @p size - 1 bytes of /proc/PID/@p file into @p buf.  Returns
 * the length, or -1. */
static ssize_t read_proc(pid_t pid, const char *file, char *buf, size_t size) {
  char path[64];
  proc_path(path, pid, file);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t n;
  do {
    n = read(fd, buf, size - 1);
  } while (n < 0 && errno == EINTR);
  close(fd);
  if (n >= 0)
    buf[n] = '\0';
  return n;
}

/* Whether @p pid still runs a member of this ensemble: its command line
 * names a config file under @p dir.  Guards against killing an unrelated
 * process that reused the pid. */
static int runs_member_of(pid_t pid, const char *dir) {
  char cmdline[8192];
  ssize_t n = read_proc(pid, "cmdline", cmdline, sizeof cmdline);
  return n > 0 && memmem(cmdline, (size_t)n, dir, strlen(dir)) != NULL;
}

/* 1 while @p pid exists and is not a zombie (a zombie is dead enough: its
 * files are closed, and whoever inherited it will reap it). */
static int still_alive(pid_t pid) {
  if (kill(pid, 0) != 0)
    return errno != ESRCH;
  char stat[512];
  if (read_proc(pid, "stat", stat, sizeof stat) <= 0)
    return 0;
  /* "pid (comm) S ...": the state follows the last ')'. */
  char *paren = strrchr(stat, ')');
  return !(paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X'));
}

static void kill_members(const pid_t *pids, int count, const char *dir) {
  for (int i = 0; i < count; i++) {
    if (runs_member_of(pids[i], dir))
      kill(pids[i], SIGKILL);
  }
  for (int waited = 0; waited < REAPER_KILL_WAIT_MS; waited += 10) {
    int alive = 0;
    for (int i = 0; i < count; i++)
      alive += still_alive(pids[i]) && runs_member_of(pids[i], dir);
    if (!alive)
      return;
    zkrc__sleep_ms(10);
  }
  reaper_log("zkrecipes-testing reaper: members did not die in time\n");
}

/* Read one whole message; 0 at end-of-file or on error. */
static int read_msg(int fd, reaper_msg *msg) {
  size_t got = 0;
  while (got < sizeof *msg) {
    ssize_t n = read(fd, (char *)msg + got, sizeof *msg - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return 0;
    got += (size_t)n;
  }
  return 1;
}

static _Noreturn void reaper_main(const char *dir, int keep_dir) {
  pid_t pids[REAPER_MAX_PIDS];
  int count = 0;
  reaper_msg msg;
  while (read_msg(REAPER_LINK_FD, &msg)) {
    if (msg.op == 'B')
      _exit(0);
    if (msg.op == 'W' && count < REAPER_MAX_PIDS) {
      pids[count++] = msg.pid;
    } else if (msg.op == 'F') {
      for (int i = 0; i < count; i++) {
        if (pids[i] == msg.pid) {
          pids[i] = pids[--count];
          break;
        }
      }
    }
  }
  /* End-of-file without goodbye: the test process is gone. */
  kill_members(pids, count, dir);
  if (!keep_dir) {
    for (int attempt = 0; zkrc__remove_tree(dir) != 0; attempt++) {
      if (attempt == 5) {
        reaper_log("zkrecipes-testing reaper: cannot remove ");
        reaper_log(dir);
        reaper_log("\n");
        break;
      }
      zkrc__sleep_ms(100);
    }
  }
  _exit(0);
}

/* In the forked child: become a quiet, signal-proof process holding only the
 * link (as fd 3) and stderr. */
static _Noreturn void reaper_child(int link_fd, const char *dir, int keep_dir) {
  /* The terminal's ^C and timeout(1)'s SIGTERM go to the whole process
   * group; the reaper must survive them to do its job. */
  struct sigaction ign;
  memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  static const int signals[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGTERM,
                                SIGPIPE, SIGUSR1, SIGUSR2, SIGALRM};
  for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
    sigaction(signals[i], &ign, NULL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  prctl(PR_SET_NAME, "zkr-reaper");

  int null_fd = open("/dev/null", O_RDWR);
  if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(null_fd, 1) < 0 ||
      dup2(link_fd, REAPER_LINK_FD) < 0)
    _exit(127);
  /* Drop every other descriptor: holding another ensemble's link would
   * delay that reaper, and holding client sockets would keep them open. */
  zkrc__close_from(REAPER_LINK_FD + 1);
  reaper_main(dir, keep_dir);
}

int zkrc__reaper_start(zkrc__reaper *r, const char *dir, int keep_dir) {
  int link[2];
  r->pid = -1;
  r->fd = -1;
  /* A socket pair rather than a pipe: send(MSG_NOSIGNAL) cannot raise
   * SIGPIPE in the test process should the reaper be gone. */
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, link) != 0) {
    fprintf(stderr, "zkrecipes-testing: socketpair: %s\n", strerror(errno));
    return -1;
  }
  /* Keep the child's end away from 0-3, which the child overwrites. */
  int child_end = fcntl(link[1], F_DUPFD_CLOEXEC, REAPER_LINK_FD + 1);
  close(link[1]);
  if (child_end < 0) {
    fprintf(stderr, "zkrecipes-testing: fcntl: %s\n", strerror(errno));
    close(link[0]);
    return -1;
  }
  /* No fflush() first: the reaper never touches stdio and leaves with
   * _exit(), so our buffers cannot be written twice. */
  pid_t pid = fork();
  if (pid == 0) {
    close(link[0]);
    reaper_child(child_end, dir, keep_dir);
  }
  int fork_errno = errno;
  close(child_end);
  if (pid < 0) {
    fprintf(stderr, "zkrecipes-testing: fork: %s\n", strerror(fork_errno));
    close(link[0]);
    return -1;
  }
  r->pid = pid;
  r->fd = link[0];
  return 0;
}

static void reaper_send(zkrc__reaper *r, char op, pid_t pid) {
  if (r->fd < 0)
    return;
  reaper_msg msg;
  memset(&msg, 0, sizeof msg);
  msg.op = op;
  msg.pid = (int32_t)pid;
  ssize_t n;
  do {
    n = send(r->fd, &msg, sizeof msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n != (ssize_t)sizeof msg)
    fprintf(stderr,
            "zkrecipes-testing: the reaper is gone (%s); members "
            "may outlive a crash\n",
            n < 0 ? strerror(errno) : "short write");
}

void zkrc__reaper_watch(zkrc__reaper *r, pid_t pid) {
  reaper_send(r, 'W', pid);
}

void zkrc__reaper_forget(zkrc__reaper *r, pid_t pid) {
  reaper_send(r, 'F', pid);
}

void zkrc__reaper_finish(zkrc__reaper *r) {
  if (r->fd >= 0) {
    reaper_send(r, 'B', 0);
    close(r->fd);
    r->fd = -1;
  }
  if (r->pid > 0) {
    if (zkrc__wait_exit(r->pid, 5000) == 0) {
      kill(r->pid, SIGKILL);
      zkrc__wait_exit(r->pid, 5000);
    }
    r->pid = -1;
  }
}
