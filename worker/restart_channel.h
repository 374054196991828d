// RestartChannel: dlaunch-worker's side of the in-process restart protocol (docs/restarts.md,
// "In-process restart"; v1::RestartLine in proto/report.proto): its own connection to the
// agent's report socket, on which it says "hello", "left", "ready" and "cannot", and a reader
// thread that keeps the agent's "leave" and "join" lines for the training loop to take at a step
// boundary (or when a collective failed because a peer died). A "leave" also shuts the
// process group's connections down at once (ShutdownTcpConnections), so that a collective
// blocked on a peer that is alive but stuck fails instead of holding the rank. No LibTorch.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace dlaunch::worker {

// The agent's "join": this process's place in the next round.
struct RoundPlace {
  int round = 0;
  int rank = 0;
  int local_rank = 0;
  int world_size = 1;
  int local_world_size = 1;
  int node_rank = 0;
  std::string master_addr;
  int master_port = 0;
};

class RestartChannel {
 public:
  // Connects to the report socket at `socket_path` and says hello (this process can restart in
  // place; the agent ignores it unless the job's restart is in_process).
  static absl::StatusOr<std::unique_ptr<RestartChannel>> Connect(const std::string& socket_path);
  ~RestartChannel();
  RestartChannel(const RestartChannel&) = delete;
  RestartChannel& operator=(const RestartChannel&) = delete;

  // The round the agent told this rank to leave, once told (cleared by TakeLeave).
  bool leave_requested() const { return leave_round_.load() >= 0; }
  // Waits up to `timeout` for a "leave"; its round, or nullopt (none, or the agent is gone).
  std::optional<int> WaitForLeave(std::chrono::milliseconds timeout);
  // Clears the "leave" once this rank has left.
  void TakeLeave() { leave_round_.store(-1); }
  // Waits up to `timeout` for a "join"; nullopt when none came or the agent closed the socket.
  std::optional<RoundPlace> WaitForJoin(std::chrono::milliseconds timeout);

  void Left(int round) { Send("left", round, ""); }
  void Ready(int round) { Send("ready", round, ""); }
  void Cannot(const std::string& why) { Send("cannot", 0, why); }

 private:
  explicit RestartChannel(int fd);
  void Send(const std::string& what, int round, const std::string& why);
  void ReadLoop();
  void Take(const std::string& line);

  int fd_;
  std::mutex send_mu_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<int> leave_round_{-1};
  std::deque<RoundPlace> joins_;  // guarded by mu_
  bool closed_ = false;           // guarded by mu_
  std::thread reader_;
};

// Shuts down every connected TCP socket of this process (not listening ones): the process
// group's Gloo pairs and its store connections. Gloo's collectives cannot be aborted from another
// thread (docs/restarts.md); this makes each one blocked in this process fail at once, and each
// peer blocked on this process see its connection closed, so that the group can be destroyed
// without waiting for its timeout. Call it only when the group is being left: every TCP
// connection of the worker is the group's. Returns how many it shut down.
int ShutdownTcpConnections();

}  // namespace dlaunch::worker
