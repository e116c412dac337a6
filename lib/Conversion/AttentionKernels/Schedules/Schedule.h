//===- Schedule.h - an attention schedule, as the passes see it ---*- C++ -*-===//
//
// A schedule (streaming, split-KV, warp decode, tiled prefill and its
// tensor-core form, wide head and its tensor-core form, the CPU's tiled
// loops) is one `ScheduleInfo`, defined in its own file in this folder: the
// kernels it launches (name, arguments, workgroups, workgroup memory, body)
// and whether the CPU loops can express it. The registry (Registry.cpp)
// lists them; poot-generate-attention-kernels and poot-attention-to-loops
// look a request's schedule up there instead of testing the enum, so adding
// a schedule is its own file plus one registry line (docs/attention-schedules.md).
//
// The workgroup decomposition every GPU kernel shares (the linear workgroup
// id over the grid's (x, y) fold, the in-range guard, the workgroup buffer
// declared as the target lowers it) stays in GenerateKernels.cpp; the
// bodies are the parts library's (AttentionEmitter, WarpDecodeKernel,
// TiledPrefillKernel, TiledPrefillMmaKernel, WideHeadMmaKernel).
//
//===----------------------------------------------------------------------===//

#ifndef POOT_LIB_CONVERSION_ATTENTIONKERNELS_SCHEDULES_SCHEDULE_H
#define POOT_LIB_CONVERSION_ATTENTIONKERNELS_SCHEDULES_SCHEDULE_H

#include "lib/Conversion/AttentionKernels/AttentionEmitter.h"
#include "lib/Conversion/AttentionKernels/KernelSignature.h"

#include "dialect/PootDialect.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace mlir::poot {

/// What a kernel body is given: the builder inside the kernel's in-range
/// branch, the request, the bound arguments, the workgroup id (folded over
/// the grid), the lane and the workgroup buffer (null when none).
struct KernelBodyArgs {
  OpBuilder &b;
  Location loc;
  AttentionRequestAttr req;
  const KernelSignature &sig;
  AttentionEmitter &emitter;
  const AttentionBuffers &bufs;
  double scale;
  std::optional<double> softcap;
  Value wg, lane, lds;
};

using KernelBody = void (*)(const KernelBodyArgs &);

/// The workgroup memory a kernel declares (req.getLdsFloats() elements).
enum class WorkgroupMemory {
  None,
  /// f32 words.
  Floats,
  /// i32 words (two two-byte elements each: the tensor-core staging).
  Words,
  /// i32 words stored as 16-byte vectors: the buffer's alignment raised to
  /// 16 through the attribution's llvm.align.
  AlignedWords,
};

/// One kernel of a schedule's launch sequence.
struct GpuKernel {
  StringRef name;
  KernelSignature::Launch launch;
  /// Workgroups that do work; the grid's (x, y) fold may overshoot.
  int64_t workgroups;
  WorkgroupMemory memory;
  KernelBody body;
};

/// How poot-attention-to-loops runs a schedule on the CPU.
enum class LoopForm {
  /// The seed's lane phases as loops (streaming, split-KV).
  LaneLoops,
  /// The CPU's own schedule (CpuAttentionKernel.h).
  CpuTiled,
  /// A GPU-only schedule (warps and shuffles, barriers in the key walk).
  None,
};

/// One attention schedule.
struct ScheduleInfo {
  AttentionSchedule schedule;
  /// Kernels in launch order for `req`; empty: no GPU kernel (cpu_tiled).
  SmallVector<GpuKernel, 2> (*kernels)(AttentionRequestAttr req);
  /// NVIDIA tensor-core code (mma.sync): generated for NVVM only.
  bool nvvmOnly = false;
  LoopForm loops = LoopForm::None;
  /// The tiled walk packs the KV group's query heads into its row block
  /// (packed row p is head g * n_rep + p / Lq): the wide head, either form.
  bool packsKvGroup = false;
  /// K and V tiles share one staging region and the S step splits the head
  /// width over slices (TiledPrefillKernel.h): the FFMA wide head.
  bool sharesKeyValueStaging = false;
};

/// Every schedule, in the enum's order (Registry.cpp).
ArrayRef<const ScheduleInfo *> attentionSchedules();

/// The schedule `schedule` names (every enum value is registered).
const ScheduleInfo &scheduleInfo(AttentionSchedule schedule);

// Parts several schedules share (SharedParts.cpp).

/// The launch of a schedule's first kernel: it writes partial states to the
/// scratch when the request is split, else the output.
KernelSignature::Launch firstLaunch(AttentionRequestAttr req);

/// The lane phases of the streaming and split-KV kernels: each lane scans
/// its keys, a barrier, the lanes' states folded (AttentionEmitter).
void emitLaneBody(const KernelBodyArgs &args);

/// The split combine: one workgroup per row folds the splits' partial
/// states into the output.
GpuKernel combineKernel(AttentionRequestAttr req);

// The schedules (one file each).
const ScheduleInfo &streamingSchedule();
const ScheduleInfo &splitKVSchedule();
const ScheduleInfo &warpDecodeSchedule();
const ScheduleInfo &cpuTiledSchedule();
const ScheduleInfo &tiledPrefillSchedule();
const ScheduleInfo &wideHeadSchedule();
const ScheduleInfo &tiledPrefillMmaSchedule();
const ScheduleInfo &wideHeadMmaSchedule();

} // namespace mlir::poot

#endif // POOT_LIB_CONVERSION_ATTENTIONKERNELS_SCHEDULES_SCHEDULE_H
