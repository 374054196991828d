// Worker environment: the torchrun-compatible variables (DESIGN.md "Worker environment")
// plus dlaunch's own, layered over the agent's environment and the spec's env.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "agent/placement/local_rank_plan.h"

namespace dlaunch {

using EnvMap = std::map<std::string, std::string>;

struct WorkerEnvInput {
  EnvMap base_env;  // the agent's own environment; passes through
  EnvMap spec_env;  // job.yaml env; overrides base_env
  RankSlot slot;    // this rank's plan (local_rank, GPUs, CPUs)
  int node_rank = 0;
  int nnodes = 1;
  int rank_offset = 0;  // global rank of local rank 0 on this node
  int local_world_size = 1;
  int world_size = 1;
  std::string master_addr;
  int master_port = 0;
  int restart_count = 0;  // the round: TORCHELASTIC_RESTART_COUNT and DLAUNCH_ROUND
  int max_restarts = 0;
  std::string job_id;
  std::string job_dir;
  std::string report_socket;
  // TORCH_WORKER_SERVER_SOCKET (agent/workers/worker_server_socket.h); "" when the agent has no socket
  // directory: then the variable is left out.
  std::string worker_server_socket;
  bool isolate_gpus = false;  // CUDA_VISIBLE_DEVICES = the rank's own GPU entries
  // Node 0's agent serves the store at MASTER_ADDR:MASTER_PORT: TORCHELASTIC_USE_AGENT_STORE is
  // True, else False (torchrun 2.x always sets it, to one or the other).
  bool agent_store = false;
};

// The full environment for one worker. Precedence: base_env < spec_env < the contract
// variables (RANK, MASTER_ADDR, ... are always dlaunch's). docs/environment.md lists them beside
// torchrun 2.x's. OMP_NUM_THREADS (the rank's cores, 1
// when it has none of its own) and TORCH_NCCL_ASYNC_ERROR_HANDLING=1 are defaults only, kept
// when base or spec set them.
EnvMap BuildWorkerEnv(const WorkerEnvInput& in);

// "KEY=VALUE" strings for execve (keep the vector alive while using the char* array).
std::vector<std::string> ToEnvp(const EnvMap& env);

// The environment of this process (environ) as a map.
EnvMap ProcessEnv();

}  // namespace dlaunch
