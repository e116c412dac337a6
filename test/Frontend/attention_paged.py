# RUN: %python %s | FileCheck %s
# RUN: %python %s | poot-opt -poot-verify-driver-contract | FileCheck %s

# ops.attention_paged: new rows written into the state pools with
# scatter_update through the write map; attention reads through
# gather(pool, read map, axis 0) and a transpose to [B, Hkv, cap, D]; the
# causal mask comes from pos as in attention_masked.

from poot_mlir.frontend import Tracer, ops


def paged_decode() -> None:
    tr = Tracer("paged_decode")
    k_pool = tr.state("k_pool0", (32, 2, 8), "f32")
    v_pool = tr.state("v_pool0", (32, 2, 4), "f32")
    write = tr.write_map("write", 2, 32)
    read = tr.slot_map("read", 2, 16, 32)
    pos = tr.pos(max_pos=15)
    q = tr.input("q", (2, 4, 1, 8))
    k = tr.input("k", (2, 2, 1, 8))
    v = tr.input("v", (2, 2, 1, 4))
    out, kp, vp = ops.attention_paged(q, k, v, k_pool, v_pool, write, read, pos)
    tr.output("out", out)
    tr.state_out("k_pool0", kp)
    tr.state_out("v_pool0", vp)
    print(tr.mlir())


# CHECK-LABEL: func.func @paged_decode(
# CHECK-SAME: %[[KP:[a-z0-9]+]]: tensor<32x2x8xf32> {poot.name = "k_pool0", poot.slot = #poot.slot<state "k_pool0">}
# CHECK-SAME: %[[VP:[a-z0-9]+]]: tensor<32x2x4xf32> {poot.name = "v_pool0", poot.slot = #poot.slot<state "v_pool0">}
# CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<2xi32> {poot.name = "write", poot.range = #poot.range<-1, 31>, poot.slot = #poot.slot<write_map>}
# CHECK-SAME: %[[R:[a-z0-9]+]]: tensor<2x16xi32> {poot.name = "read", poot.range = #poot.range<0, 31>, poot.slot = #poot.slot<slot_map>}
# CHECK-SAME: %[[POS:[a-z0-9]+]]: tensor<i32> {poot.name = "pos", poot.range = #poot.range<0, 15>, poot.slot = #poot.slot<pos>}
# CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<2x4x1x8xf32>
# CHECK-SAME: %[[K:[a-z0-9]+]]: tensor<2x2x1x8xf32>
# CHECK-SAME: %[[V:[a-z0-9]+]]: tensor<2x2x1x4xf32>
# CHECK-NEXT: %[[KT0:.*]] = poot.transpose %[[K]] perm = [0, 2, 1, 3] : tensor<2x2x1x8xf32> -> tensor<2x1x2x8xf32>
# CHECK-NEXT: %[[KROWS:.*]] = poot.reshape %[[KT0]] : tensor<2x1x2x8xf32> -> tensor<2x2x8xf32>
# CHECK-NEXT: %[[KP1:.*]] = poot.scatter_update %[[KP]][%[[W]]], %[[KROWS]] : tensor<32x2x8xf32>, tensor<2xi32>, tensor<2x2x8xf32>
# CHECK-NEXT: %[[VT0:.*]] = poot.transpose %[[V]] perm = [0, 2, 1, 3]
# CHECK-NEXT: %[[VROWS:.*]] = poot.reshape %[[VT0]]
# CHECK-NEXT: %[[VP1:.*]] = poot.scatter_update %[[VP]][%[[W]]], %[[VROWS]] : tensor<32x2x4xf32>, tensor<2xi32>, tensor<2x2x4xf32>
# CHECK-NEXT: %[[KG:.*]] = poot.gather %[[KP1]][%[[R]]] axis = 0 : (tensor<32x2x8xf32>, tensor<2x16xi32>) -> tensor<2x16x2x8xf32>
# CHECK-NEXT: %[[KV:.*]] = poot.transpose %[[KG]] perm = [0, 2, 1, 3] : tensor<2x16x2x8xf32> -> tensor<2x2x16x8xf32>
# CHECK-NEXT: %[[VG:.*]] = poot.gather %[[VP1]][%[[R]]] axis = 0 : (tensor<32x2x4xf32>, tensor<2x16xi32>) -> tensor<2x16x2x4xf32>
# CHECK-NEXT: %[[VV:.*]] = poot.transpose %[[VG]] perm = [0, 2, 1, 3] : tensor<2x16x2x4xf32> -> tensor<2x2x16x4xf32>
# CHECK-NEXT: %[[KR:.*]] = poot.reshape %[[KV]]
# CHECK-NEXT: poot.broadcast %[[KR]]
# CHECK-NEXT: %[[KX:.*]] = poot.reshape
# CHECK-NEXT: %[[VR:.*]] = poot.reshape %[[VV]]
# CHECK-NEXT: poot.broadcast %[[VR]]
# CHECK-NEXT: %[[VX:.*]] = poot.reshape
# CHECK-NEXT: %[[T:.*]] = poot.iota dim = 3 : tensor<1x1x1x16xi32>
# CHECK-NEXT: poot.compare gt, %[[T]], %[[POS]]
# CHECK-NEXT: poot.constant dense<-3.40282347E+38>
# CHECK-NEXT: poot.constant dense<0.000000e+00>
# CHECK-NEXT: %[[MASK:.*]] = poot.select
# CHECK-NEXT: %[[KTT:.*]] = poot.transpose %[[KX]] perm = [0, 1, 3, 2]
# CHECK-NEXT: %[[S0:.*]] = poot.matmul %[[Q]], %[[KTT]]
# CHECK-NEXT: poot.constant
# CHECK-NEXT: %[[S1:.*]] = poot.mul %[[S0]]
# CHECK-NEXT: %[[S2:.*]] = poot.add %[[S1]], %[[MASK]]
# CHECK-NEXT: poot.reduce max %[[S2]]
# CHECK-NEXT: poot.sub
# CHECK-NEXT: poot.exp
# CHECK-NEXT: poot.reduce sum
# CHECK-NEXT: %[[P:.*]] = poot.div
# CHECK-NEXT: %[[OUT:.*]] = poot.matmul %[[P]], %[[VX]]
# CHECK-NEXT: return %[[OUT]], %[[KP1]], %[[VP1]]


paged_decode()
