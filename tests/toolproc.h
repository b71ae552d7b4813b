/*
 * A tool under test as a child process (zkr-watch, zkr-members): started
 * with its stdout and stderr captured and its stdin closed, its output read
 * without blocking, waited for with a deadline, and killed at the latest
 * by proc_free_all() (call it from the program's exit cleanup).
 */
#ifndef ZKT_TOOLPROC_H
#define ZKT_TOOLPROC_H

#include <stdint.h>

#include <glib.h>

#include "zkrecipes/testing.h"

typedef struct proc {
  zkrc_child child; /* child.pid: 0 once reaped */
  int out_eof, err_eof;
  GString *out, *err;
  int status;
  int64_t started_ms;
  char *name; /* argv[0]'s base name, for messages */
} proc;

/* Start @p argv (NULL-ended); the test fails (fatally) when it cannot. */
proc *proc_start(const char *const *argv);
/* Kill (if running), reap and free @p p (NULL ignored). */
void proc_free(proc *p);
/* proc_free() every proc still there. */
void proc_free_all(void);
/* Wait up to @p ms for output, and read what there is. */
void proc_pump(proc *p, int ms);
/* Wait until @p needle is in stdout (@p on_stderr: stderr), at most
 * @p timeout_ms or until the output ends without it; 1 when it came. */
int proc_wait_text(proc *p, int on_stderr, const char *needle, int timeout_ms);
/* Wait for the exit, at most @p timeout_ms (then killed: -1); the rest of
 * its output read too.  Returns the exit status. */
int proc_wait(proc *p, int timeout_ms);

#endif /* ZKT_TOOLPROC_H */
