/*
 * testing/spawn.c - child processes for tests and benchmarks: pipes, an
 * environment, and a parent-death signal, so that nothing outlives the
 * program that started it; default signal dispositions, so that a child
 * behaves the same whatever the test process ignores or blocks.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>

#include "internal.h"

/* The defaults, in a whole struct of ours. */
static void spawn_options_defaults(zkrc_spawn_options *o) {
  memset(o, 0, sizeof *o);
  o->size = sizeof *o;
}

void zkrc_spawn_options_init_sized(zkrc_spawn_options *o, size_t size) {
  zkrc_spawn_options full;
  spawn_options_defaults(&full);
  zkrc__testing_options_give(o, size, &full, sizeof full);
}

static gboolean env_name_equal(const char *a, const char *b) {
  size_t n = strcspn(a, "=");
  return strncmp(a, b, n) == 0 && b[n] == '=';
}

/* Our environment with @p extra added (replacing the same names); built
 * before the fork, since the child may only make async-signal-safe calls.
 * Free with g_free (the strings are borrowed). */
static char **child_environ(char *const *extra) {
  extern char **environ;
  GPtrArray *env = g_ptr_array_new();
  for (char **e = environ; *e; e++) {
    gboolean replaced = FALSE;
    for (char *const *x = extra; x && *x && !replaced; x++)
      replaced = env_name_equal(*x, *e);
    if (!replaced)
      g_ptr_array_add(env, *e);
  }
  for (char *const *x = extra; x && *x; x++)
    g_ptr_array_add(env, *x);
  g_ptr_array_add(env, NULL);
  return (char **)g_ptr_array_free(env, FALSE);
}

static void close_pair(int fds[2]) {
  for (int i = 0; i < 2; i++)
    if (fds[i] >= 0)
      close(fds[i]);
  fds[0] = fds[1] = -1;
}

/* In the child, before exec: only async-signal-safe calls. */
/* The child's ends of its pipes (-1: not piped). */
typedef struct child_ends {
  int in, out, err;
} child_ends;

static void become_child(pid_t parent, child_ends ends, int new_group,
                         int max_fd, char *const argv[], char **envp) {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
    _exit(127); /* the parent is already gone */
  if (new_group && setpgid(0, 0) != 0)
    _exit(127);
  zkrc__default_signals(); /* not the test's SIGPIPE ignored, nor its mask */
  if ((ends.in >= 0 && dup2(ends.in, STDIN_FILENO) < 0) ||
      (ends.out >= 0 && dup2(ends.out, STDOUT_FILENO) < 0) ||
      (ends.err >= 0 && dup2(ends.err, STDERR_FILENO) < 0))
    _exit(127);
  /* No ZooKeeper socket, no other child's pipe. */
  if (close_range(3, ~0U, 0) != 0) /* before Linux 5.9 */
    for (int fd = 3; fd < max_fd; fd++)
      close(fd);
  execvpe(argv[0], argv, envp);
  _exit(127);
}

/* Pipes for what @p o asks: [0] the child's end, [1] ours, per stream
 * (stdin, stdout, stderr); -1 where not asked.  0, or -1 with errno. */
static int open_pipes(const zkrc_spawn_options *o, int ends[3][2]) {
  const int asked[3] = {o->pipe_stdin, o->pipe_stdout, o->pipe_stderr};
  for (int i = 0; i < 3; i++)
    ends[i][0] = ends[i][1] = -1;
  for (int i = 0; i < 3; i++) {
    int p[2];
    if (!asked[i])
      continue;
    if (pipe2(p, O_CLOEXEC) != 0) {
      int saved = errno;
      for (int j = 0; j < i; j++)
        close_pair(ends[j]);
      errno = saved;
      return -1;
    }
    /* stdin: the child reads p[0]; stdout, stderr: the child writes p[1]. */
    ends[i][0] = i == 0 ? p[0] : p[1];
    ends[i][1] = i == 0 ? p[1] : p[0];
  }
  return 0;
}

int zkrc_spawn(zkrc_child *child, char *const argv[],
               const zkrc_spawn_options *o) {
  zkrc_spawn_options defaults;
  zkrc_spawn_options_init(&defaults);
  if (child) {
    child->pid = 0;
    child->in_fd = child->out_fd = child->err_fd = -1;
  }
  if (!child || !argv || !argv[0] || (o && o->size == 0)) {
    errno = EINVAL;
    return -1;
  }
  if (o) /* what the caller's version of the struct has; defaults after */
    memcpy(&defaults, o, MIN(o->size, sizeof defaults));
  o = &defaults;
  int ends[3][2];
  if (open_pipes(o, ends) != 0)
    return -1;
  char **envp = child_environ(o->extra_env);
  long open_max = sysconf(_SC_OPEN_MAX); /* not async-signal-safe: now */
  int max_fd = open_max > 0 && open_max < 65536 ? (int)open_max : 65536;
  pid_t parent = getpid();
  /* Not fflush(NULL): it locks every stream, and a thread blocked reading
   * one would block us. */
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    child_ends mine = {ends[0][0], ends[1][0], ends[2][0]};
    become_child(parent, mine, o->new_process_group, max_fd, argv, envp);
  }
  int saved = errno;
  g_free(envp);
  for (int i = 0; i < 3; i++) {
    if (ends[i][0] >= 0)
      close(ends[i][0]);
    if (pid < 0 && ends[i][1] >= 0)
      close(ends[i][1]);
  }
  if (pid < 0) {
    errno = saved;
    return -1;
  }
  if (o->new_process_group)
    setpgid(pid, pid); /* also here: no race with a kill(-pid) right after */
  child->pid = pid;
  child->in_fd = ends[0][1];
  child->out_fd = ends[1][1];
  child->err_fd = ends[2][1];
  return 0;
}

static int exit_code(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int64_t monotonic_ms(void) { return g_get_monotonic_time() / 1000; }

/* Wait until @p pid can be reaped or @p deadline (ms): poll its pidfd,
 * the kernel's event for a process's end. */
static void await_end(pid_t pid, int64_t deadline) {
  int fd = pidfd_open(pid, 0);
  if (fd < 0 && errno == ESRCH)
    return;     /* already reaped, or not ours: waitpid will tell */
  if (fd < 0) { /* no pidfd here (old kernel, seccomp): no event to wait on,
                   so look every 5 ms, without reaping (WNOWAIT) */
    siginfo_t info;
    for (;;) {
      memset(&info, 0, sizeof info);
      if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
          info.si_pid == pid || monotonic_ms() >= deadline)
        return;
      g_usleep(5000);
    }
  }
  for (;;) {
    int64_t left = deadline - monotonic_ms();
    struct pollfd p = {fd, POLLIN, 0};
    if (left <= 0 || poll(&p, 1, (int)left) != -1 || errno != EINTR)
      break;
  }
  close(fd);
}

int zkrc_child_wait(zkrc_child *child, int timeout_ms) {
  if (!child || child->pid <= 0)
    return -1;
  int64_t deadline = monotonic_ms() + (timeout_ms < 0 ? 0 : timeout_ms);
  await_end(child->pid, deadline);
  int status;
  pid_t r;
  while ((r = waitpid(child->pid, &status, WNOHANG)) < 0 && errno == EINTR)
    ;
  if (r < 0)
    return -1;  /* not ours, or reaped by someone else */
  if (r == 0) { /* the deadline passed */
    if (getpgid(child->pid) == child->pid)
      kill(-child->pid, SIGKILL);
    kill(child->pid, SIGKILL);
    while (waitpid(child->pid, &status, 0) < 0 && errno == EINTR)
      ;
    child->pid = 0;
    return -1;
  }
  child->pid = 0;
  return exit_code(status);
}

void zkrc_child_close(zkrc_child *child) {
  if (!child)
    return;
  if (child->in_fd >= 0)
    close(child->in_fd);
  if (child->out_fd >= 0)
    close(child->out_fd);
  if (child->err_fd >= 0)
    close(child->err_fd);
  child->in_fd = child->out_fd = child->err_fd = -1;
}
