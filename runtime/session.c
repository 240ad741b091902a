/*===- session.c - sessions and checked calls into generated code ---------===*/
#include "internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Artifacts have at most this many inputs plus outputs per call; larger
 * signatures are rejected rather than allocating on every run. */
#define KILN_MAX_PARAMS 1024

struct kiln_session {
  const kiln_artifact *artifact;
  void *state; /* state_size bytes, zeroed; NULL when the artifact has none */
  /* The largest scratch_size of the artifact's entries, reused by every
   * call, so generated code allocates nothing per call. */
  void *scratch;
  int32_t num_threads;    /* resolved: at least 1 */
  kiln_thread_pool *pool; /* started by the first run */
};

/* Generated code views the arena as buffers of any element type. */
#define KILN_SCRATCH_ALIGNMENT 64

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
  if (artifact->desc->state_size > 0) {
    session->state = calloc(1, artifact->desc->state_size);
    if (!session->state) {
      free(session);
      return kiln_fail(
          KILN_ERROR_OUT_OF_MEMORY,
          "kiln_session_create: cannot allocate %llu bytes of state",
          (unsigned long long)artifact->desc->state_size);
    }
  }
  uint64_t scratch_size = 0;
  for (uint32_t e = 0; e < artifact->desc->num_entries; ++e)
    if (artifact->desc->entries[e].scratch_size > scratch_size)
      scratch_size = artifact->desc->entries[e].scratch_size;
  if (scratch_size > 0) {
    uint64_t padded = (scratch_size + KILN_SCRATCH_ALIGNMENT - 1) /
                      KILN_SCRATCH_ALIGNMENT * KILN_SCRATCH_ALIGNMENT;
    session->scratch =
        padded >= scratch_size && padded <= SIZE_MAX
            ? aligned_alloc(KILN_SCRATCH_ALIGNMENT, (size_t)padded)
            : NULL;
    if (!session->scratch) {
      free(session->state);
      free(session);
      return kiln_fail(KILN_ERROR_OUT_OF_MEMORY,
                       "kiln_session_create: cannot allocate %llu bytes of "
                       "scratch memory",
                       (unsigned long long)scratch_size);
    }
  }
  *out = session;
  return kiln_succeed();
}

KILN_EXPORT void kiln_session_destroy(kiln_session *session) {
  if (!session)
    return;
  kiln_thread_pool_destroy(session->pool);
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

static void format_shape(char *buffer, size_t size, int32_t rank,
                         const int64_t *dims) {
  size_t used = (size_t)snprintf(buffer, size, "[");
  for (int32_t i = 0; i < rank && used < size; ++i)
    used += (size_t)snprintf(buffer + used, size - used, i ? ", %lld" : "%lld",
                             (long long)dims[i]);
  if (used < size)
    snprintf(buffer + used, size - used, "]");
}

/* Checks `tensor` against the signature entry `expected`. */
static kiln_status check_tensor(const kiln_abi_entry *entry, const char *kind,
                                int32_t index, const kiln_abi_tensor *expected,
                                const kiln_tensor *tensor) {
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
    same = dims[i] == expected->dims[i];
  if (!same) {
    char want[256], got[256];
    format_shape(want, sizeof(want), expected->rank, expected->dims);
    format_shape(got, sizeof(got), rank, dims);
    return kiln_fail(KILN_ERROR_SHAPE_MISMATCH,
                     "%s: %s '%s' must have shape %s, got %s", entry->name,
                     kind, expected->name, want, got);
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
  if ((num_inputs > 0 && !inputs) || (num_outputs > 0 && !outputs) ||
      num_inputs + num_outputs > KILN_MAX_PARAMS)
    return kiln_fail(KILN_ERROR_INVALID_ARGUMENT,
                     "%s: missing input or output array", entry->name);

  void *input_data[KILN_MAX_PARAMS];
  void *output_data[KILN_MAX_PARAMS];
  for (int32_t i = 0; i < num_inputs; ++i) {
    kiln_status status =
        check_tensor(entry, "input", i, &entry->inputs[i], inputs[i]);
    if (status != KILN_OK)
      return status;
    /* Generated code never writes its inputs; the ABI type is shared. */
    input_data[i] = (void *)(uintptr_t)kiln_tensor_const_data(inputs[i]);
  }
  for (int32_t o = 0; o < num_outputs; ++o) {
    if (!outputs[o])
      continue;
    kiln_status status =
        check_tensor(entry, "output", o, &entry->outputs[o], outputs[o]);
    if (status != KILN_OK)
      return status;
    for (int32_t i = 0; i < num_inputs; ++i)
      if (inputs[i] == outputs[o])
        return kiln_fail(KILN_ERROR_INVALID_ARGUMENT,
                         "%s: output '%s' is also passed as an input",
                         entry->name, entry->outputs[o].name);
  }

  if (!session->pool) {
    kiln_status status =
        kiln_thread_pool_create(session->num_threads, &session->pool);
    if (status != KILN_OK)
      return status;
  }

  /* Allocate the missing outputs last, so a failed check allocates nothing. */
  int created[KILN_MAX_PARAMS] = {0};
  for (int32_t o = 0; o < num_outputs; ++o) {
    if (!outputs[o]) {
      const kiln_abi_tensor *t = &entry->outputs[o];
      kiln_status status = kiln_tensor_create((kiln_dtype)t->dtype, t->rank,
                                              t->dims, &outputs[o]);
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
    output_data[o] = kiln_tensor_data(outputs[o]);
  }

  int32_t code =
      entry->fn(session->state, session->scratch, input_data, output_data,
                kiln_thread_pool_executor(session->pool));
  if (code != 0) {
    for (int32_t o = 0; o < num_outputs; ++o)
      if (created[o]) {
        kiln_tensor_destroy(outputs[o]);
        outputs[o] = NULL;
      }
    const char *message = code > 0 && code <= entry->num_errors && entry->errors
                              ? entry->errors[code - 1]
                              : "unknown error";
    return kiln_fail(KILN_ERROR_EXECUTION, "%s: %s (code %d)", entry->name,
                     message, code);
  }
  return kiln_succeed();
}
