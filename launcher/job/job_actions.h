// The actions JobState returns and JobController applies: what to print, what to append to the
// job's journal, what to tell the agents and the node launchers, which timers to arm, and the
// job's end. Plain data, so JobState's parts can add to one list without knowing the shell.
#pragma once

#include <chrono>
#include <string>
#include <variant>
#include <vector>

#include "dlaunch/journal.pb.h"
#include "dlaunch/report.pb.h"
#include "rendezvous/rendezvous_state.h"

namespace dlaunch {

// The actions carry milliseconds (SendStop.grace_ms); JobState reckons in seconds.
inline int MillisOf(double seconds) { return static_cast<int>(seconds * 1000); }
inline double SecondsOf(std::chrono::milliseconds d) { return std::chrono::duration<double>(d).count(); }

// Actions. Lines are complete ("[dlaunch] ..." or "[rank N] ..."), without the newline.
struct PrintLine {
  bool to_stderr = false;
  std::string text;
};
struct AppendEvent {
  v1::JobEvent event;  // one events.jsonl record; the writer sets its wall-clock time
};
struct AppendMetric {
  int node = 0;   // node id
  v1::WorkerReport report;
  int round = 0;
};
struct AppendHostSample {  // a node's health into metrics.jsonl, every summary interval at most
  int node = 0;   // node id
  v1::HostSample host;
  int round = 0;
  std::vector<v1::GpuSample> gpus;  // the node's GPUs at the same heartbeat
};
struct SendStop {
  std::vector<int> nodes;  // node ids
  int grace_ms = 0;
  std::string reason;
  std::vector<int> dump_ranks;  // hung ranks whose stacks are recorded before the stop
  int round = 0;                // the round whose workers stop
  bool exit = true;             // the agent exits once they have; false: it waits for a round
  int dump_budget_ms = 0;       // JobConfig::stack_dump_s when dump_ranks is not empty
};
// Round `round.round` starts: node_ids[i] takes the place round.assignments[i].
struct SendStartRound {
  RoundResult round;
  std::vector<int> node_ids;
  // When the workers may start (seconds on the job's clock); each StartRound carries what is
  // left of it when it is written (start_after_ms). At or before now: at once.
  double workers_start_at_s = 0;
};
struct SendPing {  // an empty command: proof of life for the agents' watchdogs
  std::vector<int> nodes;
};
struct StopLaunchers {
  int grace_ms = 0;
};
struct KillLaunchers {};
struct ArmStopDeadline {
  double at_s = 0;  // call OnStopDeadline then
};
struct ArmHealthCheck {
  double at_s = 0;  // call OnHealthCheck then (a later arming replaces an earlier one)
};
struct WriteSummary {  // summary.json, the job's end (written by the journal's code)
  v1::JobSummary summary;
};
struct FinishJob {
  int exit_code = 0;
};
using JobAction = std::variant<PrintLine, AppendEvent, AppendMetric, AppendHostSample, SendStop, SendStartRound, SendPing,
                               StopLaunchers, KillLaunchers, ArmStopDeadline, ArmHealthCheck, WriteSummary,
                               FinishJob>;
using JobActions = std::vector<JobAction>;

}  // namespace dlaunch
