// RUN: poot-opt %s --poot-to-spirv="compute-units=64" | FileCheck %s

// The split-KV decode lowers to two SPIR-V entry points with 64 invocations,
// lane state in Workgroup storage, and one barrier in the partials kernel.
// CHECK: spirv.module @__spv__poot_attention_0
// CHECK: spirv.GlobalVariable @__workgroup_mem__{{.*}} : !spirv.ptr<!spirv.struct<(!spirv.array<1152 x f32>)>, Workgroup>
// CHECK: spirv.func @partials
// CHECK: spirv.GL.Exp
// CHECK: spirv.ControlBarrier <Workgroup>, <Workgroup>, <AcquireRelease|WorkgroupMemory>
// CHECK: spirv.func @combine
// CHECK-NOT: spirv.ControlBarrier
// CHECK: spirv.EntryPoint "GLCompute" @partials
// CHECK-NEXT: spirv.ExecutionMode @partials "LocalSize", 64, 1, 1
// CHECK-NEXT: spirv.EntryPoint "GLCompute" @combine
// CHECK-NEXT: spirv.ExecutionMode @combine "LocalSize", 64, 1, 1
func.func @step(%q: tensor<1x4x1x16xf32>, %k: tensor<1x2x1024x16xf32>, %v: tensor<1x2x1024x16xf32>) -> tensor<1x4x1x16xf32> {
  %o = poot.attention %q, %k, %v {scale = 0.25 : f64} : tensor<1x4x1x16xf32>, tensor<1x2x1024x16xf32>, tensor<1x2x1024x16xf32> -> tensor<1x4x1x16xf32>
  return %o : tensor<1x4x1x16xf32>
}
