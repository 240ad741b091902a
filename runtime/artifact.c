/*===- artifact.c - loading artifacts and reading their signatures --------===*/
#include "internal.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

/* Every table of the descriptor is checked once here, so the rest of the
 * runtime can trust it. */
static kiln_status validate_tensors(const char *path, const char *entry,
                                    const char *kind, int32_t count,
                                    const kiln_abi_tensor *tensors) {
  if (count < 0 || (count > 0 && !tensors))
    return kiln_fail(KILN_ERROR_INCOMPATIBLE,
                     "%s: entry '%s' has a malformed %s table", path, entry,
                     kind);
  for (int32_t i = 0; i < count; ++i) {
    const kiln_abi_tensor *t = &tensors[i];
    size_t element_size = kiln_dtype_size((kiln_dtype)t->dtype);
    int ok = 0;
    if (element_size)
      kiln_checked_num_elements(t->rank, t->dims, element_size, &ok);
    if (!t->name || !ok)
      return kiln_fail(
          KILN_ERROR_INCOMPATIBLE,
          "%s: entry '%s' %s #%d has an unsupported dtype or shape", path,
          entry, kind, i);
  }
  return KILN_OK;
}

static kiln_status validate(const char *path, const kiln_abi_artifact *desc) {
  if (!desc)
    return kiln_fail(KILN_ERROR_INCOMPATIBLE,
                     "%s: the artifact has no descriptor", path);
  if (desc->abi_version != KILN_ABI_VERSION)
    return kiln_fail(KILN_ERROR_INCOMPATIBLE,
                     "%s: artifact ABI version %u, this runtime supports %d",
                     path, desc->abi_version, KILN_ABI_VERSION);
  if (desc->num_entries == 0 || !desc->entries)
    return kiln_fail(KILN_ERROR_INCOMPATIBLE,
                     "%s: the artifact has no entry points", path);
  for (uint32_t e = 0; e < desc->num_entries; ++e) {
    const kiln_abi_entry *entry = &desc->entries[e];
    if (!entry->name || !entry->fn)
      return kiln_fail(KILN_ERROR_INCOMPATIBLE, "%s: entry #%u is malformed",
                       path, e);
    kiln_status status = validate_tensors(path, entry->name, "input",
                                          entry->num_inputs, entry->inputs);
    if (status == KILN_OK)
      status = validate_tensors(path, entry->name, "output", entry->num_outputs,
                                entry->outputs);
    if (status != KILN_OK)
      return status;
  }
  return KILN_OK;
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
  void *handle = dlopen(resolved ? resolved : path, RTLD_NOW | RTLD_LOCAL);
  free(resolved);
  if (!handle)
    return kiln_fail(KILN_ERROR_IO, "cannot load artifact: %s", dlerror());
  kiln_abi_artifact_fn get_descriptor;
  *(void **)&get_descriptor = dlsym(handle, KILN_ABI_ARTIFACT_SYMBOL);
  if (!get_descriptor) {
    /* Version 1 entries took no executor; calling one would be undefined. */
    int older = dlsym(handle, "kiln_artifact_v1") != NULL;
    dlclose(handle);
    if (older)
      return kiln_fail(KILN_ERROR_INCOMPATIBLE,
                       "%s was compiled for Kiln ABI version 1, this runtime "
                       "supports %d: compile it again",
                       path, KILN_ABI_VERSION);
    return kiln_fail(KILN_ERROR_INCOMPATIBLE,
                     "%s is not a Kiln artifact (no %s symbol)", path,
                     KILN_ABI_ARTIFACT_SYMBOL);
  }
  const kiln_abi_artifact *desc = get_descriptor();
  kiln_status status = validate(path, desc);
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
  return &artifact->desc->entries[entry];
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
    if (strcmp(artifact->desc->entries[e].name, name) == 0) {
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
