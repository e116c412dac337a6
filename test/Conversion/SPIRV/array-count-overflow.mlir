// RUN: not poot-opt %s -o /dev/null 2>&1 | FileCheck %s

// A SPIR-V array of 2^32 elements: MLIR 22's SPIR-V type parser truncates
// the count to 32 bits (0) and aborts; poot-opt refuses the input first
// (found by the issue-28 fuzz campaign).
// CHECK: error: {{.*}}array-count-overflow.mlir:8: '!spirv.array' with 4294967296 elements
spirv.module Logical GLSL450 requires #spirv.vce<v1.0, [Shader], []> {
  spirv.GlobalVariable @out : !spirv.ptr<!spirv.struct<(!spirv.array<4294967296 x f32, stride=4> [0])>, StorageBuffer>
}
