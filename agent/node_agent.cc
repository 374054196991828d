#include "agent/node_agent.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <iostream>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/local_rank_plan.h"
#include "common/host_identity.h"
#include "common/process.h"
#include "agent/worker_env.h"

namespace dlaunch {
namespace {

}  // namespace

NodeAgent::NodeAgent(boost::asio::io_context& io, AgentOptions options)
    : io_(io),
      options_(std::move(options)),
      heartbeat_timer_(io) {
  if (options_.host.empty()) options_.host = LocalHostName();
  if (options_.addr.empty()) options_.addr = RouteAddressTo(options_.control);
  agent_id_ = absl::StrCat(options_.host, ":", getpid(), ":", RandomHex(6));
}

NodeAgent::~NodeAgent() {
  if (client_) client_->Close(std::chrono::milliseconds(500));
}

void NodeAgent::Log(const std::string& line) const {
  std::cerr << "[dlaunch-agent " << options_.host;
  if (job_.nnodes() > 0) std::cerr << " node " << job_.node_rank();
  std::cerr << "] " << line << std::endl;
}

absl::Status NodeAgent::Start() {
  GpuInventory gpus = DiscoverGpus(ProcessGetenv);
  int nproc = options_.nproc > 0 ? options_.nproc : DefaultProcsPerNode(gpus);

  client_ = std::make_unique<ControlClient>(options_.control, options_.token);
  v1::JoinRequest join;
  join.set_agent_id(agent_id_);
  join.set_host(options_.host);
  join.set_addr(options_.addr);
  join.set_slots(nproc);
  join.set_gpus(gpus.count());
  join.set_pid(getpid());
  join.set_worker_port(FreePort(options_.addr));
  auto timeout = std::chrono::milliseconds(static_cast<int64_t>(options_.join_timeout_s * 1000) + 5000);
  auto joined = client_->Join(join, timeout);
  if (!joined.ok()) return joined.status();
  job_ = *joined;
  // Signals are taken over only now: until the workers exist, the default action (exit) is right.
  signals_.emplace(io_, SIGINT, SIGTERM, SIGHUP);
  signals_->async_wait([this](const boost::system::error_code& ec, int sig) {
    if (!ec) OnSignal(sig);
  });

  std::string log_dir = job_.job_dir() + "/logs";
  mkdir(job_.job_dir().c_str(), 0755);
  mkdir(log_dir.c_str(), 0755);
  mkdir((job_.job_dir() + "/errors").c_str(), 0755);

  auto plan = PlanLocalRanks(job_.local_world_size(), gpus, AllowedCpus(),
                             job_.worker().gpus_per_proc());
  if (!plan.ok()) return plan.status();

  reports_ = std::make_unique<ReportServer>(
      io_,
      [this](pid_t pid) {
        auto it = rank_of_pid_.find(pid);
        return it == rank_of_pid_.end() ? -1 : it->second;
      },
      [this](const v1::WorkerReport& r) { OnReport(r); },
      [this](int rank, const std::string& err) {
        Log(absl::StrCat("ignored a malformed report from rank ", rank, ": ", err));
      });
  // Unix socket paths are limited to 107 bytes, so the socket lives in /tmp, not the job dir.
  std::string sock = absl::StrCat("/tmp/dlaunch-", getpid(), "-", RandomHex(6), ".sock");
  if (auto st = reports_->Listen(sock); !st.ok()) return st;
  reports_->set_on_connection_closed([this] { FinishIfDone(); });

  supervisor_ = std::make_unique<ChildSupervisor>(
      io_, log_dir, options_.tail_lines,
      ChildSupervisor::Callbacks{
          [this](int rank, bool err, std::vector<std::string> lines) {
            OnOutput(rank, err, std::move(lines));
          },
          [this](const ChildExit& e) { OnChildExit(e); }});

  auto status = client_->OpenSession(
      [this](const v1::LauncherCommand& c) { boost::asio::post(io_, [this, c] { OnCommand(c); }); },
      [this](const std::string& why) { boost::asio::post(io_, [this, why] { OnSessionClosed(why); }); });
  if (!status.ok()) return status;
  session_open_ = true;
  last_from_launcher_ = std::chrono::steady_clock::now();

  WorkerEnvInput in;
  in.base_env = ProcessEnv();
  for (const auto& [k, v] : job_.worker().env()) in.spec_env[k] = v;
  in.node_rank = job_.node_rank();
  in.nnodes = job_.nnodes();
  in.rank_offset = job_.rank_offset();
  in.local_world_size = job_.local_world_size();
  in.world_size = job_.world_size();
  in.master_addr = job_.master_addr();
  in.master_port = job_.master_port();
  in.restart_count = job_.round();
  in.max_restarts = job_.max_restarts();
  in.job_id = job_.job_id();
  in.job_dir = job_.job_dir();
  in.report_socket = sock;
  in.isolate_gpus = job_.worker().isolate_gpus();
  std::vector<std::string> argv(job_.worker().argv().begin(), job_.worker().argv().end());

  std::vector<ChildSupervisor::StartRequest> requests;
  for (const RankSlot& slot : *plan) {
    in.slot = slot;
    ChildSupervisor::StartRequest r;
    r.rank = job_.rank_offset() + slot.local_rank;
    r.local_rank = slot.local_rank;
    r.options.argv = argv;
    r.options.envp = ToEnvp(BuildWorkerEnv(in));
    r.options.workdir = job_.worker().workdir();
    requests.push_back(std::move(r));
  }
  std::vector<absl::StatusOr<pid_t>> started = supervisor_->StartAll(requests);
  for (size_t i = 0; i < requests.size(); ++i) {
    const int rank = requests[i].rank;
    const RankSlot& slot = (*plan)[i];
    v1::AgentMessage msg = Message();
    auto* ev = msg.mutable_worker();
    ev->set_rank(rank);
    ev->set_local_rank(slot.local_rank);
    if (!started[i].ok()) {
      // Counts as a failed worker: the launcher stops the job and names this rank.
      ev->set_state(v1::WorkerEvent::FAILED);
      ev->set_exit_code(127);
      ev->add_last_lines(std::string(started[i].status().message()));
      client_->Send(std::move(msg));
      failed_ = true;
      Log(absl::StrCat("rank ", rank, ": ", started[i].status().message()));
      StopWorkers("a worker could not start", std::chrono::milliseconds(job_.grace_ms()));
      continue;
    }
    pid_t pid = *started[i];
    rank_of_pid_[pid] = rank;
    ev->set_state(v1::WorkerEvent::STARTED);
    ev->set_pid(pid);
    client_->Send(std::move(msg));
    Log(absl::StrCat("rank ", rank, " (local ", slot.local_rank, ") pid ", pid, ": ",
                     DescribeRankSlot(slot)));
  }
  Heartbeat();
  FinishIfDone();
  return absl::OkStatus();
}

v1::AgentMessage NodeAgent::Message() const {
  v1::AgentMessage m;
  m.set_node_rank(job_.node_rank());
  m.set_agent_id(agent_id_);
  return m;
}

void NodeAgent::Heartbeat() {
  if (finished_) return;
  auto interval = std::chrono::milliseconds(std::max(50, job_.heartbeat_ms()));
  if (session_open_ && std::chrono::steady_clock::now() - last_from_launcher_ > 3 * interval) {
    OnSessionClosed("no word from the launcher for 3 heartbeat intervals");
  }
  if (session_open_) {
    v1::AgentMessage msg = Message();
    auto* hb = msg.mutable_heartbeat();
    hb->set_agent_time_ms(std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count());
    hb->set_workers_running(supervisor_ ? supervisor_->running() : 0);
    for (auto& [rank, r] : pending_reports_) *hb->add_reports() = std::move(r);
    pending_reports_.clear();
    client_->Send(std::move(msg));
  }
  heartbeat_timer_.expires_after(interval);
  heartbeat_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) Heartbeat();
  });
}

void NodeAgent::OnReport(const v1::WorkerReport& r) {
  // Several reports from a rank between heartbeats fold into one: samples and time add up,
  // the rest is the latest value.
  auto it = pending_reports_.find(r.rank());
  if (it == pending_reports_.end()) {
    pending_reports_[r.rank()] = r;
    return;
  }
  v1::WorkerReport merged = r;
  merged.set_samples(it->second.samples() + r.samples());
  merged.set_interval_s(it->second.interval_s() + r.interval_s());
  auto* t = merged.mutable_timings();
  const auto& a = it->second.timings();
  t->set_data_ms(t->data_ms() + a.data_ms());
  t->set_forward_ms(t->forward_ms() + a.forward_ms());
  t->set_backward_ms(t->backward_ms() + a.backward_ms());
  t->set_comm_wait_ms(t->comm_wait_ms() + a.comm_wait_ms());
  t->set_optimizer_ms(t->optimizer_ms() + a.optimizer_ms());
  if (merged.interval_s() > 0) merged.set_samples_per_sec(merged.samples() / merged.interval_s());
  if (!r.has_test_accuracy() && it->second.has_test_accuracy()) {
    merged.set_test_accuracy(it->second.test_accuracy());
  }
  it->second = std::move(merged);
}

void NodeAgent::OnOutput(int rank, bool is_stderr, std::vector<std::string> lines) {
  if (!session_open_) return;
  if (!job_.forward_all()) {
    bool wanted = false;
    for (int r : job_.forward_ranks()) wanted |= (r == rank);
    if (!wanted) return;
  }
  v1::AgentMessage msg = Message();
  auto* log = msg.mutable_log();
  log->set_rank(rank);
  log->set_stderr(is_stderr);
  for (auto& l : lines) log->add_lines(std::move(l));
  client_->Send(std::move(msg));
}

void NodeAgent::OnChildExit(const ChildExit& e) {
  bool ok = WIFEXITED(e.wait_status) && WEXITSTATUS(e.wait_status) == 0;
  v1::AgentMessage msg = Message();
  auto* ev = msg.mutable_worker();
  ev->set_rank(e.rank);
  ev->set_local_rank(e.local_rank);
  ev->set_pid(e.pid);
  if (WIFEXITED(e.wait_status)) ev->set_exit_code(WEXITSTATUS(e.wait_status));
  if (WIFSIGNALED(e.wait_status)) ev->set_signal(WTERMSIG(e.wait_status));
  if (ok) {
    ev->set_state(v1::WorkerEvent::SUCCEEDED);
  } else if (e.stopped || stopping_) {
    ev->set_state(v1::WorkerEvent::STOPPED);
  } else {
    ev->set_state(v1::WorkerEvent::FAILED);
    for (const auto& l : e.tail) ev->add_last_lines(l);
    failed_ = true;
  }
  // Reports still pending for this rank go up before its exit event.
  if (!pending_reports_.empty()) Heartbeat();
  client_->Send(std::move(msg));
  Log(absl::StrCat("rank ", e.rank, " pid ", e.pid, " ended: ", DescribeWaitStatus(e.wait_status),
                   e.stopped ? " (stopped)" : ""));
  if (!ok && !e.stopped) failed_ = true;
  FinishIfDone();
}

void NodeAgent::OnCommand(const v1::LauncherCommand& cmd) {
  last_from_launcher_ = std::chrono::steady_clock::now();
  if (cmd.has_stop()) {
    StopWorkers(absl::StrCat("launcher: ", cmd.stop().reason()),
                std::chrono::milliseconds(cmd.stop().grace_ms()));
  }
}

void NodeAgent::OnSessionClosed(const std::string& why) {
  if (!session_open_) return;
  session_open_ = false;
  if (supervisor_ && supervisor_->running() > 0) {
    failed_ = true;
    StopWorkers(absl::StrCat("lost the launcher (", why, ")"),
                std::chrono::milliseconds(job_.grace_ms()));
  }
  FinishIfDone();
}

void NodeAgent::OnSignal(int sig) {
  ++signals_seen_;
  signals_->async_wait([this](const boost::system::error_code& ec, int s) {
    if (!ec) OnSignal(s);
  });
  failed_ = true;
  if (signals_seen_ > 1) {
    if (supervisor_) supervisor_->KillAll();
  } else {
    StopWorkers(absl::StrCat("received signal ", sig),
                std::chrono::milliseconds(job_.grace_ms() > 0 ? job_.grace_ms() : 1000));
  }
  if (!supervisor_) {
    finished_ = true;
    exit_code_ = 1;
    io_.stop();
  }
}

void NodeAgent::StopWorkers(const std::string& why, std::chrono::milliseconds grace) {
  if (!supervisor_) return;
  if (!stopping_) Log(absl::StrCat("stopping workers: ", why));
  stopping_ = true;
  if (grace.count() <= 0) {
    supervisor_->KillAll();
  } else {
    supervisor_->StopAll(grace);
  }
}

void NodeAgent::FinishIfDone() {
  if (finished_ || !supervisor_ || supervisor_->running() > 0) return;
  if (reports_ && !reports_drained_) {
    // Read what the exited workers still have in their report connections (bounded: a
    // connection held open by a stray grandchild must not keep the agent alive).
    reports_->AcceptPending();
    if (reports_->open_connections() > 0) {
      if (!drain_timer_) {
        drain_timer_.emplace(io_, std::chrono::seconds(2));
        drain_timer_->async_wait([this](const boost::system::error_code& ec) {
          if (ec) return;
          reports_drained_ = true;
          FinishIfDone();
        });
      }
      return;
    }
  }
  if (drain_timer_) drain_timer_->cancel();
  if (!pending_reports_.empty()) Heartbeat();
  finished_ = true;
  exit_code_ = failed_ ? 1 : 0;
  heartbeat_timer_.cancel();
  if (signals_) signals_->cancel();
  reports_.reset();
  // Let the writer flush the last events before the stream is half-closed.
  client_->Close(std::chrono::milliseconds(2000));
  io_.stop();
}

}  // namespace dlaunch
