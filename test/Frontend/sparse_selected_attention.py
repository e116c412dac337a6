# RUN: %python %s | FileCheck %s
# RUN: %python %s | poot-opt | FileCheck %s

# ops.sparse_selected_attention: block scores (reshape + reduce max), the
# candidate mask j < p // bs, top_k, the -1 fix-up (= poot.block_topk), the
# key visibility (selected block or own block, and t <= p), then the score
# chain with a -inf select (= poot.selected_attention).

from poot_mlir.frontend import Tracer, ops


def sparse_prefill() -> None:
    tr = Tracer("sparse_prefill")
    q = tr.input("q", (1, 4, 16, 8))
    k = tr.input("k", (1, 2, 16, 8))
    v = tr.input("v", (1, 2, 16, 8))
    q_idx = tr.input("q_idx", (1, 16, 4))
    k_idx = tr.input("k_idx", (1, 16, 4))
    scores = ops.indexer_scores(q_idx, k_idx)
    tr.output("out", ops.sparse_selected_attention(q, k, v, scores, block_size=4, top_k=2))
    print(tr.mlir())


# CHECK-LABEL: func.func @sparse_prefill(
# CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<1x4x16x8xf32>
# CHECK-SAME: %[[K:[a-z0-9]+]]: tensor<1x2x16x8xf32>
# CHECK-SAME: %[[V:[a-z0-9]+]]: tensor<1x2x16x8xf32>
# CHECK-SAME: %[[QI:[a-z0-9]+]]: tensor<1x16x4xf32>
# CHECK-SAME: %[[KI:[a-z0-9]+]]: tensor<1x16x4xf32>
# CHECK-NEXT: %[[KIT:.*]] = poot.transpose %[[KI]] perm = [0, 2, 1] : tensor<1x16x4xf32> -> tensor<1x4x16xf32>
# CHECK-NEXT: %[[IDX:.*]] = poot.matmul %[[QI]], %[[KIT]] : (tensor<1x16x4xf32>, tensor<1x4x16xf32>) -> tensor<1x16x16xf32>
# CHECK-NEXT: %[[QPOS:.*]] = poot.iota dim = 1 : tensor<1x16xi32>
# CHECK-NEXT: %[[BS:.*]] = poot.constant dense<4> : tensor<i32>
# CHECK-NEXT: %[[OWN:.*]] = poot.div %[[QPOS]], %[[BS]] : (tensor<1x16xi32>, tensor<i32>) -> tensor<1x16xi32>
# CHECK-NEXT: %[[OWN3:.*]] = poot.reshape %[[OWN]] : tensor<1x16xi32> -> tensor<1x16x1xi32>
# CHECK-NEXT: %[[BLK4:.*]] = poot.reshape %[[IDX]] : tensor<1x16x16xf32> -> tensor<1x16x4x4xf32>
# CHECK-NEXT: %[[BLK:.*]] = poot.reduce max %[[BLK4]] axis = 3 : tensor<1x16x4x4xf32> -> tensor<1x16x4xf32>
# CHECK-NEXT: %[[BID:.*]] = poot.iota dim = 2 : tensor<1x1x4xi32>
# CHECK-NEXT: %[[CAND:.*]] = poot.compare lt, %[[BID]], %[[OWN3]] : (tensor<1x1x4xi32>, tensor<1x16x1xi32>) -> tensor<1x16x4xi1>
# CHECK-NEXT: %[[NINF:.*]] = poot.constant dense<0xFF800000> : tensor<f32>
# CHECK-NEXT: %[[CS:.*]] = poot.select %[[CAND]], %[[BLK]], %[[NINF]]
# CHECK-NEXT: %{{.*}}, %[[IDS0:.*]] = poot.top_k %[[CS]] k = 2 : tensor<1x16x4xf32> -> tensor<1x16x2xf32>, tensor<1x16x2xi32>
# CHECK-NEXT: %[[VALID:.*]] = poot.compare lt, %[[IDS0]], %[[OWN3]] : (tensor<1x16x2xi32>, tensor<1x16x1xi32>) -> tensor<1x16x2xi1>
# CHECK-NEXT: %[[NEG1:.*]] = poot.constant dense<-1> : tensor<i32>
# CHECK-NEXT: %[[IDS:.*]] = poot.select %[[VALID]], %[[IDS0]], %[[NEG1]] : (tensor<1x16x2xi1>, tensor<1x16x2xi32>, tensor<i32>) -> tensor<1x16x2xi32>
# CHECK-NEXT: %[[T:.*]] = poot.iota dim = 2 : tensor<1x1x16xi32>
# CHECK-NEXT: %[[KB:.*]] = poot.div %[[T]], %[[BS]] : (tensor<1x1x16xi32>, tensor<i32>) -> tensor<1x1x16xi32>
# CHECK-NEXT: %[[IDS4:.*]] = poot.reshape %[[IDS]] : tensor<1x16x2xi32> -> tensor<1x16x2x1xi32>
# CHECK-NEXT: %[[HIT:.*]] = poot.compare eq, %[[IDS4]], %[[KB]] : (tensor<1x16x2x1xi32>, tensor<1x1x16xi32>) -> tensor<1x16x2x16xi1>
# CHECK-NEXT: %[[HITI:.*]] = poot.convert %[[HIT]] : tensor<1x16x2x16xi1> -> tensor<1x16x2x16xi32>
# CHECK-NEXT: %[[ANY:.*]] = poot.reduce max %[[HITI]] axis = 2 : tensor<1x16x2x16xi32> -> tensor<1x16x16xi32>
# CHECK-NEXT: %[[ZI:.*]] = poot.constant dense<0> : tensor<i32>
# CHECK-NEXT: %[[SEL:.*]] = poot.compare gt, %[[ANY]], %[[ZI]]
# CHECK-NEXT: %[[OWNK:.*]] = poot.compare eq, %[[KB]], %[[OWN3]] : (tensor<1x1x16xi32>, tensor<1x16x1xi32>) -> tensor<1x16x16xi1>
# CHECK-NEXT: %[[QP3:.*]] = poot.reshape %[[QPOS]] : tensor<1x16xi32> -> tensor<1x16x1xi32>
# CHECK-NEXT: %[[CAUS:.*]] = poot.compare le, %[[T]], %[[QP3]] : (tensor<1x1x16xi32>, tensor<1x16x1xi32>) -> tensor<1x16x16xi1>
# CHECK-NEXT: %[[OR:.*]] = poot.or %[[SEL]], %[[OWNK]]
# CHECK-NEXT: %[[VIS:.*]] = poot.and %[[OR]], %[[CAUS]]
# CHECK-NEXT: %[[VIS4:.*]] = poot.reshape %[[VIS]] : tensor<1x16x16xi1> -> tensor<1x1x16x16xi1>
# CHECK-NEXT: poot.reshape %[[K]]
# CHECK-NEXT: poot.broadcast
# CHECK-NEXT: %[[KX:.*]] = poot.reshape
# CHECK-NEXT: poot.reshape %[[V]]
# CHECK-NEXT: poot.broadcast
# CHECK-NEXT: %[[VX:.*]] = poot.reshape
# CHECK-NEXT: %[[KT:.*]] = poot.transpose %[[KX]] perm = [0, 1, 3, 2]
# CHECK-NEXT: %[[S0:.*]] = poot.matmul %[[Q]], %[[KT]]
# CHECK-NEXT: %[[SC:.*]] = poot.constant
# CHECK-NEXT: %[[S1:.*]] = poot.mul %[[S0]], %[[SC]]
# CHECK-NEXT: %[[NINF2:.*]] = poot.constant dense<0xFF800000> : tensor<f32>
# CHECK-NEXT: %[[S2:.*]] = poot.select %[[VIS4]], %[[S1]], %[[NINF2]] : (tensor<1x1x16x16xi1>, tensor<1x4x16x16xf32>, tensor<f32>) -> tensor<1x4x16x16xf32>
# CHECK-NEXT: poot.reduce max %[[S2]] axis = 3 keepdim
# CHECK-NEXT: poot.sub
# CHECK-NEXT: poot.exp
# CHECK-NEXT: poot.reduce sum
# CHECK-NEXT: %[[P:.*]] = poot.div
# CHECK-NEXT: %[[OUT:.*]] = poot.matmul %[[P]], %[[VX]]
# CHECK-NEXT: return %[[OUT]]


def sparse_decode() -> None:
    """Given positions (a decode row at pos) replace the iota."""
    tr = Tracer("sparse_decode")
    q = tr.input("q", (2, 2, 1, 8))
    k = tr.input("k", (2, 2, 16, 8))
    v = tr.input("v", (2, 2, 16, 8))
    scores = tr.input("scores", (2, 1, 16))
    q_pos = tr.input("q_pos", (2, 1), "i32", range=(0, 15))
    tr.output(
        "out",
        ops.sparse_selected_attention(q, k, v, scores, q_pos, block_size=8, top_k=1, softcap=10.0),
    )
    print(tr.mlir())


# CHECK-LABEL: func.func @sparse_decode(
# CHECK-SAME: %[[QPOS:[a-z0-9]+]]: tensor<2x1xi32> {poot.name = "q_pos", poot.range = #poot.range<0, 15>}
# CHECK-NEXT: %[[BS:.*]] = poot.constant dense<8> : tensor<i32>
# CHECK-NEXT: poot.div %[[QPOS]], %[[BS]]
# CHECK: poot.top_k %{{.*}} k = 1
# CHECK: poot.tanh
# CHECK-NEXT: poot.mul
# CHECK-NEXT: poot.constant dense<0xFF800000>
# CHECK-NEXT: poot.select


sparse_prefill()
sparse_decode()
