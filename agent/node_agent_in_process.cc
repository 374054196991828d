// NodeAgent's part of the in-process restart (docs/restarts.md, "In-process restart"): AgentState
// decides which ranks are kept and when; this applies it to the workers' report sockets (the
// lines of v1::RestartLine, proto/report.proto) and processes.
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "agent/node_agent.h"
#include "agent/workers/worker_launch.h"

namespace dlaunch {

namespace {

std::string JsonLine(const v1::RestartLine& line) {
  std::string out;
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(line, &out, opts);
  return out;
}

}  // namespace

int NodeAgent::LocalRankOfPid(pid_t pid) const {
  if (!supervisor_) return -1;
  for (int local = 0; local < job_.local_world_size(); ++local) {
    if (supervisor_->PidOfLocalRank(local) == pid) return local;
  }
  return -1;
}

int NodeAgent::KeptConnections(const std::vector<int>& local_ranks) const {
  int open = 0;
  for (int local : local_ranks) {
    std::optional<pid_t> pid = supervisor_ ? supervisor_->PidOfLocalRank(local) : std::nullopt;
    if (pid && reports_) open += reports_->open_connections_of(*pid);
  }
  return open;
}

void NodeAgent::OnRestartLine(pid_t pid, const v1::RestartLine& line) {
  const int local = LocalRankOfPid(pid);
  if (local < 0 || !state_) return;  // not one of this round's workers (a stray child)
  const std::string& what = line.restart();
  if (what == "hello") {
    Apply(state_->OnRankHello(local, line.in_process()));
  } else if (what == "left") {
    Apply(state_->OnRankLeft(local, line.round()));
  } else if (what == "ready") {
    if (auto sent = join_sent_.extract(local)) {
      // How long a kept rank takes to answer bounds AgentState::kRejoinLimit: in the log, to
      // measure it against the load.
      const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(clock_.Now() -
                                                                              sent.mapped());
      Log(absl::StrCat("local rank ", local, " answered its place in round ", line.round(),
                       " after ", took.count(), " ms"));
    }
    Apply(state_->OnRankReady(local, line.round()));
  } else if (what == "cannot") {
    Apply(state_->OnRankCannot(local, line.why().empty() ? "no reason given" : line.why()));
  }
}

void NodeAgent::KeepOnly(const std::vector<int>& local_ranks, bool keep,
                         std::vector<ChildSupervisor::StartRequest>* requests,
                         std::vector<RankSlot>* slots) {
  const std::set<int> picked(local_ranks.begin(), local_ranks.end());
  std::vector<ChildSupervisor::StartRequest> r;
  std::vector<RankSlot> s;
  for (size_t i = 0; i < requests->size(); ++i) {
    if ((picked.count((*requests)[i].local_rank) > 0) != keep) continue;
    r.push_back(std::move((*requests)[i]));
    s.push_back((*slots)[i]);
  }
  *requests = std::move(r);
  *slots = std::move(s);
}

void NodeAgent::ApplyInProcess(const LeaveRound& leave) {
  Log(absl::StrCat("round ", leave.round, ": ", leave.local_ranks.size(),
                   " rank(s) leave it in their own process"));
  v1::RestartLine line;
  line.set_restart("leave");
  line.set_round(leave.round);
  const std::string text = JsonLine(line);
  for (int local : leave.local_ranks) {
    std::optional<pid_t> pid = supervisor_ ? supervisor_->PidOfLocalRank(local) : std::nullopt;
    // One that cannot be told is ended at the deadline, as one that does not answer.
    if (pid) reports_->Send(*pid, text);
  }
  clock_.RunAfter(leave.within, [this, round = leave.round] {
    Apply(state_->OnLeaveDeadline(round));
  });
}

void NodeAgent::ApplyInProcess(const RejoinRound& rejoin) {
  Log(absl::StrCat("round ", rejoin.round, ": ", rejoin.local_ranks.size(),
                   " rank(s) kept in their process take their place"));
  for (int local : rejoin.local_ranks) {
    std::optional<pid_t> pid = supervisor_ ? supervisor_->PidOfLocalRank(local) : std::nullopt;
    if (!pid) continue;
    const int rank = job_.rank_offset() + local;
    rank_of_pid_[*pid] = rank;
    supervisor_->SetRank(*pid, rank);
    v1::RestartLine line;
    line.set_restart("join");
    line.set_round(rejoin.round);
    line.set_rank(rank);
    line.set_local_rank(local);
    line.set_world_size(job_.world_size());
    line.set_local_world_size(job_.local_world_size());
    line.set_node_rank(job_.node_rank());
    line.set_master_addr(job_.master_addr());
    line.set_master_port(job_.master_port());
    reports_->Send(*pid, JsonLine(line));
    join_sent_[local] = clock_.Now();
  }
  clock_.RunAfter(rejoin.within, [this, round = rejoin.round] {
    Apply(state_->OnRejoinDeadline(round));
  });
}

void NodeAgent::ApplyInProcess(const EndRanks& end) {
  if (!supervisor_) return;
  const std::set<int> ranks(end.local_ranks.begin(), end.local_ranks.end());
  supervisor_->StopWhere([&ranks](int local) { return ranks.count(local) > 0; }, end.grace);
}

void NodeAgent::ApplyInProcess(const StartRanks& start) {
  Log(absl::StrCat("round ", start.round, ": ", start.local_ranks.size(), " rank(s) start anew"));
  const absl::StatusOr<std::vector<RankSlot>>& plan = PlanRound();
  std::vector<RankSlot> slots = plan.ok() ? *plan : UnplacedSlots(job_);
  std::vector<ChildSupervisor::StartRequest> requests =
      BuildStartRequests(job_, slots, ProcessEnv(), report_socket_,
                         worker_sockets_ ? worker_sockets_->path() : "");
  KeepOnly(start.local_ranks, /*keep=*/true, &requests, &slots);
  for (auto& r : requests) r.options.cgroup_procs_fd = cgroup_ ? cgroup_->procs_fd() : -1;
  std::vector<absl::StatusOr<pid_t>> started =
      plan.ok() ? supervisor_->StartAll(requests)
                : std::vector<absl::StatusOr<pid_t>>(requests.size(), plan.status());
  const int ok = ReportStarts(requests, slots, started);
  Apply(state_->OnWorkersStarted(ok, static_cast<int>(requests.size()) - ok));
}

void NodeAgent::ApplyInProcess(const NoteRankPath& path) {
  if (!path.in_process) {
    // Goes on the started event of its new process.
    respawn_why_[path.local_rank] = path.why;
    return;
  }
  std::optional<pid_t> pid = supervisor_ ? supervisor_->PidOfLocalRank(path.local_rank)
                                         : std::nullopt;
  if (!pid) return;
  const int rank = job_.rank_offset() + path.local_rank;
  Log(absl::StrCat("round ", path.round, ": rank ", rank, " (local ", path.local_rank, ") pid ",
                   *pid, " restarted in its process"));
  // Its started event of the round: the launcher counts it among the round's ranks.
  v1::AgentMessage msg = Message();
  auto* ev = msg.mutable_worker();
  ev->set_rank(rank);
  ev->set_local_rank(path.local_rank);
  ev->set_state(v1::WorkerEvent::STARTED);
  ev->set_pid(*pid);
  ev->set_restart_path("in_process");
  Send(std::move(msg));
}

}  // namespace dlaunch
