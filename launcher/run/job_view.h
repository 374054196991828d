// JobView: the text and JSON a job shows its user, as pure functions of the controller's
// figures: the periodic summary line, the final report (result, failure, per-rank table,
// throughput) and summary.json. No clocks or I/O, so the arithmetic is unit-tested.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dlaunch/control.pb.h"
#include "launcher/run/failure.h"

namespace dlaunch {

// A rank whose worker has ended: succeeded, failed or stopped.
inline bool WorkerEnded(v1::WorkerEvent::State s) {
  return s == v1::WorkerEvent::SUCCEEDED || s == v1::WorkerEvent::FAILED ||
         s == v1::WorkerEvent::STOPPED;
}

// What the launcher knows about one rank, from its worker events and reports.
struct RankProgress {
  int node = -1;
  int pid = 0;
  v1::WorkerEvent::State state = v1::WorkerEvent::STATE_UNSPECIFIED;
  int64_t samples = 0;
  double busy_s = 0;          // sum of report intervals
  int64_t step = 0;
  double loss = 0;
  bool has_loss = false;
  std::optional<double> test_accuracy;
  double recent_rate = 0;     // samples/s of its latest report
  int64_t output_lines = 0;   // lines written, as its agent last counted them
  v1::WorkerReport::Phase phase = v1::WorkerReport::PHASE_UNSPECIFIED;  // its latest report's
};

// The job's end, as summary.json and the final report show it.
struct JobSummary {
  std::string job_id;
  std::string result;         // succeeded, failed, launch error, interrupted
  int exit_code = 0;
  double wall_time_s = 0;
  int nodes = 0;              // 0 when the rendezvous never closed
  int world_size = 0;
  int64_t samples = 0;
  double samples_per_sec = 0;  // sum over ranks of samples / busy time
  std::optional<double> final_loss;     // mean of the ranks' latest losses
  std::optional<double> test_accuracy;  // the highest rank's latest
  std::string failure;
  std::vector<std::string> failure_detail;  // last log lines of the failing rank
  // Among every failure seen (PickRootCause): the cause, and what followed from it.
  std::optional<Failure> root_cause;
  std::vector<Failure> consequences;
  int ranks_succeeded = 0;    // ranks that exited 0 (all of them, for a hang at exit)
  int restarts = 0;           // restarts used (rounds after the first)
  int max_restarts = 0;
  int rounds = 1;
  std::string not_restarted;  // why the last failure got no new round ("" when restarted or off)
};

// Totals over `ranks`; the caller fills the identity, result and failure fields.
void SummarizeRanks(const std::map<int, RankProgress>& ranks, JobSummary* summary);

// "loading data", "training", "evaluating", "checkpointing"; "" for an unreported phase.
std::string PhaseName(v1::WorkerReport::Phase phase);

// The phase the job shows: the first unfinished rank's that is away from training
// (evaluating, checkpointing, loading data); "" while every rank trains or none reported.
std::string JobPhase(const std::map<int, RankProgress>& ranks);

// "  12.3s  nodes 2/2 up  workers 4/4 running  step 40  512.0 samples/s" (without "[dlaunch] "),
// with "  evaluating" (JobPhase) after the rate while ranks are away from training.
// The rate is each unfinished rank's latest, so the line is steady between reports.
std::string SummaryLine(double elapsed_s, int nodes_up, int nodes, int workers_running,
                        int world_size, const std::map<int, RankProgress>& ranks);

// The final report, one entry per line, each starting with "[dlaunch]". `hosts` maps node rank
// to host name.
std::vector<std::string> FinalReport(const JobSummary& summary,
                                     const std::map<int, RankProgress>& ranks,
                                     const std::map<int, std::string>& hosts);

// One failure as a JSON object (summary.json; events.jsonl has FailureRecordOf).
std::string FailureJson(const Failure& failure);

// summary.json's one object (no trailing newline).
std::string SummaryJson(const JobSummary& summary);

// "exit code 3" or "signal 9 (Killed)".
std::string DescribeWorkerExit(const v1::WorkerEvent& event);

}  // namespace dlaunch
