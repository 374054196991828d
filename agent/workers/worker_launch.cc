#include "agent/workers/worker_launch.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "agent/workers/torch_error_file.h"
#include "agent/workers/worker_server_socket.h"
#include "common/file_io.h"

namespace dlaunch {

PlacementRequest PlacementRequestFor(const v1::JoinResponse& job, const std::string& host) {
  PlacementRequest req;
  req.host = host;
  req.nproc = job.local_world_size();
  req.gpus_per_proc = job.worker().gpus_per_proc();
  req.gpus_by_locality = job.worker().isolate_gpus();
  req.binding = job.worker().cpu_binding_none() ? CpuBinding::kNone : CpuBinding::kCores;
  for (const v1::RankCpus& entry : job.worker().cpu_map()) {
    ExplicitRankPlacement e;
    e.cpus.assign(entry.cpus().begin(), entry.cpus().end());
    e.gpu = entry.gpu();
    req.explicit_map.push_back(std::move(e));
  }
  return req;
}

std::vector<RankSlot> UnplacedSlots(const v1::JoinResponse& job) {
  std::vector<RankSlot> slots(static_cast<size_t>(std::max(job.local_world_size(), 0)));
  for (size_t i = 0; i < slots.size(); ++i) slots[i].local_rank = static_cast<int>(i);
  return slots;
}

std::vector<std::string> SubstituteLocalRank(std::vector<std::string> argv, int local_rank) {
  for (std::string& arg : argv) {
    absl::StrReplaceAll({{"${local_rank}", std::to_string(local_rank)}}, &arg);
  }
  return argv;
}

std::vector<ChildSupervisor::StartRequest> BuildStartRequests(
    const v1::JoinResponse& job, const std::vector<RankSlot>& plan, const EnvMap& base_env,
    const std::string& report_socket, const std::string& worker_socket_dir) {
  WorkerEnvInput in;
  in.base_env = base_env;
  for (const auto& [k, v] : job.worker().env()) in.spec_env[k] = v;
  in.node_rank = job.node_rank();
  in.nnodes = job.nnodes();
  in.rank_offset = job.rank_offset();
  in.local_world_size = job.local_world_size();
  in.world_size = job.world_size();
  in.master_addr = job.master_addr();
  in.master_port = job.master_port();
  in.restart_count = job.round();
  in.max_restarts = job.max_restarts();
  in.job_id = job.job_id();
  in.job_dir = job.job_dir();
  in.report_socket = report_socket;
  in.isolate_gpus = job.worker().isolate_gpus();
  in.agent_store = job.worker().agent_store();
  const std::vector<std::string> argv(job.worker().argv().begin(), job.worker().argv().end());

  std::vector<ChildSupervisor::StartRequest> requests;
  for (const RankSlot& slot : plan) {
    in.slot = slot;
    ChildSupervisor::StartRequest r;
    r.rank = job.rank_offset() + slot.local_rank;
    r.local_rank = slot.local_rank;
    // An earlier round's error file is not this round's: torch writes one only on an exception.
    ::unlink(RankErrorFilePath(job.job_dir(), r.rank).c_str());
    // torch's worker server refuses a path that exists, and a rank's socket outlives the rank.
    in.worker_server_socket.clear();
    if (!worker_socket_dir.empty()) {
      in.worker_server_socket = WorkerServerSocketPath(worker_socket_dir, r.rank);
      ::unlink(in.worker_server_socket.c_str());
    }
    r.options.argv = SubstituteLocalRank(argv, slot.local_rank);
    r.options.envp = ToEnvp(BuildWorkerEnv(in));
    r.options.workdir = job.worker().workdir();
    r.options.cpu_affinity = slot.cpus;
    // A hung rank's stacks are taken by py-spy or gdb, the agent's children, not its ancestors.
    r.options.traceable_by_parent = true;
    requests.push_back(std::move(r));
  }
  return requests;
}

std::string ShownLine(std::string line, int rank) {
  constexpr size_t kShownLineBytes = 4096;
  if (line.size() <= kShownLineBytes) return line;
  const size_t cut = line.size() - kShownLineBytes;
  line.resize(kShownLineBytes);
  absl::StrAppend(&line, " [", cut, " more bytes in logs/rank-", rank, ".log]");
  return line;
}

int64_t WorkerLogLimit(const EnvMap& env) {
  auto it = env.find("DLAUNCH_WORKER_LOG_LIMIT");
  if (it == env.end()) return ChildSupervisor::kDefaultLogLimit;
  absl::string_view text = absl::StripAsciiWhitespace(it->second);
  int shift = 0;
  if (!text.empty()) {
    switch (absl::ascii_toupper(static_cast<unsigned char>(text.back()))) {
      case 'K': shift = 10; break;
      case 'M': shift = 20; break;
      case 'G': shift = 30; break;
      default: break;
    }
  }
  if (shift > 0) text.remove_suffix(1);
  int64_t n = 0;
  if (!absl::SimpleAtoi(text, &n) || n < 0 || n > (int64_t{1} << (62 - shift))) {
    return ChildSupervisor::kDefaultLogLimit;
  }
  return n << shift;
}

v1::WorkerEvent::State WorkerEventState(WorkerOutcome outcome) {
  switch (outcome) {
    case WorkerOutcome::kSucceeded:
      return v1::WorkerEvent::SUCCEEDED;
    case WorkerOutcome::kStopped:
      return v1::WorkerEvent::STOPPED;
    case WorkerOutcome::kFailed:
      break;
  }
  return v1::WorkerEvent::FAILED;
}

absl::Status MakeJobDirs(const std::string& job_dir) {
  for (const std::string& dir : {job_dir, job_dir + "/logs", job_dir + "/errors"}) {
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      return ErrnoStatus(errno, "cannot create directory", dir);
    }
  }
  return absl::OkStatus();
}

std::string PlacementText(const v1::JoinResponse& job, const std::vector<RankSlot>& plan,
                          const std::string& note) {
  std::string text;
  if (!note.empty()) absl::StrAppend(&text, note, "\n");
  for (const RankSlot& slot : plan) {
    absl::StrAppend(&text, "rank ", job.rank_offset() + slot.local_rank, " ",
                    DescribeRankSlot(slot), "\n");
  }
  return text;
}

absl::Status WritePlacementFile(const v1::JoinResponse& job, const std::string& text) {
  const std::string dir = job.job_dir() + "/placement";
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return ErrnoStatus(errno, "cannot create directory", dir);
  }
  // A record for people, written on the start-up path: no fsync (the workers wait for it).
  return WriteFileAtomically(absl::StrCat(dir, "/node-", job.node_rank(), ".txt"), text,
                             {.mode = 0644, .fsync = false});
}

}  // namespace dlaunch
