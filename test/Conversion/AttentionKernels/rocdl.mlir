// RUN: poot-opt %s --poot-to-rocdl="workgroup-memory=65536 compute-units=304" | FileCheck %s

// ROCDL: the kernel is in the LLVM dialect with AMDGPU intrinsics, its lane
// state in LDS (address space 3), ready for LLVM IR translation.
// CHECK: gpu.module @poot_attention_0 [#rocdl.target<O = 3, chip = "gfx942">]
// CHECK: llvm.mlir.global internal @__wg_stream_0() {addr_space = 3 : i32} : !llvm.array<1152 x f32>
// CHECK: llvm.func @stream(%{{.*}}: !llvm.ptr
// CHECK-SAME: rocdl.kernel, rocdl.reqd_work_group_size = array<i32: 64, 1, 1>
// CHECK: rocdl.workgroup.id.x
// CHECK: rocdl.workitem.id.x
// CHECK: rocdl.barrier
func.func @step(%q: tensor<2x4x6x16xf32>, %k: tensor<2x2x6x16xf32>, %v: tensor<2x2x6x16xf32>) -> tensor<2x4x6x16xf32> {
  %o = poot.attention %q, %k, %v {scale = 0.25 : f64} : tensor<2x4x6x16xf32>, tensor<2x2x6x16xf32>, tensor<2x2x6x16xf32> -> tensor<2x4x6x16xf32>
  return %o : tensor<2x4x6x16xf32>
}
