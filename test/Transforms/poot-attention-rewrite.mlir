// RUN: poot-opt %s -split-input-file -poot-attention-rewrite="remarks=true" -verify-diagnostics | FileCheck %s

// Hand-written chains in the tracer's shape (frontend/attention.py): what
// fuses into one poot.attention, and every check that declines.

// The seed's decode step, GQA n_rep = 2: cache write, repeat_kv, scores,
// scale, causal mask from iota > pos, softmax, output matmul. The repeat
// chain and the whole score/softmax chain are gone; the mask computation and
// the cache writes stay.
// CHECK-LABEL: func.func @gqa_decode
// CHECK-DAG:   %[[K1:.*]] = poot.dynamic_update_slice %arg1
// CHECK-DAG:   %[[V1:.*]] = poot.dynamic_update_slice %arg2
// CHECK-DAG:   %[[MASK:.*]] = poot.select
// CHECK:       %[[O:.*]] = poot.attention %arg0, %[[K1]], %[[V1]] mask(%[[MASK]] : tensor<1x1x1x8xf32>) {scale = 5.000000e-01 : f64}
// CHECK-SAME:      : tensor<1x4x1x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> -> tensor<1x4x1x4xf32>
// CHECK-NOT:   poot.broadcast
// CHECK-NOT:   poot.matmul
// CHECK-NOT:   poot.exp
// CHECK:       return %[[O]], %[[K1]], %[[V1]]
func.func @gqa_decode(%q: tensor<1x4x1x4xf32>,
                      %kc: tensor<1x2x8x4xf32> {poot.slot = #poot.slot<state "k0">},
                      %vc: tensor<1x2x8x4xf32> {poot.slot = #poot.slot<state "v0">},
                      %knew: tensor<1x2x1x4xf32>, %vnew: tensor<1x2x1x4xf32>,
                      %pos: tensor<i32> {poot.slot = #poot.slot<pos>, poot.range = #poot.range<0, 7>})
    -> (tensor<1x4x1x4xf32>, tensor<1x2x8x4xf32> {poot.slot = #poot.slot<state "k0">},
        tensor<1x2x8x4xf32> {poot.slot = #poot.slot<state "v0">}) {
  %k1 = poot.dynamic_update_slice %kc, %knew, %pos axis = 2 : tensor<1x2x8x4xf32>, tensor<1x2x1x4xf32>, tensor<i32>
  %v1 = poot.dynamic_update_slice %vc, %vnew, %pos axis = 2 : tensor<1x2x8x4xf32>, tensor<1x2x1x4xf32>, tensor<i32>
  %kr = poot.reshape %k1 : tensor<1x2x8x4xf32> -> tensor<1x2x1x8x4xf32>
  %kb = poot.broadcast %kr : tensor<1x2x1x8x4xf32> -> tensor<1x2x2x8x4xf32>
  %kx = poot.reshape %kb : tensor<1x2x2x8x4xf32> -> tensor<1x4x8x4xf32>
  %vr = poot.reshape %v1 : tensor<1x2x8x4xf32> -> tensor<1x2x1x8x4xf32>
  %vb = poot.broadcast %vr : tensor<1x2x1x8x4xf32> -> tensor<1x2x2x8x4xf32>
  %vx = poot.reshape %vb : tensor<1x2x2x8x4xf32> -> tensor<1x4x8x4xf32>
  %kt = poot.transpose %kx perm = [0, 1, 3, 2] : tensor<1x4x8x4xf32> -> tensor<1x4x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x4x1x4xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x1x8xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x4x1x8xf32>, tensor<f32>) -> tensor<1x4x1x8xf32>
  %t = poot.iota dim = 3 : tensor<1x1x1x8xi32>
  %hid = poot.compare gt, %t, %pos : (tensor<1x1x1x8xi32>, tensor<i32>) -> tensor<1x1x1x8xi1>
  %low = poot.constant dense<-3.40282347E+38> : tensor<f32>
  %zero = poot.constant dense<0.0> : tensor<f32>
  %mask = poot.select %hid, %low, %zero : (tensor<1x1x1x8xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x1x8xf32>
  %s2 = poot.add %s1, %mask : (tensor<1x4x1x8xf32>, tensor<1x1x1x8xf32>) -> tensor<1x4x1x8xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x4x1x8xf32> -> tensor<1x4x1x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x4x1x8xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x1x8xf32>
  %ex = poot.exp %xs : tensor<1x4x1x8xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x4x1x8xf32> -> tensor<1x4x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x4x1x8xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x1x8xf32>
  %out = poot.matmul %p, %vx : (tensor<1x4x1x8xf32>, tensor<1x4x8x4xf32>) -> tensor<1x4x1x4xf32>
  return %out, %k1, %v1 : tensor<1x4x1x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>
}

// -----

// MQA written as a plain head broadcast; prefill (Lq = Lk = 8) with the
// in-graph causal mask (iota col > iota row: the op's causal kind); Dv (2)
// != Dk (4); no scale op (scale 1).
// CHECK-LABEL: func.func @mqa_prefill
// CHECK:       poot.attention %arg0, %arg1, %arg2 causal {scale = 1.000000e+00 : f64}
// CHECK-SAME:      : tensor<1x4x8x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x2xf32> -> tensor<1x4x8x2xf32>
// CHECK-NOT:   poot.broadcast
func.func @mqa_prefill(%q: tensor<1x4x8x4xf32>, %k: tensor<1x1x8x4xf32>, %v: tensor<1x1x8x2xf32>) -> tensor<1x4x8x2xf32> {
  %kx = poot.broadcast %k : tensor<1x1x8x4xf32> -> tensor<1x4x8x4xf32>
  %vx = poot.broadcast %v : tensor<1x1x8x2xf32> -> tensor<1x4x8x2xf32>
  %kt = poot.transpose %kx perm = [0, 1, 3, 2] : tensor<1x4x8x4xf32> -> tensor<1x4x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x4x8x4xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x8x8xf32>
  %row = poot.iota dim = 2 : tensor<1x1x8x1xi32>
  %col = poot.iota dim = 3 : tensor<1x1x1x8xi32>
  %hid = poot.compare gt, %col, %row : (tensor<1x1x1x8xi32>, tensor<1x1x8x1xi32>) -> tensor<1x1x8x8xi1>
  %low = poot.constant dense<-3.40282347E+38> : tensor<f32>
  %zero = poot.constant dense<0.0> : tensor<f32>
  %mask = poot.select %hid, %low, %zero : (tensor<1x1x8x8xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x8x8xf32>
  %s2 = poot.add %s, %mask : (tensor<1x4x8x8xf32>, tensor<1x1x8x8xf32>) -> tensor<1x4x8x8xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x4x8x8xf32> -> tensor<1x4x8x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x4x8x8xf32>, tensor<1x4x8x1xf32>) -> tensor<1x4x8x8xf32>
  %ex = poot.exp %xs : tensor<1x4x8x8xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x4x8x8xf32> -> tensor<1x4x8x1xf32>
  %p = poot.div %ex, %den : (tensor<1x4x8x8xf32>, tensor<1x4x8x1xf32>) -> tensor<1x4x8x8xf32>
  %out = poot.matmul %p, %vx : (tensor<1x4x8x8xf32>, tensor<1x4x8x2xf32>) -> tensor<1x4x8x2xf32>
  return %out : tensor<1x4x8x2xf32>
}

// -----

// Softcap c * tanh(s / c) between the scale (written as a division) and the
// masks; a causal mask and a per-head ALiBi bias are summed into one mask.
// CHECK-LABEL: func.func @softcap_alibi
// CHECK:       %[[SUM:.*]] = poot.add %arg3, %arg4 : (tensor<1x1x1x8xf32>, tensor<1x4x1x8xf32>) -> tensor<1x4x1x8xf32>
// CHECK:       poot.attention %arg0, %arg1, %arg2 mask(%[[SUM]] : tensor<1x4x1x8xf32>) {scale = 2.500000e-01 : f64, softcap = 3.000000e+01 : f64}
// CHECK-NOT:   poot.tanh
func.func @softcap_alibi(%q: tensor<1x4x1x4xf32>, %k: tensor<1x4x8x4xf32>, %v: tensor<1x4x8x4xf32>,
                         %mask: tensor<1x1x1x8xf32>, %bias: tensor<1x4x1x8xf32>) -> tensor<1x4x1x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x4x8x4xf32> -> tensor<1x4x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x4x1x4xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x1x8xf32>
  %four = poot.constant dense<4.0> : tensor<f32>
  %s1 = poot.div %s, %four : (tensor<1x4x1x8xf32>, tensor<f32>) -> tensor<1x4x1x8xf32>
  %cap = poot.constant dense<30.0> : tensor<f32>
  %d = poot.div %s1, %cap : (tensor<1x4x1x8xf32>, tensor<f32>) -> tensor<1x4x1x8xf32>
  %th = poot.tanh %d : tensor<1x4x1x8xf32>
  %s2 = poot.mul %th, %cap : (tensor<1x4x1x8xf32>, tensor<f32>) -> tensor<1x4x1x8xf32>
  %s3 = poot.add %s2, %mask : (tensor<1x4x1x8xf32>, tensor<1x1x1x8xf32>) -> tensor<1x4x1x8xf32>
  %s4 = poot.add %s3, %bias : (tensor<1x4x1x8xf32>, tensor<1x4x1x8xf32>) -> tensor<1x4x1x8xf32>
  %m = poot.reduce max %s4 axis = 3 keepdim : tensor<1x4x1x8xf32> -> tensor<1x4x1x1xf32>
  %xs = poot.sub %s4, %m : (tensor<1x4x1x8xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x1x8xf32>
  %ex = poot.exp %xs : tensor<1x4x1x8xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x4x1x8xf32> -> tensor<1x4x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x4x1x8xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x1x8xf32>
  %out = poot.matmul %p, %v : (tensor<1x4x1x8xf32>, tensor<1x4x8x4xf32>) -> tensor<1x4x1x4xf32>
  return %out : tensor<1x4x1x4xf32>
}

// -----

// A mask added before the scale is scaled with the scores:
// (s + m) * c = s * c + m * c. A rank-2 mask gains its leading unit axes.
// CHECK-LABEL: func.func @mask_before_scale
// CHECK:       %[[C:.*]] = poot.constant dense<1.250000e-01> : tensor<f32>
// CHECK:       %[[M:.*]] = poot.mul %arg3, %[[C]] : (tensor<1x8xf32>, tensor<f32>) -> tensor<1x8xf32>
// CHECK:       %[[M4:.*]] = poot.reshape %[[M]] : tensor<1x8xf32> -> tensor<1x1x1x8xf32>
// CHECK:       poot.attention %arg0, %arg1, %arg2 mask(%[[M4]] : tensor<1x1x1x8xf32>) {scale = 1.250000e-01 : f64}
func.func @mask_before_scale(%q: tensor<1x4x1x4xf32>, %k: tensor<1x4x8x4xf32>, %v: tensor<1x4x8x4xf32>,
                             %mask: tensor<1x8xf32>) -> tensor<1x4x1x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x4x8x4xf32> -> tensor<1x4x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x4x1x4xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x1x8xf32>
  %s1 = poot.add %mask, %s : (tensor<1x8xf32>, tensor<1x4x1x8xf32>) -> tensor<1x4x1x8xf32>
  %c = poot.constant dense<0.125> : tensor<f32>
  %s2 = poot.mul %c, %s1 : (tensor<f32>, tensor<1x4x1x8xf32>) -> tensor<1x4x1x8xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x4x1x8xf32> -> tensor<1x4x1x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x4x1x8xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x1x8xf32>
  %ex = poot.exp %xs : tensor<1x4x1x8xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x4x1x8xf32> -> tensor<1x4x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x4x1x8xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x1x8xf32>
  %out = poot.matmul %p, %v : (tensor<1x4x1x8xf32>, tensor<1x4x8x4xf32>) -> tensor<1x4x1x4xf32>
  return %out : tensor<1x4x1x4xf32>
}

// -----

// Keys cached as [B, Lk, H, D]: the two transposes composed into one
// (perm [0, 2, 3, 1]); the rewrite builds the [B, H, Lk, D] key itself.
// CHECK-LABEL: func.func @key_layout_blhd
// CHECK:       %[[K:.*]] = poot.transpose %arg1 perm = [0, 2, 1, 3] : tensor<1x8x4x4xf32> -> tensor<1x4x8x4xf32>
// CHECK:       poot.attention %arg0, %[[K]], %arg2 {scale = 5.000000e-01 : f64}
func.func @key_layout_blhd(%q: tensor<1x4x1x4xf32>, %k: tensor<1x8x4x4xf32>, %v: tensor<1x4x8x4xf32>) -> tensor<1x4x1x4xf32> {
  %kt = poot.transpose %k perm = [0, 2, 3, 1] : tensor<1x8x4x4xf32> -> tensor<1x4x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x4x1x4xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x1x8xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x4x1x8xf32>, tensor<f32>) -> tensor<1x4x1x8xf32>
  %m = poot.reduce max %s1 axis = 3 keepdim : tensor<1x4x1x8xf32> -> tensor<1x4x1x1xf32>
  %xs = poot.sub %s1, %m : (tensor<1x4x1x8xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x1x8xf32>
  %ex = poot.exp %xs : tensor<1x4x1x8xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x4x1x8xf32> -> tensor<1x4x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x4x1x8xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x1x8xf32>
  %out = poot.matmul %p, %v : (tensor<1x4x1x8xf32>, tensor<1x4x8x4xf32>) -> tensor<1x4x1x4xf32>
  return %out : tensor<1x4x1x4xf32>
}

// -----

// Split key (MLA): concat(k_nope, broadcast(k_pe)) becomes key + key_shared;
// the broadcast key is never built.
// CHECK-LABEL: func.func @split_key
// CHECK:       poot.attention %arg0, %arg1, %arg3 key_shared(%arg2 : tensor<1x1x8x2xf32>) {scale = 5.000000e-01 : f64}
// CHECK-SAME:      : tensor<1x4x1x6xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> -> tensor<1x4x1x4xf32>
// CHECK-NOT:   poot.concat
// CHECK-NOT:   poot.broadcast
func.func @split_key(%q: tensor<1x4x1x6xf32>, %knope: tensor<1x2x8x4xf32>, %kpe: tensor<1x1x8x2xf32>,
                     %v: tensor<1x2x8x4xf32>) -> tensor<1x4x1x4xf32> {
  %kpeb = poot.broadcast %kpe : tensor<1x1x8x2xf32> -> tensor<1x2x8x2xf32>
  %k = poot.concat %knope, %kpeb axis = 3 : (tensor<1x2x8x4xf32>, tensor<1x2x8x2xf32>) -> tensor<1x2x8x6xf32>
  %kr = poot.reshape %k : tensor<1x2x8x6xf32> -> tensor<1x2x1x8x6xf32>
  %kb = poot.broadcast %kr : tensor<1x2x1x8x6xf32> -> tensor<1x2x2x8x6xf32>
  %kx = poot.reshape %kb : tensor<1x2x2x8x6xf32> -> tensor<1x4x8x6xf32>
  %vr = poot.reshape %v : tensor<1x2x8x4xf32> -> tensor<1x2x1x8x4xf32>
  %vb = poot.broadcast %vr : tensor<1x2x1x8x4xf32> -> tensor<1x2x2x8x4xf32>
  %vx = poot.reshape %vb : tensor<1x2x2x8x4xf32> -> tensor<1x4x8x4xf32>
  %kt = poot.transpose %kx perm = [0, 1, 3, 2] : tensor<1x4x8x6xf32> -> tensor<1x4x6x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x4x1x6xf32>, tensor<1x4x6x8xf32>) -> tensor<1x4x1x8xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x4x1x8xf32>, tensor<f32>) -> tensor<1x4x1x8xf32>
  %m = poot.reduce max %s1 axis = 3 keepdim : tensor<1x4x1x8xf32> -> tensor<1x4x1x1xf32>
  %xs = poot.sub %s1, %m : (tensor<1x4x1x8xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x1x8xf32>
  %ex = poot.exp %xs : tensor<1x4x1x8xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x4x1x8xf32> -> tensor<1x4x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x4x1x8xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x1x8xf32>
  %out = poot.matmul %p, %vx : (tensor<1x4x1x8xf32>, tensor<1x4x8x4xf32>) -> tensor<1x4x1x4xf32>
  return %out : tensor<1x4x1x4xf32>
}

// -----

// Paged key whose read map is declared inside the 16-slot pool: the op reads
// the pools through `read`; no gather or transpose survives.
// CHECK-LABEL: func.func @paged_proven
// CHECK:       poot.attention %arg0, %arg1, %arg2 read(%arg3 : tensor<1x8xi32>) {scale = 5.000000e-01 : f64}
// CHECK-SAME:      : tensor<1x4x1x4xf32>, tensor<16x2x4xf32>, tensor<16x2x4xf32> -> tensor<1x4x1x4xf32>
// CHECK-NOT:   poot.gather
// CHECK-NOT:   poot.transpose
func.func @paged_proven(%q: tensor<1x4x1x4xf32>, %kp: tensor<16x2x4xf32>, %vp: tensor<16x2x4xf32>,
                        %read: tensor<1x8xi32> {poot.slot = #poot.slot<slot_map>, poot.range = #poot.range<0, 15>})
    -> tensor<1x4x1x4xf32> {
  %kg = poot.gather %kp[%read] axis = 0 : (tensor<16x2x4xf32>, tensor<1x8xi32>) -> tensor<1x8x2x4xf32>
  %kv = poot.transpose %kg perm = [0, 2, 1, 3] : tensor<1x8x2x4xf32> -> tensor<1x2x8x4xf32>
  %vg = poot.gather %vp[%read] axis = 0 : (tensor<16x2x4xf32>, tensor<1x8xi32>) -> tensor<1x8x2x4xf32>
  %vv = poot.transpose %vg perm = [0, 2, 1, 3] : tensor<1x8x2x4xf32> -> tensor<1x2x8x4xf32>
  %kr = poot.reshape %kv : tensor<1x2x8x4xf32> -> tensor<1x2x1x8x4xf32>
  %kb = poot.broadcast %kr : tensor<1x2x1x8x4xf32> -> tensor<1x2x2x8x4xf32>
  %kx = poot.reshape %kb : tensor<1x2x2x8x4xf32> -> tensor<1x4x8x4xf32>
  %vr = poot.reshape %vv : tensor<1x2x8x4xf32> -> tensor<1x2x1x8x4xf32>
  %vb = poot.broadcast %vr : tensor<1x2x1x8x4xf32> -> tensor<1x2x2x8x4xf32>
  %vx = poot.reshape %vb : tensor<1x2x2x8x4xf32> -> tensor<1x4x8x4xf32>
  %kt = poot.transpose %kx perm = [0, 1, 3, 2] : tensor<1x4x8x4xf32> -> tensor<1x4x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x4x1x4xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x1x8xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x4x1x8xf32>, tensor<f32>) -> tensor<1x4x1x8xf32>
  %m = poot.reduce max %s1 axis = 3 keepdim : tensor<1x4x1x8xf32> -> tensor<1x4x1x1xf32>
  %xs = poot.sub %s1, %m : (tensor<1x4x1x8xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x1x8xf32>
  %ex = poot.exp %xs : tensor<1x4x1x8xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x4x1x8xf32> -> tensor<1x4x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x4x1x8xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x1x8xf32>
  %out = poot.matmul %p, %vx : (tensor<1x4x1x8xf32>, tensor<1x4x8x4xf32>) -> tensor<1x4x1x4xf32>
  return %out : tensor<1x4x1x4xf32>
}

// -----

// The same paged chain with a read map declared past the pool (or not
// declared at all): the attention fuses over the gathered view instead.
// CHECK-LABEL: func.func @paged_unproven
// CHECK:       %[[KV:.*]] = poot.transpose {{.*}} perm = [0, 2, 1, 3]
// CHECK:       %[[VV:.*]] = poot.transpose {{.*}} perm = [0, 2, 1, 3]
// CHECK:       poot.attention %arg0, %[[KV]], %[[VV]] {scale = 5.000000e-01 : f64}
// CHECK-SAME:      : tensor<1x2x1x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>
func.func @paged_unproven(%q: tensor<1x2x1x4xf32>, %kp: tensor<16x2x4xf32>, %vp: tensor<16x2x4xf32>,
                          %read: tensor<1x8xi32> {poot.slot = #poot.slot<slot_map>, poot.range = #poot.range<0, 16>})
    -> tensor<1x2x1x4xf32> {
  %kg = poot.gather %kp[%read] axis = 0 : (tensor<16x2x4xf32>, tensor<1x8xi32>) -> tensor<1x8x2x4xf32>
  %kv = poot.transpose %kg perm = [0, 2, 1, 3] : tensor<1x8x2x4xf32> -> tensor<1x2x8x4xf32>
  %vg = poot.gather %vp[%read] axis = 0 : (tensor<16x2x4xf32>, tensor<1x8xi32>) -> tensor<1x8x2x4xf32>
  %vv = poot.transpose %vg perm = [0, 2, 1, 3] : tensor<1x8x2x4xf32> -> tensor<1x2x8x4xf32>
  %kt = poot.transpose %kv perm = [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x1x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x1x8xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %m = poot.reduce max %s1 axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %xs = poot.sub %s1, %m : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %ex = poot.exp %xs : tensor<1x2x1x8xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  // expected-remark @+1 {{paged key not fused, attention reads the gathered view: cannot prove the read map inside the pool [0, 16) (its range is [0, 16])}}
  %out = poot.matmul %p, %vv : (tensor<1x2x1x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x1x4xf32>
  return %out : tensor<1x2x1x4xf32>
}

// -----

// attention_live: len = pos + 1 bounded by an index_guard whose witness is a
// validation result; K and V rows past len zeroed, their scores -inf. The
// rewrite proves 1 <= len <= 8 and takes len; the selects and the iotas go.
// CHECK-LABEL: func.func @live_witnessed
// CHECK:       %[[LEN:.*]], %[[OK:.*]] = poot.index_guard
// CHECK:       %[[O:.*]] = poot.attention %arg0, %{{.*}}, %{{.*}} len(%[[LEN]] : tensor<1xi32>) {scale = 5.000000e-01 : f64}
// CHECK-NOT:   poot.select
// CHECK-NOT:   poot.iota
// CHECK:       return %[[O]], %{{.*}}, %{{.*}}, %[[OK]]
func.func @live_witnessed(%q: tensor<1x4x1x4xf32>,
                          %kc: tensor<1x2x8x4xf32> {poot.slot = #poot.slot<state "k0">},
                          %vc: tensor<1x2x8x4xf32> {poot.slot = #poot.slot<state "v0">},
                          %knew: tensor<1x2x1x4xf32>, %vnew: tensor<1x2x1x4xf32>,
                          %pos: tensor<i32> {poot.slot = #poot.slot<pos>, poot.range = #poot.range<0, 7>})
    -> (tensor<1x4x1x4xf32>, tensor<1x2x8x4xf32> {poot.slot = #poot.slot<state "k0">},
        tensor<1x2x8x4xf32> {poot.slot = #poot.slot<state "v0">}, tensor<i1> {poot.slot = #poot.slot<validation>}) {
  %k1 = poot.dynamic_update_slice %kc, %knew, %pos axis = 2 : tensor<1x2x8x4xf32>, tensor<1x2x1x4xf32>, tensor<i32>
  %v1 = poot.dynamic_update_slice %vc, %vnew, %pos axis = 2 : tensor<1x2x8x4xf32>, tensor<1x2x1x4xf32>, tensor<i32>
  %one = poot.constant dense<1> : tensor<i32>
  %lp = poot.add %pos, %one : (tensor<i32>, tensor<i32>) -> tensor<i32>
  %lb = poot.broadcast %lp : tensor<i32> -> tensor<1xi32>
  %len, %ok = poot.index_guard %lb min = 1 max = 8 : tensor<1xi32>
  %len4 = poot.reshape %len : tensor<1xi32> -> tensor<1x1x1x1xi32>
  %tr = poot.iota dim = 2 : tensor<1x1x8x1xi32>
  %krow = poot.compare lt, %tr, %len4 : (tensor<1x1x8x1xi32>, tensor<1x1x1x1xi32>) -> tensor<1x1x8x1xi1>
  %zero = poot.constant dense<0.0> : tensor<f32>
  %kl = poot.select %krow, %k1, %zero : (tensor<1x1x8x1xi1>, tensor<1x2x8x4xf32>, tensor<f32>) -> tensor<1x2x8x4xf32>
  %vl = poot.select %krow, %v1, %zero : (tensor<1x1x8x1xi1>, tensor<1x2x8x4xf32>, tensor<f32>) -> tensor<1x2x8x4xf32>
  %kr = poot.reshape %kl : tensor<1x2x8x4xf32> -> tensor<1x2x1x8x4xf32>
  %kb = poot.broadcast %kr : tensor<1x2x1x8x4xf32> -> tensor<1x2x2x8x4xf32>
  %kx = poot.reshape %kb : tensor<1x2x2x8x4xf32> -> tensor<1x4x8x4xf32>
  %vr = poot.reshape %vl : tensor<1x2x8x4xf32> -> tensor<1x2x1x8x4xf32>
  %vb = poot.broadcast %vr : tensor<1x2x1x8x4xf32> -> tensor<1x2x2x8x4xf32>
  %vx = poot.reshape %vb : tensor<1x2x2x8x4xf32> -> tensor<1x4x8x4xf32>
  %tc = poot.iota dim = 3 : tensor<1x1x1x8xi32>
  %keep = poot.compare lt, %tc, %len4 : (tensor<1x1x1x8xi32>, tensor<1x1x1x1xi32>) -> tensor<1x1x1x8xi1>
  %kt = poot.transpose %kx perm = [0, 1, 3, 2] : tensor<1x4x8x4xf32> -> tensor<1x4x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x4x1x4xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x1x8xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x4x1x8xf32>, tensor<f32>) -> tensor<1x4x1x8xf32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %s2 = poot.select %keep, %s1, %ninf : (tensor<1x1x1x8xi1>, tensor<1x4x1x8xf32>, tensor<f32>) -> tensor<1x4x1x8xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x4x1x8xf32> -> tensor<1x4x1x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x4x1x8xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x1x8xf32>
  %ex = poot.exp %xs : tensor<1x4x1x8xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x4x1x8xf32> -> tensor<1x4x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x4x1x8xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x1x8xf32>
  %out = poot.matmul %p, %vx : (tensor<1x4x1x8xf32>, tensor<1x4x8x4xf32>) -> tensor<1x4x1x4xf32>
  return %out, %k1, %v1, %ok : tensor<1x4x1x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<i1>
}

// -----

// len = pos + 1 with pos declared in [0, 7]: the bound needs no guard and no
// witness. The selects are written with the operands swapped (keep on false,
// t >= len) and len is broadcast over a batch of 2.
// CHECK-LABEL: func.func @live_from_pos
// CHECK:       %[[R:.*]] = poot.reshape %{{.*}} : tensor<1x1x1x1xi32> -> tensor<1xi32>
// CHECK:       %[[B:.*]] = poot.broadcast %[[R]] : tensor<1xi32> -> tensor<2xi32>
// CHECK:       poot.attention %arg0, %arg1, %arg2 len(%[[B]] : tensor<2xi32>) {scale = 1.000000e+00 : f64}
func.func @live_from_pos(%q: tensor<2x2x1x4xf32>, %k: tensor<2x2x8x4xf32>, %v: tensor<2x2x8x4xf32>,
                         %pos: tensor<i32> {poot.slot = #poot.slot<pos>, poot.range = #poot.range<0, 7>})
    -> tensor<2x2x1x4xf32> {
  %one = poot.constant dense<1> : tensor<i32>
  %lp = poot.add %pos, %one : (tensor<i32>, tensor<i32>) -> tensor<i32>
  %len4 = poot.reshape %lp : tensor<i32> -> tensor<1x1x1x1xi32>
  %tr = poot.iota dim = 2 : tensor<1x1x8x1xi32>
  %krow = poot.compare ge, %tr, %len4 : (tensor<1x1x8x1xi32>, tensor<1x1x1x1xi32>) -> tensor<1x1x8x1xi1>
  %zero = poot.constant dense<0.0> : tensor<f32>
  %kl = poot.select %krow, %zero, %k : (tensor<1x1x8x1xi1>, tensor<f32>, tensor<2x2x8x4xf32>) -> tensor<2x2x8x4xf32>
  %vl = poot.select %krow, %zero, %v : (tensor<1x1x8x1xi1>, tensor<f32>, tensor<2x2x8x4xf32>) -> tensor<2x2x8x4xf32>
  %tc = poot.iota dim = 3 : tensor<1x1x1x8xi32>
  %keep = poot.compare gt, %len4, %tc : (tensor<1x1x1x1xi32>, tensor<1x1x1x8xi32>) -> tensor<1x1x1x8xi1>
  %kt = poot.transpose %kl perm = [0, 1, 3, 2] : tensor<2x2x8x4xf32> -> tensor<2x2x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<2x2x1x4xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x1x8xf32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %s2 = poot.select %keep, %s, %ninf : (tensor<1x1x1x8xi1>, tensor<2x2x1x8xf32>, tensor<f32>) -> tensor<2x2x1x8xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<2x2x1x8xf32> -> tensor<2x2x1x1xf32>
  %xs = poot.sub %s2, %m : (tensor<2x2x1x8xf32>, tensor<2x2x1x1xf32>) -> tensor<2x2x1x8xf32>
  %ex = poot.exp %xs : tensor<2x2x1x8xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<2x2x1x8xf32> -> tensor<2x2x1x1xf32>
  %p = poot.div %ex, %den : (tensor<2x2x1x8xf32>, tensor<2x2x1x1xf32>) -> tensor<2x2x1x8xf32>
  %out = poot.matmul %p, %vl : (tensor<2x2x1x8xf32>, tensor<2x2x8x4xf32>) -> tensor<2x2x1x4xf32>
  return %out : tensor<2x2x1x4xf32>
}

// -----

// The guard clamps an undeclared length, but its witness is dropped: the
// clamp proves nothing and the chain stays primitive.
// CHECK-LABEL: func.func @live_guard_without_witness
// CHECK-NOT:   poot.attention
func.func @live_guard_without_witness(%q: tensor<1x2x1x4xf32>, %k: tensor<1x2x8x4xf32>, %v: tensor<1x2x8x4xf32>,
                                      %raw: tensor<1xi32>) -> tensor<1x2x1x4xf32> {
  %len, %ok = poot.index_guard %raw min = 1 max = 8 : tensor<1xi32>
  %len4 = poot.reshape %len : tensor<1xi32> -> tensor<1x1x1x1xi32>
  %tr = poot.iota dim = 2 : tensor<1x1x8x1xi32>
  %krow = poot.compare lt, %tr, %len4 : (tensor<1x1x8x1xi32>, tensor<1x1x1x1xi32>) -> tensor<1x1x8x1xi1>
  %zero = poot.constant dense<0.0> : tensor<f32>
  %kl = poot.select %krow, %k, %zero : (tensor<1x1x8x1xi1>, tensor<1x2x8x4xf32>, tensor<f32>) -> tensor<1x2x8x4xf32>
  %vl = poot.select %krow, %v, %zero : (tensor<1x1x8x1xi1>, tensor<1x2x8x4xf32>, tensor<f32>) -> tensor<1x2x8x4xf32>
  %tc = poot.iota dim = 3 : tensor<1x1x1x8xi32>
  %keep = poot.compare lt, %tc, %len4 : (tensor<1x1x1x8xi32>, tensor<1x1x1x1xi32>) -> tensor<1x1x1x8xi1>
  %kt = poot.transpose %kl perm = [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x1x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x1x8xf32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  // expected-remark @+1 {{attention not fused: live length: 1 <= len <= 8 rests on the clamp of the poot.index_guard at}}
  %s2 = poot.select %keep, %s, %ninf : (tensor<1x1x1x8xi1>, tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %ex = poot.exp %xs : tensor<1x2x1x8xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %out = poot.matmul %p, %vl : (tensor<1x2x1x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x1x4xf32>
  return %out : tensor<1x2x1x4xf32>
}

// -----

// A length with no bound at all.
// CHECK-LABEL: func.func @live_unproven
// CHECK-NOT:   poot.attention
func.func @live_unproven(%q: tensor<1x2x1x4xf32>, %k: tensor<1x2x8x4xf32>, %v: tensor<1x2x8x4xf32>,
                         %len: tensor<1xi32> {poot.range = #poot.range<0, 8>}) -> tensor<1x2x1x4xf32> {
  %len4 = poot.reshape %len : tensor<1xi32> -> tensor<1x1x1x1xi32>
  %tr = poot.iota dim = 2 : tensor<1x1x8x1xi32>
  %krow = poot.compare lt, %tr, %len4 : (tensor<1x1x8x1xi32>, tensor<1x1x1x1xi32>) -> tensor<1x1x8x1xi1>
  %zero = poot.constant dense<0.0> : tensor<f32>
  %kl = poot.select %krow, %k, %zero : (tensor<1x1x8x1xi1>, tensor<1x2x8x4xf32>, tensor<f32>) -> tensor<1x2x8x4xf32>
  %vl = poot.select %krow, %v, %zero : (tensor<1x1x8x1xi1>, tensor<1x2x8x4xf32>, tensor<f32>) -> tensor<1x2x8x4xf32>
  %tc = poot.iota dim = 3 : tensor<1x1x1x8xi32>
  %keep = poot.compare lt, %tc, %len4 : (tensor<1x1x1x8xi32>, tensor<1x1x1x1xi32>) -> tensor<1x1x1x8xi1>
  %kt = poot.transpose %kl perm = [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x1x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x1x8xf32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  // expected-remark @+1 {{attention not fused: live length: cannot prove 1 <= len <= 8 from value ranges (len is in [0, 8])}}
  %s2 = poot.select %keep, %s, %ninf : (tensor<1x1x1x8xi1>, tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %ex = poot.exp %xs : tensor<1x2x1x8xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %out = poot.matmul %p, %vl : (tensor<1x2x1x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x1x4xf32>
  return %out : tensor<1x2x1x4xf32>
}

// -----

// The K rows zeroed past len and the scores set to -inf, but not the V rows:
// not attention_live's complete live length, so the chain stays.
// CHECK-LABEL: func.func @live_incomplete
// CHECK-NOT:   poot.attention
func.func @live_incomplete(%q: tensor<1x2x1x4xf32>, %k: tensor<1x2x8x4xf32>, %v: tensor<1x2x8x4xf32>,
                           %pos: tensor<i32> {poot.slot = #poot.slot<pos>, poot.range = #poot.range<0, 7>}) -> tensor<1x2x1x4xf32> {
  %one = poot.constant dense<1> : tensor<i32>
  %lp = poot.add %pos, %one : (tensor<i32>, tensor<i32>) -> tensor<i32>
  %tr = poot.iota dim = 2 : tensor<1x1x8x1xi32>
  %krow = poot.compare lt, %tr, %lp : (tensor<1x1x8x1xi32>, tensor<i32>) -> tensor<1x1x8x1xi1>
  %zero = poot.constant dense<0.0> : tensor<f32>
  // expected-remark @+1 {{attention not fused: live length: attention_live zeroes the K and V rows past len and sets their scores to -inf; this chain lacks the V select (a -inf select of the scores alone, such as a block selection, is not a live length)}}
  %kl = poot.select %krow, %k, %zero : (tensor<1x1x8x1xi1>, tensor<1x2x8x4xf32>, tensor<f32>) -> tensor<1x2x8x4xf32>
  %tc = poot.iota dim = 3 : tensor<1x1x1x8xi32>
  %keep = poot.compare lt, %tc, %lp : (tensor<1x1x1x8xi32>, tensor<i32>) -> tensor<1x1x1x8xi1>
  %kt = poot.transpose %kl perm = [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x1x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x1x8xf32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %s2 = poot.select %keep, %s, %ninf : (tensor<1x1x1x8xi1>, tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %ex = poot.exp %xs : tensor<1x2x1x8xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x1x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x1x4xf32>
  return %out : tensor<1x2x1x4xf32>
}

// -----

// The V rows zeroed past len, the K rows not.
// CHECK-LABEL: func.func @live_lacks_k
// CHECK-NOT:   poot.attention
func.func @live_lacks_k(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>,
                        %len: tensor<1xi32> {poot.range = #poot.range<1, 4>}) -> tensor<1x1x1x2xf32> {
  %len4 = poot.reshape %len : tensor<1xi32> -> tensor<1x1x1x1xi32>
  %tr = poot.iota dim = 2 : tensor<1x1x4x1xi32>
  %krow = poot.compare lt, %tr, %len4 : (tensor<1x1x4x1xi32>, tensor<1x1x1x1xi32>) -> tensor<1x1x4x1xi1>
  %zero = poot.constant dense<0.0> : tensor<f32>
  // expected-remark @+1 {{attention not fused: live length: attention_live zeroes the K and V rows past len and sets their scores to -inf; this chain lacks the K select}}
  %vl = poot.select %krow, %v, %zero : (tensor<1x1x4x1xi1>, tensor<1x1x4x2xf32>, tensor<f32>) -> tensor<1x1x4x2xf32>
  %tc = poot.iota dim = 3 : tensor<1x1x1x4xi32>
  %keep = poot.compare lt, %tc, %len4 : (tensor<1x1x1x4xi32>, tensor<1x1x1x1xi32>) -> tensor<1x1x1x4xi1>
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %s1 = poot.select %keep, %s, %ninf : (tensor<1x1x1x4xi1>, tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s1 axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s1, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p, %vl : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// The K and V rows zeroed past len, but no score set to -inf: the zeroed keys
// would still score 0 and take weight.
// CHECK-LABEL: func.func @live_lacks_score_select
// CHECK-NOT:   poot.attention
func.func @live_lacks_score_select(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>,
                                   %len: tensor<1xi32> {poot.range = #poot.range<1, 4>}) -> tensor<1x1x1x2xf32> {
  %len4 = poot.reshape %len : tensor<1xi32> -> tensor<1x1x1x1xi32>
  %tr = poot.iota dim = 2 : tensor<1x1x4x1xi32>
  %krow = poot.compare lt, %tr, %len4 : (tensor<1x1x4x1xi32>, tensor<1x1x1x1xi32>) -> tensor<1x1x4x1xi1>
  %zero = poot.constant dense<0.0> : tensor<f32>
  // expected-remark @+1 {{attention not fused: live length: attention_live zeroes the K and V rows past len and sets their scores to -inf; this chain lacks the score select}}
  %kl = poot.select %krow, %k, %zero : (tensor<1x1x4x1xi1>, tensor<1x1x4x2xf32>, tensor<f32>) -> tensor<1x1x4x2xf32>
  %vl = poot.select %krow, %v, %zero : (tensor<1x1x4x1xi1>, tensor<1x1x4x2xf32>, tensor<f32>) -> tensor<1x1x4x2xf32>
  %kt = poot.transpose %kl perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p, %vl : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// Scales whose product overflows a double.
// CHECK-LABEL: func.func @scale_overflows
// CHECK-NOT:   poot.attention
func.func @scale_overflows(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %big = poot.constant dense<3.0e38> : tensor<f32>
  %s1 = poot.mul %s, %big : (tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  %s2 = poot.mul %s1, %big : (tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  %s3 = poot.mul %s2, %big : (tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  %s4 = poot.mul %s3, %big : (tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  %s5 = poot.mul %s4, %big : (tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  %s6 = poot.mul %s5, %big : (tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  %s7 = poot.mul %s6, %big : (tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  %s8 = poot.mul %s7, %big : (tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  // expected-remark @+1 {{attention not fused: the product of the score scales is not finite}}
  %s9 = poot.mul %s8, %big : (tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s9 axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s9, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// A chain computed in bf16 throughout: two-byte attention (f32 inside, the
// output rounded once).
// CHECK-LABEL: func.func @bf16
// CHECK:       poot.attention %arg0, %arg1, %arg2 {scale = 1.000000e+00 : f64} : tensor<1x2x1x4xbf16>, tensor<1x2x8x4xbf16>, tensor<1x2x8x4xbf16> -> tensor<1x2x1x4xbf16>
// CHECK-NOT:   poot.exp
func.func @bf16(%q: tensor<1x2x1x4xbf16>, %k: tensor<1x2x8x4xbf16>, %v: tensor<1x2x8x4xbf16>) -> tensor<1x2x1x4xbf16> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x8x4xbf16> -> tensor<1x2x4x8xbf16>
  %s = poot.matmul %q, %kt : (tensor<1x2x1x4xbf16>, tensor<1x2x4x8xbf16>) -> tensor<1x2x1x8xbf16>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x2x1x8xbf16> -> tensor<1x2x1x1xbf16>
  %xs = poot.sub %s, %m : (tensor<1x2x1x8xbf16>, tensor<1x2x1x1xbf16>) -> tensor<1x2x1x8xbf16>
  %ex = poot.exp %xs : tensor<1x2x1x8xbf16>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x1x8xbf16> -> tensor<1x2x1x1xbf16>
  %p = poot.div %ex, %den : (tensor<1x2x1x8xbf16>, tensor<1x2x1x1xbf16>) -> tensor<1x2x1x8xbf16>
  %out = poot.matmul %p, %v : (tensor<1x2x1x8xbf16>, tensor<1x2x8x4xbf16>) -> tensor<1x2x1x4xbf16>
  return %out : tensor<1x2x1x4xbf16>
}

// -----

// One key head that the matmul merely broadcasts over a batch of 2: the op
// cannot type a key whose batch is not the query's.
// CHECK-LABEL: func.func @key_broadcast_over_batch
// CHECK-NOT:   poot.attention
func.func @key_broadcast_over_batch(%q: tensor<2x2x1x4xf32>, %k: tensor<1x1x8x4xf32>, %v: tensor<1x1x8x4xf32>) -> tensor<2x2x1x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x8x4xf32> -> tensor<1x1x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<2x2x1x4xf32>, tensor<1x1x4x8xf32>) -> tensor<2x2x1x8xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<2x2x1x8xf32> -> tensor<2x2x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<2x2x1x8xf32>, tensor<2x2x1x1xf32>) -> tensor<2x2x1x8xf32>
  %ex = poot.exp %xs : tensor<2x2x1x8xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<2x2x1x8xf32> -> tensor<2x2x1x1xf32>
  %p = poot.div %ex, %den : (tensor<2x2x1x8xf32>, tensor<2x2x1x1xf32>) -> tensor<2x2x1x8xf32>
  // expected-remark @+1 {{attention not fused: poot.attention cannot type this chain: 'poot.attention' op key and value batch must equal the query batch (2)}}
  %out = poot.matmul %p, %v : (tensor<2x2x1x8xf32>, tensor<1x1x8x4xf32>) -> tensor<2x2x1x4xf32>
  return %out : tensor<2x2x1x4xf32>
}

// -----

// The scores are also returned: fusing would compute the chain twice.
// CHECK-LABEL: func.func @scores_escape
// CHECK-NOT:   poot.attention
func.func @scores_escape(%q: tensor<1x2x1x4xf32>, %k: tensor<1x2x8x4xf32>, %v: tensor<1x2x8x4xf32>)
    -> (tensor<1x2x1x4xf32>, tensor<1x2x1x8xf32>) {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  // expected-remark @+1 {{attention not fused: the scores computed by 'poot.matmul' are also used outside the attention chain}}
  %s = poot.matmul %q, %kt : (tensor<1x2x1x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x1x8xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %m = poot.reduce max %s1 axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %xs = poot.sub %s1, %m : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %ex = poot.exp %xs : tensor<1x2x1x8xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x1x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x1x4xf32>
  return %out, %s : tensor<1x2x1x4xf32>, tensor<1x2x1x8xf32>
}

// -----

// A mask added before the softcap is not the op's order (softcap, then mask).
// CHECK-LABEL: func.func @mask_before_softcap
// CHECK-NOT:   poot.attention
func.func @mask_before_softcap(%q: tensor<1x2x1x4xf32>, %k: tensor<1x2x8x4xf32>, %v: tensor<1x2x8x4xf32>,
                               %mask: tensor<1x1x1x8xf32>) -> tensor<1x2x1x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x1x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x1x8xf32>
  %s1 = poot.add %s, %mask : (tensor<1x2x1x8xf32>, tensor<1x1x1x8xf32>) -> tensor<1x2x1x8xf32>
  %cap = poot.constant dense<30.0> : tensor<f32>
  %d = poot.div %s1, %cap : (tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %th = poot.tanh %d : tensor<1x2x1x8xf32>
  // expected-remark @+1 {{attention not fused: a mask added before the softcap is not the op's score transform (the softcap comes before the mask)}}
  %s2 = poot.mul %th, %cap : (tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %ex = poot.exp %xs : tensor<1x2x1x8xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x1x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x1x4xf32>
  return %out : tensor<1x2x1x4xf32>
}

// -----

// Not a softmax at all: no candidate, no remark, nothing changes.
// CHECK-LABEL: func.func @plain_matmuls
// CHECK:       poot.matmul
// CHECK:       poot.matmul
func.func @plain_matmuls(%x: tensor<2x4xf32>, %w: tensor<4x4xf32>) -> tensor<2x4xf32> {
  %h = poot.matmul %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %y = poot.matmul %h, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

//===----------------------------------------------------------------------===//
// One case per remaining decline, on a minimal chain (B = H = Lq = 1, Lk = 4).
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func.func @scale_not_constant
// CHECK-NOT:   poot.attention
func.func @scale_not_constant(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>, %c: tensor<f32>) -> tensor<1x1x1x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s0 = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  // expected-remark @+1 {{attention not fused: 'poot.mul' in the score chain neither scales by a splat constant nor completes a softcap c * tanh(s / c)}}
  %s = poot.mul %s0, %c : (tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// CHECK-LABEL: func.func @div_not_constant
// CHECK-NOT:   poot.attention
func.func @div_not_constant(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>, %c: tensor<f32>) -> tensor<1x1x1x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s0 = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  // expected-remark @+1 {{attention not fused: 'poot.div' in the score chain does not divide by a finite nonzero splat constant}}
  %s = poot.div %s0, %c : (tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// CHECK-LABEL: func.func @unknown_score_op
// CHECK-NOT:   poot.attention
func.func @unknown_score_op(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s0 = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  // expected-remark @+1 {{attention not fused: 'poot.abs' between the score matmul and the softmax is not a scale, softcap, additive mask or mask select}}
  %s = poot.abs %s0 : tensor<1x1x1x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// Two score matmuls added: neither is a mask.
// CHECK-LABEL: func.func @two_score_chains
// CHECK-NOT:   poot.attention
func.func @two_score_chains(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>, %r: tensor<1x1x2x4xf32>) -> tensor<1x1x1x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s0 = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %s1 = poot.matmul %q, %r : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  // expected-remark @+1 {{attention not fused: cannot tell the scores from the mask in 'poot.add' (both or neither operand comes from the score matmul)}}
  %s = poot.add %s0, %s1 : (tensor<1x1x1x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// The softcap applied twice.
// CHECK-LABEL: func.func @two_softcaps
// CHECK-NOT:   poot.attention
func.func @two_softcaps(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s0 = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %cap = poot.constant dense<30.0> : tensor<f32>
  %d0 = poot.div %s0, %cap : (tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  %t0 = poot.tanh %d0 : tensor<1x1x1x4xf32>
  %s1 = poot.mul %t0, %cap : (tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  %d1 = poot.div %s1, %cap : (tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  %t1 = poot.tanh %d1 : tensor<1x1x1x4xf32>
  // expected-remark @+1 {{attention not fused: two softcaps in one score chain}}
  %s = poot.mul %t1, %cap : (tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// A scale after the softcap is not the op's order.
// CHECK-LABEL: func.func @scale_after_softcap
// CHECK-NOT:   poot.attention
func.func @scale_after_softcap(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s0 = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %cap = poot.constant dense<30.0> : tensor<f32>
  %d0 = poot.div %s0, %cap : (tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  %t0 = poot.tanh %d0 : tensor<1x1x1x4xf32>
  %s1 = poot.mul %t0, %cap : (tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  // expected-remark @+1 {{attention not fused: a scale applied after the softcap is not the op's score transform (scale, softcap, mask)}}
  %s = poot.mul %s1, %c : (tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// A rank-2 softmax (no batch or head axis): not the op's [B, H, L, D] layout.
// CHECK-LABEL: func.func @rank2
// CHECK-NOT:   poot.attention
func.func @rank2(%q: tensor<1x2xf32>, %k: tensor<4x2xf32>, %v: tensor<4x2xf32>) -> tensor<1x2xf32> {
  %kt = poot.transpose %k perm = [1, 0] : tensor<4x2xf32> -> tensor<2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2xf32>, tensor<2x4xf32>) -> tensor<1x4xf32>
  %m = poot.reduce max %s axis = 1 keepdim : tensor<1x4xf32> -> tensor<1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x4xf32>, tensor<1x1xf32>) -> tensor<1x4xf32>
  // expected-remark @+1 {{attention not fused: the softmax runs over tensor<1x4xf32>, not the [B, Hq, Lq, Lk] (or head-folded [B*Hq, Lq, Lk]) scores of one attention}}
  %ex = poot.exp %xs : tensor<1x4xf32>
  %den = poot.reduce sum %ex axis = 1 keepdim : tensor<1x4xf32> -> tensor<1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x4xf32>, tensor<1x1xf32>) -> tensor<1x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x4xf32>, tensor<4x2xf32>) -> tensor<1x2xf32>
  return %out : tensor<1x2xf32>
}

// -----

// The probabilities are also returned.
// CHECK-LABEL: func.func @probs_escape
// CHECK-NOT:   poot.attention
func.func @probs_escape(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>) -> (tensor<1x1x1x2xf32>, tensor<1x1x1x4xf32>) {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  // expected-remark @+1 {{attention not fused: a softmax intermediate is also used outside the attention chain}}
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out, %p : tensor<1x1x1x2xf32>, tensor<1x1x1x4xf32>
}

// -----

// A rotary part broadcast over the batch as well as the two key heads is not
// a split key (key_shared has the query's batch): the attention reads the
// concatenated key.
// CHECK-LABEL: func.func @split_key_fallback
// CHECK:       %[[K:.*]] = poot.concat
// CHECK:       poot.attention %arg0, %[[K]], %arg3 {scale = 1.000000e+00 : f64}
func.func @split_key_fallback(%q: tensor<2x2x1x3xf32>, %kn: tensor<2x2x4x2xf32>, %kpe: tensor<1x1x4x1xf32>, %v: tensor<2x2x4x2xf32>) -> tensor<2x2x1x2xf32> {
  %kb = poot.broadcast %kpe : tensor<1x1x4x1xf32> -> tensor<2x2x4x1xf32>
  %k = poot.concat %kn, %kb axis = 3 : (tensor<2x2x4x2xf32>, tensor<2x2x4x1xf32>) -> tensor<2x2x4x3xf32>
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<2x2x4x3xf32> -> tensor<2x2x3x4xf32>
  %s = poot.matmul %q, %kt : (tensor<2x2x1x3xf32>, tensor<2x2x3x4xf32>) -> tensor<2x2x1x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<2x2x1x4xf32> -> tensor<2x2x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<2x2x1x4xf32>, tensor<2x2x1x1xf32>) -> tensor<2x2x1x4xf32>
  %ex = poot.exp %xs : tensor<2x2x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<2x2x1x4xf32> -> tensor<2x2x1x1xf32>
  %p = poot.div %ex, %den : (tensor<2x2x1x4xf32>, tensor<2x2x1x1xf32>) -> tensor<2x2x1x4xf32>
  %out = poot.matmul %p, %v : (tensor<2x2x1x4xf32>, tensor<2x2x4x2xf32>) -> tensor<2x2x1x2xf32>
  return %out : tensor<2x2x1x2xf32>
}

// -----

// K and V gathered by different read maps: no paged form.
// CHECK-LABEL: func.func @paged_two_maps
// CHECK:       poot.attention %arg0, %{{.*}}, %{{.*}} {scale
func.func @paged_two_maps(%q: tensor<1x1x1x2xf32>, %kp: tensor<8x1x2xf32>, %vp: tensor<8x1x2xf32>,
                          %rk: tensor<1x4xi32> {poot.range = #poot.range<0, 7>}, %rv: tensor<1x4xi32> {poot.range = #poot.range<0, 7>}) -> tensor<1x1x1x2xf32> {
  %kg = poot.gather %kp[%rk] axis = 0 : (tensor<8x1x2xf32>, tensor<1x4xi32>) -> tensor<1x4x1x2xf32>
  %k = poot.transpose %kg perm = [0, 2, 1, 3] : tensor<1x4x1x2xf32> -> tensor<1x1x4x2xf32>
  %vg = poot.gather %vp[%rv] axis = 0 : (tensor<8x1x2xf32>, tensor<1x4xi32>) -> tensor<1x4x1x2xf32>
  %v = poot.transpose %vg perm = [0, 2, 1, 3] : tensor<1x4x1x2xf32> -> tensor<1x1x4x2xf32>
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  // expected-remark @+1 {{paged key not fused, attention reads the gathered view: K and V are not both gathered by one read map}}
  %out = poot.matmul %p, %v : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// Live selects that bound K/V and the scores by different lengths.
// CHECK-LABEL: func.func @live_two_lengths
// CHECK-NOT:   poot.attention
func.func @live_two_lengths(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>,
                            %a: tensor<i32> {poot.range = #poot.range<1, 4>}, %b: tensor<i32> {poot.range = #poot.range<1, 4>}) -> tensor<1x1x1x2xf32> {
  %tr = poot.iota dim = 2 : tensor<1x1x4x1xi32>
  %krow = poot.compare lt, %tr, %a : (tensor<1x1x4x1xi32>, tensor<i32>) -> tensor<1x1x4x1xi1>
  %zero = poot.constant dense<0.0> : tensor<f32>
  %kl = poot.select %krow, %k, %zero : (tensor<1x1x4x1xi1>, tensor<1x1x4x2xf32>, tensor<f32>) -> tensor<1x1x4x2xf32>
  %vl = poot.select %krow, %v, %zero : (tensor<1x1x4x1xi1>, tensor<1x1x4x2xf32>, tensor<f32>) -> tensor<1x1x4x2xf32>
  %tc = poot.iota dim = 3 : tensor<1x1x1x4xi32>
  %keep = poot.compare lt, %tc, %b : (tensor<1x1x1x4xi32>, tensor<i32>) -> tensor<1x1x1x4xi1>
  %kt = poot.transpose %kl perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s0 = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  // expected-remark @+1 {{attention not fused: live length: the K, V and score selects bound different lengths}}
  %s = poot.select %keep, %s0, %ninf : (tensor<1x1x1x4xi1>, tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p, %vl : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// Keys kept by t <= len: not the op's t < len.
// CHECK-LABEL: func.func @live_wrong_compare
// CHECK-NOT:   poot.attention
func.func @live_wrong_compare(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>,
                              %a: tensor<i32> {poot.range = #poot.range<1, 4>}) -> tensor<1x1x1x2xf32> {
  %tr = poot.iota dim = 2 : tensor<1x1x4x1xi32>
  %krow = poot.compare lt, %tr, %a : (tensor<1x1x4x1xi32>, tensor<i32>) -> tensor<1x1x4x1xi1>
  %zero = poot.constant dense<0.0> : tensor<f32>
  %kl = poot.select %krow, %k, %zero : (tensor<1x1x4x1xi1>, tensor<1x1x4x2xf32>, tensor<f32>) -> tensor<1x1x4x2xf32>
  %vl = poot.select %krow, %v, %zero : (tensor<1x1x4x1xi1>, tensor<1x1x4x2xf32>, tensor<f32>) -> tensor<1x1x4x2xf32>
  %tc = poot.iota dim = 3 : tensor<1x1x1x4xi32>
  %keep = poot.compare le, %tc, %a : (tensor<1x1x1x4xi32>, tensor<i32>) -> tensor<1x1x1x4xi1>
  %kt = poot.transpose %kl perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s0 = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  // expected-remark @+1 {{attention not fused: the live select keeps keys by 'le', not t < len}}
  %s = poot.select %keep, %s0, %ninf : (tensor<1x1x1x4xi1>, tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p, %vl : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// The live condition counts the wrong axis (the key rows' iota on D).
// CHECK-LABEL: func.func @live_wrong_iota
// CHECK-NOT:   poot.attention
func.func @live_wrong_iota(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>,
                           %a: tensor<i32> {poot.range = #poot.range<1, 4>}) -> tensor<1x1x1x2xf32> {
  %tr = poot.iota dim = 3 : tensor<1x1x1x2xi32>
  %krow = poot.compare lt, %tr, %a : (tensor<1x1x1x2xi32>, tensor<i32>) -> tensor<1x1x1x2xi1>
  %zero = poot.constant dense<0.0> : tensor<f32>
  // expected-remark @+1 {{attention not fused: the live condition's iota does not count the 4 key positions}}
  %kl = poot.select %krow, %k, %zero : (tensor<1x1x1x2xi1>, tensor<1x1x4x2xf32>, tensor<f32>) -> tensor<1x1x4x2xf32>
  %vl = poot.select %krow, %v, %zero : (tensor<1x1x1x2xi1>, tensor<1x1x4x2xf32>, tensor<f32>) -> tensor<1x1x4x2xf32>
  %tc = poot.iota dim = 3 : tensor<1x1x1x4xi32>
  %keep = poot.compare lt, %tc, %a : (tensor<1x1x1x4xi32>, tensor<i32>) -> tensor<1x1x1x4xi1>
  %kt = poot.transpose %kl perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s0 = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %s = poot.select %keep, %s0, %ninf : (tensor<1x1x1x4xi1>, tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p, %vl : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// A per-head length is not one value per batch row.
// CHECK-LABEL: func.func @live_per_head_length
// CHECK-NOT:   poot.attention
func.func @live_per_head_length(%q: tensor<1x2x1x2xf32>, %k: tensor<1x2x4x2xf32>, %v: tensor<1x2x4x2xf32>,
                                %a: tensor<1x2x1x1xi32> {poot.range = #poot.range<1, 4>}) -> tensor<1x2x1x2xf32> {
  %tr = poot.iota dim = 2 : tensor<1x1x4x1xi32>
  %krow = poot.compare lt, %tr, %a : (tensor<1x1x4x1xi32>, tensor<1x2x1x1xi32>) -> tensor<1x2x4x1xi1>
  %zero = poot.constant dense<0.0> : tensor<f32>
  // expected-remark @+1 {{attention not fused: the live length tensor<1x2x1x1xi32> is not one value per batch row}}
  %kl = poot.select %krow, %k, %zero : (tensor<1x2x4x1xi1>, tensor<1x2x4x2xf32>, tensor<f32>) -> tensor<1x2x4x2xf32>
  %vl = poot.select %krow, %v, %zero : (tensor<1x2x4x1xi1>, tensor<1x2x4x2xf32>, tensor<f32>) -> tensor<1x2x4x2xf32>
  %tc = poot.iota dim = 3 : tensor<1x1x1x4xi32>
  %keep = poot.compare lt, %tc, %a : (tensor<1x1x1x4xi32>, tensor<1x2x1x1xi32>) -> tensor<1x2x1x4xi1>
  %kt = poot.transpose %kl perm = [0, 1, 3, 2] : tensor<1x2x4x2xf32> -> tensor<1x2x2x4xf32>
  %s0 = poot.matmul %q, %kt : (tensor<1x2x1x2xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x1x4xf32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %s = poot.select %keep, %s0, %ninf : (tensor<1x2x1x4xi1>, tensor<1x2x1x4xf32>, tensor<f32>) -> tensor<1x2x1x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x2x1x4xf32> -> tensor<1x2x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x2x1x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x4xf32>
  %ex = poot.exp %xs : tensor<1x2x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x1x4xf32> -> tensor<1x2x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x1x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x4xf32>
  %out = poot.matmul %p, %vl : (tensor<1x2x1x4xf32>, tensor<1x2x4x2xf32>) -> tensor<1x2x1x2xf32>
  return %out : tensor<1x2x1x2xf32>
}

// -----

// The live select before the softcap would become -softcap, not -inf.
// CHECK-LABEL: func.func @live_before_softcap
// CHECK-NOT:   poot.attention
func.func @live_before_softcap(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>,
                               %a: tensor<i32> {poot.range = #poot.range<1, 4>}) -> tensor<1x1x1x2xf32> {
  %tr = poot.iota dim = 2 : tensor<1x1x4x1xi32>
  %krow = poot.compare lt, %tr, %a : (tensor<1x1x4x1xi32>, tensor<i32>) -> tensor<1x1x4x1xi1>
  %zero = poot.constant dense<0.0> : tensor<f32>
  %kl = poot.select %krow, %k, %zero : (tensor<1x1x4x1xi1>, tensor<1x1x4x2xf32>, tensor<f32>) -> tensor<1x1x4x2xf32>
  %vl = poot.select %krow, %v, %zero : (tensor<1x1x4x1xi1>, tensor<1x1x4x2xf32>, tensor<f32>) -> tensor<1x1x4x2xf32>
  %tc = poot.iota dim = 3 : tensor<1x1x1x4xi32>
  %keep = poot.compare lt, %tc, %a : (tensor<1x1x1x4xi32>, tensor<i32>) -> tensor<1x1x1x4xi1>
  %kt = poot.transpose %kl perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s0 = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %s1 = poot.select %keep, %s0, %ninf : (tensor<1x1x1x4xi1>, tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  %cap = poot.constant dense<30.0> : tensor<f32>
  %d = poot.div %s1, %cap : (tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  %t = poot.tanh %d : tensor<1x1x1x4xf32>
  // expected-remark @+1 {{attention not fused: the live-length select comes before the softcap, which would turn its -inf into -softcap}}
  %s = poot.mul %t, %cap : (tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p, %vl : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// A negative scale after the live select would turn -inf into +inf.
// CHECK-LABEL: func.func @live_negative_scale
// CHECK-NOT:   poot.attention
func.func @live_negative_scale(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>,
                               %a: tensor<i32> {poot.range = #poot.range<1, 4>}) -> tensor<1x1x1x2xf32> {
  %tr = poot.iota dim = 2 : tensor<1x1x4x1xi32>
  %krow = poot.compare lt, %tr, %a : (tensor<1x1x4x1xi32>, tensor<i32>) -> tensor<1x1x4x1xi1>
  %zero = poot.constant dense<0.0> : tensor<f32>
  %kl = poot.select %krow, %k, %zero : (tensor<1x1x4x1xi1>, tensor<1x1x4x2xf32>, tensor<f32>) -> tensor<1x1x4x2xf32>
  %vl = poot.select %krow, %v, %zero : (tensor<1x1x4x1xi1>, tensor<1x1x4x2xf32>, tensor<f32>) -> tensor<1x1x4x2xf32>
  %tc = poot.iota dim = 3 : tensor<1x1x1x4xi32>
  %keep = poot.compare lt, %tc, %a : (tensor<1x1x1x4xi32>, tensor<i32>) -> tensor<1x1x1x4xi1>
  %kt = poot.transpose %kl perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s0 = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %s1 = poot.select %keep, %s0, %ninf : (tensor<1x1x1x4xi1>, tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  %c = poot.constant dense<-0.5> : tensor<f32>
  // expected-remark @+1 {{attention not fused: a non-positive scale after the live-length select would turn its -inf into another value}}
  %s = poot.mul %s1, %c : (tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p, %vl : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// An undeclared length whose only bound is the guard's clamp: it fuses
// because the witness reaches a validation result (here through poot.and
// with another check's witness).
// CHECK-LABEL: func.func @live_guard_witnessed_through_and
// CHECK:       %[[LEN:.*]], %[[OK:.*]] = poot.index_guard %arg3 min = 1 max = 8
// CHECK:       poot.attention %arg0, %arg1, %arg2 len(%[[LEN]] : tensor<1xi32>)
func.func @live_guard_witnessed_through_and(%q: tensor<1x2x1x4xf32>, %k: tensor<1x2x8x4xf32>, %v: tensor<1x2x8x4xf32>,
                                            %raw: tensor<1xi32>, %other: tensor<1xi32>)
    -> (tensor<1x2x1x4xf32>, tensor<i1> {poot.slot = #poot.slot<validation>}) {
  %len, %ok = poot.index_guard %raw min = 1 max = 8 : tensor<1xi32>
  %o2, %ok2 = poot.index_guard %other min = 0 max = 3 : tensor<1xi32>
  %all = poot.and %ok2, %ok : (tensor<i1>, tensor<i1>) -> tensor<i1>
  %len4 = poot.reshape %len : tensor<1xi32> -> tensor<1x1x1x1xi32>
  %tr = poot.iota dim = 2 : tensor<1x1x8x1xi32>
  %krow = poot.compare lt, %tr, %len4 : (tensor<1x1x8x1xi32>, tensor<1x1x1x1xi32>) -> tensor<1x1x8x1xi1>
  %zero = poot.constant dense<0.0> : tensor<f32>
  %kl = poot.select %krow, %k, %zero : (tensor<1x1x8x1xi1>, tensor<1x2x8x4xf32>, tensor<f32>) -> tensor<1x2x8x4xf32>
  %vl = poot.select %krow, %v, %zero : (tensor<1x1x8x1xi1>, tensor<1x2x8x4xf32>, tensor<f32>) -> tensor<1x2x8x4xf32>
  %tc = poot.iota dim = 3 : tensor<1x1x1x8xi32>
  %keep = poot.compare lt, %tc, %len4 : (tensor<1x1x1x8xi32>, tensor<1x1x1x1xi32>) -> tensor<1x1x1x8xi1>
  %kt = poot.transpose %kl perm = [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x1x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x1x8xf32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %s2 = poot.select %keep, %s, %ninf : (tensor<1x1x1x8xi1>, tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %ex = poot.exp %xs : tensor<1x2x1x8xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %out = poot.matmul %p, %vl : (tensor<1x2x1x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x1x4xf32>
  return %out, %all : tensor<1x2x1x4xf32>, tensor<i1>
}
