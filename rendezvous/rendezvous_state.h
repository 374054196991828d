// RendezvousState: the pure state machine of one job's rendezvous (torchelastic style).
// Agents join; the round closes when max_nodes have joined, or when min_nodes have joined
// and the last-call window has passed; it fails when the join deadline passes first. Closing
// assigns node ranks in a deterministic order (the allocation's host order, then join order).
//
// No clocks, threads or sockets: every operation takes the current time, and NextDeadline()
// tells the owner (the launcher's RendezvousHost) when to call Poll() again. Not thread-safe;
// the owner serialises calls (on its event loop).
#pragma once

#include <optional>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "dlaunch/report.pb.h"

namespace dlaunch {

// One agent that asked to join.
struct Participant {
  std::string agent_id;  // unique per agent process
  std::string host;      // hostname, matched against RendezvousConfig::host_order
  std::string addr;      // address other nodes reach this node at
  int slots = 1;         // worker processes this node will run
  int worker_port = 0;   // free TCP port on this node; node 0's may become MASTER_PORT
  // Its node's preflight (docs/preflight.md); a failed check leaves the node out of the job.
  std::vector<v1::CheckResult> checks;
  // The Join call that brought it (the launcher's count of Join calls; 0: not told). An agent
  // whose call through a relay broke joins again on a new call; the old one's cancel, arriving
  // later, must not take the new one out.
  uint64_t join_call = 0;
};

// "check: detail" for each failed check; empty when the node is fit for the job.
std::vector<std::string> FailedChecks(const std::vector<v1::CheckResult>& checks);
inline std::vector<std::string> UnfitReasons(const Participant& p) { return FailedChecks(p.checks); }

// The check that took longest of all `nodes`' checks, with its node; nulls when there is none.
struct SlowestCheck {
  const Participant* node = nullptr;
  const v1::CheckResult* check = nullptr;
};
SlowestCheck FindSlowestCheck(const std::vector<Participant>& nodes);

struct RendezvousConfig {
  int min_nodes = 1;
  int max_nodes = 1;
  // Node ranks follow this order (nodefile / host list order). A host may appear several
  // times (local runs start N agents on one host); repeated names match that host's joiners
  // in join order. Hosts not listed come after all listed ones, in join order.
  std::vector<std::string> host_order;
  double join_timeout_s = 300;  // from the start of the round
  double last_call_s = 10;      // extra wait for more nodes once min_nodes have joined
  int master_port = 0;          // 0 = node 0's worker_port
  // Agents started (nodes plus spares); 0 = unknown. Once every one of them has answered,
  // fit or left out by its preflight, the round does not wait for more: it closes with a
  // quorum, or fails naming each node that was left out.
  int expected_agents = 0;
};

// One node's place in a closed round.
struct NodeAssignment {
  int node_rank = 0;
  int rank_offset = 0;       // global rank of this node's local rank 0
  int local_world_size = 0;  // = the node's slots
};

struct RoundResult {
  int round = 0;
  std::vector<Participant> nodes;            // in node-rank order
  std::vector<NodeAssignment> assignments;   // parallel to nodes
  int world_size = 0;
  std::string master_addr;
  int master_port = 0;
};

// One round's places, the one rule for every round: node ranks in the order of `nodes`, global
// ranks by their slots, node 0's address (its host when it has none) as MASTER_ADDR and
// `master_port` as MASTER_PORT, or node 0's worker_port when it is 0.
RoundResult AssignRound(int round, std::vector<Participant> nodes, int master_port);

enum class RendezvousPhase { kWaiting, kLastCall, kClosed, kFailed };

// Printable name of a phase ("waiting", "last-call", "closed", "failed").
const char* RendezvousPhaseName(RendezvousPhase phase);

class RendezvousState {
 public:
  RendezvousState(RendezvousConfig config, double now_s);

  // Adds a participant. AlreadyExists for a duplicate agent_id; FailedPrecondition when the
  // round is closed, failed or full, or when the participant's node failed its preflight (it
  // is then counted as left out); InvalidArgument for slots < 1 or an empty agent_id.
  // Joining may close the round at once (the max_nodes-th joiner, or the last agent expected).
  absl::Status Join(const Participant& p, double now_s);

  // A joined agent went away before the round closed (its connection dropped). Unknown ids
  // and calls after close are ignored: a closed round is the job's business, not ours.
  void Leave(const std::string& agent_id, double now_s);

  // Advances time: closes the round when the last call expired with min_nodes joined,
  // fails it when the join deadline passed first. Returns the phase after advancing.
  RendezvousPhase Poll(double now_s);

  // When Poll should next be called (last-call end or join deadline); nullopt once
  // closed or failed.
  std::optional<double> NextDeadline() const;

  RendezvousPhase phase() const { return phase_; }
  // Set once closed, else nullptr.
  const RoundResult* result() const;
  // OK unless failed; then DeadlineExceeded, e.g. "rendezvous timed out after 300 s: 2 of
  // 3 nodes joined; never arrived: nodeC".
  absl::Status failure() const { return failure_; }
  // This agent's place once closed; nullptr if not closed or not a member of the round.
  const NodeAssignment* AssignmentFor(const std::string& agent_id) const;

  int round() const { return round_; }
  int joined() const { return static_cast<int>(joined_.size()); }
  // Agents whose node failed its preflight, in the order they answered.
  const std::vector<Participant>& unfit() const { return unfit_; }
  const std::vector<Participant>& participants() const { return joined_; }
  const RendezvousConfig& config() const { return config_; }

 private:
  void Close();
  void Fail(double now_s);
  // Every expected agent answered and too few are fit.
  void FailUnfit();
  // "; left out by their preflight:" and one line per unfit node; "" when none.
  std::string UnfitLines() const;
  // Participants in node-rank order.
  std::vector<Participant> RankOrder() const;
  std::vector<std::string> MissingHosts() const;

  RendezvousConfig config_;
  int round_ = 0;
  RendezvousPhase phase_ = RendezvousPhase::kWaiting;
  double join_deadline_s_ = 0;
  std::optional<double> last_call_deadline_s_;
  std::vector<Participant> joined_;  // in join order
  std::vector<Participant> unfit_;
  std::optional<RoundResult> result_;
  absl::Status failure_;
};

}  // namespace dlaunch
