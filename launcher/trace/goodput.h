// The goodput account: every second of a job's wall time in one category (start-up, productive
// steps, evaluation, checkpoints, failures, redone work, waiting on the slowest rank, the tail),
// per job and per round, from the journal the trace reads (events, reports, dlaunch-worker's
// step traces). The categories add up to the wall time; what the journal cannot tell is marked
// not known instead of guessed (docs/goodput.md). Pure: the trace's input in, the account out.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "dlaunch/goodput.pb.h"
#include "launcher/trace/goodput_split.h"  // GoodputFigures, GoodputSum
#include "launcher/trace/trace_builder.h"

namespace dlaunch {

v1::GoodputAccount ComputeGoodput(const TraceInput& input);

// The note of figures a round without step reports cannot know.
extern const char kGoodputNoReports[];


}  // namespace dlaunch
