// RUN: kiln-opt %s -split-input-file -kiln-split-for-bufferization="max-aliases=4 max-ops=2" | FileCheck %s

// Six slices of one input share its buffer: more than four aliases, so the
// entry is cut into parts of two operations. The slices the entry returns
// are made in parts, which take the input afresh; those the addition reads
// are made anew in its part, with the empty tensor it fills.
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[X:.*]]: tensor<6xf32>
// CHECK-NEXT: %[[P0:.*]]:2 = call @main_part(%[[X]]) : (tensor<6xf32>) -> (tensor<1xf32>, tensor<1xf32>)
// CHECK-NEXT: %[[P1:.*]]:2 = call @main_part_0(%[[X]]) : (tensor<6xf32>) -> (tensor<1xf32>, tensor<1xf32>)
// CHECK-NEXT: %[[SUM:.*]] = call @main_part_1(%[[X]]) : (tensor<6xf32>) -> tensor<1xf32>
// CHECK-NEXT: return %[[SUM]], %[[P0]]#0, %[[P0]]#1, %[[P1]]#0, %[[P1]]#1
// CHECK: func.func private @main_part(%[[A:.*]]: tensor<6xf32>) -> (tensor<1xf32>, tensor<1xf32>) attributes {kiln.bufferization_part}
// CHECK-NEXT: %[[S1:.*]] = tensor.extract_slice %[[A]][1] [1] [1]
// CHECK-NEXT: %[[S2:.*]] = tensor.extract_slice %[[A]][2] [1] [1]
// CHECK-NEXT: return %[[S1]], %[[S2]]
// CHECK: func.func private @main_part_0(
// CHECK: func.func private @main_part_1(%[[B:.*]]: tensor<6xf32>) -> tensor<1xf32> attributes {kiln.bufferization_part}
// CHECK-NEXT: %[[S0:.*]] = tensor.extract_slice %[[B]][0] [1] [1]
// CHECK-NEXT: %[[S5:.*]] = tensor.extract_slice %[[B]][5] [1] [1]
// CHECK-NEXT: %[[EMPTY:.*]] = tensor.empty() : tensor<1xf32>
// CHECK-NEXT: %[[ADD:.*]] = linalg.add ins(%[[S0]], %[[S5]] : tensor<1xf32>, tensor<1xf32>) outs(%[[EMPTY]] : tensor<1xf32>)
// CHECK-NEXT: return %[[ADD]]
func.func @main(%x: tensor<6xf32>) -> (tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) {
  %empty = tensor.empty() : tensor<1xf32>
  %s0 = tensor.extract_slice %x[0] [1] [1] : tensor<6xf32> to tensor<1xf32>
  %s1 = tensor.extract_slice %x[1] [1] [1] : tensor<6xf32> to tensor<1xf32>
  %s2 = tensor.extract_slice %x[2] [1] [1] : tensor<6xf32> to tensor<1xf32>
  %s3 = tensor.extract_slice %x[3] [1] [1] : tensor<6xf32> to tensor<1xf32>
  %s4 = tensor.extract_slice %x[4] [1] [1] : tensor<6xf32> to tensor<1xf32>
  %s5 = tensor.extract_slice %x[5] [1] [1] : tensor<6xf32> to tensor<1xf32>
  %sum = linalg.add ins(%s0, %s5 : tensor<1xf32>, tensor<1xf32>) outs(%empty : tensor<1xf32>) -> tensor<1xf32>
  return %sum, %s1, %s2, %s3, %s4 : tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>
}

// -----

// Three slices: four values share the input's buffer, not more; the entry
// stays whole.
// CHECK-LABEL: func.func @few_slices(
// CHECK-NOT: call
// CHECK-NOT: func.func private
func.func @few_slices(%x: tensor<3xf32>) -> (tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) {
  %s0 = tensor.extract_slice %x[0] [1] [1] : tensor<3xf32> to tensor<1xf32>
  %s1 = tensor.extract_slice %x[1] [1] [1] : tensor<3xf32> to tensor<1xf32>
  %s2 = tensor.extract_slice %x[2] [1] [1] : tensor<3xf32> to tensor<1xf32>
  return %s0, %s1, %s2 : tensor<1xf32>, tensor<1xf32>, tensor<1xf32>
}

// -----

// Five operations fill the same empty tensor: they share no data through
// it, so the entry stays whole, and each gets an empty tensor of its own
// just before it (bufferization's analysis would put all five in one set
// of aliases, and a buffer made at the top would be live from there).
// CHECK-LABEL: func.func @one_empty(
// CHECK-NOT: call
// CHECK: %[[E0:.*]] = tensor.empty() : tensor<4xf32>
// CHECK-NEXT: %[[A:.*]] = linalg.exp ins(%{{.*}} : tensor<4xf32>) outs(%[[E0]] : tensor<4xf32>)
// CHECK-NEXT: %[[E1:.*]] = tensor.empty() : tensor<4xf32>
// CHECK-NEXT: linalg.exp ins(%[[A]] : tensor<4xf32>) outs(%[[E1]] : tensor<4xf32>)
// CHECK-COUNT-3: tensor.empty
// CHECK-NOT: tensor.empty
// CHECK-NOT: func.func private
func.func @one_empty(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %empty = tensor.empty() : tensor<4xf32>
  %a = linalg.exp ins(%x : tensor<4xf32>) outs(%empty : tensor<4xf32>) -> tensor<4xf32>
  %b = linalg.exp ins(%a : tensor<4xf32>) outs(%empty : tensor<4xf32>) -> tensor<4xf32>
  %c = linalg.exp ins(%b : tensor<4xf32>) outs(%empty : tensor<4xf32>) -> tensor<4xf32>
  %d = linalg.exp ins(%c : tensor<4xf32>) outs(%empty : tensor<4xf32>) -> tensor<4xf32>
  %e = linalg.exp ins(%d : tensor<4xf32>) outs(%empty : tensor<4xf32>) -> tensor<4xf32>
  return %a, %b, %c, %d, %e : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Slices of a dynamically shaped input cannot cross a call: every run
// stays in the entry.
// CHECK-LABEL: func.func @dynamic(
// CHECK-NOT: call
// CHECK-NOT: func.func private
func.func @dynamic(%x: tensor<?xf32>, %n: index) -> (tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>) {
  %s0 = tensor.extract_slice %x[0] [%n] [1] : tensor<?xf32> to tensor<?xf32>
  %s1 = tensor.extract_slice %x[1] [%n] [1] : tensor<?xf32> to tensor<?xf32>
  %s2 = tensor.extract_slice %x[2] [%n] [1] : tensor<?xf32> to tensor<?xf32>
  %s3 = tensor.extract_slice %x[3] [%n] [1] : tensor<?xf32> to tensor<?xf32>
  %s4 = tensor.extract_slice %x[4] [%n] [1] : tensor<?xf32> to tensor<?xf32>
  return %s0, %s1, %s2, %s3, %s4 : tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>
}

// -----

// Uses in other blocks of the function get their empty tensors where the
// shared one was.
// CHECK-LABEL: func.func @branches(
// CHECK-NEXT: %[[E0:.*]] = tensor.empty() : tensor<4xf32>
// CHECK-NEXT: %[[E1:.*]] = tensor.empty() : tensor<4xf32>
// CHECK-NEXT: cf.cond_br
// CHECK: linalg.exp ins(%{{.*}} : tensor<4xf32>) outs(%[[E0]] : tensor<4xf32>)
// CHECK: linalg.exp ins(%{{.*}} : tensor<4xf32>) outs(%[[E1]] : tensor<4xf32>)
func.func @branches(%x: tensor<4xf32>, %c: i1) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  cf.cond_br %c, ^a, ^b
^a:
  %y = linalg.exp ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
^b:
  %z = linalg.exp ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %z : tensor<4xf32>
}
