# RUN: %python %s | FileCheck %s
# RUN: %python %s | poot-opt | FileCheck %s

# repeat_kv, softmax, rope, rms_norm, silu and mlp: each a fixed chain.

from poot_mlir.frontend import Tracer, ops


def chains() -> None:
    tr = Tracer("chains")
    kv = tr.input("kv", (1, 2, 8, 4))
    tr.output("rep", ops.repeat_kv(kv, 3))
    tr.output("same", ops.repeat_kv(kv, 1))
    s = tr.input("s", (2, 5))
    tr.output("p", ops.softmax(s))
    x = tr.input("x", (1, 2, 3, 8))
    cos = tr.input("cos", (3, 8))
    sin = tr.input("sin", (3, 8))
    tr.output("rope", ops.rope(x, cos, sin))
    h = tr.input("h", (1, 3, 8))
    w = tr.input("w", (8,))
    tr.output("norm", ops.rms_norm(h, w, eps=1e-5))
    wg = tr.input("wg", (8, 16))
    wu = tr.input("wu", (8, 16))
    wd = tr.input("wd", (16, 8))
    tr.output("mlp", ops.mlp(h, wg, wu, wd))
    print(tr.mlir())


# CHECK-LABEL: func.func @chains(
# CHECK-SAME: %[[KV:[a-z0-9]+]]: tensor<1x2x8x4xf32>
# CHECK-SAME: %[[S:[a-z0-9]+]]: tensor<2x5xf32>
# CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<1x2x3x8xf32>
# CHECK-SAME: %[[COS:[a-z0-9]+]]: tensor<3x8xf32>
# CHECK-SAME: %[[SIN:[a-z0-9]+]]: tensor<3x8xf32>
# CHECK-SAME: %[[H:[a-z0-9]+]]: tensor<1x3x8xf32>
# CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<8xf32>
# CHECK-SAME: %[[WG:[a-z0-9]+]]: tensor<8x16xf32>
# CHECK-SAME: %[[WU:[a-z0-9]+]]: tensor<8x16xf32>
# CHECK-SAME: %[[WD:[a-z0-9]+]]: tensor<16x8xf32>
# repeat_kv(kv, 3); repeat_kv(kv, 1) emits nothing
# CHECK-NEXT: %[[R0:.*]] = poot.reshape %[[KV]] : tensor<1x2x8x4xf32> -> tensor<1x2x1x8x4xf32>
# CHECK-NEXT: %[[R1:.*]] = poot.broadcast %[[R0]] : tensor<1x2x1x8x4xf32> -> tensor<1x2x3x8x4xf32>
# CHECK-NEXT: %[[REP:.*]] = poot.reshape %[[R1]] : tensor<1x2x3x8x4xf32> -> tensor<1x6x8x4xf32>
# softmax
# CHECK-NEXT: %[[M:.*]] = poot.reduce max %[[S]] axis = 1 keepdim : tensor<2x5xf32> -> tensor<2x1xf32>
# CHECK-NEXT: %[[XS:.*]] = poot.sub %[[S]], %[[M]]
# CHECK-NEXT: %[[EX:.*]] = poot.exp %[[XS]]
# CHECK-NEXT: %[[DEN:.*]] = poot.reduce sum %[[EX]] axis = 1 keepdim
# CHECK-NEXT: %[[P:.*]] = poot.div %[[EX]], %[[DEN]]
# rope: x*cos + concat(-x2, x1)*sin
# CHECK-NEXT: %[[A:.*]] = poot.mul %[[X]], %[[COS]] : (tensor<1x2x3x8xf32>, tensor<3x8xf32>) -> tensor<1x2x3x8xf32>
# CHECK-NEXT: %[[X1:.*]] = poot.slice %[[X]] [0, 0, 0, 0] to [1, 2, 3, 4] step [1, 1, 1, 1]
# CHECK-NEXT: %[[X2:.*]] = poot.slice %[[X]] [0, 0, 0, 4] to [1, 2, 3, 8] step [1, 1, 1, 1]
# CHECK-NEXT: %[[NX2:.*]] = poot.neg %[[X2]]
# CHECK-NEXT: %[[ROT:.*]] = poot.concat %[[NX2]], %[[X1]] axis = 3
# CHECK-NEXT: %[[B:.*]] = poot.mul %[[ROT]], %[[SIN]]
# CHECK-NEXT: %[[ROPE:.*]] = poot.add %[[A]], %[[B]]
# rms_norm
# CHECK-NEXT: %[[SQ:.*]] = poot.mul %[[H]], %[[H]]
# CHECK-NEXT: %[[SS:.*]] = poot.reduce sum %[[SQ]] axis = 2 keepdim
# CHECK-NEXT: %[[N:.*]] = poot.constant dense<8.000000e+00> : tensor<f32>
# CHECK-NEXT: %[[MS:.*]] = poot.div %[[SS]], %[[N]]
# CHECK-NEXT: %[[EPS:.*]] = poot.constant dense<9.99999974E-6> : tensor<f32>
# CHECK-NEXT: %[[VAR:.*]] = poot.add %[[MS]], %[[EPS]]
# CHECK-NEXT: %[[RS:.*]] = poot.rsqrt %[[VAR]]
# CHECK-NEXT: %[[Y:.*]] = poot.mul %[[H]], %[[RS]]
# CHECK-NEXT: %[[NORM:.*]] = poot.mul %[[Y]], %[[W]]
# mlp: silu(h @ wg) * (h @ wu) @ wd
# CHECK-NEXT: %[[G:.*]] = poot.matmul %[[H]], %[[WG]] : (tensor<1x3x8xf32>, tensor<8x16xf32>) -> tensor<1x3x16xf32>
# CHECK-NEXT: %[[SG:.*]] = poot.logistic %[[G]]
# CHECK-NEXT: %[[SILU:.*]] = poot.mul %[[G]], %[[SG]]
# CHECK-NEXT: %[[U:.*]] = poot.matmul %[[H]], %[[WU]]
# CHECK-NEXT: %[[HID:.*]] = poot.mul %[[SILU]], %[[U]]
# CHECK-NEXT: %[[MLP:.*]] = poot.matmul %[[HID]], %[[WD]] : (tensor<1x3x16xf32>, tensor<16x8xf32>) -> tensor<1x3x8xf32>
# CHECK-NEXT: return %[[REP]], %[[KV]], %[[P]], %[[ROPE]], %[[NORM]], %[[MLP]]


chains()
