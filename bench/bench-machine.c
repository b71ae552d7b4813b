/*
 * zkr-bench: what machine and ensemble the run was on.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <sys/utsname.h>

#include "bench.h"

/* ------------------------------------------------------------ the machine */

static char *first_line_of(const char *cmd) {
  FILE *f = popen(cmd, "r");
  if (f == NULL)
    return g_strdup("?");
  char buf[512] = "";
  if (fgets(buf, sizeof buf, f) == NULL)
    buf[0] = '\0';
  pclose(f);
  return g_strstrip(g_strdup(buf[0] ? buf : "?"));
}

/* The value after "key :" on the first line of @p file starting with @p key. */
static char *file_field(const char *file, const char *key) {
  char *text = NULL, *value = NULL;
  if (!g_file_get_contents(file, &text, NULL, NULL))
    return g_strdup("?");
  char **lines = g_strsplit(text, "\n", -1);
  for (char **l = lines; *l && value == NULL; l++)
    if (g_str_has_prefix(*l, key) && strchr(*l, ':'))
      value = g_strstrip(g_strdup(strchr(*l, ':') + 1));
  g_strfreev(lines);
  g_free(text);
  return value ? value : g_strdup("?");
}

/* The filesystem type and device holding @p dir. */
static char *filesystem_of(const char *dir) {
  char *text = NULL, *best_dev = NULL, *best_type = NULL;
  size_t best_len = 0;
  if (g_file_get_contents("/proc/self/mounts", &text, NULL, NULL)) {
    char **lines = g_strsplit(text, "\n", -1);
    for (char **l = lines; *l; l++) {
      char dev[256], mnt[512], type[64];
      if (sscanf(*l, "%255s %511s %63s", dev, mnt, type) != 3)
        continue;
      size_t len = strlen(mnt);
      if (g_str_has_prefix(dir, mnt) &&
          (dir[len] == '/' || dir[len] == '\0' || len == 1) &&
          len >= best_len) {
        best_len = len;
        g_free(best_dev);
        g_free(best_type);
        best_dev = g_strdup(dev);
        best_type = g_strdup(type);
      }
    }
    g_strfreev(lines);
    g_free(text);
  }
  char *out = g_strdup_printf("%s (%s)", best_type ? best_type : "?",
                              best_dev ? best_dev : "?");
  g_free(best_dev);
  g_free(best_type);
  return out;
}

char *loadavg(void) {
  char *text = NULL;
  if (!g_file_get_contents("/proc/loadavg", &text, NULL, NULL))
    return g_strdup("?");
  char **w = g_strsplit(text, " ", 4);
  char *out = g_strdup_printf("%s %s %s", w[0], w[1] ? w[1] : "",
                              w[1] && w[2] ? w[2] : "");
  g_strfreev(w);
  g_free(text);
  return out;
}

GString *machine;

void describe_machine(const char *data_dir) {
  machine = g_string_new(NULL);
  GDateTime *now = g_date_time_new_now_local();
  char *date = g_date_time_format(now, "%Y-%m-%d %H:%M:%S %Z");
  g_date_time_unref(now);
  struct utsname u;
  uname(&u);
  char *cpu = file_field("/proc/cpuinfo", "model name");
  char *mem = file_field("/proc/meminfo", "MemTotal");
  char *fs = filesystem_of(data_dir);
  char *java = g_strdup_printf("%s -version 2>&1", opt.java);
  char *java_version = first_line_of(java);
  char *py = g_strdup_printf(
      "%s -c 'import sys, kazoo.version as k; print(sys.version.split()[0], "
      "\"kazoo\", k.__version__)' 2>&1",
      opt.python);
  char *py_version = first_line_of(py);
  char *curator = first_line_of(
      "dpkg-query -W -f '${Version}' libcurator-recipes-java 2>/dev/null");
  char *zk = fetch_mntr(0);
  char *zk_version = NULL;
  if (zk) {
    char *p = strstr(zk, "zk_version\t");
    if (p) {
      p += strlen("zk_version\t");
      zk_version = g_strndup(p, strcspn(p, ",-\n"));
    }
  }
  g_free(zk);
  char *load = loadavg();
  g_string_append_printf(
      machine,
      "date:       %s\n"
      "machine:    %s, %ld CPUs, %s RAM, kernel %s\n"
      "data dirs:  %s on %s\n"
      "ensemble:   %s\n"
      "ZooKeeper:  %s\n"
      "Java:       %s; Curator: %s\n"
      "Python:     %s\n"
      "load avg:   %s at the start",
      date, cpu, sysconf(_SC_NPROCESSORS_ONLN), mem, u.release, data_dir, fs,
      ensemble ? "local, 3 members, fsync on, "
                 "tickTime 200 ms"
               : hosts,
      zk_version ? zk_version : "?", java_version, curator, py_version, load);
  g_free(date);
  g_free(cpu);
  g_free(mem);
  g_free(fs);
  g_free(java);
  g_free(java_version);
  g_free(py);
  g_free(py_version);
  g_free(curator);
  g_free(zk_version);
  g_free(load);
}
