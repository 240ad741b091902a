/*===- artifact.c - loading artifacts and reading their signatures --------===*/
#include "internal.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Every table of the descriptor is checked once here, so the rest of the
 * runtime can trust it: an artifact is trusted code (opening it runs its
 * initializers), but a damaged or mismatched one should fail here, clearly,
 * rather than in the middle of a call. */
static kiln_status malformed(const char *path, const char *what,
                             const char *entry) {
  return kiln_fail(KILN_ERROR_INCOMPATIBLE, "%s: %s%s%s%s", path,
                   entry ? "entry '" : "", entry ? entry : "",
                   entry ? "': " : "", what);
}

/* Refuses a file the dynamic loader would map past its end: a truncated
 * shared library crashes inside dlopen, before any error can be returned.
 * Checked: a regular file, a 64-bit ELF shared object of this machine's
 * byte order, and program headers, segments and section headers inside it.
 */
static kiln_status check_elf_file(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return kiln_fail(KILN_ERROR_IO, "cannot load artifact: %s: %s", path,
                     strerror(errno));
  struct stat info;
  Elf64_Ehdr header;
  const char *problem = NULL;
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode))
    problem = "not a regular file";
  else if (pread(fd, &header, sizeof header, 0) != (ssize_t)sizeof header ||
           memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
           header.e_ident[EI_CLASS] != ELFCLASS64 ||
           header.e_ident[EI_DATA] != (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
                                           ? ELFDATA2LSB
                                           : ELFDATA2MSB) ||
           header.e_type != ET_DYN)
    problem = "not a 64-bit ELF shared library";
  uint64_t size = (uint64_t)info.st_size;
  if (!problem &&
      (header.e_phentsize != sizeof(Elf64_Phdr) || header.e_phoff > size ||
       (uint64_t)header.e_phnum * sizeof(Elf64_Phdr) > size - header.e_phoff ||
       header.e_shoff > size ||
       (uint64_t)header.e_shnum * header.e_shentsize > size - header.e_shoff))
    problem = "truncated or corrupt (its headers lie outside the file)";
  for (uint16_t i = 0; !problem && i < header.e_phnum; ++i) {
    Elf64_Phdr segment;
    if (pread(fd, &segment, sizeof segment,
              (off_t)(header.e_phoff + i * sizeof segment)) !=
            (ssize_t)sizeof segment ||
        segment.p_offset > size || segment.p_filesz > size - segment.p_offset)
      problem = "truncated or corrupt (a segment lies outside the file)";
  }
  close(fd);
  if (problem)
    return kiln_fail(KILN_ERROR_INCOMPATIBLE, "cannot load artifact: %s: %s",
                     path, problem);
  return KILN_OK;
}

/* 1 if this CPU has `name` (`length` bytes, one of KILN_ABI_X86_FEATURES),
 * 0 if it lacks it, -1 if this runtime cannot tell. */
static int cpu_has_feature(const char *name, size_t length) {
#if defined(__x86_64__)
  __builtin_cpu_init();
#define KILN_CHECK_FEATURE(feature)                                            \
  if (length == sizeof(feature) - 1 && strncmp(name, feature, length) == 0)    \
    return __builtin_cpu_supports(feature) ? 1 : 0;
  KILN_ABI_X86_FEATURES(KILN_CHECK_FEATURE)
#undef KILN_CHECK_FEATURE
#else
  (void)name;
  (void)length;
#endif
  return -1;
}

/* Refuses code that would stop on an illegal instruction. */
static kiln_status check_cpu_features(const char *path, const char *features) {
  for (const char *name = features; name && *name;) {
    size_t length = strcspn(name, ",");
    int has = cpu_has_feature(name, length);
    if (has < 0)
      return kiln_fail(KILN_ERROR_INCOMPATIBLE,
                       "%s needs the CPU feature '%.*s', which this runtime "
                       "cannot check",
                       path, (int)length, name);
    if (has == 0)
      return kiln_fail(KILN_ERROR_INCOMPATIBLE,
                       "%s needs the CPU feature '%.*s', which this CPU "
                       "lacks: compile it for this CPU (--target-cpu)",
                       path, (int)length, name);
    name += length;
    if (*name == ',')
      ++name;
  }
  return KILN_OK;
}

/* cpu_features, or NULL in a version 3 descriptor from before it. */
static const char *descriptor_cpu_features(const kiln_abi_artifact *desc) {
  return desc->size > offsetof(kiln_abi_artifact, cpu_features)
             ? desc->cpu_features
             : NULL;
}

const int64_t *kiln_descriptor_dim_expr(const kiln_abi_artifact *desc,
                                        uint32_t k) {
  if (desc->size <= offsetof(kiln_abi_artifact, dim_exprs) || !desc->dim_exprs)
    return NULL;
  return desc->dim_exprs[k];
}

/* The most (operation, operand) pairs a dimension's program may take. */
#define MAX_EXPR_LENGTH 1024

/* Whether dimension k's program is well formed: known operations, reads of
 * dimensions the inputs set, a stack within its bound, one value at END. */
static int valid_dim_expr(const kiln_abi_artifact *desc, const int64_t *expr) {
  int depth = 0;
  for (int i = 0; i < MAX_EXPR_LENGTH; ++i, expr += 2) {
    switch (expr[0]) {
    case KILN_ABI_EXPR_END:
      return depth == 1;
    case KILN_ABI_EXPR_DIM:
      if (expr[1] < 0 || expr[1] >= (int64_t)desc->num_dims ||
          kiln_descriptor_dim_expr(desc, (uint32_t)expr[1]) ||
          ++depth > KILN_ABI_EXPR_MAX_DEPTH)
        return 0;
      break;
    case KILN_ABI_EXPR_CONST:
      if (++depth > KILN_ABI_EXPR_MAX_DEPTH)
        return 0;
      break;
    case KILN_ABI_EXPR_ADD:
    case KILN_ABI_EXPR_MUL:
    case KILN_ABI_EXPR_FLOORDIV:
    case KILN_ABI_EXPR_CEILDIV:
    case KILN_ABI_EXPR_MOD:
      if (--depth < 1)
        return 0;
      break;
    default:
      return 0;
    }
  }
  return 0;
}

/* Divisions rounding down and up, and the remainder of the first; none
 * overflows for b != 0 other than INT64_MIN / -1. */
static int64_t floor_divide(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static int64_t ceil_divide(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) == (b < 0))) ? q + 1 : q;
}

static int64_t floor_modulo(int64_t a, int64_t b) {
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

int kiln_evaluate_dim_expr(const int64_t *expr, const int64_t *dim_values,
                           int64_t *value) {
  int64_t stack[KILN_ABI_EXPR_MAX_DEPTH];
  int depth = 0;
  for (;; expr += 2) {
    if (expr[0] == KILN_ABI_EXPR_END) {
      *value = stack[0];
      return 1;
    }
    if (expr[0] == KILN_ABI_EXPR_CONST || expr[0] == KILN_ABI_EXPR_DIM) {
      int64_t v =
          expr[0] == KILN_ABI_EXPR_CONST ? expr[1] : dim_values[expr[1]];
      if (v < 0 && expr[0] == KILN_ABI_EXPR_DIM)
        return 0;
      stack[depth++] = v;
      continue;
    }
    int64_t b = stack[--depth], a = stack[depth - 1], r;
    switch (expr[0]) {
    case KILN_ABI_EXPR_ADD:
      if (__builtin_add_overflow(a, b, &r))
        return -1;
      break;
    case KILN_ABI_EXPR_MUL:
      if (__builtin_mul_overflow(a, b, &r))
        return -1;
      break;
    default:
      if (b == 0 || (a == INT64_MIN && b == -1))
        return -1;
      r = expr[0] == KILN_ABI_EXPR_CEILDIV ? ceil_divide(a, b)
          : expr[0] == KILN_ABI_EXPR_MOD   ? floor_modulo(a, b)
                                           : floor_divide(a, b);
      break;
    }
    stack[depth - 1] = r;
  }
}

static kiln_status validate_tensors(const char *path,
                                    const kiln_abi_artifact *desc,
                                    const char *entry, const char *kind,
                                    int32_t count,
                                    const kiln_abi_tensor *tensors) {
  if (count < 0 || (count > 0 && !tensors))
    return malformed(path, "malformed tensor table", entry);
  for (int32_t i = 0; i < count; ++i) {
    const kiln_abi_tensor *t = &tensors[i];
    size_t element_size = kiln_element_bytes_rounded_up((kiln_dtype)t->dtype);
    if (!t->name || !kiln_dtype_bits((kiln_dtype)t->dtype) || t->rank < 0 ||
        t->rank > KILN_MAX_RANK || (t->rank > 0 && !t->dims))
      return kiln_fail(KILN_ERROR_INCOMPATIBLE,
                       "%s: entry '%s' %s #%d has an unsupported dtype or "
                       "shape",
                       path, entry, kind, i);
    /* The largest shape the tensor can take must be addressable. */
    int64_t largest[KILN_MAX_RANK];
    for (int32_t d = 0; d < t->rank; ++d) {
      int64_t dim = t->dims[d];
      if (dim < 0 && KILN_ABI_DIM_INDEX(dim) >= (int64_t)desc->num_dims)
        return kiln_fail(KILN_ERROR_INCOMPATIBLE,
                         "%s: entry '%s' %s '%s' names dimension #%lld, "
                         "which the artifact does not have",
                         path, entry, kind, t->name,
                         (long long)KILN_ABI_DIM_INDEX(dim));
      if (dim < 0 && strcmp(kind, "input") == 0 &&
          kiln_descriptor_dim_expr(desc, (uint32_t)KILN_ABI_DIM_INDEX(dim)))
        return kiln_fail(KILN_ERROR_INCOMPATIBLE,
                         "%s: entry '%s' input '%s' has a computed dimension",
                         path, entry, t->name);
      largest[d] = dim >= 0 ? dim : desc->dims[KILN_ABI_DIM_INDEX(dim)].max;
    }
    int ok = 0;
    kiln_checked_num_elements(t->rank, largest, element_size, &ok);
    if (!ok)
      return kiln_fail(KILN_ERROR_INCOMPATIBLE,
                       "%s: entry '%s' %s '%s' is too large", path, entry,
                       kind, t->name);
  }
  return KILN_OK;
}

/* Each dimension an input's value sets names an element of a fixed-length
 * int64 vector input and a dimension the inputs set. */
static kiln_status validate_value_dims(const char *path,
                                       const kiln_abi_artifact *desc,
                                       const kiln_abi_entry *entry) {
  int64_t count = kiln_descriptor_num_value_dims(desc, entry);
  if (count < 0 || count > KILN_MAX_VALUE_DIMS)
    return malformed(path, "malformed table of dimensions set by values",
                     entry->name);
  for (int64_t v = 0; v < count; ++v) {
    const kiln_abi_value_dim *value = &entry->value_dims[v];
    if (value->input < 0 || value->input >= entry->num_inputs ||
        value->dim < 0 || value->dim >= (int64_t)desc->num_dims ||
        kiln_descriptor_dim_expr(desc, (uint32_t)value->dim))
      return malformed(path, "malformed table of dimensions set by values",
                       entry->name);
    const kiln_abi_tensor *t = &entry->inputs[value->input];
    if (t->dtype != KILN_DTYPE_I64 || t->rank != 1 || t->dims[0] < 0 ||
        value->element < 0 || value->element >= t->dims[0])
      return kiln_fail(KILN_ERROR_INCOMPATIBLE,
                       "%s: entry '%s' input '%s' sets a dimension but is not "
                       "a fixed-length int64 vector of that many elements",
                       path, entry->name, t->name);
  }
  return KILN_OK;
}

kiln_status kiln_validate_descriptor(const char *path,
                                     const kiln_abi_artifact *desc) {
  if (!desc)
    return malformed(path, "the artifact has no descriptor", NULL);
  if (desc->abi_version != KILN_ABI_VERSION)
    return kiln_fail(KILN_ERROR_INCOMPATIBLE,
                     "%s: artifact ABI version %u, this runtime supports %d",
                     path, desc->abi_version, KILN_ABI_VERSION);
  if (desc->size < offsetof(kiln_abi_artifact, cpu_features) ||
      desc->entry_size < offsetof(kiln_abi_entry, num_value_dims))
    return malformed(path, "the descriptor is smaller than version 3's",
                     NULL);
  kiln_status features = check_cpu_features(path, descriptor_cpu_features(desc));
  if (features != KILN_OK)
    return features;
  if (desc->num_entries == 0 || !desc->entries)
    return malformed(path, "the artifact has no entry points", NULL);
  if (desc->num_dims > 0 && !desc->dims)
    return malformed(path, "malformed dimension table", NULL);
  for (uint32_t d = 0; d < desc->num_dims; ++d) {
    const kiln_abi_dim *dim = &desc->dims[d];
    if (!dim->name || !*dim->name || dim->min < 0 || dim->min > dim->max)
      return malformed(path, "malformed dimension table", NULL);
    const int64_t *expr = kiln_descriptor_dim_expr(desc, d);
    if (expr && !valid_dim_expr(desc, expr))
      return kiln_fail(KILN_ERROR_INCOMPATIBLE,
                       "%s: dimension '%s' has a malformed computation", path,
                       dim->name);
  }
  for (uint32_t e = 0; e < desc->num_entries; ++e) {
    const kiln_abi_entry *entry = kiln_descriptor_entry(desc, e);
    if (!entry->name || !*entry->name || !entry->fn)
      return kiln_fail(KILN_ERROR_INCOMPATIBLE, "%s: entry #%u is malformed",
                       path, e);
    for (uint32_t other = 0; other < e; ++other)
      if (strcmp(kiln_descriptor_entry(desc, other)->name, entry->name) == 0)
        return malformed(path, "two entry points have this name",
                         entry->name);
    if (entry->num_errors < 0 || (entry->num_errors > 0 && !entry->errors))
      return malformed(path, "malformed error table", entry->name);
    for (int32_t i = 0; i < entry->num_errors; ++i)
      if (!entry->errors[i])
        return malformed(path, "malformed error table", entry->name);
    kiln_status status =
        validate_tensors(path, desc, entry->name, "input", entry->num_inputs,
                         entry->inputs);
    if (status == KILN_OK)
      status = validate_tensors(path, desc, entry->name, "output",
                                entry->num_outputs, entry->outputs);
    if (status == KILN_OK)
      status = validate_value_dims(path, desc, entry);
    if (status != KILN_OK)
      return status;
  }
  return KILN_OK;
}

int64_t kiln_descriptor_num_value_dims(const kiln_abi_artifact *desc,
                                       const kiln_abi_entry *entry) {
  if (desc->entry_size <
          offsetof(kiln_abi_entry, value_dims) + sizeof(entry->value_dims) ||
      !entry->value_dims)
    return 0;
  return entry->num_value_dims;
}

const kiln_abi_entry *kiln_descriptor_entry(const kiln_abi_artifact *desc,
                                            uint32_t index) {
  /* Entries are entry_size apart, which a later minor version may grow. */
  return (const kiln_abi_entry *)((const char *)desc->entries +
                                  (size_t)index * desc->entry_size);
}

KILN_EXPORT kiln_status kiln_artifact_open(const char *path,
                                           kiln_artifact **out) {
  if (!out || !path)
    return kiln_fail(KILN_ERROR_INVALID_ARGUMENT,
                     "kiln_artifact_open: NULL argument");
  *out = NULL;
  /* dlopen searches the library path for names without a slash; an
   * artifact is always a file the caller names. */
  char *resolved = NULL;
  if (!strchr(path, '/')) {
    resolved = malloc(strlen(path) + 3);
    if (!resolved)
      return kiln_fail(KILN_ERROR_OUT_OF_MEMORY,
                       "kiln_artifact_open: out of memory");
    strcpy(resolved, "./");
    strcat(resolved, path);
  }
  kiln_status checked = check_elf_file(path);
  if (checked != KILN_OK) {
    free(resolved);
    return checked;
  }
  void *handle = dlopen(resolved ? resolved : path, RTLD_NOW | RTLD_LOCAL);
  free(resolved);
  if (!handle)
    return kiln_fail(KILN_ERROR_IO, "cannot load artifact: %s", dlerror());
  kiln_abi_artifact_fn get_descriptor;
  *(void **)&get_descriptor = dlsym(handle, KILN_ABI_ARTIFACT_SYMBOL);
  if (!get_descriptor) {
    /* Older entries took their arguments by position; calling one through
     * this version's call structure would be undefined. */
    int older = dlsym(handle, "kiln_artifact_v2")   ? 2
                : dlsym(handle, "kiln_artifact_v1") ? 1
                                                    : 0;
    dlclose(handle);
    if (older)
      return kiln_fail(KILN_ERROR_INCOMPATIBLE,
                       "%s was compiled for Kiln ABI version %d, this runtime "
                       "supports %d: compile it again",
                       path, older, KILN_ABI_VERSION);
    return kiln_fail(KILN_ERROR_INCOMPATIBLE,
                     "%s is not a Kiln artifact (no %s symbol)", path,
                     KILN_ABI_ARTIFACT_SYMBOL);
  }
  const kiln_abi_artifact *desc = get_descriptor();
  kiln_status status = kiln_validate_descriptor(path, desc);
  if (status != KILN_OK) {
    dlclose(handle);
    return status;
  }
  kiln_artifact *artifact = calloc(1, sizeof(*artifact));
  if (!artifact) {
    dlclose(handle);
    return kiln_fail(KILN_ERROR_OUT_OF_MEMORY,
                     "kiln_artifact_open: out of memory");
  }
  artifact->handle = handle;
  artifact->desc = desc;
  *out = artifact;
  return kiln_succeed();
}

KILN_EXPORT void kiln_artifact_close(kiln_artifact *artifact) {
  if (!artifact)
    return;
  dlclose(artifact->handle);
  free(artifact);
}

KILN_EXPORT const char *
kiln_artifact_cpu_features(const kiln_artifact *artifact) {
  const char *features =
      artifact ? descriptor_cpu_features(artifact->desc) : NULL;
  return features ? features : "";
}

KILN_EXPORT int32_t kiln_artifact_draft_tokens(const kiln_artifact *artifact) {
  if (!artifact ||
      artifact->desc->size <
          offsetof(kiln_abi_artifact, draft_tokens) + sizeof(int64_t))
    return 0;
  int64_t tokens = artifact->desc->draft_tokens;
  return tokens > 0 && tokens <= INT32_MAX ? (int32_t)tokens : 0;
}

KILN_EXPORT const char *kiln_artifact_producer(const kiln_artifact *artifact) {
  return artifact && artifact->desc->producer ? artifact->desc->producer : "";
}

KILN_EXPORT int32_t kiln_artifact_num_entries(const kiln_artifact *artifact) {
  return artifact ? (int32_t)artifact->desc->num_entries : 0;
}

const kiln_abi_entry *kiln_artifact_get_entry(const kiln_artifact *artifact,
                                              int32_t entry) {
  if (!artifact || entry < 0 || (uint32_t)entry >= artifact->desc->num_entries)
    return NULL;
  return kiln_descriptor_entry(artifact->desc, (uint32_t)entry);
}

KILN_EXPORT const char *kiln_artifact_entry_name(const kiln_artifact *artifact,
                                                 int32_t index) {
  const kiln_abi_entry *entry = kiln_artifact_get_entry(artifact, index);
  return entry ? entry->name : NULL;
}

KILN_EXPORT kiln_status kiln_artifact_find_entry(const kiln_artifact *artifact,
                                                 const char *name,
                                                 int32_t *index) {
  if (!artifact || !name || !index)
    return kiln_fail(KILN_ERROR_INVALID_ARGUMENT,
                     "kiln_artifact_find_entry: NULL argument");
  for (uint32_t e = 0; e < artifact->desc->num_entries; ++e) {
    if (strcmp(kiln_descriptor_entry(artifact->desc, e)->name, name) == 0) {
      *index = (int32_t)e;
      return kiln_succeed();
    }
  }
  return kiln_fail(KILN_ERROR_NOT_FOUND, "the artifact has no entry point '%s'",
                   name);
}

KILN_EXPORT int32_t kiln_entry_num_inputs(const kiln_artifact *artifact,
                                          int32_t entry) {
  const kiln_abi_entry *e = kiln_artifact_get_entry(artifact, entry);
  return e ? e->num_inputs : -1;
}

KILN_EXPORT int32_t kiln_entry_num_outputs(const kiln_artifact *artifact,
                                           int32_t entry) {
  const kiln_abi_entry *e = kiln_artifact_get_entry(artifact, entry);
  return e ? e->num_outputs : -1;
}

static kiln_status tensor_info(const kiln_artifact *artifact, int32_t entry,
                               int32_t index, int outputs,
                               kiln_tensor_info *info) {
  const kiln_abi_entry *e = kiln_artifact_get_entry(artifact, entry);
  if (!e || !info)
    return kiln_fail(KILN_ERROR_INVALID_ARGUMENT,
                     "no entry point #%d, or info is NULL", entry);
  int32_t count = outputs ? e->num_outputs : e->num_inputs;
  if (index < 0 || index >= count)
    return kiln_fail(KILN_ERROR_INVALID_ARGUMENT,
                     "entry '%s' has %d %s; index %d is out of range", e->name,
                     count, outputs ? "outputs" : "inputs", index);
  const kiln_abi_tensor *t = outputs ? &e->outputs[index] : &e->inputs[index];
  info->name = t->name;
  info->dtype = (kiln_dtype)t->dtype;
  info->rank = t->rank;
  info->dims = t->dims;
  return kiln_succeed();
}

KILN_EXPORT kiln_status kiln_entry_input_info(const kiln_artifact *artifact,
                                              int32_t entry, int32_t index,
                                              kiln_tensor_info *info) {
  return tensor_info(artifact, entry, index, 0, info);
}

KILN_EXPORT kiln_status kiln_entry_output_info(const kiln_artifact *artifact,
                                               int32_t entry, int32_t index,
                                               kiln_tensor_info *info) {
  return tensor_info(artifact, entry, index, 1, info);
}

KILN_EXPORT int32_t kiln_artifact_num_dims(const kiln_artifact *artifact) {
  return artifact ? (int32_t)artifact->desc->num_dims : 0;
}

KILN_EXPORT kiln_status kiln_artifact_dim_info(const kiln_artifact *artifact,
                                               int32_t index,
                                               kiln_dim_info *info) {
  if (!artifact || !info || index < 0 ||
      (uint32_t)index >= artifact->desc->num_dims)
    return kiln_fail(KILN_ERROR_INVALID_ARGUMENT,
                     "kiln_artifact_dim_info: no dimension #%d, or info is "
                     "NULL",
                     index);
  const kiln_abi_dim *dim = &artifact->desc->dims[index];
  info->name = dim->name;
  info->min = dim->min;
  info->max = dim->max;
  return kiln_succeed();
}
