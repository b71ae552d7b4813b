/*
 * tools/child.c - COMMAND under supervision (see tool.h): starting it with
 * its guardian, passing signals on, keeping it within the lease, and
 * stopping and reaping it.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>

#include "runtime.h"
#include "tool.h"

extern char **environ;

/* ------------------------------------------------------------ starting */

/* environ without the names @p env sets, then @p env. */
static char **build_environment(char *const *env) {
  size_t n = 0, m = 0;
  while (environ && environ[n])
    n++;
  while (env && env[m])
    m++;
  char **out = g_new0(char *, n + m + 1);
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    int overridden = 0;
    for (size_t j = 0; j < m && !overridden; j++) {
      size_t len = strcspn(env[j], "=") + 1;
      overridden = strncmp(environ[i], env[j], len) == 0;
    }
    if (!overridden)
      out[k++] = environ[i];
  }
  for (size_t j = 0; j < m; j++)
    out[k++] = env[j];
  return out; /* the strings stay the caller's and environ's */
}

/* In the child: close every descriptor from 3 on but the @p n_keep in
 * @p keep (sorted).  Async-signal-safe. */
static void close_all_but(const int *keep, int n_keep) {
  int lo = 3;
  for (int i = 0; i < n_keep; i++) {
    if (keep[i] > lo)
      tool_runtime_close_from_to(lo, keep[i] - 1);
    if (keep[i] + 1 > lo)
      lo = keep[i] + 1;
  }
  tool_runtime_close_from_to(lo, -1);
}

/* In the child, between fork() and exec: async-signal-safe calls only (the
 * parent has threads).  execvpe() of glibc searches PATH without malloc. */
static void __attribute__((noreturn))
exec_child(int own_group, const tool_options *o, pid_t parent, int go_fd,
           int err_fd, int input_fd, const int *keep, int n_keep,
           char *const *argv, char *const *envp) {
  int e = 0;
  if (own_group && setpgid(0, 0) != 0)
    e = errno;
  /* dup2 leaves the copy without close-on-exec: COMMAND keeps it (the
   * same descriptor, when ours was closed, needs its flag cleared). */
  if (e == 0 && input_fd == STDIN_FILENO && fcntl(input_fd, F_SETFD, 0) < 0)
    e = errno;
  else if (e == 0 && input_fd > STDIN_FILENO &&
           dup2(input_fd, STDIN_FILENO) < 0)
    e = errno;
  /* If we die, even by SIGKILL, COMMAND must not run on unguarded (the
   * guardian kills the rest of its group). */
  if (e == 0 && prctl(PR_SET_PDEATHSIG, o->lost_signal) != 0)
    e = errno;
  /* Run only once the parent has put the guardian in our group: a parent
   * killed before that would leave COMMAND's group unguarded.  EOF
   * without the byte: the parent is gone. */
  char go = 0;
  ssize_t got;
  do
    got = read(go_fd, &go, 1);
  while (got < 0 && errno == EINTR);
  if (e == 0 && got != 1)
    e = ESRCH;
  if (e == 0 && getppid() != parent)
    e = ESRCH; /* already gone */
  close_all_but(keep, n_keep);
  tool_runtime_restore_in_child();
  if (e == 0) {
    execvpe(argv[0], argv, envp);
    e = errno;
  }
  ssize_t unused = write(err_fd, &e, sizeof e);
  (void)unused;
  _exit(e == ENOENT ? TOOL_EXIT_NOT_FOUND : TOOL_EXIT_CANNOT_RUN);
}

static int shell_status(int status) {
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return 1;
}

/* Wait for the exec of the child: its error, or 0 once it ran. */
static int exec_result(int fd) {
  int e = 0;
  ssize_t n;
  do
    n = read(fd, &e, sizeof e);
  while (n < 0 && errno == EINTR);
  return n == (ssize_t)sizeof e ? e : 0;
}

static void reap(pid_t pid, int *status) {
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  if (status)
    *status = shell_status(st);
}

/* Fork COMMAND's process, which waits for release_command() before it
 * execs (so that its guardian can be in place first).  Returns its pid
 * with the two ends release_command() needs in fds[] (go, exec result), or
 * 0 after a message with the exit status in *status. */
static pid_t fork_command(char *const *argv, char *const *env,
                          const tool_options *o, int input_fd, int *status,
                          int fds[2]) {
  int errpipe[2], gopipe[2];
  if (pipe2(errpipe, O_CLOEXEC) != 0) {
    tool_error("pipe: %s", strerror(errno));
    *status = TOOL_EXIT_OSERR;
    return 0;
  }
  if (pipe2(gopipe, O_CLOEXEC) != 0) {
    tool_error("pipe: %s", strerror(errno));
    close(errpipe[0]);
    close(errpipe[1]);
    *status = TOOL_EXIT_OSERR;
    return 0;
  }
  char **envp = build_environment(env);
  int n_keep;
  int *keep = tool_runtime_fds_to_keep(errpipe[1], &n_keep);
  pid_t parent = getpid();
  /* No handler of ours may run in the child before it resets them. */
  sigset_t all, saved;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &saved);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0)
    exec_child(!o->foreground, o, parent, gopipe[0], errpipe[1], input_fd, keep,
               n_keep, argv, envp);
  int fork_errno = errno;
  if (pid > 0 && !o->foreground)
    setpgid(pid, pid); /* also here: no window where kill(-pid) misses */
  pthread_sigmask(SIG_SETMASK, &saved, NULL);
  close(errpipe[1]);
  close(gopipe[0]);
  g_free(keep);
  g_free(envp);
  if (pid < 0) {
    close(errpipe[0]);
    close(gopipe[1]);
    tool_error("fork: %s", strerror(fork_errno));
    *status = TOOL_EXIT_OSERR;
    return 0;
  }
  fds[0] = gopipe[1];
  fds[1] = errpipe[0];
  return pid;
}

/* Let the forked COMMAND exec and wait for the outcome: 0 once it runs;
 * else, after a message, the exit status (COMMAND has been reaped). */
static int release_command(pid_t pid, const char *name, const int fds[2]) {
  char go = 'g';
  ssize_t unused = write(fds[0], &go, 1); /* EPIPE: it died; see below */
  (void)unused;
  close(fds[0]);
  int e = exec_result(fds[1]);
  close(fds[1]);
  if (e == 0)
    return 0;
  reap(pid, NULL);
  tool_error("cannot run %s: %s", name, strerror(e));
  return e == ENOENT ? TOOL_EXIT_NOT_FOUND : TOOL_EXIT_CANNOT_RUN;
}

/* ------------------------------------------------------------ guardian */

/* The guardian: a process in COMMAND's group that waits for this program
 * to go away.  The write end of its pipe is ours alone, so EOF means we
 * died (SIGKILL included); then it SIGKILLs the whole group, grandchildren
 * too, which the parent-death signal of COMMAND cannot reach.  A byte
 * instead means COMMAND ended normally: it leaves quietly.  Being in the
 * group it also keeps the group id from being reused while it watches,
 * and dies with the group when we kill it.  Every signal stays blocked in
 * it (it inherits the mask set around fork), so what we send COMMAND's
 * group does not touch it.  Async-signal-safe calls only. */
static void __attribute__((noreturn)) guardian_main(int fd, pid_t group) {
  int keep[1] = {fd};
  close_all_but(keep, 1);
  for (int std = 0; std < 3; std++)
    close(std);
  if (setpgid(0, group) != 0)
    _exit(0); /* the group is gone already: nothing to guard */
  char byte;
  ssize_t n;
  do
    n = read(fd, &byte, 1);
  while (n < 0 && errno == EINTR);
  if (n <= 0)
    kill(-group, SIGKILL); /* ourselves included */
  _exit(0);
}

/* Start the guardian of COMMAND's group.  Without one (fork failed) the
 * parent-death signal still reaches COMMAND itself. */
static void start_guardian(tool_child *c) {
  int gp[2];
  if (pipe2(gp, O_CLOEXEC) != 0) {
    tool_error("pipe: %s (no guardian for COMMAND's group)", strerror(errno));
    return;
  }
  sigset_t all, saved;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &saved);
  pid_t pid = fork();
  if (pid == 0)
    guardian_main(gp[0], c->group);
  if (pid > 0)
    setpgid(pid, c->group); /* also here: it guards as soon as we go on */
  pthread_sigmask(SIG_SETMASK, &saved, NULL);
  close(gp[0]);
  if (pid < 0) {
    tool_error("fork: %s (no guardian for COMMAND's group)", strerror(errno));
    close(gp[1]);
    return;
  }
  c->guardian = pid;
  c->guardian_fd = gp[1];
}

/* Dismiss the guardian (@p kill_group: it kills the group on its way) and
 * reap it. */
static void end_guardian(tool_child *c, int kill_group) {
  if (c->guardian <= 0)
    return;
  if (!kill_group) {
    char bye = 'q';
    ssize_t unused = write(c->guardian_fd, &bye, 1);
    (void)unused;
  }
  close(c->guardian_fd); /* EOF without a byte: it kills the group */
  reap(c->guardian, NULL);
  c->guardian = 0;
  c->guardian_fd = -1;
}

int tool_child_start(tool_child *c, char *const *argv, char *const *env,
                     const tool_options *o) {
  return tool_child_start_with_input(c, argv, env, o, -1);
}

int tool_child_start_with_input(tool_child *c, char *const *argv,
                                char *const *env, const tool_options *o,
                                int input_fd) {
  memset(c, 0, sizeof *c);
  c->kill_at = -1;
  c->deadline = -1;
  c->guardian_fd = -1;
  int status = 0, fds[2];
  pid_t pid = fork_command(argv, env, o, input_fd, &status, fds);
  if (pid == 0)
    return status;
  c->pid = pid;
  c->group = o->foreground ? 0 : pid;
  if (c->group > 0)
    start_guardian(c); /* before COMMAND runs */
  status = release_command(pid, argv[0], fds);
  if (status != 0) {
    end_guardian(c, 0);
    c->pid = 0;
    return status;
  }
  tool_runtime_set_live_child(c);
  return 0;
}

/* ------------------------------------------------------------- signals */

void tool_child_signal(tool_child *c, int sig) {
  if (c->pid <= 0)
    return;
  if (c->group > 0 && kill(-c->group, sig) == 0)
    return;
  kill(c->pid, sig);
}

void tool_stop_self(void) {
  /* SIGSTOP, not SIGTSTP: our handler catches the latter.  The session's
   * threads stop with us, so the lease runs out while we are stopped. */
  kill(getpid(), SIGSTOP);
}

void tool_child_forward(tool_child *c, const tool_signal *sig,
                        const tool_options *o, int lease_ok) {
  int signo = sig->signo;
  if (signo == SIGCHLD)
    return;
  /* From a terminal, a COMMAND in our group got it already. */
  int already = o->foreground && sig->from_terminal;
  if (signo == SIGCONT && !lease_ok) {
    tool_verbose("SIGCONT: the lease ran out meanwhile; COMMAND stays "
                 "stopped until it is killed");
    return;
  }
  if (c->pid > 0 && !already)
    tool_child_signal(c, signo);
  if (signo == SIGTSTP) {
    /* While we are stopped nobody keeps COMMAND within the lease, so it
     * must stop too, even if it catches or ignores SIGTSTP; the guardian
     * stays awake to act should we die meanwhile. */
    if (c->pid > 0) {
      tool_child_signal(c, SIGSTOP);
      if (c->guardian > 0)
        kill(c->guardian, SIGCONT);
    }
    tool_stop_self(); /* so that a shell sees the job stopped, as flock's */
  }
}

/* ------------------------------------------------------------- stopping */

void tool_child_stop(tool_child *c, int sig, int grace_ms) {
  if (c->pid <= 0)
    return;
  if (c->stop_signal == 0) {
    c->stop_signal = sig;
    c->kill_at = tool_now_ms() + grace_ms;
  }
  tool_child_signal(c, sig);
}

/* The grace period that fits below the lease floor: SIGTERM then comes
 * only when the renewals are late, never in the normal course. */
static int fitting_grace(int grace_ms, int floor_ms) {
  int room = floor_ms - 2 * TOOL_KILL_MARGIN_MS;
  if (room < 0)
    room = 0;
  return grace_ms < room ? grace_ms : room;
}

int tool_lease_allows_start(int remaining_ms, int floor_ms,
                            const tool_options *o) {
  int grace = fitting_grace(o->grace_ms, floor_ms);
  return remaining_ms > grace + TOOL_KILL_MARGIN_MS;
}

int tool_child_lease(tool_child *c, int remaining_ms, int floor_ms,
                     const tool_options *o, int timeout) {
  if (c->pid <= 0)
    return timeout;
  int64_t now = tool_now_ms();
  /* Once the hold is gone its last deadline stands: no grace past it. */
  if (remaining_ms > 0 || c->deadline < 0)
    c->deadline = now + remaining_ms;
  int64_t kill_at = c->deadline - TOOL_KILL_MARGIN_MS;
  int grace = fitting_grace(o->grace_ms, floor_ms);
  if (c->stop_signal == 0 && now >= kill_at - grace) {
    c->lease_ran_out = 1;
    tool_error("the lease ends in %d ms: stopping COMMAND with SIG%s, "
               "SIGKILL in %d ms",
               (int)(c->deadline - now), sigabbrev_np(o->lost_signal),
               (int)(kill_at > now ? kill_at - now : 0));
    tool_child_stop(c, o->lost_signal, 0);
    c->kill_at = kill_at;
  }
  if (c->stop_signal == 0)
    return tool_ms_until(kill_at - grace, timeout);
  if (!c->killed && (c->kill_at < 0 || c->kill_at > kill_at))
    c->kill_at = kill_at;
  return tool_child_timeout(c, timeout);
}

int tool_child_poll(tool_child *c) {
  if (c->pid <= 0)
    return 0;
  int status;
  pid_t r = waitpid(c->pid, &status, WNOHANG);
  if (r == c->pid) {
    c->status = shell_status(status);
    c->pid = 0;
    c->kill_at = -1;
    return 1;
  }
  if (r < 0 && errno != EINTR) {
    tool_error("waitpid: %s", strerror(errno));
    c->status = TOOL_EXIT_OSERR;
    c->pid = 0;
    return 1;
  }
  if (c->kill_at >= 0 && tool_now_ms() >= c->kill_at) {
    tool_error("COMMAND still running %s after signal %s: sending SIGKILL",
               c->group > 0 ? "(or its process group)" : "",
               sigabbrev_np(c->stop_signal));
    tool_child_signal(c, SIGKILL);
    c->kill_at = -1;
    c->killed = 1; /* its exit wakes us (SIGCHLD) */
  }
  return 0;
}

int tool_child_timeout(const tool_child *c, int timeout) {
  if (c->pid <= 0 || c->kill_at < 0)
    return timeout;
  return tool_ms_until(c->kill_at, timeout);
}

void tool_child_end(tool_child *c, int kill_rest) {
  if (kill_rest && c->group > 0)
    kill(-c->group, SIGKILL); /* ESRCH: nothing was left */
  end_guardian(c, kill_rest);
  c->group = 0; /* its id may be another group's from now on */
  tool_runtime_set_live_child(NULL);
}

void tool_child_kill_and_reap(tool_child *c) {
  if (c == NULL)
    return;
  if (c->pid > 0) {
    tool_child_signal(c, SIGKILL);
    reap(c->pid, &c->status);
    c->pid = 0;
  }
  tool_child_end(c, 1);
}
