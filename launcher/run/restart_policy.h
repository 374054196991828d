// Whether a failed job gets another round, when, and without which nodes: the job-wide restart
// budget (`max_restarts`), back-off between rounds, crash-loop detection (the same root cause
// again with no newer checkpoint), and exclusion of a node that failed twice. Pure.
#pragma once

#include <map>
#include <set>
#include <string>

#include "launcher/run/failure.h"

namespace dlaunch {

struct RestartSettings {
  int max_restarts = 0;
  double backoff_initial_s = 0;    // wait before the first restart
  double backoff_max_s = 30;       // the wait doubles per consecutive failure, up to this
  double backoff_multiplier = 2;
  int crash_loop_limit = 3;        // the same root cause this many times with no new checkpoint
  int node_failure_limit = 2;      // a node that caused this many failures is excluded
};

struct RestartDecision {
  bool restart = false;
  double restart_at_s = 0;          // when the next round may start (back-off)
  std::string reason;               // why not, or "restart 2 of 3"
  std::set<std::string> excluded;   // hosts never to be used again (cumulative)
  int restarts_used = 0;
};

class RestartPolicy {
 public:
  explicit RestartPolicy(RestartSettings settings) : settings_(settings) {}

  // The root cause of a failed round, and the newest complete checkpoint step known (-1: none,
  // or the job does not checkpoint). `now_s` on the launcher's clock.
  RestartDecision OnFailure(const Failure& root, long checkpoint_step, double now_s);
  // A round ran long enough to count as healthy: the back-off starts over.
  void OnHealthyRound() { consecutive_ = 0; }

  int restarts_used() const { return restarts_used_; }
  const std::set<std::string>& excluded() const { return excluded_; }

 private:
  double Backoff() const;

  RestartSettings settings_;
  int restarts_used_ = 0;
  int consecutive_ = 0;
  std::string last_signature_;
  int same_in_a_row_ = 0;
  long last_checkpoint_ = -1;
  std::map<std::string, int> failures_by_host_;
  std::set<std::string> excluded_;
};

}  // namespace dlaunch
