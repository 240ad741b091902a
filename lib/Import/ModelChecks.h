//===- ModelChecks.h - checks before libonnx reads a model ------*- C++ -*-===//
//
// What the importer checks on the protobuf itself, before libonnx's checker
// and shape inference read the model: its size and nesting, and the
// attributes that crash libonnx 1.12 (which runs in a child process by
// default, but these get an error that names the node either way).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_IMPORT_MODELCHECKS_H
#define KILN_LIB_IMPORT_MODELCHECKS_H

#include "mlir/IR/Location.h"
#include "mlir/Support/LLVM.h"

#include <onnx/onnx_pb.h>

namespace kiln {

/// The location diagnostics use for `node`, the `index`th of its graph: its
/// name, or op type and index when it has none.
mlir::Location getNodeLoc(const onnx::NodeProto &node, int index,
                          mlir::MLIRContext *ctx);

/// An error at `fileLoc` if `graph` and its subgraphs hold more than
/// `maxNodes` nodes in all, or subgraphs nest deeper than `maxDepth` (the
/// main graph has depth 0, the body of one of its Ifs 1).
llvm::LogicalResult checkGraphLimits(const onnx::GraphProto &graph,
                                     uint64_t maxNodes, unsigned maxDepth,
                                     mlir::Location fileLoc);

/// An error at the node if an ONNX op's stride, dilation or kernel size is
/// not positive, or an axis lies beyond any tensor's rank.
llvm::LogicalResult checkAttributeRanges(const onnx::GraphProto &graph,
                                         mlir::Location fileLoc);

/// An error at the node if a convolution's (Conv, ConvInteger,
/// ConvTranspose, QLinearConv) weights and input, where the graph declares
/// both, differ in rank.
llvm::LogicalResult checkConvWeightRanks(const onnx::GraphProto &graph,
                                         mlir::Location fileLoc);

} // namespace kiln

#endif // KILN_LIB_IMPORT_MODELCHECKS_H
