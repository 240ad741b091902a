//===- CpuTargetTest.cpp - CPU targets and their block sizes --------------===//
//
// Which block sizes a named CPU gets follows from the features LLVM knows
// for it: AVX-512 parts get the 32-register blocks, AVX2 parts blocks that
// fit 16 registers, baseline x86-64 the 128-bit ones.
//
//===----------------------------------------------------------------------===//
#include "lib/Codegen/CpuTarget.h"

#include "mlir/IR/MLIRContext.h"

#include "gtest/gtest.h"

using namespace kiln;

namespace {

class CpuTargetTest : public ::testing::Test {
protected:
  CpuTargetTest() { context.loadDialect<KilnDialect>(); }

  CpuLayout layoutFor(llvm::StringRef cpu) {
    mlir::FailureOr<TargetAttr> target =
        resolveCpuTarget(&context, cpu, mlir::UnknownLoc::get(&context));
    EXPECT_TRUE(mlir::succeeded(target)) << cpu.str();
    return getCpuLayout(*target);
  }

  /// Accumulators of a register block, in vector registers.
  static int64_t accumulators(const CpuLayout &layout) {
    return layout.registerRows * layout.registerCols * 32 / layout.vectorBits;
  }

  mlir::MLIRContext context;
};

#if defined(__x86_64__)
TEST_F(CpuTargetTest, RegisterBlocksFitTheRegisterFile) {
  for (llvm::StringRef cpu : {"znver4", "sapphirerapids"}) {
    CpuLayout layout = layoutFor(cpu);
    EXPECT_EQ(layout.vectorBits, 512) << cpu.str();
    EXPECT_LE(accumulators(layout), 32 - 4) << cpu.str();
  }
  for (llvm::StringRef cpu : {"znver3", "haswell", "x86-64-v3"}) {
    CpuLayout layout = layoutFor(cpu);
    EXPECT_EQ(layout.vectorBits, 256) << cpu.str();
    // Room for a row of the weight panel and a broadcast beside them.
    EXPECT_LE(accumulators(layout) + layout.registerCols * 32 / 256 + 1, 16)
        << cpu.str();
  }
  CpuLayout baseline = layoutFor("x86-64");
  EXPECT_EQ(baseline.vectorBits, 128);
  EXPECT_LE(accumulators(baseline) + baseline.registerCols * 32 / 128 + 1, 16);
}

TEST_F(CpuTargetTest, BlocksNestInEachOther) {
  for (llvm::StringRef cpu : {"znver4", "znver3", "x86-64"}) {
    CpuLayout layout = layoutFor(cpu);
    EXPECT_EQ(layout.threadCols % layout.registerCols, 0) << cpu.str();
    EXPECT_EQ(layout.threadRows % layout.registerRows, 0) << cpu.str();
    EXPECT_EQ(layout.registerCols * 32 % layout.vectorBits, 0) << cpu.str();
  }
}
#endif

TEST_F(CpuTargetTest, UnknownCpuIsAnError) {
  std::string message;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    message = d.str();
    return mlir::success();
  });
  EXPECT_TRUE(mlir::failed(resolveCpuTarget(&context, "no-such-cpu",
                                            mlir::UnknownLoc::get(&context))));
  EXPECT_NE(message.find("no-such-cpu"), std::string::npos) << message;
}

} // namespace
