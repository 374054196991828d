// The model zoo of dlaunch-worker: the classic PyTorch MNIST CNN, a 784-512-256-10 MLP and
// ResNet 18/34/50 (torchvision's layout), each ending in log-softmax so the loss is NLL.
#pragma once

#include <string>
#include <vector>

#include <torch/torch.h>

#include "absl/status/statusor.h"

namespace dlaunch::worker {

// image_shape is C,H,W of one sample. InvalidArgument for an unknown name or a shape the
// model cannot take.
absl::StatusOr<torch::nn::Sequential> MakeModel(const std::string& name,
                                                const std::vector<int64_t>& image_shape,
                                                int64_t num_classes);

}  // namespace dlaunch::worker
