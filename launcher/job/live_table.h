// The live table: what `dlaunch run` on a terminal and `dlaunch watch` draw of a JobSnapshot:
// a job line, a progress bar with ETA when the total number of steps is known, and one row per
// node; a job too wide for the screen collapses into counts per state with the slowest and the
// silent nodes named. Pure (snapshot and screen size in, lines out), so it is unit-tested.
#pragma once

#include <string>
#include <vector>

#include "dlaunch/control.pb.h"

namespace dlaunch {

// More nodes than this never get a row each, however tall the screen.
inline constexpr int kMaxNodeRows = 32;
// How many nodes a collapsed table names as the slowest, and as silent.
inline constexpr int kNamedNodes = 5;

// The table for a screen of `width` columns and `height` lines; every line fits in `width`. The
// table takes at most half the screen (but a few lines at least), so output scrolls above it.
std::vector<std::string> RenderLiveTable(const v1::JobSnapshot& snapshot, int width, int height);

// Elapsed time and ETA as the table shows them: "45s", "3m05s", "2h03m".
std::string FormatClock(double seconds);

}  // namespace dlaunch
