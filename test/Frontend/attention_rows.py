# RUN: %python %s | FileCheck %s
# RUN: %python %s | poot-opt -split-input-file -poot-verify-driver-contract | FileCheck %s
# RUN: %python %s | poot-opt -split-input-file -poot-fuse-attention | FileCheck %s --check-prefix=FUSED

# The per-row forms (continuous batching): one position per batch row,
# pos [B] i32 marked #poot.slot<pos>.
# - attention_paged(..., pos [B], count=count [B]): live length pos + count,
#   K/V past it selected to zero, a per-row causal mask for a T > 1 chunk,
#   the scores past it selected to -inf;
# - attention_masked / attention_live with pos [B] (decode): the new rows
#   are selected into the cache at iota == pos[b] (one dynamic_update_slice
#   cannot take a per-row offset); masks and lengths are per row.
# All of them fuse into one poot.attention (FUSED): the paged key with a live
# length (and the chunk's per-row mask), the dense key with a per-row mask or
# a live length. Each function prints as its own module (split by `// -----`).

# FUSED-LABEL: func.func @paged_rows(
# FUSED-NOT: poot.gather
# FUSED: poot.attention %{{.*}} mask(%{{.*}} : tensor<3x1x2x16xf32>) read(%{{.*}} : tensor<3x16xi32>) len(%{{.*}} : tensor<3xi32>)
# FUSED-LABEL: func.func @paged_rows_decode(
# FUSED-NOT: poot.gather
# FUSED: poot.attention %{{[a-z0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}} read(%{{.*}} : tensor<3x16xi32>) len(%{{.*}} : tensor<3xi32>)
# FUSED-LABEL: func.func @masked_rows(
# FUSED: poot.attention %{{[a-z0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}} mask(%{{.*}} : tensor<3x1x1x16xf32>) {scale
# FUSED-LABEL: func.func @live_rows(
# FUSED: poot.attention %{{[a-z0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}} len(%clamped : tensor<3xi32>) {scale

from poot_mlir.frontend import Tracer, ops


def paged_rows() -> None:
    tr = Tracer("paged_rows")
    kp = tr.state("k_pool0", (32, 2, 8))
    vp = tr.state("v_pool0", (32, 2, 4))
    write = tr.write_map("write", 3 * 2, 32)
    read = tr.slot_map("read", 3, 16, 32)
    pos = tr.pos(max_pos=14, rows=3)
    count = tr.input("count", (3,), "i32", range=(1, 2))
    q = tr.input("q", (3, 4, 2, 8))
    k = tr.input("k", (3, 2, 2, 8))
    v = tr.input("v", (3, 2, 2, 4))
    out, k1, v1 = ops.attention_paged(q, k, v, kp, vp, write, read, pos, count=count)
    tr.output("out", out)
    tr.state_out("k_pool0", k1)
    tr.state_out("v_pool0", v1)
    print(tr.mlir())


# CHECK-LABEL: func.func @paged_rows(
# CHECK-SAME: %[[KP:[a-z0-9]+]]: tensor<32x2x8xf32>
# CHECK-SAME: %[[VP:[a-z0-9]+]]: tensor<32x2x4xf32>
# CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<6xi32> {poot.name = "write", poot.range = #poot.range<-1, 31>, poot.slot = #poot.slot<write_map>}
# CHECK-SAME: %[[R:[a-z0-9]+]]: tensor<3x16xi32> {poot.name = "read", poot.range = #poot.range<0, 31>, poot.slot = #poot.slot<slot_map>}
# CHECK-SAME: %[[POS:[a-z0-9]+]]: tensor<3xi32> {poot.name = "pos", poot.range = #poot.range<0, 14>, poot.slot = #poot.slot<pos>}
# CHECK-SAME: %[[N:[a-z0-9]+]]: tensor<3xi32> {poot.name = "count", poot.range = #poot.range<1, 2>}
# CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<3x4x2x8xf32>
# CHECK-NEXT: poot.transpose
# CHECK-NEXT: poot.reshape
# CHECK-NEXT: %[[KP1:.*]] = poot.scatter_update %[[KP]][%[[W]]]
# CHECK-NEXT: poot.transpose
# CHECK-NEXT: poot.reshape
# CHECK-NEXT: %[[VP1:.*]] = poot.scatter_update %[[VP]][%[[W]]]
# CHECK-NEXT: %[[KG:.*]] = poot.gather %[[KP1]][%[[R]]] axis = 0
# CHECK-NEXT: %[[KV:.*]] = poot.transpose %[[KG]] perm = [0, 2, 1, 3] : tensor<3x16x2x8xf32> -> tensor<3x2x16x8xf32>
# CHECK-NEXT: %[[VG:.*]] = poot.gather %[[VP1]][%[[R]]] axis = 0
# CHECK-NEXT: %[[VV:.*]] = poot.transpose %[[VG]] perm = [0, 2, 1, 3]
# CHECK-NEXT: %[[LEN:.*]] = poot.add %[[POS]], %[[N]] : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
# CHECK-NEXT: %[[LEN4:.*]] = poot.reshape %[[LEN]] : tensor<3xi32> -> tensor<3x1x1x1xi32>
# CHECK-NEXT: %[[TR:.*]] = poot.iota dim = 2 : tensor<1x1x16x1xi32>
# CHECK-NEXT: %[[KROW:.*]] = poot.compare lt, %[[TR]], %[[LEN4]] : (tensor<1x1x16x1xi32>, tensor<3x1x1x1xi32>) -> tensor<3x1x16x1xi1>
# CHECK-NEXT: %[[ZERO:.*]] = poot.constant dense<0.000000e+00> : tensor<f32>
# CHECK-NEXT: %[[KL:.*]] = poot.select %[[KROW]], %[[KV]], %[[ZERO]]
# CHECK-NEXT: %[[VL:.*]] = poot.select %[[KROW]], %[[VV]], %[[ZERO]]
# CHECK-NEXT: poot.reshape %[[KL]]
# CHECK-NEXT: poot.broadcast
# CHECK-NEXT: %[[KX:.*]] = poot.reshape
# CHECK-NEXT: poot.reshape %[[VL]]
# CHECK-NEXT: poot.broadcast
# CHECK-NEXT: %[[VX:.*]] = poot.reshape
# CHECK-NEXT: %[[POS4:.*]] = poot.reshape %[[POS]] : tensor<3xi32> -> tensor<3x1x1x1xi32>
# CHECK-NEXT: %[[T:.*]] = poot.iota dim = 3 : tensor<1x1x1x16xi32>
# CHECK-NEXT: %[[I:.*]] = poot.iota dim = 2 : tensor<1x1x2x1xi32>
# CHECK-NEXT: %[[QP:.*]] = poot.add %[[I]], %[[POS4]] : (tensor<1x1x2x1xi32>, tensor<3x1x1x1xi32>) -> tensor<3x1x2x1xi32>
# CHECK-NEXT: %[[HID:.*]] = poot.compare gt, %[[T]], %[[QP]] : (tensor<1x1x1x16xi32>, tensor<3x1x2x1xi32>) -> tensor<3x1x2x16xi1>
# CHECK-NEXT: poot.constant dense<-3.40282347E+38>
# CHECK-NEXT: poot.constant dense<0.000000e+00>
# CHECK-NEXT: %[[MASK:.*]] = poot.select %[[HID]], {{.*}} -> tensor<3x1x2x16xf32>
# CHECK-NEXT: %[[TC:.*]] = poot.iota dim = 3 : tensor<1x1x1x16xi32>
# CHECK-NEXT: %[[KEEP:.*]] = poot.compare lt, %[[TC]], %[[LEN4]] : (tensor<1x1x1x16xi32>, tensor<3x1x1x1xi32>) -> tensor<3x1x1x16xi1>
# CHECK-NEXT: %[[KT:.*]] = poot.transpose %[[KX]] perm = [0, 1, 3, 2]
# CHECK-NEXT: %[[S0:.*]] = poot.matmul %[[Q]], %[[KT]]
# CHECK-NEXT: poot.constant
# CHECK-NEXT: %[[S1:.*]] = poot.mul %[[S0]]
# CHECK-NEXT: %[[S2:.*]] = poot.add %[[S1]], %[[MASK]]
# CHECK-NEXT: %[[NINF:.*]] = poot.constant dense<0xFF800000>
# CHECK-NEXT: %[[S3:.*]] = poot.select %[[KEEP]], %[[S2]], %[[NINF]]
# CHECK-NEXT: poot.reduce max %[[S3]]
# CHECK-NEXT: poot.sub
# CHECK-NEXT: poot.exp
# CHECK-NEXT: poot.reduce sum
# CHECK-NEXT: %[[P:.*]] = poot.div
# CHECK-NEXT: %[[OUT:.*]] = poot.matmul %[[P]], %[[VX]]
# CHECK-NEXT: return %[[OUT]], %[[KP1]], %[[VP1]]


def paged_rows_decode() -> None:
    """T = 1 without count: len = pos + 1, and no mask (t > pos is t >= len)."""
    tr = Tracer("paged_rows_decode")
    kp = tr.state("k_pool0", (32, 2, 8))
    vp = tr.state("v_pool0", (32, 2, 8))
    write = tr.write_map("write", 3, 32)
    read = tr.slot_map("read", 3, 16, 32)
    pos = tr.pos(max_pos=15, rows=3)
    q = tr.input("q", (3, 2, 1, 8))
    k = tr.input("k", (3, 2, 1, 8))
    v = tr.input("v", (3, 2, 1, 8))
    out, k1, v1 = ops.attention_paged(q, k, v, kp, vp, write, read, pos)
    tr.output("out", out)
    tr.state_out("k_pool0", k1)
    tr.state_out("v_pool0", v1)
    print(tr.mlir())


# CHECK-LABEL: func.func @paged_rows_decode(
# CHECK-SAME: %[[POS:[a-z0-9]+]]: tensor<3xi32> {poot.name = "pos", poot.range = #poot.range<0, 15>, poot.slot = #poot.slot<pos>}
# CHECK: poot.gather
# CHECK: poot.gather
# CHECK-NEXT: poot.transpose
# CHECK-NEXT: %[[ONE:.*]] = poot.constant dense<1> : tensor<i32>
# CHECK-NEXT: %[[LEN:.*]] = poot.add %[[POS]], %[[ONE]] : (tensor<3xi32>, tensor<i32>) -> tensor<3xi32>
# CHECK-NEXT: poot.reshape %[[LEN]] : tensor<3xi32> -> tensor<3x1x1x1xi32>
# CHECK-NEXT: poot.iota dim = 2
# CHECK-NEXT: poot.compare lt
# CHECK-NEXT: poot.constant dense<0.000000e+00>
# CHECK-NEXT: poot.select
# CHECK-NEXT: poot.select
# CHECK-NEXT: poot.iota dim = 3 : tensor<1x1x1x16xi32>
# CHECK-NEXT: poot.compare lt
# CHECK-NEXT: poot.transpose
# CHECK-NEXT: poot.matmul
# CHECK-NEXT: poot.constant
# CHECK-NEXT: poot.mul
# CHECK-NEXT: poot.constant dense<0xFF800000>
# CHECK-NEXT: poot.select
# CHECK-NEXT: poot.reduce max


def dense_rows(kind: str) -> None:
    tr = Tracer(f"{kind}_rows")
    kc = tr.state("k0", (3, 2, 16, 8))
    vc = tr.state("v0", (3, 2, 16, 4))
    pos = tr.pos(max_pos=15, rows=3)
    q = tr.input("q", (3, 4, 1, 8))
    k = tr.input("k", (3, 2, 1, 8))
    v = tr.input("v", (3, 2, 1, 4))
    attend = ops.attention_live if kind == "live" else ops.attention_masked
    out, k1, v1 = attend(q, k, v, kc, vc, pos)
    tr.output("out", out)
    tr.state_out("k0", k1)
    tr.state_out("v0", v1)
    print(tr.mlir())


# CHECK-LABEL: func.func @masked_rows(
# CHECK-SAME: %[[KC:[a-z0-9]+]]: tensor<3x2x16x8xf32>
# CHECK-SAME: %[[VC:[a-z0-9]+]]: tensor<3x2x16x4xf32>
# CHECK-SAME: %[[POS:[a-z0-9]+]]: tensor<3xi32> {poot.name = "pos", poot.range = #poot.range<0, 15>, poot.slot = #poot.slot<pos>}
# CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<3x4x1x8xf32>
# CHECK-SAME: %[[K:[a-z0-9]+]]: tensor<3x2x1x8xf32>
# CHECK-SAME: %[[V:[a-z0-9]+]]: tensor<3x2x1x4xf32>
# CHECK-NEXT: %[[POS4:.*]] = poot.reshape %[[POS]] : tensor<3xi32> -> tensor<3x1x1x1xi32>
# CHECK-NEXT: %[[T:.*]] = poot.iota dim = 2 : tensor<1x1x16x1xi32>
# CHECK-NEXT: %[[AT:.*]] = poot.compare eq, %[[T]], %[[POS4]] : (tensor<1x1x16x1xi32>, tensor<3x1x1x1xi32>) -> tensor<3x1x16x1xi1>
# CHECK-NEXT: %[[K1:.*]] = poot.select %[[AT]], %[[K]], %[[KC]] : (tensor<3x1x16x1xi1>, tensor<3x2x1x8xf32>, tensor<3x2x16x8xf32>) -> tensor<3x2x16x8xf32>
# CHECK-NEXT: %[[V1:.*]] = poot.select %[[AT]], %[[V]], %[[VC]]
# CHECK-NEXT: poot.reshape %[[K1]]
# CHECK-NEXT: poot.broadcast
# CHECK-NEXT: poot.reshape
# CHECK-NEXT: poot.reshape %[[V1]]
# CHECK-NEXT: poot.broadcast
# CHECK-NEXT: poot.reshape
# CHECK-NEXT: %[[TC:.*]] = poot.iota dim = 3 : tensor<1x1x1x16xi32>
# CHECK-NEXT: poot.compare gt, %[[TC]], %[[POS4]] : (tensor<1x1x1x16xi32>, tensor<3x1x1x1xi32>) -> tensor<3x1x1x16xi1>
# CHECK-NEXT: poot.constant dense<-3.40282347E+38>
# CHECK-NEXT: poot.constant dense<0.000000e+00>
# CHECK-NEXT: %[[MASK:.*]] = poot.select {{.*}} -> tensor<3x1x1x16xf32>
# CHECK-NEXT: poot.transpose
# CHECK-NEXT: poot.matmul %[[Q]]
# CHECK-NEXT: poot.constant
# CHECK-NEXT: poot.mul
# CHECK-NEXT: poot.add {{.*}}, %[[MASK]]
# CHECK: return {{.*}}, %[[K1]], %[[V1]]

# CHECK-LABEL: func.func @live_rows(
# CHECK-SAME: %[[POS:[a-z0-9]+]]: tensor<3xi32> {poot.name = "pos", poot.range = #poot.range<0, 15>, poot.slot = #poot.slot<pos>}
# CHECK-NEXT: %[[POS4:.*]] = poot.reshape %[[POS]]
# CHECK-NEXT: poot.iota dim = 2
# CHECK-NEXT: poot.compare eq
# CHECK-NEXT: %[[K1:.*]] = poot.select
# CHECK-NEXT: %[[V1:.*]] = poot.select
# CHECK-NEXT: %[[ONE:.*]] = poot.constant dense<1> : tensor<i32>
# CHECK-NEXT: %[[LB:.*]] = poot.add %[[POS]], %[[ONE]] : (tensor<3xi32>, tensor<i32>) -> tensor<3xi32>
# CHECK-NEXT: %[[LEN:.*]], %[[OK:.*]] = poot.index_guard %[[LB]] min = 1 max = 16 : tensor<3xi32>
# CHECK-NEXT: %[[LEN4:.*]] = poot.reshape %[[LEN]] : tensor<3xi32> -> tensor<3x1x1x1xi32>
# CHECK-NEXT: poot.iota dim = 2 : tensor<1x1x16x1xi32>
# CHECK-NEXT: poot.compare lt
# CHECK-NEXT: poot.constant dense<0.000000e+00>
# CHECK-NEXT: poot.select {{.*}}, %[[K1]]
# CHECK-NEXT: poot.select {{.*}}, %[[V1]]
# CHECK: return %[[OK]], {{.*}}, %[[K1]], %[[V1]]


paged_rows()
print("// -----")
paged_rows_decode()
print("// -----")
dense_rows("masked")
print("// -----")
dense_rows("live")
