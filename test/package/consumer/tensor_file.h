/* Reads an ONNX TensorProto file of float32 data: the consumer parses the
 * few protobuf fields it needs itself, as a user without protobuf would. */
#ifndef TENSOR_FILE_H
#define TENSOR_FILE_H

#include <stddef.h>
#include <stdint.h>

typedef struct tensor_file {
  int32_t rank;
  int64_t dims[8];
  size_t num_elements;
  float *data;
} tensor_file;

/* 0 on success; otherwise prints why to stderr and returns -1. */
int tensor_file_read(const char *path, tensor_file *out);
void tensor_file_free(tensor_file *tensor);

/* The whole file in a malloc'd buffer; NULL (and a message) on failure. */
void *read_whole_file(const char *path, size_t *size);

#endif
