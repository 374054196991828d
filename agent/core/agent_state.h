// AgentState: the node agent's decisions, without I/O. Events go in (a round to start, its
// workers started, a worker exited, a launcher message, a stop command, a tick at time t, a
// signal, the session closed, the report connections drained); actions come out, which NodeAgent
// applies in order. Time is an argument, so every rule is unit-tested with synthetic times.
//
// The agent lives across restart rounds (docs/restarts.md): it runs round r's workers, reports
// RoundEnded once they all ended, and waits for the next round's StartRound or a stop with exit.
// It exits on its own only when no next round can come (max_restarts == 0 and not a spare: once
// its workers ended), on a broken session, when fenced (the launcher silent past its lease), or
// on a signal.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/child_exit.h"
#include "common/liveness_policy.h"

namespace dlaunch {

// How a worker's exit counts. A worker the agent was stopping is "stopped" whatever its
// status, unless it exited 0.
enum class WorkerOutcome { kSucceeded, kFailed, kStopped };
WorkerOutcome ClassifyWorkerExit(int wait_status, bool stopped, bool stopping);

// Start the workers of `round` from the place that came with it (the JoinResponse for the first
// round, StartRound's place after that); then call OnWorkersStarted.
struct StartWorkers {
  int round = 0;
};
// Call OnHeldStartDue(round) once `delay` has passed: the round's StartRound came ahead of the
// time its workers may start (StartRound.start_after_ms).
struct HoldStart {
  int round = 0;
  std::chrono::milliseconds delay{0};
};
// SIGTERM every worker's group, SIGKILL after `grace` (0: SIGKILL now).
struct StopWorkers {
  std::chrono::milliseconds grace{0};
  std::string why;
  bool first = false;  // the first stop of this round (worth a log line)
  // Fenced: SIGKILL now to the workers and to every process they left to the agent (adopted,
  // or in the job's cgroup), with no grace for anything.
  bool fenced = false;
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
// Record the stacks of `ranks` (those of this node's workers; each at most once a round) in
// the job directory, within `budget`, then call OnStacksDumped. Runs beside the loop: the
// heartbeats go on meanwhile, and the stop the launcher asked for waits for it.
struct DumpStacks {
  std::vector<int> ranks;
  std::chrono::milliseconds budget{0};
};
// RoundEnded{round, a fresh free port of this node} to the launcher.
struct SendRoundEnded {
  int round = 0;
};
// A line for the agent's log: a decision worth seeing that changes nothing on the wire.
struct LogNote {
  std::string text;
};
// Close the session and end the event loop with this exit code.
struct ExitAgent {
  int code = 0;
};
// Open a session with the fallback address (the launcher itself) and carry on there, sending
// again what the broken one had not had acknowledged; then call OnSessionMoved, or OnMoveFailed.
// Call OnMoveDeadline once `give_up_after` has passed.
struct MoveSession {
  std::chrono::milliseconds give_up_after{0};
};
using AgentAction =
    std::variant<StartWorkers, HoldStart, StopWorkers, KillWorkers, SendHeartbeat, FlushReports,
                 SendWorkerExit, DrainReports, DumpStacks, SendRoundEnded, LogNote, ExitAgent,
                 MoveSession>;
using AgentActions = std::vector<AgentAction>;

struct AgentConfig {
  std::chrono::milliseconds heartbeat_interval{1000};  // from the launcher's JoinResponse
  std::chrono::milliseconds grace{0};                  // SIGTERM -> SIGKILL, from the launcher
  int max_restarts = 0;  // JoinResponse.max_restarts: 0 means no round follows the first
  bool spare = false;    // JoinResponse.spare: nothing runs until a StartRound
  int round = 0;         // JoinResponse.round: the first round's number
  int heartbeat_misses = 0;  // JoinResponse.heartbeat_misses; 0: LivenessPolicy's default
  bool can_move = false;     // a fallback address: a broken session may move there once
  std::chrono::milliseconds lease{0};  // JoinResponse.lease_ms; 0: derived (LivenessPolicy)
};

// A StopCommand as the state sees it.
struct StopRequest {
  int round = 0;
  bool exit = false;  // exit once the workers ended
  std::string reason;
  std::chrono::milliseconds grace{0};
  // Ranks whose stacks are recorded before the workers stop, within dump_budget.
  std::vector<int> dump_ranks{};
  std::chrono::milliseconds dump_budget{0};
};

class AgentState {
 public:
  using Time = std::chrono::steady_clock::time_point;

  // How long the agent waits for exited workers' report connections before the round ends.
  static constexpr std::chrono::milliseconds kReportDrainLimit{2000};
  // Grace for a stop on a signal when the launcher gave none.
  static constexpr std::chrono::milliseconds kSignalGrace{1000};

  explicit AgentState(AgentConfig config);

  // The session with the launcher is open at `now`; the watchdog counts from here. A member
  // starts its first round's workers; a spare only sends heartbeats.
  AgentActions OnSessionOpened(Time now);
  // The launcher's StartRound for `round`, whose workers may start `hold` from now. Ignored
  // (with a note) when stale, while the current round's workers have not all ended, or once
  // the agent is on its way out. With a hold the agent is in the round at once (its messages
  // carry it) and starts the workers at OnHeldStartDue; a stop meanwhile ends the round with
  // no worker run, and a closed session or a signal drops the start.
  AgentActions OnStartRound(int round, std::chrono::milliseconds hold = {});
  // HoldStart's time has come: the held round's workers start, unless the start was dropped.
  AgentActions OnHeldStartDue(int round);
  // StartWorkers ended: `started` workers run, `failed` could not start (each a failed worker).
  AgentActions OnWorkersStarted(int started, int failed);
  AgentActions OnWorkerExit(const ChildExit& exit);
  // A message from the launcher (pings included) said it has processed this agent's messages
  // sent up to `heard` (LauncherCommand.heard_ms): the lease runs from there. Arrival alone
  // proves nothing: a command held up in a cut link may arrive long after it was sent.
  AgentActions OnLauncherMessage(Time heard);
  // A stop that asks for stacks first emits DumpStacks and holds the stop (stops that come
  // meanwhile are merged into it) until OnStacksDumped; a stop with no grace does not wait.
  AgentActions OnStopCommand(const StopRequest& stop);
  // The DumpStacks asked for ended (every dump done, or its budget spent).
  AgentActions OnStacksDumped();
  // The session ended at `now` (the launcher closed it, or its stream broke and cannot move):
  // the workers stop with the grace, but end by the lease's end all the same, since no echo can
  // renew it any more (LeaseGrace).
  AgentActions OnSessionClosed(const std::string& why, Time now);
  // The session's stream broke at `now` (the relay or the link went; not the launcher's end of
  // it). An agent that may move it, has a stop grace to spend and is not leaving keeps its
  // workers and moves the session (MoveSession); else as OnSessionClosed. Until the launcher
  // echoes a message of the new session, the workers are bound to the grace counted from the
  // break: the launcher may have seen the end and will start the next round once they are
  // surely stopped (docs/restarts.md), so every stop meanwhile is cut to what is left of it
  // (CapGrace), and the agent gives up at OnMoveDeadline.
  AgentActions OnSessionBroken(Time now, const std::string& why);
  // The new session is open; a heartbeat goes first, its echo confirms the move.
  AgentActions OnSessionMoved(Time now);
  // The new session could not be opened, or broke before the move was confirmed.
  AgentActions OnMoveFailed(Time now, const std::string& why);
  // MoveSession's give_up_after has passed: unconfirmed, the agent stops its workers.
  AgentActions OnMoveDeadline(Time now);
  // A stop's grace while a move is unconfirmed: no later than the break + the job's grace.
  std::chrono::milliseconds CapGrace(Time now, std::chrono::milliseconds grace) const;
  // A stop's grace once the session is gone: no later than the lease's end, which the launcher
  // counts on for a node that did not end its round (LivenessPolicy::workers_gone_after).
  std::chrono::milliseconds LeaseGrace(Time now, std::chrono::milliseconds grace) const;
  // The heartbeat timer fired at `now`; the next one is due heartbeat_interval() later. A tick
  // that comes more than an interval late means this agent itself was stalled, so it does not
  // judge the launcher for two intervals: its heartbeat of now must have time to be echoed.
  // Past the lease (launcher_silence_limit(): no message of this agent sent since then was
  // echoed) the agent is fenced, whether its workers run, it waits between rounds, or it is a
  // spare.
  AgentActions OnTick(Time now);
  // When the lease runs out unless an echo renews it (the session open and not fenced): the
  // shell arms a timer for then and calls OnLeaseDue, so a cut-off agent fences within
  // LivenessPolicy::lease_check_slack() of it, not up to a heartbeat later.
  std::optional<Time> lease_due() const;
  // The lease timer armed for `due` fired at `now`: fenced when the lease has run out. A timer
  // that fires more than a heartbeat late means this agent was stalled: as for a late tick, it
  // waits two heartbeats before it judges.
  AgentActions OnLeaseDue(Time now, Time due);
  // A signal at `now`: the workers stop with the grace (cut to what a move in progress leaves).
  AgentActions OnSignal(int sig, Time now = Time{});
  // A report connection closed, or the drain limit passed (OnReportsDrained).
  AgentActions OnReportConnectionClosed();
  AgentActions OnReportsDrained();

  std::chrono::milliseconds heartbeat_interval() const { return liveness_.heartbeat(); }
  std::chrono::milliseconds launcher_silence_limit() const;
  // The round every message carries: the last one started (the first round's number before).
  int round() const { return round_; }
  int workers_running() const { return running_; }
  bool spare() const { return !member_; }
  bool session_open() const { return session_open_; }
  bool stopping() const { return stopping_; }
  bool dumping_stacks() const { return held_stop_.has_value(); }
  bool fenced() const { return fenced_; }
  bool start_held() const { return start_held_; }
  bool moving() const { return move_kill_at_.has_value(); }
  bool finished() const { return finished_; }

 private:
  void Stop(const std::string& why, std::chrono::milliseconds grace, AgentActions* out,
            bool fenced = false);
  // Asks for an exit with `code` once no worker runs (a failure code wins over 0).
  void RequestExit(int code);
  // The round ends once every worker ended and the reports drained: RoundEnded, then the
  // agent exits if asked to, else it waits for the next round.
  void MaybeEndRound(AgentActions* out);
  void MaybeExit(AgentActions* out);
  // The session is gone (closed, or the lease ran out): stop the workers with `why` and exit
  // once they ended, unless the agent was leaving anyway.
  void CloseSession(const std::string& why, AgentActions* out);
  void CloseSession(const std::string& why, std::chrono::milliseconds grace, AgentActions* out,
                    bool fenced = false);
  void GiveUpMove(Time now, const std::string& why, AgentActions* out);
  // Exiting anyway: told to, or rule (a) with its workers already ended.
  bool LeavingAnyway() const;
  void Fence(Time now, std::chrono::milliseconds silent, AgentActions* out);
  // Past the lease at `now`, and not judging from later after a stall of its own.
  bool LeaseRanOut(Time now) const;
  // When the lease runs out unless an echo renews it.
  Time LeaseEnd() const { return last_from_launcher_ + launcher_silence_limit(); }

  const LivenessPolicy liveness_;
  std::chrono::milliseconds grace_;
  // Rule (a) of the round contract: no next round can come, so the agent exits once its
  // workers ended, with 1 when one of them failed (as before rounds existed).
  bool exit_when_workers_end_;
  bool member_;
  int round_;
  bool started_a_round_ = false;
  bool start_held_ = false;  // round_'s StartRound came, its workers are not due yet
  // True while this round's workers run or their reports drain; RoundEnded not yet sent.
  bool round_active_ = false;
  int ended_round_ = -1;  // the last round whose workers all ended
  int running_ = 0;
  bool stopping_ = false;    // the launcher or a signal asked the workers to stop
  bool stop_sent_ = false;   // StopWorkers went out this round
  // A stop waiting for the stack dump it asked for (DumpStacks out, OnStacksDumped not yet in).
  std::optional<StopRequest> held_stop_;
  bool round_failed_ = false;
  bool reports_drained_ = false;
  bool session_open_ = false;
  Time last_from_launcher_{};  // the lease's start: the newest echoed send time, or session open
  Time last_tick_{};
  Time judge_from_{};          // after a stall of its own, the agent judges the lease from then
  bool exit_requested_ = false;
  int exit_code_ = 0;
  bool fenced_ = false;
  bool finished_ = false;
  bool can_move_;
  // While a move is unconfirmed: the break + grace (the latest the workers may run), and the
  // new session's opening (an echo of a message sent since confirms the move).
  std::optional<Time> move_kill_at_;
  std::optional<Time> moved_at_;
  int signals_seen_ = 0;
};

}  // namespace dlaunch
