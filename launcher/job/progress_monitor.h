// Notices ranks that are alive but make no progress: a stall (a rank stopped, a collective that
// never returns, a deadlock) and a hang at exit (a rank still running long after another exited
// 0, as Gloo teardown can do at interpreter exit). Progress is a worker report; for a script that
// sends none, a new output line. Pure: times are passed in, nothing is read or slept.
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace dlaunch {

struct ProgressSettings {
  // Longest silence allowed once a rank has made progress. <= 0: adaptive, the larger of
  // `stall_floor_s` and `stall_multiple` x the job's p99 interval between progress events.
  double stall_timeout_s = 0;
  double stall_floor_s = 60;
  double stall_multiple = 5;
  // Allowance before a rank's first progress event (imports, data loading, compilation).
  double startup_timeout_s = 600;
  // How long the other ranks may run on after one rank exited 0. <= 0: never a hang.
  double exit_timeout_s = 30;
  bool stall_detection = true;
};

enum class HangKind { kStartup, kStall, kExitHang };

struct Hang {
  int rank = -1;
  HangKind kind = HangKind::kStall;
  double silent_s = 0;     // since its last progress (or since the round began / a peer's exit)
  double limit_s = 0;
  long last_step = -1;     // the newest step it reported, -1 if none
};

class ProgressMonitor {
 public:
  explicit ProgressMonitor(ProgressSettings settings) : settings_(settings) {}

  // A new round: these ranks are running from `now` and nothing is known about them yet. The
  // adaptive interval statistics are kept across rounds (the job's pace does not change).
  void StartRound(const std::vector<int>& ranks, double now);
  // A report (step >= 0) or an output line (step < 0) from `rank`.
  void OnProgress(int rank, long step, double now);
  // `rank` ended; an exit code of 0 starts the exit-hang clock for the others.
  void OnExit(int rank, bool succeeded, double now);

  // Ranks over their limit at `now`, the one that fell behind first (lowest step, then oldest
  // progress) first: in a stalled collective every rank goes silent, and the one that stopped
  // reporting first is the likely cause.
  std::vector<Hang> Check(double now) const;
  // The earliest time at which Check could report something new (for arming a timer); a large
  // value when nothing is running. O(log ranks): the launcher asks after every heartbeat.
  double NextDeadline() const;
  // Every running rank's silence at `now`: seconds since its last progress (or its round's
  // start).
  std::map<int, double> Silences(double now) const;
  // The silence limit a rank that has made progress gets now.
  double StallLimit() const;

 private:
  struct RankProgress {
    double since = 0;        // last progress, or the round's start
    bool any_progress = false;
    long last_step = -1;
  };
  void RecordInterval(double seconds);
  Hang Judge(int rank, const RankProgress& p, double now) const;
  // Keeps `by_since_` in step with a rank's entry.
  void Index(int rank, const RankProgress& p);
  void Unindex(int rank, const RankProgress& p);

  ProgressSettings settings_;
  std::map<int, RankProgress> running_;
  // The running ranks by their last progress, apart for those with and without any: the oldest
  // of each sets the next deadline.
  std::set<std::pair<double, int>> by_since_[2];
  double first_success_at_ = -1;
  std::deque<double> intervals_;   // recent intervals between progress events, all ranks
  mutable std::optional<double> stall_limit_;  // StallLimit() until a 32nd of the window is new
  size_t new_intervals_ = 0;                   // intervals recorded since it was computed
};

}  // namespace dlaunch
