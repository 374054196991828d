// AgentState: the node agent's decisions, without I/O. Events go in (workers started, a worker
// exited, a launcher message or stop command, a tick at time t, a signal, the session closed,
// the report connections drained); actions come out, which NodeAgent applies in order. Time
// is an argument, so every rule is unit-tested with synthetic times.
#pragma once

#include <chrono>
#include <string>
#include <variant>
#include <vector>

#include "common/child_exit.h"

namespace dlaunch {

// How a worker's exit counts. A worker the agent was stopping is "stopped" whatever its
// status, unless it exited 0.
enum class WorkerOutcome { kSucceeded, kFailed, kStopped };
WorkerOutcome ClassifyWorkerExit(int wait_status, bool stopped, bool stopping);

// SIGTERM every worker's group, SIGKILL after `grace` (0: SIGKILL now).
struct StopWorkers {
  std::chrono::milliseconds grace{0};
  std::string why;
  bool first = false;  // the first stop of this agent (worth a log line)
};
// SIGKILL every worker's group now (a second signal: the user will not wait for the grace).
struct KillWorkers {};
// A heartbeat to the launcher, carrying the reports gathered since the last one.
struct SendHeartbeat {};
// Reports still pending go up now (as a heartbeat), if there are any.
struct FlushReports {};
// The worker's exit event to the launcher.
struct SendWorkerExit {
  ChildExit exit;
  WorkerOutcome outcome = WorkerOutcome::kFailed;
};
// Read what exited workers left in their report connections, then call OnReportsDrained (at
// once when none is open, else when the last closes or after kReportDrainLimit).
struct DrainReports {};
// Close the session and end the event loop with this exit code.
struct ExitAgent {
  int code = 0;
};
using AgentAction =
    std::variant<StopWorkers, KillWorkers, SendHeartbeat, FlushReports, SendWorkerExit,
                 DrainReports, ExitAgent>;
using AgentActions = std::vector<AgentAction>;

struct AgentConfig {
  std::chrono::milliseconds heartbeat_interval{1000};  // from the launcher's JoinResponse
  std::chrono::milliseconds grace{0};                  // SIGTERM -> SIGKILL, from the launcher
};

class AgentState {
 public:
  using Time = std::chrono::steady_clock::time_point;

  // Heartbeats are never more frequent than this, whatever the launcher asks.
  static constexpr std::chrono::milliseconds kMinHeartbeat{50};
  // The launcher is presumed gone after this many heartbeat intervals without a message from it
  // (it pings every interval, or every second when the interval is longer)...
  static constexpr int kLauncherMisses = 3;
  // ...and never sooner than this: on a loaded machine a short interval (tests use 0.25 s) is
  // easily missed three times over, and a false alarm stops a healthy job. A launcher that
  // dies closes the session at once; this watchdog is for one that hangs.
  static constexpr std::chrono::milliseconds kMinLauncherSilence{5000};
  // How long the agent waits for exited workers' report connections before it exits.
  static constexpr std::chrono::milliseconds kReportDrainLimit{2000};
  // Grace for a stop on a signal when the launcher gave none.
  static constexpr std::chrono::milliseconds kSignalGrace{1000};

  explicit AgentState(AgentConfig config);

  // The session with the launcher is open at `now`; the watchdog counts from here.
  AgentActions OnSessionOpened(Time now);
  // StartAll ended: `started` workers run, `failed` could not start (each a failed worker).
  AgentActions OnWorkersStarted(int started, int failed);
  AgentActions OnWorkerExit(const ChildExit& exit);
  // Any message from the launcher (pings included) proves it alive.
  AgentActions OnLauncherMessage(Time now);
  AgentActions OnStopCommand(const std::string& reason, std::chrono::milliseconds grace);
  AgentActions OnSessionClosed(const std::string& why);
  // The heartbeat timer fired at `now`; the next one is due heartbeat_interval() later. A tick
  // that comes more than an interval late means this agent itself was stalled, so it does not
  // judge the launcher's silence: messages that arrived meanwhile are still queued behind it.
  AgentActions OnTick(Time now);
  AgentActions OnSignal(int sig);
  // A report connection closed, or the drain limit passed (OnReportsDrained).
  AgentActions OnReportConnectionClosed();
  AgentActions OnReportsDrained();

  std::chrono::milliseconds heartbeat_interval() const { return interval_; }
  std::chrono::milliseconds launcher_silence_limit() const;
  int workers_running() const { return running_; }
  bool session_open() const { return session_open_; }
  bool stopping() const { return stopping_; }
  bool finished() const { return finished_; }

 private:
  void Stop(const std::string& why, std::chrono::milliseconds grace, AgentActions* out);
  void FinishIfDone(AgentActions* out);

  std::chrono::milliseconds interval_;
  std::chrono::milliseconds grace_;
  bool workers_started_ = false;
  int running_ = 0;
  bool session_open_ = false;
  Time last_from_launcher_{};
  Time last_tick_{};
  bool stopping_ = false;
  bool failed_ = false;
  bool reports_drained_ = false;
  bool finished_ = false;
  int signals_seen_ = 0;
};

}  // namespace dlaunch
