/*
 * ThreadSanitizer and GLib's slice allocator: GLib takes pages from
 * posix_memalign and carves them into slices that it hands to any thread,
 * under locks of its own that TSan cannot see; TSan takes a page's
 * allocation for a write by the thread that happened to need it, so the
 * first read of a slice that another thread got from the page (a
 * GPtrArray's length) would be reported.  (G_SLICE=always-malloc is no
 * cure: then GLib's own mallocs and frees, a GAsyncQueue's list nodes,
 * pass between threads under its invisible locks.)  A block GLib allocates
 * is allocated without that write.  TSan's own posix_memalign (which this
 * one calls) is a weak definition, so every caller in a program linking
 * the core statically (the tests) gets this one; the shared library does
 * not export it.
 *
 * Compiled into the library of a --enable-tsan build only (make
 * check-tsan); zk_call.c refers to zkrc__tsan_slice so that every program
 * using the seam links it.
 */
#include "config.h"

#ifdef ZKRC_TSAN

#include <dlfcn.h>
#include <stdlib.h>

#include <glib.h>

int zkrc__tsan_slice = 1;

int __interceptor_posix_memalign(void **out, size_t alignment, size_t size);
void __tsan_ignore_thread_begin(void);
void __tsan_ignore_thread_end(void);

/* Whether the code at @p addr is GLib's own. */
static gboolean from_glib(const void *addr) {
  static void *glib_base;
  void *base = __atomic_load_n(&glib_base, __ATOMIC_ACQUIRE);
  Dl_info info;
  if (base == NULL) {
    if (dladdr((void *)g_main_context_dispatch, &info) == 0)
      return FALSE;
    base = info.dli_fbase;
    __atomic_store_n(&glib_base, base, __ATOMIC_RELEASE);
  }
  return dladdr(addr, &info) != 0 && info.dli_fbase == base;
}

int posix_memalign(void **out, size_t alignment, size_t size) {
  if (!from_glib(__builtin_return_address(0)))
    return __interceptor_posix_memalign(out, alignment, size);
  __tsan_ignore_thread_begin(); /* an allocation now resets the block */
  int rc = __interceptor_posix_memalign(out, alignment, size);
  __tsan_ignore_thread_end();
  return rc;
}

#endif /* ZKRC_TSAN */

/* (A translation unit must declare something, TSan or not.) */
typedef int zkrc__tsan_slice_unused;
