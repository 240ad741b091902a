// Parallel loops reach the runtime's executor: the loop body becomes a task
// over a range of iterations, its captures a closure on the caller's stack,
// and the loop a call of the executor's first field, parallel_for.
//
// RUN: kiln-compile %s --emit=llvm -o - | FileCheck %s
// RUN: kiln-compile -O0 %s --emit=llvm -o - | FileCheck %s --check-prefix=SERIAL

// CHECK: define internal void @main_parallel.task(ptr {{.*}}%[[CLOSURE:[0-9]+]], i64 %[[BEGIN:[0-9]+]], i64 %[[END:[0-9]+]])
// CHECK: <16 x float>
// CHECK: define internal {{.*}}i32 @kiln_entry.main(ptr {{.*}}, ptr {{.*}}, ptr {{.*}}, ptr {{.*}}, ptr %[[EXEC:[0-9]+]])
// 256 rows of 256 / 16 vector blocks: the rows are shared.
// CHECK: %[[FN:.*]] = load ptr, ptr %[[EXEC]]
// CHECK: call void %[[FN]](ptr {{.*}}%[[EXEC]], ptr {{.*}}@main_parallel.task, ptr {{.*}}, i64 256)
// CHECK-NOT: kiln.parallel_for

// -O0 runs everything on the calling thread, and still takes the executor.
// SERIAL-NOT: .task
// SERIAL: define internal {{.*}}i32 @kiln_entry.main(ptr {{.*}}, ptr {{.*}}, ptr {{.*}}, ptr {{.*}}, ptr {{.*}})
// SERIAL-NOT: parallel_for
func.func @main(%a: tensor<256x256xf32>, %b: tensor<256x256xf32>) -> tensor<256x256xf32> {
  %0 = kiln.add %a, %b : tensor<256x256xf32>, tensor<256x256xf32>
  return %0 : tensor<256x256xf32>
}
