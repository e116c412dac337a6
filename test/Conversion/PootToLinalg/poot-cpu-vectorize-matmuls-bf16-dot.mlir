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

// A bf16 x bf16 [K, N] matmul with many rows (a prefill chunk: M > the
// 16 stream rows): pair tiles. Per 32-column strip and 100-row K band, the
// band's weight rows are interleaved in pairs once into a stack buffer
// (lane i: W[k, j+i], W[k+1, j+i]), then each 4-row tile (and the 2-row
// remainder) keeps its 4 x 2 (2 x 2) f32 output vectors in registers while
// every step broadcasts the pair x[i, k..k+1] and runs one vdpbf16ps per
// output vector. Without the option: the widened FMA tiles.
// CHECK-LABEL: func.func @kn_prefill_bf16
// CHECK: scf.parallel
// CHECK: memref.alloca_scope
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<50x2x32xbf16>
// CHECK: vector.shuffle {{.*}} [0, 16, 1, 17, {{.*}}, 15, 31] : vector<16xbf16>, vector<16xbf16>
// CHECK: vector.store {{.*}} : memref<50x2x32xbf16>, vector<32xbf16>
// CHECK: scf.for
// CHECK-COUNT-8: vector.load {{.*}} : memref<42x96xf32>, vector<16xf32>
// CHECK: scf.for
// CHECK: vector.load {{.*}} : memref<42x100xbf16>, vector<2xbf16>
// CHECK: vector.broadcast {{.*}} : i32 to vector<16xi32>
// CHECK-COUNT-8: x86vector.avx512.dot
// CHECK: scf.yield
// CHECK-COUNT-8: vector.store {{.*}} : memref<42x96xf32>, vector<16xf32>
// CHECK-COUNT-4: x86vector.avx512.dot
// WIDEN-LABEL: func.func @kn_prefill_bf16
// WIDEN-NOT: x86vector
// WIDEN: vector.contract
// LLVM-LABEL: llvm.func @kn_prefill_bf16
// LLVM: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"
func.func @kn_prefill_bf16(%x: memref<42x100xbf16>, %w: memref<100x96xbf16>, %y: memref<42x96xf32>) {
  linalg.matmul ins(%x, %w : memref<42x100xbf16>, memref<100x96xbf16>) outs(%y : memref<42x96xf32>)
  return
}
