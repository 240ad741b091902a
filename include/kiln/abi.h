/*===- kiln/abi.h - binary interface of compiled Kiln artifacts ------------===*
 *
 * A Kiln artifact is a shared library exporting one C symbol,
 *
 *     const kiln_abi_artifact *kiln_artifact_v2(void);
 *
 * which describes every entry point of the compiled model. The compiler
 * (kiln-compile) writes these structures; the runtime (kiln/runtime.h) reads
 * them. Applications normally use the runtime instead of this header.
 *
 * Compatibility: the symbol name carries the ABI major version; within one
 * version, fields are only ever appended.
 *===----------------------------------------------------------------------===*/
#ifndef KILN_ABI_H
#define KILN_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_ABI_VERSION 2
#define KILN_ABI_ARTIFACT_SYMBOL "kiln_artifact_v2"

/* Element types, numbered as ONNX's TensorProto.DataType. */
typedef enum kiln_dtype {
  KILN_DTYPE_INVALID = 0,
  KILN_DTYPE_F32 = 1,
  KILN_DTYPE_I64 = 7,
  KILN_DTYPE_BOOL = 9, /* one byte per element, 0 or 1 */
} kiln_dtype;

/* One input or output of an entry point. A dimension of -1 is dynamic
 * (reserved: today's compiler emits static shapes only). */
typedef struct kiln_abi_tensor {
  const char *name;
  int32_t dtype; /* kiln_dtype */
  int32_t rank;
  const int64_t *dims;
} kiln_abi_tensor;

/* Runs `body(closure, begin, end)` over disjoint ranges that together cover
 * [0, count), possibly on several threads at once, and returns when every
 * range is done. */
typedef void (*kiln_abi_parallel_body)(void *closure, int64_t begin,
                                       int64_t end);

/* Services the runtime lends generated code for the duration of a call. */
typedef struct kiln_abi_executor kiln_abi_executor;
struct kiln_abi_executor {
  void (*parallel_for)(kiln_abi_executor *self, kiln_abi_parallel_body body,
                       void *closure, int64_t count);
};

/* Generated code. `state` is the session's state block (state_size bytes,
 * zeroed at session creation; NULL when state_size is 0), `scratch` the
 * session's scratch arena (at least the entry's scratch_size bytes, 64-byte
 * aligned; its contents don't survive the call), `inputs` and
 * `outputs` are arrays of pointers to dense row-major buffers whose dtype and
 * shape the caller has checked, `executor` (never NULL) runs the code's
 * parallel loops. Returns 0 on success, otherwise an index + 1 into the
 * entry's `errors` table. */
typedef int32_t (*kiln_abi_entry_fn)(void *state, void *scratch,
                                     void *const *inputs, void *const *outputs,
                                     kiln_abi_executor *executor);

typedef struct kiln_abi_entry {
  const char *name;
  int32_t num_inputs;
  int32_t num_outputs;
  const kiln_abi_tensor *inputs;
  const kiln_abi_tensor *outputs;
  kiln_abi_entry_fn fn;
  int32_t num_errors;
  const char *const *errors;
  uint64_t scratch_size; /* bytes of scratch memory a call uses */
} kiln_abi_entry;

typedef struct kiln_abi_artifact {
  uint32_t abi_version; /* KILN_ABI_VERSION */
  uint32_t num_entries;
  const kiln_abi_entry *entries;
  uint64_t state_size;  /* bytes of per-session state shared by all entries */
  const char *producer; /* e.g. "kiln 0.1.0" */
} kiln_abi_artifact;

typedef const kiln_abi_artifact *(*kiln_abi_artifact_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* KILN_ABI_H */
