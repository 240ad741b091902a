/*===- tensor.c - host tensors --------------------------------------------===*/
#include "internal.h"

#include <stdlib.h>
#include <string.h>

struct kiln_tensor {
  kiln_dtype dtype;
  int32_t rank;
  int64_t dims[KILN_MAX_RANK];
  size_t num_elements;
  size_t byte_size;
  void *data;
};

KILN_EXPORT int32_t kiln_dtype_bits(kiln_dtype dtype) {
  switch (dtype) {
  case KILN_DTYPE_U4:
  case KILN_DTYPE_I4:
    return 4;
  case KILN_DTYPE_U8:
  case KILN_DTYPE_I8:
  case KILN_DTYPE_BOOL:
    return 8;
  case KILN_DTYPE_U16:
  case KILN_DTYPE_I16:
  case KILN_DTYPE_F16:
  case KILN_DTYPE_BF16:
    return 16;
  case KILN_DTYPE_F32:
  case KILN_DTYPE_I32:
  case KILN_DTYPE_U32:
    return 32;
  case KILN_DTYPE_I64:
  case KILN_DTYPE_U64:
  case KILN_DTYPE_F64:
    return 64;
  case KILN_DTYPE_INVALID:
    break;
  }
  return 0;
}

KILN_EXPORT size_t kiln_dtype_size(kiln_dtype dtype) {
  int32_t bits = kiln_dtype_bits(dtype);
  return bits % 8 == 0 ? (size_t)bits / 8 : 0;
}

KILN_EXPORT const char *kiln_dtype_name(kiln_dtype dtype) {
  switch (dtype) {
  case KILN_DTYPE_F32:
    return "float32";
  case KILN_DTYPE_U8:
    return "uint8";
  case KILN_DTYPE_I8:
    return "int8";
  case KILN_DTYPE_U16:
    return "uint16";
  case KILN_DTYPE_I16:
    return "int16";
  case KILN_DTYPE_I32:
    return "int32";
  case KILN_DTYPE_I64:
    return "int64";
  case KILN_DTYPE_U32:
    return "uint32";
  case KILN_DTYPE_U64:
    return "uint64";
  case KILN_DTYPE_F64:
    return "float64";
  case KILN_DTYPE_BOOL:
    return "bool";
  case KILN_DTYPE_F16:
    return "float16";
  case KILN_DTYPE_BF16:
    return "bfloat16";
  case KILN_DTYPE_U4:
    return "uint4";
  case KILN_DTYPE_I4:
    return "int4";
  case KILN_DTYPE_INVALID:
    break;
  }
  return "invalid";
}

size_t kiln_packed_byte_size(kiln_dtype dtype, size_t count) {
  return (count * (size_t)kiln_dtype_bits(dtype) + 7) / 8;
}

KILN_EXPORT kiln_status kiln_tensor_create(kiln_dtype dtype, int32_t rank,
                                           const int64_t *dims,
                                           kiln_tensor **out) {
  if (!out)
    return kiln_fail(KILN_ERROR_INVALID_ARGUMENT,
                     "kiln_tensor_create: out is NULL");
  *out = NULL;
  if (kiln_dtype_bits(dtype) == 0)
    return kiln_fail(KILN_ERROR_INVALID_ARGUMENT,
                     "kiln_tensor_create: unknown dtype %d", (int)dtype);
  size_t element_size = kiln_element_bytes_rounded_up(dtype);
  if (rank < 0 || rank > KILN_MAX_RANK)
    return kiln_fail(KILN_ERROR_INVALID_ARGUMENT,
                     "kiln_tensor_create: rank %d is outside [0, %d]", rank,
                     KILN_MAX_RANK);
  int ok;
  size_t count = kiln_checked_num_elements(rank, dims, element_size, &ok);
  if (!ok)
    return kiln_fail(
        KILN_ERROR_INVALID_ARGUMENT,
        "kiln_tensor_create: dims are negative, missing or too large");
  kiln_tensor *tensor = calloc(1, sizeof(*tensor));
  if (!tensor)
    return kiln_fail(KILN_ERROR_OUT_OF_MEMORY,
                     "kiln_tensor_create: out of memory");
  size_t bytes = kiln_packed_byte_size(dtype, count);
  /* aligned_alloc needs a size that is a multiple of the alignment. */
  size_t padded = (bytes + KILN_ABI_ALIGNMENT - 1) / KILN_ABI_ALIGNMENT *
                  KILN_ABI_ALIGNMENT;
  if (padded < bytes || padded == 0)
    padded = KILN_ABI_ALIGNMENT;
  tensor->data = aligned_alloc(KILN_ABI_ALIGNMENT, padded);
  if (!tensor->data) {
    free(tensor);
    return kiln_fail(KILN_ERROR_OUT_OF_MEMORY,
                     "kiln_tensor_create: cannot allocate %zu bytes", bytes);
  }
  memset(tensor->data, 0, padded);
  tensor->dtype = dtype;
  tensor->rank = rank;
  if (rank > 0)
    memcpy(tensor->dims, dims, (size_t)rank * sizeof(int64_t));
  tensor->num_elements = count;
  tensor->byte_size = bytes;
  *out = tensor;
  return kiln_succeed();
}

KILN_EXPORT void kiln_tensor_destroy(kiln_tensor *tensor) {
  if (!tensor)
    return;
  free(tensor->data);
  free(tensor);
}

KILN_EXPORT kiln_dtype kiln_tensor_dtype(const kiln_tensor *tensor) {
  return tensor ? tensor->dtype : KILN_DTYPE_INVALID;
}
KILN_EXPORT int32_t kiln_tensor_rank(const kiln_tensor *tensor) {
  return tensor ? tensor->rank : -1;
}
KILN_EXPORT const int64_t *kiln_tensor_dims(const kiln_tensor *tensor) {
  return tensor ? tensor->dims : NULL;
}
KILN_EXPORT size_t kiln_tensor_num_elements(const kiln_tensor *tensor) {
  return tensor ? tensor->num_elements : 0;
}
KILN_EXPORT size_t kiln_tensor_byte_size(const kiln_tensor *tensor) {
  return tensor ? tensor->byte_size : 0;
}
KILN_EXPORT void *kiln_tensor_data(kiln_tensor *tensor) {
  return tensor ? tensor->data : NULL;
}
KILN_EXPORT const void *kiln_tensor_const_data(const kiln_tensor *tensor) {
  return tensor ? tensor->data : NULL;
}
