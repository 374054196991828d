// LineBudget: at most so many lines of the workers' output are printed per second of the job's
// clock; the rest are counted, and the count is said once that second is over. A worker that
// floods its output (or ten thousand that all talk) then costs the launcher a counter, not a
// terminal write per line, and its event loop keeps up with the heartbeats. The ranks' own logs
// on their nodes keep every line.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"

namespace dlaunch {

class LineBudget {
 public:
  explicit LineBudget(int64_t per_s) : per_s_(per_s) {}

  // How many of `n` lines offered at `now_s` may be printed.
  int64_t Take(int64_t n, double now_s) {
    Roll(now_s);
    const int64_t allowed = std::max<int64_t>(0, std::min(n, per_s_ - used_));
    used_ += allowed;
    total_held_ += n - allowed;
    return allowed;
  }

  // The line about the lines held back and not yet said, at most once a second (`force`: now,
  // at the job's end); empty when there is nothing to say.
  std::string Note(double now_s, bool force = false) {
    const int64_t n = total_held_ - held_said_;
    if (n == 0 || (!force && now_s < noted_s_ + 1)) return "";
    noted_s_ = now_s;
    held_said_ = total_held_;
    return absl::StrCat("[dlaunch] ", n, " line(s) of the workers' output not shown (more than ",
                        per_s_, " a second; ", total_held_,
                        " in all): the ranks' logs on their nodes keep them");
  }

  int64_t held_back() const { return total_held_; }

 private:
  void Roll(double now_s) {
    if (window_s_ >= 0 && now_s < window_s_ + 1) return;
    window_s_ = now_s;
    used_ = 0;
  }

  const int64_t per_s_;
  double window_s_ = -1;  // start of the current second
  int64_t used_ = 0;      // printed in it
  int64_t total_held_ = 0;
  int64_t held_said_ = 0;  // of total_held_, already said
  double noted_s_ = -1e9;  // when the last note was made
};

}  // namespace dlaunch
