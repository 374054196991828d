// DdpModel: step 5 of the Horovod recipe, what torch.nn.parallel.DistributedDataParallel does
// for a C++ model: c10d's Reducer with DDP's bucket assignment (bucketed gradient all-reduce
// overlapped with backward) and DDP's forward protocol. Every version-specific c10d call the
// trainer needs (Reducer, bucket assignment, coalesced broadcast) is in ddp_model.cc.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

namespace c10d {
class Reducer;
}  // namespace c10d

namespace dlaunch::worker {

// Broadcasts `tensors` from rank 0 in coalesced buckets (DDP's buffer size) over `group`.
void BroadcastFromRankZero(const c10::intrusive_ptr<c10d::ProcessGroup>& group,
                           std::vector<torch::Tensor> tensors);

class DdpModel {
 public:
  // Buckets `params` like DistributedDataParallel (a small first bucket, then bucket_cap_mb)
  // and registers the reducer's autograd hooks on them. `buffers` (BatchNorm statistics) are
  // broadcast from rank 0 before every forward when world_size > 1.
  DdpModel(std::vector<torch::Tensor> params, std::vector<torch::Tensor> buffers,
           c10::intrusive_ptr<c10d::ProcessGroup> group, int world_size, double bucket_cap_mb);
  ~DdpModel();
  DdpModel(const DdpModel&) = delete;
  DdpModel& operator=(const DdpModel&) = delete;

  // Runs `forward` (the model's forward pass and the loss) as DistributedDataParallel.forward
  // does: rebuild buckets in gradient-ready order after the first iteration, bring buffers in
  // step with rank 0, and tell the reducer a backward pass follows. The backward itself then
  // all-reduces each bucket as its gradients become ready, and autograd's final callback waits
  // for the all-reduces, so the averaged gradients are in .grad when backward() returns.
  void Forward(const std::function<void()>& forward);

 private:
  std::vector<torch::Tensor> buffers_;
  c10::intrusive_ptr<c10d::ProcessGroup> group_;
  int world_size_;
  std::unique_ptr<c10d::Reducer> reducer_;
};

}  // namespace dlaunch::worker
