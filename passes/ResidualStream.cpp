//===- ResidualStream.cpp - the blocks of a pre-LN transformer ------------===//
#include "passes/ResidualStream.h"

#include "dialects/Kiln/IR/KilnOps.h"

using namespace mlir;

FailureOr<SmallVector<Value>>
kiln::findResidualStream(Region &region, Location loc, StringRef what) {
  SmallVector<LayerNormOp> norms;
  region.walk([&](LayerNormOp op) { norms.push_back(op); });
  auto fail =
      [&](const Twine &why) {
        return emitError(loc)
               << what << ": " << why
               << "; the blocks must be pre-LN transformer blocks (x + "
                  "attention(norm(x)), then + mlp(norm(.)), then a final norm)";
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
