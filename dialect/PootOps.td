//===- PootOps.td - poot primitive ops ---------------------*- tablegen -*-===//
//
// The tracer's vocabulary. Elementwise binary ops, `compare` and `select`
// broadcast implicitly with numpy rules: shapes are aligned at the trailing
// dimension, and each pair of dimensions is equal or one of them is 1.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_OPS_TD
#define POOT_OPS_TD

include "dialect/PootBase.td"
include "dialect/PootAttrs.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/InferIntRangeInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

//===----------------------------------------------------------------------===//
// Constants and index generators
//===----------------------------------------------------------------------===//

def Poot_ConstantOp : Poot_Op<"constant", [ConstantLike, Pure,
    AllTypesMatch<["value", "result"]>,
    DeclareOpInterfaceMethods<InferIntRangeInterface, ["inferResultRanges"]>]> {
  let summary = "A tensor constant";
  let description = [{
    `result = value`. Scalars are 0-d tensors.

    ```mlir
    %scale = poot.constant dense<0.125> : tensor<f32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Poot_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def Poot_IotaOp : Poot_Op<"iota", [Pure,
    DeclareOpInterfaceMethods<InferIntRangeInterface, ["inferResultRanges"]>]> {
  let summary = "Indices along one dimension";
  let description = [{
    `result[i_0, ..., i_n] = i_dimension` (converted to the element type).
    The tracer builds the causal mask from it: `iota(cap) > pos`.

    ```mlir
    %t = poot.iota dim = 3 : tensor<1x1x1x128xi32>
    ```
  }];
  let arguments = (ins I64Attr:$dim);
  let results = (outs Poot_Tensor:$result);
  let assemblyFormat = "`dim` `=` $dim attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

def Poot_DynamicUpdateSliceOp : Poot_Op<"dynamic_update_slice", [Pure,
    AllTypesMatch<["operand", "result"]>,
    AllElementTypesMatch<["operand", "update"]>]> {
  let summary = "Write a slab into a tensor at a runtime offset along one axis";
  let description = [{
    With `n = update.shape[axis]` and `s = clamp(start, 0, operand.shape[axis] - n)`:
    `result = operand` except `result[..., s + j, ...] = update[..., j, ...]`
    for `0 <= j < n` along `axis`. `update` has the operand's shape in every
    other dimension. The clamp (as in XLA) keeps every write in bounds; the
    decode step writes the new K/V row at `pos` this way
    (`state_in -> state_out`).

    ```mlir
    %k1 = poot.dynamic_update_slice %k0, %knew, %pos axis = 2
        : tensor<1x8x128x64xf32>, tensor<1x8x1x64xf32>, tensor<i32>
    ```
  }];
  let arguments = (ins Poot_Tensor:$operand, Poot_Tensor:$update,
                   Poot_ScalarI32:$start, I64Attr:$axis);
  let results = (outs Poot_Tensor:$result);
  let assemblyFormat = [{
    $operand `,` $update `,` $start `axis` `=` $axis attr-dict `:`
    type($operand) `,` type($update) `,` type($start)
  }];
  let hasVerifier = 1;
}

def Poot_ReshapeOp : Poot_Op<"reshape", [Pure, SameOperandsAndResultElementType,
    DeclareOpInterfaceMethods<InferIntRangeInterface, ["inferResultRanges"]>]> {
  let summary = "Reinterpret the row-major element order with a new shape";
  let description = [{
    `result.flat = operand.flat`; both shapes hold the same element count.

    ```mlir
    %0 = poot.reshape %k : tensor<1x8x128x64xf32> -> tensor<1x8x1x128x64xf32>
    ```
  }];
  let arguments = (ins Poot_Tensor:$operand);
  let results = (outs Poot_Tensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Poot_BroadcastOp : Poot_Op<"broadcast", [Pure, SameOperandsAndResultElementType,
    DeclareOpInterfaceMethods<InferIntRangeInterface, ["inferResultRanges"]>]> {
  let summary = "Explicit numpy broadcast_to";
  let description = [{
    `result = numpy.broadcast_to(operand, result.shape)`: the operand's
    dimensions align with the trailing result dimensions and each is 1 or
    equal. `repeat_kv` is `reshape -> broadcast -> reshape` over the head axis.

    ```mlir
    %0 = poot.broadcast %k : tensor<1x8x1x128x64xf32> -> tensor<1x8x4x128x64xf32>
    ```
  }];
  let arguments = (ins Poot_Tensor:$operand);
  let results = (outs Poot_Tensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Poot_TransposeOp : Poot_Op<"transpose", [Pure,
    InferTypeOpAdaptor,
    DeclareOpInterfaceMethods<InferIntRangeInterface, ["inferResultRanges"]>]> {
  let summary = "Permute dimensions";
  let description = [{
    `result[i_perm[0], ..., i_perm[n-1]] = operand[i_0, ..., i_(n-1)]`, i.e.
    `result.shape[d] = operand.shape[permutation[d]]` (numpy `transpose`).

    ```mlir
    %kt = poot.transpose %k perm = [0, 1, 3, 2]
        : tensor<1x32x128x64xf32> -> tensor<1x32x64x128xf32>
    ```
  }];
  let arguments = (ins Poot_Tensor:$operand, DenseI64ArrayAttr:$permutation);
  let results = (outs Poot_Tensor:$result);
  let assemblyFormat = [{
    $operand `perm` `=` $permutation attr-dict `:` type($operand) `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Poot_SliceOp : Poot_Op<"slice", [Pure, SameOperandsAndResultElementType,
    InferTypeOpAdaptor,
    DeclareOpInterfaceMethods<InferIntRangeInterface, ["inferResultRanges"]>]> {
  let summary = "Static strided slice";
  let description = [{
    `result = operand[start[0]:limit[0]:strides[0], ...]` (numpy basic slicing
    with non-negative bounds, `0 <= start <= limit <= dim`, `strides >= 1`).

    ```mlir
    %x1 = poot.slice %x [0, 0, 0, 0] to [1, 32, 1, 32] step [1, 1, 1, 1]
        : tensor<1x32x1x64xf32> -> tensor<1x32x1x32xf32>
    ```
  }];
  let arguments = (ins Poot_Tensor:$operand, DenseI64ArrayAttr:$start,
                   DenseI64ArrayAttr:$limit, DenseI64ArrayAttr:$strides);
  let results = (outs Poot_Tensor:$result);
  let assemblyFormat = [{
    $operand $start `to` $limit `step` $strides attr-dict `:` type($operand) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Poot_ConcatOp : Poot_Op<"concat", [Pure, SameOperandsAndResultElementType,
    InferTypeOpAdaptor,
    DeclareOpInterfaceMethods<InferIntRangeInterface, ["inferResultRanges"]>]> {
  let summary = "Concatenate along one axis";
  let description = [{
    numpy `concatenate(inputs, axis)`: all inputs agree on every other
    dimension. The MLA key is `concat(k_nope, broadcast(k_pe))` on the last axis.

    ```mlir
    %k = poot.concat %a, %b axis = 3
        : (tensor<1x8x128x32xf32>, tensor<1x8x128x16xf32>) -> tensor<1x8x128x48xf32>
    ```
  }];
  let arguments = (ins Variadic<Poot_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Poot_Tensor:$result);
  let assemblyFormat = [{
    $inputs `axis` `=` $axis attr-dict `:` functional-type($inputs, $result)
  }];
  let hasVerifier = 1;
}

def Poot_ConvertOp : Poot_Op<"convert", [Pure, SameOperandsAndResultShape,
    DeclareOpInterfaceMethods<InferIntRangeInterface, ["inferResultRanges"]>]> {
  let summary = "Element type conversion";
  let description = [{
    `result = operand` converted elementwise: float to float rounds to nearest
    even, int to float is exact where representable, float to int truncates
    toward zero, and `i1` maps to 0/1.

    ```mlir
    %0 = poot.convert %pos : tensor<i32> -> tensor<f32>
    ```
  }];
  let arguments = (ins Poot_Tensor:$operand);
  let results = (outs Poot_Tensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand) `->` type($result)";
  let hasFolder = 1;
}

def Poot_GatherOp : Poot_Op<"gather", [Pure,
    InferTypeOpAdaptor,
    DeclareOpInterfaceMethods<InferIntRangeInterface, ["inferResultRanges"]>]> {
  let summary = "Take rows along one axis by index (numpy take)";
  let description = [{
    `result = numpy.take(operand, clip(indices, 0, operand.shape[axis] - 1), axis)`:
    `result.shape = operand.shape[:axis] + indices.shape + operand.shape[axis+1:]`.
    The clip keeps every read in bounds; a paged read map is declared in
    `[0, pool_slots)` and the binder refuses any word outside it, so the clip
    never changes a bound program. The paged layout reads each row's K/V from
    the pool `[S, Hkv, D]` through `read [B, cap]` this way.

    ```mlir
    %kv = poot.gather %pool[%read] axis = 0
        : (tensor<64x8x64xf32>, tensor<1x128xi32>) -> tensor<1x128x8x64xf32>
    ```
  }];
  let arguments = (ins Poot_Tensor:$operand, Poot_IntTensor:$indices, I64Attr:$axis);
  let results = (outs Poot_Tensor:$result);
  let assemblyFormat = [{
    $operand `[` $indices `]` `axis` `=` $axis attr-dict `:`
    `(` type($operand) `,` type($indices) `)` `->` type($result)
  }];
  let hasVerifier = 1;
}

def Poot_ScatterUpdateOp : Poot_Op<"scatter_update", [Pure,
    AllTypesMatch<["operand", "result"]>,
    AllElementTypesMatch<["operand", "updates"]>]> {
  let summary = "Overwrite rows along axis 0 by index; -1 writes nothing";
  let description = [{
    For each `i`, with `s = indices[i]`: if `0 <= s < operand.shape[0]`,
    `result[s, ...] = updates[i, ...]`; otherwise (padding token, `-1`) row `i`
    writes nothing. Every other row keeps `operand`. `indices` is 1-D and
    `updates.shape = [indices.shape[0]] + operand.shape[1:]`. When two indices
    name the same slot the later one wins; a bound write map never does that
    (the binder refuses duplicates). The paged graph writes new K/V rows
    into the donated pool this way, at a cost that follows the tokens.

    ```mlir
    %pool1 = poot.scatter_update %pool[%write], %rows
        : tensor<64x8x64xf32>, tensor<2xi32>, tensor<2x8x64xf32>
    ```
  }];
  let arguments = (ins Poot_Tensor:$operand, Poot_IntTensor:$indices,
                   Poot_Tensor:$updates);
  let results = (outs Poot_Tensor:$result);
  let assemblyFormat = [{
    $operand `[` $indices `]` `,` $updates attr-dict `:`
    type($operand) `,` type($indices) `,` type($updates)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Contractions and reductions
//===----------------------------------------------------------------------===//

def Poot_MatMulOp : Poot_Op<"matmul", [Pure,
    InferTypeOpAdaptor]> {
  let summary = "Batched matrix product over the last two dimensions";
  let description = [{
    numpy `matmul`: `result[..., i, j] = sum_k lhs[..., i, k] * rhs[..., k, j]`.
    Both operands have rank >= 2; the batch dimensions broadcast with numpy
    rules. f32 and f64 accumulate in the element type; f16 and bf16 follow
    the 16-bit contract (docs/sixteen-bit-contract.md): the products and sum
    in f32, rounded once to the element type, as torch and cuBLAS do.

    ```mlir
    %s = poot.matmul %q, %kt
        : (tensor<1x32x1x64xf32>, tensor<1x32x64x128xf32>) -> tensor<1x32x1x128xf32>
    ```
  }];
  let arguments = (ins Poot_FloatTensor:$lhs, Poot_FloatTensor:$rhs);
  let results = (outs Poot_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Poot_ReduceOp : Poot_Op<"reduce", [Pure, SameOperandsAndResultElementType,
    InferTypeOpAdaptor]> {
  let summary = "Sum, max or min over one axis";
  let description = [{
    `result = numpy.{sum,max,min}(operand, axis=axis, keepdims=keepdim)`.
    Softmax takes `reduce max` then `reduce sum`, both with `keepdim`.
    A 16-bit float `sum` accumulates in f32 and rounds once to the element
    type (docs/sixteen-bit-contract.md); max and min are exact in any type.

    ```mlir
    %m = poot.reduce max %s axis = 3 keepdim
        : tensor<1x32x1x128xf32> -> tensor<1x32x1x1xf32>
    ```
  }];
  let arguments = (ins Poot_ReduceKindAttr:$kind, Poot_Tensor:$operand,
                   I64Attr:$axis, UnitAttr:$keepdim);
  let results = (outs Poot_Tensor:$result);
  let assemblyFormat = [{
    $kind $operand `axis` `=` $axis (`keepdim` $keepdim^)? attr-dict `:`
    type($operand) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Poot_TopKOp : Poot_Op<"top_k", [Pure,
    InferTypeOpAdaptor]> {
  let summary = "The k largest entries of the last axis, and their indices";
  let description = [{
    Over the last axis, `values` holds the `k` largest entries in descending
    order and `indices` their positions (i32); ties go to the lower index
    (a stable sort of `-operand`). The sparse indexer selects its key blocks
    with it. `1 <= k <= operand.shape[-1]`.

    ```mlir
    %v, %i = poot.top_k %scores k = 4 : tensor<1x1x16xf32>
        -> tensor<1x1x4xf32>, tensor<1x1x4xi32>
    ```
  }];
  let arguments = (ins Poot_FloatTensor:$operand, Poot_SignedI64Attr:$k);
  let results = (outs Poot_FloatTensor:$values, Poot_IntTensor:$indices);
  let assemblyFormat = [{
    $operand `k` `=` $k attr-dict `:` type($operand) `->` type($values) `,` type($indices)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

class Poot_BinaryOp<string mnemonic, string math, TypeConstraint operandType,
                    list<Trait> traits = []>
    : Poot_Op<mnemonic, !listconcat(traits, [Pure,
        SameOperandsAndResultElementType,
        InferTypeOpAdaptor])> {
  let summary = "Elementwise " # mnemonic # " with implicit numpy broadcasting";
  let description = "`result = " # math # "`, broadcasting `lhs` and `rhs` "
    # "with numpy rules.\n\n```mlir\n%0 = poot." # mnemonic
    # " %a, %b : (tensor<1x32x1x128xf32>, tensor<1x32x1x1xf32>) -> tensor<1x32x1x128xf32>\n```";
  let arguments = (ins operandType:$lhs, operandType:$rhs);
  let results = (outs operandType:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Poot_AddOp : Poot_BinaryOp<"add", "lhs + rhs", Poot_Tensor,
    [DeclareOpInterfaceMethods<InferIntRangeInterface, ["inferResultRanges"]>]>;
def Poot_SubOp : Poot_BinaryOp<"sub", "lhs - rhs", Poot_Tensor,
    [DeclareOpInterfaceMethods<InferIntRangeInterface, ["inferResultRanges"]>]>;
def Poot_MulOp : Poot_BinaryOp<"mul", "lhs * rhs", Poot_Tensor>;
def Poot_DivOp : Poot_BinaryOp<"div",
    "lhs / rhs (i32: floor division; division by zero gives 0)", Poot_Tensor>;
def Poot_MaxOp : Poot_BinaryOp<"max", "max(lhs, rhs) (NaN propagates)", Poot_Tensor,
    [DeclareOpInterfaceMethods<InferIntRangeInterface, ["inferResultRanges"]>]>;
def Poot_MinOp : Poot_BinaryOp<"min", "min(lhs, rhs) (NaN propagates)", Poot_Tensor,
    [DeclareOpInterfaceMethods<InferIntRangeInterface, ["inferResultRanges"]>]>;
def Poot_AndOp : Poot_BinaryOp<"and", "lhs & rhs (bitwise; logical on i1)", Poot_IntOrBoolTensor>;
def Poot_OrOp : Poot_BinaryOp<"or", "lhs | rhs (bitwise; logical on i1)", Poot_IntOrBoolTensor>;

class Poot_UnaryOp<string mnemonic, string math, TypeConstraint type = Poot_FloatTensor>
    : Poot_Op<mnemonic, [Pure, SameOperandsAndResultType]> {
  let summary = "Elementwise " # mnemonic;
  let description = "`result = " # math # "` elementwise.\n\n```mlir\n%0 = poot."
    # mnemonic # " %x : tensor<1x32x1x128xf32>\n```";
  let arguments = (ins type:$operand);
  let results = (outs type:$result);
  let assemblyFormat = "$operand attr-dict `:` type($result)";
}

def Poot_ExpOp : Poot_UnaryOp<"exp", "e^x (exp(-inf) = 0)">;
def Poot_LogOp : Poot_UnaryOp<"log", "ln(x)">;
def Poot_TanhOp : Poot_UnaryOp<"tanh", "tanh(x)">;
def Poot_LogisticOp : Poot_UnaryOp<"logistic", "1 / (1 + e^-x)">;
def Poot_SqrtOp : Poot_UnaryOp<"sqrt", "sqrt(x)">;
def Poot_RsqrtOp : Poot_UnaryOp<"rsqrt", "1 / sqrt(x)">;
def Poot_SinOp : Poot_UnaryOp<"sin", "sin(x)">;
def Poot_CosOp : Poot_UnaryOp<"cos", "cos(x)">;
def Poot_NegOp : Poot_UnaryOp<"neg", "-x", Poot_TensorOf<[F64, F32, F16, BF16, I32]>> {
  let hasCanonicalizer = 1;
}
def Poot_AbsOp : Poot_UnaryOp<"abs", "|x|", Poot_TensorOf<[F64, F32, F16, BF16, I32]>>;

def Poot_CompareOp : Poot_Op<"compare", [Pure,
    InferTypeOpAdaptor]> {
  let summary = "Elementwise comparison with implicit numpy broadcasting";
  let description = [{
    `result = lhs <direction> rhs` as i1 (`eq, ne, lt, le, gt, ge`); any
    comparison with NaN is false except `ne`.

    ```mlir
    %future = poot.compare gt, %iota, %pos
        : (tensor<1x1x1x128xi32>, tensor<i32>) -> tensor<1x1x1x128xi1>
    ```
  }];
  let arguments = (ins Poot_CompareDirectionAttr:$direction,
                   Poot_Tensor:$lhs, Poot_Tensor:$rhs);
  let results = (outs Poot_BoolTensor:$result);
  let assemblyFormat = [{
    $direction `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Poot_SelectOp : Poot_Op<"select", [Pure,
    InferTypeOpAdaptor,
    DeclareOpInterfaceMethods<InferIntRangeInterface, ["inferResultRanges"]>]> {
  let summary = "Elementwise choice with implicit numpy broadcasting";
  let description = [{
    `result = cond ? on_true : on_false`, all three broadcast together. A
    true select: the unchosen value never reaches the result, so a NaN in an
    unused K/V row cannot leak (multiplying by zero would keep it).

    ```mlir
    %s = poot.select %live, %scores, %ninf
        : (tensor<1x1x1x128xi1>, tensor<1x32x1x128xf32>, tensor<f32>) -> tensor<1x32x1x128xf32>
    ```
  }];
  let arguments = (ins Poot_BoolTensor:$cond, Poot_Tensor:$on_true,
                   Poot_Tensor:$on_false);
  let results = (outs Poot_Tensor:$result);
  let assemblyFormat = [{
    $cond `,` $on_true `,` $on_false attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

//===----------------------------------------------------------------------===//
// Recognized composites
//===----------------------------------------------------------------------===//

def Poot_RopeOp : Poot_Op<"rope", [Pure, InferTypeOpAdaptor]> {
  let summary = "Rotary position embedding, rotate-half form";
  let description = [{
    With `d = input.shape[-1]` (even) and `h = d / 2`, over the last axis:

    ```
    rotate_half(x) = concat(-x[..., h:], x[..., :h])
    result         = x * cos + rotate_half(x) * sin
    ```

    `cos` and `sin` broadcast to the input's shape with numpy rules (the
    tracer passes `[1, 1, L, d]` tables against `[B, H, L, d]` heads); the
    result has the input's type. The tracer never emits this op: the
    `poot-recognize-rope` pass forms it from exactly that primitive chain
    (`mul`, `slice`, `neg`, `concat`, `mul`, `add`), so later passes can see
    through a rotary embedding as one value.

    ```mlir
    %qr = poot.rope %q, %cos, %sin
        : tensor<1x32x1x64xf32>, tensor<1x1x1x64xf32>, tensor<1x1x1x64xf32>
        -> tensor<1x32x1x64xf32>
    ```
  }];
  let arguments = (ins Poot_FloatTensor:$input, Poot_FloatTensor:$cos,
                   Poot_FloatTensor:$sin);
  let results = (outs Poot_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $cos `,` $sin attr-dict `:` type($input) `,` type($cos) `,`
    type($sin) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

def Poot_AllReduceOp : Poot_Op<"all_reduce", [SameOperandsAndResultType]> {
  let summary = "Sum a tensor over the ranks of a tensor-parallel step";
  let description = [{
    `result = sum over ranks r of operand_r`, elementwise, where `operand_r`
    is rank r's value of the operand and every rank gets the same result.
    A two-byte operand is widened to f32 exactly, summed in f32 and rounded
    once to its type (the 16-bit contract of docs/sixteen-bit-contract.md); f32 sums
    in f32. In a world of one rank the result is the operand.

    `poot-tensor-parallel` inserts it after a row-parallel matmul (attention's
    output projection, the MLP's down projection), whose per-rank results are
    partial sums. It communicates, so it is not `Pure`: it is never hoisted,
    merged or dropped, and every rank runs the same collectives in the same
    order. The runtimes answer it with the communicator they were given (a
    torch.distributed process group).

    ```mlir
    %sum = poot.all_reduce %partial : tensor<1x1x4096xbf16>
    ```
  }];
  let arguments = (ins Poot_FloatTensor:$operand);
  let results = (outs Poot_FloatTensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand)";
}

//===----------------------------------------------------------------------===//
// Runtime checks
//===----------------------------------------------------------------------===//

def Poot_IndexGuardOp : Poot_Op<"index_guard", [Pure,
    AllTypesMatch<["operand", "clamped"]>,
    DeclareOpInterfaceMethods<InferIntRangeInterface, ["inferResultRanges"]>]> {
  let summary = "Clamp an index into [min, max] and witness that it was in range";
  let description = [{
    `clamped = clamp(operand, min, max)` and `witness = all(min <= operand <= max)`
    (a 0-d i1). The clamp keeps every later read in bounds; the witness says
    whether the clamp changed anything. A program that relies on the clamped
    range for correctness (the live attention bound) returns the witness as a
    `#poot.slot<validation>` result, so a bad index fails the step instead of
    turning silently into a valid-looking answer.

    ```mlir
    %len, %ok = poot.index_guard %raw min = 1 max = 128 : tensor<1xi32>
    ```
  }];
  let arguments = (ins Poot_IntTensor:$operand, Poot_SignedI64Attr:$min,
                   Poot_SignedI64Attr:$max);
  let results = (outs Poot_IntTensor:$clamped, Poot_ScalarI1:$witness);
  let assemblyFormat = [{
    $operand `min` `=` $min `max` `=` $max attr-dict `:` type($operand)
  }];
  let hasVerifier = 1;
}

#endif // POOT_OPS_TD
