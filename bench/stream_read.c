/*===- stream_read.c - memory bandwidth of a streaming read ---------------===*
 *
 * THREADS threads (argv[1], default 1) each XOR together their share of a
 * 1 GiB buffer, far larger than any cache, the way a matrix-vector product
 * streams its weights. Prints the best of 5 passes in GB/s: the ceiling of
 * any decode step whose time goes to reading weights.
 *
 *   cc -O2 -march=native -pthread bench/stream_read.c -o stream_read
 *===----------------------------------------------------------------------===*/
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kMaxThreads = 64 };
static const size_t kBytes = (size_t)1 << 30;

typedef struct {
  const uint64_t *begin;
  size_t count;
  uint64_t result;
} share;

static void *read_share(void *arg) {
  share *s = arg;
  uint64_t a = 0, b = 0, c = 0, d = 0;
  for (size_t i = 0; i + 4 <= s->count; i += 4) {
    a ^= s->begin[i];
    b ^= s->begin[i + 1];
    c ^= s->begin[i + 2];
    d ^= s->begin[i + 3];
  }
  s->result = a ^ b ^ c ^ d;
  return NULL;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  if (threads < 1 || threads > kMaxThreads)
    return 1;
  uint64_t *buffer = aligned_alloc(64, kBytes);
  if (!buffer)
    return 1;
  memset(buffer, 1, kBytes);
  size_t per = kBytes / sizeof(uint64_t) / threads;
  double best = 0;
  uint64_t sink = 0;
  for (int pass = 0; pass < 5; ++pass) {
    pthread_t ids[kMaxThreads];
    share shares[kMaxThreads];
    double start = now();
    for (int t = 0; t < threads; ++t) {
      shares[t] = (share){buffer + t * per, per, 0};
      pthread_create(&ids[t], NULL, read_share, &shares[t]);
    }
    for (int t = 0; t < threads; ++t) {
      pthread_join(ids[t], NULL);
      sink ^= shares[t].result;
    }
    double rate = per * threads * sizeof(uint64_t) / (now() - start) / 1e9;
    if (rate > best)
      best = rate;
  }
  /* Stored where the compiler must keep it, so the reads stay. */
  static volatile uint64_t kept;
  kept = sink;
  printf("%.2f\n", best);
  free(buffer);
  return 0;
}
