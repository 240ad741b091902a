/*===- generate.c - a decoder's token loop over its decode entry ----------===*/
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

KILN_EXPORT void kiln_generate_options_init(kiln_generate_options *options) {
  memset(options, 0, sizeof(*options));
  options->size = sizeof(*options);
  options->max_new_tokens = 16;
  options->top_p = 1.0f;
}

/* splitmix64: small, seedable, and the same on every platform. */
static uint64_t next_random(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static double next_uniform(uint64_t *state) {
  return (double)(next_random(state) >> 11) * 0x1.0p-53;
}

typedef struct candidate {
  float logit;
  int32_t token;
} candidate;

/* Orders by logit, highest first; ties by token so results are stable. */
static int before(const candidate *a, const candidate *b) {
  return a->logit > b->logit || (a->logit == b->logit && a->token < b->token);
}

static int compare_candidates(const void *a, const void *b) {
  return before(a, b) ? -1 : before(b, a) ? 1 : 0;
}

/* Moves the k best of items[0, n) to the front (in no order). */
static void select_best(candidate *items, int32_t n, int32_t k) {
  int32_t low = 0, high = n - 1;
  while (low < high) {
    candidate pivot = items[low + (high - low) / 2];
    int32_t i = low, j = high;
    while (i <= j) {
      while (before(&items[i], &pivot))
        ++i;
      while (before(&pivot, &items[j]))
        --j;
      if (i <= j) {
        candidate t = items[i];
        items[i++] = items[j];
        items[j--] = t;
      }
    }
    if (k - 1 <= j)
      high = j;
    else if (k - 1 >= i)
      low = i;
    else
      return;
  }
}

static int64_t argmax(const float *logits, int32_t vocab) {
  int32_t best = 0;
  for (int32_t i = 1; i < vocab; ++i)
    if (logits[i] > logits[best])
      best = i;
  return best;
}

/* Draws a token from softmax(logits / temperature) restricted to the
 * top_k most likely, then to the smallest set of those whose renormalized
 * probability reaches top_p (the order of Hugging Face's samplers). The
 * best are sorted k at a time, k growing until they hold top_p, so a
 * whole-vocabulary sort happens only when top_p asks for it. */
static int64_t sample(const float *logits, int32_t vocab,
                      const kiln_generate_options *options,
                      candidate *items, uint64_t *random) {
  for (int32_t i = 0; i < vocab; ++i) {
    items[i].logit = logits[i] / options->temperature;
    items[i].token = i;
  }
  float maximum = items[argmax(logits, vocab)].logit;
  int32_t n = vocab;
  if (options->top_k > 0 && options->top_k < vocab) {
    select_best(items, vocab, options->top_k);
    n = options->top_k;
  }
  double total = 0;
  for (int32_t i = 0; i < n; ++i)
    total += exp((double)(items[i].logit - maximum));
  int32_t k = n < 256 ? n : 256;
  int32_t kept = 0;
  double mass = 0;
  for (;;) {
    select_best(items, n, k);
    qsort(items, (size_t)k, sizeof(candidate), compare_candidates);
    mass = 0;
    kept = 0;
    while (kept < k) {
      mass += exp((double)(items[kept].logit - maximum));
      ++kept;
      if (mass / total >= options->top_p)
        break;
    }
    if (mass / total >= options->top_p || k == n)
      break;
    k = k > n / 4 ? n : k * 4;
  }
  double target = next_uniform(random) * mass, sum = 0;
  for (int32_t i = 0; i < kept; ++i) {
    sum += exp((double)(items[i].logit - maximum));
    if (target < sum)
      return items[i].token;
  }
  return items[kept - 1].token;
}

/* The most tokens one decode call takes: the range of its input's
 * sequence dimension, or its fixed size. */
static int64_t max_tokens_per_call(const kiln_artifact *artifact,
                                   const kiln_tensor_info *input) {
  int64_t dim = input->dims[1];
  if (dim >= 0)
    return dim;
  kiln_dim_info info;
  if (kiln_artifact_dim_info(artifact, (int32_t)KILN_ABI_DIM_INDEX(dim),
                             &info) != KILN_OK)
    return 1;
  return info.max;
}

static kiln_status check_decode_entry(const kiln_artifact *artifact,
                                      int32_t *entry, int32_t *vocab,
                                      int64_t *chunk) {
  if (kiln_artifact_find_entry(artifact, "decode", entry) != KILN_OK)
    return kiln_fail(KILN_ERROR_NOT_FOUND,
                     "generate: the artifact has no 'decode' entry; compile "
                     "a decoder exported with past_key_values inputs with "
                     "--max-context N");
  kiln_tensor_info input, output;
  if (kiln_entry_num_inputs(artifact, *entry) != 1 ||
      kiln_entry_num_outputs(artifact, *entry) < 1 ||
      kiln_entry_input_info(artifact, *entry, 0, &input) != KILN_OK ||
      kiln_entry_output_info(artifact, *entry, 0, &output) != KILN_OK ||
      input.dtype != KILN_DTYPE_I64 || input.rank != 2 ||
      output.dtype != KILN_DTYPE_F32 || output.rank != 3 ||
      output.dims[2] <= 0 || output.dims[2] > INT32_MAX)
    return kiln_fail(KILN_ERROR_INCOMPATIBLE,
                     "generate: 'decode' must take int64 token ids [1, n] "
                     "and return float32 logits [1, n, vocab] first");
  *vocab = (int32_t)output.dims[2];
  *chunk = max_tokens_per_call(artifact, &input);
  if (*chunk < 1)
    return kiln_fail(KILN_ERROR_INCOMPATIBLE,
                     "generate: 'decode' takes no tokens per call");
  return KILN_OK;
}

static int is_stop_token(const kiln_generate_options *options, int64_t token) {
  for (int32_t i = 0; i < options->num_stop_tokens; ++i)
    if (options->stop_tokens[i] == token)
      return 1;
  return 0;
}

/* Runs decode on `count` tokens; *logits receives the last position's row
 * (inside *output, which the call allocates and the caller destroys). */
static kiln_status run_decode(kiln_session *session, int32_t entry,
                              const int64_t *tokens, int32_t count,
                              int32_t vocab, kiln_tensor **output,
                              const float **logits) {
  int64_t dims[2] = {1, count};
  kiln_tensor *input = NULL;
  kiln_status status = kiln_tensor_create(KILN_DTYPE_I64, 2, dims, &input);
  if (status != KILN_OK)
    return status;
  memcpy(kiln_tensor_data(input), tokens, sizeof(int64_t) * (size_t)count);
  kiln_tensor_destroy(*output);
  *output = NULL;
  const kiln_tensor *inputs[1] = {input};
  int32_t outputs = kiln_entry_num_outputs(session->artifact, entry);
  kiln_tensor *results[8] = {NULL};
  if (outputs > 8)
    outputs = 8;
  status = kiln_session_run(session, entry, inputs, 1, results, outputs);
  kiln_tensor_destroy(input);
  for (int32_t i = 1; i < outputs; ++i)
    kiln_tensor_destroy(results[i]);
  if (status != KILN_OK)
    return status;
  *output = results[0];
  *logits = (const float *)kiln_tensor_const_data(results[0]) +
            (size_t)(count - 1) * (size_t)vocab;
  return KILN_OK;
}

KILN_EXPORT kiln_status kiln_session_generate(
    kiln_session *session, const int64_t *prompt, int32_t prompt_length,
    const kiln_generate_options *options, int64_t *tokens,
    int32_t *num_tokens) {
  if (!session || !prompt || !options || !tokens || !num_tokens)
    return kiln_fail(KILN_ERROR_INVALID_ARGUMENT,
                     "generate: NULL session, prompt, options or output");
  *num_tokens = 0;
  if (options->size < sizeof(kiln_generate_options))
    return kiln_fail(KILN_ERROR_INVALID_ARGUMENT,
                     "generate: options.size is %zu, expected %zu (call "
                     "kiln_generate_options_init)",
                     options->size, sizeof(kiln_generate_options));
  if (prompt_length < 1 || options->max_new_tokens < 0 ||
      !(options->temperature >= 0) || options->top_k < 0 ||
      !(options->top_p > 0 && options->top_p <= 1) ||
      options->num_stop_tokens < 0 ||
      (options->num_stop_tokens > 0 && !options->stop_tokens))
    return kiln_fail(KILN_ERROR_INVALID_ARGUMENT,
                     "generate: needs a prompt of at least one token, "
                     "max_new_tokens >= 0, temperature >= 0, top_k >= 0 and "
                     "top_p in (0, 1]");
  int32_t entry, vocab;
  int64_t chunk;
  kiln_status status =
      check_decode_entry(session->artifact, &entry, &vocab, &chunk);
  if (status != KILN_OK)
    return status;
  for (int32_t i = 0; i < prompt_length; ++i)
    if (prompt[i] < 0 || prompt[i] >= vocab)
      return kiln_fail(KILN_ERROR_INVALID_ARGUMENT,
                       "generate: prompt token %d is %lld, outside the "
                       "vocabulary of %d",
                       (int)i, (long long)prompt[i], (int)vocab);
  if (options->max_new_tokens == 0)
    return kiln_succeed();
  candidate *items = NULL;
  if (options->temperature > 0 &&
      !(items = malloc(sizeof(candidate) * (size_t)vocab)))
    return kiln_fail(KILN_ERROR_OUT_OF_MEMORY, "generate: out of memory");
  if ((status = kiln_session_reset(session)) != KILN_OK) {
    free(items);
    return status;
  }
  uint64_t random = options->seed;
  kiln_tensor *output = NULL;
  const float *logits = NULL;
  /* A prompt longer than one call takes goes in pieces: the cache joins
   * them. */
  for (int32_t start = 0; start < prompt_length && status == KILN_OK;) {
    int32_t count = prompt_length - start < chunk ? prompt_length - start
                                                  : (int32_t)chunk;
    status = run_decode(session, entry, prompt + start, count, vocab, &output,
                        &logits);
    start += count;
  }
  while (status == KILN_OK) {
    int64_t token = items ? sample(logits, vocab, options, items, &random)
                          : argmax(logits, vocab);
    int32_t index = (*num_tokens)++;
    tokens[index] = token;
    int stop = options->on_token &&
               options->on_token(options->user_data, token, index) != 0;
    if (stop || is_stop_token(options, token) ||
        *num_tokens == options->max_new_tokens)
      break;
    status = run_decode(session, entry, &token, 1, vocab, &output, &logits);
  }
  kiln_tensor_destroy(output);
  free(items);
  return status == KILN_OK ? kiln_succeed() : status;
}
