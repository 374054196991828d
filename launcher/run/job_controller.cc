#include "launcher/run/job_controller.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/json_line.h"
#include "launcher/job/job_view.h"
#include "launcher/run/run_plan.h"

namespace dlaunch {

JobController::JobController(boost::asio::io_context& io, TimerClock& clock, JobSettings settings,
                             std::ostream& out, std::ostream& err)
    : io_(io),
      clock_(clock),
      dir_(std::move(settings.dir)),
      join_template_(settings.join_template),
      accept_spares_(settings.accept_spares),
      node_launcher_(settings.job.node_launcher),
      agent_hosts_(std::move(settings.agent_hosts)),
      out_(out),
      err_(err),
      start_(clock.Now()),
      state_(std::move(settings.job)),
      rendezvous_(clock, std::move(settings.rendezvous), std::move(settings.join_template), start_,
                  RendezvousHost::Callbacks{
                      [this](const Participant& p, int joined, int expected) {
                        Apply(state_.OnNodeJoined(p, joined, expected, Now()));
                      },
                      [this](const RoundResult& r) {
                        // Node i of the first round is node id i.
                        for (size_t i = 0; i < r.nodes.size(); ++i) {
                          NameAgentLog(r.nodes[i], static_cast<int>(i));
                        }
                        Apply(state_.OnRendezvousClosed(r, Now()));
                      },
                      [this](const absl::Status& st) {
                        Apply(state_.OnRendezvousFailed(st, Now()));
                      },
                      settings.accept_spares
                          ? std::function<void(const Participant&, int)>(
                                [this](const Participant& p, int node_id) {
                                  NameAgentLog(p, node_id);
                                  Apply(state_.OnSpareJoined(p, node_id, Now()));
                                })
                          : nullptr,
                      [this](const Participant& p) { Apply(state_.OnNodeUnfit(p, Now())); }}),
      signals_(io, SIGINT, SIGTERM, SIGHUP) {}

JobController::~JobController() { CancelTimers(); }

double JobController::Now() const {
  return std::chrono::duration<double>(clock_.Now() - start_).count();
}

absl::Status JobController::Start(const std::vector<std::vector<std::string>>& launch_commands) {
  if (absl::Status st = journal_.Open(dir_); !st.ok()) return st;
  std::vector<std::string> programs;
  for (const auto& command : launch_commands) programs.push_back(command.empty() ? "" : command[0]);
  Apply(state_.OnStarted(std::move(programs), Now()));
  if (absl::Status st = StartLaunchers(launch_commands); !st.ok()) return st;
  rendezvous_.Start();
  WaitForSignal();
  Tick();
  return absl::OkStatus();
}

absl::Status JobController::StartLaunchers(
    const std::vector<std::vector<std::string>>& launch_commands) {
  launchers_ = std::make_unique<ChildSupervisor>(
      io_, dir_.logs_dir(), 40,
      ChildSupervisor::Callbacks{nullptr,
                                 [this](const ChildExit& e) {
                                   const int launch_index = e.rank;  // StartAll's numbering
                                   Apply(state_.OnLauncherExited(launch_index, e.wait_status,
                                                                 e.tail, Now()));
                                 }},
      "launcher-", ChildSupervisor::Seams{nullptr, &clock_});
  std::vector<ChildSupervisor::StartRequest> requests;
  for (size_t i = 0; i < launch_commands.size(); ++i) {
    ChildSupervisor::StartRequest r;
    r.rank = r.local_rank = static_cast<int>(i);
    r.options.argv = launch_commands[i];
    requests.push_back(std::move(r));
  }
  std::vector<pid_t> pids;
  for (const absl::StatusOr<pid_t>& pid : launchers_->StartAll(std::move(requests))) {
    if (!pid.ok()) {  // all or none
      launchers_->KillAll();
      return absl::FailedPreconditionError(
          absl::StrCat("cannot start the node launcher: ", pid.status().message()));
    }
    pids.push_back(*pid);
  }
  agent_logs_ = AgentLogs(LaunchedAgentsOf(node_launcher_, agent_hosts_, pids));
  return absl::OkStatus();
}

void JobController::NameAgentLog(const Participant& agent, int node_id) {
  const std::optional<int> launch_index = agent_logs_.Claim(agent);
  if (!launch_index) return;
  const std::string from = dir_.logs_dir() + "/" + AgentLogs::LauncherLogName(*launch_index);
  const std::string to = dir_.logs_dir() + "/" + AgentLogs::AgentLogName(node_id);
  // The launcher's output keeps going to the same file: its descriptor stays open.
  if (std::rename(from.c_str(), to.c_str()) != 0) {
    err_ << "[dlaunch] cannot name " << from << " by its node id: " << std::strerror(errno) << '\n';
  }
}

// --- ControlHandler ---------------------------------------------------------------------------

void JobController::HandleJoin(const Participant& participant, JoinReply reply) {
  const JoinAdmission admission =
      AdmitJoin(participant, rendezvous_.closed(), accept_spares_,
                state_.HasRoomForSpare(rendezvous_.expected_agents()),
                rendezvous_.expected_agents());
  switch (admission.route) {
    case JoinRoute::kRendezvous:
      rendezvous_.Join(participant, std::move(reply));
      return;
    case JoinRoute::kRefused:
      Apply(state_.OnJoinRefused(admission.why));
      reply(absl::FailedPreconditionError(admission.why));
      return;
    case JoinRoute::kRendezvousLate:
      // The rendezvous refuses it as too late; counted here.
      rendezvous_.Join(participant,
                       [this, reply = std::move(reply)](absl::StatusOr<v1::JoinResponse> r) {
                         if (!r.ok()) Apply(state_.OnJoinRefused(std::string(r.status().message())));
                         reply(std::move(r));
                       });
      return;
  }
}

void JobController::HandleJoinCancelled(const std::string& agent_id, uint64_t join_call) {
  rendezvous_.Cancel(agent_id, join_call);
}

void JobController::HandleSessionOpened(int session_id, int node_id,
                                        std::shared_ptr<AgentSession> session) {
  if (finished_) return;
  const bool resumed = ledger_.Open(session_id, node_id);
  sessions_[node_id] = std::move(session);
  Apply(state_.OnSessionOpened(node_id, session_id, Now()));
  if (resumed) Apply(state_.OnSessionResumed(node_id, Now()));
}

void JobController::HandleAgentMessage(int session_id, int node_id,
                                       const v1::AgentMessage& message) {
  if (finished_) return;
  const MessagePlan plan = ledger_.OnMessage(session_id, node_id, message);
  if (plan.drop) return;
  if (plan.resend_start) SendStartRoundTo(*ledger_.last_start(), *plan.resend_start);
  Apply(state_.OnAgentMessage(node_id, message, Now()));
  if (plan.answer) SendTo(node_id, v1::LauncherCommand());  // after what the message caused
}

void JobController::HandleSessionEnded(int session_id, int node_id) {
  if (finished_) return;
  if (ledger_.End(session_id, node_id)) sessions_.erase(node_id);
  Apply(state_.OnSessionEnded(node_id, session_id, Now()));
}

void JobController::HandleSessionsMoving(const std::string& relay,
                                         const std::vector<std::pair<int, int>>& sessions) {
  if (finished_) return;
  std::vector<int> nodes;
  for (const auto& [id, node] : sessions) {
    if (ledger_.IsCurrent(id, node)) nodes.push_back(node);
  }
  std::optional<JobActions> out;
  if (nodes.empty() || !(out = state_.OnRelayLost(relay, nodes, Now()))) {
    for (const auto& [id, node] : sessions) HandleSessionEnded(id, node);
    return;
  }
  // Their sessions stay open with nowhere to write; each node's own session replaces it.
  Apply(*out);
}

void JobController::HandleRefused(const std::string& peer, const std::string& method) {
  Apply(state_.OnCallRefused(peer, method));
}

// --- Applying actions -------------------------------------------------------------------------

void JobController::Apply(const JobActions& actions) {
  for (const JobAction& action : actions) {
    std::visit(
        [this](const auto& a) {
          using T = std::decay_t<decltype(a)>;
          if constexpr (std::is_same_v<T, PrintLine>) {
            (a.to_stderr ? err_ : out_) << a.text << '\n';
          } else if constexpr (std::is_same_v<T, AppendEvent>) {
            v1::JobEvent event = a.event;
            event.set_time(NowRfc3339());
            ReportJournalError(journal_.AppendEvent(event));
          } else if constexpr (std::is_same_v<T, AppendMetric>) {
            ReportJournalError(
                journal_.AppendMetric(MetricLineOf(NowRfc3339(), a.node, a.round, a.report)));
          } else if constexpr (std::is_same_v<T, AppendHostSample>) {
            ReportJournalError(
                journal_.AppendMetric(HostLineOf(NowRfc3339(), a.node, a.round, a.host, a.gpus)));
          } else if constexpr (std::is_same_v<T, dlaunch::SendStop>) {
            SendStop(a);
          } else if constexpr (std::is_same_v<T, dlaunch::SendStartRound>) {
            SendStartRound(a);
          } else if constexpr (std::is_same_v<T, SendPing>) {
            Send(a.nodes, v1::LauncherCommand());
          } else if constexpr (std::is_same_v<T, StopLaunchers>) {
            if (launchers_) launchers_->StopAll(std::chrono::milliseconds(a.grace_ms));
          } else if constexpr (std::is_same_v<T, KillLaunchers>) {
            if (launchers_) launchers_->KillAll();
          } else if constexpr (std::is_same_v<T, dlaunch::ArmStopDeadline>) {
            ArmStopDeadline(a.at_s);
          } else if constexpr (std::is_same_v<T, dlaunch::ArmHealthCheck>) {
            ArmHealthCheck(a.at_s);
          } else if constexpr (std::is_same_v<T, WriteSummary>) {
            if (absl::Status st = dir_.WriteSummary(a.summary); !st.ok()) {
              err_ << "[dlaunch] error: " << st.message() << '\n';
            }
          } else if constexpr (std::is_same_v<T, FinishJob>) {
            Finish(a.exit_code);
          }
        },
        action);
  }
  out_.flush();
  err_.flush();
}

void JobController::Send(const std::vector<int>& nodes, const v1::LauncherCommand& command) {
  for (int node : nodes) SendTo(node, command);
}

void JobController::SendTo(int node, v1::LauncherCommand command) {
  auto it = sessions_.find(node);
  std::optional<SessionEcho> echo = ledger_.EchoFor(node);
  if (it == sessions_.end() || !echo) return;
  command.set_heard_ms(echo->heard_ms);
  if (echo->heard_seq) command.set_heard_seq(*echo->heard_seq);
  it->second->Send(std::move(command));
}

void JobController::SendStop(const dlaunch::SendStop& a) {
  v1::LauncherCommand command;
  v1::StopCommand* stop = command.mutable_stop();
  stop->set_reason(a.reason);
  stop->set_grace_ms(a.grace_ms);
  for (int rank : a.dump_ranks) stop->add_dump_ranks(rank);
  stop->set_round(a.round);
  stop->set_exit(a.exit);
  stop->set_dump_budget_ms(a.dump_budget_ms);
  Send(a.nodes, command);
}

void JobController::SendStartRound(const dlaunch::SendStartRound& a) {
  for (size_t i = 0; i < a.node_ids.size(); ++i) SendStartRoundTo(a, i);
  ledger_.NoteStartRound(a);
}

void JobController::SendStartRoundTo(const dlaunch::SendStartRound& a, size_t i) {
  v1::LauncherCommand command;
  v1::JoinResponse* place = command.mutable_start()->mutable_place();
  *place = MakeJoinResponse(join_template_, a.round, a.round.assignments[i]);
  place->set_node_id(a.node_ids[i]);
  // Taken per agent: writing 10,000 StartRounds takes the loop a good part of a second.
  if (int32_t after_ms = StartAfterMs(a.workers_start_at_s, Now()); after_ms > 0) {
    command.mutable_start()->set_start_after_ms(after_ms);
  }
  SendTo(a.node_ids[i], std::move(command));  // a place holds the worker's argv and env: moved
}

void JobController::ArmStopDeadline(double at_s) {
  ArmAt(stop_deadline_, at_s, [this] {
    if (!finished_) Apply(state_.OnStopDeadline(Now()));
  });
}

void JobController::ArmHealthCheck(double at_s) {
  ArmAt(health_check_, at_s, [this] {
    if (!finished_) Apply(state_.OnHealthCheck(Now()));
  });
}

void JobController::ArmAt(std::optional<TimerClock::TimerId>& timer, double at_s,
                          std::function<void()> fn) {
  if (timer) clock_.Cancel(*timer);
  const auto delay = std::chrono::ceil<std::chrono::milliseconds>(
      std::chrono::duration<double>(std::max(0.0, at_s - Now())));
  timer = clock_.RunAfter(delay, [&timer, fn = std::move(fn)] {
    timer.reset();
    fn();
  });
}

void JobController::Tick() {
  if (finished_) return;
  tick_timer_.reset();
  // How late this tick runs is how long a message received when it was due may still wait in
  // the loop's queue: no node is lost for a heartbeat that arrived but is not handled yet.
  const double lag_s =
      first_tick_ ? 0 : std::max(0.0, std::chrono::duration<double>(clock_.Now() - tick_due_).count());
  Apply(state_.OnTick(Now(), lag_s));
  first_tick_ = false;
  if (finished_) return;
  const auto interval = std::chrono::ceil<std::chrono::milliseconds>(
      std::chrono::duration<double>(state_.tick_interval_s()));
  tick_due_ = clock_.Now() + interval;
  tick_timer_ = clock_.RunAfter(interval, [this] { Tick(); });
}

void JobController::CancelTimers() {
  for (std::optional<TimerClock::TimerId>* timer : {&tick_timer_, &stop_deadline_, &health_check_}) {
    if (*timer) clock_.Cancel(**timer);
    timer->reset();
  }
}

void JobController::WaitForSignal() {
  signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
    if (ec || finished_) return;
    Apply(state_.OnSignal(sig, Now()));
    WaitForSignal();
  });
}

void JobController::ReportJournalError(const absl::Status& status) {
  if (status.ok() || journal_error_reported_) return;
  journal_error_reported_ = true;
  err_ << "[dlaunch] error: " << status.message() << " (later journal errors are not shown)\n";
}

void JobController::Finish(int exit_code) {
  if (finished_) return;
  finished_ = true;
  exit_code_ = exit_code;
  // The trace and `dlaunch status` read metrics.jsonl next: every queued line is written first.
  journal_.FlushMetrics();
  if (int64_t dropped = journal_.dropped_metrics(); dropped > 0) {
    err_ << "[dlaunch] metrics.jsonl: " << dropped
         << " report line(s) dropped: the journal's writer fell behind the agents\n";
  }
  if (int64_t again = ledger_.messages_again(); again > 0) {
    out_ << "[dlaunch] " << again
         << " message(s) sent again by agents whose sessions moved were handled already: dropped\n";
  }
  CancelTimers();
  signals_.cancel();
  rendezvous_.Shutdown();
  io_.stop();
}

}  // namespace dlaunch
