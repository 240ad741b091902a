#include "tensor_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *read_whole_file(const char *path, size_t *size) {
  FILE *file = fopen(path, "rb");
  if (!file) {
    fprintf(stderr, "cannot open %s\n", path);
    return NULL;
  }
  char *bytes = NULL;
  size_t used = 0, capacity = 0, got;
  do {
    if (used == capacity) {
      capacity = capacity ? 2 * capacity : 1 << 16;
      char *grown = realloc(bytes, capacity);
      if (!grown) {
        free(bytes);
        fclose(file);
        return NULL;
      }
      bytes = grown;
    }
    got = fread(bytes + used, 1, capacity - used, file);
    used += got;
  } while (got > 0);
  fclose(file);
  *size = used;
  return bytes;
}

static int read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  *v = 0;
  for (int shift = 0; shift < 64 && *p < end; shift += 7) {
    uint8_t byte = *(*p)++;
    *v |= (uint64_t)(byte & 0x7f) << shift;
    if (!(byte & 0x80))
      return 0;
  }
  return -1;
}

/* TensorProto fields: 1 dims (int64), 2 data_type, 4 float_data,
 * 9 raw_data; the others are skipped by wire type. */
int tensor_file_read(const char *path, tensor_file *out) {
  memset(out, 0, sizeof(*out));
  size_t size;
  uint8_t *bytes = read_whole_file(path, &size);
  if (!bytes)
    return -1;
  const uint8_t *p = bytes, *end = bytes + size;
  const uint8_t *payload = NULL;
  size_t payload_size = 0;
  uint64_t data_type = 0;
  int ok = 1;
  while (ok && p < end) {
    uint64_t key, value;
    if (read_varint(&p, end, &key)) {
      ok = 0;
      break;
    }
    unsigned field = (unsigned)(key >> 3), wire = (unsigned)(key & 7);
    if (wire == 0) {
      ok = !read_varint(&p, end, &value);
      if (field == 1 && ok && out->rank < 8)
        out->dims[out->rank++] = (int64_t)value;
      else if (field == 2)
        data_type = value;
    } else if (wire == 2) {
      ok = !read_varint(&p, end, &value) && value <= (uint64_t)(end - p);
      if (!ok)
        break;
      if (field == 1) {
        const uint8_t *q = p;
        while (ok && q < p + value && out->rank < 8) {
          uint64_t dim;
          ok = !read_varint(&q, p + value, &dim);
          out->dims[out->rank++] = (int64_t)dim;
        }
      } else if (field == 4 || field == 9) {
        payload = p;
        payload_size = (size_t)value;
      }
      p += value;
    } else if (wire == 5) {
      p += 4;
    } else if (wire == 1) {
      p += 8;
    } else {
      ok = 0;
    }
  }
  size_t count = 1;
  for (int32_t i = 0; i < out->rank; ++i)
    count *= (size_t)out->dims[i];
  if (!ok || p != end || data_type != 1 || payload_size != count * 4) {
    fprintf(stderr, "%s: not a float32 TensorProto this reader takes\n", path);
    free(bytes);
    return -1;
  }
  out->num_elements = count;
  out->data = malloc(payload_size ? payload_size : 1);
  if (out->data)
    memcpy(out->data, payload, payload_size);
  free(bytes);
  return out->data ? 0 : -1;
}

void tensor_file_free(tensor_file *tensor) {
  free(tensor->data);
  tensor->data = NULL;
}
