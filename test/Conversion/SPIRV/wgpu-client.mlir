// RUN: poot-opt %s --poot-step-to-spirv | FileCheck %s --check-prefix=VULKAN
// RUN: poot-opt %s --poot-step-to-spirv="client=wgpu" | FileCheck %s --check-prefix=WGPU

// A whole step that stores a bool and divides signed integers. For Vulkan
// the bool is a byte (8-bit storage); for wgpu (naga has no 8-bit types)
// the bytes live in 32-bit words, stored with atomic and/or, and the
// division reads signed operands.
// VULKAN: spirv.module @__spv__step_kernel{{.*}}StorageBuffer8BitAccess
// VULKAN: spirv.SDiv %{{.*}} : i32
// WGPU-NOT: StorageBuffer8BitAccess
// WGPU-NOT: Int8
// WGPU: spirv.AtomicAnd
// WGPU: spirv.AtomicOr
// WGPU: spirv.SDiv %{{.*}} : si32
func.func @step(%a: tensor<4xi32>, %b: tensor<4xi32>) -> (tensor<4xi1>, tensor<4xi32>) {
  %lt = poot.compare lt, %a, %b : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  %q = poot.div %a, %b : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %lt, %q : tensor<4xi1>, tensor<4xi32>
}
