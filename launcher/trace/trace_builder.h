// BuildTraceParts: the events of a job's timeline from its journal, after the fact: launcher
// events (events.jsonl), the workers' reports (metrics.jsonl) and dlaunch-worker's own step
// phases (trace/rank-N.jsonl), laid out as one track for the launcher, one per node and two per
// rank (its process and steps; its reports). Nodes are placed by node id, never by node rank.
// Pure: records in, events out; no files, no clock.
// TraceBound (trace_bound.h) then fits the parts into the size limit.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dlaunch/goodput.pb.h"
#include "dlaunch/journal.pb.h"
#include "launcher/jobdir/journal.h"
#include "launcher/trace/journal_rows.h"
#include "launcher/trace/trace_event.h"

namespace dlaunch {

// What a job directory holds for its timeline.
struct TraceInput {
  std::vector<v1::JobEvent> events;      // events.jsonl (launcher/jobdir/journal.h)
  int events_bad_lines = 0;
  std::vector<v1::MetricLine> metrics;   // metrics.jsonl: rank reports
  std::vector<v1::MetricLine> hosts;     // metrics.jsonl: the nodes' health (counter tracks)
  int metrics_bad_lines = 0;
  std::map<int, RankStepTrace> rank_steps;  // trace/rank-N.jsonl by rank
};

// The journal as the trace reads it: metrics without a readable receipt time are counted with
// the unreadable lines.
TraceInput MakeTraceInput(EventJournal events, MetricJournal metrics);

// One worker report as a span: the interval it covers, ending when it was made.
struct ReportSpan {
  int pid = 0;
  int tid = 0;
  int64_t begin_us = 0;
  int64_t end_us = 0;
  int64_t first_step = 0;  // the first step the interval covers; 0: not known (a first report)
  int64_t last_step = 0;
  int reports = 1;  // more than one once merged to fit the size limit
  double samples = 0;
  double loss = 0;
};

// One recorded worker step (its phases back to back) or a span between steps, on its rank's
// track; kept compact until it is drawn, as a long job has millions.
struct StepSpan {
  int pid = 0;
  int tid = 0;
  int64_t begin_us = 0;  // since the job's start
  int64_t end_us = 0;
  StepRow row;
};

// The trace events of one step span: the step and its phases, or the named span.
std::vector<TraceEvent> StepEvents(const StepSpan& s);

// The trace before its size is bounded, by what may be thinned.
struct TraceParts {
  std::string job_id;
  int64_t origin_unix_us = 0;        // time 0 of the trace: the job's start
  std::vector<TraceEvent> fixed;     // track names, job lifecycle, per-rank process spans
  std::vector<TraceEvent> instants;  // other launcher events: sampled beyond the limit
  std::map<int, std::vector<ReportSpan>> reports;  // by rank: merged beyond the limit
  std::map<int, std::vector<StepSpan>> steps;      // by rank: sampled beyond the limit
  std::vector<std::string> notes;  // what was sampled or skipped already in the inputs
};

// The job's goodput track is drawn from `goodput`, the account of the same input
// (ComputeGoodput), which a caller that also prints or stores the account computes once.
TraceParts BuildTraceParts(const TraceInput& input, const v1::GoodputAccount& goodput);
// The same, computing the account.
TraceParts BuildTraceParts(const TraceInput& input);

// The tracks. The launcher is process kLauncherPid with one thread, kLauncherTid. Node i is
// process NodePid(i): its own events on thread NodeTid(i) (tid == pid, as a main thread's), rank
// r's process and steps on RankTid(r), its reports on ReportTid(r), under the node it ran on.
// A rank that a restart moved to another node gets a second pair of threads (tids from 2^29)
// under that node, each span on the node the rank was on at its time. No pid or tid is 0
// (Perfetto keeps 0 for the idle process and thread), and no tid is used in two processes.
constexpr int kLauncherPid = 1;
constexpr int kLauncherTid = 1;
// The launcher's second thread: the goodput account's stretches of time (docs/goodput.md).
constexpr int kGoodputTid = 1 << 30;
int NodePid(int node);
int NodeTid(int node);
int RankTid(int rank);
int ReportTid(int rank);

}  // namespace dlaunch
