// LiveTracker: the live view's model of a running job, built from the calls the control
// service hands the job controller (places, sessions, heartbeats, worker events), and turned
// into a v1::JobSnapshot for the terminal table and for `dlaunch watch`. Pure: time comes in as
// seconds since the job started, so the states and the ETA are unit-tested without clocks.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dlaunch/control.pb.h"

namespace dlaunch {

class LiveTracker {
 public:
  LiveTracker(std::string job_id, int nodes_expected);

  // An agent got its place (or was made a spare) in the job.
  void OnJoined(const std::string& host, const v1::JoinResponse& place);
  void OnSessionOpened(int node, double now_s);
  void OnAgentMessage(int node, const v1::AgentMessage& message, double now_s);
  void OnSessionEnded(int node);
  // The job is over: the next snapshots say so, with dlaunch's exit code.
  void OnEnded(int exit_code);

  v1::JobSnapshot Snapshot(double now_s) const;

 private:
  struct Node {
    std::string host;
    int slots = 0;
    bool spare = false;
    bool session_open = false;
    bool session_ended = false;
    std::optional<double> last_heartbeat_s;
    int workers_running = 0;
    std::vector<v1::GpuSample> gpus;
  };
  struct Rank {
    int node = -1;
    v1::WorkerEvent::State state = v1::WorkerEvent::STATE_UNSPECIFIED;
    int64_t step = 0;
    int64_t samples = 0;
    double recent_rate = 0;
  };
  std::string NodeState(int id, const Node& node, double now_s) const;
  void NoteStep(int64_t step, double now_s);

  const std::string job_id_;
  const int nodes_expected_;
  int world_size_ = 0;
  double silent_after_s_ = 4;  // LivenessPolicy::silent_after() of the job
  std::map<int, Node> nodes_;  // by node id
  std::map<int, Rank> ranks_;  // by global rank
  int64_t total_steps_ = 0;
  // The job's highest step when first seen above 0, and now: the step rate behind the ETA.
  std::optional<std::pair<double, int64_t>> first_step_;
  std::pair<double, int64_t> last_step_{0, 0};
  std::optional<int> exit_code_;
};

}  // namespace dlaunch
