/*===- fma_peak.c - one core's fp32 multiply-add throughput ---------------===*
 *
 * Twelve independent chains of fused multiply-adds on one vector register
 * each (16 floats with AVX-512, 8 elsewhere: twelve 16-float chains need 24
 * AVX2 registers of its 16 and spilled, measuring half the peak), long
 * enough to hide the FMA latency. Prints the best of several trials in GFLOP/s
 *(load from other processes only ever lowers a trial): the ceiling no fp32
 *matmul kernel on this core can pass.
 *
 *   cc -O2 -march=native -ffp-contract=fast -mprefer-vector-width=512 \
 *       bench/fma_peak.c -o fma_peak
 *
 * (Without the last flag, -march=native on an Intel server core splits the
 * 16-float chains into 256-bit halves and measures half its peak.
 * bench/machine_peaks.py builds it so and refuses its number unless the
 * disassembly holds multiply-adds on the CPU's widest registers.)
 *===----------------------------------------------------------------------===*/
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifdef __AVX512F__
enum { kLanes = 16 };
#else
enum { kLanes = 8 };
#endif
typedef float vec __attribute__((vector_size(kLanes * sizeof(float))));

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
  vec scale, offset;
  for (int lane = 0; lane < kLanes; ++lane) {
    scale[lane] = 0.999999f;
    offset[lane] = 1e-7f;
  }
  double rates[kTrials];
  float sink = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    vec acc[kChains];
    for (int c = 0; c < kChains; ++c)
      for (int lane = 0; lane < kLanes; ++lane)
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
      sink += acc[c][c % kLanes];
    rates[trial] = 2.0 * kLanes * kChains * (double)iterations / elapsed / 1e9;
  }
  qsort(rates, kTrials, sizeof(double), compare);
  printf("%.1f\n", rates[kTrials - 1]);
  /* Printed to stderr so the results can't be optimized away. */
  fprintf(stderr, "checksum %g\n", (double)sink);
  return 0;
}
