#include "launcher/run/collective_check_host.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"

namespace dlaunch {
namespace {

v1::CollectiveCheckResponse Skipped(const std::string& why) {
  v1::CollectiveCheckResponse r;
  r.set_skipped(why);
  return r;
}

}  // namespace

CollectiveCheckHost::CollectiveCheckHost(boost::asio::io_context& io, Config config,
                                         std::function<void(const std::string&)> say)
    : io_(io), config_(std::move(config)), say_(std::move(say)), timer_(io) {}

CollectiveCheckHost::~CollectiveCheckHost() { timer_.cancel(); }

void CollectiveCheckHost::HandleCollectiveCheck(const v1::CollectiveCheckRequest& request,
                                                Reply reply) {
  if (request.reporting()) {
    Report(request, std::move(reply));
  } else {
    Gather(request, std::move(reply));
  }
}

void CollectiveCheckHost::Gather(const v1::CollectiveCheckRequest& request, Reply reply) {
  if (phase_ != Phase::kGathering) {
    reply(Skipped("the check of the other nodes had begun without this node"));
    return;
  }
  // Half the budget for the agents to arrive (they start within seconds of each other), half
  // for the measurement itself.
  if (asked_.empty()) Arm(config_.plan.budget_ms() / 2000.0, &CollectiveCheckHost::CloseGather);
  asked_.push_back({request, std::move(reply)});
  if (static_cast<int>(asked_.size()) >= config_.expected_agents) CloseGather();
}

void CollectiveCheckHost::CloseGather() {
  if (phase_ != Phase::kGathering) return;
  phase_ = Phase::kMeasuring;
  for (const Asked& a : asked_) {
    if (a.request.local_checks_passed()) ring_.push_back(a.request);
  }
  // Host order: the ring's neighbours are the same on every run of the same hosts.
  std::sort(ring_.begin(), ring_.end(), [](const auto& a, const auto& b) {
    return std::tie(a.host(), a.agent_id()) < std::tie(b.host(), b.agent_id());
  });
  for (size_t i = 0; i < ring_.size(); ++i) position_[ring_[i].agent_id()] = static_cast<int>(i);
  const bool alone = ring_.size() < 2;
  std::vector<std::string> engines;
  for (const auto& m : ring_) engines.push_back(m.engine());
  const std::string engine = CommonEngine(engines);
  if (alone) say_(absl::StrCat("collective check: ", ring_.size(),
                               " node(s) passed their own checks: nothing to compare"));
  for (Asked& a : asked_) {
    if (!a.request.local_checks_passed()) {
      a.reply(Skipped("its own checks failed"));
    } else if (alone) {
      a.reply(Skipped("a single node: nothing to compare it with"));
    } else {
      v1::CollectiveCheckResponse r;
      for (const auto& m : ring_) {
        v1::CollectivePeer* peer = r.add_ring();
        peer->set_addr(m.addr());
        peer->set_port(m.port());
        peer->set_host(m.host());
      }
      r.set_index(position_[a.request.agent_id()]);
      r.set_engine(engine);
      a.reply(std::move(r));
    }
  }
  asked_.clear();
  if (alone) {
    phase_ = Phase::kJudged;
    return;
  }
  // The torch engine's measuring includes its program's start (seconds of `import torch`, which
  // began while the nodes gathered): the whole budget; the agents' loop half of it.
  Arm(engine == "tcp" ? config_.plan.budget_ms() / 2000.0 : config_.plan.budget_ms() / 1000.0,
      &CollectiveCheckHost::Judge);
}

void CollectiveCheckHost::Report(const v1::CollectiveCheckRequest& request, Reply reply) {
  if (!position_.count(request.agent_id())) {
    reply(Skipped("this node was not in the check"));
    return;
  }
  if (phase_ == Phase::kJudged) {
    reply(verdict_ ? Verdict(request.agent_id()) : Skipped("the launcher is stopping"));
    return;
  }
  reports_[request.agent_id()] = {request, std::move(reply)};
  if (reports_.size() == ring_.size()) Judge();
}

void CollectiveCheckHost::Judge() {
  if (phase_ != Phase::kMeasuring) return;
  phase_ = Phase::kJudged;
  timer_.cancel();
  std::vector<CollectiveNode> nodes(ring_.size());
  std::map<std::string, int> per_host;
  for (const auto& m : ring_) ++per_host[m.host()];
  for (size_t i = 0; i < ring_.size(); ++i) {
    // Agents that share a host are told apart by their id's pid (host:pid:random).
    nodes[i].host = per_host[ring_[i].host()] == 1
                        ? ring_[i].host()
                        : ring_[i].agent_id().substr(0, ring_[i].agent_id().rfind(':'));
    auto it = reports_.find(ring_[i].agent_id());
    if (it == reports_.end()) continue;
    nodes[i].reported = true;
    nodes[i].figures = it->second.request.report();
  }
  verdict_ = JudgeCollective(nodes, config_.plan.slow_share(), config_.nodes_min,
                             per_host.size() == 1);
  for (const std::string& line : verdict_->lines) say_(line);
  for (auto& [id, asked] : reports_) asked.reply(Verdict(id));
  reports_.clear();
}

v1::CollectiveCheckResponse CollectiveCheckHost::Verdict(const std::string& agent_id) const {
  v1::CollectiveCheckResponse r;
  for (const v1::CheckResult& c : verdict_->checks[position_.at(agent_id)]) *r.add_checks() = c;
  return r;
}

void CollectiveCheckHost::Arm(double seconds, void (CollectiveCheckHost::*then)()) {
  timer_.expires_after(std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)));
  timer_.async_wait([this, then](const boost::system::error_code& ec) {
    if (!ec) (this->*then)();
  });
}

void CollectiveCheckHost::ShutdownCollectiveCheck() {
  timer_.cancel();
  for (Asked& a : asked_) a.reply(Skipped("the launcher is stopping"));
  asked_.clear();
  for (auto& [id, a] : reports_) a.reply(Skipped("the launcher is stopping"));
  reports_.clear();
  phase_ = Phase::kJudged;
  verdict_.reset();
}

}  // namespace dlaunch
