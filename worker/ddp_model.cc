#include "worker/ddp_model.h"

#include <algorithm>
#include <string>
#include <unordered_map>

#include <torch/csrc/distributed/c10d/comm.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>

namespace dlaunch::worker {
namespace {

// Same defaults as torch.nn.parallel.DistributedDataParallel.
constexpr int64_t kFirstBucketBytes = 1024 * 1024;
constexpr size_t kBroadcastBucketBytes = 250 * 1024 * 1024;

}  // namespace

void BroadcastFromRankZero(const c10::intrusive_ptr<c10d::ProcessGroup>& group,
                           std::vector<torch::Tensor> tensors) {
  torch::NoGradGuard no_grad;
  c10d::broadcast_coalesced(group, tensors, kBroadcastBucketBytes, 0);
}

DdpModel::DdpModel(std::vector<torch::Tensor> params, std::vector<torch::Tensor> buffers,
                   c10::intrusive_ptr<c10d::ProcessGroup> group, int world_size,
                   double bucket_cap_mb)
    : buffers_(std::move(buffers)), group_(std::move(group)), world_size_(world_size) {
  // Assign in parameter order, then reverse so that the first bucket holds the last layers,
  // whose gradients are ready first in backward.
  const auto bucket_bytes = static_cast<int64_t>(bucket_cap_mb * 1024 * 1024);
  std::vector<bool> expect_sparse(params.size(), false);
  auto assignment = c10d::compute_bucket_assignment_by_size(
      params, {static_cast<size_t>(kFirstBucketBytes), static_cast<size_t>(bucket_bytes)},
      expect_sparse);
  std::vector<std::vector<size_t>> buckets = std::get<0>(assignment);
  std::vector<size_t> limits = std::get<1>(assignment);
  std::reverse(buckets.begin(), buckets.end());
  std::reverse(limits.begin(), limits.end());
  reducer_ = std::make_unique<c10d::Reducer>(
      params, buckets, limits, group_, expect_sparse, bucket_bytes,
      /*find_unused_parameters=*/false, /*gradient_as_bucket_view=*/false,
      std::unordered_map<size_t, std::string>{}, kFirstBucketBytes);
}

DdpModel::~DdpModel() = default;

void DdpModel::Forward(const std::function<void()>& forward) {
  reducer_->prepare_for_forward();
  reducer_->rebuild_buckets();
  if (!buffers_.empty() && world_size_ > 1) BroadcastFromRankZero(group_, buffers_);
  forward();
  reducer_->prepare_for_backward({});
}

}  // namespace dlaunch::worker
