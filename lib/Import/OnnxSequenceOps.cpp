//===- OnnxSequenceOps.cpp - importers of ONNX sequence ops ---------------===//
//
// Kiln has no run-time sequence type: a sequence built inside the graph
// whose length and positions are compile-time constants is a list of
// tensor values kept by the importer, and the sequence ops resolve to the
// tensors they pick, stack or split. A graph input or output of sequence
// type, or a position known only at run time, is an error.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/OnnxOpUtils.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "llvm/ADT/StringSwitch.h"

#include <numeric>

using namespace mlir;
using namespace kiln;

namespace {

/// The sequence input `i`, or an error.
FailureOr<SmallVector<Value>> getSequence(NodeImporter &node, unsigned i) {
  if (static_cast<int>(i) < node.node.input_size())
    if (const SmallVector<Value> *items =
            node.graph.lookupSequence(node.node.input(i)))
      return *items;
  return node.emitError() << "input " << i
                          << " must be a sequence built in the graph";
}

/// The position given by the optional scalar input `i` in a sequence of
/// `size` elements: `size` (insert) or `size - 1` (the others) if absent,
/// negative positions counting from the end; an error if it is not a
/// constant or out of range.
FailureOr<int64_t> getPosition(NodeImporter &node, unsigned i, int64_t size,
                               bool insert) {
  int64_t last = insert ? size : size - 1;
  if (static_cast<int>(i) >= node.node.input_size() ||
      node.node.input(i).empty())
    return last;
  std::optional<SmallVector<int64_t>> values =
      node.graph.getConstantInts(node.node.input(i));
  if (!values || values->size() != 1)
    return node.emitError() << "the position must be a compile-time "
                               "constant scalar";
  int64_t position = values->front();
  if (position < 0)
    position += size;
  if (position < 0 || position > last)
    return node.emitError() << "position " << values->front()
                            << " is outside a sequence of " << size;
  return position;
}

LogicalResult importSequenceEmpty(NodeImporter &node) {
  node.graph.bindSequence(node.node.output(0), {});
  return success();
}

LogicalResult importSequenceConstruct(NodeImporter &node) {
  SmallVector<Value> items;
  for (unsigned i = 0; i < node.operands.size(); ++i) {
    FailureOr<Value> item = node.getOperand(i);
    if (failed(item))
      return failure();
    items.push_back(*item);
  }
  node.graph.bindSequence(node.node.output(0), std::move(items));
  return success();
}

LogicalResult importSequenceInsert(NodeImporter &node) {
  FailureOr<SmallVector<Value>> items = getSequence(node, 0);
  FailureOr<Value> tensor = node.getOperand(1);
  if (failed(items) || failed(tensor))
    return failure();
  FailureOr<int64_t> position = getPosition(node, 2, items->size(), true);
  if (failed(position))
    return failure();
  items->insert(items->begin() + *position, *tensor);
  node.graph.bindSequence(node.node.output(0), std::move(*items));
  return success();
}

LogicalResult importSequenceErase(NodeImporter &node) {
  FailureOr<SmallVector<Value>> items = getSequence(node, 0);
  if (failed(items))
    return failure();
  FailureOr<int64_t> position = getPosition(node, 1, items->size(), false);
  if (failed(position))
    return failure();
  items->erase(items->begin() + *position);
  node.graph.bindSequence(node.node.output(0), std::move(*items));
  return success();
}

LogicalResult importSequenceAt(NodeImporter &node) {
  FailureOr<SmallVector<Value>> items = getSequence(node, 0);
  if (failed(items))
    return failure();
  if (static_cast<int>(node.node.input_size()) < 2)
    return node.emitError() << "needs a position";
  FailureOr<int64_t> position = getPosition(node, 1, items->size(), false);
  if (failed(position))
    return failure();
  node.results.push_back((*items)[*position]);
  return success();
}

LogicalResult importSequenceLength(NodeImporter &node) {
  FailureOr<SmallVector<Value>> items = getSequence(node, 0);
  if (failed(items))
    return failure();
  node.results.push_back(createScalar(node, node.b.getI64Type(),
                                      static_cast<double>(items->size())));
  return success();
}

LogicalResult importConcatFromSequence(NodeImporter &node) {
  FailureOr<SmallVector<Value>> items = getSequence(node, 0);
  if (failed(items))
    return failure();
  if (items->empty())
    return node.emitError() << "the sequence is empty";
  bool newAxis = node.getIntAttr("new_axis", 0) != 0;
  int64_t rank = cast<RankedTensorType>(items->front().getType()).getRank();
  FailureOr<int64_t> axis =
      node.normalizeAxis(node.getIntAttr("axis", 0), newAxis ? rank + 1 : rank);
  if (failed(axis))
    return failure();
  SmallVector<Value> parts;
  for (Value item : *items) {
    auto type = cast<RankedTensorType>(item.getType());
    if (!newAxis || !type.hasStaticShape()) {
      if (newAxis)
        return node.emitError() << "stacking needs static shapes; an element "
                                   "is "
                                << type;
      parts.push_back(item);
      continue;
    }
    SmallVector<int64_t> shape(type.getShape());
    shape.insert(shape.begin() + *axis, 1);
    parts.push_back(createReshape(node, item, shape));
  }
  if (parts.size() == 1)
    return addResult(node, parts.front());
  ConcatOp::Properties props;
  props.axis = node.b.getI64IntegerAttr(*axis);
  return addInferredResult<ConcatOp>(node, parts, props);
}

LogicalResult importSplitToSequence(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input))
    return failure();
  auto type = cast<RankedTensorType>(input->getType());
  FailureOr<int64_t> axis =
      node.normalizeAxis(node.getIntAttr("axis", 0), type.getRank());
  if (failed(axis))
    return failure();
  int64_t dim = type.getDimSize(*axis);
  if (ShapedType::isDynamic(dim))
    return node.emitError() << "splitting dimension " << *axis << " of " << type
                            << " is not supported: it is dynamic";
  SmallVector<int64_t> sizes;
  bool hasSplit = node.node.input_size() > 1 && !node.node.input(1).empty();
  bool squeeze = false;
  if (!hasSplit) {
    sizes.assign(dim, 1);
    squeeze = node.getIntAttr("keepdims", 1) == 0;
  } else {
    std::optional<SmallVector<int64_t>> split =
        node.graph.getConstantInts(node.node.input(1));
    if (!split)
      return node.emitError() << "split must be a compile-time constant";
    auto splitType = node.getOperandType(1);
    if (splitType.getRank() == 0) {
      // A scalar is the size of every part but a shorter last one.
      int64_t chunk = split->front();
      if (chunk < 1)
        return node.emitError() << "split " << chunk << " is not positive";
      for (int64_t offset = 0; offset < dim; offset += chunk)
        sizes.push_back(std::min(chunk, dim - offset));
    } else {
      sizes = *split;
    }
  }
  if (llvm::any_of(sizes, [](int64_t s) { return s < 0; }) ||
      std::accumulate(sizes.begin(), sizes.end(), int64_t(0)) != dim)
    return node.emitError()
           << "split sizes [" << ArrayRef<int64_t>(sizes)
           << "] do not add up to dimension " << *axis << " of size " << dim;
  SmallVector<Value> items;
  int64_t offset = 0;
  for (int64_t size : sizes) {
    Value part = createAxisSlice(node, *input, *axis, offset, offset + size);
    if (squeeze) {
      SmallVector<int64_t> shape(type.getShape());
      shape.erase(shape.begin() + *axis);
      part = createReshape(node, part, shape);
    }
    items.push_back(part);
    offset += size;
  }
  node.graph.bindSequence(node.node.output(0), std::move(items));
  return success();
}

} // namespace

OpImportFn kiln::lookupSequenceOpImporter(StringRef opType) {
  return llvm::StringSwitch<OpImportFn>(opType)
      .Case("SequenceEmpty", importSequenceEmpty)
      .Case("SequenceConstruct", importSequenceConstruct)
      .Case("SequenceInsert", importSequenceInsert)
      .Case("SequenceErase", importSequenceErase)
      .Case("SequenceAt", importSequenceAt)
      .Case("SequenceLength", importSequenceLength)
      .Case("ConcatFromSequence", importConcatFromSequence)
      .Case("SplitToSequence", importSplitToSequence)
      .Default(nullptr);
}
