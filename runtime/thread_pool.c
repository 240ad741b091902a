/*===- thread_pool.c - the executor generated code runs parallel loops on -===*
 *
 * The worker threads belong to the process, not to a session: sessions
 * running at once share them, so four 2-thread sessions on two cores run on
 * five threads rather than eight. A session's loop is a job: the calling
 * thread posts it, runs it, and is helped by at most num_threads - 1 idle
 * workers. The caller never waits for a worker that has not joined, so a
 * worker that another process keeps off its core delays nothing but the
 * ranges it already took.
 *
 * Loops in a model are short (tens of microseconds) and come back to back,
 * so idle threads spin for a while, then yield the core, then sleep: waking
 * a sleeping thread costs about as much as a small loop, and spinning
 * without end starves whatever else wants the core.
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

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* How long an idle thread spins, then yields, before it sleeps. */
#define KILN_SPIN_NANOSECONDS 50000
#define KILN_YIELD_NANOSECONDS 2000000
/* Ranges each thread's share is cut into, so threads that finish early take
 * over the work of slower ones. */
#define KILN_RANGES_PER_THREAD 4
#define KILN_CACHE_LINE 64
/* In a job's `inside`: set while its caller sleeps until it drops to 0. */
#define KILN_CALLER_SLEEPS (1 << 30)

/* One thread's share of the current loop: iterations [begin, end) in
 * num_ranges ranges of range_size, the next to take counted by next_range. */
typedef struct share {
  _Alignas(KILN_CACHE_LINE) atomic_int_fast64_t next_range;
  int64_t begin, end, range_size, num_ranges;
} share;

/* A loop posted by a session's thread; it lives on that thread's stack. */
typedef struct job {
  kiln_abi_parallel_body body;
  void *closure;
  share *shares; /* num_threads */
  int32_t num_threads;
  int32_t wanted; /* helpers it takes at most */
  int32_t joined; /* helpers that took it, under the workers' mutex */
  /* Helpers running its ranges now, plus KILN_CALLER_SLEEPS. */
  atomic_int inside;
  struct job *next; /* in the list of jobs open to helpers */
} job;

typedef struct worker {
  struct workers *workers;
  int32_t index;
  pthread_t thread;
} worker;

/* The process's workers, started for the first session that needs them and
 * stopped when the last one is released. */
typedef struct workers {
  pthread_mutex_t mutex;
  pthread_cond_t wake; /* idle workers sleep on it */
  pthread_cond_t done; /* callers wait on it for their helpers to leave */
  job *open;           /* jobs helpers may still take, oldest first */
  atomic_uint posted;  /* bumped under the mutex whenever a job opens */
  int32_t sleeping;    /* under the mutex */
  int32_t stopping;    /* under the mutex */
  worker **threads;
  int32_t count;
  int32_t users; /* pools, under `registry` */
} workers;

struct kiln_thread_pool {
  kiln_abi_executor executor; /* first, so generated code's pointer is ours */
  int32_t num_threads;
  share *shares;    /* num_threads */
  workers *workers; /* NULL with one thread */
};

static pthread_mutex_t registry = PTHREAD_MUTEX_INITIALIZER;
static workers *process_workers;

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

/* The wait after `spins` polls begun at `start`: a pause at first, then a
 * yield of the core. 0 once the thread should sleep instead. */
static int keep_polling(unsigned spins, int64_t start) {
  if ((spins & 255) != 0) {
    cpu_relax();
    return 1;
  }
  int64_t waited = now_nanoseconds() - start;
  if (waited > KILN_SPIN_NANOSECONDS + KILN_YIELD_NANOSECONDS)
    return 0;
  if (waited > KILN_SPIN_NANOSECONDS)
    sched_yield();
  return 1;
}

/* Runs the ranges of share `first`, then those left in the others. */
static void run_ranges(job *work, int32_t first) {
  for (int32_t k = 0; k < work->num_threads; ++k) {
    share *own = &work->shares[(first + k) % work->num_threads];
    for (;;) {
      int64_t range =
          atomic_fetch_add_explicit(&own->next_range, 1, memory_order_relaxed);
      if (range >= own->num_ranges)
        break;
      int64_t begin = own->begin + range * own->range_size;
      int64_t end = own->end - begin < own->range_size
                        ? own->end
                        : begin + own->range_size;
      work->body(work->closure, begin, end);
    }
  }
}

/* Removes `work` from the open list if it is there; under the mutex. */
static void close_job(workers *all, job *work) {
  for (job **link = &all->open; *link; link = &(*link)->next)
    if (*link == work) {
      *link = work->next;
      return;
    }
}

/* The helper's last touch of `work`: its caller may return right after. */
static void leave_job(workers *all, job *work) {
  int before = atomic_fetch_sub(&work->inside, 1);
  if (before == (KILN_CALLER_SLEEPS | 1)) {
    pthread_mutex_lock(&all->mutex);
    pthread_cond_broadcast(&all->done);
    pthread_mutex_unlock(&all->mutex);
  }
}

static void *worker_main(void *arg) {
  const worker *self = arg;
  workers *all = self->workers;
  pthread_mutex_lock(&all->mutex);
  while (!all->stopping) {
    job *work = all->open;
    if (work) {
      if (++work->joined == work->wanted)
        close_job(all, work);
      atomic_fetch_add(&work->inside, 1);
      pthread_mutex_unlock(&all->mutex);
      run_ranges(work, 1 + self->index % (work->num_threads - 1));
      leave_job(all, work);
      pthread_mutex_lock(&all->mutex);
      continue;
    }
    unsigned seen = atomic_load(&all->posted);
    pthread_mutex_unlock(&all->mutex);
    int64_t start = now_nanoseconds();
    unsigned spins = 1;
    while (atomic_load_explicit(&all->posted, memory_order_relaxed) == seen &&
           keep_polling(spins, start))
      ++spins;
    pthread_mutex_lock(&all->mutex);
    if (atomic_load(&all->posted) == seen) {
      ++all->sleeping;
      while (atomic_load(&all->posted) == seen && !all->stopping)
        pthread_cond_wait(&all->wake, &all->mutex);
      --all->sleeping;
    }
  }
  pthread_mutex_unlock(&all->mutex);
  return NULL;
}

/* Cuts [0, count) into num_threads shares without overflowing int64. */
static void cut_into_shares(share *shares, int32_t num_threads, int64_t count) {
  int64_t base = count / num_threads, extra = count % num_threads;
  int64_t begin = 0;
  for (int32_t t = 0; t < num_threads; ++t) {
    share *own = &shares[t];
    int64_t length = base + (t < extra ? 1 : 0);
    own->begin = begin;
    own->end = begin + length;
    begin = own->end;
    own->range_size = length / KILN_RANGES_PER_THREAD +
                      (length % KILN_RANGES_PER_THREAD != 0 ? 1 : 0);
    if (own->range_size == 0)
      own->range_size = 1;
    own->num_ranges =
        length / own->range_size + (length % own->range_size != 0 ? 1 : 0);
    atomic_store_explicit(&own->next_range, 0, memory_order_relaxed);
  }
}

static void pool_parallel_for(kiln_abi_executor *self,
                              kiln_abi_parallel_body body, void *closure,
                              int64_t count) {
  kiln_thread_pool *pool = (kiln_thread_pool *)self;
  if (count <= 0)
    return;
  if (!pool->workers || count == 1) {
    body(closure, 0, count);
    return;
  }
  cut_into_shares(pool->shares, pool->num_threads, count);
  int64_t helpers =
      count - 1 < pool->num_threads - 1 ? count - 1 : pool->num_threads - 1;
  job work = {.body = body,
              .closure = closure,
              .shares = pool->shares,
              .num_threads = pool->num_threads,
              .wanted = (int32_t)helpers};
  atomic_init(&work.inside, 0);

  workers *all = pool->workers;
  pthread_mutex_lock(&all->mutex);
  job **tail = &all->open;
  while (*tail)
    tail = &(*tail)->next;
  *tail = &work;
  atomic_fetch_add(&all->posted, 1);
  for (int32_t k = 0; k < all->sleeping && k < work.wanted; ++k)
    pthread_cond_signal(&all->wake);
  pthread_mutex_unlock(&all->mutex);

  run_ranges(&work, 0);

  /* No helper joins once the job is closed; wait for those inside. */
  pthread_mutex_lock(&all->mutex);
  close_job(all, &work);
  pthread_mutex_unlock(&all->mutex);
  int64_t start = now_nanoseconds();
  for (unsigned spins = 1; atomic_load(&work.inside) != 0; ++spins)
    if (!keep_polling(spins, start))
      break;
  if (atomic_load(&work.inside) == 0)
    return;
  pthread_mutex_lock(&all->mutex);
  atomic_fetch_or(&work.inside, KILN_CALLER_SLEEPS);
  while (atomic_load(&work.inside) != KILN_CALLER_SLEEPS)
    pthread_cond_wait(&all->done, &all->mutex);
  pthread_mutex_unlock(&all->mutex);
}

int32_t kiln_available_cpus(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
    return CPU_COUNT(&set);
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? (int32_t)online : 1;
}

/* Stops and frees the process's workers; under `registry`. */
static void stop_workers(workers *all) {
  pthread_mutex_lock(&all->mutex);
  all->stopping = 1;
  atomic_fetch_add(&all->posted, 1);
  pthread_cond_broadcast(&all->wake);
  pthread_mutex_unlock(&all->mutex);
  for (int32_t i = 0; i < all->count; ++i) {
    pthread_join(all->threads[i]->thread, NULL);
    free(all->threads[i]);
  }
  pthread_cond_destroy(&all->wake);
  pthread_cond_destroy(&all->done);
  pthread_mutex_destroy(&all->mutex);
  free(all->threads);
  free(all);
}

/* Starts one more worker; returns an errno value on failure. */
static int start_worker(workers *all) {
  worker **grown =
      realloc(all->threads, sizeof(worker *) * ((size_t)all->count + 1));
  if (!grown)
    return ENOMEM;
  all->threads = grown;
  worker *started = calloc(1, sizeof(*started));
  if (!started)
    return ENOMEM;
  started->workers = all;
  started->index = all->count;
  int error = pthread_create(&started->thread, NULL, worker_main, started);
  if (error != 0) {
    free(started);
    return error;
  }
  all->threads[all->count++] = started;
  return 0;
}

/* Makes sure the process has at least `count` workers and counts one more
 * user of them; under `registry`. */
static kiln_status use_workers(int32_t count, workers **out) {
  workers *all = process_workers;
  if (!all) {
    all = calloc(1, sizeof(*all));
    if (!all)
      return kiln_fail(KILN_ERROR_OUT_OF_MEMORY,
                       "cannot allocate the worker threads' state");
    pthread_mutex_init(&all->mutex, NULL);
    pthread_cond_init(&all->wake, NULL);
    pthread_cond_init(&all->done, NULL);
    process_workers = all;
  }
  while (all->count < count) {
    int error = start_worker(all);
    if (error != 0) {
      if (all->users == 0) {
        stop_workers(all);
        process_workers = NULL;
      }
      return kiln_fail(KILN_ERROR_OUT_OF_MEMORY,
                       "cannot start worker thread %d of %d: %s",
                       all->count + 1, count, strerror(error));
    }
  }
  ++all->users;
  *out = all;
  return KILN_OK;
}

kiln_status kiln_thread_pool_create(int32_t num_threads,
                                    kiln_thread_pool **out) {
  *out = NULL;
  kiln_thread_pool *pool = calloc(1, sizeof(*pool));
  if (!pool)
    return kiln_fail(KILN_ERROR_OUT_OF_MEMORY, "cannot allocate a thread pool");
  pool->executor.parallel_for = pool_parallel_for;
  pool->num_threads = num_threads;
  pool->shares =
      aligned_alloc(KILN_CACHE_LINE, sizeof(share) * (size_t)num_threads);
  if (!pool->shares) {
    free(pool);
    return kiln_fail(KILN_ERROR_OUT_OF_MEMORY, "cannot allocate a thread pool");
  }
  if (num_threads > 1) {
    pthread_mutex_lock(&registry);
    kiln_status status = use_workers(num_threads - 1, &pool->workers);
    pthread_mutex_unlock(&registry);
    if (status != KILN_OK) {
      free(pool->shares);
      free(pool);
      return status;
    }
  }
  *out = pool;
  return KILN_OK;
}

void kiln_thread_pool_destroy(kiln_thread_pool *pool) {
  if (!pool)
    return;
  if (pool->workers) {
    pthread_mutex_lock(&registry);
    if (--pool->workers->users == 0) {
      stop_workers(pool->workers);
      process_workers = NULL;
    }
    pthread_mutex_unlock(&registry);
  }
  free(pool->shares);
  free(pool);
}

kiln_abi_executor *kiln_thread_pool_executor(kiln_thread_pool *pool) {
  return &pool->executor;
}

int32_t kiln_thread_pool_size(const kiln_thread_pool *pool) {
  return pool->num_threads;
}
