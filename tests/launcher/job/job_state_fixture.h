// Shared by JobState's unit tests (job_state_test.cc, job_state_faults_test.cc): a round of
// `nodes` x `slots`, agent messages, and the fixture that starts a job at synthetic times.
#pragma once

#include <signal.h>

#include <memory>
#include <string>
#include <vector>

#include "launcher/job/job_state.h"
#include "tests/testing/job_actions.h"

namespace dlaunch::job_state_testing {

// `nodes` nodes with `slots` ranks each, node i at host n<i>.
inline RoundResult Round(int nodes, int slots) {
  RoundResult r;
  for (int i = 0; i < nodes; ++i) {
    Participant p;
    p.agent_id = "a" + std::to_string(i);
    p.host = "n" + std::to_string(i);
    p.addr = "10.0.0." + std::to_string(i);
    p.slots = slots;
    r.nodes.push_back(p);
    r.assignments.push_back({i, i * slots, slots});
  }
  r.world_size = nodes * slots;
  r.master_addr = "10.0.0.0";
  r.master_port = 29500;
  return r;
}

inline v1::AgentMessage Worker(int rank, v1::WorkerEvent::State state, int exit_code = 0, int sig = 0) {
  v1::AgentMessage m;
  m.mutable_worker()->set_rank(rank);
  m.mutable_worker()->set_state(state);
  m.mutable_worker()->set_exit_code(exit_code);
  m.mutable_worker()->set_signal(sig);
  return m;
}

inline v1::AgentMessage Heartbeat(int running) {
  v1::AgentMessage m;
  m.mutable_heartbeat()->set_workers_running(running);
  return m;
}

constexpr int kExited0 = 0;           // wait status of exit(0)
constexpr int kExited1 = 1 << 8;      // exit(1)
constexpr int kKilled = SIGKILL;      // killed by SIGKILL

// A job of `nodes` x `slots`, its launchers started at t=0, the round closed and every
// session open at t=1.
class JobStateTest : public ::testing::Test {
 protected:
  void Begin(int nodes, int slots) {
    nodes_ = nodes;
    state_ = std::make_unique<JobState>(TestJobConfig(nodes));
    std::vector<std::string> programs(nodes, "dlaunch-agent");
    state_->OnStarted(programs, 0);
    state_->OnRendezvousClosed(Round(nodes, slots), 1);
    for (int i = 0; i < nodes; ++i) state_->OnSessionOpened(i, 100 + i, 1);
  }
  // Every session ends and every launcher exits 0, from t.
  JobActions EndAll(double t) {
    JobActions out;
    for (int i = 0; i < nodes_; ++i) {
      auto a = state_->OnSessionEnded(i, 100 + i, t);
      out.insert(out.end(), a.begin(), a.end());
    }
    for (int i = 0; i < nodes_; ++i) {
      auto a = state_->OnLauncherExited(i, kExited0, {}, t);
      out.insert(out.end(), a.begin(), a.end());
    }
    return out;
  }
  int nodes_ = 0;
  std::unique_ptr<JobState> state_;
};

// The job's summary in `actions` (empty when they write none).
inline v1::JobSummary SummaryOf(const JobActions& actions) {
  auto s = All<WriteSummary>(actions);
  return s.empty() ? v1::JobSummary() : s.back().summary;
}

inline v1::AgentMessage Progress(int rank, int64_t step) {
  v1::AgentMessage m = Heartbeat(1);
  v1::WorkerReport* r = m.mutable_heartbeat()->add_reports();
  r->set_rank(rank);
  r->set_step(step);
  return m;
}

}  // namespace dlaunch::job_state_testing
