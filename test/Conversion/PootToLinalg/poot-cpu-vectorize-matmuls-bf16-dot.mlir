// RUN: poot-opt %s --pass-pipeline="builtin.module(func.func(poot-cpu-vectorize-matmuls{vector-width=16 min-parallel-work=100000 compute-units=2 bf16-dot=1}))" | FileCheck %s
// RUN: poot-opt %s --pass-pipeline="builtin.module(func.func(poot-cpu-vectorize-matmuls{vector-width=16 min-parallel-work=100000 compute-units=2}))" | FileCheck %s --check-prefix=WIDEN
// RUN: poot-opt %s --poot-to-llvm-cpu="vector-width=16 bf16-dot=1" | FileCheck %s --check-prefix=LLVM

// A host with AVX512-BF16 (`bf16-dot`): a bf16 x bf16 [N, K] linear layer
// reads 32 elements of K a step as they are and adds each pair's exact
// product to an f32 lane by x86vector.avx512.dot (vdpbf16ps); K = 100
// leaves a 4-element scalar tail, widened. Without the option the same tile
// widens 16 elements a step for f32 FMAs. Through the CPU pipeline the dot is
// the LLVM intrinsic on the bf16 bits (the rest of bf16 carried as i16).
// CHECK-LABEL: func.func @linear_bf16
// CHECK: vector.load {{.*}} : memref<4x100xbf16>, vector<32xbf16>
// CHECK: vector.load {{.*}} : memref<64x100xbf16>, vector<32xbf16>
// CHECK: x86vector.avx512.dot {{.*}} : vector<32xbf16> -> vector<16xf32>
// CHECK-NOT: vector.fma
// CHECK: vector.reduction <add>
// CHECK: memref.load {{.*}} : memref<64x100xbf16>
// CHECK: arith.extf
// CHECK: math.fma
// WIDEN-LABEL: func.func @linear_bf16
// WIDEN-NOT: x86vector
// WIDEN: arith.extf {{.*}} : vector<16xbf16> to vector<16xf32>
// WIDEN: vector.fma
// LLVM: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"
func.func @linear_bf16(%x: memref<4x100xbf16>, %w: memref<64x100xbf16>, %y: memref<4x64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<4x100xbf16>, memref<64x100xbf16>) outs(%y : memref<4x64xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %ea = arith.extf %a : bf16 to f32
    %eb = arith.extf %b : bf16 to f32
    %p = arith.mulf %ea, %eb : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// f32 operands keep the FMA tiles with the option on.
// CHECK-LABEL: func.func @linear_f32
// CHECK-NOT: x86vector
// CHECK: vector.fma
func.func @linear_f32(%x: memref<4x64xf32>, %w: memref<64x64xf32>, %y: memref<4x64xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : memref<4x64xf32>, memref<64x64xf32>) outs(%y : memref<4x64xf32>)
  return
}
