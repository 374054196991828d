#include "launcher/run/job_controller.h"

#include <signal.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/json_line.h"
#include "launcher/run/job_view.h"
#include "launcher/run/run_plan.h"

namespace dlaunch {

JobController::JobController(boost::asio::io_context& io, JobSettings settings, std::ostream& out,
                             std::ostream& err)
    : io_(io),
      dir_(std::move(settings.dir)),
      join_template_(settings.join_template),
      accept_spares_(settings.accept_spares),
      out_(out),
      err_(err),
      start_(std::chrono::steady_clock::now()),
      state_(std::move(settings.job)),
      rendezvous_(io, std::move(settings.rendezvous), std::move(settings.join_template), start_,
                  RendezvousHost::Callbacks{
                      [this](const Participant& p, int joined, int expected) {
                        Apply(state_.OnNodeJoined(p, joined, expected, Now()));
                      },
                      [this](const RoundResult& r) { Apply(state_.OnRendezvousClosed(r, Now())); },
                      [this](const absl::Status& st) {
                        Apply(state_.OnRendezvousFailed(st, Now()));
                      },
                      settings.accept_spares
                          ? std::function<void(const Participant&, int)>(
                                [this](const Participant& p, int node_id) {
                                  Apply(state_.OnSpareJoined(p, node_id, Now()));
                                })
                          : nullptr,
                      [this](const Participant& p) { Apply(state_.OnNodeUnfit(p, Now())); }}),
      signals_(io, SIGINT, SIGTERM, SIGHUP),
      tick_timer_(io),
      stop_deadline_(io),
      health_check_(io) {}

JobController::~JobController() = default;

double JobController::Now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

absl::Status JobController::Start(const std::vector<std::vector<std::string>>& launch_commands) {
  if (absl::Status st = journal_.Open(dir_); !st.ok()) return st;
  std::vector<std::string> programs;
  for (const auto& command : launch_commands) programs.push_back(command.empty() ? "" : command[0]);
  Apply(state_.OnStarted(std::move(programs), Now()));
  launchers_ = std::make_unique<ChildSupervisor>(
      io_, dir_.logs_dir(), 40,
      ChildSupervisor::Callbacks{nullptr,
                                 [this](const ChildExit& e) {
                                   Apply(state_.OnLauncherExited(e.rank, e.wait_status, e.tail, Now()));
                                 }},
      "agent-");
  if (absl::Status st = launchers_->StartCommands(launch_commands); !st.ok()) return st;
  rendezvous_.Start();
  WaitForSignal();
  Tick();
  return absl::OkStatus();
}

// --- ControlHandler ---------------------------------------------------------------------------

void JobController::HandleJoin(const Participant& participant, JoinReply reply) {
  if (!rendezvous_.closed()) {
    rendezvous_.Join(participant, std::move(reply));
    return;
  }
  // After the close an agent waits as a spare while the job has room for one; beyond the agents
  // it started (a flood of joins) it is refused and counted, so nothing is kept for it.
  if (accept_spares_ && !state_.HasRoomForSpare(rendezvous_.expected_agents())) {
    const std::string why = absl::StrCat(
        "the job started ", rendezvous_.expected_agents(), " agent(s) and all of them are in it: ",
        "agent ", participant.agent_id, " (host ", participant.host, ") is one too many");
    Apply(state_.OnJoinRefused(why));
    reply(absl::FailedPreconditionError(why));
    return;
  }
  if (accept_spares_ || !UnfitReasons(participant).empty()) {  // a spare; or unfit, said apart
    rendezvous_.Join(participant, std::move(reply));
    return;
  }
  // No spares: the rendezvous refuses it as too late; counted here.
  rendezvous_.Join(participant, [this, reply = std::move(reply)](absl::StatusOr<v1::JoinResponse> r) {
    if (!r.ok()) {
      Apply(state_.OnJoinRefused(std::string(r.status().message())));
    }
    reply(std::move(r));
  });
}

void JobController::HandleJoinCancelled(const std::string& agent_id) {
  rendezvous_.Cancel(agent_id);
}

void JobController::HandleSessionOpened(int session_id, int node_rank,
                                        std::shared_ptr<AgentSession> session) {
  if (finished_) return;
  // A session that replaces one not seen to end: the agent moved it (its relay went, or its
  // stream broke before the launcher saw the end).
  const bool resumed = sessions_.count(node_rank) > 0;
  sessions_[node_rank] = OpenSession{session_id, std::move(session), 0, resumed, resumed};
  Apply(state_.OnSessionOpened(node_rank, session_id, Now()));
  if (resumed) Apply(state_.OnSessionResumed(node_rank, Now()));
}

void JobController::HandleAgentMessage(int session_id, int node_rank,
                                       const v1::AgentMessage& message) {
  if (finished_) return;
  if (message.seq() != 0) {
    uint64_t& heard = heard_seq_[node_rank];
    if (message.seq() <= heard) {  // sent again after a move, and handled already
      ++messages_again_;
      return;
    }
    heard = message.seq();
  }
  auto it = sessions_.find(node_rank);
  bool answer = false;
  if (it != sessions_.end() && it->second.id == session_id) {
    it->second.heard_ms = std::max(it->second.heard_ms, message.sent_ms());
    if (it->second.answer_heartbeat && message.has_heartbeat()) {
      it->second.answer_heartbeat = false;
      answer = true;
    }
    if (it->second.resumed) {
      it->second.resumed = false;
      // The agent's round is behind the last StartRound for it: that one went with the relay.
      if (last_start_ && message.round() < last_start_->round.round) {
        const auto& ids = last_start_->node_ids;
        auto at = std::find(ids.begin(), ids.end(), node_rank);
        if (at != ids.end()) SendStartRoundTo(*last_start_, static_cast<size_t>(at - ids.begin()));
      }
    }
  }
  Apply(state_.OnAgentMessage(node_rank, message, Now()));
  if (answer) SendTo(node_rank, v1::LauncherCommand());  // after what the message caused
}

void JobController::HandleSessionEnded(int session_id, int node_rank) {
  if (finished_) return;
  auto it = sessions_.find(node_rank);
  if (it != sessions_.end() && it->second.id == session_id) sessions_.erase(it);
  Apply(state_.OnSessionEnded(node_rank, session_id, Now()));
}

void JobController::HandleSessionsMoving(const std::string& relay,
                                         const std::vector<std::pair<int, int>>& sessions) {
  if (finished_) return;
  std::vector<int> nodes;
  for (const auto& [id, node] : sessions) {
    auto it = sessions_.find(node);
    if (it != sessions_.end() && it->second.id == id) nodes.push_back(node);
  }
  JobActions out;
  if (nodes.empty() || !state_.OnRelayLost(relay, nodes, Now(), out)) {
    for (const auto& [id, node] : sessions) HandleSessionEnded(id, node);
    return;
  }
  // Their sessions stay open with nowhere to write; each node's own session replaces it.
  Apply(out);
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
  if (it == sessions_.end()) return;
  command.set_heard_ms(it->second.heard_ms);
  if (auto h = heard_seq_.find(node); h != heard_seq_.end()) command.set_heard_seq(h->second);
  it->second.session->Send(std::move(command));
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
  last_start_ = a;
}

void JobController::SendStartRoundTo(const dlaunch::SendStartRound& a, size_t i) {
  v1::LauncherCommand command;
  v1::JoinResponse* place = command.mutable_start()->mutable_place();
  *place = MakeJoinResponse(join_template_, a.round, a.round.assignments[i]);
  place->set_node_id(a.node_ids[i]);
  // Taken per agent: writing 10,000 StartRounds takes the loop a good part of a second.
  const double ahead_s = a.workers_start_at_s - Now();
  if (ahead_s > 0) {
    command.mutable_start()->set_start_after_ms(static_cast<int32_t>(std::ceil(ahead_s * 1e3)));
  }
  SendTo(a.node_ids[i], std::move(command));  // a place holds the worker's argv and env: moved
}

void JobController::ArmStopDeadline(double at_s) {
  stop_deadline_.expires_at(start_ + std::chrono::microseconds(static_cast<int64_t>(at_s * 1e6)));
  stop_deadline_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec && !finished_) Apply(state_.OnStopDeadline(Now()));
  });
}

void JobController::ArmHealthCheck(double at_s) {
  // Re-arming cancels the earlier wait, whose handler then sees operation_aborted.
  health_check_.expires_at(start_ + std::chrono::microseconds(static_cast<int64_t>(at_s * 1e6)));
  health_check_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec && !finished_) Apply(state_.OnHealthCheck(Now()));
  });
}

void JobController::Tick() {
  if (finished_) return;
  // How late this tick runs is how long a message received when it was due may still wait in
  // the loop's queue: no node is lost for a heartbeat that arrived but is not handled yet.
  const double lag_s = std::max(
      0.0, std::chrono::duration<double>(std::chrono::steady_clock::now() - tick_timer_.expiry())
               .count());
  Apply(state_.OnTick(Now(), first_tick_ ? 0 : lag_s));
  first_tick_ = false;
  tick_timer_.expires_after(
      std::chrono::microseconds(static_cast<int64_t>(state_.tick_interval_s() * 1e6)));
  tick_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) Tick();
  });
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
  if (messages_again_ > 0) {
    out_ << "[dlaunch] " << messages_again_
         << " message(s) sent again by agents whose sessions moved were handled already: dropped\n";
  }
  tick_timer_.cancel();
  stop_deadline_.cancel();
  health_check_.cancel();
  signals_.cancel();
  rendezvous_.Shutdown();
  io_.stop();
}

}  // namespace dlaunch
