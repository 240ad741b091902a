/*===- gemm_onednn.c - oneDNN's fp32 matrix product, timed ---------------===*
 *
 * C = A B for row-major A (M x K) and B (K x N) through dnnl_sgemm, the
 * peer bench/run_gemm.py sets beside Kiln and ONNX Runtime. Threads come
 * from OMP_NUM_THREADS (Debian's libdnnl runs on OpenMP). Prints the median
 * of RUNS timed calls after 3 warm-up calls, in milliseconds, then C's
 * checksum on stderr so the calls can't be optimized away.
 *
 *   cc -O2 bench/gemm_onednn.c -ldnnl -o gemm_onednn
 *   OMP_NUM_THREADS=1 ./gemm_onednn M N K RUNS
 *===----------------------------------------------------------------------===*/
#include <dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int compare(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static float *random_matrix(long count, unsigned *state) {
  float *m = malloc((size_t)count * sizeof(float));
  if (!m) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  for (long i = 0; i < count; ++i) {
    *state = *state * 1103515245u + 12345u;
    m[i] = (float)((*state >> 8) & 0xffff) / 65536.0f - 0.5f;
  }
  return m;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s M N K RUNS\n", argv[0]);
    return 2;
  }
  long m = atol(argv[1]), n = atol(argv[2]), k = atol(argv[3]);
  int runs = atoi(argv[4]);
  if (m <= 0 || n <= 0 || k <= 0 || runs <= 0) {
    fprintf(stderr, "M, N, K and RUNS must be positive\n");
    return 2;
  }
  unsigned state = 1;
  float *a = random_matrix(m * k, &state);
  float *b = random_matrix(k * n, &state);
  float *c = random_matrix(m * n, &state);
  double *times = malloc((size_t)runs * sizeof(double));
  for (int i = -3; i < runs; ++i) {
    double start = seconds();
    if (dnnl_sgemm('N', 'N', m, n, k, 1.0f, a, k, b, n, 0.0f, c, n) !=
        dnnl_success) {
      fprintf(stderr, "dnnl_sgemm failed\n");
      return 1;
    }
    if (i >= 0)
      times[i] = seconds() - start;
  }
  qsort(times, (size_t)runs, sizeof(double), compare);
  printf("%.4f\n", times[runs / 2] * 1e3);
  double sum = 0;
  for (long i = 0; i < m * n; ++i)
    sum += c[i];
  fprintf(stderr, "checksum %g\n", sum);
  return 0;
}
