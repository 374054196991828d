#include "agent/agent_state.h"

#include <sys/wait.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/exit_codes.h"

namespace dlaunch {

WorkerOutcome ClassifyWorkerExit(int wait_status, bool stopped, bool stopping) {
  if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0) return WorkerOutcome::kSucceeded;
  if (stopped || stopping) return WorkerOutcome::kStopped;
  return WorkerOutcome::kFailed;
}

AgentState::AgentState(AgentConfig config)
    : interval_(std::max(kMinHeartbeat, config.heartbeat_interval)), grace_(config.grace) {}

std::chrono::milliseconds AgentState::launcher_silence_limit() const {
  return std::max(kLauncherMisses * interval_, kMinLauncherSilence);
}

AgentActions AgentState::OnSessionOpened(Time now) {
  session_open_ = true;
  last_from_launcher_ = now;
  last_tick_ = now;
  return {};
}

AgentActions AgentState::OnWorkersStarted(int started, int failed) {
  AgentActions out;
  workers_started_ = true;
  running_ = started;
  if (failed > 0) {
    // Counts as a failed worker: the launcher stops the job and names the rank.
    failed_ = true;
    Stop("a worker could not start", grace_, &out);
  }
  FinishIfDone(&out);
  return out;
}

AgentActions AgentState::OnWorkerExit(const ChildExit& exit) {
  AgentActions out;
  running_ = std::max(0, running_ - 1);
  WorkerOutcome outcome = ClassifyWorkerExit(exit.wait_status, exit.stopped, stopping_);
  const bool succeeded = outcome == WorkerOutcome::kSucceeded;
  // A worker that ended on its own with an error fails the node, even if it raced a stop.
  if (outcome == WorkerOutcome::kFailed || (!succeeded && !exit.stopped)) failed_ = true;
  // Reports still pending for this rank go up before its exit event.
  out.push_back(FlushReports{});
  out.push_back(SendWorkerExit{exit, outcome});
  FinishIfDone(&out);
  return out;
}

AgentActions AgentState::OnLauncherMessage(Time now) {
  last_from_launcher_ = std::max(last_from_launcher_, now);
  return {};
}

AgentActions AgentState::OnStopCommand(const std::string& reason, std::chrono::milliseconds grace) {
  AgentActions out;
  Stop(absl::StrCat("launcher: ", reason), grace, &out);
  return out;
}

AgentActions AgentState::OnSessionClosed(const std::string& why) {
  AgentActions out;
  if (!session_open_) return out;
  session_open_ = false;
  if (running_ > 0) {
    failed_ = true;
    Stop(absl::StrCat("lost the launcher (", why, ")"), grace_, &out);
  }
  FinishIfDone(&out);
  return out;
}

AgentActions AgentState::OnTick(Time now) {
  AgentActions out;
  if (finished_) return out;
  const bool stalled = now - last_tick_ > 2 * interval_;
  last_tick_ = now;
  if (session_open_ && !stalled && now - last_from_launcher_ > launcher_silence_limit()) {
    auto silent_s = std::chrono::duration_cast<std::chrono::milliseconds>(now - last_from_launcher_);
    out = OnSessionClosed(absl::StrCat("no word from the launcher for ",
                                       static_cast<double>(silent_s.count()) / 1000, " s"));
  }
  if (session_open_) out.push_back(SendHeartbeat{});
  return out;
}

AgentActions AgentState::OnSignal(int sig) {
  AgentActions out;
  ++signals_seen_;
  failed_ = true;
  if (!workers_started_) {
    finished_ = true;
    out.push_back(ExitAgent{kExitJobFailed});
    return out;
  }
  if (signals_seen_ > 1) {
    out.push_back(KillWorkers{});
  } else {
    Stop(absl::StrCat("received signal ", sig), grace_.count() > 0 ? grace_ : kSignalGrace, &out);
  }
  return out;
}

AgentActions AgentState::OnReportConnectionClosed() {
  AgentActions out;
  FinishIfDone(&out);
  return out;
}

AgentActions AgentState::OnReportsDrained() {
  AgentActions out;
  reports_drained_ = true;
  FinishIfDone(&out);
  return out;
}

void AgentState::Stop(const std::string& why, std::chrono::milliseconds grace, AgentActions* out) {
  if (!workers_started_) return;
  const bool first = !stopping_;
  stopping_ = true;
  out->push_back(StopWorkers{grace, why, first});
}

void AgentState::FinishIfDone(AgentActions* out) {
  if (finished_ || !workers_started_ || running_ > 0) return;
  if (!reports_drained_) {
    out->push_back(DrainReports{});
    return;
  }
  finished_ = true;
  out->push_back(FlushReports{});
  out->push_back(ExitAgent{failed_ ? kExitJobFailed : kExitOk});
}

}  // namespace dlaunch
