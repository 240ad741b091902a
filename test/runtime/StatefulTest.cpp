//===- StatefulTest.cpp - an artifact with state and two entries ----------===//
//
// Runs Inputs/stateful.mlir, compiled by kiln-compile at -O2 and at -O0,
// against a plain C++ model of it: state that persists across calls and
// entries, an in-place update at a run-time (clamped) offset, a private
// function both entries call, reset, and separate sessions.
//
//===----------------------------------------------------------------------===//
#include "kiln/runtime.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

constexpr int kRows = 8, kCols = 64, kSlots = 6;

/// relu(x @ W) with W = 0.125 everywhere: every column is 0.125 * row sum.
std::vector<float> layer(const std::vector<float> &x) {
  std::vector<float> h(kRows * kCols);
  for (int i = 0; i < kRows; ++i) {
    float sum = 0;
    for (int k = 0; k < kCols; ++k)
      sum += x[i * kCols + k] * 0.125f;
    for (int j = 0; j < kCols; ++j)
      h[i * kCols + j] = sum > 0 ? sum : 0;
  }
  return h;
}

/// What the artifact's state should hold.
struct Model {
  std::vector<float> acc = std::vector<float>(kRows * kCols, 0.0f);
  std::vector<float> cache = std::vector<float>(kSlots * kCols, 0.0f);
  int64_t calls = 10;

  std::vector<float> step(const std::vector<float> &x, int64_t slot) {
    std::vector<float> h = layer(x);
    for (size_t i = 0; i < acc.size(); ++i)
      acc[i] += h[i];
    int64_t row = slot < 0 ? 0 : slot > kSlots - 1 ? kSlots - 1 : slot;
    std::copy(h.begin(), h.begin() + kCols, cache.begin() + row * kCols);
    ++calls;
    return acc;
  }

  std::vector<float> recall(float scale) const {
    std::vector<float> padded(kRows * kCols, 0.0f);
    std::copy(cache.begin(), cache.end(), padded.begin());
    std::vector<float> h = layer(padded);
    h.resize(kSlots * kCols);
    for (float &v : h)
      v *= scale;
    return h;
  }
};

struct Tensor {
  kiln_tensor *t = nullptr;
  Tensor(kiln_dtype dtype, std::vector<int64_t> dims) {
    EXPECT_EQ(kiln_tensor_create(dtype, static_cast<int32_t>(dims.size()),
                                 dims.data(), &t),
              KILN_OK);
  }
  explicit Tensor(kiln_tensor *owned) : t(owned) {}
  Tensor(const Tensor &) = delete;
  ~Tensor() { kiln_tensor_destroy(t); }
  template <typename T> T *data() {
    return static_cast<T *>(kiln_tensor_data(t));
  }
};

class StatefulTest : public ::testing::TestWithParam<const char *> {
protected:
  void SetUp() override {
    const char *path = std::getenv(GetParam());
    ASSERT_NE(path, nullptr) << GetParam() << " is not set";
    ASSERT_EQ(kiln_artifact_open(path, &artifact), KILN_OK)
        << kiln_last_error();
    ASSERT_EQ(kiln_session_create(artifact, &session), KILN_OK);
    ASSERT_EQ(kiln_artifact_find_entry(artifact, "step", &stepEntry), KILN_OK);
    ASSERT_EQ(kiln_artifact_find_entry(artifact, "recall", &recallEntry),
              KILN_OK);
  }
  void TearDown() override {
    kiln_session_destroy(session);
    kiln_artifact_close(artifact);
  }

  /// Runs step on `session` and checks y and calls against `model`.
  void step(Model &model, int seed, int64_t slot) {
    Tensor x(KILN_DTYPE_F32, {kRows, kCols});
    std::vector<float> input(kRows * kCols);
    for (int i = 0; i < kRows * kCols; ++i)
      input[i] = x.data<float>()[i] =
          static_cast<float>((i * 37 + seed * 11) % 19) / 19.0f - 0.4f;
    Tensor at(KILN_DTYPE_I64, {});
    *at.data<int64_t>() = slot;
    const kiln_tensor *inputs[] = {x.t, at.t};
    kiln_tensor *outputs[3] = {nullptr, nullptr, nullptr};
    ASSERT_EQ(kiln_session_run(session, stepEntry, inputs, 2, outputs, 3),
              KILN_OK)
        << kiln_last_error();
    Tensor y(outputs[0]), calls(outputs[1]), before(outputs[2]);
    std::vector<float> previous = model.acc;
    std::vector<float> expected = model.step(input, slot);
    for (int i = 0; i < kRows * kCols; ++i) {
      ASSERT_NEAR(y.data<float>()[i], expected[i], 1e-4f) << "y element " << i;
      ASSERT_NEAR(before.data<float>()[i], -previous[i], 1e-4f)
          << "before element " << i;
    }
    EXPECT_EQ(*calls.data<int64_t>(), model.calls);
  }

  void recall(const Model &model, float scale) {
    Tensor s(KILN_DTYPE_F32, {});
    *s.data<float>() = scale;
    const kiln_tensor *inputs[] = {s.t};
    kiln_tensor *rows = nullptr;
    ASSERT_EQ(kiln_session_run(session, recallEntry, inputs, 1, &rows, 1),
              KILN_OK)
        << kiln_last_error();
    Tensor out(rows);
    std::vector<float> expected = model.recall(scale);
    for (int i = 0; i < kSlots * kCols; ++i)
      ASSERT_NEAR(out.data<float>()[i], expected[i], 1e-4f)
          << "rows element " << i;
  }

  kiln_artifact *artifact = nullptr;
  kiln_session *session = nullptr;
  int32_t stepEntry = -1, recallEntry = -1;
};

TEST_P(StatefulTest, StatePersistsAcrossCallsAndEntries) {
  Model model;
  recall(model, 1.0f);
  step(model, 1, 2);
  step(model, 2, 0);
  recall(model, 2.0f);
  step(model, 3, 5);
  // Offsets outside the cache are clamped to its first and last slot.
  step(model, 4, 99);
  step(model, 5, -3);
  recall(model, 0.5f);
}

TEST_P(StatefulTest, ResetReturnsToTheInitialState) {
  Model model;
  step(model, 1, 1);
  step(model, 2, 3);
  ASSERT_EQ(kiln_session_reset(session), KILN_OK);
  Model fresh;
  recall(fresh, 1.0f);
  step(fresh, 7, 4);
  EXPECT_EQ(fresh.calls, 11) << "the counter restarts from its initial 10";
}

TEST_P(StatefulTest, SessionsHaveTheirOwnState) {
  Model model;
  step(model, 1, 1);
  kiln_session *other = nullptr;
  ASSERT_EQ(kiln_session_create(artifact, &other), KILN_OK);
  std::swap(session, other);
  Model fresh;
  step(fresh, 2, 2);
  std::swap(session, other);
  kiln_session_destroy(other);
  step(model, 3, 3);
}

INSTANTIATE_TEST_SUITE_P(OptimizationLevels, StatefulTest,
                         ::testing::Values("KILN_TEST_STATEFUL_O2",
                                           "KILN_TEST_STATEFUL_O0"));

} // namespace
