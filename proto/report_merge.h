// Folding a rank's worker reports between two heartbeats into one, so the launcher gets one
// report per rank per heartbeat whatever the workers' report cadence. Pure.
#pragma once

#include "dlaunch/report.pb.h"

namespace dlaunch {

// `later` folded onto `earlier`: samples, interval and phase times add up (and the rate is
// recomputed from the sums); every other field is the later report's, except a test accuracy
// the later one lacks. A later PHASE report (no samples, no metrics) only moves the earlier
// one's phase, step, epoch, total steps and checkpoint step forward, so the interval's kind,
// loss and accuracy survive it.
v1::WorkerReport MergeReports(const v1::WorkerReport& earlier, const v1::WorkerReport& later);

}  // namespace dlaunch
