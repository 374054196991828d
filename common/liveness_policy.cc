#include "common/liveness_policy.h"

#include <algorithm>

namespace dlaunch {

using std::chrono::milliseconds;

LivenessPolicy::LivenessPolicy(milliseconds heartbeat, int misses, int nodes)
    : heartbeat_(std::max(kMinHeartbeat, heartbeat)),
      misses_(misses > 0 ? misses : kDefaultMisses),
      nodes_(std::max(nodes, 0)) {}

LivenessPolicy LivenessPolicy::WithLease(milliseconds lease) const {
  LivenessPolicy p = *this;
  p.lease_given_ = std::max(lease, milliseconds(0));
  return p;
}

milliseconds LivenessPolicy::silent_after() const { return std::min(2 * heartbeat_, lost_after()); }

milliseconds LivenessPolicy::ping_interval() const {
  return std::min(heartbeat_, milliseconds(1000));
}

milliseconds LivenessPolicy::lease() const {
  if (lease_given_.count() > 0) return lease_given_;
  const milliseconds margin = kLeaseMargin + kLeaseMarginPer1000 * nodes_ / 1000;
  return std::max({lost_after() + margin, heartbeat_ + ping_interval() + kLeaseSlack, kMinLease});
}

milliseconds LivenessPolicy::workers_gone_after() const {
  return lease() + lease_check_slack() + kKillSlack;
}

}  // namespace dlaunch
