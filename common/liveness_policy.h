// LivenessPolicy: the job's one rule for when a node or the launcher counts as silent or lost,
// and for when a lost node's workers are surely gone. Made from the spec's heartbeat interval
// and misses; the launcher sends both in every JoinResponse, so its loss rule, the live view's
// "silent" and the agent's lease all read the same numbers. Pure: durations in, durations out.
//
// The lease is what orders two rounds (docs/restarts.md): every message an agent sends carries
// its own send time, every command the launcher sends back carries the newest of those it has
// processed from that agent, and an agent whose newest echoed send time is older than lease()
// stops its workers at once (SIGKILL: a rank of a round the job has left behind has nothing to
// save) and leaves the job. So the launcher, knowing when it last processed a message from a
// node (its last_seen), knows when that node has surely stopped: workers_gone_after().
#pragma once

#include <algorithm>
#include <chrono>

namespace dlaunch {

class LivenessPolicy {
 public:
  // Heartbeats are never more frequent than this, whatever the spec asks.
  static constexpr std::chrono::milliseconds kMinHeartbeat{50};
  // The time SIGKILL of a worker's group takes to end it, with a margin. Once the signal is
  // delivered (microseconds) a rank runs no code of its own; what follows is the kernel's
  // teardown until it can be reaped, measured (bench/faults/sigkill_time.py, docs/BENCHMARKS.md)
  // at 43 ms (50 ms at most) for two ranks that imported torch on a lightly loaded machine and
  // 116 ms (191 ms at most) on a loaded one, and about 0.25-0.5 s more per GiB of resident
  // memory: it covers the reap of small ranks, and the end of every rank's own code.
  static constexpr std::chrono::milliseconds kKillSlack{250};

  // misses <= 0: kDefaultMisses (a JoinResponse that does not say).
  static constexpr int kDefaultMisses = 3;
  // `nodes`: the job's size (its hosts, spares included); the lease grows with it (lease()).
  LivenessPolicy(std::chrono::milliseconds heartbeat, int misses, int nodes = 0);
  // The agent's copy: the lease as the launcher computed it (JoinResponse.lease_ms), which knows
  // the job's size; <= 0 keeps the one derived here (a launcher that does not send it).
  LivenessPolicy WithLease(std::chrono::milliseconds lease) const;

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
  // SIGKILLs its workers and leaves (fenced). lost_after() + kLeaseMargin (+ kLeaseMarginPer1000
  // for every 1,000 nodes: a launcher's loop was seen 3.1 s late at 10,000 agents), so a node
  // the launcher names lost is fenced soon after; but never under heartbeat + ping_interval() +
  // kLeaseSlack (a healthy agent's newest echo is up to a heartbeat and a ping old when it
  // arrives) nor under kMinLease: a loop of the launcher late by a second on a loaded machine
  // must not fence a healthy job.
  std::chrono::milliseconds lease() const;
  static constexpr std::chrono::milliseconds kLeaseMargin{500};
  static constexpr std::chrono::milliseconds kLeaseMarginPer1000{300};
  static constexpr std::chrono::milliseconds kLeaseSlack{1000};
  static constexpr std::chrono::milliseconds kMinLease{3000};
  // The agent judges its lease on a timer armed for the moment it runs out (and on each
  // heartbeat): it acts at most this much after, on a loop that is not stalled (an agent whose
  // loop stalls waits two heartbeats before it judges; docs/restarts.md).
  static constexpr std::chrono::milliseconds kLeaseCheckSlack{250};
  std::chrono::milliseconds lease_check_slack() const { return std::min(heartbeat_, kLeaseCheckSlack); }
  // After the launcher last heard a node, the longest its workers can still run when the node is
  // cut off: the lease runs out, the agent notices within lease_check_slack(), then SIGKILL. No
  // stop grace: a fenced agent does not stop its workers gracefully. A node that is told to stop
  // while it still hears the launcher stops sooner.
  std::chrono::milliseconds workers_gone_after() const;

 private:
  std::chrono::milliseconds heartbeat_;
  int misses_;
  int nodes_ = 0;
  std::chrono::milliseconds lease_given_{0};  // WithLease's; 0: derived
};

}  // namespace dlaunch
