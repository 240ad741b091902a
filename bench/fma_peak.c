/*===- fma_peak.c - one core's fp32 multiply-add throughput ---------------===*
 *
 * Twelve independent chains of fused multiply-adds on 16-float vectors (one
 * AVX-512 register; two AVX2 registers elsewhere), long enough to hide the
 * FMA latency. Prints the best of several trials in GFLOP/s (load from
 * other processes only ever lowers a trial): the ceiling no fp32 matmul
 * kernel on this core can pass.
 *
 *   cc -O2 -march=native -ffp-contract=fast bench/fma_peak.c -o fma_peak
 *===----------------------------------------------------------------------===*/
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef float vec16 __attribute__((vector_size(64)));

enum { kChains = 12, kTrials = 7 };

static double seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int compare(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(void) {
  const long iterations = 20000000;
  vec16 scale, offset;
  for (int lane = 0; lane < 16; ++lane) {
    scale[lane] = 0.999999f;
    offset[lane] = 1e-7f;
  }
  double rates[kTrials];
  float sink = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    vec16 acc[kChains];
    for (int c = 0; c < kChains; ++c)
      for (int lane = 0; lane < 16; ++lane)
        acc[c][lane] = (float)(c + lane);
    double start = seconds();
    for (long i = 0; i < iterations; ++i) {
      for (int c = 0; c < kChains; ++c)
        acc[c] = acc[c] * scale + offset;
      /* Keeps the compiler from collapsing or reordering the chains. */
      __asm__ volatile("" : : : "memory");
    }
    double elapsed = seconds() - start;
    for (int c = 0; c < kChains; ++c)
      sink += acc[c][c];
    rates[trial] = 2.0 * 16 * kChains * (double)iterations / elapsed / 1e9;
  }
  qsort(rates, kTrials, sizeof(double), compare);
  printf("%.1f\n", rates[kTrials - 1]);
  /* Printed to stderr so the results can't be optimized away. */
  fprintf(stderr, "checksum %g\n", (double)sink);
  return 0;
}
