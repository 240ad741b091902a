/*===- thread_pool.c - the executor generated code runs parallel loops on -===*
 *
 * A session's pool has num_threads - 1 workers; the calling thread takes part
 * in every loop. Loops in a model are short (tens of microseconds) and come
 * back to back, so idle workers spin for a while before they sleep: waking a
 * sleeping thread costs about as much as a small loop.
 *
 * Each thread owns one contiguous share of every loop and takes it first,
 * in ranges, before it takes ranges left in the others' shares. The same
 * thread then runs the same iterations call after call, so the data they
 * read (a product's weights: a decode step reads all of them) stays in
 * that core's cache, and threads claim ranges on cache lines of their own
 * unless one runs ahead of another.
 *===----------------------------------------------------------------------===*/
#define _GNU_SOURCE
#include "internal.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* How long an idle worker spins before it sleeps. */
#define KILN_SPIN_NANOSECONDS 2000000
/* Ranges each thread's share is cut into, so threads that finish early take
 * over the work of slower ones. */
#define KILN_RANGES_PER_THREAD 4
#define KILN_CACHE_LINE 64

/* One thread's share of the current loop: iterations [begin, end) in ranges
 * of range_size, the next to take counted by next_range. */
typedef struct share {
  _Alignas(KILN_CACHE_LINE) atomic_int_fast64_t next_range;
  int64_t begin, end, range_size;
} share;

typedef struct worker_start {
  kiln_thread_pool *pool;
  int32_t index; /* the share it takes first; the caller's is 0 */
} worker_start;

struct kiln_thread_pool {
  kiln_abi_executor executor; /* first, so generated code's pointer is ours */
  int32_t num_threads;
  pthread_t *workers;
  worker_start *starts;
  int32_t num_workers; /* started so far */

  /* The current loop, written by the caller before `generation` moves. */
  kiln_abi_parallel_body body;
  void *closure;
  share *shares; /* num_threads */
  atomic_int busy_workers;

  /* Bumped once per loop; workers wait for it to move. */
  atomic_uint generation;
  atomic_int sleeping_workers;
  atomic_int stopping;
  pthread_mutex_t mutex;
  pthread_cond_t wake;
};

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static int64_t now_nanoseconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Runs the ranges of share `first`, then those left in the others. */
static void run_ranges(kiln_thread_pool *pool, int32_t first) {
  for (int32_t k = 0; k < pool->num_threads; ++k) {
    share *own = &pool->shares[(first + k) % pool->num_threads];
    for (;;) {
      int64_t range =
          atomic_fetch_add_explicit(&own->next_range, 1, memory_order_relaxed);
      int64_t begin = own->begin + range * own->range_size;
      if (begin >= own->end)
        break;
      int64_t end = own->end - begin < own->range_size
                        ? own->end
                        : begin + own->range_size;
      pool->body(pool->closure, begin, end);
    }
  }
}

/* Waits until `generation` differs from `seen`: spinning first, then on the
 * condition variable. Returns the new generation. */
static unsigned wait_for_work(kiln_thread_pool *pool, unsigned seen) {
  int64_t deadline = now_nanoseconds() + KILN_SPIN_NANOSECONDS;
  for (unsigned spins = 0;; ++spins) {
    unsigned current =
        atomic_load_explicit(&pool->generation, memory_order_acquire);
    if (current != seen)
      return current;
    cpu_relax();
    if ((spins & 1023) == 1023 && now_nanoseconds() > deadline)
      break;
  }
  pthread_mutex_lock(&pool->mutex);
  atomic_fetch_add(&pool->sleeping_workers, 1);
  unsigned current;
  while ((current = atomic_load(&pool->generation)) == seen)
    pthread_cond_wait(&pool->wake, &pool->mutex);
  atomic_fetch_sub(&pool->sleeping_workers, 1);
  pthread_mutex_unlock(&pool->mutex);
  return current;
}

static void *worker_main(void *arg) {
  const worker_start *start = arg;
  kiln_thread_pool *pool = start->pool;
  /* Not read from `generation`: the first loop may have bumped it already. */
  unsigned seen = 0;
  for (;;) {
    seen = wait_for_work(pool, seen);
    if (atomic_load(&pool->stopping))
      return NULL;
    run_ranges(pool, start->index);
    atomic_fetch_sub_explicit(&pool->busy_workers, 1, memory_order_release);
  }
}

static void pool_parallel_for(kiln_abi_executor *self,
                              kiln_abi_parallel_body body, void *closure,
                              int64_t count) {
  kiln_thread_pool *pool = (kiln_thread_pool *)self;
  if (count <= 0)
    return;
  if (pool->num_workers == 0 || count == 1) {
    body(closure, 0, count);
    return;
  }
  pool->body = body;
  pool->closure = closure;
  for (int32_t t = 0; t < pool->num_threads; ++t) {
    share *own = &pool->shares[t];
    own->begin = count * t / pool->num_threads;
    own->end = count * (t + 1) / pool->num_threads;
    int64_t size = (own->end - own->begin + KILN_RANGES_PER_THREAD - 1) /
                   KILN_RANGES_PER_THREAD;
    own->range_size = size > 0 ? size : 1;
    atomic_store_explicit(&own->next_range, 0, memory_order_relaxed);
  }
  atomic_store_explicit(&pool->busy_workers, pool->num_workers,
                        memory_order_relaxed);
  /* Sequentially consistent, as the sleepers' count is read after it: a
   * worker either sees the new generation or is counted as sleeping. */
  atomic_fetch_add(&pool->generation, 1);
  if (atomic_load(&pool->sleeping_workers) > 0) {
    pthread_mutex_lock(&pool->mutex);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mutex);
  }
  run_ranges(pool, 0);
  while (atomic_load_explicit(&pool->busy_workers, memory_order_acquire) > 0)
    cpu_relax();
}

int32_t kiln_available_cpus(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
    return CPU_COUNT(&set);
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? (int32_t)online : 1;
}

kiln_status kiln_thread_pool_create(int32_t num_threads,
                                    kiln_thread_pool **out) {
  *out = NULL;
  kiln_thread_pool *pool = calloc(1, sizeof(*pool));
  if (!pool)
    return kiln_fail(KILN_ERROR_OUT_OF_MEMORY, "cannot allocate a thread pool");
  pool->executor.parallel_for = pool_parallel_for;
  pool->num_threads = num_threads;
  pthread_mutex_init(&pool->mutex, NULL);
  pthread_cond_init(&pool->wake, NULL);
  pool->shares =
      aligned_alloc(KILN_CACHE_LINE, sizeof(share) * (size_t)num_threads);
  if (!pool->shares) {
    kiln_thread_pool_destroy(pool);
    return kiln_fail(KILN_ERROR_OUT_OF_MEMORY, "cannot allocate a thread pool");
  }
  if (num_threads > 1) {
    pool->workers = calloc((size_t)num_threads - 1, sizeof(pthread_t));
    pool->starts = calloc((size_t)num_threads - 1, sizeof(worker_start));
    if (!pool->workers || !pool->starts) {
      kiln_thread_pool_destroy(pool);
      return kiln_fail(KILN_ERROR_OUT_OF_MEMORY,
                       "cannot allocate a pool of %d threads", num_threads);
    }
    for (int32_t i = 0; i < num_threads - 1; ++i) {
      pool->starts[i] = (worker_start){pool, i + 1};
      int error = pthread_create(&pool->workers[i], NULL, worker_main,
                                 &pool->starts[i]);
      if (error != 0) {
        kiln_thread_pool_destroy(pool);
        return kiln_fail(KILN_ERROR_OUT_OF_MEMORY,
                         "cannot start thread %d of %d (error %d)", i + 2,
                         num_threads, error);
      }
      ++pool->num_workers;
    }
  }
  *out = pool;
  return KILN_OK;
}

void kiln_thread_pool_destroy(kiln_thread_pool *pool) {
  if (!pool)
    return;
  atomic_store(&pool->stopping, 1);
  atomic_fetch_add(&pool->generation, 1);
  pthread_mutex_lock(&pool->mutex);
  pthread_cond_broadcast(&pool->wake);
  pthread_mutex_unlock(&pool->mutex);
  for (int32_t i = 0; i < pool->num_workers; ++i)
    pthread_join(pool->workers[i], NULL);
  pthread_cond_destroy(&pool->wake);
  pthread_mutex_destroy(&pool->mutex);
  free(pool->workers);
  free(pool->starts);
  free(pool->shares);
  free(pool);
}

kiln_abi_executor *kiln_thread_pool_executor(kiln_thread_pool *pool) {
  return &pool->executor;
}

int32_t kiln_thread_pool_size(const kiln_thread_pool *pool) {
  return pool->num_threads;
}
