/*
 * A plain main() for a fuzz target, for when libFuzzer is not available
 * (and under valgrind): it runs every file of the target's seed corpus,
 * then deterministic mutations of them, through LLVMFuzzerTestOneInput().
 *
 *   fuzz_<target>_replay [FILE|DIR ...]
 * Default: the corpus TOP_SRCDIR/fuzz/corpus/<target>.  FUZZ_ITERATIONS
 * (default 20000) mutated inputs follow, from FUZZ_SEED (default 1).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

#ifndef TOP_SRCDIR
#define TOP_SRCDIR "."
#endif

#define FUZZ_MAX_INPUT 4096

typedef struct input {
  unsigned char *data;
  size_t size;
} input;

static input *corpus;
static size_t ncorpus, corpus_cap;

static void add_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    perror(path);
    exit(2);
  }
  /* Room for the entry first, so that no failure leaves a buffer behind. */
  if (ncorpus == corpus_cap) {
    corpus_cap = corpus_cap ? 2 * corpus_cap : 64;
    corpus = realloc(corpus, corpus_cap * sizeof *corpus);
    if (corpus == NULL)
      exit(2);
  }
  unsigned char *buf = malloc(FUZZ_MAX_INPUT);
  if (buf == NULL)
    exit(2);
  size_t n = fread(buf, 1, FUZZ_MAX_INPUT, f);
  fclose(f);
  corpus[ncorpus].data = buf;
  corpus[ncorpus].size = n;
  ncorpus++;
}

static void add_path(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) {
    perror(path);
    exit(2);
  }
  if (!S_ISDIR(st.st_mode)) {
    add_file(path);
    return;
  }
  DIR *d = opendir(path);
  if (d == NULL) {
    perror(path);
    exit(2);
  }
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    char full[4096];
    snprintf(full, sizeof full, "%s/%s", path, e->d_name);
    add_file(full);
  }
  closedir(d);
}

/* xorshift64*: deterministic, so a failure replays. */
static unsigned long long rng_state;
static unsigned next_rand(unsigned bound) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return (unsigned)((rng_state * 2685821657736338717ULL) >> 33) % bound;
}

/* Pieces the targets care about. */
static const char *const pieces[] = {"/",
                                     ".",
                                     "..",
                                     "-",
                                     "0",
                                     "9",
                                     "lock-",
                                     "__lock__",
                                     "latch-",
                                     "\n",
                                     "",
                                     "zookeeper",
                                     "0000000001",
                                     "-000000001",
                                     "-2147483648",
                                     "2147483647",
                                     "\xc2\x80",
                                     "\xef\xbf\xbf",
                                     "\xf0\x9f\x98\x80",
                                     "\xed\xa0\x80",
                                     "\xc0\xaf",
                                     "\x7f",
                                     "\x1f",
                                     "_c_",
                                     "\xff"};
#define NPIECES (sizeof pieces / sizeof pieces[0])

static size_t mutate(unsigned char *buf, size_t n) {
  int edits = 1 + (int)next_rand(4);
  for (int e = 0; e < edits; e++) {
    size_t at = n ? next_rand((unsigned)n + 1) : 0;
    switch (next_rand(4)) {
    case 0: /* flip a byte */
      if (n)
        buf[at % n] ^= (unsigned char)(1u << next_rand(8));
      break;
    case 1: { /* insert a piece ("" stands for a NUL byte) */
      const char *p = pieces[next_rand(NPIECES)];
      size_t pl = *p ? strlen(p) : 1;
      if (n + pl > FUZZ_MAX_INPUT)
        break;
      memmove(buf + at + pl, buf + at, n - at);
      memcpy(buf + at, *p ? p : "\0", pl);
      n += pl;
      break;
    }
    case 2: { /* delete a range */
      size_t len = n - at ? next_rand((unsigned)(n - at) + 1) : 0;
      memmove(buf + at, buf + at + len, n - at - len);
      n -= len;
      break;
    }
    default: /* repeat a range */
      if (n && n * 2 <= FUZZ_MAX_INPUT) {
        size_t from = next_rand((unsigned)n),
               len = 1 + next_rand((unsigned)(n - from));
        memmove(buf + at + len, buf + at, n - at);
        /* the source may overlap the gap just opened */
        memmove(buf + at, buf + (from < at ? from : from + len), len);
        n += len;
      }
      break;
    }
  }
  return n;
}

int main(int argc, char **argv) {
  if (argc > 1) {
    for (int i = 1; i < argc; i++)
      add_path(argv[i]);
  } else {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/fuzz/corpus/%s", TOP_SRCDIR,
             fuzz_target_name);
    add_path(dir);
  }
  if (ncorpus == 0) {
    fprintf(stderr, "fuzz_%s_replay: empty corpus\n", fuzz_target_name);
    return 2;
  }
  for (size_t i = 0; i < ncorpus; i++)
    LLVMFuzzerTestOneInput(corpus[i].data, corpus[i].size);
  const char *it = getenv("FUZZ_ITERATIONS"), *seed = getenv("FUZZ_SEED");
  long iterations = it ? atol(it) : 20000;
  rng_state = seed ? strtoull(seed, NULL, 10) | 1 : 1;
  unsigned char *buf = malloc(FUZZ_MAX_INPUT);
  if (buf == NULL)
    return 2;
  for (long i = 0; i < iterations; i++) {
    input *base = &corpus[next_rand((unsigned)ncorpus)];
    memcpy(buf, base->data, base->size);
    size_t n = mutate(buf, base->size);
    /* A private copy of exactly n bytes, so that valgrind and ASan see
     * any read past the input's end. */
    unsigned char *exact = malloc(n ? n : 1);
    if (exact == NULL)
      return 2;
    memcpy(exact, buf, n);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
  }
  printf("fuzz_%s_replay: plain driver (no libFuzzer): %zu corpus inputs and "
         "%ld mutations checked\n",
         fuzz_target_name, ncorpus, iterations);
  free(buf);
  for (size_t i = 0; i < ncorpus; i++)
    free(corpus[i].data);
  free(corpus);
  return 0;
}
