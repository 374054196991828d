// JobView: the text a job shows its user, as pure functions of the controller's figures: the
// periodic summary line, the final report (result, failure, per-rank table, throughput), the
// totals of summary.json (v1::JobSummary, which the journal's code writes), and the terminal's
// line for each journal event that has one (NarrateEvent). No clocks or I/O, so the wording and
// the arithmetic are unit-tested.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dlaunch/control.pb.h"
#include "dlaunch/journal.pb.h"
#include "launcher/job/failure.h"
#include "launcher/job/job_actions.h"

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

// Totals over `ranks` (samples, throughput, loss, accuracy, ranks that succeeded) into the job's
// summary (proto/journal.proto); the caller fills the identity, result and failure fields.
void SummarizeRanks(const std::map<int, RankProgress>& ranks, v1::JobSummary* summary);

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
std::vector<std::string> FinalReport(const v1::JobSummary& summary,
                                     const std::map<int, RankProgress>& ranks,
                                     const std::map<int, std::string>& hosts);

// The terminal's line for a journal event, as `dlaunch run` prints it, made from the event
// alone: "[dlaunch] node joined: ...", a root cause on stderr, ... None for an event the terminal
// does not narrate (a worker's start or end, a failure before its root cause is settled).
std::optional<PrintLine> NarrateEvent(const v1::JobEvent& event);

// " (40 refused so far; only every tenfold is said)" past the third refusal of a kind, whose
// first three, then 10th, 100th, ... are said; "" before.
std::string RefusedSoFar(int64_t count);

// `event` into the journal, after its line on the terminal when it has one (NarrateEvent): the
// one way JobState and its parts record an event.
void RecordEvent(v1::JobEvent event, JobActions& out);

// "exit code 3" or "signal 9 (Killed)".
std::string DescribeWorkerExit(const v1::WorkerEvent& event);

}  // namespace dlaunch
