// RUN: poot-opt %s --split-input-file --pass-pipeline='builtin.module(spirv.module(poot-spirv-build-nonfinite))' | FileCheck %s

// -inf, +inf and NaN (scalars and vectors) become integer bits and a
// bitcast; finite constants stay literals.
// CHECK-LABEL: spirv.func @consts
// CHECK-DAG: %[[NINF:.*]] = spirv.Constant -8388608 : i32
// CHECK-DAG: spirv.Bitcast %[[NINF]] : i32 to f32
// CHECK-DAG: %[[VEC:.*]] = spirv.Constant dense<[2139095040, 1065353216]> : vector<2xi32>
// CHECK-DAG: spirv.Bitcast %[[VEC]] : vector<2xi32> to vector<2xf32>
// CHECK-DAG: %[[NAN:.*]] = spirv.Constant 9221120237041090560 : i64
// CHECK-DAG: spirv.Bitcast %[[NAN]] : i64 to f64
// CHECK-DAG: spirv.Constant 1.500000e+00 : f32
// CHECK-NOT: 0xFF800000
spirv.module Logical GLSL450 requires #spirv.vce<v1.0, [Shader, Float64], []> {
  spirv.GlobalVariable @out : !spirv.ptr<!spirv.struct<(!spirv.array<4 x f32, stride=4> [0])>, StorageBuffer>
  spirv.func @consts() -> f32 "None" {
    %ninf = spirv.Constant 0xFF800000 : f32
    %vec = spirv.Constant dense<[0x7F800000, 1.0]> : vector<2xf32>
    %nan = spirv.Constant 0x7FF8000000000000 : f64
    %one = spirv.Constant 1.5 : f32
    %x = spirv.CompositeExtract %vec[0 : i32] : vector<2xf32>
    %a = spirv.FAdd %ninf, %x : f32
    %b = spirv.FConvert %nan : f64 to f32
    %c = spirv.FAdd %a, %b : f32
    %d = spirv.FAdd %c, %one : f32
    spirv.ReturnValue %d : f32
  }
}

// -----

// f16: no 16-bit integer constant (naga has none) -- the f32 value's bits,
// a bitcast to f32, then an FConvert to f16; scalars and vectors.
// CHECK-LABEL: spirv.func @halves
// CHECK-DAG: %[[NINF:.*]] = spirv.Constant -8388608 : i32
// CHECK-DAG: %[[F:.*]] = spirv.Bitcast %[[NINF]] : i32 to f32
// CHECK-DAG: spirv.FConvert %[[F]] : f32 to f16
// CHECK-DAG: %[[VEC:.*]] = spirv.Constant dense<[2143289344, 1065353216]> : vector<2xi32>
// CHECK-DAG: %[[VF:.*]] = spirv.Bitcast %[[VEC]] : vector<2xi32> to vector<2xf32>
// CHECK-DAG: spirv.FConvert %[[VF]] : vector<2xf32> to vector<2xf16>
// CHECK-NOT: : i16
spirv.module Logical GLSL450 requires #spirv.vce<v1.0, [Shader, Float16], []> {
  spirv.func @halves() -> f16 "None" {
    %ninf = spirv.Constant 0xFC00 : f16
    %vec = spirv.Constant dense<[0x7E00, 1.0]> : vector<2xf16>
    %x = spirv.CompositeExtract %vec[0 : i32] : vector<2xf16>
    %a = spirv.FAdd %ninf, %x : f16
    spirv.ReturnValue %a : f16
  }
}
