// Spelling suggestions for unknown names ("did you mean 'nodes'?") in job.yaml and flags.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dlaunch {

// Optimal-string-alignment distance: insertions, deletions, substitutions and swaps of two
// adjacent characters each cost 1, because "nodez" and "ndoes" are both one slip from "nodes".
int EditDistance(std::string_view a, std::string_view b);

// The candidate closest to `word`, or "" when none is close enough to be a plausible typo
// (distance at most 2, and at most a third of the longer word, so short words need close
// matches). Ties go to the earlier candidate.
std::string ClosestMatch(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace dlaunch
