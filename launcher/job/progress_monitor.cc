#include "launcher/job/progress_monitor.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dlaunch {
namespace {

constexpr size_t kMaxIntervals = 2048;
constexpr double kNever = std::numeric_limits<double>::infinity();

}  // namespace

void ProgressMonitor::StartRound(const std::vector<int>& ranks, double now) {
  running_.clear();
  by_since_[0].clear();
  by_since_[1].clear();
  first_success_at_ = -1;
  for (int r : ranks) {
    running_[r] = RankProgress{now, false, -1};
    Index(r, running_[r]);
  }
}

void ProgressMonitor::Index(int rank, const RankProgress& p) {
  by_since_[p.any_progress].insert({p.since, rank});
}

void ProgressMonitor::Unindex(int rank, const RankProgress& p) {
  by_since_[p.any_progress].erase({p.since, rank});
}

void ProgressMonitor::OnProgress(int rank, long step, double now) {
  auto it = running_.find(rank);
  if (it == running_.end()) return;
  RankProgress& p = it->second;
  // Only steps measure the job's pace; output lines keep a rank alive but are not a cadence.
  if (step >= 0 && p.any_progress && p.last_step >= 0 && step > p.last_step) {
    RecordInterval(now - p.since);
  }
  if (step >= 0 && step < p.last_step) return;   // an old report arriving late is not progress
  Unindex(rank, p);
  p.since = now;
  p.any_progress = true;
  if (step >= 0) p.last_step = step;
  Index(rank, p);
}

void ProgressMonitor::OnExit(int rank, bool succeeded, double now) {
  auto it = running_.find(rank);
  if (it != running_.end()) {
    Unindex(rank, it->second);
    running_.erase(it);
  }
  if (succeeded && first_success_at_ < 0) first_success_at_ = now;
}

void ProgressMonitor::RecordInterval(double seconds) {
  if (seconds < 0) return;
  intervals_.push_back(seconds);
  if (intervals_.size() > kMaxIntervals) intervals_.pop_front();
  // The 99th percentile of up to 2,048 intervals moves little with one more: it is computed
  // again once a 32nd of the window is new, not after every report (at 10,000 agents that was
  // 40,000 selections over 2,048 values a second on the launcher's loop).
  if (++new_intervals_ * 32 >= intervals_.size()) {
    stall_limit_.reset();
    new_intervals_ = 0;
  }
}

double ProgressMonitor::StallLimit() const {
  if (settings_.stall_timeout_s > 0) return settings_.stall_timeout_s;
  if (intervals_.empty()) return settings_.stall_floor_s;
  if (stall_limit_) return *stall_limit_;
  std::vector<double> sorted(intervals_.begin(), intervals_.end());
  size_t idx = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(sorted.size()))) - 1;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<long>(idx), sorted.end());
  stall_limit_ = std::max(settings_.stall_floor_s, settings_.stall_multiple * sorted[idx]);
  return *stall_limit_;
}

Hang ProgressMonitor::Judge(int rank, const RankProgress& p, double now) const {
  Hang h;
  h.rank = rank;
  h.last_step = p.last_step;
  h.limit_s = kNever;
  if (first_success_at_ >= 0 && settings_.exit_timeout_s > 0) {
    h.kind = HangKind::kExitHang;
    h.silent_s = now - first_success_at_;
    h.limit_s = settings_.exit_timeout_s;
    return h;
  }
  if (!settings_.stall_detection) return h;
  h.kind = p.any_progress ? HangKind::kStall : HangKind::kStartup;
  h.silent_s = now - p.since;
  h.limit_s = p.any_progress ? StallLimit() : settings_.startup_timeout_s;
  return h;
}

std::vector<Hang> ProgressMonitor::Check(double now) const {
  std::vector<Hang> out;
  std::map<int, double> since;
  for (const auto& [rank, p] : running_) {
    Hang h = Judge(rank, p, now);
    if (h.silent_s >= h.limit_s) {
      out.push_back(h);
      since[rank] = p.since;
    }
  }
  std::sort(out.begin(), out.end(), [&](const Hang& a, const Hang& b) {
    if (a.last_step != b.last_step) return a.last_step < b.last_step;
    if (since[a.rank] != since[b.rank]) return since[a.rank] < since[b.rank];
    return a.rank < b.rank;
  });
  return out;
}

std::map<int, double> ProgressMonitor::Silences(double now) const {
  std::map<int, double> out;
  for (const auto& [rank, p] : running_) out[rank] = now - p.since;
  return out;
}

double ProgressMonitor::NextDeadline() const {
  if (running_.empty()) return kNever;
  if (first_success_at_ >= 0 && settings_.exit_timeout_s > 0) {
    return first_success_at_ + settings_.exit_timeout_s;
  }
  if (!settings_.stall_detection) return kNever;
  double next = kNever;
  if (!by_since_[0].empty()) next = by_since_[0].begin()->first + settings_.startup_timeout_s;
  if (!by_since_[1].empty()) next = std::min(next, by_since_[1].begin()->first + StallLimit());
  return next;
}

}  // namespace dlaunch
