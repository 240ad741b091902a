//===- LoadTest.cpp - one artifact from many sessions, for minutes
//---------===//
//
// runtime-load-test ARTIFACT [--seconds S] [--sessions N] [--threads T]
//                   [--no-rss-check]
//
// Runs entry 0 of ARTIFACT from N sessions at once (default: twice the CPUs),
// each on its own thread with T threads of its own (default 0: one per CPU,
// so the process asks for far more threads than there are cores), until S
// seconds have passed. Every output must be bit-identical to a run made
// before the load starts with the same thread count, and the resident set
// must not grow by more than 1% after the first tenth of the run (sampled
// every 100 ms; 256 KiB at least, what the allocator's arenas move by in a
// process of a few MiB). Inputs are fixed pseudo-random values: floats in [-1,
// 1), integers 0, so token ids and indices stay in range; a named dimension
// takes its smallest size.
//
// Prints runs, mismatches and the resident-set samples; exits 1 on any
// mismatch, a failing run, or growth above that. --no-rss-check is for
// sanitizer builds, whose allocators hold freed memory back on purpose
// (AddressSanitizer's quarantine; its leak check runs at exit instead).
//
//===----------------------------------------------------------------------===//
#include "kiln/runtime.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

struct Options {
  const char *artifact = nullptr;
  double seconds = 10;
  int sessions = 0;
  int threads = 0;
  bool checkResidentSet = true;
};

[[noreturn]] void fail(const std::string &message) {
  std::fprintf(stderr, "runtime-load-test: error: %s\n", message.c_str());
  std::exit(1);
}

void check(kiln_status status, const char *what) {
  if (status != KILN_OK)
    fail(std::string(what) + ": " + kiln_last_error());
}

Options parse(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> const char * {
      if (i + 1 >= argc)
        fail(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--seconds")
      options.seconds = std::atof(value());
    else if (arg == "--sessions")
      options.sessions = std::atoi(value());
    else if (arg == "--threads")
      options.threads = std::atoi(value());
    else if (arg == "--no-rss-check")
      options.checkResidentSet = false;
    else if (!options.artifact && arg[0] != '-')
      options.artifact = argv[i];
    else
      fail("unknown argument '" + arg + "'");
  }
  if (!options.artifact)
    fail("usage: runtime-load-test ARTIFACT [--seconds S] [--sessions N] "
         "[--threads T] [--no-rss-check]");
  if (options.sessions <= 0)
    options.sessions =
        2 * static_cast<int>(std::thread::hardware_concurrency());
  return options;
}

// The entry's inputs: fixed pseudo-random values of its signature's shape.
std::vector<kiln_tensor *> makeInputs(const kiln_artifact *artifact) {
  std::vector<kiln_tensor *> inputs;
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  for (int32_t i = 0; i < kiln_entry_num_inputs(artifact, 0); ++i) {
    kiln_tensor_info info;
    check(kiln_entry_input_info(artifact, 0, i, &info), "input info");
    std::vector<int64_t> dims(info.dims, info.dims + info.rank);
    for (int64_t &dim : dims)
      if (dim < 0) {
        kiln_dim_info named;
        check(kiln_artifact_dim_info(artifact, -static_cast<int32_t>(dim) - 1,
                                     &named),
              "dim info");
        dim = named.min;
      }
    kiln_tensor *tensor = nullptr;
    check(kiln_tensor_create(info.dtype, info.rank, dims.data(), &tensor),
          "input");
    if (info.dtype == KILN_DTYPE_F32) {
      auto *data = static_cast<float *>(kiln_tensor_data(tensor));
      for (size_t k = 0; k < kiln_tensor_num_elements(tensor); ++k) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        data[k] = static_cast<float>(seed >> 40) / (1 << 23) - 1.0f;
      }
    }
    inputs.push_back(tensor);
  }
  return inputs;
}

// Runs entry 0 once; the outputs' bytes, or an empty vector on failure.
std::vector<std::string> runOnce(kiln_session *session,
                                 const std::vector<kiln_tensor *> &inputs,
                                 int32_t numOutputs) {
  std::vector<kiln_tensor *> outputs(numOutputs, nullptr);
  if (kiln_session_run(session, 0, inputs.data(),
                       static_cast<int32_t>(inputs.size()), outputs.data(),
                       numOutputs) != KILN_OK)
    return {};
  std::vector<std::string> bytes;
  for (kiln_tensor *output : outputs) {
    bytes.emplace_back(
        static_cast<const char *>(kiln_tensor_const_data(output)),
        kiln_tensor_byte_size(output));
    kiln_tensor_destroy(output);
  }
  return bytes;
}

long residentKiB() {
  FILE *statm = std::fopen("/proc/self/statm", "r");
  long size = 0, resident = 0;
  if (!statm || std::fscanf(statm, "%ld %ld", &size, &resident) != 2)
    fail("cannot read /proc/self/statm");
  std::fclose(statm);
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

} // namespace

int main(int argc, char **argv) {
  Options options = parse(argc, argv);
  kiln_artifact *artifact = nullptr;
  check(kiln_artifact_open(options.artifact, &artifact), options.artifact);
  int32_t numOutputs = kiln_entry_num_outputs(artifact, 0);
  std::vector<kiln_tensor *> inputs = makeInputs(artifact);

  std::vector<std::string> expected;
  {
    kiln_session *session = nullptr;
    check(kiln_session_create(artifact, &session), "session");
    check(kiln_session_set_num_threads(session, options.threads), "threads");
    expected = runOnce(session, inputs, numOutputs);
    if (expected.empty())
      fail(std::string("reference run: ") + kiln_last_error());
    kiln_session_destroy(session);
  }

  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(options.seconds));
  std::atomic<long> runs{0}, mismatches{0}, failures{0};
  std::vector<std::thread> threads;
  for (int s = 0; s < options.sessions; ++s)
    threads.emplace_back([&] {
      kiln_session *session = nullptr;
      if (kiln_session_create(artifact, &session) != KILN_OK ||
          kiln_session_set_num_threads(session, options.threads) != KILN_OK) {
        ++failures;
        return;
      }
      while (Clock::now() < deadline) {
        std::vector<std::string> got = runOnce(session, inputs, numOutputs);
        if (got.empty())
          ++failures;
        else if (got != expected)
          ++mismatches;
        ++runs;
      }
      kiln_session_destroy(session);
    });

  // The first tenth warms the allocator and starts the threads.
  long baseline = 0, peak = 0, last = 0;
  while (Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    last = residentKiB();
    if (Clock::now() - start < (deadline - start) / 10)
      continue;
    if (baseline == 0)
      baseline = last;
    peak = last > peak ? last : peak;
  }
  for (std::thread &thread : threads)
    thread.join();
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  double growth = baseline > 0 ? 100.0 * (peak - baseline) / baseline : 0;
  std::printf("%d sessions x %d threads (%u CPUs), %.1f s: %ld runs "
              "(%.1f per second), %ld mismatches, %ld failures; resident "
              "%ld KiB after the first tenth, peak %ld KiB (+%.2f%%), last "
              "%ld KiB\n",
              options.sessions, options.threads,
              std::thread::hardware_concurrency(), elapsed, runs.load(),
              runs / elapsed, mismatches.load(), failures.load(), baseline,
              peak, growth, last);
  for (kiln_tensor *input : inputs)
    kiln_tensor_destroy(input);
  kiln_artifact_close(artifact);
  long allowed = baseline / 100 > 256 ? baseline / 100 : 256;
  if (mismatches || failures || runs == 0 ||
      (options.checkResidentSet && peak - baseline > allowed))
    return 1;
  return 0;
}
