// NodeAgent's sweep of what the workers left behind (agent/workers/orphan_sweeper.h): at each round's
// end before RoundEnded goes up, as the agent exits, and at once when fenced; and the reaping of
// adopted processes that exited on their own, on SIGCHLD.
#include <signal.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "agent/node_agent.h"
#include "common/host_identity.h"

namespace dlaunch {

using std::chrono::milliseconds;

void NodeAgent::SweepOrphans(std::function<void()> then) {
  // The job's grace, at most 2 s: the round's end or the agent's exit waits for it. A fenced
  // agent gives no grace: nothing of this node may run past its lease.
  const milliseconds grace =
      state_->fenced() ? milliseconds(0) : std::min(milliseconds(job_.grace_ms()), milliseconds(2000));
  sweeper_.Sweep(grace, cgroup_.get(), std::move(then));
}

void NodeAgent::WatchAdoptedExits() {
  if (!sigchld_) sigchld_.emplace(io_, SIGCHLD);
  sigchld_->async_wait([this](const boost::system::error_code& ec, int) {
    if (ec) return;
    ReapAdoptedZombies();
    WatchAdoptedExits();
  });
}

void NodeAgent::ReportRoundEnded(int round) {
  // The launcher starts the next round once every node said its round ended: nothing the
  // workers left may run into it.
  SweepOrphans([this, round] {
    v1::AgentMessage msg = Message();
    auto* ended = msg.mutable_round_ended();
    ended->set_round(round);
    ended->set_worker_port(FreePort(options_.addr));
    Log(absl::StrCat("round ", round, " ended; offering port ", ended->worker_port(),
                     " for the next"));
    Send(std::move(msg));
  });
}

}  // namespace dlaunch
