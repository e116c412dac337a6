//===- DeviceTarget.h - targets attention is planned for --------*- C++ -*-===//
//
// The `target` option of poot-plan-attention and
// poot-generate-attention-kernels, as an enum the option parser checks (an
// unknown name is a parse diagnostic listing the valid ones, and --help lists
// them), instead of a string each pass compares.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_LIB_TRANSFORMS_DEVICETARGET_H
#define POOT_LIB_TRANSFORMS_DEVICETARGET_H

namespace mlir::poot {

enum class DeviceTarget { CPU, SPIRV, NVVM, ROCDL };

} // namespace mlir::poot

#endif // POOT_LIB_TRANSFORMS_DEVICETARGET_H
