/*===- errors.c - status codes and per-thread error messages --------------===*/
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_error[1024];

KILN_EXPORT const char *kiln_status_string(kiln_status status) {
  switch (status) {
  case KILN_OK:
    return "ok";
  case KILN_ERROR_INVALID_ARGUMENT:
    return "invalid argument";
  case KILN_ERROR_IO:
    return "i/o error";
  case KILN_ERROR_INCOMPATIBLE:
    return "incompatible artifact";
  case KILN_ERROR_NOT_FOUND:
    return "not found";
  case KILN_ERROR_DTYPE_MISMATCH:
    return "dtype mismatch";
  case KILN_ERROR_SHAPE_MISMATCH:
    return "shape mismatch";
  case KILN_ERROR_OUT_OF_MEMORY:
    return "out of memory";
  case KILN_ERROR_EXECUTION:
    return "execution error";
  }
  return "unknown status";
}

KILN_EXPORT const char *kiln_last_error(void) { return last_error; }

kiln_status kiln_fail(kiln_status status, const char *format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(last_error, sizeof(last_error), format, args);
  va_end(args);
  return status;
}

kiln_status kiln_succeed(void) {
  last_error[0] = '\0';
  return KILN_OK;
}

size_t kiln_checked_num_elements(int32_t rank, const int64_t *dims,
                                 size_t element_size, int *ok) {
  size_t count = 1;
  *ok = 0;
  if (rank < 0 || (rank > 0 && !dims))
    return 0;
  for (int32_t i = 0; i < rank; ++i) {
    if (dims[i] < 0 || __builtin_mul_overflow(count, (size_t)dims[i], &count))
      return 0;
  }
  size_t bytes;
  if (__builtin_mul_overflow(count, element_size, &bytes))
    return 0;
  *ok = 1;
  return count;
}
