//===- PlanRules.cpp - the planning rules, in the order they are asked ----===//
//
// The CPU's own schedule when the device is a CPU with vectors; then the
// NVIDIA warp decode; a GPU prefill's tiled schedules; a wide-group GPU
// decode's wide-head schedules; and streaming / split-KV, which takes every
// op the others leave (or refuses it).
//
//===----------------------------------------------------------------------===//

#include "lib/Transforms/PlanRules.h"
#include "lib/Transforms/PlanPrefill.h"

using namespace mlir;
using namespace mlir::poot;

ArrayRef<PlanningRule> poot::planningRules() {
  static const PlanningRule rules[] = {
      {AttentionSchedule::CpuTiled, planCpuTiled},
      {AttentionSchedule::WarpDecode, planWarpDecode},
      {AttentionSchedule::TiledPrefill, planTiledPrefill},
      {AttentionSchedule::WideHead, planWideHead},
      {AttentionSchedule::Streaming, planStreaming},
  };
  return rules;
}
