// Shared by StragglerScore's unit tests (straggler_score_test.cc,
// straggler_score_gpu_clock_test.cc).
#pragma once

#include "dlaunch/report.pb.h"

namespace dlaunch::straggler_testing {

// A step report: at step `step`, `wall_s` since the rank's last one; `work_s` of them the rank's
// own work (< 0: the report times no phase).
inline v1::WorkerReport Steps(long step, double wall_s, double work_s = -1) {
  v1::WorkerReport r;
  r.set_kind(v1::WorkerReport::STEP);
  r.set_step(step);
  r.set_interval_s(wall_s);
  if (work_s >= 0) r.mutable_timings()->set_forward_ms(work_s * 1000);
  return r;
}

}  // namespace dlaunch::straggler_testing
