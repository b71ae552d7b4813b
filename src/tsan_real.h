/*
 * For the ThreadSanitizer interpositions (tsan_glib.c, tsan_zookeeper.c):
 * the definition of a function that ours hides.
 */
#ifndef ZKRC_TSAN_REAL_H
#define ZKRC_TSAN_REAL_H

#include <dlfcn.h>

/* The library's own definition of @p name (the next one after ours), looked
 * up once; threads racing to look it up store the same value, atomically.
 * Declares found_<name>. */
#define REAL(name, ret, args)                                                  \
  typedef ret(*name##_fn) args;                                                \
  static name##_fn real_##name;                                                \
  name##_fn found_##name = __atomic_load_n(&real_##name, __ATOMIC_ACQUIRE);    \
  if (found_##name == NULL) {                                                  \
    found_##name = (name##_fn)dlsym(RTLD_NEXT, #name);                         \
    __atomic_store_n(&real_##name, found_##name, __ATOMIC_RELEASE);            \
  }

#endif
