// Parallel loops reach the runtime's executor: the loop body becomes a task
// over a range of iterations, its captures a closure on the caller's stack,
// and the loop a call of the executor's first field, parallel_for.
//
// RUN: kiln-compile %s --emit=llvm -o - | FileCheck %s
// RUN: kiln-compile -O0 %s --emit=llvm -o - | FileCheck %s --check-prefix=SERIAL

// The executor is the call structure's fourth field (offset 24).
// CHECK: define internal {{.*}}i32 @kiln_entry.main(ptr {{.*}}%[[CALL:[0-9]+]])
// CHECK: %[[FIELD:.*]] = getelementptr i8, ptr %[[CALL]], i64 24
// CHECK: %[[EXEC:.*]] = load ptr, ptr %[[FIELD]]
// 256 rows of 256 / 16 vector blocks: the rows are shared.
// CHECK: %[[FN:.*]] = load ptr, ptr %[[EXEC]]
// CHECK: call void %[[FN]](ptr {{.*}}%[[EXEC]], ptr {{.*}}@main_parallel.task, ptr {{.*}}, i64 256)
// CHECK: define internal void @main_parallel.task(ptr {{.*}}%{{[0-9]+}}, i64 %{{[0-9]+}}, i64 %{{[0-9]+}})
// CHECK: <16 x float>
// CHECK-NOT: kiln.parallel_for

// -O0 runs everything on the calling thread.
// SERIAL-NOT: .task
// SERIAL: define internal {{.*}}i32 @kiln_entry.main(ptr {{[^,]*}})
// SERIAL-NOT: parallel_for
func.func @main(%a: tensor<256x256xf32>, %b: tensor<256x256xf32>) -> tensor<256x256xf32> {
  %0 = kiln.add %a, %b : tensor<256x256xf32>, tensor<256x256xf32>
  return %0 : tensor<256x256xf32>
}
