//===- RuntimeTest.cpp - the runtime's C API, success and error paths -----===//
//
// Runs an artifact compiled from ONNX's test_matmul_2d model (a: 3x4,
// b: 4x3 -> c: 3x3, float32); the reference result is a plain triple loop.
//
//===----------------------------------------------------------------------===//
#include "kiln/runtime.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

const char *artifactPath() {
  const char *path = std::getenv("KILN_TEST_ARTIFACT");
  return path ? path : "matmul_2d.so";
}

struct Tensor {
  kiln_tensor *t = nullptr;
  Tensor() = default;
  Tensor(kiln_dtype dtype, std::vector<int64_t> dims) {
    EXPECT_EQ(kiln_tensor_create(dtype, static_cast<int32_t>(dims.size()),
                                 dims.data(), &t),
              KILN_OK)
        << kiln_last_error();
  }
  ~Tensor() { kiln_tensor_destroy(t); }
  float *f32() { return static_cast<float *>(kiln_tensor_data(t)); }
};

void fillRandom(Tensor &tensor, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (size_t i = 0; i < kiln_tensor_num_elements(tensor.t); ++i)
    tensor.f32()[i] = dist(rng);
}

std::vector<float> referenceMatMul(const float *a, const float *b) {
  std::vector<float> c(9, 0.0f);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k)
        c[i * 3 + j] += a[i * 4 + k] * b[k * 3 + j];
  return c;
}

class RuntimeTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(kiln_artifact_open(artifactPath(), &artifact), KILN_OK)
        << kiln_last_error();
    ASSERT_EQ(kiln_session_create(artifact, &session), KILN_OK)
        << kiln_last_error();
    fillRandom(a, 1);
    fillRandom(b, 2);
  }
  void TearDown() override {
    kiln_session_destroy(session);
    kiln_artifact_close(artifact);
  }

  kiln_status run(std::vector<const kiln_tensor *> inputs,
                  std::vector<kiln_tensor *> &outputs) {
    return kiln_session_run(session, 0, inputs.data(),
                            static_cast<int32_t>(inputs.size()), outputs.data(),
                            static_cast<int32_t>(outputs.size()));
  }

  kiln_artifact *artifact = nullptr;
  kiln_session *session = nullptr;
  Tensor a{KILN_DTYPE_F32, {3, 4}};
  Tensor b{KILN_DTYPE_F32, {4, 3}};
};

TEST_F(RuntimeTest, DescribesTheSignature) {
  EXPECT_EQ(kiln_artifact_num_entries(artifact), 1);
  EXPECT_STREQ(kiln_artifact_entry_name(artifact, 0), "main");
  EXPECT_EQ(kiln_artifact_entry_name(artifact, 1), nullptr);
  EXPECT_EQ(std::strncmp(kiln_artifact_producer(artifact), "kiln ", 5), 0);
  ASSERT_EQ(kiln_entry_num_inputs(artifact, 0), 2);
  ASSERT_EQ(kiln_entry_num_outputs(artifact, 0), 1);
  EXPECT_EQ(kiln_entry_num_inputs(artifact, 7), -1);

  kiln_tensor_info info;
  ASSERT_EQ(kiln_entry_input_info(artifact, 0, 0, &info), KILN_OK);
  EXPECT_STREQ(info.name, "a");
  EXPECT_EQ(info.dtype, KILN_DTYPE_F32);
  ASSERT_EQ(info.rank, 2);
  EXPECT_EQ(info.dims[0], 3);
  EXPECT_EQ(info.dims[1], 4);
  ASSERT_EQ(kiln_entry_input_info(artifact, 0, 1, &info), KILN_OK);
  EXPECT_STREQ(info.name, "b");
  ASSERT_EQ(kiln_entry_output_info(artifact, 0, 0, &info), KILN_OK);
  EXPECT_STREQ(info.name, "c");
  EXPECT_EQ(info.dims[0], 3);
  EXPECT_EQ(info.dims[1], 3);
  EXPECT_EQ(kiln_entry_input_info(artifact, 0, 2, &info),
            KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_last_error()).find("index 2 is out of range"),
            std::string::npos);

  int32_t index = -1;
  EXPECT_EQ(kiln_artifact_find_entry(artifact, "main", &index), KILN_OK);
  EXPECT_EQ(index, 0);
  EXPECT_EQ(kiln_artifact_find_entry(artifact, "decode", &index),
            KILN_ERROR_NOT_FOUND);
  EXPECT_NE(std::string(kiln_last_error()).find("'decode'"), std::string::npos);
}

TEST_F(RuntimeTest, ComputesTheMatrixProduct) {
  std::vector<kiln_tensor *> outputs = {nullptr};
  ASSERT_EQ(run({a.t, b.t}, outputs), KILN_OK) << kiln_last_error();
  EXPECT_STREQ(kiln_last_error(), "");
  ASSERT_NE(outputs[0], nullptr);
  Tensor c;
  c.t = outputs[0];
  std::vector<float> expected = referenceMatMul(a.f32(), b.f32());
  for (int i = 0; i < 9; ++i)
    EXPECT_NEAR(c.f32()[i], expected[i], 1e-5f) << "element " << i;

  // A second run writes into the caller's output tensor in place.
  fillRandom(a, 3);
  ASSERT_EQ(run({a.t, b.t}, outputs), KILN_OK) << kiln_last_error();
  EXPECT_EQ(outputs[0], c.t);
  expected = referenceMatMul(a.f32(), b.f32());
  for (int i = 0; i < 9; ++i)
    EXPECT_NEAR(c.f32()[i], expected[i], 1e-5f) << "element " << i;
}

TEST_F(RuntimeTest, SetsTheThreadCount) {
  int32_t cpus = kiln_session_num_threads(session);
  EXPECT_GE(cpus, 1) << "the default is one thread per CPU";
  EXPECT_LE(cpus, static_cast<int32_t>(std::thread::hardware_concurrency()));
  EXPECT_EQ(kiln_session_set_num_threads(session, -1),
            KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_session_set_num_threads(nullptr, 2),
            KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_session_num_threads(session), cpus);

  std::vector<float> expected = referenceMatMul(a.f32(), b.f32());
  for (int32_t threads : {3, 1, 0}) {
    ASSERT_EQ(kiln_session_set_num_threads(session, threads), KILN_OK);
    EXPECT_EQ(kiln_session_num_threads(session), threads ? threads : cpus);
    std::vector<kiln_tensor *> outputs = {nullptr};
    ASSERT_EQ(run({a.t, b.t}, outputs), KILN_OK) << kiln_last_error();
    Tensor c;
    c.t = outputs[0];
    for (int i = 0; i < 9; ++i)
      EXPECT_NEAR(c.f32()[i], expected[i], 1e-5f) << "element " << i;
  }
}

TEST_F(RuntimeTest, RejectsTheWrongShape) {
  Tensor wrong(KILN_DTYPE_F32, {4, 3});
  std::vector<kiln_tensor *> outputs = {nullptr};
  EXPECT_EQ(run({wrong.t, b.t}, outputs), KILN_ERROR_SHAPE_MISMATCH);
  EXPECT_STREQ(kiln_last_error(),
               "main: input 'a' must have shape [3, 4], got [4, 3]");
  EXPECT_EQ(outputs[0], nullptr) << "a failed run must not allocate outputs";

  Tensor rank3(KILN_DTYPE_F32, {3, 4, 1});
  EXPECT_EQ(run({rank3.t, b.t}, outputs), KILN_ERROR_SHAPE_MISMATCH);
}

TEST_F(RuntimeTest, RejectsTheWrongDtype) {
  Tensor ints(KILN_DTYPE_I64, {4, 3});
  std::vector<kiln_tensor *> outputs = {nullptr};
  EXPECT_EQ(run({a.t, ints.t}, outputs), KILN_ERROR_DTYPE_MISMATCH);
  EXPECT_STREQ(kiln_last_error(), "main: input 'b' must be float32, got int64");
}

TEST_F(RuntimeTest, RejectsBadOutputsAndCounts) {
  std::vector<kiln_tensor *> outputs = {nullptr};
  EXPECT_EQ(run({a.t}, outputs), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_last_error()).find("takes 2 inputs"),
            std::string::npos);

  Tensor small(KILN_DTYPE_F32, {3, 2});
  outputs[0] = small.t;
  EXPECT_EQ(run({a.t, b.t}, outputs), KILN_ERROR_SHAPE_MISMATCH);
  EXPECT_STREQ(kiln_last_error(),
               "main: output 'c' must have shape [3, 3], got [3, 2]");

  EXPECT_EQ(kiln_session_run(session, 0, nullptr, 2, outputs.data(), 1),
            KILN_ERROR_INVALID_ARGUMENT);
  const kiln_tensor *withNull[2] = {a.t, nullptr};
  outputs[0] = nullptr;
  EXPECT_EQ(kiln_session_run(session, 0, withNull, 2, outputs.data(), 1),
            KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_session_run(session, 3, withNull, 2, outputs.data(), 1),
            KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_session_run(nullptr, 0, withNull, 2, outputs.data(), 1),
            KILN_ERROR_INVALID_ARGUMENT);
}

TEST_F(RuntimeTest, SessionsRunConcurrently) {
  // Each thread owns a session and checks its own results.
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      kiln_session *own = nullptr;
      if (kiln_session_create(artifact, &own) != KILN_OK) {
        failures[t] = 1;
        return;
      }
      Tensor x(KILN_DTYPE_F32, {3, 4}), y(KILN_DTYPE_F32, {4, 3});
      for (int iteration = 0; iteration < 200; ++iteration) {
        fillRandom(x, 100 * t + iteration);
        fillRandom(y, 7 + iteration);
        const kiln_tensor *inputs[2] = {x.t, y.t};
        kiln_tensor *outputs[1] = {nullptr};
        if (kiln_session_run(own, 0, inputs, 2, outputs, 1) != KILN_OK) {
          failures[t] = 1;
          break;
        }
        std::vector<float> expected = referenceMatMul(x.f32(), y.f32());
        const float *got =
            static_cast<const float *>(kiln_tensor_data(outputs[0]));
        for (int i = 0; i < 9; ++i)
          if (std::abs(got[i] - expected[i]) > 1e-5f)
            failures[t] = 1;
        kiln_tensor_destroy(outputs[0]);
      }
      kiln_session_destroy(own);
    });
  }
  for (std::thread &thread : threads)
    thread.join();
  for (int t = 0; t < 4; ++t)
    EXPECT_EQ(failures[t], 0) << "thread " << t;
}

TEST(RuntimeExecution, ReportsAnOutOfRangeIndexFromGeneratedCode) {
  // test_gather_0: data [5, 4, 3, 2] float32, indices [3] int64.
  const char *path = std::getenv("KILN_TEST_GATHER_ARTIFACT");
  ASSERT_NE(path, nullptr);
  kiln_artifact *artifact = nullptr;
  kiln_session *session = nullptr;
  ASSERT_EQ(kiln_artifact_open(path, &artifact), KILN_OK) << kiln_last_error();
  ASSERT_EQ(kiln_session_create(artifact, &session), KILN_OK);
  Tensor data(KILN_DTYPE_F32, {5, 4, 3, 2});
  Tensor indices(KILN_DTYPE_I64, {3});
  for (size_t i = 0; i < kiln_tensor_num_elements(data.t); ++i)
    data.f32()[i] = static_cast<float>(i);
  auto *ids = static_cast<int64_t *>(kiln_tensor_data(indices.t));
  const kiln_tensor *inputs[2] = {data.t, indices.t};
  kiln_tensor *outputs[1] = {nullptr};

  ids[0] = 4, ids[1] = -5, ids[2] = 2;
  ASSERT_EQ(kiln_session_run(session, 0, inputs, 2, outputs, 1), KILN_OK)
      << kiln_last_error();
  const float *y = static_cast<const float *>(kiln_tensor_data(outputs[0]));
  EXPECT_EQ(y[0], 4 * 24.0f) << "row 4 starts at element 96";
  EXPECT_EQ(y[24], 0.0f) << "index -5 is row 0";
  EXPECT_EQ(y[48], 2 * 24.0f);
  kiln_tensor_destroy(outputs[0]);
  outputs[0] = nullptr;

  ids[1] = 5;
  EXPECT_EQ(kiln_session_run(session, 0, inputs, 2, outputs, 1),
            KILN_ERROR_EXECUTION);
  EXPECT_EQ(std::string(kiln_last_error())
                .rfind("main: Gather index out of range at node ", 0),
            0u)
      << kiln_last_error();
  EXPECT_EQ(outputs[0], nullptr) << "outputs the run allocated are released";

  ids[1] = -6;
  EXPECT_EQ(kiln_session_run(session, 0, inputs, 2, outputs, 1),
            KILN_ERROR_EXECUTION);
  kiln_session_destroy(session);
  kiln_artifact_close(artifact);
}

TEST(RuntimeArtifact, ReportsAMissingFile) {
  kiln_artifact *artifact = nullptr;
  EXPECT_EQ(kiln_artifact_open("/nonexistent/model.so", &artifact),
            KILN_ERROR_IO);
  EXPECT_EQ(artifact, nullptr);
  EXPECT_NE(std::string(kiln_last_error()).find("/nonexistent/model.so"),
            std::string::npos);
  EXPECT_EQ(kiln_artifact_open(nullptr, &artifact),
            KILN_ERROR_INVALID_ARGUMENT);
}

TEST(RuntimeArtifact, RejectsASharedLibraryThatIsNoArtifact) {
  const char *other = std::getenv("KILN_TEST_NOT_ARTIFACT");
  ASSERT_NE(other, nullptr);
  kiln_artifact *artifact = nullptr;
  EXPECT_EQ(kiln_artifact_open(other, &artifact), KILN_ERROR_INCOMPATIBLE);
  EXPECT_NE(std::string(kiln_last_error()).find("is not a Kiln artifact"),
            std::string::npos);
}

TEST(RuntimeTensor, ValidatesItsArguments) {
  kiln_tensor *t = nullptr;
  int64_t negative[] = {2, -1};
  EXPECT_EQ(kiln_tensor_create(KILN_DTYPE_F32, 2, negative, &t),
            KILN_ERROR_INVALID_ARGUMENT);
  int64_t huge[] = {int64_t(1) << 40, int64_t(1) << 40};
  EXPECT_EQ(kiln_tensor_create(KILN_DTYPE_F32, 2, huge, &t),
            KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_tensor_create(KILN_DTYPE_INVALID, 0, nullptr, &t),
            KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_tensor_create(KILN_DTYPE_F32, -1, nullptr, &t),
            KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(t, nullptr);

  ASSERT_EQ(kiln_tensor_create(KILN_DTYPE_I64, 0, nullptr, &t), KILN_OK);
  EXPECT_EQ(kiln_tensor_num_elements(t), 1u);
  EXPECT_EQ(kiln_tensor_byte_size(t), 8u);
  EXPECT_EQ(*static_cast<int64_t *>(kiln_tensor_data(t)), 0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(kiln_tensor_data(t)) % 64, 0u);
  kiln_tensor_destroy(t);
  kiln_tensor_destroy(nullptr);

  int64_t empty[] = {0, 5};
  ASSERT_EQ(kiln_tensor_create(KILN_DTYPE_F32, 2, empty, &t), KILN_OK);
  EXPECT_EQ(kiln_tensor_num_elements(t), 0u);
  kiln_tensor_destroy(t);
}

TEST(RuntimeStatus, NamesEveryStatus) {
  EXPECT_STREQ(kiln_status_string(KILN_OK), "ok");
  EXPECT_STREQ(kiln_status_string(KILN_ERROR_SHAPE_MISMATCH), "shape mismatch");
  EXPECT_STREQ(kiln_status_string(static_cast<kiln_status>(99)),
               "unknown status");
  EXPECT_EQ(kiln_dtype_size(KILN_DTYPE_F32), 4u);
  EXPECT_EQ(kiln_dtype_size(KILN_DTYPE_I64), 8u);
  EXPECT_STREQ(kiln_dtype_name(KILN_DTYPE_I64), "int64");
}

// Each dtype's width as ONNX defines the type, and its name.
TEST(RuntimeDtypes, WidthsAndNames) {
  struct Expected {
    kiln_dtype dtype;
    int32_t bits;
    const char *name;
  };
  for (Expected e :
       std::initializer_list<Expected>{{KILN_DTYPE_F32, 32, "float32"},
                                       {KILN_DTYPE_U8, 8, "uint8"},
                                       {KILN_DTYPE_I8, 8, "int8"},
                                       {KILN_DTYPE_U16, 16, "uint16"},
                                       {KILN_DTYPE_I16, 16, "int16"},
                                       {KILN_DTYPE_I32, 32, "int32"},
                                       {KILN_DTYPE_I64, 64, "int64"},
                                       {KILN_DTYPE_BOOL, 8, "bool"},
                                       {KILN_DTYPE_F16, 16, "float16"},
                                       {KILN_DTYPE_BF16, 16, "bfloat16"},
                                       {KILN_DTYPE_U4, 4, "uint4"},
                                       {KILN_DTYPE_I4, 4, "int4"},
                                       {KILN_DTYPE_F64, 64, "float64"},
                                       {KILN_DTYPE_U32, 32, "uint32"},
                                       {KILN_DTYPE_U64, 64, "uint64"}}) {
    EXPECT_EQ(kiln_dtype_bits(e.dtype), e.bits) << e.name;
    EXPECT_EQ(kiln_dtype_size(e.dtype), static_cast<size_t>(e.bits % 8 ? 0 : e.bits / 8))
        << e.name;
    EXPECT_STREQ(kiln_dtype_name(e.dtype), e.name);
  }
  EXPECT_EQ(kiln_dtype_bits(static_cast<kiln_dtype>(14)), 0); // COMPLEX64
  kiln_tensor *t = nullptr;
  EXPECT_EQ(kiln_tensor_create(static_cast<kiln_dtype>(14), 0, nullptr, &t),
            KILN_ERROR_INVALID_ARGUMENT);
  // Seven 4-bit elements take four bytes; seven halves fourteen.
  int64_t seven[] = {7};
  ASSERT_EQ(kiln_tensor_create(KILN_DTYPE_U4, 1, seven, &t), KILN_OK);
  EXPECT_EQ(kiln_tensor_byte_size(t), 4u);
  kiln_tensor_destroy(t);
  ASSERT_EQ(kiln_tensor_create(KILN_DTYPE_BF16, 1, seven, &t), KILN_OK);
  EXPECT_EQ(kiln_tensor_byte_size(t), 14u);
  kiln_tensor_destroy(t);
}

} // namespace
