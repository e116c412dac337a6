// RUN: poot-opt %s --poot-plan-attention="target=cpu workgroup-memory=49152 compute-units=2 vector-width=16" --poot-attention-to-loops | FileCheck %s
// RUN: poot-opt %s --poot-plan-attention="target=cpu compute-units=4 vector-width=16 workgroup-memory=65536" --poot-attention-to-loops | FileCheck %s --check-prefix=SPLIT
// RUN: poot-opt %s --poot-plan-attention="target=cpu workgroup-memory=1048576" --poot-attention-to-loops | FileCheck %s --check-prefix=SEED

// The CPU schedule: a parallel loop over one chunk per core, its row state
// on the stack, a loop over the chunk's work items; scores as vector FMAs
// whose 16 dot vectors are summed across lanes together by a shuffle tree,
// the block's softmax as a vector exp, and the PV update as vector FMAs.
// CHECK-LABEL: func.func @decode
// CHECK: scf.parallel ({{.*}}) = ({{.*}}) to (%c2) step
// CHECK: memref.alloca() : memref<64xf32>
// CHECK: scf.for
// CHECK: vector.fma {{.*}} : vector<16xf32>
// CHECK: vector.shuffle {{.*}} [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23]
// CHECK: math.exp {{.*}} : vector<16xf32>
// CHECK: vector.fma {{.*}} : vector<16xf32>
// CHECK-NOT: poot.attention
// Split: partials, then a parallel combine over the rows.
// SPLIT-LABEL: func.func @decode
// SPLIT: scf.parallel
// SPLIT: scf.parallel
// SPLIT: arith.divf {{.*}} : vector<16xf32>
// The GPU schedules as loops (vector-width 0): no vectors, no parallel loop.
// SEED-LABEL: func.func @decode
// SEED-NOT: scf.parallel
// SEED-NOT: vector.
// SEED: scf.for
func.func @decode(%q: tensor<1x4x1x32xf32>, %k: tensor<1x2x1024x32xf32>, %v: tensor<1x2x1024x32xf32>) -> tensor<1x4x1x32xf32> {
  %o = poot.attention %q, %k, %v {scale = 0.177 : f64} : tensor<1x4x1x32xf32>, tensor<1x2x1024x32xf32>, tensor<1x2x1024x32xf32> -> tensor<1x4x1x32xf32>
  return %o : tensor<1x4x1x32xf32>
}
