//===- Registry.cpp - the attention schedules ------------------------------===//
//
// The list the kernel passes iterate over. A new schedule adds its enum case
// (dialect/PootAttrs.td), its file here and one line below.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/AttentionKernels/Schedules/Schedule.h"

using namespace mlir;
using namespace mlir::poot;

ArrayRef<const ScheduleInfo *> poot::attentionSchedules() {
  static const ScheduleInfo *const all[] = {
      &streamingSchedule(),    &splitKVSchedule(),
      &warpDecodeSchedule(),   &cpuTiledSchedule(),
      &tiledPrefillSchedule(), &wideHeadSchedule(),
      &tiledPrefillMmaSchedule(), &wideHeadMmaSchedule(),
  };
  return all;
}

const ScheduleInfo &poot::scheduleInfo(AttentionSchedule schedule) {
  for (const ScheduleInfo *info : attentionSchedules())
    if (info->schedule == schedule)
      return *info;
  llvm_unreachable("every attention schedule is registered (Registry.cpp)");
}
