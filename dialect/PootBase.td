//===- PootBase.td - poot dialect definition and shared types -*- tablegen -*-===//
//
// The poot dialect holds (1) the primitive vocabulary the model tracer emits
// and (2) the fused attention ops the compiler forms from it. Every tensor is a
// ranked tensor with a static shape (dynamic shapes are not supported yet).
//
//===----------------------------------------------------------------------===//

#ifndef POOT_BASE_TD
#define POOT_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Poot_Dialect : Dialect {
  let name = "poot";
  let cppNamespace = "::mlir::poot";
  let summary = "Transformer attention and KV-cache primitives, and their fused forms";
  let description = [{
    `poot` models a transformer step function the way the tracer records it:
    a chain of primitive tensor ops (matmul, reduce, elementwise, slices,
    gathers and scatters) with no attention opcode, plus the fused ops the
    compiler forms from those chains (`poot.attention`,
    `poot.block_topk`, `poot.selected_attention`).

    Function arguments and results carry two discardable attributes that
    later passes and the runtimes rely on:
    - `poot.slot = #poot.slot<KIND>` or `#poot.slot<state "NAME">` marks what
      a value is to the driver (state in/out, position, slot maps, validation
      outputs);
    - `poot.range = #poot.range<MIN, MAX>` declares the inclusive value range
      of an integer argument, which the binder enforces and the integer range
      analysis starts from;
    - `poot.shard = #poot.shard<dim = D, block = B, parts = P>` marks the
      block of an unsharded weight or state a tensor-parallel rank program
      takes (arguments and state results; see poot-tensor-parallel).
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let hasConstantMaterializer = 1;
  let extraClassDeclaration = [{
    /// Attribute names used on function arguments and results.
    static constexpr ::llvm::StringLiteral kSlotAttrName = "poot.slot";
    static constexpr ::llvm::StringLiteral kRangeAttrName = "poot.range";
    static constexpr ::llvm::StringLiteral kNameAttrName = "poot.name";
    /// A tensor-parallel rank program's block of an argument or state
    /// result (#poot.shard), and the function's rank and degree
    /// (#poot.tensor_parallel).
    static constexpr ::llvm::StringLiteral kShardAttrName = "poot.shard";
    static constexpr ::llvm::StringLiteral kTensorParallelAttrName =
        "poot.tensor_parallel";
    /// The plan a fused op's offload call carries (a copy of the op's
    /// declared `request`: #poot.attention_request and its kin), for the
    /// launches of the whole-step program.
    static constexpr ::llvm::StringLiteral kRequestAttrName = "poot.request";
    /// The declared `request` of a poot.attention, poot.selected_attention
    /// or poot.block_topk (null when unplanned or another op).
    static ::mlir::Attribute getPlan(::mlir::Operation *op);

  private:
    void registerAttributes();
  public:
  }];
}

class Poot_Op<string mnemonic, list<Trait> traits = []>
    : Op<Poot_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Type constraints. Static shapes only; the element types the tracer uses.
//===----------------------------------------------------------------------===//

def Poot_FloatElement : AnyTypeOf<[F64, F32, F16, BF16]>;
def Poot_Element : AnyTypeOf<[F64, F32, F16, BF16, I32, I1]>;

// Every dimension is at least 1: a zero-sized tensor has nothing to compute
// (a max over no keys, a launch of no workgroups), so the dialect refuses it
// at the type instead of each lowering meeting it (the frontend refuses such
// shapes with a TraceError, the same rule). The element count must also fit
// int64, or every getNumElements() on the type overflows.
class Poot_TensorOf<list<Type> allowed>
    : ConfinedType<StaticShapeTensorOf<allowed>,
                   [CPred<"::mlir::poot::isNonEmptyCountableShape($_self)">],
                   StaticShapeTensorOf<allowed>.summary #
                       " with every dimension >= 1 and < 2^63 elements">;

def Poot_Tensor : Poot_TensorOf<[F64, F32, F16, BF16, I32, I1]>;
def Poot_FloatTensor : Poot_TensorOf<[F64, F32, F16, BF16]>;
def Poot_IntTensor : Poot_TensorOf<[I32]>;
def Poot_BoolTensor : Poot_TensorOf<[I1]>;
def Poot_IntOrBoolTensor : Poot_TensorOf<[I32, I1]>;
def Poot_ScalarI32 : 0DTensorOf<[I32]>;

// A signless 64-bit integer attribute read back as a signed value (I64Attr's
// getter zero-extends, so `min = -1` would read as 2^64 - 1).
def Poot_SignedI64Attr
    : TypedSignlessIntegerAttrBase<I64, "int64_t", "64-bit integer attribute"> {
  let convertFromStorage = "$_self.getValue().getSExtValue()";
}
def Poot_ScalarI1 : 0DTensorOf<[I1]>,
    BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getI1Type())">;

#endif // POOT_BASE_TD
