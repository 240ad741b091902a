/*===- fake_artifact.c - hand-built artifacts for the runtime's tests -----===*
 *
 * One source, several shared libraries: FAKE_CASE picks what, if anything,
 * is wrong with the descriptor. The valid one has a named dimension "rows"
 * (1..8), state (an int64 counter starting at 100) and two entries:
 *   scale(x: f32[rows, 2]) -> y: f32[rows, 2]   y = x * rows; counts calls
 *   count() -> n: i64[]                          n = the counter
 *   widen(a: i8[rows, 2], b: i4[rows, 2]) -> c: i32[rows, 2]   c = a + b
 *   flatten(x: f32[rows, 2]) -> y: f32[rows * 2]   y = x's elements
 *   ones(shape: i64[2]) -> y: f32[rows, 2]        y = 1; rows = shape[1]
 * where "rows * 2" is a dimension the runtime computes and ones's "rows" is
 * set by its input's value.
 * Its code is written by hand so the runtime's side of ABI v3 is tested
 * without the compiler. It needs no CPU features.
 *===----------------------------------------------------------------------===*/
#include "kiln/abi.h"

#include <stddef.h>

#define FAKE_VALID 0
#define FAKE_V2 1
#define FAKE_DUPLICATE_ENTRY 2
#define FAKE_NULL_ERROR 3
#define FAKE_BAD_DIM 4
#define FAKE_UNKNOWN_FEATURE 5
#define FAKE_BEFORE_FEATURES 6
#define FAKE_EVERY_FEATURE 7
#define FAKE_BAD_EXPR 8
#define FAKE_BAD_VALUE_DIM 9
#define FAKE_BEFORE_VALUE_DIMS 10
#ifndef FAKE_CASE
#define FAKE_CASE FAKE_VALID
#endif

static int32_t scale(const kiln_abi_call *call) {
  if (call->size < sizeof(kiln_abi_call))
    return 1;
  const int64_t *dims = call->inputs[0].dims;
  if (call->outputs[0].dims[0] != dims[0])
    return 1;
  const float *x = (const float *)call->inputs[0].data;
  float *y = (float *)call->outputs[0].data;
  for (int64_t i = 0; i < dims[0] * dims[1]; ++i)
    y[i] = x[i] * (float)dims[0];
  *(int64_t *)call->state += 1;
  return 0;
}

static int32_t count(const kiln_abi_call *call) {
  *(int64_t *)call->outputs[0].data = *(const int64_t *)call->state;
  return 0;
}

/* 4-bit elements, two a byte, the first in the low nibble. */
static int32_t widen(const kiln_abi_call *call) {
  int64_t count = call->inputs[0].dims[0] * 2;
  const int8_t *a = (const int8_t *)call->inputs[0].data;
  const uint8_t *b = (const uint8_t *)call->inputs[1].data;
  int32_t *c = (int32_t *)call->outputs[0].data;
  for (int64_t i = 0; i < count; ++i) {
    int nibble = (b[i / 2] >> (i % 2 * 4)) & 0xf;
    c[i] = a[i] + (nibble >= 8 ? nibble - 16 : nibble);
  }
  return 0;
}

static int32_t flatten(const kiln_abi_call *call) {
  int64_t count = call->inputs[0].dims[0] * 2;
  if (call->outputs[0].dims[0] != count)
    return 1;
  for (int64_t i = 0; i < count; ++i)
    ((float *)call->outputs[0].data)[i] =
        ((const float *)call->inputs[0].data)[i];
  return 0;
}

static int32_t ones(const kiln_abi_call *call) {
  int64_t rows = ((const int64_t *)call->inputs[0].data)[1];
  if (call->outputs[0].dims[0] != rows)
    return 1;
  for (int64_t i = 0; i < rows * 2; ++i)
    ((float *)call->outputs[0].data)[i] = 1;
  return 0;
}

static const kiln_abi_dim dims[] = {{"rows", 1, 8}, {"rows * 2", 2, 16}};
#if FAKE_CASE == FAKE_BAD_EXPR
/* Reads itself, a computed dimension. */
static const int64_t rows_times_2[] = {KILN_ABI_EXPR_DIM, 1, KILN_ABI_EXPR_END,
                                       0};
#else
static const int64_t rows_times_2[] = {
    KILN_ABI_EXPR_DIM, 0, KILN_ABI_EXPR_CONST, 2,
    KILN_ABI_EXPR_MUL, 0, KILN_ABI_EXPR_END,   0};
#endif
static const int64_t *const dim_exprs[] = {NULL, rows_times_2};
static const int64_t flat[] = {KILN_ABI_DIM_REF(1)};
#if FAKE_CASE == FAKE_BAD_DIM
static const int64_t rows_by_2[] = {KILN_ABI_DIM_REF(5), 2};
#else
static const int64_t rows_by_2[] = {KILN_ABI_DIM_REF(0), 2};
#endif
static const kiln_abi_tensor scale_inputs[] = {
    {"x", KILN_DTYPE_F32, 2, rows_by_2}};
static const kiln_abi_tensor scale_outputs[] = {
    {"y", KILN_DTYPE_F32, 2, rows_by_2}};
static const kiln_abi_tensor count_outputs[] = {
    {"n", KILN_DTYPE_I64, 0, NULL}};
static const kiln_abi_tensor widen_inputs[] = {
    {"a", KILN_DTYPE_I8, 2, rows_by_2}, {"b", KILN_DTYPE_I4, 2, rows_by_2}};
static const kiln_abi_tensor widen_outputs[] = {
    {"c", KILN_DTYPE_I32, 2, rows_by_2}};
static const kiln_abi_tensor flatten_outputs[] = {
    {"y", KILN_DTYPE_F32, 1, flat}};
static const int64_t two[] = {2};
#if FAKE_CASE == FAKE_BAD_VALUE_DIM
static const kiln_abi_tensor ones_inputs[] = {
    {"shape", KILN_DTYPE_I32, 1, two}};
#else
static const kiln_abi_tensor ones_inputs[] = {
    {"shape", KILN_DTYPE_I64, 1, two}};
#endif
static const kiln_abi_value_dim ones_rows[] = {{0, 1, 0}};
#if FAKE_CASE == FAKE_NULL_ERROR
static const char *const errors[] = {NULL};
#else
static const char *const errors[] = {"scale: not called right"};
#endif
static const int64_t initial_count = 100;

static const kiln_abi_entry entries[] = {
    {"scale", scale, 1, 1, scale_inputs, scale_outputs, 1, errors, 0, 0, NULL},
#if FAKE_CASE == FAKE_DUPLICATE_ENTRY
    {"scale", count, 0, 1, NULL, count_outputs, 0, NULL, 0, 0, NULL},
#else
    {"count", count, 0, 1, NULL, count_outputs, 0, NULL, 0, 0, NULL},
#endif
    {"widen", widen, 2, 1, widen_inputs, widen_outputs, 0, NULL, 0, 0, NULL},
    {"flatten", flatten, 1, 1, scale_inputs, flatten_outputs, 1, errors, 0, 0,
     NULL},
    {"ones", ones, 1, 1, ones_inputs, scale_outputs, 1, errors, 0, 1,
     ones_rows},
};

#if FAKE_CASE == FAKE_UNKNOWN_FEATURE
#define FAKE_CPU_FEATURES "sse4.1,no-such-feature"
#elif FAKE_CASE == FAKE_EVERY_FEATURE
/* No x86 CPU has all of them (SSE4a is AMD's, AMX Intel's). */
#define FAKE_LIST_FEATURE(name) name ","
#define FAKE_CPU_FEATURES KILN_ABI_X86_FEATURES(FAKE_LIST_FEATURE)
#else
#define FAKE_CPU_FEATURES ""
#endif

static const kiln_abi_artifact artifact = {
    .abi_version = KILN_ABI_VERSION,
#if FAKE_CASE == FAKE_BEFORE_FEATURES
    /* A version 3 descriptor from before cpu_features was appended. */
    .size = offsetof(kiln_abi_artifact, cpu_features),
#else
    .size = sizeof(kiln_abi_artifact),
#endif
#if FAKE_CASE == FAKE_BEFORE_VALUE_DIMS
    /* Entries from before the value dims were appended: the runtime reads
     * none, so "ones" has an output no input sets. */
    .entry_size = offsetof(kiln_abi_entry, num_value_dims),
    .num_entries = 1,
#else
    .entry_size = sizeof(kiln_abi_entry),
    .num_entries = 5,
#endif
    .entries = entries,
    .num_dims = 2,
    .dims = dims,
    .state_size = sizeof(int64_t),
    .state_init = &initial_count,
    .producer = "fake",
    .cpu_features = FAKE_CPU_FEATURES,
    .dim_exprs = dim_exprs,
};

#if FAKE_CASE == FAKE_V2
const void *kiln_artifact_v2(void) { return &artifact; }
#else
const kiln_abi_artifact *kiln_artifact_v3(void) { return &artifact; }
#endif
