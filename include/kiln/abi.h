/*===- kiln/abi.h - binary interface of compiled Kiln artifacts ------------===*
 *
 * A Kiln artifact is a shared library exporting one C symbol,
 *
 *     const kiln_abi_artifact *kiln_artifact_v3(void);
 *
 * which describes every entry point of the compiled model. The compiler
 * (kiln-compile) writes these structures; the runtime (kiln/runtime.h) reads
 * them. Applications normally use the runtime instead of this header.
 *
 * Every entry point is one function taking one call structure
 * (kiln_abi_call): the tensors with their dims, the session's state and
 * scratch memory, and the executor running parallel loops.
 *
 * Compatibility: the symbol name carries the ABI major version. Within one
 * version, fields are only ever appended, and the structures that can grow
 * say how large they are (kiln_abi_call.size, kiln_abi_artifact.size and
 * .entry_size), so either side can tell which fields the other knows.
 *
 * The compiler builds these structures from this header's field list and
 * checks their layout against it when it is compiled (lib/Codegen/AbiLayout.h).
 *===----------------------------------------------------------------------===*/
#ifndef KILN_ABI_H
#define KILN_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_ABI_VERSION 3
#define KILN_ABI_ARTIFACT_SYMBOL "kiln_artifact_v3"
/* The x86 CPU features an artifact may record as needed (`cpu_features`),
 * named as LLVM and __builtin_cpu_supports name them: those a code
 * generator uses beyond x86-64's SSE2. */
#define KILN_ABI_X86_FEATURES(X)                                               \
  X("sse4.1") X("sse4.2") X("sse4a") X("popcnt") X("lzcnt") X("movbe")         \
  X("bmi") X("bmi2") X("f16c") X("fma") X("avx") X("avx2") X("avxvnni")        \
  X("avx512f") X("avx512cd") X("avx512bw") X("avx512dq") X("avx512vl")         \
  X("avx512vnni") X("avx512bf16") X("avx512fp16") X("amx-tile")                \
  X("amx-int8") X("amx-bf16")

/* Alignment in bytes of every buffer a call passes (tensors, state,
 * scratch) and of the buffers generated code places in them: the widest
 * vector load. */
#define KILN_ABI_ALIGNMENT 64

/* Element types, numbered as ONNX's TensorProto.DataType. */
typedef enum kiln_dtype {
  KILN_DTYPE_INVALID = 0,
  KILN_DTYPE_F32 = 1,
  KILN_DTYPE_U8 = 2,
  KILN_DTYPE_I8 = 3,
  KILN_DTYPE_U16 = 4,
  KILN_DTYPE_I16 = 5,
  KILN_DTYPE_I32 = 6,
  KILN_DTYPE_I64 = 7,
  KILN_DTYPE_BOOL = 9, /* one byte per element, 0 or 1 */
  KILN_DTYPE_F16 = 10, /* IEEE binary16 */
  KILN_DTYPE_F64 = 11,
  KILN_DTYPE_U32 = 12,
  KILN_DTYPE_U64 = 13,
  KILN_DTYPE_BF16 = 16, /* the top half of a float32 */
  /* 4-bit integers, packed as ONNX packs them: two per byte, the first of
   * each pair in the low nibble; n elements take (n + 1) / 2 bytes. */
  KILN_DTYPE_U4 = 21,
  KILN_DTYPE_I4 = 22,
} kiln_dtype;

/* A named dimension (an ONNX dim_param such as "seq") and the sizes an
 * artifact accepts for it, bounds included. Buffers are planned for `max`. */
typedef struct kiln_abi_dim {
  const char *name;
  int64_t min;
  int64_t max;
} kiln_abi_dim;

/* How the compiler computes a dimension from the others (an output's size
 * such as "seq * 2"): a postfix program of (operation, operand) pairs of
 * int64_t, ended by KILN_ABI_EXPR_END. CONST pushes its operand, DIM pushes
 * the value of the artifact's dimension k = operand (one the inputs set);
 * the others pop b, then a, and push a op b (floor and ceiling divisions
 * round toward minus and plus infinity; MOD is a - b * floor(a / b)). The
 * stack never holds more than KILN_ABI_EXPR_MAX_DEPTH values. */
typedef enum kiln_abi_expr_op {
  KILN_ABI_EXPR_END = 0,
  KILN_ABI_EXPR_CONST = 1,
  KILN_ABI_EXPR_DIM = 2,
  KILN_ABI_EXPR_ADD = 3,
  KILN_ABI_EXPR_MUL = 4,
  KILN_ABI_EXPR_FLOORDIV = 5,
  KILN_ABI_EXPR_CEILDIV = 6,
  KILN_ABI_EXPR_MOD = 7,
} kiln_abi_expr_op;
#define KILN_ABI_EXPR_MAX_DEPTH 16

/* In a tensor's dims, a negative value -(k + 1) stands for the artifact's
 * dimension k (kiln_abi_artifact.dims[k]); other values are fixed sizes. */
#define KILN_ABI_DIM_REF(k) (-(int64_t)(k)-1)
#define KILN_ABI_DIM_INDEX(d) (-((d) + 1)) /* never overflows */

/* One input or output of an entry point. */
typedef struct kiln_abi_tensor {
  const char *name;
  int32_t dtype; /* kiln_dtype */
  int32_t rank;
  const int64_t *dims; /* rank values: sizes, or KILN_ABI_DIM_REF(k) */
} kiln_abi_tensor;

/* A dimension an entry takes from an input's value instead of its shape (a
 * renderer's image size): element `element` of input `input`, a rank-1
 * int64 tensor of fixed length. The caller checks the value against the
 * dimension's range, as for one a shape sets. */
typedef struct kiln_abi_value_dim {
  int32_t input;
  int32_t element;
  int64_t dim; /* index into kiln_abi_artifact.dims */
} kiln_abi_value_dim;

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

/* One tensor of a call: a dense row-major buffer, KILN_ABI_ALIGNMENT-aligned, and its
 * dims, which the caller has checked against the entry's signature (a
 * dimension of the artifact has the same value wherever it appears). */
typedef struct kiln_abi_buffer {
  void *data;
  const int64_t *dims;
} kiln_abi_buffer;

/* Everything one call of an entry point receives. */
typedef struct kiln_abi_call {
  uint64_t size;  /* sizeof(kiln_abi_call) as the caller knows it */
  void *state;    /* the session's state: state_size bytes, which persist
                     across calls (NULL when state_size is 0) */
  void *scratch;  /* at least the entry's scratch_size bytes (as the state,
                     KILN_ABI_ALIGNMENT-aligned); their contents don't
                     survive the call */
  kiln_abi_executor *executor; /* never NULL */
  const kiln_abi_buffer *inputs;  /* num_inputs; generated code only reads */
  const kiln_abi_buffer *outputs; /* num_outputs, allocated by the caller */
} kiln_abi_call;

/* Generated code. Returns 0 on success, otherwise an index + 1 into the
 * entry's `errors` table. */
typedef int32_t (*kiln_abi_entry_fn)(const kiln_abi_call *call);

typedef struct kiln_abi_entry {
  const char *name;
  kiln_abi_entry_fn fn;
  int32_t num_inputs;
  int32_t num_outputs;
  const kiln_abi_tensor *inputs;
  const kiln_abi_tensor *outputs;
  int32_t num_errors;
  const char *const *errors;
  uint64_t scratch_size; /* bytes of scratch memory a call uses */
  /* The dimensions the inputs' values set; 0 and NULL for none (and in
   * artifacts whose entry_size ends before these fields). */
  int64_t num_value_dims;
  const kiln_abi_value_dim *value_dims;
} kiln_abi_entry;

typedef struct kiln_abi_artifact {
  uint32_t abi_version; /* KILN_ABI_VERSION; stays the first field */
  uint32_t size;        /* sizeof(kiln_abi_artifact) as compiled */
  uint32_t entry_size;  /* sizeof(kiln_abi_entry) as compiled */
  uint32_t num_entries;
  const kiln_abi_entry *entries;
  uint32_t num_dims;
  const kiln_abi_dim *dims;
  uint64_t state_size;    /* bytes of per-session state all entries share */
  const void *state_init; /* state_size bytes the state starts from (and is
                             reset to), or NULL for zeros */
  const char *producer;   /* e.g. "kiln 0.1.0" */
  /* The CPU features the code may use, comma-separated names from
   * KILN_ABI_X86_FEATURES ("avx2,fma,..."); "" for none. The runtime
   * refuses to open the artifact on a CPU without one of them. */
  const char *cpu_features;
  /* NULL when every dimension is set by the inputs; otherwise num_dims
   * programs (kiln_abi_expr_op), NULL for a dimension the inputs set, the
   * computation for one the compiler derives from those (named by its
   * expression, within its min..max). */
  const int64_t *const *dim_exprs;
  /* Tokens the `draft` entry proposes per round of greedy generation when
   * the caller leaves the choice to the artifact (the compiler's choice:
   * kiln-compile --draft-tokens or --choose-draft); 0 for none. */
  int64_t draft_tokens;
} kiln_abi_artifact;

typedef const kiln_abi_artifact *(*kiln_abi_artifact_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* KILN_ABI_H */
