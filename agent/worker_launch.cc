#include "agent/worker_launch.h"

#include <errno.h>
#include <sys/stat.h>

#include "common/file_io.h"

namespace dlaunch {

std::vector<ChildSupervisor::StartRequest> BuildStartRequests(const v1::JoinResponse& job,
                                                              const std::vector<RankSlot>& plan,
                                                              const EnvMap& base_env,
                                                              const std::string& report_socket) {
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
  const std::vector<std::string> argv(job.worker().argv().begin(), job.worker().argv().end());

  std::vector<ChildSupervisor::StartRequest> requests;
  for (const RankSlot& slot : plan) {
    in.slot = slot;
    ChildSupervisor::StartRequest r;
    r.rank = job.rank_offset() + slot.local_rank;
    r.local_rank = slot.local_rank;
    r.options.argv = argv;
    r.options.envp = ToEnvp(BuildWorkerEnv(in));
    r.options.workdir = job.worker().workdir();
    requests.push_back(std::move(r));
  }
  return requests;
}

absl::Status MakeJobDirs(const std::string& job_dir) {
  for (const std::string& dir : {job_dir, job_dir + "/logs", job_dir + "/errors"}) {
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoStatus(errno, "cannot create directory", dir);
    }
  }
  return absl::OkStatus();
}

}  // namespace dlaunch
