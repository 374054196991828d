// The collective check's engines (docs/stragglers.md, "Before round 0"): what measures a node's
// links. The check should see the link as the job's collective library will, so when the job is
// a Python script that uses torch and the node's interpreter has it, the agent runs
// python/src/dlaunch/_collective_check.py (embedded here) with that interpreter: Gloo among the
// nodes' check processes, NCCL where the node has GPUs. Every node must use the same engine (they
// talk to each other), so each says what it can and the launcher picks what all can (CommonEngine,
// launcher/job/collective_verdict.h); otherwise
// the agent's own TCP loop (collective_check.h). On GPU nodes with nccl-tests' all_reduce_perf
// on PATH, the node's GPUs' own all-reduce bandwidth is measured too.
#pragma once

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/workers/worker_env.h"
#include "common/command_runner.h"
#include "dlaunch/control.pb.h"

namespace dlaunch {

// The embedded _collective_check.py (generated at build time from the Python file).
extern const char kCollectiveCheckProgram[];

// How this node can measure: `backend` "nccl" or "gloo" with the job's interpreter `python`
// (absolute) and environment; "" = only the TCP loop, `why` saying what was missing.
struct CollectiveEngine {
  std::string backend;
  std::string python;
  EnvMap env;
  std::string workdir;
  std::string why;
  int gpus = 0;
};

// Looks at the plan's worker command: Python, its script using torch (common/python_command.h),
// and the interpreter finding torch (a short run of it, without importing torch). `run` runs
// that probe (RunCommandWith in the agent; recorded answers in tests).
using ProbeFn = std::function<absl::StatusOr<CommandResult>(SpawnOptions)>;
CollectiveEngine ChooseCollectiveEngine(const v1::PreflightPlan& plan, const EnvMap& agent_env,
                                        int gpus, const ProbeFn& run);

// The program's input: this node's place, its neighbours' and its group's first node's
// addresses only (never the whole ring: a node needs at most four), the plan's sizes.
std::string TorchCheckInput(const std::string& backend, const std::vector<v1::CollectivePeer>& ring,
                            int index, const std::string& my_addr, const v1::CollectivePlan& plan);

// The program's output line (JSON, CollectiveFigures' fields): the figures, or why not.
absl::StatusOr<v1::CollectiveFigures> ParseTorchCheckOutput(const std::string& out);

// The program, started before the node knows its place, so that the interpreter's start and
// `import torch` overlap its wait for its peers and its compute check; it then reads its input
// from a FIFO. Destroyed unfinished, it is told to skip (and ends).
class TorchCheck {
 public:
  // Starts it with `engine`'s interpreter; it gives up after `timeout_s` in all.
  explicit TorchCheck(const CollectiveEngine& engine, double timeout_s);
  ~TorchCheck();
  TorchCheck(const TorchCheck&) = delete;
  TorchCheck& operator=(const TorchCheck&) = delete;

  // Measures as node `index` of `ring` with `backend` (its store on the node's announced port):
  // links and all-reduce figures; on failure, figures of 0 with the error.
  v1::CollectiveFigures Measure(const std::string& backend,
                                const std::vector<v1::CollectivePeer>& ring, int index,
                                const std::string& my_addr, const v1::CollectivePlan& plan);

 private:
  // Writes `line` to the FIFO once the program has it open; false when it ended first.
  bool Tell(const std::string& line);

  std::string dir_, fifo_;
  std::thread thread_;
  std::atomic<bool> done_{false};
  absl::StatusOr<CommandResult> ran_;
  bool told_ = false;
};

// nccl-tests' all_reduce_perf output: its "# Avg bus bandwidth" in bytes per second.
absl::StatusOr<double> ParseAllReducePerf(const std::string& out);

// all_reduce_perf among the node's `gpus` GPUs when found on `path` (0 when not found or it
// fails, with `why`). Untested on hardware: the project's test machines have no GPU.
double MeasureGpuBusBandwidth(int gpus, const std::string& path, int64_t bytes, std::string* why);

}  // namespace dlaunch
