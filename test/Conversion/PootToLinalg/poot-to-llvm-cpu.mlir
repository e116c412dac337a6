// RUN: poot-opt %s --poot-to-llvm-cpu="entry=step" | FileCheck %s

// The whole CPU pipeline on a decode step (KV write at a clamped position,
// causal mask, softmax, bool and f16 values): only the LLVM dialect is
// left; the state is written in place (its result leaves the ABI, the
// module records it as argument 0); every other result is a caller-owned
// out-parameter and the temporaries live in one arena argument (its size
// recorded: poot-cpu-plan-arena), so the C interface takes one descriptor
// pointer per argument, then per remaining result, then the arena
// (5 + 3 + 1); nothing is allocated inside the step (no malloc/free), and
// the only external calls are libm (llc turns llvm.intr.exp into expf).

// CHECK: module attributes {poot.arena_bytes = {step = {{[0-9]+}} : i64}, poot.result_aliases = {step = array<i64: 0, -1, -1, -1>}}
// CHECK-NOT: poot.
// CHECK-NOT: memref.
// CHECK-NOT: linalg.
// CHECK-NOT: memrefCopy
// CHECK-NOT: @malloc
// CHECK-NOT: @free
// Its elementwise chains are fused (poot-fuse-elementwise-chains), which
// leaves too few loop nests to outline (poot-cpu-outline-loops): one @step.
// CHECK-NOT: llvm.func @step_loop
// CHECK: llvm.func @step(
// CHECK: llvm.intr.exp(%{{.*}}) : (f32) -> f32
// CHECK: llvm.func @_mlir_ciface_step(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr) attributes {llvm.emit_c_interface{{.*}}} {
// CHECK-NOT: llvm.return %
// CHECK: llvm.return
func.func @step(%k: tensor<1x2x8x4xf32> {poot.name = "k", poot.slot = #poot.slot<state "k">},
                %knew: tensor<1x2x1x4xf32> {poot.name = "knew"},
                %pos: tensor<i32> {poot.name = "pos", poot.slot = #poot.slot<pos>, poot.range = #poot.range<0, 7>},
                %q: tensor<1x2x1x4xf32> {poot.name = "q"},
                %h: tensor<4xf16> {poot.name = "h"})
    -> (tensor<1x2x8x4xf32> {poot.name = "k", poot.slot = #poot.slot<state "k">},
        tensor<1x2x1x4xf32> {poot.name = "out"},
        tensor<1x1x1x8xi1> {poot.name = "future"},
        tensor<4xf16> {poot.name = "h2"}) {
  %k1 = poot.dynamic_update_slice %k, %knew, %pos axis = 2 : tensor<1x2x8x4xf32>, tensor<1x2x1x4xf32>, tensor<i32>
  %kt = poot.transpose %k1 perm = [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x1x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x1x8xf32>
  %iota = poot.iota dim = 3 : tensor<1x1x1x8xi32>
  %future = poot.compare gt, %iota, %pos : (tensor<1x1x1x8xi32>, tensor<i32>) -> tensor<1x1x1x8xi1>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %s1 = poot.select %future, %ninf, %s : (tensor<1x1x1x8xi1>, tensor<f32>, tensor<1x2x1x8xf32>) -> tensor<1x2x1x8xf32>
  %m = poot.reduce max %s1 axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %xs = poot.sub %s1, %m : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %ex = poot.exp %xs : tensor<1x2x1x8xf32>
  %sum = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %p = poot.div %ex, %sum : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %out = poot.matmul %p, %k1 : (tensor<1x2x1x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x1x4xf32>
  %h2 = poot.mul %h, %h : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  return %k1, %out, %future, %h2 : tensor<1x2x8x4xf32>, tensor<1x2x1x4xf32>, tensor<1x1x1x8xi1>, tensor<4xf16>
}
