/*
 * testing/process.c - starting member processes that cannot outlive us, and
 * waiting for them.
 *
 * The test process is usually multi-threaded (ZooKeeper client threads, the
 * proxy thread), so between fork() and exec() the child only makes
 * async-signal-safe calls: everything it needs is prepared before the fork.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

extern char **environ;

void zkrc__testing_options_give(void *opts, size_t size, const void *full,
                                size_t full_size) {
  if (opts == NULL || size < sizeof(size_t) * 2)
    return;
  memset(opts, 0, size);
  memcpy(opts, full, size < full_size ? size : full_size);
  *(size_t *)opts = size;
}

int64_t zkrc__now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void zkrc__sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

void zkrc__close_from(int lowest) {
#ifdef SYS_close_range
  if (syscall(SYS_close_range, (unsigned)lowest, ~0U, 0) == 0)
    return;
#endif
  /* Old kernel: close them one by one.  1 << 16 bounds the loop even with
   * a huge RLIMIT_NOFILE. */
  for (int fd = lowest; fd < (1 << 16); fd++)
    close(fd);
}

/* The test process may have changed signal dispositions or its mask (a
 * self-pipe handler, SIGPIPE ignored, signals blocked for signalfd; a shell
 * that started it in the background ignores SIGINT and SIGQUIT): ignored
 * dispositions and the mask survive exec, so reset them all, or SIGTERM
 * might not stop a member, nor SIGINT a tool under test. */
void zkrc__default_signals(void) {
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  /* SIGKILL, SIGSTOP and the C library's own signals refuse: harmless. */
  for (int sig = 1; sig < NSIG; sig++)
    sigaction(sig, &dfl, NULL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
}

/* Report errno @p err to the parent through @p err_fd and exit. */
static _Noreturn void child_fail(int err_fd, int err) {
  ssize_t unused = write(err_fd, &err, sizeof err);
  (void)unused;
  _exit(127);
}

/* In the child: async-signal-safe calls only.  @p err_fd is >= 3 and
 * close-on-exec, so a successful exec closes it and the parent reads EOF. */
static _Noreturn void child_exec(char *const argv[], const char *cwd,
                                 int out_fd, int err_fd, pid_t parent) {
  /* Die with the thread that forked us.  The parent may already be gone by
   * the time the death signal is armed: check. */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
    child_fail(err_fd, errno);
  if (getppid() != parent)
    _exit(127);
  /* Our own process group: a ^C in the terminal reaches the harness, which
   * then stops the members in order. */
  setpgid(0, 0);
  zkrc__default_signals();

  int null_fd = open("/dev/null", O_RDONLY);
  if (null_fd < 0)
    child_fail(err_fd, errno);
  if (dup2(null_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(out_fd, 2) < 0)
    child_fail(err_fd, errno);
  /* Keep err_fd (moved to 3) and nothing else: an inherited reaper link or
   * client socket would keep them open for as long as the member lives. */
  if (err_fd != 3) {
    if (dup3(err_fd, 3, O_CLOEXEC) < 0)
      child_fail(err_fd, errno);
    err_fd = 3;
  }
  zkrc__close_from(4);
  if (chdir(cwd) != 0)
    child_fail(err_fd, errno);
  execve(argv[0], argv, environ);
  child_fail(err_fd, errno);
}

/* Move @p fd to a number >= 3 (close-on-exec), so the child's dup2 onto 0-2
 * cannot clobber it even when the test process closed its stdio. */
static int fd_above_stdio(int fd) {
  if (fd >= 3)
    return fd;
  int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  close(fd);
  return moved;
}

pid_t zkrc__spawn(char *const argv[], const char *cwd, int out_fd) {
  int err_pipe[2];
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    fprintf(stderr, "zkrecipes-testing: pipe: %s\n", strerror(errno));
    return -1;
  }
  int err_read = fd_above_stdio(err_pipe[0]);
  int err_write = fd_above_stdio(err_pipe[1]);
  int out = fcntl(out_fd, F_DUPFD_CLOEXEC, 3);
  if (err_read < 0 || err_write < 0 || out < 0) {
    fprintf(stderr, "zkrecipes-testing: fcntl: %s\n", strerror(errno));
    if (err_read >= 0)
      close(err_read);
    if (err_write >= 0)
      close(err_write);
    if (out >= 0)
      close(out);
    return -1;
  }

  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0)
    child_exec(argv, cwd, out, err_write, parent);
  int fork_errno = errno;
  close(err_write);
  close(out);
  if (pid < 0) {
    close(err_read);
    fprintf(stderr, "zkrecipes-testing: fork: %s\n", strerror(fork_errno));
    return -1;
  }

  /* EOF: the exec succeeded.  An int: it failed with that errno. */
  int child_errno = 0;
  ssize_t n;
  do {
    n = read(err_read, &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  close(err_read);
  if (n == (ssize_t)sizeof child_errno) {
    zkrc__wait_exit(pid, 5000);
    fprintf(stderr, "zkrecipes-testing: cannot run %s: %s\n", argv[0],
            strerror(child_errno));
    return -1;
  }
  return pid;
}

int zkrc__has_exited(pid_t pid, int *status) {
  int st = 0;
  pid_t r;
  do {
    r = waitpid(pid, &st, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (status)
    *status = st;
  /* ECHILD: someone else reaped it (SIGCHLD ignored, a waitpid(-1)...). */
  return r == pid || (r < 0 && errno == ECHILD);
}

/* A pidfd becomes readable when the process exits: no polling needed.
 * Returns -1 when the kernel (or valgrind) has no pidfd_open; that is
 * remembered, so it is asked only once. */
static int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  static atomic_int unsupported;
  if (atomic_load(&unsupported))
    return -1;
  int fd = (int)syscall(SYS_pidfd_open, pid, 0);
  if (fd < 0 && errno == ENOSYS)
    atomic_store(&unsupported, 1);
  return fd;
#else
  (void)pid;
  return -1;
#endif
}

int zkrc__wait_exit(pid_t pid, int timeout_ms) {
  int64_t deadline = zkrc__now_ms() + timeout_ms;
  int pidfd = open_pidfd(pid);
  for (;;) {
    if (zkrc__has_exited(pid, NULL)) {
      if (pidfd >= 0)
        close(pidfd);
      return 1;
    }
    int64_t left = deadline - zkrc__now_ms();
    if (left <= 0)
      break;
    if (pidfd >= 0) {
      struct pollfd pfd = {pidfd, POLLIN, 0};
      if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR) {
        close(pidfd);
        pidfd = -1;
      }
    } else {
      zkrc__sleep_ms(left < 10 ? (int)left : 10);
    }
  }
  if (pidfd >= 0)
    close(pidfd);
  return 0;
}

int zkrc__wait_stopped(pid_t pid, int timeout_ms) {
  int64_t deadline = zkrc__now_ms() + timeout_ms;
  for (;;) {
    int st = 0;
    pid_t r = waitpid(pid, &st, WNOHANG | WUNTRACED);
    if (r == pid && WIFSTOPPED(st))
      return 1;
    if (r == pid || (r < 0 && errno != EINTR))
      return -1; /* exited (now reaped), or not our child */
    if (zkrc__now_ms() >= deadline)
      return 0;
    /* A group stop of a JVM takes well under a millisecond. */
    zkrc__sleep_ms(1);
  }
}

char *zkrc__find_program(const char *name) {
  if (strchr(name, '/'))
    return access(name, X_OK) == 0 ? realpath(name, NULL) : NULL;
  const char *path = getenv("PATH");
  if (!path || !*path)
    path = "/usr/local/bin:/usr/bin:/bin";
  while (*path) {
    size_t len = strcspn(path, ":");
    char *candidate = malloc(len + strlen(name) + 2);
    if (!candidate)
      return NULL;
    if (len == 0)
      sprintf(candidate, "./%s", name);
    else
      sprintf(candidate, "%.*s/%s", (int)len, path, name);
    if (access(candidate, X_OK) == 0)
      return candidate;
    free(candidate);
    path += len;
    if (*path == ':')
      path++;
  }
  return NULL;
}
