//===- ConstantEvaluation.cpp - evaluate kiln ops on constants ------------===//
//
// Shared by the importer (which folds small shape computations as it goes)
// and kiln-fold-constants. Values are computed in their element type: f32,
// i64 or i1.
//
//===----------------------------------------------------------------------===//
#include "dialects/Kiln/IR/ConstantEvaluation.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "dialects/Kiln/IR/Weights.h"

#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <cstring>

using namespace mlir;
using namespace kiln;

namespace {

/// Row-major strides of `shape`.
SmallVector<int64_t> getStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

int64_t getNumElements(ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

/// For every flat index of `resultShape`, the flat index of the operand of
/// `operandShape` that broadcasting reads there.
SmallVector<int64_t> getBroadcastIndices(ArrayRef<int64_t> operandShape,
                                         ArrayRef<int64_t> resultShape) {
  SmallVector<int64_t> resultStrides = getStrides(resultShape);
  SmallVector<int64_t> operandStrides = getStrides(operandShape);
  size_t offset = resultShape.size() - operandShape.size();
  SmallVector<int64_t> indices(getNumElements(resultShape));
  for (int64_t flat = 0, e = indices.size(); flat < e; ++flat) {
    int64_t index = 0;
    for (size_t d = 0; d < operandShape.size(); ++d) {
      int64_t coord =
          flat / resultStrides[offset + d] % resultShape[offset + d];
      if (operandShape[d] != 1)
        index += coord * operandStrides[d];
    }
    indices[flat] = index;
  }
  return indices;
}

/// Source flat index of every element of a reshape, transpose, slice or
/// broadcast.
SmallVector<int64_t> getMovedIndices(Operation *op, ArrayRef<int64_t> input,
                                     ArrayRef<int64_t> result) {
  if (isa<BroadcastOp>(op))
    return getBroadcastIndices(input, result);
  if (isa<ReshapeOp>(op))
    return llvm::to_vector(llvm::seq<int64_t>(getNumElements(result)));
  SmallVector<int64_t> inputStrides = getStrides(input);
  SmallVector<int64_t> resultStrides = getStrides(result);
  SmallVector<int64_t> indices(getNumElements(result));
  for (int64_t flat = 0, e = indices.size(); flat < e; ++flat) {
    int64_t source = 0;
    for (size_t d = 0; d < result.size(); ++d) {
      int64_t coord = flat / resultStrides[d] % result[d];
      if (auto transpose = dyn_cast<TransposeOp>(op))
        source += coord * inputStrides[transpose.getPerm()[d]];
      else if (auto slice = dyn_cast<SliceOp>(op))
        source += (slice.getOffsets()[d] + coord * slice.getStrides()[d]) *
                  inputStrides[d];
    }
    indices[flat] = source;
  }
  return indices;
}

/// Source flat index of every element of a gather from `data` along `axis`
/// at `indices`; nullopt for an index out of range, which the lowering
/// clamps rather than folding would guess.
std::optional<SmallVector<int64_t>>
getGatherSources(ArrayRef<int64_t> data, int64_t axis,
                 DenseElementsAttr indices) {
  int64_t outer = getNumElements(data.take_front(axis));
  int64_t dim = data[axis];
  int64_t inner = getNumElements(data.drop_front(axis + 1));
  SmallVector<int64_t> picked;
  for (const APInt &index : indices.getValues<APInt>()) {
    int64_t i = index.getSExtValue();
    if (i < -dim || i >= dim)
      return std::nullopt;
    picked.push_back(i < 0 ? i + dim : i);
  }
  SmallVector<int64_t> sources;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i : picked)
      for (int64_t n = 0; n < inner; ++n)
        sources.push_back((o * dim + i) * inner + n);
  return sources;
}

/// The same integer division the lowering generates (x / 0 == 0, and
/// INT64_MIN / -1 wraps), so folding never changes a result.
int64_t safeDivide(int64_t lhs, int64_t rhs) {
  if (rhs == 0)
    return 0;
  if (rhs == -1)
    return static_cast<int64_t>(0ull - static_cast<uint64_t>(lhs));
  return lhs / rhs;
}

/// The lowering's integer remainder: 0 for a divisor of 0 or -1.
int64_t safeRemainder(int64_t lhs, int64_t rhs) {
  return rhs == 0 || rhs == -1 ? 0 : lhs % rhs;
}

/// Two's-complement wrapping, as the generated code's integer arithmetic
/// (and without C++'s undefined signed overflow).
int64_t wrapArithmetic(Operation *op, int64_t lhs, int64_t rhs) {
  auto l = static_cast<uint64_t>(lhs), r = static_cast<uint64_t>(rhs);
  if (isa<AddOp>(op))
    return static_cast<int64_t>(l + r);
  if (isa<SubOp>(op))
    return static_cast<int64_t>(l - r);
  if (isa<MulOp>(op))
    return static_cast<int64_t>(l * r);
  if (isa<RemOp>(op))
    return safeRemainder(lhs, rhs);
  if (isa<AndOp>(op))
    return lhs & rhs;
  if (isa<OrOp>(op))
    return lhs | rhs;
  if (isa<XorOp>(op))
    return lhs ^ rhs;
  return safeDivide(lhs, rhs);
}

template <typename T> T applyArithmetic(Operation *op, T lhs, T rhs) {
  // Min and max of floats propagate NaN, as the lowering's do.
  if (isa<MinOp>(op))
    return lhs != lhs ? lhs : rhs != rhs ? rhs : std::min(lhs, rhs);
  if (isa<MaxOp>(op))
    return lhs != lhs ? lhs : rhs != rhs ? rhs : std::max(lhs, rhs);
  if constexpr (std::is_integral_v<T>)
    return wrapArithmetic(op, lhs, rhs);
  if (isa<AddOp>(op))
    return lhs + rhs;
  if (isa<SubOp>(op))
    return lhs - rhs;
  if (isa<MulOp>(op))
    return lhs * rhs;
  if (isa<RemOp>(op))
    return std::fmod(lhs, rhs);
  return lhs / rhs;
}

/// The boolean result of comparison `op`.
template <typename T> bool compare(Operation *op, T lhs, T rhs) {
  if (isa<LessOp>(op))
    return lhs < rhs;
  if (isa<LessEqualOp>(op))
    return lhs <= rhs;
  return lhs == rhs;
}

/// The result of logical op `op` on booleans.
bool applyLogical(Operation *op, bool lhs, bool rhs) {
  if (isa<AndOp>(op))
    return lhs && rhs;
  if (isa<OrOp>(op))
    return lhs || rhs;
  return lhs != rhs;
}

/// Runs `fn` with `T` the C++ type of `elementType` (float, int64_t,
/// int32_t, bool);
/// null for the element types that are not evaluated at compile time.
template <typename Fn> DenseElementsAttr withCppType(Type elementType, Fn fn) {
  if (elementType.isF32())
    return fn(float());
  if (elementType.isInteger(64))
    return fn(int64_t());
  if (elementType.isInteger(32))
    return fn(int32_t());
  if (elementType.isInteger(1))
    return fn(bool());
  return {};
}

template <typename T>
DenseElementsAttr build(RankedTensorType type, ArrayRef<T> values) {
  return DenseElementsAttr::get(type, values);
}

DenseElementsAttr evaluateCast(DenseElementsAttr input, RankedTensorType type) {
  Type to = type.getElementType();
  return withCppType(input.getElementType(), [&](auto from) {
    using From = decltype(from);
    return withCppType(to, [&](auto target) -> DenseElementsAttr {
      using To = decltype(target);
      SmallVector<To> result;
      for (From v : input.getValues<From>()) {
        if constexpr (std::is_same_v<To, int64_t> &&
                      std::is_same_v<From, float>) {
          // Out of range is undefined in C++ and poison in generated code.
          if (!(v > -9.2e18f && v < 9.2e18f))
            return {};
        }
        if constexpr (std::is_same_v<To, int32_t> &&
                      std::is_same_v<From, float>) {
          if (!(v > -2.1e9f && v < 2.1e9f))
            return {};
        }
        if constexpr (std::is_same_v<To, bool>)
          result.push_back(v != From(0));
        else
          result.push_back(static_cast<To>(v));
      }
      return build<To>(type, result);
    });
  });
}

} // namespace

ElementsAttr kiln::evaluateDataMovement(Operation *op, ElementsAttr input) {
  if (!isa<ReshapeOp, TransposeOp, SliceOp, BroadcastOp>(op))
    return {};
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  if (!type.hasStaticShape())
    return {};
  // A reshape is the same bytes under another shape.
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(input);
      resource && isa<ReshapeOp>(op))
    return DenseResourceElementsAttr::get(type, resource.getRawHandle());
  std::optional<ArrayRef<char>> bytes = getRawBytes(input);
  int64_t size = getElementBytes(type.getElementType());
  if (!bytes || size == 0)
    return {};
  SmallVector<int64_t> sources = getMovedIndices(
      op, cast<ShapedType>(input.getType()).getShape(), type.getShape());
  return createElements(type, [&](MutableArrayRef<char> result) {
    for (auto [i, source] : llvm::enumerate(sources))
      std::memcpy(result.data() + i * size, bytes->data() + source * size,
                  size);
  });
}

ElementsAttr kiln::evaluateConcatBytes(ConcatOp op,
                                       ArrayRef<ElementsAttr> inputs) {
  auto type = cast<RankedTensorType>(op.getType());
  int64_t size = getElementBytes(type.getElementType());
  if (!type.hasStaticShape() || size == 0)
    return {};
  SmallVector<ArrayRef<char>> bytes;
  for (ElementsAttr input : inputs) {
    std::optional<ArrayRef<char>> raw = getRawBytes(input);
    if (!raw)
      return {};
    bytes.push_back(*raw);
  }
  // Each input contributes one contiguous chunk per index of the axes
  // before the concatenated one.
  int64_t axis = static_cast<int64_t>(op.getAxis());
  int64_t outer = getNumElements(type.getShape().take_front(axis));
  return createElements(type, [&](MutableArrayRef<char> result) {
    char *out = result.data();
    for (int64_t o = 0; o < outer; ++o) {
      for (ArrayRef<char> input : bytes) {
        size_t chunk = input.size() / outer;
        std::memcpy(out, input.data() + o * chunk, chunk);
        out += chunk;
      }
    }
  });
}

bool kiln::isConstantEvaluable(Operation *op) {
  return isa<AddOp, SubOp, MulOp, DivOp, RemOp, MinOp, MaxOp, NegOp, AbsOp,
             SqrtOp, ReluOp, FloorOp, CeilOp, EqualOp, LessOp, LessEqualOp,
             AndOp, OrOp, XorOp, NotOp, SelectOp, CastOp, ReshapeOp,
             TransposeOp, SliceOp, BroadcastOp, ConcatOp, GatherOp>(op);
}

DenseElementsAttr
kiln::evaluateConstantOp(Operation *op, ArrayRef<DenseElementsAttr> operands) {
  if (!isConstantEvaluable(op))
    return {};
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  ArrayRef<int64_t> shape = type.getShape();
  auto operandShape = [&](unsigned i) {
    return operands[i].getType().getShape();
  };

  if (isa<ReshapeOp>(op))
    return DenseElementsAttr(operands[0]).reshape(type);
  if (auto cast = dyn_cast<CastOp>(op)) {
    // evaluateCast reads and writes integers as signed.
    if (cast.getInputUnsigned() || cast.getResultUnsigned())
      return {};
    return evaluateCast(operands[0], type);
  }
  if (isa<EqualOp, LessOp, LessEqualOp>(op)) {
    return withCppType(operands[0].getElementType(), [&](auto t) {
      using T = decltype(t);
      SmallVector<T> lhs(operands[0].getValues<T>()),
          rhs(operands[1].getValues<T>());
      SmallVector<int64_t> l = getBroadcastIndices(operandShape(0), shape);
      SmallVector<int64_t> r = getBroadcastIndices(operandShape(1), shape);
      SmallVector<bool> result;
      for (size_t i = 0; i < l.size(); ++i)
        result.push_back(compare<T>(op, lhs[l[i]], rhs[r[i]]));
      return build<bool>(type, result);
    });
  }
  if (auto gather = dyn_cast<GatherOp>(op)) {
    std::optional<SmallVector<int64_t>> sources =
        getGatherSources(operandShape(0), gather.getAxis(), operands[1]);
    if (!sources)
      return {};
    return withCppType(type.getElementType(), [&](auto t) {
      using T = decltype(t);
      SmallVector<T> values(operands[0].getValues<T>()), result;
      for (int64_t source : *sources)
        result.push_back(values[source]);
      return build<T>(type, result);
    });
  }
  return withCppType(type.getElementType(), [&](auto t) -> DenseElementsAttr {
    using T = decltype(t);
    SmallVector<T> result;
    if (isa<AddOp, SubOp, MulOp, DivOp, RemOp, MinOp, MaxOp, AndOp, OrOp,
            XorOp>(op)) {
      SmallVector<T> lhs(operands[0].getValues<T>()),
          rhs(operands[1].getValues<T>());
      SmallVector<int64_t> l = getBroadcastIndices(operandShape(0), shape);
      SmallVector<int64_t> r = getBroadcastIndices(operandShape(1), shape);
      for (size_t i = 0; i < l.size(); ++i) {
        if constexpr (std::is_same_v<T, bool>)
          result.push_back(applyLogical(op, lhs[l[i]], rhs[r[i]]));
        else
          result.push_back(applyArithmetic<T>(op, lhs[l[i]], rhs[r[i]]));
      }
    } else if (isa<NotOp>(op)) {
      if constexpr (std::is_same_v<T, bool>)
        for (bool v : operands[0].getValues<bool>())
          result.push_back(!v);
    } else if (isa<AbsOp, ReluOp, FloorOp, CeilOp>(op)) {
      if constexpr (!std::is_same_v<T, bool>) {
        for (T v : operands[0].getValues<T>()) {
          if constexpr (std::is_same_v<T, float>) {
            // NaN stays NaN, as in the lowering's max(x, 0).
            if (isa<ReluOp>(op))
              result.push_back(v != v || v > 0 ? v : 0.0f);
            else if (isa<AbsOp>(op))
              result.push_back(std::fabs(v));
            else
              result.push_back(isa<FloorOp>(op) ? std::floor(v) : std::ceil(v));
          } else if (isa<ReluOp>(op)) {
            result.push_back(v > T(0) ? v : T(0));
          } else if (isa<AbsOp>(op)) {
            // Wraps at the most negative value, as the generated code does.
            using U = std::make_unsigned_t<T>;
            result.push_back(v < T(0) ? static_cast<T>(U(0) - static_cast<U>(v))
                                      : v);
          }
        }
      }
    } else if (isa<SqrtOp>(op)) {
      // Correctly rounded, as math.sqrt is: a batch norm's folded scale.
      if constexpr (std::is_same_v<T, float>)
        for (float v : operands[0].getValues<float>())
          result.push_back(std::sqrt(v));
    } else if (isa<NegOp>(op)) {
      if constexpr (std::is_same_v<T, int64_t>) {
        for (int64_t v : operands[0].getValues<int64_t>())
          result.push_back(
              static_cast<int64_t>(0ull - static_cast<uint64_t>(v)));
      } else if constexpr (std::is_same_v<T, float>) {
        for (float v : operands[0].getValues<float>())
          result.push_back(-v);
      }
    } else if (isa<SelectOp>(op)) {
      SmallVector<bool> cond(operands[0].getValues<bool>());
      SmallVector<T> a(operands[1].getValues<T>()),
          b(operands[2].getValues<T>());
      SmallVector<int64_t> c = getBroadcastIndices(operandShape(0), shape);
      SmallVector<int64_t> x = getBroadcastIndices(operandShape(1), shape);
      SmallVector<int64_t> y = getBroadcastIndices(operandShape(2), shape);
      for (size_t i = 0; i < c.size(); ++i)
        result.push_back(cond[c[i]] ? a[x[i]] : b[y[i]]);
    } else if (auto concat = dyn_cast<ConcatOp>(op)) {
      int64_t axis = static_cast<int64_t>(concat.getAxis());
      int64_t outer = getNumElements(shape.take_front(axis));
      for (int64_t o = 0; o < outer; ++o)
        for (DenseElementsAttr input : operands) {
          int64_t chunk =
              getNumElements(input.getType().getShape().drop_front(axis));
          auto values = input.getValues<T>();
          for (int64_t i = 0; i < chunk; ++i)
            result.push_back(values[o * chunk + i]);
        }
    } else {
      SmallVector<T> values(operands[0].getValues<T>());
      for (int64_t source : getMovedIndices(op, operandShape(0), shape))
        result.push_back(values[source]);
    }
    if (static_cast<int64_t>(result.size()) != type.getNumElements())
      return {};
    return build<T>(type, result);
  });
}

OpFoldResult kiln::foldConstantOperands(Operation *op,
                                        ArrayRef<Attribute> operands) {
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type || !type.hasStaticShape() ||
      type.getNumElements() > kFoldElementLimit)
    return {};
  SmallVector<DenseElementsAttr> dense;
  for (Attribute operand : operands) {
    auto elements = dyn_cast_if_present<DenseElementsAttr>(operand);
    if (!elements)
      return {};
    dense.push_back(elements);
  }
  return evaluateConstantOp(op, dense);
}
