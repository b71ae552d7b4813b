/*
 * The lines a child process writes on one descriptor (its log on stderr),
 * read by a thread of their own as they come, so that a test waits for a
 * line (an event) rather than for a time.  Every reader shares one mutex
 * and condition, so a test can wait on the lines of several processes at
 * once.
 */
#ifndef ZKT_LINEREADER_H
#define ZKT_LINEREADER_H

#include <glib.h>

typedef struct zkt_lines {
  GThread *reader;
  GPtrArray *lines; /* of char*, guarded by zkt_lines_mu */
  gboolean eof;     /* the descriptor ended (guarded too) */
  int fd;
} zkt_lines;

/* Guards every zkt_lines; broadcast on each new line and at each end. */
extern GMutex zkt_lines_mu;
extern GCond zkt_lines_cond;

/* Start reading @p fd (closed when it ends); @p name names the thread.
 * With ZKT_VERBOSE set, each line is copied to stderr. */
void zkt_lines_start(zkt_lines *l, int fd, const char *name);

/* Once the process has ended: wait for the reader and free the lines. */
void zkt_lines_join(zkt_lines *l);

#endif /* ZKT_LINEREADER_H */
