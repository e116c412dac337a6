// RUN: poot-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(poot-gpu-check-step-types{max-buffer-bytes=1073741824 max-elements=2147483647})'
// RUN: not poot-opt %s --split-input-file --poot-step-to-spirv 2>&1 | FileCheck %s --check-prefix=SPIRV
// RUN: not poot-opt %s --split-input-file --poot-step-to-nvvm 2>&1 | FileCheck %s --check-prefix=NVVM
// RUN: not poot-opt %s --split-input-file --poot-step-to-rocdl 2>&1 | FileCheck %s --check-prefix=NVVM

// Fuzz signatures 247342d1fc, 88dd2bf397 and 5b5300d269 (issue 28): an
// index or complex element, a dynamic shape, and a 2^32-element buffer
// aborted poot-gpu-serialize-program / convert-gpu-to-spirv in every
// whole-step pipeline. Each is now a diagnostic of the first pass.

// SPIRV: DtypeLowering: the step argument #0 has element type 'index'
// NVVM: DtypeLowering: the step argument #0 has element type 'index'
// expected-error @+1 {{DtypeLowering: the step argument #0 has element type 'index'}}
func.func @step(%k: tensor<4xindex>) {
  return
}

// -----

// SPIRV: DtypeLowering: the step argument #0 has element type 'complex<f32>'
// expected-error @+1 {{DtypeLowering: the step argument #0 has element type 'complex<f32>'}}
func.func @step(%k: tensor<4xcomplex<f32>>) {
  return
}

// -----

// SPIRV: the step argument #0 is a dynamically shaped 'tensor<?xf32>'
// NVVM: the step argument #0 is a dynamically shaped 'tensor<?xf32>'
// expected-error @+1 {{the step argument #0 is a dynamically shaped 'tensor<?xf32>'}}
func.func @step(%x: tensor<?xf32>) {
  return
}

// -----

// SPIRV: the step argument #0 is a dynamically shaped 'memref<?xf32>'
// expected-error @+1 {{the step argument #0 is a dynamically shaped 'memref<?xf32>'}}
func.func @step(%x: memref<?xf32>) {
  return
}

// -----

// 2^32 elements: past what SPIR-V counts (and past these 1 GiB buffers);
// on NVVM/ROCDL the pipeline's default 128 MiB buffers refuse it too.
// SPIRV: BufferBytes: the step argument #0 ('tensor<65536x65536xf32>') holds 4294967296 elements (17179869184 bytes)
// NVVM: BufferBytes: the step argument #0 ('tensor<65536x65536xf32>') holds 4294967296 elements
// expected-error @+1 {{BufferBytes: the step argument #0 ('tensor<65536x65536xf32>') holds 4294967296 elements (17179869184 bytes); one device buffer holds at most 1073741824 bytes and 2147483647 elements}}
func.func @step(%x: tensor<65536x65536xf32>) -> tensor<65536x65536xf32> {
  %0 = poot.exp %x : tensor<65536x65536xf32>
  return %0 : tensor<65536x65536xf32>
}

// -----

// An intermediate no buffer holds, though every argument and result fits:
// refused at the op that makes it.
func.func @step(%a: tensor<65536x2xf32>, %b: tensor<2x65536xf32>) -> tensor<1x65536xf32> {
  // expected-error @+1 {{BufferBytes: result #0 of 'poot.matmul'}}
  %0 = poot.matmul %a, %b : (tensor<65536x2xf32>, tensor<2x65536xf32>) -> tensor<65536x65536xf32>
  %1 = poot.slice %0 [0, 0] to [1, 65536] step [1, 1] : tensor<65536x65536xf32> -> tensor<1x65536xf32>
  return %1 : tensor<1x65536xf32>
}
