// The phases ranks reported (WorkerReport.phase_log: the Python package's phase()) as spans on
// the journal's time axis, and what the goodput account takes from them: the checkpoint and
// evaluation time between steps, and a round's start-up phase by phase (docs/goodput.md). Pure.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "dlaunch/goodput.pb.h"
#include "dlaunch/journal.pb.h"

namespace dlaunch {

// What a phase's name says it is: the names the Python package maps to WorkerReport.Phase
// (python/src/dlaunch/_wire.py) for training, evaluation and checkpoints; any other name
// (data, a script's own: "import", "process_group", "load") is kOther.
enum class PhaseKind { kTraining, kEvaluation, kCheckpoint, kOther };
PhaseKind PhaseKindOf(std::string_view name);

struct RankPhase {
  int rank = 0;
  std::string name;
  PhaseKind kind = PhaseKind::kOther;
  int64_t begin_us = 0;  // Unix microseconds, on the rank's clock
  int64_t end_us = 0;
};

// Every reported phase of every rank, ordered by rank and begin. An end event gives its phase
// whole (its time less its length); a begin that no end of the same name follows (a plain
// phase() call, or a rank that died in it) lasts until the rank's next phase event or the next
// interval of steps it reported, else until the next round starts (`round_starts_us`, sorted)
// or `end_us`.
std::vector<RankPhase> ReadRankPhases(const std::vector<v1::MetricLine>& metrics,
                                      const std::vector<int64_t>& round_starts_us, int64_t end_us);

// A round's start-up phase by phase: for each rank, its phases (other than training) begun
// inside [begin_us, steps_us) (to steps_us at most), and before them the time from its worker's start (`rank_started_us`,
// by rank) to its first phase; per name, the rank that spent most. In the order the phases
// first began. Empty when no rank reported a phase there.
std::vector<v1::GoodputPhase> StartupPhases(const std::vector<RankPhase>& phases,
                                            const std::map<int, int64_t>& rank_started_us,
                                            int64_t begin_us, int64_t steps_us);

}  // namespace dlaunch
