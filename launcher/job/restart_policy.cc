#include "launcher/job/restart_policy.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace dlaunch {

double RestartPolicy::Backoff() const {
  if (consecutive_ <= 1) return settings_.backoff_initial_s;
  double base = std::max(settings_.backoff_initial_s, 1.0);
  double wait = base * std::pow(settings_.backoff_multiplier, consecutive_ - 1);
  return std::min(wait, settings_.backoff_max_s);
}

RestartDecision RestartPolicy::OnFailure(const Failure& root, long checkpoint_step, double now_s) {
  ++consecutive_;
  const std::string sig = FailureSignature(root);
  bool progressed = checkpoint_step > last_checkpoint_;
  last_checkpoint_ = std::max(last_checkpoint_, checkpoint_step);
  same_in_a_row_ = (sig == last_signature_ && !progressed) ? same_in_a_row_ + 1 : 1;
  last_signature_ = sig;
  if (root.node_id >= 0 && settings_.node_failure_limit > 0 &&
      ++failures_by_node_[root.node_id] >= settings_.node_failure_limit) {
    excluded_.insert(root.node_id);
  }

  RestartDecision d;
  d.excluded = excluded_;
  d.restarts_used = restarts_used_;
  if (restarts_used_ >= settings_.max_restarts) {
    d.reason = settings_.max_restarts == 0
                   ? "no restarts allowed (max_restarts: 0)"
                   : absl::StrCat("restart budget spent (", restarts_used_, " of ",
                                  settings_.max_restarts, " used)");
    return d;
  }
  if (settings_.crash_loop_limit > 0 && same_in_a_row_ >= settings_.crash_loop_limit) {
    d.crash_loop = true;
    d.reason = absl::StrCat("crash loop: the same failure ", same_in_a_row_,
                            " times in a row with no new checkpoint");
    return d;
  }
  ++restarts_used_;
  d.restart = true;
  d.restarts_used = restarts_used_;
  d.restart_at_s = now_s + Backoff();
  d.reason = absl::StrCat("restart ", restarts_used_, " of ", settings_.max_restarts);
  return d;
}

}  // namespace dlaunch
