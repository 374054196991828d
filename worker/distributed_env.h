// DistributedEnv: the torchrun-compatible environment a worker is started with (RANK,
// WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT, OMP_NUM_THREADS, DLAUNCH_REPORT_SOCKET),
// validated. Run by hand with none of it set, the worker is rank 0 of 1. Pure: the lookup
// function is injected.
#pragma once

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "common/environment.h"

namespace dlaunch::worker {

struct DistributedEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;       // 0: not set (allowed only when world_size == 1)
  int omp_num_threads = 0;   // 0: not set
  std::string report_socket; // empty: report on stdout
  // torchrun's agent already serves the TCPStore at MASTER_ADDR:MASTER_PORT and says so with
  // TORCHELASTIC_USE_AGENT_STORE=True; rank 0 then connects as a client like everyone else.
  bool use_agent_store = false;
  // TORCHELASTIC_RESTART_COUNT: the restart round, 0 in a job's first.
  int restart_count = 0;
};

// `lookup` is common's EnvLookup: ProcessEnvironment() in the worker, a map in tests.
absl::StatusOr<DistributedEnv> ReadDistributedEnv(
    const EnvLookup& lookup);

}  // namespace dlaunch::worker
