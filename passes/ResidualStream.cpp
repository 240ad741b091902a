//===- ResidualStream.cpp - the blocks of a pre-LN transformer ------------===//
#include "passes/ResidualStream.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "llvm/Support/Error.h"

using namespace mlir;

llvm::Expected<SmallVector<Value>> kiln::matchResidualStream(Region &region) {
  SmallVector<LayerNormOp> norms;
  region.walk([&](LayerNormOp op) { norms.push_back(op); });
  auto fail = [](const Twine &why) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), why);
  };
  if (norms.size() < 3 || norms.size() % 2 == 0)
    return fail("found " + Twine(norms.size()) + " layer norms");
  auto addsTo = [](Value sum, Value residual) {
    auto add = sum.getDefiningOp<AddOp>();
    return add && (add.getLhs() == residual || add.getRhs() == residual);
  };
  SmallVector<Value> stream{norms[0].getInput()};
  for (size_t k = 0; 2 * k + 2 < norms.size(); ++k) {
    Value h = norms[2 * k + 1].getInput(), next = norms[2 * k + 2].getInput();
    if (!addsTo(h, stream.back()) || !addsTo(next, h))
      return fail("block " + Twine(k) + " is not two residual additions");
    stream.push_back(next);
  }
  return stream;
}

FailureOr<SmallVector<Value>>
kiln::findResidualStream(Region &region, Location loc, StringRef what) {
  llvm::Expected<SmallVector<Value>> stream = matchResidualStream(region);
  if (!stream)
    return emitError(loc)
           << what << ": " << llvm::toString(stream.takeError())
           << "; the blocks must be pre-LN transformer blocks (x + "
              "attention(norm(x)), then + mlp(norm(.)), then a final norm)";
  return std::move(*stream);
}
