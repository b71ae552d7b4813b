/*
 * testing/fsutil.c - files: removing a tree, showing a log's tail.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/* ZooKeeper's data directories are three levels deep; this only guards
 * against a runaway tree. */
#define MAX_TREE_DEPTH 32

static int remove_entries(int dir_fd, int depth);

/* Remove entry @p name of directory @p dir_fd, recursing into directories. */
static int remove_entry(int dir_fd, const char *name, unsigned char type,
                        int depth) {
  if (type == DT_UNKNOWN) {
    struct stat st;
    if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
      return errno == ENOENT ? 0 : -1;
    type = S_ISDIR(st.st_mode) ? DT_DIR : DT_REG;
  }
  if (type != DT_DIR)
    return unlinkat(dir_fd, name, 0) == 0 || errno == ENOENT ? 0 : -1;

  int sub =
      openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (sub < 0)
    return errno == ENOENT ? 0 : -1;
  int rc = remove_entries(sub, depth + 1);
  close(sub);
  if (rc != 0)
    return -1;
  return unlinkat(dir_fd, name, AT_REMOVEDIR) == 0 || errno == ENOENT ? 0 : -1;
}

/* One pass over the directory's entries with getdents64(), which - unlike
 * readdir() - allocates nothing.  Returns how many entries were found, or
 * -1.  Removing entries while reading may make the kernel skip some, so the
 * caller repeats until a pass finds none. */
static int remove_pass(int dir_fd, int depth) {
  char buf[2048] __attribute__((aligned(8)));
  int found = 0;
  if (lseek(dir_fd, 0, SEEK_SET) < 0)
    return -1;
  for (;;) {
    ssize_t n = getdents64(dir_fd, buf, sizeof buf);
    if (n < 0)
      return -1;
    if (n == 0)
      return found;
    for (ssize_t off = 0; off < n;) {
      struct dirent64 *d = (struct dirent64 *)(buf + off);
      off += d->d_reclen;
      if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
        continue;
      found++;
      if (remove_entry(dir_fd, d->d_name, d->d_type, depth) != 0)
        return -1;
    }
  }
}

static int remove_entries(int dir_fd, int depth) {
  if (depth > MAX_TREE_DEPTH) {
    errno = ELOOP;
    return -1;
  }
  for (int pass = 0; pass < 8; pass++) {
    int found = remove_pass(dir_fd, depth);
    if (found <= 0)
      return found;
  }
  errno = ENOTEMPTY;
  return -1;
}

int zkrc__remove_tree(const char *path) {
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT)
      return 0;
    if (errno == ENOTDIR || errno == ELOOP)
      return unlink(path) == 0 ? 0 : -1;
    return -1;
  }
  int rc = remove_entries(fd, 0);
  int saved = errno;
  close(fd);
  if (rc != 0) {
    errno = saved;
    return -1;
  }
  return rmdir(path) == 0 || errno == ENOENT ? 0 : -1;
}

/* Read at most the last @p max bytes of @p path; malloc'ed, NUL-terminated,
 * or NULL. */
static char *read_end(const char *path, size_t max) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return NULL;
  struct stat st;
  if (fstat(fd, &st) != 0) {
    close(fd);
    return NULL;
  }
  off_t start = st.st_size > (off_t)max ? st.st_size - (off_t)max : 0;
  size_t want = (size_t)(st.st_size - start);
  char *buf = malloc(want + 1);
  size_t got = 0;
  if (buf) {
    while (got < want) {
      ssize_t n = pread(fd, buf + got, want - got, start + (off_t)got);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      got += (size_t)n;
    }
    buf[got] = '\0';
  }
  close(fd);
  return buf;
}

void zkrc__print_tail(const char *path, int max_lines, const char *prefix) {
  char *text = read_end(path, 64 * 1024);
  if (!text) {
    fprintf(stderr, "%s(cannot read %s)\n", prefix, path);
    return;
  }
  /* Walk back over max_lines newlines (ignoring a final one). */
  size_t len = strlen(text);
  size_t start = len;
  if (start > 0 && text[start - 1] == '\n')
    start--;
  for (int lines = 0; start > 0; start--) {
    if (text[start - 1] == '\n' && ++lines == max_lines)
      break;
  }
  fprintf(stderr, "%s--- last lines of %s ---\n", prefix, path);
  for (char *line = text + start; *line;) {
    size_t n = strcspn(line, "\n");
    fprintf(stderr, "%s%.*s\n", prefix, (int)n, line);
    line += n;
    if (*line == '\n')
      line++;
  }
  fflush(stderr);
  free(text);
}

int zkrc__file_contains(const char *path, const char *needle) {
  char *text = read_end(path, 1024 * 1024);
  int found = text && strstr(text, needle) != NULL;
  free(text);
  return found;
}

int zkrc__write_file(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    fprintf(stderr, "zkrecipes-testing: cannot create %s: %s\n", path,
            strerror(errno));
    return -1;
  }
  size_t len = strlen(text);
  size_t done = 0;
  while (done < len) {
    ssize_t n = write(fd, text + done, len - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      fprintf(stderr, "zkrecipes-testing: cannot write %s: %s\n", path,
              strerror(errno));
      close(fd);
      return -1;
    }
    done += (size_t)n;
  }
  if (close(fd) != 0) {
    fprintf(stderr, "zkrecipes-testing: cannot write %s: %s\n", path,
            strerror(errno));
    return -1;
  }
  return 0;
}
