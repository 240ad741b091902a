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
  options->draft_tokens = KILN_DRAFT_TOKENS_AUTO;
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

/* The most tokens one call of a decoder entry takes: the range of its
 * input's sequence dimension, or its fixed size. */
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

/* The entries of a decoder compiled with --max-context, and the last
 * call's logits. */
typedef struct decoder {
  kiln_session *session;
  int32_t decode, draft, truncate; /* draft and truncate: -1 when unused */
  int32_t vocab;
  int64_t chunk; /* the most tokens one decode call takes */
  kiln_tensor *logits;
  kiln_generate_stats stats;
} decoder;

/* Finds `name`, which takes token ids [1, n] and returns logits
 * [1, n, vocab] first. */
static kiln_status find_model_entry(const kiln_artifact *artifact,
                                    const char *name, const char *missing,
                                    int32_t *entry, int32_t *vocab,
                                    int64_t *chunk) {
  if (kiln_artifact_find_entry(artifact, name, entry) != KILN_OK)
    return kiln_fail(KILN_ERROR_NOT_FOUND,
                     "generate: the artifact has no '%s' entry; %s", name,
                     missing);
  kiln_tensor_info input, output;
  if (kiln_entry_num_inputs(artifact, *entry) != 1 ||
      kiln_entry_num_outputs(artifact, *entry) < 1 ||
      kiln_entry_input_info(artifact, *entry, 0, &input) != KILN_OK ||
      kiln_entry_output_info(artifact, *entry, 0, &output) != KILN_OK ||
      input.dtype != KILN_DTYPE_I64 || input.rank != 2 ||
      output.dtype != KILN_DTYPE_F32 || output.rank != 3 ||
      output.dims[2] <= 0 || output.dims[2] > INT32_MAX)
    return kiln_fail(KILN_ERROR_INCOMPATIBLE,
                     "generate: '%s' must take int64 token ids [1, n] "
                     "and return float32 logits [1, n, vocab] first",
                     name);
  *vocab = (int32_t)output.dims[2];
  *chunk = max_tokens_per_call(artifact, &input);
  if (*chunk < 1)
    return kiln_fail(KILN_ERROR_INCOMPATIBLE,
                     "generate: '%s' takes no tokens per call", name);
  return KILN_OK;
}

static kiln_status open_decoder(kiln_session *session, int32_t draft_tokens,
                                decoder *out) {
  const kiln_artifact *artifact = session->artifact;
  memset(out, 0, sizeof(*out));
  out->session = session;
  out->draft = out->truncate = -1;
  kiln_status status = find_model_entry(
      artifact, "decode",
      "compile a decoder exported with past_key_values inputs with "
      "--max-context N",
      &out->decode, &out->vocab, &out->chunk);
  if (status != KILN_OK || draft_tokens == 0)
    return status;
  int32_t vocab;
  int64_t chunk;
  status = find_model_entry(artifact, "draft",
                            "compile with --draft-skip-layers or "
                            "--draft-quantize to use draft_tokens",
                            &out->draft, &vocab, &chunk);
  if (status != KILN_OK)
    return status;
  if (vocab != out->vocab)
    return kiln_fail(KILN_ERROR_INCOMPATIBLE,
                     "generate: 'draft' returns %d logits per position, "
                     "'decode' %d",
                     (int)vocab, (int)out->vocab);
  kiln_tensor_info length;
  if (kiln_artifact_find_entry(artifact, "truncate", &out->truncate) !=
          KILN_OK ||
      kiln_entry_num_inputs(artifact, out->truncate) != 1 ||
      kiln_entry_input_info(artifact, out->truncate, 0, &length) != KILN_OK ||
      length.dtype != KILN_DTYPE_I64 || length.rank != 0)
    return kiln_fail(KILN_ERROR_INCOMPATIBLE,
                     "generate: draft_tokens needs the entry "
                     "truncate(length), an int64 scalar, which --max-context "
                     "makes");
  return KILN_OK;
}

/* Logits of position `index` of the last call. */
static const float *logits_at(const decoder *d, int32_t index) {
  return (const float *)kiln_tensor_const_data(d->logits) +
         (size_t)index * (size_t)d->vocab;
}

/* Runs `entry` (decode or draft) on `count` tokens; d->logits receives its
 * logits for each. */
static kiln_status run_model(decoder *d, int32_t entry, const int64_t *tokens,
                             int32_t count) {
  int64_t dims[2] = {1, count};
  kiln_tensor *input = NULL;
  kiln_status status = kiln_tensor_create(KILN_DTYPE_I64, 2, dims, &input);
  if (status != KILN_OK)
    return status;
  memcpy(kiln_tensor_data(input), tokens, sizeof(int64_t) * (size_t)count);
  kiln_tensor_destroy(d->logits);
  d->logits = NULL;
  const kiln_tensor *inputs[1] = {input};
  int32_t outputs = kiln_entry_num_outputs(d->session->artifact, entry);
  kiln_tensor *results[8] = {NULL};
  if (outputs > 8)
    outputs = 8;
  status = kiln_session_run(d->session, entry, inputs, 1, results, outputs);
  kiln_tensor_destroy(input);
  for (int32_t i = 1; i < outputs; ++i)
    kiln_tensor_destroy(results[i]);
  if (status != KILN_OK)
    return status;
  d->logits = results[0];
  if (entry == d->decode)
    ++d->stats.decode_calls;
  else
    ++d->stats.draft_calls;
  return KILN_OK;
}

/* Keeps the first `length` positions of the cache. */
static kiln_status truncate_cache(decoder *d, int64_t length) {
  kiln_tensor *input = NULL, *result = NULL;
  kiln_status status = kiln_tensor_create(KILN_DTYPE_I64, 0, NULL, &input);
  if (status != KILN_OK)
    return status;
  *(int64_t *)kiln_tensor_data(input) = length;
  const kiln_tensor *inputs[1] = {input};
  status = kiln_session_run(d->session, d->truncate, inputs, 1, &result, 1);
  kiln_tensor_destroy(input);
  kiln_tensor_destroy(result);
  return status;
}

/* The draft proposes proposal[1..k] after proposal[0], one call each
 * (writing its cache past `cached`); then decode, from `cached` again,
 * computes the logits of all k + 1 positions in one call. */
static kiln_status draft_and_verify(decoder *d, int64_t *proposal, int32_t k,
                                    int64_t cached) {
  for (int32_t i = 0; i < k; ++i) {
    kiln_status status = run_model(d, d->draft, &proposal[i], 1);
    if (status != KILN_OK)
      return status;
    proposal[i + 1] = argmax(logits_at(d, 0), d->vocab);
  }
  kiln_status status = truncate_cache(d, cached);
  if (status != KILN_OK)
    return status;
  d->stats.drafted += k;
  return run_model(d, d->decode, proposal, k + 1);
}

/* The generated tokens so far. */
typedef struct output_tokens {
  const kiln_generate_options *options;
  int64_t *tokens;
  int32_t *count;
} output_tokens;

/* Records `token`; returns whether generation ends with it. */
static int emit(output_tokens *out, int64_t token) {
  const kiln_generate_options *options = out->options;
  int32_t index = (*out->count)++;
  out->tokens[index] = token;
  if (options->on_token &&
      options->on_token(options->user_data, token, index) != 0)
    return 1;
  for (int32_t i = 0; i < options->num_stop_tokens; ++i)
    if (options->stop_tokens[i] == token)
      return 1;
  return *out->count == options->max_new_tokens;
}

/* Greedy decoding with the draft's proposals (up to `most` per round)
 * verified by decode, after a
 * prompt of `cached` tokens whose next token `token` has been emitted. A
 * round that fails (the draft running past the context, say) rolls back
 * and continues one token per decode call, which reports any error that
 * remains where plain decoding would. */
static kiln_status generate_speculatively(decoder *d, output_tokens *out,
                                          int32_t most, int64_t token,
                                          int64_t cached) {
  if (most > d->chunk - 1)
    most = (int32_t)(d->chunk - 1);
  int64_t *proposal = malloc(sizeof(int64_t) * (size_t)(most + 1));
  if (!proposal)
    return kiln_fail(KILN_ERROR_OUT_OF_MEMORY, "generate: out of memory");
  kiln_status status = KILN_OK;
  int done = 0, speculate = 1;
  while (!done && status == KILN_OK) {
    /* A round emits up to k + 1 tokens. */
    int32_t k = out->options->max_new_tokens - *out->count - 1;
    if (k > most)
      k = most;
    proposal[0] = token;
    if (!speculate || k < 1) {
      if ((status = run_model(d, d->decode, &token, 1)) != KILN_OK)
        break;
      ++cached;
      token = argmax(logits_at(d, 0), d->vocab);
      done = emit(out, token);
      continue;
    }
    if (draft_and_verify(d, proposal, k, cached) != KILN_OK) {
      speculate = 0;
      status = truncate_cache(d, cached);
      continue;
    }
    int32_t kept = 0;
    while (!done && kept < k &&
           argmax(logits_at(d, kept), d->vocab) == proposal[kept + 1])
      done = emit(out, proposal[++kept]);
    d->stats.accepted += kept;
    if (done)
      break;
    token = argmax(logits_at(d, kept), d->vocab);
    done = emit(out, token);
    cached += kept + 1;
    if (kept < k)
      status = truncate_cache(d, cached);
  }
  free(proposal);
  return status;
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
      (options->num_stop_tokens > 0 && !options->stop_tokens) ||
      (options->draft_tokens < 0 &&
       options->draft_tokens != KILN_DRAFT_TOKENS_AUTO))
    return kiln_fail(KILN_ERROR_INVALID_ARGUMENT,
                     "generate: needs a prompt of at least one token, "
                     "max_new_tokens >= 0, temperature >= 0, top_k >= 0, "
                     "top_p in (0, 1] and draft_tokens >= 0 or "
                     "KILN_DRAFT_TOKENS_AUTO");
  if (options->draft_tokens > 0 && options->temperature > 0)
    return kiln_fail(KILN_ERROR_INVALID_ARGUMENT,
                     "generate: draft_tokens needs greedy decoding "
                     "(temperature 0); speculative sampling is not "
                     "supported");
  int32_t draft_tokens = options->draft_tokens;
  if (draft_tokens == KILN_DRAFT_TOKENS_AUTO)
    draft_tokens = options->temperature > 0
                       ? 0
                       : kiln_artifact_draft_tokens(session->artifact);
  if (options->stats)
    memset(options->stats, 0, sizeof(*options->stats));
  decoder d;
  kiln_status status = open_decoder(session, draft_tokens, &d);
  if (status != KILN_OK)
    return status;
  for (int32_t i = 0; i < prompt_length; ++i)
    if (prompt[i] < 0 || prompt[i] >= d.vocab)
      return kiln_fail(KILN_ERROR_INVALID_ARGUMENT,
                       "generate: prompt token %d is %lld, outside the "
                       "vocabulary of %d",
                       (int)i, (long long)prompt[i], (int)d.vocab);
  if (options->max_new_tokens == 0)
    return kiln_succeed();
  candidate *items = NULL;
  if (options->temperature > 0 &&
      !(items = malloc(sizeof(candidate) * (size_t)d.vocab)))
    return kiln_fail(KILN_ERROR_OUT_OF_MEMORY, "generate: out of memory");
  if ((status = kiln_session_reset(session)) != KILN_OK) {
    free(items);
    return status;
  }
  /* A prompt longer than one call takes goes in pieces: the cache joins
   * them. */
  int32_t count = 0;
  for (int32_t start = 0; start < prompt_length && status == KILN_OK;
       start += count) {
    count = prompt_length - start < d.chunk ? prompt_length - start
                                            : (int32_t)d.chunk;
    status = run_model(&d, d.decode, prompt + start, count);
  }
  output_tokens out = {options, tokens, num_tokens};
  uint64_t random = options->seed;
  const float *logits = status == KILN_OK ? logits_at(&d, count - 1) : NULL;
  if (status == KILN_OK && draft_tokens > 0) {
    int64_t token = argmax(logits, d.vocab);
    if (!emit(&out, token))
      status =
          generate_speculatively(&d, &out, draft_tokens, token, prompt_length);
  }
  while (status == KILN_OK && draft_tokens == 0) {
    int64_t token = items ? sample(logits, d.vocab, options, items, &random)
                          : argmax(logits, d.vocab);
    if (emit(&out, token) ||
        (status = run_model(&d, d.decode, &token, 1)) != KILN_OK)
      break;
    logits = logits_at(&d, 0);
  }
  kiln_tensor_destroy(d.logits);
  free(items);
  if (options->stats)
    *options->stats = d.stats;
  return status == KILN_OK ? kiln_succeed() : status;
}
