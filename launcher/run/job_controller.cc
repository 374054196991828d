#include "launcher/run/job_controller.h"

#include <signal.h>
#include <sys/wait.h>

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "launcher/jobdir/job_record.h"
#include "common/json_line.h"

namespace dlaunch {
namespace {

using Clock = std::chrono::steady_clock;

std::chrono::milliseconds Ms(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

std::string DescribeExit(const v1::WorkerEvent& ev) {
  if (ev.signal() != 0) {
    const char* name = strsignal(ev.signal());
    return absl::StrCat("signal ", ev.signal(), " (", name ? name : "?", ")");
  }
  return absl::StrCat("exit code ", ev.exit_code());
}

bool Finished(v1::WorkerEvent::State s) {
  return s == v1::WorkerEvent::SUCCEEDED || s == v1::WorkerEvent::FAILED ||
         s == v1::WorkerEvent::STOPPED;
}

}  // namespace

JobController::JobController(boost::asio::io_context& io, JobSettings settings, std::ostream& out,
                             std::ostream& err)
    : io_(io),
      s_(std::move(settings)),
      out_(out),
      err_(err),
      signals_(io, SIGINT, SIGTERM, SIGHUP),
      tick_timer_(io),
      stop_deadline_(io),
      start_(Clock::now()),
      last_summary_(start_),
      join_deadline_(start_ + Ms(s_.spec.join_timeout_s)) {}

JobController::~JobController() = default;

double JobController::Elapsed() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

void JobController::Say(const std::string& line) { out_ << "[dlaunch] " << line << std::endl; }

void JobController::Event(const std::string& json) {
  if (events_) events_ << json << "\n" << std::flush;
}

absl::Status JobController::Start(std::vector<std::vector<std::string>> launch_commands) {
  launch_commands_ = std::move(launch_commands);
  events_.open(s_.job_dir + "/events.jsonl", std::ios::app);
  metrics_.open(s_.job_dir + "/metrics.jsonl", std::ios::app);
  if (!events_ || !metrics_) {
    return absl::PermissionDeniedError(absl::StrCat("cannot write to the job directory ", s_.job_dir));
  }
  Event(JsonLine()
            .Add("time", NowRfc3339())
            .Add("event", "job_started")
            .Add("job_id", s_.job_id)
            .Add("nodes", static_cast<int>(s_.hosts.size()))
            .Add("node_launcher", s_.node_launcher)
            .Add("hosts", s_.hosts)
            .str());
  Say(absl::StrCat("job ", s_.job_id, ": ", s_.hosts.size(), " node(s) via ", s_.node_launcher,
                   ", job dir ", s_.job_dir));

  launchers_ = std::make_unique<ChildSupervisor>(
      io_, s_.job_dir + "/logs", 40,
      ChildSupervisor::Callbacks{nullptr, [this](const ChildExit& e) { OnLauncherExit(e); }},
      "agent-");
  std::vector<ChildSupervisor::StartRequest> requests;
  for (size_t i = 0; i < launch_commands_.size(); ++i) {
    ChildSupervisor::StartRequest r;
    r.rank = r.local_rank = static_cast<int>(i);
    r.options.argv = launch_commands_[i];
    requests.push_back(std::move(r));
  }
  for (const auto& pid : launchers_->StartAll(std::move(requests))) {
    if (!pid.ok()) {
      launchers_->KillAll();
      return absl::FailedPreconditionError(absl::StrCat("cannot start the node launcher: ",
                                                        pid.status().message()));
    }
    ++launchers_running_;
  }
  signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
    if (!ec) OnSignal(sig);
  });
  Tick();
  return absl::OkStatus();
}

// --- SessionHandler: gRPC threads, post only -------------------------------------------------

void JobController::OnJoined(const Participant& p, int joined, int expected) {
  boost::asio::post(io_, [this, p, joined, expected] {
    Say(absl::StrCat("node joined: ", p.host, " (", p.addr, "), ", p.slots, " slot(s) [", joined,
                     "/", expected, "]"));
    Event(JsonLine()
              .Add("time", NowRfc3339())
              .Add("event", "node_joined")
              .Add("host", p.host)
              .Add("addr", p.addr)
              .Add("slots", p.slots)
              .Add("joined", joined)
              .str());
  });
}

void JobController::OnRendezvousClosed(const RoundResult& result) {
  boost::asio::post(io_, [this, result] {
    round_ = result;
    rendezvous_closed_at_ = Clock::now();
    for (size_t i = 0; i < result.nodes.size(); ++i) {
      NodeState& n = nodes_[static_cast<int>(i)];
      n.host = result.nodes[i].host;
      n.addr = result.nodes[i].addr;
      for (int r = 0; r < result.assignments[i].local_world_size; ++r) {
        ranks_[result.assignments[i].rank_offset + r].node = static_cast<int>(i);
      }
    }
    Say(absl::StrCat("rendezvous complete in ", absl::StrFormat("%.2f", Elapsed()), " s: ",
                     result.nodes.size(), " node(s), world size ", result.world_size,
                     ", MASTER_ADDR=", result.master_addr, " MASTER_PORT=", result.master_port));
    std::vector<std::string> order;
    for (const auto& n : result.nodes) order.push_back(n.host);
    Event(JsonLine()
              .Add("time", NowRfc3339())
              .Add("event", "rendezvous_closed")
              .Add("round", result.round)
              .Add("world_size", result.world_size)
              .Add("master_addr", result.master_addr)
              .Add("master_port", result.master_port)
              .Add("node_order", order)
              .str());
    if (outcome_ != Outcome::kRunning) StopAll(Ms(s_.spec.stop_grace_s), failure_);
  });
}

void JobController::OnRendezvousFailed(const absl::Status& status) {
  boost::asio::post(io_, [this, status] {
    Fail(Outcome::kLaunchError, std::string(status.message()));
  });
}

void JobController::OnSessionOpened(std::shared_ptr<AgentSession> session) {
  boost::asio::post(io_, [this, session] {
    NodeState& n = nodes_[session->node_rank];
    n.session = session;
    n.last_seen = Clock::now();
    if (outcome_ != Outcome::kRunning) {
      v1::LauncherCommand stop;
      stop.mutable_stop()->set_reason(failure_);
      stop.mutable_stop()->set_grace_ms(static_cast<int>(s_.spec.stop_grace_s * 1000));
      session->Send(stop);
    }
  });
}

void JobController::OnAgentMessage(const std::shared_ptr<AgentSession>& session,
                                   const v1::AgentMessage& msg) {
  boost::asio::post(io_, [this, node = session->node_rank, msg] { HandleMessage(node, msg); });
}

void JobController::OnSessionEnded(const std::shared_ptr<AgentSession>& session) {
  boost::asio::post(io_, [this, session] {
    NodeState& n = nodes_[session->node_rank];
    if (n.session != session) return;
    n.session_ended = true;
    bool unfinished = false;
    for (const auto& [rank, r] : ranks_) {
      if (r.node == session->node_rank && !Finished(r.state)) unfinished = true;
    }
    if (unfinished) NodeLost(session->node_rank, "its agent's session ended with workers unaccounted for");
    MaybeFinish();
  });
}

void JobController::OnRefused(const std::string& peer, const std::string& method) {
  boost::asio::post(io_, [this, peer, method] {
    err_ << "[dlaunch] refused " << method << " from " << peer << ": missing or wrong job token"
         << std::endl;
    Event(JsonLine()
              .Add("time", NowRfc3339())
              .Add("event", "call_refused")
              .Add("peer", peer)
              .Add("method", method)
              .str());
  });
}

// --- Event loop -------------------------------------------------------------------------------

void JobController::HandleMessage(int node, const v1::AgentMessage& msg) {
  NodeState& n = nodes_[node];
  n.last_seen = Clock::now();
  switch (msg.body_case()) {
    case v1::AgentMessage::kHeartbeat:
      n.workers_running = msg.heartbeat().workers_running();
      for (const auto& r : msg.heartbeat().reports()) HandleReport(node, r);
      break;
    case v1::AgentMessage::kWorker:
      HandleWorkerEvent(node, msg.worker());
      break;
    case v1::AgentMessage::kLog: {
      std::ostream& os = msg.log().stderr() ? err_ : out_;
      for (const auto& line : msg.log().lines()) os << "[rank " << msg.log().rank() << "] " << line << "\n";
      os.flush();
      break;
    }
    default:
      break;
  }
}

void JobController::HandleReport(int node, const v1::WorkerReport& r) {
  RankState& rs = ranks_[r.rank()];
  rs.node = node;
  rs.samples += r.samples();
  rs.busy_s += r.interval_s();
  rs.step = std::max<int64_t>(rs.step, r.step());
  rs.loss = r.loss();
  rs.has_loss = true;
  if (r.has_test_accuracy()) rs.test_accuracy = r.test_accuracy();
  if (r.interval_s() > 0) rs.recent_rate = r.samples() / r.interval_s();
  JsonLine line;
  line.Add("time", NowRfc3339())
      .Add("node", node)
      .Add("rank", r.rank())
      .Add("step", static_cast<int64_t>(r.step()))
      .Add("epoch", r.epoch())
      .Add("samples", static_cast<int64_t>(r.samples()))
      .Add("interval_s", r.interval_s())
      .Add("samples_per_sec", r.samples_per_sec())
      .Add("loss", r.loss())
      .Add("data_ms", r.timings().data_ms())
      .Add("forward_ms", r.timings().forward_ms())
      .Add("backward_ms", r.timings().backward_ms())
      .Add("comm_wait_ms", r.timings().comm_wait_ms())
      .Add("optimizer_ms", r.timings().optimizer_ms());
  if (r.has_accuracy()) line.Add("accuracy", r.accuracy());
  if (r.has_test_accuracy()) line.Add("test_accuracy", r.test_accuracy());
  metrics_ << line.str() << "\n";
}

void JobController::HandleWorkerEvent(int node, const v1::WorkerEvent& ev) {
  RankState& rs = ranks_[ev.rank()];
  rs.node = node;
  rs.state = ev.state();
  if (ev.pid() != 0) rs.pid = ev.pid();
  const std::string& host = nodes_[node].host;
  switch (ev.state()) {
    case v1::WorkerEvent::STARTED: {
      int started = 0;
      for (const auto& [rank, r] : ranks_) started += r.state != v1::WorkerEvent::STATE_UNSPECIFIED;
      if (round_ && started == round_->world_size) {
        Say(absl::StrCat("all ", started, " workers started in ", absl::StrFormat("%.2f", Elapsed()), " s"));
        Event(JsonLine()
                  .Add("time", NowRfc3339())
                  .Add("event", "workers_started")
                  .Add("workers", started)
                  .Add("elapsed_s", Elapsed())
                  .str());
      }
      break;
    }
    case v1::WorkerEvent::FAILED: {
      std::string reason = absl::StrCat("rank ", ev.rank(), " on node ", node, " (", host,
                                        ") failed with ", DescribeExit(ev));
      Event(JsonLine()
                .Add("time", NowRfc3339())
                .Add("event", "worker_failed")
                .Add("rank", ev.rank())
                .Add("node", node)
                .Add("host", host)
                .Add("exit_code", ev.exit_code())
                .Add("signal", ev.signal())
                .str());
      std::vector<std::string> tail(ev.last_lines().begin(), ev.last_lines().end());
      Fail(Outcome::kFailed, reason, tail);
      break;
    }
    case v1::WorkerEvent::SUCCEEDED:
    case v1::WorkerEvent::STOPPED:
    default:
      break;
  }
  MaybeFinish();
}

void JobController::NodeLost(int node, const std::string& why) {
  const NodeState& n = nodes_[node];
  Event(JsonLine()
            .Add("time", NowRfc3339())
            .Add("event", "node_lost")
            .Add("node", node)
            .Add("host", n.host)
            .Add("reason", why)
            .str());
  Fail(Outcome::kFailed, absl::StrCat("node ", node, " (", n.host, ") lost: ", why));
}

void JobController::Fail(Outcome outcome, const std::string& reason,
                         std::vector<std::string> detail) {
  if (outcome_ != Outcome::kRunning) return;  // the first failure is the one reported
  outcome_ = outcome;
  failure_ = reason;
  failure_detail_ = std::move(detail);
  err_ << "[dlaunch] " << (outcome == Outcome::kInterrupted ? "" : "error: ") << reason
       << "; stopping all workers" << std::endl;
  StopAll(Ms(s_.spec.stop_grace_s), reason);
}

void JobController::StopAll(std::chrono::milliseconds grace, const std::string& reason) {
  v1::LauncherCommand stop;
  stop.mutable_stop()->set_reason(reason);
  stop.mutable_stop()->set_grace_ms(static_cast<int>(grace.count()));
  for (auto& [i, n] : nodes_) {
    if (n.session && !n.session_ended) n.session->Send(stop);
  }
  // Agents still in the rendezvous have no workers yet: stopping their launchers is enough.
  if (!round_ && launchers_) launchers_->StopAll(grace);
  if (!stop_started_at_) stop_started_at_ = Clock::now();
  auto limit = grace + Ms(s_.spec.heartbeat_interval_s * s_.spec.heartbeat_misses) + std::chrono::seconds(5);
  stop_deadline_.expires_after(limit);
  stop_deadline_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || finished_) return;
    err_ << "[dlaunch] nodes did not finish stopping in time; killing the node launchers" << std::endl;
    launchers_->KillAll();
    Finish();
  });
  MaybeFinish();
}

void JobController::OnSignal(int sig) {
  ++signals_seen_;
  signals_.async_wait([this](const boost::system::error_code& ec, int s) {
    if (!ec) OnSignal(s);
  });
  if (signals_seen_ == 1) {
    Fail(Outcome::kInterrupted, absl::StrCat("interrupted by signal ", sig));
    if (outcome_ != Outcome::kInterrupted) StopAll(Ms(s_.spec.stop_grace_s), failure_);
    err_ << "[dlaunch] waiting up to " << s_.spec.stop_grace_s
         << " s for workers to stop (Ctrl-C again to kill them now)" << std::endl;
  } else {
    err_ << "[dlaunch] killing all workers now" << std::endl;
    if (outcome_ == Outcome::kRunning) outcome_ = Outcome::kInterrupted;
    StopAll(std::chrono::milliseconds(0), "interrupted");
    launchers_->StopAll(std::chrono::milliseconds(500));
  }
}

void JobController::Tick() {
  if (finished_) return;
  auto now = Clock::now();
  auto interval = Ms(s_.spec.heartbeat_interval_s);
  if (!round_ && service_) service_->PollRendezvous();
  if (round_) {
    auto lost_after = interval * s_.spec.heartbeat_misses;
    v1::LauncherCommand ping;  // an empty command: proof of life for the agents' watchdogs
    for (auto& [i, n] : nodes_) {
      if (n.session && !n.session_ended) {
        n.session->Send(ping);
        if (outcome_ == Outcome::kRunning && now - n.last_seen > lost_after) {
          NodeLost(i, absl::StrFormat("no heartbeat for %.1f s",
                                      std::chrono::duration<double>(now - n.last_seen).count()));
        }
      } else if (!n.session && outcome_ == Outcome::kRunning &&
                 now - *rendezvous_closed_at_ > lost_after + std::chrono::seconds(5)) {
        NodeLost(i, "its agent joined but never opened its session");
      }
    }
  }
  if (outcome_ == Outcome::kRunning &&
      now - last_summary_ >= Ms(s_.spec.summary_interval_s)) {
    PrintSummaryLine();
  }
  tick_timer_.expires_after(std::min<std::chrono::milliseconds>(interval, std::chrono::milliseconds(1000)));
  tick_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) Tick();
  });
}

void JobController::PrintSummaryLine() {
  int up = 0, running = 0;
  for (const auto& [i, n] : nodes_) {
    if (n.session && !n.session_ended) {
      ++up;
      running += n.workers_running;
    }
  }
  // Global throughput: each rank's latest reported rate, so the line is steady even when
  // reports come less often than summary lines.
  int64_t step = 0;
  double rate = 0;
  for (const auto& [rank, r] : ranks_) {
    step = std::max(step, r.step);
    if (r.state != v1::WorkerEvent::SUCCEEDED && r.state != v1::WorkerEvent::FAILED) rate += r.recent_rate;
  }
  int world = round_ ? round_->world_size : 0;
  std::string line = absl::StrFormat("%6.1fs  nodes %d/%d up  workers %d/%d running", Elapsed(),
                                     up, static_cast<int>(s_.hosts.size()), running, world);
  if (rate > 0 || step > 0) line += absl::StrFormat("  step %d  %.1f samples/s", step, rate);
  Say(line);
  last_summary_ = Clock::now();
}

void JobController::OnLauncherExit(const ChildExit& e) {
  --launchers_running_;
  bool ok = WIFEXITED(e.wait_status) && WEXITSTATUS(e.wait_status) == 0;
  if (!ok && outcome_ == Outcome::kRunning) {
    std::string what = absl::StrCat("node launcher `", launch_commands_[e.rank][0], "` (",
                                    s_.node_launcher, " #", e.rank, ") ended with ",
                                    DescribeWaitStatus(e.wait_status));
    if (!round_) {
      Fail(Outcome::kLaunchError, what + " before all nodes joined", e.tail);
    } else if (WIFSIGNALED(e.wait_status)) {
      Fail(Outcome::kFailed, what + ": the node(s) it started are lost", e.tail);
    }
  }
  MaybeFinish();
}

void JobController::MaybeFinish() {
  if (finished_) return;
  if (outcome_ == Outcome::kRunning && round_) {
    int succeeded = 0;
    for (const auto& [rank, r] : ranks_) succeeded += r.state == v1::WorkerEvent::SUCCEEDED;
    if (succeeded == round_->world_size) outcome_ = Outcome::kSucceeded;
  }
  if (outcome_ == Outcome::kRunning) return;
  for (const auto& [i, n] : nodes_) {
    if (n.session && !n.session_ended) return;
  }
  if (launchers_running_ > 0) {
    // Success: the agents are exiting on their own. Bound the wait as for a stop.
    if (!stop_started_at_) StopAll(Ms(s_.spec.stop_grace_s), "job finished");
    return;
  }
  Finish();
}

void JobController::Finish() {
  if (finished_) return;
  finished_ = true;
  tick_timer_.cancel();
  stop_deadline_.cancel();
  signals_.cancel();
  double wall = Elapsed();
  const char* result = "failed";
  switch (outcome_) {
    case Outcome::kSucceeded: result = "succeeded"; exit_code_ = 0; break;
    case Outcome::kFailed: result = "failed"; exit_code_ = 1; break;
    case Outcome::kLaunchError: result = "launch error"; exit_code_ = 3; break;
    case Outcome::kInterrupted: result = "interrupted"; exit_code_ = 130; break;
    case Outcome::kRunning: result = "failed"; exit_code_ = 1; break;
  }

  int64_t total_samples = 0;
  double total_rate = 0;
  std::optional<double> test_acc;
  double loss_sum = 0;
  int loss_n = 0;
  for (const auto& [rank, r] : ranks_) {
    total_samples += r.samples;
    if (r.busy_s > 0) total_rate += r.samples / r.busy_s;
    if (r.test_accuracy) test_acc = r.test_accuracy;
    if (r.has_loss) {
      loss_sum += r.loss;
      ++loss_n;
    }
  }
  int world = round_ ? round_->world_size : 0;

  std::ostream& os = exit_code_ == 0 ? out_ : err_;
  os << absl::StrFormat("[dlaunch] job %s %s in %.2f s", s_.job_id, result, wall);
  if (round_) os << absl::StrFormat(": %d node(s), %d worker(s)", static_cast<int>(round_->nodes.size()), world);
  os << "\n";
  if (exit_code_ != 0 && !failure_.empty()) {
    os << "[dlaunch] " << failure_ << "\n";
    if (!failure_detail_.empty()) {
      os << "[dlaunch] last lines of its log:\n";
      for (const auto& l : failure_detail_) os << "    | " << l << "\n";
    }
  }
  if (total_samples > 0) {
    os << absl::StrFormat("[dlaunch]   %4s %4s %-16s %10s %11s %8s %9s\n", "rank", "node", "host",
                          "samples", "samples/s", "step", "loss");
    for (const auto& [rank, r] : ranks_) {
      std::string host = r.node >= 0 ? nodes_[r.node].host : "?";
      os << absl::StrFormat("[dlaunch]   %4d %4d %-16s %10d %11.1f %8d %9.4f\n", rank, r.node,
                            host, r.samples, r.busy_s > 0 ? r.samples / r.busy_s : 0.0, r.step,
                            r.loss);
    }
    os << absl::StrFormat("[dlaunch] throughput: %.1f samples/s total, %.1f per rank", total_rate,
                          world > 0 ? total_rate / world : 0.0);
    if (test_acc) os << absl::StrFormat(", test accuracy %.2f%%", *test_acc * 100);
    os << "\n";
  }
  os.flush();

  JsonLine summary;
  summary.Add("job_id", s_.job_id)
      .Add("result", result)
      .Add("exit_code", exit_code_)
      .Add("wall_time_s", wall)
      .Add("nodes", round_ ? static_cast<int>(round_->nodes.size()) : 0)
      .Add("world_size", world)
      .Add("samples", total_samples)
      .Add("samples_per_sec", total_rate)
      .Add("samples_per_sec_per_rank", world > 0 ? total_rate / world : 0.0);
  if (loss_n > 0) summary.Add("final_loss", loss_sum / loss_n);
  if (test_acc) summary.Add("test_accuracy", *test_acc);
  if (!failure_.empty()) summary.Add("failure", failure_);
  (void)WriteTextFile(s_.job_dir + "/summary.json", summary.str() + "\n");
  Event(JsonLine()
            .Add("time", NowRfc3339())
            .Add("event", "job_finished")
            .Add("result", result)
            .Add("exit_code", exit_code_)
            .Add("wall_time_s", wall)
            .str());
  metrics_.flush();
  if (service_) service_->Shutdown();
  io_.stop();
}

}  // namespace dlaunch
