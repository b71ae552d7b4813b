/*
 * fuzz.h - what every fuzz target of zkrecipes provides.
 *
 * A target is one LLVMFuzzerTestOneInput() that checks properties of the
 * code under test (not only that it does not crash) and abort()s, with a
 * message on stderr, when one does not hold.  It is built two ways:
 *  - with clang -fsanitize=fuzzer,address,undefined (libFuzzer's main), and
 *  - with any C compiler and replay.c, a plain main() that runs the target's
 *    seed corpus and deterministic mutations of it.
 */
#ifndef ZKRC_FUZZ_H
#define ZKRC_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* The target's name: its corpus is fuzz/corpus/<name>/. */
extern const char *const fuzz_target_name;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Report a broken property and abort (libFuzzer saves the input). */
#define FUZZ_CHECK(cond, ...)                                                  \
  do {                                                                         \
    if (!(cond))                                                               \
      fuzz_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);                       \
  } while (0)
void fuzz_fail(const char *file, int line, const char *cond, const char *fmt,
               ...) __attribute__((noreturn, format(printf, 4, 5)));

#endif /* ZKRC_FUZZ_H */
