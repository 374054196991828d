// The Trainer behind RunTraining, shared by trainer.cc (the loop, reports, checkpoints, the
// summary) and trainer_setup.cc (the set-up steps). Internal to dlaunch_worker_torch: it names
// LibTorch types, so only those two files include it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "absl/status/status.h"
#include "worker/checkpoint_io.h"
#include "worker/datasets.h"
#include "worker/ddp_model.h"
#include "worker/distributed_env.h"
#include "worker/distributed_sampler.h"
#include "worker/learning_rate_schedule.h"
#include "worker/process_group.h"
#include "worker/report_client.h"
#include "worker/restart_channel.h"
#include "worker/step_trace.h"
#include "worker/worker_options.h"

namespace dlaunch::worker {

using Clock = std::chrono::steady_clock;

// Returns from the enclosing function when `expr` (an absl::Status) is not OK.
#define DLAUNCH_WORKER_RETURN_IF_ERROR(expr)         \
  do {                                               \
    if (absl::Status _st = (expr); !_st.ok()) return _st; \
  } while (0)

// Mixed precision of the forward pass (--amp); kOff trains in fp32.
enum class Amp { kOff, kFp16, kBf16 };

inline Amp AmpFromName(const std::string& name) {
  if (name == "fp16") return Amp::kFp16;
  if (name == "bf16") return Amp::kBf16;
  return Amp::kOff;
}

inline const char* AmpName(Amp amp) {
  switch (amp) {
    case Amp::kFp16: return "fp16";
    case Amp::kBf16: return "bf16";
    case Amp::kOff: break;
  }
  return "off";
}

class Trainer {
 public:
  Trainer(const WorkerOptions& options, const DistributedEnv& env)
      : options_(options), env_(env), device_(torch::kCPU) {}

  absl::Status Run();

 private:
  // Thrown at a step boundary when the agent told this rank to leave its round.
  struct RoundStopped {};
  // Setup, as the steps of the Horovod recipe (numbered) and what they need around them.
  absl::Status Setup();
  void ConfigureThreads();
  absl::Status PinDevice();                // 2
  absl::Status ConnectReporter();
  absl::Status InitProcessGroup();         // 1
  absl::Status LoadAndShardData();         // 3
  void ScaleLearningRate();                // 4
  absl::Status BuildModelAndOptimizer();
  void BroadcastModelState();              // 6
  absl::Status Resume();                   // 7, the read side
  // The sampler, the step counts and the learning-rate schedule of this world size and rank.
  absl::Status ShardData();
  // Parameters, buffers, optimizer state and step in place on every rank (trainer_restart.cc).
  absl::Status SyncState();
  void BroadcastStateFrom(int src, int64_t newest);
  void BuildReducer();

  // The in-process restart (trainer_restart.cc, docs/restarts.md).
  absl::Status TrainUntilDone(Clock::time_point run_start);
  // After the training loop stopped with `error` (or the agent's "leave"): OK when this rank
  // left its round in its process and took its place in the next one.
  absl::Status RestartInProcess(const std::string& error);
  absl::Status LeaveRound(int round);
  absl::Status JoinNextRound();
  std::optional<std::string> WhyStateCannotBeKept();
  void LayOutBucketsAsAfterTheFirstStep(); // after a resume: see trainer_setup.cc

  // Steps until the last one or the agent's "leave" (RoundStopped).
  absl::Status TrainLoop();
  void TrainStep(const std::vector<int64_t>& epoch_indices, int64_t offset);
  void HoldDataOnTheGpu();
  // `x` in the layout the model's convolutions take (--channels-last).
  torch::Tensor InModelLayout(torch::Tensor x) const;
  bool UnscaleAndUpdateLossScale();
  absl::Status OnStepEnd(int64_t first_step);
  void Report(TrainerReport::Kind kind, std::optional<double> test_accuracy);
  void EnterPhase(TrainerReport::Phase phase);
  double Evaluate();
  absl::Status Checkpoint();
  double FinalThroughput();
  absl::Status Finish(double per_rank_samples_per_sec, Clock::time_point run_start);
  absl::Status WriteSummary(double per_rank_samples_per_sec);
  absl::Status SaveParams() const;
  bool IsRankZero() const { return env_.rank == 0; }

  const WorkerOptions& options_;
  // A copy: a rank kept in its process takes a new place (rank, world, master) each round.
  DistributedEnv env_;
  torch::Device device_;
  bool use_cuda_ = false;
  Amp amp_ = Amp::kOff;
  ProcessGroupHandle pg_;
  Datasets data_;
  torch::nn::Sequential model_{nullptr};
  std::vector<torch::Tensor> params_;
  std::vector<torch::Tensor> buffers_;
  std::unique_ptr<torch::optim::SGD> optimizer_;
  std::unique_ptr<DdpModel> ddp_;
  std::optional<ReportClient> reporter_;
  std::unique_ptr<RestartChannel> restart_;  // null outside dlaunch
  std::unique_ptr<DistributedSampler> sampler_;
  std::unique_ptr<LearningRateSchedule> schedule_;
  int64_t steps_per_epoch_ = 0;
  int64_t total_steps_ = 0;
  ScalarTrainingState state_;
  int64_t start_step_ = 0;
  // The step of the newest complete checkpoint (0: none), sent in every report.
  int64_t checkpoint_step_ = 0;
  // What this rank is doing, sent in every report; EnterPhase changes it.
  TrainerReport::Phase phase_ = TrainerReport::Phase::kUnspecified;

  // Accumulated since the last report (this rank).
  torch::Tensor loss_sum_;
  torch::Tensor correct_sum_;
  int64_t interval_samples_ = 0;
  int64_t interval_steps_ = 0;
  Clock::time_point interval_start_;
  double data_ms_ = 0, forward_ms_ = 0, backward_ms_ = 0, optimizer_ms_ = 0;
  double last_loss_ = 0;
  std::optional<double> test_accuracy_;

  // Whole run (this rank), excluding evaluation, checkpoints and the first step's warm-up.
  Clock::time_point timed_start_;
  double train_seconds_ = 0;
  int64_t timed_samples_ = 0;
  double time_to_first_step_s_ = 0;

  std::unique_ptr<StepTrace> step_trace_;  // null outside a dlaunch job
};

}  // namespace dlaunch::worker
