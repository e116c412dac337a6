# RUN: %python %s | FileCheck %s
# RUN: %python %s | poot-opt | FileCheck %s

# ops.attention_mla: the split key concat(k_nope, broadcast(k_pe)) on the last
# axis, then the standard chain (decode mask with pos, causal without).

from poot_mlir.frontend import Tracer, ops


def mla_decode() -> None:
    tr = Tracer("mla_decode")
    pos = tr.pos(max_pos=15)
    q = tr.input("q", (1, 4, 1, 12))
    k_nope = tr.input("k_nope", (1, 2, 16, 8))
    k_pe = tr.input("k_pe", (1, 1, 16, 4))
    v = tr.input("v", (1, 2, 16, 6))
    tr.output("out", ops.attention_mla(q, k_nope, k_pe, v, pos))
    print(tr.mlir())


# CHECK-LABEL: func.func @mla_decode(
# CHECK-SAME: %[[POS:[a-z0-9]+]]: tensor<i32>
# CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<1x4x1x12xf32>
# CHECK-SAME: %[[KN:[a-z0-9]+]]: tensor<1x2x16x8xf32>
# CHECK-SAME: %[[KPE:[a-z0-9]+]]: tensor<1x1x16x4xf32>
# CHECK-SAME: %[[V:[a-z0-9]+]]: tensor<1x2x16x6xf32>
# CHECK-NEXT: %[[KPB:.*]] = poot.broadcast %[[KPE]] : tensor<1x1x16x4xf32> -> tensor<1x2x16x4xf32>
# CHECK-NEXT: %[[KEY:.*]] = poot.concat %[[KN]], %[[KPB]] axis = 3 : (tensor<1x2x16x8xf32>, tensor<1x2x16x4xf32>) -> tensor<1x2x16x12xf32>
# CHECK-NEXT: %[[KR:.*]] = poot.reshape %[[KEY]] : tensor<1x2x16x12xf32> -> tensor<1x2x1x16x12xf32>
# CHECK-NEXT: %[[KB:.*]] = poot.broadcast %[[KR]]
# CHECK-NEXT: %[[KX:.*]] = poot.reshape %[[KB]] : tensor<1x2x2x16x12xf32> -> tensor<1x4x16x12xf32>
# CHECK-NEXT: poot.reshape %[[V]]
# CHECK-NEXT: poot.broadcast
# CHECK-NEXT: %[[VX:.*]] = poot.reshape
# CHECK-NEXT: %[[T:.*]] = poot.iota dim = 3 : tensor<1x1x1x16xi32>
# CHECK-NEXT: poot.compare gt, %[[T]], %[[POS]]
# CHECK-NEXT: poot.constant
# CHECK-NEXT: poot.constant
# CHECK-NEXT: %[[MASK:.*]] = poot.select
# CHECK-NEXT: %[[KT:.*]] = poot.transpose %[[KX]] perm = [0, 1, 3, 2] : tensor<1x4x16x12xf32> -> tensor<1x4x12x16xf32>
# CHECK-NEXT: %[[S0:.*]] = poot.matmul %[[Q]], %[[KT]]
# 1/sqrt(12), the full key width, rounded to f32:
# CHECK-NEXT: %[[SC:.*]] = poot.constant dense<0.288675129> : tensor<f32>
# CHECK-NEXT: %[[S1:.*]] = poot.mul %[[S0]], %[[SC]]
# CHECK-NEXT: %[[S2:.*]] = poot.add %[[S1]], %[[MASK]]
# CHECK-NEXT: poot.reduce max %[[S2]]
# CHECK-NEXT: poot.sub
# CHECK-NEXT: poot.exp
# CHECK-NEXT: poot.reduce sum
# CHECK-NEXT: %[[P:.*]] = poot.div
# CHECK-NEXT: %[[OUT:.*]] = poot.matmul %[[P]], %[[VX]] : (tensor<1x4x1x16xf32>, tensor<1x4x16x6xf32>) -> tensor<1x4x1x6xf32>
# CHECK-NEXT: return %[[OUT]]


def mla_prefill_single_head() -> None:
    """Hkv = 1: the broadcast of k_pe is still emitted (the chain the rewrite
    matches); then a causal mask."""
    tr = Tracer("mla_prefill_single_head")
    q = tr.input("q", (1, 2, 4, 6))
    k_nope = tr.input("k_nope", (1, 1, 4, 4))
    k_pe = tr.input("k_pe", (1, 1, 4, 2))
    v = tr.input("v", (1, 1, 4, 4))
    tr.output("out", ops.attention_mla(q, k_nope, k_pe, v))
    print(tr.mlir())


# CHECK-LABEL: func.func @mla_prefill_single_head(
# CHECK-NEXT: %[[KPB:.*]] = poot.broadcast %arg2 : tensor<1x1x4x2xf32> -> tensor<1x1x4x2xf32>
# CHECK-NEXT: poot.concat %arg1, %[[KPB]] axis = 3
# CHECK: poot.iota dim = 2 : tensor<1x1x4x1xi32>
# CHECK-NEXT: poot.iota dim = 3 : tensor<1x1x1x4xi32>
# CHECK-NEXT: poot.compare gt


mla_decode()
mla_prefill_single_head()
