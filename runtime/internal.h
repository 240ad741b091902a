/*===- internal.h - runtime internals shared between its files ------------===*/
#ifndef KILN_RUNTIME_INTERNAL_H
#define KILN_RUNTIME_INTERNAL_H

#include "kiln/runtime.h"

#define KILN_EXPORT __attribute__((visibility("default")))

/* Tensors and signatures have at most this many dimensions. */
#define KILN_MAX_RANK 64

/* Records a message for kiln_last_error() and returns `status`. */
kiln_status kiln_fail(kiln_status status, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

/* Clears the thread's error and returns KILN_OK. */
kiln_status kiln_succeed(void);

/* Bytes of `count` elements of `dtype`, 4-bit ones packed two a byte. */
size_t kiln_packed_byte_size(kiln_dtype dtype, size_t count);

/* Bytes per element rounded up (1 for 4-bit types): what the overflow
 * check of kiln_checked_num_elements multiplies by. */
static inline size_t kiln_element_bytes_rounded_up(kiln_dtype dtype) {
  return ((size_t)kiln_dtype_bits(dtype) + 7) / 8;
}

/* Multiplies dims into an element count; 0 if any dim is negative or the
 * product (times `element_size`) overflows size_t. Sets *ok accordingly. */
size_t kiln_checked_num_elements(int32_t rank, const int64_t *dims,
                                 size_t element_size, int *ok);

struct kiln_artifact {
  void *handle;
  const kiln_abi_artifact *desc;
};

/* Checks every table of a descriptor, so the rest of the runtime can trust
 * it; `path` names the artifact in errors. */
kiln_status kiln_validate_descriptor(const char *path,
                                     const kiln_abi_artifact *desc);

const kiln_abi_entry *kiln_artifact_get_entry(const kiln_artifact *artifact,
                                              int32_t entry);
/* Entry `index` of a descriptor (entries are desc->entry_size apart). */
const kiln_abi_entry *kiln_descriptor_entry(const kiln_abi_artifact *desc,
                                            uint32_t index);

/* The dimensions entry's inputs' values set (0 for an artifact whose
 * entry_size predates the table). */
#define KILN_MAX_VALUE_DIMS 4096
int64_t kiln_descriptor_num_value_dims(const kiln_abi_artifact *desc,
                                       const kiln_abi_entry *entry);

/* Dimension k's program (kiln/abi.h's kiln_abi_expr_op) when the compiler
 * computes it, NULL when the inputs set it. */
const int64_t *kiln_descriptor_dim_expr(const kiln_abi_artifact *desc,
                                        uint32_t k);
/* Runs a validated program over the bound `dim_values`: 1 with `value`
 * set, 0 when a dimension it reads is unbound (-1), -1 when the arithmetic
 * overflows or divides by 0. */
int kiln_evaluate_dim_expr(const int64_t *expr, const int64_t *dim_values,
                           int64_t *value);

/* A session's threads: the calling thread, helped by up to num_threads - 1
 * of the workers the process's sessions share. */
typedef struct kiln_thread_pool kiln_thread_pool;
kiln_status kiln_thread_pool_create(int32_t num_threads,
                                    kiln_thread_pool **out);
void kiln_thread_pool_destroy(kiln_thread_pool *pool);
kiln_abi_executor *kiln_thread_pool_executor(kiln_thread_pool *pool);
int32_t kiln_thread_pool_size(const kiln_thread_pool *pool);

struct kiln_session {
  const kiln_artifact *artifact;
  /* state_size bytes that persist across calls; NULL when there are none. */
  void *state;
  /* The largest scratch_size of the artifact's entries, reused by every
   * call, so generated code allocates nothing per call. */
  void *scratch;
  int32_t num_threads;    /* resolved: at least 1 */
  kiln_thread_pool *pool; /* started by the first run */
  /* Per-call bookkeeping, sized for the largest entry once, so a run
   * allocates nothing but the outputs it is asked to. */
  kiln_abi_buffer *buffers; /* an entry's inputs, then its outputs */
  char *created;            /* which outputs this run allocated */
  int64_t *dim_values;      /* the artifact's dimensions in this run */
};

/* CPUs this process may run on. */
int32_t kiln_available_cpus(void);

#endif /* KILN_RUNTIME_INTERNAL_H */
