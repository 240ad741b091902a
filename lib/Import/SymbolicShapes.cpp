//===- SymbolicShapes.cpp - shapes in terms of named dimensions -----------===//
#include "lib/Import/SymbolicShapes.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace kiln;

SmallVector<int64_t> kiln::getStaticSizes(ArrayRef<AffineExpr> shape) {
  SmallVector<int64_t> sizes;
  for (AffineExpr dim : shape) {
    auto constant = dyn_cast<AffineConstantExpr>(dim);
    sizes.push_back(constant ? constant.getValue() : ShapedType::kDynamic);
  }
  return sizes;
}

SymbolicInts kiln::getConstantInts(MLIRContext *context,
                                   ArrayRef<int64_t> values) {
  SymbolicInts exprs;
  for (int64_t value : values)
    exprs.push_back(getAffineConstantExpr(value, context));
  return exprs;
}

static bool isConstant(AffineExpr expr, int64_t value) {
  auto constant = dyn_cast<AffineConstantExpr>(expr);
  return constant && constant.getValue() == value;
}

FailureOr<SymbolicInts> kiln::broadcastShapes(ArrayRef<AffineExpr> a,
                                              ArrayRef<AffineExpr> b) {
  if (a.size() < b.size())
    std::swap(a, b);
  SymbolicInts result(a);
  size_t offset = a.size() - b.size();
  for (auto [i, dim] : llvm::enumerate(b)) {
    AffineExpr &out = result[offset + i];
    if (dim == out || isConstant(dim, 1))
      continue;
    if (isConstant(out, 1) || isa<AffineConstantExpr>(dim)) {
      if (isa<AffineConstantExpr>(out) && !isConstant(out, 1))
        return failure();
      out = dim;
      continue;
    }
    if (!isa<AffineConstantExpr>(out))
      return failure();
  }
  return result;
}

namespace {

/// `coefficient * s_i * s_j * ...`, the form products of sizes take.
struct Monomial {
  int64_t coefficient = 1;
  SmallVector<unsigned> symbols; // sorted, with repeats
};

std::optional<Monomial> getMonomial(AffineExpr expr) {
  if (auto constant = dyn_cast<AffineConstantExpr>(expr))
    return Monomial{constant.getValue(), {}};
  if (auto symbol = dyn_cast<AffineSymbolExpr>(expr))
    return Monomial{1, {symbol.getPosition()}};
  auto binary = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!binary || binary.getKind() != AffineExprKind::Mul)
    return std::nullopt;
  std::optional<Monomial> lhs = getMonomial(binary.getLHS()),
                          rhs = getMonomial(binary.getRHS());
  if (!lhs || !rhs)
    return std::nullopt;
  lhs->coefficient *= rhs->coefficient;
  llvm::append_range(lhs->symbols, rhs->symbols);
  llvm::sort(lhs->symbols);
  return lhs;
}

/// `expr` with every product of a constant and symbols written one way:
/// the constant, then the symbols in order (d3 * (d4 * d5) and
/// (d3 * d4) * d5 alike), so sizes computed in different orders compare
/// equal.
AffineExpr canonicalizeProducts(AffineExpr expr) {
  auto binary = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!binary)
    return expr;
  MLIRContext *context = expr.getContext();
  if (binary.getKind() == AffineExprKind::Mul)
    if (std::optional<Monomial> monomial = getMonomial(expr)) {
      AffineExpr product =
          getAffineConstantExpr(monomial->coefficient, context);
      for (unsigned symbol : monomial->symbols)
        product = product * getAffineSymbolExpr(symbol, context);
      return product;
    }
  AffineExpr lhs = canonicalizeProducts(binary.getLHS());
  AffineExpr rhs = canonicalizeProducts(binary.getRHS());
  switch (binary.getKind()) {
  case AffineExprKind::Add:
    return lhs + rhs;
  case AffineExprKind::Mul:
    return lhs * rhs;
  case AffineExprKind::FloorDiv:
    return lhs.floorDiv(rhs);
  case AffineExprKind::CeilDiv:
    return lhs.ceilDiv(rhs);
  case AffineExprKind::Mod:
    return lhs % rhs;
  default:
    return expr;
  }
}

} // namespace

AffineExpr kiln::simplify(AffineExpr expr) {
  unsigned symbols = 0;
  expr.walk([&](AffineExpr sub) {
    if (auto symbol = dyn_cast<AffineSymbolExpr>(sub))
      symbols = std::max(symbols, symbol.getPosition() + 1);
  });
  return canonicalizeProducts(simplifyAffineExpr(expr, /*numDims=*/0, symbols));
}

std::optional<std::pair<int64_t, int64_t>>
kiln::getBounds(AffineExpr expr, ArrayRef<std::pair<int64_t, int64_t>> ranges) {
  using Bounds = std::pair<int64_t, int64_t>;
  if (auto constant = dyn_cast<AffineConstantExpr>(expr))
    return Bounds{constant.getValue(), constant.getValue()};
  if (auto symbol = dyn_cast<AffineSymbolExpr>(expr)) {
    if (symbol.getPosition() >= ranges.size())
      return std::nullopt;
    return ranges[symbol.getPosition()];
  }
  auto binary = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!binary)
    return std::nullopt;
  std::optional<Bounds> lhs = getBounds(binary.getLHS(), ranges),
                        rhs = getBounds(binary.getRHS(), ranges);
  if (!lhs || !rhs)
    return std::nullopt;
  auto constant = dyn_cast<AffineConstantExpr>(binary.getRHS());
  switch (binary.getKind()) {
  case AffineExprKind::Add:
    return Bounds{lhs->first + rhs->first, lhs->second + rhs->second};
  case AffineExprKind::Mul: {
    // Two sizes: neither is negative.
    if (!constant && lhs->first >= 0 && rhs->first >= 0) {
      Bounds product;
      if (llvm::MulOverflow(lhs->first, rhs->first, product.first) ||
          llvm::MulOverflow(lhs->second, rhs->second, product.second))
        return std::nullopt;
      return product;
    }
    if (!constant)
      return std::nullopt;
    int64_t c = constant.getValue();
    Bounds scaled{lhs->first * c, lhs->second * c};
    if (c < 0)
      std::swap(scaled.first, scaled.second);
    return scaled;
  }
  case AffineExprKind::FloorDiv:
  case AffineExprKind::CeilDiv: {
    if (!constant || constant.getValue() <= 0)
      return std::nullopt;
    int64_t c = constant.getValue();
    bool ceil = binary.getKind() == AffineExprKind::CeilDiv;
    auto divide = [&](int64_t v) {
      return ceil ? llvm::divideCeilSigned(v, c) : llvm::divideFloorSigned(v, c);
    };
    return Bounds{divide(lhs->first), divide(lhs->second)};
  }
  case AffineExprKind::Mod:
    if (!constant || constant.getValue() <= 0)
      return std::nullopt;
    return Bounds{0, constant.getValue() - 1};
  default:
    return std::nullopt;
  }
}

AffineExpr kiln::getProduct(MLIRContext *context, ArrayRef<AffineExpr> values) {
  AffineExpr product = getAffineConstantExpr(1, context);
  for (AffineExpr value : values)
    product = product * value;
  return product;
}

std::optional<AffineExpr> kiln::divideExactly(AffineExpr dividend,
                                              AffineExpr divisor) {
  std::optional<Monomial> a = getMonomial(dividend), b = getMonomial(divisor);
  if (!a || !b || b->coefficient == 0 || a->coefficient % b->coefficient != 0)
    return std::nullopt;
  AffineExpr quotient =
      getAffineConstantExpr(a->coefficient / b->coefficient,
                            dividend.getContext());
  SmallVector<unsigned> remaining = a->symbols;
  for (unsigned symbol : b->symbols) {
    auto it = llvm::find(remaining, symbol);
    if (it == remaining.end())
      return std::nullopt;
    remaining.erase(it);
  }
  for (unsigned symbol : remaining)
    quotient = quotient * getAffineSymbolExpr(symbol, dividend.getContext());
  return quotient;
}

/// How many windows of `extent` elements, `stride` apart, fit `size`
/// elements with `pads` added.
static AffineExpr getWindowCount(AffineExpr size, int64_t extent, int64_t pads,
                                 int64_t stride) {
  return simplify((size + (pads - extent)).floorDiv(stride) + 1);
}

FailureOr<SymbolicInts> kiln::inferSymbolicShape(
    Operation *op, function_ref<SymbolicInts(Value)> shapeOf) {
  auto shape = [&](unsigned i) { return shapeOf(op->getOperand(i)); };
  return TypeSwitch<Operation *, FailureOr<SymbolicInts>>(op)
      .Case<AddOp, SubOp, MulOp, DivOp, PowOp, RemOp, MinOp, MaxOp, AndOp, OrOp,
            XorOp, EqualOp, LessOp, LessEqualOp, ShiftLeftOp, ShiftRightOp>(
          [&](auto) { return broadcastShapes(shape(0), shape(1)); })
      .Case([&](SelectOp) -> FailureOr<SymbolicInts> {
        FailureOr<SymbolicInts> values = broadcastShapes(shape(1), shape(2));
        if (failed(values))
          return failure();
        return broadcastShapes(shape(0), *values);
      })
      .Case<NegOp, AbsOp, ReluOp, ExpOp, LogOp, SqrtOp, SigmoidOp, TanhOp,
            ErfOp, SinOp, CosOp, TanOp, AsinOp, AcosOp, AtanOp, SinhOp, CoshOp,
            AsinhOp, AcoshOp, AtanhOp, FloorOp, CeilOp, RoundOp, NotOp, CastOp,
            SoftmaxOp, LayerNormOp, GroupNormOp, ScatterElementsOp, ScatterNDOp,
            QuantizeOp, DequantizeOp>(
          [&](auto) -> FailureOr<SymbolicInts> { return shape(0); })
      .Case<MatMulOp, MatMulIntegerOp>([&](auto) -> FailureOr<SymbolicInts> {
        SymbolicInts lhs = shape(0), rhs = shape(1);
        ArrayRef<AffineExpr> lhsBatch =
            lhs.size() > 2 ? ArrayRef(lhs).drop_back(2) : ArrayRef<AffineExpr>();
        ArrayRef<AffineExpr> rhsBatch =
            rhs.size() > 2 ? ArrayRef(rhs).drop_back(2) : ArrayRef<AffineExpr>();
        FailureOr<SymbolicInts> result = broadcastShapes(lhsBatch, rhsBatch);
        if (failed(result))
          return failure();
        if (lhs.size() >= 2)
          result->push_back(lhs[lhs.size() - 2]);
        if (rhs.size() >= 2)
          result->push_back(rhs.back());
        return result;
      })
      .Case([&](TransposeOp transpose) -> FailureOr<SymbolicInts> {
        SymbolicInts input = shape(0), result;
        for (int64_t p : transpose.getPerm())
          result.push_back(input[p]);
        return result;
      })
      .Case([&](ConcatOp concat) -> FailureOr<SymbolicInts> {
        SymbolicInts result = shape(0);
        int64_t axis = concat.getAxis();
        for (unsigned i = 1; i < op->getNumOperands(); ++i)
          result[axis] = result[axis] + shape(i)[axis];
        return result;
      })
      .Case(
          [&](GatherElementsOp) -> FailureOr<SymbolicInts> { return shape(1); })
      .Case([&](GatherOp gather) -> FailureOr<SymbolicInts> {
        SymbolicInts data = shape(0), indices = shape(1);
        int64_t axis = gather.getAxis();
        SymbolicInts result(data.begin(), data.begin() + axis);
        llvm::append_range(result, indices);
        result.append(data.begin() + axis + 1, data.end());
        return result;
      })
      .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp>(
          [&](auto reduce) {
            SymbolicInts input = shape(0), result;
            ArrayRef<int64_t> axes = reduce.getAxes();
            for (auto [d, dim] : llvm::enumerate(input)) {
              if (!llvm::is_contained(axes, static_cast<int64_t>(d)))
                result.push_back(dim);
              else if (reduce.getKeepDims())
                result.push_back(getAffineConstantExpr(1, op->getContext()));
            }
            return FailureOr<SymbolicInts>(result);
          })
      .Case([&](SliceOp slice) -> FailureOr<SymbolicInts> {
        // Sliced dimensions have static sizes; the others keep the input's.
        SymbolicInts input = shape(0), result;
        for (auto [d, size] : llvm::enumerate(slice.getSizes()))
          result.push_back(ShapedType::isDynamic(size)
                               ? input[d]
                               : getAffineConstantExpr(size, op->getContext()));
        return result;
      })
      .Case([&](PoolOp pool) -> FailureOr<SymbolicInts> {
        if (pool.getCeilMode())
          return failure();
        SymbolicInts input = shape(0);
        SymbolicInts result(input.begin(), input.begin() + 2);
        size_t spatial = pool.getKernel().size();
        for (size_t d = 0; d < spatial; ++d)
          result.push_back(getWindowCount(
              input[2 + d],
              pool.getDilations()[d] * (pool.getKernel()[d] - 1) + 1,
              pool.getPads()[d] + pool.getPads()[spatial + d],
              pool.getStrides()[d]));
        return result;
      })
      .Case([&](Conv2DOp conv) -> FailureOr<SymbolicInts> {
        SymbolicInts input = shape(0), filter = shape(1);
        SymbolicInts result = {input[0], filter[0]};
        for (int64_t d = 0; d < 2; ++d) {
          int64_t dilation = conv.getDilations()[d];
          AffineExpr extent = (filter[2 + d] - 1) * dilation + 1;
          result.push_back(
              simplify((input[2 + d] +
                        (conv.getPads()[d] + conv.getPads()[2 + d]) - extent)
                           .floorDiv(conv.getStrides()[d]) +
                       1));
        }
        return result;
      })
      .Default([](Operation *) { return failure(); });
}

/// Elementwise `combine` of two element lists under broadcasting.
static std::optional<SymbolicInts>
combineElements(ArrayRef<AffineExpr> lhs, ArrayRef<AffineExpr> rhs,
                function_ref<std::optional<AffineExpr>(AffineExpr, AffineExpr)>
                    combine) {
  if (lhs.size() != rhs.size() && lhs.size() != 1 && rhs.size() != 1)
    return std::nullopt;
  SymbolicInts result;
  for (size_t i = 0; i < std::max(lhs.size(), rhs.size()); ++i) {
    std::optional<AffineExpr> value =
        combine(lhs[lhs.size() == 1 ? 0 : i], rhs[rhs.size() == 1 ? 0 : i]);
    if (!value)
      return std::nullopt;
    result.push_back(simplify(*value));
  }
  return result;
}

bool kiln::isShapeElementType(Type type) {
  return type.isSignlessInteger(64) || type.isSignlessInteger(32);
}

DenseElementsAttr kiln::getShapeElementsAttr(RankedTensorType type,
                                             ArrayRef<int64_t> values) {
  unsigned width = type.getElementType().getIntOrFloatBitWidth();
  SmallVector<APInt> elements;
  for (int64_t value : values)
    elements.push_back(APInt(width, value, /*isSigned=*/true,
                             /*implicitTrunc=*/true));
  return DenseElementsAttr::get(type, elements);
}

std::optional<SymbolicInts> kiln::evaluateSymbolicInts(
    Operation *op,
    function_ref<std::optional<SymbolicInts>(Value)> contentsOf) {
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (op->getNumResults() != 1 || !type || !type.hasStaticShape() ||
      type.getRank() > 1 || !isShapeElementType(type.getElementType()))
    return std::nullopt;
  SmallVector<SymbolicInts> operands;
  for (Value operand : op->getOperands()) {
    if (!isa<RankedTensorType>(operand.getType()))
      continue;
    std::optional<SymbolicInts> contents = contentsOf(operand);
    if (!contents)
      return std::nullopt;
    operands.push_back(std::move(*contents));
  }
  return TypeSwitch<Operation *, std::optional<SymbolicInts>>(op)
      .Case([&](GatherOp) -> std::optional<SymbolicInts> {
        SymbolicInts result;
        int64_t size = operands[0].size();
        for (AffineExpr index : operands[1]) {
          auto constant = dyn_cast<AffineConstantExpr>(index);
          if (!constant || constant.getValue() < -size ||
              constant.getValue() >= size)
            return std::nullopt;
          int64_t i = constant.getValue();
          result.push_back(operands[0][i < 0 ? i + size : i]);
        }
        return result;
      })
      .Case([&](ConcatOp) {
        SymbolicInts result;
        for (const SymbolicInts &operand : operands)
          llvm::append_range(result, operand);
        return std::optional<SymbolicInts>(result);
      })
      .Case([&](ReshapeOp) { return std::optional<SymbolicInts>(operands[0]); })
      .Case([&](CastOp) -> std::optional<SymbolicInts> {
        if (type.getElementType().isInteger(64))
          return operands[0];
        // Narrowed to i32, a constant wraps as the cast does at run time;
        // a symbolic size is assumed to fit.
        SymbolicInts result;
        for (AffineExpr element : operands[0]) {
          auto constant = dyn_cast<AffineConstantExpr>(element);
          result.push_back(constant
                               ? getAffineConstantExpr(
                                     static_cast<int32_t>(constant.getValue()),
                                     element.getContext())
                               : element);
        }
        return result;
      })
      .Case([&](SliceOp slice) -> std::optional<SymbolicInts> {
        SymbolicInts result;
        for (int64_t i = 0; i < slice.getSizes()[0]; ++i)
          result.push_back(
              operands[0][slice.getOffsets()[0] + i * slice.getStrides()[0]]);
        return result;
      })
      .Case([&](AddOp) {
        return combineElements(operands[0], operands[1],
                               [](AffineExpr a, AffineExpr b) { return a + b; });
      })
      .Case([&](SubOp) {
        return combineElements(operands[0], operands[1],
                               [](AffineExpr a, AffineExpr b) { return a - b; });
      })
      .Case([&](MulOp) {
        return combineElements(operands[0], operands[1],
                               [](AffineExpr a, AffineExpr b) { return a * b; });
      })
      .Case([&](DivOp div) -> std::optional<SymbolicInts> {
        if (div.getIsUnsigned())
          return std::nullopt;
        // Sizes are not negative, where floor and ONNX's truncation agree.
        return combineElements(
            operands[0], operands[1],
            [](AffineExpr a, AffineExpr b) -> std::optional<AffineExpr> {
              auto divisor = dyn_cast<AffineConstantExpr>(b);
              if (!divisor || divisor.getValue() <= 0)
                return std::nullopt;
              return a.floorDiv(divisor.getValue());
            });
      })
      .Default([](Operation *) { return std::nullopt; });
}
