/*===- session.c - sessions and checked calls into generated code ---------===*/
#include "internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* `size` bytes aligned for generated code, or NULL. */
static void *allocate_block(uint64_t size) {
  uint64_t padded = (size + KILN_ABI_ALIGNMENT - 1) / KILN_ABI_ALIGNMENT *
                    KILN_ABI_ALIGNMENT;
  if (padded < size || padded > SIZE_MAX)
    return NULL;
  return aligned_alloc(KILN_ABI_ALIGNMENT, (size_t)padded);
}

static void initialize_state(kiln_session *session) {
  const kiln_abi_artifact *desc = session->artifact->desc;
  if (desc->state_init)
    memcpy(session->state, desc->state_init, (size_t)desc->state_size);
  else
    memset(session->state, 0, (size_t)desc->state_size);
}

KILN_EXPORT kiln_status kiln_session_create(const kiln_artifact *artifact,
                                            kiln_session **out) {
  if (!artifact || !out)
    return kiln_fail(KILN_ERROR_INVALID_ARGUMENT,
                     "kiln_session_create: NULL argument");
  *out = NULL;
  kiln_session *session = calloc(1, sizeof(*session));
  if (!session)
    return kiln_fail(KILN_ERROR_OUT_OF_MEMORY,
                     "kiln_session_create: out of memory");
  session->artifact = artifact;
  session->num_threads = kiln_available_cpus();
  const kiln_abi_artifact *desc = artifact->desc;
  if (desc->state_size > 0) {
    session->state = allocate_block(desc->state_size);
    if (!session->state) {
      free(session);
      return kiln_fail(
          KILN_ERROR_OUT_OF_MEMORY,
          "kiln_session_create: cannot allocate %llu bytes of state",
          (unsigned long long)desc->state_size);
    }
    initialize_state(session);
  }
  uint64_t scratch_size = 0;
  size_t max_params = 1, max_outputs = 1;
  for (uint32_t e = 0; e < desc->num_entries; ++e) {
    const kiln_abi_entry *entry = kiln_descriptor_entry(desc, e);
    if (entry->scratch_size > scratch_size)
      scratch_size = entry->scratch_size;
    size_t params = (size_t)entry->num_inputs + (size_t)entry->num_outputs;
    max_params = params > max_params ? params : max_params;
    max_outputs = (size_t)entry->num_outputs > max_outputs
                      ? (size_t)entry->num_outputs
                      : max_outputs;
  }
  if (scratch_size > 0) {
    session->scratch = allocate_block(scratch_size);
    if (!session->scratch) {
      kiln_session_destroy(session);
      return kiln_fail(KILN_ERROR_OUT_OF_MEMORY,
                       "kiln_session_create: cannot allocate %llu bytes of "
                       "scratch memory",
                       (unsigned long long)scratch_size);
    }
  }
  session->buffers = calloc(max_params, sizeof(kiln_abi_buffer));
  session->created = calloc(max_outputs, 1);
  session->dim_values = calloc(desc->num_dims + 1, sizeof(int64_t));
  if (!session->buffers || !session->created || !session->dim_values) {
    kiln_session_destroy(session);
    return kiln_fail(KILN_ERROR_OUT_OF_MEMORY,
                     "kiln_session_create: out of memory");
  }
  *out = session;
  return kiln_succeed();
}

KILN_EXPORT kiln_status kiln_session_reset(kiln_session *session) {
  if (!session)
    return kiln_fail(KILN_ERROR_INVALID_ARGUMENT,
                     "kiln_session_reset: session is NULL");
  if (session->state)
    initialize_state(session);
  return kiln_succeed();
}

KILN_EXPORT void kiln_session_destroy(kiln_session *session) {
  if (!session)
    return;
  kiln_thread_pool_destroy(session->pool);
  free(session->dim_values);
  free(session->created);
  free(session->buffers);
  free(session->scratch);
  free(session->state);
  free(session);
}

KILN_EXPORT kiln_status kiln_session_set_num_threads(kiln_session *session,
                                                     int32_t num_threads) {
  if (!session)
    return kiln_fail(KILN_ERROR_INVALID_ARGUMENT,
                     "kiln_session_set_num_threads: session is NULL");
  if (num_threads < 0)
    return kiln_fail(KILN_ERROR_INVALID_ARGUMENT,
                     "kiln_session_set_num_threads: %d threads", num_threads);
  int32_t resolved = num_threads == 0 ? kiln_available_cpus() : num_threads;
  if (session->pool && kiln_thread_pool_size(session->pool) != resolved) {
    kiln_thread_pool_destroy(session->pool);
    session->pool = NULL;
  }
  session->num_threads = resolved;
  return kiln_succeed();
}

KILN_EXPORT int32_t kiln_session_num_threads(const kiln_session *session) {
  return session ? session->num_threads : 0;
}

/* Formats a signature's dims, naming the artifact's dimensions. */
static void format_signature(char *buffer, size_t size,
                             const kiln_abi_artifact *desc,
                             const kiln_abi_tensor *t) {
  size_t used = (size_t)snprintf(buffer, size, "[");
  for (int32_t i = 0; i < t->rank && used < size; ++i) {
    int64_t dim = t->dims[i];
    if (dim >= 0)
      used += (size_t)snprintf(buffer + used, size - used,
                               i ? ", %lld" : "%lld", (long long)dim);
    else
      used += (size_t)snprintf(buffer + used, size - used, i ? ", %s" : "%s",
                               desc->dims[KILN_ABI_DIM_INDEX(dim)].name);
  }
  if (used < size)
    snprintf(buffer + used, size - used, "]");
}

static void format_shape(char *buffer, size_t size, int32_t rank,
                         const int64_t *dims) {
  size_t used = (size_t)snprintf(buffer, size, "[");
  for (int32_t i = 0; i < rank && used < size; ++i)
    used += (size_t)snprintf(buffer + used, size - used, i ? ", %lld" : "%lld",
                             (long long)dims[i]);
  if (used < size)
    snprintf(buffer + used, size - used, "]");
}

/* Checks `tensor` against the signature entry `expected`, binding the
 * artifact's dimensions it names in `dim_values` (-1: not bound yet). */
static kiln_status check_tensor(const kiln_session *session,
                                const kiln_abi_entry *entry, const char *kind,
                                int32_t index, const kiln_abi_tensor *expected,
                                const kiln_tensor *tensor,
                                int64_t *dim_values) {
  const kiln_abi_artifact *desc = session->artifact->desc;
  if (!tensor)
    return kiln_fail(KILN_ERROR_INVALID_ARGUMENT, "%s: %s #%d ('%s') is NULL",
                     entry->name, kind, index, expected->name);
  if (kiln_tensor_dtype(tensor) != (kiln_dtype)expected->dtype)
    return kiln_fail(KILN_ERROR_DTYPE_MISMATCH,
                     "%s: %s '%s' must be %s, got %s", entry->name, kind,
                     expected->name,
                     kiln_dtype_name((kiln_dtype)expected->dtype),
                     kiln_dtype_name(kiln_tensor_dtype(tensor)));
  int32_t rank = kiln_tensor_rank(tensor);
  const int64_t *dims = kiln_tensor_dims(tensor);
  int same = rank == expected->rank;
  for (int32_t i = 0; same && i < rank; ++i)
    same = expected->dims[i] < 0 || dims[i] == expected->dims[i];
  if (!same) {
    char want[256], got[256];
    format_signature(want, sizeof(want), desc, expected);
    format_shape(got, sizeof(got), rank, dims);
    return kiln_fail(KILN_ERROR_SHAPE_MISMATCH,
                     "%s: %s '%s' must have shape %s, got %s", entry->name,
                     kind, expected->name, want, got);
  }
  for (int32_t i = 0; i < rank; ++i) {
    if (expected->dims[i] >= 0)
      continue;
    int64_t k = KILN_ABI_DIM_INDEX(expected->dims[i]);
    const kiln_abi_dim *dim = &desc->dims[k];
    if (dims[i] < dim->min || dims[i] > dim->max)
      return kiln_fail(KILN_ERROR_SHAPE_MISMATCH,
                       "%s: %s '%s' dimension %d ('%s') is %lld, outside the "
                       "range %lld..%lld it was compiled for",
                       entry->name, kind, expected->name, i, dim->name,
                       (long long)dims[i], (long long)dim->min,
                       (long long)dim->max);
    if (dim_values[k] >= 0 && dim_values[k] != dims[i] &&
        kiln_descriptor_dim_expr(desc, (uint32_t)k))
      return kiln_fail(KILN_ERROR_SHAPE_MISMATCH,
                       "%s: %s '%s' dimension %d ('%s') is %lld, but the "
                       "inputs make it %lld",
                       entry->name, kind, expected->name, i, dim->name,
                       (long long)dims[i], (long long)dim_values[k]);
    if (dim_values[k] >= 0 && dim_values[k] != dims[i])
      return kiln_fail(KILN_ERROR_SHAPE_MISMATCH,
                       "%s: %s '%s' dimension %d ('%s') is %lld, but '%s' is "
                       "%lld in an earlier tensor",
                       entry->name, kind, expected->name, i, dim->name,
                       (long long)dims[i], dim->name,
                       (long long)dim_values[k]);
    dim_values[k] = dims[i];
  }
  return KILN_OK;
}

/* Binds the dimensions the inputs' values set (kiln_abi_value_dim), after
 * their shapes have set theirs. */
static kiln_status bind_value_dims(const kiln_session *session,
                                   const kiln_abi_entry *entry,
                                   const kiln_tensor *const *inputs,
                                   int64_t *dim_values) {
  const kiln_abi_artifact *desc = session->artifact->desc;
  int64_t count = kiln_descriptor_num_value_dims(desc, entry);
  for (int64_t v = 0; v < count; ++v) {
    const kiln_abi_value_dim *set = &entry->value_dims[v];
    const char *input = entry->inputs[set->input].name;
    const kiln_abi_dim *dim = &desc->dims[set->dim];
    int64_t value = ((const int64_t *)kiln_tensor_const_data(
        inputs[set->input]))[set->element];
    if (value < dim->min || value > dim->max)
      return kiln_fail(KILN_ERROR_SHAPE_MISMATCH,
                       "%s: input '%s' element %d ('%s') is %lld, outside the "
                       "range %lld..%lld it was compiled for",
                       entry->name, input, set->element, dim->name,
                       (long long)value, (long long)dim->min,
                       (long long)dim->max);
    if (dim_values[set->dim] >= 0 && dim_values[set->dim] != value)
      return kiln_fail(KILN_ERROR_SHAPE_MISMATCH,
                       "%s: input '%s' element %d ('%s') is %lld, but '%s' "
                       "is %lld elsewhere",
                       entry->name, input, set->element, dim->name,
                       (long long)value, dim->name,
                       (long long)dim_values[set->dim]);
    dim_values[set->dim] = value;
  }
  return KILN_OK;
}

KILN_EXPORT kiln_status kiln_session_run(kiln_session *session,
                                         int32_t entry_index,
                                         const kiln_tensor *const *inputs,
                                         int32_t num_inputs,
                                         kiln_tensor **outputs,
                                         int32_t num_outputs) {
  if (!session)
    return kiln_fail(KILN_ERROR_INVALID_ARGUMENT,
                     "kiln_session_run: session is NULL");
  const kiln_abi_artifact *desc = session->artifact->desc;
  const kiln_abi_entry *entry =
      kiln_artifact_get_entry(session->artifact, entry_index);
  if (!entry)
    return kiln_fail(KILN_ERROR_INVALID_ARGUMENT,
                     "kiln_session_run: no entry point #%d", entry_index);
  if (num_inputs != entry->num_inputs || num_outputs != entry->num_outputs)
    return kiln_fail(KILN_ERROR_INVALID_ARGUMENT,
                     "%s: takes %d inputs and %d outputs, got %d and %d",
                     entry->name, entry->num_inputs, entry->num_outputs,
                     num_inputs, num_outputs);
  if ((num_inputs > 0 && !inputs) || (num_outputs > 0 && !outputs))
    return kiln_fail(KILN_ERROR_INVALID_ARGUMENT,
                     "%s: missing input or output array", entry->name);

  int64_t *dim_values = session->dim_values;
  for (uint32_t k = 0; k < desc->num_dims; ++k)
    dim_values[k] = -1;
  kiln_abi_buffer *input_buffers = session->buffers;
  kiln_abi_buffer *output_buffers = session->buffers + num_inputs;
  for (int32_t i = 0; i < num_inputs; ++i) {
    kiln_status status = check_tensor(session, entry, "input", i,
                                      &entry->inputs[i], inputs[i], dim_values);
    if (status != KILN_OK)
      return status;
    /* Generated code never writes its inputs; the ABI type is shared. */
    input_buffers[i].data = (void *)(uintptr_t)kiln_tensor_const_data(inputs[i]);
    input_buffers[i].dims = kiln_tensor_dims(inputs[i]);
  }
  kiln_status set = bind_value_dims(session, entry, inputs, dim_values);
  if (set != KILN_OK)
    return set;
  /* The dimensions the compiler computes follow from the inputs'. */
  for (uint32_t k = 0; k < desc->num_dims; ++k) {
    const int64_t *expr = kiln_descriptor_dim_expr(desc, k);
    int evaluated =
        expr ? kiln_evaluate_dim_expr(expr, dim_values, &dim_values[k]) : 0;
    const kiln_abi_dim *dim = &desc->dims[k];
    if (evaluated < 0)
      return kiln_fail(KILN_ERROR_SHAPE_MISMATCH,
                       "%s: the inputs make dimension '%s' overflow",
                       entry->name, dim->name);
    if (evaluated && (dim_values[k] < dim->min || dim_values[k] > dim->max))
      return kiln_fail(KILN_ERROR_SHAPE_MISMATCH,
                       "%s: the inputs make dimension '%s' %lld, outside the "
                       "range %lld..%lld it was compiled for",
                       entry->name, dim->name, (long long)dim_values[k],
                       (long long)dim->min, (long long)dim->max);
  }
  for (int32_t o = 0; o < num_outputs; ++o) {
    if (!outputs[o])
      continue;
    kiln_status status =
        check_tensor(session, entry, "output", o, &entry->outputs[o],
                     outputs[o], dim_values);
    if (status != KILN_OK)
      return status;
    for (int32_t i = 0; i < num_inputs; ++i)
      if (inputs[i] == outputs[o])
        return kiln_fail(KILN_ERROR_INVALID_ARGUMENT,
                         "%s: output '%s' is also passed as an input",
                         entry->name, entry->outputs[o].name);
  }
  /* Outputs the runtime allocates take their dims from the call. */
  for (int32_t o = 0; o < num_outputs; ++o) {
    const kiln_abi_tensor *t = &entry->outputs[o];
    for (int32_t d = 0; !outputs[o] && d < t->rank; ++d)
      if (t->dims[d] < 0 && dim_values[KILN_ABI_DIM_INDEX(t->dims[d])] < 0)
        return kiln_fail(KILN_ERROR_INVALID_ARGUMENT,
                         "%s: output '%s' dimension %d ('%s') is not set by "
                         "any input; pass the output tensor",
                         entry->name, t->name, d,
                         desc->dims[KILN_ABI_DIM_INDEX(t->dims[d])].name);
  }

  if (!session->pool) {
    kiln_status status =
        kiln_thread_pool_create(session->num_threads, &session->pool);
    if (status != KILN_OK)
      return status;
  }

  /* Allocate the missing outputs last, so a failed check allocates nothing. */
  char *created = session->created;
  for (int32_t o = 0; o < num_outputs; ++o) {
    created[o] = 0;
    if (!outputs[o]) {
      const kiln_abi_tensor *t = &entry->outputs[o];
      int64_t dims[KILN_MAX_RANK];
      for (int32_t d = 0; d < t->rank; ++d)
        dims[d] = t->dims[d] >= 0
                      ? t->dims[d]
                      : dim_values[KILN_ABI_DIM_INDEX(t->dims[d])];
      kiln_status status =
          kiln_tensor_create((kiln_dtype)t->dtype, t->rank, dims, &outputs[o]);
      if (status != KILN_OK) {
        for (int32_t c = 0; c < o; ++c)
          if (created[c]) {
            kiln_tensor_destroy(outputs[c]);
            outputs[c] = NULL;
          }
        return status;
      }
      created[o] = 1;
    }
    output_buffers[o].data = kiln_tensor_data(outputs[o]);
    output_buffers[o].dims = kiln_tensor_dims(outputs[o]);
  }

  kiln_abi_call call = {
      .size = sizeof(kiln_abi_call),
      .state = session->state,
      .scratch = session->scratch,
      .executor = kiln_thread_pool_executor(session->pool),
      .inputs = input_buffers,
      .outputs = output_buffers,
  };
  int32_t code = entry->fn(&call);
  if (code != 0) {
    for (int32_t o = 0; o < num_outputs; ++o)
      if (created[o]) {
        kiln_tensor_destroy(outputs[o]);
        outputs[o] = NULL;
      }
    const char *message = code > 0 && code <= entry->num_errors
                              ? entry->errors[code - 1]
                              : "unknown error";
    return kiln_fail(KILN_ERROR_EXECUTION, "%s: %s (code %d)", entry->name,
                     message, code);
  }
  return kiln_succeed();
}
