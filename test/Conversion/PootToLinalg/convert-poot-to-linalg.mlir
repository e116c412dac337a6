// RUN: poot-opt %s --convert-poot-to-linalg --split-input-file | FileCheck %s

// Elementwise with numpy broadcasting: a size-1 operand dimension reads
// index 0, a missing leading dimension is not indexed at all.

// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1, d2) -> (d0, 0, d2)>
// CHECK-DAG: #[[SCALAR:.*]] = affine_map<(d0, d1, d2) -> ()>
// CHECK-LABEL: func.func @broadcast_add
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME: ins(%{{.*}}, %{{.*}} : tensor<2x3x4xf32>, tensor<2x1x4xf32>)
// CHECK: arith.addf
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[SCALAR]], #[[ID]]]
// CHECK: arith.mulf
func.func @broadcast_add(%a: tensor<2x3x4xf32>, %b: tensor<2x1x4xf32>, %s: tensor<f32>) -> tensor<2x3x4xf32> {
  %0 = poot.add %a, %b : (tensor<2x3x4xf32>, tensor<2x1x4xf32>) -> tensor<2x3x4xf32>
  %1 = poot.mul %0, %s : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32>
  return %1 : tensor<2x3x4xf32>
}

// -----

// i32 floor division: the divisor is made safe before dividing (x / 0 = 0,
// x / -1 = -x without the INT_MIN / -1 trap).

// CHECK-LABEL: func.func @int_div
// CHECK: ^bb0(%[[L:.*]]: i32, %[[R:.*]]: i32, %{{.*}}: i32):
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK: %[[ISZERO:.*]] = arith.cmpi eq, %[[R]], %[[ZERO]]
// CHECK: %[[SAFE:.*]] = arith.select %{{.*}}, %[[ONE]], %[[R]]
// CHECK: %[[Q:.*]] = arith.floordivsi %[[L]], %[[SAFE]]
// CHECK: arith.select %[[ISZERO]], %[[ZERO]], %{{.*}}
func.func @int_div(%a: tensor<8xi32>, %b: tensor<8xi32>) -> tensor<8xi32> {
  %0 = poot.div %a, %b : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
  return %0 : tensor<8xi32>
}

// -----

// Float max/min propagate NaN; i1 max is `or`. Bool tensors are stored as
// bytes (0/1, numpy's layout), function signatures included: a stored byte
// reads as `!= 0`, a result bool is zero-extended.

// CHECK-LABEL: func.func @max_min
// CHECK-SAME: %{{.*}}: tensor<4xi8>, %{{.*}}: tensor<4xi8>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xi8>)
// CHECK: arith.maximumf
// CHECK: arith.minimumf
// CHECK: ^bb0(%[[P:.*]]: i8, %[[Q:.*]]: i8, %{{.*}}: i8):
// CHECK: %[[PB:.*]] = arith.cmpi ne, %[[P]], %{{.*}} : i8
// CHECK: %[[QB:.*]] = arith.cmpi ne, %[[Q]], %{{.*}} : i8
// CHECK: %[[OR:.*]] = arith.ori %[[PB]], %[[QB]] : i1
// CHECK: arith.extui %[[OR]] : i1 to i8
func.func @max_min(%a: tensor<4xf32>, %b: tensor<4xf32>, %p: tensor<4xi1>, %q: tensor<4xi1>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xi1>) {
  %0 = poot.max %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = poot.min %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = poot.max %p, %q : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xi1>
}

// -----

// Unary math, logistic as 1 / (1 + e^-x), and converts with their rounding.

// CHECK-LABEL: func.func @unary_convert
// CHECK: math.tanh
// CHECK: arith.negf
// CHECK-NEXT: math.exp
// CHECK-NEXT: arith.addf
// CHECK-NEXT: arith.divf
// CHECK: math.rsqrt
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK-NEXT: arith.truncf %{{.*}} : f32 to bf16
// CHECK: arith.fptosi %{{.*}} : f32 to i32
// CHECK: arith.cmpf une
// CHECK: arith.extui %{{.*}} : i1 to i8
// CHECK: arith.cmpi ne, %{{.*}} : i8
// CHECK-NEXT: arith.uitofp %{{.*}} : i1 to f32
func.func @unary_convert(%x: tensor<4xf32>, %h: tensor<4xf16>, %p: tensor<4xi1>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<4xbf16>, tensor<4xi32>, tensor<4xi1>, tensor<4xf32>) {
  %0 = poot.tanh %x : tensor<4xf32>
  %1 = poot.logistic %x : tensor<4xf32>
  %2 = poot.rsqrt %x : tensor<4xf32>
  %3 = poot.convert %x : tensor<4xf32> -> tensor<4xbf16>
  %4 = poot.convert %h : tensor<4xf16> -> tensor<4xbf16>
  %5 = poot.convert %x : tensor<4xf32> -> tensor<4xi32>
  %6 = poot.convert %x : tensor<4xf32> -> tensor<4xi1>
  %7 = poot.convert %p : tensor<4xi1> -> tensor<4xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<4xbf16>, tensor<4xi32>, tensor<4xi1>, tensor<4xf32>
}

// -----

// The causal mask: iota through linalg.index, compare and select.

// CHECK-LABEL: func.func @mask
// CHECK: linalg.generic
// CHECK: %[[I:.*]] = linalg.index 1 : index
// CHECK: arith.index_cast %[[I]] : index to i32
// CHECK: arith.cmpi sgt
// CHECK: arith.extui %{{.*}} : i1 to i8
// CHECK: arith.cmpi ne, %{{.*}} : i8
// CHECK: arith.select
func.func @mask(%pos: tensor<i32>) -> tensor<1x8xf32> {
  %iota = poot.iota dim = 1 : tensor<1x8xi32>
  %future = poot.compare gt, %iota, %pos : (tensor<1x8xi32>, tensor<i32>) -> tensor<1x8xi1>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %zero = poot.constant dense<0.0> : tensor<f32>
  %mask = poot.select %future, %ninf, %zero : (tensor<1x8xi1>, tensor<f32>, tensor<f32>) -> tensor<1x8xf32>
  return %mask : tensor<1x8xf32>
}

// -----

// Reductions: keepdim keeps a constant-0 index, the identity fills the init.

// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[KEEP:.*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-DAG: #[[DROP:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @reduce
// CHECK: %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[NINF]] : f32)
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[KEEP]]], iterator_types = ["parallel", "reduction"]}
// CHECK: arith.maximumf
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[DROP]]], iterator_types = ["reduction", "parallel"]}
// CHECK: arith.addf
func.func @reduce(%x: tensor<4x16xf32>) -> (tensor<4x1xf32>, tensor<16xf32>) {
  %m = poot.reduce max %x axis = 1 keepdim : tensor<4x16xf32> -> tensor<4x1xf32>
  %s = poot.reduce sum %x axis = 0 : tensor<4x16xf32> -> tensor<16xf32>
  return %m, %s : tensor<4x1xf32>, tensor<16xf32>
}

// -----

// Batched matmul: batch dims broadcast, k is the one reduction.

// CHECK-DAG: #[[LHS:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
// CHECK-DAG: #[[RHS:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (0, d1, d4, d3)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @matmul
// CHECK: linalg.generic {indexing_maps = [#[[LHS]], #[[RHS]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @matmul(%a: tensor<2x4x3x8xf32>, %b: tensor<1x4x8x5xf32>) -> tensor<2x4x3x5xf32> {
  %0 = poot.matmul %a, %b : (tensor<2x4x3x8xf32>, tensor<1x4x8x5xf32>) -> tensor<2x4x3x5xf32>
  return %0 : tensor<2x4x3x5xf32>
}

// -----

// Shapes: transpose, reshape through a flat collapse/expand, strided slice,
// concat by insert_slice.

// CHECK-LABEL: func.func @shapes
// CHECK: linalg.transpose ins(%{{.*}} : tensor<2x3x4xf32>) outs(%{{.*}} : tensor<4x2x3xf32>) permutation = [2, 0, 1]
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1, 2]] : tensor<4x2x3xf32> into tensor<24xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape [6, 4] : tensor<24xf32> into tensor<6x4xf32>
// CHECK: tensor.extract_slice %{{.*}}[1, 0] [2, 2] [2, 2] : tensor<6x4xf32> to tensor<2x2xf32>
// CHECK: %[[E:.*]] = tensor.empty() : tensor<2x6xf32>
// CHECK: %[[C0:.*]] = tensor.insert_slice %{{.*}} into %[[E]][0, 0] [2, 2] [1, 1]
// CHECK: tensor.insert_slice %{{.*}} into %[[C0]][0, 2] [2, 4] [1, 1]
func.func @shapes(%x: tensor<2x3x4xf32>, %y: tensor<2x4xf32>) -> tensor<2x6xf32> {
  %t = poot.transpose %x perm = [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %r = poot.reshape %t : tensor<4x2x3xf32> -> tensor<6x4xf32>
  %s = poot.slice %r [1, 0] to [5, 4] step [2, 2] : tensor<6x4xf32> -> tensor<2x2xf32>
  %c = poot.concat %s, %y axis = 1 : (tensor<2x2xf32>, tensor<2x4xf32>) -> tensor<2x6xf32>
  return %c : tensor<2x6xf32>
}

// -----

// dynamic_update_slice writes at clamp(start, 0, dim - n).

// CHECK-LABEL: func.func @dus
// CHECK: %[[START:.*]] = tensor.extract %{{.*}}[] : tensor<i32>
// CHECK: %[[LO:.*]] = arith.maxsi %[[START]], %{{.*}} : i32
// CHECK: %[[HI:.*]] = arith.minsi %[[LO]], %{{.*}} : i32
// CHECK: %[[OFF:.*]] = arith.index_cast %[[HI]] : i32 to index
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 0, %[[OFF]], 0] [1, 2, 2, 4] [1, 1, 1, 1] : tensor<1x2x2x4xf32> into tensor<1x2x16x4xf32>
func.func @dus(%k: tensor<1x2x16x4xf32>, %u: tensor<1x2x2x4xf32>, %pos: tensor<i32>) -> tensor<1x2x16x4xf32> {
  %0 = poot.dynamic_update_slice %k, %u, %pos axis = 2 : tensor<1x2x16x4xf32>, tensor<1x2x2x4xf32>, tensor<i32>
  return %0 : tensor<1x2x16x4xf32>
}

// -----

// gather reads with tensor.extract at the clipped index.

// CHECK-DAG: #[[IDX:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1)>
// CHECK-LABEL: func.func @gather
// CHECK: linalg.generic {indexing_maps = [#[[IDX]], #{{.*}}]
// CHECK-SAME: ins(%{{.*}} : tensor<1x6xi32>)
// CHECK: arith.maxsi
// CHECK: arith.minsi
// CHECK: %[[ROW:.*]] = arith.index_cast
// CHECK: tensor.extract %{{.*}}[%[[ROW]], %{{.*}}, %{{.*}}] : tensor<16x2x4xf32>
func.func @gather(%pool: tensor<16x2x4xf32>, %read: tensor<1x6xi32>) -> tensor<1x6x2x4xf32> {
  %0 = poot.gather %pool[%read] axis = 0 : (tensor<16x2x4xf32>, tensor<1x6xi32>) -> tensor<1x6x2x4xf32>
  return %0 : tensor<1x6x2x4xf32>
}

// -----

// scatter_update: one row per index, written only when 0 <= s < S.

// CHECK-LABEL: func.func @scatter
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (tensor<16x2x4xf32>)
// CHECK: %[[S:.*]] = tensor.extract %{{.*}}[%[[I]]] : tensor<3xi32>
// CHECK: arith.cmpi sge, %[[S]]
// CHECK: arith.cmpi slt, %[[S]]
// CHECK: scf.if
// CHECK: tensor.extract_slice %{{.*}}[%[[I]], 0, 0] [1, 2, 4] [1, 1, 1]
// CHECK: tensor.insert_slice %{{.*}} into %[[ACC]]
// CHECK: } else {
// CHECK: scf.yield %[[ACC]]
func.func @scatter(%pool: tensor<16x2x4xf32>, %write: tensor<3xi32>, %rows: tensor<3x2x4xf32>) -> tensor<16x2x4xf32> {
  %0 = poot.scatter_update %pool[%write], %rows : tensor<16x2x4xf32>, tensor<3xi32>, tensor<3x2x4xf32>
  return %0 : tensor<16x2x4xf32>
}

// -----

// top_k: k selection passes per row.

// CHECK-LABEL: func.func @top_k
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for
// CHECK: arith.cmpf ogt
// CHECK: tensor.insert %{{.*}} : tensor<2x3xf32>
// CHECK: tensor.insert %{{.*}} : tensor<2x3xi32>
func.func @top_k(%x: tensor<2x8xf32>) -> (tensor<2x3xf32>, tensor<2x3xi32>) {
  %v, %i = poot.top_k %x k = 3 : tensor<2x8xf32> -> tensor<2x3xf32>, tensor<2x3xi32>
  return %v, %i : tensor<2x3xf32>, tensor<2x3xi32>
}

// -----

// index_guard: the clamp and the all-reduction witness, in the operand's
// own width when both bounds fit it (no 64-bit arithmetic for a GPU)...

// CHECK-LABEL: func.func @guard
// CHECK-NOT: arith.extsi
// CHECK: arith.maxsi %{{.*}} : i32
// CHECK: arith.minsi %{{.*}} : i32
// CHECK: %[[TRUE:.*]] = arith.constant 1 : i8
// CHECK: linalg.fill ins(%[[TRUE]] : i8) outs(%{{.*}} : tensor<i8>)
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction"]
// CHECK: arith.andi
func.func @guard(%raw: tensor<2xi32>) -> (tensor<2xi32>, tensor<i1>) {
  %len, %ok = poot.index_guard %raw min = 1 max = 64 : tensor<2xi32>
  return %len, %ok : tensor<2xi32>, tensor<i1>
}

// -----

// ...and in i64 when a bound does not fit i32, so no bound wraps.

// CHECK-LABEL: func.func @guard_wide
// CHECK: arith.extsi
// CHECK: arith.maxsi %{{.*}} : i64
// CHECK: arith.minsi %{{.*}} : i64
// CHECK: arith.trunci
func.func @guard_wide(%raw: tensor<2xi32>) -> (tensor<2xi32>, tensor<i1>) {
  %len, %ok = poot.index_guard %raw min = -1 max = 4294967296 : tensor<2xi32>
  return %len, %ok : tensor<2xi32>, tensor<i1>
}

// -----

// The fused attention ops stay for their own lowering.

// CHECK-LABEL: func.func @fused_stays
// CHECK: poot.attention
func.func @fused_stays(%q: tensor<1x2x1x4xf32>, %k: tensor<1x2x8x4xf32>, %v: tensor<1x2x8x4xf32>) -> tensor<1x2x1x4xf32> {
  %0 = poot.attention %q, %k, %v {scale = 0.5 : f64} : tensor<1x2x1x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x1x4xf32>
  return %0 : tensor<1x2x1x4xf32>
}

// -----

// A validation witness becomes a stored byte; its marker (whose rule is
// "tensor<i1>") is dropped, the others stay.

// CHECK-LABEL: func.func @validation
// CHECK-SAME: (%{{.*}}: tensor<2xi32> {poot.name = "raw"}) -> (tensor<2xi32> {poot.name = "len"}, tensor<i8>)
func.func @validation(%raw: tensor<2xi32> {poot.name = "raw"})
    -> (tensor<2xi32> {poot.name = "len"}, tensor<i1> {poot.name = "ok", poot.slot = #poot.slot<validation>}) {
  %len, %ok = poot.index_guard %raw min = 1 max = 64 : tensor<2xi32>
  return %len, %ok : tensor<2xi32>, tensor<i1>
}

// -----

// A rotary embedding is one elementwise generic over the halves: x, cos
// and sin viewed as [..., 2, h], x read at its own element and at both
// halves of its position, the rotated element chosen by the half index.
// CHECK-LABEL: func.func @rope_one_generic
// CHECK: tensor.expand_shape %{{.*}} output_shape [2, 8, 2, 4]
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel", "parallel"]
// CHECK: linalg.index 2
// CHECK: arith.negf
// CHECK: arith.select
// CHECK: arith.mulf
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK-NOT: linalg.generic
// CHECK: tensor.collapse_shape
func.func @rope_one_generic(%x: tensor<2x8x8xbf16>, %cos: tensor<8x8xbf16>, %sin: tensor<8x8xbf16>) -> tensor<2x8x8xbf16> {
  %y = poot.rope %x, %cos, %sin : tensor<2x8x8xbf16>, tensor<8x8xbf16>, tensor<8x8xbf16> -> tensor<2x8x8xbf16>
  return %y : tensor<2x8x8xbf16>
}
