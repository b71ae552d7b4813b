/*
 * zkr-bench: the processes it drives: workers and peers, line by line.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include "bench.h"

/* ----------------------------------------------------------- processes */

GPtrArray *live_procs;

void proc_kill(proc *p) {
  if (p->pid > 0) {
    kill(p->pid, SIGKILL);
    while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
      ;
    p->pid = 0;
  }
}

void proc_free(proc *p) {
  proc_kill(p);
  g_ptr_array_remove(live_procs, p);
  if (p->in_fd >= 0)
    close(p->in_fd);
  close(p->out_fd);
  g_string_free(p->buf, TRUE);
  g_free(p->name);
  g_free(p);
}

/* Start @p argv with pipes on its stdin and stdout (its stderr is ours);
 * it dies with us (the testing library's spawn). */
proc *proc_start(const char *name, char *const *argv, char *const *extra_env) {
  zkrc_spawn_options o;
  zkrc_spawn_options_init(&o);
  o.pipe_stdin = o.pipe_stdout = 1;
  o.extra_env = extra_env;
  zkrc_child c;
  if (zkrc_spawn(&c, argv, &o) != 0)
    fatal("cannot start %s: %s", argv[0], strerror(errno));
  proc *p = g_new0(proc, 1);
  p->name = g_strdup(name);
  p->pid = c.pid;
  p->in_fd = c.in_fd;
  p->out_fd = c.out_fd;
  p->buf = g_string_new(NULL);
  g_ptr_array_add(live_procs, p);
  return p;
}

static char *proc_exit_text(proc *p) {
  int status;
  pid_t r = p->pid > 0 ? waitpid(p->pid, &status, WNOHANG) : 0;
  if (r == p->pid) {
    p->pid = 0;
    if (WIFEXITED(status))
      return g_strdup_printf("exited with %d", WEXITSTATUS(status));
    return g_strdup_printf("killed by signal %d", WTERMSIG(status));
  }
  return g_strdup("still running");
}

/* The next line of @p p's output; fatal on timeout or end of output. */
char *proc_line(proc *p, int timeout_ms) {
  int64_t deadline = now_ns() + (int64_t)timeout_ms * 1000000;
  for (;;) {
    char *nl = memchr(p->buf->str, '\n', p->buf->len);
    if (nl) {
      char *line = g_strndup(p->buf->str, (gsize)(nl - p->buf->str));
      g_string_erase(p->buf, 0, (gssize)(nl - p->buf->str) + 1);
      return line;
    }
    if (p->eof) {
      sleep_ms(50); /* let it exit, for the message */
      char *why = proc_exit_text(p);
      fatal("%s: output ended (%s)", p->name, why);
    }
    int left = (int)((deadline - now_ns()) / 1000000);
    if (left <= 0)
      fatal("%s: no answer within %d ms", p->name, timeout_ms);
    struct pollfd pfd = {.fd = p->out_fd, .events = POLLIN};
    int r = poll(&pfd, 1, left);
    if (r < 0 && errno != EINTR)
      fatal("poll: %s", strerror(errno));
    if (r <= 0)
      continue;
    char chunk[65536];
    ssize_t n = read(p->out_fd, chunk, sizeof chunk);
    if (n < 0 && errno != EINTR)
      fatal("%s: read: %s", p->name, strerror(errno));
    if (n == 0)
      p->eof = TRUE;
    if (n > 0)
      g_string_append_len(p->buf, chunk, n);
  }
}

/* The next line if one comes within @p timeout_ms, else NULL. */
char *proc_try_line(proc *p, int timeout_ms) {
  if (memchr(p->buf->str, '\n', p->buf->len) == NULL && !p->eof) {
    struct pollfd pfd = {.fd = p->out_fd, .events = POLLIN};
    int r = poll(&pfd, 1, timeout_ms);
    if (r < 0 && errno != EINTR)
      fatal("poll: %s", strerror(errno));
    if (r <= 0)
      return NULL;
  }
  return proc_line(p, STEP_MS);
}

/* Read lines until one starts with @p prefix (returned); lines starting
 * with "error" or "timeout" are fatal, others are skipped. */
char *proc_expect(proc *p, const char *prefix, int timeout_ms) {
  int64_t deadline = now_ns() + (int64_t)timeout_ms * 1000000;
  for (;;) {
    int left = (int)((deadline - now_ns()) / 1000000);
    char *line = proc_line(p, left > 0 ? left : 1);
    if (g_str_has_prefix(line, prefix))
      return line;
    if (g_str_has_prefix(line, "error") || g_str_has_prefix(line, "timeout"))
      fatal("%s: %s", p->name, line);
    g_free(line);
  }
}

void proc_send(proc *p, const char *line) {
  char *text = g_strdup_printf("%s\n", line);
  size_t len = strlen(text);
  for (size_t done = 0; done < len;) {
    ssize_t n = write(p->in_fd, text + done, len - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      fatal("%s: write: %s", p->name, strerror(errno));
    done += (size_t)n;
  }
  g_free(text);
}

/* Close its input and wait for it to exit (SIGKILL after @p timeout_ms);
 * fatal unless it exits with 0; frees it. */
void proc_finish(proc *p, int timeout_ms) {
  close(p->in_fd);
  p->in_fd = -1;
  int64_t deadline = now_ns() + (int64_t)timeout_ms * 1000000;
  int status = 0;
  for (;;) {
    pid_t r = waitpid(p->pid, &status, WNOHANG);
    if (r == p->pid)
      break;
    if (r < 0 && errno != EINTR)
      fatal("waitpid: %s", strerror(errno));
    if (now_ns() > deadline) {
      proc_kill(p);
      fatal("%s did not exit within %d ms", p->name, timeout_ms);
    }
    sleep_ms(10);
  }
  p->pid = 0;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fatal("%s failed (status %d)", p->name, status);
  proc_free(p);
}

/* A worker process: zkr-bench-worker ARGS... */
proc *worker_start(const char *name, const char *const *args) {
  GPtrArray *argv = g_ptr_array_new();
  g_ptr_array_add(argv, (char *)opt.worker);
  for (const char *const *a = args; *a; a++)
    g_ptr_array_add(argv, (char *)*a);
  g_ptr_array_add(argv, NULL);
  char session[64];
  snprintf(session, sizeof session, "ZKR_PEER_SESSION_MS=%d",
           MEASURE_SESSION_MS);
  char *const env[] = {session, "ZKR_PEER_TIMEOUT_MS=900000",
                       "ZKR_PEER_LIFETIME_S=3600", NULL};
  proc *p = proc_start(name, (char *const *)argv->pdata, env);
  g_ptr_array_free(argv, TRUE);
  return p;
}

/* A peer: Curator (java) or kazoo (python) in MODE with ARGS. */
proc *peer_start(const char *impl, const char *const *args, int session_ms) {
  GPtrArray *argv = g_ptr_array_new();
  if (strcmp(impl, "curator") == 0) {
    g_ptr_array_add(argv, (char *)opt.java);
    g_ptr_array_add(argv, "-cp");
    g_ptr_array_add(argv, (char *)opt.curator_cp);
    g_ptr_array_add(argv, "CuratorPeer");
  } else {
    g_ptr_array_add(argv, (char *)opt.python);
    g_ptr_array_add(argv, (char *)opt.kazoo_peer);
  }
  for (const char *const *a = args; *a; a++)
    g_ptr_array_add(argv, (char *)*a);
  g_ptr_array_add(argv, NULL);
  char session[64];
  snprintf(session, sizeof session, "ZKR_PEER_SESSION_MS=%d", session_ms);
  char *const env[] = {session, "ZKR_PEER_TIMEOUT_MS=900000",
                       "ZKR_PEER_LIFETIME_S=3600", NULL};
  char *name = g_strdup_printf("%s %s", impl, args[0]);
  proc *p = proc_start(name, (char *const *)argv->pdata, env);
  g_free(name);
  g_ptr_array_free(argv, TRUE);
  return p;
}
