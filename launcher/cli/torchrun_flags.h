// torchrun's flags as entries of `dlaunch run`'s flag table (docs/job-spec.md, "On the command
// line"): the ones that mean something here set RunFlags; the others are refused in one line
// that says why and what to use instead. Both the dash and the underscore spellings.
#pragma once

#include <vector>

#include "common/flags.h"
#include "launcher/cli/run_flags.h"

namespace dlaunch {

std::vector<Flag> TorchrunFlagTable(RunFlags* f);

}  // namespace dlaunch
