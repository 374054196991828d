// dlaunch-worker: parses flags and the torchrun environment, then trains.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/environment.h"
#include "common/exit_codes.h"
#include "worker/distributed_env.h"
#include "worker/heap_policy.h"
#include "worker/restart_resume.h"
#include "worker/trainer.h"
#include "worker/warm_serve.h"
#include "worker/worker_options.h"

int main(int argc, char** argv) {
  using namespace dlaunch::worker;
  using dlaunch::kExitJobFailed;
  using dlaunch::kExitOk;
  using dlaunch::kExitUsage;
  std::vector<std::string> args(argv, argv + argc);
  if (WantsHelp(args)) {
    std::fputs(WorkerUsage().c_str(), stdout);
    return kExitOk;
  }
  // Before LibTorch allocates anything (docs/worker.md, "Memory").
  if (!ApplyHeapPolicy(ChooseHeapPolicy(dlaunch::ProcessEnvironment()))) {
    std::fputs("dlaunch-worker: glibc refused the heap settings; using its defaults\n", stderr);
  }
  // The agent's warm process (worker/warm_serve.h): returns only in a rank it forked.
  if (IsWarmServe(args)) {
    absl::StatusOr<std::vector<std::string>> rank = RunWarmServer(args);
    if (!rank.ok()) {
      std::fprintf(stderr, "dlaunch-worker %s: not serving: %s\n", kWarmServeFlag,
                   std::string(rank.status().message()).c_str());
      return kExitUsage;
    }
    args = *std::move(rank);
  }
  absl::StatusOr<WorkerOptions> options = ParseWorkerOptions(args);
  if (!options.ok()) {
    std::fprintf(stderr, "dlaunch-worker: %s\n", std::string(options.status().message()).c_str());
    return kExitUsage;
  }
  absl::StatusOr<DistributedEnv> env =
      ReadDistributedEnv(dlaunch::ProcessEnvironment());
  if (!env.ok()) {
    std::fprintf(stderr, "dlaunch-worker: %s\n", std::string(env.status().message()).c_str());
    return kExitUsage;
  }
  // Per-rank files without a shell in the command (which a warm start needs: worker/warm_serve.h).
  if (size_t at = options->save_params.find("{rank}"); at != std::string::npos) {
    options->save_params.replace(at, 6, std::to_string(env->rank));
  }
  // A restarted round resumes from the newest complete checkpoint, as if --resume were given.
  const ResumePlan resume = PlanResume(*options, env->restart_count);
  options->resume = resume.resume;
  if (!resume.note.empty()) std::fprintf(stderr, "dlaunch-worker: %s\n", resume.note.c_str());
  const absl::Status status = RunTraining(*options, *env);
  if (!status.ok()) {
    std::fprintf(stderr, "dlaunch-worker: rank %d: %s\n", env->rank,
                 std::string(status.message()).c_str());
    const bool usage = absl::IsInvalidArgument(status) || absl::IsFailedPrecondition(status) ||
                       absl::IsNotFound(status);
    return usage ? kExitUsage : kExitJobFailed;
  }
  return kExitOk;
}
