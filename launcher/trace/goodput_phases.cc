#include "launcher/trace/goodput_phases.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "launcher/trace/goodput_split.h"
#include "launcher/trace/journal_events.h"

namespace dlaunch {
namespace {


// One event of a rank, or the begin of an interval of steps it reported.
struct Mark {
  int64_t at_us = 0;
  bool step = false;  // the begin of reported steps, not a phase event
  v1::PhaseEvent event;
};

// Closes each of one rank's phases (its marks in time order).
void CloseRankPhases(int rank, const std::vector<Mark>& marks,
                     const std::vector<int64_t>& round_starts_us, int64_t end_us,
                     std::vector<RankPhase>* out) {
  for (size_t i = 0; i < marks.size(); ++i) {
    if (marks[i].step) continue;
    const v1::PhaseEvent& e = marks[i].event;
    RankPhase p;
    p.rank = rank;
    p.name = e.name();
    p.kind = PhaseKindOf(e.name());
    if (e.end()) {
      p.end_us = marks[i].at_us;
      p.begin_us = p.end_us - GoodputMicros(e.seconds());
      out->push_back(std::move(p));
      continue;
    }
    // A begin whose end comes later (a `with` block) is that end's; one without lasts until
    // whatever the rank did next.
    bool ended = false;
    // A rank that died in the phase ends it with its round at the latest.
    const auto next_round =
        std::upper_bound(round_starts_us.begin(), round_starts_us.end(), marks[i].at_us);
    int64_t next = next_round == round_starts_us.end() ? end_us : std::min(end_us, *next_round);
    for (size_t j = i + 1; j < marks.size(); ++j) {
      const Mark& m = marks[j];
      if (!m.step && m.event.name() == e.name()) {
        ended = m.event.end();
        if (!ended) next = std::min(next, m.at_us);
        break;
      }
      next = std::min(next, m.at_us);
    }
    if (ended) continue;
    p.begin_us = marks[i].at_us;
    p.end_us = std::max(p.begin_us, next);
    out->push_back(std::move(p));
  }
}

}  // namespace

PhaseKind PhaseKindOf(std::string_view name) {
  std::string n;
  for (char c : name) n.push_back(c == '-' || c == ' ' ? '_' : static_cast<char>(std::tolower(c)));
  static const std::set<std::string, std::less<>> kTraining = {"train", "training", "fit"};
  static const std::set<std::string, std::less<>> kEvaluation = {
      "eval", "evaluate", "evaluation", "evaluating", "validation", "validate",
      "val",  "test",     "testing",    "predict"};
  static const std::set<std::string, std::less<>> kCheckpoint = {"checkpoint", "checkpointing",
                                                                 "ckpt", "save", "saving"};
  if (kTraining.count(n)) return PhaseKind::kTraining;
  if (kEvaluation.count(n)) return PhaseKind::kEvaluation;
  if (kCheckpoint.count(n)) return PhaseKind::kCheckpoint;
  return PhaseKind::kOther;
}

std::vector<RankPhase> ReadRankPhases(const std::vector<v1::MetricLine>& metrics,
                                      const std::vector<int64_t>& round_starts_us, int64_t end_us) {
  std::map<int, std::vector<Mark>> marks;  // by rank
  for (const v1::MetricLine& m : metrics) {
    if (!m.has_report()) continue;
    const v1::WorkerReport& r = m.report();
    if (r.step() > 0 && (r.interval_s() > 0 || r.samples() > 0)) {
      // The steps a report covers began its interval before the line's receipt.
      Mark s;
      s.step = true;
      s.at_us = MetricMicros(m) - GoodputMicros(r.interval_s());
      marks[r.rank()].push_back(s);
    }
    for (const v1::PhaseEvent& e : r.phase_log().events()) {
      Mark p;
      p.at_us = GoodputMicros(e.unix_s());
      p.event = e;
      marks[r.rank()].push_back(p);
    }
  }
  // In time order: a folded report's line comes a heartbeat after the phases it holds.
  for (auto& [rank, list] : marks) {
    std::stable_sort(list.begin(), list.end(),
                     [](const Mark& a, const Mark& b) { return a.at_us < b.at_us; });
  }
  std::vector<RankPhase> out;
  for (const auto& [rank, list] : marks) CloseRankPhases(rank, list, round_starts_us, end_us, &out);
  std::stable_sort(out.begin(), out.end(), [](const RankPhase& a, const RankPhase& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.begin_us < b.begin_us;
  });
  return out;
}

std::vector<v1::GoodputPhase> StartupPhases(const std::vector<RankPhase>& phases,
                                            const std::map<int, int64_t>& rank_started_us,
                                            int64_t begin_us, int64_t steps_us) {
  constexpr char kBefore[] = "before the first phase";
  // Per name: per rank the seconds, and when the name first began.
  std::map<std::string, std::map<int, int64_t>> by_name;
  std::map<std::string, int64_t> first_begin;
  std::map<int, int64_t> rank_first;  // each rank's first phase in the start-up
  for (const RankPhase& p : phases) {
    // A phase begun in an earlier round (a rank that died in it) is not this one's start-up.
    if (p.kind == PhaseKind::kTraining || p.begin_us < begin_us) continue;
    const int64_t b = p.begin_us, e = std::min(p.end_us, steps_us);
    if (e <= b) continue;
    by_name[p.name][p.rank] += e - b;
    auto [it, fresh] = first_begin.try_emplace(p.name, b);
    if (!fresh) it->second = std::min(it->second, b);
    auto [rf, rank_fresh] = rank_first.try_emplace(p.rank, b);
    if (!rank_fresh) rf->second = std::min(rf->second, b);
  }
  std::vector<v1::GoodputPhase> out;
  if (by_name.empty()) return out;
  // Before the first phase: the rank's worker started (as the launcher journaled it) to it.
  v1::GoodputPhase before;
  before.set_name(kBefore);
  for (const auto& [rank, first] : rank_first) {
    auto started = rank_started_us.find(rank);
    if (started == rank_started_us.end()) continue;
    const int64_t from = std::max(started->second, begin_us);
    if (first <= from) continue;
    before.set_seconds(std::max(before.seconds(), GoodputSeconds(first - from)));
    before.set_ranks(before.ranks() + 1);
  }
  if (before.ranks() > 0) out.push_back(before);
  std::vector<std::pair<int64_t, std::string>> order;
  for (const auto& [name, at] : first_begin) order.emplace_back(at, name);
  std::sort(order.begin(), order.end());
  for (const auto& [at, name] : order) {
    v1::GoodputPhase g;
    g.set_name(name);
    int64_t most = 0;
    for (const auto& [rank, us] : by_name[name]) most = std::max(most, us);
    g.set_seconds(GoodputSeconds(most));
    g.set_ranks(static_cast<int>(by_name[name].size()));
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace dlaunch
