// RUN: poot-opt %s -split-input-file -poot-fuse-attention="remarks=true" -verify-diagnostics | FileCheck %s

// The pipeline (canonicalize, poot-recognize-rope, poot-attention-rewrite,
// cse) on chains that only match after canonicalization.

// Keys cached as [B, Lk, H, D] and transposed twice; the scale written as a
// division (by a power of two: canonicalized into a multiplication); the
// softmax written with plain reductions, reshapes back to keepdim and an
// explicit broadcast of the max; the scale constant on the left.
// CHECK-LABEL: func.func @variants
// CHECK:       %[[K:.*]] = poot.transpose %arg1 perm = [0, 2, 1, 3] : tensor<1x8x2x4xf32> -> tensor<1x2x8x4xf32>
// CHECK:       %[[O:.*]] = poot.attention %arg0, %[[K]], %arg2 mask(%arg3 : tensor<1x1x1x8xf32>) {scale = 2.500000e-01 : f64}
// CHECK-NEXT:  return %[[O]]
func.func @variants(%q: tensor<1x2x1x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x2x8x4xf32>,
                    %mask: tensor<1x1x1x8xf32>) -> tensor<1x2x1x4xf32> {
  %kh = poot.transpose %k perm = [0, 2, 1, 3] : tensor<1x8x2x4xf32> -> tensor<1x2x8x4xf32>
  %kt = poot.transpose %kh perm = [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x1x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x1x8xf32>
  %four = poot.constant dense<4.0> : tensor<f32>
  %s1 = poot.div %s, %four : (tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %s2 = poot.add %mask, %s1 : (tensor<1x1x1x8xf32>, tensor<1x2x1x8xf32>) -> tensor<1x2x1x8xf32>
  %m = poot.reduce max %s2 axis = 3 : tensor<1x2x1x8xf32> -> tensor<1x2x1xf32>
  %mk = poot.reshape %m : tensor<1x2x1xf32> -> tensor<1x2x1x1xf32>
  %mb = poot.broadcast %mk : tensor<1x2x1x1xf32> -> tensor<1x2x1x8xf32>
  %xs = poot.sub %s2, %mb : (tensor<1x2x1x8xf32>, tensor<1x2x1x8xf32>) -> tensor<1x2x1x8xf32>
  %ex = poot.exp %xs : tensor<1x2x1x8xf32>
  %den = poot.reduce sum %ex axis = 3 : tensor<1x2x1x8xf32> -> tensor<1x2x1xf32>
  %dk = poot.reshape %den : tensor<1x2x1xf32> -> tensor<1x2x1x1xf32>
  %p = poot.div %ex, %dk : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x1x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x1x4xf32>
  return %out : tensor<1x2x1x4xf32>
}

// -----

// RoPE on q and k, then attention: both are recognized; nothing else moves.
// CHECK-LABEL: func.func @rope_then_attention
// CHECK-DAG:   %[[QR:.*]] = poot.rope %arg0, %arg3, %arg4
// CHECK-DAG:   %[[KR:.*]] = poot.rope %arg1, %arg3, %arg4
// CHECK:       %[[O:.*]] = poot.attention %[[QR]], %[[KR]], %arg2 {scale = 5.000000e-01 : f64}
// CHECK-NEXT:  return %[[O]]
func.func @rope_then_attention(%q: tensor<1x2x1x4xf32>, %k: tensor<1x2x8x4xf32>, %v: tensor<1x2x8x4xf32>,
                               %cos: tensor<4xf32>, %sin: tensor<4xf32>) -> tensor<1x2x1x4xf32> {
  %qa = poot.mul %q, %cos : (tensor<1x2x1x4xf32>, tensor<4xf32>) -> tensor<1x2x1x4xf32>
  %q1 = poot.slice %q [0, 0, 0, 0] to [1, 2, 1, 2] step [1, 1, 1, 1] : tensor<1x2x1x4xf32> -> tensor<1x2x1x2xf32>
  %q2 = poot.slice %q [0, 0, 0, 2] to [1, 2, 1, 4] step [1, 1, 1, 1] : tensor<1x2x1x4xf32> -> tensor<1x2x1x2xf32>
  %qn = poot.neg %q2 : tensor<1x2x1x2xf32>
  %qc = poot.concat %qn, %q1 axis = 3 : (tensor<1x2x1x2xf32>, tensor<1x2x1x2xf32>) -> tensor<1x2x1x4xf32>
  %qb = poot.mul %qc, %sin : (tensor<1x2x1x4xf32>, tensor<4xf32>) -> tensor<1x2x1x4xf32>
  %qr = poot.add %qa, %qb : (tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>) -> tensor<1x2x1x4xf32>
  %ka = poot.mul %k, %cos : (tensor<1x2x8x4xf32>, tensor<4xf32>) -> tensor<1x2x8x4xf32>
  %k1 = poot.slice %k [0, 0, 0, 0] to [1, 2, 8, 2] step [1, 1, 1, 1] : tensor<1x2x8x4xf32> -> tensor<1x2x8x2xf32>
  %k2 = poot.slice %k [0, 0, 0, 2] to [1, 2, 8, 4] step [1, 1, 1, 1] : tensor<1x2x8x4xf32> -> tensor<1x2x8x2xf32>
  %kn = poot.neg %k2 : tensor<1x2x8x2xf32>
  %kc = poot.concat %kn, %k1 axis = 3 : (tensor<1x2x8x2xf32>, tensor<1x2x8x2xf32>) -> tensor<1x2x8x4xf32>
  %kb = poot.mul %kc, %sin : (tensor<1x2x8x4xf32>, tensor<4xf32>) -> tensor<1x2x8x4xf32>
  %kr = poot.add %ka, %kb : (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  %kt = poot.transpose %kr perm = [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  %s = poot.matmul %qr, %kt : (tensor<1x2x1x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x1x8xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %m = poot.reduce max %s1 axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %xs = poot.sub %s1, %m : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %ex = poot.exp %xs : tensor<1x2x1x8xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x1x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x1x4xf32>
  return %out : tensor<1x2x1x4xf32>
}

// -----

// A declined chain keeps its (canonical) primitive form, and says why.
// CHECK-LABEL: func.func @declined
// CHECK-NOT:   poot.attention
// CHECK:       poot.exp
func.func @declined(%q: tensor<1x2x1x4xf16>, %k: tensor<1x2x8x4xf16>, %v: tensor<1x2x8x4xf16>) -> tensor<1x2x1x4xf16> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x8x4xf16> -> tensor<1x2x4x8xf16>
  %s = poot.matmul %q, %kt : (tensor<1x2x1x4xf16>, tensor<1x2x4x8xf16>) -> tensor<1x2x1x8xf16>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x2x1x8xf16> -> tensor<1x2x1x1xf16>
  %xs = poot.sub %s, %m : (tensor<1x2x1x8xf16>, tensor<1x2x1x1xf16>) -> tensor<1x2x1x8xf16>
  // expected-remark @+1 {{attention not fused: element type f16 is not f32}}
  %ex = poot.exp %xs : tensor<1x2x1x8xf16>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x1x8xf16> -> tensor<1x2x1x1xf16>
  %p = poot.div %ex, %den : (tensor<1x2x1x8xf16>, tensor<1x2x1x1xf16>) -> tensor<1x2x1x8xf16>
  %out = poot.matmul %p, %v : (tensor<1x2x1x8xf16>, tensor<1x2x8x4xf16>) -> tensor<1x2x1x4xf16>
  return %out : tensor<1x2x1x4xf16>
}
