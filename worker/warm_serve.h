// dlaunch-worker's warm process (restarts.warm_start, docs/restarts.md "Warm starts"): started by
// a node's agent as `dlaunch-worker --warm-serve SOCKET <the job's flags>`, it has LibTorch loaded
// (the executable links it) and the job's Fashion-MNIST files read (worker/idx_reader.h's
// preload), then forks a rank on demand. It speaks the protocol of python/src/dlaunch/_zygote.py
// (its docstring is the reference), so the agent's side (agent/workers/warm_start.h) is the same
// for both: one length-prefixed request per connection, the rank's stdout, stderr and the
// workers' cgroup.procs as SCM_RIGHTS, the answer "pid N\n" or "error TEXT\n". The rank is forked
// twice so that the agent, the subreaper, adopts it. No LibTorch here: the fork happens before
// any intra-op thread exists, and the server refuses to serve if more than one thread runs.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace dlaunch::worker {

inline constexpr char kWarmServeFlag[] = "--warm-serve";

// One rank's start request, as _zygote.py documents it.
struct WarmRequest {
  std::string cwd;
  std::vector<int> cpus;
  pid_t agent = 0;
  int death_signal = 0;
  bool traceable = false;
  std::vector<std::string> argv;
  std::vector<std::string> env;  // "K=V"
  std::vector<int> fds;          // stdout, stderr[, cgroup.procs]: owned by the receiver
};

// Parses a request's body (after the 4-byte length). InvalidArgument says what is wrong.
absl::StatusOr<WarmRequest> ParseWarmRequest(std::string_view body);

// True when `args` (argv[0] included) start the warm process.
bool IsWarmServe(const std::vector<std::string>& args);

// Runs the warm process for `args` ("dlaunch-worker --warm-serve SOCKET FLAGS..."): reads the
// data set, checks that one thread runs, serves. Returns only in a forked rank, with the rank's
// command line (its environment, stdio, cgroup and working directory already set), or with why
// it cannot serve.
absl::StatusOr<std::vector<std::string>> RunWarmServer(const std::vector<std::string>& args);

}  // namespace dlaunch::worker
