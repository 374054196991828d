#include "worker/distributed_sampler.h"

#include <cstddef>
#include <numeric>
#include <utility>

namespace dlaunch::worker {
namespace {

// SplitMix64: a well-mixed, portable 64-bit generator. std::shuffle and the std distributions
// are implementation-defined, and every rank (and a resumed run) must draw the same order.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, bound) without modulo bias (Lemire's multiply-shift with rejection).
  uint64_t Below(uint64_t bound) {
    unsigned __int128 m = static_cast<unsigned __int128>(Next()) * bound;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < bound) {
      const uint64_t threshold = -bound % bound;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(Next()) * bound;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }

 private:
  uint64_t state_;
};

}  // namespace

DistributedSampler::DistributedSampler(int64_t dataset_size, int world_size, int rank,
                                       uint64_t seed, bool shuffle)
    : dataset_size_(dataset_size),
      world_size_(world_size),
      rank_(rank),
      seed_(seed),
      shuffle_(shuffle) {}

std::vector<int64_t> DistributedSampler::EpochPermutation(int64_t epoch) const {
  std::vector<int64_t> order(static_cast<size_t>(dataset_size_));
  std::iota(order.begin(), order.end(), 0);
  if (!shuffle_) return order;
  SplitMix64 rng(seed_ * 0x100000001B3ULL + static_cast<uint64_t>(epoch));
  for (int64_t i = dataset_size_ - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(i) + 1));
    std::swap(order[i], order[j]);
  }
  return order;
}

std::vector<int64_t> DistributedSampler::EpochIndices(int64_t epoch) const {
  const std::vector<int64_t> order = EpochPermutation(epoch);
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(num_samples()));
  const int64_t total = num_samples() * world_size_;
  for (int64_t i = rank_; i < total; i += world_size_) mine.push_back(order[i]);
  return mine;
}

int64_t StepsPerEpoch(int64_t dataset_size, int world_size, int64_t batch_size) {
  return dataset_size / (static_cast<int64_t>(world_size) * batch_size);
}

}  // namespace dlaunch::worker
