// RUN: poot-opt %s --pass-pipeline='builtin.module(spirv.module(poot-spirv-ordered-compares))' | FileCheck %s

// Every unordered float comparison becomes the ordered one or a NaN test of
// either operand (naga writes comparisons back ordered); ordered ones stay.
// CHECK-LABEL: spirv.func @compares
// CHECK-SAME: (%[[A:.*]]: f32, %[[B:.*]]: f32
// CHECK: %[[NE:.*]] = spirv.FOrdNotEqual %[[A]], %[[B]] : f32
// CHECK: %[[NA:.*]] = spirv.IsNan %[[A]] : f32
// CHECK: %[[NB:.*]] = spirv.IsNan %[[B]] : f32
// CHECK: %[[EITHER:.*]] = spirv.LogicalOr %[[NA]], %[[NB]] : i1
// CHECK: %[[LIVE:.*]] = spirv.LogicalOr %[[NE]], %[[EITHER]] : i1
// CHECK: spirv.FOrdLessThan %[[A]], %[[B]] : f32
// CHECK: spirv.LogicalOr
// CHECK: spirv.FOrdGreaterThanEqual %[[A]], %[[B]] : f32
// CHECK-NOT: FUnord
// CHECK: spirv.Select %[[LIVE]]
spirv.module Logical GLSL450 requires #spirv.vce<v1.0, [Shader], []> {
  spirv.func @compares(%a: f32, %b: f32) -> f32 "None" {
    %ne = spirv.FUnordNotEqual %a, %b : f32
    %lt = spirv.FUnordLessThan %a, %b : f32
    %ge = spirv.FOrdGreaterThanEqual %a, %b : f32
    %both = spirv.LogicalAnd %lt, %ge : i1
    %x = spirv.Select %ne, %a, %b : i1, f32
    %y = spirv.Select %both, %x, %b : i1, f32
    spirv.ReturnValue %y : f32
  }
}
