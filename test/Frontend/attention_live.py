# RUN: %python %s | FileCheck %s
# RUN: %python %s | poot-opt -poot-verify-driver-contract | FileCheck %s

# ops.attention_live, the one definition of the live-length decode:
# len = pos + 1 as [B] i32, bounded by an index guard whose witness is a
# validation result; inactive K/V rows selected to zero before either matmul;
# inactive scores selected to -inf before the softmax.

from poot_mlir.frontend import Tracer, ops


def live_gqa() -> None:
    tr = Tracer("live_gqa")
    k_cache = tr.state("k0", (2, 2, 16, 8), "f32")
    v_cache = tr.state("v0", (2, 2, 16, 4), "f32")
    pos = tr.pos(max_pos=15)
    q = tr.input("q", (2, 4, 1, 8))
    k = tr.input("k", (2, 2, 1, 8))
    v = tr.input("v", (2, 2, 1, 4))
    out, k1, v1 = ops.attention_live(q, k, v, k_cache, v_cache, pos)
    tr.output("out", out)
    tr.state_out("k0", k1)
    tr.state_out("v0", v1)
    print(tr.mlir())


# CHECK-LABEL: func.func @live_gqa(
# CHECK-SAME: %[[KC:[a-z0-9]+]]: tensor<2x2x16x8xf32>
# CHECK-SAME: %[[VC:[a-z0-9]+]]: tensor<2x2x16x4xf32>
# CHECK-SAME: %[[POS:[a-z0-9]+]]: tensor<i32>
# CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<2x4x1x8xf32>
# CHECK-SAME: -> (tensor<i1> {poot.name = "live_len_ok_0", poot.slot = #poot.slot<validation>}, tensor<2x4x1x4xf32> {poot.name = "out"}
# CHECK-NEXT: %[[K1:.*]] = poot.dynamic_update_slice %[[KC]]
# CHECK-NEXT: %[[V1:.*]] = poot.dynamic_update_slice %[[VC]]
# CHECK-NEXT: %[[ONE:.*]] = poot.constant dense<1> : tensor<i32>
# CHECK-NEXT: %[[LP:.*]] = poot.add %[[POS]], %[[ONE]] : (tensor<i32>, tensor<i32>) -> tensor<i32>
# CHECK-NEXT: %[[LB:.*]] = poot.broadcast %[[LP]] : tensor<i32> -> tensor<2xi32>
# CHECK-NEXT: %[[LEN:.*]], %[[OK:.*]] = poot.index_guard %[[LB]] min = 1 max = 16 : tensor<2xi32>
# CHECK-NEXT: %[[LEN4:.*]] = poot.reshape %[[LEN]] : tensor<2xi32> -> tensor<2x1x1x1xi32>
# CHECK-NEXT: %[[TR:.*]] = poot.iota dim = 2 : tensor<1x1x16x1xi32>
# CHECK-NEXT: %[[KROW:.*]] = poot.compare lt, %[[TR]], %[[LEN4]] : (tensor<1x1x16x1xi32>, tensor<2x1x1x1xi32>) -> tensor<2x1x16x1xi1>
# CHECK-NEXT: %[[ZERO:.*]] = poot.constant dense<0.000000e+00> : tensor<f32>
# CHECK-NEXT: %[[KL:.*]] = poot.select %[[KROW]], %[[K1]], %[[ZERO]] : (tensor<2x1x16x1xi1>, tensor<2x2x16x8xf32>, tensor<f32>) -> tensor<2x2x16x8xf32>
# CHECK-NEXT: %[[VL:.*]] = poot.select %[[KROW]], %[[V1]], %[[ZERO]] : (tensor<2x1x16x1xi1>, tensor<2x2x16x4xf32>, tensor<f32>) -> tensor<2x2x16x4xf32>
# CHECK-NEXT: %[[KR:.*]] = poot.reshape %[[KL]]
# CHECK-NEXT: %[[KB:.*]] = poot.broadcast %[[KR]]
# CHECK-NEXT: %[[KX:.*]] = poot.reshape %[[KB]] : tensor<2x2x2x16x8xf32> -> tensor<2x4x16x8xf32>
# CHECK-NEXT: %[[VR:.*]] = poot.reshape %[[VL]]
# CHECK-NEXT: %[[VB:.*]] = poot.broadcast %[[VR]]
# CHECK-NEXT: %[[VX:.*]] = poot.reshape %[[VB]] : tensor<2x2x2x16x4xf32> -> tensor<2x4x16x4xf32>
# CHECK-NEXT: %[[TC:.*]] = poot.iota dim = 3 : tensor<1x1x1x16xi32>
# CHECK-NEXT: %[[KEEP:.*]] = poot.compare lt, %[[TC]], %[[LEN4]] : (tensor<1x1x1x16xi32>, tensor<2x1x1x1xi32>) -> tensor<2x1x1x16xi1>
# CHECK-NEXT: %[[KT:.*]] = poot.transpose %[[KX]] perm = [0, 1, 3, 2]
# CHECK-NEXT: %[[S0:.*]] = poot.matmul %[[Q]], %[[KT]]
# CHECK-NEXT: %[[SC:.*]] = poot.constant
# CHECK-NEXT: %[[S1:.*]] = poot.mul %[[S0]], %[[SC]]
# CHECK-NEXT: %[[NINF:.*]] = poot.constant dense<0xFF800000> : tensor<f32>
# CHECK-NEXT: %[[S2:.*]] = poot.select %[[KEEP]], %[[S1]], %[[NINF]] : (tensor<2x1x1x16xi1>, tensor<2x4x1x16xf32>, tensor<f32>) -> tensor<2x4x1x16xf32>
# CHECK-NEXT: %[[M:.*]] = poot.reduce max %[[S2]] axis = 3 keepdim
# CHECK-NEXT: %[[XS:.*]] = poot.sub %[[S2]], %[[M]]
# CHECK-NEXT: %[[EX:.*]] = poot.exp %[[XS]]
# CHECK-NEXT: %[[DEN:.*]] = poot.reduce sum %[[EX]] axis = 3 keepdim
# CHECK-NEXT: %[[P:.*]] = poot.div %[[EX]], %[[DEN]]
# CHECK-NEXT: %[[OUT:.*]] = poot.matmul %[[P]], %[[VX]]
# CHECK-NEXT: return %[[OK]], %[[OUT]], %[[K1]], %[[V1]]


def live_two_layers_bias() -> None:
    """Each live attention records its own witness; a bias and softcap come
    before the -inf select."""
    tr = Tracer("live_two_layers_bias")
    pos = tr.pos(max_pos=7)
    q = tr.input("q", (1, 2, 1, 4))
    k = tr.input("k", (1, 2, 1, 4))
    v = tr.input("v", (1, 2, 1, 4))
    bias = tr.input("bias", (1, 2, 1, 8))
    for layer in range(2):
        kc = tr.state(f"k{layer}", (1, 2, 8, 4))
        vc = tr.state(f"v{layer}", (1, 2, 8, 4))
        out, k1, v1 = ops.attention_live(q, k, v, kc, vc, pos, softcap=5.0, bias=bias)
        tr.state_out(f"k{layer}", k1)
        tr.state_out(f"v{layer}", v1)
        q = out
    tr.output("out", q)
    print(tr.mlir())


# CHECK-LABEL: func.func @live_two_layers_bias(
# CHECK-SAME: -> (tensor<i1> {poot.name = "live_len_ok_0", poot.slot = #poot.slot<validation>}
# CHECK-SAME: tensor<i1> {poot.name = "live_len_ok_1", poot.slot = #poot.slot<validation>}
# CHECK: poot.tanh
# CHECK-NEXT: poot.mul
# CHECK-NEXT: poot.add %{{.*}}, %arg4
# CHECK-NEXT: poot.constant dense<0xFF800000>
# CHECK-NEXT: poot.select
# CHECK-NEXT: poot.reduce max
# CHECK: poot.index_guard %{{.*}} min = 1 max = 8


live_gqa()
live_two_layers_bias()
