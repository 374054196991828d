// The relays of a job (docs/relays.md): with rendezvous.relay_fanout K, `dlaunch run` starts one
// dlaunch-relay per K agents on its own host before any agent, waits until each listens, and
// gives agents the relays' addresses instead of its own. Each relay holds its agents'
// connections (and their TLS) and sends their sessions to the launcher over one stream.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace dlaunch {

// How many relays `agents` agents need at `fanout` per relay: 0 when fanout is 0 (no relays)
// or the job has a single agent.
int RelayCount(int agents, int fanout);

// rendezvous.relay_fanout: auto. Without relays the launcher's own CPU for 1 s heartbeats passes
// a quarter of a core between 1,000 and 4,000 agents on the 2-CPU bench VM; relays of 1,250
// agents were measured to work there, and many small ones to starve it (docs/BENCHMARKS.md).
inline constexpr int kAutoRelaysFrom = 2000;
inline constexpr int kAutoRelayFanout = 1250;
// The fanout a job of `agents` runs with: `fanout`, or with `automatic` none under
// kAutoRelaysFrom agents and kAutoRelayFanout from there.
inline int EffectiveRelayFanout(int agents, int fanout, bool automatic) {
  if (!automatic) return fanout;
  return agents >= kAutoRelaysFrom ? kAutoRelayFanout : 0;
}

// The agent of node `index` (in plan order) of a job with `relays` relays: its relay's number.
// Agents are dealt round-robin, so node i and node i + relays share one.
inline int RelayOfNode(int index, int relays) { return relays > 0 ? index % relays : -1; }

struct RelayLaunch {
  std::string program;     // dlaunch-relay
  std::string upstream;    // where the relays reach the launcher: HOST:PORT
  std::string token_file;
  std::string listen_host; // where agents reach the relays (the relays listen on it, or on all)
  bool listen_all = false; // listen on 0.0.0.0 (agents on other hosts)
  std::string dir;         // the job's relays/ directory: port files and logs
  int count = 0;
  double timeout_s = 60;   // for every relay to listen
};

class RelayGroup {
 public:
  RelayGroup() = default;
  RelayGroup(const RelayGroup&) = delete;
  RelayGroup& operator=(const RelayGroup&) = delete;
  ~RelayGroup() { Stop(); }

  // Starts the relays and waits until each has written its port; their addresses, in order.
  // A relay that exits or does not listen in time fails the start (the others are stopped),
  // with the end of its log.
  absl::StatusOr<std::vector<std::string>> Start(const RelayLaunch& launch);
  // SIGTERM, then after `grace_s` SIGKILL to what is left; reaps every relay.
  void Stop(double grace_s = 2.0);
  // A line for each relay that has exited since the last call (it is reaped): which, how, and
  // the end of its log. While the job runs, its agents then move their sessions to the launcher.
  std::vector<std::string> ReapExited();
  const std::vector<pid_t>& pids() const { return pids_; }

 private:
  std::vector<pid_t> pids_;   // -1 once reaped
  std::vector<std::string> logs_;
};

}  // namespace dlaunch
