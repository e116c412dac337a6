# RUN: %python %s | FileCheck %s
# RUN: %python %s | poot-opt -poot-verify-driver-contract | FileCheck %s

# ops.attention_masked emits the seed's decode chain: the two cache writes,
# the GQA repeat, the in-graph mask over Slot::Pos, then the score chain
# (matmul, scale, softcap, mask, bias, softmax, matmul).

from poot_mlir.frontend import Tracer, ops


def gqa_softcap_bias() -> None:
    tr = Tracer("gqa_softcap_bias")
    k_cache = tr.state("k0", (1, 2, 16, 8), "f32")
    v_cache = tr.state("v0", (1, 2, 16, 6), "f32")
    pos = tr.pos(max_pos=15)
    q = tr.input("q", (1, 4, 1, 8))
    k = tr.input("k", (1, 2, 1, 8))
    v = tr.input("v", (1, 2, 1, 6))
    bias = tr.input("alibi", (1, 4, 1, 16))
    out, k1, v1 = ops.attention_masked(q, k, v, k_cache, v_cache, pos, softcap=30.0, bias=bias)
    tr.output("out", out)
    tr.state_out("k0", k1)
    tr.state_out("v0", v1)
    print(tr.mlir())


# CHECK-LABEL: func.func @gqa_softcap_bias(
# CHECK-SAME: %[[KC:[a-z0-9]+]]: tensor<1x2x16x8xf32> {poot.name = "k0", poot.slot = #poot.slot<state "k0">}
# CHECK-SAME: %[[VC:[a-z0-9]+]]: tensor<1x2x16x6xf32> {poot.name = "v0", poot.slot = #poot.slot<state "v0">}
# CHECK-SAME: %[[POS:[a-z0-9]+]]: tensor<i32> {poot.name = "pos", poot.range = #poot.range<0, 15>, poot.slot = #poot.slot<pos>}
# CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<1x4x1x8xf32> {poot.name = "q"}
# CHECK-SAME: %[[K:[a-z0-9]+]]: tensor<1x2x1x8xf32> {poot.name = "k"}
# CHECK-SAME: %[[V:[a-z0-9]+]]: tensor<1x2x1x6xf32> {poot.name = "v"}
# CHECK-SAME: %[[BIAS:[a-z0-9]+]]: tensor<1x4x1x16xf32> {poot.name = "alibi"}
# CHECK-SAME: -> (tensor<1x4x1x6xf32> {poot.name = "out"}, tensor<1x2x16x8xf32> {poot.name = "k0", poot.slot = #poot.slot<state "k0">}, tensor<1x2x16x6xf32> {poot.name = "v0", poot.slot = #poot.slot<state "v0">})
# CHECK-NEXT: %[[K1:.*]] = poot.dynamic_update_slice %[[KC]], %[[K]], %[[POS]] axis = 2 : tensor<1x2x16x8xf32>, tensor<1x2x1x8xf32>, tensor<i32>
# CHECK-NEXT: %[[V1:.*]] = poot.dynamic_update_slice %[[VC]], %[[V]], %[[POS]] axis = 2 : tensor<1x2x16x6xf32>, tensor<1x2x1x6xf32>, tensor<i32>
# CHECK-NEXT: %[[KR:.*]] = poot.reshape %[[K1]] : tensor<1x2x16x8xf32> -> tensor<1x2x1x16x8xf32>
# CHECK-NEXT: %[[KB:.*]] = poot.broadcast %[[KR]] : tensor<1x2x1x16x8xf32> -> tensor<1x2x2x16x8xf32>
# CHECK-NEXT: %[[KX:.*]] = poot.reshape %[[KB]] : tensor<1x2x2x16x8xf32> -> tensor<1x4x16x8xf32>
# CHECK-NEXT: %[[VR:.*]] = poot.reshape %[[V1]] : tensor<1x2x16x6xf32> -> tensor<1x2x1x16x6xf32>
# CHECK-NEXT: %[[VB:.*]] = poot.broadcast %[[VR]] : tensor<1x2x1x16x6xf32> -> tensor<1x2x2x16x6xf32>
# CHECK-NEXT: %[[VX:.*]] = poot.reshape %[[VB]] : tensor<1x2x2x16x6xf32> -> tensor<1x4x16x6xf32>
# CHECK-NEXT: %[[T:.*]] = poot.iota dim = 3 : tensor<1x1x1x16xi32>
# CHECK-NEXT: %[[FUT:.*]] = poot.compare gt, %[[T]], %[[POS]] : (tensor<1x1x1x16xi32>, tensor<i32>) -> tensor<1x1x1x16xi1>
# CHECK-NEXT: %[[LOW:.*]] = poot.constant dense<-3.40282347E+38> : tensor<f32>
# CHECK-NEXT: %[[ZERO:.*]] = poot.constant dense<0.000000e+00> : tensor<f32>
# CHECK-NEXT: %[[MASK:.*]] = poot.select %[[FUT]], %[[LOW]], %[[ZERO]] : (tensor<1x1x1x16xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x1x16xf32>
# CHECK-NEXT: %[[KT:.*]] = poot.transpose %[[KX]] perm = [0, 1, 3, 2] : tensor<1x4x16x8xf32> -> tensor<1x4x8x16xf32>
# CHECK-NEXT: %[[S0:.*]] = poot.matmul %[[Q]], %[[KT]] : (tensor<1x4x1x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x1x16xf32>
# 1/sqrt(8) rounded to f32:
# CHECK-NEXT: %[[SC:.*]] = poot.constant dense<0.353553385> : tensor<f32>
# CHECK-NEXT: %[[S1:.*]] = poot.mul %[[S0]], %[[SC]]
# CHECK-NEXT: %[[CAP:.*]] = poot.constant dense<3.000000e+01> : tensor<f32>
# CHECK-NEXT: %[[S2:.*]] = poot.div %[[S1]], %[[CAP]]
# CHECK-NEXT: %[[S3:.*]] = poot.tanh %[[S2]]
# CHECK-NEXT: %[[S4:.*]] = poot.mul %[[S3]], %[[CAP]]
# CHECK-NEXT: %[[S5:.*]] = poot.add %[[S4]], %[[MASK]] : (tensor<1x4x1x16xf32>, tensor<1x1x1x16xf32>) -> tensor<1x4x1x16xf32>
# CHECK-NEXT: %[[S6:.*]] = poot.add %[[S5]], %[[BIAS]] : (tensor<1x4x1x16xf32>, tensor<1x4x1x16xf32>) -> tensor<1x4x1x16xf32>
# CHECK-NEXT: %[[M:.*]] = poot.reduce max %[[S6]] axis = 3 keepdim : tensor<1x4x1x16xf32> -> tensor<1x4x1x1xf32>
# CHECK-NEXT: %[[XS:.*]] = poot.sub %[[S6]], %[[M]]
# CHECK-NEXT: %[[EX:.*]] = poot.exp %[[XS]]
# CHECK-NEXT: %[[DEN:.*]] = poot.reduce sum %[[EX]] axis = 3 keepdim
# CHECK-NEXT: %[[P:.*]] = poot.div %[[EX]], %[[DEN]]
# CHECK-NEXT: %[[OUT:.*]] = poot.matmul %[[P]], %[[VX]] : (tensor<1x4x1x16xf32>, tensor<1x4x16x6xf32>) -> tensor<1x4x1x6xf32>
# CHECK-NEXT: return %[[OUT]], %[[K1]], %[[V1]]


def mha_plain() -> None:
    """Hq == Hkv: repeat_kv emits nothing; no softcap, no bias."""
    tr = Tracer("mha_plain")
    k_cache = tr.state("k0", (2, 2, 8, 4), "f32")
    v_cache = tr.state("v0", (2, 2, 8, 4), "f32")
    pos = tr.pos(max_pos=7)
    q = tr.input("q", (2, 2, 1, 4))
    k = tr.input("k", (2, 2, 1, 4))
    v = tr.input("v", (2, 2, 1, 4))
    out, k1, v1 = ops.attention_masked(q, k, v, k_cache, v_cache, pos, scale=0.25)
    tr.output("out", out)
    tr.state_out("k0", k1)
    tr.state_out("v0", v1)
    print(tr.mlir())


# CHECK-LABEL: func.func @mha_plain(
# CHECK-NEXT: %[[K1:.*]] = poot.dynamic_update_slice
# CHECK-NEXT: %[[V1:.*]] = poot.dynamic_update_slice
# CHECK-NEXT: poot.iota dim = 3 : tensor<1x1x1x8xi32>
# CHECK-NEXT: poot.compare gt
# CHECK-NEXT: poot.constant
# CHECK-NEXT: poot.constant
# CHECK-NEXT: %[[MASK:.*]] = poot.select
# CHECK-NEXT: %[[KT:.*]] = poot.transpose %[[K1]] perm = [0, 1, 3, 2]
# CHECK-NEXT: %[[S0:.*]] = poot.matmul %{{.*}}, %[[KT]]
# CHECK-NEXT: %[[SC:.*]] = poot.constant dense<2.500000e-01> : tensor<f32>
# CHECK-NEXT: %[[S1:.*]] = poot.mul %[[S0]], %[[SC]]
# CHECK-NEXT: %[[S2:.*]] = poot.add %[[S1]], %[[MASK]]
# CHECK-NEXT: poot.reduce max %[[S2]]
# CHECK-NOT: poot.broadcast
# CHECK-NOT: poot.tanh
# CHECK: poot.matmul %{{.*}}, %[[V1]]
# CHECK-NEXT: return


def multi_token() -> None:
    """T = 3 new rows at pos: row i sees t <= pos + i."""
    tr = Tracer("multi_token")
    k_cache = tr.state("k0", (1, 1, 8, 4), "f16")
    v_cache = tr.state("v0", (1, 1, 8, 4), "f16")
    pos = tr.pos(max_pos=5)
    q = tr.input("q", (1, 1, 3, 4), "f16")
    k = tr.input("k", (1, 1, 3, 4), "f16")
    v = tr.input("v", (1, 1, 3, 4), "f16")
    out, k1, v1 = ops.attention_masked(q, k, v, k_cache, v_cache, pos)
    tr.output("out", out)
    tr.state_out("k0", k1)
    tr.state_out("v0", v1)
    print(tr.mlir())


# CHECK-LABEL: func.func @multi_token(
# CHECK: poot.dynamic_update_slice
# CHECK-NEXT: poot.dynamic_update_slice
# CHECK-NEXT: %[[T:.*]] = poot.iota dim = 3 : tensor<1x1x1x8xi32>
# CHECK-NEXT: %[[ROW:.*]] = poot.iota dim = 2 : tensor<1x1x3x1xi32>
# CHECK-NEXT: %[[QP:.*]] = poot.add %[[ROW]], %arg2 : (tensor<1x1x3x1xi32>, tensor<i32>) -> tensor<1x1x3x1xi32>
# CHECK-NEXT: %[[FUT:.*]] = poot.compare gt, %[[T]], %[[QP]] : (tensor<1x1x1x8xi32>, tensor<1x1x3x1xi32>) -> tensor<1x1x3x8xi1>
# CHECK-NEXT: poot.constant dense<-6.550400e+04> : tensor<f16>
# CHECK-NEXT: poot.constant dense<0.000000e+00> : tensor<f16>
# CHECK-NEXT: poot.select %[[FUT]]
# CHECK-SAME: -> tensor<1x1x3x8xf16>


gqa_softcap_bias()
mha_plain()
multi_token()
