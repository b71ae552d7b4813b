/*
 * A child's lines, read by a thread (linereader.h).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linereader.h"

GMutex zkt_lines_mu;
GCond zkt_lines_cond;

static gpointer read_lines(gpointer data) {
  zkt_lines *l = data;
  FILE *f = fdopen(l->fd, "r");
  char *buf = NULL;
  size_t cap = 0;
  while (f && getline(&buf, &cap, f) > 0) {
    buf[strcspn(buf, "\n")] = '\0';
    if (getenv("ZKT_VERBOSE"))
      fprintf(stderr, "%s\n", buf);
    g_mutex_lock(&zkt_lines_mu);
    g_ptr_array_add(l->lines, g_strdup(buf));
    g_cond_broadcast(&zkt_lines_cond);
    g_mutex_unlock(&zkt_lines_mu);
  }
  free(buf);
  if (f)
    fclose(f); /* closes the descriptor */
  g_mutex_lock(&zkt_lines_mu);
  l->eof = TRUE;
  g_cond_broadcast(&zkt_lines_cond);
  g_mutex_unlock(&zkt_lines_mu);
  return NULL;
}

void zkt_lines_start(zkt_lines *l, int fd, const char *name) {
  l->lines = g_ptr_array_new_with_free_func(g_free);
  l->eof = FALSE;
  l->fd = fd;
  l->reader = g_thread_new(name, read_lines, l);
}

void zkt_lines_join(zkt_lines *l) {
  g_thread_join(l->reader);
  g_ptr_array_free(l->lines, TRUE);
  l->reader = NULL;
  l->lines = NULL;
}
