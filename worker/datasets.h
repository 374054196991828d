// Training and test data held in memory as tensors: Fashion-MNIST from its idx files
// (normalised with the training set's mean and standard deviation), or synthetic samples of any
// shape for throughput runs (a fixed pool of random images, indexed modulo its size, so that a
// large synthetic epoch costs no memory).
#pragma once

#include <string>
#include <vector>

#include <torch/torch.h>

#include "absl/status/statusor.h"

namespace dlaunch::worker {

class TensorDataset {
 public:
  TensorDataset() = default;
  TensorDataset(torch::Tensor images, torch::Tensor labels, int64_t size)
      : images_(std::move(images)), labels_(std::move(labels)), size_(size) {}

  int64_t size() const { return size_; }
  // Bytes the pool holds (images and labels).
  int64_t bytes() const;
  // Moves the pool to `device` (a GPU): batches are then gathered there, with no copy from the
  // host per step.
  void MoveTo(const torch::Device& device);
  // Stacks the samples at `indices` into a batch: images [B,C,H,W] float, labels [B] int64.
  std::pair<torch::Tensor, torch::Tensor> Batch(const int64_t* indices, int64_t count) const;

 private:
  torch::Tensor images_;  // [pool, C, H, W] float32
  torch::Tensor labels_;  // [pool] int64
  int64_t size_ = 0;      // logical size; sample i is pool entry i % pool
};

struct Datasets {
  TensorDataset train;
  TensorDataset test;
  int64_t num_classes = 10;
};

absl::StatusOr<Datasets> LoadFashionMnist(const std::string& dir);

Datasets MakeSyntheticDatasets(const std::vector<int64_t>& image_shape, int64_t train_size,
                               uint64_t seed);

}  // namespace dlaunch::worker
