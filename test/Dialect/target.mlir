// RUN: kiln-opt %s | kiln-opt | FileCheck %s

// A module's target round-trips; features are optional.
// CHECK: module attributes {kiln.target = #kiln.target<cpu, "x86_64-pc-linux-gnu", "znver4", "-avx512f,-avx512vl">}
module attributes {kiln.target = #kiln.target<cpu, "x86_64-pc-linux-gnu", "znver4", "-avx512f,-avx512vl">} {
  // CHECK: kiln.other = #kiln.target<cuda, "nvptx64-nvidia-cuda", "sm_90">
  func.func private @f() attributes {kiln.other = #kiln.target<cuda, "nvptx64-nvidia-cuda", "sm_90">}
}
