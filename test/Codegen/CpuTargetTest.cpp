//===- CpuTargetTest.cpp - CPU targets and their block sizes --------------===//
//
// Which block sizes a named CPU gets follows from the features LLVM knows
// for it (AVX-512 parts get the 32-register blocks, AVX2 parts blocks that
// fit 16 registers, baseline x86-64 the 128-bit ones) and from the CPU model
// the target carries: FMA units and cache sizes.
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
  for (llvm::StringRef cpu :
       {"znver4", "znver3", "x86-64", "sapphirerapids", "host"}) {
    CpuLayout layout = layoutFor(cpu);
    EXPECT_EQ(layout.threadCols % layout.registerCols, 0) << cpu.str();
    EXPECT_EQ(layout.threadRows % layout.registerRows, 0) << cpu.str();
    EXPECT_EQ(layout.registerCols * 32 % layout.vectorBits, 0) << cpu.str();
    EXPECT_EQ(layout.patchColumns * 32 % layout.vectorBits, 0) << cpu.str();
    if (layout.narrowCols) {
      EXPECT_LT(layout.narrowCols, layout.registerCols) << cpu.str();
      EXPECT_EQ(layout.registerCols % layout.narrowCols, 0) << cpu.str();
    }
  }
}
TEST_F(CpuTargetTest, RegisterTilesKeepTheFmasBusy) {
  // 8 rows of 2 vectors with 32 registers, 6 with 16; convolutions' patch
  // panels are 2 vectors wide.
  CpuLayout zen4 = layoutFor("znver4");
  EXPECT_EQ(zen4.registerRows, 8);
  EXPECT_EQ(zen4.registerCols, 32);
  EXPECT_EQ(zen4.narrowCols, 0);
  EXPECT_EQ(zen4.patchColumns, 32);
  CpuLayout zen3 = layoutFor("znver3");
  EXPECT_EQ(zen3.registerRows, 6);
  EXPECT_EQ(zen3.registerCols, 16);
  EXPECT_EQ(zen3.narrowCols, 0);
  EXPECT_EQ(zen3.patchColumns, 16);
  // Two 512-bit FMA units: 6 rows of 4 vectors, with the 8 x 32 tile kept
  // for products whose columns do not fill whole 64-column tiles.
  CpuLayout xeon = layoutFor("sapphirerapids");
  EXPECT_EQ(xeon.registerRows, 6);
  EXPECT_EQ(xeon.registerCols, 64);
  EXPECT_EQ(xeon.narrowRows, 8);
  EXPECT_EQ(xeon.narrowCols, 32);
  EXPECT_EQ(xeon.patchColumns, 32);
  // Two AVX2 units keep 2 vectors: 4 would leave 2 rows in 16 registers.
  EXPECT_EQ(layoutFor("haswell").registerCols, 16);
  // Never fewer accumulators than FMA units times latency: a core with one
  // unit of latency 20 needs 20 in flight, 10 rows of 2 vectors.
  mlir::FailureOr<TargetAttr> target =
      resolveCpuTarget(&context, "znver4", mlir::UnknownLoc::get(&context));
  ASSERT_TRUE(mlir::succeeded(target));
  auto deep = CpuModelAttr::get(&context, 1, 20, 32 * 1024, 1024 * 1024, 0);
  CpuLayout layout = getCpuLayout(
      TargetAttr::get(&context, TargetKind::Cpu, target->getTriple(),
                      target->getChip(), target->getFeatures(), deep));
  EXPECT_EQ(layout.registerRows, 10);
}

TEST_F(CpuTargetTest, CacheBlocksFollowTheCacheSizes) {
  mlir::FailureOr<TargetAttr> zen4 =
      resolveCpuTarget(&context, "znver4", mlir::UnknownLoc::get(&context));
  ASSERT_TRUE(mlir::succeeded(zen4));
  ASSERT_TRUE(zen4->getCpuModel());
  EXPECT_EQ(zen4->getCpuModel().getL2(), 1024 * 1024);
  // A quarter of Zen 4's 1 MiB L2 holds 2048 rows of a 32-float panel.
  EXPECT_EQ(getCpuLayout(*zen4).cacheDepth, 2048);
  // The same chip with a quarter of the L2 and 8 KiB of L1.
  auto smaller = CpuModelAttr::get(&context, 1, 4, 8 * 1024, 256 * 1024, 0);
  auto target = TargetAttr::get(&context, TargetKind::Cpu, zen4->getTriple(),
                                zen4->getChip(), zen4->getFeatures(), smaller);
  CpuLayout layout = getCpuLayout(target);
  EXPECT_EQ(layout.cacheDepth, 512);
  // 16 query rows of scores in half of L1.
  EXPECT_EQ(layout.attentionKeyColumns, 64);
}

TEST_F(CpuTargetTest, HostTargetCarriesItsCaches) {
  mlir::FailureOr<TargetAttr> host =
      resolveCpuTarget(&context, "host", mlir::UnknownLoc::get(&context));
  ASSERT_TRUE(mlir::succeeded(host));
  CpuModelAttr model = host->getCpuModel();
  ASSERT_TRUE(model);
  EXPECT_GE(model.getFmaUnits(), 1);
  EXPECT_GT(model.getL1(), 0);
  EXPECT_GE(model.getL2(), model.getL1());
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
