// RUN: kiln-opt %s -kiln-skip-layers=layers=1 | FileCheck %s
// RUN: kiln-opt %s -kiln-skip-layers=layers=0,1 | FileCheck %s --check-prefix=BOTH
// RUN: not kiln-opt %s -kiln-skip-layers=layers=7 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not kiln-opt %s -kiln-skip-layers=layers=0,1,2 2>&1 | FileCheck %s --check-prefix=ALL
// RUN: kiln-opt %s '-kiln-skip-layers=layers=1 draft-entry=draft' | FileCheck %s --check-prefix=DRAFT
// RUN: not kiln-opt %s '-kiln-skip-layers=layers=1 draft-entry=decode' 2>&1 | FileCheck %s --check-prefix=TAKEN
// RANGE: error: cannot skip layer 7: the model has 3 (numbered from 0)
// ALL: error: cannot skip 3 layers of 3: at least one must stay
// TAKEN: error: cannot add the draft entry 'decode': the module already has a symbol of that name

// Three pre-LN blocks whose "attention" is a product with W and whose
// block 1 keeps its keys in session state. Skipping block 1 sends x1
// (block 0's output) to block 2; block 1's ops and its state go, and the
// overflow check moves to a write that stays.
// CHECK-NOT: kiln.state @keys1
// CHECK: kiln.state @keys0
// CHECK-NOT: kiln.state @keys1
// CHECK-LABEL: func.func @decode
// CHECK: %[[N0:.*]] = kiln.layer_norm %arg0
// CHECK: %[[A0:.*]] = kiln.matmul %[[N0]]
// CHECK: kiln.state_update %[[A0]], @keys0, axis = 0, offset = %arg1 {kiln.overflow_error = "full"}
// CHECK: kiln.state_read @keys0
// CHECK: %[[S0:.*]] = kiln.add %[[A0]]
// CHECK: %[[H0:.*]] = kiln.add %arg0, %[[S0]]
// CHECK: %[[X1:.*]] = kiln.add %[[H0]]
// CHECK-NOT: @keys1
// CHECK: %[[N2:.*]] = kiln.layer_norm %[[X1]]
// CHECK: kiln.add %[[X1]]
// CHECK: return

// Skipping blocks 0 and 1 sends the input straight to block 2; no state
// is read any more, so none is left.
// BOTH-NOT: kiln.state @keys
// BOTH-LABEL: func.func @decode
// BOTH: %[[N:.*]] = kiln.layer_norm %arg0
// BOTH: kiln.add %arg0
// A draft entry leaves @decode and the state whole and adds @draft, a copy
// with block 1 skipped that neither reads nor writes @keys1 (decode writes
// those positions again when it verifies the draft's tokens); its write to
// @keys0 takes the overflow check.
// DRAFT: kiln.state @keys0
// DRAFT: kiln.state @keys1
// DRAFT-LABEL: func.func @decode
// DRAFT: kiln.state_update %{{.*}}, @keys0, axis = 0, offset = %arg1 :
// DRAFT: kiln.state_update %{{.*}}, @keys1, axis = 0, offset = %arg1 {kiln.overflow_error = "full"}
// DRAFT: return
// DRAFT-LABEL: func.func @draft
// DRAFT: kiln.state_update %{{.*}}, @keys0, axis = 0, offset = %arg1 {kiln.overflow_error = "full"}
// DRAFT-NOT: @keys1
// DRAFT: return
kiln.state @keys0 : tensor<8x4xf32>
kiln.state @keys1 : tensor<8x4xf32>
func.func @decode(%x0: tensor<1x4xf32>, %at: tensor<i64>) -> tensor<1x4xf32> {
  %g = kiln.constant dense<1.0> : tensor<4xf32>
  %b = kiln.constant dense<0.0> : tensor<4xf32>
  %w = kiln.constant dense<0.5> : tensor<4x4xf32>
  %n0 = kiln.layer_norm %x0, %g, %b axis = 1 epsilon = 1.0e-05 : tensor<1x4xf32>, tensor<4xf32>, tensor<4xf32>
  %a0 = kiln.matmul %n0, %w : tensor<1x4xf32>, tensor<4x4xf32>
  kiln.state_update %a0, @keys0, axis = 0, offset = %at : tensor<1x4xf32>, tensor<i64>
  %k0 = kiln.state_read @keys0 : tensor<8x4xf32>
  %r0 = kiln.reduce_sum %k0 axes = [0] keep_dims : tensor<8x4xf32> -> tensor<1x4xf32>
  %s0 = kiln.add %a0, %r0 : tensor<1x4xf32>, tensor<1x4xf32>
  %h0 = kiln.add %x0, %s0 : tensor<1x4xf32>, tensor<1x4xf32>
  %m0 = kiln.layer_norm %h0, %g, %b axis = 1 epsilon = 1.0e-05 : tensor<1x4xf32>, tensor<4xf32>, tensor<4xf32>
  %x1 = kiln.add %h0, %m0 : tensor<1x4xf32>, tensor<1x4xf32>
  %n1 = kiln.layer_norm %x1, %g, %b axis = 1 epsilon = 1.0e-05 : tensor<1x4xf32>, tensor<4xf32>, tensor<4xf32>
  %a1 = kiln.matmul %n1, %w : tensor<1x4xf32>, tensor<4x4xf32>
  kiln.state_update %a1, @keys1, axis = 0, offset = %at {kiln.overflow_error = "full"} : tensor<1x4xf32>, tensor<i64>
  %k1 = kiln.state_read @keys1 : tensor<8x4xf32>
  %r1 = kiln.reduce_sum %k1 axes = [0] keep_dims : tensor<8x4xf32> -> tensor<1x4xf32>
  %s1 = kiln.add %a1, %r1 : tensor<1x4xf32>, tensor<1x4xf32>
  %h1 = kiln.add %x1, %s1 : tensor<1x4xf32>, tensor<1x4xf32>
  %m1 = kiln.layer_norm %h1, %g, %b axis = 1 epsilon = 1.0e-05 : tensor<1x4xf32>, tensor<4xf32>, tensor<4xf32>
  %x2 = kiln.add %h1, %m1 : tensor<1x4xf32>, tensor<1x4xf32>
  %n2 = kiln.layer_norm %x2, %g, %b axis = 1 epsilon = 1.0e-05 : tensor<1x4xf32>, tensor<4xf32>, tensor<4xf32>
  %a2 = kiln.matmul %n2, %w : tensor<1x4xf32>, tensor<4x4xf32>
  %h2 = kiln.add %x2, %a2 : tensor<1x4xf32>, tensor<1x4xf32>
  %m2 = kiln.layer_norm %h2, %g, %b axis = 1 epsilon = 1.0e-05 : tensor<1x4xf32>, tensor<4xf32>, tensor<4xf32>
  %x3 = kiln.add %h2, %m2 : tensor<1x4xf32>, tensor<1x4xf32>
  %f = kiln.layer_norm %x3, %g, %b axis = 1 epsilon = 1.0e-05 : tensor<1x4xf32>, tensor<4xf32>, tensor<4xf32>
  return %f : tensor<1x4xf32>
}

