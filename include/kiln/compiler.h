/*===- kiln/compiler.h - Kiln's compiler as a C library --------------------===*
 *
 * Compiles ONNX models into artifacts (shared libraries that the runtime in
 * kiln/runtime.h loads and runs), from a file or from memory, into a file
 * or into memory:
 *
 *   kiln_compiler_options *options = kiln_compiler_options_create();
 *   kiln_compiler_options_set_dim(options, "seq", 1, 512);
 *   kiln_compiler_options_set_diagnostic_callback(options, on_diagnostic, ctx);
 *   if (kiln_compile_file("model.onnx", "model.so", options) != KILN_COMPILE_OK)
 *     ... on_diagnostic has seen the errors ...
 *   kiln_compiler_options_destroy(options);
 *
 * Every problem with the model (a corrupt file, an unsupported op, a shape
 * that doesn't fit) is a diagnostic naming the file and the ONNX node, and
 * a KILN_COMPILE_FAILED status; no output file is left behind. Without a
 * callback, diagnostics are printed to stderr, one line each.
 *
 * Threads: each compile has its own compiler context, so compiles may run
 * on several threads at once; an options object may be shared by compiles
 * but not changed while one uses it. Callbacks run on the compiling thread.
 *
 * Strings are UTF-8 and NUL-terminated. Nothing here keeps a pointer the
 * caller passed after the call returns.
 *===----------------------------------------------------------------------===*/
#ifndef KILN_COMPILER_H
#define KILN_COMPILER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this API; kiln_compiler_api_version() returns the
 * library's. */
#define KILN_COMPILER_API_VERSION 5

typedef enum kiln_compile_status {
  KILN_COMPILE_OK = 0,
  /* A NULL pointer or a value out of range was passed; nothing was done. */
  KILN_COMPILE_INVALID_ARGUMENT = 1,
  /* The compile failed: the diagnostics say why. */
  KILN_COMPILE_FAILED = 2,
} kiln_compile_status;

typedef enum kiln_diagnostic_severity {
  KILN_DIAGNOSTIC_ERROR = 0,
  KILN_DIAGNOSTIC_WARNING = 1,
  KILN_DIAGNOSTIC_NOTE = 2,
  KILN_DIAGNOSTIC_REMARK = 3,
} kiln_diagnostic_severity;

/* One diagnostic. Its strings are valid during the callback only. */
typedef struct kiln_diagnostic {
  /* sizeof(kiln_diagnostic) in the library that made it: fields are only
   * ever added at the end. */
  size_t size;
  kiln_diagnostic_severity severity;
  /* One line of text. */
  const char *message;
  /* The model file, or the name given for a model in memory; "" if none. */
  const char *file;
  /* The ONNX node the diagnostic is at; "" if none. */
  const char *node;
  /* Position in a text input; 0 if none. */
  uint32_t line;
  uint32_t column;
} kiln_diagnostic;

typedef void (*kiln_diagnostic_callback)(const kiln_diagnostic *diagnostic,
                                         void *user_data);

/* "major.minor.patch" of the library. */
const char *kiln_compiler_version(void);
/* KILN_COMPILER_API_VERSION of the library. */
int32_t kiln_compiler_api_version(void);

/*===----------------------------------------------------------------------===*
 * Options. Defaults: -O2, the compiling machine's CPU, every input
 * dimension as the model gives it, diagnostics to stderr.
 *===----------------------------------------------------------------------===*/
typedef struct kiln_compiler_options kiln_compiler_options;

/* NULL if out of memory. */
kiln_compiler_options *kiln_compiler_options_create(void);
void kiln_compiler_options_destroy(kiln_compiler_options *options);

/* 0 (the reference path, none of Kiln's optimizations) to 3. */
kiln_compile_status
kiln_compiler_options_set_opt_level(kiln_compiler_options *options,
                                    int32_t level);
/* How a compile quantizes a float model's products (API version 2). */
typedef enum kiln_quantization {
  KILN_QUANTIZE_NONE = 0,
  /* Products with constant weights: int8 weights (7 bits, a scale per
   * output column), the other operand quantized row by row at run time. */
  KILN_QUANTIZE_INT8_DYNAMIC = 1,
  /* Products with constant weights: 4-bit weights, a scale and zero point
   * per block of 32 rows of a column, the other operand quantized row by
   * row at run time (API version 3). */
  KILN_QUANTIZE_INT4_WEIGHT = 2,
  /* As KILN_QUANTIZE_INT8_DYNAMIC with each product's input quantized by a
   * scale and zero point, and smoothed per column (SmoothQuant), as chosen
   * on calibration inputs (needs kiln_compiler_options_set_calibration;
   * API version 3). */
  KILN_QUANTIZE_INT8_STATIC = 3,
} kiln_quantization;

/* One of kiln_quantization; default KILN_QUANTIZE_NONE. Applies at every
 * -O level: it changes what the model computes (-O0 runs it on plain loops). */
kiln_compile_status
kiln_compiler_options_set_quantization(kiln_compiler_options *options,
                                       int32_t quantization);
/* Where to write the quantization report (JSON: every product with constant
 * weights, its precision, scales and weight error; with calibration, each
 * product's measured error and the compiled model's error against the
 * float model on the calibration inputs), written with the output; NULL
 * or "" for none (API version 2). */
kiln_compile_status
kiln_compiler_options_set_quantization_report(kiln_compiler_options *options,
                                              const char *path);
/* Calibration inputs for the quantization (API version 3): `dir` holds
 * folders of input_0.pb, input_1.pb, ... (ONNX test-data layout) or those
 * files; the float model runs on them at compile time and each product's
 * error is measured on what flows into it (the report's calibration_error).
 * Products whose relative RMS output error exceeds `quality_budget` stay in
 * float; 0 sets no limit. NULL or "" for no calibration. */
kiln_compile_status
kiln_compiler_options_set_calibration(kiln_compiler_options *options,
                                      const char *dir, double quality_budget);
/* An LLVM CPU name ("znver4", "x86-64-v3"); "host" is the machine
 * compiling. An unknown name fails the compile with a diagnostic. */
kiln_compile_status
kiln_compiler_options_set_target_cpu(kiln_compiler_options *options,
                                     const char *cpu);
/* Fixes the named dimension `symbol` (an ONNX dim_param) to one size
 * (min == max), or keeps it dynamic within [min, max]: buffers are planned
 * for max and each call's size is checked against the range. */
kiln_compile_status kiln_compiler_options_set_dim(kiln_compiler_options *options,
                                                  const char *symbol,
                                                  int64_t min, int64_t max);
/* Fixes every dimension of the graph input `input`. */
kiln_compile_status
kiln_compiler_options_set_input_shape(kiln_compiler_options *options,
                                      const char *input, const int64_t *dims,
                                      size_t rank);
/* The largest tensor, in bytes, a model may declare or compute (graph
 * inputs, initializers, external data, every node's results); a model past
 * it fails to compile before anything is allocated for it. Default 4 GiB;
 * 0 is an invalid argument (API version 4). */
kiln_compile_status
kiln_compiler_options_set_max_tensor_bytes(kiln_compiler_options *options,
                                           uint64_t bytes);
/* The most nodes a model may have, its subgraphs' included (default
 * 1000000), and how deep its subgraphs may nest (default 32, at most 256);
 * a model past either fails to compile before libonnx or the importer
 * reads it. A max_nodes of 0 or a max_depth past 256 is an invalid argument
 * (API version 5). */
kiln_compile_status
kiln_compiler_options_set_graph_limits(kiln_compiler_options *options,
                                       uint64_t max_nodes, uint32_t max_depth);
/* Where diagnostics go; a NULL callback restores printing to stderr. */
void kiln_compiler_options_set_diagnostic_callback(
    kiln_compiler_options *options, kiln_diagnostic_callback callback,
    void *user_data);

/*===----------------------------------------------------------------------===*
 * Compiling. `options` may be NULL for the defaults.
 *===----------------------------------------------------------------------===*/

/* Compiles the ONNX model at `model_path` (its external data read from
 * files in its folder) into the artifact `artifact_path`, which appears
 * whole or not at all. */
kiln_compile_status kiln_compile_file(const char *model_path,
                                      const char *artifact_path,
                                      const kiln_compiler_options *options);

/* Compiles the ONNX model in `model` (`model_size` bytes, called
 * `model_name` in diagnostics; may be NULL) into an artifact in memory:
 * on success *artifact points to *artifact_size bytes that the caller
 * releases with kiln_compiler_free (write them to a file to load them).
 * External data is read from files inside `external_data_dir`; NULL: a
 * model with external data fails. */
kiln_compile_status kiln_compile_buffer(const void *model, size_t model_size,
                                        const char *model_name,
                                        const char *external_data_dir,
                                        const kiln_compiler_options *options,
                                        void **artifact, size_t *artifact_size);

/* Releases an artifact kiln_compile_buffer returned; NULL is accepted. */
void kiln_compiler_free(void *artifact);

#ifdef __cplusplus
}
#endif

#endif /* KILN_COMPILER_H */
