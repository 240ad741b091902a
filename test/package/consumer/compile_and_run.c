/* compile_and_run MODEL INPUT EXPECTED WORKDIR
 *
 * Compiles MODEL in memory through the compiler's C API, loads the artifact
 * with the runtime, runs it on INPUT and compares the result with EXPECTED
 * (float32 TensorProto files); then checks that bad input fails cleanly:
 * an error status, a diagnostic through the callback, no artifact. */
#include "kiln/compiler.h"
#include "kiln/runtime.h"
#include "tensor_file.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct diagnostics_seen {
  int errors;
  char first_error[512];
} diagnostics_seen;

static void on_diagnostic(const kiln_diagnostic *diagnostic, void *user_data) {
  diagnostics_seen *seen = user_data;
  if (diagnostic->severity != KILN_DIAGNOSTIC_ERROR)
    return;
  if (seen->errors++ == 0)
    snprintf(seen->first_error, sizeof(seen->first_error), "%s: %s",
             diagnostic->file, diagnostic->message);
}

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s (%s)\n", __FILE__, __LINE__,   \
              #cond, kiln_last_error());                                       \
      return 1;                                                                \
    }                                                                          \
  } while (0)

static int write_file(const char *path, const void *bytes, size_t size) {
  FILE *file = fopen(path, "wb");
  if (!file)
    return -1;
  size_t written = fwrite(bytes, 1, size, file);
  return (fclose(file) == 0 && written == size) ? 0 : -1;
}

static int compile_and_run(const char *model_path, const char *input_path,
                           const char *expected_path, const char *workdir) {
  size_t model_size;
  void *model = read_whole_file(model_path, &model_size);
  CHECK(model);

  kiln_compiler_options *options = kiln_compiler_options_create();
  CHECK(options);
  CHECK(kiln_compiler_options_set_opt_level(options, 2) == KILN_COMPILE_OK);
  diagnostics_seen seen = {0};
  kiln_compiler_options_set_diagnostic_callback(options, on_diagnostic, &seen);

  void *artifact = NULL;
  size_t artifact_size = 0;
  kiln_compile_status status =
      kiln_compile_buffer(model, model_size, "model.onnx", NULL, options,
                          &artifact, &artifact_size);
  if (status != KILN_COMPILE_OK)
    fprintf(stderr, "compile failed: %s\n", seen.first_error);
  CHECK(status == KILN_COMPILE_OK && artifact && artifact_size > 0);
  CHECK(seen.errors == 0);

  /* The same model with no tensor allowed past 16 bytes fails, naming the
   * limit. */
  CHECK(kiln_compiler_options_set_max_tensor_bytes(options, 0) ==
        KILN_COMPILE_INVALID_ARGUMENT);
  CHECK(kiln_compiler_options_set_max_tensor_bytes(options, 16) ==
        KILN_COMPILE_OK);
  void *capped = NULL;
  size_t capped_size = 0;
  CHECK(kiln_compile_buffer(model, model_size, "model.onnx", NULL, options,
                            &capped, &capped_size) == KILN_COMPILE_FAILED);
  CHECK(capped == NULL && capped_size == 0 && seen.errors >= 1 &&
        strstr(seen.first_error, "--max-tensor-size"));
  printf("capped at 16 bytes: %s\n", seen.first_error);

  /* With tensors back to any size, a limit of one node fails (the bundled
   * model has more), naming the limit. */
  CHECK(kiln_compiler_options_set_max_tensor_bytes(options, UINT64_MAX) ==
        KILN_COMPILE_OK);
  CHECK(kiln_compiler_options_set_graph_limits(options, 0, 1) ==
        KILN_COMPILE_INVALID_ARGUMENT);
  CHECK(kiln_compiler_options_set_graph_limits(options, 1, 257) ==
        KILN_COMPILE_INVALID_ARGUMENT);
  CHECK(kiln_compiler_options_set_graph_limits(options, 1, 0) ==
        KILN_COMPILE_OK);
  seen.errors = 0;
  CHECK(kiln_compile_buffer(model, model_size, "model.onnx", NULL, options,
                            &capped, &capped_size) == KILN_COMPILE_FAILED);
  CHECK(capped == NULL && capped_size == 0 && seen.errors >= 1 &&
        strstr(seen.first_error, "--max-graph-nodes"));
  printf("capped at 1 node: %s\n", seen.first_error);
  free(model);
  kiln_compiler_options_destroy(options);

  char artifact_path[4096];
  snprintf(artifact_path, sizeof(artifact_path), "%s/model-c.so", workdir);
  CHECK(write_file(artifact_path, artifact, artifact_size) == 0);
  kiln_compiler_free(artifact);

  kiln_artifact *loaded = NULL;
  CHECK(kiln_artifact_open(artifact_path, &loaded) == KILN_OK);
  CHECK(kiln_artifact_num_entries(loaded) == 1);
  CHECK(kiln_entry_num_inputs(loaded, 0) == 1);
  CHECK(kiln_entry_num_outputs(loaded, 0) == 1);

  tensor_file input_file, expected;
  CHECK(tensor_file_read(input_path, &input_file) == 0);
  CHECK(tensor_file_read(expected_path, &expected) == 0);
  kiln_tensor *input = NULL;
  CHECK(kiln_tensor_create(KILN_DTYPE_F32, input_file.rank,
                           input_file.dims, &input) == KILN_OK);
  memcpy(kiln_tensor_data(input), input_file.data,
         input_file.num_elements * sizeof(float));

  kiln_session *session = NULL;
  CHECK(kiln_session_create(loaded, &session) == KILN_OK);
  kiln_tensor *output = NULL;
  const kiln_tensor *inputs[] = {input};
  CHECK(kiln_session_run(session, 0, inputs, 1, &output, 1) == KILN_OK);

  CHECK(kiln_tensor_rank(output) == expected.rank);
  CHECK(memcmp(kiln_tensor_dims(output), expected.dims,
               expected.rank * sizeof(int64_t)) == 0);
  /* The numpy reference of make_model.py, to fp32 rounding. */
  const double rtol = 1e-4, atol = 1e-5;
  const float *got = kiln_tensor_const_data(output);
  size_t mismatches = 0;
  for (size_t i = 0; i < expected.num_elements; ++i)
    if (!(fabs((double)got[i] - expected.data[i]) <=
          atol + rtol * fabs((double)expected.data[i])))
      ++mismatches;
  if (mismatches)
    fprintf(stderr, "%zu of %zu elements differ from %s\n", mismatches,
            expected.num_elements, expected_path);
  CHECK(mismatches == 0);

  kiln_tensor_destroy(output);
  kiln_tensor_destroy(input);
  kiln_session_destroy(session);
  kiln_artifact_close(loaded);
  tensor_file_free(&input_file);
  tensor_file_free(&expected);
  printf("compiled in memory (%zu bytes of artifact), ran and matched %s\n",
         artifact_size, expected_path);
  return 0;
}

static int bad_input_fails_cleanly(const char *workdir) {
  kiln_compiler_options *options = kiln_compiler_options_create();
  CHECK(options);
  CHECK(kiln_compiler_options_set_opt_level(options, 7) ==
        KILN_COMPILE_INVALID_ARGUMENT);
  CHECK(kiln_compiler_options_set_quantization(options, 9) ==
        KILN_COMPILE_INVALID_ARGUMENT);
  CHECK(kiln_compiler_options_set_quantization(
            options, KILN_QUANTIZE_INT4_WEIGHT) == KILN_COMPILE_OK);
  CHECK(kiln_compiler_options_set_quantization(
            options, KILN_QUANTIZE_INT8_STATIC) == KILN_COMPILE_OK);
  CHECK(kiln_compiler_options_set_quantization(
            options, KILN_QUANTIZE_INT8_DYNAMIC) == KILN_COMPILE_OK);
  /* A quality budget needs inputs to measure it on, and cannot be
   * negative. */
  CHECK(kiln_compiler_options_set_calibration(options, NULL, 0.05) ==
        KILN_COMPILE_INVALID_ARGUMENT);
  CHECK(kiln_compiler_options_set_calibration(options, workdir, -1) ==
        KILN_COMPILE_INVALID_ARGUMENT);
  diagnostics_seen seen = {0};
  kiln_compiler_options_set_diagnostic_callback(options, on_diagnostic, &seen);

  static const char garbage[] = "this is not an ONNX model";
  void *artifact = NULL;
  size_t artifact_size = 0;
  CHECK(kiln_compile_buffer(garbage, sizeof(garbage), "garbage.onnx", NULL,
                            options, &artifact, &artifact_size) ==
        KILN_COMPILE_FAILED);
  CHECK(artifact == NULL && artifact_size == 0);
  CHECK(seen.errors >= 1 && strstr(seen.first_error, "garbage.onnx"));
  printf("garbage model: %s\n", seen.first_error);

  char model_path[4096], artifact_path[4096], report_path[4096];
  snprintf(model_path, sizeof(model_path), "%s/garbage.onnx", workdir);
  snprintf(artifact_path, sizeof(artifact_path), "%s/garbage.so", workdir);
  snprintf(report_path, sizeof(report_path), "%s/garbage.json", workdir);
  CHECK(kiln_compiler_options_set_quantization_report(options, report_path) ==
        KILN_COMPILE_OK);
  CHECK(write_file(model_path, garbage, sizeof(garbage)) == 0);
  seen.errors = 0;
  CHECK(kiln_compile_file(model_path, artifact_path, options) ==
        KILN_COMPILE_FAILED);
  CHECK(seen.errors >= 1);
  CHECK(access(artifact_path, F_OK) != 0);
  CHECK(access(report_path, F_OK) != 0);

  CHECK(kiln_compile_buffer(NULL, 0, NULL, NULL, options, &artifact,
                            &artifact_size) == KILN_COMPILE_INVALID_ARGUMENT);
  kiln_compiler_options_destroy(options);
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s MODEL INPUT EXPECTED WORKDIR\n", argv[0]);
    return 2;
  }
  CHECK(kiln_compiler_api_version() == KILN_COMPILER_API_VERSION);
  printf("Kiln compiler %s\n", kiln_compiler_version());
  if (compile_and_run(argv[1], argv[2], argv[3], argv[4]))
    return 1;
  return bad_input_fails_cleanly(argv[4]);
}
