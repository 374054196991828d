// Serialises the training state (model parameters and buffers, optimizer state, step, loss
// scaler) into a checkpoint payload and back. Framing and atomic file replacement live in
// checkpoint_file; this is the LibTorch half.
#pragma once

#include <string>

#include <torch/torch.h>

#include "absl/status/statusor.h"
#include "worker/loss_scaler.h"

namespace dlaunch::worker {

struct ScalarTrainingState {
  int64_t step = 0;            // optimizer steps completed
  double loss_scale = LossScaler::kInitialScale;  // fp16 dynamic loss scaling
  int64_t good_steps = 0;      // steps since the loss scale last changed
};

absl::StatusOr<std::string> SerializeTrainingState(const torch::nn::Module& model,
                                                   const torch::optim::Optimizer& optimizer,
                                                   const ScalarTrainingState& state);

// Loads into model and optimizer (tensors land on `device`).
absl::StatusOr<ScalarTrainingState> DeserializeTrainingState(const std::string& payload,
                                                             torch::nn::Module& model,
                                                             torch::optim::Optimizer& optimizer,
                                                             torch::Device device);

// The LibTorch this worker was built on, e.g. "2.11.0"; checkpoints record it.
std::string LibTorchVersion();

// Rank 0: writes <dir>/ckpt-<step>.dlck atomically and keeps the two newest.
absl::Status SaveCheckpoint(const std::string& dir, const std::string& payload, int64_t step);

// The payload of the newest intact checkpoint in dir. Torn or corrupt files are skipped with a
// warning on stderr (older intact ones are used instead); NotFound when there is none.
absl::StatusOr<std::string> LoadNewestIntactCheckpoint(const std::string& dir,
                                                       int64_t* step_in_name);

}  // namespace dlaunch::worker
