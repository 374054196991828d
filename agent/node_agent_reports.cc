// What NodeAgent sends up about its ranks: the report socket's server, each rank's start and
// exit, the heartbeat with the ranks' folded reports, output counts, CPU and GPU samples and the
// host's, and the drain of the report connections at a round's end. AgentState decides when;
// this file builds the messages.
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "agent/health/rank_cpu.h"
#include "agent/node_agent.h"
#include "agent/workers/torch_error_file.h"
#include "agent/workers/worker_launch.h"
#include "proto/report_merge.h"

namespace dlaunch {

using std::chrono::milliseconds;

absl::Status NodeAgent::StartReportServer(const std::string& socket_path) {
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
  if (absl::Status st = reports_->Listen(socket_path); !st.ok()) return st;
  reports_->set_on_restart_line(
      [this](pid_t pid, const v1::RestartLine& line) { OnRestartLine(pid, line); });
  reports_->set_on_connection_closed([this] { Apply(state_->OnReportConnectionClosed()); });
  return absl::OkStatus();
}

int NodeAgent::ReportStarts(const std::vector<ChildSupervisor::StartRequest>& requests,
                            const std::vector<RankSlot>& plan,
                            const std::vector<absl::StatusOr<pid_t>>& started) {
  int ok = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    const int rank = requests[i].rank;
    v1::AgentMessage msg = Message();
    auto* ev = msg.mutable_worker();
    ev->set_rank(rank);
    ev->set_local_rank(plan[i].local_rank);
    if (!started[i].ok()) {
      // Counts as a failed worker: the launcher stops the job and names this rank.
      ev->set_state(v1::WorkerEvent::FAILED);
      ev->set_exit_code(127);
      ev->add_last_lines(std::string(started[i].status().message()));
      Send(std::move(msg));
      Log(absl::StrCat("rank ", rank, ": ", started[i].status().message()));
      continue;
    }
    ++ok;
    pid_t pid = *started[i];
    rank_of_pid_[pid] = rank;
    oom_.OnStarted(pid);
    ev->set_state(v1::WorkerEvent::STARTED);
    ev->set_pid(pid);
    if (auto why = respawn_why_.extract(plan[i].local_rank)) {
      ev->set_restart_path("respawn");
      ev->set_restart_why(why.mapped());
    }
    const std::string path = warm_launcher_ ? warm_launcher_->TakePath(pid) : "";
    ev->set_start_path(path);
    Send(std::move(msg));
    Log(absl::StrCat("rank ", rank, " (local ", plan[i].local_rank, ") pid ", pid, ": ",
                     DescribeRankSlot(plan[i]), path.empty() ? "" : absl::StrCat("; ", path, " start")));
  }
  return ok;
}

void NodeAgent::OnReport(const v1::WorkerReport& r) {
  auto it = pending_reports_.find(r.rank());
  if (it == pending_reports_.end()) {
    pending_reports_[r.rank()] = r;
  } else {
    it->second = MergeReports(it->second, r);
  }
}

void NodeAgent::OnOutput(int rank, bool is_stderr, std::vector<std::string> lines) {
  output_lines_[rank] += static_cast<int64_t>(lines.size());
  if (!state_->session_open()) return;
  const auto& shown = job_.forward_ranks();
  if (!job_.forward_all() && std::find(shown.begin(), shown.end(), rank) == shown.end()) return;
  v1::AgentMessage msg = Message();
  auto* log = msg.mutable_log();
  log->set_rank(rank);
  log->set_stderr(is_stderr);
  for (auto& l : lines) log->add_lines(ShownLine(std::move(l), rank));
  Send(std::move(msg));
}

void NodeAgent::Heartbeat() {
  if (!state_->session_open()) return;
  v1::AgentMessage msg = Message();
  auto* hb = msg.mutable_heartbeat();
  hb->set_agent_time_ms(std::chrono::duration_cast<milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count());
  hb->set_workers_running(supervisor_ ? supervisor_->running() : 0);
  for (auto& [rank, r] : pending_reports_) *hb->add_reports() = std::move(r);
  pending_reports_.clear();
  for (const auto& [rank, n] : output_lines_) (*hb->mutable_output_lines())[rank] = n;
  AddRankCpu(hb);
  AddGpuSamples(gpu_monitor_->Sample(), hb);
  AddRankGpus(hb);
  // The job directory is known once the agent has a place (a spare's comes with its round).
  if (!host_monitor_given_ && (!host_monitor_ || host_monitor_dir_ != job_.job_dir())) {
    host_monitor_ = std::make_unique<HostMonitor>(std::vector<std::string>{job_.job_dir(), "/tmp"});
    host_monitor_dir_ = job_.job_dir();
  }
  *hb->mutable_host() = host_monitor_->Sample();
  Send(std::move(msg));
}

void NodeAgent::AddRankCpu(v1::Heartbeat* hb) const {
  if (!supervisor_) return;
  for (int local = 0; local < job_.local_world_size(); ++local) {
    const std::optional<pid_t> pid = supervisor_->PidOfLocalRank(local);
    if (!pid) continue;
    if (std::optional<v1::RankCpu> cpu = ReadRankCpu(*pid)) {
      (*hb->mutable_rank_cpu())[job_.rank_offset() + local] = *cpu;
    }
  }
}

void NodeAgent::AddRankGpus(v1::Heartbeat* hb) const {
  if (!supervisor_ || hb->gpus_size() == 0 || !plan_.ok()) return;
  for (const RankSlot& slot : *plan_) {
    if (slot.gpus.empty() || !supervisor_->PidOfLocalRank(slot.local_rank)) continue;
    v1::RankGpus& gpus = (*hb->mutable_rank_gpus())[job_.rank_offset() + slot.local_rank];
    for (const std::string& device : slot.gpus) gpus.add_devices(device);
  }
}

void NodeAgent::FlushPendingReports() {
  if (!pending_reports_.empty()) Heartbeat();
}

void NodeAgent::ReportWorkerExit(const SendWorkerExit& ev) {
  const ChildExit& e = ev.exit;
  v1::AgentMessage msg = Message();
  auto* w = msg.mutable_worker();
  w->set_rank(e.rank);
  w->set_local_rank(e.local_rank);
  w->set_pid(e.pid);
  if (WIFEXITED(e.wait_status)) w->set_exit_code(WEXITSTATUS(e.wait_status));
  if (WIFSIGNALED(e.wait_status)) w->set_signal(WTERMSIG(e.wait_status));
  if (WIFSIGNALED(e.wait_status) && WTERMSIG(e.wait_status) == SIGKILL) {
    if (auto oom = oom_.OnKilled(e.pid)) {
      w->set_out_of_memory(*oom);
      Log(absl::StrCat("rank ", e.rank, " (pid ", e.pid, ") was killed for memory: ", *oom));
    }
  } else {
    oom_.Forget(e.pid);
  }
  w->set_state(WorkerEventState(ev.outcome));
  if (ev.outcome == WorkerOutcome::kFailed) {
    for (const auto& l : e.tail) w->add_last_lines(l);
    w->set_error(ReadTorchError(job_.job_dir(), e.rank));  // torch's @record, where it ran
  }
  Send(std::move(msg));
}

void NodeAgent::BeginDrain(const std::vector<int>& keep_open) {
  // Read what the exited workers still have in their report connections (bounded: a
  // connection held open by a stray grandchild must not keep the agent alive). Ranks kept in
  // their process for the next round keep theirs.
  if (reports_) {
    reports_->AcceptPending();
    if (reports_->open_connections() > KeptConnections(keep_open)) {
      if (!drain_timer_) {
        drain_timer_ = clock_.RunAfter(AgentState::kReportDrainLimit, [this] {
          drain_timer_.reset();
          Apply(state_->OnReportsDrained());
        });
      }
      return;
    }
  }
  ReportsDrained();
}

void NodeAgent::ReportsDrained() {
  // The next round's drain needs a timer of its own.
  if (drain_timer_) clock_.Cancel(*drain_timer_);
  drain_timer_.reset();
  Apply(state_->OnReportsDrained());
}

}  // namespace dlaunch
