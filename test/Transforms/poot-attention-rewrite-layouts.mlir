// RUN: poot-opt %s -split-input-file -poot-attention-rewrite="remarks=true" -verify-diagnostics | FileCheck %s

// Operand layouts and scales the op reads through: heads folded into the
// batch of a rank-3 matmul, keys stored transposed, the scale applied to q
// or k before the score matmul, MLA with one key head.

// BART/OPT: q, k, v as [B*H, L, D], torch.bmm, the scores viewed as
// [B, H, Lq, Lk] around the mask. The 4-D query is read through its fold,
// K and V are unfolded, and the program's 4-D view of the result reads the
// op directly.
// CHECK-LABEL: func.func @heads_in_batch
// CHECK-DAG:   %[[K:.*]] = poot.reshape %arg1 : tensor<4x4x2xf32> -> tensor<2x2x4x2xf32>
// CHECK-DAG:   %[[V:.*]] = poot.reshape %arg2 : tensor<4x4x2xf32> -> tensor<2x2x4x2xf32>
// CHECK:       %[[O:.*]] = poot.attention %arg0, %[[K]], %[[V]] mask(%arg3 : tensor<2x1x3x4xf32>) {scale = 5.000000e-01 : f64}
// CHECK-SAME:      : tensor<2x2x3x2xf32>, tensor<2x2x4x2xf32>, tensor<2x2x4x2xf32> -> tensor<2x2x3x2xf32>
// CHECK-NOT:   poot.matmul
// CHECK:       return %[[O]]
func.func @heads_in_batch(%q4: tensor<2x2x3x2xf32>, %k: tensor<4x4x2xf32>, %v: tensor<4x4x2xf32>, %mask: tensor<2x1x3x4xf32>) -> tensor<2x2x3x2xf32> {
  %q = poot.reshape %q4 : tensor<2x2x3x2xf32> -> tensor<4x3x2xf32>
  %kt = poot.transpose %k perm = [0, 2, 1] : tensor<4x4x2xf32> -> tensor<4x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<4x3x2xf32>, tensor<4x2x4xf32>) -> tensor<4x3x4xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<4x3x4xf32>, tensor<f32>) -> tensor<4x3x4xf32>
  %s4 = poot.reshape %s1 : tensor<4x3x4xf32> -> tensor<2x2x3x4xf32>
  %s5 = poot.add %s4, %mask : (tensor<2x2x3x4xf32>, tensor<2x1x3x4xf32>) -> tensor<2x2x3x4xf32>
  %s3 = poot.reshape %s5 : tensor<2x2x3x4xf32> -> tensor<4x3x4xf32>
  %m = poot.reduce max %s3 axis = 2 keepdim : tensor<4x3x4xf32> -> tensor<4x3x1xf32>
  %xs = poot.sub %s3, %m : (tensor<4x3x4xf32>, tensor<4x3x1xf32>) -> tensor<4x3x4xf32>
  %ex = poot.exp %xs : tensor<4x3x4xf32>
  %den = poot.reduce sum %ex axis = 2 keepdim : tensor<4x3x4xf32> -> tensor<4x3x1xf32>
  %p = poot.div %ex, %den : (tensor<4x3x4xf32>, tensor<4x3x1xf32>) -> tensor<4x3x4xf32>
  %out = poot.matmul %p, %v : (tensor<4x3x4xf32>, tensor<4x4x2xf32>) -> tensor<4x3x2xf32>
  %out4 = poot.reshape %out : tensor<4x3x2xf32> -> tensor<2x2x3x2xf32>
  return %out4 : tensor<2x2x3x2xf32>
}

// -----

// A rank-3 attention with no 4-D view anywhere (and a rank-3 mask on the
// folded scores): read as batch 1 with N heads; the result is folded back.
// CHECK-LABEL: func.func @rank3
// CHECK-DAG:   %[[Q:.*]] = poot.reshape %arg0 : tensor<3x1x2xf32> -> tensor<1x3x1x2xf32>
// CHECK-DAG:   %[[M:.*]] = poot.reshape %arg3 : tensor<1x1x4xf32> -> tensor<1x1x1x4xf32>
// CHECK:       %[[O:.*]] = poot.attention %[[Q]], %{{.*}}, %{{.*}} mask(%[[M]] : tensor<1x1x1x4xf32>) {scale = 1.000000e+00 : f64}
// CHECK:       %[[R:.*]] = poot.reshape %[[O]] : tensor<1x3x1x2xf32> -> tensor<3x1x2xf32>
// CHECK:       return %[[R]]
func.func @rank3(%q: tensor<3x1x2xf32>, %k: tensor<3x4x2xf32>, %v: tensor<3x4x2xf32>, %mask: tensor<1x1x4xf32>) -> tensor<3x1x2xf32> {
  %kt = poot.transpose %k perm = [0, 2, 1] : tensor<3x4x2xf32> -> tensor<3x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<3x1x2xf32>, tensor<3x2x4xf32>) -> tensor<3x1x4xf32>
  %s1 = poot.add %s, %mask : (tensor<3x1x4xf32>, tensor<1x1x4xf32>) -> tensor<3x1x4xf32>
  %m = poot.reduce max %s1 axis = 2 keepdim : tensor<3x1x4xf32> -> tensor<3x1x1xf32>
  %xs = poot.sub %s1, %m : (tensor<3x1x4xf32>, tensor<3x1x1xf32>) -> tensor<3x1x4xf32>
  %ex = poot.exp %xs : tensor<3x1x4xf32>
  %den = poot.reduce sum %ex axis = 2 keepdim : tensor<3x1x4xf32> -> tensor<3x1x1xf32>
  %p = poot.div %ex, %den : (tensor<3x1x4xf32>, tensor<3x1x1xf32>) -> tensor<3x1x4xf32>
  %out = poot.matmul %p, %v : (tensor<3x1x4xf32>, tensor<3x4x2xf32>) -> tensor<3x1x2xf32>
  return %out : tensor<3x1x2xf32>
}

// -----

// Keys stored transposed, [B, Hkv, D, Lk], repeated for GQA in that layout:
// the score matmul takes them directly; the rewrite transposes the cache.
// CHECK-LABEL: func.func @key_transposed
// CHECK:       %[[K:.*]] = poot.transpose %arg1 perm = [0, 1, 3, 2] : tensor<1x2x4x8xf32> -> tensor<1x2x8x4xf32>
// CHECK:       poot.attention %arg0, %[[K]], %arg2 {scale = 5.000000e-01 : f64}
// CHECK-SAME:      : tensor<1x4x1x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> -> tensor<1x4x1x4xf32>
// CHECK-NOT:   poot.broadcast
func.func @key_transposed(%q: tensor<1x4x1x4xf32>, %kt: tensor<1x2x4x8xf32>, %v: tensor<1x2x8x4xf32>) -> tensor<1x4x1x4xf32> {
  %kr = poot.reshape %kt : tensor<1x2x4x8xf32> -> tensor<1x2x1x4x8xf32>
  %kb = poot.broadcast %kr : tensor<1x2x1x4x8xf32> -> tensor<1x2x2x4x8xf32>
  %kx = poot.reshape %kb : tensor<1x2x2x4x8xf32> -> tensor<1x4x4x8xf32>
  %vr = poot.reshape %v : tensor<1x2x8x4xf32> -> tensor<1x2x1x8x4xf32>
  %vb = poot.broadcast %vr : tensor<1x2x1x8x4xf32> -> tensor<1x2x2x8x4xf32>
  %vx = poot.reshape %vb : tensor<1x2x2x8x4xf32> -> tensor<1x4x8x4xf32>
  %s = poot.matmul %q, %kx : (tensor<1x4x1x4xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x1x8xf32>
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

// The scale on the query projection before the heads are split
// (`q_proj(x) * scaling`, then view + transpose): folded into the op's scale,
// the view rebuilt over the unscaled projection. The key is scaled too
// (Whisper's D^-0.25 on both): 0.5 * 0.25 = 0.125.
// CHECK-LABEL: func.func @scale_under_views
// CHECK:       %[[R:.*]] = poot.reshape %arg0 : tensor<1x2x8xf32> -> tensor<1x2x2x4xf32>
// CHECK:       %[[Q:.*]] = poot.transpose %[[R]] perm = [0, 2, 1, 3] : tensor<1x2x2x4xf32> -> tensor<1x2x2x4xf32>
// CHECK:       poot.attention %[[Q]], %arg1, %arg2 {scale = 1.250000e-01 : f64}
// CHECK-NOT:   poot.mul
func.func @scale_under_views(%x: tensor<1x2x8xf32>, %k: tensor<1x2x4x4xf32>, %v: tensor<1x2x4x4xf32>) -> tensor<1x2x2x4xf32> {
  %c = poot.constant dense<0.5> : tensor<f32>
  %xs0 = poot.mul %x, %c : (tensor<1x2x8xf32>, tensor<f32>) -> tensor<1x2x8xf32>
  %xr = poot.reshape %xs0 : tensor<1x2x8xf32> -> tensor<1x2x2x4xf32>
  %q = poot.transpose %xr perm = [0, 2, 1, 3] : tensor<1x2x2x4xf32> -> tensor<1x2x2x4xf32>
  %ck = poot.constant dense<4.0> : tensor<f32>
  %ks = poot.div %k, %ck : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %kt = poot.transpose %ks perm = [0, 1, 3, 2] : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x2x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x2x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x2x2x4xf32> -> tensor<1x2x2x1xf32>
  %d = poot.sub %s, %m : (tensor<1x2x2x4xf32>, tensor<1x2x2x1xf32>) -> tensor<1x2x2x4xf32>
  %ex = poot.exp %d : tensor<1x2x2x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x2x4xf32> -> tensor<1x2x2x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x2x4xf32>, tensor<1x2x2x1xf32>) -> tensor<1x2x2x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x2x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x2x4xf32>
  return %out : tensor<1x2x2x4xf32>
}

// -----

// The scale on the transposed key, constant on the left.
// CHECK-LABEL: func.func @scale_on_key_transpose
// CHECK:       poot.attention %arg0, %arg1, %arg2 {scale = 2.500000e-01 : f64}
func.func @scale_on_key_transpose(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %c = poot.constant dense<0.25> : tensor<f32>
  %kts = poot.mul %c, %kt : (tensor<f32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kts : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// Absorbed MLA with one latent key head: canonicalization has folded the
// identity broadcast of k_pe, so the concat reads it directly; it is still
// the shared key part, and the key is repeated over the query heads after
// the concat.
// CHECK-LABEL: func.func @mla_one_key_head
// CHECK:       poot.attention %arg0, %arg1, %arg3 key_shared(%arg2 : tensor<1x1x8x2xf32>) {scale = 5.000000e-01 : f64}
// CHECK-SAME:      : tensor<1x4x1x6xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32> -> tensor<1x4x1x4xf32>
// CHECK-NOT:   poot.concat
func.func @mla_one_key_head(%q: tensor<1x4x1x6xf32>, %knope: tensor<1x1x8x4xf32>, %kpe: tensor<1x1x8x2xf32>,
                            %v: tensor<1x1x8x4xf32>) -> tensor<1x4x1x4xf32> {
  %k = poot.concat %knope, %kpe axis = 3 : (tensor<1x1x8x4xf32>, tensor<1x1x8x2xf32>) -> tensor<1x1x8x6xf32>
  %kr = poot.reshape %k : tensor<1x1x8x6xf32> -> tensor<1x1x1x8x6xf32>
  %kb = poot.broadcast %kr : tensor<1x1x1x8x6xf32> -> tensor<1x1x4x8x6xf32>
  %kx = poot.reshape %kb : tensor<1x1x4x8x6xf32> -> tensor<1x4x8x6xf32>
  %vx = poot.broadcast %v : tensor<1x1x8x4xf32> -> tensor<1x4x8x4xf32>
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

// A head-folded key transposed by a permutation that is not [N, Lk, Dk] ->
// [N, Dk, Lk].
// CHECK-LABEL: func.func @folded_key_wrong_transpose
// CHECK-NOT:   poot.attention
func.func @folded_key_wrong_transpose(%q: tensor<2x1x2xf32>, %k: tensor<2x2x4xf32>, %v: tensor<2x4x2xf32>) -> tensor<2x1x2xf32> {
  // expected-remark @+1 {{attention not fused: the head-folded key's transpose is not [N, Lk, Dk] -> [N, Dk, Lk]}}
  %kt = poot.transpose %k perm = [1, 0, 2] : tensor<2x2x4xf32> -> tensor<2x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<2x1x2xf32>, tensor<2x2x4xf32>) -> tensor<2x1x4xf32>
  %m = poot.reduce max %s axis = 2 keepdim : tensor<2x1x4xf32> -> tensor<2x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<2x1x4xf32>, tensor<2x1x1xf32>) -> tensor<2x1x4xf32>
  %ex = poot.exp %xs : tensor<2x1x4xf32>
  %den = poot.reduce sum %ex axis = 2 keepdim : tensor<2x1x4xf32> -> tensor<2x1x1xf32>
  %p = poot.div %ex, %den : (tensor<2x1x4xf32>, tensor<2x1x1xf32>) -> tensor<2x1x4xf32>
  %out = poot.matmul %p, %v : (tensor<2x1x4xf32>, tensor<2x4x2xf32>) -> tensor<2x1x2xf32>
  return %out : tensor<2x1x2xf32>
}

// -----

// A key of rank 2 that the score matmul broadcasts over batch and heads.
// CHECK-LABEL: func.func @key_rank2
// CHECK-NOT:   poot.attention
func.func @key_rank2(%q: tensor<1x1x1x2xf32>, %k: tensor<4x2xf32>, %v: tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32> {
  // expected-remark @+1 {{attention not fused: the key is rank 2; poot.attention reads [B, Hkv, Lk, Dk]}}
  %kt = poot.transpose %k perm = [1, 0] : tensor<4x2xf32> -> tensor<2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<2x4xf32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// A reshape in the score chain that does more than fold the heads.
// CHECK-LABEL: func.func @score_reshape_not_a_fold
// CHECK-NOT:   poot.attention
func.func @score_reshape_not_a_fold(%q: tensor<2x2x2xf32>, %k: tensor<2x2x2xf32>, %v: tensor<2x2x2xf32>) -> tensor<2x2x2xf32> {
  %kt = poot.transpose %k perm = [0, 2, 1] : tensor<2x2x2xf32> -> tensor<2x2x2xf32>
  %s = poot.matmul %q, %kt : (tensor<2x2x2xf32>, tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
  // expected-remark @+1 {{attention not fused: 'poot.reshape' in the score chain does not fold the heads into the batch ([B*H, Lq, Lk] <-> [B, H, Lq, Lk])}}
  %s1 = poot.reshape %s : tensor<2x2x2xf32> -> tensor<2x2x2xf32>
  %m = poot.reduce max %s1 axis = 2 keepdim : tensor<2x2x2xf32> -> tensor<2x2x1xf32>
  %xs = poot.sub %s1, %m : (tensor<2x2x2xf32>, tensor<2x2x1xf32>) -> tensor<2x2x2xf32>
  %ex = poot.exp %xs : tensor<2x2x2xf32>
  %den = poot.reduce sum %ex axis = 2 keepdim : tensor<2x2x2xf32> -> tensor<2x2x1xf32>
  %p = poot.div %ex, %den : (tensor<2x2x2xf32>, tensor<2x2x1xf32>) -> tensor<2x2x2xf32>
  %out = poot.matmul %p, %v : (tensor<2x2x2xf32>, tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
  return %out : tensor<2x2x2xf32>
}

// -----

// Live-length zero selects on a head-folded chain are not read as a live
// length.
// CHECK-LABEL: func.func @folded_live
// CHECK-NOT:   poot.attention
func.func @folded_live(%q: tensor<1x1x2xf32>, %k4: tensor<1x1x4x2xf32>, %v: tensor<1x4x2xf32>,
                       %len: tensor<1xi32> {poot.range = #poot.range<1, 4>}) -> tensor<1x1x2xf32> {
  %len4 = poot.reshape %len : tensor<1xi32> -> tensor<1x1x1x1xi32>
  %tr = poot.iota dim = 2 : tensor<1x1x4x1xi32>
  %krow = poot.compare lt, %tr, %len4 : (tensor<1x1x4x1xi32>, tensor<1x1x1x1xi32>) -> tensor<1x1x4x1xi1>
  %zero = poot.constant dense<0.0> : tensor<f32>
  // expected-remark @+1 {{attention not fused: live length: the K/V zero selects of a head-folded [B*H, L, D] chain are not read as a live length}}
  %kl = poot.select %krow, %k4, %zero : (tensor<1x1x4x1xi1>, tensor<1x1x4x2xf32>, tensor<f32>) -> tensor<1x1x4x2xf32>
  %k = poot.reshape %kl : tensor<1x1x4x2xf32> -> tensor<1x4x2xf32>
  %kt = poot.transpose %k perm = [0, 2, 1] : tensor<1x4x2xf32> -> tensor<1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x2xf32>, tensor<1x2x4xf32>) -> tensor<1x1x4xf32>
  %m = poot.reduce max %s axis = 2 keepdim : tensor<1x1x4xf32> -> tensor<1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x4xf32>, tensor<1x1x1xf32>) -> tensor<1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x4xf32>
  %den = poot.reduce sum %ex axis = 2 keepdim : tensor<1x1x4xf32> -> tensor<1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x4xf32>, tensor<1x1x1xf32>) -> tensor<1x1x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x1x4xf32>, tensor<1x4x2xf32>) -> tensor<1x1x2xf32>
  return %out : tensor<1x1x2xf32>
}
