#include "agent/workers/worker_env.h"

#include <unistd.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/workers/torch_error_file.h"
#include "agent/workers/worker_server_socket.h"

extern char** environ;

namespace dlaunch {

EnvMap BuildWorkerEnv(const WorkerEnvInput& in) {
  EnvMap env = in.base_env;
  for (const auto& [k, v] : in.spec_env) env[k] = v;
  // Only dlaunch says whether an agent serves the store: one left over from a torchrun around
  // dlaunch would send torch's env:// init to a store that does not exist. With True, torch's
  // env:// connects every rank, rank 0 too, as a client of the agent's store and keeps each
  // round's keys apart under the prefix /worker/attempt_<TORCHELASTIC_RESTART_COUNT>.
  env["TORCHELASTIC_USE_AGENT_STORE"] = in.agent_store ? "True" : "False";
  // torchrun's agent puts the signals it handles and forwards to its workers into its own
  // environment, so every rank inherits them (and a torchrun started inside a rank reads them);
  // dlaunch's agent stops its workers on these three.
  env["TORCHELASTIC_SIGNALS_TO_HANDLE"] = "SIGTERM,SIGINT,SIGHUP";
  // A path inherited or from job.yaml would be one for every rank: all but the first rank's
  // worker_main() would fail on a socket that already exists.
  env.erase(kWorkerServerSocketVar);
  if (!in.worker_server_socket.empty()) env[kWorkerServerSocketVar] = in.worker_server_socket;

  const int rank = in.rank_offset + in.slot.local_rank;
  const std::string rank_s = std::to_string(rank);
  const std::string world_s = std::to_string(in.world_size);
  env["RANK"] = rank_s;
  env["LOCAL_RANK"] = std::to_string(in.slot.local_rank);
  env["WORLD_SIZE"] = world_s;
  env["LOCAL_WORLD_SIZE"] = std::to_string(in.local_world_size);
  env["GROUP_RANK"] = std::to_string(in.node_rank);
  env["GROUP_WORLD_SIZE"] = std::to_string(in.nnodes);
  // One role, as torchrun without --role: role ranks are the global ranks.
  env["ROLE_RANK"] = rank_s;
  env["ROLE_NAME"] = "default";
  env["ROLE_WORLD_SIZE"] = world_s;
  env["MASTER_ADDR"] = in.master_addr;
  env["MASTER_PORT"] = std::to_string(in.master_port);
  // The restart round: 0 in the first, r after r restarts (every node restarts together).
  env["TORCHELASTIC_RESTART_COUNT"] = std::to_string(in.restart_count);
  env["DLAUNCH_ROUND"] = std::to_string(in.restart_count);
  env["TORCHELASTIC_MAX_RESTARTS"] = std::to_string(in.max_restarts);
  env["TORCHELASTIC_RUN_ID"] = in.job_id;
  env["TORCHELASTIC_ERROR_FILE"] = RankErrorFilePath(in.job_dir, rank);

  // One OpenMP thread per core the rank owns: N ranks each starting one thread per core of the
  // node would oversubscribe it N-fold (torchrun's reason for 1), but a rank pinned to its own
  // cores can use all of them. Without a plan (nothing pinned) or on shared cores, 1 as torchrun.
  // An empty value counts as unset: it would leave the thread count to the runtime.
  const int threads = in.slot.cores > 0 && !in.slot.shares_cores ? in.slot.cores : 1;
  for (const auto& [key, value] : {std::pair<const char*, std::string>{"OMP_NUM_THREADS",
                                                                       std::to_string(threads)},
                                   {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"},
                                   // A Python rank sent SIGABRT (or crashing) prints every
                                   // thread's traceback to its log.
                                   {"PYTHONFAULTHANDLER", "1"}}) {
    auto it = env.find(key);
    if (it == env.end() || it->second.empty()) env[key] = value;
  }

  env["DLAUNCH_JOB_ID"] = in.job_id;
  env["DLAUNCH_JOB_DIR"] = in.job_dir;
  env["DLAUNCH_REPORT_SOCKET"] = in.report_socket;
  env["DLAUNCH_NODE_RANK"] = std::to_string(in.node_rank);
  env["DLAUNCH_GPU"] = absl::StrJoin(in.slot.gpus, ",");
  env["DLAUNCH_CPUS"] = absl::StrJoin(in.slot.cpus, ",");

  // Isolation narrows the node's list to the rank's own entries. A rank without GPUs (a
  // CPU-only node) keeps what it inherited: there is nothing to isolate.
  if (in.isolate_gpus && !in.slot.gpus.empty()) {
    env["CUDA_VISIBLE_DEVICES"] = absl::StrJoin(in.slot.gpus, ",");
  }
  return env;
}

std::vector<std::string> ToEnvp(const EnvMap& env) {
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [k, v] : env) out.push_back(absl::StrCat(k, "=", v));
  return out;
}

EnvMap ProcessEnv() {
  EnvMap env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry(*e);
    size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return env;
}

}  // namespace dlaunch
