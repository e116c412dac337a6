// RUN: poot-opt %s -split-input-file -poot-select-blocks="remarks=true" -verify-diagnostics | FileCheck %s

// Hand-written chains in the shape of frontend/sparse.py (after
// canonicalization): every spelling poot-select-blocks accepts, and every
// check that declines. Block scores [1, 1, 4] (bs = 2, K = 2), Lk = 8, GQA 2.

// The tracer's decode chain (sparse_selected_attention, canonicalized: a
// bare [1, 1] position, the mask as [1, 1, Lk]), GQA n_rep = 2: the block
// top-k and the attention fuse; the repeats, the mask and the softmax die.
// CHECK-LABEL: func.func @decode_gqa
// CHECK:       %[[IDS:.*]] = poot.block_topk %arg3, %arg4 k = 2 block_size = 2 : tensor<1x1x4xf32>, tensor<1x1xi32> -> tensor<1x1x2xi32>
// CHECK:       %[[O:.*]] = poot.selected_attention %arg0, %arg1, %arg2, %[[IDS]], %arg4 block_size = 2 {scale = 5.000000e-01 : f64}
// CHECK-SAME:      : tensor<1x2x1x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x2xi32>, tensor<1x1xi32> -> tensor<1x2x1x4xf32>
// CHECK-NOT:   poot.top_k
// CHECK-NOT:   poot.matmul
// CHECK-NOT:   poot.exp
// CHECK:       return %[[O]]
func.func @decode_gqa(%q: tensor<1x2x1x4xf32>, %k: tensor<1x1x8x4xf32>, %v: tensor<1x1x8x4xf32>,
    %blk: tensor<1x1x4xf32>, %p: tensor<1x1xi32>) -> tensor<1x2x1x4xf32> {
  %c0 = poot.constant dense<0> : tensor<i32>
  %m1 = poot.constant dense<-1> : tensor<i32>
  %c2 = poot.constant dense<2> : tensor<i32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %scale = poot.constant dense<0.5> : tensor<f32>
  %own = poot.div %p, %c2 : (tensor<1x1xi32>, tensor<i32>) -> tensor<1x1xi32>
  %bid = poot.iota dim = 2 : tensor<1x1x4xi32>
  %cand = poot.compare lt, %bid, %own : (tensor<1x1x4xi32>, tensor<1x1xi32>) -> tensor<1x1x4xi1>
  %cs = poot.select %cand, %blk, %ninf : (tensor<1x1x4xi1>, tensor<1x1x4xf32>, tensor<f32>) -> tensor<1x1x4xf32>
  %vals, %idx = poot.top_k %cs k = 2 : tensor<1x1x4xf32> -> tensor<1x1x2xf32>, tensor<1x1x2xi32>
  %ok = poot.compare lt, %idx, %own : (tensor<1x1x2xi32>, tensor<1x1xi32>) -> tensor<1x1x2xi1>
  %ids = poot.select %ok, %idx, %m1 : (tensor<1x1x2xi1>, tensor<1x1x2xi32>, tensor<i32>) -> tensor<1x1x2xi32>
  %t = poot.iota dim = 2 : tensor<1x1x8xi32>
  %kb = poot.div %t, %c2 : (tensor<1x1x8xi32>, tensor<i32>) -> tensor<1x1x8xi32>
  %ids4 = poot.reshape %ids : tensor<1x1x2xi32> -> tensor<1x1x2x1xi32>
  %hit = poot.compare eq, %ids4, %kb : (tensor<1x1x2x1xi32>, tensor<1x1x8xi32>) -> tensor<1x1x2x8xi1>
  %hiti = poot.convert %hit : tensor<1x1x2x8xi1> -> tensor<1x1x2x8xi32>
  %any = poot.reduce max %hiti axis = 2 : tensor<1x1x2x8xi32> -> tensor<1x1x8xi32>
  %sel = poot.compare gt, %any, %c0 : (tensor<1x1x8xi32>, tensor<i32>) -> tensor<1x1x8xi1>
  %ownk = poot.compare eq, %kb, %own : (tensor<1x1x8xi32>, tensor<1x1xi32>) -> tensor<1x1x8xi1>
  %caus = poot.compare le, %t, %p : (tensor<1x1x8xi32>, tensor<1x1xi32>) -> tensor<1x1x8xi1>
  %blocks = poot.or %sel, %ownk : (tensor<1x1x8xi1>, tensor<1x1x8xi1>) -> tensor<1x1x8xi1>
  %vis = poot.and %blocks, %caus : (tensor<1x1x8xi1>, tensor<1x1x8xi1>) -> tensor<1x1x8xi1>
  %kr = poot.reshape %k : tensor<1x1x8x4xf32> -> tensor<1x1x1x8x4xf32>
  %kbr = poot.broadcast %kr : tensor<1x1x1x8x4xf32> -> tensor<1x1x2x8x4xf32>
  %kx = poot.reshape %kbr : tensor<1x1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  %vr = poot.reshape %v : tensor<1x1x8x4xf32> -> tensor<1x1x1x8x4xf32>
  %vbr = poot.broadcast %vr : tensor<1x1x1x8x4xf32> -> tensor<1x1x2x8x4xf32>
  %vx = poot.reshape %vbr : tensor<1x1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  %kt = poot.transpose %kx perm = [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x1x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x1x8xf32>
  %s1 = poot.mul %s, %scale : (tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %s2 = poot.select %vis, %s1, %ninf : (tensor<1x1x8xi1>, tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %d = poot.sub %s2, %m : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %e = poot.exp %d : tensor<1x2x1x8xf32>
  %z = poot.reduce sum %e axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %pr = poot.div %e, %z : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %o = poot.matmul %pr, %vx : (tensor<1x2x1x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x1x4xf32>
  return %o : tensor<1x2x1x4xf32>
}

// -----

// Every operand order and compare direction the pass accepts: j >= own
// selected to -inf on the true side, select(ids >= own, -1, ids), p >= t,
// own == kb, or/and operands swapped, the 'any' test as != 0, and the mask
// reshaped to [B, 1, Lq, Lk] as the frontend writes it for B > 1.
// CHECK-LABEL: func.func @commuted
// CHECK:       %[[IDS:.*]] = poot.block_topk %arg3, %arg4 k = 2 block_size = 2 : tensor<1x1x4xf32>, tensor<1x1xi32> -> tensor<1x1x2xi32>
// CHECK:       %[[O:.*]] = poot.selected_attention %arg0, %arg1, %arg2, %[[IDS]], %arg4 block_size = 2 {scale = 5.000000e-01 : f64}
// CHECK-SAME:      : tensor<1x2x1x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x2xi32>, tensor<1x1xi32> -> tensor<1x2x1x4xf32>
// CHECK-NOT:   poot.top_k
// CHECK-NOT:   poot.matmul
// CHECK-NOT:   poot.exp
// CHECK:       return %[[O]]
func.func @commuted(%q: tensor<1x2x1x4xf32>, %k: tensor<1x1x8x4xf32>, %v: tensor<1x1x8x4xf32>,
    %blk: tensor<1x1x4xf32>, %p: tensor<1x1xi32>) -> tensor<1x2x1x4xf32> {
  %c0 = poot.constant dense<0> : tensor<i32>
  %m1 = poot.constant dense<-1> : tensor<i32>
  %c2 = poot.constant dense<2> : tensor<i32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %scale = poot.constant dense<0.5> : tensor<f32>
  %own = poot.div %p, %c2 : (tensor<1x1xi32>, tensor<i32>) -> tensor<1x1xi32>
  %bid = poot.iota dim = 2 : tensor<1x1x4xi32>
  %cand = poot.compare le, %own, %bid : (tensor<1x1xi32>, tensor<1x1x4xi32>) -> tensor<1x1x4xi1>
  %cs = poot.select %cand, %ninf, %blk : (tensor<1x1x4xi1>, tensor<f32>, tensor<1x1x4xf32>) -> tensor<1x1x4xf32>
  %vals, %idx = poot.top_k %cs k = 2 : tensor<1x1x4xf32> -> tensor<1x1x2xf32>, tensor<1x1x2xi32>
  %ok = poot.compare le, %own, %idx : (tensor<1x1xi32>, tensor<1x1x2xi32>) -> tensor<1x1x2xi1>
  %ids = poot.select %ok, %m1, %idx : (tensor<1x1x2xi1>, tensor<i32>, tensor<1x1x2xi32>) -> tensor<1x1x2xi32>
  %t = poot.iota dim = 2 : tensor<1x1x8xi32>
  %kb = poot.div %t, %c2 : (tensor<1x1x8xi32>, tensor<i32>) -> tensor<1x1x8xi32>
  %ids4 = poot.reshape %ids : tensor<1x1x2xi32> -> tensor<1x1x2x1xi32>
  %hit = poot.compare eq, %kb, %ids4 : (tensor<1x1x8xi32>, tensor<1x1x2x1xi32>) -> tensor<1x1x2x8xi1>
  %hiti = poot.convert %hit : tensor<1x1x2x8xi1> -> tensor<1x1x2x8xi32>
  %any = poot.reduce max %hiti axis = 2 : tensor<1x1x2x8xi32> -> tensor<1x1x8xi32>
  %sel = poot.compare ne, %c0, %any : (tensor<i32>, tensor<1x1x8xi32>) -> tensor<1x1x8xi1>
  %ownk = poot.compare eq, %own, %kb : (tensor<1x1xi32>, tensor<1x1x8xi32>) -> tensor<1x1x8xi1>
  %caus = poot.compare ge, %p, %t : (tensor<1x1xi32>, tensor<1x1x8xi32>) -> tensor<1x1x8xi1>
  %blocks = poot.or %ownk, %sel : (tensor<1x1x8xi1>, tensor<1x1x8xi1>) -> tensor<1x1x8xi1>
  %vis3 = poot.and %caus, %blocks : (tensor<1x1x8xi1>, tensor<1x1x8xi1>) -> tensor<1x1x8xi1>
  %vis = poot.reshape %vis3 : tensor<1x1x8xi1> -> tensor<1x1x1x8xi1>
  %kr = poot.reshape %k : tensor<1x1x8x4xf32> -> tensor<1x1x1x8x4xf32>
  %kbr = poot.broadcast %kr : tensor<1x1x1x8x4xf32> -> tensor<1x1x2x8x4xf32>
  %kx = poot.reshape %kbr : tensor<1x1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  %vr = poot.reshape %v : tensor<1x1x8x4xf32> -> tensor<1x1x1x8x4xf32>
  %vbr = poot.broadcast %vr : tensor<1x1x1x8x4xf32> -> tensor<1x1x2x8x4xf32>
  %vx = poot.reshape %vbr : tensor<1x1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  %kt = poot.transpose %kx perm = [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x1x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x1x8xf32>
  %s1 = poot.mul %s, %scale : (tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %s2 = poot.select %vis, %s1, %ninf : (tensor<1x1x1x8xi1>, tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %d = poot.sub %s2, %m : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %e = poot.exp %d : tensor<1x2x1x8xf32>
  %z = poot.reduce sum %e axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %pr = poot.div %e, %z : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %o = poot.matmul %pr, %vx : (tensor<1x2x1x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x1x4xf32>
  return %o : tensor<1x2x1x4xf32>
}

// -----

// The top-k values escape: poot.block_topk yields ids only, so the top-k
// stays (and with it the primitive ids the mask reads); the attention still
// fuses over those ids.
// CHECK-LABEL: func.func @topk_values_used
// CHECK:       %[[V:.*]], %[[I:.*]] = poot.top_k
// CHECK:       %[[IDS:.*]] = poot.select %{{.*}}, %[[I]]
// CHECK:       %[[O:.*]] = poot.selected_attention %arg0, %arg1, %arg2, %[[IDS]], %arg4 block_size = 2
// CHECK:       return %[[O]], %[[V]]
func.func @topk_values_used(%q: tensor<1x2x1x4xf32>, %k: tensor<1x1x8x4xf32>, %v: tensor<1x1x8x4xf32>,
    %blk: tensor<1x1x4xf32>, %p: tensor<1x1xi32>) -> (tensor<1x2x1x4xf32>, tensor<1x1x2xf32>) {
  %c0 = poot.constant dense<0> : tensor<i32>
  %m1 = poot.constant dense<-1> : tensor<i32>
  %c2 = poot.constant dense<2> : tensor<i32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %scale = poot.constant dense<0.5> : tensor<f32>
  %own = poot.div %p, %c2 : (tensor<1x1xi32>, tensor<i32>) -> tensor<1x1xi32>
  %bid = poot.iota dim = 2 : tensor<1x1x4xi32>
  %cand = poot.compare lt, %bid, %own : (tensor<1x1x4xi32>, tensor<1x1xi32>) -> tensor<1x1x4xi1>
  %cs = poot.select %cand, %blk, %ninf : (tensor<1x1x4xi1>, tensor<1x1x4xf32>, tensor<f32>) -> tensor<1x1x4xf32>
  // expected-remark @+1 {{block top-k not formed: the top-k values are used: poot.block_topk yields the block ids only}}
  %vals, %idx = poot.top_k %cs k = 2 : tensor<1x1x4xf32> -> tensor<1x1x2xf32>, tensor<1x1x2xi32>
  %ok = poot.compare lt, %idx, %own : (tensor<1x1x2xi32>, tensor<1x1xi32>) -> tensor<1x1x2xi1>
  %ids = poot.select %ok, %idx, %m1 : (tensor<1x1x2xi1>, tensor<1x1x2xi32>, tensor<i32>) -> tensor<1x1x2xi32>
  %t = poot.iota dim = 2 : tensor<1x1x8xi32>
  %kb = poot.div %t, %c2 : (tensor<1x1x8xi32>, tensor<i32>) -> tensor<1x1x8xi32>
  %ids4 = poot.reshape %ids : tensor<1x1x2xi32> -> tensor<1x1x2x1xi32>
  %hit = poot.compare eq, %ids4, %kb : (tensor<1x1x2x1xi32>, tensor<1x1x8xi32>) -> tensor<1x1x2x8xi1>
  %hiti = poot.convert %hit : tensor<1x1x2x8xi1> -> tensor<1x1x2x8xi32>
  %any = poot.reduce max %hiti axis = 2 : tensor<1x1x2x8xi32> -> tensor<1x1x8xi32>
  %sel = poot.compare gt, %any, %c0 : (tensor<1x1x8xi32>, tensor<i32>) -> tensor<1x1x8xi1>
  %ownk = poot.compare eq, %kb, %own : (tensor<1x1x8xi32>, tensor<1x1xi32>) -> tensor<1x1x8xi1>
  %caus = poot.compare le, %t, %p : (tensor<1x1x8xi32>, tensor<1x1xi32>) -> tensor<1x1x8xi1>
  %blocks = poot.or %sel, %ownk : (tensor<1x1x8xi1>, tensor<1x1x8xi1>) -> tensor<1x1x8xi1>
  %vis = poot.and %blocks, %caus : (tensor<1x1x8xi1>, tensor<1x1x8xi1>) -> tensor<1x1x8xi1>
  %kr = poot.reshape %k : tensor<1x1x8x4xf32> -> tensor<1x1x1x8x4xf32>
  %kbr = poot.broadcast %kr : tensor<1x1x1x8x4xf32> -> tensor<1x1x2x8x4xf32>
  %kx = poot.reshape %kbr : tensor<1x1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  %vr = poot.reshape %v : tensor<1x1x8x4xf32> -> tensor<1x1x1x8x4xf32>
  %vbr = poot.broadcast %vr : tensor<1x1x1x8x4xf32> -> tensor<1x1x2x8x4xf32>
  %vx = poot.reshape %vbr : tensor<1x1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  %kt = poot.transpose %kx perm = [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x1x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x1x8xf32>
  %s1 = poot.mul %s, %scale : (tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %s2 = poot.select %vis, %s1, %ninf : (tensor<1x1x8xi1>, tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %d = poot.sub %s2, %m : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %e = poot.exp %d : tensor<1x2x1x8xf32>
  %z = poot.reduce sum %e axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %pr = poot.div %e, %z : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %o = poot.matmul %pr, %vx : (tensor<1x2x1x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x1x4xf32>
  return %o, %vals : tensor<1x2x1x4xf32>, tensor<1x1x2xf32>
}

// -----

// The raw top-k indices are read before their -1 fix-up.
// CHECK-LABEL: func.func @ids_used_raw
// CHECK:       poot.top_k
// CHECK:       poot.selected_attention
func.func @ids_used_raw(%q: tensor<1x2x1x4xf32>, %k: tensor<1x1x8x4xf32>, %v: tensor<1x1x8x4xf32>,
    %blk: tensor<1x1x4xf32>, %p: tensor<1x1xi32>) -> (tensor<1x2x1x4xf32>, tensor<1x1x2xi32>) {
  %c0 = poot.constant dense<0> : tensor<i32>
  %m1 = poot.constant dense<-1> : tensor<i32>
  %c2 = poot.constant dense<2> : tensor<i32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %scale = poot.constant dense<0.5> : tensor<f32>
  %own = poot.div %p, %c2 : (tensor<1x1xi32>, tensor<i32>) -> tensor<1x1xi32>
  %bid = poot.iota dim = 2 : tensor<1x1x4xi32>
  %cand = poot.compare lt, %bid, %own : (tensor<1x1x4xi32>, tensor<1x1xi32>) -> tensor<1x1x4xi1>
  %cs = poot.select %cand, %blk, %ninf : (tensor<1x1x4xi1>, tensor<1x1x4xf32>, tensor<f32>) -> tensor<1x1x4xf32>
  // expected-remark @+1 {{block top-k not formed: the top-k block ids are also used before their -1 fix-up (by 'func.return'); poot.block_topk yields the fixed-up ids only}}
  %vals, %idx = poot.top_k %cs k = 2 : tensor<1x1x4xf32> -> tensor<1x1x2xf32>, tensor<1x1x2xi32>
  %ok = poot.compare lt, %idx, %own : (tensor<1x1x2xi32>, tensor<1x1xi32>) -> tensor<1x1x2xi1>
  %ids = poot.select %ok, %idx, %m1 : (tensor<1x1x2xi1>, tensor<1x1x2xi32>, tensor<i32>) -> tensor<1x1x2xi32>
  %t = poot.iota dim = 2 : tensor<1x1x8xi32>
  %kb = poot.div %t, %c2 : (tensor<1x1x8xi32>, tensor<i32>) -> tensor<1x1x8xi32>
  %ids4 = poot.reshape %ids : tensor<1x1x2xi32> -> tensor<1x1x2x1xi32>
  %hit = poot.compare eq, %ids4, %kb : (tensor<1x1x2x1xi32>, tensor<1x1x8xi32>) -> tensor<1x1x2x8xi1>
  %hiti = poot.convert %hit : tensor<1x1x2x8xi1> -> tensor<1x1x2x8xi32>
  %any = poot.reduce max %hiti axis = 2 : tensor<1x1x2x8xi32> -> tensor<1x1x8xi32>
  %sel = poot.compare gt, %any, %c0 : (tensor<1x1x8xi32>, tensor<i32>) -> tensor<1x1x8xi1>
  %ownk = poot.compare eq, %kb, %own : (tensor<1x1x8xi32>, tensor<1x1xi32>) -> tensor<1x1x8xi1>
  %caus = poot.compare le, %t, %p : (tensor<1x1x8xi32>, tensor<1x1xi32>) -> tensor<1x1x8xi1>
  %blocks = poot.or %sel, %ownk : (tensor<1x1x8xi1>, tensor<1x1x8xi1>) -> tensor<1x1x8xi1>
  %vis = poot.and %blocks, %caus : (tensor<1x1x8xi1>, tensor<1x1x8xi1>) -> tensor<1x1x8xi1>
  %kr = poot.reshape %k : tensor<1x1x8x4xf32> -> tensor<1x1x1x8x4xf32>
  %kbr = poot.broadcast %kr : tensor<1x1x1x8x4xf32> -> tensor<1x1x2x8x4xf32>
  %kx = poot.reshape %kbr : tensor<1x1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  %vr = poot.reshape %v : tensor<1x1x8x4xf32> -> tensor<1x1x1x8x4xf32>
  %vbr = poot.broadcast %vr : tensor<1x1x1x8x4xf32> -> tensor<1x1x2x8x4xf32>
  %vx = poot.reshape %vbr : tensor<1x1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  %kt = poot.transpose %kx perm = [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x1x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x1x8xf32>
  %s1 = poot.mul %s, %scale : (tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %s2 = poot.select %vis, %s1, %ninf : (tensor<1x1x8xi1>, tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %d = poot.sub %s2, %m : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %e = poot.exp %d : tensor<1x2x1x8xf32>
  %z = poot.reduce sum %e axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %pr = poot.div %e, %z : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %o = poot.matmul %pr, %vx : (tensor<1x2x1x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x1x4xf32>
  return %o, %idx : tensor<1x2x1x4xf32>, tensor<1x1x2xi32>
}

// -----

// A fix-up that keeps ids <= own also keeps the own block: not the block top-k.
// CHECK-LABEL: func.func @fixup_le
// CHECK:       poot.top_k
// CHECK:       poot.selected_attention
func.func @fixup_le(%q: tensor<1x2x1x4xf32>, %k: tensor<1x1x8x4xf32>, %v: tensor<1x1x8x4xf32>,
    %blk: tensor<1x1x4xf32>, %p: tensor<1x1xi32>) -> tensor<1x2x1x4xf32> {
  %c0 = poot.constant dense<0> : tensor<i32>
  %m1 = poot.constant dense<-1> : tensor<i32>
  %c2 = poot.constant dense<2> : tensor<i32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %scale = poot.constant dense<0.5> : tensor<f32>
  %own = poot.div %p, %c2 : (tensor<1x1xi32>, tensor<i32>) -> tensor<1x1xi32>
  %bid = poot.iota dim = 2 : tensor<1x1x4xi32>
  %cand = poot.compare lt, %bid, %own : (tensor<1x1x4xi32>, tensor<1x1xi32>) -> tensor<1x1x4xi1>
  %cs = poot.select %cand, %blk, %ninf : (tensor<1x1x4xi1>, tensor<1x1x4xf32>, tensor<f32>) -> tensor<1x1x4xf32>
  // expected-remark @+1 {{block top-k not formed: the -1 fix-up does not keep exactly the ids before the own block (ids < q_pos / block_size)}}
  %vals, %idx = poot.top_k %cs k = 2 : tensor<1x1x4xf32> -> tensor<1x1x2xf32>, tensor<1x1x2xi32>
  %ok = poot.compare le, %idx, %own : (tensor<1x1x2xi32>, tensor<1x1xi32>) -> tensor<1x1x2xi1>
  %ids = poot.select %ok, %idx, %m1 : (tensor<1x1x2xi1>, tensor<1x1x2xi32>, tensor<i32>) -> tensor<1x1x2xi32>
  %t = poot.iota dim = 2 : tensor<1x1x8xi32>
  %kb = poot.div %t, %c2 : (tensor<1x1x8xi32>, tensor<i32>) -> tensor<1x1x8xi32>
  %ids4 = poot.reshape %ids : tensor<1x1x2xi32> -> tensor<1x1x2x1xi32>
  %hit = poot.compare eq, %ids4, %kb : (tensor<1x1x2x1xi32>, tensor<1x1x8xi32>) -> tensor<1x1x2x8xi1>
  %hiti = poot.convert %hit : tensor<1x1x2x8xi1> -> tensor<1x1x2x8xi32>
  %any = poot.reduce max %hiti axis = 2 : tensor<1x1x2x8xi32> -> tensor<1x1x8xi32>
  %sel = poot.compare gt, %any, %c0 : (tensor<1x1x8xi32>, tensor<i32>) -> tensor<1x1x8xi1>
  %ownk = poot.compare eq, %kb, %own : (tensor<1x1x8xi32>, tensor<1x1xi32>) -> tensor<1x1x8xi1>
  %caus = poot.compare le, %t, %p : (tensor<1x1x8xi32>, tensor<1x1xi32>) -> tensor<1x1x8xi1>
  %blocks = poot.or %sel, %ownk : (tensor<1x1x8xi1>, tensor<1x1x8xi1>) -> tensor<1x1x8xi1>
  %vis = poot.and %blocks, %caus : (tensor<1x1x8xi1>, tensor<1x1x8xi1>) -> tensor<1x1x8xi1>
  %kr = poot.reshape %k : tensor<1x1x8x4xf32> -> tensor<1x1x1x8x4xf32>
  %kbr = poot.broadcast %kr : tensor<1x1x1x8x4xf32> -> tensor<1x1x2x8x4xf32>
  %kx = poot.reshape %kbr : tensor<1x1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  %vr = poot.reshape %v : tensor<1x1x8x4xf32> -> tensor<1x1x1x8x4xf32>
  %vbr = poot.broadcast %vr : tensor<1x1x1x8x4xf32> -> tensor<1x1x2x8x4xf32>
  %vx = poot.reshape %vbr : tensor<1x1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  %kt = poot.transpose %kx perm = [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x1x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x1x8xf32>
  %s1 = poot.mul %s, %scale : (tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %s2 = poot.select %vis, %s1, %ninf : (tensor<1x1x8xi1>, tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %d = poot.sub %s2, %m : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %e = poot.exp %d : tensor<1x2x1x8xf32>
  %z = poot.reduce sum %e axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %pr = poot.div %e, %z : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %o = poot.matmul %pr, %vx : (tensor<1x2x1x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x1x4xf32>
  return %o : tensor<1x2x1x4xf32>
}

// -----

// Candidates j <= own include the unfinished own block.
// CHECK-LABEL: func.func @candidates_le
// CHECK:       poot.top_k
// CHECK:       poot.selected_attention
func.func @candidates_le(%q: tensor<1x2x1x4xf32>, %k: tensor<1x1x8x4xf32>, %v: tensor<1x1x8x4xf32>,
    %blk: tensor<1x1x4xf32>, %p: tensor<1x1xi32>) -> tensor<1x2x1x4xf32> {
  %c0 = poot.constant dense<0> : tensor<i32>
  %m1 = poot.constant dense<-1> : tensor<i32>
  %c2 = poot.constant dense<2> : tensor<i32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %scale = poot.constant dense<0.5> : tensor<f32>
  %own = poot.div %p, %c2 : (tensor<1x1xi32>, tensor<i32>) -> tensor<1x1xi32>
  %bid = poot.iota dim = 2 : tensor<1x1x4xi32>
  %cand = poot.compare le, %bid, %own : (tensor<1x1x4xi32>, tensor<1x1xi32>) -> tensor<1x1x4xi1>
  %cs = poot.select %cand, %blk, %ninf : (tensor<1x1x4xi1>, tensor<1x1x4xf32>, tensor<f32>) -> tensor<1x1x4xf32>
  // expected-remark @+1 {{block top-k not formed: the top-k keeps blocks j by 'le', not j < q_pos / block_size (the complete blocks before the own)}}
  %vals, %idx = poot.top_k %cs k = 2 : tensor<1x1x4xf32> -> tensor<1x1x2xf32>, tensor<1x1x2xi32>
  %ok = poot.compare lt, %idx, %own : (tensor<1x1x2xi32>, tensor<1x1xi32>) -> tensor<1x1x2xi1>
  %ids = poot.select %ok, %idx, %m1 : (tensor<1x1x2xi1>, tensor<1x1x2xi32>, tensor<i32>) -> tensor<1x1x2xi32>
  %t = poot.iota dim = 2 : tensor<1x1x8xi32>
  %kb = poot.div %t, %c2 : (tensor<1x1x8xi32>, tensor<i32>) -> tensor<1x1x8xi32>
  %ids4 = poot.reshape %ids : tensor<1x1x2xi32> -> tensor<1x1x2x1xi32>
  %hit = poot.compare eq, %ids4, %kb : (tensor<1x1x2x1xi32>, tensor<1x1x8xi32>) -> tensor<1x1x2x8xi1>
  %hiti = poot.convert %hit : tensor<1x1x2x8xi1> -> tensor<1x1x2x8xi32>
  %any = poot.reduce max %hiti axis = 2 : tensor<1x1x2x8xi32> -> tensor<1x1x8xi32>
  %sel = poot.compare gt, %any, %c0 : (tensor<1x1x8xi32>, tensor<i32>) -> tensor<1x1x8xi1>
  %ownk = poot.compare eq, %kb, %own : (tensor<1x1x8xi32>, tensor<1x1xi32>) -> tensor<1x1x8xi1>
  %caus = poot.compare le, %t, %p : (tensor<1x1x8xi32>, tensor<1x1xi32>) -> tensor<1x1x8xi1>
  %blocks = poot.or %sel, %ownk : (tensor<1x1x8xi1>, tensor<1x1x8xi1>) -> tensor<1x1x8xi1>
  %vis = poot.and %blocks, %caus : (tensor<1x1x8xi1>, tensor<1x1x8xi1>) -> tensor<1x1x8xi1>
  %kr = poot.reshape %k : tensor<1x1x8x4xf32> -> tensor<1x1x1x8x4xf32>
  %kbr = poot.broadcast %kr : tensor<1x1x1x8x4xf32> -> tensor<1x1x2x8x4xf32>
  %kx = poot.reshape %kbr : tensor<1x1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  %vr = poot.reshape %v : tensor<1x1x8x4xf32> -> tensor<1x1x1x8x4xf32>
  %vbr = poot.broadcast %vr : tensor<1x1x1x8x4xf32> -> tensor<1x1x2x8x4xf32>
  %vx = poot.reshape %vbr : tensor<1x1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  %kt = poot.transpose %kx perm = [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x1x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x1x8xf32>
  %s1 = poot.mul %s, %scale : (tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %s2 = poot.select %vis, %s1, %ninf : (tensor<1x1x8xi1>, tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %d = poot.sub %s2, %m : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %e = poot.exp %d : tensor<1x2x1x8xf32>
  %z = poot.reduce sum %e axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %pr = poot.div %e, %z : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %o = poot.matmul %pr, %vx : (tensor<1x2x1x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x1x4xf32>
  return %o : tensor<1x2x1x4xf32>
}

// -----

// The fix-up divides the positions by another block size.
// CHECK-LABEL: func.func @fixup_other_block_size
// CHECK:       poot.top_k
func.func @fixup_other_block_size(%q: tensor<1x2x1x4xf32>, %k: tensor<1x1x8x4xf32>, %v: tensor<1x1x8x4xf32>,
    %blk: tensor<1x1x4xf32>, %p: tensor<1x1xi32>) -> tensor<1x2x1x4xf32> {
  %c0 = poot.constant dense<0> : tensor<i32>
  %m1 = poot.constant dense<-1> : tensor<i32>
  %c2 = poot.constant dense<2> : tensor<i32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %scale = poot.constant dense<0.5> : tensor<f32>
  %own = poot.div %p, %c2 : (tensor<1x1xi32>, tensor<i32>) -> tensor<1x1xi32>
  %bid = poot.iota dim = 2 : tensor<1x1x4xi32>
  %cand = poot.compare lt, %bid, %own : (tensor<1x1x4xi32>, tensor<1x1xi32>) -> tensor<1x1x4xi1>
  %cs = poot.select %cand, %blk, %ninf : (tensor<1x1x4xi1>, tensor<1x1x4xf32>, tensor<f32>) -> tensor<1x1x4xf32>
  // expected-remark @+1 {{block top-k not formed: the -1 fix-up compares against another own block than the candidate test (other positions or block size)}}
  %vals, %idx = poot.top_k %cs k = 2 : tensor<1x1x4xf32> -> tensor<1x1x2xf32>, tensor<1x1x2xi32>
  %c4 = poot.constant dense<4> : tensor<i32>
  %own4 = poot.div %p, %c4 : (tensor<1x1xi32>, tensor<i32>) -> tensor<1x1xi32>
  %ok = poot.compare lt, %idx, %own4 : (tensor<1x1x2xi32>, tensor<1x1xi32>) -> tensor<1x1x2xi1>
  %ids = poot.select %ok, %idx, %m1 : (tensor<1x1x2xi1>, tensor<1x1x2xi32>, tensor<i32>) -> tensor<1x1x2xi32>
  %t = poot.iota dim = 2 : tensor<1x1x8xi32>
  %kb = poot.div %t, %c2 : (tensor<1x1x8xi32>, tensor<i32>) -> tensor<1x1x8xi32>
  %ids4 = poot.reshape %ids : tensor<1x1x2xi32> -> tensor<1x1x2x1xi32>
  %hit = poot.compare eq, %ids4, %kb : (tensor<1x1x2x1xi32>, tensor<1x1x8xi32>) -> tensor<1x1x2x8xi1>
  %hiti = poot.convert %hit : tensor<1x1x2x8xi1> -> tensor<1x1x2x8xi32>
  %any = poot.reduce max %hiti axis = 2 : tensor<1x1x2x8xi32> -> tensor<1x1x8xi32>
  %sel = poot.compare gt, %any, %c0 : (tensor<1x1x8xi32>, tensor<i32>) -> tensor<1x1x8xi1>
  %ownk = poot.compare eq, %kb, %own : (tensor<1x1x8xi32>, tensor<1x1xi32>) -> tensor<1x1x8xi1>
  %caus = poot.compare le, %t, %p : (tensor<1x1x8xi32>, tensor<1x1xi32>) -> tensor<1x1x8xi1>
  %blocks = poot.or %sel, %ownk : (tensor<1x1x8xi1>, tensor<1x1x8xi1>) -> tensor<1x1x8xi1>
  %vis = poot.and %blocks, %caus : (tensor<1x1x8xi1>, tensor<1x1x8xi1>) -> tensor<1x1x8xi1>
  %kr = poot.reshape %k : tensor<1x1x8x4xf32> -> tensor<1x1x1x8x4xf32>
  %kbr = poot.broadcast %kr : tensor<1x1x1x8x4xf32> -> tensor<1x1x2x8x4xf32>
  %kx = poot.reshape %kbr : tensor<1x1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  %vr = poot.reshape %v : tensor<1x1x8x4xf32> -> tensor<1x1x1x8x4xf32>
  %vbr = poot.broadcast %vr : tensor<1x1x1x8x4xf32> -> tensor<1x1x2x8x4xf32>
  %vx = poot.reshape %vbr : tensor<1x1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  %kt = poot.transpose %kx perm = [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x1x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x1x8xf32>
  %s1 = poot.mul %s, %scale : (tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %s2 = poot.select %vis, %s1, %ninf : (tensor<1x1x8xi1>, tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %d = poot.sub %s2, %m : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %e = poot.exp %d : tensor<1x2x1x8xf32>
  %z = poot.reduce sum %e axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %pr = poot.div %e, %z : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %o = poot.matmul %pr, %vx : (tensor<1x2x1x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x1x4xf32>
  return %o : tensor<1x2x1x4xf32>
}

// -----

// A causal bound t < p hides the row's own position: not the selection.
// CHECK-LABEL: func.func @causal_lt
// CHECK:       poot.block_topk
// CHECK-NOT:   poot.selected_attention
// CHECK:       poot.exp
func.func @causal_lt(%q: tensor<1x2x1x4xf32>, %k: tensor<1x1x8x4xf32>, %v: tensor<1x1x8x4xf32>,
    %blk: tensor<1x1x4xf32>, %p: tensor<1x1xi32>) -> tensor<1x2x1x4xf32> {
  %c0 = poot.constant dense<0> : tensor<i32>
  %m1 = poot.constant dense<-1> : tensor<i32>
  %c2 = poot.constant dense<2> : tensor<i32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %scale = poot.constant dense<0.5> : tensor<f32>
  %own = poot.div %p, %c2 : (tensor<1x1xi32>, tensor<i32>) -> tensor<1x1xi32>
  %bid = poot.iota dim = 2 : tensor<1x1x4xi32>
  %cand = poot.compare lt, %bid, %own : (tensor<1x1x4xi32>, tensor<1x1xi32>) -> tensor<1x1x4xi1>
  %cs = poot.select %cand, %blk, %ninf : (tensor<1x1x4xi1>, tensor<1x1x4xf32>, tensor<f32>) -> tensor<1x1x4xf32>
  %vals, %idx = poot.top_k %cs k = 2 : tensor<1x1x4xf32> -> tensor<1x1x2xf32>, tensor<1x1x2xi32>
  %ok = poot.compare lt, %idx, %own : (tensor<1x1x2xi32>, tensor<1x1xi32>) -> tensor<1x1x2xi1>
  %ids = poot.select %ok, %idx, %m1 : (tensor<1x1x2xi1>, tensor<1x1x2xi32>, tensor<i32>) -> tensor<1x1x2xi32>
  %t = poot.iota dim = 2 : tensor<1x1x8xi32>
  %kb = poot.div %t, %c2 : (tensor<1x1x8xi32>, tensor<i32>) -> tensor<1x1x8xi32>
  %ids4 = poot.reshape %ids : tensor<1x1x2xi32> -> tensor<1x1x2x1xi32>
  %hit = poot.compare eq, %ids4, %kb : (tensor<1x1x2x1xi32>, tensor<1x1x8xi32>) -> tensor<1x1x2x8xi1>
  %hiti = poot.convert %hit : tensor<1x1x2x8xi1> -> tensor<1x1x2x8xi32>
  %any = poot.reduce max %hiti axis = 2 : tensor<1x1x2x8xi32> -> tensor<1x1x8xi32>
  %sel = poot.compare gt, %any, %c0 : (tensor<1x1x8xi32>, tensor<i32>) -> tensor<1x1x8xi1>
  %ownk = poot.compare eq, %kb, %own : (tensor<1x1x8xi32>, tensor<1x1xi32>) -> tensor<1x1x8xi1>
  %caus = poot.compare lt, %t, %p : (tensor<1x1x8xi32>, tensor<1x1xi32>) -> tensor<1x1x8xi1>
  %blocks = poot.or %sel, %ownk : (tensor<1x1x8xi1>, tensor<1x1x8xi1>) -> tensor<1x1x8xi1>
  %vis = poot.and %blocks, %caus : (tensor<1x1x8xi1>, tensor<1x1x8xi1>) -> tensor<1x1x8xi1>
  %kr = poot.reshape %k : tensor<1x1x8x4xf32> -> tensor<1x1x1x8x4xf32>
  %kbr = poot.broadcast %kr : tensor<1x1x1x8x4xf32> -> tensor<1x1x2x8x4xf32>
  %kx = poot.reshape %kbr : tensor<1x1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  %vr = poot.reshape %v : tensor<1x1x8x4xf32> -> tensor<1x1x1x8x4xf32>
  %vbr = poot.broadcast %vr : tensor<1x1x1x8x4xf32> -> tensor<1x1x2x8x4xf32>
  %vx = poot.reshape %vbr : tensor<1x1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  %kt = poot.transpose %kx perm = [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x1x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x1x8xf32>
  %s1 = poot.mul %s, %scale : (tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %s2 = poot.select %vis, %s1, %ninf : (tensor<1x1x8xi1>, tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %d = poot.sub %s2, %m : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %e = poot.exp %d : tensor<1x2x1x8xf32>
  %z = poot.reduce sum %e axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %pr = poot.div %e, %z : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  // expected-remark @+1 {{selected attention not formed: the visibility mask has no causal bound t <= q_pos (a poot.compare le of an iota over the 8 keys and the positions)}}
  %o = poot.matmul %pr, %vx : (tensor<1x2x1x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x1x4xf32>
  return %o : tensor<1x2x1x4xf32>
}

// -----

// The own-block test divides the positions by another block size.
// CHECK-LABEL: func.func @own_block_size
// CHECK:       poot.block_topk
// CHECK-NOT:   poot.selected_attention
// CHECK:       poot.exp
func.func @own_block_size(%q: tensor<1x2x1x4xf32>, %k: tensor<1x1x8x4xf32>, %v: tensor<1x1x8x4xf32>,
    %blk: tensor<1x1x4xf32>, %p: tensor<1x1xi32>) -> tensor<1x2x1x4xf32> {
  %c0 = poot.constant dense<0> : tensor<i32>
  %m1 = poot.constant dense<-1> : tensor<i32>
  %c2 = poot.constant dense<2> : tensor<i32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %scale = poot.constant dense<0.5> : tensor<f32>
  %own = poot.div %p, %c2 : (tensor<1x1xi32>, tensor<i32>) -> tensor<1x1xi32>
  %bid = poot.iota dim = 2 : tensor<1x1x4xi32>
  %cand = poot.compare lt, %bid, %own : (tensor<1x1x4xi32>, tensor<1x1xi32>) -> tensor<1x1x4xi1>
  %cs = poot.select %cand, %blk, %ninf : (tensor<1x1x4xi1>, tensor<1x1x4xf32>, tensor<f32>) -> tensor<1x1x4xf32>
  %vals, %idx = poot.top_k %cs k = 2 : tensor<1x1x4xf32> -> tensor<1x1x2xf32>, tensor<1x1x2xi32>
  %ok = poot.compare lt, %idx, %own : (tensor<1x1x2xi32>, tensor<1x1xi32>) -> tensor<1x1x2xi1>
  %ids = poot.select %ok, %idx, %m1 : (tensor<1x1x2xi1>, tensor<1x1x2xi32>, tensor<i32>) -> tensor<1x1x2xi32>
  %t = poot.iota dim = 2 : tensor<1x1x8xi32>
  %kb = poot.div %t, %c2 : (tensor<1x1x8xi32>, tensor<i32>) -> tensor<1x1x8xi32>
  %ids4 = poot.reshape %ids : tensor<1x1x2xi32> -> tensor<1x1x2x1xi32>
  %hit = poot.compare eq, %ids4, %kb : (tensor<1x1x2x1xi32>, tensor<1x1x8xi32>) -> tensor<1x1x2x8xi1>
  %hiti = poot.convert %hit : tensor<1x1x2x8xi1> -> tensor<1x1x2x8xi32>
  %any = poot.reduce max %hiti axis = 2 : tensor<1x1x2x8xi32> -> tensor<1x1x8xi32>
  %sel = poot.compare gt, %any, %c0 : (tensor<1x1x8xi32>, tensor<i32>) -> tensor<1x1x8xi1>
  %c4 = poot.constant dense<4> : tensor<i32>
  %own4 = poot.div %p, %c4 : (tensor<1x1xi32>, tensor<i32>) -> tensor<1x1xi32>
  %ownk = poot.compare eq, %kb, %own4 : (tensor<1x1x8xi32>, tensor<1x1xi32>) -> tensor<1x1x8xi1>
  %caus = poot.compare le, %t, %p : (tensor<1x1x8xi32>, tensor<1x1xi32>) -> tensor<1x1x8xi1>
  %blocks = poot.or %sel, %ownk : (tensor<1x1x8xi1>, tensor<1x1x8xi1>) -> tensor<1x1x8xi1>
  %vis = poot.and %blocks, %caus : (tensor<1x1x8xi1>, tensor<1x1x8xi1>) -> tensor<1x1x8xi1>
  %kr = poot.reshape %k : tensor<1x1x8x4xf32> -> tensor<1x1x1x8x4xf32>
  %kbr = poot.broadcast %kr : tensor<1x1x1x8x4xf32> -> tensor<1x1x2x8x4xf32>
  %kx = poot.reshape %kbr : tensor<1x1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  %vr = poot.reshape %v : tensor<1x1x8x4xf32> -> tensor<1x1x1x8x4xf32>
  %vbr = poot.broadcast %vr : tensor<1x1x1x8x4xf32> -> tensor<1x1x2x8x4xf32>
  %vx = poot.reshape %vbr : tensor<1x1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  %kt = poot.transpose %kx perm = [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x1x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x1x8xf32>
  %s1 = poot.mul %s, %scale : (tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %s2 = poot.select %vis, %s1, %ninf : (tensor<1x1x8xi1>, tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %d = poot.sub %s2, %m : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %e = poot.exp %d : tensor<1x2x1x8xf32>
  %z = poot.reduce sum %e axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %pr = poot.div %e, %z : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  // expected-remark @+1 {{selected attention not formed: the visibility mask has the own-block test divides keys by 2 but positions by 4}}
  %o = poot.matmul %pr, %vx : (tensor<1x2x1x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x1x4xf32>
  return %o : tensor<1x2x1x4xf32>
}

// -----

// The 'listed' test reduces with sum (a repeated id would count twice).
// CHECK-LABEL: func.func @any_as_sum
// CHECK:       poot.block_topk
// CHECK-NOT:   poot.selected_attention
// CHECK:       poot.exp
func.func @any_as_sum(%q: tensor<1x2x1x4xf32>, %k: tensor<1x1x8x4xf32>, %v: tensor<1x1x8x4xf32>,
    %blk: tensor<1x1x4xf32>, %p: tensor<1x1xi32>) -> tensor<1x2x1x4xf32> {
  %c0 = poot.constant dense<0> : tensor<i32>
  %m1 = poot.constant dense<-1> : tensor<i32>
  %c2 = poot.constant dense<2> : tensor<i32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %scale = poot.constant dense<0.5> : tensor<f32>
  %own = poot.div %p, %c2 : (tensor<1x1xi32>, tensor<i32>) -> tensor<1x1xi32>
  %bid = poot.iota dim = 2 : tensor<1x1x4xi32>
  %cand = poot.compare lt, %bid, %own : (tensor<1x1x4xi32>, tensor<1x1xi32>) -> tensor<1x1x4xi1>
  %cs = poot.select %cand, %blk, %ninf : (tensor<1x1x4xi1>, tensor<1x1x4xf32>, tensor<f32>) -> tensor<1x1x4xf32>
  %vals, %idx = poot.top_k %cs k = 2 : tensor<1x1x4xf32> -> tensor<1x1x2xf32>, tensor<1x1x2xi32>
  %ok = poot.compare lt, %idx, %own : (tensor<1x1x2xi32>, tensor<1x1xi32>) -> tensor<1x1x2xi1>
  %ids = poot.select %ok, %idx, %m1 : (tensor<1x1x2xi1>, tensor<1x1x2xi32>, tensor<i32>) -> tensor<1x1x2xi32>
  %t = poot.iota dim = 2 : tensor<1x1x8xi32>
  %kb = poot.div %t, %c2 : (tensor<1x1x8xi32>, tensor<i32>) -> tensor<1x1x8xi32>
  %ids4 = poot.reshape %ids : tensor<1x1x2xi32> -> tensor<1x1x2x1xi32>
  %hit = poot.compare eq, %ids4, %kb : (tensor<1x1x2x1xi32>, tensor<1x1x8xi32>) -> tensor<1x1x2x8xi1>
  %hiti = poot.convert %hit : tensor<1x1x2x8xi1> -> tensor<1x1x2x8xi32>
  %any = poot.reduce sum %hiti axis = 2 : tensor<1x1x2x8xi32> -> tensor<1x1x8xi32>
  %sel = poot.compare gt, %any, %c0 : (tensor<1x1x8xi32>, tensor<i32>) -> tensor<1x1x8xi1>
  %ownk = poot.compare eq, %kb, %own : (tensor<1x1x8xi32>, tensor<1x1xi32>) -> tensor<1x1x8xi1>
  %caus = poot.compare le, %t, %p : (tensor<1x1x8xi32>, tensor<1x1xi32>) -> tensor<1x1x8xi1>
  %blocks = poot.or %sel, %ownk : (tensor<1x1x8xi1>, tensor<1x1x8xi1>) -> tensor<1x1x8xi1>
  %vis = poot.and %blocks, %caus : (tensor<1x1x8xi1>, tensor<1x1x8xi1>) -> tensor<1x1x8xi1>
  %kr = poot.reshape %k : tensor<1x1x8x4xf32> -> tensor<1x1x1x8x4xf32>
  %kbr = poot.broadcast %kr : tensor<1x1x1x8x4xf32> -> tensor<1x1x2x8x4xf32>
  %kx = poot.reshape %kbr : tensor<1x1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  %vr = poot.reshape %v : tensor<1x1x8x4xf32> -> tensor<1x1x1x8x4xf32>
  %vbr = poot.broadcast %vr : tensor<1x1x1x8x4xf32> -> tensor<1x1x2x8x4xf32>
  %vx = poot.reshape %vbr : tensor<1x1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  %kt = poot.transpose %kx perm = [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x1x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x1x8xf32>
  %s1 = poot.mul %s, %scale : (tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %s2 = poot.select %vis, %s1, %ninf : (tensor<1x1x8xi1>, tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %d = poot.sub %s2, %m : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %e = poot.exp %d : tensor<1x2x1x8xf32>
  %z = poot.reduce sum %e axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %pr = poot.div %e, %z : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  // expected-remark @+1 {{selected attention not formed: the visibility mask has the 'listed' test reduces with 'sum', not max}}
  %o = poot.matmul %pr, %vx : (tensor<1x2x1x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x1x4xf32>
  return %o : tensor<1x2x1x4xf32>
}

// -----

// The causal bound reads other positions than the own block.
// CHECK-LABEL: func.func @causal_other_positions
// CHECK:       poot.block_topk
// CHECK-NOT:   poot.selected_attention
// CHECK:       poot.exp
func.func @causal_other_positions(%q: tensor<1x2x1x4xf32>, %k: tensor<1x1x8x4xf32>, %v: tensor<1x1x8x4xf32>,
    %blk: tensor<1x1x4xf32>, %p: tensor<1x1xi32>) -> tensor<1x2x1x4xf32> {
  %c0 = poot.constant dense<0> : tensor<i32>
  %m1 = poot.constant dense<-1> : tensor<i32>
  %c2 = poot.constant dense<2> : tensor<i32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %scale = poot.constant dense<0.5> : tensor<f32>
  %own = poot.div %p, %c2 : (tensor<1x1xi32>, tensor<i32>) -> tensor<1x1xi32>
  %bid = poot.iota dim = 2 : tensor<1x1x4xi32>
  %cand = poot.compare lt, %bid, %own : (tensor<1x1x4xi32>, tensor<1x1xi32>) -> tensor<1x1x4xi1>
  %cs = poot.select %cand, %blk, %ninf : (tensor<1x1x4xi1>, tensor<1x1x4xf32>, tensor<f32>) -> tensor<1x1x4xf32>
  %vals, %idx = poot.top_k %cs k = 2 : tensor<1x1x4xf32> -> tensor<1x1x2xf32>, tensor<1x1x2xi32>
  %ok = poot.compare lt, %idx, %own : (tensor<1x1x2xi32>, tensor<1x1xi32>) -> tensor<1x1x2xi1>
  %ids = poot.select %ok, %idx, %m1 : (tensor<1x1x2xi1>, tensor<1x1x2xi32>, tensor<i32>) -> tensor<1x1x2xi32>
  %t = poot.iota dim = 2 : tensor<1x1x8xi32>
  %kb = poot.div %t, %c2 : (tensor<1x1x8xi32>, tensor<i32>) -> tensor<1x1x8xi32>
  %ids4 = poot.reshape %ids : tensor<1x1x2xi32> -> tensor<1x1x2x1xi32>
  %hit = poot.compare eq, %ids4, %kb : (tensor<1x1x2x1xi32>, tensor<1x1x8xi32>) -> tensor<1x1x2x8xi1>
  %hiti = poot.convert %hit : tensor<1x1x2x8xi1> -> tensor<1x1x2x8xi32>
  %any = poot.reduce max %hiti axis = 2 : tensor<1x1x2x8xi32> -> tensor<1x1x8xi32>
  %sel = poot.compare gt, %any, %c0 : (tensor<1x1x8xi32>, tensor<i32>) -> tensor<1x1x8xi1>
  %ownk = poot.compare eq, %kb, %own : (tensor<1x1x8xi32>, tensor<1x1xi32>) -> tensor<1x1x8xi1>
  %p1 = poot.add %p, %c0 : (tensor<1x1xi32>, tensor<i32>) -> tensor<1x1xi32>
  %caus = poot.compare le, %t, %p1 : (tensor<1x1x8xi32>, tensor<1x1xi32>) -> tensor<1x1x8xi1>
  %blocks = poot.or %sel, %ownk : (tensor<1x1x8xi1>, tensor<1x1x8xi1>) -> tensor<1x1x8xi1>
  %vis = poot.and %blocks, %caus : (tensor<1x1x8xi1>, tensor<1x1x8xi1>) -> tensor<1x1x8xi1>
  %kr = poot.reshape %k : tensor<1x1x8x4xf32> -> tensor<1x1x1x8x4xf32>
  %kbr = poot.broadcast %kr : tensor<1x1x1x8x4xf32> -> tensor<1x1x2x8x4xf32>
  %kx = poot.reshape %kbr : tensor<1x1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  %vr = poot.reshape %v : tensor<1x1x8x4xf32> -> tensor<1x1x1x8x4xf32>
  %vbr = poot.broadcast %vr : tensor<1x1x1x8x4xf32> -> tensor<1x1x2x8x4xf32>
  %vx = poot.reshape %vbr : tensor<1x1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  %kt = poot.transpose %kx perm = [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x1x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x1x8xf32>
  %s1 = poot.mul %s, %scale : (tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %s2 = poot.select %vis, %s1, %ninf : (tensor<1x1x8xi1>, tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %d = poot.sub %s2, %m : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %e = poot.exp %d : tensor<1x2x1x8xf32>
  %z = poot.reduce sum %e axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %pr = poot.div %e, %z : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  // expected-remark @+1 {{selected attention not formed: the causal bound and the own block read different query positions}}
  %o = poot.matmul %pr, %vx : (tensor<1x2x1x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x1x4xf32>
  return %o : tensor<1x2x1x4xf32>
}

// -----

// An ALiBi-style bias added beside the selection: the op has no mask operand.
// CHECK-LABEL: func.func @with_additive_mask
// CHECK:       poot.block_topk
// CHECK-NOT:   poot.selected_attention
// CHECK:       poot.exp
func.func @with_additive_mask(%q: tensor<1x2x1x4xf32>, %k: tensor<1x1x8x4xf32>, %v: tensor<1x1x8x4xf32>,
    %blk: tensor<1x1x4xf32>, %p: tensor<1x1xi32>) -> tensor<1x2x1x4xf32> {
  %c0 = poot.constant dense<0> : tensor<i32>
  %m1 = poot.constant dense<-1> : tensor<i32>
  %c2 = poot.constant dense<2> : tensor<i32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %scale = poot.constant dense<0.5> : tensor<f32>
  %own = poot.div %p, %c2 : (tensor<1x1xi32>, tensor<i32>) -> tensor<1x1xi32>
  %bid = poot.iota dim = 2 : tensor<1x1x4xi32>
  %cand = poot.compare lt, %bid, %own : (tensor<1x1x4xi32>, tensor<1x1xi32>) -> tensor<1x1x4xi1>
  %cs = poot.select %cand, %blk, %ninf : (tensor<1x1x4xi1>, tensor<1x1x4xf32>, tensor<f32>) -> tensor<1x1x4xf32>
  %vals, %idx = poot.top_k %cs k = 2 : tensor<1x1x4xf32> -> tensor<1x1x2xf32>, tensor<1x1x2xi32>
  %ok = poot.compare lt, %idx, %own : (tensor<1x1x2xi32>, tensor<1x1xi32>) -> tensor<1x1x2xi1>
  %ids = poot.select %ok, %idx, %m1 : (tensor<1x1x2xi1>, tensor<1x1x2xi32>, tensor<i32>) -> tensor<1x1x2xi32>
  %t = poot.iota dim = 2 : tensor<1x1x8xi32>
  %kb = poot.div %t, %c2 : (tensor<1x1x8xi32>, tensor<i32>) -> tensor<1x1x8xi32>
  %ids4 = poot.reshape %ids : tensor<1x1x2xi32> -> tensor<1x1x2x1xi32>
  %hit = poot.compare eq, %ids4, %kb : (tensor<1x1x2x1xi32>, tensor<1x1x8xi32>) -> tensor<1x1x2x8xi1>
  %hiti = poot.convert %hit : tensor<1x1x2x8xi1> -> tensor<1x1x2x8xi32>
  %any = poot.reduce max %hiti axis = 2 : tensor<1x1x2x8xi32> -> tensor<1x1x8xi32>
  %sel = poot.compare gt, %any, %c0 : (tensor<1x1x8xi32>, tensor<i32>) -> tensor<1x1x8xi1>
  %ownk = poot.compare eq, %kb, %own : (tensor<1x1x8xi32>, tensor<1x1xi32>) -> tensor<1x1x8xi1>
  %caus = poot.compare le, %t, %p : (tensor<1x1x8xi32>, tensor<1x1xi32>) -> tensor<1x1x8xi1>
  %blocks = poot.or %sel, %ownk : (tensor<1x1x8xi1>, tensor<1x1x8xi1>) -> tensor<1x1x8xi1>
  %vis = poot.and %blocks, %caus : (tensor<1x1x8xi1>, tensor<1x1x8xi1>) -> tensor<1x1x8xi1>
  %kr = poot.reshape %k : tensor<1x1x8x4xf32> -> tensor<1x1x1x8x4xf32>
  %kbr = poot.broadcast %kr : tensor<1x1x1x8x4xf32> -> tensor<1x1x2x8x4xf32>
  %kx = poot.reshape %kbr : tensor<1x1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  %vr = poot.reshape %v : tensor<1x1x8x4xf32> -> tensor<1x1x1x8x4xf32>
  %vbr = poot.broadcast %vr : tensor<1x1x1x8x4xf32> -> tensor<1x1x2x8x4xf32>
  %vx = poot.reshape %vbr : tensor<1x1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  %kt = poot.transpose %kx perm = [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x1x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x1x8xf32>
  %s1 = poot.mul %s, %scale : (tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %bias = poot.iota dim = 3 : tensor<1x1x1x8xi32>
  %biasf = poot.convert %bias : tensor<1x1x1x8xi32> -> tensor<1x1x1x8xf32>
  %sb = poot.add %s1, %biasf : (tensor<1x2x1x8xf32>, tensor<1x1x1x8xf32>) -> tensor<1x2x1x8xf32>
  %s2 = poot.select %vis, %sb, %ninf : (tensor<1x1x8xi1>, tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %d = poot.sub %s2, %m : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %e = poot.exp %d : tensor<1x2x1x8xf32>
  %z = poot.reduce sum %e axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %pr = poot.div %e, %z : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  // expected-remark @+1 {{selected attention not formed: an additive mask is added to the scores beside the block selection; poot.selected_attention has no mask operand (its visible keys are exactly the selected blocks)}}
  %o = poot.matmul %pr, %vx : (tensor<1x2x1x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x1x4xf32>
  return %o : tensor<1x2x1x4xf32>
}

// -----

// The select hides the scores where the condition holds.
// CHECK-LABEL: func.func @hidden_by_true
// CHECK:       poot.block_topk
// CHECK-NOT:   poot.selected_attention
// CHECK:       poot.exp
func.func @hidden_by_true(%q: tensor<1x2x1x4xf32>, %k: tensor<1x1x8x4xf32>, %v: tensor<1x1x8x4xf32>,
    %blk: tensor<1x1x4xf32>, %p: tensor<1x1xi32>) -> tensor<1x2x1x4xf32> {
  %c0 = poot.constant dense<0> : tensor<i32>
  %m1 = poot.constant dense<-1> : tensor<i32>
  %c2 = poot.constant dense<2> : tensor<i32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %scale = poot.constant dense<0.5> : tensor<f32>
  %own = poot.div %p, %c2 : (tensor<1x1xi32>, tensor<i32>) -> tensor<1x1xi32>
  %bid = poot.iota dim = 2 : tensor<1x1x4xi32>
  %cand = poot.compare lt, %bid, %own : (tensor<1x1x4xi32>, tensor<1x1xi32>) -> tensor<1x1x4xi1>
  %cs = poot.select %cand, %blk, %ninf : (tensor<1x1x4xi1>, tensor<1x1x4xf32>, tensor<f32>) -> tensor<1x1x4xf32>
  %vals, %idx = poot.top_k %cs k = 2 : tensor<1x1x4xf32> -> tensor<1x1x2xf32>, tensor<1x1x2xi32>
  %ok = poot.compare lt, %idx, %own : (tensor<1x1x2xi32>, tensor<1x1xi32>) -> tensor<1x1x2xi1>
  %ids = poot.select %ok, %idx, %m1 : (tensor<1x1x2xi1>, tensor<1x1x2xi32>, tensor<i32>) -> tensor<1x1x2xi32>
  %t = poot.iota dim = 2 : tensor<1x1x8xi32>
  %kb = poot.div %t, %c2 : (tensor<1x1x8xi32>, tensor<i32>) -> tensor<1x1x8xi32>
  %ids4 = poot.reshape %ids : tensor<1x1x2xi32> -> tensor<1x1x2x1xi32>
  %hit = poot.compare eq, %ids4, %kb : (tensor<1x1x2x1xi32>, tensor<1x1x8xi32>) -> tensor<1x1x2x8xi1>
  %hiti = poot.convert %hit : tensor<1x1x2x8xi1> -> tensor<1x1x2x8xi32>
  %any = poot.reduce max %hiti axis = 2 : tensor<1x1x2x8xi32> -> tensor<1x1x8xi32>
  %sel = poot.compare gt, %any, %c0 : (tensor<1x1x8xi32>, tensor<i32>) -> tensor<1x1x8xi1>
  %ownk = poot.compare eq, %kb, %own : (tensor<1x1x8xi32>, tensor<1x1xi32>) -> tensor<1x1x8xi1>
  %caus = poot.compare le, %t, %p : (tensor<1x1x8xi32>, tensor<1x1xi32>) -> tensor<1x1x8xi1>
  %blocks = poot.or %sel, %ownk : (tensor<1x1x8xi1>, tensor<1x1x8xi1>) -> tensor<1x1x8xi1>
  %vis = poot.and %blocks, %caus : (tensor<1x1x8xi1>, tensor<1x1x8xi1>) -> tensor<1x1x8xi1>
  %kr = poot.reshape %k : tensor<1x1x8x4xf32> -> tensor<1x1x1x8x4xf32>
  %kbr = poot.broadcast %kr : tensor<1x1x1x8x4xf32> -> tensor<1x1x2x8x4xf32>
  %kx = poot.reshape %kbr : tensor<1x1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  %vr = poot.reshape %v : tensor<1x1x8x4xf32> -> tensor<1x1x1x8x4xf32>
  %vbr = poot.broadcast %vr : tensor<1x1x1x8x4xf32> -> tensor<1x1x2x8x4xf32>
  %vx = poot.reshape %vbr : tensor<1x1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  %kt = poot.transpose %kx perm = [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x1x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x1x8xf32>
  %s1 = poot.mul %s, %scale : (tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %s2 = poot.select %vis, %ninf, %s1 : (tensor<1x1x8xi1>, tensor<f32>, tensor<1x2x1x8xf32>) -> tensor<1x2x1x8xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %d = poot.sub %s2, %m : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %e = poot.exp %d : tensor<1x2x1x8xf32>
  %z = poot.reduce sum %e axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %pr = poot.div %e, %z : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  // expected-remark @+1 {{selected attention not formed: the score select hides the keys where its condition holds; the block-selected form reads select(visible, s, -inf)}}
  %o = poot.matmul %pr, %vx : (tensor<1x2x1x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x1x4xf32>
  return %o : tensor<1x2x1x4xf32>
}

