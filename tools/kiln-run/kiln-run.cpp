//===- kiln-run.cpp - run a compiled artifact on ONNX tensor files --------===//
//
//   kiln-run model.so --input a.pb [--input b.pb] [--expect y.pb ...]
//            [--rtol R] [--atol A] [--repeat N] [--threads N] [--entry NAME]
//            [--save DIR]
//   kiln-run decoder.so --generate N --input prompt.pb [--temperature T]
//            [--top-k K] [--top-p P] [--seed S] [--stop ID]... [--draft K]
//            [--expect t.pb]
//
// Prints each output (name, dtype, shape, leading values), compares it with
// the expected tensors if given, reports the median run time, and with
// --save writes DIR/output_<i>.pb as ONNX's test data names them.
//
// With --generate, runs the artifact's token loop (kiln_session_generate)
// on the int64 prompt: prints each token as it is chosen, then the time to
// the first token and the rate of the rest; --expect compares the tokens.
//
//===----------------------------------------------------------------------===//
#include "lib/TensorFile/TensorFile.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace kiln;

namespace {

struct Options {
  std::string artifact;
  std::string entry;
  bool sample = false;
  std::vector<std::string> inputs;
  std::vector<std::string> expected;
  std::string saveDir;
  double rtol = 1e-4;
  double atol = 1e-5;
  int repeat = 10;
  int threads = 0; // 0: one per CPU
  int generate = -1; // tokens to generate; -1: run the entry once per repeat
  double temperature = 0, topP = 1;
  int topK = 0;
  int draftTokens = KILN_DRAFT_TOKENS_AUTO;
  uint64_t seed = 0;
  std::vector<int64_t> stopTokens;
};

int fail(const std::string &message) {
  std::fprintf(stderr, "kiln-run: error: %s\n", message.c_str());
  return 1;
}

void usage() {
  std::fprintf(
      stderr,
      "usage: kiln-run model.so [--input x.pb]... [--expect y.pb]...\n"
      "                [--rtol R] [--atol A] [--repeat N] [--threads N]\n"
      "                [--entry NAME] [--save DIR]\n"
      "       kiln-run decoder.so --generate N --input prompt.pb\n"
      "                [--temperature T] [--top-k K] [--top-p P] [--seed S]\n"
      "                [--stop TOKEN]... [--draft K] [--expect tokens.pb]\n"
      "                [--threads N]\n"
      "       kiln-run diffusion.so --sample [--input noise.pb] [--input "
      "labels.pb]\n"
      "                [--seed S] [--save DIR] [--expect sample.pb]...\n"
      "  --threads N  threads running the model (default 0: one per CPU)\n"
      "  --generate N generate up to N tokens after the prompt (greedy unless\n"
      "               --temperature is above 0)\n"
      "  --draft K    greedy self-speculative decoding: the artifact's draft\n"
      "               entry (kiln-compile --draft-skip-layers or\n"
      "               --draft-quantize) proposes up to K tokens and decode\n"
      "               checks them in one call; 0: none (default: the K the\n"
      "               artifact was compiled with, --draft-tokens or\n"
      "               --choose-draft)\n");
}

bool parseNumber(const char *text, double &value) {
  char *end = nullptr;
  value = std::strtod(text, &end);
  return end != text && *end == '\0' && std::isfinite(value) && value >= 0;
}

/// Returns an empty string on success, else the problem.
std::string parseArgs(int argc, char **argv, Options &options) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    bool takesValue = arg == "--input" || arg == "--expect" ||
                      arg == "--rtol" || arg == "--atol" || arg == "--repeat" ||
                      arg == "--threads" || arg == "--entry" || arg == "--save" ||
                      arg == "--generate" || arg == "--temperature" ||
                      arg == "--top-k" || arg == "--top-p" || arg == "--seed" ||
                      arg == "--stop" || arg == "--draft";
    if (takesValue && i + 1 >= argc)
      return arg + " needs a value";
    const char *value = takesValue ? argv[++i] : nullptr;
    double number = 0;
    if (arg == "--input") {
      options.inputs.push_back(value);
    } else if (arg == "--expect") {
      options.expected.push_back(value);
    } else if (arg == "--entry") {
      options.entry = value;
    } else if (arg == "--save") {
      options.saveDir = value;
    } else if (arg == "--rtol" || arg == "--atol") {
      if (!parseNumber(value, number))
        return arg + " needs a non-negative number, got '" + value + "'";
      (arg == "--rtol" ? options.rtol : options.atol) = number;
    } else if (arg == "--repeat") {
      if (!parseNumber(value, number) || number < 1 || number > 1e6 ||
          number != std::floor(number))
        return std::string("--repeat needs a count from 1, got '") + value +
               "'";
      options.repeat = static_cast<int>(number);
    } else if (arg == "--threads") {
      if (!parseNumber(value, number) || number > 4096 ||
          number != std::floor(number))
        return std::string("--threads needs a count from 0, got '") + value +
               "'";
      options.threads = static_cast<int>(number);
    } else if (arg == "--generate" || arg == "--top-k" || arg == "--seed" ||
               arg == "--stop" || arg == "--draft") {
      if (!parseNumber(value, number) || number > 9.2e18 ||
          number != std::floor(number) ||
          (arg != "--seed" && arg != "--stop" && number > 2147483647))
        return arg + " needs a whole number from 0, got '" + value + "'";
      if (arg == "--generate")
        options.generate = static_cast<int>(number);
      else if (arg == "--top-k")
        options.topK = static_cast<int>(number);
      else if (arg == "--draft")
        options.draftTokens = static_cast<int>(number);
      else if (arg == "--seed")
        options.seed = static_cast<uint64_t>(std::strtoull(value, nullptr, 10));
      else
        options.stopTokens.push_back(std::strtoll(value, nullptr, 10));
    } else if (arg == "--temperature" || arg == "--top-p") {
      if (!parseNumber(value, number) ||
          (arg == "--top-p" && (number <= 0 || number > 1)))
        return arg + (arg == "--top-p" ? " needs a number in (0, 1]"
                                       : " needs a number from 0") +
               ", got '" + value + "'";
      (arg == "--top-p" ? options.topP : options.temperature) = number;
    } else if (arg == "--sample") {
      options.sample = true;
    } else if (arg == "--help" || arg == "-h") {
      usage();
      std::exit(0);
    } else if (!arg.empty() && arg[0] == '-') {
      return "unknown option '" + arg + "'";
    } else if (options.artifact.empty()) {
      options.artifact = arg;
    } else {
      return "unexpected argument '" + arg + "'";
    }
  }
  if (options.artifact.empty())
    return "no artifact given";
  return "";
}

/// An IEEE binary16 value's bits as a double.
double halfToDouble(uint16_t bits) {
  int exponent = (bits >> 10) & 0x1f, mantissa = bits & 0x3ff;
  double magnitude =
      exponent == 0    ? std::ldexp(mantissa, -24)
      : exponent == 31 ? (mantissa ? NAN : INFINITY)
                       : std::ldexp(mantissa | 0x400, exponent - 25);
  return bits & 0x8000 ? -magnitude : magnitude;
}

double elementAt(const kiln_tensor *tensor, size_t i) {
  const void *data = kiln_tensor_const_data(tensor);
  switch (kiln_tensor_dtype(tensor)) {
  case KILN_DTYPE_F32:
    return static_cast<const float *>(data)[i];
  case KILN_DTYPE_I64:
    return static_cast<double>(static_cast<const int64_t *>(data)[i]);
  case KILN_DTYPE_F64:
    return static_cast<const double *>(data)[i];
  case KILN_DTYPE_U64:
    return static_cast<double>(static_cast<const uint64_t *>(data)[i]);
  case KILN_DTYPE_I32:
    return static_cast<const int32_t *>(data)[i];
  case KILN_DTYPE_U32:
    return static_cast<const uint32_t *>(data)[i];
  case KILN_DTYPE_I8:
    return static_cast<const int8_t *>(data)[i];
  case KILN_DTYPE_I16:
    return static_cast<const int16_t *>(data)[i];
  case KILN_DTYPE_U16:
    return static_cast<const uint16_t *>(data)[i];
  case KILN_DTYPE_U8:
  case KILN_DTYPE_BOOL:
    return static_cast<const uint8_t *>(data)[i];
  case KILN_DTYPE_F16:
    return halfToDouble(static_cast<const uint16_t *>(data)[i]);
  case KILN_DTYPE_BF16: {
    uint32_t bits = uint32_t(static_cast<const uint16_t *>(data)[i]) << 16;
    float value;
    std::memcpy(&value, &bits, sizeof(value));
    return value;
  }
  case KILN_DTYPE_U4:
  case KILN_DTYPE_I4: {
    // Two a byte, the first in the low nibble.
    int nibble = (static_cast<const uint8_t *>(data)[i / 2] >> (i % 2 * 4)) & 0xf;
    if (kiln_tensor_dtype(tensor) == KILN_DTYPE_I4 && nibble >= 8)
      nibble -= 16;
    return nibble;
  }
  case KILN_DTYPE_INVALID:
    break;
  }
  return 0;
}

bool isFloat(kiln_dtype dtype) {
  return dtype == KILN_DTYPE_F32 || dtype == KILN_DTYPE_F64 ||
         dtype == KILN_DTYPE_F16 || dtype == KILN_DTYPE_BF16;
}

std::string shapeString(const kiln_tensor *tensor) {
  std::string text = "[";
  for (int32_t d = 0; d < kiln_tensor_rank(tensor); ++d)
    text += (d ? ", " : "") + std::to_string(kiln_tensor_dims(tensor)[d]);
  return text + "]";
}

void printTensor(const char *name, const kiln_tensor *tensor) {
  std::printf("%s: %s %s =", name, kiln_dtype_name(kiln_tensor_dtype(tensor)),
              shapeString(tensor).c_str());
  size_t count = kiln_tensor_num_elements(tensor);
  size_t shown = std::min<size_t>(count, 8);
  for (size_t i = 0; i < shown; ++i) {
    kiln_dtype dtype = kiln_tensor_dtype(tensor);
    const void *data = kiln_tensor_const_data(tensor);
    // 64-bit integers print from their bits: a double does not hold them.
    if (isFloat(dtype))
      std::printf(" %.6g", elementAt(tensor, i));
    else if (dtype == KILN_DTYPE_U64)
      std::printf(" %llu", static_cast<unsigned long long>(
                               static_cast<const uint64_t *>(data)[i]));
    else if (dtype == KILN_DTYPE_I64)
      std::printf(" %lld", static_cast<long long>(
                               static_cast<const int64_t *>(data)[i]));
    else
      std::printf(" %lld", static_cast<long long>(elementAt(tensor, i)));
  }
  std::printf("%s\n", count > shown ? " ..." : "");
}

/// Compares with |actual - expected| <= atol + rtol * |expected|; NaNs must
/// match NaNs and infinities must match exactly.
std::string compare(const char *name, const kiln_tensor *actual,
                    const kiln_tensor *expected, double rtol, double atol) {
  if (kiln_tensor_dtype(actual) != kiln_tensor_dtype(expected))
    return std::string("output '") + name + "' is " +
           kiln_dtype_name(kiln_tensor_dtype(actual)) + " but expected " +
           kiln_dtype_name(kiln_tensor_dtype(expected));
  if (shapeString(actual) != shapeString(expected))
    return std::string("output '") + name + "' has shape " +
           shapeString(actual) + " but expected " + shapeString(expected);
  size_t count = kiln_tensor_num_elements(actual), mismatches = 0, first = 0;
  kiln_dtype dtype = kiln_tensor_dtype(actual);
  // Integers must match exactly, bit for bit: 64-bit ones do not fit a
  // double.
  size_t size = kiln_dtype_size(dtype);
  const char *actualBytes =
      static_cast<const char *>(kiln_tensor_const_data(actual));
  const char *expectedBytes =
      static_cast<const char *>(kiln_tensor_const_data(expected));
  for (size_t i = 0; i < count; ++i) {
    double a = elementAt(actual, i), e = elementAt(expected, i);
    bool ok = !isFloat(dtype) && size
                  ? std::memcmp(actualBytes + i * size,
                                expectedBytes + i * size, size) == 0
                  : (std::isnan(a) && std::isnan(e)) || a == e ||
                        (std::isfinite(e) &&
                         std::fabs(a - e) <= atol + rtol * std::fabs(e));
    if (!ok && mismatches++ == 0)
      first = i;
  }
  if (mismatches == 0)
    return "";
  char buffer[256];
  std::snprintf(
      buffer, sizeof(buffer),
      "output '%s' differs in %zu of %zu elements; first at flat index "
      "%zu: got %.9g, expected %.9g (rtol %g, atol %g)",
      name, mismatches, count, first, elementAt(actual, first),
      elementAt(expected, first), rtol, atol);
  return buffer;
}

/// Streams tokens to stdout and records when each was chosen.
struct GenerateProgress {
  std::chrono::steady_clock::time_point start;
  std::vector<double> millis; // since start, per token
};

int32_t printToken(void *userData, int64_t token, int32_t index) {
  auto *progress = static_cast<GenerateProgress *>(userData);
  progress->millis.push_back(std::chrono::duration<double, std::milli>(
                                 std::chrono::steady_clock::now() -
                                 progress->start)
                                 .count());
  std::printf("%s%lld", index ? " " : "tokens: ", static_cast<long long>(token));
  std::fflush(stdout);
  return 0;
}

int runGenerate(const Options &options, kiln_session *session,
                const kiln_tensor *prompt) {
  if (kiln_tensor_dtype(prompt) != KILN_DTYPE_I64 ||
      kiln_tensor_num_elements(prompt) == 0 ||
      kiln_tensor_num_elements(prompt) > INT32_MAX)
    return fail("--generate needs an int64 prompt of at least one token, got " +
                std::string(kiln_dtype_name(kiln_tensor_dtype(prompt))) + " " +
                shapeString(prompt));
  kiln_generate_options generate;
  kiln_generate_options_init(&generate);
  generate.max_new_tokens = options.generate;
  generate.temperature = static_cast<float>(options.temperature);
  generate.top_k = options.topK;
  generate.top_p = static_cast<float>(options.topP);
  generate.seed = options.seed;
  generate.stop_tokens = options.stopTokens.data();
  generate.num_stop_tokens = static_cast<int32_t>(options.stopTokens.size());
  generate.draft_tokens = options.draftTokens;
  kiln_generate_stats stats;
  generate.stats = &stats;
  GenerateProgress progress;
  generate.on_token = printToken;
  generate.user_data = &progress;
  std::vector<int64_t> tokens(std::max(options.generate, 1));
  int32_t count = 0;
  progress.start = std::chrono::steady_clock::now();
  kiln_status status = kiln_session_generate(
      session, static_cast<const int64_t *>(kiln_tensor_const_data(prompt)),
      static_cast<int32_t>(kiln_tensor_num_elements(prompt)), &generate,
      tokens.data(), &count);
  if (count)
    std::printf("\n");
  std::fflush(stdout);
  if (status != KILN_OK)
    return fail(kiln_last_error());
  int threads = kiln_session_num_threads(session);
  if (count) {
    double first = progress.millis.front(), last = progress.millis.back();
    std::printf("generated %d token%s on %d thread%s: first after %.2f ms "
                "(prompt of %zu)",
                count, count == 1 ? "" : "s", threads, threads == 1 ? "" : "s",
                first, kiln_tensor_num_elements(prompt));
    if (count > 1)
      std::printf(", then %.2f tokens/s", (count - 1) / (last - first) * 1e3);
    std::printf("\n");
  }
  if (stats.drafted)
    std::printf("draft: %d of %d proposed tokens accepted (%.1f%%); %d decode "
                "and %d draft calls\n",
                stats.accepted, stats.drafted,
                100.0 * stats.accepted / stats.drafted, stats.decode_calls,
                stats.draft_calls);
  if (options.expected.empty())
    return 0;
  std::string name, error;
  TensorPtr expected = readTensorFile(options.expected[0], name, error);
  if (!expected)
    return fail(error);
  size_t want = kiln_tensor_num_elements(expected.get());
  bool same = kiln_tensor_dtype(expected.get()) == KILN_DTYPE_I64 &&
              want == static_cast<size_t>(count) &&
              std::equal(tokens.begin(), tokens.begin() + count,
                         static_cast<const int64_t *>(
                             kiln_tensor_const_data(expected.get())));
  if (!same) {
    std::fprintf(stderr, "kiln-run: mismatch: the %d generated tokens differ "
                         "from the %zu expected in %s\n",
                 count, want, options.expected[0].c_str());
    return 1;
  }
  std::printf("tokens match the expected tokens\n");
  return 0;
}

/// Standard normal noise for input 0 of `entry` (a latent, read as f32):
/// splitmix64 draws, Box-Muller pairs. Null, with the runtime's error set,
/// if the tensor cannot be made.
TensorPtr drawNoiseInput(const kiln_artifact *artifact, int32_t entry,
                         uint64_t seed) {
  kiln_tensor_info info;
  if (kiln_entry_input_info(artifact, entry, 0, &info) != KILN_OK)
    return nullptr;
  kiln_tensor *tensor = nullptr;
  if (kiln_tensor_create(KILN_DTYPE_F32, info.rank, info.dims, &tensor) !=
      KILN_OK)
    return nullptr;
  TensorPtr noise(tensor);
  uint64_t state = seed;
  auto uniform = [&] {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    // (0, 1]: the logarithm below stays finite.
    return (static_cast<double>(z >> 11) + 1.0) * 0x1.0p-53;
  };
  auto *data = static_cast<float *>(kiln_tensor_data(tensor));
  int64_t count = 1;
  for (int32_t d = 0; d < info.rank; ++d)
    count *= info.dims[d];
  for (int64_t i = 0; i < count; i += 2) {
    double radius = std::sqrt(-2.0 * std::log(uniform()));
    double angle = 2.0 * M_PI * uniform();
    data[i] = static_cast<float>(radius * std::cos(angle));
    if (i + 1 < count)
      data[i + 1] = static_cast<float>(radius * std::sin(angle));
  }
  return noise;
}

} // namespace

int main(int argc, char **argv) {
  Options options;
  std::string problem = parseArgs(argc, argv, options);
  if (!problem.empty()) {
    usage();
    return fail(problem);
  }

  if (options.sample && (options.generate >= 0 || !options.entry.empty()))
    return fail("--sample runs the entry sample: no --generate or --entry");

  kiln_artifact *artifact = nullptr;
  if (kiln_artifact_open(options.artifact.c_str(), &artifact) != KILN_OK)
    return fail(kiln_last_error());
  std::unique_ptr<kiln_artifact, void (*)(kiln_artifact *)> artifactOwner(
      artifact, kiln_artifact_close);
  int32_t entry = 0;
  if (options.generate >= 0 &&
      kiln_artifact_find_entry(artifact, "decode", &entry) != KILN_OK)
    return fail(std::string("--generate: ") + kiln_last_error());
  if (options.sample &&
      kiln_artifact_find_entry(artifact, "sample", &entry) != KILN_OK)
    return fail(std::string("--sample: ") + kiln_last_error());
  if (!options.entry.empty() &&
      kiln_artifact_find_entry(artifact, options.entry.c_str(), &entry) !=
          KILN_OK)
    return fail(kiln_last_error());

  int32_t numInputs = kiln_entry_num_inputs(artifact, entry);
  int32_t numOutputs = kiln_entry_num_outputs(artifact, entry);
  const char *entryName = kiln_artifact_entry_name(artifact, entry);
  std::vector<TensorPtr> inputs;
  std::vector<const kiln_tensor *> inputPtrs;
  bool drawNoise =
      options.sample &&
      static_cast<int32_t>(options.inputs.size()) + 1 == numInputs;
  if (drawNoise) {
    TensorPtr noise = drawNoiseInput(artifact, entry, options.seed);
    if (!noise)
      return fail(kiln_last_error());
    inputPtrs.push_back(noise.get());
    inputs.push_back(std::move(noise));
  }
  if (static_cast<int32_t>(options.inputs.size()) + drawNoise != numInputs)
    return fail(std::string("entry '") + entryName + "' takes " +
                std::to_string(numInputs) + " inputs; " +
                std::to_string(options.inputs.size()) + " given with --input");
  if (options.generate < 0 && !options.expected.empty() &&
      static_cast<int32_t>(options.expected.size()) != numOutputs)
    return fail(std::string("entry '") + entryName + "' has " +
                std::to_string(numOutputs) + " outputs; " +
                std::to_string(options.expected.size()) +
                " given with --expect");

  for (const std::string &path : options.inputs) {
    std::string name, error;
    TensorPtr tensor = readTensorFile(path, name, error);
    if (!tensor)
      return fail(error);
    inputPtrs.push_back(tensor.get());
    inputs.push_back(std::move(tensor));
  }

  kiln_session *session = nullptr;
  if (kiln_session_create(artifact, &session) != KILN_OK)
    return fail(kiln_last_error());
  std::unique_ptr<kiln_session, void (*)(kiln_session *)> sessionOwner(
      session, kiln_session_destroy);
  if (kiln_session_set_num_threads(session, options.threads) != KILN_OK)
    return fail(kiln_last_error());
  if (options.generate >= 0)
    return runGenerate(options, session, inputPtrs[0]);

  std::vector<kiln_tensor *> outputs(numOutputs, nullptr);
  std::vector<TensorPtr> outputOwners;
  // The first run allocates the outputs; later runs write into them.
  std::vector<double> millis;
  for (int run = 0; run < options.repeat; ++run) {
    auto start = std::chrono::steady_clock::now();
    kiln_status status =
        kiln_session_run(session, entry, inputPtrs.data(), numInputs,
                         outputs.data(), numOutputs);
    auto stop = std::chrono::steady_clock::now();
    if (status != KILN_OK)
      return fail(kiln_last_error());
    if (run == 0)
      for (kiln_tensor *output : outputs)
        outputOwners.emplace_back(output);
    millis.push_back(
        std::chrono::duration<double, std::milli>(stop - start).count());
  }

  int exitCode = 0;
  for (int32_t o = 0; o < numOutputs; ++o) {
    kiln_tensor_info info;
    kiln_entry_output_info(artifact, entry, o, &info);
    printTensor(info.name, outputs[o]);
    if (!options.saveDir.empty()) {
      std::string error = writeTensorFile(options.saveDir + "/output_" +
                                              std::to_string(o) + ".pb",
                                          info.name, outputs[o]);
      if (!error.empty())
        return fail(error);
    }
    if (o < static_cast<int32_t>(options.expected.size())) {
      std::string name, error;
      TensorPtr expected = readTensorFile(options.expected[o], name, error);
      if (!expected)
        return fail(error);
      std::string mismatch = compare(info.name, outputs[o], expected.get(),
                                     options.rtol, options.atol);
      if (!mismatch.empty()) {
        std::fprintf(stderr, "kiln-run: mismatch: %s\n", mismatch.c_str());
        exitCode = 1;
      }
    }
  }
  std::sort(millis.begin(), millis.end());
  int threads = kiln_session_num_threads(session);
  std::printf("median run time: %.4f ms over %d run%s on %d thread%s\n",
              millis[millis.size() / 2], options.repeat,
              options.repeat == 1 ? "" : "s", threads, threads == 1 ? "" : "s");
  if (!options.expected.empty() && exitCode == 0)
    std::printf("outputs match the expected tensors (rtol %g, atol %g)\n",
                options.rtol, options.atol);
  return exitCode;
}
