// RUN: kiln-opt %s | kiln-opt | FileCheck %s

// A module's target round-trips; features are optional, and a CPU target
// may carry the model its kernels are sized for.
// CHECK: module attributes {kiln.target = #kiln.target<cpu, "x86_64-pc-linux-gnu", "znver4", "-avx512f,-avx512vl">}
module attributes {kiln.target = #kiln.target<cpu, "x86_64-pc-linux-gnu", "znver4", "-avx512f,-avx512vl">} {
  // CHECK: kiln.other = #kiln.target<cuda, "nvptx64-nvidia-cuda", "sm_90">
  func.func private @f() attributes {kiln.other = #kiln.target<cuda, "nvptx64-nvidia-cuda", "sm_90">}
  // CHECK: kiln.sized = #kiln.target<cpu, "x86_64-pc-linux-gnu", "emeraldrapids" sized for <fma_units = 2, fma_latency = 4, l1 = 49152, l2 = 2097152, l3 = 314572800>>
  func.func private @g() attributes {kiln.sized = #kiln.target<cpu, "x86_64-pc-linux-gnu", "emeraldrapids" sized for <fma_units = 2, fma_latency = 4, l1 = 49152, l2 = 2097152, l3 = 314572800>>}
  // CHECK: kiln.both = #kiln.target<cpu, "x86_64-pc-linux-gnu", "znver4", "-avx512f" sized for <fma_units = 1, fma_latency = 4, l1 = 32768, l2 = 1048576, l3 = 0>>
  func.func private @h() attributes {kiln.both = #kiln.target<cpu, "x86_64-pc-linux-gnu", "znver4", "-avx512f" sized for <fma_units = 1, fma_latency = 4, l1 = 32768, l2 = 1048576, l3 = 0>>}
}
