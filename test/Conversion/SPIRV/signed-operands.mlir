// RUN: poot-opt %s --pass-pipeline='builtin.module(spirv.module(poot-spirv-signed-operands))' | FileCheck %s

// Signed instructions read and make si32 (bitcasts of the same bits); an
// arithmetic shift keeps its amount unsigned; other instructions are left
// alone.
// CHECK-LABEL: spirv.func @signed
// CHECK: %[[A:.*]] = spirv.Bitcast %arg0 : i32 to si32
// CHECK: %[[B:.*]] = spirv.Bitcast %arg1 : i32 to si32
// CHECK: %[[Q:.*]] = spirv.SDiv %[[A]], %[[B]] : si32
// CHECK: %[[QU:.*]] = spirv.Bitcast %[[Q]] : si32 to i32
// CHECK: %[[AS:.*]] = spirv.Bitcast %[[QU]] : i32 to si32
// CHECK: %[[ABS:.*]] = spirv.GL.SAbs %[[AS]] : si32
// CHECK: %[[ABSU:.*]] = spirv.Bitcast %[[ABS]] : si32 to i32
// CHECK: %[[SH:.*]] = spirv.Bitcast %[[ABSU]] : i32 to si32
// CHECK: spirv.ShiftRightArithmetic %[[SH]], %arg1 : si32, i32
// CHECK: %[[F:.*]] = spirv.Bitcast %arg0 : i32 to si32
// CHECK: spirv.ConvertSToF %[[F]] : si32 to f32
// CHECK: %[[I:.*]] = spirv.ConvertFToS %{{.*}} : f32 to si32
// CHECK: spirv.Bitcast %[[I]] : si32 to i32
// CHECK: spirv.IAdd %{{.*}}, %{{.*}} : i32
spirv.module Logical GLSL450 requires #spirv.vce<v1.0, [Shader], []> {
  spirv.func @signed(%a: i32, %b: i32) -> i32 "None" {
    %q = spirv.SDiv %a, %b : i32
    %abs = spirv.GL.SAbs %q : i32
    %sh = spirv.ShiftRightArithmetic %abs, %b : i32, i32
    %f = spirv.ConvertSToF %a : i32 to f32
    %i = spirv.ConvertFToS %f : f32 to i32
    %s = spirv.IAdd %sh, %i : i32
    spirv.ReturnValue %s : i32
  }
}
