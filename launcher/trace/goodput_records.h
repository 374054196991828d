// What a job's journal says that the goodput account (goodput.h) adds up, read once: the job's
// start and end, and round by round its launcher stamps, failures, the ranks' step reports, the
// spans they spent between steps (checkpoints, evaluations) and the phases they reported.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "launcher/trace/goodput_phases.h"
#include "launcher/trace/trace_builder.h"

namespace dlaunch {

// One report that moved its rank forward: the interval it covers and the steps it reached.
struct GoodputProgress {
  int64_t begin_us = 0;
  int64_t end_us = 0;
  int64_t step = 0;
  int64_t checkpoint_step = 0;
  double comm_wait_s = 0;
};

// A span a worker spent between steps (dlaunch-worker's step trace: checkpoint, evaluate).
struct GoodputPause {
  int rank = 0;
  int64_t begin_us = 0;
  int64_t end_us = 0;
  bool checkpoint = false;
};

// What the journal says of one round.
struct GoodputRoundRecords {
  std::optional<int64_t> started_us;        // round_started (rounds after the first)
  std::optional<int64_t> first_event_us;
  std::optional<int64_t> workers_started_us;
  std::optional<int64_t> last_worker_started_us;
  std::optional<int64_t> last_worker_ended_us;
  std::optional<int64_t> failure_us;        // the first failure the launcher saw in the round
  std::string failure_class;
  std::optional<int64_t> stop_us;           // a stop without a failure (a signal)
  std::map<int, std::vector<GoodputProgress>> ranks;  // by rank, in time order
  std::map<int, std::optional<int64_t>> rank_started_us;  // worker_started, by rank
  // The straggler score's nodes named in the round, and the wait they cost (straggler_cleared).
  int stragglers = 0;
  double straggler_waited_s = 0;
};

struct GoodputRecords {
  std::optional<int64_t> origin_us;    // job_started, else the first timed event
  std::optional<int64_t> finished_us;  // job_finished
  int64_t end_us = 0;                  // job_finished, else the last record
  std::string job_id;
  bool finished = false;
  std::string result;                  // job_finished's
  std::vector<std::string> notes;      // what the journal lacks
  std::map<int, GoodputRoundRecords> rounds;
  std::vector<GoodputPause> pauses;
  std::vector<RankPhase> phases;
  bool traced = false;             // dlaunch-worker's step trace timed checkpoints or evaluations
  bool checkpoint_phases = false;  // a rank reported a checkpoint phase
  bool evaluation_phases = false;
  std::vector<double> checkpoint_costs;
  std::set<int64_t> checkpoint_steps;
};

GoodputRecords ReadGoodputRecords(const TraceInput& in);

}  // namespace dlaunch
