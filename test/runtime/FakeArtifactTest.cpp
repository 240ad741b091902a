//===- FakeArtifactTest.cpp - the runtime's side of ABI v3 ----------------===//
//
// Artifacts built by hand (fake_artifact.c): named dimensions bound per call
// and checked against their ranges, outputs allocated at the call's shape,
// state that persists across entries and resets, and descriptors the
// runtime must refuse.
//
//===----------------------------------------------------------------------===//
#include "kiln/runtime.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace {

std::string fakePath(int which) {
  const char *path =
      std::getenv(("KILN_TEST_FAKE_" + std::to_string(which)).c_str());
  return path ? path : "";
}

class FakeArtifactTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(kiln_artifact_open(fakePath(0).c_str(), &artifact), KILN_OK)
        << kiln_last_error();
    ASSERT_EQ(kiln_session_create(artifact, &session), KILN_OK)
        << kiln_last_error();
    ASSERT_EQ(kiln_artifact_find_entry(artifact, "scale", &scale), KILN_OK);
    ASSERT_EQ(kiln_artifact_find_entry(artifact, "count", &count), KILN_OK);
  }
  void TearDown() override {
    kiln_session_destroy(session);
    kiln_artifact_close(artifact);
  }

  kiln_tensor *rows(int64_t n) {
    int64_t dims[] = {n, 2};
    kiln_tensor *t = nullptr;
    EXPECT_EQ(kiln_tensor_create(KILN_DTYPE_F32, 2, dims, &t), KILN_OK);
    float *data = static_cast<float *>(kiln_tensor_data(t));
    for (int64_t i = 0; i < n * 2; ++i)
      data[i] = static_cast<float>(i);
    return t;
  }

  int64_t calls() {
    kiln_tensor *n = nullptr;
    EXPECT_EQ(kiln_session_run(session, count, nullptr, 0, &n, 1), KILN_OK)
        << kiln_last_error();
    int64_t value = *static_cast<int64_t *>(kiln_tensor_data(n));
    kiln_tensor_destroy(n);
    return value;
  }

  kiln_artifact *artifact = nullptr;
  kiln_session *session = nullptr;
  int32_t scale = -1, count = -1;
};

TEST_F(FakeArtifactTest, DescribesNamedDimensions) {
  ASSERT_EQ(kiln_artifact_num_dims(artifact), 2);
  kiln_dim_info dim;
  ASSERT_EQ(kiln_artifact_dim_info(artifact, 0, &dim), KILN_OK);
  EXPECT_STREQ(dim.name, "rows");
  EXPECT_EQ(dim.min, 1);
  EXPECT_EQ(dim.max, 8);
  ASSERT_EQ(kiln_artifact_dim_info(artifact, 1, &dim), KILN_OK);
  EXPECT_STREQ(dim.name, "rows * 2");
  EXPECT_EQ(kiln_artifact_dim_info(artifact, 2, &dim),
            KILN_ERROR_INVALID_ARGUMENT);
  kiln_tensor_info info;
  ASSERT_EQ(kiln_entry_input_info(artifact, scale, 0, &info), KILN_OK);
  EXPECT_EQ(info.dims[0], KILN_ABI_DIM_REF(0));
  EXPECT_EQ(info.dims[1], 2);
}

TEST_F(FakeArtifactTest, AllocatesOutputsAtTheCallsShape) {
  for (int64_t n : {1, 3, 8}) {
    kiln_tensor *x = rows(n);
    const kiln_tensor *inputs[] = {x};
    kiln_tensor *y = nullptr;
    ASSERT_EQ(kiln_session_run(session, scale, inputs, 1, &y, 1), KILN_OK)
        << kiln_last_error();
    ASSERT_EQ(kiln_tensor_rank(y), 2);
    EXPECT_EQ(kiln_tensor_dims(y)[0], n);
    const float *out = static_cast<const float *>(kiln_tensor_data(y));
    for (int64_t i = 0; i < n * 2; ++i)
      EXPECT_EQ(out[i], static_cast<float>(i * n));
    kiln_tensor_destroy(y);
    kiln_tensor_destroy(x);
  }
}

// "rows * 2" follows from the input's rows: the runtime sizes the output
// by it and checks an output the caller passes against it.
TEST_F(FakeArtifactTest, ComputesDimensionsFromTheInputs) {
  int32_t flatten = -1;
  ASSERT_EQ(kiln_artifact_find_entry(artifact, "flatten", &flatten), KILN_OK);
  for (int64_t n : {1, 3, 8}) {
    kiln_tensor *x = rows(n);
    const kiln_tensor *inputs[] = {x};
    kiln_tensor *y = nullptr;
    ASSERT_EQ(kiln_session_run(session, flatten, inputs, 1, &y, 1), KILN_OK)
        << kiln_last_error();
    ASSERT_EQ(kiln_tensor_rank(y), 1);
    EXPECT_EQ(kiln_tensor_dims(y)[0], 2 * n);
    const float *out = static_cast<const float *>(kiln_tensor_data(y));
    for (int64_t i = 0; i < n * 2; ++i)
      EXPECT_EQ(out[i], static_cast<float>(i));
    kiln_tensor_destroy(y);
    kiln_tensor_destroy(x);
  }
  kiln_tensor *x = rows(3);
  const kiln_tensor *inputs[] = {x};
  int64_t five[] = {5};
  kiln_tensor *wrong = nullptr;
  ASSERT_EQ(kiln_tensor_create(KILN_DTYPE_F32, 1, five, &wrong), KILN_OK);
  EXPECT_EQ(kiln_session_run(session, flatten, inputs, 1, &wrong, 1),
            KILN_ERROR_SHAPE_MISMATCH);
  EXPECT_STREQ(kiln_last_error(),
               "flatten: output 'y' dimension 0 ('rows * 2') is 5, but the "
               "inputs make it 6");
  kiln_tensor_destroy(wrong);
  kiln_tensor_destroy(x);
}

// ones's "rows" is its input's element 1: checked against the range like a
// shape's, sizing the output.
TEST_F(FakeArtifactTest, TakesADimensionFromAnInputsValue) {
  int32_t ones = -1;
  ASSERT_EQ(kiln_artifact_find_entry(artifact, "ones", &ones), KILN_OK);
  int64_t two[] = {2};
  kiln_tensor *shape = nullptr;
  ASSERT_EQ(kiln_tensor_create(KILN_DTYPE_I64, 1, two, &shape), KILN_OK);
  int64_t *value = static_cast<int64_t *>(kiln_tensor_data(shape));
  const kiln_tensor *inputs[] = {shape};
  for (int64_t n : {1, 5, 8}) {
    value[0] = 100; // not a dimension
    value[1] = n;
    kiln_tensor *y = nullptr;
    ASSERT_EQ(kiln_session_run(session, ones, inputs, 1, &y, 1), KILN_OK)
        << kiln_last_error();
    ASSERT_EQ(kiln_tensor_rank(y), 2);
    EXPECT_EQ(kiln_tensor_dims(y)[0], n);
    const float *out = static_cast<const float *>(kiln_tensor_data(y));
    for (int64_t i = 0; i < n * 2; ++i)
      EXPECT_EQ(out[i], 1.0f);
    kiln_tensor_destroy(y);
  }
  for (int64_t n : {0, 9, -1}) {
    value[1] = n;
    kiln_tensor *y = nullptr;
    EXPECT_EQ(kiln_session_run(session, ones, inputs, 1, &y, 1),
              KILN_ERROR_SHAPE_MISMATCH);
    EXPECT_EQ(std::string(kiln_last_error()),
              "ones: input 'shape' element 1 ('rows') is " + std::to_string(n) +
                  ", outside the range 1..8 it was compiled for");
    EXPECT_EQ(y, nullptr);
  }
  // An output the caller passes must agree with the value.
  value[1] = 3;
  kiln_tensor *wrong = rows(4);
  EXPECT_EQ(kiln_session_run(session, ones, inputs, 1, &wrong, 1),
            KILN_ERROR_SHAPE_MISMATCH);
  EXPECT_STREQ(kiln_last_error(), "ones: output 'y' dimension 0 ('rows') is "
                                  "4, but 'rows' is 3 in an earlier tensor");
  kiln_tensor_destroy(wrong);
  kiln_tensor_destroy(shape);
}

TEST_F(FakeArtifactTest, ChecksDimensionsAgainstTheirRange) {
  kiln_tensor *x = rows(9);
  const kiln_tensor *inputs[] = {x};
  kiln_tensor *y = nullptr;
  EXPECT_EQ(kiln_session_run(session, scale, inputs, 1, &y, 1),
            KILN_ERROR_SHAPE_MISMATCH);
  EXPECT_STREQ(kiln_last_error(),
               "scale: input 'x' dimension 0 ('rows') is 9, outside the "
               "range 1..8 it was compiled for");
  EXPECT_EQ(y, nullptr);
  kiln_tensor_destroy(x);

  // A dimension has one size throughout a call.
  x = rows(3);
  kiln_tensor *wrong = rows(4);
  inputs[0] = x;
  EXPECT_EQ(kiln_session_run(session, scale, inputs, 1, &wrong, 1),
            KILN_ERROR_SHAPE_MISMATCH);
  EXPECT_STREQ(kiln_last_error(),
               "scale: output 'y' dimension 0 ('rows') is 4, but 'rows' is "
               "3 in an earlier tensor");
  kiln_tensor_destroy(wrong);

  int64_t bad[] = {3, 5};
  kiln_tensor *wide = nullptr;
  ASSERT_EQ(kiln_tensor_create(KILN_DTYPE_F32, 2, bad, &wide), KILN_OK);
  inputs[0] = wide;
  EXPECT_EQ(kiln_session_run(session, scale, inputs, 1, &y, 1),
            KILN_ERROR_SHAPE_MISMATCH);
  EXPECT_STREQ(kiln_last_error(),
               "scale: input 'x' must have shape [rows, 2], got [3, 5]");
  kiln_tensor_destroy(wide);
  kiln_tensor_destroy(x);
}

TEST_F(FakeArtifactTest, StatePersistsAcrossEntriesAndResets) {
  EXPECT_EQ(calls(), 100) << "state starts from the artifact's initial value";
  kiln_tensor *x = rows(2);
  const kiln_tensor *inputs[] = {x};
  for (int i = 0; i < 3; ++i) {
    kiln_tensor *y = nullptr;
    ASSERT_EQ(kiln_session_run(session, scale, inputs, 1, &y, 1), KILN_OK);
    kiln_tensor_destroy(y);
  }
  EXPECT_EQ(calls(), 103);

  // Each session has its own state.
  kiln_session *other = nullptr;
  ASSERT_EQ(kiln_session_create(artifact, &other), KILN_OK);
  kiln_tensor *n = nullptr;
  ASSERT_EQ(kiln_session_run(other, count, nullptr, 0, &n, 1), KILN_OK);
  EXPECT_EQ(*static_cast<int64_t *>(kiln_tensor_data(n)), 100);
  kiln_tensor_destroy(n);
  kiln_session_destroy(other);

  ASSERT_EQ(kiln_session_reset(session), KILN_OK);
  EXPECT_EQ(calls(), 100);
  EXPECT_EQ(kiln_session_reset(nullptr), KILN_ERROR_INVALID_ARGUMENT);
  kiln_tensor_destroy(x);
}

/// Opening fake artifact `which` fails with a message containing `expected`.
void expectRefused(int which, const std::string &expected) {
  std::string path = fakePath(which);
  ASSERT_FALSE(path.empty());
  kiln_artifact *artifact = nullptr;
  EXPECT_EQ(kiln_artifact_open(path.c_str(), &artifact),
            KILN_ERROR_INCOMPATIBLE);
  EXPECT_EQ(artifact, nullptr);
  EXPECT_NE(std::string(kiln_last_error()).find(expected), std::string::npos)
      << kiln_last_error();
}

// Sub-byte and narrow integer tensors: i8 and packed i4 in, i32 out, at a
// call's number of rows (an odd element count leaves half a byte).
TEST_F(FakeArtifactTest, NarrowAndPackedIntegers) {
  int32_t widen = -1;
  ASSERT_EQ(kiln_artifact_find_entry(artifact, "widen", &widen), KILN_OK);
  int64_t dims[] = {3, 2};
  kiln_tensor *a = nullptr, *b = nullptr;
  ASSERT_EQ(kiln_tensor_create(KILN_DTYPE_I8, 2, dims, &a), KILN_OK);
  ASSERT_EQ(kiln_tensor_create(KILN_DTYPE_I4, 2, dims, &b), KILN_OK);
  EXPECT_EQ(kiln_tensor_byte_size(a), 6u);
  EXPECT_EQ(kiln_tensor_byte_size(b), 3u);
  const int8_t aValues[] = {-128, 127, 5, -5, 0, 100};
  const int bValues[] = {-8, 7, -1, 1, 0, -3};
  std::memcpy(kiln_tensor_data(a), aValues, sizeof(aValues));
  auto *packed = static_cast<uint8_t *>(kiln_tensor_data(b));
  for (int i = 0; i < 6; ++i)
    packed[i / 2] |= static_cast<uint8_t>((bValues[i] & 0xf) << (i % 2 * 4));
  const kiln_tensor *inputs[] = {a, b};
  kiln_tensor *c = nullptr;
  ASSERT_EQ(kiln_session_run(session, widen, inputs, 2, &c, 1), KILN_OK)
      << kiln_last_error();
  ASSERT_EQ(kiln_tensor_dtype(c), KILN_DTYPE_I32);
  const int32_t *cValues = static_cast<const int32_t *>(kiln_tensor_data(c));
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(cValues[i], aValues[i] + bValues[i]) << i;
  kiln_tensor_destroy(c);

  // The int8 input where the int4 one belongs is named by dtype.
  const kiln_tensor *swapped[] = {a, a};
  EXPECT_EQ(kiln_session_run(session, widen, swapped, 2, &c, 1),
            KILN_ERROR_DTYPE_MISMATCH);
  EXPECT_NE(std::string(kiln_last_error()).find("int4"), std::string::npos)
      << kiln_last_error();
  kiln_tensor_destroy(a);
  kiln_tensor_destroy(b);
}

TEST(FakeArtifactRefused, AnOlderAbiIsNamed) {
  expectRefused(1, "was compiled for Kiln ABI version 2, this runtime "
                   "supports 3: compile it again");
}

TEST(FakeArtifactRefused, TwoEntriesWithOneName) {
  expectRefused(2, "entry 'scale': two entry points have this name");
}

TEST(FakeArtifactRefused, AMissingErrorMessage) {
  expectRefused(3, "entry 'scale': malformed error table");
}

TEST(FakeArtifactRefused, AnUnknownDimension) {
  expectRefused(4, "entry 'scale' input 'x' names dimension #5, which the "
                   "artifact does not have");
}

TEST(FakeArtifactRefused, AComputedDimensionReadingAComputedOne) {
  expectRefused(8, "dimension 'rows * 2' has a malformed computation");
}

TEST(FakeArtifactRefused, AValueDimensionOfANonInt64Input) {
  expectRefused(9, "entry 'ones' input 'shape' sets a dimension but is not a "
                   "fixed-length int64 vector");
}

// Entries as long as before the value dims were appended still open; their
// dims come from shapes alone.
TEST(FakeArtifact, OpensEntriesFromBeforeValueDims) {
  kiln_artifact *artifact = nullptr;
  ASSERT_EQ(kiln_artifact_open(fakePath(10).c_str(), &artifact), KILN_OK)
      << kiln_last_error();
  EXPECT_EQ(kiln_artifact_num_entries(artifact), 1);
  kiln_artifact_close(artifact);
}

TEST(FakeArtifactRefused, ACpuFeatureTheRuntimeCannotCheck) {
  expectRefused(5, "needs the CPU feature 'no-such-feature', which this "
                   "runtime cannot check");
}

#if defined(__x86_64__)
TEST(FakeArtifactRefused, ACpuFeatureThisCpuLacks) {
  // The first feature of the list this CPU lacks, asked of the compiler's
  // own builtin; every x86 CPU lacks SSE4a or AMX.
  std::string lacking;
#define FIND_LACKING(name)                                                     \
  if (lacking.empty() && !__builtin_cpu_supports(name))                        \
    lacking = name;
  KILN_ABI_X86_FEATURES(FIND_LACKING)
#undef FIND_LACKING
  ASSERT_FALSE(lacking.empty());
  expectRefused(7, "needs the CPU feature '" + lacking +
                       "', which this CPU lacks: compile it for this CPU "
                       "(--target-cpu)");
}
#endif

TEST(FakeArtifactFeatures, NoneNeededOrRecorded) {
  for (int which : {0, 6}) {
    kiln_artifact *artifact = nullptr;
    ASSERT_EQ(kiln_artifact_open(fakePath(which).c_str(), &artifact), KILN_OK)
        << kiln_last_error();
    EXPECT_STREQ(kiln_artifact_cpu_features(artifact), "");
    kiln_artifact_close(artifact);
  }
}

} // namespace
