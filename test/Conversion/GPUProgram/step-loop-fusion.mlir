// RUN: poot-opt %s --poot-step-to-nvvm="chip=sm_90" | FileCheck %s
// RUN: poot-opt %s --poot-step-to-spirv | FileCheck %s

// Adjacent kernels over the same iteration space are one launch in a whole
// step (upstream scf-parallel-loop-fusion before the loops are mapped): the
// two copies of a concat, which the decoder's RoPE and attention inputs
// spell many times a layer, write their halves from one kernel.
// CHECK: gpu.launch_func
// CHECK-NOT: gpu.launch_func
func.func @step(%x: tensor<16xf32> {poot.name = "x"}) -> (tensor<32xf32> {poot.name = "y"}) {
  %y = poot.concat %x, %x axis = 0 : (tensor<16xf32>, tensor<16xf32>) -> tensor<32xf32>
  return %y : tensor<32xf32>
}
