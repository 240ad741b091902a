//===- KilnBase.td - kiln dialect definition ---------------*- tablegen -*-===//
//
// The kiln dialect: value-semantics tensor ops that ONNX graphs are imported
// into and that Kiln's graph passes rewrite.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILN_BASE
#define KILN_DIALECT_KILN_BASE

include "mlir/IR/OpBase.td"

def Kiln_Dialect : Dialect {
  let name = "kiln";
  let cppNamespace = "::kiln";
  let summary = "Tensor ops for compiling ONNX models";
  let description = [{
    The kiln dialect holds the tensor operations of an imported model. Every
    op has value semantics on ranked tensors with static shapes; several ONNX
    spellings may map to one kiln op. Ops carry the location of the ONNX node
    they were imported from, so diagnostics name the user's node.
  }];
  let hasConstantMaterializer = 1;
}

class Kiln_Op<string mnemonic, list<Trait> traits = []>
    : Op<Kiln_Dialect, mnemonic, traits>;

// Element types Kiln computes in today: any tensor Kiln moves around may be
// f32, i64 or i1; arithmetic takes the numeric ones.
def Kiln_Tensor : StaticShapeTensorOf<[F32, I64, I1]>;
def Kiln_NumericTensor : StaticShapeTensorOf<[F32, I64]>;
def Kiln_BoolTensor : StaticShapeTensorOf<[I1]>;
def Kiln_FloatTensor : StaticShapeTensorOf<[F32]>;
def Kiln_IndexTensor : StaticShapeTensorOf<[I64]>;
// The error code an entry point's run-time checks produce (0: no error).
def Kiln_StatusTensor : 0DTensorOf<[I32]>, BuildableType<
    "::mlir::RankedTensorType::get({}, $_builder.getI32Type())">;

#endif // KILN_DIALECT_KILN_BASE
