// LivenessPolicy: the job's one rule for when a node or the launcher counts as silent or lost,
// and for when a lost node's workers are surely gone. Made from the spec's heartbeat interval
// and misses; the launcher sends both in every JoinResponse, so its loss rule, the live view's
// "silent" and the agent's lease all read the same numbers. Pure: durations in, durations out.
//
// The lease is what orders two rounds (docs/restarts.md): every message an agent sends carries
// its own send time, every command the launcher sends back carries the newest of those it has
// processed from that agent, and an agent whose newest echoed send time is older than lease()
// stops its workers and leaves the job. So the launcher, knowing when it last processed a message
// from a node (its last_seen), knows when that node has surely stopped: workers_gone_after().
#pragma once

#include <chrono>

namespace dlaunch {

class LivenessPolicy {
 public:
  // Heartbeats are never more frequent than this, whatever the spec asks.
  static constexpr std::chrono::milliseconds kMinHeartbeat{50};
  // The time SIGKILL of a worker's group takes to end it and be reaped, beyond the grace.
  static constexpr std::chrono::milliseconds kKillSlack{500};

  // misses <= 0: kDefaultMisses (a JoinResponse that does not say).
  static constexpr int kDefaultMisses = 3;
  LivenessPolicy(std::chrono::milliseconds heartbeat, int misses);

  std::chrono::milliseconds heartbeat() const { return heartbeat_; }
  int misses() const { return misses_; }

  // The launcher: a node it has heard nothing from for longer than this is lost.
  std::chrono::milliseconds lost_after() const { return heartbeat_ * misses_; }
  // Shown as silent (live view), and a stall held back for the loss rule, after two missed
  // heartbeats; never later than lost_after().
  std::chrono::milliseconds silent_after() const;
  // How often the launcher proves itself to the agents (pings): each heartbeat, at most 1 s apart.
  std::chrono::milliseconds ping_interval() const;
  // The agent: once its newest message the launcher echoed was sent longer ago than this, it
  // stops its workers and leaves (fenced). lost_after(), and never under kMinLease: a loop of
  // the launcher late by a second on a loaded machine must not fence a healthy job.
  std::chrono::milliseconds lease() const;
  static constexpr std::chrono::milliseconds kMinLease{5000};
  // The agent judges its lease once a heartbeat: it may act this much after the lease ran out.
  std::chrono::milliseconds lease_check_slack() const { return heartbeat_; }
  // After the launcher last heard a node, the longest its workers can still run when the node is
  // cut off: the lease runs out, the agent notices within a heartbeat, then SIGTERM, `grace`,
  // SIGKILL. A node that is told to stop while it still hears the launcher stops sooner.
  std::chrono::milliseconds workers_gone_after(std::chrono::milliseconds grace) const;

 private:
  std::chrono::milliseconds heartbeat_;
  int misses_;
};

}  // namespace dlaunch
