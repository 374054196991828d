#include "launcher/run/progress_monitor.h"

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
  first_success_at_ = -1;
  for (int r : ranks) running_[r] = RankProgress{now, false, -1};
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
  p.since = now;
  p.any_progress = true;
  if (step >= 0) p.last_step = step;
}

void ProgressMonitor::OnExit(int rank, bool succeeded, double now) {
  running_.erase(rank);
  if (succeeded && first_success_at_ < 0) first_success_at_ = now;
}

void ProgressMonitor::RecordInterval(double seconds) {
  if (seconds < 0) return;
  intervals_.push_back(seconds);
  if (intervals_.size() > kMaxIntervals) intervals_.pop_front();
}

double ProgressMonitor::StallLimit() const {
  if (settings_.stall_timeout_s > 0) return settings_.stall_timeout_s;
  if (intervals_.empty()) return settings_.stall_floor_s;
  std::vector<double> sorted(intervals_.begin(), intervals_.end());
  size_t idx = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(sorted.size()))) - 1;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<long>(idx), sorted.end());
  return std::max(settings_.stall_floor_s, settings_.stall_multiple * sorted[idx]);
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

double ProgressMonitor::NextDeadline() const {
  double next = kNever;
  for (const auto& [rank, p] : running_) {
    Hang h = Judge(rank, p, 0);
    if (h.limit_s == kNever) continue;
    double start = h.kind == HangKind::kExitHang ? first_success_at_ : p.since;
    next = std::min(next, start + h.limit_s);
  }
  return next;
}

}  // namespace dlaunch
