#include "launcher/job/job_view.h"

#include <string.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "rendezvous/rendezvous_state.h"

namespace dlaunch {

void SummarizeRanks(const std::map<int, RankProgress>& ranks, v1::JobSummary* summary) {
  double loss_sum = 0;
  int loss_n = 0;
  int64_t samples = 0;
  double rate = 0;
  int succeeded = 0;
  for (const auto& [rank, r] : ranks) {
    succeeded += r.state == v1::WorkerEvent::SUCCEEDED;
    samples += r.samples;
    if (r.busy_s > 0) rate += r.samples / r.busy_s;
    if (r.test_accuracy) summary->mutable_test_accuracy()->set_value(*r.test_accuracy);
    if (r.has_loss) {
      loss_sum += r.loss;
      ++loss_n;
    }
  }
  summary->set_samples(samples);
  summary->set_samples_per_sec(rate);
  summary->mutable_ranks_succeeded()->set_value(succeeded);
  if (loss_n > 0) summary->mutable_final_loss()->set_value(loss_sum / loss_n);
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

std::vector<std::string> FinalReport(const v1::JobSummary& s,
                                     const std::map<int, RankProgress>& ranks,
                                     const std::map<int, std::string>& hosts) {
  std::vector<std::string> lines;
  std::string head = absl::StrFormat("[dlaunch] job %s %s in %.2f s", s.job_id(), s.result(),
                                     s.wall_time_s());
  if (s.nodes() > 0) {
    absl::StrAppendFormat(&head, ": %d node(s), %d worker(s)", s.nodes(), s.world_size());
  }
  if (s.max_restarts() > 0) {
    absl::StrAppendFormat(&head, ", %d of %d restart(s) used", s.restarts(), s.max_restarts());
  }
  lines.push_back(head);
  if (s.exit_code() != 0 && !s.failure().empty()) {
    lines.push_back((s.has_root_cause() ? "[dlaunch] root cause: " : "[dlaunch] ") + s.failure());
    if (!s.failure_detail().empty()) {
      lines.push_back("[dlaunch] last lines of its log:");
      for (const auto& l : s.failure_detail()) lines.push_back("    | " + l);
    }
    if (s.has_root_cause() &&
        s.root_cause().failure_class() == FailureClassName(FailureClass::kExitHang)) {
      lines.push_back(absl::StrFormat(
          "[dlaunch] %d of %d rank(s) exited 0; the job fails because a rank hung at exit "
          "(see docs/failures.md)", s.ranks_succeeded().value(), s.world_size()));
    }
    for (const v1::FailureRecord& c : s.consequences()) {
      lines.push_back("[dlaunch] consequence: " + c.description());
    }
    if (!s.not_restarted().empty()) {
      lines.push_back("[dlaunch] not restarted: " + s.not_restarted());
    }
  }
  if (s.samples() <= 0) return lines;
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
      "[dlaunch] reported throughput: %.1f samples/s total, %.1f per rank", s.samples_per_sec(),
      s.world_size() > 0 ? s.samples_per_sec() / s.world_size() : 0.0);
  if (s.has_test_accuracy()) {
    absl::StrAppendFormat(&throughput, ", test accuracy %.2f%%", s.test_accuracy().value() * 100);
  }
  lines.push_back(throughput);
  return lines;
}

std::string RefusedSoFar(int64_t count) {
  return count <= 3 ? ""
                    : absl::StrCat(" (", count, " refused so far; only every tenfold is said)");
}

namespace {

PrintLine Say(const std::string& text) { return PrintLine{false, "[dlaunch] " + text}; }
PrintLine Warn(const std::string& text) { return PrintLine{true, "[dlaunch] " + text}; }

std::string Joined(const v1::NodeJoined& j) {
  return absl::StrCat("node joined: ", j.host(), " (", j.addr(), "), ", j.slots(), " slot(s) [",
                      j.joined(), "/", j.expected(), "]");
}

std::string Unfit(const v1::NodeUnfit& u) {
  const std::vector<v1::CheckResult> checks(u.checks().begin(), u.checks().end());
  return absl::StrCat("node left out: ", u.host(), " (", u.addr(), ") failed its preflight: ",
                      absl::StrJoin(FailedChecks(checks), "; "));
}

std::string Closed(const v1::RendezvousClosed& c) {
  return absl::StrCat("rendezvous complete in ", absl::StrFormat("%.2f", c.elapsed_s()), " s: ",
                      c.node_order_size(), " node(s), world size ", c.world_size(),
                      ", MASTER_ADDR=", c.master_addr(), " MASTER_PORT=", c.master_port());
}

std::string Started(int round, const v1::WorkersStarted& s) {
  if (round == 0) {
    return absl::StrFormat("all %d workers started in %.2f s", s.workers(), s.elapsed_s());
  }
  return absl::StrFormat("round %d running: %d nodes, %d workers; restart took %.2f s", round,
                         s.nodes(), s.workers(), s.restart_s());
}

std::string Restarting(int round, const v1::Restart& r) {
  return absl::StrFormat(
      "restarting: round %d (%s)%s, %d node(s)%s", round, r.reason(),
      r.starts_in_s() > 0 ? absl::StrFormat(" in %.1f s", r.starts_in_s()) : std::string(),
      r.node_ids_size(),
      r.waits_for_lost_workers() ? ", once the lost nodes' workers are surely stopped" : "");
}

// Why NVML said the named rank's GPU was held down, where it said: "; its GPU's clocks held
// down by: power cap, hw thermal".
std::string GpuClockReasons(const v1::Straggler& s) {
  if (s.gpu_clock_reasons().empty()) return "";
  return absl::StrCat("; its GPU's clocks held down by: ",
                      absl::StrJoin(s.gpu_clock_reasons(), ", "));
}

// Its GPU slower: the figures are nanoseconds per SM clock cycle, shown as MHz.
std::string GpuClockStragglerLine(const v1::Straggler& s, bool detected, const std::string& who) {
  const auto mhz = [](double ns) { return ns > 0 ? 1000 / ns : 0.0; };
  if (!detected) {
    return absl::StrFormat("straggler cleared: %s: %s (its GPU's SM clock %.0f MHz, median %.0f "
                           "MHz; gpu clock); the job waited %.1f s for it",
                           who, s.reason(), mhz(s.step_s()), mhz(s.median_s()), s.waited_s());
  }
  return absl::StrFormat(
      "straggler: %s: its GPU's SM clock ran at %.0f MHz%s while busy, the median %.0f MHz is "
      "%.2fx it (gpu clock), for %d intervals%s%s",
      who, mhz(s.step_s()),
      s.gpu_clock_max_mhz() > 0 ? absl::StrFormat(" (of %.0f)", s.gpu_clock_max_mhz()) : "",
      mhz(s.median_s()), s.ratio(), s.intervals(), GpuClockReasons(s),
      s.policy() == "exclude" ? "; it will be left out at the next restart" : "");
}

std::string StragglerLine(const v1::Straggler& s, bool detected) {
  const std::string who = absl::StrFormat("node %d (%s), rank %d", s.node_id(), s.host(), s.rank());
  if (s.measure() == "gpu clock") return GpuClockStragglerLine(s, detected, who);
  if (s.measure() == "cpu stretch") {
    // The figures are how long the rank's work wanted a CPU per second it got one.
    if (!detected) {
      return absl::StrFormat("straggler cleared: %s: %s (its work took %.2fx the CPU time it got, "
                             "median %.2fx); the job waited %.1f s for it",
                             who, s.reason(), s.step_s(), s.median_s(), s.waited_s());
    }
    return absl::StrFormat(
        "straggler: %s: its work took %.2fx the CPU time it got (run-queue delay), %.2fx the "
        "median %.2fx, for %d intervals%s%s",
        who, s.step_s(), s.ratio(), s.median_s(), s.intervals(), GpuClockReasons(s),
        s.policy() == "exclude" ? "; it will be left out at the next restart" : "");
  }
  if (!detected) {
    return absl::StrFormat("straggler cleared: %s: %s (%.3f s per step, median %.3f s); the job "
                           "waited %.1f s for it",
                           who, s.reason(), s.step_s(), s.median_s(), s.waited_s());
  }
  return absl::StrFormat(
      "straggler: %s takes %.3f s per step (%s), %.2fx the median %.3f s and %.2fx its own best, "
      "for %d intervals%s",
      who, s.step_s(), s.measure(), s.ratio(), s.median_s(),
      s.best_s() > 0 ? s.step_s() / s.best_s() : 1.0, s.intervals(),
      s.policy() == "exclude" ? "; it will be left out at the next restart" : "");
}

std::string RootCauseLine(const v1::RootCause& r) {
  const std::string& text = r.failure().description();
  return r.revises() ? absl::StrCat("root cause: ", text,
                                    " (the failure reported above is a consequence)")
                     : absl::StrCat("error: ", text, "; stopping all workers");
}

}  // namespace

std::optional<PrintLine> NarrateEvent(const v1::JobEvent& e) {
  switch (e.event_case()) {
    case v1::JobEvent::kJobStarted: {
      const v1::JobStarted& s = e.job_started();
      return Say(absl::StrCat("job ", s.job_id(), ": ", s.nodes(), " node(s) via ",
                              s.node_launcher(), ", job dir ", s.job_dir()));
    }
    case v1::JobEvent::kNodeJoined:
      return Say(Joined(e.node_joined()));
    case v1::JobEvent::kNodeUnfit:
      return Warn(Unfit(e.node_unfit()));
    case v1::JobEvent::kSpareJoined: {
      const v1::SpareJoined& s = e.spare_joined();
      return Say(absl::StrCat("spare joined: ", s.host(), " (", s.addr(), "), node ", s.node_id(),
                              ", ", s.slots(), " slot(s)"));
    }
    case v1::JobEvent::kRendezvousClosed:
      return Say(Closed(e.rendezvous_closed()));
    case v1::JobEvent::kWorkersStarted:
      return Say(Started(e.round(), e.workers_started()));
    case v1::JobEvent::kRootCause:
      return Warn(RootCauseLine(e.root_cause()));
    case v1::JobEvent::kNodeExcluded:
      return Say(absl::StrCat("node ", e.node_excluded().node_id(), " (", e.node_excluded().host(),
                              ") excluded: ", e.node_excluded().reason()));
    case v1::JobEvent::kSpareLost:
      return Say(absl::StrCat("spare node ", e.spare_lost().node_id(), " (", e.spare_lost().host(),
                              ") lost: ", e.spare_lost().reason()));
    case v1::JobEvent::kSparePromoted:
      return Say(absl::StrCat("spare node ", e.spare_promoted().node_id(), " (",
                              e.spare_promoted().host(), ") takes a lost node's place"));
    case v1::JobEvent::kRestart:
      return Say(Restarting(e.round(), e.restart()));
    case v1::JobEvent::kRelayLost:
      return Say(absl::StrCat(e.relay_lost().relay(), " went with ", e.relay_lost().nodes(),
                              " node(s)' sessions: they keep their places while their agents "
                              "reconnect to the launcher"));
    case v1::JobEvent::kSessionResumed: {
      const v1::SessionResumed& r = e.session_resumed();
      if (!r.relay_back()) return std::nullopt;
      return Say(absl::StrFormat("every node of %s is back, the last after %.2f s", r.relay(),
                                 r.after_s()));
    }
    case v1::JobEvent::kStragglerDetected:
      return Warn(StragglerLine(e.straggler_detected(), true));
    case v1::JobEvent::kStragglerCleared:
      return Say(StragglerLine(e.straggler_cleared(), false));
    case v1::JobEvent::kCallRefused: {
      const v1::CallRefused& c = e.call_refused();
      return Warn(absl::StrCat("refused ", c.method(), " from ", c.peer(),
                               ": missing or wrong job token", RefusedSoFar(c.refused())));
    }
    default:
      return std::nullopt;
  }
}

void RecordEvent(v1::JobEvent event, JobActions& out) {
  if (std::optional<PrintLine> line = NarrateEvent(event)) out.push_back(*std::move(line));
  out.push_back(AppendEvent{std::move(event)});
}

std::string DescribeWorkerExit(const v1::WorkerEvent& event) {
  if (event.signal() != 0) {
    const char* name = strsignal(event.signal());
    return absl::StrCat("signal ", event.signal(), " (", name ? name : "?", ")");
  }
  return absl::StrCat("exit code ", event.exit_code());
}

}  // namespace dlaunch
