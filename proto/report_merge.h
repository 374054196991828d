// Folding a rank's worker reports between two heartbeats into one, so the launcher gets one
// report per rank per heartbeat whatever the workers' report cadence. Pure.
#pragma once

#include "dlaunch/report.pb.h"

namespace dlaunch {

// `later` folded onto `earlier`: samples, interval and phase times add up (and the rate is
// recomputed from the sums); every other field is the later report's, except a test accuracy
// the later one lacks. A later PHASE report (no samples, no metrics) only moves the earlier
// one's phase, step, epoch, total steps and checkpoint step forward, so the interval's kind,
// loss and accuracy survive it (a PHASE report without a known phase leaves the phase too).
// The phase logs are joined in order, so phases shorter than a heartbeat keep their lengths, up
// to kMaxPhaseEvents per merged report; events past it are counted in the log's `dropped`.
inline constexpr int kMaxPhaseEvents = 64;
v1::WorkerReport MergeReports(const v1::WorkerReport& earlier, const v1::WorkerReport& later);

}  // namespace dlaunch
