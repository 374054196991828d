#include "worker/distributed_sampler.h"

#include <algorithm>
#include <set>

#include "gtest/gtest.h"

namespace dlaunch::worker {
namespace {

TEST(DistributedSamplerTest, ShardsAreDisjointEqualAndCoverTheEpoch) {
  for (int world : {1, 2, 3, 4}) {
    for (int64_t n : {12, 13, 100, 1001}) {
      std::set<int64_t> seen;
      for (int rank = 0; rank < world; ++rank) {
        DistributedSampler s(n, world, rank, /*seed=*/7);
        const std::vector<int64_t> idx = s.EpochIndices(3);
        EXPECT_EQ(static_cast<int64_t>(idx.size()), n / world);
        for (int64_t i : idx) {
          EXPECT_GE(i, 0);
          EXPECT_LT(i, n);
          EXPECT_TRUE(seen.insert(i).second) << "index " << i << " on two ranks, world " << world;
        }
      }
      // Only the tail that does not divide evenly is dropped.
      EXPECT_EQ(static_cast<int64_t>(seen.size()), (n / world) * world);
    }
  }
}

TEST(DistributedSamplerTest, ShardsTogetherAreThePermutationPrefix) {
  const int world = 3;
  const int64_t n = 31;
  DistributedSampler r0(n, world, 0, 1);
  const std::vector<int64_t> perm = r0.EpochPermutation(0);
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(sorted[i], i);
  for (int rank = 0; rank < world; ++rank) {
    const std::vector<int64_t> idx = DistributedSampler(n, world, rank, 1).EpochIndices(0);
    for (size_t k = 0; k < idx.size(); ++k) EXPECT_EQ(idx[k], perm[k * world + rank]);
  }
}

TEST(DistributedSamplerTest, ReshufflesPerEpochAndIsReproducible) {
  DistributedSampler a(1000, 2, 1, 42);
  DistributedSampler b(1000, 2, 1, 42);
  EXPECT_EQ(a.EpochIndices(0), b.EpochIndices(0));
  EXPECT_NE(a.EpochIndices(0), a.EpochIndices(1));
  EXPECT_NE(a.EpochIndices(0), DistributedSampler(1000, 2, 1, 43).EpochIndices(0));
}

TEST(DistributedSamplerTest, NoShuffleIsStrided) {
  DistributedSampler s(10, 2, 1, 0, /*shuffle=*/false);
  EXPECT_EQ(s.EpochIndices(5), (std::vector<int64_t>{1, 3, 5, 7, 9}));
}

TEST(DistributedSamplerTest, StepsPerEpochDividesByWorldAndBatch) {
  EXPECT_EQ(StepsPerEpoch(60000, 1, 64), 937);
  EXPECT_EQ(StepsPerEpoch(60000, 2, 64), 468);
  EXPECT_EQ(StepsPerEpoch(60000, 3, 64), 312);
  EXPECT_EQ(StepsPerEpoch(10, 2, 64), 0);
}

}  // namespace
}  // namespace dlaunch::worker
