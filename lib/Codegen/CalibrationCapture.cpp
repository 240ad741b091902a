//===- CalibrationCapture.cpp - product inputs as extra results -----------===//
#include "lib/Codegen/CalibrationCapture.h"

#include "dialects/Kiln/IR/EntryPoints.h"
#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace kiln;

namespace {

/// Upper bounds of a function's dynamic sizes, from its arguments' named
/// dims and their ranges, through the ops that compute the sizes.
class SizeBounds {
public:
  explicit SizeBounds(func::FuncOp entry) : entry(entry) {
    auto module = entry->getParentOfType<ModuleOp>();
    if (auto table = module ? module->getAttrOfType<ArrayAttr>(kDimsAttr)
                            : ArrayAttr())
      for (auto dim : table.getAsRange<DimAttr>())
        maxima[dim.getName()] = dim.getMax();
  }

  std::optional<int64_t> ofDim(Value tensor, int64_t d, int depth) {
    auto type = cast<RankedTensorType>(tensor.getType());
    if (!type.isDynamicDim(d))
      return type.getDimSize(d);
    if (depth > kMaxDepth)
      return std::nullopt;
    if (auto arg = dyn_cast<BlockArgument>(tensor)) {
      if (arg.getOwner() != &entry.getBody().front())
        return std::nullopt;
      auto names =
          entry.getArgAttrOfType<ArrayAttr>(arg.getArgNumber(), kDimNamesAttr);
      auto name = names && d < int64_t(names.size())
                      ? dyn_cast<StringAttr>(names[d])
                      : StringAttr();
      auto it = name ? maxima.find(name.getValue()) : maxima.end();
      if (it == maxima.end())
        return std::nullopt;
      return it->second;
    }
    auto result = cast<OpResult>(tensor);
    Operation *op = result.getOwner();
    OpBuilder b(op->getContext());
    b.setInsertionPointAfter(op);
    ReifiedRankedShapedTypeDims shapes;
    if (!isa<ReifyRankedShapedTypeOpInterface>(op) ||
        failed(reifyResultShapes(b, op, shapes)))
      return std::nullopt;
    OpFoldResult size = shapes[result.getResultNumber()][d];
    if (std::optional<int64_t> fixed = getConstantIntValue(size))
      return fixed;
    return ofValue(cast<Value>(size), depth + 1);
  }

  std::optional<int64_t> ofValue(Value value, int depth) {
    if (depth > kMaxDepth)
      return std::nullopt;
    APInt constant;
    if (matchPattern(value, m_ConstantInt(&constant)))
      return constant.getSExtValue();
    Operation *op = value.getDefiningOp();
    if (auto dim = dyn_cast_or_null<tensor::DimOp>(op)) {
      std::optional<int64_t> index = dim.getConstantIndex();
      return index ? ofDim(dim.getSource(), *index, depth + 1) : std::nullopt;
    }
    if (isa_and_nonnull<arith::IndexCastOp, arith::ExtSIOp, arith::ExtUIOp>(op))
      return ofValue(op->getOperand(0), depth + 1);
    if (!isa_and_nonnull<arith::MulIOp, arith::AddIOp>(op))
      return std::nullopt;
    std::optional<int64_t> lhs = ofValue(op->getOperand(0), depth + 1);
    std::optional<int64_t> rhs = ofValue(op->getOperand(1), depth + 1);
    int64_t combined;
    if (!lhs || !rhs || *lhs < 0 || *rhs < 0 ||
        (isa<arith::MulIOp>(op) ? llvm::MulOverflow(*lhs, *rhs, combined)
                                : llvm::AddOverflow(*lhs, *rhs, combined)))
      return std::nullopt;
    return combined;
  }

private:
  /// Sizes computed through more ops than this are not bounded.
  static constexpr int kMaxDepth = 64;
  func::FuncOp entry;
  llvm::StringMap<int64_t> maxima;
};

} // namespace

std::string kiln::getCaptureName(size_t i) {
  return "kiln.calibration." + std::to_string(i);
}

std::string kiln::getCaptureRowsName(size_t i) {
  return getCaptureName(i) + ".rows";
}

std::optional<int64_t> kiln::getRowBound(Value value, func::FuncOp entry) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getRank() == 0 || type.isDynamicDim(type.getRank() - 1))
    return std::nullopt;
  SizeBounds bounds(entry);
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < type.getRank(); ++d) {
    std::optional<int64_t> size = bounds.ofDim(value, d, 0);
    if (!size || llvm::MulOverflow(rows, *size, rows))
      return std::nullopt;
  }
  return rows;
}

void kiln::addCaptureResults(func::FuncOp entry, Value value, size_t i,
                             int64_t rowBound) {
  MLIRContext *ctx = entry.getContext();
  auto ret = cast<func::ReturnOp>(entry.getBody().back().getTerminator());
  SmallVector<Value> results(ret.getOperands());
  SmallVector<Attribute> resultAttrs;
  for (unsigned r = 0; r < results.size(); ++r)
    resultAttrs.push_back(entry.getResultAttrDict(r)
                              ? Attribute(entry.getResultAttrDict(r))
                              : DictionaryAttr::get(ctx));
  auto addResult = [&](Value result, StringRef name) {
    results.push_back(result);
    resultAttrs.push_back(DictionaryAttr::get(
        ctx, {NamedAttribute(StringAttr::get(ctx, kNameAttr),
                             StringAttr::get(ctx, name))}));
  };

  auto type = cast<RankedTensorType>(value.getType());
  if (type.hasStaticShape()) {
    addResult(value, getCaptureName(i));
  } else {
    OpBuilder b(ret);
    Location loc = value.getLoc();
    int64_t k = type.getShape().back();
    Value rows = arith::ConstantIndexOp::create(b, loc, 1);
    for (int64_t d = 0; d + 1 < type.getRank(); ++d)
      rows = arith::MulIOp::create(
          b, loc, rows,
          type.isDynamicDim(d)
              ? tensor::DimOp::create(b, loc, value, d).getResult()
              : arith::ConstantIndexOp::create(b, loc, type.getDimSize(d))
                    .getResult());
    Type element = type.getElementType();
    Value flat = ReshapeOp::create(
        b, loc, RankedTensorType::get({ShapedType::kDynamic, k}, element),
        value, ValueRange{rows});
    auto bufferType = RankedTensorType::get({rowBound, k}, element);
    Value zeros = ConstantOp::create(
        b, loc, DenseElementsAttr::get(bufferType, b.getZeroAttr(element)));
    Value captured = tensor::InsertSliceOp::create(
        b, loc, flat, zeros, getAsIndexOpFoldResult(ctx, {0, 0}),
        SmallVector<OpFoldResult>{rows, b.getIndexAttr(k)},
        getAsIndexOpFoldResult(ctx, {1, 1}));
    Value count = tensor::FromElementsOp::create(
        b, loc, RankedTensorType::get({}, b.getI64Type()),
        ValueRange{arith::IndexCastOp::create(b, loc, b.getI64Type(), rows)});
    addResult(captured, getCaptureName(i));
    addResult(count, getCaptureRowsName(i));
  }
  ret->setOperands(results);
  entry.setType(FunctionType::get(ctx, entry.getArgumentTypes(),
                                  ValueRange(results).getTypes()));
  entry.setAllResultAttrs(resultAttrs);
}
