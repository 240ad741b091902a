/*===- kiln/runtime.h - load and run compiled Kiln artifacts ---------------===*
 *
 * The Kiln runtime is a small C library with no LLVM dependency. It loads an
 * artifact produced by `kiln-compile` (a shared library), describes its entry
 * points, and runs them on caller-provided tensors after checking every
 * input's dtype and shape.
 *
 *   kiln_artifact *artifact;
 *   if (kiln_artifact_open("model.so", &artifact) != KILN_OK)
 *     fprintf(stderr, "%s\n", kiln_last_error());
 *   kiln_session *session;
 *   kiln_session_create(artifact, &session);
 *   kiln_tensor *outputs[1] = {NULL};           // NULL: the runtime allocates
 *   kiln_session_run(session, 0, inputs, 2, outputs, 1);
 *   ...
 *   kiln_tensor_destroy(outputs[0]);
 *   kiln_session_destroy(session);
 *   kiln_artifact_close(artifact);
 *
 * Opening an artifact loads it as a shared library, which runs its code:
 * open only artifacts you trust, as you would any library.
 *
 * Conventions: functions return a kiln_status; on failure the calling
 * thread's kiln_last_error() describes what went wrong. Objects are created
 * by *_create / *_open and released by *_destroy / *_close (NULL is
 * accepted there). An artifact is immutable and may be shared by threads;
 * a session must be used by one thread at a time (give each thread its own
 * session, or hold a lock around its calls); distinct sessions may run
 * concurrently. The worker threads that help a session's calls belong to
 * the process and are shared by all its sessions: a call runs on its
 * caller's thread, helped by as many idle workers as its thread count
 * allows, so sessions running at once never start more threads than the
 * largest thread count any of them asks for, plus their callers.
 *===----------------------------------------------------------------------===*/
#ifndef KILN_RUNTIME_H
#define KILN_RUNTIME_H

#include "kiln/abi.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kiln_status {
  KILN_OK = 0,
  KILN_ERROR_INVALID_ARGUMENT = 1, /* NULL pointer, bad index, bad dims */
  KILN_ERROR_IO = 2,               /* the artifact file can't be loaded */
  KILN_ERROR_INCOMPATIBLE = 3,     /* not a Kiln artifact, or another ABI */
  KILN_ERROR_NOT_FOUND = 4,        /* no entry point of that name */
  KILN_ERROR_DTYPE_MISMATCH = 5,   /* a tensor has the wrong element type */
  KILN_ERROR_SHAPE_MISMATCH = 6,   /* a tensor has the wrong rank or dims */
  KILN_ERROR_OUT_OF_MEMORY = 7,
  KILN_ERROR_EXECUTION = 8, /* generated code reported an error */
} kiln_status;

/* A short constant name for a status ("shape mismatch"). */
const char *kiln_status_string(kiln_status status);

/* Message of the last failing call on this thread ("" if none). Valid until
 * the next failing call on this thread. */
const char *kiln_last_error(void);

/* Bytes per element of `dtype`; 0 for an unknown dtype and for the 4-bit
 * ones, which pack two elements in a byte (see kiln_dtype_bits). */
size_t kiln_dtype_size(kiln_dtype dtype);
/* Bits per element of `dtype` (4 for KILN_DTYPE_I4 and KILN_DTYPE_U4), 0
 * for an unknown dtype. */
int32_t kiln_dtype_bits(kiln_dtype dtype);
/* "float32", "uint8", "int8", "int32", "int64", "bool", "float16",
 * "bfloat16", "uint4", "int4" or "invalid". */
const char *kiln_dtype_name(kiln_dtype dtype);

/*===----------------------------------------------------------------------===*
 * Tensors: dense, row-major, 64-byte aligned host buffers.
 *===----------------------------------------------------------------------===*/
typedef struct kiln_tensor kiln_tensor;

/* A zero-filled tensor. `dims` may be NULL when `rank` is 0. */
kiln_status kiln_tensor_create(kiln_dtype dtype, int32_t rank,
                               const int64_t *dims, kiln_tensor **out);
void kiln_tensor_destroy(kiln_tensor *tensor);
kiln_dtype kiln_tensor_dtype(const kiln_tensor *tensor);
int32_t kiln_tensor_rank(const kiln_tensor *tensor);
const int64_t *kiln_tensor_dims(const kiln_tensor *tensor);
size_t kiln_tensor_num_elements(const kiln_tensor *tensor);
size_t kiln_tensor_byte_size(const kiln_tensor *tensor);
void *kiln_tensor_data(kiln_tensor *tensor);
const void *kiln_tensor_const_data(const kiln_tensor *tensor);

/*===----------------------------------------------------------------------===*
 * Artifacts and their signatures.
 *===----------------------------------------------------------------------===*/
typedef struct kiln_artifact kiln_artifact;

/* Loads the artifact at `path` and validates its descriptor. */
kiln_status kiln_artifact_open(const char *path, kiln_artifact **out);
void kiln_artifact_close(kiln_artifact *artifact);

/* The producer string recorded by the compiler, e.g. "kiln 0.1.0". */
const char *kiln_artifact_producer(const kiln_artifact *artifact);
/* The CPU features its code may use, comma-separated ("avx2,fma,...");
 * kiln_artifact_open refuses an artifact that needs one this CPU lacks. */
const char *kiln_artifact_cpu_features(const kiln_artifact *artifact);
/* Tokens its draft proposes per round when generation leaves the choice to
 * it (KILN_DRAFT_TOKENS_AUTO): what kiln-compile --draft-tokens set or
 * --choose-draft measured best; 0 when it has no draft or none pays. */
int32_t kiln_artifact_draft_tokens(const kiln_artifact *artifact);
int32_t kiln_artifact_num_entries(const kiln_artifact *artifact);
/* Name of entry `index`, or NULL if the index is out of range. */
const char *kiln_artifact_entry_name(const kiln_artifact *artifact,
                                     int32_t index);
kiln_status kiln_artifact_find_entry(const kiln_artifact *artifact,
                                     const char *name, int32_t *index);

/* One input or output of an entry point; pointers stay valid while the
 * artifact is open. A dim below 0 is KILN_ABI_DIM_REF(k): the artifact's
 * named dimension k, whose size each call chooses within its range. */
typedef struct kiln_tensor_info {
  const char *name;
  kiln_dtype dtype;
  int32_t rank;
  const int64_t *dims;
} kiln_tensor_info;

/* A named dimension of the artifact (e.g. "seq") and its range. */
typedef struct kiln_dim_info {
  const char *name;
  int64_t min;
  int64_t max;
} kiln_dim_info;

int32_t kiln_artifact_num_dims(const kiln_artifact *artifact);
kiln_status kiln_artifact_dim_info(const kiln_artifact *artifact,
                                   int32_t index, kiln_dim_info *info);

/* Counts are -1 if `entry` is out of range. */
int32_t kiln_entry_num_inputs(const kiln_artifact *artifact, int32_t entry);
int32_t kiln_entry_num_outputs(const kiln_artifact *artifact, int32_t entry);
kiln_status kiln_entry_input_info(const kiln_artifact *artifact, int32_t entry,
                                  int32_t index, kiln_tensor_info *info);
kiln_status kiln_entry_output_info(const kiln_artifact *artifact, int32_t entry,
                                   int32_t index, kiln_tensor_info *info);

/*===----------------------------------------------------------------------===*
 * Sessions: own the state an artifact keeps across calls.
 *===----------------------------------------------------------------------===*/
typedef struct kiln_session kiln_session;

/* The artifact must stay open while the session exists. */
kiln_status kiln_session_create(const kiln_artifact *artifact,
                                kiln_session **out);
void kiln_session_destroy(kiln_session *session);

/* Sets how many threads, the calling one included, run the session's
 * parallel loops: 1 runs everything on the calling thread, 0 (the default)
 * one thread per CPU the process may use. Threads start on the next run;
 * idle ones spin for 50 microseconds, yield the core for 2 ms, then
 * sleep. */
kiln_status kiln_session_set_num_threads(kiln_session *session,
                                         int32_t num_threads);
/* The thread count runs use (0 resolved to the CPU count). */
int32_t kiln_session_num_threads(const kiln_session *session);

/* Sets the session's state (what its entries keep across calls, such as a
 * cache) back to what it was when the session was created. */
kiln_status kiln_session_reset(kiln_session *session);

/* Runs entry point `entry`. `inputs` holds num_inputs tensors in signature
 * order, each checked against the signature's dtype and shape: a named
 * dimension must lie in its range and have one size throughout the call.
 * Some entries take a dimension from an input's value instead (a
 * renderer's `image_size`, int64 [height, width]: kiln/abi.h's
 * kiln_abi_value_dim); that value is checked against the range the same
 * way. For each output, a NULL slot receives a new tensor of the call's shape
 * (the caller destroys it); a non-NULL slot must match the signature and is
 * written in place. Output tensors must not be inputs. On failure, slots the
 * call filled are destroyed and reset to NULL. */
kiln_status kiln_session_run(kiln_session *session, int32_t entry,
                             const kiln_tensor *const *inputs,
                             int32_t num_inputs, kiln_tensor **outputs,
                             int32_t num_outputs);

/*===----------------------------------------------------------------------===*
 * Generation: a decoder's token loop over its `decode` entry.
 *
 * For artifacts compiled from a with-past decoder with --max-context: the
 * entry `decode` takes int64 token ids [1, n] and returns float logits
 * [1, n, vocab], its KV cache kept in the session.
 *===----------------------------------------------------------------------===*/

/* Receives each new token as soon as it is chosen; `index` counts from 0.
 * Returning non-zero stops generation after this token. */
typedef int32_t (*kiln_token_callback)(void *user_data, int64_t token,
                                       int32_t index);

/* What one generation did, for kiln_generate_options.stats. */
typedef struct kiln_generate_stats {
  int32_t decode_calls; /* calls of `decode`, the prompt's included */
  int32_t draft_calls;  /* calls of `draft` */
  int32_t drafted;      /* tokens `draft` proposed for verification */
  int32_t accepted;     /* of those, the tokens `decode` confirmed */
} kiln_generate_stats;

typedef struct kiln_generate_options {
  /* sizeof(kiln_generate_options): fields may be appended later. */
  size_t size;
  /* Tokens to generate at most. */
  int32_t max_new_tokens;
  /* 0 picks the most likely token (greedy; top_k, top_p and seed are then
   * unused). Above 0, tokens are drawn from softmax(logits / temperature)
   * restricted to the top_k most likely (0: all), then to the smallest set
   * of those whose renormalized probability reaches top_p (1: all). */
  float temperature;
  int32_t top_k;
  float top_p;
  /* Seeds the draws: equal seeds give equal tokens. */
  uint64_t seed;
  /* Generation stops after producing one of these (it is returned). */
  const int64_t *stop_tokens;
  int32_t num_stop_tokens;
  /* Called for each token, in order; may be NULL. */
  kiln_token_callback on_token;
  void *user_data;
  /* Self-speculative decoding (greedy only): above 0, the artifact's
   * `draft` entry (kiln-compile --draft-skip-layers / --draft-quantize)
   * proposes up to this
   * many tokens, one call each, and `decode` checks them all in one call;
   * the tokens are those plain greedy decoding gives. 0: one `decode` call
   * per token. KILN_DRAFT_TOKENS_AUTO: the artifact's choice
   * (kiln_artifact_draft_tokens) when greedy, 0 when sampling. */
  int32_t draft_tokens;
  /* If not NULL, receives the counts of this generation. */
  kiln_generate_stats *stats;
} kiln_generate_options;

#define KILN_DRAFT_TOKENS_AUTO (-1)

/* Options with max_new_tokens 16, greedy, top_k 0, top_p 1, seed 0,
 * draft_tokens KILN_DRAFT_TOKENS_AUTO. */
void kiln_generate_options_init(kiln_generate_options *options);

/* Starts a new sequence (resets the session's state), runs `decode` on the
 * prompt (in pieces, if it is longer than one call takes), then chooses
 * and feeds back one token at a time. Writes the new
 * tokens to `tokens` (room for max_new_tokens) and their count to
 * *num_tokens. The prompt and the new tokens must fit the artifact's
 * context; running past it is an error after the tokens that fit. */
kiln_status kiln_session_generate(kiln_session *session,
                                  const int64_t *prompt, int32_t prompt_length,
                                  const kiln_generate_options *options,
                                  int64_t *tokens, int32_t *num_tokens);

#ifdef __cplusplus
}
#endif

#endif /* KILN_RUNTIME_H */
