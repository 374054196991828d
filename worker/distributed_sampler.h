// DistributedSampler: which dataset indices one rank visits in one epoch, with the semantics of
// torch.utils.data.DistributedSampler(drop_last=True): every rank takes a disjoint, equally long
// strided slice of one permutation shared by all ranks (seeded by seed and epoch), so together
// they cover the epoch and the order changes every epoch. Pure: no I/O, no LibTorch.
#pragma once

#include <cstdint>
#include <vector>

namespace dlaunch::worker {

class DistributedSampler {
 public:
  // dataset_size > 0, 0 <= rank < world_size.
  DistributedSampler(int64_t dataset_size, int world_size, int rank, uint64_t seed,
                     bool shuffle = true);

  // The indices this rank visits in `epoch`, in visiting order; num_samples() long.
  std::vector<int64_t> EpochIndices(int64_t epoch) const;

  // The permutation of the whole dataset used in `epoch` (identical on every rank).
  std::vector<int64_t> EpochPermutation(int64_t epoch) const;

  // Samples per rank per epoch: the trailing dataset_size % world_size samples of each
  // permutation are dropped so that every rank does the same number of steps.
  int64_t num_samples() const { return dataset_size_ / world_size_; }

 private:
  int64_t dataset_size_;
  int world_size_;
  int rank_;
  uint64_t seed_;
  bool shuffle_;
};

// Optimizer steps in one epoch: samples / (world size x per-rank batch), rounded down.
int64_t StepsPerEpoch(int64_t dataset_size, int world_size, int64_t batch_size);

}  // namespace dlaunch::worker
