// The checkpoint interval that would have lost least, Young/Daly: sqrt(2 x checkpoint cost x
// mean time between failures), from one job's goodput account, the checkpoint steps and
// checkpoint lengths its journal shows, and its failed rounds (docs/goodput.md). Pure.
#pragma once

#include <cstdint>
#include <set>
#include <vector>

#include "dlaunch/goodput.pb.h"

namespace dlaunch {

// Not known (with a note) when no checkpoint's length or no failure is in the journal.
// `none_written`: the step trace would have timed a checkpoint and shows none, so the note tells
// the user that a failure would cost every step since the start.
v1::CheckpointAdvice AdviseCheckpointInterval(const v1::GoodputAccount& account,
                                              const std::set<int64_t>& checkpoint_steps,
                                              const std::vector<double>& checkpoint_costs,
                                              int failures, bool none_written = false);

}  // namespace dlaunch
