// CollectiveCheckHost: the launcher's side of the collective check before round 0
// (docs/stragglers.md). On the event loop, it answers each agent's two CollectiveCheck calls:
// the first once every agent the job started has asked (or half the budget has passed since
// the first asked) with the ring of the nodes that passed their own checks, the second once
// every node of the ring reported its figures (or the budget has passed) with the node's link
// and compute verdicts (collective_verdict.h). The agents then join with those verdicts, so a
// slow node takes the path of any node that failed its preflight. No thread waits.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio.hpp>

#include "dlaunch/control.pb.h"
#include "launcher/control/control_handler.h"
#include "launcher/job/collective_verdict.h"

namespace dlaunch {

class CollectiveCheckHost final : public CollectiveCheckHandler {
 public:
  using Reply = std::function<void(v1::CollectiveCheckResponse)>;
  struct Config {
    v1::CollectivePlan plan;
    int expected_agents = 0;  // every agent the job started (nodes and spares)
    int nodes_min = 1;        // the slow nodes are left out only if this many others remain
  };
  // `say` prints a line for the terminal (the medians, each slow node).
  CollectiveCheckHost(boost::asio::io_context& io, Config config,
                      std::function<void(const std::string&)> say);
  ~CollectiveCheckHost() override;

  void HandleCollectiveCheck(const v1::CollectiveCheckRequest& request, Reply reply) override;
  // Answers every waiting call (skipped: the launcher is stopping).
  void ShutdownCollectiveCheck() override;

 private:
  struct Asked {
    v1::CollectiveCheckRequest request;
    Reply reply;
  };
  void Gather(const v1::CollectiveCheckRequest& request, Reply reply);
  void Report(const v1::CollectiveCheckRequest& request, Reply reply);
  // Ends the first call: answers every agent that asked with the ring or why it is skipped.
  void CloseGather();
  // Ends the second: the verdicts, for the reports waiting and any that come later.
  void Judge();
  void Arm(double seconds, void (CollectiveCheckHost::*then)());
  v1::CollectiveCheckResponse Verdict(const std::string& agent_id) const;

  boost::asio::io_context& io_;
  Config config_;
  std::function<void(const std::string&)> say_;
  boost::asio::steady_timer timer_;
  enum class Phase { kGathering, kMeasuring, kJudged } phase_ = Phase::kGathering;
  std::vector<Asked> asked_;                      // first calls, in arrival order
  std::vector<v1::CollectiveCheckRequest> ring_;  // the nodes checked, in ring order
  std::map<std::string, int> position_;           // agent id -> place in ring_
  std::map<std::string, Asked> reports_;          // second calls, by agent id
  std::optional<CollectiveVerdict> verdict_;
};

}  // namespace dlaunch
