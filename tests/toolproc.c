/*
 * A tool under test as a child process (toolproc.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "toolproc.h"

#define KILL_WAIT_MS 10000

static GPtrArray *procs; /* every proc started, until freed */

void proc_free(proc *p) {
  if (p == NULL)
    return;
  if (p->child.pid > 0) {
    kill(p->child.pid, SIGKILL);
    zkrc_child_wait(&p->child, KILL_WAIT_MS);
  }
  zkrc_child_close(&p->child);
  g_string_free(p->out, TRUE);
  g_string_free(p->err, TRUE);
  g_free(p->name);
  g_ptr_array_remove(procs, p);
  g_free(p);
}

void proc_free_all(void) {
  while (procs && procs->len > 0)
    proc_free(g_ptr_array_index(procs, procs->len - 1));
}

proc *proc_start(const char *const *argv) {
  zkrc_spawn_options o;
  zkrc_spawn_options_init(&o);
  o.pipe_stdin = o.pipe_stdout = o.pipe_stderr = 1;
  proc *p = g_new0(proc, 1);
  p->started_ms = zkt_now_ms();
  p->name = g_path_get_basename(argv[0]);
  CU_ASSERT_EQUAL_FATAL(zkrc_spawn(&p->child, (char *const *)argv, &o), 0);
  close(p->child.in_fd);
  p->child.in_fd = -1;
  fcntl(p->child.out_fd, F_SETFL, O_NONBLOCK);
  fcntl(p->child.err_fd, F_SETFL, O_NONBLOCK);
  p->out = g_string_new(NULL);
  p->err = g_string_new(NULL);
  if (procs == NULL)
    procs = g_ptr_array_new();
  g_ptr_array_add(procs, p);
  return p;
}

static void drain(int fd, GString *into, int *eof) {
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0)
    g_string_append_len(into, buf, n);
  if (n == 0)
    *eof = 1;
}

void proc_pump(proc *p, int ms) {
  int ended = p->out_eof && p->err_eof;
  struct pollfd pfds[2] = {{p->out_eof ? -1 : p->child.out_fd, POLLIN, 0},
                           {p->err_eof ? -1 : p->child.err_fd, POLLIN, 0}};
  if (poll(pfds, 2, ended ? 0 : ms) < 0 && errno != EINTR)
    CU_FAIL("poll failed");
  drain(p->child.out_fd, p->out, &p->out_eof);
  drain(p->child.err_fd, p->err, &p->err_eof);
}

int proc_wait_text(proc *p, int on_stderr, const char *needle, int timeout_ms) {
  GString *buf = on_stderr ? p->err : p->out;
  int64_t deadline = zkt_now_ms() + timeout_ms;
  for (;;) {
    if (strstr(buf->str, needle))
      return 1;
    int64_t left = deadline - zkt_now_ms();
    if (left <= 0 || (p->out_eof && p->err_eof)) {
      fprintf(stderr, "\nno '%s' from %s; stdout:\n%s\nstderr:\n%s\n", needle,
              p->name, p->out->str, p->err->str);
      return 0;
    }
    proc_pump(p, (int)left);
  }
}

int proc_wait(proc *p, int timeout_ms) {
  if (p->child.pid <= 0)
    return p->status;
  p->status = zkrc_child_wait(&p->child, timeout_ms);
  int64_t deadline = zkt_now_ms() + 2000; /* the rest of its output */
  while (!(p->out_eof && p->err_eof) && zkt_now_ms() < deadline)
    proc_pump(p, 100);
  if (p->status < 0)
    fprintf(stderr, "\n%s did not exit in %d ms; stderr:\n%s\n", p->name,
            timeout_ms, p->err->str);
  return p->status;
}
