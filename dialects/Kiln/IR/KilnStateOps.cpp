//===- KilnStateOps.cpp - session state op verifiers ----------------------===//
#include "dialects/Kiln/IR/KilnOps.h"

using namespace mlir;
using namespace kiln;

LogicalResult StateOp::verify() {
  auto type = cast<RankedTensorType>(getType());
  if (auto initial = getInitialValueAttr())
    if (initial.getType() != type)
      return emitOpError("initial value has type ")
             << initial.getType() << ", not the state's " << type;
  return success();
}

/// The declaration `user` names, checked to exist.
static FailureOr<StateOp> lookupState(Operation *user, FlatSymbolRefAttr name,
                                      SymbolTableCollection &symbols) {
  auto state = symbols.lookupNearestSymbolFrom<StateOp>(user, name);
  if (!state)
    return user->emitOpError("names no kiln.state: ") << name;
  return state;
}

LogicalResult StateReadOp::verifySymbolUses(SymbolTableCollection &symbols) {
  FailureOr<StateOp> state = lookupState(*this, getStateAttr(), symbols);
  if (failed(state))
    return failure();
  if (state->getType() != getType())
    return emitOpError("reads ")
           << getType() << " from state of type " << state->getType();
  return success();
}

LogicalResult StateWriteOp::verifySymbolUses(SymbolTableCollection &symbols) {
  FailureOr<StateOp> state = lookupState(*this, getStateAttr(), symbols);
  if (failed(state))
    return failure();
  if (state->getType() != getValue().getType())
    return emitOpError("writes ")
           << getValue().getType() << " to state of type " << state->getType();
  return success();
}

LogicalResult StateUpdateOp::verify() {
  if (getOffset().getType().getRank() != 0)
    return emitOpError("offset must be a 0-d tensor");
  return success();
}

LogicalResult StateUpdateOp::verifySymbolUses(SymbolTableCollection &symbols) {
  FailureOr<StateOp> state = lookupState(*this, getStateAttr(), symbols);
  if (failed(state))
    return failure();
  auto stateType = cast<RankedTensorType>(state->getType());
  RankedTensorType updateType = getUpdate().getType();
  if (stateType.getElementType() != updateType.getElementType() ||
      stateType.getRank() != updateType.getRank())
    return emitOpError("update of type ")
           << updateType << " doesn't match state of type " << stateType;
  int64_t axis = getAxis();
  if (axis < 0 || axis >= stateType.getRank())
    return emitOpError("axis ") << axis << " is out of range for rank "
                                << stateType.getRank();
  for (int64_t d = 0; d < stateType.getRank(); ++d) {
    int64_t have = updateType.getDimSize(d), whole = stateType.getDimSize(d);
    if (d == axis ? have > whole : have != whole)
      return emitOpError("update of type ")
             << updateType << " doesn't fit state of type " << stateType
             << " along axis " << d;
  }
  return success();
}
