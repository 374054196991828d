// Whether a failed round gets a successor, when, and without which nodes: the job-wide restart
// budget (`max_restarts`), back-off between rounds, crash-loop detection (the same root cause
// again with no newer checkpoint), and exclusion of a node that failed too often. Nodes are
// named by their stable node id, not their host: a local run has several agents on one host.
// Pure: times come in as seconds on the launcher's clock.
#pragma once

#include <map>
#include <set>
#include <string>

#include "launcher/job/failure.h"

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
  bool crash_loop = false;
  double restart_at_s = 0;   // when the next round may start (back-off)
  std::string reason;        // why not, or "restart 2 of 3"
  std::set<int> excluded;    // node ids never to be used again (cumulative)
  int restarts_used = 0;
};

class RestartPolicy {
 public:
  explicit RestartPolicy(RestartSettings settings) : settings_(settings) {}

  // The root cause of a failed round (its node_id names the node to blame, -1: none), and the
  // newest complete checkpoint step known (-1: none, or the job does not checkpoint).
  RestartDecision OnFailure(const Failure& root, long checkpoint_step, double now_s);
  // A round ran long enough to count as healthy: the back-off starts over.
  void OnHealthyRound() { consecutive_ = 0; }

  int restarts_used() const { return restarts_used_; }
  const RestartSettings& settings() const { return settings_; }
  const std::set<int>& excluded() const { return excluded_; }

 private:
  double Backoff() const;

  RestartSettings settings_;
  int restarts_used_ = 0;
  int consecutive_ = 0;
  std::string last_signature_;
  int same_in_a_row_ = 0;
  long last_checkpoint_ = -1;
  std::map<int, int> failures_by_node_;
  std::set<int> excluded_;
};

}  // namespace dlaunch
