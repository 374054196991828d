#include "agent/node_agent.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "agent/node_preflight.h"
#include "agent/workers/worker_env.h"
#include "agent/workers/worker_launch.h"
#include "common/environment.h"
#include "common/file_io.h"
#include "common/host_identity.h"
#include "common/process.h"
#include "rendezvous/rendezvous_state.h"

namespace dlaunch {

using std::chrono::milliseconds;

NodeAgent::NodeAgent(boost::asio::io_context& io, AgentOptions options,
                     std::unique_ptr<GpuMonitor> gpu_monitor,
                     std::unique_ptr<HostMonitor> host_monitor)
    : io_(io),
      options_(std::move(options)),
      clock_(io),
      sweeper_(clock_, [this](const std::string& l) { Log(l); }),
      gpu_monitor_(std::move(gpu_monitor)),
      host_monitor_(std::move(host_monitor)),
      host_monitor_given_(host_monitor_ != nullptr) {
  if (options_.host.empty()) options_.host = LocalHostName();
  if (options_.addr.empty()) options_.addr = RouteAddressTo(options_.control);
  agent_id_ = absl::StrCat(options_.host, ":", getpid(), ":", RandomHex(6));
}

NodeAgent::~NodeAgent() {
  if (move_thread_.joinable()) move_thread_.join();
  if (client_) client_->Close(milliseconds(500));
}

void NodeAgent::Log(const std::string& line) const {
  std::cerr << "[dlaunch-agent " << options_.host;
  if (state_ && state_->spare()) {
    std::cerr << " spare " << node_id_;
  } else if (job_.nnodes() > 0) {
    std::cerr << " node " << job_.node_rank();
    if (job_.round() > 0) std::cerr << " round " << job_.round();
  }
  std::cerr << "] " << line << std::endl;
}

absl::Status NodeAgent::Start() {
  gpus_ = DiscoverGpus(ProcessEnvironment());
  // Opened once: an agent process serves one job on one node.
  if (!gpu_monitor_) gpu_monitor_ = GpuMonitor::Load(gpus_.visible);
  // A node that sees GPUs but cannot read them says why, once (docs/live-view.md).
  if (!gpus_.visible.empty() && !gpu_monitor_->unavailable().empty()) {
    Log(absl::StrCat("no GPU health in heartbeats: ", gpu_monitor_->unavailable()));
  }
  client_ = std::make_unique<ControlClient>(options_.control, options_.credentials);
  client_->set_fail_fast(HasFallback());
  v1::PreflightRequest asked;
  asked.set_agent_id(agent_id_);
  asked.set_host(options_.host);
  auto checks = PreflightThisNode(*client_, asked, gpus_, *gpu_monitor_, JoinTimeout(), options_.addr);
  // Its relay went before this agent asked (or while it asked): ask the launcher itself.
  if (!checks.ok() && FallBackBeforeJoining("preflight", checks.status())) {
    checks = PreflightThisNode(*client_, asked, gpus_, *gpu_monitor_, JoinTimeout(), options_.addr);
  }
  if (!checks.ok()) return checks.status();
  const std::vector<std::string> failed = FailedChecks(*checks);
  if (!checks->empty() && failed.empty()) {
    double slowest = 0;
    for (const v1::CheckResult& c : *checks) slowest = std::max(slowest, c.seconds());
    Log(absl::StrFormat("preflight passed (%d checks, %.2f s)", checks->size(), slowest));
  }
  auto joined = Join(gpus_, *checks);
  if (!joined.ok() && !failed.empty() &&
      joined.status().code() == absl::StatusCode::kFailedPrecondition) {
    // Not an error of this agent's: it found its node unfit and told the launcher, which goes
    // on without it (or stops the job, naming it).
    Log(absl::StrCat("left out of the job: its preflight failed: ", absl::StrJoin(failed, "; ")));
    return absl::OkStatus();
  }
  if (!joined.ok()) return joined.status();
  if (joined->checks_only()) return absl::OkStatus();  // `dlaunch doctor`
  job_ = *std::move(joined);
  node_id_ = job_.node_id();
  state_.emplace(AgentConfig{milliseconds(job_.heartbeat_ms()), milliseconds(job_.grace_ms()),
                             job_.max_restarts(), job_.spare(), job_.round(),
                             job_.heartbeat_misses(), HasFallback(),
                             milliseconds(job_.lease_ms()), job_.restart_in_process()});
  WatchSignals();
  // Daemons the workers start (setsid, double fork) are handed to this agent, not to init.
  if (!BecomeSubreaper()) Log("cannot become the workers' subreaper: their daemons may outlive the job");
  WatchAdoptedExits();
  auto cgroup = JobCgroup::CreateForThisProcess(JobCgroupName(job_.job_id(), agent_id_));
  if (cgroup.ok()) cgroup_ = *std::move(cgroup);
  else Log(absl::StrCat("no cgroup for the workers (the subreaper alone): ", cgroup.status().message()));
  if (job_.spare()) Log("joined as a spare: waiting for a round to take a lost node's place");
  // Unix socket paths are limited to 107 bytes, so the socket lives in /tmp, not the job dir.
  report_socket_ = absl::StrCat("/tmp/dlaunch-", getpid(), "-", RandomHex(6), ".sock");
  if (absl::Status st = StartReportServer(report_socket_); !st.ok()) return st;
  auto sockets = WorkerSocketDir::Create();
  if (sockets.ok()) worker_sockets_ = *std::move(sockets);
  else Log(absl::StrCat("no TORCH_WORKER_SERVER_SOCKET: ", sockets.status().message()));
  // Started before the first round (a spare's too: it is warm when it takes a lost node's place).
  KeepWarmProcess();
  // A member's first round starts as the session opens (AgentState's StartWorkers).
  if (absl::Status st = OpenSession(); !st.ok()) return st;
  if (!state_->finished()) ArmTick();
  ArmLeaseCheck();
  return absl::OkStatus();
}

const absl::StatusOr<std::vector<RankSlot>>& NodeAgent::PlanRound() {
  if (job_.local_world_size() != planned_local_world_size_) {
    plan_ = PlanThisNode(gpus_, PlacementRequestFor(job_, options_.host), &plan_note_);
    planned_local_world_size_ = job_.local_world_size();
    if (plan_.ok()) Log(plan_note_);
  }
  // Written every round (node rank and global ranks may change); not fatal: this log has it too.
  if (plan_.ok()) {
    if (absl::Status st = WritePlacementFile(job_, PlacementText(job_, *plan_, plan_note_));
        !st.ok()) {
      Log(std::string(st.message()));
    }
  }
  return plan_;
}

void NodeAgent::StartRoundWorkers(const StartWorkers& start) {
  if (next_place_) {
    job_ = *std::move(next_place_);
    next_place_.reset();
  }
  rank_of_pid_.clear();
  pending_reports_.clear();
  output_lines_.clear();
  dumped_ranks_.clear();
  worker_store_.reset();  // the last round's, if this node hosted it; then this round's
  auto store = HostWorkerStore(io_, job_, [this](const std::string& l) { Log(l); });
  if (store.ok()) worker_store_ = *std::move(store);
  Log(absl::StrCat("round ", start.round, ": node rank ", job_.node_rank(), " of ", job_.nnodes(),
                   ", ranks ", job_.rank_offset(), "..",
                   job_.rank_offset() + job_.local_world_size() - 1, " of ", job_.world_size(),
                   ", MASTER ", job_.master_addr(), ":", job_.master_port()));
  // Not fatal: a worker whose log cannot be opened fails to start, naming the path.
  if (absl::Status st = MakeJobDirs(job_.job_dir()); !st.ok()) Log(std::string(st.message()));
  if (!supervisor_) {
    // Made with the first round: a spare learns the job directory from its StartRound.
    ChildSupervisor::Seams seams;
    if (job_.worker().warm_start()) {
      warm_launcher_ = std::make_unique<WarmProcessLauncher>(io_, [this] { return zygote_.get(); });
      seams.launcher = warm_launcher_.get();
    }
    supervisor_ = std::make_unique<ChildSupervisor>(
        io_, job_.job_dir() + "/logs", options_.tail_lines,
        ChildSupervisor::Callbacks{
            [this](int rank, bool err, std::vector<std::string> lines) {
              OnOutput(rank, err, std::move(lines));
            },
            [this](const ChildExit& e) { OnChildExit(e); }},
        "rank-", seams);
    supervisor_->SetLogLimit(WorkerLogLimit(ProcessEnv()));
  }
  KeepWarmProcess();
  // A plan the node cannot honour (a map naming CPUs it lacks) fails every rank's start, saying why.
  const absl::StatusOr<std::vector<RankSlot>>& plan = PlanRound();
  std::vector<RankSlot> slots = plan.ok() ? *plan : UnplacedSlots(job_);
  std::vector<ChildSupervisor::StartRequest> requests =
      BuildStartRequests(job_, slots, ProcessEnv(), report_socket_,
                         worker_sockets_ ? worker_sockets_->path() : "");
  KeepOnly(start.kept, /*keep=*/false, &requests, &slots);  // kept ranks run already
  for (auto& r : requests) r.options.cgroup_procs_fd = cgroup_ ? cgroup_->procs_fd() : -1;
  // A store node 0 cannot serve fails every start here, as a plan the node cannot honour does.
  const absl::Status unstartable = !store.ok() ? store.status() : plan.status();
  std::vector<absl::StatusOr<pid_t>> started =
      unstartable.ok() ? supervisor_->StartAll(requests)
                       : std::vector<absl::StatusOr<pid_t>>(requests.size(), unstartable);
  int ok = ReportStarts(requests, slots, started);
  Apply(state_->OnWorkersStarted(ok, static_cast<int>(requests.size()) - ok));
}

std::chrono::milliseconds NodeAgent::JoinTimeout() const {
  return milliseconds(static_cast<int64_t>(options_.join_timeout_s * 1000) + 5000);
}

void NodeAgent::WatchSignals() {
  // Taken over only after the join: until the workers exist, the default action (exit) is right.
  if (!signals_) signals_.emplace(io_, SIGINT, SIGTERM, SIGHUP);
  signals_->async_wait([this](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    WatchSignals();
    Apply(state_->OnSignal(sig, clock_.Now()));
  });
}

v1::AgentMessage NodeAgent::Message() const {
  v1::AgentMessage m;
  m.set_node_id(node_id_);
  m.set_agent_id(agent_id_);
  m.set_round(state_->round());
  m.set_sent_ms(
      std::chrono::duration_cast<milliseconds>(clock_.Now().time_since_epoch()).count());
  return m;
}

void NodeAgent::Send(v1::AgentMessage msg) {
  if (!client_->Queue(std::move(msg)) || wake_posted_) return;
  wake_posted_ = true;
  boost::asio::post(io_, [this] {
    wake_posted_ = false;
    if (client_) client_->Wake();
  });
}

void NodeAgent::ArmTick() {
  heartbeat_timer_ = clock_.RunAfter(state_->heartbeat_interval(), [this] { OnTick(); });
}

void NodeAgent::OnTick() {
  heartbeat_timer_.reset();
  Apply(state_->OnTick(clock_.Now()));
  // On its way out, the agent still beats while the sweep its RoundEnded and exit wait for runs.
  if (state_->finished() && sweeper_.busy()) Heartbeat();
  if (!state_->finished() || sweeper_.busy()) ArmTick();
  ArmLeaseCheck();
}

void NodeAgent::ArmLeaseCheck() {
  if (lease_timer_) return;  // it re-arms itself for the lease's new end when it fires
  const std::optional<AgentState::Time> due = state_->lease_due();
  if (!due) return;
  const milliseconds wait =
      std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(*due - clock_.Now()) +
                                    milliseconds(1));
  lease_timer_ = clock_.RunAfter(wait, [this, due = *due] {
    lease_timer_.reset();
    Apply(state_->OnLeaseDue(clock_.Now(), due));
    ArmLeaseCheck();
  });
}

void NodeAgent::OnChildExit(const ChildExit& e) {
  Log(absl::StrCat("rank ", e.rank, " pid ", e.pid, " ended: ", DescribeWaitStatus(e.wait_status),
                   e.stopped ? " (stopped)" : ""));
  Apply(state_->OnWorkerExit(e));
}

void NodeAgent::OnCommand(const v1::LauncherCommand& cmd) {
  if (client_) client_->Ack(cmd.heard_seq());
  // Taken before the echo below can confirm a move: a stop that comes with the launcher's first
  // answer to a moved session is bound to the grace counted from the break.
  const milliseconds stop_grace = state_->CapGrace(clock_.Now(), milliseconds(cmd.stop().grace_ms()));
  // The lease runs from the newest of this agent's messages the launcher has processed.
  if (cmd.heard_ms() > 0) {
    Apply(state_->OnLauncherMessage(AgentState::Time(milliseconds(cmd.heard_ms()))));
  }
  if (cmd.has_stop()) {
    const v1::StopCommand& stop = cmd.stop();
    Apply(state_->OnStopCommand(StopRequest{
        stop.round(), stop.exit(), stop.reason(), stop_grace,
        std::vector<int>(stop.dump_ranks().begin(), stop.dump_ranks().end()),
        milliseconds(stop.dump_budget_ms())}));
  } else if (cmd.has_start()) {
    next_place_ = cmd.start().place();
    Apply(state_->OnStartRound(cmd.start().place().round(),
                               milliseconds(cmd.start().start_after_ms())));
    // StartRoundWorkers took it, or the state refused it; a held start keeps it until it is due.
    if (!state_->start_held()) next_place_.reset();
  }
}

void NodeAgent::Apply(const AgentActions& actions) {
  for (const AgentAction& action : actions) {
    std::visit(
        [this](const auto& a) {
          using T = std::decay_t<decltype(a)>;
          if constexpr (std::is_same_v<T, StartWorkers>) {
            StartRoundWorkers(a);
          } else if constexpr (std::is_same_v<T, HoldStart>) {
            Log(absl::StrCat("round ", a.round, ": workers start in ", a.delay.count(), " ms"));
            clock_.RunAfter(a.delay, [this, round = a.round] {
              Apply(state_->OnHeldStartDue(round));
              if (!state_->start_held()) next_place_.reset();
            });
          } else if constexpr (std::is_same_v<T, StopWorkers>) {
            Stop(a);
          } else if constexpr (std::is_same_v<T, KillWorkers>) {
            if (supervisor_) supervisor_->KillAll();
          } else if constexpr (std::is_same_v<T, SendHeartbeat>) {
            Heartbeat();
          } else if constexpr (std::is_same_v<T, FlushReports>) {
            FlushPendingReports();
          } else if constexpr (std::is_same_v<T, SendWorkerExit>) {
            ReportWorkerExit(a);
          } else if constexpr (std::is_same_v<T, DrainReports>) {
            BeginDrain(a.keep_open);
          } else if constexpr (std::is_same_v<T, DumpStacks>) {
            StartStackDump(a);
          } else if constexpr (std::is_same_v<T, SendRoundEnded>) {
            ReportRoundEnded(a.round);
          } else if constexpr (std::is_same_v<T, LogNote>) {
            Log(a.text);
          } else if constexpr (std::is_same_v<T, MoveSession>) {
            MoveSessionToFallback(a);
          } else if constexpr (IsInProcessAction<T>) {
            ApplyInProcess(a);  // node_agent_in_process.cc
          } else {
            static_assert(std::is_same_v<T, ExitAgent>);
            Finish(a.code);
          }
        },
        action);
  }
}

void NodeAgent::Stop(const StopWorkers& stop) {
  if (stop.fenced) {
    // SIGKILL to every worker's group, then to what they left behind, now (docs/restarts.md).
    Log(absl::StrCat("killing workers: ", stop.why));
    if (supervisor_) supervisor_->KillAll();
    SweepOrphans(nullptr);
    return;
  }
  if (!supervisor_) return;
  if (stop.first) Log(absl::StrCat("stopping workers: ", stop.why));
  if (!stop.keep.empty()) {  // ranks leaving the round in their own process run on
    const std::set<int> keep(stop.keep.begin(), stop.keep.end());
    supervisor_->StopWhere([&keep](int local) { return keep.count(local) == 0; }, stop.grace);
  } else if (stop.grace.count() <= 0) {
    supervisor_->KillAll();
  } else {
    supervisor_->StopAll(stop.grace);
  }
}

void NodeAgent::Finish(int code) {
  exit_code_ = code;
  SweepOrphans([this] { Close(); });
  if (sweeper_.busy() && !heartbeat_timer_) ArmTick();
}

void NodeAgent::Close() {
  cgroup_.reset();  // removed: empty now
  if (drain_timer_) clock_.Cancel(*drain_timer_);
  if (heartbeat_timer_) clock_.Cancel(*heartbeat_timer_);
  if (lease_timer_) clock_.Cancel(*lease_timer_);
  drain_timer_.reset();
  heartbeat_timer_.reset();
  lease_timer_.reset();
  if (signals_) signals_->cancel();
  if (sigchld_) sigchld_->cancel();
  reports_.reset();
  worker_sockets_.reset();
  zygote_.reset();
  // Let the writer flush the last events before the stream is half-closed.
  if (client_) client_->Close(milliseconds(2000));
  io_.stop();
}

}  // namespace dlaunch
