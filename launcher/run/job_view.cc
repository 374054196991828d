#include "launcher/run/job_view.h"

#include <string.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/json_line.h"

namespace dlaunch {

void SummarizeRanks(const std::map<int, RankProgress>& ranks, JobSummary* summary) {
  double loss_sum = 0;
  int loss_n = 0;
  summary->samples = 0;
  summary->samples_per_sec = 0;
  summary->ranks_succeeded = 0;
  for (const auto& [rank, r] : ranks) {
    summary->ranks_succeeded += r.state == v1::WorkerEvent::SUCCEEDED;
    summary->samples += r.samples;
    if (r.busy_s > 0) summary->samples_per_sec += r.samples / r.busy_s;
    if (r.test_accuracy) summary->test_accuracy = r.test_accuracy;
    if (r.has_loss) {
      loss_sum += r.loss;
      ++loss_n;
    }
  }
  if (loss_n > 0) summary->final_loss = loss_sum / loss_n;
}

std::string PhaseName(v1::WorkerReport::Phase phase) {
  switch (phase) {
    case v1::WorkerReport::LOADING_DATA: return "loading data";
    case v1::WorkerReport::TRAINING: return "training";
    case v1::WorkerReport::EVALUATING: return "evaluating";
    case v1::WorkerReport::CHECKPOINTING: return "checkpointing";
    default: return "";
  }
}

std::string JobPhase(const std::map<int, RankProgress>& ranks) {
  for (const auto& [rank, r] : ranks) {
    if (WorkerEnded(r.state)) continue;
    if (r.phase != v1::WorkerReport::PHASE_UNSPECIFIED && r.phase != v1::WorkerReport::TRAINING) {
      return PhaseName(r.phase);
    }
  }
  return "";
}

std::string SummaryLine(double elapsed_s, int nodes_up, int nodes, int workers_running,
                        int world_size, const std::map<int, RankProgress>& ranks) {
  int64_t step = 0;
  double rate = 0;
  for (const auto& [rank, r] : ranks) {
    step = std::max(step, r.step);
    if (r.state != v1::WorkerEvent::SUCCEEDED && r.state != v1::WorkerEvent::FAILED) {
      rate += r.recent_rate;
    }
  }
  std::string line = absl::StrFormat("%6.1fs  nodes %d/%d up  workers %d/%d running", elapsed_s,
                                     nodes_up, nodes, workers_running, world_size);
  if (rate > 0 || step > 0) absl::StrAppendFormat(&line, "  step %d  %.1f samples/s", step, rate);
  if (std::string phase = JobPhase(ranks); !phase.empty()) absl::StrAppend(&line, "  ", phase);
  return line;
}

namespace {

// A final report lists every rank up to this many, else only the slowest.
constexpr size_t kMaxRankRows = 64;
constexpr size_t kSlowestRankRows = 8;

}  // namespace

std::vector<std::string> FinalReport(const JobSummary& s, const std::map<int, RankProgress>& ranks,
                                     const std::map<int, std::string>& hosts) {
  std::vector<std::string> lines;
  std::string head = absl::StrFormat("[dlaunch] job %s %s in %.2f s", s.job_id, s.result,
                                     s.wall_time_s);
  if (s.nodes > 0) absl::StrAppendFormat(&head, ": %d node(s), %d worker(s)", s.nodes, s.world_size);
  if (s.max_restarts > 0) {
    absl::StrAppendFormat(&head, ", %d of %d restart(s) used", s.restarts, s.max_restarts);
  }
  lines.push_back(head);
  if (s.exit_code != 0 && !s.failure.empty()) {
    lines.push_back((s.root_cause ? "[dlaunch] root cause: " : "[dlaunch] ") + s.failure);
    if (!s.failure_detail.empty()) {
      lines.push_back("[dlaunch] last lines of its log:");
      for (const auto& l : s.failure_detail) lines.push_back("    | " + l);
    }
    if (s.root_cause && s.root_cause->cls == FailureClass::kExitHang) {
      lines.push_back(absl::StrFormat(
          "[dlaunch] %d of %d rank(s) exited 0; the job fails because a rank hung at exit "
          "(see docs/failures.md)", s.ranks_succeeded, s.world_size));
    }
    for (const Failure& c : s.consequences) {
      lines.push_back("[dlaunch] consequence: " + DescribeFailure(c));
    }
    if (!s.not_restarted.empty()) lines.push_back("[dlaunch] not restarted: " + s.not_restarted);
  }
  if (s.samples <= 0) return lines;
  lines.push_back(absl::StrFormat("[dlaunch]   %4s %4s %-16s %10s %11s %8s %9s", "rank", "node",
                                  "host", "samples", "samples/s", "step", "loss"));
  // Every rank of a small job; of a large one, the slowest (one line per rank of 40,000 ranks
  // would bury the result), the rest being in metrics.jsonl.
  const auto rate = [](const RankProgress& r) { return r.busy_s > 0 ? r.samples / r.busy_s : 0.0; };
  std::vector<std::pair<int, const RankProgress*>> shown;
  for (const auto& [rank, r] : ranks) shown.emplace_back(rank, &r);
  if (shown.size() > kMaxRankRows) {
    std::stable_sort(shown.begin(), shown.end(),
                     [&](const auto& a, const auto& b) { return rate(*a.second) < rate(*b.second); });
    shown.resize(kSlowestRankRows);
  }
  for (const auto& [rank, r] : shown) {
    auto host = hosts.find(r->node);
    lines.push_back(absl::StrFormat("[dlaunch]   %4d %4d %-16s %10d %11.1f %8d %9.4f", rank, r->node,
                                    host == hosts.end() ? "?" : host->second, r->samples, rate(*r),
                                    r->step, r->loss));
  }
  if (shown.size() < ranks.size()) {
    lines.push_back(absl::StrFormat("[dlaunch]   (the %d slowest of %d ranks; every rank's reports "
                                    "are in metrics.jsonl)", shown.size(), ranks.size()));
  }
  std::string throughput = absl::StrFormat(
      "[dlaunch] reported throughput: %.1f samples/s total, %.1f per rank", s.samples_per_sec,
      s.world_size > 0 ? s.samples_per_sec / s.world_size : 0.0);
  if (s.test_accuracy) absl::StrAppendFormat(&throughput, ", test accuracy %.2f%%", *s.test_accuracy * 100);
  lines.push_back(throughput);
  return lines;
}

std::string FailureJson(const Failure& f) {
  JsonLine j;
  j.Add("class", FailureClassName(f.cls))
      .Add("rank", f.global_rank)
      .Add("local_rank", f.local_rank)
      .Add("node", f.node_rank)
      .Add("host", f.host);
  if (f.exit_code >= 0) j.Add("exit_code", f.exit_code);
  if (f.signal > 0) j.Add("signal", f.signal);
  j.Add("detected_at_s", f.detected_at_s).Add("after_stop", f.after_stop);
  if (!f.detail.empty()) j.Add("detail", f.detail);
  if (f.stuck_at) {
    JsonLine at;
    at.Add("function", f.stuck_at->function)
        .Add("file", f.stuck_at->file)
        .Add("line", f.stuck_at->line)
        .Add("source", f.stuck_at->source)
        .Add("stacks", f.stuck_at->stacks);
    j.AddRaw("stuck_at", at.str());
  }
  j.Add("description", DescribeFailure(f)).Add("log_tail", f.log_tail);
  // "node" is the node rank in the round that failed; "node_id" names the node for the job.
  j.Add("node_id", f.node_id);
  return j.str();
}

std::string SummaryJson(const JobSummary& s) {
  JsonLine json;
  json.Add("job_id", s.job_id)
      .Add("result", s.result)
      .Add("exit_code", s.exit_code)
      .Add("wall_time_s", s.wall_time_s)
      .Add("nodes", s.nodes)
      .Add("world_size", s.world_size)
      .Add("samples", s.samples)
      .Add("samples_per_sec", s.samples_per_sec)
      .Add("samples_per_sec_per_rank", s.world_size > 0 ? s.samples_per_sec / s.world_size : 0.0)
      .Add("restarts", s.restarts)
      .Add("max_restarts", s.max_restarts)
      .Add("rounds", s.rounds);
  if (!s.not_restarted.empty()) json.Add("not_restarted", s.not_restarted);
  if (s.final_loss) json.Add("final_loss", *s.final_loss);
  if (s.test_accuracy) json.Add("test_accuracy", *s.test_accuracy);
  if (!s.failure.empty()) json.Add("failure", s.failure);
  if (s.root_cause) {
    json.AddRaw("root_cause", FailureJson(*s.root_cause));
    std::string list;
    for (const Failure& c : s.consequences) {
      absl::StrAppend(&list, list.empty() ? "" : ",", FailureJson(c));
    }
    json.AddRaw("consequences", "[" + list + "]");
    json.Add("ranks_succeeded", s.ranks_succeeded);
  }
  return json.str();
}

std::string DescribeWorkerExit(const v1::WorkerEvent& event) {
  if (event.signal() != 0) {
    const char* name = strsignal(event.signal());
    return absl::StrCat("signal ", event.signal(), " (", name ? name : "?", ")");
  }
  return absl::StrCat("exit code ", event.exit_code());
}

}  // namespace dlaunch
