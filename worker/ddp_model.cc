#include "worker/ddp_model.h"

#include <algorithm>
#include <string>
#include <type_traits>
#include <unordered_map>

#include <torch/csrc/distributed/c10d/comm.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>

namespace dlaunch::worker {
namespace {

// Same defaults as torch.nn.parallel.DistributedDataParallel.
constexpr int64_t kFirstBucketBytes = 1024 * 1024;
constexpr size_t kBroadcastBucketBytes = 250 * 1024 * 1024;

using ParamNames = std::unordered_map<size_t, std::string>;

// c10d::Reducer's constructor changed shape in 2.x: the per-bucket size limits went, and the
// flags skip_all_reduce_unused_params and use_python_reducer and a list of bucket caps came. The
// form is told from the constructor itself, so every LibTorch that has one of the two compiles.
template <typename R = c10d::Reducer>
std::unique_ptr<R> MakeReducer(std::vector<torch::Tensor> params,
                               std::vector<std::vector<size_t>> buckets, std::vector<size_t> limits,
                               c10::intrusive_ptr<c10d::ProcessGroup> group,
                               std::vector<bool> expect_sparse, int64_t bucket_bytes) {
  constexpr bool kWithLimits =
      std::is_constructible_v<R, std::vector<torch::Tensor>, std::vector<std::vector<size_t>>,
                              std::vector<size_t>, c10::intrusive_ptr<c10d::ProcessGroup>,
                              std::vector<bool>, int64_t, bool, bool, ParamNames, int64_t>;
  constexpr bool kWithCapList =
      std::is_constructible_v<R, std::vector<torch::Tensor>, std::vector<std::vector<size_t>>,
                              c10::intrusive_ptr<c10d::ProcessGroup>, std::vector<bool>, int64_t,
                              bool, bool, ParamNames, int64_t, bool, bool, std::vector<int64_t>>;
  static_assert(kWithLimits || kWithCapList, "unknown c10d::Reducer constructor");
  if constexpr (kWithLimits) {
    return std::make_unique<R>(std::move(params), std::move(buckets), std::move(limits),
                               std::move(group), std::move(expect_sparse), bucket_bytes,
                               /*find_unused_parameters=*/false,
                               /*gradient_as_bucket_view=*/false, ParamNames{}, kFirstBucketBytes);
  } else {
    return std::make_unique<R>(std::move(params), std::move(buckets), std::move(group),
                               std::move(expect_sparse), bucket_bytes,
                               /*find_unused_parameters=*/false,
                               /*gradient_as_bucket_view=*/false, ParamNames{}, kFirstBucketBytes,
                               /*skip_all_reduce_unused_params=*/false,
                               /*use_python_reducer=*/false,
                               /*bucket_bytes_cap_list=*/std::vector<int64_t>{});
  }
}

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
  reducer_ = MakeReducer(params, buckets, limits, group_, expect_sparse, bucket_bytes);
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
