#include "rendezvous/rendezvous_state.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/host_identity.h"

namespace dlaunch {
namespace {

bool HostMatches(const std::string& entry, const Participant& p) {
  if (entry.empty()) return false;
  std::string e = ShortHostName(entry);
  return e == ShortHostName(p.host) || (!p.addr.empty() && e == ShortHostName(p.addr));
}

std::string FormatSeconds(double s) {
  if (std::floor(s) == s) return absl::StrCat(static_cast<long long>(s));
  return absl::StrCat(s);
}

std::string NeedText(const RendezvousConfig& config) {
  return config.min_nodes == config.max_nodes ? absl::StrCat(config.min_nodes)
                                              : absl::StrCat("at least ", config.min_nodes);
}

}  // namespace

std::vector<std::string> FailedChecks(const std::vector<v1::CheckResult>& checks) {
  std::vector<std::string> reasons;
  for (const v1::CheckResult& c : checks) {
    if (c.verdict() == v1::CheckResult::FAILED) reasons.push_back(c.name() + ": " + c.detail());
  }
  return reasons;
}

SlowestCheck FindSlowestCheck(const std::vector<Participant>& nodes) {
  SlowestCheck slowest;
  for (const Participant& p : nodes) {
    for (const v1::CheckResult& c : p.checks) {
      if (slowest.check == nullptr || c.seconds() > slowest.check->seconds()) slowest = {&p, &c};
    }
  }
  return slowest;
}

const char* RendezvousPhaseName(RendezvousPhase phase) {
  switch (phase) {
    case RendezvousPhase::kWaiting: return "waiting";
    case RendezvousPhase::kLastCall: return "last-call";
    case RendezvousPhase::kClosed: return "closed";
    case RendezvousPhase::kFailed: return "failed";
  }
  return "unknown";
}

RendezvousState::RendezvousState(RendezvousConfig config, double now_s)
    : config_(std::move(config)) {
  // A max below min would make the round unclosable; treat it as "exactly min".
  if (config_.min_nodes < 1) config_.min_nodes = 1;
  if (config_.max_nodes < config_.min_nodes) config_.max_nodes = config_.min_nodes;
  join_deadline_s_ = now_s + config_.join_timeout_s;
}

absl::Status RendezvousState::Join(const Participant& p, double now_s) {
  if (p.agent_id.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("join from host '", p.host, "' has an empty agent_id"));
  }
  if (p.slots < 1) {
    return absl::InvalidArgumentError(absl::StrCat("join from agent ", p.agent_id, " (host ",
                                                   p.host, ") has slots=", p.slots,
                                                   "; a node must run at least 1 process"));
  }
  for (const Participant& q : joined_) {
    if (q.agent_id == p.agent_id) {
      return absl::AlreadyExistsError(absl::StrCat("agent ", p.agent_id, " (host ", p.host,
                                                   ") already joined round ", round_));
    }
  }
  // Time may have run out since the last Poll; a late joiner must see the outcome.
  Poll(now_s);
  if (std::vector<std::string> reasons = UnfitReasons(p); !reasons.empty()) {
    // Counted while the round is open, so the round knows not to wait for this agent.
    if (phase_ == RendezvousPhase::kWaiting || phase_ == RendezvousPhase::kLastCall) {
      unfit_.push_back(p);
      Poll(now_s);
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "host ", p.host, " is left out of the job: its preflight failed: ",
        absl::StrJoin(reasons, "; ")));
  }
  if (phase_ == RendezvousPhase::kClosed) {
    return absl::FailedPreconditionError(
        absl::StrCat("rendezvous round ", round_, " is closed with ", joined(),
                     " nodes; agent ", p.agent_id, " (host ", p.host, ") came too late"));
  }
  if (phase_ == RendezvousPhase::kFailed) {
    return absl::FailedPreconditionError(absl::StrCat(
        "rendezvous round ", round_, " has failed: ", failure_.message()));
  }
  if (joined() >= config_.max_nodes) {
    return absl::FailedPreconditionError(absl::StrCat(
        "rendezvous round ", round_, " is full (max_nodes=", config_.max_nodes, ")"));
  }
  joined_.push_back(p);
  if (joined() >= config_.max_nodes) {
    Close();
    return absl::OkStatus();
  }
  if (joined() == config_.min_nodes && !last_call_deadline_s_) {
    last_call_deadline_s_ = now_s + config_.last_call_s;
    phase_ = RendezvousPhase::kLastCall;
  }
  Poll(now_s);  // a zero last call closes at once
  return absl::OkStatus();
}

void RendezvousState::Leave(const std::string& agent_id, double now_s) {
  if (phase_ != RendezvousPhase::kWaiting && phase_ != RendezvousPhase::kLastCall) return;
  auto it = std::find_if(joined_.begin(), joined_.end(),
                         [&](const Participant& q) { return q.agent_id == agent_id; });
  if (it == joined_.end()) return;
  joined_.erase(it);
  if (joined() < config_.min_nodes) {
    // The last call was granted for a quorum that no longer exists.
    last_call_deadline_s_.reset();
    phase_ = RendezvousPhase::kWaiting;
  }
  Poll(now_s);
}

RendezvousPhase RendezvousState::Poll(double now_s) {
  if (phase_ == RendezvousPhase::kClosed || phase_ == RendezvousPhase::kFailed) return phase_;
  bool quorum = joined() >= config_.min_nodes;
  const bool all_answered = config_.expected_agents > 0 &&
                            joined() + static_cast<int>(unfit_.size()) >= config_.expected_agents;
  if (all_answered && !unfit_.empty()) {
    // Nobody else is coming: no last call to wait out.
    if (quorum) {
      Close();
    } else {
      FailUnfit();
    }
  } else if (quorum && last_call_deadline_s_ && now_s >= *last_call_deadline_s_) {
    Close();
  } else if (now_s >= join_deadline_s_) {
    // With a quorum the join deadline closes what there is; without one the round fails.
    if (quorum) {
      Close();
    } else {
      Fail(now_s);
    }
  }
  return phase_;
}

std::optional<double> RendezvousState::NextDeadline() const {
  if (phase_ == RendezvousPhase::kClosed || phase_ == RendezvousPhase::kFailed) {
    return std::nullopt;
  }
  if (last_call_deadline_s_) return std::min(*last_call_deadline_s_, join_deadline_s_);
  return join_deadline_s_;
}

const RoundResult* RendezvousState::result() const {
  return result_ ? &*result_ : nullptr;
}

const NodeAssignment* RendezvousState::AssignmentFor(const std::string& agent_id) const {
  if (!result_) return nullptr;
  for (size_t i = 0; i < result_->nodes.size(); ++i) {
    if (result_->nodes[i].agent_id == agent_id) return &result_->assignments[i];
  }
  return nullptr;
}

std::vector<Participant> RendezvousState::RankOrder() const {
  // Each joiner (in join order) claims the first unclaimed host_order position naming its
  // host, so N agents of one host fill N repeated entries in the order they joined.
  std::vector<bool> claimed(config_.host_order.size(), false);
  std::vector<std::pair<std::pair<int, size_t>, size_t>> keyed;  // ((listed?, pos), index)
  for (size_t i = 0; i < joined_.size(); ++i) {
    std::pair<int, size_t> key{1, i};
    for (size_t pos = 0; pos < config_.host_order.size(); ++pos) {
      if (!claimed[pos] && HostMatches(config_.host_order[pos], joined_[i])) {
        claimed[pos] = true;
        key = {0, pos};
        break;
      }
    }
    keyed.push_back({key, i});
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<Participant> ordered;
  ordered.reserve(keyed.size());
  for (const auto& k : keyed) ordered.push_back(joined_[k.second]);
  return ordered;
}

std::vector<std::string> RendezvousState::MissingHosts() const {
  // Same matching as RankOrder, counted per distinct host in first-listed order.
  // Nodes left out by their preflight did arrive: they are named with their reasons instead.
  std::vector<bool> claimed(config_.host_order.size(), false);
  for (const auto* group : {&joined_, &unfit_}) {
    for (const Participant& p : *group) {
      for (size_t pos = 0; pos < config_.host_order.size(); ++pos) {
        if (!claimed[pos] && HostMatches(config_.host_order[pos], p)) {
          claimed[pos] = true;
          break;
        }
      }
    }
  }
  std::vector<std::string> names;
  std::map<std::string, std::pair<int, int>> counts;  // host -> (expected, missing)
  for (size_t pos = 0; pos < config_.host_order.size(); ++pos) {
    const std::string& h = config_.host_order[pos];
    auto [it, inserted] = counts.emplace(h, std::make_pair(0, 0));
    if (inserted) names.push_back(h);
    ++it->second.first;
    if (!claimed[pos]) ++it->second.second;
  }
  std::vector<std::string> missing;
  for (const std::string& h : names) {
    auto [expected, absent] = counts[h];
    if (absent == 0) continue;
    if (expected == 1) {
      missing.push_back(h);
    } else {
      missing.push_back(absl::StrCat(h, " (", absent, " of ", expected, " agents)"));
    }
  }
  return missing;
}

RoundResult AssignRound(int round, std::vector<Participant> nodes, int master_port) {
  RoundResult r;
  r.round = round;
  r.nodes = std::move(nodes);
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    r.assignments.push_back({static_cast<int>(i), r.world_size, r.nodes[i].slots});
    r.world_size += r.nodes[i].slots;
  }
  if (!r.nodes.empty()) {
    r.master_addr = r.nodes[0].addr.empty() ? r.nodes[0].host : r.nodes[0].addr;
    r.master_port = master_port != 0 ? master_port : r.nodes[0].worker_port;
  }
  return r;
}

void RendezvousState::Close() {
  result_ = AssignRound(round_, RankOrder(), config_.master_port);
  phase_ = RendezvousPhase::kClosed;
  last_call_deadline_s_.reset();
}

std::string RendezvousState::UnfitLines() const {
  if (unfit_.empty()) return "";
  std::string lines = "; left out by their preflight:";
  for (const Participant& p : unfit_) {
    absl::StrAppend(&lines, "\n  ", p.host, ": ", absl::StrJoin(UnfitReasons(p), "; "));
  }
  return lines;
}

void RendezvousState::FailUnfit() {
  failure_ = absl::FailedPreconditionError(absl::StrCat(
      "preflight: ", joined(), " fit node(s) of ", NeedText(config_), " needed; no worker was started",
      UnfitLines()));
  phase_ = RendezvousPhase::kFailed;
  last_call_deadline_s_.reset();
}

void RendezvousState::Fail(double now_s) {
  std::string msg = absl::StrCat("rendezvous timed out after ",
                                 FormatSeconds(config_.join_timeout_s), " s: ", joined(), " of ",
                                 NeedText(config_), " nodes joined");
  std::vector<std::string> missing = MissingHosts();
  if (!missing.empty()) {
    absl::StrAppend(&msg, "; never arrived: ", absl::StrJoin(missing, ", "));
  } else {
    absl::StrAppend(&msg, "; ", config_.min_nodes - joined(), " more needed");
  }
  absl::StrAppend(&msg, UnfitLines());
  failure_ = absl::DeadlineExceededError(msg);
  phase_ = RendezvousPhase::kFailed;
  last_call_deadline_s_.reset();
}

}  // namespace dlaunch
