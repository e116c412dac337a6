// poot-opt %s --pass-pipeline='builtin.module(poot-cpu-entry-abi,poot-gpu-serialize-program,poot-cpu-approximate-vector-math)'    (signal: Assertion `hasStaticShape() && "cannot get element count of dynamic shaped type"' @ ::bytesOf)
func.func @step(%x: memref<?xf32>) {
  return
}
