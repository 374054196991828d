#include "launcher/job/live_table.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace dlaunch {
namespace {

// The job line, the progress line and the column header are never dropped.
constexpr int kMinTableLines = 8;

bool Up(const std::string& state) {
  return state == "running" || state == "idle" || state == "spare";
}

std::string JobLine(const v1::JobSnapshot& s) {
  int up = 0, workers = 0;
  for (const v1::NodeSnapshot& n : s.nodes()) {
    up += Up(n.state());
    workers += n.workers_running();
  }
  std::string line = absl::StrFormat("job %s  %s  nodes %d/%d up  workers %d/%d", s.job_id(),
                                     FormatClock(s.elapsed_s()), up, s.nodes_expected(),
                                     workers, s.world_size());
  // Nothing where no rank reported (a script that sends no reports); a reported 0 is shown.
  if (s.has_step()) absl::StrAppend(&line, "  step ", s.step());
  if (s.has_samples_per_sec()) {
    absl::StrAppendFormat(&line, "  %.1f samples/s", s.samples_per_sec());
  }
  if (!s.phase().empty()) absl::StrAppend(&line, "  ", s.phase());
  if (s.round() > 0) absl::StrAppend(&line, "  round ", s.round());
  if (s.ended()) absl::StrAppend(&line, "  ended (exit ", s.exit_code(), ")");
  return line;
}

std::string ProgressLine(const v1::JobSnapshot& s, int width) {
  double done = std::clamp(static_cast<double>(s.step()) / s.total_steps(), 0.0, 1.0);
  std::string tail = absl::StrFormat(" %5.1f%%  step %d/%d", done * 100, s.step(), s.total_steps());
  if (s.eta_s() >= 0 && !s.ended()) absl::StrAppend(&tail, "  ETA ", FormatClock(s.eta_s()));
  if (!s.phase().empty() && !s.ended()) absl::StrAppend(&tail, "  ", s.phase());
  int bar = std::clamp(width - static_cast<int>(tail.size()) - 2, 10, 50);
  int filled = static_cast<int>(std::floor(done * bar));
  return absl::StrCat("[", std::string(filled, '#'), std::string(bar - filled, '-'), "]", tail);
}

// Mean utilisation and summed memory of a node's GPUs.
struct GpuTotals {
  int count = 0;
  double util_pct = 0;
  double used_gib = 0;
  double total_gib = 0;
};

GpuTotals SumGpus(const v1::NodeSnapshot& n) {
  GpuTotals t;
  for (const v1::GpuSample& g : n.gpus()) {
    ++t.count;
    t.util_pct += g.utilization_pct();
    t.used_gib += g.memory_used_mib() / 1024.0;
    t.total_gib += g.memory_total_mib() / 1024.0;
  }
  if (t.count > 0) t.util_pct /= t.count;
  return t;
}

// A node's step and rate, "-" while none of its ranks reported one.
std::string StepText(const v1::NodeSnapshot& n) {
  return n.has_step() ? absl::StrCat(n.step()) : "-";
}
std::string RateText(const v1::NodeSnapshot& n) {
  return n.has_samples_per_sec() ? absl::StrFormat("%.1f", n.samples_per_sec()) : "-";
}

std::string HeartbeatAge(const v1::NodeSnapshot& n) {
  return n.since_heartbeat_s() < 0 ? "-" : absl::StrFormat("%.1fs", n.since_heartbeat_s());
}

std::string NodeName(const v1::NodeSnapshot& n) {
  return absl::StrCat(n.host().empty() ? "?" : n.host(), " (n", n.node(), ")");
}

// A running node away from training shows its phase as its state ("evaluating").
std::string ShownState(const v1::NodeSnapshot& n) {
  return n.state() == "running" && !n.phase().empty() && n.phase() != "training" ? n.phase()
                                                                                  : n.state();
}

// The node's load and memory: "  2.1/16   22.9/23.5    0%" (PSI "-" where the kernel has none).
std::string HostColumns(const v1::NodeSnapshot& n) {
  if (!n.has_health()) return absl::StrFormat(" %8s %13s %4s", "-", "-", "-");
  const v1::HostSample& h = n.health();
  std::string psi = h.mem_pressure_pct() < 0 ? "-" : absl::StrFormat("%.0f%%", h.mem_pressure_pct());
  return absl::StrFormat(" %8s %13s %4s", absl::StrFormat("%.1f/%d", h.load1(), h.cpus()),
                         absl::StrFormat("%.1f/%.1f", h.mem_available_kb() / 1048576.0,
                                         h.mem_total_kb() / 1048576.0),
                         psi);
}

void NodeRows(const v1::JobSnapshot& s, bool gpus, std::vector<std::string>* out) {
  bool hosts = false;
  for (const v1::NodeSnapshot& n : s.nodes()) hosts = hosts || n.has_health();
  std::string header = absl::StrFormat("%4s  %-16s %-13s %7s %8s %10s %9s", "NODE", "HOST", "STATE",
                                       "WORKERS", "STEP", "SAMPLES/S", "HEARTBEAT");
  if (hosts) absl::StrAppendFormat(&header, " %8s %13s %4s", "LOAD", "MEM FREE GiB", "PSI");
  if (gpus) absl::StrAppendFormat(&header, " %5s %15s", "GPU%", "GPU MEM GiB");
  out->push_back(header);
  for (const v1::NodeSnapshot& n : s.nodes()) {
    std::string row = absl::StrFormat(
        "%4d  %-16s %-13s %7s %8s %10s %9s", n.node(), n.host().substr(0, 16), ShownState(n),
        absl::StrCat(n.workers_running(), "/", n.slots()), StepText(n), RateText(n),
        HeartbeatAge(n));
    if (hosts) row += HostColumns(n);
    GpuTotals g = SumGpus(n);
    if (gpus && g.count > 0) {
      absl::StrAppendFormat(&row, " %4.0f%% %15s", g.util_pct,
                            absl::StrFormat("%.1f/%.1f", g.used_gib, g.total_gib));
    }
    out->push_back(row);
  }
}

// Names up to kNamedNodes of `nodes`, "+N more" beyond.
std::string NameList(const std::vector<std::string>& names) {
  std::vector<std::string> shown(names.begin(),
                                 names.begin() + std::min<size_t>(names.size(), kNamedNodes));
  std::string text = absl::StrJoin(shown, ", ");
  if (names.size() > shown.size()) absl::StrAppend(&text, ", +", names.size() - shown.size(), " more");
  return text;
}

// The nodes with the least memory available, lowest first, when nodes sent their health.
void LowestMemoryRow(const v1::JobSnapshot& s, std::vector<std::string>* out) {
  std::vector<const v1::NodeSnapshot*> with;
  for (const v1::NodeSnapshot& n : s.nodes()) {
    if (n.has_health() && n.health().mem_total_kb() > 0) with.push_back(&n);
  }
  if (with.empty()) return;
  std::stable_sort(with.begin(), with.end(), [](const auto* a, const auto* b) {
    return a->health().mem_available_kb() < b->health().mem_available_kb();
  });
  std::vector<std::string> names;
  for (const auto* n : with) {
    names.push_back(absl::StrFormat("%s %.1f GiB", NodeName(*n), n->health().mem_available_kb() / 1048576.0));
  }
  out->push_back("least memory free: " + NameList(names));
}

void CollapsedRows(const v1::JobSnapshot& s, std::vector<std::string>* out) {
  std::map<std::string, int> by_state;
  std::vector<const v1::NodeSnapshot*> running, silent;
  GpuTotals gpus;
  for (const v1::NodeSnapshot& n : s.nodes()) {
    ++by_state[n.state()];
    if (n.state() == "running") running.push_back(&n);
    if (n.state() == "silent") silent.push_back(&n);
    GpuTotals g = SumGpus(n);
    gpus.util_pct += g.util_pct * g.count;
    gpus.count += g.count;
    gpus.used_gib += g.used_gib;
    gpus.total_gib += g.total_gib;
  }
  std::vector<std::string> counts;
  for (const auto& [state, count] : by_state) counts.push_back(absl::StrCat(count, " ", state));
  out->push_back(absl::StrCat("nodes: ", absl::StrJoin(counts, ", ")));
  if (gpus.count > 0) {
    out->push_back(absl::StrFormat("GPUs: %d, mean utilisation %.0f%%, memory %.1f/%.1f GiB",
                                   gpus.count, gpus.util_pct / gpus.count, gpus.used_gib,
                                   gpus.total_gib));
  }
  // Slowest first, of the nodes that reported a rate; those that reported none are listed
  // apart (a script that sends no reports is not slow).
  std::vector<const v1::NodeSnapshot*> rated, unreported;
  for (const auto* n : running) (n->has_samples_per_sec() ? rated : unreported).push_back(n);
  std::stable_sort(rated.begin(), rated.end(), [](const auto* a, const auto* b) {
    return a->samples_per_sec() < b->samples_per_sec() ||
           (a->samples_per_sec() == b->samples_per_sec() && a->step() < b->step());
  });
  std::vector<std::string> names;
  for (const auto* n : rated) {
    names.push_back(
        absl::StrFormat("%s %.1f/s step %s", NodeName(*n), n->samples_per_sec(), StepText(*n)));
  }
  if (!names.empty()) out->push_back("slowest: " + NameList(names));
  names.clear();
  for (const auto* n : unreported) names.push_back(NodeName(*n));
  if (!names.empty()) out->push_back("no reports yet: " + NameList(names));
  std::stable_sort(silent.begin(), silent.end(), [](const auto* a, const auto* b) {
    return a->since_heartbeat_s() > b->since_heartbeat_s();
  });
  names.clear();
  for (const auto* n : silent) {
    names.push_back(absl::StrFormat("%s %.1fs", NodeName(*n), n->since_heartbeat_s()));
  }
  if (!names.empty()) out->push_back("silent: " + NameList(names));
  LowestMemoryRow(s, out);
}

}  // namespace

std::string FormatClock(double seconds) {
  long s = std::lround(std::max(0.0, seconds));
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%dh%02dm", s / 3600, (s % 3600) / 60);
}

std::vector<std::string> RenderLiveTable(const v1::JobSnapshot& s, int width, int height) {
  width = std::max(width, 20);
  std::vector<std::string> lines = {JobLine(s)};
  if (s.total_steps() > 0) lines.push_back(ProgressLine(s, width));
  bool gpus = false;
  for (const v1::NodeSnapshot& n : s.nodes()) gpus = gpus || n.gpus_size() > 0;
  const int room = std::max(height / 2, kMinTableLines) - static_cast<int>(lines.size()) - 1;
  if (s.nodes_size() <= std::min(room, kMaxNodeRows)) {
    NodeRows(s, gpus, &lines);
  } else {
    CollapsedRows(s, &lines);
  }
  for (std::string& line : lines) {
    if (static_cast<int>(line.size()) > width) line.resize(width);
  }
  return lines;
}

}  // namespace dlaunch
