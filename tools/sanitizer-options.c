/*===- sanitizer-options.c - AddressSanitizer defaults of the tools -------===*
 *
 * Linked into the tools that use LLVM in a KILN_SANITIZE build. LLVM's
 * headers poison the unused parts of a BumpPtrAllocator's slabs in code
 * built with AddressSanitizer; Debian's libLLVM and libMLIR are built
 * without it and use the same slabs without unpoisoning them, which ASan
 * would report as use-after-poison. Turning off user poisoning keeps every
 * other check.
 *===----------------------------------------------------------------------===*/
const char *__asan_default_options(void) { return "allow_user_poisoning=0"; }
