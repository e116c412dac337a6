# RUN: %python %s | FileCheck %s
# RUN: %python %s | poot-opt | FileCheck %s

# ops.attention_prefill: every query row against the prompt with the in-graph
# causal mask (iota column gt iota row); no cache write. MQA (Hkv = 1) and a
# value narrower than the key.

from poot_mlir.frontend import Tracer, ops


def prefill_mqa() -> None:
    tr = Tracer("prefill_mqa")
    q = tr.input("q", (2, 4, 6, 16))
    k = tr.input("k", (2, 1, 6, 16))
    v = tr.input("v", (2, 1, 6, 8))
    tr.output("out", ops.attention_prefill(q, k, v))
    print(tr.mlir())


# CHECK-LABEL: func.func @prefill_mqa(
# CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<2x4x6x16xf32> {poot.name = "q"}
# CHECK-SAME: %[[K:[a-z0-9]+]]: tensor<2x1x6x16xf32> {poot.name = "k"}
# CHECK-SAME: %[[V:[a-z0-9]+]]: tensor<2x1x6x8xf32> {poot.name = "v"}
# CHECK-NEXT: %[[KR:.*]] = poot.reshape %[[K]] : tensor<2x1x6x16xf32> -> tensor<2x1x1x6x16xf32>
# CHECK-NEXT: %[[KB:.*]] = poot.broadcast %[[KR]] : tensor<2x1x1x6x16xf32> -> tensor<2x1x4x6x16xf32>
# CHECK-NEXT: %[[KX:.*]] = poot.reshape %[[KB]] : tensor<2x1x4x6x16xf32> -> tensor<2x4x6x16xf32>
# CHECK-NEXT: %[[VR:.*]] = poot.reshape %[[V]]
# CHECK-NEXT: %[[VB:.*]] = poot.broadcast %[[VR]]
# CHECK-NEXT: %[[VX:.*]] = poot.reshape %[[VB]] : tensor<2x1x4x6x8xf32> -> tensor<2x4x6x8xf32>
# CHECK-NEXT: %[[ROW:.*]] = poot.iota dim = 2 : tensor<1x1x6x1xi32>
# CHECK-NEXT: %[[COL:.*]] = poot.iota dim = 3 : tensor<1x1x1x6xi32>
# CHECK-NEXT: %[[FUT:.*]] = poot.compare gt, %[[COL]], %[[ROW]] : (tensor<1x1x1x6xi32>, tensor<1x1x6x1xi32>) -> tensor<1x1x6x6xi1>
# CHECK-NEXT: %[[LOW:.*]] = poot.constant dense<-3.40282347E+38> : tensor<f32>
# CHECK-NEXT: %[[ZERO:.*]] = poot.constant dense<0.000000e+00> : tensor<f32>
# CHECK-NEXT: %[[MASK:.*]] = poot.select %[[FUT]], %[[LOW]], %[[ZERO]] : (tensor<1x1x6x6xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x6x6xf32>
# CHECK-NEXT: %[[KT:.*]] = poot.transpose %[[KX]] perm = [0, 1, 3, 2] : tensor<2x4x6x16xf32> -> tensor<2x4x16x6xf32>
# CHECK-NEXT: %[[S0:.*]] = poot.matmul %[[Q]], %[[KT]] : (tensor<2x4x6x16xf32>, tensor<2x4x16x6xf32>) -> tensor<2x4x6x6xf32>
# CHECK-NEXT: %[[SC:.*]] = poot.constant dense<2.500000e-01> : tensor<f32>
# CHECK-NEXT: %[[S1:.*]] = poot.mul %[[S0]], %[[SC]]
# CHECK-NEXT: %[[S2:.*]] = poot.add %[[S1]], %[[MASK]] : (tensor<2x4x6x6xf32>, tensor<1x1x6x6xf32>) -> tensor<2x4x6x6xf32>
# CHECK-NEXT: %[[M:.*]] = poot.reduce max %[[S2]] axis = 3 keepdim
# CHECK-NEXT: %[[XS:.*]] = poot.sub %[[S2]], %[[M]]
# CHECK-NEXT: %[[EX:.*]] = poot.exp %[[XS]]
# CHECK-NEXT: %[[DEN:.*]] = poot.reduce sum %[[EX]] axis = 3 keepdim
# CHECK-NEXT: %[[P:.*]] = poot.div %[[EX]], %[[DEN]]
# CHECK-NEXT: %[[OUT:.*]] = poot.matmul %[[P]], %[[VX]] : (tensor<2x4x6x6xf32>, tensor<2x4x6x8xf32>) -> tensor<2x4x6x8xf32>
# CHECK-NEXT: return %[[OUT]]


def prefill_bias_softcap() -> None:
    """A per-head bias [1, Hq, L, L] after the mask; softcap before it."""
    tr = Tracer("prefill_bias_softcap")
    q = tr.input("q", (1, 2, 4, 8), "bf16")
    k = tr.input("k", (1, 2, 4, 8), "bf16")
    v = tr.input("v", (1, 2, 4, 8), "bf16")
    bias = tr.input("bias", (1, 2, 4, 4), "bf16")
    tr.output("out", ops.attention_prefill(q, k, v, scale=0.5, softcap=20.0, bias=bias))
    print(tr.mlir())


# CHECK-LABEL: func.func @prefill_bias_softcap(
# CHECK-NOT: poot.broadcast
# CHECK: poot.select
# CHECK-NEXT: poot.transpose
# CHECK-NEXT: poot.matmul
# CHECK-NEXT: poot.constant dense<5.000000e-01> : tensor<bf16>
# CHECK-NEXT: poot.mul
# CHECK-NEXT: %[[CAP:.*]] = poot.constant dense<2.000000e+01> : tensor<bf16>
# CHECK-NEXT: poot.div %{{.*}}, %[[CAP]]
# CHECK-NEXT: poot.tanh
# CHECK-NEXT: poot.mul %{{.*}}, %[[CAP]]
# CHECK-NEXT: poot.add
# CHECK-NEXT: poot.add %{{.*}}, %arg3 : (tensor<1x2x4x4xbf16>, tensor<1x2x4x4xbf16>) -> tensor<1x2x4x4xbf16>
# CHECK-NEXT: poot.reduce max


prefill_mqa()
prefill_bias_softcap()
