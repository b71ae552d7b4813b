/* Shared by every fuzz target and both of their builds (see fuzz.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

void fuzz_fail(const char *file, int line, const char *cond, const char *fmt,
               ...) {
  fprintf(stderr, "\n%s:%d: property broken: %s\n  ", file, line, cond);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n");
  abort();
}
